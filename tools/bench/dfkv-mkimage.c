// SPDX-License-Identifier: GPL-2.0
/*
 * dfkv-mkimage: write a dfkv disk image holding N values, as the module
 * would have left it after storing them and closing cleanly, in seconds
 * instead of the hours the module's durable PUTs take (mkimage.c).  The
 * image is a sparse file to attach through a loop device (`dfkvctl disk
 * add NODE /dev/loopN`, without --format); value i is namespace NS, key
 * the decimal digits of i, all zero bytes.
 *
 * usage: dfkv-mkimage [--records N] [--size BYTES] [--bytes BYTES]
 *                     [--extent BYTES] [--name NAME] [--ns NS] IMAGE
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "mkimage.h"

static void usage(FILE *f)
{
	fprintf(f,
"usage: dfkv-mkimage [options] IMAGE\n"
"\n"
"Write IMAGE (created or truncated) as a dfkv disk in on-disk format 2\n"
"after a clean close: a CLEAN superblock at epoch 2 and the records of\n"
"N values, each all zero bytes (holes of the sparse file).  Value i is\n"
"namespace NS, key the decimal digits of i (libdfkv's hashing).  Prints\n"
"one JSON line: the geometry and the time taken.\n"
"\n"
"  --records N    values (default 1000000)\n"
"  --size BYTES   each value's length (default 4096)\n"
"  --bytes BYTES  image size (default: just large enough)\n"
"  --extent BYTES extent size (default 4194304, the module's)\n"
"  --name NAME    disk name in the superblock (default dfkv-image)\n"
"  --ns NS        namespace of the keys (default dfkv-mkimage)\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "records", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "extent", required_argument, NULL, 'e' },
		{ "name", required_argument, NULL, 'N' },
		{ "ns", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct mkimage m = {
		.records = 1000000, .value_bytes = 4096,
		.name = "dfkv-image", .ns = "dfkv-mkimage",
	};
	struct mkimage_out o;
	double t0;
	int opt, fd, err;

	while ((opt = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (opt) {
		case 'n': m.records = strtoull(optarg, NULL, 0); break;
		case 's': m.value_bytes = strtoull(optarg, NULL, 0); break;
		case 'b': m.dev_bytes = strtoull(optarg, NULL, 0); break;
		case 'e': m.extent_bytes = strtoull(optarg, NULL, 0); break;
		case 'N': m.name = optarg; break;
		case 'S': m.ns = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind + 1 != argc || !m.value_bytes) {
		usage(stderr);
		return 2;
	}
	fd = open(argv[optind], O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "dfkv-mkimage: %s: %s\n", argv[optind],
			strerror(errno));
		return 2;
	}
	t0 = now();
	err = mkimage_write(fd, &m, &o);
	if (close(fd) && !err)
		err = -errno;
	if (err) {
		fprintf(stderr, "dfkv-mkimage: %s: %s\n", argv[optind],
			strerror(-err));
		return 1;
	}
	printf("{\"image\": \"%s\", \"records\": %" PRIu64
	       ", \"value_bytes\": %" PRIu64 ", \"ns\": \"%s\", \"name\": \"%s\""
	       ", \"dev_bytes\": %" PRIu64 ", \"extent_bytes\": %" PRIu64
	       ", \"nr_extents\": %" PRIu64 ", \"extents_used\": %" PRIu64
	       ", \"rec_hwm\": %" PRIu64 ", \"epoch\": %" PRIu64
	       ", \"record_bytes\": %" PRIu64 ", \"write_s\": %.3f}\n",
	       argv[optind], m.records, m.value_bytes, m.ns, m.name,
	       o.dev_bytes, o.extent_bytes, o.nr_extents, o.extents_used,
	       o.rec_hwm, o.epoch, o.record_bytes, now() - t0);
	return 0;
}

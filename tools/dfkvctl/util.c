// SPDX-License-Identifier: GPL-2.0
/*
 * dfkvctl: messages (and the program name they start with) and
 * command-line parsing shared by the subcommands.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "dfkvctl.h"

/* The name every message starts with (the subcommands' messages too). */
const char *prog = "dfkvctl";

void err_msg(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: %s%s", prog, cmd ? cmd : "", cmd ? ": " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (cmd)
		fprintf(stderr, "\nTry '%s %s --help'.\n", prog, cmd);
	else
		fprintf(stderr, "\nTry '%s help'.\n", prog);
	return EXIT_USAGE;
}

int print_help(const char *text)
{
	fputs(text, stdout);
	return EXIT_OK;
}

bool wants_help(int argc, char *argv[])
{
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			return false;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return true;
	}
	return false;
}

int opt_error(const char *cmd, int c, char *argv[])
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";

	if (c == ':')
		return usage_error(cmd, "option '%s' needs an argument", arg);
	if (optopt)
		return usage_error(cmd, "invalid option '-%c'", optopt);
	return usage_error(cmd, "unrecognized option '%s'", arg);
}

int parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!*s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

int parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	if (!*s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	switch (toupper((unsigned char)*end)) {
	case '\0':
		break;
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	case 'T':
		shift = 40;
		break;
	case 'B':
		if (end[1])
			return -EINVAL;
		*out = v;
		return 0;
	default:
		return -EINVAL;
	}
	if (shift) {
		end++;
		/* Allow K, KB, KiB (all binary). */
		if (*end == 'i')
			end++;
		if (*end == 'B' || *end == 'b')
			end++;
		if (*end)
			return -EINVAL;
		if (v > (UINT64_MAX >> shift))
			return -ERANGE;
		v <<= shift;
	}
	*out = v;
	return 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int parse_hex(const char *s, size_t n_hex, uint8_t *out)
{
	size_t i;

	if (strlen(s) != n_hex || n_hex % 2)
		return -EINVAL;
	for (i = 0; i < n_hex; i += 2) {
		int hi = hexval(s[i]), lo = hexval(s[i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i / 2] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

int parse_hex_alloc(const char *s, uint8_t **out, size_t *len)
{
	size_t n = strlen(s);
	uint8_t *b;

	if (!n || n % 2)
		return -EINVAL;
	b = malloc(n / 2);
	if (!b)
		return -ENOMEM;
	if (parse_hex(s, n, b)) {
		free(b);
		return -EINVAL;
	}
	*out = b;
	*len = n / 2;
	return 0;
}

const char *fmt_bytes(uint64_t v, bool raw, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
	double d = (double)v;
	int u = -1;

	if (raw || v < 1024) {
		snprintf(buf, len, raw ? "%llu" : "%llu B",
			 (unsigned long long)v);
		return buf;
	}
	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	snprintf(buf, len, d < 10 ? "%.2f %s" : d < 100 ? "%.1f %s" : "%.0f %s",
		 d, units[u]);
	return buf;
}

int run_action(const char *cmd, const char *help,
	       const struct ctl_action *actions, size_t n, const char *names,
	       int argc, char *argv[])
{
	size_t i;

	if (argc < 2)
		return usage_error(cmd, "missing action (%s)", names);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help"))
		return print_help(help);
	for (i = 0; i < n; i++)
		if (!strcmp(argv[1], actions[i].name))
			return actions[i].fn(argc - 1, argv + 1);
	return usage_error(cmd, "unknown action '%s' (%s)", argv[1], names);
}

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Bounded libFuzzer runs of the module's pure codecs: the request parser
# (kmod/wire.c, fuzz/fuzz_kwire.c), the TCP server's frame receiver fed
# hostile read splits against a one-shot parse (kmod/wire.c,
# fuzz/fuzz_kframe.c), /dev/dfkv's argument rules (kmod/ioc.c,
# fuzz/fuzz_kioc.c) and the on-disk format (kmod/ondisk.c with the slab
# lattice of kmod/slab.c, fuzz/fuzz_ondisk.c).  A target's
# kernel sources are listed in srcs_<target>.  Each runs for DFKV_FUZZ_SECONDS
# (default 20) and must end with zero crashes.  Needs clang with libFuzzer
# (Debian: clang, libclang-rt-14-dev).
repo=$(cd "$(dirname "$0")/../.." && pwd)
out="$repo/build/unit"
secs=${DFKV_FUZZ_SECONDS:-20}
targets="fuzz_kwire fuzz_kframe fuzz_kioc fuzz_ondisk"
srcs_fuzz_kwire="kmod/wire.c"
srcs_fuzz_kframe="kmod/wire.c"
srcs_fuzz_kioc="kmod/ioc.c"
srcs_fuzz_ondisk="kmod/ondisk.c kmod/slab.c"
n=0
rc=0
set -- $targets
echo "1..$#"
for t in $targets; do
	n=$((n + 1))
	mkdir -p "$out/$t.corpus"
	srcs=
	for s in $(eval echo "\$srcs_$t"); do
		srcs="$srcs $repo/$s"
	done
	if ! clang -g -O1 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all \
		-I"$repo/selftests/unit/kshim" -I"$repo/uapi" -I"$repo/kmod" \
		-o "$out/$t" "$repo/selftests/unit/fuzz/$t.c" $srcs \
		>"$out/$t.log" 2>&1; then
		sed 's/^/# /' "$out/$t.log"
		echo "not ok $n $t builds"
		rc=1
		continue
	fi
	if "$out/$t" -max_total_time="$secs" -max_len=4096 \
		-artifact_prefix="$out/" "$out/$t.corpus" \
		>"$out/$t.log" 2>&1; then
		echo "# $(grep -E '^Done|^#[0-9]+.*DONE' "$out/$t.log" | tail -n 1)"
		echo "ok $n $t: ${secs}s, no crash"
	else
		tail -n 30 "$out/$t.log" | sed 's/^/# /'
		echo "not ok $n $t: crash (input kept by libFuzzer in $out)"
		rc=1
	fi
done
exit $rc

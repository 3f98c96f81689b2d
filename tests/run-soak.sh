#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make soak: the random-ioctl fuzzer (tests/fuzz.c) in the 6.1 test
# kernel VM (KASAN, lockdep, kmemleak) for DMAPLANE_FUZZ_CALLS calls
# (default 1000000), half as root and half as nobody, then the stats
# counters, rmmod and kmemleak (tests/vm/jobs/fuzz.sh).
#
# DMAPLANE_FUZZ_SEED=N replays a run (the seed is printed in
# build/soak/fuzz/results-0.log); DMAPLANE_FUZZ_THREADS=N (default 4).
# Exit status 1 when anything failed.

set -u
cd "$(dirname "$0")/.."
. tests/vm/common.sh

calls=${DMAPLANE_FUZZ_CALLS:-1000000}
out=$BUILD/soak
mkdir -p "$out"
KSRC=$(tests/vm/build-kernel.sh 6.1) || exit 1
make -s BUILD="$BUILD" KSFT_DIR="$KSRC/tools/testing/selftests" lib tools examples tests ||
	exit 1
mkdir -p "$BUILD/tests"
# shellcheck disable=SC2086
${CC:-cc} -Iuapi -Ilibuser/include -D_GNU_SOURCE ${CFLAGS:--O2 -g} -Wall -Wextra \
	-Wshadow -Wstrict-prototypes -Wmissing-prototypes -Werror -pthread \
	-o "$BUILD/tests/fuzz" tests/fuzz.c || exit 1
build_ko test "$KSRC" || exit 1
make_initramfs "$out/fuzz.cpio.gz" "$BUILD/ko-test" \
	"$BUILD/tests/fuzz:/dmaplane/fuzz" >"$out/initramfs.log" 2>&1 || exit 1

args="dmaplane.fuzz_calls=$calls"
[ -n "${DMAPLANE_FUZZ_SEED:-}" ] && args="$args dmaplane.fuzz_seed=$DMAPLANE_FUZZ_SEED"
[ -n "${DMAPLANE_FUZZ_THREADS:-}" ] && args="$args dmaplane.fuzz_threads=$DMAPLANE_FUZZ_THREADS"
# About 700 calls/s under TCG with KASAN, and a margin for a busy host.
tests/vm/run-vm.sh -k "$KSRC/arch/x86/boot/bzImage" -i "$out/fuzz.cpio.gz" \
	-j fuzz -n 1 -t $((600 + calls / 100)) -o "$out/fuzz" -a "$args"
python3 tests/vm/results.py --ksrc "$KSRC" --label soak "$out/fuzz" 1

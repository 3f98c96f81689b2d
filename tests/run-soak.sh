#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make soak: the long fault-injection and kill-loop runs on the 6.1 test
# kernel (make check runs them short).
#
#   faults    the fail-nth sweep, then 1,000 probability runs each under
#             failslab and fail_page_alloc (make check: 100)
#   killloop  1,000 kill rounds (make check: 100)
#
# DMAPLANE_SOAK_ROUNDS= and DMAPLANE_SOAK_ITERS= override the counts.
# Logs: build/soak/.  Last line: "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
. tests/vm/common.sh

rounds=${DMAPLANE_SOAK_ROUNDS:-1000}
iters=${DMAPLANE_SOAK_ITERS:-1000}
out=$BUILD/soak
rm -rf "$out"
mkdir -p "$out"

KSRC=$(tests/vm/build-kernel.sh 6.1) || { echo "FAIL test-kernel-6.1"; exit 1; }
make -s BUILD="$BUILD" KSFT_DIR="$KSRC/tools/testing/selftests" lib \
	"$BUILD/tests/faults" "$BUILD/tests/killloop" ||
	{ echo "FAIL build/user"; exit 1; }
build_ko test "$KSRC" >"$out/build-ko.log" 2>&1 || { echo "FAIL build/module"; exit 1; }
make_initramfs "$out/soak.cpio.gz" "$BUILD/ko-test" \
	"$BUILD/tests/faults:/dmaplane/faults" \
	"$BUILD/tests/killloop:/dmaplane/killloop" >"$out/initramfs.log" 2>&1 ||
	{ echo "FAIL initramfs"; exit 1; }

t0=$(date +%s)
tests/vm/run-vm.sh -k "$KSRC/arch/x86/boot/bzImage" -i "$out/soak.cpio.gz" \
	-j faults -n 1 -t 14400 -o "$out/faults" -a "dmaplane.fault_iters=$iters"
python3 tests/vm/results.py --ksrc "$KSRC" --label soak/faults "$out/faults" 1 \
	>"$out/results.txt"
echo "   faults: $(($(date +%s) - t0)) s"
t0=$(date +%s)
tests/vm/run-vm.sh -k "$KSRC/arch/x86/boot/bzImage" -i "$out/soak.cpio.gz" \
	-j killloop -n 1 -t 14400 -o "$out/killloop" -a "dmaplane.kill_rounds=$rounds"
python3 tests/vm/results.py --ksrc "$KSRC" --label soak/killloop "$out/killloop" 1 \
	>>"$out/results.txt"
echo "   killloop: $(($(date +%s) - t0)) s"
grep -h '^# \(faults\|killloop\|[0-9]* rounds\|drain\|nth:\|fail\)' \
	"$out"/faults/results-0.log "$out"/killloop/results-0.log 2>/dev/null
grep -E '^(FAIL|SKIP)' "$out/results.txt" | cut -c1-300
pass=$(grep -c '^PASS ' "$out/results.txt")
fail=$(grep -c '^FAIL ' "$out/results.txt")
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

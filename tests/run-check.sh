#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make check: the whole dmaplane test suite.
#
#  1. dependencies (scripts/deps.sh) and the cached test kernel
#  2. build: library, tools, tests; the module for the test kernel and for
#     Debian's stock kernel (warnings are errors)
#  3. checkpatch --strict on kernel and uapi sources
#  4. host tests: the library without a module, install + pkg-config
#  5. test kernel VM (KASAN, lockdep, kmemleak): KUnit + kselftest suite
#  6. stock kernel VM (linux-image-amd64): the kselftest suite
#  7. two VMs over a socket netdev: link, soft-RoCE, module on both nodes,
#     remote_test across them, peer unload and rxe removal under load
#
# Every test prints PASS/FAIL/SKIP; the last line is "N passed, N failed".
# Exit status 1 when anything failed.  Logs: build/check/.
#
# DMAPLANE_CHECK=quick skips steps 6 and 7 (for development; CI runs all).

set -u
cd "$(dirname "$0")/.."
. tests/vm/common.sh

out=$BUILD/check
results=$out/results.txt
rm -rf "$out"
mkdir -p "$out"
: >"$results"

record() {	# PASS|FAIL name [why]
	if [ -n "${3:-}" ]; then
		printf '%s %s: %s\n' "$1" "$2" "$3" | tee -a "$results"
	else
		printf '%s %s\n' "$1" "$2" | tee -a "$results"
	fi
}

step() {	# name command...: one test that is the command's success
	name=$1
	shift
	mkdir -p "$(dirname "$out/$name.log")"
	if "$@" >"$out/$name.log" 2>&1; then
		record PASS "$name"
	else
		record FAIL "$name" "$(tail -30 "$out/$name.log")"
	fi
}

judge() {	# results.py arguments: append its verdicts
	python3 tests/vm/results.py --ksrc "$KSRC" "$@" >>"$results.tmp" 2>&1
	cat "$results.tmp"
	cat "$results.tmp" >>"$results"
	rm -f "$results.tmp"
}

finish() {
	pass=$(grep -c '^PASS ' "$results")
	fail=$(grep -c '^FAIL ' "$results")
	skip=$(grep -c '^SKIP ' "$results")
	if [ "$fail" != 0 ]; then
		echo
		echo "Failures:"
		grep '^FAIL ' "$results" | cut -c1-200
	fi
	echo
	echo "$pass passed, $fail failed, $skip skipped"
	[ "$fail" = 0 ]
	exit $?
}

echo "== dependencies"
if ! scripts/deps.sh all; then
	record FAIL dependencies "scripts/deps.sh failed"
	finish
fi
echo "== test kernel (cached after the first build, ~15 min)"
if ! KSRC=$(tests/vm/build-kernel.sh); then
	record FAIL test-kernel "tests/vm/build-kernel.sh failed"
	finish
fi
stock=$(stock_version)
STOCK_KDIR=/usr/src/linux-headers-$stock
STOCK_BZ=/boot/vmlinuz-$stock
KSFT=$KSRC/tools/testing/selftests

echo "== build"
step build/user make -s BUILD="$BUILD" KSFT_DIR="$KSFT" lib tools examples tests
step build/module-testkernel build_ko test "$KSRC"
step build/module-stock-$stock build_ko stock "$STOCK_KDIR"
[ -e "$BUILD/ko-test/dmaplane_kunit.ko" ]
[ $? = 0 ] && record PASS build/kunit-module || record FAIL build/kunit-module "not built"

echo "== checkpatch --strict"
for f in kmod/*.[ch] kunit-tests/*.c uapi/linux/*.h; do
	step "checkpatch/$f" perl "$KSRC/scripts/checkpatch.pl" --no-tree --strict \
		--show-types -f "$f"
done

echo "== host tests"
for t in "$BUILD"/tests/host/*_test; do
	[ -x "$t" ] || continue
	"$t" >"$out/host-$(basename "$t").log" 2>&1
	judge --label "host/$(basename "$t")" --tap "$out/host-$(basename "$t").log" --rc $?
done
sh tests/host/install_test.sh "$BUILD" >"$out/host-install.log" 2>&1
judge --label host/install --tap "$out/host-install.log" --rc $?

run_vm() {	# label kernel kodir job nodes timeout
	label=$1
	if [ ! -e "$3/dmaplane.ko" ]; then
		record FAIL "$label" "no module built in $3"
		return
	fi
	if ! make_initramfs "$out/$label.cpio.gz" "$3" >"$out/$label-initramfs.log" 2>&1; then
		record FAIL "$label/initramfs" "$(tail -20 "$out/$label-initramfs.log")"
		return
	fi
	tests/vm/run-vm.sh -k "$2" -i "$out/$label.cpio.gz" -j "$4" -n "$5" \
		-t "$6" -o "$out/$label"
	judge --label "$label" "$out/$label" "$5"
}

echo "== test kernel VM: KUnit and kselftest suite"
run_vm testkernel "$KSRC/arch/x86/boot/bzImage" "$BUILD/ko-test" suite 1 900
if [ "${DMAPLANE_CHECK:-}" = quick ]; then
	echo "== DMAPLANE_CHECK=quick: stock kernel and two-VM runs skipped"
	finish
fi
echo "== stock kernel $stock VM: kselftest suite"
run_vm stock "$STOCK_BZ" "$BUILD/ko-stock" suite 1 600
echo "== two VMs: network, soft-RoCE, remote_test across the nodes, peer failures"
run_vm twonode "$KSRC/arch/x86/boot/bzImage" "$BUILD/ko-test" twonode 2 2400

finish

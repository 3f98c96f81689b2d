#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make demo: install dependencies, build everything, boot the test VM
# (KASAN, lockdep: correctness), load the module and run the demo programs
# through libdmaplane; then boot Debian's stock kernel (no debugging) for
# the timed part, each result beside what it is compared against
# (tests/vm/jobs/demo.sh).

set -eu
cd "$(dirname "$0")/.."
. tests/vm/common.sh

scripts/deps.sh all
echo "== test kernel (cached after the first build, ~15 min)"
KSRC=$(tests/vm/build-kernel.sh)
stock=$(stock_version)
echo "== build"
make -s BUILD="$BUILD" lib tools examples
build_ko test "$KSRC"
build_ko stock "/usr/src/linux-headers-$stock" >/dev/null
out=$BUILD/demo
mkdir -p "$out"
make_initramfs "$out/demo.cpio.gz" "$BUILD/ko-test"
make_initramfs "$out/demo-stock.cpio.gz" "$BUILD/ko-stock" "$BUILD/dp-bench"

rc=0
# run NAME KERNEL INITRD PART: one VM; its output without the records
run() {
	vrc=0
	tests/vm/run-vm.sh -k "$2" -i "$3" -j demo -o "$out/$1" -t 600 \
		-a "dmaplane.demo=$4" || vrc=$?
	grep -v '^DMAPLANE-' "$out/$1/results-0.log" || :
	grep -q '^DMAPLANE-GUEST-DONE rc=0$' "$out/$1/results-0.log" || vrc=1
	if [ $vrc != 0 ]; then
		echo "demo ($1) FAILED; guest console: $out/$1/console-0.log" >&2
		grep '^DMAPLANE-CASE .* FAIL' "$out/$1/results-0.log" >&2 || :
		rc=1
	fi
}
echo "== boot the test VM (QEMU TCG; KASAN, lockdep) and run the demo"
run vm "$KSRC/arch/x86/boot/bzImage" "$out/demo.cpio.gz" check
echo "== boot Debian's stock kernel $stock (QEMU TCG) for the timed part"
run vm-stock "/boot/vmlinuz-$stock" "$out/demo-stock.cpio.gz" timed
exit $rc

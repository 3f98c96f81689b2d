#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make demo: install dependencies, build everything, boot the test VM, load
# the module and run the demo programs through libdmaplane.

set -eu
cd "$(dirname "$0")/.."
. tests/vm/common.sh

scripts/deps.sh all
echo "== test kernel (cached after the first build, ~15 min)"
KSRC=$(tests/vm/build-kernel.sh)
echo "== build"
make -s BUILD="$BUILD" lib tools examples
build_ko test "$KSRC"
out=$BUILD/demo
mkdir -p "$out"
make_initramfs "$out/demo.cpio.gz" "$BUILD/ko-test"
echo "== boot the test VM (QEMU TCG) and run the demo"
rc=0
tests/vm/run-vm.sh -k "$KSRC/arch/x86/boot/bzImage" -i "$out/demo.cpio.gz" \
	-j demo -o "$out/vm" -t 600 || rc=$?
grep -v '^DMAPLANE-' "$out/vm/results-0.log" || :
grep -q '^DMAPLANE-GUEST-DONE rc=0$' "$out/vm/results-0.log" || rc=1
if [ $rc != 0 ]; then
	echo "demo FAILED; guest console: $out/vm/console-0.log" >&2
	grep '^DMAPLANE-CASE .* FAIL' "$out/vm/results-0.log" >&2 || :
fi
exit $rc

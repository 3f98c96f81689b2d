#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# dmaplaned's VM job: build the library, the daemon (also with ASan and
# UBSan), dmaplanectl and the module for the 6.1 test kernel, and run
# tests/vm/jobs/dmaplaned.sh in one VM with the host's root shared over
# 9p (the daemon, Debian's curl and python3 run from there, in a chroot).
# Prints one PASS/FAIL/SKIP line per check (tests/vm/results.py).
#
# Usage: tests/run-daemon.sh [KVER [KERNEL-ARGS]]   (6.1 by default;
# KERNEL-ARGS such as dmaplane.daemon_fuzz=2000 reach the job)

set -u
cd "$(dirname "$0")/.."
. tests/vm/common.sh
kver=${1:-6.1}
run=daemon$kver${DAEMON_RUN:+-$DAEMON_RUN}	# DAEMON_RUN=NAME: concurrent runs
out=$BUILD/$run
rm -rf "$out"
mkdir -p "$out"

KSRC=$(tests/vm/build-kernel.sh "$kver") || exit 1
make -s BUILD="$BUILD" lib tools examples daemon daemon-asan >"$out/build.log" 2>&1 ||
	{ tail -30 "$out/build.log"; exit 1; }
build_ko $run "$KSRC" >"$out/ko.log" 2>&1 || { tail -30 "$out/ko.log"; exit 1; }
make_initramfs "$out/i.cpio.gz" "$BUILD/ko-$run" \
	tests/vm/bench:/dmaplane/bench >"$out/initramfs.log" 2>&1 ||
	{ tail -20 "$out/initramfs.log"; exit 1; }
tests/vm/run-vm.sh -k "$KSRC/arch/x86/boot/bzImage" -i "$out/i.cpio.gz" \
	-j dmaplaned -n 1 -t "${DAEMON_VM_TIMEOUT:-3600}" -m 3072 -o "$out/vm" -R \
	-a "dmaplane.daemon_build=$(pwd)/$BUILD dmaplane.daemon_src=$(pwd) ${2:-}"
python3 tests/vm/results.py --ksrc "$KSRC" --label dmaplaned "$out/vm" 1

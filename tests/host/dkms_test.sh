#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# DKMS: `dkms add` and `dkms build` of the module, as dkms.conf describes
# it, for every kernel release given, in a private DKMS tree (the system's
# is not touched).  TAP output.  Usage: tests/host/dkms_test.sh KVER...
set -u
cd "$(dirname "$0")/../.."

ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/dmaplane-$ver" "$work/tree"
cp -a dkms.conf Kbuild compat kmod kunit-tests uapi "$work/src/dmaplane-$ver/"
dkms() { command dkms --dkmstree "$work/tree" --sourcetree "$work/src" "$@"; }

echo "TAP version 13"
echo "1..$(($# + 1))"
fails=0
n=1
if dkms add -m dmaplane -v "$ver" >"$work/add.log" 2>&1; then
	echo "ok $n dkms-add"
else
	sed 's/^/# /' "$work/add.log"
	echo "not ok $n dkms-add"
	fails=$((fails + 1))
fi
for k in "$@"; do
	n=$((n + 1))
	if dkms build -m dmaplane -v "$ver" -k "$k" >"$work/build.log" 2>&1 &&
	   ls "$work/tree/dmaplane/$ver/$k"/*/module/dmaplane.ko* >/dev/null 2>&1; then
		echo "ok $n dkms-build-$k"
	else
		tail -40 "$work/build.log" | sed 's/^/# /'
		find "$work/tree" -name make.log -exec tail -40 {} \; | sed 's/^/# /'
		echo "not ok $n dkms-build-$k"
		fails=$((fails + 1))
	fi
done
[ $fails = 0 ]

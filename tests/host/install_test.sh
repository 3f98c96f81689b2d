#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Install the user-space parts into a staging directory the way a
# distribution would, and check that a program builds against them with
# pkg-config alone and that the library exports exactly its version script.
# Prints TAP.
# Usage: install_test.sh BUILD_DIR

build=$1
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
n=0
fails=0

result() {	# rc description
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
		fails=$((fails + 1))
	fi
}

echo "TAP version 13"
echo "1..11"

make -s BUILD="$build" DESTDIR="$stage" PREFIX=/usr install-user >"$stage/install.log" 2>&1
result $? install-user
cat "$stage/install.log"

for f in usr/include/dmaplane.h usr/include/linux/dmaplane.h \
	 usr/lib/libdmaplane.so.1 usr/lib/libdmaplane.so usr/lib/pkgconfig/dmaplane.pc \
	 usr/bin/dpctl usr/share/man/man8/dpctl.8 usr/share/man/man3/dp_send.3 \
	 usr/share/bash-completion/completions/dpctl; do
	[ -e "$stage/$f" ] || { echo "# missing $f"; missing=1; }
done
result "${missing:-0}" installed-files

soname=$(objdump -p "$stage/usr/lib/libdmaplane.so.1" | awk '/SONAME/ {print $2}')
[ "$soname" = libdmaplane.so.1 ]
result $? "soname-is-libdmaplane.so.1 (got $soname)"

# Every global symbol of the map and nothing else is exported.
want=$(sed -n 's/^[[:space:]]*\(dp_[a-z_0-9]*\);/\1/p' libuser/libdmaplane.map | sort)
got=$(nm -D --defined-only "$stage/usr/lib/libdmaplane.so.1" |
	awk '$2 == "T" {print $3}' | sed 's/@.*//' | sort)
[ "$want" = "$got" ]
result $? exports-match-version-script
[ "$want" = "$got" ] || { echo "# want: $want"; echo "# got: $got"; }

# Every exported call has an installed man page (a .so link for the calls
# that share one), and the pages render without a warning.
missing=0
for s in $want; do
	[ -f "$stage/usr/share/man/man3/$s.3" ] || { echo "# no man page $s.3"; missing=1; }
done
if command -v groff >/dev/null; then
	for p in "$stage"/usr/share/man/man3/*.3; do
		w=$(cd "$stage/usr/share/man" && groff -man -ww -z "$p" 2>&1)
		[ -z "$w" ] || { echo "# $p: $w"; missing=1; }
	done
fi
result "$missing" man3-page-for-every-export

cat >"$stage/prog.c" <<'PROG'
#include <errno.h>
#include <dmaplane.h>
int main(void)
{
	struct dp_ep *ep;

	return dp_open("/nonexistent", 0, &ep) == -ENOENT ? 0 : 1;
}
PROG
export PKG_CONFIG_SYSROOT_DIR="$stage" PKG_CONFIG_LIBDIR="$stage/usr/lib/pkgconfig"
# shellcheck disable=SC2046
cc -o "$stage/prog" "$stage/prog.c" $(pkg-config --cflags --libs dmaplane) \
	-Wl,-rpath,"$stage/usr/lib"
result $? builds-with-pkg-config

"$stage/prog"
result $? links-and-runs-against-installed-library

# The full install: module (against the stock kernel headers), udev rule.
kver=$(dpkg-query -W -f='${Depends}' linux-image-amd64 2>/dev/null |
	sed -n 's/.*linux-image-\([0-9][^ ,]*\).*/\1/p')
kdir=/usr/src/linux-headers-$kver
if [ -d "$kdir" ]; then
	# In a copy of the sources: kbuild's clean would sweep the whole tree.
	mkdir -p "$stage/src"
	cp -a Kbuild Makefile compat kmod kunit-tests uapi libuser tools examples udev fabric daemon \
		"$stage/src/"
	env -u PKG_CONFIG_SYSROOT_DIR -u PKG_CONFIG_LIBDIR \
	make -s -C "$stage/src" DESTDIR="$stage/full" PREFIX=/usr KDIR="$kdir" \
		UDEVDIR=/lib/udev/rules.d install >"$stage/full.log" 2>&1
	rc=$?
	[ $rc = 0 ] || tail -20 "$stage/full.log"
	result $rc "make-install-with-module (KDIR=$kdir)"
	[ -f "$stage/full/lib/modules/$kver/extra/dmaplane.ko" ] &&
		grep -q 'MODE="0666"' "$stage/full/lib/udev/rules.d/60-dmaplane.rules"
	result $? module-and-udev-rule-installed
	fabdir=$(env -u PKG_CONFIG_SYSROOT_DIR -u PKG_CONFIG_LIBDIR \
		 pkg-config --variable=libdir libfabric 2>/dev/null)
	if [ -n "$fabdir" ]; then
		[ -f "$stage/full$fabdir/libfabric/libdmaplane-fi.so" ]
		result $? libfabric-provider-installed
	else
		echo "ok 10 # SKIP no libfabric-dev"
	fi
else
	echo "ok 8 # SKIP no $kdir"
	echo "ok 9 # SKIP no $kdir"
	echo "ok 10 # SKIP no $kdir"
fi

# dmaplaned (install-user installs it when libmicrohttpd and jansson are
# there): binaries, man pages that render without a warning, the unit
# file pointing at the installed daemon, the example configuration.
if env -u PKG_CONFIG_SYSROOT_DIR -u PKG_CONFIG_LIBDIR pkg-config --exists libmicrohttpd jansson; then
	missing=0
	for f in usr/bin/dmaplaned usr/bin/dmaplanectl usr/share/man/man8/dmaplaned.8 \
		 usr/share/man/man1/dmaplanectl.1 usr/lib/systemd/system/dmaplaned.service \
		 usr/share/doc/dmaplane/dmaplaned.conf.example; do
		[ -e "$stage/$f" ] || { echo "# missing $f"; missing=1; }
	done
	grep -qx 'ExecStart=/usr/bin/dmaplaned' "$stage/usr/lib/systemd/system/dmaplaned.service" ||
		{ echo "# unit: $(grep ExecStart "$stage/usr/lib/systemd/system/dmaplaned.service")"; missing=1; }
	if command -v groff >/dev/null; then
		for p in "$stage"/usr/share/man/man8/dmaplaned.8 "$stage"/usr/share/man/man1/dmaplanectl.1; do
			w=$(groff -man -ww -z "$p" 2>&1)
			[ -z "$w" ] || { echo "# $p: $w"; missing=1; }
		done
	fi
	LD_LIBRARY_PATH="$stage/usr/lib" "$stage/usr/bin/dmaplaned" --help | grep -q '^Usage: dmaplaned' || missing=1
	result "$missing" daemon-installed
else
	echo "ok 11 # SKIP no libmicrohttpd-dev or libjansson-dev"
fi

[ $fails = 0 ]

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Prepare (once) a kernel tree to compile the module against, for a kernel
# newer than the Debian 12 archive has: Debian unstable's linux-source-VER
# (7.2 by default), or experimental's while unstable does not have it yet
# (a release candidate), fetched from deb.debian.org's pool, configured with the
# test kernels' fragment (kernel.config) and brought to modules_prepare --
# no kernel is built, so the module is compiled and checked (W=1 -Werror)
# but not run.  Prints the tree's path on stdout.
#
# Usage: prepare-kernel.sh [VER]
# Cached in ${DMAPLANE_CACHE:-/var/cache/dmaplane}/kernel-VER-prep-<key>,
# <key> hashing the fragment, the recipe and the source package's version.
# Exit 3 (nothing prepared) when neither unstable nor experimental carries
# linux-source-VER or the archive cannot be reached: the caller reports
# that as a skip.

set -e

here=$(cd "$(dirname "$0")" && pwd)
frag=$here/kernel.config
cache=${DMAPLANE_CACHE:-/var/cache/dmaplane}
ver=${1:-7.2}
mirror=${DMAPLANE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
recipe=1

mkdir -p "$cache"
# The newest cached tree of this version is used when the archive cannot
# be asked (offline); otherwise the version unstable (or experimental) has
# now.
packages() {
	curl -fsS -m 120 "$mirror/dists/$1/main/binary-all/Packages.xz" | xz -dc
}
index=$(packages sid) || index=
# A version unstable does not have yet: experimental's (its index holds only
# what differs from unstable's).
if [ -n "$index" ] && ! printf '%s\n' "$index" | grep -qx "Package: linux-source-$ver"; then
	index=$(packages experimental) || index=
fi
if [ -z "$index" ]; then
	done=$(ls -t "$cache"/kernel-"$ver"-prep-*/done 2>/dev/null | head -1)
	if [ -n "$done" ]; then
		echo "${done%/done}/linux"
		exit 0
	fi
	echo "prepare-kernel: cannot read $mirror's unstable or experimental index" >&2
	exit 3
fi
stanza=$(printf '%s\n' "$index" | awk -v p="linux-source-$ver" \
	'$0 == "Package: " p {on = 1} on && /^$/ {exit} on')
srcver=$(printf '%s\n' "$stanza" | sed -n 's/^Version: //p')
file=$(printf '%s\n' "$stanza" | sed -n 's/^Filename: //p')
sum=$(printf '%s\n' "$stanza" | sed -n 's/^SHA256: //p')
if [ -z "$srcver" ] || [ -z "$file" ] || [ -z "$sum" ]; then
	echo "prepare-kernel: neither unstable nor experimental has linux-source-$ver" >&2
	exit 3
fi
key=$( (cat "$frag"; echo "recipe $recipe"; echo "$srcver") | sha256sum | cut -c1-16)
dir=$cache/kernel-$ver-prep-$key
ksrc=$dir/linux

exec 9>"$cache/kernel-$ver-prep-$key.lock"
flock 9
if [ -f "$dir/done" ]; then
	echo "$ksrc"
	exit 0
fi

echo "prepare-kernel: preparing $srcver ($key) in $dir; log: $dir/build.log" >&2
rm -rf "$dir"
mkdir -p "$dir"
start=$(date +%s)
curl -fsS -m 900 -o "$dir/src.deb" "$mirror/$file" ||
	{ echo "prepare-kernel: cannot fetch $file" >&2; rm -rf "$dir"; exit 3; }
echo "$sum  $dir/src.deb" | sha256sum -c --quiet ||
	{ echo "prepare-kernel: $file: checksum mismatch" >&2; rm -rf "$dir"; exit 1; }
dpkg-deb --fsys-tarfile "$dir/src.deb" |
	tar -xO "./usr/src/linux-source-$ver.tar.xz" | tar -C "$dir" -xJf -
rm -f "$dir/src.deb"
mv "$dir/linux-source-$ver" "$ksrc"
(
	cd "$ksrc"
	make tinyconfig
	scripts/kconfig/merge_config.sh -m .config "$frag"
	make olddefconfig
	make -j"$(($(nproc) + 1))" modules_prepare
) >"$dir/build.log" 2>&1 || { tail -30 "$dir/build.log" >&2; exit 1; }
echo "prepare-kernel: done in $(($(date +%s) - start)) s" >&2
touch "$dir/done"
echo "$ksrc"

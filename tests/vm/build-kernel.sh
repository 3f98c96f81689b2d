#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Build (once) the dmaplane test kernel from Debian's linux-source-6.1 and
# print the path of the built source tree on stdout.
#
# The build is cached outside the work tree, in
#   ${DMAPLANE_CACHE:-/var/cache/dmaplane}/kernel-<key>
# where <key> hashes the config fragment, the build recipe version below and
# the source package version, so it is rebuilt only when one of those changes.
# Bump recipe when the build steps change in a way that alters the result.  All progress
# goes to stderr; the full build log is kept in the cache directory.

set -e

here=$(cd "$(dirname "$0")" && pwd)
frag=$here/kernel.config
cache=${DMAPLANE_CACHE:-/var/cache/dmaplane}
tarball=/usr/src/linux-source-6.1.tar.xz
jobs=${DMAPLANE_JOBS:-$(($(nproc) + 1))}

[ -r "$tarball" ] || { echo "build-kernel: $tarball missing (run scripts/deps.sh)" >&2; exit 1; }
srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1)
recipe=1
key=$( (cat "$frag"; echo "recipe $recipe"; echo "$srcver") | sha256sum | cut -c1-16)
dir=$cache/kernel-$key
ksrc=$dir/linux

mkdir -p "$cache"
exec 9>"$cache/kernel-$key.lock"
flock 9

if [ -f "$dir/done" ]; then
	echo "$ksrc"
	exit 0
fi

echo "build-kernel: building test kernel $srcver ($key) in $dir; log: $dir/build.log" >&2
rm -rf "$dir"
mkdir -p "$dir"
start=$(date +%s)
tar -C "$dir" -xf "$tarball"
mv "$dir"/linux-source-6.1 "$ksrc"

(
	cd "$ksrc"
	make tinyconfig
	scripts/kconfig/merge_config.sh -m .config "$frag"
	make olddefconfig
) >"$dir/build.log" 2>&1 || { tail -30 "$dir/build.log" >&2; exit 1; }

# Every option of the fragment must have survived olddefconfig.
bad=0
grep -E '^(CONFIG_[A-Z0-9_]+=.*|# CONFIG_[A-Z0-9_]+ is not set)$' "$frag" |
while IFS= read -r line; do
	grep -qxF "$line" "$ksrc/.config" ||
		{ echo "build-kernel: fragment line not in .config: $line" >&2; exit 1; }
done || bad=1
[ "$bad" = 0 ] || exit 1

if ! make -C "$ksrc" -j"$jobs" bzImage modules >>"$dir/build.log" 2>&1; then
	tail -40 "$dir/build.log" >&2
	exit 1
fi
make -C "$ksrc" modules_prepare >>"$dir/build.log" 2>&1
echo "build-kernel: done in $(($(date +%s) - start)) s" >&2
touch "$dir/done"
echo "$ksrc"

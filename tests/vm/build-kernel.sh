#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Build (once) a dmaplane test kernel from Debian's linux-source-VERSION
# (6.1 by default, or 6.12) and print the path of the built source tree on
# stdout.  Usage: build-kernel.sh [6.1|6.12]
#
# Both kernels take the same config fragment, kernel.config; a "# CONFIG_X
# is not set" line is also met by a kernel that has no X at all (6.12 has
# no SLOB).  The build is cached outside the work tree, in
#   ${DMAPLANE_CACHE:-/var/cache/dmaplane}/kernel-<key>      (6.1)
#   ${DMAPLANE_CACHE:-/var/cache/dmaplane}/kernel-<ver>-<key> (others)
# where <key> hashes the config fragment, the build recipe version below and
# the source package version, so it is rebuilt only when one of those changes.
# Bump recipe when the build steps change in a way that alters the result.  All progress
# goes to stderr; the full build log is kept in the cache directory.

set -e

here=$(cd "$(dirname "$0")" && pwd)
frag=$here/kernel.config
cache=${DMAPLANE_CACHE:-/var/cache/dmaplane}
ver=${1:-6.1}
case $ver in
6.1|6.12) ;;
*)	echo "build-kernel: unknown kernel '$ver' (6.1 or 6.12)" >&2; exit 2 ;;
esac
tarball=/usr/src/linux-source-$ver.tar.xz
jobs=${DMAPLANE_JOBS:-$(($(nproc) + 1))}

[ -r "$tarball" ] || { echo "build-kernel: $tarball missing (run scripts/deps.sh)" >&2; exit 1; }
srcver=$(dpkg-query -W -f='${Version}' "linux-source-$ver")
recipe=1
key=$( (cat "$frag"; echo "recipe $recipe"; echo "$srcver") | sha256sum | cut -c1-16)
if [ "$ver" = 6.1 ]; then
	dir=$cache/kernel-$key
else
	dir=$cache/kernel-$ver-$key
fi
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
mv "$dir/linux-source-$ver" "$ksrc"

(
	cd "$ksrc"
	make tinyconfig
	scripts/kconfig/merge_config.sh -m .config "$frag"
	make olddefconfig
) >"$dir/build.log" 2>&1 || { tail -30 "$dir/build.log" >&2; exit 1; }

# Every option of the fragment must have survived olddefconfig; an option
# to be left unset may also be one this kernel does not have.
bad=0
grep -E '^(CONFIG_[A-Z0-9_]+=.*|# CONFIG_[A-Z0-9_]+ is not set)$' "$frag" |
while IFS= read -r line; do
	grep -qxF "$line" "$ksrc/.config" && continue
	case $line in
	"# CONFIG_"*)
		sym=${line#\# }
		sym=${sym%% *}
		grep -q "^$sym=" "$ksrc/.config" || continue
		;;
	esac
	echo "build-kernel: fragment line not in .config: $line" >&2
	exit 1
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

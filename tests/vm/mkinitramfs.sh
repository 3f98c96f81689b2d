#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Build a busybox initramfs for the dmaplane test VMs.
#
# Usage: mkinitramfs.sh OUT.cpio.gz SRC[:DEST] ...
#
# Each SRC is copied to DEST (default: /dmaplane/<basename of SRC>); a
# directory is copied whole.  Dynamically linked programs bring the shared
# libraries ldd finds for them, at the same paths as on the host.  /init is
# tests/vm/init; guest jobs come from tests/vm/jobs/.

set -e

here=$(cd "$(dirname "$0")" && pwd)
out=$1
shift

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
chmod 0755 "$root"

mkdir -p "$root"/bin "$root"/dev "$root"/proc "$root"/sys "$root"/tmp \
	"$root"/run "$root"/etc "$root"/dmaplane/jobs "$root"/lib64 "$root"/root
cp /bin/busybox "$root"/bin/busybox
cp "$here"/init "$root"/init
cp "$here"/jobs/*.sh "$root"/dmaplane/jobs/
chmod 0755 "$root"/init "$root"/dmaplane/jobs/*.sh
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' \
	>"$root"/etc/passwd
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root"/etc/group

copy_libs() {
	# ldd prints "name => /path (addr)" or "/path (addr)" for the loader.
	ldd "$1" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) .*/\1/p' |
	while read -r lib; do
		[ -e "$root$lib" ] && continue
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
}

for arg in "$@"; do
	src=${arg%%:*}
	dest=${arg#*:}
	[ "$dest" = "$arg" ] && dest=/dmaplane/$(basename "$src")
	mkdir -p "$root$(dirname "$dest")"
	cp -RL "$src" "$root$dest"
	find "$root$dest" -type f -perm -u+x | while read -r f; do
		copy_libs "$f"
	done
done

(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 >"$out"

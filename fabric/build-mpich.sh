#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Build (once) MPICH with its ch4 device over libfabric (ch4:ofi), against
# Debian's libfabric-dev, and print its prefix on stdout.  Debian's own
# mpich package is built for UCX only, so the MPI programs of
# fabric/tests/ reach the provider through this build.  The source is
# Debian's: the upstream tarball of Debian 12's mpich source package,
# fetched from the Debian archive and checked against the sha256 of its
# .dsc.  The build is cached outside the work tree, in
#   ${DMAPLANE_CACHE:-/var/cache/dmaplane}/mpich-<version>-ofi
# (the prefix is built into MPICH's wrappers), whose file "done" holds a
# hash of the recipe below: another hash rebuilds it.  ~40 min on 2 cores.
# All progress goes to stderr, the logs stay in the cache directory.
#
# Usage: fabric/build-mpich.sh [--cached]
# --cached prints the prefix only when the build is there already (exit 1
# when it is not) and builds nothing.
# DEBIAN_MIRROR= another Debian mirror (http://deb.debian.org/debian).

set -eu

ver=4.0.2
sha256=b27039f964afeb6b8a3e009c56b441cbe368c26d6d6476ad3bb7190996875860
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=${DMAPLANE_CACHE:-/var/cache/dmaplane}
jobs=${DMAPLANE_JOBS:-$(($(nproc) + 1))}
opts="--with-device=ch4:ofi --with-libfabric=/usr --disable-fortran
--disable-cxx --enable-fast=O2 --enable-g=none --with-pm=hydra"
recipe=2	# bump when the steps change in a way that alters the result
key=$(printf '%s %s %s\n' "$ver" "$recipe" "$opts" | sha256sum | cut -c1-16)
dir=$cache/mpich-$ver-ofi
tarball=$cache/mpich_$ver.orig.tar.xz

mkdir -p "$cache"
exec 9>"$cache/mpich-$ver.lock"
flock 9
if [ -x "$dir/bin/mpiexec" ] && [ "$(cat "$dir/done" 2>/dev/null)" = "$key" ]; then
	echo "$dir"
	exit 0
fi
[ "${1:-}" != --cached ] || exit 1
pkg-config --exists libfabric ||
	{ echo "build-mpich: no libfabric-dev (scripts/deps.sh)" >&2; exit 1; }

if ! echo "$sha256  $tarball" | sha256sum -c --status 2>/dev/null; then
	echo "build-mpich: fetching $mirror/pool/main/m/mpich/mpich_$ver.orig.tar.xz" >&2
	python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(*sys.argv[1:])' \
		"$mirror/pool/main/m/mpich/mpich_$ver.orig.tar.xz" "$tarball.part" ||
		{ echo "build-mpich: download failed" >&2; exit 1; }
	echo "$sha256  $tarball.part" | sha256sum -c --status ||
		{ echo "build-mpich: sha256 mismatch" >&2; rm -f "$tarball.part"; exit 1; }
	mv "$tarball.part" "$tarball"
fi

echo "build-mpich: building MPICH $ver (ch4:ofi) into $dir; logs there" >&2
start=$(date +%s)
rm -rf "$dir"
mkdir -p "$dir/src"
tar -C "$dir/src" -xJf "$tarball" --strip-components=1
cd "$dir/src"
# MPICH's configure links libfabric's static dependencies too (pkg-config
# --static: PSM, PSM2, EFA, none of which Debian's libfabric-dev pulls
# in); libfabric is a shared library here, so a pkg-config without
# --static in front of the real one.
mkdir -p "$dir/src/pc"
cat >"$dir/src/pc/pkg-config" <<'EOF'
#!/bin/sh
for a; do shift; [ "$a" = --static ] || set -- "$@" "$a"; done
exec /usr/bin/pkg-config "$@"
EOF
chmod +x "$dir/src/pc/pkg-config"
# shellcheck disable=SC2086 # the options are words
PATH=$dir/src/pc:$PATH ./configure --prefix="$dir" $opts \
	>"$dir/configure.log" 2>&1 || { tail -30 "$dir/configure.log" >&2; exit 1; }
make -j"$jobs" >"$dir/make.log" 2>&1 || { tail -40 "$dir/make.log" >&2; exit 1; }
make install >"$dir/install.log" 2>&1 || { tail -20 "$dir/install.log" >&2; exit 1; }
cd "$dir"
rm -rf "$dir/src"
echo "build-mpich: done in $(($(date +%s) - start)) s" >&2
echo "$key" >"$dir/done"
echo "$dir"

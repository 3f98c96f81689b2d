#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Build libfabric's fabtests (the release Debian's libfabric-dev ships) from
# the tarball kept outside the tree, against the installed libfabric, into
# $BUILD/fabtests.  The sources are unpacked under $BUILD, never into the
# tree.  Needs autoconf, automake and libtool.
#
# Usage: fabric/build-fabtests.sh [TARBALL]

set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
tarball=${1:-${FABTESTS_TARBALL:-/work/shared/external/fabtests-1.17.0.tar.gz}}
src=$BUILD/fabtests-src
dest=$(pwd)/$BUILD/fabtests

if [ -x "$dest/bin/fi_rdm_tagged_pingpong" ] && [ "$dest/bin/fi_rdm_tagged_pingpong" -nt "$tarball" ]; then
	exit 0
fi
[ -r "$tarball" ] || { echo "build-fabtests: no $tarball" >&2; exit 1; }
rm -rf "$src"
mkdir -p "$src"
tar xzf "$tarball" -C "$src" --strip-components=1
cd "$src"
./autogen.sh >autogen.log 2>&1 || { tail -20 autogen.log >&2; exit 1; }
./configure --with-libfabric=/usr --prefix="$dest" >configure.log 2>&1 ||
	{ tail -20 configure.log >&2; exit 1; }
make -j"$(nproc)" >make.log 2>&1 || { tail -40 make.log >&2; exit 1; }
make install >install.log 2>&1 || { tail -20 install.log >&2; exit 1; }
echo "fabtests in $dest/bin"

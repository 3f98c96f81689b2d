# SPDX-License-Identifier: GPL-2.0
# Shared by tests/run-check.sh and tests/run-demo.sh (sourced, from the
# top of the work tree).

BUILD=${BUILD:-build}

# Modules of Debian's kernel that dmaplane.ko needs, in load order.
STOCK_RDMA_MODULES="configfs ib_core ib_cm iw_cm rdma_cm"

# stock_version [PACKAGE]: the Debian kernel a meta-package points at
# (linux-image-amd64, 6.1, by default; linux-image-6.12-amd64 for 6.12).
stock_version() {
	dpkg-query -W -f='${Depends}' "${1:-linux-image-amd64}" |
		sed -n 's/.*linux-image-\([0-9][^ ,]*\).*/\1/p'
}

# build_ko NAME KDIR: build the modules against KDIR in $BUILD/ko-NAME, a
# copy of the kernel sources (kbuild writes its objects next to them).
# The kernel's release is kept in $BUILD/ko-NAME/kernelrelease.
build_ko() {
	local dir rc
	dir=$BUILD/ko-$1
	rm -rf "$dir"
	mkdir -p "$dir"
	cp -a Kbuild compat kmod kunit-tests uapi "$dir"/
	sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' \
		"$2/include/generated/utsrelease.h" >"$dir/kernelrelease"
	make -C "$2" M="$(pwd)/$dir" W=1 KCFLAGS=-Werror modules >"$dir/build.log" 2>&1
	rc=$?
	[ $rc = 0 ] || cat "$dir/build.log" >&2
	grep -h . "$dir"/compat/*.probe 2>/dev/null | sed 's/^/probe: /'
	return $rc
}

# stock_module KVER NAME: the path of a module of Debian's kernel KVER,
# uncompressed (6.12's are .ko.xz, which busybox insmod cannot load).
stock_module() {
	local path out
	path=$(modinfo -k "$1" -n "$2") || return 1
	case $path in
	*.xz)
		out=$BUILD/kmods-$1/$2.ko
		mkdir -p "$(dirname "$out")"
		[ -e "$out" ] || xz -dc "$path" >"$out"
		echo "$out"
		;;
	*)	echo "$path" ;;
	esac
}

# make_initramfs OUT KODIR [SRC[:DEST]...]: an initramfs with the modules
# of KODIR, the library, the tools, the examples, the in-VM tests and any
# further files given.
make_initramfs() {
	local img kodir kver t
	img=$1
	kodir=$2
	shift 2
	set -- "$img" "$@" "$kodir"/dmaplane.ko \
		"$BUILD"/libdmaplane.so.1:/dmaplane/lib/libdmaplane.so.1 \
		"$BUILD"/dp-demo "$BUILD"/dp-pingpong "$BUILD"/dp-ring "$BUILD"/dpctl \
		"$(command -v rdma)":/usr/sbin/rdma
	[ -e "$kodir/dmaplane_kunit.ko" ] && set -- "$@" "$kodir/dmaplane_kunit.ko"
	# The tag matcher's benchmark module (jobs/bench.sh).
	[ -e "$kodir/dmaplane_matchbench.ko" ] && set -- "$@" "$kodir/dmaplane_matchbench.ko"
	# The parameter-server benchmark (jobs/kvstore.sh); ldd brings libzmq.
	[ -x "$BUILD/dp-kvstore" ] && set -- "$@" "$BUILD/dp-kvstore"
	# Debian's kernel has the RDMA core as modules that dmaplane.ko
	# needs; the test kernel has it built in.
	case $kodir in
	*stock*)
		kver=$(cat "$kodir/kernelrelease")
		for t in $STOCK_RDMA_MODULES; do
			set -- "$@" "$(stock_module "$kver" "$t"):/dmaplane/kmods/$t.ko"
		done
		;;
	esac
	for t in "$BUILD"/tests/*_test; do
		[ -x "$t" ] && set -- "$@" "$t:/dmaplane/tests/$(basename "$t")"
	done
	# The fault-injection driver, the kill loop and the fuzzer
	# (jobs/faults.sh, jobs/killloop.sh, jobs/fuzz.sh); not *_test, so
	# suite.sh does not run them.
	for t in faults killloop fuzz; do
		[ -x "$BUILD/tests/$t" ] && set -- "$@" "$BUILD/tests/$t:/dmaplane/$t"
	done
	# The malicious peer of the two-node job (jobs/evil.sh, as
	# /dmaplane/evil_peer) and libibverbs' soft-RoCE provider, which it
	# loads at run time (ldd does not see it).
	if [ -x "$BUILD/tests/evil_peer" ]; then
		set -- "$@" "$BUILD/tests/evil_peer:/dmaplane/evil_peer"
		for t in /usr/lib/*/libibverbs/librxe-rdmav*.so /etc/libibverbs.d/rxe.driver; do
			[ -e "$t" ] && set -- "$@" "$t:$t"
		done
	fi
	tests/vm/mkinitramfs.sh "$@"
}

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The libfabric provider's tests: build the library, the provider and
# fabtests (fabric/build-fabtests.sh), the module for the 6.1 test kernel,
# and run tests/vm/jobs/fabric.sh in one VM with the host's root shared
# over 9p (Debian's fi_pingpong and the build tree are used from there).
# Prints one PASS/FAIL/SKIP line per check (tests/vm/results.py).
#
# With FABRIC_NODES=2 (tests/run-fabric2.sh) the same build boots two VMs
# (run-vm.sh -n 2) running tests/vm/jobs/fabric2.sh instead: servers on
# node 1, clients on node 0, the module connecting the nodes over
# soft-RoCE.
#
# Usage: tests/run-fabric.sh [KVER [KERNEL-ARGS]]   (6.1 by default; the
# kernel is built by tests/vm/build-kernel.sh unless cached; KERNEL-ARGS
# such as dmaplane.fabric_only=fi_pingpong,fi_rdm reach the job)
# FABRIC_MPICH=1 also builds MPICH over libfabric (fabric/build-mpich.sh,
# cached) and runs the MPI programs under it too (the job's mpich-* checks);
# FABRIC_MPICH=cached does so only when that build is cached already.

set -u
cd "$(dirname "$0")/.."
. tests/vm/common.sh
kver=${1:-6.1}
nodes=${FABRIC_NODES:-1}
case $nodes in
1) job=fabric label=fabric dir=fabric ;;
2) job=fabric2 label=fabric2 dir=fabric2node- ;;
*) echo "run-fabric: FABRIC_NODES is 1 or 2" >&2; exit 2 ;;
esac
run=$dir$kver${FABRIC_RUN:+-$FABRIC_RUN}	# FABRIC_RUN=NAME: concurrent runs
out=$BUILD/$run
rm -rf "$out"
mkdir -p "$out"

KSRC=$(tests/vm/build-kernel.sh "$kver") || exit 1
make -s BUILD="$BUILD" KSFT_DIR="$KSRC/tools/testing/selftests" \
	lib tools examples fabric fabric-tests >"$out/build.log" 2>&1 ||
	{ tail -30 "$out/build.log"; exit 1; }
fabric/build-fabtests.sh >"$out/fabtests.log" 2>&1 ||
	echo "fabtests not built (see $out/fabtests.log): their checks are skipped"
# mpi_progs MPICC DIR: the MPI programs of fabric/tests/ built into DIR
mpi_progs() {
	mkdir -p "$2"
	for p in mpi_ping_pong mpi_p2p mpi_coll mpi_osc; do
		"$1" -Wall -Wextra -O2 -o "$2/$p" fabric/tests/$p.c >>"$out/mpicc.log" 2>&1 ||
			echo "$p not built with $1 (see $out/mpicc.log)"
	done
}
! command -v mpicc >/dev/null || mpi_progs mpicc "$BUILD/fabric"
# MPICH over the provider (fabric/build-mpich.sh, ~40 min the first time,
# cached) with FABRIC_MPICH=1: the same programs built with its mpicc.
mpich=
if [ "${FABRIC_MPICH:-}" = cached ]; then
	mpich=$(fabric/build-mpich.sh --cached) || mpich=
elif [ -n "${FABRIC_MPICH:-}" ]; then
	mpich=$(fabric/build-mpich.sh) || { echo "MPICH not built"; mpich=; }
fi
[ -z "$mpich" ] || mpi_progs "$mpich/bin/mpicc" "$BUILD/fabric/mpich"
build_ko $run "$KSRC" >"$out/ko.log" 2>&1 || { tail -30 "$out/ko.log"; exit 1; }
make_initramfs "$out/i.cpio.gz" "$BUILD/ko-$run" \
	tests/vm/bench:/dmaplane/bench >"$out/initramfs.log" 2>&1 ||
	{ tail -20 "$out/initramfs.log"; exit 1; }
tests/vm/run-vm.sh -k "$KSRC/arch/x86/boot/bzImage" -i "$out/i.cpio.gz" \
	-j $job -n $nodes -t "${FABRIC_VM_TIMEOUT:-1800}" -m 3072 -o "$out/vm" -R \
	-a "dmaplane.fabric_build=$(pwd)/$BUILD${mpich:+ dmaplane.mpich=$mpich} ${2:-}"
python3 tests/vm/results.py --ksrc "$KSRC" --label $label "$out/vm" $nodes

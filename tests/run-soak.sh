#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make soak: the long runs on the 6.1 test kernel (KASAN, lockdep,
# kmemleak), which make check runs short.
#
#   faults    the fail-nth sweep, then 1,000 probability runs each under
#             failslab and fail_page_alloc (make check: 100)
#   killloop  1,000 kill rounds (make check: 60)
#   killloop2 1,000 kill rounds of a group spread over two VMs (make
#             check: 60)
#   fuzz      the random-ioctl fuzzer, 1,000,000 calls, half as root and
#             half as nobody (make check: 40,000)
#   twonode   the two-VM job with 5,000 random frames from the malicious
#             peer (make check: 250)
#   fabric2   the libfabric provider across two VMs (tests/run-fabric2.sh:
#             fi_pingpong, the fabtests pairs, Open MPI and MPICH with 2
#             ranks per node (fabric/build-mpich.sh builds MPICH the first
#             time, ~40 min); about an hour under TCG; make check runs a few
#             of the fabtests pairs)
#   fabric    the libfabric provider's Open MPI programs that make check
#             leaves out, in one VM: mpi_ping_pong (np 2), mpi_coll and
#             mpi_osc (np 4; one-sided over osc/pt2pt), mpi_ping_pong under
#             MPICH (fabric/build-mpich.sh builds it the first time, ~40
#             min; make check then runs mpi_p2p and mpi_coll under it
#             too), and every runfabtests.sh case of
#             tests/vm/jobs/fabtests.sh (make check: a subset)
#   dmaplaned the arena service's VM job (tests/run-daemon.sh; make check
#             runs its host test)
#   dmaplaned2 its mesh across two VMs (tests/run-daemon2.sh: moves between
#             the nodes, cancel, the peer daemon killed mid-move)
#
# DMAPLANE_SOAK_ITERS=, DMAPLANE_SOAK_ROUNDS= and DMAPLANE_FUZZ_CALLS=
# override the counts; DMAPLANE_FUZZ_SEED=N replays a fuzz run (the seed is
# printed in build/soak/fuzz/results-0.log), DMAPLANE_FUZZ_THREADS=N
# (default 4); DMAPLANE_EVIL_COUNT= the random frames, DMAPLANE_EVIL_SEED=
# replays them (the seed is in build/soak/twonode/results-0.log).  Logs:
# build/soak/.  Last line: "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
. tests/vm/common.sh

rounds=${DMAPLANE_SOAK_ROUNDS:-1000}
iters=${DMAPLANE_SOAK_ITERS:-1000}
calls=${DMAPLANE_FUZZ_CALLS:-1000000}
out=$BUILD/soak
rm -rf "$out"
mkdir -p "$out"

KSRC=$(tests/vm/build-kernel.sh 6.1) || { echo "FAIL test-kernel-6.1"; exit 1; }
make -s BUILD="$BUILD" KSFT_DIR="$KSRC/tools/testing/selftests" lib tools examples \
	tests || { echo "FAIL build/user"; exit 1; }
build_ko test "$KSRC" >"$out/build-ko.log" 2>&1 || { echo "FAIL build/module"; exit 1; }
make_initramfs "$out/soak.cpio.gz" "$BUILD/ko-test" >"$out/initramfs.log" 2>&1 ||
	{ echo "FAIL initramfs"; exit 1; }

soak() {	# name timeout kernel-args [nodes]
	t0=$(date +%s)
	tests/vm/run-vm.sh -k "$KSRC/arch/x86/boot/bzImage" -i "$out/soak.cpio.gz" \
		-j "$1" -n "${4:-1}" -t "$2" -o "$out/$1" -a "$3"
	python3 tests/vm/results.py --ksrc "$KSRC" --label "soak/$1" "$out/$1" "${4:-1}" \
		>>"$out/results.txt"
	echo "   $1: $(($(date +%s) - t0)) s"
}

soak faults 14400 "dmaplane.fault_iters=$iters"
soak killloop 14400 "dmaplane.kill_rounds=$rounds"
soak killloop2 14400 "dmaplane.kill_rounds=$rounds" 2
args="dmaplane.fuzz_calls=$calls"
[ -n "${DMAPLANE_FUZZ_SEED:-}" ] && args="$args dmaplane.fuzz_seed=$DMAPLANE_FUZZ_SEED"
[ -n "${DMAPLANE_FUZZ_THREADS:-}" ] && args="$args dmaplane.fuzz_threads=$DMAPLANE_FUZZ_THREADS"
# About 700 calls/s under TCG with KASAN, and a margin for a busy host.
soak fuzz $((600 + calls / 100)) "$args"
evil=${DMAPLANE_EVIL_COUNT:-5000}
args="dmaplane.evil_count=$evil"
[ -n "${DMAPLANE_EVIL_SEED:-}" ] && args="$args dmaplane.evil_seed=$DMAPLANE_EVIL_SEED"
# The two-VM job (about 8 minutes) and some 8 random frames a second.
soak twonode $((2400 + evil / 2)) "$args" 2

# script NAME COMMAND...: a run script of its own (its PASS/FAIL/SKIP
# lines, prefixed soak/, go to the results; none at all is a failure),
# timed.
script() {
	name=$1
	shift
	t0=$(date +%s)
	"$@" >"$out/$name.log" 2>&1
	grep -E '^(PASS|FAIL|SKIP) ' "$out/$name.log" | sed 's/^\([A-Z]*\) /\1 soak\//' \
		>>"$out/results.txt"
	grep -qE '^(PASS|FAIL) ' "$out/$name.log" ||
		echo "FAIL soak/$name no results: $(tail -3 "$out/$name.log" | tr '\n' ' ')" \
			>>"$out/results.txt"
	echo "   $name: $(($(date +%s) - t0)) s"
}

script fabric2 env FABRIC_RUN=soak FABRIC_MPICH=1 FABRIC_VM_TIMEOUT=5400 tests/run-fabric2.sh 6.1
. tests/vm/jobs/fabtests.sh
script fabric env FABRIC_RUN=soak FABRIC_MPICH=1 FABRIC_VM_TIMEOUT=4800 tests/run-fabric.sh 6.1 \
	"dmaplane.fabric_only=openmpi,openmpi-coll,openmpi-osc,mpich,mpich-coll,$(fabtests_names)fi_cntr_test,fi_dom_test.n2"
# dmaplaned (the arena service) in one VM: arenas, attach, access control,
# malformed requests, events, local moves, a fuzz pass (12-18 minutes
# under TCG, so not in make check, which runs its host test); then two
# daemons on two VMs (the mesh, moves across the nodes)
script dmaplaned env DAEMON_RUN=soak tests/run-daemon.sh 6.1
script dmaplaned2 env DAEMON_RUN=soak tests/run-daemon2.sh 6.1

grep -h '^# \(faults\|killloop\|[0-9]* rounds\|drain\|nth:\|fail\|random\)\|^fuzz' \
	"$out"/*/results-0.log 2>/dev/null
grep -E '^(FAIL|SKIP)' "$out/results.txt" | cut -c1-300
pass=$(grep -c '^PASS ' "$out/results.txt")
fail=$(grep -c '^FAIL ' "$out/results.txt")
echo "$pass passed, $fail failed"
[ "$fail" = 0 ]

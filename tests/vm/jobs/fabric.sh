#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The libfabric provider in one VM: load dmaplane, mount the host's root
# (run-vm.sh -R) and run, in a chroot into it, Debian's fi_info and
# fi_pingpong and the fabtests built into the work tree's build/
# (fabric/build-fabtests.sh) with -p dmaplane.  Client and server of each
# program run in this VM and exchange addresses over 127.0.0.1 (-E).
# Every program is one check: DMAPLANE-CASE <name> PASS|FAIL|SKIP.
#
# Kernel command line: dmaplane.fabric_build=<host path of build/>
# (tests/run-fabric.sh sets it); dmaplane.fabric_only=NAME,NAME runs only
# those checks; dmaplane.fi_log=LEVEL sets FI_LOG_LEVEL (warn);
# dmaplane.fabric_timeout=S bounds each program (300 s);
# dmaplane.mpi_timeout=S each mpirun (900 s: under TCG, with 4 ranks on 2
# vCPUs, mpirun's start and MPI_Init/MPI_Finalize alone take minutes).
. /dmaplane/jobs/lib.sh
. /dmaplane/bench/hostroot.sh

B=$(cmdline dmaplane.fabric_build "")
FT=$B/fabtests/bin
ONLY=$(cmdline dmaplane.fabric_only "")
LOG=$(cmdline dmaplane.fi_log warn)
TMO=$(cmdline dmaplane.fabric_timeout 300)
MPI_TMO=$(cmdline dmaplane.mpi_timeout 900)
PP=47592	# fi_pingpong's control port
OOB=3000	# fabtests' out-of-band port (-E)
# fabtests' benchmarks allocate window (64) x their largest size twice per
# process: "-S all" goes to 8 MiB, 1 GiB a process, too much for the VM.
# 64 B (inject), 512 KiB and 1 MiB (rendezvous) instead.
SIZES=r:64,524224,1048576

want() {	# NAME: is this check to run?
	[ -z "$ONLY" ] && return 0
	case ",$ONLY," in *",$1,"*) return 0 ;; esac
	return 1
}

kmemleak_reset
check insmod load_dmaplane
if ! hostroot_mount; then
	echo "DMAPLANE-CASE hostroot FAIL no host root over 9p (run-vm.sh -R)"
	exit 1
fi
case_result hostroot 0
chmod 0666 /dev/dmaplane

# fab: a command in the host's root with the provider found through
# FI_PROVIDER_PATH and libdmaplane beside it; bounded by $TMO (or $tmo).
fab() {
	chroot $H /usr/bin/env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/tmp \
		TMPDIR=/tmp FI_PROVIDER_PATH="$B/fabric" LD_LIBRARY_PATH="$B" \
		FI_LOG_LEVEL="$LOG" \
		timeout -k 5 "${tmo:-$TMO}" "$@"
}

# one NAME COMMAND...: a program that needs no peer
one() {
	name=$1
	shift
	want "$name" || return 0
	echo "# fabric/$name: $*"
	fab "$@" >/tmp/out.$$ 2>&1
	rc=$?
	sed 's/^/#   /' /tmp/out.$$
	# fabtests' unit tests hold waits to wall-clock bounds (fi_eq_test:
	# an sread with an event queued returns within 5 ms).  A TCG vCPU
	# that the host deschedules misses those with nothing wrong in the
	# provider, so a failure that is only such a bound ("slept N ms")
	# runs once more; both outputs stay in the log.
	if [ $rc -ne 0 ] && grep -q 'slept [0-9]* ms' /tmp/out.$$ &&
	   ! grep -v 'slept [0-9]* ms' /tmp/out.$$ | grep -q 'FAIL\|FATAL'; then
		echo "# fabric/$name: a wall-clock bound missed; once more"
		fab "$@" >/tmp/out.$$ 2>&1
		rc=$?
		sed 's/^/#   /' /tmp/out.$$
	fi
	case_result "$name" $rc "rc=$rc: $(tail -3 /tmp/out.$$ | tr '\n' ' ')"
}

# pair NAME PORT COMMAND...: server, then, once the server listens on its
# out-of-band PORT, the client (the same command with 127.0.0.1 appended);
# both must succeed.
pair() {
	name=$1
	port=$2
	shift 2
	want "$name" || return 0
	echo "# fabric/$name: $*"
	fab "$@" >/tmp/srv.$$ 2>&1 &
	srv=$!
	wait_listen "$port" $srv || echo "# server not listening on $port (exited, or 60 s)"
	fab "$@" 127.0.0.1 >/tmp/cli.$$ 2>&1
	crc=$?
	wait $srv
	src=$?
	sed 's/^/#   server: /' /tmp/srv.$$
	sed 's/^/#   client: /' /tmp/cli.$$
	if notrun "$name" $src $crc; then
		return 0
	fi
	rc=0
	[ $crc = 0 ] && [ $src = 0 ] || rc=1
	out=/tmp/cli.$$
	[ $crc = 0 ] && out=/tmp/srv.$$
	case_result "$name" $rc "server rc=$src, client rc=$crc: $(fail_why $out)"
}

skip() {
	echo "DMAPLANE-CASE $1 SKIP $2"
}

# getinfo_test: fabtests' fi_getinfo_test, whose every subtest must pass
# except the ones that ask for what dmaplane does not do (fabric/README.md),
# which are SKIP lines of their own: a node and service without FI_SOURCE
# resolved into a destination address (getinfo_no_hints5,
# getinfo_src_dest1: a dmaplane address is an endpoint's name, not a host
# and a port) and RMA with the mr_mode bits of libfabric 1.0-1.4
# (getinfo_caps4: a dmaplane region belongs to one endpoint, so RMA needs
# FI_MR_ENDPOINT).  Any other failing subtest fails the check.
GETINFO_UNSUPPORTED="getinfo_no_hints5 getinfo_src_dest1 getinfo_caps4"
getinfo_test() {
	want fi_getinfo_test || return 0
	echo "# fabric/fi_getinfo_test: $FT/fi_getinfo_test -p dmaplane"
	fab $FT/fi_getinfo_test -p dmaplane >/tmp/gi.$$ 2>/tmp/gi-err.$$
	rc=$?
	sed 's/^/#   /' /tmp/gi.$$
	grep -v '<warn>' /tmp/gi-err.$$ | sed 's/^/#   stderr: /'
	# the subtests' verdicts: "Running NAME [...]..." then, on that line
	# or a later one, PASS!, FAIL..., "skipped ..." or "requires ..."
	awk '
	/^Running / { if (name != "") print name, "none"; name = $2 }
	name != "" && /PASS!/ { print name, "pass"; name = "" }
	name != "" && /FAIL|FATAL/ { print name, "fail"; name = "" }
	name != "" && /skipped because|requires unsupported/ { print name, "skip"; name = "" }
	END { if (name != "") print name, "none" }' /tmp/gi.$$ >/tmp/gi-v.$$
	bad=
	for t in $(awk '$2 != "pass" && $2 != "skip" { print $1 }' /tmp/gi-v.$$); do
		case " $GETINFO_UNSUPPORTED " in
		*" $t "*)
			echo "DMAPLANE-CASE fi_getinfo_test/$t SKIP not supported (tests/vm/jobs/fabric.sh)" ;;
		*)	bad="$bad $t" ;;
		esac
	done
	npass=$(grep -c ' pass$' /tmp/gi-v.$$)
	ok=1
	[ -z "$bad" ] && [ "$npass" -gt 0 ] && [ $rc -lt 124 ] && ok=0
	case_result fi_getinfo_test $ok "rc=$rc, $npass subtests passed, failed:${bad:- none}"
}

echo "# provider: $B/fabric/libdmaplane-fi.so"
fab fi_info -p dmaplane >/tmp/info.$$ 2>&1
rc=$?
sed 's/^/#   /' /tmp/info.$$
grep -q 'provider: dmaplane' /tmp/info.$$ || rc=1
case_result fi_info $rc "$(tail -3 /tmp/info.$$ | tr '\n' ' ')"
fab fi_info -p dmaplane -v >/tmp/info.$$ 2>&1
grep -E 'caps|mem_tag_format|mr_mode|inject_size|cq_data_size|threading' /tmp/info.$$ |
	sed 's/^/#   /'

pair fi_pingpong $PP fi_pingpong -p dmaplane -e rdm -I 100
pair fi_pingpong-all-sizes $PP fi_pingpong -p dmaplane -e rdm -I 10 -S all
# 8-byte messages with fi_pingpong's data checks (-c), tagged: the
# provider posts receives of up to 8 bytes with DMAPLANE_OP_F_INLINE and
# copies the bytes out of the completion; the module's recv_inline
# counter must have grown by at least one message per round trip (a
# message that arrives before its receive is posted is not inline).
# Open MPI's messages carry the source rank as remote CQ data, which
# never comes inline.
inl0=$(sed -n 's/^recv_inline //p' /sys/kernel/debug/dmaplane/stats)
rc=none
pair fi_pingpong-8 $PP fi_pingpong -p dmaplane -e rdm -m tagged -I 200 -S 8 -c
if [ "$rc" = 0 ]; then
	inl1=$(sed -n 's/^recv_inline //p' /sys/kernel/debug/dmaplane/stats)
	[ "$((${inl1:-0} - ${inl0:-0}))" -ge 200 ]
	case_result provider-inline $? "recv_inline ${inl0:-?} -> ${inl1:-?}"
fi

. /dmaplane/jobs/fabtests.sh
WINDOW=16
fabtests_pairs
fabtests_runfabtests
if [ ! -x "$H$FT/fi_getinfo_test" ]; then
	for t in fi_getinfo_test fi_cq_test fi_mr_test fi_dom_test fi_eq_test fi_cntr_test fi_dom_test.n2; do
		skip $t "no fabtests in $FT (fabric/build-fabtests.sh)"
	done
else
	getinfo_test
	one fi_cq_test $FT/fi_cq_test -p dmaplane
	one fi_mr_test $FT/fi_mr_test -p dmaplane
	one fi_dom_test $FT/fi_dom_test -p dmaplane
	one fi_eq_test $FT/fi_eq_test -p dmaplane
	one fi_cntr_test $FT/fi_cntr_test -p dmaplane
	one fi_dom_test.n2 $FT/fi_dom_test -p dmaplane -n 2
	# fi_av_test needs FI_SOCKADDR addresses given as host names (-g):
	# dmaplane's addresses are endpoint names, not sockaddrs.
	skip fi_av_test "addresses are dmaplane names, fi_av_test takes FI_SOCKADDR host names"
fi

# The provider's own tests that need the module (fabric/tests/*_test.c,
# kselftest harness, built by tests/run-fabric.sh): FI_MULTI_RECV.  On the
# host they skip; here DMAPLANE_REQUIRE_DEVICE makes a missing device fail.
if [ -x "$H$B/fabric/tests/mrecv_test" ]; then
	one mrecv_test /usr/bin/env DMAPLANE_REQUIRE_DEVICE=1 $B/fabric/tests/mrecv_test
elif want mrecv_test; then
	case_result mrecv_test 1 "not built: $B/fabric/tests/mrecv_test"
fi

# Open MPI 4.1 (Debian's, built with the ofi MTL) over the provider, when
# installed on the host and the test programs were built (tests/run-fabric.sh):
# the MTL's default tag mode, which puts the source rank into remote CQ
# data (cq_data_size 8 since ABI 1.0).  openmpi: mpi_ping_pong, 2 ranks;
# openmpi-p2p, -coll, -osc: mpi_p2p, mpi_coll and mpi_osc (one-sided
# through osc/pt2pt), 4 ranks.  Each passes when mpirun exits 0, rank 0
# printed "<program>: ok" and every rank's ofi MTL chose dmaplane and no
# other provider (mtl_base_verbose's "mtl:ofi:provider: NAME" lines).
# (/usr/bin/mpirun is a link through /etc/alternatives: test it in the chroot)
# mpi_result: the check of an mpi_run (bench/hostroot.sh)
mpi_result() {
	echo "# fabric/$name: $secs s"
	case_result "$name" $rc "rc=$rc $why$secs s: $(tail -3 /tmp/mpi.$$ | tr '\n' ' ')"
}

# mpi NAME NP PROGRAM [MPIRUN-OPTIONS...]
mpi() {
	name=$1
	np=$2
	prog=$3
	shift 3
	want "$name" || return 0
	if ! chroot $H test -x /usr/bin/mpirun; then
		skip "$name" "no mpirun on the host"
		return 0
	fi
	if [ ! -x "$H$B/fabric/$prog" ]; then
		skip "$name" "no build/fabric/$prog (mpicc in tests/run-fabric.sh)"
		return 0
	fi
	echo "# fabric/$name: mpirun -np $np --mca pml cm --mca mtl ofi (dmaplane) $* $prog"
	mpi_run mpirun --allow-run-as-root --oversubscribe -np "$np" \
		-x FI_PROVIDER_PATH -x LD_LIBRARY_PATH -x FI_LOG_LEVEL \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include dmaplane \
		--mca mtl_base_verbose 10 "$@" "$B/fabric/$prog"
	provs=$(mpi_providers "$np" /tmp/mpi.$$) || { rc=1; why="$why$provs; "; }
	mpi_result
}

mpi openmpi 2 mpi_ping_pong
mpi openmpi-p2p 4 mpi_p2p
mpi openmpi-coll 4 mpi_coll
mpi openmpi-osc 4 mpi_osc --mca osc pt2pt

# MPICH 4.0.2 over the provider (ch4:ofi, fabric/build-mpich.sh; Debian's
# mpich is built for UCX only), when tests/run-fabric.sh was given one
# (dmaplane.mpich=PREFIX) and built the programs with its mpicc into
# build/fabric/mpich/.  FI_PROVIDER=dmaplane leaves libfabric no other
# provider and MPIR_CVAR_NOLOCAL=1 sends the ranks of this one node
# through the netmod instead of MPICH's shared memory; rank 0's
# MPIR_CVAR_DEBUG_SUMMARY must name dmaplane with active messages on
# (they need FI_MULTI_RECV).  MPICH 4.0.2 knows no FI_MR_ENDPOINT, so it
# does one-sided over its active messages, and that path crashes in
# MPIDIG_put_target_msg_cb under Debian's sockets and tcp;ofi_rxm
# providers as well (MPIR_CVAR_CH4_OFI_ENABLE_RMA=0): mpi_osc is not run.
# mpich NAME NP PROGRAM
MPICH=$(cmdline dmaplane.mpich "")
mpich() {
	name=$1
	np=$2
	prog=$3
	want "$name" || return 0
	if [ -z "$MPICH" ] || [ ! -x "$H$MPICH/bin/mpiexec" ]; then
		skip "$name" "no MPICH (FABRIC_MPICH=1 tests/run-fabric.sh builds one)"
		return 0
	fi
	if [ ! -x "$H$B/fabric/mpich/$prog" ]; then
		case_result "$name" 1 "no build/fabric/mpich/$prog (tests/run-fabric.sh)"
		return 0
	fi
	echo "# fabric/$name: $MPICH/bin/mpiexec -n $np (FI_PROVIDER=dmaplane, MPIR_CVAR_NOLOCAL=1) $prog"
	mpi_run "$MPICH/bin/mpiexec" -n "$np" -genv FI_PROVIDER dmaplane \
		-genv MPIR_CVAR_NOLOCAL 1 -genv MPIR_CVAR_DEBUG_SUMMARY 1 \
		"$B/fabric/mpich/$prog"
	x=$(mpich_summary /tmp/mpi.$$) || { rc=1; why="$why$x"; }
	mpi_result
}

mpich mpich 2 mpi_ping_pong
mpich mpich-p2p 4 mpi_p2p
mpich mpich-coll 4 mpi_coll

grep -qx 'endpoints 0' /sys/kernel/debug/dmaplane/stats
case_result endpoints-released $? "$(cat /sys/kernel/debug/dmaplane/stats)"
check rmmod rmmod dmaplane
kmemleak_report
exit $fails

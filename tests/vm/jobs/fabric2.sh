#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The libfabric provider across two VMs (run-vm.sh -n 2 -R,
# tests/run-fabric.sh with FABRIC_NODES=2): both nodes bring up eth0 and a
# soft-RoCE device rxe0 on it, load dmaplane and add the other node as a
# peer (as jobs/twonode.sh), mount the host's root and run, in a chroot
# into it, Debian's fi_pingpong and the fabtests pairs of jobs/fabric.sh
# with -p dmaplane: node 1 (10.77.0.2) runs the servers, node 0
# (10.77.0.1) the clients with the server's address as their last
# argument.  The provider's addresses are dmaplane endpoint names with the
# node in them: the client's fi_av_insert of the server's name resolves
# through the module's peer table, and the data goes over kernel verbs.
#
# The nodes keep in step with busybox nc, node 1 always listening and
# node 0 connecting (retried, bounded):
#
#   node 0                              node 1
#   ------                              ------
#                                       server started; once it listens on
#   reads "ready" from port P   <---    its TCP port: "ready" on port P
#   client (bounded)
#   "done" to port P+1          --->    (bounded wait) server's end, 30 s
#                                       at most after the client's, else
#                                       killed
#   reads "rc=N" from port P+2  <---    its exit status on port P+2
#   DMAPLANE-CASE NAME: PASS only if both exited 0
#
# Node 1 prints each server's exit status too (# lines and a
# DMAPLANE-CASE NAME-server line), so results-1.log tells a server's
# failure even when node 0 never heard of it.
#
# Kernel command line: dmaplane.fabric_build=<host path of build/>;
# dmaplane.fabric_only=NAME,NAME runs only those checks (on both nodes);
# dmaplane.fi_log=LEVEL sets FI_LOG_LEVEL (warn); dmaplane.fabric_timeout=S
# bounds each program (180 s).
. /dmaplane/jobs/lib.sh
. /dmaplane/bench/hostroot.sh

B=$(cmdline dmaplane.fabric_build "")
FT=$B/fabtests/bin
ONLY=$(cmdline dmaplane.fabric_only "")
LOG=$(cmdline dmaplane.fi_log warn)
TMO=$(cmdline dmaplane.fabric_timeout 180)
SRV=10.77.0.2
PP=47592	# fi_pingpong's control port
OOB=3000	# fabtests' out-of-band port (-E)
# Across the nodes a 64 KiB message takes ~0.3 s and a small one ~50 ms
# under TCG (soft-RoCE, the host's 2 cores shared with other VMs; ~5 ms in
# one VM): 64 B (inject) and 64 KiB, and fewer iterations than fabric.sh.
SIZES=r:64,65472,65536
step=0

want() {	# NAME: is this check to run?
	[ -z "$ONLY" ] && return 0
	case ",$ONLY," in *",$1,"*) return 0 ;; esac
	return 1
}

kmemleak_reset
node_link
if ! hostroot_mount; then
	echo "DMAPLANE-CASE hostroot FAIL no host root over 9p (run-vm.sh -R)"
	exit 1
fi
case_result hostroot 0
hostname dmaplane-node$DMAPLANE_NODE	# (Open MPI: two nodes, two names)
check insmod load_dmaplane
chmod 0666 /dev/dmaplane
check peer-add $D/dpctl peer add "$DMAPLANE_PEER_IP"
peer_up peer-up 60
peer_once peer-once

fab() {	# as jobs/fabric.sh: a host program, bounded by $TMO (or $tmo)
	chroot $H /usr/bin/env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/tmp \
		TMPDIR=/tmp FI_PROVIDER_PATH="$B/fabric" LD_LIBRARY_PATH="$B" \
		FI_LOG_LEVEL="$LOG" \
		timeout -k 5 "${tmo:-$TMO}" "$@"
}

# fab_bg COMMAND...: fab in the background, $srv its pid (chroot's, which
# becomes timeout's: killing it kills the program)
fab_bg() {
	chroot $H /usr/bin/env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/tmp \
		TMPDIR=/tmp FI_PROVIDER_PATH="$B/fabric" LD_LIBRARY_PATH="$B" \
		FI_LOG_LEVEL="$LOG" \
		timeout -k 5 $TMO "$@" >/tmp/srv.$$ 2>&1 &
	srv=$!
}

# publish PORT MSG [SECS]: node 1 hands MSG to node 0's next connection on
# PORT (600 s at most).
publish() {
	echo "$2" | timeout "${3:-600}" nc -l -p "$1" >/dev/null 2>&1
}

# fetch PORT [SECS]: node 0 reads what node 1 publishes on PORT, retrying
# once a second for SECS (600) seconds; empty when it never came.
fetch() {
	end=$(($(date +%s) + ${2:-600}))
	while [ "$(date +%s)" -lt $end ]; do
		msg=$(nc -w 5 $SRV "$1" </dev/null 2>/dev/null)
		[ -n "$msg" ] && { echo "$msg"; return 0; }
		sleep 1
	done
	return 1
}

# pair NAME PORT COMMAND...: the server on node 1, the client (the same
# command with $SRV appended) on node 0 once the server listens on its TCP
# PORT; the check passes when both exit 0.
pair() {
	name=$1
	port=$2
	shift 2
	want "$name" || return 0
	step=$((step + 1))
	sp=$((19200 + 3 * step))
	if [ "$DMAPLANE_NODE" = 1 ]; then
		echo "# fabric2/$name: server: $*"
		fab_bg "$@"
		if wait_listen "$port"; then
			ready=ready
		else
			ready="not-listening"
			echo "# server not listening on $port after 60 s"
		fi
		publish $sp "$ready" $((TMO + 120)) ||
			echo "# node 0 never fetched 'ready' for $name"
		# The client's end (node 0 runs it bounded by $TMO).
		timeout $((TMO + 120)) nc -l -p $((sp + 1)) >/dev/null 2>&1 </dev/null ||
			echo "# node 0 never said its client of $name was done"
		for i in $(seq 60); do
			kill -0 $srv 2>/dev/null || break
			sleep 0.5
		done
		kill -0 $srv 2>/dev/null &&
			{ echo "# server of $name still running 30 s after the client: killed"; kill $srv; }
		wait $srv
		src=$?
		sed 's/^/#   server: /' /tmp/srv.$$
		case_result "$name-server" $src "server rc=$src: $(fail_why /tmp/srv.$$)"
		[ "$src" = 0 ] || diag
		publish $((sp + 2)) "rc=$src" 120 ||
			echo "# node 0 never fetched the server's status of $name"
		return
	fi
	echo "# fabric2/$name: client: $* $SRV"
	ready=$(fetch $sp $((TMO + 120)))
	if [ "$ready" != ready ]; then
		case_result "$name" 1 "server on $SRV not ready: '${ready:-no answer}'"
		echo "done" | nc -w 5 $SRV $((sp + 1)) >/dev/null 2>&1
		fetch $((sp + 2)) 120 >/dev/null
		return
	fi
	t0=$(date +%s)
	fab "$@" $SRV >/tmp/cli.$$ 2>&1
	crc=$?
	echo "# fabric2/$name: client $(($(date +%s) - t0)) s"
	sed 's/^/#   client: /' /tmp/cli.$$
	ok=
	for i in $(seq 60); do
		echo "done" | nc -w 5 $SRV $((sp + 1)) >/dev/null 2>&1 && { ok=1; break; }
		sleep 1
	done
	[ -n "$ok" ] || echo "# node 1 never took 'done' for $name"
	st=$(fetch $((sp + 2)) 180)
	src=${st#rc=}
	[ -n "$st" ] || src="unknown (node 1 did not answer)"
	rc=0
	[ $crc = 0 ] && [ "$src" = 0 ] || rc=1
	case_result "$name" $rc "server rc=$src, client rc=$crc: $(fail_why /tmp/cli.$$)"
	[ $rc = 0 ] || diag
}

# diag: after a failed check, the module's view of the peer (the module's
# log lines and the peer table) on this node
diag() {
	dmesg | grep "dmaplane:" | tail -8 | sed 's/^/#   dmesg: /'
	echo "#   peers: $($D/dpctl -j peer list 2>&1)"
}

skip() {
	echo "DMAPLANE-CASE $1 SKIP $2"
}

echo "# node $DMAPLANE_NODE: provider $B/fabric/libdmaplane-fi.so, peer $DMAPLANE_PEER_IP"
echo "# node $DMAPLANE_NODE: $($D/dpctl -j peer list 2>&1)"

pair fi_pingpong $PP fi_pingpong -p dmaplane -e rdm -I 20 -S 1024
pair fi_pingpong-64k $PP fi_pingpong -p dmaplane -e rdm -I 10 -S 65536
# -S all (64 B .. 8 MiB): ~10 minutes across the nodes, only when named
# by dmaplane.fabric_only.
case ",$ONLY," in
*,fi_pingpong-all-sizes,*)
	pair fi_pingpong-all-sizes $PP fi_pingpong -p dmaplane -e rdm -I 2 -S all ;;
esac

. /dmaplane/jobs/fabtests.sh
WINDOW=4
fabtests_pairs

# Open MPI across the nodes (unless dmaplane.fabric_only names other
# checks; ~25 minutes under TCG): openmpi (mpi_ping_pong, which takes
# exactly two ranks: one per node), openmpi-p2p, openmpi-coll and openmpi-osc (mpi_p2p, mpi_coll,
# mpi_osc with 4 ranks, 2 per node: ranks on one node talk through the
# module on that node, across the nodes over its transport).  Then MPICH
# (fabric/build-mpich.sh, given by tests/run-fabric.sh as dmaplane.mpich):
# mpich, mpich-p2p and mpich-coll, the same programs built with its
# mpicc, the same ranks (MPIR_CVAR_NOLOCAL=1: the ranks of one node
# through dmaplane, not MPICH's shared memory).  mpirun and mpiexec run
# on node 0.  There is no ssh in the VMs: their rsh launchers run
# /tmp/rsh-agent HOST DAEMON-COMMAND... (Open MPI's orted, MPICH's
# hydra_pmi_proxy), which hands the command line to a listener on node 1
# (busybox nc on port $MPIPORT) that runs it with sh in the chroot, as
# sshd would; node 0 says "done" to the listener at the end of the last
# run.  dmaplane.mpi_timeout=S bounds each run (900 s).
MPIPORT=19190
MPI_TMO=$(cmdline dmaplane.mpi_timeout 900)
MPICH=$(cmdline dmaplane.mpich "")
MPI_CHECKS="openmpi:2:1:mpi_ping_pong openmpi-p2p:4:2:mpi_p2p"
MPI_CHECKS="$MPI_CHECKS openmpi-coll:4:2:mpi_coll openmpi-osc:4:2:mpi_osc"
MPI_CHECKS="$MPI_CHECKS mpich:2:1:mpi_ping_pong mpich-p2p:4:2:mpi_p2p mpich-coll:4:2:mpi_coll"
# The checks both nodes run (each node decides alike: same host root,
# same command line); the others are SKIP lines.
mpi_wanted=
for c in $MPI_CHECKS; do
	name=${c%%:*}
	want "$name" || continue
	case $name in
	mpich*)
		if [ -z "$MPICH" ] || [ ! -x "$H$MPICH/bin/mpiexec" ]; then
			skip "$name" "no MPICH (FABRIC_MPICH=1 tests/run-fabric2.sh builds one)"
			continue
		fi ;;
	*)
		# (/usr/bin/mpirun is a link through /etc/alternatives)
		if ! chroot $H test -x /usr/bin/mpirun; then
			skip "$name" "no mpirun on the host"
			continue
		fi ;;
	esac
	mpi_wanted="$mpi_wanted $c"
done

# mpi_node1 N: run the orted command lines node 0's mpiruns send (one per
# mpirun, N of them at most) until node 0 says "done"
mpi_node1() {
	mpi_rsh_agent $MPIPORT
	end=$(($(date +%s) + $1 * (MPI_TMO + 60) + 240))
	n=0
	while [ "$(date +%s)" -lt $end ]; do
		cmd=$(timeout $((end - $(date +%s) + 1)) nc -l -p $MPIPORT </dev/null 2>/dev/null)
		[ -z "$cmd" ] && continue
		[ "$cmd" = "done" ] && break
		n=$((n + 1))
		# orted in the foreground (hydra_pmi_proxy is): its output
		# in /tmp/orted.N, its life bounded by timeout
		cmd=$(echo "$cmd" | sed 's/ --daemonize//')
		echo "# fabric2/mpi: node 1 runs: $cmd"
		chroot $H /usr/bin/env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/tmp \
			TMPDIR=/tmp FI_PROVIDER_PATH="$B/fabric" LD_LIBRARY_PATH="$B" \
			FI_LOG_LEVEL="$LOG" \
			timeout -k 5 $MPI_TMO sh -c "$cmd" >/tmp/orted.$n 2>&1 </dev/null &
	done
	[ "$cmd" = "done" ] || echo "# fabric2/mpi: node 0 never said done"
	for i in $(seq 60); do
		pgrep -x 'orted|hydra_pmi_proxy' >/dev/null 2>&1 || break
		sleep 1
	done
	pgrep -x 'orted|hydra_pmi_proxy' >/dev/null 2>&1 &&
		{ echo "# orted or hydra_pmi_proxy still running: killed"; pkill -x 'orted|hydra_pmi_proxy'; }
	for i in $(seq $n); do
		sed "s/^/#   daemon $i: /" /tmp/orted.$i
	done
	[ $n -gt 0 ]
	case_result mpi-node1 $? "no orted or hydra_pmi_proxy command came from node 0"
}

# peer_msgs: "TX RX", the messages this node's transport sent to and got
# from the other node so far (dpctl peer list; one peer)
peer_msgs() {
	$D/dpctl -j peer list 2>/dev/null |
		sed -n 's/.*"tx_msgs":\([0-9]*\),"rx_msgs":\([0-9]*\).*/\1 \2/p'
}

# crossed BEFORE: true when messages went both ways between the nodes
# since peer_msgs said BEFORE ("TX RX"); else false, saying why.
crossed() {
	was=$1
	now=$(peer_msgs)
	set -- $was $now
	[ $# -eq 4 ] && [ "$3" -gt "$1" ] && [ "$4" -gt "$2" ] && return 0
	echo "no messages both ways over dmaplane's transport (tx rx before: ${was:-none}, after: ${now:-none}); "
	return 1
}

# mpi_result: the check of an mpi_run (bench/hostroot.sh), which also
# needs messages both ways between the nodes over dmaplane's transport
# since $before (peer_msgs, taken before the run)
mpi_result() {
	x=$(crossed "$before") || { rc=1; why="$why$x"; }
	echo "# fabric2/$name: $secs s, transport messages (tx rx) $before -> $(peer_msgs)"
	case_result "$name" $rc "rc=$rc $why$secs s: $(tail -3 /tmp/mpi.$$ | tr '\n' ' ')"
}

# mpi_node0 NAME NP PER-NODE PROGRAM: one mpirun, NP ranks, PER-NODE on
# each node; passes when mpirun exits 0, rank 0 printed "PROGRAM: ok",
# every rank's ofi MTL chose dmaplane and no other provider, and messages
# crossed between the nodes over dmaplane's transport both ways
mpi_node0() {
	name=$1
	np=$2
	per=$3
	prog=$4
	if [ ! -x "$H$B/fabric/$prog" ]; then
		skip "$name" "no build/fabric/$prog (mpicc in tests/run-fabric.sh)"
		return 0
	fi
	echo "# fabric2/$name: mpirun -np $np --host 10.77.0.1:$per,10.77.0.2:$per (dmaplane) $prog"
	before=$(peer_msgs)
	mpi_run mpirun --allow-run-as-root -np $np \
		--host 10.77.0.1:$per,10.77.0.2:$per \
		--mca plm_rsh_agent /tmp/rsh-agent --mca plm_rsh_no_tree_spawn 1 \
		--mca oob_tcp_if_include eth0 --mca btl self,tcp \
		--mca btl_tcp_if_include eth0 \
		-x FI_PROVIDER_PATH -x LD_LIBRARY_PATH -x FI_LOG_LEVEL \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include dmaplane \
		--mca osc pt2pt \
		--mca mtl_base_verbose 10 --mca plm_base_verbose 5 \
		"$B/fabric/$prog"
	# node 0's mpirun prints every rank's lines, node 1's included
	provs=$(mpi_providers "$np" /tmp/mpi.$$) || { rc=1; why="$why$provs; "; }
	mpi_result
}

# mpich_node0 NAME NP PER-NODE PROGRAM: one mpiexec of MPICH, NP ranks,
# PER-NODE on each node; passes when mpiexec exits 0, rank 0 printed
# "PROGRAM: ok" and MPICH's debug summary names dmaplane with active
# messages on (tests/vm/jobs/fabric.sh's mpich checks), and messages
# crossed between the nodes over dmaplane's transport.  Hydra forks the
# proxy of node 0 (a local address) and launches node 1's through the
# agent; -iface eth0 gives the proxies node 0's address to call back.
mpich_node0() {
	name=$1
	np=$2
	per=$3
	prog=$4
	if [ ! -x "$H$B/fabric/mpich/$prog" ]; then
		case_result "$name" 1 "no build/fabric/mpich/$prog (tests/run-fabric.sh)"
		return 0
	fi
	echo "# fabric2/$name: $MPICH/bin/mpiexec -n $np -ppn $per -hosts 10.77.0.1,10.77.0.2 (dmaplane) $prog"
	before=$(peer_msgs)
	mpi_run "$MPICH/bin/mpiexec" -n $np -ppn $per \
		-hosts 10.77.0.1,10.77.0.2 -launcher rsh -launcher-exec /tmp/rsh-agent \
		-iface eth0 -genv FI_PROVIDER dmaplane -genv MPIR_CVAR_NOLOCAL 1 \
		-genv MPIR_CVAR_DEBUG_SUMMARY 1 \
		"$B/fabric/mpich/$prog"
	x=$(mpich_summary /tmp/mpi.$$) || { rc=1; why="$why$x"; }
	mpi_result
}

if [ -n "$mpi_wanted" ]; then
	if [ "$DMAPLANE_NODE" = 1 ]; then
		mpi_node1 $(echo $mpi_wanted | wc -w)
	else
		mpi_rsh_agent $MPIPORT
		for c in $mpi_wanted; do
			IFS=: read -r name np per prog <<-EOF
			$c
			EOF
			case $name in
			mpich*) mpich_node0 "$name" "$np" "$per" "$prog" ;;
			*) mpi_node0 "$name" "$np" "$per" "$prog" ;;
			esac
		done
		for i in $(seq 30); do
			echo "done" | nc -w 5 $SRV $MPIPORT >/dev/null 2>&1 && break
			sleep 1
		done
	fi
fi

# The end: every endpoint released (the peer's connection stays), the
# connection unbroken and idle, the module unloaded, kmemleak.  Node 1 is
# done with its servers by the time node 0 has read the last status.
ok=1
for i in $(seq 10); do
	grep -qx 'endpoints 0' /sys/kernel/debug/dmaplane/stats && { ok=0; break; }
	sleep 1
done
case_result endpoints-released $ok "$(cat /sys/kernel/debug/dmaplane/stats | tr '\n' ' ')"
# The connection that came up at the start carried the whole run (none
# broke and came back, which the programs may not notice), and it is idle:
# every credit back, nothing queued, sent and unanswered, or in flight.
ok=1
for i in $(seq 10); do
	conns=$(cat /sys/kernel/debug/dmaplane/conns)
	echo "$conns" | grep -q " state 1 .* credits 32 backlog 0 sent 0 cookies 0 rw_inflight 0 " &&
		[ "$(echo "$conns" | wc -l)" = 1 ] &&
		[ "$(dmesg | grep -c 'dmaplane: connected to')" = 1 ] &&
		! dmesg | grep -q 'dmaplane: connection to .* closed' && { ok=0; break; }
	sleep 1
done
case_result link-stayed-up $ok "$(module_log 6)$(transport_state)"
# Neither node unloads before the other has looked: node 1 hands
# "checked" over once it has, and node 0 takes it once it has.
if [ "$DMAPLANE_NODE" = 1 ]; then
	publish 19187 checked 300 || echo "# node 0 never fetched 'checked'"
else
	[ "$(fetch 19187 300)" = checked ] || echo "# node 1 never said 'checked'"
fi
check rmmod rmmod_retry
check rxe-del rdma link del rxe0
kmemleak_report
exit $fails

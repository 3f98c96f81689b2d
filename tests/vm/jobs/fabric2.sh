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

fab() {	# as jobs/fabric.sh: a host program, bounded by $TMO
	chroot $H /usr/bin/env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/tmp \
		TMPDIR=/tmp FI_PROVIDER_PATH="$B/fabric" LD_LIBRARY_PATH="$B" \
		FI_LOG_LEVEL="$LOG" \
		timeout -k 5 $TMO "$@"
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

# wait_listen PORT: until a TCP socket listens on PORT (60 s at most).
wait_listen() {
	hex=$(printf '%04X' "$1")
	for i in $(seq 120); do
		grep -qE ":$hex [0-9A-F]+:0000 0A" /proc/net/tcp /proc/net/tcp6 \
			2>/dev/null && return 0
		sleep 0.5
	done
	return 1
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
		case_result "$name-server" $src "server rc=$src: $(tail -2 /tmp/srv.$$ | tr '\n' ' ')"
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
	fab "$@" $SRV >/tmp/cli.$$ 2>&1
	crc=$?
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
	case_result "$name" $rc "server rc=$src, client rc=$crc: $(tail -2 /tmp/cli.$$ | tr '\n' ' ')"
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

if [ ! -x "$H$FT/fi_rdm_tagged_pingpong" ]; then
	for t in fi_rdm_tagged_pingpong fi_rdm_tagged_bw fi_rdm_tagged_peek \
		fi_recv_cancel fi_unexpected_msg fi_rdm fi_cq_data \
		fi_rdm_pingpong fi_msg_inject fi_rma_bw-write fi_rma_bw-read; do
		skip $t "no fabtests in $FT (fabric/build-fabtests.sh)"
	done
else
	pair fi_rdm_tagged_pingpong $OOB $FT/fi_rdm_tagged_pingpong -p dmaplane -E -I 10 -S $SIZES
	pair fi_rdm_tagged_bw $OOB $FT/fi_rdm_tagged_bw -p dmaplane -E -I 5 -W 4 -S $SIZES
	pair fi_rdm_tagged_peek $OOB $FT/fi_rdm_tagged_peek -p dmaplane -E
	pair fi_recv_cancel $OOB $FT/fi_recv_cancel -p dmaplane -e rdm -E
	pair fi_unexpected_msg $OOB $FT/fi_unexpected_msg -p dmaplane -e rdm -E -I 10 -S 4096
	pair fi_rdm $OOB $FT/fi_rdm -p dmaplane -E
	pair fi_cq_data $OOB $FT/fi_cq_data -p dmaplane -e rdm -E
	pair fi_rdm_pingpong $OOB $FT/fi_rdm_pingpong -p dmaplane -E -I 10 -S $SIZES
	pair fi_msg_inject $OOB $FT/fi_msg_inject -p dmaplane -e rdm -E -S 512
	pair fi_rma_bw-write $OOB $FT/fi_rma_bw -p dmaplane -e rdm -E -o write -I 5 -W 4 -S $SIZES
	pair fi_rma_bw-read $OOB $FT/fi_rma_bw -p dmaplane -e rdm -E -o read -I 5 -W 4 -S $SIZES
fi

# Open MPI across the nodes, only when dmaplane.fabric_only names openmpi:
# mpirun on node 0, one rank per node (tests/mpi_ping_pong.c takes exactly
# two ranks).  There is no ssh in the VMs: mpirun's rsh launcher runs
# /tmp/rsh-agent HOST ORTED-COMMAND..., which hands the command line to a
# listener on node 1 (busybox nc on port $MPIPORT) that runs it with sh in
# the chroot, as sshd would; node 0 says "done" to the listener at the end.
MPIPORT=19190
# rsh_agent: on both nodes (orted on node 1 checks that plm_rsh_agent exists)
rsh_agent() {
	cat >$H/tmp/rsh-agent <<-EOF
	#!/bin/sh
	# mpirun's plm_rsh_agent: \$1 is the host, the rest a shell command line
	host=\$1
	shift
	for i in \$(seq 30); do
		printf '%s\\n' "\$*" | busybox nc -w 5 "\$host" $MPIPORT && exit 0
		sleep 1
	done
	exit 1
	EOF
	chmod 0755 $H/tmp/rsh-agent
}

mpi_node1() {
	rsh_agent
	end=$(($(date +%s) + TMO + 240))
	n=0
	while [ "$(date +%s)" -lt $end ]; do
		cmd=$(timeout $((end - $(date +%s) + 1)) nc -l -p $MPIPORT </dev/null 2>/dev/null)
		[ -z "$cmd" ] && continue
		[ "$cmd" = "done" ] && break
		n=$((n + 1))
		# orted in the foreground: its output in /tmp/orted.N, its
		# life bounded by timeout
		cmd=$(echo "$cmd" | sed 's/ --daemonize//')
		echo "# fabric2/openmpi: node 1 runs: $cmd"
		chroot $H /usr/bin/env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/tmp \
			TMPDIR=/tmp FI_PROVIDER_PATH="$B/fabric" LD_LIBRARY_PATH="$B" \
			FI_LOG_LEVEL="$LOG" \
			timeout -k 5 $TMO sh -c "$cmd" >/tmp/orted.$n 2>&1 </dev/null &
	done
	[ "$cmd" = "done" ] || echo "# fabric2/openmpi: node 0 never said done"
	for i in $(seq 60); do
		pgrep -x orted >/dev/null 2>&1 || break
		sleep 1
	done
	pgrep -x orted >/dev/null 2>&1 && { echo "# orted still running: killed"; pkill -x orted; }
	for i in $(seq $n); do
		sed "s/^/#   orted $i: /" /tmp/orted.$i
	done
	[ $n -gt 0 ]
	case_result openmpi-node1 $? "no orted command came from node 0"
}

mpi_node0() {
	rsh_agent
	echo "# fabric2/openmpi: mpirun -np 2 --host 10.77.0.1:1,10.77.0.2:1 (dmaplane)"
	fab mpirun --allow-run-as-root -np 2 --host 10.77.0.1:1,10.77.0.2:1 \
		--mca plm_rsh_agent /tmp/rsh-agent --mca plm_rsh_no_tree_spawn 1 \
		--mca oob_tcp_if_include eth0 --mca btl self,tcp \
		--mca btl_tcp_if_include eth0 \
		-x FI_PROVIDER_PATH -x LD_LIBRARY_PATH -x FI_LOG_LEVEL \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include dmaplane \
		--mca mtl_base_verbose 10 --mca plm_base_verbose 5 \
		"$B/fabric/mpi_ping_pong" >/tmp/mpi.$$ 2>&1
	rc=$?
	for i in $(seq 30); do
		echo "done" | nc -w 5 $SRV $MPIPORT >/dev/null 2>&1 && break
		sleep 1
	done
	sed 's/^/#   /' /tmp/mpi.$$
	grep -q 'mpi_ping_pong: ok' /tmp/mpi.$$ || rc=1
	grep -q 'mtl:ofi:provider: dmaplane' /tmp/mpi.$$ || rc=1
	case_result openmpi $rc "rc=$rc: $(tail -3 /tmp/mpi.$$ | tr '\n' ' ')"
}

case ",$ONLY," in
*,openmpi,*)
	if ! chroot $H test -x /usr/bin/mpirun || [ ! -x "$H$B/fabric/mpi_ping_pong" ]; then
		skip openmpi "no mpirun on the host or no build/fabric/mpi_ping_pong"
	elif [ "$DMAPLANE_NODE" = 1 ]; then
		mpi_node1
	else
		mpi_node0
	fi ;;
esac

# The end: every endpoint released (the peer's connection stays), the
# module unloaded, kmemleak.  Node 1 is done with its servers by the time
# node 0 has read the last status.
ok=1
for i in $(seq 10); do
	grep -qx 'endpoints 0' /sys/kernel/debug/dmaplane/stats && { ok=0; break; }
	sleep 1
done
case_result endpoints-released $ok "$(cat /sys/kernel/debug/dmaplane/stats | tr '\n' ' ')"
check rmmod rmmod_retry
check rxe-del rdma link del rxe0
kmemleak_report
exit $fails

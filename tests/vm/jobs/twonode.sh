#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Two VMs on one Ethernet segment: bring up the link, reach the peer, add a
# soft-RoCE device on eth0, load dmaplane on both nodes, connect them as
# peers and run tests/remote_test across them, then take node 1 away four
# times (module unload, rxe device deletion, its link down for a minute,
# and at last the whole VM, killed by the host) while node 0 has
# operations pending, and check that node 0 recovers.
#
# Node 0 (10.77.0.1) is the client: it runs the kselftest suite and the
# --disrupt/--exchange checks.  Node 1 (10.77.0.2) runs the responder
# (remote_test --serve) and does the damage.  The two scripts meet at
# named sync points over TCP (remote_test --signal NAME on one node,
# --wait-for NAME on the other; bounded by DMAPLANE_SYNC_TIMEOUT).  Every
# phase signals even when it failed, so a failure never leaves the other
# node waiting for more than the sync timeout.
#
#   node 0                              node 1
#   ------                              ------
#                                       insmod; peer add 10.77.0.1
#   [evil_phase_node0]  <-evil-ready--  [evil-ready]
#   [evil-done]         --evil-done-->  [evil_phase_node1: drop counters]
#   [evil_random_node0] <-evil-target-- [remote_test --hold]
#   [random frames]     -evil-random-done-> [evil_random_node1: counters]
#   [evil_late_node0]   <-evil-late-ready-  [evil_late_node1]
#   [late answer]       <-evil-late-asked-  [45 s idle, AV_INSERT]
#   (wait)              <-evil-late-done--
#   [early FIN]         <-evil-early-*----  [AV_INSERT, 64 KiB SEND]
#   insmod; peer add 10.77.0.2
#   peer up                             peer up; remote_test --serve
#   (wait)              <-server-up---
#   suite (client)      --suite-done->  (wait)
#   --disrupt unload    -pending-ready> kill server; rmmod
#   (checks errors)     -unload-checked> insmod; peer add; --serve
#   peer up             <--reloaded---
#   --exchange
#   --disrupt linkdel   -pending-ready> rdma link del rxe0
#   (checks errors)     -linkdel-checked> rdma link add rxe0
#   peer up             <-link-readded-
#   --exchange          --exchange-done->
#   --disrupt linkdown  -pending-ready> ip link set eth0 down; 60 s; up
#   (checks errors)     <--link-back---
#   peer up; --exchange -exchange-after-link-back-done-> stop server
#   ten times:          --cross-N-->
#   peer del; peer add                  peer del; peer add
#   peer up                             peer up
#                                       rmmod, kmemleak; insmod; peer add;
#   peer up             <-ready-for-kill- --serve
#   --disrupt vmkill    -pending-ready-> DMAPLANE-KILL-VM: the host kills
#   (checks errors)                      the VM (SIGKILL to QEMU)
#   rmmod, rxe-del, kmemleak
. /dmaplane/jobs/lib.sh

RT=$D/tests/remote_test
STALE=/tmp/dmaplane-stale-name
export DMAPLANE_SYNC_TIMEOUT=${DMAPLANE_SYNC_TIMEOUT:-300}

node_link

start_server() {
	$RT --serve &
	server=$!
}

stop_server() {
	[ -n "$server" ] || return 0
	kill "$server"	# SIGTERM: the server kills its sessions too
	wait "$server" 2>/dev/null
	server=
}

# ---- malicious peer phase ---------------------------------------------------
# tests/evil_peer.c lands in the initramfs as $D/evil_peer when built (see
# tests/vm/common.sh); jobs/evil.sh runs it on node 0 before node 0 loads
# its own module (node 1 has the module loaded with peer 10.77.0.1 added),
# and node 1 then checks that it dropped the bad connections.
. /dmaplane/jobs/evil.sh

kmemleak_reset
if [ "$DMAPLANE_NODE" = 1 ]; then
	check insmod insmod $D/dmaplane.ko
	check peer-add $D/dpctl peer add 10.77.0.1
	if [ -x $D/evil_peer ]; then
		evil_phase_node1_start
		sync_signal evil-ready
		# Every case of evil_peer: up to ~10 s each under TCG.
		DMAPLANE_SYNC_TIMEOUT=900 $RT --wait-for evil-done
		case_result sync-evil-done $?
		evil_phase_node1
		evil_random_node1_start
		evil_random_node1
		evil_late_node1
	fi
else
	if [ -x $D/evil_peer ]; then
		sync_wait evil-ready
		evil_phase_node0
		sync_signal evil-done
		evil_random_node0
		evil_late_node0
	fi
	check insmod insmod $D/dmaplane.ko
	check peer-add $D/dpctl peer add 10.77.0.2
fi
check demo $D/dp-demo
peer_up peer-up
# debugfs "conns": a line for the peer's connection, up (state 1).
conns=$(cat /sys/kernel/debug/dmaplane/conns)
echo "$conns" | grep -q "^10\.77\.0\.[12]:[0-9]* node [0-9a-f]\{16\} state 1 .* silent_ms [0-9]*$"
case_result debugfs-conns $? "$conns"

# ---- the suite across the nodes ---------------------------------------------
if [ "$DMAPLANE_NODE" = 1 ]; then
	start_server
	sync_signal server-up
	DMAPLANE_SYNC_TIMEOUT=1800 $RT --wait-for suite-done
	case_result sync-suite-done $?
else
	sync_wait server-up
	export DMAPLANE_ROLE=client
	run_kselftest $RT
	sync_signal suite-done
fi

# ---- (a) node 1 unloads its module with operations pending ------------------
if [ "$DMAPLANE_NODE" = 1 ]; then
	sync_wait pending-ready
	stop_server
	check rmmod-under-load rmmod_retry
	sync_wait unload-checked
	check reinsmod insmod $D/dmaplane.ko
	check peer-readd $D/dpctl peer add 10.77.0.1
	start_server
	sync_signal reloaded
else
	# Signals pending-ready itself, once its operations are in flight.
	check disrupt-unload $RT --disrupt unload
	sync_signal unload-checked
	sync_wait reloaded
	peer_up peer-up-after-reload
	check exchange-after-reload $RT --exchange $STALE
fi

# ---- (b) node 1 deletes its rxe device with operations pending --------------
if [ "$DMAPLANE_NODE" = 1 ]; then
	sync_wait pending-ready
	check rxe-del-under-load rdma link del rxe0
	sync_wait linkdel-checked
	check rxe-readd rdma link add rxe0 type rxe netdev eth0
	sync_signal link-readded
	sync_wait exchange-done
else
	check disrupt-linkdel $RT --disrupt linkdel
	sync_signal linkdel-checked
	sync_wait link-readded
	peer_up peer-up-after-rxe-readd
	check exchange-after-rxe-readd $RT --exchange $STALE
	sync_signal exchange-done
fi

# ---- (c) node 1's link is down for a minute with operations pending ---------
# Nothing tells either node: each finds out by its keepalive, fails what
# was pending, and the two reconnect once the link is back.  rxe in 6.1
# carries no rdma_cm traffic (in either direction, even to a freshly
# loaded module) after its netdev went down and up, while TCP between the
# nodes works: the soft-RoCE device is made anew once the link is up.
if [ "$DMAPLANE_NODE" = 1 ]; then
	sync_wait pending-ready
	check link-down ip link set eth0 down
	sleep 60
	check link-up ip link set eth0 up
	check rxe-renew-after-link-up sh -c \
		'rdma link del rxe0 && rdma link add rxe0 type rxe netdev eth0'
	sync_signal link-back
	sync_wait exchange-after-link-back-done
	stop_server
else
	check disrupt-linkdown $RT --disrupt linkdown
	sync_wait link-back
	# An attempt made while the link was down may hold on for 20 s.
	peer_up peer-up-after-link-back 60
	check exchange-after-link-back $RT --exchange
	sync_signal exchange-after-link-back-done
fi

# ---- (c2) both nodes drop and re-add each other at once, ten times ---------
# Each add starts a connection attempt at once, so the two attempts cross:
# the node with the higher node_id gives its own up for the peer's, and
# that attempt's teardown runs on the workqueue while its cm handler may
# still be building the QP (it once freed the CQ under the new QP: "Destroy
# of kernel CQ shouldn't fail").  Every round ends with the peer up on both
# sides; the kernel log is judged at the end.
crossed_connects() {
	bad=0
	for i in $(seq 10); do
		if [ "$DMAPLANE_NODE" = 1 ]; then
			$RT --wait-for "cross-$i" || bad=$((bad + 1))
		else
			$RT --signal "cross-$i" || bad=$((bad + 1))
		fi
		$D/dpctl peer del "$DMAPLANE_PEER_IP" || bad=$((bad + 1))
		$D/dpctl peer add "$DMAPLANE_PEER_IP" || bad=$((bad + 1))
		peer_is_up 60 || { bad=$((bad + 1)); echo "round $i: peer not up"; }
	done
	[ "$bad" = 0 ]
	case_result crossed-connects $? "$bad failures in 10 rounds"
}
crossed_connects

# Killed sessions may take a moment to close their endpoints.
endpoints_released() {
	for i in $(seq 10); do
		grep -qx 'endpoints 0' /sys/kernel/debug/dmaplane/stats && break
		sleep 1
	done
	grep -qx 'endpoints 0' /sys/kernel/debug/dmaplane/stats
	case_result endpoints-released $? "$(cat /sys/kernel/debug/dmaplane/stats)"
	grep -qx 'xfer_pages 0' /sys/kernel/debug/dmaplane/stats
	case_result xfer-pages-released $? "$(cat /sys/kernel/debug/dmaplane/stats)"
}

# ---- (d) node 1 dies (the host kills its VM) with operations pending --------
# Node 1 reports its own verdicts first, then serves again until it dies.
if [ "$DMAPLANE_NODE" = 1 ]; then
	endpoints_released
	check rmmod rmmod_retry
	kmemleak_report
	check insmod-before-kill insmod $D/dmaplane.ko
	check peer-add-before-kill $D/dpctl peer add 10.77.0.1
	start_server
	sync_signal ready-for-kill
	sync_wait pending-ready
	# No disconnect, no last word: the VM stops dead.
	echo "DMAPLANE-KILL-VM fails=$fails"
	sleep 600
	exit $fails
fi
sync_wait ready-for-kill
peer_up peer-up-before-kill
check disrupt-vmkill $RT --disrupt vmkill
endpoints_released
check rmmod rmmod_retry
check rxe-del rdma link del rxe0
kmemleak_report
exit $fails

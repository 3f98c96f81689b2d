#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Kill loops across two VMs (tests/killloop.c in its two-node mode, as
# /dmaplane/killloop): a group of processes spread over both nodes (half
# of them on each, a ring with local and remote links) sends/receives
# (eager and rendezvous), puts/gets and registers memory between its
# members; each round one random member, on either node, is SIGKILLed at
# a random moment, every other one must notice by itself and exit, and
# then every counter on both nodes must drain back to zero.  The nodes'
# connection must survive all of it (no reconnection, no dropped
# message).  Then the module must unload on both nodes and kmemleak must
# find nothing.
#
# The two killloops meet over TCP (node 0 connects to node 1, port 20889)
# and run the rounds in step; node 0 chooses them and prints the drain
# time of both nodes.  The scripts meet once more at the end (remote_test
# --signal/--wait-for) so that neither unloads its module while the other
# still checks its connection.
#
# Kernel command line: dmaplane.kill_rounds=N (default 100; make soak
# 1000), dmaplane.kill_members=K (default 4), dmaplane.kill_delay=MS (the
# latest moment of the kill after the victim's fork, or in half of the
# rounds after the end of its setup, default 1500: a setup takes 1 to 1.5 s
# under TCG).
. /dmaplane/jobs/lib.sh

rounds=$(cmdline dmaplane.kill_rounds 100)
members=$(cmdline dmaplane.kill_members 4)
delay=$(cmdline dmaplane.kill_delay 1500)
export DMAPLANE_SYNC_TIMEOUT=${DMAPLANE_SYNC_TIMEOUT:-600}

need_prog killloop

# peer_info FIELD: FIELD of the other node in our peer table (dpctl -j).
peer_info() {
	$D/dpctl -j peer list 2>/dev/null |
		sed -n "s/.*\"addr\":\"$DMAPLANE_PEER_IP\"[^}]*\"$1\":\"\{0,1\}\([^,\"}]*\).*/\1/p"
}

# Connections to the other node that closed since the module was loaded.
closed() {
	dmesg | grep -c "connection to $DMAPLANE_PEER_IP:[0-9]* .* closed"
}

node_link
job_load
check peer-add $D/dpctl peer add "$DMAPLANE_PEER_IP"
peer_up peer-up 60
node_id=$(peer_info node_id)
drops=$(peer_info drops)
closed0=$(closed)
echo "# peer $DMAPLANE_PEER_IP: node_id $node_id, drops $drops, connections closed $closed0"

t0=$(date +%s)
if [ "$DMAPLANE_NODE" = 0 ]; then
	$D/killloop -n 0 -a "$DMAPLANE_PEER_IP" -r "$rounds" -k "$members" -d "$delay"
else
	$D/killloop -n 1 -k "$members"
fi
[ $? = 0 ] || fails=$((fails + 1))
echo "# killloop: $(($(date +%s) - t0)) s"

# The same connection as before, up, nothing dropped or closed.
state=$(peer_info state)
[ "$state" = up ] && [ "$(peer_info node_id)" = "$node_id" ] &&
	[ "$(peer_info drops)" = "$drops" ] && [ "$(closed)" = "$closed0" ]
case_result connection-kept $? "state $state, node_id $(peer_info node_id) (was $node_id), drops $(peer_info drops) (was $drops), closed $(closed) (was $closed0)"

counters_zero counters-zero

# Node 1 has checked its connection: both may unload now.
if [ "$DMAPLANE_NODE" = 1 ]; then
	sync_signal checked
else
	sync_wait checked
fi
check rmmod rmmod_retry
kmemleak_report
exit $fails

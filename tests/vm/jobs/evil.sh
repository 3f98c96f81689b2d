# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=sh
# Malicious peer phase of the two-node job: sourced by twonode.sh (after
# lib.sh), which calls these functions between its own sync points.  Not a
# job of its own.
#
# Node 0 (10.77.0.1) plays a hostile dmaplane node with tests/evil_peer.c
# in user space: its own dmaplane module is NOT loaded yet, so that node 1
# only ever sees the evil peer at that address.  Node 1 (10.77.0.2) has
# the module loaded and 10.77.0.1 added as a peer; it must reject every
# bad CONNECT, drop (and count) every connection carrying a malformed or
# unjustified message, and answer a PUT for an unknown region with a FIN
# of status -ENOENT or -ECONNRESET on a connection that stays up.
#
# Ordering (twonode.sh):
#   node 1: insmod dmaplane.ko; dpctl peer add 10.77.0.1;
#           evil_phase_node1_start; signal evil-ready
#   node 0: wait evil-ready; evil_phase_node0; signal evil-done
#           (dmaplane.ko not loaded before that)
#   node 1: wait evil-done; evil_phase_node1 (module still loaded)
#
# Node 1 expects the peer's "drops" counter to grow by one per drop-* case
# (evil_peer --list drop) and one per CONNECT it rejected from a privileged
# port of this peer's address (the reject-* cases but the unprivileged
# one: ib.c's cm_connect_request() counts a bad handshake from a known
# peer).  The accept-valid and stay-* connections, which evil_peer closes
# itself, do not count.  The overflow cases (evil_peer --list overflow: a
# SEND larger than the receive buffers) are checked apart, as
# evil-drops-overflow: the node sees them as an error completion, which
# must count as a drop too.

EVIL_NODE0=10.77.0.1
EVIL_NODE1=10.77.0.2
EVIL_PORT=20886

# "drops" of peer $1 in `dpctl -j peer list`, empty when not found.
evil_peer_drops() {
	$D/dpctl -j peer list | tr '{' '\n' | grep "\"addr\":\"$1\"" |
		sed -n 's/.*"drops":\([0-9]*\).*/\1/p'
}

evil_phase_node0() {
	if [ -e /sys/module/dmaplane ]; then
		echo "DMAPLANE-CASE evil-peer FAIL dmaplane is loaded on node 0"
		fails=$((fails + 1))
		return 0
	fi
	echo "DMAPLANE-BEGIN kselftest evil_peer"
	$D/evil_peer --addr $EVIL_NODE1 --port $EVIL_PORT --case all
	rc=$?
	echo "DMAPLANE-END kselftest evil_peer rc=$rc"
	[ $rc = 0 ] || fails=$((fails + 1))
}

# Before node 0 starts: remember the drops counted so far.
evil_phase_node1_start() {
	evil_before=$(evil_peer_drops $EVIL_NODE0)
	if [ -z "$evil_before" ]; then
		echo "DMAPLANE-CASE evil-drops FAIL no \"drops\" for $EVIL_NODE0 in: $($D/dpctl -j peer list 2>&1)"
		fails=$((fails + 1))
	fi
}

evil_phase_node1() {
	ndrop=$($D/evil_peer --list drop | wc -l)
	nover=$($D/evil_peer --list overflow | wc -l)
	nrej=$($D/evil_peer --list reject | grep -vc unprivileged)
	want=$((ndrop - nover + nrej))
	# Let the last teardown settle before reading the counter.
	sleep 2
	drops=$(evil_peer_drops $EVIL_NODE0)
	if [ -n "$evil_before" ] && [ -n "$drops" ]; then
		got=$((drops - evil_before))
		[ "$got" = "$want" ] || [ "$got" = "$((want + nover))" ]
		case_result evil-drops $? \
			"peer $EVIL_NODE0 drops $evil_before -> $drops, want +$want (+$nover overflow)"
		[ "$got" = "$((want + nover))" ]
		case_result evil-drops-overflow $? \
			"peer $EVIL_NODE0 drops +$got, want +$((want + nover)): $nover SENDs larger than the receive buffers not counted"
	fi
	echo "# node 1 after the evil peer: $($D/dpctl -j peer list 2>&1)"
}

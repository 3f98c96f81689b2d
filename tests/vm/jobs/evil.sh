# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=sh
# Malicious peer phase of the two-node job: sourced by twonode.sh (after
# lib.sh), which calls one function per node.  Not a job of its own.
#
# Node 0 (10.77.0.1) plays a hostile dmaplane node with tests/evil_peer.c
# in user space: its own dmaplane module is NOT loaded, so that node 1
# only ever sees the evil peer at that address.  Node 1 (10.77.0.2) has
# the module loaded and 10.77.0.1 added as a peer; it must reject every
# bad CONNECT, drop (and count) every connection carrying a malformed or
# unjustified message, and answer a wrong rkey with RMA_GRANT -ENOENT.
#
# Expected ordering (twonode.sh):
#   both:   eth0 up, peer pingable, rxe0 on eth0 ACTIVE
#   node 1: insmod dmaplane.ko; dpctl peer add 10.77.0.1;
#           evil_phase_node1 (returns after node 0's phase, module still
#           loaded; rmmod etc. come after it)
#   node 0: evil_phase_node0 (dmaplane.ko not loaded before it returns)
# The two phases meet through address aliases on eth0, answered by ping:
#   10.77.0.12 up:   node 1 is ready (listener up, peer added)
#   10.77.0.11 up:   node 0 ran every case
#   10.77.0.12 gone: node 1 read its counters, node 0 may go on
# Each side waits a bounded time and records a FAIL when the other never
# shows up.
#
# Node 1 expects the peer's "drops" counter to equal the number of drop-*
# cases (evil_peer --list drop): one dropped connection each.  Rejected
# CONNECTs (reject-*) are not connections and are not counted; nor are the
# accept-valid and stay-rma-unknown-rkey connections, which evil_peer
# closes itself.

EVIL_NODE0=10.77.0.1
EVIL_NODE1=10.77.0.2
EVIL_READY=10.77.0.12
EVIL_DONE=10.77.0.11
EVIL_PORT=20886

evil_wait_ping() {	# addr seconds [gone]: wait until addr answers (or not)
	for _ in $(seq "$2"); do
		if ping -c 1 -W 1 "$1" >/dev/null 2>&1; then
			[ -z "${3:-}" ] && return 0
		else
			[ -n "${3:-}" ] && return 0
		fi
		sleep 1
	done
	return 1
}

# "drops" of peer $1 in `dpctl -j peer list`, empty when not found.
evil_peer_drops() {
	$D/dpctl -j peer list | tr '{' '\n' | grep "\"addr\":\"$1\"" |
		sed -n 's/.*"drops":\([0-9]*\).*/\1/p'
}

evil_phase_node0() {
	if [ ! -x $D/evil_peer ]; then
		echo "DMAPLANE-CASE evil-peer SKIP evil_peer not built (librdmacm-dev)"
		return 0
	fi
	if [ -e /sys/module/dmaplane ]; then
		echo "DMAPLANE-CASE evil-peer FAIL dmaplane is loaded on node 0"
		fails=$((fails + 1))
		return 0
	fi
	evil_wait_ping $EVIL_READY 180
	case_result evil-node1-ready $? "node 1 never signalled ready"

	echo "DMAPLANE-BEGIN kselftest evil_peer"
	$D/evil_peer --addr $EVIL_NODE1 --port $EVIL_PORT --case all
	rc=$?
	echo "DMAPLANE-END kselftest evil_peer rc=$rc"
	[ $rc = 0 ] || fails=$((fails + 1))

	ip addr add $EVIL_DONE/24 dev eth0
	evil_wait_ping $EVIL_READY 300 gone
	case_result evil-node1-checked $? "node 1 never read its counters"
	ip addr del $EVIL_DONE/24 dev eth0
}

evil_phase_node1() {
	if [ ! -x $D/evil_peer ]; then
		echo "DMAPLANE-CASE evil-drops SKIP evil_peer not built (librdmacm-dev)"
		return 0
	fi
	want=$($D/evil_peer --list drop | wc -l)
	before=$(evil_peer_drops $EVIL_NODE0)
	if [ -z "$before" ]; then
		echo "DMAPLANE-CASE evil-drops FAIL no \"drops\" for $EVIL_NODE0 in: $($D/dpctl -j peer list 2>&1)"
		fails=$((fails + 1))
	fi
	ip addr add $EVIL_READY/24 dev eth0

	# Node 0 runs all its cases: up to ~10 s each.
	evil_wait_ping $EVIL_DONE 400
	case_result evil-node0-done $? "node 0 never signalled done"
	# Let the last teardown settle before reading the counter.
	sleep 2
	drops=$(evil_peer_drops $EVIL_NODE0)
	if [ -n "$before" ]; then
		[ "$((drops - before))" = "$want" ]
		case_result evil-drops $? \
			"peer $EVIL_NODE0 drops $before -> $drops, want +$want"
	fi
	echo "# node 1 after the evil peer: $($D/dpctl -j peer list 2>&1)"
	ip addr del $EVIL_READY/24 dev eth0
}

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
# of status -ENOENT or -ECONNRESET on a connection that stays up.  A peer
# that posts no receive buffer but keeps talking (evil_peer's stall
# cases) must be given up on too, once nothing completed on node 1's send
# queue for 30 s: a "completed none of our work requests" line each, not
# counted as a drop (no malformed message).  So must a peer that keeps
# the credits of node 1's requests (evil_peer's withhold cases: its
# RESOLVEs have node 1 answer more than the credits it was given) and
# talks on in empty ACKs: a "gave no credit back" line each, not counted
# as a drop either.  One of
# the drop cases (drop-over-credits) sends one request more than the
# credits node 1 granted, all before its connection is established; node
# 1 consumes them once it is, and when its ACK work gave credits back
# before it reached the last one (the two run side by side), evil_peer
# sees that in the ACK and tries again on a new connection, which node 1
# does not count as a drop.
#
# Ordering (twonode.sh):
#   node 1: insmod dmaplane.ko; dpctl peer add 10.77.0.1;
#           evil_phase_node1_start; signal evil-ready
#   node 0: wait evil-ready; evil_phase_node0; signal evil-done
#           (dmaplane.ko not loaded before that)
#   node 1: wait evil-done; evil_phase_node1 (module still loaded);
#           evil_random_node1_start: signal "evil-target UID RKEY LEN"
#   node 0: evil_random_node0: wait evil-target*, the random phase, then
#           cases that need a working node; signal "evil-random-done N"
#   node 1: wait evil-random-done*; evil_random_node1
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
#
# Then the random phase (evil_peer --random SEED --count N): mutated valid
# frames from a seed printed in the log, at a live endpoint of node 1 (a
# remote_test --hold target with receives posted and a region open to
# put/get) and at made-up ones.  Afterwards node 1 must still accept and
# answer a valid peer (evil_peer's accept-valid and stay-* cases), count
# at most one drop per connection the random phase made, and once the
# target closed its endpoint every counter in debugfs must be back at zero.
# The kernel command line may set dmaplane.evil_count=N (default 500) and
# dmaplane.evil_seed=S (default: random).

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

# evil_cmdline NAME DEFAULT: dmaplane.NAME=VALUE of the kernel command line.
evil_cmdline() {
	v=$2
	for arg in $(cat /proc/cmdline); do
		case $arg in
		dmaplane.$1=*) v=${arg#*=} ;;
		esac
	done
	echo "$v"
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
	# The stall cases: given up on for a send queue that never moved.
	nstall=$($D/evil_peer --list stall | wc -l)
	stalls=$(dmesg | grep -c "$EVIL_NODE0:[0-9]* completed none of our work requests for")
	[ "$stalls" = "$nstall" ]
	case_result evil-stall-reason $? "$stalls connections dropped for a stalled send queue, want $nstall"
	# The withhold cases: given up on for credits never given back.
	nwith=$($D/evil_peer --list withhold | wc -l)
	withheld=$(dmesg | grep -c "$EVIL_NODE0:[0-9]* gave no credit back for")
	[ "$withheld" = "$nwith" ]
	case_result evil-withhold-reason $? "$withheld connections dropped for credits withheld, want $nwith"
	echo "# node 1 after the evil peer: $($D/dpctl -j peer list 2>&1)"
}

# ---- random phase -----------------------------------------------------------

# Node 1, after evil_phase_node1: a live target for the random frames.
evil_random_node1_start() {
	evil_before=$(evil_peer_drops $EVIL_NODE0)
	$D/tests/remote_test --hold >/tmp/evil-target 2>/tmp/evil-hold.log &
	evil_hold=$!
	for i in $(seq 30); do
		[ -s /tmp/evil-target ] && break
		sleep 1
	done
	target=$(cat /tmp/evil-target)
	[ -n "$target" ]
	case_result evil-target $? "remote_test --hold: $(cat /tmp/evil-hold.log)"
	$D/tests/remote_test --signal "evil-target $target"
	case_result sync-evil-target $?
}

# Node 0: the random phase, then cases that need a node still working.
evil_random_node0() {
	target=$(DMAPLANE_SYNC_TIMEOUT=600 $D/tests/remote_test --wait-for 'evil-target*')
	case_result sync-evil-target $?
	set -- $target
	count=$(evil_cmdline evil_count 500)
	seed=$(evil_cmdline evil_seed "$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')")
	[ -n "$seed" ] || seed=$(date +%s)
	t0=$(date +%s)
	echo "DMAPLANE-BEGIN kselftest evil_random"
	# A drop it must see, a credit it waits for: 20 s on a loaded host.
	$D/evil_peer --addr $EVIL_NODE1 --port $EVIL_PORT --random "$seed" \
		--count "$count" --dst "${2:-0}" --rkey "${3:-0}" --rlen "${4:-0}" \
		--timeout 20 >/tmp/evil-random.log 2>&1
	rc=$?
	cat /tmp/evil-random.log
	echo "DMAPLANE-END kselftest evil_random rc=$rc"
	[ $rc = 0 ] || fails=$((fails + 1))
	echo "# evil random phase: $(($(date +%s) - t0)) s"
	conns=$(sed -n 's/.* on \([0-9]*\) connections.*/\1/p' /tmp/evil-random.log)
	# The node still serves a valid peer, and answers it.
	echo "DMAPLANE-BEGIN kselftest evil_after_random"
	$D/evil_peer --addr $EVIL_NODE1 --port $EVIL_PORT \
		--case accept-valid,stay-ping,stay-cancel-unknown-cookie,stay-rma-unknown-rkey
	rc=$?
	echo "DMAPLANE-END kselftest evil_after_random rc=$rc"
	[ $rc = 0 ] || fails=$((fails + 1))
	$D/tests/remote_test --signal "evil-random-done ${conns:-0}"
	case_result sync-evil-random-done $?
}

# Node 1: every random connection dropped at most once, then nothing left.
evil_random_node1() {
	# About 8 frames a second under TCG: a second each is plenty.
	secs=$((600 + $(evil_cmdline evil_count 500)))
	msg=$(DMAPLANE_SYNC_TIMEOUT=$secs $D/tests/remote_test --wait-for 'evil-random-done*')
	case_result sync-evil-random-done $?
	conns=${msg#evil-random-done }
	sleep 2
	drops=$(evil_peer_drops $EVIL_NODE0)
	if [ -n "$evil_before" ] && [ -n "$drops" ]; then
		got=$((drops - evil_before))
		[ "$got" -gt 0 ] && [ "$got" -le "${conns:-0}" ]
		case_result evil-random-drops $? \
			"peer $EVIL_NODE0 drops +$got over $conns connections: want 1 .. $conns (one per dropped connection)"
	fi
	kill "$evil_hold"
	wait "$evil_hold"
	case_result evil-target-exit $? "$(cat /tmp/evil-hold.log)"
	cat /tmp/evil-hold.log
	counters_zero evil-random-counters-zero 20
}

# ---- paced cases: node 1 plays along ---------------------------------------
# evil_peer's cases run alone (not in "all"), in which node 1 acts at a
# moment evil_peer learns of by "go" on its standard input:
#
#   node 0                                 node 1
#   evil_paced_node0 <--evil-NAME-ready--  evil_paced_node1
#   evil_peer --case CASE                  peer up (a new node_id), IDLE s
#                                          idle; remote_test --resolve
#                                          [BYTES] until debugfs shows what
#                                          the case waits for
#   "go" on its stdin <--evil-NAME-asked--
#   the case goes on                       the insert (and send) return
#                   <--evil-NAME-done----
#
# late-answer-after-idle: the evil peer connects with no receive posted
# and says nothing; 45 s later node 1 inserts a name of the evil peer's
# node (AV_INSERT: a RESOLVE on that connection, whose SEND meets RNR NAKs
# until the evil peer posts its receives, 8 s after "go").  The peer was
# silent only because nothing waited on it: the insert must succeed, the
# connection stay up and nothing count as a drop.
#
# fin-before-rts-sent: the evil peer answers node 1's RESOLVE with its
# only receive buffer posted; node 1 then sends 64 KiB there, whose RTS
# waits on the send queue behind its buffer's registrations (RNR NAKs);
# after "go" the evil peer FINs the RTS's cookie, then posts its receives
# 6 s later.  Node 1 must not complete the send (and free the MRs under
# registrations that may still be queued) before the RTS has left: the
# send still waits 3 s after "go", then completes once the RTS went out,
# or fails with the connection (rxe 6.1 may never move that send queue
# again: the node gives it up after 30 s).

# "node_id" of peer $1 when its connection is up, empty otherwise.
evil_up_node_id() {
	$D/dpctl -j peer list | tr '{' '\n' | grep "\"addr\":\"$1\"" |
		grep '"state":"up"' | sed -n 's/.*"node_id":\([0-9]*\).*/\1/p'
}

evil_paced_node0() {	# name case
	sync_wait evil-$1-ready
	echo "DMAPLANE-BEGIN kselftest evil_$1"
	{
		DMAPLANE_SYNC_TIMEOUT=300 $D/tests/remote_test --wait-for evil-$1-asked &&
			echo go
	} | $D/evil_peer --addr $EVIL_NODE1 --port $EVIL_PORT --case "$2" --timeout 180
	rc=$?
	echo "DMAPLANE-END kselftest evil_$1 rc=$rc"
	[ $rc = 0 ] || fails=$((fails + 1))
	sync_wait evil-$1-done
}

# Node 1's line for $EVIL_NODE0 in debugfs "conns" matches $1, within 20 s.
evil_conn_shows() {
	for i in $(seq 20); do
		grep -q "^$EVIL_NODE0:[0-9]* .*$1" /sys/kernel/debug/dmaplane/conns && return 0
		sleep 1
	done
	return 1
}

evil_paced_node1() {	# name idle-secs bytes conns-pattern [still-running-secs]
	evil_before=$(evil_peer_drops $EVIL_NODE0)
	silent_before=$(dmesg | grep -c "$EVIL_NODE0:[0-9]* silent for")
	old=$(evil_up_node_id $EVIL_NODE0)
	sync_signal evil-$1-ready
	node=
	for i in $(seq 60); do
		node=$(evil_up_node_id $EVIL_NODE0)
		[ -n "$node" ] && [ "$node" != "$old" ] && break
		node=
		sleep 1
	done
	[ -n "$node" ]
	case_result evil-$1-up $? "no new connection from $EVIL_NODE0: $($D/dpctl -j peer list 2>&1)"
	resolver=
	if [ -n "$node" ]; then
		sleep "$2"
		# shellcheck disable=SC2086 # no BYTES: no argument
		$D/tests/remote_test --resolve "$node" 1 $3 2>/tmp/evil-$1.log &
		resolver=$!
		evil_conn_shows "$4"
		case_result evil-$1-pending $? "$(cat /sys/kernel/debug/dmaplane/conns)"
	fi
	# Always: node 0's evil_peer waits for it.
	sync_signal evil-$1-asked
	if [ -n "$resolver" ] && [ -n "${5:-}" ]; then
		sleep "$5"
		kill -0 "$resolver" 2>/dev/null
		case_result evil-$1-waits $? \
			"remote_test --resolve exited within $5 s of \"go\": $(cat /tmp/evil-$1.log)"
	fi
	if [ -n "$resolver" ]; then
		wait "$resolver"
		case_result evil-$1-resolve $? "$(cat /tmp/evil-$1.log; dmesg | tail -5)"
		cat /tmp/evil-$1.log
	fi
	sync_signal evil-$1-done
	silent=$(dmesg | grep -c "$EVIL_NODE0:[0-9]* silent for")
	[ "$silent" = "$silent_before" ]
	case_result evil-$1-no-silence-drop $? "$(dmesg | grep "silent for" | tail -3)"
	drops=$(evil_peer_drops $EVIL_NODE0)
	[ -n "$evil_before" ] && [ "$drops" = "$evil_before" ]
	case_result evil-$1-drops $? "peer $EVIL_NODE0 drops $evil_before -> $drops, want no change"
}

evil_late_node0() {
	evil_paced_node0 late late-answer-after-idle
	evil_paced_node0 early fin-before-rts-sent
}

evil_late_node1() {
	# Longer than IB_DEAD_AFTER and one keepalive period; the RESOLVE
	# pending on the send queue.
	evil_paced_node1 late 45 "" "sq_wrs [1-9]"
	# The RTS posted (seq 2, after the RESOLVE; no backlog), its cookie
	# waiting for the FIN.  The FIN comes right after "go", the evil
	# peer's receives 6 s later: 3 s after "go" the send must still wait
	# (the old code completed it at the FIN, its MRs freed under the
	# registrations still queued; rxe may have run those already, so
	# KASAN alone would not tell).
	evil_paced_node1 early 0 65536 \
		"tx_seq [2-9][0-9]* credits [0-9]* backlog 0 sent [0-9]* cookies [1-9][0-9]* .* sq_wrs [1-9]" 3
}

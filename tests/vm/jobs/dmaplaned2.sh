#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# dmaplaned's mesh across two VMs (run-vm.sh -n 2 -R, tests/run-daemon2.sh):
# both nodes bring up eth0 and soft-RoCE on it (as jobs/twonode.sh), load
# dmaplane, mount the host's root and run there, in a chroot, the daemon
# built with ASan and UBSan: vm0 on node 0 (10.77.0.1), vm1 on node 1
# (10.77.0.2), each the other's peer in its configuration, with the
# other's IP as fabric_address (the daemon does the module's peer add
# with dpctl) and one token for both.  Every check is one DMAPLANE-CASE
# line (tests/vm/results.py).
#
# Node 0 drives everything: it talks to its own daemon on the UNIX socket
# and to node 1's over TCP with the token.  Node 1 runs an agent
# (dmaplaned2_node1.py) that owns its daemon and answers node 0 on TCP
# port 19300: the SHA-256 of a range of one of its arenas read through a
# fresh attachment (dma-buf + mmap: the byte-exact check of every move),
# kill (SIGKILL), start, stop (SIGTERM, exit status).
#
#   moves vm0 -> vm1 of random data (dmaplanectl fill), several sizes,
#   chunks and offsets, including lengths that are not a multiple of the
#   chunk; pulls vm1 -> vm0 (dmaplane get under a read grant: byte-exact,
#   r checked by vm1, a read grant good for nothing else); moves relayed
#   to vm1 (vm1's arena into vm1's, and deduplicated out of vm1's into
#   vm0's, where vm0 already holds the content); deduplicated moves vm0 -> vm1 (10% changed: wire <= 25%,
#   byte-exact; again: all in place; random data: no savings) and vm1's
#   dedup endpoints refusing bad requests; malformed and unauthorised
#   requests across the nodes (4xx,
#   nothing changed on vm1); a move cancelled in the middle; node 1's
#   daemon killed in the middle of a move (the move fails naming the
#   cause, vm1 goes down: event peer.down; a move to it is refused at
#   once, 503), then started again (peer.up, moves work again).
#
# Kernel command line: dmaplane.daemon_build=<host path of build/>,
# dmaplane.daemon_src=<host path of the work tree> (run-daemon2.sh sets
# both).
. /dmaplane/jobs/lib.sh
. /dmaplane/bench/hostroot.sh

B=$(cmdline dmaplane.daemon_build "")
SRC=$(cmdline dmaplane.daemon_src "")
RUN=/run/dmaplaned
API=$RUN/api.sock
ATT=$RUN/attach.sock
TOKEN=0123456789abcdef-dmaplaned-mesh-token
AGENT=19300
N1=10.77.0.2
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"
me=vm$DMAPLANE_NODE
other=vm$((1 - DMAPLANE_NODE))

kmemleak_reset
node_link
if ! hostroot_mount; then
	echo "DMAPLANE-CASE hostroot FAIL no host root over 9p (run-vm.sh -R)"
	exit 1
fi
case_result hostroot 0
hostname dmaplane-$me
check insmod load_dmaplane
chmod 0666 /dev/dmaplane

mkdir -p $H/tmp/etc
printf '%s\n' "$TOKEN" >$H/tmp/etc/token
chmod 0600 $H/tmp/etc/token
cat >$H/tmp/etc/dmaplaned.conf <<CONF
{
  "node_name": "$me",
  "tcp_address": "10.77.0.$((DMAPLANE_NODE + 1))",
  "tcp_port": 7070,
  "token_file": "/tmp/etc/token",
  "dpctl": "$B/dpctl",
  "max_total_bytes": "768M",
  "arenas": [ { "name": "cfg", "size": "4M", "owner": 0, "group": 0, "mode": "0600" } ],
  "peers": [ { "name": "$other", "address": "$DMAPLANE_PEER_IP:7070",
               "fabric_address": "$DMAPLANE_PEER_IP" } ]
}
CONF
DAEMON="/usr/bin/env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/tmp TMPDIR=/tmp
	ASAN_OPTIONS=detect_leaks=1:exitcode=23:log_path=/tmp/asan
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=/tmp/ubsan
	LD_LIBRARY_PATH=$B $B/dmaplaned-asan -c /tmp/etc/dmaplaned.conf"

# The end of either node: sanitizers, sockets, the module's counters.
finish() {
	sed 's/^/# daemon: /' $H/tmp/daemon.log
	cat $H/tmp/asan* $H/tmp/ubsan* 2>/dev/null | sed 's/^/# sanitizer: /'
	! ls $H/tmp/asan* $H/tmp/ubsan* >/dev/null 2>&1
	case_result sanitizers-clean $? "$(cat $H/tmp/asan* $H/tmp/ubsan* 2>/dev/null | head -5)"
	! grep -q 'runtime error' $H/tmp/daemon.log
	case_result ubsan-clean $?
	counters_zero counters-zero 10
	umount $H/run $H/tmp $H/dev/shm $H/dev $H/sys $H/proc $H 2>/dev/null
	check rmmod rmmod_retry
	check rxe-del rdma link del rxe0
	kmemleak_report
	exit $fails
}

# ---- node 1: the agent owns the daemon --------------------------------------
if [ "$DMAPLANE_NODE" = 1 ]; then
	chroot $H $DAEMON --version >/dev/null
	case_result daemon-binary $?
	chroot $H /usr/bin/env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/tmp \
		TMPDIR=/tmp timeout 4500 python3 "$SRC/tests/vm/jobs/dmaplaned2_node1.py" \
		$N1 $AGENT $ATT $API /tmp/daemon.log $DAEMON
	case_result agent $?
	finish
fi

# ---- node 0 -----------------------------------------------------------------
api() {	# a request to vm0 on its UNIX socket as root; body in $H/tmp/body
	in_host curl -s -o /tmp/body -w '%{http_code}' --max-time 60 \
		--unix-socket $API "$@"
}
api_nobody() {	# the same as uid/gid 65534; body in $H/tmp/body.nobody
	in_host $NOBODY curl -s -o /tmp/body.nobody -w '%{http_code}' \
		--max-time 60 --unix-socket $API "$@"
}
n1() {	# a request to vm1 over TCP with the token; body in $H/tmp/body.n1
	in_host curl -s -o /tmp/body.n1 -w '%{http_code}' --max-time 60 \
		-H "Authorization: Bearer $TOKEN" "$@"
}
n1_raw() {	# the same without the token
	in_host curl -s -o /tmp/body.n1 -w '%{http_code}' --max-time 60 "$@"
}
agent() {	# a command to node 1's agent; prints its answer
	for i in $(seq 60); do
		out=$(in_host python3 -c '
import socket, sys
s = socket.create_connection(("'$N1'", '$AGENT'), timeout=300)
s.sendall((" ".join(sys.argv[1:]) + "\n").encode())
print(s.makefile().readline().strip())' "$@" 2>/dev/null) && [ -n "$out" ] && { echo "$out"; return 0; }
		sleep 2
	done
	echo "err agent unreachable"
	return 1
}
body() { cat $H/tmp/body; }
expect() {	# NAME WANT GOT [FILE]
	[ "$3" = "$2" ]
	case_result "$1" $? "status $3, want $2: $(head -c 300 "${4:-$H/tmp/body}" 2>/dev/null)"
}
move_id() { sed -n 's/^{"id":\([0-9]*\).*/\1/p' $H/tmp/body; }
field() {	# FIELD: a top-level field of the JSON in body
	in_host python3 -c 'import json, sys; print(json.load(open("/tmp/body")).get(sys.argv[1], ""))' "$1"
}
poll_move() {	# ID [SECS]: until the move has ended; its JSON in body
	for i in $(seq $((${2:-300} * 2))); do
		api http://x/v1/moves/$1 >/dev/null
		grep -q '"state":"\(done\|failed\|cancelled\)"' $H/tmp/body && return 0
		sleep 0.5
	done
	return 1
}
sha_local() {	# ARENA OFFSET LENGTH: SHA-256 of vm0's range (attach + mmap)
	in_host python3 -c '
import array, hashlib, mmap, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect("'$ATT'")
s.sendall(b"ATTACH " + sys.argv[1].encode() + b"\n")
msg, anc, _, _ = s.recvmsg(100, socket.CMSG_SPACE(4))
fd = array.array("i", anc[0][2][:4])[0]
m = mmap.mmap(fd, int(msg.split()[1]))
off, n = int(sys.argv[2]), int(sys.argv[3])
print(hashlib.sha256(m[off:off + n]).hexdigest())' "$@"
}
node_state() {	# NODE: vm0's view of its state
	api http://x/v1/nodes/$1 >/dev/null
	sed -n 's/.*"state":"\([a-z]*\)".*/\1/p' $H/tmp/body
}
wait_state() {	# NODE STATE SECS
	for i in $(seq $(($3 * 2))); do
		[ "$(node_state $1)" = "$2" ] && return 0
		sleep 0.5
	done
	return 1
}

chroot $H $DAEMON 2>$H/tmp/daemon.log &
DPID=$!
ok=1
for i in $(seq 120); do
	[ -S $H$API ] && [ -S $H$ATT ] && { ok=0; break; }
	kill -0 $DPID 2>/dev/null || break
	sleep 0.5
done
case_result daemon-start $ok "$(tail -5 $H/tmp/daemon.log)"
[ $ok = 0 ] || finish
in_host curl -sN --max-time 4700 --unix-socket $API http://x/v1/events >$H/tmp/sse 2>&1 &
SSE=$!

# ---- the mesh ---------------------------------------------------------------
st=$(agent sha256 cfg 0 4096)
case "$st" in ok*) ok=0 ;; *) ok=1 ;; esac
case_result agent-up $ok "$st"
wait_state vm1 up 120
case_result mesh-up $? "$(body)"
peer_up module-peer-up 120	# the daemons' dpctl peer add
api http://x/v1/nodes >/dev/null
grep -q '"name":"vm0","self":true' $H/tmp/body && grep -q '"name":"vm1"' $H/tmp/body
case_result nodes $? "$(body)"
sed 's/^/# nodes: /' $H/tmp/body

# vm1's arenas, made over its TCP API: d1 (root's, 0600), open (0666), big
expect n1-create-d1 201 "$(n1 -X POST -d '{"name":"d1","size":"32M","mode":"0600"}' http://$N1:7070/v1/arenas)" $H/tmp/body.n1
expect n1-create-open 201 "$(n1 -X POST -d '{"name":"open","size":"1M","mode":"0666"}' http://$N1:7070/v1/arenas)" $H/tmp/body.n1
expect n1-create-big 201 "$(n1 -X POST -d '{"name":"big","size":"128M","mode":"0600"}' http://$N1:7070/v1/arenas)" $H/tmp/body.n1
ok=1
for i in $(seq 30); do
	api http://x/v1/nodes/vm1/arenas >/dev/null
	grep -q '"name":"d1"' $H/tmp/body && grep -q '"name":"big"' $H/tmp/body && { ok=0; break; }
	sleep 0.5
done
! grep -q rkey $H/tmp/body
case_result peer-arena-table $((ok + $?)) "$(body)"
api_nobody http://x/v1/nodes/vm1/arenas >/dev/null
grep -q '"name":"open"' $H/tmp/body.nobody && ! grep -q '"name":"d1"' $H/tmp/body.nobody
case_result peer-arena-table-filtered $? "$(cat $H/tmp/body.nobody)"

# vm0's sources: random data (xorshift of a random seed)
seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
expect create-s1 201 "$(api -X POST -d '{"name":"s1","size":"32M","mode":"0644"}' http://x/v1/arenas)"
expect create-sbig 201 "$(api -X POST -d '{"name":"sbig","size":"128M","mode":"0600"}' http://x/v1/arenas)"
check fill-s1 in_host $B/dmaplanectl -a $ATT fill s1 "$seed"
check fill-sbig in_host $B/dmaplanectl -a $ATT fill sbig $((seed + 1))

# ---- moves vm0 -> vm1, byte-exact -----------------------------------------
# remote_move NAME SRC-OFF DST-OFF LENGTH [CHUNK]: s1 -> vm1's d1
remote_move() {
	name=$1
	req="{\"src\":{\"arena\":\"s1\",\"offset\":$2},\"dst\":{\"node\":\"vm1\",\"arena\":\"d1\",\"offset\":$3},\"length\":$4${5:+,\"chunk\":$5}}"
	st=$(api -X POST -d "$req" http://x/v1/moves)
	if [ "$st" != 202 ]; then
		case_result "$name" 1 "status $st: $(body)"
		return
	fi
	id=$(move_id)
	poll_move "$id"
	sed "s/^/# $name: /" $H/tmp/body
	if ! grep -q '"state":"done"' $H/tmp/body || ! grep -q "\"bytes_done\":$4," $H/tmp/body ||
	   ! grep -q '"checksum_algorithm":"xxh128"' $H/tmp/body ||
	   ! grep -q '"node":"vm1","arena":"d1"' $H/tmp/body; then
		case_result "$name" 1 "$(body)"
		return
	fi
	want=$(sha_local s1 $2 $4)
	got=$(agent sha256 d1 $3 $4)
	[ "ok $want" = "$got" ]
	case_result "$name" $? "vm0 s1@$2 sha256 $want, vm1 d1@$3 $got"
}
remote_move move-4k 0 0 4096
remote_move move-odd-small 12345 4096 777
remote_move move-1m-odd 4096 1048576 1048579 65536
remote_move move-3m-unaligned 100003 5000000 3145733 262144
remote_move move-16m 0 16777216 16777216
# vm1's d1 outside what was moved is untouched (zero): below 4096+777 is
# overwritten by the first two, [4873, 1 MiB) is not
st=$(agent zero d1 4873 $((1048576 - 4873)))
[ "$st" = "ok yes" ]
case_result move-nothing-outside $? "$st"
sleep 1
grep -q '^event: move.progress$' $H/tmp/sse && grep -q '^event: move.done$' $H/tmp/sse
case_result move-events $?

# ---- moves vm1 -> vm0 (pulls: dmaplane get under vm1's read grant) --------
# vm1's d1 holds s1[0:16M] at 16 MiB (move-16m) and at 0 the first moves.
index_entries() { api http://x/v1/node >/dev/null; in_host python3 -c 'import json; print(json.load(open("/tmp/body"))["dedup"]["index_entries"])'; }
ix0=$(index_entries)
expect create-p1 201 "$(api -X POST -d '{"name":"p1","size":"32M","mode":"0666"}' http://x/v1/arenas)"
# pull_move NAME SRC-OFF DST-OFF LENGTH [CHUNK]: vm1's d1 -> p1
pull_move() {
	name=$1
	req="{\"src\":{\"node\":\"vm1\",\"arena\":\"d1\",\"offset\":$2},\"dst\":{\"arena\":\"p1\",\"offset\":$3},\"length\":$4${5:+,\"chunk\":$5}}"
	st=$(api -X POST -d "$req" http://x/v1/moves)
	if [ "$st" != 202 ]; then
		case_result "$name" 1 "status $st: $(body)"
		return
	fi
	poll_move "$(move_id)"
	sed "s/^/# $name: /" $H/tmp/body
	if ! grep -q '"state":"done"' $H/tmp/body || ! grep -q "\"bytes_done\":$4," $H/tmp/body ||
	   ! grep -q "\"wire_bytes\":$4," $H/tmp/body ||
	   ! grep -q '"src":{"node":"vm1","arena":"d1"' $H/tmp/body; then
		case_result "$name" 1 "$(body)"
		return
	fi
	want=$(agent sha256 d1 $2 $4)
	got=$(sha_local p1 $3 $4)
	[ "$want" = "ok $got" ]
	case_result "$name" $? "vm1 d1@$2 $want, vm0 p1@$3 sha256 $got"
}
pull_move pull-4k 0 0 4096
pull_move pull-odd-small 16789012 8192 777
pull_move pull-1m-odd 16781312 1048576 1048579 65536
pull_move pull-16m 16777216 16777216 16777216
# what a pull brought is indexed here: p1's range is in vm0's index
ix1=$(index_entries)
[ "$ix1" -gt "$ix0" ] 2>/dev/null
case_result pull-indexed $? "index entries before $ix0, after $ix1"
# nobody: no r on vm1's d1 (0600): vm1 refuses the read grant
expect pull-nobody-403 403 "$(api_nobody -X POST -d '{"src":{"node":"vm1","arena":"d1"},"dst":{"arena":"p1"},"length":4096}' http://x/v1/moves)" $H/tmp/body.nobody
grep -q 'vm1.*may not read' $H/tmp/body.nobody
case_result pull-nobody-403-says-why $? "$(cat $H/tmp/body.nobody)"
# ... but r on vm1's open (0666), and w on p1 (0666)
st=$(api_nobody -X POST -d '{"src":{"node":"vm1","arena":"open"},"dst":{"arena":"p1","offset":"31M"},"length":"1M"}' http://x/v1/moves)
expect pull-nobody-open 202 "$st" $H/tmp/body.nobody
id=$(sed -n 's/^{"id":\([0-9]*\).*/\1/p' $H/tmp/body.nobody)
poll_move "$id" 120
want=$(agent sha256 open 0 1048576)
got=$(sha_local p1 32505856 1048576)
grep -q '"state":"done"' $H/tmp/body && [ "$want" = "ok $got" ]
case_result pull-nobody-open-data $? "$(body) $want $got"
expect pull-range 400 "$(api -X POST -d '{"src":{"node":"vm1","arena":"d1","offset":"32M"},"dst":{"arena":"p1"},"length":4096}' http://x/v1/moves)"
expect pull-range-dst 400 "$(api -X POST -d '{"src":{"node":"vm1","arena":"d1"},"dst":{"arena":"p1","offset":"32M"},"length":4096}' http://x/v1/moves)"
expect pull-unknown-arena 404 "$(api -X POST -d '{"src":{"node":"vm1","arena":"nosuch"},"dst":{"arena":"p1"},"length":4096}' http://x/v1/moves)"
# A read grant is good for a get and nothing else: no dedup copy into it.
st=$(n1 -H 'X-Dmaplane-Node: vm0' -X POST -d '{"arena":"d1","length":4096,"admin":true,"access":"read"}' http://$N1:7070/v1/mesh/grants)
expect n1-read-grant 201 "$st" $H/tmp/body.n1
g=$(sed -n 's/.*"grant":\([0-9]*\).*/\1/p' $H/tmp/body.n1)
expect n1-read-grant-no-copy 403 "$(n1 -H 'X-Dmaplane-Node: vm0' -X POST -d "{\"grant\":$g,\"ops\":[[1,0,0,4096]]}" http://$N1:7070/v1/mesh/dedup/copy)" $H/tmp/body.n1
expect n1-read-grant-release 204 "$(n1 -H 'X-Dmaplane-Node: vm0' -X DELETE http://$N1:7070/v1/mesh/grants/$g)" $H/tmp/body.n1
expect n1-grant-bad-access 400 "$(n1 -H 'X-Dmaplane-Node: vm0' -X POST -d '{"arena":"d1","length":4096,"admin":true,"access":"rw"}' http://$N1:7070/v1/mesh/grants)" $H/tmp/body.n1

# ---- deduplicated moves vm0 -> vm1 --------------------------------------------
# vm1's d1 holds s1[0:16M] at 16 MiB (move-16m; indexed by vm1 when the
# grant was released).  s2 = s1[0:16M] with 10% of its 64 KiB blocks
# changed (26 of 256: 1703936 bytes) moves to vm1's new dd1 with dedup:
# vm1 copies the held chunks from d1, the changed ones cross the wire.
expect n1-create-dd1 201 "$(n1 -X POST -d '{"name":"dd1","size":"16M","mode":"0600"}' http://$N1:7070/v1/arenas)" $H/tmp/body.n1
expect create-s2 201 "$(api -X POST -d '{"name":"s2","size":"16M","mode":"0600"}' http://x/v1/arenas)"
in_host python3 -c '
import array, mmap, random, socket, sys
def attach(name):
    s = socket.socket(socket.AF_UNIX)
    s.connect("'$ATT'")
    s.sendall(b"ATTACH " + name.encode() + b"\n")
    msg, anc, _, _ = s.recvmsg(100, socket.CMSG_SPACE(4))
    return mmap.mmap(array.array("i", anc[0][2][:4])[0], int(msg.split()[1]))
a, b = attach("s1"), attach("s2")
b[:] = a[0:16 << 20]
r = random.Random(int(sys.argv[1]))
for k in r.sample(range(256), 26):
    b[k << 16:(k + 1) << 16] = r.randbytes(1 << 16)' $((seed + 7))
case_result dedup-fill-s2 $?
n1 http://$N1:7070/v1/node >/dev/null
in_host python3 -c 'import json; o = json.load(open("/tmp/body.n1")); exit(0 if o["dedup"]["index_entries"] > 0 else 1)'
case_result dedup-vm1-indexed $? "$(cat $H/tmp/body.n1)"
# dmove_remote NAME SRC DST LENGTH: a dedup move s -> vm1, body has its JSON
dmove_remote() {
	st=$(api -X POST -d "{\"src\":{\"arena\":\"$2\"},\"dst\":{\"node\":\"vm1\",\"arena\":\"$3\"},\"length\":$4,\"dedup\":true}" http://x/v1/moves)
	[ "$st" = 202 ] && poll_move "$(move_id)" 300 && grep -q '"state":"done"' $H/tmp/body
	case_result "$1" $? "status $st: $(body)"
	sed "s/^/# $1: /" $H/tmp/body
}
jcheck() {	# NAME EXPR: EXPR on o (the move's JSON) and d (its dedup_stats)
	in_host python3 -c 'import json, sys
o = json.load(open("/tmp/body")); d = o.get("dedup_stats", {})
sys.exit(0 if eval(sys.argv[1]) else 1)' "$2"
	case_result "$1" $? "$2: $(body)"
}
dmove_remote dedup-remote-move s2 dd1 16777216
jcheck dedup-remote-savings '1703936 <= o["wire_bytes"] <= 16777216 // 4 and o["meta_bytes"] > 0 and d["local_bytes"] + o["wire_bytes"] == 16777216 and d["hit_chunks"] > 0 and o["effective_bytes_per_second"] > o["wire_bytes_per_second"]'
want=$(sha_local s2 0 16777216)
got=$(agent sha256 dd1 0 16777216)
[ "ok $want" = "$got" ]
case_result dedup-remote-data $? "vm0 s2 $want, vm1 dd1 $got"
# Again: vm1 indexed dd1 at the end, everything is in place now.
dmove_remote dedup-remote-again s2 dd1 16777216
jcheck dedup-remote-inplace 'o["wire_bytes"] == 0 and d["in_place_bytes"] == 16777216'
# Random data vm1 never saw (sbig's first 4 MiB): no savings.
st=$(api -X POST -d '{"src":{"arena":"sbig"},"dst":{"node":"vm1","arena":"dd1","offset":"4M"},"length":"4M","dedup":true}' http://x/v1/moves)
[ "$st" = 202 ] && poll_move "$(move_id)" 300 && grep -q '"state":"done"' $H/tmp/body
case_result dedup-remote-random $? "status $st: $(body)"
jcheck dedup-remote-no-savings 'o["wire_bytes"] == o["logical_bytes"] == 4194304 and d["hit_chunks"] == 0 and d["local_bytes"] == 0'
want=$(sha_local sbig 0 4194304)
got=$(agent sha256 dd1 4194304 4194304)
[ "ok $want" = "$got" ]
case_result dedup-remote-random-data $? "vm0 sbig $want, vm1 dd1 $got"
# vm1's dedup endpoints: the token, a grant of the asking node
expect n1-dedup-no-token 401 "$(n1_raw -X POST -d '{}' http://$N1:7070/v1/mesh/dedup)" $H/tmp/body.n1
expect n1-dedup-bad 400 "$(n1 -H 'X-Dmaplane-Node: vm0' -X POST -d '{"grant":1}' http://$N1:7070/v1/mesh/dedup)" $H/tmp/body.n1
expect n1-dedup-copy-no-grant 404 "$(n1 -H 'X-Dmaplane-Node: vm0' -X POST -d '{"grant":999999,"ops":[[1,0,0,4096]]}' http://$N1:7070/v1/mesh/dedup/copy)" $H/tmp/body.n1
expect delete-s2 204 "$(api -X DELETE http://x/v1/arenas/s2)"
expect n1-delete-dd1 204 "$(n1 -X DELETE http://$N1:7070/v1/arenas/dd1)" $H/tmp/body.n1

# ---- moves relayed to the source's node -------------------------------------
# A move out of vm1's arena into vm1's own, or a deduplicated one out of
# vm1's into vm0's, runs at vm1: vm0 relays it (POST /v1/mesh/moves
# naming the requester) and reaches it as /v1/nodes/vm1/moves/ID.
poll_relayed() {	# ID: until vm1's move ID has ended; its JSON in body
	for i in $(seq 600); do
		api http://x/v1/nodes/vm1/moves/$1 >/dev/null
		grep -q '"state":"\(done\|failed\|cancelled\)"' $H/tmp/body && return 0
		sleep 0.5
	done
	return 1
}
st=$(api -X POST -d '{"src":{"node":"vm1","arena":"d1","offset":16777216},"dst":{"node":"vm1","arena":"open"},"length":65536}' http://x/v1/moves)
expect relay-create 202 "$st"
grep -q '"node":"vm1"' $H/tmp/body && grep -q '"relayed_by":"vm0"' $H/tmp/body
case_result relay-runs-at-vm1 $? "$(body)"
id=$(move_id)
poll_relayed "$id"
sed 's/^/# relay: /' $H/tmp/body
want=$(agent sha256 d1 16777216 65536)
got=$(agent sha256 open 0 65536)
grep -q '"state":"done"' $H/tmp/body && [ "$want" = "$got" ]
case_result relay-data $? "$(body) $want $got"
expect relay-nobody-403 403 "$(api_nobody http://x/v1/nodes/vm1/moves/$id)" $H/tmp/body.nobody
expect relay-cancel-ended-409 409 "$(api -X DELETE http://x/v1/nodes/vm1/moves/$id)"
expect relay-unknown-404 404 "$(api http://x/v1/nodes/vm1/moves/999999)"
# A deduplicated move out of vm1's d1 into vm0's new p2: vm0 holds that
# content already (p1, pulled above): nearly nothing crosses the wire.
expect create-p2 201 "$(api -X POST -d '{"name":"p2","size":"16M","mode":"0600"}' http://x/v1/arenas)"
st=$(api -X POST -d '{"src":{"node":"vm1","arena":"d1","offset":"16M"},"dst":{"arena":"p2"},"length":"16M","dedup":true}' http://x/v1/moves)
expect relay-dedup-create 202 "$st"
id=$(move_id)
poll_relayed "$id"
sed 's/^/# relay-dedup: /' $H/tmp/body
grep -q '"state":"done"' $H/tmp/body
case_result relay-dedup-done $? "$(body)"
jcheck relay-dedup-savings 'o["dedup"] and o["wire_bytes"] <= 16777216 // 4 and o["logical_bytes"] == 16777216'
want=$(agent sha256 d1 16777216 16777216)
got=$(sha_local p2 0 16777216)
[ "$want" = "ok $got" ]
case_result relay-dedup-data $? "vm1 d1@16M $want, vm0 p2 $got"
expect delete-p2 204 "$(api -X DELETE http://x/v1/arenas/p2)"

# ---- malformed and unauthorised, across the nodes ---------------------------
n1 http://$N1:7070/v1/arenas >/dev/null
before=$(cat $H/tmp/body.n1)
h0=$(agent sha256 d1 0 33554432)
expect remote-unknown-arena 404 "$(api -X POST -d '{"src":{"arena":"s1"},"dst":{"node":"vm1","arena":"nosuch"},"length":4096}' http://x/v1/moves)"
expect remote-unknown-node 404 "$(api -X POST -d '{"src":{"arena":"s1"},"dst":{"node":"vm9","arena":"d1"},"length":4096}' http://x/v1/moves)"
expect remote-range 400 "$(api -X POST -d '{"src":{"arena":"s1"},"dst":{"node":"vm1","arena":"d1","offset":"32M"},"length":4096}' http://x/v1/moves)"
expect remote-range-src 400 "$(api -X POST -d '{"src":{"arena":"s1","offset":"32M"},"dst":{"node":"vm1","arena":"d1"},"length":4096}' http://x/v1/moves)"
expect remote-bad-node 400 "$(api -X POST -d '{"src":{"arena":"s1"},"dst":{"node":"../x","arena":"d1"},"length":4096}' http://x/v1/moves)"
grep -q '"code":' $H/tmp/body
case_result remote-error-json $? "$(body)"
# nobody: r on s1 (0644), no w on vm1's d1 (root's 0600): vm1 refuses
expect remote-nobody-403 403 "$(api_nobody -X POST -d '{"src":{"arena":"s1"},"dst":{"node":"vm1","arena":"d1"},"length":4096}' http://x/v1/moves)" $H/tmp/body.nobody
grep -q 'vm1' $H/tmp/body.nobody
case_result remote-nobody-403-says-vm1 $? "$(cat $H/tmp/body.nobody)"
# ... but w on vm1's open (0666)
st=$(api_nobody -X POST -d '{"src":{"arena":"s1","offset":8192},"dst":{"node":"vm1","arena":"open"},"length":65536}' http://x/v1/moves)
expect remote-nobody-open 202 "$st" $H/tmp/body.nobody
id=$(sed -n 's/^{"id":\([0-9]*\).*/\1/p' $H/tmp/body.nobody)
poll_move "$id" 120
want=$(sha_local s1 8192 65536)
got=$(agent sha256 open 0 65536)
grep -q '"state":"done"' $H/tmp/body && [ "ok $want" = "$got" ]
case_result remote-nobody-open-data $? "$(body) $want $got"
# vm1's API: no token, a wrong one, grants without the token or a node
expect n1-no-token 401 "$(n1_raw http://$N1:7070/v1/nodes)" $H/tmp/body.n1
expect n1-wrong-token 401 "$(n1_raw -H 'Authorization: Bearer wrong-wrong-wrong-wrong' -X POST -d '{"arena":"d1","length":4096,"admin":true}' http://$N1:7070/v1/mesh/grants)" $H/tmp/body.n1
expect n1-grant-no-node 400 "$(n1 -X POST -d '{"arena":"d1","length":4096,"admin":true}' http://$N1:7070/v1/mesh/grants)" $H/tmp/body.n1
expect n1-grant-bad 400 "$(n1 -H 'X-Dmaplane-Node: vm0' -X POST -d '{"arena":"d1","length":-1}' http://$N1:7070/v1/mesh/grants)" $H/tmp/body.n1
expect n1-grant-bad-json 400 "$(n1 -H 'X-Dmaplane-Node: vm0' -X POST -d '{"arena":' http://$N1:7070/v1/mesh/grants)" $H/tmp/body.n1
expect n1-grant-other-uid 403 "$(n1 -H 'X-Dmaplane-Node: vm0' -X POST -d '{"arena":"d1","length":4096,"uid":1000,"gid":1000}' http://$N1:7070/v1/mesh/grants)" $H/tmp/body.n1
expect n1-grant-unknown 404 "$(n1 -H 'X-Dmaplane-Node: vm0' -X DELETE http://$N1:7070/v1/mesh/grants/999999)" $H/tmp/body.n1
expect n1-xxh-bad 400 "$(n1 "http://$N1:7070/v1/arenas/d1/xxh128?offset=0&length=0")" $H/tmp/body.n1
expect n1-xxh-range 400 "$(n1 "http://$N1:7070/v1/arenas/d1/xxh128?offset=1&length=33554432")" $H/tmp/body.n1
expect n1-peer-bad 400 "$(n1 -X POST -d '{"name":"x"}' http://$N1:7070/v1/peers)" $H/tmp/body.n1
expect n1-peer-self 409 "$(n1 -X POST -d '{"name":"vm1","address":"10.77.0.2"}' http://$N1:7070/v1/peers)" $H/tmp/body.n1
n1 http://$N1:7070/v1/arenas >/dev/null
after=$(cat $H/tmp/body.n1)
h1=$(agent sha256 d1 0 33554432)
[ "$before" = "$after" ] && [ "$h0" = "$h1" ]
case_result remote-malformed-changed-nothing $? "before $before after $after, $h0 $h1"

# wait_started ID: until move ID has moved some bytes (60 s at most)
wait_started() {
	for i in $(seq 120); do
		api http://x/v1/moves/$1 >/dev/null
		[ "$(field bytes_done)" -gt 0 ] 2>/dev/null && return 0
		sleep 0.5
	done
	return 1
}

# ---- cancel in the middle of a big move (128 MiB in 4 KiB chunks) ----------
st=$(api -X POST -d '{"src":{"arena":"sbig"},"dst":{"node":"vm1","arena":"big"},"length":"128M","chunk":4096}' http://x/v1/moves)
expect cancel-create 202 "$st"
id=$(move_id)
wait_started "$id"
expect n1-big-held 409 "$(n1 -X DELETE http://$N1:7070/v1/arenas/big)" $H/tmp/body.n1
expect cancel 202 "$(api -X DELETE http://x/v1/moves/$id)"
poll_move "$id" 120
grep -q '"state":"cancelled"' $H/tmp/body && ! grep -q '"bytes_done":134217728' $H/tmp/body
case_result cancelled-in-the-middle $? "$(body)"
sed 's/^/# cancel: /' $H/tmp/body
# the grant is released: vm1's big can go now
expect n1-big-delete 204 "$(n1 -X DELETE http://$N1:7070/v1/arenas/big)" $H/tmp/body.n1
expect n1-big-again 201 "$(n1 -X POST -d '{"name":"big","size":"128M","mode":"0600"}' http://$N1:7070/v1/arenas)" $H/tmp/body.n1
sleep 4	# vm0 learns the new arena's key with the next heartbeat

# ---- node 1's daemon killed in the middle of a move -------------------------
st=$(api -X POST -d '{"src":{"arena":"sbig"},"dst":{"node":"vm1","arena":"big"},"length":"128M","chunk":4096}' http://x/v1/moves)
expect kill-move-create 202 "$st"
id=$(move_id)
wait_started "$id"
st=$(agent kill)
case_result kill-peer-daemon $([ "$st" = ok ]; echo $?) "$st"
poll_move "$id" 120
sed 's/^/# killed: /' $H/tmp/body
grep -q '"state":"failed"' $H/tmp/body &&
	grep -q '"error":"[^"]*\(completion error\|timeout\|does not answer\|checksum from node vm1\)' $H/tmp/body
case_result kill-move-failed $? "$(body)"
wait_state vm1 down 30
case_result kill-peer-down $? "$(body)"
grep -A1 '^event: peer.down$' $H/tmp/sse | grep -q '"node":"vm1"'
case_result kill-peer-down-event $?
st=$(api -X POST -d '{"src":{"arena":"s1"},"dst":{"node":"vm1","arena":"cfg"},"length":4096}' http://x/v1/moves)
expect move-to-down-503 503 "$st"
grep -q '"error":"node vm1 is down' $H/tmp/body
case_result move-to-down-says-so $? "$(body)"
expect pull-from-down-503 503 "$(api -X POST -d '{"src":{"node":"vm1","arena":"cfg"},"dst":{"arena":"p1"},"length":4096}' http://x/v1/moves)"
st=$(agent start)
case_result restart-peer-daemon $([ "$st" = ok ]; echo $?) "$st"
wait_state vm1 up 60
case_result restart-peer-up $? "$(body)"
grep -A1 '^event: peer.up$' $H/tmp/sse | grep -q '"node":"vm1"'
case_result restart-peer-up-event $?
# the restarted daemon has its configured arena: moves work again
st=$(api -X POST -d '{"src":{"arena":"s1","offset":4096},"dst":{"node":"vm1","arena":"cfg","offset":1},"length":2097151,"chunk":65536}' http://x/v1/moves)
expect after-restart-create 202 "$st"
poll_move "$(move_id)" 120
want=$(sha_local s1 4096 2097151)
got=$(agent sha256 cfg 1 2097151)
grep -q '"state":"done"' $H/tmp/body && [ "ok $want" = "$got" ]
case_result after-restart-move $? "$(body) $want $got"
st=$(api -X POST -d '{"src":{"node":"vm1","arena":"cfg","offset":1},"dst":{"arena":"p1","offset":3},"length":2097151}' http://x/v1/moves)
expect after-restart-pull-create 202 "$st"
poll_move "$(move_id)" 120
got=$(sha_local p1 3 2097151)
grep -q '"state":"done"' $H/tmp/body && [ "ok $got" = "$(agent sha256 cfg 1 2097151)" ]
case_result after-restart-pull $? "$(body) $got"

# ---- the end ------------------------------------------------------------------
st=$(agent stop)
[ "$st" = "ok 0" ]
case_result peer-daemon-sigterm $? "vm1's daemon: $st (23: LeakSanitizer)"
agent bye >/dev/null
wait_state vm1 down 30
case_result peer-down-after-stop $?
expect delete-s1 204 "$(api -X DELETE http://x/v1/arenas/s1)"
kill -TERM $DPID
wait $DPID
rc=$?
case_result sigterm-exit $rc "exit status $rc (23: LeakSanitizer)"
kill $SSE 2>/dev/null
wait $SSE 2>/dev/null
sed 's/^/# sse: /' $H/tmp/sse | grep -v keepalive | head -200
[ ! -e $H$API ] && [ ! -e $H$ATT ]
case_result sockets-removed $?
finish

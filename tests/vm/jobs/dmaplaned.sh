#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# dmaplaned, the arena service, in one VM: load dmaplane, mount the host's
# root (run-vm.sh -R) and run, in a chroot into it, the daemon built with
# AddressSanitizer and UBSan from the host's build tree, Debian's curl
# against its REST API (UNIX socket, and TCP with a bearer token), and
# dmaplanectl against its attach socket.  Every check is one
# DMAPLANE-CASE line.  The daemon must shut down cleanly on SIGTERM, with
# no sanitizer report, and leave the module's counters at zero.
#
# Kernel command line: dmaplane.daemon_build=<host path of build/>,
# dmaplane.daemon_src=<host path of the work tree> (tests/run-daemon.sh
# sets both); dmaplane.daemon_fuzz=N fuzzed requests (default 500).
. /dmaplane/jobs/lib.sh
. /dmaplane/bench/hostroot.sh

B=$(cmdline dmaplane.daemon_build "")
SRC=$(cmdline dmaplane.daemon_src "")
FUZZ=$(cmdline dmaplane.daemon_fuzz 500)
RUN=/run/dmaplaned
API=$RUN/api.sock
ATT=$RUN/attach.sock
TOKEN=0123456789abcdef-dmaplaned-test-token
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups"

kmemleak_reset
check insmod load_dmaplane
if ! hostroot_mount; then
	echo "DMAPLANE-CASE hostroot FAIL no host root over 9p (run-vm.sh -R)"
	exit 1
fi
case_result hostroot 0
chmod 0666 /dev/dmaplane

stat_of() {	# the module's counter NAME
	awk -v n="$1" '$1 == n { print $2 }' /sys/kernel/debug/dmaplane/stats
}

# api [curl args...]: a request on the UNIX socket as root; prints the
# status, the body is in $H/tmp/body.
api() {
	in_host curl -s -o /tmp/body -w '%{http_code}' --max-time 30 \
		--unix-socket $API "$@"
}
# api_nobody: the same as uid/gid 65534 (body in $H/tmp/body.nobody)
api_nobody() {
	in_host $NOBODY curl -s -o /tmp/body.nobody -w '%{http_code}' \
		--max-time 30 --unix-socket $API "$@"
}
tcp() {	# a request over TCP (body in $H/tmp/body.tcp)
	in_host curl -s -o /tmp/body.tcp -w '%{http_code}' --max-time 30 "$@"
}
ctl() {	# dmaplanectl as root
	in_host $B/dmaplanectl -a $ATT "$@"
}
body() { cat $H/tmp/body; }

# expect NAME WANT GOT [FILE]: a case on an HTTP status
expect() {
	[ "$3" = "$2" ]
	case_result "$1" $? "status $3, want $2: $(head -c 300 "${4:-$H/tmp/body}" 2>/dev/null)"
}

# The daemon's configuration: one arena made at start, a peer, TCP on
# loopback with a token, a 64 MiB cap.
mkdir -p $H/tmp/etc
printf '%s\n' "$TOKEN" >$H/tmp/etc/token
chmod 0600 $H/tmp/etc/token
cat >$H/tmp/etc/dmaplaned.conf <<CONF
{
  "node_name": "vm0",
  "tcp_address": "127.0.0.1",
  "tcp_port": 7070,
  "token_file": "/tmp/etc/token",
  "max_total_bytes": "64M",
  "max_arenas": 16,
  "max_moves_per_uid": 4,
  "create_group": 1234,
  "max_arenas_per_uid": 2,
  "max_bytes_per_uid": "4M",
  "arenas": [ { "name": "boot", "size": "2M", "owner": 0, "group": 0, "mode": "0640" } ],
  "peers": [ { "name": "vm1", "address": "10.77.0.2" } ]
}
CONF

in_host env LD_LIBRARY_PATH=$B $B/dmaplaned --check-config -c /tmp/etc/dmaplaned.conf
case_result check-config $?
printf '{ "arenas": [ { "name": "x", "size": 100 } ] }' >$H/tmp/etc/bad.conf
in_host env LD_LIBRARY_PATH=$B $B/dmaplaned --check-config -c /tmp/etc/bad.conf >/dev/null 2>&1
[ $? = 1 ]
case_result check-config-bad $?

# Start the daemon (ASan + UBSan build); chroot and env exec, so $! is
# the daemon's pid.
chroot $H /usr/bin/env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/tmp TMPDIR=/tmp \
	ASAN_OPTIONS=detect_leaks=1:exitcode=23:log_path=/tmp/asan \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=/tmp/ubsan \
	LD_LIBRARY_PATH=$B $B/dmaplaned-asan -c /tmp/etc/dmaplaned.conf \
	2>$H/tmp/daemon.log &
DPID=$!
ok=1
for i in $(seq 120); do
	[ -S $H$API ] && [ -S $H$ATT ] && { ok=0; break; }
	kill -0 $DPID 2>/dev/null || break
	sleep 0.5
done
case_result daemon-start $ok "$(tail -5 $H/tmp/daemon.log)"
if [ $ok != 0 ]; then
	cat $H/tmp/daemon.log
	job_end
fi
base_arenas=$(stat_of arenas)
[ "$base_arenas" = 1 ]
case_result config-arena $? "module arenas=$base_arenas, want 1 (boot)"

# Event streams, as root and as nobody, from before the arenas are made;
# they end with the daemon (SIGTERM below): the cap only stops a
# stream that outlives the job (the job took 35 minutes under TCG on a
# loaded host, and a 1200 s cap cut the stream before the last events).
in_host curl -sN --max-time 3600 --unix-socket $API http://x/v1/events >$H/tmp/sse.root 2>&1 &
SSE1=$!
in_host $NOBODY curl -sN --max-time 3600 --unix-socket $API http://x/v1/events >$H/tmp/sse.nobody 2>&1 &
SSE2=$!
ok=1
for i in $(seq 60); do
	grep -q 'dmaplaned events' $H/tmp/sse.root 2>/dev/null &&
		grep -q 'dmaplaned events' $H/tmp/sse.nobody 2>/dev/null && { ok=0; break; }
	sleep 0.5
done
case_result sse-subscribe $ok

# ---- node, create, list, get, stats -------------------------------------
st=$(api http://x/v1/node)
[ "$st" = 200 ] && grep -q '"name":"vm0"' $H/tmp/body && grep -q '"device":true' $H/tmp/body &&
	grep -q '"dmabuf_export"' $H/tmp/body
case_result node $? "status $st: $(body)"

st=$(api -X POST -H 'Content-Type: application/json' \
	-d '{"name":"a1","size":"4M","mode":"0600"}' http://x/v1/arenas)
expect create 201 "$st"
grep -q '"name":"a1","size":4194304' $H/tmp/body
case_result create-body $? "$(body)"
[ "$(stat_of arenas)" = 2 ]
case_result create-module $? "module arenas=$(stat_of arenas), want 2"

st=$(api -X POST -d '{"name":"a1","size":"4M"}' http://x/v1/arenas)
expect create-duplicate 409 "$st"
grep -q '"code":409' $H/tmp/body
case_result error-body-json $? "$(body)"

st=$(api -X POST -d '{"name":"shared","size":"1M","mode":"0666"}' http://x/v1/arenas)
expect create-shared 201 "$st"

st=$(api http://x/v1/arenas)
[ "$st" = 200 ] && grep -q '"name":"a1"' $H/tmp/body && grep -q '"name":"boot"' $H/tmp/body &&
	grep -q '"name":"shared"' $H/tmp/body
case_result list $? "status $st: $(body)"

st=$(api http://x/v1/arenas/a1)
[ "$st" = 200 ] && grep -q '"size":4194304' $H/tmp/body && grep -q '"mode":"0600"' $H/tmp/body
case_result get $? "status $st: $(body)"

st=$(api http://x/v1/arenas/a1/stats)
sum=$(in_host python3 -c 'import json; o = json.load(open("/tmp/body")); print(o["bytes_huge"] + o["bytes_mid"] + o["bytes_base"], o["size"])' 2>&1)
[ "$st" = 200 ] && [ "$sum" = "4194304 4194304" ]
case_result stats $? "status $st: $(body) ($sum)"

# ---- attach: dma-buf over SCM_RIGHTS, mmap, byte-exact pattern ----------
dmabufs0=$(stat_of dmabufs)
seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
check attach-size sh -c "[ \"\$(chroot $H $B/dmaplanectl -a $ATT attach a1)\" = 4194304 ]"
check attach-two-maps ctl twomaps a1 "$seed"
check attach-fill ctl fill a1 $((seed + 1))
check attach-verify ctl verify a1 $((seed + 1))
ctl verify a1 $((seed + 2)) 2>/dev/null
[ $? = 1 ]
case_result attach-verify-detects $? "a wrong pattern was not noticed"
# The daemon's own mapping sees what the attachments wrote: the
# module's dmabufs are gone once the programs closed them.
[ "$(stat_of dmabufs)" = "$dmabufs0" ]
case_result attach-dmabufs-released $? "dmabufs $(stat_of dmabufs), before $dmabufs0"
st=$(api http://x/v1/arenas/a1/stats)
grep -q '"attaches":6' $H/tmp/body
case_result attach-counted $? "$(body)"

# ---- another uid ----------------------------------------------------------
in_host $NOBODY $B/dmaplanectl -a $ATT attach a1 >/dev/null 2>&1
[ $? = 3 ]
case_result attach-other-uid-refused $?
in_host $NOBODY $B/dmaplanectl -a $ATT attach boot >/dev/null 2>&1
[ $? = 3 ]
case_result attach-other-uid-refused-0640 $?
in_host $NOBODY $B/dmaplanectl -a $ATT verify shared 7 >/dev/null 2>&1
[ $? = 1 ]	# attached and mapped; the pattern was never written
case_result attach-other-uid-shared-maps $?
ctl fill shared 77 && in_host $NOBODY $B/dmaplanectl -a $ATT verify shared 77
case_result attach-other-uid-shared-data $?
expect get-other-uid-403 403 "$(api_nobody http://x/v1/arenas/a1)" $H/tmp/body.nobody
expect stats-other-uid-403 403 "$(api_nobody http://x/v1/arenas/a1/stats)" $H/tmp/body.nobody
st=$(api_nobody http://x/v1/arenas)
[ "$st" = 200 ] && ! grep -q '"a1"' $H/tmp/body.nobody && grep -q '"shared"' $H/tmp/body.nobody
case_result list-other-uid-filtered $? "status $st: $(cat $H/tmp/body.nobody)"
expect delete-other-uid-403 403 "$(api_nobody -X DELETE http://x/v1/arenas/shared)" $H/tmp/body.nobody
expect create-other-uid-403 403 "$(api_nobody -X POST -d '{"name":"n1","size":4096}' http://x/v1/arenas)" $H/tmp/body.nobody
[ "$(stat_of arenas)" = 3 ] && [ "$(api http://x/v1/arenas/shared)" = 200 ]
case_result other-uid-changed-nothing $? "module arenas=$(stat_of arenas)"

# ---- per-uid arena limits: uid 1234 (create_group 1234) may own 2 arenas
# of 4 MiB in all; root has no such limit ------------------------------------
api_1234() {	# a request as uid/gid 1234; body in $H/tmp/body.1234
	in_host setpriv --reuid=1234 --regid=1234 --clear-groups curl -s -o /tmp/body.1234 \
		-w '%{http_code}' --max-time 60 --unix-socket $API "$@"
}
: >$H/tmp/body.1234
chmod 0666 $H/tmp/body.1234
n0=$(stat_of arenas)
expect uid-limit-u1 201 "$(api_1234 -X POST -d '{"name":"u1","size":"1M"}' http://x/v1/arenas)" $H/tmp/body.1234
expect uid-limit-u2 201 "$(api_1234 -X POST -d '{"name":"u2","size":"1M"}' http://x/v1/arenas)" $H/tmp/body.1234
expect uid-limit-count-429 429 "$(api_1234 -X POST -d '{"name":"u3","size":"1M"}' http://x/v1/arenas)" $H/tmp/body.1234
grep -q 'max_arenas_per_uid' $H/tmp/body.1234
case_result uid-limit-says-why $? "$(cat $H/tmp/body.1234)"
expect uid-limit-delete-u2 204 "$(api_1234 -X DELETE http://x/v1/arenas/u2)" $H/tmp/body.1234
expect uid-limit-bytes-429 429 "$(api_1234 -X POST -d '{"name":"u3","size":"3588K"}' http://x/v1/arenas)" $H/tmp/body.1234
expect uid-limit-bytes-fit 201 "$(api_1234 -X POST -d '{"name":"u3","size":"3M"}' http://x/v1/arenas)" $H/tmp/body.1234
expect uid-limit-root-exempt 201 "$(api -X POST -d '{"name":"r1","size":"1M","owner":1234,"group":1234}' http://x/v1/arenas)"
[ "$(stat_of arenas)" = $((n0 + 3)) ]
case_result uid-limit-module-arenas $? "module arenas=$(stat_of arenas), before $n0"
for a in u1 u3; do
	expect uid-limit-delete-$a 204 "$(api_1234 -X DELETE http://x/v1/arenas/$a)" $H/tmp/body.1234
done
expect uid-limit-delete-r1 204 "$(api -X DELETE http://x/v1/arenas/r1)"
[ "$(stat_of arenas)" = $n0 ]
case_result uid-limit-arenas-back $? "module arenas=$(stat_of arenas), before $n0"

# ---- malformed requests: the right 4xx, nothing changed -----------------
before=$(api http://x/v1/arenas; cat $H/tmp/body)
n0=$(stat_of arenas)
expect bad-json 400 "$(api -X POST -d '{"name":' http://x/v1/arenas)"
expect bad-json-type 400 "$(api -X POST -d '[1,2]' http://x/v1/arenas)"
expect bad-empty-body 400 "$(api -X POST http://x/v1/arenas)"
expect bad-no-size 400 "$(api -X POST -d '{"name":"b1"}' http://x/v1/arenas)"
expect bad-size-unaligned 400 "$(api -X POST -d '{"name":"b1","size":1000}' http://x/v1/arenas)"
expect bad-size-negative 400 "$(api -X POST -d '{"name":"b1","size":-4096}' http://x/v1/arenas)"
expect bad-size-string 400 "$(api -X POST -d '{"name":"b1","size":"12Q"}' http://x/v1/arenas)"
expect bad-name 400 "$(api -X POST -d '{"name":"../etc","size":4096}' http://x/v1/arenas)"
expect bad-name-long 400 "$(api -X POST -d "{\"name\":\"$(printf 'a%.0s' $(seq 80))\",\"size\":4096}" http://x/v1/arenas)"
expect bad-mode 400 "$(api -X POST -d '{"name":"b1","size":4096,"mode":"0999"}' http://x/v1/arenas)"
expect bad-unknown-key 400 "$(api -X POST -d '{"name":"b1","size":4096,"colour":"red"}' http://x/v1/arenas)"
expect bad-duplicate-key 400 "$(api -X POST -d '{"name":"b1","name":"b2","size":4096}' http://x/v1/arenas)"
expect bad-nul-in-name 400 "$(api -X POST -d '{"name":"b\u00001","size":4096}' http://x/v1/arenas)"
expect too-big-arena 507 "$(api -X POST -d '{"name":"b1","size":"1G"}' http://x/v1/arenas)"
head -c 200000 /dev/zero | tr '\0' ' ' >$H/tmp/big
expect body-too-large 413 "$(api -X POST --data-binary @/tmp/big http://x/v1/arenas)"
expect body-too-large-chunked 413 "$(api -X POST -H 'Transfer-Encoding: chunked' --data-binary @/tmp/big http://x/v1/arenas)"
expect unknown-path 404 "$(api http://x/v1/nothing)"
expect unknown-path-root 404 "$(api http://x/)"
expect unknown-arena 404 "$(api http://x/v1/arenas/nosuch)"
expect unknown-arena-stats 404 "$(api http://x/v1/arenas/nosuch/stats)"
expect unknown-arena-delete 404 "$(api -X DELETE http://x/v1/arenas/nosuch)"
expect unknown-subpath 404 "$(api http://x/v1/arenas/a1/nothing)"
expect bad-name-path 404 "$(api 'http://x/v1/arenas/a%2f1')"
expect wrong-method 405 "$(api -X PUT http://x/v1/arenas)"
expect wrong-method-arena 405 "$(api -X POST http://x/v1/arenas/a1)"
expect wrong-method-node 405 "$(api -X DELETE http://x/v1/node)"
expect wrong-method-events 405 "$(api -X POST http://x/v1/events)"
ctl attach nosuch >/dev/null 2>&1
[ $? = 4 ]
case_result attach-unknown-arena $?
in_host python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('$ATT'); s.sendall(b'HELLO\n'); print(s.recv(200).decode())" >$H/tmp/attach.out 2>&1
grep -q '^ERR 400' $H/tmp/attach.out
case_result attach-malformed $? "$(cat $H/tmp/attach.out)"
after=$(api http://x/v1/arenas; cat $H/tmp/body)
[ "$before" = "$after" ] && [ "$(stat_of arenas)" = "$n0" ]
case_result malformed-changed-nothing $? "before $before after $after"

# ---- TCP: bearer token --------------------------------------------------
wait_listen 7070
expect tcp-no-token 401 "$(tcp http://127.0.0.1:7070/v1/node)" $H/tmp/body.tcp
expect tcp-wrong-token 401 "$(tcp -H 'Authorization: Bearer wrong-token-wrong-token' http://127.0.0.1:7070/v1/node)" $H/tmp/body.tcp
expect tcp-basic-auth 401 "$(tcp -u user:$TOKEN http://127.0.0.1:7070/v1/node)" $H/tmp/body.tcp
expect tcp-no-token-post 401 "$(tcp -X POST -d '{"name":"t1","size":4096}' http://127.0.0.1:7070/v1/arenas)" $H/tmp/body.tcp
expect tcp-token 200 "$(tcp -H "Authorization: Bearer $TOKEN" http://127.0.0.1:7070/v1/node)" $H/tmp/body.tcp
expect tcp-create 201 "$(tcp -H "Authorization: Bearer $TOKEN" -X POST -d '{"name":"t1","size":"64K"}' http://127.0.0.1:7070/v1/arenas)" $H/tmp/body.tcp
expect tcp-delete 204 "$(tcp -H "Authorization: Bearer $TOKEN" -X DELETE http://127.0.0.1:7070/v1/arenas/t1)" $H/tmp/body.tcp
[ "$(stat_of arenas)" = "$n0" ]
case_result tcp-changed-back $?

# ---- peers --------------------------------------------------------------
st=$(api http://x/v1/peers)
[ "$st" = 200 ] && grep -q '"name":"vm1","address":"10.77.0.2"' $H/tmp/body
case_result peers $? "status $st: $(body)"

# ---- fuzz pass over the API ---------------------------------------------
in_host python3 "$SRC/tests/dmaplaned_fuzz.py" $API "$FUZZ" "$seed" >$H/tmp/fuzz.out 2>&1
case_result fuzz $? "$(tail -5 $H/tmp/fuzz.out | tr '\n' ' ')"
sed 's/^/# fuzz: /' $H/tmp/fuzz.out
kill -0 $DPID
case_result fuzz-daemon-alive $?
[ "$(stat_of arenas)" = "$n0" ]
case_result fuzz-changed-back $? "module arenas=$(stat_of arenas), want $n0"

# ---- moves on this node (put through the daemon's own endpoint) ---------
# poll_move ID: until the move has ended (60 s at most); its JSON in body
poll_move() {
	for i in $(seq 120); do
		api http://x/v1/moves/$1 >/dev/null
		grep -q '"state":"\(done\|failed\|cancelled\)"' $H/tmp/body && return 0
		sleep 0.5
	done
	return 1
}
move_id() { sed -n 's/.*"id":\([0-9]*\).*/\1/p' $H/tmp/body; }
expect move-dst-create 201 "$(api -X POST -d '{"name":"m1","size":"8M","mode":"0600"}' http://x/v1/arenas)"
ctl fill a1 $((seed + 3))
st=$(api -X POST -d '{"src":{"arena":"a1","offset":0},"dst":{"arena":"m1","offset":"1M"},"length":"4M","chunk":"256K"}' http://x/v1/moves)
expect move-create 202 "$st"
id=$(move_id)
poll_move "$id"
grep -q '"state":"done"' $H/tmp/body && grep -q '"bytes_done":4194304' $H/tmp/body &&
	grep -q '"checksum":"' $H/tmp/body
case_result move-done $? "$(body)"
sed 's/^/# move: /' $H/tmp/body
# The destination holds the source's pattern at 1 MiB: compare with a
# fresh attachment of each (python in the host's root).
in_host python3 -c '
import array, mmap, socket, sys
def attach(name):
    s = socket.socket(socket.AF_UNIX)
    s.connect("'$ATT'")
    s.sendall(b"ATTACH " + name.encode() + b"\n")
    msg, anc, flags, addr = s.recvmsg(100, socket.CMSG_SPACE(4))
    fd = array.array("i", anc[0][2][:4])[0]
    size = int(msg.split()[1])
    return mmap.mmap(fd, size)
a, m = attach("a1"), attach("m1")
ok = m[1 << 20:5 << 20] == a[0:4 << 20] and m[0:1 << 20] == bytes(1 << 20) and m[5 << 20:] == bytes(3 << 20)
sys.exit(0 if ok else 1)
'
case_result move-data $? "destination differs from the source or was written outside the range"
expect move-list 200 "$(api http://x/v1/moves)"
expect move-other-uid-403 403 "$(api_nobody http://x/v1/moves/$id)" $H/tmp/body.nobody
expect move-other-uid-src-403 403 "$(api_nobody -X POST -d '{"src":{"arena":"a1"},"dst":{"arena":"shared"},"length":4096}' http://x/v1/moves)" $H/tmp/body.nobody
expect move-range 400 "$(api -X POST -d '{"src":{"arena":"a1","offset":"1M"},"dst":{"arena":"m1"},"length":"4M"}' http://x/v1/moves)"
expect move-overflow 400 "$(api -X POST -d '{"src":{"arena":"a1","offset":18446744073709547520},"dst":{"arena":"m1"},"length":8192}' http://x/v1/moves)"
expect move-overlap 400 "$(api -X POST -d '{"src":{"arena":"m1","offset":0},"dst":{"arena":"m1","offset":4096},"length":8192}' http://x/v1/moves)"
expect move-bad-json 400 "$(api -X POST -d '{"src":' http://x/v1/moves)"
expect move-no-length 400 "$(api -X POST -d '{"src":{"arena":"a1"},"dst":{"arena":"m1"}}' http://x/v1/moves)"
expect move-bad-chunk 400 "$(api -X POST -d '{"src":{"arena":"a1"},"dst":{"arena":"m1"},"length":8192,"chunk":1}' http://x/v1/moves)"
expect move-unknown-arena 404 "$(api -X POST -d '{"src":{"arena":"nosuch"},"dst":{"arena":"m1"},"length":8192}' http://x/v1/moves)"

# /tmp/dpreq.py: req(METHOD, PATH, BODY) -> (status, payload), one HTTP
# request to the daemon's UNIX socket, for the python clients below that
# must not lose seconds to process starts between their requests.
cat >$H/tmp/dpreq.py <<PY
import socket
def req(method, path, body=b""):
    s = socket.socket(socket.AF_UNIX)
    s.connect("$API")
    s.sendall(b"%s %s HTTP/1.1\\r\\nHost: x\\r\\nConnection: close\\r\\nContent-Length: %d\\r\\n\\r\\n"
              % (method, path, len(body)) + body)
    data = b""
    while True:
        c = s.recv(65536)
        if not c:
            break
        data += c
    head, _, payload = data.partition(b"\\r\\n\\r\\n")
    return int(head.split()[1]), payload
PY
chmod 0644 $H/tmp/dpreq.py

# max_moves_per_uid (4 here): uid 65534 asks for 12 moves in one python
# process, each 512 KiB of a 0666 arena in 4 KiB puts (the mover runs
# them one after another, far slower than the requests come): 4 are
# queued or running at most, the rest are 429 with a JSON error; once
# they ended, that uid's next move is queued again.  The arena goes at
# the end (so does what the moves added to the dedup index).
expect move-limit-arena 201 "$(api -X POST -d '{"name":"lim","size":"1M","mode":"0666"}' http://x/v1/arenas)"
in_host $NOBODY python3 -c '
import json, sys
sys.path.insert(0, "/tmp")
from dpreq import req
move = json.dumps({"src": {"arena": "lim"}, "dst": {"arena": "lim", "offset": "512K"},
                   "length": "512K", "chunk": 4096}).encode()
ok, refused, ids, why = 0, 0, [], b""
for i in range(12):
    st, body = req(b"POST", b"/v1/moves", move)
    if st == 202:
        ok += 1
        ids.append(json.loads(body)["id"])
    elif st == 429:
        refused += 1
        why = body
print(ok, refused, " ".join(map(str, ids)))
print(why.decode(errors="replace"))
' >$H/tmp/limit.out 2>&1
read lim_ok lim_refused lim_ids <$H/tmp/limit.out
[ "${lim_ok:-0}" -ge 4 ] && [ "${lim_refused:-0}" -ge 1 ] &&
	[ $((lim_ok + lim_refused)) = 12 ] &&
	grep -q '"code":429' $H/tmp/limit.out && grep -q 'max_moves_per_uid' $H/tmp/limit.out
case_result move-limit-per-uid $? "$(tr '\n' '|' <$H/tmp/limit.out | head -c 400)"
lim_done=0
for i in $lim_ids; do
	poll_move "$i" && grep -q '"state":"done"' $H/tmp/body && lim_done=$((lim_done + 1))
done
[ "$lim_done" = "${lim_ok:-x}" ]
case_result move-limit-accepted-done $? "$lim_done of ${lim_ok:-?} done"
expect move-limit-after 202 "$(api_nobody -X POST -d '{"src":{"arena":"lim"},"dst":{"arena":"lim","offset":"512K"},"length":"512K"}' http://x/v1/moves)" $H/tmp/body.nobody
poll_move "$(sed -n 's/.*"id":\([0-9]*\).*/\1/p' $H/tmp/body.nobody)"
expect move-limit-arena-delete 204 "$(api -X DELETE http://x/v1/arenas/lim)"
expect move-remote-down 503 "$(api -X POST -d '{"src":{"arena":"a1"},"dst":{"node":"vm1","arena":"m1"},"length":8192}' http://x/v1/moves)"
expect move-unknown-id 404 "$(api http://x/v1/moves/999999)"

# move_cancel SRC DST DEDUP: one python process makes a 16 MiB move of
# SRC into DST in 4 KiB chunks (DEDUP: true or false), tries to destroy
# DST and cancels the move, so that no process start (seconds under TCG)
# lies between them; it writes the three statuses and the move's id to
# $H/tmp/cancel.out.
move_cancel() {
	in_host python3 -c '
import json, sys
sys.path.insert(0, "/tmp")
from dpreq import req
src, dst, dedup = sys.argv[1], sys.argv[2], sys.argv[3] == "true"
move = {"src": {"arena": src}, "dst": {"arena": dst}, "length": "16M", "chunk": 4096}
if dedup:
    move["dedup"] = True
st, body = req(b"POST", b"/v1/moves", json.dumps(move).encode())
mid = json.loads(body)["id"] if st == 202 else 0
st2, _ = req(b"DELETE", b"/v1/arenas/" + dst.encode())
st3, _ = req(b"DELETE", b"/v1/moves/%d" % mid)
print(st, st2, st3, mid)
' "$1" "$2" "$3" >$H/tmp/cancel.out 2>&1
}

# A long move (16 MiB in 4 KiB chunks: 4,096 puts, several seconds
# under TCG) holds its arenas (destroying one is 409) and is cancelled in
# the middle.
expect move-big-create 201 "$(api -X POST -d '{"name":"big","size":"16M","mode":"0600"}' http://x/v1/arenas)"
expect move-m2-create 201 "$(api -X POST -d '{"name":"m2","size":"16M","mode":"0600"}' http://x/v1/arenas)"
move_cancel big m2 false
read st st2 st3 id2 <$H/tmp/cancel.out
expect move-long-create 202 "$st" $H/tmp/cancel.out
expect move-holds-arena 409 "$st2" $H/tmp/cancel.out
expect move-cancel 202 "$st3" $H/tmp/cancel.out
poll_move "$id2"
grep -q '"state":"cancelled"' $H/tmp/body && ! grep -q '"bytes_done":16777216' $H/tmp/body
case_result move-cancelled $? "$(body)"
sed 's/^/# move: /' $H/tmp/body
expect move-cancel-ended 409 "$(api -X DELETE http://x/v1/moves/$id)"
expect move-big-delete 204 "$(api -X DELETE http://x/v1/arenas/big)"
expect move-m2-delete 204 "$(api -X DELETE http://x/v1/arenas/m2)"
expect move-dst-delete 204 "$(api -X DELETE http://x/v1/arenas/m1)"
sleep 1
# uid 65534 sees the events of its own moves (max_moves_per_uid above),
# none of root's.
grep -q '^event: move.done$' $H/tmp/sse.root && grep -q '^event: move.cancelled$' $H/tmp/sse.root &&
	grep -q '^event: move.done$' $H/tmp/sse.nobody &&
	! grep -A1 '^event: move\.' $H/tmp/sse.nobody | grep -q '"arena":"\(a1\|m1\|big\|m2\)"'
case_result move-events $?

# ---- deduplicated moves on this node -------------------------------------
# $H/tmp/dd.py: the arenas' bytes through fresh attachments, and checks
# of a move's JSON, several steps in one process (process starts cost
# seconds under TCG).  Steps are separated by "+":
#   fill NAME SEED OFF LEN           random bytes from SEED
#   mutate NAME SEED BLOCK COUNT     COUNT distinct BLOCK-sized blocks get new random bytes
#   copy SRC SOFF DST DOFF LEN       bytes of one arena into another
#   cmp A AOFF B BOFF LEN            fails unless equal
#   json EXPR                        fails unless EXPR holds for o, /tmp/body's
#                                    JSON (d: its dedup_stats)
cat >$H/tmp/dd.py <<'PY'
import array, json, mmap, random, socket, sys
maps = {}
def attach(name):
    if name not in maps:
        s = socket.socket(socket.AF_UNIX)
        s.connect(sys.argv[1])
        s.sendall(b"ATTACH " + name.encode() + b"\n")
        msg, anc, flags, addr = s.recvmsg(100, socket.CMSG_SPACE(4))
        fd = array.array("i", anc[0][2][:4])[0]
        maps[name] = mmap.mmap(fd, int(msg.split()[1]))
    return maps[name]
steps, cur = [], []
for w in sys.argv[2:] + ["+"]:
    if w == "+":
        steps.append(cur)
        cur = []
    else:
        cur.append(w)
for st in steps:
    cmd, a = st[0], st[1:]
    if cmd == "fill":
        off, n = int(a[2]), int(a[3])
        attach(a[0])[off:off + n] = random.Random(int(a[1])).randbytes(n)
    elif cmd == "mutate":
        m, r, blk = attach(a[0]), random.Random(int(a[1])), int(a[2])
        for b in r.sample(range(len(m) // blk), int(a[3])):
            m[b * blk:(b + 1) * blk] = r.randbytes(blk)
    elif cmd == "copy":
        n, so, do = int(a[4]), int(a[1]), int(a[3])
        attach(a[2])[do:do + n] = attach(a[0])[so:so + n]
    elif cmd == "cmp":
        n, ao, bo = int(a[4]), int(a[1]), int(a[3])
        if attach(a[0])[ao:ao + n] != attach(a[2])[bo:bo + n]:
            sys.exit("%s at %d differs from %s at %d" % (a[0], ao, a[2], bo))
    elif cmd == "json":
        o = json.load(open("/tmp/body"))
        d = o.get("dedup_stats", {})
        if not eval(a[0]):
            sys.exit("false: %s" % a[0])
PY
ddp() { in_host python3 /tmp/dd.py $ATT "$@"; }
# dmove NAME BODY: POST the move, wait for its end; its JSON in body
dmove() {
	st=$(api -X POST -d "$2" http://x/v1/moves)
	[ "$st" = 202 ] || { case_result "$1" 1 "status $st: $(body)"; return 1; }
	poll_move "$(move_id)" || { case_result "$1" 1 "did not end: $(body)"; return 1; }
	sed "s/^/# $1: /" $H/tmp/body
	grep -q '"state":"done"' $H/tmp/body
	case_result "$1" $? "$(body)"
}
M4=4194304
for a in da db dc dd de; do
	expect dedup-create-$a 201 "$(api -X POST -d "{\"name\":\"$a\",\"size\":\"4M\",\"mode\":\"0600\"}" http://x/v1/arenas)"
done
# R in da, moved plainly to db: wire == logical, and db is indexed.
ddp fill da $((seed + 10)) 0 $M4
case_result dedup-fill $?
dmove dedup-plain-move '{"src":{"arena":"da"},"dst":{"arena":"db"},"length":"4M"}'
ddp json 'o["dedup"] is False and o["logical_bytes"] == o["wire_bytes"] == o["bytes_done"] == 4194304 and o["meta_bytes"] == 0 and o["wire_bytes_per_second"] > 0 and o["wire_bytes_per_second"] == o["effective_bytes_per_second"] and "dedup_stats" not in o'
case_result dedup-plain-figures $? "$(body)"
api http://x/v1/node >/dev/null
ddp json 'o["dedup"]["index_entries"] >= 4194304 // 65536 and o["dedup"]["index_entries"] <= 4194304 // 2048'
case_result dedup-indexed-after-move $? "$(body)"
# 10% of da's 64 KiB blocks change (6 of 64: 393216 bytes); a dedup
# move of da into the empty dc sends about the changed chunks and copies
# the rest from db at the destination.
ddp mutate da $((seed + 11)) 65536 6
dmove dedup-overlap-move '{"src":{"arena":"da"},"dst":{"arena":"dc"},"length":"4M","dedup":true}'
ddp json 'o["dedup"] is True and o["logical_bytes"] == o["bytes_done"] == 4194304' + \
	json '393216 <= o["wire_bytes"] <= 4194304 // 4 and o["wire_bytes"] + d["local_bytes"] == 4194304 and d["in_place_bytes"] == 0 and d["hit_chunks"] > 0 and d["verify_failed"] == 0' + \
	json 'o["effective_bytes_per_second"] > o["wire_bytes_per_second"] > 0' + \
	cmp da 0 dc 0 $M4
case_result dedup-overlap-savings $? "$(body)"
# The same move again: dc holds it all at its own place (no copy).
dmove dedup-inplace-move '{"src":{"arena":"da"},"dst":{"arena":"dc"},"length":"4M","dedup":true}'
ddp json 'o["wire_bytes"] == 0 and o["dedup_stats"]["in_place_bytes"] == 4194304 and o["dedup_stats"]["local_bytes"] == 0' + cmp da 0 dc 0 $M4
case_result dedup-inplace $? "$(body)"
# A client rewrites dc through its mapping (the index cannot see it):
# its entries are found stale and dropped, db's still serve.
ddp fill dc $((seed + 12)) 0 $M4
dmove dedup-stale-move '{"src":{"arena":"da"},"dst":{"arena":"dd"},"length":"4M","dedup":true}'
ddp json 'd["stale"] > 0 and o["wire_bytes"] <= 4194304 // 4 and d["local_bytes"] > 0' + cmp da 0 dd 0 $M4
case_result dedup-stale $? "$(body)"
# Fresh random data F (de): nothing is held, every byte goes over the
# wire, no savings claimed.
ddp fill de $((seed + 13)) 0 $M4
dmove dedup-random-move '{"src":{"arena":"de"},"dst":{"arena":"db"},"length":"4M","dedup":true}'
ddp json 'o["wire_bytes"] == o["logical_bytes"] == 4194304 and d["hit_chunks"] == 0 and d["local_bytes"] == 0 and d["in_place_bytes"] == 0 and o["wire_bytes_per_second"] == o["effective_bytes_per_second"]' + cmp de 0 db 0 $M4
case_result dedup-random-no-savings $? "$(body)"
# Held chunks inside the destination range itself: db holds F (indexed
# by the last move); da becomes F[0:2M] + X (64 KiB) + F[2M:4M-64K]
# and moves into db.  The first half is in place; F's later chunks lie
# in db 64 KiB before where they go, inside the range the move writes:
# they must not be copied from there (a copy in destination order would
# read bytes already overwritten), so they go over the wire.
ddp copy db 0 da 0 2097152 + fill da $((seed + 14)) 2097152 65536 + \
	copy db 2097152 da 2162688 2031616 + copy da 0 dc 0 $M4
dmove dedup-in-dst-move '{"src":{"arena":"da"},"dst":{"arena":"db"},"length":"4M","dedup":true}'
ddp json 'd["overlap_skipped"] > 0 and d["local_bytes"] == 0 and d["in_place_bytes"] >= 1048576 and o["wire_bytes"] + d["in_place_bytes"] == 4194304' + cmp da 0 db 0 $M4
case_result dedup-in-dst-not-read $? "$(body)"
# The same shape with a second copy outside the range: the content of
# db before the move (now also in dc, indexed on request) is copied from
# there instead.  da becomes Y (64 KiB) + (db's bytes)[0:4M-64K].
st=$(api -X POST -d '{"offset":0,"length":"4M"}' http://x/v1/arenas/dc/index)
expect dedup-index-api 200 "$st"
ddp json 'o["chunks"] > 0 and o["arena"] == "dc"'
case_result dedup-index-api-chunks $? "$(body)"
expect dedup-index-api-range 400 "$(api -X POST -d '{"offset":"4M","length":1}' http://x/v1/arenas/dc/index)"
expect dedup-index-api-unknown 404 "$(api -X POST -d '{"length":1}' http://x/v1/arenas/nosuch/index)"
expect dedup-index-api-other-uid 403 "$(api_nobody -X POST -d '{"length":4096}' http://x/v1/arenas/dc/index)" $H/tmp/body.nobody
ddp fill da $((seed + 15)) 0 65536 + copy dc 0 da 65536 4128768
dmove dedup-in-dst-copy-move '{"src":{"arena":"da"},"dst":{"arena":"db"},"length":"4M","dedup":true}'
ddp json 'd["local_bytes"] >= 3 * 1048576 and o["wire_bytes"] <= 4194304 // 4 and o["wire_bytes"] + d["local_bytes"] + d["in_place_bytes"] == 4194304' + cmp da 0 db 0 $M4
case_result dedup-in-dst-copied-from-outside $? "$(body)"
# A deduplicated move across arenas of different offsets: dc's second
# half into de at 1 MiB (hits at other offsets, unaligned to the range).
dmove dedup-offsets-move '{"src":{"arena":"dc","offset":"2M"},"dst":{"arena":"de","offset":"1M"},"length":"2M","dedup":true,"chunk":"64K"}'
ddp json 'o["wire_bytes"] <= 2097152 // 4 and o["logical_bytes"] == 2097152' + cmp dc 2097152 de 1048576 2097152
case_result dedup-offsets $? "$(body)"
# Cancel: 16 MiB of random data in 4 KiB puts (none held), cancelled
# in the middle, as the plain move above.
expect dedup-big-create 201 "$(api -X POST -d '{"name":"ddbig","size":"16M","mode":"0600"}' http://x/v1/arenas)"
expect dedup-m3-create 201 "$(api -X POST -d '{"name":"ddm3","size":"16M","mode":"0600"}' http://x/v1/arenas)"
ddp fill ddbig $((seed + 16)) 0 16777216
move_cancel ddbig ddm3 true
read st st2 st3 id3 <$H/tmp/cancel.out
expect dedup-cancel-create 202 "$st" $H/tmp/cancel.out
expect dedup-cancel-holds-arena 409 "$st2" $H/tmp/cancel.out
expect dedup-cancel 202 "$st3" $H/tmp/cancel.out
poll_move "$id3"
ddp json 'o["state"] == "cancelled" and o["dedup"] is True and o["bytes_done"] < 16777216 and o["wire_bytes"] == o["bytes_done"]'
case_result dedup-cancelled $? "$(body)"
sed 's/^/# dedup-cancel: /' $H/tmp/body
expect dedup-bad-flag 400 "$(api -X POST -d '{"src":{"arena":"da"},"dst":{"arena":"db"},"length":4096,"dedup":"yes"}' http://x/v1/moves)"
# The done events carry the figures; destroying the arenas empties the
# index (every indexed range was in them).
grep -A1 '^event: move.done$' $H/tmp/sse.root | grep '"dedup":true' |
	grep '"logical_bytes":4194304' | grep -q '"effective_bytes_per_second":'
case_result dedup-done-event $?
for a in da db dc dd de ddbig ddm3; do
	expect dedup-delete-$a 204 "$(api -X DELETE http://x/v1/arenas/$a)"
done
api http://x/v1/node >/dev/null
ddp json 'o["dedup"]["index_entries"] == 0'
case_result dedup-index-emptied $? "$(body)"

# ---- delete -------------------------------------------------------------
expect delete 204 "$(api -X DELETE http://x/v1/arenas/a1)"
expect delete-gone 404 "$(api http://x/v1/arenas/a1)"
[ "$(stat_of arenas)" = $((n0 - 1)) ]
case_result delete-module $? "module arenas=$(stat_of arenas), want $((n0 - 1))"

# ---- the event streams --------------------------------------------------
sleep 2
grep -q '^event: arena.created$' $H/tmp/sse.root &&
	grep -q '"arena":"a1"' $H/tmp/sse.root &&
	grep -A1 '^event: arena.destroyed$' $H/tmp/sse.root | grep -q '"arena":"a1"' &&
	grep -A1 '^event: arena.destroyed$' $H/tmp/sse.root | grep -q '"arena":"t1"'
case_result sse-events $? "$(tr '\n' '|' <$H/tmp/sse.root | head -c 600)"
grep -q '"arena":"shared"' $H/tmp/sse.nobody && ! grep -q '"arena":"a1"' $H/tmp/sse.nobody
case_result sse-filtered-other-uid $? "$(tr '\n' '|' <$H/tmp/sse.nobody | head -c 600)"
sed 's/^/# sse: /' $H/tmp/sse.root

# ---- SIGTERM: clean shutdown, arenas destroyed, nothing leaked ----------
kill -TERM $DPID
wait $DPID
rc=$?
case_result sigterm-exit $rc "exit status $rc (23: LeakSanitizer)"
wait $SSE1 $SSE2 2>/dev/null
sed 's/^/# daemon: /' $H/tmp/daemon.log
cat $H/tmp/asan* $H/tmp/ubsan* 2>/dev/null | sed 's/^/# sanitizer: /'
! ls $H/tmp/asan* $H/tmp/ubsan* >/dev/null 2>&1
case_result sanitizers-clean $? "$(cat $H/tmp/asan* $H/tmp/ubsan* 2>/dev/null | head -5)"
! grep -q 'runtime error' $H/tmp/daemon.log
case_result ubsan-clean $?
[ ! -e $H$API ] && [ ! -e $H$ATT ]
case_result sockets-removed $?
counters_zero counters-zero 10
umount $H/run $H/tmp $H/dev/shm $H/dev $H/sys $H/proc $H 2>/dev/null
job_end

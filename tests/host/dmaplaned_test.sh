#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# dmaplaned on the host, without the module: --help and --version, the
# configuration checker on good and bad files, and the REST API's error
# paths and a fuzz pass against a daemon started with --no-device (which
# answers every request but cannot create or attach arenas: 503).  The
# real thing, with arenas, runs in a VM (tests/vm/jobs/dmaplaned.sh via
# tests/run-daemon.sh).  Prints TAP.
# Usage: dmaplaned_test.sh BUILD_DIR [SRC_DIR]

build=$1
src=${2:-.}
d=$build/dmaplaned
[ -x "$build/dmaplaned-asan" ] && d=$build/dmaplaned-asan
export LD_LIBRARY_PATH=$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export ASAN_OPTIONS=detect_leaks=1:exitcode=23
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
n=0

result() {	# rc description
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
	fi
}

# conf NAME JSON: does --check-config accept it (0) or not (1)?
conf() {
	printf '%s\n' "$2" >"$tmp/$1.conf"
	"$d" --check-config -c "$tmp/$1.conf" >"$tmp/$1.out" 2>&1
}

# api WANT METHOD PATH [BODY]: the status and a JSON error body
api() {
	want=$1
	shift
	if [ -n "${3:-}" ]; then
		st=$(curl -s -o "$tmp/body" -w '%{http_code}' --unix-socket "$tmp/api.sock" \
			-X "$1" --data-binary "$3" "http://x$2")
	else
		st=$(curl -s -o "$tmp/body" -w '%{http_code}' --unix-socket "$tmp/api.sock" \
			-X "$1" "http://x$2")
	fi
	[ "$st" = "$want" ] || { echo "# $1 $2: status $st, want $want: $(cat "$tmp/body")"; return 1; }
	case $want in
	2*) return 0 ;;
	esac
	grep -q "\"code\":$want" "$tmp/body"
}

echo "TAP version 13"
echo "1..51"
"$d" --help | grep -q 'Bearer'
result $? "--help explains"
"$d" --version | grep -q '^dmaplaned '
result $? "--version"
"$d" --bogus >/dev/null 2>&1
[ $? = 2 ]
result $? "unknown option: status 2"

printf 'abcdefghijklmnopqrstuvwxyz\n' >"$tmp/token"
printf 'short\n' >"$tmp/short"
chmod 0600 "$tmp/token" "$tmp/short"
printf 'abcdefghijklmnopqrstuvwxyz\n' >"$tmp/open-token"
chmod 0644 "$tmp/open-token"
conf good "{\"node_name\":\"n1\",\"tcp_address\":\"127.0.0.1\",\"tcp_port\":7070,\"token_file\":\"$tmp/token\",\"arenas\":[{\"name\":\"a\",\"size\":\"2M\",\"owner\":1000,\"group\":1000,\"mode\":\"0660\",\"huge_only\":true}],\"peers\":[{\"name\":\"p\",\"address\":\"10.0.0.2\"}]}"
result $? "config: a good one"
grep -q '1 arenas, 1 peers' "$tmp/good.out"
result $? "config: arenas and peers counted"
conf limits '{"max_moves_per_uid":4,"max_arenas":8,"max_total_bytes":"16M","max_arenas_per_uid":2,"max_bytes_per_uid":"4M","max_connections_per_uid":3,"max_streams_per_uid":1}'
result $? "config: the limits"
"$d" --check-config -c "$src/daemon/dmaplaned.conf.example" >/dev/null 2>&1
[ $? = 1 ]	# its token file /etc/dmaplaned/token does not exist here
result $? "config: the example parses up to its token file"
for bad in \
	'unknown-key|{"colour":"red"}' \
	'not-object|[1]' \
	'syntax|{"node_name":' \
	'duplicate-key|{"socket":"/a","socket":"/b"}' \
	'bad-size|{"arenas":[{"name":"a","size":1000}]}' \
	'zero-size|{"arenas":[{"name":"a","size":0}]}' \
	'bad-name|{"arenas":[{"name":"../a","size":4096}]}' \
	'dup-arena|{"arenas":[{"name":"a","size":4096},{"name":"a","size":4096}]}' \
	'bad-mode|{"arenas":[{"name":"a","size":4096,"mode":"888"}]}' \
	'neg-owner|{"arenas":[{"name":"a","size":4096,"owner":-1}]}' \
	'tcp-no-token|{"tcp_address":"127.0.0.1"}' \
	'bad-port|{"tcp_port":70000}' \
	'bad-peer|{"peers":[{"name":"p"}]}' \
	'neg-move-limit|{"max_moves_per_uid":-1}' \
	'text-move-limit|{"max_moves_per_uid":"16"}' \
	'neg-arena-limit|{"max_arenas_per_uid":-1}' \
	'bad-bytes-limit|{"max_bytes_per_uid":"lots"}' \
	'neg-bytes-limit|{"max_bytes_per_uid":-4096}' \
	'neg-conn-limit|{"max_connections_per_uid":-1}' \
	'text-stream-limit|{"max_streams_per_uid":"4"}' \
	"short-token|{\"tcp_address\":\"127.0.0.1\",\"token_file\":\"$tmp/short\"}" \
	"open-token|{\"tcp_address\":\"127.0.0.1\",\"token_file\":\"$tmp/open-token\"}"; do
	name=${bad%%|*}
	conf "$name" "${bad#*|}"
	[ $? = 1 ] && grep -q 'error' "$tmp/$name.out"
	result $? "config: $name refused with a message"
done
"$d" --check-config -c "$tmp/nonexistent.conf" >/dev/null 2>&1
[ $? = 1 ]
result $? "config: a missing -c file is an error"

# Two daemons on loopback TCP with one token (the mesh's): "host" (the
# one the API checks talk to) and "n2", its peer.
port=$((20000 + $$ % 20000))
chmod 0711 "$tmp"
: >"$tmp/body.nobody"
chmod 0666 "$tmp/body.nobody"
printf '{"node_name":"n2","tcp_address":"127.0.0.1","tcp_port":%d,"token_file":"%s"}\n' \
	$((port + 1)) "$tmp/token" >"$tmp/n2.conf"
printf '{"node_name":"host","tcp_address":"127.0.0.1","tcp_port":%d,"token_file":"%s",%s}\n' \
	$port "$tmp/token" '"max_connections_per_uid":2,"max_streams_per_uid":1' >"$tmp/host.conf"
"$d" --no-device -c "$tmp/n2.conf" -s "$tmp/n2.sock" -a "$tmp/n2.att" 2>"$tmp/n2.log" &
pid2=$!
"$d" --no-device -c "$tmp/host.conf" -s "$tmp/api.sock" -a "$tmp/attach.sock" 2>"$tmp/log" &
pid=$!
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; [ -n "$pid2" ] && kill $pid2 2>/dev/null; [ -n "${pid3:-}" ] && kill $pid3 2>/dev/null; [ -n "${pid4:-}" ] && kill $pid4 2>/dev/null; rm -rf "$tmp"' EXIT
for i in $(seq 50); do [ -S "$tmp/api.sock" ] && [ -S "$tmp/n2.sock" ] && break; sleep 0.1; done
api 200 GET /v1/node && api 404 GET /v1/nothing && api 405 PUT /v1/arenas &&
	api 400 POST /v1/arenas '{"name":' && api 400 POST /v1/arenas '{"name":"a"}' &&
	api 503 POST /v1/arenas '{"name":"a","size":4096}' &&
	api 404 GET /v1/arenas/a && api 404 DELETE /v1/arenas/a && api 200 GET /v1/peers
result $? "api: error paths without a device"
head -c 100000 /dev/zero >"$tmp/big"
api 413 POST /v1/arenas "@$tmp/big"
result $? "api: body too large"
# The mesh's routes: bad input is a 4xx with a JSON error and changes
# nothing; another uid may not add or remove peers or read the mesh's
# information; TCP needs the token, grants need the token and a node.
api_nobody() {	# WANT METHOD PATH [BODY], as uid/gid 65534
	st=$(setpriv --reuid=65534 --regid=65534 --clear-groups curl -s -o "$tmp/body.nobody" \
		-w '%{http_code}' --unix-socket "$tmp/api.sock" -X "$2" ${4:+--data-binary "$4"} "http://x$3")
	[ "$st" = "$1" ] && grep -q "\"code\":$1" "$tmp/body.nobody" ||
		{ echo "# nobody $2 $3: status $st, want $1: $(cat "$tmp/body.nobody")"; return 1; }
}
tcp() {	# WANT METHOD PATH [TOKEN [BODY]]
	st=$(curl -s -o "$tmp/body" -w '%{http_code}' -X "$2" ${4:+-H "Authorization: Bearer $4"} \
		-H 'X-Dmaplane-Node: host' ${5:+--data-binary "$5"} "http://127.0.0.1:$port$3")
	[ "$st" = "$1" ] || { echo "# tcp $2 $3: status $st, want $1: $(cat "$tmp/body")"; return 1; }
}
tok=abcdefghijklmnopqrstuvwxyz
api 200 GET /v1/nodes && grep -q '"name":"host","self":true' "$tmp/body" &&
	api 400 POST /v1/peers '{"name":' && api 400 POST /v1/peers '[1]' &&
	api 400 POST /v1/peers '{"name":"p1"}' && api 400 POST /v1/peers '{"name":"../x","address":"h"}' &&
	api 400 POST /v1/peers '{"name":"p1","address":"ftp://h"}' &&
	api 400 POST /v1/peers '{"name":"p1","address":"h","colour":1}' &&
	api 400 POST /v1/peers '{"name":"p1","address":7}' &&
	api 409 POST /v1/peers '{"name":"host","address":"h"}' &&
	api 404 GET /v1/nodes/nosuch && api 404 GET /v1/nodes/nosuch/arenas &&
	api 404 GET /v1/nodes/host/nothing && api 405 PUT /v1/nodes &&
	api 404 DELETE /v1/peers/nosuch && api 405 PUT /v1/peers/nosuch &&
	api 404 GET /v1/mesh/nothing && api 403 POST /v1/mesh/grants '{}' &&
	api 405 POST /v1/mesh/info && api 400 GET /v1/arenas/a/xxh128 &&
	api 400 GET '/v1/arenas/a/xxh128?offset=x&length=1' &&
	api 503 POST /v1/moves '{"src":{"arena":"a"},"dst":{"node":"nosuch","arena":"b"},"length":1}' &&
	api 503 POST /v1/moves '{"src":{"node":"nosuch","arena":"a"},"dst":{"arena":"b"},"length":1}' &&
	api 404 POST /v1/moves '{"src":{"node":"n1","arena":"a"},"dst":{"node":"n2","arena":"b"},"length":1}' &&
	grep -q "no node n1 in the mesh" "$tmp/body" &&
	api 404 POST /v1/moves '{"src":{"node":"n1","arena":"a"},"dst":{"arena":"b"},"length":1,"dedup":true}' &&
	api 404 GET /v1/nodes/n1/moves/1 && api 404 DELETE /v1/nodes/n1/moves/1 &&
	api 404 GET /v1/nodes/host/moves/1 && api 404 GET /v1/nodes/n1/moves/x &&
	api 405 PUT /v1/nodes/n1/moves/1 && api 403 POST /v1/mesh/moves '{}' &&
	api 503 POST /v1/moves '{"src":{"node":"host","arena":"a"},"dst":{"node":"host","arena":"b"},"length":1}' &&
	api 200 GET /v1/peers && [ "$(cat "$tmp/body")" = "[]" ]
result $? "api: the mesh's routes refuse bad input, nothing changed"
# Deduplicated moves and the dedup index: a bad "dedup" or index range
# is a 400 with a JSON error even without a device; a good request gets
# as far as the device (503); the index stays empty.
api 200 GET /v1/node && grep -q '"dedup":{[^}]*"index_entries":0' "$tmp/body" &&
	grep -q '"chunker_fingerprint":"[0-9a-f]\{16\}"' "$tmp/body" &&
	api 400 POST /v1/moves '{"src":{"arena":"a"},"dst":{"arena":"b"},"length":4096,"dedup":"yes"}' &&
	grep -q 'dedup: true or false' "$tmp/body" &&
	api 400 POST /v1/moves '{"src":{"arena":"a"},"dst":{"arena":"b"},"length":4096,"dedup":1}' &&
	api 400 POST /v1/moves '{"src":{"arena":"a"},"dst":{"arena":"b"},"length":4096,"dedup":null}' &&
	api 400 POST /v1/moves '{"src":{"arena":"a"},"dst":{"arena":"b"},"dedup":true}' &&
	api 400 POST /v1/moves '{"src":{"arena":"a"},"dst":{"arena":"b"},"length":4096,"dedup":true,"dedup":false}' &&
	api 503 POST /v1/moves '{"src":{"arena":"a"},"dst":{"arena":"b"},"length":4096,"dedup":true}' &&
	api 503 POST /v1/moves '{"src":{"arena":"a"},"dst":{"arena":"b"},"length":4096,"dedup":false}' &&
	api 200 GET /v1/moves && [ "$(cat "$tmp/body")" = "[]" ]
result $? "api: dedup moves: a bad \"dedup\" is a 400, nothing queued"
api 405 GET /v1/arenas/a/index && api 400 POST /v1/arenas/a/index '{"offset":' &&
	api 400 POST /v1/arenas/a/index '[1]' && api 400 POST /v1/arenas/a/index '{}' &&
	api 400 POST /v1/arenas/a/index '{"length":0}' &&
	api 400 POST /v1/arenas/a/index '{"length":4096,"colour":1}' &&
	api 400 POST /v1/arenas/a/index '{"length":-1}' &&
	api 404 POST '/v1/arenas/a%2fb/index' '{"length":4096}' &&
	api 503 POST /v1/arenas/a/index '{"offset":0,"length":4096}' &&
	api 200 GET /v1/node && grep -q '"index_entries":0' "$tmp/body"
result $? "api: the dedup index refuses bad ranges, stays empty"
api_nobody 403 POST /v1/peers '{"name":"p1","address":"h"}' &&
	api_nobody 403 DELETE /v1/peers/p1 && api_nobody 403 GET /v1/mesh/info &&
	api_nobody 403 POST /v1/mesh/grants '{"arena":"a","length":1}' &&
	api 200 GET /v1/peers && [ "$(cat "$tmp/body")" = "[]" ]
result $? "api: another uid may not change the mesh"
tcp 401 GET /v1/mesh/info && tcp 401 GET /v1/mesh/info wrong-token-wrong-token &&
	tcp 401 POST /v1/peers "" '{"name":"p1","address":"h"}' &&
	tcp 401 POST /v1/mesh/grants "" '{"arena":"a","length":1}' &&
	tcp 400 POST /v1/mesh/grants $tok '{"arena":"a"}' &&
	tcp 400 POST /v1/mesh/grants $tok '{"arena":"a","length":1,"uid":-1}' &&
	tcp 400 POST /v1/mesh/grants $tok '{"arena":"a","length":1,"admin":true,"access":"rw"}' &&
	tcp 400 POST /v1/mesh/grants $tok '{"arena":"a","length":1,"admin":true,"access":1}' &&
	tcp 503 POST /v1/mesh/grants $tok '{"arena":"a","length":1,"admin":true,"access":"read"}' &&
	tcp 503 POST /v1/mesh/grants $tok '{"arena":"a","length":1,"uid":1000,"gid":1000}' &&
	tcp 404 DELETE /v1/mesh/grants/1 $tok &&
	tcp 400 POST /v1/mesh/moves $tok '{}' && tcp 405 GET /v1/mesh/moves $tok &&
	tcp 400 POST /v1/mesh/moves $tok '{"requester":{"admin":true}}' &&
	tcp 400 POST /v1/mesh/moves $tok '{"requester":{"uid":-1},"move":{}}' &&
	tcp 400 POST /v1/mesh/moves $tok '{"requester":{"admin":true},"move":{"src":{"arena":"a"}}}' &&
	tcp 503 POST /v1/mesh/moves $tok '{"requester":{"uid":1000,"gid":1000,"groups":[]},"move":{"src":{"arena":"a"},"dst":{"arena":"b"},"length":1}}' &&
	tcp 404 POST /v1/mesh/moves/1 $tok '{"requester":{"admin":true},"op":"get"}' &&
	tcp 400 POST /v1/mesh/moves/1 $tok '{"requester":{"admin":true},"op":"x"}' &&
	tcp 404 POST /v1/mesh/moves/x $tok '{"requester":{"admin":true},"op":"get"}' &&
	tcp 200 GET /v1/mesh/info $tok &&
	grep -q '"node":"host"' "$tmp/body"
result $? "api: TCP needs the token; grants refuse bad input"
# The dedup mesh endpoints: the token, then well-formed requests under a
# grant of this node, with the same chunker; nothing changes.
chunk=AAAAAAAAAAAAAAAAAAAAAAAQAAA=	# one chunk: xxh128 0, 4096 bytes
api 200 GET /v1/node &&
	fp=$(sed -n 's/.*"chunker_fingerprint":"\([0-9a-f]*\)".*/\1/p' "$tmp/body") && [ -n "$fp" ] &&
	api 403 POST /v1/mesh/dedup '{}' && api 403 POST /v1/mesh/dedup/copy '{}' &&
	tcp 401 POST /v1/mesh/dedup "" '{}' && tcp 405 GET /v1/mesh/dedup $tok &&
	tcp 405 DELETE /v1/mesh/dedup/copy $tok && tcp 404 POST /v1/mesh/dedup/nothing $tok '{}' &&
	tcp 400 POST /v1/mesh/dedup $tok '{"grant":' && tcp 400 POST /v1/mesh/dedup $tok '{}' &&
	tcp 400 POST /v1/mesh/dedup $tok "{\"grant\":1,\"base\":0,\"chunks\":\"$chunk\"}" &&
	tcp 400 POST /v1/mesh/dedup $tok "{\"grant\":1,\"base\":0,\"chunks\":\"%%%%\",\"chunker\":\"$fp\"}" &&
	tcp 400 POST /v1/mesh/dedup $tok "{\"grant\":1,\"base\":0,\"chunks\":\"AAAA\",\"chunker\":\"$fp\"}" &&
	tcp 400 POST /v1/mesh/dedup $tok "{\"grant\":1,\"base\":0,\"chunks\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAA=\",\"chunker\":\"$fp\"}" &&
	tcp 409 POST /v1/mesh/dedup $tok "{\"grant\":1,\"base\":0,\"chunks\":\"$chunk\",\"chunker\":\"0000000000000000\"}" &&
	grep -q '"code":409' "$tmp/body" &&
	tcp 404 POST /v1/mesh/dedup $tok "{\"grant\":1,\"base\":0,\"chunks\":\"$chunk\",\"chunker\":\"$fp\"}" &&
	grep -q 'no grant 1 for node host' "$tmp/body" &&
	tcp 400 POST /v1/mesh/dedup/copy $tok '{"grant":1}' &&
	tcp 400 POST /v1/mesh/dedup/copy $tok '{"grant":1,"ops":[[1,0,0]]}' &&
	tcp 400 POST /v1/mesh/dedup/copy $tok '{"grant":1,"ops":[[1,0,0,0]]}' &&
	tcp 400 POST /v1/mesh/dedup/copy $tok '{"grant":1,"ops":[[1,-1,0,4096]]}' &&
	tcp 400 POST /v1/mesh/dedup/copy $tok '{"grant":1,"ops":[[4294967296,0,0,4096]]}' &&
	tcp 404 POST /v1/mesh/dedup/copy $tok '{"grant":1,"ops":[[1,0,0,4096]]}' &&
	tcp 404 DELETE '/v1/mesh/grants/1?index=1' $tok &&
	api 200 GET /v1/node && grep -q '"index_entries":0' "$tmp/body"
result $? "api: the dedup mesh endpoints need the token and a grant; bad input is a 4xx"
api 201 POST /v1/peers "{\"name\":\"n2\",\"address\":\"127.0.0.1:$((port + 1))\"}" &&
	api 409 POST /v1/peers "{\"name\":\"n2\",\"address\":\"127.0.0.1\"}"
result $? "mesh: peer added at run time (409 twice)"
ok=1
for i in $(seq 40); do
	api 200 GET /v1/nodes/n2 && grep -q '"state":"up"' "$tmp/body" && { ok=0; break; }
	sleep 0.2
done
[ $ok = 0 ] && api 200 GET /v1/nodes/n2/arenas && [ "$(cat "$tmp/body")" = "[]" ] &&
	api 200 GET /v1/nodes && grep -q '"name":"n2"' "$tmp/body"
result $? "mesh: the peer is up, its arena table visible"
api 204 DELETE /v1/peers/n2 && api 200 GET /v1/peers && [ "$(cat "$tmp/body")" = "[]" ] &&
	api 404 GET /v1/nodes/n2
result $? "mesh: peer removed"
kill -TERM $pid2
wait $pid2
rc2=$?
pid2=
[ $rc2 = 0 ] || echo "# n2: exit status $rc2: $(tail -5 "$tmp/n2.log")"
cat "$tmp/n2.log" >>"$tmp/log"
# Per-peer tokens: p3 and p4 know each other by the token of their pair
# (each peer's token_file), and each has an operator token of its own
# that the other does not know.  The pair's token is good for the mesh's
# requests of that node only.
printf 'pair-p3-p4-token-0123456789\n' >"$tmp/pair"
printf 'operator-p3-token-0123456789\n' >"$tmp/op3"
printf 'operator-p4-token-0123456789\n' >"$tmp/op4"
chmod 0600 "$tmp/pair" "$tmp/op3" "$tmp/op4"
for me in 3 4; do
	other=$((7 - me))
	printf '{"node_name":"p%d","tcp_address":"127.0.0.1","tcp_port":%d,"token_file":"%s","peers":[{"name":"p%d","address":"127.0.0.1:%d","token_file":"%s"}]}\n' \
		$me $((port + me)) "$tmp/op$me" $other $((port + other)) "$tmp/pair" >"$tmp/p$me.conf"
	"$d" --no-device -c "$tmp/p$me.conf" -s "$tmp/p$me.sock" -a "$tmp/p$me.att" 2>"$tmp/p$me.log" &
	eval pid$me=\$!
done
to4() {	# WANT METHOD PATH TOKEN [NODE [BODY]]: a request to p4 over TCP
	st=$(curl -s -o "$tmp/body" -w '%{http_code}' -X "$2" -H "Authorization: Bearer $4" \
		${5:+-H "X-Dmaplane-Node: $5"} ${6:+--data-binary "$6"} "http://127.0.0.1:$((port + 4))$3")
	[ "$st" = "$1" ] || { echo "# p4 $2 $3: status $st, want $1: $(cat "$tmp/body")"; return 1; }
}
ok=1
for i in $(seq 50); do
	st=$(curl -s -o "$tmp/body" -w '%{http_code}' --unix-socket "$tmp/p3.sock" http://x/v1/nodes/p4)
	[ "$st" = 200 ] && grep -q '"state":"up"' "$tmp/body" && { ok=0; break; }
	sleep 0.2
done
curl -s --unix-socket "$tmp/p3.sock" http://x/v1/peers | grep -q '"token":"own"'
result $((ok + $?)) "mesh: peers with a token of their pair are up"
pair=pair-p3-p4-token-0123456789
to4 200 GET /v1/mesh/info $pair && grep -q '"node":"p4"' "$tmp/body" &&
	to4 401 GET /v1/mesh/info operator-p3-token-0123456789 &&
	to4 403 GET /v1/arenas $pair && grep -q "peer's own token" "$tmp/body" &&
	to4 403 POST /v1/peers $pair "" '{"name":"p9","address":"h"}' &&
	to4 403 DELETE /v1/peers/p3 $pair && to4 403 GET /v1/moves $pair &&
	to4 403 POST /v1/mesh/grants $pair p9 '{"arena":"a","length":1,"admin":true}' &&
	grep -q 'another node' "$tmp/body" &&
	to4 503 POST /v1/mesh/grants $pair p3 '{"arena":"a","length":1,"admin":true}' &&
	to4 503 POST /v1/mesh/grants $pair "" '{"arena":"a","length":1,"admin":true}' &&
	to4 404 DELETE /v1/mesh/grants/1 $pair &&
	to4 503 POST /v1/mesh/moves $pair p3 '{"requester":{"uid":1000,"gid":1000},"move":{"src":{"arena":"a"},"dst":{"arena":"b"},"length":1}}' &&
	curl -s -o "$tmp/body" --unix-socket "$tmp/p3.sock" http://x/v1/nodes/p4/moves/1 &&
	grep -q '"code":503' "$tmp/body" && grep -q 'node p4 is up without a device' "$tmp/body" &&
	to4 503 GET '/v1/arenas/a/xxh128?offset=0&length=1' $pair &&
	to4 200 GET /v1/peers operator-p4-token-0123456789 && grep -q '"name":"p3"' "$tmp/body"
result $? "mesh: a pair's token is that node's, for the mesh's requests only"
conf peer-token-open "{\"peers\":[{\"name\":\"p\",\"address\":\"h\",\"token_file\":\"$tmp/open-token\"}]}"
[ $? = 1 ] && grep -q 'chmod 0600' "$tmp/peer-token-open.out" &&
	conf peer-token-short "{\"peers\":[{\"name\":\"p\",\"address\":\"h\",\"token_file\":\"$tmp/short\"}]}"
[ $? = 1 ] && conf peer-token-good "{\"peers\":[{\"name\":\"p\",\"address\":\"h\",\"token_file\":\"$tmp/pair\"}]}"
result $? "config: a peer's token_file: 0600, 16 characters at least"
for me in 3 4; do
	eval kill -TERM \$pid$me
	eval wait \$pid$me
	rc3=$?
	[ $rc3 = 0 ] || echo "# p$me: exit status $rc3: $(tail -5 "$tmp/p$me.log")"
	cat "$tmp/p$me.log" >>"$tmp/log"
	[ $rc3 = 0 ]
	result $? "mesh: p$me exits cleanly"
	eval pid$me=
done
# Per-uid limits of a uid that is not an administrator (host.conf: 2
# connections, 1 event stream): a second stream is a 429, a third
# connection is shut down before any request, root is not limited, and
# the uid gets its connections back when it closes them.
setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 - "$tmp/api.sock" <<'PY' >"$tmp/limits" 2>&1
import socket, sys, time
path = sys.argv[1]
def conn():
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    return s
def get(s, url, want=b""):
    got = b""
    try:	# a refused connection may be shut down before the request
        s.sendall(b"GET " + url + b" HTTP/1.1\r\nHost: x\r\n\r\n")
        while True:
            d = s.recv(4096)
            if not d:
                break
            got += d
            if b"\r\n\r\n" in got and want in got:
                break
    except OSError:
        pass
    return got
a = conn()
r = get(a, b"/v1/events", b"dmaplaned events")
assert r.startswith(b"HTTP/1.1 200"), r
b = conn()
r = get(b, b"/v1/events", b"max_streams_per_uid")
assert r.startswith(b"HTTP/1.1 429") and b"max_streams_per_uid" in r, r
c = conn()
r = get(c, b"/v1/node")
assert r == b"", r
for s in (a, b, c):
    s.close()
def until_ok(url, want):	# a closed stream is noticed at its next keepalive (15 s)
    for i in range(40):
        s = conn()
        r = get(s, url, want)
        if r.startswith(b"HTTP/1.1 200"):
            print("# %s: 200 after %d s" % (url.decode(), i))
            return s
        s.close()
        time.sleep(1)
    raise AssertionError(r)
until_ok(b"/v1/node", b"}").close()
until_ok(b"/v1/events", b"dmaplaned events")
print("ok")
PY
rc=$?
sed 's/^/# /' "$tmp/limits"
[ $rc = 0 ] && grep -qx ok "$tmp/limits"
result $? "api: per-uid limits: event streams (429), connections (shut down), given back"
streams=
for i in 1 2 3; do
	curl -s -N --max-time 3 --unix-socket "$tmp/api.sock" http://x/v1/events >/dev/null &
	streams="$streams $!"
done
sleep 1
api 200 GET /v1/node
result $? "api: root holds streams and connections beyond the per-uid limits"
wait $streams
python3 "$src/tests/dmaplaned_fuzz.py" "$tmp/api.sock" 300 1 >"$tmp/fuzz" 2>&1
rc=$?
sed 's/^/# /' "$tmp/fuzz"
result $rc "api: fuzz pass, daemon alive"
kill -TERM $pid
wait $pid
rc=$?
pid=
[ $rc = 0 ] && [ "$rc2" = 0 ] && [ ! -e "$tmp/api.sock" ] && [ ! -e "$tmp/attach.sock" ]
result $? "SIGTERM: clean exit (rc=$rc), sockets removed"
! grep -q 'ERROR: \|runtime error' "$tmp/log"
result $? "no sanitizer report"

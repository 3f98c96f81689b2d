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
echo "1..27"
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

"$d" --no-device -s "$tmp/api.sock" -a "$tmp/attach.sock" -n host 2>"$tmp/log" &
pid=$!
for i in $(seq 50); do [ -S "$tmp/api.sock" ] && break; sleep 0.1; done
api 200 GET /v1/node && api 404 GET /v1/nothing && api 405 PUT /v1/arenas &&
	api 400 POST /v1/arenas '{"name":' && api 400 POST /v1/arenas '{"name":"a"}' &&
	api 503 POST /v1/arenas '{"name":"a","size":4096}' &&
	api 404 GET /v1/arenas/a && api 404 DELETE /v1/arenas/a && api 200 GET /v1/peers
result $? "api: error paths without a device"
head -c 100000 /dev/zero >"$tmp/big"
api 413 POST /v1/arenas "@$tmp/big"
result $? "api: body too large"
python3 "$src/tests/dmaplaned_fuzz.py" "$tmp/api.sock" 300 1 >"$tmp/fuzz" 2>&1
rc=$?
sed 's/^/# /' "$tmp/fuzz"
result $rc "api: fuzz pass, daemon alive"
kill -TERM $pid
wait $pid
rc=$?
pid=
[ $rc = 0 ] && [ ! -e "$tmp/api.sock" ] && [ ! -e "$tmp/attach.sock" ]
result $? "SIGTERM: clean exit (rc=$rc), sockets removed"
! grep -q 'ERROR: \|runtime error' "$tmp/log"
result $? "no sanitizer report"

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# dp-kvstore on the host, without the module: its ZeroMQ transport over
# ipc:// and tcp://127.0.0.1 (servers and workers forked, and started
# role by role), the data check (a spoiled value must fail the run), and
# a clean failure of the dmaplane transport when there is no
# /dev/dmaplane.  The dmaplane transport itself runs in a VM
# (tests/vm/jobs/kvstore.sh).  Prints TAP.
# Usage: kvstore_test.sh BUILD_DIR

build=$1
kv=$build/dp-kvstore
export LD_LIBRARY_PATH=$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
smoke="-s 2 -w 2 -k 8 -S 4K,256K -n 50 -W 5 -p 200 -q 8"

result() {	# rc description [skip reason]
	n=$((n + 1))
	if [ -n "${3:-}" ]; then
		echo "ok $n $2 # SKIP $3"
	elif [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		echo "not ok $n $2"
	fi
}

# verified LOG SIZES...: a kvstore line with verified=yes for every size
verified() {
	log=$1
	shift
	for s in "$@"; do
		grep -q "^kvstore .*size=$s .*verified=yes" "$log" || return 1
	done
}

echo "TAP version 13"
echo "1..7"

"$kv" --help >"$tmp/help" 2>&1
result $? help
grep -q '^ZeroMQ: built in' "$tmp/help" && zmq=y
noz=
[ -n "$zmq" ] || noz="built without libzmq"

for t in zmq-ipc zmq-tcp; do
	if [ -n "$zmq" ]; then
		timeout 300 "$kv" -t $t $smoke >"$tmp/$t" 2>&1
		rc=$?
		cat "$tmp/$t" | sed 's/^/# /'
		[ $rc = 0 ] && verified "$tmp/$t" 4096 262144
		rc=$?
	fi
	result "${rc:-0}" "$t-2-servers-2-workers" "$noz"
done

# Role by role, as across two nodes: two servers, one worker.
if [ -n "$zmq" ]; then
	port=$((24000 + $$ % 4000))
	pids=
	for s in 0 1; do
		timeout 300 "$kv" -t zmq --role server --rank $s -s 2 -k 8 -S 4K \
			--addr "tcp://127.0.0.1:$((port + s))" >"$tmp/srv$s" 2>&1 &
		pids="$pids $!"
	done
	timeout 300 "$kv" -t zmq --role worker --rank 0 -s 2 -k 8 -S 4K -n 50 -p 200 \
		--addr "tcp://127.0.0.1:$port,tcp://127.0.0.1:$((port + 1))" >"$tmp/wk" 2>&1
	rc=$?
	for p in $pids; do
		wait "$p" || rc=1
	done
	cat "$tmp/wk" "$tmp/srv0" "$tmp/srv1" | sed 's/^/# /'
	[ $rc = 0 ] && verified "$tmp/wk" 4096
	rc=$?
fi
result "${rc:-0}" zmq-roles-tcp "$noz"

# A value spoiled by a server must end the run with status 1.
if [ -n "$zmq" ]; then
	timeout 300 "$kv" -t zmq-ipc $smoke --test-corrupt 100 >"$tmp/bad" 2>&1
	rc=$?
	sed 's/^/# /' "$tmp/bad"
	[ $rc = 1 ] && grep -q 'got 0x.*want 0x' "$tmp/bad"
	rc=$?
fi
result "${rc:-0}" spoiled-value-fails "$noz"

# No module on the host: the dmaplane transport fails at once, no hang.
if [ -e /dev/dmaplane ]; then
	result 0 dmaplane-without-module "/dev/dmaplane exists"
else
	timeout 60 "$kv" -t dmaplane -S 4K >"$tmp/dp" 2>&1
	rc=$?
	sed 's/^/# /' "$tmp/dp"
	[ $rc = 1 ]
	result $? dmaplane-without-module
fi

# Bad options are refused with status 2.
"$kv" -S 4097 >/dev/null 2>&1
[ $? = 2 ]
result $? bad-size-refused

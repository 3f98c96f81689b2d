#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# dp-kvstore, the parameter-server push/pull benchmark: 2 servers and 2
# workers over dmaplane and, when it was built with libzmq, over ZeroMQ
# (ipc:// and tcp://127.0.0.1) in this VM, every pulled value checked
# (a mismatch fails the case), and one server and one worker started as
# separate roles.  A few seconds of work under TCG.
# dmaplane.kvstore_full=1 on the kernel command line adds a run of every
# transport with 1 server and 1 worker at 4 KiB and 1 MiB (the default
# sizes; 200 rounds, 1000 pushes at 4 KiB), whose "kvstore ..." lines give
# the numbers (and dmaplane's with --busy-poll).
. /dmaplane/jobs/lib.sh

need_prog dp-kvstore
job_load
smoke="-s 2 -w 2 -k 8 -S 4K,256K -n 50 -W 5 -p 200 -q 8"
transports=dmaplane
if $D/dp-kvstore --help | grep -q '^ZeroMQ: built in'; then
	transports="$transports zmq-ipc zmq-tcp"
else
	echo "DMAPLANE-CASE kvstore-zmq SKIP dp-kvstore built without libzmq"
fi
for t in $transports; do
	echo "== dp-kvstore -t $t $smoke"
	check "kvstore-$t" timeout 300 $D/dp-kvstore -t "$t" $smoke
done
# Role by role, as across two nodes (names over TCP on 127.0.0.1).
echo "== dp-kvstore --role server / --role worker (dmaplane)"
timeout 300 $D/dp-kvstore --role server --rank 0 -k 8 -S 4K --addr 127.0.0.1:7001 &
srv=$!
timeout 300 $D/dp-kvstore --role worker --rank 0 -k 8 -S 4K -n 50 -p 200 \
	--addr 127.0.0.1:7001
rc=$?
wait $srv || rc=1
case_result kvstore-dmaplane-roles $rc
if [ "$(cmdline dmaplane.kvstore_full 0)" = 1 ]; then
	for t in $transports; do
		echo "== dp-kvstore -t $t -n 200 -p 1000"
		check "kvstore-full-$t" timeout 900 $D/dp-kvstore -t "$t" -n 200 -p 1000
	done
	echo "== dp-kvstore -t dmaplane -n 200 -p 1000 --busy-poll"
	check kvstore-full-dmaplane-poll timeout 900 $D/dp-kvstore -t dmaplane \
		-n 200 -p 1000 --busy-poll
fi
counters_zero counters-zero 10
job_end

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make bench2, in each of two VMs (run-vm.sh -n 2 -R): dp-bench's remote
# modes and the real peers between node 0 (10.77.0.1, clients) and node 1
# (10.77.0.2, servers) over eth0 and a soft-RoCE device rxe0 on it.
#
# The peers run from the host's root (9p, chroot).  The two nodes keep in
# step with busybox nc: before each test node 0 connects to node 1's
# "start" port, node 1 then starts the server, node 0 runs the client
# (retried while the server comes up) and reports to the "done" port, and
# node 1 stops what is left of the server.  Every wait is bounded; a test
# that fails prints its log and the node goes on to the next one.  Node 0
# brackets each test's output with DMAPLANE-PEER-BEGIN/END, which
# tests/vm/bench/summary2.py reads.
. /dmaplane/jobs/lib.sh
. /dmaplane/bench/hostroot.sh

me=$((DMAPLANE_NODE + 1))
other=$((2 - DMAPLANE_NODE))
srv=10.77.0.2
port=${DMAPLANE_PORT:-20886}

if ! hostroot_mount; then
	echo "# bench2: no host root over 9p (run-vm.sh -R)"
	exit 1
fi
# The stock kernel's modules, from the host's /lib/modules (same kernel);
# the kernel's own module requests (rxe's crc32, ...) go there too.
printf '#!/bin/sh\nexec /bin/chroot %s /sbin/modprobe "$@"\n' $H >/tmp/modprobe
chmod 0755 /tmp/modprobe
echo /tmp/modprobe >/proc/sys/kernel/modprobe
in_host modprobe -a virtio_net crc32_generic rdma_rxe ib_uverbs rdma_cm rdma_ucm
ip addr add 10.77.0.$me/24 dev eth0
ip link set eth0 up
ok=1
for i in $(seq 60); do
	if ping -c 1 -W 1 10.77.0.$other >/dev/null 2>&1; then
		ok=0
		break
	fi
done
case_result ping-peer $ok "10.77.0.$other unreachable"
check rxe-add rdma link add rxe0 type rxe netdev eth0
echo "# node $DMAPLANE_NODE: $(rdma link show rxe0/1 2>&1)"
# (a module without the remote transport has no port parameter)
insmod $D/dmaplane.ko port=$port 2>/dev/null || insmod $D/dmaplane.ko
case_result insmod $?
dp_add="dpctl peer add: $("$D"/dpctl peer add 10.77.0.$other 2>&1 | tr '\n' ' ')"
dp_peer=$dp_add
for i in $(seq 20); do
	if "$D"/dpctl -j peer list 2>/dev/null | grep -q '"up"'; then
		dp_peer="up after $i s"
		break
	fi
	dp_peer="$dp_add; not up after ${i} s: $("$D"/dpctl -j peer list 2>&1 | tr '\n' ' ')"
	sleep 1
done
echo "# node $DMAPLANE_NODE: dmaplane peer 10.77.0.$other: $dp_peer"

# ---- lockstep ---------------------------------------------------------

step=0
barrier() {	# PORT: node 0 connects, node 1 accepts (bounded both ways)
	if [ "$DMAPLANE_NODE" = 0 ]; then
		for i in $(seq 120); do
			echo go | nc -w 5 $srv "$1" >/dev/null 2>&1 && return 0
			sleep 1
		done
		echo "# barrier $1: node 1 never answered"
		return 1
	fi
	timeout 600 nc -l -p "$1" >/dev/null 2>&1 </dev/null
}

# test LABEL SLOT_S SERVER_CMD CLIENT_CMD: SERVER_CMD and CLIENT_CMD are
# shell command lines (node 1, node 0); SLOT_S bounds each.
test_peer() {
	label=$1 slot=$2 scmd=$3 ccmd=$4
	step=$((step + 1))
	bport=$((19100 + 2 * step))
	barrier $bport || return
	if [ "$DMAPLANE_NODE" = 1 ]; then
		echo "# $label: server: $scmd"
		sh -c "exec timeout $slot $scmd" >/tmp/server.log 2>&1 &
		spid=$!
		barrier $((bport + 1))
		kill "$spid" 2>/dev/null
		wait "$spid"
		echo "# $label: server exit $?"
		# the cause first (a backtrace's tail says little), then the end
		grep -m 2 -iE 'fatal|error|invalid|unable' /tmp/server.log
		tail -3 /tmp/server.log
		return
	fi
	sleep 3
	echo "DMAPLANE-PEER-BEGIN $label"
	echo "# client: $ccmd"
	rc=1
	for try in 1 2 3 4; do
		sh -c "exec timeout $slot $ccmd" >/tmp/client.log 2>&1
		rc=$?
		[ $rc = 0 ] && break
		# Only "server not up yet" is worth another try: a run that
		# went on for long has used the server.
		grep -qiE 'refused|unable to connect|couldn.t connect|resolve' /tmp/client.log || break
		sleep 5
	done
	cat /tmp/client.log
	echo "DMAPLANE-PEER-END $label rc=$rc"
	barrier $((bport + 1))
}

hc() {	# a host command line for test_peer: chroot with a clean environment
	echo "chroot $H /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp TMPDIR=/tmp $*"
}

echo "DMAPLANE-BENCH-BEGIN"
echo "# node $DMAPLANE_NODE, kernel $(uname -r), $(nproc) CPUs, QEMU TCG"

# dp-bench: the server serves whichever mode the client asks for.
n=${DMAPLANE_BENCH_ITERS:-200}
# First both ends on node 0 (--peer 127.0.0.1: the remote modes' code
# with dmaplane's local transport) while node 1 waits at the barrier.
if [ "$DMAPLANE_NODE" = 0 ]; then
	for m in rlat rbw rrate; do
		case $m in rlat) it=$n ;; rbw) it=$((n / 20)) ;; rrate) it=$n ;; esac
		echo "DMAPLANE-PEER-BEGIN local-$m"
		$D/dp-bench $m --server -p 20990 2>/tmp/local-server.log &
		spid=$!
		timeout 300 $D/dp-bench $m --peer 127.0.0.1 -p 20990 -n $it
		rc=$?
		kill $spid 2>/dev/null
		wait $spid
		cat /tmp/local-server.log
		echo "DMAPLANE-PEER-END local-$m rc=$rc"
	done
fi
# rbw-w64: rbw with OSU's window of 64 messages (bw's -w; the same bytes
# per size, so fewer windows)
for m in rlat rbw rbw-w64 rrate; do
	case $m in
	rbw) mode=rbw args="-n $((n / 20))" ;;
	rbw-w64) mode=rbw args="-n $((n / 20)) -w 64" ;;
	*) mode=$m args="-n $n" ;;
	esac
	test_peer dp-$m 300 "$D/dp-bench $mode --server" \
		"$D/dp-bench $mode --peer $srv $args"
done

# perftest on rxe0 (RoCE v2, GID 1: the IPv4 address of eth0); MB/sec is MiB/s.
pt="-d rxe0 -x 1 -F"
test_peer ib_send_lat-8 120 "$(hc ib_send_lat $pt -p 18601 -s 8 -n 1000)" \
	"$(hc ib_send_lat $pt -p 18601 -s 8 -n 1000 $srv)"
# -e: sleep on CQ events instead of busy polling (dp-bench sleeps in
# dp_wait() after 1024 empty polls; 4 vCPUs busy-polling on 2 host cores
# starve rxe's packet processing)
test_peer ib_send_lat-8-ev 120 "$(hc ib_send_lat $pt -e -p 18605 -s 8 -n 1000)" \
	"$(hc ib_send_lat $pt -e -p 18605 -s 8 -n 1000 $srv)"
test_peer ib_send_lat-1M 120 "$(hc ib_send_lat $pt -p 18602 -s 1048576 -n 20)" \
	"$(hc ib_send_lat $pt -p 18602 -s 1048576 -n 20 $srv)"
test_peer ib_write_bw-1M 120 "$(hc ib_write_bw $pt -p 18603 -s 1048576 -n 200)" \
	"$(hc ib_write_bw $pt -p 18603 -s 1048576 -n 200 $srv)"
test_peer ib_read_bw-1M 120 "$(hc ib_read_bw $pt -p 18604 -s 1048576 -n 200)" \
	"$(hc ib_read_bw $pt -p 18604 -s 1048576 -n 200 $srv)"

# UCX over rc_verbs on rxe0 (lat: half round trip; bw: MiB/s).  rc_verbs
# alone cannot wire up ("no auxiliary transport"): first ud_verbs:aux
# carries only the wireup, as in UCX's own "rc" alias; then tcp (rc_verbs
# is UCX's choice for the data lanes, as it estimates it faster).
for tls in rc_verbs,ud_verbs:aux rc_verbs,tcp; do
	ucx="UCX_TLS=$tls UCX_NET_DEVICES=rxe0:1,eth0"
	w=${tls#rc_verbs,}
	w=${w%:aux}
	test_peer ucx-$w-tag_lat-8 150 "$(hc env $ucx ucx_perftest -p $((18610 + step)))" \
		"$(hc env $ucx ucx_perftest $srv -p $((18610 + step)) -t tag_lat -s 8 -n 1000)"
	test_peer ucx-$w-tag_bw-1M 150 "$(hc env $ucx ucx_perftest -p $((18610 + step)))" \
		"$(hc env $ucx ucx_perftest $srv -p $((18610 + step)) -t tag_bw -s 1048576 -n 100)"
done

# libfabric: verbs through the RDM utility provider, verbs' own connected
# (MSG, rdma_cm) endpoints, and tcp
for pe in "verbs;ofi_rxm:rdm" verbs:msg tcp:rdm; do
	p=${pe%:*} e=${pe#*:}
	pl=$(echo "$p" | tr ';' '+')-$e
	for s in 8:1000 1048576:50; do
		port=$((18620 + step))
		test_peer "fi_pingpong-$pl-${s%:*}" 120 \
			"$(hc fi_pingpong -p "'$p'" -e $e -B $port -S ${s%:*} -I ${s#*:})" \
			"$(hc fi_pingpong -p "'$p'" -e $e -P $port -S ${s%:*} -I ${s#*:} $srv)"
	done
done

# TCP baselines
test_peer iperf3 60 "$(hc iperf3 -s -1 -p 18631)" \
	"$(hc iperf3 -c $srv -p 18631 -t 5 -f m)"
test_peer qperf-tcp_lat 60 "$(hc qperf -lp 18632)" \
	"$(hc qperf $srv -lp 18632 -t 3 -m 8 tcp_lat)"
test_peer qperf-tcp_bw 60 "$(hc qperf -lp 18633)" \
	"$(hc qperf $srv -lp 18633 -t 3 -m 1M tcp_bw)"

# dp-kvstore (examples/kvstore.c, the parameter server) between the nodes:
# its server on node 1, its worker on node 0, over dmaplane (the module's
# transport on rxe0) and over ZeroMQ on tcp://, the seed's comparison
# across nodes.  Fewer rounds and pushes than on one node: a 4 KiB round
# trip between two TCG VMs takes tens of milliseconds.
if [ -x $D/dp-kvstore ]; then
	kvo="-S 4096,1048576 -n 100 -W 5 -p 400"
	test_peer kvstore-dmaplane 900 \
		"$D/dp-kvstore -t dmaplane --role server --rank 0 --addr '*:21600' $kvo" \
		"$D/dp-kvstore -t dmaplane --role worker --rank 0 --addr $srv:21600 $kvo"
	if $D/dp-kvstore --help | grep -q '^ZeroMQ: built in'; then
		test_peer kvstore-zmq-tcp 900 \
			"$D/dp-kvstore -t zmq --role server --rank 0 --addr tcp://*:21601 $kvo" \
			"$D/dp-kvstore -t zmq --role worker --rank 0 --addr tcp://$srv:21601 $kvo"
	fi
else
	echo "# dp-kvstore: not built"
fi

# NetPIPE (netpipe-openmpi's NPopenmpi) under Open MPI 4.1.4, one rank per
# node: ob1 over TCP, UCX (rc_verbs on rxe0, tcp for wire-up; under pml
# ucx MPI_Init still fails with "no auxiliary transport" here, with or
# without self, while ucx_perftest runs with the same transports: to be
# found out) and dmaplane's provider (pml cm, mtl ofi;
# dmaplane.fabric_build=<host path of build/> names the provider).  -n 5 repeats per size: across two TCG
# VMs a 64 KiB round trip takes ~0.3 s.  There is no ssh in the VMs:
# mpirun on node 0 starts orted on node 1 through /tmp/rsh-agent, which
# hands orted's command line to node 1's test_peer "server" (nc on
# $MPIPORT), which runs it in the chroot, as jobs/fabric2.sh does.
B=$(cmdline dmaplane.fabric_build "")
MPIPORT=19290
hostname dmaplane-node$DMAPLANE_NODE	# Open MPI: two nodes, two names
mpi_rsh_agent $MPIPORT
cat >/tmp/orted-once <<-EOF
	#!/bin/sh
	# one orted command line from node 0's mpirun, run in the chroot
	cmd=\$(nc -l -p $MPIPORT </dev/null)
	cmd=\$(echo "\$cmd" | sed 's/ --daemonize//')
	exec chroot $H /usr/bin/env -i PATH=/usr/bin:/bin HOME=/tmp TMPDIR=/tmp \\
		FI_PROVIDER_PATH=$B/fabric LD_LIBRARY_PATH=$B sh -c "\$cmd"
	EOF
chmod 0755 /tmp/orted-once
mpi2="--allow-run-as-root -np 2 --host 10.77.0.1:1,10.77.0.2:1"
mpi2="$mpi2 --mca plm_rsh_agent /tmp/rsh-agent --mca plm_rsh_no_tree_spawn 1"
mpi2="$mpi2 --mca oob_tcp_if_include eth0 --mca btl_tcp_if_include eth0"
np2() {	# NAME MPIRUN-OPTIONS...
	name=$1
	shift
	test_peer netpipe-$name 900 /tmp/orted-once \
		"$(hc FI_PROVIDER_PATH=$B/fabric LD_LIBRARY_PATH=$B mpirun $mpi2 "$*" \
			NPopenmpi -l 8 -u 1048576 -p 0 -n 5 -o /tmp/np2-$name.out)"
}
if chroot $H test -x /usr/bin/mpirun && [ -x $H/usr/bin/NPopenmpi ]; then
	np2 ob1-tcp --mca pml ob1 --mca btl self,tcp
	np2 ucx --mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any \
		-x UCX_TLS=self,rc_verbs,tcp -x UCX_NET_DEVICES=rxe0:1,eth0
	if [ -n "$B" ] && [ -e "$H$B/fabric/libdmaplane-fi.so" ]; then
		np2 dmaplane -x FI_PROVIDER_PATH -x LD_LIBRARY_PATH --mca btl self,tcp \
			--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include dmaplane \
			--mca mtl_base_verbose 10
	else
		echo "# netpipe-dmaplane: no provider (dmaplane.fabric_build=$B; make fabric)"
	fi
else
	echo "# NetPIPE: no NPopenmpi or mpirun on the host (netpipe-openmpi)"
fi
echo "DMAPLANE-BENCH-END"

rmmod dmaplane
exit $fails

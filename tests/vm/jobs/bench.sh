#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make bench (tests/run-bench.sh), and make check's smoke run of it
# (tests/run-bench.sh smoke: dmaplane.bench_smoke=1 on the kernel command
# line, every mode and every peer with tiny sizes and iterations): load
# dmaplane after the RDMA core modules it needs (Debian's kernel has them
# as modules), the soft-RoCE modules shipped with the kernel, add an rxe
# device on lo and run every dp-bench mode, then the peers
# (bench/peers.sh).
#
# Each dp-bench mode is a case, dp-bench-MODE: it fails when dp-bench
# exits non-zero (a dmaplane measurement failed) or a dmaplane column of
# its table says "error" or "n/a" (dmaplane_errors).  peers.sh adds a case
# per peer.  dmaplane.fabric_build=<host path of build/> lets peers.sh
# run NetPIPE over the libfabric provider.
. /dmaplane/jobs/lib.sh

SMOKE=$(cmdline dmaplane.bench_smoke 0)
export SMOKE
# dmaplane.bench_only=NAME,NAME (tests/run-bench.sh with
# DMAPLANE_BENCH_ONLY=): only these dp-bench modes, matchbench,
# kvstore-NAME runs and "peers"
ONLY=$(cmdline dmaplane.bench_only "")

want() {	# NAME: is this part to run?
	[ -z "$ONLY" ] && return 0
	case ",$ONLY," in *",$1,"*) return 0 ;; esac
	return 1
}

check insmod load_dmaplane
for m in crc32_generic udp_tunnel ip6_udp_tunnel ib_uverbs rdma_rxe; do
	[ -e $D/kmods/$m.ko ] && insmod $D/kmods/$m.ko
done
ip link set lo up
if rdma link add rxe0 type rxe netdev lo; then
	echo "# rxe0 on lo: $(rdma link show rxe0/1 | grep -o 'state [A-Z]*')"
else
	echo "# no rxe device: ibv_reg_mr column will be n/a"
fi

# dmaplane_errors: the rows of dp-bench's tables (stdin) whose dmaplane
# cell says "error" or "n/a".  Sizes print as two words ("64 KiB") under
# one header word ("size"), hence the offset.
dmaplane_errors() {
	awk '
	/^(size|N) / {
		cols = ""
		if ($2 == "thp") {	# bwdiag: the three dp-* columns
			cols = " 3 4 5"
		} else {
			for (i = 1; i <= NF; i++)
				if ($i ~ /^(dmaplane|dp_cold|dp_cached|latency|dp_rs|rs_uring|rs_sqpoll|spec1000|wild1000)$/)
					cols = cols " " i
		}
		next
	}
	/^# dmaplane: n\/a/ { print; next }	# rlat, rbw, rrate
	/^#/ { next }
	NF == 0 { cols = ""; next }
	$1 ~ /^(dmaplane|dp_uring|dp_sqpoll)$/ && ($2 == "error" || $2 == "n/a") { print; next }
	$3 == "dmaplane" && $4 ~ /^error/ { print; next }	# overlap
	cols != "" {
		off = $2 ~ /^(B|KiB|MiB|GiB)$/ ? 1 : 0
		n = split(cols, c, " ")
		for (k = 1; k <= n; k++) {
			v = $(c[k] + off)
			if (v == "error" || v == "n/a") {
				print
				break
			}
		}
	}'
}

# bench MODE ARGS...: dp-bench MODE, bounded; case dp-bench-MODE.
# rlat, rbw and rrate run their server on this node (--peer 127.0.0.1:
# the remote modes' code over dmaplane's local transport).
bench() {
	mode=$1
	shift
	want "$mode" || return 0
	spid=
	case $mode in
	rlat|rbw|rrate)
		$D/dp-bench "$mode" --server -p 20990 2>/tmp/server.log &
		spid=$!
		set -- --peer 127.0.0.1 -p 20990 "$@"
		;;
	esac
	timeout "$TMO" $D/dp-bench "$mode" "$@" >/tmp/bench.out 2>/tmp/bench.err
	rc=$?
	if [ -n "$spid" ]; then
		# (the shell's "Terminated" about the server is not a result)
		{ kill "$spid"; wait "$spid"; } 2>/dev/null
		sed 's/^/# server: /' /tmp/server.log
	fi
	cat /tmp/bench.out
	sed 's/^/# stderr: /' /tmp/bench.err
	bad=$(dmaplane_errors </tmp/bench.out)
	[ $rc = 0 ] && [ -z "$bad" ]
	case_result "dp-bench-$mode" $? "rc=$rc $(echo $bad)"
	echo
}

# kvstore NAME TRANSPORT ARGS...: examples/kvstore.c (dp-kvstore) over
# dmaplane or ZeroMQ, bounded; case kvstore-NAME (a wrong pulled value or
# a failed transfer is a non-zero exit).  Its "kvstore ..." lines are the
# numbers.  dmaplane-single: dmaplane with a system call per operation
# (--no-batch), to show what dp_submit() batching buys.
kvstore() {
	name=$1
	t=$2
	shift 2
	want "kvstore-$name" || return 0
	if [ ! -x $D/dp-kvstore ]; then
		echo "DMAPLANE-CASE kvstore-$name SKIP dp-kvstore not built"
		return 0
	fi
	timeout "$TMO" $D/dp-kvstore -t "$t" -P 21500 "$@" >/tmp/kv.out 2>&1
	rc=$?
	cat /tmp/kv.out
	case_result "kvstore-$name" $rc "rc=$rc $(tail -2 /tmp/kv.out | tr '\n' ' ')"
	echo
}

# matchbench MAX-DEPTH OPS: the tag matcher alone against a list-walking
# matcher (kmod/matchbench.c: loading dmaplane_matchbench.ko runs it and
# prints its table to the kernel log; a wrong match fails the load);
# case matchbench.
matchbench() {
	want matchbench || return 0
	if [ ! -e $D/dmaplane_matchbench.ko ]; then
		echo "DMAPLANE-CASE matchbench SKIP no dmaplane_matchbench.ko"
		return 0
	fi
	n=$(dmesg | wc -l)
	timeout "$TMO" insmod $D/dmaplane_matchbench.ko max_depth=$1 ops=$2
	rc=$?
	echo "# matchbench: the tag matcher alone, ns per operation at queue depth D;"
	echo "# dmaplane = kmod/match.c (hash tables for exact tags), list = one"
	echo "# list per queue searched from its head; the entry matched is the deepest"
	dmesg | tail -n +$((n + 1)) | sed -n 's/^\(\[[^]]*\] *\)\{0,1\}dmaplane_matchbench: //p' |
		grep -v '^the tag matcher'
	echo
	[ $rc = 0 ] && rmmod dmaplane_matchbench
	case_result matchbench $rc "insmod rc=$rc"
}

# profile NAME: Linux perf (the host's, in its root) samples one
# dp-bench run with call chains and prints where its time goes (no
# numbers of the run itself matter: the sampling slows everything).
# self: path's RECV+SEND to itself (one process, no wake-up); rs: path's
# ping-pong between two processes; rate: rate's dmaplane row.
profile() {
	case $1 in
	self) args="path -o self_0B,self_8B -n 100000" ;;
	rs) args="path -o dp_rs_8B -n 20000" ;;
	rate) args="rate -o dmaplane -n 3000" ;;
	# dmaplane's bw alone, from 1 KiB to 64 KiB and to 1 MiB (most of
	# the time at the largest size); both CPUs (-a: the helpers of
	# split copies run in kworkers, and the idle time shows)
	bw64k) args="bw -o dmaplane -m 65536 -n 1000" ;;
	bw1m) args="bw -o dmaplane -m 1048576 -n 400" ;;
	# the scheduler's view of bw64k: who runs on which CPU when, and how
	# long each wake-up waits for its CPU (perf sched, both CPUs)
	sched64k)
		args="bw -o dmaplane -m 65536 -n 300"
		# the tracepoints, for perf in the chroot
		grep -q " $H/sys/kernel/tracing " /proc/mounts ||
			mount -t tracefs tracefs $H/sys/kernel/tracing
		ev=sched:sched_switch,sched:sched_wakeup
		ev=$ev,workqueue:workqueue_execute_start,workqueue:workqueue_execute_end
		echo "# profile $1: perf record -a -g -e $ev -- dp-bench $args"
		# shellcheck disable=SC2086
		in_host env LD_LIBRARY_PATH="$B" perf record -a -g -q -e $ev \
			-o /tmp/sched.data -- "$B/dp-bench" $args
		rc=$?
		echo "# profile $1: events of the 64 KiB windows, 6 frames of stack each"
		in_host perf script -i /tmp/sched.data --max-stack 6 2>&1 |
			tail -4000 | head -1500
		case_result "profile-$1" $rc "perf record rc=$rc"
		return ;;
	*) case_result "profile-$1" 1 "no such profile"; return ;;
	esac
	all=
	case $1 in bw*) all=-a ;; esac
	echo "# profile $1: perf record $all -g -e cpu-clock -F 4000 -- dp-bench $args"
	# shellcheck disable=SC2086
	in_host env LD_LIBRARY_PATH="$B" perf record $all -q -g -e cpu-clock -F 4000 \
		-o /tmp/perf.data -- "$B/dp-bench" $args
	rc=$?
	echo "# profile $1: self time by symbol"
	in_host perf report -i /tmp/perf.data --stdio --no-children --sort sym \
		--percent-limit 0.4 -g none 2>&1 | grep -v '^#' | grep .
	echo "# profile $1: with callees (children)"
	in_host perf report -i /tmp/perf.data --stdio --children --sort sym \
		--percent-limit 0.7 -g none 2>&1 | grep -v '^#' | grep .
	case_result "profile-$1" $rc "perf record rc=$rc"
}

# split_ab: only when asked for (DMAPLANE_BENCH_ONLY=bwsplit): dp-bench bw
# with copies split with a helper (copy_split_min's default) and not
# (0), alternately A B A B in this one boot, so that the host's drift
# between two VM runs does not decide the comparison.
split_ab() {
	[ -n "$ONLY" ] && want bwsplit || return 0
	p=/sys/module/dmaplane/parameters/copy_split_min
	def=$(cat $p)
	rc=0
	for round in 1 2; do
		for v in 0 "$def"; do
			echo "$v" >$p
			echo "# bwsplit round $round: copy_split_min=$v"
			timeout "$TMO" $D/dp-bench bw -n 50 || rc=1
			grep '^copies_split' /sys/kernel/debug/dmaplane/stats | sed 's/^/# /'
		done
	done
	echo "$def" >$p
	case_result bwsplit $rc "rc=$rc"
}

echo "# kernel $(uname -r), $(nproc) CPUs, QEMU TCG"
# dmaplane.bench_profile=NAME,NAME (DMAPLANE_BENCH_PROFILE=): only these
# profiles, not the bench
PROFILE=$(cmdline dmaplane.bench_profile "")
if [ -n "$PROFILE" ]; then
	. $D/bench/hostroot.sh
	B=$(cmdline dmaplane.fabric_build "")
	if ! hostroot_mount || ! [ -x $H/usr/bin/perf ]; then
		case_result profile 1 "no host root or no perf in it (scripts/deps.sh bench)"
	else
		echo 0 >/proc/sys/kernel/kptr_restrict
		echo -1 >/proc/sys/kernel/perf_event_paranoid
		echo "DMAPLANE-BENCH-BEGIN"
		for p in $(echo "$PROFILE" | tr , ' '); do
			profile "$p"
		done
		echo "DMAPLANE-BENCH-END"
	fi
	check rmmod rmmod dmaplane
	exit $fails
fi
# dmaplane.bench_ab=ROUNDS (DMAPLANE_BENCH_AB=DIR): instead of the bench,
# module A ($D/ab/dmaplane.ko) and module B (this tree's) loaded in turn,
# A B A B ..., each running the dp-bench modes of dmaplane.bench_only
# (default rate,path; "kvstore" runs dp-kvstore over dmaplane, 4 KiB and
# 1 MiB, eight times make bench's rounds and pushes), and the module's
# copies_* and msg_reg* counters after each: a change measured in one
# boot, where the host's drift between two VM runs cannot decide it.
# Without $D/ab/dmaplane.ko (DMAPLANE_BENCH_AB=self) A is this tree's
# module too.  dmaplane.bench_ab_pa / bench_ab_pb: module parameters of A
# and B (NAME=VALUE,...); dmaplane.bench_ab_args: more dp-bench arguments
# (commas for spaces), for both; bench_ab_aa / bench_ab_ab: for A / for B
# only (the same module twice, two ways of running dp-bench).
AB=$(cmdline dmaplane.bench_ab 0)
if [ "$AB" != 0 ]; then
	AB_ARGS=$(cmdline dmaplane.bench_ab_args "" | tr , ' ')
	echo "DMAPLANE-BENCH-BEGIN"
	TMO=1800
	rc=0
	for round in $(seq "$AB"); do
		for m in A B; do
			ko=$D/dmaplane.ko
			params=$(cmdline dmaplane.bench_ab_pb "" | tr , ' ')
			margs=$(cmdline dmaplane.bench_ab_ab "" | tr , ' ')
			if [ $m = A ]; then
				[ -e $D/ab/dmaplane.ko ] && ko=$D/ab/dmaplane.ko
				params=$(cmdline dmaplane.bench_ab_pa "" | tr , ' ')
				margs=$(cmdline dmaplane.bench_ab_aa "" | tr , ' ')
			fi
			# shellcheck disable=SC2086
			if ! rmmod dmaplane || ! insmod "$ko" $params; then
				rc=1
				break 2
			fi
			echo "# ab round $round: module $m $params${margs:+ (dp-bench $margs)}"
			for mode in $(echo "${ONLY:-rate,path}" | tr , ' '); do
				if [ "$mode" = kvstore ]; then
					timeout "$TMO" $D/dp-kvstore -t dmaplane -n 8000 \
						-p 16000 || rc=1
					continue
				fi
				case $mode in
				bw) n=50 ;;
				path) n=2000 ;;
				*) n=200 ;;
				esac
				# shellcheck disable=SC2086
				timeout "$TMO" $D/dp-bench "$mode" -n $n $AB_ARGS $margs ||
					rc=1
			done
			grep '^copies_\|^msg_reg' /sys/kernel/debug/dmaplane/stats | tr '\n' ' '
			echo
		done
	done
	case_result ab $rc "rc=$rc"
	echo "DMAPLANE-BENCH-END"
	check rmmod rmmod dmaplane
	exit $fails
fi
echo "DMAPLANE-BENCH-BEGIN"
if [ "$SMOKE" = 1 ]; then
	# make check: every mode, a few iterations, small messages (the
	# sizes in a mode's table up to -m)
	echo "# smoke run: tiny sizes and iterations, the numbers mean nothing"
	TMO=120
	bench reg -m 1048576 -n 2
	bench lat -m 65536 -n 5
	bench bw -m 65536 -n 2
	bench rate -n 5
	bench overlap -m 1048576 -n 1
	bench scaling -n 5
	bench path -n 5
	bench bwdiag -m 1048576 -n 1
	bench rlat -m 1024 -n 5
	bench rbw -m 16384 -n 2
	bench rrate -n 5
	matchbench 1000 20
	for t in dmaplane zmq-ipc zmq-tcp; do
		kvstore $t $t -S 4096,65536 -n 20 -W 2 -p 64
	done
	kvstore dmaplane-single dmaplane --no-batch -S 4096,65536 -n 20 -W 2 -p 64
	kvstore dmaplane-poll dmaplane --busy-poll -S 4096,65536 -n 20 -W 2 -p 64
	kvstore zmq-ipc-poll zmq-ipc --busy-poll -S 4096,65536 -n 20 -W 2 -p 64
else
	TMO=1800
	bench reg -m "${DMAPLANE_BENCH_MAX:-1073741824}" -n 5
	bench lat -n 200
	bench bw -n 50
	bench rate -n 200
	bench overlap -n 5
	bench scaling -n 200
	bench path -n 2000
	bench bwdiag -n 3
	bench rlat -n 200
	bench rbw -n 10
	bench rrate -n 200
	matchbench 100000 200
	# the seed's comparison: a parameter server over dmaplane and ZeroMQ
	for t in dmaplane zmq-ipc zmq-tcp; do
		kvstore $t $t
	done
	kvstore dmaplane-single dmaplane --no-batch
	# both waiting by polling (as latency benchmarks and MPI do) instead
	# of sleeping: one server and one worker on the 2 vCPUs
	kvstore dmaplane-poll dmaplane --busy-poll
	kvstore zmq-ipc-poll zmq-ipc --busy-poll
	split_ab
fi
if want peers; then
	sh $D/bench/peers.sh
	fails=$((fails + $?))
fi
echo "DMAPLANE-BENCH-END"
check rmmod rmmod dmaplane
exit $fails

# SPDX-License-Identifier: GPL-2.0
# Helpers for guest jobs.  Records understood by tests/vm/results.py:
#   DMAPLANE-CASE <name> PASS|FAIL|SKIP [reason]
#   DMAPLANE-BEGIN <kind> <name> ... DMAPLANE-END <kind> <name> rc=<n>
# where <kind> is kselftest (TAP inside), ktap (KUnit output inside) or
# kmemleak (the kmemleak report inside).

D=/dmaplane
fails=0

# cmdline NAME DEFAULT: the value of NAME=VALUE on the kernel command
# line (the last one given wins, as with module parameters), or DEFAULT.
cmdline() {
	val=$2
	for arg in $(cat /proc/cmdline); do
		case $arg in
		"$1"=*) val=${arg#*=} ;;
		esac
	done
	echo "$val"
}

# uptime: the guest's seconds since boot (each case's line is preceded by
# "# at N s": where a job spends its time shows in its results log)
uptime() {
	cut -d' ' -f1 /proc/uptime
}

case_result() {	# name rc [reason]
	echo "# at $(uptime) s"
	if [ "$2" = 0 ]; then
		echo "DMAPLANE-CASE $1 PASS"
	else
		echo "DMAPLANE-CASE $1 FAIL ${3:-rc=$2}"
		fails=$((fails + 1))
	fi
}

check() {	# name command...
	name=$1
	shift
	"$@"
	case_result "$name" $?
}

# jiffies: the kernel's jiffies now (as kmemleak stamps an allocation)
jiffies() {
	sed -n 's/^jiffies: //p' /proc/timer_list | head -1
}

# kmemleak_reset: from now on, the job's.  The report at its end leaves
# out the objects allocated before this moment (kmemleak's report gives
# each object's allocation in jiffies): leaks of the boot are not the
# job's.  (Forgetting them with kmemleak's "clear" would need two scans
# first, as kmemleak reports an object the second time a scan finds it
# unreferenced: more than three minutes of a TCG vCPU with KASAN.  What
# the age misses is an object older than the job that the job leaves
# unreferenced.)
kmemleak_reset() {
	kmemleak_on || return 0
	KMEMLEAK_SINCE=$(jiffies)
}

# kmemleak_on: the kernel has kmemleak, and kmemleak=off did not turn it
# off at boot (make check's libfabric jobs: their kernel paths are the
# suite's, make soak judges them with kmemleak)
kmemleak_on() {
	[ -w /sys/kernel/debug/kmemleak ] && ! grep -qw 'kmemleak=off' /proc/cmdline
}

kmemleak_report() {
	if [ ! -w /sys/kernel/debug/kmemleak ]; then
		echo "DMAPLANE-CASE kmemleak SKIP kernel without kmemleak"
		return 0
	fi
	if ! kmemleak_on; then
		echo "DMAPLANE-CASE kmemleak SKIP kmemleak=off on the kernel command line"
		return 0
	fi
	# An object must be seen unreferenced by two scans, the first one
	# at least 5 s after it was allocated.
	sleep 6
	t=$(uptime)
	echo scan >/sys/kernel/debug/kmemleak
	echo scan >/sys/kernel/debug/kmemleak
	echo "# kmemleak scans: $t to $(uptime) s"
	echo "DMAPLANE-BEGIN kmemleak report"
	# shellcheck disable=SC2016 # awk's own $ fields
	awk -v since="${KMEMLEAK_SINCE:-0}" '
		/^unreferenced object / {
			flush()
			block = $0
			next
		}
		block != "" {
			block = block "\n" $0
			if ($1 == "comm" && match($0, /jiffies [0-9]+/))
				old = substr($0, RSTART + 8, RLENGTH - 8) + 0 < since + 0
			next
		}
		{ print }
		function flush() {
			if (block == "")
				return
			if (old)
				before++
			else
				print block
			block = ""
			old = 0
		}
		END {
			flush()
			if (before)
				print "(" before " unreferenced objects allocated before the job left out)"
		}' /sys/kernel/debug/kmemleak
	echo "DMAPLANE-END kmemleak report rc=0"
}

run_kselftest() {	# program
	name=$(basename "$1")
	echo "DMAPLANE-BEGIN kselftest $name"
	"$1"
	rc=$?
	echo "DMAPLANE-END kselftest $name rc=$rc"
	[ $rc = 0 ] || fails=$((fails + 1))
}

# run_watched SECONDS COMMAND...: run COMMAND; when it has not ended
# after SECONDS, print what every task of it and every kernel thread in
# uninterruptible sleep is waiting in (state, wchan, kernel stack), kill
# it and return 124.  A job that hangs then says where, instead of
# running into the VM's timeout.  Otherwise: COMMAND's status.
run_watched() {
	limit=$1
	shift
	"$@" &
	wpid=$!
	waited=0
	while kill -0 $wpid 2>/dev/null && [ $waited -lt "$limit" ]; do
		sleep 1
		waited=$((waited + 1))
	done
	if kill -0 $wpid 2>/dev/null; then
		echo "run_watched: $1 still running after $limit s: its tasks and blocked threads"
		for t in /proc/[0-9]*/task/[0-9]*; do
			st=$(sed -n 's/^State:[[:space:]]*//p' $t/status 2>/dev/null)
			case "$(cat $t/comm 2>/dev/null) $st" in
			"${1##*/} "*|*" D "*) ;;
			*) continue ;;
			esac
			echo "task ${t#/proc/} $(cat $t/comm) state $st wchan $(cat $t/wchan 2>/dev/null)"
			sed 's/^/    /' $t/stack 2>/dev/null
		done
		sed 's/^/    stats: /' /sys/kernel/debug/dmaplane/stats
		pkill -KILL -x "${1##*/}"
		wait $wpid
		return 124
	fi
	wait $wpid
}

run_kunit() {	# module
	if [ ! -e "$1" ]; then
		echo "DMAPLANE-CASE kunit SKIP kernel without KUnit"
		return 0
	fi
	dmesg -c >/dev/null
	insmod "$1"
	rc=$?
	echo "DMAPLANE-BEGIN ktap $(basename "$1" .ko)"
	dmesg | sed 's/^\[[ 0-9.]*\] //'
	echo "DMAPLANE-END ktap $(basename "$1" .ko) rc=$rc"
	rmmod "$(basename "$1" .ko)"
}

# load_dmaplane: insmod dmaplane.ko, after the RDMA core modules when the
# kernel has them as modules (Debian's; the test kernel has them built in).
load_dmaplane() {
	for m in configfs ib_core ib_cm iw_cm rdma_cm; do
		[ -e $D/kmods/$m.ko ] && insmod $D/kmods/$m.ko
	done
	insmod $D/dmaplane.ko "$@"
}

# need_prog NAME: end the job with a SKIP case NAME when $D/NAME (a test
# program the initramfs holds only when it was built) is missing.
need_prog() {
	[ -x "$D/$1" ] && return 0
	echo "DMAPLANE-CASE $1 SKIP no $D/$1 in the initramfs"
	exit 0
}

# job_load [PARAM=VALUE...]: kmemleak judges only what comes after (kmemleak_reset),
# then load dmaplane with those parameters (case "insmod").
job_load() {
	kmemleak_reset
	check insmod load_dmaplane "$@"
}

# counters_zero NAME [TRIES [SECS]]: case NAME passes when every counter
# of the module is zero (but invalidations and the copies_*, msg_reg* and
# recv_inline counters, which count events and only grow); read up to
# TRIES times (default once), SECS (default 1) apart.
counters_zero() {
	tries=${2:-1}
	i=0
	while :; do
		left=$(grep -v -e '^invalidations ' -e '^copies_' -e '^msg_reg' \
			-e '^recv_inline ' /sys/kernel/debug/dmaplane/stats | grep -v ' 0$')
		[ -z "$left" ] && break
		i=$((i + 1))
		[ $i -ge "$tries" ] && break
		sleep "${3:-1}"
	done
	[ -z "$left" ] && { case_result "$1" 0; return; }
	case_result "$1" 1 "$(echo $left)$(transport_state)"
}

# fail_why OUTPUT: one line on why a program of jobs/fabric.sh or
# jobs/fabric2.sh failed, for its check's verdict (which is all that make
# check's summary shows): the output's last two lines, the provider's
# last two warnings (an fi_av_insert refusal names the kernel's errno
# there) and the module's last three log lines (a connection that broke
# and came back says so there).  Called in $(...): its variables stay there.
fail_why() {
	w=$(tail -2 "$1" | tr '\n' ' ')
	p=$(grep ':dmaplane:' "$1" | tail -2 | tr '\n' ' ')
	k=$(module_log 3)
	echo "$w${p:+ [provider: $p]}${k:+ [kernel: $k]}"
}

# module_log N: the module's last N kernel log lines but its loading's,
# on one line (for a failure's reason)
module_log() {
	dmesg | grep 'dmaplane:' | grep -v 'taints kernel\|loaded, ABI' | tail -"$1" | tr '\n' '|'
}

# transport_state: for a failure's reason, the state of the connections
# to other nodes (debugfs "conns") and the device's non-zero counters
# (rxe's retries, NAKs and drops), on one line; nothing on one node.
transport_state() {
	conns=$(tr '\n' ';' < /sys/kernel/debug/dmaplane/conns 2>/dev/null)
	[ -n "$conns" ] || return 0
	printf ' | conns: %s' "$conns"
	printf ' | device: %s' "$(grep -H . /sys/class/infiniband/*/ports/*/hw_counters/* \
		2>/dev/null | grep -v ':0$' | sed 's|.*/||' | tr '\n' ' ')"
}

# job_end: unload dmaplane (case "rmmod"), report kmemleak, and end the
# job with the number of failures as its status.
job_end() {
	check rmmod rmmod dmaplane
	kmemleak_report
	exit $fails
}

# ---- two nodes (run-vm.sh -n 2: jobs/twonode.sh, jobs/killloop2.sh) ----
# Node 0 is 10.77.0.1, node 1 is 10.77.0.2, both on eth0.

# node_link: address eth0, reach the other node (DMAPLANE_PEER_IP, for
# the helpers below and remote_test), add soft-RoCE on eth0.
node_link() {
	export DMAPLANE_PEER_IP=10.77.0.$((2 - DMAPLANE_NODE))
	ip addr add 10.77.0.$((DMAPLANE_NODE + 1))/24 dev eth0
	ip link set eth0 up
	case_result eth0-up $?
	ok=1
	for i in $(seq 60); do
		if ping -c 1 -W 1 "$DMAPLANE_PEER_IP" >/dev/null 2>&1; then
			ok=0
			break
		fi
	done
	case_result ping-peer $ok "$DMAPLANE_PEER_IP unreachable"
	check rxe-add rdma link add rxe0 type rxe netdev eth0
	rdma link show rxe0/1 | grep -q 'state ACTIVE'
	case_result rxe-active $? "$(rdma link show 2>&1)"
}

# sync_signal NAME / sync_wait NAME: meet the other node's script
# (tests/remote_test.c; bounded by DMAPLANE_SYNC_TIMEOUT).
sync_signal() {
	$D/tests/remote_test --signal "$1"
	case_result "sync-$1" $?
}

sync_wait() {
	$D/tests/remote_test --wait-for "$1"
	case_result "sync-$1" $?
}

# peer_is_up: the peer's connection is "up" in our table within SECS s.
peer_is_up() {	# secs
	for i in $(seq "$1"); do
		$D/dpctl -j peer list 2>/dev/null |
			grep -q "\"addr\":\"$DMAPLANE_PEER_IP\"[^}]*\"state\":\"up\"" &&
			return 0
		sleep 1
	done
	return 1
}

# peer_up: the peer's connection is "up" in our table within SECS (30) s.
peer_up() {	# case-name [secs]
	peer_is_up "${2:-30}"
	case_result "$1" $? "$($D/dpctl -j peer list 2>&1)"
}

# peer_once: after the first peer_up of a boot, the connection that came
# up is the only one (a second one, such as a retry of the node whose first
# attempt the peer refused, would replace it and fail what runs on it).
peer_once() {	# case-name
	sleep 3
	n=$(dmesg | grep -c "dmaplane: connected to")
	[ "$n" = 1 ]
	case_result "$1" $? "$n connections came up: $(dmesg | grep 'dmaplane: conn' | tr '\n' '|')"
}

rmmod_retry() {	# the module, once the processes using it are gone
	for i in $(seq 10); do
		rmmod dmaplane 2>/dev/null && return 0
		sleep 1
	done
	rmmod dmaplane
}

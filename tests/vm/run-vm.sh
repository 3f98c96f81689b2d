#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Boot one or two dmaplane test VMs under QEMU (TCG) and run a guest job.
#
# Usage: run-vm.sh -k BZIMAGE -i INITRD -j JOB -o OUTDIR
#                  [-n NODES] [-t TIMEOUT_S] [-m MEM_MB] [-a EXTRA_CMDLINE] [-R]
#
# -R shares the host's / read-only with the guest over virtio-9p (mount
# tag hostroot), for make bench's peers; off by default.  multidevs=remap:
# files of different host file systems get different inode numbers in
# the guest (without it /proc and /sys, both inode 1, were one directory
# to a guest that caches inodes: tests/vm/bench/hostroot.sh).
# DMAPLANE_QEMU_CPU= overrides the CPU model (max,la57=off), e.g.
# max,la57=off,erms=off,fsrm=off: a CPU without "fast rep movsb", whose
# kernel copies with its unrolled loop (Documentation/bench/).
# DMAPLANE_QEMU_SMP= overrides the vCPUs' topology.  One VM gets two
# sockets of one core: the test kernels (no ACPI) find CPUs only in the
# BIOS's MP table, which lists only the first CPU of each package.  Two
# VMs, and make bench (tests/run-bench.sh), keep QEMU's one socket of two
# cores: one CPU up on the test kernels (why: Documentation/testing.rst).
#
# Node N writes the kernel console to OUTDIR/console-N.log and the job's
# output (second serial port) to OUTDIR/results-N.log.  With -n 2 the two
# VMs share an Ethernet segment: a UNIX stream socket between their
# QEMUs (netsock below; nothing leaves the host).  A job that prints
# DMAPLANE-KILL-VM on its results port is killed (SIGKILL to its QEMU,
# as if the machine died) within a second: that counts as the end of its
# job.  A node whose kernel dies before the job starts (no
# DMAPLANE-GUEST-START from /init: nothing of dmaplane's has run yet)
# stops every node, and the run boots again, once; its console is kept
# as console-N.boot1.log (an upstream boot race under TCG was seen once:
# Documentation/testing.rst).
# Exit status: 0 when every node ran the job to its end (the job's own
# verdict is in results-N.log, judged by tests/vm/results.py), 1 when a
# node crashed, hung past the timeout or never started the job.

set -e

nodes=1
timeout=600
mem=2048
extra=
hostroot=
while getopts k:i:j:o:n:t:m:a:R opt; do
	case $opt in
	k) kernel=$OPTARG ;;
	i) initrd=$OPTARG ;;
	j) job=$OPTARG ;;
	o) out=$OPTARG ;;
	n) nodes=$OPTARG ;;
	t) timeout=$OPTARG ;;
	m) mem=$OPTARG ;;
	a) extra=$OPTARG ;;
	R) hostroot="-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap -device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot" ;;
	*) echo "usage: see $0" >&2; exit 2 ;;
	esac
done
if [ "$nodes" -gt 1 ]; then
	smp=${DMAPLANE_QEMU_SMP:-2}
else
	smp=${DMAPLANE_QEMU_SMP:-2,sockets=2,cores=1,threads=1}
fi
[ -n "$kernel" ] && [ -n "$initrd" ] && [ -n "$job" ] && [ -n "$out" ] ||
	{ echo "run-vm: -k, -i, -j and -o are required" >&2; exit 2; }

mkdir -p "$out"
# The two VMs' link: a UNIX stream socket between their QEMUs (one per
# run), not QEMU's "socket" netdev (TCP on loopback, whose Nagle algorithm
# delayed back-to-back frames: Documentation/bench/2026-12-06-link.rst).
netsock=/tmp/dmaplane-net-$$.sock
# Removed at the end, and when this script is stopped by a signal.
trap 'rm -f "$netsock"' EXIT
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

start_node() {
	n=$1
	net=
	if [ "$nodes" -gt 1 ]; then
		if [ "$n" = 0 ]; then
			server=on
		else
			server=off
		fi
		net="-netdev stream,id=net0,server=$server,addr.type=unix,addr.path=$netsock"
		net="$net -device virtio-net-pci,netdev=net0,mac=52:54:00:d9:00:0$n"
	fi
	rm -f "$out/console-$n.log" "$out/results-$n.log"
	# rcu_cpu_stall_timeout=300 (its maximum; 21 s by default): a TCG
	# guest starved by three more VMs on the host's two cores once dumped
	# an RCU stall (the grace-period kthread not run for 23 s), which is
	# the host, not the guest; hung tasks still show after 120 s.
	# shellcheck disable=SC2086
	timeout -k 10 "$timeout" qemu-system-x86_64 \
		-M pc -cpu "${DMAPLANE_QEMU_CPU:-max,la57=off}" -smp "$smp" -m "$mem" \
		-nodefaults -display none -no-reboot \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 mitigations=off rcupdate.rcu_cpu_stall_timeout=300 dmaplane.job=$job dmaplane.node=$n $extra" \
		-serial "file:$out/console-$n.log" \
		-serial "file:$out/results-$n.log" \
		$net $hostroot >"$out/qemu-$n.log" 2>&1 &
	eval "pid$n=\$!"
}

# watch_node N: SIGKILL node N's QEMU once its job asks for it.  Once
# the QEMU has exited without the job having started, mark the node
# (bootfail-N) and stop the other nodes (stopped-M), which would
# otherwise wait for it until their timeout.
watch_node() {
	n=$1
	eval "tpid=\$pid$n"
	while kill -0 "$tpid" 2>/dev/null; do
		if grep -q '^DMAPLANE-KILL-VM' "$out/results-$n.log" 2>/dev/null; then
			pkill -KILL -P "$tpid"	# timeout(1)'s child: QEMU
			echo "run-vm: node $n: killed, as its job asked" >&2
			return
		fi
		sleep 0.2
	done
	grep -q 'DMAPLANE-GUEST-START' "$out/results-$n.log" 2>/dev/null && return
	: >"$out/bootfail-$n"
	m=0
	while [ "$m" -lt "$nodes" ]; do
		eval "opid=\$pid$m"
		if [ "$m" != "$n" ] && pkill -KILL -P "$opid" 2>/dev/null; then
			: >"$out/stopped-$m"
		fi
		m=$((m + 1))
	done
}

# run_nodes: boot every node and start its watcher.
run_nodes() {
	rm -f "$out"/bootfail-* "$out"/stopped-* "$netsock"
	start_node 0
	if [ "$nodes" -gt 1 ]; then
		# node 1 connects to node 0's socket: once it is there (30 s)
		i=0
		while [ ! -S "$netsock" ] && [ "$i" -lt 300 ]; do
			sleep 0.1
			i=$((i + 1))
		done
		start_node 1
	fi
	n=0
	while [ "$n" -lt "$nodes" ]; do
		watch_node "$n" &
		n=$((n + 1))
	done
}

# wait_nodes: wait for every node's QEMU (their exit codes in rcN).
wait_nodes() {
	n=0
	while [ "$n" -lt "$nodes" ]; do
		eval "pid=\$pid$n"
		rc=0
		wait "$pid" || rc=$?
		eval "rc$n=\$rc"
		n=$((n + 1))
	done
	wait	# the watchers
}

# died_at_boot N: did node N's kernel end (QEMU exited 0: panic=-1
# reboots, -no-reboot exits) before its job started?  Sets rc.
died_at_boot() {
	eval "rc=\$rc$1"
	[ -e "$out/bootfail-$1" ] && [ "$rc" = 0 ]
}

# boot_died: did any node's?
boot_died() {
	n=0
	while [ "$n" -lt "$nodes" ]; do
		died_at_boot "$n" && return 0
		n=$((n + 1))
	done
	return 1
}

start=$(date +%s)
run_nodes
wait_nodes
if boot_died; then
	n=0
	while [ "$n" -lt "$nodes" ]; do
		if died_at_boot "$n"; then
			echo "run-vm: node $n: its kernel died before the job started:" >&2
			tail -30 "$out/console-$n.log" >&2
		elif [ -e "$out/stopped-$n" ]; then
			echo "run-vm: node $n: stopped with it" >&2
		fi
		mv "$out/console-$n.log" "$out/console-$n.boot1.log" 2>/dev/null || :
		n=$((n + 1))
	done
	echo "run-vm: booting again (console-N.boot1.log: the first boot)" >&2
	run_nodes
	wait_nodes
fi

status=0
n=0
while [ "$n" -lt "$nodes" ]; do
	eval "rc=\$rc$n"
	tr -d '\r' <"$out/results-$n.log" >"$out/results-$n.tmp" 2>/dev/null || :
	mv "$out/results-$n.tmp" "$out/results-$n.log" 2>/dev/null || :
	if grep -q '^DMAPLANE-KILL-VM' "$out/results-$n.log" 2>/dev/null; then
		:	# killed on request: the end of its job
	elif died_at_boot "$n"; then
		echo "run-vm: node $n: its kernel died before the job started" >&2
		status=1
	elif [ -e "$out/stopped-$n" ]; then
		echo "run-vm: node $n: stopped: another node never started the job" >&2
		status=1
	elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
		echo "run-vm: node $n: timed out after ${timeout}s (job $job)" >&2
		status=1
	elif [ "$rc" != 0 ]; then
		echo "run-vm: node $n: qemu exited $rc:" >&2
		cat "$out/qemu-$n.log" >&2
		status=1
	elif ! grep -q '^DMAPLANE-GUEST-DONE' "$out/results-$n.log" 2>/dev/null; then
		echo "run-vm: node $n: guest stopped before its job ended" >&2
		status=1
	fi
	n=$((n + 1))
done
echo "run-vm: job $job on $nodes node(s): $(($(date +%s) - start)) s" >&2
exit $status

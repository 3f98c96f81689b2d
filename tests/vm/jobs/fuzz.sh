#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The fuzz job: load dmaplane, run the random-ioctl fuzzer (tests/fuzz.c)
# as root and as nobody, then check that every object was released (the
# stats counters are back at zero), that the module unloads and that
# kmemleak found nothing.  The kernel console is judged by results.py.
#
# Kernel command line: dmaplane.fuzz_calls=N (calls in all, half of them
# as root, half as nobody; default 20000), dmaplane.fuzz_seed=S (default
# random; the nobody run uses S+1), dmaplane.fuzz_threads=T (default 4).
. /dmaplane/jobs/lib.sh

calls=$(cmdline dmaplane.fuzz_calls 20000)
seed=$(cmdline dmaplane.fuzz_seed "")
threads=$(cmdline dmaplane.fuzz_threads 4)
[ -n "$seed" ] || seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
echo "fuzz: calls=$calls seed=$seed threads=$threads"

# run_fuzz NAME SEED [fuzz options]: one run, timed.
run_fuzz() {
	name=$1
	s=$2
	shift 2
	t0=$(date +%s)
	# 100,000 calls take about a minute as root under TCG.
	run_watched $((300 + calls / 200)) $D/fuzz -v -n $((calls / 2)) -s "$s" -t "$threads" "$@"
	rc=$?
	echo "fuzz: $name: $(($(date +%s) - t0)) s"
	case_result "$name" $rc "seed=$s rc=$rc"
	# Regions are freed after an RCU grace period and work items may
	# still run: wait a little.
	counters_zero "$name-released" 20 0.5
}

# A bound on pinned and arena memory well below the guest's RAM.
job_load max_pinned_mb=256
# As udev would (udev/60-dmaplane.rules).
chmod 0666 /dev/dmaplane

run_fuzz fuzz-root "$seed"
run_fuzz fuzz-nobody $((seed + 1)) -u 65534:65534

cat /sys/kernel/debug/dmaplane/stats
check rmmod rmmod dmaplane
[ ! -e /dev/dmaplane ]
case_result device-node-removed $?
kmemleak_report
exit $fails

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The in-VM suite: load dmaplane, run its KUnit suites and every kselftest
# program, unload it, and scan for leaks.  Kernel command line
# dmaplane.suite_only=NAME,NAME (e.g. msg_test,regionbuf_test) runs only
# those kselftest programs (development).
. /dmaplane/jobs/lib.sh

ONLY=$(cmdline dmaplane.suite_only "")

job_load
[ -c /dev/dmaplane ]
case_result device-node $?
# run-vm.sh gives a one-VM job two vCPUs, and every kernel must bring up
# both: on one, the tests that need two CPUs would skip unnoticed.
cpus=$(grep -c '^processor' /proc/cpuinfo)
[ "$cpus" -ge 2 ]
case_result two-cpus $? "$cpus CPU(s) up"

run_kunit $D/dmaplane_kunit.ko

# remote_test runs here in its local mode (no DMAPLANE_PEER_IP: it forks
# its own server on 127.0.0.1), so the two-node suite is exercised on the
# local transport too; twonode.sh runs it across two VMs.
unset DMAPLANE_PEER_IP DMAPLANE_ROLE
for t in $D/tests/*_test; do
	case ",${ONLY:-${t##*/}}," in *",${t##*/},"*) ;; *) continue ;; esac
	[ -x "$t" ] && run_kselftest "$t"
done

check demo $D/dp-demo
check pingpong $D/dp-pingpong 3
check ring $D/dp-ring 8 20 100000
grep -qx 'endpoints 0' /sys/kernel/debug/dmaplane/stats
case_result endpoints-released $? "$(cat /sys/kernel/debug/dmaplane/stats)"
check rmmod rmmod dmaplane
[ ! -e /dev/dmaplane ]
case_result device-node-removed $?
kmemleak_report
exit $fails

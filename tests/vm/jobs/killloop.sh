#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Kill loops (tests/killloop.c, as /dmaplane/killloop): rounds of a group
# of processes that send/recv (eager and rendezvous), put/get and register
# memory between each other, one of them SIGKILLed at a random moment;
# after each round every counter must drain back to zero.  Then the
# module must unload and kmemleak must find nothing.
#
# Kernel command line: dmaplane.kill_rounds=N (default 100; make soak
# 1000), dmaplane.kill_members=K (default 4), dmaplane.kill_delay=MS (the
# latest moment of the kill after the members are forked, default 1000: a
# setup takes about 0.4 s under TCG, and with 600 ms three victims in four
# died in their setup).
. /dmaplane/jobs/lib.sh

rounds=$(cmdline dmaplane.kill_rounds 100)
members=$(cmdline dmaplane.kill_members 4)
delay=$(cmdline dmaplane.kill_delay 1000)

if [ ! -x $D/killloop ]; then
	echo "DMAPLANE-CASE killloop SKIP no $D/killloop in the initramfs"
	exit 0
fi
kmemleak_reset
check insmod load_dmaplane

t0=$(date +%s)
$D/killloop -r "$rounds" -k "$members" -d "$delay"
[ $? = 0 ] || fails=$((fails + 1))
echo "# killloop: $(($(date +%s) - t0)) s"

left=$(grep -v '^invalidations ' /sys/kernel/debug/dmaplane/stats | grep -v ' 0$')
[ -z "$left" ]
case_result counters-zero $? "$(echo $left)"
check rmmod rmmod dmaplane
kmemleak_report
exit $fails

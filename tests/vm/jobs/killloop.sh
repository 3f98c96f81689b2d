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
# latest moment of the kill after the victim's fork, or in half of the
# rounds after the end of its setup, default 1000: a setup takes 0.4 to
# 1.5 s under TCG).
. /dmaplane/jobs/lib.sh

rounds=$(cmdline dmaplane.kill_rounds 100)
members=$(cmdline dmaplane.kill_members 4)
delay=$(cmdline dmaplane.kill_delay 1000)

need_prog killloop
job_load

t0=$(date +%s)
$D/killloop -r "$rounds" -k "$members" -d "$delay"
[ $? = 0 ] || fails=$((fails + 1))
echo "# killloop: $(($(date +%s) - t0)) s"

counters_zero counters-zero
job_end

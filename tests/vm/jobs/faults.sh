#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Fault injection: every ioctl path of dmaplane with its allocations
# failing (tests/faults.c, as /dmaplane/faults): a fail-nth sweep that
# fails each allocation of each step once, then probability runs under
# failslab and fail_page_alloc with make-it-fail.  Then the counters must
# be zero, the module must unload and kmemleak must find nothing.
#
# Kernel command line: dmaplane.fault_iters=N (probability runs per
# attribute, default 100), dmaplane.fault_prob=P (percent, default 2).
#
# Every injected failure prints "FAULT_INJECTION: forcing a failure" and
# a stack trace (verbose=2: the job counts the dmaplane call sites from
# them).  They are expected: the job brackets them on the console with
# DMAPLANE-FAULTS-BEGIN / DMAPLANE-FAULTS-END, and tests/vm/results.py
# accepts a "Call Trace:" there only as part of such a report.
. /dmaplane/jobs/lib.sh

iters=$(cmdline dmaplane.fault_iters 100)
prob=$(cmdline dmaplane.fault_prob 2)

need_prog faults
job_load

t0=$(date +%s)
echo "DMAPLANE-FAULTS-BEGIN" >/dev/kmsg
$D/faults -i "$iters" -p "$prob"
rc=$?
# Off again, whatever happened: nothing after this fails on purpose.
for a in failslab fail_page_alloc; do
	echo 0 >/sys/kernel/debug/$a/probability
	echo 0 >/sys/kernel/debug/$a/verbose
done
echo "DMAPLANE-FAULTS-END" >/dev/kmsg
[ $rc = 0 ] || fails=$((fails + 1))
echo "# faults: $(($(date +%s) - t0)) s"

counters_zero counters-zero
job_end

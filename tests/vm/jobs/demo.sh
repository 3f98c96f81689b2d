#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make demo (tests/run-demo.sh), in two VMs one after the other:
# dmaplane.demo=check (the test kernel, KASAN and lockdep: correctness)
# loads dmaplane and runs the demo programs, every byte checked;
# dmaplane.demo=timed (Debian's stock kernel, no debugging: the numbers
# mean something, still under QEMU TCG) runs the timed parts, each result
# on one line with what it is compared against, measured in the same VM.
. /dmaplane/jobs/lib.sh

part=$(cmdline dmaplane.demo check)
echo "== insmod dmaplane.ko on $(uname -r)"
check insmod load_dmaplane
if [ "$part" != timed ]; then
	echo "== dp-demo"
	check demo $D/dp-demo
	echo "== dpctl info"
	check dpctl-info $D/dpctl info
	echo "== dp-pingpong: two processes, tag-matched send/recv, every byte checked"
	echo "   (this kernel has KASAN and lockdep: its times are for correctness only;"
	echo "   the timed part follows on the stock kernel)"
	check pingpong $D/dp-pingpong 10
	echo "== dp-ring: 4 processes pass 64 KiB messages around a ring"
	check ring $D/dp-ring 4 50 65536
	check rmmod rmmod dmaplane
	exit $fails
fi

echo "== timed part: $(uname -r) (Debian's stock kernel, no KASAN), $(nproc) vCPUs, QEMU TCG"
echo "   every number is measured in this VM; only ratios mean much under TCG"
# lat: ping-pong of two processes, half the round trip; bw: windows of 16
# messages.  Columns: size, dmaplane, pipe, unix, cma, shm2copy, dp/pipe,
# dp_rs, ... (dp-bench).
$D/dp-bench lat -m 1048576 -n 100 >/tmp/lat.out 2>&1
case_result dp-bench-lat $? "$(tail -3 /tmp/lat.out | tr '\n' ' ')"
$D/dp-bench bw -m 1048576 -n 10 >/tmp/bw.out 2>&1
case_result dp-bench-bw $? "$(tail -3 /tmp/bw.out | tr '\n' ' ')"
# line SIZE-WORDS COLUMN FILE: the cell of one row of a dp-bench table
cellof() {
	awk -v s="$1" -v c="$2" 'index($0, s " ") == 1 { print $(c + 1); exit }' "$3"
}
# dmaplane's two columns: dp_rs (each side posts its next receive and
# sends in one dp_submit(), as MPI pre-posts its receives) and a blocking
# dp_send() then dp_recv(), two system calls a side whose waits reach
# dp_wait()'s sleep more often (measured: Documentation/bench/index.rst,
# lat).
for s in "8 B" "64 KiB" "1 MiB"; do
	dp=$(cellof "$s" 2 /tmp/lat.out)
	pipe=$(cellof "$s" 3 /tmp/lat.out)
	cma=$(cellof "$s" 5 /tmp/lat.out)
	shm=$(cellof "$s" 6 /tmp/lat.out)
	rs=$(cellof "$s" 8 /tmp/lat.out)
	echo "latency $s: dmaplane $rs us half round trip (receive and send in one dp_submit()," \
		"the way MPI pre-posts receives), $dp us as a blocking dp_send() then dp_recv();" \
		"against a pipe $pipe us, CMA (process_vm_writev + a byte on a pipe) $cma us" \
		"and a two-copy shared-memory slot $shm us"
done
for s in "64 KiB" "1 MiB"; do
	dp=$(cellof "$s" 2 /tmp/bw.out)
	cma=$(cellof "$s" 5 /tmp/bw.out)
	shm=$(cellof "$s" 6 /tmp/bw.out)
	echo "bandwidth $s: dmaplane $dp MB/s (windows of 16 messages), against CMA $cma MB/s" \
		"(the other single copy) and a two-copy shared-memory slot $shm MB/s"
done
echo "== dp-pingpong on the stock kernel (1 B to 4 MiB, every byte checked; rtt is the whole round trip)"
check pingpong-stock $D/dp-pingpong 20
echo "   (its dp_send_sync() and dp_recv_sync() sleep in poll() until their completion is there;"
echo "   the latency lines above are half round trips whose waits poll the ring first)"
echo "== the tables these lines come from (dp-bench lat and bw)"
cat /tmp/lat.out /tmp/bw.out
check rmmod rmmod dmaplane
exit $fails

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make bench: load dmaplane (and, on the stock kernel, the soft-RoCE
# modules shipped with it), add an rxe device on lo and run dp-bench.
. /dmaplane/jobs/lib.sh

for m in crc32_generic udp_tunnel ip6_udp_tunnel ib_core ib_uverbs rdma_rxe; do
	[ -e $D/kmods/$m.ko ] && insmod $D/kmods/$m.ko
done
ip link set lo up
if rdma link add rxe0 type rxe netdev lo; then
	echo "# rxe0 on lo: $(rdma link show rxe0/1 | grep -o 'state [A-Z]*')"
else
	echo "# no rxe device: ibv_reg_mr column will be n/a"
fi
check insmod insmod $D/dmaplane.ko
echo "# kernel $(uname -r), $(nproc) CPUs, QEMU TCG"
echo "DMAPLANE-BENCH-BEGIN"
$D/dp-bench reg -m ${DMAPLANE_BENCH_MAX:-1073741824} -n 5
rc=$?
echo
$D/dp-bench lat -n 200 || rc=$?
echo
$D/dp-bench bw -n 50 || rc=$?
echo
$D/dp-bench rate -n 200 || rc=$?
echo
$D/dp-bench overlap -n 5 || rc=$?
echo
$D/dp-bench scaling -n 200 || rc=$?
echo
$D/dp-bench bwdiag -n 3 || rc=$?
echo
sh $D/bench/peers.sh
echo "DMAPLANE-BENCH-END"
case_result dp-bench-reg $rc
rmmod dmaplane
exit $fails

#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Two VMs on one Ethernet segment: bring up the link, reach the peer, add a
# soft-RoCE device on eth0 and load dmaplane on both nodes.
. /dmaplane/jobs/lib.sh

me=$((DMAPLANE_NODE + 1))
peer=$((2 - DMAPLANE_NODE))
ip addr add 10.77.0.$me/24 dev eth0
ip link set eth0 up
case_result eth0-up $?

ok=1
for i in $(seq 60); do
	if ping -c 1 -W 1 10.77.0.$peer >/dev/null 2>&1; then
		ok=0
		break
	fi
done
case_result ping-peer $ok "10.77.0.$peer unreachable"

check rxe-add rdma link add rxe0 type rxe netdev eth0
rdma link show rxe0/1 | grep -q 'state ACTIVE'
case_result rxe-active $? "$(rdma link show 2>&1)"

kmemleak_reset
check insmod insmod $D/dmaplane.ko
check demo $D/dp-demo
check rmmod rmmod dmaplane
# Keep the node up until the peer has pinged us too.
sleep 5
check rxe-del rdma link del rxe0
kmemleak_report
exit $fails

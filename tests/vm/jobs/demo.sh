#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make demo: load dmaplane and run the demo programs.
. /dmaplane/jobs/lib.sh

echo "== insmod dmaplane.ko on $(uname -r)"
check insmod load_dmaplane
echo "== dp-demo"
check demo $D/dp-demo
echo "== dpctl info"
check dpctl-info $D/dpctl info
echo "== dp-pingpong: two processes, tag-matched send/recv, every byte checked"
check pingpong $D/dp-pingpong 10
echo "== dp-ring: 4 processes pass 64 KiB messages around a ring"
check ring $D/dp-ring 4 50 65536
check rmmod rmmod dmaplane
exit $fails

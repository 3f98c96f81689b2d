#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# make demo: load dmaplane and run the demo programs.
. /dmaplane/jobs/lib.sh

echo "== insmod dmaplane.ko on $(uname -r)"
check insmod insmod $D/dmaplane.ko
echo "== dp-demo"
check demo $D/dp-demo
echo "== dpctl info"
check dpctl-info $D/dpctl info
check rmmod rmmod dmaplane
exit $fails

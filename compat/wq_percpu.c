// SPDX-License-Identifier: GPL-2.0
/*
 * By 7.2: a per-CPU workqueue says so with WQ_PERCPU, and one allocated
 * with neither WQ_PERCPU nor WQ_UNBOUND warns (WARN_ONCE) and is made
 * per-CPU.
 */
#include <linux/workqueue.h>

int dmaplane_probe(void);
int dmaplane_probe(void)
{
	return WQ_PERCPU;
}

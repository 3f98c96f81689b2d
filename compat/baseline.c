// SPDX-License-Identifier: GPL-2.0
/*
 * Not a feature: a file every kernel compiles.  If it fails, the probes
 * cannot tell anything about this kernel (wrong KDIR, broken compiler),
 * and the build stops instead of guessing.
 */
#include <linux/module.h>
#include <linux/mm.h>

int dmaplane_probe(void);
int dmaplane_probe(void)
{
	return PAGE_SIZE > 0;
}

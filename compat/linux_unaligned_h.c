// SPDX-License-Identifier: GPL-2.0
/* 6.12 moved <asm/unaligned.h> to <linux/unaligned.h>. */
#include <linux/unaligned.h>

u32 dmaplane_probe(const void *p);
u32 dmaplane_probe(const void *p)
{
	return get_unaligned_le32(p);
}

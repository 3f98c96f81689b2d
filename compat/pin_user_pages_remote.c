// SPDX-License-Identifier: GPL-2.0
/* From 6.5, pin_user_pages_remote() has no vmas argument. */
#include <linux/mm.h>

long dmaplane_probe(struct mm_struct *mm, struct page **pages);
long dmaplane_probe(struct mm_struct *mm, struct page **pages)
{
	int *locked = NULL;

	return pin_user_pages_remote(mm, 0, 1, 0, pages, locked);
}

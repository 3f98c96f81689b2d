// SPDX-License-Identifier: GPL-2.0
/*
 * Up to 6.4, pin_user_pages_remote() takes a vmas array; 6.5
 * dropped it.
 */
#include <linux/mm.h>

long dmaplane_probe(struct mm_struct *mm, struct page **pages);
long dmaplane_probe(struct mm_struct *mm, struct page **pages)
{
	struct vm_area_struct **vmas = NULL;

	return pin_user_pages_remote(mm, 0, 1, 0, pages, vmas, NULL);
}

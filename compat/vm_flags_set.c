// SPDX-License-Identifier: GPL-2.0
/*
 * 6.3: vma->vm_flags became read-only; writers call
 * vm_flags_set()/vm_flags_clear().
 */
#include <linux/mm.h>

void dmaplane_probe(struct vm_area_struct *vma);
void dmaplane_probe(struct vm_area_struct *vma)
{
	vm_flags_set(vma, VM_DONTEXPAND);
	vm_flags_clear(vma, VM_MAYWRITE);
}

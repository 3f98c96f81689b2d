// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane completion rings.
 *
 * The ring is vmalloc_user() memory the owner maps read-only: a header
 * (struct dmaplane_cq_ring) with the producer index, then the entries.
 * The consumer index lives on its own page, mapped read-write.  Every
 * accepted operation first reserves a slot (a credit), so a completion
 * always has room: a full ring refuses new operations with -EAGAIN
 * instead of losing completions.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "dmaplane.h"

#define CQ_ENTRIES_OFFSET	sizeof(struct dmaplane_cq_ring)

/**
 * dmaplane_cq_create() - allocate a ring
 * @entries: a power of two up to %DMAPLANE_CQ_MAX_ENTRIES, or 0
 *
 * Return: the ring, or ERR_PTR(-EINVAL/-ENOMEM).
 */
struct dmaplane_cq *dmaplane_cq_create(u32 entries)
{
	struct dmaplane_cq *cq;

	if (!entries)
		entries = DMAPLANE_CQ_DEFAULT_ENTRIES;
	if (!is_power_of_2(entries) || entries > DMAPLANE_CQ_MAX_ENTRIES)
		return ERR_PTR(-EINVAL);

	cq = kzalloc(sizeof(*cq), GFP_KERNEL_ACCOUNT);
	if (!cq)
		return ERR_PTR(-ENOMEM);

	cq->ring_size = PAGE_ALIGN(CQ_ENTRIES_OFFSET +
				   (size_t)entries * sizeof(struct dmaplane_cqe));
	cq->ring = vmalloc_user(cq->ring_size);
	if (!cq->ring)
		goto err_free_cq;
	cq->head = vmalloc_user(PAGE_SIZE);
	if (!cq->head)
		goto err_free_ring;

	spin_lock_init(&cq->lock);
	cq->entries = (struct dmaplane_cqe *)((char *)cq->ring + CQ_ENTRIES_OFFSET);
	cq->nr = entries;
	cq->ring->mask = entries - 1;
	cq->ring->entries = entries;
	cq->ring->entry_size = sizeof(struct dmaplane_cqe);
	cq->ring->entries_offset = CQ_ENTRIES_OFFSET;
	return cq;

err_free_ring:
	vfree(cq->ring);
err_free_cq:
	kfree(cq);
	return ERR_PTR(-ENOMEM);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_cq_create);

void dmaplane_cq_destroy(struct dmaplane_cq *cq)
{
	if (!cq)
		return;
	vfree(cq->head);
	vfree(cq->ring);
	kfree(cq);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_cq_destroy);

/* Entries the owner has not consumed yet; a bogus head counts as full. */
static u32 cq_used(struct dmaplane_cq *cq)
{
	u32 used = cq->tail - READ_ONCE(cq->head->head);

	lockdep_assert_held(&cq->lock);
	return used > cq->nr ? cq->nr : used;
}

/**
 * dmaplane_cq_reserve() - take a credit for one future completion
 * @cq: ring
 *
 * Return: 0, or -EAGAIN when unconsumed plus reserved entries fill it.
 */
int dmaplane_cq_reserve(struct dmaplane_cq *cq)
{
	int ret = 0;

	spin_lock(&cq->lock);
	if (cq_used(cq) + cq->reserved >= cq->nr)
		ret = -EAGAIN;
	else
		cq->reserved++;
	spin_unlock(&cq->lock);
	return ret;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_cq_reserve);

/** dmaplane_cq_unreserve() - give back a credit that will not be used */
void dmaplane_cq_unreserve(struct dmaplane_cq *cq)
{
	spin_lock(&cq->lock);
	cq->reserved--;
	spin_unlock(&cq->lock);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_cq_unreserve);

/**
 * dmaplane_cq_post() - write a completion, using a reserved credit
 * @cq: ring
 * @cqe: the completion
 *
 * The entry is written before the producer index moves (release), so a
 * consumer that reads the index with acquire sees the whole entry.
 */
void dmaplane_cq_post(struct dmaplane_cq *cq, const struct dmaplane_cqe *cqe)
{
	spin_lock(&cq->lock);
	cq->entries[cq->tail & (cq->nr - 1)] = *cqe;
	cq->tail++;
	/* Pairs with the consumer's load-acquire of the ring's tail. */
	smp_store_release(&cq->ring->tail, cq->tail);
	cq->reserved--;
	spin_unlock(&cq->lock);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_cq_post);

/** dmaplane_cq_pending() - are there completions the owner has not read? */
bool dmaplane_cq_pending(struct dmaplane_cq *cq)
{
	return READ_ONCE(cq->ring->tail) != READ_ONCE(cq->head->head);
}

/**
 * dmaplane_cq_mmap() - map the ring (read-only) or the consumer page
 * @cq: ring
 * @vma: the mapping; vm_pgoff selects which
 *
 * Return: 0, -EINVAL (wrong size or offset), -EPERM (ring mapped
 * writable).
 */
int dmaplane_cq_mmap(struct dmaplane_cq *cq, struct vm_area_struct *vma)
{
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	unsigned long len = vma->vm_end - vma->vm_start;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (off == DMAPLANE_CQ_RING_OFFSET) {
		if (len != cq->ring_size)
			return -EINVAL;
		if (vma->vm_flags & VM_WRITE)
			return -EPERM;
		vm_flags_clear(vma, VM_MAYWRITE);
		vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
		return remap_vmalloc_range(vma, cq->ring, 0);
	}
	if (off == DMAPLANE_CQ_HEAD_OFFSET) {
		if (len != PAGE_SIZE)
			return -EINVAL;
		vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
		return remap_vmalloc_range(vma, cq->head, 0);
	}
	return -EINVAL;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane completion rings.
 *
 * The ring is a header (struct dmaplane_cq_ring) with the producer index,
 * then the entries, in pages the owner maps read-only; the consumer index
 * lives on its own page, mapped read-write.  The pages are charged to the
 * owner's memory cgroup and freed when the endpoint's file is released,
 * even while operations of other endpoints still refer to the endpoint.
 * Every accepted operation first reserves a slot (a credit), so a
 * completion always has room: a full ring refuses new operations with
 * -EAGAIN instead of losing completions.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "dmaplane.h"

#define CQ_ENTRIES_OFFSET	sizeof(struct dmaplane_cq_ring)

static void cq_free_pages(struct dmaplane_cq *cq)
{
	unsigned int i;

	if (cq->ring)
		vunmap(cq->ring);
	for (i = 0; cq->pages && i < cq->npages && cq->pages[i]; i++)
		__free_page(cq->pages[i]);
	kvfree(cq->pages);
	if (cq->head_page)
		__free_page(cq->head_page);
	cq->ring = NULL;
	cq->pages = NULL;
	cq->head_page = NULL;
}

/**
 * dmaplane_cq_create() - allocate a ring
 * @entries: a power of two up to %DMAPLANE_CQ_MAX_ENTRIES, or 0
 *
 * Return: the ring, or ERR_PTR(-EINVAL/-ENOMEM).
 */
struct dmaplane_cq *dmaplane_cq_create(u32 entries)
{
	struct dmaplane_cq *cq;
	unsigned int i;

	if (!entries)
		entries = DMAPLANE_CQ_DEFAULT_ENTRIES;
	if (!is_power_of_2(entries) || entries > DMAPLANE_CQ_MAX_ENTRIES)
		return ERR_PTR(-EINVAL);

	cq = kzalloc(sizeof(*cq), GFP_KERNEL_ACCOUNT);
	if (!cq)
		return ERR_PTR(-ENOMEM);

	cq->ring_size = PAGE_ALIGN(CQ_ENTRIES_OFFSET +
				   (size_t)entries * sizeof(struct dmaplane_cqe));
	cq->npages = cq->ring_size >> PAGE_SHIFT;
	cq->pages = kvcalloc(cq->npages, sizeof(*cq->pages), GFP_KERNEL_ACCOUNT);
	if (!cq->pages)
		goto err_free_pages;
	for (i = 0; i < cq->npages; i++) {
		cq->pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!cq->pages[i])
			goto err_free_pages;
	}
	cq->ring = vmap(cq->pages, cq->npages, VM_MAP, PAGE_KERNEL);
	if (!cq->ring)
		goto err_free_pages;
	cq->head_page = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!cq->head_page)
		goto err_free_pages;
	cq->head = page_address(cq->head_page);

	spin_lock_init(&cq->lock);
	cq->entries = (struct dmaplane_cqe *)((char *)cq->ring + CQ_ENTRIES_OFFSET);
	cq->nr = entries;
	cq->ring->mask = entries - 1;
	cq->ring->entries = entries;
	cq->ring->entry_size = sizeof(struct dmaplane_cqe);
	cq->ring->entries_offset = CQ_ENTRIES_OFFSET;
	return cq;

err_free_pages:
	cq_free_pages(cq);
	kfree(cq);
	return ERR_PTR(-ENOMEM);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_cq_create);

/**
 * dmaplane_cq_release() - the owner's file is gone: free the ring's pages
 * @cq: ring, or NULL
 *
 * Nothing maps the ring any more (a mapping holds the file).  Completions
 * that still arrive are dropped; the small structure stays until the
 * endpoint is freed.
 */
void dmaplane_cq_release(struct dmaplane_cq *cq)
{
	if (!cq)
		return;
	spin_lock(&cq->lock);
	cq->released = true;
	spin_unlock(&cq->lock);
	cq_free_pages(cq);
}

void dmaplane_cq_destroy(struct dmaplane_cq *cq)
{
	if (!cq)
		return;
	cq_free_pages(cq);
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
	if (cq->released)
		ret = -ECONNRESET;
	else if (cq_used(cq) + cq->reserved >= cq->nr)
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
	if (!cq->released) {
		cq->entries[cq->tail & (cq->nr - 1)] = *cqe;
		cq->tail++;
		/* Pairs with the consumer's load-acquire of the ring's tail. */
		smp_store_release(&cq->ring->tail, cq->tail);
	}
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
		return vm_map_pages_zero(vma, cq->pages, cq->npages);
	}
	if (off == DMAPLANE_CQ_HEAD_OFFSET) {
		if (len != PAGE_SIZE)
			return -EINVAL;
		vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
		return vm_map_pages_zero(vma, &cq->head_page, 1);
	}
	return -EINVAL;
}

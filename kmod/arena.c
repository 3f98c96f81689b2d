// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane arenas: pinned, zeroed kernel memory built from 2 MiB pages
 * first, charged to RLIMIT_MEMLOCK, registered as a region, mapped into
 * its owner with mmap(2) and exportable as dma-buf (dmabuf.c).
 *
 * Lifetime: the arena's reference count is its region's.  The owning
 * endpoint's handle, every VMA mapping it and every exported dma-buf hold
 * a reference; the pages and the memlock charge go with the last one.
 *
 * Mapping: 6.1 offers drivers two ways to map memory with PMDs.  The
 * ->huge_fault() handler with vmf_insert_pfn_pmd() is never called for a
 * VM_PFNMAP or VM_MIXEDMAP VMA outside DAX (hugepage_vma_check() refuses
 * VM_NO_KHUGEPAGED VMAs), and huge pfn mappings lack a special bit there
 * (TTM dropped its huge fault path for that reason).  The other way is
 * the one page-cache THPs take: ->fault() returns a subpage of a compound
 * page of PMD order and finish_fault() maps the whole compound page with
 * one PMD (do_set_pmd()) when the VMA is PMD-aligned relative to its file
 * offset.  Arenas use that: 2 MiB chunks are compound pages whose heads
 * sit at 2 MiB-aligned arena offsets, the mapping always starts at arena
 * offset 0, and thp_get_unmapped_area() aligns it; everything else is
 * mapped with 4 KiB PTEs by the same handler.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/gfp.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/nodemask.h>
#include <linux/overflow.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/uio.h>

#include "dmaplane.h"

static_assert(offsetof(struct dmaplane_arena, region) == 0);

#define DMAPLANE_HUGE_SIZE	(PAGE_SIZE << DMAPLANE_HUGE_ORDER)

/*
 * The mmap offset of an arena, in pages.  Derived from the handle, which
 * is set before the arena can be looked up, so that a mapping made before
 * ARENA_CREATE returned finds its pages too.
 */
static unsigned long arena_pgoff(const struct dmaplane_arena *arena)
{
	return (unsigned long)arena->region.handle <<
	       (DMAPLANE_ARENA_MMAP_SHIFT - PAGE_SHIFT);
}

static void arena_count_chunk(struct dmaplane_arena *arena, unsigned int order,
			      long sign)
{
	long pages = sign * (1L << order);
	u64 bytes = (u64)pages << PAGE_SHIFT;

	if (order == DMAPLANE_HUGE_ORDER)
		arena->bytes_huge += bytes;
	else if (order)
		arena->bytes_mid += bytes;
	else
		arena->bytes_base += bytes;
	dmaplane_stat_add(arena_pages, pages);
}

/* Free the first @nr_alloc pages of @arena, chunk by chunk. */
static void arena_free_pages(struct dmaplane_arena *arena, unsigned long nr_alloc)
{
	unsigned long i = 0;

	while (i < nr_alloc) {
		struct page *page = arena->pages[i];
		unsigned int order = PageCompound(page) ? compound_order(page) : 0;

		arena_count_chunk(arena, order, -1);
		/*
		 * A compound page someone else still holds (a pin through
		 * the owner's mapping) is freed by their last put_page().
		 */
		__free_pages(page, order);
		i += 1UL << order;
		cond_resched();
	}
}

/*
 * Fill arena->pages with chunks of the largest order that is at most
 * @max_order, still fits and can be had without reclaim; fall back one
 * order at a time, never back up (so every chunk of an order sits at an
 * offset aligned to its size).  Return: 0, or -ENOMEM/-EINTR with the
 * number of pages allocated so far in *@nr_alloc.
 */
static int arena_alloc_pages(struct dmaplane_arena *arena, int nid,
			     unsigned int max_order, bool huge_only,
			     unsigned long *nr_alloc)
{
	unsigned int order = min_t(unsigned int, max_order, DMAPLANE_HUGE_ORDER);
	unsigned long i = 0, j;

	*nr_alloc = 0;
	while (i < arena->npages) {
		gfp_t gfp = GFP_HIGHUSER | __GFP_ZERO | __GFP_ACCOUNT;
		struct page *page;

		while (order && (1UL << order) > arena->npages - i)
			order--;
		if (huge_only && order != DMAPLANE_HUGE_ORDER)
			return -ENOMEM;
		if (order)
			gfp |= __GFP_COMP | __GFP_NORETRY | __GFP_NOWARN;

		page = alloc_pages_node(nid, gfp, order);
		if (!page) {
			if (!order || huge_only)
				return -ENOMEM;
			order--;
			continue;
		}
		for (j = 0; j < (1UL << order); j++)
			arena->pages[i + j] = page + j;
		arena_count_chunk(arena, order, 1);
		i += 1UL << order;
		*nr_alloc = i;

		if (fatal_signal_pending(current))
			return -EINTR;
		cond_resched();
	}
	return 0;
}

static int arena_copy(struct dmaplane_region *r, u64 off, struct iov_iter *iter,
		      bool to_region)
{
	struct dmaplane_arena *arena = to_dmaplane_arena(r);

	while (iov_iter_count(iter)) {
		struct page *page = arena->pages[off >> PAGE_SHIFT];
		size_t poff = offset_in_page(off);
		size_t n = min_t(size_t, PAGE_SIZE - poff, iov_iter_count(iter));
		size_t done;

		if (to_region)
			done = copy_page_from_iter(page, poff, n, iter);
		else
			done = copy_page_to_iter(page, poff, n, iter);
		if (done != n)
			return -EFAULT;
		off += n;
		cond_resched();
	}
	return 0;
}

static void arena_release(struct dmaplane_region *r)
{
	struct dmaplane_arena *arena = to_dmaplane_arena(r);

	arena_free_pages(arena, arena->npages);
	kvfree(arena->pages);
	if (arena->charged_mm) {
		dmaplane_uncharge_pages(arena->charged_mm, arena->npages);
		mmdrop(arena->charged_mm);
	}
	dmaplane_stat_dec(arenas);
}

static int arena_pages(struct dmaplane_region *r, u64 off, u64 len,
		       struct page ***pages, unsigned int *npages,
		       unsigned int *first_off)
{
	struct dmaplane_arena *arena = to_dmaplane_arena(r);
	unsigned long first = off >> PAGE_SHIFT;
	unsigned long last = (off + len - 1) >> PAGE_SHIFT;

	*npages = last - first + 1;
	*first_off = offset_in_page(off);
	return dmaplane_pages_get(arena->pages + first, *npages, pages);
}

static const struct dmaplane_region_ops arena_region_ops = {
	.copy = arena_copy,
	.pages = arena_pages,
	.release = arena_release,
};

static int arena_check_args(const struct dmaplane_arena_create *args)
{
	if (!args->size || !PAGE_ALIGNED(args->size))
		return -EINVAL;
	if (args->flags & ~DMAPLANE_ARENA_FLAGS)
		return -EINVAL;
	if (args->access & ~DMAPLANE_ACCESS_ALL)
		return -EINVAL;
	if (args->pad || memchr_inv(args->reserved, 0, sizeof(args->reserved)))
		return -EINVAL;
	if (args->numa_node != DMAPLANE_NUMA_ANY &&
	    (args->numa_node < 0 || args->numa_node >= MAX_NUMNODES ||
	     !node_online(args->numa_node)))
		return -EINVAL;
	if ((args->flags & DMAPLANE_ARENA_HUGE_ONLY) &&
	    !IS_ALIGNED(args->size, DMAPLANE_HUGE_SIZE))
		return -EINVAL;
	return 0;
}

/**
 * dmaplane_arena_create() - allocate, charge and publish an arena
 * @ep: owning endpoint
 * @args: the request; the output fields are filled in on success
 * @max_order: largest page order to try; %DMAPLANE_HUGE_ORDER normally,
 *	smaller in tests that simulate a shortage of huge pages
 *
 * The pages are charged to the caller's address space (RLIMIT_MEMLOCK,
 * and the module-wide cap); a caller without one (a kernel thread) is not
 * charged.  Return: 0, -EINVAL for a bad request, -ENOMEM, -EINTR.
 */
int dmaplane_arena_create(struct dmaplane_ep *ep, struct dmaplane_arena_create *args,
			  unsigned int max_order)
{
	struct mm_struct *mm = current->mm;
	struct dmaplane_arena *arena;
	unsigned long nr_alloc;
	int nid, ret;

	ret = arena_check_args(args);
	if (ret)
		return ret;
	/* More than all of RAM cannot be had; this also bounds the arrays. */
	if (args->size >> PAGE_SHIFT > totalram_pages())
		return -ENOMEM;

	arena = kzalloc(sizeof(*arena), GFP_KERNEL_ACCOUNT);
	if (!arena)
		return -ENOMEM;
	arena->npages = args->size >> PAGE_SHIFT;

	if (mm) {
		ret = dmaplane_charge_pages(mm, arena->npages);
		if (ret)
			goto err_free_arena;
		mmgrab(mm);
		arena->charged_mm = mm;
	}

	/* Sized by the user: charged to it, and no warning when too large. */
	arena->pages = kvmalloc_array(arena->npages, sizeof(*arena->pages),
				      GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!arena->pages) {
		ret = -ENOMEM;
		goto err_uncharge;
	}

	nid = args->numa_node == DMAPLANE_NUMA_ANY ? NUMA_NO_NODE : args->numa_node;
	ret = arena_alloc_pages(arena, nid, max_order,
				args->flags & DMAPLANE_ARENA_HUGE_ONLY, &nr_alloc);
	if (ret)
		goto err_free_pages;

	dmaplane_region_init(&arena->region, &arena_region_ops,
			     DMAPLANE_REGION_ARENA, args->access, args->size);
	dmaplane_stat_inc(arenas);
	ret = dmaplane_region_publish(ep, &arena->region);
	if (ret) {
		/* The arena is whole now: its release undoes everything. */
		dmaplane_region_put(&arena->region);
		return ret;
	}

	args->handle = arena->region.handle;
	args->lkey = arena->region.handle;
	args->rkey = arena->region.rkey;
	args->mmap_offset = (u64)arena_pgoff(arena) << PAGE_SHIFT;
	args->bytes_huge = arena->bytes_huge;
	args->bytes_mid = arena->bytes_mid;
	args->bytes_base = arena->bytes_base;
	return 0;

err_free_pages:
	arena_free_pages(arena, nr_alloc);
	kvfree(arena->pages);
err_uncharge:
	if (arena->charged_mm) {
		dmaplane_uncharge_pages(arena->charged_mm, arena->npages);
		mmdrop(arena->charged_mm);
	}
err_free_arena:
	kfree(arena);
	return ret;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_arena_create);

/**
 * dmaplane_arena_sg_table() - scatterlist of an arena slice
 * @arena: referenced arena
 * @off: start of the slice, page aligned
 * @len: bytes, page aligned, non-zero; the slice is inside the arena
 * @sgt: filled in; free with sg_free_table()
 *
 * One entry per physically contiguous run of the slice inside one chunk.
 * Return: 0, -EINVAL for a bad slice, -ENOMEM.
 */
int dmaplane_arena_sg_table(struct dmaplane_arena *arena, u64 off, u64 len,
			    struct sg_table *sgt)
{
	unsigned long first, last, i, nents = 0;
	struct scatterlist *sg;
	u64 end;
	int ret;

	if (!len || !PAGE_ALIGNED(off) || !PAGE_ALIGNED(len) ||
	    check_add_overflow(off, len, &end) || end > arena->region.len)
		return -EINVAL;
	first = off >> PAGE_SHIFT;
	last = end >> PAGE_SHIFT;

	for (i = first; i < last; i++)
		if (i == first || arena->pages[i] != arena->pages[i - 1] + 1 ||
		    compound_head(arena->pages[i]) != compound_head(arena->pages[i - 1]))
			nents++;

	ret = sg_alloc_table(sgt, nents, GFP_KERNEL);
	if (ret)
		return ret;

	sg = NULL;
	for (i = first; i < last; i++) {
		if (!sg || arena->pages[i] != arena->pages[i - 1] + 1 ||
		    compound_head(arena->pages[i]) != compound_head(arena->pages[i - 1])) {
			sg = sg ? sg_next(sg) : sgt->sgl;
			sg_set_page(sg, arena->pages[i], PAGE_SIZE, 0);
		} else {
			sg->length += PAGE_SIZE;
		}
	}
	return 0;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_arena_sg_table);

int dmaplane_ioctl_arena_create(struct dmaplane_ep *ep, void __user *uarg)
{
	struct dmaplane_arena_create args;
	struct dmaplane_region *r;
	int ret;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;

	ret = dmaplane_arena_create(ep, &args, DMAPLANE_HUGE_ORDER);
	if (ret)
		return ret;

	if (copy_to_user(uarg, &args, sizeof(args))) {
		/* Unless user space already guessed the handle and destroyed it. */
		r = dmaplane_region_unpublish(ep, args.handle, DMAPLANE_REGION_ARENA);
		if (!IS_ERR(r))
			dmaplane_region_put(r);
		return -EFAULT;
	}
	return 0;
}

int dmaplane_ioctl_arena_destroy(struct dmaplane_ep *ep, void __user *uarg)
{
	struct dmaplane_handle_arg args;
	struct dmaplane_region *r;

	if (copy_from_user(&args, uarg, sizeof(args)))
		return -EFAULT;
	if (args.flags || args.reserved)
		return -EINVAL;

	r = dmaplane_region_unpublish(ep, args.handle, DMAPLANE_REGION_ARENA);
	if (IS_ERR(r))
		return PTR_ERR(r);
	dmaplane_region_put(r);
	return 0;
}

/* A VMA copy (fork, split, mremap) holds its own reference. */
static void arena_vm_open(struct vm_area_struct *vma)
{
	struct dmaplane_arena *arena = vma->vm_private_data;

	kref_get(&arena->region.ref);
}

static void arena_vm_close(struct vm_area_struct *vma)
{
	struct dmaplane_arena *arena = vma->vm_private_data;

	dmaplane_region_put(&arena->region);
}

/*
 * Hand the page to the core, which maps it with a PTE, or with a PMD when
 * it is part of a 2 MiB compound page and the VMA is suitably aligned
 * (see the comment at the top).
 */
static vm_fault_t arena_vm_fault(struct vm_fault *vmf)
{
	struct dmaplane_arena *arena = vmf->vma->vm_private_data;
	unsigned long idx = vmf->pgoff - arena_pgoff(arena);

	if (vmf->pgoff < arena_pgoff(arena) || idx >= arena->npages)
		return VM_FAULT_SIGBUS;
	vmf->page = arena->pages[idx];
	get_page(vmf->page);
	return 0;
}

static const struct vm_operations_struct arena_vm_ops = {
	.open = arena_vm_open,
	.close = arena_vm_close,
	.fault = arena_vm_fault,
};

/**
 * dmaplane_mmap() - map an arena of @ep into user space
 * @ep: endpoint of the file being mapped
 * @vma: the new mapping; vm_pgoff must be the arena's mmap offset
 *
 * Return: 0, or -EINVAL for an offset that names no arena of @ep, a
 * length beyond the arena or a private mapping.
 */
int dmaplane_mmap(struct dmaplane_ep *ep, struct vm_area_struct *vma)
{
	unsigned long shift = DMAPLANE_ARENA_MMAP_SHIFT - PAGE_SHIFT;
	struct dmaplane_arena *arena;
	struct dmaplane_region *r;

	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (vma->vm_pgoff & ((1UL << shift) - 1) || vma->vm_pgoff >> shift > U32_MAX)
		return -EINVAL;

	r = dmaplane_region_get(ep, vma->vm_pgoff >> shift, DMAPLANE_REGION_ARENA);
	if (IS_ERR(r))
		return -EINVAL;
	arena = to_dmaplane_arena(r);
	if (vma_pages(vma) > arena->npages) {
		dmaplane_region_put(r);
		return -EINVAL;
	}

	/* The lookup's reference becomes the VMA's. */
	vm_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_private_data = arena;
	vma->vm_ops = &arena_vm_ops;
	return 0;
}

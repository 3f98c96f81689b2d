/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dmaplane private definitions: structures shared between the files of
 * the module and their prototypes, grouped by the file that defines them.
 */
#ifndef _DMAPLANE_H
#define _DMAPLANE_H

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm_types.h>
#include <linux/rcupdate.h>
#include <linux/scatterlist.h>
#include <linux/types.h>
#include <linux/uio.h>
#include <linux/xarray.h>

#include <uapi/linux/dmaplane.h>

#define DMAPLANE_DRV_NAME	"dmaplane"

/*
 * Internal functions that only the KUnit module calls are exported to it
 * in a private namespace, as EXPORT_SYMBOL_IF_KUNIT() does upstream from
 * 6.2 on.  Kernels without KUnit export nothing.
 */
#if IS_ENABLED(CONFIG_KUNIT)
#define EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(sym) EXPORT_SYMBOL_NS_GPL(sym, DMAPLANE_KUNIT)
#else
#define EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(sym)
#endif

/**
 * struct dmaplane_stats - module-wide object counters
 * @endpoints: endpoints currently open
 * @regions: regions alive (arenas, user MRs, imported dma-bufs)
 * @arenas: arenas alive (until their last mapping or dma-buf is gone)
 * @arena_pages: base pages held by arenas
 * @user_mrs: pinnings of user memory alive (cache entries)
 * @pinned_pages: user pages pinned by registrations
 * @charged_pages: pages charged to RLIMIT_MEMLOCK and the module cap
 * @dmabufs: dma-bufs exported and not yet released
 * @imports: imported dma-bufs attached
 * @invalidations: registrations invalidated by MMU notifiers or move_notify
 *
 * Every object the module creates is counted here and uncounted when it is
 * freed, so tests can prove that nothing outlives its owner.  Shown in
 * /sys/kernel/debug/dmaplane/stats, one "name value" line each.
 */
struct dmaplane_stats {
	atomic_long_t endpoints;
	atomic_long_t regions;
	atomic_long_t arenas;
	atomic_long_t arena_pages;
	atomic_long_t user_mrs;
	atomic_long_t pinned_pages;
	atomic_long_t charged_pages;
	atomic_long_t dmabufs;
	atomic_long_t imports;
	atomic_long_t invalidations;
};

/**
 * struct dmaplane_ep - an endpoint: one open of /dev/dmaplane
 * @id: identifier, unique among open endpoints, allocated cyclically from
 *	dmaplane_ep_ids so that a closed endpoint's id is not reused at once
 * @uid: effective uid of the opener
 * @mm: address space of the opener (mmgrab()ed); registrations of user
 *	memory are made in it, and only from it
 * @regions: handle -> &struct dmaplane_region; each entry holds a
 *	reference.  The xarray's lock protects insertion and removal.
 * @next_handle: cursor for cyclic handle allocation, under the xa lock
 * @mr_cache: the registration cache of @mm, shared by the endpoints of
 *	one address space (mr.c); NULL until the first MR_REG
 */
struct dmaplane_ep {
	u32 id;
	kuid_t uid;
	struct mm_struct *mm;
	struct xarray regions;
	u32 next_handle;
	struct dmaplane_mr_cache *mr_cache;
};

/**
 * enum dmaplane_region_kind - what backs a region
 * @DMAPLANE_REGION_ARENA: an arena (arena.c)
 * @DMAPLANE_REGION_USER: pinned user memory (mr.c)
 * @DMAPLANE_REGION_DMABUF: an imported dma-buf (dmabuf.c)
 */
struct dmaplane_mr_cache;

enum dmaplane_region_kind {
	DMAPLANE_REGION_ARENA,
	DMAPLANE_REGION_USER,
	DMAPLANE_REGION_DMABUF,
};

struct dmaplane_region;

/**
 * struct dmaplane_region_ops - what a kind of region implements
 * @copy: copy between bytes [@off, @off + iov_iter_count(@iter)) of the
 *	region and @iter; @to_region says the direction.  The caller holds
 *	a reference and has checked the bounds.  Returns 0, or -EFAULT when
 *	the region was invalidated (or @iter faults).  May sleep.
 * @release: free the kind-specific part; called once, in process context,
 *	when the last reference is dropped.  Must not free the region
 *	itself: region.c does that after an RCU grace period.
 */
struct dmaplane_region_ops {
	int (*copy)(struct dmaplane_region *r, u64 off, struct iov_iter *iter,
		    bool to_region);
	void (*release)(struct dmaplane_region *r);
};

/**
 * struct dmaplane_region - anything that can be the target of a transfer
 * @ref: references: the owner's handle table, lookups in flight, and
 *	kind-specific holders
 * @ops: kind-specific operations
 * @kind: what backs it
 * @access: %DMAPLANE_ACCESS_* bits
 * @len: length in bytes
 * @rkey: random remote key, unique among published regions
 * @handle: handle on the owning endpoint, also the local key
 * @owner_id: id of the owning endpoint
 * @uid: owner's effective uid, for the security checks of put/get
 * @invalid: set once, when the backing memory went away (MMU notifier,
 *	move_notify); later copies fail with -EFAULT
 * @rkey_node: entry in the rkey hash table, under dmaplane_rkey_lock
 * @rcu: frees the region after lockless rkey lookups are done with it
 */
struct dmaplane_region {
	struct kref ref;
	const struct dmaplane_region_ops *ops;
	enum dmaplane_region_kind kind;
	u32 access;
	u64 len;
	u64 rkey;
	u32 handle;
	u32 owner_id;
	kuid_t uid;
	bool invalid;
	struct hlist_node rkey_node;
	struct rcu_head rcu;
};

/*
 * DMAPLANE_HUGE_ORDER - order of the PMD-sized (2 MiB on x86-64) pages an
 * arena is built from first.
 */
#define DMAPLANE_HUGE_ORDER	(PMD_SHIFT - PAGE_SHIFT)

/*
 * An arena's mmap offset is its handle shifted by this many bits: the
 * offset names the arena, the length says how much of it to map.
 */
#define DMAPLANE_ARENA_MMAP_SHIFT	32

/**
 * struct dmaplane_arena - pinned, zeroed kernel memory, mappable and
 *	exportable as dma-buf
 * @region: the arena as a region; first member (see region.c).  Its
 *	reference count is the arena's: the endpoint's handle, every VMA
 *	mapping it and every dma-buf exported from it hold one.
 * @charged_mm: address space charged for the pages (mmgrab()ed), or NULL
 *	when nothing was charged (kernel-internal arenas, KUnit)
 * @npages: base pages in the arena
 * @pages: every base page, in order; pages of a higher-order chunk are
 *	the consecutive subpages of one compound page whose head sits at
 *	an offset aligned to the chunk size
 * @bytes_huge: bytes backed by %DMAPLANE_HUGE_ORDER pages
 * @bytes_mid: bytes backed by pages of order 1 .. %DMAPLANE_HUGE_ORDER - 1
 * @bytes_base: bytes backed by order-0 pages
 *
 * Everything but the reference count is immutable after creation.
 */
struct dmaplane_arena {
	struct dmaplane_region region;
	struct mm_struct *charged_mm;
	unsigned long npages;
	struct page **pages;
	u64 bytes_huge;
	u64 bytes_mid;
	u64 bytes_base;
};

static inline struct dmaplane_arena *to_dmaplane_arena(struct dmaplane_region *r)
{
	return container_of(r, struct dmaplane_arena, region);
}

/* main.c */
extern struct dmaplane_stats dmaplane_stats;
extern struct miscdevice dmaplane_misc;

/* region.c */
void dmaplane_region_init(struct dmaplane_region *r,
			  const struct dmaplane_region_ops *ops,
			  enum dmaplane_region_kind kind, u32 access, u64 len);
int dmaplane_region_publish(struct dmaplane_ep *ep, struct dmaplane_region *r);
struct dmaplane_region *dmaplane_region_get(struct dmaplane_ep *ep, u32 handle,
					    enum dmaplane_region_kind kind);
struct dmaplane_region *dmaplane_region_unpublish(struct dmaplane_ep *ep, u32 handle,
						  enum dmaplane_region_kind kind);
struct dmaplane_region *dmaplane_region_lookup_rkey(u64 rkey);
void dmaplane_region_put(struct dmaplane_region *r);
void dmaplane_region_invalidate(struct dmaplane_region *r);
int dmaplane_region_copy(struct dmaplane_region *r, u64 off, u64 len,
			 struct iov_iter *iter, bool to_region);
void dmaplane_ep_release_regions(struct dmaplane_ep *ep);
int dmaplane_charge_pages(struct mm_struct *mm, unsigned long npages);
void dmaplane_uncharge_pages(struct mm_struct *mm, unsigned long npages);

/* arena.c */
int dmaplane_arena_create(struct dmaplane_ep *ep, struct dmaplane_arena_create *args,
			  unsigned int max_order);
int dmaplane_arena_sg_table(struct dmaplane_arena *arena, u64 off, u64 len,
			    struct sg_table *sgt);
int dmaplane_ioctl_arena_create(struct dmaplane_ep *ep, void __user *uarg);
int dmaplane_ioctl_arena_destroy(struct dmaplane_ep *ep, void __user *uarg);
int dmaplane_mmap(struct dmaplane_ep *ep, struct vm_area_struct *vma);

/* mr.c */
int dmaplane_ioctl_mr_reg(struct dmaplane_ep *ep, void __user *uarg);
int dmaplane_ioctl_mr_dereg(struct dmaplane_ep *ep, void __user *uarg);
int dmaplane_ioctl_mr_query(struct dmaplane_ep *ep, void __user *uarg);
void dmaplane_mr_cache_put(struct dmaplane_mr_cache *mrc);

/* dmabuf.c */
struct dma_buf;
struct dma_buf *dmaplane_dmabuf_export(struct dmaplane_ep *ep,
				       const struct dmaplane_dmabuf_export *args);
int dmaplane_import_dmabuf(struct dmaplane_ep *ep, struct dma_buf *dmabuf,
			   struct dmaplane_mr_import_dmabuf *args);
int dmaplane_ioctl_dmabuf_export(struct dmaplane_ep *ep, void __user *uarg);
int dmaplane_ioctl_mr_import_dmabuf(struct dmaplane_ep *ep, void __user *uarg);

/* endpoint.c */
struct dmaplane_ep *dmaplane_ep_create(void);
void dmaplane_ep_destroy(struct dmaplane_ep *ep);
int dmaplane_info_fill(const struct dmaplane_ep *ep, struct dmaplane_info *info);
void dmaplane_ep_exit(void);

#endif /* _DMAPLANE_H */

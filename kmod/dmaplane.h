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

/* main.c */
extern struct dmaplane_stats dmaplane_stats;

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
int dmaplane_ioctl_arena_create(struct dmaplane_ep *ep, void __user *uarg);
int dmaplane_ioctl_arena_destroy(struct dmaplane_ep *ep, void __user *uarg);
int dmaplane_mmap(struct dmaplane_ep *ep, struct vm_area_struct *vma);

/* mr.c */
int dmaplane_ioctl_mr_reg(struct dmaplane_ep *ep, void __user *uarg);
int dmaplane_ioctl_mr_dereg(struct dmaplane_ep *ep, void __user *uarg);
int dmaplane_ioctl_mr_query(struct dmaplane_ep *ep, void __user *uarg);
void dmaplane_mr_cache_put(struct dmaplane_mr_cache *mrc);
int dmaplane_mr_init(void);
void dmaplane_mr_exit(void);
#if IS_ENABLED(CONFIG_KUNIT)
struct dmaplane_mr_cache *dmaplane_mr_test_cache_create(unsigned int max_unused);
int dmaplane_mr_test_add(struct dmaplane_mr_cache *c, unsigned long start,
			 struct page **pages, unsigned long npages, bool write);
struct dmaplane_region *dmaplane_mr_test_lookup(struct dmaplane_mr_cache *c,
						u64 addr, u64 len, u32 access);
unsigned int dmaplane_mr_test_invalidate(struct dmaplane_mr_cache *c,
					 unsigned long start, unsigned long end);
void dmaplane_mr_test_counts(struct dmaplane_mr_cache *c, unsigned int *entries,
			     unsigned int *unused, u64 *invalidations, u64 *hits);
#endif

/* dmabuf.c */
int dmaplane_ioctl_dmabuf_export(struct dmaplane_ep *ep, void __user *uarg);
int dmaplane_ioctl_mr_import_dmabuf(struct dmaplane_ep *ep, void __user *uarg);

/* endpoint.c */
struct dmaplane_ep *dmaplane_ep_create(void);
void dmaplane_ep_destroy(struct dmaplane_ep *ep);
int dmaplane_info_fill(const struct dmaplane_ep *ep, struct dmaplane_info *info);
void dmaplane_ep_exit(void);

#endif /* _DMAPLANE_H */

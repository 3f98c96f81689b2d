// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane regions: the common part of arenas, registered user memory and
 * imported dma-bufs -- handles, random remote keys, references, bounds
 * checked copies -- and the accounting of pinned memory against
 * RLIMIT_MEMLOCK and the module-wide cap.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bvec.h>
#include <linux/capability.h>
#include <linux/hashtable.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/overflow.h>
#include <linux/random.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/user_namespace.h>

#include "dmaplane.h"

static unsigned long max_pinned_mb;
module_param(max_pinned_mb, ulong, 0644);
MODULE_PARM_DESC(max_pinned_mb,
		 "Module-wide cap on pinned and arena memory in MiB (0: half of RAM)");

/* Pages charged module-wide; compared with max_pinned_mb. */
static atomic_long_t dmaplane_charged;

/*
 * Published regions by remote key.  Writers hold dmaplane_rkey_lock;
 * readers walk a bucket under rcu_read_lock() and take a reference with
 * kref_get_unless_zero().
 */
#define DMAPLANE_RKEY_BITS 10
static DEFINE_HASHTABLE(dmaplane_rkeys, DMAPLANE_RKEY_BITS);
static DEFINE_SPINLOCK(dmaplane_rkey_lock);

/**
 * dmaplane_region_init() - initialise the common part of a region
 * @r: region, embedded in the kind's own structure
 * @ops: the kind's operations
 * @kind: the kind
 * @access: %DMAPLANE_ACCESS_* bits, already validated
 * @len: length in bytes
 *
 * The region holds one reference, which dmaplane_region_publish() hands
 * to the endpoint's handle table.
 */
void dmaplane_region_init(struct dmaplane_region *r,
			  const struct dmaplane_region_ops *ops,
			  enum dmaplane_region_kind kind, u32 access, u64 len)
{
	kref_init(&r->ref);
	r->ops = ops;
	r->kind = kind;
	r->access = access;
	r->len = len;
	r->uid = current_euid();
	INIT_HLIST_NODE(&r->rkey_node);
	dmaplane_stat_inc(regions);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_region_init);

static struct dmaplane_region *rkey_find_locked(u64 rkey)
{
	struct dmaplane_region *r;

	lockdep_assert_held(&dmaplane_rkey_lock);
	hash_for_each_possible(dmaplane_rkeys, r, rkey_node, rkey)
		if (r->rkey == rkey)
			return r;
	return NULL;
}

/**
 * dmaplane_region_publish() - give a region a handle and a remote key
 * @ep: owning endpoint
 * @r: initialised region; its initial reference moves to @ep
 *
 * Return: 0 with r->handle and r->rkey set, or -ENOMEM/-EBUSY.  On error
 * the caller still owns its reference.
 */
int dmaplane_region_publish(struct dmaplane_ep *ep, struct dmaplane_region *r)
{
	int ret;

	r->owner_id = ep->id;
	ret = xa_alloc_cyclic(&ep->regions, &r->handle, r, xa_limit_31b,
			      &ep->next_handle, GFP_KERNEL_ACCOUNT);
	if (ret < 0)
		return ret;

	spin_lock(&dmaplane_rkey_lock);
	/* Zero is never a valid key; 64 random bits rarely collide. */
	do {
		r->rkey = get_random_u64();
	} while (!r->rkey || rkey_find_locked(r->rkey));
	hash_add_rcu(dmaplane_rkeys, &r->rkey_node, r->rkey);
	spin_unlock(&dmaplane_rkey_lock);
	return 0;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_region_publish);

static void region_unhash(struct dmaplane_region *r)
{
	spin_lock(&dmaplane_rkey_lock);
	if (!hlist_unhashed(&r->rkey_node))
		hash_del_rcu(&r->rkey_node);
	spin_unlock(&dmaplane_rkey_lock);
}

/**
 * dmaplane_region_get() - look a region up by handle on its endpoint
 * @ep: endpoint
 * @handle: handle
 * @kind: the kind the caller expects
 *
 * Return: a referenced region, ERR_PTR(-ENOENT) when @ep has no such
 * handle, ERR_PTR(-EINVAL) when it names a region of another kind
 * (unless @kind is %DMAPLANE_REGION_ANY).
 */
struct dmaplane_region *dmaplane_region_get(struct dmaplane_ep *ep, u32 handle,
					    enum dmaplane_region_kind kind)
{
	struct dmaplane_region *r;
	int err = 0;

	/* Decide under the lock: an unreferenced @r may be freed after it. */
	xa_lock(&ep->regions);
	r = xa_load(&ep->regions, handle);
	if (!r)
		err = -ENOENT;
	else if (kind != DMAPLANE_REGION_ANY && r->kind != kind)
		err = -EINVAL;
	else
		kref_get(&r->ref);
	xa_unlock(&ep->regions);
	return err ? ERR_PTR(err) : r;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_region_get);

/**
 * dmaplane_region_unpublish() - take a region out of its endpoint's table
 * @ep: endpoint
 * @handle: handle
 * @kind: the kind the caller expects
 *
 * The remote key stops resolving at once.  Return: the region with the
 * table's reference, which the caller drops with dmaplane_region_put();
 * ERR_PTR(-ENOENT) or ERR_PTR(-EINVAL) as dmaplane_region_get().
 */
struct dmaplane_region *dmaplane_region_unpublish(struct dmaplane_ep *ep, u32 handle,
						  enum dmaplane_region_kind kind)
{
	struct dmaplane_region *r;
	int err = 0;

	xa_lock(&ep->regions);
	r = xa_load(&ep->regions, handle);
	if (!r)
		err = -ENOENT;
	else if (kind != DMAPLANE_REGION_ANY && r->kind != kind)
		err = -EINVAL;
	else
		__xa_erase(&ep->regions, handle);
	xa_unlock(&ep->regions);
	if (err)
		return ERR_PTR(err);
	region_unhash(r);
	return r;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_region_unpublish);

/**
 * dmaplane_region_lookup_rkey() - find a published region by remote key
 * @rkey: remote key
 *
 * Return: a referenced region or NULL.  Callers check access, bounds and
 * the security domain themselves.
 */
struct dmaplane_region *dmaplane_region_lookup_rkey(u64 rkey)
{
	struct dmaplane_region *r;

	rcu_read_lock();
	hash_for_each_possible_rcu(dmaplane_rkeys, r, rkey_node, rkey) {
		if (r->rkey == rkey && kref_get_unless_zero(&r->ref)) {
			rcu_read_unlock();
			return r;
		}
	}
	rcu_read_unlock();
	return NULL;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_region_lookup_rkey);

static void region_free_rcu(struct rcu_head *rcu)
{
	kfree(container_of(rcu, struct dmaplane_region, rcu));
}

static void region_release(struct kref *ref)
{
	struct dmaplane_region *r = container_of(ref, struct dmaplane_region, ref);

	region_unhash(r);
	r->ops->release(r);
	dmaplane_stat_dec(regions);
	/*
	 * The region must be the first member of the kind's structure
	 * (checked at build time by each kind) so that this frees it all.
	 */
	call_rcu(&r->rcu, region_free_rcu);
}

/**
 * dmaplane_region_put() - drop a reference
 * @r: region, or NULL
 *
 * Must be called from process context: the last put releases the backing
 * memory, which may sleep.
 */
void dmaplane_region_put(struct dmaplane_region *r)
{
	if (r) {
		might_sleep();
		kref_put(&r->ref, region_release);
	}
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_region_put);

/**
 * dmaplane_region_invalidate() - the backing memory went away
 * @r: region
 *
 * Later copies fail with -EFAULT.  Idempotent; safe in any context.
 */
void dmaplane_region_invalidate(struct dmaplane_region *r)
{
	if (!xchg(&r->invalid, true)) {
		dmaplane_stat_inc(invalidations);
		dmaplane_nl_notify_region_invalidated(r);
	}
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_region_invalidate);

/**
 * dmaplane_region_copy() - bounds-checked copy to or from a region
 * @r: referenced region
 * @off: offset in the region
 * @len: bytes; iov_iter_count(@iter) must be at least this
 * @iter: the other side of the copy
 * @to_region: direction
 *
 * Return: 0, -ERANGE when [@off, @off + @len) is not inside the region
 * (overflow-safe), -EFAULT when the region was invalidated.
 */
int dmaplane_region_copy(struct dmaplane_region *r, u64 off, u64 len,
			 struct iov_iter *iter, bool to_region)
{
	u64 end;

	if (check_add_overflow(off, len, &end) || end > r->len)
		return -ERANGE;
	if (READ_ONCE(r->invalid))
		return -EFAULT;
	if (!len)
		return 0;
	if (iov_iter_count(iter) < len)
		return -EINVAL;
	iov_iter_truncate(iter, len);
	return r->ops->copy(r, off, iter, to_region);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_region_copy);

/**
 * dmaplane_bvec_pages() - one piece per page over a run of pages
 * @bv: set here, @npages entries
 * @pages: the pages
 * @npages: entries of @pages, all of them under the range
 * @first_off: the offset of the range in the first page
 * @len: bytes of the range
 *
 * The pieces of @len bytes starting at @first_off in @pages[0], for an
 * %ITER_BVEC iterator or a DMA mapping.
 */
void dmaplane_bvec_pages(struct bio_vec *bv, struct page **pages, unsigned int npages,
			 unsigned int first_off, u64 len)
{
	unsigned int i;

	for (i = 0; i < npages; i++) {
		u32 n = min_t(u64, PAGE_SIZE - first_off, len);

		bvec_set_page(&bv[i], pages[i], n, first_off);
		len -= n;
		first_off = 0;
	}
}

/**
 * dmaplane_region_iter() - an iov_iter over a range of a region
 * @r: referenced region
 * @off: offset in the region
 * @len: bytes
 * @to_region: direction: the iterator is written (%ITER_DEST) when true
 * @iter: set up here
 * @map: what the iterator holds, for dmaplane_region_iter_end()
 *
 * For copies where the other side is the one with a copy primitive (a
 * user buffer of another address space, another region): the pages are
 * referenced (or the dma-buf mapped for CPU access) until
 * dmaplane_region_iter_end(), which must follow a success.
 *
 * Return: 0, -ERANGE (outside the region), -EFAULT (invalidated),
 * -EOPNOTSUPP (a kind that can be neither), -ENOMEM.
 */
int dmaplane_region_iter(struct dmaplane_region *r, u64 off, u64 len, bool to_region,
			 struct iov_iter *iter, struct dmaplane_region_map *map)
{
	unsigned int dir = to_region ? ITER_DEST : ITER_SOURCE;
	unsigned int first_off;
	u64 end;
	int ret;

	memset(map, 0, sizeof(*map));
	map->r = r;
	map->to_region = to_region;
	if (check_add_overflow(off, len, &end) || end > r->len)
		return -ERANGE;
	if (READ_ONCE(r->invalid))
		return -EFAULT;
	if (!len) {
		iov_iter_kvec(iter, dir, &map->kv, 0, 0);
		return 0;
	}
	if (!r->ops->pages) {
		if (!r->ops->vmap)
			return -EOPNOTSUPP;
		ret = r->ops->vmap(r, off, to_region, &map->kv.iov_base);
		if (ret)
			return ret;
		map->vmapped = true;
		map->kv.iov_len = len;
		iov_iter_kvec(iter, dir, &map->kv, 1, len);
		return 0;
	}
	ret = r->ops->pages(r, off, len, &map->pages, &map->npages, &first_off);
	if (ret)
		return ret;
	map->bvec = kvmalloc_array(map->npages, sizeof(*map->bvec), GFP_KERNEL_ACCOUNT);
	if (!map->bvec) {
		dmaplane_region_iter_end(map);
		return -ENOMEM;
	}
	dmaplane_bvec_pages(map->bvec, map->pages, map->npages, first_off, len);
	iov_iter_bvec(iter, dir, map->bvec, map->npages, len);
	return 0;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_region_iter);

/**
 * dmaplane_region_iter_end() - release what dmaplane_region_iter() took
 * @map: the map
 *
 * Return: 0, or -EFAULT when the region was invalidated meanwhile (the
 * copy may have seen memory its owner no longer maps, as
 * &dmaplane_region_ops.copy reports it).
 */
int dmaplane_region_iter_end(struct dmaplane_region_map *map)
{
	if (map->vmapped)
		map->r->ops->vunmap(map->r, map->to_region);
	map->vmapped = false;
	kvfree(map->bvec);
	map->bvec = NULL;
	if (map->pages)
		dmaplane_pages_put(map->pages, map->npages);
	kvfree(map->pages);
	map->pages = NULL;
	return READ_ONCE(map->r->invalid) ? -EFAULT : 0;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_region_iter_end);

/**
 * dmaplane_region_pages() - the pages under a range, for DMA
 * @r: referenced region
 * @off: offset in the region
 * @len: bytes, not zero
 * @pages: set to a kvmalloc()ed array of referenced pages
 * @npages: set to the number of pages
 * @first_off: set to the offset of byte @off in the first page
 *
 * Return: 0, -ERANGE (outside the region), -EFAULT (invalidated),
 * -EOPNOTSUPP (a kind the transport cannot reach), -ENOMEM.
 */
int dmaplane_region_pages(struct dmaplane_region *r, u64 off, u64 len,
			  struct page ***pages, unsigned int *npages,
			  unsigned int *first_off)
{
	u64 end;

	if (!len || check_add_overflow(off, len, &end) || end > r->len)
		return -ERANGE;
	if (READ_ONCE(r->invalid))
		return -EFAULT;
	if (!r->ops->pages)
		return -EOPNOTSUPP;
	return r->ops->pages(r, off, len, pages, npages, first_off);
}

/* Take a reference on @n pages into a new array (helper of ->pages). */
int dmaplane_pages_get(struct page **src, unsigned int n, struct page ***pages)
{
	unsigned int i;

	*pages = kvmalloc_array(n, sizeof(**pages), GFP_KERNEL);
	if (!*pages)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		get_page(src[i]);
		(*pages)[i] = src[i];
	}
	return 0;
}

/* Drop the references of @n pages (those of dmaplane_pages_get() and the like). */
void dmaplane_pages_put(struct page **pages, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		put_page(pages[i]);
}

/**
 * dmaplane_ep_release_regions() - endpoint closing: drop every handle
 * @ep: endpoint
 */
void dmaplane_ep_release_regions(struct dmaplane_ep *ep)
{
	struct dmaplane_region *r;
	unsigned long handle;

	xa_for_each(&ep->regions, handle, r) {
		xa_erase(&ep->regions, handle);
		region_unhash(r);
		dmaplane_region_put(r);
	}
}

static unsigned long dmaplane_max_charged(void)
{
	if (max_pinned_mb)
		return max_pinned_mb << (20 - PAGE_SHIFT);
	return totalram_pages() / 2;
}

/* Who is exempt from RLIMIT_MEMLOCK in charge_pages(). */
enum charge_cap {
	CHARGE_CAP,		/* CAP_IPC_LOCK holders: capable() */
	CHARGE_CAP_NOAUDIT,	/* the same, asked without an audit record */
	CHARGE_WITHIN,		/* nobody */
};

static bool charge_exempt(enum charge_cap cap)
{
	switch (cap) {
	case CHARGE_CAP:
		return capable(CAP_IPC_LOCK);
	case CHARGE_CAP_NOAUDIT:
		return ns_capable_noaudit(&init_user_ns, CAP_IPC_LOCK);
	default:
		return false;
	}
}

/* dmaplane_charge_pages() and its variants, by the exemption @cap. */
static int charge_pages(struct mm_struct *mm, unsigned long npages,
			enum charge_cap cap)
{
	unsigned long lock_limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	unsigned long new;

	new = atomic_long_add_return(npages, &dmaplane_charged);
	if (new > dmaplane_max_charged())
		goto err_uncharge_module;

	new = atomic64_add_return(npages, &mm->pinned_vm);
	if (new > lock_limit && !charge_exempt(cap))
		goto err_uncharge_mm;

	dmaplane_stat_add(charged_pages, npages);
	return 0;

err_uncharge_mm:
	atomic64_sub(npages, &mm->pinned_vm);
err_uncharge_module:
	atomic_long_sub(npages, &dmaplane_charged);
	return -ENOMEM;
}

/**
 * dmaplane_charge_pages() - account pages about to be pinned or allocated
 * @mm: address space to charge (its pinned_vm, as ib_umem does)
 * @npages: number of base pages
 *
 * Charges RLIMIT_MEMLOCK unless the caller has CAP_IPC_LOCK, and always
 * the module-wide cap.  Return: 0, or -ENOMEM when either limit would be
 * exceeded (nothing is charged then).
 */
int dmaplane_charge_pages(struct mm_struct *mm, unsigned long npages)
{
	return charge_pages(mm, npages, CHARGE_CAP);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_charge_pages);

/**
 * dmaplane_charge_pages_within() - dmaplane_charge_pages() within
 *	RLIMIT_MEMLOCK for every caller
 * @mm: address space to charge
 * @npages: number of base pages
 *
 * For pins that are an optimisation with a fallback (msg.c: a small
 * posted receive): CAP_IPC_LOCK is not consulted, so that a process over
 * its limit is not audited for a capability on every operation.
 *
 * Return: as dmaplane_charge_pages(); undone by dmaplane_uncharge_pages().
 */
int dmaplane_charge_pages_within(struct mm_struct *mm, unsigned long npages)
{
	return charge_pages(mm, npages, CHARGE_WITHIN);
}

/**
 * dmaplane_charge_pages_noaudit() - dmaplane_charge_pages() without an
 *	audit record
 * @mm: address space to charge
 * @npages: number of base pages
 *
 * For pins that are an optimisation with a fallback, tried on many
 * operations (mr.c: a message buffer's registration): CAP_IPC_LOCK
 * exempts from RLIMIT_MEMLOCK as for a registration, but a caller without
 * it is not audited for the capability each time.
 *
 * Return: as dmaplane_charge_pages(); undone by dmaplane_uncharge_pages().
 */
int dmaplane_charge_pages_noaudit(struct mm_struct *mm, unsigned long npages)
{
	return charge_pages(mm, npages, CHARGE_CAP_NOAUDIT);
}

/**
 * dmaplane_uncharge_pages() - undo dmaplane_charge_pages()
 * @mm: the address space charged (kept alive by the caller's mmgrab())
 * @npages: number of base pages
 */
void dmaplane_uncharge_pages(struct mm_struct *mm, unsigned long npages)
{
	atomic64_sub(npages, &mm->pinned_vm);
	atomic_long_sub(npages, &dmaplane_charged);
	dmaplane_stat_sub(charged_pages, npages);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_uncharge_pages);

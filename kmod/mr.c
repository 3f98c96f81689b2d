// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane registration of user memory: long-term pinning charged to
 * RLIMIT_MEMLOCK, a per-address-space registration cache, and MMU
 * interval notifiers that keep the cache coherent with the address space.
 *
 * Objects:
 *
 * - &struct dmaplane_mr_cache: one per address space (mm), shared by every
 *   endpoint of that mm.  It holds the pinned ranges ("entries") in an
 *   interval tree keyed by page-aligned address, and the unreferenced
 *   ones on an LRU list so that a later registration of the same memory
 *   costs a tree lookup instead of a pin.
 * - &struct dmaplane_mr_entry: a pinned, page-aligned range with one MMU
 *   interval notifier.  Pinned writable or read-only.
 * - &struct dmaplane_mr: a region (handle, rkey) pointing into an entry
 *   with its own byte offset, length and access bits.
 *
 * An entry is PINNING while its registration pins the pages, VALID while
 * it is in the tree, and DEAD once it was invalidated by its notifier or
 * evicted.  A DEAD entry is torn down (notifier removed, pages unpinned,
 * memory uncharged) by the cache's teardown work, never by the notifier
 * callback: the callback may not sleep and may not remove its own
 * notifier.  Regions still pointing at a DEAD entry are invalid: their
 * copies fail with -EFAULT, and deregistering them just drops the entry.
 *
 * A VALID entry may also be SUSPECT: an MMU_NOTIFY_CLEAR event hit it.
 * CLEAR means a real loss of the pages (MADV_DONTNEED, a COW, reclaim)
 * but also comes from splitting a huge PMD, which the kernel does over
 * the whole PMD window at every VMA split at an address that is not
 * PMD-aligned, huge page or not (6.1 __split_huge_pmd()): a neighbour
 * mapped into and unmapped from the VMA leaves the pinned pages where
 * they were.  So CLEAR does not kill; the entry is verified instead
 * (mr_entry_verify(): are the pinned pages still the ones the process
 * maps there?) before it is used or reported (copies, pages for DMA,
 * MR_QUERY, cache hits), and soon by the cache's verify work, so that a
 * real loss is reported without any use.  A suspect entry that fails
 * the verification is invalidated and killed as on any other event.
 *
 * Deliveries (msg.c: copy_remote(), a message copied into another
 * process's posted receive buffer or out of a rendezvous sender's buffer)
 * reuse the entries: when the range lies wholly in a VALID entry of the
 * other mm's cache (referenced or on the LRU), dmaplane_mr_cache_copy()
 * copies through the entry's pages and pins nothing.  The copy holds the
 * entry like a region does (a user, off the LRU, so that no eviction
 * unpins it), and pages_sem for reading; it verifies a suspect entry
 * before and after, and when the entry died or lost its pages meanwhile
 * it is undone (the iterator reverted) and copy_remote() pins instead, so
 * that the data lands in the pages the process maps at the end of the
 * copy, as with the pinning copy.  A write needs an entry pinned
 * writable: the access is the one checked when the entry was pinned, as
 * for regions (an mprotect() since does not revoke it, as it does not
 * revoke a registration).  The caches are found by mm in an RCU hash
 * table and freed after a grace period.
 *
 * Posting a large receive, or queueing a large send as a rendezvous,
 * makes sure an entry covers its buffer (dmaplane_mr_cache_add_msg(),
 * called by msg.c; a small receive pins its page for its own life
 * instead: recv_pin()) once the buffer comes back: the entry is found,
 * or, when the same range missed recently too (the cache remembers its
 * last MR_SEEN misses), pinned and left unused on the LRU at once, so
 * that the copies into or out of the buffer, and those of every later
 * message in it, pin nothing.  A buffer used once costs a look-up, not a
 * registration it would never repay.  Such message entries are an
 * optimisation with a fallback: they pin only pages mapped writable
 * already (FOLL_NOFAULT: a buffer is never faulted in for them;
 * FOLL_WRITE, so that one entry serves a buffer sent from and received
 * into), give up rather than take the mmap_lock for writing, are charged
 * to RLIMIT_MEMLOCK (CAP_IPC_LOCK exempts, asked without an audit
 * record) without evicting anything for it, and together take at most
 * mr_cache_msg_mb per address space, least recently used evicted
 * first.  An explicit registration that would exceed RLIMIT_MEMLOCK
 * evicts unused entries, these included (mr_cache_charge()).
 *
 * Locks, outermost first:
 *
 * - dmaplane_mr_caches_lock (mutex): the table of caches and each
 *   cache's @users count, and the ep->mr_cache pointers.  The table is
 *   also read under RCU (dmaplane_mr_cache_copy()), which takes a
 *   reference with kref_get_unless_zero() and no lock.
 * - entry->pages_sem (rwsem): entry->pages against unpinning.  Copies
 *   and verifications hold it for reading; the teardown work takes it for
 *   writing before it unpins.  Never taken by the notifier callback, so
 *   copies may fault on user memory (and enter reclaim) while holding it,
 *   and verifications may wait for an invalidation to end and take the
 *   mm's mmap_lock under it.  A delivery copy takes it with no other
 *   lock held but a reference on the other mm (mm_users, not its
 *   mmap_lock: a verification under it takes that), and holds one
 *   entry's pages_sem at a time: copies through regions (the iterators of
 *   dmaplane_region_iter()) hold page references, not pages_sem.
 * - cache->lock (spinlock): the tree, the LRU and dead lists, entry
 *   states and user counts, the region lists of the entries and the
 *   notifier sequence numbers.  Taken by the notifier callback, which may
 *   run in non-blocking context, hence a spinlock; never held across
 *   anything that sleeps.
 *
 * References: an entry's kref counts the regions pointing at it plus one
 * "pin reference" held from creation until its teardown is done; an
 * entry holds a reference on its cache, as does each queued teardown
 * work.  The cache's endpoints together hold one more, dropped when the
 * last endpoint of the mm goes away.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/hashtable.h>
#include <linux/interval_tree.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/mmu_notifier.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/rcupdate.h>
#include <linux/rwsem.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/shmem_fs.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "dmaplane.h"

static unsigned int mr_cache_max_entries = 256;
module_param(mr_cache_max_entries, uint, 0644);
MODULE_PARM_DESC(mr_cache_max_entries,
		 "Unreferenced registrations kept pinned per address space (0: none)");

static unsigned int mr_cache_msg_mb = 256;
module_param(mr_cache_msg_mb, uint, 0644);
MODULE_PARM_DESC(mr_cache_msg_mb,
		 "MiB of message buffers (large receives and rendezvous sends) kept registered per address space (0: none)");

/*
 * Ranges of message buffers that missed, remembered per cache: a range
 * that misses again among them is registered (dmaplane_mr_cache_add_msg()).
 */
#define MR_SEEN	64

/* Teardown work of every cache; drained at module unload. */
static struct workqueue_struct *dmaplane_mr_wq;

/*
 * The caches, one per mm, hashed by mm, and their users counts; see the
 * top comment.  Changed under dmaplane_mr_caches_lock, read under it or
 * under RCU.
 */
static DEFINE_MUTEX(dmaplane_mr_caches_lock);
static DEFINE_HASHTABLE(dmaplane_mr_caches, 6);

/**
 * struct dmaplane_mr_cache - the registration cache of one address space
 * @ref: the endpoints (one reference together), the entries and the
 *	queued teardown work
 * @users: endpoints using the cache, under dmaplane_mr_caches_lock
 * @node: in dmaplane_mr_caches while @users is not zero, changed under
 *	dmaplane_mr_caches_lock (read under RCU too)
 * @rcu: the cache is freed after a grace period (RCU readers of
 *	dmaplane_mr_caches)
 * @mm: the address space (mmgrab()ed); NULL for KUnit caches, whose
 *	entries hold kernel pages
 * @lock: protects @tree, @lru, @dead, @suspects, @nr_entries,
 *	@nr_unused, @msg_pages, @seen, @seen_next, @closing and the state,
 *	suspicion, users and regions of every entry
 * @tree: VALID entries by page range
 * @lru: VALID entries no region uses, least recently used first
 * @dead: DEAD entries waiting for @teardown_work
 * @suspects: suspect VALID entries waiting for @verify_work
 * @nr_entries: entries in @tree
 * @nr_unused: entries on @lru
 * @max_unused: bound of @nr_unused (mr_cache_max_entries at creation)
 * @msg_pages: pages of the VALID message entries and of those being
 *	pinned (dmaplane_mr_cache_add_msg())
 * @seen: the last MR_SEEN message buffers that missed: first page and
 *	number of pages (0: none)
 * @seen_next: the slot of @seen to fill next
 * @closing: the last endpoint is gone: entries are not kept when unused
 * @teardown_work: tears down the entries on @dead
 * @verify_work: verifies the entries on @suspects
 * @invalidations: registrations (regions) invalidated by the notifiers
 * @cache_hits: registrations served from the cache
 */
struct dmaplane_mr_cache {
	struct kref ref;
	unsigned int users;
	struct hlist_node node;
	struct rcu_head rcu;
	struct mm_struct *mm;
	spinlock_t lock;	/* tree, lists, counts, entry states: see above */
	struct rb_root_cached tree;
	struct list_head lru;
	struct list_head dead;
	struct list_head suspects;
	unsigned int nr_entries;
	unsigned int nr_unused;
	unsigned int max_unused;
	unsigned long msg_pages;
	struct {
		unsigned long start;
		unsigned long npages;
	} seen[MR_SEEN];
	unsigned int seen_next;
	bool closing;
	struct work_struct teardown_work;
	struct work_struct verify_work;
	atomic64_t invalidations;
	atomic64_t cache_hits;
};

enum mr_entry_state {
	MR_ENTRY_PINNING,
	MR_ENTRY_VALID,
	MR_ENTRY_DEAD,
};

/**
 * struct dmaplane_mr_entry - a pinned, page-aligned range of user memory
 * @it: [start, last] of the range; in cache->tree while VALID
 * @lru: on cache->lru while VALID and unused, else empty
 * @dead: on cache->dead from the kill until the teardown work takes it
 * @suspect_node: on cache->suspects while @suspect until the verify work
 *	takes it
 * @regions: the &struct dmaplane_mr using it, under cache->lock
 * @notifier: MMU interval notifier covering the range
 * @cache: the cache (referenced)
 * @ref: regions using it plus the pin reference (see the top comment),
 *	plus the delivery copies in flight
 * @users: number of @regions plus delivery copies in flight
 *	(dmaplane_mr_cache_copy()), under cache->lock
 * @state: &enum mr_entry_state, under cache->lock
 * @suspect: VALID, but hit by MMU_NOTIFY_CLEAR since its last
 *	verification (see the top comment), under cache->lock
 * @write: pinned with FOLL_WRITE
 * @msg: pinned for a message buffer (dmaplane_mr_cache_add_msg()),
 *	counted in cache->msg_pages until it is killed
 * @notifier_live: @notifier is inserted
 * @pinned: @pages are pinned user pages (else KUnit kernel pages)
 * @pages_sem: @pages against unpinning (see the top comment)
 * @pages: the pages, or NULL once released
 * @npages: number of @pages
 * @charged: pages charged with dmaplane_charge_pages()
 */
struct dmaplane_mr_entry {
	struct interval_tree_node it;
	struct list_head lru;
	struct list_head dead;
	struct list_head suspect_node;
	struct list_head regions;
	struct mmu_interval_notifier notifier;
	struct dmaplane_mr_cache *cache;
	struct kref ref;
	unsigned int users;
	enum mr_entry_state state;
	bool suspect;
	bool write;
	bool msg;
	bool notifier_live;
	bool pinned;
	struct rw_semaphore pages_sem;
	struct page **pages;
	unsigned long npages;
	unsigned long charged;
};

/**
 * struct dmaplane_mr - a registered region of user memory
 * @region: the common part; must stay first (region.c frees it)
 * @entry: the pinned range it lies in, or NULL before it is attached
 * @entry_node: in entry->regions, under cache->lock
 * @addr: user address of byte 0
 * @first_page: index in entry->pages of the page holding byte 0
 * @page_off: offset of byte 0 in that page
 */
struct dmaplane_mr {
	struct dmaplane_region region;
	struct dmaplane_mr_entry *entry;
	struct list_head entry_node;
	u64 addr;
	unsigned long first_page;
	unsigned int page_off;
};

static_assert(offsetof(struct dmaplane_mr, region) == 0);

static inline struct dmaplane_mr *to_mr(struct dmaplane_region *r)
{
	return container_of(r, struct dmaplane_mr, region);
}

static void mr_cache_release(struct kref *ref)
{
	struct dmaplane_mr_cache *c = container_of(ref, struct dmaplane_mr_cache, ref);

	WARN_ON_ONCE(c->nr_entries || !list_empty(&c->dead) || !list_empty(&c->suspects));
	if (c->mm)
		mmdrop(c->mm);
	/* An RCU reader may still be looking at it (mr_cache_get_mm()). */
	kfree_rcu(c, rcu);
}

static void mr_cache_kref_put(struct dmaplane_mr_cache *c)
{
	kref_put(&c->ref, mr_cache_release);
}

static void mr_cache_teardown_work(struct work_struct *work);
static void mr_cache_verify_work(struct work_struct *work);

static struct dmaplane_mr_cache *mr_cache_alloc(struct mm_struct *mm)
{
	struct dmaplane_mr_cache *c;

	c = kzalloc(sizeof(*c), GFP_KERNEL_ACCOUNT);
	if (!c)
		return NULL;
	kref_init(&c->ref);
	c->users = 1;
	INIT_HLIST_NODE(&c->node);
	c->mm = mm;
	if (mm)
		mmgrab(mm);
	spin_lock_init(&c->lock);
	c->tree = RB_ROOT_CACHED;
	INIT_LIST_HEAD(&c->lru);
	INIT_LIST_HEAD(&c->dead);
	INIT_LIST_HEAD(&c->suspects);
	c->max_unused = READ_ONCE(mr_cache_max_entries);
	INIT_WORK(&c->teardown_work, mr_cache_teardown_work);
	INIT_WORK(&c->verify_work, mr_cache_verify_work);
	atomic64_set(&c->invalidations, 0);
	atomic64_set(&c->cache_hits, 0);
	return c;
}

/*
 * Take a VALID or PINNING entry out of service: out of the tree and the
 * LRU, onto the dead list, and queue the teardown work.
 */
static void mr_entry_kill_locked(struct dmaplane_mr_cache *c,
				 struct dmaplane_mr_entry *e)
{
	lockdep_assert_held(&c->lock);

	if (e->state == MR_ENTRY_DEAD)
		return;
	if (e->state == MR_ENTRY_VALID) {
		interval_tree_remove(&e->it, &c->tree);
		c->nr_entries--;
		if (e->msg)
			c->msg_pages -= e->npages;
	}
	if (!list_empty(&e->lru)) {
		list_del_init(&e->lru);
		c->nr_unused--;
	}
	WRITE_ONCE(e->suspect, false);
	list_del_init(&e->suspect_node);
	e->state = MR_ENTRY_DEAD;
	list_add_tail(&e->dead, &c->dead);
	/* Each queued execution holds a cache reference. */
	if (queue_work(dmaplane_mr_wq, &c->teardown_work))
		kref_get(&c->ref);
}

/* The memory behind @e went away: invalidate its regions and kill it. */
static void mr_entry_invalidate_locked(struct dmaplane_mr_cache *c,
				       struct dmaplane_mr_entry *e)
{
	struct dmaplane_mr *mr;

	lockdep_assert_held(&c->lock);

	if (e->state != MR_ENTRY_VALID)
		return;
	list_for_each_entry(mr, &e->regions, entry_node) {
		/* Regions of user memory are only invalidated here. */
		if (!READ_ONCE(mr->region.invalid)) {
			dmaplane_region_invalidate(&mr->region);
			atomic64_inc(&c->invalidations);
		}
	}
	mr_entry_kill_locked(c, e);
}

/*
 * Evict the least recently used unreferenced entry, or with @msg_only
 * the least recently used unreferenced message entry; false if none.
 */
static bool mr_cache_evict_one_locked(struct dmaplane_mr_cache *c, bool msg_only)
{
	struct dmaplane_mr_entry *e;

	lockdep_assert_held(&c->lock);

	list_for_each_entry(e, &c->lru, lru) {
		if (!msg_only || e->msg) {
			mr_entry_kill_locked(c, e);
			return true;
		}
	}
	return false;
}

/*
 * Whether the message buffer [@start, @start + @npages pages) missed
 * recently too (then it is forgotten: it is being registered); else it
 * is remembered, in place of the oldest.
 */
static bool mr_cache_seen_locked(struct dmaplane_mr_cache *c, unsigned long start,
				 unsigned long npages)
{
	unsigned int i;

	lockdep_assert_held(&c->lock);

	for (i = 0; i < MR_SEEN; i++) {
		if (c->seen[i].start == start && c->seen[i].npages == npages) {
			c->seen[i].npages = 0;
			return true;
		}
	}
	c->seen[c->seen_next].start = start;
	c->seen[c->seen_next].npages = npages;
	c->seen_next = (c->seen_next + 1) % MR_SEEN;
	return false;
}

/* Keep at most max_unused unreferenced entries. */
static void mr_cache_trim_locked(struct dmaplane_mr_cache *c)
{
	lockdep_assert_held(&c->lock);

	while (c->nr_unused > c->max_unused)
		mr_cache_evict_one_locked(c, false);
}

/*
 * A VALID entry @e no region uses any more: keep it on the LRU (most
 * recently used last) unless the cache is closing or kept nothing.
 */
static void mr_entry_unused_locked(struct dmaplane_mr_cache *c,
				   struct dmaplane_mr_entry *e)
{
	lockdep_assert_held(&c->lock);

	if (c->closing || !c->max_unused) {
		mr_entry_kill_locked(c, e);
		return;
	}
	list_add_tail(&e->lru, &c->lru);
	c->nr_unused++;
	mr_cache_trim_locked(c);
}

static void mr_entry_free(struct kref *ref)
{
	struct dmaplane_mr_entry *e = container_of(ref, struct dmaplane_mr_entry, ref);
	struct dmaplane_mr_cache *c = e->cache;

	kfree(e);
	mr_cache_kref_put(c);
}

static void mr_release_pages(struct page **pages, unsigned long npages,
			     bool pinned, bool dirty)
{
	unsigned long i;

	if (pinned) {
		unpin_user_pages_dirty_lock(pages, npages, dirty);
		return;
	}
	for (i = 0; i < npages; i++)
		put_page(pages[i]);
}

/* Remove the notifier, unpin, uncharge, drop the pin reference. */
static void mr_entry_teardown(struct dmaplane_mr_entry *e)
{
	struct dmaplane_mr_cache *c = e->cache;
	struct page **pages;

	if (e->notifier_live)
		mmu_interval_notifier_remove(&e->notifier);

	/* Wait for copies in flight. */
	down_write(&e->pages_sem);
	pages = e->pages;
	e->pages = NULL;
	up_write(&e->pages_sem);

	if (pages) {
		mr_release_pages(pages, e->npages, e->pinned, e->write);
		kvfree(pages);
		if (e->pinned) {
			dmaplane_stat_sub(pinned_pages, e->npages);
			dmaplane_stat_dec(user_mrs);
		}
	}
	if (e->charged)
		dmaplane_uncharge_pages(c->mm, e->charged);
	kref_put(&e->ref, mr_entry_free);
}

static void mr_cache_teardown_work(struct work_struct *work)
{
	struct dmaplane_mr_cache *c =
		container_of(work, struct dmaplane_mr_cache, teardown_work);
	struct dmaplane_mr_entry *e;

	for (;;) {
		spin_lock(&c->lock);
		e = list_first_entry_or_null(&c->dead, struct dmaplane_mr_entry, dead);
		if (e)
			list_del_init(&e->dead);
		spin_unlock(&c->lock);
		if (!e)
			break;
		mr_entry_teardown(e);
		cond_resched();
	}
	/* The reference taken when this execution was queued. */
	mr_cache_kref_put(c);
}

/*
 * get_user_pages_remote() lost its vmas argument in 6.5, in the same
 * series as pin_user_pages_remote(), whose probe tells which one this is.
 */
#if defined(DMAPLANE_HAVE_PIN_USER_PAGES_REMOTE)
#define mr_get_user_pages_remote(mm, start, nr, flags, pages) \
	get_user_pages_remote(mm, start, nr, flags, pages, NULL)
#else
#define mr_get_user_pages_remote(mm, start, nr, flags, pages) \
	get_user_pages_remote(mm, start, nr, flags, pages, NULL, NULL)
#endif

/* Pages looked up at a time by a verification. */
#define MR_VERIFY_CHUNK	32

/*
 * Pinning a new entry and verifying a suspect one start over when an
 * invalidation of the range ran meanwhile.  A process that zaps the range
 * back to back (MADV_DONTNEED in a loop from another thread, under the
 * mmap_lock taken for reading) would make them start over for ever: after
 * MR_TRIES_UNLOCKED tries, they hold the mmap_lock for writing, which
 * keeps out every invalidation a thread can drive through its own
 * address space, and after MR_TRIES in all they give up (-EAGAIN for a
 * registration; the entry stays suspect for a verification).  What is
 * left (reclaim, migration, a truncation of a shared file) does not go
 * on for ever.
 */
#define MR_TRIES_UNLOCKED	4
#define MR_TRIES		16

/*
 * Whether the process maps the pinned pages of @e at their addresses now.
 * A read-only look at the page tables: FOLL_NOFAULT so that nothing is
 * faulted in (hugetlb VMAs of 6.1 fault anyway, which only replaces a
 * page that is gone already), no FOLL_WRITE (that would break COW and
 * find another page), FOLL_FORCE for PROT_NONE (mprotect or NUMA hinting)
 * mappings of the same pages.
 *
 * @locked: the caller holds the mm's mmap_lock (for writing).
 *
 * Return: 1 when it does, 0 when not, -EINTR when a fatal signal of the
 * caller stopped the lookup (nothing is known then).
 */
static int mr_entry_pages_mapped(struct dmaplane_mr_entry *e, bool locked)
{
	struct mm_struct *mm = e->cache->mm;
	struct page *pages[MR_VERIFY_CHUNK];
	unsigned long done = 0;
	bool same = true;
	int ret = 0;
	long i, n;

	if (!mmget_not_zero(mm))
		return false;
	while (same && done < e->npages) {
		n = min_t(unsigned long, e->npages - done, MR_VERIFY_CHUNK);
		if (!locked)
			mmap_read_lock(mm);
		n = mr_get_user_pages_remote(mm, e->it.start + (done << PAGE_SHIFT), n,
					     FOLL_NOFAULT | FOLL_FORCE, pages);
		if (!locked)
			mmap_read_unlock(mm);
		if (n <= 0) {
			/* GUP stops at a fatal signal, mapped or not. */
			if (fatal_signal_pending(current))
				ret = -EINTR;
			break;
		}
		for (i = 0; i < n; i++) {
			if (pages[i] != e->pages[done + i])
				same = false;
			put_page(pages[i]);
		}
		done += n;
		cond_resched();
	}
	mmput(mm);
	if (ret)
		return ret;
	return same && done == e->npages;
}

/*
 * Resolve the suspicion on @e (see the top comment): clear it when the
 * process still maps the pinned pages, else invalidate and kill @e.
 * Called with e->pages_sem held for reading and e->pages set; sleeps.
 *
 * Return: true when @e is VALID and not suspect; false when it is DEAD,
 * or still suspect because the caller got a fatal signal (the verify
 * work, which gets none, resolves it) or because invalidations of the
 * range kept coming (MR_TRIES).
 */
static bool mr_entry_verify(struct dmaplane_mr_entry *e)
{
	struct dmaplane_mr_cache *c = e->cache;
	struct mm_struct *mm = c->mm;
	unsigned int tries = 0;
	bool locked = false;
	unsigned long seq;
	int same;
	bool ok;

	lockdep_assert_held(&e->pages_sem);
	might_sleep();

	spin_lock(&c->lock);
	while (e->state == MR_ENTRY_VALID && e->suspect) {
		spin_unlock(&c->lock);
		if (tries++ == MR_TRIES)
			return false;
		if (tries > MR_TRIES_UNLOCKED && !locked) {
			/* The cache holds mm_count: @mm is still there. */
			if (!mmget_not_zero(mm))
				return false;
			if (mmap_write_lock_killable(mm)) {
				mmput(mm);
				return false;
			}
			locked = true;
		}
		/* Waits for an invalidation of the range to end. */
		seq = mmu_interval_read_begin(&e->notifier);
		same = mr_entry_pages_mapped(e, locked);
		if (same < 0) {
			ok = false;
			goto out_unlock_mm;
		}
		spin_lock(&c->lock);
		if (mmu_interval_read_retry(&e->notifier, seq)) {
			spin_unlock(&c->lock);
			cond_resched();
			spin_lock(&c->lock);
			continue;
		}
		if (same) {
			WRITE_ONCE(e->suspect, false);
			list_del_init(&e->suspect_node);
		} else {
			mr_entry_invalidate_locked(c, e);
		}
	}
	ok = e->state == MR_ENTRY_VALID;
	spin_unlock(&c->lock);
out_unlock_mm:
	if (locked) {
		mmap_write_unlock(mm);
		mmput(mm);
	}
	return ok;
}

/* Verify @e if it is suspect; e->pages_sem held for reading. */
static bool mr_entry_check(struct dmaplane_mr_entry *e)
{
	if (!READ_ONCE(e->suspect))
		return true;
	return e->pages && mr_entry_verify(e);
}

static void mr_cache_verify_work(struct work_struct *work)
{
	struct dmaplane_mr_cache *c =
		container_of(work, struct dmaplane_mr_cache, verify_work);
	struct dmaplane_mr_entry *e;

	for (;;) {
		spin_lock(&c->lock);
		e = list_first_entry_or_null(&c->suspects, struct dmaplane_mr_entry,
					     suspect_node);
		if (e) {
			/* Still VALID: its pin reference is there. */
			list_del_init(&e->suspect_node);
			kref_get(&e->ref);
		}
		spin_unlock(&c->lock);
		if (!e)
			break;
		down_read(&e->pages_sem);
		mr_entry_check(e);
		up_read(&e->pages_sem);
		kref_put(&e->ref, mr_entry_free);
		cond_resched();
	}
	/* The reference taken when this execution was queued. */
	mr_cache_kref_put(c);
}

static bool mr_invalidate(struct mmu_interval_notifier *mni,
			  const struct mmu_notifier_range *range,
			  unsigned long cur_seq)
{
	struct dmaplane_mr_entry *e =
		container_of(mni, struct dmaplane_mr_entry, notifier);
	struct dmaplane_mr_cache *c = e->cache;

	/*
	 * A change of protection (mprotect, NUMA balancing's PROT_NONE
	 * hinting, fork's write protection: pinned anonymous pages are
	 * copied for the child, never write-protected in the parent) or of
	 * soft-dirty bits leaves the same pages mapped at the same place:
	 * the registration stays valid.  A CLEAR (MADV_DONTNEED, COW,
	 * reclaim, but also a huge PMD split over a whole PMD window: see the
	 * top comment) makes the entry suspect, to be verified.  Any other
	 * event overlapping the range (munmap, mremap, migration, exit)
	 * means the process may no longer see these pages.  Only
	 * non-sleeping bookkeeping here: this may run with
	 * !mmu_notifier_range_blockable(range).
	 */
	switch (range->event) {
	case MMU_NOTIFY_PROTECTION_VMA:
	case MMU_NOTIFY_PROTECTION_PAGE:
	case MMU_NOTIFY_SOFT_DIRTY:
		return true;
	default:
		break;
	}
	spin_lock(&c->lock);
	mmu_interval_set_seq(mni, cur_seq);
	if (range->event != MMU_NOTIFY_CLEAR) {
		mr_entry_invalidate_locked(c, e);
	} else if (e->state == MR_ENTRY_VALID && !e->suspect) {
		WRITE_ONCE(e->suspect, true);
		list_add_tail(&e->suspect_node, &c->suspects);
		/* Each queued execution holds a cache reference. */
		if (queue_work(dmaplane_mr_wq, &c->verify_work))
			kref_get(&c->ref);
	}
	spin_unlock(&c->lock);
	return true;
}

static const struct mmu_interval_notifier_ops mr_mn_ops = {
	.invalidate = mr_invalidate,
};

/* Find a VALID entry covering [start, last] pinned with enough access. */
static struct dmaplane_mr_entry *
mr_cache_find_locked(struct dmaplane_mr_cache *c, unsigned long start,
		     unsigned long last, bool write)
{
	struct interval_tree_node *it;
	struct dmaplane_mr_entry *e;

	lockdep_assert_held(&c->lock);

	for (it = interval_tree_iter_first(&c->tree, start, last); it;
	     it = interval_tree_iter_next(it, start, last)) {
		e = container_of(it, struct dmaplane_mr_entry, it);
		if (it->start <= start && it->last >= last && (e->write || !write))
			return e;
	}
	return NULL;
}

/* Point @mr into the VALID entry @e. */
static void mr_attach_locked(struct dmaplane_mr_cache *c,
			     struct dmaplane_mr_entry *e, struct dmaplane_mr *mr)
{
	lockdep_assert_held(&c->lock);

	if (!list_empty(&e->lru)) {
		list_del_init(&e->lru);
		c->nr_unused--;
	}
	e->users++;
	kref_get(&e->ref);
	list_add_tail(&mr->entry_node, &e->regions);
	mr->entry = e;
	mr->first_page = ((mr->addr & PAGE_MASK) - e->it.start) >> PAGE_SHIFT;
}

static void mr_region_release(struct dmaplane_region *r)
{
	struct dmaplane_mr *mr = to_mr(r);
	struct dmaplane_mr_entry *e = mr->entry;
	struct dmaplane_mr_cache *c;

	if (!e)
		return;
	c = e->cache;
	spin_lock(&c->lock);
	list_del(&mr->entry_node);
	if (!--e->users && e->state == MR_ENTRY_VALID)
		mr_entry_unused_locked(c, e);
	spin_unlock(&c->lock);
	kref_put(&e->ref, mr_entry_free);
}

static int mr_region_copy(struct dmaplane_region *r, u64 off,
			  struct iov_iter *iter, bool to_region)
{
	struct dmaplane_mr *mr = to_mr(r);
	struct dmaplane_mr_entry *e = mr->entry;
	u64 pos = mr->page_off + off;
	int ret = 0;

	/* Access bits are the caller's business; this guards the pages. */
	if (to_region && !e->write)
		return -EACCES;

	down_read(&e->pages_sem);
	if (!e->pages || READ_ONCE(r->invalid) || !mr_entry_check(e)) {
		ret = -EFAULT;
		goto out_unlock;
	}
	while (iov_iter_count(iter)) {
		unsigned long idx = mr->first_page + (pos >> PAGE_SHIFT);
		size_t poff = offset_in_page(pos);
		size_t n = min_t(size_t, PAGE_SIZE - poff, iov_iter_count(iter));
		size_t done;

		if (WARN_ON_ONCE(idx >= e->npages)) {
			ret = -ERANGE;
			break;
		}
		if (to_region)
			done = copy_page_from_iter(e->pages[idx], poff, n, iter);
		else
			done = copy_page_to_iter(e->pages[idx], poff, n, iter);
		if (done != n) {
			ret = -EFAULT;
			break;
		}
		pos += n;
	}
	/*
	 * The notifier marks the region invalid, or its entry suspect, before
	 * the pages leave the address space: if neither happened by now, or
	 * the verification finds the pages still mapped, the copy saw the
	 * process's pages throughout.  Otherwise report the collision.
	 */
	if (!ret && (READ_ONCE(r->invalid) || !mr_entry_check(e)))
		ret = -EFAULT;
out_unlock:
	up_read(&e->pages_sem);
	return ret;
}

static int mr_region_pages(struct dmaplane_region *r, u64 off, u64 len,
			   struct page ***pages, unsigned int *npages,
			   unsigned int *first_off)
{
	struct dmaplane_mr *mr = to_mr(r);
	struct dmaplane_mr_entry *e = mr->entry;
	u64 pos = mr->page_off + off;
	unsigned long first = mr->first_page + (pos >> PAGE_SHIFT);
	unsigned long last = mr->first_page + ((pos + len - 1) >> PAGE_SHIFT);
	int ret;

	/*
	 * The references keep the pages, not the registration: a transfer
	 * racing with an invalidation lands in pages the process no longer
	 * maps, as a copy would (the notifier marks the region first).
	 */
	down_read(&e->pages_sem);
	if (!e->pages || READ_ONCE(r->invalid) || WARN_ON_ONCE(last >= e->npages) ||
	    !mr_entry_check(e)) {
		ret = -EFAULT;
	} else {
		*npages = last - first + 1;
		*first_off = offset_in_page(pos);
		ret = dmaplane_pages_get(e->pages + first, *npages, pages);
	}
	up_read(&e->pages_sem);
	return ret;
}

static const struct dmaplane_region_ops mr_region_ops = {
	.copy = mr_region_copy,
	.pages = mr_region_pages,
	.release = mr_region_release,
};

static struct dmaplane_mr *mr_alloc(u64 addr, u64 len, u32 access)
{
	struct dmaplane_mr *mr;

	mr = kzalloc(sizeof(*mr), GFP_KERNEL_ACCOUNT);
	if (!mr)
		return NULL;
	dmaplane_region_init(&mr->region, &mr_region_ops, DMAPLANE_REGION_USER,
			     access, len);
	INIT_LIST_HEAD(&mr->entry_node);
	mr->addr = addr;
	mr->page_off = offset_in_page(addr);
	return mr;
}

/* Resolve a suspicion on the entry of @mr before reporting its state. */
static void mr_region_check(struct dmaplane_mr *mr)
{
	struct dmaplane_mr_entry *e = mr->entry;

	if (!e || !READ_ONCE(e->suspect))
		return;
	down_read(&e->pages_sem);
	mr_entry_check(e);
	up_read(&e->pages_sem);
}

/* Serve @mr from the cache, verifying a suspect entry first; false on a miss. */
static bool mr_try_cached(struct dmaplane_mr_cache *c, struct dmaplane_mr *mr)
{
	unsigned long start = mr->addr & PAGE_MASK;
	unsigned long last = PAGE_ALIGN(mr->addr + mr->region.len) - 1;
	struct dmaplane_mr_entry *e;

	for (;;) {
		spin_lock(&c->lock);
		e = mr_cache_find_locked(c, start, last,
					 dmaplane_access_writes(mr->region.access));
		if (!e || !e->suspect)
			break;
		/* VALID, so the pin reference keeps it while we sleep. */
		kref_get(&e->ref);
		spin_unlock(&c->lock);
		down_read(&e->pages_sem);
		mr_entry_check(e);
		up_read(&e->pages_sem);
		kref_put(&e->ref, mr_entry_free);
	}
	if (e) {
		mr_attach_locked(c, e, mr);
		atomic64_inc(&c->cache_hits);
	}
	spin_unlock(&c->lock);
	return e;
}

/*
 * Hold a VALID entry of @c covering [start, last] (pinned writable when
 * @write) for a delivery copy: a user like a region (off the LRU, so that
 * no eviction unpins it) and a reference.  NULL on a miss.
 */
static struct dmaplane_mr_entry *
mr_entry_hold(struct dmaplane_mr_cache *c, unsigned long start,
	      unsigned long last, bool write)
{
	struct dmaplane_mr_entry *e;

	spin_lock(&c->lock);
	e = mr_cache_find_locked(c, start, last, write);
	if (e) {
		if (!list_empty(&e->lru)) {
			list_del_init(&e->lru);
			c->nr_unused--;
		}
		e->users++;
		kref_get(&e->ref);
	}
	spin_unlock(&c->lock);
	return e;
}

/* Drop what mr_entry_hold() took; an unused entry goes (back) to the LRU's tail. */
static void mr_entry_unhold(struct dmaplane_mr_cache *c, struct dmaplane_mr_entry *e)
{
	spin_lock(&c->lock);
	if (!--e->users && e->state == MR_ENTRY_VALID)
		mr_entry_unused_locked(c, e);
	spin_unlock(&c->lock);
	kref_put(&e->ref, mr_entry_free);
}

/*
 * Whether @e may be used now: VALID, and not suspect or verified (which
 * may kill it).  e->pages_sem held for reading.
 */
static bool mr_entry_usable(struct dmaplane_mr_cache *c, struct dmaplane_mr_entry *e)
{
	bool ok;

	lockdep_assert_held(&e->pages_sem);

	if (!e->pages || !mr_entry_check(e))
		return false;
	spin_lock(&c->lock);
	ok = e->state == MR_ENTRY_VALID && !e->suspect;
	spin_unlock(&c->lock);
	return ok;
}

/*
 * Copy between @len bytes at byte @off of the pages of @e and @iter, a
 * run of pages of one folio per call.  e->pages_sem held for reading.
 */
static int mr_entry_copy(struct dmaplane_mr_entry *e, u64 off, u64 len,
			 struct iov_iter *iter, bool to_entry)
{
	unsigned long idx = off >> PAGE_SHIFT;
	size_t poff = offset_in_page(off);
	u64 copied = 0;

	lockdep_assert_held(&e->pages_sem);

	while (len) {
		long nr = min_t(u64, e->npages - idx, DIV_ROUND_UP(poff + len, PAGE_SIZE));
		long run;
		size_t n, done;

		if (WARN_ON_ONCE(idx >= e->npages))
			return -ERANGE;
		run = dmaplane_folio_run(e->pages + idx, nr);
		n = min_t(u64, run * PAGE_SIZE - poff, len);
		if (to_entry)
			done = copy_page_from_iter(e->pages[idx], poff, n, iter);
		else
			done = copy_page_to_iter(e->pages[idx], poff, n, iter);
		if (done != n)
			return -EFAULT;
		len -= n;
		idx += run;
		poff = 0;
		copied += n;
		if (copied >= SZ_1M && len) {
			if (fatal_signal_pending(current))
				return -EINTR;
			cond_resched();
			copied = 0;
		}
	}
	return 0;
}

/*
 * The pages that bytes [@uaddr, @uaddr + @len) touch: [@start, @last].
 * False when the range is empty or wraps.
 */
static bool mr_page_span(u64 uaddr, u64 len, u64 *start, u64 *last)
{
	if (!len || check_add_overflow(uaddr, len - 1, last))
		return false;
	*start = uaddr & PAGE_MASK;
	*last |= ~PAGE_MASK;
	return true;
}

/*
 * dmaplane_mr_cache_copy() and the KUnit test: the copy through an entry
 * of @c (see the top comment).  -ENOENT with @iter as it was when none
 * covers the range or the entry was lost during the copy.
 */
static int mr_cache_copy(struct dmaplane_mr_cache *c, u64 uaddr, u64 len,
			 struct iov_iter *iter, bool to_cache)
{
	size_t count = iov_iter_count(iter);
	struct dmaplane_mr_entry *e;
	u64 start, last;
	int ret = -ENOENT;

	might_sleep();

	if (!mr_page_span(uaddr, len, &start, &last))
		return -ENOENT;
	e = mr_entry_hold(c, start, last, to_cache);
	if (!e)
		return -ENOENT;

	/* Teardown takes pages_sem for writing before it unpins. */
	down_read(&e->pages_sem);
	if (mr_entry_usable(c, e)) {
		ret = mr_entry_copy(e, uaddr - e->it.start, len, iter, to_cache);
		/*
		 * The notifier kills the entry, or makes it suspect, before
		 * the pages leave the address space: if it is still VALID (or
		 * verified) now, the copy saw the process's pages throughout.
		 * Otherwise the copy is done again by pinning what is mapped
		 * now; the pages it wrote were pinned until here.
		 */
		if (!ret && !mr_entry_usable(c, e))
			ret = -ENOENT;
	}
	up_read(&e->pages_sem);
	mr_entry_unhold(c, e);
	if (ret == -ENOENT)
		iov_iter_revert(iter, count - iov_iter_count(iter));
	return ret;
}

/*
 * The cache of @mm, referenced, or NULL.  Under RCU: a cache is freed
 * after a grace period, and one whose last reference is gone is skipped.
 */
static struct dmaplane_mr_cache *mr_cache_get_mm(struct mm_struct *mm)
{
	struct dmaplane_mr_cache *c;

	rcu_read_lock();
	hash_for_each_possible_rcu(dmaplane_mr_caches, c, node, (unsigned long)mm) {
		if (c->mm == mm && kref_get_unless_zero(&c->ref)) {
			rcu_read_unlock();
			return c;
		}
	}
	rcu_read_unlock();
	return NULL;
}

/**
 * dmaplane_mr_cache_covers() - does a registration of an mm cover a range?
 * @mm: the address space of @uaddr
 * @uaddr: user address in @mm
 * @len: bytes, at least 1
 * @write: an entry pinned writable is needed
 *
 * Whether a VALID entry of @mm's cache covers the range now (a copy may
 * still find it gone: dmaplane_mr_cache_copy() says so).
 */
bool dmaplane_mr_cache_covers(struct mm_struct *mm, u64 uaddr, u64 len, bool write)
{
	struct dmaplane_mr_cache *c;
	bool hit = false;
	u64 start, last;

	if (!mr_page_span(uaddr, len, &start, &last))
		return false;
	c = mr_cache_get_mm(mm);
	if (!c)
		return false;
	spin_lock(&c->lock);
	if (mr_cache_find_locked(c, start, last, write))
		hit = true;
	spin_unlock(&c->lock);
	mr_cache_kref_put(c);
	return hit;
}

/**
 * dmaplane_mr_cache_copy() - copy through the registration cache of an mm
 * @mm: the address space of @uaddr (mmget() by the caller), usually not
 *	the current one
 * @uaddr: user address in @mm
 * @len: bytes
 * @iter: the other side of the copy
 * @to_mm: write @mm's memory (else read it)
 *
 * Copies through the pages of a VALID registration of @mm's cache that
 * covers the whole range (pinned writable when @to_mm), referenced or
 * unused: nothing is pinned.  Never creates an entry.  Sleeps.
 *
 * Return: 0 when copied; -ENOENT when no entry serves the range or the
 * entry lost its pages during the copy (@iter is as it was: pin and copy
 * instead); -EFAULT when @iter faulted, -EINTR on a fatal signal.
 */
int dmaplane_mr_cache_copy(struct mm_struct *mm, u64 uaddr, u64 len,
			   struct iov_iter *iter, bool to_mm)
{
	struct dmaplane_mr_cache *c;
	int ret;

	c = mr_cache_get_mm(mm);
	if (!c)
		return -ENOENT;
	ret = mr_cache_copy(c, uaddr, len, iter, to_mm);
	mr_cache_kref_put(c);
	return ret;
}

/*
 * dmaplane_mr_cache_get_pages() and the KUnit test: the pages of an
 * entry of @c covering the range, referenced, or -ENOENT.
 */
static int mr_cache_get_pages(struct dmaplane_mr_cache *c, u64 uaddr, u64 len,
			      struct page **pages, unsigned int max)
{
	struct dmaplane_mr_entry *e;
	unsigned long first, i, n;
	u64 start, last;
	int ret = -ENOENT;

	if (!mr_page_span(uaddr, len, &start, &last))
		return -ENOENT;
	n = ((last - start) >> PAGE_SHIFT) + 1;
	if (n > max)
		return -ENOENT;
	e = mr_entry_hold(c, start, last, false);
	if (!e)
		return -ENOENT;
	/* Teardown takes pages_sem for writing before it unpins. */
	down_read(&e->pages_sem);
	if (mr_entry_usable(c, e)) {
		first = (start - e->it.start) >> PAGE_SHIFT;
		for (i = 0; i < n; i++) {
			pages[i] = e->pages[first + i];
			get_page(pages[i]);
		}
		ret = n;
	}
	up_read(&e->pages_sem);
	mr_entry_unhold(c, e);
	return ret;
}

/**
 * dmaplane_mr_cache_get_pages() - the pages of a registration, to read them
 * @mm: the address space of @uaddr (mmget() by the caller), usually not
 *	the current one
 * @uaddr: user address in @mm
 * @len: bytes, at least 1
 * @pages: set to the pages under the range, each referenced
 * @max: entries of @pages
 *
 * For a reader of another address space (the helper of a split copy,
 * msg.c: copy_split_pin()): the pages of a VALID entry of @mm's cache
 * covering the whole range, verified if suspect, as pinning them would
 * find them now; referenced with get_page(), to be dropped with
 * dmaplane_pages_put().  Nothing is pinned, no mmap_lock is taken, no
 * entry is created.  Like a pin, the references keep the pages, not the
 * mapping: a process that unmaps a buffer while it is being sent from
 * has the old contents read.  Sleeps.
 *
 * Return: the number of pages, or -ENOENT when no entry serves the range
 * (or it needs more than @max pages): pin them instead.
 */
int dmaplane_mr_cache_get_pages(struct mm_struct *mm, u64 uaddr, u64 len,
				struct page **pages, unsigned int max)
{
	struct dmaplane_mr_cache *c;
	int ret;

	c = mr_cache_get_mm(mm);
	if (!c)
		return -ENOENT;
	ret = mr_cache_get_pages(c, uaddr, len, pages, max);
	mr_cache_kref_put(c);
	return ret;
}

static struct dmaplane_mr_entry *mr_entry_alloc(struct dmaplane_mr_cache *c,
						unsigned long start,
						unsigned long npages, bool write,
						bool msg)
{
	struct dmaplane_mr_entry *e;

	e = kzalloc(sizeof(*e), GFP_KERNEL_ACCOUNT);
	if (!e)
		return NULL;
	e->it.start = start;
	e->it.last = start + (npages << PAGE_SHIFT) - 1;
	INIT_LIST_HEAD(&e->lru);
	INIT_LIST_HEAD(&e->dead);
	INIT_LIST_HEAD(&e->suspect_node);
	INIT_LIST_HEAD(&e->regions);
	kref_init(&e->ref);	/* the pin reference */
	e->state = MR_ENTRY_PINNING;
	e->write = write;
	e->msg = msg;
	init_rwsem(&e->pages_sem);
	e->npages = npages;
	kref_get(&c->ref);
	e->cache = c;
	return e;
}

/* Charge @npages, evicting unreferenced entries while over the limits. */
static int mr_cache_charge(struct dmaplane_mr_cache *c, unsigned long npages)
{
	bool evicted;
	int ret;

	/* Evicting cannot help a request beyond RLIMIT_MEMLOCK by itself. */
	if (npages > rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT && !capable(CAP_IPC_LOCK))
		return -ENOMEM;

	for (;;) {
		ret = dmaplane_charge_pages(c->mm, npages);
		if (ret != -ENOMEM)
			return ret;
		spin_lock(&c->lock);
		evicted = mr_cache_evict_one_locked(c, false);
		spin_unlock(&c->lock);
		if (!evicted)
			return ret;
		/* The teardown uncharges the evicted entry. */
		flush_work(&c->teardown_work);
	}
}

/*
 * A long-term writable pin of a regular file's page-cache pages lets the
 * device write pages the file system takes for clean (the RDMA core's
 * users learned it the hard way; GUP refuses it itself from 6.5 on, 6.1
 * does not).  Only private, shmem (memfd, tmpfs, SysV) and hugetlb
 * memory may be registered for writing (a private file mapping is copied
 * into anonymous pages by the pin): -EOPNOTSUPP for a shared mapping of
 * any other file in [@start, @end) of the current address space.
 * @locked: the caller holds its mmap_lock.
 */
static int mr_check_writable(unsigned long start, unsigned long end, bool locked)
{
	struct mm_struct *mm = current->mm;
	struct vm_area_struct *vma;
	int ret = 0;

	if (!locked)
		mmap_read_lock(mm);
	for (vma = find_vma(mm, start); vma && vma->vm_start < end;
	     vma = find_vma(mm, vma->vm_end)) {
		if ((vma->vm_flags & VM_SHARED) && vma->vm_file &&
		    !is_vm_hugetlb_page(vma) && !shmem_mapping(vma->vm_file->f_mapping)) {
			ret = -EOPNOTSUPP;
			break;
		}
	}
	if (!locked)
		mmap_read_unlock(mm);
	return ret;
}

/*
 * Pin the pages of @e in chunks; on error nothing stays pinned.  @locked:
 * the caller holds current->mm's mmap_lock (for writing).  A message
 * entry pins only what is mapped (FOLL_NOFAULT).
 */
static int mr_entry_pin_pages(struct dmaplane_mr_entry *e, bool locked)
{
	unsigned int gup_flags = FOLL_LONGTERM | (e->write ? FOLL_WRITE : 0) |
				 (e->msg ? FOLL_NOFAULT : 0);
	unsigned long start = e->it.start;
	unsigned long pinned = 0;
	int ret;

	/* Checked at each try: a retry may find another mapping there. */
	if (e->write) {
		ret = mr_check_writable(start, start + (e->npages << PAGE_SHIFT),
					locked);
		if (ret)
			return ret;
	}

	while (pinned < e->npages) {
		unsigned long n = min_t(unsigned long, e->npages - pinned,
					PAGE_SIZE / sizeof(struct page *));

		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto err_unpin;
		}
		if (locked)
			ret = dmaplane_pin_user_pages_remote(current->mm,
							     start + (pinned << PAGE_SHIFT),
							     n, gup_flags, e->pages + pinned);
		else
			ret = pin_user_pages_fast(start + (pinned << PAGE_SHIFT), n,
						  gup_flags, e->pages + pinned);
		if (ret < 0)
			goto err_unpin;
		if (!ret) {
			ret = -EFAULT;
			goto err_unpin;
		}
		pinned += ret;
		cond_resched();
	}
	return 0;

err_unpin:
	unpin_user_pages(e->pages, pinned);
	return ret;
}

/*
 * Pin [start, start + npages pages) of the cache's mm into a new entry
 * and attach @mr to it.  Without @mr, a message entry (see the top
 * comment), left unused on the LRU; the caller reserved its pages in
 * c->msg_pages.
 */
static int mr_entry_create(struct dmaplane_mr_cache *c, struct dmaplane_mr *mr,
			   unsigned long start, unsigned long npages, bool write)
{
	struct dmaplane_mr_entry *e;
	unsigned int tries;
	bool locked = false;
	unsigned long seq;
	int ret;

	e = mr_entry_alloc(c, start, npages, write, !mr);
	if (!e)
		return -ENOMEM;

	if (mr)
		ret = mr_cache_charge(c, npages);
	else
		ret = dmaplane_charge_pages_noaudit(c->mm, npages);
	if (ret)
		goto err_free_entry;

	/* Huge requests fail quietly: the caller sees -ENOMEM. */
	e->pages = kvmalloc_array(npages, sizeof(*e->pages),
				  GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!e->pages) {
		ret = -ENOMEM;
		goto err_uncharge;
	}

	/*
	 * The notifier goes in before the pages are pinned: an invalidation
	 * racing with the pinning bumps its sequence, and the pinning is
	 * redone (as hfi1 and the HMM users do).
	 */
	ret = mmu_interval_notifier_insert(&e->notifier, c->mm, start,
					   npages << PAGE_SHIFT, &mr_mn_ops);
	if (ret)
		goto err_free_pages;

	for (tries = 1;; tries++) {
		/* See MR_TRIES. */
		if (tries > MR_TRIES_UNLOCKED && !locked) {
			/* A message entry is not worth blocking the mm for. */
			if (!mr) {
				ret = -EAGAIN;
				goto err_remove_notifier;
			}
			if (mmap_write_lock_killable(c->mm)) {
				ret = -EINTR;
				goto err_remove_notifier;
			}
			locked = true;
		}
		seq = mmu_interval_read_begin(&e->notifier);
		ret = mr_entry_pin_pages(e, locked);
		if (ret)
			goto err_unlock_mm;
		spin_lock(&c->lock);
		if (!mmu_interval_read_retry(&e->notifier, seq))
			break;
		spin_unlock(&c->lock);
		unpin_user_pages(e->pages, npages);
		if (tries == MR_TRIES) {
			ret = -EAGAIN;
			goto err_unlock_mm;
		}
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			goto err_unlock_mm;
		}
		cond_resched();
	}
	/*
	 * Still under c->lock: publish the entry and attach @mr, or leave a
	 * message entry unused (it may be evicted and torn down as soon as
	 * the lock is dropped: the counters go up first).
	 */
	e->charged = npages;
	e->pinned = true;
	e->notifier_live = true;
	e->state = MR_ENTRY_VALID;
	dmaplane_stat_inc(user_mrs);
	dmaplane_stat_add(pinned_pages, npages);
	interval_tree_insert(&e->it, &c->tree);
	c->nr_entries++;
	if (mr)
		mr_attach_locked(c, e, mr);
	else
		mr_entry_unused_locked(c, e);
	spin_unlock(&c->lock);
	if (locked)
		mmap_write_unlock(c->mm);
	/* @mr holds a reference of its own; the pin reference stays. */
	return 0;

err_unlock_mm:
	if (locked)
		mmap_write_unlock(c->mm);
err_remove_notifier:
	mmu_interval_notifier_remove(&e->notifier);
err_free_pages:
	kvfree(e->pages);
err_uncharge:
	dmaplane_uncharge_pages(c->mm, npages);
err_free_entry:
	kfree(e);
	mr_cache_kref_put(c);
	return ret;
}

/*
 * The cache of the endpoint's mm, created on the first registration.
 * ep->mr_cache is set once under dmaplane_mr_caches_lock and cleared
 * only when the endpoint is released: a set one may be read without it.
 */
static struct dmaplane_mr_cache *mr_cache_get_ep(struct dmaplane_ep *ep)
{
	struct dmaplane_mr_cache *c = READ_ONCE(ep->mr_cache);

	if (c)
		return c;
	mutex_lock(&dmaplane_mr_caches_lock);
	c = ep->mr_cache;
	if (c)
		goto out_unlock;
	hash_for_each_possible(dmaplane_mr_caches, c, node, (unsigned long)ep->mm) {
		if (c->mm == ep->mm) {
			c->users++;
			goto out_set;
		}
	}
	c = mr_cache_alloc(ep->mm);
	if (!c)
		goto out_unlock;
	hash_add_rcu(dmaplane_mr_caches, &c->node, (unsigned long)ep->mm);
out_set:
	WRITE_ONCE(ep->mr_cache, c);
out_unlock:
	mutex_unlock(&dmaplane_mr_caches_lock);
	return c;
}

/**
 * dmaplane_mr_cache_add_msg() - keep a message buffer registered
 * @ep: the endpoint of the message (a posted receive, a rendezvous
 *	send), of the current mm
 * @uaddr: the buffer's address
 * @len: its length, at least 1
 *
 * Makes sure a VALID entry of the cache pinned writable covers the
 * buffer: one that does is moved to the LRU's tail if unused; else, when
 * the same range missed among the last MR_SEEN misses, a message entry
 * is pinned and left unused on the LRU (see the top comment), evicting
 * older unused message entries beyond mr_cache_msg_mb.  The copies into
 * or out of the buffer by other processes then go through its pages
 * (dmaplane_mr_cache_copy()) while the entry lasts.  Sleeps.
 *
 * Return: 0 when an entry covers the buffer (or did at the look-up);
 * -EAGAIN at its first miss (remembered); -E2BIG when the buffer alone
 * exceeds mr_cache_msg_mb, -ENOSPC when the cache keeps nothing unused
 * or the other message entries are in use, -EFAULT when a page is not
 * mapped writable now, or what pinning and charging return.  The
 * message goes without an entry then.
 */
int dmaplane_mr_cache_add_msg(struct dmaplane_ep *ep, u64 uaddr, u64 len)
{
	unsigned long max = (unsigned long)READ_ONCE(mr_cache_msg_mb) << (20 - PAGE_SHIFT);
	struct dmaplane_mr_cache *c;
	struct dmaplane_mr_entry *e;
	unsigned long npages;
	u64 start, last;
	int ret;

	if (WARN_ON_ONCE(current->mm != ep->mm))
		return -EPERM;
	if (!mr_page_span(uaddr, len, &start, &last))
		return -EINVAL;
	npages = ((last - start) >> PAGE_SHIFT) + 1;
	if (npages > max)
		return -E2BIG;
	c = mr_cache_get_ep(ep);
	if (!c)
		return -ENOMEM;

	spin_lock(&c->lock);
	e = mr_cache_find_locked(c, start, last, true);
	if (e) {
		if (!list_empty(&e->lru))
			list_move_tail(&e->lru, &c->lru);
		spin_unlock(&c->lock);
		dmaplane_stat_inc(msg_reg_hits);
		return 0;
	}
	if (!c->max_unused || c->closing) {
		spin_unlock(&c->lock);
		return -ENOSPC;
	}
	if (!mr_cache_seen_locked(c, start, npages)) {
		spin_unlock(&c->lock);
		return -EAGAIN;
	}
	while (c->msg_pages + npages > max) {
		if (!mr_cache_evict_one_locked(c, true)) {
			spin_unlock(&c->lock);
			return -ENOSPC;
		}
	}
	/* Reserved; a VALID message entry keeps them until it is killed. */
	c->msg_pages += npages;
	spin_unlock(&c->lock);

	ret = mr_entry_create(c, NULL, start, npages, true);
	if (ret) {
		spin_lock(&c->lock);
		c->msg_pages -= npages;
		spin_unlock(&c->lock);
		return ret;
	}
	dmaplane_stat_inc(msg_regs);
	return 0;
}

/**
 * dmaplane_mr_cache_put() - an endpoint of the cache's mm goes away
 * @mrc: the endpoint's cache, or NULL
 *
 * Called after the endpoint's regions were released.  With the last
 * endpoint the unreferenced entries are unpinned at once; entries that
 * regions held elsewhere still use go when those regions do.
 */
void dmaplane_mr_cache_put(struct dmaplane_mr_cache *mrc)
{
	bool last;

	if (!mrc)
		return;
	mutex_lock(&dmaplane_mr_caches_lock);
	last = !--mrc->users;
	if (last)
		hash_del_rcu(&mrc->node);
	mutex_unlock(&dmaplane_mr_caches_lock);
	if (!last)
		return;

	spin_lock(&mrc->lock);
	mrc->closing = true;
	while (mr_cache_evict_one_locked(mrc, false))
		;
	spin_unlock(&mrc->lock);
	flush_work(&mrc->teardown_work);
	mr_cache_kref_put(mrc);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_mr_cache_put);

static int mr_check_args(const struct dmaplane_mr_reg *arg)
{
	u64 end;

	if (!arg->len || check_add_overflow(arg->addr, arg->len, &end))
		return -EINVAL;
	if (arg->access & ~DMAPLANE_ACCESS_ALL)
		return -EINVAL;
	if (arg->flags || memchr_inv(arg->reserved, 0, sizeof(arg->reserved)))
		return -EINVAL;
	return 0;
}

int dmaplane_ioctl_mr_reg(struct dmaplane_ep *ep, void __user *uarg)
{
	struct dmaplane_mr_reg arg;
	struct dmaplane_mr_cache *c;
	unsigned long start, npages;
	struct dmaplane_region *r;
	struct dmaplane_mr *mr;
	int ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	ret = mr_check_args(&arg);
	if (ret)
		return ret;
	/* Only the opener's address space, and only from inside it. */
	if (!current->mm || current->mm != ep->mm)
		return -EPERM;
	if (!access_ok(u64_to_user_ptr(arg.addr), arg.len))
		return -EFAULT;

	c = mr_cache_get_ep(ep);
	if (!c)
		return -ENOMEM;

	mr = mr_alloc(arg.addr, arg.len, arg.access);
	if (!mr)
		return -ENOMEM;

	if (!mr_try_cached(c, mr)) {
		start = arg.addr & PAGE_MASK;
		npages = (PAGE_ALIGN(arg.addr + arg.len) - start) >> PAGE_SHIFT;
		ret = mr_entry_create(c, mr, start, npages,
				      dmaplane_access_writes(arg.access));
		if (ret)
			goto err_put_mr;
	}

	ret = dmaplane_region_publish(ep, &mr->region);
	if (ret)
		goto err_put_mr;

	arg.handle = mr->region.handle;
	arg.lkey = mr->region.handle;
	arg.rkey = mr->region.rkey;
	arg.invalidations = atomic64_read(&c->invalidations);
	if (copy_to_user(uarg, &arg, sizeof(arg))) {
		/*
		 * Undo the registration, unless another thread guessed the
		 * handle and deregistered it already.
		 */
		r = dmaplane_region_unpublish(ep, arg.handle, DMAPLANE_REGION_USER);
		if (!IS_ERR(r))
			dmaplane_region_put(r);
		return -EFAULT;
	}
	return 0;

err_put_mr:
	dmaplane_region_put(&mr->region);
	return ret;
}

static int mr_check_handle_arg(const struct dmaplane_handle_arg *arg)
{
	if (arg->flags || arg->reserved)
		return -EINVAL;
	return 0;
}

int dmaplane_ioctl_mr_dereg(struct dmaplane_ep *ep, void __user *uarg)
{
	struct dmaplane_handle_arg arg;
	struct dmaplane_region *r;
	int ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	ret = mr_check_handle_arg(&arg);
	if (ret)
		return ret;

	r = dmaplane_region_unpublish(ep, arg.handle, DMAPLANE_REGION_USER);
	/* Imported dma-bufs are deregistered here too. */
	if (PTR_ERR_OR_ZERO(r) == -EINVAL)
		r = dmaplane_region_unpublish(ep, arg.handle, DMAPLANE_REGION_DMABUF);
	if (IS_ERR(r))
		return PTR_ERR(r);
	dmaplane_region_put(r);
	return 0;
}

int dmaplane_ioctl_mr_query(struct dmaplane_ep *ep, void __user *uarg)
{
	struct dmaplane_mr_query arg;
	struct dmaplane_mr_cache *c;
	struct dmaplane_region *r;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || memchr_inv(arg.reserved, 0, sizeof(arg.reserved)))
		return -EINVAL;

	r = dmaplane_region_get(ep, arg.handle, DMAPLANE_REGION_USER);
	if (PTR_ERR_OR_ZERO(r) == -EINVAL)
		r = dmaplane_region_get(ep, arg.handle, DMAPLANE_REGION_DMABUF);
	if (IS_ERR(r))
		return PTR_ERR(r);

	if (r->kind == DMAPLANE_REGION_USER)
		mr_region_check(to_mr(r));
	arg.addr = r->kind == DMAPLANE_REGION_USER ? to_mr(r)->addr : 0;
	arg.len = r->len;
	arg.state = READ_ONCE(r->invalid) ? DMAPLANE_MR_STATE_INVALID :
					    DMAPLANE_MR_STATE_VALID;
	arg.access = r->access;
	arg.rkey = r->rkey;
	dmaplane_region_put(r);

	/* Out only: an endpoint without a cache (yet) has counted nothing. */
	arg.invalidations = 0;
	arg.cache_hits = 0;
	mutex_lock(&dmaplane_mr_caches_lock);
	c = ep->mr_cache;
	if (c) {
		arg.invalidations = atomic64_read(&c->invalidations);
		arg.cache_hits = atomic64_read(&c->cache_hits);
	}
	mutex_unlock(&dmaplane_mr_caches_lock);

	if (copy_to_user(uarg, &arg, sizeof(arg)))
		return -EFAULT;
	return 0;
}

/**
 * dmaplane_mr_init() - module load: the teardown workqueue
 *
 * Return: 0 or -ENOMEM.
 */
int dmaplane_mr_init(void)
{
	dmaplane_mr_wq = alloc_workqueue("dmaplane_mr", WQ_UNBOUND, 0);
	return dmaplane_mr_wq ? 0 : -ENOMEM;
}

/**
 * dmaplane_mr_exit() - module unload: wait for teardowns still running
 */
void dmaplane_mr_exit(void)
{
	destroy_workqueue(dmaplane_mr_wq);
}

#if IS_ENABLED(CONFIG_KUNIT)
/*
 * The cache core without an address space, for KUnit: entries hold
 * kernel pages (references owned by the entry) instead of pinned user
 * pages, and are not covered by notifiers.
 */

/**
 * dmaplane_mr_test_cache_create() - a cache without an mm
 * @max_unused: bound of unreferenced entries kept
 *
 * Return: the cache, released with dmaplane_mr_cache_put(), or NULL.
 */
struct dmaplane_mr_cache *dmaplane_mr_test_cache_create(unsigned int max_unused)
{
	struct dmaplane_mr_cache *c = mr_cache_alloc(NULL);

	if (c)
		c->max_unused = max_unused;
	return c;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_mr_test_cache_create);

/**
 * dmaplane_mr_test_add() - insert an unreferenced entry
 * @c: cache from dmaplane_mr_test_cache_create()
 * @start: page-aligned (fake) address
 * @pages: @npages page references handed to the entry, or NULL
 * @npages: number of pages
 * @write: pinned writable
 *
 * Return: 0 or -ENOMEM (the references in @pages are dropped then).
 */
int dmaplane_mr_test_add(struct dmaplane_mr_cache *c, unsigned long start,
			 struct page **pages, unsigned long npages, bool write)
{
	struct dmaplane_mr_entry *e = mr_entry_alloc(c, start, npages, write, false);

	if (!e) {
		if (pages)
			mr_release_pages(pages, npages, false, false);
		return -ENOMEM;
	}
	if (pages) {
		e->pages = kvmalloc_array(npages, sizeof(*pages),
					  GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
		if (!e->pages) {
			mr_release_pages(pages, npages, false, false);
			kfree(e);
			mr_cache_kref_put(c);
			return -ENOMEM;
		}
		memcpy(e->pages, pages, npages * sizeof(*pages));
	}
	spin_lock(&c->lock);
	e->state = MR_ENTRY_VALID;
	interval_tree_insert(&e->it, &c->tree);
	c->nr_entries++;
	mr_entry_unused_locked(c, e);
	spin_unlock(&c->lock);
	flush_work(&c->teardown_work);
	return 0;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_mr_test_add);

/**
 * dmaplane_mr_test_lookup() - register [addr, addr + len) from the cache
 * @c: cache
 * @addr: byte address
 * @len: bytes
 * @access: access bits
 *
 * Return: a region (one reference) on a hit, ERR_PTR(-ENOENT) on a miss.
 */
struct dmaplane_region *dmaplane_mr_test_lookup(struct dmaplane_mr_cache *c,
						u64 addr, u64 len, u32 access)
{
	struct dmaplane_mr *mr = mr_alloc(addr, len, access);

	if (!mr)
		return ERR_PTR(-ENOMEM);
	if (!mr_try_cached(c, mr)) {
		dmaplane_region_put(&mr->region);
		return ERR_PTR(-ENOENT);
	}
	return &mr->region;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_mr_test_lookup);

/**
 * dmaplane_mr_test_invalidate() - what the notifiers of every entry
 * overlapping [start, end) do together when that range is invalidated
 * @c: cache
 * @start: first byte
 * @end: one past the last byte
 *
 * Return: the number of entries invalidated.  Their teardown is done.
 */
unsigned int dmaplane_mr_test_invalidate(struct dmaplane_mr_cache *c,
					 unsigned long start, unsigned long end)
{
	struct interval_tree_node *it;
	unsigned int n = 0;

	spin_lock(&c->lock);
	while ((it = interval_tree_iter_first(&c->tree, start, end - 1))) {
		mr_entry_invalidate_locked(c, container_of(it, struct dmaplane_mr_entry, it));
		n++;
	}
	spin_unlock(&c->lock);
	flush_work(&c->teardown_work);
	return n;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_mr_test_invalidate);

/**
 * dmaplane_mr_test_counts() - entries in the tree and on the LRU
 * @c: cache
 * @entries: out: VALID entries
 * @unused: out: of which unreferenced
 * @invalidations: out: regions invalidated
 * @hits: out: cache hits
 */
void dmaplane_mr_test_counts(struct dmaplane_mr_cache *c, unsigned int *entries,
			     unsigned int *unused, u64 *invalidations, u64 *hits)
{
	flush_work(&c->teardown_work);
	spin_lock(&c->lock);
	*entries = c->nr_entries;
	*unused = c->nr_unused;
	spin_unlock(&c->lock);
	*invalidations = atomic64_read(&c->invalidations);
	*hits = atomic64_read(&c->cache_hits);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_mr_test_counts);

/**
 * dmaplane_mr_test_copy() - copy through an entry of the cache, as
 *	dmaplane_mr_cache_copy() does for the cache of an mm
 * @c: cache
 * @addr: (fake) address
 * @len: bytes
 * @iter: the other side
 * @to_cache: write the entry's pages
 *
 * Return: as dmaplane_mr_cache_copy().
 */
int dmaplane_mr_test_copy(struct dmaplane_mr_cache *c, u64 addr, u64 len,
			  struct iov_iter *iter, bool to_cache)
{
	return mr_cache_copy(c, addr, len, iter, to_cache);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_mr_test_copy);

int dmaplane_mr_test_get_pages(struct dmaplane_mr_cache *c, u64 addr, u64 len,
			       struct page **pages, unsigned int max)
{
	return mr_cache_get_pages(c, addr, len, pages, max);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_mr_test_get_pages);
#endif /* CONFIG_KUNIT */

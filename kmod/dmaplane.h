/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dmaplane private definitions: structures shared between the files of
 * the module and their prototypes, grouped by the file that defines them.
 */
#ifndef _DMAPLANE_H
#define _DMAPLANE_H

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/in6.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/mm_types.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/rhashtable-types.h>
#include <linux/spinlock.h>
#include <linux/scatterlist.h>
#include <linux/workqueue.h>
#include <linux/types.h>
#include <linux/uio.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include <uapi/linux/dmaplane.h>

#include "compat.h"

struct seq_file;

#define DMAPLANE_DRV_NAME	"dmaplane"

/*
 * Internal functions that only the KUnit module calls are exported to it
 * in a private namespace, as EXPORT_SYMBOL_IF_KUNIT() does upstream from
 * 6.2 on.  Kernels without KUnit export nothing (and only check that the
 * symbol exists).
 */
#if IS_ENABLED(CONFIG_KUNIT)
#define EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(sym) \
	EXPORT_SYMBOL_NS_GPL(sym, DMAPLANE_NS(DMAPLANE_KUNIT))
#else
#define EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(sym) static_assert(sizeof(typeof(sym) *))
#endif

/**
 * enum dmaplane_stat - module-wide object counters, the index into
 *	&dmaplane_stats.counters and dmaplane_stat_names[]
 * @DMAPLANE_STAT_ENDPOINTS: endpoints currently open
 * @DMAPLANE_STAT_REGIONS: regions alive (arenas, user MRs, imported
 *	dma-bufs)
 * @DMAPLANE_STAT_ARENAS: arenas alive (until their last mapping or
 *	dma-buf is gone)
 * @DMAPLANE_STAT_ARENA_PAGES: base pages held by arenas
 * @DMAPLANE_STAT_USER_MRS: pinnings of user memory alive (cache entries)
 * @DMAPLANE_STAT_PINNED_PAGES: user pages pinned by registrations
 * @DMAPLANE_STAT_CHARGED_PAGES: pages charged to RLIMIT_MEMLOCK and the
 *	module cap
 * @DMAPLANE_STAT_DMABUFS: dma-bufs exported and not yet released
 * @DMAPLANE_STAT_IMPORTS: imported dma-bufs attached
 * @DMAPLANE_STAT_INVALIDATIONS: registrations invalidated by MMU notifiers
 *	or move_notify
 * @DMAPLANE_STAT_POSTED_RECVS: receives posted and waiting for a message
 * @DMAPLANE_STAT_UNEXP_MSGS: messages queued as unexpected at their
 *	receiver
 * @DMAPLANE_STAT_DELIVERIES: messages matched to a receive and waiting
 *	for the receiving endpoint's delivery work (msg.c)
 * @DMAPLANE_STAT_XFER_PAGES: user pages pinned for transfers with other
 *	nodes (ib_tx.c, ib_xfer.c: rendezvous senders until the FIN, put/get initiators
 *	until the FIN, receivers while they pull)
 * @DMAPLANE_STAT_COPIES_CACHED: copies to or from a buffer of another
 *	process on this node (a posted receive's, a rendezvous sender's: one
 *	per piece, or per chunk of a split copy) made through the pinned
 *	pages of its registration cache (mr.c); cumulative
 * @DMAPLANE_STAT_COPIES_PINNED: such copies that pinned the pages
 *	themselves (msg.c: copy_remote()); cumulative
 * @DMAPLANE_STAT_RECV_PINS: posted receives holding the page of their
 *	buffer pinned since they were posted (msg.c: recv_pin())
 * @DMAPLANE_STAT_COPIES_SPLIT: large copies on this node (a message's, a
 *	put's, a get's) offered to a helper on another CPU (msg.c:
 *	copy_split(); a late helper finds nothing left to copy); cumulative
 * @DMAPLANE_STAT_COPIES_SPLIT_REDONE: such copies with a chunk the helper
 *	could not copy (a page not present), copied again by the caller;
 *	cumulative
 * @DMAPLANE_STAT_COPIES_SPLIT_CACHED: chunks (a source range of one) a
 *	helper read through the pages of the source's registration cache
 *	rather than pinning them (mr.c: dmaplane_mr_cache_get_pages());
 *	cumulative
 * @DMAPLANE_STAT_COPIES_SPLIT_PEER: large copies of messages whose
 *	helper was queued on the CPU of the other side's owner (msg.c:
 *	copy_split_queue()) rather than where the scheduler puts it;
 *	cumulative
 * @DMAPLANE_STAT_MSG_REGS: message buffers (a posted receive's, a
 *	rendezvous send's range) registered in the registration cache by
 *	the message (mr.c: dmaplane_mr_cache_add_msg()); cumulative
 * @DMAPLANE_STAT_MSG_REG_HITS: such buffers an entry of the cache
 *	covered already; cumulative
 * @DMAPLANE_STAT_RECV_INLINE: receives (%DMAPLANE_OP_F_INLINE) completed
 *	with the bytes in their completion (msg.c: send_expected());
 *	cumulative
 * @DMAPLANE_NUM_STATS: number of counters
 *
 * Every object the module creates is counted and uncounted when it is
 * freed, so tests can prove that nothing outlives its owner.  The names in
 * dmaplane_stat_names[] (main.c) are the ones debugfs
 * (/sys/kernel/debug/dmaplane/stats, one "name value" line each) and
 * netlink (GET_STATS) report: add a counter here, in &struct
 * dmaplane_stats and in that table, nowhere else.
 */
enum dmaplane_stat {
	DMAPLANE_STAT_ENDPOINTS,
	DMAPLANE_STAT_REGIONS,
	DMAPLANE_STAT_ARENAS,
	DMAPLANE_STAT_ARENA_PAGES,
	DMAPLANE_STAT_USER_MRS,
	DMAPLANE_STAT_PINNED_PAGES,
	DMAPLANE_STAT_CHARGED_PAGES,
	DMAPLANE_STAT_DMABUFS,
	DMAPLANE_STAT_IMPORTS,
	DMAPLANE_STAT_INVALIDATIONS,
	DMAPLANE_STAT_POSTED_RECVS,
	DMAPLANE_STAT_UNEXP_MSGS,
	DMAPLANE_STAT_DELIVERIES,
	DMAPLANE_STAT_XFER_PAGES,
	DMAPLANE_STAT_COPIES_CACHED,
	DMAPLANE_STAT_COPIES_PINNED,
	DMAPLANE_STAT_RECV_PINS,
	DMAPLANE_STAT_COPIES_SPLIT,
	DMAPLANE_STAT_COPIES_SPLIT_REDONE,
	DMAPLANE_STAT_COPIES_SPLIT_CACHED,
	DMAPLANE_STAT_COPIES_SPLIT_PEER,
	DMAPLANE_STAT_MSG_REGS,
	DMAPLANE_STAT_MSG_REG_HITS,
	DMAPLANE_STAT_RECV_INLINE,
	DMAPLANE_NUM_STATS
};

/**
 * struct dmaplane_stats - one CPU's share of the counters of &enum dmaplane_stat
 * @counters: every counter, indexed by &enum dmaplane_stat
 *
 * The named fields alias @counters[DMAPLANE_STAT_<NAME>] (checked at
 * build time in main.c).  Each CPU counts in its own copy
 * (dmaplane_stat_inc(regions) and the like, this_cpu operations: sends
 * and receives on every CPU of a node would otherwise all write one
 * cache line); a counter's value is the sum over the CPUs
 * (dmaplane_stat_read()), exact whenever nothing is changing it.
 */
struct dmaplane_stats {
	union {
		struct {
			long endpoints;
			long regions;
			long arenas;
			long arena_pages;
			long user_mrs;
			long pinned_pages;
			long charged_pages;
			long dmabufs;
			long imports;
			long invalidations;
			long posted_recvs;
			long unexp_msgs;
			long deliveries;
			long xfer_pages;
			long copies_cached;
			long copies_pinned;
			long recv_pins;
			long copies_split;
			long copies_split_redone;
			long copies_split_cached;
			long copies_split_peer;
			long msg_regs;
			long msg_reg_hits;
			long recv_inline;
		};
		long counters[DMAPLANE_NUM_STATS];
	};
};

/*
 * Tag matching (match.c).  Sources are endpoint addresses; tags are
 * 64-bit; a receive ignores the tag bits set in its ignore mask.
 *
 * Hash tables of the matcher start with 2^DMAPLANE_MATCH_MIN_BITS buckets
 * and double when they hold more than two keys per bucket, up to
 * 2^DMAPLANE_MATCH_MAX_BITS buckets; one that grew past
 * 2^DMAPLANE_MATCH_SHRINK_BITS goes back to the smallest size when it
 * empties.
 */
#define DMAPLANE_ANY_SRC		(~0ULL)
#define DMAPLANE_MATCH_MIN_BITS		4
#define DMAPLANE_MATCH_SHRINK_BITS	8
#define DMAPLANE_MATCH_MAX_BITS		17

/*
 * Receives for any source that ignore tag bits are hashed by their
 * accepted bits for up to DMAPLANE_MATCH_MASKS distinct ignore masks at a
 * time (an MPI library uses one or two: MPI_ANY_TAG); receives with a
 * mask beyond those wait on a list.
 */
#define DMAPLANE_MATCH_MASKS		8

/**
 * struct dmaplane_match_qnode - an entry's place in a matcher hash table
 * @hnode: in its table's bucket while the entry is the first of its key
 *	(then hashed), else unhashed
 * @same: the entries with the same key, in order: the first one's @same
 *	is the list of the later ones (the first is never on it); a later
 *	one's @same is its link in that list
 *
 * One node per distinct key is in a bucket, so a lookup costs the keys
 * of one bucket, not the entries; the earliest entry of a key is the one
 * hashed, and its successor takes its place in the bucket when it goes.
 */
struct dmaplane_match_qnode {
	struct hlist_node hnode;
	struct list_head same;
};

/**
 * struct dmaplane_match_table - a growing hash table of matcher entries
 * @heads: 2^@bits buckets, kvmalloc()ed with GFP_KERNEL_ACCOUNT (charged
 *	to the task whose call allocated them: the endpoint's opener, or a
 *	local sender whose message grew the receiver's unexpected tables).
 *	Bounded: posted receives by the completion ring (65,536 entries at
 *	most: 2^15 buckets), unexpected messages by unexp_max (msg.c).
 * @bits: log2 of the number of buckets
 * @nr_keys: distinct keys, i.e. hashed nodes, in the table
 * @kind: what the nodes are and which key they have (match.c)
 */
struct dmaplane_match_table {
	struct hlist_head *heads;
	unsigned int bits;
	unsigned int nr_keys;
	unsigned int kind;
};

/**
 * struct dmaplane_match_recv - a posted receive, as the matcher sees it
 * @q: fully specified receives (a source, no ignored tag bit): in
 *	&dmaplane_matcher.recv_spec; any-source receives with no ignored
 *	tag bit: in &dmaplane_matcher.recv_tag; receives naming a source
 *	and ignoring tag bits: in &dmaplane_matcher.recv_src; any-source
 *	receives ignoring tag bits (but @listed ones): in
 *	&dmaplane_matcher.recv_mask
 * @node: any-source receives with ignored tag bits whose mask found no
 *	slot in &dmaplane_matcher.masks (@listed): on
 *	&dmaplane_matcher.recv_masked
 * @all_node: on &dmaplane_matcher.recv_all, every posted receive
 * @src: source, or %DMAPLANE_ANY_SRC
 * @tag: tag
 * @ignore: tag bits that do not take part in matching
 * @seq: posting order, set by the matcher
 * @listed: on &dmaplane_matcher.recv_masked, set by the matcher
 */
struct dmaplane_match_recv {
	struct dmaplane_match_qnode q;
	struct list_head node;
	struct list_head all_node;
	u64 src;
	u64 tag;
	u64 ignore;
	u64 seq;
	bool listed;
};

/**
 * struct dmaplane_match_msg - an arrived message, as the matcher sees it
 * @all_node: on &dmaplane_matcher.unexp_all, in arrival order
 * @spec: in &dmaplane_matcher.unexp_spec, keyed by (source, tag)
 * @by_tag: in &dmaplane_matcher.unexp_tag, keyed by tag
 * @by_src: in &dmaplane_matcher.unexp_src, keyed by source
 * @src: source
 * @tag: tag
 */
struct dmaplane_match_msg {
	struct list_head all_node;
	struct dmaplane_match_qnode spec;
	struct dmaplane_match_qnode by_tag;
	struct dmaplane_match_qnode by_src;
	u64 src;
	u64 tag;
};

/**
 * struct dmaplane_matcher - posted receives and unexpected messages
 * @recv_spec: receives naming a source and ignoring no tag bit, by
 *	(source, tag), each key's receives in posting order
 * @recv_tag: receives for any source ignoring no tag bit, by tag, each
 *	key's receives in posting order
 * @recv_src: receives naming a source and ignoring tag bits
 *	(MPI_ANY_TAG), by source, each source's in posting order
 * @recv_mask: receives for any source that ignore tag bits, by (ignore
 *	mask, the tag's other bits), each key's receives in posting order
 * @masks: the distinct ignore masks of the receives in @recv_mask
 * @nr_mask: how many receives in @recv_mask have each of @masks (0: the
 *	slot is free)
 * @recv_masked: receives for any source that ignore tag bits, posting
 *	order, when their mask found no slot in @masks
 * @recv_all: every posted receive, posting order
 * @unexp_spec: every unexpected message by (source, tag), arrival order
 * @unexp_tag: every unexpected message by tag, arrival order
 * @unexp_src: every unexpected message by source, arrival order
 * @unexp_all: every unexpected message, arrival order
 * @next_seq: sequence number of the next posted receive
 * @nr_recvs: receives posted and not matched or cancelled
 * @nr_unexp: unexpected messages queued
 * @lock: the owner's lock serialising every call, asserted with lockdep
 * @fail_alloc: tests only (0 otherwise): when N > 0, the matcher's table
 *	allocations from the Nth on fail as if kvmalloc() returned NULL
 *	(set before dmaplane_matcher_init() to fail it)
 *
 * Everything here, the tables' growth included, is under @lock (the
 * matcher has no lock of its own); only @nr_recvs and @nr_unexp are read
 * without it, as a snapshot.
 */
struct dmaplane_matcher {
	struct dmaplane_match_table recv_spec;
	struct dmaplane_match_table recv_tag;
	struct dmaplane_match_table recv_src;
	struct dmaplane_match_table recv_mask;
	u64 masks[DMAPLANE_MATCH_MASKS];
	unsigned int nr_mask[DMAPLANE_MATCH_MASKS];
	struct list_head recv_masked;
	struct list_head recv_all;
	struct dmaplane_match_table unexp_spec;
	struct dmaplane_match_table unexp_tag;
	struct dmaplane_match_table unexp_src;
	struct list_head unexp_all;
	u64 next_seq;
	unsigned int nr_recvs;
	unsigned int nr_unexp;
	struct mutex *lock;	/* not owned: the owner's lock, for lockdep */
	unsigned int fail_alloc;
};

struct dmaplane_recv;

/*
 * The completed receives an endpoint keeps for its next posts: a window
 * of 64 (OSU's) is posted again without an allocation.
 */
#define DMAPLANE_RECV_CACHE	64

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
 * @ref: the file, and messages that name this endpoint as their sender
 * @ep_uid: never-reused identity: a generation in the high 32 bits, @id
 *	in the low ones
 * @setup_lock: serialises EP_SETUP against itself and readers of @cq
 * @cq: completion ring, set once by EP_SETUP (then never changes)
 * @auth_key: security domain key from EP_SETUP (0: the uid is the domain)
 * @av: address handle -> ep_uid of the peer, stored with xa_mk_value()
 *	(ep_uid < 2^63); the xa lock protects it
 * @next_av: cursor for cyclic address handles, under the xa lock
 * @nav: entries in @av (at most the module parameter av_max)
 * @av_lock: serialises changes of @av and @av_rev, so that @av_rev always
 *	names a handle of @av for each source value @av holds
 * @av_rev: source value -> &struct dmaplane_av_rev, the reverse of @av
 *	(read under RCU), for the receiver's handle of a sender in
 *	completions (&dmaplane_cqe.src_av)
 * @match_lock: protects @matcher, @unexp_bytes, @unexp_msgs and @dead
 * @matcher: posted receives and unexpected messages
 * @unexp_bytes: eager payload bytes the kernel holds for this endpoint:
 *	queued as unexpected, or matched and waiting for delivery
 * @unexp_msgs: messages queued as unexpected
 * @dead: the file was released: no message is accepted any more
 * @deliver_lock: protects @deliveries, @deliver_pending, @deliver_bytes
 * @deliveries: messages matched to receives, delivered in this order by
 *	@deliver_work (each holds a reference to the endpoint)
 * @deliver_work: copies deliveries into the receivers' buffers in the
 *	endpoint's address space, so that no shared context (a
 *	connection's completion work, another endpoint's ioctl) ever faults
 *	this endpoint's memory
 * @deliver_pending: deliveries queued or being copied
 * @deliver_bytes: eager payload bytes of those (read locklessly under
 *	@match_lock for the budget)
 * @claims: claim handle -> message taken out of matching by PROBE with
 *	%DMAPLANE_PROBE_CLAIM; the xa lock protects it
 * @next_claim: cursor for cyclic claim handles, under the xa lock
 * @wq: poll() waiters for completions
 * @eager_backlog: bytes of eager messages sent to other nodes and not
 *	acknowledged yet (ib_tx.c)
 * @recv_pins: posted receives holding their buffer's page pinned (msg.c:
 *	recv_pin()), at most recv_pins_max
 * @cpu: the CPU its owner last entered the module on for it (a
 *	submission, poll()), or -1: where the helper of a copy of a message
 *	to or from this endpoint runs, the CPU its owner leaves idle while it
 *	waits (msg.c: copy_split_queue()).  A hint, read and written with
 *	READ_ONCE()/WRITE_ONCE() and no lock.
 * @iov_bytes: bytes of iovec arrays (%DMAPLANE_OP_F_IOV) copied in for
 *	this endpoint's operations and not freed yet (msg.c)
 * @recv_cache_lock: protects @recv_cache and @recv_cached
 * @recv_cache: receives of this endpoint that completed, kept for its next
 *	posts (msg.c: recv_alloc()), at most as many as it had posted at
 *	once; freed with the endpoint
 * @recv_cached: how many @recv_cache holds
 * @rcu: the endpoint is freed after a grace period, so that a reader of
 *	dmaplane_ep_ids under RCU may look at @ep_uid and @mm
 */
struct dmaplane_ep {
	u32 id;
	kuid_t uid;
	struct mm_struct *mm;
	struct xarray regions;
	u32 next_handle;
	struct dmaplane_mr_cache *mr_cache;
	struct kref ref;
	u64 ep_uid;
	struct mutex setup_lock;	/* see @setup_lock above */
	struct dmaplane_cq *cq;
	u64 auth_key;
	struct xarray av;
	u32 next_av;
	atomic_t nav;
	struct mutex av_lock;	/* see @av_lock above */
	struct rhashtable av_rev;
	struct mutex match_lock;	/* see @match_lock above */
	struct dmaplane_matcher matcher;
	u64 unexp_bytes;
	u32 unexp_msgs;
	bool dead;
	spinlock_t deliver_lock;	/* see @deliver_lock above */
	struct list_head deliveries;
	struct work_struct deliver_work;
	u32 deliver_pending;
	u64 deliver_bytes;
	struct xarray claims;
	u32 next_claim;
	wait_queue_head_t wq;
	atomic64_t eager_backlog;
	atomic64_t iov_bytes;
	atomic_t recv_pins;
	int cpu;
	spinlock_t recv_cache_lock;	/* see @recv_cache_lock above */
	struct dmaplane_recv *recv_cache[DMAPLANE_RECV_CACHE];
	u32 recv_cached;
	struct rcu_head rcu;
};

/**
 * struct dmaplane_cq - a completion ring (cq.c)
 * @lock: protects @tail, @reserved, @released and writes to the entries
 * @ring: header + entries (a kernel mapping of @pages), mapped read-only
 *	by the owner
 * @entries: the entries, inside @ring
 * @head: consumer page (@head_page), mapped read-write; head->head is
 *	untrusted
 * @pages: the pages of @ring, charged to the owner's memory cgroup
 * @npages: number of @pages
 * @head_page: the page of @head
 * @nr: number of entries (power of two)
 * @tail: producer index
 * @reserved: credits taken by accepted operations not completed yet
 * @released: the owner's file is gone and the pages with it
 * @ring_size: bytes of @ring
 */
struct dmaplane_cq {
	spinlock_t lock;	/* see @lock above */
	struct dmaplane_cq_ring *ring;
	struct dmaplane_cqe *entries;
	struct dmaplane_cq_head *head;
	struct page **pages;
	unsigned int npages;
	struct page *head_page;
	u32 nr;
	u32 tail;
	u32 reserved;
	bool released;
	size_t ring_size;
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

/* dmaplane_region_get() of a region whatever its kind */
#define DMAPLANE_REGION_ANY ((enum dmaplane_region_kind)-1)

struct dmaplane_region;

/**
 * struct dmaplane_region_ops - what a kind of region implements
 * @copy: copy between bytes [@off, @off + iov_iter_count(@iter)) of the
 *	region and @iter; @to_region says the direction.  The caller holds
 *	a reference and has checked the bounds.  Returns 0, or -EFAULT when
 *	the region was invalidated (or @iter faults).  May sleep.
 * @pages: optional: a kvmalloc()ed array of the pages under bytes
 *	[@off, @off + @len), each with a reference taken (the caller
 *	put_page()s them and kvfree()s the array), and the offset of byte
 *	@off in the first one, for DMA by the transport.  The caller holds
 *	a reference and has checked the bounds; @len is not zero.  Absent:
 *	the transport cannot reach the region (-EOPNOTSUPP).
 * @vmap: optional, for a kind without @pages: a kernel address of byte
 *	@off, the range prepared for CPU access in the direction
 *	@to_region, until @vunmap.  Returns 0 or -errno.
 * @vunmap: end the CPU access that @vmap began.
 * @release: free the kind-specific part; called once, in process context,
 *	when the last reference is dropped.  Must not free the region
 *	itself: region.c does that after an RCU grace period.
 */
struct dmaplane_region_ops {
	int (*copy)(struct dmaplane_region *r, u64 off, struct iov_iter *iter,
		    bool to_region);
	int (*pages)(struct dmaplane_region *r, u64 off, u64 len,
		     struct page ***pages, unsigned int *npages,
		     unsigned int *first_off);
	int (*vmap)(struct dmaplane_region *r, u64 off, bool to_region, void **vaddr);
	void (*vunmap)(struct dmaplane_region *r, bool to_region);
	void (*release)(struct dmaplane_region *r);
};

/**
 * struct dmaplane_region_map - a range of a region seen as an iov_iter
 *	(dmaplane_region_iter() to dmaplane_region_iter_end())
 * @r: the region (the caller's reference)
 * @pages: referenced pages under the range (kinds with &dmaplane_region_ops.pages)
 * @bvec: one piece per page of @pages
 * @npages: entries of @pages and @bvec
 * @kv: the range's kernel mapping (kinds with &dmaplane_region_ops.vmap)
 * @vmapped: @kv is in use
 * @to_region: direction
 */
struct dmaplane_region_map {
	struct dmaplane_region *r;
	struct page **pages;
	struct bio_vec *bvec;
	unsigned int npages;
	struct kvec kv;
	bool vmapped;
	bool to_region;
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

/**
 * struct dmaplane_ubuf - an operation's buffer: one range or an iovec's
 *	pieces of user memory, or a range of one of the caller's regions
 * @segs: the pieces; points at @one for a single range (and a region)
 * @one: storage for a single range
 * @nsegs: number of pieces (0 for a region)
 * @len: total bytes
 * @charged: the endpoint whose &dmaplane_ep.iov_bytes counts @segs (an
 *	iovec copy; the buffer never outlives that endpoint's reference)
 * @region: %DMAPLANE_OP_F_REGION: the region (referenced), else NULL
 * @roff: offset of the buffer in @region
 */
struct dmaplane_ubuf {
	struct iovec *segs;
	struct iovec one;
	u32 nsegs;
	u64 len;
	struct dmaplane_ep *charged;
	struct dmaplane_region *region;
	u64 roff;
};

struct dmaplane_rdv;
struct dmaplane_ib_peer;

/**
 * struct dmaplane_peer - a peer node in the table of netlink.c
 * @node: on the peer list, under the peer table's mutex
 * @family: AF_INET or AF_INET6
 * @port: port, host byte order; 0 for the transport's default
 * @addr: the address; an IPv4 address sits in its first four bytes and
 *	the rest is zero
 * @ib: the transport's side of the peer (ib.c); NULL without a transport
 */
struct dmaplane_peer {
	struct list_head node;
	u16 family;
	u16 port;
	struct in6_addr addr;
	struct dmaplane_ib_peer *ib;
};

/**
 * struct dmaplane_peer_info - what the transport reports about a peer
 * @state: &enum dmaplane_nl_peer_state
 * @slot: node slot (%DMAPLANE_SRC_NODE_SLOT), 0 before the first connection
 * @node_id: the peer's node_id, 0 before the first connection
 * @tx_msgs: messages sent
 * @rx_msgs: messages received
 * @tx_bytes: bytes sent
 * @rx_bytes: bytes received
 * @drops: connections dropped for malformed input
 * @mem_bytes: kernel memory held by the connection
 */
struct dmaplane_peer_info {
	u8 state;
	u32 slot;
	u64 node_id;
	u64 tx_msgs;
	u64 rx_msgs;
	u64 tx_bytes;
	u64 rx_bytes;
	u64 drops;
	u64 mem_bytes;
};

/* main.c */
DECLARE_PER_CPU(struct dmaplane_stats, dmaplane_stats);
extern const char * const dmaplane_stat_names[];

#define dmaplane_stat_add(name, n)	this_cpu_add(dmaplane_stats.name, n)
#define dmaplane_stat_sub(name, n)	this_cpu_sub(dmaplane_stats.name, n)
#define dmaplane_stat_inc(name)		this_cpu_inc(dmaplane_stats.name)
#define dmaplane_stat_dec(name)		this_cpu_dec(dmaplane_stats.name)
long dmaplane_stat_read(enum dmaplane_stat stat);

extern struct miscdevice dmaplane_misc;

/* match.c */
int dmaplane_matcher_init(struct dmaplane_matcher *m, struct mutex *lock);
void dmaplane_matcher_destroy(struct dmaplane_matcher *m);
struct dmaplane_match_msg *dmaplane_match_post_recv(struct dmaplane_matcher *m,
						    struct dmaplane_match_recv *r);
struct dmaplane_match_recv *dmaplane_match_take_recv(struct dmaplane_matcher *m,
						     u64 src, u64 tag);
struct dmaplane_match_recv *dmaplane_match_arrive(struct dmaplane_matcher *m,
						  struct dmaplane_match_msg *msg);
struct dmaplane_match_msg *dmaplane_match_probe(struct dmaplane_matcher *m,
						u64 src, u64 tag, u64 ignore,
						bool remove);
void dmaplane_match_cancel_recv(struct dmaplane_matcher *m,
				struct dmaplane_match_recv *r);
void dmaplane_match_remove_msg(struct dmaplane_matcher *m,
			       struct dmaplane_match_msg *msg);
struct dmaplane_match_recv *dmaplane_match_first_recv(struct dmaplane_matcher *m);
struct dmaplane_match_recv *
dmaplane_match_find_recv(struct dmaplane_matcher *m,
			 bool (*pred)(struct dmaplane_match_recv *r, void *arg),
			 void *arg);

/* region.c */
/* Do the DMAPLANE_ACCESS_* bits @access let anyone write the memory? */
static inline bool dmaplane_access_writes(u32 access)
{
	return access & (DMAPLANE_ACCESS_LOCAL_WRITE | DMAPLANE_ACCESS_REMOTE_WRITE);
}

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
void dmaplane_bvec_pages(struct bio_vec *bv, struct page **pages, unsigned int npages,
			 unsigned int first_off, u64 len);
int dmaplane_region_iter(struct dmaplane_region *r, u64 off, u64 len, bool to_region,
			 struct iov_iter *iter, struct dmaplane_region_map *map);
int dmaplane_region_iter_end(struct dmaplane_region_map *map);
void dmaplane_ep_release_regions(struct dmaplane_ep *ep);
int dmaplane_charge_pages(struct mm_struct *mm, unsigned long npages);
int dmaplane_charge_pages_within(struct mm_struct *mm, unsigned long npages);
int dmaplane_charge_pages_noaudit(struct mm_struct *mm, unsigned long npages);
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
bool dmaplane_mr_cache_covers(struct mm_struct *mm, u64 uaddr, u64 len, bool write);
int dmaplane_mr_cache_add_msg(struct dmaplane_ep *ep, u64 uaddr, u64 len);
int dmaplane_mr_cache_copy(struct mm_struct *mm, u64 uaddr, u64 len,
			   struct iov_iter *iter, bool to_mm);
int dmaplane_mr_cache_get_pages(struct mm_struct *mm, u64 uaddr, u64 len,
				struct page **pages, unsigned int max);
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
int dmaplane_mr_test_copy(struct dmaplane_mr_cache *c, u64 addr, u64 len,
			  struct iov_iter *iter, bool to_cache);
int dmaplane_mr_test_get_pages(struct dmaplane_mr_cache *c, u64 addr, u64 len,
			       struct page **pages, unsigned int max);
#endif

/* dmabuf.c */
struct dma_buf;
struct dma_buf *dmaplane_dmabuf_export(struct dmaplane_ep *ep,
				       const struct dmaplane_dmabuf_export *args);
int dmaplane_import_dmabuf(struct dmaplane_ep *ep, struct dma_buf *dmabuf,
			   struct dmaplane_mr_import_dmabuf *args);
int dmaplane_ioctl_dmabuf_export(struct dmaplane_ep *ep, void __user *uarg);
int dmaplane_ioctl_mr_import_dmabuf(struct dmaplane_ep *ep, void __user *uarg);

/* cq.c */
struct dmaplane_cq *dmaplane_cq_create(u32 entries);
void dmaplane_cq_destroy(struct dmaplane_cq *cq);
void dmaplane_cq_release(struct dmaplane_cq *cq);
int dmaplane_cq_reserve(struct dmaplane_cq *cq);
void dmaplane_cq_unreserve(struct dmaplane_cq *cq);
void dmaplane_cq_post(struct dmaplane_cq *cq, const struct dmaplane_cqe *cqe);
bool dmaplane_cq_pending(struct dmaplane_cq *cq);
int dmaplane_cq_mmap(struct dmaplane_cq *cq, struct vm_area_struct *vma);

/* msg.c */
void dmaplane_msg_complete(struct dmaplane_ep *ep, u8 opcode, u64 ctx,
			   int status, u64 len, u64 msg_len, u64 tag, u64 src);
void dmaplane_msg_post(struct dmaplane_ep *ep, struct dmaplane_cqe *cqe);
int dmaplane_ep_reserve_remote(struct dmaplane_ep *ep);
void dmaplane_put_data_complete(struct dmaplane_ep *ep, int status, u64 src,
				u64 len, u64 data);
long dmaplane_folio_run(struct page **pages, long nr);
int dmaplane_ubuf_iter(struct dmaplane_ubuf *b, int dir, u64 len,
		       struct iov_iter *iter, struct dmaplane_region_map *map);
int dmaplane_ubuf_iter_end(struct dmaplane_region_map *map);
int dmaplane_msg_arrive_remote(u64 dst, u32 uid, u64 auth_key, u64 src,
			       u64 tag, u64 len, u64 cq_data, u8 cqe_flags,
			       const void *data, struct dmaplane_rdv *rdv);
int dmaplane_submit(struct dmaplane_ep *ep, u64 uops, u32 nr, u32 op_size);
int dmaplane_ioctl_submit(struct dmaplane_ep *ep, void __user *uarg);
int dmaplane_ioctl_probe(struct dmaplane_ep *ep, void __user *uarg);
int dmaplane_ioctl_cancel(struct dmaplane_ep *ep, void __user *uarg);
void dmaplane_ep_drain_messages(struct dmaplane_ep *ep);
void dmaplane_ep_deliver_init(struct dmaplane_ep *ep);
void dmaplane_ep_recv_cache_free(struct dmaplane_ep *ep);
int dmaplane_msg_init(void);
void dmaplane_msg_exit(void);

/* endpoint.c */
struct dmaplane_ep *dmaplane_ep_create(void);
void dmaplane_ep_destroy(struct dmaplane_ep *ep);
struct dmaplane_ep *dmaplane_ep_get_by_uid(u64 ep_uid);
bool dmaplane_ep_uid_in_mm(u64 src, const struct mm_struct *mm);
void dmaplane_ep_put(struct dmaplane_ep *ep);
struct dmaplane_cq *dmaplane_ep_cq(struct dmaplane_ep *ep);

/*
 * The owner of @ep enters the module on this CPU (&dmaplane_ep.cpu).  An
 * io_uring submission thread or worker is not the owner: its CPU is not
 * the one the owner waits on.
 */
static inline void dmaplane_ep_note_cpu(struct dmaplane_ep *ep)
{
	int cpu = raw_smp_processor_id();

	/* Compare first: the endpoint's line is written only on a move. */
	if (!(current->flags & PF_IO_WORKER) && READ_ONCE(ep->cpu) != cpu)
		WRITE_ONCE(ep->cpu, cpu);
}

int dmaplane_av_lookup(struct dmaplane_ep *ep, u32 handle, u64 *ep_uid);
u32 dmaplane_av_reverse(struct dmaplane_ep *ep, u64 src);
bool dmaplane_ep_same_domain(const struct dmaplane_ep *a, const struct dmaplane_ep *b);
bool dmaplane_ep_domain_ok(const struct dmaplane_ep *ep, u32 uid, u64 auth_key);
int dmaplane_ioctl_ep_setup(struct dmaplane_ep *ep, void __user *uarg);
int dmaplane_ioctl_getname(struct dmaplane_ep *ep, void __user *uarg);
int dmaplane_ioctl_av_insert(struct dmaplane_ep *ep, void __user *uarg);
int dmaplane_ioctl_av_remove(struct dmaplane_ep *ep, void __user *uarg);
unsigned int dmaplane_eager_threshold(void);
extern u64 dmaplane_node_id;
int dmaplane_info_fill(const struct dmaplane_ep *ep, struct dmaplane_info *info);
void dmaplane_ep_exit(void);
int dmaplane_ep_for_each(u32 *pos, int (*fn)(struct dmaplane_ep *ep, void *arg),
			 void *arg);

/* ib.c: the transport to other nodes */
#if IS_ENABLED(CONFIG_INFINIBAND_ADDR_TRANS)
int dmaplane_ib_init(void);
void dmaplane_ib_exit(void);
struct dmaplane_ib_peer *dmaplane_ib_peer_add(const struct dmaplane_peer *p);
void dmaplane_ib_peer_del(struct dmaplane_ib_peer *ip);
void dmaplane_ib_peer_info(struct dmaplane_ib_peer *ip, struct dmaplane_peer_info *info);
int dmaplane_ib_resolve(struct dmaplane_ep *ep, u64 node_id, u64 ep_uid, u64 *src);
int dmaplane_ib_send(struct dmaplane_ep *ep, u64 dst, const struct dmaplane_op *op,
		     struct dmaplane_ubuf *buf);
int dmaplane_ib_rma(struct dmaplane_ep *ep, u64 dst, const struct dmaplane_op *op,
		    struct dmaplane_ubuf *buf);
void dmaplane_ib_pull(struct dmaplane_rdv *rdv, struct dmaplane_ep *ep,
		      struct dmaplane_ubuf *buf, u64 ctx);
void dmaplane_ib_rdv_drop(struct dmaplane_rdv *rdv, int status);
void dmaplane_ib_ep_closed(struct dmaplane_ep *ep);
int dmaplane_ib_conns_show(struct seq_file *m, void *v);
#define DMAPLANE_HAVE_REMOTE true
#else
static inline int dmaplane_ib_init(void) { return 0; }
static inline void dmaplane_ib_exit(void) { }
static inline struct dmaplane_ib_peer *dmaplane_ib_peer_add(const struct dmaplane_peer *p)
{
	return NULL;
}

static inline void dmaplane_ib_peer_del(struct dmaplane_ib_peer *ip) { }
static inline void dmaplane_ib_peer_info(struct dmaplane_ib_peer *ip,
					 struct dmaplane_peer_info *info)
{
	memset(info, 0, sizeof(*info));
}

static inline int dmaplane_ib_resolve(struct dmaplane_ep *ep, u64 node_id,
				      u64 ep_uid, u64 *src)
{
	return -ENETUNREACH;
}

static inline int dmaplane_ib_send(struct dmaplane_ep *ep, u64 dst,
				   const struct dmaplane_op *op,
				   struct dmaplane_ubuf *buf)
{
	return -ECONNRESET;
}

static inline int dmaplane_ib_rma(struct dmaplane_ep *ep, u64 dst,
				  const struct dmaplane_op *op, struct dmaplane_ubuf *buf)
{
	return -ECONNRESET;
}

static inline void dmaplane_ib_pull(struct dmaplane_rdv *rdv, struct dmaplane_ep *ep,
				    struct dmaplane_ubuf *buf, u64 ctx) { }
static inline void dmaplane_ib_rdv_drop(struct dmaplane_rdv *rdv, int status) { }
static inline void dmaplane_ib_ep_closed(struct dmaplane_ep *ep) { }
static inline int dmaplane_ib_conns_show(struct seq_file *m, void *v) { return 0; }
#define DMAPLANE_HAVE_REMOTE false
#endif

/* region.c, for the transport: the pages under a range of a region */
int dmaplane_region_pages(struct dmaplane_region *r, u64 off, u64 len,
			  struct page ***pages, unsigned int *npages,
			  unsigned int *first_off);
int dmaplane_pages_get(struct page **src, unsigned int n, struct page ***pages);
void dmaplane_pages_put(struct page **pages, unsigned int n);

/* netlink.c */
int dmaplane_nl_init(void);
void dmaplane_nl_exit(void);
void dmaplane_nl_notify_region_invalidated(const struct dmaplane_region *r);
void dmaplane_nl_notify_peer_state(u16 family, const struct in6_addr *addr,
				   u16 port, u64 node_id, u32 slot, bool up);
void dmaplane_nl_peers_flush(void);

#endif /* _DMAPLANE_H */

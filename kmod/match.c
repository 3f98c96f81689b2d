// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane tag matching, with MPI semantics.
 *
 * A matcher holds the receives an endpoint has posted and the messages
 * that arrived before any receive matched them ("unexpected" messages).
 *
 * - An arriving message matches the earliest posted receive whose source
 *   is the message's source or DMAPLANE_ANY_SRC and whose tag equals the
 *   message's tag in every bit the receive's ignore mask leaves clear.
 * - A posted receive matches the earliest unexpected message it accepts.
 * - Messages from one source are offered in the order they arrived, so
 *   they match in send order (non-overtaking) whenever the transport
 *   delivers them in send order.
 *
 * Posted receives are of four kinds, each kept in posting order:
 *
 * - fully specified (a source, no ignored tag bit): in a hash table keyed
 *   by (source, tag);
 * - any source, exact tag (MPI_ANY_SOURCE): in a hash table keyed by tag;
 * - a source, ignored tag bits (MPI_ANY_TAG): in a hash table keyed by
 *   source, scanned only among that source's;
 * - any source, ignored tag bits: in a hash table keyed by (ignore mask,
 *   the tag's other bits), for up to DMAPLANE_MATCH_MASKS distinct masks
 *   at a time; a receive with a mask beyond those goes on a list,
 *   scanned whole.
 *
 * Every receive carries a sequence number in posting order.  An arriving
 * message has at most 4 + DMAPLANE_MATCH_MASKS candidates: the first
 * receive of its (source, tag) key, the first of its tag key, the first
 * accepting one of its source's masked receives, the first receive of the
 * key (mask, tag & ~mask) for each mask in use, and the first accepting
 * one on the list; the one posted first wins, as UCX does.  Unexpected
 * messages are in three hash tables, by (source, tag), by tag and by
 * source, and on a list, each in arrival order, so that a posted receive
 * of the first two kinds takes the first message of its key at once, one
 * of the third kind scans its source's messages and one of the fourth
 * kind scans the list.
 * Every entry leaves every structure it is on in O(1).
 *
 * A hash table holds one node per distinct key in its buckets: the
 * earliest entry of that key, which heads a FIFO of the later ones
 * (&struct dmaplane_match_qnode), so a key with many entries costs a
 * lookup no more than a key with one.  A table doubles when it holds more
 * than two keys per bucket, up to 2^DMAPLANE_MATCH_MAX_BITS buckets; when
 * the allocation fails, it keeps its buckets (longer chains, nothing
 * lost).  One that grew large goes back to its initial size when it
 * empties.
 *
 * The matcher does no locking of its own: its owner serialises all calls,
 * table growth included (lockdep-checked through the lock given to
 * dmaplane_matcher_init()); growth and shrinking allocate with
 * GFP_KERNEL, so that lock must be one a caller may sleep under.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hash.h>
#include <linux/lockdep.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>

#include "dmaplane.h"

/* &dmaplane_match_table.kind: what its nodes are, which key they have. */
enum {
	MATCH_T_RECV,		/* dmaplane_match_recv.q: (src, tag) */
	MATCH_T_UNEXP_SPEC,	/* dmaplane_match_msg.spec: (src, tag) */
	MATCH_T_UNEXP_TAG,	/* dmaplane_match_msg.by_tag: (ANY_SRC, tag) */
	MATCH_T_RECV_SRC,	/* dmaplane_match_recv.q: (src, 0) */
	MATCH_T_UNEXP_SRC,	/* dmaplane_match_msg.by_src: (src, 0) */
	MATCH_T_RECV_MASK,	/* dmaplane_match_recv.q: (ignore, tag & ~ignore) */
};

static u64 match_hash(u64 src, u64 tag)
{
	/* Multiplicative: the top bits of the product index the buckets. */
	return (hash_64(src, 64) ^ tag) * GOLDEN_RATIO_64;
}

static struct hlist_head *table_bucket(const struct dmaplane_match_table *t,
				       u64 src, u64 tag)
{
	return &t->heads[match_hash(src, tag) >> (64 - t->bits)];
}

static void qnode_key(const struct dmaplane_match_table *t,
		      const struct dmaplane_match_qnode *q, u64 *src, u64 *tag)
{
	const struct dmaplane_match_recv *r;
	const struct dmaplane_match_msg *msg;

	switch (t->kind) {
	case MATCH_T_RECV:
		r = container_of(q, struct dmaplane_match_recv, q);
		*src = r->src;
		*tag = r->tag;
		break;
	case MATCH_T_UNEXP_SPEC:
		msg = container_of(q, struct dmaplane_match_msg, spec);
		*src = msg->src;
		*tag = msg->tag;
		break;
	case MATCH_T_UNEXP_TAG:
		msg = container_of(q, struct dmaplane_match_msg, by_tag);
		*src = DMAPLANE_ANY_SRC;
		*tag = msg->tag;
		break;
	case MATCH_T_RECV_SRC:
		r = container_of(q, struct dmaplane_match_recv, q);
		*src = r->src;
		*tag = 0;
		break;
	case MATCH_T_RECV_MASK:
		r = container_of(q, struct dmaplane_match_recv, q);
		*src = r->ignore;
		*tag = r->tag & ~r->ignore;
		break;
	default:
		msg = container_of(q, struct dmaplane_match_msg, by_src);
		*src = msg->src;
		*tag = 0;
		break;
	}
}

static struct hlist_head *table_alloc(struct dmaplane_matcher *m,
				      unsigned int bits, gfp_t gfp)
{
	if (m->fail_alloc) {
		if (m->fail_alloc == 1)
			return NULL;
		m->fail_alloc--;
	}
	/* Zeroed buckets are empty hlist_heads. */
	return kvcalloc(1UL << bits, sizeof(struct hlist_head), gfp);
}

/* Growth and shrinking are optimisations: they may fail, quietly. */
#define MATCH_GFP_RESIZE (GFP_KERNEL_ACCOUNT | __GFP_NOWARN)

static int table_init(struct dmaplane_matcher *m, struct dmaplane_match_table *t,
		      unsigned int kind)
{
	t->heads = table_alloc(m, DMAPLANE_MATCH_MIN_BITS, GFP_KERNEL_ACCOUNT);
	if (!t->heads)
		return -ENOMEM;
	t->bits = DMAPLANE_MATCH_MIN_BITS;
	t->nr_keys = 0;
	t->kind = kind;
	return 0;
}

static void table_destroy(struct dmaplane_match_table *t)
{
	kvfree(t->heads);
	t->heads = NULL;
}

/* Move every hashed node to a new array of 2^@bits buckets, or keep all. */
static void table_resize(struct dmaplane_matcher *m,
			 struct dmaplane_match_table *t, unsigned int bits)
{
	struct dmaplane_match_table nt = { .bits = bits, .kind = t->kind };
	struct dmaplane_match_qnode *q;
	struct hlist_node *tmp;
	unsigned int i;
	u64 src, tag;

	nt.heads = table_alloc(m, bits, MATCH_GFP_RESIZE);
	if (!nt.heads)
		return;
	for (i = 0; t->nr_keys && i < (1U << t->bits); i++) {
		hlist_for_each_entry_safe(q, tmp, &t->heads[i], hnode) {
			hlist_del(&q->hnode);
			qnode_key(t, q, &src, &tag);
			hlist_add_head(&q->hnode, table_bucket(&nt, src, tag));
		}
	}
	kvfree(t->heads);
	t->heads = nt.heads;
	t->bits = bits;
}

/* The node of the earliest entry with key (@src, @tag), or NULL. */
static struct dmaplane_match_qnode *
table_find(const struct dmaplane_match_table *t, u64 src, u64 tag)
{
	struct dmaplane_match_qnode *q;
	u64 qsrc, qtag;

	hlist_for_each_entry(q, table_bucket(t, src, tag), hnode) {
		qnode_key(t, q, &qsrc, &qtag);
		if (qsrc == src && qtag == tag)
			return q;
	}
	return NULL;
}

/*
 * The entry after @q in the FIFO of the key whose earliest entry is
 * @first (@q is @first or on its FIFO), or NULL after the last.
 */
static struct dmaplane_match_qnode *qnode_next(struct dmaplane_match_qnode *first,
					       struct dmaplane_match_qnode *q)
{
	struct list_head *next = q == first ? first->same.next : q->same.next;

	if (next == &first->same)
		return NULL;
	return list_entry(next, struct dmaplane_match_qnode, same);
}

/* Append @q, whose entry has key (@src, @tag), to that key's FIFO. */
static void table_add(struct dmaplane_matcher *m, struct dmaplane_match_table *t,
		      struct dmaplane_match_qnode *q, u64 src, u64 tag)
{
	struct dmaplane_match_qnode *first = table_find(t, src, tag);

	if (first) {
		INIT_HLIST_NODE(&q->hnode);
		list_add_tail(&q->same, &first->same);
		return;
	}
	INIT_LIST_HEAD(&q->same);
	hlist_add_head(&q->hnode, table_bucket(t, src, tag));
	t->nr_keys++;
	if (t->nr_keys > (2U << t->bits) && t->bits < DMAPLANE_MATCH_MAX_BITS)
		table_resize(m, t, t->bits + 1);
}

/* Take @q off its table: O(1), whatever its place in its key's FIFO. */
static void table_del(struct dmaplane_matcher *m, struct dmaplane_match_table *t,
		      struct dmaplane_match_qnode *q)
{
	struct dmaplane_match_qnode *next;

	if (hlist_unhashed(&q->hnode)) {
		/* A later entry of its key: only on the first one's FIFO. */
		list_del_init(&q->same);
		return;
	}
	if (!list_empty(&q->same)) {
		/* The next entry of the key takes @q's place in the bucket. */
		next = list_first_entry(&q->same, struct dmaplane_match_qnode, same);
		list_del_init(&next->same);
		list_splice_init(&q->same, &next->same);
		hlist_add_before(&next->hnode, &q->hnode);
		hlist_del_init(&q->hnode);
		return;
	}
	hlist_del_init(&q->hnode);
	t->nr_keys--;
	if (!t->nr_keys && t->bits > DMAPLANE_MATCH_SHRINK_BITS)
		table_resize(m, t, DMAPLANE_MATCH_MIN_BITS);
}

/**
 * dmaplane_matcher_init() - initialise an empty matcher
 * @m: matcher
 * @lock: the lock its owner holds around every call (for lockdep), or
 *	NULL when the owner serialises calls otherwise (KUnit)
 *
 * Return: 0, or -ENOMEM (then there is nothing to destroy).
 */
int dmaplane_matcher_init(struct dmaplane_matcher *m, struct mutex *lock)
{
	int ret;

	ret = table_init(m, &m->recv_spec, MATCH_T_RECV);
	if (ret)
		return ret;
	ret = table_init(m, &m->recv_tag, MATCH_T_RECV);
	if (ret)
		goto err_recv_spec;
	ret = table_init(m, &m->unexp_spec, MATCH_T_UNEXP_SPEC);
	if (ret)
		goto err_recv_tag;
	ret = table_init(m, &m->unexp_tag, MATCH_T_UNEXP_TAG);
	if (ret)
		goto err_unexp_spec;
	ret = table_init(m, &m->recv_src, MATCH_T_RECV_SRC);
	if (ret)
		goto err_unexp_tag;
	ret = table_init(m, &m->unexp_src, MATCH_T_UNEXP_SRC);
	if (ret)
		goto err_recv_src;
	ret = table_init(m, &m->recv_mask, MATCH_T_RECV_MASK);
	if (ret)
		goto err_unexp_src;
	memset(m->nr_mask, 0, sizeof(m->nr_mask));
	INIT_LIST_HEAD(&m->recv_masked);
	INIT_LIST_HEAD(&m->recv_all);
	INIT_LIST_HEAD(&m->unexp_all);
	m->next_seq = 0;
	m->nr_recvs = 0;
	m->nr_unexp = 0;
	m->lock = lock;
	return 0;

err_unexp_src:
	table_destroy(&m->unexp_src);
err_recv_src:
	table_destroy(&m->recv_src);
err_unexp_tag:
	table_destroy(&m->unexp_tag);
err_unexp_spec:
	table_destroy(&m->unexp_spec);
err_recv_tag:
	table_destroy(&m->recv_tag);
err_recv_spec:
	table_destroy(&m->recv_spec);
	return ret;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_matcher_init);

/**
 * dmaplane_matcher_destroy() - free what dmaplane_matcher_init() allocated
 * @m: matcher
 *
 * Entries still queued belong to their owners: they are not touched, and
 * the matcher must not be used again.
 */
void dmaplane_matcher_destroy(struct dmaplane_matcher *m)
{
	table_destroy(&m->recv_spec);
	table_destroy(&m->recv_tag);
	table_destroy(&m->unexp_spec);
	table_destroy(&m->unexp_tag);
	table_destroy(&m->recv_src);
	table_destroy(&m->unexp_src);
	table_destroy(&m->recv_mask);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_matcher_destroy);

static void matcher_assert_held(struct dmaplane_matcher *m)
{
	if (m->lock)
		lockdep_assert_held(m->lock);
}

/* Where a receive is kept: by its kind, fixed while it is posted. */
static struct dmaplane_match_table *recv_table(struct dmaplane_matcher *m,
					       const struct dmaplane_match_recv *r)
{
	if (r->ignore) {
		if (r->src != DMAPLANE_ANY_SRC)
			return &m->recv_src;
		return r->listed ? NULL : &m->recv_mask;
	}
	return r->src == DMAPLANE_ANY_SRC ? &m->recv_tag : &m->recv_spec;
}

/* Count a receive with ignore mask @mask in a slot of @m->masks, if one is free. */
static bool mask_get(struct dmaplane_matcher *m, u64 mask)
{
	int i, free = -1;

	for (i = 0; i < DMAPLANE_MATCH_MASKS; i++) {
		if (!m->nr_mask[i]) {
			if (free < 0)
				free = i;
		} else if (m->masks[i] == mask) {
			m->nr_mask[i]++;
			return true;
		}
	}
	if (free < 0)
		return false;
	m->masks[free] = mask;
	m->nr_mask[free] = 1;
	return true;
}

/* Uncount a receive counted by mask_get(). */
static void mask_put(struct dmaplane_matcher *m, u64 mask)
{
	int i;

	for (i = 0; i < DMAPLANE_MATCH_MASKS; i++) {
		if (m->nr_mask[i] && m->masks[i] == mask) {
			m->nr_mask[i]--;
			return;
		}
	}
	WARN_ON_ONCE(1);
}

static bool recv_accepts(const struct dmaplane_match_recv *r, u64 src, u64 tag)
{
	return (r->src == DMAPLANE_ANY_SRC || r->src == src) &&
	       !((r->tag ^ tag) & ~r->ignore);
}

static void unexp_unlink(struct dmaplane_matcher *m, struct dmaplane_match_msg *msg)
{
	list_del_init(&msg->all_node);
	table_del(m, &m->unexp_spec, &msg->spec);
	table_del(m, &m->unexp_tag, &msg->by_tag);
	table_del(m, &m->unexp_src, &msg->by_src);
	m->nr_unexp--;
}

static void recv_unlink(struct dmaplane_matcher *m, struct dmaplane_match_recv *r)
{
	struct dmaplane_match_table *t = recv_table(m, r);

	if (t)
		table_del(m, t, &r->q);
	else
		list_del_init(&r->node);
	if (t == &m->recv_mask)
		mask_put(m, r->ignore);
	list_del_init(&r->all_node);
	m->nr_recvs--;
}

/*
 * The earliest unexpected message a receive for (@src, @tag, @ignore)
 * accepts, still queued, or NULL.
 */
static struct dmaplane_match_msg *unexp_find(struct dmaplane_matcher *m,
					     u64 src, u64 tag, u64 ignore)
{
	struct dmaplane_match_recv probe = {
		.src = src, .tag = tag, .ignore = ignore,
	};
	struct dmaplane_match_qnode *first, *q;
	struct dmaplane_match_msg *msg;

	if (!ignore && src != DMAPLANE_ANY_SRC) {
		q = table_find(&m->unexp_spec, src, tag);
		return q ? container_of(q, struct dmaplane_match_msg, spec) : NULL;
	}
	if (!ignore) {
		q = table_find(&m->unexp_tag, DMAPLANE_ANY_SRC, tag);
		return q ? container_of(q, struct dmaplane_match_msg, by_tag) : NULL;
	}
	if (src != DMAPLANE_ANY_SRC) {
		/* The source's messages only, in arrival order. */
		first = table_find(&m->unexp_src, src, 0);
		for (q = first; q; q = qnode_next(first, q)) {
			msg = container_of(q, struct dmaplane_match_msg, by_src);
			if (recv_accepts(&probe, msg->src, msg->tag))
				return msg;
		}
		return NULL;
	}
	list_for_each_entry(msg, &m->unexp_all, all_node) {
		if (recv_accepts(&probe, msg->src, msg->tag))
			return msg;
	}
	return NULL;
}

/**
 * dmaplane_match_post_recv() - post a receive
 * @m: matcher
 * @r: receive with src, tag and ignore set
 *
 * Return: the earliest unexpected message @r accepts, taken off the
 * unexpected queue (then @r is not queued), or NULL when @r was queued.
 */
struct dmaplane_match_msg *dmaplane_match_post_recv(struct dmaplane_matcher *m,
						    struct dmaplane_match_recv *r)
{
	struct dmaplane_match_table *t;
	struct dmaplane_match_msg *msg;

	matcher_assert_held(m);
	msg = unexp_find(m, r->src, r->tag, r->ignore);
	if (msg) {
		unexp_unlink(m, msg);
		return msg;
	}
	r->seq = m->next_seq++;
	r->listed = r->ignore && r->src == DMAPLANE_ANY_SRC && !mask_get(m, r->ignore);
	t = recv_table(m, r);
	if (t) {
		u64 ksrc, ktag;

		qnode_key(t, &r->q, &ksrc, &ktag);
		table_add(m, t, &r->q, ksrc, ktag);
	} else {
		list_add_tail(&r->node, &m->recv_masked);
	}
	list_add_tail(&r->all_node, &m->recv_all);
	m->nr_recvs++;
	return NULL;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_match_post_recv);

/**
 * dmaplane_match_take_recv() - take the receive a message would match
 * @m: matcher
 * @src: the message's source
 * @tag: its tag
 *
 * dmaplane_match_arrive() without queueing anything: a sender that has
 * not copied its payload in yet looks for a receive first.
 *
 * Return: the earliest posted receive that accepts a message from @src
 * with @tag, taken off the posted queue, or NULL.
 */
struct dmaplane_match_recv *dmaplane_match_take_recv(struct dmaplane_matcher *m,
						     u64 src, u64 tag)
{
	struct dmaplane_match_recv *r, *best = NULL;
	struct dmaplane_match_qnode *first, *q;
	int i;

	matcher_assert_held(m);
	q = table_find(&m->recv_spec, src, tag);
	if (q)
		best = container_of(q, struct dmaplane_match_recv, q);
	q = table_find(&m->recv_tag, DMAPLANE_ANY_SRC, tag);
	if (q) {
		r = container_of(q, struct dmaplane_match_recv, q);
		if (!best || r->seq < best->seq)
			best = r;
	}
	first = table_find(&m->recv_src, src, 0);
	for (q = first; q; q = qnode_next(first, q)) {
		r = container_of(q, struct dmaplane_match_recv, q);
		if (best && r->seq > best->seq)
			break;
		if (recv_accepts(r, src, tag)) {
			best = r;
			break;
		}
	}
	for (i = 0; i < DMAPLANE_MATCH_MASKS; i++) {
		if (!m->nr_mask[i])
			continue;
		q = table_find(&m->recv_mask, m->masks[i], tag & ~m->masks[i]);
		if (!q)
			continue;
		r = container_of(q, struct dmaplane_match_recv, q);
		if (!best || r->seq < best->seq)
			best = r;
	}
	list_for_each_entry(r, &m->recv_masked, node) {
		/* Later masked receives cannot beat an earlier candidate. */
		if (best && r->seq > best->seq)
			break;
		if (recv_accepts(r, src, tag)) {
			best = r;
			break;
		}
	}
	if (best)
		recv_unlink(m, best);
	return best;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_match_take_recv);

/**
 * dmaplane_match_arrive() - a message arrives
 * @m: matcher
 * @msg: message with src and tag set
 *
 * Return: the earliest posted receive that accepts @msg, taken off the
 * posted queue (then @msg is not queued), or NULL when @msg was queued as
 * unexpected.
 */
struct dmaplane_match_recv *dmaplane_match_arrive(struct dmaplane_matcher *m,
						  struct dmaplane_match_msg *msg)
{
	struct dmaplane_match_recv *r;

	r = dmaplane_match_take_recv(m, msg->src, msg->tag);
	if (r)
		return r;
	list_add_tail(&msg->all_node, &m->unexp_all);
	table_add(m, &m->unexp_spec, &msg->spec, msg->src, msg->tag);
	table_add(m, &m->unexp_tag, &msg->by_tag, DMAPLANE_ANY_SRC, msg->tag);
	table_add(m, &m->unexp_src, &msg->by_src, msg->src, 0);
	m->nr_unexp++;
	return NULL;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_match_arrive);

/**
 * dmaplane_match_probe() - find the unexpected message a receive would take
 * @m: matcher
 * @src: source or %DMAPLANE_ANY_SRC
 * @tag: tag
 * @ignore: tag bits to ignore
 * @remove: take the message off the queue (MPI_Improbe) or leave it
 *
 * Return: the message, or NULL.
 */
struct dmaplane_match_msg *dmaplane_match_probe(struct dmaplane_matcher *m,
						u64 src, u64 tag, u64 ignore,
						bool remove)
{
	struct dmaplane_match_msg *msg;

	matcher_assert_held(m);
	msg = unexp_find(m, src, tag, ignore);
	if (msg && remove)
		unexp_unlink(m, msg);
	return msg;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_match_probe);

/**
 * dmaplane_match_cancel_recv() - withdraw a posted receive
 * @m: matcher
 * @r: a receive dmaplane_match_post_recv() queued and nothing matched yet
 */
void dmaplane_match_cancel_recv(struct dmaplane_matcher *m,
				struct dmaplane_match_recv *r)
{
	matcher_assert_held(m);
	recv_unlink(m, r);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_match_cancel_recv);

/**
 * dmaplane_match_remove_msg() - take an unexpected message off the queue
 * @m: matcher
 * @msg: a message dmaplane_match_arrive() queued
 *
 * For a sender that goes away before its message was received.
 */
void dmaplane_match_remove_msg(struct dmaplane_matcher *m,
			       struct dmaplane_match_msg *msg)
{
	matcher_assert_held(m);
	unexp_unlink(m, msg);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_match_remove_msg);

/**
 * dmaplane_match_first_recv() - the earliest posted receive, for draining
 * @m: matcher
 *
 * Return: a posted receive (still queued), or NULL when there is none.
 */
struct dmaplane_match_recv *dmaplane_match_first_recv(struct dmaplane_matcher *m)
{
	matcher_assert_held(m);
	return list_first_entry_or_null(&m->recv_all, struct dmaplane_match_recv,
					all_node);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_match_first_recv);

/**
 * dmaplane_match_find_recv() - the earliest posted receive @pred accepts
 * @m: matcher
 * @pred: predicate
 * @arg: its argument
 *
 * A scan of every posted receive: for rare operations such as cancel.
 * Return: the receive (still queued), or NULL.
 */
struct dmaplane_match_recv *
dmaplane_match_find_recv(struct dmaplane_matcher *m,
			 bool (*pred)(struct dmaplane_match_recv *r, void *arg),
			 void *arg)
{
	struct dmaplane_match_recv *r;

	matcher_assert_held(m);
	list_for_each_entry(r, &m->recv_all, all_node) {
		if (pred(r, arg))
			return r;
	}
	return NULL;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_match_find_recv);

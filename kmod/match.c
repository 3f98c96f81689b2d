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
 * Receives that name a source and ignore no tag bit -- the common case --
 * are kept in hash buckets keyed by (source, tag), so matching them is not
 * a scan of every posted receive.  Other ("wildcard") receives are kept on
 * one list.  Every receive carries a sequence number in posting order;
 * when both the bucket and the wildcard list hold a candidate, the one
 * posted first wins, as UCX does.  Unexpected messages are on one list in
 * arrival order (for wildcard receives) and in (source, tag) buckets (for
 * fully specified receives, which take the first message of their bucket
 * that has their exact key).
 *
 * The matcher does no locking of its own: its owner serialises all calls
 * (lockdep-checked through the lock given to dmaplane_matcher_init()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/hash.h>
#include <linux/lockdep.h>
#include <linux/module.h>

#include "dmaplane.h"

static unsigned int match_hash(u64 src, u64 tag)
{
	return hash_64(src ^ hash_64(tag, 64), DMAPLANE_MATCH_HASH_BITS);
}

static bool recv_is_specific(const struct dmaplane_match_recv *r)
{
	return r->src != DMAPLANE_ANY_SRC && !r->ignore;
}

static bool recv_accepts(const struct dmaplane_match_recv *r, u64 src, u64 tag)
{
	return (r->src == DMAPLANE_ANY_SRC || r->src == src) &&
	       !((r->tag ^ tag) & ~r->ignore);
}

/**
 * dmaplane_matcher_init() - initialise an empty matcher
 * @m: matcher
 * @lock: the lock its owner holds around every call (for lockdep), or
 *	NULL when the owner serialises calls otherwise (KUnit)
 */
void dmaplane_matcher_init(struct dmaplane_matcher *m, struct mutex *lock)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(m->recv_buckets); i++) {
		INIT_LIST_HEAD(&m->recv_buckets[i]);
		INIT_LIST_HEAD(&m->unexp_buckets[i]);
	}
	INIT_LIST_HEAD(&m->recv_wild);
	INIT_LIST_HEAD(&m->unexp_all);
	m->next_seq = 0;
	m->nr_recvs = 0;
	m->nr_unexp = 0;
	m->lock = lock;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_matcher_init);

static void matcher_assert_held(struct dmaplane_matcher *m)
{
	if (m->lock)
		lockdep_assert_held(m->lock);
}

static void unexp_unlink(struct dmaplane_matcher *m, struct dmaplane_match_msg *msg)
{
	list_del_init(&msg->all_node);
	list_del_init(&msg->bucket_node);
	m->nr_unexp--;
}

static void recv_unlink(struct dmaplane_matcher *m, struct dmaplane_match_recv *r)
{
	list_del_init(&r->node);
	m->nr_recvs--;
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
	struct dmaplane_match_msg *msg;

	matcher_assert_held(m);
	if (recv_is_specific(r)) {
		struct list_head *b = &m->unexp_buckets[match_hash(r->src, r->tag)];

		list_for_each_entry(msg, b, bucket_node) {
			if (msg->src == r->src && msg->tag == r->tag) {
				unexp_unlink(m, msg);
				return msg;
			}
		}
		r->seq = m->next_seq++;
		list_add_tail(&r->node, &m->recv_buckets[match_hash(r->src, r->tag)]);
	} else {
		list_for_each_entry(msg, &m->unexp_all, all_node) {
			if (recv_accepts(r, msg->src, msg->tag)) {
				unexp_unlink(m, msg);
				return msg;
			}
		}
		r->seq = m->next_seq++;
		list_add_tail(&r->node, &m->recv_wild);
	}
	m->nr_recvs++;
	return NULL;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_match_post_recv);

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
	unsigned int h = match_hash(msg->src, msg->tag);
	struct dmaplane_match_recv *r, *spec = NULL, *wild = NULL;

	matcher_assert_held(m);
	list_for_each_entry(r, &m->recv_buckets[h], node) {
		if (r->src == msg->src && r->tag == msg->tag) {
			spec = r;
			break;
		}
	}
	list_for_each_entry(r, &m->recv_wild, node) {
		/* Later wildcards cannot beat an earlier specific receive. */
		if (spec && r->seq > spec->seq)
			break;
		if (recv_accepts(r, msg->src, msg->tag)) {
			wild = r;
			break;
		}
	}
	r = wild ? wild : spec;
	if (r) {
		recv_unlink(m, r);
		return r;
	}
	list_add_tail(&msg->all_node, &m->unexp_all);
	list_add_tail(&msg->bucket_node, &m->unexp_buckets[h]);
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
	struct dmaplane_match_recv probe = {
		.src = src, .tag = tag, .ignore = ignore,
	};
	struct dmaplane_match_msg *msg;

	matcher_assert_held(m);
	list_for_each_entry(msg, &m->unexp_all, all_node) {
		if (recv_accepts(&probe, msg->src, msg->tag)) {
			if (remove)
				unexp_unlink(m, msg);
			return msg;
		}
	}
	return NULL;
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
 * dmaplane_match_first_recv() - any posted receive, for draining
 * @m: matcher
 *
 * Return: a posted receive (still queued), or NULL when there is none.
 */
struct dmaplane_match_recv *dmaplane_match_first_recv(struct dmaplane_matcher *m)
{
	unsigned int i;

	matcher_assert_held(m);
	if (!m->nr_recvs)
		return NULL;
	if (!list_empty(&m->recv_wild))
		return list_first_entry(&m->recv_wild, struct dmaplane_match_recv, node);
	for (i = 0; i < ARRAY_SIZE(m->recv_buckets); i++)
		if (!list_empty(&m->recv_buckets[i]))
			return list_first_entry(&m->recv_buckets[i],
						struct dmaplane_match_recv, node);
	return NULL;
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
	struct dmaplane_match_recv *r, *best = NULL;
	unsigned int i;

	matcher_assert_held(m);
	list_for_each_entry(r, &m->recv_wild, node) {
		if (pred(r, arg)) {
			best = r;
			break;
		}
	}
	for (i = 0; i < ARRAY_SIZE(m->recv_buckets); i++) {
		list_for_each_entry(r, &m->recv_buckets[i], node) {
			if (best && r->seq > best->seq)
				break;
			if (pred(r, arg)) {
				best = r;
				break;
			}
		}
	}
	return best;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_match_find_recv);

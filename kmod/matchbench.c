// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane_matchbench: the tag matcher alone, against a list-walking one.
 *
 * MPI matching papers plot the cost of one match against the depth of the
 * queue it searches.  This module does that for dmaplane's matcher
 * (kmod/match.c, compiled into this module as well, so nothing of
 * dmaplane.ko is exported for it) and for the classic matcher of MPI
 * implementations: one posted-receive list and one unexpected-message
 * list, each searched from its head.
 *
 * For every depth D from 1 to @max_depth (powers of ten):
 *
 * - post-spec: D receives are posted with a specific source and tag; each
 *   timed operation is the arrival of a message for the receive posted
 *   last (the deepest for the list) and the re-posting of that receive;
 * - post-anysrc: the same with receives for any source and an exact tag
 *   (dmaplane keeps them in a table keyed by tag);
 * - post-masked: the same with receives for any source that ignore a tag
 *   bit no message sets (on a list in both matchers: dmaplane scans the
 *   receives for any source that ignore tag bits);
 * - post-anytag: D receives for any tag (every tag bit ignored), each
 *   naming its own source (dmaplane keeps them in a table keyed by
 *   source);
 * - unexp-spec: D messages arrive unmatched; each timed operation posts a
 *   specific receive for the message that arrived last and lets that
 *   message arrive again;
 * - unexp-anysrc: the same with receives for any source and an exact tag.
 *
 * Every operation's result is checked against the receive or message it
 * must return, in both matchers; a wrong one fails the load with -EINVAL.
 * The table (nanoseconds per operation) goes to the kernel log; tests/vm/
 * jobs/bench.sh loads the module for make bench.  The times include the
 * surrounding list operations of both matchers alike; under QEMU TCG only
 * their ratios and their growth with D mean anything.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bits.h>
#include <linux/ktime.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "dmaplane.h"

/*
 * match.c is built into this module too; its functions must not be
 * exported a second time (a KUnit kernel exports them from dmaplane.ko).
 */
#undef EXPORT_SYMBOL_IF_DMAPLANE_KUNIT
#define EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(sym) static_assert(sizeof(typeof(sym) *))
#undef pr_fmt
#include "match.c"

static unsigned int max_depth = 100000;
module_param(max_depth, uint, 0444);
MODULE_PARM_DESC(max_depth, "deepest queue measured (1 .. 1000000, default 100000)");

static unsigned int ops = 200;
module_param(ops, uint, 0444);
MODULE_PARM_DESC(ops, "timed operations per measurement (default 200)");

#define MB_SOURCES	64	/* sources the queued entries come from */

/* The list-walking matcher: two lists, searched from their heads. */
struct list_matcher {
	struct list_head recvs;
	struct list_head unexp;
};

static struct dmaplane_match_msg *
list_post_recv(struct list_matcher *l, struct dmaplane_match_recv *r)
{
	struct dmaplane_match_msg *msg;

	list_for_each_entry(msg, &l->unexp, all_node) {
		if (recv_accepts(r, msg->src, msg->tag)) {
			list_del_init(&msg->all_node);
			return msg;
		}
	}
	list_add_tail(&r->node, &l->recvs);
	return NULL;
}

static struct dmaplane_match_recv *
list_arrive(struct list_matcher *l, struct dmaplane_match_msg *msg)
{
	struct dmaplane_match_recv *r;

	list_for_each_entry(r, &l->recvs, node) {
		if (recv_accepts(r, msg->src, msg->tag)) {
			list_del_init(&r->node);
			return r;
		}
	}
	list_add_tail(&msg->all_node, &l->unexp);
	return NULL;
}

/*
 * One matcher under test: dmaplane's (@m) or the list (@l), and the
 * entries queued in it.
 */
struct mb_run {
	bool hashed;
	struct dmaplane_matcher m;
	struct list_matcher l;
	struct dmaplane_match_recv *recvs;
	struct dmaplane_match_msg *msgs;
};

static struct dmaplane_match_msg *run_post(struct mb_run *t,
					   struct dmaplane_match_recv *r)
{
	return t->hashed ? dmaplane_match_post_recv(&t->m, r) : list_post_recv(&t->l, r);
}

static struct dmaplane_match_recv *run_arrive(struct mb_run *t,
					      struct dmaplane_match_msg *msg)
{
	return t->hashed ? dmaplane_match_arrive(&t->m, msg) : list_arrive(&t->l, msg);
}

static int run_reset(struct mb_run *t)
{
	INIT_LIST_HEAD(&t->l.recvs);
	INIT_LIST_HEAD(&t->l.unexp);
	return t->hashed ? dmaplane_matcher_init(&t->m, NULL) : 0;
}

static void run_done(struct mb_run *t)
{
	if (t->hashed)
		dmaplane_matcher_destroy(&t->m);
}

enum mb_case {
	MB_POST_SPEC, MB_POST_ANYSRC, MB_POST_MASKED, MB_POST_ANYTAG,
	MB_UNEXP_SPEC, MB_UNEXP_ANYSRC, MB_NR_CASES
};

static const char *const mb_case_names[MB_NR_CASES] = {
	"post-spec", "post-anysrc", "post-masked", "post-anytag", "unexp-spec",
	"unexp-anysrc",
};

/* A tag bit no message of the benchmark sets (entry_key()). */
#define MB_UNUSED_TAG_BIT	BIT_ULL(63)

static void entry_key(unsigned int i, u64 *src, u64 *tag)
{
	*src = i % MB_SOURCES;
	*tag = 0x10000 + i;
}

/**
 * mb_measure() - nanoseconds per operation of one case at one depth
 * @t: the matcher under test, with room for @depth entries
 * @c: the case
 * @depth: entries queued before the timed operations
 * @ns: out: nanoseconds per operation
 *
 * Return: 0, -ENOMEM, or -EINVAL when a match returned the wrong entry.
 */
static int mb_measure(struct mb_run *t, enum mb_case c, unsigned int depth,
		      u64 *ns)
{
	bool unexp = c == MB_UNEXP_SPEC || c == MB_UNEXP_ANYSRC;
	struct dmaplane_match_recv *r, *last_r;
	struct dmaplane_match_msg *msg, *last_m, probe;
	unsigned int i;
	int ret;
	u64 t0;

	ret = run_reset(t);
	if (ret)
		return ret;
	ret = -EINVAL;
	for (i = 0; i < depth; i++) {
		r = &t->recvs[i];
		msg = &t->msgs[i];
		entry_key(i, &r->src, &r->tag);
		r->ignore = 0;
		msg->src = r->src;
		msg->tag = r->tag;
		if (c == MB_POST_ANYSRC || c == MB_POST_MASKED || c == MB_UNEXP_ANYSRC)
			r->src = DMAPLANE_ANY_SRC;
		if (c == MB_POST_MASKED)
			r->ignore = MB_UNUSED_TAG_BIT;
		if (c == MB_POST_ANYTAG) {
			/* One receive per source: only it accepts its messages. */
			r->src = i;
			msg->src = i;
			r->ignore = ~0ULL;
		}
		if (unexp) {
			if (run_arrive(t, msg))
				goto out;
		} else if (run_post(t, r)) {
			goto out;
		}
	}
	last_r = &t->recvs[depth - 1];
	last_m = &t->msgs[depth - 1];

	/* A tenth of the operations untimed first, to warm the caches. */
	t0 = 0;
	for (i = 0; i < ops + ops / 10; i++) {
		if (i == ops / 10)
			t0 = ktime_get_ns();
		if (unexp) {
			if (run_post(t, last_r) != last_m)
				goto out;
			if (run_arrive(t, last_m))
				goto out;
		} else {
			probe.src = last_m->src;
			probe.tag = last_m->tag;
			if (run_arrive(t, &probe) != last_r)
				goto out;
			if (run_post(t, last_r))
				goto out;
		}
	}
	*ns = div_u64(ktime_get_ns() - t0, ops);
	ret = 0;
out:
	run_done(t);
	cond_resched();
	return ret;
}

static int __init matchbench_init(void)
{
	struct mb_run *t;
	unsigned int depth, c;
	u64 ns[2], ratio;
	u32 frac;
	int ret = 0;

	if (!max_depth || max_depth > 1000000 || !ops)
		return -EINVAL;
	t = kzalloc(sizeof(*t), GFP_KERNEL);
	if (!t)
		return -ENOMEM;
	t->recvs = kvcalloc(max_depth, sizeof(*t->recvs), GFP_KERNEL);
	if (!t->recvs) {
		ret = -ENOMEM;
		goto free_run;
	}
	t->msgs = kvcalloc(max_depth, sizeof(*t->msgs), GFP_KERNEL);
	if (!t->msgs) {
		ret = -ENOMEM;
		goto free_recvs;
	}

	pr_info("the tag matcher alone: ns per operation at queue depth D (%u operations each)\n",
		ops);
	pr_info("%-12s %8s %10s %10s %8s\n", "case", "D", "dmaplane", "list", "list/dp");
	for (c = 0; c < MB_NR_CASES && !ret; c++) {
		for (depth = 1; depth <= max_depth && !ret; depth *= 10) {
			t->hashed = true;
			ret = mb_measure(t, c, depth, &ns[0]);
			if (ret)
				break;
			t->hashed = false;
			ret = mb_measure(t, c, depth, &ns[1]);
			if (ret)
				break;
			ratio = div_u64(ns[1] * 100, max_t(u64, ns[0], 1));
			ratio = div_u64_rem(ratio, 100, &frac);
			pr_info("%-12s %8u %10llu %10llu %5llu.%02u\n",
				mb_case_names[c], depth, ns[0], ns[1], ratio, frac);
		}
		if (ret == -EINVAL)
			pr_err("%s: a match returned the wrong entry\n", mb_case_names[c]);
	}

	kvfree(t->msgs);
free_recvs:
	kvfree(t->recvs);
free_run:
	kfree(t);
	return ret;
}

static void __exit matchbench_exit(void)
{
}

module_init(matchbench_init);
module_exit(matchbench_exit);
MODULE_DESCRIPTION("dmaplane tag matcher benchmark");
MODULE_LICENSE("GPL");

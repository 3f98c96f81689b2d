// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for dmaplane tag matching: MPI ordering rules, wildcards,
 * ignore masks, unexpected messages, probe and cancel, the kinds of
 * receive (hashed by source and tag, by tag, by source, by mask and the
 * tag's other bits, the list of masks beyond those hashed), table
 * growth to 100,000 entries and its allocation failures, and randomised
 * comparisons against a straightforward reference matcher.
 */
#include <kunit/test.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/slab.h>

#include "../kmod/dmaplane.h"

MODULE_IMPORT_NS(DMAPLANE_NS(DMAPLANE_KUNIT));

#define ANY DMAPLANE_ANY_SRC
#define MAXN 512

struct fixture {
	struct dmaplane_matcher m;
	struct dmaplane_match_recv recv[MAXN];
	struct dmaplane_match_msg msg[MAXN];
	unsigned int nr_recv;
	unsigned int nr_msg;
};

static int match_init(struct kunit *test)
{
	struct fixture *f = kunit_kzalloc(test, sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	test->priv = f;
	/* On failure the tables are NULL: match_exit() frees nothing. */
	KUNIT_ASSERT_EQ(test, dmaplane_matcher_init(&f->m, NULL), 0);
	return 0;
}

static void match_exit(struct kunit *test)
{
	struct fixture *f = test->priv;

	if (f)
		dmaplane_matcher_destroy(&f->m);
}

/*
 * An ignore mask for the randomised tests: one of 12 (more than
 * DMAPLANE_MATCH_MASKS, so that some any-source masked receives go on the
 * list), ~0 and 1 most often.
 */
static u64 rand_mask(u32 rnd)
{
	static const u64 masks[] = {
		~0ULL, 1, ~0ULL, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0xa, 0xc,
	};

	return masks[rnd % ARRAY_SIZE(masks)];
}

/* Post a receive; return the index of the message it took, or -1. */
static int post(struct kunit *test, u64 src, u64 tag, u64 ignore)
{
	struct fixture *f = test->priv;
	struct dmaplane_match_recv *r = &f->recv[f->nr_recv++];
	struct dmaplane_match_msg *msg;

	r->src = src;
	r->tag = tag;
	r->ignore = ignore;
	msg = dmaplane_match_post_recv(&f->m, r);
	return msg ? (int)(msg - f->msg) : -1;
}

/* A message arrives; return the index of the receive it matched, or -1. */
static int arrive(struct kunit *test, u64 src, u64 tag)
{
	struct fixture *f = test->priv;
	struct dmaplane_match_msg *msg = &f->msg[f->nr_msg++];
	struct dmaplane_match_recv *r;

	msg->src = src;
	msg->tag = tag;
	r = dmaplane_match_arrive(&f->m, msg);
	return r ? (int)(r - f->recv) : -1;
}

static void receives_match_in_posted_order(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, post(test, 1, 5, 0), -1);		/* r0 */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 5, 0), -1);	/* r1 */
	KUNIT_EXPECT_EQ(test, post(test, 1, 5, 0), -1);		/* r2 */
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 5), 0);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 5), 1);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 5), 2);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 5), -1);
}

static void earlier_wildcard_beats_later_specific(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, post(test, ANY, 7, 0), -1);	/* r0 */
	KUNIT_EXPECT_EQ(test, post(test, 3, 7, 0), -1);		/* r1 */
	KUNIT_EXPECT_EQ(test, post(test, 3, 0, ~0ULL), -1);	/* r2: any tag */
	KUNIT_EXPECT_EQ(test, arrive(test, 3, 7), 0);
	KUNIT_EXPECT_EQ(test, arrive(test, 3, 7), 1);
	KUNIT_EXPECT_EQ(test, arrive(test, 3, 7), 2);
}

static void earlier_specific_beats_later_wildcard(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, post(test, 3, 7, 0), -1);		/* r0 */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 7, 0), -1);	/* r1 */
	KUNIT_EXPECT_EQ(test, arrive(test, 3, 7), 0);
	KUNIT_EXPECT_EQ(test, arrive(test, 4, 7), 1);
}

static void ignore_mask_selects_tag_bits(struct kunit *test)
{
	/* Accept tags 0x10..0x1f from source 2. */
	KUNIT_EXPECT_EQ(test, post(test, 2, 0x10, 0x0f), -1);
	KUNIT_EXPECT_EQ(test, arrive(test, 2, 0x20), -1);	/* bit 5 differs */
	KUNIT_EXPECT_EQ(test, arrive(test, 3, 0x1f), -1);	/* wrong source */
	KUNIT_EXPECT_EQ(test, arrive(test, 2, 0x1f), 0);
	/* High tag bits take part too. */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 1ULL << 63, 0), -1);
	KUNIT_EXPECT_EQ(test, arrive(test, 9, 1), -1);
	KUNIT_EXPECT_EQ(test, arrive(test, 9, 1ULL << 63), 1);
}

static void unexpected_messages_taken_in_arrival_order(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 1), -1);		/* m0 */
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 2), -1);		/* m1 */
	KUNIT_EXPECT_EQ(test, arrive(test, 2, 1), -1);		/* m2 */
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 1), -1);		/* m3 */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 1, 0), 0);
	KUNIT_EXPECT_EQ(test, post(test, 2, 1, 0), 2);
	KUNIT_EXPECT_EQ(test, post(test, 1, 0, ~0ULL), 1);
	KUNIT_EXPECT_EQ(test, post(test, 1, 1, 0), 3);
	KUNIT_EXPECT_EQ(test, post(test, ANY, 0, ~0ULL), -1);
}

static void one_source_never_overtakes(struct kunit *test)
{
	unsigned int i;

	for (i = 0; i < 100; i++)
		KUNIT_EXPECT_EQ(test, arrive(test, 6, i % 3), -1);
	/* Any-tag receives from source 6 see the messages in send order. */
	for (i = 0; i < 100; i++)
		KUNIT_EXPECT_EQ(test, post(test, 6, 0, ~0ULL), (int)i);
}

/* Take the receive a message would match; return its index, or -1. */
static int take(struct kunit *test, u64 src, u64 tag)
{
	struct fixture *f = test->priv;
	struct dmaplane_match_recv *r;

	r = dmaplane_match_take_recv(&f->m, src, tag);
	return r ? (int)(r - f->recv) : -1;
}

/*
 * What an eager sender does first: a receive is taken in the order
 * dmaplane_match_arrive() would take it, and a miss queues nothing.
 */
static void take_recv_queues_nothing(struct kunit *test)
{
	struct fixture *f = test->priv;

	KUNIT_EXPECT_EQ(test, post(test, 1, 5, 0), -1);		/* r0 */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 5, 0), -1);	/* r1 */
	KUNIT_EXPECT_EQ(test, post(test, 2, 0, ~0ULL), -1);	/* r2: any tag */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 0x10, 0x0f), -1);	/* r3: masked */
	KUNIT_EXPECT_EQ(test, take(test, 3, 6), -1);
	KUNIT_EXPECT_EQ(test, f->m.nr_unexp, 0u);
	KUNIT_EXPECT_EQ(test, take(test, 1, 5), 0);
	KUNIT_EXPECT_EQ(test, take(test, 1, 5), 1);
	KUNIT_EXPECT_EQ(test, take(test, 1, 5), -1);
	KUNIT_EXPECT_EQ(test, take(test, 2, 5), 2);
	KUNIT_EXPECT_EQ(test, take(test, 7, 0x1a), 3);
	KUNIT_EXPECT_EQ(test, take(test, 7, 0x1a), -1);
	KUNIT_EXPECT_EQ(test, f->m.nr_unexp, 0u);
	/* Nothing was queued: a receive posted now finds no message. */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 0, ~0ULL), -1);
	KUNIT_EXPECT_EQ(test, take(test, 3, 6), 4);
}

static void probe_peeks_or_takes(struct kunit *test)
{
	struct fixture *f = test->priv;
	struct dmaplane_match_msg *msg;

	KUNIT_EXPECT_EQ(test, arrive(test, 4, 40), -1);
	KUNIT_EXPECT_EQ(test, arrive(test, 5, 50), -1);
	KUNIT_EXPECT_NULL(test, dmaplane_match_probe(&f->m, 4, 50, 0, false));
	msg = dmaplane_match_probe(&f->m, ANY, 50, 0, false);
	KUNIT_EXPECT_PTR_EQ(test, msg, &f->msg[1]);
	KUNIT_EXPECT_EQ(test, f->m.nr_unexp, 2u);
	msg = dmaplane_match_probe(&f->m, ANY, 0, ~0ULL, true);
	KUNIT_EXPECT_PTR_EQ(test, msg, &f->msg[0]);
	KUNIT_EXPECT_EQ(test, f->m.nr_unexp, 1u);
	/* The message probe took is no longer offered to receives. */
	KUNIT_EXPECT_EQ(test, post(test, 4, 40, 0), -1);
	KUNIT_EXPECT_EQ(test, post(test, 5, 50, 0), 1);
}

static void cancel_withdraws_receive(struct kunit *test)
{
	struct fixture *f = test->priv;

	KUNIT_EXPECT_EQ(test, post(test, 1, 1, 0), -1);
	KUNIT_EXPECT_EQ(test, post(test, ANY, 1, 0), -1);
	dmaplane_match_cancel_recv(&f->m, &f->recv[0]);
	KUNIT_EXPECT_EQ(test, f->m.nr_recvs, 1u);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 1), 1);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 1), -1);
	dmaplane_match_remove_msg(&f->m, &f->msg[1]);
	KUNIT_EXPECT_EQ(test, f->m.nr_unexp, 0u);
	KUNIT_EXPECT_EQ(test, post(test, 1, 1, 0), -1);
}

static void colliding_keys_stay_apart(struct kunit *test)
{
	unsigned int i;

	/* Far more keys than buckets: every bucket holds many keys. */
	for (i = 0; i < 400; i++)
		KUNIT_EXPECT_EQ(test, post(test, i % 20, i / 20, 0), -1);
	for (i = 400; i-- > 0;)
		KUNIT_EXPECT_EQ(test, arrive(test, i % 20, i / 20), (int)i);
}

static void ordering_across_three_kinds(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, post(test, ANY, 5, 0), -1);	/* r0: by tag */
	KUNIT_EXPECT_EQ(test, post(test, 1, 4, 1), -1);		/* r1: masked */
	KUNIT_EXPECT_EQ(test, post(test, 1, 5, 0), -1);		/* r2: by src, tag */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 5, 0), -1);	/* r3: by tag */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 0, ~0ULL), -1);	/* r4: masked */
	KUNIT_EXPECT_EQ(test, post(test, 1, 5, 0), -1);		/* r5: by src, tag */
	KUNIT_EXPECT_EQ(test, arrive(test, 2, 5), 0);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 5), 1);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 5), 2);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 5), 3);
	KUNIT_EXPECT_EQ(test, arrive(test, 3, 9), 4);
	KUNIT_EXPECT_EQ(test, arrive(test, 2, 5), -1);		/* m5 */
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 5), 5);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 5), -1);		/* m7 */
	/* Later receives of every kind find the earliest message. */
	KUNIT_EXPECT_EQ(test, post(test, 1, 5, 0), 7);
	KUNIT_EXPECT_EQ(test, post(test, ANY, 4, 1), 5);
	KUNIT_EXPECT_EQ(test, post(test, ANY, 5, 0), -1);
}

/*
 * MPI_ANY_TAG receives naming a source are hashed by source: one source's
 * are scanned in posting order against the other kinds' candidates, and
 * they take their source's unexpected messages in arrival order, whatever
 * other sources sent meanwhile.
 */
static void any_tag_receives_keyed_by_source(struct kunit *test)
{
	struct fixture *f = test->priv;
	struct dmaplane_matcher *m = &f->m;

	KUNIT_EXPECT_EQ(test, post(test, 1, 8, 7), -1);		/* r0: tags 8..15 */
	KUNIT_EXPECT_EQ(test, post(test, 1, 0, ~0ULL), -1);	/* r1: any tag */
	KUNIT_EXPECT_EQ(test, post(test, 1, 3, 0), -1);		/* r2: by src, tag */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 3, 0), -1);	/* r3: by tag */
	KUNIT_EXPECT_EQ(test, post(test, 2, 0, ~0ULL), -1);	/* r4: any tag */
	KUNIT_EXPECT_EQ(test, m->recv_src.nr_keys, 2u);
	KUNIT_EXPECT_TRUE(test, list_empty(&m->recv_masked));
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 3), 1);	/* r0 does not accept 3 */
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 3), 2);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 9), 0);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 3), 3);
	KUNIT_EXPECT_EQ(test, arrive(test, 3, 3), -1);		/* m4 */
	KUNIT_EXPECT_EQ(test, arrive(test, 2, 3), 4);
	KUNIT_EXPECT_EQ(test, m->recv_src.nr_keys, 0u);
	/* Unexpected, interleaved sources: each source's in arrival order. */
	KUNIT_EXPECT_EQ(test, arrive(test, 2, 12), -1);		/* m6 */
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 5), -1);		/* m7 */
	KUNIT_EXPECT_EQ(test, arrive(test, 2, 4), -1);		/* m8 */
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 12), -1);		/* m9 */
	KUNIT_EXPECT_EQ(test, m->unexp_src.nr_keys, 3u);
	KUNIT_EXPECT_EQ(test, post(test, 1, 8, 7), 9);
	KUNIT_EXPECT_EQ(test, post(test, 2, 0, 7), 8);
	KUNIT_EXPECT_EQ(test, post(test, 2, 0, ~0ULL), 6);
	KUNIT_EXPECT_EQ(test, post(test, 2, 0, ~0ULL), -1);	/* r8: queued */
	KUNIT_EXPECT_PTR_EQ(test, dmaplane_match_probe(m, 1, 0, ~0ULL, false), &f->msg[7]);
	KUNIT_EXPECT_PTR_EQ(test, dmaplane_match_probe(m, 3, 0, ~0ULL, true), &f->msg[4]);
	KUNIT_EXPECT_NULL(test, dmaplane_match_probe(m, 3, 0, ~0ULL, false));
	KUNIT_EXPECT_EQ(test, post(test, ANY, 0, ~0ULL), 7);
	KUNIT_EXPECT_EQ(test, m->nr_unexp, 0u);
	KUNIT_EXPECT_EQ(test, m->unexp_src.nr_keys, 0u);
	dmaplane_match_cancel_recv(m, &f->recv[8]);
	KUNIT_EXPECT_EQ(test, m->recv_src.nr_keys, 0u);
	KUNIT_EXPECT_EQ(test, m->nr_recvs, 0u);
}

static void any_source_takes_unexpected_in_arrival_order(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 7), -1);		/* m0 */
	KUNIT_EXPECT_EQ(test, arrive(test, 2, 8), -1);		/* m1 */
	KUNIT_EXPECT_EQ(test, arrive(test, 3, 7), -1);		/* m2 */
	KUNIT_EXPECT_EQ(test, arrive(test, 2, 7), -1);		/* m3 */
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 7), -1);		/* m4 */
	KUNIT_EXPECT_EQ(test, arrive(test, 4, 7), -1);		/* m5 */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 7, 0), 0);
	KUNIT_EXPECT_EQ(test, post(test, 2, 7, 0), 3);
	KUNIT_EXPECT_EQ(test, post(test, ANY, 7, 0), 2);
	KUNIT_EXPECT_EQ(test, post(test, ANY, 8, 0), 1);
	KUNIT_EXPECT_EQ(test, post(test, 1, 0, ~0ULL), 4);
	KUNIT_EXPECT_EQ(test, post(test, ANY, 7, 0), 5);
	KUNIT_EXPECT_EQ(test, post(test, ANY, 7, 0), -1);
	KUNIT_EXPECT_EQ(test, post(test, ANY, 8, 0), -1);
}

static void removal_from_every_structure(struct kunit *test)
{
	struct fixture *f = test->priv;
	struct dmaplane_matcher *m = &f->m;

	/* Three entries per key of each kind: first, middle, last. */
	KUNIT_EXPECT_EQ(test, post(test, 1, 5, 0), -1);		/* r0 */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 5, 0), -1);	/* r1 */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 5, 1), -1);	/* r2 */
	KUNIT_EXPECT_EQ(test, post(test, 1, 5, 0), -1);		/* r3 */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 5, 0), -1);	/* r4 */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 5, 1), -1);	/* r5 */
	KUNIT_EXPECT_EQ(test, post(test, 1, 5, 0), -1);		/* r6 */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 5, 0), -1);	/* r7 */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 5, 1), -1);	/* r8 */
	dmaplane_match_cancel_recv(m, &f->recv[0]);	/* first of its key */
	dmaplane_match_cancel_recv(m, &f->recv[4]);	/* middle */
	dmaplane_match_cancel_recv(m, &f->recv[8]);	/* last, masked */
	dmaplane_match_cancel_recv(m, &f->recv[5]);	/* middle, masked */
	KUNIT_EXPECT_EQ(test, m->nr_recvs, 5u);
	KUNIT_EXPECT_EQ(test, m->recv_spec.nr_keys, 1u);
	KUNIT_EXPECT_EQ(test, m->recv_tag.nr_keys, 1u);
	KUNIT_EXPECT_PTR_EQ(test, dmaplane_match_first_recv(m), &f->recv[1]);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 5), 1);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 5), 2);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 5), 3);
	dmaplane_match_cancel_recv(m, &f->recv[6]);	/* alone in its key */
	KUNIT_EXPECT_EQ(test, m->recv_spec.nr_keys, 0u);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 5), 7);
	KUNIT_EXPECT_EQ(test, m->nr_recvs, 0u);
	KUNIT_EXPECT_EQ(test, m->recv_tag.nr_keys, 0u);
	KUNIT_EXPECT_NULL(test, dmaplane_match_first_recv(m));

	/* Unexpected messages: m4..m9, two sources, one tag. */
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 6), -1);		/* m4 */
	KUNIT_EXPECT_EQ(test, arrive(test, 2, 6), -1);		/* m5 */
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 6), -1);		/* m6 */
	KUNIT_EXPECT_EQ(test, arrive(test, 2, 6), -1);		/* m7 */
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 6), -1);		/* m8 */
	KUNIT_EXPECT_EQ(test, arrive(test, 2, 6), -1);		/* m9 */
	/* First by tag and by (1, 6); middle of (2, 6); last by tag. */
	dmaplane_match_remove_msg(m, &f->msg[4]);
	dmaplane_match_remove_msg(m, &f->msg[7]);
	dmaplane_match_remove_msg(m, &f->msg[9]);
	KUNIT_EXPECT_EQ(test, m->nr_unexp, 3u);
	KUNIT_EXPECT_EQ(test, m->unexp_spec.nr_keys, 2u);
	KUNIT_EXPECT_EQ(test, m->unexp_tag.nr_keys, 1u);
	/* Taken by probe: the head of (2, 6), the middle by tag. */
	KUNIT_EXPECT_PTR_EQ(test, dmaplane_match_probe(m, 2, 6, 0, true), &f->msg[5]);
	KUNIT_EXPECT_EQ(test, post(test, ANY, 6, 0), 6);
	KUNIT_EXPECT_EQ(test, post(test, 2, 6, 0), -1);
	KUNIT_EXPECT_EQ(test, post(test, ANY, 0, ~0ULL), 8);
	KUNIT_EXPECT_EQ(test, m->nr_unexp, 0u);
	KUNIT_EXPECT_EQ(test, m->unexp_spec.nr_keys, 0u);
	KUNIT_EXPECT_EQ(test, m->unexp_tag.nr_keys, 0u);
	KUNIT_EXPECT_TRUE(test, list_empty(&m->unexp_all));
}

#define DEEP	100000

/*
 * 100,000 receives, four per tag: any source, source S, any source,
 * source S.  Messages arrive in random order, each from S or from
 * another source; the expected receive is the first one still posted of
 * the tag (from S) or of the tag's any-source ones (from elsewhere).
 */
static void growth_to_100000_random_order(struct kunit *test)
{
	struct fixture *f = test->priv;
	struct dmaplane_matcher *m = &f->m;
	struct dmaplane_match_recv *recvs, *r;
	struct dmaplane_match_msg *msgs;
	unsigned int i, j, nr_live = DEEP;
	u32 *order;
	u8 *live;

	recvs = kvcalloc(DEEP, sizeof(*recvs), GFP_KERNEL);
	msgs = kvcalloc(DEEP, sizeof(*msgs), GFP_KERNEL);
	order = kvcalloc(DEEP, sizeof(*order), GFP_KERNEL);
	live = kvcalloc(DEEP / 4, sizeof(*live), GFP_KERNEL);
	if (!recvs || !msgs || !order || !live) {
		KUNIT_FAIL(test, "no memory for the test");
		goto out;
	}
	for (i = 0; i < DEEP; i++) {
		recvs[i].tag = 0x100000 + i / 4;
		recvs[i].src = i & 1 ? (i / 4) % 97 : ANY;
		KUNIT_ASSERT_NULL(test, dmaplane_match_post_recv(m, &recvs[i]));
		order[i] = i;
	}
	for (i = 0; i < DEEP / 4; i++)
		live[i] = 0xf;
	KUNIT_EXPECT_EQ(test, m->nr_recvs, DEEP);
	KUNIT_EXPECT_EQ(test, m->recv_spec.nr_keys, DEEP / 4);
	KUNIT_EXPECT_EQ(test, m->recv_tag.nr_keys, DEEP / 4);
	/* Two keys per bucket at most: 2^14 buckets for 25,000 keys. */
	KUNIT_EXPECT_EQ(test, m->recv_spec.bits, 14u);
	KUNIT_EXPECT_EQ(test, m->recv_tag.bits, 14u);
	for (i = DEEP - 1; i > 0; i--)
		swap(order[i], order[get_random_u32_below(i + 1)]);

	for (i = 0; i < DEEP; i++) {
		unsigned int k = order[i], t = k / 4;
		struct dmaplane_match_msg *msg = &msgs[i];
		u8 cand = live[t];
		int want = -1;

		msg->tag = recvs[k].tag;
		msg->src = k & 1 ? t % 97 : 1000 + t % 7;
		if (!(k & 1))
			cand &= 0x5;	/* only the any-source ones */
		if (cand)
			want = t * 4 + __ffs(cand);
		r = dmaplane_match_arrive(m, msg);
		KUNIT_ASSERT_EQ_MSG(test, r ? (int)(r - recvs) : -1, want,
				    "arrival %u for receive %u", i, k);
		if (want >= 0) {
			live[t] &= ~BIT(want % 4);
			nr_live--;
		}
		if (!(i % 1024))
			cond_resched();
	}
	KUNIT_EXPECT_EQ(test, m->nr_recvs, nr_live);
	KUNIT_EXPECT_EQ(test, m->nr_unexp, nr_live);
	/* Drain, as an endpoint does. */
	for (j = 0; j < DEEP / 4; j++) {
		while (live[j]) {
			r = &recvs[j * 4 + __ffs(live[j])];
			live[j] &= live[j] - 1;
			dmaplane_match_cancel_recv(m, r);
			nr_live--;
		}
	}
	j = m->nr_unexp;
	for (i = 0; dmaplane_match_probe(m, ANY, 0, ~0ULL, true); i++)
		;
	KUNIT_EXPECT_EQ(test, i, j);
	KUNIT_EXPECT_EQ(test, nr_live, 0u);
	KUNIT_EXPECT_EQ(test, m->nr_recvs, 0u);
	KUNIT_EXPECT_EQ(test, m->nr_unexp, 0u);
	KUNIT_EXPECT_EQ(test, m->recv_spec.nr_keys + m->recv_tag.nr_keys, 0u);
	KUNIT_EXPECT_EQ(test, m->unexp_spec.nr_keys + m->unexp_tag.nr_keys, 0u);
	KUNIT_EXPECT_EQ(test, m->recv_src.nr_keys + m->unexp_src.nr_keys, 0u);
	/* Emptied after growing large: back to the smallest tables. */
	KUNIT_EXPECT_EQ(test, m->recv_spec.bits, DMAPLANE_MATCH_MIN_BITS);
	KUNIT_EXPECT_EQ(test, m->recv_tag.bits, DMAPLANE_MATCH_MIN_BITS);
	KUNIT_EXPECT_LE(test, m->unexp_tag.bits, DMAPLANE_MATCH_SHRINK_BITS);
out:
	kvfree(live);
	kvfree(order);
	kvfree(msgs);
	kvfree(recvs);
}

static void init_allocation_failures(struct kunit *test)
{
	struct dmaplane_matcher *m = kunit_kzalloc(test, sizeof(*m), GFP_KERNEL);
	unsigned int n;

	KUNIT_ASSERT_NOT_NULL(test, m);
	/* The Nth of the seven table allocations fails: unwound (kmemleak). */
	for (n = 1; n <= 7; n++) {
		m->fail_alloc = n;
		KUNIT_EXPECT_EQ(test, dmaplane_matcher_init(m, NULL), -ENOMEM);
	}
	m->fail_alloc = 8;
	KUNIT_EXPECT_EQ(test, dmaplane_matcher_init(m, NULL), 0);
	dmaplane_matcher_destroy(m);
}

static void growth_failure_keeps_table(struct kunit *test)
{
	struct fixture *f = test->priv;
	struct dmaplane_matcher *m = &f->m;
	unsigned int i;

	/* No growth possible: 400 keys in 16 buckets, all still found. */
	m->fail_alloc = 1;
	for (i = 0; i < 400; i++)
		KUNIT_EXPECT_EQ(test, post(test, i % 2 ? i % 20 : ANY, i, 0), -1);
	KUNIT_EXPECT_EQ(test, m->recv_spec.bits, DMAPLANE_MATCH_MIN_BITS);
	KUNIT_EXPECT_EQ(test, m->recv_tag.bits, DMAPLANE_MATCH_MIN_BITS);
	for (i = 0; i < 200; i++)
		KUNIT_EXPECT_EQ(test, arrive(test, i % 20, i), (int)i);
	/* Allocations work again: the next key grows the tables. */
	m->fail_alloc = 0;
	KUNIT_EXPECT_EQ(test, post(test, 7, 1000, 0), -1);	/* r400 */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 1001, 0), -1);	/* r401 */
	KUNIT_EXPECT_GT(test, m->recv_spec.bits, DMAPLANE_MATCH_MIN_BITS);
	KUNIT_EXPECT_GT(test, m->recv_tag.bits, DMAPLANE_MATCH_MIN_BITS);
	for (i = 200; i < 400; i++)
		KUNIT_EXPECT_EQ(test, arrive(test, i % 20, i), (int)i);
	KUNIT_EXPECT_EQ(test, arrive(test, 7, 1000), 400);
	/* Shrinking fails too when it empties: the large table stays. */
	m->fail_alloc = 1;
	KUNIT_EXPECT_EQ(test, arrive(test, 7, 1001), 401);
	KUNIT_EXPECT_EQ(test, m->nr_recvs, 0u);
	KUNIT_EXPECT_GT(test, m->recv_tag.bits, DMAPLANE_MATCH_MIN_BITS);
	KUNIT_EXPECT_EQ(test, post(test, 3, 1001, 0), -1);	/* r402 */
	KUNIT_EXPECT_EQ(test, arrive(test, 3, 1001), 402);
}

/*
 * Reference matcher: the rules of the file comment applied literally, by
 * scanning everything in order.  A message that arrives looks for a
 * receive with dmaplane_match_take_recv() first half the time.
 */
struct ref_recv {
	u64 src, tag, ignore;
	int id;
	bool live;
};

struct ref_msg {
	u64 src, tag;
	int id;
	bool live;
};

static bool ref_accepts(const struct ref_recv *r, u64 src, u64 tag)
{
	return (r->src == ANY || r->src == src) && !((r->tag ^ tag) & ~r->ignore);
}

static void random_against_reference(struct kunit *test)
{
	struct ref_recv *rr = kunit_kcalloc(test, MAXN, sizeof(*rr), GFP_KERNEL);
	struct ref_msg *rm = kunit_kcalloc(test, MAXN, sizeof(*rm), GFP_KERNEL);
	struct fixture *f = test->priv;
	unsigned int step, j;

	KUNIT_ASSERT_NOT_NULL(test, rr);
	KUNIT_ASSERT_NOT_NULL(test, rm);
	for (step = 0; step < MAXN && f->nr_recv < MAXN && f->nr_msg < MAXN; step++) {
		u32 rnd = get_random_u32();
		u64 src = rnd % 4, tag = (rnd >> 2) % 4;
		int got, want = -1;

		if (rnd & (1u << 20)) {
			u64 ignore = 0;
			int id = f->nr_recv;

			if (rnd & (1u << 21))
				src = ANY;
			if (rnd & (1u << 22))
				ignore = rand_mask(rnd >> 24);
			for (j = 0; j < f->nr_msg; j++) {
				struct ref_recv probe = { src, tag, ignore };

				if (rm[j].live && ref_accepts(&probe, rm[j].src, rm[j].tag)) {
					want = j;
					rm[j].live = false;
					break;
				}
			}
			rr[id] = (struct ref_recv){ src, tag, ignore, id, want < 0 };
			got = post(test, src, tag, ignore);
			KUNIT_ASSERT_EQ_MSG(test, got, want, "step %u post(%llx,%llx,%llx)",
					    step, src, tag, ignore);
		} else {
			int id = f->nr_msg;

			for (j = 0; j < f->nr_recv; j++) {
				if (rr[j].live && ref_accepts(&rr[j], src, tag)) {
					want = j;
					rr[j].live = false;
					break;
				}
			}
			rm[id] = (struct ref_msg){ src, tag, id, want < 0 };
			/* Half the messages look first, as an eager send does. */
			got = -1;
			if (rnd & (1u << 24)) {
				got = take(test, src, tag);
				KUNIT_ASSERT_EQ_MSG(test, got, want, "step %u take(%llx,%llx)",
						    step, src, tag);
			}
			if (got < 0)
				got = arrive(test, src, tag);
			KUNIT_ASSERT_EQ_MSG(test, got, want, "step %u arrive(%llx,%llx)",
					    step, src, tag);
		}
	}
}

#define RAND_N	2048

/*
 * Like random_against_reference(), with cancels, removals and probes
 * too, and keys enough to grow and (as it empties) shrink the tables.
 */
static void random_with_removal_against_reference(struct kunit *test)
{
	struct dmaplane_match_recv *recvs, *r;
	struct dmaplane_match_msg *msgs, *msg;
	struct dmaplane_matcher *m = &((struct fixture *)test->priv)->m;
	unsigned int nr = 0, nm = 0, step, j;
	bool *rlive, *mlive;

	recvs = kunit_kcalloc(test, RAND_N, sizeof(*recvs), GFP_KERNEL);
	msgs = kunit_kcalloc(test, RAND_N, sizeof(*msgs), GFP_KERNEL);
	rlive = kunit_kcalloc(test, RAND_N, sizeof(*rlive), GFP_KERNEL);
	mlive = kunit_kcalloc(test, RAND_N, sizeof(*mlive), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, recvs);
	KUNIT_ASSERT_NOT_NULL(test, msgs);
	KUNIT_ASSERT_NOT_NULL(test, rlive);
	KUNIT_ASSERT_NOT_NULL(test, mlive);
	for (step = 0; nr < RAND_N && nm < RAND_N; step++) {
		u32 rnd = get_random_u32();
		u64 src = rnd % 24, tag = (rnd >> 5) % 24, ignore = 0;
		unsigned int op = (rnd >> 10) % 10;
		struct ref_recv want_r = { .src = src, .tag = tag };
		int got, want = -1;

		if (op < 4) {
			if ((rnd >> 14) % 3 == 1)
				src = ANY;
			if ((rnd >> 14) % 3 == 2) {
				ignore = rand_mask(rnd >> 24);
				if (rnd & BIT(17))
					src = ANY;
			}
			want_r = (struct ref_recv){ src, tag, ignore };
			for (j = 0; j < nm; j++) {
				if (mlive[j] && ref_accepts(&want_r, msgs[j].src, msgs[j].tag)) {
					want = j;
					break;
				}
			}
			r = &recvs[nr];
			r->src = src;
			r->tag = tag;
			r->ignore = ignore;
			msg = dmaplane_match_post_recv(m, r);
			got = msg ? (int)(msg - msgs) : -1;
			KUNIT_ASSERT_EQ_MSG(test, got, want, "step %u post(%llx,%llx,%llx)",
					    step, src, tag, ignore);
			if (want >= 0)
				mlive[want] = false;
			else
				rlive[nr] = true;
			nr++;
		} else if (op < 8) {
			for (j = 0; j < nr; j++) {
				struct ref_recv rr = {
					recvs[j].src, recvs[j].tag, recvs[j].ignore,
				};

				if (rlive[j] && ref_accepts(&rr, src, tag)) {
					want = j;
					break;
				}
			}
			msg = &msgs[nm];
			msg->src = src;
			msg->tag = tag;
			r = dmaplane_match_arrive(m, msg);
			got = r ? (int)(r - recvs) : -1;
			KUNIT_ASSERT_EQ_MSG(test, got, want, "step %u arrive(%llx,%llx)",
					    step, src, tag);
			if (want >= 0)
				rlive[want] = false;
			else
				mlive[nm] = true;
			nm++;
		} else if (op == 8 && nr) {
			j = get_random_u32_below(nr);
			if (rlive[j]) {
				dmaplane_match_cancel_recv(m, &recvs[j]);
				rlive[j] = false;
			}
		} else if (nm) {
			j = get_random_u32_below(nm);
			if (!mlive[j])
				continue;
			if (rnd & BIT(20)) {
				dmaplane_match_remove_msg(m, &msgs[j]);
				mlive[j] = false;
				continue;
			}
			/* Probe and take, for the message's key, tag or anything. */
			want_r = (struct ref_recv){
				rnd & BIT(21) ? ANY : msgs[j].src, msgs[j].tag,
				rnd & BIT(22) ? ~0ULL : 0,
			};
			for (want = 0; !mlive[want] ||
			     !ref_accepts(&want_r, msgs[want].src, msgs[want].tag);)
				want++;
			msg = dmaplane_match_probe(m, want_r.src, want_r.tag,
						   want_r.ignore, true);
			KUNIT_ASSERT_PTR_EQ(test, msg, &msgs[want]);
			mlive[want] = false;
		}
	}
	/* Drain, as an endpoint does, and check what is left. */
	while ((msg = dmaplane_match_probe(m, ANY, 0, ~0ULL, true))) {
		KUNIT_ASSERT_TRUE(test, mlive[msg - msgs]);
		mlive[msg - msgs] = false;
	}
	while ((r = dmaplane_match_first_recv(m))) {
		KUNIT_ASSERT_TRUE(test, rlive[r - recvs]);
		rlive[r - recvs] = false;
		dmaplane_match_cancel_recv(m, r);
	}
	for (j = 0; j < RAND_N; j++) {
		KUNIT_EXPECT_FALSE(test, rlive[j]);
		KUNIT_EXPECT_FALSE(test, mlive[j]);
	}
	KUNIT_EXPECT_EQ(test, m->nr_recvs, 0u);
	KUNIT_EXPECT_EQ(test, m->nr_unexp, 0u);
	KUNIT_EXPECT_EQ(test, m->recv_spec.nr_keys + m->recv_tag.nr_keys, 0u);
	KUNIT_EXPECT_EQ(test, m->unexp_spec.nr_keys + m->unexp_tag.nr_keys, 0u);
	KUNIT_EXPECT_EQ(test, m->recv_src.nr_keys + m->unexp_src.nr_keys, 0u);
	KUNIT_EXPECT_EQ(test, m->recv_mask.nr_keys, 0u);
	for (j = 0; j < DMAPLANE_MATCH_MASKS; j++)
		KUNIT_EXPECT_EQ(test, m->nr_mask[j], 0u);
	KUNIT_EXPECT_TRUE(test, list_empty(&m->recv_masked));
}

/*
 * Any-source receives that ignore tag bits are hashed by (mask, the tag's
 * other bits) for DMAPLANE_MATCH_MASKS distinct masks; one more mask goes
 * on the list, and the earliest accepting receive of all wins.  A mask's
 * slot is free again once its last receive left.
 */
static void masked_receives_hashed_by_mask(struct kunit *test)
{
	struct fixture *f = test->priv;
	struct dmaplane_matcher *m = &f->m;
	int i;

	/* r0..r7: eight masks, 0x1, 0x3, ... 0xff; tag 0x100 on the rest. */
	for (i = 0; i < DMAPLANE_MATCH_MASKS; i++)
		KUNIT_EXPECT_EQ(test, post(test, ANY, 0x100, (2ULL << i) - 1), -1);
	KUNIT_EXPECT_EQ(test, m->recv_mask.nr_keys, (unsigned int)DMAPLANE_MATCH_MASKS);
	KUNIT_EXPECT_TRUE(test, list_empty(&m->recv_masked));
	/* r8: a ninth mask waits on the list; r9: a known mask, hashed. */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 0, 0x1ff), -1);
	KUNIT_EXPECT_FALSE(test, list_empty(&m->recv_masked));
	KUNIT_EXPECT_TRUE(test, f->recv[8].listed);
	KUNIT_EXPECT_EQ(test, post(test, ANY, 0x300, 0x1), -1);
	KUNIT_EXPECT_FALSE(test, f->recv[9].listed);
	/* r10: same mask and accepted bits as r0, later: the same key. */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 0x101, 0x1), -1);
	KUNIT_EXPECT_EQ(test, m->recv_mask.nr_keys, (unsigned int)DMAPLANE_MATCH_MASKS + 1);

	/* 0x1ff: r7 (mask 0xff) and the listed r8 accept it; r7 first. */
	KUNIT_EXPECT_EQ(test, arrive(test, 5, 0x1ff), 7);
	/* 0x100 and 0x101 match r0..r6, r8 and r10: the earliest each time. */
	for (i = 0; i < 7; i++)
		KUNIT_EXPECT_EQ(test, arrive(test, i, 0x100 + (i & 1)), i);
	/* The listed r8 before the later hashed r10, then r10. */
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 0x101), 8);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 0x100), 10);
	KUNIT_EXPECT_EQ(test, arrive(test, 1, 0x1ff), -1);
	KUNIT_EXPECT_EQ(test, m->nr_unexp, 1u);
	KUNIT_EXPECT_TRUE(test, list_empty(&m->recv_masked));
	/* Only r9's mask is left: the other slots are free. */
	KUNIT_EXPECT_EQ(test, m->recv_mask.nr_keys, 1u);
	for (i = 0; i < DMAPLANE_MATCH_MASKS; i++)
		KUNIT_EXPECT_EQ(test, m->nr_mask[i], m->masks[i] == 0x1 ? 1u : 0u);
	/* r11: a new mask takes a free slot (hashed, not listed). */
	KUNIT_EXPECT_EQ(test, post(test, ANY, 0x400, 0xf0f), -1);
	KUNIT_EXPECT_FALSE(test, f->recv[11].listed);
	KUNIT_EXPECT_EQ(test, arrive(test, 2, 0x301), 9);	/* r11 accepts it too */
	KUNIT_EXPECT_EQ(test, arrive(test, 2, 0x4f3), -1);	/* bits 4-7 differ */
	KUNIT_EXPECT_EQ(test, arrive(test, 2, 0x30a), 11);
	KUNIT_EXPECT_EQ(test, m->nr_recvs, 0u);
	KUNIT_EXPECT_EQ(test, m->recv_mask.nr_keys, 0u);
}

static struct kunit_case dmaplane_match_cases[] = {
	KUNIT_CASE(receives_match_in_posted_order),
	KUNIT_CASE(earlier_wildcard_beats_later_specific),
	KUNIT_CASE(earlier_specific_beats_later_wildcard),
	KUNIT_CASE(ignore_mask_selects_tag_bits),
	KUNIT_CASE(unexpected_messages_taken_in_arrival_order),
	KUNIT_CASE(one_source_never_overtakes),
	KUNIT_CASE(take_recv_queues_nothing),
	KUNIT_CASE(probe_peeks_or_takes),
	KUNIT_CASE(cancel_withdraws_receive),
	KUNIT_CASE(colliding_keys_stay_apart),
	KUNIT_CASE(random_against_reference),
	KUNIT_CASE(ordering_across_three_kinds),
	KUNIT_CASE(any_source_takes_unexpected_in_arrival_order),
	KUNIT_CASE(any_tag_receives_keyed_by_source),
	KUNIT_CASE(removal_from_every_structure),
	KUNIT_CASE(growth_to_100000_random_order),
	KUNIT_CASE(init_allocation_failures),
	KUNIT_CASE(growth_failure_keeps_table),
	KUNIT_CASE(random_with_removal_against_reference),
	KUNIT_CASE(masked_receives_hashed_by_mask),
	{}
};

static struct kunit_suite dmaplane_match_suite = {
	.name = "dmaplane_match",
	.init = match_init,
	.exit = match_exit,
	.test_cases = dmaplane_match_cases,
};

kunit_test_suites(&dmaplane_match_suite);

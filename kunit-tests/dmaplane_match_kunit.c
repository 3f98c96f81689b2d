// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for dmaplane tag matching: MPI ordering rules, wildcards,
 * ignore masks, unexpected messages, probe and cancel, and a randomised
 * comparison against a straightforward reference matcher.
 */
#include <kunit/test.h>
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

/*
 * Reference matcher: the rules of the file comment applied literally, by
 * scanning everything in order.
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
				ignore = (rnd & (1u << 23)) ? ~0ULL : 1;
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
			got = arrive(test, src, tag);
			KUNIT_ASSERT_EQ_MSG(test, got, want, "step %u arrive(%llx,%llx)",
					    step, src, tag);
		}
	}
}

static struct kunit_case dmaplane_match_cases[] = {
	KUNIT_CASE(receives_match_in_posted_order),
	KUNIT_CASE(earlier_wildcard_beats_later_specific),
	KUNIT_CASE(earlier_specific_beats_later_wildcard),
	KUNIT_CASE(ignore_mask_selects_tag_bits),
	KUNIT_CASE(unexpected_messages_taken_in_arrival_order),
	KUNIT_CASE(one_source_never_overtakes),
	KUNIT_CASE(probe_peeks_or_takes),
	KUNIT_CASE(cancel_withdraws_receive),
	KUNIT_CASE(colliding_keys_stay_apart),
	KUNIT_CASE(random_against_reference),
	{}
};

static struct kunit_suite dmaplane_match_suite = {
	.name = "dmaplane_match",
	.init = match_init,
	.exit = match_exit,
	.test_cases = dmaplane_match_cases,
};

kunit_test_suites(&dmaplane_match_suite);

// SPDX-License-Identifier: GPL-2.0
/*
 * Region-relative buffers (DMAPLANE_OP_F_REGION, dp_prep_set_region()) on
 * one node: SEND, RECV, PUT and GET whose local buffer is a range of one
 * of the caller's regions -- an arena, registered memory, an imported
 * dma-buf -- instead of a user address, through every path a message
 * takes (eager and rendezvous, posted and unexpected, truncated), the
 * bad requests, and the region's lifetime while an operation holds it.
 */
#include <stddef.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "dp_test.h"

#define EAGER	16384		/* the module's default eager_threshold */
#define AREA	(4u << 20)	/* each region */

enum kind { USER, ARENA, MR, IMPORT };

static const char *const kind_name[] = { "user", "arena", "mr", "import" };

/*
 * a sends to b.  Each side has a user buffer, an arena, registered memory
 * and a dma-buf import (of a slice of its own arena's twin, exported).
 */
FIXTURE(rb) {
	struct dp_ep *a, *b;
	uint32_t a2b;
	struct side {
		struct dp_ep *ep;
		char *user;
		struct dp_arena *arena, *exp;	/* exp: exported, then imported */
		char *mrbuf;
		struct dp_mr *mr, *imp;
		int fd;
	} s[2];
	struct dp_test_mem base;
};

static void side_open(struct __test_metadata *_metadata, struct side *s, struct dp_ep *ep)
{
	s->ep = ep;
	s->user = malloc(AREA);
	ASSERT_NE(NULL, s->user);
	ASSERT_EQ(0, dp_arena_create(ep, AREA, 0, DMAPLANE_NUMA_ANY, DMAPLANE_ACCESS_ALL,
				     &s->arena));
	s->mrbuf = mmap(NULL, AREA, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, s->mrbuf);
	memset(s->mrbuf, 0, AREA);
	ASSERT_EQ(0, dp_mr_reg(ep, s->mrbuf, AREA, DMAPLANE_ACCESS_ALL, &s->mr));
	ASSERT_EQ(0, dp_arena_create(ep, AREA, 0, DMAPLANE_NUMA_ANY, DMAPLANE_ACCESS_ALL,
				     &s->exp));
	s->fd = dp_dmabuf_export(s->exp, 0, AREA, 0);
	ASSERT_LE(0, s->fd);
	ASSERT_EQ(0, dp_mr_import_dmabuf(ep, s->fd, 0, AREA, DMAPLANE_ACCESS_ALL, &s->imp));
}

static void side_close(struct side *s)
{
	if (s->imp)
		dp_mr_dereg(s->imp);
	if (s->fd > 0)
		close(s->fd);
	if (s->exp)
		dp_arena_destroy(s->exp);
	if (s->mr)
		dp_mr_dereg(s->mr);
	if (s->mrbuf && s->mrbuf != MAP_FAILED)
		munmap(s->mrbuf, AREA);
	if (s->arena)
		dp_arena_destroy(s->arena);
	free(s->user);
}

FIXTURE_SETUP(rb)
{
	struct dmaplane_info info;

	dp_test_mem_read(&self->base);
	self->a = dp_test_ep_new(0, 0);
	self->b = dp_test_ep_new(0, 0);
	ASSERT_NE(NULL, self->a);
	ASSERT_NE(NULL, self->b);
	ASSERT_EQ(0, dp_info(self->a, &info));
	ASSERT_TRUE(info.caps & DMAPLANE_CAP_REGION_BUF);
	ASSERT_EQ(0, dp_test_connect(self->a, self->b, &self->a2b));
	side_open(_metadata, &self->s[0], self->a);
	side_open(_metadata, &self->s[1], self->b);
}

FIXTURE_TEARDOWN(rb)
{
	struct dp_test_mem now;

	side_close(&self->s[0]);
	side_close(&self->s[1]);
	dp_close(self->a);
	dp_close(self->b);
	/* Every region, arena and import is gone once both endpoints are. */
	dp_test_mem_read(&now);
	EXPECT_EQ(self->base.regions, now.regions);
	EXPECT_EQ(self->base.arenas, now.arenas);
	EXPECT_EQ(self->base.imports, now.imports);
	EXPECT_EQ(self->base.dmabufs, now.dmabufs);
}

/* The CPU's view of byte @off of a side's buffer of @k. */
static char *view(struct side *s, enum kind k, uint64_t off)
{
	switch (k) {
	case USER:
		return s->user + off;
	case ARENA:
		return (char *)dp_arena_ptr(s->arena) + off;
	case MR:
		return s->mrbuf + off;
	default:
		return (char *)dp_arena_ptr(s->exp) + off;	/* what was imported */
	}
}

static uint32_t handle(struct side *s, enum kind k)
{
	switch (k) {
	case ARENA:
		return dp_arena_handle(s->arena);
	case MR:
		return dp_mr_handle(s->mr);
	case IMPORT:
		return dp_mr_handle(s->imp);
	default:
		return 0;
	}
}

/* Point @op at @len bytes from @off of a side's buffer of kind @k. */
static void place(struct dmaplane_op *op, struct side *s, enum kind k, uint64_t off)
{
	if (k == USER)
		return;
	op->addr = off;
	dp_prep_set_region(op, handle(s, k));
}

/* One completion of @ep within 10 s, or a zeroed one with status 1. */
static struct dmaplane_cqe one(struct dp_ep *ep)
{
	struct dmaplane_cqe c;

	if (dp_wait(ep, &c, 1, 10000) != 1) {
		memset(&c, 0, sizeof(c));
		c.status = 1;
	}
	return c;
}

/*
 * A message of @len bytes from a's buffer of kind @sk (at offset 8) into
 * b's of kind @rk (at offset 24, @room bytes), the receive posted first
 * or not (@unexpected): exact completions, the bytes that arrived and
 * none beyond them.
 */
static void message(struct __test_metadata *_metadata, FIXTURE_DATA(rb) *self,
		    enum kind sk, enum kind rk, uint64_t len, uint64_t room, int unexpected)
{
	uint64_t seed = len * 16 + sk * 4 + rk + unexpected * 1000;
	struct side *sa = &self->s[0], *sb = &self->s[1];
	uint64_t n = len < room ? len : room;
	struct dmaplane_op s, r;
	struct dmaplane_cqe cs, cr;
	char *dst = view(sb, rk, 24);

	dp_test_fill(view(sa, sk, 8), len, seed);
	memset(dst - 24, 0x5a, room + 48);
	dp_prep_send(&s, self->a2b, 77, view(sa, sk, 8), len, 1);
	place(&s, sa, sk, 8);
	dp_prep_recv(&r, DP_ANY_SRC, 77, 0, dst, room, 2);
	place(&r, sb, rk, 24);
	if (unexpected) {
		ASSERT_EQ(1, dp_submit(self->a, &s, 1));
		if (len <= EAGER) {	/* an eager send completes at once */
			cs = one(self->a);
			EXPECT_EQ(0, cs.status);
		}
		ASSERT_EQ(1, dp_submit(self->b, &r, 1));
	} else {
		ASSERT_EQ(1, dp_submit(self->b, &r, 1));
		ASSERT_EQ(1, dp_submit(self->a, &s, 1));
	}
	if (!unexpected || len > EAGER) {
		cs = one(self->a);
		EXPECT_EQ(0, cs.status);
	}
	EXPECT_EQ(1, cs.ctx);
	EXPECT_EQ(len, cs.len);
	cr = one(self->b);
	EXPECT_EQ(2, cr.ctx);
	EXPECT_EQ(DMAPLANE_OP_RECV, cr.opcode);
	EXPECT_EQ(len > room ? -EMSGSIZE : 0, cr.status);
	EXPECT_EQ(n, cr.len);
	EXPECT_EQ(len, cr.msg_len);
	EXPECT_EQ(77, cr.tag);
	EXPECT_EQ(-1, dp_test_check(dst, n, seed))
		TH_LOG("%s -> %s, %llu bytes into %llu, %s", kind_name[sk], kind_name[rk],
		       (unsigned long long)len, (unsigned long long)room,
		       unexpected ? "unexpected" : "posted");
	for (int i = 1; i <= 24; i++)
		EXPECT_EQ(0x5a, (unsigned char)dst[-i]);
	/* Nothing written past the message (or the receive's room). */
	uint64_t past = n;

	while (past < room + 24 && (unsigned char)dst[past] == 0x5a)
		past++;
	EXPECT_EQ(room + 24, past);
}

static const uint64_t sizes[] = { 0, 100, EAGER + 1, (1u << 20) + 3 };

static void every_size(struct __test_metadata *_metadata, FIXTURE_DATA(rb) *self,
		       enum kind sk, enum kind rk)
{
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		message(_metadata, self, sk, rk, sizes[i], sizes[i], 0);
		message(_metadata, self, sk, rk, sizes[i], sizes[i], 1);
	}
	/* Truncated: the first bytes arrive, the receive says -EMSGSIZE. */
	message(_metadata, self, sk, rk, EAGER * 2, 1000, 0);
	message(_metadata, self, sk, rk, EAGER * 2, EAGER + 5, 1);
}

TEST_F(rb, arena_to_user)	{ every_size(_metadata, self, ARENA, USER); }
TEST_F(rb, user_to_arena)	{ every_size(_metadata, self, USER, ARENA); }
TEST_F(rb, arena_to_mr)		{ every_size(_metadata, self, ARENA, MR); }
TEST_F(rb, mr_to_import)	{ every_size(_metadata, self, MR, IMPORT); }
TEST_F(rb, import_to_user)	{ every_size(_metadata, self, IMPORT, USER); }
TEST_F(rb, import_to_arena)	{ every_size(_metadata, self, IMPORT, ARENA); }

/* PUT and GET whose local side is a region of every kind. */
TEST_F(rb, put_get_from_and_into_regions)
{
	struct side *sa = &self->s[0], *sb = &self->s[1];
	const uint64_t len = (1u << 20) + 5;

	for (enum kind k = ARENA; k <= IMPORT; k++) {
		struct dmaplane_op op;
		struct dmaplane_cqe c;

		dp_test_fill(view(sa, k, 16), len, 40 + k);
		memset(sb->mrbuf, 0, AREA);
		dp_prep_put(&op, self->a2b, dp_mr_key(sb->mr), 64, view(sa, k, 16), len, 3);
		place(&op, sa, k, 16);
		ASSERT_EQ(1, dp_submit(self->a, &op, 1));
		c = one(self->a);
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(3, c.ctx);
		EXPECT_EQ(len, c.len);
		EXPECT_EQ(-1, dp_test_check(sb->mrbuf + 64, len, 40 + k))
			TH_LOG("local %s", kind_name[k]);

		/* Back, from b's arena into a different offset of the region. */
		dp_test_fill(dp_arena_ptr(sb->arena), len, 50 + k);
		dp_prep_get(&op, self->a2b, dp_arena_key(sb->arena), 0, view(sa, k, 4096),
			    len, 4);
		place(&op, sa, k, 4096);
		ASSERT_EQ(1, dp_submit(self->a, &op, 1));
		c = one(self->a);
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(4, c.ctx);
		EXPECT_EQ(-1, dp_test_check(view(sa, k, 4096), len, 50 + k))
			TH_LOG("local %s", kind_name[k]);
	}
}

/* Submit one operation; its -errno (or the number accepted). */
static int submit1(struct dp_ep *ep, struct dmaplane_op *op)
{
	return dp_submit(ep, op, 1);
}

TEST_F(rb, bad_region_requests)
{
	struct side *sa = &self->s[0], *sb = &self->s[1];
	uint32_t h = dp_arena_handle(sa->arena);
	struct dmaplane_op op;
	struct iovec iov = { sa->user, 8 };
	struct dp_mr *ro;
	uint32_t b2a;

	/* With F_IOV: which would the address be? */
	dp_prep_send(&op, self->a2b, 1, &iov, 1, 0);
	dp_prep_set_flags(&op, DMAPLANE_OP_F_IOV);
	dp_prep_set_region(&op, h);
	EXPECT_EQ(-EINVAL, submit1(self->a, &op));
	/* A handle nothing has, and one of another endpoint's regions. */
	dp_prep_send(&op, self->a2b, 1, NULL, 8, 0);
	dp_prep_set_region(&op, 0x7fffffff);
	EXPECT_EQ(-ENOENT, submit1(self->a, &op));
	dp_prep_set_region(&op, dp_arena_handle(sb->arena));
	if (dp_arena_handle(sb->arena) != h &&
	    dp_arena_handle(sb->arena) != dp_mr_handle(sa->mr) &&
	    dp_arena_handle(sb->arena) != dp_mr_handle(sa->imp) &&
	    dp_arena_handle(sb->arena) != dp_arena_handle(sa->exp))
		EXPECT_EQ(-ENOENT, submit1(self->a, &op));
	/* Ranges outside the region, one wrapping around. */
	dp_prep_send(&op, self->a2b, 1, (void *)(uintptr_t)(AREA - 7), 8, 0);
	dp_prep_set_region(&op, h);
	EXPECT_EQ(-ERANGE, submit1(self->a, &op));
	dp_prep_send(&op, self->a2b, 1, (void *)(uintptr_t)~0ull, 2, 0);
	dp_prep_set_region(&op, h);
	EXPECT_EQ(-ERANGE, submit1(self->a, &op));
	dp_prep_get(&op, self->a2b, dp_mr_key(sb->mr), 0, (void *)(uintptr_t)AREA, 1, 0);
	dp_prep_set_region(&op, h);
	EXPECT_EQ(-ERANGE, submit1(self->a, &op));
	/* The whole region, and nothing at its end, are fine. */
	dp_prep_recv(&op, DP_ANY_SRC, 9, 0, NULL, AREA, 0);
	dp_prep_set_region(&op, dp_arena_handle(sb->arena));
	EXPECT_EQ(1, submit1(self->b, &op));
	EXPECT_EQ(0, dp_cancel(self->b, 0));
	EXPECT_EQ(-ECANCELED, one(self->b).status);
	dp_prep_send(&op, self->a2b, 9, (void *)(uintptr_t)AREA, 0, 0);
	dp_prep_set_region(&op, h);
	EXPECT_EQ(1, submit1(self->a, &op));
	EXPECT_EQ(0, one(self->a).status);
	dp_prep_recv(&op, DP_ANY_SRC, 9, 0, NULL, 0, 0);
	EXPECT_EQ(1, submit1(self->b, &op));
	EXPECT_EQ(0, one(self->b).status);

	/* Without local write access: sent from, never written into. */
	ASSERT_EQ(0, dp_mr_reg(self->b, sb->user, 4096, DMAPLANE_ACCESS_REMOTE_READ, &ro));
	dp_prep_recv(&op, DP_ANY_SRC, 1, 0, NULL, 64, 0);
	dp_prep_set_region(&op, dp_mr_handle(ro));
	EXPECT_EQ(-EACCES, submit1(self->b, &op));
	ASSERT_EQ(0, dp_test_connect(self->b, self->a, &b2a));
	dp_prep_get(&op, b2a, dp_arena_key(sa->arena), 0, NULL, 64, 0);
	dp_prep_set_region(&op, dp_mr_handle(ro));
	EXPECT_EQ(-EACCES, submit1(self->b, &op));
	ASSERT_EQ(0, dp_mr_dereg(ro));
	/* A region handle without the flag. */
	dp_prep_send(&op, self->a2b, 1, sa->user, 8, 0);
	op.region = h;
	EXPECT_EQ(-EINVAL, submit1(self->a, &op));
}

/*
 * The operation holds the region: an unexpected rendezvous message from
 * an arena that its owner destroys (and an import deregistered) before
 * the receive still delivers the bytes; then the counts return.
 */
TEST_F(rb, region_outlives_its_handle_while_used)
{
	struct side *sa = &self->s[0];
	const uint64_t len = 256 * 1024;
	struct dmaplane_op op;
	struct dmaplane_cqe c;
	char *copy = malloc(len);
	long regions;

	ASSERT_NE(NULL, copy);
	dp_test_fill(dp_arena_ptr(sa->arena), len, 99);
	memcpy(copy, dp_arena_ptr(sa->arena), len);
	dp_prep_send(&op, self->a2b, 5, NULL, len, 7);
	dp_prep_set_region(&op, dp_arena_handle(sa->arena));
	ASSERT_EQ(1, submit1(self->a, &op));
	regions = dp_test_stat("regions");
	ASSERT_EQ(0, dp_arena_destroy(sa->arena));
	sa->arena = NULL;
	/* Unpublished, still referenced by the queued message. */
	EXPECT_EQ(regions, dp_test_stat("regions"));
	memset(self->s[1].user, 0, len);
	ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 5, 0, self->s[1].user, len, 8));
	c = one(self->b);
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(len, c.len);
	EXPECT_EQ(0, memcmp(copy, self->s[1].user, len));
	c = one(self->a);
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(7, c.ctx);
	EXPECT_EQ(regions - 1, dp_test_stat("regions"));
	free(copy);
}

TEST_HARNESS_MAIN

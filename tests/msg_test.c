// SPDX-License-Identifier: GPL-2.0
/*
 * Two-sided messaging on one node: endpoint setup, names and address
 * handles, isolation, tag-matched send/recv (expected, eager unexpected,
 * rendezvous), truncation, ordering, wildcards, flow control, the ring,
 * and what happens when a process dies.
 */
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "dp_test.h"

#define EAGER 16384	/* the module's default eager_threshold */

/* Wait for exactly one completion. */
static int wait1(struct dp_ep *ep, struct dmaplane_cqe *cqe)
{
	return dp_wait(ep, cqe, 1, 10000);
}

FIXTURE(pair) {
	struct dp_ep *a, *b;	/* a sends to b */
	uint32_t a2b, b2a;
};

FIXTURE_SETUP(pair)
{
	self->a = dp_test_ep_new(0, 0);
	self->b = dp_test_ep_new(0, 0);
	ASSERT_NE(NULL, self->a);
	ASSERT_NE(NULL, self->b);
	ASSERT_EQ(0, dp_test_connect(self->a, self->b, &self->a2b));
	ASSERT_EQ(0, dp_test_connect(self->b, self->a, &self->b2a));
}

FIXTURE_TEARDOWN(pair)
{
	dp_close(self->a);
	dp_close(self->b);
	EXPECT_EQ(0, dp_test_stat("posted_recvs"));
	EXPECT_EQ(0, dp_test_stat("unexp_msgs"));
}

static const uint64_t sizes[] = {
	0, 1, 4095, 4096, EAGER - 1, EAGER, EAGER + 1, 100000, 1 << 20,
};

/* One message of @len, receive posted before (@expected) or after. */
static void one_message(struct __test_metadata *_metadata,
			FIXTURE_DATA(pair) *self, uint64_t len, int expected)
{
	char *src = malloc(len + 1), *dst = malloc(len + 64);
	struct dmaplane_cqe c[2];
	uint64_t tag = 0xfeedface00000000ull | len;
	int n = 0, got;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	dp_test_fill(src, len, len + expected);
	memset(dst, 0x5a, len + 64);

	if (expected)
		ASSERT_EQ(0, dp_recv(self->b, self->b2a, tag, 0, dst, len, 7));
	ASSERT_EQ(0, dp_send(self->a, self->a2b, tag, src, len, 9));
	if (!expected) {
		/* Eager sends complete at once; rendezvous wait. */
		got = dp_poll(self->a, c, 1);
		EXPECT_EQ(len <= EAGER ? 1 : 0, got);
		n += got;
		ASSERT_EQ(0, dp_recv(self->b, self->b2a, tag, 0, dst, len, 7));
	} else {
		/* Asynchronous progress: done before b makes a system call. */
		EXPECT_EQ(1, dp_poll(self->b, &c[1], 1));
		goto check_recv;
	}
	ASSERT_EQ(1, wait1(self->b, &c[1]));
check_recv:
	EXPECT_EQ(7, c[1].ctx);
	EXPECT_EQ(0, c[1].status);
	EXPECT_EQ(DMAPLANE_OP_RECV, c[1].opcode);
	EXPECT_EQ(len, c[1].len);
	EXPECT_EQ(len, c[1].msg_len);
	EXPECT_EQ(tag, c[1].tag);
	EXPECT_EQ(dp_test_uid(self->a), c[1].src);
	EXPECT_EQ(0, memcmp(src, dst, len));
	for (int i = 0; i < 64; i++)
		ASSERT_EQ(0x5a, (unsigned char)dst[len + i]);

	if (!n)
		ASSERT_EQ(1, wait1(self->a, &c[0]));
	EXPECT_EQ(9, c[0].ctx);
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(DMAPLANE_OP_SEND, c[0].opcode);
	EXPECT_EQ(len, c[0].len);
	EXPECT_EQ(tag, c[0].tag);
	EXPECT_EQ(0, dp_poll(self->a, c, 2));
	EXPECT_EQ(0, dp_poll(self->b, c, 2));
	free(src);
	free(dst);
}

TEST_F(pair, expected_messages_all_sizes)
{
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		one_message(_metadata, self, sizes[i], 1);
}

TEST_F(pair, unexpected_messages_all_sizes)
{
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		one_message(_metadata, self, sizes[i], 0);
}

#define HUGE_SZ	(2UL << 20)
#define THP_MAP	(3 * HUGE_SZ)

/*
 * 6 MiB, 2 MiB aligned: transparent huge pages in the first 4 MiB (when
 * the kernel has them), 4 KiB pages in the last 2 MiB.  The mapping
 * (with its alignment slack) goes to @map, @maplen.
 */
static char *map_thp_then_small(void **map, size_t *maplen)
{
	size_t len = THP_MAP + HUGE_SZ;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0), *a;

	if (p == MAP_FAILED)
		return NULL;
	*map = p;
	*maplen = len;
	a = (char *)(((uintptr_t)p + HUGE_SZ - 1) & ~(HUGE_SZ - 1));
	madvise(a, 2 * HUGE_SZ, MADV_HUGEPAGE);
	madvise(a + 2 * HUGE_SZ, HUGE_SZ, MADV_NOHUGEPAGE);
	memset(a, 0x5a, THP_MAP);
	return a;
}

/* The first byte in [@from, @to) of @p that is not 0x5a, or @to. */
static size_t untouched(const char *p, size_t from, size_t to)
{
	while (from < to && (unsigned char)p[from] == 0x5a)
		from++;
	return from;
}

/*
 * Rendezvous messages between buffers backed by huge pages, at offsets
 * that are not page aligned and differ between sender and receiver,
 * across a 2 MiB boundary and across the end of a huge page into small
 * ones: the remote copy takes a run of a folio's pages at a time, in
 * both directions (a posted receive is written by the sender's call, an
 * unexpected message is read by the receiver's).
 */
TEST_F(pair, huge_page_buffers_at_odd_offsets)
{
	static const struct { size_t soff, doff, len; } cases[] = {
		{ 4096 * 3 + 123, 77, 3 << 20 },		/* across 2 MiB */
		{ HUGE_SZ - 1, HUGE_SZ + 4095, HUGE_SZ + 2 },	/* huge -> small */
		{ 2 * HUGE_SZ - 12345, 5, HUGE_SZ },		/* sender: huge -> small */
		{ 1, HUGE_SZ / 2 + 3, THP_MAP - HUGE_SZ / 2 - 128 },
		{ HUGE_SZ - 100, HUGE_SZ - 100, 200 + EAGER },	/* 1 page each side */
	};
	void *smap, *dmap;
	size_t slen, dlen;
	char *src = map_thp_then_small(&smap, &slen);
	char *dst = map_thp_then_small(&dmap, &dlen);

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	TH_LOG("AnonHugePages of the buffers' mappings: %ld and %ld kB",
	       dp_test_smaps_kb(src, "AnonHugePages:"), dp_test_smaps_kb(dst, "AnonHugePages:"));
	for (unsigned int i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (int expected = 0; expected < 2; expected++) {
			size_t soff = cases[i].soff, doff = cases[i].doff;
			size_t len = cases[i].len;
			uint64_t seed = 1000 + 2 * i + expected;
			struct dmaplane_cqe c;

			ASSERT_LE(soff + len, THP_MAP);
			ASSERT_LE(doff + len + 64, THP_MAP);
			dp_test_fill(src + soff, len, seed);
			memset(dst, 0x5a, THP_MAP);
			if (expected)
				ASSERT_EQ(0, dp_recv(self->b, self->b2a, i, 0,
						     dst + doff, len, 7));
			ASSERT_EQ(0, dp_send(self->a, self->a2b, i, src + soff,
					     len, 9));
			if (!expected)
				ASSERT_EQ(0, dp_recv(self->b, self->b2a, i, 0,
						     dst + doff, len, 7));
			ASSERT_EQ(1, wait1(self->b, &c));
			EXPECT_EQ(0, c.status);
			EXPECT_EQ(len, c.len);
			ASSERT_EQ(1, wait1(self->a, &c));
			EXPECT_EQ(0, c.status);
			EXPECT_EQ(-1, dp_test_check(dst + doff, len, seed))
				TH_LOG("case %u, %s", i, expected ? "expected" : "unexpected");
			EXPECT_EQ(doff, untouched(dst, 0, doff));
			EXPECT_EQ(THP_MAP, untouched(dst, doff + len, THP_MAP));
		}
	}
	munmap(smap, slen);
	munmap(dmap, dlen);
}

static void truncated(struct __test_metadata *_metadata,
		      FIXTURE_DATA(pair) *self, uint64_t len, uint64_t room,
		      int expected)
{
	char *src = malloc(len), *dst = malloc(room + 64);
	struct dmaplane_cqe c;

	dp_test_fill(src, len, 99);
	memset(dst, 0x33, room + 64);
	if (expected)
		ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 1, 0, dst, room, 1));
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 1, src, len, 2));
	if (!expected)
		ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 1, 0, dst, room, 1));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(-EMSGSIZE, c.status);
	EXPECT_EQ(room, c.len);
	EXPECT_EQ(len, c.msg_len);
	EXPECT_EQ(0, memcmp(src, dst, room));
	for (int i = 0; i < 64; i++) {
		ASSERT_EQ(0x33, (unsigned char)dst[room + i]) TH_LOG("overrun at %d", i);
	}
	ASSERT_EQ(1, wait1(self->a, &c));
	EXPECT_EQ(0, c.status);
	free(src);
	free(dst);
}

TEST_F(pair, truncation_is_reported_never_overruns)
{
	truncated(_metadata, self, 1000, 600, 1);
	truncated(_metadata, self, 1000, 600, 0);
	truncated(_metadata, self, 200000, 70000, 1);
	truncated(_metadata, self, 200000, 70000, 0);
	truncated(_metadata, self, 5, 0, 0);
}

TEST_F(pair, one_sender_never_overtakes_eager_and_rendezvous)
{
	enum { N = 40 };
	static char bufs[N][EAGER * 3];
	static char out[N][EAGER * 3];
	struct dmaplane_cqe c[N];
	uint64_t len[N];
	int got = 0;

	for (int i = 0; i < N; i++) {
		len[i] = (i % 3 == 0) ? EAGER * 2 + i : 100 + i;	/* mixed */
		dp_test_fill(bufs[i], len[i], i);
		bufs[i][0] = i;
		ASSERT_EQ(0, dp_send(self->a, self->a2b, i % 4, bufs[i], len[i], i));
	}
	/* Any tag from a: must come in send order. */
	for (int i = 0; i < N; i++)
		ASSERT_EQ(0, dp_recv(self->b, self->b2a, 0, ~0ull, out[i],
				     sizeof(out[i]), 1000 + i));
	while (got < N) {
		int n = dp_wait(self->b, c + got, N - got, 10000);

		ASSERT_LT(0, n);
		got += n;
	}
	for (int i = 0; i < N; i++) {
		EXPECT_EQ(1000 + i, c[i].ctx);
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(len[i], c[i].len);
		EXPECT_EQ(i % 4, c[i].tag);
		EXPECT_EQ(0, memcmp(bufs[i], out[i], len[i])) TH_LOG("message %d", i);
	}
	got = 0;
	while (got < N) {
		int n = dp_wait(self->a, c + got, N - got, 10000);

		ASSERT_LT(0, n);
		got += n;
	}
}

TEST_F(pair, wildcards_ignore_masks_and_posted_order)
{
	struct dp_ep *c3 = dp_test_ep_new(0, 0);
	uint32_t c2b;
	char r[4][8], s[8] = "msg";
	struct dmaplane_cqe c[4];
	int n = 0;

	ASSERT_NE(NULL, c3);
	ASSERT_EQ(0, dp_test_connect(c3, self->b, &c2b));
	/* r0: from a, tags 0x100..0x1ff; r1: anyone, tag 5; r2: anyone, any tag. */
	ASSERT_EQ(0, dp_recv(self->b, self->b2a, 0x100, 0xff, r[0], 8, 0));
	ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 5, 0, r[1], 8, 1));
	ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 0, ~0ull, r[2], 8, 2));
	ASSERT_EQ(0, dp_send(c3, c2b, 0x1ab, s, 4, 0));		/* not from a: r2 */
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 5, s, 4, 0));	/* r1 */
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 0x1ab, s, 4, 0));	/* r0 */
	while (n < 3) {
		int k = dp_wait(self->b, c + n, 3 - n, 10000);

		ASSERT_LT(0, k);
		n += k;
	}
	EXPECT_EQ(2, c[0].ctx);
	EXPECT_EQ(dp_test_uid(c3), c[0].src);
	EXPECT_EQ(0x1ab, c[0].tag);
	EXPECT_EQ(1, c[1].ctx);
	EXPECT_EQ(0, c[2].ctx);
	EXPECT_EQ(0x1ab, c[2].tag);
	EXPECT_EQ(dp_test_uid(self->a), c[2].src);
	dp_close(c3);
}

TEST_F(pair, unexpected_flood_backs_off_and_loses_nothing)
{
	static char buf[EAGER];
	struct dmaplane_cqe c;
	int sent = 0, ret;
	uint64_t base = dp_test_stat("unexp_msgs");

	/* 4 MiB default budget: about 256 eager messages of 16 KiB. */
	for (;;) {
		buf[0] = sent;
		ret = dp_send(self->a, self->a2b, sent, buf, sizeof(buf), sent);
		if (ret)
			break;
		sent++;
		ASSERT_EQ(1, dp_poll(self->a, &c, 1));
		ASSERT_LT(sent, 100000);
	}
	EXPECT_EQ(-EAGAIN, ret);
	EXPECT_LE(200, sent);
	EXPECT_EQ(base + sent, dp_test_stat("unexp_msgs"));
	for (int i = 0; i < sent; i++) {
		ASSERT_EQ(0, dp_recv(self->b, self->b2a, i, 0, buf, sizeof(buf), i));
		ASSERT_EQ(1, wait1(self->b, &c));
		ASSERT_EQ(0, c.status);
		ASSERT_EQ((char)i, buf[0]);
	}
	/* Room again. */
	EXPECT_EQ(0, dp_send(self->a, self->a2b, 1, buf, sizeof(buf), 1));
	ASSERT_EQ(1, dp_poll(self->a, &c, 1));
	ASSERT_EQ(0, dp_recv(self->b, self->b2a, 1, 0, buf, sizeof(buf), 1));
	ASSERT_EQ(1, wait1(self->b, &c));
}

TEST(ring_full_refuses_new_operations)
{
	struct dp_ep *ep = dp_test_ep_new(0, 8);
	struct dmaplane_cqe c[8];
	char buf[8];
	uint32_t self_addr;

	ASSERT_NE(NULL, ep);
	ASSERT_EQ(0, dp_test_connect(ep, ep, &self_addr));
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(0, dp_recv(ep, DP_ANY_SRC, 1, 0, buf, 8, i));
	EXPECT_EQ(-EAGAIN, dp_recv(ep, DP_ANY_SRC, 1, 0, buf, 8, 8));
	EXPECT_EQ(-EAGAIN, dp_send(ep, self_addr, 1, buf, 8, 8));
	dp_close(ep);

	/* Completions not consumed also hold slots. */
	ep = dp_test_ep_new(0, 8);
	ASSERT_NE(NULL, ep);
	ASSERT_EQ(0, dp_test_connect(ep, ep, &self_addr));
	for (int i = 0; i < 4; i++) {
		ASSERT_EQ(0, dp_recv(ep, DP_ANY_SRC, 1, 0, buf, 8, i));
		ASSERT_EQ(0, dp_send(ep, self_addr, 1, buf, 8, i));
	}
	EXPECT_EQ(-EAGAIN, dp_recv(ep, DP_ANY_SRC, 1, 0, buf, 8, 8));
	EXPECT_EQ(8, dp_poll(ep, c, 8));
	EXPECT_EQ(0, dp_recv(ep, DP_ANY_SRC, 1, 0, buf, 8, 8));
	dp_close(ep);
}

TEST_F(pair, batch_submit)
{
	struct dmaplane_op ops[64];
	char in[64][32], out[64][32];
	struct dmaplane_cqe c[64];
	int n = 0;

	for (int i = 0; i < 64; i++) {
		memset(&ops[i], 0, sizeof(ops[i]));
		ops[i].opcode = DMAPLANE_OP_RECV;
		ops[i].peer = self->b2a;
		ops[i].tag = i;
		ops[i].addr = (uintptr_t)in[i];
		ops[i].len = 32;
		ops[i].ctx = i;
	}
	ASSERT_EQ(64, dp_submit(self->b, ops, 64));
	for (int i = 0; i < 64; i++) {
		snprintf(out[i], 32, "message %d", i);
		ops[i].opcode = DMAPLANE_OP_SEND;
		ops[i].peer = self->a2b;
		ops[i].tag = 63 - i;
		ops[i].addr = (uintptr_t)out[i];
	}
	ASSERT_EQ(64, dp_submit(self->a, ops, 64));
	while (n < 64) {
		int k = dp_wait(self->b, c + n, 64 - n, 10000);

		ASSERT_LT(0, k);
		n += k;
	}
	for (int i = 0; i < 64; i++)
		EXPECT_STREQ(out[63 - i], in[i]);
	EXPECT_EQ(64, dp_poll(self->a, c, 64));
}

TEST_F(pair, bad_operations_rejected)
{
	struct dmaplane_op op, two[2];
	struct dmaplane_submit sub;
	struct dmaplane_cqe c[4];
	int fd = dp_fd(self->a);
	struct iovec iov[2];
	char buf[8];
	void *hole;

	memset(&op, 0, sizeof(op));
	op.opcode = DMAPLANE_OP_SEND;
	op.peer = self->a2b;
	op.addr = (uintptr_t)buf;
	op.len = 8;
#define SUBMIT_ERR(err, field, val) do {				\
		struct dmaplane_op o = op;				\
		o.field = val;						\
		EXPECT_EQ(err, dp_submit(self->a, &o, 1)) TH_LOG(#field); \
	} while (0)
	SUBMIT_ERR(-EINVAL, opcode, 0);
	SUBMIT_ERR(-EINVAL, opcode, 99);
	SUBMIT_ERR(-EINVAL, flags, 1);
	SUBMIT_ERR(-EINVAL, pad0[1], 1);
	SUBMIT_ERR(-EINVAL, region, 1);		/* a region without F_REGION */
	SUBMIT_ERR(-EINVAL, rkey, 1);		/* no rkey on a send */
	SUBMIT_ERR(-EINVAL, roffset, 1);
	SUBMIT_ERR(-EINVAL, ignore, 1);		/* no ignore mask on a send */
	SUBMIT_ERR(-ENOENT, peer, 12345);
	SUBMIT_ERR(-EMSGSIZE, len, 1ull << 40);
	SUBMIT_ERR(-EFAULT, addr, 0xffffffff81000000ull);
	EXPECT_EQ(-EINVAL, dp_submit(self->a, &op, 0));
	EXPECT_EQ(-EINVAL, dp_submit(self->a, &op, 257));
	EXPECT_EQ(-EFAULT, dp_submit(self->a, (void *)8, 1));
	memset(&sub, 0, sizeof(sub));
	sub.ops = (uintptr_t)&op;
	sub.nr = 1;
	sub.flags = 1;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(fd, DMAPLANE_IOCTL_SUBMIT, &sub));
	/* A bad second operation: the first is accepted, done says so. */
	two[0] = op;
	two[1] = op;
	two[1].opcode = 77;
	memset(&sub, 0, sizeof(sub));
	sub.ops = (uintptr_t)two;
	sub.nr = 2;
	EXPECT_EQ(0, dp_test_ioctl(fd, DMAPLANE_IOCTL_SUBMIT, &sub));
	EXPECT_EQ(1, sub.done);
	/* That accepted send is queued at b as unexpected: take it. */
	ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 0, ~0ull, buf, 8, 1));
	ASSERT_EQ(1, wait1(self->b, c));
	EXPECT_EQ(0, c[0].status);

	/*
	 * Unreadable user memory: an eager send copies it in at once, so
	 * it is refused (-EFAULT) and the posted receive stays; a
	 * rendezvous is accepted and completes with -EFAULT on both sides.
	 */
	hole = mmap(NULL, 4 * EAGER, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, hole);
	ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 0, ~0ull, buf, 8, 1));
	EXPECT_EQ(-EFAULT, dp_send(self->a, self->a2b, 0, hole, 8, 2));
	EXPECT_EQ(0, dp_poll(self->b, c, 1));
	/* The same when only a later piece of an iovec cannot be read. */
	iov[0] = (struct iovec){ buf, 4 };
	iov[1] = (struct iovec){ hole, 4 };
	EXPECT_EQ(-EFAULT, dp_sendv(self->a, self->a2b, 0, iov, 2, 2));
	EXPECT_EQ(0, dp_poll(self->b, c, 1));
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 0, hole, 4 * EAGER, 3));
	ASSERT_EQ(1, wait1(self->b, c));
	EXPECT_EQ(1, c[0].ctx);
	EXPECT_EQ(-EFAULT, c[0].status);
	munmap(hole, 4 * EAGER);
	/* a's send completions: the batch one and the rendezvous. */
	EXPECT_EQ(2, dp_poll(self->a, c, 4));
	EXPECT_EQ(3, c[1].ctx);
	EXPECT_EQ(-EFAULT, c[1].status);
}

TEST(setup_and_addressing_errors)
{
	struct dmaplane_ep_setup s;
	struct dmaplane_name name, stale;
	struct dmaplane_av_insert av;
	struct dmaplane_handle_arg h;
	struct dp_ep *ep, *other;
	uint32_t addr;
	int fd;

	ASSERT_EQ(0, dp_open(NULL, 0, &ep));
	fd = dp_fd(ep);
	/* Nothing works before setup. */
	ASSERT_EQ(0, dp_getname(ep, &name));
	EXPECT_EQ(-EINVAL, dp_av_insert(ep, &name, &addr));
	EXPECT_EQ(-EINVAL, dp_send(ep, 0, 0, NULL, 0, 0));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0));

	memset(&s, 0, sizeof(s));
	s.cq_entries = 3;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(fd, DMAPLANE_IOCTL_EP_SETUP, &s));
	s.cq_entries = DMAPLANE_CQ_MAX_ENTRIES * 2;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(fd, DMAPLANE_IOCTL_EP_SETUP, &s));
	s.cq_entries = 0;
	s.flags = 1;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(fd, DMAPLANE_IOCTL_EP_SETUP, &s));
	s.flags = 0;
	s.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(fd, DMAPLANE_IOCTL_EP_SETUP, &s));
	EXPECT_EQ(-EFAULT, dp_test_ioctl(fd, DMAPLANE_IOCTL_EP_SETUP, NULL));
	ASSERT_EQ(0, dp_ep_setup(ep, 0, 16));
	EXPECT_EQ(-EBUSY, dp_ep_setup(ep, 0, 16));

	/* The ring is read-only; the head page is not. */
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
				   fd, DMAPLANE_CQ_RING_OFFSET));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 8192 * 4, PROT_READ, MAP_SHARED, fd,
				   DMAPLANE_CQ_RING_OFFSET));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd,
				   DMAPLANE_CQ_RING_OFFSET));
	EXPECT_EQ(MAP_FAILED, mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 4096 * 7));

	/* A closed endpoint's name stays invalid, even as ids come back. */
	other = dp_test_ep_new(0, 0);
	ASSERT_NE(NULL, other);
	ASSERT_EQ(0, dp_getname(other, &stale));
	dp_close(other);
	for (int i = 0; i < 50; i++) {
		other = dp_test_ep_new(0, 0);
		ASSERT_NE(NULL, other);
		EXPECT_EQ(-ECONNREFUSED, dp_av_insert(ep, &stale, &addr));
		dp_close(other);
	}
	name = stale;
	name.node_id ^= 1;
	EXPECT_EQ(-ENETUNREACH, dp_av_insert(ep, &name, &addr));
	name = stale;
	name.ep_uid = ~0ull;
	EXPECT_EQ(-ECONNREFUSED, dp_av_insert(ep, &name, &addr));

	memset(&av, 0, sizeof(av));
	ASSERT_EQ(0, dp_getname(ep, &av.name));
	av.flags = 1;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(fd, DMAPLANE_IOCTL_AV_INSERT, &av));
	av.flags = 0;
	ASSERT_EQ(0, dp_test_ioctl(fd, DMAPLANE_IOCTL_AV_INSERT, &av));
	memset(&h, 0, sizeof(h));
	h.handle = av.handle;
	h.flags = 1;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(fd, DMAPLANE_IOCTL_AV_REMOVE, &h));
	h.flags = 0;
	h.reserved = 1;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(fd, DMAPLANE_IOCTL_AV_REMOVE, &h));
	EXPECT_EQ(0, dp_av_remove(ep, av.handle));
	EXPECT_EQ(-ENOENT, dp_av_remove(ep, av.handle));
	EXPECT_EQ(-ENOENT, dp_send(ep, av.handle, 0, NULL, 0, 0));
	dp_close(ep);
}

/* Run @fn in a child with uid @uid; returns its exit status. */
static int as_user(uid_t uid, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (!pid) {
		if (uid && (setgid(uid) || setuid(uid)))
			_exit(100);
		_exit(fn(arg));
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 200;
}

struct iso {
	struct dmaplane_name name;
	uint64_t key;
	int want;
};

static int try_insert(void *p)
{
	struct iso *iso = p;
	struct dp_ep *ep = dp_test_ep_new(iso->key, 0);
	uint32_t addr;
	int ret;

	if (!ep)
		return 101;
	ret = dp_av_insert(ep, &iso->name, &addr);
	if (ret != iso->want)
		return 102;
	if (!ret) {
		char msg[] = "across uids";

		if (dp_send_sync(ep, addr, 42, msg, sizeof(msg), NULL))
			return 103;
	}
	dp_close(ep);
	return 0;
}

TEST(isolation_between_uids_and_auth_keys)
{
	struct dp_ep *plain, *keyed;
	struct iso iso;
	char buf[32];
	struct dmaplane_cqe c;

	if (getuid() != 0)
		SKIP(return, "needs root to switch uids");
	plain = dp_test_ep_new(0, 0);
	keyed = dp_test_ep_new(0xabcdef, 0);
	ASSERT_NE(NULL, plain);
	ASSERT_NE(NULL, keyed);

	/* Another uid, no key: cannot reach root's plain endpoint. */
	ASSERT_EQ(0, dp_getname(plain, &iso.name));
	iso.key = 0;
	iso.want = -EACCES;
	EXPECT_EQ(0, as_user(65534, try_insert, &iso));
	/* Same uid, but a key on one side only: refused too. */
	iso.key = 0xabcdef;
	EXPECT_EQ(0, as_user(0, try_insert, &iso));
	/* Another uid with the shared key: allowed, and a message moves. */
	ASSERT_EQ(0, dp_getname(keyed, &iso.name));
	iso.key = 0xabcdef;
	iso.want = 0;
	ASSERT_EQ(0, dp_recv(keyed, DP_ANY_SRC, 42, 0, buf, sizeof(buf), 5));
	EXPECT_EQ(0, as_user(65534, try_insert, &iso));
	ASSERT_EQ(1, wait1(keyed, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_STREQ("across uids", buf);
	/* Wrong key. */
	iso.key = 0xabcdee;
	iso.want = -EACCES;
	EXPECT_EQ(0, as_user(65534, try_insert, &iso));
	dp_close(plain);
	dp_close(keyed);
}

TEST(progress_while_receiver_computes_in_another_process)
{
	const size_t len = 4 << 20;
	struct dp_ep *rx = dp_test_ep_new(0, 0);
	struct dmaplane_name name;
	struct dmaplane_cqe c;
	char *buf = malloc(len), *want = malloc(len);
	int pipefd[2], status;
	pid_t pid;

	ASSERT_NE(NULL, rx);
	ASSERT_EQ(0, dp_getname(rx, &name));
	ASSERT_EQ(0, dp_recv(rx, DP_ANY_SRC, 3, 0, buf, len, 77));
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	if (!pid) {
		struct dp_ep *tx = dp_test_ep_new(0, 0);
		char *src = malloc(len);
		uint32_t addr;

		dp_test_fill(src, len, 4242);
		if (!tx || dp_av_insert(tx, &name, &addr) ||
		    dp_send_sync(tx, addr, 3, src, len, NULL))
			_exit(1);
		write(pipefd[1], "x", 1);
		_exit(0);
	}
	/* "Compute": block on the pipe, no dmaplane call, until the
	 * sender says its send completed; the data must then be here.
	 */
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	ASSERT_EQ(1, dp_poll(rx, &c, 1));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(len, c.len);
	dp_test_fill(want, len, 4242);
	EXPECT_EQ(0, memcmp(want, buf, len));
	free(want);
	waitpid(pid, &status, 0);
	EXPECT_EQ(0, WEXITSTATUS(status));
	dp_close(rx);
	free(buf);
}

TEST(killed_processes_leave_nothing_behind)
{
	long recvs = dp_test_stat("posted_recvs");
	long unexp = dp_test_stat("unexp_msgs");
	long eps = dp_test_stat("endpoints");
	struct dp_ep *rx = dp_test_ep_new(0, 0);
	struct dmaplane_name name, child_name;
	struct dmaplane_cqe c;
	char *buf = malloc(1 << 20);
	int pipefd[2], status;
	uint32_t to_child;
	pid_t pid;

	ASSERT_NE(NULL, rx);
	ASSERT_EQ(0, dp_getname(rx, &name));
	ASSERT_EQ(0, pipe(pipefd));
	for (int round = 0; round < 5; round++) {
		pid = fork();
		if (!pid) {
			struct dp_ep *tx = dp_test_ep_new(0, 0);
			char *src = malloc(1 << 20);
			static char small[100];
			uint32_t addr;

			if (!tx || dp_av_insert(tx, &name, &addr))
				_exit(1);
			/* Posted receives, a rendezvous and an eager message
			 * queued at rx, then die.
			 */
			for (int i = 0; i < 10; i++)
				dp_recv(tx, DP_ANY_SRC, i, 0, small, 100, i);
			dp_send(tx, addr, 1, src, 1 << 20, 1);
			dp_send(tx, addr, 2, small, 100, 2);
			dp_getname(tx, &child_name);
			write(pipefd[1], &child_name, sizeof(child_name));
			pause();
			_exit(0);
		}
		ASSERT_EQ(sizeof(child_name), read(pipefd[0], &child_name,
						   sizeof(child_name)));
		ASSERT_EQ(0, dp_av_insert(rx, &child_name, &to_child));
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		/* The rendezvous' sender is gone: error completion. */
		ASSERT_EQ(0, dp_recv(rx, DP_ANY_SRC, 1, 0, buf, 1 << 20, 10));
		ASSERT_EQ(1, wait1(rx, &c));
		EXPECT_EQ(-ECONNRESET, c.status);
		/* The eager message was complete when sent: delivered. */
		ASSERT_EQ(0, dp_recv(rx, DP_ANY_SRC, 2, 0, buf, 100, 11));
		ASSERT_EQ(1, wait1(rx, &c));
		EXPECT_EQ(0, c.status);
		/* Sending to the dead endpoint fails. */
		EXPECT_EQ(-ECONNRESET, dp_send(rx, to_child, 0, buf, 10, 0));
		EXPECT_EQ(0, dp_av_remove(rx, to_child));
	}
	EXPECT_EQ(recvs, dp_test_stat("posted_recvs"));
	EXPECT_EQ(unexp, dp_test_stat("unexp_msgs"));
	dp_close(rx);
	EXPECT_EQ(eps, dp_test_stat("endpoints"));
	free(buf);
}

TEST_F(pair, probe_claim_and_cancel)
{
	struct dmaplane_probe p;
	struct dmaplane_cqe c[4];
	char big[EAGER * 2], out[EAGER * 2];

	EXPECT_EQ(-EAGAIN, dp_probe(self->b, DP_ANY_SRC, 0, ~0ull, 0, &p));
	dp_test_fill(big, sizeof(big), 5);
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 0x77, "small", 6, 1));
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 0x78, big, sizeof(big), 2));
	/* Iprobe: details, message stays. */
	ASSERT_EQ(0, dp_probe(self->b, self->b2a, 0x78, 0, 0, &p));
	EXPECT_EQ(0x78, p.tag);
	EXPECT_EQ(sizeof(big), p.len);
	EXPECT_EQ(dp_test_uid(self->a), p.src);
	ASSERT_EQ(0, dp_probe(self->b, DP_ANY_SRC, 0, ~0ull, 0, &p));
	EXPECT_EQ(0x77, p.tag);
	EXPECT_EQ(-EAGAIN, dp_probe(self->b, DP_ANY_SRC, 0x79, 0, 0, &p));
	/* Improbe: the rendezvous message is claimed... */
	ASSERT_EQ(0, dp_probe(self->b, DP_ANY_SRC, 0x78, 0, DMAPLANE_PROBE_CLAIM, &p));
	EXPECT_NE(0, p.claim);
	/* ...so an any-tag receive gets the small one, not the claimed one. */
	ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 0, ~0ull, out, sizeof(out), 10));
	ASSERT_EQ(1, wait1(self->b, c));
	EXPECT_EQ(0x77, c[0].tag);
	EXPECT_EQ(-ENOENT, dp_recv_claimed(self->b, p.claim + 1, out, sizeof(out), 11));
	ASSERT_EQ(0, dp_recv_claimed(self->b, p.claim, out, sizeof(out), 11));
	ASSERT_EQ(1, wait1(self->b, c));
	EXPECT_EQ(11, c[0].ctx);
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(0x78, c[0].tag);
	EXPECT_EQ(0, memcmp(big, out, sizeof(big)));
	EXPECT_EQ(-ENOENT, dp_recv_claimed(self->b, p.claim, out, sizeof(out), 12));
	/* Both sends completed. */
	EXPECT_EQ(2, dp_wait(self->a, c, 4, 1000) + dp_poll(self->a, c + 1, 3));

	/* Cancel: the earliest unmatched receive with that ctx. */
	ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 1, 0, out, 8, 20));
	ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 1, 0, out, 8, 21));
	EXPECT_EQ(0, dp_cancel(self->b, 20));
	EXPECT_EQ(-ENOENT, dp_cancel(self->b, 20));
	ASSERT_EQ(1, wait1(self->b, c));
	EXPECT_EQ(20, c[0].ctx);
	EXPECT_EQ(-ECANCELED, c[0].status);
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 1, "x", 2, 3));
	ASSERT_EQ(1, wait1(self->b, c));
	EXPECT_EQ(21, c[0].ctx);
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(-ENOENT, dp_cancel(self->b, 21));
	EXPECT_EQ(1, wait1(self->a, c));
}

static void vector_case(struct __test_metadata *_metadata,
			FIXTURE_DATA(pair) *self, size_t total, int expected)
{
	char *src = malloc(total), *dst = malloc(total + 64), *flat;
	struct iovec siov[3], riov[4];
	struct dmaplane_cqe c;
	size_t cut1 = total / 3, cut2 = total / 2, r1 = total / 5, r2 = total / 4;

	dp_test_fill(src, total, total);
	memset(dst, 0x11, total + 64);
	/* Three sender pieces out of order in memory, four receiver pieces. */
	flat = malloc(total);
	memcpy(flat, src, total);
	siov[0] = (struct iovec){ flat, cut1 };
	siov[1] = (struct iovec){ flat + cut1, cut2 - cut1 };
	siov[2] = (struct iovec){ flat + cut2, total - cut2 };
	riov[0] = (struct iovec){ dst + total - r1, r1 };	/* last piece first */
	riov[1] = (struct iovec){ dst, r2 };
	riov[2] = (struct iovec){ dst + r2, 0 };
	riov[3] = (struct iovec){ dst + r2, total - r1 - r2 };
	if (expected)
		ASSERT_EQ(0, dp_recvv(self->b, self->b2a, 9, 0, riov, 4, 1));
	ASSERT_EQ(0, dp_sendv(self->a, self->a2b, 9, siov, 3, 2));
	if (!expected)
		ASSERT_EQ(0, dp_recvv(self->b, self->b2a, 9, 0, riov, 4, 1));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(total, c.len);
	EXPECT_EQ(total, c.msg_len);
	EXPECT_EQ(0, memcmp(dst + total - r1, src, r1));
	EXPECT_EQ(0, memcmp(dst, src + r1, r2));
	EXPECT_EQ(0, memcmp(dst + r2, src + r1 + r2, total - r1 - r2));
	EXPECT_EQ(0x11, (unsigned char)dst[total]);
	ASSERT_EQ(1, wait1(self->a, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(total, c.len);
	free(src);
	free(dst);
	free(flat);
}

TEST_F(pair, vector_send_and_receive)
{
	vector_case(_metadata, self, 3000, 1);
	vector_case(_metadata, self, 3000, 0);
	vector_case(_metadata, self, 300000, 1);
	vector_case(_metadata, self, 300000, 0);
}

TEST_F(pair, vector_errors)
{
	struct iovec iov[2] = { { NULL, 0 }, { NULL, 0 } }, *big;
	char buf[16];
	struct dmaplane_cqe c;

	EXPECT_EQ(-EINVAL, dp_sendv(self->a, self->a2b, 0, iov, 0, 0));
	big = calloc(1025, sizeof(*big));
	EXPECT_EQ(-EINVAL, dp_sendv(self->a, self->a2b, 0, big, 1025, 0));
	EXPECT_EQ(-EFAULT, dp_sendv(self->a, self->a2b, 0, (void *)8, 2, 0));
	iov[0] = (struct iovec){ buf, 8 };
	iov[1] = (struct iovec){ (void *)0xffffffff81000000ul, 8 };
	EXPECT_EQ(-EFAULT, dp_sendv(self->a, self->a2b, 0, iov, 2, 0));
	EXPECT_EQ(-EFAULT, dp_recvv(self->b, DP_ANY_SRC, 0, 0, iov, 2, 0));
	/* Truncation into a vector that is too short. */
	iov[0] = (struct iovec){ buf, 4 };
	iov[1] = (struct iovec){ buf + 8, 4 };
	ASSERT_EQ(0, dp_recvv(self->b, DP_ANY_SRC, 0, 0, iov, 2, 3));
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 0, "0123456789", 10, 4));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(-EMSGSIZE, c.status);
	EXPECT_EQ(8, c.len);
	EXPECT_EQ(10, c.msg_len);
	EXPECT_EQ(0, memcmp(buf, "0123", 4));
	EXPECT_EQ(0, memcmp(buf + 8, "4567", 4));
	ASSERT_EQ(1, wait1(self->a, &c));
	free(big);
}

/*
 * Kill a sender or a receiver at a random point while large and small
 * messages flow both ways; every round must end with nothing queued or
 * posted, and the survivor's operations completing (with an error where
 * the peer went away).
 */
TEST(kill_mid_transfer_in_a_loop)
{
	long recvs = dp_test_stat("posted_recvs");
	long unexp = dp_test_stat("unexp_msgs");
	long eps = dp_test_stat("endpoints");
	const size_t big = 1 << 20;
	char *buf = malloc(big);

	srand(getpid());
	for (int round = 0; round < 20; round++) {
		struct dmaplane_name *names = mmap(NULL, 2 * sizeof(*names),
						   PROT_READ | PROT_WRITE,
						   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		int victim_sends = round % 2;	/* alternate roles */
		struct dp_ep *me = dp_test_ep_new(0, 64);
		struct dmaplane_cqe c[64];
		uint32_t peer;
		int status, outstanding = 0;
		pid_t pid;

		ASSERT_NE(NULL, me);
		memset(names, 0, 2 * sizeof(*names));
		ASSERT_EQ(0, dp_getname(me, &names[0]));
		pid = fork();
		if (!pid) {
			struct dp_ep *ep = dp_test_ep_new(0, 64);
			char *b = malloc(big);
			uint32_t to;

			if (!ep || dp_getname(ep, &names[1]) ||
			    dp_av_insert(ep, &names[0], &to))
				_exit(1);
			for (;;) {
				struct dmaplane_cqe cc[64];

				if (victim_sends) {
					dp_send(ep, to, 1, b, big, 0);
					dp_send(ep, to, 2, b, 100, 0);
				} else {
					dp_recv(ep, to, 3, 0, b, big, 0);
				}
				dp_poll(ep, cc, 64);
			}
		}
		while (!__atomic_load_n(&names[1].ep_uid, __ATOMIC_ACQUIRE))
			usleep(100);
		ASSERT_EQ(0, dp_av_insert(me, &names[1], &peer));
		for (int i = 0; i < 30; i++) {
			int ret = victim_sends ?
				dp_recv(me, peer, 0, ~0ull, buf, big, i) :
				dp_send(me, peer, 3, buf, big, i);

			if (!ret)
				outstanding++;
			if (i == 10 + rand() % 15)
				kill(pid, SIGKILL);
			outstanding -= dp_poll(me, c, 64);
		}
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		/* Whatever was accepted completes: no operation hangs. */
		if (victim_sends) {
			for (int i = 0; i < 64; i++)
				dp_cancel(me, i);
		}
		while (outstanding > 0) {
			/* Generous: the host may be running other VMs. */
			int n = dp_wait(me, c, 64, 20000);

			ASSERT_LT(0, n) TH_LOG("round %d (victim %s): %d operations never completed",
					      round, victim_sends ? "sends" : "receives",
					      outstanding);
			outstanding -= n;
		}
		dp_close(me);
		munmap(names, 2 * sizeof(*names));
	}
	EXPECT_EQ(recvs, dp_test_stat_settled("posted_recvs", recvs, 5000));
	EXPECT_EQ(unexp, dp_test_stat_settled("unexp_msgs", unexp, 5000));
	EXPECT_EQ(eps, dp_test_stat_settled("endpoints", eps, 5000));
	free(buf);
}

TEST_F(pair, probe_cancel_getname_bad_input)
{
	struct dmaplane_probe p;
	struct dmaplane_cancel cn;
	int fd = dp_fd(self->b);

	memset(&p, 0, sizeof(p));
	p.peer = DMAPLANE_AV_ANY;
	p.flags = 2;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(fd, DMAPLANE_IOCTL_PROBE, &p));
	p.flags = 0;
	p.reserved = 1;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(fd, DMAPLANE_IOCTL_PROBE, &p));
	p.reserved = 0;
	p.data = 1;	/* outputs must come in zeroed */
	EXPECT_EQ(-EINVAL, dp_test_ioctl(fd, DMAPLANE_IOCTL_PROBE, &p));
	p.data = 0;
	p.cqe_flags = DMAPLANE_CQE_F_DATA;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(fd, DMAPLANE_IOCTL_PROBE, &p));
	p.cqe_flags = 0;
	p.claim = 1;	/* outputs must come in zeroed */
	EXPECT_EQ(-EINVAL, dp_test_ioctl(fd, DMAPLANE_IOCTL_PROBE, &p));
	p.claim = 0;
	p.peer = 4242;
	EXPECT_EQ(-ENOENT, dp_test_ioctl(fd, DMAPLANE_IOCTL_PROBE, &p));
	EXPECT_EQ(-EFAULT, dp_test_ioctl(fd, DMAPLANE_IOCTL_PROBE, NULL));

	memset(&cn, 0, sizeof(cn));
	cn.flags = 1;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(fd, DMAPLANE_IOCTL_CANCEL, &cn));
	cn.flags = 0;
	cn.pad = 1;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(fd, DMAPLANE_IOCTL_CANCEL, &cn));
	EXPECT_EQ(-EFAULT, dp_test_ioctl(fd, DMAPLANE_IOCTL_CANCEL, NULL));
	EXPECT_EQ(-EFAULT, dp_test_ioctl(fd, DMAPLANE_IOCTL_GETNAME, NULL));
	EXPECT_EQ(-EFAULT, dp_test_ioctl(fd, DMAPLANE_IOCTL_AV_INSERT, NULL));
	EXPECT_EQ(-EFAULT, dp_test_ioctl(fd, DMAPLANE_IOCTL_AV_REMOVE, NULL));
	EXPECT_EQ(-EFAULT, dp_test_ioctl(fd, DMAPLANE_IOCTL_SUBMIT, NULL));
}

/*
 * An endpoint's file descriptor in another address space (here a child
 * after fork(); SCM_RIGHTS is the same) moves no data: every SUBMIT fails
 * with -EPERM, so the holder can neither make the kernel write into the
 * opener's memory (a RECV at an address of the opener) nor read from it
 * (a SEND from one).  Nothing is posted, nothing completes, and the
 * opener's buffers stay as they were.
 */
TEST_F(pair, other_address_space_moves_no_data)
{
	static char secret[4096], landing[4096];
	struct dmaplane_cqe c;
	struct dp_mr *mr;
	pid_t pid;

	dp_test_fill(secret, sizeof(secret), 77);
	memset(landing, 0x5a, sizeof(landing));
	ASSERT_EQ(0, dp_mr_reg(self->b, landing, sizeof(landing),
			       DMAPLANE_ACCESS_REMOTE_READ |
			       DMAPLANE_ACCESS_REMOTE_WRITE, &mr));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct iovec iov = { secret, sizeof(secret) };
		uint64_t rkey = dp_mr_key(mr);
		int bad = 0;

		/* The child's copies differ from the opener's from now on. */
		memset(secret, 0x11, sizeof(secret));
		bad |= dp_recv(self->b, self->b2a, 1, 0, landing,
			       sizeof(landing), 1) != -EPERM;
		bad |= dp_send(self->a, self->a2b, 1, secret,
			       sizeof(secret), 2) != -EPERM;
		bad |= dp_sendv(self->a, self->a2b, 1, &iov, 1, 3) != -EPERM;
		bad |= dp_recvv(self->b, self->b2a, 1, 0, &iov, 1, 4) != -EPERM;
		bad |= dp_put(self->a, self->a2b, rkey, 0, secret,
			      sizeof(secret), 5) != -EPERM;
		bad |= dp_get(self->a, self->a2b, rkey, 0, secret,
			      sizeof(secret), 6) != -EPERM;
		bad |= dp_mr_reg(self->a, secret, sizeof(secret),
				 DMAPLANE_ACCESS_REMOTE_READ, &mr) != -EPERM;
		_exit(bad);
	}
	dp_test_expect_refused_child(_metadata, pid, self->a, self->b, landing,
				     sizeof(landing));

	/* The opener itself still can. */
	ASSERT_EQ(0, dp_recv(self->b, self->b2a, 1, 0, landing,
			     sizeof(landing), 1));
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 1, secret, sizeof(secret), 2));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(0, memcmp(secret, landing, sizeof(secret)));
	ASSERT_EQ(1, wait1(self->a, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(0, dp_mr_dereg(mr));
}

/*
 * An endpoint holds at most av_max address handles (kernel memory on a
 * user's behalf is bounded): beyond, AV_INSERT is -ENOSPC; a removal
 * makes room again.
 */
TEST_F(pair, address_vector_is_bounded)
{
	const char *param = "/sys/module/dmaplane/parameters/av_max";
	struct dmaplane_name name;
	char old[32] = "";
	uint32_t h[3];
	int pfd;

	pfd = open(param, O_RDWR);
	ASSERT_LE(0, pfd);
	ASSERT_LT(0, read(pfd, old, sizeof(old) - 1));
	ASSERT_EQ(1, pwrite(pfd, "3", 1, 0));
	ASSERT_EQ(0, dp_getname(self->b, &name));
	/* a already holds a2b: two more fit, the fourth does not. */
	ASSERT_EQ(0, dp_av_insert(self->a, &name, &h[0]));
	ASSERT_EQ(0, dp_av_insert(self->a, &name, &h[1]));
	EXPECT_EQ(-ENOSPC, dp_av_insert(self->a, &name, &h[2]));
	EXPECT_EQ(0, dp_av_remove(self->a, h[0]));
	EXPECT_EQ(-ENOENT, dp_av_remove(self->a, h[0]));
	EXPECT_EQ(0, dp_av_insert(self->a, &name, &h[2]));
	EXPECT_EQ(-ENOSPC, dp_av_insert(self->a, &name, &h[0]));
	/* Other endpoints have bounds of their own. */
	EXPECT_EQ(0, dp_av_insert(self->b, &name, &h[0]));
	ASSERT_EQ((ssize_t)strlen(old), pwrite(pfd, old, strlen(old), 0));
	close(pfd);
	EXPECT_EQ(0, dp_av_insert(self->a, &name, &h[0]));
}

/*
 * The iovec arrays the kernel copies in for queued operations are bounded
 * per endpoint (iov_budget): beyond, an F_IOV operation is -EAGAIN until
 * one completes or is cancelled; other endpoints have budgets of their own.
 */
TEST_F(pair, iovec_copies_are_bounded_per_endpoint)
{
	const char *param = "/sys/module/dmaplane/parameters/iov_budget";
	unsigned int per = 1024, fit, i;
	struct iovec *iov = calloc(per, sizeof(*iov));
	char buf[1024], val[32] = "";
	struct dmaplane_cqe c;
	int pfd, ret;

	ASSERT_NE(NULL, iov);
	pfd = open(param, O_RDONLY);
	ASSERT_LE(0, pfd);
	ASSERT_LT(0, read(pfd, val, sizeof(val) - 1));
	close(pfd);
	fit = strtoul(val, NULL, 0) / (per * sizeof(*iov));
	ASSERT_LT(0, fit);
	ASSERT_GT(1000, fit);
	for (i = 0; i < per; i++)
		iov[i] = (struct iovec){ buf + i, 1 };

	for (i = 0; i < fit; i++)
		ASSERT_EQ(0, dp_recvv(self->b, DP_ANY_SRC, i, 0, iov, per, 100 + i))
			TH_LOG("receive %u of %u", i, fit);
	EXPECT_EQ(-EAGAIN, dp_recvv(self->b, DP_ANY_SRC, 0, 0, iov, per, 99));
	/* A single-range receive copies no iovec: not bounded by it. */
	ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 1 << 20, 0, buf, 8, 98));
	/* The sender's budget is its own. */
	ret = dp_sendv(self->a, self->a2b, 0, iov, per, 7);
	ASSERT_EQ(0, ret);
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(100, c.ctx);
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(per, c.len);
	ASSERT_EQ(1, wait1(self->a, &c));
	EXPECT_EQ(0, c.status);
	/* The completed receive made room for exactly one more. */
	ASSERT_EQ(0, dp_recvv(self->b, DP_ANY_SRC, 0, 0, iov, per, 200));
	EXPECT_EQ(-EAGAIN, dp_recvv(self->b, DP_ANY_SRC, 0, 0, iov, per, 99));
	/* So does a cancelled one. */
	ASSERT_EQ(0, dp_cancel(self->b, 101));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(-ECANCELED, c.status);
	ASSERT_EQ(0, dp_recvv(self->b, DP_ANY_SRC, 0, 0, iov, per, 201));
	EXPECT_EQ(-EAGAIN, dp_recvv(self->b, DP_ANY_SRC, 0, 0, iov, per, 99));
	free(iov);
}

TEST(probe_and_cancel_need_setup)
{
	struct dmaplane_probe p;
	struct dmaplane_cancel cn;
	struct dp_ep *ep;

	ASSERT_EQ(0, dp_open(NULL, 0, &ep));
	memset(&p, 0, sizeof(p));
	p.peer = DMAPLANE_AV_ANY;
	memset(&cn, 0, sizeof(cn));
	EXPECT_EQ(-EINVAL, dp_test_ioctl(dp_fd(ep), DMAPLANE_IOCTL_PROBE, &p));
	EXPECT_EQ(-EINVAL, dp_test_ioctl(dp_fd(ep), DMAPLANE_IOCTL_CANCEL, &cn));
	dp_close(ep);
}

TEST(poll_wakes_on_completion)
{
	struct dp_ep *ep = dp_test_ep_new(0, 0);
	struct pollfd pfd;
	uint32_t me;
	char buf[4];

	ASSERT_NE(NULL, ep);
	ASSERT_EQ(0, dp_test_connect(ep, ep, &me));
	pfd.fd = dp_fd(ep);
	pfd.events = POLLIN;
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	ASSERT_EQ(0, dp_send(ep, me, 0, "abc", 4, 1));
	EXPECT_EQ(1, poll(&pfd, 1, 1000));
	EXPECT_TRUE(pfd.revents & POLLIN);
	ASSERT_EQ(0, dp_recv_sync(ep, me, 0, 0, buf, 4, NULL) == -EBUSY ? 0 : 1);
	dp_close(ep);
}

struct stalled_send {
	struct dp_ep *ep;
	uint32_t dest;
	void *buf;
	size_t len;
	int ret;
};

static void *stalled_send_thread(void *arg)
{
	struct stalled_send *s = arg;

	s->ret = dp_send(s->ep, s->dest, 1, s->buf, s->len, 11);
	return NULL;
}

/*
 * An eager send whose source faults for as long as its owner likes (here
 * a userfaultfd nobody answers yet) holds up its own system call only:
 * another sender to the same receiver, and the receiver, go on.  (The
 * payload used to be copied under the receiver's match_lock.)
 */
TEST(stalled_sender_source_holds_up_only_itself)
{
	struct dp_ep *r = dp_test_ep_new(0, 0), *s1 = dp_test_ep_new(0, 0);
	struct dp_ep *s2 = dp_test_ep_new(0, 0);
	long page = sysconf(_SC_PAGESIZE);
	struct stalled_send st = { .ep = s1, .len = 2 * page };
	char other[64], got[64], *dst, *pattern;
	struct dmaplane_cqe c;
	uint32_t s2r, r_any;
	uint64_t where = 0;
	pthread_t t;
	int uffd;

	ASSERT_NE(NULL, r);
	ASSERT_NE(NULL, s1);
	ASSERT_NE(NULL, s2);
	ASSERT_EQ(0, dp_test_connect(s1, r, &st.dest));
	ASSERT_EQ(0, dp_test_connect(s2, r, &s2r));
	ASSERT_EQ(0, dp_test_connect(r, s1, &r_any));
	st.buf = mmap(NULL, st.len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, st.buf);
	uffd = dp_test_uffd_region(st.buf, st.len);
	if (uffd == -ENOSYS || uffd == -EPERM)
		SKIP(return, "no userfaultfd here (%d)", uffd);
	ASSERT_LE(0, uffd);
	pattern = malloc(st.len);
	dst = malloc(st.len);
	ASSERT_NE(NULL, pattern);
	ASSERT_NE(NULL, dst);
	dp_test_fill(pattern, st.len, 0x57a11ed);

	ASSERT_EQ(0, pthread_create(&t, NULL, stalled_send_thread, &st));
	/* The send's copy-in is stuck on the first page. */
	ASSERT_EQ(0, dp_test_uffd_fault(uffd, 30000, &where));
	EXPECT_EQ((uintptr_t)st.buf, where);

	/* Another sender and the receiver are not held up (SIGALRM: fail). */
	alarm(60);
	dp_test_fill(other, sizeof(other), 0x07e4);
	ASSERT_EQ(0, dp_send(s2, s2r, 2, other, sizeof(other), 21));
	ASSERT_EQ(1, wait1(s2, &c));
	EXPECT_EQ(0, c.status);
	ASSERT_EQ(0, dp_recv(r, DMAPLANE_AV_ANY, 2, 0, got, sizeof(got), 22));
	ASSERT_EQ(1, wait1(r, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(22, c.ctx);
	EXPECT_EQ(sizeof(other), c.len);
	EXPECT_EQ(0, memcmp(other, got, sizeof(got)));
	alarm(0);

	/* Let the stalled copy finish: its data arrives whole. */
	ASSERT_EQ(0, dp_test_uffd_fill(uffd, st.buf, pattern, page));
	/* The second page may fault too (a copy goes page by page). */
	dp_test_uffd_fault(uffd, 2000, &where);
	ASSERT_EQ(0, dp_test_uffd_fill(uffd, (char *)st.buf + page,
				       pattern + page, page));
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_EQ(0, st.ret);
	ASSERT_EQ(1, wait1(s1, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(11, c.ctx);
	ASSERT_EQ(0, dp_recv(r, r_any, 1, 0, dst, st.len, 12));
	ASSERT_EQ(1, wait1(r, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(st.len, c.len);
	EXPECT_EQ(0, memcmp(pattern, dst, st.len));

	close(uffd);
	munmap(st.buf, st.len);
	free(pattern);
	free(dst);
	dp_close(r);
	dp_close(s1);
	dp_close(s2);
	EXPECT_EQ(0, dp_test_stat("unexp_msgs"));
	EXPECT_EQ(0, dp_test_stat("deliveries"));
}

/*
 * Registration cache and deliveries (issue 10): a buffer registered once
 * and deregistered stays pinned in the kernel's registration cache, and
 * the messages copied into it (posted receives) or out of it (rendezvous
 * sends) go through those pages: "copies_cached" counts them,
 * "copies_pinned" the copies that pinned pages themselves.
 */
#define RC_LEN	(256UL << 10)

struct rc_counts {
	long cached, pinned, split, redone, split_cached;
};

/* The copies_* counters (the split ones: large_copies_are_split_with_a_helper). */
static void rc_counts(struct rc_counts *c)
{
	c->cached = dp_test_stat("copies_cached");
	c->pinned = dp_test_stat("copies_pinned");
	c->split = dp_test_stat("copies_split");
	c->redone = dp_test_stat("copies_split_redone");
	c->split_cached = dp_test_stat("copies_split_cached");
}

static unsigned char *rc_map(void *at)
{
	unsigned char *p = mmap(at, RC_LEN, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0x5a, RC_LEN);
	return p;
}

/* Register [buf, buf + RC_LEN) on @ep and deregister it: it stays cached. */
static int rc_register_and_drop(struct dp_ep *ep, void *buf, unsigned int access)
{
	struct dp_mr *mr;
	int ret = dp_mr_reg(ep, buf, RC_LEN, access, &mr);

	return ret ?: dp_mr_dereg(mr);
}

/*
 * One expected message of @len at @off in @buf (the receive is posted
 * first, so the sender's call copies into it); returns the completion
 * status of the receive, and whether the data is byte-exact in *@exact.
 */
static int rc_one(struct __test_metadata *_metadata, FIXTURE_DATA(pair) *self,
		  unsigned char *buf, size_t off, size_t len, uint64_t seed, int *exact)
{
	unsigned char *src = malloc(len);
	struct dmaplane_cqe c;
	int status;

	if (!src)
		return -ENOMEM;
	dp_test_fill(src, len, seed);
	EXPECT_EQ(0, dp_recv(self->b, self->b2a, seed, 0, buf + off, len, seed));
	EXPECT_EQ(0, dp_send(self->a, self->a2b, seed, src, len, seed));
	EXPECT_EQ(1, wait1(self->b, &c));
	status = c.status;
	EXPECT_EQ(seed, c.ctx);
	*exact = !memcmp(buf + off, src, len);
	EXPECT_EQ(1, wait1(self->a, &c));
	EXPECT_EQ(0, c.status);
	free(src);
	return status;
}

TEST_F(pair, registered_receive_buffer_pins_nothing)
{
	unsigned char *buf = rc_map(NULL), *keep, *src;
	struct rc_counts b0, b1;
	long mrs, pinned_pages;
	struct dmaplane_cqe c;
	struct iovec iov[3];
	int exact, i, status;
	pid_t pid;

	ASSERT_NE(NULL, buf);
	ASSERT_LE(0, dp_test_stat("copies_cached")) TH_LOG("no copies_cached counter");
	ASSERT_EQ(0, rc_register_and_drop(self->b, buf, DMAPLANE_ACCESS_LOCAL_WRITE));
	mrs = dp_test_stat("user_mrs");
	pinned_pages = dp_test_stat("pinned_pages");
	srand(10);

	/* 100 receives into the cached buffer, eager and rendezvous sizes. */
	rc_counts(&b0);
	for (i = 0; i < 100; i++) {
		size_t len = 1 + rand() % (i % 2 ? RC_LEN : EAGER);
		size_t off = rand() % (RC_LEN - len + 1);

		ASSERT_EQ(0, rc_one(_metadata, self, buf, off, len, 1000 + i, &exact));
		ASSERT_TRUE(exact) TH_LOG("message %d: %zu bytes at %zu", i, len, off);
	}
	rc_counts(&b1);
	EXPECT_EQ(100, b1.cached - b0.cached);
	EXPECT_EQ(0, b1.pinned - b0.pinned);
	/* Still the one pinning of the registration: nothing more pinned. */
	EXPECT_EQ(mrs, dp_test_stat("user_mrs"));
	EXPECT_EQ(pinned_pages, dp_test_stat("pinned_pages"));

	/* A vector receive whose pieces are in it too. */
	iov[0] = (struct iovec){ buf + 100, 5000 };
	iov[1] = (struct iovec){ buf + 70000, 1 };
	iov[2] = (struct iovec){ buf + 200000, 30000 };
	src = malloc(35001);
	ASSERT_NE(NULL, src);
	dp_test_fill(src, 35001, 5);
	rc_counts(&b0);
	ASSERT_EQ(0, dp_recvv(self->b, self->b2a, 5, 0, iov, 3, 5));
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 5, src, 35001, 5));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(35001, c.len);
	EXPECT_EQ(0, memcmp(buf + 100, src, 5000));
	EXPECT_EQ(src[5000], buf[70000]);
	EXPECT_EQ(0, memcmp(buf + 200000, src + 5001, 30000));
	ASSERT_EQ(1, wait1(self->a, &c));
	rc_counts(&b1);
	EXPECT_EQ(3, b1.cached - b0.cached);
	EXPECT_EQ(0, b1.pinned - b0.pinned);
	free(src);

	/* A receive reaching past the registration pins, as before. */
	keep = rc_map(NULL);
	ASSERT_NE(NULL, keep);
	rc_counts(&b0);
	ASSERT_EQ(0, rc_one(_metadata, self, keep, 0, 5000, 7, &exact));
	EXPECT_TRUE(exact);
	rc_counts(&b1);
	EXPECT_EQ(0, b1.cached - b0.cached);
	EXPECT_EQ(1, b1.pinned - b0.pinned);
	munmap(keep, RC_LEN);

	/*
	 * munmap between receives, and a fresh mapping at the same address:
	 * the next receive lands in the new pages (the registration died with
	 * the old ones: it pins them; the first receive into a buffer does
	 * not register it, see large_message_buffers_stay_registered), never
	 * in the old pages.
	 */
	ASSERT_EQ(0, munmap(buf, RC_LEN));
	ASSERT_EQ(buf, rc_map(buf));
	for (i = 0; i < 50 && dp_test_stat("user_mrs") != mrs - 1; i++)
		usleep(20000);
	EXPECT_EQ(mrs - 1, dp_test_stat("user_mrs"));
	rc_counts(&b0);
	ASSERT_EQ(0, rc_one(_metadata, self, buf, 4096, 100000, 8, &exact));
	EXPECT_TRUE(exact);
	rc_counts(&b1);
	EXPECT_EQ(0, b1.cached - b0.cached);
	EXPECT_EQ(1, b1.pinned - b0.pinned);

	/* MADV_DONTNEED between receives: verified, found gone, pinned anew. */
	ASSERT_EQ(0, rc_register_and_drop(self->b, buf, DMAPLANE_ACCESS_LOCAL_WRITE));
	ASSERT_EQ(0, rc_one(_metadata, self, buf, 0, 3000, 9, &exact));
	EXPECT_TRUE(exact);
	ASSERT_EQ(0, madvise(buf, RC_LEN, MADV_DONTNEED));
	rc_counts(&b0);
	ASSERT_EQ(0, rc_one(_metadata, self, buf, 8192, 70000, 10, &exact));
	EXPECT_TRUE(exact);
	rc_counts(&b1);
	EXPECT_EQ(0, b1.cached - b0.cached);
	EXPECT_EQ(1, b1.pinned - b0.pinned);
	for (i = 0; i < 50 && dp_test_stat("user_mrs") != mrs - 1; i++)
		usleep(20000);
	EXPECT_EQ(mrs - 1, dp_test_stat("user_mrs"));

	/* fork: the parent keeps its pinned pages (the child gets copies). */
	ASSERT_EQ(0, rc_register_and_drop(self->b, buf, DMAPLANE_ACCESS_LOCAL_WRITE));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		buf[0] ^= 1;	/* a write of the child's own copy */
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	buf[1] ^= 1;	/* the parent's own write: no copy, same page */
	rc_counts(&b0);
	ASSERT_EQ(0, rc_one(_metadata, self, buf, 0, 20000, 11, &exact));
	EXPECT_TRUE(exact);
	rc_counts(&b1);
	EXPECT_EQ(1, b1.cached - b0.cached);
	EXPECT_EQ(0, b1.pinned - b0.pinned);
	munmap(buf, RC_LEN);
}

/*
 * A message of up to 256 bytes between two endpoints of one process
 * (copy_self() in kmod/msg.c) is copied through the kernel's stack: no
 * page is pinned and the registration cache is not used; 257 bytes pin
 * as before.  The receive buffers straddle two pages, so that posting
 * does not pin them (recv_pin(): see small_receive_pins_its_page).  A
 * receive buffer that cannot be written fails the same way on both
 * paths: -EFAULT for the receive and for the send.
 */
TEST_F(pair, same_process_small_copy_pins_nothing)
{
	static const size_t lens[] = { 2, 8, 255, 256, 257 };
	static const unsigned char zero[64];
	unsigned char src[512], *map, *dst, *ro;
	struct rc_counts b0, b1;
	struct dmaplane_cqe c;
	unsigned int i;

	ASSERT_LE(0, dp_test_stat("copies_pinned")) TH_LOG("no copies_pinned counter");
	map = mmap(NULL, 2 * dp_test_pgsz(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	ASSERT_NE(MAP_FAILED, map);
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		size_t len = lens[i], off = i * 7 % 64;

		/* dst + off .. + len crosses the page boundary. */
		dst = map + dp_test_pgsz() - len / 2 - off;
		dp_test_fill(src, len, 300 + i);
		memset(map, 0, 2 * dp_test_pgsz());
		rc_counts(&b0);
		ASSERT_EQ(0, dp_recv(self->b, self->b2a, i, 0, dst + off, len, 10 + i));
		ASSERT_EQ(0, dp_send(self->a, self->a2b, i, src, len, 20 + i));
		ASSERT_EQ(1, wait1(self->b, &c));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(10 + i, c.ctx);
		EXPECT_EQ(len, c.len);
		EXPECT_EQ(0, memcmp(dst + off, src, len)) TH_LOG("%zu bytes", len);
		/* Nothing written around the receive buffer. */
		EXPECT_EQ(0, memcmp(dst, zero, off));
		EXPECT_EQ(0, dst[off + len]);
		ASSERT_EQ(1, wait1(self->a, &c));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(20 + i, c.ctx);
		rc_counts(&b1);
		EXPECT_EQ(0, b1.cached - b0.cached);
		EXPECT_EQ(len > 256 ? 1 : 0, b1.pinned - b0.pinned) TH_LOG("%zu bytes", len);
	}
	munmap(map, 2 * dp_test_pgsz());

	/* A read-only receive buffer: both paths fail both sides with -EFAULT. */
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);
	for (i = 0; i < 2; i++) {
		size_t len = i ? 300 : 8;

		dp_test_fill(src, len, 400 + i);
		ASSERT_EQ(0, dp_recv(self->b, self->b2a, 50, 0, ro, len, 30 + i));
		ASSERT_EQ(0, dp_send(self->a, self->a2b, 50, src, len, 40 + i));
		ASSERT_EQ(1, wait1(self->b, &c));
		EXPECT_EQ(30 + i, c.ctx);
		EXPECT_EQ(-EFAULT, c.status) TH_LOG("%zu bytes", len);
		EXPECT_EQ(0, c.len);
		ASSERT_EQ(1, wait1(self->a, &c));
		EXPECT_EQ(40 + i, c.ctx);
		EXPECT_EQ(-EFAULT, c.status) TH_LOG("%zu bytes", len);
	}
	EXPECT_EQ(0, ro[0]);
	munmap(ro, 4096);
}

/* A module parameter's value, or -1. */
static long read_param(const char *name)
{
	char path[128];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/dmaplane/parameters/%s", name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* VmPin of this process (its mm's pinned_vm), in kB. */
static long vm_pin_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[128];
	long kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPin: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/*
 * One message of @len into @dst, the receive (from any source) posted
 * first (@unexp: the message sent first); the receive is pinned while
 * posted when @want_pin (recv_pins, VmPin).  Returns whether the data is
 * exact.
 */
static int pin_one(struct __test_metadata *_metadata, FIXTURE_DATA(pair) *self,
		   unsigned char *dst, size_t len, int unexp, int want_pin, uint64_t seed)
{
	long pins = dp_test_stat("recv_pins"), vmpin = vm_pin_kb();
	unsigned char src[4096];
	struct dmaplane_cqe c;

	dp_test_fill(src, len, seed);
	memset(dst, 0, len);
	if (unexp)
		EXPECT_EQ(0, dp_send(self->a, self->a2b, seed, src, len, seed));
	EXPECT_EQ(0, dp_recv(self->b, DP_ANY_SRC, seed, 0, dst, len, seed + 1));
	if (!unexp) {
		EXPECT_EQ(pins + !!want_pin, dp_test_stat("recv_pins")) TH_LOG("%zu bytes", len);
		EXPECT_EQ(vmpin + (want_pin ? dp_test_pgsz() / 1024 : 0), vm_pin_kb());
		EXPECT_EQ(0, dp_send(self->a, self->a2b, seed, src, len, seed));
	}
	EXPECT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(seed + 1, c.ctx);
	EXPECT_EQ(len, c.len);
	EXPECT_EQ(len, c.msg_len);
	EXPECT_EQ(seed, c.tag);
	EXPECT_EQ(1, wait1(self->a, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(pins, dp_test_stat("recv_pins"));
	EXPECT_EQ(vmpin, vm_pin_kb());
	return !memcmp(dst, src, len);
}

/*
 * A receive into @dst (within one page) from an endpoint of a child
 * process, posted before the child sends @len bytes (seed and tag
 * @seed): pinned while posted, data exact.  Returns 0 or the line that
 * failed.
 */
/*
 * In a forked child: open an endpoint, give its name to the parent over
 * pipe end @back, wait for a byte on @go, send @len bytes of @src to
 * @bname with tag (and context) @tag, and exit 0 once the send completed
 * (1 to 3: the step that failed).
 */
static void child_send(const struct dmaplane_name *bname, int go, int back,
		       const void *src, size_t len, uint64_t tag)
{
	struct dp_ep *ep = dp_test_ep_new(0, 0);
	struct dmaplane_name cname;
	struct dmaplane_cqe c;
	uint32_t c2b;
	char x;

	if (!ep || dp_getname(ep, &cname) || dp_av_insert(ep, bname, &c2b))
		_exit(1);
	if (write(back, &cname, sizeof(cname)) != sizeof(cname) || read(go, &x, 1) != 1)
		_exit(2);
	if (dp_send(ep, c2b, tag, src, len, tag) || wait1(ep, &c) != 1 || c.status)
		_exit(3);
	dp_close(ep);
	_exit(0);
}

static int pin_from_child(struct __test_metadata *_metadata, struct dp_ep *b,
			  unsigned char *dst, size_t len, uint64_t seed)
{
	long pins = dp_test_stat("recv_pins");
	struct dmaplane_name bname, cname;
	unsigned char src[256];
	struct dmaplane_cqe c;
	int go[2], back[2], status, line = 0;
	uint32_t b2c;
	pid_t pid;

	if (len > sizeof(src) || dp_getname(b, &bname) || pipe(go))
		return __LINE__;
	if (pipe(back)) {
		line = __LINE__;
		goto close_go;
	}
	dp_test_fill(src, len, seed);
	pid = fork();
	if (pid < 0) {
		line = __LINE__;
		goto close_back;
	}
	if (!pid)
		child_send(&bname, go[0], back[1], src, len, seed);
	EXPECT_EQ(sizeof(cname), read(back[0], &cname, sizeof(cname)));
	EXPECT_EQ(0, dp_av_insert(b, &cname, &b2c));
	memset(dst, 0, len);
	EXPECT_EQ(0, dp_recv(b, b2c, seed, 0, dst, len, seed + 1));
	EXPECT_EQ(pins + 1, dp_test_stat("recv_pins"));
	EXPECT_EQ(1, write(go[1], "g", 1));
	EXPECT_EQ(1, wait1(b, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(seed + 1, c.ctx);
	EXPECT_EQ(len, c.len);
	EXPECT_EQ(seed, c.tag);
	EXPECT_EQ(0, memcmp(dst, src, len));
	EXPECT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("child status %#x", status);
	EXPECT_EQ(pins, dp_test_stat("recv_pins"));
	EXPECT_EQ(0, dp_av_remove(b, b2c));
close_back:
	close(back[0]);
	close(back[1]);
close_go:
	close(go[0]);
	close(go[1]);
	return line;
}

/*
 * A receive whose buffer lies within one page of anonymous memory pins
 * that page while it is posted (kmod/msg.c recv_pin()): the sender copies
 * into it and pins nothing (copies_pinned), the pin is charged to
 * RLIMIT_MEMLOCK (VmPin) and released with the receive, whichever way it
 * ends (completion, cancel, close).  Not pinned: a buffer across two
 * pages or larger than one, in a registration (its cached pages serve),
 * in shared memory, beyond RLIMIT_MEMLOCK (even with CAP_IPC_LOCK),
 * beyond recv_pins_max receives of the endpoint, a page not mapped yet,
 * from a given endpoint of the same process.
 */
TEST_F(pair, small_receive_pins_its_page)
{
	size_t pg = dp_test_pgsz();
	unsigned char *map = mmap(NULL, 3 * pg, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *shm = mmap(NULL, pg, PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	long base_pins, base_charged, vmpin, before, max;
	struct rc_counts b0, b1;
	struct dmaplane_cqe c;
	struct rlimit rl, low;
	unsigned char *reg;
	unsigned int i;

	ASSERT_NE(MAP_FAILED, map);
	ASSERT_NE(MAP_FAILED, shm);
	ASSERT_LE(0, dp_test_stat("recv_pins")) TH_LOG("no recv_pins counter");
	base_pins = dp_test_stat("recv_pins");
	base_charged = dp_test_stat("charged_pages");
	vmpin = vm_pin_kb();
	ASSERT_LE(0, vmpin);

	/* Within one page: pinned, expected and unexpected, random lengths and places. */
	srand(31);
	rc_counts(&b0);
	for (i = 0; i < 40; i++) {
		size_t len = 1 + rand() % pg;
		size_t off = rand() % (pg - len + 1);

		memset(map, 0, 3 * pg);
		EXPECT_TRUE(pin_one(_metadata, self, map + pg + off, len, i % 4 == 3,
				    i % 4 != 3, 100 + i)) TH_LOG("%zu bytes at %zu", len, off);
		/* Nothing written around it. */
		EXPECT_EQ(0, off ? map[pg + off - 1] : 0);
		EXPECT_EQ(0, off + len < pg ? map[pg + off + len] : 0);
	}
	rc_counts(&b1);
	EXPECT_EQ(0, b1.pinned - b0.pinned);
	EXPECT_EQ(0, b1.cached - b0.cached);

	/*
	 * From a given source: pinned when it is another process's
	 * endpoint; not when it is one of this process, whose sender copies
	 * within its own address space (copy_self()).
	 */
	EXPECT_EQ(0, pin_from_child(_metadata, self->b, map + pg + 8, 64, 500));
	EXPECT_EQ(base_pins, dp_test_stat("recv_pins"));
	dp_test_fill(map, 64, 501);
	ASSERT_EQ(0, dp_recv(self->b, self->b2a, 501, 0, map + pg + 8, 64, 501));
	EXPECT_EQ(base_pins, dp_test_stat("recv_pins"));
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 501, map, 64, 502));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(64, c.len);
	EXPECT_EQ(0, memcmp(map + pg + 8, map, 64));
	ASSERT_EQ(1, wait1(self->a, &c));
	EXPECT_EQ(0, c.status);

	/* Across two pages, and a whole page plus one: not pinned. */
	EXPECT_TRUE(pin_one(_metadata, self, map + pg - 4, 8, 0, 0, 200));
	EXPECT_TRUE(pin_one(_metadata, self, map + pg - 2000, 4000, 0, 0, 201));
	EXPECT_TRUE(pin_one(_metadata, self, map, pg + 1, 0, 0, 202));
	/* Shared memory: not anonymous, not pinned. */
	EXPECT_TRUE(pin_one(_metadata, self, shm + 100, 64, 0, 0, 203));
	/* In a registration: the cache's pages serve, nothing more is pinned. */
	reg = rc_map(NULL);
	ASSERT_NE(NULL, reg);
	ASSERT_EQ(0, rc_register_and_drop(self->b, reg, DMAPLANE_ACCESS_LOCAL_WRITE));
	rc_counts(&b0);
	EXPECT_TRUE(pin_one(_metadata, self, reg + pg + 10, 64, 0, 0, 204));
	rc_counts(&b1);
	EXPECT_EQ(1, b1.cached - b0.cached);
	EXPECT_EQ(0, b1.pinned - b0.pinned);

	/* Beyond RLIMIT_MEMLOCK: posted unpinned all the same, data exact. */
	ASSERT_EQ(0, getrlimit(RLIMIT_MEMLOCK, &rl));
	low = rl;
	low.rlim_cur = vm_pin_kb() * 1024;
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &low));
	EXPECT_TRUE(pin_one(_metadata, self, map + 2 * pg + 8, 8, 0, 0, 205));
	ASSERT_EQ(0, setrlimit(RLIMIT_MEMLOCK, &rl));
	EXPECT_TRUE(pin_one(_metadata, self, map + 2 * pg + 8, 8, 0, 1, 206));

	/* Cancelled: the pin goes with the receive. */
	ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 7, 0, map + 2 * pg + 16, 16, 300));
	EXPECT_EQ(base_pins + 1, dp_test_stat("recv_pins"));
	EXPECT_EQ(0, dp_cancel(self->b, 300));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(-ECANCELED, c.status);
	EXPECT_EQ(base_pins, dp_test_stat("recv_pins"));

	/* MADV_DONTNEED of a posted buffer: the receive completes, nothing leaks. */
	ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 8, 0, map + 2 * pg + 16, 16, 301));
	EXPECT_EQ(base_pins + 1, dp_test_stat("recv_pins"));
	ASSERT_EQ(0, madvise(map + 2 * pg, pg, MADV_DONTNEED));
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 8, map, 16, 302));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(16, c.len);
	ASSERT_EQ(1, wait1(self->a, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(base_pins, dp_test_stat("recv_pins"));

	/*
	 * Posting faults nothing in: the page MADV_DONTNEED took is not
	 * pinned, the sender's copy faults it in and the data arrives.
	 */
	dp_test_fill(map + 100, 8, 303);
	ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 10, 0, map + 2 * pg + 8, 8, 303));
	EXPECT_EQ(base_pins, dp_test_stat("recv_pins"));
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 10, map + 100, 8, 304));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(8, c.len);
	EXPECT_EQ(0, memcmp(map + 2 * pg + 8, map + 100, 8));
	ASSERT_EQ(1, wait1(self->a, &c));
	EXPECT_EQ(0, c.status);

	/*
	 * Posted at close: unpinned and uncharged with the endpoint (and the
	 * registration's cache entry with b, its only endpoint).
	 */
	memset(map + 2 * pg, 0, pg);
	before = vm_pin_kb();
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 9, 0, map + 2 * pg + 32 * i, 32,
				     400 + i));
	EXPECT_EQ(base_pins + 8, dp_test_stat("recv_pins"));
	EXPECT_EQ(before + 8 * (long)pg / 1024, vm_pin_kb());
	/* At most recv_pins_max per endpoint. */
	max = read_param("recv_pins_max");
	ASSERT_LE(0, max);
	for (; i < 70; i++)
		ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 9, 0, map + 2 * pg + 32 * i, 32,
				     400 + i));
	max = max < 70 ? max : 70;
	EXPECT_EQ(base_pins + max, dp_test_stat("recv_pins"));
	EXPECT_EQ(before + max * (long)pg / 1024, vm_pin_kb());
	dp_close(self->b);
	EXPECT_EQ(base_pins, dp_test_stat("recv_pins"));
	for (i = 0; i < 50 && vm_pin_kb() != vmpin; i++)
		usleep(20000);
	EXPECT_EQ(vmpin, vm_pin_kb());
	EXPECT_EQ(base_charged, dp_test_stat("charged_pages"));
	munmap(map, 3 * pg);
	munmap(shm, pg);
	munmap(reg, RC_LEN);
	self->b = dp_test_ep_new(0, 0);
	ASSERT_NE(NULL, self->b);
}

/* Post one DMAPLANE_OP_F_INLINE receive of @len bytes into @buf on @ep. */
static int recv_inline(struct dp_ep *ep, uint32_t src, uint64_t tag, void *buf,
		       uint64_t len, uint64_t ctx)
{
	struct dmaplane_op op;

	dp_prep_recv(&op, src, tag, 0, buf, len, ctx);
	dp_prep_set_flags(&op, DMAPLANE_OP_F_INLINE);
	return dp_submit(ep, &op, 1);
}

/* Are the bytes of @cqe's data beyond @len zero? */
static int inline_tail_zero(const struct dmaplane_cqe *cqe, uint64_t len)
{
	const unsigned char *d = (const unsigned char *)&cqe->data;

	for (uint64_t i = len; i < sizeof(cqe->data); i++)
		if (d[i])
			return 0;
	return 1;
}

/*
 * DMAPLANE_OP_F_INLINE: a message of up to 8 bytes that finds its receive
 * posted comes in the completion (DMAPLANE_CQE_F_INLINE, cqe.data), from
 * this process and from another one, into small and larger buffers; the
 * buffer is not written and its page not pinned.  What writes the buffer as any receive does (a message
 * that was waiting, remote completion data, no bytes), truncation, cancel
 * and the rejected forms.
 */
TEST_F(pair, inline_receive_takes_payload_in_completion)
{
	long pins = dp_test_stat("recv_pins"), inl;
	unsigned char src[16], buf[16], *big;
	struct dmaplane_name bname, cname;
	struct dmaplane_info info;
	struct dmaplane_cqe c;
	struct dmaplane_op op;
	int go[2], back[2], status;
	unsigned int i;
	uint64_t len;
	pid_t pid;

	ASSERT_EQ(0, dp_info(self->b, &info));
	ASSERT_TRUE(info.caps & DMAPLANE_CAP_RECV_INLINE);
	inl = dp_test_stat("recv_inline");
	ASSERT_LE(0, inl) TH_LOG("no recv_inline counter");

	/* 1 to 8 bytes of random data, from a given source and from any. */
	for (len = 1; len <= DMAPLANE_CQE_INLINE_MAX; len++) {
		dp_test_fill(src, sizeof(src), 700 + len);
		memset(buf, 0x5a, sizeof(buf));
		ASSERT_EQ(1, recv_inline(self->b, len % 2 ? DP_ANY_SRC : self->b2a,
					 70 + len, buf, len, 700 + len));
		EXPECT_EQ(pins, dp_test_stat("recv_pins"));
		ASSERT_EQ(0, dp_send(self->a, self->a2b, 70 + len, src, len, 800 + len));
		ASSERT_EQ(1, wait1(self->b, &c));
		EXPECT_EQ(700 + len, c.ctx);
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(DMAPLANE_OP_RECV, c.opcode);
		EXPECT_EQ(DMAPLANE_CQE_F_INLINE | DMAPLANE_CQE_F_SRC_AV, c.flags);
		EXPECT_EQ(self->b2a, c.src_av);
		EXPECT_EQ(len, c.len);
		EXPECT_EQ(len, c.msg_len);
		EXPECT_EQ(70 + len, c.tag);
		EXPECT_EQ(dp_test_uid(self->a), c.src);
		EXPECT_EQ(0, memcmp(&c.data, src, len));
		EXPECT_TRUE(inline_tail_zero(&c, len));
		for (i = 0; i < sizeof(buf); i++)
			ASSERT_EQ(0x5a, buf[i]) TH_LOG("buffer byte %u written", i);
		ASSERT_EQ(1, wait1(self->a, &c));
		EXPECT_EQ(800 + len, c.ctx);
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(DMAPLANE_OP_SEND, c.opcode);
		EXPECT_EQ(len, c.len);
	}

	EXPECT_EQ(inl + DMAPLANE_CQE_INLINE_MAX, dp_test_stat("recv_inline"));

	/* Longer than the receive: its first 8 bytes, -EMSGSIZE. */
	dp_test_fill(src, sizeof(src), 710);
	memset(buf, 0x5a, sizeof(buf));
	ASSERT_EQ(1, recv_inline(self->b, DP_ANY_SRC, 71, buf, 8, 710));
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 71, src, 12, 810));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(-EMSGSIZE, c.status);
	EXPECT_EQ(8, c.len);
	EXPECT_EQ(12, c.msg_len);
	EXPECT_TRUE(c.flags & DMAPLANE_CQE_F_INLINE);
	EXPECT_EQ(0, memcmp(&c.data, src, 8));
	EXPECT_EQ(0x5a, buf[0]);
	ASSERT_EQ(1, wait1(self->a, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(12, c.len);

	/* Remote completion data: the buffer is written, data is the sender's. */
	dp_test_fill(src, sizeof(src), 711);
	memset(buf, 0x5a, sizeof(buf));
	ASSERT_EQ(1, recv_inline(self->b, DP_ANY_SRC, 72, buf, 8, 711));
	dp_prep_send_data(&op, self->a2b, 72, src, 8, 0x1234567890abcdefull, 811);
	ASSERT_EQ(1, dp_submit(self->a, &op, 1));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(DMAPLANE_CQE_F_DATA | DMAPLANE_CQE_F_SRC_AV, c.flags);
	EXPECT_EQ(0x1234567890abcdefull, c.data);
	EXPECT_EQ(0, memcmp(buf, src, 8));
	EXPECT_EQ(0x5a, buf[8]);
	ASSERT_EQ(1, wait1(self->a, &c));
	EXPECT_EQ(0, c.status);

	/* A message that was waiting: copied into the buffer. */
	dp_test_fill(src, sizeof(src), 712);
	memset(buf, 0x5a, sizeof(buf));
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 73, src, 5, 812));
	ASSERT_EQ(1, wait1(self->a, &c));
	EXPECT_EQ(0, c.status);
	ASSERT_EQ(1, recv_inline(self->b, DP_ANY_SRC, 73, buf, 8, 712));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(5, c.len);
	EXPECT_EQ(DMAPLANE_CQE_F_SRC_AV, c.flags);
	EXPECT_EQ(0, memcmp(buf, src, 5));
	EXPECT_EQ(0x5a, buf[5]);

	/* No bytes: nothing inline, nothing written. */
	memset(buf, 0x5a, sizeof(buf));
	ASSERT_EQ(1, recv_inline(self->b, DP_ANY_SRC, 74, buf, 8, 713));
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 74, src, 0, 813));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(0, c.len);
	EXPECT_EQ(DMAPLANE_CQE_F_SRC_AV, c.flags);
	EXPECT_EQ(0, c.data);
	EXPECT_EQ(0x5a, buf[0]);
	ASSERT_EQ(1, wait1(self->a, &c));
	EXPECT_EQ(0, c.status);

	/*
	 * A larger buffer (within one page: it would be pinned without the
	 * flag): 8 bytes or fewer come inline, more are written into it.
	 */
	big = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, big);
	dp_test_fill(big + 2048, 100, 716);
	for (len = 0; len < 3; len++) {
		uint64_t n = len == 0 ? 3 : len == 1 ? 9 : 100;

		memset(big, 0x5a, 200);
		ASSERT_EQ(1, recv_inline(self->b, DP_ANY_SRC, 77, big, 200, 716 + len));
		EXPECT_EQ(pins, dp_test_stat("recv_pins"));
		ASSERT_EQ(0, dp_send(self->a, self->a2b, 77, big + 2048, n, 816));
		ASSERT_EQ(1, wait1(self->b, &c));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(n, c.len);
		if (n <= DMAPLANE_CQE_INLINE_MAX) {
			EXPECT_EQ(DMAPLANE_CQE_F_INLINE | DMAPLANE_CQE_F_SRC_AV, c.flags);
			EXPECT_EQ(0, memcmp(&c.data, big + 2048, n));
			EXPECT_EQ(0x5a, big[0]);
		} else {
			EXPECT_EQ(DMAPLANE_CQE_F_SRC_AV, c.flags);
			EXPECT_EQ(0, memcmp(big, big + 2048, n));
		}
		EXPECT_EQ(0x5a, big[n]);
		ASSERT_EQ(1, wait1(self->a, &c));
		EXPECT_EQ(0, c.status);
	}
	munmap(big, 4096);
	EXPECT_EQ(inl + DMAPLANE_CQE_INLINE_MAX + 2, dp_test_stat("recv_inline"));

	/* Cancelled: nothing pinned, nothing left. */
	ASSERT_EQ(1, recv_inline(self->b, DP_ANY_SRC, 75, buf, 8, 714));
	EXPECT_EQ(pins, dp_test_stat("recv_pins"));
	EXPECT_EQ(0, dp_cancel(self->b, 714));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(-ECANCELED, c.status);
	EXPECT_EQ(0, c.flags & DMAPLANE_CQE_F_INLINE);
	/* Only the truncated message and 3 bytes came inline since. */
	EXPECT_EQ(inl + DMAPLANE_CQE_INLINE_MAX + 2, dp_test_stat("recv_inline"));

	/* From another process. */
	ASSERT_EQ(0, dp_getname(self->b, &bname));
	ASSERT_EQ(0, pipe(go));
	ASSERT_EQ(0, pipe(back));
	dp_test_fill(src, sizeof(src), 715);
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		child_send(&bname, go[0], back[1], src, 8, 76);
	EXPECT_EQ(sizeof(cname), read(back[0], &cname, sizeof(cname)));
	memset(buf, 0x5a, sizeof(buf));
	ASSERT_EQ(1, recv_inline(self->b, DP_ANY_SRC, 76, buf, 8, 715));
	EXPECT_EQ(pins, dp_test_stat("recv_pins"));
	EXPECT_EQ(1, write(go[1], "g", 1));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(8, c.len);
	EXPECT_EQ(DMAPLANE_CQE_F_INLINE, c.flags);
	EXPECT_EQ(cname.ep_uid, c.src);
	EXPECT_EQ(0, memcmp(&c.data, src, 8));
	EXPECT_EQ(0x5a, buf[0]);
	EXPECT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status)) TH_LOG("child status %#x", status);
	EXPECT_EQ(inl + DMAPLANE_CQE_INLINE_MAX + 3, dp_test_stat("recv_inline"));
	close(go[0]);
	close(go[1]);
	close(back[0]);
	close(back[1]);

	/* Rejected: an iovec, a region, not a receive. */
	dp_prep_recv(&op, DP_ANY_SRC, 1, 0, buf, 1, 1);
	dp_prep_set_flags(&op, DMAPLANE_OP_F_INLINE | DMAPLANE_OP_F_IOV);
	EXPECT_EQ(-EINVAL, dp_submit(self->b, &op, 1));
	dp_prep_recv(&op, DP_ANY_SRC, 1, 0, (void *)0, 8, 1);
	dp_prep_set_region(&op, 1);
	dp_prep_set_flags(&op, DMAPLANE_OP_F_INLINE);
	EXPECT_EQ(-EINVAL, dp_submit(self->b, &op, 1));
	dp_prep_send(&op, self->a2b, 1, src, 8, 1);
	dp_prep_set_flags(&op, DMAPLANE_OP_F_INLINE);
	EXPECT_EQ(-EINVAL, dp_submit(self->a, &op, 1));
	dp_prep_put(&op, self->a2b, 1, 0, src, 8, 1);
	dp_prep_set_flags(&op, DMAPLANE_OP_F_INLINE);
	EXPECT_EQ(-EINVAL, dp_submit(self->a, &op, 1));
	EXPECT_EQ(0, dp_poll(self->a, &c, 1));
	EXPECT_EQ(0, dp_poll(self->b, &c, 1));
	EXPECT_EQ(pins, dp_test_stat("recv_pins"));
}

/* The sender's buffer of a rendezvous, registered and dropped: read through the cache. */
TEST_F(pair, registered_rendezvous_source_pins_nothing)
{
	unsigned char *src = rc_map(NULL), *dst = malloc(RC_LEN);
	struct rc_counts b0, b1;
	struct dmaplane_cqe c;
	int i;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	ASSERT_EQ(0, rc_register_and_drop(self->a, src, DMAPLANE_ACCESS_REMOTE_READ));
	rc_counts(&b0);
	for (i = 0; i < 20; i++) {
		size_t len = EAGER + 1 + rand() % (RC_LEN - EAGER - 1);

		dp_test_fill(src, len, 300 + i);
		ASSERT_EQ(0, dp_send(self->a, self->a2b, i, src, len, i));
		EXPECT_EQ(0, dp_poll(self->a, &c, 1));	/* rendezvous: waits */
		ASSERT_EQ(0, dp_recv(self->b, self->b2a, i, 0, dst, RC_LEN, i));
		ASSERT_EQ(1, wait1(self->b, &c));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(len, c.len);
		ASSERT_EQ(-1, dp_test_check(dst, len, 300 + i)) TH_LOG("message %d", i);
		ASSERT_EQ(1, wait1(self->a, &c));
		EXPECT_EQ(0, c.status);
	}
	rc_counts(&b1);
	EXPECT_EQ(20, b1.cached - b0.cached);
	EXPECT_EQ(0, b1.pinned - b0.pinned);
	munmap(src, RC_LEN);
	free(dst);
}

struct rc_race {
	unsigned char *buf;
	volatile int stop;
	int back_to_back;	/* no pause between zaps */
};

/*
 * Zap the buffer every 0.5 to 2.5 ms, or back to back (the test after
 * the next one).
 */
static void *rc_dontneed_thread(void *arg)
{
	struct rc_race *r = arg;
	unsigned int x = 1;

	while (!r->stop) {
		madvise(r->buf, RC_LEN, MADV_DONTNEED);
		if (r->back_to_back)
			continue;
		x = x * 1103515245 + 12345;
		usleep(500 + (x >> 16) % 2000);
	}
	return NULL;
}

/*
 * MADV_DONTNEED of the buffer while messages are copied into it (through
 * the cache: registered again each round): every receive completes (the
 * data may be zapped after it landed, so it is not compared), nothing is
 * written into freed pages (KASAN, the page checks of the test kernel),
 * and a message after the storm is byte-exact.
 */
TEST_F(pair, dontneed_during_cached_receives)
{
	struct rc_race race = { .buf = rc_map(NULL) };
	struct rc_counts b0, b1;
	pthread_t thr;
	int exact, i;

	ASSERT_NE(NULL, race.buf);
	rc_counts(&b0);
	ASSERT_EQ(0, pthread_create(&thr, NULL, rc_dontneed_thread, &race));
	for (i = 0; i < 200; i++) {
		ASSERT_EQ(0, rc_register_and_drop(self->b, race.buf,
						  DMAPLANE_ACCESS_LOCAL_WRITE));
		EXPECT_EQ(0, rc_one(_metadata, self, race.buf, 0, RC_LEN, 2000 + i, &exact));
	}
	race.stop = 1;
	pthread_join(thr, NULL);
	rc_counts(&b1);
	TH_LOG("cached %ld, pinned %ld", b1.cached - b0.cached, b1.pinned - b0.pinned);
	EXPECT_EQ(200, (b1.cached - b0.cached) + (b1.pinned - b0.pinned));
	ASSERT_EQ(0, rc_register_and_drop(self->b, race.buf, DMAPLANE_ACCESS_LOCAL_WRITE));
	ASSERT_EQ(0, rc_one(_metadata, self, race.buf, 0, RC_LEN, 3000, &exact));
	EXPECT_TRUE(exact);
	munmap(race.buf, RC_LEN);
}

/*
 * The same with the buffer zapped back to back: registering pins the
 * range and starts over when an invalidation hit it meanwhile, and a
 * delivery through the cache verifies the entry the same way; neither
 * may be starved (mr.c MR_TRIES: then the mmap_lock is taken for
 * writing, which keeps madvise() out).  Every registration returns 0 (or
 * -EAGAIN at worst), every receive completes.
 */
TEST_F(pair, dontneed_back_to_back_during_cached_receives)
{
	struct rc_race race = { .buf = rc_map(NULL), .back_to_back = 1 };
	int exact, i, ret, ok = 0;
	pthread_t thr;

	ASSERT_NE(NULL, race.buf);
	ASSERT_EQ(0, pthread_create(&thr, NULL, rc_dontneed_thread, &race));
	for (i = 0; i < 50; i++) {
		ret = rc_register_and_drop(self->b, race.buf, DMAPLANE_ACCESS_LOCAL_WRITE);
		if (ret != -EAGAIN)
			EXPECT_EQ(0, ret);
		ok += !ret;
		EXPECT_EQ(0, rc_one(_metadata, self, race.buf, 0, RC_LEN, 4000 + i, &exact));
	}
	race.stop = 1;
	pthread_join(thr, NULL);
	TH_LOG("%d of 50 registrations succeeded", ok);
	EXPECT_GE(ok, 45);
	ASSERT_EQ(0, rc_register_and_drop(self->b, race.buf, DMAPLANE_ACCESS_LOCAL_WRITE));
	ASSERT_EQ(0, rc_one(_metadata, self, race.buf, 0, RC_LEN, 5000, &exact));
	EXPECT_TRUE(exact);
	munmap(race.buf, RC_LEN);
}

/*
 * A copy on one node of at least copy_split_min bytes is shared with a
 * helper on another CPU (kmod/msg.c copy_split()): "copies_split" counts
 * them (rc_counts()), "copies_split_redone" those with a chunk the
 * helper could not copy (it pins only pages already present), which the
 * caller copied again.  Random data at odd offsets arrives intact whichever side
 * copied it; the bytes around the buffer are untouched.  A region with
 * pages (registered memory) can be either side, as in a put or a get.
 */
#define SPLIT_LEN	((4UL << 20) + 4321)
#define FRESH_LEN	(32UL << 20)

static int set_param(const char *name, const char *val)
{
	char path[128];
	int fd, ret;

	snprintf(path, sizeof(path), "/sys/module/dmaplane/parameters/%s", name);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ret = write(fd, val, strlen(val)) == (ssize_t)strlen(val) ? 0 : -errno;
	close(fd);
	return ret;
}

/* One message of @len from @src to @dst (receive posted first when @expected). */
static void split_one(struct __test_metadata *_metadata, FIXTURE_DATA(pair) *self,
		      unsigned char *src, unsigned char *dst, size_t len,
		      int expected, uint64_t seed)
{
	struct dmaplane_cqe c;

	dp_test_fill(src, len, seed);
	if (expected)
		ASSERT_EQ(0, dp_recv(self->b, self->b2a, seed, 0, dst, len, 1));
	ASSERT_EQ(0, dp_send(self->a, self->a2b, seed, src, len, 2));
	if (!expected)
		ASSERT_EQ(0, dp_recv(self->b, self->b2a, seed, 0, dst, len, 1));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(1, c.ctx);
	EXPECT_EQ(len, c.len);
	EXPECT_EQ(len, c.msg_len);
	EXPECT_EQ(-1, dp_test_check(dst, len, seed)) TH_LOG("%zu bytes, expected %d", len, expected);
	ASSERT_EQ(1, wait1(self->a, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(2, c.ctx);
	EXPECT_EQ(len, c.len);
}

TEST_F(pair, large_copies_are_split_with_a_helper)
{
	size_t map_len = SPLIT_LEN + 2 * 4096 + 64;
	long old = read_param("copy_split_min");
	unsigned char *src, *dst, *fresh, *big;
	struct rc_counts c0, c1;
	char val[32];

	if (old < 0)
		SKIP(return, "no copy_split_min parameter");
	src = malloc(SPLIT_LEN + 7);
	dst = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(NULL, src);
	ASSERT_NE(MAP_FAILED, dst);
	memset(dst, 0xa5, map_len);

	/* Posted and unexpected (rendezvous), at odd offsets: split, intact. */
	ASSERT_EQ(0, set_param("copy_split_min", "524288"));
	for (int expected = 0; expected < 2; expected++) {
		rc_counts(&c0);
		split_one(_metadata, self, src + 7, dst + 33, SPLIT_LEN, expected, 11 + expected);
		rc_counts(&c1);
		EXPECT_EQ(1, c1.split - c0.split) TH_LOG("expected %d", expected);
		EXPECT_EQ(0, c1.redone - c0.redone) TH_LOG("expected %d", expected);
		for (int i = 0; i < 33; i++)
			ASSERT_EQ(0xa5, dst[i]);
		for (size_t i = 33 + SPLIT_LEN; i < map_len; i++)
			ASSERT_EQ(0xa5, dst[i]);
	}

	/* From copy_split_min bytes on, not below. */
	ASSERT_EQ(0, set_param("copy_split_min", "1048576"));
	rc_counts(&c0);
	split_one(_metadata, self, src, dst, (1 << 20) - 1, 1, 21);
	rc_counts(&c1);
	EXPECT_EQ(0, c1.split - c0.split);
	split_one(_metadata, self, src, dst, 1 << 20, 1, 22);
	rc_counts(&c0);
	EXPECT_EQ(1, c0.split - c1.split);

	/* 0: never. */
	ASSERT_EQ(0, set_param("copy_split_min", "0"));
	rc_counts(&c0);
	split_one(_metadata, self, src, dst, SPLIT_LEN, 1, 23);
	split_one(_metadata, self, src, dst, SPLIT_LEN, 0, 24);
	rc_counts(&c1);
	EXPECT_EQ(0, c1.split - c0.split);

	/*
	 * A receive buffer never touched: its pages are not there, the
	 * helper cannot pin them; it stops at its first chunk, which the
	 * sender copies again.  (32 MiB: the sender's own chunks take long
	 * enough for the helper to have started.)
	 */
	ASSERT_EQ(0, set_param("copy_split_min", "524288"));
	big = malloc(FRESH_LEN);
	ASSERT_NE(NULL, big);
	fresh = mmap(NULL, FRESH_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		     -1, 0);
	ASSERT_NE(MAP_FAILED, fresh);
	ASSERT_EQ(0, madvise(fresh, FRESH_LEN, MADV_NOHUGEPAGE));
	rc_counts(&c0);
	split_one(_metadata, self, big, fresh, FRESH_LEN, 1, 25);
	rc_counts(&c1);
	EXPECT_EQ(1, c1.split - c0.split);
	EXPECT_EQ(1, c1.redone - c0.redone);
	munmap(fresh, FRESH_LEN);
	free(big);

	/*
	 * Iovec buffers on both sides, split all the same: a send of three
	 * ranges into a receive of five (odd lengths, two of them empty,
	 * one byte between them), posted first and arriving first.  Every
	 * range holds its part of the message; the bytes between and
	 * around them are untouched.
	 */
	for (int expected = 0; expected < 2; expected++) {
		size_t rlen[5] = { 100001, 0, 700003, 1234567, 0 }, off = 0, at = 33;
		size_t slen[3] = { 7, (1 << 20) + 13, 0 };
		struct iovec riov[5], siov[3];
		struct dmaplane_cqe c;
		uint64_t seed = 26 + expected;

		rlen[4] = SPLIT_LEN - rlen[0] - rlen[2] - rlen[3];
		slen[2] = SPLIT_LEN - slen[0] - slen[1];
		for (int i = 0; i < 5; i++, at += rlen[i - 1] + 1)
			riov[i] = (struct iovec){ dst + at, rlen[i] };
		for (int i = 0; i < 3; off += slen[i], i++)
			siov[i] = (struct iovec){ src + off, slen[i] };
		memset(dst, 0xa5, map_len);
		dp_test_fill(src, SPLIT_LEN, seed);
		rc_counts(&c0);
		if (expected)
			ASSERT_EQ(0, dp_recvv(self->b, self->b2a, seed, 0, riov, 5, 1));
		ASSERT_EQ(0, dp_sendv(self->a, self->a2b, seed, siov, 3, 2));
		if (!expected)
			ASSERT_EQ(0, dp_recvv(self->b, self->b2a, seed, 0, riov, 5, 1));
		ASSERT_EQ(1, wait1(self->b, &c));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(SPLIT_LEN, c.len);
		ASSERT_EQ(1, wait1(self->a, &c));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(SPLIT_LEN, c.len);
		rc_counts(&c1);
		EXPECT_EQ(1, c1.split - c0.split) TH_LOG("expected %d", expected);
		off = 0;
		for (int i = 0; i < 5; off += rlen[i], i++) {
			unsigned char *end = (unsigned char *)riov[i].iov_base + rlen[i];

			EXPECT_EQ(0, memcmp(riov[i].iov_base, src + off, rlen[i]))
				TH_LOG("range %d, expected %d", i, expected);
			EXPECT_EQ(0xa5, *end) TH_LOG("after range %d", i);
		}
		for (int i = 0; i < 33; i++)
			ASSERT_EQ(0xa5, dst[i]);
	}

	/*
	 * One-sided: a put into and a get out of registered memory of b's
	 * (a region's pages on one side, a's user memory on the other).
	 */
	{
		struct dp_mr *mr;

		ASSERT_EQ(0, dp_mr_reg(self->b, dst, map_len, DMAPLANE_ACCESS_ALL, &mr));
		dp_test_fill(src, SPLIT_LEN, 27);
		rc_counts(&c0);
		EXPECT_EQ(0, dp_test_rma(self->a, 1, self->a2b, dp_mr_key(mr), 61, src,
					 SPLIT_LEN, 10000));
		rc_counts(&c1);
		EXPECT_EQ(1, c1.split - c0.split);
		EXPECT_EQ(-1, dp_test_check(dst + 61, SPLIT_LEN, 27));
		dp_test_fill(dst + 5, SPLIT_LEN, 28);
		memset(src, 0, SPLIT_LEN);
		EXPECT_EQ(0, dp_test_rma(self->a, 0, self->a2b, dp_mr_key(mr), 5, src,
					 SPLIT_LEN, 10000));
		rc_counts(&c0);
		EXPECT_EQ(1, c0.split - c1.split);
		EXPECT_EQ(-1, dp_test_check(src, SPLIT_LEN, 28));
		/* Beyond the region: refused as before, nothing split. */
		EXPECT_EQ(-ERANGE, dp_test_rma(self->a, 1, self->a2b, dp_mr_key(mr),
					       map_len - SPLIT_LEN + 1, src, SPLIT_LEN, 10000));
		rc_counts(&c1);
		EXPECT_EQ(0, c1.split - c0.split);
		EXPECT_EQ(0, dp_mr_dereg(mr));
	}

	snprintf(val, sizeof(val), "%ld", old);
	EXPECT_EQ(0, set_param("copy_split_min", val));
	munmap(dst, map_len);
	free(src);
}

/*
 * The helper of a split copy reads a source that is registered through
 * its registration cache, pinning nothing (kmod/msg.c copy_split_pin(),
 * kmod/mr.c dmaplane_mr_cache_get_pages(): "copies_split_cached" counts
 * its chunks).  To know which chunks the helper copies, the receiver
 * (the caller of a copy out of a rendezvous sender's buffer) is held at
 * its first chunk: the first page of its buffer is a userfaultfd's, left
 * unanswered until the helper has copied every other chunk (it needs no
 * fault: the rest of the buffer is mapped).  A source registered once is
 * read through the cache for each of those chunks; after MADV_DONTNEED
 * and new data in the source the entry is stale: the helper finds so
 * and pins the new pages, and the new data arrives.  A send whose copy
 * may be split keeps its buffer registered, as a posted receive does:
 * the second send of one buffer registers it.
 */
#define SRC_LEN		(32UL << 20)
#define SRC_CHUNKS	(SRC_LEN / (256 << 10))

struct held_recv {
	struct dp_ep *ep;
	uint32_t from;
	uint64_t tag;
	struct iovec iov[2];
	int ret;
};

static void *held_recv_thread(void *arg)
{
	struct held_recv *h = arg;

	h->ret = dp_recvv(h->ep, h->from, h->tag, 0, h->iov, 2, h->tag);
	return NULL;
}

/*
 * Send @src (SRC_LEN bytes of seed @seed) as a rendezvous and receive it
 * into @first (a userfaultfd's page, @uffd) and @rest, the receiver held
 * at its first chunk until the helper copied SRC_CHUNKS - 1 chunks or
 * 60 s passed.  Returns the helper's chunks read through the cache, -1
 * when the helper took the first chunk (before the receiver: try again).
 */
static long held_split(struct __test_metadata *_metadata, FIXTURE_DATA(pair) *self,
		       unsigned char *src, unsigned char *first, unsigned char *rest,
		       int uffd, uint64_t seed)
{
	struct held_recv h = {
		.ep = self->b, .from = self->b2a, .tag = seed,
		.iov = { { first, 4096 }, { rest, SRC_LEN - 4096 } },
	};
	struct rc_counts c0, c1;
	struct dmaplane_cqe c;
	uint64_t where = 0;
	pthread_t t;
	long chunks;

	dp_test_fill(src, SRC_LEN, seed);
	rc_counts(&c0);
	EXPECT_EQ(0, dp_send(self->a, self->a2b, seed, src, SRC_LEN, seed));
	EXPECT_EQ(0, pthread_create(&t, NULL, held_recv_thread, &h));
	EXPECT_EQ(0, dp_test_uffd_fault(uffd, 60000, &where));
	EXPECT_EQ((uintptr_t)first, where);
	/* Every copy into the rest of the buffer counts as cached or pinned. */
	for (int ms = 0; ms < 60000; ms += 10) {
		rc_counts(&c1);
		if (c1.cached + c1.pinned - c0.cached - c0.pinned >= (long)SRC_CHUNKS - 1)
			break;
		usleep(10000);
	}
	EXPECT_EQ(0, dp_test_uffd_fill(uffd, first, src, 4096));
	EXPECT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, h.ret);
	EXPECT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(seed, c.ctx);
	EXPECT_EQ(SRC_LEN, c.len);
	EXPECT_EQ(1, wait1(self->a, &c));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(seed, c.ctx);
	EXPECT_EQ(0, memcmp(first, src, 4096));
	EXPECT_EQ(0, memcmp(rest, src + 4096, SRC_LEN - 4096));
	rc_counts(&c1);
	EXPECT_EQ(1, c1.split - c0.split);
	chunks = c1.split_cached - c0.split_cached;
	/* Drop the page, for the next round's fault (a retry's too). */
	EXPECT_EQ(0, madvise(first, 4096, MADV_DONTNEED));
	if (c1.redone - c0.redone)
		return -1;
	return chunks;
}

TEST_F(pair, split_copy_reads_a_registered_source)
{
	long old = read_param("copy_split_min"), min = read_param("msg_reg_min");
	unsigned char *src, *first, *rest;
	long regs, chunks;
	struct dp_mr *mr;
	char val[32];
	int uffd, i;

	if (old < 0)
		SKIP(return, "no copy_split_min parameter");
	ASSERT_LE(0, dp_test_stat("copies_split_cached")) TH_LOG("no copies_split_cached counter");
	src = mmap(NULL, SRC_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	rest = mmap(NULL, SRC_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	first = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, src);
	ASSERT_NE(MAP_FAILED, rest);
	ASSERT_NE(MAP_FAILED, first);
	memset(src, 0x5a, SRC_LEN);
	memset(rest, 0xa5, SRC_LEN);
	uffd = dp_test_uffd_region(first, 4096);
	if (uffd == -ENOSYS || uffd == -EPERM)
		SKIP(return, "no userfaultfd here (%d)", uffd);
	ASSERT_LE(0, uffd);
	ASSERT_EQ(0, set_param("copy_split_min", "524288"));

	/* Registered once (and deregistered: it stays in the cache). */
	ASSERT_EQ(0, dp_mr_reg(self->a, src, SRC_LEN, DMAPLANE_ACCESS_LOCAL_WRITE, &mr));
	ASSERT_EQ(0, dp_mr_dereg(mr));
	for (i = 0, chunks = -1; i < 3 && chunks < 0; i++)
		chunks = held_split(_metadata, self, src, first, rest, uffd, 50 + i);
	EXPECT_EQ(SRC_CHUNKS - 1, chunks);

	/*
	 * Its pages dropped and written anew: the entry is stale, not read
	 * (and the send registers nothing new: msg_reg_min 0).
	 */
	ASSERT_EQ(0, set_param("msg_reg_min", "0"));
	for (i = 0, chunks = -1; i < 3 && chunks < 0; i++) {
		ASSERT_EQ(0, madvise(src, SRC_LEN, MADV_DONTNEED));
		chunks = held_split(_metadata, self, src, first, rest, uffd, 60 + i);
	}
	EXPECT_EQ(0, chunks);
	snprintf(val, sizeof(val), "%ld", min);
	ASSERT_EQ(0, set_param("msg_reg_min", val));

	/* A send of copy_split_min bytes or more registers its buffer. */
	munmap(rest, SRC_LEN);
	rest = mmap(NULL, SRC_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, rest);
	memset(rest, 0xa5, SRC_LEN);
	regs = dp_test_stat("msg_regs");
	for (i = 0; i < 2; i++)
		split_one(_metadata, self, rest, src, 1 << 20, 1, 70 + i);
	/* The source and the receive buffer. */
	EXPECT_EQ(regs + 2, dp_test_stat("msg_regs"));
	/* Below it (and a send alone), only the receive buffer. */
	ASSERT_EQ(0, set_param("copy_split_min", "2097152"));
	regs = dp_test_stat("msg_regs");
	for (i = 0; i < 2; i++)
		split_one(_metadata, self, rest + (4 << 20), src + (4 << 20), 1 << 20, 1, 72 + i);
	EXPECT_EQ(regs + 1, dp_test_stat("msg_regs"));

	snprintf(val, sizeof(val), "%ld", old);
	EXPECT_EQ(0, set_param("copy_split_min", val));
	close(uffd);
	munmap(first, 4096);
	munmap(rest, SRC_LEN);
	munmap(src, SRC_LEN);
}

/*
 * The helper of a message's split copy is queued on the CPU where the
 * other side's owner last entered the module (its submission, its
 * poll()): where it waits for this copy.  On the caller's own CPU, or
 * for a side that never entered it, the helper is left to the scheduler.
 * "copies_split_peer" counts the first kind.  One process plays both
 * sides, moving itself between CPUs 0 and 1, so that each endpoint's
 * last CPU is known.
 */
static void on_cpu(struct __test_metadata *_metadata, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	ASSERT_EQ(0, sched_setaffinity(0, sizeof(set), &set));
}

#define PEER_LEN	(1UL << 20)

TEST_F(pair, split_copy_helper_runs_on_the_peers_cpu)
{
	static const struct {
		int rcpu, scpu;	/* the receiver's and the sender's CPU */
		int expected;	/* receive posted before the send */
		int n;		/* messages: RECVs in one dp_submit() (a batch) */
		long peer;	/* copies_split_peer's growth */
	} cases[] = {
		{ 1, 0, 1, 1, 1 },	/* the sender copies, the receiver waits */
		{ 1, 0, 0, 1, 1 },	/* the receiver copies, the sender waits */
		{ 0, 1, 1, 1, 1 },
		{ 1, 0, 0, 4, 1 },	/* a batch: one helper, for four */
		{ 0, 0, 1, 1, 0 },	/* both on one CPU: the scheduler's */
		{ 1, 1, 0, 1, 0 },
		{ 0, 0, 0, 4, 0 },
	};
	long old = read_param("copy_split_min");
	struct dmaplane_op ops[4];
	struct dmaplane_cqe c[4];
	unsigned char *src, *dst;
	cpu_set_t all;
	char val[32];

	if (old < 0 || dp_test_stat("copies_split_peer") < 0)
		SKIP(return, "no copy_split_min parameter or copies_split_peer counter");
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(all), &all));
	if (!CPU_ISSET(0, &all) || !CPU_ISSET(1, &all))
		SKIP(return, "needs CPUs 0 and 1 (has %d CPUs, 0: %d, 1: %d)", CPU_COUNT(&all),
		     CPU_ISSET(0, &all), CPU_ISSET(1, &all));
	src = mmap(NULL, 4 * PEER_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	dst = mmap(NULL, 4 * PEER_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	ASSERT_NE(MAP_FAILED, src);
	ASSERT_NE(MAP_FAILED, dst);
	ASSERT_EQ(0, set_param("copy_split_min", "524288"));

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		int n = cases[k].n, i;
		long split = dp_test_stat("copies_split");
		long peer = dp_test_stat("copies_split_peer");

		/* 1 MiB alone is split; four of them share one helper. */
		for (i = 0; i < n; i++) {
			dp_test_fill(src + i * PEER_LEN, PEER_LEN, 100 * k + i);
			dp_prep_recv(&ops[i], self->b2a, 100 * k + i, 0, dst + i * PEER_LEN,
				     PEER_LEN, 10 + i);
		}
		memset(dst, 0, 4 * PEER_LEN);
		if (cases[k].expected) {
			on_cpu(_metadata, cases[k].rcpu);
			ASSERT_EQ(n, dp_submit(self->b, ops, n));
		}
		on_cpu(_metadata, cases[k].scpu);
		for (i = 0; i < n; i++)
			ASSERT_EQ(0, dp_send(self->a, self->a2b, 100 * k + i,
					     src + i * PEER_LEN, PEER_LEN, 20 + i));
		if (!cases[k].expected) {
			on_cpu(_metadata, cases[k].rcpu);
			ASSERT_EQ(n, dp_submit(self->b, ops, n));
		}
		for (i = 0; i < n; i++) {
			ASSERT_EQ(1, wait1(self->b, &c[i]));
			EXPECT_EQ(0, c[i].status);
			EXPECT_EQ(10 + i, c[i].ctx);
			EXPECT_EQ(PEER_LEN, c[i].len);
			EXPECT_EQ(-1, dp_test_check(dst + i * PEER_LEN, PEER_LEN, 100 * k + i))
				TH_LOG("case %zu, message %d", k, i);
		}
		for (i = 0; i < n; i++) {
			ASSERT_EQ(1, wait1(self->a, &c[i]));
			EXPECT_EQ(0, c[i].status);
			EXPECT_EQ(20 + i, c[i].ctx);
		}
		EXPECT_EQ(1, dp_test_stat("copies_split") - split) TH_LOG("case %zu", k);
		EXPECT_EQ(cases[k].peer, dp_test_stat("copies_split_peer") - peer)
			TH_LOG("case %zu", k);
	}

	ASSERT_EQ(0, sched_setaffinity(0, sizeof(all), &all));
	snprintf(val, sizeof(val), "%ld", old);
	ASSERT_EQ(0, set_param("copy_split_min", val));
	munmap(src, 4 * PEER_LEN);
	munmap(dst, 4 * PEER_LEN);
}

/*
 * Sends of one dp_submit() that find their receives posted share one
 * helper between them (kmod/msg.c struct send_batch): a window of medium
 * messages, each below copy_split_min, is one split ("copies_split" + 1).
 * Every message lands intact at its own receive, in matching order, the
 * bytes between them untouched; the completions of both sides come in
 * the order of the operations, with their fields (remote completion data
 * included); an operation that is not such a send (an eager send, one
 * whose receive is not posted) sees the batch's receives complete before
 * it matches anything.
 */
#define WIN_N		16
#define WIN_LEN		(65536 + 123)
#define WIN_GAP		64
#define WIN_SLOT	(WIN_LEN + WIN_GAP)
#define WIN_BIG		(448UL << 10)
#define WIN_HUGE	(8UL << 20)
#define WIN_HUGE_MAP	(WIN_GAP + 3 * (WIN_HUGE + WIN_GAP))

/* @n completions of @ep, in the order of contexts @ctx0 + 0, 1, ...; @tag, @len. */
static void win_reap(struct __test_metadata *_metadata, struct dp_ep *ep, int n,
		     uint64_t ctx0, uint64_t tag, uint64_t len, int recv)
{
	struct dmaplane_cqe c[WIN_N + 1];

	ASSERT_EQ(n, dp_wait(ep, c, n, 10000));
	EXPECT_EQ(0, dp_poll(ep, c + n, 1));
	for (int i = 0; i < n; i++) {
		EXPECT_EQ(0, c[i].status) TH_LOG("completion %d", i);
		EXPECT_EQ(ctx0 + i, c[i].ctx);
		EXPECT_EQ(recv ? DMAPLANE_OP_RECV : DMAPLANE_OP_SEND, c[i].opcode);
		EXPECT_EQ(len, c[i].len);
		EXPECT_EQ(len, c[i].msg_len);
		EXPECT_EQ(tag, c[i].tag);
		if (recv && i % 2) {
			EXPECT_EQ(DMAPLANE_CQE_F_DATA, c[i].flags & DMAPLANE_CQE_F_DATA);
			EXPECT_EQ(0xd000 + i, c[i].data);
		} else if (recv) {
			EXPECT_EQ(0, c[i].flags & DMAPLANE_CQE_F_DATA);
		}
	}
}

#define WIN_SENDS_FIRST	1
#define WIN_IOV		2	/* every buffer an iovec of two ranges */

/*
 * A window of @n sends of @len from @src into @dst's slots, receives
 * posted first (unless WIN_SENDS_FIRST in @how); the bytes between the
 * slots hold @guard.
 */
static void win_one(struct __test_metadata *_metadata, FIXTURE_DATA(pair) *self,
		    unsigned char *src, unsigned char *dst, size_t slot, size_t len,
		    int n, uint64_t seed, unsigned char guard, int how)
{
	struct dmaplane_op rops[WIN_N], sops[WIN_N];
	struct iovec riov[WIN_N][2], siov[WIN_N][2];

	for (int i = 0; i < n; i++) {
		unsigned char *d = dst + WIN_GAP + i * slot, *s = src + i * len;

		dp_test_fill(s, len, seed + i);
		/* Ranges split at different points on the two sides. */
		riov[i][0] = (struct iovec){ d, len / 2 };
		riov[i][1] = (struct iovec){ d + len / 2, len - len / 2 };
		siov[i][0] = (struct iovec){ s, len / 3 };
		siov[i][1] = (struct iovec){ s + len / 3, len - len / 3 };
		if (how & WIN_IOV) {
			dp_prep_recv(&rops[i], self->b2a, 7, 0, riov[i], 2, 1000 + i);
			dp_prep_set_flags(&rops[i], DMAPLANE_OP_F_IOV);
			dp_prep_send(&sops[i], self->a2b, 7, siov[i], 2, 2000 + i);
			dp_prep_set_flags(&sops[i], DMAPLANE_OP_F_IOV);
		} else {
			dp_prep_recv(&rops[i], self->b2a, 7, 0, d, len, 1000 + i);
			dp_prep_send(&sops[i], self->a2b, 7, s, len, 2000 + i);
		}
		if (i % 2) {
			sops[i].flags |= DMAPLANE_OP_F_DATA;
			sops[i].data = 0xd000 + i;
		}
	}
	if (how & WIN_SENDS_FIRST) {
		/* Rendezvous: each waits in a's pages until b's receives take them. */
		ASSERT_EQ(n, dp_submit(self->a, sops, n));
		ASSERT_EQ(n, dp_submit(self->b, rops, n));
	} else {
		ASSERT_EQ(n, dp_submit(self->b, rops, n));
		ASSERT_EQ(n, dp_submit(self->a, sops, n));
	}
	/* All of them copied and completed by the time the second dp_submit() returned. */
	win_reap(_metadata, self->a, n, 2000, 7, len, 0);
	win_reap(_metadata, self->b, n, 1000, 7, len, 1);
	for (int i = 0; i < n; i++) {
		unsigned char *d = dst + WIN_GAP + i * slot;

		EXPECT_EQ(-1, dp_test_check(d, len, seed + i)) TH_LOG("message %d", i);
		for (int k = 1; k <= WIN_GAP; k++)
			ASSERT_EQ(guard, d[-k]) TH_LOG("before message %d", i);
	}
	for (size_t k = 0; k < WIN_GAP; k++)
		ASSERT_EQ(guard, dst[n * slot + k]);
}

/*
 * Exactly @n completions on @ep, each with status 0, contexts @ctx[] in
 * order and, with @len, lengths @len[].
 */
static void win_expect(struct __test_metadata *_metadata, struct dp_ep *ep, int n,
		       const uint64_t *ctx, const uint64_t *len)
{
	struct dmaplane_cqe c[WIN_N + 1];

	ASSERT_EQ(n, dp_wait(ep, c, n, 10000));
	EXPECT_EQ(0, dp_poll(ep, c + n, 1));
	for (int i = 0; i < n; i++) {
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(ctx[i], c[i].ctx);
		if (len)
			EXPECT_EQ(len[i], c[i].len);
	}
}

TEST_F(pair, window_of_sends_shares_one_helper)
{
	size_t map_len = WIN_GAP + WIN_N * WIN_SLOT + WIN_GAP;
	long old = read_param("copy_split_min");
	unsigned char *src, *dst, *fresh;
	const uint64_t mix_len[] = { WIN_LEN, 8, WIN_LEN, WIN_LEN };
	struct dmaplane_op ops[5];
	struct dmaplane_cqe c[6];
	struct rc_counts c0, c1;
	char val[32];

	if (old < 0)
		SKIP(return, "no copy_split_min parameter");
	src = malloc(3 * WIN_HUGE);
	dst = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(NULL, src);
	ASSERT_NE(MAP_FAILED, dst);
	memset(dst, 0xa5, map_len);

	/* 16 x 64 KiB: one helper for the window; none with copy_split_min 0. */
	ASSERT_EQ(0, set_param("copy_split_min", "524288"));
	rc_counts(&c0);
	win_one(_metadata, self, src, dst, WIN_SLOT, WIN_LEN, WIN_N, 100, 0xa5, 0);
	rc_counts(&c1);
	EXPECT_EQ(1, c1.split - c0.split);
	EXPECT_EQ(0, c1.redone - c0.redone);
	ASSERT_EQ(0, set_param("copy_split_min", "0"));
	win_one(_metadata, self, src, dst, WIN_SLOT, WIN_LEN, WIN_N, 200, 0xa5, 0);
	rc_counts(&c0);
	EXPECT_EQ(0, c0.split - c1.split);
	/* A window below the threshold altogether: no helper either. */
	ASSERT_EQ(0, set_param("copy_split_min", "524288"));
	win_one(_metadata, self, src, dst, WIN_SLOT, WIN_LEN, 4, 300, 0xa5, 0);
	rc_counts(&c1);
	EXPECT_EQ(0, c1.split - c0.split);
	/* Sends first: b's 16 receives, each taking a rendezvous, share one. */
	win_one(_metadata, self, src, dst, WIN_SLOT, WIN_LEN, WIN_N, 350, 0xa5, WIN_SENDS_FIRST);
	rc_counts(&c0);
	EXPECT_EQ(1, c0.split - c1.split);
	EXPECT_EQ(0, c0.redone - c1.redone);
	/* Iovecs on both sides, either way round: one helper each. */
	win_one(_metadata, self, src, dst, WIN_SLOT, WIN_LEN, WIN_N, 360, 0xa5, WIN_IOV);
	win_one(_metadata, self, src, dst, WIN_SLOT, WIN_LEN, WIN_N, 370, 0xa5,
		WIN_IOV | WIN_SENDS_FIRST);
	rc_counts(&c1);
	EXPECT_EQ(2, c1.split - c0.split);
	EXPECT_EQ(0, c1.redone - c0.redone);
	c0 = c1;

	/*
	 * Mixed: s0 (posted), s1 eager (posted), s2 (posted), s3 (tag 8:
	 * nothing posted, it waits as unexpected), s4 (posted).  Receives
	 * r0, r1, r2, r4 complete in that order by dp_submit()'s return; s3
	 * when b receives it.
	 */
	for (int i = 0; i < 5; i++)
		dp_test_fill(src + i * WIN_LEN, WIN_LEN, 400 + i);
	dp_prep_recv(&ops[0], self->b2a, 7, 0, dst + WIN_GAP, WIN_LEN, 10);
	dp_prep_recv(&ops[1], self->b2a, 7, 0, dst + WIN_GAP + WIN_SLOT, 8, 11);
	dp_prep_recv(&ops[2], self->b2a, 7, 0, dst + WIN_GAP + 2 * WIN_SLOT, WIN_LEN, 12);
	dp_prep_recv(&ops[3], self->b2a, 7, 0, dst + WIN_GAP + 4 * WIN_SLOT, WIN_LEN, 14);
	ASSERT_EQ(4, dp_submit(self->b, ops, 4));
	dp_prep_send(&ops[0], self->a2b, 7, src, WIN_LEN, 20);
	dp_prep_send(&ops[1], self->a2b, 7, src + WIN_LEN, 8, 21);
	dp_prep_send(&ops[2], self->a2b, 7, src + 2 * WIN_LEN, WIN_LEN, 22);
	dp_prep_send(&ops[3], self->a2b, 8, src + 3 * WIN_LEN, WIN_LEN, 23);
	dp_prep_send(&ops[4], self->a2b, 7, src + 4 * WIN_LEN, WIN_LEN, 24);
	ASSERT_EQ(5, dp_submit(self->a, ops, 5));
	win_expect(_metadata, self->a, 4, (const uint64_t[]){ 20, 21, 22, 24 }, NULL);
	win_expect(_metadata, self->b, 4, (const uint64_t[]){ 10, 11, 12, 14 }, mix_len);
	ASSERT_EQ(0, dp_recv(self->b, self->b2a, 8, 0, dst + WIN_GAP + 3 * WIN_SLOT, WIN_LEN, 13));
	ASSERT_EQ(1, wait1(self->b, &c[0]));
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(13, c[0].ctx);
	ASSERT_EQ(1, wait1(self->a, &c[0]));
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(23, c[0].ctx);
	for (int i = 0; i < 5; i++) {
		size_t len = i == 1 ? 8 : WIN_LEN;

		EXPECT_EQ(-1, dp_test_check(dst + WIN_GAP + i * WIN_SLOT, len, 400 + i))
			TH_LOG("message %d", i);
	}

	/*
	 * Mixed receives: m0 (rendezvous), m1 (eager, copied in at its send),
	 * m2 (rendezvous), nothing for r3 (tag 8: it is posted), m4
	 * (rendezvous).  r0, r1, r2, r4 complete in that order by
	 * dp_submit()'s return, and a's rendezvous sends with them; r3 when
	 * a sends it.
	 */
	for (int i = 0; i < 5; i++)
		dp_test_fill(src + i * WIN_LEN, WIN_LEN, 450 + i);
	memset(dst, 0xa5, map_len);
	dp_prep_send(&ops[0], self->a2b, 7, src, WIN_LEN, 30);
	dp_prep_send(&ops[1], self->a2b, 7, src + WIN_LEN, 8, 31);
	dp_prep_send(&ops[2], self->a2b, 7, src + 2 * WIN_LEN, WIN_LEN, 32);
	dp_prep_send(&ops[3], self->a2b, 7, src + 4 * WIN_LEN, WIN_LEN, 34);
	ASSERT_EQ(4, dp_submit(self->a, ops, 4));
	ASSERT_EQ(1, wait1(self->a, &c[0]));	/* the eager one */
	EXPECT_EQ(31, c[0].ctx);
	dp_prep_recv(&ops[0], self->b2a, 7, 0, dst + WIN_GAP, WIN_LEN, 40);
	dp_prep_recv(&ops[1], self->b2a, 7, 0, dst + WIN_GAP + WIN_SLOT, 8, 41);
	dp_prep_recv(&ops[2], self->b2a, 7, 0, dst + WIN_GAP + 2 * WIN_SLOT, WIN_LEN, 42);
	dp_prep_recv(&ops[3], self->b2a, 8, 0, dst + WIN_GAP + 3 * WIN_SLOT, WIN_LEN, 43);
	dp_prep_recv(&ops[4], self->b2a, 7, 0, dst + WIN_GAP + 4 * WIN_SLOT, WIN_LEN, 44);
	ASSERT_EQ(5, dp_submit(self->b, ops, 5));
	win_expect(_metadata, self->b, 4, (const uint64_t[]){ 40, 41, 42, 44 }, mix_len);
	win_expect(_metadata, self->a, 3, (const uint64_t[]){ 30, 32, 34 }, NULL);
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 8, src + 3 * WIN_LEN, WIN_LEN, 33));
	ASSERT_EQ(1, wait1(self->b, &c[0]));
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(43, c[0].ctx);
	ASSERT_EQ(1, wait1(self->a, &c[0]));
	EXPECT_EQ(33, c[0].ctx);
	for (int i = 0; i < 5; i++) {
		size_t len = i == 1 ? 8 : WIN_LEN;

		EXPECT_EQ(-1, dp_test_check(dst + WIN_GAP + i * WIN_SLOT, len, 450 + i))
			TH_LOG("message %d", i);
	}

	/*
	 * Receive buffers never touched: the helper cannot pin their pages;
	 * it stops at its first chunk, which the sender copies again, and
	 * claims nothing more (16 x 448 KiB: the sender's own chunks take
	 * long enough for the helper to have started).
	 */
	fresh = mmap(NULL, WIN_GAP + WIN_N * (WIN_BIG + WIN_GAP), PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, fresh);
	ASSERT_EQ(0, madvise(fresh, WIN_GAP + WIN_N * (WIN_BIG + WIN_GAP), MADV_NOHUGEPAGE));
	rc_counts(&c0);
	win_one(_metadata, self, src, fresh, WIN_BIG + WIN_GAP, WIN_BIG, WIN_N, 500, 0, 0);
	rc_counts(&c1);
	EXPECT_EQ(1, c1.split - c0.split);
	EXPECT_EQ(1, c1.redone - c0.redone);

	munmap(fresh, WIN_GAP + WIN_N * (WIN_BIG + WIN_GAP));

	/*
	 * 1 MiB messages share one helper per 8 MiB of a window; messages of
	 * 8 MiB and more get one each (none waits for the rest of its window).
	 */
	fresh = mmap(NULL, WIN_HUGE_MAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		     -1, 0);
	ASSERT_NE(MAP_FAILED, fresh);
	memset(fresh, 0xa5, WIN_HUGE_MAP);
	rc_counts(&c0);
	win_one(_metadata, self, src, fresh, (1 << 20) + WIN_GAP, 1 << 20, WIN_N, 600, 0xa5, 0);
	win_one(_metadata, self, src, fresh, (1 << 20) + WIN_GAP, 1 << 20, WIN_N, 650, 0xa5,
		WIN_SENDS_FIRST);
	rc_counts(&c1);
	EXPECT_EQ(4, c1.split - c0.split);
	memset(fresh, 0xa5, WIN_HUGE_MAP);
	win_one(_metadata, self, src, fresh, WIN_HUGE + WIN_GAP, WIN_HUGE, 3, 700, 0xa5, 0);
	win_one(_metadata, self, src, fresh, WIN_HUGE + WIN_GAP, WIN_HUGE, 3, 750, 0xa5,
		WIN_SENDS_FIRST);
	rc_counts(&c0);
	EXPECT_EQ(6, c0.split - c1.split);
	munmap(fresh, WIN_HUGE_MAP);

	snprintf(val, sizeof(val), "%ld", old);
	EXPECT_EQ(0, set_param("copy_split_min", val));
	munmap(dst, map_len);
	free(src);
}

/*
 * A posted receive of at least msg_reg_min bytes keeps its buffer
 * registered once the buffer comes back (kmod/msg.c msg_register(),
 * kmod/mr.c dmaplane_mr_cache_add_msg()): the first receive into a
 * buffer is remembered, the second pins the buffer's pages into an entry
 * of the process's registration cache ("msg_regs", "user_mrs",
 * "pinned_pages", VmPin), the sender's copies go through them
 * ("copies_cached"), and every later receive into the buffer finds the
 * entry ("msg_reg_hits") and pins nothing more.  So does a send queued
 * as a rendezvous (no receive posted yet), for its receiver's copy out
 * of it.  Not registered: a buffer below msg_reg_min, pages not mapped
 * (posting never faults them in), a buffer beyond mr_cache_msg_mb; these
 * entries together stay within mr_cache_msg_mb, least recently used
 * evicted first.  munmap() of a posted receive's buffer ends its entry:
 * the message then fails with -EFAULT at both ends.
 */
#define RR_LEN	(512UL << 10)

struct rr_counts {
	long regs, hits, mrs, pages, cached, pinned, vmpin;
};

static void rr_counts(struct rr_counts *c)
{
	c->regs = dp_test_stat("msg_regs");
	c->hits = dp_test_stat("msg_reg_hits");
	c->mrs = dp_test_stat("user_mrs");
	c->pages = dp_test_stat("pinned_pages");
	c->cached = dp_test_stat("copies_cached");
	c->pinned = dp_test_stat("copies_pinned");
	c->vmpin = vm_pin_kb();
}

/* The counters moved by these since @c0 (VmPin by @pages_). */
#define EXPECT_RR(c0, regs_, hits_, mrs_, pages_, cached_, pinned_) do {		\
	struct rr_counts c1_;								\
											\
	rr_counts(&c1_);								\
	EXPECT_EQ(regs_, c1_.regs - (c0).regs);						\
	EXPECT_EQ(hits_, c1_.hits - (c0).hits);						\
	EXPECT_EQ(mrs_, c1_.mrs - (c0).mrs);						\
	EXPECT_EQ(pages_, c1_.pages - (c0).pages);					\
	EXPECT_EQ((long)(pages_) * (long)dp_test_pgsz() / 1024, c1_.vmpin - (c0).vmpin); \
	EXPECT_EQ(cached_, c1_.cached - (c0).cached);					\
	EXPECT_EQ(pinned_, c1_.pinned - (c0).pinned);					\
} while (0)

static unsigned char *rr_map(size_t len, int touch)
{
	unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (touch)
		memset(p, 0x5a, len);
	return p;
}

/* Pages of [p, p + len). */
static long rr_pages(const void *p, size_t len)
{
	size_t pg = dp_test_pgsz();
	uintptr_t a = (uintptr_t)p;

	return (long)(((a + len + pg - 1) & ~(pg - 1)) - (a & ~(pg - 1))) / (long)pg;
}

/* One expected message of @len at @buf + @off, data checked. */
#define RR_ONE(buf, off, len, seed) do {						\
	int exact_ = 0;									\
											\
	EXPECT_EQ(0, rc_one(_metadata, self, buf, off, len, seed, &exact_));		\
	EXPECT_TRUE(exact_) TH_LOG("%zu bytes at %zu", (size_t)(len), (size_t)(off)); \
} while (0)

/* A receive into @buf posted and cancelled: a look at the cache only. */
#define RR_CANCELLED(buf, len, ctx) do {						\
	struct dmaplane_cqe cc_;							\
											\
	ASSERT_EQ(0, dp_recv(self->b, self->b2a, ctx, 0, buf, len, ctx));		\
	ASSERT_EQ(0, dp_cancel(self->b, ctx));						\
	ASSERT_EQ(1, wait1(self->b, &cc_));						\
	EXPECT_EQ(-ECANCELED, cc_.status);						\
} while (0)

TEST_F(pair, large_message_buffers_stay_registered)
{
	long min = read_param("msg_reg_min"), max_mb = read_param("mr_cache_msg_mb");
	long pg = dp_test_pgsz();
	unsigned char *buf, *fresh, *vec, *gone, *p[3], *src, *rbuf;
	struct rr_counts c0;
	struct dmaplane_cqe c;
	struct iovec iov[3];
	char val[32];
	int i;

	ASSERT_LE(0, dp_test_stat("msg_regs")) TH_LOG("no msg_regs counter");
	ASSERT_EQ(16384, min);
	ASSERT_LE(1, max_mb);
	srand(11);

	/* The first receive is remembered, the second registers. */
	buf = rr_map(RR_LEN, 1);
	ASSERT_NE(NULL, buf);
	rr_counts(&c0);
	RR_ONE(buf, 0, 200000, 1);
	EXPECT_RR(c0, 0, 0, 0, 0, 0, 1);
	rr_counts(&c0);
	RR_ONE(buf, 0, 200000, 2);
	EXPECT_RR(c0, 1, 0, 1, rr_pages(buf, 200000), 1, 0);

	/* Receives within it: found, nothing pinned. */
	rr_counts(&c0);
	for (i = 0; i < 20; i++) {
		size_t len = min + rand() % (100000 - min);
		size_t off = rand() % (200000 - len + 1);

		RR_ONE(buf, off, len, 100 + i);
	}
	EXPECT_RR(c0, 0, 20, 0, 0, 20, 0);

	/* Below msg_reg_min (across two pages: no recv_pin() either). */
	rr_counts(&c0);
	RR_ONE(buf, 300000, min - 1, 3);
	RR_ONE(buf, 300000, min - 1, 4);
	EXPECT_RR(c0, 0, 0, 0, 0, 0, 2);

	/*
	 * Not mapped: the second look pins nothing (posting never faults
	 * the buffer in; the copy does); once mapped, registered the next
	 * time round.
	 */
	fresh = rr_map(RR_LEN, 0);
	ASSERT_NE(NULL, fresh);
	rr_counts(&c0);
	RR_CANCELLED(fresh + 100, 100000, 5);
	RR_ONE(fresh, 100, 100000, 6);
	EXPECT_RR(c0, 0, 0, 0, 0, 0, 1);
	rr_counts(&c0);
	RR_CANCELLED(fresh + 100, 100000, 7);
	RR_ONE(fresh, 100, 100000, 8);
	EXPECT_RR(c0, 1, 0, 1, rr_pages(fresh + 100, 100000), 1, 0);

	/* An iovec: each range of at least msg_reg_min on its own. */
	vec = rr_map(RR_LEN, 1);
	ASSERT_NE(NULL, vec);
	iov[0] = (struct iovec){ vec + 10, 20000 };
	iov[1] = (struct iovec){ vec + 100000, 5000 };
	iov[2] = (struct iovec){ vec + 200000, 30000 };
	src = malloc(55000);
	ASSERT_NE(NULL, src);
	for (i = 0; i < 2; i++) {
		dp_test_fill(src, 55000, 9 + i);
		rr_counts(&c0);
		ASSERT_EQ(0, dp_recvv(self->b, self->b2a, 9, 0, iov, 3, 9));
		ASSERT_EQ(0, dp_send(self->a, self->a2b, 9, src, 55000, 9));
		ASSERT_EQ(1, wait1(self->b, &c));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(55000, c.len);
		EXPECT_EQ(0, memcmp(vec + 10, src, 20000));
		EXPECT_EQ(0, memcmp(vec + 100000, src + 20000, 5000));
		EXPECT_EQ(0, memcmp(vec + 200000, src + 25000, 30000));
		ASSERT_EQ(1, wait1(self->a, &c));
		EXPECT_EQ(0, c.status);
		if (!i)
			EXPECT_RR(c0, 0, 0, 0, 0, 0, 3);
		else
			EXPECT_RR(c0, 2, 0, 2,
				  rr_pages(vec + 10, 20000) + rr_pages(vec + 200000, 30000), 2, 1);
	}

	/*
	 * Rendezvous sends (no receive posted yet) of one buffer: the second
	 * registers it, the third finds it; each receive (which finds its
	 * message waiting, and registers nothing) copies out of it, through
	 * the entry once there is one.
	 */
	rbuf = rr_map(RR_LEN, 1);
	ASSERT_NE(NULL, rbuf);
	for (i = 0; i < 3; i++) {
		dp_test_fill(vec, 100000, 20 + i);
		rr_counts(&c0);
		ASSERT_EQ(0, dp_send(self->a, self->a2b, 20 + i, vec, 100000, 20 + i));
		EXPECT_RR(c0, i == 1, i == 2, i == 1, i == 1 ? rr_pages(vec, 100000) : 0, 0, 0);
		rr_counts(&c0);
		ASSERT_EQ(0, dp_recv(self->b, self->b2a, 20 + i, 0, rbuf, RR_LEN, 30 + i));
		ASSERT_EQ(1, wait1(self->b, &c));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(30 + i, c.ctx);
		EXPECT_EQ(100000, c.len);
		EXPECT_EQ(0, memcmp(rbuf, vec, 100000));
		ASSERT_EQ(1, wait1(self->a, &c));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(20 + i, c.ctx);
		EXPECT_RR(c0, 0, 0, 0, 0, !!i, !i);
	}

	/*
	 * munmap() of a posted receive's buffer: the entry goes with the
	 * pages, the message fails at both ends.
	 */
	gone = rr_map(RR_LEN, 1);
	ASSERT_NE(NULL, gone);
	RR_CANCELLED(gone, 100000, 11);
	rr_counts(&c0);
	ASSERT_EQ(0, dp_recv(self->b, self->b2a, 12, 0, gone, 100000, 12));
	EXPECT_RR(c0, 1, 0, 1, rr_pages(gone, 100000), 0, 0);
	ASSERT_EQ(0, munmap(gone, RR_LEN));
	EXPECT_EQ(c0.mrs, dp_test_stat_settled("user_mrs", c0.mrs, 5000));
	ASSERT_EQ(0, dp_send(self->a, self->a2b, 12, src, 50000, 12));
	ASSERT_EQ(1, wait1(self->b, &c));
	EXPECT_EQ(-EFAULT, c.status);
	EXPECT_EQ(12, c.ctx);
	ASSERT_EQ(1, wait1(self->a, &c));
	EXPECT_EQ(-EFAULT, c.status);
	EXPECT_RR(c0, 1, 0, 0, 0, 0, 1);

	/* msg_reg_min 0 turns it off. */
	ASSERT_EQ(0, set_param("msg_reg_min", "0"));
	rr_counts(&c0);
	for (i = 0; i < 3; i++)
		RR_ONE(vec, 300000, 100000, 13 + i);
	EXPECT_RR(c0, 0, 0, 0, 0, 0, 3);
	snprintf(val, sizeof(val), "%ld", min);
	ASSERT_EQ(0, set_param("msg_reg_min", val));

	/*
	 * mr_cache_msg_mb 1 (256 pages of 4 KiB): three buffers of 100
	 * pages, each received into twice; the second and third evict the
	 * oldest entries of messages (all those above and p[0]); p[1], used
	 * again, outlives p[2].
	 */
	ASSERT_EQ(0, set_param("mr_cache_msg_mb", "1"));
	for (i = 0; i < 3; i++) {
		p[i] = rr_map(RR_LEN, 1);
		ASSERT_NE(NULL, p[i]);
	}
	rr_counts(&c0);
	for (i = 0; i < 6; i++)
		RR_ONE(p[i / 2], 0, (1UL << 20) / 256 * 100, 20 + i);
	EXPECT_EQ(3, dp_test_stat("msg_regs") - c0.regs);
	if (pg == 4096) {
		/*
		 * Left of the entries (buf's 49 pages, fresh's 25, vec's 5, 9
		 * and 25, then p[0]'s 100 and p[1]'s): p[1] and p[2].
		 */
		EXPECT_EQ(c0.mrs - 3, dp_test_stat_settled("user_mrs", c0.mrs - 3, 5000));
		rr_counts(&c0);
		RR_ONE(p[1], 0, 50000, 30);
		EXPECT_RR(c0, 0, 1, 0, 0, 1, 0);
		/* p[0] again, twice: registered anew, in place of p[2]. */
		RR_ONE(p[0], 0, (1UL << 20) / 256 * 100, 31);
		RR_ONE(p[0], 0, (1UL << 20) / 256 * 100, 32);
		rr_counts(&c0);
		RR_ONE(p[1], 0, 50000, 33);
		RR_ONE(p[2], 0, 50000, 34);
		EXPECT_EQ(1, dp_test_stat("msg_reg_hits") - c0.hits);
		EXPECT_EQ(1, dp_test_stat("copies_cached") - c0.cached);
		EXPECT_EQ(1, dp_test_stat("copies_pinned") - c0.pinned);
	}
	/* A buffer beyond mr_cache_msg_mb alone is not registered. */
	rr_counts(&c0);
	{
		unsigned char *big = rr_map(2 * RR_LEN + 2 * 4096, 1);

		ASSERT_NE(NULL, big);
		for (i = 0; i < 2; i++) {
			ASSERT_EQ(0, dp_recv(self->b, self->b2a, 40, 0, big,
					     2 * RR_LEN + 4096, 40));
			ASSERT_EQ(0, dp_send(self->a, self->a2b, 40, src, 50000, 40));
			ASSERT_EQ(1, wait1(self->b, &c));
			EXPECT_EQ(0, c.status);
			EXPECT_EQ(50000, c.len);
			EXPECT_EQ(0, memcmp(big, src, 50000));
			ASSERT_EQ(1, wait1(self->a, &c));
			EXPECT_EQ(0, c.status);
		}
		munmap(big, 2 * RR_LEN + 2 * 4096);
	}
	EXPECT_EQ(0, dp_test_stat("msg_regs") - c0.regs);
	EXPECT_EQ(2, dp_test_stat("copies_pinned") - c0.pinned);
	snprintf(val, sizeof(val), "%ld", max_mb);
	ASSERT_EQ(0, set_param("mr_cache_msg_mb", val));

	for (i = 0; i < 3; i++)
		munmap(p[i], RR_LEN);
	munmap(vec, RR_LEN);
	munmap(rbuf, RR_LEN);
	munmap(fresh, RR_LEN);
	munmap(buf, RR_LEN);
	free(src);
}

/*
 * A process's entries for message buffers are charged to its
 * RLIMIT_MEMLOCK (VmPin) without CAP_IPC_LOCK: beyond the limit a
 * receive is posted without one (data exact all the same); an explicit
 * registration that needs the room evicts them.  Whatever a killed process kept registered this way
 * is unpinned and uncharged.
 */
static int rr_nobody(void *arg)
{
	struct rlimit rl = { .rlim_cur = 64 << 10, .rlim_max = 1 << 20 };
	struct dp_ep *a = dp_test_ep_new(0, 0), *b = dp_test_ep_new(0, 0);
	unsigned char *buf = rr_map(RR_LEN, 1), *reg = rr_map(1 << 20, 1);
	unsigned char src[100000];
	struct dmaplane_cqe c;
	uint32_t a2b, b2a;
	struct dp_mr *mr;

	(void)arg;
	if (!a || !b || !buf || !reg || dp_test_connect(a, b, &a2b) ||
	    dp_test_connect(b, a, &b2a))
		return 10;
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		return 11;
	dp_test_fill(src, sizeof(src), 21);
	/*
	 * Rounds 0 and 2 see the buffer first (round 1's failed attempt
	 * forgot it); round 1 is over the limit (nothing pinned), round 3
	 * within it (the buffer's 25 pages).
	 */
	for (int round = 0; round < 4; round++) {
		long want = round == 3 ? rr_pages(buf, sizeof(src)) * (long)dp_test_pgsz() / 1024 : 0;

		if (dp_recv(b, b2a, 1, 0, buf, sizeof(src), 1))
			return 12;
		if (vm_pin_kb() != want)
			return 20 + round;
		if (dp_send(a, a2b, 1, src, sizeof(src), 1) || wait1(b, &c) != 1 || c.status ||
		    wait1(a, &c) != 1 || c.status || memcmp(buf, src, sizeof(src)))
			return 15;
		rl.rlim_cur = round == 1 ? 1 << 20 : rl.rlim_cur;
		if (setrlimit(RLIMIT_MEMLOCK, &rl))
			return 16;
	}
	/* 1 MiB - 4 KiB registered: the receive's entry makes room. */
	if (dp_mr_reg(a, reg, (1 << 20) - 4096, DMAPLANE_ACCESS_LOCAL_WRITE, &mr))
		return 17;
	if (vm_pin_kb() != 1024 - 4)
		return 18;
	dp_mr_dereg(mr);
	dp_close(a);
	dp_close(b);
	return vm_pin_kb() ? 19 : 0;
}

TEST(message_buffer_registration_is_charged_and_released)
{
	long pages = dp_test_stat("pinned_pages"), mrs = dp_test_stat("user_mrs");
	long charged = dp_test_stat("charged_pages");
	struct dp_ep *rx = dp_test_ep_new(0, 0);
	struct dmaplane_name name;
	int pipefd[2], status;
	pid_t pid;

	ASSERT_EQ(0, as_user(65534, rr_nobody, NULL));
	EXPECT_EQ(pages, dp_test_stat_settled("pinned_pages", pages, 5000));

	/* A killed process's entries (two receives posted into each buffer). */
	ASSERT_NE(NULL, rx);
	ASSERT_EQ(0, dp_getname(rx, &name));
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct dp_ep *ep = dp_test_ep_new(0, 0);
		unsigned char *m = rr_map(8 * RR_LEN, 1);
		uint32_t addr;

		if (!ep || !m || dp_av_insert(ep, &name, &addr))
			_exit(1);
		for (int i = 0; i < 16; i++)
			dp_recv(ep, addr, i, 0, m + i / 2 * RR_LEN, RR_LEN, i);
		if (write(pipefd[1], "r", 1) != 1)
			_exit(2);
		pause();
		_exit(0);
	}
	{
		char x;

		ASSERT_EQ(1, read(pipefd[0], &x, 1));
	}
	EXPECT_EQ(mrs + 8, dp_test_stat("user_mrs"));
	EXPECT_EQ(pages + 8 * (long)(RR_LEN / dp_test_pgsz()), dp_test_stat("pinned_pages"));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(pages, dp_test_stat_settled("pinned_pages", pages, 5000));
	EXPECT_EQ(mrs, dp_test_stat_settled("user_mrs", mrs, 5000));
	EXPECT_EQ(charged, dp_test_stat_settled("charged_pages", charged, 5000));
	EXPECT_EQ(0, dp_test_stat("posted_recvs"));
	close(pipefd[0]);
	close(pipefd[1]);
	dp_close(rx);
}

TEST_HARNESS_MAIN

// SPDX-License-Identifier: GPL-2.0
/*
 * ABI 1.0 on one node: the ioctl numbers and layouts that are frozen,
 * operations that grow (dmaplane_submit.op_size), remote completion data
 * (DMAPLANE_OP_F_DATA) through every path a message takes (expected,
 * unexpected, rendezvous, probe and claim, truncation), the capability
 * bits, the library's version calls and its dp_prep_*() helpers.
 */
#include <stddef.h>
#include <sys/mman.h>

#include "dp_test.h"

#define EAGER 16384	/* the module's default eager_threshold */

FIXTURE(abi) {
	struct dp_ep *a, *b;	/* a sends to b */
	uint32_t a2b;
	uint64_t a_uid;
};

FIXTURE_SETUP(abi)
{
	self->a = dp_test_ep_new(0, 0);
	self->b = dp_test_ep_new(0, 0);
	ASSERT_NE(NULL, self->a);
	ASSERT_NE(NULL, self->b);
	ASSERT_EQ(0, dp_test_connect(self->a, self->b, &self->a2b));
	self->a_uid = dp_test_uid(self->a);
	ASSERT_NE(0, self->a_uid);
}

FIXTURE_TEARDOWN(abi)
{
	dp_close(self->a);
	dp_close(self->b);
}

/* Wait for @n completions of @ep, in any order, sorted by ctx into @c. */
static int take(struct dp_ep *ep, struct dmaplane_cqe *c, int n)
{
	struct dmaplane_cqe tmp[64];
	int got = 0;

	while (got < n) {
		int k = dp_wait(ep, tmp, n - got > 64 ? 64 : n - got, 10000);

		if (k <= 0)
			return k < 0 ? k : got;
		for (int i = 0; i < k; i++) {
			if (tmp[i].ctx >= (uint64_t)n)
				return -ERANGE;
			c[tmp[i].ctx] = tmp[i];
		}
		got += k;
	}
	return got;
}

TEST(layouts_and_numbers_are_frozen)
{
	EXPECT_EQ(0xDA, DMAPLANE_IOCTL_TYPE);
	EXPECT_EQ(0xDA, _IOC_TYPE(DMAPLANE_IOCTL_GET_INFO));
	EXPECT_EQ(0, _IOC_NR(DMAPLANE_IOCTL_GET_INFO));
	EXPECT_EQ(12, _IOC_NR(DMAPLANE_IOCTL_SUBMIT));
	EXPECT_EQ(14, _IOC_NR(DMAPLANE_IOCTL_CANCEL));
	EXPECT_EQ(DMAPLANE_OP_SIZE_V1, sizeof(struct dmaplane_op));
	EXPECT_EQ(DMAPLANE_OP_SIZE_V0, offsetof(struct dmaplane_op, data));
	EXPECT_EQ(24, sizeof(struct dmaplane_submit));
	EXPECT_EQ(20, offsetof(struct dmaplane_submit, op_size));
	EXPECT_EQ(64, sizeof(struct dmaplane_cqe));
	EXPECT_EQ(40, offsetof(struct dmaplane_cqe, data));
	EXPECT_EQ(53, offsetof(struct dmaplane_cqe, flags));
	EXPECT_EQ(56, offsetof(struct dmaplane_cqe, src_av));
	EXPECT_EQ(64, sizeof(struct dmaplane_probe));
	EXPECT_EQ(40, offsetof(struct dmaplane_probe, data));
	EXPECT_EQ(56, offsetof(struct dmaplane_probe, src_av));
}

TEST(ring_describes_its_entries)
{
	struct dmaplane_ep_setup setup = { .cq_entries = 64 };
	struct dmaplane_cq_ring *ring;
	int fd = open(DP_DEV, O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, dp_test_ioctl(fd, DMAPLANE_IOCTL_EP_SETUP, &setup));
	ring = mmap(NULL, setup.ring_size, PROT_READ, MAP_SHARED, fd,
		    DMAPLANE_CQ_RING_OFFSET);
	ASSERT_NE(MAP_FAILED, ring);
	EXPECT_EQ(sizeof(struct dmaplane_cqe), ring->entry_size);
	EXPECT_EQ(64, ring->entries);
	EXPECT_EQ(0, ring->entries_offset % 64);
	EXPECT_LE(ring->entries_offset + 64 * ring->entry_size, setup.ring_size);
	munmap(ring, setup.ring_size);
	close(fd);
}

TEST_F(abi, capabilities_and_library_version)
{
	struct dmaplane_info info;

	ASSERT_EQ(0, dp_info(self->a, &info));
	EXPECT_LE(1, info.abi_version);
	EXPECT_TRUE(info.caps & DMAPLANE_CAP_CQ_DATA);
	EXPECT_TRUE(info.caps & DMAPLANE_CAP_SRC_AV);
	EXPECT_TRUE(info.caps & DMAPLANE_CAP_MSG);
	EXPECT_EQ(DP_VERSION_MAJOR, dp_version_major());
	EXPECT_EQ(DP_VERSION_MINOR, dp_version_minor());
	EXPECT_EQ(1, DP_VERSION_MAJOR);
	EXPECT_EQ(0, dp_check_version(1, 0));
	EXPECT_EQ(0, dp_check_version(DP_VERSION_MAJOR, DP_VERSION_MINOR));
	EXPECT_EQ(-ENOTSUP, dp_check_version(1, DP_VERSION_MINOR + 1));
	EXPECT_EQ(-ENOTSUP, dp_check_version(2, 0));
	EXPECT_EQ(-ENOTSUP, dp_check_version(0, 0));
	EXPECT_EQ(-ENOTSUP, dp_check_version(1, -1));
}

/*
 * Submit two sends of @size bytes each (the stride) to @self->b, with
 * completion data when the size has room for it; b receives both and
 * sees the data.
 */
static void sends_of_size(struct __test_metadata *_metadata,
			  FIXTURE_DATA(abi) *self, uint32_t size, uint32_t op_size)
{
	uint64_t data = 0x0123456789abcdefull ^ size;
	struct dmaplane_submit sub = { 0 };
	unsigned char *ops = calloc(2, size);
	struct dmaplane_cqe c[2];
	char src[2][32], dst[2][32];
	int with_data = size >= DMAPLANE_OP_SIZE_V1;

	ASSERT_NE(NULL, ops);
	for (int i = 0; i < 2; i++) {
		struct dmaplane_op op;

		dp_test_fill(src[i], sizeof(src[i]), size * 2 + i);
		if (with_data)
			dp_prep_send_data(&op, self->a2b, 40 + i, src[i], sizeof(src[i]),
					  data + i, i);
		else
			dp_prep_send(&op, self->a2b, 40 + i, src[i], sizeof(src[i]), i);
		memcpy(ops + i * size, &op, size < sizeof(op) ? size : sizeof(op));
		ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 40 + i, 0, dst[i], sizeof(dst[i]),
				     i));
	}
	sub.ops = (uintptr_t)ops;
	sub.nr = 2;
	sub.op_size = op_size;
	ASSERT_EQ(0, dp_test_ioctl(dp_fd(self->a), DMAPLANE_IOCTL_SUBMIT, &sub))
		TH_LOG("op_size %u", op_size);
	EXPECT_EQ(2, sub.done);
	ASSERT_EQ(2, take(self->b, c, 2));
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(40 + i, c[i].tag);
		EXPECT_EQ(self->a_uid, c[i].src);
		EXPECT_EQ(with_data ? DMAPLANE_CQE_F_DATA : 0, c[i].flags) TH_LOG("size %u", size);
		EXPECT_EQ(with_data ? data + i : 0, c[i].data);
		EXPECT_EQ(0, memcmp(src[i], dst[i], sizeof(src[i])));
	}
	ASSERT_EQ(2, take(self->a, c, 2));
	EXPECT_EQ(0, c[0].flags);
	EXPECT_EQ(0, c[0].data);
	free(ops);
}

TEST_F(abi, operations_of_every_known_size)
{
	sends_of_size(_metadata, self, DMAPLANE_OP_SIZE_V0, 0);
	sends_of_size(_metadata, self, DMAPLANE_OP_SIZE_V0, DMAPLANE_OP_SIZE_V0);
	sends_of_size(_metadata, self, DMAPLANE_OP_SIZE_V1, DMAPLANE_OP_SIZE_V1);
	/* A newer program's larger operation, its new fields zero. */
	sends_of_size(_metadata, self, 88, 88);
	sends_of_size(_metadata, self, 4096, 4096);
}

TEST_F(abi, bad_operation_sizes_and_data_rejected)
{
	unsigned char big[2 * 96];
	struct dmaplane_submit sub;
	struct dmaplane_op op;
	int fd = dp_fd(self->a);
	char buf[8] = "abcdefg";

	dp_prep_send(&op, self->a2b, 1, buf, sizeof(buf), 1);
	memset(&sub, 0, sizeof(sub));
	sub.ops = (uintptr_t)&op;
	sub.nr = 1;
#define SIZE_ERR(err, size) do {						\
		sub.op_size = size;						\
		EXPECT_EQ(err, dp_test_ioctl(fd, DMAPLANE_IOCTL_SUBMIT, &sub))	\
			TH_LOG("op_size %u", (unsigned int)(size));		\
	} while (0)
	SIZE_ERR(-EINVAL, 8);
	SIZE_ERR(-EINVAL, DMAPLANE_OP_SIZE_V0 - 8);
	SIZE_ERR(-EINVAL, DMAPLANE_OP_SIZE_V0 + 4);	/* not a multiple of 8 */
	SIZE_ERR(-EINVAL, 8192);			/* beyond a page */
	SIZE_ERR(-EINVAL, 0xfffffff8u);

	/* Bytes beyond what the kernel knows must be zero. */
	memset(big, 0, sizeof(big));
	memcpy(big, &op, sizeof(op));
	big[DMAPLANE_OP_SIZE_V1 + 3] = 1;
	sub.ops = (uintptr_t)big;
	SIZE_ERR(-E2BIG, 96);
	/* The second one's tail: the first is accepted, then it stops. */
	memset(big, 0, sizeof(big));
	memcpy(big, &op, sizeof(op));
	memcpy(big + 96, &op, sizeof(op));
	big[96 + 95] = 0x80;
	sub.nr = 2;
	sub.op_size = 96;
	EXPECT_EQ(0, dp_test_ioctl(fd, DMAPLANE_IOCTL_SUBMIT, &sub));
	EXPECT_EQ(1, sub.done);
	sub.done = 0;
	sub.nr = 1;
	sub.ops = (uintptr_t)(big + 96);
	SIZE_ERR(-E2BIG, 96);

	/* Completion data: only on a SEND, only with its flag, only in V1. */
	sub.ops = (uintptr_t)&op;
	op.flags = DMAPLANE_OP_F_DATA;
	op.data = 5;
	SIZE_ERR(-EINVAL, DMAPLANE_OP_SIZE_V0);	/* V0 has no data field */
	op.flags = 0;
	SIZE_ERR(-EINVAL, DMAPLANE_OP_SIZE_V1);	/* data without the flag */
	op.opcode = DMAPLANE_OP_RECV;
	op.flags = DMAPLANE_OP_F_DATA;
	SIZE_ERR(-EINVAL, DMAPLANE_OP_SIZE_V1);
	op.opcode = DMAPLANE_OP_PUT;
	op.rkey = 1;
	SIZE_ERR(-EINVAL, DMAPLANE_OP_SIZE_V1);
	op.opcode = DMAPLANE_OP_GET;
	SIZE_ERR(-EINVAL, DMAPLANE_OP_SIZE_V1);
	op.opcode = DMAPLANE_OP_SEND;
	op.rkey = 0;
	op.flags = DMAPLANE_OP_F_DATA | 0x80;
	SIZE_ERR(-EINVAL, DMAPLANE_OP_SIZE_V1);
#undef SIZE_ERR

	/* The one send accepted above is queued at b: nothing else. */
	{
		struct dmaplane_cqe c[2];

		ASSERT_EQ(1, dp_wait(self->a, c, 2, 10000));
		EXPECT_EQ(0, c[0].status);
		ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 0, ~0ull, buf, sizeof(buf), 0));
		ASSERT_EQ(1, dp_wait(self->b, c, 2, 10000));
		EXPECT_EQ(0, c[0].flags);
		EXPECT_EQ(0, dp_poll(self->b, c, 2));
	}
}

/*
 * A message of @len bytes with completion data @data from a to b, by the
 * path @posted (the receive waits) or not (the message waits, probed
 * first); b's buffer holds @rlen bytes.
 */
static void data_path(struct __test_metadata *_metadata, FIXTURE_DATA(abi) *self,
		      uint64_t len, uint64_t rlen, int posted, uint64_t data)
{
	char *src = malloc(len + 1), *dst = malloc(rlen + 1);
	struct dmaplane_probe pr;
	struct dmaplane_cqe c[2];
	struct dmaplane_op op;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, dst);
	dp_test_fill(src, len, data);
	if (posted)
		ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 7, 0, dst, rlen, 0));
	dp_prep_send_data(&op, self->a2b, 7, src, len, data, 0);
	ASSERT_EQ(1, dp_submit(self->a, &op, 1));
	if (!posted) {
		/* The message waits: a probe sees its data, then a claim. */
		for (int i = 0; i < 1000; i++) {
			if (dp_probe(self->b, DP_ANY_SRC, 7, 0, 0, &pr) != -EAGAIN)
				break;
			usleep(1000);
		}
		ASSERT_EQ(0, dp_probe(self->b, DP_ANY_SRC, 7, 0, 0, &pr));
		EXPECT_EQ(DMAPLANE_CQE_F_DATA, pr.cqe_flags);
		EXPECT_EQ(data, pr.data);
		EXPECT_EQ(len, pr.len);
		ASSERT_EQ(0, dp_probe(self->b, DP_ANY_SRC, 7, 0, DMAPLANE_PROBE_CLAIM, &pr));
		EXPECT_EQ(data, pr.data);
		ASSERT_EQ(0, dp_recv_claimed(self->b, pr.claim, dst, rlen, 0));
	}
	ASSERT_EQ(1, take(self->b, c, 1));
	EXPECT_EQ(rlen < len ? -EMSGSIZE : 0, c[0].status);
	EXPECT_EQ(DMAPLANE_CQE_F_DATA, c[0].flags);	/* b has no handle of a */
	EXPECT_EQ(0, c[0].src_av);
	EXPECT_EQ(data, c[0].data);
	EXPECT_EQ(len, c[0].msg_len);
	EXPECT_EQ(rlen < len ? rlen : len, c[0].len);
	EXPECT_EQ(self->a_uid, c[0].src);
	EXPECT_EQ(-1, dp_test_check(dst, rlen < len ? rlen : len, data));
	ASSERT_EQ(1, take(self->a, c, 1));
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(0, c[0].flags);
	free(src);
	free(dst);
}

TEST_F(abi, completion_data_eager_posted)
{
	data_path(_metadata, self, 100, 100, 1, 0xfeedface00000001ull);
	data_path(_metadata, self, 0, 0, 1, 0);	/* zero data still flagged */
}

TEST_F(abi, completion_data_eager_unexpected_probe_claim)
{
	data_path(_metadata, self, 1000, 1000, 0, ~0ull);
}

TEST_F(abi, completion_data_rendezvous_posted)
{
	data_path(_metadata, self, 4 * EAGER + 3, 4 * EAGER + 3, 1, 0x8000000000000000ull);
}

TEST_F(abi, completion_data_rendezvous_unexpected_probe_claim)
{
	data_path(_metadata, self, 4 * EAGER, 4 * EAGER, 0, 42);
}

TEST_F(abi, completion_data_truncated)
{
	data_path(_metadata, self, 200, 64, 1, 7);
	data_path(_metadata, self, 200, 64, 0, 8);
	data_path(_metadata, self, 3 * EAGER, EAGER, 1, 9);
	data_path(_metadata, self, 3 * EAGER, EAGER, 0, 10);
}

/* Send one message a -> b; return b's completion (and probe first). */
static void one_message(struct __test_metadata *_metadata, FIXTURE_DATA(abi) *self,
			struct dmaplane_cqe *c, struct dmaplane_probe *pr)
{
	struct dmaplane_cqe s;
	char buf[16] = "src_av";

	ASSERT_EQ(0, dp_send(self->a, self->a2b, 3, buf, sizeof(buf), 0));
	ASSERT_EQ(1, dp_wait(self->a, &s, 1, 10000));
	ASSERT_EQ(0, dp_probe(self->b, DP_ANY_SRC, 3, 0, 0, pr));
	ASSERT_EQ(0, dp_recv(self->b, DP_ANY_SRC, 3, 0, buf, sizeof(buf), 0));
	ASSERT_EQ(1, dp_wait(self->b, c, 1, 10000));
	ASSERT_EQ(0, c->status);
	EXPECT_EQ(self->a_uid, c->src);
}

/*
 * FI_SOURCE: a receive completion (and a probe) names the sender by the
 * receiver's own address handle when it has one: the first inserted,
 * then the lowest-numbered one left; none once all are removed.
 */
TEST_F(abi, source_as_receivers_address_handle)
{
	struct dmaplane_probe pr;
	struct dmaplane_cqe c;
	struct dp_ep *other;
	uint32_t h1, h2, h3, hx;

	one_message(_metadata, self, &c, &pr);
	EXPECT_EQ(0, c.flags & DMAPLANE_CQE_F_SRC_AV);
	EXPECT_EQ(0, c.src_av);
	EXPECT_EQ(0, pr.cqe_flags & DMAPLANE_CQE_F_SRC_AV);

	/* An unrelated handle first, so that the sender's is not 0. */
	other = dp_test_ep_new(0, 0);
	ASSERT_NE(NULL, other);
	ASSERT_EQ(0, dp_test_connect(self->b, other, &hx));
	ASSERT_EQ(0, dp_test_connect(self->b, self->a, &h1));
	ASSERT_EQ(0, dp_test_connect(self->b, self->a, &h2));
	ASSERT_EQ(0, dp_test_connect(self->b, self->a, &h3));
	ASSERT_NE(hx, h1);
	one_message(_metadata, self, &c, &pr);
	EXPECT_EQ(DMAPLANE_CQE_F_SRC_AV, c.flags);
	EXPECT_EQ(h1, c.src_av);
	EXPECT_EQ(DMAPLANE_CQE_F_SRC_AV, pr.cqe_flags);
	EXPECT_EQ(h1, pr.src_av);
	ASSERT_EQ(0, dp_av_remove(self->b, h2));
	one_message(_metadata, self, &c, &pr);
	EXPECT_EQ(h1, c.src_av);
	ASSERT_EQ(0, dp_av_remove(self->b, h1));
	one_message(_metadata, self, &c, &pr);
	EXPECT_EQ(DMAPLANE_CQE_F_SRC_AV, c.flags);
	EXPECT_EQ(h3, c.src_av);
	EXPECT_EQ(h3, pr.src_av);
	ASSERT_EQ(0, dp_av_remove(self->b, h3));
	EXPECT_EQ(-ENOENT, dp_av_remove(self->b, h3));
	one_message(_metadata, self, &c, &pr);
	EXPECT_EQ(0, c.flags);
	EXPECT_EQ(0, c.src_av);
	EXPECT_EQ(0, pr.cqe_flags);
	EXPECT_EQ(0, pr.src_av);
	/* The other handle still names the other endpoint only. */
	ASSERT_EQ(0, dp_test_connect(self->b, self->a, &h1));
	one_message(_metadata, self, &c, &pr);
	EXPECT_EQ(h1, c.src_av);
	dp_close(other);
}

/* A batch of dp_prep_*(): receives first, then sends, some with data. */
TEST_F(abi, prep_helpers_in_one_batch)
{
	enum { N = 32 };
	struct dmaplane_op rops[N], sops[N];
	struct dmaplane_cqe c[N];
	uint64_t src[N], dst[N];

	for (int i = 0; i < N; i++) {
		src[i] = 0x1000 + i;
		dst[i] = 0;
		dp_prep_recv(&rops[i], DP_ANY_SRC, 100 + i, 0, &dst[i], sizeof(dst[i]), i);
		if (i % 2)
			dp_prep_send_data(&sops[i], self->a2b, 100 + i, &src[i],
					  sizeof(src[i]), 0xd0d0 + i, i);
		else
			dp_prep_send(&sops[i], self->a2b, 100 + i, &src[i], sizeof(src[i]), i);
	}
	ASSERT_EQ(N, dp_submit(self->b, rops, N));
	ASSERT_EQ(N, dp_submit(self->a, sops, N));
	ASSERT_EQ(N, take(self->b, c, N));
	for (int i = 0; i < N; i++) {
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(100 + i, c[i].tag);
		EXPECT_EQ(src[i], dst[i]);
		EXPECT_EQ(i % 2 ? DMAPLANE_CQE_F_DATA : 0, c[i].flags);
		EXPECT_EQ(i % 2 ? 0xd0d0 + i : 0, c[i].data);
	}
	ASSERT_EQ(N, take(self->a, c, N));
}

TEST_F(abi, prep_put_get_and_flags)
{
	uint64_t region[8], local[8], back[8];
	struct dmaplane_op ops[2];
	struct dmaplane_cqe c[2];
	struct dp_mr *mr;
	uint32_t a2b;

	for (int i = 0; i < 8; i++) {
		region[i] = 0;
		local[i] = 0xabc000 + i;
		back[i] = 0;
	}
	ASSERT_EQ(0, dp_mr_reg(self->b, region, sizeof(region), DMAPLANE_ACCESS_ALL, &mr));
	a2b = self->a2b;
	dp_prep_put(&ops[0], a2b, dp_mr_key(mr), 0, local, sizeof(local), 0);
	ASSERT_EQ(1, dp_submit(self->a, ops, 1));
	ASSERT_EQ(1, take(self->a, c, 1));
	EXPECT_EQ(0, c[0].status);
	dp_prep_get(&ops[1], a2b, dp_mr_key(mr), 8, back, sizeof(back) - 8, 1);
	EXPECT_EQ(DMAPLANE_OP_GET, ops[1].opcode);
	EXPECT_EQ(8, ops[1].roffset);
	ASSERT_EQ(1, dp_submit(self->a, &ops[1], 1));
	ASSERT_EQ(1, dp_wait(self->a, c, 2, 10000));
	EXPECT_EQ(1, c[0].ctx);
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(0, memcmp(back, local + 1, sizeof(back) - 8));
	dp_prep_send(&ops[0], a2b, 1, local, 1, 0);
	dp_prep_set_flags(&ops[0], DMAPLANE_OP_F_IOV);
	EXPECT_EQ(DMAPLANE_OP_F_IOV, ops[0].flags);
	EXPECT_EQ(0, ops[0].data);
	ASSERT_EQ(0, dp_mr_dereg(mr));
}

/*
 * A PUT with data completes on the target's ring too (fi_writedata): the
 * exact completion, with and without a handle of the initiator, zero
 * bytes, and the rejected forms.
 */
TEST_F(abi, put_with_data_completes_at_target)
{
	uint64_t region[64], local[64];
	struct dmaplane_submit sub = { 0 };
	struct dmaplane_info info;
	struct dmaplane_cqe c;
	struct dmaplane_op op;
	struct dp_mr *mr;
	uint32_t b2a = 0;

	ASSERT_EQ(0, dp_info(self->a, &info));
	ASSERT_TRUE(info.caps & DMAPLANE_CAP_PUT_DATA);
	memset(region, 0, sizeof(region));
	dp_test_fill(local, sizeof(local), 61);
	ASSERT_EQ(0, dp_mr_reg(self->b, region, sizeof(region), DMAPLANE_ACCESS_ALL, &mr));
	for (int round = 0; round < 3; round++) {
		uint64_t len = round == 2 ? 0 : sizeof(local) - 8;

		if (round == 1)		/* b knows a now: the completion names it */
			ASSERT_EQ(0, dp_test_connect(self->b, self->a, &b2a));
		dp_prep_put(&op, self->a2b, dp_mr_key(mr), 8, local, len, 40 + round);
		op.flags |= DMAPLANE_OP_F_DATA;
		op.data = 0xfeed000000000000ull + round;
		ASSERT_EQ(1, dp_submit(self->a, &op, 1));
		ASSERT_EQ(1, dp_wait(self->a, &c, 1, 10000));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(40 + round, c.ctx);
		EXPECT_EQ(DMAPLANE_OP_PUT, c.opcode);
		EXPECT_EQ(0, c.flags);		/* the initiator's own: no data */
		ASSERT_EQ(1, dp_wait(self->b, &c, 1, 10000));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(0, c.ctx);
		EXPECT_EQ(DMAPLANE_OP_PUT, c.opcode);
		EXPECT_EQ(DMAPLANE_CQE_F_DATA | DMAPLANE_CQE_F_REMOTE |
			  (round ? DMAPLANE_CQE_F_SRC_AV : 0), c.flags);
		EXPECT_EQ(0xfeed000000000000ull + round, c.data);
		EXPECT_EQ(len, c.len);
		EXPECT_EQ(self->a_uid, c.src);
		EXPECT_EQ(round ? b2a : 0, c.src_av);
		EXPECT_EQ(0, dp_poll(self->b, &c, 1));
	}
	EXPECT_EQ(0, region[0]);
	EXPECT_EQ(0, memcmp(region + 1, local, sizeof(local) - 8));
	/* A plain PUT leaves the target's ring alone. */
	dp_prep_put(&op, self->a2b, dp_mr_key(mr), 0, local, 8, 1);
	ASSERT_EQ(1, dp_submit(self->a, &op, 1));
	ASSERT_EQ(1, dp_wait(self->a, &c, 1, 10000));
	EXPECT_EQ(0, dp_wait(self->b, &c, 1, 100));
	/* Data on a GET, data without its flag, data in a 72-byte op. */
	dp_prep_get(&op, self->a2b, dp_mr_key(mr), 0, local, 8, 1);
	op.flags |= DMAPLANE_OP_F_DATA;
	EXPECT_EQ(-EINVAL, dp_submit(self->a, &op, 1));
	dp_prep_put(&op, self->a2b, dp_mr_key(mr), 0, local, 8, 1);
	op.data = 5;
	EXPECT_EQ(-EINVAL, dp_submit(self->a, &op, 1));
	op.flags |= DMAPLANE_OP_F_DATA;
	op.data = 0;
	sub.ops = (uintptr_t)&op;
	sub.nr = 1;
	sub.op_size = DMAPLANE_OP_SIZE_V0;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(dp_fd(self->a), DMAPLANE_IOCTL_SUBMIT, &sub));
	ASSERT_EQ(0, dp_mr_dereg(mr));
}

/*
 * The target's ring must have room: a PUT with data into a full one
 * writes nothing and fails with -EAGAIN; every accepted one completes.
 */
TEST_F(abi, put_with_data_into_full_target_ring)
{
	uint64_t region[4] = { 0 }, v;
	struct dmaplane_cqe c;
	struct dmaplane_op op;
	struct dp_ep *t = dp_test_ep_new(0, 16);
	struct dp_mr *mr;
	uint32_t a2t;
	int n = 0, ret;

	ASSERT_NE(NULL, t);
	ASSERT_EQ(0, dp_test_connect(self->a, t, &a2t));
	ASSERT_EQ(0, dp_mr_reg(t, region, sizeof(region), DMAPLANE_ACCESS_ALL, &mr));
	for (;;) {
		v = 1000 + n;
		dp_prep_put(&op, a2t, dp_mr_key(mr), 0, &v, sizeof(v), n);
		op.flags |= DMAPLANE_OP_F_DATA;
		op.data = n;
		ret = dp_submit(self->a, &op, 1);
		if (ret != 1)
			break;
		ASSERT_EQ(1, dp_wait(self->a, &c, 1, 10000));
		ASSERT_EQ(0, c.status);
		ASSERT_LT(++n, 1000);
	}
	EXPECT_EQ(-EAGAIN, ret);
	EXPECT_EQ(16, n);
	EXPECT_EQ(1000 + n - 1, region[0]);	/* the refused one wrote nothing */
	for (int i = 0; i < n; i++) {
		ASSERT_EQ(1, dp_wait(t, &c, 1, 10000));
		EXPECT_EQ(i, c.data);
		EXPECT_EQ(DMAPLANE_CQE_F_DATA | DMAPLANE_CQE_F_REMOTE, c.flags);
	}
	EXPECT_EQ(0, dp_poll(self->a, &c, 1));
	ASSERT_EQ(0, dp_mr_dereg(mr));
	dp_close(t);
}

TEST_HARNESS_MAIN

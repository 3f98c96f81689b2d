// SPDX-License-Identifier: GPL-2.0
/*
 * Submission through io_uring (IORING_OP_URING_CMD with
 * DMAPLANE_URING_CMD_SUBMIT), with and without IORING_SETUP_SQPOLL:
 * send/recv with data checked and exact completions, a batch of 64, the
 * send made without a system call (SQPOLL), every malformed command with
 * its errno, a full ring, and rings of another address space refused as
 * DMAPLANE_IOCTL_SUBMIT refuses them.
 */
#include <liburing.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "dp_test.h"

#define EAGER 16384	/* the module's default eager_threshold */
#define BATCH 64
#define MARK 1000	/* added to io_uring's own errors: never a count */

FIXTURE(uring) {
	struct dp_ep *a, *b;	/* a sends to b */
	uint32_t a2b, b2a;
	struct io_uring ring;
	const char *skip;	/* why the ring could not be set up */
};

FIXTURE_VARIANT(uring) {
	unsigned int setup_flags;
};

FIXTURE_VARIANT_ADD(uring, plain) {
	.setup_flags = 0,
};

FIXTURE_VARIANT_ADD(uring, sqpoll) {
	.setup_flags = IORING_SETUP_SQPOLL,
};

/* A ring of @flags, or -errno (-ENOSYS, -EPERM: no io_uring for us). */
static int ring_init(struct io_uring *ring, unsigned int flags)
{
	struct io_uring_params p = { .flags = flags };

	/* Long enough that the SQPOLL thread stays awake through a test. */
	if (flags & IORING_SETUP_SQPOLL)
		p.sq_thread_idle = 2000;
	return io_uring_queue_init_params(16, ring, &p);
}

FIXTURE_SETUP(uring)
{
	struct dmaplane_info info;
	int ret;

	self->a = dp_test_ep_new(0, 256);
	self->b = dp_test_ep_new(0, 256);
	ASSERT_NE(NULL, self->a);
	ASSERT_NE(NULL, self->b);
	ASSERT_EQ(0, dp_test_connect(self->a, self->b, &self->a2b));
	ASSERT_EQ(0, dp_test_connect(self->b, self->a, &self->b2a));
	ASSERT_EQ(0, dp_info(self->a, &info));

	self->skip = NULL;
	ret = ring_init(&self->ring, variant->setup_flags);
	if (ret == -ENOSYS || ret == -EPERM) {
		/* No io_uring: the module must not claim the command either. */
		if (ret == -ENOSYS)
			EXPECT_EQ(0, info.caps & DMAPLANE_CAP_URING_CMD);
		self->skip = ret == -ENOSYS ? "no io_uring in this kernel (ENOSYS)" :
					      "io_uring setup not permitted (EPERM)";
		return;
	}
	ASSERT_EQ(0, ret);
	ASSERT_TRUE(info.caps & DMAPLANE_CAP_URING_CMD);
}

FIXTURE_TEARDOWN(uring)
{
	if (!self->skip)
		io_uring_queue_exit(&self->ring);
	dp_close(self->a);
	dp_close(self->b);
	EXPECT_EQ(0, dp_test_stat("posted_recvs"));
	EXPECT_EQ(0, dp_test_stat("unexp_msgs"));
}

#define NEED_RING() do {						\
	if (self->skip)							\
		SKIP(return, "%s", self->skip);				\
} while (0)

/*
 * Issue @sqe's command (already filled in the ring) and wait for its CQE.
 * Returns the CQE's res, or MARK + a failure of io_uring itself.
 */
static int ring_run(struct io_uring *ring, struct io_uring_sqe *sqe)
{
	struct io_uring_cqe *cqe;
	int ret;

	io_uring_sqe_set_data64(sqe, 0xd0d0);
	/*
	 * With SQPOLL this counts the SQ ring's entries the kernel has not
	 * marked consumed yet: the thread posts a CQE before it moves the
	 * ring's head, so the previous entry may still be counted.
	 */
	ret = io_uring_submit(ring);
	if (ret < 1)
		return MARK + 1;
	if (io_uring_wait_cqe(ring, &cqe))
		return MARK + 2;
	ret = cqe->user_data == 0xd0d0 ? cqe->res : MARK + 3;
	io_uring_cqe_seen(ring, cqe);
	return ret;
}

/* Submit @nr operations through the library's helper: the CQE's res. */
static int usubmit(struct io_uring *ring, struct dp_ep *ep,
		   const struct dmaplane_op *ops, unsigned int nr)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return MARK + 4;
	dp_prep_uring_submit(sqe, dp_fd(ep), ops, nr);
	return ring_run(ring, sqe);
}

/* A raw command: any cmd_op and command area. */
static int ucmd(struct io_uring *ring, struct dp_ep *ep, uint32_t cmd_op,
		uint64_t ops, uint32_t nr, uint16_t op_size, uint16_t flags)
{
	struct dmaplane_uring_submit cmd = {
		.ops = ops, .nr = nr, .op_size = op_size, .flags = flags,
	};
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		return MARK + 4;
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = dp_fd(ep);
	sqe->cmd_op = cmd_op;
	memcpy(sqe->cmd, &cmd, sizeof(cmd));
	return ring_run(ring, sqe);
}

static const uint64_t sizes[] = {
	0, 1, 8, 4095, 4096, EAGER, EAGER + 1, 100000, 1 << 20,
};

/*
 * One message of each size through the ring, the receive posted first
 * (it completes in the sender's submission) or after (eager: unexpected;
 * larger: rendezvous): random data arrives intact, nothing beyond the
 * message is written, and both completions are exact.
 */
TEST_F(uring, send_recv_exact)
{
	NEED_RING();
	for (unsigned int i = 0; i < 2 * sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t len = sizes[i / 2], tag = 0xabcd000000000000ull | i;
		int expected = i & 1;
		char *src = malloc(len + 1), *dst = malloc(len + 64);
		struct dmaplane_op s, r;
		struct dmaplane_cqe c;

		ASSERT_NE(NULL, src);
		ASSERT_NE(NULL, dst);
		dp_test_fill(src, len, 1000 + i);
		memset(dst, 0x5a, len + 64);
		dp_prep_send(&s, self->a2b, tag, src, len, 100 + i);
		dp_prep_recv(&r, self->b2a, tag, 0, dst, len, 200 + i);
		if (expected)
			ASSERT_EQ(1, usubmit(&self->ring, self->b, &r, 1));
		ASSERT_EQ(1, usubmit(&self->ring, self->a, &s, 1));
		if (!expected)
			ASSERT_EQ(1, usubmit(&self->ring, self->b, &r, 1));

		ASSERT_EQ(1, dp_wait(self->b, &c, 1, 10000));
		EXPECT_EQ(200 + i, c.ctx);
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(DMAPLANE_OP_RECV, c.opcode);
		EXPECT_EQ(len, c.len);
		EXPECT_EQ(len, c.msg_len);
		EXPECT_EQ(tag, c.tag);
		EXPECT_EQ(dp_test_uid(self->a), c.src);
		EXPECT_EQ(DMAPLANE_CQE_F_SRC_AV, c.flags);
		EXPECT_EQ(self->b2a, c.src_av);
		EXPECT_EQ(0, c.data);
		EXPECT_EQ(-1, dp_test_check(dst, len, 1000 + i));
		for (int j = 0; j < 64; j++)
			ASSERT_EQ(0x5a, (unsigned char)dst[len + j]);

		ASSERT_EQ(1, dp_wait(self->a, &c, 1, 10000));
		EXPECT_EQ(100 + i, c.ctx);
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(DMAPLANE_OP_SEND, c.opcode);
		EXPECT_EQ(len, c.len);
		EXPECT_EQ(len, c.msg_len);
		EXPECT_EQ(tag, c.tag);
		EXPECT_EQ(0, c.src);
		EXPECT_EQ(0, c.flags);
		EXPECT_EQ(0, dp_poll(self->a, &c, 1));
		EXPECT_EQ(0, dp_poll(self->b, &c, 1));
		free(src);
		free(dst);
	}
}

/*
 * 64 receives in one command, 64 sends in another: each command accepts
 * all 64, every message lands in its own buffer and completes once, in
 * order, with its own context.
 */
TEST_F(uring, batch_of_64)
{
	static char src[BATCH][256], dst[BATCH][256];
	struct dmaplane_op s[BATCH], r[BATCH];
	struct dmaplane_cqe c[BATCH];
	int n;

	NEED_RING();
	for (int round = 0; round < 3; round++) {
		memset(dst, 0x5a, sizeof(dst));
		for (int i = 0; i < BATCH; i++) {
			dp_test_fill(src[i], sizeof(src[i]), round * BATCH + i);
			dp_prep_recv(&r[i], self->b2a, i, 0, dst[i],
				     sizeof(dst[i]), 1000 + i);
			dp_prep_send(&s[i], self->a2b, i, src[i],
				     sizeof(src[i]) - i, 2000 + i);
		}
		ASSERT_EQ(BATCH, usubmit(&self->ring, self->b, r, BATCH));
		ASSERT_EQ(BATCH, usubmit(&self->ring, self->a, s, BATCH));
		for (n = 0; n < BATCH;) {
			int got = dp_wait(self->b, c + n, BATCH - n, 10000);

			ASSERT_LT(0, got);
			n += got;
		}
		for (int i = 0; i < BATCH; i++) {
			EXPECT_EQ(1000 + i, c[i].ctx);
			EXPECT_EQ(0, c[i].status);
			EXPECT_EQ((uint64_t)i, c[i].tag);
			EXPECT_EQ(sizeof(src[i]) - i, c[i].len);
			EXPECT_EQ(0, memcmp(src[i], dst[i], sizeof(src[i]) - i));
			for (size_t j = sizeof(src[i]) - i; j < sizeof(dst[i]); j++)
				ASSERT_EQ(0x5a, (unsigned char)dst[i][j]);
		}
		for (n = 0; n < BATCH;) {
			int got = dp_wait(self->a, c + n, BATCH - n, 10000);

			ASSERT_LT(0, got);
			n += got;
		}
		for (int i = 0; i < BATCH; i++) {
			EXPECT_EQ(2000 + i, c[i].ctx);
			EXPECT_EQ(0, c[i].status);
			EXPECT_EQ(DMAPLANE_OP_SEND, c[i].opcode);
		}
		EXPECT_EQ(0, dp_poll(self->a, c, 1));
		EXPECT_EQ(0, dp_poll(self->b, c, 1));
	}
}

/*
 * With SQPOLL the kernel's thread takes the SQE: a ping-pong of 200
 * round trips where, while that thread is awake, a send makes no system
 * call (liburing enters the kernel only to wake it).  Most sends must
 * find it awake (its idle time is 2 s).
 */
TEST_F(uring, sqpoll_sends_without_syscall)
{
	uint64_t out = 0, in = 0;
	int awake = 0, rounds = 200;
	struct dmaplane_op s, r;
	struct dmaplane_cqe c;

	NEED_RING();
	if (!(variant->setup_flags & IORING_SETUP_SQPOLL))
		SKIP(return, "SQPOLL variant only");
	for (int i = 0; i < rounds; i++) {
		struct io_uring_sqe *sqe;
		struct io_uring_cqe *cqe;

		out = 0x1111111100000000ull + i;
		dp_prep_recv(&r, self->b2a, i, 0, &in, sizeof(in), i);
		ASSERT_EQ(1, usubmit(&self->ring, self->b, &r, 1));
		dp_prep_send(&s, self->a2b, i, &out, sizeof(out), i);
		sqe = io_uring_get_sqe(&self->ring);
		ASSERT_NE(NULL, sqe);
		dp_prep_uring_submit(sqe, dp_fd(self->a), &s, 1);
		if (!(IO_URING_READ_ONCE(*self->ring.sq.kflags) & IORING_SQ_NEED_WAKEUP))
			awake++;
		ASSERT_LE(1, io_uring_submit(&self->ring));
		ASSERT_EQ(1, dp_wait(self->b, &c, 1, 10000));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(out, in);
		ASSERT_EQ(0, io_uring_wait_cqe(&self->ring, &cqe));
		EXPECT_EQ(1, cqe->res);
		io_uring_cqe_seen(&self->ring, cqe);
		ASSERT_EQ(1, dp_wait(self->a, &c, 1, 10000));
		EXPECT_EQ(0, c.status);
	}
	TH_LOG("%d of %d sends found the SQPOLL thread awake", awake, rounds);
	EXPECT_LE(rounds / 2, awake);
}

/*
 * Every malformed command fails with its own errno and moves nothing;
 * an operation rejected after others were accepted ends the batch there.
 */
TEST_F(uring, bad_commands)
{
	static char big[2 * DMAPLANE_OP_SIZE_V1];
	struct dmaplane_op ops[3];
	struct io_uring *ring = &self->ring;
	uint64_t p = (uintptr_t)ops, buf = 0;
	struct dmaplane_cqe c;
	struct dp_ep *raw;

	NEED_RING();
	dp_prep_recv(&ops[0], self->b2a, 1, 0, &buf, sizeof(buf), 1);
	EXPECT_EQ(-EOPNOTSUPP, ucmd(ring, self->b, 0, p, 1, sizeof(ops[0]), 0));
	EXPECT_EQ(-EOPNOTSUPP, ucmd(ring, self->b, 1, p, 1, sizeof(ops[0]), 0));
	EXPECT_EQ(-EOPNOTSUPP, ucmd(ring, self->b, 2, p, 1, sizeof(ops[0]), 0));
	/* the right number with another direction or size */
	EXPECT_EQ(-EOPNOTSUPP, ucmd(ring, self->b,
				    _IOR(DMAPLANE_IOCTL_TYPE, 0x80, struct dmaplane_uring_submit),
				    p, 1, sizeof(ops[0]), 0));
	EXPECT_EQ(-EOPNOTSUPP, ucmd(ring, self->b, _IOW(DMAPLANE_IOCTL_TYPE, 0x80, __u64),
				    p, 1, sizeof(ops[0]), 0));
	EXPECT_EQ(-EOPNOTSUPP, ucmd(ring, self->b, ~0u, p, 1, sizeof(ops[0]), 0));
	EXPECT_EQ(-EINVAL, ucmd(ring, self->b, DMAPLANE_URING_CMD_SUBMIT, p, 1,
				sizeof(ops[0]), 1));
	EXPECT_EQ(-EINVAL, ucmd(ring, self->b, DMAPLANE_URING_CMD_SUBMIT, p, 1,
				sizeof(ops[0]), 0x8000));
	EXPECT_EQ(-EINVAL, ucmd(ring, self->b, DMAPLANE_URING_CMD_SUBMIT, p, 0,
				sizeof(ops[0]), 0));
	EXPECT_EQ(-EINVAL, ucmd(ring, self->b, DMAPLANE_URING_CMD_SUBMIT, p, 257,
				sizeof(ops[0]), 0));
	EXPECT_EQ(-EINVAL, ucmd(ring, self->b, DMAPLANE_URING_CMD_SUBMIT, p,
				0xffffffffu, sizeof(ops[0]), 0));
	EXPECT_EQ(-EINVAL, ucmd(ring, self->b, DMAPLANE_URING_CMD_SUBMIT, p, 1, 8, 0));
	EXPECT_EQ(-EINVAL, ucmd(ring, self->b, DMAPLANE_URING_CMD_SUBMIT, p, 1,
				DMAPLANE_OP_SIZE_V0 - 8, 0));
	EXPECT_EQ(-EINVAL, ucmd(ring, self->b, DMAPLANE_URING_CMD_SUBMIT, p, 1,
				DMAPLANE_OP_SIZE_V1 + 4, 0));
	EXPECT_EQ(-EINVAL, ucmd(ring, self->b, DMAPLANE_URING_CMD_SUBMIT, p, 1,
				getpagesize() + 8, 0));
	EXPECT_EQ(-EFAULT, ucmd(ring, self->b, DMAPLANE_URING_CMD_SUBMIT, 0, 1,
				sizeof(ops[0]), 0));
	EXPECT_EQ(-EFAULT, ucmd(ring, self->b, DMAPLANE_URING_CMD_SUBMIT, 8, 1,
				sizeof(ops[0]), 0));
	EXPECT_EQ(-EFAULT, ucmd(ring, self->b, DMAPLANE_URING_CMD_SUBMIT,
				0xffff800000000000ull, 1, sizeof(ops[0]), 0));
	EXPECT_EQ(0, dp_test_stat("posted_recvs"));

	/* A larger operation than the kernel's with a non-zero tail. */
	memcpy(big, &ops[0], sizeof(ops[0]));
	big[sizeof(big) - 1] = 1;
	EXPECT_EQ(-E2BIG, ucmd(ring, self->b, DMAPLANE_URING_CMD_SUBMIT,
			       (uintptr_t)big, 1, sizeof(big), 0));
	/* ... and with a zero tail it is the same receive. */
	big[sizeof(big) - 1] = 0;
	EXPECT_EQ(1, ucmd(ring, self->b, DMAPLANE_URING_CMD_SUBMIT,
			  (uintptr_t)big, 1, sizeof(big), 0));
	EXPECT_EQ(0, dp_cancel(self->b, 1));
	ASSERT_EQ(1, dp_wait(self->b, &c, 1, 10000));
	EXPECT_EQ(-ECANCELED, c.status);

	/* The first operation's own errors; then two good, one bad: 2. */
	ops[0].pad0[0] = 1;
	EXPECT_EQ(-EINVAL, usubmit(ring, self->b, ops, 1));
	dp_prep_send(&ops[0], 9999, 1, &buf, sizeof(buf), 1);
	EXPECT_EQ(-ENOENT, usubmit(ring, self->a, ops, 1));
	dp_prep_send(&ops[0], self->a2b, 1, (void *)8, sizeof(buf), 1);
	EXPECT_EQ(-EFAULT, usubmit(ring, self->a, ops, 1));
	dp_prep_send(&ops[0], self->a2b, 1, &buf, sizeof(buf), 1);
	dp_prep_send(&ops[1], self->a2b, 2, &buf, sizeof(buf), 2);
	dp_prep_send(&ops[2], self->a2b, 3, &buf, sizeof(buf), 3);
	ops[2].opcode = 77;
	EXPECT_EQ(2, usubmit(ring, self->a, ops, 3));
	ASSERT_EQ(2, dp_wait(self->a, &c, 1, 10000) + dp_wait(self->a, &c, 1, 10000));
	EXPECT_EQ(0, dp_poll(self->a, &c, 1));
	/* Take the two unexpected messages. */
	dp_prep_recv(&ops[0], self->b2a, 1, 0, &buf, sizeof(buf), 1);
	dp_prep_recv(&ops[1], self->b2a, 2, 0, &buf, sizeof(buf), 2);
	EXPECT_EQ(2, usubmit(ring, self->b, ops, 2));
	ASSERT_EQ(2, dp_wait(self->b, &c, 1, 10000) + dp_wait(self->b, &c, 1, 10000));

	/* An endpoint that is not set up has no ring: -EINVAL. */
	ASSERT_EQ(0, dp_open(NULL, 0, &raw));
	EXPECT_EQ(-EINVAL, usubmit(ring, raw, ops, 1));
	dp_close(raw);
}

/*
 * A full completion ring refuses the next operation with -EAGAIN, as the
 * ioctl does (io_uring retries it once in a worker, which must not hang
 * or submit it twice), and takes it again once completions are consumed.
 */
TEST_F(uring, full_ring_eagain)
{
	struct dmaplane_op ops[8];
	struct dmaplane_cqe c[8];
	struct dp_ep *small;
	uint32_t s2b;
	uint64_t buf = 42;
	int n;

	NEED_RING();
	small = dp_test_ep_new(0, 4);
	ASSERT_NE(NULL, small);
	ASSERT_EQ(0, dp_test_connect(small, self->b, &s2b));
	for (int i = 0; i < 8; i++)
		dp_prep_send(&ops[i], s2b, i, &buf, sizeof(buf), i);
	n = usubmit(&self->ring, small, ops, 8);
	EXPECT_EQ(4, n);
	EXPECT_EQ(-EAGAIN, usubmit(&self->ring, small, ops + 4, 4));
	EXPECT_EQ(4, dp_poll(small, c, 8));
	EXPECT_EQ(4, usubmit(&self->ring, small, ops + 4, 4));
	EXPECT_EQ(4, dp_wait(small, c, 8, 10000));
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(4 + i, c[i].ctx);
	/* b holds exactly the 8 messages, in order. */
	for (int i = 0; i < 8; i++) {
		uint64_t got = 0;

		ASSERT_EQ(0, dp_recv(self->b, DMAPLANE_AV_ANY, i, 0, &got, sizeof(got), i));
		ASSERT_EQ(1, dp_wait(self->b, c, 1, 10000));
		EXPECT_EQ(0, c[0].status);
		EXPECT_EQ((uint64_t)i, c[0].tag);
		EXPECT_EQ(42, got);
	}
	EXPECT_EQ(0, dp_test_stat("unexp_msgs"));
	dp_close(small);
}

/*
 * A ring created by another address space (a child after fork(), with
 * the parent's endpoints inherited; with SQPOLL its thread has the
 * child's address space) gets -EPERM for every operation, as
 * DMAPLANE_IOCTL_SUBMIT does: it can neither receive into the opener's
 * memory nor send from it.  Nothing is posted or completed, the opener's
 * buffer is untouched, and the opener's own ring still works.
 */
TEST_F(uring, other_address_space_refused)
{
	static char secret[4096], landing[4096];
	struct dmaplane_cqe c;
	struct dmaplane_op op;
	pid_t pid;

	NEED_RING();
	dp_test_fill(secret, sizeof(secret), 77);
	memset(landing, 0x5a, sizeof(landing));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct io_uring ring;
		int bad = 0;

		memset(secret, 0x11, sizeof(secret));
		if (ring_init(&ring, variant->setup_flags))
			_exit(100);
		dp_prep_recv(&op, self->b2a, 1, 0, landing, sizeof(landing), 1);
		bad |= (usubmit(&ring, self->b, &op, 1) != -EPERM) << 0;
		dp_prep_send(&op, self->a2b, 1, secret, sizeof(secret), 2);
		bad |= (usubmit(&ring, self->a, &op, 1) != -EPERM) << 1;
		/* The ioctl agrees. */
		bad |= (dp_submit(self->a, &op, 1) != -EPERM) << 2;
		io_uring_queue_exit(&ring);
		_exit(bad);
	}
	dp_test_expect_refused_child(_metadata, pid, self->a, self->b, landing,
				     sizeof(landing));

	/* The opener's ring still can. */
	dp_prep_recv(&op, self->b2a, 1, 0, landing, sizeof(landing), 1);
	ASSERT_EQ(1, usubmit(&self->ring, self->b, &op, 1));
	dp_prep_send(&op, self->a2b, 1, secret, sizeof(secret), 2);
	ASSERT_EQ(1, usubmit(&self->ring, self->a, &op, 1));
	ASSERT_EQ(1, dp_wait(self->b, &c, 1, 10000));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(0, memcmp(secret, landing, sizeof(secret)));
	ASSERT_EQ(1, dp_wait(self->a, &c, 1, 10000));
	EXPECT_EQ(0, c.status);
}

TEST_HARNESS_MAIN

// SPDX-License-Identifier: GPL-2.0
/*
 * FI_MULTI_RECV over the provider (fabric/dp_ep.c), through libfabric's
 * public API with the module loaded (tests/vm/jobs/fabric.sh runs it in
 * the VM with DMAPLANE_REQUIRE_DEVICE=1; on the host, without a dmaplane
 * device, it skips): messages are
 * packed into the oldest buffer in order, the completion after which less
 * than FI_OPT_MIN_MULTI_RECV is left carries FI_MULTI_RECV, cancellation
 * and truncation release a buffer with the error, and what the provider
 * cannot do is refused with a precise error.  Two or three endpoints of
 * one process, each with its own CQ.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "kselftest_harness.h"

#define NEP	3	/* 0 receives, 1 and 2 send */

/* The harness runs a test after its setup skipped: skip it too. */
#define NEED_DEVICE() \
	do { \
		if (!self->info) \
			SKIP(return, "no dmaplane provider or device"); \
	} while (0)

FIXTURE(mrecv)
{
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *dom;
	struct fid_av *av;
	struct fid_cq *cq[NEP];
	struct fid_ep *ep[NEP];
	fi_addr_t addr[NEP];
	char ctx[4];		/* the buffers' contexts: &ctx[i] */
	char *buf[2];
	unsigned int seed;
};

static struct fi_info *hints(void)
{
	struct fi_info *h = fi_allocinfo();

	if (!h)
		return NULL;
	h->caps = FI_MSG | FI_TAGGED | FI_MULTI_RECV | FI_DIRECTED_RECV;
	h->ep_attr->type = FI_EP_RDM;
	h->fabric_attr->prov_name = strdup("dmaplane");
	return h;
}

static int open_ep(struct __test_metadata *_metadata,
		   FIXTURE_DATA(mrecv) *self, struct fi_info *info, int i)
{
	char name[64];
	size_t len = sizeof(name);

	ASSERT_EQ(0, fi_endpoint(self->dom, info, &self->ep[i], NULL));
	ASSERT_EQ(0, fi_ep_bind(self->ep[i], &self->av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(self->ep[i], &self->cq[i]->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(self->ep[i]));
	ASSERT_EQ(0, fi_getname(&self->ep[i]->fid, name, &len));
	ASSERT_EQ(1, fi_av_insert(self->av, name, 1, &self->addr[i], 0, NULL));
	return 0;
}

FIXTURE_SETUP(mrecv)
{
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_DATA,
				      .wait_obj = FI_WAIT_NONE };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fi_info *h = hints();
	int i, ret;

	ASSERT_NE(NULL, h);
	ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, h, &self->info);
	fi_freeinfo(h);
	/* In the VM (DMAPLANE_REQUIRE_DEVICE set) a missing device fails. */
	if (ret == -FI_ENODATA && !getenv("DMAPLANE_REQUIRE_DEVICE"))
		SKIP(return, "no dmaplane provider or device (FI_PROVIDER_PATH, module)");
	ASSERT_EQ(0, ret);
	ASSERT_EQ(FI_MULTI_RECV, self->info->caps & FI_MULTI_RECV);
	ASSERT_EQ(0, fi_fabric(self->info->fabric_attr, &self->fabric, NULL));
	ASSERT_EQ(0, fi_domain(self->fabric, self->info, &self->dom, NULL));
	ASSERT_EQ(0, fi_av_open(self->dom, &av_attr, &self->av, NULL));
	for (i = 0; i < NEP; i++) {
		ASSERT_EQ(0, fi_cq_open(self->dom, &cq_attr, &self->cq[i], NULL));
		open_ep(_metadata, self, self->info, i);
	}
	for (i = 0; i < 2; i++) {
		self->buf[i] = malloc(4096);
		ASSERT_NE(NULL, self->buf[i]);
		memset(self->buf[i], 0, 4096);
	}
	/* DMAPLANE_SEED=N repeats a run. */
	self->seed = getenv("DMAPLANE_SEED") ?
		(unsigned int)strtoul(getenv("DMAPLANE_SEED"), NULL, 0) :
		(unsigned int)time(NULL);
	TH_LOG("seed %u", self->seed);
}

FIXTURE_TEARDOWN(mrecv)
{
	int i;

	if (!self->info)
		return;
	/* Closing an endpoint with buffers still posted frees them. */
	for (i = 0; i < NEP; i++) {
		if (self->ep[i])
			EXPECT_EQ(0, fi_close(&self->ep[i]->fid));
		if (self->cq[i])
			EXPECT_EQ(0, fi_close(&self->cq[i]->fid));
	}
	EXPECT_EQ(0, fi_close(&self->av->fid));
	EXPECT_EQ(0, fi_close(&self->dom->fid));
	EXPECT_EQ(0, fi_close(&self->fabric->fid));
	fi_freeinfo(self->info);
	free(self->buf[0]);
	free(self->buf[1]);
}

static int set_min(struct fid_ep *ep, size_t min)
{
	return fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			 &min, sizeof(min));
}

/* Post buffer @i (@len bytes) as an FI_MULTI_RECV buffer of endpoint 0. */
static int post(FIXTURE_DATA(mrecv) *self, int i, size_t len, fi_addr_t src)
{
	struct iovec iov = { .iov_base = self->buf[i], .iov_len = len };
	struct fi_msg msg = {
		.msg_iov = &iov, .iov_count = 1, .addr = src,
		.context = &self->ctx[i],
	};

	return fi_recvmsg(self->ep[0], &msg, FI_MULTI_RECV);
}

/* One completion of @cq, or -FI_EAVAIL with it in @err; 5 s at most. */
static int wait_cq(struct fid_cq *cq, struct fi_cq_data_entry *e,
		   struct fi_cq_err_entry *err)
{
	int i, ret;

	for (i = 0; i < 50000; i++) {
		ret = fi_cq_read(cq, e, 1);
		if (ret == -FI_EAVAIL) {
			memset(err, 0, sizeof(*err));
			ret = fi_cq_readerr(cq, err, 0);
			return ret == 1 ? -FI_EAVAIL : ret;
		}
		if (ret != -FI_EAGAIN)
			return ret;
		usleep(100);
	}
	return -FI_ETIMEDOUT;
}

/* A send of @len bytes of @pat from endpoint @from, completed. */
static int send_from(FIXTURE_DATA(mrecv) *self, int from, const void *pat,
		     size_t len)
{
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	int ret;

	ret = fi_send(self->ep[from], pat, len, NULL, self->addr[0], NULL);
	if (ret)
		return ret;
	ret = wait_cq(self->cq[from], &e, &err);
	return ret == 1 ? 0 : ret ? ret : -FI_EOTHER;
}

static void fill(unsigned int *seed, unsigned char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = rand_r(seed);
}

/*
 * Random sizes (1-64) with random bytes into two 512-byte buffers, minimum 64:
 * each message lands right after the one before in the oldest buffer, the
 * completion that leaves less than 64 bytes says FI_MULTI_RECV, then the
 * other buffer fills, and the released one is posted again.  The seed
 * (printed) decides how many messages that takes.
 */
TEST_F(mrecv, packs_messages_in_order_and_releases_below_the_minimum)
{
	unsigned char pat[64];	/* never more than the minimum: always fits */
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	size_t off = 0, len;
	int cur = 0, releases = 0, n;

	NEED_DEVICE();
	ASSERT_EQ(0, set_min(self->ep[0], 64));
	ASSERT_EQ(0, post(self, 0, 512, FI_ADDR_UNSPEC));
	ASSERT_EQ(0, post(self, 1, 512, FI_ADDR_UNSPEC));
	/*
	 * Until each buffer was released twice: a message is 1 byte or more,
	 * so a buffer releases within 449 of them.
	 */
	for (n = 0; releases < 4; n++) {
		ASSERT_GT(4 * 449, n);
		len = 1 + rand_r(&self->seed) % sizeof(pat);
		fill(&self->seed, pat, len);
		ASSERT_EQ(0, send_from(self, 1, pat, len));
		ASSERT_EQ(1, wait_cq(self->cq[0], &e, &err));
		EXPECT_EQ(&self->ctx[cur], e.op_context);
		EXPECT_EQ(len, e.len);
		ASSERT_EQ(self->buf[cur] + off, (char *)e.buf);
		EXPECT_EQ(0, memcmp(e.buf, pat, len));
		off += len;
		if (512 - off < 64) {
			ASSERT_EQ(FI_RECV | FI_MSG | FI_MULTI_RECV, e.flags);
			ASSERT_EQ(0, post(self, cur, 512, FI_ADDR_UNSPEC));
			cur = !cur;
			off = 0;
			releases++;
		} else {
			ASSERT_EQ(FI_RECV | FI_MSG, e.flags);
		}
	}
	/* Nothing else was reported. */
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq[0], &e, 1));
}

/* Messages sent before any buffer is posted land once one is. */
TEST_F(mrecv, unexpected_messages_fill_a_buffer_posted_later)
{
	unsigned char pat[3][40];
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;
	int i;

	NEED_DEVICE();
	for (i = 0; i < 3; i++) {
		fill(&self->seed, pat[i], sizeof(pat[i]));
		ASSERT_EQ(0, send_from(self, 1 + i % 2, pat[i], sizeof(pat[i])));
	}
	ASSERT_EQ(0, set_min(self->ep[0], 0));
	ASSERT_EQ(0, post(self, 0, 120, FI_ADDR_UNSPEC));
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(1, wait_cq(self->cq[0], &e, &err));
		ASSERT_EQ(self->buf[0] + 40 * i, (char *)e.buf);
		EXPECT_EQ(40, e.len);
		EXPECT_EQ(0, memcmp(e.buf, pat[i], 40));
		/* minimum 0: released when nothing at all is left */
		EXPECT_EQ(i == 2 ? FI_MULTI_RECV : 0, e.flags & FI_MULTI_RECV);
	}
}

/*
 * fi_cancel of a buffer queued behind the oldest and of the oldest (which
 * has its kernel receive): FI_ECANCELED with FI_MULTI_RECV, each once;
 * a message sent afterwards waits for the next receive.
 */
TEST_F(mrecv, cancel_releases_queued_and_active_buffers)
{
	unsigned char pat[16], got[16];
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;

	NEED_DEVICE();
	ASSERT_EQ(0, post(self, 0, 256, FI_ADDR_UNSPEC));
	ASSERT_EQ(0, post(self, 1, 256, FI_ADDR_UNSPEC));
	ASSERT_EQ(0, fi_cancel(&self->ep[0]->fid, &self->ctx[1]));
	ASSERT_EQ(-FI_EAVAIL, wait_cq(self->cq[0], &e, &err));
	EXPECT_EQ(FI_ECANCELED, err.err);
	EXPECT_EQ(&self->ctx[1], err.op_context);
	EXPECT_EQ(FI_MULTI_RECV, err.flags & FI_MULTI_RECV);
	ASSERT_EQ(0, fi_cancel(&self->ep[0]->fid, &self->ctx[0]));
	ASSERT_EQ(-FI_EAVAIL, wait_cq(self->cq[0], &e, &err));
	EXPECT_EQ(FI_ECANCELED, err.err);
	EXPECT_EQ(&self->ctx[0], err.op_context);
	EXPECT_EQ(FI_MULTI_RECV, err.flags & FI_MULTI_RECV);
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&self->ep[0]->fid, &self->ctx[0]));
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&self->ep[0]->fid, &self->ctx[1]));

	fill(&self->seed, pat, sizeof(pat));
	ASSERT_EQ(0, send_from(self, 1, pat, sizeof(pat)));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq[0], &e, 1));
	ASSERT_EQ(0, fi_recv(self->ep[0], got, sizeof(got), NULL, FI_ADDR_UNSPEC,
			     &self->ctx[2]));
	ASSERT_EQ(1, wait_cq(self->cq[0], &e, &err));
	EXPECT_EQ(&self->ctx[2], e.op_context);
	EXPECT_EQ(FI_RECV | FI_MSG, e.flags);
	EXPECT_EQ(0, memcmp(got, pat, sizeof(pat)));
}

/*
 * A message larger than what is left is truncated into the rest of the
 * buffer and releases it: FI_ETRUNC, olen the bytes that did not fit.
 * The next buffer takes the next message.
 */
TEST_F(mrecv, truncation_releases_the_buffer)
{
	unsigned char pat[70];
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;

	NEED_DEVICE();
	ASSERT_EQ(0, set_min(self->ep[0], 1));
	ASSERT_EQ(0, post(self, 0, 100, FI_ADDR_UNSPEC));
	ASSERT_EQ(0, post(self, 1, 100, FI_ADDR_UNSPEC));
	fill(&self->seed, pat, sizeof(pat));
	ASSERT_EQ(0, send_from(self, 1, pat, 60));
	ASSERT_EQ(1, wait_cq(self->cq[0], &e, &err));
	EXPECT_EQ(60, e.len);
	EXPECT_EQ(0, e.flags & FI_MULTI_RECV);
	ASSERT_EQ(0, send_from(self, 1, pat, 70));
	ASSERT_EQ(-FI_EAVAIL, wait_cq(self->cq[0], &e, &err));
	EXPECT_EQ(FI_ETRUNC, err.err);
	EXPECT_EQ(&self->ctx[0], err.op_context);
	EXPECT_EQ(FI_MULTI_RECV, err.flags & FI_MULTI_RECV);
	EXPECT_EQ(40, err.len);
	EXPECT_EQ(30, err.olen);
	EXPECT_EQ(0, memcmp(self->buf[0] + 60, pat, 40));
	ASSERT_EQ(0, send_from(self, 1, pat, 70));
	ASSERT_EQ(1, wait_cq(self->cq[0], &e, &err));
	EXPECT_EQ(&self->ctx[1], e.op_context);
	EXPECT_EQ(self->buf[1], (char *)e.buf);
	EXPECT_EQ(0, memcmp(self->buf[1], pat, 70));
}

/* A buffer posted for one source takes only that source's messages. */
TEST_F(mrecv, directed_buffer_takes_its_source_only)
{
	unsigned char a[24], b[24], got[24];
	struct fi_cq_data_entry e;
	struct fi_cq_err_entry err;

	NEED_DEVICE();
	fill(&self->seed, a, sizeof(a));
	fill(&self->seed, b, sizeof(b));
	ASSERT_EQ(0, post(self, 0, 256, self->addr[2]));
	ASSERT_EQ(0, send_from(self, 1, a, sizeof(a)));
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(self->cq[0], &e, 1));
	ASSERT_EQ(0, send_from(self, 2, b, sizeof(b)));
	ASSERT_EQ(1, wait_cq(self->cq[0], &e, &err));
	EXPECT_EQ(&self->ctx[0], e.op_context);
	EXPECT_EQ(self->buf[0], (char *)e.buf);
	EXPECT_EQ(0, memcmp(e.buf, b, sizeof(b)));
	/* endpoint 1's message is still there for another receive */
	ASSERT_EQ(0, fi_recv(self->ep[0], got, sizeof(got), NULL, self->addr[1],
			     &self->ctx[2]));
	ASSERT_EQ(1, wait_cq(self->cq[0], &e, &err));
	EXPECT_EQ(&self->ctx[2], e.op_context);
	EXPECT_EQ(0, memcmp(got, a, sizeof(a)));
}

TEST_F(mrecv, options_and_refusals)
{
	struct iovec iov[2] = {
		{ .iov_base = self->buf[0], .iov_len = 64 },
		{ .iov_base = self->buf[1], .iov_len = 64 },
	};
	struct fi_msg msg = { .msg_iov = iov, .iov_count = 2,
			      .addr = FI_ADDR_UNSPEC, .context = &self->ctx[0] };
	struct fi_msg_tagged tmsg = { .msg_iov = iov, .iov_count = 1,
				      .addr = FI_ADDR_UNSPEC,
				      .context = &self->ctx[0] };
	struct fi_info *info;
	struct fid_ep *ep;
	size_t v = 0, len = sizeof(v);
	int small = 0;

	NEED_DEVICE();
	/* the default, then what was set */
	ASSERT_EQ(0, fi_getopt(&self->ep[0]->fid, FI_OPT_ENDPOINT,
			       FI_OPT_MIN_MULTI_RECV, &v, &len));
	EXPECT_EQ(64, v);
	EXPECT_EQ(sizeof(size_t), len);
	ASSERT_EQ(0, set_min(self->ep[0], 1000));
	ASSERT_EQ(0, fi_getopt(&self->ep[0]->fid, FI_OPT_ENDPOINT,
			       FI_OPT_MIN_MULTI_RECV, &v, &len));
	EXPECT_EQ(1000, v);
	len = sizeof(small);
	EXPECT_EQ(-FI_ETOOSMALL, fi_getopt(&self->ep[0]->fid, FI_OPT_ENDPOINT,
					   FI_OPT_MIN_MULTI_RECV, &small, &len));
	EXPECT_EQ(-FI_EINVAL, fi_setopt(&self->ep[0]->fid, FI_OPT_ENDPOINT,
					FI_OPT_MIN_MULTI_RECV, &small, sizeof(small)));
	EXPECT_EQ(-FI_ENOPROTOOPT, fi_setopt(&self->ep[0]->fid, FI_OPT_ENDPOINT + 1,
					     FI_OPT_MIN_MULTI_RECV, &v, sizeof(v)));
	EXPECT_EQ(-FI_ENOPROTOOPT, fi_setopt(&self->ep[0]->fid, FI_OPT_ENDPOINT,
					     FI_OPT_CM_DATA_SIZE, &v, sizeof(v)));

	/* one buffer only; untagged only */
	EXPECT_EQ(-FI_EINVAL, fi_recvmsg(self->ep[0], &msg, FI_MULTI_RECV));
	msg.iov_count = 0;
	EXPECT_EQ(-FI_EINVAL, fi_recvmsg(self->ep[0], &msg, FI_MULTI_RECV));
	EXPECT_EQ(-FI_EINVAL, fi_trecvmsg(self->ep[0], &tmsg, FI_MULTI_RECV));

	/* an endpoint opened without FI_MULTI_RECV */
	info = fi_dupinfo(self->info);
	ASSERT_NE(NULL, info);
	info->caps &= ~FI_MULTI_RECV;
	info->rx_attr->caps &= ~FI_MULTI_RECV;
	ASSERT_EQ(0, fi_endpoint(self->dom, info, &ep, NULL));
	ASSERT_EQ(0, fi_ep_bind(ep, &self->av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &self->cq[0]->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(ep));
	msg.iov_count = 1;
	EXPECT_EQ(-FI_EINVAL, fi_recvmsg(ep, &msg, FI_MULTI_RECV));
	EXPECT_EQ(0, fi_close(&ep->fid));
	fi_freeinfo(info);
}

TEST_HARNESS_MAIN

// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdmaplane: endpoint setup, addresses, send/recv and the completion
 * ring.
 */
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "internal.h"

int dp_ep_setup(struct dp_ep *ep, uint64_t auth_key, unsigned int cq_entries)
{
	struct dmaplane_ep_setup arg = {
		.auth_key = auth_key,
		.cq_entries = cq_entries,
	};
	void *ring, *head;
	int ret;

	ret = dp_ioctl(ep, DMAPLANE_IOCTL_EP_SETUP, &arg);
	if (ret)
		return ret;
	ring = mmap(NULL, arg.ring_size, PROT_READ, MAP_SHARED, ep->fd,
		    DMAPLANE_CQ_RING_OFFSET);
	if (ring == MAP_FAILED)
		return -errno;
	head = mmap(NULL, arg.head_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    ep->fd, DMAPLANE_CQ_HEAD_OFFSET);
	if (head == MAP_FAILED) {
		ret = -errno;
		munmap(ring, arg.ring_size);
		return ret;
	}
	ep->ring = ring;
	ep->ring_size = arg.ring_size;
	ep->cqes = (char *)ring + ep->ring->entries_offset;
	ep->cqe_size = ep->ring->entry_size;
	ep->head = head;
	ep->head_size = arg.head_size;
	return 0;
}

int dp_getname(struct dp_ep *ep, struct dmaplane_name *name)
{
	return dp_ioctl(ep, DMAPLANE_IOCTL_GETNAME, name);
}

int dp_av_insert(struct dp_ep *ep, const struct dmaplane_name *name,
		 uint32_t *addr)
{
	struct dmaplane_av_insert arg = { .name = *name };
	int ret = dp_ioctl(ep, DMAPLANE_IOCTL_AV_INSERT, &arg);

	if (!ret)
		*addr = arg.handle;
	return ret;
}

int dp_av_remove(struct dp_ep *ep, uint32_t addr)
{
	struct dmaplane_handle_arg arg = { .handle = addr };

	return dp_ioctl(ep, DMAPLANE_IOCTL_AV_REMOVE, &arg);
}

int dp_submit(struct dp_ep *ep, const struct dmaplane_op *ops, unsigned int nr)
{
	struct dmaplane_submit arg = {
		.ops = (uintptr_t)ops,
		.nr = nr,
		.op_size = sizeof(*ops),
	};
	int ret = dp_ioctl(ep, DMAPLANE_IOCTL_SUBMIT, &arg);

	return ret ? ret : (int)arg.done;
}

static int submit_one(struct dp_ep *ep, const struct dmaplane_op *op)
{
	int ret = dp_submit(ep, op, 1);

	return ret < 0 ? ret : 0;
}

int dp_send(struct dp_ep *ep, uint32_t dest, uint64_t tag, const void *buf,
	    uint64_t len, uint64_t ctx)
{
	struct dmaplane_op op = {
		.opcode = DMAPLANE_OP_SEND,
		.peer = dest,
		.tag = tag,
		.addr = (uintptr_t)buf,
		.len = len,
		.ctx = ctx,
	};

	return submit_one(ep, &op);
}

int dp_recv(struct dp_ep *ep, uint32_t src, uint64_t tag, uint64_t ignore,
	    void *buf, uint64_t len, uint64_t ctx)
{
	struct dmaplane_op op = {
		.opcode = DMAPLANE_OP_RECV,
		.peer = src,
		.tag = tag,
		.ignore = ignore,
		.addr = (uintptr_t)buf,
		.len = len,
		.ctx = ctx,
	};

	return submit_one(ep, &op);
}

int dp_sendv(struct dp_ep *ep, uint32_t dest, uint64_t tag,
	     const struct iovec *iov, unsigned int iovcnt, uint64_t ctx)
{
	struct dmaplane_op op = {
		.opcode = DMAPLANE_OP_SEND,
		.flags = DMAPLANE_OP_F_IOV,
		.peer = dest,
		.tag = tag,
		.addr = (uintptr_t)iov,
		.len = iovcnt,
		.ctx = ctx,
	};

	return submit_one(ep, &op);
}

int dp_recvv(struct dp_ep *ep, uint32_t src, uint64_t tag, uint64_t ignore,
	     const struct iovec *iov, unsigned int iovcnt, uint64_t ctx)
{
	struct dmaplane_op op = {
		.opcode = DMAPLANE_OP_RECV,
		.flags = DMAPLANE_OP_F_IOV,
		.peer = src,
		.tag = tag,
		.ignore = ignore,
		.addr = (uintptr_t)iov,
		.len = iovcnt,
		.ctx = ctx,
	};

	return submit_one(ep, &op);
}

static int rma(struct dp_ep *ep, uint8_t opcode, uint32_t peer, uint64_t rkey,
	       uint64_t roffset, const void *buf, uint64_t len, uint64_t ctx)
{
	struct dmaplane_op op = {
		.opcode = opcode,
		.peer = peer,
		.addr = (uintptr_t)buf,
		.len = len,
		.ctx = ctx,
		.rkey = rkey,
		.roffset = roffset,
	};

	return submit_one(ep, &op);
}

int dp_put(struct dp_ep *ep, uint32_t dest, uint64_t rkey, uint64_t roffset,
	   const void *buf, uint64_t len, uint64_t ctx)
{
	return rma(ep, DMAPLANE_OP_PUT, dest, rkey, roffset, buf, len, ctx);
}

int dp_get(struct dp_ep *ep, uint32_t dest, uint64_t rkey, uint64_t roffset,
	   void *buf, uint64_t len, uint64_t ctx)
{
	return rma(ep, DMAPLANE_OP_GET, dest, rkey, roffset, buf, len, ctx);
}

int dp_probe(struct dp_ep *ep, uint32_t src, uint64_t tag, uint64_t ignore,
	     unsigned int flags, struct dmaplane_probe *probe)
{
	memset(probe, 0, sizeof(*probe));
	probe->peer = src;
	probe->flags = flags;
	probe->tag = tag;
	probe->ignore = ignore;
	return dp_ioctl(ep, DMAPLANE_IOCTL_PROBE, probe);
}

int dp_recv_claimed(struct dp_ep *ep, uint32_t claim, void *buf, uint64_t len,
		    uint64_t ctx)
{
	struct dmaplane_op op = {
		.opcode = DMAPLANE_OP_RECV,
		.flags = DMAPLANE_OP_F_CLAIMED,
		.peer = claim,
		.addr = (uintptr_t)buf,
		.len = len,
		.ctx = ctx,
	};

	return submit_one(ep, &op);
}

int dp_cancel(struct dp_ep *ep, uint64_t ctx)
{
	struct dmaplane_cancel arg = { .ctx = ctx };

	return dp_ioctl(ep, DMAPLANE_IOCTL_CANCEL, &arg);
}

/* Copy up to @max entries from the ring; consume them when @consume. */
static int ring_take(struct dp_ep *ep, struct dmaplane_cqe *cqes,
		     unsigned int max, int consume)
{
	uint32_t head, tail, n = 0;

	if (!ep->ring)
		return -EINVAL;
	head = ep->head->head;
	tail = __atomic_load_n(&ep->ring->tail, __ATOMIC_ACQUIRE);
	while (head != tail && n < max) {
		const char *e = ep->cqes + (size_t)(head & ep->ring->mask) * ep->cqe_size;

		/* What both know; a shorter kernel entry leaves zeroes. */
		if (ep->cqe_size < sizeof(*cqes))
			memset(&cqes[n], 0, sizeof(*cqes));
		memcpy(&cqes[n++], e, ep->cqe_size < sizeof(*cqes) ?
		       ep->cqe_size : sizeof(*cqes));
		head++;
	}
	if (consume && n)
		__atomic_store_n(&ep->head->head, head, __ATOMIC_RELEASE);
	return n;
}

int dp_poll(struct dp_ep *ep, struct dmaplane_cqe *cqes, unsigned int max)
{
	return ring_take(ep, cqes, max, 1);
}

int dp_wait(struct dp_ep *ep, struct dmaplane_cqe *cqes, unsigned int max,
	    int timeout_ms)
{
	struct pollfd pfd = { .fd = ep->fd, .events = POLLIN };
	int n;

	for (;;) {
		n = dp_poll(ep, cqes, max);
		if (n)
			return n;
		n = poll(&pfd, 1, timeout_ms);
		if (n < 0)
			return -errno;
		if (!n)
			return 0;
	}
}

/* Wait for the completion of the only operation in flight, @ctx. */
static int wait_own(struct dp_ep *ep, uint64_t ctx, struct dmaplane_cqe *out)
{
	struct dmaplane_cqe cqe;
	int n;

	for (;;) {
		struct pollfd pfd = { .fd = ep->fd, .events = POLLIN };

		n = ring_take(ep, &cqe, 1, 0);
		if (n < 0)
			return n;
		if (n) {
			if (cqe.ctx != ctx)
				return -EBUSY;
			ring_take(ep, &cqe, 1, 1);
			if (out)
				*out = cqe;
			return cqe.status;
		}
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return -errno;
	}
}

int dp_send_sync(struct dp_ep *ep, uint32_t dest, uint64_t tag,
		 const void *buf, uint64_t len, struct dmaplane_cqe *cqe)
{
	uint64_t ctx = (uintptr_t)&ctx;
	int ret = dp_send(ep, dest, tag, buf, len, ctx);

	return ret ? ret : wait_own(ep, ctx, cqe);
}

int dp_recv_sync(struct dp_ep *ep, uint32_t src, uint64_t tag, uint64_t ignore,
		 void *buf, uint64_t len, struct dmaplane_cqe *cqe)
{
	uint64_t ctx = (uintptr_t)&ctx;
	int ret = dp_recv(ep, src, tag, ignore, buf, len, ctx);

	return ret ? ret : wait_own(ep, ctx, cqe);
}

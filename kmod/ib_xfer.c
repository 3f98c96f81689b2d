// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane across nodes: RDMA transfers between local pages and a peer's
 * segments.  The rendezvous pull (RDMA READ into a posted receive) and the
 * target side of PUT/GET.
 * See ib.c for the transport as a whole.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "ib_loc.h"

void dmaplane_xfer_free(struct dmaplane_xfer *x)
{
	struct dmaplane_conn *c = x->conn;
	unsigned int i;

	for (i = 0; i < x->nctx; i++) {
		if (x->ctx[i].init)
			rdma_rw_ctx_destroy(&x->ctx[i].rw, c->qp, c->cm_id->port_num,
					    x->ctx[i].sgt.sgl, x->ctx[i].sgt.orig_nents,
					    x->write ? DMA_TO_DEVICE : DMA_FROM_DEVICE);
		sg_free_table(&x->ctx[i].sgt);
	}
	kfree(x->ctx);
	kfree(x->rsegs);
	/* The QP may go now (conn_teardown()). */
	if (x->rw_counted && atomic_dec_and_test(&c->rw_xfers))
		wake_up_all(&c->rw_xfers_wq);
	if (x->pages) {
		if (x->user) {
			unpin_user_pages_dirty_lock(x->pages, x->npages, !x->write);
			dmaplane_stat_sub(xfer_pages, x->npages);
		} else {
			for (i = 0; i < x->npages; i++)
				put_page(x->pages[i]);
		}
		kvfree(x->pages);
	}
	if (x->charged_mm) {
		dmaplane_uncharge_pages(x->charged_mm, x->charged);
		mmdrop(x->charged_mm);
	}
	kvfree(x->bv);
	if (x->region)
		dmaplane_region_put(x->region);
	if (x->ep)
		dmaplane_ep_put(x->ep);
	dmaplane_conn_put(c);
	kfree(x);
}

void dmaplane_xfer_finish(struct dmaplane_xfer *x)
{
	x->done(x);
	dmaplane_xfer_free(x);
}

/*
 * Post the next contexts of @x while the budget has room; under tx_lock,
 * the connection up.  Return: how many contexts were given up on (after
 * an error; the caller takes them off @x->pending).
 */
static unsigned int xfer_post_locked(struct dmaplane_conn *c, struct dmaplane_xfer *x)
{
	enum dma_data_direction dir = x->write ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
	unsigned int i, dropped;
	int ret;

	lockdep_assert_held(&c->tx_lock);
	while (x->next < x->nctx && c->rw_inflight < IB_RW_BUDGET) {
		i = x->next;
		if (!x->ctx[i].init) {
			if (!x->rw_counted) {
				atomic_inc(&c->rw_xfers);
				x->rw_counted = true;
			}
			ret = rdma_rw_ctx_init(&x->ctx[i].rw, c->qp, c->cm_id->port_num,
					       x->ctx[i].sgt.sgl, x->ctx[i].sgt.orig_nents, 0,
					       le64_to_cpu(x->rsegs[i].addr),
					       le32_to_cpu(x->rsegs[i].rkey), dir);
			if (ret < 0)
				goto err_drop;
			x->ctx[i].init = true;
			x->ctx[i].wrs = ret;
		}
		if (c->rw_inflight && c->rw_wrs + x->ctx[i].wrs > IB_RW_WRS)
			break;
		dmaplane_sq_posting(c);
		ret = rdma_rw_ctx_post(&x->ctx[i].rw, c->qp, c->cm_id->port_num,
				       &x->cqe, NULL);
		if (ret) {
			dmaplane_sq_done(c);
			/* The send queue is full or broken: give up on the peer. */
			dmaplane_conn_fail(c, false);
			goto err_drop;
		}
		c->rw_inflight++;
		c->rw_wrs += x->ctx[i].wrs;
		x->next++;
	}
	return 0;

err_drop:
	if (!x->status)
		x->status = ret < 0 ? ret : -EIO;
	dropped = x->nctx - x->next;
	x->next = x->nctx;
	return dropped;
}

/*
 * Post what waits for room, oldest first; under tx_lock.  Transfers that
 * end with that (an error gave up their last contexts) go on @finished,
 * to be finished without the lock.
 */
static void xfer_kick_locked(struct dmaplane_conn *c, struct list_head *finished)
{
	struct dmaplane_xfer *x;
	unsigned int dropped;

	lockdep_assert_held(&c->tx_lock);
	while (c->state == CONN_UP &&
	       (x = list_first_entry_or_null(&c->xfer_wait, struct dmaplane_xfer, node))) {
		dropped = xfer_post_locked(c, x);
		if (x->next < x->nctx)
			break;
		list_del(&x->node);
		if (dropped && atomic_sub_and_test(dropped, &x->pending))
			list_add_tail(&x->node, finished);
	}
}

static void xfer_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct dmaplane_xfer *x = container_of(wc->wr_cqe, struct dmaplane_xfer, cqe);
	struct dmaplane_conn *c = x->conn;
	struct dmaplane_xfer *y, *tmp;
	LIST_HEAD(finished);

	dmaplane_sq_done(c);
	if (wc->status == IB_WC_SUCCESS) {
		dmaplane_conn_alive(c);
	} else {
		/* A peer that stopped answering reset the connection. */
		if (!x->status)
			x->status = wc->status == IB_WC_WR_FLUSH_ERR ||
				    wc->status == IB_WC_RETRY_EXC_ERR ? -ECONNRESET : -EIO;
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_warn_ratelimited("RDMA %s with %pISp failed: %s\n",
					    x->write ? "WRITE" : "READ", &c->peer->addr,
					    ib_wc_status_msg(wc->status));
		/* The QP is in the error state: the connection is over. */
		dmaplane_conn_fail(c, false);
	}
	mutex_lock(&c->tx_lock);
	c->rw_inflight--;
	c->rw_wrs -= x->ctx[x->completed++].wrs;
	xfer_kick_locked(c, &finished);
	mutex_unlock(&c->tx_lock);
	if (atomic_dec_and_test(&x->pending))
		dmaplane_xfer_finish(x);
	list_for_each_entry_safe(y, tmp, &finished, node)
		dmaplane_xfer_finish(y);
}

/* Local bytes [@start, @start + @len) of @x as a scatterlist. */
static int xfer_sg(struct dmaplane_xfer *x, u64 start, u64 len, struct sg_table *sgt)
{
	struct scatterlist *sg;
	unsigned int i, n = 0;
	u64 pos = 0;
	int ret;

	for (i = 0; i < x->nbv; pos += x->bv[i].bv_len, i++)
		if (pos + x->bv[i].bv_len > start && pos < start + len)
			n++;
	ret = sg_alloc_table(sgt, n, GFP_KERNEL);
	if (ret)
		return ret;
	sg = sgt->sgl;
	for (i = 0, pos = 0; i < x->nbv; pos += x->bv[i].bv_len, i++) {
		u64 a = max(pos, start);
		u64 b = min(pos + x->bv[i].bv_len, start + len);

		if (a >= b)
			continue;
		sg_set_page(sg, x->bv[i].bv_page, b - a, x->bv[i].bv_offset + (a - pos));
		sg = sg_next(sg);
	}
	return 0;
}

/*
 * Move the first @x->len local bytes to or from the peer's @segs: one RDMA
 * context per segment.  On error nothing was posted and the caller frees
 * @x; once started, @x->done runs when the last context completes.
 */
int dmaplane_xfer_start(struct dmaplane_xfer *x,
			const struct dmaplane_wire_seg *segs, u32 nsegs)
{
	struct dmaplane_conn *c = x->conn;
	unsigned int i, dropped;
	u64 pos = 0;
	int ret = 0;

	x->ctx = kcalloc(nsegs, sizeof(*x->ctx), GFP_KERNEL);
	if (!x->ctx)
		return -ENOMEM;
	for (i = 0; i < nsegs && pos < x->len; i++) {
		u64 n = min_t(u64, le32_to_cpu(segs[i].len), x->len - pos);

		x->nctx++;
		ret = xfer_sg(x, pos, n, &x->ctx[i].sgt);
		if (ret)
			return ret;
		pos += n;
	}
	x->rsegs = kmemdup(segs, x->nctx * sizeof(*segs), GFP_KERNEL);
	if (x->nctx && !x->rsegs)
		return -ENOMEM;
	x->cqe.done = xfer_done;
	atomic_set(&x->pending, x->nctx + 1);

	/* The QP lives while the connection is up, under tx_lock. */
	mutex_lock(&c->tx_lock);
	if (c->state != CONN_UP) {
		mutex_unlock(&c->tx_lock);
		return -ECONNRESET;
	}
	/* Behind older transfers that wait, or now as far as there is room. */
	if (list_empty(&c->xfer_wait)) {
		dropped = xfer_post_locked(c, x);
		if (dropped && dropped == x->nctx) {
			mutex_unlock(&c->tx_lock);
			return x->status;
		}
		atomic_sub(dropped, &x->pending);
	}
	if (x->next < x->nctx)
		list_add_tail(&x->node, &c->xfer_wait);
	atomic64_add(x->len, x->write ? &c->peer->tx_bytes : &c->peer->rx_bytes);
	mutex_unlock(&c->tx_lock);
	/* Drop the submitter's count: the last completion finishes. */
	if (atomic_dec_and_test(&x->pending))
		dmaplane_xfer_finish(x);
	return 0;
}

/* Pin @n bytes of the user buffer @b in @mm as @x's local pages. */
static int xfer_pin_user(struct dmaplane_xfer *x, struct mm_struct *mm,
			 struct dmaplane_ubuf *b, u64 n)
{
	unsigned int i, total = 0, pos = 0;
	u64 left = n;
	int ret = 0;

	for (i = 0; i < b->nsegs && left; i++) {
		u64 l = min_t(u64, b->segs[i].iov_len, left);

		if (l)
			total += DIV_ROUND_UP(offset_in_page((unsigned long)
					      b->segs[i].iov_base) + l, PAGE_SIZE);
		left -= l;
	}
	/*
	 * Pinned until the pull is over, which a slow peer may make long:
	 * charged like a registration (RLIMIT_MEMLOCK when the receiver
	 * itself posts, and always the module cap).
	 */
	ret = dmaplane_charge_pages(mm, total);
	if (ret)
		return ret;
	mmgrab(mm);
	x->charged_mm = mm;
	x->charged = total;
	x->pages = kvmalloc_array(total, sizeof(*x->pages), GFP_KERNEL_ACCOUNT);
	x->bv = kvmalloc_array(total, sizeof(*x->bv), GFP_KERNEL_ACCOUNT);
	if (!x->pages || !x->bv)
		return -ENOMEM;
	x->user = true;
	if (!mmget_not_zero(mm))
		return -ECONNRESET;
	left = n;
	for (i = 0; i < b->nsegs && left && !ret; i++) {
		unsigned long a = (unsigned long)b->segs[i].iov_base;
		u64 l = min_t(u64, b->segs[i].iov_len, left);
		unsigned int np;
		long pinned;

		if (!l)
			continue;
		np = DIV_ROUND_UP(offset_in_page(a) + l, PAGE_SIZE);
		mmap_read_lock(mm);
		pinned = dmaplane_pin_user_pages_remote(mm, a & PAGE_MASK, np,
							FOLL_LONGTERM |
							(x->write ? 0 : FOLL_WRITE),
							x->pages + pos);
		mmap_read_unlock(mm);
		if (pinned > 0) {
			x->npages += pinned;
			dmaplane_stat_add(xfer_pages, pinned);
		}
		if (pinned != np) {
			ret = pinned < 0 ? pinned : -EFAULT;
			break;
		}
		dmaplane_bvec_pages(x->bv + x->nbv, x->pages + pos, np, offset_in_page(a), l);
		x->nbv += np;
		left -= min_t(u64, b->segs[i].iov_len, left);
		pos += np;
	}
	mmput(mm);
	return ret;
}

/* Local pages of a region as @x's pieces. */
int dmaplane_xfer_region_pages(struct dmaplane_xfer *x, u64 off, u64 len)
{
	unsigned int first_off;
	int ret;

	ret = dmaplane_region_pages(x->region, off, len, &x->pages, &x->npages,
				    &first_off);
	if (ret)
		return ret;
	x->bv = kvmalloc_array(x->npages, sizeof(*x->bv), GFP_KERNEL);
	if (!x->bv)
		return -ENOMEM;
	dmaplane_bvec_pages(x->bv, x->pages, x->npages, first_off, len);
	x->nbv = x->npages;
	return 0;
}

struct dmaplane_xfer *dmaplane_xfer_alloc(struct dmaplane_conn *c, bool write)
{
	struct dmaplane_xfer *x = kzalloc(sizeof(*x), GFP_KERNEL);

	if (!x)
		return NULL;
	kref_get(&c->ref);
	x->conn = c;
	x->write = write;
	return x;
}

/* Rendezvous receive finished: complete it, tell the sender. */
static void pull_done(struct dmaplane_xfer *x)
{
	int st = x->status;
	struct dmaplane_cqe cqe = {
		.ctx = x->rctx, .len = st ? 0 : x->len, .msg_len = x->msg_len,
		.tag = x->tag, .src = x->src, .data = x->cq_data,
		.status = st ? st : x->msg_len > x->len ? -EMSGSIZE : 0,
		.opcode = DMAPLANE_OP_RECV, .flags = x->cqe_flags,
	};

	dmaplane_msg_post(x->ep, &cqe);
	dmaplane_send_fin(x->conn, x->cookie,
			  st == -ECONNRESET ? -ECONNRESET : st ? -EIO : 0);
}

/*
 * Take @rdv out of its connection's index, so that a CANCEL can no longer
 * reach it.  Return: false when the peer withdrew it first (its FIN went
 * out already).
 */
bool dmaplane_rdv_take(struct dmaplane_rdv *rdv)
{
	struct xarray *xa = &rdv->conn->rdvs;
	bool taken;

	xa_lock(xa);
	taken = xa_load(xa, rdv->cookie) == rdv;
	if (taken)
		__xa_erase(xa, rdv->cookie);
	xa_unlock(xa);
	return taken;
}

/* Free @rdv, taken (or never indexed) already. */
void dmaplane_rdv_free(struct dmaplane_rdv *rdv)
{
	dmaplane_conn_put(rdv->conn);
	kfree(rdv);
}

/*
 * What the sender of a rendezvous whose pull could not start completes
 * with: a receiver going away (killed while it pinned, its file or its
 * address space gone) is a reset, like a local rendezvous's; anything
 * else an I/O error.
 */
static int pull_fin_status(struct dmaplane_ep *ep, int ret)
{
	if (ret == -ECONNRESET || ret == -EINTR || READ_ONCE(ep->dead) ||
	    fatal_signal_pending(current) ||
	    (ep->mm && !atomic_read(&ep->mm->mm_users)))
		return -ECONNRESET;
	return -EIO;
}

/* Receive @ctx that matched @rdv completes with @status, no data moved. */
static void rdv_recv_fail(const struct dmaplane_rdv *rdv, struct dmaplane_ep *ep,
			  u64 ctx, int status)
{
	struct dmaplane_cqe cqe = {
		.ctx = ctx, .msg_len = rdv->len, .tag = rdv->tag, .src = rdv->src,
		.data = rdv->cq_data, .status = status, .opcode = DMAPLANE_OP_RECV,
		.flags = rdv->cqe_flags,
	};

	dmaplane_msg_post(ep, &cqe);
}

/**
 * dmaplane_ib_pull() - a receive matched a rendezvous message of another
 *	node: pull the data into the receiver's buffer
 * @rdv: the message (freed here)
 * @ep: receiving endpoint
 * @buf: the receive's buffer, in @ep's address space or one of its regions
 * @ctx: the receive's context
 *
 * The receive completes on @ep's ring once the data is in (or with an
 * error); the sender completes when our FIN arrives.
 */
void dmaplane_ib_pull(struct dmaplane_rdv *rdv, struct dmaplane_ep *ep,
		      struct dmaplane_ubuf *buf, u64 ctx)
{
	struct dmaplane_conn *c = rdv->conn;
	struct dmaplane_xfer *x;
	int ret = -ENOMEM;

	if (!dmaplane_rdv_take(rdv)) {
		/* Its sender's endpoint closed: the data is gone. */
		rdv_recv_fail(rdv, ep, ctx, -ECONNRESET);
		dmaplane_rdv_free(rdv);
		return;
	}
	x = dmaplane_xfer_alloc(c, false);
	if (!x)
		goto err_complete;
	kref_get(&ep->ref);
	x->ep = ep;
	x->rctx = ctx;
	x->cookie = rdv->cookie;
	x->src = rdv->src;
	x->tag = rdv->tag;
	x->msg_len = rdv->len;
	x->cq_data = rdv->cq_data;
	x->cqe_flags = rdv->cqe_flags;
	x->len = min(buf->len, rdv->len);
	x->done = pull_done;
	if (x->len && buf->region) {
		/* A region's range: its pages, referenced (and charged). */
		kref_get(&buf->region->ref);
		x->region = buf->region;
		ret = dmaplane_xfer_region_pages(x, buf->roff, x->len);
	} else if (x->len) {
		ret = xfer_pin_user(x, ep->mm, buf, x->len);
	} else {
		ret = 0;
	}
	if (!ret)
		ret = dmaplane_xfer_start(x, rdv->segs, rdv->nsegs);
	if (!ret) {
		dmaplane_rdv_free(rdv);
		return;
	}
	dmaplane_xfer_free(x);
err_complete:
	rdv_recv_fail(rdv, ep, ctx, ret == -EFAULT || ret == -EOPNOTSUPP ? ret : -ECONNRESET);
	dmaplane_send_fin(c, rdv->cookie, pull_fin_status(ep, ret));
	dmaplane_rdv_free(rdv);
}

/**
 * dmaplane_ib_rdv_drop() - a rendezvous message is dropped undelivered
 * @rdv: the message (freed here)
 * @status: what its sender completes with
 */
void dmaplane_ib_rdv_drop(struct dmaplane_rdv *rdv, int status)
{
	if (dmaplane_rdv_take(rdv))
		dmaplane_send_fin(rdv->conn, rdv->cookie, status);
	dmaplane_rdv_free(rdv);
}

void dmaplane_rma_done(struct dmaplane_xfer *x)
{
	/* A PUT with data: the target's own completion, once the data is in. */
	if (x->ep && (x->cqe_flags & DMAPLANE_CQE_F_DATA))
		dmaplane_put_data_complete(x->ep, x->status, x->src, x->len, x->cq_data);
	dmaplane_send_fin(x->conn, x->cookie, x->status ? -EIO : 0);
}

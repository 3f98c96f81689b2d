// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane across nodes: receive.  The posted receive buffers, their
 * completions, and a handler per message type.
 * See ib.c for the transport as a whole.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "ib_loc.h"

static int rx_msg(struct dmaplane_conn *c, const void *body, bool eager,
		  const void *payload)
{
	const struct dmaplane_wire_msg *m = body;
	u64 src = dmaplane_src_value(c->slot, le64_to_cpu(m->src));
	u8 cqe_flags = m->flags ? DMAPLANE_CQE_F_DATA : 0;
	u64 cq_data = le64_to_cpu(m->data);
	struct dmaplane_rdv *rdv = NULL;
	int ret;

	if (!eager) {
		const struct dmaplane_wire_rts *rts = (const void *)(m + 1);
		u32 n = le32_to_cpu(rts->nsegs);

		rdv = kmalloc(struct_size(rdv, segs, n), GFP_KERNEL);
		if (!rdv)
			return -ENOMEM;
		kref_get(&c->ref);
		rdv->conn = c;
		rdv->cookie = le64_to_cpu(rts->cookie);
		rdv->src = src;
		rdv->tag = le64_to_cpu(m->tag);
		rdv->len = le64_to_cpu(m->msg_len);
		rdv->cq_data = cq_data;
		rdv->cqe_flags = cqe_flags;
		rdv->nsegs = n;
		memcpy(rdv->segs, rts->segs, n * sizeof(*rdv->segs));
		/* A cookie the peer uses twice at once names nothing. */
		ret = xa_insert(&c->rdvs, rdv->cookie, rdv, GFP_KERNEL);
		if (ret) {
			dmaplane_rdv_free(rdv);
			return ret == -EBUSY ? -EPROTO : ret;
		}
	}
	ret = dmaplane_msg_arrive_remote(le64_to_cpu(m->dst), le32_to_cpu(m->uid),
					 le64_to_cpu(m->auth_key), src,
					 le64_to_cpu(m->tag), le64_to_cpu(m->msg_len),
					 cq_data, cqe_flags, eager ? payload : NULL, rdv);
	if (ret) {
		/* Not queued: still the caller's, and still in the index. */
		if (rdv) {
			dmaplane_rdv_take(rdv);
			dmaplane_rdv_free(rdv);
		}
		/* Reported in the ACK that says it was consumed. */
		c->rx_nack = ret;
	}
	return 0;
}

static int rx_fin(struct dmaplane_conn *c, const struct dmaplane_wire_fin *f)
{
	u64 cookie = le64_to_cpu(f->cookie);
	struct dmaplane_sreg *s = NULL;
	struct dmaplane_pend *p, *tmp;
	bool now;

	mutex_lock(&c->tx_lock);
	/*
	 * Failing (a post that failed, under tx_lock: its SEND will never
	 * complete): the teardown completes what waits in @cookies.
	 */
	if (atomic_read(&c->failing)) {
		mutex_unlock(&c->tx_lock);
		return 0;
	}
	if (cookie <= U32_MAX)
		s = xa_load(&c->cookies, cookie);
	/*
	 * A FIN names a request the peer received: one still waiting for a
	 * credit is not known to it (a guessed cookie), and freeing it would
	 * leave the backlog pointing at freed MRs.
	 */
	if (!s || s->kind != COOKIE_SREG || !s->posted) {
		mutex_unlock(&c->tx_lock);
		return -EPROTO;
	}
	/* A rendezvous may be FINed before its ACK: forget the pend. */
	list_for_each_entry_safe(p, tmp, &c->sent, node) {
		if (p->sreg == s) {
			list_del(&p->node);
			dmaplane_pend_free(p);
		}
	}
	xa_erase(&c->cookies, cookie);
	now = dmaplane_sreg_finish_locked(c, s, (s32)le32_to_cpu(f->status));
	mutex_unlock(&c->tx_lock);
	if (now)
		dmaplane_sreg_complete(c, s, (s32)le32_to_cpu(f->status));
	return 0;
}

/* The peer withdraws an RTS (its sender's endpoint closed). */
static int rx_cancel(struct dmaplane_conn *c, const struct dmaplane_wire_cancel *k)
{
	u64 cookie = le64_to_cpu(k->cookie);
	struct dmaplane_rdv *rdv;

	/* Not found: matched already (its FIN follows the pull) or FINed. */
	rdv = xa_erase(&c->rdvs, cookie);
	if (rdv)
		dmaplane_send_fin(c, cookie, -ECONNRESET);
	return 0;
}

/* Check an RMA request the way do_rma() does on one node, then move data. */
static int rx_rma(struct dmaplane_conn *c, const struct dmaplane_wire_rma *r)
{
	const struct dmaplane_wire_seglist *sl = (const void *)(r + 1);
	u64 src = dmaplane_src_value(c->slot, le64_to_cpu(r->src));
	bool data = r->flags & DMAPLANE_WIRE_RMA_DATA;
	struct dmaplane_ep *dest, *target = NULL;
	struct dmaplane_region *reg = NULL;
	struct dmaplane_xfer *x = NULL;
	u64 len = le64_to_cpu(r->len);
	bool write = r->write;
	int status;

	dest = dmaplane_ep_get_by_uid(le64_to_cpu(r->dst));
	if (!dest) {
		status = -ECONNRESET;
		goto out_fin;
	}
	reg = dmaplane_region_lookup_rkey(le64_to_cpu(r->rkey));
	if (!reg || reg->owner_id != dest->id || READ_ONCE(dest->dead) ||
	    !dmaplane_ep_domain_ok(dest, le32_to_cpu(r->uid), le64_to_cpu(r->auth_key)))
		status = -ENOENT;
	else if (!(reg->access & (write ? DMAPLANE_ACCESS_REMOTE_WRITE :
					  DMAPLANE_ACCESS_REMOTE_READ)))
		status = -EACCES;
	else if (!len)
		status = le64_to_cpu(r->roffset) > reg->len ? -ERANGE : 0;
	else
		status = 1;
	/* A PUT with data needs room on the target's ring, or is not done. */
	if (status >= 0 && data) {
		if (dmaplane_ep_reserve_remote(dest))
			status = -EAGAIN;
		else
			target = dest;
	}
	if (!target)
		dmaplane_ep_put(dest);
	if (!status && target) {
		/* Nothing to move: the target completes at once. */
		dmaplane_put_data_complete(target, 0, src, 0, le64_to_cpu(r->data));
		dmaplane_ep_put(target);
		target = NULL;
	}
	if (status <= 0)
		goto out_fin;

	/* The target moves the data: READ for a PUT, WRITE for a GET. */
	x = dmaplane_xfer_alloc(c, !write);
	if (!x) {
		status = -ENOMEM;
		goto out_fin;
	}
	x->region = reg;
	reg = NULL;
	x->cookie = le64_to_cpu(r->cookie);
	x->len = len;
	x->done = dmaplane_rma_done;
	if (target) {
		/* The target's completion waits for the data (rma_done). */
		x->ep = target;
		target = NULL;
		x->src = src;
		x->cq_data = le64_to_cpu(r->data);
		x->cqe_flags = DMAPLANE_CQE_F_DATA;
	}
	status = dmaplane_xfer_region_pages(x, le64_to_cpu(r->roffset), len);
	if (!status)
		status = dmaplane_xfer_start(x, sl->segs, le32_to_cpu(sl->nsegs));
	if (!status)
		return 0;
	if (x->ep)	/* the target's credit back */
		dmaplane_put_data_complete(x->ep, status, src, 0, 0);
	dmaplane_xfer_free(x);
out_fin:
	if (target) {
		dmaplane_put_data_complete(target, status, src, 0, 0);
		dmaplane_ep_put(target);
	}
	dmaplane_region_put(reg);
	dmaplane_send_fin(c, le64_to_cpu(r->cookie), status);
	return 0;
}

static int rx_resolve(struct dmaplane_conn *c, const struct dmaplane_wire_resolve *q)
{
	struct dmaplane_wire_resolve *a;
	struct dmaplane_ep *ep;
	struct dmaplane_tx *tx;
	int status = 0;

	ep = dmaplane_ep_get_by_uid(le64_to_cpu(q->ep_uid));
	if (!ep || !dmaplane_ep_cq(ep) || READ_ONCE(ep->dead))
		status = -ECONNREFUSED;
	else if (!dmaplane_ep_domain_ok(ep, le32_to_cpu(q->uid), le64_to_cpu(q->auth_key)))
		status = -EACCES;
	if (ep)
		dmaplane_ep_put(ep);
	tx = dmaplane_tx_alloc(DMAPLANE_WIRE_RESOLVED, sizeof(*a));
	if (!tx)
		return -ENOMEM;
	a = dmaplane_tx_body(tx);
	*a = *q;
	a->status = cpu_to_le32(status);
	if (dmaplane_conn_submit(c, tx))
		dmaplane_tx_free(tx);
	return 0;
}

static int rx_resolved(struct dmaplane_conn *c, const struct dmaplane_wire_resolve *a)
{
	u64 cookie = le64_to_cpu(a->cookie);
	struct dmaplane_resolve_wait *w = NULL;

	mutex_lock(&c->tx_lock);
	if (cookie <= U32_MAX)
		w = xa_load(&c->cookies, cookie);
	if (!w || w->kind != COOKIE_RESOLVE) {
		mutex_unlock(&c->tx_lock);
		return -EPROTO;
	}
	xa_erase(&c->cookies, cookie);
	if (w->abandoned) {
		kfree(w);
	} else {
		w->status = (s32)le32_to_cpu(a->status);
		complete(&w->done);
	}
	mutex_unlock(&c->tx_lock);
	return 0;
}

static int nack_status(const struct dmaplane_wire_ack *ack, u64 seq)
{
	u32 i;

	for (i = 0; i < le32_to_cpu(ack->nnacks); i++)
		if (le64_to_cpu(ack->nacks[i].seq) == seq)
			return (s32)le32_to_cpu(ack->nacks[i].status);
	return 0;
}

static int rx_ack(struct dmaplane_conn *c, const struct dmaplane_wire_ack *ack)
{
	u64 consumed = le64_to_cpu(ack->consumed);
	struct dmaplane_pend *p, *tmp;
	LIST_HEAD(done);
	u32 i, found = 0;
	int ret;

	mutex_lock(&c->tx_lock);
	/* As in rx_fin(): the teardown completes what is pending. */
	if (atomic_read(&c->failing)) {
		mutex_unlock(&c->tx_lock);
		return 0;
	}
	ret = dmaplane_credits_return(&c->credits, le32_to_cpu(ack->credits));
	if (ret || consumed > c->tx_seq) {
		mutex_unlock(&c->tx_lock);
		return -EPROTO;
	}
	list_for_each_entry_safe(p, tmp, &c->sent, node) {
		if (p->seq > consumed)
			break;
		list_move_tail(&p->node, &done);
	}
	/* Every NACK must name a SEND of this ACK. */
	for (i = 0; i < le32_to_cpu(ack->nnacks); i++) {
		u64 seq = le64_to_cpu(ack->nacks[i].seq);

		list_for_each_entry(p, &done, node)
			if (p->seq == seq)
				found++;
	}
	if (found != le32_to_cpu(ack->nnacks)) {
		list_splice(&done, &c->sent);
		mutex_unlock(&c->tx_lock);
		return -EPROTO;
	}
	list_for_each_entry_safe(p, tmp, &done, node) {
		int st = nack_status(ack, p->seq);

		if (!p->sreg || !st)
			continue;
		xa_erase(&c->cookies, p->sreg->cookie);
		/* Its SEND's completion completes it: forget the pend. */
		if (!dmaplane_sreg_finish_locked(c, p->sreg, st)) {
			list_del(&p->node);
			dmaplane_pend_free(p);
		}
	}
	/* Credits came back: send what waited for them. */
	if (le32_to_cpu(ack->credits))
		c->credit_wait = jiffies;
	while (!list_empty(&c->backlog) && dmaplane_credits_take(&c->credits)) {
		struct dmaplane_tx *tx = list_first_entry(&c->backlog,
							  struct dmaplane_tx, node);

		list_del(&tx->node);
		if (dmaplane_tx_is_answer(tx))
			c->backlog_answers--;
		if (dmaplane_tx_post_locked(c, tx)) {
			dmaplane_conn_fail(c, false);
			break;
		}
	}
	mutex_unlock(&c->tx_lock);

	list_for_each_entry_safe(p, tmp, &done, node) {
		int st = nack_status(ack, p->seq);

		dmaplane_pend_uncharge(p);
		if (p->sreg) {
			if (st)
				dmaplane_sreg_complete(c, p->sreg, st);
		} else {
			dmaplane_msg_complete(p->ep, DMAPLANE_OP_SEND, p->ctx, st,
					      st ? 0 : p->len, p->len, p->tag, 0);
		}
		dmaplane_pend_free(p);
	}
	return 0;
}

/*
 * Handle one message.  Return: 1 for a consumed request, 0 for an ACK, or
 * a negative errno for a malformed message or one naming what we never
 * issued (the connection is dropped).
 */
static int rx_handle(struct dmaplane_conn *c, const void *buf, u32 byte_len,
		     const void *payload)
{
	const struct dmaplane_wire_hdr *h = buf;
	const void *body = buf + sizeof(*h);
	int type, ret;
	u64 seq;

	type = dmaplane_wire_check(buf, byte_len);
	if (type < 0)
		return type;
	if (type == DMAPLANE_WIRE_ACK)
		return rx_ack(c, body);
	seq = le64_to_cpu(h->seq);
	if (seq != c->rx_seq + 1)
		return -EPROTO;
	/*
	 * Every request takes a credit, which comes back once it was
	 * consumed: requests consumed and not yet credited back are at
	 * most the credits granted.  A peer beyond them is dropped (and
	 * could otherwise overrun the receive buffers and @nacks).
	 */
	mutex_lock(&c->ack_lock);
	ret = c->credits.owed >= c->credits.max ? -EPROTO : 0;
	mutex_unlock(&c->ack_lock);
	if (ret) {
		pr_warn_ratelimited("%pISp sent beyond its credits\n", &c->peer->addr);
		return ret;
	}
	c->rx_seq = seq;
	switch (type) {
	case DMAPLANE_WIRE_EAGER:
	case DMAPLANE_WIRE_RTS:
		ret = rx_msg(c, body, type == DMAPLANE_WIRE_EAGER, payload);
		break;
	case DMAPLANE_WIRE_FIN:
		ret = rx_fin(c, body);
		break;
	case DMAPLANE_WIRE_RMA_REQ:
		ret = rx_rma(c, body);
		break;
	case DMAPLANE_WIRE_RESOLVE:
		ret = rx_resolve(c, body);
		break;
	case DMAPLANE_WIRE_RESOLVED:
		ret = rx_resolved(c, body);
		break;
	case DMAPLANE_WIRE_CANCEL:
		ret = rx_cancel(c, body);
		break;
	default:
		ret = 0;	/* PING: consumed, answered by the ACK */
		break;
	}
	return ret ? ret : 1;
}

int dmaplane_rx_post(struct dmaplane_conn *c, struct dmaplane_rx *rx)
{
	struct ib_recv_wr wr = {};
	struct ib_sge sge[2] = {
		{ .addr = rx->dma, .length = DMAPLANE_WIRE_HDR_BYTES,
		  .lkey = c->dev->pd->local_dma_lkey },
		{ .addr = rx->payload_dma, .length = DMAPLANE_WIRE_EAGER_MAX,
		  .lkey = c->dev->pd->local_dma_lkey },
	};

	wr.wr_cqe = &rx->cqe;
	wr.sg_list = sge;
	wr.num_sge = 2;
	return ib_post_recv(c->qp, &wr, NULL);
}

void dmaplane_rx_free(struct dmaplane_conn *c, struct dmaplane_rx *rx)
{
	struct ib_device *ibdev = c->dev->ibdev;

	if (rx->dma)
		ib_dma_unmap_single(ibdev, rx->dma, DMAPLANE_WIRE_HDR_BYTES, DMA_FROM_DEVICE);
	if (rx->payload_dma)
		ib_dma_unmap_single(ibdev, rx->payload_dma, DMAPLANE_WIRE_EAGER_MAX,
				    DMA_FROM_DEVICE);
	kfree(rx->buf);
	kfree(rx->payload);
}

int dmaplane_rx_alloc(struct dmaplane_conn *c, struct dmaplane_rx *rx)
{
	struct ib_device *ibdev = c->dev->ibdev;
	u64 dma;

	rx->buf = kmalloc(DMAPLANE_WIRE_HDR_BYTES, GFP_KERNEL);
	/* 16 KiB: straight from the page allocator, page aligned. */
	rx->payload = kmalloc(DMAPLANE_WIRE_EAGER_MAX, GFP_KERNEL);
	if (!rx->buf || !rx->payload)
		return -ENOMEM;
	dma = ib_dma_map_single(ibdev, rx->buf, DMAPLANE_WIRE_HDR_BYTES, DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(ibdev, dma))
		return -ENOMEM;
	rx->dma = dma;
	dma = ib_dma_map_single(ibdev, rx->payload, DMAPLANE_WIRE_EAGER_MAX, DMA_FROM_DEVICE);
	if (ib_dma_mapping_error(ibdev, dma))
		return -ENOMEM;
	rx->payload_dma = dma;
	return 0;
}

void dmaplane_rx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct dmaplane_rx *rx = container_of(wc->wr_cqe, struct dmaplane_rx, cqe);
	struct dmaplane_conn *c = rx->conn;
	struct ib_device *ibdev = c->dev->ibdev;
	const void *msg;
	int ret;

	if (wc->status != IB_WC_SUCCESS) {
		/* A message larger than any buffer is malformed input too. */
		if (wc->status != IB_WC_WR_FLUSH_ERR) {
			pr_warn_ratelimited("receive from %pISp failed: %s\n", &c->peer->addr,
					    ib_wc_status_msg(wc->status));
			/*
			 * Our receive WRs are well formed: a length or
			 * operation error here is a SEND larger than any
			 * buffer (rxe reports it as LOC_QP_OP_ERR).
			 */
			dmaplane_conn_fail(c, wc->status == IB_WC_LOC_LEN_ERR ||
					   wc->status == IB_WC_LOC_QP_OP_ERR);
		} else {
			dmaplane_conn_fail(c, false);
		}
		return;
	}
	/*
	 * A condemned connection acts on nothing more: what the peer sent
	 * after a bad message is not handled (nor the buffer reposted).
	 */
	if (atomic_read(&c->failing))
		return;
	/*
	 * A message can overtake the ESTABLISHED event: wait for it, so that
	 * the node slot is known and answers can be sent.
	 */
	if (READ_ONCE(c->state) == CONN_CONNECTING &&
	    !wait_event_timeout(c->up_wq, READ_ONCE(c->state) != CONN_CONNECTING,
				IB_RESOLVE_TIMEOUT)) {
		dmaplane_conn_fail(c, false);
		return;
	}
	if (READ_ONCE(c->state) == CONN_DEAD)
		return;
	dmaplane_conn_alive(c);
	atomic64_inc(&c->peer->rx_msgs);
	atomic64_add(wc->byte_len, &c->peer->rx_bytes);
	ib_dma_sync_single_for_cpu(ibdev, rx->dma, DMAPLANE_WIRE_HDR_BYTES, DMA_FROM_DEVICE);
	ib_dma_sync_single_for_cpu(ibdev, rx->payload_dma, DMAPLANE_WIRE_EAGER_MAX,
				   DMA_FROM_DEVICE);
	msg = rx->buf;
	if (wc->byte_len > DMAPLANE_WIRE_HDR_BYTES &&
	    ((u8 *)rx->buf)[0] != DMAPLANE_WIRE_EAGER) {
		/* A control message spilled into the second piece. */
		if (wc->byte_len > DMAPLANE_WIRE_CTRL_MAX) {
			ret = -EBADMSG;
			goto out_malformed;
		}
		memcpy(c->scratch, rx->buf, DMAPLANE_WIRE_HDR_BYTES);
		memcpy(c->scratch + DMAPLANE_WIRE_HDR_BYTES, rx->payload,
		       wc->byte_len - DMAPLANE_WIRE_HDR_BYTES);
		msg = c->scratch;
	}
	ret = rx_handle(c, msg, wc->byte_len, rx->payload);
out_malformed:
	if (ret < 0) {
		const struct dmaplane_wire_hdr *h = msg;

		/* What and where, so that a protocol error can be traced. */
		pr_warn_ratelimited("dropping the connection to %pISp: malformed message (%d): type %u, %u bytes, seq %llu (expected %llu)\n",
				    &c->peer->addr, ret, h->type, wc->byte_len,
				    le64_to_cpu(h->seq), c->rx_seq + 1);
		dmaplane_conn_fail(c, true);
		return;
	}
	ib_dma_sync_single_for_device(ibdev, rx->dma, DMAPLANE_WIRE_HDR_BYTES, DMA_FROM_DEVICE);
	ib_dma_sync_single_for_device(ibdev, rx->payload_dma, DMAPLANE_WIRE_EAGER_MAX,
				      DMA_FROM_DEVICE);
	if (dmaplane_rx_post(c, rx)) {
		dmaplane_conn_fail(c, false);
		return;
	}
	if (ret) {
		/*
		 * The request's failure, its consumption and its credit in
		 * one critical section: the next ACK reports all or none.
		 * At most one NACK per credit owed, so @nacks has room.
		 */
		mutex_lock(&c->ack_lock);
		if (c->rx_nack) {
			c->nacks[c->nnacks].seq = cpu_to_le64(c->rx_seq);
			c->nacks[c->nnacks].status = cpu_to_le32(c->rx_nack);
			c->nnacks++;
			c->rx_nack = 0;
		}
		dmaplane_credits_consumed(&c->credits);
		c->rx_consumed = c->rx_seq;
		mutex_unlock(&c->ack_lock);
		queue_work(dmaplane_ib_wq, &c->ack_work);
	}
}

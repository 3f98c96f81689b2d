// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane across nodes: transmit.  Messages on the send queue, credits
 * and ACKs, the local buffers a peer may reach (registered for an RTS or
 * an RMA_REQ), and SEND and PUT/GET requests to other nodes.
 * See ib.c for the transport as a whole.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "ib_loc.h"

static unsigned long eager_backlog = 4UL << 20;
module_param(eager_backlog, ulong, 0644);
MODULE_PARM_DESC(eager_backlog,
		 "Bytes of eager messages an endpoint may have on their way to other nodes (not yet acknowledged)");

/* Give @p's eager bytes back: before its completion is seen. */
void dmaplane_pend_uncharge(struct dmaplane_pend *p)
{
	if (p->charged)
		atomic64_sub(p->charged, &p->ep->eager_backlog);
	p->charged = 0;
}

void dmaplane_pend_free(struct dmaplane_pend *p)
{
	dmaplane_pend_uncharge(p);
	dmaplane_ep_put(p->ep);
	kfree(p);
}

/* Sending ------------------------------------------------------------- */

struct dmaplane_tx *dmaplane_tx_alloc(u8 type, u32 body_len)
{
	struct dmaplane_wire_hdr *h;
	struct dmaplane_tx *tx;

	tx = kzalloc(sizeof(*tx), GFP_KERNEL);
	if (!tx)
		return NULL;
	tx->len = sizeof(*h) + body_len;
	tx->buf = kzalloc(tx->len, GFP_KERNEL);
	if (!tx->buf) {
		kfree(tx);
		return NULL;
	}
	h = tx->buf;
	h->type = type;
	h->version = DMAPLANE_WIRE_VERSION;
	h->len = cpu_to_le32(body_len);
	tx->request = type != DMAPLANE_WIRE_ACK;
	return tx;
}

/* A FIN or a RESOLVED: an answer to a request of the peer. */
bool dmaplane_tx_is_answer(const struct dmaplane_tx *tx)
{
	u8 type = ((const struct dmaplane_wire_hdr *)tx->buf)->type;

	return type == DMAPLANE_WIRE_FIN || type == DMAPLANE_WIRE_RESOLVED;
}

void *dmaplane_tx_body(struct dmaplane_tx *tx)
{
	return tx->buf + sizeof(struct dmaplane_wire_hdr);
}

void dmaplane_tx_free(struct dmaplane_tx *tx)
{
	kfree(tx->buf);
	kfree(tx);
}

/* The peer's side answered: the connection is alive (see @last_rx). */
void dmaplane_conn_alive(struct dmaplane_conn *c)
{
	WRITE_ONCE(c->last_rx, jiffies);
}

/*
 * A signalled work request is about to be posted on @c's send queue;
 * under tx_lock.  An idle queue starts its progress clock now.
 */
void dmaplane_sq_posting(struct dmaplane_conn *c)
{
	lockdep_assert_held(&c->tx_lock);
	if (!atomic_read(&c->sq_wrs))
		WRITE_ONCE(c->sq_progress, jiffies);
	atomic_inc(&c->sq_wrs);
}

/* A signalled work request of @c's send queue completed (or was not posted). */
void dmaplane_sq_done(struct dmaplane_conn *c)
{
	WRITE_ONCE(c->sq_progress, jiffies);
	atomic_dec(&c->sq_wrs);
}

/*
 * The SEND of an RTS or RMA_REQ completed (or failed): its registrations
 * have run.  One the peer FINed or NACKed before is completed now.
 */
static void tx_sreg_sent(struct dmaplane_conn *c, struct dmaplane_sreg *s, bool ok)
{
	bool early;

	mutex_lock(&c->tx_lock);
	s->sent = ok;
	early = s->early;
	mutex_unlock(&c->tx_lock);
	/* Not early: @s is the FIN's or the teardown's, maybe freed now. */
	if (early)
		dmaplane_sreg_complete(c, s, ok ? s->early_status : -ECONNRESET);
}

/**
 * dmaplane_sreg_finish_locked() - the peer FINed or NACKed @s
 * @c: the connection, tx_lock held
 * @s: the registered buffer, already taken out of @c's cookies
 * @status: the status to complete it with
 *
 * Return: true when the caller completes @s now (dmaplane_sreg_complete()
 * once tx_lock is dropped); false when its SEND has not completed yet, and
 * tx_sreg_sent() will.
 */
bool dmaplane_sreg_finish_locked(struct dmaplane_conn *c, struct dmaplane_sreg *s,
				 int status)
{
	lockdep_assert_held(&c->tx_lock);
	if (s->sent)
		return true;
	s->early = true;
	s->early_status = status;
	return false;
}

static void tx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct dmaplane_tx *tx = container_of(wc->wr_cqe, struct dmaplane_tx, cqe);
	struct dmaplane_conn *c = tx->conn;

	if (tx->sreg)
		tx_sreg_sent(c, tx->sreg, wc->status == IB_WC_SUCCESS);
	dmaplane_sq_done(c);
	ib_dma_unmap_single(c->dev->ibdev, tx->dma, tx->len, DMA_TO_DEVICE);
	if (wc->status == IB_WC_SUCCESS) {
		dmaplane_conn_alive(c);
	} else {
		if (wc->status != IB_WC_WR_FLUSH_ERR)
			pr_warn_ratelimited("send to %pISp failed: %s\n", &c->peer->addr,
					    ib_wc_status_msg(wc->status));
		/* The QP is in the error state (a flush says so too). */
		dmaplane_conn_fail(c, false);
	}
	dmaplane_tx_free(tx);
	dmaplane_conn_put(c);
}

/* Post @tx (a credit is taken for a request); under tx_lock. */
int dmaplane_tx_post_locked(struct dmaplane_conn *c, struct dmaplane_tx *tx)
{
	struct dmaplane_wire_hdr *h = tx->buf;
	struct ib_send_wr wr = {}, *first = &wr;
	struct ib_sge sge;
	int ret;

	lockdep_assert_held(&c->tx_lock);
	if (tx->request) {
		h->seq = cpu_to_le64(++c->tx_seq);
		if (tx->sreg)
			tx->sreg->posted = true;
		if (tx->pend) {
			tx->pend->seq = c->tx_seq;
			list_add_tail(&tx->pend->node, &c->sent);
			tx->pend = NULL;
		}
	}
	tx->dma = ib_dma_map_single(c->dev->ibdev, tx->buf, tx->len, DMA_TO_DEVICE);
	if (ib_dma_mapping_error(c->dev->ibdev, tx->dma)) {
		ret = -ENOMEM;
		goto err_free;
	}
	sge.addr = tx->dma;
	sge.length = tx->len;
	sge.lkey = c->dev->pd->local_dma_lkey;
	tx->cqe.done = tx_done;
	tx->conn = c;
	wr.wr_cqe = &tx->cqe;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IB_WR_SEND;
	wr.send_flags = IB_SEND_SIGNALED;
	if (tx->reg_wrs) {
		struct ib_send_wr *last = tx->reg_wrs;

		while (last->next)
			last = last->next;
		last->next = &wr;
		first = tx->reg_wrs;
	}
	kref_get(&c->ref);
	dmaplane_sq_posting(c);
	ret = ib_post_send(c->qp, first, NULL);
	if (ret) {
		dmaplane_sq_done(c);
		dmaplane_conn_put(c);
		ib_dma_unmap_single(c->dev->ibdev, tx->dma, tx->len, DMA_TO_DEVICE);
		goto err_free;
	}
	atomic64_inc(&c->peer->tx_msgs);
	atomic64_add(tx->len, &c->peer->tx_bytes);
	return 0;

err_free:
	dmaplane_tx_free(tx);
	return ret;
}

/*
 * Send @tx now, or queue it until a credit comes back.  -ECONNRESET when
 * the connection is not up: @tx and its pend stay the caller's.  Once
 * accepted, a failure to post breaks the connection, whose teardown fails
 * what was pending.
 */
int dmaplane_conn_submit_locked(struct dmaplane_conn *c, struct dmaplane_tx *tx)
{
	lockdep_assert_held(&c->tx_lock);
	if (c->state != CONN_UP)
		return -ECONNRESET;
	if (tx->request &&
	    (!list_empty(&c->backlog) || !dmaplane_credits_take(&c->credits))) {
		if (list_empty(&c->backlog))
			c->credit_wait = jiffies;
		list_add_tail(&tx->node, &c->backlog);
		if (dmaplane_tx_is_answer(tx) &&
		    ++c->backlog_answers > IB_BACKLOG_ANSWERS) {
			pr_warn_ratelimited("%pISp keeps our credits while its requests queue %u answers: dropping the connection\n",
					    &c->peer->addr, c->backlog_answers);
			dmaplane_conn_fail(c, true);
		}
		return 0;
	}
	if (dmaplane_tx_post_locked(c, tx))
		dmaplane_conn_fail(c, false);
	return 0;
}

int dmaplane_conn_submit(struct dmaplane_conn *c, struct dmaplane_tx *tx)
{
	int ret;

	mutex_lock(&c->tx_lock);
	ret = dmaplane_conn_submit_locked(c, tx);
	mutex_unlock(&c->tx_lock);
	return ret;
}

/* Send a FIN for @cookie; a dead connection needs none. */
void dmaplane_send_fin(struct dmaplane_conn *c, u64 cookie, int status)
{
	struct dmaplane_wire_fin *f;
	struct dmaplane_tx *tx;

	tx = dmaplane_tx_alloc(DMAPLANE_WIRE_FIN, sizeof(*f));
	if (!tx) {
		dmaplane_conn_fail(c, false);
		return;
	}
	f = dmaplane_tx_body(tx);
	f->cookie = cpu_to_le64(cookie);
	f->status = cpu_to_le32(status);
	if (dmaplane_conn_submit(c, tx))
		dmaplane_tx_free(tx);
}

void dmaplane_ack_work(struct work_struct *work)
{
	struct dmaplane_conn *c = container_of(work, struct dmaplane_conn, ack_work);
	struct dmaplane_wire_ack *ack;
	struct dmaplane_tx *tx;
	u32 n;

	mutex_lock(&c->ack_lock);
	n = c->nnacks;
	if (!c->credits.owed) {
		mutex_unlock(&c->ack_lock);
		return;
	}
	tx = dmaplane_tx_alloc(DMAPLANE_WIRE_ACK, struct_size(ack, nacks, n));
	if (!tx) {
		mutex_unlock(&c->ack_lock);
		dmaplane_conn_fail(c, false);
		return;
	}
	ack = dmaplane_tx_body(tx);
	ack->consumed = cpu_to_le64(c->rx_consumed);
	ack->credits = cpu_to_le32(dmaplane_credits_owed(&c->credits));
	ack->nnacks = cpu_to_le32(n);
	memcpy(ack->nacks, c->nacks, n * sizeof(*c->nacks));
	c->nnacks = 0;
	/* Under ack_lock, so that ACKs go out in the order they were built. */
	if (dmaplane_conn_submit(c, tx))
		dmaplane_tx_free(tx);
	mutex_unlock(&c->ack_lock);
}

/* Registered buffers ----------------------------------------------------- */

/*
 * Take the peer's access to the buffer of @s away, in the order that
 * keeps the device from reaching pages it should not: deregister the MRs
 * (the remote keys stop working), then DMA-unmap, then unpin.
 */
static void sreg_release(struct dmaplane_conn *c, struct dmaplane_sreg *s)
{
	unsigned int i;

	for (i = 0; i < s->nmrs; i++) {
		if (s->mrs[i].mr)
			ib_dereg_mr(s->mrs[i].mr);
		if (s->mrs[i].mapped)
			ib_dma_unmap_sg(c->dev->ibdev, s->mrs[i].sgt.sgl,
					s->mrs[i].sgt.orig_nents, DMA_BIDIRECTIONAL);
		sg_free_table(&s->mrs[i].sgt);
	}
	if (s->region_pages) {
		for (i = 0; i < s->npages; i++)
			put_page(s->pages[i]);
		kvfree(s->pages);
	} else if (s->pages) {
		unpin_user_pages_dirty_lock(s->pages, s->npages,
					    s->opcode == DMAPLANE_OP_GET);
		dmaplane_stat_sub(xfer_pages, s->npages);
		kvfree(s->pages);
	}
	if (s->mm) {
		dmaplane_uncharge_pages(s->mm, s->charged);
		mmdrop(s->mm);
	}
}

static void sreg_free(struct dmaplane_conn *c, struct dmaplane_sreg *s)
{
	sreg_release(c, s);
	dmaplane_ep_put(s->ep);
	kfree(s);
}

/*
 * Complete the operation of @s and free it.  The completion comes after
 * the release: once the user sees it, the peer can no longer reach the
 * buffer (a GET cannot write into memory already reused).
 */
void dmaplane_sreg_complete(struct dmaplane_conn *c, struct dmaplane_sreg *s,
			    int status)
{
	sreg_release(c, s);
	dmaplane_msg_complete(s->ep, s->opcode, s->ctx, status, status ? 0 : s->len,
			      s->len, s->tag, 0);
	dmaplane_ep_put(s->ep);
	kfree(s);
}

/*
 * Register @np pages of @s from @pos, @l bytes from offset @off in the
 * first, in MRs of at most @maxp pages each.
 */
static int sreg_map(struct dmaplane_conn *c, struct dmaplane_sreg *s,
		    unsigned int pos, unsigned int np, unsigned int off, u64 l,
		    unsigned int maxp, int access)
{
	struct ib_device *ibdev = c->dev->ibdev;
	unsigned int done = 0;
	int ret;

	while (done < np) {
		unsigned int cnt = min(np - done, maxp);
		u64 bytes = min_t(u64, (u64)cnt * PAGE_SIZE - off, l);
		unsigned int k = s->nmrs;
		struct ib_mr *mr;
		int n;

		if (k == DMAPLANE_WIRE_MAX_SEGS)
			return -EMSGSIZE;
		s->nmrs++;
		ret = sg_alloc_table_from_pages(&s->mrs[k].sgt, s->pages + pos + done,
						cnt, off, bytes, GFP_KERNEL);
		if (ret)
			return ret;
		n = ib_dma_map_sg(ibdev, s->mrs[k].sgt.sgl, s->mrs[k].sgt.orig_nents,
				  DMA_BIDIRECTIONAL);
		if (!n)
			return -ENOMEM;
		s->mrs[k].mapped = true;
		mr = ib_alloc_mr(c->dev->pd, IB_MR_TYPE_MEM_REG, cnt + 1);
		if (IS_ERR(mr))
			return PTR_ERR(mr);
		s->mrs[k].mr = mr;
		if (ib_map_mr_sg(mr, s->mrs[k].sgt.sgl, n, NULL, PAGE_SIZE) != n)
			return -EINVAL;
		s->reg[k].wr.opcode = IB_WR_REG_MR;
		s->reg[k].mr = mr;
		s->reg[k].key = mr->rkey;
		s->reg[k].access = access;
		if (k)
			s->reg[k - 1].wr.next = &s->reg[k].wr;
		s->segs[k].addr = cpu_to_le64(mr->iova);
		s->segs[k].rkey = cpu_to_le32(mr->rkey);
		s->segs[k].len = cpu_to_le32(bytes);
		done += cnt;
		l -= bytes;
		off = 0;
	}
	return 0;
}

/*
 * Take the pages of buffer @b for @s: a range of a region uses the
 * region's pages (already charged, referenced here); user memory of the
 * current task is pinned until the peer's FIN, which may be long for a
 * SEND: charged like a registration (RLIMIT_MEMLOCK unless CAP_IPC_LOCK,
 * and the module cap).  Uses no device: it may block for long (a fault
 * served by userfaultfd or FUSE), outside sreg_enter().
 */
static int sreg_pin(struct dmaplane_sreg *s, struct dmaplane_ubuf *b)
{
	bool write = s->opcode == DMAPLANE_OP_GET;
	unsigned int total = 0, pos = 0, i;
	int ret;

	if (b->region) {
		if (!b->len)
			return 0;
		ret = dmaplane_region_pages(b->region, b->roff, b->len, &s->pages,
					    &s->npages, &s->first_off);
		if (ret)
			return ret;
		s->region_pages = true;
		return 0;
	}
	for (i = 0; i < b->nsegs; i++) {
		unsigned long a = (unsigned long)b->segs[i].iov_base;
		size_t l = b->segs[i].iov_len;

		if (l)
			total += DIV_ROUND_UP(offset_in_page(a) + l, PAGE_SIZE);
	}
	ret = dmaplane_charge_pages(current->mm, total);
	if (ret)
		return ret;
	mmgrab(current->mm);
	s->mm = current->mm;
	s->charged = total;
	s->pages = kvmalloc_array(total, sizeof(*s->pages), GFP_KERNEL);
	if (!s->pages)
		return -ENOMEM;

	for (i = 0; i < b->nsegs; i++) {
		unsigned long a = (unsigned long)b->segs[i].iov_base;
		size_t l = b->segs[i].iov_len;
		unsigned int np;
		int pinned;

		if (!l)
			continue;
		np = DIV_ROUND_UP(offset_in_page(a) + l, PAGE_SIZE);
		pinned = pin_user_pages_fast(a & PAGE_MASK, np,
					     FOLL_LONGTERM | (write ? FOLL_WRITE : 0),
					     s->pages + pos);
		if (pinned > 0) {
			s->npages += pinned;
			dmaplane_stat_add(xfer_pages, pinned);
		}
		if (pinned != np)
			return pinned < 0 ? pinned : -EFAULT;
		pos += np;
	}
	return 0;
}

/*
 * Register the pages sreg_pin() took of @b for remote read (SEND, PUT) or
 * remote write (GET), in MRs of at most the device's page-list length
 * each; between sreg_enter() and sreg_exit().
 */
static int sreg_build(struct dmaplane_conn *c, struct dmaplane_sreg *s,
		      struct dmaplane_ubuf *b)
{
	struct ib_device *ibdev = c->dev->ibdev;
	/*
	 * One page short of the device's limit, and every MR one page larger
	 * than it needs: rxe (6.1) reads one page-map entry past an MR whose
	 * page count is a multiple of its 256-entry maps.
	 */
	unsigned int maxp = min_t(u32, ibdev->attrs.max_fast_reg_page_list_len, 512) - 1;
	int access = s->opcode == DMAPLANE_OP_GET ?
		     IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE : IB_ACCESS_REMOTE_READ;
	unsigned int pos = 0, i;
	int ret;

	if (ibdev->attrs.max_fast_reg_page_list_len < 2)
		return -EOPNOTSUPP;
	if (b->region)
		return b->len ? sreg_map(c, s, 0, s->npages, s->first_off, b->len, maxp,
					 access) : 0;
	for (i = 0; i < b->nsegs; i++) {
		unsigned long a = (unsigned long)b->segs[i].iov_base;
		size_t l = b->segs[i].iov_len;
		unsigned int np;

		if (!l)
			continue;
		np = DIV_ROUND_UP(offset_in_page(a) + l, PAGE_SIZE);
		ret = sreg_map(c, s, pos, np, offset_in_page(a), l, maxp, access);
		if (ret)
			return ret;
		pos += np;
	}
	return 0;
}

/*
 * A sender is about to build registrations on @c's device: counted, so
 * that the teardown keeps the device (and its PD) until sreg_exit().
 * False when @c is no longer up (the teardown may be past its wait).
 */
static bool sreg_enter(struct dmaplane_conn *c)
{
	bool up;

	mutex_lock(&c->tx_lock);
	up = c->state == CONN_UP;
	if (up)
		atomic_inc(&c->sreg_builders);
	mutex_unlock(&c->tx_lock);
	return up;
}

/* The sender submitted its registrations, or undid them. */
static void sreg_exit(struct dmaplane_conn *c)
{
	if (atomic_dec_and_test(&c->sreg_builders))
		wake_up_all(&c->rw_xfers_wq);
}

/*
 * Pin @b's pages for @s, then, counted in sreg_builders, register them on
 * @c's device.  Return: 0, counted (sreg_exit() once @s is submitted or
 * freed); or an error, @s freed and nothing counted.
 */
static int sreg_prepare(struct dmaplane_conn *c, struct dmaplane_sreg *s,
			struct dmaplane_ubuf *b)
{
	int ret = sreg_pin(s, b);

	if (!ret && !sreg_enter(c))
		ret = -ECONNRESET;
	if (ret) {
		sreg_free(c, s);	/* no MR yet: no device used */
		return ret;
	}
	ret = sreg_build(c, s, b);
	if (ret) {
		sreg_free(c, s);
		sreg_exit(c);
	}
	return ret;
}

/* A registered buffer for an operation of @ep, before sreg_prepare(). */
static struct dmaplane_sreg *sreg_alloc(struct dmaplane_ep *ep, u8 opcode, u64 ctx,
					u64 tag, u64 len)
{
	struct dmaplane_sreg *s = kzalloc(sizeof(*s), GFP_KERNEL);

	if (!s)
		return NULL;
	s->kind = COOKIE_SREG;
	kref_get(&ep->ref);
	s->ep = ep;
	s->opcode = opcode;
	s->ctx = ctx;
	s->tag = tag;
	s->len = len;
	return s;
}

/*
 * Send @tx (an RTS or RMA_REQ whose segment list, at @segs and counted in
 * @nsegs, ends the message) with @s, already registered, waiting for the
 * FIN.  On error nothing was sent and the caller frees @tx and @s.
 */
static int sreg_submit(struct dmaplane_conn *c, struct dmaplane_sreg *s,
		       struct dmaplane_tx *tx, __le32 *nsegs,
		       struct dmaplane_wire_seg *segs, __le64 *cookie)
{
	struct dmaplane_wire_hdr *h = tx->buf;
	int ret;

	*nsegs = cpu_to_le32(s->nmrs);
	memcpy(segs, s->segs, s->nmrs * sizeof(*segs));
	/* tx was sized for the most segments: send only those used. */
	tx->len = (void *)(segs + s->nmrs) - tx->buf;
	h->len = cpu_to_le32(tx->len - sizeof(*h));
	if (s->nmrs)
		tx->reg_wrs = &s->reg[0].wr;
	tx->sreg = s;
	mutex_lock(&c->tx_lock);
	if (c->state != CONN_UP) {
		ret = -ECONNRESET;
		goto out_unlock;
	}
	ret = xa_alloc_cyclic(&c->cookies, &s->cookie, s, xa_limit_32b,
			      &c->next_cookie, GFP_KERNEL);
	if (ret < 0)
		goto out_unlock;
	*cookie = cpu_to_le64(s->cookie);
	ret = dmaplane_conn_submit_locked(c, tx);
	if (ret)
		xa_erase(&c->cookies, s->cookie);
out_unlock:
	mutex_unlock(&c->tx_lock);
	return ret < 0 ? ret : 0;
}

/**
 * dmaplane_ib_send() - SEND to an endpoint of another node
 * @ep: sending endpoint
 * @dst: destination source value (node slot and ep_uid)
 * @op: the operation
 * @buf: its buffer (of the current task, or one of its regions)
 *
 * Return: 0 when accepted (it completes on the ring), or -ECONNRESET (no
 * live connection), -EAGAIN (ring full), -EMSGSIZE (more segments than a
 * rendezvous carries), -EFAULT, -ENOMEM (also: a rendezvous buffer over
 * RLIMIT_MEMLOCK or the module cap).
 */
int dmaplane_ib_send(struct dmaplane_ep *ep, u64 dst, const struct dmaplane_op *op,
		     struct dmaplane_ubuf *buf)
{
	bool eager = buf->len <= min_t(u64, dmaplane_eager_threshold(),
				       DMAPLANE_WIRE_EAGER_MAX);
	struct dmaplane_region_map map;
	struct dmaplane_wire_rts *rts;
	struct dmaplane_sreg *s = NULL;
	struct dmaplane_wire_msg *m;
	struct dmaplane_pend *pend;
	struct dmaplane_conn *c;
	struct dmaplane_tx *tx;
	struct iov_iter iter;
	int ret, end;

	c = dmaplane_conn_get_by_slot(DMAPLANE_SRC_NODE_SLOT(dst));
	if (!c)
		return -ECONNRESET;
	ret = dmaplane_cq_reserve(ep->cq);
	if (ret)
		goto out_put_conn;
	ret = -ENOMEM;
	pend = kzalloc(sizeof(*pend), GFP_KERNEL);
	if (!pend)
		goto err_unreserve;
	tx = dmaplane_tx_alloc(eager ? DMAPLANE_WIRE_EAGER : DMAPLANE_WIRE_RTS,
			       sizeof(*m) + (eager ? buf->len :
			       struct_size((struct dmaplane_wire_rts *)NULL, segs,
					   DMAPLANE_WIRE_MAX_SEGS)));
	if (!tx)
		goto err_free_pend;
	m = dmaplane_tx_body(tx);
	m->src = cpu_to_le64(ep->ep_uid);
	m->dst = cpu_to_le64(DMAPLANE_SRC_EP_UID(dst));
	m->tag = cpu_to_le64(op->tag);
	m->msg_len = cpu_to_le64(buf->len);
	m->auth_key = cpu_to_le64(ep->auth_key);
	m->uid = cpu_to_le32(from_kuid(&init_user_ns, ep->uid));
	if (op->flags & DMAPLANE_OP_F_DATA) {
		m->data = cpu_to_le64(op->data);
		m->flags = cpu_to_le32(DMAPLANE_WIRE_MSG_DATA);
	}
	kref_get(&ep->ref);
	pend->ep = ep;
	pend->ctx = op->ctx;
	pend->tag = op->tag;
	pend->len = buf->len;

	if (eager) {
		/*
		 * Each eager message keeps a copy until the peer ACKs it, and
		 * waits in the backlog while the peer gives no credit: bounded
		 * per endpoint.
		 */
		pend->charged = buf->len;
		if (atomic64_add_return(pend->charged, &ep->eager_backlog) >
		    READ_ONCE(eager_backlog)) {
			ret = -EAGAIN;
			goto err_free_tx;
		}
		ret = dmaplane_ubuf_iter(buf, ITER_SOURCE, buf->len, &iter, &map);
		if (!ret && copy_from_iter(m + 1, buf->len, &iter) != buf->len)
			ret = -EFAULT;
		end = dmaplane_ubuf_iter_end(&map);
		ret = ret ?: end;
		if (ret)
			goto err_free_tx;
		tx->pend = pend;
		ret = dmaplane_conn_submit(c, tx);
		if (ret)
			goto err_free_tx;
		goto out_put_conn;
	}

	s = sreg_alloc(ep, DMAPLANE_OP_SEND, op->ctx, op->tag, buf->len);
	if (!s)
		goto err_free_tx;
	ret = sreg_prepare(c, s, buf);
	if (ret)
		goto err_free_tx;
	rts = (void *)(m + 1);
	pend->sreg = s;
	tx->pend = pend;
	ret = sreg_submit(c, s, tx, &rts->nsegs, rts->segs, &rts->cookie);
	if (ret)
		sreg_free(c, s);
	sreg_exit(c);
	if (ret)
		goto err_free_tx;
	goto out_put_conn;

err_free_tx:
	dmaplane_tx_free(tx);
	if (pend->charged)
		atomic64_sub(pend->charged, &ep->eager_backlog);
	dmaplane_ep_put(ep);
err_free_pend:
	kfree(pend);
err_unreserve:
	dmaplane_cq_unreserve(ep->cq);
out_put_conn:
	dmaplane_conn_put(c);
	return ret;
}

/**
 * dmaplane_ib_rma() - PUT/GET into a region of another node's endpoint
 * @ep: initiating endpoint
 * @dst: target's source value
 * @op: the operation (checked by the caller)
 * @buf: its local buffer (of the current task, or one of its regions)
 *
 * Return: 0 when accepted, or as dmaplane_ib_send().
 */
int dmaplane_ib_rma(struct dmaplane_ep *ep, u64 dst, const struct dmaplane_op *op,
		    struct dmaplane_ubuf *buf)
{
	struct dmaplane_wire_seglist *sl;
	struct dmaplane_wire_rma *r;
	struct dmaplane_sreg *s;
	struct dmaplane_conn *c;
	struct dmaplane_tx *tx;
	int ret;

	c = dmaplane_conn_get_by_slot(DMAPLANE_SRC_NODE_SLOT(dst));
	if (!c)
		return -ECONNRESET;
	ret = dmaplane_cq_reserve(ep->cq);
	if (ret)
		goto out_put_conn;
	ret = -ENOMEM;
	tx = dmaplane_tx_alloc(DMAPLANE_WIRE_RMA_REQ, sizeof(*r) +
		      struct_size(sl, segs, DMAPLANE_WIRE_MAX_SEGS));
	if (!tx)
		goto err_unreserve;
	s = sreg_alloc(ep, op->opcode, op->ctx, 0, op->len);
	if (!s)
		goto err_free_tx;
	r = dmaplane_tx_body(tx);
	sl = (void *)(r + 1);
	r->src = cpu_to_le64(ep->ep_uid);
	r->dst = cpu_to_le64(DMAPLANE_SRC_EP_UID(dst));
	r->rkey = cpu_to_le64(op->rkey);
	r->roffset = cpu_to_le64(op->roffset);
	r->len = cpu_to_le64(op->len);
	r->auth_key = cpu_to_le64(ep->auth_key);
	r->uid = cpu_to_le32(from_kuid(&init_user_ns, ep->uid));
	r->write = op->opcode == DMAPLANE_OP_PUT;
	if (op->flags & DMAPLANE_OP_F_DATA) {
		r->flags = DMAPLANE_WIRE_RMA_DATA;
		r->data = cpu_to_le64(op->data);
	}
	ret = sreg_prepare(c, s, buf);
	if (ret)
		goto err_free_tx;
	ret = sreg_submit(c, s, tx, &sl->nsegs, sl->segs, &r->cookie);
	if (ret)
		sreg_free(c, s);
	sreg_exit(c);
	if (!ret)
		goto out_put_conn;
err_free_tx:
	dmaplane_tx_free(tx);
err_unreserve:
	dmaplane_cq_unreserve(ep->cq);
out_put_conn:
	dmaplane_conn_put(c);
	return ret;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane across nodes: the life of a connection.  rdma_cm events, setup
 * of the QP and its receive buffers, the connector of an added peer,
 * keepalive, and teardown, which fails what is pending on the connection.
 * See ib.c for the transport as a whole.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include "ib_loc.h"

static void conn_notify(struct dmaplane_ib_peer *p, bool up)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&p->addr;
	struct sockaddr_in *s4 = (struct sockaddr_in *)&p->addr;
	struct in6_addr a = {};
	u16 family = p->addr.ss_family;

	if (family == AF_INET)
		memcpy(&a, &s4->sin_addr, sizeof(s4->sin_addr));
	else
		a = s6->sin6_addr;
	dmaplane_nl_notify_peer_state(family, &a,
				      family == AF_INET ? ntohs(s4->sin_port) :
				      ntohs(s6->sin6_port), p->node_id, p->slot, up);
}

/* Teardown, phase 1: @c is no longer the peer's connection. */
static void conn_unlink(struct dmaplane_conn *c)
{
	struct dmaplane_ib_peer *p = c->peer;
	bool was_up = false;
	int refs = 0;

	mutex_lock(&dmaplane_ib_lock);
	list_del_init(&c->node);
	spin_lock(&p->lock);
	if (p->conn == c) {
		p->conn = NULL;
		p->state = DMAPLANE_NL_PEER_DOWN;
		was_up = true;
		refs++;
	}
	if (p->connecting == c) {
		p->connecting = NULL;
		if (!p->conn)
			p->state = DMAPLANE_NL_PEER_DOWN;
		refs++;
	}
	spin_unlock(&p->lock);
	if (was_up) {
		conn_notify(p, false);
		pr_info("connection to %pISp (node %016llx) closed\n", &p->addr, c->node_id);
	}
	if (!p->deleted && !dmaplane_ib_exiting && !p->conn)
		mod_delayed_work(dmaplane_ib_wq, &p->connect_work, IB_RETRY_DELAY);
	mutex_unlock(&dmaplane_ib_lock);
	while (refs--)
		dmaplane_conn_put(c);
}

/*
 * Teardown, phase 2: nothing more is posted or sent on @c, every posted
 * request has completed (flushed), and its works are idle.  The requests
 * still waiting for credits are moved to @backlog.
 */
static void conn_stop(struct dmaplane_conn *c, struct list_head *backlog)
{
	/*
	 * A cm handler may be building the QP right now (the connection
	 * failed from elsewhere: the peer's own attempt won, the connect
	 * timed out): let it finish.  Any later setup sees @failing.
	 */
	mutex_lock(&c->setup_lock);
	mutex_unlock(&c->setup_lock);

	mutex_lock(&c->tx_lock);
	c->state = CONN_DEAD;
	list_splice_init(&c->backlog, backlog);
	c->backlog_answers = 0;
	mutex_unlock(&c->tx_lock);
	wake_up_all(&c->up_wq);

	if (c->qp) {
		rdma_disconnect(c->cm_id);
		/* Every posted request completes (flushed) before this returns. */
		ib_drain_qp(c->qp);
	}
	cancel_work_sync(&c->ack_work);
	cancel_delayed_work_sync(&c->keepalive_work);
}

/*
 * Teardown, phase 3: fail what waits on @c with -ECONNRESET: transfers
 * without room, requests of @backlog, sends waiting for an ACK, and
 * everything with a cookie (registered buffers waiting for a FIN, AV
 * inserts waiting for an answer).
 */
static void conn_fail_pending(struct dmaplane_conn *c, struct list_head *backlog)
{
	struct dmaplane_pend *pend, *ptmp;
	struct dmaplane_xfer *x, *xtmp;
	struct dmaplane_tx *tx, *ttmp;
	struct dmaplane_sreg *s;
	unsigned long cookie;
	LIST_HEAD(xwait);
	LIST_HEAD(sent);
	void *entry;

	/* Transfers that never got room fail now; the QP still exists. */
	mutex_lock(&c->tx_lock);
	list_splice_init(&c->xfer_wait, &xwait);
	mutex_unlock(&c->tx_lock);
	list_for_each_entry_safe(x, xtmp, &xwait, node) {
		unsigned int left = x->nctx - x->next;

		x->status = -ECONNRESET;
		x->next = x->nctx;
		if (atomic_sub_and_test(left, &x->pending))
			dmaplane_xfer_finish(x);
	}

	list_for_each_entry_safe(tx, ttmp, backlog, node) {
		if (tx->pend)
			list_add_tail(&tx->pend->node, &c->sent);
		dmaplane_tx_free(tx);
	}
	mutex_lock(&c->tx_lock);
	list_splice_init(&c->sent, &sent);
	mutex_unlock(&c->tx_lock);
	list_for_each_entry_safe(pend, ptmp, &sent, node) {
		/* A rendezvous is failed through its cookie below. */
		dmaplane_pend_uncharge(pend);
		if (!pend->sreg)
			dmaplane_msg_complete(pend->ep, DMAPLANE_OP_SEND, pend->ctx,
					      -ECONNRESET, 0, pend->len, pend->tag, 0);
		dmaplane_pend_free(pend);
	}
	/*
	 * Each entry is taken out under tx_lock, as a RESOLVE that times out
	 * takes its own back: whoever erases it owns it (the other may
	 * free it at once).
	 */
	for (;;) {
		cookie = 0;
		mutex_lock(&c->tx_lock);
		entry = xa_find(&c->cookies, &cookie, ULONG_MAX, XA_PRESENT);
		if (entry)
			xa_erase(&c->cookies, cookie);
		mutex_unlock(&c->tx_lock);
		if (!entry)
			break;
		s = entry;
		if (s->kind == COOKIE_SREG) {
			dmaplane_sreg_complete(c, s, -ECONNRESET);
		} else {
			struct dmaplane_resolve_wait *w = entry;

			/* Erased under tx_lock: @abandoned is stable now. */
			if (w->abandoned) {
				kfree(w);
			} else {
				w->status = -ECONNRESET;
				complete(&w->done);
			}
		}
	}
}

/* Teardown, phase 4: the verbs objects go, and the cm_id's reference. */
static void conn_destroy(struct dmaplane_conn *c)
{
	unsigned int i;

	/*
	 * A transfer whose submitter dropped the last count after the drain
	 * destroys its contexts on the QP, and a sender building its
	 * registrations uses the device's PD until it submitted or undid
	 * them: wait for both.  None starts now (contexts are initialised,
	 * and builders counted, only while the connection is up).
	 */
	wait_event(c->rw_xfers_wq, !atomic_read(&c->rw_xfers) &&
		   !atomic_read(&c->sreg_builders));
	if (c->qp)
		rdma_destroy_qp(c->cm_id);
	if (c->cq)
		ib_free_cq(c->cq);
	rdma_destroy_id(c->cm_id);
	for (i = 0; c->dev && i < DMAPLANE_WIRE_RECVS; i++)
		dmaplane_rx_free(c, &c->rx[i]);
	if (c->dev)
		kref_put(&c->dev->ref, dmaplane_ib_dev_free);
	dmaplane_conn_put(c);	/* the cm_id's reference */
}

static void conn_teardown(struct work_struct *work)
{
	struct dmaplane_conn *c = container_of(work, struct dmaplane_conn, teardown_work);
	LIST_HEAD(backlog);

	conn_unlink(c);
	conn_stop(c, &backlog);
	conn_fail_pending(c, &backlog);
	conn_destroy(c);
}

/*
 * Break @c: its teardown runs once, from the workqueue.  A drop is counted
 * by the call that breaks it, not once per bad message queued behind.
 */
void dmaplane_conn_fail(struct dmaplane_conn *c, bool malformed)
{
	if (atomic_xchg(&c->failing, 1))
		return;
	if (malformed)
		atomic64_inc(&c->peer->drops);
	queue_work(dmaplane_ib_wq, &c->teardown_work);
}

int dmaplane_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);

static void keepalive_work(struct work_struct *work)
{
	struct dmaplane_conn *c = container_of(to_delayed_work(work), struct dmaplane_conn,
					       keepalive_work);
	unsigned long silent, since, starved;
	struct dmaplane_tx *tx;
	bool waiting;

	mutex_lock(&c->tx_lock);
	if (c->state == CONN_CONNECTING) {
		/* A REQ or REP lost, or an answer that never comes. */
		mutex_unlock(&c->tx_lock);
		pr_info("connecting %s %pISp timed out\n", c->active ? "to" : "from",
			&c->peer->addr);
		dmaplane_conn_fail(c, false);
		return;
	}
	if (c->state != CONN_UP) {
		mutex_unlock(&c->tx_lock);
		return;
	}
	waiting = !xa_empty(&c->cookies) || !list_empty(&c->sent) ||
		  !list_empty(&c->backlog) || c->rw_inflight;
	/*
	 * An idle connection carries nothing: its silence counts from when
	 * operations started to wait, here no earlier than this work's last
	 * look that found none (at most IB_KEEPALIVE before), so that the
	 * first request after a long quiet spell gets its answer's time.
	 */
	if (!waiting)
		c->idle_at = jiffies;
	since = READ_ONCE(c->last_rx);
	if (time_after(c->idle_at, since))
		since = c->idle_at;
	silent = jiffies - since;
	if (waiting && silent >= IB_DEAD_AFTER) {
		mutex_unlock(&c->tx_lock);
		pr_warn("%pISp silent for %u s with operations pending: dropping the connection\n",
			&c->peer->addr, jiffies_to_msecs(silent) / 1000);
		dmaplane_conn_fail(c, false);
		return;
	}
	/* Talking, maybe, but keeping our credits: as good as silent. */
	starved = list_empty(&c->backlog) ? 0 : jiffies - c->credit_wait;
	if (starved >= IB_DEAD_AFTER) {
		mutex_unlock(&c->tx_lock);
		pr_warn("%pISp gave no credit back for %u s with requests waiting: dropping the connection\n",
			&c->peer->addr, jiffies_to_msecs(starved) / 1000);
		dmaplane_conn_fail(c, false);
		return;
	}
	if (atomic_read(&c->sq_wrs) &&
	    time_after_eq(jiffies, READ_ONCE(c->sq_progress) + IB_DEAD_AFTER)) {
		mutex_unlock(&c->tx_lock);
		pr_warn("%pISp completed none of our work requests for %u s: dropping the connection\n",
			&c->peer->addr,
			jiffies_to_msecs(jiffies - READ_ONCE(c->sq_progress)) / 1000);
		dmaplane_conn_fail(c, false);
		return;
	}
	/* A full backlog waits for an ACK already: no room for a PING. */
	if (waiting && silent >= IB_KEEPALIVE && list_empty(&c->backlog)) {
		tx = dmaplane_tx_alloc(DMAPLANE_WIRE_PING, 0);
		if (tx && dmaplane_conn_submit_locked(c, tx))
			dmaplane_tx_free(tx);
	}
	queue_delayed_work(dmaplane_ib_wq, &c->keepalive_work, IB_KEEPALIVE);
	mutex_unlock(&c->tx_lock);
}

static struct dmaplane_conn *conn_alloc(struct dmaplane_ib_peer *p, bool active)
{
	struct dmaplane_conn *c = kzalloc(sizeof(*c), GFP_KERNEL);

	if (!c)
		return NULL;
	kref_init(&c->ref);
	kref_get(&p->ref);
	c->peer = p;
	c->active = active;
	c->state = CONN_CONNECTING;
	INIT_WORK(&c->teardown_work, conn_teardown);
	INIT_WORK(&c->ack_work, dmaplane_ack_work);
	INIT_DELAYED_WORK(&c->keepalive_work, keepalive_work);
	mutex_init(&c->setup_lock);
	mutex_init(&c->tx_lock);
	mutex_init(&c->ack_lock);
	INIT_LIST_HEAD(&c->backlog);
	INIT_LIST_HEAD(&c->xfer_wait);
	INIT_LIST_HEAD(&c->sent);
	xa_init_flags(&c->cookies, XA_FLAGS_ALLOC);
	xa_init(&c->rdvs);
	init_waitqueue_head(&c->up_wq);
	init_waitqueue_head(&c->rw_xfers_wq);
	lockdep_assert_held(&dmaplane_ib_lock);
	list_add_tail(&c->node, &dmaplane_ib_conns);
	return c;
}

static void qp_event(struct ib_event *ev, void *ctx)
{
	struct dmaplane_conn *c = ctx;

	/* Data before the CM's RTU: tell the CM the connection is up. */
	if (ev->event == IB_EVENT_COMM_EST)
		rdma_notify(c->cm_id, IB_EVENT_COMM_EST);
	else
		dmaplane_conn_fail(c, false);
}

/* The device is known (route resolved, or a request arrived): build the QP. */
static int conn_setup_locked(struct dmaplane_conn *c)
{
	struct ib_qp_init_attr attr = {};
	struct dmaplane_ib_dev *d;
	struct ib_device *ibdev;
	unsigned int i;
	int ret;

	lockdep_assert_held(&c->setup_lock);
	mutex_lock(&dmaplane_ib_lock);
	d = dmaplane_ib_dev_find(c->cm_id->device);
	if (d)
		kref_get(&d->ref);
	mutex_unlock(&dmaplane_ib_lock);
	if (!d)
		return -ENODEV;
	c->dev = d;
	ibdev = d->ibdev;

	c->cq = ib_alloc_cq(ibdev, c, IB_SQ_DEPTH + DMAPLANE_WIRE_RECVS + IB_RDMA_CTXS * 3 + 2,
			    0, IB_POLL_WORKQUEUE);
	if (IS_ERR(c->cq)) {
		ret = PTR_ERR(c->cq);
		c->cq = NULL;
		return ret;
	}
	attr.event_handler = qp_event;
	attr.qp_context = c;
	attr.send_cq = c->cq;
	attr.recv_cq = c->cq;
	attr.qp_type = IB_QPT_RC;
	attr.sq_sig_type = IB_SIGNAL_REQ_WR;
	/* One more of each for ib_drain_qp(). */
	attr.cap.max_send_wr = min_t(u32, IB_SQ_DEPTH, ibdev->attrs.max_qp_wr / 2) + 1;
	if (attr.cap.max_send_wr <= IB_SQ_NEEDED) {
		pr_warn_once("%s: send queues of %u entries are too small\n",
			     dev_name(&ibdev->dev), attr.cap.max_send_wr);
		return -EOPNOTSUPP;
	}
	attr.cap.max_recv_wr = DMAPLANE_WIRE_RECVS + 1;
	/* Up to IB_MAX_SGE pages per RDMA READ or WRITE. */
	attr.cap.max_send_sge = clamp_t(u32, ibdev->attrs.max_send_sge, 1, IB_MAX_SGE);
	attr.cap.max_recv_sge = 2;
	attr.cap.max_rdma_ctxs = IB_RDMA_CTXS;
	attr.port_num = c->cm_id->port_num;
	ret = rdma_create_qp(c->cm_id, d->pd, &attr);
	if (ret)
		return ret;
	c->qp = c->cm_id->qp;

	for (i = 0; i < DMAPLANE_WIRE_RECVS; i++) {
		struct dmaplane_rx *rx = &c->rx[i];

		ret = dmaplane_rx_alloc(c, rx);
		if (ret)
			return ret;
		rx->conn = c;
		rx->cqe.done = dmaplane_rx_done;
		ret = dmaplane_rx_post(c, rx);
		if (ret)
			return ret;
	}
	return 0;
}

int dmaplane_conn_setup(struct dmaplane_conn *c)
{
	int ret = -ECONNABORTED;

	mutex_lock(&c->setup_lock);
	/* Failed already: the teardown may be past its look at @qp. */
	if (!atomic_read(&c->failing))
		ret = conn_setup_locked(c);
	mutex_unlock(&c->setup_lock);
	return ret;
}

static void cm_private(struct dmaplane_wire_cm *pd)
{
	memset(pd, 0, sizeof(*pd));
	pd->magic = cpu_to_le32(DMAPLANE_WIRE_MAGIC);
	pd->version = DMAPLANE_WIRE_VERSION;
	pd->node_id = cpu_to_le64(dmaplane_node_id);
	pd->credits = cpu_to_le32(DMAPLANE_WIRE_CREDITS);
	pd->buf_size = cpu_to_le32(DMAPLANE_WIRE_BUF_SIZE);
}

/* Parameters of CONNECT and ACCEPT, with our private data in @pd. */
static void cm_conn_param(struct rdma_cm_id *id, struct rdma_conn_param *param,
			  struct dmaplane_wire_cm *pd)
{
	cm_private(pd);
	memset(param, 0, sizeof(*param));
	param->private_data = pd;
	param->private_data_len = sizeof(*pd);
	param->responder_resources = 16;
	param->initiator_depth = 16;
	param->retry_count = 7;
	param->rnr_retry_count = 7;
	/* TCG-slow peers and long RDMA READs must not exhaust RC retries. */
	rdma_set_ack_timeout(id, IB_ACK_TIMEOUT);
}

/* The peer's private data: its node_id, or 0 when invalid. */
static u64 cm_private_check(const void *data, u8 len)
{
	const struct dmaplane_wire_cm *pd = data;

	if (!data || len < sizeof(*pd) || le32_to_cpu(pd->magic) != DMAPLANE_WIRE_MAGIC ||
	    pd->version != DMAPLANE_WIRE_VERSION ||
	    memchr_inv(pd->pad, 0, sizeof(pd->pad)) ||
	    le32_to_cpu(pd->credits) != DMAPLANE_WIRE_CREDITS ||
	    le32_to_cpu(pd->buf_size) != DMAPLANE_WIRE_BUF_SIZE ||
	    !pd->node_id || le64_to_cpu(pd->node_id) == dmaplane_node_id)
		return 0;
	return le64_to_cpu(pd->node_id);
}

/*
 * @c is established: it becomes the peer's connection.  Under dmaplane_ib_lock.
 * Return: 0, -ENOSPC when no node slot is left for a node seen anew
 * (slots are never reused; slot 0 is this node, so a connection without
 * a slot of its own must not come up), or -ESHUTDOWN when the peer was
 * deleted meanwhile (its slot would outlive it; conns_kill() breaks @c).
 */
static int conn_up(struct dmaplane_conn *c)
{
	struct dmaplane_ib_peer *p = c->peer;
	struct dmaplane_conn *old = NULL;
	u32 slot = p->slot;

	lockdep_assert_held(&dmaplane_ib_lock);
	if (p->deleted)
		return -ESHUTDOWN;
	if (!slot || p->node_id != c->node_id) {
		/* A new node (or the peer came back as one): a new slot. */
		if (dmaplane_ib_next_slot >= IB_MAX_SLOT ||
		    xa_insert(&dmaplane_ib_slots, dmaplane_ib_next_slot + 1, p, GFP_KERNEL)) {
			pr_warn_ratelimited("no node slot left for %pISp: connection refused\n",
					    &p->addr);
			return -ENOSPC;
		}
		slot = ++dmaplane_ib_next_slot;
		/* The peer's old names are dead. */
		if (p->slot)
			xa_erase(&dmaplane_ib_slots, p->slot);
		p->slot = slot;
	}
	c->slot = slot;
	mutex_lock(&c->tx_lock);
	dmaplane_credits_init(&c->credits, DMAPLANE_WIRE_CREDITS);
	c->state = CONN_UP;
	WRITE_ONCE(c->last_rx, jiffies);
	c->idle_at = jiffies;
	mod_delayed_work(dmaplane_ib_wq, &c->keepalive_work, IB_KEEPALIVE);
	mutex_unlock(&c->tx_lock);
	wake_up_all(&c->up_wq);
	spin_lock(&p->lock);
	if (p->conn != c) {
		old = p->conn;
		p->conn = c;
		kref_get(&c->ref);
	}
	if (p->connecting == c) {
		p->connecting = NULL;
		dmaplane_conn_put(c);
	}
	p->node_id = c->node_id;
	p->state = DMAPLANE_NL_PEER_UP;
	spin_unlock(&p->lock);
	if (old) {
		dmaplane_conn_fail(old, false);
		dmaplane_conn_put(old);
	}
	conn_notify(p, true);
	pr_info("connected to %pISp (node %016llx, slot %u)\n", &p->addr,
		c->node_id, p->slot);
	return 0;
}

static struct dmaplane_ib_peer *peer_find_addr(const struct sockaddr *sa)
{
	struct dmaplane_ib_peer *p;

	lockdep_assert_held(&dmaplane_ib_lock);
	list_for_each_entry(p, &dmaplane_ib_peers, node) {
		if (p->deleted || p->addr.ss_family != sa->sa_family)
			continue;
		if (sa->sa_family == AF_INET &&
		    ((struct sockaddr_in *)&p->addr)->sin_addr.s_addr ==
		    ((const struct sockaddr_in *)sa)->sin_addr.s_addr)
			return p;
		if (sa->sa_family == AF_INET6 &&
		    ipv6_addr_equal(&((struct sockaddr_in6 *)&p->addr)->sin6_addr,
				    &((const struct sockaddr_in6 *)sa)->sin6_addr))
			return p;
	}
	return NULL;
}

static u16 sa_port(const struct sockaddr *sa)
{
	return ntohs(sa->sa_family == AF_INET ?
		     ((const struct sockaddr_in *)sa)->sin_port :
		     ((const struct sockaddr_in6 *)sa)->sin6_port);
}

/* A peer asks to connect.  Return non-zero to have rdma_cm destroy @id. */
static int cm_connect_request(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct sockaddr *src = (struct sockaddr *)&id->route.addr.dst_addr;
	struct rdma_conn_param param = {};
	struct dmaplane_wire_cm pd;
	struct dmaplane_ib_peer *p;
	struct dmaplane_conn *c, *mine = NULL;
	u64 node_id;
	int ret;

	node_id = cm_private_check(ev->param.conn.private_data,
				   ev->param.conn.private_data_len);
	mutex_lock(&dmaplane_ib_lock);
	p = dmaplane_ib_exiting ? NULL : peer_find_addr(src);
	if (!p || !node_id || sa_port(src) >= PROT_SOCK) {
		if (p && sa_port(src) < PROT_SOCK)
			atomic64_inc(&p->drops);
		mutex_unlock(&dmaplane_ib_lock);
		goto err_reject;
	}
	/* Both sides connecting at once: the lower node_id's attempt wins. */
	spin_lock(&p->lock);
	if (p->connecting && dmaplane_node_id < node_id) {
		spin_unlock(&p->lock);
		mutex_unlock(&dmaplane_ib_lock);
		pr_info_ratelimited("CONNECT from %pISp refused: our own attempt to it goes on (lower node id)\n",
				    src);
		goto err_reject;
	}
	mine = p->connecting;
	p->connecting = NULL;
	spin_unlock(&p->lock);
	if (mine) {
		dmaplane_conn_fail(mine, false);
		dmaplane_conn_put(mine);
	}
	c = conn_alloc(p, false);
	if (!c) {
		mutex_unlock(&dmaplane_ib_lock);
		goto err_reject;
	}
	/*
	 * Whole before the lock goes: a teardown (the peer deleted, the
	 * device removed) finds @c by the peer from then on, and must find
	 * its id to destroy and its keepalive armed to cancel.
	 */
	c->cm_id = id;
	c->node_id = node_id;
	id->context = c;
	queue_delayed_work(dmaplane_ib_wq, &c->keepalive_work, IB_CONNECT_TIMEOUT);
	mutex_unlock(&dmaplane_ib_lock);
	ret = dmaplane_conn_setup(c);
	if (ret)
		goto err_fail;
	cm_conn_param(id, &param, &pd);
	ret = rdma_accept(id, &param);
	if (ret)
		goto err_fail;
	return 0;

err_fail:
	pr_info_ratelimited("CONNECT from %pISp refused: %pe\n", src, ERR_PTR(ret));
	/* The teardown destroys @id; rdma_cm must not. */
	rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
	dmaplane_conn_fail(c, false);
	return 0;
err_reject:
	/* Non-zero: rdma_cm destroys @id, which no connection owns. */
	rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
	return -ECONNREFUSED;
}

int dmaplane_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct dmaplane_conn *c = id->context;
	struct rdma_conn_param param = {};
	struct dmaplane_wire_cm pd;
	int ret;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST)
		return cm_connect_request(id, ev);
	if (!c)	/* the listener */
		return 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		ret = rdma_resolve_route(id, IB_TIMEOUT_MS);
		if (ret)
			dmaplane_conn_fail(c, false);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		ret = dmaplane_conn_setup(c);
		if (!ret) {
			cm_conn_param(id, &param, &pd);
			ret = rdma_connect_locked(id, &param);
		}
		if (ret)
			dmaplane_conn_fail(c, false);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (c->active) {
			c->node_id = cm_private_check(ev->param.conn.private_data,
						      ev->param.conn.private_data_len);
			if (!c->node_id) {
				dmaplane_conn_fail(c, true);
				break;
			}
		}
		mutex_lock(&dmaplane_ib_lock);
		if (!atomic_read(&c->failing) && conn_up(c))
			dmaplane_conn_fail(c, false);
		mutex_unlock(&dmaplane_ib_lock);
		break;
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_CONNECT_ERROR:
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_ADDR_CHANGE:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		dmaplane_conn_fail(c, false);
		break;
	default:
		break;
	}
	return 0;
}

/* Bind @id to a privileged source port: the peer accepts only those. */
static int bind_privileged(struct rdma_cm_id *id, int family)
{
	struct sockaddr_storage ss = {};
	int p, ret = -EADDRINUSE;

	ss.ss_family = family;
	for (p = PROT_SOCK - 1; p >= PROT_SOCK / 2; p--) {
		if (family == AF_INET)
			((struct sockaddr_in *)&ss)->sin_port = htons(p);
		else
			((struct sockaddr_in6 *)&ss)->sin6_port = htons(p);
		ret = rdma_bind_addr(id, (struct sockaddr *)&ss);
		if (ret != -EADDRINUSE)
			break;
	}
	return ret;
}

/*
 * Whether @p's own request is being accepted: a connection it asked for
 * waits for its ESTABLISHED event.  Our retry, armed when an earlier
 * attempt of ours failed (the peer had not added this node yet), must
 * not start a second connection then: its arrival would replace the
 * first one on both nodes just after they came up, failing what was
 * under way on it.
 */
static bool peer_accepting(struct dmaplane_ib_peer *p)
{
	struct dmaplane_conn *c;

	lockdep_assert_held(&dmaplane_ib_lock);
	list_for_each_entry(c, &dmaplane_ib_conns, node)
		if (c->peer == p && !c->active && !atomic_read(&c->failing) &&
		    READ_ONCE(c->state) == CONN_CONNECTING)
			return true;
	return false;
}

void dmaplane_peer_connect_work(struct work_struct *work)
{
	struct dmaplane_ib_peer *p = container_of(to_delayed_work(work),
						  struct dmaplane_ib_peer, connect_work);
	struct rdma_cm_id *id;
	struct dmaplane_conn *c;
	int ret;

	mutex_lock(&dmaplane_ib_lock);
	/* Failing, an accepted connection arms this work again (conn_unlink()). */
	if (p->deleted || dmaplane_ib_exiting || p->conn || p->connecting ||
	    peer_accepting(p)) {
		mutex_unlock(&dmaplane_ib_lock);
		return;
	}
	c = conn_alloc(p, true);
	if (!c)
		goto retry;
	id = rdma_create_id(&init_net, dmaplane_cm_handler, c, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		list_del(&c->node);
		dmaplane_conn_put(c);
		goto retry;
	}
	c->cm_id = id;
	ret = bind_privileged(id, p->addr.ss_family);
	if (!ret)
		ret = rdma_resolve_addr(id, NULL, (struct sockaddr *)&p->addr, IB_TIMEOUT_MS);
	spin_lock(&p->lock);
	p->connecting = c;
	kref_get(&c->ref);
	p->state = DMAPLANE_NL_PEER_CONNECTING;
	spin_unlock(&p->lock);
	queue_delayed_work(dmaplane_ib_wq, &c->keepalive_work, IB_CONNECT_TIMEOUT);
	mutex_unlock(&dmaplane_ib_lock);
	if (ret)
		dmaplane_conn_fail(c, false);
	return;

retry:
	mod_delayed_work(dmaplane_ib_wq, &p->connect_work, IB_RETRY_DELAY);
	mutex_unlock(&dmaplane_ib_lock);
}

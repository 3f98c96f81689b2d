// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane across nodes: a transport over the kernel's RDMA stack.
 *
 * Peers are added by an administrator (netlink.c); for each one this file
 * keeps one reliable connection (RC, made with rdma_cm) shared by every
 * endpoint of both nodes, so memory grows with peer nodes, not with
 * remote processes.  Per RDMA device there is one protection domain; per
 * connection a CQ polled from a workqueue, a QP and DMAPLANE_WIRE_RECVS
 * pre-posted receive buffers.  The wire format is in ib_wire.h.
 *
 * - SEND of a small message: the payload is copied into a buffer sent
 *   with IB SEND (an EAGER request); the receiving node matches it with
 *   the same code as a local send (dmaplane_msg_arrive_remote()).  The
 *   send completes when the receiver's ACK says it was delivered or
 *   queued, or with -EAGAIN when the receiver's unexpected budget was
 *   full (a NACK), as locally.
 * - SEND of a large message: the sender pins its buffer, registers it
 *   with fast-registration MRs (remote read only) and sends an RTS; the
 *   receive that matches it pulls the data with RDMA READ straight into
 *   the receiver's pinned pages and sends a FIN, which completes the send.
 *   No intermediate copy.
 * - PUT/GET: the initiator registers its own buffer and sends an RMA_REQ;
 *   the target checks key, owner, access and bounds as locally, then moves
 *   the data itself (RDMA READ from the initiator for PUT, WRITE to it for
 *   GET) between the region's pages and the initiator's buffer, and
 *   answers with a FIN.  The target never hands out device keys of its
 *   own memory, so a revoked region is unreachable at once.
 *
 * - A sender whose endpoint closes withdraws its RTSs not yet matched
 *   with a CANCEL: the receiver FINs them at once (the sender unpins) and
 *   a receive that matches one later completes with -ECONNRESET, as on
 *   one node when a rendezvous sender dies.
 *
 * A peer that goes silent while operations wait for it gets a PING every
 * IB_KEEPALIVE; one that stays silent for IB_DEAD_AFTER is taken for
 * gone and the connection breaks.
 *
 * Flow control: every request costs a credit; credits come back in ACKs,
 * so a SEND always finds a posted buffer.  Requests wait in a backlog when
 * credits run out.  Anything malformed from the peer drops the connection.
 *
 * A broken connection (peer gone, link or device removed, module unload)
 * completes every pending operation with -ECONNRESET; the side that added
 * the peer reconnects every second.  A peer that comes back with another
 * node_id (its module was reloaded) gets a new node slot, so names of its
 * old endpoints stay invalid.
 *
 * The files, by role (their shared structures and prototypes are in
 * ib_loc.h, the wire format in ib_wire.h):
 *   ib.c       objects and their references, peers, address resolution,
 *              the ib_client, init and exit;
 *   ib_cm.c    the connection life cycle (rdma_cm, setup, teardown,
 *              keepalive);
 *   ib_tx.c    transmit, credits and ACKs, registered send buffers, SEND
 *              and PUT/GET requests;
 *   ib_xfer.c  RDMA transfers: the rendezvous pull, the target of PUT/GET;
 *   ib_rx.c    receive buffers and the handler of each message type.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/seq_file.h>

#include "ib_loc.h"

static unsigned short port = 20886;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "rdma_cm port the transport listens on and connects to");

/*
 * dmaplane_ib_lock protects the lists of devices and peers, the listener,
 * and the transitions of a peer's connections (peer->conn,
 * peer->connecting).  It is never held while destroying a cm_id
 * (rdma_destroy_id() waits for the id's handler, which takes it).
 */
DEFINE_MUTEX(dmaplane_ib_lock);
/* Under dmaplane_ib_lock: */
static LIST_HEAD(dmaplane_ib_devs);	/* struct dmaplane_ib_dev */
LIST_HEAD(dmaplane_ib_peers);		/* struct dmaplane_ib_peer */
LIST_HEAD(dmaplane_ib_conns);		/* every struct dmaplane_conn */
static struct rdma_cm_id *dmaplane_ib_listener;
bool dmaplane_ib_exiting;		/* no new connections */
u32 dmaplane_ib_next_slot;
/* Node slot -> peer; the xa lock protects lookups against removal. */
DEFINE_XARRAY(dmaplane_ib_slots);
struct workqueue_struct *dmaplane_ib_wq;

struct dmaplane_ib_dev *dmaplane_ib_dev_find(struct ib_device *ibdev)
{
	struct dmaplane_ib_dev *d;

	lockdep_assert_held(&dmaplane_ib_lock);
	list_for_each_entry(d, &dmaplane_ib_devs, node)
		if (d->ibdev == ibdev)
			return d;
	return NULL;
}

void dmaplane_ib_dev_free(struct kref *ref)
{
	struct dmaplane_ib_dev *d = container_of(ref, struct dmaplane_ib_dev, ref);

	ib_dealloc_pd(d->pd);
	kfree(d);
}

static void ib_peer_free(struct kref *ref)
{
	kfree(container_of(ref, struct dmaplane_ib_peer, ref));
}

static void ib_peer_put(struct dmaplane_ib_peer *p)
{
	kref_put(&p->ref, ib_peer_free);
}

static void conn_free(struct kref *ref)
{
	struct dmaplane_conn *c = container_of(ref, struct dmaplane_conn, ref);

	xa_destroy(&c->cookies);
	xa_destroy(&c->rdvs);
	mutex_destroy(&c->setup_lock);
	mutex_destroy(&c->tx_lock);
	mutex_destroy(&c->ack_lock);
	ib_peer_put(c->peer);
	kfree(c);
}

void dmaplane_conn_put(struct dmaplane_conn *c)
{
	kref_put(&c->ref, conn_free);
}

u64 dmaplane_src_value(u32 slot, u64 ep_uid)
{
	return (u64)slot << DMAPLANE_SRC_NODE_SHIFT | ep_uid;
}

/* The live connection of node slot @slot, referenced, or NULL. */
struct dmaplane_conn *dmaplane_conn_get_by_slot(u32 slot)
{
	struct dmaplane_conn *c = NULL;
	struct dmaplane_ib_peer *p;

	xa_lock(&dmaplane_ib_slots);
	p = xa_load(&dmaplane_ib_slots, slot);
	if (p) {
		spin_lock(&p->lock);
		if (p->slot == slot && p->conn && READ_ONCE(p->conn->state) == CONN_UP) {
			c = p->conn;
			kref_get(&c->ref);
		}
		spin_unlock(&p->lock);
	}
	xa_unlock(&dmaplane_ib_slots);
	return c;
}

/* Control plane -------------------------------------------------------- */

/**
 * dmaplane_ib_peer_add() - start connecting to a peer the administrator
 *	added
 * @np: the peer table's entry
 *
 * Return: the transport's peer, or NULL when out of memory (the peer then
 * stays down).
 */
struct dmaplane_ib_peer *dmaplane_ib_peer_add(const struct dmaplane_peer *np)
{
	struct dmaplane_ib_peer *p = kzalloc(sizeof(*p), GFP_KERNEL);
	u16 pport = np->port ? np->port : port;

	if (!p)
		return NULL;
	kref_init(&p->ref);
	spin_lock_init(&p->lock);
	INIT_DELAYED_WORK(&p->connect_work, dmaplane_peer_connect_work);
	p->state = DMAPLANE_NL_PEER_DOWN;
	if (np->family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)&p->addr;

		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, &np->addr, sizeof(s->sin_addr));
		s->sin_port = htons(pport);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)&p->addr;

		s->sin6_family = AF_INET6;
		s->sin6_addr = np->addr;
		s->sin6_port = htons(pport);
	}
	mutex_lock(&dmaplane_ib_lock);
	list_add_tail(&p->node, &dmaplane_ib_peers);
	mod_delayed_work(dmaplane_ib_wq, &p->connect_work, 0);
	mutex_unlock(&dmaplane_ib_lock);
	return p;
}

/* Break every connection @match selects and wait for their teardown. */
static void conns_kill(bool (*match)(struct dmaplane_conn *c, const void *arg),
		       const void *arg)
{
	struct dmaplane_conn *c, *it;

	for (;;) {
		c = NULL;
		mutex_lock(&dmaplane_ib_lock);
		list_for_each_entry(it, &dmaplane_ib_conns, node) {
			if (match(it, arg)) {
				c = it;
				kref_get(&c->ref);
				break;
			}
		}
		mutex_unlock(&dmaplane_ib_lock);
		if (!c)
			break;
		dmaplane_conn_fail(c, false);
		flush_work(&c->teardown_work);
		dmaplane_conn_put(c);
	}
}

static bool conn_of_peer(struct dmaplane_conn *c, const void *p)
{
	return c->peer == p;
}

static bool conn_on_device(struct dmaplane_conn *c, const void *ibdev)
{
	return c->cm_id->device == ibdev;
}

static bool conn_any(struct dmaplane_conn *c, const void *unused)
{
	return true;
}

/**
 * dmaplane_ib_peer_del() - the administrator removed a peer: disconnect
 * @p: from dmaplane_ib_peer_add(); may be NULL
 *
 * Pending operations with the peer complete with -ECONNRESET.
 */
void dmaplane_ib_peer_del(struct dmaplane_ib_peer *p)
{
	if (!p)
		return;
	mutex_lock(&dmaplane_ib_lock);
	p->deleted = true;
	list_del(&p->node);
	if (p->slot)
		xa_erase(&dmaplane_ib_slots, p->slot);
	mutex_unlock(&dmaplane_ib_lock);
	cancel_delayed_work_sync(&p->connect_work);
	/* The teardowns drop the peer's references to its connections. */
	conns_kill(conn_of_peer, p);
	ib_peer_put(p);
}

/**
 * dmaplane_ib_peer_info() - state and counters of a peer
 * @p: from dmaplane_ib_peer_add(); may be NULL
 * @info: filled in
 */
void dmaplane_ib_peer_info(struct dmaplane_ib_peer *p, struct dmaplane_peer_info *info)
{
	memset(info, 0, sizeof(*info));
	if (!p)
		return;
	spin_lock(&p->lock);
	info->state = p->state;
	info->slot = p->slot;
	info->node_id = p->node_id;
	if (p->conn)
		info->mem_bytes = sizeof(*p->conn) +
				  DMAPLANE_WIRE_RECVS * DMAPLANE_WIRE_BUF_SIZE;
	spin_unlock(&p->lock);
	info->tx_msgs = atomic64_read(&p->tx_msgs);
	info->rx_msgs = atomic64_read(&p->rx_msgs);
	info->tx_bytes = atomic64_read(&p->tx_bytes);
	info->rx_bytes = atomic64_read(&p->rx_bytes);
	info->drops = atomic64_read(&p->drops);
}

/**
 * dmaplane_ib_resolve() - AV_INSERT of a name of another node
 * @ep: the inserting endpoint
 * @node_id: the name's node
 * @ep_uid: the name's endpoint
 * @src: set to the source value the address handle stands for
 *
 * Asks the peer whether the endpoint exists and accepts @ep's domain.
 *
 * Return: 0, -ENETUNREACH (no connected peer has @node_id), -ECONNREFUSED,
 * -EACCES, -ECONNRESET, -ETIMEDOUT, -EINTR, -ENOMEM.
 */
int dmaplane_ib_resolve(struct dmaplane_ep *ep, u64 node_id, u64 ep_uid, u64 *src)
{
	struct dmaplane_resolve_wait *w;
	struct dmaplane_wire_resolve *q;
	struct dmaplane_conn *c = NULL;
	struct dmaplane_ib_peer *p;
	struct dmaplane_tx *tx;
	u32 slot = 0, cookie;
	long left;
	int ret;

	mutex_lock(&dmaplane_ib_lock);
	list_for_each_entry(p, &dmaplane_ib_peers, node) {
		spin_lock(&p->lock);
		if (p->node_id == node_id && p->conn &&
		    READ_ONCE(p->conn->state) == CONN_UP) {
			c = p->conn;
			kref_get(&c->ref);
			slot = p->slot;
		}
		spin_unlock(&p->lock);
		if (c)
			break;
	}
	mutex_unlock(&dmaplane_ib_lock);
	if (!c)
		return -ENETUNREACH;

	ret = -ENOMEM;
	w = kzalloc(sizeof(*w), GFP_KERNEL);
	tx = dmaplane_tx_alloc(DMAPLANE_WIRE_RESOLVE, sizeof(*q));
	if (!w || !tx)
		goto out_free;
	w->kind = COOKIE_RESOLVE;
	init_completion(&w->done);
	q = dmaplane_tx_body(tx);
	q->ep_uid = cpu_to_le64(ep_uid);
	q->auth_key = cpu_to_le64(ep->auth_key);
	q->uid = cpu_to_le32(from_kuid(&init_user_ns, ep->uid));

	mutex_lock(&c->tx_lock);
	ret = c->state == CONN_UP ?
	      xa_alloc_cyclic(&c->cookies, &cookie, w, xa_limit_32b,
			      &c->next_cookie, GFP_KERNEL) : -ECONNRESET;
	if (ret >= 0) {
		q->cookie = cpu_to_le64(cookie);
		ret = dmaplane_conn_submit_locked(c, tx);
		if (ret)
			xa_erase(&c->cookies, cookie);
	}
	mutex_unlock(&c->tx_lock);
	if (ret < 0)
		goto out_free;
	tx = NULL;

	left = wait_for_completion_interruptible_timeout(&w->done, IB_RESOLVE_TIMEOUT);
	if (left <= 0) {
		/*
		 * Give the wait up, unless the answer is being delivered.  The
		 * entry stays for the answer, which may still come (the
		 * request may wait in the backlog): the connection frees it.
		 */
		mutex_lock(&c->tx_lock);
		if (xa_load(&c->cookies, cookie) == w) {
			w->abandoned = true;
			w = NULL;
			mutex_unlock(&c->tx_lock);
			ret = left ? left : -ETIMEDOUT;
			goto out_free;
		}
		mutex_unlock(&c->tx_lock);
		wait_for_completion(&w->done);
	}
	ret = w->status;
	if (!ret)
		*src = dmaplane_src_value(slot, ep_uid);
out_free:
	if (tx)
		dmaplane_tx_free(tx);
	kfree(w);
	dmaplane_conn_put(c);
	return ret;
}

/* Withdraw @ep's rendezvous sends queued at @c's peer; under dmaplane_ib_lock. */
static void conn_withdraw(struct dmaplane_conn *c, struct dmaplane_ep *ep)
{
	struct dmaplane_wire_cancel *k;
	struct dmaplane_sreg *s;
	struct dmaplane_tx *tx;
	unsigned long cookie;

	lockdep_assert_held(&dmaplane_ib_lock);
	mutex_lock(&c->tx_lock);
	xa_for_each(&c->cookies, cookie, s) {
		if (c->state != CONN_UP)
			break;
		if (s->kind != COOKIE_SREG || s->ep != ep ||
		    s->opcode != DMAPLANE_OP_SEND || s->withdrawn)
			continue;
		tx = dmaplane_tx_alloc(DMAPLANE_WIRE_CANCEL, sizeof(*k));
		if (!tx)
			break;	/* it stays pinned until its FIN */
		k = dmaplane_tx_body(tx);
		k->cookie = cpu_to_le64(cookie);
		s->withdrawn = true;
		if (dmaplane_conn_submit_locked(c, tx))
			dmaplane_tx_free(tx);
	}
	mutex_unlock(&c->tx_lock);
}

/**
 * dmaplane_ib_ep_closed() - an endpoint's file is released
 * @ep: the endpoint
 *
 * Its rendezvous messages queued at other nodes are withdrawn: each
 * receiver answers with a FIN, which unpins the buffer, and a receive
 * that matches one later fails with -ECONNRESET.  Sends being pulled
 * finish as they are.  Called before the endpoint drains its own queue,
 * so that the peers learn of the withdrawals before the FINs of that
 * drain.
 */
void dmaplane_ib_ep_closed(struct dmaplane_ep *ep)
{
	struct dmaplane_conn *c;

	mutex_lock(&dmaplane_ib_lock);
	list_for_each_entry(c, &dmaplane_ib_conns, node)
		conn_withdraw(c, ep);
	mutex_unlock(&dmaplane_ib_lock);
}

/**
 * dmaplane_ib_conns_show() - debugfs "conns": the state of every connection
 * @m: the file
 * @v: unused
 *
 * One line per connection, to trace a transfer that never ends: its peer,
 * state, credits we may use and owe, requests waiting for a credit or an
 * ACK, operations waiting for a FIN, RDMA contexts in flight and waiting
 * for room, work requests on the send queue and how long ago one last
 * completed, and how long ago the peer last showed life.
 *
 * Return: 0.
 */
int dmaplane_ib_conns_show(struct seq_file *m, void *v)
{
	struct dmaplane_conn *c;

	mutex_lock(&dmaplane_ib_lock);
	list_for_each_entry(c, &dmaplane_ib_conns, node) {
		unsigned int backlog = 0, sent = 0, cookies = 0, xfers = 0;
		struct dmaplane_xfer *x;
		struct dmaplane_pend *p;
		struct dmaplane_tx *tx;
		unsigned long i;
		void *e;

		mutex_lock(&c->tx_lock);
		list_for_each_entry(tx, &c->backlog, node)
			backlog++;
		list_for_each_entry(p, &c->sent, node)
			sent++;
		list_for_each_entry(x, &c->xfer_wait, node)
			xfers++;
		xa_for_each(&c->cookies, i, e)
			cookies++;
		seq_printf(m, "%pISp node %016llx state %d tx_seq %llu credits %u backlog %u sent %u cookies %u rw_inflight %u rw_wrs %u xfer_wait %u rw_xfers %d",
			   &c->peer->addr, c->node_id, c->state, c->tx_seq, c->credits.avail,
			   backlog, sent, cookies, c->rw_inflight, c->rw_wrs, xfers,
			   atomic_read(&c->rw_xfers));
		mutex_unlock(&c->tx_lock);
		mutex_lock(&c->ack_lock);
		seq_printf(m, " owed %u rx_consumed %llu nnacks %u", c->credits.owed,
			   c->rx_consumed, c->nnacks);
		mutex_unlock(&c->ack_lock);
		seq_printf(m, " sq_wrs %d sq_progress_ms %u silent_ms %u\n",
			   atomic_read(&c->sq_wrs),
			   jiffies_to_msecs(jiffies - READ_ONCE(c->sq_progress)),
			   jiffies_to_msecs(jiffies - READ_ONCE(c->last_rx)));
	}
	mutex_unlock(&dmaplane_ib_lock);
	return 0;
}

/* Devices ------------------------------------------------------------- */

static int ib_add_one(struct ib_device *ibdev)
{
	struct dmaplane_ib_dev *d;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return -ENOMEM;
	d->pd = ib_alloc_pd(ibdev, 0);
	if (IS_ERR(d->pd)) {
		int ret = PTR_ERR(d->pd);

		kfree(d);
		return ret;
	}
	d->ibdev = ibdev;
	kref_init(&d->ref);
	mutex_lock(&dmaplane_ib_lock);
	list_add_tail(&d->node, &dmaplane_ib_devs);
	mutex_unlock(&dmaplane_ib_lock);
	return 0;
}

/* The device goes away: break every connection on it, synchronously. */
static void ib_remove_one(struct ib_device *ibdev, void *client_data)
{
	struct dmaplane_ib_dev *d;

	/* New connections cannot set up on it any more (dmaplane_conn_setup()). */
	mutex_lock(&dmaplane_ib_lock);
	d = dmaplane_ib_dev_find(ibdev);
	if (d)
		list_del(&d->node);
	mutex_unlock(&dmaplane_ib_lock);
	conns_kill(conn_on_device, ibdev);
	if (d)
		kref_put(&d->ref, dmaplane_ib_dev_free);
}

static struct ib_client dmaplane_ib_client = {
	.name = "dmaplane",
	.add = ib_add_one,
	.remove = ib_remove_one,
};

/**
 * dmaplane_ib_init() - module load: devices, listener
 *
 * Return: 0 or a negative errno.
 */
int dmaplane_ib_init(void)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_ANY),
		.sin_port = htons(port),
	};
	struct rdma_cm_id *id;
	int ret;

	dmaplane_ib_wq = alloc_workqueue("dmaplane_ib", DMAPLANE_WQ_PERCPU | WQ_MEM_RECLAIM, 0);
	if (!dmaplane_ib_wq)
		return -ENOMEM;
	ret = ib_register_client(&dmaplane_ib_client);
	if (ret)
		goto err_destroy_wq;
	id = rdma_create_id(&init_net, dmaplane_cm_handler, NULL, RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		ret = PTR_ERR(id);
		goto err_unregister;
	}
	ret = rdma_bind_addr(id, (struct sockaddr *)&sin);
	if (!ret)
		ret = rdma_listen(id, 64);
	if (ret) {
		pr_err("cannot listen on rdma_cm port %u: %d\n", port, ret);
		goto err_destroy_id;
	}
	dmaplane_ib_listener = id;
	return 0;

err_destroy_id:
	rdma_destroy_id(id);
err_unregister:
	ib_unregister_client(&dmaplane_ib_client);
err_destroy_wq:
	destroy_workqueue(dmaplane_ib_wq);
	return ret;
}

/**
 * dmaplane_ib_exit() - module unload: every peer is gone already
 *	(netlink.c deleted them); stop listening, forget the devices
 */
void dmaplane_ib_exit(void)
{
	mutex_lock(&dmaplane_ib_lock);
	dmaplane_ib_exiting = true;
	mutex_unlock(&dmaplane_ib_lock);
	rdma_destroy_id(dmaplane_ib_listener);
	conns_kill(conn_any, NULL);
	flush_workqueue(dmaplane_ib_wq);
	ib_unregister_client(&dmaplane_ib_client);
	WARN_ON(!list_empty(&dmaplane_ib_peers));
	xa_destroy(&dmaplane_ib_slots);
	destroy_workqueue(dmaplane_ib_wq);
}

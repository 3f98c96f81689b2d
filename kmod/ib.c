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
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bvec.h>
#include <linux/completion.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/inet.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/uidgid.h>
#include <linux/workqueue.h>
#include <net/sock.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <rdma/rw.h>

#include "dmaplane.h"
#include "ib_wire.h"

static unsigned short port = 20886;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "rdma_cm port the transport listens on and connects to");

static unsigned long eager_backlog = 4UL << 20;
module_param(eager_backlog, ulong, 0644);
MODULE_PARM_DESC(eager_backlog,
		 "Bytes of eager messages an endpoint may have on their way to other nodes (not yet acknowledged)");

#define IB_TIMEOUT_MS		2000
#define IB_RETRY_DELAY		HZ
/*
 * How long an AV_INSERT waits for the peer's answer, and a message for the
 * ESTABLISHED event it overtook.  A RESOLVE queues behind bulk traffic for
 * credits: seconds on a busy link, more under QEMU on a loaded host.
 */
#define IB_RESOLVE_TIMEOUT	(30 * HZ)
#define IB_SQ_DEPTH		4096
#define IB_RDMA_CTXS		256
/* Scatter/gather entries per RDMA READ or WRITE work request, at most. */
#define IB_MAX_SGE		16
/*
 * RDMA contexts (one per remote segment, up to 2 MiB each) and their work
 * requests in flight per connection: beyond this, contexts wait (a large
 * message's too, piece by piece), so that a burst of large messages
 * neither overflows the send queue nor keeps READs outstanding long
 * enough to exhaust RC retries.
 */
#define IB_RW_BUDGET		8
#define IB_RW_WRS		1024
/*
 * What the send queue holds at the most: the RDMA work requests above,
 * every request the credits allow with its fast registrations (an RTS or
 * RMA_REQ registers up to DMAPLANE_WIRE_MAX_SEGS MRs), an ACK per credit.
 */
#define IB_SQ_NEEDED		(IB_RW_WRS + DMAPLANE_WIRE_CREDITS *		\
				 (DMAPLANE_WIRE_MAX_SEGS + 1) + DMAPLANE_WIRE_CREDITS)
static_assert(IB_SQ_NEEDED <= IB_SQ_DEPTH);
/* Local ACK timeout exponent: 4.096 us * 2^19, about 2 s per try. */
#define IB_ACK_TIMEOUT		19
/*
 * Silence from a peer while operations wait for it: PING it this often
 * (a live peer answers with an ACK at once), and give up on it after
 * IB_DEAD_AFTER.  A node that vanishes sends nothing, a FIN we wait for
 * never comes, and the connection's own retries may never run out (rxe
 * retries forever with a retry count of 7).
 */
#define IB_KEEPALIVE		(5 * HZ)
#define IB_DEAD_AFTER		(30 * HZ)
/* A connection not established by then is given up (and retried). */
#define IB_CONNECT_TIMEOUT	(20 * HZ)
#define IB_MAX_SLOT		((1U << (64 - DMAPLANE_SRC_NODE_SHIFT - 1)) - 1)

/*
 * dmaplane_ib_lock protects the lists of devices and peers, the listener,
 * and the transitions of a peer's connections (peer->conn,
 * peer->connecting).  It is never held while destroying a cm_id
 * (rdma_destroy_id() waits for the id's handler, which takes it).
 */
static DEFINE_MUTEX(dmaplane_ib_lock);
/* Under dmaplane_ib_lock: */
static LIST_HEAD(dmaplane_ib_devs);		/* struct dmaplane_ib_dev */
static LIST_HEAD(dmaplane_ib_peers);		/* struct dmaplane_ib_peer */
static LIST_HEAD(dmaplane_ib_conns);		/* every struct dmaplane_conn */
static struct rdma_cm_id *dmaplane_ib_listener;
static bool dmaplane_ib_exiting;		/* no new connections */
static u32 dmaplane_ib_next_slot;
/* Node slot -> peer; the xa lock protects lookups against removal. */
static DEFINE_XARRAY(dmaplane_ib_slots);
static struct workqueue_struct *dmaplane_ib_wq;

/**
 * struct dmaplane_ib_dev - an RDMA device the transport uses
 * @node: on dmaplane_ib_devs
 * @ibdev: the device
 * @pd: protection domain shared by every connection on the device
 * @ref: the client registration and every connection on the device
 */
struct dmaplane_ib_dev {
	struct list_head node;
	struct ib_device *ibdev;
	struct ib_pd *pd;
	struct kref ref;
};

/**
 * struct dmaplane_ib_peer - a peer node
 * @node: on dmaplane_ib_peers
 * @ref: the peer table and every connection of the peer
 * @addr: address and port to connect to
 * @connect_work: (re)connects while the peer has no connection
 * @deleted: the administrator removed the peer (under dmaplane_ib_lock)
 * @lock: protects @conn, @slot, @node_id and @state for readers that
 *	cannot take dmaplane_ib_lock (senders)
 * @conn: the connection in use (referenced), or NULL
 * @connecting: our own attempt in progress (referenced), or NULL
 * @slot: node slot of @node_id, 0 before the first connection
 * @node_id: the peer's node_id, 0 before the first connection
 * @state: &enum dmaplane_nl_peer_state
 * @tx_msgs: messages sent
 * @rx_msgs: messages received
 * @tx_bytes: bytes sent
 * @rx_bytes: bytes received
 * @drops: connections dropped for malformed input
 */
struct dmaplane_ib_peer {
	struct list_head node;
	struct kref ref;
	struct sockaddr_storage addr;
	struct delayed_work connect_work;
	bool deleted;
	spinlock_t lock;	/* see @lock above */
	struct dmaplane_conn *conn;
	struct dmaplane_conn *connecting;
	u32 slot;
	u64 node_id;
	u8 state;
	atomic64_t tx_msgs;
	atomic64_t rx_msgs;
	atomic64_t tx_bytes;
	atomic64_t rx_bytes;
	atomic64_t drops;
};

enum conn_state {
	CONN_CONNECTING,
	CONN_UP,
	CONN_DEAD,
};

/**
 * struct dmaplane_rx - a posted receive buffer, in two pieces
 * @cqe: completion
 * @conn: its connection
 * @buf: the first DMAPLANE_WIRE_HDR_BYTES of a message
 * @payload: the rest: an eager payload (DMAPLANE_WIRE_EAGER_MAX bytes,
 *	an order-2 page block), or the tail of a control message
 * @dma: DMA address of @buf
 * @payload_dma: DMA address of @payload
 */
struct dmaplane_rx {
	struct ib_cqe cqe;
	struct dmaplane_conn *conn;
	void *buf;
	void *payload;
	u64 dma;
	u64 payload_dma;
};

/**
 * struct dmaplane_conn - one RC connection to a peer node
 * @ref: the peer's pointer, the cm_id's context, operations in flight
 * @node: on dmaplane_ib_conns until its teardown starts
 * @peer: the peer (referenced)
 * @dev: the device (referenced once known)
 * @cm_id: rdma_cm identifier
 * @cq: completion queue for sends and receives
 * @qp: the queue pair
 * @node_id: the peer's node_id from the connection's private data
 * @slot: the node slot of @node_id, set when the connection comes up
 * @active: this node initiated the connection
 * @up_wq: waits for the connection to leave %CONN_CONNECTING
 * @failing: teardown scheduled (set once)
 * @teardown_work: tears the connection down
 * @ack_work: sends the ACK owed to the peer
 * @keepalive_work: gives up on a connection not established within
 *	%IB_CONNECT_TIMEOUT; then PINGs a silent peer while operations wait
 *	for it
 * @last_rx: jiffies of the last sign of life from the peer: a message, or
 *	a SEND, READ or WRITE its side acknowledged (a long bulk transfer
 *	is alive, though no message may arrive for minutes)
 * @tx_lock: protects @state transitions, @credits.avail, @tx_seq,
 *	@backlog, @sent, @cookies and posting to the send queue
 * @state: &enum conn_state; read locklessly as a hint
 * @credits: requests we may send; @credits.owed is under @ack_lock
 * @tx_seq: seq of the last request posted
 * @backlog: &struct dmaplane_tx requests waiting for a credit
 * @xfer_wait: &struct dmaplane_xfer with contexts waiting for room in
 *	%IB_RW_BUDGET and %IB_RW_WRS, oldest first
 * @rw_inflight: RDMA contexts posted and not completed
 * @rw_wrs: their work requests
 * @rw_xfers: transfers holding RDMA contexts initialised on @qp (they
 *	are destroyed in dmaplane_xfer_free(), which may run in the
 *	submitter just after teardown drained the QP): teardown destroys
 *	@qp at zero
 * @rw_xfers_wq: teardown waits there for @rw_xfers to reach zero
 * @sent: &struct dmaplane_pend of EAGER/RTS requests waiting for an ACK
 * @cookies: cookie -> operation waiting for a FIN or RESOLVED
 * @next_cookie: cursor for @cookies
 * @rdvs: the peer's cookie -> &struct dmaplane_rdv queued at a local
 *	endpoint and not matched yet; its xa lock decides between a match
 *	and the peer's CANCEL
 * @ack_lock: protects @rx_consumed, @credits.owed, @nacks and @nnacks
 * @rx_seq: seq of the last request received (receive handler only)
 * @rx_nack: how the request being handled failed, 0 if it did not
 *	(receive handler only); reported with its consumption, so that an
 *	ACK never names a failed request beyond the ones it says consumed
 * @rx_consumed: seq of the last request consumed, for the next ACK
 * @nnacks: entries in @nacks
 * @nacks: failed requests to report in the next ACK
 * @scratch: a control message put back together (receive handler only)
 * @rx: the receive buffers
 */
struct dmaplane_conn {
	struct kref ref;
	struct list_head node;
	struct dmaplane_ib_peer *peer;
	struct dmaplane_ib_dev *dev;
	struct rdma_cm_id *cm_id;
	struct ib_cq *cq;
	struct ib_qp *qp;
	u64 node_id;
	u32 slot;
	bool active;
	wait_queue_head_t up_wq;
	atomic_t failing;
	struct work_struct teardown_work;
	struct work_struct ack_work;
	struct delayed_work keepalive_work;
	unsigned long last_rx;
	struct mutex tx_lock;	/* see @tx_lock above */
	int state;
	struct dmaplane_credits credits;
	u64 tx_seq;
	struct list_head backlog;
	struct list_head xfer_wait;
	unsigned int rw_inflight;
	unsigned int rw_wrs;
	atomic_t rw_xfers;
	wait_queue_head_t rw_xfers_wq;
	struct list_head sent;
	struct xarray cookies;
	u32 next_cookie;
	struct xarray rdvs;
	struct mutex ack_lock;	/* see @ack_lock above */
	u64 rx_seq;
	int rx_nack;
	u64 rx_consumed;
	u32 nnacks;
	struct dmaplane_wire_nack nacks[DMAPLANE_WIRE_CREDITS];
	u8 scratch[DMAPLANE_WIRE_CTRL_MAX];
	struct dmaplane_rx rx[DMAPLANE_WIRE_RECVS];
};

/**
 * struct dmaplane_pend - a SEND waiting for the receiver's ACK
 * @node: on conn->sent (or with its tx on the backlog)
 * @seq: seq of its request
 * @ep: sending endpoint (referenced)
 * @ctx: its context
 * @tag: tag
 * @len: message length
 * @sreg: rendezvous: the registered buffer, completed by the FIN (NULL
 *	for an eager message, completed by the ACK)
 * @charged: eager: bytes charged to @ep's &dmaplane_ep.eager_backlog
 */
struct dmaplane_pend {
	struct list_head node;
	u64 seq;
	struct dmaplane_ep *ep;
	u64 ctx;
	u64 tag;
	u64 len;
	struct dmaplane_sreg *sreg;
	u64 charged;
};

/* Give @p's eager bytes back: before its completion is seen. */
static void dmaplane_pend_uncharge(struct dmaplane_pend *p)
{
	if (p->charged)
		atomic64_sub(p->charged, &p->ep->eager_backlog);
	p->charged = 0;
}

static void dmaplane_pend_free(struct dmaplane_pend *p)
{
	dmaplane_pend_uncharge(p);
	dmaplane_ep_put(p->ep);
	kfree(p);
}

/**
 * struct dmaplane_tx - a message to send
 * @node: on conn->backlog
 * @cqe: send completion
 * @conn: connection (referenced while posted)
 * @buf: the message
 * @len: bytes of @buf
 * @dma: DMA address of @buf once posted
 * @request: costs a credit (every type but ACK)
 * @pend: the SEND waiting for the ACK of this request, or NULL
 * @sreg: the registered buffer an RTS or RMA_REQ offers, or NULL; marked
 *	posted when the message goes out
 * @reg_wrs: fast-registration work requests to post before the message
 */
struct dmaplane_tx {
	struct list_head node;
	struct ib_cqe cqe;
	struct dmaplane_conn *conn;
	void *buf;
	u32 len;
	u64 dma;
	bool request;
	struct dmaplane_pend *pend;
	struct dmaplane_sreg *sreg;
	struct ib_send_wr *reg_wrs;
};

enum { COOKIE_SREG = 1, COOKIE_RESOLVE };

/**
 * struct dmaplane_sreg - a local buffer registered for the peer to reach
 *	(the sender of an RTS, the initiator of an RMA_REQ)
 * @kind: %COOKIE_SREG
 * @cookie: handle in conn->cookies
 * @ep: the operation's endpoint (referenced)
 * @opcode: %DMAPLANE_OP_SEND, _PUT or _GET
 * @ctx: the operation's context
 * @tag: SEND: tag
 * @len: bytes
 * @withdrawn: SEND: a CANCEL went out (the endpoint closed)
 * @posted: its RTS or RMA_REQ went out (under the connection's tx_lock):
 *	before, it may wait in the backlog, and the peer cannot know it
 * @mm: address space charged for the pages (mmgrab()ed), or NULL
 * @charged: pages charged to @mm and the module cap
 * @pages: pinned pages of the buffer
 * @npages: number of @pages
 * @nmrs: MRs in use
 * @mrs: fast-registration MRs and their scatterlists
 * @segs: wire description of the MRs
 * @reg: registration work requests, chained
 */
struct dmaplane_sreg {
	u8 kind;
	u32 cookie;
	struct dmaplane_ep *ep;
	u8 opcode;
	u64 ctx;
	u64 tag;
	u64 len;
	bool withdrawn;
	bool posted;
	struct mm_struct *mm;
	unsigned long charged;
	struct page **pages;
	unsigned int npages;
	unsigned int nmrs;
	struct {
		struct ib_mr *mr;
		struct sg_table sgt;
		bool mapped;
	} mrs[DMAPLANE_WIRE_MAX_SEGS];
	struct dmaplane_wire_seg segs[DMAPLANE_WIRE_MAX_SEGS];
	struct ib_reg_wr reg[DMAPLANE_WIRE_MAX_SEGS];
};

/**
 * struct dmaplane_resolve_wait - an AV_INSERT waiting for the peer
 * @kind: %COOKIE_RESOLVE
 * @done: completed by the answer or the connection's end
 * @status: the answer
 * @abandoned: the waiter gave up (timeout, signal): the entry stays in
 *	the cookies until the answer comes (a late answer is no protocol
 *	error) or the connection ends, whichever frees it; under tx_lock
 */
struct dmaplane_resolve_wait {
	u8 kind;
	struct completion done;
	int status;
	bool abandoned;
};

/**
 * struct dmaplane_rdv - a rendezvous message from the peer (an RTS)
 * @conn: its connection (referenced)
 * @cookie: the sender's cookie, for the FIN
 * @src: source value
 * @tag: tag
 * @len: message length
 * @nsegs: segments of the sender's buffer
 * @segs: the segments
 */
struct dmaplane_rdv {
	struct dmaplane_conn *conn;
	u64 cookie;
	u64 src;
	u64 tag;
	u64 len;
	u32 nsegs;
	struct dmaplane_wire_seg segs[];
};

/**
 * struct dmaplane_xfer - RDMA between local pages and the peer's segments
 * @node: on conn->xfer_wait while it waits for room
 * @conn: connection (referenced)
 * @cqe: completion of each RDMA context
 * @write: RDMA WRITE (local -> peer) instead of READ
 * @pending: contexts not completed yet
 * @status: first error
 * @pages: local pages
 * @npages: number of @pages
 * @user: @pages are pinned user pages (else referenced kernel pages)
 * @charged_mm: the address space whose pinned pages @charged counts
 *	(mmgrab()ed), or NULL
 * @charged: pages charged to RLIMIT_MEMLOCK and the module cap
 * @bv: the local bytes, piece by piece
 * @nbv: pieces in @bv
 * @nctx: RDMA contexts, one per remote segment
 * @next: contexts posted so far (or given up), in order
 * @completed: contexts completed, in order (a send queue completes in order)
 * @rsegs: the remote segments, one per context
 * @ctx: the contexts, their scatterlists and work request counts
 * @done: called once, in process context, when every context completed
 * @ep: receiver (rendezvous) or target's endpoint (referenced)
 * @region: RMA target: the region (referenced)
 * @cookie: the peer's cookie, for the FIN
 * @rctx: rendezvous: the receive's context
 * @src: rendezvous: source value
 * @tag: rendezvous: tag
 * @msg_len: rendezvous: message length
 * @len: bytes moved
 * @rw_counted: counted in the connection's @rw_xfers
 */
struct dmaplane_xfer {
	struct list_head node;
	struct dmaplane_conn *conn;
	struct ib_cqe cqe;
	bool write;
	atomic_t pending;
	int status;
	struct page **pages;
	unsigned int npages;
	bool user;
	struct mm_struct *charged_mm;
	unsigned long charged;
	struct bio_vec *bv;
	unsigned int nbv;
	unsigned int nctx;
	unsigned int next;
	unsigned int completed;
	struct dmaplane_wire_seg *rsegs;
	struct {
		struct rdma_rw_ctx rw;
		struct sg_table sgt;
		bool init;
		unsigned int wrs;
	} *ctx;
	void (*done)(struct dmaplane_xfer *x);
	struct dmaplane_ep *ep;
	struct dmaplane_region *region;
	u64 cookie;
	u64 rctx;
	bool rw_counted;
	u64 src;
	u64 tag;
	u64 msg_len;
	u64 len;
};

static void dmaplane_conn_fail(struct dmaplane_conn *c, bool malformed);

static struct dmaplane_ib_dev *dmaplane_ib_dev_find(struct ib_device *ibdev)
{
	struct dmaplane_ib_dev *d;

	lockdep_assert_held(&dmaplane_ib_lock);
	list_for_each_entry(d, &dmaplane_ib_devs, node)
		if (d->ibdev == ibdev)
			return d;
	return NULL;
}

static void dmaplane_ib_dev_free(struct kref *ref)
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
	mutex_destroy(&c->tx_lock);
	mutex_destroy(&c->ack_lock);
	ib_peer_put(c->peer);
	kfree(c);
}

static void dmaplane_conn_put(struct dmaplane_conn *c)
{
	kref_put(&c->ref, conn_free);
}

static u64 dmaplane_src_value(u32 slot, u64 ep_uid)
{
	return (u64)slot << DMAPLANE_SRC_NODE_SHIFT | ep_uid;
}

/* The live connection of node slot @slot, referenced, or NULL. */
static struct dmaplane_conn *dmaplane_conn_get_by_slot(u32 slot)
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

/* Sending ------------------------------------------------------------- */

static struct dmaplane_tx *dmaplane_tx_alloc(u8 type, u32 body_len)
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

static void *dmaplane_tx_body(struct dmaplane_tx *tx)
{
	return tx->buf + sizeof(struct dmaplane_wire_hdr);
}

static void dmaplane_tx_free(struct dmaplane_tx *tx)
{
	kfree(tx->buf);
	kfree(tx);
}

/* The peer's side answered: the connection is alive (see @last_rx). */
static void dmaplane_conn_alive(struct dmaplane_conn *c)
{
	WRITE_ONCE(c->last_rx, jiffies);
}

static void tx_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct dmaplane_tx *tx = container_of(wc->wr_cqe, struct dmaplane_tx, cqe);
	struct dmaplane_conn *c = tx->conn;

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
static int dmaplane_tx_post_locked(struct dmaplane_conn *c, struct dmaplane_tx *tx)
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
	ret = ib_post_send(c->qp, first, NULL);
	if (ret) {
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
static int dmaplane_conn_submit_locked(struct dmaplane_conn *c, struct dmaplane_tx *tx)
{
	lockdep_assert_held(&c->tx_lock);
	if (c->state != CONN_UP)
		return -ECONNRESET;
	if (tx->request &&
	    (!list_empty(&c->backlog) || !dmaplane_credits_take(&c->credits))) {
		list_add_tail(&tx->node, &c->backlog);
		return 0;
	}
	if (dmaplane_tx_post_locked(c, tx))
		dmaplane_conn_fail(c, false);
	return 0;
}

static int dmaplane_conn_submit(struct dmaplane_conn *c, struct dmaplane_tx *tx)
{
	int ret;

	mutex_lock(&c->tx_lock);
	ret = dmaplane_conn_submit_locked(c, tx);
	mutex_unlock(&c->tx_lock);
	return ret;
}

/* Send a FIN for @cookie; a dead connection needs none. */
static void dmaplane_send_fin(struct dmaplane_conn *c, u64 cookie, int status)
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

static void dmaplane_ack_work(struct work_struct *work)
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

static void keepalive_work(struct work_struct *work)
{
	struct dmaplane_conn *c = container_of(to_delayed_work(work), struct dmaplane_conn,
					       keepalive_work);
	unsigned long silent = jiffies - READ_ONCE(c->last_rx);
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
	if (waiting && silent >= IB_DEAD_AFTER) {
		mutex_unlock(&c->tx_lock);
		pr_warn("%pISp silent for %u s with operations pending: dropping the connection\n",
			&c->peer->addr, jiffies_to_msecs(silent) / 1000);
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
	if (s->pages) {
		unpin_user_pages_dirty_lock(s->pages, s->npages,
					    s->opcode == DMAPLANE_OP_GET);
		atomic_long_sub(s->npages, &dmaplane_stats.xfer_pages);
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
static void dmaplane_sreg_complete(struct dmaplane_conn *c,
				   struct dmaplane_sreg *s, int status)
{
	sreg_release(c, s);
	dmaplane_msg_complete(s->ep, s->opcode, s->ctx, status, status ? 0 : s->len,
			      s->len, s->tag, 0);
	dmaplane_ep_put(s->ep);
	kfree(s);
}

/*
 * Pin the user buffer @b of the current task and register it in MRs of
 * at most the device's page-list length each, for remote read (SEND, PUT)
 * or remote write (GET).  The pages stay pinned until the peer's FIN,
 * which may be long for a SEND: they are charged like a registration
 * (RLIMIT_MEMLOCK unless CAP_IPC_LOCK, and the module cap).
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
	bool write = s->opcode == DMAPLANE_OP_GET;
	int access = write ? IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE :
			     IB_ACCESS_REMOTE_READ;
	unsigned int total = 0, pos = 0, i;
	int ret;

	if (ibdev->attrs.max_fast_reg_page_list_len < 2)
		return -EOPNOTSUPP;
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
		unsigned int np, off, done = 0;
		int pinned;

		if (!l)
			continue;
		np = DIV_ROUND_UP(offset_in_page(a) + l, PAGE_SIZE);
		pinned = pin_user_pages_fast(a & PAGE_MASK, np,
					     FOLL_LONGTERM | (write ? FOLL_WRITE : 0),
					     s->pages + pos);
		if (pinned > 0) {
			s->npages += pinned;
			atomic_long_add(pinned, &dmaplane_stats.xfer_pages);
		}
		if (pinned != np)
			return pinned < 0 ? pinned : -EFAULT;

		/* One MR per run of at most maxp pages. */
		off = offset_in_page(a);
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
		pos += np;
	}
	return 0;
}

/* A registered buffer for an operation of @ep, before sreg_build(). */
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
 * @buf: its buffer (of the current task)
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
	struct dmaplane_sreg *s = NULL;
	struct dmaplane_wire_msg *m;
	struct dmaplane_pend *pend;
	struct dmaplane_conn *c;
	struct dmaplane_tx *tx;
	struct iov_iter iter;
	int ret;

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
		iov_iter_init(&iter, ITER_SOURCE, buf->segs, buf->nsegs, buf->len);
		if (copy_from_iter(m + 1, buf->len, &iter) != buf->len) {
			ret = -EFAULT;
			goto err_free_tx;
		}
		tx->pend = pend;
		ret = dmaplane_conn_submit(c, tx);
		if (ret)
			goto err_free_tx;
		goto out_put_conn;
	}

	s = sreg_alloc(ep, DMAPLANE_OP_SEND, op->ctx, op->tag, buf->len);
	if (!s)
		goto err_free_tx;
	ret = sreg_build(c, s, buf);
	if (!ret) {
		struct dmaplane_wire_rts *rts = (void *)(m + 1);

		pend->sreg = s;
		tx->pend = pend;
		ret = sreg_submit(c, s, tx, &rts->nsegs, rts->segs, &rts->cookie);
	}
	if (ret) {
		sreg_free(c, s);
		goto err_free_tx;
	}
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
 *
 * Return: 0 when accepted, or as dmaplane_ib_send().
 */
int dmaplane_ib_rma(struct dmaplane_ep *ep, u64 dst, const struct dmaplane_op *op)
{
	struct dmaplane_ubuf b = {
		.one = { .iov_base = u64_to_user_ptr(op->addr), .iov_len = op->len },
		.nsegs = 1, .len = op->len,
	};
	struct dmaplane_wire_seglist *sl;
	struct dmaplane_wire_rma *r;
	struct dmaplane_sreg *s;
	struct dmaplane_conn *c;
	struct dmaplane_tx *tx;
	int ret;

	b.segs = &b.one;
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
	ret = sreg_build(c, s, &b);
	if (!ret)
		ret = sreg_submit(c, s, tx, &sl->nsegs, sl->segs, &r->cookie);
	if (!ret)
		goto out_put_conn;
	sreg_free(c, s);
err_free_tx:
	dmaplane_tx_free(tx);
err_unreserve:
	dmaplane_cq_unreserve(ep->cq);
out_put_conn:
	dmaplane_conn_put(c);
	return ret;
}

/* RDMA transfers ----------------------------------------------------- */

static void dmaplane_xfer_free(struct dmaplane_xfer *x)
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
			atomic_long_sub(x->npages, &dmaplane_stats.xfer_pages);
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

static void dmaplane_xfer_finish(struct dmaplane_xfer *x)
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
		ret = rdma_rw_ctx_post(&x->ctx[i].rw, c->qp, c->cm_id->port_num,
				       &x->cqe, NULL);
		if (ret) {
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
static int dmaplane_xfer_start(struct dmaplane_xfer *x,
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
		unsigned int np, k;
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
			atomic_long_add(pinned, &dmaplane_stats.xfer_pages);
		}
		if (pinned != np) {
			ret = pinned < 0 ? pinned : -EFAULT;
			break;
		}
		for (k = 0; k < np; k++) {
			unsigned int off = k ? 0 : offset_in_page(a);
			unsigned int len = min_t(u64, PAGE_SIZE - off, l);

			bvec_set_page(&x->bv[x->nbv++], x->pages[pos + k], len, off);
			l -= len;
		}
		left -= min_t(u64, b->segs[i].iov_len, left);
		pos += np;
	}
	mmput(mm);
	return ret;
}

/* Local pages of a region as @x's pieces. */
static int dmaplane_xfer_region_pages(struct dmaplane_xfer *x, u64 off, u64 len)
{
	unsigned int first_off, i;
	int ret;

	ret = dmaplane_region_pages(x->region, off, len, &x->pages, &x->npages,
				    &first_off);
	if (ret)
		return ret;
	x->bv = kvmalloc_array(x->npages, sizeof(*x->bv), GFP_KERNEL);
	if (!x->bv)
		return -ENOMEM;
	for (i = 0; i < x->npages; i++) {
		unsigned int o = i ? 0 : first_off;
		unsigned int l = min_t(u64, PAGE_SIZE - o, len);

		bvec_set_page(&x->bv[x->nbv++], x->pages[i], l, o);
		len -= l;
	}
	return 0;
}

static struct dmaplane_xfer *dmaplane_xfer_alloc(struct dmaplane_conn *c, bool write)
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

	dmaplane_msg_complete(x->ep, DMAPLANE_OP_RECV, x->rctx,
			      st ? st : x->msg_len > x->len ? -EMSGSIZE : 0,
			      st ? 0 : x->len, x->msg_len, x->tag, x->src);
	dmaplane_send_fin(x->conn, x->cookie,
			  st == -ECONNRESET ? -ECONNRESET : st ? -EIO : 0);
}

/*
 * Take @rdv out of its connection's index, so that a CANCEL can no longer
 * reach it.  Return: false when the peer withdrew it first (its FIN went
 * out already).
 */
static bool dmaplane_rdv_take(struct dmaplane_rdv *rdv)
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
static void dmaplane_rdv_free(struct dmaplane_rdv *rdv)
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

/**
 * dmaplane_ib_pull() - a receive matched a rendezvous message of another
 *	node: pull the data into the receiver's buffer
 * @rdv: the message (freed here)
 * @ep: receiving endpoint
 * @buf: the receive's buffer, in @ep's address space
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
		dmaplane_msg_complete(ep, DMAPLANE_OP_RECV, ctx, -ECONNRESET, 0,
				      rdv->len, rdv->tag, rdv->src);
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
	x->len = min(buf->len, rdv->len);
	x->done = pull_done;
	ret = x->len ? xfer_pin_user(x, ep->mm, buf, x->len) : 0;
	if (!ret)
		ret = dmaplane_xfer_start(x, rdv->segs, rdv->nsegs);
	if (!ret) {
		dmaplane_rdv_free(rdv);
		return;
	}
	dmaplane_xfer_free(x);
err_complete:
	dmaplane_msg_complete(ep, DMAPLANE_OP_RECV, ctx, ret == -EFAULT ? -EFAULT : -ECONNRESET,
			      0, rdv->len, rdv->tag, rdv->src);
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

static void dmaplane_rma_done(struct dmaplane_xfer *x)
{
	dmaplane_send_fin(x->conn, x->cookie, x->status ? -EIO : 0);
}

/* Receiving ----------------------------------------------------------- */

static int rx_msg(struct dmaplane_conn *c, const void *body, bool eager,
		  const void *payload)
{
	const struct dmaplane_wire_msg *m = body;
	u64 src = dmaplane_src_value(c->slot, le64_to_cpu(m->src));
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
					 eager ? payload : NULL, rdv);
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

	mutex_lock(&c->tx_lock);
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
	mutex_unlock(&c->tx_lock);
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
	bool write = r->write;
	u64 len = le64_to_cpu(r->len);
	struct dmaplane_region *reg = NULL;
	struct dmaplane_xfer *x = NULL;
	struct dmaplane_ep *dest;
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
	dmaplane_ep_put(dest);
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
	status = dmaplane_xfer_region_pages(x, le64_to_cpu(r->roffset), len);
	if (!status)
		status = dmaplane_xfer_start(x, sl->segs, le32_to_cpu(sl->nsegs));
	if (!status)
		return 0;
	dmaplane_xfer_free(x);
out_fin:
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
	list_for_each_entry(p, &done, node)
		if (p->sreg && nack_status(ack, p->seq))
			xa_erase(&c->cookies, p->sreg->cookie);
	/* Credits came back: send what waited for them. */
	while (!list_empty(&c->backlog) && dmaplane_credits_take(&c->credits)) {
		struct dmaplane_tx *tx = list_first_entry(&c->backlog,
							  struct dmaplane_tx, node);

		list_del(&tx->node);
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

static int dmaplane_rx_post(struct dmaplane_conn *c, struct dmaplane_rx *rx)
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

static void dmaplane_rx_free(struct dmaplane_conn *c, struct dmaplane_rx *rx)
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

static int dmaplane_rx_alloc(struct dmaplane_conn *c, struct dmaplane_rx *rx)
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

static void dmaplane_rx_done(struct ib_cq *cq, struct ib_wc *wc)
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

/* Connections ---------------------------------------------------------- */

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

static void conn_teardown(struct work_struct *work)
{
	struct dmaplane_conn *c = container_of(work, struct dmaplane_conn, teardown_work);
	struct dmaplane_ib_peer *p = c->peer;
	struct dmaplane_tx *tx, *ttmp;
	struct dmaplane_xfer *x, *xtmp;
	struct dmaplane_pend *pend, *ptmp;
	LIST_HEAD(xwait);
	struct dmaplane_sreg *s;
	unsigned long cookie;
	bool was_up = false;
	LIST_HEAD(backlog);
	LIST_HEAD(sent);
	unsigned int i;
	int refs = 0;
	void *entry;

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

	mutex_lock(&c->tx_lock);
	c->state = CONN_DEAD;
	list_splice_init(&c->backlog, &backlog);
	mutex_unlock(&c->tx_lock);
	wake_up_all(&c->up_wq);

	if (c->qp) {
		rdma_disconnect(c->cm_id);
		/* Every posted request completes (flushed) before this returns. */
		ib_drain_qp(c->qp);
	}
	cancel_work_sync(&c->ack_work);
	cancel_delayed_work_sync(&c->keepalive_work);

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

	list_for_each_entry_safe(tx, ttmp, &backlog, node) {
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

	/*
	 * A transfer whose submitter dropped the last count after the drain
	 * destroys its contexts on the QP: wait for it.  None starts now
	 * (contexts are initialised only while the connection is up).
	 */
	wait_event(c->rw_xfers_wq, !atomic_read(&c->rw_xfers));
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

/*
 * Break @c: its teardown runs once, from the workqueue.  A drop is counted
 * by the call that breaks it, not once per bad message queued behind.
 */
static void dmaplane_conn_fail(struct dmaplane_conn *c, bool malformed)
{
	if (atomic_xchg(&c->failing, 1))
		return;
	if (malformed)
		atomic64_inc(&c->peer->drops);
	queue_work(dmaplane_ib_wq, &c->teardown_work);
}

static int dmaplane_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);

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
static int dmaplane_conn_setup(struct dmaplane_conn *c)
{
	struct ib_qp_init_attr attr = {};
	struct dmaplane_ib_dev *d;
	struct ib_device *ibdev;
	unsigned int i;
	int ret;

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
 * Return: 0, or -ENOSPC when no node slot is left for a node seen anew
 * (slots are never reused; slot 0 is this node, so a connection without
 * a slot of its own must not come up).
 */
static int conn_up(struct dmaplane_conn *c)
{
	struct dmaplane_ib_peer *p = c->peer;
	struct dmaplane_conn *old = NULL;
	u32 slot = p->slot;

	lockdep_assert_held(&dmaplane_ib_lock);
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
	mutex_unlock(&dmaplane_ib_lock);
	if (!c)
		goto err_reject;
	c->cm_id = id;
	c->node_id = node_id;
	id->context = c;
	ret = dmaplane_conn_setup(c);
	if (ret)
		goto err_fail;
	cm_conn_param(id, &param, &pd);
	ret = rdma_accept(id, &param);
	if (ret)
		goto err_fail;
	queue_delayed_work(dmaplane_ib_wq, &c->keepalive_work, IB_CONNECT_TIMEOUT);
	return 0;

err_fail:
	/* The teardown destroys @id; rdma_cm must not. */
	rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
	dmaplane_conn_fail(c, false);
	return 0;
err_reject:
	/* Non-zero: rdma_cm destroys @id, which no connection owns. */
	rdma_reject(id, NULL, 0, IB_CM_REJ_CONSUMER_DEFINED);
	return -ECONNREFUSED;
}

static int dmaplane_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
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

static void dmaplane_peer_connect_work(struct work_struct *work)
{
	struct dmaplane_ib_peer *p = container_of(to_delayed_work(work),
						  struct dmaplane_ib_peer, connect_work);
	struct rdma_cm_id *id;
	struct dmaplane_conn *c;
	int ret;

	mutex_lock(&dmaplane_ib_lock);
	if (p->deleted || dmaplane_ib_exiting || p->conn || p->connecting) {
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

	dmaplane_ib_wq = alloc_workqueue("dmaplane_ib", WQ_MEM_RECLAIM, 0);
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

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Private header of the transport across nodes (ib*.c): its limits, the
 * structures its files share and their prototypes, grouped by the file
 * that defines them.  Only ib.c talks to the rest of the module (the
 * dmaplane_ib_*() calls in dmaplane.h).
 */
#ifndef _DMAPLANE_IB_LOC_H
#define _DMAPLANE_IB_LOC_H

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
 * IB_DEAD_AFTER (counted from no earlier than the keepalive's last look
 * at an idle connection: one idle for minutes is not silent).  A node
 * that vanishes sends nothing, a FIN we wait for never comes, and the
 * connection's own retries may never run out (rxe retries forever with a
 * retry count of 7, and an RNR retry count of 7 is infinite everywhere).
 * The same limit applies to a send queue on which nothing completes while
 * the peer still talks: a peer that posts no receives, or a device that
 * drops a retried READ it cannot serve.
 */
#define IB_KEEPALIVE		(5 * HZ)
#define IB_DEAD_AFTER		(30 * HZ)
/*
 * Answers (FINs, RESOLVEDs) queued for want of the peer's credits, at
 * most: an honest peer gives credits back as it consumes our requests, so
 * its answers queue only for an ACK's round trip (a few hundred for a
 * burst of rendezvous FINs).  16,384 small messages hold about 4 MiB.
 */
#define IB_BACKLOG_ANSWERS	16384
/* A connection not established by then is given up (and retried). */
#define IB_CONNECT_TIMEOUT	(20 * HZ)
#define IB_MAX_SLOT		((1U << (64 - DMAPLANE_SRC_NODE_SHIFT - 1)) - 1)

extern struct mutex dmaplane_ib_lock;
extern struct list_head dmaplane_ib_peers;
extern struct list_head dmaplane_ib_conns;
extern bool dmaplane_ib_exiting;
extern u32 dmaplane_ib_next_slot;
extern struct xarray dmaplane_ib_slots;
extern struct workqueue_struct *dmaplane_ib_wq;

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
 * @setup_lock: serialises dmaplane_conn_setup(), run by a cm handler, with
 *	the teardown, which runs on the workqueue beside it: a setup that
 *	finds @failing set builds nothing, so once the teardown has held it
 *	@dev, @cq, @qp and @rx change no more
 * @teardown_work: tears the connection down
 * @ack_work: sends the ACK owed to the peer
 * @keepalive_work: gives up on a connection not established within
 *	%IB_CONNECT_TIMEOUT; then PINGs a silent peer while operations wait
 *	for it
 * @last_rx: jiffies of the last sign of life from the peer: a message, or
 *	a SEND, READ or WRITE its side acknowledged (a long bulk transfer
 *	is alive, though no message may arrive for minutes)
 * @idle_at: jiffies of the keepalive's last look that found no operation
 *	waiting (or of the connection's start), under @tx_lock: a peer is
 *	silent since @last_rx or @idle_at, the later, as an idle connection
 *	carries no messages
 * @sq_wrs: signalled work requests on the send queue (messages and RDMA
 *	contexts) posted and not completed
 * @sq_progress: jiffies of the last send-queue completion, or of a post to
 *	an idle send queue: a peer that keeps talking but lets none of our
 *	work requests complete is given up on all the same
 * @tx_lock: protects @state transitions, @credits.avail, @tx_seq,
 *	@backlog, @credit_wait, @backlog_answers, @sent, @cookies, @idle_at
 *	and posting to the send queue
 * @state: &enum conn_state; read locklessly as a hint
 * @credits: requests we may send; @credits.owed is under @ack_lock
 * @tx_seq: seq of the last request posted
 * @backlog: &struct dmaplane_tx requests waiting for a credit
 * @credit_wait: jiffies since when @backlog has waited with no credit
 *	coming back: of a request queued on an empty @backlog, or of the
 *	last ACK that gave credits.  A peer that keeps talking (its empty
 *	ACKs, its requests) but gives none back is given up on after
 *	%IB_DEAD_AFTER all the same.
 * @backlog_answers: FINs and RESOLVEDs in @backlog: answers to the peer's
 *	requests, which a peer keeping our credits could have us queue
 *	without end (we give its credits back as we consume its requests);
 *	beyond %IB_BACKLOG_ANSWERS the peer is taken for a broken one
 * @xfer_wait: &struct dmaplane_xfer with contexts waiting for room in
 *	%IB_RW_BUDGET and %IB_RW_WRS, oldest first
 * @rw_inflight: RDMA contexts posted and not completed
 * @rw_wrs: their work requests
 * @rw_xfers: transfers holding RDMA contexts initialised on @qp (they
 *	are destroyed in dmaplane_xfer_free(), which may run in the
 *	submitter just after teardown drained the QP): teardown destroys
 *	@qp at zero
 * @sreg_builders: senders building registrations on @dev for a
 *	rendezvous SEND or an RMA_REQ (their pages already pinned: nothing
 *	in between blocks for long), from sreg_enter() (only while the
 *	connection is up) to their submission or undoing: teardown puts
 *	@dev (whose removal frees its PD) at zero
 * @rw_xfers_wq: teardown waits there for @rw_xfers and @sreg_builders to
 *	reach zero
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
	struct mutex setup_lock;	/* see @setup_lock above */
	struct work_struct teardown_work;
	struct work_struct ack_work;
	struct delayed_work keepalive_work;
	unsigned long last_rx;
	unsigned long idle_at;
	atomic_t sq_wrs;
	unsigned long sq_progress;
	struct mutex tx_lock;	/* see @tx_lock above */
	int state;
	struct dmaplane_credits credits;
	u64 tx_seq;
	struct list_head backlog;
	unsigned long credit_wait;
	unsigned int backlog_answers;
	struct list_head xfer_wait;
	unsigned int rw_inflight;
	unsigned int rw_wrs;
	atomic_t rw_xfers;
	atomic_t sreg_builders;
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
 * @sent: that SEND completed (under tx_lock): only then have the
 *	registration work requests before it on the send queue run
 * @early: the peer FINed or NACKed it before @sent (under tx_lock; the
 *	SEND's acknowledgment late, or a peer that guessed the cookie of
 *	a request stuck on our send queue): it left conn->cookies, and the
 *	SEND's completion completes it with @early_status (-ECONNRESET when
 *	the SEND failed), so that no MR is freed under a queued work request
 * @early_status: that FIN's or NACK's status
 * @mm: address space charged for the pages (mmgrab()ed), or NULL
 * @charged: pages charged to @mm and the module cap
 * @pages: pinned pages of the buffer
 * @npages: number of @pages
 * @region_pages: @pages are a region's, referenced (put_page()), not pinned
 * @first_off: with @region_pages, the range's offset in its first page
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
	bool sent;
	bool early;
	int early_status;
	struct mm_struct *mm;
	unsigned long charged;
	struct page **pages;
	unsigned int npages;
	bool region_pages;
	unsigned int first_off;
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
 * @cq_data: remote completion data, with %DMAPLANE_CQE_F_DATA in @cqe_flags
 * @cqe_flags: ``DMAPLANE_CQE_F_*`` of the receive that takes it
 * @nsegs: segments of the sender's buffer
 * @segs: the segments
 */
struct dmaplane_rdv {
	struct dmaplane_conn *conn;
	u64 cookie;
	u64 src;
	u64 tag;
	u64 len;
	u64 cq_data;
	u8 cqe_flags;
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
 * @cq_data: rendezvous: remote completion data
 * @cqe_flags: rendezvous: ``DMAPLANE_CQE_F_*`` of the receive
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
	u64 cq_data;
	u8 cqe_flags;
	u64 len;
};

/* ib.c */
struct dmaplane_ib_dev *dmaplane_ib_dev_find(struct ib_device *ibdev);
void dmaplane_ib_dev_free(struct kref *ref);
void dmaplane_conn_put(struct dmaplane_conn *c);
u64 dmaplane_src_value(u32 slot, u64 ep_uid);
struct dmaplane_conn *dmaplane_conn_get_by_slot(u32 slot);

/* ib_cm.c */
void dmaplane_conn_fail(struct dmaplane_conn *c, bool malformed);
int dmaplane_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev);
int dmaplane_conn_setup(struct dmaplane_conn *c);
void dmaplane_peer_connect_work(struct work_struct *work);

/* ib_tx.c */
void dmaplane_pend_uncharge(struct dmaplane_pend *p);
void dmaplane_pend_free(struct dmaplane_pend *p);
struct dmaplane_tx *dmaplane_tx_alloc(u8 type, u32 body_len);
bool dmaplane_tx_is_answer(const struct dmaplane_tx *tx);
bool dmaplane_sreg_finish_locked(struct dmaplane_conn *c, struct dmaplane_sreg *s,
				 int status);
void *dmaplane_tx_body(struct dmaplane_tx *tx);
void dmaplane_tx_free(struct dmaplane_tx *tx);
void dmaplane_conn_alive(struct dmaplane_conn *c);
void dmaplane_sq_posting(struct dmaplane_conn *c);
void dmaplane_sq_done(struct dmaplane_conn *c);
int dmaplane_tx_post_locked(struct dmaplane_conn *c, struct dmaplane_tx *tx);
int dmaplane_conn_submit_locked(struct dmaplane_conn *c, struct dmaplane_tx *tx);
int dmaplane_conn_submit(struct dmaplane_conn *c, struct dmaplane_tx *tx);
void dmaplane_send_fin(struct dmaplane_conn *c, u64 cookie, int status);
void dmaplane_ack_work(struct work_struct *work);
void dmaplane_sreg_complete(struct dmaplane_conn *c, struct dmaplane_sreg *s,
			    int status);

/* ib_xfer.c */
void dmaplane_xfer_free(struct dmaplane_xfer *x);
void dmaplane_xfer_finish(struct dmaplane_xfer *x);
int dmaplane_xfer_start(struct dmaplane_xfer *x,
			const struct dmaplane_wire_seg *segs, u32 nsegs);
int dmaplane_xfer_region_pages(struct dmaplane_xfer *x, u64 off, u64 len);
struct dmaplane_xfer *dmaplane_xfer_alloc(struct dmaplane_conn *c, bool write);
bool dmaplane_rdv_take(struct dmaplane_rdv *rdv);
void dmaplane_rdv_free(struct dmaplane_rdv *rdv);
void dmaplane_rma_done(struct dmaplane_xfer *x);

/* ib_rx.c */
int dmaplane_rx_post(struct dmaplane_conn *c, struct dmaplane_rx *rx);
void dmaplane_rx_free(struct dmaplane_conn *c, struct dmaplane_rx *rx);
int dmaplane_rx_alloc(struct dmaplane_conn *c, struct dmaplane_rx *rx);
void dmaplane_rx_done(struct ib_cq *cq, struct ib_wc *wc);

#endif /* _DMAPLANE_IB_LOC_H */

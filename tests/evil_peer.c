// SPDX-License-Identifier: GPL-2.0
/*
 * evil_peer: a malicious dmaplane node in user space (librdmacm +
 * libibverbs), for the two-node test.  It connects to a node's rdma_cm
 * listener from a privileged source port, the way a peer node does, and
 * per case either offers bad private data (the node must reject the
 * CONNECT) or, once accepted, sends one malformed or unjustified message
 * (the node must drop the connection: RDMA_CM_EVENT_DISCONNECTED here
 * within a bounded time).  The last case sends a PUT request (RMA_REQ
 * with a valid one-segment seglist) for a region with a random dmaplane
 * rkey on a random endpoint: a user error, answered with a FIN of status
 * -ENOENT (no such region) or -ECONNRESET (no such endpoint) on a
 * connection that stays up.  One drop case is a burst: more requests
 * than the credits the node granted, none waiting for an ACK.
 *
 * late-answer-after-idle, run only when named (jobs/evil.sh), plays an
 * honest but slow peer: it connects with no receive posted, says nothing
 * for longer than the node's IB_DEAD_AFTER, and once "go" arrives on its
 * standard input (a process of the node is inserting this peer's name: a
 * RESOLVE waits on the connection) it posts its receives 8 s later,
 * takes the RESOLVE and answers it; the node must keep the connection
 * and take the answer.
 *
 * --random sends N frames made from SEED: well-formed messages of every
 * type, mutated or not, on as many connections as the node drops (see
 * run_random()); the seed is printed for a rerun.
 *
 *   evil_peer --addr IP [--port P] --case NAME[,NAME...]|all [--timeout S]
 *             [--dst UID]
 *   evil_peer --addr IP [--port P] --random SEED --count N [--timeout S]
 *             [--dst UID [--rkey KEY --rlen BYTES]]
 *   evil_peer --list [all|accept|reject|drop|stay|stall|late|withhold|early|overflow]
 *
 * "overflow" lists the drop cases whose SEND is larger than the node's
 * receive buffers: the node sees an error completion instead of a
 * message (IB_WC_LOC_LEN_ERR, or IB_WC_LOC_QP_OP_ERR on rxe).
 *
 * Output is TAP; diagnostics are "# " lines before each result.  Exit
 * status 0 when every case passed.  Binding a port below 1024 needs root
 * (CAP_NET_BIND_SERVICE).
 *
 * On InfiniBand and RoCE the listener always sees the CONNECT's private
 * data zero-padded to 56 bytes: "too short" private data arrives as a
 * struct with zero credits and buffer size.
 *
 * A CONNECT to a port without a listener is rejected too, but by the CM
 * with reason 8 (invalid service ID), while a listener that refuses the
 * connection causes reason 28 (consumer defined): the reject cases check
 * for 28.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/random.h>

#include <rdma/rdma_cma.h>
#include <infiniband/verbs.h>

#include <linux/dmaplane.h>
#include "../kmod/ib_wire.h"

#define HSZ		sizeof(struct dmaplane_wire_hdr)
#define REJ_CONSUMER	28	/* IB_CM_REJ_CONSUMER_DEFINED */
#define REJ_NO_SERVICE	8	/* IB_CM_REJ_INVALID_SERVICE_ID */
/* Enough sends in flight for a burst beyond the node's credits. */
#define SEND_SLOTS	(2 * DMAPLANE_WIRE_CREDITS)
#define STEP_MS		10
/* The longest wait for the node's answer to a CONNECT (see conn_open()). */
#define CM_ANSWER_MS	12000
/* Registered for the node to reach (RDMA READ/WRITE of RTS and RMA_REQ). */
#define RMEM_SIZE	(64 * 1024)

enum kind {
	ACCEPT,		/* valid CONNECT: accepted, stays up */
	REJECT,		/* bad CONNECT: rejected by the node */
	DROP,		/* accepted, one bad message: the node disconnects */
	STAY,		/* accepted, one user-level error or a message that
			 * needs no answer: answered, stays up */
	STALL,		/* accepted, no receive posted, talks on: the node
			 * gives up on its send queue and disconnects */
	LATE,		/* accepted, idle, then the node's first request is
			 * answered late: it must wait, stays up */
	WITHHOLD,	/* accepted, keeps the credits the node's requests
			 * took, talks on: the node gives up and disconnects */
	EARLY,		/* accepted, FINs a request of the node stuck on its
			 * send queue: the node waits for it to leave */
};

static const char *const kind_names[] = {
	"accept", "reject", "drop", "stay", "stall", "late", "withhold", "early"
};

struct conn {
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *mem;		/* DMAPLANE_WIRE_RECVS receive buffers, then sends,
				 * each DMAPLANE_WIRE_BUF_SIZE bytes */
	struct ibv_mr *rmr;	/* @rmem, remote read and write */
	struct ibv_qp *xqp;	/* a QP of our own, not rdma_cm's (RTU held) */
	uint8_t *rmem;
	unsigned int slot;	/* send slot that msg_start() fills */
	bool qp;
	bool established;
	bool disconnected;
	int reject_status;
	struct dmaplane_wire_cm peer_cm;
	uint8_t peer_cm_len;
	uint64_t next_seq;
	unsigned int sends;	/* posted */
	unsigned int sends_done;	/* completed, successfully or not */
	int credits;		/* requests we may still send */
	uint64_t peer_seq;	/* seq of the node's last request */
	uint32_t peer_owed;	/* the node's requests we have not ACKed */
	unsigned int peer_reqs;	/* requests received from the node */
	/*
	 * Credits the node gave back in ACKs built before it had consumed
	 * request @early_below (ACK.consumed < @early_below): 0 = not counted.
	 */
	uint64_t early_below;
	unsigned int early_credits;
	/* The last message the node sent us, type and bytes. */
	uint8_t rx[DMAPLANE_WIRE_BUF_SIZE];
	uint32_t rx_len;
	int rx_err;
	bool hold_recvs;	/* poll_cq() reposts no receive buffer */
};

static struct {
	struct sockaddr_in dst;
	int timeout_ms;
	uint64_t dst_uid;
	uint64_t rkey;		/* --rkey: a region of --dst for RMA_REQ */
	uint64_t rlen;		/* --rlen: its length */
	int next_port;
	bool no_recvs;		/* conn_open() posts no receive buffers */
	bool one_recv;		/* conn_open() posts one receive buffer */
} opt = {
	.timeout_ms = 5000,
	.next_port = 1023,
};

static void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

/* --random: every value drawn from the seed (splitmix64), reproducible. */
static bool rng_seeded;
static uint64_t rng_state;

static uint64_t splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd64(void)
{
	uint64_t v = 0;

	if (rng_seeded)
		return splitmix64(&rng_state);
	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull;
	return v;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- connection ------------------------------------------------------ */

static void conn_destroy(struct conn *c)
{
	if (c->qp)
		rdma_destroy_qp(c->id);
	if (c->xqp)
		ibv_destroy_qp(c->xqp);
	if (c->rmr)
		ibv_dereg_mr(c->rmr);
	if (c->mr)
		ibv_dereg_mr(c->mr);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->ch)
		rdma_destroy_event_channel(c->ch);
	free(c->mem);
	free(c->rmem);
	free(c);
}

static struct ibv_qp *qp_of(struct conn *c)
{
	return c->xqp ? c->xqp : c->id->qp;
}

static uint8_t *send_buf(struct conn *c, unsigned int slot)
{
	return c->mem + (size_t)(DMAPLANE_WIRE_RECVS + slot) * DMAPLANE_WIRE_BUF_SIZE;
}

static int post_recv(struct conn *c, unsigned int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->mem + (size_t)i * DMAPLANE_WIRE_BUF_SIZE),
		.length = DMAPLANE_WIRE_BUF_SIZE,
		.lkey = c->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(qp_of(c), &wr, &bad);
}

static bool rx_is_ack(const struct conn *c)
{
	return c->rx_len >= HSZ && c->rx[0] == DMAPLANE_WIRE_ACK;
}

/*
 * Count what the node sent: credits its ACKs give back, its requests
 * (which we owe an ACK for when we play an honest peer).
 */
static void rx_account(struct conn *c, const uint8_t *b, uint32_t len)
{
	const struct dmaplane_wire_hdr *h = (const void *)b;
	const struct dmaplane_wire_ack *a = (const void *)(b + HSZ);

	if (len < HSZ || le32toh(h->len) != len - HSZ)
		return;
	if (h->type == DMAPLANE_WIRE_ACK) {
		if (len < HSZ + sizeof(*a))
			return;
		c->credits += (int)le32toh(a->credits);
		if (le64toh(a->consumed) < c->early_below)
			c->early_credits += le32toh(a->credits);
		return;
	}
	c->peer_seq = le64toh(h->seq);
	c->peer_owed++;
	c->peer_reqs++;
}

/*
 * Reap completions: keep the first request received (or else the last
 * ACK), repost the buffers.
 */
static void poll_cq(struct conn *c)
{
	struct ibv_wc wc[16];
	int i, n;

	if (!c->cq)
		return;
	while ((n = ibv_poll_cq(c->cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id >= DMAPLANE_WIRE_RECVS)
				c->sends_done++;
			if (wc[i].status != IBV_WC_SUCCESS) {
				/* Flushes once the node disconnected. */
				if (wc[i].status != IBV_WC_WR_FLUSH_ERR && !c->rx_err) {
					c->rx_err = wc[i].status;
					diag("completion error: %s (%s)",
					     ibv_wc_status_str(wc[i].status),
					     wc[i].opcode & IBV_WC_RECV ? "recv" : "send");
				}
				continue;
			}
			if (!(wc[i].opcode & IBV_WC_RECV))
				continue;
			rx_account(c, c->mem + wc[i].wr_id * DMAPLANE_WIRE_BUF_SIZE,
				   wc[i].byte_len);
			/* ACKs only until a request came: that one stays. */
			if (!c->rx_len || rx_is_ack(c)) {
				c->rx_len = wc[i].byte_len;
				memcpy(c->rx, c->mem + wc[i].wr_id * DMAPLANE_WIRE_BUF_SIZE,
				       c->rx_len);
			}
			if (c->established && !c->disconnected && !c->hold_recvs)
				post_recv(c, (unsigned int)wc[i].wr_id);
		}
	}
}

/*
 * Wait up to @ms for the next CM event, reaping completions meanwhile.
 * Return its type, or -1 on timeout or error.
 */
static int next_event(struct conn *c, int ms)
{
	long long end = now_ms() + ms;
	struct rdma_cm_event *ev;
	struct pollfd pfd = { .fd = c->ch->fd, .events = POLLIN };
	int type;

	for (;;) {
		poll_cq(c);
		if (rdma_get_cm_event(c->ch, &ev) == 0)
			break;
		if (errno != EAGAIN) {
			diag("rdma_get_cm_event: %s", strerror(errno));
			return -1;
		}
		if (now_ms() >= end)
			return -1;
		poll(&pfd, 1, STEP_MS);
	}
	type = ev->event;
	switch (type) {
	case RDMA_CM_EVENT_CONNECT_RESPONSE:	/* the REP, our RTU held back */
	case RDMA_CM_EVENT_ESTABLISHED:
		c->established = true;
		c->peer_cm_len = ev->param.conn.private_data_len;
		memset(&c->peer_cm, 0, sizeof(c->peer_cm));
		if (ev->param.conn.private_data)
			memcpy(&c->peer_cm, ev->param.conn.private_data,
			       c->peer_cm_len < sizeof(c->peer_cm) ?
			       c->peer_cm_len : sizeof(c->peer_cm));
		break;
	case RDMA_CM_EVENT_REJECTED:
		c->reject_status = ev->status;
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
		c->disconnected = true;
		break;
	default:
		if (ev->status)
			diag("%s: status %d", rdma_event_str(ev->event), ev->status);
		break;
	}
	rdma_ack_cm_event(ev);
	return type;
}

static int expect_event(struct conn *c, int want, int ms)
{
	int type = next_event(c, ms);

	if (type == want)
		return 0;
	if (type < 0)
		diag("no %s within %d ms", rdma_event_str(want), ms);
	else
		diag("%s instead of %s", rdma_event_str(type), rdma_event_str(want));
	return -1;
}

/* Bind @port on any address: -errno on failure. */
static int bind_port(struct conn *c, int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };

	if (rdma_bind_addr(c->id, (struct sockaddr *)&a) == 0)
		return 0;
	return -errno;
}

/* Move our own QP to @state with the attributes rdma_cm knows. */
static int xqp_modify(struct conn *c, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = { .qp_state = state };
	int mask, ret;

	if (rdma_init_qp_attr(c->id, &attr, &mask)) {
		diag("rdma_init_qp_attr(%d): %s", state, strerror(errno));
		return -1;
	}
	ret = ibv_modify_qp(c->xqp, &attr, mask);
	if (ret)
		diag("ibv_modify_qp(%d): %s", state, strerror(ret));
	return ret ? -1 : 0;
}

/*
 * Resolve the node, create the QP with every receive buffer posted and
 * send a CONNECT with @pd (@pd_len bytes) from a privileged port (or an
 * unprivileged one when @unpriv).  Return the connection with the answer
 * (ESTABLISHED or REJECTED) recorded, or NULL after a diagnostic.
 *
 * @held: the QP is ours, not rdma_cm's, and the connection stops short of
 * the RTU: the node accepted (CONNECT_RESPONSE) and its QP receives, our
 * QP sends, but the node's connection is not established until
 * conn_establish() sends the RTU.
 */
static struct conn *conn_open(const void *pd, uint8_t pd_len, bool unpriv, bool held)
{
	struct ibv_qp_init_attr qa = {
		.cap = {
			.max_send_wr = SEND_SLOTS,
			.max_recv_wr = DMAPLANE_WIRE_RECVS,
			.max_send_sge = 1,
			.max_recv_sge = 1,
		},
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	struct rdma_conn_param cp = {
		.private_data = pd,
		.private_data_len = pd_len,
		.responder_resources = 1,
		.initiator_depth = 1,
		.retry_count = 7,
		.rnr_retry_count = 7,
	};
	/* A spare slot: the last one may be sent a little beyond its end. */
	size_t memlen = (size_t)(DMAPLANE_WIRE_RECVS + SEND_SLOTS + 1) * DMAPLANE_WIRE_BUF_SIZE;
	struct conn *c = calloc(1, sizeof(*c));
	int port, ret, tries, type;
	unsigned int i;

	if (!c) {
		diag("out of memory");
		return NULL;
	}
	c->next_seq = 1;
	c->credits = DMAPLANE_WIRE_CREDITS;
	c->ch = rdma_create_event_channel();
	if (!c->ch) {
		diag("rdma_create_event_channel: %s (no RDMA device or rdma_cm?)",
		     strerror(errno));
		goto fail;
	}
	if (fcntl(c->ch->fd, F_SETFL, fcntl(c->ch->fd, F_GETFL) | O_NONBLOCK) < 0) {
		diag("fcntl: %s", strerror(errno));
		goto fail;
	}
	if (rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP)) {
		diag("rdma_create_id: %s", strerror(errno));
		goto fail;
	}

	if (unpriv) {
		ret = bind_port(c, 0);
	} else {
		/* A fresh port per connection, from 1023 down. */
		ret = -EADDRINUSE;
		for (tries = 0; tries < 512 && ret == -EADDRINUSE; tries++) {
			port = opt.next_port--;
			if (opt.next_port < 512)
				opt.next_port = 1023;
			ret = bind_port(c, port);
		}
	}
	if (ret) {
		diag("bind source port: %s%s", strerror(-ret),
		     ret == -EACCES ? " (privileged ports need root)" : "");
		goto fail;
	}
	diag("source port %u", ntohs(rdma_get_src_port(c->id)));

	if (rdma_resolve_addr(c->id, NULL, (struct sockaddr *)&opt.dst, 2000)) {
		diag("rdma_resolve_addr: %s", strerror(errno));
		goto fail;
	}
	if (expect_event(c, RDMA_CM_EVENT_ADDR_RESOLVED, 3000))
		goto fail;
	if (rdma_resolve_route(c->id, 2000)) {
		diag("rdma_resolve_route: %s", strerror(errno));
		goto fail;
	}
	if (expect_event(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 3000))
		goto fail;

	c->pd = ibv_alloc_pd(c->id->verbs);
	c->cq = c->pd ? ibv_create_cq(c->id->verbs, DMAPLANE_WIRE_RECVS + SEND_SLOTS,
				      NULL, NULL, 0) : NULL;
	c->mem = c->cq ? calloc(1, memlen) : NULL;
	c->mr = c->mem ? ibv_reg_mr(c->pd, c->mem, memlen, IBV_ACCESS_LOCAL_WRITE) : NULL;
	c->rmem = c->mr ? calloc(1, RMEM_SIZE) : NULL;
	c->rmr = c->rmem ? ibv_reg_mr(c->pd, c->rmem, RMEM_SIZE, IBV_ACCESS_LOCAL_WRITE |
				      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE) : NULL;
	if (!c->rmr) {
		diag("verbs resources: %s", strerror(errno));
		goto fail;
	}
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	if (held) {
		c->xqp = ibv_create_qp(c->pd, &qa);
		if (!c->xqp) {
			diag("ibv_create_qp: %s", strerror(errno));
			goto fail;
		}
		if (xqp_modify(c, IBV_QPS_INIT))
			goto fail;
		cp.qp_num = c->xqp->qp_num;
	} else if (rdma_create_qp(c->id, c->pd, &qa)) {
		diag("rdma_create_qp: %s", strerror(errno));
		goto fail;
	} else {
		c->qp = true;
	}
	for (i = 0; i < (opt.one_recv ? 1 : DMAPLANE_WIRE_RECVS) && !opt.no_recvs; i++) {
		ret = post_recv(c, i);
		if (ret) {
			diag("ibv_post_recv: %s", strerror(ret));
			goto fail;
		}
	}

	if (rdma_connect(c->id, &cp)) {
		diag("rdma_connect: %s", strerror(errno));
		goto fail;
	}
	/*
	 * The node answers every CONNECT, but a lost REQ or REP is sent
	 * again only after the CM's response timeout (rdma_cm's 2^20 *
	 * 4.096 us, 4.3 s): give the answer that long once more.  Seen
	 * once under TCG: a drop case's CONNECT unanswered for 5 s.
	 */
	type = next_event(c, opt.timeout_ms > CM_ANSWER_MS ? opt.timeout_ms : CM_ANSWER_MS);
	if (held && type == RDMA_CM_EVENT_CONNECT_RESPONSE) {
		if (xqp_modify(c, IBV_QPS_RTR) || xqp_modify(c, IBV_QPS_RTS))
			goto fail;
		return c;
	}
	if (type == RDMA_CM_EVENT_ESTABLISHED || type == RDMA_CM_EVENT_REJECTED)
		return c;
	diag("CONNECT answered by %s", type < 0 ? "nothing" : rdma_event_str(type));
fail:
	conn_destroy(c);
	return NULL;
}

static void conn_close(struct conn *c)
{
	if (c->established && !c->disconnected) {
		rdma_disconnect(c->id);
		next_event(c, 1000);
	}
	conn_destroy(c);
}

static void valid_cm(struct dmaplane_wire_cm *cm)
{
	memset(cm, 0, sizeof(*cm));
	cm->magic = htole32(DMAPLANE_WIRE_MAGIC);
	cm->version = DMAPLANE_WIRE_VERSION;
	/*
	 * Random, but below 2^48 (and non-zero): lower than the node's own
	 * node_id but for one node in 65,536.  After each drop the node
	 * connects to this address again every second (it added it as a
	 * peer, and nothing listens here), and of two nodes connecting to
	 * each other at once the lower node_id's attempt wins: with a higher
	 * one, a CONNECT that arrives during such an attempt is refused.
	 */
	cm->node_id = htole64((rnd64() >> 16) | 1);
	cm->credits = htole32(DMAPLANE_WIRE_CREDITS);
	cm->buf_size = htole32(DMAPLANE_WIRE_BUF_SIZE);
}

/* The node's ACCEPT must carry a valid struct dmaplane_wire_cm. */
static int check_peer_cm(struct conn *c)
{
	const struct dmaplane_wire_cm *cm = &c->peer_cm;

	if (c->peer_cm_len < sizeof(*cm) || le32toh(cm->magic) != DMAPLANE_WIRE_MAGIC ||
	    cm->version != DMAPLANE_WIRE_VERSION ||
	    le32toh(cm->credits) != DMAPLANE_WIRE_CREDITS ||
	    le32toh(cm->buf_size) != DMAPLANE_WIRE_BUF_SIZE) {
		diag("ACCEPT private data invalid: len %u magic %#x version %u credits %u buf_size %u",
		     c->peer_cm_len, le32toh(cm->magic), cm->version,
		     le32toh(cm->credits), le32toh(cm->buf_size));
		return -1;
	}
	diag("accepted by node %#llx", (unsigned long long)le64toh(cm->node_id));
	return 0;
}

/*
 * Connect with valid private data.  The node refuses one only when it
 * cannot build the connection (valid_cm() keeps its own attempts to
 * connect here from winning over ours): retry a refused CONNECT a few
 * times.
 */
static struct conn *conn_open_valid_held(bool held)
{
	struct dmaplane_wire_cm cm;
	struct conn *c;
	int i, reason;

	for (i = 0; i < 5; i++) {
		valid_cm(&cm);
		c = conn_open(&cm, sizeof(cm), false, held);
		if (!c)
			return NULL;
		if (c->established) {
			if (check_peer_cm(c)) {
				conn_close(c);
				return NULL;
			}
			return c;
		}
		reason = c->reject_status;
		conn_destroy(c);
		diag("valid CONNECT rejected (reason %d)%s", reason,
		     reason == REJ_NO_SERVICE ? ": no listener" : "");
		if (reason == REJ_NO_SERVICE)
			return NULL;
		sleep(1);
	}
	return NULL;
}

static struct conn *conn_open_valid(void)
{
	return conn_open_valid_held(false);
}

/* Send the RTU of a connection opened with @held. */
static int conn_establish(struct conn *c)
{
	if (rdma_establish(c->id)) {
		diag("rdma_establish: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Send @len bytes of slot @slot, which the caller filled. */
static int send_msg(struct conn *c, unsigned int slot, uint32_t len)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)send_buf(c, slot),
		.length = len,
		.lkey = c->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = DMAPLANE_WIRE_RECVS + slot,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;
	int ret;

	ret = ibv_post_send(qp_of(c), &wr, &bad);
	if (ret)
		diag("ibv_post_send: %s", strerror(ret));
	c->sends++;
	return ret;
}

/*
 * Send slots 0 .. @n - 1, @len[i] bytes each, as one chain of work
 * requests: they leave back to back, without waiting for anything.
 */
static int send_burst(struct conn *c, unsigned int n, const uint32_t *len)
{
	struct ibv_send_wr wr[SEND_SLOTS], *bad;
	struct ibv_sge sge[SEND_SLOTS];
	unsigned int i;
	int ret;

	if (n > SEND_SLOTS)
		return -EINVAL;
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < n; i++) {
		sge[i].addr = (uintptr_t)send_buf(c, i);
		sge[i].length = len[i];
		sge[i].lkey = c->mr->lkey;
		wr[i].wr_id = DMAPLANE_WIRE_RECVS + i;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	ret = ibv_post_send(qp_of(c), wr, &bad);
	if (ret)
		diag("ibv_post_send: %s", strerror(ret));
	c->sends += n;
	return ret;
}

/* ---- messages --------------------------------------------------------- */

/* Header of a message in send slot @c->slot; returns the body. */
static void *msg_start(struct conn *c, uint8_t type, uint32_t body_len)
{
	uint8_t *b = send_buf(c, c->slot);
	struct dmaplane_wire_hdr *h = (void *)b;

	memset(b, 0, DMAPLANE_WIRE_BUF_SIZE);
	h->type = type;
	h->version = DMAPLANE_WIRE_VERSION;
	h->len = htole32(body_len);
	h->seq = htole64(type == DMAPLANE_WIRE_ACK ? 0 : c->next_seq++);
	return b + HSZ;
}

static struct dmaplane_wire_hdr *hdr(struct conn *c)
{
	return (void *)send_buf(c, c->slot);
}

/* An EAGER message of @payload bytes, addressed to a made-up endpoint. */
static uint32_t msg_eager(struct conn *c, uint32_t payload)
{
	struct dmaplane_wire_msg *m = msg_start(c, DMAPLANE_WIRE_EAGER,
						sizeof(*m) + payload);

	m->src = htole64(rnd64() & ((1ull << DMAPLANE_SRC_NODE_SHIFT) - 1));
	m->dst = htole64(opt.dst_uid);
	m->tag = htole64(0xbad);
	m->msg_len = htole64(payload);
	memset(m + 1, 0x5a, payload);
	return HSZ + sizeof(*m) + payload;
}

/* An RTS of @nsegs segments of 4096 bytes. */
static uint32_t msg_rts(struct conn *c, uint32_t nsegs)
{
	uint32_t body = sizeof(struct dmaplane_wire_msg) + sizeof(struct dmaplane_wire_rts) +
			nsegs * sizeof(struct dmaplane_wire_seg);
	struct dmaplane_wire_msg *m = msg_start(c, DMAPLANE_WIRE_RTS, body);
	struct dmaplane_wire_rts *rts = (void *)(m + 1);
	uint32_t i;

	m->src = htole64(rnd64() & ((1ull << DMAPLANE_SRC_NODE_SHIFT) - 1));
	m->dst = htole64(opt.dst_uid);
	m->msg_len = htole64((uint64_t)nsegs * 4096);
	/* Senders' cookies are below 2^32 (a larger one is its own fault). */
	rts->cookie = htole64((uint32_t)rnd64());
	rts->nsegs = htole32(nsegs);
	for (i = 0; i < nsegs; i++) {
		rts->segs[i].addr = htole64(rnd64());
		rts->segs[i].rkey = htole32((uint32_t)rnd64());
		rts->segs[i].len = htole32(4096);
	}
	return HSZ + body;
}

/*
 * A PUT request of @nsegs segments of 4096 bytes (a valid seglist) for a
 * random dmaplane rkey on the endpoint --dst.  The target checks the key
 * before it touches the segments, so their addresses and keys are made up.
 */
static uint32_t msg_rma(struct conn *c, uint32_t nsegs, uint64_t cookie)
{
	uint32_t body = sizeof(struct dmaplane_wire_rma) +
			sizeof(struct dmaplane_wire_seglist) +
			nsegs * sizeof(struct dmaplane_wire_seg);
	struct dmaplane_wire_rma *r = msg_start(c, DMAPLANE_WIRE_RMA_REQ, body);
	struct dmaplane_wire_seglist *sl = (void *)(r + 1);
	uint32_t i;

	r->cookie = htole64(cookie);
	r->src = htole64(rnd64() & ((1ull << DMAPLANE_SRC_NODE_SHIFT) - 1));
	r->dst = htole64(opt.dst_uid);
	r->rkey = htole64(rnd64() | 1);
	r->len = htole64((uint64_t)nsegs * 4096);
	r->write = 1;
	sl->nsegs = htole32(nsegs);
	for (i = 0; i < nsegs; i++) {
		sl->segs[i].addr = htole64(rnd64());
		sl->segs[i].rkey = htole32((uint32_t)rnd64());
		sl->segs[i].len = htole32(4096);
	}
	return HSZ + body;
}

static struct dmaplane_wire_seglist *rma_seglist(struct conn *c)
{
	return (void *)((uint8_t *)(hdr(c) + 1) + sizeof(struct dmaplane_wire_rma));
}

/* ---- cases ------------------------------------------------------------ */

struct evil_case {
	const char *name;
	enum kind kind;
	/* REJECT: alter valid private data, return its length. */
	uint8_t (*cm)(struct dmaplane_wire_cm *cm);
	/*
	 * DROP, and STAY with a message: build the message in send slot 0,
	 * return its length.
	 */
	uint32_t (*msg)(struct conn *c);
	/* DROP: larger than the node's receive buffers. */
	bool overflow;
	/* DROP: @msg fills this many send slots, sent in one burst. */
	unsigned int burst;
	/* Not part of "all": it needs the node's side to play along. */
	bool alone;
};

static uint8_t cm_bad_magic(struct dmaplane_wire_cm *cm)
{
	cm->magic = htole32(DMAPLANE_WIRE_MAGIC ^ 0x20);
	return sizeof(*cm);
}

static uint8_t cm_bad_version(struct dmaplane_wire_cm *cm)
{
	cm->version = DMAPLANE_WIRE_VERSION + 1;
	return sizeof(*cm);
}

static uint8_t cm_bad_credits(struct dmaplane_wire_cm *cm)
{
	cm->credits = htole32(DMAPLANE_WIRE_CREDITS * 2);
	return sizeof(*cm);
}

static uint8_t cm_zero_credits(struct dmaplane_wire_cm *cm)
{
	cm->credits = 0;
	return sizeof(*cm);
}

static uint8_t cm_bad_buf_size(struct dmaplane_wire_cm *cm)
{
	cm->buf_size = htole32(DMAPLANE_WIRE_BUF_SIZE * 4);
	return sizeof(*cm);
}

static uint8_t cm_short(struct dmaplane_wire_cm *cm)
{
	(void)cm;
	return offsetof(struct dmaplane_wire_cm, credits);
}

static uint8_t cm_none(struct dmaplane_wire_cm *cm)
{
	(void)cm;
	return 0;
}

/* Valid private data, but from a port above 1023 (see run_reject()). */
static uint8_t cm_unprivileged(struct dmaplane_wire_cm *cm)
{
	(void)cm;
	return sizeof(*cm);
}

static uint32_t m_short_header(struct conn *c)
{
	msg_eager(c, 0);
	return HSZ / 2;
}

static uint32_t m_bad_version(struct conn *c)
{
	uint32_t len = msg_eager(c, 8);

	hdr(c)->version = DMAPLANE_WIRE_VERSION + 1;
	return len;
}

static uint32_t m_unknown_type(struct conn *c)
{
	uint32_t len = msg_eager(c, 8);

	hdr(c)->type = __DMAPLANE_WIRE_MAX;
	return len;
}

static uint32_t m_len_mismatch(struct conn *c)
{
	uint32_t len = msg_eager(c, 64);

	/* The header claims 32 bytes more than are sent. */
	hdr(c)->len = htole32(le32toh(hdr(c)->len) + 32);
	return len;
}

static uint32_t m_eager_msg_len(struct conn *c)
{
	uint32_t len = msg_eager(c, 64);
	struct dmaplane_wire_msg *m = (void *)(hdr(c) + 1);

	m->msg_len = htole64(1ull << 40);
	return len;
}

static uint32_t m_eager_oversized(struct conn *c)
{
	/* One byte more than a receive buffer holds. */
	return msg_eager(c, DMAPLANE_WIRE_EAGER_MAX + 1);
}

static uint32_t m_rts_nsegs(struct conn *c)
{
	uint32_t len = msg_rts(c, 2);
	struct dmaplane_wire_rts *rts = (void *)((uint8_t *)(hdr(c) + 1) +
						 sizeof(struct dmaplane_wire_msg));

	rts->nsegs = htole32(0x10000000);
	return len;
}

static uint32_t m_rts_too_many(struct conn *c)
{
	return msg_rts(c, DMAPLANE_WIRE_MAX_SEGS + 1);
}

static uint32_t m_rts_zero_seg(struct conn *c)
{
	uint32_t len = msg_rts(c, 3);
	struct dmaplane_wire_msg *m = (void *)(hdr(c) + 1);
	struct dmaplane_wire_rts *rts = (void *)(m + 1);

	rts->segs[1].len = 0;
	m->msg_len = htole64(2 * 4096);
	return len;
}

static uint32_t m_rts_sum(struct conn *c)
{
	uint32_t len = msg_rts(c, 2);
	struct dmaplane_wire_msg *m = (void *)(hdr(c) + 1);

	m->msg_len = htole64(3 * 4096);
	return len;
}

static uint32_t m_fin_unknown(struct conn *c)
{
	struct dmaplane_wire_fin *f = msg_start(c, DMAPLANE_WIRE_FIN, sizeof(*f));

	f->cookie = htole64(rnd64());
	return HSZ + sizeof(*f);
}

/* A control message (FIN) padded beyond DMAPLANE_WIRE_CTRL_MAX bytes. */
static uint32_t m_ctrl_oversized(struct conn *c)
{
	uint32_t body = DMAPLANE_WIRE_CTRL_MAX + 1 - HSZ;
	struct dmaplane_wire_fin *f = msg_start(c, DMAPLANE_WIRE_FIN, body);

	f->cookie = htole64(rnd64());
	return HSZ + body;
}

/* Larger than the node's receive buffers: IB_WC_LOC_LEN_ERR there. */
static uint32_t m_send_oversized(struct conn *c)
{
	return msg_eager(c, 2 * DMAPLANE_WIRE_EAGER_MAX);
}

static uint32_t m_rma_seg_sum(struct conn *c)
{
	uint32_t len = msg_rma(c, 2, rnd64());
	struct dmaplane_wire_rma *r = (void *)(hdr(c) + 1);

	r->len = htole64(3 * 4096);
	return len;
}

static uint32_t m_rma_too_many(struct conn *c)
{
	return msg_rma(c, DMAPLANE_WIRE_MAX_SEGS + 1, rnd64());
}

static uint32_t m_rma_zero_segs(struct conn *c)
{
	uint32_t len = msg_rma(c, 0, rnd64());
	struct dmaplane_wire_rma *r = (void *)(hdr(c) + 1);

	r->len = htole64(4096);
	return len;
}

static uint32_t m_rma_zero_seg(struct conn *c)
{
	uint32_t len = msg_rma(c, 2, rnd64());
	struct dmaplane_wire_rma *r = (void *)(hdr(c) + 1);

	rma_seglist(c)->segs[0].len = 0;
	r->len = htole64(4096);
	return len;
}

static uint32_t m_rma_nsegs(struct conn *c)
{
	uint32_t len = msg_rma(c, 1, rnd64());

	rma_seglist(c)->nsegs = htole32(0x10000000);
	return len;
}

static uint32_t m_rma_dst(struct conn *c)
{
	uint32_t len = msg_rma(c, 1, rnd64());
	struct dmaplane_wire_rma *r = (void *)(hdr(c) + 1);

	r->dst = htole64(1ull << DMAPLANE_SRC_NODE_SHIFT);
	return len;
}

static uint32_t m_seq_gap(struct conn *c)
{
	uint32_t len = msg_eager(c, 8);

	hdr(c)->seq = htole64(2);
	return len;
}

static uint32_t m_resolved_unknown(struct conn *c)
{
	struct dmaplane_wire_resolve *r = msg_start(c, DMAPLANE_WIRE_RESOLVED, sizeof(*r));

	r->cookie = htole64(rnd64());
	r->ep_uid = htole64(opt.dst_uid);
	return HSZ + sizeof(*r);
}

static uint32_t m_ack_credits(struct conn *c)
{
	struct dmaplane_wire_ack *a = msg_start(c, DMAPLANE_WIRE_ACK, sizeof(*a));

	/* Nothing was ever sent to us: no credit is outstanding. */
	a->credits = htole32(1);
	return HSZ + sizeof(*a);
}

static uint32_t m_ack_nack_unknown(struct conn *c)
{
	uint32_t body = sizeof(struct dmaplane_wire_ack) + sizeof(struct dmaplane_wire_nack);
	struct dmaplane_wire_ack *a = msg_start(c, DMAPLANE_WIRE_ACK, body);

	/* Fails a request the node never sent. */
	a->nnacks = htole32(1);
	a->nacks[0].seq = htole64(1);
	a->nacks[0].status = htole32((uint32_t)-EIO);
	return HSZ + body;
}

static uint32_t m_rts_cookie_range(struct conn *c)
{
	uint32_t len = msg_rts(c, 1);
	struct dmaplane_wire_rts *rts = (void *)(hdr(c) + 1) + sizeof(struct dmaplane_wire_msg);

	rts->cookie = htole64(1ull << 32 | (uint32_t)rnd64());
	return len;
}

/* CANCEL of an RTS this peer never sent: nothing to withdraw. */
static uint32_t m_cancel_unknown(struct conn *c)
{
	struct dmaplane_wire_cancel *k = msg_start(c, DMAPLANE_WIRE_CANCEL, sizeof(*k));

	k->cookie = htole64((uint32_t)rnd64());
	return HSZ + sizeof(*k);
}

static uint32_t m_cancel_cookie_range(struct conn *c)
{
	uint32_t len = m_cancel_unknown(c);
	struct dmaplane_wire_cancel *k = (void *)(hdr(c) + 1);

	k->cookie = htole64(~0ull);
	return len;
}

static uint32_t m_cancel_long(struct conn *c)
{
	struct dmaplane_wire_cancel *k = msg_start(c, DMAPLANE_WIRE_CANCEL, 2 * sizeof(*k));

	k->cookie = htole64((uint32_t)rnd64());
	return HSZ + 2 * sizeof(*k);
}

static uint32_t m_ping(struct conn *c)
{
	msg_start(c, DMAPLANE_WIRE_PING, 0);
	return HSZ;
}

static uint32_t m_ping_body(struct conn *c)
{
	msg_start(c, DMAPLANE_WIRE_PING, 8);
	return HSZ + 8;
}

static uint32_t m_seq_zero(struct conn *c)
{
	uint32_t len = msg_eager(c, 8);

	hdr(c)->seq = 0;
	return len;
}

static const struct evil_case cases[] = {
	{ "accept-valid", ACCEPT, .cm = NULL },
	{ "reject-bad-magic", REJECT, .cm = cm_bad_magic },
	{ "reject-bad-version", REJECT, .cm = cm_bad_version },
	{ "reject-bad-credits", REJECT, .cm = cm_bad_credits },
	{ "reject-zero-credits", REJECT, .cm = cm_zero_credits },
	{ "reject-bad-buf-size", REJECT, .cm = cm_bad_buf_size },
	{ "reject-short", REJECT, .cm = cm_short },
	{ "reject-no-private-data", REJECT, .cm = cm_none },
	{ "reject-unprivileged-port", REJECT, .cm = cm_unprivileged },
	{ "drop-short-header", DROP, .msg = m_short_header },
	{ "drop-bad-version", DROP, .msg = m_bad_version },
	{ "drop-unknown-type", DROP, .msg = m_unknown_type },
	{ "drop-len-mismatch", DROP, .msg = m_len_mismatch },
	{ "drop-eager-msg-len", DROP, .msg = m_eager_msg_len },
	{ "drop-eager-oversized", DROP, .msg = m_eager_oversized, .overflow = true },
	{ "drop-send-oversized", DROP, .msg = m_send_oversized, .overflow = true },
	{ "drop-ctrl-too-long", DROP, .msg = m_ctrl_oversized },
	{ "drop-rts-bogus-nsegs", DROP, .msg = m_rts_nsegs },
	{ "drop-rts-too-many-segs", DROP, .msg = m_rts_too_many },
	{ "drop-rts-zero-seg", DROP, .msg = m_rts_zero_seg },
	{ "drop-rts-seg-sum", DROP, .msg = m_rts_sum },
	{ "drop-fin-unknown-cookie", DROP, .msg = m_fin_unknown },
	{ "drop-rma-seg-sum", DROP, .msg = m_rma_seg_sum },
	{ "drop-rma-too-many-segs", DROP, .msg = m_rma_too_many },
	{ "drop-rma-zero-segs", DROP, .msg = m_rma_zero_segs },
	{ "drop-rma-zero-seg", DROP, .msg = m_rma_zero_seg },
	{ "drop-rma-bogus-nsegs", DROP, .msg = m_rma_nsegs },
	{ "drop-rma-dst-range", DROP, .msg = m_rma_dst },
	{ "drop-resolved-unknown-cookie", DROP, .msg = m_resolved_unknown },
	{ "drop-ack-excess-credits", DROP, .msg = m_ack_credits },
	{ "drop-ack-unknown-nack", DROP, .msg = m_ack_nack_unknown },
	{ "drop-seq-zero", DROP, .msg = m_seq_zero },
	{ "drop-seq-gap", DROP, .msg = m_seq_gap },
	{ "drop-rts-cookie-range", DROP, .msg = m_rts_cookie_range },
	{ "drop-cancel-cookie-range", DROP, .msg = m_cancel_cookie_range },
	{ "drop-cancel-too-long", DROP, .msg = m_cancel_long },
	{ "drop-ping-with-body", DROP, .msg = m_ping_body },
	/*
	 * One request more than the credits the node granted in its
	 * ACCEPT: PINGs, back to back, none waiting for an ACK.
	 */
	{ "drop-over-credits", DROP, .msg = m_ping, .burst = DMAPLANE_WIRE_CREDITS + 1 },
	{ "stay-rma-unknown-rkey", STAY, .cm = NULL },
	{ "stay-cancel-unknown-cookie", STAY, .msg = m_cancel_unknown },
	{ "stay-ping", STAY, .msg = m_ping },
	{ "stall-no-receives", STALL, .msg = m_ping },
	{ "withhold-credits", WITHHOLD, .cm = NULL },
	{ "late-answer-after-idle", LATE, .alone = true },
	{ "fin-before-rts-sent", EARLY, .alone = true },
};

#define NCASES	(sizeof(cases) / sizeof(cases[0]))

/* The connection must stay up for @ms: no DISCONNECTED, no error. */
static int stays_up(struct conn *c, int ms)
{
	int type = next_event(c, ms);

	if (type >= 0) {
		diag("%s while the connection should stay up", rdma_event_str(type));
		return -1;
	}
	if (c->rx_err) {
		diag("completion error while the connection should stay up");
		return -1;
	}
	return 0;
}

static int run_accept(void)
{
	struct conn *c = conn_open_valid();
	int ret;

	if (!c)
		return -1;
	ret = stays_up(c, 1000);
	conn_close(c);
	return ret;
}

static int run_reject(const struct evil_case *t)
{
	struct dmaplane_wire_cm cm;
	struct conn *c;
	uint8_t len;
	int ret = -1;

	valid_cm(&cm);
	len = t->cm(&cm);
	c = conn_open(&cm, len, t->cm == cm_unprivileged, false);
	if (!c)
		return -1;
	if (c->established) {
		diag("CONNECT accepted");
	} else if (c->reject_status == REJ_CONSUMER) {
		diag("rejected by the node (reason %d)", c->reject_status);
		ret = 0;
	} else {
		diag("rejected with reason %d, not by a listener (%d)%s",
		     c->reject_status, REJ_CONSUMER,
		     c->reject_status == REJ_NO_SERVICE ? ": no listener on the port" : "");
	}
	conn_close(c);
	return ret;
}

/*
 * A burst (@t->burst messages) is sent before the node's connection is
 * even established: our RTU is held back until every message of it has
 * landed in the node's receive buffers (their SENDs completed).  It
 * consumes them in order once the RTU arrived, and the one beyond the
 * credits it granted finds them all owed - unless the node's ACK work,
 * which runs beside its receive handler, gave credits back while the
 * burst was being consumed.  The node cannot tell when we saw that ACK,
 * so it must accept the rest: a try in which an ACK built before the
 * last message (ACK.consumed < burst) returned enough credits proves
 * nothing, and is repeated on a new connection.  Return: 0 when the node
 * disconnected, 1 for such a try, -1 on failure.
 */
static int drop_try(const struct evil_case *t)
{
	unsigned int i, n = t->burst ? t->burst : 1;
	struct conn *c = conn_open_valid_held(n > 1);
	uint32_t len[SEND_SLOTS];
	long long start;
	int type, ret = -1;

	if (!c)
		return -1;
	c->early_below = n > 1 ? n : 0;
	for (i = 0; i < n; i++) {
		c->slot = i;
		len[i] = t->msg(c);
	}
	c->slot = 0;
	if (n > 1)
		diag("sending %u messages of %u bytes, type %u, seq 1..%u, in one burst",
		     n, len[0], hdr(c)->type, n);
	else
		diag("sending %u bytes, type %u", len[0], hdr(c)->type);
	start = now_ms();
	if (send_burst(c, n, len))
		goto out;
	if (n > 1) {
		while (c->sends_done < n && !c->rx_err && now_ms() < start + opt.timeout_ms)
			next_event(c, STEP_MS);
		diag("%u of %u SENDs completed after %lld ms; sending the RTU",
		     c->sends_done, n, now_ms() - start);
		if (c->sends_done < n || c->rx_err || conn_establish(c))
			goto out;
	}
	type = next_event(c, opt.timeout_ms);
	if (type == RDMA_CM_EVENT_DISCONNECTED) {
		diag("disconnected after %lld ms", now_ms() - start);
		ret = 0;
	} else if (type < 0 && n > DMAPLANE_WIRE_CREDITS &&
		   c->early_credits >= n - DMAPLANE_WIRE_CREDITS) {
		diag("still connected: the node gave %u credits back before it consumed message %u",
		     c->early_credits, n);
		ret = 1;
	} else if (type < 0) {
		diag("still connected after %d ms (%u credits given back early)",
		     opt.timeout_ms, c->early_credits);
	} else {
		diag("%s instead of DISCONNECTED", rdma_event_str(type));
	}
out:
	conn_close(c);
	return ret;
}

/* Tries of a burst case before its ACK race counts as a failure. */
#define DROP_TRIES	5

static int run_drop(const struct evil_case *t)
{
	int i, ret = 1;

	for (i = 0; i < DROP_TRIES && ret == 1; i++)
		ret = drop_try(t);
	return ret ? -1 : 0;
}

/*
 * A PUT for a region no endpoint published: FIN -ENOENT (the endpoint
 * exists, the key does not) or -ECONNRESET (no such endpoint).
 */
static int run_stay(void)
{
	struct conn *c = conn_open_valid();
	const struct dmaplane_wire_fin *f;
	const struct dmaplane_wire_hdr *h;
	uint64_t cookie = rnd64();
	long long end;
	int32_t st;
	int ret = -1;

	if (!c)
		return -1;
	h = (void *)c->rx;
	f = (void *)(c->rx + HSZ);
	if (send_msg(c, 0, msg_rma(c, 1, cookie)))
		goto out;

	/* Skip ACKs; the first request from the node must be the FIN. */
	end = now_ms() + opt.timeout_ms;
	while (now_ms() < end && (!c->rx_len || rx_is_ack(c))) {
		if (next_event(c, STEP_MS) >= 0) {
			diag("%s while waiting for the FIN", c->disconnected ?
			     "DISCONNECTED" : "CM event");
			goto out;
		}
		if (c->rx_err)
			goto out;
	}
	if (!c->rx_len || rx_is_ack(c)) {
		diag("no FIN within %d ms", opt.timeout_ms);
		goto out;
	}
	if (c->rx_len != HSZ + sizeof(*f) || h->type != DMAPLANE_WIRE_FIN ||
	    h->version != DMAPLANE_WIRE_VERSION || le32toh(h->len) != sizeof(*f) ||
	    le64toh(h->seq) != 1) {
		diag("expected FIN seq 1, got %u bytes: type %u version %u len %u seq %llu",
		     c->rx_len, h->type, h->version, le32toh(h->len),
		     (unsigned long long)le64toh(h->seq));
		goto out;
	}
	st = (int32_t)le32toh(f->status);
	if (le64toh(f->cookie) != cookie || (st != -ENOENT && st != -ECONNRESET)) {
		diag("FIN cookie %s, status %d (want -ENOENT = %d or -ECONNRESET = %d)",
		     le64toh(f->cookie) == cookie ? "echoed" : "WRONG", st, -ENOENT,
		     -ECONNRESET);
		goto out;
	}
	diag("FIN status %s", st == -ENOENT ? "-ENOENT" : "-ECONNRESET");
	ret = stays_up(c, 1000);
out:
	conn_close(c);
	return ret;
}

/*
 * A request the node consumes without answering but for its credit (a
 * CANCEL naming nothing, a PING): an ACK giving the credit back, and the
 * connection stays up.
 */
static int run_stay_msg(const struct evil_case *t)
{
	struct conn *c = conn_open_valid();
	const struct dmaplane_wire_ack *a;
	long long end;
	int ret = -1;

	if (!c)
		return -1;
	a = (void *)(c->rx + HSZ);
	if (send_msg(c, 0, t->msg(c)))
		goto out;
	end = now_ms() + opt.timeout_ms;
	while (now_ms() < end && !rx_is_ack(c) && !c->disconnected && !c->rx_err)
		next_event(c, STEP_MS);
	if (!rx_is_ack(c) || c->rx_len < HSZ + sizeof(*a) || le32toh(a->credits) != 1 ||
	    le64toh(a->consumed) != 1) {
		diag("no ACK of the request within %d ms (%u bytes received, type %u)",
		     opt.timeout_ms, c->rx_len, c->rx_len ? c->rx[0] : 0);
		goto out;
	}
	diag("ACK: consumed 1, 1 credit back");
	ret = stays_up(c, 1000);
out:
	conn_close(c);
	return ret;
}

/*
 * The node's IB_DEAD_AFTER (30 s), and the longest it may take to notice
 * (its keepalive runs every 5 s), with room for a slow VM.  The lower
 * bound is half of it: under TCG both VMs keep time by counting ticks
 * (refined-jiffies: no usable TSC, HPET or PM timer), and the ticks one
 * of them loses under load put its clock behind the other's (in a CI run
 * the node logged 30 s when this side had counted 23,989 ms).  Half still
 * tells the stall apart from the drops that come at once and from the
 * keepalive's 5 s.
 */
#define STALL_MIN_MS	15000
#define STALL_MAX_MS	60000

/*
 * Send an empty ACK every second (from send slot @slot on, in turn) and
 * wait for the node to drop @c: 0 when it did, after STALL_MIN_MS to
 * STALL_MAX_MS.  The node never finds us silent, so what drops the
 * connection is what the case provoked.
 */
static int talk_until_dropped(struct conn *c, unsigned int slot)
{
	long long start = now_ms(), next = start + 1000;
	unsigned int n = 0;
	int type = -1;

	while (now_ms() < start + STALL_MAX_MS && !c->rx_err) {
		if (now_ms() >= next) {
			c->slot = slot + n++ % (SEND_SLOTS - slot);
			msg_start(c, DMAPLANE_WIRE_ACK, sizeof(struct dmaplane_wire_ack));
			if (send_msg(c, c->slot, HSZ + sizeof(struct dmaplane_wire_ack)))
				return -1;
			next += 1000;
		}
		type = next_event(c, 100);
		if (type >= 0)
			break;
	}
	if (type == RDMA_CM_EVENT_DISCONNECTED && now_ms() - start >= STALL_MIN_MS) {
		diag("disconnected after %lld ms, %u empty ACKs sent", now_ms() - start, n);
		return 0;
	}
	if (type >= 0)
		diag("%s after %lld ms (want DISCONNECTED after %d-%d ms)",
		     rdma_event_str(type), now_ms() - start, STALL_MIN_MS, STALL_MAX_MS);
	else
		diag("still connected after %lld ms%s", now_ms() - start,
		     c->rx_err ? " (completion error)" : "");
	return -1;
}

/*
 * A peer that posts no receive buffer but keeps talking: a request (the
 * node must ACK it), then every second an ACK that gives nothing back,
 * so that the node never finds the connection silent.  The node's ACK
 * meets an RNR NAK at every try, and an RNR retry count of 7 never runs
 * out: nothing completes on the node's send queue.  It must give up on
 * the connection about IB_DEAD_AFTER after its ACK was posted, neither
 * much sooner (it is no malformed message) nor never.
 */
static int run_stall(const struct evil_case *t)
{
	struct conn *c;
	int ret = -1;

	opt.no_recvs = true;
	c = conn_open_valid();
	opt.no_recvs = false;
	if (!c)
		return -1;
	c->slot = 0;
	if (send_msg(c, 0, t->msg(c)))
		goto out;
	diag("request sent, no receive posted; an empty ACK every second");
	/* Slots 1 .. SEND_SLOTS - 1 in turn: long completed. */
	ret = talk_until_dropped(c, 1);
out:
	conn_close(c);
	return ret;
}

/*
 * Wait until every send completed (send slots are reused from 0): false
 * when the connection broke or the node does not answer.
 */
static bool send_idle(struct conn *c)
{
	long long end = now_ms() + opt.timeout_ms;

	while (c->sends_done != c->sends) {
		if (now_ms() >= end || c->rx_err || c->disconnected)
			return false;
		next_event(c, STEP_MS);
	}
	return !c->rx_err && !c->disconnected;
}

/* An honest ACK of every request of the node consumed so far. */
static void send_ack(struct conn *c)
{
	struct dmaplane_wire_ack *a;

	if (!send_idle(c))
		return;
	c->slot = 0;
	a = msg_start(c, DMAPLANE_WIRE_ACK, sizeof(*a));
	a->consumed = htole64(c->peer_seq);
	a->credits = htole32(c->peer_owed);
	c->peer_owed = 0;
	send_msg(c, 0, HSZ + sizeof(*a));
}

/* RESOLVEs sent by withhold-credits: more than the credits we granted. */
#define WITHHOLD_REQS	(DMAPLANE_WIRE_CREDITS + 8)

/*
 * A peer that keeps the credits the node's requests took: it sends
 * WITHHOLD_REQS RESOLVEs (within the credits the node gives back), which
 * the node answers with as many RESOLVEDs, requests of its own; it never
 * gives their credits back, so that the last ones wait in the node's
 * backlog, and sends an empty ACK every second, so that the node never
 * finds it silent.  The node must give up on the connection about
 * IB_DEAD_AFTER after its backlog started to wait ("gave no credit back"
 * in its log, jobs/evil.sh), neither much sooner nor never.
 */
static int run_withhold(void)
{
	struct dmaplane_wire_resolve *q;
	int ret = -1;
	struct conn *c;
	unsigned int i;
	long long end;

	c = conn_open_valid();
	if (!c)
		return -1;
	end = now_ms() + opt.timeout_ms;
	for (i = 0; i < WITHHOLD_REQS; i++) {
		while (c->credits <= 0 && now_ms() < end && !c->disconnected && !c->rx_err)
			next_event(c, STEP_MS);
		if (c->credits <= 0) {
			diag("no credit for RESOLVE %u within %d ms", i + 1, opt.timeout_ms);
			goto out;
		}
		c->slot = i;
		q = msg_start(c, DMAPLANE_WIRE_RESOLVE, sizeof(*q));
		q->cookie = htole64(i + 1);
		q->ep_uid = htole64(rnd64() & ((1ull << DMAPLANE_SRC_NODE_SHIFT) - 1));
		if (send_msg(c, i, HSZ + sizeof(*q)))
			goto out;
		c->credits--;
	}
	while (c->peer_reqs < DMAPLANE_WIRE_CREDITS && now_ms() < end && !c->disconnected &&
	       !c->rx_err)
		next_event(c, STEP_MS);
	if (c->peer_reqs != DMAPLANE_WIRE_CREDITS) {
		diag("%u RESOLVEDs from the node within %d ms, want %u (its credits)",
		     c->peer_reqs, opt.timeout_ms, DMAPLANE_WIRE_CREDITS);
		goto out;
	}
	diag("%u RESOLVEs sent, %u answers taken and not ACKed; an empty ACK every second",
	     WITHHOLD_REQS, c->peer_reqs);
	/* Slots past the RESOLVEs' in turn. */
	ret = talk_until_dropped(c, WITHHOLD_REQS);
	if (!ret && c->peer_reqs != DMAPLANE_WIRE_CREDITS) {
		diag("the node sent %u requests with %u credits", c->peer_reqs,
		     DMAPLANE_WIRE_CREDITS);
		ret = -1;
	}
out:
	conn_close(c);
	return ret;
}

/*
 * The node's IB_DEAD_AFTER (30 s) and keepalive period (5 s): the node
 * keeps the connection quiet for 45 s by its own clock before its first
 * request (jobs/evil.sh); this side only checks that the quiet lasted
 * IB_DEAD_AFTER by its clock, which may lag the node's by 20% under TCG
 * (see STALL_MIN_MS).  The request is held back for longer than one
 * keepalive period.
 */
#define LATE_IDLE_MS	30000
#define LATE_HOLD_MS	8000

/*
 * "go" on standard input: 1, 0 while nothing came, -1 at end of file or
 * on anything else.
 */
static int stdin_go(void)
{
	struct pollfd pfd = { .fd = 0, .events = POLLIN };
	char line[16];
	ssize_t n;

	if (poll(&pfd, 1, 0) <= 0)
		return 0;
	n = read(0, line, sizeof(line) - 1);
	if (n <= 0)
		return -1;
	line[n] = 0;
	return strncmp(line, "go", 2) ? -1 : 1;
}

/* Answer the node's RESOLVE @q (it exists), then ACK what we consumed. */
static int answer_resolve(struct conn *c, const struct dmaplane_wire_resolve *q)
{
	struct dmaplane_wire_resolve *a;

	if (!send_idle(c))
		return -1;
	c->slot = 0;
	a = msg_start(c, DMAPLANE_WIRE_RESOLVED, sizeof(*a));
	*a = *q;
	a->status = 0;
	if (send_msg(c, 0, HSZ + sizeof(*a)))
		return -1;
	send_ack(c);
	return 0;
}

/* Wait up to --timeout for a request of the node (not an ACK) in c->rx. */
static int wait_request(struct conn *c, const char *what)
{
	long long end = now_ms() + opt.timeout_ms;

	while (now_ms() < end && (!c->rx_len || rx_is_ack(c))) {
		if (next_event(c, STEP_MS) >= 0 || c->rx_err) {
			diag("%s while waiting for the %s", c->disconnected ?
			     "DISCONNECTED" : "CM event or completion error", what);
			return -1;
		}
	}
	if (!c->rx_len || rx_is_ack(c)) {
		diag("no %s from the node within %d ms", what, opt.timeout_ms);
		return -1;
	}
	return 0;
}

/*
 * A connection that carries nothing for longer than IB_DEAD_AFTER, then
 * one request of the node (a RESOLVE: a process of the node inserted this
 * peer's name, jobs/evil.sh) that reaches us only LATE_HOLD_MS after the
 * node sent it: no receive buffer is posted until then, so the node's
 * SEND meets RNR NAKs and does not complete, and nothing else from here
 * tells the node that we are alive (its PINGs wait the same way).  The
 * peer was silent for so long only because nothing waited on it: the
 * node must count the silence from when its request started to wait,
 * keep the connection and take the answer.  The node's side writes "go"
 * to our standard input once its request is under way (jobs/evil.sh);
 * --timeout bounds each wait.
 */
static int run_late(void)
{
	const struct dmaplane_wire_resolve *q;
	const struct dmaplane_wire_hdr *h;
	long long start, asked, end;
	struct conn *c;
	unsigned int i;
	int go = 0, ret = -1;

	opt.no_recvs = true;
	c = conn_open_valid();
	opt.no_recvs = false;
	if (!c)
		return -1;
	h = (void *)c->rx;
	q = (void *)(c->rx + HSZ);
	start = now_ms();
	diag("connected, no receive posted; waiting up to %d ms for \"go\" on stdin",
	     opt.timeout_ms);
	end = start + opt.timeout_ms;
	while (now_ms() < end && !(go = stdin_go())) {
		if (next_event(c, STEP_MS) >= 0 || c->rx_err) {
			diag("%s while idle", c->disconnected ?
			     "DISCONNECTED" : "CM event or completion error");
			goto out;
		}
	}
	asked = now_ms();
	if (go != 1) {
		diag("no \"go\" on stdin within %d ms", opt.timeout_ms);
		goto out;
	}
	if (asked - start < LATE_IDLE_MS) {
		diag("\"go\" after %lld ms of quiet, want at least %d: proves nothing",
		     asked - start, LATE_IDLE_MS);
		goto out;
	}
	diag("\"go\" after %lld ms of quiet; posting receives in %d ms", asked - start,
	     LATE_HOLD_MS);
	if (stays_up(c, LATE_HOLD_MS)) {
		diag("dropped %lld ms after the node's request was under way",
		     now_ms() - asked);
		goto out;
	}
	for (i = 0; i < DMAPLANE_WIRE_RECVS; i++) {
		if (post_recv(c, i))
			goto out;
	}
	if (wait_request(c, "RESOLVE"))
		goto out;
	if (h->type != DMAPLANE_WIRE_RESOLVE || c->rx_len != HSZ + sizeof(*q)) {
		diag("first request: type %u, %u bytes; want a RESOLVE", h->type, c->rx_len);
		goto out;
	}
	if (answer_resolve(c, q))
		goto out;
	diag("RESOLVE taken %lld ms after \"go\" and answered; %u requests of the node",
	     now_ms() - asked, c->peer_reqs);
	ret = stays_up(c, 3000);
out:
	conn_close(c);
	return ret;
}

/*
 * A FIN for a request of the node that has not left its send queue: one
 * receive buffer is posted, which the node's RESOLVE takes (a process of
 * the node inserted this peer's name, jobs/evil.sh); it is answered, and
 * with no buffer posted after it the node's next SENDs meet RNR NAKs.
 * The process then sends a rendezvous message here: its RTS, behind the
 * fast-registration work requests of its buffer, waits on the node's
 * send queue.  Once the node's side says "go" on our standard input
 * (debugfs shows it queued), we FIN the cookie it must carry (the
 * RESOLVE's plus one: cookies are handed out in turn), wait 6 s, then
 * post our receives: the queue moves, the RTS arrives (or, on rxe, the
 * queue never moves again and the node drops the connection after 30 s).
 * The node must not complete the send at the FIN, freeing MRs whose
 * registration work requests may still be queued (jobs/evil.sh sees the
 * send still waiting 3 s after "go"); it completes with the FIN's status
 * once the RTS went out, or fails with the connection.
 */
static int run_early(void)
{
	const struct dmaplane_wire_resolve *q;
	const struct dmaplane_wire_hdr *h;
	const struct dmaplane_wire_rts *rts;
	struct dmaplane_wire_fin *f;
	uint64_t cookie;
	struct conn *c;
	unsigned int i;
	int go = 0, ret = -1;
	long long end;

	opt.one_recv = true;
	c = conn_open_valid();
	opt.one_recv = false;
	if (!c)
		return -1;
	c->hold_recvs = true;
	h = (void *)c->rx;
	q = (void *)(c->rx + HSZ);
	rts = (void *)(c->rx + HSZ + sizeof(struct dmaplane_wire_msg));
	diag("connected, one receive posted; waiting for the node's RESOLVE");
	if (wait_request(c, "RESOLVE"))
		goto out;
	if (h->type != DMAPLANE_WIRE_RESOLVE || c->rx_len != HSZ + sizeof(*q)) {
		diag("first request: type %u, %u bytes; want a RESOLVE", h->type, c->rx_len);
		goto out;
	}
	cookie = le64toh(q->cookie) + 1;
	if (answer_resolve(c, q))
		goto out;
	c->rx_len = 0;
	diag("RESOLVE answered, no receive posted; waiting for \"go\" on stdin");
	end = now_ms() + opt.timeout_ms;
	while (now_ms() < end && !(go = stdin_go())) {
		if (next_event(c, STEP_MS) >= 0 || c->rx_err) {
			diag("%s before \"go\"", c->disconnected ?
			     "DISCONNECTED" : "CM event or completion error");
			goto out;
		}
	}
	if (go != 1) {
		diag("no \"go\" on stdin within %d ms", opt.timeout_ms);
		goto out;
	}
	if (!send_idle(c))
		goto out;
	c->slot = 0;
	f = msg_start(c, DMAPLANE_WIRE_FIN, sizeof(*f));
	f->cookie = htole64(cookie);
	if (send_msg(c, 0, HSZ + sizeof(*f)))
		goto out;
	diag("FIN sent for cookie %llu; posting receives in 6 s",
	     (unsigned long long)cookie);
	if (stays_up(c, 6000))
		goto out;
	c->hold_recvs = false;
	for (i = 0; i < DMAPLANE_WIRE_RECVS; i++) {
		if (post_recv(c, i))
			goto out;
	}
	if (wait_request(c, "RTS")) {
		/*
		 * rxe (6.1) may never move a send queue again whose SEND met
		 * RNR NAKs with registrations queued behind it: the node gives
		 * the connection up after 30 s (its send must then fail, not
		 * have completed at the FIN: jobs/evil.sh checks that side).
		 */
		if (c->disconnected && !c->rx_err) {
			diag("the node gave the connection up: its send queue never moved");
			ret = 0;
		}
		goto out;
	}
	if (h->type != DMAPLANE_WIRE_RTS ||
	    c->rx_len < HSZ + sizeof(struct dmaplane_wire_msg) + sizeof(*rts)) {
		diag("next request: type %u, %u bytes; want an RTS", h->type, c->rx_len);
		goto out;
	}
	if (le64toh(rts->cookie) != cookie) {
		diag("RTS cookie %llu, FINed %llu: the guess proves nothing",
		     (unsigned long long)le64toh(rts->cookie), (unsigned long long)cookie);
		goto out;
	}
	diag("RTS with the FINed cookie arrived after the FIN");
	send_ack(c);
	ret = stays_up(c, 3000);
out:
	conn_close(c);
	return ret;
}

static int run_case(const struct evil_case *t)
{
	switch (t->kind) {
	case ACCEPT:
		return run_accept();
	case REJECT:
		return run_reject(t);
	case DROP:
		return run_drop(t);
	case STALL:
		return run_stall(t);
	case LATE:
		return run_late();
	case WITHHOLD:
		return run_withhold();
	case EARLY:
		return run_early();
	default:
		return t->msg ? run_stay_msg(t) : run_stay();
	}
}

/* ---- random mode --------------------------------------------------------- */

/*
 * --random SEED --count N: N frames, each a well-formed message of a
 * random type (built as an honest peer would, on the connection's state)
 * then mutated or not, all drawn from SEED and the frame's number, so
 * that frame i is the same whatever happened to the frames before it.
 * Whenever the node drops the connection, the next frame goes out on a
 * new one.  What the node must do with a frame depends on what was done
 * to it:
 *
 *   STAY  a well-formed message an honest peer may send, within its
 *         credits: the node must not drop a connection that carried only
 *         those;
 *   DROP  a mutation that no reading of the wire format accepts (version,
 *         flags, type, header length, sequence, a field checked by
 *         dmaplane_wire_check(), a FIN or RESOLVED naming nothing): the
 *         node must drop the connection within --timeout;
 *   ANY   bit flips, random bytes, truncation or extension with the
 *         length fixed up, a burst beyond the credits: either.
 *
 * As an honest peer, the tool gives the node's requests their credits
 * back (an ACK once several are owed) and waits for credits itself.
 * Segments of RTS and RMA_REQ frames point into memory registered here
 * for remote read and write, so the node really moves data; with --dst
 * (and --rkey/--rlen, a region of that endpoint) most frames reach a
 * live endpoint and region on the node.
 */
enum expect { EXP_STAY, EXP_ANY, EXP_DROP };

static const char *const expect_names[] = { "stay", "any", "drop" };

struct rframe {
	char what[160];		/* base type and mutations, for the log */
	enum expect expect;
	unsigned int n;		/* messages: more than one for a burst */
	uint32_t len[SEND_SLOTS];
	bool request;		/* costs a credit (the first message) */
};

static struct {
	unsigned long frames, conns, drops, bursts, stays, anys, dropx;
	unsigned long peer_reqs;
} rstat;

static uint32_t rnd_below(uint32_t n)
{
	return n ? (uint32_t)(rnd64() % n) : 0;
}

static void what_add(struct rframe *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void what_add(struct rframe *f, const char *fmt, ...)
{
	size_t l = strlen(f->what);
	va_list ap;

	if (l + 2 >= sizeof(f->what))
		return;
	f->what[l++] = ' ';
	va_start(ap, fmt);
	vsnprintf(f->what + l, sizeof(f->what) - l, fmt, ap);
	va_end(ap);
}

static void expect_at_least(struct rframe *f, enum expect e)
{
	if (e > f->expect)
		f->expect = e;
}

static uint64_t rnd_dst(void)
{
	if (opt.dst_uid && rnd_below(4))
		return opt.dst_uid;
	return rnd64() & ((1ull << DMAPLANE_SRC_NODE_SHIFT) - 1);
}

/*
 * @nsegs segments covering @len bytes of @c->rmem (len <= RMEM_SIZE), each
 * at least one byte; returns how many were used (fewer when @len is small).
 */
static uint32_t rnd_segs(struct conn *c, struct dmaplane_wire_seg *segs, uint32_t nsegs,
			 uint32_t len)
{
	uint32_t i, left = len, off = rnd_below(RMEM_SIZE - len + 1);

	if (nsegs > len)
		nsegs = len;
	for (i = 0; i < nsegs; i++) {
		uint32_t l = i + 1 == nsegs ? left : 1 + rnd_below(left - (nsegs - i - 1));

		segs[i].addr = htole64((uintptr_t)c->rmem + off);
		segs[i].rkey = htole32(c->rmr->rkey);
		segs[i].len = htole32(l);
		off += l;
		left -= l;
	}
	return nsegs;
}

/* An honest message of a random type in slot @c->slot; returns its length. */
static uint32_t rnd_base(struct conn *c, struct rframe *f)
{
	uint32_t r = rnd_below(100), len, n, pay;
	struct dmaplane_wire_msg *m;

	f->request = true;
	if (r < 22) {
		/* Mostly small, sometimes up to the largest eager payload. */
		pay = rnd_below(4) ? rnd_below(256) : rnd_below(DMAPLANE_WIRE_EAGER_MAX + 1);
		len = msg_eager(c, pay);
		m = (void *)(hdr(c) + 1);
		m->src = htole64(rnd64() & ((1ull << DMAPLANE_SRC_NODE_SHIFT) - 1));
		m->dst = htole64(rnd_dst());
		m->tag = htole64(rnd_below(2) ? rnd_below(16) : rnd64());
		m->uid = 0;
		what_add(f, "EAGER(%u)", pay);
		return len;
	}
	if (r < 36) {
		struct dmaplane_wire_rts *rts;
		uint32_t mlen = 1 + rnd_below(RMEM_SIZE);

		n = 1 + rnd_below(rnd_below(4) ? 4 : DMAPLANE_WIRE_MAX_SEGS);
		len = msg_rts(c, n);
		m = (void *)(hdr(c) + 1);
		rts = (void *)(m + 1);
		n = rnd_segs(c, rts->segs, n, mlen);
		/* Fewer segments when the message is short: shrink it. */
		rts->nsegs = htole32(n);
		hdr(c)->len = htole32(sizeof(*m) + sizeof(*rts) + n * sizeof(rts->segs[0]));
		len = HSZ + le32toh(hdr(c)->len);
		m->dst = htole64(rnd_dst());
		m->tag = htole64(rnd_below(16));
		m->msg_len = htole64(mlen);
		/* Unique on this connection: never one the node still holds. */
		rts->cookie = htole64(c->sends);
		what_add(f, "RTS(%u, %u segs)", mlen, n);
		return len;
	}
	if (r < 50) {
		struct dmaplane_wire_rma *q;
		struct dmaplane_wire_seglist *sl;
		uint64_t rlen = opt.rkey ? opt.rlen : RMEM_SIZE;
		uint64_t roff = rnd_below(rlen + 1);
		uint64_t room = rlen - roff < RMEM_SIZE ? rlen - roff : RMEM_SIZE;
		uint32_t l = rnd_below(8) ? rnd_below(room + 1) : 0;

		n = l ? 1 + rnd_below(4) : 0;
		len = msg_rma(c, n, rnd64() & 0xffffffff);
		q = (void *)(hdr(c) + 1);
		sl = (void *)(q + 1);
		n = l ? rnd_segs(c, sl->segs, n, l) : 0;
		sl->nsegs = htole32(n);
		hdr(c)->len = htole32(sizeof(*q) + sizeof(*sl) + n * sizeof(sl->segs[0]));
		len = HSZ + le32toh(hdr(c)->len);
		q->dst = htole64(rnd_dst());
		if (opt.rkey && rnd_below(4))
			q->rkey = htole64(opt.rkey);
		q->roffset = htole64(roff);
		q->len = htole64(l);
		q->write = rnd_below(2);
		what_add(f, "RMA_REQ(%s %u at %llu, %u segs)", q->write ? "put" : "get", l,
			 (unsigned long long)roff, n);
		return len;
	}
	if (r < 60) {
		struct dmaplane_wire_resolve *q = msg_start(c, DMAPLANE_WIRE_RESOLVE, sizeof(*q));

		q->cookie = htole64(rnd64());
		q->ep_uid = htole64(rnd_dst());
		what_add(f, "RESOLVE");
		return HSZ + sizeof(*q);
	}
	if (r < 68) {
		struct dmaplane_wire_cancel *k = msg_start(c, DMAPLANE_WIRE_CANCEL, sizeof(*k));

		/* Often an RTS sent on this connection, else anything. */
		k->cookie = htole64(rnd_below(2) ? c->sends - rnd_below(8) : rnd64() & 0xffffffff);
		what_add(f, "CANCEL");
		return HSZ + sizeof(*k);
	}
	if (r < 80) {
		what_add(f, "PING");
		return m_ping(c);
	}
	if (r < 97) {
		struct dmaplane_wire_ack *a = msg_start(c, DMAPLANE_WIRE_ACK, sizeof(*a));

		f->request = false;
		a->consumed = htole64(c->peer_seq);
		a->credits = htole32(c->peer_owed);
		c->peer_owed = 0;
		what_add(f, "ACK(%llu, %u)", (unsigned long long)c->peer_seq,
			 le32toh(a->credits));
		return HSZ + sizeof(*a);
	}
	/* Naming what the node never issued: always a protocol error. */
	f->expect = EXP_DROP;
	if (r < 99) {
		struct dmaplane_wire_fin *fin = msg_start(c, DMAPLANE_WIRE_FIN, sizeof(*fin));

		fin->cookie = htole64(rnd64() & 0xffffffff);
		fin->status = htole32(-(int32_t)rnd_below(200));
		what_add(f, "FIN(unknown)");
		return HSZ + sizeof(*fin);
	}
	len = m_resolved_unknown(c);
	what_add(f, "RESOLVED(unknown)");
	return len;
}

/* Flip @n random bits of the @len bytes in slot @c->slot. */
static void flip_bits(struct conn *c, uint32_t len, unsigned int n)
{
	uint8_t *b = send_buf(c, c->slot);

	while (n-- && len)
		b[rnd_below(len)] ^= 1u << rnd_below(8);
}

/* A field checked by dmaplane_wire_check() made wrong; returns false if none. */
static bool break_field(struct conn *c, struct rframe *f, uint32_t len)
{
	struct dmaplane_wire_hdr *h = hdr(c);
	uint8_t *body = (uint8_t *)(h + 1);
	struct dmaplane_wire_msg *m = (void *)body;

	switch (h->type) {
	case DMAPLANE_WIRE_EAGER:
		m->msg_len = htole64(le64toh(m->msg_len) + 1 + rnd_below(1u << 20));
		what_add(f, "msg_len+");
		return true;
	case DMAPLANE_WIRE_RTS: {
		struct dmaplane_wire_rts *rts = (void *)(m + 1);
		uint32_t off = HSZ + sizeof(*m) + sizeof(*rts);
		/*
		 * An earlier mutation of this frame may have changed the type
		 * or nsegs: only a segment within the message is zeroed.
		 */
		uint32_t n = len > off ? (len - off) / sizeof(rts->segs[0]) : 0;

		if (le32toh(rts->nsegs) < n)
			n = le32toh(rts->nsegs);
		if (n && rnd_below(2)) {
			rts->segs[rnd_below(n)].len = 0;
			what_add(f, "seg.len=0");
		} else {
			rts->cookie = htole64(le64toh(rts->cookie) | 1ull << (32 + rnd_below(32)));
			what_add(f, "cookie>2^32");
		}
		return true;
	}
	case DMAPLANE_WIRE_RMA_REQ: {
		struct dmaplane_wire_rma *q = (void *)body;

		if (rnd_below(2)) {
			q->write = 2 + rnd_below(254);
			what_add(f, "write=%u", q->write);
		} else {
			q->len = htole64(le64toh(q->len) + 1 + rnd_below(4096));
			what_add(f, "len!=segs");
		}
		return true;
	}
	case DMAPLANE_WIRE_ACK: {
		struct dmaplane_wire_ack *a = (void *)body;

		a->credits = htole32(DMAPLANE_WIRE_CREDITS + 1 + rnd_below(1000));
		what_add(f, "credits>max");
		return true;
	}
	case DMAPLANE_WIRE_CANCEL: {
		struct dmaplane_wire_cancel *k = (void *)body;

		k->cookie = htole64(le64toh(k->cookie) | 1ull << (32 + rnd_below(32)));
		what_add(f, "cookie>2^32");
		return true;
	}
	case DMAPLANE_WIRE_RESOLVE: {
		struct dmaplane_wire_resolve *q = (void *)body;

		q->status = htole32(-(int32_t)(1 + rnd_below(100)));
		what_add(f, "status!=0");
		return true;
	}
	default:
		return false;
	}
}

/*
 * Mutate the message of @len bytes in slot @c->slot; returns the length to
 * send.  Mutations that change the length come first, so that a later
 * header mutation is not undone by a length fixed up.
 */
static uint32_t mutate(struct conn *c, struct rframe *f, uint32_t len)
{
	struct dmaplane_wire_hdr *h = hdr(c);
	unsigned int k, nmut = 1 + rnd_below(rnd_below(3) ? 1 : 3);
	/* The right seq: a second seq mutation must not land back on it. */
	uint64_t seq = le64toh(h->seq);
	bool fuzzy = false, drop = false;
	uint32_t r, d;

	for (k = 0; k < nmut; k++) {
		r = rnd_below(100);
		if (r < 10 && len > HSZ) {
			/* Truncated, with or without the header's len fixed. */
			d = 1 + rnd_below(len - 1);
			len -= d;
			if (len >= HSZ && rnd_below(2)) {
				h->len = htole32(len - HSZ);
				what_add(f, "truncated-%u(len fixed)", d);
				fuzzy = true;
			} else {
				what_add(f, "truncated-%u", d);
				drop = true;
			}
		} else if (r < 18) {
			/* Extended with random bytes (the spare slot has room). */
			uint8_t *b = send_buf(c, c->slot);

			d = 1 + rnd_below(64);
			for (uint32_t i = 0; i < d; i++)
				b[len + i] = (uint8_t)rnd64();
			len += d;
			if (rnd_below(2)) {
				h->len = htole32(len - HSZ);
				what_add(f, "extended+%u(len fixed)", d);
				fuzzy = true;
			} else {
				what_add(f, "extended+%u", d);
				drop = true;
			}
		} else if (r < 26) {
			h->version = DMAPLANE_WIRE_VERSION + 1 + rnd_below(250);
			what_add(f, "version=%u", h->version);
			drop = true;
		} else if (r < 32) {
			h->flags = htole16(1 + rnd_below(0xffff));
			what_add(f, "flags");
			drop = true;
		} else if (r < 40) {
			d = rnd_below(3) ? 0 : 1 + rnd_below(__DMAPLANE_WIRE_MAX - 1);
			if (!d)
				d = rnd_below(2) ? 0 : __DMAPLANE_WIRE_MAX + rnd_below(200);
			if (d == h->type)
				continue;
			h->type = d;
			what_add(f, "type=%u", d);
			if (!d || d >= __DMAPLANE_WIRE_MAX)
				drop = true;
			else
				fuzzy = true;
		} else if (r < 48) {
			h->len = htole32(le32toh(h->len) + 1 + rnd_below(100));
			what_add(f, "hdr.len+");
			drop = true;
		} else if (r < 56) {
			/* Requests: one seq only is right; ACKs: zero only. */
			h->seq = htole64(h->type == DMAPLANE_WIRE_ACK ? 1 + rnd_below(100) :
					 rnd_below(2) ? seq + 1 + rnd_below(5) : seq - 1);
			what_add(f, "seq=%llu", (unsigned long long)le64toh(h->seq));
			drop = true;
		} else if (r < 70) {
			if (break_field(c, f, len))
				drop = true;
		} else if (r < 85) {
			d = 1 + rnd_below(8);
			flip_bits(c, len, d);
			what_add(f, "flip%u", d);
			fuzzy = true;
		} else if (len > HSZ) {
			uint8_t *b = send_buf(c, c->slot);

			d = HSZ + rnd_below(len - HSZ);
			b[d] = (uint8_t)rnd64();
			what_add(f, "byte@%u", d);
			fuzzy = true;
		}
	}
	/* Random changes may have undone a deliberate one: any outcome. */
	if (fuzzy)
		expect_at_least(f, EXP_ANY);
	else if (drop)
		expect_at_least(f, EXP_DROP);
	return len;
}

/* Frame @i of @seed, in the send slots from 0 (rng seeded for it). */
static void rnd_frame(struct conn *c, uint64_t seed, unsigned long i, struct rframe *f)
{
	uint32_t r;

	rng_state = seed ^ (i * 0xd1342543de82ef95ull);
	splitmix64(&rng_state);
	memset(f, 0, sizeof(*f));
	f->n = 1;
	c->slot = 0;
	r = rnd_below(100);
	if (r < 4) {
		/* More than the credits the node has left us, back to back. */
		unsigned int k;

		f->n = (c->credits > 0 ? c->credits : 0) + 1 + rnd_below(8);
		if (f->n > SEND_SLOTS)
			f->n = SEND_SLOTS;
		for (k = 0; k < f->n; k++) {
			c->slot = k;
			f->len[k] = m_ping(c);
		}
		c->slot = 0;
		f->request = true;
		f->expect = EXP_ANY;
		what_add(f, "%u PINGs, %d credits left", f->n, c->credits);
		return;
	}
	f->len[0] = rnd_base(c, f);
	if (r < 70)
		return;	/* as built */
	f->len[0] = mutate(c, f, f->len[0]);
}

/*
 * Wait up to --timeout for the node to drop @c: true when it did (a
 * DISCONNECTED event, or a completion error: the node's QP is gone).
 */
static bool wait_dropped(struct conn *c)
{
	long long end = now_ms() + opt.timeout_ms;

	while (!c->disconnected && now_ms() < end) {
		next_event(c, STEP_MS);
		if (c->rx_err && !c->disconnected)
			end = end < now_ms() + 2000 ? end : now_ms() + 2000;
	}
	return c->disconnected || c->rx_err;
}

static bool conn_lost(struct conn *c)
{
	if (c->rx_err && !c->disconnected)
		wait_dropped(c);
	return c->disconnected || c->rx_err;
}

/* Frame @i, built (and its state restored) only to see what it will be. */
static void rnd_peek(struct conn *c, uint64_t seed, unsigned long i, struct rframe *f)
{
	uint64_t seq = c->next_seq;
	uint32_t owed = c->peer_owed;

	rnd_frame(c, seed, i, f);
	c->next_seq = seq;
	c->peer_owed = owed;
}

static int run_random(uint64_t seed, unsigned long count)
{
	long long start = now_ms();
	char last[3][200] = { "", "", "" };
	bool all_stay = true, gave_up = false;
	struct conn *c = NULL;
	unsigned long i = 0;
	int fails = 0, nfail = 0;
	struct rframe f;

	diag("random: seed %llu, %lu frames (reproduce: --random %llu --count %lu)",
	     (unsigned long long)seed, count, (unsigned long long)seed, count);
	while (i < count && fails < 5) {
		if (c && (gave_up || conn_lost(c))) {
			if (!gave_up) {
				rstat.drops++;
				if (all_stay) {
					diag("honest frames only, and dropped; the last:");
					diag("  %s", last[0]);
					diag("  %s", last[1]);
					diag("  %s", last[2]);
					fails++;
				}
			}
			rstat.peer_reqs += c->peer_reqs;
			conn_close(c);
			c = NULL;
			gave_up = false;
		}
		if (!c) {
			/* Its node_id too comes from the seed. */
			rng_state = seed ^ ~(i * 0x9e3779b97f4a7c15ull);
			c = conn_open_valid();
			if (!c) {
				diag("frame %lu: no connection (%d in a row)", i, ++nfail);
				if (nfail >= 3)
					return -1;
				continue;
			}
			nfail = 0;
			rstat.conns++;
			all_stay = true;
			memset(last, 0, sizeof(last));
		}
		/* Give the node's requests their credits back, as an honest peer. */
		if (send_idle(c) && c->peer_owed >= 8)
			send_ack(c);
		if (!send_idle(c)) {
			if (!conn_lost(c)) {
				diag("frame %lu: a SEND not completed within %d ms: next connection",
				     i, opt.timeout_ms);
				gave_up = true;
			}
			continue;
		}
		rnd_peek(c, seed, i, &f);
		/* Honest requests wait for a credit. */
		if (f.expect == EXP_STAY && f.request && c->credits <= 0) {
			long long end = now_ms() + opt.timeout_ms;

			while (c->credits <= 0 && now_ms() < end && !conn_lost(c)) {
				if (c->peer_owed)
					send_ack(c);
				next_event(c, STEP_MS);
			}
			if (conn_lost(c))
				continue;
			if (c->credits <= 0) {
				diag("frame %lu: no credit back from the node within %d ms",
				     i, opt.timeout_ms);
				fails++;
				gave_up = true;
				continue;
			}
			if (!send_idle(c)) {
				gave_up = !conn_lost(c);
				continue;
			}
		}
		rnd_frame(c, seed, i, &f);
		rstat.frames++;
		rstat.bursts += f.n > 1;
		rstat.stays += f.expect == EXP_STAY;
		rstat.anys += f.expect == EXP_ANY;
		rstat.dropx += f.expect == EXP_DROP;
		memmove(last[0], last[1], sizeof(last[0]) * 2);
		snprintf(last[2], sizeof(last[2]), "frame %lu (%s):%s", i,
			 expect_names[f.expect], f.what);
		if (f.request)
			c->credits -= f.n;
		if (f.expect != EXP_STAY)
			all_stay = false;
		send_burst(c, f.n, f.len);
		i++;
		if (f.expect == EXP_DROP && !wait_dropped(c)) {
			diag("%s: still connected after %d ms", last[2], opt.timeout_ms);
			fails++;
			gave_up = true;
		}
	}
	if (c) {
		rstat.peer_reqs += c->peer_reqs;
		conn_close(c);
	}
	diag("random: %lu frames (%lu stay, %lu any, %lu drop; %lu bursts), %lld ms",
	     rstat.frames, rstat.stays, rstat.anys, rstat.dropx, rstat.bursts, now_ms() - start);
	/* jobs/evil.sh reads the number of connections from this line. */
	diag("random: on %lu connections, %lu dropped by the node; %lu requests from it",
	     rstat.conns, rstat.drops, rstat.peer_reqs);
	return fails ? -1 : 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: evil_peer --addr IPV4 [--port P] --case NAME|all [--timeout S]\n"
		"                 [--dst EP_UID]\n"
		"       evil_peer --addr IPV4 [--port P] --random SEED --count N [--timeout S]\n"
		"                 [--dst EP_UID [--rkey KEY --rlen BYTES]]\n"
		"       evil_peer --list [all|accept|reject|drop|stay|stall|late|withhold|\n"
		"                         early|overflow]\n");
	exit(2);
}

/*
 * @sel is "all" (every case but the ones run alone), a case's name or
 * names separated by commas.
 */
static bool selected(const char *sel, const struct evil_case *t)
{
	const char *name = t->name;
	size_t n = strlen(name);
	const char *p;

	if (!strcmp(sel, "all"))
		return !t->alone;
	for (p = sel; p; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return true;
	}
	return false;
}

static void list(const char *kind)
{
	unsigned int i;

	for (i = 0; i < NCASES; i++)
		if (!strcmp(kind, "all") || !strcmp(kind, kind_names[cases[i].kind]) ||
		    (!strcmp(kind, "overflow") && cases[i].overflow))
			printf("%s\n", cases[i].name);
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "case", required_argument, NULL, 'c' },
		{ "timeout", required_argument, NULL, 't' },
		{ "dst", required_argument, NULL, 'd' },
		{ "random", required_argument, NULL, 'r' },
		{ "count", required_argument, NULL, 'n' },
		{ "rkey", required_argument, NULL, 'k' },
		{ "rlen", required_argument, NULL, 'L' },
		{ "list", optional_argument, NULL, 'l' },
		{ NULL, 0, NULL, 0 },
	};
	const char *addr = NULL, *name = NULL;
	unsigned int i, n = 0, failed = 0;
	unsigned long count = 0;
	uint64_t seed = 0;
	long port = 20886;
	int o;

	setvbuf(stdout, NULL, _IOLBF, 0);
	opt.dst_uid = rnd64() & ((1ull << DMAPLANE_SRC_NODE_SHIFT) - 1);
	while ((o = getopt_long(argc, argv, "", lopts, NULL)) != -1) {
		switch (o) {
		case 'a':
			addr = optarg;
			break;
		case 'p':
			port = strtol(optarg, NULL, 0);
			break;
		case 'c':
			name = optarg;
			break;
		case 't':
			opt.timeout_ms = (int)(strtod(optarg, NULL) * 1000);
			break;
		case 'd':
			opt.dst_uid = strtoull(optarg, NULL, 0);
			break;
		case 'r':
			seed = strtoull(optarg, NULL, 0);
			rng_seeded = true;
			break;
		case 'n':
			count = strtoul(optarg, NULL, 0);
			break;
		case 'k':
			opt.rkey = strtoull(optarg, NULL, 0);
			break;
		case 'L':
			opt.rlen = strtoull(optarg, NULL, 0);
			break;
		case 'l':
			/* "--list drop" as well as "--list=drop". */
			if (!optarg && optind < argc && argv[optind][0] != '-')
				optarg = argv[optind++];
			list(optarg ? optarg : "all");
			return 0;
		default:
			usage();
		}
	}
	if (!addr || !name == !rng_seeded || optind != argc || port <= 0 || port > 65535 ||
	    opt.timeout_ms <= 0 || (rng_seeded && !count) || (opt.rkey && !opt.rlen))
		usage();
	opt.dst.sin_family = AF_INET;
	opt.dst.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, addr, &opt.dst.sin_addr) != 1) {
		fprintf(stderr, "evil_peer: %s: not an IPv4 address\n", addr);
		return 2;
	}
	if (rng_seeded) {
		printf("TAP version 13\n1..1\n");
		failed = run_random(seed, count) != 0;
		printf("%s 1 random-seed-%llu\n", failed ? "not ok" : "ok",
		       (unsigned long long)seed);
		return failed;
	}
	for (i = 0; i < NCASES; i++)
		n += selected(name, &cases[i]);
	if (!n) {
		fprintf(stderr, "evil_peer: no case %s (see --list)\n", name);
		return 2;
	}

	printf("TAP version 13\n1..%u\n", n);
	n = 0;
	for (i = 0; i < NCASES; i++) {
		if (!selected(name, &cases[i]))
			continue;
		diag("%s: %s", cases[i].name, kind_names[cases[i].kind]);
		n++;
		if (run_case(&cases[i])) {
			printf("not ok %u %s\n", n, cases[i].name);
			failed++;
		} else {
			printf("ok %u %s\n", n, cases[i].name);
		}
	}
	diag("%u of %u cases failed", failed, n);
	return failed ? 1 : 0;
}

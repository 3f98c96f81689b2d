// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdmaplane-fi: endpoints (FI_EP_RDM) and their data operations.
 *
 * Every operation carries a request (struct dpf_req) whose address is the
 * kernel operation's ctx.  The request says where the completion goes:
 * which CQ and counter, whether a success is reported (selective
 * completion, inject) and what flags the entry gets.  Matching, ordering
 * and unexpected messages are the kernel's; the provider only translates.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dp_prov.h"

#define DPF_NO_PEER	UINT32_MAX
#define DPF_REQ_CHUNK	64
#define DPF_POLL_BATCH	64
/*
 * Receives into buffers of at most this many bytes ask for messages of up
 * to 8 bytes in their completion (DMAPLANE_OP_F_INLINE): a buffer this
 * small mostly gets small messages (fabtests' ping-pong posts 64 bytes
 * for any message up to that), and a larger message into it costs the
 * copy's pin instead of the post's.
 */
#define DPF_RECV_INLINE_MAX	64

/* ---- remote CQ data and sources ------------------------------------------ */

/*
 * dpf_cqe_data - remote CQ data of a receive completion (or probe): the
 * kernel carries a send's 8 bytes (DMAPLANE_OP_F_DATA) into the receive's
 * completion and flags it with DMAPLANE_CQE_F_DATA.
 */
static uint64_t dpf_cqe_data(uint32_t cqe_flags, uint64_t data, uint64_t *flags)
{
	if (!(cqe_flags & DMAPLANE_CQE_F_DATA))
		return 0;
	*flags |= FI_REMOTE_CQ_DATA;
	return data;
}

/*
 * dpf_cqe_src - the fi_addr_t of a completion's (or probe's) sender.  The
 * kernel names the sender by this endpoint's own address handle
 * (DMAPLANE_CQE_F_SRC_AV), and @rpeers turns that into the AV index: no
 * search on a receive.  A sender this endpoint has no handle of is
 * FI_ADDR_NOTAVAIL.
 */
static fi_addr_t dpf_cqe_src(const struct dpf_ep *ep, uint32_t cqe_flags,
			     uint32_t src_av)
{
	if (!(cqe_flags & DMAPLANE_CQE_F_SRC_AV) || src_av >= ep->nrpeers)
		return FI_ADDR_NOTAVAIL;
	return ep->rpeers[src_av];
}

/*
 * Remote CQ data with RMA: on writes only (fi_writedata), offered like
 * the sends' (the domain's cq_data_size) when the module completes a PUT
 * at its target too (DMAPLANE_CAP_PUT_DATA).
 */
static ssize_t dpf_check_cq_data(const struct dpf_ep *ep, bool write, uint64_t flags)
{
	if (!(flags & FI_REMOTE_CQ_DATA))
		return 0;
	if (!write || !ep->put_data ||
	    !(ep->info->domain_attr && ep->info->domain_attr->cq_data_size))
		return -FI_EINVAL;
	return 0;
}

/* ---- requests ------------------------------------------------------------ */

static struct dpf_req *req_get(struct dpf_ep *ep)
{
	struct dpf_req *req, *chunk;
	void **chunks;
	int i;

	if (!ep->free_reqs) {
		chunks = realloc(ep->req_chunks, (ep->nchunks + 1) * sizeof(*chunks));
		if (!chunks)
			return NULL;
		ep->req_chunks = chunks;
		chunk = malloc(DPF_REQ_CHUNK * sizeof(*chunk));
		if (!chunk)
			return NULL;
		ep->req_chunks[ep->nchunks++] = chunk;
		for (i = 0; i < DPF_REQ_CHUNK; i++) {
			chunk[i].next = ep->free_reqs;
			ep->free_reqs = &chunk[i];
		}
	}
	req = ep->free_reqs;
	ep->free_reqs = req->next;
	req->next = req->prev = NULL;
	req->posted = false;
	req->comp = true;
	req->buf = NULL;
	req->mrecv = NULL;
	return req;
}

static void req_put(struct dpf_ep *ep, struct dpf_req *req)
{
	req->next = ep->free_reqs;
	ep->free_reqs = req;
}

static void recv_link(struct dpf_ep *ep, struct dpf_req *req)
{
	req->posted = true;
	req->prev = NULL;
	req->next = ep->recvs;
	if (ep->recvs)
		ep->recvs->prev = req;
	ep->recvs = req;
}

static void recv_unlink(struct dpf_ep *ep, struct dpf_req *req)
{
	if (req->prev)
		req->prev->next = req->next;
	else
		ep->recvs = req->next;
	if (req->next)
		req->next->prev = req->prev;
	req->posted = false;
}

/* ---- address handles ------------------------------------------------------ */

int dpf_ep_av_insert(struct dpf_ep *ep, size_t index)
{
	uint32_t *peers, h;
	size_t n;
	int ret;

	if (index >= ep->npeers) {
		n = ep->npeers ? ep->npeers : 64;
		while (n <= index)
			n *= 2;
		peers = realloc(ep->peers, n * sizeof(*peers));
		if (!peers)
			return -FI_ENOMEM;
		memset(peers + ep->npeers, 0xff, (n - ep->npeers) * sizeof(*peers));
		ep->peers = peers;
		ep->npeers = n;
	}
	if (ep->peers[index] != DPF_NO_PEER)
		return 0;
	ret = dp_av_insert(ep->kep, &ep->av->names[index], &h);
	if (ret) {
		/* dpf_errno() folds two errnos into one: say which it was. */
		DPF_WARN(FI_LOG_AV, "AV_INSERT of node %016" PRIx64 ", endpoint %" PRIu64
			 ": %s\n", (uint64_t)ep->av->names[index].node_id,
			 (uint64_t)ep->av->names[index].ep_uid, strerror(-ret));
		return dpf_errno(ret);
	}
	if (h >= ep->nrpeers) {
		fi_addr_t *r;

		n = ep->nrpeers ? ep->nrpeers : 64;
		while (n <= h)
			n *= 2;
		r = realloc(ep->rpeers, n * sizeof(*r));
		if (!r) {
			dp_av_remove(ep->kep, h);
			return -FI_ENOMEM;
		}
		for (size_t i = ep->nrpeers; i < n; i++)
			r[i] = FI_ADDR_NOTAVAIL;
		ep->rpeers = r;
		ep->nrpeers = n;
	}
	ep->peers[index] = h;
	ep->rpeers[h] = index;
	return 0;
}

void dpf_ep_av_remove(struct dpf_ep *ep, size_t index)
{
	if (index >= ep->npeers || ep->peers[index] == DPF_NO_PEER)
		return;
	dp_av_remove(ep->kep, ep->peers[index]);
	if (ep->peers[index] < ep->nrpeers)
		ep->rpeers[ep->peers[index]] = FI_ADDR_NOTAVAIL;
	ep->peers[index] = DPF_NO_PEER;
}

/* The kernel's handle of @addr; resolved now if the AV insert could not. */
static int ep_peer(struct dpf_ep *ep, fi_addr_t addr, uint32_t *handle)
{
	int ret;

	if (!dpf_av_valid(ep->av, addr))
		return -FI_EINVAL;
	if (addr >= ep->npeers || ep->peers[addr] == DPF_NO_PEER) {
		ret = dpf_ep_av_insert(ep, addr);
		if (ret)
			return ret;
	}
	*handle = ep->peers[addr];
	return 0;
}

/* ---- completions ----------------------------------------------------------- */

static struct dpf_cq *req_cq(const struct dpf_ep *ep, const struct dpf_req *req)
{
	return req->kind == DPF_REQ_RECV ? ep->rx_cq : ep->tx_cq;
}

static struct dpf_cntr *req_cntr(const struct dpf_ep *ep,
				 const struct dpf_req *req)
{
	switch (req->kind) {
	case DPF_REQ_SEND:
		return ep->send_cntr;
	case DPF_REQ_RECV:
		return ep->recv_cntr;
	case DPF_REQ_WRITE:
		return ep->write_cntr;
	case DPF_REQ_READ:
		return ep->read_cntr;
	default:
		return NULL;
	}
}

/*
 * A peer's fi_writedata into one of this endpoint's regions: no request
 * of ours, a completion with the data on the receive CQ.
 */
static void ep_complete_remote_write(struct dpf_ep *ep, const struct dmaplane_cqe *cqe)
{
	uint64_t flags = FI_RMA | FI_REMOTE_WRITE;
	struct dpf_cq_slot *s;

	if (!ep->rx_cq)
		return;
	s = dpf_cq_push(ep->rx_cq);	/* room was checked by the caller */
	s->op_context = NULL;
	s->len = cqe->len;
	s->data = dpf_cqe_data(cqe->flags, cqe->data, &flags);
	s->src = dpf_cqe_src(ep, cqe->flags, cqe->src_av);
	s->flags = flags;
}

static int mrecv_post(struct dpf_ep *ep);

/* Take @m, an FI_MULTI_RECV buffer, off the endpoint's list. */
static void mrecv_unlink(struct dpf_ep *ep, struct dpf_mrecv *m)
{
	struct dpf_mrecv **pp;

	for (pp = &ep->mrecvs; *pp; pp = &(*pp)->next) {
		if (*pp != m)
			continue;
		*pp = m->next;
		if (!*pp)
			ep->mrecv_tail = pp;
		return;
	}
}

/*
 * A receive into an FI_MULTI_RECV buffer completed: the bytes are used,
 * and the buffer is released (FI_MULTI_RECV added to @flags) when what is
 * left is below FI_OPT_MIN_MULTI_RECV or nothing, or the receive failed
 * (truncated into the rest of the buffer, or cancelled).  True when
 * released: the caller reports it and frees @m.
 */
static bool mrecv_done(struct dpf_ep *ep, struct dpf_mrecv *m, int status,
		       size_t len, uint64_t *flags)
{
	m->req = NULL;
	if (!status)
		m->off += len;
	if (!status && m->off < m->len && m->len - m->off >= ep->min_multi_recv)
		return false;
	*flags |= FI_MULTI_RECV;
	mrecv_unlink(ep, m);
	return true;
}

static void ep_complete(struct dpf_ep *ep, const struct dmaplane_cqe *cqe)
{
	struct dpf_req *req = (struct dpf_req *)(uintptr_t)cqe->ctx;
	struct dpf_mrecv *m;
	bool released = false;
	struct dpf_cq *cq;
	struct dpf_cntr *cntr;
	struct dpf_cq_slot *s;
	int status = cqe->status;
	uint64_t flags;

	if (cqe->flags & DMAPLANE_CQE_F_REMOTE) {
		ep_complete_remote_write(ep, cqe);	/* no request: ctx is not ours */
		return;
	}
	m = req->mrecv;
	cq = req_cq(ep, req);
	cntr = req_cntr(ep, req);
	flags = req->cq_flags;

	if (req->posted)
		recv_unlink(ep, req);
	if (req->kind == DPF_REQ_DISCARD)
		goto out;
	/* The bytes of an inline receive go where the application wants them. */
	if (req->kind == DPF_REQ_RECV && req->buf)
		dp_cqe_inline(cqe, req->buf);
	/* A discarded claimed message "truncates" into no buffer at all. */
	if (req->buf == NULL && req->kind == DPF_REQ_RECV && status == -EMSGSIZE &&
	    (req->cq_flags & FI_DISCARD))
		status = 0;
	flags &= ~FI_DISCARD;
	if (m)
		released = mrecv_done(ep, m, status, cqe->len, &flags);

	if (cntr) {
		if (status)
			cntr->err++;
		else
			cntr->value++;
	}
	if (!cq || (!status && !req->comp && !released))
		goto out;
	s = dpf_cq_push(cq);	/* room was checked by the caller */
	s->op_context = req->context;
	s->len = cqe->len;
	if (req->kind == DPF_REQ_RECV) {
		s->buf = req->buf;
		if (flags & FI_TAGGED)
			s->tag = ep->tag_split ? cqe->tag & ~DPF_MSG_TAG_BIT : cqe->tag;
		s->data = dpf_cqe_data(cqe->flags, cqe->data, &flags);
		s->src = dpf_cqe_src(ep, cqe->flags, cqe->src_av);
	}
	s->flags = flags;
	if (status) {
		s->prov_errno = -status;
		s->err = -dpf_errno(status);
		if (status == -EMSGSIZE)
			s->olen = cqe->msg_len - cqe->len;
		if (status == -ECANCELED)
			s->len = 0;
	}
out:
	if (released)
		free(m);
	if (m)
		mrecv_post(ep);	/* the rest of this buffer, or the next one */
	req_put(ep, req);
}

static size_t cq_room(const struct dpf_cq *cq)
{
	return cq ? cq->size - (cq->tail - cq->head) : SIZE_MAX;
}

/*
 * dpf_ep_progress - move the ring's completions to the CQs and counters.
 * Takes no more entries than both CQs have room for, so that no
 * completion has to be held anywhere else.  Domain lock held.
 */
void dpf_ep_progress(struct dpf_ep *ep)
{
	struct dmaplane_cqe cqes[DPF_POLL_BATCH];
	size_t room;
	int i, n;

	if (!ep->enabled)
		return;
	for (;;) {
		room = cq_room(ep->tx_cq);
		if (cq_room(ep->rx_cq) < room)
			room = cq_room(ep->rx_cq);
		if (room > DPF_POLL_BATCH)
			room = DPF_POLL_BATCH;
		if (!room)
			break;
		n = dp_poll(ep->kep, cqes, room);
		if (n <= 0)
			break;
		for (i = 0; i < n; i++)
			ep_complete(ep, &cqes[i]);
		if ((size_t)n < room)
			break;
	}
	mrecv_post(ep);	/* a buffer whose receive could not be posted */
}

/* ---- posting ---------------------------------------------------------------- */

static bool want_comp(bool selective, uint64_t flags)
{
	return !selective || (flags & FI_COMPLETION);
}

static size_t iov_len(const struct iovec *iov, size_t count)
{
	size_t len = 0, i;

	for (i = 0; i < count; i++)
		len += iov[i].iov_len;
	return len;
}

/*
 * Copy an inject payload into the request: the caller's buffer is free.
 * fi_inject() and friends also hide the completion (@no_comp of the
 * callers); fi_sendmsg(FI_INJECT) does not.
 */
static int req_inject(struct dpf_req *req, const struct iovec *iov, size_t count)
{
	size_t off = 0, i;

	if (iov_len(iov, count) > DPF_INJECT_SIZE)
		return -FI_EINVAL;
	for (i = 0; i < count; i++) {
		memcpy(req->inject + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	return off;
}

/*
 * ep_enter - take the domain lock for a data operation on an enabled
 * endpoint.  Returns 0 with the lock held, or -FI_EOPBADSTATE without it.
 */
static ssize_t ep_enter(struct dpf_ep *ep)
{
	dpf_lock(ep->dom);
	if (!ep->enabled) {
		dpf_unlock(ep->dom);
		return -FI_EOPBADSTATE;
	}
	return 0;
}

/*
 * ep_req - a request for a completion of @kind: its CQ entry gets
 * @cq_flags and @context, and a success is reported unless @no_comp or
 * selective completion without FI_COMPLETION in @flags.  NULL when out of
 * memory.  Domain lock held.
 */
static struct dpf_req *ep_req(struct dpf_ep *ep, enum dpf_req_kind kind,
			      void *context, uint64_t cq_flags, uint64_t flags,
			      bool no_comp)
{
	struct dpf_req *req = req_get(ep);
	bool selective;

	if (!req)
		return NULL;
	selective = kind == DPF_REQ_RECV ? ep->rx_selective : ep->tx_selective;
	req->kind = kind;
	req->context = context;
	req->cq_flags = cq_flags;
	req->comp = !no_comp && want_comp(selective, flags);
	return req;
}

/*
 * ep_begin - the start of a data operation: ep_enter(), the kernel's
 * handle of @addr into @handle (none looked up when @handle is NULL), then
 * ep_req().  Returns 0 with the domain lock held and the request in @reqp;
 * on an error (-FI_EOPBADSTATE, ep_peer()'s, -FI_ENOMEM) the lock is
 * released.  ep_abort() undoes a successful ep_begin().
 */
static ssize_t ep_begin(struct dpf_ep *ep, fi_addr_t addr, uint32_t *handle,
			enum dpf_req_kind kind, void *context, uint64_t cq_flags,
			uint64_t flags, bool no_comp, struct dpf_req **reqp)
{
	ssize_t ret;

	ret = ep_enter(ep);
	if (ret)
		return ret;
	if (handle) {
		ret = ep_peer(ep, addr, handle);
		if (ret)
			goto out_unlock;
	}
	*reqp = ep_req(ep, kind, context, cq_flags, flags, no_comp);
	if (!*reqp) {
		ret = -FI_ENOMEM;
		goto out_unlock;
	}
	return 0;

out_unlock:
	dpf_unlock(ep->dom);
	return ret;
}

/* ep_abort - give back @req of ep_begin(), drop the lock, return @ret. */
static ssize_t ep_abort(struct dpf_ep *ep, struct dpf_req *req, ssize_t ret)
{
	req_put(ep, req);
	dpf_unlock(ep->dom);
	return ret;
}

/*
 * A local buffer in memory the application registered on this endpoint
 * (fi_mr_desc() of an enabled FI_MR_ENDPOINT region bound here): the
 * operation names the kernel region and the offset in it
 * (DMAPLANE_OP_F_REGION), so the kernel takes the region's pages instead of
 * pinning the user range for each operation.  Anything else (no
 * descriptor, another endpoint's, a buffer not inside it, a receive into a
 * region without local write access, a module without
 * DMAPLANE_CAP_REGION_BUF) leaves the operation on the user address.
 * Called with the domain locked (mr->kmr changes under it).
 */
static void ep_desc_region(struct dpf_ep *ep, void *desc, bool write,
			   struct dmaplane_op *op)
{
	struct dpf_mr *mr = dpf_mr_of_desc(desc);
	uintptr_t base, addr = (uintptr_t)op->addr;

	if (!mr || !ep->region_buf || mr->ep != ep || !mr->kmr ||
	    (op->flags & DMAPLANE_OP_F_IOV))
		return;
	if (write && !(mr->access & (FI_RECV | FI_READ)))
		return;
	base = (uintptr_t)mr->buf;
	if (addr < base || op->len > mr->len || addr - base > mr->len - op->len)
		return;
	op->addr = addr - base;
	dp_prep_set_region(op, dp_mr_handle(mr->kmr));
}

static ssize_t ep_send(struct dpf_ep *ep, const struct iovec *iov, void *desc,
		       size_t count, fi_addr_t dest, uint64_t tag, bool tagged, void *context,
		       uint64_t flags, uint64_t data, bool no_comp)
{
	struct dmaplane_op op;
	struct dpf_req *req;
	const void *buf;
	uint64_t n;
	uint32_t h;
	ssize_t ret;
	int len;

	if (count > DPF_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	/* As other providers: the domain's cq_data_size says, not the cap bit. */
	if ((flags & FI_REMOTE_CQ_DATA) &&
	    !(ep->info->domain_attr && ep->info->domain_attr->cq_data_size))
		return -FI_EINVAL;
	if (tagged) {
		if (!(ep->caps & FI_TAGGED))
			return -FI_EOPNOTSUPP;
		if (ep->tag_split && (tag & DPF_MSG_TAG_BIT))
			return -FI_EINVAL;	/* beyond mem_tag_format */
	} else {
		if (!(ep->caps & FI_MSG))
			return -FI_EOPNOTSUPP;
		tag = ep->tag_split ? DPF_MSG_TAG_BIT : 0;
	}

	ret = ep_begin(ep, dest, &h, DPF_REQ_SEND, context,
		       FI_SEND | (tagged ? FI_TAGGED : FI_MSG), flags, no_comp, &req);
	if (ret)
		return ret;
	if (flags & FI_INJECT) {
		len = req_inject(req, iov, count);
		if (len < 0)
			return ep_abort(ep, req, len);
		buf = req->inject;
		n = len;
	} else if (count == 1) {
		buf = iov[0].iov_base;
		n = iov[0].iov_len;
	} else if (count == 0) {
		buf = NULL;
		n = 0;
	} else {
		buf = iov;	/* DMAPLANE_OP_F_IOV: the array and its count */
		n = count;
	}
	if (flags & FI_REMOTE_CQ_DATA)
		dp_prep_send_data(&op, h, tag, buf, n, data, (uintptr_t)req);
	else
		dp_prep_send(&op, h, tag, buf, n, (uintptr_t)req);
	if (!(flags & FI_INJECT) && count > 1)
		dp_prep_set_flags(&op, DMAPLANE_OP_F_IOV);
	else if (!(flags & FI_INJECT) && count == 1)
		ep_desc_region(ep, desc, false, &op);
	ret = dp_submit(ep->kep, &op, 1);
	if (ret > 0)
		ret = 0;
	if (ret)
		return ep_abort(ep, req, dpf_errno(ret));
	dpf_unlock(ep->dom);
	return 0;
}

/*
 * mrecv_post - give the oldest FI_MULTI_RECV buffer a kernel receive for
 * the rest of its space, unless it has one.  A failure (no ring credit, no
 * memory) leaves the buffer waiting for the next progress or post to try
 * again.  Domain lock held.
 */
static int mrecv_post(struct dpf_ep *ep)
{
	struct dpf_mrecv *m = ep->mrecvs;
	struct dmaplane_op op;
	struct dpf_req *req;
	int ret;

	if (!m || m->req)
		return 0;
	req = ep_req(ep, DPF_REQ_RECV, m->context, FI_RECV | FI_MSG, m->flags, false);
	if (!req)
		return -FI_ENOMEM;
	req->mrecv = m;
	req->buf = m->base + m->off;
	dp_prep_recv(&op, m->src, ep->tag_split ? DPF_MSG_TAG_BIT : 0, 0,
		     req->buf, m->len - m->off, (uintptr_t)req);
	ep_desc_region(ep, m->desc, true, &op);
	ret = dp_submit(ep->kep, &op, 1);
	if (ret < 0) {
		req_put(ep, req);
		return dpf_errno(ret);
	}
	recv_link(ep, req);
	m->req = req;
	return 0;
}

/*
 * FI_MULTI_RECV: queue the buffer (struct dpf_mrecv); the oldest one gets
 * its kernel receive at once.  One buffer only: the messages are packed
 * into it.
 */
static ssize_t ep_mrecv(struct dpf_ep *ep, const struct iovec *iov, void *desc,
			size_t count, fi_addr_t src, void *context, uint64_t flags)
{
	struct dpf_mrecv *m;
	uint32_t h = DP_ANY_SRC;
	ssize_t ret;

	if (!(ep->caps & FI_MULTI_RECV) || count != 1 || !iov)
		return -FI_EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -FI_ENOMEM;
	ret = ep_enter(ep);
	if (ret)
		goto err_free;
	if ((ep->caps & FI_DIRECTED_RECV) && src != FI_ADDR_UNSPEC) {
		ret = ep_peer(ep, src, &h);
		if (ret)
			goto err_unlock;
	}
	m->context = context;
	m->base = iov[0].iov_base;
	m->len = iov[0].iov_len;
	m->desc = desc;
	m->src = h;
	m->flags = flags;
	*ep->mrecv_tail = m;
	ep->mrecv_tail = &m->next;
	if (ep->mrecvs == m) {
		ret = mrecv_post(ep);
		if (ret) {
			mrecv_unlink(ep, m);
			goto err_unlock;
		}
	}
	dpf_unlock(ep->dom);
	return 0;

err_unlock:
	dpf_unlock(ep->dom);
err_free:
	free(m);
	return ret;
}

static ssize_t ep_recv(struct dpf_ep *ep, const struct iovec *iov, void *desc,
		       size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore, bool tagged,
		       void *context, uint64_t flags)
{
	struct dpf_req *req;
	uint32_t h = DP_ANY_SRC;
	bool directed;
	ssize_t ret;

	if (count > DPF_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	if (flags & (FI_PEEK | FI_CLAIM | FI_DISCARD))
		return -FI_EINVAL;	/* handled by ep_trecvmsg */
	if (flags & FI_MULTI_RECV) {
		if (tagged)
			return -FI_EINVAL;	/* untagged only, as fi_msg(3) */
		return ep_mrecv(ep, iov, desc, count, src, context, flags);
	}
	if (tagged) {
		if (!(ep->caps & FI_TAGGED))
			return -FI_EOPNOTSUPP;
		if (ep->tag_split) {
			tag &= ~DPF_MSG_TAG_BIT;
			ignore &= ~DPF_MSG_TAG_BIT;
		}
	} else {
		if (!(ep->caps & FI_MSG))
			return -FI_EOPNOTSUPP;
		tag = ep->tag_split ? DPF_MSG_TAG_BIT : 0;
		ignore = 0;
	}

	directed = (ep->caps & FI_DIRECTED_RECV) && src != FI_ADDR_UNSPEC;
	ret = ep_begin(ep, src, directed ? &h : NULL, DPF_REQ_RECV, context,
		       FI_RECV | (tagged ? FI_TAGGED : FI_MSG), flags, false, &req);
	if (ret)
		return ret;
	req->buf = count ? iov[0].iov_base : NULL;
	if (count <= 1) {
		struct dmaplane_op op;

		dp_prep_recv(&op, h, tag, ignore, req->buf,
			     count ? iov[0].iov_len : 0, (uintptr_t)req);
		/*
		 * Into a small buffer, a message of up to 8 bytes (an MPI
		 * rank's int or double, a control message) may come in the
		 * completion: nothing pinned, ep_complete() copies it.  That
		 * spares the pin as a registered region (host memory: the
		 * only kind of MR here) would, so a descriptor is not used.
		 */
		if (ep->recv_inline && op.len && op.len <= DPF_RECV_INLINE_MAX)
			dp_prep_set_flags(&op, DMAPLANE_OP_F_INLINE);
		else
			ep_desc_region(ep, desc, true, &op);
		ret = dp_submit(ep->kep, &op, 1);
		if (ret > 0)
			ret = 0;
	} else
		ret = dp_recvv(ep->kep, h, tag, ignore, iov, count, (uintptr_t)req);
	if (ret)
		return ep_abort(ep, req, dpf_errno(ret));
	recv_link(ep, req);
	dpf_unlock(ep->dom);
	return 0;
}

/*
 * FI_PEEK, FI_CLAIM, FI_DISCARD (MPI_Improbe/Mrecv): the kernel's PROBE
 * (with DMAPLANE_PROBE_CLAIM for a claim or discard) and a RECV of the
 * claimed message.  The claim handle lives in the application's
 * struct fi_context, which fi_tagged(3) requires for FI_CLAIM.
 */
static ssize_t ep_tpeek(struct dpf_ep *ep, const struct fi_msg_tagged *msg,
			uint64_t flags)
{
	struct fi_context *fctx = msg->context;
	struct dmaplane_probe probe;
	uint64_t tag = msg->tag, ignore = msg->ignore;
	struct dpf_cq_slot *s;
	struct dpf_req *req;
	uint32_t h = DP_ANY_SRC;
	unsigned int pflags;
	ssize_t ret;

	if ((flags & (FI_CLAIM | FI_DISCARD)) && !fctx)
		return -FI_EINVAL;
	if (ep->tag_split) {
		tag &= ~DPF_MSG_TAG_BIT;
		ignore &= ~DPF_MSG_TAG_BIT;
	}
	pflags = (flags & (FI_CLAIM | FI_DISCARD)) ? DMAPLANE_PROBE_CLAIM : 0;

	ret = ep_enter(ep);
	if (ret)
		return ret;
	if (!ep->rx_cq || dpf_cq_full(ep->rx_cq)) {
		ret = ep->rx_cq ? -FI_EAGAIN : -FI_ENOCQ;
		goto out_unlock;
	}
	if ((ep->caps & FI_DIRECTED_RECV) && msg->addr != FI_ADDR_UNSPEC) {
		ret = ep_peer(ep, msg->addr, &h);
		if (ret)
			goto out_unlock;
	}
	ret = dp_probe(ep->kep, h, tag, ignore, pflags, &probe);
	if (ret == -EAGAIN) {
		s = dpf_cq_push(ep->rx_cq);
		s->op_context = msg->context;
		s->flags = FI_RECV | FI_TAGGED;
		s->tag = msg->tag;
		s->err = FI_ENOMSG;
		s->prov_errno = EAGAIN;
		ret = 0;
		goto out_unlock;
	}
	if (ret) {
		ret = dpf_errno(ret);
		goto out_unlock;
	}
	if (flags & FI_DISCARD) {
		/* Nobody is told of it: no context, flags or completion. */
		req = ep_req(ep, DPF_REQ_DISCARD, NULL, 0, 0, true);
		if (!req) {
			ret = -FI_ENOMEM;	/* stays claimed until close */
			goto out_unlock;
		}
		ret = dp_recv_claimed(ep->kep, probe.claim, NULL, 0, (uintptr_t)req);
		if (ret)
			return ep_abort(ep, req, dpf_errno(ret));
	} else if (flags & FI_CLAIM) {
		fctx->internal[0] = (void *)(uintptr_t)probe.claim;
	}
	s = dpf_cq_push(ep->rx_cq);
	s->op_context = msg->context;
	s->flags = FI_RECV | FI_TAGGED;
	s->len = probe.len;
	s->tag = ep->tag_split ? probe.tag & ~DPF_MSG_TAG_BIT : probe.tag;
	s->data = dpf_cqe_data(probe.cqe_flags, probe.data, &s->flags);
	s->src = dpf_cqe_src(ep, probe.cqe_flags, probe.src_av);
	ret = 0;
out_unlock:
	dpf_unlock(ep->dom);
	return ret;
}

static ssize_t ep_trecv_claimed(struct dpf_ep *ep, const struct fi_msg_tagged *msg,
				uint64_t flags)
{
	struct fi_context *fctx = msg->context;
	struct dpf_req *req;
	uint32_t claim;
	ssize_t ret;

	if (!fctx || msg->iov_count > 1 || (msg->iov_count && !msg->msg_iov))
		return -FI_EINVAL;	/* the kernel receives a claim into one buffer */
	claim = (uint32_t)(uintptr_t)fctx->internal[0];

	ret = ep_begin(ep, FI_ADDR_UNSPEC, NULL, DPF_REQ_RECV, msg->context,
		       FI_RECV | FI_TAGGED | (flags & FI_DISCARD), flags, false,
		       &req);
	if (ret)
		return ret;
	if (!(flags & FI_DISCARD) && msg->iov_count)
		req->buf = msg->msg_iov[0].iov_base;
	ret = dp_recv_claimed(ep->kep, claim, req->buf,
			      req->buf ? msg->msg_iov[0].iov_len : 0,
			      (uintptr_t)req);
	if (ret)
		return ep_abort(ep, req, dpf_errno(ret));
	dpf_unlock(ep->dom);
	return 0;
}

static ssize_t ep_rma(struct dpf_ep *ep, bool write, const struct iovec *iov,
		      void *desc, size_t count, fi_addr_t addr, uint64_t raddr, uint64_t key,
		      void *context, uint64_t flags, uint64_t data, bool no_comp)
{
	struct dmaplane_op op;
	struct dpf_req *req;
	const void *buf;
	uint32_t h;
	ssize_t ret;
	int len;

	if (!(ep->caps & FI_RMA))
		return -FI_EOPNOTSUPP;
	/* One local buffer: the kernel's PUT and GET take no vectors. */
	if (count > 1 || (count && !iov))
		return -FI_EINVAL;
	ret = dpf_check_cq_data(ep, write, flags);
	if (ret)
		return ret;

	ret = ep_begin(ep, addr, &h, write ? DPF_REQ_WRITE : DPF_REQ_READ,
		       context, FI_RMA | (write ? FI_WRITE : FI_READ), flags,
		       no_comp, &req);
	if (ret)
		return ret;
	buf = count ? iov[0].iov_base : NULL;
	len = count ? iov[0].iov_len : 0;
	if (write && (flags & FI_INJECT)) {
		len = req_inject(req, iov, count);
		if (len < 0)
			return ep_abort(ep, req, len);
		buf = req->inject;
	}
	dp_prep_rma(&op, write ? DMAPLANE_OP_PUT : DMAPLANE_OP_GET, h, key, raddr,
		    buf, len, (uintptr_t)req);
	if (!(write && (flags & FI_INJECT)))
		ep_desc_region(ep, count ? desc : NULL, !write, &op);
	if (flags & FI_REMOTE_CQ_DATA) {
		/* The target's completion carries @data (DMAPLANE_CQE_F_REMOTE). */
		dp_prep_set_flags(&op, DMAPLANE_OP_F_DATA);
		op.data = data;
	}
	ret = dp_submit(ep->kep, &op, 1);
	if (ret > 0)
		ret = 0;
	if (ret)
		return ep_abort(ep, req, dpf_errno(ret));
	dpf_unlock(ep->dom);
	return 0;
}

#define to_ep(fep) container_of(fep, struct dpf_ep, ep)
/* The descriptor of a one-buffer operation's buffer (see ep_desc_region()) */
#define DESC0(desc, count) ((count) == 1 && (desc) ? (desc)[0] : NULL)

/* ---- fi_ops_msg ---------------------------------------------------------- */

static ssize_t dpf_recv(struct fid_ep *fep, void *buf, size_t len, void *desc,
			fi_addr_t src, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return ep_recv(to_ep(fep), &iov, desc, 1, src, 0, 0, false, context,
		       to_ep(fep)->rx_op_flags);
}

static ssize_t dpf_recvv(struct fid_ep *fep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src, void *context)
{
	return ep_recv(to_ep(fep), iov, DESC0(desc, count), count, src, 0, 0, false, context,
		       to_ep(fep)->rx_op_flags);
}

static ssize_t dpf_recvmsg(struct fid_ep *fep, const struct fi_msg *msg,
			   uint64_t flags)
{
	return ep_recv(to_ep(fep), msg->msg_iov, DESC0(msg->desc, msg->iov_count),
		       msg->iov_count, msg->addr, 0, 0,
		       false, msg->context, flags);
}

static ssize_t dpf_send(struct fid_ep *fep, const void *buf, size_t len,
			void *desc, fi_addr_t dest, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_send(to_ep(fep), &iov, desc, 1, dest, 0, false, context,
		       to_ep(fep)->tx_op_flags, 0, false);
}

static ssize_t dpf_sendv(struct fid_ep *fep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t dest, void *context)
{
	return ep_send(to_ep(fep), iov, DESC0(desc, count), count, dest, 0, false, context,
		       to_ep(fep)->tx_op_flags, 0, false);
}

static ssize_t dpf_sendmsg(struct fid_ep *fep, const struct fi_msg *msg,
			   uint64_t flags)
{
	return ep_send(to_ep(fep), msg->msg_iov, DESC0(msg->desc, msg->iov_count),
		       msg->iov_count, msg->addr, 0,
		       false, msg->context, flags, msg->data, false);
}

static ssize_t dpf_inject(struct fid_ep *fep, const void *buf, size_t len,
			  fi_addr_t dest)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_send(to_ep(fep), &iov, NULL, 1, dest, 0, false, NULL, FI_INJECT, 0,
		       true);
}

static ssize_t dpf_senddata(struct fid_ep *fep, const void *buf, size_t len,
			    void *desc, uint64_t data, fi_addr_t dest, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_send(to_ep(fep), &iov, desc, 1, dest, 0, false, context,
		       to_ep(fep)->tx_op_flags | FI_REMOTE_CQ_DATA, data, false);
}

static ssize_t dpf_injectdata(struct fid_ep *fep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_send(to_ep(fep), &iov, NULL, 1, dest, 0, false, NULL,
		       FI_INJECT | FI_REMOTE_CQ_DATA, data, true);
}

static struct fi_ops_msg dpf_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = dpf_recv,
	.recvv = dpf_recvv,
	.recvmsg = dpf_recvmsg,
	.send = dpf_send,
	.sendv = dpf_sendv,
	.sendmsg = dpf_sendmsg,
	.inject = dpf_inject,
	.senddata = dpf_senddata,
	.injectdata = dpf_injectdata,
};

/* ---- fi_ops_tagged ------------------------------------------------------- */

static ssize_t dpf_trecv(struct fid_ep *fep, void *buf, size_t len, void *desc,
			 fi_addr_t src, uint64_t tag, uint64_t ignore,
			 void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return ep_recv(to_ep(fep), &iov, desc, 1, src, tag, ignore, true, context,
		       to_ep(fep)->rx_op_flags & ~FI_MULTI_RECV);
}

static ssize_t dpf_trecvv(struct fid_ep *fep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t src, uint64_t tag,
			  uint64_t ignore, void *context)
{
	return ep_recv(to_ep(fep), iov, DESC0(desc, count), count, src, tag, ignore, true, context,
		       to_ep(fep)->rx_op_flags & ~FI_MULTI_RECV);
}

static ssize_t dpf_trecvmsg(struct fid_ep *fep, const struct fi_msg_tagged *msg,
			    uint64_t flags)
{
	struct dpf_ep *ep = to_ep(fep);

	if (!(ep->caps & FI_TAGGED))
		return -FI_EOPNOTSUPP;
	if (flags & FI_PEEK)
		return ep_tpeek(ep, msg, flags);
	if (flags & FI_CLAIM)
		return ep_trecv_claimed(ep, msg, flags);
	if (flags & FI_DISCARD)
		return -FI_EINVAL;	/* only with FI_PEEK or FI_CLAIM */
	return ep_recv(ep, msg->msg_iov, DESC0(msg->desc, msg->iov_count),
		       msg->iov_count, msg->addr, msg->tag,
		       msg->ignore, true, msg->context, flags);
}

static ssize_t dpf_tsend(struct fid_ep *fep, const void *buf, size_t len,
			 void *desc, fi_addr_t dest, uint64_t tag, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_send(to_ep(fep), &iov, desc, 1, dest, tag, true, context,
		       to_ep(fep)->tx_op_flags, 0, false);
}

static ssize_t dpf_tsendv(struct fid_ep *fep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest, uint64_t tag,
			  void *context)
{
	return ep_send(to_ep(fep), iov, DESC0(desc, count), count, dest, tag, true, context,
		       to_ep(fep)->tx_op_flags, 0, false);
}

static ssize_t dpf_tsendmsg(struct fid_ep *fep, const struct fi_msg_tagged *msg,
			    uint64_t flags)
{
	return ep_send(to_ep(fep), msg->msg_iov, DESC0(msg->desc, msg->iov_count),
		       msg->iov_count, msg->addr,
		       msg->tag, true, msg->context, flags, msg->data, false);
}

static ssize_t dpf_tinject(struct fid_ep *fep, const void *buf, size_t len,
			   fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_send(to_ep(fep), &iov, NULL, 1, dest, tag, true, NULL, FI_INJECT, 0,
		       true);
}

static ssize_t dpf_tsenddata(struct fid_ep *fep, const void *buf, size_t len,
			     void *desc, uint64_t data, fi_addr_t dest,
			     uint64_t tag, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_send(to_ep(fep), &iov, desc, 1, dest, tag, true, context,
		       to_ep(fep)->tx_op_flags | FI_REMOTE_CQ_DATA, data, false);
}

static ssize_t dpf_tinjectdata(struct fid_ep *fep, const void *buf, size_t len,
			       uint64_t data, fi_addr_t dest, uint64_t tag)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_send(to_ep(fep), &iov, NULL, 1, dest, tag, true, NULL,
		       FI_INJECT | FI_REMOTE_CQ_DATA, data, true);
}

static struct fi_ops_tagged dpf_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = dpf_trecv,
	.recvv = dpf_trecvv,
	.recvmsg = dpf_trecvmsg,
	.send = dpf_tsend,
	.sendv = dpf_tsendv,
	.sendmsg = dpf_tsendmsg,
	.inject = dpf_tinject,
	.senddata = dpf_tsenddata,
	.injectdata = dpf_tinjectdata,
};

/* ---- fi_ops_rma ------------------------------------------------------------ */

static ssize_t dpf_read(struct fid_ep *fep, void *buf, size_t len, void *desc,
			fi_addr_t src, uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return ep_rma(to_ep(fep), false, &iov, desc, 1, src, addr, key, context,
		      to_ep(fep)->tx_op_flags, 0, false);
}

static ssize_t dpf_readv(struct fid_ep *fep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src, uint64_t addr,
			 uint64_t key, void *context)
{
	return ep_rma(to_ep(fep), false, iov, DESC0(desc, count), count, src, addr, key, context,
		      to_ep(fep)->tx_op_flags, 0, false);
}

static ssize_t dpf_rma_msg(struct fid_ep *fep, bool write,
			   const struct fi_msg_rma *msg, uint64_t flags)
{
	if (msg->rma_iov_count != 1 || !msg->rma_iov)
		return -FI_EINVAL;
	if (msg->rma_iov[0].len != iov_len(msg->msg_iov, msg->iov_count))
		return -FI_EINVAL;
	return ep_rma(to_ep(fep), write, msg->msg_iov, DESC0(msg->desc, msg->iov_count),
		       msg->iov_count, msg->addr,
		      msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->context,
		      flags, msg->data, false);
}

static ssize_t dpf_readmsg(struct fid_ep *fep, const struct fi_msg_rma *msg,
			   uint64_t flags)
{
	return dpf_rma_msg(fep, false, msg, flags);
}

static ssize_t dpf_write(struct fid_ep *fep, const void *buf, size_t len,
			 void *desc, fi_addr_t dest, uint64_t addr, uint64_t key,
			 void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_rma(to_ep(fep), true, &iov, desc, 1, dest, addr, key, context,
		      to_ep(fep)->tx_op_flags, 0, false);
}

static ssize_t dpf_writev(struct fid_ep *fep, const struct iovec *iov,
			  void **desc, size_t count, fi_addr_t dest,
			  uint64_t addr, uint64_t key, void *context)
{
	return ep_rma(to_ep(fep), true, iov, DESC0(desc, count), count, dest, addr, key, context,
		      to_ep(fep)->tx_op_flags, 0, false);
}

static ssize_t dpf_writemsg(struct fid_ep *fep, const struct fi_msg_rma *msg,
			    uint64_t flags)
{
	return dpf_rma_msg(fep, true, msg, flags);
}

static ssize_t dpf_rma_inject(struct fid_ep *fep, const void *buf, size_t len,
			      fi_addr_t dest, uint64_t addr, uint64_t key)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_rma(to_ep(fep), true, &iov, NULL, 1, dest, addr, key, NULL,
		      FI_INJECT, 0, true);
}

static ssize_t dpf_writedata(struct fid_ep *fep, const void *buf, size_t len,
			     void *desc, uint64_t data, fi_addr_t dest,
			     uint64_t addr, uint64_t key, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_rma(to_ep(fep), true, &iov, desc, 1, dest, addr, key, context,
		      to_ep(fep)->tx_op_flags | FI_REMOTE_CQ_DATA, data, false);
}

static ssize_t dpf_rma_injectdata(struct fid_ep *fep, const void *buf,
				  size_t len, uint64_t data, fi_addr_t dest,
				  uint64_t addr, uint64_t key)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_rma(to_ep(fep), true, &iov, NULL, 1, dest, addr, key, NULL,
		      FI_INJECT | FI_REMOTE_CQ_DATA, data, true);
}

static struct fi_ops_rma dpf_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = dpf_read,
	.readv = dpf_readv,
	.readmsg = dpf_readmsg,
	.write = dpf_write,
	.writev = dpf_writev,
	.writemsg = dpf_writemsg,
	.inject = dpf_rma_inject,
	.writedata = dpf_writedata,
	.injectdata = dpf_rma_injectdata,
};

/* ---- fi_ops_cm: names only (RDM, connectionless) ----------------------- */

static int dpf_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct dpf_ep *ep = container_of(fid, struct dpf_ep, ep.fid);
	struct dmaplane_name name;
	size_t len = *addrlen;
	int ret;

	ret = dp_getname(ep->kep, &name);
	if (ret)
		return dpf_errno(ret);
	*addrlen = DPF_ADDRLEN;
	if (len < DPF_ADDRLEN)
		return -FI_ETOOSMALL;
	memcpy(addr, &name, DPF_ADDRLEN);
	return 0;
}

static int dpf_setname(fid_t fid, void *addr, size_t addrlen)
{
	(void)fid; (void)addr; (void)addrlen;
	return -FI_ENOSYS;	/* the kernel names endpoints */
}

static int dpf_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	(void)ep; (void)addr; (void)addrlen;
	return -FI_ENOSYS;
}

static int dpf_connect(struct fid_ep *ep, const void *addr, const void *param,
		       size_t paramlen)
{
	(void)ep; (void)addr; (void)param; (void)paramlen;
	return -FI_ENOSYS;
}

static int dpf_listen(struct fid_pep *pep)
{
	(void)pep;
	return -FI_ENOSYS;
}

static int dpf_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	(void)ep; (void)param; (void)paramlen;
	return -FI_ENOSYS;
}

static int dpf_reject(struct fid_pep *pep, fid_t handle, const void *param,
		      size_t paramlen)
{
	(void)pep; (void)handle; (void)param; (void)paramlen;
	return -FI_ENOSYS;
}

static int dpf_shutdown(struct fid_ep *ep, uint64_t flags)
{
	(void)ep; (void)flags;
	return -FI_ENOSYS;
}

static int dpf_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		    struct fid_mc **mc, void *context)
{
	(void)ep; (void)addr; (void)flags; (void)mc; (void)context;
	return -FI_ENOSYS;
}

static struct fi_ops_cm dpf_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = dpf_setname,
	.getname = dpf_getname,
	.getpeer = dpf_getpeer,
	.connect = dpf_connect,
	.listen = dpf_listen,
	.accept = dpf_accept,
	.reject = dpf_reject,
	.shutdown = dpf_shutdown,
	.join = dpf_join,
};

/* ---- fi_ops_ep ------------------------------------------------------------- */

/*
 * An FI_MULTI_RECV buffer that has no kernel receive (one queued behind
 * the oldest, or one whose receive could not be posted) is cancelled here:
 * FI_ECANCELED with FI_MULTI_RECV on the receive CQ.  Domain lock held.
 */
static ssize_t mrecv_cancel(struct dpf_ep *ep, void *context)
{
	struct dpf_cq_slot *s;
	struct dpf_mrecv *m;

	for (m = ep->mrecvs; m; m = m->next)
		if (m->context == context && !m->req)
			break;
	if (!m)
		return -FI_ENOENT;
	if (ep->rx_cq && dpf_cq_full(ep->rx_cq))
		return -FI_EAGAIN;
	mrecv_unlink(ep, m);
	if (ep->recv_cntr)
		ep->recv_cntr->err++;
	if (ep->rx_cq) {
		s = dpf_cq_push(ep->rx_cq);
		s->op_context = context;
		s->flags = FI_RECV | FI_MSG | FI_MULTI_RECV;
		s->buf = m->base + m->off;
		s->err = FI_ECANCELED;
		s->prov_errno = ECANCELED;
	}
	free(m);
	mrecv_post(ep);
	return 0;
}

/* fi_cancel(): a posted receive that nothing matched yet (FI_ECANCELED). */
static ssize_t dpf_cancel(fid_t fid, void *context)
{
	struct dpf_ep *ep = container_of(fid, struct dpf_ep, ep.fid);
	struct dpf_req *req;
	ssize_t ret = -FI_ENOENT;

	dpf_lock(ep->dom);
	for (req = ep->recvs; req; req = req->next) {
		if (req->context != context)
			continue;
		ret = dp_cancel(ep->kep, (uintptr_t)req);
		ret = ret == -ENOENT ? -FI_ENOENT : dpf_errno(ret);
		break;
	}
	if (!req)
		ret = mrecv_cancel(ep, context);
	dpf_unlock(ep->dom);
	return ret;
}

/* FI_OPT_ENDPOINT's FI_OPT_MIN_MULTI_RECV (a size_t); no other option. */
static int dpf_getopt(fid_t fid, int level, int optname, void *optval,
		      size_t *optlen)
{
	struct dpf_ep *ep = container_of(fid, struct dpf_ep, ep.fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t))
		return -FI_ETOOSMALL;
	dpf_lock(ep->dom);
	*(size_t *)optval = ep->min_multi_recv;
	dpf_unlock(ep->dom);
	*optlen = sizeof(size_t);
	return 0;
}

static int dpf_setopt(fid_t fid, int level, int optname, const void *optval,
		      size_t optlen)
{
	struct dpf_ep *ep = container_of(fid, struct dpf_ep, ep.fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || optlen != sizeof(size_t))
		return -FI_EINVAL;
	dpf_lock(ep->dom);
	ep->min_multi_recv = *(const size_t *)optval;
	dpf_unlock(ep->dom);
	return 0;
}

static int dpf_no_ctx(struct fid_ep *sep, int index, void *attr,
		      struct fid_ep **ep, void *context)
{
	(void)sep; (void)index; (void)attr; (void)ep; (void)context;
	return -FI_ENOSYS;
}

static int dpf_tx_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		      struct fid_ep **ep, void *context)
{
	return dpf_no_ctx(sep, index, attr, ep, context);
}

static int dpf_rx_ctx(struct fid_ep *sep, int index, struct fi_rx_attr *attr,
		      struct fid_ep **ep, void *context)
{
	return dpf_no_ctx(sep, index, attr, ep, context);
}

static ssize_t dpf_size_left(struct fid_ep *ep)
{
	(void)ep;
	return -FI_ENOSYS;	/* deprecated in libfabric */
}

static struct fi_ops_ep dpf_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = dpf_cancel,
	.getopt = dpf_getopt,
	.setopt = dpf_setopt,
	.tx_ctx = dpf_tx_ctx,
	.rx_ctx = dpf_rx_ctx,
	.rx_size_left = dpf_size_left,
	.tx_size_left = dpf_size_left,
};

/* ---- fid ops: bind, enable, close ----------------------------------------- */

static int ep_bind_cq(struct dpf_ep *ep, struct dpf_cq *cq, uint64_t flags)
{
	int ret;

	if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
		return -FI_EINVAL;
	if (!(flags & (FI_TRANSMIT | FI_RECV)))
		return -FI_EINVAL;
	if (((flags & FI_TRANSMIT) && ep->tx_cq) ||
	    ((flags & FI_RECV) && ep->rx_cq))
		return -FI_EINVAL;
	ret = dpf_cq_bind_ep(cq, ep);
	if (ret)
		return ret;
	if ((flags & FI_TRANSMIT) && (flags & FI_RECV))
		cq->refs++;	/* one reference per direction */
	if (flags & FI_TRANSMIT) {
		ep->tx_cq = cq;
		ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
	}
	if (flags & FI_RECV) {
		ep->rx_cq = cq;
		ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
	}
	return 0;
}

static int ep_bind_cntr(struct dpf_ep *ep, struct dpf_cntr *cntr, uint64_t flags)
{
	struct dpf_cntr **slots[4] = { NULL };
	int i, n = 0, ret;

	if (flags & (FI_REMOTE_READ | FI_REMOTE_WRITE))
		return -FI_ENOSYS;	/* the target of RMA is not told (no FI_RMA_EVENT) */
	if (!flags || flags & ~(FI_SEND | FI_RECV | FI_READ | FI_WRITE))
		return -FI_EINVAL;
	if (flags & FI_SEND)
		slots[n++] = &ep->send_cntr;
	if (flags & FI_RECV)
		slots[n++] = &ep->recv_cntr;
	if (flags & FI_READ)
		slots[n++] = &ep->read_cntr;
	if (flags & FI_WRITE)
		slots[n++] = &ep->write_cntr;
	for (i = 0; i < n; i++)
		if (*slots[i])
			return -FI_EINVAL;
	for (i = 0; i < n; i++) {
		ret = dpf_cntr_bind_ep(cntr, ep);
		if (ret)
			return ret;	/* nothing bound yet: only refs taken */
		*slots[i] = cntr;
	}
	return 0;
}

static int dpf_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct dpf_ep *ep = container_of(fid, struct dpf_ep, ep.fid);
	struct dpf_av *av;
	int ret;

	dpf_lock(ep->dom);
	if (ep->enabled) {
		ret = -FI_EOPBADSTATE;
		goto out;
	}
	switch (bfid->fclass) {
	case FI_CLASS_CQ:
		ret = ep_bind_cq(ep, container_of(bfid, struct dpf_cq, cq.fid), flags);
		break;
	case FI_CLASS_CNTR:
		ret = ep_bind_cntr(ep, container_of(bfid, struct dpf_cntr, cntr.fid),
				   flags);
		break;
	case FI_CLASS_AV:
		av = container_of(bfid, struct dpf_av, av.fid);
		if (ep->av || av->dom != ep->dom) {
			ret = -FI_EINVAL;
			break;
		}
		ret = dpf_av_bind_ep(av, ep);
		if (!ret)
			ep->av = av;
		break;
	case FI_CLASS_EQ:
		ret = 0;	/* an RDM endpoint of dmaplane has no events */
		break;
	default:
		ret = -FI_EINVAL;
		break;
	}
out:
	dpf_unlock(ep->dom);
	return ret;
}

static unsigned int ring_entries(const struct dpf_ep *ep)
{
	size_t want = ep->tx_size + ep->rx_size;
	unsigned int n = 64;

	while (n < want && n < DMAPLANE_CQ_MAX_ENTRIES)
		n <<= 1;
	return n;
}

static int ep_enable(struct dpf_ep *ep)
{
	uint64_t auth_key = ep->dom->auth_key;
	struct dmaplane_info di;
	size_t i;
	int ret;

	if (ep->enabled)
		return 0;
	if (!ep->av)
		return -FI_ENOAV;
	if (!ep->tx_cq && !ep->send_cntr && !ep->read_cntr && !ep->write_cntr)
		return -FI_ENOCQ;
	if (!ep->rx_cq && !ep->recv_cntr)
		return -FI_ENOCQ;
	if (ep->info->ep_attr->auth_key_size && ep->info->ep_attr->auth_key)
		memcpy(&auth_key, ep->info->ep_attr->auth_key, sizeof(auth_key));
	ret = dp_ep_setup(ep->kep, auth_key, ring_entries(ep));
	if (ret) {
		DPF_WARN(FI_LOG_EP_CTRL, "dp_ep_setup: %s\n", strerror(-ret));
		return dpf_errno(ret);
	}
	ep->enabled = true;
	if (!dp_info(ep->kep, &di)) {
		ep->put_data = di.caps & DMAPLANE_CAP_PUT_DATA;
		ep->region_buf = di.caps & DMAPLANE_CAP_REGION_BUF;
		ep->recv_inline = di.caps & DMAPLANE_CAP_RECV_INLINE;
	}
	/* Names inserted before the endpoint was enabled; refusals show later. */
	for (i = 0; i < ep->av->count; i++)
		if (ep->av->used[i])
			dpf_ep_av_insert(ep, i);
	return 0;
}

static int dpf_ep_control(struct fid *fid, int command, void *arg)
{
	struct dpf_ep *ep = container_of(fid, struct dpf_ep, ep.fid);
	int ret;

	(void)arg;
	switch (command) {
	case FI_ENABLE:
		dpf_lock(ep->dom);
		ret = ep_enable(ep);
		dpf_unlock(ep->dom);
		return ret;
	default:
		return -FI_ENOSYS;
	}
}

static int dpf_ep_close(struct fid *fid)
{
	struct dpf_ep *ep = container_of(fid, struct dpf_ep, ep.fid);
	struct dpf_domain *dom = ep->dom;
	struct dpf_cntr *cntrs[4];
	struct dpf_mrecv *m;
	struct dpf_mr *mr;
	size_t i;
	int k;

	dpf_lock(dom);
	if (ep->tx_cq)
		dpf_cq_unbind_ep(ep->tx_cq, ep);
	if (ep->rx_cq == ep->tx_cq)
		ep->tx_cq = NULL;	/* now the last binding: off the list */
	if (ep->rx_cq)
		dpf_cq_unbind_ep(ep->rx_cq, ep);
	cntrs[0] = ep->send_cntr;
	cntrs[1] = ep->recv_cntr;
	cntrs[2] = ep->read_cntr;
	cntrs[3] = ep->write_cntr;
	for (k = 0; k < 4; k++) {
		if (!cntrs[k])
			continue;
		if ((k < 1 || cntrs[0] != cntrs[k]) &&
		    (k < 2 || cntrs[1] != cntrs[k]) &&
		    (k < 3 || cntrs[2] != cntrs[k]))
			dpf_cntr_unbind_ep(cntrs[k], ep);
	}
	if (ep->av)
		dpf_av_unbind_ep(ep->av, ep);
	while ((mr = ep->mrs)) {
		ep->mrs = mr->ep_next;
		dpf_mr_ep_gone(mr);
	}
	dom->refs--;
	dpf_unlock(dom);

	/* Closing the kernel endpoint ends whatever is still in flight. */
	dp_close(ep->kep);
	while ((m = ep->mrecvs)) {
		ep->mrecvs = m->next;
		free(m);
	}
	for (i = 0; i < ep->nchunks; i++)
		free(ep->req_chunks[i]);
	free(ep->req_chunks);
	free(ep->peers);
	free(ep->rpeers);
	fi_freeinfo(ep->info);
	free(ep);
	return 0;
}

static struct fi_ops dpf_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dpf_ep_close,
	.bind = dpf_ep_bind,
	.control = dpf_ep_control,
	.ops_open = dpf_no_ops_open,
};

int dpf_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **epp, void *context)
{
	struct dpf_domain *dom = container_of(domain, struct dpf_domain, domain);
	struct dpf_ep *ep;
	int ret;

	if (!info || !info->ep_attr || !info->tx_attr || !info->rx_attr)
		return -FI_EINVAL;
	if (info->ep_attr->type != FI_EP_RDM)
		return -FI_EINVAL;
	if (info->caps & ~DPF_CAPS)
		return -FI_ENODATA;
	if (info->ep_attr->auth_key_size &&
	    info->ep_attr->auth_key_size != sizeof(uint64_t))
		return -FI_EINVAL;
	if (info->tx_attr->size > DPF_MAX_CTX_SIZE ||
	    info->rx_attr->size > DPF_MAX_CTX_SIZE)
		return -FI_EINVAL;

	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->info = fi_dupinfo(info);
	if (!ep->info) {
		ret = -FI_ENOMEM;
		goto err_free_ep;
	}
	ret = dp_open(NULL, 0, &ep->kep);
	if (ret) {
		DPF_WARN(FI_LOG_EP_CTRL, "dp_open: %s\n", strerror(-ret));
		ret = dpf_errno(ret);
		goto err_free_info;
	}
	ep->dom = dom;
	ep->caps = info->caps ? info->caps : dom->caps;
	ep->tag_split = (ep->caps & FI_MSG) && (ep->caps & FI_TAGGED);
	ep->tx_size = info->tx_attr->size ? info->tx_attr->size : DPF_DEF_CTX_SIZE;
	ep->rx_size = info->rx_attr->size ? info->rx_attr->size : DPF_DEF_CTX_SIZE;
	ep->tx_op_flags = info->tx_attr->op_flags;
	ep->rx_op_flags = info->rx_attr->op_flags;
	ep->mrecv_tail = &ep->mrecvs;
	ep->min_multi_recv = DPF_DEF_MIN_MULTI_RECV;
	ep->ep.fid.fclass = FI_CLASS_EP;
	ep->ep.fid.context = context;
	ep->ep.fid.ops = &dpf_ep_fi_ops;
	ep->ep.ops = &dpf_ep_ops;
	ep->ep.cm = &dpf_cm_ops;
	ep->ep.msg = &dpf_msg_ops;
	ep->ep.tagged = &dpf_tagged_ops;
	ep->ep.rma = &dpf_rma_ops;
	ep->ep.atomic = NULL;		/* no FI_ATOMIC */
	ep->ep.collective = NULL;
	dpf_lock(dom);
	dom->refs++;
	dpf_unlock(dom);
	*epp = &ep->ep;
	return 0;

err_free_info:
	fi_freeinfo(ep->info);
err_free_ep:
	free(ep);
	return ret;
}

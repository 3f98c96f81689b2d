// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane wire format: validation of what arrives from a peer node and
 * credit accounting (see ib_wire.h).  Pure functions, tested by KUnit.
 */
#include <linux/err.h>
#include <linux/errno.h>
#include <linux/limits.h>
#include <linux/overflow.h>
#include <linux/string.h>

#include "dmaplane.h"
#include "ib_wire.h"

static_assert(sizeof(struct dmaplane_wire_hdr) + sizeof(struct dmaplane_wire_msg) ==
	      DMAPLANE_WIRE_HDR_BYTES);
static_assert(struct_size((struct dmaplane_wire_rts *)NULL, segs, DMAPLANE_WIRE_MAX_SEGS) +
	      DMAPLANE_WIRE_HDR_BYTES <= DMAPLANE_WIRE_CTRL_MAX);
static_assert(struct_size((struct dmaplane_wire_seglist *)NULL, segs, DMAPLANE_WIRE_MAX_SEGS) +
	      sizeof(struct dmaplane_wire_hdr) + sizeof(struct dmaplane_wire_rma) <=
	      DMAPLANE_WIRE_CTRL_MAX);

/* A status a peer may hand us for a completion: 0 or a negative errno. */
static bool wire_status_ok(__le32 status)
{
	s32 s = (s32)le32_to_cpu(status);

	return s <= 0 && s >= -MAX_ERRNO;
}

static int check_msg(const struct dmaplane_wire_msg *m, u32 len, bool eager)
{
	u64 mlen = le64_to_cpu(m->msg_len);

	if (le64_to_cpu(m->src) >> DMAPLANE_SRC_NODE_SHIFT ||
	    le64_to_cpu(m->dst) >> DMAPLANE_SRC_NODE_SHIFT ||
	    le32_to_cpu(m->flags) & ~DMAPLANE_WIRE_MSG_DATA ||
	    (!m->flags && m->data))
		return -EBADMSG;
	if (eager)
		return mlen == len - sizeof(*m) ? 0 : -EBADMSG;
	return mlen ? 0 : -EBADMSG;
}

/* Segments whose lengths add up to @total; 0 segments only for 0 bytes. */
static int check_segs(const struct dmaplane_wire_seg *segs, u32 nsegs, u64 total)
{
	u64 sum = 0;
	u32 i;

	if (nsegs > DMAPLANE_WIRE_MAX_SEGS || (!nsegs && total))
		return -EBADMSG;
	for (i = 0; i < nsegs; i++) {
		if (!segs[i].len)
			return -EBADMSG;
		sum += le32_to_cpu(segs[i].len);
	}
	return sum == total ? 0 : -EBADMSG;
}

static int check_rts(const void *body, u32 len)
{
	const struct dmaplane_wire_msg *m = body;
	const struct dmaplane_wire_rts *rts = body + sizeof(*m);
	u32 nsegs;

	if (len < sizeof(*m) + sizeof(*rts) || check_msg(m, len, false))
		return -EBADMSG;
	nsegs = le32_to_cpu(rts->nsegs);
	if (!nsegs || nsegs > DMAPLANE_WIRE_MAX_SEGS || rts->pad ||
	    le64_to_cpu(rts->cookie) > U32_MAX ||
	    len != sizeof(*m) + struct_size(rts, segs, nsegs))
		return -EBADMSG;
	return check_segs(rts->segs, nsegs, le64_to_cpu(m->msg_len));
}

static int check_rma(const void *body, u32 len)
{
	const struct dmaplane_wire_rma *r = body;
	const struct dmaplane_wire_seglist *sl = body + sizeof(*r);
	u32 nsegs;

	if (len < sizeof(*r) + sizeof(*sl) || r->write > 1 ||
	    r->flags & ~DMAPLANE_WIRE_RMA_DATA ||
	    (r->flags && !r->write) || (!r->flags && r->data) ||
	    memchr_inv(r->pad, 0, sizeof(r->pad)) || sl->pad ||
	    le64_to_cpu(r->src) >> DMAPLANE_SRC_NODE_SHIFT ||
	    le64_to_cpu(r->dst) >> DMAPLANE_SRC_NODE_SHIFT)
		return -EBADMSG;
	nsegs = le32_to_cpu(sl->nsegs);
	if (nsegs > DMAPLANE_WIRE_MAX_SEGS ||
	    len != sizeof(*r) + struct_size(sl, segs, nsegs))
		return -EBADMSG;
	return check_segs(sl->segs, nsegs, le64_to_cpu(r->len));
}

static int check_ack(const struct dmaplane_wire_ack *ack, u32 len)
{
	u32 i, n;

	if (len < sizeof(*ack))
		return -EBADMSG;
	n = le32_to_cpu(ack->nnacks);
	if (n > DMAPLANE_WIRE_CREDITS || len != struct_size(ack, nacks, n) ||
	    le32_to_cpu(ack->credits) > DMAPLANE_WIRE_CREDITS)
		return -EBADMSG;
	for (i = 0; i < n; i++)
		if (!wire_status_ok(ack->nacks[i].status) ||
		    !ack->nacks[i].status || ack->nacks[i].pad)
			return -EBADMSG;
	return 0;
}

/**
 * dmaplane_wire_check() - validate a message that arrived from a peer
 * @buf: the message, contiguous except for an EAGER payload: @byte_len
 *	bytes readable, or only DMAPLANE_WIRE_HDR_BYTES for EAGER (its
 *	payload is not looked at)
 * @byte_len: bytes the receive completion reported
 *
 * Checks the header, the type and every length and field that later code
 * relies on, so that the handlers can trust what they read.
 *
 * Return: the &enum dmaplane_wire_type, -EPROTO (unknown version, flags or
 * type) or -EBADMSG (lengths or fields inconsistent).
 */
int dmaplane_wire_check(const void *buf, u32 byte_len)
{
	const struct dmaplane_wire_hdr *h = buf;
	const void *body = buf + sizeof(*h);
	u32 len;
	int ret;

	if (byte_len < sizeof(*h) || byte_len > DMAPLANE_WIRE_BUF_SIZE)
		return -EBADMSG;
	if (h->version != DMAPLANE_WIRE_VERSION || h->flags ||
	    !h->type || h->type >= __DMAPLANE_WIRE_MAX)
		return -EPROTO;
	len = le32_to_cpu(h->len);
	if (len != byte_len - sizeof(*h))
		return -EBADMSG;
	if (h->type != DMAPLANE_WIRE_EAGER && byte_len > DMAPLANE_WIRE_CTRL_MAX)
		return -EBADMSG;
	/* Requests are numbered, ACKs are not. */
	if (h->type == DMAPLANE_WIRE_ACK ? h->seq != 0 : h->seq == 0)
		return -EBADMSG;

	switch (h->type) {
	case DMAPLANE_WIRE_EAGER:
		ret = len >= sizeof(struct dmaplane_wire_msg) ?
		      check_msg(body, len, true) : -EBADMSG;
		break;
	case DMAPLANE_WIRE_RTS:
		ret = check_rts(body, len);
		break;
	case DMAPLANE_WIRE_FIN: {
		const struct dmaplane_wire_fin *f = body;

		ret = len == sizeof(*f) && wire_status_ok(f->status) && !f->pad ?
		      0 : -EBADMSG;
		break;
	}
	case DMAPLANE_WIRE_RMA_REQ:
		ret = check_rma(body, len);
		break;
	case DMAPLANE_WIRE_RESOLVE:
	case DMAPLANE_WIRE_RESOLVED: {
		const struct dmaplane_wire_resolve *r = body;

		ret = len == sizeof(*r) && wire_status_ok(r->status) &&
		      (h->type == DMAPLANE_WIRE_RESOLVED || !r->status) ?
		      0 : -EBADMSG;
		break;
	}
	case DMAPLANE_WIRE_ACK:
		ret = check_ack(body, len);
		break;
	case DMAPLANE_WIRE_PING:
		ret = len ? -EBADMSG : 0;
		break;
	default: {
		const struct dmaplane_wire_cancel *k = body;

		ret = len == sizeof(*k) && le64_to_cpu(k->cookie) <= U32_MAX ? 0 : -EBADMSG;
		break;
	}
	}
	return ret ? ret : h->type;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_wire_check);

/**
 * dmaplane_credits_init() - a connection starts
 * @c: accounting
 * @max: credits the peer granted
 */
void dmaplane_credits_init(struct dmaplane_credits *c, u32 max)
{
	c->avail = max;
	c->owed = 0;
	c->max = max;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_credits_init);

/**
 * dmaplane_credits_take() - take a credit to send a request
 * @c: accounting
 *
 * Return: true when the request may go out now, false when it must wait
 * for an ACK.
 */
bool dmaplane_credits_take(struct dmaplane_credits *c)
{
	if (!c->avail)
		return false;
	c->avail--;
	return true;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_credits_take);

/**
 * dmaplane_credits_return() - the peer gave credits back
 * @c: accounting
 * @n: &dmaplane_wire_ack.credits
 *
 * Return: 0, or -EPROTO when the peer gives back more than it was given
 * (a broken or malicious peer: drop the connection).
 */
int dmaplane_credits_return(struct dmaplane_credits *c, u32 n)
{
	if (n > c->max - c->avail)
		return -EPROTO;
	c->avail += n;
	return 0;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_credits_return);

/**
 * dmaplane_credits_consumed() - a request of the peer was consumed and
 *	its buffer posted again: one credit is owed to the peer
 * @c: accounting
 */
void dmaplane_credits_consumed(struct dmaplane_credits *c)
{
	c->owed++;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_credits_consumed);

/**
 * dmaplane_credits_owed() - take the credits owed, to send them in an ACK
 * @c: accounting
 *
 * Return: the credits owed to the peer (now zero).
 */
u32 dmaplane_credits_owed(struct dmaplane_credits *c)
{
	u32 n = c->owed;

	c->owed = 0;
	return n;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_credits_owed);

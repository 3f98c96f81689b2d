/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * dmaplane wire format between two nodes (ib.c).
 *
 * One reliable connection (RC) per pair of nodes carries every message
 * between their endpoints.  Each side posts DMAPLANE_WIRE_RECVS receive
 * buffers of DMAPLANE_WIRE_BUF_SIZE bytes: DMAPLANE_WIRE_CREDITS of them
 * for requests, the rest for acknowledgements.  A request (every type but
 * ACK) costs the sender one credit; the receiver gives credits back in
 * ACK messages once it has consumed the requests, so a SEND always finds
 * a posted buffer (no receiver-not-ready, ever).  ACKs cost no credit: a
 * node sends at most one per request it received, so at most
 * DMAPLANE_WIRE_CREDITS of them are ever in flight.
 *
 * Every integer is little endian.  Every message starts with a
 * &struct dmaplane_wire_hdr whose @len is the number of bytes after it;
 * a receiver checks the type, the version and every length against the
 * bytes that arrived before it looks further, and drops the connection
 * (counting it) on anything malformed or unknown.
 *
 * Also included by user-space tests (a malicious peer), hence only uapi
 * types here.
 */
#ifndef _DMAPLANE_IB_WIRE_H
#define _DMAPLANE_IB_WIRE_H

#include <linux/types.h>

#define DMAPLANE_WIRE_MAGIC	0x4c504d44	/* "DMPL" */
#define DMAPLANE_WIRE_VERSION	4
/*
 * A receive buffer is two pieces: the first DMAPLANE_WIRE_HDR_BYTES
 * (header + &struct dmaplane_wire_msg) and DMAPLANE_WIRE_EAGER_MAX bytes
 * for an eager payload, so that a default-sized eager message (16 KiB)
 * fits in one page-aligned order-2 block.  Messages of every other type
 * are at most DMAPLANE_WIRE_CTRL_MAX bytes.
 */
#define DMAPLANE_WIRE_HDR_BYTES	72
#define DMAPLANE_WIRE_EAGER_MAX	16384
#define DMAPLANE_WIRE_BUF_SIZE	(DMAPLANE_WIRE_HDR_BYTES + DMAPLANE_WIRE_EAGER_MAX)
#define DMAPLANE_WIRE_CTRL_MAX	2048
#define DMAPLANE_WIRE_CREDITS	32
#define DMAPLANE_WIRE_RECVS	(2 * DMAPLANE_WIRE_CREDITS)
/* Segments of a rendezvous sender's buffer, each with its own rkey. */
#define DMAPLANE_WIRE_MAX_SEGS	64

/**
 * struct dmaplane_wire_cm - rdma_cm private data of CONNECT and ACCEPT
 * @magic: %DMAPLANE_WIRE_MAGIC
 * @version: %DMAPLANE_WIRE_VERSION
 * @pad: zero
 * @node_id: the sending node's &dmaplane_name.node_id
 * @credits: requests the sender may have outstanding towards this node
 *	(%DMAPLANE_WIRE_CREDITS)
 * @buf_size: size of each posted receive buffer
 */
struct dmaplane_wire_cm {
	__le32 magic;
	__u8 version;
	__u8 pad[3];
	__le64 node_id;
	__le32 credits;
	__le32 buf_size;
};

/**
 * enum dmaplane_wire_type - message types
 * @DMAPLANE_WIRE_EAGER: request: &struct dmaplane_wire_msg + the payload
 * @DMAPLANE_WIRE_RTS: request: &struct dmaplane_wire_msg +
 *	&struct dmaplane_wire_rts: a large message, to be pulled with RDMA
 *	READ from the segments described
 * @DMAPLANE_WIRE_FIN: request: &struct dmaplane_wire_fin: the receiver
 *	pulled a rendezvous message (or failed to); its sender completes
 * @DMAPLANE_WIRE_RMA_REQ: request: &struct dmaplane_wire_rma +
 *	&struct dmaplane_wire_seglist: PUT/GET.  The initiator registered
 *	its own buffer and describes it; the target checks key, owner,
 *	access and bounds, then moves the data itself with RDMA READ (PUT)
 *	or RDMA WRITE (GET) between the region's pages and those segments,
 *	and answers with a FIN.  The target never hands out device keys
 *	of its memory.
 * @DMAPLANE_WIRE_RESOLVE: request: &struct dmaplane_wire_resolve: does
 *	this endpoint exist, in the asker's security domain? (AV_INSERT)
 * @DMAPLANE_WIRE_RESOLVED: request: &struct dmaplane_wire_resolve, the
 *	answer
 * @DMAPLANE_WIRE_ACK: &struct dmaplane_wire_ack: requests consumed, their
 *	credits returned, and the failed eager and rendezvous deliveries
 * @DMAPLANE_WIRE_CANCEL: request: &struct dmaplane_wire_cancel: the sender
 *	of an RTS withdraws it (its endpoint closed).  If no receive has
 *	matched it yet, the receiver answers with a FIN (-ECONNRESET) at
 *	once and a receive that matches it later completes with
 *	-ECONNRESET, as on one node; otherwise the pull goes on and its FIN
 *	follows.  A CANCEL that crossed the FIN names a cookie the receiver
 *	no longer knows, and is ignored.
 * @DMAPLANE_WIRE_PING: request, empty: sent when operations wait for the
 *	peer and nothing arrived from it for a while, so that the reliable
 *	connection retries it and finds out if the peer is gone; answered
 *	by the ACK that gives its credit back
 * @__DMAPLANE_WIRE_MAX: internal
 */
enum dmaplane_wire_type {
	DMAPLANE_WIRE_EAGER = 1,
	DMAPLANE_WIRE_RTS,
	DMAPLANE_WIRE_FIN,
	DMAPLANE_WIRE_RMA_REQ,
	DMAPLANE_WIRE_RESOLVE,
	DMAPLANE_WIRE_RESOLVED,
	DMAPLANE_WIRE_ACK,
	DMAPLANE_WIRE_CANCEL,
	DMAPLANE_WIRE_PING,
	__DMAPLANE_WIRE_MAX,
};

/**
 * struct dmaplane_wire_hdr - start of every message
 * @type: &enum dmaplane_wire_type
 * @version: %DMAPLANE_WIRE_VERSION
 * @flags: zero
 * @len: bytes following this header
 * @seq: requests: 1, 2, 3, ... on each direction of a connection;
 *	ACK: zero
 */
struct dmaplane_wire_hdr {
	__u8 type;
	__u8 version;
	__le16 flags;
	__le32 len;
	__le64 seq;
};

/**
 * struct dmaplane_wire_msg - EAGER and RTS: a tagged message
 * @src: the sender's ep_uid (below 2^%DMAPLANE_SRC_NODE_SHIFT)
 * @dst: the receiver's ep_uid
 * @tag: tag
 * @msg_len: length of the message; EAGER: the payload that follows
 * @auth_key: the sender's auth key (0: none)
 * @data: remote completion data, with %DMAPLANE_WIRE_MSG_DATA; else zero
 * @uid: the sender's uid, in the initial user namespace
 * @flags: %DMAPLANE_WIRE_MSG_DATA or zero
 */
struct dmaplane_wire_msg {
	__le64 src;
	__le64 dst;
	__le64 tag;
	__le64 msg_len;
	__le64 auth_key;
	__le64 data;
	__le32 uid;
	__le32 flags;
};

/* &dmaplane_wire_msg.flags: the message carries remote completion data. */
#define DMAPLANE_WIRE_MSG_DATA	1

/**
 * struct dmaplane_wire_seg - a piece of registered memory
 * @addr: address in the rkey's space
 * @rkey: remote key of the device
 * @len: bytes
 */
struct dmaplane_wire_seg {
	__le64 addr;
	__le32 rkey;
	__le32 len;
};

/**
 * struct dmaplane_wire_rts - follows &struct dmaplane_wire_msg in an RTS
 * @cookie: the sender's handle of the send, echoed in the FIN; below 2^32,
 *	and never the cookie of another RTS the receiver still holds
 * @nsegs: 1 .. %DMAPLANE_WIRE_MAX_SEGS segments follow; their lengths
 *	add up to &dmaplane_wire_msg.msg_len
 * @pad: zero
 * @segs: the segments
 */
struct dmaplane_wire_rts {
	__le64 cookie;
	__le32 nsegs;
	__le32 pad;
	struct dmaplane_wire_seg segs[];
};

/**
 * struct dmaplane_wire_fin - the receiver of an RTS or the target of an
 *	RMA_REQ is done with the initiator's buffer
 * @cookie: &dmaplane_wire_rts.cookie or &dmaplane_wire_rma.cookie
 * @status: 0, or a negative errno for the sender's completion
 * @pad: zero
 */
struct dmaplane_wire_fin {
	__le64 cookie;
	__le32 status;
	__le32 pad;
};

/**
 * struct dmaplane_wire_cancel - the sender withdraws an RTS
 * @cookie: &dmaplane_wire_rts.cookie
 */
struct dmaplane_wire_cancel {
	__le64 cookie;
};

/**
 * struct dmaplane_wire_rma - PUT/GET request; a seglist follows
 * @cookie: the initiator's handle, echoed in the FIN
 * @src: the initiator's ep_uid
 * @dst: the target's ep_uid
 * @rkey: dmaplane remote key of the target's region
 * @roffset: offset in the region
 * @len: bytes; the segments that follow add up to it
 * @auth_key: the initiator's auth key
 * @uid: the initiator's uid
 * @write: 1 for PUT (data goes to the target), 0 for GET
 * @flags: %DMAPLANE_WIRE_RMA_DATA (PUT only) or zero
 * @pad: zero
 * @data: remote completion data for the target, with
 *	%DMAPLANE_WIRE_RMA_DATA; else zero
 */
struct dmaplane_wire_rma {
	__le64 cookie;
	__le64 src;
	__le64 dst;
	__le64 rkey;
	__le64 roffset;
	__le64 len;
	__le64 auth_key;
	__le32 uid;
	__u8 write;
	__u8 flags;
	__u8 pad[2];
	__le64 data;
};

/* A PUT whose target completes too (DMAPLANE_OP_F_DATA) */
#define DMAPLANE_WIRE_RMA_DATA	1

/**
 * struct dmaplane_wire_seglist - the initiator's buffer of an RMA_REQ
 * @nsegs: 0 .. %DMAPLANE_WIRE_MAX_SEGS segments follow (0 only when the
 *	length is 0)
 * @pad: zero
 * @segs: the segments
 */
struct dmaplane_wire_seglist {
	__le32 nsegs;
	__le32 pad;
	struct dmaplane_wire_seg segs[];
};

/**
 * struct dmaplane_wire_resolve - RESOLVE and RESOLVED
 * @cookie: the asker's handle, echoed
 * @ep_uid: the endpoint asked about
 * @auth_key: the asker's auth key
 * @uid: the asker's uid
 * @status: RESOLVED: 0, -ECONNREFUSED or -EACCES; RESOLVE: zero
 */
struct dmaplane_wire_resolve {
	__le64 cookie;
	__le64 ep_uid;
	__le64 auth_key;
	__le32 uid;
	__le32 status;
};

/**
 * struct dmaplane_wire_nack - a request that failed at its receiver
 * @seq: &dmaplane_wire_hdr.seq of the EAGER or RTS request
 * @status: the negative errno its sender completes with
 * @pad: zero
 */
struct dmaplane_wire_nack {
	__le64 seq;
	__le32 status;
	__le32 pad;
};

/**
 * struct dmaplane_wire_ack - requests consumed by the receiver
 * @consumed: every request up to this seq was consumed; EAGER messages
 *	among them are delivered or queued unless listed in @nacks
 * @credits: credits given back (one per request consumed)
 * @nnacks: entries in @nacks, at most %DMAPLANE_WIRE_CREDITS
 * @nacks: failed EAGER and RTS requests
 */
struct dmaplane_wire_ack {
	__le64 consumed;
	__le32 credits;
	__le32 nnacks;
	struct dmaplane_wire_nack nacks[];
};

#ifdef __KERNEL__
int dmaplane_wire_check(const void *buf, u32 byte_len);

/**
 * struct dmaplane_credits - credit accounting of one connection
 * @avail: requests this side may still send
 * @owed: requests consumed whose credits are not given back yet
 * @max: credits the peer granted at connection time
 */
struct dmaplane_credits {
	u32 avail;
	u32 owed;
	u32 max;
};

void dmaplane_credits_init(struct dmaplane_credits *c, u32 max);
bool dmaplane_credits_take(struct dmaplane_credits *c);
int dmaplane_credits_return(struct dmaplane_credits *c, u32 n);
void dmaplane_credits_consumed(struct dmaplane_credits *c);
u32 dmaplane_credits_owed(struct dmaplane_credits *c);
#endif

#endif /* _DMAPLANE_IB_WIRE_H */

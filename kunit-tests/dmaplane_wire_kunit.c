// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the wire format between dmaplane nodes (kmod/ib_wire.c):
 * dmaplane_wire_check() accepts the minimal and maximal form of every
 * message type and rejects each malformed variant with the exact errno,
 * and the credit accounting gives out, takes back and owes credits.
 *
 * Each message is built in a scratch buffer, altered as the table says
 * and copied into an allocation of exactly the length passed as byte_len,
 * so that KASAN reports any read beyond the bytes that "arrived".
 */
#include <kunit/test.h>
#include <linux/errno.h>
#include <linux/limits.h>
#include <linux/slab.h>
#include <linux/string.h>

#include "../kmod/dmaplane.h"
#include "../kmod/ib_wire.h"

MODULE_IMPORT_NS(DMAPLANE_NS(DMAPLANE_KUNIT));

#define HSZ		sizeof(struct dmaplane_wire_hdr)
#define MSZ		sizeof(struct dmaplane_wire_msg)
#define SEGSZ		sizeof(struct dmaplane_wire_seg)
#define NACKSZ		sizeof(struct dmaplane_wire_nack)
#define SCRATCH		(2 * DMAPLANE_WIRE_BUF_SIZE)
#define UID_LIMIT	BIT_ULL(DMAPLANE_SRC_NODE_SHIFT)

/* Offsets of fields in a message, header included. */
#define HDR(f)		offsetof(struct dmaplane_wire_hdr, f)
#define BODY(s, f)	(HSZ + offsetof(struct s, f))
#define MSG(f)		BODY(dmaplane_wire_msg, f)
#define RTS(f)		(HSZ + MSZ + offsetof(struct dmaplane_wire_rts, f))
#define SEG(i, f)	(RTS(segs) + (i) * SEGSZ + offsetof(struct dmaplane_wire_seg, f))
#define FIN(f)		BODY(dmaplane_wire_fin, f)
#define RMA(f)		BODY(dmaplane_wire_rma, f)
#define RMASZ		sizeof(struct dmaplane_wire_rma)
#define SL(f)		(HSZ + RMASZ + offsetof(struct dmaplane_wire_seglist, f))
#define RSEG(i, f)	(SL(segs) + (i) * SEGSZ + offsetof(struct dmaplane_wire_seg, f))
#define RES(f)		BODY(dmaplane_wire_resolve, f)
#define ACK(f)		BODY(dmaplane_wire_ack, f)
#define NACK(i, f)	(ACK(nacks) + (i) * NACKSZ + offsetof(struct dmaplane_wire_nack, f))
#define CANCEL(f)	BODY(dmaplane_wire_cancel, f)

/* A field overwritten after the message was built. */
struct wire_poke {
	u16 off;
	u8 size;	/* 1, 2, 4 or 8 bytes; 0: no poke */
	u64 val;	/* little endian on the wire */
};

#define P8(o, v)	{ .off = (o), .size = 1, .val = (u64)(v) }
#define P16(o, v)	{ .off = (o), .size = 2, .val = (u64)(v) }
#define P32(o, v)	{ .off = (o), .size = 4, .val = (u64)(v) }
#define P64(o, v)	{ .off = (o), .size = 8, .val = (u64)(v) }

/**
 * struct wire_case - one message and the verdict expected
 * @name: description
 * @type: type of the valid message built first
 * @n: EAGER: payload bytes; RTS, RMA_REQ: segments; ACK: nacks
 * @seg_len: RTS, RMA_REQ: bytes of each segment (0: 1)
 * @extra: bytes added to (or, negative, cut from) the end of the body;
 *	the header's len follows
 * @len_delta: added to byte_len only: header and bytes disagree
 * @set_len: pass @byte_len, whatever was built
 * @byte_len: see @set_len
 * @poke: fields changed after building
 * @want: 0: accepted (dmaplane_wire_check() returns @type), else the errno
 */
struct wire_case {
	const char *name;
	u8 type;
	u32 n;
	u32 seg_len;
	int extra;
	int len_delta;
	bool set_len;
	u32 byte_len;
	struct wire_poke poke[2];
	int want;
};

#define WT(t)	DMAPLANE_WIRE_##t
#define BAD	(-EBADMSG)
#define PROTO	(-EPROTO)

static const struct wire_case wire_cases[] = {
	/* Every type, minimal and maximal forms: accepted. */
	{ "eager empty", WT(EAGER) },
	{ "eager one byte", WT(EAGER), .n = 1 },
	{ "eager filling the buffer", WT(EAGER), .n = DMAPLANE_WIRE_EAGER_MAX },
	{ "eager largest src and dst", WT(EAGER),
	  .poke = { P64(MSG(src), UID_LIMIT - 1), P64(MSG(dst), UID_LIMIT - 1) } },
	{ "eager any tag, auth key, uid", WT(EAGER),
	  .poke = { P64(MSG(tag), U64_MAX), P64(MSG(auth_key), U64_MAX) } },
	{ "eager largest seq", WT(EAGER), .poke = { P64(HDR(seq), U64_MAX) } },
	{ "rts one segment", WT(RTS), .n = 1 },
	{ "rts max segments of 4 GiB - 1", WT(RTS), .n = DMAPLANE_WIRE_MAX_SEGS,
	  .seg_len = U32_MAX },
	{ "rts largest src and dst", WT(RTS), .n = 2,
	  .poke = { P64(MSG(src), UID_LIMIT - 1), P64(MSG(dst), UID_LIMIT - 1) } },
	{ "fin status 0", WT(FIN) },
	{ "fin status -EIO", WT(FIN), .poke = { P32(FIN(status), -EIO) } },
	{ "fin status -MAX_ERRNO", WT(FIN), .poke = { P32(FIN(status), -MAX_ERRNO) } },
	{ "rma_req put, one segment", WT(RMA_REQ), .n = 1 },
	{ "rma_req get, one segment", WT(RMA_REQ), .n = 1, .poke = { P8(RMA(write), 0) } },
	{ "rma_req 0 segments, len 0", WT(RMA_REQ), .n = 0 },
	{ "rma_req max segments of 4 GiB - 1", WT(RMA_REQ), .n = DMAPLANE_WIRE_MAX_SEGS,
	  .seg_len = U32_MAX },
	{ "rma_req any rkey, offset", WT(RMA_REQ), .n = 1,
	  .poke = { P64(RMA(rkey), U64_MAX), P64(RMA(roffset), U64_MAX) } },
	{ "rma_req any auth key, uid", WT(RMA_REQ), .n = 1,
	  .poke = { P64(RMA(auth_key), U64_MAX), P32(RMA(uid), U32_MAX) } },
	{ "rma_req largest src and dst", WT(RMA_REQ), .n = 1,
	  .poke = { P64(RMA(src), UID_LIMIT - 1), P64(RMA(dst), UID_LIMIT - 1) } },
	{ "rma_req put with data", WT(RMA_REQ), .n = 1,
	  .poke = { P8(RMA(flags), DMAPLANE_WIRE_RMA_DATA), P64(RMA(data), U64_MAX) } },
	{ "rma_req put with data 0", WT(RMA_REQ), .n = 1,
	  .poke = { P8(RMA(flags), DMAPLANE_WIRE_RMA_DATA) } },
	{ "rma_req any segment addr and rkey", WT(RMA_REQ), .n = 1,
	  .poke = { P64(RSEG(0, addr), U64_MAX), P32(RSEG(0, rkey), U32_MAX) } },
	{ "resolve", WT(RESOLVE) },
	{ "resolved 0", WT(RESOLVED) },
	{ "resolved -ECONNREFUSED", WT(RESOLVED),
	  .poke = { P32(RES(status), -ECONNREFUSED) } },
	{ "resolved -EACCES", WT(RESOLVED), .poke = { P32(RES(status), -EACCES) } },
	{ "ack without nacks", WT(ACK) },
	{ "ack all credits, max nacks", WT(ACK), .n = DMAPLANE_WIRE_CREDITS,
	  .poke = { P32(ACK(credits), DMAPLANE_WIRE_CREDITS) } },
	{ "ack nack -MAX_ERRNO", WT(ACK), .n = 1,
	  .poke = { P32(NACK(0, status), -MAX_ERRNO) } },
	{ "cancel", WT(CANCEL) },
	{ "ping", WT(PING) },
	{ "ping largest seq", WT(PING), .poke = { P64(HDR(seq), U64_MAX) } },
	{ "cancel cookie 0", WT(CANCEL), .poke = { P64(CANCEL(cookie), 0) } },
	{ "cancel cookie 2^32 - 1", WT(CANCEL), .poke = { P64(CANCEL(cookie), U32_MAX) } },
	{ "rts cookie 2^32 - 1", WT(RTS), .n = 1, .poke = { P64(RTS(cookie), U32_MAX) } },

	/* Short and oversized buffers. */
	{ "0 bytes", WT(EAGER), .set_len = true, .byte_len = 0, .want = BAD },
	{ "1 byte", WT(EAGER), .set_len = true, .byte_len = 1, .want = BAD },
	{ "header - 1 bytes", WT(EAGER), .set_len = true, .byte_len = HSZ - 1, .want = BAD },
	{ "ack header - 1 bytes", WT(ACK), .set_len = true, .byte_len = HSZ - 1, .want = BAD },
	{ "eager buffer size + 1", WT(EAGER), .n = DMAPLANE_WIRE_EAGER_MAX + 1, .want = BAD },
	{ "ack buffer size + 1", WT(ACK), .extra = DMAPLANE_WIRE_BUF_SIZE - HSZ - 16 + 1,
	  .want = BAD },

	/* Every type but EAGER: at most DMAPLANE_WIRE_CTRL_MAX bytes. */
	{ "eager CTRL_MAX + 1 bytes", WT(EAGER), .n = DMAPLANE_WIRE_CTRL_MAX + 1 - HSZ - MSZ },
	{ "fin CTRL_MAX + 1 bytes", WT(FIN),
	  .extra = DMAPLANE_WIRE_CTRL_MAX + 1 - HSZ - 16, .want = BAD },
	{ "rts CTRL_MAX + 1 bytes", WT(RTS), .n = 1,
	  .extra = DMAPLANE_WIRE_CTRL_MAX + 1 - HSZ - MSZ - 16 - SEGSZ, .want = BAD },
	{ "rma_req CTRL_MAX + 1 bytes", WT(RMA_REQ), .n = 1,
	  .extra = DMAPLANE_WIRE_CTRL_MAX + 1 - HSZ - RMASZ - 8 - SEGSZ, .want = BAD },
	{ "rma_req buffer size", WT(RMA_REQ), .n = 1,
	  .extra = DMAPLANE_WIRE_BUF_SIZE - HSZ - RMASZ - 8 - SEGSZ, .want = BAD },
	{ "resolve CTRL_MAX + 1 bytes", WT(RESOLVE),
	  .extra = DMAPLANE_WIRE_CTRL_MAX + 1 - HSZ - 32, .want = BAD },
	{ "resolved CTRL_MAX + 1 bytes", WT(RESOLVED),
	  .extra = DMAPLANE_WIRE_CTRL_MAX + 1 - HSZ - 32, .want = BAD },
	{ "ack CTRL_MAX + 1 bytes", WT(ACK), .extra = DMAPLANE_WIRE_CTRL_MAX + 1 - HSZ - 16,
	  .want = BAD },
	{ "ack 0 nacks padded to CTRL_MAX + 16", WT(ACK),
	  .extra = DMAPLANE_WIRE_CTRL_MAX, .want = BAD },

	/* Header. */
	{ "version 0", WT(EAGER), .poke = { P8(HDR(version), 0) }, .want = PROTO },
	{ "version - 1", WT(EAGER), .poke = { P8(HDR(version), DMAPLANE_WIRE_VERSION - 1) },
	  .want = PROTO },
	{ "version + 1", WT(EAGER), .poke = { P8(HDR(version), DMAPLANE_WIRE_VERSION + 1) },
	  .want = PROTO },
	{ "cancel version - 1", WT(CANCEL),
	  .poke = { P8(HDR(version), DMAPLANE_WIRE_VERSION - 1) }, .want = PROTO },
	{ "ack version 255", WT(ACK), .poke = { P8(HDR(version), 255) }, .want = PROTO },
	{ "flags 1", WT(EAGER), .poke = { P16(HDR(flags), 1) }, .want = PROTO },
	{ "flags 0x8000", WT(FIN), .poke = { P16(HDR(flags), 0x8000) }, .want = PROTO },
	{ "ack flags 1", WT(ACK), .poke = { P16(HDR(flags), 1) }, .want = PROTO },
	{ "type 0", WT(EAGER), .poke = { P8(HDR(type), 0) }, .want = PROTO },
	{ "type __MAX", WT(EAGER), .poke = { P8(HDR(type), __DMAPLANE_WIRE_MAX) },
	  .want = PROTO },
	{ "type 255", WT(EAGER), .poke = { P8(HDR(type), 255) }, .want = PROTO },
	{ "header len + 1", WT(EAGER), .len_delta = -1, .want = BAD },
	{ "header len - 1", WT(EAGER), .n = 4, .len_delta = 1, .want = BAD },
	{ "header len 2^32 - 1", WT(FIN), .poke = { P32(HDR(len), U32_MAX) }, .want = BAD },
	{ "header len 2^32 - 16", WT(FIN), .poke = { P32(HDR(len), -HSZ) }, .want = BAD },
	{ "ack header len + 16", WT(ACK), .n = 1, .len_delta = -16, .want = BAD },
	{ "eager seq 0", WT(EAGER), .poke = { P64(HDR(seq), 0) }, .want = BAD },
	{ "rts seq 0", WT(RTS), .n = 1, .poke = { P64(HDR(seq), 0) }, .want = BAD },
	{ "fin seq 0", WT(FIN), .poke = { P64(HDR(seq), 0) }, .want = BAD },
	{ "rma_req seq 0", WT(RMA_REQ), .n = 1, .poke = { P64(HDR(seq), 0) }, .want = BAD },
	{ "resolve seq 0", WT(RESOLVE), .poke = { P64(HDR(seq), 0) }, .want = BAD },
	{ "resolved seq 0", WT(RESOLVED), .poke = { P64(HDR(seq), 0) }, .want = BAD },
	{ "cancel seq 0", WT(CANCEL), .poke = { P64(HDR(seq), 0) }, .want = BAD },
	{ "ping seq 0", WT(PING), .poke = { P64(HDR(seq), 0) }, .want = BAD },
	{ "ping flags 1", WT(PING), .poke = { P16(HDR(flags), 1) }, .want = PROTO },
	{ "ack seq 1", WT(ACK), .poke = { P64(HDR(seq), 1) }, .want = BAD },
	{ "ack seq 2^64 - 1", WT(ACK), .poke = { P64(HDR(seq), U64_MAX) }, .want = BAD },

	/* EAGER. */
	{ "eager body shorter than msg", WT(EAGER), .extra = -1, .want = BAD },
	{ "eager header only", WT(EAGER), .extra = -(int)MSZ, .want = BAD },
	{ "eager msg_len payload + 1", WT(EAGER), .n = 8,
	  .poke = { P64(MSG(msg_len), 9) }, .want = BAD },
	{ "eager msg_len payload - 1", WT(EAGER), .n = 8,
	  .poke = { P64(MSG(msg_len), 7) }, .want = BAD },
	{ "eager msg_len 2^64 - 1", WT(EAGER), .poke = { P64(MSG(msg_len), U64_MAX) },
	  .want = BAD },
	{ "eager trailing byte", WT(EAGER), .n = 8, .extra = 1, .want = BAD },
	{ "eager src 2^47", WT(EAGER), .poke = { P64(MSG(src), UID_LIMIT) }, .want = BAD },
	{ "eager dst 2^47", WT(EAGER), .poke = { P64(MSG(dst), UID_LIMIT) }, .want = BAD },
	{ "eager src 2^64 - 1", WT(EAGER), .poke = { P64(MSG(src), U64_MAX) }, .want = BAD },
	{ "eager dst 2^63", WT(EAGER), .poke = { P64(MSG(dst), BIT_ULL(63)) }, .want = BAD },
	{ "eager unknown flag", WT(EAGER), .poke = { P32(MSG(flags), 2) }, .want = BAD },
	{ "eager data without its flag", WT(EAGER), .poke = { P64(MSG(data), 1) }, .want = BAD },
	{ "eager data", WT(EAGER),
	  .poke = { P64(MSG(data), U64_MAX), P32(MSG(flags), DMAPLANE_WIRE_MSG_DATA) } },
	{ "rts data", WT(RTS), .n = 1,
	  .poke = { P64(MSG(data), 0), P32(MSG(flags), DMAPLANE_WIRE_MSG_DATA) } },

	/* RTS. */
	{ "rts without rts part", WT(RTS), .n = 1, .extra = -(int)(16 + SEGSZ), .want = BAD },
	{ "rts without segments", WT(RTS), .n = 1, .extra = -(int)SEGSZ, .want = BAD },
	{ "rts header only", WT(RTS), .n = 1, .extra = -(int)(MSZ + 16 + SEGSZ),
	  .want = BAD },
	{ "rts 0 segments", WT(RTS), .n = 0, .poke = { P64(MSG(msg_len), 1) }, .want = BAD },
	{ "rts 0 segments, msg_len 0", WT(RTS), .n = 0, .want = BAD },
	{ "rts max + 1 segments", WT(RTS), .n = DMAPLANE_WIRE_MAX_SEGS + 1, .want = BAD },
	{ "rts nsegs 2^32 - 1", WT(RTS), .n = 1, .poke = { P32(RTS(nsegs), U32_MAX) },
	  .want = BAD },
	{ "rts nsegs above segments sent", WT(RTS), .n = 1, .poke = { P32(RTS(nsegs), 2) },
	  .want = BAD },
	{ "rts nsegs below segments sent", WT(RTS), .n = 2, .poke = { P32(RTS(nsegs), 1) },
	  .want = BAD },
	{ "rts trailing byte", WT(RTS), .n = 1, .extra = 1, .want = BAD },
	{ "rts segment 0 of length 0", WT(RTS), .n = 2,
	  .poke = { P32(SEG(0, len), 0), P64(MSG(msg_len), 1) }, .want = BAD },
	{ "rts last segment of length 0", WT(RTS), .n = DMAPLANE_WIRE_MAX_SEGS,
	  .poke = { P32(SEG(DMAPLANE_WIRE_MAX_SEGS - 1, len), 0),
		    P64(MSG(msg_len), DMAPLANE_WIRE_MAX_SEGS - 1) }, .want = BAD },
	{ "rts msg_len sum + 1", WT(RTS), .n = 3, .poke = { P64(MSG(msg_len), 4) },
	  .want = BAD },
	{ "rts msg_len sum - 1", WT(RTS), .n = 3, .poke = { P64(MSG(msg_len), 2) },
	  .want = BAD },
	{ "rts msg_len 0", WT(RTS), .n = 1, .poke = { P64(MSG(msg_len), 0) }, .want = BAD },
	{ "rts msg_len sum modulo 2^32", WT(RTS), .n = 2, .seg_len = U32_MAX,
	  .poke = { P64(MSG(msg_len), (u32)(2ULL * U32_MAX)) }, .want = BAD },
	{ "rts src 2^47", WT(RTS), .n = 1, .poke = { P64(MSG(src), UID_LIMIT) }, .want = BAD },
	{ "rts dst 2^47", WT(RTS), .n = 1, .poke = { P64(MSG(dst), UID_LIMIT) }, .want = BAD },
	{ "rts msg flag 2^31", WT(RTS), .n = 1, .poke = { P32(MSG(flags), 0x80000000) },
	  .want = BAD },
	{ "rts pad", WT(RTS), .n = 1, .poke = { P32(RTS(pad), 1) }, .want = BAD },

	/* Fixed sizes: one byte short or long, header only. */
	{ "fin - 1", WT(FIN), .extra = -1, .want = BAD },
	{ "fin + 1", WT(FIN), .extra = 1, .want = BAD },
	{ "fin header only", WT(FIN), .extra = -(int)sizeof(struct dmaplane_wire_fin),
	  .want = BAD },
	{ "rma_req - 1", WT(RMA_REQ), .n = 1, .extra = -1, .want = BAD },
	{ "rma_req + 1", WT(RMA_REQ), .n = 1, .extra = 1, .want = BAD },
	{ "rma_req 0 segments - 1", WT(RMA_REQ), .extra = -1, .want = BAD },
	{ "rma_req 0 segments + 1", WT(RMA_REQ), .extra = 1, .want = BAD },
	{ "resolve - 1", WT(RESOLVE), .extra = -1, .want = BAD },
	{ "resolve + 1", WT(RESOLVE), .extra = 1, .want = BAD },
	{ "resolved - 1", WT(RESOLVED), .extra = -1, .want = BAD },
	{ "resolved + 1", WT(RESOLVED), .extra = 1, .want = BAD },
	{ "ack header only", WT(ACK), .extra = -16, .want = BAD },
	{ "ack - 1", WT(ACK), .extra = -1, .want = BAD },
	{ "ack + 1", WT(ACK), .extra = 1, .want = BAD },
	{ "ack with nack - 1", WT(ACK), .n = 1, .extra = -1, .want = BAD },
	{ "cancel header only", WT(CANCEL), .extra = -8, .want = BAD },
	{ "cancel - 1", WT(CANCEL), .extra = -1, .want = BAD },
	{ "cancel + 1", WT(CANCEL), .extra = 1, .want = BAD },
	{ "cancel + 8", WT(CANCEL), .extra = 8, .want = BAD },
	{ "ping + 1", WT(PING), .extra = 1, .want = BAD },
	{ "ping + 8", WT(PING), .extra = 8, .want = BAD },
	{ "ping CTRL_MAX + 1 bytes", WT(PING), .extra = DMAPLANE_WIRE_CTRL_MAX + 1 - HSZ,
	  .want = BAD },
	{ "cancel CTRL_MAX + 1 bytes", WT(CANCEL), .extra = DMAPLANE_WIRE_CTRL_MAX + 1 - HSZ - 8,
	  .want = BAD },

	/* Cookies that can only be ours are below 2^32. */
	{ "cancel cookie 2^32", WT(CANCEL), .poke = { P64(CANCEL(cookie), BIT_ULL(32)) },
	  .want = BAD },
	{ "cancel cookie 2^64 - 1", WT(CANCEL), .poke = { P64(CANCEL(cookie), U64_MAX) },
	  .want = BAD },
	{ "rts cookie 2^32", WT(RTS), .n = 1, .poke = { P64(RTS(cookie), BIT_ULL(32)) },
	  .want = BAD },

	/* Statuses and pads of FIN, RESOLVE(D). */
	{ "fin status 1", WT(FIN), .poke = { P32(FIN(status), 1) }, .want = BAD },
	{ "fin status INT_MAX", WT(FIN), .poke = { P32(FIN(status), INT_MAX) }, .want = BAD },
	{ "fin status -MAX_ERRNO - 1", WT(FIN),
	  .poke = { P32(FIN(status), -MAX_ERRNO - 1) }, .want = BAD },
	{ "fin status INT_MIN", WT(FIN), .poke = { P32(FIN(status), INT_MIN) }, .want = BAD },
	{ "fin pad", WT(FIN), .poke = { P32(FIN(pad), 1) }, .want = BAD },
	{ "resolve status -ECONNREFUSED", WT(RESOLVE),
	  .poke = { P32(RES(status), -ECONNREFUSED) }, .want = BAD },
	{ "resolve status 1", WT(RESOLVE), .poke = { P32(RES(status), 1) }, .want = BAD },
	{ "resolved status 1", WT(RESOLVED), .poke = { P32(RES(status), 1) }, .want = BAD },
	{ "resolved status -MAX_ERRNO - 1", WT(RESOLVED),
	  .poke = { P32(RES(status), -MAX_ERRNO - 1) }, .want = BAD },

	/* RMA_REQ. */
	{ "rma_req write 2", WT(RMA_REQ), .n = 1, .poke = { P8(RMA(write), 2) }, .want = BAD },
	{ "rma_req write 255", WT(RMA_REQ), .n = 1, .poke = { P8(RMA(write), 255) },
	  .want = BAD },
	{ "rma_req pad[0]", WT(RMA_REQ), .n = 1, .poke = { P8(RMA(pad), 1) }, .want = BAD },
	{ "rma_req unknown flag", WT(RMA_REQ), .n = 1, .poke = { P8(RMA(flags), 2) },
	  .want = BAD },
	{ "rma_req get with data", WT(RMA_REQ), .n = 1,
	  .poke = { P8(RMA(write), 0), P8(RMA(flags), DMAPLANE_WIRE_RMA_DATA) }, .want = BAD },
	{ "rma_req data without its flag", WT(RMA_REQ), .n = 1, .poke = { P64(RMA(data), 1) },
	  .want = BAD },
	{ "rma_req pad[1]", WT(RMA_REQ), .n = 1, .poke = { P8(RMA(pad) + 1, 0x80) },
	  .want = BAD },
	{ "rma_req src 2^47", WT(RMA_REQ), .n = 1, .poke = { P64(RMA(src), UID_LIMIT) },
	  .want = BAD },
	{ "rma_req dst 2^47", WT(RMA_REQ), .n = 1, .poke = { P64(RMA(dst), UID_LIMIT) },
	  .want = BAD },
	{ "rma_req src 2^64 - 1", WT(RMA_REQ), .n = 0, .poke = { P64(RMA(src), U64_MAX) },
	  .want = BAD },
	{ "rma_req dst 2^63", WT(RMA_REQ), .n = 0, .poke = { P64(RMA(dst), BIT_ULL(63)) },
	  .want = BAD },
	{ "rma_req without seglist", WT(RMA_REQ), .n = 1, .extra = -(int)(8 + SEGSZ),
	  .want = BAD },
	{ "rma_req seglist header only, 1 segment claimed", WT(RMA_REQ), .n = 1,
	  .extra = -(int)SEGSZ, .want = BAD },
	{ "rma_req header only", WT(RMA_REQ), .n = 1, .extra = -(int)(RMASZ + 8 + SEGSZ),
	  .want = BAD },
	{ "rma_req seglist pad", WT(RMA_REQ), .n = 1, .poke = { P32(SL(pad), 1) },
	  .want = BAD },
	{ "rma_req 0 segments, len 1", WT(RMA_REQ), .n = 0, .poke = { P64(RMA(len), 1) },
	  .want = BAD },
	{ "rma_req 0 segments, len 2^64 - 1", WT(RMA_REQ), .n = 0,
	  .poke = { P64(RMA(len), U64_MAX) }, .want = BAD },
	{ "rma_req max + 1 segments", WT(RMA_REQ), .n = DMAPLANE_WIRE_MAX_SEGS + 1,
	  .want = BAD },
	{ "rma_req nsegs 2^32 - 1", WT(RMA_REQ), .n = 1,
	  .poke = { P32(SL(nsegs), U32_MAX) }, .want = BAD },
	{ "rma_req nsegs above segments sent", WT(RMA_REQ), .n = 1,
	  .poke = { P32(SL(nsegs), 2) }, .want = BAD },
	{ "rma_req nsegs below segments sent", WT(RMA_REQ), .n = 2,
	  .poke = { P32(SL(nsegs), 1) }, .want = BAD },
	{ "rma_req nsegs 0, one segment sent", WT(RMA_REQ), .n = 1,
	  .poke = { P32(SL(nsegs), 0), P64(RMA(len), 0) }, .want = BAD },
	{ "rma_req segment 0 of length 0", WT(RMA_REQ), .n = 2,
	  .poke = { P32(RSEG(0, len), 0), P64(RMA(len), 1) }, .want = BAD },
	{ "rma_req last segment of length 0", WT(RMA_REQ), .n = DMAPLANE_WIRE_MAX_SEGS,
	  .poke = { P32(RSEG(DMAPLANE_WIRE_MAX_SEGS - 1, len), 0),
		    P64(RMA(len), DMAPLANE_WIRE_MAX_SEGS - 1) }, .want = BAD },
	{ "rma_req len sum + 1", WT(RMA_REQ), .n = 3, .poke = { P64(RMA(len), 4) },
	  .want = BAD },
	{ "rma_req len sum - 1", WT(RMA_REQ), .n = 3, .poke = { P64(RMA(len), 2) },
	  .want = BAD },
	{ "rma_req len 0, one segment", WT(RMA_REQ), .n = 1, .poke = { P64(RMA(len), 0) },
	  .want = BAD },
	{ "rma_req len sum modulo 2^32", WT(RMA_REQ), .n = 2, .seg_len = U32_MAX,
	  .poke = { P64(RMA(len), (u32)(2ULL * U32_MAX)) }, .want = BAD },

	/* ACK. */
	{ "ack credits + 1", WT(ACK), .poke = { P32(ACK(credits), DMAPLANE_WIRE_CREDITS + 1) },
	  .want = BAD },
	{ "ack credits 2^32 - 1", WT(ACK), .poke = { P32(ACK(credits), U32_MAX) }, .want = BAD },
	{ "ack nnacks credits + 1", WT(ACK), .n = DMAPLANE_WIRE_CREDITS + 1, .want = BAD },
	{ "ack nnacks 2^32 - 1", WT(ACK), .poke = { P32(ACK(nnacks), U32_MAX) }, .want = BAD },
	{ "ack nnacks 2^28, len 0", WT(ACK), .poke = { P32(ACK(nnacks), 1U << 28) },
	  .want = BAD },
	{ "ack nnacks above nacks sent", WT(ACK), .n = 1, .poke = { P32(ACK(nnacks), 2) },
	  .want = BAD },
	{ "ack nnacks below nacks sent", WT(ACK), .n = 2, .poke = { P32(ACK(nnacks), 1) },
	  .want = BAD },
	{ "ack nnacks 1, no nack", WT(ACK), .poke = { P32(ACK(nnacks), 1) }, .want = BAD },
	{ "ack nack status 0", WT(ACK), .n = 1, .poke = { P32(NACK(0, status), 0) },
	  .want = BAD },
	{ "ack last nack status 0", WT(ACK), .n = DMAPLANE_WIRE_CREDITS,
	  .poke = { P32(NACK(DMAPLANE_WIRE_CREDITS - 1, status), 0) }, .want = BAD },
	{ "ack nack status 1", WT(ACK), .n = 1, .poke = { P32(NACK(0, status), 1) },
	  .want = BAD },
	{ "ack nack status -MAX_ERRNO - 1", WT(ACK), .n = 1,
	  .poke = { P32(NACK(0, status), -MAX_ERRNO - 1) }, .want = BAD },
	{ "ack nack pad", WT(ACK), .n = 3, .poke = { P32(NACK(2, pad), 1) }, .want = BAD },
};

static void wire_case_desc(const struct wire_case *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(wire, wire_cases, wire_case_desc);

/* Build the valid message @c starts from in @b; return its body length. */
static u32 build_valid(const struct wire_case *c, u8 *b)
{
	struct dmaplane_wire_hdr *h = (void *)b;
	void *body = b + HSZ;
	u32 seg_len = c->seg_len ? c->seg_len : 1;
	u32 i;

	h->type = c->type;
	h->version = DMAPLANE_WIRE_VERSION;
	h->seq = cpu_to_le64(c->type == DMAPLANE_WIRE_ACK ? 0 : 7);

	switch (c->type) {
	case DMAPLANE_WIRE_EAGER:
	case DMAPLANE_WIRE_RTS: {
		struct dmaplane_wire_msg *m = body;
		struct dmaplane_wire_rts *rts = body + MSZ;

		m->src = cpu_to_le64(3);
		m->dst = cpu_to_le64(5);
		m->tag = cpu_to_le64(0x1234);
		m->uid = cpu_to_le32(1000);
		if (c->type == DMAPLANE_WIRE_EAGER) {
			m->msg_len = cpu_to_le64(c->n);
			memset(body + MSZ, 0xa5, c->n);
			return MSZ + c->n;
		}
		m->msg_len = cpu_to_le64((u64)c->n * seg_len);
		rts->cookie = cpu_to_le64(0xc00c1e);
		rts->nsegs = cpu_to_le32(c->n);
		for (i = 0; i < c->n; i++) {
			rts->segs[i].addr = cpu_to_le64(0x10000 * (i + 1));
			rts->segs[i].rkey = cpu_to_le32(0x100 + i);
			rts->segs[i].len = cpu_to_le32(seg_len);
		}
		return MSZ + struct_size(rts, segs, c->n);
	}
	case DMAPLANE_WIRE_FIN: {
		struct dmaplane_wire_fin *f = body;

		f->cookie = cpu_to_le64(0xc00c1e);
		return sizeof(*f);
	}
	case DMAPLANE_WIRE_RMA_REQ: {
		struct dmaplane_wire_rma *r = body;
		struct dmaplane_wire_seglist *sl = body + RMASZ;

		r->cookie = cpu_to_le64(1);
		r->src = cpu_to_le64(3);
		r->dst = cpu_to_le64(5);
		r->rkey = cpu_to_le64(0xabcdef);
		r->roffset = cpu_to_le64(4096);
		r->len = cpu_to_le64((u64)c->n * seg_len);
		r->uid = cpu_to_le32(1000);
		r->write = 1;
		sl->nsegs = cpu_to_le32(c->n);
		for (i = 0; i < c->n; i++) {
			sl->segs[i].addr = cpu_to_le64(0x10000 * (i + 1));
			sl->segs[i].rkey = cpu_to_le32(0x100 + i);
			sl->segs[i].len = cpu_to_le32(seg_len);
		}
		return RMASZ + struct_size(sl, segs, c->n);
	}
	case DMAPLANE_WIRE_RESOLVE:
	case DMAPLANE_WIRE_RESOLVED: {
		struct dmaplane_wire_resolve *r = body;

		r->cookie = cpu_to_le64(1);
		r->ep_uid = cpu_to_le64(5);
		return sizeof(*r);
	}
	case DMAPLANE_WIRE_CANCEL: {
		struct dmaplane_wire_cancel *k = body;

		k->cookie = cpu_to_le64(0xc00c1e);
		return sizeof(*k);
	}
	case DMAPLANE_WIRE_PING:
		return 0;
	default: {
		struct dmaplane_wire_ack *a = body;

		a->consumed = cpu_to_le64(7);
		a->credits = cpu_to_le32(1);
		a->nnacks = cpu_to_le32(c->n);
		for (i = 0; i < c->n; i++) {
			a->nacks[i].seq = cpu_to_le64(i + 1);
			a->nacks[i].status = cpu_to_le32(-ENOENT);
		}
		return struct_size(a, nacks, c->n);
	}
	}
}

static void poke(u8 *b, const struct wire_poke *p)
{
	switch (p->size) {
	case 1:
		b[p->off] = p->val;
		break;
	case 2:
		put_unaligned_le16(p->val, b + p->off);
		break;
	case 4:
		put_unaligned_le32(p->val, b + p->off);
		break;
	case 8:
		put_unaligned_le64(p->val, b + p->off);
		break;
	}
}

static void wire_check_table(struct kunit *test)
{
	const struct wire_case *c = test->param_value;
	struct dmaplane_wire_hdr *h;
	u32 body, msg_len, byte_len, i;
	u8 *scratch, *buf;
	int want;

	scratch = kunit_kzalloc(test, SCRATCH, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, scratch);
	h = (void *)scratch;

	body = build_valid(c, scratch);
	KUNIT_ASSERT_GE(test, (int)body + c->extra, 0);
	body += c->extra;
	h->len = cpu_to_le32(body);
	msg_len = HSZ + body;
	KUNIT_ASSERT_LE(test, msg_len, SCRATCH);
	for (i = 0; i < ARRAY_SIZE(c->poke); i++) {
		KUNIT_ASSERT_LE(test, c->poke[i].off + c->poke[i].size, SCRATCH);
		poke(scratch, &c->poke[i]);
	}
	byte_len = c->set_len ? c->byte_len : msg_len + c->len_delta;
	KUNIT_ASSERT_LE(test, byte_len, SCRATCH);

	/* Exactly the bytes that arrived: KASAN catches reads past them. */
	buf = kunit_kmalloc(test, byte_len ? byte_len : 1, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	memcpy(buf, scratch, byte_len);

	want = c->want ? c->want : c->type;
	KUNIT_EXPECT_EQ_MSG(test, dmaplane_wire_check(buf, byte_len), want,
			    "%s (byte_len %u)", c->name, byte_len);
}

/* The wire layout is ABI between nodes: no implicit padding, no change. */
static void wire_layout(struct kunit *test)
{
	KUNIT_EXPECT_EQ(test, sizeof(struct dmaplane_wire_cm), 24);
	KUNIT_EXPECT_EQ(test, sizeof(struct dmaplane_wire_hdr), 16);
	KUNIT_EXPECT_EQ(test, sizeof(struct dmaplane_wire_msg), 56);
	KUNIT_EXPECT_EQ(test, sizeof(struct dmaplane_wire_seg), 16);
	KUNIT_EXPECT_EQ(test, sizeof(struct dmaplane_wire_rts), 16);
	KUNIT_EXPECT_EQ(test, sizeof(struct dmaplane_wire_fin), 16);
	KUNIT_EXPECT_EQ(test, sizeof(struct dmaplane_wire_rma), 72);
	KUNIT_EXPECT_EQ(test, sizeof(struct dmaplane_wire_seglist), 8);
	KUNIT_EXPECT_EQ(test, sizeof(struct dmaplane_wire_resolve), 32);
	KUNIT_EXPECT_EQ(test, sizeof(struct dmaplane_wire_nack), 16);
	KUNIT_EXPECT_EQ(test, sizeof(struct dmaplane_wire_ack), 16);
	KUNIT_EXPECT_EQ(test, sizeof(struct dmaplane_wire_cancel), 8);
	/* Types are only appended. */
	KUNIT_EXPECT_EQ(test, DMAPLANE_WIRE_EAGER, 1);
	KUNIT_EXPECT_EQ(test, DMAPLANE_WIRE_ACK, 7);
	KUNIT_EXPECT_EQ(test, DMAPLANE_WIRE_CANCEL, 8);
	KUNIT_EXPECT_EQ(test, DMAPLANE_WIRE_PING, 9);
	KUNIT_EXPECT_EQ(test, offsetof(struct dmaplane_wire_cm, node_id), 8);
	KUNIT_EXPECT_EQ(test, offsetof(struct dmaplane_wire_hdr, seq), 8);
	KUNIT_EXPECT_EQ(test, offsetof(struct dmaplane_wire_rma, write), 60);
	KUNIT_EXPECT_EQ(test, offsetof(struct dmaplane_wire_rma, flags), 61);
	KUNIT_EXPECT_EQ(test, offsetof(struct dmaplane_wire_rma, data), 64);
	KUNIT_EXPECT_EQ(test, offsetof(struct dmaplane_wire_seglist, segs), 8);
	/* Buffer sizes: a 72-byte header piece, then a 16 KiB payload piece. */
	KUNIT_EXPECT_EQ(test, DMAPLANE_WIRE_HDR_BYTES, 72);
	KUNIT_EXPECT_EQ(test, HSZ + MSZ, DMAPLANE_WIRE_HDR_BYTES);
	KUNIT_EXPECT_EQ(test, DMAPLANE_WIRE_EAGER_MAX, 16384);
	KUNIT_EXPECT_EQ(test, DMAPLANE_WIRE_BUF_SIZE, 16456);
	KUNIT_EXPECT_EQ(test, DMAPLANE_WIRE_EAGER_MAX, DMAPLANE_WIRE_BUF_SIZE - 72);
	KUNIT_EXPECT_EQ(test, DMAPLANE_WIRE_CTRL_MAX, 2048);
	KUNIT_EXPECT_EQ(test, DMAPLANE_WIRE_MAX_SEGS, 64);
	/* The largest RTS, RMA_REQ and ACK are control messages. */
	KUNIT_EXPECT_LE(test, HSZ + MSZ + sizeof(struct dmaplane_wire_rts) +
			DMAPLANE_WIRE_MAX_SEGS * SEGSZ, DMAPLANE_WIRE_CTRL_MAX);
	KUNIT_EXPECT_LE(test, HSZ + RMASZ + sizeof(struct dmaplane_wire_seglist) +
			DMAPLANE_WIRE_MAX_SEGS * SEGSZ, DMAPLANE_WIRE_CTRL_MAX);
	KUNIT_EXPECT_LE(test, HSZ + sizeof(struct dmaplane_wire_ack) +
			DMAPLANE_WIRE_CREDITS * NACKSZ, DMAPLANE_WIRE_CTRL_MAX);
}

static void credits_take_until_empty(struct kunit *test)
{
	struct dmaplane_credits c;
	unsigned int i;

	dmaplane_credits_init(&c, DMAPLANE_WIRE_CREDITS);
	for (i = 0; i < DMAPLANE_WIRE_CREDITS; i++)
		KUNIT_EXPECT_TRUE_MSG(test, dmaplane_credits_take(&c), "take %u", i);
	KUNIT_EXPECT_FALSE(test, dmaplane_credits_take(&c));
	KUNIT_EXPECT_FALSE(test, dmaplane_credits_take(&c));
	KUNIT_EXPECT_EQ(test, c.avail, 0);

	/* One back: exactly one more request may go. */
	KUNIT_EXPECT_EQ(test, dmaplane_credits_return(&c, 1), 0);
	KUNIT_EXPECT_TRUE(test, dmaplane_credits_take(&c));
	KUNIT_EXPECT_FALSE(test, dmaplane_credits_take(&c));

	/* All back: the full window again. */
	KUNIT_EXPECT_EQ(test, dmaplane_credits_return(&c, DMAPLANE_WIRE_CREDITS), 0);
	for (i = 0; i < DMAPLANE_WIRE_CREDITS; i++)
		KUNIT_EXPECT_TRUE(test, dmaplane_credits_take(&c));
	KUNIT_EXPECT_FALSE(test, dmaplane_credits_take(&c));

	/* A peer that grants nothing: nothing may go. */
	dmaplane_credits_init(&c, 0);
	KUNIT_EXPECT_FALSE(test, dmaplane_credits_take(&c));
	KUNIT_EXPECT_EQ(test, dmaplane_credits_return(&c, 1), -EPROTO);
}

static void credits_return_more_than_outstanding(struct kunit *test)
{
	struct dmaplane_credits c;
	unsigned int i;

	dmaplane_credits_init(&c, DMAPLANE_WIRE_CREDITS);
	/* Nothing outstanding: any credit back is a protocol error. */
	KUNIT_EXPECT_EQ(test, dmaplane_credits_return(&c, 1), -EPROTO);
	KUNIT_EXPECT_EQ(test, dmaplane_credits_return(&c, 0), 0);
	KUNIT_EXPECT_EQ(test, c.avail, DMAPLANE_WIRE_CREDITS);

	for (i = 0; i < 3; i++)
		KUNIT_ASSERT_TRUE(test, dmaplane_credits_take(&c));
	KUNIT_EXPECT_EQ(test, dmaplane_credits_return(&c, 4), -EPROTO);
	KUNIT_EXPECT_EQ(test, dmaplane_credits_return(&c, U32_MAX), -EPROTO);
	/* A refused return changes nothing. */
	KUNIT_EXPECT_EQ(test, c.avail, DMAPLANE_WIRE_CREDITS - 3);
	KUNIT_EXPECT_EQ(test, dmaplane_credits_return(&c, 2), 0);
	KUNIT_EXPECT_EQ(test, dmaplane_credits_return(&c, 2), -EPROTO);
	KUNIT_EXPECT_EQ(test, dmaplane_credits_return(&c, 1), 0);
	KUNIT_EXPECT_EQ(test, c.avail, DMAPLANE_WIRE_CREDITS);
	KUNIT_EXPECT_EQ(test, dmaplane_credits_return(&c, 1), -EPROTO);
	KUNIT_EXPECT_EQ(test, c.avail, DMAPLANE_WIRE_CREDITS);
}

static void credits_owed_counts_and_resets(struct kunit *test)
{
	struct dmaplane_credits c;
	unsigned int i;

	dmaplane_credits_init(&c, DMAPLANE_WIRE_CREDITS);
	KUNIT_EXPECT_EQ(test, dmaplane_credits_owed(&c), 0);
	for (i = 0; i < 5; i++)
		dmaplane_credits_consumed(&c);
	KUNIT_EXPECT_EQ(test, dmaplane_credits_owed(&c), 5);
	KUNIT_EXPECT_EQ(test, dmaplane_credits_owed(&c), 0);
	dmaplane_credits_consumed(&c);
	KUNIT_EXPECT_EQ(test, dmaplane_credits_owed(&c), 1);
	KUNIT_EXPECT_EQ(test, dmaplane_credits_owed(&c), 0);
	for (i = 0; i < DMAPLANE_WIRE_CREDITS; i++)
		dmaplane_credits_consumed(&c);
	/* Owing is independent of this side's own credits. */
	KUNIT_EXPECT_EQ(test, c.avail, DMAPLANE_WIRE_CREDITS);
	KUNIT_EXPECT_EQ(test, dmaplane_credits_owed(&c), DMAPLANE_WIRE_CREDITS);

	/* A new connection owes nothing. */
	dmaplane_credits_consumed(&c);
	dmaplane_credits_init(&c, DMAPLANE_WIRE_CREDITS);
	KUNIT_EXPECT_EQ(test, dmaplane_credits_owed(&c), 0);
}

static struct kunit_case dmaplane_wire_test_cases[] = {
	KUNIT_CASE_PARAM(wire_check_table, wire_gen_params),
	KUNIT_CASE(wire_layout),
	KUNIT_CASE(credits_take_until_empty),
	KUNIT_CASE(credits_return_more_than_outstanding),
	KUNIT_CASE(credits_owed_counts_and_resets),
	{}
};

static struct kunit_suite dmaplane_wire_suite = {
	.name = "dmaplane_wire",
	.test_cases = dmaplane_wire_test_cases,
};

kunit_test_suites(&dmaplane_wire_suite);

/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * libdmaplane: a thin C library over /dev/dmaplane.
 *
 * Conventions (as liburing): every int function returns 0 or a positive
 * value on success and a negative errno on failure; errno itself is left
 * alone.  The library keeps no hidden state: an endpoint is the file
 * descriptor plus what the kernel maps into the process.
 */
#ifndef LIBDMAPLANE_H
#define LIBDMAPLANE_H

#include <stdint.h>
#include <string.h>

#include <linux/dmaplane.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Version of this header's library.  The symbols of one major version
 * never change (symbol version LIBDMAPLANE_<major>.<minor> of the minor
 * that added them); a minor version only adds.
 */
#define DP_VERSION_MAJOR	1
#define DP_VERSION_MINOR	1

/*
 * dp_version_major, dp_version_minor - version of the library in use at
 * run time (which may be newer than the header a program was built with).
 * dp_check_version - 0 when the library in use has the calls of
 * @major.@minor (same major, minor at least @minor), else -ENOTSUP.
 */
int dp_version_major(void);
int dp_version_minor(void);
int dp_check_version(int major, int minor);

/** Default device node opened by dp_open() when @path is NULL. */
#define DP_DEFAULT_PATH "/dev/" DMAPLANE_DEVICE_NAME

/** An endpoint: one open of /dev/dmaplane. Opaque. */
struct dp_ep;

/*
 * dp_open - open an endpoint
 * @path: device node, or NULL for DP_DEFAULT_PATH
 * @flags: must be 0
 * @epp: on success, the new endpoint
 *
 * The file descriptor is opened O_CLOEXEC.  dp_open() asks the kernel for
 * its ABI version and refuses a module whose ABI is older than this
 * header's, so a program never talks to a module that lacks what it was
 * built for; a newer module keeps every call of ABI 1 and is accepted.
 * Features added later are told by the capability bits of dp_info()
 * (DMAPLANE_CAP_*), not by version numbers.
 *
 * Returns 0, or -EINVAL (unknown flag, NULL @epp), -ENOENT (no device:
 * module not loaded), -ENOTTY (@path is not a dmaplane device),
 * -EPROTO (module ABI older than this library), -ENOMEM, or the errno of
 * open(2).
 */
int dp_open(const char *path, unsigned int flags, struct dp_ep **epp);

/*
 * dp_close - close an endpoint and release everything it owns
 * @ep: endpoint from dp_open(), or NULL (then nothing happens)
 */
void dp_close(struct dp_ep *ep);

/*
 * dp_fd - the endpoint's file descriptor, for poll(2)/epoll(7)
 */
int dp_fd(const struct dp_ep *ep);

/*
 * dp_info - ask the module for its ABI version and capabilities
 * @ep: endpoint
 * @info: filled in on success (see struct dmaplane_info)
 *
 * Returns 0, or the negative errno of DMAPLANE_IOCTL_GET_INFO.
 */
int dp_info(struct dp_ep *ep, struct dmaplane_info *info);

/* ---- Memory: arenas, registered regions, dma-buf ---------------------- */

/** An arena: pinned kernel memory mapped into this process. Opaque. */
struct dp_arena;
/** A registered region: user memory or an imported dma-buf. Opaque. */
struct dp_mr;

/*
 * dp_arena_create - allocate, pin, register and map an arena
 * @ep: endpoint
 * @len: bytes, a multiple of the page size
 * @flags: DMAPLANE_ARENA_* (DMAPLANE_ARENA_HUGE_ONLY)
 * @numa_node: NUMA node, or DMAPLANE_NUMA_ANY
 * @access: DMAPLANE_ACCESS_* bits for peers and local operations
 * @arenap: on success, the arena, mapped read-write at dp_arena_ptr()
 *
 * 2 MiB pages are used first; dp_arena_bytes() tells what backs it.
 * Returns 0, or -EINVAL, -ENOMEM (also RLIMIT_MEMLOCK), the errno of
 * mmap(2).
 */
int dp_arena_create(struct dp_ep *ep, uint64_t len, unsigned int flags,
		    int numa_node, unsigned int access, struct dp_arena **arenap);

/*
 * dp_arena_destroy - unmap the arena and drop the endpoint's handle
 *
 * The memory itself is freed when the last dma-buf exported from it is
 * released.  Returns 0 or -errno.
 */
int dp_arena_destroy(struct dp_arena *arena);

/* dp_arena_ptr, dp_arena_len - the owner's mapping of the arena */
void *dp_arena_ptr(const struct dp_arena *arena);
uint64_t dp_arena_len(const struct dp_arena *arena);

/* dp_arena_key - the arena's remote key, for peers' put/get */
uint64_t dp_arena_key(const struct dp_arena *arena);

/*
 * dp_arena_handle - the arena's handle on its endpoint, for operations
 * whose buffer is in the arena (dp_prep_set_region(); since 1.1)
 */
uint32_t dp_arena_handle(const struct dp_arena *arena);

/*
 * dp_arena_bytes - bytes of the arena backed by 2 MiB pages (@huge),
 * intermediate orders (@mid) and base pages (@base); any may be NULL.
 */
void dp_arena_bytes(const struct dp_arena *arena, uint64_t *huge,
		    uint64_t *mid, uint64_t *base);

/*
 * dp_dmabuf_export - export a page-aligned slice of an arena as a dma-buf
 * @flags: DMAPLANE_DMABUF_* (DMAPLANE_DMABUF_NO_CLOEXEC)
 *
 * Returns the new file descriptor (O_RDWR, O_CLOEXEC unless asked
 * otherwise), or -EINVAL, -ERANGE (slice beyond the arena), -EMFILE ...
 */
int dp_dmabuf_export(struct dp_arena *arena, uint64_t offset, uint64_t len,
		     unsigned int flags);

/*
 * dp_mr_reg - pin and register user memory
 * @ep: endpoint
 * @addr: start, any alignment
 * @len: bytes, non-zero
 * @access: DMAPLANE_ACCESS_* bits
 * @mrp: on success, the region
 *
 * A range already registered in this address space is served from the
 * kernel's registration cache.  munmap() and friends invalidate the
 * registration in the kernel (dp_mr_query() reports it): no malloc hooks.
 * Returns 0, or -EINVAL, -ENOMEM (RLIMIT_MEMLOCK), -EFAULT ...
 */
int dp_mr_reg(struct dp_ep *ep, void *addr, uint64_t len,
	      unsigned int access, struct dp_mr **mrp);

/*
 * dp_mr_import_dmabuf - register a slice of a foreign dma-buf
 * @fd: dma-buf file descriptor (dma-heap, udmabuf, GPU driver ...)
 * @offset, @len: page-aligned slice
 */
int dp_mr_import_dmabuf(struct dp_ep *ep, int fd, uint64_t offset,
			uint64_t len, unsigned int access, struct dp_mr **mrp);

/*
 * dp_mr_dereg - release a region (user memory or imported dma-buf)
 * Returns 0 or -errno; @mr is freed either way.
 */
int dp_mr_dereg(struct dp_mr *mr);

/* dp_mr_key - the region's remote key, for peers' put/get */
uint64_t dp_mr_key(const struct dp_mr *mr);

/*
 * dp_mr_handle - the region's handle on its endpoint, for operations
 * whose buffer is in the region (dp_prep_set_region(); since 1.1)
 */
uint32_t dp_mr_handle(const struct dp_mr *mr);

/*
 * dp_mr_query - the region's state (valid or invalidated) and the
 * endpoint's invalidation and cache counters
 */
int dp_mr_query(struct dp_mr *mr, struct dmaplane_mr_query *query);

/* ---- Messaging -------------------------------------------------------- */

/*
 * dp_ep_setup - choose the endpoint's security domain and map its ring
 * @auth_key: 0: talk to endpoints of the same uid (without a key);
 *	otherwise: talk to endpoints set up with the same key, any uid
 * @cq_entries: completion ring size (power of two), 0 for the default
 *
 * Once per endpoint, before dp_av_insert() or any operation.
 * Returns 0, or -EBUSY (already set up), -EINVAL, -ENOMEM.
 */
int dp_ep_setup(struct dp_ep *ep, uint64_t auth_key, unsigned int cq_entries);

/* dp_getname - the endpoint's name, to hand to peers out of band */
int dp_getname(struct dp_ep *ep, struct dmaplane_name *name);

/*
 * dp_av_insert - turn a peer's name into an address handle (@addr)
 * Returns 0, or -ECONNREFUSED (closed or unknown endpoint), -EACCES
 * (another security domain), -ENETUNREACH (another node, no transport).
 */
int dp_av_insert(struct dp_ep *ep, const struct dmaplane_name *name,
		 uint32_t *addr);

/* dp_av_remove - forget an address handle */
int dp_av_remove(struct dp_ep *ep, uint32_t addr);

/** Source of dp_recv() that matches any sender. */
#define DP_ANY_SRC DMAPLANE_AV_ANY

/*
 * dp_send - send @len bytes at @buf to @dest with @tag (non-blocking)
 *
 * Completes once on the ring with @ctx: at once when the message was
 * delivered into a posted receive or copied into the receiver's kernel
 * buffer (small messages), later when a large message is received.  The
 * buffer must stay valid and unchanged until then.
 * Returns 0, or -EAGAIN (ring full, or the receiver's unexpected budget
 * exhausted: consume completions / retry), -ECONNRESET, -ENOENT, -EINVAL.
 */
int dp_send(struct dp_ep *ep, uint32_t dest, uint64_t tag, const void *buf,
	    uint64_t len, uint64_t ctx);

/*
 * dp_recv - post a receive (non-blocking)
 * @src: address handle, or DP_ANY_SRC
 * @tag, @ignore: matches messages whose tag equals @tag in every bit
 *	@ignore leaves clear
 *
 * Receives match in posted order; messages from one sender in send
 * order.  The completion carries the sender, the tag and the length; a
 * longer message completes with -EMSGSIZE and the bytes that fit.
 * cqe.src is the sender's source value: its name's ep_uid in the low 47
 * bits and its node's slot above them, 0 for this node (split it with
 * DMAPLANE_SRC_EP_UID() and DMAPLANE_SRC_NODE_SLOT()).
 */
int dp_recv(struct dp_ep *ep, uint32_t src, uint64_t tag, uint64_t ignore,
	    void *buf, uint64_t len, uint64_t ctx);

/*
 * dp_sendv, dp_recvv - vector forms: the message is the concatenation of
 * @iovcnt pieces (1 to 1024); the array itself may be reused once the
 * call returns, the pieces only after the completion.
 */
struct iovec;
int dp_sendv(struct dp_ep *ep, uint32_t dest, uint64_t tag,
	     const struct iovec *iov, unsigned int iovcnt, uint64_t ctx);
int dp_recvv(struct dp_ep *ep, uint32_t src, uint64_t tag, uint64_t ignore,
	     const struct iovec *iov, unsigned int iovcnt, uint64_t ctx);

/*
 * dp_probe - is there a message a dp_recv(@src, @tag, @ignore) would take?
 * @flags: 0 (MPI_Iprobe), or DMAPLANE_PROBE_CLAIM (MPI_Improbe: the
 *	message is taken out of matching; receive it with dp_recv_claimed()
 *	and probe->claim)
 * @probe: on success, the message's source (a source value, as cqe.src
 *	of dp_recv()), tag and length
 * Returns 0, -EAGAIN (no such message yet), -ENOENT, -EINVAL.
 */
int dp_probe(struct dp_ep *ep, uint32_t src, uint64_t tag, uint64_t ignore,
	     unsigned int flags, struct dmaplane_probe *probe);

/* dp_recv_claimed - receive the message dp_probe() claimed (MPI_Mrecv) */
int dp_recv_claimed(struct dp_ep *ep, uint32_t claim, void *buf, uint64_t len,
		    uint64_t ctx);

/*
 * dp_cancel - cancel the posted receive with @ctx that nothing matched
 * yet; it completes with -ECANCELED.  Returns 0 or -ENOENT.
 */
int dp_cancel(struct dp_ep *ep, uint64_t ctx);

/*
 * dp_put - write @len bytes at @buf into the region @rkey of @dest, at
 * byte @roffset (one-sided: the target makes no call).
 * dp_get - read them from there into @buf.
 *
 * Both complete on the ring with @ctx: status 0, -ENOENT (no such key on
 * that peer, or revoked), -EACCES (the region lacks REMOTE_WRITE /
 * REMOTE_READ), -ERANGE (beyond the region), -EFAULT (invalidated).
 */
int dp_put(struct dp_ep *ep, uint32_t dest, uint64_t rkey, uint64_t roffset,
	   const void *buf, uint64_t len, uint64_t ctx);
int dp_get(struct dp_ep *ep, uint32_t dest, uint64_t rkey, uint64_t roffset,
	   void *buf, uint64_t len, uint64_t ctx);

/*
 * dp_submit - submit @nr prepared operations in one system call
 * Returns how many were accepted (>= 1), or the -errno of the first.
 */
int dp_submit(struct dp_ep *ep, const struct dmaplane_op *ops, unsigned int nr);

/*
 * dp_prep_send, dp_prep_recv, dp_prep_put, dp_prep_get - fill one
 * operation of a dp_submit() batch, as io_uring_prep_*() do: the same
 * arguments as dp_send(), dp_recv(), dp_put() and dp_get().
 * dp_prep_send_data - a send that carries @data into the receiver's
 * completion (cqe.data, DMAPLANE_CQE_F_DATA; needs DMAPLANE_CAP_CQ_DATA).
 * dp_prep_set_flags - add DMAPLANE_OP_F_* bits (e.g. DMAPLANE_OP_F_IOV:
 * @buf is then a struct iovec array and @len its count;
 * DMAPLANE_OP_F_INLINE: a message of at most 8 bytes may come in the
 * receive's completion, see dp_cqe_inline()).
 * dp_prep_set_region - the operation's buffer is in the caller's region
 * @region (dp_arena_handle(), dp_mr_handle()): @buf of the prep call is
 * then the offset in it, (void *)(uintptr_t)offset (needs
 * DMAPLANE_CAP_REGION_BUF).
 */
static inline void dp_prep_send(struct dmaplane_op *op, uint32_t dest,
				uint64_t tag, const void *buf, uint64_t len,
				uint64_t ctx)
{
	memset(op, 0, sizeof(*op));
	op->opcode = DMAPLANE_OP_SEND;
	op->peer = dest;
	op->tag = tag;
	op->addr = (uintptr_t)buf;
	op->len = len;
	op->ctx = ctx;
}

static inline void dp_prep_send_data(struct dmaplane_op *op, uint32_t dest,
				     uint64_t tag, const void *buf,
				     uint64_t len, uint64_t data, uint64_t ctx)
{
	dp_prep_send(op, dest, tag, buf, len, ctx);
	op->flags |= DMAPLANE_OP_F_DATA;
	op->data = data;
}

static inline void dp_prep_recv(struct dmaplane_op *op, uint32_t src,
				uint64_t tag, uint64_t ignore, void *buf,
				uint64_t len, uint64_t ctx)
{
	memset(op, 0, sizeof(*op));
	op->opcode = DMAPLANE_OP_RECV;
	op->peer = src;
	op->tag = tag;
	op->ignore = ignore;
	op->addr = (uintptr_t)buf;
	op->len = len;
	op->ctx = ctx;
}

static inline void dp_prep_rma(struct dmaplane_op *op, uint8_t opcode,
				 uint32_t dest, uint64_t rkey,
				 uint64_t roffset, const void *buf,
				 uint64_t len, uint64_t ctx)
{
	memset(op, 0, sizeof(*op));
	op->opcode = opcode;
	op->peer = dest;
	op->addr = (uintptr_t)buf;
	op->len = len;
	op->ctx = ctx;
	op->rkey = rkey;
	op->roffset = roffset;
}

static inline void dp_prep_put(struct dmaplane_op *op, uint32_t dest,
			       uint64_t rkey, uint64_t roffset,
			       const void *buf, uint64_t len, uint64_t ctx)
{
	dp_prep_rma(op, DMAPLANE_OP_PUT, dest, rkey, roffset, buf, len, ctx);
}

static inline void dp_prep_get(struct dmaplane_op *op, uint32_t dest,
			       uint64_t rkey, uint64_t roffset, void *buf,
			       uint64_t len, uint64_t ctx)
{
	dp_prep_rma(op, DMAPLANE_OP_GET, dest, rkey, roffset, buf, len, ctx);
}

static inline void dp_prep_set_flags(struct dmaplane_op *op, uint32_t flags)
{
	op->flags |= flags;
}

static inline void dp_prep_set_region(struct dmaplane_op *op, uint32_t region)
{
	op->flags |= DMAPLANE_OP_F_REGION;
	op->region = region;
}

/*
 * dp_cqe_inline - the completion of a receive with DMAPLANE_OP_F_INLINE
 * (needs DMAPLANE_CAP_RECV_INLINE): when it carries the bytes received
 * (DMAPLANE_CQE_F_INLINE), copy its @cqe->len bytes to @buf, the
 * receive's buffer, and return that count; else return 0 (the module wrote
 * the buffer, or there was nothing to copy).
 */
static inline uint64_t dp_cqe_inline(const struct dmaplane_cqe *cqe, void *buf)
{
	if (!(cqe->flags & DMAPLANE_CQE_F_INLINE))
		return 0;
	memcpy(buf, &cqe->data, cqe->len);
	return cqe->len;
}

/*
 * dp_prep_uring_submit - fill an io_uring SQE that submits @nr prepared
 * operations, as dp_submit() does, through IORING_OP_URING_CMD on the
 * endpoint's file descriptor @fd (dp_fd(), or a registered file's index
 * with IOSQE_FIXED_FILE); with IORING_SETUP_SQPOLL no system call at all
 * (needs DMAPLANE_CAP_URING_CMD).  The CQE's res is what dp_submit()
 * returns; @ops must stay unchanged until that CQE arrives.  Defined only
 * when <liburing.h> (or <linux/io_uring.h>) is included before this
 * header: libdmaplane itself does not need io_uring.
 */
#ifdef LINUX_IO_URING_H
static inline void dp_prep_uring_submit(struct io_uring_sqe *sqe, int fd,
					const struct dmaplane_op *ops,
					unsigned int nr)
{
	struct dmaplane_uring_submit cmd = {
		.ops = (uintptr_t)ops,
		.nr = nr,
		.op_size = sizeof(*ops),
	};

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = DMAPLANE_URING_CMD_SUBMIT;
	memcpy(sqe->cmd, &cmd, sizeof(cmd));
}
#endif

/*
 * dp_poll - take up to @max completions from the ring; no system call
 * Returns the number taken (0 when none), or -EINVAL before dp_ep_setup().
 */
int dp_poll(struct dp_ep *ep, struct dmaplane_cqe *cqes, unsigned int max);

/*
 * dp_wait - like dp_poll(), but wait up to @timeout_ms (-1: forever) for
 * at least one completion.  Returns the number taken, 0 on timeout,
 * -EINTR, -EINVAL.
 */
int dp_wait(struct dp_ep *ep, struct dmaplane_cqe *cqes, unsigned int max,
	    int timeout_ms);

/*
 * dp_send_sync, dp_recv_sync - blocking forms for simple programs that
 * have no other operation in flight on @ep.  @cqe (may be NULL) receives
 * the completion.  Return the completion's status (0 or -errno), or
 * -EBUSY when another operation's completion showed up first (it is left
 * on the ring).
 */
int dp_send_sync(struct dp_ep *ep, uint32_t dest, uint64_t tag,
		 const void *buf, uint64_t len, struct dmaplane_cqe *cqe);
int dp_recv_sync(struct dp_ep *ep, uint32_t src, uint64_t tag, uint64_t ignore,
		 void *buf, uint64_t len, struct dmaplane_cqe *cqe);

#ifdef __cplusplus
}
#endif

#endif /* LIBDMAPLANE_H */

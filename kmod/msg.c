// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane two-sided messaging on one node.
 *
 * SEND finds the destination endpoint and offers the message to its
 * matcher under the destination's match_lock:
 *
 * - a posted receive matches: the sender's ioctl copies its buffer
 *   straight into the receiver's buffer (pages of the receiver's address
 *   space pinned for the duration of the copy, as process_vm_writev()
 *   does): one copy, and the receiver makes no system call until it looks
 *   at its ring (asynchronous progress);
 * - no receive matches and the message is small (eager_threshold): it is
 *   copied into kernel memory, charged to the receiver's bounded
 *   unexpected budget, and the send completes at once;
 * - no receive matches and the message is large (rendezvous): only its
 *   description is queued; the receive that later matches it copies the
 *   sender's pages straight into its own buffer, and then the send
 *   completes.  A large buffer is kept registered (msg_register()),
 *   else nothing is pinned while a rendezvous waits.
 *
 * RECV offers the receive to its own matcher and, when an unexpected
 * message matches, takes the data as above.  Truncation is reported
 * (-EMSGSIZE with the bytes that fit), never silent.
 *
 * An eager payload is copied in before match_lock is taken, so that no
 * fault on a sender's memory ever happens under the receiver's lock.  A
 * message from another node that matches a posted receive is not copied
 * where it matched (the connection's completion work, shared by every
 * endpoint behind that peer): it is queued on the receiving endpoint and
 * its delivery work copies it in the receiver's address space, so a
 * receive buffer that faults forever (a FUSE mapping whose server does not
 * answer) stalls that endpoint only.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bvec.h>
#include <linux/compat.h>
#include <linux/highmem.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/pagemap.h>
#include <linux/sched/mm.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/uio.h>

#include "dmaplane.h"

static unsigned long unexp_budget = 4UL << 20;
module_param(unexp_budget, ulong, 0644);
MODULE_PARM_DESC(unexp_budget,
		 "Bytes of eager messages the kernel may hold for an endpoint (unexpected, or waiting for delivery)");
static unsigned long iov_budget = 1UL << 20;
module_param(iov_budget, ulong, 0644);
MODULE_PARM_DESC(iov_budget,
		 "Bytes of iovec arrays an endpoint's operations in flight may hold");
static unsigned int unexp_max = 4096;
module_param(unexp_max, uint, 0644);
MODULE_PARM_DESC(unexp_max, "Unexpected messages an endpoint may hold");

static unsigned int recv_pins_max = 64;
module_param(recv_pins_max, uint, 0644);
MODULE_PARM_DESC(recv_pins_max,
		 "Posted receives of an endpoint that may keep their buffer's page pinned (0: none)");

/*
 * The buffer ranges of at least msg_reg_min bytes of a posted receive, a
 * rendezvous send or a send whose copy a helper may share are kept
 * registered: msg_register().
 */
static unsigned long msg_reg_min = SZ_16K;
module_param(msg_reg_min, ulong, 0644);
MODULE_PARM_DESC(msg_reg_min,
		 "Bytes from which a posted receive's or a rendezvous send's buffer is kept registered for the copies of other processes (0: never)");

/*
 * A copy on this node of at least copy_split_min bytes is shared with a
 * helper on another CPU: copy_split().
 */
static unsigned long copy_split_min = SZ_512K;
module_param(copy_split_min, ulong, 0644);
MODULE_PARM_DESC(copy_split_min,
		 "Bytes from which a copy on this node (message, put, get) is shared with a helper on another CPU (0: never)");

#define MAX_SUBMIT	256
/*
 * Remote copies pin COPY_PAGES pages per pin_user_pages_remote() call
 * (the array is on the stack: 512 bytes) and reschedule every
 * COPY_RESCHED bytes.
 */
#define COPY_PAGES	64
#define COPY_RESCHED	SZ_1M
/*
 * An eager payload of up to MSG_INLINE bytes is kept in the message's own
 * allocation: one kmalloc and one kfree per small message.
 */
#define MSG_INLINE	256

/* The largest copy within the caller's own address space done by copy_self(). */
#define COPY_SELF_MAX	256

/* Runs the endpoints' delivery work (unbound: one stuck endpoint blocks one worker). */
static struct workqueue_struct *deliver_wq;
/*
 * Runs the helpers of split copies (unbound: on whichever CPU is free; at
 * most one per CPU at a time).
 */
static struct workqueue_struct *copy_wq;
/*
 * Runs the helpers of split copies of messages on the CPU of the other
 * side (copy_split_queue()): per CPU, one at a time (a second waits, and
 * its caller cancels it when done), CPU-intensive (a helper copies for
 * hundreds of microseconds: other work of that CPU's pool need not wait).
 */
static struct workqueue_struct *copy_peer_wq;

/**
 * struct dmaplane_msg - a message queued as unexpected at its receiver
 * @m: matcher view (src = sender's source value, tag)
 * @sender: sending endpoint (referenced); NULL for a message from
 *	another node
 * @len: message length
 * @ctx: sender's context, for its completion (rendezvous)
 * @data: eager payload once copied in (@inl, or a buffer of its own); NULL
 *	for a rendezvous (and in the fields on do_send()'s stack of a send
 *	that finds its receive posted)
 * @buf: rendezvous: the sender's buffer
 * @mm: rendezvous: the sender's address space (mmgrab()ed)
 * @rdv: rendezvous from another node: the transport's state (ib.c),
 *	handed to dmaplane_ib_pull() when a receive matches
 * @deliver_node: on the receiver's &dmaplane_ep.deliveries
 * @recv: the receive it matched, while it waits for delivery
 * @cq_data: remote completion data, with %DMAPLANE_CQE_F_DATA in @cqe_flags
 * @cqe_flags: ``DMAPLANE_CQE_F_*`` of the receive that takes it
 * @inl: an eager payload of up to %MSG_INLINE bytes (@data points here)
 */
struct dmaplane_msg {
	struct dmaplane_match_msg m;
	struct dmaplane_ep *sender;
	u64 len;
	u64 ctx;
	void *data;
	struct dmaplane_ubuf buf;
	struct mm_struct *mm;
	struct dmaplane_rdv *rdv;
	struct list_head deliver_node;
	struct dmaplane_recv *recv;
	u64 cq_data;
	u8 cqe_flags;
	u8 inl[];
};

/**
 * struct dmaplane_recv - a posted receive
 * @m: matcher view
 * @owner: receiving endpoint (not referenced: the receive lives in its
 *	matcher and is freed when it matches or the endpoint drains)
 * @buf: the receiver's buffer
 * @ctx: receiver's context
 * @page: the page of a buffer within one page of anonymous memory,
 *	pinned and charged while the receive lives (recv_pin()), or NULL
 * @page_off: the buffer's offset in @page
 * @dirty: @page was written
 * @inl: %DMAPLANE_OP_F_INLINE: a sender on this node may put the payload
 *	into the completion (send_expected())
 */
struct dmaplane_recv {
	struct dmaplane_match_recv m;
	struct dmaplane_ep *owner;
	struct dmaplane_ubuf buf;
	u64 ctx;
	struct page *page;
	u16 page_off;
	bool dirty;
	bool inl;
};

/*
 * Post @cqe and wake whoever sleeps in poll() on @ep.  A program that
 * polls its ring has no one there: wq_has_sleeper() spares it the wait
 * queue's lock.  Its smp_mb() orders the ring's new tail before the look
 * at the queue; dmaplane_poll() orders its place on the queue before its
 * look at the tail, so a poller either sees the entry or is woken.
 */
static void cqe_post(struct dmaplane_ep *ep, const struct dmaplane_cqe *cqe)
{
	dmaplane_cq_post(ep->cq, cqe);
	if (wq_has_sleeper(&ep->wq))
		wake_up_interruptible(&ep->wq);
}

static void msg_complete(struct dmaplane_ep *ep, u8 opcode, u64 ctx,
			 int status, u64 len, u64 msg_len, u64 tag, u64 src)
{
	struct dmaplane_cqe cqe = {
		.ctx = ctx, .len = len, .msg_len = msg_len, .tag = tag,
		.src = src, .status = status, .opcode = opcode,
	};

	cqe_post(ep, &cqe);
}

/* The receiver's handle of the sender of @cqe, when it has one. */
static void recv_src_av(struct dmaplane_ep *ep, struct dmaplane_cqe *cqe)
{
	u32 handle = dmaplane_av_reverse(ep, cqe->src);

	if (handle != DMAPLANE_AV_ANY) {
		cqe->src_av = handle;
		cqe->flags |= DMAPLANE_CQE_F_SRC_AV;
	}
}

/*
 * The completion of receive @ctx that took message @msg; @inl: the @len
 * bytes received, when they go in the completion instead of the buffer
 * (%DMAPLANE_OP_F_INLINE), else NULL.
 */
static void recv_complete(struct dmaplane_ep *ep, u64 ctx, int status,
			  u64 len, const struct dmaplane_msg *msg, const u64 *inl)
{
	struct dmaplane_cqe cqe = {
		.ctx = ctx, .len = len, .msg_len = msg->len, .tag = msg->m.tag,
		.src = msg->m.src, .status = status, .opcode = DMAPLANE_OP_RECV,
		.data = msg->cq_data, .flags = msg->cqe_flags,
	};

	if (inl) {
		cqe.data = *inl;
		cqe.flags |= DMAPLANE_CQE_F_INLINE;
	}
	recv_src_av(ep, &cqe);
	cqe_post(ep, &cqe);
}

/**
 * dmaplane_msg_post() - post a completion that finished later, in another
 *	context (the transport)
 * @ep: the operation's endpoint (referenced by the caller)
 * @cqe: the completion; for a RECV (and a peer's PUT with data), the
 *	receiver's handle of the sender is filled in here
 *
 * An endpoint whose file is gone gets its ring credit back instead.
 */
void dmaplane_msg_post(struct dmaplane_ep *ep, struct dmaplane_cqe *cqe)
{
	if (READ_ONCE(ep->dead)) {
		dmaplane_cq_unreserve(ep->cq);
		return;
	}
	if (cqe->opcode == DMAPLANE_OP_RECV || (cqe->flags & DMAPLANE_CQE_F_REMOTE))
		recv_src_av(ep, cqe);
	cqe_post(ep, cqe);
}

/**
 * dmaplane_msg_complete() - complete an operation that finished later,
 *	in another context (the transport)
 * @ep: the operation's endpoint (referenced by the caller)
 * @opcode: %DMAPLANE_OP_*
 * @ctx: the operation's context
 * @status: 0 or a negative errno
 * @len: bytes transferred
 * @msg_len: message length
 * @tag: tag
 * @src: source value (RECV)
 *
 * As dmaplane_msg_post().
 */
void dmaplane_msg_complete(struct dmaplane_ep *ep, u8 opcode, u64 ctx,
			   int status, u64 len, u64 msg_len, u64 tag, u64 src)
{
	struct dmaplane_cqe cqe = {
		.ctx = ctx, .len = len, .msg_len = msg_len, .tag = tag,
		.src = src, .status = status, .opcode = opcode,
	};

	dmaplane_msg_post(ep, &cqe);
}

/**
 * dmaplane_folio_run() - pages of one folio that follow each other
 * @pages: pages
 * @nr: number of @pages, at least 1
 *
 * A single copy_page_{to,from}_iter() call covers them (both take any
 * offset within a compound page), so a transparent huge page is copied
 * in one call rather than one per 4 KiB.
 *
 * Return: how many of @pages, from the first, follow each other in its folio.
 */
long dmaplane_folio_run(struct page **pages, long nr)
{
	struct folio *folio = page_folio(pages[0]);
	long i;

	if (!folio_test_large(folio))
		return 1;
	/*
	 * A folio's pages are consecutive in the memory map (why newer
	 * kernels dropped nth_page()), so pages[0] + i is the folio's i-th
	 * page while pages[i] is in the folio; a shorter run is only a
	 * smaller copy.
	 */
	for (i = 1; i < nr; i++)
		if (page_folio(pages[i]) != folio || pages[i] != pages[0] + i)
			break;
	return i;
}

/*
 * A copy of at most COPY_SELF_MAX bytes between @iter and the caller's
 * own memory at @uaddr (a message between two endpoints of one process:
 * to itself, to another thread's endpoint): through a buffer on the
 * stack with copy_{to,from}_user(), as any system call copies, rather
 * than pinning the page.  Not inlined: its buffer stays out of
 * copy_remote()'s frame.
 */
static noinline int copy_self(u64 uaddr, u64 len, struct iov_iter *iter,
			      bool to_remote)
{
	void __user *p = u64_to_user_ptr(uaddr);
	u8 bounce[COPY_SELF_MAX];

	if (to_remote) {
		if (copy_from_iter(bounce, len, iter) != len ||
		    copy_to_user(p, bounce, len))
			return -EFAULT;
	} else {
		if (copy_from_user(bounce, p, len) ||
		    copy_to_iter(bounce, len, iter) != len)
			return -EFAULT;
	}
	return 0;
}

/*
 * Copy between @len bytes at @uaddr in @mm (another process's address
 * space, or the caller's own) and @iter.
 *
 * When the range lies in a registration of @mm's registration cache (a
 * buffer registered once and deregistered stays pinned there), the copy
 * goes through those pages and pins nothing: dmaplane_mr_cache_copy().
 * Posting a large receive or queueing a large rendezvous send makes one
 * (msg_register()); otherwise only what the process registered is
 * reused.  (A receive within one page brings its own pinned page:
 * recv_pin(); its copy does not come here.)  A small copy within the
 * caller's own address space goes through copy_self().
 *
 * Otherwise the pages are pinned at most COPY_PAGES at a time.  Each run
 * of pages of one folio is copied in one call; unpinning (and dirtying,
 * when the pages were written) is done once per folio of a batch by
 * unpin_user_pages_dirty_lock().  The CPU is offered to others every
 * COPY_RESCHED bytes rather than every batch: often enough for a large
 * copy, and a receiver polling its ring on the same CPU gets it less
 * often while the copy it waits for is still running.  @foll adds
 * FOLL_NOFAULT for a helper of a split copy (copy_split_chunk()).
 */
static int copy_remote(struct mm_struct *mm, u64 uaddr, u64 len,
		       struct iov_iter *iter, bool to_remote, unsigned int foll)
{
	struct page *pages[COPY_PAGES];
	u64 copied = 0;
	int ret;

	if (!mmget_not_zero(mm))
		return -ECONNRESET;
	ret = dmaplane_mr_cache_copy(mm, uaddr, len, iter, to_remote);
	if (ret != -ENOENT) {
		if (!ret)
			dmaplane_stat_inc(copies_cached);
		goto out_mmput;
	}
	if (mm == current->mm && len <= COPY_SELF_MAX) {
		ret = copy_self(uaddr, len, iter, to_remote);
		goto out_mmput;
	}
	dmaplane_stat_inc(copies_pinned);
	ret = 0;
	while (len) {
		unsigned long off = offset_in_page(uaddr);
		unsigned long nr = min_t(u64, COPY_PAGES,
					 DIV_ROUND_UP(off + len, PAGE_SIZE));
		long pinned, i, run;

		mmap_read_lock(mm);
		pinned = dmaplane_pin_user_pages_remote(mm, uaddr & PAGE_MASK, nr,
							foll | (to_remote ? FOLL_WRITE : 0),
							pages);
		mmap_read_unlock(mm);
		if (pinned <= 0) {
			ret = pinned ? pinned : -EFAULT;
			break;
		}
		for (i = 0; i < pinned && len; i += run) {
			size_t n, done;

			run = dmaplane_folio_run(pages + i, pinned - i);
			n = min_t(u64, run * PAGE_SIZE - off, len);
			if (to_remote)
				done = copy_page_from_iter(pages[i], off, n, iter);
			else
				done = copy_page_to_iter(pages[i], off, n, iter);
			if (done != n) {
				ret = -EFAULT;
				break;
			}
			uaddr += n;
			len -= n;
			copied += n;
			off = 0;
		}
		unpin_user_pages_dirty_lock(pages, pinned, to_remote);
		if (ret)
			break;
		if (fatal_signal_pending(current)) {
			ret = -EINTR;
			break;
		}
		if (copied >= COPY_RESCHED) {
			cond_resched();
			copied = 0;
		}
	}
out_mmput:
	mmput(mm);
	return ret;
}

/*
 * Copy in the iovec array of an F_IOV operation: struct iovec of the
 * caller's ABI (a 32-bit process passes struct compat_iovec).
 */
static int ubuf_copy_iovec(struct iovec *segs, u64 uaddr, u32 n)
{
#ifdef CONFIG_COMPAT
	if (in_compat_syscall()) {
		const struct compat_iovec __user *cvec = u64_to_user_ptr(uaddr);
		struct compat_iovec cv;
		u32 i;

		for (i = 0; i < n; i++) {
			if (copy_from_user(&cv, &cvec[i], sizeof(cv)))
				return -EFAULT;
			segs[i].iov_base = compat_ptr(cv.iov_base);
			segs[i].iov_len = cv.iov_len;
		}
		return 0;
	}
#endif
	if (copy_from_user(segs, u64_to_user_ptr(uaddr), n * sizeof(*segs)))
		return -EFAULT;
	return 0;
}

static void ubuf_uncharge(struct dmaplane_ubuf *b, u32 n)
{
	atomic64_sub((u64)n * sizeof(*b->segs), &b->charged->iov_bytes);
}

/* The buffer of an F_REGION operation: a range of one of @ep's regions. */
static int ubuf_from_region(struct dmaplane_ep *ep, struct dmaplane_ubuf *b,
			    const struct dmaplane_op *op)
{
	bool write = op->opcode == DMAPLANE_OP_RECV || op->opcode == DMAPLANE_OP_GET;
	struct dmaplane_region *r;
	u64 end;

	r = dmaplane_region_get(ep, op->region, DMAPLANE_REGION_ANY);
	if (IS_ERR(r))
		return PTR_ERR(r) == -EINVAL ? -ENOENT : PTR_ERR(r);
	if (check_add_overflow(op->addr, op->len, &end) || end > r->len) {
		dmaplane_region_put(r);
		return -ERANGE;
	}
	if (write && !(r->access & DMAPLANE_ACCESS_LOCAL_WRITE)) {
		dmaplane_region_put(r);
		return -EACCES;
	}
	if (READ_ONCE(r->invalid)) {
		dmaplane_region_put(r);
		return -EFAULT;
	}
	b->region = r;
	b->roff = op->addr;
	b->segs = &b->one;
	b->nsegs = 0;
	b->len = op->len;
	return 0;
}

/*
 * Describe the buffer of @op (one range, an iovec with F_IOV, a region's
 * range with F_REGION).  An iovec's copy counts against @ep's iov_budget
 * until ubuf_free().
 */
static int ubuf_from_op(struct dmaplane_ep *ep, struct dmaplane_ubuf *b,
			const struct dmaplane_op *op)
{
	u32 i;

	memset(b, 0, sizeof(*b));
	if (op->flags & DMAPLANE_OP_F_REGION)
		return ubuf_from_region(ep, b, op);
	if (!(op->flags & DMAPLANE_OP_F_IOV)) {
		if (!access_ok(u64_to_user_ptr(op->addr), op->len))
			return -EFAULT;
		b->one.iov_base = u64_to_user_ptr(op->addr);
		b->one.iov_len = op->len;
		b->segs = &b->one;
		b->nsegs = 1;
		b->len = op->len;
		return 0;
	}
	if (!op->len || op->len > UIO_MAXIOV)
		return -EINVAL;
	b->charged = ep;
	if (atomic64_add_return(op->len * sizeof(*b->segs), &ep->iov_bytes) >
	    READ_ONCE(iov_budget)) {
		ubuf_uncharge(b, op->len);
		return -EAGAIN;
	}
	b->segs = kmalloc_array(op->len, sizeof(*b->segs), GFP_KERNEL_ACCOUNT);
	if (!b->segs) {
		ubuf_uncharge(b, op->len);
		return -ENOMEM;
	}
	if (ubuf_copy_iovec(b->segs, op->addr, op->len))
		goto err_fault;
	b->nsegs = op->len;
	b->len = 0;
	for (i = 0; i < b->nsegs; i++) {
		if (!access_ok(b->segs[i].iov_base, b->segs[i].iov_len))
			goto err_fault;
		b->len += b->segs[i].iov_len;
		if (b->len > MAX_RW_COUNT) {
			kfree(b->segs);
			ubuf_uncharge(b, op->len);
			return -EMSGSIZE;
		}
	}
	return 0;

err_fault:
	kfree(b->segs);
	ubuf_uncharge(b, op->len);
	return -EFAULT;
}

/*
 * Free an iovec copy (once: a second call does nothing).  Done before the
 * operation's completion is posted, so that a caller who sees it has the
 * budget back.
 */
static void ubuf_free(struct dmaplane_ubuf *b)
{
	if (b->region) {
		dmaplane_region_put(b->region);
		b->region = NULL;
	}
	if (b->segs != &b->one) {
		kfree(b->segs);
		ubuf_uncharge(b, b->nsegs);
		b->segs = &b->one;
	}
}

/*
 * Move a buffer description (the single-range storage is inline); @src
 * is left empty.
 */
static void ubuf_move(struct dmaplane_ubuf *dst, struct dmaplane_ubuf *src)
{
	*dst = *src;
	if (src->segs == &src->one)
		dst->segs = &dst->one;
	src->segs = &src->one;
	src->region = NULL;
}

/**
 * dmaplane_ubuf_iter() - an iterator over the first bytes of a buffer
 * @b: a buffer of the current task (user memory, or a region)
 * @dir: %ITER_SOURCE or %ITER_DEST
 * @len: bytes, at most @b's length
 * @iter: set up here
 * @map: what a region's iterator holds, for dmaplane_ubuf_iter_end()
 *
 * Return: 0 or as dmaplane_region_iter(); dmaplane_ubuf_iter_end() must
 * follow a success.
 */
int dmaplane_ubuf_iter(struct dmaplane_ubuf *b, int dir, u64 len,
		       struct iov_iter *iter, struct dmaplane_region_map *map)
{
	map->r = NULL;
	if (b->region)
		return dmaplane_region_iter(b->region, b->roff, len, dir == ITER_DEST,
					    iter, map);
	iov_iter_init(iter, dir, b->segs, b->nsegs, b->len);
	iov_iter_truncate(iter, len);
	return 0;
}

/**
 * dmaplane_ubuf_iter_end() - the end of a dmaplane_ubuf_iter() iterator
 * @map: its map
 *
 * Return: 0, or -EFAULT when a region went away during the copy.
 */
int dmaplane_ubuf_iter_end(struct dmaplane_region_map *map)
{
	return map->r ? dmaplane_region_iter_end(map) : 0;
}

/**
 * struct copy_side - one side of a copy between two address spaces
 *	(a split copy's, or copy_remote_ubuf()'s)
 * @mm: user memory of this address space (mmgrab()ed by its owner), or
 *	NULL for a region
 * @segs: @mm's ranges, in order (a buffer's own array, which outlives
 *	the copy)
 * @nsegs: entries of @segs
 * @region: a region (referenced by the caller), or NULL; for a split
 *	copy, one with pages (copy_side_of())
 * @addr: the offset in @region
 */
struct copy_side {
	struct mm_struct *mm;
	const struct iovec *segs;
	u32 nsegs;
	struct dmaplane_region *region;
	u64 addr;
};

/*
 * The segment of @c's ranges in which byte @off lies, from @c->segs; @off
 * becomes the offset in it.  @off is below the side's length.
 */
static const struct iovec *copy_side_seg(const struct copy_side *c, u64 *off)
{
	const struct iovec *seg = c->segs;

	while (*off >= seg->iov_len && seg + 1 < c->segs + c->nsegs) {
		*off -= seg->iov_len;
		seg++;
	}
	return seg;
}

/*
 * Copy @n bytes at @off of side @c (user memory of another task, or a
 * region) to (@to_side) or from @iter, @foll as for copy_remote().
 */
static int copy_side_copy(const struct copy_side *c, u64 off, u64 n,
			  struct iov_iter *iter, bool to_side, unsigned int foll)
{
	const struct iovec *seg, *end = c->segs + c->nsegs;
	int ret = 0;

	if (c->region)
		return dmaplane_region_copy(c->region, c->addr + off, n, iter, to_side);
	for (seg = copy_side_seg(c, &off); n && seg < end && !ret; seg++, off = 0) {
		u64 m = off < seg->iov_len ? min_t(u64, seg->iov_len - off, n) : 0;

		if (m)
			ret = copy_remote(c->mm, (u64)(uintptr_t)seg->iov_base + off, m,
					  iter, to_side, foll);
		n -= m;
	}
	return ret;
}

/*
 * Copy the first bytes of @iter to or from @b, a buffer of another task
 * (@mm) or a region: copy_side_copy() over all of it.
 */
static int copy_remote_ubuf(struct mm_struct *mm, struct dmaplane_ubuf *b,
			    struct iov_iter *iter, bool to_remote)
{
	struct copy_side side = {
		.mm = mm, .segs = b->segs, .nsegs = b->nsegs,
		.region = b->region, .addr = b->roff,
	};

	return copy_side_copy(&side, 0, min_t(u64, b->len, iov_iter_count(iter)), iter,
			      to_remote, 0);
}

/**
 * struct copy_job - one copy that a caller shares with a helper
 * @src: the side copied from
 * @dst: the side copied to
 * @len: bytes
 * @next: offset of the next chunk (COPY_PAGES pages) not yet claimed;
 *	each side claims one at a time, at least @len once all are claimed
 * @failed: the offset of the chunk the helper could not copy (it then
 *	claims no more, of this job or any other), or @len
 * @status: the caller's result: 0 or -errno
 * @to_remote: the caller's side is @src (else @dst)
 */
struct copy_job {
	struct copy_side src;
	struct copy_side dst;
	u64 len;
	atomic64_t next;
	u64 failed;
	int status;
	bool to_remote;
};

/*
 * The copies of one split: one large copy, or a submission's batch
 * (copy_batch): at most COPY_BATCH copies, each below COPY_BATCH_BYTES,
 * run once they reach COPY_BATCH_BYTES together.
 */
#define COPY_BATCH		16
#define COPY_BATCH_BYTES	SZ_8M

/**
 * struct copy_split - copies shared by their caller and a helper
 * @work: the helper, on copy_peer_wq or copy_wq (copy_split_queue())
 * @jobs: the copies, in the order both sides take them
 * @nr: entries of @jobs
 * @cpu: the CPU the helper is queued on: the last one of the owner of
 *	the other side (&dmaplane_ep.cpu), or -1: where the scheduler puts it
 * @pages: the source's user pages of the helper's chunk, pinned (one more
 *	than COPY_PAGES when the chunk does not start at a page boundary)
 * @bv: the same pages as the iterator the chunk is copied from
 */
struct copy_split {
	struct work_struct work;
	struct copy_job *jobs[COPY_BATCH];
	unsigned int nr;
	int cpu;
	struct page *pages[COPY_PAGES + 1];
	struct bio_vec bv[COPY_PAGES + 1];
};

#define COPY_CHUNK	(COPY_PAGES * PAGE_SIZE)

/* Claim the next chunk of @j: its offset, or @j->len when none is left. */
static u64 copy_split_claim(struct copy_job *j)
{
	return min_t(u64, atomic64_fetch_add(COPY_CHUNK, &j->next), j->len);
}

/*
 * The source's user pages under [@src, @src + @n), and @iter over them:
 * from a registration of the source's registration cache when one covers
 * the range (referenced, not pinned: *@cached, and no mmap_lock), else
 * pinned (present ones only).  Return: the number of pages, or -errno.
 * copy_split_unpin() releases them.
 */
static long copy_split_pin(struct copy_split *s, struct mm_struct *mm, u64 src, u64 n,
			   struct iov_iter *iter, bool *cached)
{
	unsigned long poff = offset_in_page(src);
	unsigned long nr = DIV_ROUND_UP(poff + n, PAGE_SIZE);
	long pinned;

	pinned = dmaplane_mr_cache_get_pages(mm, src, n, s->pages, ARRAY_SIZE(s->pages));
	*cached = pinned > 0;
	if (*cached) {
		dmaplane_stat_inc(copies_split_cached);
		goto out_iter;
	}
	mmap_read_lock(mm);
	pinned = dmaplane_pin_user_pages_remote(mm, src & PAGE_MASK, nr, FOLL_NOFAULT,
						s->pages);
	mmap_read_unlock(mm);
	if (pinned < 0)
		return pinned;
	if (pinned != nr) {
		unpin_user_pages(s->pages, pinned);
		return -EFAULT;
	}
out_iter:
	dmaplane_bvec_pages(s->bv, s->pages, pinned, poff, n);
	iov_iter_bvec(iter, ITER_SOURCE, s->bv, pinned, n);
	return pinned;
}

/* Release the @n pages of copy_split_pin() (@cached: referenced, not pinned). */
static void copy_split_unpin(struct copy_split *s, long n, bool cached)
{
	if (cached)
		dmaplane_pages_put(s->pages, n);
	else
		unpin_user_pages(s->pages, n);
}

/*
 * The helper's chunk of @j: @n bytes at @off, from its source's user
 * pages (only those present; through its registration cache when it
 * covers them), a range of the source at a time, into the destination
 * without faulting.
 */
static int copy_split_pinned(struct copy_split *s, struct copy_job *j, u64 off, u64 n)
{
	const struct iovec *end = j->src.segs + j->src.nsegs;
	u64 soff = off;
	const struct iovec *seg = copy_side_seg(&j->src, &soff);
	int ret = 0;

	for (; n && seg < end && !ret; seg++, soff = 0) {
		u64 m = soff < seg->iov_len ? min_t(u64, seg->iov_len - soff, n) : 0;
		struct iov_iter iter;
		bool cached;
		long pinned;

		if (!m)
			continue;
		pinned = copy_split_pin(s, j->src.mm, (u64)(uintptr_t)seg->iov_base + soff, m,
					&iter, &cached);
		if (pinned < 0)
			return pinned;
		ret = copy_side_copy(&j->dst, off, m, &iter, true, FOLL_NOFAULT);
		copy_split_unpin(s, pinned, cached);
		off += m;
		n -= m;
	}
	return ret;
}

/*
 * Copy the chunk of @j at @off.  By the helper (@s): from the source's
 * pages (user pages only if present) into the destination without
 * faulting.  By the caller (@s NULL): between its own side, its memory
 * faulted in as a system call does (or one of its regions), and the
 * other side.
 */
static int copy_split_chunk(struct copy_split *s, struct copy_job *j, u64 off)
{
	/* The iterator is over the source (the helper's, or the caller's own). */
	bool from_it = s || j->to_remote;
	const struct copy_side *it = from_it ? &j->src : &j->dst;
	const struct copy_side *other = from_it ? &j->dst : &j->src;
	struct dmaplane_region_map map = { .r = NULL };
	u64 n = min_t(u64, COPY_CHUNK, j->len - off);
	struct iov_iter iter;
	int ret, end;

	if (!it->region && s)
		return copy_split_pinned(s, j, off, n);
	if (it->region) {
		ret = dmaplane_region_iter(it->region, it->addr + off, n, !from_it, &iter, &map);
		if (ret)
			return ret;
	} else {
		/* The caller's own ranges: checked by access_ok() when taken. */
		iov_iter_init(&iter, from_it ? ITER_SOURCE : ITER_DEST, it->segs, it->nsegs,
			      off + n);
		iov_iter_advance(&iter, off);
	}
	ret = copy_side_copy(other, off, n, &iter, from_it, s ? FOLL_NOFAULT : 0);
	if (it->region) {
		end = dmaplane_region_iter_end(&map);
		ret = ret ?: end;
	}
	return ret;
}

/*
 * The helper: claim chunks and copy them, job after job, in neither
 * address space of the copies.  It pins only user pages that are present
 * (FOLL_NOFAULT on both sides): it never waits for a fault (a userfaultfd
 * handler, I/O), which its caller, who waits for it, could not interrupt.
 * At the first chunk it cannot copy it stops; the caller copies that
 * chunk itself.
 */
static void copy_split_work(struct work_struct *work)
{
	struct copy_split *s = container_of(work, struct copy_split, work);
	unsigned int i;
	bool stop = false;
	u64 off;

	for (i = 0; i < s->nr && !stop; i++) {
		struct copy_job *j = s->jobs[i];

		if (j->src.mm && !mmget_not_zero(j->src.mm))
			break;
		while ((off = copy_split_claim(j)) < j->len) {
			if (copy_split_chunk(s, j, off)) {
				j->failed = off;
				stop = true;
				break;
			}
		}
		if (j->src.mm)
			mmput(j->src.mm);
	}
}

/*
 * Start the helper of @s.  A message's copy is waited for by the other
 * side's owner, whose CPU is idle or soon will be (it sleeps in poll(),
 * or spins on its ring and gives way to a woken kworker): the helper goes
 * there, on copy_peer_wq.  Left to the scheduler (copy_wq, unbound), it
 * wakes where a CPU looks idle at that instant: when the other side has
 * not gone to sleep yet, on the caller's own CPU, behind the caller, and
 * copies nothing until the caller is done.  A CPU that went offline since
 * the hint was taken is no harm: the work then runs unbound.
 */
static void copy_split_queue(struct copy_split *s)
{
	int cpu = s->cpu;

	if (cpu >= 0 && cpu < nr_cpu_ids && cpu != raw_smp_processor_id() &&
	    cpu_online(cpu)) {
		dmaplane_stat_inc(copies_split_peer);
		queue_work_on(cpu, copy_peer_wq, &s->work);
		return;
	}
	queue_work(copy_wq, &s->work);
}

/*
 * Run the copies of @s: with a helper when @helper (copy_split_queue()), both
 * claiming chunks of COPY_PAGES pages, job after job, and copying them,
 * each at its own speed, so that the CPU a waiting receiver leaves idle
 * copies part of the data.  When no CPU is free the helper starts late or
 * never; the caller then claims every chunk, and cancels the helper if it
 * has not started.  Each job's status is the caller's: the helper's
 * failures are not errors (the caller copies the chunk again).  Returns
 * when every chunk has landed.
 */
static void copy_split_run(struct copy_split *s, bool helper)
{
	unsigned int i;
	u64 off;

	if (helper) {
		INIT_WORK(&s->work, copy_split_work);
		dmaplane_stat_inc(copies_split);
		copy_split_queue(s);
	}
	for (i = 0; i < s->nr; i++) {
		struct copy_job *j = s->jobs[i];

		while (!j->status && (off = copy_split_claim(j)) < j->len)
			j->status = copy_split_chunk(NULL, j, off);
		if (j->status)	/* the helper claims no more of it */
			atomic64_set(&j->next, j->len);
	}
	if (!helper)
		return;
	cancel_work_sync(&s->work);
	for (i = 0; i < s->nr; i++) {
		struct copy_job *j = s->jobs[i];

		if (j->status || j->failed >= j->len)
			continue;
		dmaplane_stat_inc(copies_split_redone);
		j->status = copy_split_chunk(NULL, j, j->failed);
	}
}

/* A job of @n bytes from @src to @dst, unclaimed; @to_remote as in &struct copy_job. */
static void copy_job_init(struct copy_job *j, const struct copy_side *src,
			  const struct copy_side *dst, u64 n, bool to_remote)
{
	j->src = *src;
	j->dst = *dst;
	j->len = n;
	atomic64_set(&j->next, 0);
	j->failed = n;
	j->status = 0;
	j->to_remote = to_remote;
}

/* Bytes from which a copy, or a batch of them, is shared with a helper. */
static u64 copy_split_bytes(void)
{
	unsigned long min = READ_ONCE(copy_split_min);

	return min ? max_t(u64, min, 2 * COPY_CHUNK) : U64_MAX;
}

/*
 * Copy @n bytes between the remote side @rem and the local side @loc
 * (the caller's own memory, or one of its regions), @to_remote as for
 * copy_remote(), with a helper: copy_split_run().
 *
 * Return: 0, or as copy_remote() and dmaplane_region_copy().
 */
static int copy_split(const struct copy_side *rem, const struct copy_side *loc,
		      u64 n, bool to_remote, int cpu)
{
	struct copy_split *s;
	struct copy_job j;
	u64 off;

	copy_job_init(&j, to_remote ? loc : rem, to_remote ? rem : loc, n, to_remote);
	s = kmalloc(sizeof(*s), GFP_KERNEL_ACCOUNT);
	if (!s) {
		/* Alone, a chunk at a time (an iterator is at most MAX_RW_COUNT). */
		for (off = 0; !j.status && off < n; off += COPY_CHUNK)
			j.status = copy_split_chunk(NULL, &j, off);
		return j.status;
	}
	s->jobs[0] = &j;
	s->nr = 1;
	s->cpu = cpu;
	copy_split_run(s, true);
	kfree(s);
	return j.status;
}

/*
 * @b as a side of a split copy: user memory of @mm (its ranges), or a
 * range of a region with pages (an arena, registered memory; not an
 * imported dma-buf, which is mapped rather than paged).  Return: whether
 * it can be.
 */
static bool copy_side_of(struct dmaplane_ubuf *b, struct mm_struct *mm,
			 struct copy_side *side)
{
	if (b->region) {
		if (!b->region->ops->pages)
			return false;
		*side = (struct copy_side){ .region = b->region, .addr = b->roff };
		return true;
	}
	if (!mm || !b->nsegs)
		return false;
	*side = (struct copy_side){ .mm = mm, .segs = b->segs, .nsegs = b->nsegs };
	return true;
}

/*
 * Copy @n bytes between @b, a buffer of another task (@mm) or a region,
 * and @lb, a buffer of the caller's own (@lmm, its address space),
 * @to_remote as for copy_remote().  A copy of at least copy_split_min
 * bytes between user memory and regions with pages is shared with a
 * helper: copy_split(), which builds an iterator per chunk, its helper
 * on CPU @cpu (&struct copy_split; -1: anywhere).  Any other is one
 * iterator over @lb: copy_remote_ubuf().
 *
 * Return: 0, or as copy_remote() and dmaplane_region_copy().
 */
static int copy_remote_split(struct mm_struct *mm, struct dmaplane_ubuf *b,
			     struct mm_struct *lmm, struct dmaplane_ubuf *lb,
			     u64 n, bool to_remote, int cpu)
{
	struct dmaplane_region_map map;
	struct copy_side rem, loc;
	struct iov_iter iter;
	int ret, end;

	if (n >= copy_split_bytes() && lmm == current->mm &&
	    copy_side_of(b, mm, &rem) && copy_side_of(lb, lmm, &loc))
		return copy_split(&rem, &loc, n, to_remote, cpu);
	ret = dmaplane_ubuf_iter(lb, to_remote ? ITER_SOURCE : ITER_DEST, n, &iter, &map);
	if (!ret)
		ret = copy_remote_ubuf(mm, b, &iter, to_remote);
	end = dmaplane_ubuf_iter_end(&map);
	return ret ?: end;
}

/*
 * A message; for an eager one (@eager) of up to %MSG_INLINE bytes, with
 * room for its payload.  msg_data_alloc() gives it its payload buffer.
 */
static struct dmaplane_msg *msg_alloc(bool eager, u64 len, gfp_t gfp)
{
	size_t inl = eager && len <= MSG_INLINE ? max_t(size_t, len, 1) : 0;
	struct dmaplane_msg *msg;

	return kzalloc(struct_size(msg, inl, inl), gfp);
}

/*
 * The buffer for the @len bytes of eager payload of @msg, which came from
 * msg_alloc() with the same @len: inline, or its own.
 */
static int msg_data_alloc(struct dmaplane_msg *msg, u64 len, gfp_t gfp)
{
	msg->data = len <= MSG_INLINE ? msg->inl : kvmalloc(max_t(u64, len, 1), gfp);
	return msg->data ? 0 : -ENOMEM;
}

/* Free @msg and its eager payload (a rendezvous message has none). */
static void msg_free_data(struct dmaplane_msg *msg)
{
	if (msg->data != msg->inl)
		kvfree(msg->data);
	kfree(msg);
}

/*
 * A receive whose buffer lies within one page pins that page when it is
 * posted, in the receiver's own context: pin_user_pages_fast() walks the
 * page tables without the mmap_lock.  The sender that takes the receive
 * then copies into the page (recv_page_copy()) instead of pinning it in
 * the receiver's address space (copy_remote(): mmap_lock, the slow walk,
 * the larger part of copying a small message into another process).
 * Until the receive completes, the data lands in the page
 * mapped at post time (a buffer munmap()ed or MADV_DONTNEED'ed while its
 * receive is posted does not see it, as with any pinned buffer; MPI
 * forbids touching a pending receive's buffer).  Only a page mapped
 * writable now is pinned (FOLL_NOFAULT): posting never faults the buffer
 * in, so it never waits for a userfaultfd handler or for I/O.
 *
 * The pin is FOLL_LONGTERM (a receive may stay posted for long) and
 * charged to RLIMIT_MEMLOCK and the module cap while the receive lives;
 * an endpoint keeps at most recv_pins_max such pins (64 pages: a
 * process's RLIMIT_MEMLOCK stays for its registrations).  Only anonymous
 * memory is kept (a long pin of page cache would be dirtied behind the
 * file system's writeback).  Beyond those limits (RLIMIT_MEMLOCK checked
 * without the CAP_IPC_LOCK exemption: no capability check per receive),
 * in a registration (whose cached pages serve the copy: nothing is
 * pinned), from a given endpoint of the same process, or when the page
 * cannot be pinned, the receive is posted
 * without it and copied into as before: posting never fails for it.  A
 * receive that a waiting (unexpected) message matches takes it without
 * the pin (do_recv()), and so does one that asks for its bytes in its
 * completion (%DMAPLANE_OP_F_INLINE: send_expected()).
 */
static void recv_pin(struct dmaplane_ep *ep, struct dmaplane_recv *r)
{
	struct dmaplane_ubuf *b = &r->buf;
	unsigned long a;

	if (b->region || b->nsegs != 1 || !b->len || !ep->mm || current->mm != ep->mm ||
	    r->inl)
		return;
	a = (unsigned long)b->segs[0].iov_base;
	if (offset_in_page(a) + b->len > PAGE_SIZE)
		return;
	/*
	 * From an endpoint of this process: its sender copies within its
	 * own address space (copy_self()), cheaper than this pin.
	 */
	if (r->m.src != DMAPLANE_ANY_SRC && dmaplane_ep_uid_in_mm(r->m.src, ep->mm))
		return;
	/* The slot first: a full endpoint skips the cache look-up too. */
	if (atomic_inc_return(&ep->recv_pins) > READ_ONCE(recv_pins_max) ||
	    dmaplane_mr_cache_covers(ep->mm, a, b->len, true))
		goto err_unclaim;
	if (dmaplane_charge_pages_within(ep->mm, 1))
		goto err_unclaim;
	if (pin_user_pages_fast(a & PAGE_MASK, 1, FOLL_WRITE | FOLL_LONGTERM | FOLL_NOFAULT,
				&r->page) != 1)
		goto err_uncharge;
	if (!PageAnon(r->page))
		goto err_unpin;
	r->page_off = offset_in_page(a);
	dmaplane_stat_inc(recv_pins);
	return;

err_unpin:
	unpin_user_page(r->page);
err_uncharge:
	r->page = NULL;
	dmaplane_uncharge_pages(ep->mm, 1);
err_unclaim:
	atomic_dec(&ep->recv_pins);
}

/*
 * A posted receive, a send queued as a rendezvous, or a send whose copy
 * a helper may share (do_send()), whose buffer (a range of an iovec
 * buffer at a time) holds at least msg_reg_min bytes keeps the buffer
 * registered in the registration cache of the process (mr.c:
 * dmaplane_mr_cache_add_msg() finds an entry covering it, or pins one,
 * charged to RLIMIT_MEMLOCK and bounded by mr_cache_msg_mb, and leaves
 * it in the cache's LRU when the message is gone).  The other process's
 * copies into or out of the buffer go through its pages (copy_remote():
 * pinning nothing; a helper sharing the copy reads them unpinned too:
 * copy_split_pin()), and so do those of every later message in the same
 * buffer while the entry lasts; munmap() and the like end it as they end
 * a registration.  Only pages mapped writable now are pinned.  A
 * message never fails for it: without the entry the copies pin the pages
 * themselves.  Called with no lock held, by the process itself.
 */
static void msg_register(struct dmaplane_ep *ep, const struct iovec *segs, u32 nsegs)
{
	u64 min = READ_ONCE(msg_reg_min);
	u32 i;

	if (!min || !ep->mm || current->mm != ep->mm)
		return;
	for (i = 0; i < nsegs; i++) {
		if (segs[i].iov_len >= min)
			dmaplane_mr_cache_add_msg(ep, (unsigned long)segs[i].iov_base,
						  segs[i].iov_len);
	}
}

/* The ranges of a rendezvous send that msg_register() looks at, at most. */
#define MSG_REG_SEGS	4

/*
 * The first MSG_REG_SEGS ranges of @b of at least msg_reg_min bytes, into
 * @reg (a rendezvous send's buffer moves into its message, which its
 * receiver may free as soon as it is queued); returns how many.
 */
static u32 msg_reg_ranges(const struct dmaplane_ubuf *b, struct iovec *reg)
{
	u64 min = READ_ONCE(msg_reg_min);
	u32 i, n = 0;

	if (!min || b->region)
		return 0;
	for (i = 0; i < b->nsegs && n < MSG_REG_SEGS; i++) {
		if (b->segs[i].iov_len >= min)
			reg[n++] = b->segs[i];
	}
	return n;
}

/* Copy the first @n bytes of @iter into the page of a pinned receive. */
static int recv_page_copy(struct dmaplane_recv *r, u64 n, struct iov_iter *iter)
{
	r->dirty = true;
	return copy_page_from_iter(r->page, r->page_off, n, iter) == n ? 0 : -EFAULT;
}

/*
 * Set @iter to write the first @n bytes of the page of a pinned receive,
 * through @bv (which must live as long as @iter).
 */
static void recv_page_iter(struct dmaplane_recv *r, u64 n, struct bio_vec *bv,
			   struct iov_iter *iter)
{
	r->dirty = true;
	bvec_set_page(bv, r->page, n, r->page_off);
	iov_iter_bvec(iter, ITER_DEST, bv, 1, n);
}

/*
 * A receive for @ep, zeroed: one that completed from @ep's cache, or a
 * new allocation.  The cache spares a receive's kmalloc() and kfree(),
 * the latter often on the sender's CPU, and their memory cgroup charges
 * (in 2026-12-04's profile 6-8% of a small message's path).
 */
static struct dmaplane_recv *recv_alloc(struct dmaplane_ep *ep)
{
	struct dmaplane_recv *r = NULL;

	spin_lock(&ep->recv_cache_lock);
	if (ep->recv_cached)
		r = ep->recv_cache[--ep->recv_cached];
	spin_unlock(&ep->recv_cache_lock);
	if (!r)
		return kzalloc(sizeof(*r), GFP_KERNEL_ACCOUNT);
	memset(r, 0, sizeof(*r));
	return r;
}

/*
 * Give back receive @r of @ep, whose buffer and page are released: to
 * @ep's cache while it has room.  Any context that holds @ep: its owner,
 * a sender, the delivery work, the transport.
 */
static void recv_release(struct dmaplane_ep *ep, struct dmaplane_recv *r)
{
	spin_lock(&ep->recv_cache_lock);
	if (ep->recv_cached < DMAPLANE_RECV_CACHE) {
		ep->recv_cache[ep->recv_cached++] = r;
		r = NULL;
	}
	spin_unlock(&ep->recv_cache_lock);
	kfree(r);
}

static void recv_free(struct dmaplane_recv *r)
{
	if (r->page) {
		unpin_user_pages_dirty_lock(&r->page, 1, r->dirty);
		dmaplane_uncharge_pages(r->owner->mm, 1);
		atomic_dec(&r->owner->recv_pins);
		dmaplane_stat_dec(recv_pins);
	}
	ubuf_free(&r->buf);
	recv_release(r->owner, r);
}

static void msg_free(struct dmaplane_msg *msg)
{
	if (!msg->data)
		ubuf_free(&msg->buf);
	if (msg->mm)
		mmdrop(msg->mm);
	if (msg->sender)
		dmaplane_ep_put(msg->sender);
	msg_free_data(msg);
}

/*
 * Complete the send of a rendezvous message on its sender's ring, or give
 * back the sender's credit when the sender is gone.
 */
static void rendezvous_send_done(struct dmaplane_msg *msg, int status, u64 len)
{
	dmaplane_msg_complete(msg->sender, DMAPLANE_OP_SEND, msg->ctx, status,
			      len, msg->len, msg->m.tag, 0);
}

/*
 * The completions of receive @r that took unexpected message @msg from
 * this node: @ret is the copy's result.  Frees @msg and @r's buffer.
 */
static void deliver_done(struct dmaplane_ep *ep, struct dmaplane_recv *r,
			 struct dmaplane_msg *msg, int ret)
{
	u64 n = min(r->buf.len, msg->len);

	if (!ret && msg->len > r->buf.len)
		ret = -EMSGSIZE;
	ubuf_free(&r->buf);
	if (!msg->data)
		ubuf_free(&msg->buf);
	recv_complete(ep, r->ctx, ret, ret && ret != -EMSGSIZE ? 0 : n, msg, NULL);

	if (!msg->data) {
		/*
		 * The rendezvous send completes now, with the sender's view:
		 * a receiver killed while it copied (-EINTR) went away.
		 */
		int sret = ret == -EMSGSIZE ? 0 : ret;

		rendezvous_send_done(msg, sret == -ECONNRESET || sret == -EINTR ?
					  -ECONNRESET : sret ? -EIO : 0, msg->len);
	}
	msg_free(msg);
}

/* Unexpected message @msg meets receive @r: move the data, complete. */
static void deliver_unexpected(struct dmaplane_ep *ep, struct dmaplane_recv *r,
			       struct dmaplane_msg *msg)
{
	u64 n = min(r->buf.len, msg->len);
	struct iov_iter iter;
	int ret = 0;

	if (msg->rdv) {
		/* From another node: the transport pulls and completes. */
		dmaplane_ib_pull(msg->rdv, ep, &r->buf, r->ctx);
		msg->rdv = NULL;
		msg_free(msg);
		return;
	}
	if (n && !msg->data && READ_ONCE(msg->sender->dead)) {
		ret = -ECONNRESET;
	} else if (n && !msg->data && !r->page) {
		ret = copy_remote_split(msg->mm, &msg->buf, ep->mm, &r->buf, n, false,
					READ_ONCE(msg->sender->cpu));
	} else if (n) {
		/* Into the page of a pinned receive, or a payload. */
		struct dmaplane_region_map map = { .r = NULL };
		struct bio_vec bv;
		int end;

		if (r->page)
			recv_page_iter(r, n, &bv, &iter);
		else
			ret = dmaplane_ubuf_iter(&r->buf, ITER_DEST, n, &iter, &map);
		if (!ret && msg->data)
			ret = copy_to_iter(msg->data, n, &iter) == n ? 0 : -EFAULT;
		else if (!ret)
			ret = copy_remote_ubuf(msg->mm, &msg->buf, &iter, false);
		end = dmaplane_ubuf_iter_end(&map);
		ret = ret ?: end;
	}
	deliver_done(ep, r, msg, ret);
}

/* Uncount a message leaving the unexpected queue (or a claim). */
static void unexp_uncount(struct dmaplane_ep *ep, struct dmaplane_msg *msg)
{
	lockdep_assert_held(&ep->match_lock);
	if (msg->data)
		ep->unexp_bytes -= msg->len;
	ep->unexp_msgs--;
	dmaplane_stat_dec(unexp_msgs);
}

/*
 * Deliveries wait on the receiving endpoint in matching order; its work
 * copies them in the receiver's address space.  A receive that its owner's
 * ioctl matches while deliveries wait goes behind them, so that receives
 * still complete in the order they matched.  Each holds a reference to the
 * endpoint; an eager payload counts in @deliver_bytes until delivered.
 */
static void deliver_add_locked(struct dmaplane_ep *ep, struct dmaplane_recv *r,
			       struct dmaplane_msg *msg)
{
	lockdep_assert_held(&ep->deliver_lock);
	msg->recv = r;
	kref_get(&ep->ref);
	list_add_tail(&msg->deliver_node, &ep->deliveries);
	ep->deliver_pending++;
	if (msg->data)
		ep->deliver_bytes += msg->len;
	dmaplane_stat_inc(deliveries);
}

/* Queue @msg, matched to @r, for delivery to @ep. */
static void deliver_queue(struct dmaplane_ep *ep, struct dmaplane_recv *r,
			  struct dmaplane_msg *msg)
{
	spin_lock(&ep->deliver_lock);
	deliver_add_locked(ep, r, msg);
	spin_unlock(&ep->deliver_lock);
	queue_work(deliver_wq, &ep->deliver_work);
}

/* Deliver @msg to @r now, or behind the deliveries still waiting. */
static void deliver_or_queue(struct dmaplane_ep *ep, struct dmaplane_recv *r,
			     struct dmaplane_msg *msg)
{
	bool queued = false;

	spin_lock(&ep->deliver_lock);
	if (ep->deliver_pending) {
		deliver_add_locked(ep, r, msg);
		queued = true;
	}
	spin_unlock(&ep->deliver_lock);
	if (queued) {
		queue_work(deliver_wq, &ep->deliver_work);
		return;
	}
	deliver_unexpected(ep, r, msg);
	recv_free(r);
}

static void msg_drop(struct dmaplane_msg *msg);

static void deliver_work(struct work_struct *work)
{
	struct dmaplane_ep *ep = container_of(work, struct dmaplane_ep, deliver_work);
	struct mm_struct *mm = ep->mm;
	bool use_mm = mm && mmget_not_zero(mm);
	unsigned int done = 0;

	/* The receiver's buffers are user addresses of its address space. */
	if (use_mm)
		kthread_use_mm(mm);
	for (;;) {
		struct dmaplane_msg *msg;
		struct dmaplane_recv *r;
		u64 bytes;

		spin_lock(&ep->deliver_lock);
		msg = list_first_entry_or_null(&ep->deliveries, struct dmaplane_msg,
					       deliver_node);
		if (msg)
			list_del(&msg->deliver_node);
		spin_unlock(&ep->deliver_lock);
		if (!msg)
			break;
		r = msg->recv;
		bytes = msg->data ? msg->len : 0;
		if (use_mm && !READ_ONCE(ep->dead)) {
			deliver_unexpected(ep, r, msg);
		} else {
			/* The owner is gone (or going): nothing to copy into. */
			struct dmaplane_cqe cqe = {
				.ctx = r->ctx, .msg_len = msg->len, .tag = msg->m.tag,
				.src = msg->m.src, .status = -ECONNRESET,
				.opcode = DMAPLANE_OP_RECV, .data = msg->cq_data,
				.flags = msg->cqe_flags,
			};

			dmaplane_msg_post(ep, &cqe);
			msg_drop(msg);
		}
		recv_free(r);
		spin_lock(&ep->deliver_lock);
		ep->deliver_pending--;
		ep->deliver_bytes -= bytes;
		spin_unlock(&ep->deliver_lock);
		dmaplane_stat_dec(deliveries);
		done++;
	}
	if (use_mm) {
		kthread_unuse_mm(mm);
		mmput(mm);
	}
	/* Last: the final reference may free @ep (and this work with it). */
	while (done--)
		dmaplane_ep_put(ep);
}

/**
 * dmaplane_ep_deliver_init() - set up an endpoint's delivery queue and its
 *	cache of receives
 * @ep: a new endpoint
 */
void dmaplane_ep_deliver_init(struct dmaplane_ep *ep)
{
	spin_lock_init(&ep->deliver_lock);
	INIT_LIST_HEAD(&ep->deliveries);
	INIT_WORK(&ep->deliver_work, deliver_work);
	spin_lock_init(&ep->recv_cache_lock);
}

/**
 * dmaplane_ep_recv_cache_free() - free an endpoint's cached receives
 * @ep: the endpoint, with its last reference gone
 */
void dmaplane_ep_recv_cache_free(struct dmaplane_ep *ep)
{
	while (ep->recv_cached)
		kfree(ep->recv_cache[--ep->recv_cached]);
}

/* Eager bytes the kernel holds for @ep; under its match_lock. */
static u64 held_bytes(struct dmaplane_ep *ep)
{
	lockdep_assert_held(&ep->match_lock);
	return ep->unexp_bytes + READ_ONCE(ep->deliver_bytes);
}

/*
 * The completions of a send that took receive @r of @dest: @ret is the
 * copy's result; @inl: the bytes received, when the receive takes them in
 * its completion (send_expected()), else NULL.  Frees @r and both buffers.
 */
static void send_expected_done(struct dmaplane_ep *ep, struct dmaplane_ep *dest,
			       struct dmaplane_recv *r, const struct dmaplane_msg *msg,
			       struct dmaplane_ubuf *sbuf, int ret, const u64 *inl)
{
	u64 len = msg->len, n = min(r->buf.len, len);

	ubuf_free(&r->buf);
	ubuf_free(sbuf);
	recv_complete(dest, r->ctx,
		      ret ? (ret == -EFAULT ? -EFAULT : -ECONNRESET) :
		      len > r->buf.len ? -EMSGSIZE : 0,
		      ret ? 0 : n, msg, ret ? NULL : inl);
	msg_complete(ep, DMAPLANE_OP_SEND, msg->ctx, ret, len, len, msg->m.tag, 0);
	recv_free(r);
}

/**
 * struct batch_job - an operation of a submission whose copy waits for
 *	the end of its batch (batch_add_send(), batch_add_recv())
 * @copy: the copy
 * @r: a send's: the receive it took; a receive's: itself
 * @msg: a receive's: the rendezvous message (from this node) it took;
 *	NULL for a send
 * @dest: a send's receiving endpoint (referenced)
 * @sbuf: a send's buffer
 * @ctx: a send's context
 * @tag: a send's tag
 * @len: a send's message length
 * @cq_data: a send's remote completion data, with %DMAPLANE_CQE_F_DATA in
 *	@cqe_flags
 * @cqe_flags: ``DMAPLANE_CQE_F_*`` of a send's receive
 */
struct batch_job {
	struct copy_job copy;
	struct dmaplane_recv *r;
	struct dmaplane_msg *msg;
	struct dmaplane_ep *dest;
	struct dmaplane_ubuf sbuf;
	u64 ctx;
	u64 tag;
	u64 len;
	u64 cq_data;
	u8 cqe_flags;
};

/**
 * struct copy_batch - operations of one dmaplane_submit() whose copies
 *	are shared with one helper
 * @split: the copies, in the order of the operations
 * @jobs: the operations
 * @bytes: the bytes of all copies
 *
 * A window of medium messages (each below copy_split_min) costs one
 * helper, as one large message does, and a window of 1 MiB messages one
 * helper start-up instead of 16.  Only two kinds wait here, each with a
 * copy below %COPY_BATCH_BYTES (a larger one has a helper of its own: its
 * start-up is a small part of its copy, and its completion waits for no
 * other): a send that finds its receive posted, and a receive that finds
 * a rendezvous message of this node waiting.  The batch is run
 * (batch_flush()) before any other operation of the submission matches
 * or completes anything, when %COPY_BATCH have gathered or their copies
 * reach %COPY_BATCH_BYTES, and before dmaplane_submit() returns: the
 * submission's completions are posted in the order they were without the
 * batch, each held for at most the batch's copies (under 16 MiB).
 */
struct copy_batch {
	struct copy_split split;
	struct batch_job jobs[COPY_BATCH];
	u64 bytes;
};

/* Run the copies of @b, then complete its operations, in order. */
static void batch_flush(struct dmaplane_ep *ep, struct copy_batch *b)
{
	unsigned int i;

	if (!b || !b->split.nr)
		return;
	copy_split_run(&b->split, b->bytes >= copy_split_bytes());
	for (i = 0; i < b->split.nr; i++) {
		struct batch_job *bj = &b->jobs[i];
		struct dmaplane_msg key = {
			.m.src = ep->ep_uid, .m.tag = bj->tag, .len = bj->len,
			.ctx = bj->ctx, .cq_data = bj->cq_data,
			.cqe_flags = bj->cqe_flags,
		};

		if (bj->msg) {
			deliver_done(ep, bj->r, bj->msg, bj->copy.status);
			recv_free(bj->r);
			continue;
		}
		send_expected_done(ep, bj->dest, bj->r, &key, &bj->sbuf, bj->copy.status,
				   NULL);
		dmaplane_ep_put(bj->dest);
	}
	b->split.nr = 0;
	b->bytes = 0;
}

/*
 * Whether an operation that may wait in a batch looks for its match as
 * part of one: sharing copies is on and other operations are or may be
 * in it (@more: operations follow in the submission).
 */
static bool batch_wanted(struct copy_batch *b, bool more)
{
	return READ_ONCE(copy_split_min) && (more || (b && b->split.nr));
}

/*
 * The next job of *@batch (allocated here) for the copy of a message of
 * @len bytes from @b (a buffer of @mm) into receive @r (a buffer of
 * @rmm), @to_remote as in &struct copy_job (a send's: @b moves into the
 * job), with the other side's owner on @cpu (the first job's is where
 * the batch's helper goes: &struct copy_split); NULL when a batch does
 * not take it: nothing to copy, %COPY_BATCH_BYTES or more, into a pinned
 * page, a side that is neither user memory nor a region with pages
 * (copy_side_of()), no memory.
 */
static struct batch_job *batch_job_new(struct copy_batch **batch, struct dmaplane_ubuf *b,
				       struct mm_struct *mm, struct dmaplane_recv *r,
				       struct mm_struct *rmm, u64 len, bool to_remote, int cpu)
{
	u64 n = min(r->buf.len, len);
	struct copy_batch *cb = *batch;
	struct copy_side src, dst;
	struct batch_job *bj;

	if (!n || n >= COPY_BATCH_BYTES || r->page || !copy_side_of(b, mm, &src) ||
	    !copy_side_of(&r->buf, rmm, &dst))
		return NULL;
	if (!cb) {
		cb = kmalloc(sizeof(*cb), GFP_KERNEL_ACCOUNT);
		if (!cb)
			return NULL;
		cb->split.nr = 0;
		cb->bytes = 0;
		*batch = cb;
	}
	if (!cb->split.nr)
		cb->split.cpu = cpu;
	bj = &cb->jobs[cb->split.nr];
	if (to_remote) {
		/* A send's buffer: the job keeps it, and its ranges. */
		ubuf_move(&bj->sbuf, b);
		copy_side_of(&bj->sbuf, mm, &src);
	}
	copy_job_init(&bj->copy, &src, &dst, n, to_remote);
	bj->r = r;
	return bj;
}

/* Add @bj, set up, to *@batch; run the batch when it is full. */
static void batch_job_add(struct dmaplane_ep *ep, struct copy_batch *b, struct batch_job *bj)
{
	b->split.jobs[b->split.nr++] = &bj->copy;
	b->bytes += bj->copy.len;
	if (b->split.nr == COPY_BATCH || b->bytes >= COPY_BATCH_BYTES)
		batch_flush(ep, b);
}

/*
 * Let the send of @msg (the fields on do_send()'s stack) from @sbuf into
 * receive @r of @dest wait for the end of the batch: the send's reference
 * to @dest and @sbuf go to the batch.  Return: whether it waits; if not,
 * the caller copies now.
 */
static bool batch_add_send(struct dmaplane_ep *ep, struct dmaplane_ep *dest,
			   struct dmaplane_recv *r, const struct dmaplane_msg *msg,
			   struct dmaplane_ubuf *sbuf, struct copy_batch **batch)
{
	struct batch_job *bj = batch_job_new(batch, sbuf, ep->mm, r, dest->mm, msg->len, true,
					     READ_ONCE(dest->cpu));

	if (!bj)
		return false;
	bj->msg = NULL;
	bj->dest = dest;
	bj->ctx = msg->ctx;
	bj->tag = msg->m.tag;
	bj->len = msg->len;
	bj->cq_data = msg->cq_data;
	bj->cqe_flags = msg->cqe_flags;
	batch_job_add(ep, *batch, bj);
	return true;
}

/*
 * Let receive @r, which took unexpected message @msg, wait for the end of
 * the batch when @msg is a rendezvous of this node and no delivery of @ep
 * waits (which @r would have to follow).  Return: whether it waits.
 */
static bool batch_add_recv(struct dmaplane_ep *ep, struct dmaplane_recv *r,
			   struct dmaplane_msg *msg, struct copy_batch **batch)
{
	struct batch_job *bj;
	bool pending;

	if (msg->data || msg->rdv || READ_ONCE(msg->sender->dead))
		return false;
	spin_lock(&ep->deliver_lock);
	pending = ep->deliver_pending;
	spin_unlock(&ep->deliver_lock);
	if (pending)
		return false;
	bj = batch_job_new(batch, &msg->buf, msg->mm, r, ep->mm, msg->len, false,
			   READ_ONCE(msg->sender->cpu));
	if (!bj)
		return false;
	bj->msg = msg;
	batch_job_add(ep, *batch, bj);
	return true;
}

/* RECV of a message claimed by PROBE: no matching, just the data. */
static int do_recv_claimed(struct dmaplane_ep *ep, const struct dmaplane_op *op)
{
	struct dmaplane_recv *r;
	struct dmaplane_msg *msg;
	int ret;

	if (op->tag || op->ignore)
		return -EINVAL;
	r = recv_alloc(ep);
	if (!r)
		return -ENOMEM;
	r->owner = ep;
	r->ctx = op->ctx;
	ret = ubuf_from_op(ep, &r->buf, op);
	if (ret)
		goto err_free_recv;
	ret = dmaplane_cq_reserve(ep->cq);
	if (ret)
		goto err_free_buf;
	mutex_lock(&ep->match_lock);
	msg = xa_erase(&ep->claims, op->peer);
	if (msg)
		unexp_uncount(ep, msg);
	mutex_unlock(&ep->match_lock);
	if (!msg) {
		dmaplane_cq_unreserve(ep->cq);
		ret = -ENOENT;
		goto err_free_buf;
	}
	deliver_or_queue(ep, r, msg);
	return 0;

err_free_buf:
	ubuf_free(&r->buf);
err_free_recv:
	recv_release(ep, r);
	return ret;
}

/*
 * A receive.  @batch and @more as for do_send(): a receive that takes a
 * rendezvous message of this node may wait in the batch.
 */
static int do_recv(struct dmaplane_ep *ep, const struct dmaplane_op *op,
		   struct copy_batch **batch, bool more)
{
	struct dmaplane_match_msg *mm;
	struct dmaplane_msg *msg;
	struct dmaplane_recv *r;
	u64 src = DMAPLANE_ANY_SRC;
	int ret;

	if (op->flags & DMAPLANE_OP_F_CLAIMED) {
		batch_flush(ep, *batch);
		return do_recv_claimed(ep, op);
	}
	if (op->peer != DMAPLANE_AV_ANY) {
		ret = dmaplane_av_lookup(ep, op->peer, &src);
		if (ret)
			return ret;
	}

	r = recv_alloc(ep);
	if (!r)
		return -ENOMEM;
	ret = ubuf_from_op(ep, &r->buf, op);
	if (ret)
		goto err_free_recv;
	r->m.src = src;
	r->m.tag = op->tag;
	r->m.ignore = op->ignore;
	r->owner = ep;
	r->ctx = op->ctx;
	r->inl = op->flags & DMAPLANE_OP_F_INLINE;

	ret = dmaplane_cq_reserve(ep->cq);
	if (ret)
		goto err_free_buf;
	/*
	 * A message that is here already is copied in now, from the
	 * kernel's buffer or its sender's pages: the receive takes it
	 * without pinning its own page first.  Only a receive that finds
	 * nothing waiting pins (then matches again: a message may have
	 * come in between).  The unlocked look at the count is a hint.
	 */
	if (data_race(ep->matcher.nr_unexp)) {
		mutex_lock(&ep->match_lock);
		mm = dmaplane_match_probe(&ep->matcher, r->m.src, r->m.tag,
					  r->m.ignore, true);
		if (mm)
			goto take_locked;
		mutex_unlock(&ep->match_lock);
	}
	/* Posted, it may match and complete: the batch's receives first. */
	batch_flush(ep, *batch);
	recv_pin(ep, r);
	if (!r->page && !r->buf.region)
		msg_register(ep, r->buf.segs, r->buf.nsegs);

	mutex_lock(&ep->match_lock);
	mm = dmaplane_match_post_recv(&ep->matcher, &r->m);
	if (mm)
		goto take_locked;
	dmaplane_stat_inc(posted_recvs);
	mutex_unlock(&ep->match_lock);
	return 0;

take_locked:
	msg = container_of(mm, struct dmaplane_msg, m);
	unexp_uncount(ep, msg);
	mutex_unlock(&ep->match_lock);
	if (batch_wanted(*batch, more) && batch_add_recv(ep, r, msg, batch))
		return 0;
	batch_flush(ep, *batch);
	deliver_or_queue(ep, r, msg);
	return 0;

err_free_buf:
	ubuf_free(&r->buf);
err_free_recv:
	recv_release(ep, r);
	return ret;
}

/*
 * Take @dest's match_lock for a message: -ECONNRESET, with the lock held
 * all the same, when its file is gone.
 */
static int match_lock_live(struct dmaplane_ep *dest)
{
	mutex_lock(&dest->match_lock);
	return dest->dead ? -ECONNRESET : 0;
}

/* Can the first @len bytes of @b be read now?  A region always can. */
static int ubuf_readable(const struct dmaplane_ubuf *b, u64 len)
{
	u32 i;

	if (b->region)
		return 0;
	for (i = 0; i < b->nsegs && len; i++) {
		size_t n = min_t(u64, b->segs[i].iov_len, len);

		if (fault_in_readable(b->segs[i].iov_base, n))
			return -EFAULT;
		len -= n;
	}
	return 0;
}

/* Copy the first @len bytes of the caller's own @b to @dst. */
static int ubuf_read(struct dmaplane_ubuf *b, void *dst, u64 len)
{
	struct dmaplane_region_map map;
	struct iov_iter iter;
	int ret, end;

	ret = dmaplane_ubuf_iter(b, ITER_SOURCE, len, &iter, &map);
	if (ret)
		return ret;
	if (copy_from_iter(dst, len, &iter) != len)
		ret = -EFAULT;
	end = dmaplane_ubuf_iter_end(&map);
	return ret ?: end;
}

/* Copy the @len bytes of an eager message in from the sender's @b. */
static int msg_copy_in(struct dmaplane_msg *msg, struct dmaplane_ubuf *b, u64 len)
{
	int ret = msg_data_alloc(msg, len, GFP_KERNEL_ACCOUNT);

	return ret ?: ubuf_read(b, msg->data, len);
}

/*
 * Expected: one copy, from the sender's buffer (or the payload @msg
 * copied in) into the receiver's, and both completions.  A receive with
 * %DMAPLANE_OP_F_INLINE takes up to %DMAPLANE_CQE_INLINE_MAX bytes
 * without remote completion data in its completion instead: a copy out
 * of the sender's own memory (the caller's: do_send()), no pin and no
 * write into the receiver's.
 */
static void send_expected(struct dmaplane_ep *ep, struct dmaplane_ep *dest,
			  struct dmaplane_recv *r, const struct dmaplane_msg *msg,
			  struct dmaplane_ubuf *sbuf)
{
	u64 n = min(r->buf.len, msg->len);
	struct kvec kv = { .iov_base = msg->data, .iov_len = n };
	struct dmaplane_region_map map = { .r = NULL };
	struct iov_iter iter;
	bool inl = false;
	u64 inl_data = 0;
	int ret = 0, end;

	if (n && r->inl && n <= sizeof(inl_data) &&
	    !(msg->cqe_flags & DMAPLANE_CQE_F_DATA)) {
		if (msg->data)
			memcpy(&inl_data, msg->data, n);
		else
			ret = ubuf_read(sbuf, &inl_data, n);
		inl = true;
		if (!ret)
			dmaplane_stat_inc(recv_inline);
	} else if (n && !msg->data && !r->page) {
		ret = copy_remote_split(dest->mm, &r->buf, ep->mm, sbuf, n, true,
					READ_ONCE(dest->cpu));
	} else if (n) {
		/* A payload, or into the page of a pinned receive. */
		if (msg->data)
			iov_iter_kvec(&iter, ITER_SOURCE, &kv, 1, n);
		else
			ret = dmaplane_ubuf_iter(sbuf, ITER_SOURCE, n, &iter, &map);
		if (!ret)
			ret = r->page ? recv_page_copy(r, n, &iter) :
			      copy_remote_ubuf(dest->mm, &r->buf, &iter, true);
		end = dmaplane_ubuf_iter_end(&map);
		ret = ret ?: end;
	}
	send_expected_done(ep, dest, r, msg, sbuf, ret, inl ? &inl_data : NULL);
}

/*
 * A send.  @batch: the submission's sends waiting for their copies (see
 * &struct copy_batch); @more: other operations follow in the submission.
 */
static int do_send(struct dmaplane_ep *ep, const struct dmaplane_op *op,
		   struct copy_batch **batch, bool more)
{
	/*
	 * The message's fields: enough for a send that finds its receive
	 * posted, which allocates nothing for the message.
	 */
	struct dmaplane_msg key = {};
	struct iovec reg[MSG_REG_SEGS];
	struct dmaplane_match_recv *mr;
	struct dmaplane_ubuf sbuf;
	u32 nreg = 0;
	struct dmaplane_ep *dest;
	struct dmaplane_msg *msg;
	u64 uid, len;
	bool eager, reg_now;
	int ret;

	if (op->ignore)
		return -EINVAL;
	ret = dmaplane_av_lookup(ep, op->peer, &uid);
	if (ret)
		return ret;
	ret = ubuf_from_op(ep, &sbuf, op);
	if (ret)
		return ret;
	if (DMAPLANE_SRC_NODE_SLOT(uid)) {
		ret = dmaplane_ib_send(ep, uid, op, &sbuf);
		goto out_free_buf;
	}
	len = sbuf.len;
	dest = dmaplane_ep_get_by_uid(uid);
	if (!dest) {
		ret = -ECONNRESET;
		goto out_free_buf;
	}
	/* Checked at AV_INSERT; again here, so no stale handle can cross. */
	if (!dmaplane_ep_same_domain(ep, dest)) {
		ret = -EACCES;
		goto out_put_dest;
	}

	eager = len <= dmaplane_eager_threshold();
	/*
	 * A copy that may be shared with a helper (a large one, or one of a
	 * batch) has the helper read the sender's pages: registered first,
	 * they are found in the cache (copy_split_pin()) rather than
	 * pinned.  Any other send is registered once queued as a rendezvous.
	 */
	reg_now = !eager && !sbuf.region &&
		  (len >= copy_split_bytes() || batch_wanted(*batch, more));
	if (reg_now)
		msg_register(ep, sbuf.segs, sbuf.nsegs);
	key.m.src = ep->ep_uid;
	key.m.tag = op->tag;
	key.len = len;
	key.ctx = op->ctx;
	if (op->flags & DMAPLANE_OP_F_DATA) {
		key.cq_data = op->data;
		key.cqe_flags = DMAPLANE_CQE_F_DATA;
	}
	msg = &key;

	ret = dmaplane_cq_reserve(ep->cq);
	if (ret)
		goto out_put_dest;
	mr = NULL;
	if (!eager && batch_wanted(*batch, more)) {
		/*
		 * A receive that is posted takes the data straight from the
		 * sender's buffer, at the end of the batch.  Without one, the
		 * batch's copies land before the message is queued.
		 */
		ret = match_lock_live(dest);
		if (ret)
			goto err_unlock;
		mr = dmaplane_match_take_recv(&dest->matcher, key.m.src, key.m.tag);
		mutex_unlock(&dest->match_lock);
		if (mr) {
			struct dmaplane_recv *r = container_of(mr, struct dmaplane_recv, m);

			dmaplane_stat_dec(posted_recvs);
			if (batch_add_send(ep, dest, r, &key, &sbuf, batch))
				return 0;
			batch_flush(ep, *batch);
			send_expected(ep, dest, r, &key, &sbuf);
			ret = 0;
			goto out_put_dest;
		}
	}
	batch_flush(ep, *batch);
	if (eager) {
		/*
		 * Memory that cannot be read is refused now, before the send
		 * takes a receive (only a sender unmapping its buffer while it
		 * sends makes the receive fail then).
		 */
		ret = ubuf_readable(&sbuf, len);
		if (ret)
			goto err_unreserve;
		/* A posted receive gets the data straight from the sender's buffer. */
		ret = match_lock_live(dest);
		if (ret)
			goto err_unlock;
		mr = dmaplane_match_take_recv(&dest->matcher, key.m.src, key.m.tag);
		if (!mr)
			mutex_unlock(&dest->match_lock);
	}
	if (!mr) {
		/*
		 * The message may have to wait: it gets an allocation of its
		 * own, and an eager payload is copied in, never under the
		 * receiver's match_lock.  A receive posted in the meantime
		 * takes it at once.
		 */
		msg = msg_alloc(eager, len, GFP_KERNEL_ACCOUNT);
		if (!msg) {
			msg = &key;
			ret = -ENOMEM;
			goto err_unreserve;
		}
		*msg = key;
		if (eager) {
			ret = msg_copy_in(msg, &sbuf, len);
			if (ret)
				goto err_unreserve;
		}
		ret = match_lock_live(dest);
		if (ret)
			goto err_unlock;
		mr = dmaplane_match_arrive(&dest->matcher, &msg->m);
	}
	if (mr) {
		dmaplane_stat_dec(posted_recvs);
		mutex_unlock(&dest->match_lock);
		send_expected(ep, dest, container_of(mr, struct dmaplane_recv, m), msg,
			      &sbuf);
		if (msg != &key)
			msg_free_data(msg);
		ret = 0;
		goto out_put_dest;
	}

	/* Unexpected: within the receiver's budget, or back off. */
	if (dest->unexp_msgs >= READ_ONCE(unexp_max) ||
	    (msg->data && held_bytes(dest) + len > READ_ONCE(unexp_budget))) {
		ret = -EAGAIN;
		goto err_unqueue;
	}
	if (msg->data) {
		dest->unexp_bytes += len;
	} else {
		/* Rendezvous: the message keeps the buffer's description. */
		if (!reg_now)
			nreg = msg_reg_ranges(&sbuf, reg);
		ubuf_move(&msg->buf, &sbuf);
		msg->mm = ep->mm;
		mmgrab(msg->mm);
	}
	kref_get(&ep->ref);
	msg->sender = ep;
	dest->unexp_msgs++;
	dmaplane_stat_inc(unexp_msgs);
	mutex_unlock(&dest->match_lock);

	/* @msg is the receiver's now: it may be taken and freed already. */
	if (eager) {
		ubuf_free(&sbuf);
		msg_complete(ep, DMAPLANE_OP_SEND, op->ctx, 0, len, len,
			     op->tag, 0);
	} else {
		msg_register(ep, reg, nreg);
	}
	ret = 0;
	goto out_put_dest;

err_unqueue:
	dmaplane_match_remove_msg(&dest->matcher, &msg->m);
err_unlock:
	mutex_unlock(&dest->match_lock);
err_unreserve:
	dmaplane_cq_unreserve(ep->cq);
	if (msg != &key)
		msg_free_data(msg);
out_put_dest:
	dmaplane_ep_put(dest);
out_free_buf:
	ubuf_free(&sbuf);
	return ret;
}

/**
 * dmaplane_msg_arrive_remote() - a message from another node arrived
 * @dst: the receiving endpoint's ep_uid
 * @uid: the sender's uid (initial user namespace)
 * @auth_key: the sender's auth key
 * @src: the sender's source value (node slot and ep_uid)
 * @tag: tag
 * @len: message length
 * @cq_data: remote completion data, with %DMAPLANE_CQE_F_DATA in @cqe_flags
 * @cqe_flags: ``DMAPLANE_CQE_F_*`` of the receive that takes it
 * @data: eager: the payload (@len bytes), else NULL
 * @rdv: rendezvous: the transport's state, else NULL.  On success it
 *	belongs to this file until it goes back with dmaplane_ib_pull() or
 *	dmaplane_ib_rdv_drop(); on failure it stays the caller's.
 *
 * The same matching as a send on this node: a posted receive takes the
 * message (its delivery work copies it in), otherwise it waits as
 * unexpected within the receiver's budget.  Called by the transport's
 * completion work: it never faults user memory here.
 *
 * Return: 0, -ECONNRESET (no such endpoint: closed), -EACCES (another
 * security domain), -EAGAIN (the receiver's unexpected budget is full),
 * -ENOMEM.
 */
int dmaplane_msg_arrive_remote(u64 dst, u32 uid, u64 auth_key, u64 src,
			       u64 tag, u64 len, u64 cq_data, u8 cqe_flags,
			       const void *data, struct dmaplane_rdv *rdv)
{
	struct dmaplane_match_recv *mr;
	struct dmaplane_ep *dest;
	struct dmaplane_msg *msg;
	int ret = 0;

	dest = dmaplane_ep_get_by_uid(dst);
	if (!dest)
		return -ECONNRESET;
	if (!dmaplane_ep_cq(dest) || !dmaplane_ep_domain_ok(dest, uid, auth_key)) {
		ret = -EACCES;
		goto out_put_dest;
	}
	msg = msg_alloc(data, len, GFP_KERNEL);
	if (!msg) {
		ret = -ENOMEM;
		goto out_put_dest;
	}
	if (data && msg_data_alloc(msg, len, GFP_KERNEL)) {
		ret = -ENOMEM;
		goto err_free_msg;
	}
	msg->m.src = src;
	msg->m.tag = tag;
	msg->len = len;
	msg->cq_data = cq_data;
	msg->cqe_flags = cqe_flags;
	if (data) {
		/* Out of the connection's receive buffer, which is reposted. */
		memcpy(msg->data, data, len);
	} else {
		msg->rdv = rdv;
		msg->buf.segs = &msg->buf.one;
	}

	ret = match_lock_live(dest);
	if (ret)
		goto err_unlock;
	/*
	 * The budget bounds every eager byte held for the receiver, matched
	 * ones waiting for delivery included: checked before matching.
	 */
	if (data && held_bytes(dest) + len > READ_ONCE(unexp_budget)) {
		ret = -EAGAIN;
		goto err_unlock;
	}
	mr = dmaplane_match_arrive(&dest->matcher, &msg->m);
	if (mr) {
		dmaplane_stat_dec(posted_recvs);
		mutex_unlock(&dest->match_lock);
		/* Copied by the receiver's delivery work, not here. */
		deliver_queue(dest, container_of(mr, struct dmaplane_recv, m), msg);
		goto out_put_dest;
	}
	if (dest->unexp_msgs >= READ_ONCE(unexp_max)) {
		ret = -EAGAIN;
		goto err_unqueue;
	}
	if (data)
		dest->unexp_bytes += len;
	dest->unexp_msgs++;
	dmaplane_stat_inc(unexp_msgs);
	mutex_unlock(&dest->match_lock);
	goto out_put_dest;

err_unqueue:
	dmaplane_match_remove_msg(&dest->matcher, &msg->m);
err_unlock:
	mutex_unlock(&dest->match_lock);
err_free_msg:
	msg_free_data(msg);
out_put_dest:
	dmaplane_ep_put(dest);
	return ret;
}

/*
 * PUT/GET: one-sided, one copy between the caller's buffer and the
 * target's region, checked on the target's side: the key must name a
 * region of that very endpoint, with the access the operation needs, and
 * the range must lie inside it.
 */
/**
 * dmaplane_ep_reserve_remote() - ring credit for a peer's PUT with data
 * @ep: the target endpoint
 *
 * Return: 0, or -EAGAIN (ring full, or no ring yet), -ECONNRESET (closed).
 */
int dmaplane_ep_reserve_remote(struct dmaplane_ep *ep)
{
	struct dmaplane_cq *cq = dmaplane_ep_cq(ep);

	return cq ? dmaplane_cq_reserve(cq) : -EAGAIN;
}

/**
 * dmaplane_put_data_complete() - the target's side of a PUT with data
 * @ep: the target endpoint, its credit taken by dmaplane_ep_reserve_remote()
 * @status: the PUT's outcome: its own completion when the bytes are in,
 *	else the credit back
 * @src: the initiator's source value
 * @len: bytes written
 * @data: the remote completion data
 */
void dmaplane_put_data_complete(struct dmaplane_ep *ep, int status, u64 src,
				u64 len, u64 data)
{
	struct dmaplane_cqe cqe = {
		.len = len, .msg_len = len, .src = src, .data = data,
		.opcode = DMAPLANE_OP_PUT,
		.flags = DMAPLANE_CQE_F_DATA | DMAPLANE_CQE_F_REMOTE,
	};

	if (status)
		dmaplane_cq_unreserve(ep->cq);
	else
		dmaplane_msg_post(ep, &cqe);
}

static int do_rma(struct dmaplane_ep *ep, const struct dmaplane_op *op)
{
	bool data = op->flags & DMAPLANE_OP_F_DATA, target = false;
	bool put = op->opcode == DMAPLANE_OP_PUT;
	struct dmaplane_region *r = NULL;
	struct dmaplane_ubuf b;
	struct dmaplane_ep *dest;
	u64 uid;
	int ret, status;

	if (op->tag || op->ignore)
		return -EINVAL;
	ret = dmaplane_av_lookup(ep, op->peer, &uid);
	if (ret)
		return ret;
	ret = ubuf_from_op(ep, &b, op);
	if (ret)
		return ret;
	if (DMAPLANE_SRC_NODE_SLOT(uid)) {
		ret = dmaplane_ib_rma(ep, uid, op, &b);
		goto out_free_buf;
	}
	dest = dmaplane_ep_get_by_uid(uid);
	if (!dest) {
		ret = -ECONNRESET;
		goto out_free_buf;
	}
	if (!dmaplane_ep_same_domain(ep, dest)) {
		ret = -EACCES;
		goto out_put_dest;
	}
	ret = dmaplane_cq_reserve(ep->cq);
	if (ret)
		goto out_put_dest;

	r = dmaplane_region_lookup_rkey(op->rkey);
	if (!r || r->owner_id != dest->id || READ_ONCE(dest->dead))
		status = -ENOENT;
	else if (!(r->access & (put ? DMAPLANE_ACCESS_REMOTE_WRITE :
				      DMAPLANE_ACCESS_REMOTE_READ)))
		status = -EACCES;
	else
		status = 0;
	/* A PUT with data needs room on the target's ring, or is not done. */
	if (!status && data) {
		if (dmaplane_ep_reserve_remote(dest)) {
			dmaplane_region_put(r);
			dmaplane_cq_unreserve(ep->cq);
			ret = -EAGAIN;
			goto out_put_dest;
		}
		target = true;
	}
	if (!status) {
		/* The target's range, as a buffer (not freed: @r is put below). */
		struct dmaplane_ubuf rb = {
			.segs = &rb.one, .len = op->len, .region = r, .roff = op->roffset,
		};
		u64 end;

		if (check_add_overflow(op->roffset, op->len, &end) || end > r->len)
			status = -ERANGE;
		else
			/*
			 * Nobody waits for it on the target's CPU (its owner
			 * may be computing): the helper goes anywhere.
			 */
			status = copy_remote_split(NULL, &rb, ep->mm, &b, op->len, put, -1);
	}
	if (target)
		dmaplane_put_data_complete(dest, status, ep->ep_uid, op->len, op->data);
	dmaplane_region_put(r);
	msg_complete(ep, op->opcode, op->ctx, status, status ? 0 : op->len,
		     op->len, 0, 0);
out_put_dest:
	dmaplane_ep_put(dest);
out_free_buf:
	ubuf_free(&b);
	return ret;
}

static int check_op(const struct dmaplane_op *op, u32 op_size)
{
	bool rma = op->opcode == DMAPLANE_OP_PUT || op->opcode == DMAPLANE_OP_GET;
	u32 flags = 0;

	if (op->opcode == DMAPLANE_OP_SEND)
		flags = DMAPLANE_OP_F_IOV | DMAPLANE_OP_F_REGION |
			(op_size >= DMAPLANE_OP_SIZE_V1 ? DMAPLANE_OP_F_DATA : 0);
	else if (op->opcode == DMAPLANE_OP_RECV)
		flags = DMAPLANE_OP_F_IOV | DMAPLANE_OP_F_CLAIMED | DMAPLANE_OP_F_REGION |
			DMAPLANE_OP_F_INLINE;
	else if (op->opcode == DMAPLANE_OP_PUT)
		flags = DMAPLANE_OP_F_REGION |
			(op_size >= DMAPLANE_OP_SIZE_V1 ? DMAPLANE_OP_F_DATA : 0);
	else
		flags = DMAPLANE_OP_F_REGION;

	if ((op->flags & ~flags) || memchr_inv(op->pad0, 0, sizeof(op->pad0)))
		return -EINVAL;
	if (op->flags & DMAPLANE_OP_F_REGION ?
	    op->flags & DMAPLANE_OP_F_IOV : op->region)
		return -EINVAL;
	/* An inline receive: at a user address. */
	if ((op->flags & DMAPLANE_OP_F_INLINE) &&
	    (op->flags & (DMAPLANE_OP_F_IOV | DMAPLANE_OP_F_REGION)))
		return -EINVAL;
	if (!rma && (op->rkey || op->roffset))
		return -EINVAL;
	if (op->data && !(op->flags & DMAPLANE_OP_F_DATA))
		return -EINVAL;
	if (op->opcode < DMAPLANE_OP_SEND || op->opcode > DMAPLANE_OP_GET)
		return -EINVAL;
	/* Larger transfers would be cut short by the iov_iter helpers. */
	if (!(op->flags & DMAPLANE_OP_F_IOV) && op->len > MAX_RW_COUNT)
		return -EMSGSIZE;
	return 0;
}

/**
 * dmaplane_submit() - check and start a batch of operations
 * @ep: the endpoint, set up
 * @uops: user pointer to @nr operations of @op_size bytes each
 * @nr: how many, 1 to MAX_SUBMIT
 * @op_size: the stride of the array (0: %DMAPLANE_OP_SIZE_V0)
 *
 * The one body of %DMAPLANE_IOCTL_SUBMIT and %DMAPLANE_URING_CMD_SUBMIT.
 * Operations are taken in order; the first one rejected stops the batch.
 * Every accepted operation completes on the endpoint's ring.  May sleep:
 * faults on the caller's memory and the copy of a matched message.
 *
 * Return: the number of operations accepted (1 to @nr), or a negative
 * errno when the first was rejected or the batch itself is invalid.
 */
int dmaplane_submit(struct dmaplane_ep *ep, u64 uops, u32 nr, u32 op_size)
{
	struct copy_batch *batch = NULL;
	struct dmaplane_op op;
	int ret = 0;
	u32 i;

	static_assert(sizeof(op) == DMAPLANE_OP_SIZE_V1);
	static_assert(MAX_SUBMIT <= INT_MAX);
	if (!nr || nr > MAX_SUBMIT)
		return -EINVAL;
	/* Operations grow at their end: each is op_size bytes (0: the first). */
	op_size = op_size ?: DMAPLANE_OP_SIZE_V0;
	if (op_size < DMAPLANE_OP_SIZE_V0 || op_size % 8 || op_size > PAGE_SIZE)
		return -EINVAL;
	if (!dmaplane_ep_cq(ep))
		return -EINVAL;
	/*
	 * Every buffer address below is one of the opener's: only the
	 * opener's address space may name them (not a process that was
	 * handed the fd), as for MR_REG.  io_uring issues a command in the
	 * address space of the ring's creator: its SQPOLL thread and its
	 * workers share it, a ring created by a forked child does not.
	 */
	if (!current->mm || current->mm != ep->mm)
		return -EPERM;
	dmaplane_ep_note_cpu(ep);

	for (i = 0; i < nr; i++) {
		ret = copy_struct_from_user(&op, sizeof(op),
					    u64_to_user_ptr(uops) + i * op_size,
					    op_size);
		if (ret)
			break;
		ret = check_op(&op, op_size);
		if (ret)
			break;
		switch (op.opcode) {
		case DMAPLANE_OP_SEND:
			ret = do_send(ep, &op, &batch, i + 1 < nr);
			break;
		case DMAPLANE_OP_RECV:
			ret = do_recv(ep, &op, &batch, i + 1 < nr);
			break;
		default:
			batch_flush(ep, batch);
			ret = do_rma(ep, &op);
			break;
		}
		if (ret)
			break;
	}
	batch_flush(ep, batch);
	kfree(batch);
	return i ? i : ret;
}

int dmaplane_ioctl_submit(struct dmaplane_ep *ep, void __user *uarg)
{
	struct dmaplane_submit arg;
	int ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.done)
		return -EINVAL;
	ret = dmaplane_submit(ep, arg.ops, arg.nr, arg.op_size);
	if (ret < 0)
		return ret;
	arg.done = ret;
	if (put_user(arg.done, &((struct dmaplane_submit __user *)uarg)->done))
		return -EFAULT;
	return 0;
}

/**
 * dmaplane_msg_init() - module load: the delivery workqueue
 *
 * Return: 0 or -ENOMEM.
 */
int dmaplane_msg_init(void)
{
	deliver_wq = alloc_workqueue("dmaplane_deliver", WQ_UNBOUND, 0);
	if (!deliver_wq)
		return -ENOMEM;
	/*
	 * A helper is worth a CPU of its own and no more: beyond one per
	 * CPU, helpers wait, and their callers cancel them when done.
	 */
	copy_wq = alloc_workqueue("dmaplane_copy", WQ_UNBOUND, num_possible_cpus());
	if (!copy_wq)
		goto err_destroy_deliver;
	copy_peer_wq = alloc_workqueue("dmaplane_copy_peer",
				       DMAPLANE_WQ_PERCPU | WQ_CPU_INTENSIVE, 1);
	if (!copy_peer_wq)
		goto err_destroy_copy;
	return 0;

err_destroy_copy:
	destroy_workqueue(copy_wq);
err_destroy_deliver:
	destroy_workqueue(deliver_wq);
	return -ENOMEM;
}

/**
 * dmaplane_msg_exit() - module unload: wait for the last deliveries
 *
 * Every file is released by now, so nothing queues new ones; those still
 * running may reach the transport, which must still be up.
 */
void dmaplane_msg_exit(void)
{
	destroy_workqueue(deliver_wq);
	/* Empty: every split copy waited for its helper. */
	destroy_workqueue(copy_peer_wq);
	destroy_workqueue(copy_wq);
}

/* A message dropped undelivered: its rendezvous sender learns so. */
static void msg_drop(struct dmaplane_msg *msg)
{
	if (msg->rdv)
		dmaplane_ib_rdv_drop(msg->rdv, -ECONNRESET);
	else if (!msg->data)
		rendezvous_send_done(msg, -ECONNRESET, 0);
	msg_free(msg);
}

/**
 * dmaplane_ep_drain_messages() - the endpoint's file is released
 * @ep: endpoint
 *
 * No message is accepted any more.  Posted receives are dropped (their
 * owner is gone); unexpected messages are freed and their rendezvous
 * senders get -ECONNRESET.  Deliveries still queued are dropped the same
 * way by the delivery work, which sees @ep->dead.
 */
void dmaplane_ep_drain_messages(struct dmaplane_ep *ep)
{
	struct dmaplane_match_recv *mr;
	struct dmaplane_match_msg *mm;
	struct dmaplane_msg *msg;
	unsigned long handle;

	mutex_lock(&ep->match_lock);
	WRITE_ONCE(ep->dead, true);
	while ((mm = dmaplane_match_probe(&ep->matcher, DMAPLANE_ANY_SRC, 0,
					  ~0ULL, true))) {
		msg_drop(container_of(mm, struct dmaplane_msg, m));
		dmaplane_stat_dec(unexp_msgs);
	}
	xa_for_each(&ep->claims, handle, msg) {
		xa_erase(&ep->claims, handle);
		msg_drop(msg);
		dmaplane_stat_dec(unexp_msgs);
	}
	ep->unexp_bytes = 0;
	ep->unexp_msgs = 0;
	while ((mr = dmaplane_match_first_recv(&ep->matcher))) {
		dmaplane_match_cancel_recv(&ep->matcher, mr);
		recv_free(container_of(mr, struct dmaplane_recv, m));
		dmaplane_stat_dec(posted_recvs);
	}
	mutex_unlock(&ep->match_lock);
}

int dmaplane_ioctl_probe(struct dmaplane_ep *ep, void __user *uarg)
{
	struct dmaplane_probe arg;
	struct dmaplane_match_msg *mm;
	struct dmaplane_msg *msg;
	u64 src = DMAPLANE_ANY_SRC;
	bool claim;
	int ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~DMAPLANE_PROBE_CLAIM) || arg.reserved || arg.claim ||
	    arg.src || arg.len || arg.data || arg.cqe_flags || arg.src_av)
		return -EINVAL;
	if (!dmaplane_ep_cq(ep))
		return -EINVAL;
	if (arg.peer != DMAPLANE_AV_ANY) {
		ret = dmaplane_av_lookup(ep, arg.peer, &src);
		if (ret)
			return ret;
	}
	claim = arg.flags & DMAPLANE_PROBE_CLAIM;
	if (claim) {
		/* Reserve the handle first, so that nothing can fail later. */
		ret = xa_alloc_cyclic(&ep->claims, &arg.claim, NULL, xa_limit_31b,
				      &ep->next_claim, GFP_KERNEL_ACCOUNT);
		if (ret < 0)
			return ret;
	}

	mutex_lock(&ep->match_lock);
	mm = dmaplane_match_probe(&ep->matcher, src, arg.tag, arg.ignore, claim);
	if (!mm) {
		mutex_unlock(&ep->match_lock);
		if (claim)
			xa_release(&ep->claims, arg.claim);
		return -EAGAIN;
	}
	msg = container_of(mm, struct dmaplane_msg, m);
	arg.tag = msg->m.tag;
	arg.src = msg->m.src;
	arg.len = msg->len;
	arg.data = msg->cq_data;
	arg.cqe_flags = msg->cqe_flags;
	arg.src_av = dmaplane_av_reverse(ep, msg->m.src);
	if (arg.src_av == DMAPLANE_AV_ANY)
		arg.src_av = 0;
	else
		arg.cqe_flags |= DMAPLANE_CQE_F_SRC_AV;
	if (claim)
		xa_store(&ep->claims, arg.claim, msg, GFP_KERNEL);
	mutex_unlock(&ep->match_lock);

	if (copy_to_user(uarg, &arg, sizeof(arg))) {
		/* The claim stays valid; the caller lost its handle. */
		return -EFAULT;
	}
	return 0;
}

static bool recv_has_ctx(struct dmaplane_match_recv *mr, void *arg)
{
	return container_of(mr, struct dmaplane_recv, m)->ctx == *(u64 *)arg;
}

int dmaplane_ioctl_cancel(struct dmaplane_ep *ep, void __user *uarg)
{
	struct dmaplane_match_recv *mr;
	struct dmaplane_cancel arg;
	struct dmaplane_recv *r;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags || arg.pad)
		return -EINVAL;
	if (!dmaplane_ep_cq(ep))
		return -EINVAL;

	mutex_lock(&ep->match_lock);
	mr = dmaplane_match_find_recv(&ep->matcher, recv_has_ctx, &arg.ctx);
	if (mr) {
		dmaplane_match_cancel_recv(&ep->matcher, mr);
		dmaplane_stat_dec(posted_recvs);
	}
	mutex_unlock(&ep->match_lock);
	if (!mr)
		return -ENOENT;
	r = container_of(mr, struct dmaplane_recv, m);
	ubuf_free(&r->buf);
	msg_complete(ep, DMAPLANE_OP_RECV, r->ctx, -ECANCELED, 0, 0, r->m.tag, 0);
	recv_free(r);
	return 0;
}

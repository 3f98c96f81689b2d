/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Kernel API differences between the kernels dmaplane builds on (6.1 and
 * newer).  Which API a kernel has is found out by the feature probes in
 * compat/NAME.c, which Kbuild compiles against the target kernel before the
 * module (never by LINUX_VERSION_CODE: distribution kernels backport).
 * The code calls the newest form of each API; this file supplies it on
 * kernels that lack it, or stops the build naming what is missing.
 */
#ifndef _DMAPLANE_COMPAT_H
#define _DMAPLANE_COMPAT_H

#include <linux/dma-buf.h>
#include <linux/mm.h>
#include <linux/uio.h>

#include "compat/dmaplane_probes.h"

/*
 * The uring_cmd driver API has its own header from 6.7.  A uring_cmd's
 * command area (the SQE's cmd bytes) is io_uring_sqe_cmd() of its SQE
 * from 6.6 (taking the command's type as well by 7.2), before that a
 * pointer in struct io_uring_cmd.
 */
#ifdef DMAPLANE_HAVE_IO_URING_CMD_H
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif
#if defined(DMAPLANE_HAVE_IO_URING_SQE_CMD_TYPED)
#define dmaplane_uring_cmd_area(ioucmd)	\
	io_uring_sqe_cmd((ioucmd)->sqe, struct dmaplane_uring_submit)
#elif defined(DMAPLANE_HAVE_IO_URING_CMD_H) || defined(DMAPLANE_HAVE_IO_URING_SQE_CMD)
#define dmaplane_uring_cmd_area(ioucmd)	io_uring_sqe_cmd((ioucmd)->sqe)
#else
#define dmaplane_uring_cmd_area(ioucmd)	((ioucmd)->cmd)
#endif

/*
 * A uring_cmd handler completes its command with io_uring_cmd_done():
 * (cmd, ret, issue_flags) by 7.2, (cmd, ret, res2, issue_flags) from 6.3
 * (and in Debian's 6.1.y), (cmd, ret, res2) before.
 */
static inline void dmaplane_uring_cmd_done(struct io_uring_cmd *ioucmd,
					   int ret, unsigned int issue_flags)
{
#if defined(DMAPLANE_HAVE_IO_URING_CMD_DONE32)
	io_uring_cmd_done(ioucmd, ret, issue_flags);
#elif defined(DMAPLANE_HAVE_IO_URING_CMD_DONE_RES2) || \
	defined(DMAPLANE_HAVE_IO_URING_CMD_DONE_RES2_OLD)
	io_uring_cmd_done(ioucmd, ret, 0, issue_flags);
#else
	io_uring_cmd_done(ioucmd, ret, 0);
#endif
}

/*
 * A dynamic importer's callback for a moving dma-buf is
 * dma_buf_attach_ops.invalidate_mappings in newer kernels (7.2),
 * move_notify before; the same contract.
 */
#ifdef DMAPLANE_HAVE_DMA_BUF_INVALIDATE_MAPPINGS
#define DMAPLANE_DMA_BUF_INVALIDATE_OP(fn)	.invalidate_mappings = (fn)
#else
#define DMAPLANE_DMA_BUF_INVALIDATE_OP(fn)	.move_notify = (fn)
#endif

/*
 * A per-CPU workqueue is allocated with WQ_PERCPU by 7.2, which warns
 * about one with neither WQ_PERCPU nor WQ_UNBOUND; before, per-CPU is
 * what no flag means.
 */
#ifdef DMAPLANE_HAVE_WQ_PERCPU
#define DMAPLANE_WQ_PERCPU	WQ_PERCPU
#else
#define DMAPLANE_WQ_PERCPU	0
#endif

/* <asm/unaligned.h> moved to <linux/unaligned.h> in 6.12. */
#ifdef DMAPLANE_HAVE_LINUX_UNALIGNED_H
#include <linux/unaligned.h>
#else
#include <asm/unaligned.h>
#endif

/* vma->vm_flags is read-only from 6.3 on; before, it is written directly. */
#ifndef DMAPLANE_HAVE_VM_FLAGS_SET
static inline void vm_flags_set(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags |= flags;
}

static inline void vm_flags_clear(struct vm_area_struct *vma, vm_flags_t flags)
{
	vma->vm_flags &= ~flags;
}
#endif

/* pin_user_pages_remote() lost its vmas argument in 6.5. */
#if defined(DMAPLANE_HAVE_PIN_USER_PAGES_REMOTE)
#define dmaplane_pin_user_pages_remote(mm, start, nr, flags, pages) \
	pin_user_pages_remote(mm, start, nr, flags, pages, NULL)
#elif defined(DMAPLANE_HAVE_PIN_USER_PAGES_REMOTE_VMAS)
#define dmaplane_pin_user_pages_remote(mm, start, nr, flags, pages) \
	pin_user_pages_remote(mm, start, nr, flags, pages, NULL, NULL)
#else
#error "dmaplane: pin_user_pages_remote() has no known signature here (compat/*.log)"
#endif

/*
 * import_ubuf() is not in 6.1; the fallback does what it does, with the
 * ITER_UBUF iterator 6.1 already has (import_single_range() is gone in 6.8).
 */
#ifndef DMAPLANE_HAVE_IMPORT_UBUF
static inline int import_ubuf(int rw, void __user *buf, size_t len,
			      struct iov_iter *i)
{
	if (len > MAX_RW_COUNT)
		len = MAX_RW_COUNT;
	if (unlikely(!access_ok(buf, len)))
		return -EFAULT;
	iov_iter_ubuf(i, rw, buf, len);
	return 0;
}
#endif

/*
 * From 6.2 dma_buf_vmap() expects the reservation lock held, and importers
 * that do not hold it call the _unlocked variants; before, dma_buf_vmap()
 * took its own lock, so the plain call is the unlocked one.
 */
#ifndef DMAPLANE_HAVE_DMA_BUF_VMAP_UNLOCKED
#define dma_buf_vmap_unlocked(dmabuf, map)	dma_buf_vmap(dmabuf, map)
#define dma_buf_vunmap_unlocked(dmabuf, map)	dma_buf_vunmap(dmabuf, map)
#endif

/*
 * Symbol namespaces: identifiers up to 6.12 (stringified by the macros),
 * string literals from 6.13.  Use DMAPLANE_NS(NAME) in MODULE_IMPORT_NS()
 * and EXPORT_SYMBOL_NS*().
 */
#ifdef DMAPLANE_HAVE_SYMBOL_NS_IDENTIFIER
#define DMAPLANE_NS(ns)	ns
#else
#define DMAPLANE_NS(ns)	#ns
#endif

#endif /* _DMAPLANE_COMPAT_H */

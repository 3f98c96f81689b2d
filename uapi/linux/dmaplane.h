/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * dmaplane: kernel-assisted tag-matched messaging, long-term memory
 * registration and dma-buf arenas.
 */

/**
 * DOC: Overview
 *
 * dmaplane serves one misc device, ``/dev/dmaplane``.  Every open of it is
 * an endpoint: a file descriptor that owns memory regions (arenas,
 * registered user memory, imported dma-bufs), a name that other endpoints
 * address it by, and a completion ring mapped into its owner.  Data moves
 * with two-sided, tag-matched send/recv and one-sided put/get into peers'
 * regions, on one node or, over the kernel's RDMA stack, between nodes.
 * The ioctls below are the whole data-path ABI; a generic netlink family
 * is the control plane.  libdmaplane wraps both into C calls (see the
 * library's manual pages, dp_open(3) and the others).
 */

/**
 * DOC: ABI rules
 *
 * This is the only ABI header of dmaplane.  Rules (see
 * Documentation/process/botching-up-ioctls.rst):
 *
 *
 * - all structures are a multiple of 8 bytes with explicit padding;
 *   pointers and sizes are __u64;
 * - every padding, reserved field and unknown flag bit must be zero on
 *   input, or the ioctl fails with -EINVAL;
 * - ioctl numbers are only ever appended, never reused; an unknown number
 *   fails with -ENOTTY;
 * - DMAPLANE_IOCTL_GET_INFO comes first: user space discovers the ABI
 *   version and the capabilities of the loaded module through it.
 */
#ifndef _UAPI_LINUX_DMAPLANE_H
#define _UAPI_LINUX_DMAPLANE_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

/** DMAPLANE_DEVICE_NAME - name of the misc device node under /dev */
#define DMAPLANE_DEVICE_NAME	"dmaplane"

/**
 * DMAPLANE_ABI_VERSION - version of this header's ABI.
 *
 * Bumped when a new ioctl or structure field is added; old numbers keep
 * their meaning.  Compare with &dmaplane_info.abi_version.
 */
#define DMAPLANE_ABI_VERSION	1

/**
 * DOC: Capabilities
 *
 * Capability bits reported in &dmaplane_info.caps.  A bit is set when the
 * loaded module implements the corresponding group of ioctls.  Bits are
 * only ever appended.  A program checks them after
 * %DMAPLANE_IOCTL_GET_INFO instead of comparing kernel or module versions.
 */
/** DMAPLANE_CAP_INFO - DMAPLANE_IOCTL_GET_INFO is implemented */
#define DMAPLANE_CAP_INFO	_BITULL(0)
/** DMAPLANE_CAP_ARENA - ARENA_CREATE/ARENA_DESTROY and mmap of arenas */
#define DMAPLANE_CAP_ARENA	_BITULL(1)
/** DMAPLANE_CAP_MR - MR_REG/MR_DEREG/MR_QUERY with a registration cache */
#define DMAPLANE_CAP_MR		_BITULL(2)
/** DMAPLANE_CAP_DMABUF_EXPORT - DMABUF_EXPORT of arenas */
#define DMAPLANE_CAP_DMABUF_EXPORT _BITULL(3)
/** DMAPLANE_CAP_DMABUF_IMPORT - MR_IMPORT_DMABUF */
#define DMAPLANE_CAP_DMABUF_IMPORT _BITULL(4)
/**
 * DMAPLANE_CAP_MSG - endpoints on one node: EP_SETUP, GETNAME, AV_INSERT,
 * AV_REMOVE, SUBMIT of SEND and RECV, PROBE, CANCEL, the completion ring
 */
#define DMAPLANE_CAP_MSG	_BITULL(5)
/** DMAPLANE_CAP_RMA - SUBMIT of PUT and GET into peers' regions */
#define DMAPLANE_CAP_RMA	_BITULL(6)
/**
 * DMAPLANE_CAP_REMOTE - SEND, RECV, PUT and GET reach endpoints of other
 * nodes over RDMA (kernel verbs and rdma_cm); peers are added over netlink
 */
#define DMAPLANE_CAP_REMOTE	_BITULL(7)
/**
 * DMAPLANE_CAP_CQ_DATA - a SEND with %DMAPLANE_OP_F_DATA carries 8 bytes
 * of immediate data into the receiver's completion (&dmaplane_cqe.data,
 * %DMAPLANE_CQE_F_DATA) and probe (&dmaplane_probe.data), on one node
 * and across nodes
 */
#define DMAPLANE_CAP_CQ_DATA	_BITULL(8)
/**
 * DMAPLANE_CAP_SRC_AV - receive completions and probes name the sender by
 * the receiver's own address handle too (&dmaplane_cqe.src_av,
 * %DMAPLANE_CQE_F_SRC_AV), for FI_SOURCE without a search
 */
#define DMAPLANE_CAP_SRC_AV	_BITULL(9)
/**
 * DMAPLANE_CAP_REGION_BUF - SEND, RECV, PUT and GET take a buffer in one of
 * the caller's own regions (%DMAPLANE_OP_F_REGION): arenas, registered
 * memory and imported dma-bufs, on one node; across nodes arenas and
 * registered memory
 */
#define DMAPLANE_CAP_REGION_BUF	_BITULL(10)
/**
 * DMAPLANE_CAP_PUT_DATA - a PUT with %DMAPLANE_OP_F_DATA completes on the
 * target's ring too (%DMAPLANE_CQE_F_REMOTE), on one node and across nodes
 */
#define DMAPLANE_CAP_PUT_DATA	_BITULL(11)
/**
 * DMAPLANE_CAP_URING_CMD - operations can be submitted through io_uring:
 * an ``IORING_OP_URING_CMD`` on the endpoint's file descriptor with
 * %DMAPLANE_URING_CMD_SUBMIT (see &struct dmaplane_uring_submit); set only
 * when the running kernel has io_uring
 */
#define DMAPLANE_CAP_URING_CMD	_BITULL(12)
/**
 * DMAPLANE_CAP_RECV_INLINE - a RECV with %DMAPLANE_OP_F_INLINE may take
 * a message's payload in its completion (%DMAPLANE_CQE_F_INLINE)
 */
#define DMAPLANE_CAP_RECV_INLINE _BITULL(13)

/**
 * struct dmaplane_info - argument of %DMAPLANE_IOCTL_GET_INFO
 * @flags: in: must be zero (no flags are defined yet).
 * @abi_version: out: %DMAPLANE_ABI_VERSION of the running module.
 * @caps: out: ``DMAPLANE_CAP_*`` bits the running module implements.
 * @endpoint_id: out: identifier of the endpoint this file descriptor is,
 *	unique among the endpoints open on this node at the same time.
 * @page_size: out: PAGE_SIZE of the running kernel, in bytes.
 * @pad: in: must be zero.
 * @reserved: in: must be zero; out: zero.  Room for later fields.
 */
struct dmaplane_info {
	__u32 flags;
	__u32 abi_version;
	__u64 caps;
	__u64 endpoint_id;
	__u32 page_size;
	__u32 pad;
	__u64 reserved[4];
};

/**
 * DMAPLANE_IOCTL_TYPE - the ioctl type byte of dmaplane (0xDA, free in
 * Documentation/userspace-api/ioctl/ioctl-number.rst).
 */
#define DMAPLANE_IOCTL_TYPE	0xDA

/**
 * enum dmaplane_ioctl_nr - command numbers of dmaplane's ioctls
 *
 * The only list of them: numbers are appended, never reused or reordered.
 * @DMAPLANE_NR_GET_INFO: %DMAPLANE_IOCTL_GET_INFO
 * @DMAPLANE_NR_ARENA_CREATE: %DMAPLANE_IOCTL_ARENA_CREATE
 * @DMAPLANE_NR_ARENA_DESTROY: %DMAPLANE_IOCTL_ARENA_DESTROY
 * @DMAPLANE_NR_MR_REG: %DMAPLANE_IOCTL_MR_REG
 * @DMAPLANE_NR_MR_DEREG: %DMAPLANE_IOCTL_MR_DEREG
 * @DMAPLANE_NR_MR_QUERY: %DMAPLANE_IOCTL_MR_QUERY
 * @DMAPLANE_NR_DMABUF_EXPORT: %DMAPLANE_IOCTL_DMABUF_EXPORT
 * @DMAPLANE_NR_MR_IMPORT_DMABUF: %DMAPLANE_IOCTL_MR_IMPORT_DMABUF
 * @DMAPLANE_NR_EP_SETUP: %DMAPLANE_IOCTL_EP_SETUP
 * @DMAPLANE_NR_GETNAME: %DMAPLANE_IOCTL_GETNAME
 * @DMAPLANE_NR_AV_INSERT: %DMAPLANE_IOCTL_AV_INSERT
 * @DMAPLANE_NR_AV_REMOVE: %DMAPLANE_IOCTL_AV_REMOVE
 * @DMAPLANE_NR_SUBMIT: %DMAPLANE_IOCTL_SUBMIT
 * @DMAPLANE_NR_PROBE: %DMAPLANE_IOCTL_PROBE
 * @DMAPLANE_NR_CANCEL: %DMAPLANE_IOCTL_CANCEL
 */
enum dmaplane_ioctl_nr {
	DMAPLANE_NR_GET_INFO = 0,
	DMAPLANE_NR_ARENA_CREATE,
	DMAPLANE_NR_ARENA_DESTROY,
	DMAPLANE_NR_MR_REG,
	DMAPLANE_NR_MR_DEREG,
	DMAPLANE_NR_MR_QUERY,
	DMAPLANE_NR_DMABUF_EXPORT,
	DMAPLANE_NR_MR_IMPORT_DMABUF,
	DMAPLANE_NR_EP_SETUP,
	DMAPLANE_NR_GETNAME,
	DMAPLANE_NR_AV_INSERT,
	DMAPLANE_NR_AV_REMOVE,
	DMAPLANE_NR_SUBMIT,
	DMAPLANE_NR_PROBE,
	DMAPLANE_NR_CANCEL,
};

/**
 * DMAPLANE_IOCTL_GET_INFO - report ABI version and capabilities.
 *
 * Argument: &struct dmaplane_info.  Errors: -EFAULT (bad pointer),
 * -EINVAL (non-zero @flags, @pad or @reserved).
 */
#define DMAPLANE_IOCTL_GET_INFO \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_GET_INFO, struct dmaplane_info)

/**
 * DOC: Memory
 *
 * Arenas, registered regions (MRs), dma-buf export and import.
 *
 * Every region -- an arena, a registered range of user memory or an
 * imported dma-buf -- has a handle, valid only on the endpoint (file
 * descriptor) that created it, a local key (lkey) and a random 64-bit
 * remote key (rkey) that peers name it by in put/get.  Access bits say
 * what others may do with it.
 */

/** DMAPLANE_ACCESS_LOCAL_WRITE - the owner's own operations may write it */
#define DMAPLANE_ACCESS_LOCAL_WRITE	_BITUL(0)
/** DMAPLANE_ACCESS_REMOTE_READ - peers may read it with get */
#define DMAPLANE_ACCESS_REMOTE_READ	_BITUL(1)
/** DMAPLANE_ACCESS_REMOTE_WRITE - peers may write it with put */
#define DMAPLANE_ACCESS_REMOTE_WRITE	_BITUL(2)
#define DMAPLANE_ACCESS_ALL	(DMAPLANE_ACCESS_LOCAL_WRITE | \
				 DMAPLANE_ACCESS_REMOTE_READ | \
				 DMAPLANE_ACCESS_REMOTE_WRITE)

/** DMAPLANE_NUMA_ANY - &dmaplane_arena_create.numa_node: any node */
#define DMAPLANE_NUMA_ANY	(-1)

/**
 * DMAPLANE_ARENA_HUGE_ONLY - fail with -ENOMEM rather than fall back to
 * pages smaller than 2 MiB.  The size must then be a multiple of 2 MiB.
 */
#define DMAPLANE_ARENA_HUGE_ONLY	_BITUL(0)
#define DMAPLANE_ARENA_FLAGS		DMAPLANE_ARENA_HUGE_ONLY

/**
 * struct dmaplane_arena_create - argument of %DMAPLANE_IOCTL_ARENA_CREATE
 * @size: in: bytes; a non-zero multiple of the page size.
 * @flags: in: ``DMAPLANE_ARENA_*`` bits.
 * @numa_node: in: NUMA node to allocate on, or %DMAPLANE_NUMA_ANY.
 * @access: in: ``DMAPLANE_ACCESS_*`` bits of the arena as a region.
 * @handle: out: arena handle on this endpoint.
 * @mmap_offset: out: pass to mmap(2) on this file descriptor to map the
 *	arena (length at most @size, offset exactly this value).
 * @bytes_huge: out: bytes backed by 2 MiB (PMD-sized) pages.
 * @bytes_mid: out: bytes backed by pages between 4 KiB and 2 MiB.
 * @bytes_base: out: bytes backed by base (4 KiB) pages.
 * @lkey: out: local key of the arena as a region.
 * @pad: in: must be zero.
 * @rkey: out: remote key of the arena as a region.
 * @reserved: in: must be zero.
 */
struct dmaplane_arena_create {
	__u64 size;
	__u32 flags;
	__s32 numa_node;
	__u32 access;
	__u32 handle;
	__u64 mmap_offset;
	__u64 bytes_huge;
	__u64 bytes_mid;
	__u64 bytes_base;
	__u32 lkey;
	__u32 pad;
	__u64 rkey;
	__u64 reserved[2];
};

/**
 * struct dmaplane_handle_arg - argument naming one object by handle
 * @handle: in: handle returned on this endpoint.
 * @flags: in: must be zero.
 * @reserved: in: must be zero.
 */
struct dmaplane_handle_arg {
	__u32 handle;
	__u32 flags;
	__u64 reserved;
};

/**
 * struct dmaplane_mr_reg - argument of %DMAPLANE_IOCTL_MR_REG
 * @addr: in: start of the user memory; any byte alignment.
 * @len: in: bytes, non-zero; @addr + @len must not wrap.
 * @access: in: ``DMAPLANE_ACCESS_*`` bits.  Pages are pinned writable when
 *	any write bit is set.
 * @flags: in: must be zero.
 * @handle: out: region handle on this endpoint.
 * @lkey: out: local key.
 * @rkey: out: random remote key.
 * @invalidations: out: the invalidation counter at the time of
 *	registration (see &dmaplane_mr_query.invalidations).
 * @reserved: in: must be zero.
 *
 * Registering a range that a live registration of the same address space
 * already covers with at least the same access returns that pinning again
 * (a cache hit: no pages are pinned twice).  -EAGAIN when the range kept
 * being invalidated (unmapped, zapped) while its pages were pinned.
 */
struct dmaplane_mr_reg {
	__u64 addr;
	__u64 len;
	__u32 access;
	__u32 flags;
	__u32 handle;
	__u32 lkey;
	__u64 rkey;
	__u64 invalidations;
	__u64 reserved[2];
};

/** DMAPLANE_MR_STATE_VALID - the region's pages are the process's pages */
#define DMAPLANE_MR_STATE_VALID		0
/**
 * DMAPLANE_MR_STATE_INVALID - munmap, mremap, madvise(MADV_DONTNEED), a
 * fork's copy-on-write protection or a dma-buf move hit the range: the
 * pages were released and every use of the region fails with -EFAULT.
 * Deregister it (and register again if the memory is still wanted).
 */
#define DMAPLANE_MR_STATE_INVALID	1

/**
 * struct dmaplane_mr_query - argument of %DMAPLANE_IOCTL_MR_QUERY
 * @handle: in: region handle.
 * @flags: in: must be zero.
 * @addr: out: start address (user regions) or 0.
 * @len: out: length in bytes.
 * @state: out: ``DMAPLANE_MR_STATE_*``.
 * @access: out: access bits.
 * @rkey: out: remote key.
 * @invalidations: out: how many registrations were invalidated in the
 *	endpoint's address space.  The endpoints of one process share one
 *	registration cache and these two counters, which count from the
 *	first registration of any of them.  A library polls this counter
 *	(one ioctl, or later a mapped page) instead of hooking malloc.
 * @cache_hits: out: registrations in the address space served from the
 *	cache.  Both counters are zero before the endpoint's first MR_REG.
 * @reserved: in: must be zero.
 */
struct dmaplane_mr_query {
	__u32 handle;
	__u32 flags;
	__u64 addr;
	__u64 len;
	__u32 state;
	__u32 access;
	__u64 rkey;
	__u64 invalidations;
	__u64 cache_hits;
	__u64 reserved[2];
};

/** DMAPLANE_DMABUF_NO_CLOEXEC - the new fd is not O_CLOEXEC */
#define DMAPLANE_DMABUF_NO_CLOEXEC	_BITUL(0)
#define DMAPLANE_DMABUF_FLAGS		DMAPLANE_DMABUF_NO_CLOEXEC

/**
 * struct dmaplane_dmabuf_export - argument of %DMAPLANE_IOCTL_DMABUF_EXPORT
 * @handle: in: arena handle.
 * @flags: in: ``DMAPLANE_DMABUF_*`` bits.
 * @offset: in: start of the slice; page aligned.
 * @len: in: bytes of the slice; page aligned, non-zero, within the arena.
 * @fd: out: the dma-buf file descriptor (O_RDWR, O_CLOEXEC by default).
 * @pad: in: must be zero.
 * @reserved: in: must be zero.
 */
struct dmaplane_dmabuf_export {
	__u32 handle;
	__u32 flags;
	__u64 offset;
	__u64 len;
	__s32 fd;
	__u32 pad;
	__u64 reserved[2];
};

/**
 * struct dmaplane_mr_import_dmabuf - argument of
 * %DMAPLANE_IOCTL_MR_IMPORT_DMABUF
 * @fd: in: a dma-buf file descriptor (any exporter).
 * @access: in: ``DMAPLANE_ACCESS_*`` bits.
 * @offset: in: start of the slice; page aligned.
 * @len: in: bytes; page aligned, non-zero, within the dma-buf.
 * @flags: in: must be zero.
 * @handle: out: region handle.
 * @lkey: out: local key.
 * @pad: in: must be zero.
 * @rkey: out: remote key.
 * @reserved: in: must be zero.
 */
struct dmaplane_mr_import_dmabuf {
	__s32 fd;
	__u32 access;
	__u64 offset;
	__u64 len;
	__u32 flags;
	__u32 handle;
	__u32 lkey;
	__u32 pad;
	__u64 rkey;
	__u64 reserved[2];
};

/**
 * DMAPLANE_IOCTL_ARENA_CREATE - allocate, pin and register an arena.
 *
 * Errors: -EINVAL (zero or unaligned size, unknown flag or access bit,
 * non-zero padding, bad NUMA node), -ENOMEM (no memory, huge pages short
 * with %DMAPLANE_ARENA_HUGE_ONLY, RLIMIT_MEMLOCK or the module-wide cap
 * exceeded), -EFAULT.
 */
#define DMAPLANE_IOCTL_ARENA_CREATE \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_ARENA_CREATE, struct dmaplane_arena_create)
/**
 * DMAPLANE_IOCTL_ARENA_DESTROY - drop the endpoint's reference to an arena.
 *
 * The memory lives on while a mapping or an exported dma-buf holds it.
 * Errors: -ENOENT (no such arena on this endpoint), -EINVAL, -EFAULT.
 */
#define DMAPLANE_IOCTL_ARENA_DESTROY \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_ARENA_DESTROY, struct dmaplane_handle_arg)
/**
 * DMAPLANE_IOCTL_MR_REG - pin and register user memory.
 *
 * Errors: -EINVAL (zero length, wrap-around, unknown access bit or flag,
 * non-zero padding), -ENOMEM (RLIMIT_MEMLOCK, module cap), -EFAULT
 * (unmapped memory), -EOPNOTSUPP or the errno of pin_user_pages() for
 * memory that cannot be pinned long-term, -EINTR on a fatal signal.
 * -EOPNOTSUPP also for write access (LOCAL_WRITE or REMOTE_WRITE) to a
 * shared mapping of a file other than shmem or hugetlbfs: its pages may
 * be written back while pinned.  That includes a mapping of an arena
 * (use the arena's own region: it is registered already).
 */
#define DMAPLANE_IOCTL_MR_REG \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_MR_REG, struct dmaplane_mr_reg)
/**
 * DMAPLANE_IOCTL_MR_DEREG - release a region (user MR or imported dma-buf).
 *
 * Errors: -ENOENT (no such region on this endpoint, e.g. deregistered
 * twice), -EINVAL, -EFAULT.
 */
#define DMAPLANE_IOCTL_MR_DEREG \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_MR_DEREG, struct dmaplane_handle_arg)
/** DMAPLANE_IOCTL_MR_QUERY - state and counters of a region. */
#define DMAPLANE_IOCTL_MR_QUERY \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_MR_QUERY, struct dmaplane_mr_query)
/**
 * DMAPLANE_IOCTL_DMABUF_EXPORT - export an arena slice as a dma-buf.
 *
 * Errors: -ENOENT (no such arena), -EINVAL (unaligned or zero slice,
 * unknown flag, non-zero padding), -ERANGE (slice beyond the arena),
 * -EMFILE, -ENOMEM, -EFAULT.
 */
#define DMAPLANE_IOCTL_DMABUF_EXPORT \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_DMABUF_EXPORT, struct dmaplane_dmabuf_export)
/**
 * DMAPLANE_IOCTL_MR_IMPORT_DMABUF - register a foreign dma-buf slice.
 *
 * Errors: -EBADF (not an open fd), -EINVAL (fd is not a dma-buf, unaligned
 * or zero slice, unknown access bit or flag, non-zero padding), -ERANGE
 * (slice beyond the dma-buf), -ENOMEM, -EFAULT.
 */
#define DMAPLANE_IOCTL_MR_IMPORT_DMABUF \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_MR_IMPORT_DMABUF, struct dmaplane_mr_import_dmabuf)

/**
 * DOC: Messaging
 *
 * An endpoint is set up once with %DMAPLANE_IOCTL_EP_SETUP: its security
 * domain (an auth key, or its uid when the key is zero) and its completion
 * ring, which the owner maps read-only (at %DMAPLANE_CQ_RING_OFFSET) plus
 * one read-write page holding the consumer index (at
 * %DMAPLANE_CQ_HEAD_OFFSET).  Endpoints exchange names out of band and
 * turn them into address handles with %DMAPLANE_IOCTL_AV_INSERT.
 * Operations are submitted in batches with %DMAPLANE_IOCTL_SUBMIT; each
 * completes exactly once, as a &struct dmaplane_cqe on the ring.
 *
 * Data moves only through the address space of the process that opened
 * the endpoint, and only at its request: %DMAPLANE_IOCTL_SUBMIT and
 * %DMAPLANE_IOCTL_MR_REG from any other address space (a process that got
 * the file descriptor through SCM_RIGHTS, or a child after fork() or
 * exec()) fail with -EPERM, so holding the descriptor never lets a process
 * read or write the opener's memory.  Such a process may still poll the
 * ring and query the endpoint.
 */

/**
 * struct dmaplane_name - an endpoint's name; opaque to applications
 * @node_id: identity of the node (random, chosen when the module loads)
 * @ep_uid: identity of the endpoint on that node; never reused while the
 *	module stays loaded, so the name of a closed endpoint stays invalid.
 *	Below 2^%DMAPLANE_SRC_NODE_SHIFT.
 */
struct dmaplane_name {
	__u64 node_id;
	__u64 ep_uid;
};

/**
 * DOC: Sources
 *
 * A receive completion's &dmaplane_cqe.src (and a probe's
 * &dmaplane_probe.src) names the sender as seen from the receiving node:
 * the sender's &dmaplane_name.ep_uid in the low %DMAPLANE_SRC_NODE_SHIFT
 * (47) bits and, above them, the slot of the sender's node in this node's
 * peer table (0: this node).  Split it with DMAPLANE_SRC_EP_UID() and
 * DMAPLANE_SRC_NODE_SLOT(); compare it whole, not only its ep_uid, since
 * endpoints of two nodes may have the same ep_uid.  A sender on this node
 * has slot 0, so there the source value equals its ep_uid; a sender on
 * another node has the slot that ``dpctl peer show`` (and
 * %DMAPLANE_ATTR_PEER_SLOT) reports for that node.  Slots are never reused
 * while the module stays loaded, so a source value names one endpoint for
 * good.
 */
/** DMAPLANE_SRC_NODE_SHIFT - bit where the node slot of a source starts */
#define DMAPLANE_SRC_NODE_SHIFT	47
/** DMAPLANE_SRC_EP_UID - the sender's &dmaplane_name.ep_uid */
#define DMAPLANE_SRC_EP_UID(src) ((src) & (_BITULL(DMAPLANE_SRC_NODE_SHIFT) - 1))
/** DMAPLANE_SRC_NODE_SLOT - the sender's node slot; 0 is this node */
#define DMAPLANE_SRC_NODE_SLOT(src) ((src) >> DMAPLANE_SRC_NODE_SHIFT)

/**
 * DOC: Completion ring
 *
 * %DMAPLANE_IOCTL_EP_SETUP reports two sizes: map &dmaplane_ep_setup.ring_size
 * bytes read-only at %DMAPLANE_CQ_RING_OFFSET and
 * &dmaplane_ep_setup.head_size bytes read-write at
 * %DMAPLANE_CQ_HEAD_OFFSET.  The first mapping starts with &struct
 * dmaplane_cq_ring; its entries, &struct dmaplane_cqe each, start at
 * &dmaplane_cq_ring.entries_offset.  The kernel appends at
 * &dmaplane_cq_ring.tail, the owner consumes at &dmaplane_cq_head.head:
 * entries [head, tail) are valid, indexed modulo
 * (&dmaplane_cq_ring.mask + 1).  Read tail with acquire semantics, copy
 * the entries out, then store the new head with release semantics.  No
 * system call is needed to poll; poll(2) and epoll(7) on the endpoint's
 * file descriptor report POLLIN while the ring holds entries.  Every
 * operation in flight holds a slot, so the ring never overflows: an
 * operation that would need more slots than are free is refused with
 * -EAGAIN.
 */

/** DMAPLANE_CQ_DEFAULT_ENTRIES - ring size when &dmaplane_ep_setup asks 0 */
#define DMAPLANE_CQ_DEFAULT_ENTRIES	1024
/** DMAPLANE_CQ_MAX_ENTRIES - largest ring */
#define DMAPLANE_CQ_MAX_ENTRIES		65536
/** DMAPLANE_CQ_RING_OFFSET - mmap offset of the ring (read-only) */
#define DMAPLANE_CQ_RING_OFFSET		0ULL
/** DMAPLANE_CQ_HEAD_OFFSET - mmap offset of the consumer page (read-write) */
#define DMAPLANE_CQ_HEAD_OFFSET		_BITULL(31)

/**
 * struct dmaplane_ep_setup - argument of %DMAPLANE_IOCTL_EP_SETUP
 * @auth_key: in: security domain; endpoints talk only within one domain.
 *	0: the domain is the opener's uid.  Non-zero: every endpoint opened
 *	with this key, whatever its uid (a job's shared secret).
 * @cq_entries: in: ring entries, a power of two up to
 *	%DMAPLANE_CQ_MAX_ENTRIES, or 0 for %DMAPLANE_CQ_DEFAULT_ENTRIES;
 *	out: the ring's entries.
 * @flags: in: must be zero.
 * @ring_size: out: bytes to map at %DMAPLANE_CQ_RING_OFFSET.
 * @head_size: out: bytes to map at %DMAPLANE_CQ_HEAD_OFFSET.
 * @reserved: in: must be zero.
 */
struct dmaplane_ep_setup {
	__u64 auth_key;
	__u32 cq_entries;
	__u32 flags;
	__u64 ring_size;
	__u64 head_size;
	__u64 reserved[2];
};

/**
 * struct dmaplane_cq_ring - start of the read-only ring mapping
 * @tail: producer index, written by the kernel (entries [head, tail)
 *	are valid; read it with acquire semantics)
 * @mask: entries - 1
 * @entries: number of entries
 * @entry_size: sizeof(struct dmaplane_cqe)
 * @entries_offset: byte offset of entry 0 from the start of the mapping
 * @pad: zero
 */
struct dmaplane_cq_ring {
	__u32 tail;
	__u32 mask;
	__u32 entries;
	__u32 entry_size;
	__u32 entries_offset;
	__u32 pad[11];
};

/**
 * struct dmaplane_cq_head - the read-write consumer page
 * @head: consumer index: the owner stores the index of the next entry it
 *	will read (with release semantics) after reading entries
 */
struct dmaplane_cq_head {
	__u32 head;
};

/* Operation codes of &dmaplane_op.opcode and &dmaplane_cqe.opcode. */
#define DMAPLANE_OP_SEND	1
#define DMAPLANE_OP_RECV	2
/** DMAPLANE_OP_PUT - write the local buffer into a peer's region */
#define DMAPLANE_OP_PUT		3
/** DMAPLANE_OP_GET - read a peer's region into the local buffer */
#define DMAPLANE_OP_GET		4

/**
 * DMAPLANE_OP_F_CLAIMED - RECV of a message claimed by
 * %DMAPLANE_IOCTL_PROBE with %DMAPLANE_PROBE_CLAIM (as MPI_Mrecv):
 * &dmaplane_op.peer is the claim handle; tag and ignore must be zero.
 */
#define DMAPLANE_OP_F_CLAIMED	_BITUL(0)
/**
 * DMAPLANE_OP_F_IOV - SEND/RECV: &dmaplane_op.addr points to an array of
 * struct iovec of the caller's ABI (a 32-bit process's own, 8-byte one)
 * and &dmaplane_op.len is its count (1 to 1024); the message is the
 * concatenation of the pieces.
 */
#define DMAPLANE_OP_F_IOV	_BITUL(1)
/**
 * DMAPLANE_OP_F_DATA - SEND: &dmaplane_op.data is remote completion data:
 * the receive that takes the message completes with it in
 * &dmaplane_cqe.data and %DMAPLANE_CQE_F_DATA set (fi_tsenddata).  PUT
 * (with %DMAPLANE_CAP_PUT_DATA): once the bytes are in the target's
 * region, the region's owner gets a completion of its own, as an RDMA
 * write with immediate data (fi_writedata): opcode %DMAPLANE_OP_PUT,
 * %DMAPLANE_CQE_F_REMOTE and %DMAPLANE_CQE_F_DATA set, @data, the bytes
 * written in @len, the initiator in @src (and @src_av), @ctx zero.  The
 * target's ring must have room for it when the PUT arrives: otherwise the
 * PUT writes nothing and fails with -EAGAIN (on one node at submission,
 * across nodes in the initiator's completion).  Needs an operation of at
 * least %DMAPLANE_OP_SIZE_V1 bytes.
 */
#define DMAPLANE_OP_F_DATA	_BITUL(2)
/**
 * DMAPLANE_OP_F_REGION - SEND, RECV, PUT, GET: the local buffer is
 * [&dmaplane_op.addr, + &dmaplane_op.len) of the caller's own region whose
 * handle is &dmaplane_op.region (an arena, registered memory or an
 * imported dma-buf), not a user address: GPU memory and arenas that are
 * not mapped can be sent from and received into.  Not with
 * %DMAPLANE_OP_F_IOV.  A range outside the region fails with -ERANGE, a
 * RECV or GET into a region without %DMAPLANE_ACCESS_LOCAL_WRITE with
 * -EACCES, an unknown handle with -ENOENT, an invalidated region with
 * -EFAULT (in the completion when it goes away later).  The region stays
 * referenced until the operation completes.
 */
#define DMAPLANE_OP_F_REGION	_BITUL(3)
/**
 * DMAPLANE_OP_F_INLINE - RECV into a buffer at a user address (neither
 * %DMAPLANE_OP_F_IOV nor %DMAPLANE_OP_F_REGION): when at most
 * %DMAPLANE_CQE_INLINE_MAX bytes are received, the module may put them
 * into the completion instead of the buffer, as a NIC scatters a small
 * message into its CQE.  Such a completion has %DMAPLANE_CQE_F_INLINE
 * set and the &dmaplane_cqe.len bytes received in the first bytes of
 * &dmaplane_cqe.data, in memory order; the buffer is not written and the
 * caller copies them.  A completion without the flag wrote the buffer as
 * any receive does.  The buffer is not pinned while the receive is
 * posted (a larger message is copied in as into a buffer that could not
 * be).  A message that carries remote completion data
 * (%DMAPLANE_OP_F_DATA) is never delivered inline.  Needs
 * %DMAPLANE_CAP_RECV_INLINE.
 */
#define DMAPLANE_OP_F_INLINE	_BITUL(4)

/** DMAPLANE_AV_ANY - &dmaplane_op.peer of a receive: any source */
#define DMAPLANE_AV_ANY		0xffffffffU

/**
 * struct dmaplane_op - one operation of %DMAPLANE_IOCTL_SUBMIT
 * @opcode: ``DMAPLANE_OP_*``.
 * @pad0: must be zero.
 * @flags: ``DMAPLANE_OP_F_*`` bits valid for the opcode, others zero.
 * @peer: SEND, PUT, GET: address handle of the peer.  RECV: address
 *	handle of the source, or %DMAPLANE_AV_ANY (or a claim handle, see
 *	%DMAPLANE_OP_F_CLAIMED).
 * @region: with %DMAPLANE_OP_F_REGION: the handle of the caller's region
 *	that holds the buffer; else zero.
 * @tag: the message's tag (SEND); the tag to match (RECV); PUT/GET: zero.
 * @ignore: RECV: tag bits that do not take part in matching; else zero.
 * @addr: the user buffer (with %DMAPLANE_OP_F_REGION: its offset in the
 *	region).
 * @len: its length in bytes (may be 0).
 * @ctx: returned as &dmaplane_cqe.ctx.
 * @rkey: PUT/GET: the peer region's remote key; else zero.
 * @roffset: PUT/GET: byte offset in the peer's region; else zero.
 * @data: SEND with %DMAPLANE_OP_F_DATA: the remote completion data; else
 *	zero.  (Not in %DMAPLANE_OP_SIZE_V0 operations.)
 *
 * The structure grows at its end; &dmaplane_submit.op_size says how large
 * the caller's is (see %DMAPLANE_IOCTL_SUBMIT).
 */
struct dmaplane_op {
	__u8 opcode;
	__u8 pad0[3];
	__u32 flags;
	__u32 peer;
	__u32 region;
	__u64 tag;
	__u64 ignore;
	__u64 addr;
	__u64 len;
	__u64 ctx;
	__u64 rkey;
	__u64 roffset;
	__u64 data;
};

/** DMAPLANE_OP_SIZE_V0 - size of the first &struct dmaplane_op (no @data) */
#define DMAPLANE_OP_SIZE_V0	72
/** DMAPLANE_OP_SIZE_V1 - size of &struct dmaplane_op with @data */
#define DMAPLANE_OP_SIZE_V1	80

/**
 * struct dmaplane_submit - argument of %DMAPLANE_IOCTL_SUBMIT
 * @ops: in: user pointer to an array of &struct dmaplane_op.
 * @nr: in: number of operations, 1 to 256.
 * @flags: in: must be zero.
 * @done: out: how many operations, from the first, were accepted; each
 *	accepted operation completes on the ring.  Processing stops at the
 *	first operation that is rejected, whose errno the ioctl returns when
 *	it is the first one (otherwise the ioctl returns 0 and the caller
 *	submits the rest again to see the error).
 * @op_size: in: size in bytes of each operation of @ops, the stride of
 *	the array: sizeof(struct dmaplane_op) of the caller's header, at
 *	least %DMAPLANE_OP_SIZE_V0 and a multiple of 8, or 0 for
 *	%DMAPLANE_OP_SIZE_V0.  A smaller operation than the kernel's reads
 *	as if its missing fields were zero; a larger one must have zeroes
 *	beyond the fields the kernel knows (else -E2BIG), as openat2(2) and
 *	clone3(2) grow.
 */
struct dmaplane_submit {
	__u64 ops;
	__u32 nr;
	__u32 flags;
	__u32 done;
	__u32 op_size;
};

/**
 * DOC: Submission through io_uring
 *
 * With %DMAPLANE_CAP_URING_CMD, a batch of operations can also be
 * submitted as an io_uring ``IORING_OP_URING_CMD`` on the endpoint's file
 * descriptor, in an ordinary 64-byte SQE: ``sqe->cmd_op`` is
 * %DMAPLANE_URING_CMD_SUBMIT and the SQE's 16-byte command area
 * (``sqe->cmd``) holds a &struct dmaplane_uring_submit.  With
 * ``IORING_SETUP_SQPOLL`` the kernel's submission thread picks the SQE up,
 * so a send needs no system call of its own.
 *
 * The batch goes through the same code as %DMAPLANE_IOCTL_SUBMIT, with
 * the same checks and the same completions on the endpoint's ring; the
 * io_uring completion (CQE) only says how the submission went: its
 * ``res`` is the number of operations accepted, from the first (1 to
 * @nr; the rest were not looked at, or the first of them was rejected and
 * is submitted again to see its error), or a negative errno when none
 * was: the errors of %DMAPLANE_IOCTL_SUBMIT, and -EOPNOTSUPP for an
 * unknown ``cmd_op``.  The operations are read when io_uring issues the
 * SQE, which may be later than io_uring_enter() returns (SQPOLL, or a
 * request io_uring hands to its workers): the array must stay unchanged
 * until the CQE arrives.
 *
 * The address-space rule of %DMAPLANE_IOCTL_SUBMIT holds: io_uring issues
 * the command in the ring owner's address space (its own task, its SQPOLL
 * thread or its workers), so a ring created by any process other than the
 * endpoint's opener (a child after fork(), a receiver of the descriptor)
 * gets -EPERM.
 */

/**
 * DMAPLANE_URING_CMD_SUBMIT - ``sqe->cmd_op`` of a batch submission
 * through io_uring (see "Submission through io_uring").  Command numbers
 * are encoded like ioctl numbers (type %DMAPLANE_IOCTL_TYPE, the size of
 * the command area they read), as ublk's are, and only appended; any
 * other ``cmd_op`` fails with -EOPNOTSUPP.
 */
#define DMAPLANE_URING_CMD_SUBMIT \
	_IOW(DMAPLANE_IOCTL_TYPE, 0x80, struct dmaplane_uring_submit)

/**
 * struct dmaplane_uring_submit - the command area (``sqe->cmd``) of
 * %DMAPLANE_URING_CMD_SUBMIT
 * @ops: user pointer to an array of &struct dmaplane_op, as
 *	&dmaplane_submit.ops.
 * @nr: number of operations, 1 to 256 (else -EINVAL).
 * @op_size: size in bytes of each operation, as &dmaplane_submit.op_size
 *	(0 for %DMAPLANE_OP_SIZE_V0).
 * @flags: must be zero (-EINVAL).
 *
 * 16 bytes: the command area of a 64-byte SQE; no ``IORING_SETUP_SQE128``
 * is needed.
 */
struct dmaplane_uring_submit {
	__u64 ops;
	__u32 nr;
	__u16 op_size;
	__u16 flags;
};

/**
 * struct dmaplane_cqe - a completion
 * @ctx: the operation's &dmaplane_op.ctx.
 * @len: bytes transferred: SEND, the message length; RECV, the bytes
 *	placed in the buffer (at most the buffer's length).
 * @msg_len: RECV: the length of the message as sent (larger than @len
 *	when it was truncated); SEND: as @len.
 * @tag: RECV: the message's tag; SEND: the tag sent.
 * @src: RECV: the sender as a source value (see "Sources"): its
 *	&dmaplane_name.ep_uid in the low %DMAPLANE_SRC_NODE_SHIFT bits
 *	(DMAPLANE_SRC_EP_UID()) and its node's slot above them
 *	(DMAPLANE_SRC_NODE_SLOT(); 0 for this node, so for a sender on this
 *	node @src is its ep_uid).  %DMAPLANE_CQE_F_REMOTE: the initiator
 *	of the PUT.  Zero for SEND, PUT, GET and a cancelled RECV.
 * @status: 0, or a negative errno: -EMSGSIZE (truncated: the buffer got
 *	@len bytes, the rest was dropped, as MPI_ERR_TRUNCATE), -ECONNRESET
 *	(the peer went away), -EFAULT (a buffer was not accessible), ...
 * @data: with %DMAPLANE_CQE_F_DATA: the remote completion data the
 *	sender of the message (or the initiator of the PUT) gave
 *	(%DMAPLANE_OP_F_DATA); else zero.
 * @opcode: ``DMAPLANE_OP_*`` of the operation.
 * @flags: ``DMAPLANE_CQE_F_*``.
 * @pad: zero.
 * @src_av: with %DMAPLANE_CQE_F_SRC_AV (a RECV, or a completion with
 *	%DMAPLANE_CQE_F_REMOTE): the receiver's address
 *	handle (%DMAPLANE_IOCTL_AV_INSERT) that names the sender, looked up
 *	by the kernel when the receive completes; without the flag (the
 *	receiver holds no handle of the sender), zero.
 * @reserved: zero.  Room for later fields.
 *
 * The ring says how large its entries are (&dmaplane_cq_ring.entry_size):
 * a reader copies what both know and treats the rest of its own structure
 * as zero.
 */
struct dmaplane_cqe {
	__u64 ctx;
	__u64 len;
	__u64 msg_len;
	__u64 tag;
	__u64 src;
	__u64 data;
	__s32 status;
	__u8 opcode;
	__u8 flags;
	__u16 pad;
	__u32 src_av;
	__u32 reserved;
};

/** DMAPLANE_CQE_F_DATA - &dmaplane_cqe.data holds remote completion data */
#define DMAPLANE_CQE_F_DATA	_BITUL(0)
/** DMAPLANE_CQE_F_SRC_AV - &dmaplane_cqe.src_av names the sender */
#define DMAPLANE_CQE_F_SRC_AV	_BITUL(1)
/**
 * DMAPLANE_CQE_F_REMOTE - not one of this endpoint's operations: a peer's
 * PUT with %DMAPLANE_OP_F_DATA into one of its regions (ctx is zero)
 */
#define DMAPLANE_CQE_F_REMOTE	_BITUL(2)
/**
 * DMAPLANE_CQE_F_INLINE - a RECV with %DMAPLANE_OP_F_INLINE: its
 * &dmaplane_cqe.len bytes are in &dmaplane_cqe.data, not in its buffer
 */
#define DMAPLANE_CQE_F_INLINE	_BITUL(3)
/** DMAPLANE_CQE_INLINE_MAX - the most bytes &dmaplane_cqe.data carries */
#define DMAPLANE_CQE_INLINE_MAX	8

/**
 * DMAPLANE_IOCTL_EP_SETUP - set the security domain and create the ring.
 *
 * Once per endpoint.  Errors: -EBUSY (already set up), -EINVAL (bad ring
 * size, flags, padding), -ENOMEM, -EFAULT.
 */
#define DMAPLANE_IOCTL_EP_SETUP \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_EP_SETUP, struct dmaplane_ep_setup)
/**
 * DMAPLANE_IOCTL_GETNAME - this endpoint's name.  Errors: -EFAULT.
 */
#define DMAPLANE_IOCTL_GETNAME \
	_IOR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_GETNAME, struct dmaplane_name)

/**
 * struct dmaplane_av_insert - argument of %DMAPLANE_IOCTL_AV_INSERT
 * @name: in: a peer's name.
 * @flags: in: must be zero.
 * @handle: out: address handle, valid on this endpoint.
 */
struct dmaplane_av_insert {
	struct dmaplane_name name;
	__u32 flags;
	__u32 handle;
};

/**
 * DMAPLANE_IOCTL_AV_INSERT - turn a peer's name into an address handle.
 *
 * Errors: -ECONNREFUSED (no such endpoint: closed, or never existed),
 * -EACCES (the peer is in another security domain), -ENETUNREACH (the
 * name is of another node and no connected peer node has that node_id),
 * -ECONNRESET (the connection to that node broke while asking), -EINVAL
 * (flags; the endpoint is not set up), -ENOMEM, -EFAULT.
 */
#define DMAPLANE_IOCTL_AV_INSERT \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_AV_INSERT, struct dmaplane_av_insert)
/**
 * DMAPLANE_IOCTL_AV_REMOVE - forget an address handle.
 * Errors: -ENOENT, -EINVAL, -EFAULT.
 */
#define DMAPLANE_IOCTL_AV_REMOVE \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_AV_REMOVE, struct dmaplane_handle_arg)
/**
 * DMAPLANE_IOCTL_SUBMIT - submit operations (see &struct dmaplane_submit).
 *
 * Errors of an operation: -EINVAL (opcode, flags, padding, a tag ignore
 * mask on a send, the endpoint is not set up), -ENOENT (unknown address
 * handle), -ECONNRESET (the peer is gone), -EAGAIN (no room left on the
 * ring for its completion, or the receiver's unexpected-message budget is
 * exhausted, or this endpoint's operations in flight hold their
 * iov_budget of iovec copies, or its eager sends to other nodes not yet
 * acknowledged hold eager_backlog bytes: retry after consuming
 * completions), -EFAULT, -ENOMEM (also,
 * to an endpoint of another node: a SEND above the eager threshold, a PUT
 * or a GET whose buffer, pinned until the peer is done with it, would
 * exceed RLIMIT_MEMLOCK or the module cap).
 *
 * PUT and GET are checked on the target and complete with: -ENOENT (no
 * region of the peer has that key: never, or no longer), -EACCES (the
 * region lacks REMOTE_WRITE resp. REMOTE_READ), -ERANGE (roffset + len
 * beyond the region, overflow-safe), -EFAULT (the region was invalidated,
 * or the local buffer faulted).
 */
#define DMAPLANE_IOCTL_SUBMIT \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_SUBMIT, struct dmaplane_submit)

/** DMAPLANE_PROBE_CLAIM - take the message out of matching (MPI_Improbe) */
#define DMAPLANE_PROBE_CLAIM	_BITUL(0)

/**
 * struct dmaplane_probe - argument of %DMAPLANE_IOCTL_PROBE
 * @peer: in: address handle of the source, or %DMAPLANE_AV_ANY.
 * @flags: in: %DMAPLANE_PROBE_CLAIM or 0.
 * @tag: in: tag to match; out: the message's tag.
 * @ignore: in: tag bits that do not take part in matching.
 * @src: out: the sender as a source value (see "Sources"): its
 *	&dmaplane_name.ep_uid in the low %DMAPLANE_SRC_NODE_SHIFT bits
 *	(DMAPLANE_SRC_EP_UID()), its node's slot above them
 *	(DMAPLANE_SRC_NODE_SLOT(); 0 for this node).
 * @len: out: the message's length.
 * @data: out: the message's remote completion data when @cqe_flags has
 *	%DMAPLANE_CQE_F_DATA, else zero.
 * @claim: out: with %DMAPLANE_PROBE_CLAIM, the handle that a RECV with
 *	%DMAPLANE_OP_F_CLAIMED takes; the message stays claimed until then
 *	or until the endpoint is closed.
 * @cqe_flags: out: the ``DMAPLANE_CQE_F_*`` its receive would complete
 *	with.
 * @src_av: out: with %DMAPLANE_CQE_F_SRC_AV in @cqe_flags, the caller's
 *	address handle that names the sender (as &dmaplane_cqe.src_av).
 * @reserved: in: must be zero; out: zero.
 */
struct dmaplane_probe {
	__u32 peer;
	__u32 flags;
	__u64 tag;
	__u64 ignore;
	__u64 src;
	__u64 len;
	__u64 data;
	__u32 claim;
	__u32 cqe_flags;
	__u32 src_av;
	__u32 reserved;
};

/**
 * DMAPLANE_IOCTL_PROBE - is there an unexpected message a receive with
 * this source, tag and ignore mask would take (MPI_Iprobe/MPI_Improbe)?
 *
 * Returns 0 and fills the message's details when there is, -EAGAIN when
 * there is not.  Errors: -ENOENT (unknown address handle), -EINVAL
 * (flags, padding, endpoint not set up), -EFAULT.
 */
#define DMAPLANE_IOCTL_PROBE \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_PROBE, struct dmaplane_probe)

/**
 * struct dmaplane_cancel - argument of %DMAPLANE_IOCTL_CANCEL
 * @ctx: in: &dmaplane_op.ctx of a posted receive.
 * @flags: in: must be zero.
 * @pad: in: must be zero.
 */
struct dmaplane_cancel {
	__u64 ctx;
	__u32 flags;
	__u32 pad;
};

/**
 * DMAPLANE_IOCTL_CANCEL - cancel the earliest posted receive with this ctx
 * that no message has matched yet (MPI_Cancel).  It completes with
 * -ECANCELED.  Errors: -ENOENT (none: already matched, or never posted),
 * -EINVAL, -EFAULT.
 */
#define DMAPLANE_IOCTL_CANCEL \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_CANCEL, struct dmaplane_cancel)

/**
 * DOC: Generic netlink family
 *
 * The family "dmaplane" is the control plane; dpctl(8) uses it.
 *
 * Every request attribute is validated strictly against the family's
 * policy: unknown attributes, wrong types and wrong lengths fail with
 * -EINVAL.  GET_STATS is a doit; GET_ENDPOINT, GET_REGION and GET_PEER
 * are dumps.  PEER_ADD and PEER_DEL need CAP_NET_ADMIN (-EPERM).  Users
 * without CAP_NET_ADMIN see only the endpoints (and their regions) opened
 * with their own effective uid.  Remote keys and auth keys are never
 * reported.  The family lives in the initial network namespace only.
 */
#define DMAPLANE_GENL_NAME		"dmaplane"
#define DMAPLANE_GENL_VERSION		1
/* Multicast group of &enum dmaplane_nl_event_cmd notifications. */
#define DMAPLANE_GENL_MCGRP_EVENTS	"events"

/**
 * enum dmaplane_nl_cmd - generic netlink commands of the "dmaplane" family
 * @DMAPLANE_CMD_UNSPEC: invalid
 * @DMAPLANE_CMD_GET_STATS: doit: every object counter and the module
 *	parameters, by name (%DMAPLANE_ATTR_STAT_COUNTERS,
 *	%DMAPLANE_ATTR_PARAMS) and, for the older ones, by number
 *	(``DMAPLANE_ATTR_STAT_*`` and ``DMAPLANE_ATTR_PARAM_*``)
 * @DMAPLANE_CMD_GET_ENDPOINT: dump: one message per visible endpoint
 * @DMAPLANE_CMD_GET_REGION: dump: one message per region of a visible
 *	endpoint
 * @DMAPLANE_CMD_PEER_ADD: add a peer node (CAP_NET_ADMIN): needs
 *	%DMAPLANE_ATTR_PEER_FAMILY and %DMAPLANE_ATTR_PEER_ADDR,
 *	%DMAPLANE_ATTR_PEER_PORT is optional.  -EEXIST when the address is
 *	known already (whatever the port).
 * @DMAPLANE_CMD_PEER_DEL: remove a peer node by address (CAP_NET_ADMIN);
 *	-ENOENT when unknown
 * @DMAPLANE_CMD_GET_PEER: dump: one message per peer node
 * @DMAPLANE_CMD_EVENT_PEER_ADDED: event: a peer was added (peer attributes)
 * @DMAPLANE_CMD_EVENT_PEER_REMOVED: event: a peer was removed
 * @DMAPLANE_CMD_EVENT_PEER_UP: event: a peer's connection came up
 *	(peer attributes, with %DMAPLANE_ATTR_PEER_NODE_ID)
 * @DMAPLANE_CMD_EVENT_PEER_DOWN: event: a peer's connection went away
 * @DMAPLANE_CMD_EVENT_REGION_INVALIDATED: event: a region's memory went
 *	away (endpoint id, handle, kind)
 * @__DMAPLANE_CMD_MAX: internal
 * @DMAPLANE_CMD_MAX: highest command
 */
enum dmaplane_nl_cmd {
	DMAPLANE_CMD_UNSPEC,
	DMAPLANE_CMD_GET_STATS,
	DMAPLANE_CMD_GET_ENDPOINT,
	DMAPLANE_CMD_GET_REGION,
	DMAPLANE_CMD_PEER_ADD,
	DMAPLANE_CMD_PEER_DEL,
	DMAPLANE_CMD_GET_PEER,
	DMAPLANE_CMD_EVENT_PEER_ADDED,
	DMAPLANE_CMD_EVENT_PEER_REMOVED,
	DMAPLANE_CMD_EVENT_REGION_INVALIDATED,
	DMAPLANE_CMD_EVENT_PEER_UP,
	DMAPLANE_CMD_EVENT_PEER_DOWN,

	__DMAPLANE_CMD_MAX,
	DMAPLANE_CMD_MAX = __DMAPLANE_CMD_MAX - 1
};

/**
 * enum dmaplane_nl_attr - attributes of the "dmaplane" family
 * @DMAPLANE_ATTR_UNSPEC: invalid
 * @DMAPLANE_ATTR_PAD: padding of 64-bit attributes
 * @DMAPLANE_ATTR_STAT_ENDPOINTS: u64, &struct dmaplane_stats counters ...
 * @DMAPLANE_ATTR_STAT_REGIONS: u64
 * @DMAPLANE_ATTR_STAT_ARENAS: u64
 * @DMAPLANE_ATTR_STAT_ARENA_PAGES: u64
 * @DMAPLANE_ATTR_STAT_USER_MRS: u64
 * @DMAPLANE_ATTR_STAT_PINNED_PAGES: u64
 * @DMAPLANE_ATTR_STAT_CHARGED_PAGES: u64
 * @DMAPLANE_ATTR_STAT_DMABUFS: u64
 * @DMAPLANE_ATTR_STAT_IMPORTS: u64
 * @DMAPLANE_ATTR_STAT_INVALIDATIONS: u64
 * @DMAPLANE_ATTR_STAT_POSTED_RECVS: u64
 * @DMAPLANE_ATTR_STAT_UNEXP_MSGS: u64
 * @DMAPLANE_ATTR_PARAM_EAGER_THRESHOLD: u64, module parameter
 * @DMAPLANE_ATTR_PARAM_UNEXP_BUDGET: u64, module parameter
 * @DMAPLANE_ATTR_PARAM_UNEXP_MAX: u64, module parameter
 * @DMAPLANE_ATTR_PARAM_MAX_PINNED_MB: u64, module parameter
 * @DMAPLANE_ATTR_PARAM_MR_CACHE_MAX_ENTRIES: u64, module parameter
 * @DMAPLANE_ATTR_EP_ID: u32, endpoint id (also the owner of a region)
 * @DMAPLANE_ATTR_EP_UID: u64, the endpoint's never-reused identity
 * @DMAPLANE_ATTR_EP_USER: u32, effective uid of the endpoint's opener
 * @DMAPLANE_ATTR_EP_NR_REGIONS: u32, regions of the endpoint
 * @DMAPLANE_ATTR_EP_POSTED_RECVS: u32, receives posted and waiting
 * @DMAPLANE_ATTR_EP_UNEXP_MSGS: u32, unexpected messages queued
 * @DMAPLANE_ATTR_REGION_HANDLE: u32, handle on the owner endpoint
 * @DMAPLANE_ATTR_REGION_KIND: u8, &enum dmaplane_nl_region_kind
 * @DMAPLANE_ATTR_REGION_LEN: u64, bytes
 * @DMAPLANE_ATTR_REGION_ACCESS: u32, ``DMAPLANE_ACCESS_*`` bits
 * @DMAPLANE_ATTR_REGION_STATE: u8, &enum dmaplane_nl_region_state
 * @DMAPLANE_ATTR_PEER_FAMILY: u16, AF_INET or AF_INET6
 * @DMAPLANE_ATTR_PEER_ADDR: binary, &struct in_addr (4 bytes) for AF_INET
 *	or &struct in6_addr (16 bytes) for AF_INET6, network byte order
 * @DMAPLANE_ATTR_PEER_PORT: u16, host byte order; 0 (or absent): the
 *	transport's default port
 * @DMAPLANE_ATTR_PEER_STATE: u8, &enum dmaplane_nl_peer_state
 * @DMAPLANE_ATTR_PEER_NODE_ID: u64, the peer's node_id (once connected)
 * @DMAPLANE_ATTR_PEER_SLOT: u32, the peer's node slot in sources
 *	(%DMAPLANE_SRC_NODE_SLOT), 0 before the first connection
 * @DMAPLANE_ATTR_PEER_TX_MSGS: u64, messages sent to the peer
 * @DMAPLANE_ATTR_PEER_RX_MSGS: u64, messages received from the peer
 * @DMAPLANE_ATTR_PEER_TX_BYTES: u64, bytes sent (headers, payloads and
 *	RDMA transfers this node started)
 * @DMAPLANE_ATTR_PEER_RX_BYTES: u64, bytes received
 * @DMAPLANE_ATTR_PEER_DROPS: u64, connections dropped because the peer
 *	sent something malformed or unknown
 * @DMAPLANE_ATTR_PEER_MEM_BYTES: u64, kernel memory the connection holds
 *	(receive buffers, queues); does not grow with remote processes
 * @DMAPLANE_ATTR_PARAM_PORT: u64, module parameter: rdma_cm port
 * @DMAPLANE_ATTR_STAT_XFER_PAGES: u64, user pages pinned for transfers
 *	with other nodes in progress
 * @DMAPLANE_ATTR_STAT_COUNTERS: nested, GET_STATS: every counter the
 *	module has, one %DMAPLANE_ATTR_STAT_ENTRY each, in the module's
 *	order (the numbered ``DMAPLANE_ATTR_STAT_*`` attributes cover only the
 *	counters that existed before this one; new counters come only here)
 * @DMAPLANE_ATTR_STAT_ENTRY: nested, one named value:
 *	%DMAPLANE_ATTR_STAT_ENTRY_NAME and %DMAPLANE_ATTR_STAT_ENTRY_VALUE
 * @DMAPLANE_ATTR_STAT_ENTRY_NAME: NUL-terminated string, the name of a
 *	counter (as in /sys/kernel/debug/dmaplane/stats) or of a module
 *	parameter (as in /sys/module/dmaplane/parameters/)
 * @DMAPLANE_ATTR_STAT_ENTRY_VALUE: u64, its value
 * @DMAPLANE_ATTR_PARAMS: nested, GET_STATS: every integer module
 *	parameter, one %DMAPLANE_ATTR_STAT_ENTRY each
 * @__DMAPLANE_ATTR_MAX: internal
 * @DMAPLANE_ATTR_MAX: highest attribute
 */
enum dmaplane_nl_attr {
	DMAPLANE_ATTR_UNSPEC,
	DMAPLANE_ATTR_PAD,
	DMAPLANE_ATTR_STAT_ENDPOINTS,
	DMAPLANE_ATTR_STAT_REGIONS,
	DMAPLANE_ATTR_STAT_ARENAS,
	DMAPLANE_ATTR_STAT_ARENA_PAGES,
	DMAPLANE_ATTR_STAT_USER_MRS,
	DMAPLANE_ATTR_STAT_PINNED_PAGES,
	DMAPLANE_ATTR_STAT_CHARGED_PAGES,
	DMAPLANE_ATTR_STAT_DMABUFS,
	DMAPLANE_ATTR_STAT_IMPORTS,
	DMAPLANE_ATTR_STAT_INVALIDATIONS,
	DMAPLANE_ATTR_STAT_POSTED_RECVS,
	DMAPLANE_ATTR_STAT_UNEXP_MSGS,
	DMAPLANE_ATTR_PARAM_EAGER_THRESHOLD,
	DMAPLANE_ATTR_PARAM_UNEXP_BUDGET,
	DMAPLANE_ATTR_PARAM_UNEXP_MAX,
	DMAPLANE_ATTR_PARAM_MAX_PINNED_MB,
	DMAPLANE_ATTR_PARAM_MR_CACHE_MAX_ENTRIES,
	DMAPLANE_ATTR_EP_ID,
	DMAPLANE_ATTR_EP_UID,
	DMAPLANE_ATTR_EP_USER,
	DMAPLANE_ATTR_EP_NR_REGIONS,
	DMAPLANE_ATTR_EP_POSTED_RECVS,
	DMAPLANE_ATTR_EP_UNEXP_MSGS,
	DMAPLANE_ATTR_REGION_HANDLE,
	DMAPLANE_ATTR_REGION_KIND,
	DMAPLANE_ATTR_REGION_LEN,
	DMAPLANE_ATTR_REGION_ACCESS,
	DMAPLANE_ATTR_REGION_STATE,
	DMAPLANE_ATTR_PEER_FAMILY,
	DMAPLANE_ATTR_PEER_ADDR,
	DMAPLANE_ATTR_PEER_PORT,
	DMAPLANE_ATTR_PEER_STATE,
	DMAPLANE_ATTR_PEER_NODE_ID,
	DMAPLANE_ATTR_PEER_SLOT,
	DMAPLANE_ATTR_PEER_TX_MSGS,
	DMAPLANE_ATTR_PEER_RX_MSGS,
	DMAPLANE_ATTR_PEER_TX_BYTES,
	DMAPLANE_ATTR_PEER_RX_BYTES,
	DMAPLANE_ATTR_PEER_DROPS,
	DMAPLANE_ATTR_PEER_MEM_BYTES,
	DMAPLANE_ATTR_PARAM_PORT,
	DMAPLANE_ATTR_STAT_XFER_PAGES,
	DMAPLANE_ATTR_STAT_COUNTERS,
	DMAPLANE_ATTR_STAT_ENTRY,
	DMAPLANE_ATTR_STAT_ENTRY_NAME,
	DMAPLANE_ATTR_STAT_ENTRY_VALUE,
	DMAPLANE_ATTR_PARAMS,

	__DMAPLANE_ATTR_MAX,
	DMAPLANE_ATTR_MAX = __DMAPLANE_ATTR_MAX - 1
};

/**
 * enum dmaplane_nl_region_kind - values of %DMAPLANE_ATTR_REGION_KIND
 * @DMAPLANE_NL_REGION_ARENA: an arena
 * @DMAPLANE_NL_REGION_USER: registered (pinned) user memory
 * @DMAPLANE_NL_REGION_DMABUF: an imported dma-buf
 */
enum dmaplane_nl_region_kind {
	DMAPLANE_NL_REGION_ARENA,
	DMAPLANE_NL_REGION_USER,
	DMAPLANE_NL_REGION_DMABUF,
};

/**
 * enum dmaplane_nl_region_state - values of %DMAPLANE_ATTR_REGION_STATE
 * @DMAPLANE_NL_REGION_VALID: usable
 * @DMAPLANE_NL_REGION_INVALID: the backing memory went away
 */
enum dmaplane_nl_region_state {
	DMAPLANE_NL_REGION_VALID,
	DMAPLANE_NL_REGION_INVALID,
};

/**
 * enum dmaplane_nl_peer_state - values of %DMAPLANE_ATTR_PEER_STATE
 * @DMAPLANE_NL_PEER_DOWN: no connection (not tried yet, or it broke; the
 *	transport retries every second)
 * @DMAPLANE_NL_PEER_UP: connected
 * @DMAPLANE_NL_PEER_CONNECTING: resolving the address or connecting
 */
enum dmaplane_nl_peer_state {
	DMAPLANE_NL_PEER_DOWN,
	DMAPLANE_NL_PEER_UP,
	DMAPLANE_NL_PEER_CONNECTING,
};

#endif /* _UAPI_LINUX_DMAPLANE_H */

/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * dmaplane: kernel-assisted tag-matched messaging, long-term memory
 * registration and dma-buf arenas.
 *
 * This is the only ABI header of dmaplane.  Rules (see
 * Documentation/process/botching-up-ioctls.rst):
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

/*
 * Capability bits reported in &dmaplane_info.caps.  A bit is set when the
 * loaded module implements the corresponding group of ioctls.  Bits are
 * only ever appended.
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
 * struct dmaplane_info - argument of %DMAPLANE_IOCTL_GET_INFO
 * @flags: in: must be zero (no flags are defined yet).
 * @abi_version: out: %DMAPLANE_ABI_VERSION of the running module.
 * @caps: out: %DMAPLANE_CAP_* bits the running module implements.
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

/* ioctl type and the first command number used by dmaplane. */
#define DMAPLANE_IOCTL_TYPE	'X'
#define DMAPLANE_IOCTL_NR_BASE	0xa0

/**
 * DMAPLANE_IOCTL_GET_INFO - report ABI version and capabilities.
 *
 * Argument: &struct dmaplane_info.  Errors: -EFAULT (bad pointer),
 * -EINVAL (non-zero @flags, @pad or @reserved).
 */
#define DMAPLANE_IOCTL_GET_INFO \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_IOCTL_NR_BASE + 0, struct dmaplane_info)

/*
 * Memory: arenas, registered regions (MRs), dma-buf export and import.
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
 * @flags: in: %DMAPLANE_ARENA_* bits.
 * @numa_node: in: NUMA node to allocate on, or %DMAPLANE_NUMA_ANY.
 * @access: in: %DMAPLANE_ACCESS_* bits of the arena as a region.
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
 * @access: in: %DMAPLANE_ACCESS_* bits.  Pages are pinned writable when
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
 * (a cache hit: no pages are pinned twice).
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
 * @state: out: %DMAPLANE_MR_STATE_*.
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
 * @flags: in: %DMAPLANE_DMABUF_* bits.
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
 * @access: in: %DMAPLANE_ACCESS_* bits.
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
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_IOCTL_NR_BASE + 1, struct dmaplane_arena_create)
/**
 * DMAPLANE_IOCTL_ARENA_DESTROY - drop the endpoint's reference to an arena.
 *
 * The memory lives on while a mapping or an exported dma-buf holds it.
 * Errors: -ENOENT (no such arena on this endpoint), -EINVAL, -EFAULT.
 */
#define DMAPLANE_IOCTL_ARENA_DESTROY \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_IOCTL_NR_BASE + 2, struct dmaplane_handle_arg)
/**
 * DMAPLANE_IOCTL_MR_REG - pin and register user memory.
 *
 * Errors: -EINVAL (zero length, wrap-around, unknown access bit or flag,
 * non-zero padding), -ENOMEM (RLIMIT_MEMLOCK, module cap), -EFAULT
 * (unmapped memory), -EOPNOTSUPP or the errno of pin_user_pages() for
 * memory that cannot be pinned long-term, -EINTR on a fatal signal.
 */
#define DMAPLANE_IOCTL_MR_REG \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_IOCTL_NR_BASE + 3, struct dmaplane_mr_reg)
/**
 * DMAPLANE_IOCTL_MR_DEREG - release a region (user MR or imported dma-buf).
 *
 * Errors: -ENOENT (no such region on this endpoint, e.g. deregistered
 * twice), -EINVAL, -EFAULT.
 */
#define DMAPLANE_IOCTL_MR_DEREG \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_IOCTL_NR_BASE + 4, struct dmaplane_handle_arg)
/** DMAPLANE_IOCTL_MR_QUERY - state and counters of a region. */
#define DMAPLANE_IOCTL_MR_QUERY \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_IOCTL_NR_BASE + 5, struct dmaplane_mr_query)
/**
 * DMAPLANE_IOCTL_DMABUF_EXPORT - export an arena slice as a dma-buf.
 *
 * Errors: -ENOENT (no such arena), -EINVAL (unaligned or zero slice,
 * unknown flag, non-zero padding), -ERANGE (slice beyond the arena),
 * -EMFILE, -ENOMEM, -EFAULT.
 */
#define DMAPLANE_IOCTL_DMABUF_EXPORT \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_IOCTL_NR_BASE + 6, struct dmaplane_dmabuf_export)
/**
 * DMAPLANE_IOCTL_MR_IMPORT_DMABUF - register a foreign dma-buf slice.
 *
 * Errors: -EBADF (not an open fd), -EINVAL (fd is not a dma-buf, unaligned
 * or zero slice, unknown access bit or flag, non-zero padding), -ERANGE
 * (slice beyond the dma-buf), -ENOMEM, -EFAULT.
 */
#define DMAPLANE_IOCTL_MR_IMPORT_DMABUF \
	_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_IOCTL_NR_BASE + 7, struct dmaplane_mr_import_dmabuf)

#endif /* _UAPI_LINUX_DMAPLANE_H */

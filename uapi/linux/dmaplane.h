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
#define DMAPLANE_CAP_INFO	(1ULL << 0)

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

#endif /* _UAPI_LINUX_DMAPLANE_H */

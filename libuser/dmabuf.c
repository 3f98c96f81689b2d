// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdmaplane: dma-buf export of arena slices, import of foreign dma-bufs.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

int dp_dmabuf_export(struct dp_arena *arena, uint64_t offset, uint64_t len,
		     unsigned int flags)
{
	struct dmaplane_dmabuf_export args;
	int ret;

	if (!arena)
		return -EINVAL;
	memset(&args, 0, sizeof(args));
	args.handle = arena->handle;
	args.flags = flags;
	args.offset = offset;
	args.len = len;
	ret = dp_ioctl(arena->ep, DMAPLANE_IOCTL_DMABUF_EXPORT, &args);
	return ret ? ret : args.fd;
}

int dp_mr_import_dmabuf(struct dp_ep *ep, int fd, uint64_t offset,
			uint64_t len, unsigned int access, struct dp_mr **mrp)
{
	struct dmaplane_mr_import_dmabuf args;

	if (!ep || !mrp)
		return -EINVAL;
	memset(&args, 0, sizeof(args));
	args.fd = fd;
	args.access = access;
	args.offset = offset;
	args.len = len;
	return dp_mr_create(ep, DMAPLANE_IOCTL_MR_IMPORT_DMABUF, &args,
			    &args.handle, &args.lkey, &args.rkey, mrp);
}

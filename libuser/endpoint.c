// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdmaplane: endpoints.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"

int dp_open(const char *path, unsigned int flags, struct dp_ep **epp)
{
	struct dmaplane_info info;
	struct dp_ep *ep;
	int ret;

	if (flags || !epp)
		return -EINVAL;

	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -ENOMEM;

	ep->fd = open(path ? path : DP_DEFAULT_PATH, O_RDWR | O_CLOEXEC);
	if (ep->fd < 0) {
		ret = -errno;
		goto err_free;
	}

	ret = dp_info(ep, &info);
	if (ret)
		goto err_close;
	if (info.abi_version < DMAPLANE_ABI_VERSION) {
		ret = -EPROTO;
		goto err_close;
	}

	*epp = ep;
	return 0;

err_close:
	close(ep->fd);
err_free:
	free(ep);
	return ret;
}

void dp_close(struct dp_ep *ep)
{
	if (!ep)
		return;
	if (ep->ring)
		munmap(ep->ring, ep->ring_size);
	if (ep->head)
		munmap(ep->head, ep->head_size);
	close(ep->fd);
	free(ep);
}

int dp_fd(const struct dp_ep *ep)
{
	return ep->fd;
}

int dp_version_major(void)
{
	return DP_VERSION_MAJOR;
}

int dp_version_minor(void)
{
	return DP_VERSION_MINOR;
}

int dp_check_version(int major, int minor)
{
	return major == DP_VERSION_MAJOR && minor >= 0 &&
	       minor <= DP_VERSION_MINOR ? 0 : -ENOTSUP;
}

int dp_info(struct dp_ep *ep, struct dmaplane_info *info)
{
	memset(info, 0, sizeof(*info));
	return dp_ioctl(ep, DMAPLANE_IOCTL_GET_INFO, info);
}

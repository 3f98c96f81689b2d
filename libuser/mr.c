// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdmaplane: registered regions of user memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * Issue an ioctl that creates a region (@arg is its argument; @handle,
 * @lkey and @rkey point at its output fields) and wrap the result.
 */
int dp_mr_create(struct dp_ep *ep, unsigned long cmd, void *arg,
		 const __u32 *handle, const __u32 *lkey,
		 const __u64 *rkey, struct dp_mr **mrp)
{
	struct dp_mr *mr = malloc(sizeof(*mr));
	int ret;

	if (!mr)
		return -ENOMEM;
	ret = dp_ioctl(ep, cmd, arg);
	if (ret) {
		free(mr);
		return ret;
	}
	mr->ep = ep;
	mr->handle = *handle;
	mr->lkey = *lkey;
	mr->rkey = *rkey;
	*mrp = mr;
	return 0;
}

int dp_mr_reg(struct dp_ep *ep, void *addr, uint64_t len,
	      unsigned int access, struct dp_mr **mrp)
{
	struct dmaplane_mr_reg arg;

	if (!ep || !mrp)
		return -EINVAL;
	memset(&arg, 0, sizeof(arg));
	arg.addr = (uintptr_t)addr;
	arg.len = len;
	arg.access = access;
	return dp_mr_create(ep, DMAPLANE_IOCTL_MR_REG, &arg, &arg.handle,
			    &arg.lkey, &arg.rkey, mrp);
}

int dp_mr_dereg(struct dp_mr *mr)
{
	struct dmaplane_handle_arg arg;
	int ret;

	if (!mr)
		return -EINVAL;
	memset(&arg, 0, sizeof(arg));
	arg.handle = mr->handle;
	ret = dp_ioctl(mr->ep, DMAPLANE_IOCTL_MR_DEREG, &arg);
	free(mr);
	return ret;
}

uint64_t dp_mr_key(const struct dp_mr *mr)
{
	return mr->rkey;
}

uint32_t dp_mr_handle(const struct dp_mr *mr)
{
	return mr->handle;
}

int dp_mr_query(struct dp_mr *mr, struct dmaplane_mr_query *query)
{
	if (!mr || !query)
		return -EINVAL;
	memset(query, 0, sizeof(*query));
	query->handle = mr->handle;
	return dp_ioctl(mr->ep, DMAPLANE_IOCTL_MR_QUERY, query);
}

// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdmaplane: registered regions of user memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int dp_mr_reg(struct dp_ep *ep, void *addr, uint64_t len,
	      unsigned int access, struct dp_mr **mrp)
{
	struct dmaplane_mr_reg arg;
	struct dp_mr *mr;
	int ret;

	if (!ep || !mrp)
		return -EINVAL;
	mr = malloc(sizeof(*mr));
	if (!mr)
		return -ENOMEM;

	memset(&arg, 0, sizeof(arg));
	arg.addr = (uintptr_t)addr;
	arg.len = len;
	arg.access = access;
	ret = dp_ioctl(ep, DMAPLANE_IOCTL_MR_REG, &arg);
	if (ret) {
		free(mr);
		return ret;
	}
	mr->ep = ep;
	mr->handle = arg.handle;
	mr->lkey = arg.lkey;
	mr->rkey = arg.rkey;
	*mrp = mr;
	return 0;
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

int dp_mr_query(struct dp_mr *mr, struct dmaplane_mr_query *query)
{
	if (!mr || !query)
		return -EINVAL;
	memset(query, 0, sizeof(*query));
	query->handle = mr->handle;
	return dp_ioctl(mr->ep, DMAPLANE_IOCTL_MR_QUERY, query);
}

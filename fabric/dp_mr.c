// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdmaplane-fi: memory registration.
 *
 * A dmaplane region belongs to an endpoint and its remote key names it
 * only on that endpoint, so a domain with RMA runs in FI_MR_ENDPOINT
 * mode: fi_mr_reg() records the range, fi_mr_bind() names the endpoint,
 * fi_mr_enable() pins and registers it there (dp_mr_reg()) and makes the
 * region's key the MR's key (FI_MR_PROV_KEY).  RMA addresses are byte
 * offsets into the region (no FI_MR_VIRT_ADDR).  Local buffers need no
 * registration (no FI_MR_LOCAL): a domain without RMA hands out MRs that
 * only carry a descriptor nobody needs.
 */
#include <stdlib.h>
#include <string.h>

#include "dp_prov.h"

static unsigned int dpf_access(uint64_t access)
{
	unsigned int a = 0;

	if (access & (FI_RECV | FI_READ))
		a |= DMAPLANE_ACCESS_LOCAL_WRITE;
	if (access & FI_REMOTE_READ)
		a |= DMAPLANE_ACCESS_REMOTE_READ;
	if (access & FI_REMOTE_WRITE)
		a |= DMAPLANE_ACCESS_REMOTE_WRITE;
	return a;
}

static void mr_unlink(struct dpf_mr *mr)
{
	struct dpf_mr **pp;

	if (!mr->ep)
		return;
	for (pp = &mr->ep->mrs; *pp; pp = &(*pp)->ep_next) {
		if (*pp == mr) {
			*pp = mr->ep_next;
			break;
		}
	}
	mr->ep = NULL;
}

/* The endpoint is closing: its regions go with its kernel endpoint. */
void dpf_mr_ep_gone(struct dpf_mr *mr)
{
	if (mr->kmr) {
		dp_mr_dereg(mr->kmr);
		mr->kmr = NULL;
	}
	mr->mr.key = FI_KEY_NOTAVAIL;
	mr->ep = NULL;
}

int dpf_mr_enable(struct dpf_mr *mr)
{
	int ret;

	if (!mr->ep)
		return -FI_EINVAL;	/* FI_MR_ENDPOINT: bind first */
	if (mr->kmr)
		return 0;
	if (!mr->ep->kep)
		return -FI_EOPBADSTATE;
	ret = dp_mr_reg(mr->ep->kep, (void *)mr->buf, mr->len,
			dpf_access(mr->access), &mr->kmr);
	if (ret) {
		DPF_WARN(FI_LOG_MR, "dp_mr_reg(%p, %zu bytes): %s\n",
			 (void *)mr->buf, (size_t)mr->len, strerror(-ret));
		return ret;
	}
	mr->mr.key = dp_mr_key(mr->kmr);
	return 0;
}

static int dpf_mr_close(struct fid *fid)
{
	struct dpf_mr *mr = container_of(fid, struct dpf_mr, mr.fid);
	struct dpf_domain *dom = mr->dom;

	dpf_lock(dom);
	if (mr->kmr)
		dp_mr_dereg(mr->kmr);
	mr_unlink(mr);
	dom->refs--;
	dpf_unlock(dom);
	free(mr);
	return 0;
}

static int dpf_mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct dpf_mr *mr = container_of(fid, struct dpf_mr, mr.fid);
	struct dpf_ep *ep;

	if (flags)
		return -FI_EINVAL;
	if (!(mr->dom->mr_mode & FI_MR_ENDPOINT) || bfid->fclass != FI_CLASS_EP)
		return -FI_EINVAL;
	ep = container_of(bfid, struct dpf_ep, ep.fid);
	if (ep->dom != mr->dom)
		return -FI_EINVAL;
	dpf_lock(mr->dom);
	if (mr->ep || mr->kmr) {
		dpf_unlock(mr->dom);
		return -FI_EBUSY;
	}
	mr->ep = ep;
	mr->ep_next = ep->mrs;
	ep->mrs = mr;
	dpf_unlock(mr->dom);
	return 0;
}

static int dpf_mr_control(struct fid *fid, int command, void *arg)
{
	struct dpf_mr *mr = container_of(fid, struct dpf_mr, mr.fid);
	int ret;

	(void)arg;
	switch (command) {
	case FI_ENABLE:
		if (!(mr->dom->mr_mode & FI_MR_ENDPOINT))
			return 0;
		dpf_lock(mr->dom);
		ret = dpf_mr_enable(mr);
		dpf_unlock(mr->dom);
		return ret;
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops dpf_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dpf_mr_close,
	.bind = dpf_mr_bind,
	.control = dpf_mr_control,
	.ops_open = dpf_no_ops_open,
};

static int dpf_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
			  uint64_t flags, struct fid_mr **mrp)
{
	struct dpf_domain *dom = container_of(fid, struct dpf_domain, domain.fid);
	struct dpf_mr *mr;

	if (fid->fclass != FI_CLASS_DOMAIN)
		return -FI_EINVAL;
	if (flags || attr->iov_count > 1 || (attr->iov_count && !attr->mr_iov))
		return -FI_EINVAL;
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;	/* FI_HMEM: not in the ABI yet */
	if (attr->access & ~(FI_SEND | FI_RECV | FI_READ | FI_WRITE |
			     FI_REMOTE_READ | FI_REMOTE_WRITE))
		return -FI_EINVAL;
	if ((attr->access & (FI_REMOTE_READ | FI_REMOTE_WRITE)) &&
	    !(dom->mr_mode & FI_MR_ENDPOINT))
		return -FI_EINVAL;	/* no RMA in this domain */
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	if (attr->iov_count) {
		mr->buf = attr->mr_iov[0].iov_base;
		mr->len = attr->mr_iov[0].iov_len;
	}
	mr->access = attr->access;
	mr->dom = dom;
	mr->mr.fid.fclass = FI_CLASS_MR;
	mr->mr.fid.context = attr->context;
	mr->mr.fid.ops = &dpf_mr_fi_ops;
	mr->self = &mr->self;
	mr->mr.mem_desc = &mr->self;
	mr->mr.key = (dom->mr_mode & FI_MR_ENDPOINT) ? FI_KEY_NOTAVAIL : 0;
	dpf_lock(dom);
	dom->refs++;
	dpf_unlock(dom);
	*mrp = &mr->mr;
	return 0;
}

static int dpf_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		       uint64_t access, uint64_t offset, uint64_t requested_key,
		       uint64_t flags, struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key,
		.context = context,
	};

	return dpf_mr_regattr(fid, &attr, flags, mr);
}

static int dpf_mr_reg(struct fid *fid, const void *buf, size_t len,
		      uint64_t access, uint64_t offset, uint64_t requested_key,
		      uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return dpf_mr_regv(fid, &iov, 1, access, offset, requested_key, flags,
			   mr, context);
}

struct fi_ops_mr dpf_domain_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = dpf_mr_reg,
	.regv = dpf_mr_regv,
	.regattr = dpf_mr_regattr,
};

// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdmaplane-fi: the domain.  A domain holds no kernel object of its
 * own: dmaplane's regions and address handles belong to endpoints.
 */
#include <stdlib.h>
#include <string.h>

#include "dp_prov.h"

static int dpf_domain_close(struct fid *fid)
{
	struct dpf_domain *dom = container_of(fid, struct dpf_domain, domain.fid);

	if (dom->refs)
		return -FI_EBUSY;
	pthread_mutex_destroy(&dom->lock);
	__atomic_sub_fetch(&dom->fab->refs, 1, __ATOMIC_RELEASE);
	free(dom);
	return 0;
}

static struct fi_ops dpf_domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dpf_domain_close,
	.bind = dpf_no_bind,
	.control = dpf_no_control,
	.ops_open = dpf_no_ops_open,
};

static int dpf_no_sep(struct fid_domain *domain, struct fi_info *info,
		      struct fid_ep **sep, void *context)
{
	(void)domain; (void)info; (void)sep; (void)context;
	return -FI_ENOSYS;
}

static int dpf_no_stx(struct fid_domain *domain, struct fi_tx_attr *attr,
		      struct fid_stx **stx, void *context)
{
	(void)domain; (void)attr; (void)stx; (void)context;
	return -FI_ENOSYS;
}

static int dpf_no_srx(struct fid_domain *domain, struct fi_rx_attr *attr,
		      struct fid_ep **rx_ep, void *context)
{
	(void)domain; (void)attr; (void)rx_ep; (void)context;
	return -FI_ENOSYS;
}

static int dpf_no_query_atomic(struct fid_domain *domain,
			       enum fi_datatype datatype, enum fi_op op,
			       struct fi_atomic_attr *attr, uint64_t flags)
{
	(void)domain; (void)datatype; (void)op; (void)attr; (void)flags;
	return -FI_EOPNOTSUPP;
}

static int dpf_no_query_collective(struct fid_domain *domain,
				   enum fi_collective_op coll,
				   struct fi_collective_attr *attr, uint64_t flags)
{
	(void)domain; (void)coll; (void)attr; (void)flags;
	return -FI_EOPNOTSUPP;
}

static int dpf_endpoint2(struct fid_domain *domain, struct fi_info *info,
			 struct fid_ep **ep, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EINVAL;
	return dpf_ep_open(domain, info, ep, context);
}

static struct fi_ops_domain dpf_domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = dpf_av_open,
	.cq_open = dpf_cq_open,
	.endpoint = dpf_ep_open,
	.scalable_ep = dpf_no_sep,
	.cntr_open = dpf_cntr_open,
	.poll_open = dpf_poll_open,
	.stx_ctx = dpf_no_stx,
	.srx_ctx = dpf_no_srx,
	.query_atomic = dpf_no_query_atomic,
	.query_collective = dpf_no_query_collective,
	.endpoint2 = dpf_endpoint2,
};

/*
 * The 8-byte auth key of a domain attribute, 0 if none (a size without a
 * key is what fi_getinfo() reports: the key size the provider takes).
 */
static int dpf_auth_key(const uint8_t *key, size_t size, uint64_t *out)
{
	*out = 0;
	if (!size || !key)
		return 0;
	if (size != sizeof(uint64_t) || !key)
		return -FI_EINVAL;
	memcpy(out, key, sizeof(*out));
	return 0;
}

int dpf_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domp, void *context)
{
	struct dpf_fabric *fab = container_of(fabric, struct dpf_fabric, fabric);
	struct dpf_domain *dom;
	int ret;

	if (!info || !info->domain_attr)
		return -FI_EINVAL;
	if (info->domain_attr->name && strcmp(info->domain_attr->name, DPF_NAME))
		return -FI_EINVAL;
	if (info->caps & ~DPF_CAPS)
		return -FI_ENODATA;
	if (info->domain_attr->cq_data_size > sizeof(uint64_t))
		return -FI_ENODATA;
	dom = calloc(1, sizeof(*dom));
	if (!dom)
		return -FI_ENOMEM;
	ret = dpf_auth_key(info->domain_attr->auth_key,
			   info->domain_attr->auth_key_size, &dom->auth_key);
	if (ret) {
		free(dom);
		return ret;
	}
	pthread_mutex_init(&dom->lock, NULL);
	dom->fab = fab;
	dom->caps = info->caps;
	dom->mr_mode = info->domain_attr->mr_mode;
	dom->threading = info->domain_attr->threading;
	dom->domain.fid.fclass = FI_CLASS_DOMAIN;
	dom->domain.fid.context = context;
	dom->domain.fid.ops = &dpf_domain_fi_ops;
	dom->domain.ops = &dpf_domain_ops;
	dom->domain.mr = &dpf_domain_mr_ops;
	__atomic_add_fetch(&fab->refs, 1, __ATOMIC_RELAXED);
	*domp = &dom->domain;
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplane endpoints: allocation, identifiers, and the GET_INFO report.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cred.h>
#include <linux/err.h>
#include <linux/export.h>
#include <linux/mm.h>
#include <linux/sched/mm.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/xarray.h>

#include "dmaplane.h"

/*
 * Identifiers of the open endpoints.  The xarray's own spinlock protects
 * it; ids are handed out cyclically so a reopened endpoint gets a new one.
 */
static DEFINE_XARRAY_ALLOC1(dmaplane_ep_ids);
static u32 dmaplane_ep_next_id;	/* cursor of xa_alloc_cyclic(), under the xa lock */

/**
 * dmaplane_ep_create() - allocate an endpoint for the current task
 *
 * Return: the endpoint, or an ERR_PTR() (-ENOMEM, -EBUSY when every id is
 * in use).
 */
struct dmaplane_ep *dmaplane_ep_create(void)
{
	struct dmaplane_ep *ep;
	int ret;

	ep = kzalloc(sizeof(*ep), GFP_KERNEL);
	if (!ep)
		return ERR_PTR(-ENOMEM);

	ep->uid = current_euid();
	xa_init_flags(&ep->regions, XA_FLAGS_ALLOC1);
	/* KUnit calls this from a kernel thread, which has no mm. */
	ep->mm = current->mm;
	if (ep->mm)
		mmgrab(ep->mm);

	ret = xa_alloc_cyclic(&dmaplane_ep_ids, &ep->id, ep, xa_limit_31b,
			      &dmaplane_ep_next_id, GFP_KERNEL);
	if (ret < 0)
		goto err_free_ep;

	atomic_long_inc(&dmaplane_stats.endpoints);
	return ep;

err_free_ep:
	if (ep->mm)
		mmdrop(ep->mm);
	kfree(ep);
	return ERR_PTR(ret);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_ep_create);

/**
 * dmaplane_ep_destroy() - release an endpoint and everything it owns
 * @ep: endpoint from dmaplane_ep_create()
 */
void dmaplane_ep_destroy(struct dmaplane_ep *ep)
{
	xa_erase(&dmaplane_ep_ids, ep->id);
	dmaplane_ep_release_regions(ep);
	dmaplane_mr_cache_put(ep->mr_cache);
	xa_destroy(&ep->regions);
	if (ep->mm)
		mmdrop(ep->mm);
	kfree(ep);
	atomic_long_dec(&dmaplane_stats.endpoints);
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_ep_destroy);

/**
 * dmaplane_info_fill() - validate and answer a GET_INFO request
 * @ep: the asking endpoint
 * @info: the request as copied from user space; filled in on success
 *
 * Return: 0, or -EINVAL when a flag, the padding or a reserved field is
 * non-zero.
 */
int dmaplane_info_fill(const struct dmaplane_ep *ep, struct dmaplane_info *info)
{
	if (info->flags || info->pad ||
	    memchr_inv(info->reserved, 0, sizeof(info->reserved)))
		return -EINVAL;

	info->abi_version = DMAPLANE_ABI_VERSION;
	info->caps = DMAPLANE_CAP_INFO | DMAPLANE_CAP_MR;
	info->endpoint_id = ep->id;
	info->page_size = PAGE_SIZE;
	return 0;
}
EXPORT_SYMBOL_IF_DMAPLANE_KUNIT(dmaplane_info_fill);

/**
 * dmaplane_ep_exit() - module unload: every endpoint must be gone by now
 */
void dmaplane_ep_exit(void)
{
	WARN_ON(!xa_empty(&dmaplane_ep_ids));
	xa_destroy(&dmaplane_ep_ids);
}

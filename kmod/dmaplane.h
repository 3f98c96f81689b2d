/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dmaplane private definitions: structures shared between the files of
 * the module and their prototypes, grouped by the file that defines them.
 */
#ifndef _DMAPLANE_H
#define _DMAPLANE_H

#include <linux/atomic.h>
#include <linux/fs.h>
#include <linux/types.h>
#include <linux/xarray.h>

#include <uapi/linux/dmaplane.h>

#define DMAPLANE_DRV_NAME	"dmaplane"

/*
 * Internal functions that only the KUnit module calls are exported to it
 * in a private namespace, as EXPORT_SYMBOL_IF_KUNIT() does upstream from
 * 6.2 on.  Kernels without KUnit export nothing.
 */
#if IS_ENABLED(CONFIG_KUNIT)
#define DMAPLANE_EXPORT_FOR_KUNIT(sym) EXPORT_SYMBOL_NS_GPL(sym, DMAPLANE_KUNIT)
#else
#define DMAPLANE_EXPORT_FOR_KUNIT(sym)
#endif

/**
 * struct dmaplane_stats - module-wide object counters
 * @endpoints: endpoints currently open
 *
 * Every object the module creates is counted here and uncounted when it is
 * freed, so tests can prove that nothing outlives its owner.
 */
struct dmaplane_stats {
	atomic_long_t endpoints;
};

/**
 * struct dmaplane_ep - an endpoint: one open of /dev/dmaplane
 * @id: identifier, unique among open endpoints, allocated cyclically from
 *	dmaplane_ep_ids so that a closed endpoint's id is not reused at once
 * @uid: effective uid of the opener
 */
struct dmaplane_ep {
	u32 id;
	kuid_t uid;
};

/* main.c */
extern struct dmaplane_stats dmaplane_stats;

/* endpoint.c */
struct dmaplane_ep *dmaplane_ep_create(void);
void dmaplane_ep_destroy(struct dmaplane_ep *ep);
int dmaplane_info_fill(const struct dmaplane_ep *ep, struct dmaplane_info *info);
void dmaplane_ep_exit(void);

#endif /* _DMAPLANE_H */

// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdmaplane-fi: address vectors.
 *
 * An address is a struct dmaplane_name (node id + endpoint uid).  The AV
 * keeps the names; fi_addr_t is the slot index, for FI_AV_MAP as well as
 * FI_AV_TABLE (a map's values are the provider's to choose).  Slots are
 * never reused, so a removed address stays invalid.  The kernel's address
 * handles are per endpoint: every endpoint bound to the AV turns each name
 * into its own handle (dpf_ep_av_insert()); an insertion that an enabled
 * endpoint refuses (closed endpoint, other security domain, unreachable
 * node) fails for that address with FI_ADDR_NOTAVAIL.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dp_prov.h"

bool dpf_av_valid(const struct dpf_av *av, fi_addr_t addr)
{
	return addr < av->count && av->used[addr];
}

static int av_grow(struct dpf_av *av, size_t need)
{
	struct dmaplane_name *names;
	size_t cap = av->cap ? av->cap : 64;
	bool *used;

	if (need <= av->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	names = realloc(av->names, cap * sizeof(*names));
	if (!names)
		return -FI_ENOMEM;
	av->names = names;
	used = realloc(av->used, cap * sizeof(*used));
	if (!used)
		return -FI_ENOMEM;
	memset(used + av->cap, 0, (cap - av->cap) * sizeof(*used));
	av->used = used;
	av->cap = cap;
	return 0;
}

/* Resolve slot @i on every enabled endpoint; undo on the first refusal. */
static int av_resolve(struct dpf_av *av, size_t i)
{
	int k, ret;

	for (k = 0; k < av->neps; k++) {
		if (!av->eps[k]->enabled)
			continue;
		ret = dpf_ep_av_insert(av->eps[k], i);
		if (ret) {
			while (k--)
				dpf_ep_av_remove(av->eps[k], i);
			return ret;
		}
	}
	return 0;
}

static int dpf_av_insert(struct fid_av *fav, const void *addr, size_t count,
			 fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct dpf_av *av = container_of(fav, struct dpf_av, av);
	const struct dmaplane_name *names = addr;
	int *sync_err = context;
	int done = 0, ret;
	size_t n, i;

	if (flags & ~(FI_MORE | FI_SYNC_ERR))
		return -FI_EINVAL;
	if ((flags & FI_SYNC_ERR) && !context)
		return -FI_EINVAL;
	if (count && !addr)
		return -FI_EINVAL;
	if (av->type == FI_AV_MAP && count && !fi_addr)
		return -FI_EINVAL;

	dpf_lock(av->dom);
	ret = av_grow(av, av->count + count);
	if (ret) {
		dpf_unlock(av->dom);
		return ret;
	}
	for (n = 0; n < count; n++) {
		i = av->count++;
		av->names[i] = names[n];
		av->used[i] = true;
		ret = av_resolve(av, i);
		if (ret) {
			av->used[i] = false;
			DPF_WARN(FI_LOG_AV, "address %zu (node %016" PRIx64 ", endpoint %" PRIu64
				 ") refused: %s\n", n, (uint64_t)names[n].node_id,
				 (uint64_t)names[n].ep_uid, fi_strerror(-ret));
		} else {
			done++;
		}
		if (fi_addr)
			fi_addr[n] = ret ? FI_ADDR_NOTAVAIL : i;
		if (flags & FI_SYNC_ERR)
			sync_err[n] = -ret;
	}
	dpf_unlock(av->dom);
	return done;
}

static int dpf_av_insertsvc(struct fid_av *av, const char *node,
			    const char *service, fi_addr_t *fi_addr,
			    uint64_t flags, void *context)
{
	(void)av; (void)node; (void)service; (void)fi_addr; (void)flags;
	(void)context;
	return -FI_ENOSYS;	/* names are not host:service pairs */
}

static int dpf_av_insertsym(struct fid_av *av, const char *node,
			    size_t nodecnt, const char *service, size_t svccnt,
			    fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	(void)av; (void)node; (void)nodecnt; (void)service; (void)svccnt;
	(void)fi_addr; (void)flags; (void)context;
	return -FI_ENOSYS;
}

static int dpf_av_remove(struct fid_av *fav, fi_addr_t *fi_addr, size_t count,
			 uint64_t flags)
{
	struct dpf_av *av = container_of(fav, struct dpf_av, av);
	int k, ret = 0;
	size_t n;

	if (flags)
		return -FI_EINVAL;
	dpf_lock(av->dom);
	for (n = 0; n < count; n++) {
		if (!dpf_av_valid(av, fi_addr[n])) {
			ret = -FI_EINVAL;
			continue;
		}
		for (k = 0; k < av->neps; k++)
			dpf_ep_av_remove(av->eps[k], fi_addr[n]);
		av->used[fi_addr[n]] = false;
	}
	dpf_unlock(av->dom);
	return ret;
}

static int dpf_av_lookup(struct fid_av *fav, fi_addr_t fi_addr, void *addr,
			 size_t *addrlen)
{
	struct dpf_av *av = container_of(fav, struct dpf_av, av);
	size_t len = *addrlen;

	dpf_lock(av->dom);
	if (!dpf_av_valid(av, fi_addr)) {
		dpf_unlock(av->dom);
		return -FI_EINVAL;
	}
	memcpy(addr, &av->names[fi_addr], len < DPF_ADDRLEN ? len : DPF_ADDRLEN);
	dpf_unlock(av->dom);
	*addrlen = DPF_ADDRLEN;
	return 0;
}

static const char *dpf_av_straddr(struct fid_av *av, const void *addr,
				  char *buf, size_t *len)
{
	const struct dmaplane_name *name = addr;
	char str[64];
	int n;

	(void)av;
	n = snprintf(str, sizeof(str), "fi_addr_dmaplane://%016" PRIx64 ":%" PRIu64,
		     (uint64_t)name->node_id, (uint64_t)name->ep_uid);
	if (*len) {
		strncpy(buf, str, *len - 1);
		buf[*len - 1] = '\0';
	}
	*len = n + 1;
	return buf;
}

static int dpf_no_av_set(struct fid_av *av, struct fi_av_set_attr *attr,
			 struct fid_av_set **av_set, void *context)
{
	(void)av; (void)attr; (void)av_set; (void)context;
	return -FI_ENOSYS;
}

static struct fi_ops_av dpf_av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = dpf_av_insert,
	.insertsvc = dpf_av_insertsvc,
	.insertsym = dpf_av_insertsym,
	.remove = dpf_av_remove,
	.lookup = dpf_av_lookup,
	.straddr = dpf_av_straddr,
	.av_set = dpf_no_av_set,
};

int dpf_av_bind_ep(struct dpf_av *av, struct dpf_ep *ep)
{
	if (av->neps == DPF_AV_MAX_EPS)
		return -FI_ENOSPC;
	av->eps[av->neps++] = ep;
	return 0;
}

void dpf_av_unbind_ep(struct dpf_av *av, struct dpf_ep *ep)
{
	int k;

	for (k = 0; k < av->neps; k++) {
		if (av->eps[k] == ep) {
			av->eps[k] = av->eps[--av->neps];
			return;
		}
	}
}

static int dpf_av_close(struct fid *fid)
{
	struct dpf_av *av = container_of(fid, struct dpf_av, av.fid);
	struct dpf_domain *dom = av->dom;

	dpf_lock(dom);
	if (av->neps) {
		dpf_unlock(dom);
		return -FI_EBUSY;
	}
	dom->refs--;
	dpf_unlock(dom);
	free(av->names);
	free(av->used);
	free(av);
	return 0;
}

static int dpf_av_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid; (void)bfid; (void)flags;
	return -FI_ENOSYS;	/* insertion is synchronous: no EQ */
}

static struct fi_ops dpf_av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dpf_av_close,
	.bind = dpf_av_bind,
	.control = dpf_no_control,
	.ops_open = dpf_no_ops_open,
};

int dpf_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		struct fid_av **avp, void *context)
{
	struct dpf_domain *dom = container_of(domain, struct dpf_domain, domain);
	struct dpf_av *av;

	if (attr->flags & (FI_EVENT | FI_SYMMETRIC))
		return -FI_ENOSYS;
	if (attr->flags & ~(FI_READ))
		return -FI_EINVAL;
	if (attr->name || attr->rx_ctx_bits)
		return -FI_ENOSYS;	/* no shared or scalable AVs */
	switch (attr->type) {
	case FI_AV_UNSPEC:
	case FI_AV_MAP:
	case FI_AV_TABLE:
		break;
	default:
		return -FI_EINVAL;
	}
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->type = attr->type == FI_AV_UNSPEC ? FI_AV_TABLE : attr->type;
	attr->type = av->type;
	if (av_grow(av, attr->count ? attr->count : 64)) {
		free(av->names);
		free(av->used);
		free(av);
		return -FI_ENOMEM;
	}
	av->dom = dom;
	av->av.fid.fclass = FI_CLASS_AV;
	av->av.fid.context = context;
	av->av.fid.ops = &dpf_av_fi_ops;
	av->av.ops = &dpf_av_ops;
	dpf_lock(dom);
	dom->refs++;
	dpf_unlock(dom);
	*avp = &av->av;
	return 0;
}

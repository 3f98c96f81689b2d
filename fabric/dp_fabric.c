// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdmaplane-fi: provider entry point, fi_getinfo() and the fabric.
 *
 * fi_getinfo() answers with one fi_info when /dev/dmaplane is there and
 * the hints ask for nothing dmaplane cannot do; otherwise -FI_ENODATA.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "dp_prov.h"

static void dpf_cleanup(void)
{
}

static int dpf_fabric_open(struct fi_fabric_attr *attr,
			   struct fid_fabric **fabric, void *context);

struct fi_provider dpf_prov = {
	.name = DPF_NAME,
	.version = DPF_PROV_VERSION,
	.fi_version = DPF_FI_VERSION,
	.getinfo = dpf_getinfo,
	.fabric = dpf_fabric_open,
	.cleanup = dpf_cleanup,
};

/* libfabric's errors are positive errnos; the library returns -errno. */
int dpf_errno(int err)
{
	if (err >= 0)
		return err;
	switch (-err) {
	case EMSGSIZE:
		return -FI_ETRUNC;
	case ECONNREFUSED:
	case ENETUNREACH:
		return -FI_EADDRNOTAVAIL;
	default:
		return err;	/* FI_E* equal the errno values */
	}
}

int dpf_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	(void)fid; (void)bfid; (void)flags;
	return -FI_ENOSYS;
}

int dpf_no_control(struct fid *fid, int command, void *arg)
{
	(void)fid; (void)command; (void)arg;
	return -FI_ENOSYS;
}

int dpf_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		    void **ops, void *context)
{
	(void)fid; (void)name; (void)flags; (void)ops; (void)context;
	return -FI_ENOSYS;
}

/* ---- fi_getinfo ------------------------------------------------------ */

/*
 * Is the module there and does it do messaging (and RMA)?  @node gets
 * this node's address: its node_id with ep_uid 0, since the kernel gives
 * an endpoint its uid only when it is opened (fi_getname() tells it).
 */
static int dpf_probe_device_now(uint64_t *caps, struct dmaplane_name *node)
{
	struct dmaplane_info di;
	struct dp_ep *ep;
	int ret;

	ret = dp_open(NULL, 0, &ep);
	if (ret) {
		DPF_INFO(FI_LOG_CORE, "no dmaplane device: %s\n", strerror(-ret));
		return -FI_ENODATA;
	}
	ret = dp_info(ep, &di);
	if (!ret)
		ret = dp_getname(ep, node);
	dp_close(ep);
	if (ret)
		return -FI_ENODATA;
	node->ep_uid = 0;
	if (!(di.caps & DMAPLANE_CAP_MSG)) {
		DPF_INFO(FI_LOG_CORE, "module lacks DMAPLANE_CAP_MSG\n");
		return -FI_ENODATA;
	}
	*caps = DPF_CAPS;
	if (!(di.caps & DMAPLANE_CAP_RMA) || !(di.caps & DMAPLANE_CAP_MR))
		*caps &= ~DPF_RMA_CAPS;
	if (!(di.caps & DMAPLANE_CAP_REMOTE))
		*caps &= ~FI_REMOTE_COMM;
	if (!(di.caps & DMAPLANE_CAP_CQ_DATA))
		*caps &= ~FI_REMOTE_CQ_DATA;
	if (!(di.caps & DMAPLANE_CAP_SRC_AV))
		*caps &= ~FI_SOURCE;
	return 0;
}

/*
 * The last probe's answer.  fi_getinfo() comes here once per call and
 * once more per utility provider layered over this one (fabtests'
 * fi_getinfo_test makes some 2,000 calls), and each probe opens an
 * endpoint of the module.  The answer stands while /dev/dmaplane is the
 * same device node: loading the module anew makes a new node (and a new
 * node name), unloading it removes the node.
 */
static struct {
	pthread_mutex_t lock;	/* protects the fields below */
	bool valid;
	struct stat st;		/* of /dev/dmaplane at the probe */
	uint64_t caps;
	struct dmaplane_name node;
} dpf_probe = { .lock = PTHREAD_MUTEX_INITIALIZER };

static bool same_node(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_rdev == b->st_rdev &&
	       a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	       a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

static int dpf_probe_device(uint64_t *caps, struct dmaplane_name *node)
{
	struct stat st;
	int ret;

	if (stat(DP_DEFAULT_PATH, &st)) {
		DPF_INFO(FI_LOG_CORE, "no dmaplane device: %s\n", strerror(errno));
		return -FI_ENODATA;
	}
	pthread_mutex_lock(&dpf_probe.lock);
	ret = 0;
	if (!dpf_probe.valid || !same_node(&st, &dpf_probe.st)) {
		/* A failure (no access, no file descriptor left) is not kept. */
		ret = dpf_probe_device_now(&dpf_probe.caps, &dpf_probe.node);
		dpf_probe.st = st;
		dpf_probe.valid = !ret;
	}
	*caps = dpf_probe.caps;
	*node = dpf_probe.node;
	pthread_mutex_unlock(&dpf_probe.lock);
	return ret;
}

/* Refuse hints: -FI_ENODATA, and why at FI_LOG_LEVEL=info. */
static int nodata(const char *why)
{
	DPF_INFO(FI_LOG_CORE, "hints: %s\n", why);
	return -FI_ENODATA;
}

static int check_tx_attr(const struct fi_tx_attr *p, const struct fi_tx_attr *h)
{
	if (h->caps & ~p->caps)
		return nodata("tx caps");
	if (h->msg_order & ~p->msg_order)
		return nodata("tx msg_order");
	if (h->comp_order & ~p->comp_order)
		return nodata("tx comp_order");
	if (h->inject_size > p->inject_size)
		return nodata("inject_size");
	if (h->size > DPF_MAX_CTX_SIZE)
		return nodata("tx size");
	if (h->iov_limit > p->iov_limit)
		return nodata("tx iov_limit");
	if (h->rma_iov_limit > p->rma_iov_limit)
		return nodata("rma_iov_limit");
	return 0;
}

static int check_rx_attr(const struct fi_rx_attr *p, const struct fi_rx_attr *h)
{
	if (h->caps & ~p->caps)
		return nodata("rx caps");
	if (h->msg_order & ~p->msg_order)
		return nodata("rx msg_order");
	if (h->comp_order & ~p->comp_order)
		return nodata("rx comp_order");
	if (h->total_buffered_recv > p->total_buffered_recv)
		return nodata("total_buffered_recv");
	if (h->size > DPF_MAX_CTX_SIZE)
		return nodata("rx size");
	if (h->iov_limit > p->iov_limit)
		return nodata("rx iov_limit");
	return 0;
}

/*
 * dpf_check_info - can @prov (the provider's answer, caps already chosen)
 * satisfy @hints?  Used by fi_getinfo() and again by fi_domain() and
 * fi_endpoint() on the info the application passes back.
 */
int dpf_check_info(const struct fi_info *prov, const struct fi_info *hints)
{
	int ret;

	if (hints->caps & ~prov->caps)
		return nodata("caps");
	if (hints->addr_format != FI_FORMAT_UNSPEC &&
	    hints->addr_format != prov->addr_format)
		return nodata("addr_format");
	if (hints->ep_attr) {
		const struct fi_ep_attr *h = hints->ep_attr;

		if (h->type != FI_EP_UNSPEC && h->type != FI_EP_RDM)
			return nodata("ep type (FI_EP_RDM only)");
		if (h->protocol != FI_PROTO_UNSPEC &&
		    h->protocol != prov->ep_attr->protocol)
			return nodata("protocol");
		if (h->max_msg_size > prov->ep_attr->max_msg_size)
			return nodata("max_msg_size");
		if (h->mem_tag_format & ~prov->ep_attr->mem_tag_format)
			return nodata("mem_tag_format");
		if (h->tx_ctx_cnt > 1 && h->tx_ctx_cnt != FI_SHARED_CONTEXT)
			return nodata("tx_ctx_cnt");
		if (h->tx_ctx_cnt == FI_SHARED_CONTEXT ||
		    h->rx_ctx_cnt == FI_SHARED_CONTEXT)
			return nodata("shared contexts");
		if (h->rx_ctx_cnt > 1)
			return nodata("rx_ctx_cnt");
		if (h->auth_key_size &&
		    h->auth_key_size != sizeof(uint64_t))
			return nodata("auth_key_size (8 bytes)");
	}
	if (hints->domain_attr) {
		const struct fi_domain_attr *h = hints->domain_attr;
		const struct fi_domain_attr *p = prov->domain_attr;

		if (h->name && strcmp(h->name, p->name))
			return nodata("domain name");
		if (h->cq_data_size > p->cq_data_size)
			return nodata("cq_data_size (8 bytes, with FI_REMOTE_CQ_DATA)");
		if (h->caps & ~p->caps)
			return nodata("domain caps");
		if (h->av_type != FI_AV_UNSPEC && h->av_type != FI_AV_MAP &&
		    h->av_type != FI_AV_TABLE)
			return nodata("av_type");
		if (h->auth_key_size &&
		    h->auth_key_size != sizeof(uint64_t))
			return nodata("domain auth_key_size (8 bytes)");
		if (h->tx_ctx_cnt > p->tx_ctx_cnt ||
		    h->rx_ctx_cnt > p->rx_ctx_cnt)
			return nodata("domain contexts");
		if (h->max_ep_tx_ctx > 1 || h->max_ep_rx_ctx > 1 ||
		    h->max_ep_stx_ctx || h->max_ep_srx_ctx)
			return nodata("shared or scalable contexts");
	}
	if (hints->fabric_attr && hints->fabric_attr->name &&
	    strcmp(hints->fabric_attr->name, prov->fabric_attr->name))
		return nodata("fabric name");
	if (hints->fabric_attr && hints->fabric_attr->prov_name &&
	    strcasecmp(hints->fabric_attr->prov_name, DPF_NAME))
		return nodata("prov_name");
	if (hints->tx_attr) {
		ret = check_tx_attr(prov->tx_attr, hints->tx_attr);
		if (ret)
			return ret;
	}
	if (hints->rx_attr) {
		ret = check_rx_attr(prov->rx_attr, hints->rx_attr);
		if (ret)
			return ret;
	}
	return 0;
}

/*
 * The MR mode an application gets: RMA needs provider keys and regions
 * bound to endpoints (a dmaplane region belongs to one endpoint); without
 * RMA no mode bit is needed.  Returns -FI_ENODATA when the application
 * cannot take what RMA needs.
 */
static int choose_mr_mode(uint32_t version, const struct fi_info *hints,
			  uint64_t caps, uint64_t *mr_mode)
{
	uint64_t hm;

	*mr_mode = 0;
	if (!(caps & DPF_RMA_CAPS))
		return 0;
	if (!hints || !hints->domain_attr)
		hm = FI_VERSION_GE(version, FI_VERSION(1, 5)) ? DPF_MR_MODE : 0;
	else
		hm = hints->domain_attr->mr_mode;
	if (hm == FI_MR_BASIC || hm == FI_MR_SCALABLE ||
	    (hm & DPF_MR_MODE) != DPF_MR_MODE)
		return -FI_ENODATA;
	*mr_mode = DPF_MR_MODE;
	return 0;
}

static struct fi_info *dpf_alloc_info(uint64_t caps, uint64_t mr_mode)
{
	struct fi_info *fi = fi_allocinfo();

	if (!fi)
		return NULL;
	fi->caps = caps;
	fi->mode = 0;
	fi->addr_format = FI_FORMAT_UNSPEC;

	fi->tx_attr->caps = caps & DPF_TX_CAPS;
	fi->tx_attr->msg_order = DPF_MSG_ORDER;
	fi->tx_attr->comp_order = FI_ORDER_NONE;
	fi->tx_attr->inject_size = DPF_INJECT_SIZE;
	fi->tx_attr->size = DPF_DEF_CTX_SIZE;
	fi->tx_attr->iov_limit = DPF_IOV_LIMIT;
	fi->tx_attr->rma_iov_limit = (caps & FI_RMA) ? 1 : 0;

	fi->rx_attr->caps = caps & DPF_RX_CAPS;
	fi->rx_attr->msg_order = DPF_MSG_ORDER;
	fi->rx_attr->comp_order = FI_ORDER_NONE;
	fi->rx_attr->total_buffered_recv = 0;
	fi->rx_attr->size = DPF_DEF_CTX_SIZE;
	fi->rx_attr->iov_limit = DPF_IOV_LIMIT;

	fi->ep_attr->type = FI_EP_RDM;
	fi->ep_attr->protocol = FI_PROTO_UNSPEC;
	fi->ep_attr->protocol_version = DMAPLANE_ABI_VERSION;
	fi->ep_attr->max_msg_size = SSIZE_MAX;
	fi->ep_attr->msg_prefix_size = 0;
	fi->ep_attr->max_order_raw_size = 0;
	fi->ep_attr->max_order_war_size = 0;
	fi->ep_attr->max_order_waw_size = 0;
	fi->ep_attr->mem_tag_format = ((caps & FI_MSG) && (caps & FI_TAGGED)) ?
				      ~DPF_MSG_TAG_BIT : ~0ULL;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;

	fi->domain_attr->name = strdup(DPF_NAME);
	fi->domain_attr->threading = FI_THREAD_SAFE;
	fi->domain_attr->control_progress = FI_PROGRESS_AUTO;
	fi->domain_attr->data_progress = FI_PROGRESS_AUTO;
	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->av_type = FI_AV_UNSPEC;
	fi->domain_attr->mr_mode = mr_mode;
	fi->domain_attr->mr_key_size = sizeof(uint64_t);
	/* Sends carry 8 bytes (DMAPLANE_OP_F_DATA); see dpf_cqe_data(). */
	fi->domain_attr->cq_data_size = caps & FI_REMOTE_CQ_DATA ? sizeof(uint64_t) : 0;
	fi->domain_attr->cq_cnt = 1024;
	fi->domain_attr->ep_cnt = 1024;
	fi->domain_attr->tx_ctx_cnt = 1024;
	fi->domain_attr->rx_ctx_cnt = 1024;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->max_ep_stx_ctx = 0;
	fi->domain_attr->max_ep_srx_ctx = 0;
	fi->domain_attr->cntr_cnt = 1024;
	fi->domain_attr->mr_iov_limit = 1;
	fi->domain_attr->caps = caps & DPF_DOM_CAPS;
	fi->domain_attr->mode = 0;
	fi->domain_attr->auth_key_size = sizeof(uint64_t);
	fi->domain_attr->max_err_data = 0;
	fi->domain_attr->mr_cnt = 65536;

	fi->fabric_attr->name = strdup(DPF_NAME);
	fi->fabric_attr->prov_version = DPF_PROV_VERSION;
	fi->fabric_attr->api_version = DPF_FI_VERSION;

	if (!fi->domain_attr->name || !fi->fabric_attr->name) {
		fi_freeinfo(fi);
		return NULL;
	}
	return fi;
}

/* Take what the application asked for where it is within our limits. */
static void apply_hints(struct fi_info *fi, const struct fi_info *hints)
{
	if (hints->tx_attr) {
		if (hints->tx_attr->size)
			fi->tx_attr->size = hints->tx_attr->size;
		fi->tx_attr->op_flags = hints->tx_attr->op_flags;
		if (hints->tx_attr->msg_order)
			fi->tx_attr->msg_order = hints->tx_attr->msg_order;
	}
	if (hints->rx_attr) {
		if (hints->rx_attr->size)
			fi->rx_attr->size = hints->rx_attr->size;
		fi->rx_attr->op_flags = hints->rx_attr->op_flags;
		if (hints->rx_attr->msg_order)
			fi->rx_attr->msg_order = hints->rx_attr->msg_order;
	}
	if (hints->domain_attr) {
		const struct fi_domain_attr *h = hints->domain_attr;

		if (h->threading != FI_THREAD_UNSPEC)
			fi->domain_attr->threading = h->threading;
		if (h->control_progress != FI_PROGRESS_UNSPEC)
			fi->domain_attr->control_progress = h->control_progress;
		if (h->data_progress != FI_PROGRESS_UNSPEC)
			fi->domain_attr->data_progress = h->data_progress;
		if (h->resource_mgmt != FI_RM_UNSPEC)
			fi->domain_attr->resource_mgmt = h->resource_mgmt;
		if (h->av_type != FI_AV_UNSPEC)
			fi->domain_attr->av_type = h->av_type;
	}
	if (hints->ep_attr && hints->ep_attr->mem_tag_format)
		fi->ep_attr->mem_tag_format = hints->ep_attr->mem_tag_format;
}

/*
 * dpf_getinfo_caps - fi_getinfo()'s answer for a module that offers
 * @dev_caps (provider capability bits); separate from the device probe so
 * that the host tests can check the filtering without a module.
 */
int dpf_getinfo_caps(uint32_t version, const struct fi_info *hints,
		     uint64_t dev_caps, const struct dmaplane_name *node,
		     struct fi_info **info)
{
	uint64_t caps, mr_mode;
	struct fi_info *fi;
	int ret;

	*info = NULL;
	caps = dev_caps;
	if (hints && hints->caps) {
		if (hints->caps & ~dev_caps)
			return nodata("caps (no FI_HMEM, FI_ATOMIC, FI_RMA_EVENT ... yet)");
		caps = hints->caps | (dev_caps & DPF_DOM_CAPS);
	}
	ret = choose_mr_mode(version, hints, caps, &mr_mode);
	if (ret) {
		if (hints && (hints->caps & DPF_RMA_CAPS))
			return nodata("mr_mode: RMA needs FI_MR_PROV_KEY | FI_MR_ENDPOINT");
		caps &= ~DPF_RMA_CAPS;	/* RMA was only on offer */
	}

	fi = dpf_alloc_info(caps, mr_mode);
	if (!fi)
		return -FI_ENOMEM;
	/* CQ data is the module's, whether or not the hints named the cap. */
	fi->domain_attr->cq_data_size = dev_caps & FI_REMOTE_CQ_DATA ? sizeof(uint64_t) : 0;
	if (hints) {
		ret = dpf_check_info(fi, hints);
		if (ret) {
			fi_freeinfo(fi);
			return ret;
		}
		apply_hints(fi, hints);
	}
	if (node) {
		fi->src_addr = malloc(DPF_ADDRLEN);
		if (!fi->src_addr) {
			fi_freeinfo(fi);
			return -FI_ENOMEM;
		}
		memcpy(fi->src_addr, node, DPF_ADDRLEN);
		fi->src_addrlen = DPF_ADDRLEN;
	}
	*info = fi;
	return 0;
}

int dpf_getinfo(uint32_t version, const char *node, const char *service,
		uint64_t flags, const struct fi_info *hints,
		struct fi_info **info)
{
	struct dmaplane_name self;
	uint64_t dev_caps;
	int ret;

	/*
	 * node and service are names of other fabrics (fabtests pass a TCP
	 * port for their out-of-band exchange): dmaplane addresses are
	 * endpoint names, exchanged by the application, so they are not
	 * resolved here.
	 */
	(void)node; (void)service; (void)flags;
	*info = NULL;
	ret = dpf_probe_device(&dev_caps, &self);
	if (ret)
		return ret;
	return dpf_getinfo_caps(version, hints, dev_caps, &self, info);
}

/* ---- fabric ------------------------------------------------------------ */

static int dpf_fabric_close(struct fid *fid)
{
	struct dpf_fabric *fab = container_of(fid, struct dpf_fabric, fabric.fid);

	if (__atomic_load_n(&fab->refs, __ATOMIC_ACQUIRE))
		return -FI_EBUSY;
	free(fab);
	return 0;
}

static struct fi_ops dpf_fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dpf_fabric_close,
	.bind = dpf_no_bind,
	.control = dpf_no_control,
	.ops_open = dpf_no_ops_open,
};

static int dpf_no_pep(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_pep **pep, void *context)
{
	(void)fabric; (void)info; (void)pep; (void)context;
	return -FI_ENOSYS;	/* FI_EP_RDM only: no passive endpoints */
}

static int dpf_no_wait_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
			    struct fid_wait **waitset)
{
	(void)fabric; (void)attr; (void)waitset;
	return -FI_ENOSYS;
}

static int dpf_domain2(struct fid_fabric *fabric, struct fi_info *info,
		       struct fid_domain **dom, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EINVAL;
	return dpf_domain_open(fabric, info, dom, context);
}

static struct fi_ops_fabric dpf_fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = dpf_domain_open,
	.passive_ep = dpf_no_pep,
	.eq_open = dpf_eq_open,
	.wait_open = dpf_no_wait_open,
	.trywait = dpf_trywait,
	.domain2 = dpf_domain2,
};

static int dpf_fabric_open(struct fi_fabric_attr *attr,
			   struct fid_fabric **fabric, void *context)
{
	struct dpf_fabric *fab;

	if (attr->name && strcmp(attr->name, DPF_NAME))
		return -FI_EINVAL;
	fab = calloc(1, sizeof(*fab));
	if (!fab)
		return -FI_ENOMEM;
	fab->fabric.fid.fclass = FI_CLASS_FABRIC;
	fab->fabric.fid.context = context;
	fab->fabric.fid.ops = &dpf_fabric_fi_ops;
	fab->fabric.ops = &dpf_fabric_ops;
	fab->fabric.api_version = attr->api_version;
	*fabric = &fab->fabric;
	return 0;
}

FI_EXT_INI
{
	return &dpf_prov;
}

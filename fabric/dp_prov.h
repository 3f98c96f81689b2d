/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * libdmaplane-fi: a libfabric provider over /dev/dmaplane.
 *
 * The provider is a translation layer: tag matching, unexpected messages
 * and data movement stay in the kernel.  An endpoint (FI_EP_RDM) is one
 * dmaplane endpoint, i.e. one open of /dev/dmaplane with its completion
 * ring.  The ring's entries carry a request pointer as their ctx; reading
 * a CQ or a counter drains the rings of the endpoints bound to it and
 * sorts each completion into the CQ and the counters its request names.
 *
 * Locking: one mutex per domain serialises everything below it (AVs,
 * CQs, counters, endpoints, MRs), which gives FI_THREAD_SAFE.  EQs belong
 * to the fabric and have their own lock.
 *
 * What fi_getinfo() does not offer, and why: fabric/README.md.
 */
#ifndef DP_PROV_H
#define DP_PROV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <dmaplane.h>

#define DPF_NAME		"dmaplane"
#define DPF_PROV_VERSION	FI_VERSION(0, 1)
#define DPF_FI_VERSION		FI_VERSION(1, 17)

/*
 * Bytes fi_inject()/fi_tinject() copy into the request: the kernel only
 * promises to be done with a send buffer at the send's completion, so the
 * provider keeps its own copy until then and hides the completion.
 */
#define DPF_INJECT_SIZE		1024
#define DPF_IOV_LIMIT		1024	/* the kernel's DMAPLANE_OP_F_IOV limit */
#define DPF_DEF_CTX_SIZE	512	/* tx and rx: the ring is their sum */
#define DPF_MAX_CTX_SIZE	(DMAPLANE_CQ_MAX_ENTRIES / 2)
#define DPF_DEF_CQ_SIZE		1024
#define DPF_MAX_CQ_SIZE		(1 << 20)
#define DPF_ADDRLEN		sizeof(struct dmaplane_name)
/* FI_OPT_MIN_MULTI_RECV until the application sets it */
#define DPF_DEF_MIN_MULTI_RECV	64

/*
 * With both FI_MSG and FI_TAGGED, untagged messages travel with the top
 * tag bit set and tagged ones with it clear, so that neither kind ever
 * matches a receive of the other; the tag format is then 63 bits.  With
 * only one of them, all 64 bits are the application's.
 */
#define DPF_MSG_TAG_BIT		(1ULL << 63)

#define DPF_TX_CAPS	(FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_READ | FI_WRITE)
/* FI_RMA on the receive side: the endpoint is the target of RMA. */
#define DPF_RX_CAPS	(FI_MSG | FI_TAGGED | FI_RMA | FI_RECV | FI_REMOTE_READ | \
			 FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_MULTI_RECV)
#define DPF_DOM_CAPS	(FI_LOCAL_COMM | FI_REMOTE_COMM)
/*
 * Remote CQ data of sends (DMAPLANE_CAP_CQ_DATA) and the sender as an AV
 * index (DMAPLANE_CAP_SRC_AV: the kernel names the receiver's own handle).
 */
#define DPF_DATA_CAPS	(FI_REMOTE_CQ_DATA | FI_SOURCE)
#define DPF_CAPS	(DPF_TX_CAPS | DPF_RX_CAPS | DPF_DOM_CAPS | DPF_DATA_CAPS)
#define DPF_RMA_CAPS	(FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | \
			 FI_REMOTE_WRITE)
#define DPF_MSG_ORDER	FI_ORDER_SAS
/* RMA targets are named by the key of a region of the target endpoint. */
#define DPF_MR_MODE	(FI_MR_PROV_KEY | FI_MR_ENDPOINT)

extern struct fi_provider dpf_prov;

#define DPF_WARN(subsys, ...)	FI_WARN(&dpf_prov, subsys, __VA_ARGS__)
#define DPF_INFO(subsys, ...)	FI_INFO(&dpf_prov, subsys, __VA_ARGS__)

/* container_of() comes with <rdma/fabric.h>. */

struct dpf_ep;
struct dpf_cq;
struct dpf_cntr;

/* ---- dp_fabric.c ------------------------------------------------------ */

struct dpf_fabric {
	struct fid_fabric fabric;
	int refs;		/* domains and EQs; atomic */
};

int dpf_getinfo(uint32_t version, const char *node, const char *service,
		uint64_t flags, const struct fi_info *hints,
		struct fi_info **info);
int dpf_getinfo_caps(uint32_t version, const struct fi_info *hints,
		     uint64_t dev_caps, const struct dmaplane_name *node,
		     struct fi_info **info);
int dpf_check_info(const struct fi_info *prov, const struct fi_info *hints);
int dpf_errno(int err);
int dpf_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int dpf_no_control(struct fid *fid, int command, void *arg);
int dpf_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		    void **ops, void *context);

/* ---- dp_eq.c ---------------------------------------------------------- */

int dpf_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		struct fid_eq **eqp, void *context);
int dpf_eq_trywait(struct fid *fid);

/* ---- dp_wait.c -------------------------------------------------------- */

int dpf_wait_control(int command, void *arg, enum fi_wait_obj wait_obj, int fd);
int64_t dpf_deadline(int timeout);
int dpf_time_left(int64_t deadline);

/* ---- dp_domain.c ------------------------------------------------------ */

struct dpf_domain {
	struct fid_domain domain;
	struct dpf_fabric *fab;
	pthread_mutex_t lock;
	int refs;			/* AVs, CQs, counters, EPs, MRs */
	uint64_t caps;
	uint64_t mr_mode;
	uint64_t auth_key;		/* 0: the uid is the security domain */
	enum fi_threading threading;
};

int dpf_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **dom, void *context);

static inline void dpf_lock(struct dpf_domain *dom)
{
	pthread_mutex_lock(&dom->lock);
}

static inline void dpf_unlock(struct dpf_domain *dom)
{
	pthread_mutex_unlock(&dom->lock);
}

/* ---- dp_av.c ---------------------------------------------------------- */

#define DPF_AV_MAX_EPS	8

struct dpf_av {
	struct fid_av av;
	struct dpf_domain *dom;
	enum fi_av_type type;
	struct dmaplane_name *names;
	bool *used;
	size_t count;			/* slots handed out; never reused */
	size_t cap;
	struct dpf_ep *eps[DPF_AV_MAX_EPS];	/* bound endpoints */
	int neps;
};

int dpf_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		struct fid_av **avp, void *context);
int dpf_av_bind_ep(struct dpf_av *av, struct dpf_ep *ep);
void dpf_av_unbind_ep(struct dpf_av *av, struct dpf_ep *ep);
bool dpf_av_valid(const struct dpf_av *av, fi_addr_t addr);

/* ---- dp_cq.c ---------------------------------------------------------- */

/* One completion as the provider keeps it until fi_cq_read(). */
struct dpf_cq_slot {
	void *op_context;
	uint64_t flags;
	size_t len;
	void *buf;
	uint64_t data;
	uint64_t tag;
	size_t olen;
	fi_addr_t src;
	int err;			/* positive FI_E*, 0 for success */
	int prov_errno;
};

struct dpf_cq {
	struct fid_cq cq;
	struct dpf_domain *dom;
	enum fi_cq_format format;
	enum fi_wait_obj wait_obj;
	struct dpf_cq_slot *slots;
	size_t size;			/* power of two */
	size_t head, tail;		/* free-running */
	struct dpf_ep **eps;		/* endpoints bound to it */
	int neps, maxeps;
	int refs;			/* endpoint bindings and poll sets */
	int epfd;			/* FI_WAIT_FD: epoll over eps + sigfd */
	int sigfd;			/* eventfd of fi_cq_signal() */
};

int dpf_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		struct fid_cq **cqp, void *context);
int dpf_cq_bind_ep(struct dpf_cq *cq, struct dpf_ep *ep);
void dpf_cq_unbind_ep(struct dpf_cq *cq, struct dpf_ep *ep);
static inline bool dpf_cq_full(const struct dpf_cq *cq)
{
	return cq->tail - cq->head == cq->size;
}
struct dpf_cq_slot *dpf_cq_push(struct dpf_cq *cq);
bool dpf_cq_ready(struct dpf_cq *cq);
int dpf_trywait(struct fid_fabric *fabric, struct fid **fids, int count);

/* ---- dp_cntr.c -------------------------------------------------------- */

struct dpf_cntr {
	struct fid_cntr cntr;
	struct dpf_domain *dom;
	uint64_t value;
	uint64_t err;
	struct dpf_ep **eps;
	int neps, maxeps;
	int refs;			/* bindings and poll sets */
	enum fi_wait_obj wait_obj;
	/* fi_cntr_set/add's count of writes, the counts after the last one */
	uint64_t gen, snap_value, snap_err;
};

int dpf_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		  struct fid_cntr **cntrp, void *context);
int dpf_cntr_bind_ep(struct dpf_cntr *cntr, struct dpf_ep *ep);
void dpf_cntr_unbind_ep(struct dpf_cntr *cntr, struct dpf_ep *ep);
void dpf_cntr_progress(struct dpf_cntr *cntr);

/* ---- dp_poll.c -------------------------------------------------------- */

int dpf_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		  struct fid_poll **pollset);

/* ---- dp_mr.c ---------------------------------------------------------- */

struct dpf_mr {
	struct fid_mr mr;
	struct dpf_domain *dom;
	const void *buf;
	size_t len;
	uint64_t access;		/* FI_* access bits */
	struct dpf_ep *ep;		/* FI_MR_ENDPOINT: bound endpoint */
	struct dp_mr *kmr;		/* the kernel region, once enabled */
	struct dpf_mr *ep_next;		/* on ep->mrs */
	/*
	 * fi_mr_desc() points here, and this holds its own address: an
	 * application that passes fi_mr_desc() itself where libfabric wants
	 * an array of descriptors (fabtests 1.17's fi_multi_recv -M does)
	 * names the same region instead of a pointer read from the region's
	 * first bytes.
	 */
	void *self;
};

/* The region of a descriptor of fi_mr_desc(), or NULL. */
static inline struct dpf_mr *dpf_mr_of_desc(void *desc)
{
	return desc ? container_of(desc, struct dpf_mr, self) : NULL;
}

extern struct fi_ops_mr dpf_domain_mr_ops;
int dpf_mr_enable(struct dpf_mr *mr);
void dpf_mr_ep_gone(struct dpf_mr *mr);

/* ---- dp_ep.c ---------------------------------------------------------- */

/* What a completion of the kernel ring belongs to. */
enum dpf_req_kind {
	DPF_REQ_SEND,
	DPF_REQ_RECV,
	DPF_REQ_WRITE,
	DPF_REQ_READ,
	DPF_REQ_DISCARD,	/* FI_PEEK|FI_DISCARD: nobody is told */
};

struct dpf_mrecv;

struct dpf_req {
	struct dpf_req *next;		/* free list, or the ep's recv list */
	struct dpf_req *prev;
	void *context;
	void *buf;
	struct dpf_mrecv *mrecv;	/* a receive into an FI_MULTI_RECV buffer */
	uint64_t cq_flags;		/* FI_SEND | FI_TAGGED ... */
	enum dpf_req_kind kind;
	bool comp;			/* report success on the CQ */
	bool posted;			/* on ep->recvs (cancellable) */
	char inject[DPF_INJECT_SIZE];
};

/*
 * An FI_MULTI_RECV buffer: messages are packed into it one after the other
 * (no alignment).  Only the oldest buffer of the endpoint has a kernel
 * receive posted, for the rest of its space, so buffers fill in the order
 * they were posted; the receive's completion advances @off and posts the
 * next receive, or releases the buffer (FI_MULTI_RECV on that completion)
 * once less than FI_OPT_MIN_MULTI_RECV bytes are left.
 */
struct dpf_mrecv {
	struct dpf_mrecv *next;		/* ep->mrecvs, oldest first */
	void *context;
	char *base;
	size_t len, off;		/* the buffer, and the bytes used */
	void *desc;			/* fi_mr_desc() the application gave */
	uint32_t src;			/* kernel handle or DP_ANY_SRC */
	uint64_t flags;			/* the post's flags (FI_COMPLETION) */
	struct dpf_req *req;		/* its kernel receive, or NULL */
};

struct dpf_ep {
	struct fid_ep ep;
	struct dpf_domain *dom;
	struct fi_info *info;
	struct dp_ep *kep;		/* the kernel endpoint */
	bool enabled;
	bool put_data;			/* the module has DMAPLANE_CAP_PUT_DATA */
	bool region_buf;		/* ... and DMAPLANE_CAP_REGION_BUF */
	bool recv_inline;		/* ... and DMAPLANE_CAP_RECV_INLINE */
	uint64_t caps;
	uint64_t tx_op_flags, rx_op_flags;
	size_t tx_size, rx_size;
	bool tag_split;			/* see DPF_MSG_TAG_BIT */
	struct dpf_av *av;
	struct dpf_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective;
	struct dpf_cntr *send_cntr, *recv_cntr, *read_cntr, *write_cntr;
	uint32_t *peers;		/* AV index -> kernel address handle */
	size_t npeers;
	fi_addr_t *rpeers;		/* kernel address handle -> AV index */
	size_t nrpeers;
	struct dpf_req *free_reqs;
	struct dpf_req *recvs;		/* posted receives, for fi_cancel() */
	struct dpf_mrecv *mrecvs;	/* FI_MULTI_RECV buffers, oldest first */
	struct dpf_mrecv **mrecv_tail;
	size_t min_multi_recv;		/* FI_OPT_MIN_MULTI_RECV */
	void **req_chunks;
	size_t nchunks;
	struct dpf_mr *mrs;		/* FI_MR_ENDPOINT regions bound here */
};

int dpf_ep_open(struct fid_domain *domain, struct fi_info *info,
		struct fid_ep **epp, void *context);
void dpf_ep_progress(struct dpf_ep *ep);
int dpf_ep_av_insert(struct dpf_ep *ep, size_t index);
void dpf_ep_av_remove(struct dpf_ep *ep, size_t index);

#endif /* DP_PROV_H */

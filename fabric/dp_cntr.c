// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdmaplane-fi: counters.  Reading one drains the rings of the
 * endpoints bound to it, as reading a CQ does.  Completions of the target
 * side of RMA are not reported by dmaplane, so FI_REMOTE_READ/WRITE
 * bindings (FI_RMA_EVENT) are refused.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>

#include "dp_prov.h"

/* Drain the rings of the endpoints bound to @cntr; under the domain lock. */
void dpf_cntr_progress(struct dpf_cntr *cntr)
{
	int k;

	for (k = 0; k < cntr->neps; k++)
		dpf_ep_progress(cntr->eps[k]);
}

/* The success (@err false) or error count, after draining the rings. */
static uint64_t cntr_get(struct fid_cntr *fc, bool err)
{
	struct dpf_cntr *cntr = container_of(fc, struct dpf_cntr, cntr);
	uint64_t v;

	dpf_lock(cntr->dom);
	dpf_cntr_progress(cntr);
	v = err ? cntr->err : cntr->value;
	dpf_unlock(cntr->dom);
	return v;
}

static uint64_t dpf_cntr_read(struct fid_cntr *fc)
{
	return cntr_get(fc, false);
}

static uint64_t dpf_cntr_readerr(struct fid_cntr *fc)
{
	return cntr_get(fc, true);
}

/* Add @value to, or set, the success (@err false) or error count. */
static int cntr_update(struct fid_cntr *fc, bool err, bool add, uint64_t value)
{
	struct dpf_cntr *cntr = container_of(fc, struct dpf_cntr, cntr);
	uint64_t *v = err ? &cntr->err : &cntr->value;

	dpf_lock(cntr->dom);
	*v = add ? *v + value : value;
	/* poll sets count changes from here (fi_poll(3)) */
	cntr->snap_value = cntr->value;
	cntr->snap_err = cntr->err;
	cntr->gen++;
	dpf_unlock(cntr->dom);
	return 0;
}

static int dpf_cntr_add(struct fid_cntr *fc, uint64_t value)
{
	return cntr_update(fc, false, true, value);
}

static int dpf_cntr_set(struct fid_cntr *fc, uint64_t value)
{
	return cntr_update(fc, false, false, value);
}

static int dpf_cntr_adderr(struct fid_cntr *fc, uint64_t value)
{
	return cntr_update(fc, true, true, value);
}

static int dpf_cntr_seterr(struct fid_cntr *fc, uint64_t value)
{
	return cntr_update(fc, true, false, value);
}

/*
 * Wait until the counter reaches @threshold: -FI_ETIMEDOUT, or
 * -FI_EAVAIL when the error count moved meanwhile.
 */
static int dpf_cntr_wait(struct fid_cntr *fc, uint64_t threshold, int timeout)
{
	struct dpf_cntr *cntr = container_of(fc, struct dpf_cntr, cntr);
	int64_t deadline = dpf_deadline(timeout);
	struct pollfd pfd[DPF_AV_MAX_EPS];
	uint64_t err0;
	int k, n, left;

	if (cntr->wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	dpf_lock(cntr->dom);
	err0 = cntr->err;
	for (;;) {
		dpf_cntr_progress(cntr);
		if (cntr->value >= threshold)
			break;
		if (cntr->err != err0) {
			dpf_unlock(cntr->dom);
			return -FI_EAVAIL;
		}
		left = dpf_time_left(deadline);
		if (!left) {
			dpf_unlock(cntr->dom);
			return -FI_ETIMEDOUT;
		}
		n = cntr->neps < DPF_AV_MAX_EPS ? cntr->neps : DPF_AV_MAX_EPS;
		for (k = 0; k < n; k++) {
			pfd[k].fd = dp_fd(cntr->eps[k]->kep);
			pfd[k].events = POLLIN;
		}
		dpf_unlock(cntr->dom);
		/* Counters set by fi_cntr_add() are seen within 10 ms. */
		if (poll(pfd, n, left < 0 || left > 10 ? 10 : left) < 0 &&
		    errno != EINTR)
			return -errno;
		dpf_lock(cntr->dom);
	}
	dpf_unlock(cntr->dom);
	return 0;
}

static struct fi_ops_cntr dpf_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = dpf_cntr_read,
	.readerr = dpf_cntr_readerr,
	.add = dpf_cntr_add,
	.set = dpf_cntr_set,
	.wait = dpf_cntr_wait,
	.adderr = dpf_cntr_adderr,
	.seterr = dpf_cntr_seterr,
};

int dpf_cntr_bind_ep(struct dpf_cntr *cntr, struct dpf_ep *ep)
{
	struct dpf_ep **eps;
	int k;

	cntr->refs++;
	for (k = 0; k < cntr->neps; k++)
		if (cntr->eps[k] == ep)
			return 0;
	if (cntr->neps == cntr->maxeps) {
		eps = realloc(cntr->eps, (cntr->maxeps + 4) * sizeof(*eps));
		if (!eps) {
			cntr->refs--;
			return -FI_ENOMEM;
		}
		cntr->eps = eps;
		cntr->maxeps += 4;
	}
	cntr->eps[cntr->neps++] = ep;
	return 0;
}

/* Drop every binding of @ep (it is closing). */
void dpf_cntr_unbind_ep(struct dpf_cntr *cntr, struct dpf_ep *ep)
{
	int k;

	cntr->refs -= (ep->send_cntr == cntr) + (ep->recv_cntr == cntr) +
		      (ep->read_cntr == cntr) + (ep->write_cntr == cntr);
	for (k = 0; k < cntr->neps; k++) {
		if (cntr->eps[k] == ep) {
			cntr->eps[k] = cntr->eps[--cntr->neps];
			return;
		}
	}
}

static int dpf_cntr_close(struct fid *fid)
{
	struct dpf_cntr *cntr = container_of(fid, struct dpf_cntr, cntr.fid);
	struct dpf_domain *dom = cntr->dom;

	dpf_lock(dom);
	if (cntr->refs) {
		dpf_unlock(dom);
		return -FI_EBUSY;
	}
	dom->refs--;
	dpf_unlock(dom);
	free(cntr->eps);
	free(cntr);
	return 0;
}

static int dpf_cntr_control(struct fid *fid, int command, void *arg)
{
	struct dpf_cntr *cntr = container_of(fid, struct dpf_cntr, cntr.fid);

	switch (command) {
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *)arg = cntr->wait_obj;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops dpf_cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dpf_cntr_close,
	.bind = dpf_no_bind,
	.control = dpf_cntr_control,
	.ops_open = dpf_no_ops_open,
};

int dpf_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		  struct fid_cntr **cntrp, void *context)
{
	struct dpf_domain *dom = container_of(domain, struct dpf_domain, domain);
	struct dpf_cntr *cntr;

	if (attr->events != FI_CNTR_EVENTS_COMP || attr->flags)
		return -FI_EINVAL;
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
		break;
	default:
		return -FI_ENOSYS;	/* waited on by fi_cntr_wait() only */
	}
	cntr = calloc(1, sizeof(*cntr));
	if (!cntr)
		return -FI_ENOMEM;
	cntr->dom = dom;
	cntr->wait_obj = attr->wait_obj;
	cntr->cntr.fid.fclass = FI_CLASS_CNTR;
	cntr->cntr.fid.context = context;
	cntr->cntr.fid.ops = &dpf_cntr_fi_ops;
	cntr->cntr.ops = &dpf_cntr_ops;
	dpf_lock(dom);
	dom->refs++;
	dpf_unlock(dom);
	*cntrp = &cntr->cntr;
	return 0;
}

// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdmaplane-fi: poll sets (fi_poll_open).  A poll set is a list of the
 * domain's CQs and counters; fi_poll() drains the rings of their
 * endpoints (as reading them would) and returns the context of each CQ
 * that holds an entry, success or error, and of each counter whose
 * success or error count changed since this set last looked at it, or
 * since fi_cntr_set()/fi_cntr_add() and their error twins last wrote it
 * (fi_poll(3)).  A CQ or counter in a set cannot be closed (-FI_EBUSY);
 * a set that still holds members can (fi_close drops them).
 */
#include <stdlib.h>

#include "dp_prov.h"

struct dpf_poll_ent {
	struct fid *fid;		/* FI_CLASS_CQ or FI_CLASS_CNTR */
	uint64_t value, err;		/* a counter's counts when last seen */
	uint64_t gen;			/* and its dpf_cntr.gen then */
};

struct dpf_poll {
	struct fid_poll poll;
	struct dpf_domain *dom;
	struct dpf_poll_ent *ents;	/* under dom->lock */
	int n, max;
};

/* @e's counter as this set sees it now; under the domain lock. */
static void cntr_seen(struct dpf_poll_ent *e, const struct dpf_cntr *cntr)
{
	e->value = cntr->value;
	e->err = cntr->err;
	e->gen = cntr->gen;
}

/* Has @e's counter changed since this set looked?  Under the domain lock. */
static bool cntr_moved(struct dpf_poll_ent *e)
{
	struct dpf_cntr *cntr = container_of(e->fid, struct dpf_cntr, cntr.fid);
	uint64_t value = e->value, err = e->err;
	bool moved;

	dpf_cntr_progress(cntr);
	if (e->gen != cntr->gen) {
		/* written by the application since: changes count from there */
		value = cntr->snap_value;
		err = cntr->snap_err;
	}
	moved = cntr->value != value || cntr->err != err;
	cntr_seen(e, cntr);
	return moved;
}

static int dpf_poll_poll(struct fid_poll *fp, void **context, int count)
{
	struct dpf_poll *ps = container_of(fp, struct dpf_poll, poll);
	int k, n = 0;

	if (count < 0 || (count && !context))
		return -FI_EINVAL;
	dpf_lock(ps->dom);
	for (k = 0; k < ps->n && n < count; k++) {
		struct dpf_poll_ent *e = &ps->ents[k];

		if (e->fid->fclass == FI_CLASS_CQ) {
			struct dpf_cq *cq = container_of(e->fid, struct dpf_cq, cq.fid);

			if (dpf_cq_ready(cq))
				context[n++] = e->fid->context;
		} else if (cntr_moved(e)) {
			context[n++] = e->fid->context;
		}
	}
	dpf_unlock(ps->dom);
	return n;
}

/* The CQ or counter of this domain that @fid is, its reference count. */
static int *member_refs(struct dpf_poll *ps, struct fid *fid)
{
	if (!fid)
		return NULL;
	if (fid->fclass == FI_CLASS_CQ) {
		struct dpf_cq *cq = container_of(fid, struct dpf_cq, cq.fid);

		return cq->dom == ps->dom ? &cq->refs : NULL;
	}
	if (fid->fclass == FI_CLASS_CNTR) {
		struct dpf_cntr *cntr = container_of(fid, struct dpf_cntr, cntr.fid);

		return cntr->dom == ps->dom ? &cntr->refs : NULL;
	}
	return NULL;
}

static int find(const struct dpf_poll *ps, const struct fid *fid)
{
	int k;

	for (k = 0; k < ps->n; k++)
		if (ps->ents[k].fid == fid)
			return k;
	return -1;
}

static int dpf_poll_add(struct fid_poll *fp, struct fid *fid, uint64_t flags)
{
	struct dpf_poll *ps = container_of(fp, struct dpf_poll, poll);
	struct dpf_poll_ent *ents;
	int *refs, ret = 0;

	if (flags)
		return -FI_EINVAL;
	dpf_lock(ps->dom);
	refs = member_refs(ps, fid);
	if (!refs) {
		ret = -FI_EINVAL;
		goto out;
	}
	if (find(ps, fid) >= 0) {
		ret = -FI_EALREADY;
		goto out;
	}
	if (ps->n == ps->max) {
		int max = ps->max ? 2 * ps->max : 4;

		ents = realloc(ps->ents, max * sizeof(*ents));
		if (!ents) {
			ret = -FI_ENOMEM;
			goto out;
		}
		ps->ents = ents;
		ps->max = max;
	}
	ps->ents[ps->n] = (struct dpf_poll_ent){ .fid = fid };
	/* what a counter holds now is not news */
	if (fid->fclass == FI_CLASS_CNTR)
		cntr_seen(&ps->ents[ps->n],
			  container_of(fid, struct dpf_cntr, cntr.fid));
	ps->n++;
	(*refs)++;
out:
	dpf_unlock(ps->dom);
	return ret;
}

static int dpf_poll_del(struct fid_poll *fp, struct fid *fid, uint64_t flags)
{
	struct dpf_poll *ps = container_of(fp, struct dpf_poll, poll);
	int k, ret = 0;

	if (flags)
		return -FI_EINVAL;
	dpf_lock(ps->dom);
	k = find(ps, fid);
	if (k < 0) {
		ret = -FI_ENOENT;
	} else {
		(*member_refs(ps, fid))--;
		ps->ents[k] = ps->ents[--ps->n];
	}
	dpf_unlock(ps->dom);
	return ret;
}

static int dpf_poll_close(struct fid *fid)
{
	struct dpf_poll *ps = container_of(fid, struct dpf_poll, poll.fid);
	struct dpf_domain *dom = ps->dom;
	int k;

	dpf_lock(dom);
	for (k = 0; k < ps->n; k++)
		(*member_refs(ps, ps->ents[k].fid))--;
	dom->refs--;
	dpf_unlock(dom);
	free(ps->ents);
	free(ps);
	return 0;
}

static struct fi_ops dpf_poll_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dpf_poll_close,
	.bind = dpf_no_bind,
	.control = dpf_no_control,
	.ops_open = dpf_no_ops_open,
};

static struct fi_ops_poll dpf_poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = dpf_poll_poll,
	.poll_add = dpf_poll_add,
	.poll_del = dpf_poll_del,
};

int dpf_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		  struct fid_poll **pollset)
{
	struct dpf_domain *dom = container_of(domain, struct dpf_domain, domain);
	struct dpf_poll *ps;

	if (!pollset || (attr && attr->flags))
		return -FI_EINVAL;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return -FI_ENOMEM;
	ps->dom = dom;
	ps->poll.fid.fclass = FI_CLASS_POLL;
	ps->poll.fid.ops = &dpf_poll_fi_ops;
	ps->poll.ops = &dpf_poll_ops;
	dpf_lock(dom);
	dom->refs++;
	dpf_unlock(dom);
	*pollset = &ps->poll;
	return 0;
}

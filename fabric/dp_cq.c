// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdmaplane-fi: completion queues.
 *
 * The kernel completes every operation on its endpoint's ring; reading a
 * CQ drains the rings of the endpoints bound to it (dpf_ep_progress())
 * into the CQ's slots, in ring order, and stops while a CQ it feeds is
 * full (the ring then holds the rest: nothing is dropped).  An error slot
 * stops fi_cq_read() there (-FI_EAVAIL) until fi_cq_readerr() takes it,
 * so successes and errors stay in completion order.
 *
 * FI_WAIT_FD: the wait fd is an epoll instance over the bound endpoints'
 * file descriptors (POLLIN while their rings hold entries) and an eventfd
 * that fi_cq_signal() writes.  fi_trywait() returns -FI_EAGAIN while a
 * slot is filled, as the wait fd cannot see those.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "dp_prov.h"

struct dpf_cq_slot *dpf_cq_push(struct dpf_cq *cq)
{
	struct dpf_cq_slot *s;

	if (dpf_cq_full(cq))
		return NULL;
	s = &cq->slots[cq->tail++ & (cq->size - 1)];
	memset(s, 0, sizeof(*s));
	s->src = FI_ADDR_NOTAVAIL;
	return s;
}

static void cq_progress(struct dpf_cq *cq)
{
	int k;

	for (k = 0; k < cq->neps; k++)
		dpf_ep_progress(cq->eps[k]);
}

/* Does @cq hold an entry once its rings are drained?  Under the domain lock. */
bool dpf_cq_ready(struct dpf_cq *cq)
{
	cq_progress(cq);
	return cq->head != cq->tail;
}

static size_t entry_size(enum fi_cq_format format)
{
	switch (format) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	default:
		return sizeof(struct fi_cq_tagged_entry);
	}
}

static void fill_entry(const struct dpf_cq *cq, const struct dpf_cq_slot *s,
		       void *buf)
{
	switch (cq->format) {
	case FI_CQ_FORMAT_CONTEXT: {
		struct fi_cq_entry *e = buf;

		e->op_context = s->op_context;
		break;
	}
	case FI_CQ_FORMAT_MSG: {
		struct fi_cq_msg_entry *e = buf;

		e->op_context = s->op_context;
		e->flags = s->flags;
		e->len = s->len;
		break;
	}
	case FI_CQ_FORMAT_DATA: {
		struct fi_cq_data_entry *e = buf;

		e->op_context = s->op_context;
		e->flags = s->flags;
		e->len = s->len;
		e->buf = s->buf;
		e->data = s->data;
		break;
	}
	default: {
		struct fi_cq_tagged_entry *e = buf;

		e->op_context = s->op_context;
		e->flags = s->flags;
		e->len = s->len;
		e->buf = s->buf;
		e->data = s->data;
		e->tag = s->tag;
		break;
	}
	}
}

/* Take up to @count successes; the caller holds the domain lock. */
static ssize_t cq_take(struct dpf_cq *cq, void *buf, size_t count,
		       fi_addr_t *src)
{
	size_t esz = entry_size(cq->format), n = 0;
	struct dpf_cq_slot *s;

	cq_progress(cq);
	while (n < count && cq->head != cq->tail) {
		s = &cq->slots[cq->head & (cq->size - 1)];
		if (s->err)
			break;
		fill_entry(cq, s, (char *)buf + n * esz);
		if (src)
			src[n] = s->src;
		cq->head++;
		n++;
	}
	if (n)
		return n;
	if (cq->head != cq->tail)
		return -FI_EAVAIL;
	return -FI_EAGAIN;
}

static ssize_t dpf_cq_readfrom(struct fid_cq *fcq, void *buf, size_t count,
			       fi_addr_t *src_addr)
{
	struct dpf_cq *cq = container_of(fcq, struct dpf_cq, cq);
	ssize_t ret;

	dpf_lock(cq->dom);
	ret = cq_take(cq, buf, count, src_addr);
	dpf_unlock(cq->dom);
	return ret;
}

static ssize_t dpf_cq_read(struct fid_cq *fcq, void *buf, size_t count)
{
	return dpf_cq_readfrom(fcq, buf, count, NULL);
}

static ssize_t dpf_cq_readerr(struct fid_cq *fcq, struct fi_cq_err_entry *buf,
			      uint64_t flags)
{
	struct dpf_cq *cq = container_of(fcq, struct dpf_cq, cq);
	uint32_t api = cq->dom->fab->fabric.api_version;
	struct dpf_cq_slot *s;
	void *err_data;

	if (flags)
		return -FI_EINVAL;
	dpf_lock(cq->dom);
	cq_progress(cq);
	if (cq->head == cq->tail ||
	    !cq->slots[cq->head & (cq->size - 1)].err) {
		dpf_unlock(cq->dom);
		return -FI_EAGAIN;
	}
	s = &cq->slots[cq->head++ & (cq->size - 1)];
	/* Since API 1.5 err_data is the application's buffer (may be 0). */
	err_data = buf->err_data;
	buf->op_context = s->op_context;
	buf->flags = s->flags;
	buf->len = s->len;
	buf->buf = s->buf;
	buf->data = s->data;
	buf->tag = s->tag;
	buf->olen = s->olen;
	buf->err = s->err;
	buf->prov_errno = s->prov_errno;
	if (FI_VERSION_GE(api, FI_VERSION(1, 5))) {
		buf->err_data = err_data;
		buf->err_data_size = 0;
	} else {
		buf->err_data = NULL;
	}
	dpf_unlock(cq->dom);
	return 1;
}

/* Wait for the CQ's fd (or a signal); 0, -FI_EAGAIN on timeout, -errno. */
static int cq_wait_fd(struct dpf_cq *cq, int timeout_ms)
{
	struct pollfd pfd = { .fd = cq->epfd, .events = POLLIN };
	struct epoll_event ev;
	uint64_t v;
	int n;

	n = poll(&pfd, 1, timeout_ms);
	if (n < 0)
		return errno == EINTR ? -FI_EINTR : -errno;
	if (!n)
		return -FI_EAGAIN;
	/* Consume a signal so that it wakes one sread only. */
	n = epoll_wait(cq->epfd, &ev, 1, 0);
	if (n == 1 && ev.data.ptr == NULL &&
	    read(cq->sigfd, &v, sizeof(v)) == sizeof(v))
		return -FI_ECANCELED;
	return 0;
}

static ssize_t dpf_cq_sreadfrom(struct fid_cq *fcq, void *buf, size_t count,
				fi_addr_t *src_addr, const void *cond,
				int timeout)
{
	struct dpf_cq *cq = container_of(fcq, struct dpf_cq, cq);
	int64_t deadline = dpf_deadline(timeout);
	ssize_t ret;
	int left;

	(void)cond;	/* FI_CQ_COND_NONE: refused at open otherwise */
	if (cq->wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	for (;;) {
		dpf_lock(cq->dom);
		ret = cq_take(cq, buf, count, src_addr);
		dpf_unlock(cq->dom);
		if (ret != -FI_EAGAIN)
			return ret;
		left = dpf_time_left(deadline);
		if (!left)
			return -FI_EAGAIN;
		ret = cq_wait_fd(cq, left);
		if (ret == -FI_ECANCELED)
			return -FI_EAGAIN;	/* fi_cq_signal() */
		if (ret && ret != -FI_EAGAIN)
			return ret;
	}
}

static ssize_t dpf_cq_sread(struct fid_cq *fcq, void *buf, size_t count,
			    const void *cond, int timeout)
{
	return dpf_cq_sreadfrom(fcq, buf, count, NULL, cond, timeout);
}

static int dpf_cq_signal(struct fid_cq *fcq)
{
	struct dpf_cq *cq = container_of(fcq, struct dpf_cq, cq);
	uint64_t one = 1;

	if (cq->sigfd < 0)
		return -FI_EINVAL;
	if (write(cq->sigfd, &one, sizeof(one)) != sizeof(one))
		return -errno;
	return 0;
}

static const char *dpf_cq_strerror(struct fid_cq *fcq, int prov_errno,
				   const void *err_data, char *buf, size_t len)
{
	const char *str = strerror(prov_errno);

	(void)fcq; (void)err_data;
	if (buf && len) {
		strncpy(buf, str, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return str;
}

static struct fi_ops_cq dpf_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = dpf_cq_read,
	.readfrom = dpf_cq_readfrom,
	.readerr = dpf_cq_readerr,
	.sread = dpf_cq_sread,
	.sreadfrom = dpf_cq_sreadfrom,
	.signal = dpf_cq_signal,
	.strerror = dpf_cq_strerror,
};

int dpf_cq_bind_ep(struct dpf_cq *cq, struct dpf_ep *ep)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ep };
	struct dpf_ep **eps;
	int k;

	for (k = 0; k < cq->neps; k++) {
		if (cq->eps[k] == ep) {
			cq->refs++;	/* its other direction */
			return 0;
		}
	}
	if (cq->neps == cq->maxeps) {
		eps = realloc(cq->eps, (cq->maxeps + 4) * sizeof(*eps));
		if (!eps)
			return -FI_ENOMEM;
		cq->eps = eps;
		cq->maxeps += 4;
	}
	if (cq->epfd >= 0 &&
	    epoll_ctl(cq->epfd, EPOLL_CTL_ADD, dp_fd(ep->kep), &ev) && errno != EEXIST)
		return -errno;
	cq->eps[cq->neps++] = ep;
	cq->refs++;
	return 0;
}

/* Drop one binding (direction) of @ep; the last one takes it off the list. */
void dpf_cq_unbind_ep(struct dpf_cq *cq, struct dpf_ep *ep)
{
	int k;

	cq->refs--;
	if (ep->tx_cq == cq && ep->rx_cq == cq)
		return;		/* the caller drops the other direction next */
	for (k = 0; k < cq->neps; k++) {
		if (cq->eps[k] == ep) {
			if (cq->epfd >= 0)
				epoll_ctl(cq->epfd, EPOLL_CTL_DEL, dp_fd(ep->kep), NULL);
			cq->eps[k] = cq->eps[--cq->neps];
			return;
		}
	}
}

static int dpf_cq_control(struct fid *fid, int command, void *arg)
{
	struct dpf_cq *cq = container_of(fid, struct dpf_cq, cq.fid);

	return dpf_wait_control(command, arg, cq->wait_obj, cq->epfd);
}

static int dpf_cq_close(struct fid *fid)
{
	struct dpf_cq *cq = container_of(fid, struct dpf_cq, cq.fid);
	struct dpf_domain *dom = cq->dom;

	dpf_lock(dom);
	if (cq->refs) {
		dpf_unlock(dom);
		return -FI_EBUSY;
	}
	dom->refs--;
	dpf_unlock(dom);
	if (cq->epfd >= 0)
		close(cq->epfd);
	if (cq->sigfd >= 0)
		close(cq->sigfd);
	free(cq->eps);
	free(cq->slots);
	free(cq);
	return 0;
}

static struct fi_ops dpf_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dpf_cq_close,
	.bind = dpf_no_bind,
	.control = dpf_cq_control,
	.ops_open = dpf_no_ops_open,
};

/* fi_trywait(): may the application block on these objects' wait fds? */
int dpf_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	struct dpf_cq *cq;
	int i, k;

	(void)fabric;
	for (i = 0; i < count; i++) {
		switch (fids[i]->fclass) {
		case FI_CLASS_CQ:
			cq = container_of(fids[i], struct dpf_cq, cq.fid);
			if (cq->epfd < 0)
				return -FI_EINVAL;
			dpf_lock(cq->dom);
			cq_progress(cq);
			k = cq->head != cq->tail;
			dpf_unlock(cq->dom);
			if (k)
				return -FI_EAGAIN;
			break;
		case FI_CLASS_EQ:
			k = dpf_eq_trywait(fids[i]);
			if (k)
				return k;
			break;
		case FI_CLASS_CNTR:
			return -FI_ENOSYS;	/* counters have no wait fd */
		default:
			return -FI_EINVAL;
		}
	}
	return 0;
}

int dpf_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		struct fid_cq **cqp, void *context)
{
	struct dpf_domain *dom = container_of(domain, struct dpf_domain, domain);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	size_t size = attr->size ? attr->size : DPF_DEF_CQ_SIZE;
	struct dpf_cq *cq;
	int ret;

	if (attr->flags & ~FI_AFFINITY)
		return -FI_EINVAL;
	if (attr->size > DPF_MAX_CQ_SIZE)
		return -FI_EINVAL;
	switch (attr->format) {
	case FI_CQ_FORMAT_UNSPEC:
	case FI_CQ_FORMAT_CONTEXT:
	case FI_CQ_FORMAT_MSG:
	case FI_CQ_FORMAT_DATA:
	case FI_CQ_FORMAT_TAGGED:
		break;
	default:
		return -FI_ENOSYS;
	}
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		break;
	default:
		return -FI_ENOSYS;	/* wait sets, mutex/cond, yield */
	}
	if (attr->wait_obj != FI_WAIT_NONE &&
	    attr->wait_cond != FI_CQ_COND_NONE)
		return -FI_ENOSYS;

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->size = 1;
	while (cq->size < size)
		cq->size <<= 1;
	cq->slots = calloc(cq->size, sizeof(*cq->slots));
	if (!cq->slots) {
		ret = -FI_ENOMEM;
		goto err_free_cq;
	}
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ?
		     FI_CQ_FORMAT_CONTEXT : attr->format;
	cq->wait_obj = attr->wait_obj == FI_WAIT_UNSPEC ? FI_WAIT_FD : attr->wait_obj;
	cq->epfd = -1;
	cq->sigfd = -1;
	if (cq->wait_obj == FI_WAIT_FD) {
		cq->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (cq->epfd < 0) {
			ret = -errno;
			goto err_free_slots;
		}
		cq->sigfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (cq->sigfd < 0) {
			ret = -errno;
			goto err_close_epfd;
		}
		if (epoll_ctl(cq->epfd, EPOLL_CTL_ADD, cq->sigfd, &ev)) {
			ret = -errno;
			goto err_close_sigfd;
		}
	}
	cq->dom = dom;
	cq->cq.fid.fclass = FI_CLASS_CQ;
	cq->cq.fid.context = context;
	cq->cq.fid.ops = &dpf_cq_fi_ops;
	cq->cq.ops = &dpf_cq_ops;
	dpf_lock(dom);
	dom->refs++;
	dpf_unlock(dom);
	*cqp = &cq->cq;
	return 0;

err_close_sigfd:
	close(cq->sigfd);
err_close_epfd:
	close(cq->epfd);
err_free_slots:
	free(cq->slots);
err_free_cq:
	free(cq);
	return ret;
}

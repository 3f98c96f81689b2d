// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdmaplane-fi: event queues.  An RDM endpoint of dmaplane has no
 * connection events and AV insertion is synchronous, so an EQ only ever
 * holds what the application writes itself (fi_eq_write); fabtests and
 * fi_pingpong open one regardless.  FI_WAIT_FD: an eventfd in semaphore
 * mode that counts the queued entries, so it polls readable while any is
 * queued.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "dp_prov.h"

struct dpf_eq_ent {
	struct dpf_eq_ent *next;
	uint32_t event;
	bool err;
	size_t len;
	uint8_t data[];
};

struct dpf_eq {
	struct fid_eq eq;
	struct dpf_fabric *fab;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct dpf_eq_ent *head, **tailp;
	enum fi_wait_obj wait_obj;
	int fd;		/* FI_WAIT_FD: eventfd counting the queued entries */
};

static ssize_t eq_take(struct dpf_eq *eq, uint32_t *event, void *buf,
		       size_t len, uint64_t flags, bool want_err)
{
	struct dpf_eq_ent *e = eq->head;
	ssize_t ret;

	if (!e)
		return -FI_EAGAIN;
	if (e->err != want_err)
		return want_err ? -FI_EAGAIN : -FI_EAVAIL;
	if (len < e->len)
		return -FI_ETOOSMALL;
	if (event)
		*event = e->event;
	memcpy(buf, e->data, e->len);
	ret = e->len;
	if (!(flags & FI_PEEK)) {
		uint64_t one;

		eq->head = e->next;
		if (!eq->head)
			eq->tailp = &eq->head;
		free(e);
		if (eq->fd >= 0 && read(eq->fd, &one, sizeof(one)) != sizeof(one))
			DPF_WARN(FI_LOG_EQ, "eventfd out of step with the queue\n");
	}
	return ret;
}

static ssize_t dpf_eq_read(struct fid_eq *feq, uint32_t *event, void *buf,
			   size_t len, uint64_t flags)
{
	struct dpf_eq *eq = container_of(feq, struct dpf_eq, eq);
	ssize_t ret;

	pthread_mutex_lock(&eq->lock);
	ret = eq_take(eq, event, buf, len, flags, false);
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t dpf_eq_readerr(struct fid_eq *feq, struct fi_eq_err_entry *buf,
			      uint64_t flags)
{
	struct dpf_eq *eq = container_of(feq, struct dpf_eq, eq);
	ssize_t ret;

	pthread_mutex_lock(&eq->lock);
	ret = eq_take(eq, NULL, buf, sizeof(*buf), flags, true);
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static ssize_t dpf_eq_write(struct fid_eq *feq, uint32_t event,
			    const void *buf, size_t len, uint64_t flags)
{
	struct dpf_eq *eq = container_of(feq, struct dpf_eq, eq);
	struct dpf_eq_ent *e;

	e = malloc(sizeof(*e) + len);
	if (!e)
		return -FI_ENOMEM;
	e->next = NULL;
	e->event = event;
	(void)flags;
	e->err = false;	/* only the provider could queue errors: it has none */
	e->len = len;
	memcpy(e->data, buf, len);
	pthread_mutex_lock(&eq->lock);
	*eq->tailp = e;
	eq->tailp = &e->next;
	if (eq->fd >= 0) {
		uint64_t one = 1;

		if (write(eq->fd, &one, sizeof(one)) != sizeof(one))
			DPF_WARN(FI_LOG_EQ, "eventfd write failed\n");
	}
	pthread_cond_broadcast(&eq->cond);
	pthread_mutex_unlock(&eq->lock);
	return len;
}

static ssize_t dpf_eq_sread(struct fid_eq *feq, uint32_t *event, void *buf,
			    size_t len, int timeout, uint64_t flags)
{
	struct dpf_eq *eq = container_of(feq, struct dpf_eq, eq);
	struct timespec ts;
	ssize_t ret;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (timeout >= 0) {
		ts.tv_sec += timeout / 1000;
		ts.tv_nsec += (long)(timeout % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
	}
	pthread_mutex_lock(&eq->lock);
	for (;;) {
		ret = eq_take(eq, event, buf, len, flags, false);
		if (ret != -FI_EAGAIN)
			break;
		if (timeout < 0) {
			pthread_cond_wait(&eq->cond, &eq->lock);
		} else if (pthread_cond_timedwait(&eq->cond, &eq->lock, &ts) ==
			   ETIMEDOUT) {
			ret = eq_take(eq, event, buf, len, flags, false);
			break;
		}
	}
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

/* fi_trywait() on an EQ: -FI_EAGAIN while an event is queued. */
int dpf_eq_trywait(struct fid *fid)
{
	struct dpf_eq *eq = container_of(fid, struct dpf_eq, eq.fid);
	int ret;

	if (eq->fd < 0)
		return -FI_EINVAL;
	pthread_mutex_lock(&eq->lock);
	ret = eq->head ? -FI_EAGAIN : 0;
	pthread_mutex_unlock(&eq->lock);
	return ret;
}

static const char *dpf_eq_strerror(struct fid_eq *feq, int prov_errno,
				   const void *err_data, char *buf, size_t len)
{
	(void)feq; (void)err_data;
	if (buf && len) {
		strncpy(buf, strerror(prov_errno), len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return strerror(prov_errno);
}

static struct fi_ops_eq dpf_eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = dpf_eq_read,
	.readerr = dpf_eq_readerr,
	.write = dpf_eq_write,
	.sread = dpf_eq_sread,
	.strerror = dpf_eq_strerror,
};

static int dpf_eq_close(struct fid *fid)
{
	struct dpf_eq *eq = container_of(fid, struct dpf_eq, eq.fid);
	struct dpf_eq_ent *e, *next;

	for (e = eq->head; e; e = next) {
		next = e->next;
		free(e);
	}
	if (eq->fd >= 0)
		close(eq->fd);
	pthread_cond_destroy(&eq->cond);
	pthread_mutex_destroy(&eq->lock);
	__atomic_sub_fetch(&eq->fab->refs, 1, __ATOMIC_RELEASE);
	free(eq);
	return 0;
}

static int dpf_eq_control(struct fid *fid, int command, void *arg)
{
	struct dpf_eq *eq = container_of(fid, struct dpf_eq, eq.fid);

	return dpf_wait_control(command, arg, eq->wait_obj, eq->fd);
}

static struct fi_ops dpf_eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = dpf_eq_close,
	.bind = dpf_no_bind,
	.control = dpf_eq_control,
	.ops_open = dpf_no_ops_open,
};

int dpf_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		struct fid_eq **eqp, void *context)
{
	struct dpf_fabric *fab = container_of(fabric, struct dpf_fabric, fabric);
	pthread_condattr_t ca;
	struct dpf_eq *eq;

	if (attr->flags & ~FI_WRITE)
		return -FI_EINVAL;
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_MUTEX_COND:
	case FI_WAIT_FD:
		break;
	default:
		return -FI_ENOSYS;
	}
	eq = calloc(1, sizeof(*eq));
	if (!eq)
		return -FI_ENOMEM;
	eq->wait_obj = attr->wait_obj;
	eq->fd = -1;
	if (attr->wait_obj == FI_WAIT_FD) {
		eq->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
		if (eq->fd < 0) {
			free(eq);
			return -errno;
		}
	}
	pthread_mutex_init(&eq->lock, NULL);
	/* fi_eq_sread()'s timeout runs on the monotonic clock. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&eq->cond, &ca);
	pthread_condattr_destroy(&ca);
	eq->tailp = &eq->head;
	eq->fab = fab;
	eq->eq.fid.fclass = FI_CLASS_EQ;
	eq->eq.fid.context = context;
	eq->eq.fid.ops = &dpf_eq_fi_ops;
	eq->eq.ops = &dpf_eq_ops;
	__atomic_add_fetch(&fab->refs, 1, __ATOMIC_RELAXED);
	*eqp = &eq->eq;
	return 0;
}

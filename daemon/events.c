// SPDX-License-Identifier: GPL-2.0
/*
 * The event stream (GET /v1/events, server-sent events): a ring of the
 * last EV_RING events with increasing ids.  A subscriber sees the events
 * posted after it subscribed whose arena it may read; if it falls more
 * than EV_RING events behind, it is told how many it missed.  Each
 * subscriber's reader runs in its connection's own thread (libmicrohttpd
 * thread-per-connection) and waits on a condition variable.  A uid
 * that is not an administrator may hold max_streams_per_uid streams.
 *
 * Locking: lock protects the ring, next_id, stopping and the list of
 * open streams (their @next_open and @pprev); a stream's other fields
 * belong to its connection's thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "dmaplaned.h"

#define EV_RING		256
#define EV_KEEPALIVE	15	/* seconds between ": keepalive" comments */

struct event {
	uint64_t id;
	uid_t owner;
	gid_t group;
	unsigned int mode;
	char *text;		/* "id: ..\nevent: ..\ndata: ..\n\n" */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct event ring[EV_RING];
static uint64_t next_id = 1;
static bool stopping;
static struct dpd_sse *open_streams;

struct dpd_sse {
	struct dpd_sse *next_open, **pprev;
	struct dpd_cred cred;
	uint64_t next;		/* id of the next event to look at */
	char *pending;		/* text being sent */
	size_t len, off;
	time_t last_sent;
};

static void init_cond(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&cond, &a);
	pthread_condattr_destroy(&a);
}

/*
 * events_post - post an event of @type about @arena (whose owner, group
 * and mode decide who sees it); takes @data (a JSON object, may be NULL).
 */
void events_post(const char *type, const char *arena, uid_t owner,
		 gid_t group, unsigned int mode, json_t *data)
{
	struct event *e;
	char *json, *text;
	size_t n;

	pthread_once(&once, init_cond);
	if (!data)
		data = json_object();
	json_object_set_new(data, "time", json_integer((json_int_t)time(NULL)));
	json = json_dumps(data, JSON_COMPACT);
	json_decref(data);
	if (!json)
		return;
	n = strlen(json) + strlen(type) + 64;
	text = malloc(n);
	pthread_mutex_lock(&lock);
	if (text) {
		snprintf(text, n, "id: %llu\nevent: %s\ndata: %s\n\n",
			 (unsigned long long)next_id, type, json);
		e = &ring[next_id % EV_RING];
		free(e->text);
		e->id = next_id++;
		e->owner = owner;
		e->group = group;
		e->mode = mode;
		e->text = text;
		pthread_cond_broadcast(&cond);
	}
	pthread_mutex_unlock(&lock);
	free(json);
	(void)arena;
}

/* events_stop - end every stream (shutdown) and free the ring. */
void events_stop(void)
{
	pthread_once(&once, init_cond);
	pthread_mutex_lock(&lock);
	stopping = true;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

void events_free(void)
{
	size_t i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < EV_RING; i++) {
		free(ring[i].text);
		ring[i].text = NULL;
	}
	pthread_mutex_unlock(&lock);
}

/*
 * sse_open - a new stream for @cred; @limit: the streams its uid may hold
 * (0: any, for an administrator).  NULL with *@err -ENOMEM or -EDQUOT.
 */
struct dpd_sse *sse_open(const struct dpd_cred *cred, unsigned int limit, int *err)
{
	static const char hello[] = ": dmaplaned events\n\n";
	struct dpd_sse *s, *o;
	unsigned int n = 0;

	pthread_once(&once, init_cond);
	*err = -ENOMEM;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->cred = *cred;
	s->pending = strdup(hello);
	if (!s->pending) {
		free(s);
		return NULL;
	}
	s->len = strlen(hello);
	pthread_mutex_lock(&lock);
	for (o = open_streams; o && limit; o = o->next_open)
		n += !o->cred.token && o->cred.uid == cred->uid;
	if (limit && n >= limit) {
		pthread_mutex_unlock(&lock);
		free(s->pending);
		free(s);
		*err = -EDQUOT;
		return NULL;
	}
	s->next = next_id;
	s->next_open = open_streams;
	if (open_streams)
		open_streams->pprev = &s->next_open;
	s->pprev = &open_streams;
	open_streams = s;
	pthread_mutex_unlock(&lock);
	*err = 0;
	return s;
}

void sse_close(struct dpd_sse *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&lock);
	*s->pprev = s->next_open;
	if (s->next_open)
		s->next_open->pprev = s->pprev;
	pthread_mutex_unlock(&lock);
	free(s->pending);
	free(s);
}

/* Under the lock: the next event @s may see, as new text, or NULL. */
static char *next_text(struct dpd_sse *s)
{
	char buf[96];

	if (next_id > EV_RING && s->next < next_id - EV_RING) {
		snprintf(buf, sizeof(buf), ": missed %llu events\n\n",
			 (unsigned long long)(next_id - EV_RING - s->next));
		s->next = next_id - EV_RING;
		return strdup(buf);
	}
	while (s->next < next_id) {
		struct event *e = &ring[s->next % EV_RING];

		s->next++;
		if (cred_may(&s->cred, e->owner, e->group, e->mode, DPD_PERM_READ))
			return strdup(e->text);
	}
	return NULL;
}

/*
 * sse_read - libmicrohttpd's content reader: copy what is pending, or
 * wait (in this connection's thread) for the next event, a keepalive or
 * shutdown.  Returns bytes, or -1 (end of stream) when stopping.
 */
ssize_t sse_read(struct dpd_sse *s, char *buf, size_t max)
{
	struct timespec ts;
	size_t n;

	pthread_mutex_lock(&lock);
	while (!s->pending && !stopping) {
		s->pending = next_text(s);
		if (s->pending) {
			s->len = strlen(s->pending);
			s->off = 0;
			break;
		}
		if (time(NULL) - s->last_sent >= EV_KEEPALIVE) {
			s->pending = strdup(": keepalive\n\n");
			if (s->pending) {
				s->len = strlen(s->pending);
				s->off = 0;
			}
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&cond, &lock, &ts);
	}
	if (stopping) {
		pthread_mutex_unlock(&lock);
		return -1;
	}
	pthread_mutex_unlock(&lock);
	if (!s->pending)
		return 0;
	n = s->len - s->off;
	if (n > max)
		n = max;
	memcpy(buf, s->pending + s->off, n);
	s->off += n;
	if (s->off == s->len) {
		free(s->pending);
		s->pending = NULL;
	}
	s->last_sent = time(NULL);
	return (ssize_t)n;
}

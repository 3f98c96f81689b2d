// SPDX-License-Identifier: GPL-2.0
/*
 * Moves: copy a range of one arena into another with dmaplane put, in
 * chunks, with progress events and a checksum of both ranges at the end.
 *
 * This slice moves between arenas of this node only: the daemon puts
 * from its source arena (a region buffer, DMAPLANE_OP_F_REGION) into the
 * destination arena's remote key through its own endpoint's name (the
 * module's local put path).  Moves to other nodes' arenas (the same puts
 * to a peer daemon's endpoint) are the next slice: asking for one is 501.
 *
 * One mover thread owns the endpoint's completion ring and runs the
 * queued moves one after another; a move holds both arenas (they cannot
 * be destroyed meanwhile: 409).  Cancel is checked between chunks.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <dmaplane.h>

#include "dmaplaned.h"

#define MOVE_KEEP	256		/* finished moves remembered */
#define MOVE_CHUNK	(1ULL << 20)	/* default chunk */
#define MOVE_CHUNK_MIN	4096ULL
#define MOVE_CHUNK_MAX	(64ULL << 20)
#define MOVE_WAIT_MS	30000		/* a chunk's completion, at most */

enum move_state { MOVE_QUEUED, MOVE_RUNNING, MOVE_DONE, MOVE_FAILED, MOVE_CANCELLED };
static const char *const state_names[] = {
	[MOVE_QUEUED] = "queued", [MOVE_RUNNING] = "running",
	[MOVE_DONE] = "done", [MOVE_FAILED] = "failed",
	[MOVE_CANCELLED] = "cancelled",
};

struct move {
	struct move *next;
	uint64_t id;
	char src[DPD_NAME_MAX + 1], dst[DPD_NAME_MAX + 1];
	uint64_t src_off, dst_off, len, chunk;
	uint64_t done;
	enum move_state state;
	bool cancel;
	char error[128];
	uint64_t checksum;
	struct timespec t0, t1;
	time_t created;
	uid_t uid;
	gid_t gid;
	bool admin;
	struct dpd_arena_ref s, d;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct move *moves;	/* newest first */
static uint64_t next_id = 1;
static bool stopping, started;
static pthread_t thread;
static uint32_t self_addr;
static const struct dpd_config *conf;

/* FNV-1a, 64 bits: the end-of-move comparison of source and destination */
static uint64_t fnv1a(const void *p, uint64_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--) {
		h ^= *b++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static double elapsed(const struct move *m)
{
	struct timespec now;
	const struct timespec *t1 = &m->t1;

	if (m->t0.tv_sec == 0)
		return 0;
	if (m->state == MOVE_RUNNING) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		t1 = &now;
	}
	return (double)(t1->tv_sec - m->t0.tv_sec) +
	       (double)(t1->tv_nsec - m->t0.tv_nsec) / 1e9;
}

static bool visible(const struct move *m, const struct dpd_cred *cred)
{
	return cred_admin(cred) || cred->uid == m->uid;
}

/* Under the lock. */
static json_t *move_json(const struct move *m)
{
	double secs = elapsed(m);
	char sum[24];
	json_t *o;

	o = json_pack("{s:I, s:s, s:s, s:{s:s, s:I}, s:{s:s, s:s, s:I}, s:I, s:I, "
		      "s:I, s:I, s:f, s:I}",
		      "id", (json_int_t)m->id, "state", state_names[m->state],
		      "node", conf->node_name,
		      "src", "arena", m->src, "offset", (json_int_t)m->src_off,
		      "dst", "node", conf->node_name, "arena", m->dst,
		      "offset", (json_int_t)m->dst_off,
		      "length", (json_int_t)m->len, "chunk", (json_int_t)m->chunk,
		      "bytes_done", (json_int_t)m->done,
		      "wire_bytes", (json_int_t)m->done,
		      "elapsed_seconds", secs, "created", (json_int_t)m->created);
	if (!o)
		return NULL;
	if (secs > 0)
		json_object_set_new(o, "mib_per_second",
				    json_real((double)m->done / secs / (1 << 20)));
	if (m->state == MOVE_DONE) {
		snprintf(sum, sizeof(sum), "%016" PRIx64, m->checksum);
		json_object_set_new(o, "checksum", json_string(sum));
		json_object_set_new(o, "checksum_algorithm", json_string("fnv1a64"));
	}
	if (m->state == MOVE_FAILED)
		json_object_set_new(o, "error", json_string(m->error));
	return o;
}

static void post(const char *type, struct move *m)
{
	json_t *o;

	pthread_mutex_lock(&lock);
	o = move_json(m);
	pthread_mutex_unlock(&lock);
	/* Visible to the mover's uid and to administrators. */
	events_post(type, NULL, m->uid, m->gid, 0600, o);
}

/* Put @m's range, chunk by chunk, and compare checksums at the end. */
static void run(struct move *m)
{
	struct dp_ep *ep = arenas_ep();
	struct dmaplane_cqe cqe;
	struct dmaplane_op op;
	uint64_t off, n, every, uc;
	int ret = 0, chunks = 0;

	every = m->len / 10 > m->chunk ? m->len / 10 : m->chunk;
	for (off = 0; off < m->len; off += n) {
		pthread_mutex_lock(&lock);
		if (m->cancel || stopping) {
			pthread_mutex_unlock(&lock);
			ret = -ECANCELED;
			break;
		}
		pthread_mutex_unlock(&lock);
		n = m->len - off < m->chunk ? m->len - off : m->chunk;
		dp_prep_put(&op, self_addr, m->d.rkey, m->dst_off + off,
			    (void *)(uintptr_t)(m->src_off + off), n, m->id);
		dp_prep_set_region(&op, m->s.handle);
		ret = dp_submit(ep, &op, 1);
		if (ret < 0) {
			snprintf(m->error, sizeof(m->error), "put at %" PRIu64 ": %s",
				 off, strerror(-ret));
			break;
		}
		ret = dp_wait(ep, &cqe, 1, MOVE_WAIT_MS);
		if (ret <= 0) {
			snprintf(m->error, sizeof(m->error), "put at %" PRIu64 ": %s",
				 off, ret ? strerror(-ret) : "no completion in 30 s");
			ret = ret ? ret : -ETIMEDOUT;
			break;
		}
		if (cqe.status || cqe.ctx != m->id) {
			ret = cqe.status ? cqe.status : -EPROTO;
			snprintf(m->error, sizeof(m->error), "put at %" PRIu64 ": %s",
				 off, strerror(-ret));
			break;
		}
		pthread_mutex_lock(&lock);
		uc = m->done / every;
		m->done += n;
		pthread_mutex_unlock(&lock);
		if (m->done / every != uc && m->done < m->len)
			post("move.progress", m);
		chunks++;
		ret = 0;
	}
	if (!ret && fnv1a((char *)m->s.ptr + m->src_off, m->len) !=
		    (m->checksum = fnv1a((char *)m->d.ptr + m->dst_off, m->len))) {
		snprintf(m->error, sizeof(m->error),
			 "checksum of the destination differs from the source's");
		ret = -EIO;
	}
	pthread_mutex_lock(&lock);
	clock_gettime(CLOCK_MONOTONIC, &m->t1);
	m->state = !ret ? MOVE_DONE : ret == -ECANCELED ? MOVE_CANCELLED : MOVE_FAILED;
	pthread_mutex_unlock(&lock);
	arena_release(m->src);
	arena_release(m->dst);
	log_info("move %" PRIu64 " %s -> %s: %s, %" PRIu64 " of %" PRIu64 " bytes in %d chunks%s%s",
		 m->id, m->src, m->dst, state_names[m->state], m->done, m->len,
		 chunks, m->error[0] ? ": " : "", m->error);
	post(m->state == MOVE_DONE ? "move.done" : m->state == MOVE_CANCELLED ?
	     "move.cancelled" : "move.failed", m);
}

/* Forget the oldest finished moves beyond MOVE_KEEP (under the lock). */
static void prune(void)
{
	struct move **pp = &moves, *m;
	unsigned int n = 0;

	while ((m = *pp)) {
		if (++n > MOVE_KEEP && m->state != MOVE_QUEUED && m->state != MOVE_RUNNING) {
			*pp = m->next;
			free(m);
			continue;
		}
		pp = &m->next;
	}
}

static void *mover(void *arg)
{
	struct move *m, *next;

	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		next = NULL;
		for (m = moves; m; m = m->next)	/* oldest queued one */
			if (m->state == MOVE_QUEUED)
				next = m;
		if (stopping)
			break;
		if (!next) {
			pthread_cond_wait(&cond, &lock);
			continue;
		}
		next->state = MOVE_RUNNING;
		clock_gettime(CLOCK_MONOTONIC, &next->t0);
		pthread_mutex_unlock(&lock);
		post("move.started", next);
		run(next);
		pthread_mutex_lock(&lock);
		prune();
	}
	/* Stopping: what never ran is cancelled. */
	for (m = moves; m; m = m->next) {
		if (m->state == MOVE_QUEUED) {
			m->state = MOVE_CANCELLED;
			arena_release(m->src);
			arena_release(m->dst);
		}
	}
	pthread_mutex_unlock(&lock);
	return NULL;
}

/*
 * moves_start - set up the daemon's endpoint for put (its security
 * domain, its own address) and start the mover.  Without a device, or a
 * module without region buffers, moves are not offered (0, and POST
 * /v1/moves answers 503).
 */
int moves_start(const struct dpd_config *cfg)
{
	struct dp_ep *ep = arenas_ep();
	struct dmaplane_info info;
	struct dmaplane_name name;
	int ret;

	conf = cfg;
	if (!ep)
		return 0;
	ret = dp_info(ep, &info);
	if (ret)
		return ret;
	if (!(info.caps & DMAPLANE_CAP_RMA) || !(info.caps & DMAPLANE_CAP_REGION_BUF)) {
		log_warn("the module has no put from region buffers: no moves");
		return 0;
	}
	ret = dp_ep_setup(ep, 0, 0);
	if (!ret)
		ret = dp_getname(ep, &name);
	if (!ret)
		ret = dp_av_insert(ep, &name, &self_addr);
	if (ret) {
		log_err("endpoint set-up for moves: %s", strerror(-ret));
		return ret;
	}
	ret = pthread_create(&thread, NULL, mover, NULL);
	if (ret)
		return -ret;
	started = true;
	return 0;
}

/* moves_stop - cancel what runs, forget the rest (before arenas_fini()) */
void moves_stop(void)
{
	struct move *m;

	pthread_mutex_lock(&lock);
	stopping = true;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	if (started)
		pthread_join(thread, NULL);
	started = false;
	pthread_mutex_lock(&lock);
	while ((m = moves)) {
		moves = m->next;
		free(m);
	}
	pthread_mutex_unlock(&lock);
}

static int json_u64(json_t *v, uint64_t *out, bool size_units)
{
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (size_units && json_is_string(v))
		return parse_size(json_string_value(v), out);
	return -EINVAL;
}

/* {"arena": NAME, "offset": N, "node": NAME} */
static int endpoint(json_t *o, char *arena, uint64_t *off, bool *remote,
		    char *msg, size_t msglen, const char *which)
{
	const char *key;
	json_t *v;

	*off = 0;
	arena[0] = '\0';
	if (!json_is_object(o)) {
		snprintf(msg, msglen, "%s: an object {\"arena\": ..., \"offset\": ...}", which);
		return -EINVAL;
	}
	json_object_foreach(o, key, v) {
		if (!strcmp(key, "arena") && json_is_string(v) &&
		    strlen(json_string_value(v)) == json_string_length(v) &&
		    name_valid(json_string_value(v))) {
			strcpy(arena, json_string_value(v));
		} else if (!strcmp(key, "offset") && !json_u64(v, off, true)) {
			continue;
		} else if (!strcmp(key, "offset") && json_is_integer(v) &&
			   json_integer_value(v) == 0) {
			continue;
		} else if (!strcmp(key, "node") && json_is_string(v)) {
			if (strcmp(json_string_value(v), conf->node_name))
				*remote = true;
		} else {
			snprintf(msg, msglen, "%s: bad or unknown key \"%.64s\"", which, key);
			return -EINVAL;
		}
	}
	if (!arena[0]) {
		snprintf(msg, msglen, "%s: needs an arena", which);
		return -EINVAL;
	}
	return 0;
}

/*
 * move_create - POST /v1/moves: queue a move described by @req.  Returns
 * the move's JSON, or NULL with *@err -EINVAL (with @msg), -ERANGE,
 * -EOPNOTSUPP (another node's arena: the next slice), -ENODEV, -ENOENT,
 * -EACCES (@cred lacks r on the source or w on the destination).
 */
json_t *move_create(json_t *req, const struct dpd_cred *cred, int *err,
		    char *msg, size_t msglen)
{
	struct move *m;
	const char *key;
	json_t *v, *o;
	bool remote = false, have_len = false;
	uint64_t end;

	*err = -EINVAL;
	msg[0] = '\0';
	if (!started) {
		*err = -ENODEV;
		return NULL;
	}
	if (!json_is_object(req)) {
		snprintf(msg, msglen, "a move is a JSON object");
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		*err = -ENOMEM;
		return NULL;
	}
	m->chunk = MOVE_CHUNK;
	json_object_foreach(req, key, v) {
		if (!strcmp(key, "src"))
			*err = endpoint(v, m->src, &m->src_off, &remote, msg, msglen, "src");
		else if (!strcmp(key, "dst"))
			*err = endpoint(v, m->dst, &m->dst_off, &remote, msg, msglen, "dst");
		else if (!strcmp(key, "length"))
			*err = (have_len = true, json_u64(v, &m->len, true));
		else if (!strcmp(key, "chunk"))
			*err = json_u64(v, &m->chunk, true);
		else
			*err = -EINVAL;
		if (*err) {
			if (!msg[0])
				snprintf(msg, msglen, "bad or unknown key \"%.64s\"", key);
			goto fail;
		}
	}
	*err = -EINVAL;
	if (!m->src[0] || !m->dst[0] || !have_len || !m->len) {
		snprintf(msg, msglen, "a move needs src, dst and a non-zero length");
		goto fail;
	}
	if (m->chunk < MOVE_CHUNK_MIN || m->chunk > MOVE_CHUNK_MAX) {
		snprintf(msg, msglen, "chunk: 4096 to 64M");
		goto fail;
	}
	if (remote) {
		*err = -EOPNOTSUPP;
		snprintf(msg, msglen, "moves to or from other nodes are not implemented yet");
		goto fail;
	}
	*err = arena_hold(m->src, cred, DPD_PERM_READ, &m->s);
	if (*err)
		goto fail;
	*err = arena_hold(m->dst, cred, DPD_PERM_WRITE, &m->d);
	if (*err)
		goto release_src;
	*err = -ERANGE;
	if (__builtin_add_overflow(m->src_off, m->len, &end) || end > m->s.size ||
	    __builtin_add_overflow(m->dst_off, m->len, &end) || end > m->d.size) {
		snprintf(msg, msglen, "range beyond an arena");
		goto release;
	}
	if (!strcmp(m->src, m->dst) && m->src_off < m->dst_off + m->len &&
	    m->dst_off < m->src_off + m->len) {
		*err = -EINVAL;
		snprintf(msg, msglen, "source and destination ranges overlap");
		goto release;
	}
	m->uid = cred->uid;
	m->gid = cred->gid;
	m->admin = cred_admin(cred);
	m->created = time(NULL);
	pthread_mutex_lock(&lock);
	m->id = next_id++;
	m->next = moves;
	moves = m;
	o = move_json(m);
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	*err = o ? 0 : -ENOMEM;
	return o;

release:
	arena_release(m->dst);
release_src:
	arena_release(m->src);
fail:
	free(m);
	return NULL;
}

json_t *move_get_json(uint64_t id, const struct dpd_cred *cred, int *err)
{
	struct move *m;
	json_t *o = NULL;

	*err = -ENOENT;
	pthread_mutex_lock(&lock);
	for (m = moves; m; m = m->next) {
		if (m->id != id)
			continue;
		if (!visible(m, cred)) {
			*err = -EACCES;
			break;
		}
		o = move_json(m);
		*err = o ? 0 : -ENOMEM;
		break;
	}
	pthread_mutex_unlock(&lock);
	return o;
}

json_t *moves_list_json(const struct dpd_cred *cred)
{
	json_t *arr = json_array();
	struct move *m;

	if (!arr)
		return NULL;
	pthread_mutex_lock(&lock);
	for (m = moves; m; m = m->next)
		if (visible(m, cred))
			json_array_append_new(arr, move_json(m));
	pthread_mutex_unlock(&lock);
	return arr;
}

/*
 * move_cancel - DELETE /v1/moves/ID: a queued move is cancelled at once,
 * a running one after its current chunk.  Returns 0, -ENOENT, -EACCES,
 * -EALREADY (it has ended).
 */
int move_cancel(uint64_t id, const struct dpd_cred *cred)
{
	char src[DPD_NAME_MAX + 1], dst[DPD_NAME_MAX + 1];
	struct move *m;
	json_t *o = NULL;
	bool release = false;
	uid_t uid = 0;
	gid_t gid = 0;
	int ret = -ENOENT;

	pthread_mutex_lock(&lock);
	for (m = moves; m; m = m->next) {
		if (m->id != id)
			continue;
		if (!visible(m, cred))
			ret = -EACCES;
		else if (m->state == MOVE_QUEUED) {
			/* m may be forgotten once the lock is dropped: copy. */
			m->state = MOVE_CANCELLED;
			release = true;
			strcpy(src, m->src);
			strcpy(dst, m->dst);
			uid = m->uid;
			gid = m->gid;
			o = move_json(m);
			ret = 0;
		} else if (m->state == MOVE_RUNNING) {
			m->cancel = true;
			ret = 0;
		} else {
			ret = -EALREADY;
		}
		break;
	}
	pthread_mutex_unlock(&lock);
	if (release) {
		arena_release(src);
		arena_release(dst);
		events_post("move.cancelled", NULL, uid, gid, 0600, o);
	}
	return ret;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * Moves: copy a range of one arena into another with dmaplane put, in
 * chunks, several in flight, with progress events and a strong checksum
 * (xxh128, libxxhash) of both ranges at the end.
 *
 * One end is an arena of this node, the other an arena of this node or
 * of a peer's (peer.c).  When the source is of this node the daemon puts from its source arena
 * (a region buffer, DMAPLANE_OP_F_REGION) into the destination arena's
 * remote key: through its own endpoint's name for an arena of this node
 * (the module's local put path), to the peer daemon's endpoint for a
 * peer's arena (the module's transport).  A move to a peer first asks
 * the peer daemon for a grant (peer.c explains the access model: the
 * requester needs w on the destination arena, the peer daemon checks it)
 * and ends by asking it for the xxh128 of the destination range.  A move
 * out of a peer's arena (a pull) gets from it into the destination
 * arena of this node instead, under a read grant (the requester needs r
 * on the peer's arena), and compares the peer's xxh128 of the source
 * range with its own of the destination's; it is never deduplicated
 * (the source's chunks would have to be cut where the source is: ask
 * that node's daemon for a deduplicated move).  A peer
 * that is down fails the request at once (503); one that dies during the
 * move fails it, with the cause (the put's completion error, or no
 * completion in MOVE_WAIT_MS), and is heartbeaten at once (or marked
 * down, on a timeout).
 *
 * One mover thread owns the endpoint's completion ring and runs the
 * queued moves one after another, up to MOVE_WINDOW chunks in flight; a
 * move holds its arenas of this node (they cannot be destroyed
 * meanwhile: 409), the peer's grant holds the peer's.  Cancel is checked
 * between chunks; the chunks in flight are waited for.
 *
 * A deduplicated move ("dedup": true, Documentation/dedup.rst) first cuts
 * the source range into content-defined chunks (dedup.c), asks the
 * destination's daemon which of them it holds in its arenas (this
 * daemon's index for an arena of this node, the peer's over the mesh,
 * POST /v1/mesh/dedup, under the move's grant), plans, has the held
 * chunks copied at the destination (locally, or POST /v1/mesh/dedup/copy)
 * and puts only the rest.  The end check is the same as a plain move's.
 * Every move reports its logical bytes (the range) and its wire bytes
 * (what was put, plus a deduplicated move's chunk list and answers as
 * meta_bytes); a plain move's wire bytes are its logical bytes.  After a
 * completed move the destination range is indexed (this daemon's index,
 * or the peer's when the grant is released with ?index=1).
 *
 * Locking: the mutex "lock" protects the move list and every field of a
 * move the mover changes while it runs (state, done, cancel, error,
 * checksum, t1, the figures); the fields set before a move is listed
 * never change.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <xxhash.h>
#include <dmaplane.h>

#include "dmaplaned.h"
#include "dedup.h"

#define MOVE_KEEP	256		/* finished moves remembered */
#define MOVE_CHUNK	(1ULL << 20)	/* default chunk */
#define MOVE_CHUNK_MIN	4096ULL
#define MOVE_CHUNK_MAX	(64ULL << 20)
#define MOVE_WAIT_MS	30000		/* a chunk's completion, at most */
#define MOVE_WINDOW	8		/* chunks in flight */
#define MOVE_GRANT_MS	10000		/* the peer's grant, at most */
#define MOVE_SUM_MS	120000		/* the peer's checksum, at most */
#define DEDUP_BATCH	2048		/* chunks a lookup: 54 KiB of base64 < DPD_BODY_MAX */
#define DEDUP_OPS	1024		/* local ops a copy request: < DPD_BODY_MAX */

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
	char dst_node[DPD_NAME_MAX + 1];	/* "" for this node */
	char src_node[DPD_NAME_MAX + 1];	/* "" for this node, else a pull */
	char url[DPD_NAME_MAX + 32];	/* the peer daemon's, for a remote move */
	uint64_t grant, rkey;		/* the peer's grant and its arena's key */
	uint32_t raddr;			/* the peer daemon's endpoint */
	uint32_t rarena;		/* the peer's arena's index id (its grant) */
	uint64_t src_off, dst_off, len, chunk;
	bool dedup;
	uint64_t done;			/* logical bytes in place at the destination */
	/* figures: put payload, dedup metadata, bytes copied or found at the
	 * destination, and the dedup engine's counts */
	uint64_t wire, meta, local, inplace;
	struct dd_stats dds;
	struct dd_lookup_stats lst;
	enum move_state state;
	bool cancel;
	char error[256];
	char checksum[40];
	struct timespec t0, t1;
	time_t created;
	uid_t uid;
	gid_t gid;
	bool admin;
	struct dpd_arena_ref s, d;
};

/* lock protects the move list and the mover-written fields (header) */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static struct move *moves;	/* newest first */
static uint64_t next_id = 1;
static bool stopping, started;
static pthread_t thread;
static uint32_t self_addr;
static struct dmaplane_name self_name;
static const struct dpd_config *conf;

/*
 * xxh128_hex - XXH3 128 bits of @len bytes at @p as 32 hex digits (its
 * canonical, big-endian form); the end-of-move comparison.
 */
int xxh128_hex(const void *p, uint64_t len, char *hex, size_t hexlen)
{
	XXH128_canonical_t c;
	size_t i;

	if (hexlen < 33)
		return -EINVAL;
	XXH128_canonicalFromHash(&c, XXH3_128bits(p, len));
	for (i = 0; i < sizeof(c.digest); i++)
		snprintf(hex + 2 * i, 3, "%02x", c.digest[i]);
	return 0;
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

/* The peer node of a move across nodes ("" for a move within this node). */
static const char *peer_of(const struct move *m)
{
	return m->src_node[0] ? m->src_node : m->dst_node;
}

/* A move out of a peer's arena: gets into the destination, here. */
static bool is_pull(const struct move *m)
{
	return m->src_node[0];
}

static bool visible(const struct move *m, const struct dpd_cred *cred)
{
	return cred_admin(cred) || cred->uid == m->uid;
}

/* Under the lock. */
static json_t *move_json(const struct move *m)
{
	double secs = elapsed(m);
	json_t *o;

	o = json_pack("{s:I, s:s, s:s, s:{s:s, s:s, s:I}, s:{s:s, s:s, s:I}, s:I, s:I, "
		      "s:I, s:I, s:f, s:I}",
		      "id", (json_int_t)m->id, "state", state_names[m->state],
		      "node", conf->node_name,
		      "src", "node", m->src_node[0] ? m->src_node : conf->node_name,
		      "arena", m->src, "offset", (json_int_t)m->src_off,
		      "dst", "node", m->dst_node[0] ? m->dst_node : conf->node_name,
		      "arena", m->dst,
		      "offset", (json_int_t)m->dst_off,
		      "length", (json_int_t)m->len, "chunk", (json_int_t)m->chunk,
		      "bytes_done", (json_int_t)m->done,
		      "wire_bytes", (json_int_t)m->wire,
		      "elapsed_seconds", secs, "created", (json_int_t)m->created);
	if (!o)
		return NULL;
	json_object_set_new(o, "dedup", json_boolean(m->dedup));
	json_object_set_new(o, "logical_bytes", json_integer((json_int_t)m->len));
	json_object_set_new(o, "meta_bytes", json_integer((json_int_t)m->meta));
	/*
	 * The wire speed counts what crossed the wire (payload and the dedup
	 * metadata); the effective speed counts the logical bytes settled,
	 * including those the destination already held: it is what the move
	 * looked like to its caller, not a speed of any link.
	 */
	json_object_set_new(o, "wire_bytes_per_second",
			    json_real(secs > 0 ? (double)(m->wire + m->meta) / secs : 0));
	json_object_set_new(o, "effective_bytes_per_second",
			    json_real(secs > 0 ? (double)m->done / secs : 0));
	if (secs > 0)	/* the effective speed in MiB/s, as before dedup */
		json_object_set_new(o, "mib_per_second",
				    json_real((double)m->done / secs / (1 << 20)));
	if (m->dedup)
		json_object_set_new(o, "dedup_stats", json_pack(
			"{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			"chunks", (json_int_t)m->dds.chunks,
			"hit_chunks", (json_int_t)m->dds.hit_chunks,
			"local_bytes", (json_int_t)m->local,
			"in_place_bytes", (json_int_t)m->inplace,
			"verify_failed", (json_int_t)m->dds.verify_failed,
			"stale", (json_int_t)m->lst.stale,
			"overlap_skipped", (json_int_t)m->lst.overlap_skipped,
			"wire_ops", (json_int_t)m->dds.wire_ops,
			"local_ops", (json_int_t)m->dds.local_ops));
	if (m->state == MOVE_DONE) {
		json_object_set_new(o, "checksum", json_string(m->checksum));
		json_object_set_new(o, "checksum_algorithm", json_string("xxh128"));
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

/* Set @m's error (first one wins); under no lock: only the mover writes it. */
#define move_error(m, ...) do { if (!(m)->error[0]) \
	snprintf((m)->error, sizeof((m)->error), __VA_ARGS__); } while (0)

/*
 * The end of a move across nodes: the peer's checksum of its range (the
 * destination's, or a pull's source's).
 */
static int remote_sum(struct move *m, char *sum, size_t sumlen)
{
	char path[DPD_NAME_MAX + 96], err[160] = "";
	json_t *o = NULL;
	const char *v;
	long st;
	int ret;

	snprintf(path, sizeof(path), "/v1/arenas/%s/xxh128?offset=%" PRIu64
		 "&length=%" PRIu64, is_pull(m) ? m->src : m->dst,
		 is_pull(m) ? m->src_off : m->dst_off, m->len);
	ret = mesh_http(peer_of(m), m->url, "GET", path, NULL, MOVE_SUM_MS, &st, &o, err, sizeof(err));
	if (ret) {
		move_error(m, "checksum from node %s: %s", peer_of(m), err);
		peer_failed(peer_of(m), err, ret == -ETIMEDOUT);
		return ret;
	}
	v = json_string_value(json_object_get(o, "xxh128"));
	if (st != 200 || !v || strlen(v) >= sumlen) {
		move_error(m, "checksum from node %s: status %ld: %.80s", peer_of(m), st,
			   json_string_value(json_object_get(o, "error")) ?: "no xxh128");
		json_decref(o);
		return -EPROTO;
	}
	strcpy(sum, v);
	json_decref(o);
	return 0;
}

/*
 * Release a remote move's grant and address (best effort: the lease
 * ends); @index: the move completed, the peer indexes the range.
 */
static void remote_release(struct move *m, bool index)
{
	char path[64], err[160];
	long st;

	snprintf(path, sizeof(path), "/v1/mesh/grants/%" PRIu64 "%s", m->grant,
		 index ? "?index=1" : "");
	if (mesh_http(peer_of(m), m->url, "DELETE", path, NULL, 5000, &st, NULL, err, sizeof(err)))
		log_warn("move %" PRIu64 ": grant %" PRIu64 " of node %s not released: %s",
			 m->id, m->grant, peer_of(m), err);
	if (m->raddr != DMAPLANE_AV_ANY)
		dp_av_remove(arenas_ep(), m->raddr);
}

static bool cancelled(struct move *m)
{
	bool c;

	pthread_mutex_lock(&lock);
	c = m->cancel || stopping;
	pthread_mutex_unlock(&lock);
	return c;
}

/* Add @n settled logical bytes (@wire of them put) to @m; true when a
 * progress event is due (every tenth of the move, at least a chunk). */
static bool settled(struct move *m, uint64_t n, uint64_t wire)
{
	uint64_t every = m->len / 10 > m->chunk ? m->len / 10 : m->chunk, before;

	pthread_mutex_lock(&lock);
	before = m->done / every;
	m->done += n;
	m->wire += wire;
	n = m->done;
	pthread_mutex_unlock(&lock);
	return n / every != before && n < m->len;
}

/*
 * remote_lookup - ask @m's destination node which chunks of @l it holds
 * (POST /v1/mesh/dedup under the move's grant), DEDUP_BATCH chunks a
 * request.  Fills @ans, adds the node's counts to @lst and the encoded
 * request and answer sizes (dedup.h's encoding, not the JSON and base64
 * around them) to *@meta.  Returns 0, -ECANCELED, or an error (then
 * the caller moves every chunk).
 */
static int remote_lookup(struct move *m, const struct dd_chunk_list *l,
			 struct dd_answer *ans, struct dd_lookup_stats *lst, uint64_t *meta)
{
	struct dd_chunk *batch;
	uint8_t *buf, *abuf;
	char fp[24], err[160];
	json_t *req, *o;
	size_t k, j, n, alen;
	const char *a;
	char *b64;
	long st;
	int ret = 0;

	batch = calloc(DEDUP_BATCH, sizeof(*batch));
	buf = malloc(DEDUP_BATCH * 20);
	if (!batch || !buf) {
		free(batch);
		free(buf);
		return -ENOMEM;
	}
	snprintf(fp, sizeof(fp), "%016" PRIx64, dd_chunker_fingerprint(arenas_chunker()));
	for (k = 0; k < l->n && !ret; k += n) {
		if (cancelled(m)) {
			ret = -ECANCELED;
			break;
		}
		n = l->n - k < DEDUP_BATCH ? l->n - k : DEDUP_BATCH;
		for (j = 0; j < n; j++) {	/* the encoding starts at 0 */
			batch[j] = l->v[k + j];
			batch[j].off -= l->v[k].off;
		}
		ret = dd_request_encode(batch, n, buf, n * 20);
		b64 = ret ? NULL : b64_encode(buf, n * 20);
		req = b64 ? json_pack("{s:I, s:I, s:s, s:s}", "grant", (json_int_t)m->grant,
				      "base", (json_int_t)l->v[k].off, "chunks", b64,
				      "chunker", fp) : NULL;
		free(b64);
		if (!req) {
			ret = ret ? ret : -ENOMEM;
			break;
		}
		ret = mesh_http(peer_of(m), m->url, "POST", "/v1/mesh/dedup", req, MOVE_SUM_MS, &st, &o,
				err, sizeof(err));
		json_decref(req);
		if (ret) {
			log_warn("move %" PRIu64 ": dedup lookup on node %s: %s", m->id,
				 m->dst_node, err);
			break;
		}
		a = json_string_value(json_object_get(o, "answers"));
		if (st != 200 || !a || b64_decode(a, strlen(a), &abuf, &alen)) {
			log_warn("move %" PRIu64 ": dedup lookup on node %s: status %ld: %.80s",
				 m->id, m->dst_node, st,
				 json_string_value(json_object_get(o, "error")) ?: "no answers");
			json_decref(o);
			ret = -EPROTO;
			break;
		}
		ret = dd_answer_decode(abuf, alen, batch, n, ans + k);
		free(abuf);
		*meta += n * 20 + alen;
		lst->stale += (uint64_t)json_integer_value(json_object_get(o, "stale"));
		lst->overlap_skipped +=
			(uint64_t)json_integer_value(json_object_get(o, "overlap_skipped"));
		json_decref(o);
	}
	free(batch);
	free(buf);
	return ret;
}

/*
 * remote_copy - have @m's destination node copy the plan's local ops
 * (POST /v1/mesh/dedup/copy), DEDUP_OPS a request; an op it could not
 * copy, or all of a request it did not answer, becomes a wire op.
 */
static int remote_copy(struct move *m, struct dd_op *ops, size_t nops)
{
	size_t k = 0, j, idx[DEDUP_OPS], n;
	uint64_t bytes, copied = 0;
	char err[160];
	json_t *arr, *req, *o, *f, *v;
	long st;
	int ret;

	while (k < nops) {
		if (cancelled(m))
			return -ECANCELED;
		arr = json_array();
		for (n = 0, bytes = 0; k < nops && n < DEDUP_OPS && arr; k++) {
			if (ops[k].kind != DD_OP_LOCAL)
				continue;
			json_array_append_new(arr, json_pack("[I, I, I, I]",
				(json_int_t)ops[k].arena, (json_int_t)ops[k].src_off,
				(json_int_t)ops[k].dst_off, (json_int_t)ops[k].len));
			idx[n++] = k;
			bytes += ops[k].len;
		}
		req = arr ? json_pack("{s:I, s:o}", "grant", (json_int_t)m->grant, "ops", arr) :
		      NULL;
		if (!req)
			return -ENOMEM;
		if (!n) {
			json_decref(req);
			break;
		}
		ret = mesh_http(peer_of(m), m->url, "POST", "/v1/mesh/dedup/copy", req, MOVE_SUM_MS, &st,
				&o, err, sizeof(err));
		json_decref(req);
		f = ret || st != 200 ? NULL : json_object_get(o, "failed");
		if (!json_is_array(f)) {
			log_warn("move %" PRIu64 ": dedup copy on node %s: %s", m->id,
				 m->dst_node, ret ? err : "no answer");
			json_decref(o);
			for (j = 0; j < n; j++) {
				ops[idx[j]].kind = DD_OP_WIRE;
				ops[idx[j]].src_off = ops[idx[j]].dst_off - m->dst_off;
			}
			continue;
		}
		json_array_foreach(f, j, v) {
			json_int_t i = json_integer_value(v);

			if (i < 0 || (size_t)i >= n || ops[idx[i]].kind != DD_OP_LOCAL)
				continue;
			ops[idx[i]].kind = DD_OP_WIRE;
			ops[idx[i]].src_off = ops[idx[i]].dst_off - m->dst_off;
			bytes -= ops[idx[i]].len;
		}
		json_decref(o);
		copied += bytes;
		if (settled(m, bytes, 0))
			post("move.progress", m);
	}
	pthread_mutex_lock(&lock);
	m->local = copied;
	pthread_mutex_unlock(&lock);
	return 0;
}

/*
 * put_ops - put the DD_OP_WIRE ops of @ops (the whole range, for a plain
 * move; a pull gets it), each in pieces of at most a chunk, up to
 * MOVE_WINDOW in flight.
 * A completion's ctx is the move's id and the piece's slot, so that a
 * stale completion (of a move that timed out) is told apart.  Returns 0,
 * -ECANCELED or the first error (in @m's error).
 */
static int put_ops(struct move *m, const struct dd_op *ops, size_t nops, int *pieces)
{
	struct dp_ep *ep = arenas_ep();
	struct dmaplane_cqe cqes[MOVE_WINDOW];
	uint64_t lens[MOVE_WINDOW] = { 0 }, offs[MOVE_WINDOW];
	const char *where = peer_of(m)[0] ? peer_of(m) : conf->node_name;
	const char *verb = is_pull(m) ? "get" : "put", *dir = is_pull(m) ? "from" : "to";
	uint32_t dest = peer_of(m)[0] ? m->raddr : self_addr;
	uint64_t rkey = peer_of(m)[0] ? m->rkey : m->d.rkey;
	struct dmaplane_op op;
	uint64_t at = 0, n, sub = 0;
	unsigned int inflight = 0, slot;
	size_t k = 0;
	int ret = 0, got, i;

	while (k < nops || inflight) {
		if (!ret && cancelled(m))
			ret = -ECANCELED;
		while (!ret && inflight < MOVE_WINDOW && k < nops) {
			if (ops[k].kind != DD_OP_WIRE) {
				k++;
				continue;
			}
			for (slot = 0; lens[slot]; slot++)
				;
			sub = ops[k].src_off + at;	/* offset in the range */
			n = ops[k].len - at < m->chunk ? ops[k].len - at : m->chunk;
			if (is_pull(m)) {
				dp_prep_get(&op, dest, rkey, m->src_off + sub,
					    (void *)(uintptr_t)(ops[k].dst_off + at), n,
					    (m->id << 8) | slot);
				dp_prep_set_region(&op, m->d.handle);
			} else {
				dp_prep_put(&op, dest, rkey, ops[k].dst_off + at,
					    (void *)(uintptr_t)(m->src_off + sub), n,
					    (m->id << 8) | slot);
				dp_prep_set_region(&op, m->s.handle);
			}
			got = dp_submit(ep, &op, 1);
			if (got == -EAGAIN && inflight)
				break;	/* ring full: take completions first */
			if (got < 0) {
				ret = got;
				move_error(m, "%s at %" PRIu64 " %s node %s: %s", verb, sub,
					   dir, where, strerror(-got));
				break;
			}
			lens[slot] = n;
			offs[slot] = sub;
			inflight++;
			at += n;
			if (at == ops[k].len) {
				k++;
				at = 0;
			}
		}
		if (!inflight)
			break;
		got = dp_wait(ep, cqes, MOVE_WINDOW, MOVE_WAIT_MS);
		if (got <= 0) {
			move_error(m, "%s at %" PRIu64 " %s node %s: %s", verb, sub, dir, where,
				   got ? strerror(-got) : "timeout: no completion in 30 s");
			ret = ret && ret != -ECANCELED ? ret : got ? got : -ETIMEDOUT;
			if (peer_of(m)[0])
				peer_failed(peer_of(m), m->error, true);
			break;	/* what is in flight is stale now: ctx tells */
		}
		for (i = 0; i < got; i++) {
			slot = cqes[i].ctx & 0xff;
			if (cqes[i].ctx >> 8 != m->id || slot >= MOVE_WINDOW || !lens[slot])
				continue;	/* an earlier move's */
			if (cqes[i].status) {
				if (!ret || ret == -ECANCELED) {
					ret = cqes[i].status;
					move_error(m, "%s at %" PRIu64 " %s node %s: completion error: %s",
						   verb, offs[slot], dir, where, strerror(-ret));
					if (peer_of(m)[0])
						peer_failed(peer_of(m), m->error, false);
				}
			} else {
				(*pieces)++;
				if (settled(m, lens[slot], lens[slot]))
					post("move.progress", m);
			}
			lens[slot] = 0;
			inflight--;
		}
	}
	return ret;
}

/*
 * local_ops - have the destination copy the plan's DD_OP_LOCAL ops from
 * the bytes it holds: this daemon for an arena of this node, the peer's
 * otherwise.  An op whose source is gone meanwhile becomes a DD_OP_WIRE
 * op (put_ops() sends it).
 */
static int local_ops(struct move *m, struct dd_op *ops, size_t nops)
{
	uint64_t copied = 0;
	size_t k, nlocal = 0;
	int ret = 0;

	for (k = 0; k < nops; k++)
		nlocal += ops[k].kind == DD_OP_LOCAL;
	if (!nlocal)
		return 0;
	if (m->dst_node[0])
		return remote_copy(m, ops, nops);
	for (k = 0; k < nops && !ret; k++) {
		if (ops[k].kind != DD_OP_LOCAL)
			continue;
		if (cancelled(m)) {
			ret = -ECANCELED;
			break;
		}
		if (arena_local_copy(&ops[k], m->d.ptr)) {
			ops[k].kind = DD_OP_WIRE;
			ops[k].src_off = ops[k].dst_off - m->dst_off;
			continue;
		}
		copied += ops[k].len;
		if (settled(m, ops[k].len, 0))
			post("move.progress", m);
	}
	pthread_mutex_lock(&lock);
	m->local = copied;
	pthread_mutex_unlock(&lock);
	return ret;
}

/*
 * dedup_plan - chunk @m's source range into @l, ask the destination what
 * it holds, and plan (@plan: wire ops to put, local ops to copy there).
 * A destination that does not answer, or answers nonsense, gets a plain
 * move (every chunk a wire op), as dedup.h says.
 */
static int dedup_plan(struct move *m, struct dd_chunk_list *l, struct dd_plan *plan)
{
	const void *src = (const char *)m->s.ptr + m->src_off;
	struct dd_lookup_stats lst = { 0 };
	struct dd_answer *ans;
	uint64_t meta = 0;
	int ret;

	ret = dd_chunk_range(arenas_chunker(), src, m->len, l);
	if (ret) {
		move_error(m, "dedup: chunking the source: %s", strerror(-ret));
		return ret;
	}
	if (cancelled(m))
		return -ECANCELED;
	ans = calloc(l->n ? l->n : 1, sizeof(*ans));
	if (!ans) {
		move_error(m, "dedup: %s", strerror(ENOMEM));
		return -ENOMEM;
	}
	if (m->dst_node[0])
		ret = remote_lookup(m, l, ans, &lst, &meta);
	else
		ret = arena_index_lookup(l->v, l->n, m->d.id, m->dst_off, m->len, ans, &lst);
	if (ret == -ECANCELED) {
		free(ans);
		return ret;
	}
	if (ret) {
		log_warn("move %" PRIu64 ": dedup lookup: %s: moving every chunk", m->id,
			 strerror(-ret));
		memset(ans, 0, l->n * sizeof(*ans));
	}
	ret = dd_plan_build(l->v, l->n, ans, src, m->len,
			    m->dst_node[0] ? m->rarena : m->d.id, m->dst_off, m->chunk, plan);
	free(ans);
	if (ret) {
		move_error(m, "dedup: plan: %s", strerror(-ret));
		return ret;
	}
	pthread_mutex_lock(&lock);
	m->dds = plan->st;
	m->lst = lst;
	m->meta = meta;
	m->inplace = plan->st.inplace_bytes;
	pthread_mutex_unlock(&lock);
	if (plan->st.inplace_bytes && settled(m, plan->st.inplace_bytes, 0))
		post("move.progress", m);
	return 0;
}

/*
 * Release @m's arenas of this node and its peer's grant; @index: the
 * move completed, the peer indexes its destination range.
 */
static void release_ends(struct move *m, bool index)
{
	if (is_pull(m))
		remote_release(m, false);
	else
		arena_release(m->src);
	if (m->dst_node[0])
		remote_release(m, index);
	else
		arena_release(m->dst);
}

/*
 * Move @m: plan a deduplicated move, copy what the destination holds,
 * put the rest (the whole range for a plain move; a pull gets it),
 * compare checksums at the end, and index the destination range.
 */
static void run(struct move *m)
{
	const char *where = m->dst_node[0] ? m->dst_node : conf->node_name;
	const char *from = m->src_node[0] ? m->src_node : conf->node_name;
	struct dd_op whole = { .kind = DD_OP_WIRE, .dst_off = m->dst_off, .len = m->len };
	struct dd_chunk_list l = { 0 };
	struct dd_plan plan = { 0 };
	char src_sum[40], dst_sum[40];
	bool indexed = false;
	int ret = 0, chunks = 0;

	if (m->dedup) {
		ret = dedup_plan(m, &l, &plan);
		if (!ret)
			ret = local_ops(m, plan.ops, plan.n);
		if (!ret)
			ret = put_ops(m, plan.ops, plan.n, &chunks);
	} else {
		ret = put_ops(m, &whole, 1, &chunks);
	}
	/* The end check: each end's xxh128, a peer's from its daemon. */
	if (!ret && is_pull(m))
		ret = remote_sum(m, src_sum, sizeof(src_sum));
	else if (!ret)
		xxh128_hex((char *)m->s.ptr + m->src_off, m->len, src_sum, sizeof(src_sum));
	if (!ret && m->dst_node[0])
		ret = remote_sum(m, dst_sum, sizeof(dst_sum));
	else if (!ret)
		xxh128_hex((char *)m->d.ptr + m->dst_off, m->len, dst_sum, sizeof(dst_sum));
	if (!ret && strcmp(src_sum, dst_sum)) {
		move_error(m, "checksum of the destination differs from the source's");
		ret = -EIO;
	}
	/*
	 * The destination now holds the source's bytes: index them (with the
	 * chunks a deduplicated move already has).  A failed move leaves
	 * bytes the index may not trust there.
	 */
	if (!m->dst_node[0]) {
		if (!ret && !l.n)
			dd_chunk_range(arenas_chunker(), is_pull(m) ?
				       (char *)m->d.ptr + m->dst_off :
				       (char *)m->s.ptr + m->src_off, m->len, &l);
		if (!ret && l.n)
			indexed = !arena_index_add(m->d.id, m->dst_off, l.v, l.n);
		else
			arena_index_forget(m->d.id, m->dst_off, m->len);
	} else {
		indexed = !ret;	/* the peer indexes it: remote_release() */
	}
	dd_chunk_list_free(&l);
	dd_plan_free(&plan);
	pthread_mutex_lock(&lock);
	clock_gettime(CLOCK_MONOTONIC, &m->t1);
	if (!ret)
		strcpy(m->checksum, src_sum);
	m->state = !ret ? MOVE_DONE : ret == -ECANCELED ? MOVE_CANCELLED : MOVE_FAILED;
	pthread_mutex_unlock(&lock);
	release_ends(m, indexed);
	log_info("move %" PRIu64 " %s:%s -> %s:%s: %s, %" PRIu64 " of %" PRIu64
		 " bytes, %" PRIu64 " on the wire in %d %ss%s%s%s",
		 m->id, from, m->src, where, m->dst, state_names[m->state], m->done, m->len,
		 m->wire, chunks, is_pull(m) ? "get" : "put", indexed ? ", indexed" : "",
		 m->error[0] ? ": " : "", m->error);
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
			pthread_mutex_unlock(&lock);
			release_ends(m, false);
			pthread_mutex_lock(&lock);
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
	if (!ret)
		self_name = name;
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

/* {"arena": NAME, "offset": N, "node": NAME}; @node gets "" for this node */
static int endpoint(json_t *o, char *arena, uint64_t *off, char *node,
		    char *msg, size_t msglen, const char *which)
{
	const char *key;
	json_t *v;

	*off = 0;
	arena[0] = '\0';
	node[0] = '\0';
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
		} else if (!strcmp(key, "node") && json_is_string(v) &&
			   strlen(json_string_value(v)) == json_string_length(v) &&
			   name_valid(json_string_value(v))) {
			if (strcmp(json_string_value(v), conf->node_name))
				strcpy(node, json_string_value(v));
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
 * remote_grant - ask @m's peer node (the destination's, or a pull's
 * source's) for a grant of its arena for @cred (peer.c: the access
 * model; a read grant for a pull), and make its daemon's endpoint an
 * address.  Returns 0, or -ENOENT, -EACCES, -ERANGE, -EINVAL, -ENODEV,
 * -EHOSTDOWN with @msg saying why.
 */
static int remote_grant(struct move *m, const struct dpd_cred *cred,
			char *msg, size_t msglen)
{
	struct dmaplane_name ep;
	char err[160] = "";
	json_t *req, *o = NULL, *who;
	const char *e;
	long st;
	int ret;

	ret = peer_lookup(peer_of(m), m->url, sizeof(m->url), &ep, msg, msglen);
	if (ret)
		return ret;
	req = json_pack("{s:s, s:I, s:I, s:I, s:s}", "arena", is_pull(m) ? m->src : m->dst,
			"offset", (json_int_t)(is_pull(m) ? m->src_off : m->dst_off),
			"length", (json_int_t)m->len, "move", (json_int_t)m->id,
			"access", is_pull(m) ? "read" : "write");
	who = cred_json(cred);
	if (!req || !who || json_object_update(req, who)) {
		json_decref(req);
		json_decref(who);
		return -ENOMEM;
	}
	json_decref(who);
	ret = mesh_http(peer_of(m), m->url, "POST", "/v1/mesh/grants", req, MOVE_GRANT_MS, &st,
			&o, err, sizeof(err));
	json_decref(req);
	if (ret) {
		snprintf(msg, msglen, "node %s does not answer: %s", peer_of(m), err);
		peer_failed(peer_of(m), err, ret == -ETIMEDOUT);
		return ret == -ENOMEM ? ret : -EHOSTDOWN;
	}
	e = json_string_value(json_object_get(o, "error"));
	if (st != 201) {
		snprintf(msg, msglen, "node %s: %s", peer_of(m), e ? e : "refused");
		json_decref(o);
		return st == 403 || st == 401 ? -EACCES : st == 404 ? -ENOENT :
		       st == 400 ? -ERANGE : st == 409 ? -EBUSY : -ENODEV;
	}
	if (!json_is_integer(json_object_get(o, "grant")) ||
	    ep_name_from_json(json_object_get(o, "ep"), &ep) ||
	    sscanf(json_string_value(json_object_get(o, "rkey")) ?: "", "%" SCNx64,
		   &m->rkey) != 1) {
		snprintf(msg, msglen, "node %s: a grant without grant, ep or rkey", peer_of(m));
		json_decref(o);
		return -EHOSTDOWN;
	}
	m->grant = (uint64_t)json_integer_value(json_object_get(o, "grant"));
	m->rarena = (uint32_t)json_integer_value(json_object_get(o, "arena_id"));
	json_decref(o);
	m->raddr = DMAPLANE_AV_ANY;
	ret = dp_av_insert(arenas_ep(), &ep, &m->raddr);
	if (ret) {
		snprintf(msg, msglen, "node %s: its daemon's endpoint is unreachable: %s%s",
			 peer_of(m), strerror(-ret), ret == -ENETUNREACH ?
			 " (no module peer: fabric_address, dpctl peer add)" : "");
		remote_release(m, false);
		return -EHOSTDOWN;
	}
	return 0;
}

/*
 * Whether @uid has max_moves_per_uid moves queued or running: each holds
 * arenas (and a peer's grant) and the daemon's memory until it ends, so
 * one local user may not queue them without bound.  Under "lock".
 */
static bool over_limit(uid_t uid)
{
	unsigned int n = 0;
	struct move *m;

	if (!conf->max_moves_per_uid)
		return false;
	for (m = moves; m; m = m->next)
		if (m->uid == uid && !m->admin &&
		    (m->state == MOVE_QUEUED || m->state == MOVE_RUNNING))
			n++;
	return n >= conf->max_moves_per_uid;
}

/*
 * hold_ends - hold @m's arenas of this node (@cred needs r on the source,
 * w on the destination), check the ranges and get the peer's grant for
 * the other end.  Returns 0 (release_ends() undoes it), or an error
 * (@msg says why) with nothing held.
 */
static int hold_ends(struct move *m, const struct dpd_cred *cred, char *msg,
		     size_t msglen)
{
	int ret;

	if (!is_pull(m)) {
		ret = arena_hold(m->src, cred, DPD_PERM_READ, &m->s);
		if (ret)
			return ret;
		ret = -ERANGE;
		if (range_beyond(m->src_off, m->len, m->s.size)) {
			snprintf(msg, msglen, "range beyond the source arena");
			goto release_src;
		}
	}
	if (!m->dst_node[0]) {
		ret = arena_hold(m->dst, cred, DPD_PERM_WRITE, &m->d);
		if (ret)
			goto release_src;
		ret = -ERANGE;
		if (range_beyond(m->dst_off, m->len, m->d.size)) {
			snprintf(msg, msglen, "range beyond the destination arena");
			goto release_dst;
		}
		ret = -EINVAL;
		if (!is_pull(m) && !strcmp(m->src, m->dst) &&
		    m->src_off < m->dst_off + m->len && m->dst_off < m->src_off + m->len) {
			snprintf(msg, msglen, "source and destination ranges overlap");
			goto release_dst;
		}
	}
	ret = peer_of(m)[0] ? remote_grant(m, cred, msg, msglen) : 0;
	if (ret)
		goto release_dst;
	return 0;

release_dst:
	if (!m->dst_node[0])
		arena_release(m->dst);
release_src:
	if (!is_pull(m))
		arena_release(m->src);
	return ret;
}

/* The errno of a peer daemon's HTTP status, for its error relayed here. */
static int status_errno(long st)
{
	switch (st) {
	case 400: return -EINVAL;
	case 401:
	case 403: return -EACCES;
	case 404: return -ENOENT;
	case 409: return -EBUSY;
	case 429: return -EDQUOT;
	case 501: return -EOPNOTSUPP;
	case 507: return -ENOSPC;
	default: return -EHOSTDOWN;
	}
}

/*
 * relay - POST @path with @body (taken) and the requester @cred to node
 * @node's daemon, for a move that runs there (the source's node); its
 * answer (a move's JSON, status @want) or NULL with *@err and @msg from
 * its error ("node NAME: ...").
 */
static json_t *relay(const char *node, const char *path, json_t *body,
		     const struct dpd_cred *cred, long want, int *err, char *msg,
		     size_t msglen)
{
	char url[DPD_NAME_MAX + 32], e[160] = "";
	struct dmaplane_name ep;
	json_t *o = NULL, *who;
	long st;
	int ret;

	*err = body ? peer_lookup(node, url, sizeof(url), &ep, msg, msglen) : -ENOMEM;
	if (*err) {
		json_decref(body);
		return NULL;
	}
	who = cred_json(cred);
	if (!who || json_object_set_new(body, "requester", who)) {
		json_decref(body);
		*err = -ENOMEM;
		return NULL;
	}
	ret = mesh_http(node, url, "POST", path, body, MOVE_GRANT_MS, &st, &o, e, sizeof(e));
	json_decref(body);
	if (ret) {
		snprintf(msg, msglen, "node %s does not answer: %s", node, e);
		peer_failed(node, e, ret == -ETIMEDOUT);
		*err = ret == -ENOMEM ? ret : -EHOSTDOWN;
		return NULL;
	}
	if (st != want || !json_is_object(o)) {
		snprintf(msg, msglen, "node %s: %s", node,
			 json_string_value(json_object_get(o, "error")) ?: "no answer");
		*err = st == want ? -EPROTO : status_errno(st);
		json_decref(o);
		return NULL;
	}
	json_object_set_new(o, "relayed_by", json_string(conf->node_name));
	*err = 0;
	return o;
}

/*
 * relay_create - a move that is to run at its source's node @m->src_node
 * (its destination is not this node, or it is deduplicated: both start
 * where the source is): POST /v1/mesh/moves there, with @req's source
 * now that node's own and its destination named.  The move lives on
 * that node (GET and DELETE /v1/nodes/NAME/moves/ID reach it).
 */
static json_t *relay_create(struct move *m, json_t *req, const struct dpd_cred *cred,
			    int *err, char *msg, size_t msglen)
{
	json_t *mv = json_deep_copy(req), *body;

	if (mv) {
		json_object_del(json_object_get(mv, "src"), "node");
		if (!m->dst_node[0])
			json_object_set_new(json_object_get(mv, "dst"), "node",
					    json_string(conf->node_name));
	}
	body = mv ? json_pack("{s:o}", "move", mv) : NULL;
	return relay(m->src_node, "/v1/mesh/moves", body, cred, 202, err, msg, msglen);
}

/*
 * move_relayed - GET (@cancel false) or DELETE /v1/nodes/NODE/moves/ID: a
 * move that runs at peer @node, asked of its daemon for @cred.  NULL with
 * *@err and @msg as relay().
 */
json_t *move_relayed(const char *node, uint64_t id, bool cancel,
		     const struct dpd_cred *cred, int *err, char *msg, size_t msglen)
{
	char path[64];

	snprintf(path, sizeof(path), "/v1/mesh/moves/%" PRIu64, id);
	return relay(node, path, json_pack("{s:s}", "op", cancel ? "cancel" : "get"), cred,
		     cancel ? 202 : 200, err, msg, msglen);
}

/*
 * mesh_move - POST /v1/mesh/moves from peer daemon @node: {"requester",
 * "move"}, a move of this node's arena made for the requester @node names
 * (peer.c: the access model), answered as POST /v1/moves is; @id: POST
 * /v1/mesh/moves/ID {"requester", "op": "get" or "cancel"}.  *@status gets
 * the HTTP status of a success.
 */
json_t *mesh_move(json_t *req, const char *node, const char *id, unsigned int *status,
		  int *err, char *msg, size_t msglen)
{
	struct dpd_cred cred;
	const char *op;
	json_t *o;

	*err = -EINVAL;
	if (!node || !name_valid(node)) {
		snprintf(msg, msglen, "X-Dmaplane-Node: the asking node's name is needed");
		return NULL;
	}
	if (!json_is_object(req) || json_object_size(req) != 2 ||
	    cred_from_json(json_object_get(req, "requester"), &cred, msg, msglen)) {
		if (!msg[0])
			snprintf(msg, msglen, "{\"requester\": ..., \"%s\": ...}", id ? "op" : "move");
		return NULL;
	}
	if (!id) {
		if (!json_is_object(json_object_get(req, "move"))) {
			snprintf(msg, msglen, "{\"requester\": ..., \"move\": {...}}");
			return NULL;
		}
		o = move_create(json_object_get(req, "move"), &cred, err, msg, msglen);
		if (o)
			log_info("move %" PRIu64 " made for node %s", (uint64_t)json_integer_value(
				 json_object_get(o, "id")), node);
		*status = 202;
		return o;
	}
	op = json_string_value(json_object_get(req, "op"));
	if (!op || (strcmp(op, "get") && strcmp(op, "cancel"))) {
		snprintf(msg, msglen, "op: \"get\" or \"cancel\"");
		return NULL;
	}
	if (!strcmp(op, "cancel")) {
		*err = move_cancel(strtoull(id, NULL, 10), &cred);
		if (*err)
			return NULL;
	}
	*status = strcmp(op, "cancel") ? 200 : 202;
	return move_get_json(strtoull(id, NULL, 10), &cred, err);
}

/*
 * move_create - POST /v1/moves: queue a move described by @req.  Returns
 * the move's JSON, or NULL with *@err -EINVAL (with @msg), -ERANGE,
 * -ENODEV, -ENOENT, -EACCES (@cred lacks r on the source or w on the
 * destination), -EHOSTDOWN (the peer's node is down or does not answer),
 * -EDQUOT (@cred's uid
 * has max_moves_per_uid moves queued or running; administrators have no
 * limit).  A move out of a peer's arena into another node's, or a
 * deduplicated one out of a peer's arena, runs at the source's node:
 * relayed there (relay_create()), it answers with that node's move, or
 * its error.
 */
json_t *move_create(json_t *req, const struct dpd_cred *cred, int *err,
		    char *msg, size_t msglen)
{
	struct move *m;
	const char *key;
	json_t *v, *o;
	bool have_len = false;

	*err = -EINVAL;
	msg[0] = '\0';
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
			*err = endpoint(v, m->src, &m->src_off, m->src_node, msg, msglen, "src");
		else if (!strcmp(key, "dst"))
			*err = endpoint(v, m->dst, &m->dst_off, m->dst_node, msg, msglen, "dst");
		else if (!strcmp(key, "length"))
			*err = (have_len = true, json_u64(v, &m->len, true));
		else if (!strcmp(key, "chunk"))
			*err = json_u64(v, &m->chunk, true);
		else if (!strcmp(key, "dedup") && json_is_boolean(v))
			*err = (m->dedup = json_is_true(v), 0);
		else if (!strcmp(key, "dedup"))
			*err = (snprintf(msg, msglen, "dedup: true or false"), -EINVAL);
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
	if (m->src_node[0] && (m->dst_node[0] || m->dedup)) {
		o = relay_create(m, req, cred, err, msg, msglen);
		free(m);
		return o;
	}
	/* A well-formed request; without the module there are no moves. */
	if (!started) {
		*err = -ENODEV;
		goto fail;
	}
	pthread_mutex_lock(&lock);
	m->id = next_id++;
	pthread_mutex_unlock(&lock);
	*err = hold_ends(m, cred, msg, msglen);
	if (*err)
		goto fail;
	m->uid = cred->uid;
	m->gid = cred->gid;
	m->admin = cred_admin(cred);
	m->created = time(NULL);
	pthread_mutex_lock(&lock);
	if (!m->admin && over_limit(m->uid)) {
		pthread_mutex_unlock(&lock);
		*err = -EDQUOT;
		snprintf(msg, msglen, "uid %u has %u moves queued or running (max_moves_per_uid)",
			 (unsigned int)m->uid, conf->max_moves_per_uid);
		release_ends(m, false);
		goto fail;
	}
	m->next = moves;
	moves = m;
	o = move_json(m);
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	*err = o ? 0 : -ENOMEM;
	return o;

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
	struct move *m, *copy = NULL;
	json_t *o = NULL;
	int ret = -ENOENT;

	pthread_mutex_lock(&lock);
	for (m = moves; m; m = m->next) {
		if (m->id != id)
			continue;
		if (!visible(m, cred))
			ret = -EACCES;
		else if (m->state == MOVE_QUEUED) {
			/* m may be forgotten once the lock is dropped: copy. */
			copy = malloc(sizeof(*copy));
			if (!copy) {
				ret = -ENOMEM;
				break;
			}
			m->state = MOVE_CANCELLED;
			*copy = *m;
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
	if (copy) {
		release_ends(copy, false);
		events_post("move.cancelled", NULL, copy->uid, copy->gid, 0600, o);
		free(copy);
	}
	return ret;
}

/* arenas_ep_name - the daemon's endpoint's name (false: no moves) */
bool arenas_ep_name(struct dmaplane_name *name)
{
	if (!started)
		return false;
	*name = self_name;
	return true;
}

/*
 * arena_xxh128_json - GET /v1/arenas/NAME/xxh128: the xxh128 of a range
 * of the arena (@cred needs r), for the end of a peer's move.
 */
json_t *arena_xxh128_json(const char *name, const struct dpd_cred *cred,
			  uint64_t off, uint64_t len, int *err)
{
	struct dpd_arena_ref ref;
	char hex[40];

	*err = arena_hold(name, cred, DPD_PERM_READ, &ref);
	if (*err)
		return NULL;
	if (!len || range_beyond(off, len, ref.size)) {
		arena_release(name);
		*err = -ERANGE;
		return NULL;
	}
	xxh128_hex((char *)ref.ptr + off, len, hex, sizeof(hex));
	arena_release(name);
	return json_pack("{s:s, s:I, s:I, s:s}", "arena", name, "offset",
			 (json_int_t)off, "length", (json_int_t)len, "xxh128", hex);
}

/*
 * arena_index_json - POST /v1/arenas/NAME/index {"offset", "length"}:
 * chunk a range of the arena and add it to the dedup index (content that
 * arrived otherwise than by a move).  @cred needs rw.  NULL with *@err
 * -EINVAL (@msg), -ERANGE, -ENOENT, -EACCES, -ENODEV, -ENOSPC (index
 * full), -ENOMEM.
 */
json_t *arena_index_json(const char *name, const struct dpd_cred *cred, json_t *req,
			 int *err, char *msg, size_t msglen)
{
	struct dpd_arena_ref ref;
	uint64_t off = 0, len = 0;
	bool have_len = false;
	const char *key;
	json_t *v;
	long n;

	*err = -EINVAL;
	msg[0] = '\0';
	if (!json_is_object(req)) {
		snprintf(msg, msglen, "a range is an object {\"offset\": ..., \"length\": ...}");
		return NULL;
	}
	json_object_foreach(req, key, v) {
		if (!strcmp(key, "offset") && !json_u64(v, &off, true))
			continue;
		if (!strcmp(key, "length") && !json_u64(v, &len, true)) {
			have_len = true;
			continue;
		}
		snprintf(msg, msglen, "bad or unknown key \"%.64s\"", key);
		return NULL;
	}
	if (!have_len || !len) {
		snprintf(msg, msglen, "a range needs a non-zero length");
		return NULL;
	}
	*err = arena_hold(name, cred, DPD_PERM_READ | DPD_PERM_WRITE, &ref);
	if (*err)
		return NULL;
	if (range_beyond(off, len, ref.size)) {
		arena_release(name);
		*err = -ERANGE;
		snprintf(msg, msglen, "range beyond the arena");
		return NULL;
	}
	n = arena_index_range(&ref, off, len);
	arena_release(name);
	if (n < 0) {
		*err = (int)n;
		return NULL;
	}
	*err = 0;
	return json_pack("{s:s, s:I, s:I, s:I}", "arena", name, "offset", (json_int_t)off,
			 "length", (json_int_t)len, "chunks", (json_int_t)n);
}

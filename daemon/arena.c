// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon's arenas: dmaplane arenas created on the daemon's one
 * endpoint (libdmaplane), named, with an owner, a group and a mode.  One
 * mutex guards the table; it is held across the module's calls, so that
 * a name is never half created or half destroyed.
 *
 * The dedup index (dedup.c) of what the arenas hold lives here too, next
 * to the mappings its resolver reads: the mover adds every completed
 * move's destination range, a client may add a range (POST
 * /v1/arenas/NAME/index), destroy removes an arena's entries.  Clients
 * write arenas through their own mappings behind the daemon's back, so
 * the index is a hint: every entry is re-hashed through the resolver
 * before it is used (dd_index_lookup()), and a changed one is dropped.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <dmaplane.h>

#include "dmaplaned.h"
#include "dedup.h"

/*
 * At most this many index entries: about 8 GiB of arena content at the
 * 8 KiB average chunk, and a table of at most 2^21 slots of 40 bytes.
 * Beyond it, new content is not indexed (counted in index_refused).
 */
#define DPD_INDEX_MAX	(1u << 20)

struct dpd_arena {
	struct dpd_arena *next;
	uint32_t id;			/* never reused: the index's arena key */
	struct dpd_arena_spec spec;
	struct dp_arena *arena;
	time_t created;
	uint64_t attaches;		/* dma-bufs handed out */
	uint64_t attach_refused;	/* attach requests refused (access) */
	unsigned int busy;		/* moves holding it (arena_hold()) */
};

/*
 * lock protects the table, the counters below and every arena's mutable
 * fields.  The list itself changes only with dd_lock held too, so that
 * the index's resolver may walk it under dd_lock alone.
 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct dpd_arena *arenas;
static unsigned int n_arenas;
static uint32_t next_arena_id = 1;
/*
 * dd_lock protects the index and its counter; taken inside lock, never
 * the other way round.  An arena's mapping outlives its entries: destroy
 * removes them under dd_lock before the module unmaps it, so bytes the
 * resolver returned stay mapped while dd_lock is held.
 */
static pthread_mutex_t dd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct dd_index *dd_ix;
static uint64_t dd_refused;		/* entries not added: index full */
static struct dd_chunker chunker;	/* read-only after arenas_init() */
static uint64_t total_bytes;
static struct dp_ep *ep;
static struct dmaplane_info info;
static uint64_t max_total_bytes;
static unsigned int max_arenas;
static uint64_t max_bytes_per_uid;
static unsigned int max_arenas_per_uid;

static const void *dd_resolve(void *ctx, uint32_t id, uint64_t off, uint64_t len);

bool arenas_have_device(void)
{
	return ep != NULL;
}

/*
 * arenas_init - open @device (NULL: run without one; every arena
 * operation then fails with -ENODEV) and remember the limits.
 */
int arenas_init(const char *device, const struct dpd_config *cfg)
{
	int ret;

	max_total_bytes = cfg->max_total_bytes;
	max_arenas = cfg->max_arenas;
	max_bytes_per_uid = cfg->max_bytes_per_uid;
	max_arenas_per_uid = cfg->max_arenas_per_uid;
	ret = dd_chunker_init(&chunker, 0, 0, 0);
	if (!ret)
		ret = dd_index_new(&dd_ix, dd_resolve, NULL);
	if (ret)
		return ret;
	if (!device)
		return 0;
	ret = dp_open(device, 0, &ep);
	if (ret)
		return ret;
	ret = dp_info(ep, &info);
	if (ret) {
		dp_close(ep);
		ep = NULL;
		return ret;
	}
	if (!(info.caps & DMAPLANE_CAP_ARENA) ||
	    !(info.caps & DMAPLANE_CAP_DMABUF_EXPORT)) {
		dp_close(ep);
		ep = NULL;
		return -EOPNOTSUPP;
	}
	return 0;
}

/*
 * dd_resolve - the index's resolver: arena @id's bytes at @off, or NULL
 * when the arena is gone or the range is not in it.  Under dd_lock.
 */
static const void *dd_resolve(void *ctx, uint32_t id, uint64_t off, uint64_t len)
{
	struct dpd_arena *a;

	(void)ctx;
	for (a = arenas; a; a = a->next) {
		if (a->id != id)
			continue;
		if (off > a->spec.size || len > a->spec.size - off)
			return NULL;
		return (char *)dp_arena_ptr(a->arena) + off;
	}
	return NULL;
}

static struct dpd_arena *find(const char *name)
{
	struct dpd_arena *a;

	for (a = arenas; a; a = a->next)
		if (!strcmp(a->spec.name, name))
			return a;
	return NULL;
}

static json_t *arena_json(const struct dpd_arena *a, bool stats)
{
	uint64_t huge, mid, base;
	char mode[8];
	json_t *o;

	snprintf(mode, sizeof(mode), "%04o", a->spec.mode);
	dp_arena_bytes(a->arena, &huge, &mid, &base);
	o = json_pack("{s:s, s:I, s:i, s:i, s:s, s:b, s:I}",
		      "name", a->spec.name,
		      "size", (json_int_t)a->spec.size,
		      "owner", (int)a->spec.owner,
		      "group", (int)a->spec.group,
		      "mode", mode,
		      "huge_only", a->spec.huge_only,
		      "created", (json_int_t)a->created);
	if (o && stats)
		json_object_update_new(o, json_pack(
			"{s:I, s:I, s:I, s:I, s:I, s:I}",
			"bytes_huge", (json_int_t)huge,
			"bytes_mid", (json_int_t)mid,
			"bytes_base", (json_int_t)base,
			"attaches", (json_int_t)a->attaches,
			"attach_refused", (json_int_t)a->attach_refused,
			"age_seconds", (json_int_t)(time(NULL) - a->created)));
	return o;
}

static void post(const char *type, const struct dpd_arena *a)
{
	events_post(type, a->spec.name, a->spec.owner, a->spec.group,
		    a->spec.mode, json_pack("{s:s, s:I}", "arena", a->spec.name,
					    "size", (json_int_t)a->spec.size));
}

/*
 * Whether @spec's owner would have more than max_arenas_per_uid arenas
 * or max_bytes_per_uid bytes with it.  Under the lock.
 */
static bool over_uid_limits(const struct dpd_arena_spec *spec)
{
	uint64_t bytes = 0;
	unsigned int n = 0;
	struct dpd_arena *a;

	for (a = arenas; a; a = a->next) {
		if (a->spec.owner != spec->owner)
			continue;
		n++;
		bytes += a->spec.size;
	}
	return (max_arenas_per_uid && n >= max_arenas_per_uid) ||
	       (max_bytes_per_uid && (spec->size > max_bytes_per_uid ||
				      bytes > max_bytes_per_uid - spec->size));
}

/*
 * arena_create - create the arena @spec describes; @per_uid_limits: its
 * creator is not an administrator, max_arenas_per_uid and
 * max_bytes_per_uid hold for its owner.  Returns 0, -ENODEV (no device),
 * -EEXIST, -ENOSPC (max_arenas or max_total_bytes), -EDQUOT (a per-uid
 * limit), or the module's -errno (-ENOMEM ...).  Permission is the
 * caller's business.
 */
int arena_create(const struct dpd_arena_spec *spec, bool per_uid_limits)
{
	struct dpd_arena *a;
	int ret;

	if (!ep)
		return -ENODEV;
	pthread_mutex_lock(&lock);
	if (find(spec->name)) {
		ret = -EEXIST;
		goto out;
	}
	if (n_arenas >= max_arenas || spec->size > max_total_bytes ||
	    total_bytes > max_total_bytes - spec->size) {
		ret = -ENOSPC;
		goto out;
	}
	if (per_uid_limits && over_uid_limits(spec)) {
		ret = -EDQUOT;
		goto out;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		ret = -ENOMEM;
		goto out;
	}
	a->spec = *spec;
	ret = dp_arena_create(ep, spec->size,
			      spec->huge_only ? DMAPLANE_ARENA_HUGE_ONLY : 0,
			      DMAPLANE_NUMA_ANY, DMAPLANE_ACCESS_ALL, &a->arena);
	if (ret) {
		free(a);
		goto out;
	}
	a->created = time(NULL);
	a->id = next_arena_id++;
	pthread_mutex_lock(&dd_lock);
	a->next = arenas;
	arenas = a;
	pthread_mutex_unlock(&dd_lock);
	n_arenas++;
	total_bytes += spec->size;
	log_info("arena %s created: %llu bytes, owner %u group %u mode %04o",
		 spec->name, (unsigned long long)spec->size, spec->owner,
		 spec->group, spec->mode);
	post("arena.created", a);
out:
	pthread_mutex_unlock(&lock);
	return ret;
}

static void destroy_locked(struct dpd_arena **pp)
{
	struct dpd_arena *a = *pp;
	int ret;

	pthread_mutex_lock(&dd_lock);
	*pp = a->next;
	dd_index_remove_range(dd_ix, a->id, 0, UINT64_MAX);
	pthread_mutex_unlock(&dd_lock);
	n_arenas--;
	total_bytes -= a->spec.size;
	ret = dp_arena_destroy(a->arena);
	if (ret)
		log_warn("arena %s: destroy: %s", a->spec.name, strerror(-ret));
	log_info("arena %s destroyed", a->spec.name);
	post("arena.destroyed", a);
	free(a);
}

/*
 * arena_destroy - destroy @name for @cred (NULL: the daemon itself).
 * Attached programs keep their mappings: the module frees the memory
 * when the last dma-buf goes.  Returns 0, -ENOENT, -EPERM (neither the
 * owner nor an administrator), -EBUSY (a move holds it).
 */
int arena_destroy(const char *name, const struct dpd_cred *cred)
{
	struct dpd_arena **pp;
	int ret = -ENOENT;

	pthread_mutex_lock(&lock);
	for (pp = &arenas; *pp; pp = &(*pp)->next) {
		struct dpd_arena *a = *pp;

		if (strcmp(a->spec.name, name))
			continue;
		if (cred && !cred_admin(cred) && cred->uid != a->spec.owner) {
			ret = cred_may(cred, a->spec.owner, a->spec.group,
				       a->spec.mode, DPD_PERM_READ) ? -EPERM : -EACCES;
			break;
		}
		if (cred && a->busy) {
			ret = -EBUSY;
			break;
		}
		destroy_locked(pp);
		ret = 0;
		break;
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

/* arenas_fini - destroy every arena and close the endpoint (shutdown). */
void arenas_fini(void)
{
	pthread_mutex_lock(&lock);
	while (arenas)
		destroy_locked(&arenas);
	if (ep)
		dp_close(ep);
	ep = NULL;
	pthread_mutex_lock(&dd_lock);
	dd_index_free(dd_ix);
	dd_ix = NULL;
	pthread_mutex_unlock(&dd_lock);
	pthread_mutex_unlock(&lock);
}

/*
 * arena_get_json - the arena @name as JSON (with its counters when
 * @stats), or NULL with *@err -ENOENT, -EACCES (not readable by @cred)
 * or -ENOMEM.
 */
json_t *arena_get_json(const char *name, const struct dpd_cred *cred,
		       bool stats, int *err)
{
	struct dpd_arena *a;
	json_t *o = NULL;

	pthread_mutex_lock(&lock);
	a = find(name);
	if (!a)
		*err = -ENOENT;
	else if (!cred_may(cred, a->spec.owner, a->spec.group, a->spec.mode,
			   DPD_PERM_READ))
		*err = -EACCES;
	else if (!(o = arena_json(a, stats)))
		*err = -ENOMEM;
	pthread_mutex_unlock(&lock);
	return o;
}

/* arenas_list_json - the arenas @cred may see, as a JSON array. */
json_t *arenas_list_json(const struct dpd_cred *cred)
{
	struct dpd_arena *a;
	json_t *arr = json_array();

	if (!arr)
		return NULL;
	pthread_mutex_lock(&lock);
	for (a = arenas; a; a = a->next)
		if (cred_may(cred, a->spec.owner, a->spec.group, a->spec.mode,
			     DPD_PERM_READ))
			json_array_append_new(arr, arena_json(a, false));
	pthread_mutex_unlock(&lock);
	return arr;
}

/*
 * arena_attach_fd - export the whole arena @name as a new dma-buf for
 * @cred.  Returns the fd (O_CLOEXEC, read-write), or -ENOENT, -EACCES,
 * -ENODEV, or the module's -errno.  *@size gets the arena's size.
 */
int arena_attach_fd(const char *name, const struct dpd_cred *cred,
		    uint64_t *size)
{
	struct dpd_arena *a;
	int ret;

	if (!ep)
		return -ENODEV;
	pthread_mutex_lock(&lock);
	a = find(name);
	if (!a) {
		ret = -ENOENT;
	} else if (!cred_may(cred, a->spec.owner, a->spec.group, a->spec.mode,
			     DPD_PERM_READ | DPD_PERM_WRITE)) {
		a->attach_refused++;
		ret = -EACCES;
	} else {
		ret = dp_dmabuf_export(a->arena, 0, a->spec.size, 0);
		if (ret >= 0) {
			a->attaches++;
			*size = a->spec.size;
		}
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

static const struct {
	uint64_t bit;
	const char *name;
} cap_names[] = {
	{ DMAPLANE_CAP_INFO, "info" },
	{ DMAPLANE_CAP_ARENA, "arena" },
	{ DMAPLANE_CAP_MR, "mr" },
	{ DMAPLANE_CAP_DMABUF_EXPORT, "dmabuf_export" },
	{ DMAPLANE_CAP_DMABUF_IMPORT, "dmabuf_import" },
	{ DMAPLANE_CAP_MSG, "msg" },
	{ DMAPLANE_CAP_RMA, "rma" },
	{ DMAPLANE_CAP_REMOTE, "remote" },
	{ DMAPLANE_CAP_CQ_DATA, "cq_data" },
	{ DMAPLANE_CAP_SRC_AV, "src_av" },
	{ DMAPLANE_CAP_REGION_BUF, "region_buf" },
	{ DMAPLANE_CAP_PUT_DATA, "put_data" },
	{ DMAPLANE_CAP_URING_CMD, "uring_cmd" },
	{ DMAPLANE_CAP_RECV_INLINE, "recv_inline" },
};

/* node_json - GET /v1/node: this node, the module's ABI and capabilities. */
json_t *node_json(const struct dpd_config *cfg)
{
	json_t *o, *caps, *svc;
	size_t i;

	caps = json_array();
	svc = json_pack("[s, s, s, s, s, s]", "arenas", "attach", "events",
			"moves-local", "mesh", "moves-remote");
	o = json_pack("{s:s, s:s, s:s, s:b, s:o, s:o}",
		      "name", cfg->node_name, "version", DPD_VERSION,
		      "api", "v1", "device", ep != NULL,
		      "caps", caps ? caps : json_null(),
		      "service", svc ? svc : json_null());
	if (!o || !caps)
		return o;
	pthread_mutex_lock(&lock);
	if (ep) {
		json_object_set_new(o, "abi", json_integer(info.abi_version));
		for (i = 0; i < sizeof(cap_names) / sizeof(cap_names[0]); i++)
			if (info.caps & cap_names[i].bit)
				json_array_append_new(caps, json_string(cap_names[i].name));
	}
	json_object_set_new(o, "arenas", json_integer(n_arenas));
	json_object_set_new(o, "arena_bytes", json_integer((json_int_t)total_bytes));
	pthread_mutex_unlock(&lock);
	json_object_set_new(o, "dedup", arenas_dedup_json());
	return o;
}

/*
 * arena_hold - take @name for a move: @cred needs @perm on it.  Fills
 * @ref (the daemon's mapping, handle, key) and keeps the arena from being
 * destroyed until arena_release().  Returns 0, -ENOENT, -EACCES, -ENODEV.
 */
int arena_hold(const char *name, const struct dpd_cred *cred,
	       unsigned int perm, struct dpd_arena_ref *ref)
{
	struct dpd_arena *a;
	int ret = 0;

	if (!ep)
		return -ENODEV;
	pthread_mutex_lock(&lock);
	a = find(name);
	if (!a) {
		ret = -ENOENT;
	} else if (!cred_may(cred, a->spec.owner, a->spec.group, a->spec.mode, perm)) {
		ret = -EACCES;
	} else {
		a->busy++;
		ref->id = a->id;
		ref->ptr = dp_arena_ptr(a->arena);
		ref->size = a->spec.size;
		ref->handle = dp_arena_handle(a->arena);
		ref->rkey = dp_arena_key(a->arena);
	}
	pthread_mutex_unlock(&lock);
	return ret;
}

void arena_release(const char *name)
{
	struct dpd_arena *a;

	pthread_mutex_lock(&lock);
	a = find(name);
	if (a && a->busy)
		a->busy--;
	pthread_mutex_unlock(&lock);
}

/* arenas_ep - the daemon's endpoint (only the mover uses its ring) */
struct dp_ep *arenas_ep(void)
{
	return ep;
}

/*
 * arenas_table_json - every arena with its remote key (hex), for GET
 * /v1/mesh/info: only the mesh's daemons (token holders) see it.
 */
json_t *arenas_table_json(void)
{
	struct dpd_arena *a;
	json_t *arr = json_array(), *o;
	char key[24];

	if (!arr)
		return NULL;
	pthread_mutex_lock(&lock);
	for (a = arenas; a; a = a->next) {
		o = arena_json(a, false);
		if (!o)
			continue;
		snprintf(key, sizeof(key), "%016llx",
			 (unsigned long long)dp_arena_key(a->arena));
		json_object_set_new(o, "rkey", json_string(key));
		json_array_append_new(arr, o);
	}
	pthread_mutex_unlock(&lock);
	return arr;
}

/* ---- the dedup index ---------------------------------------------------- */

/* arenas_chunker - the node's chunker (every node cuts alike: dedup.h) */
const struct dd_chunker *arenas_chunker(void)
{
	return &chunker;
}

/*
 * arena_index_add - arena @id (held by the caller) holds @v at @off
 * onwards: forget what the index said about that range, then record
 * @v.  Returns 0, -ENOSPC (the index is full: not recorded) or -ENOMEM.
 */
int arena_index_add(uint32_t id, uint64_t off, const struct dd_chunk *v, size_t n)
{
	uint64_t len = n ? v[n - 1].off + v[n - 1].len : 0;
	int ret = 0;

	pthread_mutex_lock(&dd_lock);
	if (dd_ix) {
		dd_index_remove_range(dd_ix, id, off, len);
		if (dd_index_count(dd_ix) + n > DPD_INDEX_MAX) {
			dd_refused += n;
			ret = -ENOSPC;
		} else {
			ret = dd_index_add(dd_ix, id, off, v, n);
		}
	}
	pthread_mutex_unlock(&dd_lock);
	return ret;
}

/* arena_index_forget - the index knows nothing of this range any more */
void arena_index_forget(uint32_t id, uint64_t off, uint64_t len)
{
	pthread_mutex_lock(&dd_lock);
	if (dd_ix)
		dd_index_remove_range(dd_ix, id, off, len);
	pthread_mutex_unlock(&dd_lock);
}

/*
 * arena_index_range - chunk @len bytes of the held arena @ref at @off and
 * index them.  Returns the number of chunks, or -ENOSPC, -ENOMEM.
 */
long arena_index_range(const struct dpd_arena_ref *ref, uint64_t off, uint64_t len)
{
	struct dd_chunk_list l = { 0 };
	long ret;

	ret = dd_chunk_range(&chunker, (char *)ref->ptr + off, len, &l);
	if (!ret)
		ret = arena_index_add(ref->id, off, l.v, l.n);
	if (!ret)
		ret = (long)l.n;
	dd_chunk_list_free(&l);
	return ret;
}

/*
 * arena_index_lookup - dd_index_lookup() on this node's index for a move
 * of @v into arena @dst_id (held by the caller) at @dst_off.
 */
int arena_index_lookup(const struct dd_chunk *v, size_t n, uint32_t dst_id,
		       uint64_t dst_off, uint64_t dst_len, struct dd_answer *ans,
		       struct dd_lookup_stats *st)
{
	int ret = -ENODEV;

	pthread_mutex_lock(&dd_lock);
	if (dd_ix)
		ret = dd_index_lookup(dd_ix, v, n, dst_id, dst_off, dst_len, ans, st);
	pthread_mutex_unlock(&dd_lock);
	return ret;
}

/*
 * arena_local_copy - a plan's DD_OP_LOCAL @op: copy from the arena it
 * names into @dst (the destination arena's mapping, held by the caller).
 * Under dd_lock, so that the source arena is not unmapped meanwhile.
 * Returns 0, or -ENOENT when the source is gone (send it instead).
 */
int arena_local_copy(const struct dd_op *op, void *dst)
{
	const void *from;
	int ret = -ENOENT;

	pthread_mutex_lock(&dd_lock);
	from = dd_resolve(NULL, op->arena, op->src_off, op->len);
	if (from) {
		memmove((char *)dst + op->dst_off, from, op->len);
		ret = 0;
	}
	pthread_mutex_unlock(&dd_lock);
	return ret;
}

/* arenas_dedup_json - the index's figures, for GET /v1/node */
json_t *arenas_dedup_json(void)
{
	json_t *o;

	pthread_mutex_lock(&dd_lock);
	o = json_pack("{s:I, s:I, s:I, s:s}",
		      "index_entries", (json_int_t)dd_index_count(dd_ix),
		      "index_max", (json_int_t)DPD_INDEX_MAX,
		      "index_refused", (json_int_t)dd_refused,
		      "chunker", "fastcdc 2K/8K/64K");
	pthread_mutex_unlock(&dd_lock);
	if (o) {
		char fp[24];

		snprintf(fp, sizeof(fp), "%016llx",
			 (unsigned long long)dd_chunker_fingerprint(&chunker));
		json_object_set_new(o, "chunker_fingerprint", json_string(fp));
	}
	return o;
}

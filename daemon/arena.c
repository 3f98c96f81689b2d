// SPDX-License-Identifier: GPL-2.0
/*
 * The daemon's arenas: dmaplane arenas created on the daemon's one
 * endpoint (libdmaplane), named, with an owner, a group and a mode.  One
 * mutex guards the table; it is held across the module's calls, so that
 * a name is never half created or half destroyed.
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

struct dpd_arena {
	struct dpd_arena *next;
	struct dpd_arena_spec spec;
	struct dp_arena *arena;
	time_t created;
	uint64_t attaches;		/* dma-bufs handed out */
	uint64_t attach_refused;	/* attach requests refused (access) */
	unsigned int busy;		/* moves holding it (arena_hold()) */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct dpd_arena *arenas;
static unsigned int n_arenas;
static uint64_t total_bytes;
static struct dp_ep *ep;
static struct dmaplane_info info;
static uint64_t max_total_bytes;
static unsigned int max_arenas;

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
 * arena_create - create the arena @spec describes.  Returns 0, -ENODEV
 * (no device), -EEXIST, -ENOSPC (max_arenas or max_total_bytes), or the
 * module's -errno (-ENOMEM ...).  Permission is the caller's business.
 */
int arena_create(const struct dpd_arena_spec *spec)
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
	a->next = arenas;
	arenas = a;
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

	*pp = a->next;
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

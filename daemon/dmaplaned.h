/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dmaplaned - the arena service: private structures and prototypes,
 * grouped by file.
 *
 * Every function returning int returns 0 (or a count) or a negative
 * errno; the HTTP layer maps errnos to status codes in one place
 * (http.c: http_status()).
 */
#ifndef DMAPLANED_H
#define DMAPLANED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define DPD_VERSION		"0.1.0"
#define DPD_NAME_MAX		63	/* arena and peer names */
#define DPD_MAX_GROUPS		64	/* supplementary groups looked at */
#define DPD_BODY_MAX		(64 * 1024)	/* request bodies */
#define DPD_DEFAULT_CONFIG	"/etc/dmaplaned.conf"
#define DPD_DEFAULT_SOCKET	"/run/dmaplaned/api.sock"
#define DPD_DEFAULT_ATTACH	"/run/dmaplaned/attach.sock"

/* range_beyond - whether [@off, @off + @len) wraps or ends past @size */
static inline bool range_beyond(uint64_t off, uint64_t len, uint64_t size)
{
	uint64_t end;

	return __builtin_add_overflow(off, len, &end) || end > size;
}

/* ---- log (main.c) ------------------------------------------------------ */
extern int dpd_verbose;
void dpd_log(const char *level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
#define log_err(...)	dpd_log("error", __VA_ARGS__)
#define log_warn(...)	dpd_log("warning", __VA_ARGS__)
#define log_info(...)	dpd_log("info", __VA_ARGS__)

/* ---- config.c ---------------------------------------------------------- */
struct dpd_arena_spec {
	char name[DPD_NAME_MAX + 1];
	uint64_t size;
	uid_t owner;
	gid_t group;
	unsigned int mode;
	bool huge_only;
};

#define DPD_PATH_MAX		255	/* paths in the configuration */
#define DPD_TOKEN_MAX		255

struct dpd_peer {
	char name[DPD_NAME_MAX + 1];
	char address[DPD_NAME_MAX + 1];		/* its daemon's TCP: host[:port] */
	char fabric_address[DPD_NAME_MAX + 1];	/* for dpctl peer add, or "" */
	char token_file[DPD_PATH_MAX + 1];	/* this pair's token, or "" */
	char token[DPD_TOKEN_MAX + 1];		/* read from it ("": the mesh's) */
};

struct dpd_config {
	char *node_name;
	char *socket_path;
	char *attach_path;
	unsigned int socket_mode;
	char *device;
	char *tcp_address;	/* NULL: no TCP listener */
	unsigned int tcp_port;
	char *token_file;
	char *token;		/* read from token_file */
	char *dpctl;		/* the dpctl binary (peer add), NULL: "dpctl" */
	uint64_t max_total_bytes;
	unsigned int max_arenas;
	unsigned int max_moves_per_uid;	/* unfinished moves of one uid, 0: any */
	/* Of a uid that is not an administrator; 0: no limit of its own. */
	unsigned int max_arenas_per_uid;	/* arenas it owns */
	uint64_t max_bytes_per_uid;		/* their bytes */
	unsigned int max_connections_per_uid;	/* on the UNIX socket */
	unsigned int max_streams_per_uid;	/* event streams */
	long create_group;	/* -1: only root and the daemon's uid create */
	struct dpd_arena_spec *arenas;
	size_t n_arenas;
	struct dpd_peer *peers;
	size_t n_peers;
};

void config_defaults(struct dpd_config *cfg);
int config_load(struct dpd_config *cfg, const char *path, char *err,
		size_t errlen);
int config_read_token(struct dpd_config *cfg, char *err, size_t errlen);
void config_free(struct dpd_config *cfg);
int parse_size(const char *s, uint64_t *out);
int parse_mode(const char *s, unsigned int *out);
bool name_valid(const char *name);
typedef struct json_t json_t;
int arena_spec_from_json(struct json_t *o, struct dpd_arena_spec *spec,
			 char *err, size_t errlen);

/* ---- access.c: who is asking ------------------------------------------- */
struct dpd_cred {
	bool token;		/* TCP with the API token: full rights */
	uid_t uid;
	gid_t gid;
	unsigned int ngroups;
	gid_t groups[DPD_MAX_GROUPS];
};

#define DPD_PERM_READ	4
#define DPD_PERM_WRITE	2

int cred_from_socket(int fd, struct dpd_cred *cred);
bool cred_admin(const struct dpd_cred *cred);
bool cred_in_group(const struct dpd_cred *cred, gid_t gid);
bool cred_may(const struct dpd_cred *cred, uid_t owner, gid_t group,
	      unsigned int mode, unsigned int perm);
json_t *cred_json(const struct dpd_cred *cred);
int cred_from_json(json_t *o, struct dpd_cred *cred, char *msg, size_t msglen);

/* ---- arena.c: the daemon's arenas -------------------------------------- */
int arenas_init(const char *device, const struct dpd_config *cfg);
void arenas_fini(void);
bool arenas_have_device(void);
int arena_create(const struct dpd_arena_spec *spec, bool per_uid_limits);
int arena_destroy(const char *name, const struct dpd_cred *cred);
struct json_t *arena_get_json(const char *name, const struct dpd_cred *cred,
			      bool stats, int *err);
struct json_t *arenas_list_json(const struct dpd_cred *cred);
int arena_attach_fd(const char *name, const struct dpd_cred *cred,
		    uint64_t *size);
struct json_t *node_json(const struct dpd_config *cfg);
struct dpd_arena_ref {
	uint32_t id;		/* never reused: the dedup index's key */
	void *ptr;		/* the daemon's own mapping */
	uint64_t size;
	uint32_t handle;
	uint64_t rkey;
};
int arena_hold(const char *name, const struct dpd_cred *cred,
	       unsigned int perm, struct dpd_arena_ref *ref);
void arena_release(const char *name);
struct dp_ep;
struct dp_ep *arenas_ep(void);
/* the dedup index of the arenas' content (dedup.h) */
struct dd_chunker;
struct dd_chunk;
struct dd_answer;
struct dd_lookup_stats;
struct dd_op;
const struct dd_chunker *arenas_chunker(void);
int arena_index_add(uint32_t id, uint64_t off, const struct dd_chunk *v, size_t n);
void arena_index_forget(uint32_t id, uint64_t off, uint64_t len);
long arena_index_range(const struct dpd_arena_ref *ref, uint64_t off, uint64_t len);
int arena_index_lookup(const struct dd_chunk *v, size_t n, uint32_t dst_id,
		       uint64_t dst_off, uint64_t dst_len, struct dd_answer *ans,
		       struct dd_lookup_stats *st);
int arena_local_copy(const struct dd_op *op, void *dst);
struct json_t *arenas_dedup_json(void);

/* ---- move.c: moves between arenas ------------------------------------- */
int moves_start(const struct dpd_config *cfg);
void moves_stop(void);
struct json_t *move_create(struct json_t *req, const struct dpd_cred *cred,
			   int *err, char *msg, size_t msglen);
struct json_t *move_get_json(uint64_t id, const struct dpd_cred *cred, int *err);
struct json_t *moves_list_json(const struct dpd_cred *cred);
int move_cancel(uint64_t id, const struct dpd_cred *cred);
json_t *move_relayed(const char *node, uint64_t id, bool cancel,
		     const struct dpd_cred *cred, int *err, char *msg, size_t msglen);
json_t *mesh_move(json_t *req, const char *node, const char *id, unsigned int *status,
		  int *err, char *msg, size_t msglen);
int xxh128_hex(const void *p, uint64_t len, char *hex, size_t hexlen);
json_t *arena_xxh128_json(const char *name, const struct dpd_cred *cred,
			  uint64_t off, uint64_t len, int *err);
json_t *arena_index_json(const char *name, const struct dpd_cred *cred, json_t *req,
			 int *err, char *msg, size_t msglen);

struct dmaplane_name;
bool arenas_ep_name(struct dmaplane_name *name);
json_t *arenas_table_json(void);

/* ---- peer.c: the mesh ------------------------------------------------- */
int peers_start(const struct dpd_config *cfg);
void peers_stop(void);
int peer_add(const struct dpd_peer *cfg, char *err, size_t errlen);
int peer_remove(const char *name);
int peer_lookup(const char *name, char *url, size_t urllen,
		struct dmaplane_name *ep, char *err, size_t errlen);
void peer_failed(const char *name, const char *why, bool down);
json_t *peers_json(void);
json_t *nodes_json(void);
json_t *node_get_json(const char *name, int *err);
json_t *node_arenas_json(const char *name, const struct dpd_cred *cred, int *err);
json_t *mesh_info_json(void);
int mesh_http(const char *node, const char *url, const char *method,
	      const char *path, json_t *body, long timeout_ms, long *status,
	      json_t **out, char *err, size_t errlen);
bool peer_token_node(const char *given, char *node, size_t nodelen);
bool token_equal(const char *given, const char *want);
json_t *ep_name_json(const struct dmaplane_name *n);
int ep_name_from_json(json_t *o, struct dmaplane_name *n);
void grants_renew(const char *node);
void grants_expire(void);
void grants_free(void);
json_t *grant_create(json_t *req, const char *node, int *err, char *msg,
		     size_t msglen);
int grant_delete(uint64_t id, const char *node, bool index);
json_t *mesh_dedup_lookup(json_t *req, const char *node, int *err, char *msg,
			  size_t msglen);
json_t *mesh_dedup_copy(json_t *req, const char *node, int *err, char *msg,
			size_t msglen);
char *b64_encode(const void *p, size_t n);
int b64_decode(const char *s, size_t len, uint8_t **out, size_t *n);

/* ---- events.c: the event stream ---------------------------------------- */
void events_post(const char *type, const char *arena, uid_t owner,
		 gid_t group, unsigned int mode, struct json_t *data);
void events_stop(void);
void events_free(void);
struct dpd_sse;
struct dpd_sse *sse_open(const struct dpd_cred *cred, unsigned int limit, int *err);
ssize_t sse_read(struct dpd_sse *s, char *buf, size_t max);
void sse_close(struct dpd_sse *s);

/* ---- http.c ------------------------------------------------------------ */
int http_start(const struct dpd_config *cfg);
void http_stop(void);

/* ---- attach.c: the attach socket (SCM_RIGHTS) -------------------------- */
int attach_start(const struct dpd_config *cfg);
void attach_stop(void);

/* ---- sockets (main.c) -------------------------------------------------- */
int unix_listen(const char *path, unsigned int mode);

#endif /* DMAPLANED_H */

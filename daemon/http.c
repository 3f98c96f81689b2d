// SPDX-License-Identifier: GPL-2.0
/*
 * The REST API over HTTP (libmicrohttpd, JSON by jansson).  It listens
 * on the UNIX socket, always, and on TCP only when configured; both
 * sockets are bound here and handed to libmicrohttpd with
 * MHD_OPTION_LISTEN_SOCKET.  One thread per connection (at most
 * HTTP_CONNECTIONS), so that event streams may block in their reader.
 *
 * On the UNIX socket the client is who SO_PEERCRED says; on TCP every
 * request needs "Authorization: Bearer <token>" (the token_file's), and
 * a token holder may do everything.  Errors are JSON:
 * {"error": "...", "code": N}.
 *
 * A uid that is not an administrator may hold max_connections_per_uid
 * connections on the UNIX socket (so that one local user cannot take
 * all HTTP_CONNECTIONS): one beyond is shut down as it starts, before
 * any request (the client sees the connection closed).  conn_lock
 * protects the per-uid counts (conns).
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netdb.h>

#include <jansson.h>
#include <microhttpd.h>

#include "dmaplaned.h"

#define HTTP_CONNECTIONS	64
#define HTTP_TIMEOUT		60	/* idle seconds; event streams send keepalives */
#define HTTP_URL_MAX		256

struct listener {
	bool tcp;
	int fd;
	struct MHD_Daemon *d;
};

static struct listener unix_l = { .fd = -1 };
static struct listener tcp_l = { .tcp = true, .fd = -1 };
static const struct dpd_config *conf;
/* Connections on the UNIX socket of each uid that is not an administrator. */
struct conn_count {
	struct conn_count *next;
	uid_t uid;
	unsigned int n;
};

static pthread_mutex_t conn_lock = PTHREAD_MUTEX_INITIALIZER;
static struct conn_count *conns;	/* under conn_lock */

/* The request being answered in this connection's thread, for -v logs. */
static __thread const char *cur_method, *cur_url;

struct req {
	bool responded;		/* a response was queued before the body */
	bool too_large;
	int auth;		/* 0, or the HTTP status refusing the client */
	struct dpd_cred cred;
	/* a peer daemon with the token of its pair (the peer's token_file) */
	char peer[DPD_NAME_MAX + 1];
	size_t len;
	char *body;
};

/* http_status - the HTTP status for a negative errno of the daemon's calls */
static unsigned int http_status(int err)
{
	switch (err) {
	case -EINVAL:
	case -ERANGE:	return MHD_HTTP_BAD_REQUEST;
	case -EACCES:
	case -EPERM:	return MHD_HTTP_FORBIDDEN;
	case -ENOENT:	return MHD_HTTP_NOT_FOUND;
	case -EBUSY:
	case -EALREADY:
	case -EEXIST:	return MHD_HTTP_CONFLICT;
	case -ENOSPC:
	case -ENOMEM:	return MHD_HTTP_INSUFFICIENT_STORAGE;
	case -ENODEV:
	case -EHOSTDOWN: return MHD_HTTP_SERVICE_UNAVAILABLE;
	case -EDQUOT:	return MHD_HTTP_TOO_MANY_REQUESTS;
	case -EIO:
	case -EPROTO:	return MHD_HTTP_BAD_GATEWAY;
	case -EOPNOTSUPP: return MHD_HTTP_NOT_IMPLEMENTED;
	default:	return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
}

static enum MHD_Result send_text(struct MHD_Connection *c, unsigned int status,
				 char *text, const char *allow)
{
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!text)
		return MHD_NO;	/* out of memory: libmicrohttpd closes the connection */
	r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	if (status == MHD_HTTP_UNAUTHORIZED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					"Bearer realm=\"dmaplaned\"");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	if (dpd_verbose)
		log_info("%s %s: %u", cur_method ? cur_method : "?",
			 cur_url ? cur_url : "?", status);
	return ret;
}

/* json_line - @o (taken) as compact JSON and a newline; NULL without memory */
static char *json_line(json_t *o)
{
	char *text = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	if (text) {
		char *t = realloc(text, strlen(text) + 2);

		if (t) {
			strcat(t, "\n");
			text = t;
		}
	}
	return text;
}

/* send_json - respond with @o (taken; NULL: 500) */
static enum MHD_Result send_json(struct MHD_Connection *c, unsigned int status,
				 json_t *o)
{
	if (!o)
		return send_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				 strdup("{\"error\":\"out of memory\",\"code\":500}\n"),
				 NULL);
	return send_text(c, status, json_line(o), NULL);
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned int status,
				  const char *msg, const char *allow)
{
	json_t *o = json_pack("{s:s, s:i}", "error", msg, "code", (int)status);

	if (!o)
		return MHD_NO;
	return send_text(c, status, json_line(o), allow);
}

static enum MHD_Result send_errno(struct MHD_Connection *c, int err)
{
	return send_error(c, http_status(err),
			  err == -ENOENT ? "no such arena" :
			  err == -EACCES ? "permission denied" :
			  err == -ENODEV ? "no dmaplane device" :
			  err == -EBUSY ? "a move holds the arena" :
			  err == -EALREADY ? "the move has ended" : strerror(-err), NULL);
}

/* Who is asking: req->cred, or req->auth = 401/403/500 */
static void authenticate(struct listener *l, struct MHD_Connection *c,
			 struct req *q)
{
	const union MHD_ConnectionInfo *ci;
	const char *h, *bearer;

	if (l->tcp) {
		h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						MHD_HTTP_HEADER_AUTHORIZATION);
		bearer = h && !strncmp(h, "Bearer ", 7) ? h + 7 : NULL;
		if (bearer && token_equal(bearer, conf->token)) {
			q->cred.token = true;
			h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Dmaplane-Node");
			if (h && name_valid(h))
				grants_renew(h);
			return;
		}
		/* A peer with a token of its own: that node, the mesh's requests only. */
		if (bearer && peer_token_node(bearer, q->peer, sizeof(q->peer))) {
			q->cred.token = true;
			grants_renew(q->peer);
			return;
		}
		q->auth = MHD_HTTP_UNAUTHORIZED;
		return;
	}
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci || cred_from_socket(ci->connect_fd, &q->cred))
		q->auth = MHD_HTTP_INTERNAL_SERVER_ERROR;
}

/* ---- endpoints ---------------------------------------------------------- */

static bool is(const char *method, const char *m)
{
	return !strcmp(method, m);
}

/* decimal_id - @s is the id of a move or grant in a path: 1 to 19 digits */
static bool decimal_id(const char *s)
{
	return *s && strlen(s) <= 19 && !s[strspn(s, "0123456789")];
}

/* The request's body as JSON, or an error response sent (*@sent). */
static json_t *body_json(struct MHD_Connection *c, struct req *q,
			 enum MHD_Result *sent)
{
	json_error_t jerr;
	char err[256];
	json_t *o;

	o = json_loadb(q->body ? q->body : "", q->len, JSON_REJECT_DUPLICATES, &jerr);
	if (!o) {
		snprintf(err, sizeof(err), "bad JSON: %d:%d: %s", jerr.line,
			 jerr.column, jerr.text);
		*sent = send_error(c, MHD_HTTP_BAD_REQUEST, err, NULL);
	}
	return o;
}

/* POST /v1/peers (administrators): {"name", "address", "fabric_address"} */
static enum MHD_Result post_peer(struct MHD_Connection *c, struct req *q)
{
	struct dpd_peer p = { 0 };
	enum MHD_Result sent = MHD_NO;
	char err[256] = "";
	const char *key;
	json_t *o, *v;
	int ret = 0;

	if (!cred_admin(&q->cred))
		return send_error(c, MHD_HTTP_FORBIDDEN, "adding peers needs an administrator", NULL);
	o = body_json(c, q, &sent);
	if (!o)
		return sent;
	if (!json_is_object(o)) {
		ret = -EINVAL;
		snprintf(err, sizeof(err), "a peer is an object {\"name\": ..., \"address\": ...}");
	}
	json_object_foreach(o, key, v) {
		const char *s = json_string_value(v);

		if (ret)
			break;
		if (!s || strlen(s) != json_string_length(v) || strlen(s) > DPD_NAME_MAX) {
			ret = -EINVAL;
			snprintf(err, sizeof(err), "%.64s: a string of at most %d characters",
				 key, DPD_NAME_MAX);
		} else if (!strcmp(key, "name") && name_valid(s)) {
			strcpy(p.name, s);
		} else if (!strcmp(key, "address")) {
			strcpy(p.address, s);
		} else if (!strcmp(key, "fabric_address")) {
			strcpy(p.fabric_address, s);
		} else {
			ret = -EINVAL;
			snprintf(err, sizeof(err), "unknown key or bad name \"%.64s\"", key);
		}
	}
	json_decref(o);
	if (!ret && (!p.name[0] || !p.address[0])) {
		ret = -EINVAL;
		snprintf(err, sizeof(err), "a peer needs a name and an address");
	}
	if (!ret)
		ret = peer_add(&p, err, sizeof(err));
	if (ret)
		return err[0] ? send_error(c, http_status(ret), err, NULL) : send_errno(c, ret);
	o = node_get_json(p.name, &ret);
	return o ? send_json(c, MHD_HTTP_CREATED, o) : send_errno(c, ret);
}

/* /v1/peers, /v1/peers/NAME */
static enum MHD_Result peers_route(struct MHD_Connection *c, const char *rest,
				   const char *method, struct req *q)
{
	int err;

	if (!*rest) {
		if (is(method, "GET"))
			return send_json(c, MHD_HTTP_OK, peers_json());
		if (is(method, "POST"))
			return post_peer(c, q);
		return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "GET, POST");
	}
	if (*rest++ != '/' || !name_valid(rest))
		return send_error(c, MHD_HTTP_NOT_FOUND, "no such peer", NULL);
	if (is(method, "GET")) {
		json_t *o = node_get_json(rest, &err);

		return o ? send_json(c, MHD_HTTP_OK, o) :
		       send_error(c, http_status(err), "no such peer", NULL);
	}
	if (!is(method, "DELETE"))
		return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "GET, DELETE");
	if (!cred_admin(&q->cred))
		return send_error(c, MHD_HTTP_FORBIDDEN, "removing peers needs an administrator", NULL);
	err = peer_remove(rest);
	if (err)
		return send_error(c, http_status(err), err == -ENOENT ? "no such peer" :
				  strerror(-err), NULL);
	return send_text(c, MHD_HTTP_NO_CONTENT, strdup(""), NULL);
}

static enum MHD_Result move_route(struct MHD_Connection *c, const char *id,
				  const char *method, struct req *q);

/*
 * /v1/nodes/NAME/moves/ID: GET or DELETE a move that runs at node NAME
 * (one relayed there: its source is there), asked of its daemon for the
 * requester; NAME this node's: /v1/moves/ID.
 */
static enum MHD_Result node_move_route(struct MHD_Connection *c, const char *node,
				       const char *slash, const char *method,
				       struct req *q)
{
	const char *id = slash + 7;
	char name[HTTP_URL_MAX], msg[256] = "";
	json_t *o;
	int err;

	snprintf(name, sizeof(name), "%.*s", (int)(slash - node), node);
	if (!name_valid(name))
		return send_error(c, MHD_HTTP_NOT_FOUND, "no such node", NULL);
	if (!strcmp(name, conf->node_name))
		return move_route(c, id, method, q);
	if (!decimal_id(id))
		return send_error(c, MHD_HTTP_NOT_FOUND, "no such move", NULL);
	if (!is(method, "GET") && !is(method, "DELETE"))
		return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed",
				  "GET, DELETE");
	o = move_relayed(name, strtoull(id, NULL, 10), is(method, "DELETE"), &q->cred,
			 &err, msg, sizeof(msg));
	if (!o)
		return msg[0] ? send_error(c, http_status(err), msg, NULL) : send_errno(c, err);
	return send_json(c, is(method, "DELETE") ? MHD_HTTP_ACCEPTED : MHD_HTTP_OK, o);
}

/* /v1/nodes, /v1/nodes/NAME, /v1/nodes/NAME/arenas, /v1/nodes/NAME/moves/ID */
static enum MHD_Result nodes_route(struct MHD_Connection *c, const char *rest,
				   const char *method, struct req *q)
{
	char name[HTTP_URL_MAX];
	const char *slash;
	json_t *o;
	int err;

	if (*rest == '/' && (slash = strchr(rest + 1, '/')) && !strncmp(slash, "/moves/", 7))
		return node_move_route(c, rest + 1, slash, method, q);
	if (!is(method, "GET"))
		return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "GET");
	if (!*rest)
		return send_json(c, MHD_HTTP_OK, nodes_json());
	if (*rest++ != '/')
		return send_error(c, MHD_HTTP_NOT_FOUND, "no such path", NULL);
	slash = strchr(rest, '/');
	snprintf(name, sizeof(name), "%.*s",
		 (int)(slash ? (size_t)(slash - rest) : strlen(rest)), rest);
	if (!name_valid(name))
		return send_error(c, MHD_HTTP_NOT_FOUND, "no such node", NULL);
	if (!slash) {
		o = node_get_json(name, &err);
		return o ? send_json(c, MHD_HTTP_OK, o) :
		       send_error(c, http_status(err), "no such node", NULL);
	}
	if (strcmp(slash, "/arenas"))
		return send_error(c, MHD_HTTP_NOT_FOUND, "no such path", NULL);
	o = node_arenas_json(name, &q->cred, &err);
	return o ? send_json(c, MHD_HTTP_OK, o) :
	       send_error(c, http_status(err), err == -ENOENT ? "no such node" :
			  err == -EHOSTDOWN ? "the node never answered: no arena table" :
			  strerror(-err), NULL);
}

/*
 * /v1/mesh/...: what peer daemons ask each other.  info: administrators
 * (it has the remote keys); grants, dedup and dedup/copy: token holders
 * naming their node in X-Dmaplane-Node (the mesh's daemons); a peer with
 * a token of its own is the node of that token.
 */
static enum MHD_Result mesh_route(struct MHD_Connection *c, const char *rest,
				  const char *method, struct req *q)
{
	const char *node = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						       "X-Dmaplane-Node"), *idx;
	enum MHD_Result sent = MHD_NO;
	char msg[256] = "";
	json_t *o, *g;
	int err;

	/* A peer with a token of its own is that node and no other. */
	if (q->peer[0] && node && strcmp(node, q->peer))
		return send_error(c, MHD_HTTP_FORBIDDEN,
				  "X-Dmaplane-Node names another node than the token's", NULL);
	if (q->peer[0])
		node = q->peer;

	if (!strcmp(rest, "info")) {
		if (!is(method, "GET"))
			return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "GET");
		if (!cred_admin(&q->cred))
			return send_error(c, MHD_HTTP_FORBIDDEN,
					  "the mesh's information needs an administrator", NULL);
		return send_json(c, MHD_HTTP_OK, mesh_info_json());
	}
	if (!strcmp(rest, "dedup") || !strcmp(rest, "dedup/copy")) {
		if (!is(method, "POST"))
			return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "POST");
		if (!q->cred.token)
			return send_error(c, MHD_HTTP_FORBIDDEN,
					  "dedup lookups are for the mesh's daemons (the token)", NULL);
		o = body_json(c, q, &sent);
		if (!o)
			return sent;
		g = !strcmp(rest, "dedup") ? mesh_dedup_lookup(o, node, &err, msg, sizeof(msg)) :
		    mesh_dedup_copy(o, node, &err, msg, sizeof(msg));
		json_decref(o);
		if (!g)
			return msg[0] ? send_error(c, http_status(err), msg, NULL) :
			       send_errno(c, err);
		return send_json(c, MHD_HTTP_OK, g);
	}
	if (!strcmp(rest, "moves") || !strncmp(rest, "moves/", 6)) {
		const char *id = rest[5] ? rest + 6 : NULL;
		unsigned int status = 0;

		if (!is(method, "POST"))
			return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "POST");
		if (!q->cred.token)
			return send_error(c, MHD_HTTP_FORBIDDEN,
					  "relayed moves are for the mesh's daemons (the token)", NULL);
		if (id && !decimal_id(id))
			return send_error(c, MHD_HTTP_NOT_FOUND, "no such move", NULL);
		o = body_json(c, q, &sent);
		if (!o)
			return sent;
		g = mesh_move(o, node, id, &status, &err, msg, sizeof(msg));
		json_decref(o);
		if (!g)
			return msg[0] ? send_error(c, http_status(err), msg, NULL) :
			       err == -ENOENT && id ?
			       send_error(c, MHD_HTTP_NOT_FOUND, "no such move", NULL) :
			       send_errno(c, err);
		return send_json(c, status, g);
	}
	if (strcmp(rest, "grants") && strncmp(rest, "grants/", 7))
		return send_error(c, MHD_HTTP_NOT_FOUND, "no such path", NULL);
	if (!q->cred.token)
		return send_error(c, MHD_HTTP_FORBIDDEN,
				  "grants are for the mesh's daemons (the token)", NULL);
	if (!strcmp(rest, "grants")) {
		if (!is(method, "POST"))
			return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "POST");
		o = body_json(c, q, &sent);
		if (!o)
			return sent;
		g = grant_create(o, node, &err, msg, sizeof(msg));
		json_decref(o);
		if (!g)
			return msg[0] ? send_error(c, http_status(err), msg, NULL) :
			       send_errno(c, err);
		return send_json(c, MHD_HTTP_CREATED, g);
	}
	rest += 7;
	if (!decimal_id(rest))
		return send_error(c, MHD_HTTP_NOT_FOUND, "no such grant", NULL);
	if (!is(method, "DELETE"))
		return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "DELETE");
	idx = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "index");
	err = grant_delete(strtoull(rest, NULL, 10), node, idx && !strcmp(idx, "1"));
	if (err)
		return send_error(c, MHD_HTTP_NOT_FOUND, "no such grant", NULL);
	return send_text(c, MHD_HTTP_NO_CONTENT, strdup(""), NULL);
}

/* ?offset=N&length=N of GET /v1/arenas/NAME/xxh128: decimal */
static int query_u64(struct MHD_Connection *c, const char *key, uint64_t *out)
{
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, key);
	char *end;

	if (!v || !*v || strlen(v) > 20 || v[strspn(v, "0123456789")])
		return -EINVAL;
	errno = 0;
	*out = strtoull(v, &end, 10);
	return errno ? -EINVAL : 0;
}

static enum MHD_Result post_arena(struct MHD_Connection *c, struct req *q)
{
	struct dpd_arena_spec spec;
	json_error_t jerr;
	char err[256], loc[HTTP_URL_MAX];
	json_t *o;
	int ret;

	if (!cred_admin(&q->cred) &&
	    (conf->create_group < 0 || !cred_in_group(&q->cred, conf->create_group)))
		return send_error(c, MHD_HTTP_FORBIDDEN,
				  "creating arenas needs root, the daemon's uid or the create_group",
				  NULL);
	o = json_loadb(q->body ? q->body : "", q->len, JSON_REJECT_DUPLICATES, &jerr);
	if (!o) {
		snprintf(err, sizeof(err), "bad JSON: %d:%d: %s", jerr.line,
			 jerr.column, jerr.text);
		return send_error(c, MHD_HTTP_BAD_REQUEST, err, NULL);
	}
	memset(&spec, 0, sizeof(spec));
	spec.owner = q->cred.uid;
	spec.group = q->cred.gid;
	spec.mode = 0600;
	err[0] = '\0';
	ret = arena_spec_from_json(o, &spec, err, sizeof(err));
	json_decref(o);
	if (ret)
		return send_error(c, MHD_HTTP_BAD_REQUEST, err, NULL);
	if (!cred_admin(&q->cred) &&
	    (spec.owner != q->cred.uid || !cred_in_group(&q->cred, spec.group)))
		return send_error(c, MHD_HTTP_FORBIDDEN,
				  "only an administrator may give an arena to another uid or group",
				  NULL);
	ret = arena_create(&spec, !cred_admin(&q->cred));
	if (ret == -EEXIST)
		return send_error(c, MHD_HTTP_CONFLICT, "an arena of that name exists", NULL);
	if (ret == -ENOSPC)
		return send_error(c, MHD_HTTP_INSUFFICIENT_STORAGE,
				  "max_arenas or max_total_bytes reached", NULL);
	if (ret == -EDQUOT) {
		snprintf(err, sizeof(err), "uid %u: max_arenas_per_uid (%u) or "
			 "max_bytes_per_uid (%llu) reached", (unsigned int)spec.owner,
			 conf->max_arenas_per_uid,
			 (unsigned long long)conf->max_bytes_per_uid);
		return send_error(c, MHD_HTTP_TOO_MANY_REQUESTS, err, NULL);
	}
	if (ret)
		return send_errno(c, ret);
	/* The creator sees what it made, whatever mode it gave it. */
	o = arena_get_json(spec.name, &(struct dpd_cred){ .token = true }, false, &ret);
	if (!o)	/* destroyed meanwhile */
		return send_errno(c, ret);
	snprintf(loc, sizeof(loc), "/v1/arenas/%s", spec.name);
	{
		char *text = json_dumps(o, JSON_COMPACT);
		struct MHD_Response *r;
		enum MHD_Result mr;

		json_decref(o);
		if (!text)
			return MHD_NO;
		r = MHD_create_response_from_buffer(strlen(text), text,
						    MHD_RESPMEM_MUST_FREE);
		if (!r) {
			free(text);
			return MHD_NO;
		}
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
		MHD_add_response_header(r, MHD_HTTP_HEADER_LOCATION, loc);
		mr = MHD_queue_response(c, MHD_HTTP_CREATED, r);
		MHD_destroy_response(r);
		return mr;
	}
}

static enum MHD_Result post_move(struct MHD_Connection *c, struct req *q)
{
	json_error_t jerr;
	char err[256];
	json_t *o, *m;
	int ret;

	o = json_loadb(q->body ? q->body : "", q->len, JSON_REJECT_DUPLICATES, &jerr);
	if (!o) {
		snprintf(err, sizeof(err), "bad JSON: %d:%d: %s", jerr.line,
			 jerr.column, jerr.text);
		return send_error(c, MHD_HTTP_BAD_REQUEST, err, NULL);
	}
	m = move_create(o, &q->cred, &ret, err, sizeof(err));
	json_decref(o);
	if (!m)
		return err[0] ? send_error(c, http_status(ret), err, NULL) : send_errno(c, ret);
	return send_json(c, MHD_HTTP_ACCEPTED, m);
}

/* /v1/moves/ID: ID is decimal */
static enum MHD_Result move_route(struct MHD_Connection *c, const char *id,
				  const char *method, struct req *q)
{
	unsigned long long v;
	json_t *o;
	char *end;
	int err;

	if (!decimal_id(id))
		return send_error(c, MHD_HTTP_NOT_FOUND, "no such move", NULL);
	v = strtoull(id, &end, 10);
	if (is(method, "GET")) {
		o = move_get_json(v, &q->cred, &err);
		return o ? send_json(c, MHD_HTTP_OK, o) :
		       send_error(c, http_status(err), err == -ENOENT ? "no such move" :
				  "permission denied", NULL);
	}
	if (is(method, "DELETE")) {
		err = move_cancel(v, &q->cred);
		if (err == -ENOENT)
			return send_error(c, MHD_HTTP_NOT_FOUND, "no such move", NULL);
		if (err)
			return send_errno(c, err);
		o = move_get_json(v, &q->cred, &err);
		return o ? send_json(c, MHD_HTTP_ACCEPTED, o) : send_errno(c, err);
	}
	return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "GET, DELETE");
}

static ssize_t sse_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
	ssize_t n = sse_read(cls, buf, max);

	(void)pos;
	return n < 0 ? MHD_CONTENT_READER_END_OF_STREAM : n;
}

static void sse_free(void *cls)
{
	sse_close(cls);
}

static enum MHD_Result get_events(struct MHD_Connection *c, struct req *q)
{
	struct MHD_Response *r;
	struct dpd_sse *s;
	enum MHD_Result ret;
	char err[128];
	int e;

	s = sse_open(&q->cred, cred_admin(&q->cred) ? 0 : conf->max_streams_per_uid, &e);
	if (!s && e == -EDQUOT) {
		snprintf(err, sizeof(err), "uid %u has %u event streams (max_streams_per_uid)",
			 (unsigned int)q->cred.uid, conf->max_streams_per_uid);
		return send_error(c, MHD_HTTP_TOO_MANY_REQUESTS, err, NULL);
	}
	if (!s)
		return send_errno(c, e);
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, sse_reader,
					      s, sse_free);
	if (!r) {
		sse_close(s);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}


/* route - dispatch a complete request */
static enum MHD_Result route(struct MHD_Connection *c, const char *url,
			     const char *method, struct req *q)
{
	char name[HTTP_URL_MAX];
	const char *rest, *slash;
	json_t *o;
	int err = 0;

	if (strlen(url) >= HTTP_URL_MAX || strncmp(url, "/v1/", 4))
		return send_error(c, MHD_HTTP_NOT_FOUND, "no such path", NULL);
	rest = url + 4;
	/*
	 * A peer's own token is good for what peer daemons ask each other:
	 * /v1/mesh/... and the checksum at the end of a move.
	 */
	if (q->peer[0] && strncmp(rest, "mesh/", 5) &&
	    !(!strncmp(rest, "arenas/", 7) && strchr(rest + 7, '/') &&
	      !strcmp(strchr(rest + 7, '/'), "/xxh128")))
		return send_error(c, MHD_HTTP_FORBIDDEN,
				  "a peer's own token is good for the mesh's requests only", NULL);
	if (!strcmp(rest, "node")) {
		if (!is(method, "GET"))
			return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "GET");
		return send_json(c, MHD_HTTP_OK, node_json(conf));
	}
	if (!strncmp(rest, "peers", 5) && (rest[5] == '\0' || rest[5] == '/'))
		return peers_route(c, rest + 5, method, q);
	if (!strncmp(rest, "nodes", 5) && (rest[5] == '\0' || rest[5] == '/'))
		return nodes_route(c, rest + 5, method, q);
	if (!strncmp(rest, "mesh/", 5))
		return mesh_route(c, rest + 5, method, q);
	if (!strcmp(rest, "events")) {
		if (!is(method, "GET"))
			return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "GET");
		return get_events(c, q);
	}
	if (!strcmp(rest, "arenas")) {
		if (is(method, "GET"))
			return send_json(c, MHD_HTTP_OK, arenas_list_json(&q->cred));
		if (is(method, "POST"))
			return post_arena(c, q);
		return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "GET, POST");
	}
	if (!strcmp(rest, "moves")) {
		if (is(method, "GET"))
			return send_json(c, MHD_HTTP_OK, moves_list_json(&q->cred));
		if (is(method, "POST"))
			return post_move(c, q);
		return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "GET, POST");
	}
	if (!strncmp(rest, "moves/", 6))
		return move_route(c, rest + 6, method, q);
	if (strncmp(rest, "arenas/", 7))
		return send_error(c, MHD_HTTP_NOT_FOUND, "no such path", NULL);
	rest += 7;
	slash = strchr(rest, '/');
	snprintf(name, sizeof(name), "%.*s",
		 (int)(slash ? (size_t)(slash - rest) : strlen(rest)), rest);
	if (!name_valid(name))
		return send_error(c, MHD_HTTP_NOT_FOUND, "no such arena", NULL);
	if (slash && !strcmp(slash, "/stats")) {
		if (!is(method, "GET"))
			return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "GET");
		o = arena_get_json(name, &q->cred, true, &err);
		return o ? send_json(c, MHD_HTTP_OK, o) : send_errno(c, err);
	}
	if (slash && !strcmp(slash, "/xxh128")) {
		uint64_t off, len;

		if (!is(method, "GET"))
			return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "GET");
		if (query_u64(c, "offset", &off) || query_u64(c, "length", &len))
			return send_error(c, MHD_HTTP_BAD_REQUEST,
					  "offset and length: decimal query arguments", NULL);
		o = arena_xxh128_json(name, &q->cred, off, len, &err);
		return o ? send_json(c, MHD_HTTP_OK, o) :
		       err == -ERANGE ? send_error(c, MHD_HTTP_BAD_REQUEST,
						   "range empty or beyond the arena", NULL) :
		       send_errno(c, err);
	}
	if (slash && !strcmp(slash, "/index")) {
		enum MHD_Result sent = MHD_NO;
		char msg[256];
		json_t *b;

		if (!is(method, "POST"))
			return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "POST");
		b = body_json(c, q, &sent);
		if (!b)
			return sent;
		o = arena_index_json(name, &q->cred, b, &err, msg, sizeof(msg));
		json_decref(b);
		if (!o)
			return msg[0] ? send_error(c, http_status(err), msg, NULL) :
			       err == -ENOSPC ? send_error(c, http_status(err),
							   "the dedup index is full", NULL) :
			       send_errno(c, err);
		return send_json(c, MHD_HTTP_OK, o);
	}
	if (slash)
		return send_error(c, MHD_HTTP_NOT_FOUND, "no such path", NULL);
	if (is(method, "GET")) {
		o = arena_get_json(name, &q->cred, false, &err);
		return o ? send_json(c, MHD_HTTP_OK, o) : send_errno(c, err);
	}
	if (is(method, "DELETE")) {
		err = arena_destroy(name, &q->cred);
		if (err)
			return send_errno(c, err);
		return send_text(c, MHD_HTTP_NO_CONTENT, strdup(""), NULL);
	}
	return send_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed", "GET, DELETE");
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c,
			       const char *url, const char *method,
			       const char *version, const char *upload,
			       size_t *upload_size, void **con_cls)
{
	struct listener *l = cls;
	struct req *q = *con_cls;
	const char *h;

	(void)version;
	cur_method = method;
	cur_url = url;
	if (!q) {
		q = calloc(1, sizeof(*q));
		if (!q)
			return MHD_NO;
		*con_cls = q;
		authenticate(l, c, q);
		if (q->auth) {
			q->responded = true;
			return send_error(c, q->auth, q->auth == MHD_HTTP_UNAUTHORIZED ?
					  "a valid bearer token is needed" :
					  "cannot tell who is asking", NULL);
		}
		h = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						MHD_HTTP_HEADER_CONTENT_LENGTH);
		if (h && (strlen(h) > 9 || strtoull(h, NULL, 10) > DPD_BODY_MAX)) {
			q->responded = true;
			return send_error(c, MHD_HTTP_CONTENT_TOO_LARGE,
					  "request body too large", NULL);
		}
		return MHD_YES;
	}
	if (q->responded) {
		*upload_size = 0;
		return MHD_YES;
	}
	if (*upload_size) {
		if (q->too_large || *upload_size > DPD_BODY_MAX - q->len) {
			q->too_large = true;
		} else {
			char *b = realloc(q->body, q->len + *upload_size + 1);

			if (!b)
				return MHD_NO;
			memcpy(b + q->len, upload, *upload_size);
			q->len += *upload_size;
			b[q->len] = '\0';
			q->body = b;
		}
		*upload_size = 0;
		return MHD_YES;
	}
	if (q->too_large)
		return send_error(c, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large", NULL);
	return route(c, url, method, q);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
		      enum MHD_RequestTerminationCode toe)
{
	struct req *q = *con_cls;

	(void)cls;
	(void)c;
	(void)toe;
	if (q) {
		free(q->body);
		free(q);
		*con_cls = NULL;
	}
}

/*
 * notify_connection - count a UNIX socket connection against its uid
 * (*@socket_context: its struct conn_count, or NULL when not counted),
 * or shut it down when the uid holds max_connections_per_uid already.
 */
static void notify_connection(void *cls, struct MHD_Connection *c,
			      void **socket_context,
			      enum MHD_ConnectionNotificationCode toe)
{
	const struct listener *l = cls;
	const union MHD_ConnectionInfo *ci;
	struct conn_count *cc = *socket_context;
	struct dpd_cred cred;
	bool refuse = false;

	if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
		if (!cc)
			return;
		pthread_mutex_lock(&conn_lock);
		cc->n--;	/* kept at 0: a uid's entry is reused */
		pthread_mutex_unlock(&conn_lock);
		*socket_context = NULL;
		return;
	}
	if (l->tcp || !conf->max_connections_per_uid)
		return;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	if (!ci || cred_from_socket(ci->connect_fd, &cred) || cred_admin(&cred))
		return;
	pthread_mutex_lock(&conn_lock);
	for (cc = conns; cc && cc->uid != cred.uid; cc = cc->next)
		;
	if (!cc) {
		cc = calloc(1, sizeof(*cc));
		if (cc) {
			cc->uid = cred.uid;
			cc->next = conns;
			conns = cc;
		}
	}
	if (!cc || cc->n >= conf->max_connections_per_uid)
		refuse = true;
	else
		cc->n++;
	pthread_mutex_unlock(&conn_lock);
	if (refuse) {
		if (dpd_verbose)
			log_info("http: uid %u has %u connections (max_connections_per_uid): "
				 "one more refused", (unsigned int)cred.uid,
				 conf->max_connections_per_uid);
		shutdown(ci->connect_fd, SHUT_RDWR);
		return;
	}
	*socket_context = cc;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char buf[512];

	(void)cls;
	/* Its messages are about malformed requests it refused itself. */
	if (!dpd_verbose)
		return;
	vsnprintf(buf, sizeof(buf), fmt, ap);
	buf[strcspn(buf, "\n")] = '\0';
	/* libmicrohttpd 0.9.75 says this even when it is the first option. */
	if (strstr(buf, "MHD_OPTION_EXTERNAL_LOGGER is not the first"))
		return;
	log_info("http: %s", buf);
}

static int start(struct listener *l)
{
	l->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION |
				MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG,
				0, NULL, NULL, handler, l,
				MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				MHD_OPTION_LISTEN_SOCKET, (MHD_socket)l->fd,
				MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HTTP_CONNECTIONS,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)HTTP_TIMEOUT,
				MHD_OPTION_NOTIFY_COMPLETED, completed, NULL,
				MHD_OPTION_NOTIFY_CONNECTION, notify_connection, l,
				MHD_OPTION_END);
	if (!l->d)
		return -EIO;
	l->fd = -1;	/* MHD_stop_daemon() closes it */
	return 0;
}

/* tcp_listen - bind the configured TCP address (numeric, v4 or v6) */
static int tcp_listen(const char *addr, unsigned int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE };
	struct addrinfo *ai;
	char svc[16];
	int fd, one = 1, ret;

	snprintf(svc, sizeof(svc), "%u", port);
	ret = getaddrinfo(addr, svc, &hints, &ai);
	if (ret) {
		log_err("tcp_address %s: %s", addr, gai_strerror(ret));
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
		ret = -errno;
		close(fd);
		goto out;
	}
	ret = fd;
out:
	freeaddrinfo(ai);
	return ret;
}

/* http_start - listen on the UNIX socket, and on TCP when configured */
int http_start(const struct dpd_config *cfg)
{
	int ret;

	conf = cfg;
	unix_l.fd = unix_listen(cfg->socket_path, cfg->socket_mode);
	if (unix_l.fd < 0) {
		log_err("%s: %s", cfg->socket_path, strerror(-unix_l.fd));
		return unix_l.fd;
	}
	ret = start(&unix_l);
	if (ret) {
		log_err("cannot start the HTTP server on %s", cfg->socket_path);
		return ret;
	}
	log_info("REST API on unix:%s", cfg->socket_path);
	if (!cfg->tcp_address)
		return 0;
	tcp_l.fd = tcp_listen(cfg->tcp_address, cfg->tcp_port);
	if (tcp_l.fd < 0) {
		log_err("tcp %s port %u: %s", cfg->tcp_address, cfg->tcp_port,
			strerror(-tcp_l.fd));
		return tcp_l.fd;
	}
	ret = start(&tcp_l);
	if (ret) {
		log_err("cannot start the HTTP server on TCP");
		return ret;
	}
	log_info("REST API on tcp %s port %u (bearer token)", cfg->tcp_address,
		 cfg->tcp_port);
	return 0;
}

void http_stop(void)
{
	struct listener *ls[] = { &unix_l, &tcp_l };
	size_t i;

	for (i = 0; i < 2; i++) {
		if (ls[i]->d)
			MHD_stop_daemon(ls[i]->d);
		ls[i]->d = NULL;
		if (ls[i]->fd >= 0)
			close(ls[i]->fd);
		ls[i]->fd = -1;
	}
	if (conf && conf->socket_path)
		unlink(conf->socket_path);
	pthread_mutex_lock(&conn_lock);
	while (conns) {
		struct conn_count *cc = conns;

		conns = cc->next;
		free(cc);
	}
	pthread_mutex_unlock(&conn_lock);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The mesh: peer daemons, their state and arena tables, and the grants
 * this daemon hands to peers that move bytes into its arenas.
 *
 * Peers come from the configuration ("peers") or from POST /v1/peers.
 * Each has a thread that asks the peer daemon for its node information
 * (GET /v1/mesh/info over its TCP REST API, with the mesh's bearer token,
 * libcurl) every PEER_INTERVAL seconds: its node name, its endpoint's
 * dmaplane name and its arena table with the arenas' remote keys.  A peer
 * that answers is "up"; one that does not answer PEER_FAILS times in a
 * row, or once right after a move found it failing, or whose move timed
 * out, is "down"; events peer.up and
 * peer.down tell the change.  A peer with a fabric_address is also added
 * to the module's peer table (dpctl peer add) when it is added here.
 *
 * The access model of moves across nodes.  The daemons of a mesh share
 * one token (every daemon's token_file holds the same line), or a pair of
 * daemons has one of its own (the peer's token_file: mesh_http() sends
 * it, and http.c takes a request under it for that node's, restricted to
 * /v1/mesh/... and the end-of-move checksum), and trust
 * each other to name the requester of a move truthfully; uids and gids
 * mean the same on every node (as with NFS AUTH_SYS).  Before node A puts
 * into arena X of node B, A's daemon asks B's for a grant (POST
 * /v1/mesh/grants) naming the requester's uid, gid and groups, or
 * "admin" when the requester is an administrator on A (root, A's daemon
 * uid, A's token).  B checks that this requester has w on X (owner,
 * group, mode, as for a local move), that the range lies in X, and then
 * holds X (it cannot be destroyed: 409) until A releases the grant or
 * the grant's lease (GRANT_LEASE s, renewed by every request from A)
 * runs out.  A move out of arena Y of node B into an arena of A (A gets
 * from Y) asks for a read grant ("access": "read"): B checks that the
 * requester has r on Y; a read grant is good for nothing else (no
 * dedup lookup or copy, no index).  The remote key itself is in B's node information, which
 * only token holders (the mesh's daemons) may read.  Under the same
 * grant, A's daemon may ask which chunks of a deduplicated move B holds
 * (POST /v1/mesh/dedup: B's index, answered for the granted range), have
 * B copy held chunks into the granted range (POST /v1/mesh/dedup/copy)
 * and, releasing the grant after a completed move, have B index the
 * range (DELETE /v1/mesh/grants/ID?index=1).
 *
 * Locking: peers_lock protects the peer list and every field of every
 * struct peer but @thread (written once before the list sees the peer)
 * and is never held across a network call or a process start;
 * grants_lock protects the grant list.  Neither is taken inside the
 * other; arena.c's lock may be taken under neither (arena_hold() and
 * arena_release() are called with both dropped).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>
#include <dmaplane.h>

#include "dmaplaned.h"
#include "dedup.h"

#define PEER_INTERVAL	3	/* seconds between heartbeats */
#define PEER_TIMEOUT_MS	2500	/* a heartbeat's answer, at most */
#define PEER_FAILS	2	/* heartbeats unanswered: down */
#define PEER_REPLY_MAX	(4 << 20)	/* bytes of a peer's answer */
#define GRANT_LEASE	30	/* seconds a grant lives without a request */
#define MAX_PEERS	64

extern char **environ;

enum peer_state { PEER_UNKNOWN, PEER_UP, PEER_DOWN };
static const char *const peer_states[] = {
	[PEER_UNKNOWN] = "unknown", [PEER_UP] = "up", [PEER_DOWN] = "down",
};

struct peer {
	struct peer *next;
	struct dpd_peer cfg;
	char url[DPD_NAME_MAX + 32];	/* "http://host:port" */
	pthread_t thread;
	bool stop;		/* the thread is to end */
	bool poke;		/* heartbeat now */
	bool suspect;		/* a move found it failing: down at the first miss */
	enum peer_state state;
	unsigned int fails;	/* heartbeats unanswered in a row */
	char error[160];	/* why it is down */
	time_t since, last_seen;
	uint64_t heartbeats;
	json_t *info;		/* its last node information */
	struct dmaplane_name ep;	/* its daemon's endpoint */
	bool have_ep;
};

/* peers_lock protects the peer list, n_peers and every struct peer's fields */
static pthread_mutex_t peers_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t peers_cond;	/* wakes peer threads (poke, stop) */
static struct peer *peers;
static unsigned int n_peers;
static const struct dpd_config *conf;
static bool curl_ready;

/* ---- the HTTP client (libcurl) ----------------------------------------- */

struct reply {
	char *buf;
	size_t len;
	bool too_long;
};

static size_t reply_write(char *p, size_t size, size_t n, void *arg)
{
	struct reply *r = arg;
	size_t len = size * n;
	char *b;

	if (r->len + len > PEER_REPLY_MAX) {
		r->too_long = true;
		return 0;
	}
	b = realloc(r->buf, r->len + len + 1);
	if (!b)
		return 0;
	memcpy(b + r->len, p, len);
	r->len += len;
	b[r->len] = '\0';
	r->buf = b;
	return len;
}

static struct peer *find_locked(const char *name);

/* token_equal - @given is @want, compared in constant time */
bool token_equal(const char *given, const char *want)
{
	size_t n, i;
	unsigned char diff;

	if (!want || !given || !*want)
		return false;
	n = strlen(want);
	diff = strlen(given) != n;
	for (i = 0; i < n; i++)
		diff |= (unsigned char)(given[i] ^ want[i]) | !given[i];
	return diff == 0;
}

/*
 * peer_token_node - the peer whose own token (its token_file) @given is,
 * its name into @node.  Every peer's token is compared, in constant
 * time each.
 */
bool peer_token_node(const char *given, char *node, size_t nodelen)
{
	bool found = false;
	struct peer *p;

	pthread_mutex_lock(&peers_lock);
	for (p = peers; p; p = p->next) {
		if (token_equal(given, p->cfg.token) && !found) {
			snprintf(node, nodelen, "%s", p->cfg.name);
			found = true;
		}
	}
	pthread_mutex_unlock(&peers_lock);
	return found;
}

/*
 * mesh_http - @method @path on peer @node's daemon at @url with the
 * token of the pair (the peer's token_file) or else the mesh's, and
 * @body (JSON, may be NULL); *@status gets the HTTP status and *@out the
 * answer's JSON (NULL when it had none).  Returns 0 when the peer
 * answered (any status), else -EPERM (no token for it), -EHOSTDOWN
 * (connection refused), -ETIMEDOUT, -EHOSTUNREACH, -EPROTO, -ENOMEM,
 * with @err saying why.
 */
int mesh_http(const char *node_name, const char *url, const char *method,
	      const char *path, json_t *body, long timeout_ms, long *status,
	      json_t **out, char *err, size_t errlen)
{
	char full[512], auth[DPD_TOKEN_MAX + 32], node[DPD_NAME_MAX + 32];
	struct curl_slist *h = NULL, *t;
	struct reply r = { 0 };
	char *text = NULL;
	struct peer *p;
	CURLcode cc;
	CURL *c;
	int ret = 0;

	*status = 0;
	if (out)
		*out = NULL;
	auth[0] = '\0';
	pthread_mutex_lock(&peers_lock);
	p = find_locked(node_name);
	if (p && p->cfg.token[0])
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", p->cfg.token);
	pthread_mutex_unlock(&peers_lock);
	if (!auth[0] && conf->token)
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", conf->token);
	if (!auth[0]) {
		snprintf(err, errlen, "no token_file for node %s: this daemon cannot talk to it",
			 node_name);
		return -EPERM;
	}
	snprintf(full, sizeof(full), "%s%s", url, path);
	snprintf(node, sizeof(node), "X-Dmaplane-Node: %s", conf->node_name);
	c = curl_easy_init();
	if (!c) {
		explicit_bzero(auth, sizeof(auth));
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	t = curl_slist_append(h, auth);
	if (t)
		h = t;
	t = t ? curl_slist_append(h, node) : NULL;
	t = t ? curl_slist_append(h, "Content-Type: application/json") : NULL;
	explicit_bzero(auth, sizeof(auth));
	if (!t) {
		ret = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	if (body) {
		text = json_dumps(body, JSON_COMPACT);
		if (!text) {
			ret = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, text);
	}
	curl_easy_setopt(c, CURLOPT_URL, full);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, reply_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 5000 ? timeout_ms : 5000L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	cc = curl_easy_perform(c);
	if (cc != CURLE_OK) {
		ret = cc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT :
		      cc == CURLE_COULDNT_CONNECT ? -EHOSTDOWN :
		      r.too_long ? -EPROTO : -EHOSTUNREACH;
		snprintf(err, errlen, "%s %s: %s", method, path,
			 r.too_long ? "answer too long" : curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	if (out && r.len) {
		*out = json_loadb(r.buf, r.len, 0, NULL);
		if (!*out) {
			ret = -EPROTO;
			snprintf(err, errlen, "%s %s: status %ld, not JSON", method,
				 path, *status);
		}
	}
out:
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	free(text);
	free(r.buf);
	return ret;
}

/* ---- peers ------------------------------------------------------------- */

static struct peer *find_locked(const char *name)
{
	struct peer *p;

	for (p = peers; p; p = p->next)
		if (!strcmp(p->cfg.name, name))
			return p;
	return NULL;
}

static void peer_event(const char *type, const char *name, const char *error)
{
	json_t *o = json_pack("{s:s}", "node", name);

	if (o && error && *error)
		json_object_set_new(o, "error", json_string(error));
	events_post(type, NULL, 0, 0, 0644, o);
}

/* Under peers_lock: @p goes down for @why; returns whether it changed. */
static bool down_locked(struct peer *p, const char *why)
{
	snprintf(p->error, sizeof(p->error), "%s", why);
	if (p->state == PEER_DOWN)
		return false;
	p->state = PEER_DOWN;
	p->since = time(NULL);
	return true;
}

/* parse_hex64 - a u64 given as hex digits (in JSON without sign trouble) */
static bool parse_hex64(json_t *v, unsigned long long *out)
{
	const char *s = json_string_value(v);
	char *end;

	if (!s || !*s || strlen(s) > 16)
		return false;
	errno = 0;
	*out = strtoull(s, &end, 16);
	return !errno && !*end;
}

/* heartbeat - ask @p's daemon for its node information; update @p */
static void heartbeat(struct peer *p)
{
	char err[160] = "", url[sizeof(p->url)], name[DPD_NAME_MAX + 1];
	struct dmaplane_name ep = { 0 };
	bool have_ep = false, changed = false, up, suspect;
	json_t *o = NULL, *e;
	const char *node;
	long st;
	int ret;

	pthread_mutex_lock(&peers_lock);
	strcpy(url, p->url);
	strcpy(name, p->cfg.name);
	suspect = p->suspect;
	p->suspect = false;
	pthread_mutex_unlock(&peers_lock);
	ret = mesh_http(name, url, "GET", "/v1/mesh/info", NULL, PEER_TIMEOUT_MS, &st,
			&o, err, sizeof(err));
	if (!ret && st != 200) {
		snprintf(err, sizeof(err), "GET /v1/mesh/info: status %ld%s", st,
			 st == 401 ? " (not the mesh's token?)" : "");
		ret = -EPROTO;
	}
	node = json_string_value(json_object_get(o, "node"));
	if (!ret && (!node || strcmp(node, name))) {
		snprintf(err, sizeof(err), "it says it is node \"%.64s\", not %s",
			 node ? node : "?", name);
		ret = -EPROTO;
	}
	e = json_object_get(o, "ep");
	if (!ret && json_is_object(e))
		have_ep = parse_hex64(json_object_get(e, "node_id"), &ep.node_id) &&
			  parse_hex64(json_object_get(e, "ep_uid"), &ep.ep_uid);
	pthread_mutex_lock(&peers_lock);
	p->heartbeats++;
	if (ret) {
		json_decref(o);
		o = NULL;
		if (++p->fails >= PEER_FAILS || p->state != PEER_UP || suspect)
			changed = down_locked(p, err);
		else
			snprintf(p->error, sizeof(p->error), "%s", err);
	} else {
		p->fails = 0;
		p->error[0] = '\0';
		p->last_seen = time(NULL);
		changed = p->state != PEER_UP;
		if (changed) {
			p->state = PEER_UP;
			p->since = time(NULL);
		}
		json_decref(p->info);
		p->info = o;
		p->ep = ep;
		p->have_ep = have_ep;
	}
	up = p->state == PEER_UP;
	pthread_mutex_unlock(&peers_lock);
	if (changed) {
		if (up)
			log_info("peer %s is up", name);
		else
			log_warn("peer %s is down: %s", name, err);
		peer_event(up ? "peer.up" : "peer.down", name, up ? NULL : err);
	}
}

static void *peer_thread(void *arg)
{
	struct peer *p = arg;
	struct timespec ts;

	pthread_mutex_lock(&peers_lock);
	while (!p->stop) {
		p->poke = false;
		pthread_mutex_unlock(&peers_lock);
		heartbeat(p);
		grants_expire();
		pthread_mutex_lock(&peers_lock);
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += PEER_INTERVAL;
		while (!p->stop && !p->poke &&
		       pthread_cond_timedwait(&peers_cond, &peers_lock, &ts) == 0)
			;
	}
	pthread_mutex_unlock(&peers_lock);
	return NULL;
}

/*
 * fabric_add - the module's peer add for @addr (dpctl peer add ADDR, the
 * configured dpctl binary).  A peer the module has already is fine.
 */
static int fabric_add(const char *addr, char *err, size_t errlen)
{
	const char *dpctl = conf->dpctl ? conf->dpctl : "dpctl";
	char *argv[] = { (char *)dpctl, "peer", "add", (char *)addr, NULL };
	posix_spawn_file_actions_t fa;
	char out[256] = "";
	int pfd[2], status, ret;
	ssize_t n;
	size_t len = 0;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
	ret = posix_spawnp(&pid, dpctl, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (ret) {
		close(pfd[0]);
		snprintf(err, errlen, "%s: %s", dpctl, strerror(ret));
		return -ret;
	}
	while (len < sizeof(out) - 1 &&
	       (n = read(pfd[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += n;
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	out[len] = '\0';
	out[strcspn(out, "\n")] = '\0';
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	if (strstr(out, "exists"))
		return 0;
	snprintf(err, errlen, "dpctl peer add %s: %s", addr, out[0] ? out : "failed");
	return -EIO;
}

/* "host", "host:port" or "http://host:port" -> "http://host:port" */
static int peer_url(const char *address, char *url, size_t len)
{
	const char *hostport = address;

	if (!strncmp(address, "http://", 7))
		hostport += 7;
	else if (strstr(address, "://"))
		return -EINVAL;
	if (!*hostport || strpbrk(hostport, "/?#@ "))
		return -EINVAL;
	if (strchr(hostport, ':') && hostport[0] != '[')
		snprintf(url, len, "http://%s", hostport);
	else if (hostport[0] == '[' && strstr(hostport, "]:"))
		snprintf(url, len, "http://%s", hostport);
	else
		snprintf(url, len, "http://%s:%u", hostport, conf->tcp_port);
	return 0;
}

/*
 * peer_add - add @cfg to the mesh (and its fabric_address to the
 * module's peers) and start its thread.  Returns 0, -EEXIST, -EINVAL,
 * -ENOSPC (MAX_PEERS), -EIO (dpctl failed; @err says why), -ENOMEM.
 */
int peer_add(const struct dpd_peer *cfg, char *err, size_t errlen)
{
	struct peer *p;
	int ret;

	if (!strcmp(cfg->name, conf->node_name)) {
		snprintf(err, errlen, "%s is this node", cfg->name);
		return -EEXIST;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->cfg = *cfg;
	if (peer_url(cfg->address, p->url, sizeof(p->url))) {
		snprintf(err, errlen, "address: host, host:port or http://host:port");
		free(p);
		return -EINVAL;
	}
	pthread_mutex_lock(&peers_lock);
	ret = find_locked(cfg->name) ? -EEXIST : n_peers >= MAX_PEERS ? -ENOSPC : 0;
	pthread_mutex_unlock(&peers_lock);
	if (ret) {
		snprintf(err, errlen, ret == -EEXIST ? "a peer of that name exists" :
			 "too many peers");
		free(p);
		return ret;
	}
	if (cfg->fabric_address[0] && arenas_have_device()) {
		ret = fabric_add(cfg->fabric_address, err, errlen);
		if (ret) {
			free(p);
			return ret;
		}
	}
	p->since = time(NULL);
	pthread_mutex_lock(&peers_lock);
	if (find_locked(cfg->name)) {	/* added meanwhile */
		pthread_mutex_unlock(&peers_lock);
		snprintf(err, errlen, "a peer of that name exists");
		free(p);
		return -EEXIST;
	}
	ret = -pthread_create(&p->thread, NULL, peer_thread, p);
	if (ret) {
		pthread_mutex_unlock(&peers_lock);
		snprintf(err, errlen, "cannot start its thread");
		free(p);
		return ret;
	}
	p->next = peers;
	peers = p;
	n_peers++;
	pthread_mutex_unlock(&peers_lock);
	log_info("peer %s added: %s%s%s", cfg->name, p->url,
		 cfg->fabric_address[0] ? ", fabric " : "", cfg->fabric_address);
	peer_event("peer.added", cfg->name, NULL);
	return 0;
}

static void peer_free(struct peer *p)
{
	pthread_mutex_lock(&peers_lock);
	p->stop = true;
	pthread_cond_broadcast(&peers_cond);
	pthread_mutex_unlock(&peers_lock);
	pthread_join(p->thread, NULL);
	json_decref(p->info);
	explicit_bzero(p->cfg.token, sizeof(p->cfg.token));
	free(p);
}

/*
 * peer_remove - DELETE /v1/peers/NAME: forget the peer (the module's
 * peer stays: other programs may use it; dpctl peer del removes it).
 */
int peer_remove(const char *name)
{
	struct peer **pp, *p = NULL;

	pthread_mutex_lock(&peers_lock);
	for (pp = &peers; *pp; pp = &(*pp)->next) {
		if (!strcmp((*pp)->cfg.name, name)) {
			p = *pp;
			*pp = p->next;
			n_peers--;
			break;
		}
	}
	pthread_mutex_unlock(&peers_lock);
	if (!p)
		return -ENOENT;
	peer_free(p);
	log_info("peer %s removed", name);
	peer_event("peer.removed", name, NULL);
	return 0;
}

/*
 * peer_lookup - what a move to @name needs: its URL and its daemon's
 * endpoint.  Returns 0, -ENOENT (no such peer), -EHOSTDOWN (down, or
 * never answered; @err says why).
 */
int peer_lookup(const char *name, char *url, size_t urllen,
		struct dmaplane_name *ep, char *err, size_t errlen)
{
	struct peer *p;
	int ret = 0;

	pthread_mutex_lock(&peers_lock);
	p = find_locked(name);
	if (!p) {
		ret = -ENOENT;
		snprintf(err, errlen, "no node %s in the mesh", name);
	} else if (p->state != PEER_UP || !p->have_ep) {
		ret = -EHOSTDOWN;
		snprintf(err, errlen, "node %s is %s%s%s", name,
			 p->state == PEER_UP ? "up without a device" :
			 peer_states[p->state], p->error[0] ? ": " : "", p->error);
	} else {
		snprintf(url, urllen, "%s", p->url);
		*ep = p->ep;
	}
	pthread_mutex_unlock(&peers_lock);
	return ret;
}

/*
 * peer_failed - a move found @name dead (@why): down now when @down,
 * else heartbeat it at once (its thread decides).
 */
void peer_failed(const char *name, const char *why, bool down)
{
	bool changed = false;
	struct peer *p;

	pthread_mutex_lock(&peers_lock);
	p = find_locked(name);
	if (p) {
		if (down)
			changed = down_locked(p, why);
		p->suspect = true;
		p->poke = true;
		pthread_cond_broadcast(&peers_cond);
	}
	pthread_mutex_unlock(&peers_lock);
	if (changed) {
		log_warn("peer %s is down: %s", name, why);
		peer_event("peer.down", name, why);
	}
}

static json_t *peer_json_locked(const struct peer *p)
{
	json_t *o, *a = json_object_get(p->info, "arenas");

	o = json_pack("{s:s, s:s, s:s, s:b, s:s, s:I, s:I, s:I}",
		      "name", p->cfg.name, "address", p->cfg.address,
		      "url", p->url, "self", 0,
		      "state", peer_states[p->state],
		      "since", (json_int_t)p->since,
		      "last_seen", (json_int_t)p->last_seen,
		      "heartbeats", (json_int_t)p->heartbeats);
	if (!o)
		return NULL;
	if (p->cfg.fabric_address[0])
		json_object_set_new(o, "fabric_address", json_string(p->cfg.fabric_address));
	json_object_set_new(o, "token", json_string(p->cfg.token[0] ? "own" : "mesh"));
	if (p->error[0])
		json_object_set_new(o, "error", json_string(p->error));
	if (json_is_array(a))
		json_object_set_new(o, "arenas", json_integer((json_int_t)json_array_size(a)));
	return o;
}

/* GET /v1/peers: the peers, as a JSON array */
json_t *peers_json(void)
{
	json_t *arr = json_array();
	struct peer *p;

	if (!arr)
		return NULL;
	pthread_mutex_lock(&peers_lock);
	for (p = peers; p; p = p->next)
		json_array_append_new(arr, peer_json_locked(p));
	pthread_mutex_unlock(&peers_lock);
	return arr;
}

static json_t *self_json(void)
{
	return json_pack("{s:s, s:b, s:s, s:s*}", "name", conf->node_name,
			 "self", 1, "state", "up", "address", conf->tcp_address);
}

/* GET /v1/nodes: this node and the peers */
json_t *nodes_json(void)
{
	json_t *arr = peers_json();

	if (arr)
		json_array_insert_new(arr, 0, self_json());
	return arr;
}

/* GET /v1/nodes/NAME: one node, or NULL with *@err -ENOENT or -ENOMEM */
json_t *node_get_json(const char *name, int *err)
{
	struct peer *p;
	json_t *o = NULL;

	if (!strcmp(name, conf->node_name)) {
		o = self_json();
		*err = o ? 0 : -ENOMEM;
		return o;
	}
	pthread_mutex_lock(&peers_lock);
	p = find_locked(name);
	*err = -ENOENT;
	if (p) {
		o = peer_json_locked(p);
		*err = o ? 0 : -ENOMEM;
	}
	pthread_mutex_unlock(&peers_lock);
	return o;
}

/*
 * node_arenas_json - GET /v1/nodes/NAME/arenas: the arena table a peer
 * last reported (this node's own for its name), as @cred may see it:
 * arenas it may read under their owner, group and mode; never the
 * remote keys.  NULL with *@err -ENOENT, -EHOSTDOWN (never answered).
 */
json_t *node_arenas_json(const char *name, const struct dpd_cred *cred, int *err)
{
	json_t *arr, *a, *v;
	struct peer *p;
	size_t i;

	if (!strcmp(name, conf->node_name)) {
		arr = arenas_list_json(cred);
		*err = arr ? 0 : -ENOMEM;
		return arr;
	}
	arr = json_array();
	if (!arr) {
		*err = -ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&peers_lock);
	p = find_locked(name);
	a = p ? json_object_get(p->info, "arenas") : NULL;
	*err = !p ? -ENOENT : !json_is_array(a) ? -EHOSTDOWN : 0;
	json_array_foreach(a, i, v) {
		json_t *c = json_deep_copy(v);
		unsigned int mode = 0;
		const char *ms = json_string_value(json_object_get(v, "mode"));

		if (!c)
			continue;
		json_object_del(c, "rkey");
		if (ms && parse_mode(ms, &mode) == 0 &&
		    cred_may(cred, json_integer_value(json_object_get(v, "owner")),
			     json_integer_value(json_object_get(v, "group")),
			     mode, DPD_PERM_READ)) {
			json_object_set_new(c, "node", json_string(name));
			json_array_append_new(arr, c);
		} else {
			json_decref(c);
		}
	}
	pthread_mutex_unlock(&peers_lock);
	if (*err) {
		json_decref(arr);
		return NULL;
	}
	return arr;
}

/*
 * peers_start - curl, then one thread per configured peer.  A peer whose
 * module peer add fails is logged and left out (POST /v1/peers may add
 * it later); the daemon still starts.
 */
int peers_start(const struct dpd_config *cfg)
{
	pthread_condattr_t a;
	char err[256];
	size_t i;
	int ret;

	conf = cfg;
	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&peers_cond, &a);
	pthread_condattr_destroy(&a);
	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		log_err("libcurl: cannot initialise");
		return -ENOMEM;
	}
	curl_ready = true;
	for (i = 0; i < cfg->n_peers; i++) {
		err[0] = '\0';
		ret = peer_add(&cfg->peers[i], err, sizeof(err));
		if (ret)
			log_err("peer %s: %s", cfg->peers[i].name, err[0] ? err : strerror(-ret));
	}
	return 0;
}

void peers_stop(void)
{
	struct peer *p;

	for (;;) {
		pthread_mutex_lock(&peers_lock);
		p = peers;
		if (p) {
			peers = p->next;
			n_peers--;
		}
		pthread_mutex_unlock(&peers_lock);
		if (!p)
			break;
		peer_free(p);
	}
	grants_free();
	if (curl_ready)
		curl_global_cleanup();
	curl_ready = false;
}

/* ---- grants: peers' access to this node's arenas ------------------------ */

struct grant {
	struct grant *next;
	uint64_t id;
	char node[DPD_NAME_MAX + 1];
	char arena[DPD_NAME_MAX + 1];
	uint32_t arena_id;	/* arena.c's id: the same arena, not a new one of that name */
	uint64_t off, len;	/* the granted range */
	bool write;		/* a put grant; else a get (read) grant */
	time_t expires;
};

/* grants_lock protects the list and every grant in it */
static pthread_mutex_t grants_lock = PTHREAD_MUTEX_INITIALIZER;
static struct grant *grants;
static uint64_t next_grant = 1;

/* grants_renew - a request from @node: its grants live GRANT_LEASE more */
void grants_renew(const char *node)
{
	struct grant *g;

	pthread_mutex_lock(&grants_lock);
	for (g = grants; g; g = g->next)
		if (!strcmp(g->node, node))
			g->expires = time(NULL) + GRANT_LEASE;
	pthread_mutex_unlock(&grants_lock);
}

/* Unlink the grants @pred picks; release their arenas with no lock held. */
static void grants_drop(bool (*pred)(const struct grant *, const void *),
			const void *arg, bool log)
{
	struct grant **pp, *g, *gone = NULL;

	pthread_mutex_lock(&grants_lock);
	for (pp = &grants; (g = *pp);) {
		if (pred(g, arg)) {
			*pp = g->next;
			g->next = gone;
			gone = g;
			continue;
		}
		pp = &g->next;
	}
	pthread_mutex_unlock(&grants_lock);
	while ((g = gone)) {
		gone = g->next;
		if (log)
			log_warn("grant %" PRIu64 " of arena %s to node %s expired",
				 g->id, g->arena, g->node);
		arena_release(g->arena);
		free(g);
	}
}

static bool expired(const struct grant *g, const void *now)
{
	return g->expires < *(const time_t *)now;
}

static bool any(const struct grant *g, const void *arg)
{
	(void)g;
	(void)arg;
	return true;
}

void grants_expire(void)
{
	time_t now = time(NULL);

	grants_drop(expired, &now, true);
}

void grants_free(void)
{
	grants_drop(any, NULL, false);
}

static int json_u64v(json_t *v, uint64_t *out)
{
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -EINVAL;
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/*
 * grant_create - POST /v1/mesh/grants from peer daemon @node (a token
 * holder): {"arena", "offset", "length", "move", "access" ("write", the
 * default, or "read"), and "admin": true or "uid", "gid", "groups"}.
 * Checks the requester's w (r for "read") on the arena and the range,
 * holds the arena, and answers {"grant", "rkey", "ep"}.  NULL with
 * *@err -EINVAL (@msg), -ENOENT, -EACCES, -ERANGE, -ENODEV.
 */
json_t *grant_create(json_t *req, const char *node, int *err, char *msg,
		     size_t msglen)
{
	struct dpd_cred cred = { 0 };
	struct dpd_arena_ref ref;
	struct dmaplane_name ep;
	const char *arena = NULL, *key;
	uint64_t off = 0, len = 0, move = 0, id;
	char hex[24];
	bool have_len = false, write = true;
	struct grant *g;
	json_t *v, *o, *who;

	*err = -EINVAL;
	if (!node || !name_valid(node)) {
		snprintf(msg, msglen, "X-Dmaplane-Node: the asking node's name is needed");
		return NULL;
	}
	if (!json_is_object(req)) {
		snprintf(msg, msglen, "a grant request is a JSON object");
		return NULL;
	}
	who = json_object();
	if (!who) {
		*err = -ENOMEM;
		return NULL;
	}
	json_object_foreach(req, key, v) {
		if (!strcmp(key, "arena") && json_is_string(v) &&
		    name_valid(json_string_value(v)) &&
		    strlen(json_string_value(v)) == json_string_length(v))
			arena = json_string_value(v);
		else if (!strcmp(key, "offset") && !json_u64v(v, &off))
			;
		else if (!strcmp(key, "length") && !json_u64v(v, &len))
			have_len = true;
		else if (!strcmp(key, "move") && !json_u64v(v, &move))
			;
		else if (!strcmp(key, "access") && json_is_string(v) &&
			 (!strcmp(json_string_value(v), "read") ||
			  !strcmp(json_string_value(v), "write")))
			write = !strcmp(json_string_value(v), "write");
		else if (!strcmp(key, "admin") || !strcmp(key, "uid") ||
			 !strcmp(key, "gid") || !strcmp(key, "groups"))
			json_object_set(who, key, v);	/* the requester */
		else {
			snprintf(msg, msglen, "bad or unknown key \"%.64s\"", key);
			goto out;
		}
	}
	if (!arena || !have_len || !len) {
		snprintf(msg, msglen, "a grant needs an arena and a non-zero length");
		goto out;
	}
	if (cred_from_json(who, &cred, msg, msglen))
		goto out;
	json_decref(who);
	who = NULL;
	if (!arenas_ep_name(&ep)) {
		*err = -ENODEV;
		return NULL;
	}
	*err = arena_hold(arena, &cred, write ? DPD_PERM_WRITE : DPD_PERM_READ, &ref);
	if (*err == -EACCES) {
		snprintf(msg, msglen, "the requester may not %s arena %s on node %s",
			 write ? "write" : "read", arena, conf->node_name);
		return NULL;
	}
	if (*err) {
		snprintf(msg, msglen, *err == -ENOENT ? "no arena %s on node %s" :
			 "arena %s on node %s: unavailable", arena, conf->node_name);
		return NULL;
	}
	if (range_beyond(off, len, ref.size)) {
		arena_release(arena);
		*err = -ERANGE;
		snprintf(msg, msglen, "range beyond arena %s of node %s", arena,
			 conf->node_name);
		return NULL;
	}
	g = calloc(1, sizeof(*g));
	if (!g) {
		arena_release(arena);
		*err = -ENOMEM;
		return NULL;
	}
	strcpy(g->node, node);
	strcpy(g->arena, arena);
	g->arena_id = ref.id;
	g->off = off;
	g->len = len;
	g->write = write;
	pthread_mutex_lock(&grants_lock);
	g->id = id = next_grant++;
	g->expires = time(NULL) + GRANT_LEASE;
	g->next = grants;
	grants = g;
	pthread_mutex_unlock(&grants_lock);
	/* g may expire from now on: only @id is used. */
	snprintf(hex, sizeof(hex), "%016" PRIx64, ref.rkey);
	o = json_pack("{s:I, s:s, s:s, s:I, s:o, s:I}", "grant", (json_int_t)id,
		      "arena", arena, "rkey", hex, "size", (json_int_t)ref.size,
		      "ep", ep_name_json(&ep), "arena_id", (json_int_t)ref.id);
	if (!o)
		grant_delete(id, node, false);
	log_info("grant %" PRIu64 ": node %s may %s %" PRIu64 " bytes at %" PRIu64
		 " of arena %s (move %" PRIu64 ")", id, node, write ? "put" : "get", len,
		 off, arena, move);
	*err = o ? 0 : -ENOMEM;
	return o;

out:
	json_decref(who);
	return NULL;
}

static bool grant_is(const struct grant *g, const void *arg)
{
	const struct grant *want = arg;

	return g->id == want->id && !strcmp(g->node, want->node);
}

/*
 * grant_ref - write grant @id of @node, copied into @out, and its arena
 * held again for the caller (arena_release(@out->arena)), so that the
 * grant may expire meanwhile.  Returns 0, -ENOENT, or -EACCES (a read
 * grant: good for a get only).
 */
static int grant_ref(uint64_t id, const char *node, struct grant *out,
		     struct dpd_arena_ref *ref)
{
	struct grant want = { .id = id }, *g;
	bool found = false;

	if (!node || !name_valid(node))
		return -ENOENT;
	strcpy(want.node, node);
	pthread_mutex_lock(&grants_lock);
	for (g = grants; g; g = g->next) {
		if (grant_is(g, &want)) {
			*out = *g;
			found = true;
		}
	}
	pthread_mutex_unlock(&grants_lock);
	if (found && !out->write)
		return -EACCES;
	if (!found || arena_hold(out->arena, &(struct dpd_cred){ .token = true },
				 DPD_PERM_WRITE, ref))
		return -ENOENT;
	if (ref->id != out->arena_id) {	/* destroyed and made anew */
		arena_release(out->arena);
		return -ENOENT;
	}
	return 0;
}

/*
 * grant_delete - DELETE /v1/mesh/grants/ID by @node: 0 or -ENOENT.
 * @index: the move completed, the granted range holds its bytes: index
 * them first (a write grant's only).
 */
int grant_delete(uint64_t id, const char *node, bool index)
{
	struct grant want = { .id = id }, *g;
	struct dpd_arena_ref ref;
	struct grant copy;
	bool found = false;
	long n;

	if (!node || !name_valid(node))
		return -ENOENT;
	if (index && !grant_ref(id, node, &copy, &ref)) {
		n = arena_index_range(&ref, copy.off, copy.len);
		arena_release(copy.arena);
		if (n < 0)
			log_warn("grant %" PRIu64 ": arena %s not indexed: %s", id,
				 copy.arena, strerror((int)-n));
	}
	strcpy(want.node, node);
	pthread_mutex_lock(&grants_lock);
	for (g = grants; g; g = g->next)
		if (grant_is(g, &want))
			found = true;
	pthread_mutex_unlock(&grants_lock);
	if (!found)
		return -ENOENT;
	grants_drop(grant_is, &want, false);
	return 0;
}

/* ---- deduplicated moves into this node's arenas ------------------------- */

static const char b64_chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* b64_encode - @n bytes as base64 (RFC 4648, padded), NUL-terminated; free() it */
char *b64_encode(const void *p, size_t n)
{
	const uint8_t *b = p;
	char *out, *o;
	uint32_t v;
	size_t i;

	out = malloc((n + 2) / 3 * 4 + 1);
	if (!out)
		return NULL;
	for (i = 0, o = out; i < n; i += 3) {
		v = (uint32_t)b[i] << 16;
		if (i + 1 < n)
			v |= (uint32_t)b[i + 1] << 8;
		if (i + 2 < n)
			v |= b[i + 2];
		*o++ = b64_chars[v >> 18 & 63];
		*o++ = b64_chars[v >> 12 & 63];
		*o++ = i + 1 < n ? b64_chars[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? b64_chars[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

/*
 * b64_decode - base64 @s (padded, no white space) into @out; *@n gets
 * the bytes, the buffer is malloc()ed.  Returns 0, -EINVAL, -ENOMEM.
 */
int b64_decode(const char *s, size_t len, uint8_t **out, size_t *n)
{
	uint8_t *b;
	uint32_t v;
	size_t i, j, k, pad = 0;
	const char *c;

	if (len % 4)
		return -EINVAL;
	if (len && s[len - 1] == '=')
		pad = len >= 2 && s[len - 2] == '=' ? 2 : 1;
	b = malloc(len / 4 * 3 + 1);
	if (!b)
		return -ENOMEM;
	for (i = 0, j = 0; i < len; i += 4) {
		for (k = 0, v = 0; k < 4; k++) {
			bool tail = i + 4 == len && k >= 4 - pad;

			c = tail ? NULL : s[i + k] ? strchr(b64_chars, s[i + k]) : NULL;
			if (!c && !(tail && s[i + k] == '=')) {
				free(b);
				return -EINVAL;
			}
			v = v << 6 | (c ? (uint32_t)(c - b64_chars) : 0);
		}
		b[j++] = v >> 16;
		if (!(i + 4 == len && pad == 2))
			b[j++] = v >> 8 & 0xff;
		if (!(i + 4 == len && pad))
			b[j++] = v & 0xff;
	}
	*out = b;
	*n = j;
	return 0;
}

static int json_field_u64(json_t *o, const char *key, uint64_t *out)
{
	return json_u64v(json_object_get(o, key), out);
}

/*
 * mesh_dedup_lookup - POST /v1/mesh/dedup from @node: {"grant", "base",
 * "chunks", "chunker"}: which of the chunks (dedup.h's request encoding,
 * base64; the first at "base" in the granted range) this node holds, as
 * dd_index_lookup() answers for the granted range: {"answers" (the
 * answer encoding, base64), "arena", "stale", "overlap_skipped"}.  NULL
 * with *@err -EINVAL (@msg), -ENOENT (no such grant), -EBUSY (the
 * chunkers differ), -ERANGE, -ENOMEM.
 */
json_t *mesh_dedup_lookup(json_t *req, const char *node, int *err, char *msg,
			  size_t msglen)
{
	struct dd_lookup_stats st = { 0 };
	struct dpd_arena_ref ref;
	struct dd_answer *ans = NULL;
	struct dd_chunk *v = NULL;
	uint8_t *raw = NULL, *abuf = NULL;
	uint64_t gid, base, total;
	const char *chunks, *fp;
	char mine[24], *b64 = NULL;
	struct grant g;
	json_t *o = NULL;
	size_t rawlen, k, asize;
	long n, alen;

	*err = -EINVAL;
	chunks = json_string_value(json_object_get(req, "chunks"));
	fp = json_string_value(json_object_get(req, "chunker"));
	if (!json_is_object(req) || json_object_size(req) != 4 ||
	    json_field_u64(req, "grant", &gid) || json_field_u64(req, "base", &base) ||
	    !chunks || !fp) {
		snprintf(msg, msglen, "a lookup is {\"grant\", \"base\", \"chunks\", \"chunker\"}");
		return NULL;
	}
	snprintf(mine, sizeof(mine), "%016" PRIx64, dd_chunker_fingerprint(arenas_chunker()));
	if (strcmp(fp, mine)) {
		*err = -EBUSY;
		snprintf(msg, msglen, "node %s cuts chunks otherwise (chunker %s)",
			 conf->node_name, mine);
		return NULL;
	}
	if (b64_decode(chunks, strlen(chunks), &raw, &rawlen) || !rawlen ||
	    rawlen % 20) {
		free(raw);
		snprintf(msg, msglen, "chunks: base64 of 20 bytes a chunk");
		return NULL;
	}
	*err = -ENOMEM;
	v = calloc(rawlen / 20, sizeof(*v));
	ans = calloc(rawlen / 20, sizeof(*ans));
	if (!v || !ans)
		goto out;
	n = dd_request_decode(raw, rawlen, v, rawlen / 20);
	if (n <= 0) {
		*err = -EINVAL;
		snprintf(msg, msglen, "chunks: malformed");
		goto out;
	}
	*err = grant_ref(gid, node, &g, &ref);
	if (*err) {
		snprintf(msg, msglen, *err == -EACCES ? "grant %" PRIu64 " of node %s: a read grant" :
			 "no grant %" PRIu64 " for node %s", gid, node ? node : "(none)");
		goto out;
	}
	total = v[n - 1].off + v[n - 1].len;
	if (base > g.len || total > g.len - base) {
		*err = -ERANGE;
		snprintf(msg, msglen, "chunks beyond the granted range");
		goto release;
	}
	for (k = 0; k < (size_t)n; k++)
		v[k].off += base;
	*err = arena_index_lookup(v, (size_t)n, ref.id, g.off, g.len, ans, &st);
	if (*err)
		goto release;
	asize = dd_meta_answer_bytes((size_t)n, dd_answer_runs(ans, (size_t)n));
	*err = -ENOMEM;
	abuf = malloc(asize ? asize : 1);
	if (!abuf)
		goto release;
	alen = dd_answer_encode(ans, (size_t)n, abuf, asize);
	if (alen < 0) {
		*err = (int)alen;
		goto release;
	}
	b64 = b64_encode(abuf, (size_t)alen);
	if (b64)
		o = json_pack("{s:s, s:I, s:I, s:I}", "answers", b64,
			      "arena", (json_int_t)ref.id, "stale", (json_int_t)st.stale,
			      "overlap_skipped", (json_int_t)st.overlap_skipped);
	*err = o ? 0 : -ENOMEM;
release:
	arena_release(g.arena);
out:
	free(raw);
	free(v);
	free(ans);
	free(abuf);
	free(b64);
	return o;
}

/*
 * mesh_dedup_copy - POST /v1/mesh/dedup/copy from @node: {"grant",
 * "ops": [[arena, from, to, length], ...]}: copy held bytes (arena id
 * and offset, as a lookup answered) into the granted range.  An op
 * outside the range, or reading from it (the plan never does: a copy in
 * any order could read bytes another op wrote), or whose source is gone
 * fails alone; the answer lists them: {"copied": bytes, "failed":
 * [index, ...]}, and the source puts those bytes instead.  NULL with
 * *@err -EINVAL (@msg) or -ENOENT (no such grant).
 */
json_t *mesh_dedup_copy(json_t *req, const char *node, int *err, char *msg,
			size_t msglen)
{
	json_t *ops = json_object_get(req, "ops"), *failed, *op;
	struct dpd_arena_ref ref;
	uint64_t gid, copied = 0, end, send;
	struct grant g;
	size_t i;

	*err = -EINVAL;
	if (!json_is_object(req) || json_object_size(req) != 2 ||
	    json_field_u64(req, "grant", &gid) || !json_is_array(ops)) {
		snprintf(msg, msglen, "a copy is {\"grant\", \"ops\": [[arena, from, to, length], ...]}");
		return NULL;
	}
	json_array_foreach(ops, i, op) {
		uint64_t f[4];
		size_t k;

		for (k = 0; k < 4; k++)
			if (json_u64v(json_array_get(op, k), &f[k]))
				break;
		if (!json_is_array(op) || json_array_size(op) != 4 || k < 4 ||
		    f[0] > UINT32_MAX || !f[3]) {
			snprintf(msg, msglen, "ops[%zu]: [arena, from, to, length]", i);
			return NULL;
		}
	}
	*err = grant_ref(gid, node, &g, &ref);
	if (*err) {
		snprintf(msg, msglen, *err == -EACCES ? "grant %" PRIu64 " of node %s: a read grant" :
			 "no grant %" PRIu64 " for node %s", gid, node ? node : "(none)");
		return NULL;
	}
	failed = json_array();
	json_array_foreach(ops, i, op) {
		struct dd_op d = { .kind = DD_OP_LOCAL };

		d.arena = (uint32_t)json_integer_value(json_array_get(op, 0));
		d.src_off = (uint64_t)json_integer_value(json_array_get(op, 1));
		d.dst_off = (uint64_t)json_integer_value(json_array_get(op, 2));
		d.len = (uint64_t)json_integer_value(json_array_get(op, 3));
		if (d.dst_off < g.off || __builtin_add_overflow(d.dst_off, d.len, &end) ||
		    end > g.off + g.len || __builtin_add_overflow(d.src_off, d.len, &send) ||
		    (d.arena == ref.id && d.src_off < g.off + g.len && send > g.off) ||
		    arena_local_copy(&d, ref.ptr)) {
			json_array_append_new(failed, json_integer((json_int_t)i));
			continue;
		}
		copied += d.len;
	}
	arena_release(g.arena);
	*err = failed ? 0 : -ENOMEM;
	return failed ? json_pack("{s:I, s:o}", "copied", (json_int_t)copied,
				  "failed", failed) : NULL;
}

/* ep_name_json - {"node_id": hex, "ep_uid": hex} */
json_t *ep_name_json(const struct dmaplane_name *n)
{
	char a[24], b[24];

	snprintf(a, sizeof(a), "%016llx", (unsigned long long)n->node_id);
	snprintf(b, sizeof(b), "%016llx", (unsigned long long)n->ep_uid);
	return json_pack("{s:s, s:s}", "node_id", a, "ep_uid", b);
}

int ep_name_from_json(json_t *o, struct dmaplane_name *n)
{
	return parse_hex64(json_object_get(o, "node_id"), &n->node_id) &&
	       parse_hex64(json_object_get(o, "ep_uid"), &n->ep_uid) ? 0 : -EPROTO;
}

/*
 * mesh_info_json - GET /v1/mesh/info (token holders only): this node's
 * name, its endpoint's name and its arena table with the remote keys.
 */
json_t *mesh_info_json(void)
{
	struct dmaplane_name ep;
	json_t *o;

	o = json_pack("{s:s, s:s, s:o, s:o}", "node", conf->node_name,
		      "version", DPD_VERSION,
		      "ep", arenas_ep_name(&ep) ? ep_name_json(&ep) : json_null(),
		      "arenas", arenas_table_json());
	return o;
}

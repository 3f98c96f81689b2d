// SPDX-License-Identifier: MIT
/*
 * dp-kvstore: a parameter-server push/pull benchmark, over dmaplane and
 * (built with libzmq) over ZeroMQ, in the same program.
 *
 * Servers own key ranges (server s owns the keys s << 32 ...); workers
 * push gradients and pull weights, many keys per message, keys and values
 * as iovecs (dp_sendv/dp_recvv; ZeroMQ: one frame per key, as ps-lite).
 * A server adds every pushed gradient into the weights it holds, so the
 * weights a worker pulls are known to it: every pulled value is checked,
 * and a mismatch is an error exit.  Run with --help for the options.
 *
 * Every worker w uses its own keys (s << 32 | w * KEYS + j) on every
 * server, so the weights it pulls depend on its own pushes only.  The
 * gradient of key k, element i, in a push marked with round r is
 * base(k, i) + r * C; after A pushes whose marks add up to B the weight is
 * init(k, i) + A * base(k, i) + B * C (mod 2^32).
 *
 * Measured for each value size (bytes of values per message, split over
 * the keys), after a warm-up:
 *   lat_us, lat_p99_us: one push+pull round (push to every server, then
 *	pull from every server, until every ack and value is in), median
 *	and 99th percentile;
 *   pushes_per_s: a stream of pushes, round robin over the servers, with
 *	a window of pushes whose ack has not come back;
 *   bw_MBps: the values those pushes carried, 10^6 bytes per second.
 * Filling gradients and checking values is not timed.
 *
 * dmaplane names are exchanged over TCP (a server listens, each worker
 * connects and hands its name, the server answers with its own), as an
 * MPI launcher would over PMI; ZeroMQ connects by address.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dmaplane.h>
#ifdef HAVE_ZMQ
#include <zmq.h>
#endif

#define PROG		"dp-kvstore"
#define MAX_SIZES	8
#define MAX_SERVERS	64
#define MAX_WORKERS	64
#define MAX_KEYS	1000		/* keys + header within dp_sendv's 1024 */
#define MAX_WINDOW	256
#define NSLOT		1024		/* header slots; > window + servers */
#define SRV_RECVS	64		/* receives a dmaplane server keeps posted */
#define TIMEOUT_MS	60000

enum transport { T_DMAPLANE, T_ZMQ_IPC, T_ZMQ_TCP, T_ZMQ };

static const char *const transport_names[] = {
	[T_DMAPLANE] = "dmaplane", [T_ZMQ_IPC] = "zmq-ipc",
	[T_ZMQ_TCP] = "zmq-tcp", [T_ZMQ] = "zmq",
};

enum kv_op { OP_PUSH = 1, OP_PULL, OP_DONE, OP_ACK, OP_VALS };

/* dmaplane tags: the operation in the top byte, the sequence below. */
#define TAG(op, seq)	((uint64_t)(op) << 56 | ((seq) & 0xffffffffffffull))
#define TAG_REQ		TAG(OP_PUSH, 0)	/* a server takes every request... */
#define TAG_REQ_IGNORE	0x03ffffffffffffffull	/* ...PUSH, PULL, DONE (1-3) */

/* The header of every message: its first iovec or frame. */
struct kv_hdr {
	uint32_t op;
	uint32_t worker;
	uint32_t size_idx;
	uint32_t nkeys;
	uint64_t seq;
	uint64_t mark;		/* a push's round mark r */
	/*
	 * A request's number among this worker's requests to this server:
	 * a dmaplane server takes them in that order (dps_handle), as a
	 * ZeroMQ server does by its socket's order.
	 */
	uint64_t rseq;
};

struct kv_cfg {
	enum transport tr;
	int servers, workers, keys;
	int nsizes;
	uint64_t sizes[MAX_SIZES];
	int iters, warmup, pushes, window;
	int port;
	int role;		/* 0: fork everything; 's': server; 'w': worker */
	int rank;
	char *addrs[MAX_SERVERS];	/* per server: host:port or a ZeroMQ endpoint */
	int naddrs;
	int corrupt;		/* testing: a server spoils the value it takes then */
};

struct kv_result {
	double lat_med, lat_p99, pushes_per_s, bw;
	int rounds, pushes;
	int done;
};

static int verbose;
static int busy_poll;		/* --busy-poll: wait for messages spinning */
/*
 * dmaplane: one dp_submit() for a worker's receive of its ack and its push,
 * and one for a server's ack of a push and the re-post of the request's
 * buffer; --no-batch: a system call per operation (dp_recv, dp_sendv), to
 * see what batching buys.
 */
static int no_batch;

/*
 * dp_wait(), or with --busy-poll dp_poll() in a loop (no sleep, no
 * wake-up: what a latency benchmark usually does).
 */
static int ep_wait(struct dp_ep *ep, struct dmaplane_cqe *c, unsigned int max,
		   int timeout_ms)
{
	struct timespec t0, t;
	int n;

	if (!busy_poll)
		return dp_wait(ep, c, max, timeout_ms);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned int i = 0;; i++) {
		n = dp_poll(ep, c, max);
		if (n)
			return n;
		if (i & 1023)
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= timeout_ms)
			return 0;
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static uint64_t val_len(const struct kv_cfg *cfg, int z)
{
	return cfg->sizes[z] / cfg->keys;
}

static uint64_t max_size(const struct kv_cfg *cfg)
{
	uint64_t m = 0;

	for (int z = 0; z < cfg->nsizes; z++)
		if (cfg->sizes[z] > m)
			m = cfg->sizes[z];
	return m;
}

/* ---- the update rule ------------------------------------------------ */

#define GRAD_C	0x01000193u

static uint64_t mk_key(int s, int w, int j, int keys)
{
	return (uint64_t)s << 32 | (uint32_t)(w * keys + j);
}

static uint32_t w_init(uint64_t key, uint32_t i)
{
	return (uint32_t)(key * 0x9e3779b1u) ^ (i * 7u);
}

static uint32_t g_base(uint64_t key, uint32_t i)
{
	return (uint32_t)(key * 2654435761u + i * 40503u + 1u);
}

/* The values of one server's keys for worker @w: keys * vlen bytes. */
static void fill_grad(uint8_t *buf, int s, int w, int keys, uint64_t vlen,
		      uint64_t mark)
{
	for (int j = 0; j < keys; j++) {
		uint64_t key = mk_key(s, w, j, keys);
		uint32_t *p = (uint32_t *)(buf + j * vlen);

		for (uint32_t i = 0; i < vlen / 4; i++)
			p[i] = g_base(key, i) + (uint32_t)mark * GRAD_C;
	}
}

static int check_vals(const uint8_t *buf, int s, int w, int keys, uint64_t vlen,
		      uint64_t a, uint64_t b)
{
	for (int j = 0; j < keys; j++) {
		uint64_t key = mk_key(s, w, j, keys);
		const uint32_t *p = (const uint32_t *)(buf + j * vlen);

		for (uint32_t i = 0; i < vlen / 4; i++) {
			uint32_t want = w_init(key, i) + (uint32_t)a * g_base(key, i) +
					(uint32_t)b * GRAD_C;

			if (p[i] != want) {
				fprintf(stderr, PROG ": worker %d: key 0x%llx value %u: got 0x%08x, want 0x%08x (%llu pushes)\n",
					w, (unsigned long long)key, i, p[i], want,
					(unsigned long long)a);
				return -EIO;
			}
		}
	}
	return 0;
}

/* ---- out-of-band exchange of dmaplane names over TCP ----------------- */

#define BOOT_MAGIC	0x6b767331u	/* "kvs1" */

struct boot_msg {
	uint32_t magic;
	uint32_t rank;
	struct dmaplane_name name;
};

static int full_io(int fd, void *buf, size_t len, int wr)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = wr ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n ? -errno : -EPIPE;
		p += n;
		len -= n;
	}
	return 0;
}

/* "host:port" ("*:port" or ":port" for any address) into @sa. */
static int parse_hostport(const char *str, struct sockaddr_in *sa)
{
	char host[256];
	const char *colon = strrchr(str, ':');
	struct addrinfo hints = { .ai_family = AF_INET }, *ai;
	size_t hl;

	if (!colon || !colon[1])
		return -EINVAL;
	hl = colon - str;
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, str, hl);
	host[hl] = 0;
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(atoi(colon + 1));
	if (!hl || !strcmp(host, "*")) {
		sa->sin_addr.s_addr = htonl(INADDR_ANY);
		return 0;
	}
	if (getaddrinfo(host, NULL, &hints, &ai))
		return -EHOSTUNREACH;
	sa->sin_addr = ((struct sockaddr_in *)ai->ai_addr)->sin_addr;
	freeaddrinfo(ai);
	return 0;
}

/* Server side: take @n workers' names, give each ours; av[rank] = handle. */
static int boot_serve(struct dp_ep *ep, const char *addr, int n, uint32_t *av)
{
	struct sockaddr_in sa;
	struct boot_msg me = { .magic = BOOT_MAGIC }, them;
	int one = 1, lfd, ret;

	ret = parse_hostport(addr, &sa);
	if (ret)
		return ret;
	dp_getname(ep, &me.name);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -errno;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, n)) {
		ret = -errno;
		close(lfd);
		return ret;
	}
	for (int i = 0; i < n; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			ret = -errno;
			break;
		}
		ret = full_io(fd, &them, sizeof(them), 0);
		if (!ret && (them.magic != BOOT_MAGIC || them.rank >= (uint32_t)n))
			ret = -EPROTO;
		if (!ret)
			ret = dp_av_insert(ep, &them.name, &av[them.rank]);
		if (!ret)
			ret = full_io(fd, &me, sizeof(me), 1);
		close(fd);
		if (ret)
			break;
	}
	close(lfd);
	return ret;
}

/* Worker side: hand our name to the server at @addr, insert its name. */
static int boot_connect(struct dp_ep *ep, const char *addr, int rank, uint32_t *av)
{
	struct boot_msg me = { .magic = BOOT_MAGIC, .rank = rank }, them;
	struct sockaddr_in sa;
	int fd = -1, ret;

	ret = parse_hostport(addr, &sa);
	if (ret)
		return ret;
	dp_getname(ep, &me.name);
	for (int tries = 0; tries < 600; tries++) {	/* 60 s for the server */
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			break;
		ret = -errno;
		close(fd);
		fd = -1;
		usleep(100000);
	}
	if (fd < 0)
		return ret;
	ret = full_io(fd, &me, sizeof(me), 1);
	if (!ret)
		ret = full_io(fd, &them, sizeof(them), 0);
	close(fd);
	if (!ret && them.magic != BOOT_MAGIC)
		ret = -EPROTO;
	if (!ret)
		ret = dp_av_insert(ep, &them.name, av);
	return ret;
}

/* ---- servers ------------------------------------------------------- */

struct server {
	const struct kv_cfg *cfg;
	int s;
	uint8_t *store[MAX_SIZES];	/* workers * keys values of each size */
	struct kv_hdr reply[NSLOT];	/* headers of replies in flight */
	unsigned int nreply;
	int done;
	int pushes;
};

/* The stored value of @key for size @z, or NULL when the key is not ours. */
static uint8_t *srv_val(struct server *sv, int z, uint64_t key)
{
	const struct kv_cfg *cfg = sv->cfg;
	uint64_t local = key & 0xffffffffu;

	if ((key >> 32) != (uint64_t)sv->s ||
	    local >= (uint64_t)cfg->workers * cfg->keys)
		return NULL;
	return sv->store[z] + local * val_len(cfg, z);
}

static int srv_init(struct server *sv, const struct kv_cfg *cfg, int s)
{
	memset(sv, 0, sizeof(*sv));
	sv->cfg = cfg;
	sv->s = s;
	for (int z = 0; z < cfg->nsizes; z++) {
		uint64_t vlen = val_len(cfg, z);

		sv->store[z] = malloc(cfg->workers * cfg->sizes[z]);
		if (!sv->store[z])
			return -ENOMEM;
		for (int w = 0; w < cfg->workers; w++)
			for (int j = 0; j < cfg->keys; j++) {
				uint64_t key = mk_key(s, w, j, cfg->keys);
				uint32_t *p = (uint32_t *)srv_val(sv, z, key);

				for (uint32_t i = 0; i < vlen / 4; i++)
					p[i] = w_init(key, i);
			}
	}
	return 0;
}

static void srv_fini(struct server *sv)
{
	for (int z = 0; z < sv->cfg->nsizes; z++)
		free(sv->store[z]);
}

/* Check a request's header against the configuration. */
static int srv_check_hdr(struct server *sv, const struct kv_hdr *h)
{
	const struct kv_cfg *cfg = sv->cfg;

	if (h->op == OP_DONE)
		return h->worker < (uint32_t)cfg->workers ? 0 : -EPROTO;
	if ((h->op != OP_PUSH && h->op != OP_PULL) ||
	    h->worker >= (uint32_t)cfg->workers ||
	    h->size_idx >= (uint32_t)cfg->nsizes ||
	    h->nkeys != (uint32_t)cfg->keys) {
		fprintf(stderr, PROG ": server %d: bad request (op %u worker %u size %u keys %u): same options on every role?\n",
			sv->s, h->op, h->worker, h->size_idx, h->nkeys);
		return -EPROTO;
	}
	return 0;
}

/* Add one pushed value into the weights. */
static int srv_add(struct server *sv, int z, uint64_t key, const void *val)
{
	uint32_t *p = (uint32_t *)srv_val(sv, z, key);
	/*
	 * The length once: in the loop's condition it was computed again
	 * for every element (a 64-bit division), since a store through @p
	 * may change sv->cfg->keys for all the compiler knows.
	 */
	uint64_t n = val_len(sv->cfg, z) / 4;
	const uint32_t *g = val;

	if (!p) {
		fprintf(stderr, PROG ": server %d: key 0x%llx is not ours\n",
			sv->s, (unsigned long long)key);
		return -EPROTO;
	}
	for (uint64_t i = 0; i < n; i++)
		p[i] += g[i];
	if (++sv->pushes == sv->cfg->corrupt)
		p[0] ^= 1;	/* --test-corrupt: the workers must notice */
	return 0;
}

static struct kv_hdr *srv_reply_hdr(struct server *sv, const struct kv_hdr *req,
				    uint32_t op)
{
	struct kv_hdr *h = &sv->reply[sv->nreply++ % NSLOT];

	*h = *req;
	h->op = op;
	return h;
}

/* dmaplane server: requests into posted flat buffers, replies as iovecs. */
struct dp_server {
	struct server sv;
	struct dp_ep *ep;
	uint32_t av[MAX_WORKERS];
	uint8_t *rbuf[SRV_RECVS];
	uint64_t rlen;
	struct dmaplane_cqe fifo[4096];	/* completions taken but not handled */
	unsigned int head, tail;
	int sends;
	/* acks and re-posted receives not submitted yet (dps_flush) */
	struct dmaplane_op pend[2 * SRV_RECVS];
	unsigned int npend;
	/*
	 * Requests are taken in each worker's order (kv_hdr.rseq): across
	 * nodes a small pull can complete before the larger push its worker
	 * sent first (matching keeps the order, completion need not), and a
	 * pull must see that push.  A request that completed early waits in
	 * parked, its buffer not re-posted, until its turn.
	 */
	uint64_t next[MAX_WORKERS];
	struct dmaplane_cqe parked[SRV_RECVS];
	unsigned int nparked;
};

#define CTX_SEND	(1ull << 63)

static int dps_reap(struct dp_server *d, int timeout_ms)
{
	struct dmaplane_cqe c[64];
	unsigned int room = 4096 - (d->tail - d->head);
	int n = ep_wait(d->ep, c, room < 64 ? room : 64, timeout_ms);

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++)
		d->fifo[d->tail++ % 4096] = c[i];
	return n;
}

/*
 * Submit @nr prepared operations in as few dp_submit() calls as the ring
 * allows: while it is full (-EAGAIN), @reap(@arg) takes completions to
 * make room.  Each accepted RECV adds one to *@recvs, each SEND to *@sends.
 */
static int dp_submit_all(struct dp_ep *ep, const struct dmaplane_op *ops,
			 unsigned int nr, int (*reap)(void *arg), void *arg,
			 int *recvs, int *sends)
{
	unsigned int done = 0;
	int ret;

	while (done < nr) {
		ret = dp_submit(ep, ops + done, nr - done);
		if (ret == -EAGAIN) {
			ret = reap(arg);
			if (ret < 0)
				return ret;
			continue;
		}
		if (ret < 0)
			return ret;
		for (unsigned int i = done; i < done + ret; i++) {
			if (ops[i].opcode == DMAPLANE_OP_RECV)
				(*recvs)++;
			else if (ops[i].opcode == DMAPLANE_OP_SEND)
				(*sends)++;
		}
		done += ret;
	}
	return 0;
}

/* Make room in the ring: one completion, unless the FIFO has none left. */
static int dps_reap_one(void *arg)
{
	struct dp_server *d = arg;

	if (d->tail - d->head >= 4096 - 64)
		return -ENOBUFS;
	return dps_reap(d, 1);
}

/* A send, retried while the ring or the peer's unexpected budget is full. */
static int dps_send(struct dp_server *d, uint32_t dest, uint64_t tag,
		    const struct iovec *iov, unsigned int n)
{
	int ret;

	while ((ret = dp_sendv(d->ep, dest, tag, iov, n, CTX_SEND)) == -EAGAIN) {
		if (d->tail - d->head >= 4096 - 64)
			return -ENOBUFS;
		ret = dps_reap(d, 1);
		if (ret < 0)
			return ret;
	}
	if (!ret)
		d->sends++;
	return ret;
}

/* Submit the pending acks and receives in as few dp_submit() calls as the ring allows. */
static int dps_flush(struct dp_server *d)
{
	int recvs = 0, ret;

	ret = dp_submit_all(d->ep, d->pend, d->npend, dps_reap_one, d, &recvs,
			    &d->sends);
	if (!ret)
		d->npend = 0;
	return ret;
}

static int dps_request(struct dp_server *d, const struct dmaplane_cqe *c);

static int dps_handle(struct dp_server *d, const struct dmaplane_cqe *c)
{
	const struct kv_hdr *h;
	struct dmaplane_cqe cur;
	unsigned int b, i;
	uint32_t w;
	int ret;

	if (c->ctx & CTX_SEND) {
		d->sends--;
		return c->status;
	}
	b = c->ctx;
	if (c->status || b >= SRV_RECVS || c->len < sizeof(*h))
		return c->status ? c->status : -EPROTO;
	h = (const struct kv_hdr *)d->rbuf[b];
	ret = srv_check_hdr(&d->sv, h);
	if (ret)
		return ret;
	w = h->worker;
	if (h->rseq != d->next[w]) {
		if (h->rseq < d->next[w] || d->nparked == SRV_RECVS)
			return -EPROTO;
		d->parked[d->nparked++] = *c;
		return 0;
	}
	cur = *c;
	for (;;) {
		ret = dps_request(d, &cur);
		if (ret)
			return ret;
		d->next[w]++;
		for (i = 0; i < d->nparked; i++)
			if (((const struct kv_hdr *)d->rbuf[d->parked[i].ctx])->worker == w &&
			    ((const struct kv_hdr *)d->rbuf[d->parked[i].ctx])->rseq == d->next[w])
				break;
		if (i == d->nparked)
			return 0;
		cur = d->parked[i];
		d->parked[i] = d->parked[--d->nparked];
	}
}

/* One request, in its worker's order; its buffer is re-posted after. */
static int dps_request(struct dp_server *d, const struct dmaplane_cqe *c)
{
	struct server *sv = &d->sv;
	const struct kv_cfg *cfg = sv->cfg;
	struct iovec iov[MAX_KEYS + 1];
	const struct kv_hdr *h;
	const uint64_t *keys;
	const uint8_t *vals;
	struct kv_hdr *r;
	unsigned int b;
	uint64_t vlen;
	int ret;

	b = c->ctx;
	h = (const struct kv_hdr *)d->rbuf[b];
	if (h->op == OP_DONE) {
		sv->done++;
		goto repost;
	}
	vlen = val_len(cfg, h->size_idx);
	keys = (const uint64_t *)(h + 1);
	vals = (const uint8_t *)(keys + cfg->keys);
	if (c->len != sizeof(*h) + cfg->keys * 8 + (h->op == OP_PUSH ? cfg->keys * vlen : 0))
		return -EPROTO;
	if (h->op == OP_PUSH) {
		for (int j = 0; j < cfg->keys; j++) {
			ret = srv_add(sv, h->size_idx, keys[j], vals + j * vlen);
			if (ret)
				return ret;
		}
		r = srv_reply_hdr(sv, h, OP_ACK);
		if (!no_batch) {
			dp_prep_send(&d->pend[d->npend++], d->av[h->worker],
				     TAG(OP_ACK, h->seq), r, sizeof(*r), CTX_SEND);
			goto repost;
		}
		iov[0] = (struct iovec){ r, sizeof(*r) };
		ret = dps_send(d, d->av[h->worker], TAG(OP_ACK, h->seq), iov, 1);
	} else {
		r = srv_reply_hdr(sv, h, OP_VALS);
		iov[0] = (struct iovec){ r, sizeof(*r) };
		for (int j = 0; j < cfg->keys; j++) {
			iov[j + 1].iov_base = srv_val(sv, h->size_idx, keys[j]);
			iov[j + 1].iov_len = vlen;
			if (!iov[j + 1].iov_base)
				return -EPROTO;
		}
		ret = dps_send(d, d->av[h->worker], TAG(OP_VALS, h->seq), iov,
			       cfg->keys + 1);
	}
	if (ret)
		return ret;
repost:
	if (!no_batch) {
		dp_prep_recv(&d->pend[d->npend++], DP_ANY_SRC, TAG_REQ, TAG_REQ_IGNORE,
			     d->rbuf[b], d->rlen, b);
		return 0;
	}
	return dp_recv(d->ep, DP_ANY_SRC, TAG_REQ, TAG_REQ_IGNORE, d->rbuf[b],
		       d->rlen, b);
}

static int run_dp_server(const struct kv_cfg *cfg, int s, const char *addr)
{
	struct dp_server *d = calloc(1, sizeof(*d));
	int ret;

	if (!d)
		return -ENOMEM;
	ret = srv_init(&d->sv, cfg, s);
	if (ret)
		goto out;
	d->rlen = sizeof(struct kv_hdr) + cfg->keys * (8 + max_size(cfg) / cfg->keys);
	ret = dp_open(NULL, 0, &d->ep);
	if (ret)
		goto out;
	ret = dp_ep_setup(d->ep, 0, 1024);
	if (!ret)
		ret = boot_serve(d->ep, addr, cfg->workers, d->av);
	for (int b = 0; !ret && b < SRV_RECVS; b++) {
		d->rbuf[b] = malloc(d->rlen);
		ret = d->rbuf[b] ? dp_recv(d->ep, DP_ANY_SRC, TAG_REQ, TAG_REQ_IGNORE,
					   d->rbuf[b], d->rlen, b) : -ENOMEM;
	}
	while (!ret && (d->sv.done < cfg->workers || d->sends || d->npend)) {
		if (d->head == d->tail) {
			/* Nothing left to handle: submit, then sleep. */
			ret = dps_flush(d);
			if (ret)
				break;
			if (d->sv.done == cfg->workers && !d->sends)
				break;
			ret = dps_reap(d, TIMEOUT_MS);
			if (!ret)
				ret = -ETIMEDOUT;
			if (ret < 0)
				break;
			ret = 0;
		}
		/*
		 * A request's ack and its buffer's re-post go out at once, in
		 * one call: holding acks until the ring is drained (one call
		 * for many requests) cost 4x the push rate in one make bench
		 * run, the worker waiting for acks instead of pushing.
		 */
		ret = dps_handle(d, &d->fifo[d->head++ % 4096]);
		if (!ret && d->npend)
			ret = dps_flush(d);
	}
	dp_close(d->ep);
	for (int b = 0; b < SRV_RECVS; b++)
		free(d->rbuf[b]);
out:
	srv_fini(&d->sv);
	free(d);
	return ret;
}

#ifdef HAVE_ZMQ
static int zerr(void)
{
	return -zmq_errno();
}

/*
 * The first frame of a message (the rest of a multipart message is there
 * with it): zmq_recv(), or with --busy-poll in a loop that does not block.
 */
static int z_recv_first(void *sock, void *buf, size_t len)
{
	double t0 = now();
	int n;

	if (!busy_poll)
		return zmq_recv(sock, buf, len, 0);
	while ((n = zmq_recv(sock, buf, len, ZMQ_DONTWAIT)) < 0 &&
	       zmq_errno() == EAGAIN)
		if (now() - t0 > TIMEOUT_MS / 1000.0)
			break;
	return n;
}

/*
 * Receive one frame of exactly @len bytes; @more: another must follow (1),
 * must not (0), either (-1); @first: the message's first frame.
 */
static int z_recv_exact(void *sock, void *buf, size_t len, int more, int first)
{
	int64_t rcvmore;
	size_t sz = sizeof(rcvmore);
	int n = first ? z_recv_first(sock, buf, len) : zmq_recv(sock, buf, len, 0);

	if (n < 0)
		return zerr();
	if ((size_t)n != len)
		return -EPROTO;
	if (zmq_getsockopt(sock, ZMQ_RCVMORE, &rcvmore, &sz))
		return zerr();
	return more < 0 || !!rcvmore == !!more ? 0 : -EPROTO;
}

/* Send @len bytes at @buf without copying them (ps-lite does the same). */
static int z_send_nocopy(void *sock, const void *buf, size_t len, int flags)
{
	zmq_msg_t m;

	if (zmq_msg_init_data(&m, (void *)buf, len, NULL, NULL))
		return zerr();
	if (zmq_msg_send(&m, sock, flags) < 0) {
		int ret = zerr();

		zmq_msg_close(&m);
		return ret;
	}
	return 0;
}

/* ZeroMQ server: a ROUTER socket; [id][hdr][keys][value]... frames. */
static int run_zmq_server(const struct kv_cfg *cfg, int s, const char *addr)
{
	struct server *sv = calloc(1, sizeof(*sv));
	void *ctx = zmq_ctx_new(), *sock = NULL;
	uint64_t *keys = calloc(cfg->keys, 8);
	int linger = 2000, tmo = TIMEOUT_MS, ret;
	uint8_t id[256];

	if (!sv || !ctx || !keys) {
		ret = -ENOMEM;
		goto out;
	}
	ret = srv_init(sv, cfg, s);
	if (ret)
		goto out;
	sock = zmq_socket(ctx, ZMQ_ROUTER);
	if (!sock || zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof(linger)) ||
	    zmq_setsockopt(sock, ZMQ_RCVTIMEO, &tmo, sizeof(tmo)) ||
	    zmq_bind(sock, addr)) {
		ret = zerr();
		fprintf(stderr, PROG ": server %d: %s: %s\n", s, addr, zmq_strerror(-ret));
		goto out;
	}
	while (sv->done < cfg->workers) {
		struct kv_hdr h, *r;
		int idlen = z_recv_first(sock, id, sizeof(id));
		uint64_t vlen;

		if (idlen < 0 || idlen > (int)sizeof(id)) {
			ret = idlen < 0 ? zerr() : -EPROTO;
			break;
		}
		ret = z_recv_exact(sock, &h, sizeof(h), -1, 0);
		if (!ret)
			ret = srv_check_hdr(sv, &h);
		if (ret)
			break;
		if (h.op == OP_DONE) {
			sv->done++;
			continue;
		}
		vlen = val_len(cfg, h.size_idx);
		ret = z_recv_exact(sock, keys, cfg->keys * 8, h.op == OP_PUSH, 0);
		for (int j = 0; !ret && h.op == OP_PUSH && j < cfg->keys; j++) {
			zmq_msg_t m;

			zmq_msg_init(&m);
			if (zmq_msg_recv(&m, sock, 0) < 0)
				ret = zerr();
			else if (zmq_msg_size(&m) != vlen ||
				 !!zmq_msg_more(&m) != (j < cfg->keys - 1))
				ret = -EPROTO;
			else
				ret = srv_add(sv, h.size_idx, keys[j], zmq_msg_data(&m));
			zmq_msg_close(&m);
		}
		if (ret)
			break;
		r = srv_reply_hdr(sv, &h, h.op == OP_PUSH ? OP_ACK : OP_VALS);
		if (zmq_send(sock, id, idlen, ZMQ_SNDMORE) < 0 ||
		    zmq_send(sock, r, sizeof(*r), h.op == OP_PUSH ? 0 : ZMQ_SNDMORE) < 0) {
			ret = zerr();
			break;
		}
		for (int j = 0; !ret && h.op == OP_PULL && j < cfg->keys; j++) {
			const void *v = srv_val(sv, h.size_idx, keys[j]);

			ret = v ? z_send_nocopy(sock, v, vlen,
						j < cfg->keys - 1 ? ZMQ_SNDMORE : 0) : -EPROTO;
		}
		if (ret)
			break;
	}
out:
	if (sock)
		zmq_close(sock);
	if (ctx)
		zmq_ctx_term(ctx);
	if (sv && sv->cfg)
		srv_fini(sv);
	free(sv);
	free(keys);
	return ret;
}
#endif

/* ---- workers ------------------------------------------------------- */

struct worker;

struct wops {
	/* start a push of @grad (one server's values) marked @mark */
	int (*push)(struct worker *wk, int s, int z, uint64_t mark, const uint8_t *grad);
	/* start a pull of one server's values into @dst */
	int (*pull)(struct worker *wk, int s, int z, uint8_t *dst);
	/* wait until at least one reply (ack or values) is in */
	int (*wait_one)(struct worker *wk);
	int (*done)(struct worker *wk, int s);
	void (*close)(struct worker *wk);
};

struct worker {
	const struct kv_cfg *cfg;
	const struct wops *ops;
	int w;
	uint64_t *keys;			/* per server: keys */
	uint8_t *grad, *pulled;		/* per server: max_size bytes */
	uint64_t a[MAX_SERVERS], b[MAX_SERVERS];	/* pushes, sum of marks */
	int out;			/* replies not yet in */
	uint64_t seq;
	uint64_t rseq[MAX_SERVERS];	/* requests sent to each server */
	struct kv_hdr hdr[NSLOT];	/* headers of requests and replies */
	/* dmaplane */
	struct dp_ep *ep;
	uint32_t av[MAX_SERVERS];
	int sends;
	/* ZeroMQ */
	void *zctx, *zsock[MAX_SERVERS];
	struct { int s, op, z; uint8_t *dst; } fifo[NSLOT];	/* replies expected, in order */
	unsigned int head, tail;
};

static struct kv_hdr *wk_hdr(struct worker *wk, uint32_t op, int z, uint64_t mark)
{
	struct kv_hdr *h = &wk->hdr[wk->seq % NSLOT];

	*h = (struct kv_hdr){ .op = op, .worker = wk->w, .size_idx = z,
			      .nkeys = wk->cfg->keys, .seq = wk->seq, .mark = mark };
	wk->seq++;
	return h;
}

/* The header of a request to server @s, numbered in its sequence. */
static struct kv_hdr *wk_req(struct worker *wk, int s, uint32_t op, int z, uint64_t mark)
{
	struct kv_hdr *h = wk_hdr(wk, op, z, mark);

	h->rseq = wk->rseq[s]++;
	return h;
}

/* dmaplane: requests with dp_sendv, replies into posted dp_recv/dp_recvv. */
enum { CTX_W_SEND = 1, CTX_W_REPLY };

static int dpw_reap(struct worker *wk, int timeout_ms)
{
	struct dmaplane_cqe c[64];
	int n = ep_wait(wk->ep, c, 64, timeout_ms);

	if (n < 0)
		return n;
	for (int i = 0; i < n; i++) {
		if (c[i].status) {
			fprintf(stderr, PROG ": worker %d: completion 0x%llx: %s\n", wk->w,
				(unsigned long long)c[i].ctx, strerror(-c[i].status));
			return c[i].status;
		}
		if (c[i].ctx == CTX_W_SEND) {
			wk->sends--;
		} else {
			wk->out--;
		}
	}
	return n;
}

/* Make room in the ring: one completion. */
static int dpw_reap_one(void *arg)
{
	return dpw_reap(arg, 1);
}

static int dpw_sendv(struct worker *wk, int s, uint64_t tag,
		     const struct iovec *iov, unsigned int n)
{
	int ret;

	while ((ret = dp_sendv(wk->ep, wk->av[s], tag, iov, n, CTX_W_SEND)) == -EAGAIN) {
		ret = dpw_reap(wk, 1);
		if (ret < 0)
			return ret;
	}
	if (!ret)
		wk->sends++;
	return ret;
}

static int dpw_push(struct worker *wk, int s, int z, uint64_t mark, const uint8_t *grad)
{
	const struct kv_cfg *cfg = wk->cfg;
	struct kv_hdr *h = wk_req(wk, s, OP_PUSH, z, mark), *ack;
	struct iovec iov[MAX_KEYS + 2];
	uint64_t vlen = val_len(cfg, z);
	int ret;

	ack = wk_hdr(wk, OP_ACK, z, 0);	/* the ack lands in the next slot */
	iov[0] = (struct iovec){ h, sizeof(*h) };
	iov[1] = (struct iovec){ wk->keys + s * cfg->keys, cfg->keys * 8 };
	for (int j = 0; j < cfg->keys; j++)
		iov[j + 2] = (struct iovec){ (void *)(grad + j * vlen), vlen };
	if (!no_batch) {
		/* The ack's receive and the push in one system call. */
		struct dmaplane_op op[2];

		dp_prep_recv(&op[0], wk->av[s], TAG(OP_ACK, h->seq), 0, ack,
			     sizeof(*ack), CTX_W_REPLY);
		dp_prep_send(&op[1], wk->av[s], TAG(OP_PUSH, h->seq), iov,
			     cfg->keys + 2, CTX_W_SEND);
		dp_prep_set_flags(&op[1], DMAPLANE_OP_F_IOV);
		return dp_submit_all(wk->ep, op, 2, dpw_reap_one, wk, &wk->out,
				     &wk->sends);
	}
	ret = dp_recv(wk->ep, wk->av[s], TAG(OP_ACK, h->seq), 0, ack, sizeof(*ack),
		      CTX_W_REPLY);
	if (ret)
		return ret;
	wk->out++;
	return dpw_sendv(wk, s, TAG(OP_PUSH, h->seq), iov, cfg->keys + 2);
}

static int dpw_pull(struct worker *wk, int s, int z, uint8_t *dst)
{
	const struct kv_cfg *cfg = wk->cfg;
	struct kv_hdr *h = wk_req(wk, s, OP_PULL, z, 0), *rh;
	struct iovec iov[MAX_KEYS + 2];
	uint64_t vlen = val_len(cfg, z);
	int ret;

	rh = wk_hdr(wk, OP_VALS, z, 0);
	iov[0] = (struct iovec){ rh, sizeof(*rh) };
	for (int j = 0; j < cfg->keys; j++)
		iov[j + 1] = (struct iovec){ dst + j * vlen, vlen };
	ret = dp_recvv(wk->ep, wk->av[s], TAG(OP_VALS, h->seq), 0, iov,
		       cfg->keys + 1, CTX_W_REPLY);
	if (ret)
		return ret;
	wk->out++;
	iov[0] = (struct iovec){ h, sizeof(*h) };
	iov[1] = (struct iovec){ wk->keys + s * cfg->keys, cfg->keys * 8 };
	return dpw_sendv(wk, s, TAG(OP_PULL, h->seq), iov, 2);
}

static int dpw_wait_one(struct worker *wk)
{
	int out = wk->out;

	while (wk->out == out) {
		int ret = dpw_reap(wk, TIMEOUT_MS);

		if (ret < 0)
			return ret;
		if (!ret)
			return -ETIMEDOUT;
	}
	return 0;
}

static int dpw_done(struct worker *wk, int s)
{
	struct kv_hdr *h = wk_req(wk, s, OP_DONE, 0, 0);
	struct iovec iov = { h, sizeof(*h) };
	int ret = dpw_sendv(wk, s, TAG(OP_DONE, h->seq), &iov, 1);

	while (!ret && wk->sends) {
		ret = dpw_reap(wk, TIMEOUT_MS);
		ret = ret < 0 ? ret : ret ? 0 : -ETIMEDOUT;
	}
	return ret;
}

static void dpw_close(struct worker *wk)
{
	dp_close(wk->ep);
}

static const struct wops dp_wops = {
	.push = dpw_push, .pull = dpw_pull, .wait_one = dpw_wait_one,
	.done = dpw_done, .close = dpw_close,
};

static int dpw_open(struct worker *wk)
{
	const struct kv_cfg *cfg = wk->cfg;
	int ret = dp_open(NULL, 0, &wk->ep);

	if (ret)
		return ret;
	ret = dp_ep_setup(wk->ep, 0, 1024);
	for (int s = 0; !ret && s < cfg->servers; s++)
		ret = boot_connect(wk->ep, cfg->addrs[s], wk->w, &wk->av[s]);
	return ret;
}

#ifdef HAVE_ZMQ
/* ZeroMQ: a DEALER per server; replies come back in order per socket. */
static int zw_expect(struct worker *wk, int s, int op, int z, uint8_t *dst)
{
	unsigned int i = wk->tail++ % NSLOT;

	wk->fifo[i].s = s;
	wk->fifo[i].op = op;
	wk->fifo[i].z = z;
	wk->fifo[i].dst = dst;
	wk->out++;
	return 0;
}

static int zw_push(struct worker *wk, int s, int z, uint64_t mark, const uint8_t *grad)
{
	const struct kv_cfg *cfg = wk->cfg;
	struct kv_hdr *h = wk_req(wk, s, OP_PUSH, z, mark);
	uint64_t vlen = val_len(cfg, z);
	void *sock = wk->zsock[s];
	int ret = 0;

	if (zmq_send(sock, h, sizeof(*h), ZMQ_SNDMORE) < 0 ||
	    zmq_send(sock, wk->keys + s * cfg->keys, cfg->keys * 8, ZMQ_SNDMORE) < 0)
		return zerr();
	for (int j = 0; !ret && j < cfg->keys; j++)
		ret = z_send_nocopy(sock, grad + j * vlen, vlen,
				    j < cfg->keys - 1 ? ZMQ_SNDMORE : 0);
	return ret ? ret : zw_expect(wk, s, OP_ACK, z, NULL);
}

static int zw_pull(struct worker *wk, int s, int z, uint8_t *dst)
{
	const struct kv_cfg *cfg = wk->cfg;
	struct kv_hdr *h = wk_req(wk, s, OP_PULL, z, 0);

	if (zmq_send(wk->zsock[s], h, sizeof(*h), ZMQ_SNDMORE) < 0 ||
	    zmq_send(wk->zsock[s], wk->keys + s * cfg->keys, cfg->keys * 8, 0) < 0)
		return zerr();
	return zw_expect(wk, s, OP_VALS, z, dst);
}

static int zw_wait_one(struct worker *wk)
{
	const struct kv_cfg *cfg = wk->cfg;
	unsigned int i = wk->head++ % NSLOT;
	void *sock = wk->zsock[wk->fifo[i].s];
	int vals = wk->fifo[i].op == OP_VALS;
	uint64_t vlen = val_len(cfg, wk->fifo[i].z);
	struct kv_hdr h;
	int ret;

	ret = z_recv_exact(sock, &h, sizeof(h), vals, 1);
	if (!ret && h.op != (uint32_t)wk->fifo[i].op)
		ret = -EPROTO;
	for (int j = 0; !ret && vals && j < cfg->keys; j++)
		ret = z_recv_exact(sock, wk->fifo[i].dst + j * vlen, vlen,
				   j < cfg->keys - 1, 0);
	wk->out--;
	return ret;
}

static int zw_done(struct worker *wk, int s)
{
	struct kv_hdr *h = wk_req(wk, s, OP_DONE, 0, 0);

	return zmq_send(wk->zsock[s], h, sizeof(*h), 0) < 0 ? zerr() : 0;
}

static void zw_close(struct worker *wk)
{
	for (int s = 0; s < wk->cfg->servers; s++)
		if (wk->zsock[s])
			zmq_close(wk->zsock[s]);
	if (wk->zctx)
		zmq_ctx_term(wk->zctx);	/* lingers until DONE is out */
}

static const struct wops zmq_wops = {
	.push = zw_push, .pull = zw_pull, .wait_one = zw_wait_one,
	.done = zw_done, .close = zw_close,
};

static int zw_open(struct worker *wk)
{
	int linger = 2000, tmo = TIMEOUT_MS;

	wk->zctx = zmq_ctx_new();
	if (!wk->zctx)
		return zerr();
	for (int s = 0; s < wk->cfg->servers; s++) {
		wk->zsock[s] = zmq_socket(wk->zctx, ZMQ_DEALER);
		if (!wk->zsock[s] ||
		    zmq_setsockopt(wk->zsock[s], ZMQ_LINGER, &linger, sizeof(linger)) ||
		    zmq_setsockopt(wk->zsock[s], ZMQ_RCVTIMEO, &tmo, sizeof(tmo)) ||
		    zmq_connect(wk->zsock[s], wk->cfg->addrs[s])) {
			int ret = zerr();

			fprintf(stderr, PROG ": worker %d: %s: %s\n", wk->w,
				wk->cfg->addrs[s], zmq_strerror(-ret));
			return ret;
		}
	}
	return 0;
}
#endif

static int wait_all(struct worker *wk)
{
	int ret = 0;

	while (!ret && wk->out)
		ret = wk->ops->wait_one(wk);
	return ret;
}

/* One push+pull round on every server; @t: its time, filling not included. */
static int round_trip(struct worker *wk, int z, uint64_t mark, double *t)
{
	const struct kv_cfg *cfg = wk->cfg;
	uint64_t vlen = val_len(cfg, z), msz = max_size(cfg);
	double t0;
	int ret = 0;

	for (int s = 0; s < cfg->servers; s++)
		fill_grad(wk->grad + s * msz, s, wk->w, cfg->keys, vlen, mark);
	t0 = now();
	for (int s = 0; !ret && s < cfg->servers; s++) {
		ret = wk->ops->push(wk, s, z, mark, wk->grad + s * msz);
		if (!ret)
			ret = wk->ops->pull(wk, s, z, wk->pulled + s * msz);
	}
	if (!ret)
		ret = wait_all(wk);
	if (t)
		*t = now() - t0;
	for (int s = 0; !ret && s < cfg->servers; s++) {
		wk->a[s]++;
		wk->b[s] += mark;
		ret = check_vals(wk->pulled + s * msz, s, wk->w, cfg->keys, vlen,
				 wk->a[s], wk->b[s]);
	}
	return ret;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* How many rounds or pushes for @size: @n at 4 KiB, fewer above, >= @min. */
static int scaled(int n, uint64_t size, int min)
{
	uint64_t v = size <= 65536 ? (uint64_t)n : (uint64_t)n * 65536 / size;

	return v < (uint64_t)min ? min : (int)v;
}

static int measure(struct worker *wk, int z, struct kv_result *res)
{
	const struct kv_cfg *cfg = wk->cfg;
	uint64_t vlen = val_len(cfg, z), msz = max_size(cfg);
	int rounds = scaled(cfg->iters, cfg->sizes[z], 20);
	int pushes = scaled(cfg->pushes, cfg->sizes[z], 4 * cfg->window);
	uint64_t mark = 1000003;	/* the rate phase's mark */
	double *lat = calloc(rounds, sizeof(*lat)), t0, t;
	int ret = 0;

	if (!lat)
		return -ENOMEM;
	for (int i = 0; !ret && i < cfg->warmup; i++)
		ret = round_trip(wk, z, i + 1, NULL);
	for (int i = 0; !ret && i < rounds; i++)
		ret = round_trip(wk, z, cfg->warmup + i + 1, &lat[i]);
	if (ret)
		goto out;
	qsort(lat, rounds, sizeof(*lat), cmp_double);
	res->lat_med = lat[rounds / 2] * 1e6;
	res->lat_p99 = lat[(int)ceil(rounds * 0.99) - 1] * 1e6;
	res->rounds = rounds;

	/* The rate: every push carries the same gradient (mark). */
	for (int s = 0; s < cfg->servers; s++)
		fill_grad(wk->grad + s * msz, s, wk->w, cfg->keys, vlen, mark);
	t0 = now();
	for (int i = 0; !ret && i < pushes; i++) {
		int s = i % cfg->servers;

		if (wk->out >= cfg->window)
			ret = wk->ops->wait_one(wk);
		if (!ret)
			ret = wk->ops->push(wk, s, z, mark, wk->grad + s * msz);
		wk->a[s]++;
		wk->b[s] += mark;
	}
	if (!ret)
		ret = wait_all(wk);
	t = now() - t0;
	if (ret)
		goto out;
	res->pushes = pushes;
	res->pushes_per_s = pushes / t;
	res->bw = pushes * (double)cfg->sizes[z] / t / 1e6;

	/* What the rate phase left on the servers. */
	for (int s = 0; !ret && s < cfg->servers; s++)
		ret = wk->ops->pull(wk, s, z, wk->pulled + s * msz);
	if (!ret)
		ret = wait_all(wk);
	for (int s = 0; !ret && s < cfg->servers; s++)
		ret = check_vals(wk->pulled + s * msz, s, wk->w, cfg->keys, vlen,
				 wk->a[s], wk->b[s]);
	res->done = !ret;
out:
	free(lat);
	return ret;
}

static int run_worker(const struct kv_cfg *cfg, int w, struct kv_result *res)
{
	struct worker *wk = calloc(1, sizeof(*wk));
	uint64_t msz = max_size(cfg);
	int ret;

	if (!wk)
		return -ENOMEM;
	wk->cfg = cfg;
	wk->w = w;
	wk->keys = calloc(cfg->servers * cfg->keys, 8);
	wk->grad = malloc(cfg->servers * msz);
	wk->pulled = malloc(cfg->servers * msz);
	if (!wk->keys || !wk->grad || !wk->pulled) {
		ret = -ENOMEM;
		goto out;
	}
	for (int s = 0; s < cfg->servers; s++)
		for (int j = 0; j < cfg->keys; j++)
			wk->keys[s * cfg->keys + j] = mk_key(s, w, j, cfg->keys);
#ifdef HAVE_ZMQ
	if (cfg->tr != T_DMAPLANE) {
		wk->ops = &zmq_wops;
		ret = zw_open(wk);
	} else
#endif
	{
		wk->ops = &dp_wops;
		ret = dpw_open(wk);
	}
	for (int z = 0; !ret && z < cfg->nsizes; z++) {
		/* The servers hold each size's weights apart: start afresh. */
		memset(wk->a, 0, sizeof(wk->a));
		memset(wk->b, 0, sizeof(wk->b));
		ret = measure(wk, z, &res[z]);
		if (verbose && !ret)
			fprintf(stderr, PROG ": worker %d: size %llu done\n", w,
				(unsigned long long)cfg->sizes[z]);
	}
	for (int s = 0; !ret && s < cfg->servers; s++)
		ret = wk->ops->done(wk, s);
	wk->ops->close(wk);
out:
	free(wk->keys);
	free(wk->grad);
	free(wk->pulled);
	free(wk);
	return ret;
}

/* ---- reporting ----------------------------------------------------- */

struct kv_sum {
	double med, p99, pps, bw;
};

/* Size @z over @nw workers: latencies averaged (p99: the largest), rates added. */
static struct kv_sum sum_size(const struct kv_cfg *cfg, const struct kv_result *res,
			      int nw, int z)
{
	struct kv_sum t = { 0 };

	for (int w = 0; w < nw; w++) {
		const struct kv_result *r = &res[w * cfg->nsizes + z];

		t.med += r->lat_med / nw;
		if (r->lat_p99 > t.p99)
			t.p99 = r->lat_p99;
		t.pps += r->pushes_per_s;
		t.bw += r->bw;
	}
	return t;
}

/* @res: @nw workers' results, nsizes each. */
static void report(const struct kv_cfg *cfg, const struct kv_result *res, int nw)
{
	const char *tr = transport_names[cfg->tr];

	printf("%-9s %10s %5s %10s %10s %10s %12s\n", "transport", "size", "keys",
	       "lat_us", "p99_us", "MB/s", "pushes/s");
	for (int z = 0; z < cfg->nsizes; z++) {
		struct kv_sum t = sum_size(cfg, res, nw, z);

		printf("%-9s %10llu %5d %10.1f %10.1f %10.1f %12.0f\n", tr,
		       (unsigned long long)cfg->sizes[z], cfg->keys, t.med, t.p99,
		       t.bw, t.pps);
	}
	for (int z = 0; z < cfg->nsizes; z++) {
		struct kv_sum t = sum_size(cfg, res, nw, z);

		printf("kvstore transport=%s size=%llu keys=%d servers=%d workers=%d window=%d wait=%s submit=%s rounds=%d pushes=%d lat_us=%.1f lat_p99_us=%.1f bw_MBps=%.1f pushes_per_s=%.0f verified=yes\n",
		       tr, (unsigned long long)cfg->sizes[z], cfg->keys, cfg->servers,
		       nw, cfg->window, busy_poll ? "poll" : "block",
		       cfg->tr != T_DMAPLANE ? "-" : no_batch ? "single" : "batch", res[z].rounds, res[z].pushes, t.med, t.p99,
		       t.bw, t.pps);
	}
	fflush(stdout);
}

/* ---- options and roles --------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [OPTIONS]\n"
"A parameter-server benchmark: servers own key ranges, workers push\n"
"gradients (the server adds them into its weights) and pull weights, many\n"
"keys per message, keys and values as iovecs.  Every pulled value is checked\n"
"against what the server must hold; a mismatch is an error exit (status 1).\n"
"\n"
"  -t, --transport T   dmaplane (default), zmq-ipc, zmq-tcp (one node, forked),\n"
"                      zmq (with --role: the addresses say ipc:// or tcp://)\n"
"  -s, --servers N     servers (default 1); server s owns the keys s << 32 up\n"
"                      to (s + 1) << 32\n"
"  -w, --workers N     workers (default 1)\n"
"  -k, --keys N        keys per message (default 16, at most %d); a value\n"
"                      is SIZE / N bytes\n"
"  -S, --sizes LIST    bytes of values per message, comma-separated, each a\n"
"                      multiple of 4 * keys (default 4096,1048576; K/M suffixes)\n"
"  -n, --iters N       timed push+pull rounds at sizes <= 64 KiB (default 1000;\n"
"                      scaled down with size above, at least 20)\n"
"  -W, --warmup N      untimed rounds first (default 10)\n"
"  -p, --pushes N      pushes of the rate phase (default 2000, scaled as -n,\n"
"                      at least 4 * window)\n"
"  -q, --window N      pushes in flight without an ack (default 16, max %d)\n"
"  -B, --busy-poll     wait for completions and messages by polling in a loop\n"
"                      (dp_poll, zmq_recv ZMQ_DONTWAIT) instead of sleeping\n"
"                      (dp_wait, zmq_recv); for one process per CPU (ZeroMQ's\n"
"                      I/O thread then competes with the polling thread)\n"
"  -U, --no-batch      dmaplane: a system call per operation instead of one\n"
"                      dp_submit() for a worker's ack receive and push and one\n"
"                      for a server's ack and re-posted receive\n"
"  -P, --port N        one node: first TCP port (dmaplane name exchange,\n"
"                      zmq-tcp); default from the process id\n"
"      --role ROLE     run one role only: server or worker (across nodes)\n"
"      --rank N        this role's index (server: key range; worker: id)\n"
"      --addr LIST     server: the address to listen on; worker: every\n"
"                      server's address, comma-separated in rank order.\n"
"                      dmaplane: HOST:PORT of the TCP name exchange (server:\n"
"                      *:PORT); zmq: a ZeroMQ endpoint (tcp://HOST:PORT,\n"
"                      ipc:///PATH; server: tcp://*:PORT)\n"
"      --test-corrupt N  testing the check: every server spoils one element\n"
"                      of the value it adds at its Nth added key value; the\n"
"                      run must then fail\n"
"  -v, --verbose       progress on stderr\n"
"  -h, --help          this text\n"
"\n"
"Without --role the program forks its servers and workers on this node.\n"
"With --role, start every server and every worker with the same -t -s -w\n"
"-k -S options; a worker prints the results of its own pushes and pulls.\n"
"\n"
"Reported per size: lat_us and lat_p99_us, median and 99th percentile of a\n"
"push+pull round (push to every server, pull from every server, all acks\n"
"and values in); pushes_per_s, a stream of pushes round robin over the\n"
"servers with --window pushes awaiting their ack; bw_MBps, the values those\n"
"pushes carried (10^6 bytes/s).  With several workers latencies are the mean\n"
"of the workers' medians (p99: the largest), rates their sum.  One line per\n"
"size starts with \"kvstore \" (key=value), after a table.\n"
"\n"
"ZeroMQ: %s.\n",
		MAX_KEYS, MAX_WINDOW,
#ifdef HAVE_ZMQ
		"built in (libzmq)"
#else
		"not built in (no libzmq at build time: apt-get install libzmq3-dev)"
#endif
		);
}

static int parse_sizes(struct kv_cfg *cfg, char *arg)
{
	cfg->nsizes = 0;
	for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
		char *end;
		unsigned long long v = strtoull(tok, &end, 0);

		if (*end == 'K' || *end == 'k')
			v <<= 10, end++;
		else if (*end == 'M' || *end == 'm')
			v <<= 20, end++;
		if (*end || !v || cfg->nsizes == MAX_SIZES)
			return -EINVAL;
		cfg->sizes[cfg->nsizes++] = v;
	}
	return cfg->nsizes ? 0 : -EINVAL;
}

static int parse_addrs(struct kv_cfg *cfg, char *arg)
{
	cfg->naddrs = 0;
	for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
		if (cfg->naddrs == MAX_SERVERS)
			return -EINVAL;
		cfg->addrs[cfg->naddrs++] = tok;
	}
	return 0;
}

static int run_server(const struct kv_cfg *cfg, int s, const char *addr)
{
#ifdef HAVE_ZMQ
	if (cfg->tr != T_DMAPLANE)
		return run_zmq_server(cfg, s, addr);
#endif
	return run_dp_server(cfg, s, addr);
}

static int fail(const char *role, int rank, int err)
{
	fprintf(stderr, PROG ": %s %d: %s\n", role, rank, strerror(-err));
	return 1;
}

/* One node: fork the servers and the workers, report the workers' results. */
static int run_all(struct kv_cfg *cfg)
{
	int nproc = cfg->servers + cfg->workers, left = nproc, fails = 0;
	size_t rsz = sizeof(struct kv_result) * cfg->workers * cfg->nsizes;
	struct kv_result *res;
	static char addrbuf[MAX_SERVERS][128];
	pid_t pids[MAX_SERVERS + MAX_WORKERS];
	int port = cfg->port ? cfg->port : 20000 + (getpid() % 2000) * 8;

	res = mmap(NULL, rsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED)
		return 1;
	memset(res, 0, rsz);
	for (int s = 0; s < cfg->servers; s++) {
		if (cfg->tr == T_ZMQ_IPC)
			snprintf(addrbuf[s], sizeof(addrbuf[s]), "ipc:///tmp/" PROG ".%d.%d",
				 (int)getpid(), s);
		else if (cfg->tr == T_ZMQ_TCP)
			snprintf(addrbuf[s], sizeof(addrbuf[s]), "tcp://127.0.0.1:%d", port + s);
		else
			snprintf(addrbuf[s], sizeof(addrbuf[s]), "127.0.0.1:%d", port + s);
		cfg->addrs[s] = addrbuf[s];
	}
	cfg->naddrs = cfg->servers;
	fflush(stdout);
	for (int i = 0; i < nproc; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			perror(PROG ": fork");
			for (int k = 0; k < i; k++)
				kill(pids[k], SIGTERM);
			return 1;
		}
		if (pids[i])
			continue;
		if (i < cfg->servers) {
			int ret = run_server(cfg, i, cfg->addrs[i]);

			_exit(ret ? fail("server", i, ret) : 0);
		} else {
			int w = i - cfg->servers;
			int ret = run_worker(cfg, w, res + w * cfg->nsizes);

			_exit(ret ? fail("worker", w, ret) : 0);
		}
	}
	while (left) {
		int status, i;
		pid_t pid = wait(&status);

		if (pid < 0)
			break;
		for (i = 0; i < nproc && pids[i] != pid; i++)
			;
		if (i == nproc)
			continue;
		pids[i] = 0;
		left--;
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fails++;
			/* The others would wait for it until they time out. */
			for (int k = 0; k < nproc; k++)
				if (pids[k] > 0)
					kill(pids[k], SIGTERM);
		}
	}
	if (cfg->tr == T_ZMQ_IPC)
		for (int s = 0; s < cfg->servers; s++)
			unlink(cfg->addrs[s] + strlen("ipc://"));
	if (fails) {
		fprintf(stderr, PROG ": %d of %d processes failed\n", fails, nproc);
		return 1;
	}
	report(cfg, res, cfg->workers);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "transport", required_argument, NULL, 't' },
		{ "servers", required_argument, NULL, 's' },
		{ "workers", required_argument, NULL, 'w' },
		{ "keys", required_argument, NULL, 'k' },
		{ "sizes", required_argument, NULL, 'S' },
		{ "iters", required_argument, NULL, 'n' },
		{ "warmup", required_argument, NULL, 'W' },
		{ "pushes", required_argument, NULL, 'p' },
		{ "window", required_argument, NULL, 'q' },
		{ "port", required_argument, NULL, 'P' },
		{ "role", required_argument, NULL, 'R' },
		{ "rank", required_argument, NULL, 'r' },
		{ "addr", required_argument, NULL, 'a' },
		{ "test-corrupt", required_argument, NULL, 'C' },
		{ "busy-poll", no_argument, NULL, 'B' },
		{ "no-batch", no_argument, NULL, 'U' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ }
	};
	struct kv_cfg cfg = {
		.tr = T_DMAPLANE, .servers = 1, .workers = 1, .keys = 16,
		.nsizes = 2, .sizes = { 4096, 1 << 20 }, .iters = 1000,
		.warmup = 10, .pushes = 2000, .window = 16,
	};
	int c, t;

	while ((c = getopt_long(argc, argv, "t:s:w:k:S:n:W:p:q:P:BUvh", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			for (t = 0; t <= T_ZMQ && strcmp(optarg, transport_names[t]); t++)
				;
			if (t > T_ZMQ)
				goto bad;
			cfg.tr = t;
			break;
		case 's': cfg.servers = atoi(optarg); break;
		case 'w': cfg.workers = atoi(optarg); break;
		case 'k': cfg.keys = atoi(optarg); break;
		case 'S':
			if (parse_sizes(&cfg, optarg))
				goto bad;
			break;
		case 'n': cfg.iters = atoi(optarg); break;
		case 'W': cfg.warmup = atoi(optarg); break;
		case 'p': cfg.pushes = atoi(optarg); break;
		case 'q': cfg.window = atoi(optarg); break;
		case 'P': cfg.port = atoi(optarg); break;
		case 'R':
			if (!strcmp(optarg, "server"))
				cfg.role = 's';
			else if (!strcmp(optarg, "worker"))
				cfg.role = 'w';
			else
				goto bad;
			break;
		case 'r': cfg.rank = atoi(optarg); break;
		case 'a':
			if (parse_addrs(&cfg, optarg))
				goto bad;
			break;
		case 'C': cfg.corrupt = atoi(optarg); break;
		case 'B': busy_poll = 1; break;
		case 'U': no_batch = 1; break;
		case 'v': verbose = 1; break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			goto bad;
		}
	}
	if (optind != argc || cfg.servers < 1 || cfg.servers > MAX_SERVERS ||
	    cfg.workers < 1 || cfg.workers > MAX_WORKERS || cfg.keys < 1 ||
	    cfg.keys > MAX_KEYS || cfg.iters < 1 || cfg.warmup < 0 || cfg.pushes < 1 ||
	    cfg.window < 1 || cfg.window > MAX_WINDOW || cfg.rank < 0 || cfg.corrupt < 0)
		goto bad;
	for (int z = 0; z < cfg.nsizes; z++)
		if (cfg.sizes[z] % (4ull * cfg.keys)) {
			fprintf(stderr, PROG ": size %llu is not a multiple of 4 * %d keys\n",
				(unsigned long long)cfg.sizes[z], cfg.keys);
			return 2;
		}
#ifndef HAVE_ZMQ
	if (cfg.tr != T_DMAPLANE) {
		fprintf(stderr, PROG ": built without ZeroMQ (no libzmq at build time: apt-get install libzmq3-dev): only -t dmaplane\n");
		return 2;
	}
#endif
	if (!cfg.role) {
		if (cfg.tr == T_ZMQ) {
			fprintf(stderr, PROG ": -t zmq needs --role; on one node use zmq-ipc or zmq-tcp\n");
			return 2;
		}
		return run_all(&cfg);
	}
	if (cfg.role == 's') {
		int ret;

		if (cfg.naddrs != 1 || cfg.rank >= cfg.servers) {
			fprintf(stderr, PROG ": a server needs --rank < --servers and one --addr\n");
			return 2;
		}
		ret = run_server(&cfg, cfg.rank, cfg.addrs[0]);
		return ret ? fail("server", cfg.rank, ret) : 0;
	} else {
		struct kv_result res[MAX_SIZES] = { };
		int ret;

		if (cfg.naddrs != cfg.servers || cfg.rank >= cfg.workers) {
			fprintf(stderr, PROG ": a worker needs --rank < --workers and --servers addresses in --addr\n");
			return 2;
		}
		ret = run_worker(&cfg, cfg.rank, res);
		if (ret)
			return fail("worker", cfg.rank, ret);
		report(&cfg, res, 1);
		return 0;
	}
bad:
	usage(stderr);
	return 2;
}

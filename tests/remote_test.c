// SPDX-License-Identifier: GPL-2.0
/*
 * Send/recv/put/get across two nodes.
 *
 * One program, several roles (DMAPLANE_ROLE, or an option):
 *
 *   server (--serve)   a responder: accepts TCP connections on the control
 *                      port; each connection is a session (a forked
 *                      process) that opens endpoints, posts receives and
 *                      sends, registers regions and reports completions
 *                      and data checks as the client asks.  It runs until
 *                      killed (SIGTERM kills its sessions too).
 *   client             the kselftest suite below: every test opens a
 *                      session on DMAPLANE_PEER_IP and drives the remote
 *                      endpoints from here, so every assertion is in one
 *                      place.
 *   local              server and client on this node (the server is
 *                      forked on 127.0.0.1): the local transport, slot 0.
 *                      The default when DMAPLANE_PEER_IP is unset.
 *
 * Helpers for tests/vm/jobs/twonode.sh (not kselftests; exit 0 or 1):
 *
 *   --signal NAME      connect to DMAPLANE_PEER_IP's sync port and hand it
 *                      NAME (retried until the peer listens)
 *   --wait-for NAME    listen on the sync port until the peer signals NAME;
 *                      NAME ending in '*' takes any name that starts with
 *                      the rest, and prints it (a signal can carry values)
 *   --disrupt MODE     leave operations pending in both directions, signal
 *                      "pending-ready" to the peer (whose script then
 *                      unloads its module: MODE unload, or deletes its rxe
 *                      device: MODE linkdel, or kills the server: MODE
 *                      kill, or has its VM killed: MODE vmkill, with a
 *                      large message being pulled from it at that moment,
 *                      or takes its link down for a minute: MODE linkdown)
 *                      and check that everything completes with an error
 *                      within a bounded time
 *   --exchange [FILE]  a fresh exchange (both directions, rendezvous and
 *                      eager, put/get); FILE holds a stale name saved by
 *                      --disrupt, which must be refused
 *   --hold             a target for the malicious peer (jobs/evil.sh): an
 *                      endpoint with receives posted (reposted as they
 *                      complete) and a region open to remote put/get;
 *                      prints "EP_UID RKEY LEN" and serves until SIGTERM,
 *                      then prints what completed, closes and exits 0
 *   --resolve NODE_ID EP_UID [BYTES]
 *                      insert that name into a new endpoint's address
 *                      vector (the malicious peer answers late) and with
 *                      BYTES send that many bytes to it; exit 0 when
 *                      inserted (and the send completed or failed with
 *                      -ECONNRESET)
 *
 * Environment: DMAPLANE_PEER_IP, DMAPLANE_ROLE=client|server|local,
 * DMAPLANE_CTL_PORT (20887), DMAPLANE_SYNC_PORT (20888),
 * DMAPLANE_SYNC_TIMEOUT (seconds, 600).
 */
#include <arpa/inet.h>
#include <linux/dma-heap.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>

#include "dp_test.h"

#define CTL_PORT	20887
#define SYNC_PORT	20888
#define GUARD		64	/* bytes after every receive buffer */
#define GUARD_BYTE	0x5a
#define MAXEP		8
#define MAXREG		16
#define LOCAL_RING	4096
#define STALE_FILE	"/tmp/dmaplane-stale-name"
#define RMA_MS		60000	/* for one put or get to complete */

#define RW (DMAPLANE_ACCESS_LOCAL_WRITE | DMAPLANE_ACCESS_REMOTE_READ | \
	    DMAPLANE_ACCESS_REMOTE_WRITE)

/* ---- control protocol ------------------------------------------------- */

enum {
	OP_OPEN = 1,	/* a0 key, a1 ring, a2 no setup -> a[0] idx, name */
	OP_CLOSE,	/* a0 idx */
	OP_INSERT,	/* a0 idx, name -> a[0] handle */
	OP_RECV,	/* a0 idx, a1 peer, a2 tag, a3 ignore, a4 len, a5 ctx,
			 * a6 count, a7 tag step (ctx += i, tag += i * a7) */
	OP_SEND,	/* a0 idx, a1 peer, a2 tag, a3 len, a4 seed, a5 ctx,
			 * a6 count, a7 tag step (seed, ctx += i) */
	OP_WAIT,	/* a0 idx, a1 n, a2 timeout ms -> ret n, cqes */
	OP_CHECK,	/* a0 idx, a1 ctx, a2 seed, a3 len received, a4 msg len
			 * filled -> a[0] first bad byte or -1, a[1] guard ok */
	OP_PROBE,	/* a0 idx, a1 peer, a2 tag, a3 ignore, a4 flags,
			 * a5 timeout ms -> ret, struct dmaplane_probe */
	OP_RECV_CLAIMED, /* a0 idx, a1 claim, a2 len, a3 ctx */
	OP_CANCEL,	/* a0 idx, a1 ctx */
	OP_REG,		/* a0 idx, a1 kind, a2 len, a3 access, a4 seed
			 * -> a[0] rkey, a[1] region id */
	OP_RCHECK,	/* a0 id, a1 off, a2 len, a3 seed -> a[0] bad byte */
	OP_RFILL,	/* a0 id, a1 off, a2 len, a3 seed */
	OP_DEREG,	/* a0 id */
	OP_STAT,	/* name -> a[0] (debugfs stats) */
	OP_PARAM,	/* name -> a[0] (module parameter) */
	OP_GETNAME,	/* a0 idx -> name */
	OP_PEER,	/* field name -> its value for our peer in
			 * `dpctl -j peer list`, as text */
};

enum { REG_USER, REG_ARENA, REG_DMABUF };

struct ctl_msg {
	uint32_t op;
	int32_t ret;
	uint32_t len;	/* payload bytes that follow */
	uint32_t pad;
	uint64_t a[8];
};

static int msg_send(int fd, struct ctl_msg *m, const void *payload, uint32_t len)
{
	m->len = len;
	if (dp_test_io_full(fd, m, sizeof(*m), 1))
		return -1;
	return len ? dp_test_io_full(fd, (void *)payload, len, 1) : 0;
}

/* Receive a message; its payload (if any) lands in a malloc'ed *payload. */
static int msg_recv(int fd, struct ctl_msg *m, void **payload)
{
	*payload = NULL;
	if (dp_test_io_full(fd, m, sizeof(*m), 0))
		return -1;
	if (m->len > (64u << 20))
		return -1;
	*payload = malloc(m->len + 1);
	if (!*payload)
		return -1;
	((char *)*payload)[m->len] = 0;
	return m->len ? dp_test_io_full(fd, *payload, m->len, 0) : 0;
}

static int env_int(const char *name, int def)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : def;
}

static void sock_timeouts(int fd, int secs)
{
	struct timeval tv = { .tv_sec = secs };
	int one = 1;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int listen_on(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	if (bind(fd, (void *)&sa, sizeof(sa)) || listen(fd, 16)) {
		close(fd);
		return -1;
	}
	return fd;
}

static const char *peer_ip(void)
{
	const char *ip = getenv("DMAPLANE_PEER_IP");

	return ip && *ip ? ip : "127.0.0.1";
}

/* Connect to the peer, retrying for up to @secs seconds. */
static int connect_peer(int port, int secs)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	time_t end = time(NULL) + secs;

	if (inet_pton(AF_INET, peer_ip(), &sa.sin_addr) != 1)
		return -1;
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return -1;
		if (!connect(fd, (void *)&sa, sizeof(sa))) {
			sock_timeouts(fd, 300);
			return fd;
		}
		close(fd);
		if (time(NULL) >= end)
			return -1;
		usleep(200000);
	}
}

/* ---- the server: one session per connection ---------------------------- */

struct sbuf {
	struct sbuf *next;
	int ep;
	uint64_t ctx;
	char *p;
	uint64_t len;	/* buffer bytes, GUARD more allocated */
};

struct sreg {
	struct dp_mr *mr;
	struct dp_arena *arena;
	char *mem;
	uint64_t len;
	int fd;
};

static struct dp_ep *s_ep[MAXEP];
static struct sbuf *s_bufs;
static struct sreg s_reg[MAXREG];

static struct sbuf *sbuf_new(int ep, uint64_t ctx, uint64_t len)
{
	struct sbuf *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->p = malloc(len + GUARD);
	if (!b->p) {
		free(b);
		return NULL;
	}
	memset(b->p, GUARD_BYTE, len + GUARD);
	b->ep = ep;
	b->ctx = ctx;
	b->len = len;
	b->next = s_bufs;
	s_bufs = b;
	return b;
}

/* The oldest buffer of (ep, ctx): unlinked, the caller frees it. */
static struct sbuf *sbuf_take(int ep, uint64_t ctx)
{
	struct sbuf **pp, **found = NULL, *b;

	for (pp = &s_bufs; *pp; pp = &(*pp)->next) {
		if ((*pp)->ep == ep && (*pp)->ctx == ctx)
			found = pp;	/* the list is newest first */
	}
	if (!found)
		return NULL;
	b = *found;
	*found = b->next;
	return b;
}

static void sbuf_free(struct sbuf *b)
{
	if (b) {
		free(b->p);
		free(b);
	}
}

static struct dp_ep *sep(uint64_t idx)
{
	return idx < MAXEP ? s_ep[idx] : NULL;
}

static int read_param(const char *name, long *val)
{
	char path[256];
	FILE *f;
	int ret;

	if (strchr(name, '/'))
		return -EINVAL;
	snprintf(path, sizeof(path), "/sys/module/dmaplane/parameters/%s", name);
	f = fopen(path, "r");
	if (!f)
		return -ENOENT;
	ret = fscanf(f, "%ld", val) == 1 ? 0 : -EIO;
	fclose(f);
	return ret;
}

/*
 * The value of @field ("slot", "drops", "state", ...) of the peer at
 * peer_ip() in `dpctl -j peer list`, as text in @out: 0, or -ENOENT when
 * the listing, the peer or the field is absent.
 */
static int dpctl_peer_field(const char *field, char *out, size_t n)
{
	char line[8192], key[80], *p, *end, *v;
	size_t i = 0;
	FILE *f = popen("dpctl -j peer list 2>/dev/null", "r");

	if (!f)
		return -ENOENT;
	if (!fgets(line, sizeof(line), f)) {
		pclose(f);
		return -ENOENT;
	}
	pclose(f);
	snprintf(key, sizeof(key), "\"addr\":\"%s\"", peer_ip());
	p = strstr(line, key);
	if (!p)
		return -ENOENT;
	end = strchr(p, '}');
	snprintf(key, sizeof(key), "\"%s\":", field);
	v = strstr(p, key);
	if (!v || (end && v > end))
		return -ENOENT;
	v += strlen(key);
	if (*v == '"')
		v++;
	while (i + 1 < n && *v && !strchr("\",}", *v))
		out[i++] = *v++;
	out[i] = 0;
	return 0;
}

static int s_reg_new(struct dp_ep *ep, uint64_t kind, uint64_t len,
		     uint32_t access, uint64_t seed, uint64_t *rkey)
{
	struct dma_heap_allocation_data alloc = { .len = len, .fd_flags = O_RDWR | O_CLOEXEC };
	struct sreg *r = NULL;
	int id, ret = -EINVAL, heap;

	for (id = 0; id < MAXREG; id++) {
		if (!s_reg[id].mr && !s_reg[id].arena) {
			r = &s_reg[id];
			break;
		}
	}
	if (!r || !ep)
		return -ENOSPC;
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	r->len = len;
	switch (kind) {
	case REG_USER:
		r->mem = malloc(len);
		if (!r->mem)
			return -ENOMEM;
		if (seed)
			dp_test_fill(r->mem, len, seed);
		else
			memset(r->mem, 0, len);
		ret = dp_mr_reg(ep, r->mem, len, access, &r->mr);
		if (ret) {
			free(r->mem);
			r->mem = NULL;
			return ret;
		}
		*rkey = dp_mr_key(r->mr);
		break;
	case REG_ARENA:
		ret = dp_arena_create(ep, len, 0, DMAPLANE_NUMA_ANY, access, &r->arena);
		if (ret)
			return ret;
		r->mem = dp_arena_ptr(r->arena);
		if (seed)
			dp_test_fill(r->mem, len, seed);
		*rkey = dp_arena_key(r->arena);
		break;
	case REG_DMABUF:
		heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);
		if (heap < 0)
			return -ENOENT;
		ret = ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &alloc) ? -errno : 0;
		close(heap);
		if (ret)
			return ret;
		r->fd = alloc.fd;
		r->mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
		if (r->mem == MAP_FAILED) {
			r->mem = NULL;
		} else if (seed) {
			dp_test_fill(r->mem, len, seed);
		}
		ret = dp_mr_import_dmabuf(ep, r->fd, 0, len, access, &r->mr);
		if (ret) {
			if (r->mem)
				munmap(r->mem, len);
			close(r->fd);
			r->mem = NULL;
			return ret;
		}
		*rkey = dp_mr_key(r->mr);
		break;
	default:
		return -EINVAL;
	}
	return id;
}

static void s_reg_free(uint64_t id)
{
	struct sreg *r;

	if (id >= MAXREG)
		return;
	r = &s_reg[id];
	if (r->arena) {
		dp_arena_destroy(r->arena);
	} else if (r->mr) {
		dp_mr_dereg(r->mr);
		if (r->fd >= 0) {
			if (r->mem)
				munmap(r->mem, r->len);
			close(r->fd);
		} else {
			free(r->mem);
		}
	}
	memset(r, 0, sizeof(*r));
}

static int s_reg_range(uint64_t id, uint64_t off, uint64_t len, char **p)
{
	struct sreg *r = id < MAXREG ? &s_reg[id] : NULL;

	if (!r || !r->mem || off > r->len || len > r->len - off)
		return -ERANGE;
	*p = r->mem + off;
	return 0;
}

/* Handle one request; fills @rsp and maybe a payload to send back. */
static void serve_one(struct ctl_msg *m, char *in, struct ctl_msg *rsp,
		      void **out, uint32_t *out_len)
{
	uint64_t *a = m->a;
	struct dp_ep *ep = sep(a[0]);
	uint64_t count = a[6] ? a[6] : 1;
	struct dmaplane_name name;
	struct sbuf *b;
	char *p;
	long val;
	int ret = 0;

	memset(rsp, 0, sizeof(*rsp));
	rsp->op = m->op;
	*out = NULL;
	*out_len = 0;
	switch (m->op) {
	case OP_OPEN: {
		int i;

		for (i = 0; i < MAXEP && s_ep[i]; i++)
			;
		if (i == MAXEP) {
			ret = -ENOSPC;
			break;
		}
		ret = dp_open(NULL, 0, &s_ep[i]);
		if (!ret && !a[2]) {
			ret = dp_ep_setup(s_ep[i], a[0], a[1]);
			if (ret) {
				dp_close(s_ep[i]);
				s_ep[i] = NULL;
			}
		}
		if (ret)
			break;
		rsp->a[0] = i;
		ep = s_ep[i];
	}
		/* fall through */
	case OP_GETNAME:
		if (!ep) {
			ret = -EBADF;
			break;
		}
		ret = dp_getname(ep, &name);
		if (!ret) {
			*out = malloc(sizeof(name));
			memcpy(*out, &name, sizeof(name));
			*out_len = sizeof(name);
		}
		break;
	case OP_CLOSE:
		if (!ep) {
			ret = -EBADF;
			break;
		}
		dp_close(ep);
		s_ep[a[0]] = NULL;
		break;
	case OP_INSERT: {
		uint32_t h;

		if (!ep || m->len != sizeof(name)) {
			ret = -EBADF;
			break;
		}
		memcpy(&name, in, sizeof(name));
		ret = dp_av_insert(ep, &name, &h);
		rsp->a[0] = h;
		break;
	}
	case OP_RECV:
		for (uint64_t i = 0; i < count && !ret; i++) {
			b = sbuf_new(a[0], a[5] + i, a[4]);
			if (!ep || !b) {
				ret = -ENOMEM;
				break;
			}
			ret = dp_recv(ep, a[1], a[2] + i * a[7], a[3], b->p, a[4], a[5] + i);
			if (ret)
				sbuf_free(sbuf_take(a[0], a[5] + i));
			else
				rsp->a[0]++;
		}
		break;
	case OP_SEND:
		for (uint64_t i = 0; i < count && !ret; i++) {
			b = sbuf_new(a[0], a[5] + i, a[3]);
			if (!ep || !b) {
				ret = -ENOMEM;
				break;
			}
			dp_test_fill(b->p, a[3], a[4] + i);
			ret = dp_send(ep, a[1], a[2] + i * a[7], b->p, a[3], a[5] + i);
			if (ret)
				sbuf_free(sbuf_take(a[0], a[5] + i));
			else
				rsp->a[0]++;
		}
		break;
	case OP_RECV_CLAIMED:
		b = sbuf_new(a[0], a[3], a[2]);
		if (!ep || !b) {
			ret = -ENOMEM;
			break;
		}
		ret = dp_recv_claimed(ep, a[1], b->p, a[2], a[3]);
		if (ret)
			sbuf_free(sbuf_take(a[0], a[3]));
		break;
	case OP_WAIT: {
		struct dmaplane_cqe *c = calloc(a[1] ? a[1] : 1, sizeof(*c));
		struct timespec t0, t1;
		int got = 0;

		if (!ep || !c) {
			free(c);
			ret = -EBADF;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while ((uint64_t)got < a[1]) {
			long left;
			int n;

			clock_gettime(CLOCK_MONOTONIC, &t1);
			left = (long)a[2] - ((t1.tv_sec - t0.tv_sec) * 1000 +
					     (t1.tv_nsec - t0.tv_nsec) / 1000000);
			if (left < 0)
				left = 0;
			n = dp_wait(ep, c + got, a[1] - got, left);
			if (n <= 0)
				break;
			got += n;
		}
		ret = got;
		*out = c;
		*out_len = got * sizeof(*c);
		break;
	}
	case OP_CHECK: {
		/* The buffer of the oldest operation with this ctx: the
		 * first a3 bytes must be dp_test_fill(seed) of an a4-byte
		 * message, the rest the guard pattern.
		 */
		char *want;

		b = sbuf_take(a[0], a[1]);
		if (!b) {
			ret = -ENOENT;
			break;
		}
		rsp->a[0] = (uint64_t)-1;
		rsp->a[1] = 1;
		want = malloc(a[4] + 1);
		dp_test_fill(want, a[4], a[2]);
		for (uint64_t i = 0; i < a[3] && i < b->len; i++) {
			if (b->p[i] != want[i]) {
				rsp->a[0] = i;
				break;
			}
		}
		for (uint64_t i = a[3]; i < b->len + GUARD; i++) {
			if ((unsigned char)b->p[i] != GUARD_BYTE) {
				rsp->a[1] = 0;
				break;
			}
		}
		free(want);
		sbuf_free(b);
		break;
	}
	case OP_PROBE: {
		struct dmaplane_probe *pr = calloc(1, sizeof(*pr));
		time_t end = time(NULL) + (a[5] + 999) / 1000;

		if (!ep || !pr) {
			free(pr);
			ret = -EBADF;
			break;
		}
		for (;;) {
			ret = dp_probe(ep, a[1], a[2], a[3], a[4], pr);
			if (ret != -EAGAIN || time(NULL) >= end)
				break;
			usleep(10000);
		}
		*out = pr;
		*out_len = sizeof(*pr);
		break;
	}
	case OP_CANCEL:
		ret = ep ? dp_cancel(ep, a[1]) : -EBADF;
		break;
	case OP_REG:
		ret = s_reg_new(ep, a[1], a[2], a[3], a[4], &rsp->a[0]);
		if (ret >= 0) {
			rsp->a[1] = ret;
			ret = 0;
		}
		break;
	case OP_RCHECK:
		ret = s_reg_range(a[0], a[1], a[2], &p);
		rsp->a[0] = (uint64_t)-1;
		if (!ret) {
			long bad = dp_test_check(p, a[2], a[3]);

			rsp->a[0] = bad < 0 ? (uint64_t)-1 : (uint64_t)bad;
		}
		break;
	case OP_RFILL:
		ret = s_reg_range(a[0], a[1], a[2], &p);
		if (!ret)
			dp_test_fill(p, a[2], a[3]);
		break;
	case OP_DEREG:
		s_reg_free(a[0]);
		break;
	case OP_STAT:
		val = dp_test_stat(in);
		ret = val < 0 ? -ENOENT : 0;
		rsp->a[0] = val;
		break;
	case OP_PARAM:
		ret = read_param(in, &val);
		rsp->a[0] = val;
		break;
	case OP_PEER:
		*out = calloc(1, 64);
		ret = *out ? dpctl_peer_field(in, *out, 64) : -ENOMEM;
		if (!ret)
			*out_len = strlen(*out) + 1;
		break;
	default:
		ret = -EINVAL;
	}
	rsp->ret = ret;
}

static void serve_session(int fd)
{
	struct ctl_msg m, rsp;
	void *in, *out;
	uint32_t out_len;

	while (!msg_recv(fd, &m, &in)) {
		serve_one(&m, in, &rsp, &out, &out_len);
		free(in);
		if (msg_send(fd, &rsp, out, out_len)) {
			free(out);
			break;
		}
		free(out);
	}
	/* Client gone: closing the endpoints releases everything. */
	for (int i = 0; i < MAXEP; i++)
		dp_close(s_ep[i]);
	_exit(0);
}

static void serve_term(int sig)
{
	(void)sig;
	/* Our sessions too, so that the module can be unloaded at once. */
	kill(0, SIGKILL);
	_exit(0);
}

static int serve(void)
{
	int lfd, port = env_int("DMAPLANE_CTL_PORT", CTL_PORT);

	setpgid(0, 0);
	signal(SIGCHLD, SIG_IGN);
	signal(SIGTERM, serve_term);
	signal(SIGPIPE, SIG_IGN);
	lfd = listen_on(port);
	if (lfd < 0) {
		fprintf(stderr, "remote_test: cannot listen on port %d: %s\n",
			port, strerror(errno));
		return 1;
	}
	fprintf(stderr, "remote_test: serving on port %d\n", port);
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (!fork()) {
			close(lfd);
			sock_timeouts(fd, 3600);
			serve_session(fd);
		}
		close(fd);
	}
}

/* ---- the client side of a session --------------------------------------- */

/* One request; returns its ret, or -EPIPE when the session broke. */
static int rcall(int fd, uint32_t op, const uint64_t *args, int nargs,
		 const void *payload, uint32_t plen, struct ctl_msg *rsp,
		 void **out)
{
	struct ctl_msg m, r;
	void *o;

	memset(&m, 0, sizeof(m));
	m.op = op;
	for (int i = 0; i < nargs && i < 8; i++)
		m.a[i] = args[i];
	if (msg_send(fd, &m, payload, plen) || msg_recv(fd, &r, &o))
		return -EPIPE;
	if (rsp)
		*rsp = r;
	if (out)
		*out = o;
	else
		free(o);
	return r.ret;
}

#define RCALL(fd, op, rsp, out, ...) ({					\
	uint64_t _a[] = { __VA_ARGS__ };				\
	rcall(fd, op, _a, sizeof(_a) / sizeof(_a[0]), NULL, 0, rsp, out); })

/* Open a remote endpoint; returns its index or -errno. */
static int r_open(int fd, uint64_t key, int nosetup, struct dmaplane_name *name)
{
	struct ctl_msg r;
	void *out = NULL;
	int ret = RCALL(fd, OP_OPEN, &r, &out, key, LOCAL_RING, nosetup);

	if (!ret && r.len == sizeof(*name))
		memcpy(name, out, sizeof(*name));
	else if (!ret)
		ret = -EPROTO;
	free(out);
	return ret ? ret : (int)r.a[0];
}

static int r_insert(int fd, int idx, const struct dmaplane_name *name, uint32_t *h)
{
	uint64_t a[] = { idx };
	struct ctl_msg r;
	int ret = rcall(fd, OP_INSERT, a, 1, name, sizeof(*name), &r, NULL);

	*h = r.a[0];
	return ret;
}

/* Wait for @n completions of remote endpoint @idx; returns how many. */
static int r_wait(int fd, int idx, struct dmaplane_cqe *c, int n, int timeout_ms)
{
	struct ctl_msg r;
	void *out = NULL;
	int ret = RCALL(fd, OP_WAIT, &r, &out, idx, n, timeout_ms);

	if (ret > 0)
		memcpy(c, out, ret * sizeof(*c));
	free(out);
	return ret;
}

/* Check a remote receive buffer: -1 when good, else the bad offset. */
static long r_check(int fd, int idx, uint64_t ctx, uint64_t seed, uint64_t got,
		    uint64_t msg_len)
{
	struct ctl_msg r;
	int ret = RCALL(fd, OP_CHECK, &r, NULL, idx, ctx, seed, got, msg_len);

	if (ret)
		return -1000 + ret;	/* distinct from -1 */
	if (!r.a[1])
		return (long)got + 1000000;	/* guard overwritten */
	return (long)r.a[0];
}

static long r_param(int fd, const char *name)
{
	struct ctl_msg r;
	int ret = rcall(fd, OP_PARAM, NULL, 0, name, strlen(name) + 1, &r, NULL);

	return ret ? ret : (long)r.a[0];
}

static long r_stat(int fd, const char *name)
{
	struct ctl_msg r;
	int ret = rcall(fd, OP_STAT, NULL, 0, name, strlen(name) + 1, &r, NULL);

	return ret ? ret : (long)r.a[0];
}

/* ---- local helpers ------------------------------------------------------ */

/* Gather @n completions within @timeout_ms overall; returns how many. */
static int lwait(struct dp_ep *ep, struct dmaplane_cqe *c, int n, int timeout_ms)
{
	struct timespec t0, t1;
	int got = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < n) {
		long left;
		int k;

		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = timeout_ms - ((t1.tv_sec - t0.tv_sec) * 1000 +
				     (t1.tv_nsec - t0.tv_nsec) / 1000000);
		if (left < 0)
			left = 0;
		k = dp_wait(ep, c + got, n - got, left);
		if (k <= 0)
			break;
		got += k;
	}
	return got;
}

/* A local receive buffer with a guard, filled with the guard pattern. */
static char *lbuf(uint64_t len)
{
	char *p = malloc(len + GUARD);

	if (p)
		memset(p, GUARD_BYTE, len + GUARD);
	return p;
}

/* Like r_check, for a local buffer of @len bytes (+ GUARD). */
static long lcheck(const char *p, uint64_t len, uint64_t seed, uint64_t got,
		   uint64_t msg_len)
{
	char *want = malloc(msg_len + 1);
	long bad = -1;

	dp_test_fill(want, msg_len, seed);
	for (uint64_t i = 0; i < got; i++) {
		if (p[i] != want[i]) {
			bad = i;
			break;
		}
	}
	free(want);
	for (uint64_t i = got; bad < 0 && i < len + GUARD; i++) {
		if ((unsigned char)p[i] != GUARD_BYTE)
			bad = (long)got + 1000000;
	}
	return bad;
}

static int cmp_ctx(const void *x, const void *y)
{
	const struct dmaplane_cqe *a = x, *b = y;

	return a->ctx < b->ctx ? -1 : a->ctx > b->ctx;
}

/*
 * The node slot of the peer in `dpctl -j peer list`, or -1 when the
 * listing or the field ("slot", added with the RDMA transport) is absent.
 */
static long dpctl_peer_slot(void)
{
	char v[32];

	return dpctl_peer_field("slot", v, sizeof(v)) ? -1 : strtol(v, NULL, 10);
}

/* The remote node's view of its peer (us): @field of `dpctl -j peer list`. */
static int r_peer_field(int fd, const char *field, char *out, size_t n)
{
	struct ctl_msg r;
	void *o = NULL;
	int ret = rcall(fd, OP_PEER, NULL, 0, field, strlen(field) + 1, &r, &o);

	if (!ret)
		snprintf(out, n, "%s", (char *)o);
	free(o);
	return ret;
}

/*
 * Both nodes' view of the connection between them: state and drops of
 * the peer, here (@l*) and there (@r*).
 */
struct peer_view {
	char lstate[32], rstate[32];
	long ldrops, rdrops;
};

/* 0, or 1 (no peer here) or 2 (none there) */
static int peer_view(int fd, struct peer_view *v)
{
	char d[32];

	memset(v, 0, sizeof(*v));
	if (dpctl_peer_field("state", v->lstate, sizeof(v->lstate)) ||
	    dpctl_peer_field("drops", d, sizeof(d)))
		return 1;
	v->ldrops = strtol(d, NULL, 10);
	if (r_peer_field(fd, "state", v->rstate, sizeof(v->rstate)) ||
	    r_peer_field(fd, "drops", d, sizeof(d)))
		return 2;
	v->rdrops = strtol(d, NULL, 10);
	return 0;
}

/* ---- the fixture --------------------------------------------------------- */

FIXTURE(remote) {
	int s;			/* control session */
	struct dp_ep *ep;	/* local endpoint */
	int rep;		/* remote endpoint index */
	uint32_t to_r, r_to_l;	/* address handles: here -> there, there -> here */
	struct dmaplane_name lname, rname;
	int local;		/* both endpoints on this node */
	long eager;		/* the remote module's eager_threshold */
};

FIXTURE_SETUP(remote)
{
	self->s = connect_peer(env_int("DMAPLANE_CTL_PORT", CTL_PORT), 60);
	ASSERT_LE(0, self->s) TH_LOG("no remote_test server at %s", peer_ip());
	self->ep = dp_test_ep_new(0, LOCAL_RING);
	ASSERT_NE(NULL, self->ep);
	ASSERT_EQ(0, dp_getname(self->ep, &self->lname));
	self->rep = r_open(self->s, 0, 0, &self->rname);
	ASSERT_LE(0, self->rep);
	self->local = self->lname.node_id == self->rname.node_id;
	ASSERT_EQ(0, dp_av_insert(self->ep, &self->rname, &self->to_r));
	ASSERT_EQ(0, r_insert(self->s, self->rep, &self->lname, &self->r_to_l));
	self->eager = r_param(self->s, "eager_threshold");
	ASSERT_LT(0, self->eager);
	TH_LOG("%s transport: remote node %#llx, here %#llx",
	       self->local ? "local" : "remote",
	       (unsigned long long)self->rname.node_id,
	       (unsigned long long)self->lname.node_id);
}

FIXTURE_TEARDOWN(remote)
{
	struct dmaplane_cqe c[16];

	if (self->s >= 0)
		close(self->s);
	/* Nothing of ours may be left on our ring unconsumed. */
	if (self->ep)
		EXPECT_EQ(0, dp_poll(self->ep, c, 16));
	dp_close(self->ep);
}

/*
 * A source as seen by this node (or, from the server's completions, by
 * the remote node): the ep_uid, and a node slot that is 0 on one node and
 * non-zero across nodes.  @slot, when not NULL, pins the slot: every
 * source of one node has the same one.
 */
static void check_src(struct __test_metadata *_metadata, int local, uint64_t src,
		      uint64_t uid, long *slot)
{
	uint64_t s = DMAPLANE_SRC_NODE_SLOT(src);

	EXPECT_EQ(uid, DMAPLANE_SRC_EP_UID(src));
	if (local) {
		EXPECT_EQ(0, s);
	} else {
		EXPECT_NE(0, s);
	}
	if (slot && *slot < 0) {
		*slot = s;
	} else if (slot) {
		EXPECT_EQ(*slot, (long)s);
	}
}

static const uint64_t sizes[] = {
	0, 1, 4095, 4096, 16383, 16384, 16385, 65536, 1 << 20, 4 << 20,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/*
 * How long a message of @len bytes may take: a minute, and 5 s per MiB for
 * a slow link on a loaded host (rxe under QEMU TCG moves a few MB/s).
 */
static int xfer_ms(uint64_t len)
{
	return 60000 + (int)(len >> 20) * 5000;
}

/* Here -> there, receive posted first (@expected) or after the send. */
static void to_remote(struct __test_metadata *_metadata, FIXTURE_DATA(remote) *self,
		      uint64_t len, int expected)
{
	struct dmaplane_cqe c, sc;
	uint64_t tag = 0x5e0d000000000000ull | len, seed = len * 7 + expected;
	char *src = malloc(len + 1);
	int sent_done = 0;

	ASSERT_NE(NULL, src);
	dp_test_fill(src, len, seed);
	if (expected)
		ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, self->r_to_l,
				   tag, 0, len, 7));
	ASSERT_EQ(0, dp_send(self->ep, self->to_r, tag, src, len, 9));
	if (!expected) {
		/* An eager message completes once it is there, unexpected. */
		if (len <= (uint64_t)self->eager && lwait(self->ep, &sc, 1, 30000) == 1)
			sent_done = 1;
		ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, self->r_to_l,
				   tag, 0, len, 7));
	}
	ASSERT_EQ(1, r_wait(self->s, self->rep, &c, 1, xfer_ms(len)))
		TH_LOG("len %llu", (unsigned long long)len);
	EXPECT_EQ(7, c.ctx);
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(DMAPLANE_OP_RECV, c.opcode);
	EXPECT_EQ(len, c.len);
	EXPECT_EQ(len, c.msg_len);
	EXPECT_EQ(tag, c.tag);
	check_src(_metadata, self->local, c.src, self->lname.ep_uid, NULL);
	EXPECT_EQ(-1, r_check(self->s, self->rep, 7, seed, len, len))
		TH_LOG("len %llu expected %d", (unsigned long long)len, expected);
	if (!sent_done)
		ASSERT_EQ(1, lwait(self->ep, &sc, 1, xfer_ms(len)));
	EXPECT_EQ(9, sc.ctx);
	EXPECT_EQ(0, sc.status);
	EXPECT_EQ(DMAPLANE_OP_SEND, sc.opcode);
	EXPECT_EQ(len, sc.len);
	EXPECT_EQ(tag, sc.tag);
	EXPECT_EQ(0, dp_poll(self->ep, &c, 1));
	EXPECT_EQ(0, r_wait(self->s, self->rep, &c, 1, 0));
	free(src);
}

/* There -> here. */
static void from_remote(struct __test_metadata *_metadata, FIXTURE_DATA(remote) *self,
			uint64_t len, int expected)
{
	struct dmaplane_cqe c, sc;
	uint64_t tag = 0xf00d000000000000ull | len, seed = len * 13 + expected;
	char *dst = lbuf(len);
	int sent_done = 0;

	ASSERT_NE(NULL, dst);
	if (expected)
		ASSERT_EQ(0, dp_recv(self->ep, self->to_r, tag, 0, dst, len, 7));
	ASSERT_EQ(0, RCALL(self->s, OP_SEND, NULL, NULL, self->rep, self->r_to_l,
			   tag, len, seed, 9));
	if (!expected) {
		/* Eager: arrives on its own.  Rendezvous: waits for us. */
		if (len <= (uint64_t)self->eager &&
		    r_wait(self->s, self->rep, &sc, 1, 30000) == 1)
			sent_done = 1;
		ASSERT_EQ(0, dp_recv(self->ep, self->to_r, tag, 0, dst, len, 7));
	}
	ASSERT_EQ(1, lwait(self->ep, &c, 1, xfer_ms(len)))
		TH_LOG("len %llu", (unsigned long long)len);
	EXPECT_EQ(7, c.ctx);
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(DMAPLANE_OP_RECV, c.opcode);
	EXPECT_EQ(len, c.len);
	EXPECT_EQ(len, c.msg_len);
	EXPECT_EQ(tag, c.tag);
	check_src(_metadata, self->local, c.src, self->rname.ep_uid, NULL);
	EXPECT_EQ(-1, lcheck(dst, len, seed, len, len))
		TH_LOG("len %llu expected %d", (unsigned long long)len, expected);
	if (!sent_done)
		ASSERT_EQ(1, r_wait(self->s, self->rep, &sc, 1, xfer_ms(len)));
	EXPECT_EQ(9, sc.ctx);
	EXPECT_EQ(0, sc.status);
	EXPECT_EQ(DMAPLANE_OP_SEND, sc.opcode);
	EXPECT_EQ(len, sc.len);
	EXPECT_EQ(tag, sc.tag);
	EXPECT_EQ(0, r_wait(self->s, self->rep, &c, 1, 0));
	EXPECT_EQ(0, dp_poll(self->ep, &c, 1));
	free(dst);
}

TEST_F_TIMEOUT(remote, data_to_remote_receive_posted, 600)
{
	for (unsigned int i = 0; i < NSIZES; i++)
		to_remote(_metadata, self, sizes[i], 1);
}

TEST_F_TIMEOUT(remote, data_to_remote_unexpected, 600)
{
	for (unsigned int i = 0; i < NSIZES; i++)
		to_remote(_metadata, self, sizes[i], 0);
}

TEST_F_TIMEOUT(remote, data_from_remote_receive_posted, 600)
{
	for (unsigned int i = 0; i < NSIZES; i++)
		from_remote(_metadata, self, sizes[i], 1);
}

TEST_F_TIMEOUT(remote, data_from_remote_unexpected, 600)
{
	for (unsigned int i = 0; i < NSIZES; i++)
		from_remote(_metadata, self, sizes[i], 0);
}

/*
 * Messages larger than the RDMA budget of a connection (8 contexts of up
 * to 2 MiB, 16 MiB): pulled piece by piece, every byte right, either way,
 * the receive posted first one way and last the other.  18 MiB (10
 * segments): until 7 December four messages of 40 MiB, which took more
 * than fifteen minutes between two loaded TCG guests.
 */
TEST_F_TIMEOUT(remote, data_large_messages_both_directions, 1500)
{
	const uint64_t len = (18 << 20) + 123;

	to_remote(_metadata, self, len, 1);
	from_remote(_metadata, self, len, 0);
}

/* Truncation there (@there) or here, receive posted first or not. */
static void truncated(struct __test_metadata *_metadata, FIXTURE_DATA(remote) *self,
		      int there, uint64_t len, uint64_t room, int expected)
{
	struct dmaplane_cqe c, sc;
	uint64_t seed = len + room + expected;
	char *src = malloc(len), *dst = lbuf(room);
	int have_send = 0;

	dp_test_fill(src, len, seed);
	if (there) {
		if (expected)
			ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep,
					   DP_ANY_SRC, 1, 0, room, 1));
		ASSERT_EQ(0, dp_send(self->ep, self->to_r, 1, src, len, 2));
		if (!expected) {
			if (len <= (uint64_t)self->eager && lwait(self->ep, &sc, 1, 30000) == 1)
				have_send = 1;
			ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep,
					   DP_ANY_SRC, 1, 0, room, 1));
		}
		ASSERT_EQ(1, r_wait(self->s, self->rep, &c, 1, 60000));
		EXPECT_EQ(-1, r_check(self->s, self->rep, 1, seed, room, len));
		if (!have_send)
			ASSERT_EQ(1, lwait(self->ep, &sc, 1, 60000));
	} else {
		if (expected)
			ASSERT_EQ(0, dp_recv(self->ep, DP_ANY_SRC, 1, 0, dst, room, 1));
		ASSERT_EQ(0, RCALL(self->s, OP_SEND, NULL, NULL, self->rep, self->r_to_l,
				   1, len, seed, 2));
		if (!expected) {
			if (len <= (uint64_t)self->eager &&
			    r_wait(self->s, self->rep, &sc, 1, 30000) == 1)
				have_send = 1;
			ASSERT_EQ(0, dp_recv(self->ep, DP_ANY_SRC, 1, 0, dst, room, 1));
		}
		ASSERT_EQ(1, lwait(self->ep, &c, 1, 60000));
		EXPECT_EQ(-1, lcheck(dst, room, seed, room, len));
		if (!have_send)
			ASSERT_EQ(1, r_wait(self->s, self->rep, &sc, 1, 60000));
	}
	EXPECT_EQ(1, c.ctx);
	EXPECT_EQ(-EMSGSIZE, c.status);
	EXPECT_EQ(room, c.len);
	EXPECT_EQ(len, c.msg_len);
	EXPECT_EQ(1, c.tag);
	/* The sender's side is a success with the whole length. */
	EXPECT_EQ(2, sc.ctx);
	EXPECT_EQ(0, sc.status);
	EXPECT_EQ(len, sc.len);
	free(src);
	free(dst);
}

TEST_F_TIMEOUT(remote, truncation_both_directions, 600)
{
	for (int there = 0; there < 2; there++) {
		for (int expected = 0; expected < 2; expected++) {
			truncated(_metadata, self, there, 1000, 600, expected);
			truncated(_metadata, self, there, 200000, 70000, expected);
			truncated(_metadata, self, there, 5, 0, expected);
			truncated(_metadata, self, there, 1 << 20, 16385, expected);
		}
	}
}

/*
 * Ignore masks and the source wildcard, there: r0 takes tags 0x100-0x1ff
 * from our first endpoint only, r1 tag 5 from anyone, r2 anything.
 */
TEST_F_TIMEOUT(remote, matching_masks_and_wildcards_there, 300)
{
	struct dp_ep *other = dp_test_ep_new(0, 64);
	struct dmaplane_name oname;
	struct dmaplane_cqe c[3];
	uint32_t o2r;
	long slot = -1;

	ASSERT_NE(NULL, other);
	ASSERT_EQ(0, dp_getname(other, &oname));
	ASSERT_EQ(0, dp_av_insert(other, &self->rname, &o2r));
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, self->r_to_l,
			   0x100, 0xff, 64, 0));
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, DP_ANY_SRC,
			   5, 0, 64, 1));
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, DP_ANY_SRC,
			   0, ~0ull, 64, 2));
	ASSERT_EQ(0, dp_send(other, o2r, 0x1ab, "other", 6, 0));
	ASSERT_EQ(1, lwait(other, c, 1, 30000));
	/* Arrived at r2 before we send anything else: nothing overtakes. */
	ASSERT_EQ(1, r_wait(self->s, self->rep, c, 1, 30000));
	EXPECT_EQ(2, c[0].ctx);
	EXPECT_EQ(0x1ab, c[0].tag);
	EXPECT_EQ(6, c[0].len);
	check_src(_metadata, self->local, c[0].src, oname.ep_uid, &slot);
	ASSERT_EQ(0, dp_send(self->ep, self->to_r, 5, "five", 5, 1));
	ASSERT_EQ(0, dp_send(self->ep, self->to_r, 0x1ab, "mask", 5, 2));
	ASSERT_EQ(2, r_wait(self->s, self->rep, c, 2, 30000));
	qsort(c, 2, sizeof(c[0]), cmp_ctx);
	EXPECT_EQ(0, c[0].ctx);
	EXPECT_EQ(0x1ab, c[0].tag);
	EXPECT_EQ(5, c[0].len);
	check_src(_metadata, self->local, c[0].src, self->lname.ep_uid, &slot);
	EXPECT_EQ(1, c[1].ctx);
	EXPECT_EQ(5, c[1].tag);
	check_src(_metadata, self->local, c[1].src, self->lname.ep_uid, &slot);
	ASSERT_EQ(2, lwait(self->ep, c, 2, 30000));
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(0, c[1].status);
	/* A tag outside every mask stays unexpected there. */
	ASSERT_EQ(0, dp_send(self->ep, self->to_r, 0x200, "x", 2, 3));
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, self->r_to_l,
			   0x100, 0xff, 64, 10));
	EXPECT_EQ(0, r_wait(self->s, self->rep, c, 1, 1000));
	EXPECT_EQ(0, RCALL(self->s, OP_CANCEL, NULL, NULL, self->rep, 10));
	ASSERT_EQ(1, r_wait(self->s, self->rep, c, 1, 10000));
	EXPECT_EQ(-ECANCELED, c[0].status);
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, DP_ANY_SRC,
			   0x200, 0, 64, 11));
	ASSERT_EQ(1, r_wait(self->s, self->rep, c, 1, 30000));
	EXPECT_EQ(11, c[0].ctx);
	EXPECT_EQ(0, c[0].status);
	ASSERT_EQ(1, lwait(self->ep, c, 1, 30000));
	dp_close(other);
}

/* The same here, with two remote senders. */
TEST_F_TIMEOUT(remote, matching_masks_and_wildcards_here, 300)
{
	struct dmaplane_name r2name;
	struct dmaplane_cqe c[3];
	char r[3][64];
	int rep2;
	uint32_t r2_to_l, to_r2;
	long slot = -1;

	rep2 = r_open(self->s, 0, 0, &r2name);
	ASSERT_LE(0, rep2);
	ASSERT_EQ(0, r_insert(self->s, rep2, &self->lname, &r2_to_l));
	ASSERT_EQ(0, dp_av_insert(self->ep, &r2name, &to_r2));
	ASSERT_EQ(0, dp_recv(self->ep, self->to_r, 0xab00, 0x00ff, r[0], 64, 0));
	ASSERT_EQ(0, dp_recv(self->ep, DP_ANY_SRC, 5, 0, r[1], 64, 1));
	ASSERT_EQ(0, dp_recv(self->ep, DP_ANY_SRC, 0, ~0ull, r[2], 64, 2));
	/* From the second remote endpoint, a tag r0 would take: r2. */
	ASSERT_EQ(0, RCALL(self->s, OP_SEND, NULL, NULL, rep2, r2_to_l, 0xab42, 32, 1, 0));
	ASSERT_EQ(1, lwait(self->ep, c, 1, 30000));
	EXPECT_EQ(2, c[0].ctx);
	EXPECT_EQ(0xab42, c[0].tag);
	check_src(_metadata, self->local, c[0].src, r2name.ep_uid, &slot);
	EXPECT_EQ(-1, dp_test_check(r[2], 32, 1));
	ASSERT_EQ(0, RCALL(self->s, OP_SEND, NULL, NULL, self->rep, self->r_to_l, 5, 16, 2, 1));
	ASSERT_EQ(0, RCALL(self->s, OP_SEND, NULL, NULL, self->rep, self->r_to_l, 0xabcd, 8, 3, 2));
	ASSERT_EQ(2, lwait(self->ep, c, 2, 30000));
	qsort(c, 2, sizeof(c[0]), cmp_ctx);
	EXPECT_EQ(0, c[0].ctx);
	EXPECT_EQ(0xabcd, c[0].tag);
	EXPECT_EQ(8, c[0].len);
	check_src(_metadata, self->local, c[0].src, self->rname.ep_uid, &slot);
	EXPECT_EQ(-1, dp_test_check(r[0], 8, 3));
	EXPECT_EQ(1, c[1].ctx);
	EXPECT_EQ(5, c[1].tag);
	check_src(_metadata, self->local, c[1].src, self->rname.ep_uid, &slot);
	EXPECT_EQ(-1, dp_test_check(r[1], 16, 2));
	ASSERT_EQ(2, r_wait(self->s, self->rep, c, 2, 30000));
	ASSERT_EQ(1, r_wait(self->s, rep2, c, 1, 30000));
	EXPECT_EQ(0, c[0].status);
	/* The slot matches what dpctl reports for the peer, when it does. */
	if (!self->local) {
		long want = dpctl_peer_slot();

		if (want >= 0) {
			EXPECT_EQ(want, slot);
		} else {
			TH_LOG("dpctl shows no slot for %s: not compared", peer_ip());
		}
	}
}

/* Messages from one source never overtake, eager and rendezvous mixed. */
static void no_overtaking(struct __test_metadata *_metadata, FIXTURE_DATA(remote) *self,
			  int there)
{
	enum { N = 40 };
	struct dmaplane_cqe c[N];
	uint64_t len[N];
	char *src[N], *dst[N];
	uint64_t big = self->eager * 2 + 1;

	for (int i = 0; i < N; i++) {
		len[i] = (i % 3 == 0) ? big + i : (i % 3 == 1 ? 100 + i : self->eager);
		src[i] = malloc(len[i] + 1);
		dst[i] = lbuf(big + N);
		dp_test_fill(src[i], len[i], 1000 + i);
	}
	if (there) {
		/* All sent before anything is posted there. */
		for (int i = 0; i < N; i++)
			ASSERT_EQ(0, dp_send(self->ep, self->to_r, i % 4, src[i], len[i], i));
		ASSERT_EQ(N, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, self->r_to_l,
				   0, ~0ull, big + N, 1000, N, 0) ? -1 : N);
		ASSERT_EQ(N, r_wait(self->s, self->rep, c, N, 120000));
	} else {
		struct ctl_msg r;

		ASSERT_EQ(0, RCALL(self->s, OP_SEND, &r, NULL, self->rep, self->r_to_l,
				   0, big, 1000, 0, 1, 0));
		/* Mixed sizes need one call each. */
		for (int i = 1; i < N; i++)
			ASSERT_EQ(0, RCALL(self->s, OP_SEND, NULL, NULL, self->rep,
					   self->r_to_l, i % 4, len[i], 1000 + i, i));
		for (int i = 0; i < N; i++)
			ASSERT_EQ(0, dp_recv(self->ep, self->to_r, 0, ~0ull, dst[i],
					     big + N, 1000 + i));
		ASSERT_EQ(N, lwait(self->ep, c, N, 120000));
	}
	qsort(c, N, sizeof(c[0]), cmp_ctx);
	for (int i = 0; i < N; i++) {
		EXPECT_EQ(1000 + i, c[i].ctx);
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(len[i], c[i].len) TH_LOG("receive %d got the wrong message", i);
		EXPECT_EQ(i % 4, c[i].tag);
		if (there) {
			EXPECT_EQ(-1, r_check(self->s, self->rep, 1000 + i, 1000 + i,
					      len[i], len[i])) TH_LOG("message %d", i);
		} else {
			EXPECT_EQ(-1, lcheck(dst[i], big + N, 1000 + i, len[i], len[i]))
				TH_LOG("message %d", i);
		}
	}
	if (there) {
		ASSERT_EQ(N, lwait(self->ep, c, N, 120000));
	} else {
		ASSERT_EQ(N, r_wait(self->s, self->rep, c, N, 120000));
	}
	for (int i = 0; i < N; i++) {
		EXPECT_EQ(0, c[i].status);
		free(src[i]);
		free(dst[i]);
	}
}

TEST_F_TIMEOUT(remote, one_source_never_overtakes_to_remote, 600)
{
	no_overtaking(_metadata, self, 1);
}

TEST_F_TIMEOUT(remote, one_source_never_overtakes_from_remote, 600)
{
	no_overtaking(_metadata, self, 0);
}

/* Hundreds of small messages before any receive: all arrive, in order. */
TEST_F_TIMEOUT(remote, many_small_unexpected_messages_in_order, 600)
{
	enum { N = 500, LEN = 64 };
	static char src[N][LEN];
	struct dmaplane_cqe *c = calloc(N, sizeof(*c));
	int sent = 0, done = 0;

	while (sent < N) {
		int ret;

		dp_test_fill(src[sent], LEN, 5000 + sent);
		ret = dp_send(self->ep, self->to_r, 0x4000 + sent, src[sent], LEN, sent);
		if (ret == -EAGAIN) {
			/* Back-pressure: consume and retry, nothing lost. */
			int k = lwait(self->ep, c + done, N - done, 10000);

			ASSERT_LT(0, k) TH_LOG("send %d: -EAGAIN and nothing completes", sent);
			done += k;
			continue;
		}
		ASSERT_EQ(0, ret);
		sent++;
	}
	done += lwait(self->ep, c + done, N - done, 120000);
	ASSERT_EQ(N, done);
	for (int i = 0; i < N; i++) {
		EXPECT_EQ(0, c[i].status) TH_LOG("send %d", (int)c[i].ctx);
		EXPECT_EQ(LEN, c[i].len);
	}
	/* Everything is queued there now. */
	if (self->local)
		EXPECT_EQ(N, r_stat(self->s, "unexp_msgs"));
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, self->r_to_l,
			   0, ~0ull, LEN, 0, N, 0));
	ASSERT_EQ(N, r_wait(self->s, self->rep, c, N, 120000));
	qsort(c, N, sizeof(c[0]), cmp_ctx);
	for (int i = 0; i < N; i++) {
		ASSERT_EQ(i, c[i].ctx);
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(0x4000 + i, c[i].tag) TH_LOG("receive %d", i);
		EXPECT_EQ(LEN, c[i].len);
		EXPECT_EQ(-1, r_check(self->s, self->rep, i, 5000 + i, LEN, LEN));
	}
	if (self->local)
		EXPECT_EQ(0, r_stat(self->s, "unexp_msgs"));
	free(c);
}

static int set_param(const char *name, const char *val, char *old, size_t oldlen);

/*
 * Eager messages beyond the receiver's unexpected budget: refused with
 * -EAGAIN -- by the ioctl on one node, in the send's completion across
 * nodes -- and exactly budget / len of them are delivered, in order.
 */
TEST_F_TIMEOUT(remote, unexpected_budget_exhausted_exact_counts, 600)
{
	long budget = r_param(self->s, "unexp_budget");
	long len = self->eager < 16384 ? self->eager : 16384;
	long fit, n, ok = 0, sync_fail = 0, async_fail = 0, done = 0, bad_i = 0;
	struct dmaplane_cqe *c;
	char old[32], big[32];
	int *okv, bad = 0;
	char *buf;

	ASSERT_LT(0, budget);
	ASSERT_LT(0, len);
	fit = budget / len;
	n = fit + 40;
	ASSERT_LT(n, LOCAL_RING);
	c = calloc(n, sizeof(*c));
	okv = calloc(n, sizeof(*okv));
	buf = malloc(len * n);
	/*
	 * Across nodes the sender bounds its own unacknowledged eager bytes
	 * too (eager_backlog, by default the budget's 4 MiB): refused at once
	 * whenever the peer's ACKs lag behind the loop, as on a loaded host.
	 * Raised for the loop, so that only the receiver's budget refuses
	 * (eager_backlog_is_bounded_per_endpoint tests the sender's bound).
	 */
	if (!self->local) {
		snprintf(big, sizeof(big), "%ld", 2 * n * len);
		ASSERT_EQ(0, set_param("eager_backlog", big, old, sizeof(old)));
	}
	for (long i = 0; i < n; i++) {
		int ret;

		dp_test_fill(buf + i * len, len, 7000 + i);
		ret = dp_send(self->ep, self->to_r, i, buf + i * len, len, i);
		if (ret == -EAGAIN) {
			sync_fail++;
		} else if (ret) {
			bad = ret;
			bad_i = i;
			break;
		}
	}
	if (!self->local)
		EXPECT_EQ(0, set_param("eager_backlog", old, NULL, 0));
	ASSERT_EQ(0, bad) TH_LOG("send %ld", bad_i);
	done = lwait(self->ep, c, n - sync_fail, 120000);
	ASSERT_EQ(n - sync_fail, done);
	for (long i = 0; i < done; i++) {
		if (c[i].status == 0) {
			ASSERT_LT(c[i].ctx, (uint64_t)n);
			okv[c[i].ctx] = 1;
			ok++;
		} else {
			EXPECT_EQ(-EAGAIN, c[i].status);
			async_fail++;
		}
	}
	TH_LOG("budget %ld, %ld-byte messages: %ld delivered, %ld refused by the ioctl, %ld by completion",
	       budget, len, ok, sync_fail, async_fail);
	EXPECT_EQ(fit, ok);
	EXPECT_EQ(n, ok + sync_fail + async_fail);
	if (self->local) {
		EXPECT_EQ(0, async_fail);
	} else {
		EXPECT_EQ(0, sync_fail);
	}
	/* The receiver gets exactly the accepted ones, in send order. */
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, self->r_to_l,
			   0, ~0ull, len, 0, ok, 0));
	ASSERT_EQ(ok, r_wait(self->s, self->rep, c, ok, 120000));
	qsort(c, ok, sizeof(c[0]), cmp_ctx);
	for (long i = 0, j = 0; i < ok; i++, j++) {
		while (j < n && !okv[j])
			j++;
		ASSERT_LT(j, n);
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(j, c[i].tag) TH_LOG("receive %ld", i);
		EXPECT_EQ(-1, r_check(self->s, self->rep, i, 7000 + j, len, len));
	}
	EXPECT_EQ(-EAGAIN, RCALL(self->s, OP_PROBE, NULL, NULL, self->rep, DP_ANY_SRC,
				 0, ~0ull, 0, 1000));
	/* Room again. */
	ASSERT_EQ(0, dp_send(self->ep, self->to_r, 1, buf, len, 1));
	ASSERT_EQ(1, lwait(self->ep, c, 1, 30000));
	EXPECT_EQ(0, c[0].status);
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, self->r_to_l,
			   1, 0, len, 1));
	ASSERT_EQ(1, r_wait(self->s, self->rep, c, 1, 30000));
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(-1, r_check(self->s, self->rep, 1, 7000, len, len));
	free(c);
	free(okv);
	free(buf);
}

/*
 * A receiver that posts nothing while eager messages keep coming across
 * nodes: once its unexpected budget is full, every further SEND completes
 * with -EAGAIN (a NACK in the receiver's ACK), while the node-to-node
 * connection stays up -- no drop on either side, however the NACKs and
 * the credits they travel with interleave with the traffic.  Once the
 * receiver drained its queue, sends are delivered again, every byte right.
 */
TEST_F_TIMEOUT(remote, unexpected_budget_full_under_traffic_keeps_connection, 600)
{
	long budget = r_param(self->s, "unexp_budget");
	long umax = r_param(self->s, "unexp_max");
	long len = self->eager < 16384 ? self->eager : 16384;
	long fit, n, m = 64, sent = 0, done = 0, ok = 0, eagain = 0;
	struct peer_view before, after;
	struct dmaplane_cqe *c;
	char *buf;
	int *st;

	ASSERT_LT(0, budget);
	ASSERT_LT(0, umax);
	ASSERT_LT(0, len);
	fit = budget / len < umax ? budget / len : umax;
	/* As many refused as accepted: the traffic goes on well past full. */
	n = 2 * fit + m;
	if (n + m >= LOCAL_RING || fit < m)
		SKIP(return, "unexp_budget %ld / unexp_max %ld: %ld messages of %ld bytes fit",
		     budget, umax, fit, len);
	if (!self->local) {
		ASSERT_EQ(0, peer_view(self->s, &before))
			TH_LOG("no peer %s in dpctl peer list (1: here, 2: there)", peer_ip());
		ASSERT_STREQ("up", before.lstate);
		ASSERT_STREQ("up", before.rstate);
	}
	c = calloc(n + m, sizeof(*c));
	st = calloc(n + m, sizeof(*st));
	buf = malloc(len * (n + m));
	ASSERT_NE(NULL, c);
	ASSERT_NE(NULL, st);
	ASSERT_NE(NULL, buf);
	for (long i = 0; i < n + m; i++) {
		dp_test_fill(buf + i * len, len, 9000 + i);
		st[i] = 1;	/* not completed */
	}

	/* Send all n without waiting, reaping completions as they come. */
	while (sent < n) {
		int ret = dp_send(self->ep, self->to_r, sent, buf + sent * len, len, sent);

		if (ret == -EAGAIN && self->local) {
			/*
			 * One node: the receiver's budget refuses at once (the
			 * ring has room for all, n + m < LOCAL_RING): noted as
			 * the completion a remote send would get.
			 */
			c[done++] = (struct dmaplane_cqe){
				.ctx = sent, .status = -EAGAIN, .opcode = DMAPLANE_OP_SEND,
			};
			sent++;
			continue;
		}
		if (ret == -EAGAIN) {
			/* Our own ring or backlog is full: wait for room. */
			int k = lwait(self->ep, c + done, 1, 30000);

			ASSERT_EQ(1, k) TH_LOG("send %ld: -EAGAIN and nothing completes", sent);
			done += k;
			continue;
		}
		ASSERT_EQ(0, ret) TH_LOG("send %ld", sent);
		sent++;
		done += dp_poll(self->ep, c + done, n - done);
	}
	done += lwait(self->ep, c + done, n - done, 180000);
	ASSERT_EQ(n, done);
	for (long i = 0; i < n; i++) {
		ASSERT_LT(c[i].ctx, (uint64_t)n);
		EXPECT_EQ(1, st[c[i].ctx]) TH_LOG("send %llu completed twice",
						  (unsigned long long)c[i].ctx);
		EXPECT_EQ(DMAPLANE_OP_SEND, c[i].opcode);
		st[c[i].ctx] = c[i].status;
		if (!c[i].status)
			ok++;
		else if (c[i].status == -EAGAIN)
			eagain++;
	}
	TH_LOG("%ld messages of %ld bytes, budget %ld bytes / %ld messages:",
	       n, len, budget, umax);
	TH_LOG("%ld delivered, %ld refused", ok, eagain);
	/* One connection delivers in order: the first fit, then none. */
	for (long i = 0; i < n; i++) {
		EXPECT_EQ(i < fit ? 0 : -EAGAIN, st[i]) TH_LOG("send %ld", i);
	}
	EXPECT_EQ(fit, ok);
	EXPECT_EQ(n - fit, eagain);
	if (!self->local) {
		ASSERT_EQ(0, peer_view(self->s, &after));
		EXPECT_STREQ("up", after.lstate);
		EXPECT_STREQ("up", after.rstate);
		EXPECT_EQ(before.ldrops, after.ldrops) TH_LOG("dropped by this node");
		EXPECT_EQ(before.rdrops, after.rdrops) TH_LOG("dropped by the receiver's");
	}

	/* The receiver drains: exactly the first fit, in order, intact. */
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, self->r_to_l,
			   0, ~0ull, len, 0, fit, 0));
	ASSERT_EQ(fit, r_wait(self->s, self->rep, c, fit, 120000));
	qsort(c, fit, sizeof(c[0]), cmp_ctx);
	for (long i = 0; i < fit; i++) {
		ASSERT_EQ(i, c[i].ctx);
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(i, c[i].tag) TH_LOG("receive %ld", i);
		EXPECT_EQ(len, c[i].len);
		EXPECT_EQ(-1, r_check(self->s, self->rep, i, 9000 + i, len, len))
			TH_LOG("receive %ld", i);
	}
	EXPECT_EQ(-EAGAIN, RCALL(self->s, OP_PROBE, NULL, NULL, self->rep, DP_ANY_SRC,
				 0, ~0ull, 0, 1000));

	/* Room again: m more, queued unexpected, all delivered intact. */
	for (long i = n; i < n + m; i++)
		ASSERT_EQ(0, dp_send(self->ep, self->to_r, i, buf + i * len, len, i));
	ASSERT_EQ(m, lwait(self->ep, c, m, 60000));
	for (long i = 0; i < m; i++) {
		EXPECT_EQ(0, c[i].status) TH_LOG("send %llu after the drain",
						 (unsigned long long)c[i].ctx);
		EXPECT_EQ(len, c[i].len);
	}
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, self->r_to_l,
			   0, ~0ull, len, 0, m, 0));
	ASSERT_EQ(m, r_wait(self->s, self->rep, c, m, 60000));
	qsort(c, m, sizeof(c[0]), cmp_ctx);
	for (long i = 0; i < m; i++) {
		ASSERT_EQ(i, c[i].ctx);
		EXPECT_EQ(0, c[i].status);
		EXPECT_EQ(n + i, c[i].tag) TH_LOG("receive %ld after the drain", i);
		EXPECT_EQ(-1, r_check(self->s, self->rep, i, 9000 + n + i, len, len))
			TH_LOG("receive %ld after the drain", i);
	}
	if (!self->local) {
		ASSERT_EQ(0, peer_view(self->s, &after));
		EXPECT_STREQ("up", after.lstate);
		EXPECT_STREQ("up", after.rstate);
		EXPECT_EQ(before.ldrops, after.ldrops);
		EXPECT_EQ(before.rdrops, after.rdrops);
	}
	free(c);
	free(st);
	free(buf);
}

/* Several forked senders here, one receiver there. */
TEST_F_TIMEOUT(remote, concurrent_senders_from_forked_processes, 600)
{
	enum { P = 4, M = 40 };
	struct dmaplane_cqe c[P * M];
	uint64_t uids[P];
	uint64_t big = self->eager + 4096;
	int pipefd[2], status, got = 0;
	pid_t pids[P];

	ASSERT_EQ(0, pipe(pipefd));
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, DP_ANY_SRC,
			   0, ~0ull, big, 0, P * M / 2, 0));
	for (int p = 0; p < P; p++) {
		pids[p] = fork();
		if (!pids[p]) {
			struct dp_ep *ep = dp_test_ep_new(0, 256);
			struct dmaplane_cqe cc[M];
			char *b[M];
			uint32_t to;
			uint64_t uid;

			if (!ep || dp_av_insert(ep, &self->rname, &to))
				_exit(1);
			/* Children finish setting up in any order: say who we are. */
			uid = (uint64_t)p << 56 | dp_test_uid(ep);
			if (write(pipefd[1], &uid, sizeof(uid)) != sizeof(uid))
				_exit(2);
			for (int i = 0; i < M; i++) {
				uint64_t l = (i + p) % 2 ? big : 1000;

				b[i] = malloc(l);
				dp_test_fill(b[i], l, (p << 16) | i);
				while (dp_send(ep, to, (p << 16) | i, b[i], l, i) == -EAGAIN)
					usleep(1000);
			}
			if (lwait(ep, cc, M, 120000) != M)
				_exit(3);
			for (int i = 0; i < M; i++) {
				if (cc[i].status)
					_exit(4);
			}
			dp_close(ep);
			_exit(0);
		}
	}
	for (int n = 0; n < P; n++) {
		uint64_t v;

		ASSERT_EQ(sizeof(v), read(pipefd[0], &v, sizeof(v)));
		ASSERT_LT(v >> 56, (uint64_t)P);
		uids[v >> 56] = v & ((1ULL << 56) - 1);
	}
	/* The other half of the receives while the senders run. */
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, DP_ANY_SRC,
			   0, ~0ull, big, P * M / 2, P * M / 2, 0));
	got = r_wait(self->s, self->rep, c, P * M, 180000);
	for (int p = 0; p < P; p++) {
		waitpid(pids[p], &status, 0);
		EXPECT_EQ(0, WIFEXITED(status) ? WEXITSTATUS(status) : 100) TH_LOG("sender %d", p);
	}
	ASSERT_EQ(P * M, got);
	qsort(c, P * M, sizeof(c[0]), cmp_ctx);
	{
		int next[P] = { 0 };
		long slot = -1;

		for (int i = 0; i < P * M; i++) {
			int p = c[i].tag >> 16, k = c[i].tag & 0xffff;
			uint64_t l = (k + p) % 2 ? big : 1000;

			ASSERT_LT(p, P);
			EXPECT_EQ(0, c[i].status);
			check_src(_metadata, self->local, c[i].src, uids[p], &slot);
			/* Per source, in send order across posted receives. */
			EXPECT_EQ(next[p], k) TH_LOG("sender %d: message %d in receive %d",
						     p, k, (int)c[i].ctx);
			next[p] = k + 1;
			EXPECT_EQ(l, c[i].len);
			EXPECT_EQ(-1, r_check(self->s, self->rep, c[i].ctx, c[i].tag, l, l));
		}
		for (int p = 0; p < P; p++)
			EXPECT_EQ(M, next[p]);
	}
	close(pipefd[0]);
	close(pipefd[1]);
}

TEST_F_TIMEOUT(remote, probe_and_claim_remote_messages, 300)
{
	struct dmaplane_probe *pr;
	struct dmaplane_cqe c[2];
	uint64_t big = self->eager * 2;
	char *bsrc = malloc(big), small[16];
	struct ctl_msg r;
	void *out;
	int ret;

	dp_test_fill(bsrc, big, 77);
	dp_test_fill(small, sizeof(small), 76);
	EXPECT_EQ(-EAGAIN, RCALL(self->s, OP_PROBE, NULL, NULL, self->rep, DP_ANY_SRC,
				 0, ~0ull, 0, 0));
	ASSERT_EQ(0, dp_send(self->ep, self->to_r, 0x77, small, sizeof(small), 1));
	ASSERT_EQ(0, dp_send(self->ep, self->to_r, 0x78, bsrc, big, 2));
	/* Iprobe with a specific source: details, the message stays. */
	ret = RCALL(self->s, OP_PROBE, &r, &out, self->rep, self->r_to_l, 0x78, 0, 0, 30000);
	ASSERT_EQ(0, ret);
	pr = out;
	EXPECT_EQ(0x78, pr->tag);
	EXPECT_EQ(big, pr->len);
	check_src(_metadata, self->local, pr->src, self->lname.ep_uid, NULL);
	free(out);
	ret = RCALL(self->s, OP_PROBE, &r, &out, self->rep, DP_ANY_SRC, 0, ~0ull, 0, 30000);
	ASSERT_EQ(0, ret);
	pr = out;
	EXPECT_EQ(0x77, pr->tag);
	EXPECT_EQ(sizeof(small), pr->len);
	free(out);
	EXPECT_EQ(-EAGAIN, RCALL(self->s, OP_PROBE, NULL, NULL, self->rep, DP_ANY_SRC,
				 0x79, 0, 0, 0));
	/* Improbe: the rendezvous message is claimed... */
	ret = RCALL(self->s, OP_PROBE, &r, &out, self->rep, DP_ANY_SRC, 0x78, 0,
		    DMAPLANE_PROBE_CLAIM, 30000);
	ASSERT_EQ(0, ret);
	pr = out;
	EXPECT_EQ(big, pr->len);
	/* ...so an any-tag receive gets the small one. */
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, DP_ANY_SRC,
			   0, ~0ull, big, 10));
	ASSERT_EQ(1, r_wait(self->s, self->rep, c, 1, 30000));
	EXPECT_EQ(10, c[0].ctx);
	EXPECT_EQ(0x77, c[0].tag);
	EXPECT_EQ(sizeof(small), c[0].len);
	EXPECT_EQ(-1, r_check(self->s, self->rep, 10, 76, sizeof(small), sizeof(small)));
	EXPECT_EQ(-ENOENT, RCALL(self->s, OP_RECV_CLAIMED, NULL, NULL, self->rep,
				 pr->claim + 1, big, 11));
	ASSERT_EQ(0, RCALL(self->s, OP_RECV_CLAIMED, NULL, NULL, self->rep,
			   pr->claim, big, 11));
	ASSERT_EQ(1, r_wait(self->s, self->rep, c, 1, 60000));
	EXPECT_EQ(11, c[0].ctx);
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(0x78, c[0].tag);
	EXPECT_EQ(big, c[0].len);
	check_src(_metadata, self->local, c[0].src, self->lname.ep_uid, NULL);
	EXPECT_EQ(-1, r_check(self->s, self->rep, 11, 77, big, big));
	EXPECT_EQ(-ENOENT, RCALL(self->s, OP_RECV_CLAIMED, NULL, NULL, self->rep,
				 pr->claim, big, 12));
	free(out);
	ASSERT_EQ(2, lwait(self->ep, c, 2, 60000));
	qsort(c, 2, sizeof(c[0]), cmp_ctx);
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(0, c[1].status);
	EXPECT_EQ(big, c[1].len);
	free(bsrc);
}

/*
 * Remote completion data (DMAPLANE_OP_F_DATA) crosses the wire with the
 * message: eager and rendezvous, to a posted receive and to one that comes
 * later (the probe reports it first), truncated too.  The receiver's
 * address handle of the sender comes with it (DMAPLANE_CQE_F_SRC_AV).
 */
TEST_F_TIMEOUT(remote, completion_data_and_source_handle_reach_remote_receiver, 300)
{
	static const struct { uint64_t len, rlen; int posted; } cases[] = {
		{ 64, 64, 1 }, { 0, 0, 1 }, { 1000, 1000, 0 }, { 3000, 100, 1 },
		{ 64, 64, 2 },	/* no data: flags and data zero */
	};
	uint64_t big = self->eager * 2 + 5;
	struct dmaplane_probe *pr;
	struct dmaplane_cqe c[2];
	struct dmaplane_op op;
	struct ctl_msg r;
	char *src = malloc(big);
	void *out;

	ASSERT_NE(NULL, src);
	for (unsigned int i = 0; i < 2 * ARRAY_SIZE(cases); i++) {
		uint64_t len = cases[i / 2].len, rlen = cases[i / 2].rlen;
		int posted = cases[i / 2].posted, rdv = i % 2;
		uint64_t data = 0xda7a000000000000ull + i, ctx = 100 + i;

		if (rdv) {
			len = len ? big : 0;
			rlen = rlen < cases[i / 2].len ? self->eager : len;
		}
		if (!len && rdv)
			continue;
		dp_test_fill(src, len, data);
		if (posted)
			ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, DP_ANY_SRC,
					   0x5000 + i, 0, rlen, ctx));
		if (posted == 2)
			dp_prep_send(&op, self->to_r, 0x5000 + i, src, len, ctx);
		else
			dp_prep_send_data(&op, self->to_r, 0x5000 + i, src, len, data, ctx);
		ASSERT_EQ(1, dp_submit(self->ep, &op, 1));
		if (!posted) {
			ASSERT_EQ(0, RCALL(self->s, OP_PROBE, &r, &out, self->rep, DP_ANY_SRC,
					   0x5000 + i, 0, 0, 30000)) TH_LOG("case %u", i);
			pr = out;
			EXPECT_EQ(DMAPLANE_CQE_F_DATA | DMAPLANE_CQE_F_SRC_AV, pr->cqe_flags);
			EXPECT_EQ(data, pr->data);
			EXPECT_EQ(self->r_to_l, pr->src_av);
			EXPECT_EQ(len, pr->len);
			free(out);
			ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, DP_ANY_SRC,
					   0x5000 + i, 0, rlen, ctx));
		}
		ASSERT_EQ(1, r_wait(self->s, self->rep, c, 1, 60000)) TH_LOG("case %u", i);
		EXPECT_EQ(ctx, c[0].ctx);
		EXPECT_EQ(rlen < len ? -EMSGSIZE : 0, c[0].status) TH_LOG("case %u", i);
		/* The receiver has a handle of the sender: FI_SOURCE. */
		EXPECT_EQ((posted == 2 ? 0 : DMAPLANE_CQE_F_DATA) | DMAPLANE_CQE_F_SRC_AV,
			  c[0].flags) TH_LOG("case %u", i);
		EXPECT_EQ(posted == 2 ? 0 : data, c[0].data) TH_LOG("case %u", i);
		EXPECT_EQ(self->r_to_l, c[0].src_av);
		EXPECT_EQ(len, c[0].msg_len);
		check_src(_metadata, self->local, c[0].src, self->lname.ep_uid, NULL);
		EXPECT_EQ(-1, r_check(self->s, self->rep, ctx, data, rlen < len ? rlen : len, len))
			TH_LOG("case %u", i);
		ASSERT_EQ(1, lwait(self->ep, c, 1, 60000));
		EXPECT_EQ(0, c[0].status);
		EXPECT_EQ(0, c[0].flags);
	}
	free(src);
}

TEST_F_TIMEOUT(remote, cancel_receives_from_remote_sources, 300)
{
	struct dmaplane_cqe c;
	char buf[8];

	/* There: the earliest unmatched receive with that ctx. */
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, self->r_to_l,
			   1, 0, 8, 20));
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, self->r_to_l,
			   1, 0, 8, 21));
	EXPECT_EQ(0, RCALL(self->s, OP_CANCEL, NULL, NULL, self->rep, 20));
	EXPECT_EQ(-ENOENT, RCALL(self->s, OP_CANCEL, NULL, NULL, self->rep, 20));
	ASSERT_EQ(1, r_wait(self->s, self->rep, &c, 1, 10000));
	EXPECT_EQ(20, c.ctx);
	EXPECT_EQ(-ECANCELED, c.status);
	ASSERT_EQ(0, dp_send(self->ep, self->to_r, 1, "abcdefg", 8, 3));
	ASSERT_EQ(1, r_wait(self->s, self->rep, &c, 1, 30000));
	EXPECT_EQ(21, c.ctx);
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(8, c.len);
	EXPECT_EQ(-ENOENT, RCALL(self->s, OP_CANCEL, NULL, NULL, self->rep, 21));
	ASSERT_EQ(1, lwait(self->ep, &c, 1, 30000));
	EXPECT_EQ(0, c.status);
	/* Here: a receive from the remote source, cancelled, then none. */
	ASSERT_EQ(0, dp_recv(self->ep, self->to_r, 2, 0, buf, 8, 30));
	EXPECT_EQ(0, dp_cancel(self->ep, 30));
	ASSERT_EQ(1, lwait(self->ep, &c, 1, 10000));
	EXPECT_EQ(30, c.ctx);
	EXPECT_EQ(-ECANCELED, c.status);
	ASSERT_EQ(0, RCALL(self->s, OP_SEND, NULL, NULL, self->rep, self->r_to_l, 2, 8, 4, 5));
	ASSERT_EQ(0, dp_recv(self->ep, self->to_r, 2, 0, buf, 8, 31));
	ASSERT_EQ(1, lwait(self->ep, &c, 1, 30000));
	EXPECT_EQ(31, c.ctx);
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(-1, dp_test_check(buf, 8, 4));
	ASSERT_EQ(1, r_wait(self->s, self->rep, &c, 1, 30000));
}

static void put_get(struct __test_metadata *_metadata, FIXTURE_DATA(remote) *self,
		    int kind, uint64_t len)
{
	char *buf = malloc(len), *back = malloc(len);
	uint64_t tail = len > 12345 ? 12345 : len - 1;
	struct ctl_msg r;
	uint64_t key;
	int id;

	ASSERT_EQ(0, RCALL(self->s, OP_REG, &r, NULL, self->rep, kind, len, RW, 0));
	key = r.a[0];
	id = r.a[1];
	/* Whole region. */
	dp_test_fill(buf, len, 11);
	ASSERT_EQ(0, dp_test_rma(self->ep, 1, self->to_r, key, 0, buf, len, RMA_MS));
	EXPECT_EQ(-1, (long)RCALL(self->s, OP_RCHECK, &r, NULL, id, 0, len, 11) ?: (long)r.a[0]);
	/* An odd slice, read back. */
	dp_test_fill(buf, 777, 12);
	ASSERT_EQ(0, dp_test_rma(self->ep, 1, self->to_r, key, 4095, buf, 777, RMA_MS));
	EXPECT_EQ(-1, (long)RCALL(self->s, OP_RCHECK, &r, NULL, id, 4095, 777, 12) ?: (long)r.a[0]);
	EXPECT_EQ(-1, (long)RCALL(self->s, OP_RCHECK, &r, NULL, id, 0, 4095, 11) ?: (long)r.a[0]);
	memset(back, 0, len);
	ASSERT_EQ(0, dp_test_rma(self->ep, 0, self->to_r, key, 4095, back, 777, RMA_MS));
	EXPECT_EQ(0, memcmp(back, buf, 777));
	/* Data written there, read here: whole and an unaligned tail. */
	ASSERT_EQ(0, RCALL(self->s, OP_RFILL, NULL, NULL, id, 0, len, 13));
	ASSERT_EQ(0, dp_test_rma(self->ep, 0, self->to_r, key, 0, back, len, RMA_MS));
	EXPECT_EQ(-1, dp_test_check(back, len, 13));
	ASSERT_EQ(0, dp_test_rma(self->ep, 0, self->to_r, key, len - tail, back, tail, RMA_MS));
	dp_test_fill(buf, len, 13);
	EXPECT_EQ(0, memcmp(back, buf + len - tail, tail));
	/* Zero bytes at the very end. */
	EXPECT_EQ(0, dp_test_rma(self->ep, 1, self->to_r, key, len, buf, 0, RMA_MS));
	EXPECT_EQ(0, RCALL(self->s, OP_DEREG, NULL, NULL, id));
	/* A deregistered key stops working. */
	EXPECT_EQ(-ENOENT, dp_test_rma(self->ep, 1, self->to_r, key, 0, buf, 8, RMA_MS));
	free(buf);
	free(back);
}

TEST_F_TIMEOUT(remote, put_get_remote_user_memory, 300)
{
	put_get(_metadata, self, REG_USER, 1 << 20);
	put_get(_metadata, self, REG_USER, 3 * 4096 + 17);
}

TEST_F_TIMEOUT(remote, put_get_remote_arena, 300)
{
	put_get(_metadata, self, REG_ARENA, 4 << 20);
}

/*
 * Local buffers in this process's own regions (DMAPLANE_OP_F_REGION):
 * an arena, registered memory and an import of a dma-buf.  Across nodes
 * the transport reaches the pages of arenas and registered memory: sends
 * from them, receives into them, put/get with them, eager and rendezvous.
 * An import has no pages the transport can map: it carries eager
 * messages (copied), and a rendezvous or put/get from or into it fails
 * with -EOPNOTSUPP, the way the uapi says (on one node all of it works).
 */
TEST_F_TIMEOUT(remote, region_buffers_here_both_directions, 600)
{
	const uint64_t area = 4 << 20, sizes2[] = { 100, self->eager * 2 + 5 };
	struct dp_arena *arena, *exp;
	struct dp_mr *mr, *imp;
	struct dmaplane_op op;
	struct dmaplane_cqe c, sc;
	struct ctl_msg r;
	char *mrbuf;
	uint64_t key;
	int fd, id;

	ASSERT_EQ(0, dp_arena_create(self->ep, area, 0, DMAPLANE_NUMA_ANY,
				     DMAPLANE_ACCESS_ALL, &arena));
	mrbuf = mmap(NULL, area, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, mrbuf);
	ASSERT_EQ(0, dp_mr_reg(self->ep, mrbuf, area, DMAPLANE_ACCESS_ALL, &mr));
	ASSERT_EQ(0, dp_arena_create(self->ep, area, 0, DMAPLANE_NUMA_ANY,
				     DMAPLANE_ACCESS_ALL, &exp));
	fd = dp_dmabuf_export(exp, 0, area, 0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, dp_mr_import_dmabuf(self->ep, fd, 0, area, DMAPLANE_ACCESS_ALL, &imp));
	/*
	 * The target is an arena here; put_with_data_completes_at_remote_target
	 * puts into a malloc()ed one (which the server's own later malloc/free
	 * maps and unmaps next to: the registration must stay valid).
	 */
	ASSERT_EQ(0, RCALL(self->s, OP_REG, &r, NULL, self->rep, REG_ARENA, area, RW, 0));
	key = r.a[0];
	id = r.a[1];

	for (int k = 0; k < 3; k++) {
		uint32_t h = k == 0 ? dp_arena_handle(arena) : k == 1 ? dp_mr_handle(mr) :
			     dp_mr_handle(imp);
		char *v = k == 0 ? dp_arena_ptr(arena) : k == 1 ? mrbuf : dp_arena_ptr(exp);

		for (int i = 0; i < 2; i++) {
			uint64_t len = sizes2[i], seed = 300 + k * 10 + i, tag = 0x4e60 + i;
			int cant = k == 2 && len > (uint64_t)self->eager && !self->local;

			TH_LOG("region kind %d, %llu bytes", k, (unsigned long long)len);
			/* Here -> there, from the region at offset 8. */
			dp_test_fill(v + 8, len, seed);
			ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, self->r_to_l,
					   tag, 0, len, 7));
			dp_prep_send(&op, self->to_r, tag, NULL, len, 9);
			op.addr = 8;
			dp_prep_set_region(&op, h);
			if (cant) {
				EXPECT_EQ(-EOPNOTSUPP, dp_submit(self->ep, &op, 1));
				/* Let the posted receive take a user-memory send. */
				ASSERT_EQ(0, dp_send(self->ep, self->to_r, tag, v + 8, len, 9));
			} else {
				ASSERT_EQ(1, dp_submit(self->ep, &op, 1));
			}
			ASSERT_EQ(1, r_wait(self->s, self->rep, &c, 1, xfer_ms(len)));
			EXPECT_EQ(0, c.status);
			EXPECT_EQ(len, c.len);
			EXPECT_EQ(-1, r_check(self->s, self->rep, 7, seed, len, len));
			ASSERT_EQ(1, lwait(self->ep, &sc, 1, xfer_ms(len)));
			EXPECT_EQ(9, sc.ctx);
			EXPECT_EQ(0, sc.status);

			/* There -> here, into the region at offset 24. */
			memset(v, 0x5a, len + 64);
			dp_prep_recv(&op, self->to_r, tag, 0, NULL, len, 7);
			op.addr = 24;
			dp_prep_set_region(&op, h);
			ASSERT_EQ(1, dp_submit(self->ep, &op, 1));
			ASSERT_EQ(0, RCALL(self->s, OP_SEND, NULL, NULL, self->rep, self->r_to_l,
					   tag, len, seed + 1, 9));
			ASSERT_EQ(1, lwait(self->ep, &c, 1, xfer_ms(len)));
			EXPECT_EQ(7, c.ctx);
			EXPECT_EQ(cant ? -EOPNOTSUPP : 0, c.status);
			EXPECT_EQ(cant ? 0 : len, c.len);
			if (!cant)
				EXPECT_EQ(-1, dp_test_check(v + 24, len, seed + 1));
			EXPECT_EQ(0x5a, (unsigned char)v[23]);
			EXPECT_EQ(0x5a, (unsigned char)v[24 + len]);
			ASSERT_EQ(1, r_wait(self->s, self->rep, &sc, 1, xfer_ms(len)));
			EXPECT_EQ(9, sc.ctx);
			if (!cant)
				EXPECT_EQ(0, sc.status);
		}

		/* PUT from the region, GET back into another part of it. */
		dp_test_fill(v + 4096, 1 << 20, 400 + k);
		dp_prep_put(&op, self->to_r, key, 64, NULL, 1 << 20, 5);
		op.addr = 4096;
		dp_prep_set_region(&op, h);
		if (k == 2 && !self->local) {
			EXPECT_EQ(-EOPNOTSUPP, dp_submit(self->ep, &op, 1));
			continue;
		}
		ASSERT_EQ(1, dp_submit(self->ep, &op, 1));
		ASSERT_EQ(1, lwait(self->ep, &c, 1, RMA_MS));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(-1, (long)RCALL(self->s, OP_RCHECK, &r, NULL, id, 64, 1 << 20, 400 + k)
			  ?: (long)r.a[0]);
		ASSERT_EQ(0, RCALL(self->s, OP_RFILL, NULL, NULL, id, 0, 1 << 20, 410 + k));
		dp_prep_get(&op, self->to_r, key, 0, NULL, 1 << 20, 6);
		op.addr = 2 << 20;
		dp_prep_set_region(&op, h);
		ASSERT_EQ(1, dp_submit(self->ep, &op, 1));
		ASSERT_EQ(1, lwait(self->ep, &c, 1, RMA_MS));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(-1, dp_test_check(v + (2 << 20), 1 << 20, 410 + k));
	}
	EXPECT_EQ(0, RCALL(self->s, OP_DEREG, NULL, NULL, id));
	EXPECT_EQ(0, dp_mr_dereg(imp));
	close(fd);
	EXPECT_EQ(0, dp_arena_destroy(exp));
	EXPECT_EQ(0, dp_mr_dereg(mr));
	munmap(mrbuf, area);
	EXPECT_EQ(0, dp_arena_destroy(arena));
}

/*
 * A PUT with data completes on the target's ring too, once the bytes are
 * there (fi_writedata): exact fields, the target naming the initiator by
 * its own handle, a zero-byte one, a rendezvous-sized one.
 */
TEST_F_TIMEOUT(remote, put_with_data_completes_at_remote_target, 300)
{
	const uint64_t sizes3[] = { 64, 0, 3 << 20 };
	uint64_t len, big = 4 << 20;
	struct dmaplane_cqe c;
	struct dmaplane_op op;
	struct ctl_msg r;
	char *buf = malloc(big);
	uint64_t key;
	int id;

	ASSERT_NE(NULL, buf);
	/*
	 * A malloc()ed target: the server's allocations beside it in the same
	 * 2 MiB split its VMA, which notifies the whole PMD range; the
	 * registration must survive that (mr.c's suspect check).
	 */
	ASSERT_EQ(0, RCALL(self->s, OP_REG, &r, NULL, self->rep, REG_USER, big, RW, 0));
	key = r.a[0];
	id = r.a[1];
	for (unsigned int i = 0; i < ARRAY_SIZE(sizes3); i++) {
		len = sizes3[i];
		dp_test_fill(buf, len, 500 + i);
		dp_prep_put(&op, self->to_r, key, 16, buf, len, 30 + i);
		op.flags |= DMAPLANE_OP_F_DATA;
		op.data = 0xbeef00000000ull + i;
		ASSERT_EQ(1, dp_submit(self->ep, &op, 1));
		ASSERT_EQ(1, lwait(self->ep, &c, 1, RMA_MS));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(30 + i, c.ctx);
		EXPECT_EQ(0, c.flags);
		ASSERT_EQ(1, r_wait(self->s, self->rep, &c, 1, RMA_MS)) TH_LOG("len %llu",
									  (unsigned long long)len);
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(0, c.ctx);
		EXPECT_EQ(DMAPLANE_OP_PUT, c.opcode);
		EXPECT_EQ(DMAPLANE_CQE_F_DATA | DMAPLANE_CQE_F_REMOTE | DMAPLANE_CQE_F_SRC_AV,
			  c.flags);
		EXPECT_EQ(0xbeef00000000ull + i, c.data);
		EXPECT_EQ(len, c.len);
		EXPECT_EQ(self->r_to_l, c.src_av);
		check_src(_metadata, self->local, c.src, self->lname.ep_uid, NULL);
		if (len)
			EXPECT_EQ(-1, (long)RCALL(self->s, OP_RCHECK, &r, NULL, id, 16, len,
						  500 + i) ?: (long)r.a[0]);
	}
	/* A plain PUT: nothing on the target's ring. */
	ASSERT_EQ(0, dp_test_rma(self->ep, 1, self->to_r, key, 0, buf, 8, RMA_MS));
	EXPECT_EQ(0, r_wait(self->s, self->rep, &c, 1, 500));
	EXPECT_EQ(0, RCALL(self->s, OP_DEREG, NULL, NULL, id));
	free(buf);
}

TEST_F_TIMEOUT(remote, put_get_target_side_checks, 300)
{
	const uint64_t len = 65536;
	char *buf = malloc(len);
	struct ctl_msg r;
	uint64_t kro, kwo, kother;
	int idro, idwo, rep2, idother;
	struct dmaplane_name n2;
	uint32_t to_r2;

	memset(buf, 1, len);
	ASSERT_EQ(0, RCALL(self->s, OP_REG, &r, NULL, self->rep, REG_USER, len,
			   DMAPLANE_ACCESS_REMOTE_READ, 0));
	kro = r.a[0];
	idro = r.a[1];
	ASSERT_EQ(0, RCALL(self->s, OP_REG, &r, NULL, self->rep, REG_USER, len,
			   DMAPLANE_ACCESS_LOCAL_WRITE | DMAPLANE_ACCESS_REMOTE_WRITE, 0));
	kwo = r.a[0];
	idwo = r.a[1];
	EXPECT_EQ(-EACCES, dp_test_rma(self->ep, 1, self->to_r, kro, 0, buf, 8, RMA_MS));
	EXPECT_EQ(0, dp_test_rma(self->ep, 0, self->to_r, kro, 0, buf, 8, RMA_MS));
	EXPECT_EQ(-EACCES, dp_test_rma(self->ep, 0, self->to_r, kwo, 0, buf, 8, RMA_MS));
	EXPECT_EQ(0, dp_test_rma(self->ep, 1, self->to_r, kwo, 0, buf, 8, RMA_MS));
	/* Bounds, overflow-safe. */
	EXPECT_EQ(-ERANGE, dp_test_rma(self->ep, 1, self->to_r, kwo, len - 7, buf, 8, RMA_MS));
	EXPECT_EQ(-ERANGE, dp_test_rma(self->ep, 1, self->to_r, kwo, len + 1, buf, 0, RMA_MS));
	EXPECT_EQ(-ERANGE, dp_test_rma(self->ep, 1, self->to_r, kwo, ~0ull, buf, 2, RMA_MS));
	EXPECT_EQ(-ERANGE, dp_test_rma(self->ep, 0, self->to_r, kro, 1, buf, len, RMA_MS));
	/* Keys that are not the target's. */
	EXPECT_EQ(-ENOENT, dp_test_rma(self->ep, 1, self->to_r, 0, 0, buf, 8, RMA_MS));
	EXPECT_EQ(-ENOENT, dp_test_rma(self->ep, 1, self->to_r, kwo ^ 1, 0, buf, 8, RMA_MS));
	rep2 = r_open(self->s, 0, 0, &n2);
	ASSERT_LE(0, rep2);
	ASSERT_EQ(0, RCALL(self->s, OP_REG, &r, NULL, rep2, REG_USER, len, RW, 0));
	kother = r.a[0];
	idother = r.a[1];
	ASSERT_EQ(0, dp_av_insert(self->ep, &n2, &to_r2));
	EXPECT_EQ(-ENOENT, dp_test_rma(self->ep, 1, self->to_r, kother, 0, buf, 8, RMA_MS));
	EXPECT_EQ(0, dp_test_rma(self->ep, 1, to_r2, kother, 0, buf, 8, RMA_MS));
	/* Revoked at once. */
	EXPECT_EQ(0, RCALL(self->s, OP_DEREG, NULL, NULL, idwo));
	EXPECT_EQ(-ENOENT, dp_test_rma(self->ep, 1, self->to_r, kwo, 0, buf, 8, RMA_MS));
	EXPECT_EQ(0, RCALL(self->s, OP_DEREG, NULL, NULL, idro));
	EXPECT_EQ(0, RCALL(self->s, OP_DEREG, NULL, NULL, idother));
	free(buf);
}

/* One node: works.  Across nodes: not supported (rxe has no dma-buf MRs). */
TEST_F_TIMEOUT(remote, put_get_remote_imported_dmabuf, 300)
{
	const uint64_t len = 1 << 20;
	char *buf = malloc(len);
	struct ctl_msg r;
	int ret, want;

	ret = RCALL(self->s, OP_REG, &r, NULL, self->rep, REG_DMABUF, len, RW, 0);
	if (ret == -ENOENT)
		SKIP(return, "no /dev/dma_heap/system on the remote node");
	ASSERT_EQ(0, ret);
	want = self->local ? 0 : -EOPNOTSUPP;
	dp_test_fill(buf, len, 21);
	EXPECT_EQ(want, dp_test_rma(self->ep, 1, self->to_r, r.a[0], 0, buf, len, RMA_MS));
	EXPECT_EQ(want, dp_test_rma(self->ep, 0, self->to_r, r.a[0], 4096, buf, 8192, RMA_MS));
	EXPECT_EQ(0, RCALL(self->s, OP_DEREG, NULL, NULL, r.a[1]));
	free(buf);
}

TEST_F_TIMEOUT(remote, address_vector_errors, 300)
{
	struct dmaplane_name stale, name, kname, pname, ln;
	struct dp_ep *keyed, *wrong;
	struct dmaplane_cqe c;
	struct ctl_msg r;
	uint64_t a[1];
	uint32_t h;
	int idx, kidx;
	char buf[16];

	/* A closed remote endpoint's name. */
	idx = r_open(self->s, 0, 0, &stale);
	ASSERT_LE(0, idx);
	ASSERT_EQ(0, RCALL(self->s, OP_CLOSE, NULL, NULL, idx));
	EXPECT_EQ(-ECONNREFUSED, dp_av_insert(self->ep, &stale, &h));
	name = self->rname;
	name.ep_uid = (1ull << DMAPLANE_SRC_NODE_SHIFT) - 1;
	EXPECT_EQ(-ECONNREFUSED, dp_av_insert(self->ep, &name, &h));
	/* Open but not set up: not an endpoint one can talk to. */
	idx = r_open(self->s, 0, 1, &pname);
	ASSERT_LE(0, idx);
	EXPECT_EQ(-ECONNREFUSED, dp_av_insert(self->ep, &pname, &h));
	/* An unknown node. */
	name = self->rname;
	name.node_id ^= 1;
	EXPECT_EQ(-ENETUNREACH, dp_av_insert(self->ep, &name, &h));
	name.node_id ^= 0xfff0000000000000ull;
	EXPECT_EQ(-ENETUNREACH, dp_av_insert(self->ep, &name, &h));
	/* Security domains: a keyed endpoint there. */
	kidx = r_open(self->s, 0x5ec0de, 0, &kname);
	ASSERT_LE(0, kidx);
	EXPECT_EQ(-EACCES, dp_av_insert(self->ep, &kname, &h));
	wrong = dp_test_ep_new(0x5ec0df, 16);
	ASSERT_NE(NULL, wrong);
	EXPECT_EQ(-EACCES, dp_av_insert(wrong, &kname, &h));
	EXPECT_EQ(-EACCES, dp_av_insert(wrong, &self->rname, &h));
	keyed = dp_test_ep_new(0x5ec0de, 16);
	ASSERT_NE(NULL, keyed);
	ASSERT_EQ(0, dp_av_insert(keyed, &kname, &h));
	/* The keyed remote endpoint refuses our plain one, accepts the keyed. */
	a[0] = kidx;
	ASSERT_EQ(0, dp_getname(self->ep, &ln));
	EXPECT_EQ(-EACCES, rcall(self->s, OP_INSERT, a, 1, &ln, sizeof(ln), &r, NULL));
	ASSERT_EQ(0, dp_getname(keyed, &ln));
	EXPECT_EQ(0, rcall(self->s, OP_INSERT, a, 1, &ln, sizeof(ln), &r, NULL));
	/* Stale and unknown names are refused there too. */
	ASSERT_EQ(0, dp_getname(wrong, &ln));
	dp_close(wrong);
	EXPECT_EQ(-ECONNREFUSED, rcall(self->s, OP_INSERT, a, 1, &ln, sizeof(ln),
				       &r, NULL));
	ln.node_id ^= 1;
	EXPECT_EQ(-ENETUNREACH, rcall(self->s, OP_INSERT, a, 1, &ln, sizeof(ln),
				      &r, NULL));
	/* And a message moves within the domain. */
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, kidx, DP_ANY_SRC, 42, 0, 16, 1));
	dp_test_fill(buf, sizeof(buf), 3);
	ASSERT_EQ(0, dp_send(keyed, h, 42, buf, sizeof(buf), 2));
	ASSERT_EQ(1, r_wait(self->s, kidx, &c, 1, 30000));
	EXPECT_EQ(0, c.status);
	check_src(_metadata, self->local, c.src, dp_test_uid(keyed), NULL);
	EXPECT_EQ(-1, r_check(self->s, kidx, 1, 3, 16, 16));
	ASSERT_EQ(1, lwait(keyed, &c, 1, 30000));
	EXPECT_EQ(0, c.status);
	dp_close(keyed);
}

/*
 * The remote receiver goes away with a rendezvous send of ours queued
 * there and an eager one delivered: the pending send completes with
 * -ECONNRESET, the address fails, nothing hangs.
 */
TEST_F_TIMEOUT(remote, remote_endpoint_close_fails_pending_sends, 300)
{
	uint64_t big = self->eager * 4;
	char *b = malloc(big);
	struct dmaplane_cqe c;
	int ret;

	dp_test_fill(b, big, 1);
	ASSERT_EQ(0, dp_send(self->ep, self->to_r, 1, b, big, 1));
	ASSERT_EQ(0, dp_send(self->ep, self->to_r, 2, b, 100, 2));
	ASSERT_EQ(1, lwait(self->ep, &c, 1, 30000));
	EXPECT_EQ(2, c.ctx);
	EXPECT_EQ(0, c.status);
	/* Make sure the rendezvous is queued there before closing. */
	ASSERT_EQ(0, RCALL(self->s, OP_PROBE, NULL, NULL, self->rep, DP_ANY_SRC, 1, 0, 0, 30000));
	ASSERT_EQ(0, RCALL(self->s, OP_CLOSE, NULL, NULL, self->rep));
	ASSERT_EQ(1, lwait(self->ep, &c, 1, 30000)) TH_LOG("pending rendezvous send hangs");
	EXPECT_EQ(1, c.ctx);
	EXPECT_EQ(-ECONNRESET, c.status);
	/* Sending to it again: refused, at once or in the completion. */
	ret = dp_send(self->ep, self->to_r, 3, b, 10, 3);
	if (!ret) {
		ASSERT_EQ(1, lwait(self->ep, &c, 1, 30000));
		ret = c.status;
	}
	EXPECT_EQ(-ECONNRESET, ret);
	EXPECT_EQ(-ECONNREFUSED, dp_av_insert(self->ep, &self->rname, &self->to_r));
	free(b);
}

/*
 * The sender's endpoint closes while its rendezvous messages wait here
 * unexpected: they are withdrawn.  The sender's pages are unpinned as soon
 * as this node has answered (xfer_pages there back where it was), the
 * messages stay queued, and receives that match them complete with
 * -ECONNRESET and no data, as on one node.
 */
TEST_F_TIMEOUT(remote, remote_sender_close_withdraws_rendezvous, 300)
{
	uint64_t big = self->eager * 4 + 4096;
	struct dmaplane_cqe c[2];
	struct dmaplane_probe p;
	char *dst = lbuf(big);
	long base, now = -1;
	int t;

	ASSERT_NE(NULL, dst);
	base = r_stat(self->s, "xfer_pages");
	ASSERT_LE(0, base);
	ASSERT_EQ(0, RCALL(self->s, OP_SEND, NULL, NULL, self->rep, self->r_to_l,
			   77, big, 5, 40, 2, 1));
	for (t = 0; t < 300 && dp_probe(self->ep, self->to_r, 78, 0, 0, &p); t++)
		usleep(100000);
	ASSERT_EQ(0, dp_probe(self->ep, self->to_r, 78, 0, 0, &p));
	EXPECT_EQ(big, p.len);
	/* Across nodes the sender pins its buffers until our FIN. */
	if (!self->local)
		EXPECT_LE(base + 2 * (long)(big / 4096), r_stat(self->s, "xfer_pages"));
	ASSERT_EQ(0, RCALL(self->s, OP_CLOSE, NULL, NULL, self->rep));
	for (t = 0; t < 300; t++) {
		now = r_stat(self->s, "xfer_pages");
		if (now == base)
			break;
		usleep(100000);
	}
	EXPECT_EQ(base, now) TH_LOG("the closed sender's pages stay pinned");
	/* Still queued (probe sees them), but the data went with the sender. */
	EXPECT_EQ(0, dp_probe(self->ep, self->to_r, 77, 0, 0, &p));
	ASSERT_EQ(0, dp_recv(self->ep, self->to_r, 77, 0, dst, big, 1));
	ASSERT_EQ(0, dp_recv(self->ep, DP_ANY_SRC, 78, 0, dst, big, 2));
	ASSERT_EQ(2, lwait(self->ep, c, 2, 30000));
	qsort(c, 2, sizeof(c[0]), cmp_ctx);
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(1 + i, c[i].ctx);
		EXPECT_EQ(DMAPLANE_OP_RECV, c[i].opcode);
		EXPECT_EQ(-ECONNRESET, c[i].status);
		EXPECT_EQ(0, c[i].len);
		EXPECT_EQ(big, c[i].msg_len);
		EXPECT_EQ(77 + i, c[i].tag);
		check_src(_metadata, self->local, c[i].src, self->rname.ep_uid, NULL);
	}
	for (uint64_t i = 0; i < big + GUARD; i++) {
		if ((unsigned char)dst[i] != GUARD_BYTE) {
			EXPECT_EQ(GUARD_BYTE, (unsigned char)dst[i]) TH_LOG("byte %llu written",
									  (unsigned long long)i);
			break;
		}
	}
	EXPECT_EQ(-EAGAIN, dp_probe(self->ep, self->to_r, 0, ~0ULL, 0, &p));
	free(dst);
}

/*
 * In a child that dropped to nobody with RLIMIT_MEMLOCK = 16 pages: send
 * to @rname (auth key @key) a 128 KiB message (tag 8) and a 32 KiB one
 * (tag 9, seed 11).  Across nodes the first would pin 32 pages until the
 * receiver pulls it: -ENOMEM.  Exit code: 0, or which step failed.
 */
static int memlock_sender(const struct dmaplane_name *rname, uint64_t key, int local)
{
	struct rlimit rl = { 16 * 4096, 16 * 4096 };
	enum { BIG = 128 << 10, SMALL = 32 << 10 };
	char *buf = malloc(BIG);
	struct dmaplane_cqe c;
	struct dp_ep *ep;
	uint32_t h;
	int ret;

	if (!buf || setgid(65534) || setuid(65534))
		return 2;
	if (setrlimit(RLIMIT_MEMLOCK, &rl))
		return 3;
	ep = dp_test_ep_new(key, 64);
	if (!ep || dp_av_insert(ep, rname, &h))
		return 4;
	dp_test_fill(buf, BIG, 11);
	ret = dp_send(ep, h, 8, buf, BIG, 1);
	if (ret != (local ? 0 : -ENOMEM))
		return 5;
	if (dp_send(ep, h, 9, buf, SMALL, 2))
		return 6;
	/* Only the small one can complete: the big one is never received. */
	if (lwait(ep, &c, 1, 60000) != 1 || c.ctx != 2 || c.status)
		return 7;
	dp_close(ep);
	return 0;
}

/* Across nodes a rendezvous buffer is pinned until the FIN: it is charged. */
TEST_F_TIMEOUT(remote, remote_rendezvous_charged_to_memlock, 300)
{
	const uint64_t key = 0x6d656d6c6f636bull;
	long charged = dp_test_stat("charged_pages");
	struct dmaplane_name rname;
	struct dmaplane_cqe c;
	int ridx, status;
	pid_t pid;

	if (getuid() != 0)
		SKIP(return, "needs root to drop to another uid");
	ridx = r_open(self->s, key, 0, &rname);
	ASSERT_LE(0, ridx);
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, ridx, DP_ANY_SRC, 9, 0,
			   32 << 10, 5));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(memlock_sender(&rname, key, self->local));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(1, r_wait(self->s, ridx, &c, 1, 60000));
	EXPECT_EQ(5, c.ctx);
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(32 << 10, c.len);
	EXPECT_EQ(9, c.tag);
	EXPECT_EQ(-1, r_check(self->s, ridx, 5, 11, 32 << 10, 32 << 10));
	EXPECT_EQ(0, RCALL(self->s, OP_CLOSE, NULL, NULL, ridx));
	/* Nothing stays charged here once the sender is gone. */
	EXPECT_EQ(charged, dp_test_stat("charged_pages"));
	EXPECT_EQ(0, dp_test_stat("xfer_pages"));
}

/*
 * A receive buffer here that faults for as long as its owner likes (a
 * userfaultfd nobody answers yet) holds up that receive only: the
 * message is copied in by the endpoint's delivery work, not by the
 * connection's completion work, so another endpoint behind the same
 * connection still gets eager and rendezvous messages meanwhile.
 */
TEST_F_TIMEOUT(remote, stalled_receive_buffer_holds_up_only_its_endpoint, 300)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t tag = 0x57a1100000000000ull, where = 0, len = page;
	uint64_t big = 1 << 20, seed = 0x5eed57a11;
	struct dmaplane_name bname;
	struct dmaplane_cqe c[2];
	uint32_t r_to_b, b_to_r;
	char *buf, *small, *large, *junk;
	struct dp_ep *b;
	int uffd, got;

	if (self->local)
		SKIP(return, "one node: the copy runs in the sender's own call");
	ASSERT_GE(self->eager, (long)len);
	buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, buf);
	uffd = dp_test_uffd_region(buf, len);
	if (uffd == -ENOSYS || uffd == -EPERM)
		SKIP(return, "no userfaultfd here (%d)", uffd);
	ASSERT_LE(0, uffd);
	b = dp_test_ep_new(0, LOCAL_RING);
	ASSERT_NE(NULL, b);
	ASSERT_EQ(0, dp_getname(b, &bname));
	ASSERT_EQ(0, r_insert(self->s, self->rep, &bname, &r_to_b));
	ASSERT_EQ(0, dp_av_insert(b, &self->rname, &b_to_r));
	small = lbuf(64);
	large = lbuf(big);
	junk = calloc(1, len);
	ASSERT_NE(NULL, small);
	ASSERT_NE(NULL, large);
	ASSERT_NE(NULL, junk);

	/* An eager message to the stalled buffer: its copy waits on the fault. */
	ASSERT_EQ(0, dp_recv(self->ep, self->to_r, tag, 0, buf, len, 7));
	ASSERT_EQ(0, RCALL(self->s, OP_SEND, NULL, NULL, self->rep, self->r_to_l,
			   tag, len, seed, 9));
	ASSERT_EQ(0, dp_test_uffd_fault(uffd, 60000, &where))
		TH_LOG("the delivery never touched the receive buffer");
	EXPECT_EQ((uintptr_t)buf, where);
	EXPECT_EQ(0, dp_poll(self->ep, c, 1));

	/* Endpoint b, behind the same connection, is not held up. */
	ASSERT_EQ(0, dp_recv(b, b_to_r, tag + 1, 0, small, 64, 11));
	ASSERT_EQ(0, dp_recv(b, b_to_r, tag + 2, 0, large, big, 12));
	ASSERT_EQ(0, RCALL(self->s, OP_SEND, NULL, NULL, self->rep, r_to_b,
			   tag + 1, 64, seed + 1, 21));
	ASSERT_EQ(0, RCALL(self->s, OP_SEND, NULL, NULL, self->rep, r_to_b,
			   tag + 2, big, seed + 2, 22));
	ASSERT_EQ(2, lwait(b, c, 2, 60000));
	qsort(c, 2, sizeof(c[0]), cmp_ctx);
	EXPECT_EQ(11, c[0].ctx);
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(64, c[0].len);
	EXPECT_EQ(12, c[1].ctx);
	EXPECT_EQ(0, c[1].status);
	EXPECT_EQ(big, c[1].len);
	EXPECT_EQ(-1, lcheck(small, 64, seed + 1, 64, 64));
	EXPECT_EQ(-1, lcheck(large, big, seed + 2, big, big));
	EXPECT_EQ(0, dp_poll(self->ep, c, 1));

	/* Resolved: the stalled delivery finishes with the message's bytes. */
	ASSERT_EQ(0, dp_test_uffd_fill(uffd, buf, junk, len));
	ASSERT_EQ(1, lwait(self->ep, c, 1, 60000));
	EXPECT_EQ(7, c[0].ctx);
	EXPECT_EQ(0, c[0].status);
	EXPECT_EQ(len, c[0].len);
	EXPECT_EQ(tag, c[0].tag);
	dp_test_fill(junk, len, seed);
	EXPECT_EQ(0, memcmp(junk, buf, len));
	/* The server's three sends all completed, without error. */
	for (got = 0; got < 3; got++) {
		ASSERT_EQ(1, r_wait(self->s, self->rep, c, 1, 60000));
		EXPECT_EQ(0, c[0].status);
		EXPECT_EQ(DMAPLANE_OP_SEND, c[0].opcode);
	}

	dp_close(b);
	close(uffd);
	munmap(buf, len);
	free(small);
	free(large);
	free(junk);
}

/* Write a module parameter of this node; returns 0 or -errno. */
static int set_param(const char *name, const char *val, char *old, size_t oldlen)
{
	char path[128];
	int fd, ret = 0;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/module/dmaplane/parameters/%s", name);
	fd = open(path, O_RDWR);
	if (fd < 0)
		return -errno;
	if (old) {
		n = read(fd, old, oldlen - 1);
		old[n > 0 ? n : 0] = 0;
		if (n > 0 && old[n - 1] == '\n')
			old[n - 1] = 0;
	}
	if (pwrite(fd, val, strlen(val), 0) != (ssize_t)strlen(val))
		ret = -errno;
	close(fd);
	return ret;
}

/*
 * Eager sends to another node keep a copy until the peer acknowledges
 * them: bounded per endpoint by eager_backlog (-EAGAIN beyond, at once),
 * and the bytes come back with each acknowledgement.
 */
TEST_F_TIMEOUT(remote, eager_backlog_is_bounded_per_endpoint, 300)
{
	struct dmaplane_cqe c;
	char old[32], msg[64];
	int i;

	if (self->local)
		SKIP(return, "one node: eager sends are copied straight in");
	ASSERT_EQ(0, set_param("eager_backlog", "40", old, sizeof(old)));
	dp_test_fill(msg, sizeof(msg), 40);
	EXPECT_EQ(-EAGAIN, dp_send(self->ep, self->to_r, 1, msg, 64, 1));
	/* Every 32-byte send fits once the one before is acknowledged. */
	for (i = 0; i < 20; i++) {
		ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, self->r_to_l,
				   2, 0, 32, 10 + i));
		ASSERT_EQ(0, dp_send(self->ep, self->to_r, 2, msg, 32, 10 + i))
			TH_LOG("send %d", i);
		ASSERT_EQ(1, lwait(self->ep, &c, 1, 60000));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(10 + i, c.ctx);
		ASSERT_EQ(1, r_wait(self->s, self->rep, &c, 1, 60000));
		EXPECT_EQ(0, c.status);
		EXPECT_EQ(32, c.len);
	}
	EXPECT_EQ(0, set_param("eager_backlog", old, NULL, 0));
	ASSERT_EQ(0, dp_send(self->ep, self->to_r, 3, msg, 64, 3));
	ASSERT_EQ(1, lwait(self->ep, &c, 1, 60000));
	/* Unexpected there: the remote module holds it; the send completes. */
	EXPECT_EQ(0, c.status);
	ASSERT_EQ(0, RCALL(self->s, OP_RECV, NULL, NULL, self->rep, self->r_to_l,
			   3, 0, 64, 3));
	ASSERT_EQ(1, r_wait(self->s, self->rep, &c, 1, 60000));
	EXPECT_EQ(0, c.status);
	EXPECT_EQ(-1, r_check(self->s, self->rep, 3, 40, 64, 64));
}

/* ---- two-node script helpers --------------------------------------------- */

static int sync_signal(const char *name)
{
	int secs = env_int("DMAPLANE_SYNC_TIMEOUT", 600);
	int fd = connect_peer(env_int("DMAPLANE_SYNC_PORT", SYNC_PORT), secs);
	char ack[8] = "";
	uint32_t len = strlen(name);

	if (fd < 0) {
		fprintf(stderr, "remote_test: signal %s: no peer at %s\n", name, peer_ip());
		return 1;
	}
	if (dp_test_io_full(fd, &len, sizeof(len), 1) || dp_test_io_full(fd, (void *)name, len, 1) ||
	    dp_test_io_full(fd, ack, 2, 0) || strncmp(ack, "ok", 2)) {
		fprintf(stderr, "remote_test: signal %s: peer did not take it\n", name);
		close(fd);
		return 1;
	}
	close(fd);
	return 0;
}

static int sync_wait(const char *name)
{
	int secs = env_int("DMAPLANE_SYNC_TIMEOUT", 600);
	int lfd = listen_on(env_int("DMAPLANE_SYNC_PORT", SYNC_PORT));
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	time_t end = time(NULL) + secs;

	if (lfd < 0) {
		perror("remote_test: wait-for: listen");
		return 1;
	}
	while (time(NULL) < end) {
		char got[256];
		uint32_t len;
		int fd;

		if (poll(&pfd, 1, 1000) <= 0)
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		sock_timeouts(fd, 30);
		if (dp_test_io_full(fd, &len, sizeof(len), 0) || len >= sizeof(got) ||
		    dp_test_io_full(fd, got, len, 0)) {
			close(fd);
			continue;
		}
		got[len] = 0;
		if (name[0] && name[strlen(name) - 1] == '*' &&
		    !strncmp(got, name, strlen(name) - 1)) {
			printf("%s\n", got);
			fflush(stdout);
		} else if (strcmp(got, name)) {
			fprintf(stderr, "remote_test: waiting for %s, peer signalled %s\n",
				name, got);
			dp_test_io_full(fd, "no", 2, 1);
			close(fd);
			close(lfd);
			return 1;
		}
		dp_test_io_full(fd, "ok", 2, 1);
		close(fd);
		close(lfd);
		return 0;
	}
	fprintf(stderr, "remote_test: no %s from the peer within %d s\n", name, secs);
	close(lfd);
	return 1;
}

#define FAILIF(cond, ...) do {						\
		if (cond) {						\
			fprintf(stderr, "remote_test: FAIL %s:%d: ",	\
				__func__, __LINE__);			\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			fails++;					\
		}							\
	} while (0)

/*
 * Set up a session with one endpoint on each side and the address
 * handles both ways.  Returns the control socket, or -1.
 */
static int pair_up(struct dp_ep **ep, int *rep, struct dmaplane_name *ln,
		   struct dmaplane_name *rn, uint32_t *to_r, uint32_t *r_to_l)
{
	int s = connect_peer(env_int("DMAPLANE_CTL_PORT", CTL_PORT), 120);
	int ret;

	if (s < 0) {
		fprintf(stderr, "remote_test: no server at %s\n", peer_ip());
		return -1;
	}
	*ep = dp_test_ep_new(0, 1024);
	*rep = r_open(s, 0, 0, rn);
	if (!*ep || *rep < 0 || dp_getname(*ep, ln)) {
		fprintf(stderr, "remote_test: endpoints: %d\n", *rep);
		close(s);
		return -1;
	}
	ret = dp_av_insert(*ep, rn, to_r);
	if (!ret)
		ret = r_insert(s, *rep, ln, r_to_l);
	if (ret) {
		fprintf(stderr, "remote_test: AV_INSERT: %s\n", strerror(-ret));
		close(s);
		return -1;
	}
	return s;
}

/* Completions by ctx, for operations whose completion order is not fixed. */
#define NCTX 256
struct dstate {
	int done[NCTX];
	int status[NCTX];
};

static void dstate_add(struct dstate *d, const struct dmaplane_cqe *c, int n)
{
	for (int k = 0; k < n; k++) {
		if (c[k].ctx < NCTX) {
			d->done[c[k].ctx]++;
			d->status[c[k].ctx] = c[k].status;
		}
	}
}

static int dstate_all(const struct dstate *d, int lo, int hi)
{
	for (int i = lo; i <= hi; i++) {
		if (!d->done[i])
			return 0;
	}
	return 1;
}

/* Take completions here (@s < 0) or there until ctx lo..hi are all done. */
static void collect(struct dp_ep *ep, int s, int rep, struct dstate *d, int lo,
		    int hi, int secs)
{
	time_t end = time(NULL) + secs;
	struct dmaplane_cqe c[16];

	while (!dstate_all(d, lo, hi) && time(NULL) < end) {
		int n = s < 0 ? dp_wait(ep, c, 16, 1000) : r_wait(s, rep, c, 1, 1000);

		if (n < 0)
			break;
		dstate_add(d, c, n);
	}
}

/*
 * Operations left pending in both directions when the peer goes away
 * (MODE: unload, linkdel, kill, vmkill, linkdown -- what the peer's script does once we
 * signal "pending-ready"); all must complete with an error within a
 * bounded time, each exactly once.
 *
 * Here: 4 rendezvous sends queued there (ctx 0-3), 4 receives from there
 * (ctx 10-13).  There: 2 rendezvous sends queued here (ctx 100-101), 2
 * receives from here (ctx 200-201).  MODE vmkill: also a 64 MiB message
 * from there (ctx 102) whose receive here (ctx 60) is pulling it when the
 * VM dies.
 */
static int disrupt(const char *mode)
{
	enum { NS = 4, NR = 4, BIG = 1 << 20, HUGE = 64 << 20 };
	static struct dstate here, there;
	int vmkill = !strcmp(mode, "vmkill");
	/* The server survives these; after linkdown the peer comes back too. */
	int linkdown = !strcmp(mode, "linkdown");
	int server_lives = linkdown || !strcmp(mode, "linkdel");
	char *huge = NULL;
	struct dmaplane_name ln, rn;
	struct dmaplane_cqe c[16];
	struct dp_ep *ep;
	uint32_t to_r, r_to_l;
	int s, rep, fails = 0, n, ret, same_node;
	char *big = malloc(BIG), rbuf[NR][64], *rv = malloc(BIG);
	FILE *f;

	s = pair_up(&ep, &rep, &ln, &rn, &to_r, &r_to_l);
	if (s < 0) {
		/* Let the other node's script go on all the same. */
		sync_signal("pending-ready");
		return 1;
	}
	same_node = ln.node_id == rn.node_id;
	dp_test_fill(big, BIG, 1);
	for (int i = 0; i < NS; i++)
		FAILIF(dp_send(ep, to_r, 100 + i, big, BIG, i), "send %d", i);
	for (int i = 0; i < NR; i++)
		FAILIF(dp_recv(ep, to_r, 200 + i, 0, rbuf[i], 64, 10 + i), "recv %d", i);
	FAILIF(RCALL(s, OP_SEND, NULL, NULL, rep, r_to_l, 300, BIG, 2, 100, 2, 1),
	       "remote sends");
	FAILIF(RCALL(s, OP_RECV, NULL, NULL, rep, r_to_l, 400, 0, 64, 200, 2, 1),
	       "remote receives");
	/* Theirs must be here, ours there, before the peer goes away. */
	for (int t = 0; t < 300; t++) {
		struct dmaplane_probe p;

		if (!dp_probe(ep, to_r, 301, 0, 0, &p))
			break;
		usleep(100000);
	}
	FAILIF(RCALL(s, OP_PROBE, NULL, NULL, rep, r_to_l, 100 + NS - 1, 0, 0, 30000),
	       "our last send is not queued there");
	if (vmkill) {
		struct dmaplane_probe p;
		int t;

		huge = malloc(HUGE);
		FAILIF(!huge || RCALL(s, OP_SEND, NULL, NULL, rep, r_to_l, 500, HUGE, 3, 102),
		       "remote 64 MiB send");
		for (t = 0; t < 300 && dp_probe(ep, to_r, 500, 0, 0, &p); t++)
			usleep(100000);
		/* Matched at once: the pull starts now. */
		FAILIF(!huge || dp_recv(ep, to_r, 500, 0, huge, HUGE, 60), "recv of 64 MiB");
	}
	f = fopen(STALE_FILE, "w");
	if (f) {
		fwrite(&rn, sizeof(rn), 1, f);
		fclose(f);
	}
	fprintf(stderr, "remote_test: %d sends and %d receives pending here, 2 and 2 there\n",
		NS, NR);
	if (sync_signal("pending-ready"))
		return 1;

	/* Our sends: an error each, within a bounded time. */
	collect(ep, -1, 0, &here, 0, NS - 1, 90);
	for (int i = 0; i < NS; i++) {
		fprintf(stderr, "remote_test: send %d: %s, status %d\n", i,
			here.done[i] ? "completed" : "PENDING", here.status[i]);
		FAILIF(here.done[i] != 1 || !here.status[i],
		       "send %d: %d completions, status %d", i, here.done[i], here.status[i]);
	}
	/*
	 * Their rendezvous message queued here: its sender is gone (its
	 * endpoint withdrew it before our sends failed, or the connection
	 * broke), so a receive completes once, with -ECONNRESET.
	 */
	FAILIF(dp_recv(ep, to_r, 300, 0, rv, BIG, 50), "recv of queued rendezvous");
	collect(ep, -1, 0, &here, 50, 50, 30);
	if (!here.done[50]) {
		FAILIF(1, "receive 50 of a dead rendezvous pending");
		FAILIF(dp_cancel(ep, 50), "receive 50 neither completed nor cancellable");
		collect(ep, -1, 0, &here, 50, 50, 10);
	}
	FAILIF(here.done[50] != 1 || here.status[50] != -ECONNRESET,
	       "receive of a dead rendezvous: %d completions, status %d",
	       here.done[50], here.status[50]);
	/* Our receives from there: failed already, or cancellable. */
	for (int i = 10; i < 10 + NR; i++) {
		if (here.done[i])
			continue;
		ret = dp_cancel(ep, i);
		FAILIF(ret && ret != -ENOENT, "cancel %d: %d", i, ret);
	}
	collect(ep, -1, 0, &here, 10, 10 + NR - 1, 30);
	for (int i = 10; i < 10 + NR; i++)
		FAILIF(here.done[i] != 1 || !here.status[i],
		       "receive %d: %d completions, status %d", i, here.done[i],
		       here.status[i]);
	/* The address no longer works, at once or in the completion. */
	ret = linkdown ? -ECONNRESET : dp_send(ep, to_r, 1, big, 10, 99);
	if (!ret) {
		collect(ep, -1, 0, &here, 99, 99, 30);
		FAILIF(!here.done[99], "send to a dead peer never completed");
		ret = here.status[99];
	}
	FAILIF(!ret, "send to a dead peer succeeded");
	if (!linkdown)
		fprintf(stderr, "remote_test: send to the gone peer: %d\n", ret);
	/*
	 * The pull in progress when the VM died: an error (the data did not
	 * all come), or, had it finished first, every byte right.
	 */
	if (vmkill) {
		collect(ep, -1, 0, &here, 60, 60, 90);
		fprintf(stderr, "remote_test: 64 MiB pull: %s, status %d\n",
			here.done[60] ? "completed" : "PENDING", here.status[60]);
		FAILIF(here.done[60] != 1 || (here.status[60] && here.status[60] != -ECONNRESET &&
					       here.status[60] != -EIO),
		       "pull cut off by the VM's death: %d completions, status %d",
		       here.done[60], here.status[60]);
		if (here.done[60] == 1 && !here.status[60]) {
			char *want = malloc(HUGE);

			dp_test_fill(want, HUGE, 3);
			FAILIF(!want || memcmp(want, huge, HUGE), "64 MiB pulled, data differs");
			free(want);
		}
	}
	/*
	 * Its name: the endpoint is gone (-ECONNREFUSED), and across nodes,
	 * once the module there has unloaded, the node too (-ENETUNREACH),
	 * or the connection broke while we asked (-ECONNRESET).
	 */
	ret = linkdown ? -ENETUNREACH : dp_av_insert(ep, &rn, &to_r);
	FAILIF(ret != -ECONNREFUSED &&
	       (same_node || (ret != -ENETUNREACH && ret != -ECONNRESET)),
	       "AV_INSERT of the gone peer's name: %d", ret);
	/*
	 * With the link deleted or down the server lives on: its side failed
	 * too (asked over the control connection, which TCP keeps across a
	 * link that comes back).
	 */
	if (server_lives) {
		collect(NULL, s, rep, &there, 100, 101, 90);
		for (int i = 200; i <= 201; i++) {
			if (there.done[i])
				continue;
			ret = RCALL(s, OP_CANCEL, NULL, NULL, rep, i);
			FAILIF(ret && ret != -ENOENT, "cancel %d there: %d", i, ret);
		}
		collect(NULL, s, rep, &there, 200, 201, 30);
		for (int i = 100; i <= 201; i += (i == 101 ? 99 : 1))
			FAILIF(there.done[i] != 1 || !there.status[i],
			       "there: ctx %d: %d completions, status %d", i,
			       there.done[i], there.status[i]);
	}
	n = dp_poll(ep, c, 16);
	FAILIF(n, "%d unexpected completions", n);
	for (int i = 0; i < NCTX; i++)
		FAILIF(here.done[i] > 1, "ctx %d completed %d times", i, here.done[i]);
	close(s);
	dp_close(ep);
	free(big);
	free(rv);
	free(huge);
	fprintf(stderr, "remote_test: disrupt %s: %s\n", mode, fails ? "FAIL" : "ok");
	return !!fails;
}

/* A fresh exchange with the peer: both directions, eager and rendezvous, put/get. */
static int exchange(const char *stale_file)
{
	static const uint64_t lens[] = { 100, 1 << 20 };
	struct dmaplane_name ln, rn;
	struct dmaplane_cqe c[4];
	struct dp_ep *ep;
	struct ctl_msg r;
	uint32_t to_r, r_to_l, h;
	int s, rep, fails = 0, n;
	char *b = lbuf(1 << 20), *src = malloc(1 << 20);

	s = pair_up(&ep, &rep, &ln, &rn, &to_r, &r_to_l);
	if (s < 0)
		return 1;
	if (stale_file) {
		struct dmaplane_name old;
		FILE *f = fopen(stale_file, "r");

		if (f && fread(&old, sizeof(old), 1, f) == 1) {
			int want = old.node_id == rn.node_id ? -ECONNREFUSED : -ENETUNREACH;
			int ret = dp_av_insert(ep, &old, &h);

			FAILIF(ret != want, "stale name: %d, want %d", ret, want);
		} else {
			FAILIF(1, "no stale name in %s", stale_file);
		}
		if (f)
			fclose(f);
	}
	for (int i = 0; i < 2; i++) {
		uint64_t len = lens[i];

		/* There -> here. */
		memset(b, GUARD_BYTE, len + GUARD);
		FAILIF(dp_recv(ep, to_r, 1, 0, b, len, 1), "recv");
		FAILIF(RCALL(s, OP_SEND, NULL, NULL, rep, r_to_l, 1, len, 50 + i, 2), "remote send");
		n = lwait(ep, c, 1, 60000);
		FAILIF(n != 1 || c[0].status || c[0].len != len, "receive: n %d status %d",
		       n, n ? c[0].status : 0);
		FAILIF(lcheck(b, len, 50 + i, len, len) != -1, "data from there, %llu bytes",
		       (unsigned long long)len);
		n = r_wait(s, rep, c, 1, 60000);
		FAILIF(n != 1 || c[0].status, "remote send completion");
		/* Here -> there. */
		dp_test_fill(src, len, 60 + i);
		FAILIF(RCALL(s, OP_RECV, NULL, NULL, rep, r_to_l, 2, 0, len, 3), "remote recv");
		FAILIF(dp_send(ep, to_r, 2, src, len, 4), "send");
		n = r_wait(s, rep, c, 1, 60000);
		FAILIF(n != 1 || c[0].status || c[0].len != len, "remote receive");
		FAILIF(r_check(s, rep, 3, 60 + i, len, len) != -1, "data there");
		n = lwait(ep, c, 1, 60000);
		FAILIF(n != 1 || c[0].status, "send completion");
	}
	FAILIF(RCALL(s, OP_REG, &r, NULL, rep, REG_USER, 65536, RW, 0), "remote MR");
	dp_test_fill(src, 65536, 70);
	FAILIF(dp_test_rma(ep, 1, to_r, r.a[0], 0, src, 65536, RMA_MS), "put");
	FAILIF(dp_test_rma(ep, 0, to_r, r.a[0], 0, b, 65536, RMA_MS), "get");
	FAILIF(memcmp(b, src, 65536), "get data");
	close(s);
	dp_close(ep);
	free(b);
	free(src);
	fprintf(stderr, "remote_test: exchange with %s: %s\n", peer_ip(), fails ? "FAIL" : "ok");
	return !!fails;
}

/* Local mode: the forked server goes when the suite exits (ksft_exit). */
/* ---- a target for the malicious peer ------------------------------------- */

#define HOLD_RECVS	8
#define HOLD_LEN	(64 * 1024)

static volatile sig_atomic_t hold_stop;

static void hold_term(int sig)
{
	(void)sig;
	hold_stop = 1;
}

/*
 * Whatever the malicious peer makes of it, the endpoint must keep working
 * and closing it must release everything (jobs/evil.sh checks the
 * counters afterwards).
 */
static int hold(void)
{
	static char bufs[HOLD_RECVS][HOLD_LEN];
	unsigned long done = 0, ok = 0, trunc = 0, other = 0;
	struct dmaplane_name name;
	struct dmaplane_cqe c[16];
	struct dp_mr *mr;
	struct dp_ep *ep;
	char *region;
	int i, n, ret;

	signal(SIGTERM, hold_term);
	ep = dp_test_ep_new(0, LOCAL_RING);
	region = malloc(HOLD_LEN);
	if (!ep || !region || dp_getname(ep, &name))
		return 1;
	dp_test_fill(region, HOLD_LEN, 1);
	ret = dp_mr_reg(ep, region, HOLD_LEN, RW, &mr);
	if (ret) {
		fprintf(stderr, "remote_test: hold: dp_mr_reg: %s\n", strerror(-ret));
		return 1;
	}
	for (i = 0; i < HOLD_RECVS; i++) {
		ret = dp_recv(ep, DP_ANY_SRC, 0, ~0ull, bufs[i], HOLD_LEN, i);
		if (ret) {
			fprintf(stderr, "remote_test: hold: dp_recv: %s\n", strerror(-ret));
			return 1;
		}
	}
	printf("%#llx %#llx %u\n", (unsigned long long)name.ep_uid,
	       (unsigned long long)dp_mr_key(mr), HOLD_LEN);
	fflush(stdout);
	while (!hold_stop) {
		n = dp_wait(ep, c, 16, 200);
		for (i = 0; i < n; i++) {
			done++;
			if (!c[i].status)
				ok++;
			else if (c[i].status == -EMSGSIZE)
				trunc++;
			else
				other++;
			if (c[i].opcode == DMAPLANE_OP_RECV && c[i].ctx < HOLD_RECVS &&
			    dp_recv(ep, DP_ANY_SRC, 0, ~0ull, bufs[c[i].ctx], HOLD_LEN,
				    c[i].ctx))
				other++;
		}
	}
	fprintf(stderr, "remote_test: hold: %lu receives completed: %lu whole, %lu truncated, %lu failed\n",
		done, ok, trunc, other);
	dp_mr_dereg(mr);
	dp_close(ep);
	free(region);
	return 0;
}

/*
 * --resolve NODE_ID EP_UID [BYTES]: insert that name into a fresh
 * endpoint's address vector (the node asks NODE_ID's connection: RESOLVE)
 * and, with BYTES, send that many bytes to it and wait up to RMA_MS for
 * the send's completion; for the malicious peer's late-answer-after-idle
 * and fin-before-rts-sent cases (jobs/evil.sh).  Exit 0 when the insert
 * succeeded (and the send completed, or failed with the connection).
 */
static int resolve(const char *node_id, const char *ep_uid, const char *bytes)
{
	struct dmaplane_name name = {
		.node_id = strtoull(node_id, NULL, 0),
		.ep_uid = strtoull(ep_uid, NULL, 0),
	};
	uint64_t len = bytes ? strtoull(bytes, NULL, 0) : 0;
	struct dmaplane_cqe cqe;
	char *buf = NULL;
	struct dp_ep *ep;
	double t0;
	uint32_t h;
	int ret;

	ep = dp_test_ep_new(0, LOCAL_RING);
	if (!ep)
		return 1;
	t0 = dp_test_now();
	ret = dp_av_insert(ep, &name, &h);
	fprintf(stderr, "remote_test: resolve %#llx:%#llx: %s after %.1f s\n",
		(unsigned long long)name.node_id, (unsigned long long)name.ep_uid,
		ret ? strerror(-ret) : "inserted", dp_test_now() - t0);
	if (ret || !len)
		goto out;
	buf = malloc(len);
	if (!buf) {
		ret = -ENOMEM;
		goto out;
	}
	dp_test_fill(buf, len, 7);
	t0 = dp_test_now();
	ret = dp_send(ep, h, 0x5eed, buf, len, 7);
	if (!ret) {
		ret = dp_wait(ep, &cqe, 1, RMA_MS);
		ret = ret == 1 ? cqe.status : ret ? ret : -ETIMEDOUT;
	}
	fprintf(stderr, "remote_test: send of %llu bytes: %s after %.1f s\n",
		(unsigned long long)len, ret ? strerror(-ret) : "completed",
		dp_test_now() - t0);
	/* Or failed with the connection (the peer never took the RTS). */
	if (ret == -ECONNRESET)
		ret = 0;
out:
	dp_close(ep);
	free(buf);
	return ret ? 1 : 0;
}

static pid_t local_server, local_main;

static void stop_local_server(void)
{
	int status;

	if (local_server > 0 && getpid() == local_main) {
		kill(local_server, SIGTERM);
		waitpid(local_server, &status, 0);
		local_server = 0;
	}
}

/*
 * What TEST_HARNESS_MAIN adds besides main(): the harness of 6.1 finds
 * the order its constructors ran in with this one; newer harnesses (6.10
 * on) order them by priority themselves and have no _CONSTRUCTOR_ORDER_*.
 */
#ifdef _CONSTRUCTOR_ORDER_BACKWARD
static void __attribute__((constructor)) __constructor_order_last(void)
{
	if (!__constructor_order)
		__constructor_order = _CONSTRUCTOR_ORDER_BACKWARD;
}
#endif

int main(int argc, char **argv)
{
	const char *role = getenv("DMAPLANE_ROLE");

	signal(SIGPIPE, SIG_IGN);
	if (argc > 1 && !strcmp(argv[1], "--serve"))
		return serve();
	if (argc > 2 && !strcmp(argv[1], "--signal"))
		return sync_signal(argv[2]);
	if (argc > 2 && !strcmp(argv[1], "--wait-for"))
		return sync_wait(argv[2]);
	if (argc > 2 && !strcmp(argv[1], "--disrupt"))
		return disrupt(argv[2]);
	if (argc > 1 && !strcmp(argv[1], "--exchange"))
		return exchange(argc > 2 ? argv[2] : NULL);
	if (argc > 1 && !strcmp(argv[1], "--hold"))
		return hold();
	if (argc > 3 && !strcmp(argv[1], "--resolve"))
		return resolve(argv[2], argv[3], argc > 4 ? argv[4] : NULL);
	if (argc > 1 && argv[1][0] == '-' && strcmp(argv[1], "--local")) {
		fprintf(stderr, "usage: %s [--local | --serve | --signal NAME | --wait-for NAME |"
			" --disrupt unload|linkdel|kill|vmkill|linkdown | --exchange [STALE_FILE] |"
			" --hold | --resolve NODE_ID EP_UID [BYTES]]\n", argv[0]);
		return 2;
	}
	if (role && !strcmp(role, "server"))
		return serve();
	if ((role && !strcmp(role, "client")) ||
	    (!(argc > 1 && !strcmp(argv[1], "--local")) &&
	     !(role && !strcmp(role, "local")) && getenv("DMAPLANE_PEER_IP")))
		return test_harness_run(argc, argv);

	/* Local: a server on this node, the suite against 127.0.0.1. */
	setenv("DMAPLANE_PEER_IP", "127.0.0.1", 1);
	fflush(NULL);
	local_main = getpid();
	local_server = fork();
	if (!local_server)
		_exit(serve());
	atexit(stop_local_server);
	return test_harness_run(argc, argv);	/* exits */
}

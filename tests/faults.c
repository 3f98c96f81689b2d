// SPDX-License-Identifier: GPL-2.0
/*
 * faults - drive every ioctl path of dmaplane with allocations failing.
 *
 * A scenario of steps (endpoints, names, eager and rendezvous send/recv,
 * probe/claim, cancel, iovecs, MR registration and put/get, arenas,
 * dma-buf export and import of dmaplane, dma-heap and udmabuf buffers,
 * AV removal, a sender's death, teardown with work pending) runs in a
 * child process, with allocations failing in one of two ways:
 *
 *   nth            for every step, for n = 1, 2, ... until the step makes
 *                  fewer than n fault-injection checks: a fresh child runs
 *                  the steps before it cleanly, then the step with
 *                  /proc/thread-self/fail-nth = n, so each slab and page
 *                  allocation of the step fails once, in turn;
 *   failslab | fail_page_alloc
 *                  ITER children run the whole scenario with
 *                  /proc/self/make-it-fail set and the debugfs attribute
 *                  at probability PROB (task-filter=Y, times=-1).
 *
 * After every child: it must have exited (no crash; a child that does not
 * finish within the step timeout is a hang), every failure must have been
 * an errno (from the ioctl or in a completion), data that arrived must be
 * right, operations that were accepted must complete, and every counter of
 * /sys/kernel/debug/dmaplane/stats (but the cumulative "invalidations")
 * must drain back to zero.  The injected failures' stack traces (verbose=2)
 * are read back from /dev/kmsg: the first frame inside dmaplane.ko is the
 * call site that was failed.
 *
 * Output: "DMAPLANE-CASE <name> PASS|FAIL [why]" records (tests/vm/jobs/
 * lib.sh) and "# " comments.  Exit status 0 when everything passed.
 *
 * Usage: faults [-m nth|failslab|fail_page_alloc]... [-i ITER] [-p PROB]
 *               [-s SEED] [-t STEP_TIMEOUT_S] [-v]
 */
#include <dirent.h>
#include <getopt.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>

#define DP_TEST_NO_HARNESS
#include "dp_test.h"

#define FI_DIR		"/sys/kernel/debug/"
#define EAGER		16384
#define BIG		(256 * 1024)
#define MiB		(1024 * 1024)
#define WAIT_MS		10000

/* Exit codes of a scenario child beyond the step's own result. */
enum {
	BUG_NONE = 0,
	BUG_LOST = 1,		/* an accepted operation never completed */
	BUG_DATA = 2,		/* data arrived wrong */
	BUG_STATUS = 3,		/* a completion that contradicts the call */
	BUG_SETUP = 4,		/* a step before the faulted one failed */
	BUG_CHILD = 5,		/* the child itself failed (not the module) */
};

static const char *const bug_names[] = {
	"ok", "lost completion", "wrong data", "inconsistent completion",
	"clean setup failed", "test child failed",
};

struct ctx {
	struct dp_ep *a, *b;
	uint32_t a2b, b2a;
	char *src, *dst;	/* BIG + 64 bytes each, touched */
	char *mrbuf;		/* 64 KiB, first page touched */
	int heap_fd, udmabuf_fd; /* foreign dma-bufs, or -1 */
};

static int verbose;

/* ---- helpers ------------------------------------------------------- */

/* One completion within WAIT_MS; poll(2) failing (its own allocations
 * fail too) is retried.  Returns 0, or -1 when nothing came.
 */
static int wait1(struct dp_ep *ep, struct dmaplane_cqe *cqe)
{
	for (int i = 0; i < WAIT_MS / 10; i++) {
		int n = dp_wait(ep, cqe, 1, 10);

		if (n == 1)
			return 0;
		if (n < 0)
			usleep(1000);
	}
	return -1;
}

/* Scenario result: 0, a negative errno (the failure user space saw), or
 * a positive BUG_* code.
 */
#define TRY(expr) do { int __r = (expr); if (__r) return __r; } while (0)

/*
 * One message of @len from a to b, the receive posted before the send
 * (@expected) or after it.  Every accepted operation must complete; a
 * receive that completes with an error must still let the send complete.
 */
static int xfer(struct ctx *c, uint64_t len, bool expected, uint64_t tag)
{
	struct dmaplane_cqe rc, sc;
	bool send_done = false;
	int ret;

	dp_test_fill(c->src, len, tag);
	memset(c->dst, 0x5a, len + 64);
	if (expected)
		TRY(dp_recv(c->b, c->b2a, tag, 0, c->dst, len, 1));
	ret = dp_send(c->a, c->a2b, tag, c->src, len, 2);
	if (ret)
		return ret;
	if (!expected) {
		/* Eager sends complete at once. */
		if (len <= EAGER) {
			if (wait1(c->a, &sc))
				return BUG_LOST;
			send_done = true;
			if (sc.status)
				return sc.status;
		}
		TRY(dp_recv(c->b, c->b2a, tag, 0, c->dst, len, 1));
	}
	if (wait1(c->b, &rc))
		return BUG_LOST;
	if (!send_done && wait1(c->a, &sc))
		return BUG_LOST;
	if (rc.ctx != 1 || sc.ctx != 2)
		return BUG_STATUS;
	if (rc.status)
		return rc.status;
	if (sc.status)
		return sc.status;
	if (rc.len != len || dp_test_check(c->dst, len, tag) >= 0 ||
	    (unsigned char)c->dst[len] != 0x5a)
		return BUG_DATA;
	return 0;
}

static int rma(struct ctx *c, uint64_t key, uint64_t len, uint64_t seed)
{
	struct dmaplane_cqe cqe;

	dp_test_fill(c->src, len, seed);
	TRY(dp_put(c->a, c->a2b, key, 0, c->src, len, 3));
	if (wait1(c->a, &cqe))
		return BUG_LOST;
	if (cqe.status)
		return cqe.status;
	memset(c->dst, 0, len);
	TRY(dp_get(c->a, c->a2b, key, 0, c->dst, len, 4));
	if (wait1(c->a, &cqe))
		return BUG_LOST;
	if (cqe.status)
		return cqe.status;
	if (dp_test_check(c->dst, len, seed) >= 0)
		return BUG_DATA;
	return 0;
}

/* ---- the scenario --------------------------------------------------- */

static int st_open_a(struct ctx *c)
{
	return dp_open(NULL, 0, &c->a);
}

static int st_setup_a(struct ctx *c)
{
	return dp_ep_setup(c->a, 0, 0);
}

static int st_open_b(struct ctx *c)
{
	TRY(dp_open(NULL, 0, &c->b));
	return dp_ep_setup(c->b, 0, 64);
}

static int st_av_insert(struct ctx *c)
{
	TRY(dp_test_connect(c->a, c->b, &c->a2b));
	return dp_test_connect(c->b, c->a, &c->b2a);
}

static int st_eager_expected(struct ctx *c)
{
	return xfer(c, 300, true, 10);
}

static int st_eager_unexpected(struct ctx *c)
{
	return xfer(c, EAGER, false, 11);
}

static int st_rdv_unexpected(struct ctx *c)
{
	return xfer(c, BIG, false, 12);
}

static int st_rdv_expected(struct ctx *c)
{
	return xfer(c, BIG - 4096 + 17, true, 13);
}

/* An eager and a rendezvous message, probed and then claimed. */
static int st_probe_claim(struct ctx *c)
{
	struct dmaplane_cqe s[2], r;
	struct dmaplane_probe p;
	int ret, got = 0, i;

	dp_test_fill(c->src, BIG, 14);
	TRY(dp_send(c->a, c->a2b, 14, c->src, 100, 5));
	if (wait1(c->a, &s[0]))
		return BUG_LOST;
	got = 1;
	if (s[0].status)
		return s[0].status;
	TRY(dp_send(c->a, c->a2b, 15, c->src, 2 * EAGER, 6));
	TRY(dp_probe(c->b, c->b2a, 15, 0, 0, &p));
	if (p.len != 2 * EAGER)
		return BUG_STATUS;
	for (i = 0; i < 2; i++) {
		TRY(dp_probe(c->b, c->b2a, 14 + i, 0, DMAPLANE_PROBE_CLAIM, &p));
		memset(c->dst, 0, 2 * EAGER);
		TRY(dp_recv_claimed(c->b, p.claim, c->dst, 2 * EAGER, 7));
		if (wait1(c->b, &r))
			return BUG_LOST;
		if (r.status)
			ret = r.status;
		else if (dp_test_check(c->dst, r.len, 14) >= 0)
			ret = BUG_DATA;
		else
			ret = 0;
		if (ret)
			return ret;
	}
	while (got < 2) {
		if (wait1(c->a, &s[got]))
			return BUG_LOST;
		if (s[got].status)
			return s[got].status;
		got++;
	}
	return 0;
}

static int st_cancel(struct ctx *c)
{
	struct dmaplane_cqe r;

	TRY(dp_recv(c->b, DP_ANY_SRC, 99, 0, c->dst, 100, 8));
	TRY(dp_recv(c->b, c->b2a, 98, 0, c->dst, BIG, 9));
	TRY(dp_cancel(c->b, 8));
	TRY(dp_cancel(c->b, 9));
	for (int i = 0; i < 2; i++) {
		if (wait1(c->b, &r))
			return BUG_LOST;
		if (r.status != -ECANCELED)
			return r.status ? r.status : BUG_STATUS;
	}
	return 0;
}

/*
 * Enough distinct keys (MATCH_KEYS > 2 * 16) to grow the matcher's hash
 * tables: unexpected messages by (source, tag) and by tag, then posted
 * receives for any source and for one source.  A failed growth
 * allocation must change nothing but speed.
 */
#define MATCH_KEYS	33

static int st_match_grow(struct ctx *c)
{
	struct dmaplane_cqe cqe;
	int i, k;

	for (i = 0; i < MATCH_KEYS; i++) {
		dp_test_fill(c->src + 8 * i, 8, 1000 + i);
		TRY(dp_send(c->a, c->a2b, 1000 + i, c->src + 8 * i, 8, 20));
		if (wait1(c->a, &cqe))
			return BUG_LOST;
		if (cqe.status)
			return cqe.status;
	}
	for (i = 0; i < MATCH_KEYS; i++) {
		memset(c->dst, 0, 8);
		TRY(dp_recv(c->b, i & 1 ? c->b2a : DP_ANY_SRC, 1000 + i, 0,
			    c->dst, 8, 21));
		if (wait1(c->b, &cqe))
			return BUG_LOST;
		if (cqe.status)
			return cqe.status;
		if (cqe.ctx != 21 || cqe.len != 8 || cqe.tag != 1000 + (uint64_t)i)
			return BUG_STATUS;
		if (dp_test_check(c->dst, 8, 1000 + i) >= 0)
			return BUG_DATA;
	}
	for (k = 0; k < 2; k++) {
		for (i = 0; i < MATCH_KEYS; i++)
			TRY(dp_recv(c->b, k ? c->b2a : DP_ANY_SRC, 2000 + i, 0,
				    c->dst, 8, 22 + i));
		for (i = 0; i < MATCH_KEYS; i++)
			TRY(dp_cancel(c->b, 22 + i));
		for (i = 0; i < MATCH_KEYS; i++) {
			if (wait1(c->b, &cqe))
				return BUG_LOST;
			if (cqe.status != -ECANCELED)
				return cqe.status ? cqe.status : BUG_STATUS;
		}
	}
	return 0;
}

static int st_iov(struct ctx *c)
{
	struct iovec s[3] = {
		{ c->src, 1000 }, { c->src + 1000, 3 * EAGER }, { c->src + 1000 + 3 * EAGER, 5 },
	};
	struct iovec d[2] = {
		{ c->dst, 7 * 1024 }, { c->dst + 7 * 1024, BIG - 7 * 1024 },
	};
	size_t len = 1000 + 3 * EAGER + 5;
	struct dmaplane_cqe sc, rc;

	dp_test_fill(c->src, len, 16);
	TRY(dp_recvv(c->b, c->b2a, 16, 0, d, 2, 10));
	TRY(dp_sendv(c->a, c->a2b, 16, s, 3, 11));
	if (wait1(c->b, &rc) || wait1(c->a, &sc))
		return BUG_LOST;
	if (rc.status || sc.status)
		return rc.status ? rc.status : sc.status;
	if (rc.len != len || dp_test_check(c->dst, len, 16) >= 0)
		return BUG_DATA;
	return 0;
}

static int st_mr(struct ctx *c)
{
	struct dmaplane_mr_query q;
	char *buf = c->mrbuf;
	struct dp_mr *mr;
	int ret;

	TRY(dp_mr_reg(c->b, buf + 1, 64 * 1024 - 2,
		      DMAPLANE_ACCESS_LOCAL_WRITE | DMAPLANE_ACCESS_REMOTE_READ |
		      DMAPLANE_ACCESS_REMOTE_WRITE, &mr));
	ret = dp_mr_query(mr, &q);
	if (!ret)
		ret = rma(c, dp_mr_key(mr), 64 * 1024 - 2, 17);
	if (ret) {
		dp_mr_dereg(mr);
		return ret;
	}
	return dp_mr_dereg(mr);
}

/* Outside the faulted window: only dmaplane's own paths are swept. */
static int prep_mr(struct ctx *c)
{
	c->mrbuf = mmap(NULL, 64 * 1024, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (c->mrbuf == MAP_FAILED)
		return BUG_CHILD;
	c->mrbuf[0] = 1;	/* the rest is faulted in by the pin */
	return 0;
}

static int st_arena(struct ctx *c)
{
	struct dp_arena *ar;
	int ret;

	TRY(dp_arena_create(c->b, 2 * MiB + 3 * 4096, 0, DMAPLANE_NUMA_ANY,
			    DMAPLANE_ACCESS_REMOTE_READ | DMAPLANE_ACCESS_REMOTE_WRITE, &ar));
	ret = rma(c, dp_arena_key(ar), BIG, 18);
	if (!ret && dp_test_check(dp_arena_ptr(ar), BIG, 18) >= 0)
		ret = BUG_DATA;
	if (ret) {
		dp_arena_destroy(ar);
		return ret;
	}
	return dp_arena_destroy(ar);
}

static int import_rma(struct ctx *c, int fd, uint64_t len, bool copy)
{
	struct dp_mr *mr;
	int ret;

	TRY(dp_mr_import_dmabuf(c->b, fd, 0, len, DMAPLANE_ACCESS_REMOTE_READ |
				DMAPLANE_ACCESS_REMOTE_WRITE, &mr));
	ret = copy ? rma(c, dp_mr_key(mr), len > BIG ? BIG : len, 19) : 0;
	if (ret) {
		dp_mr_dereg(mr);
		return ret;
	}
	return dp_mr_dereg(mr);
}

/* An arena slice exported as a dma-buf, mapped, and imported back. */
static int st_dmabuf_export(struct ctx *c)
{
	struct dp_arena *ar;
	int fd, ret;
	char *p;

	TRY(dp_arena_create(c->b, 2 * MiB, 0, DMAPLANE_NUMA_ANY,
			    DMAPLANE_ACCESS_REMOTE_READ | DMAPLANE_ACCESS_REMOTE_WRITE, &ar));
	fd = dp_dmabuf_export(ar, MiB, MiB, 0);
	if (fd < 0) {
		dp_arena_destroy(ar);
		return fd;
	}
	p = mmap(NULL, MiB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		ret = -errno;
	} else {
		p[0] = 1;
		munmap(p, MiB);
		ret = import_rma(c, fd, MiB, true);
	}
	close(fd);
	if (ret) {
		dp_arena_destroy(ar);
		return ret;
	}
	return dp_arena_destroy(ar);
}

/* The exporters' own allocations are made outside the faulted window. */
static int prep_heap(struct ctx *c)
{
	struct dma_heap_allocation_data data;
	int heap, ret;

	c->heap_fd = -1;
	heap = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);
	if (heap < 0)
		return 0;	/* not in this kernel: nothing to fail */
	memset(&data, 0, sizeof(data));
	data.len = MiB;
	data.fd_flags = O_RDWR | O_CLOEXEC;
	ret = dp_test_ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &data);
	close(heap);
	if (ret)
		return BUG_CHILD;
	c->heap_fd = data.fd;
	return 0;
}

static int st_heap_import(struct ctx *c)
{
	int ret = c->heap_fd < 0 ? 0 : import_rma(c, c->heap_fd, MiB, true);

	if (c->heap_fd >= 0)
		close(c->heap_fd);
	c->heap_fd = -1;
	return ret;
}

#define UDMABUF_LEN (16 * 1024)

static int prep_udmabuf(struct ctx *c)
{
	struct udmabuf_create create;
	int dev, memfd;

	c->udmabuf_fd = -1;
	dev = open("/dev/udmabuf", O_RDWR | O_CLOEXEC);
	if (dev < 0)
		return 0;
	memfd = memfd_create("faults", MFD_ALLOW_SEALING);
	if (memfd < 0 || ftruncate(memfd, UDMABUF_LEN) ||
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK))
		return BUG_CHILD;
	memset(&create, 0, sizeof(create));
	create.memfd = memfd;
	create.size = UDMABUF_LEN;
	create.flags = UDMABUF_FLAGS_CLOEXEC;
	c->udmabuf_fd = ioctl(dev, UDMABUF_CREATE, &create);
	close(memfd);
	close(dev);
	return c->udmabuf_fd < 0 ? BUG_CHILD : 0;
}

static int st_udmabuf_import(struct ctx *c)
{
	/* 6.1's udmabuf has no vmap: registered, not copied to. */
	int ret = c->udmabuf_fd < 0 ? 0 :
		  import_rma(c, c->udmabuf_fd, UDMABUF_LEN, false);

	if (c->udmabuf_fd >= 0)
		close(c->udmabuf_fd);
	c->udmabuf_fd = -1;
	return ret;
}

static int st_av_remove(struct ctx *c)
{
	uint32_t addr;

	TRY(dp_av_remove(c->a, c->a2b));
	TRY(dp_test_connect(c->a, c->b, &addr));
	c->a2b = addr;
	return 0;
}

/*
 * The sender dies with a rendezvous message unexpected at b and an eager
 * one queued: b's receive of the large one completes with -ECONNRESET.
 */
static int st_sender_dies(struct ctx *c)
{
	struct dmaplane_cqe r;
	bool alive;

	dp_test_fill(c->src, BIG, 21);
	TRY(dp_send(c->a, c->a2b, 20, c->src, 100, 12));
	TRY(dp_send(c->a, c->a2b, 21, c->src, BIG, 13));
	dp_close(c->a);
	c->a = NULL;
	/*
	 * dp_close() cannot fail, but its munmap() of the ring can (6.1's
	 * maple tree preallocates nodes): then the mapping keeps the file,
	 * and so the endpoint, alive until exit, and the message is still
	 * a live one.
	 */
	alive = dp_test_stat("endpoints") != 1;
	TRY(dp_recv(c->b, c->b2a, 21, 0, c->dst, BIG, 14));
	if (wait1(c->b, &r))
		return BUG_LOST;
	if (alive && !r.status)
		return dp_test_check(c->dst, BIG, 21) >= 0 ? BUG_DATA : 0;
	if (r.status != -ECONNRESET)
		return r.status ? r.status : BUG_STATUS;
	return 0;
}

/* b closes with a receive posted, an unexpected message and a region. */
static int st_close_busy(struct ctx *c)
{
	struct dp_ep *e;
	struct dp_mr *mr;
	uint32_t e2b;

	TRY(dp_open(NULL, 0, &e));
	c->a = e;
	TRY(dp_ep_setup(e, 0, 0));
	TRY(dp_test_connect(e, c->b, &e2b));
	TRY(dp_send(e, e2b, 30, c->src, BIG, 15));
	TRY(dp_send(e, e2b, 31, c->src, 10, 16));
	TRY(dp_recv(c->b, DP_ANY_SRC, 32, 0, c->dst, BIG, 17));
	TRY(dp_mr_reg(c->b, c->dst, BIG, DMAPLANE_ACCESS_REMOTE_WRITE, &mr));
	dp_close(c->b);
	c->b = NULL;
	return 0;
}

static const struct step {
	const char *name;
	int (*fn)(struct ctx *c);
	int (*prep)(struct ctx *c);	/* before it, never faulted */
} steps[] = {
	{ "open", st_open_a, NULL },
	{ "ep-setup", st_setup_a, NULL },
	{ "open-setup-peer", st_open_b, NULL },
	{ "av-insert", st_av_insert, NULL },
	{ "eager-expected", st_eager_expected, NULL },
	{ "eager-unexpected", st_eager_unexpected, NULL },
	{ "rdv-unexpected", st_rdv_unexpected, NULL },
	{ "rdv-expected", st_rdv_expected, NULL },
	{ "probe-claim", st_probe_claim, NULL },
	{ "cancel", st_cancel, NULL },
	{ "match-grow", st_match_grow, NULL },
	{ "iov", st_iov, NULL },
	{ "mr-reg-put-get", st_mr, prep_mr },
	{ "arena-put-get", st_arena, NULL },
	{ "dmabuf-export-import", st_dmabuf_export, NULL },
	{ "dma-heap-import", st_heap_import, prep_heap },
	{ "udmabuf-import", st_udmabuf_import, prep_udmabuf },
	{ "av-remove", st_av_remove, NULL },
	{ "sender-dies", st_sender_dies, NULL },
	{ "close-busy", st_close_busy, NULL },
};
#define NSTEPS ((int)(sizeof(steps) / sizeof(steps[0])))
#define BASE_STEPS 4	/* open, ep-setup, open-setup-peer, av-insert */

/* ---- fault-injection knobs -------------------------------------------- */

static int fi_write(const char *which, const char *attr, const char *val)
{
	char path[256];
	int fd, ok;

	snprintf(path, sizeof(path), FI_DIR "%s/%s", which, attr);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok ? 0 : -EIO;
}

/* Failures off (probability 0), traces on, nothing ignored. */
static int fi_reset(const char *which)
{
	static const char *const knobs[][2] = {
		{ "probability", "0" }, { "interval", "1" }, { "times", "-1" },
		{ "space", "0" }, { "task-filter", "Y" }, { "verbose", "2" },
		{ "verbose_ratelimit_interval_ms", "0" }, { "ignore-gfp-wait", "N" },
	};
	int ret = 0;

	for (unsigned int i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		ret |= fi_write(which, knobs[i][0], knobs[i][1]);
	if (!strcmp(which, "fail_page_alloc")) {
		ret |= fi_write(which, "ignore-gfp-highmem", "N");
		ret |= fi_write(which, "min-order", "0");
	}
	return ret;
}

/* ---- the kernel log: which call sites failed ----------------------------- */

#define MAX_SITES 512
static struct site {
	char name[96];		/* function+0xoffset */
	char attr[24];		/* failslab, fail_page_alloc */
	int hits;
} sites[MAX_SITES];
static int nsites, ntraces, nforeign, nmeta;
static int kmsg = -1;

static void site_add(const char *name, const char *attr)
{
	int i;

	for (i = 0; i < nsites; i++)
		if (!strcmp(sites[i].name, name))
			break;
	if (i == nsites) {
		if (nsites == MAX_SITES)
			return;
		snprintf(sites[i].name, sizeof(sites[i].name), "%s", name);
		snprintf(sites[i].attr, sizeof(sites[i].attr), "%s", attr);
		nsites++;
	} else if (!strstr(sites[i].attr, attr) && strlen(sites[i].attr) < 12) {
		strcat(sites[i].attr, "+");
		strcat(sites[i].attr, attr);
	}
	sites[i].hits++;
}

/*
 * Read the records printed since the last call.  A report is
 * "FAULT_INJECTION: forcing a failure.\nname ATTR, ..." then dump_stack():
 * "Call Trace:", "<TASK>", one frame per record, "</TASK>".  Frames marked
 * "? " are unreliable and skipped.  A failure of the debugging allocators
 * themselves (kmemleak's metadata, KASAN's stack depot) is counted apart:
 * the dmaplane allocation above it did not fail.
 */
static void kmsg_drain(void)
{
	static bool in_report;
	static char attr[24], first[96];
	static bool meta;
	char rec[2048];

	if (kmsg < 0)
		return;
	for (;;) {
		ssize_t n = read(kmsg, rec, sizeof(rec) - 1);
		char *text, *nl, *t;

		if (n < 0 && errno == EPIPE)
			continue;	/* overwritten records: go on */
		if (n <= 0)
			return;
		rec[n] = 0;
		text = strchr(rec, ';');
		if (!text)
			continue;
		text++;
		nl = strchr(text, '\n');
		if (nl)
			*nl = 0;
		if (strstr(text, "FAULT_INJECTION: forcing a failure")) {
			in_report = true;
			meta = false;
			first[0] = 0;
			attr[0] = 0;
			t = strstr(text, "name ");
			if (t)
				sscanf(t + 5, "%23[^, ]", attr);
			ntraces++;
			continue;
		}
		if (!in_report)
			continue;
		t = text;
		while (*t == ' ' || *t == '\t')
			t++;
		if (!strncmp(t, "</TASK>", 7)) {
			in_report = false;
			if (first[0])
				site_add(first, attr);
			else if (meta)
				nmeta++;
			else
				nforeign++;
			continue;
		}
		if (!strncmp(t, "? ", 2) || first[0] || meta)
			continue;
		if (strstr(t, "kmemleak") || strstr(t, "stack_depot") ||
		    strstr(t, "kasan_save")) {
			meta = true;
			continue;
		}
		if (strstr(t, " [dmaplane]")) {
			char *slash;

			snprintf(first, sizeof(first), "%s", t);
			slash = strchr(first, '/');
			if (slash)
				*slash = 0;
			else
				first[strcspn(first, " ")] = 0;
		}
	}
}

/* ---- stats --------------------------------------------------------------- */

/* Wait up to @limit s for the counters to drain; returns the time taken
 * or -1 (then @why says what is left).
 */
static double stats_drain(double limit, char *why, size_t len)
{
	double t0 = dp_test_now();

	for (;;) {
		dp_test_stats_nonzero(why, len);
		if (!why[0])
			return dp_test_now() - t0;
		if (dp_test_now() - t0 > limit)
			return -1;
		usleep(2000);
	}
}

/* ---- one child ------------------------------------------------------------ */

struct result {
	int ret;		/* step's result: 0, -errno, BUG_* */
	int step;		/* the step it came from */
	int fired;		/* the injected failure happened */
};

static void ctx_close(struct ctx *c)
{
	dp_close(c->a);
	dp_close(c->b);
}

/* Child: steps [0, faulted) clean, then the rest with failures.  For nth,
 * only step @faulted runs with fail-nth = @nth.
 */
static void child_run(int faulted, int nth, const char *which, int out)
{
	struct result r = { 0, -1, 0 };
	struct ctx c;
	int fd = -1, i;

	memset(&c, 0, sizeof(c));
	c.heap_fd = c.udmabuf_fd = -1;
	c.src = malloc(BIG + 64);
	c.dst = malloc(BIG + 64);
	if (!c.src || !c.dst)
		_exit(BUG_CHILD);
	memset(c.src, 1, BIG + 64);
	memset(c.dst, 1, BIG + 64);
	/*
	 * Steps from BASE_STEPS on need only the endpoints and address
	 * handles of the first BASE_STEPS: a faulted child replays just those.
	 */
	for (i = 0; i < (nth && faulted > BASE_STEPS ? BASE_STEPS : faulted); i++) {
		r.ret = steps[i].prep ? steps[i].prep(&c) : 0;
		if (!r.ret)
			r.ret = steps[i].fn(&c);
		if (r.ret) {
			r.step = i;
			r.ret = BUG_SETUP;
			goto out;
		}
	}
	if (nth) {
		char val[16], back[16] = "";
		int len = snprintf(val, sizeof(val), "%d", nth);

		if (steps[faulted].prep && steps[faulted].prep(&c))
			_exit(BUG_CHILD);
		fd = open("/proc/thread-self/fail-nth", O_RDWR);
		if (fd < 0 || pwrite(fd, val, len, 0) != len)
			_exit(BUG_CHILD);
		r.step = faulted;
		r.ret = steps[faulted].fn(&c);
		if (pread(fd, back, sizeof(back) - 1, 0) <= 0)
			r.fired = 1;
		else
			r.fired = atoi(back) == 0;
		if (pwrite(fd, "0", 1, 0) != 1)
			_exit(BUG_CHILD);
	} else {
		(void)which;
		fd = open("/proc/self/make-it-fail", O_WRONLY);
		if (fd < 0 || pwrite(fd, "1", 1, 0) != 1)
			_exit(BUG_CHILD);
		for (i = 0; i < NSTEPS && !r.ret; i++) {
			r.step = i;
			/* The preparation fails too here: its errno is fine. */
			r.ret = steps[i].prep ? steps[i].prep(&c) : 0;
			if (r.ret == BUG_CHILD)
				r.ret = -ENOMEM;
			if (!r.ret)
				r.ret = steps[i].fn(&c);
		}
		/* The teardown below runs with failures too. */
	}
out:
	/* The pipe's page must not fail: the result goes out unfaulted. */
	if (!nth && fd >= 0)
		(void)!pwrite(fd, "0", 1, 0);
	if (write(out, &r, sizeof(r)) != sizeof(r))
		_exit(BUG_CHILD);
	if (!nth && fd >= 0)
		(void)!pwrite(fd, "1", 1, 0);
	ctx_close(&c);
	_exit(0);
}

/* ---- the driver ------------------------------------------------------------ */

static int nfail, timeout_s = 120;
static int errnos[160];
static double worst_drain;

static bool errno_ok(int e)
{
	return e == ENOMEM || e == EFAULT || e == EAGAIN || e == ENOBUFS ||
	       e == ECONNRESET || e == ENOSPC;
}

/*
 * Run one child; returns 0 and its result, or -1 after a FAIL record
 * (crash, hang, wrong errno, bug, counters left).  A hang is fatal: the
 * stuck child cannot be reaped and the module cannot be unloaded, so the
 * sweep stops (*fatal).
 */
static int run_one(const char *label, int faulted, int nth, const char *which,
		   struct result *r, bool *fatal)
{
	int pipefd[2], status = 0, rc = 0;
	double t0 = dp_test_now(), drain;
	char why[512];
	pid_t pid;

	if (pipe(pipefd))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		close(pipefd[0]);
		child_run(faulted, nth, which, pipefd[1]);
	}
	close(pipefd[1]);
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);

		if (w == pid)
			break;
		kmsg_drain();
		if (dp_test_now() - t0 > timeout_s) {
			char path[64], buf[4096];
			int sfd;
			ssize_t n;

			printf("DMAPLANE-CASE faults/%s FAIL hang: child %d still running after %d s\n",
			       label, pid, timeout_s);
			snprintf(path, sizeof(path), "/proc/%d/stack", pid);
			sfd = open(path, O_RDONLY);
			if (sfd >= 0) {
				n = read(sfd, buf, sizeof(buf) - 1);
				if (n > 0) {
					buf[n] = 0;
					printf("# kernel stack of the stuck child:\n%s", buf);
				}
				close(sfd);
			}
			kill(pid, SIGKILL);
			nfail++;
			*fatal = true;
			close(pipefd[0]);
			return -1;
		}
		usleep(2000);
	}
	memset(r, 0, sizeof(*r));
	r->step = -1;
	if (read(pipefd[0], r, sizeof(*r)) != sizeof(*r) && WIFEXITED(status) &&
	    !WEXITSTATUS(status))
		r->ret = BUG_CHILD;
	close(pipefd[0]);
	kmsg_drain();
	if (!WIFEXITED(status)) {
		printf("DMAPLANE-CASE faults/%s FAIL child killed by signal %d\n",
		       label, WTERMSIG(status));
		rc = -1;
	} else if (WEXITSTATUS(status)) {
		printf("DMAPLANE-CASE faults/%s FAIL %s\n", label,
		       bug_names[WEXITSTATUS(status) < 6 ? WEXITSTATUS(status) : BUG_CHILD]);
		rc = -1;
	} else if (r->ret > 0) {
		printf("DMAPLANE-CASE faults/%s FAIL step %s: %s\n", label,
		       r->step >= 0 ? steps[r->step].name : "?",
		       bug_names[r->ret < 6 ? r->ret : BUG_CHILD]);
		rc = -1;
	} else if (r->ret < 0 && !errno_ok(-r->ret)) {
		printf("DMAPLANE-CASE faults/%s FAIL step %s: unexpected errno %d (%s)\n",
		       label, r->step >= 0 ? steps[r->step].name : "?", -r->ret,
		       strerror(-r->ret));
		rc = -1;
	}
	if (r->ret < 0 && -r->ret < 160)
		errnos[-r->ret]++;
	drain = stats_drain(30, why, sizeof(why));
	if (drain < 0) {
		printf("DMAPLANE-CASE faults/%s FAIL counters not back to zero after 30 s: %s\n",
		       label, why);
		rc = -1;
		*fatal = true;	/* later runs would all fail the same way */
	} else if (drain > worst_drain) {
		worst_drain = drain;
	}
	if (rc)
		nfail++;
	return rc;
}

static int sweep_nth(int max_nth)
{
	int total = 0;
	bool fatal = false;

	if (access("/proc/thread-self/fail-nth", W_OK)) {
		printf("DMAPLANE-CASE faults/nth SKIP no /proc/thread-self/fail-nth\n");
		return 0;
	}
	for (int s = 0; s < NSTEPS && !fatal; s++) {
		int fails = 0, n, before = nfail;
		double t0 = dp_test_now();

		for (n = 1; n <= max_nth && !fatal; n++) {
			char label[96];
			struct result r;

			snprintf(label, sizeof(label), "nth/%s/%d", steps[s].name, n);
			if (run_one(label, s, n, NULL, &r, &fatal))
				continue;
			if (r.step != s) {
				printf("DMAPLANE-CASE faults/%s FAIL ran step %d\n", label, r.step);
				nfail++;
				break;
			}
			if (!r.fired) {
				if (r.ret) {
					printf("DMAPLANE-CASE faults/%s FAIL failed (%d) with no failure injected\n",
					       label, r.ret);
					nfail++;
				}
				break;
			}
			if (r.ret)
				fails++;
			if (verbose)
				printf("# %s: %d\n", label, r.ret);
		}
		total += n - 1;
		printf("# nth %-22s %3d checks, %3d gave an errno, %.1f s\n",
		       steps[s].name, n - 1, fails, dp_test_now() - t0);
		if (n > max_nth) {
			printf("DMAPLANE-CASE faults/nth/%s FAIL more than %d checks\n",
			       steps[s].name, max_nth);
			nfail++;
		} else if (nfail == before) {
			printf("DMAPLANE-CASE faults/nth/%s PASS\n", steps[s].name);
		}
	}
	printf("# nth: %d injected failures in %d steps\n", total, NSTEPS);
	return 0;
}

static int sweep_prob(const char *which, int iters, int prob)
{
	int before = nfail, failed = 0, completed = 0;
	int stepped[NSTEPS + 1];
	bool fatal = false;
	char p[16];
	double t0 = dp_test_now();

	memset(stepped, 0, sizeof(stepped));
	if (fi_reset(which)) {
		printf("DMAPLANE-CASE faults/%s SKIP no %s%s\n", which, FI_DIR, which);
		return 0;
	}
	snprintf(p, sizeof(p), "%d", prob);
	fi_write(which, "probability", p);
	for (int i = 0; i < iters && !fatal; i++) {
		char label[64];
		struct result r;

		snprintf(label, sizeof(label), "%s/%d", which, i);
		if (run_one(label, 0, 0, which, &r, &fatal))
			continue;
		if (r.ret) {
			failed++;
			if (r.step >= 0)
				stepped[r.step]++;
		} else {
			completed++;
		}
	}
	fi_write(which, "probability", "0");
	printf("# %s p=%d%%: %d runs, %d stopped at an errno, %d completed, %.1f s\n",
	       which, prob, iters, failed, completed, dp_test_now() - t0);
	printf("#   errno stops by step:");
	for (int s = 0; s < NSTEPS; s++)
		if (stepped[s])
			printf(" %s=%d", steps[s].name, stepped[s]);
	printf("\n");
	if (nfail == before)
		printf("DMAPLANE-CASE faults/%s PASS\n", which);
	return 0;
}

int main(int argc, char **argv)
{
	const char *modes[4];
	int nmodes = 0, iters = 100, prob = 2, max_nth = 400, opt;
	unsigned int seed = time(NULL);
	char why[512];

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "m:i:p:s:t:n:v")) != -1) {
		switch (opt) {
		case 'm':
			if (nmodes < 4)
				modes[nmodes++] = optarg;
			break;
		case 'i': iters = atoi(optarg); break;
		case 'p': prob = atoi(optarg); break;
		case 's': seed = strtoul(optarg, NULL, 0); break;
		case 't': timeout_s = atoi(optarg); break;
		case 'n': max_nth = atoi(optarg); break;
		case 'v': verbose = 1; break;
		default:
			fprintf(stderr, "usage: %s [-m nth|failslab|fail_page_alloc]... [-i ITER] [-p PROB] [-s SEED] [-t S] [-n MAXNTH] [-v]\n",
				argv[0]);
			return 2;
		}
	}
	if (!nmodes) {
		modes[nmodes++] = "nth";
		modes[nmodes++] = "failslab";
		modes[nmodes++] = "fail_page_alloc";
	}
	srand(seed);
	printf("# faults: seed %u\n", seed);
	dp_test_stats_nonzero(why, sizeof(why));
	if (why[0]) {
		printf("DMAPLANE-CASE faults/start FAIL counters not zero before: %s\n", why);
		return 1;
	}
	/* Traces of every injected failure, in both attributes; none yet. */
	if (fi_reset("failslab") || fi_reset("fail_page_alloc")) {
		printf("DMAPLANE-CASE faults SKIP kernel without failslab/fail_page_alloc\n");
		return 0;
	}
	kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kmsg >= 0)
		lseek(kmsg, 0, SEEK_END);

	for (int m = 0; m < nmodes; m++) {
		double t0 = dp_test_now();

		if (!strcmp(modes[m], "nth"))
			sweep_nth(max_nth);
		else
			sweep_prob(modes[m], iters, prob);
		printf("# mode %s: %.1f s\n", modes[m], dp_test_now() - t0);
		fflush(stdout);
	}
	fi_reset("failslab");
	fi_reset("fail_page_alloc");
	fi_write("failslab", "verbose", "0");
	fi_write("fail_page_alloc", "verbose", "0");
	kmsg_drain();

	printf("# %d injected-failure reports: %d at a dmaplane call site, %d in the debugging allocators (kmemleak, KASAN), %d outside dmaplane\n",
	       ntraces, ntraces - nmeta - nforeign, nmeta, nforeign);
	printf("# errnos given to user space:");
	for (int e = 1; e < 160; e++)
		if (errnos[e])
			printf(" %s=%d", strerror(e), errnos[e]);
	printf("\n# worst drain time of the counters: %.3f s\n", worst_drain);
	for (int i = 0; i < nsites; i++)
		printf("# site %-48s %-22s %d\n", sites[i].name, sites[i].attr, sites[i].hits);
	if (kmsg < 0)
		printf("DMAPLANE-CASE fault-sites SKIP no /dev/kmsg\n");
	else if (nsites)
		printf("DMAPLANE-CASE fault-sites PASS %d distinct sites\n", nsites);
	else
		printf("DMAPLANE-CASE fault-sites FAIL no dmaplane call site failed\n");
	if (!nfail)
		printf("DMAPLANE-CASE faults PASS\n");
	else
		printf("DMAPLANE-CASE faults FAIL %d failures\n", nfail);
	return nfail ? 1 : 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * dp-bench: measure dmaplane against the alternatives, in the same
 * machine (or across two nodes), side by side.
 *
 *   dp-bench reg [-m MAX_BYTES] [-n ITERS] [-d IBDEV]
 *   dp-bench lat [-n ITERS]
 *   dp-bench bw [-n WINDOWS] [-b BUFS]
 *   dp-bench rate [-n WINDOWS]
 *   dp-bench bwdiag [-n WINDOWS]
 *   dp-bench overlap [-n ITERS]
 *   dp-bench scaling [-n ITERS]
 *   dp-bench path [-n ITERS]
 *   (rate and path: -o NAME[,NAME...] runs only the rows named, bw only
 *   the transports named, for a profiler: tests/run-bench.sh with
 *   DMAPLANE_BENCH_PROFILE=)
 *   dp-bench rlat|rbw|rrate --server [-p PORT]          (one node)
 *   dp-bench rlat|rbw|rrate --peer ADDR [-p PORT] [-n N] (the other)
 *
 * reg: cost of registering N bytes of already-faulted user memory --
 * cold (a fresh mapping: pin + account + notifier), cached (the same range
 * again: a registration-cache hit), ibv_reg_mr() on an RDMA device (rxe
 * under QEMU), and a plain memcpy() of the same size (and the same copy
 * with "rep movsb", the kernel's copy loop between address spaces, on
 * x86-64).  Registration is
 * worth it only when it costs less than the copy it saves.  Each cell is
 * the median of ITERS runs, in microseconds.
 *
 * lat: ping-pong between two processes, half the round trip, for
 * dmaplane (tag-matched send/recv, completions polled from the mapped
 * ring), a pipe, a UNIX socket, CMA (process_vm_writev into the peer's
 * buffer: one copy) and shared memory with two copies and a polled flag
 * (what MPI libraries do for small messages); then dp_rs, dmaplane with
 * each side's next receive posted in the same dp_submit() batch as its
 * send (one system call per message), and rs/dp, its time over
 * dmaplane's; rs_uring and rs_sqpoll, the same batches submitted through
 * io_uring (IORING_OP_URING_CMD, DMAPLANE_CAP_URING_CMD) without and with
 * IORING_SETUP_SQPOLL (no system call to submit while the kernel's
 * submission thread is awake), and sqp/rs, rs_sqpoll's time over dp_rs.
 * Each cell is the median of three runs.
 *
 * bw, rate: windows of messages (16 of each size, -w another count: OSU's
 * osu_bw sends 64; 64 of 8 bytes) from one process to the other, each
 * window acknowledged; dmaplane submits a
 * window as one batch and polls its ring.  bw's sizes go from 1 KiB to
 * 64 MiB and its cells are medians of five runs.  rate also submits the same
 * windows through io_uring (dp_uring) and io_uring with SQPOLL
 * (dp_sqpoll).  "-": this build has no liburing, or the kernel no
 * io_uring or the module no DMAPLANE_CAP_URING_CMD.
 *
 * path: where an 8-byte message's time goes (a null system call, a null
 * dmaplane ioctl, one process's RECV+SEND to itself in one dp_submit(),
 * dp_rs); see bench_path().
 *
 * rlat, rbw, rrate: lat, bw and rate between a dp-bench on each of two
 * nodes (dmaplane's remote transport), beside TCP on the connection the
 * two use to swap names; see "Across nodes" below.  rbw's windows are
 * bw's (16 messages, -w another count, as many bytes per size either
 * way).
 *
 * bw -b BUFS: dmaplane's receiver takes its messages into BUFS buffers
 * in turn (one mapping, touched), not into one, so that each is used
 * once per BUFS messages: what a buffer's registration for its messages
 * (kmod/msg.c msg_register()) costs when it is seldom reused.  The other
 * transports still use one buffer.
 *
 * -m MAX_BYTES leaves out the message sizes above MAX_BYTES in every mode
 * (make check's smoke run uses tiny sizes).  Exit status: 0, or 1 when
 * any dmaplane measurement failed (its cell says "error", or "n/a" across
 * nodes); a failing comparator (pipe, CMA, ...) only prints "error".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_LIBURING
#include <liburing.h>	/* before dmaplane.h: dp_prep_uring_submit() */
#endif
#include <dmaplane.h>

#ifdef HAVE_IBVERBS
#include <infiniband/verbs.h>
#endif

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A cell of runs: the first run's error if one failed, else their median. */
static double median_or_error(double *r, int n)
{
	for (int k = 0; k < n; k++)
		if (r[k] < 0)
			return r[k];
	return median(r, n);
}

/* A cell of a table, "error" when its runs failed. */
static void print_cell(double v)
{
	if (v < 0)
		printf(" %10s", "error");
	else
		printf(" %10.1f", v);
}

/*
 * Transparent huge pages in the buffers dp-bench maps.  Under TCG a
 * kernel copy into a PMD-mapped huge page, dmaplane's and CMA's alike,
 * runs at a fraction of its speed into small pages
 * (Documentation/bench/2026-12-02-copy-remote-thp.rst), and whether a
 * buffer got one depended on where mmap() put it: a table could compare
 * one transport copying into huge pages with another copying into small
 * ones.  So the messaging modes map every buffer in small pages
 * (THP_OFF); bwdiag's thp=on rows align every buffer of 2 MiB or more to
 * 2 MiB with MADV_HUGEPAGE (THP_ON); reg keeps the kernel's default.
 */
enum thp_mode { THP_OFF, THP_ON, THP_DEFAULT };
static enum thp_mode thp_mode = THP_OFF;
#define THP_SIZE	(2UL << 20)

/* -m: the largest message size measured */
static uint64_t max_size = 1ULL << 30;

/* -o: the only rows of rate and path to run (a comma-separated list), or NULL */
static const char *only_rows;
/* how many rows row_wanted() let run */
static int rows_run;

static int row_wanted(const char *name)
{
	size_t n = strlen(name);

	for (const char *p = only_rows; p; p = strchr(p, ',')) {
		p += *p == ',';
		if (!strncmp(p, name, n) && (p[n] == ',' || !p[n]))
			return ++rows_run;
	}
	return only_rows ? 0 : ++rows_run;
}

/* dmaplane measurements that failed: the exit status says so */
static int dp_failures;

/*
 * Fresh anonymous memory as thp_mode says, written once; at @at
 * (replacing what is there: an address this function returned for the
 * same length) or anywhere.
 */
static void *map_touched_at(void *at, size_t len)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), maplen = (len + pg - 1) / pg * pg;
	size_t align = thp_mode == THP_ON && !at && len >= THP_SIZE ? THP_SIZE : 0;
	char *p = mmap(at, maplen + align, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	if (align) {
		char *q = (char *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));

		if (q > p)
			munmap(p, q - p);
		munmap(q + maplen, p + align - q);
		p = q;
	}
	if (thp_mode != THP_DEFAULT)
		madvise(p, maplen, thp_mode == THP_ON ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	memset(p, 0xa5, len);
	return p;
}

static void *map_touched(size_t len)
{
	return map_touched_at(NULL, len);
}

/* AnonHugePages of this process, in kB (-1 when unknown). */
static long anon_huge_kb(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[128];
	long kb = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* run_stream: AnonHugePages of the receiver, with its buffer mapped */
static long last_rx_thp_kb;

static const char *fmt_size(uint64_t n, char *buf, size_t len)
{
	if (n >= 1ULL << 30)
		snprintf(buf, len, "%llu GiB", (unsigned long long)(n >> 30));
	else if (n >= 1ULL << 20)
		snprintf(buf, len, "%llu MiB", (unsigned long long)(n >> 20));
	else
		snprintf(buf, len, "%llu KiB", (unsigned long long)(n >> 10));
	return buf;
}

#define ACCESS (DMAPLANE_ACCESS_LOCAL_WRITE | DMAPLANE_ACCESS_REMOTE_READ | \
		DMAPLANE_ACCESS_REMOTE_WRITE)

/* Register a fresh mapping each time: nothing is in the cache. */
static int time_dp_cold(struct dp_ep *ep, size_t len, int iters, double *out)
{
	double t[64];
	int i, ret;

	for (i = 0; i < iters; i++) {
		struct dp_mr *mr;
		void *buf = map_touched(len);
		double t0;

		if (!buf)
			return -ENOMEM;
		t0 = now_us();
		ret = dp_mr_reg(ep, buf, len, ACCESS, &mr);
		t[i] = now_us() - t0;
		if (ret) {
			munmap(buf, len);
			return ret;
		}
		dp_mr_dereg(mr);
		munmap(buf, len);	/* invalidates the cached pinning */
	}
	*out = median(t, iters);
	return 0;
}

/* Register the same range again: served by the registration cache. */
static int time_dp_cached(struct dp_ep *ep, size_t len, int iters, double *out)
{
	void *buf = map_touched(len);
	struct dp_mr *first, *mr;
	double t[64];
	int i, ret;

	if (!buf)
		return -ENOMEM;
	ret = dp_mr_reg(ep, buf, len, ACCESS, &first);
	if (ret)
		goto out_unmap;
	for (i = 0; i < iters; i++) {
		double t0 = now_us();

		ret = dp_mr_reg(ep, buf, len, ACCESS, &mr);
		t[i] = now_us() - t0;
		if (ret)
			break;
		dp_mr_dereg(mr);
	}
	dp_mr_dereg(first);
	if (!ret)
		*out = median(t, iters);
out_unmap:
	munmap(buf, len);
	return ret;
}

/*
 * The copy loop of the kernel's copy_{to,from}_user() on a CPU with ERMS
 * (x86: "rep movsb"), run in user space: every copy between address
 * spaces (dmaplane's, CMA's) goes through it, so beside memcpy() it shows
 * what the emulated CPU makes of that loop (under QEMU TCG far less than
 * of glibc's vector memcpy()).  0 elsewhere: memcpy().
 */
static void copy_movsb(void *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
	__asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(len) : : "memory");
#else
	memcpy(dst, src, len);
#endif
}

static int time_memcpy(size_t len, int iters, int movsb, double *out)
{
	void *src = map_touched(len), *dst = map_touched(len);
	double t[64];
	int i;

	if (!src || !dst)
		return -ENOMEM;
	for (i = 0; i < iters; i++) {
		double t0 = now_us();

		if (movsb)
			copy_movsb(dst, src, len);
		else
			memcpy(dst, src, len);
		t[i] = now_us() - t0;
		((volatile char *)dst)[i % len] = 0;
	}
	munmap(src, len);
	munmap(dst, len);
	*out = median(t, iters);
	return 0;
}

#ifdef HAVE_IBVERBS
struct verbs {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
};

static int verbs_open(const char *name, struct verbs *v)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i;

	v->ctx = NULL;
	for (i = 0; list && list[i]; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name)) {
			v->ctx = ibv_open_device(list[i]);
			break;
		}
	if (list)
		ibv_free_device_list(list);
	if (!v->ctx)
		return -ENODEV;
	v->pd = ibv_alloc_pd(v->ctx);
	if (!v->pd) {
		ibv_close_device(v->ctx);
		return -ENOMEM;
	}
	return 0;
}

static int time_ibv(struct verbs *v, size_t len, int iters, double *out)
{
	double t[64];
	int i;

	for (i = 0; i < iters; i++) {
		void *buf = map_touched(len);
		struct ibv_mr *mr;
		double t0;

		if (!buf)
			return -ENOMEM;
		t0 = now_us();
		mr = ibv_reg_mr(v->pd, buf, len, IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE);
		t[i] = now_us() - t0;
		if (!mr) {
			munmap(buf, len);
			return -errno;
		}
		ibv_dereg_mr(mr);
		munmap(buf, len);
	}
	*out = median(t, iters);
	return 0;
}
#endif

static void cell(int ret, double v)
{
	if (ret)
		printf(" %12s", ret == -ENODEV ? "n/a" : "error");
	else
		printf(" %12.1f", v);
}

static int bench_reg(uint64_t max, int iters, const char *ibdev)
{
	double cold = 0, cached = 0, copy = 0, movsb = 0, ibv = 0;
	int rc_cold, rc_cached, rc_copy, rc_movsb, rc_ibv = -ENODEV;
	struct dp_ep *ep;
	uint64_t len;
	char sz[32];
	int ret;
#ifdef HAVE_IBVERBS
	struct verbs v;
	int have_verbs = !verbs_open(ibdev, &v);
#else
	(void)ibdev;
#endif

	thp_mode = THP_DEFAULT;	/* registration of memory as programs get it */

	if (iters > 64)
		iters = 64;
	ret = dp_open(NULL, 0, &ep);
	if (ret) {
		fprintf(stderr, "dp-bench: dp_open: %s\n", strerror(-ret));
		return 1;
	}
	printf("# dp-bench reg: median of %d runs, microseconds\n", iters);
	printf("%-8s %12s %12s %12s %12s %12s %12s %12s\n", "size", "memcpy",
	       "rep_movsb", "dp_cold", "dp_cached", "ibv_reg_mr", "cold/memcpy", "cold/ibv");
	for (len = 4096; len <= max; len *= len < (1ULL << 20) ? 16 : 4) {
		int n = len >= (256ULL << 20) ? (iters < 3 ? iters : 3) : iters;

		rc_copy = time_memcpy(len, n, 0, &copy);
		rc_movsb = time_memcpy(len, n, 1, &movsb);
		rc_cold = time_dp_cold(ep, len, n, &cold);
		rc_cached = time_dp_cached(ep, len, n, &cached);
#ifdef HAVE_IBVERBS
		if (have_verbs)
			rc_ibv = time_ibv(&v, len, n, &ibv);
#endif
		printf("%-8s", fmt_size(len, sz, sizeof(sz)));
		cell(rc_copy, copy);
		cell(rc_movsb, movsb);
		cell(rc_cold, cold);
		cell(rc_cached, cached);
		cell(rc_ibv, ibv);
		if (!rc_cold && !rc_copy)
			printf(" %12.2f", cold / copy);
		else
			printf(" %12s", "-");
		if (!rc_cold && !rc_ibv)
			printf(" %12.2f", cold / ibv);
		else
			printf(" %12s", "-");
		printf("\n");
		if (rc_cold)
			fprintf(stderr, "dp-bench: dp_mr_reg %s: %s\n", sz,
				strerror(-rc_cold));
		if (rc_cold || rc_cached)
			dp_failures++;
	}
#ifdef HAVE_IBVERBS
	if (have_verbs) {
		ibv_dealloc_pd(v.pd);
		ibv_close_device(v.ctx);
	}
#endif
	dp_close(ep);
	return 0;
}


/* ---- Messaging: latency, bandwidth, message rate ----------------------- */

/*
 * A transport moves one message from rank 0 to rank 1 or back.  Each
 * runs between two processes forked from the bench; buffers are
 * private to each process except for the shared-memory transport.
 */
struct xport {
	const char *name;
	int (*init)(struct xport *x, size_t max);	/* before fork */
	int (*setup)(struct xport *x, int rank);	/* after fork */
	/* optional: after both ranks, undo init() (a later run's fork inherits nothing) */
	void (*fini)(struct xport *x);
	int (*send)(struct xport *x, int rank, void *buf, size_t len);
	int (*recv)(struct xport *x, int rank, void *buf, size_t len);
	/* optional: @w messages at once (window); default: @w send/recv calls */
	int (*send_w)(struct xport *x, void *buf, size_t len, int w);
	int (*recv_w)(struct xport *x, void *buf, size_t len, int w);
	/* state */
	int fds[2][2];		/* pipes: [dir][end] */
	int sv[2];		/* socketpair */
	pid_t pid[2];
	void *peerbuf[2];	/* CMA: receive buffer of each rank */
	char *shm;		/* shared region: flag + data */
	size_t max;
	struct dp_ep *ep;
	uint32_t peer;
	struct dmaplane_name *names;	/* shared */
	void *rbuf[2];
	/* across nodes: the TCP control connection (names, steps, tcp data) */
	int remote;
	int ctl;
	/* dmaplane: how operations are submitted (enum dp_sub) */
	int sub;
	/* dmaplane: receives of up to 8 bytes take DMAPLANE_OP_F_INLINE */
	int inl;
#ifdef HAVE_LIBURING
	struct io_uring ring;
	int ring_up;
#endif
};

/*
 * How dmaplane's operations are submitted: DMAPLANE_IOCTL_SUBMIT, an
 * io_uring IORING_OP_URING_CMD (io_uring_enter() per batch), or the same
 * with IORING_SETUP_SQPOLL (the kernel's thread takes the SQE).
 */
enum dp_sub { SUB_IOCTL, SUB_URING, SUB_SQPOLL };

/*
 * dmaplane's receives of at most DMAPLANE_CQE_INLINE_MAX bytes in lat's
 * dp_rs, rate and bw ask for the payload in their completion
 * (DMAPLANE_OP_F_INLINE: no pin, no write into the receiver), copied out
 * with dp_cqe_inline(), when the module has DMAPLANE_CAP_RECV_INLINE; -I:
 * never (path's dp_rs_8B row never, its _inl rows always).
 */
static int recv_inline = 1;

static int full_write(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n <= 0)
			return -errno;
		p += n;
		len -= n;
	}
	return 0;
}

static int full_read(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n <= 0)
			return n ? -errno : -EPIPE;
		p += n;
		len -= n;
	}
	return 0;
}

/* pipe: two pipes, one per direction */
static int pipe_init(struct xport *x, size_t max)
{
	(void)max;
	return pipe(x->fds[0]) || pipe(x->fds[1]) ? -errno : 0;
}

static void pipe_fini(struct xport *x)
{
	for (int d = 0; d < 2; d++)
		for (int e = 0; e < 2; e++)
			close(x->fds[d][e]);
}

static int pipe_setup(struct xport *x, int rank)
{
	(void)x;
	(void)rank;
	return 0;
}

static int pipe_send(struct xport *x, int rank, void *buf, size_t len)
{
	return full_write(x->fds[rank][1], buf, len);
}

static int pipe_recv(struct xport *x, int rank, void *buf, size_t len)
{
	return full_read(x->fds[!rank][0], buf, len);
}

/* UNIX stream socket */
static int unix_init(struct xport *x, size_t max)
{
	int sz = max < (4 << 20) ? (int)max * 2 + 4096 : 8 << 20;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, x->sv))
		return -errno;
	for (int i = 0; i < 2; i++) {
		setsockopt(x->sv[i], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		setsockopt(x->sv[i], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	}
	return 0;
}

static void unix_fini(struct xport *x)
{
	close(x->sv[0]);
	close(x->sv[1]);
}

static int unix_send(struct xport *x, int rank, void *buf, size_t len)
{
	return full_write(x->sv[rank], buf, len);
}

static int unix_recv(struct xport *x, int rank, void *buf, size_t len)
{
	return full_read(x->sv[rank], buf, len);
}

/*
 * CMA: the sender writes straight into the receiver's buffer with
 * process_vm_writev() (one copy, as MPI's CMA path does), then says so
 * with a byte on a pipe.  Buffer addresses are the same in both
 * processes (allocated before fork).
 */
static int cma_init(struct xport *x, size_t max)
{
	for (int i = 0; i < 2; i++) {
		x->rbuf[i] = map_touched(max ? max : 1);
		if (!x->rbuf[i])
			return -ENOMEM;
	}
	return pipe_init(x, max);
}

/*
 * Each rank maps its receive buffer anew after the fork, at the address
 * both ranks know: the one cma_init() mapped is shared copy-on-write with
 * the other rank, and the first write into it split its huge pages,
 * while dmaplane's receive buffers (mapped in the rank) kept theirs, so
 * that CMA wrote into small pages where dmaplane wrote into huge ones
 * (Documentation/bench/2026-11-30-4mib-anomaly.rst).
 */
static int cma_setup(struct xport *x, int rank)
{
	char c = 0;
	int ret;

	x->pid[0] = getppid();	/* rank 1 is the child */
	if (!map_touched_at(x->rbuf[rank], x->max ? x->max : 1))
		return -ENOMEM;
	/* Neither writes into the other's buffer before it is the new one. */
	ret = full_write(x->fds[rank][1], &c, 1);
	return ret ? ret : full_read(x->fds[!rank][0], &c, 1);
}

static void cma_fini(struct xport *x)
{
	for (int i = 0; i < 2; i++) {
		munmap(x->rbuf[i], x->max ? x->max : 1);
		x->rbuf[i] = NULL;
	}
	pipe_fini(x);
}

static int cma_send(struct xport *x, int rank, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { x->rbuf[!rank], len };
	pid_t peer = rank ? x->pid[0] : x->pid[1];
	char c = 1;

	if (len && process_vm_writev(peer, &local, 1, &remote, 1, 0) != (ssize_t)len)
		return -errno;
	return full_write(x->fds[rank][1], &c, 1);
}

static int cma_recv(struct xport *x, int rank, void *buf, size_t len)
{
	char c;
	int ret = full_read(x->fds[!rank][0], &c, 1);

	/* The data is in x->rbuf[rank] already: that is the buffer. */
	(void)buf;
	(void)len;
	return ret;
}

/*
 * Shared memory, two copies (what MPI libraries do for small messages):
 * the sender copies into a shared slot and raises a flag; the receiver
 * polls the flag and copies out.
 */
static int shm_init(struct xport *x, size_t max)
{
	x->shm = mmap(NULL, 2 * (64 + max), PROT_READ | PROT_WRITE,
		      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return x->shm == MAP_FAILED ? -ENOMEM : 0;
}

static void shm_fini(struct xport *x)
{
	munmap(x->shm, 2 * (64 + x->max));
	x->shm = NULL;
}

static int shm_send(struct xport *x, int rank, void *buf, size_t len)
{
	char *slot = x->shm + rank * (64 + x->max);
	int *flag = (int *)slot;

	for (unsigned int spin = 1; __atomic_load_n(flag, __ATOMIC_ACQUIRE); spin++)
		if (!(spin % 1024))
			sched_yield();	/* oversubscribed, as MPI's sm does */
	memcpy(slot + 64, buf, len);
	__atomic_store_n(flag, 1, __ATOMIC_RELEASE);
	return 0;
}

static int shm_recv(struct xport *x, int rank, void *buf, size_t len)
{
	char *slot = x->shm + (!rank) * (64 + x->max);
	int *flag = (int *)slot;

	for (unsigned int spin = 1; !__atomic_load_n(flag, __ATOMIC_ACQUIRE); spin++)
		if (!(spin % 1024))
			sched_yield();
	memcpy(buf, slot + 64, len);
	__atomic_store_n(flag, 0, __ATOMIC_RELEASE);
	return 0;
}

/* dmaplane: tag-matched send/recv, completions polled from the ring. */
static int dp_x_init(struct xport *x, size_t max)
{
	(void)max;
	x->names = mmap(NULL, 2 * sizeof(*x->names), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (x->names == MAP_FAILED)
		return -ENOMEM;
	memset(x->names, 0, 2 * sizeof(*x->names));
	return 0;
}

static int ctl_swap(int fd, const void *mine, void *theirs, size_t len);
static const char *setup_step;	/* what failed in the last dp_x_setup */

/*
 * Swap names with the other rank: through the shared array (forked) or
 * the control connection (across nodes), each side's setup status riding
 * along so that neither waits for a name that will not come.  Returns
 * this side's status or, when it is 0, the peer's.
 */
static int swap_names(struct xport *x, int rank, int ret,
		      const struct dmaplane_name *mine, struct dmaplane_name *peer)
{
	struct { int32_t ret, pad; struct dmaplane_name name; } me, them;

	if (!x->remote) {
		if (ret)
			return ret;
		x->names[rank] = *mine;
		while (!__atomic_load_n(&x->names[!rank].ep_uid, __ATOMIC_ACQUIRE))
			usleep(100);
		*peer = x->names[!rank];
		return 0;
	}
	memset(&me, 0, sizeof(me));
	me.ret = ret;
	if (!ret)
		me.name = *mine;
	if (ctl_swap(x->ctl, &me, &them, sizeof(me))) {
		setup_step = NULL;
		return -EPIPE;
	}
	if (ret)
		return ret;
	if (them.ret) {
		setup_step = "the peer's setup";
		return them.ret;
	}
	*peer = them.name;
	return 0;
}

static int dp_x_setup(struct xport *x, int rank)
{
	struct dmaplane_name mine, peer;
	int ret;

	setup_step = "dp_open";
	ret = dp_open(NULL, 0, &x->ep);
	if (!ret) {
		setup_step = "dp_ep_setup";
		ret = dp_ep_setup(x->ep, 0, 1024);
	}
	if (!ret && recv_inline) {
		struct dmaplane_info info;

		setup_step = "dp_info";
		ret = dp_info(x->ep, &info);
		x->inl = !ret && (info.caps & DMAPLANE_CAP_RECV_INLINE);
	}
	if (!ret) {
		setup_step = "dp_getname";
		ret = dp_getname(x->ep, &mine);
	}
#ifdef HAVE_LIBURING
	if (!ret && x->sub != SUB_IOCTL) {
		struct io_uring_params p = { 0 };

		if (x->sub == SUB_SQPOLL) {
			/* Awake through a run, asleep between runs. */
			p.flags = IORING_SETUP_SQPOLL;
			p.sq_thread_idle = 50;
		}
		setup_step = "io_uring_queue_init";
		ret = io_uring_queue_init_params(8, &x->ring, &p);
		x->ring_up = !ret;
	}
#endif
	ret = swap_names(x, rank, ret, &mine, &peer);
	if (!ret) {
		setup_step = "dp_av_insert";
		ret = dp_av_insert(x->ep, &peer, &x->peer);
	}
	if (x->remote) {
		/* both sides insert; both must have, before the first send */
		int32_t me = ret, them = 0;

		if (ctl_swap(x->ctl, &me, &them, sizeof(me))) {
			setup_step = NULL;
			return -EPIPE;
		}
		if (!ret && them) {
			setup_step = "the peer's dp_av_insert";
			ret = them;
		}
	}
	return ret;
}

/*
 * Waiting for a completion: poll the ring 1024 times (-s), then sleep in
 * dp_wait() (-Y: sched_yield() and keep spinning instead, as dp-bench
 * did first).  dmaplane moves the data in the peer's system call, so a
 * waiter that keeps spinning competes for a CPU with the copy it waits
 * for whenever the two share one (2 vCPUs under TCG, a busy host): this
 * was the 4 MiB bandwidth collapse.  CMA and the pipe block in read().
 */
static int spin_yield;

/* -s: polls of the ring before a wait sleeps (or yields) */
static unsigned int spin_polls = 1024;

/* bw -b: dmaplane's receiving buffers, used in turn (see the top comment). */
static unsigned int rx_bufs = 1;
static unsigned long rx_next;

/*
 * Across nodes a completion may never come (a peer that is not up, a
 * transport bug): past this time (now_us(); 0: wait forever) a wait
 * fails with -ETIMEDOUT instead of hanging the bench.
 */
static double wait_deadline;

static int dp_take(struct dp_ep *ep, struct dmaplane_cqe *c, int max,
		   unsigned int spin)
{
	int n;

	if (spin % spin_polls)
		return dp_poll(ep, c, max);
	if (spin_yield) {
		sched_yield();
		n = dp_poll(ep, c, max);
	} else {
		n = dp_wait(ep, c, max, wait_deadline ? 1000 : -1);
	}
	if (!n && wait_deadline && now_us() > wait_deadline)
		return -ETIMEDOUT;
	return n;
}

static int dp_wait_one(struct dp_ep *ep)
{
	struct dmaplane_cqe c;
	int n;

	for (unsigned int spin = 1; !(n = dp_take(ep, &c, 1, spin)); spin++)
		;
	return n < 0 ? n : c.status;
}

#ifdef HAVE_LIBURING
/*
 * One batch through io_uring: the CQE's res (the count accepted, or
 * -errno).  Without SQPOLL io_uring_enter() issues it and the CQE is
 * there when it returns; with SQPOLL the submission thread takes it and
 * this side polls the CQ ring (no system call), sleeping in
 * io_uring_wait_cqe() only after a long spin.
 */
static int uring_submit(struct xport *x, const struct dmaplane_op *ops,
			unsigned int n)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&x->ring);
	struct io_uring_cqe *cqe;
	int ret;

	if (!sqe)
		return -EBUSY;
	dp_prep_uring_submit(sqe, dp_fd(x->ep), ops, n);
	if (x->sub == SUB_URING) {
		ret = io_uring_submit_and_wait(&x->ring, 1);
		if (ret < 0)
			return ret;
		ret = io_uring_peek_cqe(&x->ring, &cqe);
	} else {
		ret = io_uring_submit(&x->ring);
		if (ret < 0)
			return ret;
		/*
		 * Yield to the submission thread a few times (it may share
		 * this CPU), then sleep: a waiter that keeps spinning takes
		 * the CPU the thread needs when there are fewer CPUs than
		 * busy threads (two ranks and two SQPOLL threads on 2 vCPUs).
		 */
		for (unsigned int spin = 1;
		     (ret = io_uring_peek_cqe(&x->ring, &cqe)) == -EAGAIN; spin++) {
			if (spin > 64) {
				ret = io_uring_wait_cqe(&x->ring, &cqe);
				break;
			}
			sched_yield();
		}
	}
	if (ret)
		return ret;
	ret = cqe->res;
	io_uring_cqe_seen(&x->ring, cqe);
	return ret;
}

/*
 * Can this kernel and module take operations through io_uring (with
 * SQPOLL when @sqpoll)?  0, or -EOPNOTSUPP.
 */
static int uring_usable(int sqpoll)
{
	struct io_uring_params p = { .flags = sqpoll ? IORING_SETUP_SQPOLL : 0 };
	struct dmaplane_info info;
	struct io_uring ring;
	struct dp_ep *ep;
	int ret;

	if (dp_open(NULL, 0, &ep))
		return -EOPNOTSUPP;
	ret = dp_info(ep, &info);
	dp_close(ep);
	if (ret || !(info.caps & DMAPLANE_CAP_URING_CMD))
		return -EOPNOTSUPP;
	if (io_uring_queue_init_params(2, &ring, &p))
		return -EOPNOTSUPP;
	io_uring_queue_exit(&ring);
	return 0;
}
#else
static int uring_usable(int sqpoll)
{
	(void)sqpoll;
	return -EOPNOTSUPP;
}
#endif

/* Submit a batch the xport's way: as dp_submit(), count or -errno. */
static int x_submit(struct xport *x, const struct dmaplane_op *ops,
		    unsigned int n)
{
#ifdef HAVE_LIBURING
	if (x->sub != SUB_IOCTL)
		return uring_submit(x, ops, n);
#endif
	return dp_submit(x->ep, ops, n);
}

static int dp_x_send(struct xport *x, int rank, void *buf, size_t len)
{
	struct dmaplane_op op;
	int ret;

	(void)rank;
	if (x->sub == SUB_IOCTL) {
		while ((ret = dp_send(x->ep, x->peer, 1, buf, len, 0)) == -EAGAIN)
			;
	} else {
		dp_prep_send(&op, x->peer, 1, buf, len, 0);
		while ((ret = x_submit(x, &op, 1)) == -EAGAIN)
			;
		ret = ret < 0 ? ret : 0;
	}
	return ret ? ret : dp_wait_one(x->ep);
}

static int dp_x_recv(struct xport *x, int rank, void *buf, size_t len)
{
	struct dmaplane_op op;
	int ret;

	(void)rank;
	if (x->sub == SUB_IOCTL) {
		ret = dp_recv(x->ep, x->peer, 1, 0, buf, len, 0);
	} else {
		dp_prep_recv(&op, x->peer, 1, 0, buf, len, 0);
		ret = x_submit(x, &op, 1);
		ret = ret < 0 ? ret : 0;
	}
	return ret ? ret : dp_wait_one(x->ep);
}

/* The most messages dmaplane's window holds (bw -w): its arrays below. */
#define WINDOW_MAX	256

static int dp_x_window(struct xport *x, int opcode, void *buf, size_t len, int w)
{
	struct dmaplane_op ops[WINDOW_MAX];
	struct dmaplane_cqe c[WINDOW_MAX];
	int done = 0, got = 0, n;

	for (int i = 0; i < w; i++) {
		memset(&ops[i], 0, sizeof(ops[i]));
		ops[i].opcode = opcode;
		ops[i].peer = x->peer;
		ops[i].tag = 1;
		ops[i].addr = (uintptr_t)buf;
		ops[i].len = len;
		if (opcode == DMAPLANE_OP_RECV && rx_bufs > 1)
			ops[i].addr += rx_next++ % rx_bufs * len;
		if (opcode == DMAPLANE_OP_RECV && x->inl && len <= DMAPLANE_CQE_INLINE_MAX)
			ops[i].flags = DMAPLANE_OP_F_INLINE;
		/* where an inline payload goes (dp_cqe_inline() below) */
		ops[i].ctx = ops[i].addr;
	}
	while (done < w) {
		n = x_submit(x, ops + done, w - done);
		if (n == -EAGAIN) {
			n = dp_poll(x->ep, c, WINDOW_MAX);
			if (n < 0)
				return n;
			for (int i = 0; i < n; i++) {
				if (c[i].status)
					return c[i].status;
				dp_cqe_inline(&c[i], (void *)(uintptr_t)c[i].ctx);
			}
			got += n;
			continue;
		}
		if (n < 0)
			return n;
		done += n;
	}
	for (unsigned int spin = 1; got < w;) {
		n = dp_take(x->ep, c, WINDOW_MAX, spin);
		if (n < 0)
			return n;
		for (int i = 0; i < n; i++) {
			if (c[i].status)
				return c[i].status;
			dp_cqe_inline(&c[i], (void *)(uintptr_t)c[i].ctx);
		}
		got += n;
		spin = n ? 1 : spin + 1;
	}
	return 0;
}

static int dp_x_send_w(struct xport *x, void *buf, size_t len, int w)
{
	return dp_x_window(x, DMAPLANE_OP_SEND, buf, len, w);
}

static int dp_x_recv_w(struct xport *x, void *buf, size_t len, int w)
{
	return dp_x_window(x, DMAPLANE_OP_RECV, buf, len, w);
}

static struct xport xports[] = {
	{ .name = "dmaplane", .init = dp_x_init, .setup = dp_x_setup,
	  .send = dp_x_send, .recv = dp_x_recv,
	  .send_w = dp_x_send_w, .recv_w = dp_x_recv_w },
	{ .name = "pipe", .init = pipe_init, .setup = pipe_setup, .fini = pipe_fini,
	  .send = pipe_send, .recv = pipe_recv },
	{ .name = "unix", .init = unix_init, .setup = pipe_setup, .fini = unix_fini,
	  .send = unix_send, .recv = unix_recv },
	{ .name = "cma", .init = cma_init, .setup = cma_setup, .fini = cma_fini,
	  .send = cma_send, .recv = cma_recv },
	{ .name = "shm2copy", .init = shm_init, .setup = pipe_setup, .fini = shm_fini,
	  .send = shm_send, .recv = shm_recv },
};
#define NR_XPORTS (sizeof(xports) / sizeof(xports[0]))

/*
 * A measurement is a pair of rank bodies: rank 0 measures and returns its
 * result (microseconds, messages per second) or a negative errno; rank 1
 * serves and returns 0 or a negative errno.  The bodies run after both
 * ranks' setup, in two forked processes (run_forked) or one process on
 * each node (run_remote).
 */
struct run_args {
	size_t len;
	int iters;	/* lat: round trips; stream: windows */
	int w;		/* stream: messages per window */
};

typedef double (*rank_fn)(struct xport *x, int rank, const struct run_args *a,
			  double *aux);

/*
 * The round trips of a latency run before its clock starts (OSU's skip):
 * a tenth of the run, at least two (the first round trips fault in
 * buffers and ring pages and wake the peer from its first sleep).
 */
static int lat_warmup(int iters)
{
	return iters / 10 > 2 ? iters / 10 : 2;
}

/* Latency: ping-pong, half the round trip, after lat_warmup()'s rounds. */
static double lat_rank(struct xport *x, int rank, const struct run_args *a,
		       double *aux)
{
	void *buf = map_touched(a->len ? a->len : 1);
	void *rb = x->rbuf[rank] ? x->rbuf[rank] : buf;
	double t0 = 0;
	int ret = 0;

	(void)aux;
	if (!buf)
		return -ENOMEM;
	for (int i = 0; !ret && i < a->iters + lat_warmup(a->iters); i++) {
		if (rank) {
			ret = x->recv(x, rank, rb, a->len);
			if (!ret)
				ret = x->send(x, rank, rb, a->len);
			continue;
		}
		if (i == lat_warmup(a->iters))
			t0 = now_us();
		ret = x->send(x, 0, buf, a->len);
		if (!ret)
			ret = x->recv(x, 0, rb, a->len);
	}
	munmap(buf, a->len ? a->len : 1);
	if (ret || rank)
		return ret;
	return (now_us() - t0) / a->iters / 2;
}

/*
 * dp_rs: reap completions of a batched ping-pong until @want_got receives
 * (ctx 1) and @want_sent sends (ctx 2) have completed; a receive's inline
 * payload goes to @rb.
 */
static int rs_reap(struct dp_ep *ep, int *got, int *sent, int want_got,
		   int want_sent, void *rb)
{
	struct dmaplane_cqe c[4];

	for (unsigned int spin = 1; *got < want_got || *sent < want_sent;) {
		int n = dp_take(ep, c, 4, spin);

		if (n < 0)
			return n;
		for (int i = 0; i < n; i++) {
			if (c[i].status)
				return c[i].status;
			if (c[i].ctx == 1) {
				dp_cqe_inline(&c[i], rb);
				(*got)++;
			} else
				(*sent)++;
		}
		spin = n ? 1 : spin + 1;
	}
	return 0;
}

/* Submit all of @ops (a full ring makes dp_submit() take fewer). */
static int rs_submit(struct xport *x, struct dmaplane_op *ops, int n)
{
	for (int done = 0; done < n;) {
		int ret = x_submit(x, ops + done, n - done);

		if (ret < 0 && ret != -EAGAIN)
			return ret;
		if (ret > 0)
			done += ret;
	}
	return 0;
}

/*
 * Latency over dmaplane with one system call per message: each side posts
 * its receive for the next message in the same dp_submit() batch as its
 * send (RECV then SEND), so every message finds its receive posted (one
 * copy, straight into it) and nobody calls dp_recv() on its own.  Half
 * the round trip, after lat_warmup()'s rounds, as lat_rank().
 */
static double lat_rs_rank(struct xport *x, int rank, const struct run_args *a,
			  double *aux)
{
	size_t len = a->len ? a->len : 1;
	char *sb = map_touched(len), *rb = map_touched(len);
	int total = a->iters + lat_warmup(a->iters), got = 0, sent = 0, ret = 0;
	struct dmaplane_op ops[2];
	double t0 = 0;

	(void)aux;
	if (!sb || !rb) {
		ret = -ENOMEM;
		goto out;
	}
	dp_prep_recv(&ops[0], x->peer, 1, 0, rb, a->len, 1);
	if (x->inl && a->len <= DMAPLANE_CQE_INLINE_MAX)
		dp_prep_set_flags(&ops[0], DMAPLANE_OP_F_INLINE);
	dp_prep_send(&ops[1], x->peer, 1, sb, a->len, 2);
	if (rank)
		ret = rs_submit(x, ops, 1);
	for (int i = 0; !ret && i < total; i++) {
		if (!rank) {
			if (i == lat_warmup(a->iters))
				t0 = now_us();
			ret = rs_submit(x, ops, 2);
			if (!ret)
				ret = rs_reap(x->ep, &got, &sent, i + 1, i + 1, rb);
			continue;
		}
		/* the ping; then the next receive (if any) and the pong */
		ret = rs_reap(x->ep, &got, &sent, i + 1, 0, rb);
		if (!ret)
			ret = i + 1 < total ? rs_submit(x, ops, 2) :
					      rs_submit(x, ops + 1, 1);
	}
	if (!ret && rank)
		ret = rs_reap(x->ep, &got, &sent, total, total, rb);
out:
	if (sb)
		munmap(sb, len);
	if (rb)
		munmap(rb, len);
	if (ret || rank)
		return ret;
	return (now_us() - t0) / a->iters / 2;
}

static int send_window(struct xport *x, int rank, void *buf, size_t len, int w)
{
	if (x->send_w)
		return x->send_w(x, buf, len, w);
	for (int i = 0; i < w; i++) {
		int ret = x->send(x, rank, buf, len);

		if (ret)
			return ret;
	}
	return 0;
}

static int recv_window(struct xport *x, int rank, void *buf, size_t len, int w)
{
	if (x->recv_w)
		return x->recv_w(x, buf, len, w);
	for (int i = 0; i < w; i++) {
		int ret = x->recv(x, rank, x->rbuf[rank] ? x->rbuf[rank] : buf, len);

		if (ret)
			return ret;
	}
	return 0;
}

/*
 * Streaming: rank 0 sends windows of @w messages, rank 1 receives them
 * and answers each window with a 1-byte message; one warm-up window.
 * Rank 0 returns messages per second; rank 1 puts its AnonHugePages (kB,
 * with its buffer mapped) in *aux.
 */
static double stream_rank(struct xport *x, int rank, const struct run_args *a,
			  double *aux)
{
	size_t blen = (a->len ? a->len : 1) * (rank && x->recv_w ? rx_bufs : 1);
	void *buf = map_touched(blen);
	char ack[8] = { 0 };
	double t0 = 0;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	if (aux)
		*aux = anon_huge_kb();
	for (int i = 0; !ret && i < a->iters + 1; i++) {
		if (rank) {
			ret = recv_window(x, 1, buf, a->len, a->w);
			if (!ret)
				ret = x->send(x, 1, ack, 1);
			continue;
		}
		if (i == 1)
			t0 = now_us();
		ret = send_window(x, 0, buf, a->len, a->w);
		if (!ret)
			ret = x->recv(x, 0, x->rbuf[0] ? x->rbuf[0] : ack, 1);
	}
	munmap(buf, blen);
	if (ret || rank)
		return ret;
	return (double)a->iters * a->w / ((now_us() - t0) / 1e6);
}

/* Two processes on this node: rank 1 in a forked child. */
static double run_forked(struct xport *x, rank_fn fn, const struct run_args *a)
{
	double *res = mmap(NULL, 2 * sizeof(double), PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int status, ret;
	double out;
	pid_t pid;

	x->max = a->len;
	if (res == MAP_FAILED || x->init(x, a->len))
		return -ENOMEM;
	x->pid[1] = 0;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		x->pid[1] = getpid();
		if (x->setup(x, 1))
			_exit(1);
		_exit(fn(x, 1, a, &res[1]) ? 2 : 0);
	}
	x->pid[1] = pid;
	ret = x->setup(x, 0);
	res[0] = ret ? ret : fn(x, 0, a, NULL);
	waitpid(pid, &status, 0);
	if (x->fini)
		x->fini(x);
	out = res[0];
	last_rx_thp_kb = (long)res[1];
	munmap(res, 2 * sizeof(double));
#ifdef HAVE_LIBURING
	if (x->ring_up)
		io_uring_queue_exit(&x->ring);
	x->ring_up = 0;
#endif
	if (x->ep)
		dp_close(x->ep);
	x->ep = NULL;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? out : -EIO;
}

static double run_latency(struct xport *x, size_t len, int iters)
{
	struct run_args a = { .len = len, .iters = iters };

	return run_forked(x, lat_rank, &a);
}

static double run_latency_rs(size_t len, int iters, int sub)
{
	struct run_args a = { .len = len, .iters = iters };
	struct xport x = xports[0];	/* dmaplane */

	x.sub = sub;
	return run_forked(&x, lat_rs_rank, &a);
}

static double run_stream(struct xport *x, size_t len, int w, int windows)
{
	struct run_args a = { .len = len, .iters = windows, .w = w };

	return run_forked(x, stream_rank, &a);
}

/*
 * lat's cells: the median of LAT_RUNS runs, the transports taking turns
 * (a stall of the host of a few milliseconds, once in a run of 200
 * round trips, moved a cell's mean by half).
 */
#define LAT_RUNS	3

/* lat's columns: the transports, then dp_rs, rs_uring and rs_sqpoll. */
enum { LAT_RS = NR_XPORTS, LAT_URING, LAT_SQPOLL, NR_LAT };

static double lat_run(unsigned int col, size_t len, int n)
{
	struct xport x;

	if (col < NR_XPORTS) {
		x = xports[col];
		return run_latency(&x, len, n);
	}
	return run_latency_rs(len, n, col == LAT_RS ? SUB_IOCTL :
			      col == LAT_URING ? SUB_URING : SUB_SQPOLL);
}

static void lat_ratio(double a, double b, int width)
{
	if (a > 0 && b > 0)
		printf(" %*.2f", width, a / b);
	else
		printf(" %*s", width, "-");
}

static int bench_lat(int iters)
{
	static const size_t sizes[] = { 8, 64, 1024, 16384, 65536, 1 << 20, 4 << 20 };
	int usable[NR_LAT];
	char sz[32];

	for (unsigned int c = 0; c < NR_LAT; c++)
		usable[c] = 1;
	usable[LAT_URING] = !uring_usable(0);
	usable[LAT_SQPOLL] = !uring_usable(1);
	printf("# dp-bench lat: half round trip, microseconds (median of %d runs of %d\n"
	       "# iterations; lower is better)\n", LAT_RUNS, iters);
	printf("%-8s", "size");
	for (unsigned int t = 0; t < NR_XPORTS; t++)
		printf(" %10s", xports[t].name);
	printf(" %12s %10s %8s %10s %10s %8s\n", "dp/pipe", "dp_rs", "rs/dp",
	       "rs_uring", "rs_sqpoll", "sqp/rs");
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		double v[NR_LAT], r[NR_LAT][LAT_RUNS];
		int n = sizes[i] >= (1 << 20) ? (iters + 9) / 10 : iters;

		if (sizes[i] > max_size)
			break;
		printf("%-8s", sizes[i] < 1024 ? (snprintf(sz, sizeof(sz), "%zu B", sizes[i]), sz) :
		       fmt_size(sizes[i], sz, sizeof(sz)));
		fflush(stdout);
		for (unsigned int k = 0; k < LAT_RUNS; k++)
			for (unsigned int c = 0; c < NR_LAT; c++)
				r[c][k] = usable[c] ? lat_run(c, sizes[i], n) : 0;
		for (unsigned int c = 0; c < NR_LAT; c++) {
			v[c] = median_or_error(r[c], LAT_RUNS);
			/* dmaplane's own columns failing fails the bench */
			if (v[c] < 0 && (c == 0 || c >= LAT_RS))
				dp_failures++;
		}
		for (unsigned int t = 0; t < NR_XPORTS; t++)
			print_cell(v[t]);
		lat_ratio(v[0], v[1], 12);
		print_cell(v[LAT_RS]);
		lat_ratio(v[LAT_RS], v[0], 8);
		for (unsigned int c = LAT_URING; c <= LAT_SQPOLL; c++) {
			if (usable[c])
				print_cell(v[c]);
			else
				printf(" %10s", "-");
		}
		lat_ratio(usable[LAT_SQPOLL] ? v[LAT_SQPOLL] : 0, v[LAT_RS], 8);
		printf("\n");
	}
	return 0;
}

/*
 * bw's cells: the median of BW_RUNS runs (one run at 1-4 MiB moved by
 * half between two runs on a busy host; with three, one size of 1 to
 * 64 MiB came out 0-4% below the best in two make bench runs of
 * 2026-12-07 and 16-17% in two others).  Five did not settle that in
 * their first run (1 MiB 20% below: Documentation/bench/
 * 2026-12-07-ef0c165.rst): the host's speed moves whole runs.
 */
#define BW_RUNS		5

/*
 * bw's messages per window (-w): 16.  OSU's osu_bw and osu_bibw send 64
 * (OMB's window_size): -w 64, measured in
 * Documentation/bench/2026-12-06-window-64.rst.
 */
static int bw_window = 16;

/*
 * bw's windows at SIZE of @w messages: as many bytes as @windows windows
 * of 16 messages moved at SIZE: all of those up to 64 KiB, a tenth from
 * 1 MiB, a fortieth from 16 MiB; at least 2 (1 from 16 MiB, where a window
 * of 64 is 1-4 GiB).
 */
static int bw_windows(int windows, size_t size, int w)
{
	int n, least;

	if (size >= (16 << 20))
		n = windows >= 80 ? windows / 40 : 2;
	else
		n = size >= (1 << 20) ? (windows + 9) / 10 : windows;
	n = n * 16 / w;
	least = size >= (16 << 20) ? 1 : 2;
	return n > least ? n : least;
}

static int bench_bw(int windows)
{
	static const size_t sizes[] = { 1024, 16384, 65536, 1 << 20, 4 << 20,
					16 << 20, 64 << 20 };
	enum { NR_SIZES = sizeof(sizes) / sizeof(sizes[0]) };
	static double r[NR_SIZES][NR_XPORTS][BW_RUNS];
	int want[NR_XPORTS];
	char sz[32];

	/* -o: only the transports named */
	for (unsigned int t = 0; t < NR_XPORTS; t++)
		want[t] = row_wanted(xports[t].name);
	printf("# dp-bench bw: window of %d messages, MB/s (higher is better), median of %d\n"
	       "# runs, every cell's in turn; buffers in small pages (bwdiag: with huge pages)\n",
	       bw_window, BW_RUNS);
	printf("%-8s", "size");
	for (unsigned int t = 0; t < NR_XPORTS; t++)
		printf(" %10s", xports[t].name);
	printf(" %12s %12s\n", "dp/cma", "dp/shm2copy");
	/*
	 * The runs take turns, transports within a size and sizes within a
	 * round: a slow spell of the host hits every cell alike, so neither
	 * dp/cma nor one size against another is a sample of its seconds.
	 */
	for (unsigned int k = 0; k < BW_RUNS; k++)
		for (unsigned int i = 0; i < NR_SIZES && sizes[i] <= max_size; i++)
			for (unsigned int t = 0; t < NR_XPORTS; t++) {
				struct xport x = xports[t];

				if (want[t])
					r[i][t][k] = run_stream(&x, sizes[i], bw_window,
								bw_windows(windows, sizes[i],
									   bw_window));
			}
	for (unsigned int i = 0; i < NR_SIZES && sizes[i] <= max_size; i++) {
		double v[NR_XPORTS] = { 0 };

		printf("%-8s", fmt_size(sizes[i], sz, sizeof(sz)));
		for (unsigned int t = 0; t < NR_XPORTS; t++) {
			if (!want[t]) {
				printf(" %10s", "-");
				continue;
			}
			v[t] = median_or_error(r[i][t], BW_RUNS);
			if (v[t] < 0 && !t)
				dp_failures++;
			print_cell(v[t] < 0 ? v[t] : v[t] * sizes[i] / 1e6);
		}
		printf(" %12.2f %12.2f\n", v[0] > 0 && v[3] > 0 ? v[0] / v[3] : 0,
		       v[0] > 0 && v[4] > 0 ? v[0] / v[4] : 0);
	}
	fflush(stdout);
	return 0;
}

static int bench_rate(int windows)
{
	printf("# dp-bench rate: 8-byte messages, window 64, messages/s (higher is better)\n");
	for (unsigned int t = 0; t < NR_XPORTS; t++) {
		struct xport x = xports[t];
		double v;

		if (!row_wanted(xports[t].name))
			continue;
		v = run_stream(&x, 8, 64, windows);
		if (v < 0 && !t)
			dp_failures++;
		if (v < 0)
			printf("%-10s %12s\n", xports[t].name, "error");
		else
			printf("%-10s %12.0f\n", xports[t].name, v);
	}
	/* dmaplane's windows again, submitted through io_uring. */
	for (int sub = SUB_URING; sub <= SUB_SQPOLL; sub++) {
		const char *name = sub == SUB_URING ? "dp_uring" : "dp_sqpoll";
		struct xport x = xports[0];
		double v;

		if (!row_wanted(name))
			continue;
		if (uring_usable(sub == SUB_SQPOLL)) {
			printf("%-10s %12s\n", name, "-");
			continue;
		}
		x.sub = sub;
		v = run_stream(&x, 8, 64, windows);
		if (v < 0) {
			dp_failures++;
			printf("%-10s %12s\n", name, "error");
		} else {
			printf("%-10s %12.0f\n", name, v);
		}
	}
	return 0;
}

/*
 * path: where an 8-byte message's microseconds go.  A null system call
 * (getppid), a null dmaplane ioctl (DMAPLANE_IOCTL_INFO), a look at an
 * empty completion ring (dp_poll(): no system call), then one process
 * posting a receive and sending to itself in one dp_submit() and reaping
 * both completions: the kernel path of one message (check, match, copy
 * into the posted buffer, two completions) with no second process and no
 * wake-up, without payload, with 8 bytes, and with the receive buffer
 * registered (copied through the registration cache's pages).  Last,
 * dp_rs: lat's ping-pong with one dp_submit() per message, half the
 * round trip.  Each half of it is one such submission plus the other
 * side's polling, so dp_rs is at least the 8-byte self row: the floor a
 * kernel-matched message has on this machine.  Median of 3 runs of
 * ITERS operations each (ITERS x 100 for the rows without a message).
 */
static int path_self(struct dp_ep *ep, struct dmaplane_op *ops, int iters,
		     double *us)
{
	void *rb = (void *)(uintptr_t)ops[0].addr;
	struct xport x = xports[0];	/* dmaplane, through dp_submit() */
	double t0 = now_us();
	int got = 0, sent = 0, ret;

	x.ep = ep;
	x.sub = SUB_IOCTL;
	for (int i = 0; i < iters; i++) {
		ret = rs_submit(&x, ops, 2);
		if (!ret)
			ret = rs_reap(ep, &got, &sent, i + 1, i + 1, rb);
		if (ret)
			return ret;
	}
	*us = (now_us() - t0) / iters;
	return 0;
}

enum { PATH_SYSCALL, PATH_IOCTL, PATH_POLL, PATH_SELF0, PATH_SELF8,
       PATH_SELF8_REG, PATH_SELF8_INL, PATH_RS, PATH_RS_INL, NR_PATH };

static const char *const path_names[NR_PATH] = {
	"getppid", "ioctl_info", "dp_poll_empty", "self_0B", "self_8B",
	"self_8B_reg", "self_8B_inl", "dp_rs_8B", "dp_rs_8B_inl",
};

static const char *const path_what[NR_PATH] = {
	"a null system call",
	"a null dmaplane ioctl",
	"a look at an empty ring (no system call)",
	"RECV+SEND to itself in one dp_submit(), 0 bytes",
	"the same, 8 bytes copied into the posted buffer",
	"the same, the receive buffer registered",
	"self_8B, the receive DMAPLANE_OP_F_INLINE (payload in the completion)",
	"ping-pong between two processes, half round trip",
	"the same, the receives DMAPLANE_OP_F_INLINE",
};

static int path_measure(int row, struct dp_ep *ep, uint32_t self,
			char *buf, int iters, double *us)
{
	struct dmaplane_op ops[2];
	struct dmaplane_info info;
	struct dmaplane_cqe c;
	struct dp_mr *mr = NULL;
	double t0;
	int ret = 0;

	switch (row) {
	case PATH_SYSCALL:
	case PATH_IOCTL:
	case PATH_POLL:
		t0 = now_us();
		for (int i = 0; i < iters * 100 && !ret; i++) {
			if (row == PATH_SYSCALL)
				ret = syscall(SYS_getppid) >= 0 ? 0 : -errno;
			else if (row == PATH_IOCTL)
				ret = dp_info(ep, &info);
			else
				ret = dp_poll(ep, &c, 1);
		}
		if (ret < 0)
			return ret;
		if (ret > 0)
			return -EPROTO;	/* an empty ring gave a completion */
		*us = (now_us() - t0) / (iters * 100);
		return 0;
	case PATH_SELF8_REG:
		ret = dp_mr_reg(ep, buf + 4096, 4096, DMAPLANE_ACCESS_LOCAL_WRITE, &mr);
		if (ret)
			return ret;
		/* fall through */
	case PATH_SELF0:
	case PATH_SELF8:
	case PATH_SELF8_INL:
		memset(buf + 4096, 0, 8);
		dp_prep_recv(&ops[0], self, 1, 0, buf + 4096,
			     row == PATH_SELF0 ? 0 : 8, 1);
		if (row == PATH_SELF8_INL)
			dp_prep_set_flags(&ops[0], DMAPLANE_OP_F_INLINE);
		dp_prep_send(&ops[1], self, 1, buf, row == PATH_SELF0 ? 0 : 8, 2);
		ret = path_self(ep, ops, iters, us);
		if (!ret && row != PATH_SELF0 && memcmp(buf, buf + 4096, 8))
			ret = -EIO;	/* the payload did not arrive */
		if (mr)
			dp_mr_dereg(mr);
		return ret;
	default: {
		int inl = recv_inline;

		recv_inline = row == PATH_RS_INL;
		*us = run_latency_rs(8, iters, SUB_IOCTL);
		recv_inline = inl;
		return *us < 0 ? (int)*us : 0;
	}
	}
}

static int bench_path(int iters)
{
	struct dmaplane_name name;
	char *buf = map_touched(8192);
	struct dp_ep *ep = NULL;
	uint32_t self;
	int ret;

	printf("# dp-bench path: where an 8-byte message's time goes, microseconds\n"
	       "# (median of 3 runs of %d operations; x_ioctl: over a null dmaplane ioctl)\n",
	       iters);
	if (!buf)
		return -ENOMEM;
	for (int i = 0; i < 8; i++)
		buf[i] = (char)(rand() | 1);
	ret = dp_open(NULL, 0, &ep);
	if (!ret)
		ret = dp_ep_setup(ep, 0, 1024);
	if (!ret)
		ret = dp_getname(ep, &name);
	if (!ret)
		ret = dp_av_insert(ep, &name, &self);
	if (ret) {
		fprintf(stderr, "dp-bench path: endpoint: %s\n", strerror(-ret));
		dp_failures++;
		goto out;
	}
	printf("%-14s %10s %8s  %s\n", "step", "us", "x_ioctl", "what");
	{
		double med[NR_PATH] = { 0 };

		for (int row = 0; row < NR_PATH; row++) {
			double v[3];

			if (!row_wanted(path_names[row]))
				continue;
			ret = 0;
			for (int k = 0; k < 3 && !ret; k++)
				ret = path_measure(row, ep, self, buf, iters, &v[k]);
			if (ret) {
				dp_failures++;
				med[row] = -1;
				printf("%-14s %10s %8s  %s (%s)\n", path_names[row],
				       "error", "-", path_what[row], strerror(-ret));
				continue;
			}
			med[row] = median(v, 3);
			printf("%-14s %10.3f", path_names[row], med[row]);
			if (med[PATH_IOCTL] > 0 && row != PATH_IOCTL)
				printf(" %8.2f", med[row] / med[PATH_IOCTL]);
			else
				printf(" %8s", "-");
			printf("  %s\n", path_what[row]);
			fflush(stdout);
		}
	}
	ret = 0;
out:
	if (ep)
		dp_close(ep);
	munmap(buf, 8192);
	return ret;
}

/*
 * bwdiag: the 4 MiB bandwidth anomaly.  dmaplane and CMA streams at
 * 1-4, 16 and 64 MiB, window 16 (as bw) and window 1, with the buffers of 2 MiB or
 * more backed by transparent huge pages (thp=on: 2 MiB aligned,
 * MADV_HUGEPAGE) and without (thp=off: MADV_NOHUGEPAGE, as every other
 * mode maps them: see thp_mode),
 * dmaplane's waiter spinning (sched_yield every 1024 polls, as bw did at
 * first) or sleeping in dp_wait() after 1024 polls (now the default).
 * dp-rx-THP and cma-rx-THP: the receiver's AnonHugePages (kB) with its
 * buffer mapped, in the dp-block w16 run and in the cma w16 run (both map
 * the receive buffer in the receiving process: see cma_setup()).
 */
static int bench_bwdiag(int windows)
{
	static const size_t sizes[] = { 1 << 20, 2 << 20, 3 << 20, 4 << 20,
					16 << 20, 64 << 20 };
	static const int ws[] = { 16, 1 };
	char sz[32];

	printf("# dp-bench bwdiag: MB/s, %d windows; thp=on: buffers 2 MiB aligned with\n"
	       "# MADV_HUGEPAGE, thp=off: MADV_NOHUGEPAGE (as in every other mode)\n",
	       windows);
	printf("%-8s %-5s %12s %12s %12s %10s %10s %10s %10s\n", "size", "thp",
	       "dp-spin w16", "dp-block w16", "dp-block w1", "cma w16", "cma w1",
	       "dp-rx-THP", "cma-rx-THP");
	for (int h = 0; h < 2; h++)
		for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			long thp_kb = -1, cma_thp_kb = -1;

			if (sizes[i] > max_size)
				break;
			thp_mode = h ? THP_OFF : THP_ON;
			printf("%-8s %-5s", fmt_size(sizes[i], sz, sizeof(sz)),
			       h ? "off" : "on");
			for (int t = 0; t < 5; t++) {
				struct xport x = xports[t < 3 ? 0 : 3];
				int w = ws[t == 2 || t == 4];
				double v;

				spin_yield = t == 0;
				v = run_stream(&x, sizes[i], w, windows * 16 / w);
				spin_yield = 0;
				if (t == 1)
					thp_kb = last_rx_thp_kb;
				if (t == 3)
					cma_thp_kb = last_rx_thp_kb;
				if (v < 0 && t < 3)
					dp_failures++;
				if (v < 0)
					printf(" %*s", t < 3 ? 12 : 10, "error");
				else
					printf(" %*.1f", t < 3 ? 12 : 10, v * sizes[i] / 1e6);
				fflush(stdout);
			}
			printf(" %10ld %10ld\n", thp_kb, cma_thp_kb);
		}
	thp_mode = THP_OFF;
	return 0;
}

/* ---- Overlap of communication and computation (Sandia SMB method) ------ */

/*
 * The receiver posts a receive for a large message, computes for a set
 * time without calling the library, then waits for the data.  t_xfer:
 * post and wait, nothing between; t_work: the work alone; t_both: post,
 * work, wait.  overlap = 1 - (t_both - t_work) / t_xfer, in [0, 1]: the
 * fraction of the transfer hidden behind the work.  The work is sized to
 * twice the transfer so that a fully asynchronous transfer can hide.
 *
 * dmaplane: the sender's ioctl copies into the posted receive while the
 * receiver computes.  CMA and shm2copy as an MPI library without a
 * progress thread does them: the receiver moves the data itself when it
 * next calls the library -- process_vm_readv() from the sender's buffer
 * (one copy), or copying out of 64 KiB shared fragments the sender fills
 * (two copies; 4 fragments in flight) -- so little can hide.
 */
#define OV_FRAG		(64 << 10)
#define OV_NFRAG	4

struct ov_shared {
	volatile int posted;	/* iteration whose receive is posted */
	volatile int go;	/* sender: exit when -1 */
	volatile int frag_full[OV_NFRAG];
	struct dmaplane_name names[2];
	char frags[OV_NFRAG][OV_FRAG];
};

static volatile uint64_t ov_sink;

static void ov_work(uint64_t loops)
{
	uint64_t x = ov_sink;

	for (uint64_t i = 0; i < loops; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
	ov_sink = x;
}

static void spin_until(volatile int *p, int v)
{
	for (unsigned int spin = 1; __atomic_load_n(p, __ATOMIC_ACQUIRE) != v; spin++)
		if (!(spin % 256))
			sched_yield();
}

/* kinds: 0 dmaplane, 1 cma (receiver reads), 2 shm2copy */
static int ov_sender(int kind, struct ov_shared *sh, char *buf, size_t len,
		     struct dp_ep *ep, uint32_t peer, int total)
{
	for (int it = 1; it <= total; it++) {
		for (unsigned int spin = 1;
		     __atomic_load_n(&sh->posted, __ATOMIC_ACQUIRE) < it; spin++)
			if (!(spin % 256))
				sched_yield();
		if (kind == 0) {
			int ret;

			while ((ret = dp_send(ep, peer, 7, buf, len, 0)) == -EAGAIN)
				;
			if (ret || dp_wait_one(ep))
				return -1;
		} else if (kind == 2) {
			for (size_t off = 0, f = 0; off < len; off += OV_FRAG, f++) {
				size_t n = len - off < OV_FRAG ? len - off : OV_FRAG;
				int k = f % OV_NFRAG;

				spin_until(&sh->frag_full[k], 0);
				memcpy(sh->frags[k], buf + off, n);
				__atomic_store_n(&sh->frag_full[k], 1, __ATOMIC_RELEASE);
			}
		}
		/* cma: nothing to do, the receiver reads buf */
	}
	/* stay alive (CMA reads this address space) until the receiver is done */
	spin_until(&sh->go, -1);
	return 0;
}

/* Post (or announce) the receive of iteration @it. */
static int ov_post(int kind, struct ov_shared *sh, char *rbuf, size_t len,
		   struct dp_ep *ep, uint32_t peer, int it)
{
	int ret = 0;

	if (kind == 0)
		ret = dp_recv(ep, peer, 7, 0, rbuf, len, 0);
	__atomic_store_n(&sh->posted, it, __ATOMIC_RELEASE);
	return ret;
}

static int ov_complete(int kind, struct ov_shared *sh, char *rbuf, char *sbuf,
		       size_t len, struct dp_ep *ep, pid_t sender)
{
	if (kind == 0)
		return dp_wait_one(ep);
	if (kind == 1) {
		struct iovec local = { rbuf, len }, remote = { sbuf, len };

		return process_vm_readv(sender, &local, 1, &remote, 1, 0) ==
			(ssize_t)len ? 0 : -errno;
	}
	for (size_t off = 0, f = 0; off < len; off += OV_FRAG, f++) {
		size_t n = len - off < OV_FRAG ? len - off : OV_FRAG;
		int k = f % OV_NFRAG;

		spin_until(&sh->frag_full[k], 1);
		memcpy(rbuf + off, sh->frags[k], n);
		__atomic_store_n(&sh->frag_full[k], 0, __ATOMIC_RELEASE);
	}
	return 0;
}

/* Loops of ov_work() per microsecond, roughly. */
static double ov_calibrate(void)
{
	double t0 = now_us(), t;

	ov_work(10000000);
	t = now_us() - t0;
	return 10000000 / (t > 1 ? t : 1);
}

/* One transport, one size: fills xfer, work, both (median us). */
static int run_overlap(int kind, size_t len, int iters, double lpus,
		       double *xfer, double *work, double *both)
{
	struct ov_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	double *tx = calloc(3 * iters, sizeof(double));
	char *sbuf, *rbuf;
	struct dp_ep *ep = NULL;
	uint32_t peer = 0;
	int status, ret = 0, it = 0;
	uint64_t loops = 0;
	pid_t pid;

	if (sh == MAP_FAILED || !tx)
		return -ENOMEM;
	memset(sh, 0, sizeof(*sh));
	/* Same address in both processes: CMA reads the sender's sbuf. */
	sbuf = map_touched(len);
	if (!sbuf)
		return -ENOMEM;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (!pid) {
		int rank = 1;

		if (kind == 0) {
			if (dp_open(NULL, 0, &ep) || dp_ep_setup(ep, 0, 64) ||
			    dp_getname(ep, &sh->names[rank]))
				_exit(1);
			while (!__atomic_load_n(&sh->names[!rank].ep_uid, __ATOMIC_ACQUIRE))
				usleep(100);
			if (dp_av_insert(ep, &sh->names[!rank], &peer))
				_exit(1);
		}
		_exit(ov_sender(kind, sh, sbuf, len, ep, peer, 3 * (iters + 1)) ? 2 : 0);
	}
	rbuf = map_touched(len);
	if (!rbuf)
		ret = -ENOMEM;
	if (!ret && kind == 0) {
		ret = dp_open(NULL, 0, &ep);
		if (!ret)
			ret = dp_ep_setup(ep, 0, 64);
		if (!ret)
			ret = dp_getname(ep, &sh->names[0]);
		while (!ret && !__atomic_load_n(&sh->names[1].ep_uid, __ATOMIC_ACQUIRE))
			usleep(100);
		if (!ret)
			ret = dp_av_insert(ep, &sh->names[1], &peer);
	}
	/* 1: transfer alone (first round a warm-up) */
	for (int i = 0; !ret && i <= iters; i++) {
		double t0 = now_us();

		ret = ov_post(kind, sh, rbuf, len, ep, peer, ++it);
		if (!ret)
			ret = ov_complete(kind, sh, rbuf, sbuf, len, ep, pid);
		if (i)
			tx[i - 1] = now_us() - t0;
	}
	if (!ret) {
		*xfer = median(tx, iters);
		loops = (uint64_t)(2 * *xfer * lpus);
	}
	/* 2: work alone; 3: post, work, complete */
	for (int i = 0; !ret && i <= iters; i++) {
		double t0 = now_us();

		ov_work(loops);
		if (i)
			tx[iters + i - 1] = now_us() - t0;
		/* keep the sender in step: one transfer per round */
		ret = ov_post(kind, sh, rbuf, len, ep, peer, ++it);
		if (!ret)
			ret = ov_complete(kind, sh, rbuf, sbuf, len, ep, pid);
	}
	for (int i = 0; !ret && i <= iters; i++) {
		double t0 = now_us();

		ret = ov_post(kind, sh, rbuf, len, ep, peer, ++it);
		ov_work(loops);
		if (!ret)
			ret = ov_complete(kind, sh, rbuf, sbuf, len, ep, pid);
		if (i)
			tx[2 * iters + i - 1] = now_us() - t0;
	}
	__atomic_store_n(&sh->go, -1, __ATOMIC_RELEASE);
	if (ret)
		kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	if (!ret) {
		*work = median(tx + iters, iters);
		*both = median(tx + 2 * iters, iters);
	}
	if (ep)
		dp_close(ep);
	munmap(sbuf, len);
	munmap(rbuf, len);
	munmap(sh, sizeof(*sh));
	free(tx);
	if (ret)
		return ret;
	return WIFEXITED(status) && !WEXITSTATUS(status) ? 0 : -EIO;
}

static int bench_overlap(int iters)
{
	static const size_t sizes[] = { 1 << 20, 4 << 20, 16 << 20 };
	static const char *const names[] = { "dmaplane", "cma", "shm2copy" };
	double lpus = ov_calibrate();
	char sz[32];

	printf("# dp-bench overlap: receiver posts, computes 2x the transfer time, then waits;\n"
	       "# median of %d, microseconds; overlap = 1 - (both - work) / xfer, in [0,1]\n",
	       iters);
	printf("%-8s %-9s %10s %10s %10s %8s\n", "size", "xport", "xfer",
	       "work", "both", "overlap");
	for (unsigned int i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (int k = 0; k < 3 && sizes[i] <= max_size; k++) {
			double xfer = 0, work = 0, both = 0, ov;
			int ret = run_overlap(k, sizes[i], iters, lpus, &xfer,
					      &work, &both);

			printf("%-8s %-9s", fmt_size(sizes[i], sz, sizeof(sz)), names[k]);
			if (ret && !k)
				dp_failures++;
			if (ret) {
				printf(" error: %s\n", strerror(-ret));
				continue;
			}
			ov = 1 - (both - work) / xfer;
			ov = ov < 0 ? 0 : ov > 1 ? 1 : ov;
			printf(" %10.0f %10.0f %10.0f %8.2f\n", xfer, work, both, ov);
			fflush(stdout);
		}
	return 0;
}

/* ---- Matcher scaling: latency with N processes' receives posted -------- */

/*
 * N processes, each with an endpoint; every endpoint posts one receive
 * for every other process (specific source, tag 0x1000 + source rank), so
 * each matcher holds N - 1 receives, and optionally SC_EXTRA more that
 * nothing will match: for specific sources (the other ranks in turn,
 * tags no one sends: hashed apart from the ping-pong's receives) or for
 * any source (the wildcard list, which every arrival searches up to the
 * receive it matches: all of them, as they were posted first).  Ranks 0
 * and 1 then ping-pong 8 bytes on tag 1 while the others block in
 * dp_wait() until rank 0's message for their first receive; rank 0
 * starts once they all sleep there (sc_settle()).  Ranks 0 and 1 are
 * bound to CPUs 0 and 1 (as mpirun binds its ranks), so that the two
 * never share one of the VM's two vCPUs, where each would spin out its
 * 1024 polls before the other could answer.  Reported: half the round
 * trip, the median of SC_RUNS runs (one stall of the emulator, tens of
 * milliseconds, made a single run's mean 10x in a cell picked at
 * random), and its ratio to N = 2.  The runs of all cells take turns
 * (bench_scaling()): with three runs of a cell in a row, the host's speed
 * moved one cell by up to 41% between tables and put 13% of the ratios
 * above 1.10 and 14% below 0.90; in turns, nine runs each, 3% and one
 * ratio in 216 (Documentation/bench/2026-12-07-scaling-runs.rst).
 */
#define SC_RUNS		9
#define SC_EXTRA	1000

enum sc_extra { SC_NONE, SC_SPECIFIC, SC_WILDCARD, SC_NR };

struct sc_shared {
	volatile int ready;	/* ranks with their receives posted */
	volatile int failed;	/* a rank failed: the others give up */
	volatile int idle;	/* idle ranks about to block in dp_wait() */
	double lat;
	pid_t pids[64];
	struct dmaplane_name names[64];
};

/* sc_asleep - whether process @pid sleeps (state S in /proc/PID/stat) */
static int sc_asleep(pid_t pid)
{
	char path[64], line[512], *p;
	FILE *f;
	int ok = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 1;	/* gone: not running either */
	if (fgets(line, sizeof(line), f)) {
		p = strrchr(line, ')');
		ok = p && p[1] == ' ' && p[2] == 'S';
	}
	fclose(f);
	return ok;
}

/*
 * sc_settle - rank 0 waits until the idle ranks sleep in dp_wait(): they
 * leave their wait for the others' receives within 200 us of each other
 * and spin on their rings before they sleep, on the same two vCPUs as
 * ranks 0 and 1; timed round trips that overlap those spins measure N
 * ranks that are not idle yet (up to 2 s, then it goes on).
 */
static void sc_settle(struct sc_shared *sh, int n)
{
	double end = now_us() + 2e6;
	int r = 2;

	while (__atomic_load_n(&sh->idle, __ATOMIC_ACQUIRE) < n - 2 && now_us() < end &&
	       !sh->failed)
		usleep(200);
	while (r < n && now_us() < end && !sh->failed)
		if (sc_asleep(sh->pids[r]))
			r++;
		else
			usleep(200);
}

/* sc_post_extra - the SC_EXTRA receives nothing matches */
static int sc_post_extra(struct dp_ep *ep, enum sc_extra extra, const uint32_t *addr,
			 int rank, int n, char *buf)
{
	int ret = 0;

	for (int k = 0; k < SC_EXTRA && !ret && extra != SC_NONE; k++) {
		uint32_t src = DP_ANY_SRC;

		if (extra == SC_SPECIFIC)
			src = addr[(rank + 1 + k % (n - 1)) % n];
		ret = dp_recv(ep, src, 0x100000 + k, 0, buf, 8, 1000 + k);
	}
	return ret;
}

static int sc_rank(struct sc_shared *sh, int rank, int n, int iters, enum sc_extra extra)
{
	struct dp_ep *ep;
	uint32_t addr[64];
	char buf[8] = { 0 };
	int ret;

	if (rank < 2 && sysconf(_SC_NPROCESSORS_ONLN) > 1) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(rank, &set);
		if (sched_setaffinity(0, sizeof(set), &set))
			fprintf(stderr, "dp-bench scaling: rank %d on CPU %d: %s\n", rank,
				rank, strerror(errno));
	}
	sh->pids[rank] = getpid();
	ret = dp_open(NULL, 0, &ep);
	if (!ret)
		ret = dp_ep_setup(ep, 0, 2048);
	if (!ret)
		ret = dp_getname(ep, &sh->names[rank]);
	if (ret)
		goto fail;
	for (int r = 0; r < n; r++) {
		while (!__atomic_load_n(&sh->names[r].ep_uid, __ATOMIC_ACQUIRE))
			usleep(200);
		ret = dp_av_insert(ep, &sh->names[r], &addr[r]);
		if (ret)
			goto out;
	}
	ret = sc_post_extra(ep, extra, addr, rank, n, buf);
	for (int r = 0; r < n && !ret; r++)
		if (r != rank)
			ret = dp_recv(ep, addr[r], 0x1000 + r, 0, buf, sizeof(buf), r + 1);
	if (ret)
		goto out;
	__atomic_add_fetch(&sh->ready, 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&sh->ready, __ATOMIC_ACQUIRE) < n)
		if (sh->failed)
			goto out;
		else
			usleep(200);
	if (rank > 1) {
		struct dmaplane_cqe c;

		/* Idle: blocked in the kernel until rank 0's message. */
		__atomic_add_fetch(&sh->idle, 1, __ATOMIC_ACQ_REL);
		while (!(ret = dp_wait(ep, &c, 1, 1000)) && !sh->failed)
			;
		ret = ret < 0 ? ret : ret ? c.status : -ETIMEDOUT;
		goto out;
	}
	{
		uint32_t peer = addr[!rank];
		double t0 = 0;

		if (rank == 0)
			sc_settle(sh, n);

		for (int i = 0; !ret && i < iters + 10; i++) {
			if (rank == 0) {
				if (i == 10)
					t0 = now_us();
				ret = dp_send(ep, peer, 1, buf, 8, 0);
				if (!ret)
					ret = dp_wait_one(ep);
				if (!ret)
					ret = dp_recv(ep, peer, 1, 0, buf, 8, 0);
				if (!ret)
					ret = dp_wait_one(ep);
			} else {
				ret = dp_recv(ep, peer, 1, 0, buf, 8, 0);
				if (!ret)
					ret = dp_wait_one(ep);
				if (!ret)
					ret = dp_send(ep, peer, 1, buf, 8, 0);
				if (!ret)
					ret = dp_wait_one(ep);
			}
		}
		if (rank == 0 && !ret) {
			sh->lat = (now_us() - t0) / iters / 2;
			/* Wake the idle ranks: their receive for rank 0. */
			for (int r = 2; r < n && !ret; r++) {
				ret = dp_send(ep, addr[r], 0x1000, buf, 8, 0);
				if (!ret)
					ret = dp_wait_one(ep);
			}
		}
	}
out:
	dp_close(ep);
fail:
	if (ret)
		sh->failed = 1;
	return ret;
}

/* sc_run - one N and one kind of extra receives: the latency, or -1 */
static double sc_run(int n, int iters, enum sc_extra extra)
{
	struct sc_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int bad = 0, status;
	pid_t pids[64];
	double lat;

	if (sh == MAP_FAILED)
		return -1;
	memset(sh, 0, sizeof(*sh));
	/* The last run's exits: their deferred work done before this one. */
	usleep(20000);
	for (int r = 0; r < n; r++) {
		pids[r] = fork();
		if (!pids[r])
			_exit(sc_rank(sh, r, n, iters, extra) ? 1 : 0);
		if (pids[r] < 0) {
			sh->failed = 1;
			n = r;
			bad = 1;
		}
	}
	for (int r = 0; r < n; r++) {
		waitpid(pids[r], &status, 0);
		bad |= !WIFEXITED(status) || WEXITSTATUS(status);
	}
	lat = bad || sh->lat <= 0 ? -1 : sh->lat;
	munmap(sh, sizeof(*sh));
	return lat;
}

static int bench_scaling(int iters)
{
	static const int ns[] = { 2, 4, 8, 16 };
	enum { NN = sizeof(ns) / sizeof(ns[0]) };
	static double v[NN][SC_NR][SC_RUNS];
	double lat[NN][SC_NR];

	printf("# dp-bench scaling: 8-byte half round trip between ranks 0 and 1, microseconds;\n"
	       "# every rank holds a posted receive for each other rank (latency), and\n"
	       "# %d more for specific sources (spec%d) or any source (wild%d) that\n"
	       "# nothing matches; idle ranks block in dp_wait(); ranks 0 and 1 on CPUs 0\n"
	       "# and 1; x/N2: ratio to N = 2 (median of %d runs of %d iterations, one\n"
	       "# run of every cell in turn)\n",
	       SC_EXTRA, SC_EXTRA, SC_EXTRA, SC_RUNS, iters);
	printf("%-4s %10s %10s %10s %8s %8s %8s\n", "N", "latency", "spec1000", "wild1000",
	       "lat/N2", "spec/N2", "wild/N2");
	/*
	 * One run thrown away first: the first cell of the table (N = 2, no
	 * extra receives) came out 1.2-1.5x the others in every run.  Then
	 * every cell's k-th run in turn, so that the host's speed, which
	 * drifts over seconds under TCG, weighs on every cell alike rather
	 * than on the ones measured while it was slow.
	 */
	if (sc_run(2, iters, SC_NONE) < 0)
		dp_failures++;
	for (int k = 0; k < SC_RUNS; k++)
		for (int i = 0; i < NN; i++)
			for (int e = 0; e < SC_NR; e++)
				v[i][e][k] = k && v[i][e][k - 1] < 0 ? -1 :
					     sc_run(ns[i], iters, e);
	for (int i = 0; i < NN; i++)
		for (int e = 0; e < SC_NR; e++) {
			lat[i][e] = median_or_error(v[i][e], SC_RUNS);
			if (lat[i][e] < 0)
				dp_failures++;
		}
	for (int i = 0; i < NN; i++) {
		printf("%-4d", ns[i]);
		for (int e = 0; e < SC_NR; e++)
			print_cell(lat[i][e]);
		for (int e = 0; e < SC_NR; e++)
			if (lat[i][e] < 0 || lat[0][e] <= 0)
				printf(" %8s", "-");
			else
				printf(" %8.2f", lat[i][e] / lat[0][e]);
		printf("\n");
	}
	fflush(stdout);
	return 0;
}

/* ---- Across nodes: one dp-bench on each node, names over TCP ---------- */

/*
 * rlat, rbw, rrate: the lat, bw and rate bodies between two nodes.  The
 * server (--server) listens on a TCP port, the client (--peer ADDR)
 * connects; the connection carries, for each run, the client's request,
 * both sides' setup status and dmaplane name, and at the end each side's
 * verdict.  The "tcp" transport sends its data over the same connection
 * (TCP_NODELAY), as the baseline.  The server serves whatever the client
 * asks, one client, then exits.  With --peer 127.0.0.1 (a server on the
 * same node) dmaplane uses its local transport.
 */
#define CTL_PORT	20887
#define CTL_MAGIC	0x64706231	/* "dpb1" */

enum { CTL_LAT = 1, CTL_STREAM, CTL_END };

struct ctl_req {
	uint32_t magic;
	uint32_t op;
	uint32_t xport;
	uint32_t iters;
	uint32_t w;
	uint32_t pad;
	uint64_t len;
};

static int ctl_swap(int fd, const void *mine, void *theirs, size_t len)
{
	int ret = full_write(fd, mine, len);

	return ret ? ret : full_read(fd, theirs, len);
}

static int tcp_send(struct xport *x, int rank, void *buf, size_t len)
{
	(void)rank;
	return full_write(x->ctl, buf, len);
}

static int tcp_recv(struct xport *x, int rank, void *buf, size_t len)
{
	(void)rank;
	return full_read(x->ctl, buf, len);
}

static int no_setup(struct xport *x, int rank)
{
	(void)x;
	(void)rank;
	return 0;
}

static struct xport rxports[] = {
	{ .name = "dmaplane", .setup = dp_x_setup, .send = dp_x_send,
	  .recv = dp_x_recv, .send_w = dp_x_send_w, .recv_w = dp_x_recv_w },
	{ .name = "tcp", .setup = no_setup, .send = tcp_send, .recv = tcp_recv },
};
#define NR_RXPORTS (sizeof(rxports) / sizeof(rxports[0]))

static void ctl_tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int ctl_listen(int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(port),
				   .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1, lfd, fd;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0)
		return -errno;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) || listen(lfd, 1)) {
		fd = -errno;
		close(lfd);
		return fd;
	}
	fprintf(stderr, "dp-bench: listening on port %d\n", port);
	fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		fd = -errno;
	close(lfd);
	if (fd >= 0)
		ctl_tune(fd);
	return fd;
}

/* Connect to ADDR:port, retrying for ~10 s while nobody listens yet. */
static int ctl_connect(const char *addr, int port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	char svc[16];
	int fd = -1, ret;

	snprintf(svc, sizeof(svc), "%d", port);
	ret = getaddrinfo(addr, svc, &hints, &ai);
	if (ret) {
		fprintf(stderr, "dp-bench: resolve %s: %s\n", addr, gai_strerror(ret));
		return -EINVAL;
	}
	for (int i = 0; i < 100; i++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0)
			break;
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		ret = -errno;
		close(fd);
		fd = ret;
		if (ret != -ECONNREFUSED && ret != -ENETUNREACH &&
		    ret != -EHOSTUNREACH && ret != -ETIMEDOUT)
			break;
		usleep(100000);
	}
	freeaddrinfo(ai);
	if (fd < 0)
		fprintf(stderr, "dp-bench: connect to %s port %d: %s\n", addr, port,
			strerror(-fd));
	else
		ctl_tune(fd);
	return fd;
}

/*
 * One run on this side of the connection (rank 0: the client, which sent
 * @req; rank 1: the server).  Returns rank 0's result, or a negative
 * errno: this side's, else the peer's.
 */
static double run_remote(int ctl, int rank, const struct ctl_req *req)
{
	struct run_args a = { .len = req->len, .iters = req->iters, .w = req->w };
	struct xport x = rxports[req->xport];
	int32_t me, them = 0;
	double out;
	int ret;

	x.remote = 1;
	x.ctl = ctl;
	x.max = a.len;
	setup_step = NULL;
	/* a minute, plus a second per MB moved */
	wait_deadline = now_us() + 60e6 +
		(double)a.len * (a.iters + lat_warmup(a.iters)) * (a.w ? a.w : 2);
	ret = x.setup(&x, rank);
	if (ret == -EPIPE && !setup_step)
		return ret;	/* the control connection is gone */
	if (ret)
		out = ret;
	else if (req->op == CTL_LAT)
		out = lat_rank(&x, rank, &a, NULL);
	else
		out = stream_rank(&x, rank, &a, NULL);
	if (x.ep)
		dp_close(x.ep);
	wait_deadline = 0;
	/* verdicts; after a failed setup both sides skipped the run */
	me = out < 0 ? (int32_t)out : 0;
	if (ctl_swap(ctl, &me, &them, sizeof(me)))
		return -EPIPE;
	if (out >= 0 && them) {
		setup_step = "the peer";
		out = them;
	}
	return out;
}

static int serve(int port)
{
	struct ctl_req req;
	int fd = ctl_listen(port), runs = 0;

	if (fd < 0) {
		fprintf(stderr, "dp-bench: listen on port %d: %s\n", port, strerror(-fd));
		return 1;
	}
	while (!full_read(fd, &req, sizeof(req))) {
		/* a window beyond WINDOW_MAX would overrun dp_x_window()'s arrays */
		if (req.magic != CTL_MAGIC || req.xport >= NR_RXPORTS ||
		    req.op < CTL_LAT || req.op > CTL_END || req.w > WINDOW_MAX ||
		    req.iters > 1000000) {
			fprintf(stderr, "dp-bench: bad request from the client\n");
			break;
		}
		if (req.op == CTL_END) {
			close(fd);
			fprintf(stderr, "dp-bench: served %d runs\n", runs);
			return 0;
		}
		if (run_remote(fd, 1, &req) == -EPIPE && !setup_step)
			break;
		runs++;
	}
	close(fd);
	fprintf(stderr, "dp-bench: client went away after %d runs\n", runs);
	return 1;
}

/* failures of the remote runs, printed under the table */
static char rfail[NR_RXPORTS][160];

static double rrun(int ctl, unsigned int t, int op, size_t len, int iters, int w)
{
	struct ctl_req req = { .magic = CTL_MAGIC, .op = op, .xport = t,
			       .iters = iters, .w = w, .len = len };
	double v;

	if (rfail[t][0])
		return -ECANCELED;	/* failed before: do not wait again */
	if (full_write(ctl, &req, sizeof(req)))
		return -EPIPE;
	v = run_remote(ctl, 0, &req);
	if (v < 0 && !rfail[t][0])
		snprintf(rfail[t], sizeof(rfail[t]), "%s: %s",
			 setup_step ? setup_step : "run", strerror((int)-v));
	return v;
}

static void rcell(double v, double scale)
{
	if (v < 0)
		printf(" %10s", "n/a");
	else
		printf(" %10.1f", v * scale);
	fflush(stdout);
}

static void rfail_report(void)
{
	for (unsigned int t = 0; t < NR_RXPORTS; t++)
		if (rfail[t][0])
			printf("# %s: n/a (%s)\n", rxports[t].name, rfail[t]);
}

static int bench_remote(const char *mode, const char *peer, int port, int iters)
{
	static const size_t lsizes[] = { 8, 64, 1024, 16384, 65536, 1 << 20 };
	static const size_t bsizes[] = { 1024, 16384, 65536, 1 << 20, 4 << 20 };
	struct ctl_req end = { .magic = CTL_MAGIC, .op = CTL_END };
	int ctl = ctl_connect(peer, port);
	double v[NR_RXPORTS];
	char sz[32];

	if (ctl < 0)
		return 1;
	if (!strcmp(mode, "rlat")) {
		if (!iters)
			iters = 200;
		printf("# dp-bench rlat: half round trip to %s, microseconds (%d iterations; lower is better)\n",
		       peer, iters);
		printf("%-8s", "size");
		for (unsigned int t = 0; t < NR_RXPORTS; t++)
			printf(" %10s", rxports[t].name);
		printf(" %12s\n", "dp/tcp");
		for (unsigned int i = 0; i < sizeof(lsizes) / sizeof(lsizes[0]); i++) {
			int n = lsizes[i] >= (1 << 20) ? (iters + 9) / 10 : iters;

			if (lsizes[i] > max_size)
				break;
			printf("%-8s", lsizes[i] < 1024 ?
			       (snprintf(sz, sizeof(sz), "%zu B", lsizes[i]), sz) :
			       fmt_size(lsizes[i], sz, sizeof(sz)));
			for (unsigned int t = 0; t < NR_RXPORTS; t++) {
				v[t] = rrun(ctl, t, CTL_LAT, lsizes[i], n, 0);
				rcell(v[t], 1);
			}
			if (v[0] > 0 && v[1] > 0)
				printf(" %12.2f", v[0] / v[1]);
			printf("\n");
		}
	} else if (!strcmp(mode, "rbw")) {
		if (!iters)
			iters = 50;
		printf("# dp-bench rbw: window of %d messages to %s, MB/s (higher is better)\n",
		       bw_window, peer);
		printf("%-8s", "size");
		for (unsigned int t = 0; t < NR_RXPORTS; t++)
			printf(" %10s", rxports[t].name);
		printf(" %12s\n", "dp/tcp");
		for (unsigned int i = 0; i < sizeof(bsizes) / sizeof(bsizes[0]); i++) {
			int n = bw_windows(iters, bsizes[i], bw_window);

			if (bsizes[i] > max_size)
				break;
			printf("%-8s", fmt_size(bsizes[i], sz, sizeof(sz)));
			for (unsigned int t = 0; t < NR_RXPORTS; t++) {
				v[t] = rrun(ctl, t, CTL_STREAM, bsizes[i], n, bw_window);
				rcell(v[t], bsizes[i] / 1e6);
			}
			if (v[0] > 0 && v[1] > 0)
				printf(" %12.2f", v[0] / v[1]);
			printf("\n");
		}
	} else {
		if (!iters)
			iters = 200;
		printf("# dp-bench rrate: 8-byte messages to %s, window 64, messages/s (higher is better)\n",
		       peer);
		for (unsigned int t = 0; t < NR_RXPORTS; t++) {
			v[t] = rrun(ctl, t, CTL_STREAM, 8, iters, 64);
			if (v[t] < 0)
				printf("%-10s %12s\n", rxports[t].name, "n/a");
			else
				printf("%-10s %12.0f\n", rxports[t].name, v[t]);
		}
	}
	rfail_report();
	full_write(ctl, &end, sizeof(end));
	close(ctl);
	return rfail[0][0] ? 1 : 0;
}

static int usage(FILE *f)
{
	fprintf(f, "usage: dp-bench reg [-m MAX_BYTES] [-n ITERS] [-d IBDEV]\n"
		   "       (messaging modes: -Y spins with sched_yield() instead of sleeping in dp_wait();\n"
		   "        -s SPINS polls the ring SPINS times (1024) before each sleep or yield;\n"
		   "        -I: receives of up to 8 bytes without DMAPLANE_OP_F_INLINE;\n"
		   "        -m MAX_BYTES leaves out larger messages in every mode)\n"
		   "       dp-bench lat [-n ITERS]\n"
		   "       dp-bench bw [-n WINDOWS] [-w MESSAGES] [-b BUFS]\n"
		   "       (-w: messages per window, 16; -b: dmaplane receives into BUFS buffers in turn)\n"
		   "       dp-bench rate [-n WINDOWS]\n"
		   "       dp-bench bwdiag [-n WINDOWS]\n"
		   "       dp-bench overlap [-n ITERS]\n"
		   "       dp-bench scaling [-n ITERS]\n"
		   "       dp-bench path [-n ITERS]\n"
		   "       (rate and path: -o NAME[,NAME...] runs only the rows named; bw: the transports)\n"
		   "       dp-bench rlat|rbw|rrate --server [-p PORT]        (on one node)\n"
		   "       dp-bench rlat|rbw|rrate --peer ADDR [-p PORT] [-n N]  (on the other; rbw -w as bw)\n"
		   "exit status: 1 when a dmaplane measurement failed, 2 on a usage error\n");
	return f == stderr ? 2 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "server", no_argument, NULL, 'S' },
		{ "peer", required_argument, NULL, 'P' },
		{ "port", required_argument, NULL, 'p' },
		{ NULL, 0, NULL, 0 }
	};
	const char *ibdev = NULL, *peer = NULL;
	int iters = 0, opt, server = 0, port = CTL_PORT, ret;

	if (argc < 2)
		return usage(stderr);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return usage(stdout);
	optind = 2;
	while ((opt = getopt_long(argc, argv, "m:n:d:YIp:o:b:w:s:", lopts, NULL)) != -1) {
		switch (opt) {
		case 'b':
			rx_bufs = atoi(optarg);
			if (rx_bufs < 1 || rx_bufs > 100000)
				return usage(stderr);
			break;
		case 'w':
			bw_window = atoi(optarg);
			if (bw_window < 1 || bw_window > WINDOW_MAX)
				return usage(stderr);
			break;
		case 'm':
			max_size = strtoull(optarg, NULL, 0);
			if (!max_size)
				return usage(stderr);
			break;
		case 'n':
			iters = atoi(optarg);
			if (iters < 1 || iters > 100000)
				return usage(stderr);
			break;
		case 'd':
			ibdev = optarg;
			break;
		case 'Y':
			spin_yield = 1;
			break;
		case 'I':
			recv_inline = 0;
			break;
		case 's':
			spin_polls = atoi(optarg);
			if (spin_polls < 1 || spin_polls > 1000000)
				return usage(stderr);
			break;
		case 'o':
			only_rows = optarg;
			break;
		case 'S':
			server = 1;
			break;
		case 'P':
			peer = optarg;
			break;
		case 'p':
			port = atoi(optarg);
			if (port < 1 || port > 65535)
				return usage(stderr);
			break;
		default:
			return usage(stderr);
		}
	}
	if (!strcmp(argv[1], "rlat") || !strcmp(argv[1], "rbw") ||
	    !strcmp(argv[1], "rrate")) {
		if (server == !!peer)
			return usage(stderr);
		return server ? serve(port) : bench_remote(argv[1], peer, port, iters);
	}
	if (server || peer)
		return usage(stderr);
	if (!strcmp(argv[1], "reg"))
		ret = bench_reg(max_size, iters ? iters : 9, ibdev);
	else if (!strcmp(argv[1], "lat"))
		ret = bench_lat(iters ? iters : 200);
	else if (!strcmp(argv[1], "bw"))
		ret = bench_bw(iters ? iters : 50);
	else if (!strcmp(argv[1], "rate"))
		ret = bench_rate(iters ? iters : 200);
	else if (!strcmp(argv[1], "bwdiag"))
		ret = bench_bwdiag(iters ? iters : 3);
	else if (!strcmp(argv[1], "overlap"))
		ret = bench_overlap(iters ? iters : 5);
	else if (!strcmp(argv[1], "scaling"))
		ret = bench_scaling(iters ? iters : 200);
	else if (!strcmp(argv[1], "path"))
		ret = bench_path(iters ? iters : 2000);
	else
		return usage(stderr);
	if (only_rows && !rows_run && !dp_failures) {
		fprintf(stderr, "dp-bench %s: no row named by -o %s\n", argv[1], only_rows);
		return 2;
	}
	if (dp_failures)
		fprintf(stderr, "dp-bench %s: %d dmaplane measurement(s) failed\n",
			argv[1], dp_failures);
	return ret || dp_failures ? 1 : 0;
}

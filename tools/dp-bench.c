// SPDX-License-Identifier: GPL-2.0
/*
 * dp-bench: measure dmaplane against the alternatives, in the same
 * machine, side by side.
 *
 *   dp-bench reg [-m MAX_BYTES] [-n ITERS] [-d IBDEV]
 *
 * reg: cost of registering N bytes of already-faulted user memory --
 * cold (a fresh mapping: pin + account + notifier), cached (the same range
 * again: a registration-cache hit), ibv_reg_mr() on an RDMA device (rxe
 * under QEMU), and a plain memcpy() of the same size.  Registration is
 * worth it only when it costs less than the copy it saves.  Each cell is
 * the median of ITERS runs, in microseconds.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

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

static void *map_touched(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0xa5, len);
	return p;
}

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

static int time_memcpy(size_t len, int iters, double *out)
{
	void *src = map_touched(len), *dst = map_touched(len);
	double t[64];
	int i;

	if (!src || !dst)
		return -ENOMEM;
	for (i = 0; i < iters; i++) {
		double t0 = now_us();

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
	double cold = 0, cached = 0, copy = 0, ibv = 0;
	int rc_cold, rc_cached, rc_copy, rc_ibv = -ENODEV;
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

	ret = dp_open(NULL, 0, &ep);
	if (ret) {
		fprintf(stderr, "dp-bench: dp_open: %s\n", strerror(-ret));
		return 1;
	}
	printf("# dp-bench reg: median of %d runs, microseconds\n", iters);
	printf("%-8s %12s %12s %12s %12s %12s %12s\n", "size", "memcpy",
	       "dp_cold", "dp_cached", "ibv_reg_mr", "cold/memcpy", "cold/ibv");
	for (len = 4096; len <= max; len *= len < (1ULL << 20) ? 16 : 4) {
		int n = len >= (256ULL << 20) ? (iters < 3 ? iters : 3) : iters;

		rc_copy = time_memcpy(len, n, &copy);
		rc_cold = time_dp_cold(ep, len, n, &cold);
		rc_cached = time_dp_cached(ep, len, n, &cached);
#ifdef HAVE_IBVERBS
		if (have_verbs)
			rc_ibv = time_ibv(&v, len, n, &ibv);
#endif
		printf("%-8s", fmt_size(len, sz, sizeof(sz)));
		cell(rc_copy, copy);
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

static int usage(FILE *f)
{
	fprintf(f, "usage: dp-bench reg [-m MAX_BYTES] [-n ITERS] [-d IBDEV]\n");
	return f == stderr ? 2 : 0;
}

int main(int argc, char **argv)
{
	uint64_t max = 1ULL << 30;
	const char *ibdev = NULL;
	int iters = 9, opt;

	if (argc < 2)
		return usage(stderr);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))
		return usage(stdout);
	optind = 2;
	while ((opt = getopt(argc, argv, "m:n:d:")) != -1) {
		switch (opt) {
		case 'm':
			max = strtoull(optarg, NULL, 0);
			break;
		case 'n':
			iters = atoi(optarg);
			if (iters < 1 || iters > 64)
				return usage(stderr);
			break;
		case 'd':
			ibdev = optarg;
			break;
		default:
			return usage(stderr);
		}
	}
	if (!strcmp(argv[1], "reg"))
		return bench_reg(max, iters, ibdev);
	return usage(stderr);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * dedup-bench - one deduplicated move of NEW to a node that holds OLD,
 * both nodes in this process, memcpy standing in for the wire.
 *
 *   dedup-bench [-r REPEAT] OLD NEW
 *
 * The destination node has OLD in arena 1 (indexed before the clock
 * starts, as dmaplaned indexes an arena when its content arrives) and a
 * fresh, prefaulted arena 2 the size of NEW.  Timed: chunking and hashing
 * NEW, encoding and decoding the request, the lookup (with its xxh128
 * re-check and BLAKE2b of each run) and encoding the answers, decoding
 * them and the plan (BLAKE2b of the source's runs), the execution with
 * memcpy,
 * and the whole-range xxh128 end check of both ends (which the two daemons
 * would do in parallel; here one after the other).  The best of REPEAT
 * runs (3).  A whole-range BLAKE2b of both ends is timed apart (t_b2), for
 * those who want a cryptographic end check too.
 *
 * Prints one line of key=value pairs for run.sh.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dedup.h"

struct node {
	const uint8_t *base[3];
	size_t size[3];
};

static const void *resolve(void *ctx, uint32_t arena, uint64_t off, uint64_t len)
{
	struct node *nd = ctx;

	if (arena >= 3 || !nd->base[arena] || off > nd->size[arena] ||
	    len > nd->size[arena] - off)
		return NULL;
	return nd->base[arena] + off;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static const uint8_t *map_file(const char *path, size_t *len)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st)) {
		perror(path);
		exit(1);
	}
	*len = (size_t)st.st_size;
	p = mmap(NULL, *len ? *len : 1, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		perror(path);
		exit(1);
	}
	return p;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "dedup-bench: %s: %s\n", what, strerror(-err));
	exit(1);
}

int main(int argc, char **argv)
{
	double t[6], best[6] = { 0 }, t_index, t_copy = 1e9, t_b2 = 1e9;
	struct dd_chunk_list lo = { 0 }, ls = { 0 };
	uint8_t b_src[DD_B2_LEN], b_dst[DD_B2_LEN];
	struct dd_lookup_stats lst = { 0 };
	struct dd_hash h_src, h_dst;
	struct dd_plan plan = { 0 };
	const uint8_t *old, *nw;
	size_t olen, nlen;
	struct dd_answer *ans = NULL, *got = NULL;
	struct dd_chunk *vd = NULL;
	uint8_t *req = NULL, *rep = NULL;
	size_t nreq, nrep;
	long rep_len;
	struct dd_index *ix;
	struct dd_chunker c;
	struct node nd = { 0 };
	uint8_t *dst;
	int repeat = 3, r, opt, ret, i;

	while ((opt = getopt(argc, argv, "r:")) != -1) {
		if (opt != 'r')
			goto usage;
		repeat = atoi(optarg);
	}
	if (argc - optind != 2 || repeat < 1) {
usage:
		fprintf(stderr, "usage: %s [-r REPEAT] OLD NEW\n", argv[0]);
		return 2;
	}
	old = map_file(argv[optind], &olen);
	nw = map_file(argv[optind + 1], &nlen);
	dst = malloc(nlen ? nlen : 1);
	if (!dst)
		die("malloc", -ENOMEM);
	memset(dst, 0, nlen);
	nd.base[1] = old;
	nd.size[1] = olen;
	nd.base[2] = dst;
	nd.size[2] = nlen;

	ret = dd_chunker_init(&c, 0, 0, 0);
	if (!ret)
		ret = dd_index_new(&ix, resolve, &nd);
	if (ret)
		die("init", ret);
	t_index = now_s();
	ret = dd_chunk_range(&c, old, olen, &lo);
	if (!ret)
		ret = dd_index_add(ix, 1, 0, lo.v, lo.n);
	if (ret)
		die("index", ret);
	t_index = now_s() - t_index;

	for (r = 0; r < repeat; r++) {
		double t0 = now_s();

		/* A plain move's copy, for scale. */
		memcpy(dst, nw, nlen);
		t0 = now_s() - t0;
		if (t0 < t_copy)
			t_copy = t0;
		memset(dst, 0, nlen);
	}
	for (r = 0; r < repeat; r++) {
		ls.n = 0;
		t[0] = now_s();
		ret = dd_chunk_range(&c, nw, nlen, &ls);			/* source */
		if (ret)
			die("chunk", ret);
		t[1] = now_s();
		free(ans);
		free(got);
		free(vd);
		free(req);
		free(rep);
		nreq = dd_meta_request_bytes(ls.n);
		nrep = dd_meta_answer_bytes(ls.n, ls.n);
		ans = calloc(ls.n + 1, sizeof(*ans));
		got = calloc(ls.n + 1, sizeof(*got));
		vd = calloc(ls.n + 1, sizeof(*vd));
		req = malloc(nreq + 1);
		rep = malloc(nrep + 1);
		if (!ans || !got || !vd || !req || !rep)
			die("calloc", -ENOMEM);
		/* the request, encoded at the source, decoded at the destination */
		ret = dd_request_encode(ls.v, ls.n, req, nreq);
		if (ret || dd_request_decode(req, nreq, vd, ls.n) != (long)ls.n)
			die("request", ret ? ret : -EPROTO);
		memset(&lst, 0, sizeof(lst));
		ret = dd_index_lookup(ix, vd, ls.n, 2, 0, nlen, ans, &lst);	/* dest */
		if (ret)
			die("lookup", ret);
		rep_len = dd_answer_encode(ans, ls.n, rep, nrep);
		if (rep_len < 0)
			die("answer", (int)rep_len);
		t[2] = now_s();
		ret = dd_answer_decode(rep, (size_t)rep_len, ls.v, ls.n, got);	/* source */
		if (ret)
			die("answer decode", ret);
		ret = dd_plan_build(ls.v, ls.n, got, nw, nlen, 2, 0, 4u << 20, &plan);
		if (ret)
			die("plan", ret);
		t[3] = now_s();
		ret = dd_plan_exec_mem(&plan, nw, nlen, dst, nlen, resolve, &nd, NULL);
		if (ret)
			die("exec", ret);
		t[4] = now_s();
		h_src = dd_xxh128(nw, nlen);
		h_dst = dd_xxh128(dst, nlen);
		t[5] = now_s();
		dd_blake2b_range(nw, nlen, b_src);
		dd_blake2b_range(dst, nlen, b_dst);
		if (now_s() - t[5] < t_b2)
			t_b2 = now_s() - t[5];
		if (h_src.lo != h_dst.lo || h_src.hi != h_dst.hi ||
		    memcmp(b_src, b_dst, DD_B2_LEN) || memcmp(nw, dst, nlen)) {
			fprintf(stderr, "dedup-bench: destination differs from source\n");
			return 1;
		}
		if (!r || t[5] - t[0] < best[0]) {
			best[0] = t[5] - t[0];
			for (i = 1; i < 6; i++)
				best[i] = t[i] - t[i - 1];
		}
		memset(dst, 0, nlen);
	}
	printf("logical=%zu wire=%llu meta=%llu local=%llu inplace=%llu chunks=%llu "
	       "hits=%llu verify_failed=%llu stale=%llu wire_ops=%llu local_ops=%llu "
	       "index_entries=%zu t_index=%.4f t_total=%.4f t_chunk=%.4f t_lookup=%.4f "
	       "t_plan=%.4f t_exec=%.4f t_check=%.4f t_b2=%.4f t_memcpy=%.4f\n",
	       nlen, (unsigned long long)plan.st.wire_bytes,
	       (unsigned long long)plan.st.meta_bytes,
	       (unsigned long long)plan.st.local_bytes,
	       (unsigned long long)plan.st.inplace_bytes,
	       (unsigned long long)plan.st.chunks,
	       (unsigned long long)plan.st.hit_chunks,
	       (unsigned long long)plan.st.verify_failed,
	       (unsigned long long)lst.stale,
	       (unsigned long long)plan.st.wire_ops,
	       (unsigned long long)plan.st.local_ops, dd_index_count(ix), t_index,
	       best[0], best[1], best[2], best[3], best[4], best[5], t_b2, t_copy);
	{
		char line[512];

		dd_stats_format(&plan.st, best[0], line, sizeof(line));
		fprintf(stderr, "%s\n", line);
	}
	free(ans);
	free(got);
	free(vd);
	free(req);
	free(rep);
	free(dst);
	dd_plan_free(&plan);
	dd_chunk_list_free(&lo);
	dd_chunk_list_free(&ls);
	dd_index_free(ix);
	return 0;
}

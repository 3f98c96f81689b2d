// SPDX-License-Identifier: GPL-2.0
/*
 * dmaplaned's deduplication engine (daemon/dedup.c) on the host: chunk
 * boundaries that depend on content only, moves with a known overlap that
 * come out byte-exact with the wire bytes the overlap predicts, random data
 * that saves nothing and claims nothing, a forced collision that goes over
 * the wire, and the edge cases and bad arguments.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../dedup.h"

#include "kselftest_harness.h"

#define MIB (1u << 20)

static void fill_random(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		p[i] = (uint8_t)((x * 0x2545f4914f6cdd1dULL) >> 56);
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The destination node's arenas, as the index's resolver sees them. */
struct node {
	uint8_t *base[4];
	size_t size[4];
};

static const void *node_resolve(void *ctx, uint32_t arena, uint64_t off, uint64_t len)
{
	struct node *nd = ctx;

	if (arena >= 4 || !nd->base[arena] || off > nd->size[arena] ||
	    len > nd->size[arena] - off)
		return NULL;
	return nd->base[arena] + off;
}

static int has_hash(const struct dd_chunk_list *l, const struct dd_hash *h)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (l->v[i].hash.lo == h->lo && l->v[i].hash.hi == h->hi)
			return 1;
	return 0;
}

/*
 * One whole move of @src into arena @dst_arena at @dst_off on node @nd,
 * whose index is @ix: chunk, look up, plan, execute, check end to end.
 * Return: 0 when the destination equals the source and the whole-range
 * BLAKE2b agrees, 1 when the end check caught a difference, <0 on error.
 */
static int do_move(struct dd_chunker *c, struct dd_index *ix, struct node *nd,
		   const uint8_t *src, size_t len, uint32_t dst_arena,
		   uint64_t dst_off, struct dd_plan *plan, struct dd_lookup_stats *lst)
{
	struct dd_chunk_list l = { 0 };
	struct dd_answer *ans = NULL, *got = NULL;
	struct dd_chunk *vd = NULL;
	uint8_t b_src[DD_B2_LEN], b_dst[DD_B2_LEN];
	uint8_t *req = NULL, *rep = NULL;
	size_t nreq, nrep;
	long got_n = 0, rep_len = 0;
	int ret;

	ret = dd_chunk_range(c, src, len, &l);
	if (ret)
		return ret;
	/* A -> B: the request, encoded and decoded as the daemons would. */
	nreq = dd_meta_request_bytes(l.n);
	nrep = dd_meta_answer_bytes(l.n, l.n);
	req = malloc(nreq + 1);
	rep = malloc(nrep + 1);
	vd = calloc(l.n + 1, sizeof(*vd));
	ans = calloc(l.n + 1, sizeof(*ans));
	got = calloc(l.n + 1, sizeof(*got));
	ret = -ENOMEM;
	if (!req || !rep || !vd || !ans || !got)
		goto out;
	ret = dd_request_encode(l.v, l.n, req, nreq);
	if (!ret) {
		got_n = dd_request_decode(req, nreq, vd, l.n);
		ret = got_n == (long)l.n ? 0 : -EPROTO;
	}
	memset(lst, 0, sizeof(*lst));
	if (!ret)
		ret = dd_index_lookup(ix, vd, l.n, dst_arena, dst_off, len, ans, lst);
	/* B -> A: the answers. */
	if (!ret) {
		rep_len = dd_answer_encode(ans, l.n, rep, nrep);
		ret = rep_len < 0 ? (int)rep_len : 0;
	}
	if (!ret)
		ret = dd_answer_decode(rep, (size_t)rep_len, l.v, l.n, got);
	if (!ret)
		ret = dd_plan_build(l.v, l.n, got, src, len, dst_arena, dst_off, 1 * MIB, plan);
	if (!ret && plan->st.meta_bytes != nreq + (uint64_t)rep_len)
		ret = -EPROTO;	/* the figures must be the encoding's */
	if (!ret)
		ret = dd_plan_exec_mem(plan, src, len, nd->base[dst_arena],
				       nd->size[dst_arena], node_resolve, nd, NULL);
	if (!ret) {
		dd_blake2b_range(src, len, b_src);
		dd_blake2b_range(nd->base[dst_arena] + dst_off, len, b_dst);
		ret = memcmp(b_src, b_dst, DD_B2_LEN) ? 1 : 0;
	}
	if (!ret) {
		dd_index_remove_range(ix, dst_arena, dst_off, len);
		ret = dd_index_add(ix, dst_arena, dst_off, l.v, l.n);
	}
out:
	free(req);
	free(rep);
	free(vd);
	free(ans);
	free(got);
	dd_chunk_list_free(&l);
	return ret;
}

TEST(chunker_rejects_bad_sizes)
{
	struct dd_chunker c;

	EXPECT_EQ(0, dd_chunker_init(&c, 0, 0, 0));
	EXPECT_EQ(DD_CHUNK_MIN_DEFAULT, c.min_size);
	EXPECT_EQ(DD_CHUNK_AVG_DEFAULT, c.avg_size);
	EXPECT_EQ(DD_CHUNK_MAX_DEFAULT, c.max_size);
	EXPECT_EQ(-EINVAL, dd_chunker_init(NULL, 0, 0, 0));
	EXPECT_EQ(-EINVAL, dd_chunker_init(&c, 8192, 8192, 65536));	/* min == avg */
	EXPECT_EQ(-EINVAL, dd_chunker_init(&c, 2048, 8192, 8192));	/* avg == max */
	EXPECT_EQ(-EINVAL, dd_chunker_init(&c, 2048, 6000, 65536));	/* not 2^n */
	EXPECT_EQ(-EINVAL, dd_chunker_init(&c, 32, 8192, 65536));	/* min < window */
	EXPECT_EQ(-EINVAL, dd_chunker_init(&c, 2048, 8192, 32u << 20));	/* max too big */
	EXPECT_EQ(0, dd_chunker_init(&c, 64, 256, 1024));
}

TEST(boundaries_deterministic_and_content_defined)
{
	const size_t len = 4 * MIB, ins = 100;
	struct dd_chunk_list a = { 0 }, b = { 0 }, s = { 0 };
	uint8_t *buf = malloc(len), *shifted = malloc(len + ins);
	struct dd_chunker c, c2;
	size_t i, survived = 0;

	ASSERT_NE(NULL, buf);
	ASSERT_NE(NULL, shifted);
	fill_random(buf, len, 1);
	ASSERT_EQ(0, dd_chunker_init(&c, 0, 0, 0));
	ASSERT_EQ(0, dd_chunker_init(&c2, 0, 0, 0));
	/* Two chunkers (two nodes) cut the same bytes the same way. */
	ASSERT_EQ(0, dd_chunk_range(&c, buf, len, &a));
	ASSERT_EQ(0, dd_chunk_range(&c2, buf, len, &b));
	ASSERT_EQ(a.n, b.n);
	for (i = 0; i < a.n; i++) {
		ASSERT_EQ(a.v[i].off, b.v[i].off);
		ASSERT_EQ(a.v[i].len, b.v[i].len);
		ASSERT_EQ(a.v[i].hash.lo, b.v[i].hash.lo);
		ASSERT_EQ(a.v[i].hash.hi, b.v[i].hash.hi);
	}
	for (i = 0; i + 1 < a.n; i++) {
		ASSERT_LE(c.min_size, a.v[i].len);
		ASSERT_GE(c.max_size, a.v[i].len);
	}
	TH_LOG("%zu chunks, mean %zu B", a.n, len / a.n);
	ASSERT_LE(c.avg_size / 2, len / a.n);
	ASSERT_GE(c.avg_size * 2, len / a.n);

	/* Insert 100 bytes at 1000: only the chunks near it change. */
	memcpy(shifted, buf, 1000);
	fill_random(shifted + 1000, ins, 2);
	memcpy(shifted + 1000 + ins, buf + 1000, len - 1000);
	ASSERT_EQ(0, dd_chunk_range(&c, shifted, len + ins, &s));
	for (i = 0; i < a.n; i++)
		survived += has_hash(&s, &a.v[i].hash);
	TH_LOG("%zu of %zu chunks survived an insertion at 1000", survived, a.n);
	EXPECT_LE(a.n - 3, survived);
	dd_chunk_list_free(&a);
	dd_chunk_list_free(&b);
	dd_chunk_list_free(&s);
	free(buf);
	free(shifted);
}

TEST(max_size_chunks)
{
	const size_t len = 1 * MIB + 5;
	uint8_t *zero = calloc(1, len);
	struct dd_chunk_list l = { 0 };
	struct dd_chunker c;
	size_t i;

	ASSERT_NE(NULL, zero);
	ASSERT_EQ(0, dd_chunker_init(&c, 0, 0, 0));
	/* Zeros never satisfy a mask here: every chunk is cut at max. */
	ASSERT_EQ(0, dd_chunk_range(&c, zero, len, &l));
	ASSERT_EQ(len / c.max_size + 1, l.n);
	for (i = 0; i + 1 < l.n; i++)
		EXPECT_EQ(c.max_size, l.v[i].len);
	EXPECT_EQ(len % c.max_size, l.v[l.n - 1].len);
	EXPECT_EQ(c.max_size, dd_cut(&c, zero, len));
	dd_chunk_list_free(&l);
	free(zero);
}

/* A quarter of the 64 KiB blocks changed: about a quarter crosses the wire. */
TEST(round_trip_partial_overlap)
{
	const size_t len = 8 * MIB, blk = 64 << 10, nblk = len / blk;
	uint8_t *src = malloc(len), *old = malloc(len), *dst = calloc(1, len);
	struct node nd = { .base = { NULL, old, dst }, .size = { 0, len, len } };
	struct dd_chunk_list lo = { 0 };
	struct dd_lookup_stats lst;
	struct dd_plan plan = { 0 };
	struct dd_index *ix;
	struct dd_chunker c;
	size_t i, changed = 0;
	char line[512];

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, old);
	ASSERT_NE(NULL, dst);
	fill_random(src, len, 3);
	memcpy(old, src, len);
	for (i = 0; i < nblk; i++) {
		if (i % 4 != 1)
			continue;
		fill_random(old + i * blk, blk, 100 + i);
		changed += blk;
	}
	ASSERT_EQ(0, dd_chunker_init(&c, 0, 0, 0));
	ASSERT_EQ(0, dd_index_new(&ix, node_resolve, &nd));
	ASSERT_EQ(0, dd_chunk_range(&c, old, len, &lo));
	ASSERT_EQ(0, dd_index_add(ix, 1, 0, lo.v, lo.n));
	ASSERT_EQ(lo.n, dd_index_count(ix));

	ASSERT_EQ(0, do_move(&c, ix, &nd, src, len, 2, 0, &plan, &lst));
	ASSERT_EQ(0, memcmp(src, dst, len));
	dd_stats_format(&plan.st, 1.0, line, sizeof(line));
	TH_LOG("%s", line);
	TH_LOG("changed %zu B; %llu wire ops, %llu local ops", changed,
	       (unsigned long long)plan.st.wire_ops, (unsigned long long)plan.st.local_ops);
	EXPECT_EQ(len, plan.st.logical_bytes);
	EXPECT_EQ(len, plan.st.wire_bytes + plan.st.local_bytes + plan.st.inplace_bytes);
	/* Every changed byte must travel, and little else: each changed block
	 * drags in at most the chunk straddling each of its two edges. */
	EXPECT_LE(changed, plan.st.wire_bytes);
	EXPECT_GE(changed + changed / 2, plan.st.wire_bytes);
	EXPECT_EQ(0, plan.st.verify_failed);
	EXPECT_EQ(0, lst.stale);
	EXPECT_EQ(plan.st.local_ops, lst.runs);	/* one run per copied stretch */
	/* Merging: far fewer ops than chunks. */
	EXPECT_GE(nblk, plan.st.wire_ops + plan.st.local_ops);
	EXPECT_LT(0, plan.st.local_ops);
	/* The destination's new content is indexed: moving it again is free. */
	ASSERT_EQ(0, do_move(&c, ix, &nd, src, len, 2, 0, &plan, &lst));
	EXPECT_EQ(0, plan.st.wire_bytes);
	EXPECT_EQ(len, plan.st.inplace_bytes);
	EXPECT_EQ(0, plan.n);
	/* One BLAKE2b covers at most DD_RUN_MAX bytes. */
	EXPECT_LE(len / DD_RUN_MAX, lst.runs);
	EXPECT_GE(len / DD_RUN_MAX + 1, lst.runs);
	dd_plan_free(&plan);
	dd_chunk_list_free(&lo);
	dd_index_free(ix);
	free(src);
	free(old);
	free(dst);
}

/* A new checkpoint over the old one in the same arena: unchanged chunks
 * stay where they are, nothing reads bytes the move overwrites. */
TEST(in_place_update)
{
	const size_t len = 4 * MIB, blk = 64 << 10;
	uint8_t *src = malloc(len), *arena = malloc(len), *want;
	struct node nd = { .base = { arena }, .size = { len } };
	struct dd_chunk_list lo = { 0 };
	struct dd_lookup_stats lst;
	struct dd_plan plan = { 0 };
	struct dd_index *ix;
	struct dd_chunker c;
	size_t i;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, arena);
	fill_random(arena, len, 5);
	memcpy(src, arena, len);
	for (i = 3; i < len / blk; i += 10)
		fill_random(src + i * blk, 777, 200 + i);
	/* A shift too, so that some held chunks sit at another offset of
	 * the destination range itself: those must not be used. */
	memmove(src + 2 * MIB + 100, src + 2 * MIB, len - 2 * MIB - 100);
	want = malloc(len);
	ASSERT_NE(NULL, want);
	memcpy(want, src, len);
	ASSERT_EQ(0, dd_chunker_init(&c, 0, 0, 0));
	ASSERT_EQ(0, dd_index_new(&ix, node_resolve, &nd));
	ASSERT_EQ(0, dd_chunk_range(&c, arena, len, &lo));
	ASSERT_EQ(0, dd_index_add(ix, 0, 0, lo.v, lo.n));
	ASSERT_EQ(0, do_move(&c, ix, &nd, src, len, 0, 0, &plan, &lst));
	ASSERT_EQ(0, memcmp(want, arena, len));
	TH_LOG("in place %llu B, wire %llu B, local %llu B, overlap skipped %llu",
	       (unsigned long long)plan.st.inplace_bytes,
	       (unsigned long long)plan.st.wire_bytes,
	       (unsigned long long)plan.st.local_bytes,
	       (unsigned long long)lst.overlap_skipped);
	EXPECT_LT(len / 4, plan.st.inplace_bytes);
	EXPECT_EQ(0, plan.st.local_bytes);
	EXPECT_LT(0, lst.overlap_skipped);
	dd_plan_free(&plan);
	dd_chunk_list_free(&lo);
	dd_index_free(ix);
	free(src);
	free(arena);
	free(want);
}

/* Nothing in common: every byte goes over the wire, nothing is claimed. */
TEST(random_data_no_savings)
{
	const size_t len = 8 * MIB;
	uint8_t *src = malloc(len), *old = malloc(len), *dst = calloc(1, len);
	struct node nd = { .base = { NULL, old, dst }, .size = { 0, len, len } };
	struct dd_chunk_list lo = { 0 }, ls = { 0 };
	struct dd_lookup_stats lst = { 0 };
	struct dd_plan plan = { 0 };
	struct dd_answer *ans;
	struct dd_index *ix;
	struct dd_chunker c;
	double t0, t1, t2;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, old);
	ASSERT_NE(NULL, dst);
	fill_random(src, len, 7);
	fill_random(old, len, 8);
	ASSERT_EQ(0, dd_chunker_init(&c, 0, 0, 0));
	ASSERT_EQ(0, dd_index_new(&ix, node_resolve, &nd));
	ASSERT_EQ(0, dd_chunk_range(&c, old, len, &lo));
	ASSERT_EQ(0, dd_index_add(ix, 1, 0, lo.v, lo.n));
	t0 = now_s();
	ASSERT_EQ(0, dd_chunk_range(&c, src, len, &ls));
	ans = calloc(ls.n, sizeof(*ans));
	ASSERT_NE(NULL, ans);
	t1 = now_s();
	ASSERT_EQ(0, dd_index_lookup(ix, ls.v, ls.n, 2, 0, len, ans, &lst));
	ASSERT_EQ(0, dd_plan_build(ls.v, ls.n, ans, src, len, 2, 0, 0, &plan));
	t2 = now_s();
	ASSERT_EQ(0, dd_plan_exec_mem(&plan, src, len, dst, len, node_resolve, &nd, NULL));
	ASSERT_EQ(0, memcmp(src, dst, len));
	TH_LOG("measured, not claimed: chunk+xxh128 %.1f ms, lookup+plan of %zu chunks %.2f ms, "
	       "metadata %llu B (%.2f%% of logical)", (t1 - t0) * 1e3, ls.n,
	       (t2 - t1) * 1e3, (unsigned long long)plan.st.meta_bytes,
	       100.0 * plan.st.meta_bytes / len);
	EXPECT_EQ(0, lst.hits);
	EXPECT_EQ(len, plan.st.wire_bytes);
	EXPECT_EQ(0, plan.st.local_bytes + plan.st.inplace_bytes + plan.st.hit_chunks);
	EXPECT_EQ(1, plan.st.wire_ops);	/* merged into one transfer */
	EXPECT_EQ(dd_meta_request_bytes(ls.n) + dd_meta_answer_bytes(ls.n, 0),
		  plan.st.meta_bytes);
	free(ans);
	dd_plan_free(&plan);
	dd_chunk_list_free(&lo);
	dd_chunk_list_free(&ls);
	dd_index_free(ix);
	free(src);
	free(old);
	free(dst);
}

/* An index entry whose key does not match the bytes it points at (a fake
 * entry, or an arena written behind the index's back) is caught at the
 * destination and dropped; the chunk goes over the wire. */
TEST(collision_fake_index_entry)
{
	const size_t len = 1 * MIB;
	uint8_t *src = malloc(len), *other = malloc(len), *dst = calloc(1, len);
	struct node nd = { .base = { NULL, other, dst }, .size = { 0, len, len } };
	struct dd_chunk_list ls = { 0 };
	struct dd_lookup_stats lst;
	struct dd_plan plan = { 0 };
	struct dd_chunk fake;
	struct dd_index *ix;
	struct dd_chunker c;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, other);
	ASSERT_NE(NULL, dst);
	fill_random(src, len, 9);
	fill_random(other, len, 10);
	ASSERT_EQ(0, dd_chunker_init(&c, 0, 0, 0));
	ASSERT_EQ(0, dd_index_new(&ix, node_resolve, &nd));
	ASSERT_EQ(0, dd_chunk_range(&c, src, len, &ls));
	fake = ls.v[3];
	fake.off = 12345;	/* other's bytes there differ */
	ASSERT_EQ(0, dd_index_add(ix, 1, 0, &fake, 1));
	ASSERT_EQ(0, do_move(&c, ix, &nd, src, len, 2, 0, &plan, &lst));
	ASSERT_EQ(0, memcmp(src, dst, len));
	EXPECT_EQ(1, lst.stale);
	EXPECT_EQ(0, lst.hits);
	EXPECT_EQ(len, plan.st.wire_bytes);
	/* do_move() indexed the destination; the fake entry is gone. */
	EXPECT_EQ(ls.n, dd_index_count(ix));
	dd_plan_free(&plan);
	dd_chunk_list_free(&ls);
	dd_index_free(ix);
	free(src);
	free(other);
	free(dst);
}

/* A real xxh128 collision: the destination holds different bytes under the
 * same key, and hashes them honestly.  The BLAKE2b check at the source
 * refuses the hit; the chunk is sent.  A destination that answers with the
 * wrong BLAKE2b is caught by the whole-range check at the end. */
TEST(collision_strong_check)
{
	const size_t len = 1 * MIB;
	uint8_t *src = malloc(len), *other = malloc(len), *dst = calloc(1, len);
	uint8_t b_src[DD_B2_LEN], b_dst[DD_B2_LEN];
	struct node nd = { .base = { NULL, other, dst }, .size = { 0, len, len } };
	struct dd_chunk_list ls = { 0 };
	struct dd_plan plan = { 0 };
	struct dd_answer *ans;
	struct dd_chunker c;
	size_t k = 5;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, other);
	ASSERT_NE(NULL, dst);
	fill_random(src, len, 11);
	fill_random(other, len, 12);
	ASSERT_EQ(0, dd_chunker_init(&c, 0, 0, 0));
	ASSERT_EQ(0, dd_chunk_range(&c, src, len, &ls));
	ans = calloc(ls.n, sizeof(*ans));
	ASSERT_NE(NULL, ans);
	ans[k].present = 1;
	ans[k].run = 1;
	ans[k].arena = 1;
	ans[k].off = 4096;
	ASSERT_EQ(0, dd_blake2b_range(other + 4096, ls.v[k].len, ans[k].b2));
	ASSERT_EQ(0, dd_plan_build(ls.v, ls.n, ans, src, len, 2, 0, 0, &plan));
	EXPECT_EQ(1, plan.st.verify_failed);
	EXPECT_EQ(0, plan.st.hit_chunks);
	EXPECT_EQ(len, plan.st.wire_bytes);
	ASSERT_EQ(0, dd_plan_exec_mem(&plan, src, len, dst, len, node_resolve, &nd, NULL));
	ASSERT_EQ(0, memcmp(src, dst, len));

	/* A run whose second chunk is not where the BLAKE2b was computed:
	 * the digest matches the source, the run is still refused. */
	memset(ans, 0, ls.n * sizeof(*ans));
	ans[k] = (struct dd_answer){ .present = 1, .run = 2, .arena = 1, .off = 0 };
	ans[k + 1] = (struct dd_answer){ .present = 1, .arena = 1, .off = 99999 };
	ASSERT_EQ(0, dd_blake2b_range(src + ls.v[k].off, ls.v[k].len + ls.v[k + 1].len,
				      ans[k].b2));
	ASSERT_EQ(0, dd_plan_build(ls.v, ls.n, ans, src, len, 2, 0, 0, &plan));
	EXPECT_EQ(2, plan.st.verify_failed);
	EXPECT_EQ(len, plan.st.wire_bytes);
	/* "In place" somewhere else, and a copy from inside the destination
	 * range (it would race with the ops writing there): both refused,
	 * though the digest is right. */
	memset(ans, 0, ls.n * sizeof(*ans));
	ans[k] = (struct dd_answer){ .present = 1, .in_place = 1, .run = 1, .arena = 1,
				     .off = ls.v[k].off };
	ASSERT_EQ(0, dd_blake2b_range(src + ls.v[k].off, ls.v[k].len, ans[k].b2));
	ASSERT_EQ(0, dd_plan_build(ls.v, ls.n, ans, src, len, 2, 0, 0, &plan));
	EXPECT_EQ(1, plan.st.verify_failed);
	ans[k].in_place = 0;
	ans[k].arena = 2;
	ans[k].off = ls.v[k].off + 1;
	ASSERT_EQ(0, dd_plan_build(ls.v, ls.n, ans, src, len, 2, 0, 0, &plan));
	EXPECT_EQ(1, plan.st.verify_failed);
	ans[k].off = len;	/* just past the range: fine */
	ASSERT_EQ(0, dd_plan_build(ls.v, ls.n, ans, src, len, 2, 0, 0, &plan));
	EXPECT_EQ(0, plan.st.verify_failed);
	EXPECT_EQ(1, plan.st.local_ops);
	ans[k].in_place = 1;	/* at its own position: in place */
	ans[k].off = ls.v[k].off;
	ASSERT_EQ(0, dd_plan_build(ls.v, ls.n, ans, src, len, 2, 0, 0, &plan));
	EXPECT_EQ(0, plan.st.verify_failed);
	EXPECT_EQ(ls.v[k].len, plan.st.inplace_bytes);
	ans[k].in_place = 0;	/* at its own position yet "not in place" */
	ASSERT_EQ(0, dd_plan_build(ls.v, ls.n, ans, src, len, 2, 0, 0, &plan));
	EXPECT_EQ(1, plan.st.verify_failed);

	/* A run longer than the list. */
	ans[k].run = (uint32_t)(ls.n - k + 1);
	ASSERT_EQ(0, dd_plan_build(ls.v, ls.n, ans, src, len, 2, 0, 0, &plan));
	EXPECT_EQ(len, plan.st.wire_bytes);
	memset(ans, 0, ls.n * sizeof(*ans));
	ans[k] = (struct dd_answer){ .present = 1, .run = 1, .arena = 1, .off = 4096 };

	/* A lying destination: the source's own BLAKE2b, other bytes. */
	ASSERT_EQ(0, dd_blake2b_range(src + ls.v[k].off, ls.v[k].len, ans[k].b2));
	ASSERT_EQ(0, dd_plan_build(ls.v, ls.n, ans, src, len, 2, 0, 0, &plan));
	EXPECT_EQ(1, plan.st.hit_chunks);
	ASSERT_EQ(0, dd_plan_exec_mem(&plan, src, len, dst, len, node_resolve, &nd, NULL));
	ASSERT_EQ(0, dd_blake2b_range(src, len, b_src));
	ASSERT_EQ(0, dd_blake2b_range(dst, len, b_dst));
	EXPECT_NE(0, memcmp(b_src, b_dst, DD_B2_LEN));
	free(ans);
	dd_plan_free(&plan);
	dd_chunk_list_free(&ls);
	free(src);
	free(other);
	free(dst);
}

TEST(edge_zero_small_unaligned)
{
	const size_t big = 300007;
	uint8_t *mem = malloc(big + 16), *old = malloc(big + 16), *dst = calloc(1, big + 64);
	struct node nd = { .base = { NULL, old, dst }, .size = { 0, big + 16, big + 64 } };
	struct dd_chunk_list l = { 0 }, lo = { 0 };
	struct dd_lookup_stats lst;
	struct dd_plan plan = { 0 };
	struct dd_index *ix;
	struct dd_chunker c;
	uint8_t b2[DD_B2_LEN];

	ASSERT_NE(NULL, mem);
	ASSERT_NE(NULL, old);
	ASSERT_NE(NULL, dst);
	fill_random(mem, big + 16, 13);
	ASSERT_EQ(0, dd_chunker_init(&c, 0, 0, 0));
	ASSERT_EQ(0, dd_index_new(&ix, node_resolve, &nd));

	/* Zero length: no chunks, an empty plan, nothing done. */
	ASSERT_EQ(0, dd_chunk_range(&c, NULL, 0, &l));
	EXPECT_EQ(0, l.n);
	ASSERT_EQ(0, dd_plan_build(NULL, 0, NULL, NULL, 0, 0, 0, 0, &plan));
	EXPECT_EQ(0, plan.n);
	EXPECT_EQ(0, plan.st.logical_bytes);
	ASSERT_EQ(0, dd_plan_exec_mem(&plan, NULL, 0, NULL, 0, NULL, NULL, NULL));
	ASSERT_EQ(0, dd_index_lookup(ix, NULL, 0, 0, 0, 0, NULL, NULL));
	ASSERT_EQ(0, dd_blake2b_range(NULL, 0, b2));

	/* Shorter than the minimum chunk: one chunk. */
	ASSERT_EQ(0, dd_chunk_range(&c, mem + 1, 1000, &l));
	ASSERT_EQ(1, l.n);
	EXPECT_EQ(1000, l.v[0].len);
	EXPECT_EQ(1, dd_cut(&c, mem, 1));
	dd_chunk_list_free(&l);

	/* Unaligned everything: source at +3, odd length, destination at +5,
	 * the held copy at +7 of its arena. */
	memcpy(old + 7, mem + 3, big);
	fill_random(old + 7 + 100000, 10, 14);
	ASSERT_EQ(0, dd_chunk_range(&c, old + 7, big, &lo));
	ASSERT_EQ(0, dd_index_add(ix, 1, 7, lo.v, lo.n));
	ASSERT_EQ(0, do_move(&c, ix, &nd, mem + 3, big, 2, 5, &plan, &lst));
	ASSERT_EQ(0, memcmp(mem + 3, dst + 5, big));
	EXPECT_LT(0, plan.st.local_bytes);
	EXPECT_GT(big / 4, plan.st.wire_bytes);
	dd_plan_free(&plan);
	dd_chunk_list_free(&lo);
	dd_index_free(ix);
	free(mem);
	free(old);
	free(dst);
}

TEST(bad_arguments)
{
	uint8_t buf[4096] = { 0 };
	struct dd_chunk_list l = { 0 };
	struct dd_chunk bad[2];
	struct dd_answer ans[2];
	struct dd_plan plan = { 0 };
	struct dd_op op = { .kind = DD_OP_WIRE, .dst_off = 4000, .len = 200 };
	struct dd_plan p1 = { .ops = &op, .n = 1 };
	struct dd_node_dummy { int x; } dummy;
	struct dd_index *ix = NULL;
	struct dd_chunker c;
	char line[16];

	ASSERT_EQ(0, dd_chunker_init(&c, 0, 0, 0));
	EXPECT_EQ(-EINVAL, dd_chunk_range(NULL, buf, 10, &l));
	EXPECT_EQ(-EINVAL, dd_chunk_range(&c, NULL, 10, &l));
	EXPECT_EQ(-EINVAL, dd_chunk_range(&c, buf, 10, NULL));
	EXPECT_EQ(-EINVAL, dd_blake2b_range(NULL, 10, ans[0].b2));
	EXPECT_EQ(-EINVAL, dd_index_new(NULL, node_resolve, NULL));
	EXPECT_EQ(-EINVAL, dd_index_new(&ix, NULL, NULL));
	EXPECT_EQ(NULL, ix);
	ASSERT_EQ(0, dd_index_new(&ix, node_resolve, &dummy));
	EXPECT_EQ(-EINVAL, dd_index_add(NULL, 0, 0, bad, 1));
	EXPECT_EQ(-EINVAL, dd_index_add(ix, 0, 0, NULL, 1));
	bad[0] = (struct dd_chunk){ .off = 0, .len = 0 };
	EXPECT_EQ(-EINVAL, dd_index_add(ix, 0, 0, bad, 1));	/* empty chunk */
	bad[0] = (struct dd_chunk){ .off = UINT64_MAX - 10, .len = 100 };
	EXPECT_EQ(-EINVAL, dd_index_add(ix, 0, 0, bad, 1));	/* wraps */
	EXPECT_EQ(0, dd_index_count(ix));
	/* A chunk beyond the move's length. */
	bad[0] = (struct dd_chunk){ .off = 0, .len = 100 };
	bad[1] = (struct dd_chunk){ .off = 100, .len = 100 };
	EXPECT_EQ(-EINVAL, dd_index_lookup(ix, bad, 2, 0, 0, 150, ans, NULL));
	EXPECT_EQ(-EINVAL, dd_index_lookup(ix, bad, 2, 0, UINT64_MAX, 150, ans, NULL));
	EXPECT_EQ(-EINVAL, dd_index_lookup(NULL, bad, 2, 0, 0, 200, ans, NULL));
	EXPECT_EQ(-EINVAL, dd_index_lookup(ix, bad, 2, 0, 0, 200, NULL, NULL));
	EXPECT_EQ(0, dd_index_lookup(ix, bad, 2, 0, 0, 200, ans, NULL));
	/* Plans: chunks not covering the source exactly, in order. */
	EXPECT_EQ(-EINVAL, dd_plan_build(bad, 2, NULL, buf, 150, 0, 0, 0, &plan));
	EXPECT_EQ(-EINVAL, dd_plan_build(bad, 2, NULL, buf, 300, 0, 0, 0, &plan));
	bad[1].off = 101;
	EXPECT_EQ(-EINVAL, dd_plan_build(bad, 2, NULL, buf, 201, 0, 0, 0, &plan));
	bad[1].off = 100;
	EXPECT_EQ(-EINVAL, dd_plan_build(bad, 2, NULL, NULL, 200, 0, 0, 0, &plan));
	EXPECT_EQ(-EINVAL, dd_plan_build(bad, 2, NULL, buf, 200, 0, 0, 0, NULL));
	EXPECT_EQ(-EINVAL, dd_plan_build(bad, 2, NULL, buf, 200, 0, UINT64_MAX, 0, &plan));
	ASSERT_EQ(0, dd_plan_build(bad, 2, NULL, buf, 200, 0, 0, 0, &plan));
	EXPECT_EQ(1, plan.n);
	EXPECT_EQ(0, plan.st.meta_bytes);	/* no answers, no lookup */
	/* max_op caps merging. */
	ASSERT_EQ(0, dd_plan_build(bad, 2, NULL, buf, 200, 0, 0, 150, &plan));
	EXPECT_EQ(2, plan.n);
	/* Executing ops outside the buffers. */
	EXPECT_EQ(-EINVAL, dd_plan_exec_mem(&p1, buf, sizeof(buf), buf, sizeof(buf),
					    NULL, NULL, NULL));
	op.dst_off = 0;
	op.src_off = 4000;
	EXPECT_EQ(-EINVAL, dd_plan_exec_mem(&p1, buf, sizeof(buf), buf, sizeof(buf),
					    NULL, NULL, NULL));
	op.kind = DD_OP_LOCAL;
	op.src_off = 0;
	EXPECT_EQ(-EINVAL, dd_plan_exec_mem(&p1, buf, sizeof(buf), buf, sizeof(buf),
					    NULL, NULL, NULL));
	op.kind = 7;
	EXPECT_EQ(-EINVAL, dd_plan_exec_mem(&p1, buf, sizeof(buf), buf, sizeof(buf),
					    node_resolve, NULL, NULL));
	EXPECT_EQ(-EINVAL, dd_plan_exec_mem(NULL, buf, 1, buf, 1, NULL, NULL, NULL));
	EXPECT_EQ(-EINVAL, dd_stats_format(NULL, 1, line, sizeof(line)));
	EXPECT_EQ(0, dd_wire_speed(&plan.st, 0));
	EXPECT_EQ(0, dd_effective_speed(&plan.st, -1));
	dd_plan_free(&plan);
	dd_index_free(ix);
	dd_index_free(NULL);
}

TEST(local_source_gone_is_enoent)
{
	uint8_t buf[256] = { 0 };
	struct node nd = { .base = { buf }, .size = { sizeof(buf) } };
	struct dd_op op = { .kind = DD_OP_LOCAL, .arena = 3, .len = 16 };
	struct dd_plan p = { .ops = &op, .n = 1 };

	EXPECT_EQ(-ENOENT, dd_plan_exec_mem(&p, NULL, 0, buf, sizeof(buf),
					    node_resolve, &nd, NULL));
}

TEST(index_add_remove)
{
	const size_t len = 2 * MIB;
	uint8_t *a = malloc(len);
	struct node nd = { .base = { a, a }, .size = { len, len } };
	struct dd_chunk_list l = { 0 };
	struct dd_answer *ans;
	struct dd_lookup_stats lst = { 0 };
	struct dd_index *ix;
	struct dd_chunker c;
	size_t i, removed, inside = 0;

	ASSERT_NE(NULL, a);
	fill_random(a, len, 15);
	ASSERT_EQ(0, dd_chunker_init(&c, 0, 0, 0));
	ASSERT_EQ(0, dd_index_new(&ix, node_resolve, &nd));
	ASSERT_EQ(0, dd_chunk_range(&c, a, len, &l));
	/* The same content in two arenas (both views of a), added twice. */
	ASSERT_EQ(0, dd_index_add(ix, 0, 0, l.v, l.n));
	ASSERT_EQ(0, dd_index_add(ix, 0, 0, l.v, l.n));
	ASSERT_EQ(0, dd_index_add(ix, 1, 0, l.v, l.n));
	EXPECT_EQ(2 * l.n, dd_index_count(ix));
	for (i = 0; i < l.n; i++)
		inside += l.v[i].off < MIB && l.v[i].off + l.v[i].len > 4096;
	removed = dd_index_remove_range(ix, 0, 4096, MIB - 4096);
	EXPECT_EQ(inside, removed);
	EXPECT_EQ(0, dd_index_remove_range(ix, 0, 4096, 0));
	/* Still found, now in arena 1 (moved to arena 2: not in place). */
	ans = calloc(l.n, sizeof(*ans));
	ASSERT_NE(NULL, ans);
	ASSERT_EQ(0, dd_index_lookup(ix, l.v, l.n, 2, 0, len, ans, &lst));
	EXPECT_EQ(l.n, lst.hits);
	for (i = 0; i < l.n; i++) {
		EXPECT_EQ(1, ans[i].present);
		EXPECT_EQ(0, ans[i].in_place);
		if (l.v[i].off < MIB && l.v[i].off + l.v[i].len > 4096)
			EXPECT_EQ(1, ans[i].arena);
	}
	removed = dd_index_remove_range(ix, 1, 0, UINT64_MAX);
	EXPECT_EQ(l.n, removed);
	removed = dd_index_remove_range(ix, 0, 0, UINT64_MAX);
	EXPECT_EQ(l.n - inside, removed);
	EXPECT_EQ(0, dd_index_count(ix));
	/* Many more entries than the initial table: it grows. */
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, dd_index_add(ix, 1, i * len, l.v, l.n));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, dd_index_add(ix, 1, i * len, l.v, l.n));
	EXPECT_EQ(8 * l.n, dd_index_count(ix));
	EXPECT_EQ(8 * l.n, dd_index_remove_range(ix, 1, 0, UINT64_MAX));
	free(ans);
	dd_chunk_list_free(&l);
	dd_index_free(ix);
	free(a);
}

TEST(chunker_fingerprint)
{
	struct dd_chunker a, b;

	ASSERT_EQ(0, dd_chunker_init(&a, 0, 0, 0));
	ASSERT_EQ(0, dd_chunker_init(&b, 0, 0, 0));
	EXPECT_EQ(dd_chunker_fingerprint(&a), dd_chunker_fingerprint(&b));
	ASSERT_EQ(0, dd_chunker_init(&b, 4096, 16384, 65536));
	EXPECT_NE(dd_chunker_fingerprint(&a), dd_chunker_fingerprint(&b));
	ASSERT_EQ(0, dd_chunker_init(&b, 0, 0, 0));
	b.gear[17] ^= 1;
	EXPECT_NE(dd_chunker_fingerprint(&a), dd_chunker_fingerprint(&b));
}

/* Malformed requests and answers are refused, never half-used. */
TEST(wire_encoding_malformed)
{
	struct dd_chunk v[10], out[10];
	struct dd_answer ans[10], got[10];
	uint8_t buf[1024];
	long n;
	int k;

	for (k = 0; k < 10; k++)
		v[k] = (struct dd_chunk){ .off = (uint64_t)k * 100, .len = 100,
					  .hash = { .lo = (uint64_t)k, .hi = ~(uint64_t)k } };
	ASSERT_EQ(0, dd_request_encode(v, 10, buf, 200));
	EXPECT_EQ(-EINVAL, dd_request_encode(v, 10, buf, 199));
	EXPECT_EQ(10, dd_request_decode(buf, 200, out, 10));
	for (k = 0; k < 10; k++) {
		EXPECT_EQ(v[k].off, out[k].off);
		EXPECT_EQ(v[k].len, out[k].len);
		EXPECT_EQ(v[k].hash.lo, out[k].hash.lo);
		EXPECT_EQ(v[k].hash.hi, out[k].hash.hi);
	}
	EXPECT_EQ(-EINVAL, dd_request_decode(buf, 199, out, 10));	/* size */
	EXPECT_EQ(-EINVAL, dd_request_decode(buf, 200, out, 9));	/* room */
	memset(buf + 36, 0, 4);						/* len 0 */
	EXPECT_EQ(-EINVAL, dd_request_decode(buf, 200, out, 10));
	v[3].off = 301;							/* a gap */
	EXPECT_EQ(-EINVAL, dd_request_encode(v, 10, buf, 200));
	v[3].off = 300;

	/* Answers: chunks 2-4 held as one run, 7 as another, in place. */
	memset(ans, 0, sizeof(ans));
	for (k = 2; k <= 4; k++)
		ans[k] = (struct dd_answer){ .present = 1, .arena = 5,
					     .off = 1000 + (uint64_t)(k - 2) * 100 };
	ans[2].run = 3;
	memset(ans[2].b2, 0xab, DD_B2_LEN);
	ans[7] = (struct dd_answer){ .present = 1, .in_place = 1, .run = 1, .arena = 9,
				     .off = 700 };
	EXPECT_EQ(2, dd_answer_runs(ans, 10));
	n = dd_answer_encode(ans, 10, buf, sizeof(buf));
	ASSERT_EQ((long)dd_meta_answer_bytes(10, 2), n);
	EXPECT_EQ(-EINVAL, dd_answer_encode(ans, 10, buf, (size_t)n - 1));
	ASSERT_EQ(0, dd_answer_decode(buf, (size_t)n, v, 10, got));
	for (k = 0; k < 10; k++) {
		EXPECT_EQ(ans[k].present, got[k].present);
		EXPECT_EQ(ans[k].in_place, got[k].in_place);
		EXPECT_EQ(ans[k].run, got[k].run);
		EXPECT_EQ(ans[k].arena, got[k].arena);
		EXPECT_EQ(ans[k].off, got[k].off);
	}
	EXPECT_EQ(0, memcmp(ans[2].b2, got[2].b2, DD_B2_LEN));
	/* Trailing bytes, a truncated run. */
	EXPECT_EQ(-EINVAL, dd_answer_decode(buf, (size_t)n + 1, v, 10, got));
	EXPECT_EQ(-EINVAL, dd_answer_decode(buf, (size_t)n - 1, v, 10, got));
	/* A marked chunk in no run. */
	buf[0] |= 1;
	EXPECT_EQ(-EINVAL, dd_answer_decode(buf, (size_t)n, v, 10, got));
	buf[0] &= (uint8_t)~1;
	/* A bit past the last chunk. */
	buf[1] |= 0x80;
	EXPECT_EQ(-EINVAL, dd_answer_decode(buf, (size_t)n, v, 10, got));
	buf[1] &= 0x7f;
	/* A run member the bitmap does not mark. */
	buf[0] &= (uint8_t)~(1 << 3);
	EXPECT_EQ(-EINVAL, dd_answer_decode(buf, (size_t)n, v, 10, got));
	buf[0] |= 1 << 3;
	/* A run past the end: the second run's count. */
	buf[2 + 52 + 4] = 4;
	EXPECT_EQ(-EINVAL, dd_answer_decode(buf, (size_t)n, v, 10, got));
	buf[2 + 52 + 4] = 1;
	/* Runs out of order (overlapping). */
	buf[2 + 52] = 3;
	EXPECT_EQ(-EINVAL, dd_answer_decode(buf, (size_t)n, v, 10, got));
	buf[2 + 52] = 7;
	ASSERT_EQ(0, dd_answer_decode(buf, (size_t)n, v, 10, got));
	/* Nothing held: just the bitmap. */
	memset(ans, 0, sizeof(ans));
	EXPECT_EQ(2, dd_answer_encode(ans, 10, buf, sizeof(buf)));
	EXPECT_EQ(0, dd_answer_decode(buf, 2, v, 10, got));
	EXPECT_EQ(0, dd_answer_encode(NULL, 0, NULL, 0));
}

/* Random and mutated answers: decoded or refused, and whatever is
 * decoded plans and executes inside the buffers, byte-exact. */
TEST(answer_decode_fuzz)
{
	const size_t len = 256 << 10;
	uint8_t *src = malloc(len), *old = malloc(len), *dst = malloc(len);
	uint8_t buf[4096], good[4096];
	struct node nd = { .base = { NULL, old, dst }, .size = { 0, len, len } };
	struct dd_chunk_list l = { 0 }, lo = { 0 };
	struct dd_answer *ans, *got;
	struct dd_plan plan = { 0 };
	struct dd_index *ix;
	struct dd_chunker c;
	uint64_t x = 42;
	struct dd_hash hs, hd;
	size_t moved;
	long glen;
	int it, accepted = 0, exact = 0, caught = 0;

	ASSERT_NE(NULL, src);
	ASSERT_NE(NULL, old);
	ASSERT_NE(NULL, dst);
	fill_random(src, len, 21);
	memcpy(old, src, len);
	fill_random(old + 100000, 5000, 22);
	ASSERT_EQ(0, dd_chunker_init(&c, 0, 0, 0));
	ASSERT_EQ(0, dd_index_new(&ix, node_resolve, &nd));
	ASSERT_EQ(0, dd_chunk_range(&c, old, len, &lo));
	ASSERT_EQ(0, dd_index_add(ix, 1, 0, lo.v, lo.n));
	ASSERT_EQ(0, dd_chunk_range(&c, src, len, &l));
	ans = calloc(l.n, sizeof(*ans));
	got = calloc(l.n, sizeof(*got));
	ASSERT_NE(NULL, ans);
	ASSERT_NE(NULL, got);
	ASSERT_EQ(0, dd_index_lookup(ix, l.v, l.n, 2, 0, len, ans, NULL));
	glen = dd_answer_encode(ans, l.n, good, sizeof(good));
	ASSERT_LT(0, glen);
	for (it = 0; it < 3000; it++) {
		size_t sz = (size_t)glen, k, flips;

		memcpy(buf, good, sizeof(buf));
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		if (it % 3 == 0)
			sz = (size_t)(x >> 33) % (size_t)glen + 1;	/* truncated */
		flips = 1 + (x >> 20) % 4;
		for (k = 0; k < flips; k++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			buf[(x >> 33) % sz] ^= (uint8_t)(1u << ((x >> 29) % 8));
		}
		if (dd_answer_decode(buf, sz, l.v, l.n, got))
			continue;
		accepted++;
		ASSERT_EQ(0, dd_plan_build(l.v, l.n, got, src, len, 2, 0, 0, &plan));
		memset(dst, 0, len);
		if (dd_plan_exec_mem(&plan, src, len, dst, len, node_resolve, &nd, NULL))
			continue;	/* a location that is not there: refused */
		if (!memcmp(src, dst, len)) {
			exact++;
			continue;
		}
		/* Wrong bytes only from a location the destination did not
		 * answer (as a lying destination would), and the end check
		 * sees them. */
		moved = 0;
		for (k = 0; k < l.n; k++)
			moved += got[k].present && ans[k].present &&
				 (got[k].arena != ans[k].arena || got[k].off != ans[k].off);
		ASSERT_LT(0, moved);
		hs = dd_xxh128(src, len);
		hd = dd_xxh128(dst, len);
		ASSERT_FALSE(hs.lo == hd.lo && hs.hi == hd.hi);
		caught++;
	}
	TH_LOG("of 3000 mutated answers %d decoded: %d byte-exact, %d wrong location "
	       "caught by the end check, the rest refused at execution",
	       accepted, exact, caught);
	free(ans);
	free(got);
	dd_plan_free(&plan);
	dd_chunk_list_free(&l);
	dd_chunk_list_free(&lo);
	dd_index_free(ix);
	free(src);
	free(old);
	free(dst);
}

TEST(stats_labelled)
{
	struct dd_stats st = { .logical_bytes = 1000000, .wire_bytes = 250000,
			       .meta_bytes = 0 };
	char line[512];

	EXPECT_LT(0, dd_stats_format(&st, 0.5, line, sizeof(line)));
	EXPECT_NE(NULL, strstr(line, "wire speed 0.5 MB/s"));
	EXPECT_NE(NULL, strstr(line, "effective speed (logical/elapsed, not a link speed) 2.0 MB/s"));
	EXPECT_EQ(500000.0, dd_wire_speed(&st, 0.5));
	EXPECT_EQ(2000000.0, dd_effective_speed(&st, 0.5));
}

TEST_HARNESS_MAIN

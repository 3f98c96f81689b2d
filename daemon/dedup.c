// SPDX-License-Identifier: GPL-2.0
/*
 * dedup.c - content-defined chunking (FastCDC), the chunk index and the
 * move planner of dmaplaned's deduplicated moves.  See dedup.h.
 *
 * Hashes come from Debian's libraries: xxh128 (libxxhash) keys the index,
 * BLAKE2b-256 (libb2) is the strong check of every byte a move does not
 * send (per chunk, before it is used) and of the whole range at the end.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blake2.h>
#include <xxhash.h>

#include "dedup.h"

/* ------------------------------------------------------------------ */
/* Chunking */

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* The top @bits bits of a 64-bit word: the gear hash shifts left, so the
 * high bits depend on the last 64 bytes and the low ones on the last few. */
static uint64_t top_mask(unsigned int bits)
{
	return bits >= 64 ? ~0ULL : ~0ULL << (64 - bits);
}

int dd_chunker_init(struct dd_chunker *c, uint32_t min_size, uint32_t avg_size,
		    uint32_t max_size)
{
	uint64_t seed = 0x646d61706c616e65ULL;	/* "dmaplane": fixed */
	unsigned int bits = 0;
	int i;

	if (!c)
		return -EINVAL;
	if (!min_size)
		min_size = DD_CHUNK_MIN_DEFAULT;
	if (!avg_size)
		avg_size = DD_CHUNK_AVG_DEFAULT;
	if (!max_size)
		max_size = DD_CHUNK_MAX_DEFAULT;
	if (min_size < DD_CHUNK_MIN_LIMIT || avg_size < 256 ||
	    (avg_size & (avg_size - 1)) || min_size >= avg_size ||
	    avg_size >= max_size || max_size > DD_CHUNK_MAX_LIMIT)
		return -EINVAL;
	while ((1u << bits) < avg_size)
		bits++;
	c->min_size = min_size;
	c->avg_size = avg_size;
	c->max_size = max_size;
	/* Normalized chunking, level 2: harder before avg, easier after. */
	c->mask_s = top_mask(bits + 2);
	c->mask_l = top_mask(bits - 2);
	for (i = 0; i < 256; i++)
		c->gear[i] = splitmix64(&seed);
	return 0;
}

size_t dd_cut(const struct dd_chunker *c, const uint8_t *p, size_t n)
{
	size_t i, end, normal;
	uint64_t fp = 0;

	if (n <= c->min_size)
		return n;
	end = n < c->max_size ? n : c->max_size;
	normal = c->avg_size < end ? c->avg_size : end;
	for (i = c->min_size; i < normal; i++) {
		fp = (fp << 1) + c->gear[p[i]];
		if (!(fp & c->mask_s))
			return i + 1;
	}
	for (; i < end; i++) {
		fp = (fp << 1) + c->gear[p[i]];
		if (!(fp & c->mask_l))
			return i + 1;
	}
	return end;
}

struct dd_hash dd_xxh128(const void *p, size_t len)
{
	XXH128_hash_t h = XXH3_128bits(p, len);
	struct dd_hash r = { .lo = h.low64, .hi = h.high64 };

	return r;
}

static bool hash_eq(const struct dd_hash *a, const struct dd_hash *b)
{
	return a->lo == b->lo && a->hi == b->hi;
}

static int grow(void **v, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	void *nv;

	if (need <= *cap)
		return 0;
	ncap = *cap ? *cap : 64;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		ncap *= 2;
	}
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

int dd_chunk_range(const struct dd_chunker *c, const void *base, size_t len,
		   struct dd_chunk_list *out)
{
	const uint8_t *p = base;
	size_t off = 0, n0;

	if (!c || !out || (!base && len) || !c->max_size)
		return -EINVAL;
	n0 = out->n;
	while (off < len) {
		size_t l = dd_cut(c, p + off, len - off);
		struct dd_chunk *ch;

		if (grow((void **)&out->v, &out->cap, out->n + 1, sizeof(*out->v))) {
			out->n = n0;
			return -ENOMEM;
		}
		ch = &out->v[out->n++];
		memset(ch, 0, sizeof(*ch));	/* no stray padding bytes */
		ch->off = off;
		ch->len = (uint32_t)l;
		ch->hash = dd_xxh128(p + off, l);
		off += l;
	}
	return 0;
}

uint64_t dd_chunker_fingerprint(const struct dd_chunker *c)
{
	uint8_t buf[3 * 4 + 2 * 8 + sizeof(c->gear)];

	if (!c)
		return 0;
	memcpy(buf, &c->min_size, 4);
	memcpy(buf + 4, &c->avg_size, 4);
	memcpy(buf + 8, &c->max_size, 4);
	memcpy(buf + 12, &c->mask_s, 8);
	memcpy(buf + 20, &c->mask_l, 8);
	memcpy(buf + 28, c->gear, sizeof(c->gear));
	return XXH64(buf, sizeof(buf), 0);
}

void dd_chunk_list_free(struct dd_chunk_list *l)
{
	if (!l)
		return;
	free(l->v);
	memset(l, 0, sizeof(*l));
}

int dd_blake2b_range(const void *p, size_t len, uint8_t out[DD_B2_LEN])
{
	static const uint8_t empty[1];

	if (!out || (!p && len))
		return -EINVAL;
	return blake2b(out, p ? p : empty, NULL, DD_B2_LEN, len, 0) ? -EINVAL : 0;
}

/* ------------------------------------------------------------------ */
/* The index: open addressing with linear probing, keyed by xxh128. */

enum { SLOT_EMPTY = 0, SLOT_USED = 1, SLOT_DEAD = 2 };

struct dd_slot {
	struct dd_hash hash;
	uint64_t off;
	uint32_t arena;
	uint32_t len;
	uint8_t state;
};

struct dd_index {
	struct dd_slot *t;
	size_t cap;		/* a power of two */
	size_t used, dead;
	dd_resolve_fn resolve;
	void *ctx;
};

int dd_index_new(struct dd_index **out, dd_resolve_fn resolve, void *ctx)
{
	struct dd_index *ix;

	if (!out || !resolve)
		return -EINVAL;
	ix = calloc(1, sizeof(*ix));
	if (!ix)
		return -ENOMEM;
	ix->cap = 1024;
	ix->t = calloc(ix->cap, sizeof(*ix->t));
	if (!ix->t) {
		free(ix);
		return -ENOMEM;
	}
	ix->resolve = resolve;
	ix->ctx = ctx;
	*out = ix;
	return 0;
}

void dd_index_free(struct dd_index *ix)
{
	if (!ix)
		return;
	free(ix->t);
	free(ix);
}

size_t dd_index_count(const struct dd_index *ix)
{
	return ix ? ix->used : 0;
}

static void put_slot(struct dd_slot *t, size_t cap, const struct dd_slot *s)
{
	size_t i = s->hash.lo & (cap - 1);

	while (t[i].state == SLOT_USED)
		i = (i + 1) & (cap - 1);
	t[i] = *s;
	t[i].state = SLOT_USED;
}

/* Make room for @more entries: rehash (dropping tombstones), doubling when
 * the live entries alone would fill more than half. */
static int reserve(struct dd_index *ix, size_t more)
{
	size_t ncap = ix->cap, i;
	struct dd_slot *nt;

	if ((ix->used + ix->dead + more) * 4 < ix->cap * 3)
		return 0;
	while ((ix->used + more) * 2 >= ncap) {
		if (ncap > SIZE_MAX / 2 / sizeof(*nt))
			return -ENOMEM;
		ncap *= 2;
	}
	nt = calloc(ncap, sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	for (i = 0; i < ix->cap; i++)
		if (ix->t[i].state == SLOT_USED)
			put_slot(nt, ncap, &ix->t[i]);
	free(ix->t);
	ix->t = nt;
	ix->cap = ncap;
	ix->dead = 0;
	return 0;
}

static bool have_entry(const struct dd_index *ix, const struct dd_slot *s)
{
	size_t i = s->hash.lo & (ix->cap - 1);

	for (; ix->t[i].state != SLOT_EMPTY; i = (i + 1) & (ix->cap - 1)) {
		const struct dd_slot *e = &ix->t[i];

		if (e->state == SLOT_USED && hash_eq(&e->hash, &s->hash) &&
		    e->arena == s->arena && e->off == s->off && e->len == s->len)
			return true;
	}
	return false;
}

int dd_index_add(struct dd_index *ix, uint32_t arena, uint64_t base_off,
		 const struct dd_chunk *v, size_t n)
{
	size_t k;
	int ret;

	if (!ix || (!v && n))
		return -EINVAL;
	for (k = 0; k < n; k++)
		if (!v[k].len || v[k].len > UINT64_MAX - base_off ||
		    v[k].off > UINT64_MAX - base_off - v[k].len)
			return -EINVAL;
	ret = reserve(ix, n);
	if (ret)
		return ret;
	for (k = 0; k < n; k++) {
		struct dd_slot s = {
			.hash = v[k].hash, .off = base_off + v[k].off,
			.arena = arena, .len = v[k].len,
		};

		if (have_entry(ix, &s))
			continue;
		/* A tombstone may be reused only if no equal entry follows;
		 * have_entry() just checked, so the first free slot is fine. */
		{
			size_t i = s.hash.lo & (ix->cap - 1);

			while (ix->t[i].state == SLOT_USED)
				i = (i + 1) & (ix->cap - 1);
			if (ix->t[i].state == SLOT_DEAD)
				ix->dead--;
			ix->t[i] = s;
			ix->t[i].state = SLOT_USED;
		}
		ix->used++;
	}
	return 0;
}

static void drop(struct dd_index *ix, struct dd_slot *e)
{
	e->state = SLOT_DEAD;
	ix->used--;
	ix->dead++;
}

size_t dd_index_remove_range(struct dd_index *ix, uint32_t arena, uint64_t off,
			     uint64_t len)
{
	uint64_t end = len > UINT64_MAX - off ? UINT64_MAX : off + len;
	size_t i, removed = 0;

	if (!ix || !len)
		return 0;
	for (i = 0; i < ix->cap; i++) {
		struct dd_slot *e = &ix->t[i];

		if (e->state != SLOT_USED || e->arena != arena)
			continue;
		if (e->off < end && e->off + e->len > off) {
			drop(ix, e);
			removed++;
		}
	}
	return removed;
}

/* Is the entry's content still what its key says?  Drops it if not. */
static const void *verify_entry(struct dd_index *ix, struct dd_slot *e,
				struct dd_lookup_stats *st)
{
	const void *p = ix->resolve(ix->ctx, e->arena, e->off, e->len);
	struct dd_hash h;

	if (p) {
		h = dd_xxh128(p, e->len);
		if (hash_eq(&h, &e->hash))
			return p;
	}
	drop(ix, e);
	if (st)
		st->stale++;
	return NULL;
}

/* Close the run that starts at answer @head: BLAKE2b over its held bytes,
 * which lie contiguously in one arena. */
static void close_run(struct dd_index *ix, const struct dd_chunk *v,
		      struct dd_answer *ans, size_t head, size_t count)
{
	uint64_t len = v[head + count - 1].off + v[head + count - 1].len - v[head].off;
	const void *p = ix->resolve(ix->ctx, ans[head].arena, ans[head].off, len);
	size_t j;

	if (!p) {	/* each chunk resolved, the whole did not: answer no */
		for (j = head; j < head + count; j++)
			memset(&ans[j], 0, sizeof(ans[j]));
		return;
	}
	ans[head].run = (uint32_t)count;
	blake2b(ans[head].b2, p, NULL, DD_B2_LEN, len, 0);
}

int dd_index_lookup(struct dd_index *ix, const struct dd_chunk *v, size_t n,
		    uint32_t dst_arena, uint64_t dst_off, uint64_t dst_len,
		    struct dd_answer *ans, struct dd_lookup_stats *st)
{
	size_t k, head = 0, count = 0;
	uint64_t dst_end, run_bytes = 0;

	if (!ix || (n && (!v || !ans)) || dst_len > UINT64_MAX - dst_off)
		return -EINVAL;
	for (k = 0; k < n; k++)
		if (!v[k].len || v[k].off > dst_len || v[k].len > dst_len - v[k].off ||
		    (k && v[k].off != v[k - 1].off + v[k - 1].len))
			return -EINVAL;
	dst_end = dst_off + dst_len;
	for (k = 0; k < n; k++) {
		uint64_t want = dst_off + v[k].off;
		const struct dd_answer *prev = count ? &ans[k - 1] : NULL;
		const void *held = NULL;
		struct dd_slot *pick = NULL;
		int pass;

		memset(&ans[k], 0, sizeof(ans[k]));
		/* Pass 0: the chunk already at its own destination position;
		 * pass 1: right after the previous chunk's pick (a longer run);
		 * pass 2: anywhere outside the destination range. */
		for (pass = 0; pass < 3 && !held; pass++) {
			size_t i = v[k].hash.lo & (ix->cap - 1);

			if (pass == 1 && (!prev || prev->in_place))
				continue;
			for (; ix->t[i].state != SLOT_EMPTY; i = (i + 1) & (ix->cap - 1)) {
				struct dd_slot *e = &ix->t[i];
				bool inside;

				if (e->state != SLOT_USED || !hash_eq(&e->hash, &v[k].hash) ||
				    e->len != v[k].len)
					continue;
				inside = e->arena == dst_arena && e->off < dst_end &&
					 e->off + e->len > dst_off;
				if (pass == 0 && !(inside && e->off == want))
					continue;
				if (pass == 1 && (inside || e->arena != prev->arena ||
						  e->off != prev->off + v[k - 1].len))
					continue;
				if (pass == 2 && inside) {
					if (st && e->off != want)
						st->overlap_skipped++;
					continue;
				}
				held = verify_entry(ix, e, st);
				if (held) {
					pick = e;
					break;
				}
			}
		}
		if (held) {
			ans[k].present = 1;
			ans[k].in_place = pick->arena == dst_arena && pick->off == want;
			ans[k].arena = pick->arena;
			ans[k].off = pick->off;
		}
		/* Runs: held chunks contiguous in one arena, in place or not
		 * alike, up to DD_RUN_MAX bytes, share one BLAKE2b. */
		if (count && (!held || ans[k].arena != prev->arena ||
			      ans[k].in_place != prev->in_place ||
			      ans[k].off != prev->off + v[k - 1].len ||
			      run_bytes + v[k].len > DD_RUN_MAX)) {
			close_run(ix, v, ans, head, count);
			count = 0;
		}
		if (held) {
			if (!count) {
				head = k;
				run_bytes = 0;
			}
			count++;
			run_bytes += v[k].len;
		}
	}
	if (count)
		close_run(ix, v, ans, head, count);
	if (st) {
		st->hits = 0;
		for (k = 0; k < n; k++) {
			st->hits += ans[k].present;
			st->runs += ans[k].run != 0;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The plan */

void dd_plan_free(struct dd_plan *p)
{
	if (!p)
		return;
	free(p->ops);
	memset(p, 0, sizeof(*p));
}

uint64_t dd_meta_request_bytes(size_t nchunks)
{
	return (uint64_t)nchunks * 20;		/* xxh128 + 32-bit length */
}

uint64_t dd_meta_answer_bytes(size_t nchunks, size_t nruns)
{
	/* a bit per chunk (held or not); per run: its first chunk and count
	 * (4 + 4), arena (4), offset (8), BLAKE2b (32) */
	return ((uint64_t)nchunks + 7) / 8 + (uint64_t)nruns * 52;
}

static int add_op(struct dd_plan *p, uint32_t kind, uint32_t arena,
		  uint64_t src_off, uint64_t dst_off, uint64_t len, uint64_t max_op)
{
	struct dd_op *last = p->n ? &p->ops[p->n - 1] : NULL;

	if (last && last->kind == kind && last->dst_off + last->len == dst_off &&
	    last->src_off + last->len == src_off &&
	    (kind == DD_OP_WIRE || last->arena == arena) &&
	    (!max_op || last->len + len <= max_op)) {
		last->len += len;
		return 0;
	}
	if (grow((void **)&p->ops, &p->cap, p->n + 1, sizeof(*p->ops)))
		return -ENOMEM;
	p->ops[p->n++] = (struct dd_op){
		.kind = kind, .arena = kind == DD_OP_LOCAL ? arena : 0,
		.src_off = src_off, .dst_off = dst_off, .len = len,
	};
	return 0;
}

/*
 * Can the run the destination answered at @k be used?  Its members must
 * be held, alike in place, contiguous in one arena (so that the BLAKE2b
 * the destination computed covers exactly what the local copies read),
 * and that BLAKE2b must equal the source's over the same chunks.
 */
static bool run_ok(const struct dd_chunk *v, size_t n, const struct dd_answer *ans,
		   size_t k, const uint8_t *s, uint32_t dst_arena, uint64_t dst_off,
		   uint64_t src_len)
{
	size_t m = ans[k].run, j;
	uint8_t b2[DD_B2_LEN];
	uint64_t len;
	bool at_own, inside;

	if (m > n - k)
		return false;
	len = v[k + m - 1].off + v[k + m - 1].len - v[k].off;
	/* In place means at its own position; anything else must lie
	 * outside the destination range (else ops would race). */
	at_own = ans[k].arena == dst_arena && ans[k].off == dst_off + v[k].off;
	if (!!ans[k].in_place != at_own || ans[k].off > UINT64_MAX - len)
		return false;
	inside = ans[k].arena == dst_arena && ans[k].off < dst_off + src_len &&
		 ans[k].off + len > dst_off;
	if (inside && !at_own)
		return false;
	for (j = k + 1; j < k + m; j++)
		if (!ans[j].present || ans[j].run || ans[j].arena != ans[k].arena ||
		    ans[j].in_place != ans[k].in_place ||
		    ans[j].off != ans[k].off + (v[j].off - v[k].off))
			return false;
	blake2b(b2, s + v[k].off, NULL, DD_B2_LEN, len, 0);
	return !memcmp(b2, ans[k].b2, DD_B2_LEN);
}

int dd_plan_build(const struct dd_chunk *v, size_t n, const struct dd_answer *ans,
		  const void *src, size_t src_len, uint32_t dst_arena, uint64_t dst_off,
		  uint64_t max_op, struct dd_plan *plan)
{
	const uint8_t *s = src;
	uint64_t expect = 0;
	size_t k, runs = 0;
	int ret;

	if (!plan || (n && !v) || (!src && src_len) || src_len > UINT64_MAX - dst_off)
		return -EINVAL;
	for (k = 0; k < n; k++) {
		if (v[k].off != expect || !v[k].len || v[k].len > src_len - expect)
			return -EINVAL;
		expect += v[k].len;
	}
	if (expect != src_len)
		return -EINVAL;
	plan->n = 0;
	memset(&plan->st, 0, sizeof(plan->st));
	plan->st.logical_bytes = src_len;
	plan->st.chunks = n;
	for (k = 0; k < n; k++) {
		size_t m = 1, j;
		bool use = false;

		if (ans && ans[k].present && ans[k].run) {
			use = run_ok(v, n, ans, k, s, dst_arena, dst_off, src_len);
			m = ans[k].run < n - k ? ans[k].run : n - k;
			runs++;
			if (!use)
				plan->st.verify_failed += m;
		}
		for (j = k; j < k + m; j++) {
			const struct dd_chunk *c = &v[j];
			uint64_t to = dst_off + c->off;

			if (use && ans[j].in_place) {
				plan->st.inplace_bytes += c->len;
				plan->st.hit_chunks++;
				continue;
			}
			if (use) {
				ret = add_op(plan, DD_OP_LOCAL, ans[j].arena, ans[j].off, to,
					     c->len, max_op);
				plan->st.local_bytes += c->len;
				plan->st.hit_chunks++;
			} else {
				ret = add_op(plan, DD_OP_WIRE, 0, c->off, to, c->len, max_op);
				plan->st.wire_bytes += c->len;
			}
			if (ret) {
				dd_plan_free(plan);
				return ret;
			}
		}
		k += m - 1;
	}
	for (k = 0; k < plan->n; k++) {
		if (plan->ops[k].kind == DD_OP_WIRE)
			plan->st.wire_ops++;
		else
			plan->st.local_ops++;
	}
	plan->st.meta_bytes = ans ? dd_meta_request_bytes(n) +
				    dd_meta_answer_bytes(n, runs) : 0;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Wire encoding */

static void put32(uint8_t *p, uint32_t x)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(x >> (8 * i));
}

static void put64(uint8_t *p, uint64_t x)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(x >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t x = 0;

	for (int i = 3; i >= 0; i--)
		x = x << 8 | p[i];
	return x;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t x = 0;

	for (int i = 7; i >= 0; i--)
		x = x << 8 | p[i];
	return x;
}

#define REQ_LEN		20
#define RUN_LEN		52
#define RUN_IN_PLACE	0x80000000u

int dd_request_encode(const struct dd_chunk *v, size_t n, void *buf, size_t size)
{
	uint8_t *b = buf;
	uint64_t off = 0;
	size_t k;

	if ((n && (!v || !buf)) || n > SIZE_MAX / REQ_LEN || size < n * REQ_LEN)
		return -EINVAL;
	for (k = 0; k < n; k++) {
		if (v[k].off != off || !v[k].len)
			return -EINVAL;
		off += v[k].len;
		put64(b + k * REQ_LEN, v[k].hash.lo);
		put64(b + k * REQ_LEN + 8, v[k].hash.hi);
		put32(b + k * REQ_LEN + 16, v[k].len);
	}
	return 0;
}

long dd_request_decode(const void *buf, size_t size, struct dd_chunk *v, size_t n)
{
	const uint8_t *b = buf;
	size_t k, cnt = size / REQ_LEN;
	uint64_t off = 0;

	if (size % REQ_LEN || cnt > n || cnt > LONG_MAX || (cnt && (!buf || !v)))
		return -EINVAL;
	for (k = 0; k < cnt; k++) {
		memset(&v[k], 0, sizeof(v[k]));
		v[k].hash.lo = get64(b + k * REQ_LEN);
		v[k].hash.hi = get64(b + k * REQ_LEN + 8);
		v[k].len = get32(b + k * REQ_LEN + 16);
		v[k].off = off;
		if (!v[k].len || off > (UINT64_MAX >> 1))
			return -EINVAL;
		off += v[k].len;
	}
	return (long)cnt;
}

size_t dd_answer_runs(const struct dd_answer *ans, size_t n)
{
	size_t k, runs = 0;

	for (k = 0; ans && k < n; k++)
		runs += ans[k].present && ans[k].run;
	return runs;
}

long dd_answer_encode(const struct dd_answer *ans, size_t n, void *buf, size_t size)
{
	size_t k, bits = (n + 7) / 8, need;
	uint8_t *b = buf, *r;

	if (n && !ans)
		return -EINVAL;
	need = dd_meta_answer_bytes(n, dd_answer_runs(ans, n));
	if (need > size || need > LONG_MAX || (need && !buf))
		return -EINVAL;
	if (!need)
		return 0;
	memset(b, 0, bits);
	r = b + bits;
	for (k = 0; k < n; k++) {
		if (!ans[k].present)
			continue;
		b[k / 8] |= (uint8_t)(1u << (k % 8));
		if (!ans[k].run)
			continue;
		if (ans[k].run > n - k || ans[k].run >= RUN_IN_PLACE || k > UINT32_MAX)
			return -EINVAL;
		put32(r, (uint32_t)k);
		put32(r + 4, ans[k].run | (ans[k].in_place ? RUN_IN_PLACE : 0));
		put32(r + 8, ans[k].arena);
		put64(r + 12, ans[k].off);
		memcpy(r + 20, ans[k].b2, DD_B2_LEN);
		r += RUN_LEN;
	}
	return (long)need;
}

int dd_answer_decode(const void *buf, size_t size, const struct dd_chunk *v, size_t n,
		     struct dd_answer *ans)
{
	const uint8_t *b = buf, *r;
	size_t k, bits = (n + 7) / 8, nruns, next = 0, covered = 0, marked = 0;

	if ((n && (!v || !ans || !buf)) || size < bits || (size - bits) % RUN_LEN)
		return -EINVAL;
	nruns = (size - bits) / RUN_LEN;
	for (k = 0; k < n; k++) {
		memset(&ans[k], 0, sizeof(ans[k]));
		marked += (b[k / 8] >> (k % 8)) & 1;
	}
	if (n % 8 && b[n / 8] >> (n % 8))
		return -EINVAL;		/* bits past the last chunk */
	for (r = b + bits; nruns--; r += RUN_LEN) {
		uint32_t first = get32(r), cnt = get32(r + 4) & ~RUN_IN_PLACE;
		uint8_t inpl = !!(get32(r + 4) & RUN_IN_PLACE);
		uint64_t off = get64(r + 12);

		if (first < next || first >= n || !cnt || cnt > n - first)
			return -EINVAL;
		for (k = first; k < (size_t)first + cnt; k++) {
			uint64_t d = v[k].off - v[first].off;

			if (!((b[k / 8] >> (k % 8)) & 1) || off > UINT64_MAX - d - v[k].len)
				return -EINVAL;
			ans[k].present = 1;
			ans[k].in_place = inpl;
			ans[k].arena = get32(r + 8);
			ans[k].off = off + d;
		}
		ans[first].run = cnt;
		memcpy(ans[first].b2, r + 20, DD_B2_LEN);
		next = (size_t)first + cnt;
		covered += cnt;
	}
	return covered == marked ? 0 : -EINVAL;
}

int dd_plan_exec_mem(const struct dd_plan *p, const void *src, size_t src_len,
		     void *dst, size_t dst_size, dd_resolve_fn resolve, void *ctx,
		     uint64_t *wire_done)
{
	const uint8_t *s = src;
	uint8_t *d = dst;
	uint64_t wire = 0;
	size_t k;

	if (!p || (p->n && (!p->ops || !dst)))
		return -EINVAL;
	for (k = 0; k < p->n; k++) {
		const struct dd_op *o = &p->ops[k];
		const void *from;

		if (o->dst_off > dst_size || o->len > dst_size - o->dst_off)
			return -EINVAL;
		if (o->kind == DD_OP_WIRE) {
			if (!s || o->src_off > src_len || o->len > src_len - o->src_off)
				return -EINVAL;
			memcpy(d + o->dst_off, s + o->src_off, o->len);
			wire += o->len;
		} else if (o->kind == DD_OP_LOCAL) {
			if (!resolve)
				return -EINVAL;
			from = resolve(ctx, o->arena, o->src_off, o->len);
			if (!from)
				return -ENOENT;
			memmove(d + o->dst_off, from, o->len);
		} else {
			return -EINVAL;
		}
	}
	if (wire_done)
		*wire_done = wire;
	return 0;
}

double dd_wire_speed(const struct dd_stats *st, double elapsed_s)
{
	if (!st || !(elapsed_s > 0))
		return 0;
	return (double)(st->wire_bytes + st->meta_bytes) / elapsed_s;
}

double dd_effective_speed(const struct dd_stats *st, double elapsed_s)
{
	if (!st || !(elapsed_s > 0))
		return 0;
	return (double)st->logical_bytes / elapsed_s;
}

int dd_stats_format(const struct dd_stats *st, double elapsed_s, char *buf,
		    size_t size)
{
	double pct;

	if (!st || (!buf && size))
		return -EINVAL;
	pct = st->logical_bytes ?
	      100.0 * (double)(st->wire_bytes + st->meta_bytes) / (double)st->logical_bytes : 0;
	return snprintf(buf, size,
			"logical %llu B, wire %llu B payload + %llu B metadata (%.1f%% of logical), "
			"local copy %llu B, in place %llu B, %llu/%llu chunks held, %llu failed the check, "
			"%.6f s: wire speed %.1f MB/s, effective speed (logical/elapsed, "
			"not a link speed) %.1f MB/s",
			(unsigned long long)st->logical_bytes,
			(unsigned long long)st->wire_bytes,
			(unsigned long long)st->meta_bytes, pct,
			(unsigned long long)st->local_bytes,
			(unsigned long long)st->inplace_bytes,
			(unsigned long long)st->hit_chunks,
			(unsigned long long)st->chunks,
			(unsigned long long)st->verify_failed, elapsed_s,
			dd_wire_speed(st, elapsed_s) / 1e6,
			dd_effective_speed(st, elapsed_s) / 1e6);
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * dedup.h - the deduplication engine of dmaplaned's deduplicated moves.
 *
 * A self-contained library with no global state and no transport: the
 * daemon owns the objects and moves the bytes.  One deduplicated move of
 * a source range S (on node A) to a destination range D (arena, offset,
 * length on node B) goes:
 *
 *  1. A: dd_chunk_range(S)               -> chunk list (offset, length, xxh128)
 *  2. A -> B: the chunk list (dd_request_encode(), dd_meta_request_bytes())
 *  3. B: dd_index_lookup(list, D)        -> one dd_answer per chunk: held or
 *                                           not, where (xxh128 re-checked
 *                                           there); one BLAKE2b per run of
 *                                           held chunks
 *  4. B -> A: the answers (dd_answer_encode(), dd_meta_answer_bytes())
 *  5. A: dd_plan_build(list, answers, S) -> plan: wire ops (put from S to D)
 *                                           and local ops (copy at B); a run
 *                                           whose BLAKE2b differs from A's
 *                                           bytes becomes wire ops
 *  6. execute the plan: wire ops as dmaplane put/get, local ops as memcpy
 *     at B (dd_plan_exec_mem() does both with memcpy for tests and benches);
 *     ops write disjoint parts of D and read nothing D's ops write, so they
 *     may run in any order and in parallel
 *  7. whole-range end check: dd_xxh128(S) at A == dd_xxh128(D) at B (catches
 *     a lost or misplaced op, a destination that lied); dd_blake2b_range()
 *     for a cryptographic one, at BLAKE2b's speed (~330 MB/s on the
 *     development host against xxh128's ~5 GB/s)
 *  8. B: dd_index_remove_range(D) then dd_index_add(D, list)
 *
 * Integer-returning functions return 0 or a negative errno (-EINVAL for bad
 * arguments, -ENOMEM).  Nothing here locks: one dd_index per daemon, used
 * under the daemon's own lock.
 */
#ifndef DMAPLANE_DEDUP_H
#define DMAPLANE_DEDUP_H

#include <stddef.h>
#include <stdint.h>

#define DD_CHUNK_MIN_DEFAULT	(2u << 10)
#define DD_CHUNK_AVG_DEFAULT	(8u << 10)
#define DD_CHUNK_MAX_DEFAULT	(64u << 10)
#define DD_CHUNK_MIN_LIMIT	64u		/* the gear hash's window */
#define DD_CHUNK_MAX_LIMIT	(16u << 20)
#define DD_B2_LEN		32		/* BLAKE2b-256 */
#define DD_RUN_MAX		(4u << 20)	/* bytes one BLAKE2b of a lookup covers */

/**
 * struct dd_chunker - a content-defined chunker's configuration (FastCDC)
 * @min_size: no cut before this many bytes (the rolling hash starts here)
 * @avg_size: the normal size: a harder mask before it, an easier one after
 * @max_size: a cut is forced here
 * @mask_s: the mask used below @avg_size (log2(avg) + 2 bits)
 * @mask_l: the mask used at and above @avg_size (log2(avg) - 2 bits)
 * @gear: the gear table, 256 64-bit values from a fixed seed (splitmix64),
 *	so every node cuts the same bytes at the same places
 *
 * Fill with dd_chunker_init(); read-only afterwards, shareable by threads.
 */
struct dd_chunker {
	uint32_t min_size, avg_size, max_size;
	uint64_t mask_s, mask_l;
	uint64_t gear[256];
};

/** struct dd_hash - an xxh128 (XXH3 128-bit, seed 0) digest */
struct dd_hash {
	uint64_t lo, hi;
};

/**
 * struct dd_chunk - one chunk of a range
 * @off: offset from the start of the chunked range (or, in the index, in
 *	the arena)
 * @len: length in bytes (<= max_size)
 * @hash: xxh128 of the chunk's bytes, the index key
 */
struct dd_chunk {
	uint64_t off;
	uint32_t len;
	struct dd_hash hash;
};

/** struct dd_chunk_list - a growable array of chunks; zero-initialise */
struct dd_chunk_list {
	struct dd_chunk *v;
	size_t n, cap;
};

/**
 * dd_chunker_init() - validate the sizes and fill @c
 * @c: the chunker
 * @min_size: 0 for DD_CHUNK_MIN_DEFAULT
 * @avg_size: 0 for DD_CHUNK_AVG_DEFAULT; must be a power of two
 * @max_size: 0 for DD_CHUNK_MAX_DEFAULT
 *
 * Needs DD_CHUNK_MIN_LIMIT <= min < avg < max <= DD_CHUNK_MAX_LIMIT and
 * avg >= 256.
 *
 * Return: 0 or -EINVAL.
 */
int dd_chunker_init(struct dd_chunker *c, uint32_t min_size, uint32_t avg_size,
		    uint32_t max_size);

/**
 * dd_cut() - the length of the next chunk of @p
 * @c: the chunker
 * @p: the bytes
 * @n: how many remain (> 0)
 *
 * Return: the chunk length, 1..min(@n, max_size); @n when @n <= min_size.
 */
size_t dd_cut(const struct dd_chunker *c, const uint8_t *p, size_t n);

/**
 * dd_chunk_range() - cut and hash a memory range
 * @c: the chunker
 * @base: the range (may be NULL when @len is 0)
 * @len: its length; 0 gives an empty list
 * @out: appended to (offsets relative to @base); free with
 *	dd_chunk_list_free()
 *
 * Return: 0, -EINVAL or -ENOMEM (@out is left as it was on error).
 */
int dd_chunk_range(const struct dd_chunker *c, const void *base, size_t len,
		   struct dd_chunk_list *out);

/**
 * dd_chunker_fingerprint() - identify a chunker's sizes and gear table
 * @c: the chunker
 *
 * Two nodes can deduplicate between them only if they cut alike: the
 * daemons exchange this and refuse dedup moves when it differs.
 *
 * Return: a 64-bit fingerprint (xxh64 of the sizes and the table).
 */
uint64_t dd_chunker_fingerprint(const struct dd_chunker *c);

/** dd_chunk_list_free() - free the array and zero @l */
void dd_chunk_list_free(struct dd_chunk_list *l);

/** dd_xxh128() - xxh128 of a buffer (a chunk, or a whole range: the end check) */
struct dd_hash dd_xxh128(const void *p, size_t len);

/**
 * dd_blake2b_range() - BLAKE2b-256 of a range (a cryptographic end check)
 * @p: the bytes (may be NULL when @len is 0)
 * @len: their length
 * @out: DD_B2_LEN bytes
 *
 * Return: 0 or -EINVAL.
 */
int dd_blake2b_range(const void *p, size_t len, uint8_t out[DD_B2_LEN]);

/*
 * The index: what the destination daemon holds.
 */

/*
 * dd_resolve_fn - map an arena range to memory the index may read
 * (a plain comment: kernel-doc cannot parse this typedef's return type)
 * @ctx: the caller's context
 * @arena: the arena id
 * @off: offset in it
 * @len: length
 *
 * Return: a pointer to the bytes, or NULL when the range is not (or no
 * longer) there, which drops the entry.
 */
typedef const void *(*dd_resolve_fn)(void *ctx, uint32_t arena, uint64_t off, uint64_t len);

struct dd_index;

/**
 * dd_index_new() - an empty index
 * @out: the new index
 * @resolve: how lookups read held bytes to verify them (required)
 * @ctx: passed to @resolve
 *
 * Return: 0, -EINVAL or -ENOMEM.
 */
int dd_index_new(struct dd_index **out, dd_resolve_fn resolve, void *ctx);

/** dd_index_free() - free the index (NULL is fine) */
void dd_index_free(struct dd_index *ix);

/**
 * dd_index_add() - record that @arena holds chunks at @base_off + chunk.off
 * @ix: the index
 * @arena: arena id
 * @base_off: where the chunked range starts in the arena
 * @v: the chunks (as from dd_chunk_range() over that range)
 * @n: how many
 *
 * The same content may be recorded at several places; all are kept.
 * Return: 0, -EINVAL or -ENOMEM (then none of @v was added).
 */
int dd_index_add(struct dd_index *ix, uint32_t arena, uint64_t base_off,
		 const struct dd_chunk *v, size_t n);

/**
 * dd_index_remove_range() - forget entries overlapping a range of an arena
 * @ix: the index
 * @arena: arena id
 * @off: start
 * @len: length; UINT64_MAX - @off or more means to the arena's end
 *
 * Call before bytes of an arena change (a move's destination, an arena
 * destroyed, a writer attached).  Walks the whole table: O(entries).
 * Return: the number of entries removed.
 */
size_t dd_index_remove_range(struct dd_index *ix, uint32_t arena, uint64_t off,
			     uint64_t len);

/** dd_index_count() - the number of entries */
size_t dd_index_count(const struct dd_index *ix);

/**
 * struct dd_answer - the destination's answer for one chunk
 * @present: 1 when held (and verified by xxh128 there), 0 otherwise
 * @in_place: 1 when held at exactly the chunk's destination position
 * @run: on the first chunk of a run, the number of chunks in it; else 0.
 *	A run is held chunks that follow each other in the source and lie
 *	contiguously in one arena (all in place, or none), at most
 *	DD_RUN_MAX bytes
 * @arena: where it is held
 * @off: offset there
 * @b2: on a run's first chunk, BLAKE2b-256 of the run's held bytes, for
 *	the source's strong check (one digest a run keeps the answers small)
 */
struct dd_answer {
	uint8_t present, in_place;
	uint32_t run;
	uint32_t arena;
	uint64_t off;
	uint8_t b2[DD_B2_LEN];
};

/**
 * struct dd_lookup_stats - what a lookup did
 * @hits: chunks answered present
 * @runs: runs they form (one BLAKE2b each)
 * @stale: entries whose bytes no longer hashed to their key (dropped)
 * @overlap_skipped: candidates skipped because they lie inside the
 *	destination range elsewhere than the chunk's own position
 */
struct dd_lookup_stats {
	uint64_t hits, runs, stale, overlap_skipped;
};

/**
 * dd_index_lookup() - which chunks the destination holds, and where
 * @ix: the destination's index
 * @v: the source's chunk list (offsets relative to the source range)
 * @n: its length
 * @dst_arena: the move's destination arena
 * @dst_off: the move's destination offset (chunk i lands at
 *	@dst_off + v[i].off)
 * @dst_len: the move's length
 * @ans: @n answers
 * @st: statistics (may be NULL)
 *
 * A candidate is used only if its length matches and its bytes, read
 * through the resolver, still hash to the key (else the entry is dropped
 * as stale); candidates inside the destination range are used only at the
 * chunk's own position (then nothing needs copying), so that no local copy
 * reads bytes the move overwrites.  Among the others, one right after the
 * previous chunk's is preferred, to make runs long.
 * Return: 0 or -EINVAL (also when @v is not contiguous from its first
 * offset or leaves the move's range).
 */
int dd_index_lookup(struct dd_index *ix, const struct dd_chunk *v, size_t n,
		    uint32_t dst_arena, uint64_t dst_off, uint64_t dst_len,
		    struct dd_answer *ans, struct dd_lookup_stats *st);

/*
 * The plan.
 */

enum dd_op_kind {
	DD_OP_WIRE = 1,		/* source range -> destination (put/get) */
	DD_OP_LOCAL = 2,	/* held at the destination -> destination (memcpy) */
};

/**
 * struct dd_op - one transfer of a plan
 * @kind: DD_OP_WIRE or DD_OP_LOCAL
 * @arena: for DD_OP_LOCAL, the destination node's arena the bytes are
 *	copied from; unused for DD_OP_WIRE
 * @src_off: DD_OP_WIRE: offset in the source range; DD_OP_LOCAL: offset in
 *	@arena
 * @dst_off: offset in the destination arena (absolute)
 * @len: bytes
 */
struct dd_op {
	uint32_t kind;
	uint32_t arena;
	uint64_t src_off;
	uint64_t dst_off;
	uint64_t len;
};

/**
 * struct dd_stats - the figures of one move
 * @logical_bytes: the move's length
 * @wire_bytes: payload the plan sends over the wire
 * @meta_bytes: the chunk list and the answers, as dd_meta_*_bytes() count
 *	them (the price of asking; add it to @wire_bytes for the link's total)
 * @local_bytes: copied at the destination from bytes it held
 * @inplace_bytes: already at their destination position: not copied
 * @chunks: chunks in the source range
 * @hit_chunks: chunks used from the destination (local + in place)
 * @verify_failed: held chunks in runs whose BLAKE2b differed from the
 *	source's bytes (a collision, changed bytes) or that were
 *	inconsistent: sent over the wire instead
 * @wire_ops: wire transfers after merging
 * @local_ops: local copies after merging
 */
struct dd_stats {
	uint64_t logical_bytes, wire_bytes, meta_bytes, local_bytes, inplace_bytes;
	uint64_t chunks, hit_chunks, verify_failed;
	uint64_t wire_ops, local_ops;
};

/**
 * struct dd_plan - a move's plan; zero-initialise, free with dd_plan_free()
 * @ops: the transfers, in destination order
 * @n: how many
 * @cap: allocated
 * @st: its figures
 */
struct dd_plan {
	struct dd_op *ops;
	size_t n, cap;
	struct dd_stats st;
};

/**
 * dd_plan_build() - the plan of a move, at the source
 * @v: the source's chunks (from dd_chunk_range() over @src)
 * @n: how many (contiguous from offset 0, covering @src_len)
 * @ans: the destination's answers, one per chunk; NULL means none held
 *	(a plain move)
 * @src: the source range's bytes, to hash the hits with BLAKE2b
 * @src_len: its length
 * @dst_arena: the destination arena
 * @dst_off: the destination offset in it
 * @max_op: the largest merged transfer in bytes, 0 for no limit
 * @plan: filled (emptied first)
 *
 * A run of hits becomes local ops (or nothing, in place) only when its
 * members are consistent (held, contiguous in one arena; in place exactly
 * when they sit at their own destination position; if not in place,
 * outside the destination range, so that no op reads what another
 * writes) and the BLAKE2b
 * the destination computed over its bytes equals the BLAKE2b of the same
 * source bytes; otherwise the whole run is sent.  Adjacent wire ops merge,
 * and so do
 * local ops whose sources are adjacent in one arena, up to @max_op.
 * Return: 0, -EINVAL or -ENOMEM.
 */
int dd_plan_build(const struct dd_chunk *v, size_t n, const struct dd_answer *ans,
		  const void *src, size_t src_len, uint32_t dst_arena, uint64_t dst_off,
		  uint64_t max_op, struct dd_plan *plan);

/** dd_plan_free() - free the ops and zero @p */
void dd_plan_free(struct dd_plan *p);

/** dd_meta_request_bytes() - wire size of a chunk list (20 bytes a chunk) */
uint64_t dd_meta_request_bytes(size_t nchunks);

/**
 * dd_meta_answer_bytes() - wire size of the answers
 * @nchunks: chunks asked about (a bit each: held or not)
 * @nruns: runs answered (52 bytes each: first chunk, count, arena,
 *	offset, BLAKE2b)
 *
 * Return: bytes.
 */
uint64_t dd_meta_answer_bytes(size_t nchunks, size_t nruns);

/*
 * Wire encoding of the request and the answers (little-endian, no
 * padding), the sizes dd_meta_*_bytes() count.
 *
 * Request, 20 bytes a chunk: xxh128 low 64 bits, high 64 bits, length
 * (32 bits); offsets follow from the lengths, from 0.
 * Answers: a bitmap, a bit a chunk (held), (n + 7) / 8 bytes; then per run
 * 52 bytes: first chunk (32 bits), count (31 bits) with bit 31 set when in
 * place, arena (32 bits), offset (64 bits), BLAKE2b (32 bytes).
 */

/**
 * dd_request_encode() - the chunk list as sent to the destination
 * @v: the chunks (contiguous from offset 0)
 * @n: how many
 * @buf: output
 * @size: its size, at least dd_meta_request_bytes(@n)
 *
 * Return: 0 or -EINVAL (also when @v is not contiguous from 0).
 */
int dd_request_encode(const struct dd_chunk *v, size_t n, void *buf, size_t size);

/**
 * dd_request_decode() - a received chunk list
 * @buf: the request
 * @size: its size, a multiple of 20
 * @v: output, @size / 20 chunks, offsets rebuilt from the lengths
 * @n: room in @v
 *
 * Return: the number of chunks, or -EINVAL (bad size, a zero length, a
 * total beyond 2^63).
 */
long dd_request_decode(const void *buf, size_t size, struct dd_chunk *v, size_t n);

/**
 * dd_answer_runs() - how many runs answers hold (for dd_meta_answer_bytes())
 * @ans: the answers
 * @n: how many
 *
 * Return: the number of runs.
 */
size_t dd_answer_runs(const struct dd_answer *ans, size_t n);

/**
 * dd_answer_encode() - the destination's answers as sent back
 * @ans: the answers from dd_index_lookup()
 * @n: how many
 * @buf: output
 * @size: its size, at least dd_meta_answer_bytes(@n, dd_answer_runs())
 *
 * Return: the bytes written, or -EINVAL (too small, a malformed run).
 */
long dd_answer_encode(const struct dd_answer *ans, size_t n, void *buf, size_t size);

/**
 * dd_answer_decode() - received answers, at the source
 * @buf: the answers
 * @size: their size
 * @v: the chunk list the request carried
 * @n: its length
 * @ans: output, @n answers; a run's members get their offsets from the
 *	head's and the chunk lengths
 *
 * Anything malformed (a run outside the list, overlapping another, a
 * member the bitmap does not mark, a marked chunk in no run, trailing
 * bytes) is refused: the caller then moves without dedup.
 * Return: 0 or -EINVAL.
 */
int dd_answer_decode(const void *buf, size_t size, const struct dd_chunk *v, size_t n,
		     struct dd_answer *ans);

/**
 * dd_plan_exec_mem() - execute a plan with memcpy (tests, benchmarks)
 * @p: the plan
 * @src: the source range
 * @src_len: its length
 * @dst: the destination arena's base
 * @dst_size: its size
 * @resolve: maps local ops' (arena, offset, length) to memory
 * @ctx: for @resolve
 * @wire_done: bytes copied by wire ops (may be NULL)
 *
 * Return: 0, -EINVAL (an op outside a buffer) or -ENOENT (a local source
 * the resolver does not know).
 */
int dd_plan_exec_mem(const struct dd_plan *p, const void *src, size_t src_len,
		     void *dst, size_t dst_size, dd_resolve_fn resolve, void *ctx,
		     uint64_t *wire_done);

/**
 * dd_wire_speed() - wire bytes (payload + metadata) per second
 * @st: a move's figures
 * @elapsed_s: its elapsed time, measured by the caller
 *
 * Return: bytes/s, 0 when @elapsed_s <= 0.
 */
double dd_wire_speed(const struct dd_stats *st, double elapsed_s);

/**
 * dd_effective_speed() - logical bytes per second: NOT a link speed
 * @st: a move's figures
 * @elapsed_s: its elapsed time
 *
 * The size of the range moved divided by the time it took, what the move
 * looked like to its caller.  Bytes the destination already held never
 * crossed the link; this figure counts them.
 *
 * Return: bytes/s, or 0.
 */
double dd_effective_speed(const struct dd_stats *st, double elapsed_s);

/**
 * dd_stats_format() - one line with both figures, labelled
 * @st: a move's figures
 * @elapsed_s: its elapsed time
 * @buf: output
 * @size: its size
 *
 * Return: snprintf()'s value, or -EINVAL.
 */
int dd_stats_format(const struct dd_stats *st, double elapsed_s, char *buf,
		    size_t size);

#endif /* DMAPLANE_DEDUP_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for dmaplane arenas: page allocation with a simulated
 * shortage of huge pages, scatterlists of slices, bounds-checked copies.
 */
#include <kunit/test.h>
#include <linux/delay.h>
#include <linux/dma-buf.h>
#include <linux/err.h>
#include <linux/file.h>
#include <linux/highmem.h>
#include <linux/mm.h>
#include <linux/random.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include "../kmod/dmaplane.h"

MODULE_IMPORT_NS(DMAPLANE_NS(DMAPLANE_KUNIT));
MODULE_IMPORT_NS(DMAPLANE_NS(DMA_BUF));

#define SZ_K(n)	((u64)(n) << 10)

struct arena_stats {
	long arenas, arena_pages, regions, charged;
};

static void stats_read(struct arena_stats *s)
{
	s->arenas = dmaplane_stat_read(DMAPLANE_STAT_ARENAS);
	s->arena_pages = dmaplane_stat_read(DMAPLANE_STAT_ARENA_PAGES);
	s->regions = dmaplane_stat_read(DMAPLANE_STAT_REGIONS);
	s->charged = dmaplane_stat_read(DMAPLANE_STAT_CHARGED_PAGES);
}

static void expect_stats_at(struct kunit *test, const struct arena_stats *base)
{
	struct arena_stats now;

	/* Regions are freed after an RCU grace period, counters at once. */
	stats_read(&now);
	KUNIT_EXPECT_EQ(test, now.arenas, base->arenas);
	KUNIT_EXPECT_EQ(test, now.arena_pages, base->arena_pages);
	KUNIT_EXPECT_EQ(test, now.regions, base->regions);
	KUNIT_EXPECT_EQ(test, now.charged, base->charged);
}

/*
 * A kernel thread's last fput() is deferred to delayed_fput_work.
 * flush_delayed_fput() runs what is queued, but the work may have taken
 * the file already and still be releasing it (a loaded host makes that
 * window wide): wait, up to 10 s, for the dma-buf count to come back.
 */
static void wait_dmabufs(long want)
{
	int i;

	for (i = 0; i < 500; i++) {
		flush_delayed_fput();
		if (dmaplane_stat_read(DMAPLANE_STAT_DMABUFS) == want)
			return;
		msleep(20);
	}
}

static struct dmaplane_ep *ep_create_or_fail(struct kunit *test)
{
	struct dmaplane_ep *ep = dmaplane_ep_create();

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, ep);
	return ep;
}

static struct dmaplane_arena *arena_get(struct kunit *test, struct dmaplane_ep *ep,
					u32 handle)
{
	struct dmaplane_region *r = dmaplane_region_get(ep, handle, DMAPLANE_REGION_ARENA);

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, r);
	return to_dmaplane_arena(r);
}

static void arena_destroy(struct dmaplane_ep *ep, u32 handle)
{
	struct dmaplane_region *r;

	r = dmaplane_region_unpublish(ep, handle, DMAPLANE_REGION_ARENA);
	if (!IS_ERR(r))
		dmaplane_region_put(r);
}

/* Without huge pages the arena is built from the next orders down. */
static void arena_falls_back_when_huge_pages_are_short(struct kunit *test)
{
	struct dmaplane_ep *ep = ep_create_or_fail(test);
	struct dmaplane_arena_create args = { };
	struct dmaplane_arena *arena;
	struct arena_stats base, now;
	unsigned long i;

	stats_read(&base);
	/* 4 MiB + 3 pages with at most 64 KiB pages: 64 chunks of 64 KiB,
	 * one of 8 KiB, one of 4 KiB.
	 */
	args.size = SZ_K(4096) + 3 * PAGE_SIZE;
	args.numa_node = DMAPLANE_NUMA_ANY;
	KUNIT_ASSERT_EQ(test, dmaplane_arena_create(ep, &args, 4), 0);
	KUNIT_EXPECT_EQ(test, args.bytes_huge, 0ull);
	KUNIT_EXPECT_EQ(test, args.bytes_mid, SZ_K(4096) + 2 * PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, args.bytes_base, (u64)PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, args.bytes_huge + args.bytes_mid + args.bytes_base,
			args.size);
	KUNIT_EXPECT_NE(test, args.handle, 0u);
	KUNIT_EXPECT_EQ(test, args.lkey, args.handle);
	KUNIT_EXPECT_NE(test, args.rkey, 0ull);

	stats_read(&now);
	KUNIT_EXPECT_EQ(test, now.arenas, base.arenas + 1);
	KUNIT_EXPECT_EQ(test, now.arena_pages, base.arena_pages + (long)(args.size >> PAGE_SHIFT));
	KUNIT_EXPECT_EQ(test, now.regions, base.regions + 1);

	/* Chunks sit at offsets aligned to their size; memory is zeroed. */
	arena = arena_get(test, ep, args.handle);
	for (i = 0; i < arena->npages; i++) {
		struct page *head = compound_head(arena->pages[i]);
		unsigned int order = PageCompound(head) ? compound_order(head) : 0;
		void *p;

		KUNIT_EXPECT_LE(test, order, 4u);
		KUNIT_EXPECT_EQ(test, (i - (arena->pages[i] - head)) % (1UL << order), 0ul);
		p = kmap_local_page(arena->pages[i]);
		KUNIT_EXPECT_TRUE(test, !memchr_inv(p, 0, PAGE_SIZE));
		kunmap_local(p);
	}
	dmaplane_region_put(&arena->region);

	/* Only base pages. */
	memset(&args, 0, sizeof(args));
	args.size = SZ_K(256);
	args.numa_node = DMAPLANE_NUMA_ANY;
	KUNIT_ASSERT_EQ(test, dmaplane_arena_create(ep, &args, 0), 0);
	KUNIT_EXPECT_EQ(test, args.bytes_huge, 0ull);
	KUNIT_EXPECT_EQ(test, args.bytes_mid, 0ull);
	KUNIT_EXPECT_EQ(test, args.bytes_base, SZ_K(256));

	dmaplane_ep_destroy(ep);
	expect_stats_at(test, &base);
}

static void arena_huge_only_fails_without_huge_pages(struct kunit *test)
{
	struct dmaplane_ep *ep = ep_create_or_fail(test);
	struct dmaplane_arena_create args = { };
	struct arena_stats base;

	stats_read(&base);
	args.size = 2 * (PAGE_SIZE << DMAPLANE_HUGE_ORDER);
	args.numa_node = DMAPLANE_NUMA_ANY;
	args.flags = DMAPLANE_ARENA_HUGE_ONLY;
	KUNIT_EXPECT_EQ(test, dmaplane_arena_create(ep, &args, DMAPLANE_HUGE_ORDER - 1),
			-ENOMEM);
	KUNIT_EXPECT_EQ(test, args.handle, 0u);
	expect_stats_at(test, &base);

	/* HUGE_ONLY needs a multiple of the huge page size. */
	args.size = (PAGE_SIZE << DMAPLANE_HUGE_ORDER) + PAGE_SIZE;
	KUNIT_EXPECT_EQ(test, dmaplane_arena_create(ep, &args, DMAPLANE_HUGE_ORDER),
			-EINVAL);
	expect_stats_at(test, &base);
	dmaplane_ep_destroy(ep);
}

static void arena_rejects_bad_requests(struct kunit *test)
{
	struct dmaplane_ep *ep = ep_create_or_fail(test);
	struct dmaplane_arena_create args;
	struct arena_stats base;
	unsigned int bit;

	stats_read(&base);
#define BAD(field, val, err) do {					\
		memset(&args, 0, sizeof(args));				\
		args.size = PAGE_SIZE;					\
		args.numa_node = DMAPLANE_NUMA_ANY;			\
		args.field = (val);					\
		KUNIT_EXPECT_EQ_MSG(test, dmaplane_arena_create(ep, &args, 0), err, \
				    "bad " #field);			\
	} while (0)
	BAD(size, 0, -EINVAL);
	BAD(size, PAGE_SIZE + 1, -EINVAL);
	BAD(size, ~0ull << PAGE_SHIFT, -ENOMEM);
	for (bit = 1; bit < 32; bit++)
		BAD(flags, 1u << bit, -EINVAL);
	for (bit = 3; bit < 32; bit++)
		BAD(access, 1u << bit, -EINVAL);
	BAD(pad, 1, -EINVAL);
	BAD(reserved[0], 1, -EINVAL);
	BAD(reserved[1], 1ull << 63, -EINVAL);
	BAD(numa_node, -2, -EINVAL);
	BAD(numa_node, MAX_NUMNODES, -EINVAL);
#undef BAD
	expect_stats_at(test, &base);
	dmaplane_ep_destroy(ep);
}

/* A slice's scatterlist covers exactly the slice, one entry per chunk run. */
static void arena_sg_table_covers_slice(struct kunit *test)
{
	struct dmaplane_ep *ep = ep_create_or_fail(test);
	struct dmaplane_arena_create args = { };
	struct dmaplane_arena *arena;
	struct scatterlist *sg;
	struct sg_table sgt;
	u64 off, len, total;
	unsigned long idx;
	unsigned int i;

	/* 16 KiB chunks (order 2). */
	args.size = SZ_K(128);
	args.numa_node = DMAPLANE_NUMA_ANY;
	KUNIT_ASSERT_EQ(test, dmaplane_arena_create(ep, &args, 2), 0);
	KUNIT_ASSERT_EQ(test, args.bytes_mid, SZ_K(128));
	arena = arena_get(test, ep, args.handle);

	/* [8K, 56K): 8K of chunk 0, chunks 1 and 2, 8K of chunk 3. */
	off = 2 * PAGE_SIZE;
	len = 12 * PAGE_SIZE;
	KUNIT_ASSERT_EQ(test, dmaplane_arena_sg_table(arena, off, len, &sgt), 0);
	KUNIT_EXPECT_EQ(test, sgt.orig_nents, 4u);
	idx = off >> PAGE_SHIFT;
	total = 0;
	for_each_sgtable_sg(&sgt, sg, i) {
		static const unsigned int want[] = { 2, 4, 4, 2 };

		KUNIT_EXPECT_PTR_EQ(test, sg_page(sg), arena->pages[idx]);
		KUNIT_EXPECT_EQ(test, sg->offset, 0u);
		if (i < ARRAY_SIZE(want))
			KUNIT_EXPECT_EQ(test, sg->length, want[i] * (unsigned int)PAGE_SIZE);
		idx += sg->length >> PAGE_SHIFT;
		total += sg->length;
	}
	KUNIT_EXPECT_EQ(test, total, len);
	sg_free_table(&sgt);

	/* The whole arena; then one page at its end. */
	KUNIT_ASSERT_EQ(test, dmaplane_arena_sg_table(arena, 0, args.size, &sgt), 0);
	KUNIT_EXPECT_EQ(test, sgt.orig_nents, 8u);
	sg_free_table(&sgt);
	KUNIT_ASSERT_EQ(test, dmaplane_arena_sg_table(arena, args.size - PAGE_SIZE,
						      PAGE_SIZE, &sgt), 0);
	KUNIT_EXPECT_EQ(test, sgt.orig_nents, 1u);
	KUNIT_EXPECT_PTR_EQ(test, sg_page(sgt.sgl), arena->pages[arena->npages - 1]);
	sg_free_table(&sgt);

	/* Bad slices. */
	KUNIT_EXPECT_EQ(test, dmaplane_arena_sg_table(arena, 0, 0, &sgt), -EINVAL);
	KUNIT_EXPECT_EQ(test, dmaplane_arena_sg_table(arena, 1, PAGE_SIZE, &sgt), -EINVAL);
	KUNIT_EXPECT_EQ(test, dmaplane_arena_sg_table(arena, 0, args.size + PAGE_SIZE, &sgt),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, dmaplane_arena_sg_table(arena, ~0ull << PAGE_SHIFT,
						      2 * PAGE_SIZE, &sgt), -EINVAL);

	dmaplane_region_put(&arena->region);
	dmaplane_ep_destroy(ep);
}

static int region_copy_kbuf(struct dmaplane_region *r, u64 off, void *buf, size_t len,
			    bool to_region)
{
	struct kvec kv = { .iov_base = buf, .iov_len = len };
	struct iov_iter iter;

	iov_iter_kvec(&iter, to_region ? WRITE : READ, &kv, 1, len);
	return dmaplane_region_copy(r, off, len, &iter, to_region);
}

/* Random bytes in, the same bytes out, across chunk boundaries. */
static void arena_copy_round_trip(struct kunit *test)
{
	struct dmaplane_ep *ep = ep_create_or_fail(test);
	struct dmaplane_arena_create args = { };
	struct arena_stats base;
	struct dmaplane_region *r;
	size_t len = 5 * PAGE_SIZE + 123;
	u64 off = 3 * PAGE_SIZE - 77;
	u8 *in, *out, *p;
	size_t i;

	stats_read(&base);
	in = kunit_kmalloc(test, len, GFP_KERNEL);
	out = kunit_kzalloc(test, len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, in);
	KUNIT_ASSERT_NOT_NULL(test, out);
	get_random_bytes(in, len);

	/* Order-1 chunks, so the copy crosses several of them. */
	args.size = SZ_K(64);
	args.numa_node = DMAPLANE_NUMA_ANY;
	args.access = DMAPLANE_ACCESS_ALL;
	KUNIT_ASSERT_EQ(test, dmaplane_arena_create(ep, &args, 1), 0);
	r = dmaplane_region_get(ep, args.handle, DMAPLANE_REGION_ARENA);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, r);

	KUNIT_EXPECT_EQ(test, region_copy_kbuf(r, off, in, len, true), 0);
	KUNIT_EXPECT_EQ(test, region_copy_kbuf(r, off, out, len, false), 0);
	KUNIT_EXPECT_EQ(test, memcmp(in, out, len), 0);

	/* The bytes are where they belong in the pages themselves. */
	for (i = 0; i < len; i++) {
		u64 o = off + i;

		p = kmap_local_page(to_dmaplane_arena(r)->pages[o >> PAGE_SHIFT]);
		if (p[offset_in_page(o)] != in[i]) {
			KUNIT_FAIL(test, "byte %zu differs", i);
			kunmap_local(p);
			break;
		}
		kunmap_local(p);
	}
	/* The bytes around the copy were left alone. */
	KUNIT_EXPECT_EQ(test, region_copy_kbuf(r, off - 1, out, 1, false), 0);
	KUNIT_EXPECT_EQ(test, out[0], 0);
	KUNIT_EXPECT_EQ(test, region_copy_kbuf(r, off + len, out, 1, false), 0);
	KUNIT_EXPECT_EQ(test, out[0], 0);

	/* Bounds, overflow-safe. */
	KUNIT_EXPECT_EQ(test, region_copy_kbuf(r, args.size - 1, out, 2, false), -ERANGE);
	KUNIT_EXPECT_EQ(test, region_copy_kbuf(r, args.size, out, 1, true), -ERANGE);
	KUNIT_EXPECT_EQ(test, region_copy_kbuf(r, ~0ull, out, 2, true), -ERANGE);
	KUNIT_EXPECT_EQ(test, region_copy_kbuf(r, args.size - len, out, len, false), 0);

	/* The lookup's reference keeps the arena after its handle is gone. */
	arena_destroy(ep, args.handle);
	KUNIT_EXPECT_EQ(test, region_copy_kbuf(r, off, out, len, false), 0);
	KUNIT_EXPECT_EQ(test, memcmp(in, out, len), 0);
	dmaplane_region_put(r);
	expect_stats_at(test, &base);
	dmaplane_ep_destroy(ep);
}

/*
 * An arena slice exported as a dma-buf and imported back as a region:
 * copies through the importer (dma_buf_vmap + CPU access) reach the
 * arena's pages, bounds are the import's, move_notify-style invalidation
 * stops copies, and the last holder frees everything.
 */
static void import_of_exported_slice_copies(struct kunit *test)
{
	struct dmaplane_ep *ep = ep_create_or_fail(test);
	struct dmaplane_mr_import_dmabuf m = { };
	struct dmaplane_dmabuf_export e = { };
	struct dmaplane_arena_create args = { };
	long dmabufs = dmaplane_stat_read(DMAPLANE_STAT_DMABUFS);
	long imports = dmaplane_stat_read(DMAPLANE_STAT_IMPORTS);
	struct dmaplane_region *arena, *imp;
	size_t len = 3 * PAGE_SIZE + 5;
	struct arena_stats base;
	struct dma_buf *dmabuf;
	u8 *in, *out;

	stats_read(&base);
	in = kunit_kmalloc(test, len, GFP_KERNEL);
	out = kunit_kzalloc(test, len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, in);
	KUNIT_ASSERT_NOT_NULL(test, out);
	get_random_bytes(in, len);

	args.size = SZ_K(64);
	args.numa_node = DMAPLANE_NUMA_ANY;
	KUNIT_ASSERT_EQ(test, dmaplane_arena_create(ep, &args, 2), 0);
	arena = dmaplane_region_get(ep, args.handle, DMAPLANE_REGION_ARENA);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, arena);

	/* Slice [8K, 40K) of the arena; import [4K, 20K) of the slice. */
	e.handle = args.handle;
	e.offset = 2 * PAGE_SIZE;
	e.len = 8 * PAGE_SIZE;
	dmabuf = dmaplane_dmabuf_export(ep, &e);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, dmabuf);
	KUNIT_EXPECT_EQ(test, dmaplane_stat_read(DMAPLANE_STAT_DMABUFS), dmabufs + 1);
	e.len = 0;
	KUNIT_EXPECT_PTR_EQ(test, dmaplane_dmabuf_export(ep, &e), ERR_PTR(-EINVAL));
	e.len = args.size;
	KUNIT_EXPECT_PTR_EQ(test, dmaplane_dmabuf_export(ep, &e), ERR_PTR(-ERANGE));

	m.offset = PAGE_SIZE;
	m.len = 4 * PAGE_SIZE;
	m.access = DMAPLANE_ACCESS_ALL;
	KUNIT_ASSERT_EQ(test, dmaplane_import_dmabuf(ep, dmabuf, &m), 0);
	KUNIT_EXPECT_EQ(test, dmaplane_stat_read(DMAPLANE_STAT_IMPORTS), imports + 1);
	/* The import holds its own reference to the dma-buf. */
	dma_buf_put(dmabuf);
	imp = dmaplane_region_get(ep, m.handle, DMAPLANE_REGION_DMABUF);
	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, imp);
	KUNIT_EXPECT_EQ(test, imp->len, 4ull * PAGE_SIZE);

	/* In through the import, out through the arena (3K + 8K + 5 in). */
	KUNIT_EXPECT_EQ(test, region_copy_kbuf(imp, 5, in, len, true), 0);
	KUNIT_EXPECT_EQ(test, region_copy_kbuf(arena, 3 * PAGE_SIZE + 5, out, len, false), 0);
	KUNIT_EXPECT_EQ(test, memcmp(in, out, len), 0);
	/* In through the arena, out through the import. */
	get_random_bytes(in, len);
	KUNIT_EXPECT_EQ(test, region_copy_kbuf(arena, 3 * PAGE_SIZE, in, len, true), 0);
	memset(out, 0, len);
	KUNIT_EXPECT_EQ(test, region_copy_kbuf(imp, 0, out, len, false), 0);
	KUNIT_EXPECT_EQ(test, memcmp(in, out, len), 0);
	KUNIT_EXPECT_EQ(test, region_copy_kbuf(imp, 4 * PAGE_SIZE - 1, out, 2, false),
			-ERANGE);

	/* The arena's handle goes; the import keeps the memory. */
	dmaplane_region_put(arena);
	arena_destroy(ep, args.handle);
	KUNIT_EXPECT_EQ(test, dmaplane_stat_read(DMAPLANE_STAT_ARENAS), base.arenas + 1);
	memset(out, 0, len);
	KUNIT_EXPECT_EQ(test, region_copy_kbuf(imp, 0, out, len, false), 0);
	KUNIT_EXPECT_EQ(test, memcmp(in, out, len), 0);

	/* What move_notify does: later copies fail. */
	dmaplane_region_invalidate(imp);
	KUNIT_EXPECT_EQ(test, region_copy_kbuf(imp, 0, out, 1, false), -EFAULT);
	dmaplane_region_put(imp);

	/* The arena is no longer ours to export. */
	dmabuf = dmaplane_dmabuf_export(ep, &e);
	KUNIT_EXPECT_PTR_EQ(test, dmabuf, ERR_PTR(-ENOENT));

	dmaplane_ep_destroy(ep);
	wait_dmabufs(dmabufs);
	KUNIT_EXPECT_EQ(test, dmaplane_stat_read(DMAPLANE_STAT_DMABUFS), dmabufs);
	KUNIT_EXPECT_EQ(test, dmaplane_stat_read(DMAPLANE_STAT_IMPORTS), imports);
	expect_stats_at(test, &base);
}

static struct kunit_case dmaplane_arena_cases[] = {
	KUNIT_CASE(arena_falls_back_when_huge_pages_are_short),
	KUNIT_CASE(arena_huge_only_fails_without_huge_pages),
	KUNIT_CASE(arena_rejects_bad_requests),
	KUNIT_CASE(arena_sg_table_covers_slice),
	KUNIT_CASE(arena_copy_round_trip),
	KUNIT_CASE(import_of_exported_slice_copies),
	{}
};

static struct kunit_suite dmaplane_arena_suite = {
	.name = "dmaplane_arena",
	.test_cases = dmaplane_arena_cases,
};

kunit_test_suites(&dmaplane_arena_suite);

// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for dmaplane's registration cache core (lookups, LRU
 * eviction, invalidation, copies honouring the in-page offset) and the
 * region core (remote keys, bounds of copies).  KUnit runs in a kernel
 * thread without a user address space, so the cache is driven with
 * entries holding kernel pages instead of pinned user pages.
 */
#include <kunit/test.h>
#include <linux/err.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include "../kmod/dmaplane.h"

MODULE_IMPORT_NS(DMAPLANE_NS(DMAPLANE_KUNIT));

#define BASE	0x100000ul	/* a fake, page-aligned user address */
#define RW	(DMAPLANE_ACCESS_LOCAL_WRITE | DMAPLANE_ACCESS_REMOTE_WRITE)
#define RO	DMAPLANE_ACCESS_REMOTE_READ

static struct dmaplane_mr_cache *cache_or_fail(struct kunit *test,
					       unsigned int max_unused)
{
	struct dmaplane_mr_cache *c = dmaplane_mr_test_cache_create(max_unused);

	KUNIT_ASSERT_NOT_NULL(test, c);
	return c;
}

static void add_or_fail(struct kunit *test, struct dmaplane_mr_cache *c,
			unsigned long start, unsigned long npages, bool write)
{
	KUNIT_ASSERT_EQ(test, dmaplane_mr_test_add(c, start, NULL, npages, write), 0);
}

/* Register [addr, addr + len) from the cache: true on a hit. */
static bool hit(struct kunit *test, struct dmaplane_mr_cache *c, u64 addr,
		u64 len, u32 access)
{
	struct dmaplane_region *r = dmaplane_mr_test_lookup(c, addr, len, access);

	if (IS_ERR(r)) {
		KUNIT_EXPECT_EQ(test, PTR_ERR(r), -ENOENT);
		return false;
	}
	KUNIT_EXPECT_EQ(test, r->len, len);
	KUNIT_EXPECT_EQ(test, r->access, access);
	KUNIT_EXPECT_EQ(test, r->kind, DMAPLANE_REGION_USER);
	dmaplane_region_put(r);
	return true;
}

static void counts(struct dmaplane_mr_cache *c, unsigned int *entries,
		   unsigned int *unused)
{
	u64 inval, hits;

	dmaplane_mr_test_counts(c, entries, unused, &inval, &hits);
}

static void lookup_covering_ranges(struct kunit *test)
{
	struct dmaplane_mr_cache *c = cache_or_fail(test, 16);
	unsigned int entries, unused;
	u64 inval, hits;

	add_or_fail(test, c, BASE, 4, false);		/* [BASE, BASE + 4 pages) */

	/* Exact, sub-range, unaligned bytes inside: hits. */
	KUNIT_EXPECT_TRUE(test, hit(test, c, BASE, 4 * PAGE_SIZE, RO));
	KUNIT_EXPECT_TRUE(test, hit(test, c, BASE + PAGE_SIZE, PAGE_SIZE, RO));
	KUNIT_EXPECT_TRUE(test, hit(test, c, BASE + 17, 3 * PAGE_SIZE, RO));
	KUNIT_EXPECT_TRUE(test, hit(test, c, BASE + 4 * PAGE_SIZE - 1, 1, 0));
	/* Straddling either end, or outside: misses. */
	KUNIT_EXPECT_FALSE(test, hit(test, c, BASE - 1, 2, RO));
	KUNIT_EXPECT_FALSE(test, hit(test, c, BASE + 3 * PAGE_SIZE, PAGE_SIZE + 1, RO));
	KUNIT_EXPECT_FALSE(test, hit(test, c, BASE + 4 * PAGE_SIZE, 1, RO));
	KUNIT_EXPECT_FALSE(test, hit(test, c, BASE - PAGE_SIZE, 6 * PAGE_SIZE, RO));
	/* A read-only pinning does not serve writable registrations. */
	KUNIT_EXPECT_FALSE(test, hit(test, c, BASE, PAGE_SIZE, DMAPLANE_ACCESS_LOCAL_WRITE));
	KUNIT_EXPECT_FALSE(test, hit(test, c, BASE, PAGE_SIZE, DMAPLANE_ACCESS_REMOTE_WRITE));

	/* A writable pinning serves both. */
	add_or_fail(test, c, BASE, 4, true);
	KUNIT_EXPECT_TRUE(test, hit(test, c, BASE, PAGE_SIZE, RW));
	KUNIT_EXPECT_TRUE(test, hit(test, c, BASE, PAGE_SIZE, RO));

	dmaplane_mr_test_counts(c, &entries, &unused, &inval, &hits);
	KUNIT_EXPECT_EQ(test, entries, 2u);
	KUNIT_EXPECT_EQ(test, unused, 2u);
	KUNIT_EXPECT_EQ(test, hits, 6ull);
	KUNIT_EXPECT_EQ(test, inval, 0ull);
	dmaplane_mr_cache_put(c);
}

static void lookup_among_many_entries(struct kunit *test)
{
	struct dmaplane_mr_cache *c = cache_or_fail(test, 1000);
	unsigned int i;

	/* 500 two-page entries with one-page holes between them. */
	for (i = 0; i < 500; i++)
		add_or_fail(test, c, BASE + i * 3 * PAGE_SIZE, 2, i % 2);
	for (i = 0; i < 500; i++) {
		u64 a = BASE + i * 3 * PAGE_SIZE;

		KUNIT_EXPECT_TRUE(test, hit(test, c, a + 5, 2 * PAGE_SIZE - 5, RO));
		KUNIT_EXPECT_EQ(test, hit(test, c, a, PAGE_SIZE, RW), (bool)(i % 2));
		/* Reaching into the hole misses. */
		KUNIT_EXPECT_FALSE(test, hit(test, c, a + PAGE_SIZE, 2 * PAGE_SIZE, RO));
	}
	dmaplane_mr_cache_put(c);
}

static void lru_evicts_least_recently_used(struct kunit *test)
{
	struct dmaplane_mr_cache *c = cache_or_fail(test, 3);
	struct dmaplane_region *held;
	unsigned int entries, unused;
	unsigned long a = BASE, b = BASE + 0x10000, d = BASE + 0x20000;
	unsigned long e = BASE + 0x30000, f = BASE + 0x40000;

	add_or_fail(test, c, a, 1, true);
	add_or_fail(test, c, b, 1, true);
	add_or_fail(test, c, d, 1, true);
	counts(c, &entries, &unused);
	KUNIT_EXPECT_EQ(test, entries, 3u);
	KUNIT_EXPECT_EQ(test, unused, 3u);

	/* Using a makes it the most recently used: b is the oldest now. */
	KUNIT_EXPECT_TRUE(test, hit(test, c, a, 1, RW));
	add_or_fail(test, c, e, 1, true);
	counts(c, &entries, &unused);
	KUNIT_EXPECT_EQ(test, entries, 3u);
	KUNIT_EXPECT_EQ(test, unused, 3u);
	KUNIT_EXPECT_FALSE(test, hit(test, c, b, 1, RW));
	KUNIT_EXPECT_TRUE(test, hit(test, c, d, 1, RW));
	KUNIT_EXPECT_TRUE(test, hit(test, c, a, 1, RW));
	KUNIT_EXPECT_TRUE(test, hit(test, c, e, 1, RW));

	/* A referenced entry is never evicted and does not count. */
	held = dmaplane_mr_test_lookup(c, d, 1, RW);	/* LRU now: a, e */
	KUNIT_ASSERT_FALSE(test, IS_ERR(held));
	add_or_fail(test, c, f, 1, true);		/* a, e, f */
	add_or_fail(test, c, b, 1, true);		/* e, f, b: a evicted */
	counts(c, &entries, &unused);
	KUNIT_EXPECT_EQ(test, entries, 4u);
	KUNIT_EXPECT_EQ(test, unused, 3u);
	KUNIT_EXPECT_FALSE(test, hit(test, c, a, 1, RW));
	KUNIT_EXPECT_TRUE(test, hit(test, c, d, 1, RW));
	dmaplane_region_put(held);			/* d back: e evicted */
	counts(c, &entries, &unused);
	KUNIT_EXPECT_EQ(test, entries, 3u);
	KUNIT_EXPECT_EQ(test, unused, 3u);
	KUNIT_EXPECT_FALSE(test, hit(test, c, e, 1, RW));
	dmaplane_mr_cache_put(c);
}

static void lru_bound_zero_keeps_nothing(struct kunit *test)
{
	struct dmaplane_mr_cache *c = cache_or_fail(test, 0);
	unsigned int entries, unused;

	add_or_fail(test, c, BASE, 1, true);
	counts(c, &entries, &unused);
	KUNIT_EXPECT_EQ(test, entries, 0u);
	KUNIT_EXPECT_EQ(test, unused, 0u);
	KUNIT_EXPECT_FALSE(test, hit(test, c, BASE, 1, RW));
	dmaplane_mr_cache_put(c);
}

static void invalidate_removes_exactly_overlapping(struct kunit *test)
{
	struct dmaplane_mr_cache *c = cache_or_fail(test, 16);
	struct dmaplane_region *r1, *r2, *r3;
	unsigned int entries, unused;
	u64 inval, hits;

	add_or_fail(test, c, BASE, 2, true);			/* [0, 2) */
	add_or_fail(test, c, BASE + 2 * PAGE_SIZE, 2, true);	/* [2, 4) */
	add_or_fail(test, c, BASE + 4 * PAGE_SIZE, 2, true);	/* [4, 6) */
	add_or_fail(test, c, BASE + 8 * PAGE_SIZE, 2, true);	/* [8, 10) */

	r1 = dmaplane_mr_test_lookup(c, BASE + 2 * PAGE_SIZE, 100, RW);
	r2 = dmaplane_mr_test_lookup(c, BASE + 3 * PAGE_SIZE, 100, RW);
	r3 = dmaplane_mr_test_lookup(c, BASE, 100, RW);
	KUNIT_ASSERT_FALSE(test, IS_ERR(r1));
	KUNIT_ASSERT_FALSE(test, IS_ERR(r2));
	KUNIT_ASSERT_FALSE(test, IS_ERR(r3));

	/* Pages 3..4 (bytes [3 pages, 5 pages - 1]): entries [2,4), [4,6). */
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_invalidate(c, BASE + 3 * PAGE_SIZE,
							  BASE + 5 * PAGE_SIZE - 1), 2u);
	dmaplane_mr_test_counts(c, &entries, &unused, &inval, &hits);
	KUNIT_EXPECT_EQ(test, entries, 2u);
	KUNIT_EXPECT_EQ(test, unused, 1u);	/* [8, 10); [0, 2) is held by r3 */
	KUNIT_EXPECT_EQ(test, inval, 2ull);	/* r1 and r2 */
	KUNIT_EXPECT_TRUE(test, READ_ONCE(r1->invalid));
	KUNIT_EXPECT_TRUE(test, READ_ONCE(r2->invalid));
	KUNIT_EXPECT_FALSE(test, READ_ONCE(r3->invalid));

	KUNIT_EXPECT_TRUE(test, hit(test, c, BASE, 2 * PAGE_SIZE, RW));
	KUNIT_EXPECT_FALSE(test, hit(test, c, BASE + 2 * PAGE_SIZE, 1, RW));
	KUNIT_EXPECT_FALSE(test, hit(test, c, BASE + 4 * PAGE_SIZE, 1, RW));
	KUNIT_EXPECT_TRUE(test, hit(test, c, BASE + 8 * PAGE_SIZE, 1, RW));

	/* Touching only the hole [6, 8) invalidates nothing. */
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_invalidate(c, BASE + 6 * PAGE_SIZE,
							  BASE + 8 * PAGE_SIZE), 0u);
	/* Invalidated regions are released like any other. */
	dmaplane_region_put(r1);
	dmaplane_region_put(r2);
	dmaplane_region_put(r3);
	counts(c, &entries, &unused);
	KUNIT_EXPECT_EQ(test, entries, 2u);
	KUNIT_EXPECT_EQ(test, unused, 2u);
	dmaplane_mr_cache_put(c);
}

/* Copies through a user-memory region honour its in-page offset. */
static void mr_copy_honours_offset_and_bounds(struct kunit *test)
{
	struct dmaplane_mr_cache *c = cache_or_fail(test, 4);
	struct page *pages[3];
	struct dmaplane_region *r;
	struct iov_iter iter;
	struct kvec kv;
	u8 *buf, *p;
	unsigned int i;
	const u64 off = 100, len = 2 * PAGE_SIZE;

	buf = kunit_kzalloc(test, 3 * PAGE_SIZE, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, buf);
	for (i = 0; i < 3; i++) {
		pages[i] = alloc_page(GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, pages[i]);
		p = page_address(pages[i]);
		memset(p, 0xa0 + i, PAGE_SIZE);
	}
	KUNIT_ASSERT_EQ(test, dmaplane_mr_test_add(c, BASE, pages, 3, true), 0);

	/* Region = bytes [off, off + len) of the three pages. */
	r = dmaplane_mr_test_lookup(c, BASE + off, len, RW);
	KUNIT_ASSERT_FALSE(test, IS_ERR(r));

	/* Read 300 bytes at region offset PAGE_SIZE - 200. */
	kv.iov_base = buf;
	kv.iov_len = 300;
	iov_iter_kvec(&iter, ITER_DEST, &kv, 1, 300);
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(r, PAGE_SIZE - 200, 300, &iter, false), 0);
	/* Byte off + PAGE_SIZE - 200 = page 0 up to byte PAGE_SIZE - 100. */
	for (i = 0; i < 300; i++)
		KUNIT_EXPECT_EQ(test, buf[i], i < 100 ? 0xa0 : 0xa1);

	/* Write 0x5a over the last 10 bytes of the region. */
	memset(buf, 0x5a, 10);
	kv.iov_len = 10;
	iov_iter_kvec(&iter, ITER_SOURCE, &kv, 1, 10);
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(r, len - 10, 10, &iter, true), 0);
	p = page_address(pages[2]);
	for (i = 0; i < 10; i++)
		KUNIT_EXPECT_EQ(test, p[off - 10 + i], 0x5a);
	KUNIT_EXPECT_EQ(test, p[off], 0xa2);
	KUNIT_EXPECT_EQ(test, p[off - 11], 0xa2);

	/* Out of bounds, overflowing, and after invalidation. */
	iov_iter_kvec(&iter, ITER_SOURCE, &kv, 1, 10);
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(r, len - 9, 10, &iter, true), -ERANGE);
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(r, U64_MAX - 4, 10, &iter, true), -ERANGE);
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_invalidate(c, BASE, BASE + 1), 1u);
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(r, 0, 10, &iter, true), -EFAULT);
	dmaplane_region_put(r);
	dmaplane_mr_cache_put(c);
}

/* A trivial region kind backed by a kernel buffer. */
struct fake_region {
	struct dmaplane_region region;
	u8 *buf;
};

static int fake_copy(struct dmaplane_region *r, u64 off, struct iov_iter *iter,
		     bool to_region)
{
	struct fake_region *f = container_of(r, struct fake_region, region);
	size_t n = iov_iter_count(iter);

	if (to_region)
		return copy_from_iter(f->buf + off, n, iter) == n ? 0 : -EFAULT;
	return copy_to_iter(f->buf + off, n, iter) == n ? 0 : -EFAULT;
}

static void fake_release(struct dmaplane_region *r)
{
	kfree(container_of(r, struct fake_region, region)->buf);
}

static const struct dmaplane_region_ops fake_ops = {
	.copy = fake_copy,
	.release = fake_release,
};

static struct dmaplane_region *fake_region(struct kunit *test, u64 len)
{
	struct fake_region *f = kzalloc(sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->buf = kzalloc(len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->buf);
	dmaplane_region_init(&f->region, &fake_ops, DMAPLANE_REGION_DMABUF,
			     DMAPLANE_ACCESS_ALL, len);
	return &f->region;
}

#define NR_REGIONS 256

static void rkeys_unique_and_resolvable(struct kunit *test)
{
	struct dmaplane_ep *ep = dmaplane_ep_create();
	long base = dmaplane_stat_read(DMAPLANE_STAT_REGIONS);
	struct dmaplane_region **rs, *r;
	unsigned int i, j;

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, ep);
	rs = kunit_kcalloc(test, NR_REGIONS, sizeof(*rs), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, rs);
	for (i = 0; i < NR_REGIONS; i++) {
		rs[i] = fake_region(test, 64);
		KUNIT_ASSERT_EQ(test, dmaplane_region_publish(ep, rs[i]), 0);
		KUNIT_EXPECT_NE(test, rs[i]->rkey, 0ull);
	}
	KUNIT_EXPECT_EQ(test, dmaplane_stat_read(DMAPLANE_STAT_REGIONS),
			base + NR_REGIONS);
	for (i = 0; i < NR_REGIONS; i++) {
		for (j = i + 1; j < NR_REGIONS; j++) {
			KUNIT_EXPECT_NE(test, rs[i]->rkey, rs[j]->rkey);
			KUNIT_EXPECT_NE(test, rs[i]->handle, rs[j]->handle);
		}
		r = dmaplane_region_lookup_rkey(rs[i]->rkey);
		KUNIT_EXPECT_PTR_EQ(test, r, rs[i]);
		dmaplane_region_put(r);
	}
	/* A deregistered region's key stops resolving at once. */
	r = dmaplane_region_unpublish(ep, rs[0]->handle, DMAPLANE_REGION_DMABUF);
	KUNIT_ASSERT_PTR_EQ(test, r, rs[0]);
	KUNIT_EXPECT_NULL(test, dmaplane_region_lookup_rkey(r->rkey));
	KUNIT_EXPECT_EQ(test, PTR_ERR(dmaplane_region_unpublish(ep, r->handle,
								DMAPLANE_REGION_DMABUF)),
			-ENOENT);
	/* Wrong kind. */
	KUNIT_EXPECT_EQ(test, PTR_ERR(dmaplane_region_get(ep, rs[1]->handle,
							  DMAPLANE_REGION_USER)),
			-EINVAL);
	dmaplane_region_put(r);
	dmaplane_ep_destroy(ep);
	KUNIT_EXPECT_EQ(test, dmaplane_stat_read(DMAPLANE_STAT_REGIONS), base);
}

static void region_copy_bounds(struct kunit *test)
{
	struct dmaplane_region *r = fake_region(test, 4096);
	u8 src[16], dst[16];
	struct iov_iter iter;
	struct kvec kv;

	memset(src, 0x3c, sizeof(src));
	kv.iov_base = src;
	kv.iov_len = sizeof(src);
	iov_iter_kvec(&iter, ITER_SOURCE, &kv, 1, sizeof(src));
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(r, 4096 - 16, 16, &iter, true), 0);

	iov_iter_kvec(&iter, ITER_SOURCE, &kv, 1, sizeof(src));
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(r, 4096 - 15, 16, &iter, true), -ERANGE);
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(r, 4097, 0, &iter, true), -ERANGE);
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(r, U64_MAX, 2, &iter, true), -ERANGE);
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(r, 16, U64_MAX - 8, &iter, true), -ERANGE);
	/* The iterator must hold the length. */
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(r, 0, 17, &iter, true), -EINVAL);

	kv.iov_base = dst;
	iov_iter_kvec(&iter, ITER_DEST, &kv, 1, sizeof(dst));
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(r, 4096 - 16, 16, &iter, false), 0);
	KUNIT_EXPECT_EQ(test, memcmp(src, dst, sizeof(src)), 0);

	dmaplane_region_invalidate(r);
	iov_iter_kvec(&iter, ITER_DEST, &kv, 1, sizeof(dst));
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(r, 0, 16, &iter, false), -EFAULT);
	dmaplane_region_put(r);
}

/*
 * Delivery copies through the cache (dmaplane_mr_cache_copy()): served by
 * an unused entry covering the whole range with enough access, which
 * stays cached (back on the LRU) afterwards; a miss, a read-only entry
 * for a write, or an invalidated entry leave the iterator untouched.
 */
static void delivery_copy_through_cache(struct kunit *test)
{
	struct dmaplane_mr_cache *c = cache_or_fail(test, 4);
	unsigned int entries, unused, i;
	struct page *pages[2], *ro;
	struct iov_iter iter;
	struct kvec kv;
	u8 buf[300], *p;
	u64 inval, hits;

	for (i = 0; i < 2; i++) {
		pages[i] = alloc_page(GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, pages[i]);
		memset(page_address(pages[i]), 0xa0 + i, PAGE_SIZE);
	}
	KUNIT_ASSERT_EQ(test, dmaplane_mr_test_add(c, BASE, pages, 2, true), 0);
	ro = alloc_page(GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ro);
	KUNIT_ASSERT_EQ(test, dmaplane_mr_test_add(c, BASE + 4 * PAGE_SIZE, &ro, 1,
						   false), 0);

	/* Write 300 bytes across the page boundary. */
	memset(buf, 0x5a, sizeof(buf));
	kv.iov_base = buf;
	kv.iov_len = sizeof(buf);
	iov_iter_kvec(&iter, ITER_SOURCE, &kv, 1, sizeof(buf));
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_copy(c, BASE + PAGE_SIZE - 100, 300,
						    &iter, true), 0);
	KUNIT_EXPECT_EQ(test, iov_iter_count(&iter), 0u);
	p = page_address(pages[0]);
	KUNIT_EXPECT_EQ(test, p[PAGE_SIZE - 101], 0xa0);
	KUNIT_EXPECT_EQ(test, p[PAGE_SIZE - 100], 0x5a);
	p = page_address(pages[1]);
	KUNIT_EXPECT_EQ(test, p[199], 0x5a);
	KUNIT_EXPECT_EQ(test, p[200], 0xa1);

	/* Read them back. */
	memset(buf, 0, sizeof(buf));
	iov_iter_kvec(&iter, ITER_DEST, &kv, 1, sizeof(buf));
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_copy(c, BASE + PAGE_SIZE - 150, 300,
						    &iter, false), 0);
	for (i = 0; i < sizeof(buf); i++)
		KUNIT_EXPECT_EQ(test, buf[i], i < 50 ? 0xa0 : 0x5a);

	/* Still both unused and cached; copies are no registrations (hits). */
	dmaplane_mr_test_counts(c, &entries, &unused, &inval, &hits);
	KUNIT_EXPECT_EQ(test, entries, 2u);
	KUNIT_EXPECT_EQ(test, unused, 2u);
	KUNIT_EXPECT_EQ(test, hits, 0ull);

	/* Past the end, in a hole, a write into a read-only entry: misses. */
	iov_iter_kvec(&iter, ITER_SOURCE, &kv, 1, sizeof(buf));
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_copy(c, BASE + 2 * PAGE_SIZE - 10, 20,
						    &iter, true), -ENOENT);
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_copy(c, BASE + 3 * PAGE_SIZE, 20,
						    &iter, true), -ENOENT);
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_copy(c, BASE + 4 * PAGE_SIZE, 20,
						    &iter, true), -ENOENT);
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_copy(c, U64_MAX - 5, 20,
						    &iter, true), -ENOENT);
	KUNIT_EXPECT_EQ(test, iov_iter_count(&iter), sizeof(buf));
	/* ... but a read from it is served. */
	iov_iter_kvec(&iter, ITER_DEST, &kv, 1, 20);
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_copy(c, BASE + 4 * PAGE_SIZE, 20,
						    &iter, false), 0);

	/* Invalidated: gone from the cache, nothing copied. */
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_invalidate(c, BASE, BASE + 1), 1u);
	iov_iter_kvec(&iter, ITER_SOURCE, &kv, 1, sizeof(buf));
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_copy(c, BASE, 10, &iter, true), -ENOENT);
	KUNIT_EXPECT_EQ(test, iov_iter_count(&iter), sizeof(buf));
	dmaplane_mr_cache_put(c);
}

/*
 * The pages of an entry for a reader of another address space (the
 * helper of a split copy: dmaplane_mr_cache_get_pages()): the entry's own
 * pages under the range, each referenced once more, for a read-only
 * entry too; the entry stays cached and unused.  A range the entry does
 * not cover whole, more pages than the caller has room for, an empty or
 * wrapping range, an invalidated entry: -ENOENT, nothing referenced.
 */
static void helper_pages_through_cache(struct kunit *test)
{
	struct dmaplane_mr_cache *c = cache_or_fail(test, 4);
	struct page *pages[3], *got[4];
	unsigned int entries, unused, i;
	int refs[3];
	u64 inval, hits;

	for (i = 0; i < 3; i++) {
		pages[i] = alloc_page(GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, pages[i]);
	}
	KUNIT_ASSERT_EQ(test, dmaplane_mr_test_add(c, BASE, pages, 3, false), 0);
	for (i = 0; i < 3; i++)
		refs[i] = page_ref_count(pages[i]);

	/* Across all three pages, from an odd offset. */
	KUNIT_ASSERT_EQ(test, dmaplane_mr_test_get_pages(c, BASE + 100, 2 * PAGE_SIZE, got, 4),
			3);
	for (i = 0; i < 3; i++) {
		KUNIT_EXPECT_PTR_EQ(test, got[i], pages[i]);
		KUNIT_EXPECT_EQ(test, page_ref_count(pages[i]), refs[i] + 1);
		put_page(got[i]);
		KUNIT_EXPECT_EQ(test, page_ref_count(pages[i]), refs[i]);
	}
	/* Within the middle page. */
	KUNIT_ASSERT_EQ(test, dmaplane_mr_test_get_pages(c, BASE + PAGE_SIZE + 5, 10, got, 1),
			1);
	KUNIT_EXPECT_PTR_EQ(test, got[0], pages[1]);
	put_page(got[0]);
	dmaplane_mr_test_counts(c, &entries, &unused, &inval, &hits);
	KUNIT_EXPECT_EQ(test, entries, 1u);
	KUNIT_EXPECT_EQ(test, unused, 1u);

	/* Misses. */
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_get_pages(c, BASE, 3 * PAGE_SIZE, got, 2),
			-ENOENT);
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_get_pages(c, BASE + 2 * PAGE_SIZE, PAGE_SIZE + 1,
							 got, 4), -ENOENT);
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_get_pages(c, BASE - 1, 2, got, 4), -ENOENT);
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_get_pages(c, BASE, 0, got, 4), -ENOENT);
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_get_pages(c, U64_MAX - 5, 20, got, 4), -ENOENT);
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_invalidate(c, BASE, BASE + 1), 1u);
	KUNIT_EXPECT_EQ(test, dmaplane_mr_test_get_pages(c, BASE, 10, got, 4), -ENOENT);
	dmaplane_mr_cache_put(c);
}

static struct kunit_case dmaplane_mr_cases[] = {
	KUNIT_CASE(lookup_covering_ranges),
	KUNIT_CASE(lookup_among_many_entries),
	KUNIT_CASE(lru_evicts_least_recently_used),
	KUNIT_CASE(lru_bound_zero_keeps_nothing),
	KUNIT_CASE(invalidate_removes_exactly_overlapping),
	KUNIT_CASE(mr_copy_honours_offset_and_bounds),
	KUNIT_CASE(delivery_copy_through_cache),
	KUNIT_CASE(helper_pages_through_cache),
	KUNIT_CASE(rkeys_unique_and_resolvable),
	KUNIT_CASE(region_copy_bounds),
	{}
};

static struct kunit_suite dmaplane_mr_suite = {
	.name = "dmaplane_mr",
	.test_cases = dmaplane_mr_cases,
};

kunit_test_suites(&dmaplane_mr_suite);

// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for the dmaplane region core: handles, remote keys,
 * references and bounds-checked copies, with a test-only region kind
 * backed by a kernel buffer.
 */
#include <kunit/test.h>
#include <linux/err.h>
#include <linux/random.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include "../kmod/dmaplane.h"

MODULE_IMPORT_NS(DMAPLANE_NS(DMAPLANE_KUNIT));

struct fake_region {
	struct dmaplane_region region;
	u8 *buf;
	int *released;
};

static_assert(offsetof(struct fake_region, region) == 0);

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
	struct fake_region *f = container_of(r, struct fake_region, region);

	kfree(f->buf);
	(*f->released)++;
}

static const struct dmaplane_region_ops fake_ops = {
	.copy = fake_copy,
	.release = fake_release,
};

static struct fake_region *fake_new(struct kunit *test, u64 len, int *released,
				    enum dmaplane_region_kind kind)
{
	struct fake_region *f = kzalloc(sizeof(*f), GFP_KERNEL);

	KUNIT_ASSERT_NOT_NULL(test, f);
	f->buf = kzalloc(len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f->buf);
	f->released = released;
	dmaplane_region_init(&f->region, &fake_ops, kind, DMAPLANE_ACCESS_ALL, len);
	return f;
}

static struct dmaplane_ep *ep_new(struct kunit *test)
{
	struct dmaplane_ep *ep = dmaplane_ep_create();

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, ep);
	return ep;
}

#define NR_REGIONS 256

static void rkeys_unique_and_resolvable(struct kunit *test)
{
	long base = dmaplane_stat_read(DMAPLANE_STAT_REGIONS);
	struct dmaplane_ep *ep = ep_new(test);
	struct fake_region **f;
	int released = 0;
	unsigned int i, j;

	f = kunit_kcalloc(test, NR_REGIONS, sizeof(*f), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, f);
	for (i = 0; i < NR_REGIONS; i++) {
		f[i] = fake_new(test, 64, &released, DMAPLANE_REGION_USER);
		KUNIT_ASSERT_EQ(test, dmaplane_region_publish(ep, &f[i]->region), 0);
		KUNIT_EXPECT_NE(test, f[i]->region.rkey, 0ull);
		KUNIT_EXPECT_NE(test, f[i]->region.handle, 0u);
	}
	KUNIT_EXPECT_EQ(test, dmaplane_stat_read(DMAPLANE_STAT_REGIONS),
			base + NR_REGIONS);

	for (i = 0; i < NR_REGIONS; i++) {
		struct dmaplane_region *r;

		for (j = i + 1; j < NR_REGIONS; j++) {
			KUNIT_EXPECT_NE(test, f[i]->region.rkey, f[j]->region.rkey);
			KUNIT_EXPECT_NE(test, f[i]->region.handle, f[j]->region.handle);
		}
		r = dmaplane_region_lookup_rkey(f[i]->region.rkey);
		KUNIT_EXPECT_PTR_EQ(test, r, &f[i]->region);
		dmaplane_region_put(r);
	}

	/* Closing the endpoint releases every region exactly once. */
	dmaplane_ep_destroy(ep);
	rcu_barrier();
	KUNIT_EXPECT_EQ(test, released, NR_REGIONS);
	KUNIT_EXPECT_EQ(test, dmaplane_stat_read(DMAPLANE_STAT_REGIONS), base);
}

static void get_checks_handle_and_kind(struct kunit *test)
{
	struct dmaplane_ep *ep = ep_new(test), *other = ep_new(test);
	struct dmaplane_region *r;
	struct fake_region *f;
	int released = 0;

	f = fake_new(test, 64, &released, DMAPLANE_REGION_ARENA);
	KUNIT_ASSERT_EQ(test, dmaplane_region_publish(ep, &f->region), 0);

	r = dmaplane_region_get(ep, f->region.handle, DMAPLANE_REGION_ARENA);
	KUNIT_EXPECT_PTR_EQ(test, r, &f->region);
	dmaplane_region_put(r);
	KUNIT_EXPECT_PTR_EQ(test, dmaplane_region_get(ep, f->region.handle,
						      DMAPLANE_REGION_USER),
			    ERR_PTR(-EINVAL));
	KUNIT_EXPECT_PTR_EQ(test, dmaplane_region_get(ep, f->region.handle + 1,
						      DMAPLANE_REGION_ARENA),
			    ERR_PTR(-ENOENT));
	/* Handles are per endpoint: another endpoint does not see it. */
	KUNIT_EXPECT_PTR_EQ(test, dmaplane_region_get(other, f->region.handle,
						      DMAPLANE_REGION_ARENA),
			    ERR_PTR(-ENOENT));
	KUNIT_EXPECT_EQ(test, released, 0);

	dmaplane_ep_destroy(other);
	dmaplane_ep_destroy(ep);
	rcu_barrier();
	KUNIT_EXPECT_EQ(test, released, 1);
}

static void unpublish_revokes_rkey(struct kunit *test)
{
	struct dmaplane_ep *ep = ep_new(test);
	struct dmaplane_region *r, *held;
	struct fake_region *f;
	int released = 0;
	u64 rkey;

	f = fake_new(test, 64, &released, DMAPLANE_REGION_USER);
	KUNIT_ASSERT_EQ(test, dmaplane_region_publish(ep, &f->region), 0);
	rkey = f->region.rkey;

	/* A reference taken before unpublishing keeps the memory alive. */
	held = dmaplane_region_lookup_rkey(rkey);
	KUNIT_ASSERT_PTR_EQ(test, held, &f->region);

	r = dmaplane_region_unpublish(ep, f->region.handle, DMAPLANE_REGION_USER);
	KUNIT_ASSERT_PTR_EQ(test, r, &f->region);
	KUNIT_EXPECT_NULL(test, dmaplane_region_lookup_rkey(rkey));
	KUNIT_EXPECT_PTR_EQ(test, dmaplane_region_unpublish(ep, f->region.handle,
							    DMAPLANE_REGION_USER),
			    ERR_PTR(-ENOENT));
	dmaplane_region_put(r);
	KUNIT_EXPECT_EQ(test, released, 0);
	dmaplane_region_put(held);
	KUNIT_EXPECT_EQ(test, released, 1);
	dmaplane_ep_destroy(ep);
	rcu_barrier();
}

static void copy_checks_bounds_and_moves_data(struct kunit *test)
{
	struct dmaplane_ep *ep = ep_new(test);
	u8 *src, *dst;
	struct fake_region *f;
	struct iov_iter iter;
	struct kvec kv;
	int released = 0;
	const u64 len = 4096;

	src = kunit_kmalloc(test, len, GFP_KERNEL);
	dst = kunit_kzalloc(test, len, GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, src);
	KUNIT_ASSERT_NOT_NULL(test, dst);
	get_random_bytes(src, len);

	f = fake_new(test, len, &released, DMAPLANE_REGION_USER);
	KUNIT_ASSERT_EQ(test, dmaplane_region_publish(ep, &f->region), 0);

	kv = (struct kvec){ .iov_base = src, .iov_len = len };
	iov_iter_kvec(&iter, WRITE, &kv, 1, len);
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(&f->region, 0, len, &iter, true), 0);
	KUNIT_EXPECT_EQ(test, memcmp(f->buf, src, len), 0);

	kv = (struct kvec){ .iov_base = dst, .iov_len = len };
	iov_iter_kvec(&iter, READ, &kv, 1, 100);
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(&f->region, 1000, 100, &iter, false), 0);
	KUNIT_EXPECT_EQ(test, memcmp(dst, src + 1000, 100), 0);

	/* Out of bounds, overflowing, and past the end by one byte. */
	iov_iter_kvec(&iter, READ, &kv, 1, len);
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(&f->region, len - 1, 2, &iter, false),
			-ERANGE);
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(&f->region, U64_MAX, 2, &iter, false),
			-ERANGE);
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(&f->region, 1, U64_MAX, &iter, false),
			-ERANGE);
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(&f->region, len, 0, &iter, false), 0);

	/* An invalidated region refuses copies. */
	dmaplane_region_invalidate(&f->region);
	KUNIT_EXPECT_EQ(test, dmaplane_region_copy(&f->region, 0, 1, &iter, false),
			-EFAULT);

	dmaplane_ep_destroy(ep);
	rcu_barrier();
	KUNIT_EXPECT_EQ(test, released, 1);
}

static struct kunit_case dmaplane_region_cases[] = {
	KUNIT_CASE(rkeys_unique_and_resolvable),
	KUNIT_CASE(get_checks_handle_and_kind),
	KUNIT_CASE(unpublish_revokes_rkey),
	KUNIT_CASE(copy_checks_bounds_and_moves_data),
	{}
};

static struct kunit_suite dmaplane_region_suite = {
	.name = "dmaplane_region",
	.test_cases = dmaplane_region_cases,
};

kunit_test_suites(&dmaplane_region_suite);

// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit tests for dmaplane endpoints and the GET_INFO request.
 */
#include <kunit/test.h>
#include <linux/err.h>
#include <linux/mm.h>
#include <linux/slab.h>

#include "../kmod/dmaplane.h"

MODULE_IMPORT_NS(DMAPLANE_NS(DMAPLANE_KUNIT));

static struct dmaplane_ep *ep_create_or_fail(struct kunit *test)
{
	struct dmaplane_ep *ep = dmaplane_ep_create();

	KUNIT_ASSERT_NOT_ERR_OR_NULL(test, ep);
	return ep;
}

static void info_fill_reports_module_facts(struct kunit *test)
{
	struct dmaplane_ep *ep = ep_create_or_fail(test);
	struct dmaplane_info info = { };

	KUNIT_EXPECT_EQ(test, dmaplane_info_fill(ep, &info), 0);
	KUNIT_EXPECT_EQ(test, info.abi_version, DMAPLANE_ABI_VERSION);
	KUNIT_EXPECT_TRUE(test, info.caps & DMAPLANE_CAP_INFO);
	KUNIT_EXPECT_EQ(test, info.endpoint_id, (u64)ep->id);
	KUNIT_EXPECT_EQ(test, info.page_size, (u32)PAGE_SIZE);
	KUNIT_EXPECT_EQ(test, info.flags, 0u);
	KUNIT_EXPECT_EQ(test, info.pad, 0u);
	KUNIT_EXPECT_TRUE(test, !memchr_inv(info.reserved, 0, sizeof(info.reserved)));
	dmaplane_ep_destroy(ep);
}

static void info_fill_rejects_flags(struct kunit *test)
{
	struct dmaplane_ep *ep = ep_create_or_fail(test);
	struct dmaplane_info info = { };
	unsigned int bit;

	for (bit = 0; bit < 32; bit++) {
		memset(&info, 0, sizeof(info));
		info.flags = 1u << bit;
		KUNIT_EXPECT_EQ_MSG(test, dmaplane_info_fill(ep, &info), -EINVAL,
				    "flag bit %u", bit);
		/* A rejected request is left untouched. */
		KUNIT_EXPECT_EQ(test, info.abi_version, 0u);
	}
	dmaplane_ep_destroy(ep);
}

static void info_fill_rejects_padding(struct kunit *test)
{
	struct dmaplane_ep *ep = ep_create_or_fail(test);
	struct dmaplane_info info = { };
	unsigned int i;

	info.pad = 0x80000000u;
	KUNIT_EXPECT_EQ(test, dmaplane_info_fill(ep, &info), -EINVAL);

	for (i = 0; i < ARRAY_SIZE(info.reserved); i++) {
		memset(&info, 0, sizeof(info));
		info.reserved[i] = 1ull << (17 * i % 64);
		KUNIT_EXPECT_EQ_MSG(test, dmaplane_info_fill(ep, &info), -EINVAL,
				    "reserved[%u]", i);
	}
	dmaplane_ep_destroy(ep);
}

#define NR_EPS 64

static void ep_ids_unique_and_counted(struct kunit *test)
{
	long base = dmaplane_stat_read(DMAPLANE_STAT_ENDPOINTS);
	struct dmaplane_ep **eps;
	unsigned int i, j;

	eps = kunit_kcalloc(test, NR_EPS, sizeof(*eps), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, eps);

	for (i = 0; i < NR_EPS; i++)
		eps[i] = ep_create_or_fail(test);
	KUNIT_EXPECT_EQ(test, dmaplane_stat_read(DMAPLANE_STAT_ENDPOINTS),
			base + NR_EPS);

	for (i = 0; i < NR_EPS; i++) {
		KUNIT_EXPECT_NE(test, eps[i]->id, 0u);
		for (j = i + 1; j < NR_EPS; j++)
			KUNIT_EXPECT_NE(test, eps[i]->id, eps[j]->id);
	}

	for (i = 0; i < NR_EPS; i++)
		dmaplane_ep_destroy(eps[i]);
	KUNIT_EXPECT_EQ(test, dmaplane_stat_read(DMAPLANE_STAT_ENDPOINTS), base);
}

static void ep_id_not_reused_at_once(struct kunit *test)
{
	struct dmaplane_ep *ep = ep_create_or_fail(test);
	u32 old = ep->id;

	dmaplane_ep_destroy(ep);
	ep = ep_create_or_fail(test);
	KUNIT_EXPECT_NE(test, ep->id, old);
	dmaplane_ep_destroy(ep);
}

static struct kunit_case dmaplane_endpoint_cases[] = {
	KUNIT_CASE(info_fill_reports_module_facts),
	KUNIT_CASE(info_fill_rejects_flags),
	KUNIT_CASE(info_fill_rejects_padding),
	KUNIT_CASE(ep_ids_unique_and_counted),
	KUNIT_CASE(ep_id_not_reused_at_once),
	{}
};

static struct kunit_suite dmaplane_endpoint_suite = {
	.name = "dmaplane_endpoint",
	.test_cases = dmaplane_endpoint_cases,
};

kunit_test_suites(&dmaplane_endpoint_suite);

MODULE_DESCRIPTION("KUnit tests for dmaplane");
MODULE_LICENSE("GPL");

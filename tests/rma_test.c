// SPDX-License-Identifier: GPL-2.0
/*
 * One-sided put/get on one node: into registered user memory, arenas and
 * imported dma-bufs of another endpoint, with every target-side check
 * (key, owner, access, bounds, invalidation) and its errno.
 */
#include <linux/dma-heap.h>
#include <sys/mman.h>

#include "dp_test.h"

#define RW (DMAPLANE_ACCESS_LOCAL_WRITE | DMAPLANE_ACCESS_REMOTE_READ | \
	    DMAPLANE_ACCESS_REMOTE_WRITE)
#define RMA_MS 5000	/* for one put or get to complete */

FIXTURE(rma) {
	struct dp_ep *init, *target, *other;
	uint32_t to_target, to_other;
};

FIXTURE_SETUP(rma)
{
	self->init = dp_test_ep_new(0, 0);
	self->target = dp_test_ep_new(0, 0);
	self->other = dp_test_ep_new(0, 0);
	ASSERT_NE(NULL, self->init);
	ASSERT_NE(NULL, self->target);
	ASSERT_NE(NULL, self->other);
	ASSERT_EQ(0, dp_test_connect(self->init, self->target, &self->to_target));
	ASSERT_EQ(0, dp_test_connect(self->init, self->other, &self->to_other));
}

FIXTURE_TEARDOWN(rma)
{
	dp_close(self->init);
	dp_close(self->target);
	dp_close(self->other);
}

TEST_F(rma, put_get_user_memory)
{
	const size_t len = 1 << 20;
	char *region = malloc(len), *buf = malloc(len), *back = malloc(len);
	struct dp_mr *mr;
	uint64_t key;

	memset(region, 0, len);
	ASSERT_EQ(0, dp_mr_reg(self->target, region, len, RW, &mr));
	key = dp_mr_key(mr);
	dp_test_fill(buf, len, 1);
	ASSERT_EQ(0, dp_test_rma(self->init, 1, self->to_target, key, 0, buf, len, RMA_MS));
	EXPECT_EQ(0, memcmp(region, buf, len));
	/* A slice at an odd offset, read back with get. */
	dp_test_fill(buf, 777, 2);
	ASSERT_EQ(0, dp_test_rma(self->init, 1, self->to_target, key, 4095, buf, 777, RMA_MS));
	EXPECT_EQ(0, memcmp(region + 4095, buf, 777));
	ASSERT_EQ(0, dp_test_rma(self->init, 0, self->to_target, key, 4095, back, 777, RMA_MS));
	EXPECT_EQ(0, memcmp(back, buf, 777));
	/* Zero bytes at the very end is fine. */
	EXPECT_EQ(0, dp_test_rma(self->init, 1, self->to_target, key, len, buf, 0, RMA_MS));
	dp_mr_dereg(mr);
	free(region);
	free(buf);
	free(back);
}

TEST_F(rma, target_side_checks)
{
	const size_t len = 65536;
	char *ro = malloc(len), *wo = malloc(len), *buf = malloc(len);
	struct dp_mr *mro, *mwo, *mother;
	uint64_t kro, kwo;

	ASSERT_EQ(0, dp_mr_reg(self->target, ro, len, DMAPLANE_ACCESS_REMOTE_READ, &mro));
	ASSERT_EQ(0, dp_mr_reg(self->target, wo, len,
			       DMAPLANE_ACCESS_LOCAL_WRITE | DMAPLANE_ACCESS_REMOTE_WRITE,
			       &mwo));
	kro = dp_mr_key(mro);
	kwo = dp_mr_key(mwo);
	EXPECT_EQ(-EACCES, dp_test_rma(self->init, 1, self->to_target, kro, 0, buf, 8, RMA_MS));
	EXPECT_EQ(0, dp_test_rma(self->init, 0, self->to_target, kro, 0, buf, 8, RMA_MS));
	EXPECT_EQ(-EACCES, dp_test_rma(self->init, 0, self->to_target, kwo, 0, buf, 8, RMA_MS));
	EXPECT_EQ(0, dp_test_rma(self->init, 1, self->to_target, kwo, 0, buf, 8, RMA_MS));

	/* Bounds, overflow-safe. */
	EXPECT_EQ(-ERANGE, dp_test_rma(self->init, 1, self->to_target, kwo, len - 7, buf, 8,
				       RMA_MS));
	EXPECT_EQ(-ERANGE, dp_test_rma(self->init, 1, self->to_target, kwo, len + 1, buf, 0,
				       RMA_MS));
	EXPECT_EQ(-ERANGE, dp_test_rma(self->init, 1, self->to_target, kwo, ~0ull, buf, 2, RMA_MS));
	EXPECT_EQ(-ERANGE, dp_test_rma(self->init, 0, self->to_target, kro, 1, buf, len, RMA_MS));

	/* A key that is not the target's: never issued, or another's. */
	EXPECT_EQ(-ENOENT, dp_test_rma(self->init, 1, self->to_target, 0, 0, buf, 8, RMA_MS));
	EXPECT_EQ(-ENOENT, dp_test_rma(self->init, 1, self->to_target, kwo ^ 1, 0, buf, 8, RMA_MS));
	ASSERT_EQ(0, dp_mr_reg(self->other, buf, len, RW, &mother));
	EXPECT_EQ(-ENOENT, dp_test_rma(self->init, 1, self->to_target, dp_mr_key(mother),
				       0, buf, 8, RMA_MS));
	EXPECT_EQ(0, dp_test_rma(self->init, 1, self->to_other, dp_mr_key(mother),
				 0, buf, 8, RMA_MS));

	/* A revoked key stops working at once. */
	dp_mr_dereg(mwo);
	EXPECT_EQ(-ENOENT, dp_test_rma(self->init, 1, self->to_target, kwo, 0, buf, 8, RMA_MS));
	dp_mr_dereg(mro);
	dp_mr_dereg(mother);
	free(ro);
	free(wo);
	free(buf);
}

TEST_F(rma, invalidated_region_fails_cleanly)
{
	const size_t len = 8 * 4096;
	char *region = mmap(NULL, len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char buf[64];
	struct dp_mr *mr;

	ASSERT_NE(MAP_FAILED, region);
	memset(region, 1, len);
	ASSERT_EQ(0, dp_mr_reg(self->target, region, len, RW, &mr));
	ASSERT_EQ(0, dp_test_rma(self->init, 1, self->to_target, dp_mr_key(mr), 0, buf, 64,
				 RMA_MS));
	munmap(region, len);
	EXPECT_EQ(-EFAULT, dp_test_rma(self->init, 1, self->to_target, dp_mr_key(mr),
				       0, buf, 64, RMA_MS));
	EXPECT_EQ(-EFAULT, dp_test_rma(self->init, 0, self->to_target, dp_mr_key(mr),
				       0, buf, 64, RMA_MS));
	dp_mr_dereg(mr);
}

TEST_F(rma, put_get_arena)
{
	const size_t len = 4 << 20;
	char *buf = malloc(len), *back = malloc(len);
	struct dp_arena *arena;
	char *map;

	ASSERT_EQ(0, dp_arena_create(self->target, len, 0, DMAPLANE_NUMA_ANY, RW, &arena));
	map = dp_arena_ptr(arena);
	dp_test_fill(buf, len, 3);
	ASSERT_EQ(0, dp_test_rma(self->init, 1, self->to_target, dp_arena_key(arena),
				 0, buf, len, RMA_MS));
	EXPECT_EQ(0, memcmp(map, buf, len));
	dp_test_fill(map + 12345, 100000, 4);
	ASSERT_EQ(0, dp_test_rma(self->init, 0, self->to_target, dp_arena_key(arena),
				 12345, back, 100000, RMA_MS));
	EXPECT_EQ(0, memcmp(back, map + 12345, 100000));
	dp_arena_destroy(arena);
	free(buf);
	free(back);
}

TEST_F(rma, put_into_imported_dma_heap_buffer)
{
	struct dma_heap_allocation_data alloc = {
		.len = 1 << 20,
		.fd_flags = O_RDWR | O_CLOEXEC,
	};
	char *buf = malloc(1 << 20), *back = malloc(1 << 20), *map;
	struct dp_mr *mr;
	int heap = open("/dev/dma_heap/system", O_RDONLY);

	if (heap < 0)
		SKIP(return, "no /dev/dma_heap/system in this kernel");
	ASSERT_EQ(0, ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &alloc));
	ASSERT_EQ(0, dp_mr_import_dmabuf(self->target, alloc.fd, 0, 1 << 20, RW, &mr));
	dp_test_fill(buf, 1 << 20, 5);
	ASSERT_EQ(0, dp_test_rma(self->init, 1, self->to_target, dp_mr_key(mr),
				 0, buf, 1 << 20, RMA_MS));
	/* Read it back through the exporter's own mapping. */
	map = mmap(NULL, 1 << 20, PROT_READ, MAP_SHARED, alloc.fd, 0);
	ASSERT_NE(MAP_FAILED, map);
	EXPECT_EQ(0, memcmp(map, buf, 1 << 20));
	ASSERT_EQ(0, dp_test_rma(self->init, 0, self->to_target, dp_mr_key(mr),
				 4096, back, 8192, RMA_MS));
	EXPECT_EQ(0, memcmp(back, buf + 4096, 8192));
	munmap(map, 1 << 20);
	dp_mr_dereg(mr);
	close(alloc.fd);
	close(heap);
	free(buf);
	free(back);
}

TEST_HARNESS_MAIN

/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * libdmaplane private definitions shared by its source files.
 */
#ifndef LIBDMAPLANE_INTERNAL_H
#define LIBDMAPLANE_INTERNAL_H

#include <errno.h>
#include <stdint.h>
#include <sys/ioctl.h>

#include "dmaplane.h"

struct dp_ep {
	int fd;
	/* Completion ring, mapped by dp_ep_setup(); NULL before. */
	struct dmaplane_cq_ring *ring;
	/* Entry 0 of the ring, and the kernel's size of an entry. */
	const char *cqes;
	size_t cqe_size;
	struct dmaplane_cq_head *head;
	size_t ring_size;
	size_t head_size;
};

/* A registered region: user memory or an imported dma-buf. */
struct dp_mr {
	struct dp_ep *ep;
	uint32_t handle;
	uint32_t lkey;
	uint64_t rkey;
};

/* An arena: its handle and the owner's mapping of it. */
struct dp_arena {
	struct dp_ep *ep;
	void *ptr;
	uint64_t len;
	uint32_t handle;
	uint32_t lkey;
	uint64_t rkey;
	uint64_t bytes_huge;
	uint64_t bytes_mid;
	uint64_t bytes_base;
};

/* ioctl(2) returning 0 or -errno. */
static inline int dp_ioctl(const struct dp_ep *ep, unsigned long cmd, void *arg)
{
	return ioctl(ep->fd, cmd, arg) < 0 ? -errno : 0;
}

/* mr.c: create a region with @cmd and wrap it (see there). */
int dp_mr_create(struct dp_ep *ep, unsigned long cmd, void *arg,
		 const __u32 *handle, const __u32 *lkey,
		 const __u64 *rkey, struct dp_mr **mrp);

#endif /* LIBDMAPLANE_INTERNAL_H */

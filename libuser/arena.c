// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdmaplane: arenas.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

static int arena_destroy_handle(struct dp_ep *ep, uint32_t handle)
{
	struct dmaplane_handle_arg arg;

	memset(&arg, 0, sizeof(arg));
	arg.handle = handle;
	return dp_ioctl(ep, DMAPLANE_IOCTL_ARENA_DESTROY, &arg);
}

int dp_arena_create(struct dp_ep *ep, uint64_t len, unsigned int flags,
		    int numa_node, unsigned int access, struct dp_arena **arenap)
{
	struct dmaplane_arena_create args;
	struct dp_arena *arena;
	void *ptr;
	int ret;

	if (!ep || !arenap)
		return -EINVAL;
	arena = malloc(sizeof(*arena));
	if (!arena)
		return -ENOMEM;

	memset(&args, 0, sizeof(args));
	args.size = len;
	args.flags = flags;
	args.numa_node = numa_node;
	args.access = access;
	ret = dp_ioctl(ep, DMAPLANE_IOCTL_ARENA_CREATE, &args);
	if (ret)
		goto err_free;

	ptr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, ep->fd,
		   (off_t)args.mmap_offset);
	if (ptr == MAP_FAILED) {
		ret = -errno;
		goto err_destroy;
	}

	arena->ep = ep;
	arena->ptr = ptr;
	arena->len = len;
	arena->handle = args.handle;
	arena->lkey = args.lkey;
	arena->rkey = args.rkey;
	arena->bytes_huge = args.bytes_huge;
	arena->bytes_mid = args.bytes_mid;
	arena->bytes_base = args.bytes_base;
	*arenap = arena;
	return 0;

err_destroy:
	arena_destroy_handle(ep, args.handle);
err_free:
	free(arena);
	return ret;
}

int dp_arena_destroy(struct dp_arena *arena)
{
	int ret;

	if (!arena)
		return -EINVAL;
	ret = munmap(arena->ptr, arena->len) ? -errno : 0;
	if (!ret)
		ret = arena_destroy_handle(arena->ep, arena->handle);
	else
		arena_destroy_handle(arena->ep, arena->handle);
	free(arena);
	return ret;
}

void *dp_arena_ptr(const struct dp_arena *arena)
{
	return arena->ptr;
}

uint64_t dp_arena_len(const struct dp_arena *arena)
{
	return arena->len;
}

uint64_t dp_arena_key(const struct dp_arena *arena)
{
	return arena->rkey;
}

uint32_t dp_arena_handle(const struct dp_arena *arena)
{
	return arena->handle;
}

void dp_arena_bytes(const struct dp_arena *arena, uint64_t *huge,
		    uint64_t *mid, uint64_t *base)
{
	if (huge)
		*huge = arena->bytes_huge;
	if (mid)
		*mid = arena->bytes_mid;
	if (base)
		*base = arena->bytes_base;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * dma-buf: DMAPLANE_IOCTL_DMABUF_EXPORT of arena slices (mmap of the
 * dma-buf, fd passing, vgem as importer, lifetime past ARENA_DESTROY) and
 * DMAPLANE_IOCTL_MR_IMPORT_DMABUF of foreign dma-bufs (dma-heap, udmabuf,
 * vgem, our own), with their errors.
 */
#include <signal.h>
#include <stdbool.h>
#include <linux/dma-heap.h>
#include <linux/udmabuf.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "dp_test.h"

#define MiB (1ul << 20)

/* The few DRM definitions the vgem tests need (<drm/drm.h>, drm_mode.h). */
struct dp_drm_prime_handle {
	uint32_t handle;
	uint32_t flags;
	int32_t fd;
};

struct dp_drm_mode_create_dumb {
	uint32_t height, width, bpp, flags, handle, pitch;
	uint64_t size;
};

struct dp_drm_mode_map_dumb {
	uint32_t handle, pad;
	uint64_t offset;
};

struct dp_drm_gem_close {
	uint32_t handle, pad;
};

#define DP_DRM_IOCTL_GEM_CLOSE		_IOW('d', 0x09, struct dp_drm_gem_close)
#define DP_DRM_IOCTL_PRIME_HANDLE_TO_FD	_IOWR('d', 0x2d, struct dp_drm_prime_handle)
#define DP_DRM_IOCTL_PRIME_FD_TO_HANDLE	_IOWR('d', 0x2e, struct dp_drm_prime_handle)
#define DP_DRM_IOCTL_MODE_CREATE_DUMB	_IOWR('d', 0xb2, struct dp_drm_mode_create_dumb)
#define DP_DRM_IOCTL_MODE_MAP_DUMB	_IOWR('d', 0xb3, struct dp_drm_mode_map_dumb)

#define VGEM_NODE	"/dev/dri/card0"
#define HEAP_NODE	"/dev/dma_heap/system"
#define UDMABUF_NODE	"/dev/udmabuf"

static long pg(void)
{
	return sysconf(_SC_PAGESIZE);
}

static int export(int fd, uint32_t handle, uint64_t off, uint64_t len, uint32_t flags)
{
	struct dmaplane_dmabuf_export e;
	int ret;

	memset(&e, 0, sizeof(e));
	e.handle = handle;
	e.offset = off;
	e.len = len;
	e.flags = flags;
	ret = dp_test_ioctl(fd, DMAPLANE_IOCTL_DMABUF_EXPORT, &e);
	return ret ? ret : e.fd;
}

static int import(int fd, int buf, uint64_t off, uint64_t len, uint32_t *handle)
{
	struct dmaplane_mr_import_dmabuf m;
	int ret;

	memset(&m, 0, sizeof(m));
	m.fd = buf;
	m.offset = off;
	m.len = len;
	m.access = DMAPLANE_ACCESS_ALL;
	ret = dp_test_ioctl(fd, DMAPLANE_IOCTL_MR_IMPORT_DMABUF, &m);
	if (!ret && handle)
		*handle = m.handle;
	return ret;
}

/*
 * Release an imported region: MR_DEREG where the module has it (mr.c),
 * else by closing the endpoint.  Returns the endpoint fd to use next.
 */
static int dereg_or_reopen(int fd, uint32_t handle, int *dereg_ret)
{
	struct dmaplane_handle_arg arg;

	memset(&arg, 0, sizeof(arg));
	arg.handle = handle;
	*dereg_ret = dp_test_ioctl(fd, DMAPLANE_IOCTL_MR_DEREG, &arg);
	if (*dereg_ret == -ENOTTY) {
		close(fd);
		*dereg_ret = 0;
		return open(DP_DEV, O_RDWR | O_CLOEXEC);
	}
	return fd;
}

FIXTURE(dmabuf) {
	int fd;
	struct dmaplane_arena_create a;
	size_t size;
	char *p;
	struct dp_test_mem base;
};

FIXTURE_SETUP(dmabuf)
{
	dp_test_mem_read(&self->base);
	ASSERT_LE(0, self->base.dmabufs) TH_LOG("no %s", DP_STATS);
	self->fd = open(DP_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", DP_DEV, strerror(errno));
	/* 2 MiB pages followed by smaller ones, when there are 2 MiB pages. */
	self->size = 4 * MiB + 4 * pg();
	memset(&self->a, 0, sizeof(self->a));
	self->a.size = self->size;
	self->a.numa_node = DMAPLANE_NUMA_ANY;
	self->a.access = DMAPLANE_ACCESS_ALL;
	ASSERT_EQ(0, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_ARENA_CREATE, &self->a));
	self->p = mmap(NULL, self->size, PROT_READ | PROT_WRITE, MAP_SHARED, self->fd,
		       (off_t)self->a.mmap_offset);
	ASSERT_NE(MAP_FAILED, self->p);
	dp_test_fill(self->p, self->size, 1234);
}

FIXTURE_TEARDOWN(dmabuf)
{
	if (self->p != MAP_FAILED)
		munmap(self->p, self->size);
	close(self->fd);
	dp_test_mem_expect(_metadata, &self->base);
}

TEST_F(dmabuf, export_rejects_bad_slices)
{
	uint64_t top = ~0ull & ~(uint64_t)(pg() - 1);
	struct dmaplane_dmabuf_export e;
	int other, a, b;

	EXPECT_EQ(-EINVAL, export(self->fd, self->a.handle, 1, pg(), 0));
	EXPECT_EQ(-EINVAL, export(self->fd, self->a.handle, 0, pg() + 1, 0));
	EXPECT_EQ(-EINVAL, export(self->fd, self->a.handle, 0, 0, 0));
	EXPECT_EQ(-EINVAL, export(self->fd, self->a.handle, pg() / 2, pg(), 0));
	EXPECT_EQ(-ERANGE, export(self->fd, self->a.handle, 0, self->size + pg(), 0));
	EXPECT_EQ(-ERANGE, export(self->fd, self->a.handle, self->size, pg(), 0));
	EXPECT_EQ(-ERANGE, export(self->fd, self->a.handle, pg(), self->size, 0));
	EXPECT_EQ(-ERANGE, export(self->fd, self->a.handle, top, 2 * pg(), 0));
	EXPECT_EQ(-ERANGE, export(self->fd, self->a.handle, pg(), top, 0));
	for (int bit = 1; bit < 32; bit++)
		EXPECT_EQ(-EINVAL, export(self->fd, self->a.handle, 0, pg(), 1u << bit));
	EXPECT_EQ(-ENOENT, export(self->fd, self->a.handle + 100, 0, pg(), 0));
	EXPECT_EQ(-ENOENT, export(self->fd, 0, 0, pg(), 0));

	memset(&e, 0, sizeof(e));
	e.handle = self->a.handle;
	e.len = pg();
	e.pad = 1;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_DMABUF_EXPORT, &e));
	e.pad = 0;
	e.reserved[1] = 1;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_DMABUF_EXPORT, &e));
	EXPECT_EQ(-EFAULT, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_DMABUF_EXPORT, NULL));
	EXPECT_EQ(self->base.dmabufs, dp_test_stat("dmabufs"));

	/* Another endpoint cannot export our arena. */
	other = open(DP_DEV, O_RDWR);
	ASSERT_LE(0, other);
	EXPECT_EQ(-ENOENT, export(other, self->a.handle, 0, pg(), 0));
	close(other);

	/* The whole arena and its last page are fine. */
	a = export(self->fd, self->a.handle, 0, self->size, 0);
	b = export(self->fd, self->a.handle, self->size - pg(), pg(), 0);
	EXPECT_LE(0, a);
	EXPECT_LE(0, b);
	EXPECT_EQ(self->base.dmabufs + 2, dp_test_stat("dmabufs"));
	close(a);
	close(b);
}

TEST_F(dmabuf, cloexec_by_default_not_with_no_cloexec)
{
	int a = export(self->fd, self->a.handle, 0, pg(), 0);
	int b = export(self->fd, self->a.handle, 0, pg(), DMAPLANE_DMABUF_NO_CLOEXEC);

	ASSERT_LE(0, a);
	ASSERT_LE(0, b);
	EXPECT_TRUE(fcntl(a, F_GETFD) & FD_CLOEXEC);
	EXPECT_FALSE(fcntl(b, F_GETFD) & FD_CLOEXEC);
	EXPECT_EQ(O_RDWR, fcntl(a, F_GETFL) & O_ACCMODE);
	close(a);
	close(b);
}

/* mmap of the dma-buf shows the slice, at any page offset of the arena. */
TEST_F(dmabuf, mmap_of_dmabuf_is_the_slice)
{
	static const uint64_t offs[] = { 0, 1, 512, 511 };

	for (unsigned int i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		uint64_t off = offs[i] * pg(), len = 2 * MiB + pg();
		char *q;
		int buf;

		buf = export(self->fd, self->a.handle, off, len, 0);
		ASSERT_LE(0, buf);
		q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0);
		ASSERT_NE(MAP_FAILED, q);
		EXPECT_EQ(0, memcmp(q, self->p + off, len)) TH_LOG("offset %llu",
								   (unsigned long long)off);
		/* Writes go both ways. */
		dp_test_fill(q, len, 77 + i);
		EXPECT_EQ(-1, dp_test_check(self->p + off, len, 77 + i));
		dp_test_fill(self->p + off, len, 1000 + i);
		EXPECT_EQ(-1, dp_test_check(q, len, 1000 + i));
		EXPECT_EQ(0, munmap(q, len));

		/* A mapping at an offset into the dma-buf; beyond it fails. */
		q = mmap(NULL, pg(), PROT_READ, MAP_SHARED, buf, pg());
		ASSERT_NE(MAP_FAILED, q);
		EXPECT_EQ(0, memcmp(q, self->p + off + pg(), pg()));
		EXPECT_EQ(0, munmap(q, pg()));
		EXPECT_EQ(MAP_FAILED, mmap(NULL, 2 * pg(), PROT_READ, MAP_SHARED, buf,
					   len - pg()));
		EXPECT_EQ(MAP_FAILED, mmap(NULL, pg(), PROT_READ, MAP_PRIVATE, buf, 0));
		close(buf);
	}
}

/* The dma-buf keeps the memory after ARENA_DESTROY and the owner's munmap. */
TEST_F(dmabuf, dmabuf_outlives_arena)
{
	struct dmaplane_handle_arg arg;
	size_t len = 2 * MiB;
	char *copy, *q;
	int buf;

	copy = malloc(len);
	ASSERT_NE(NULL, copy);
	memcpy(copy, self->p + pg(), len);
	buf = export(self->fd, self->a.handle, pg(), len, 0);
	ASSERT_LE(0, buf);
	q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, buf, 0);
	ASSERT_NE(MAP_FAILED, q);

	memset(&arg, 0, sizeof(arg));
	arg.handle = self->a.handle;
	ASSERT_EQ(0, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_ARENA_DESTROY, &arg));
	EXPECT_EQ(-ENOENT, export(self->fd, self->a.handle, 0, pg(), 0));
	EXPECT_EQ(0, munmap(self->p, self->size));
	self->p = MAP_FAILED;
	EXPECT_EQ(self->base.arenas + 1, dp_test_stat("arenas"));
	EXPECT_EQ(0, memcmp(q, copy, len));

	/* Mapping the fd again still works; so does the first mapping. */
	close(buf);
	EXPECT_EQ(self->base.dmabufs + 1, dp_test_stat("dmabufs"));
	EXPECT_EQ(0, memcmp(q, copy, len));
	dp_test_fill(q, len, 31);
	EXPECT_EQ(-1, dp_test_check(q, len, 31));
	EXPECT_EQ(0, munmap(q, len));
	EXPECT_EQ(self->base.dmabufs, dp_test_stat("dmabufs"));
	EXPECT_EQ(self->base.arenas, dp_test_stat("arenas"));
	EXPECT_EQ(self->base.arena_pages, dp_test_stat("arena_pages"));
	free(copy);
}

static int send_fd(int sock, int fd)
{
	char c = 'f';
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -1;
}

static int recv_fd(int sock)
{
	char c;
	struct iovec iov = { .iov_base = &c, .iov_len = 1 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = u.buf, .msg_controllen = sizeof(u.buf),
	};
	struct cmsghdr *cm;
	int fd;

	if (recvmsg(sock, &msg, 0) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* A process that never opened /dev/dmaplane reads the slice through the fd. */
TEST_F(dmabuf, fd_passed_over_unix_socket)
{
	size_t off = 3 * pg(), len = 2 * MiB;
	int sv[2], buf, status;
	pid_t pid;

	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		char *q;
		int fd;

		close(sv[0]);
		close(self->fd);
		munmap(self->p, self->size);
		fd = recv_fd(sv[1]);
		if (fd < 0)
			_exit(1);
		q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (q == MAP_FAILED)
			_exit(2);
		if (dp_test_check(q, len, 4321) != -1)
			_exit(3);
		dp_test_fill(q, len, 4322);
		_exit(0);
	}
	close(sv[1]);
	dp_test_fill(self->p + off, len, 4321);
	buf = export(self->fd, self->a.handle, off, len, 0);
	ASSERT_LE(0, buf);
	ASSERT_EQ(0, send_fd(sv[0], buf));
	close(buf);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(-1, dp_test_check(self->p + off, len, 4322));
	close(sv[0]);
}

/*
 * vgem imports our dma-buf (PRIME): it attaches and maps it for its
 * device and holds it until its handle is closed.  6.1's
 * drm_gem_dumb_map_offset() refuses imported objects, so the bytes are
 * checked through the dma-buf vgem hands back for its handle.
 */
TEST_F(dmabuf, vgem_imports_exported_slice)
{
	struct dp_drm_prime_handle ph, back;
	struct dp_drm_gem_close gc;
	size_t off = 2 * MiB - pg(), len = MiB + 2 * pg();
	int drm, buf;
	char *q;

	drm = open(VGEM_NODE, O_RDWR | O_CLOEXEC);
	if (drm < 0)
		SKIP(return, "no %s (vgem) in this kernel", VGEM_NODE);
	buf = export(self->fd, self->a.handle, off, len, 0);
	ASSERT_LE(0, buf);

	memset(&ph, 0, sizeof(ph));
	ph.fd = buf;
	ASSERT_EQ(0, dp_test_ioctl(drm, DP_DRM_IOCTL_PRIME_FD_TO_HANDLE, &ph));
	close(buf);
	/* vgem's object holds the dma-buf. */
	EXPECT_EQ(self->base.dmabufs + 1, dp_test_stat("dmabufs"));

	memset(&back, 0, sizeof(back));
	back.handle = ph.handle;
	back.flags = O_RDWR | O_CLOEXEC;
	ASSERT_EQ(0, dp_test_ioctl(drm, DP_DRM_IOCTL_PRIME_HANDLE_TO_FD, &back));
	q = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, back.fd, 0);
	ASSERT_NE(MAP_FAILED, q);
	EXPECT_EQ(0, memcmp(q, self->p + off, len));
	dp_test_fill(q, len, 555);
	EXPECT_EQ(-1, dp_test_check(self->p + off, len, 555));
	dp_test_fill(self->p + off, len, 556);
	EXPECT_EQ(-1, dp_test_check(q, len, 556));
	EXPECT_EQ(0, munmap(q, len));
	close(back.fd);

	EXPECT_EQ(self->base.dmabufs + 1, dp_test_stat("dmabufs"));
	memset(&gc, 0, sizeof(gc));
	gc.handle = ph.handle;
	EXPECT_EQ(0, dp_test_ioctl(drm, DP_DRM_IOCTL_GEM_CLOSE, &gc));
	EXPECT_EQ(self->base.dmabufs, dp_test_stat("dmabufs"));
	close(drm);
}

/* A vgem buffer's bytes, seen through its dma-buf, after our import. */
static void vgem_check_dumb(struct __test_metadata *_metadata, int drm, uint32_t handle,
			    int buf, size_t len)
{
	struct dp_drm_mode_map_dumb md;
	char *v, *d;

	memset(&md, 0, sizeof(md));
	md.handle = handle;
	ASSERT_EQ(0, dp_test_ioctl(drm, DP_DRM_IOCTL_MODE_MAP_DUMB, &md));
	v = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, drm, (off_t)md.offset);
	ASSERT_NE(MAP_FAILED, v);
	d = mmap(NULL, len, PROT_READ, MAP_SHARED, buf, 0);
	ASSERT_NE(MAP_FAILED, d);
	dp_test_fill(v, len, 888);
	EXPECT_EQ(-1, dp_test_check(d, len, 888));
	munmap(v, len);
	munmap(d, len);
}

TEST_F(dmabuf, import_rejects_bad_requests)
{
	struct dmaplane_mr_import_dmabuf m;
	int pipefd[2], buf, closed;

	buf = export(self->fd, self->a.handle, 0, 2 * MiB, 0);
	ASSERT_LE(0, buf);

	closed = dup(buf);
	ASSERT_LE(0, closed);
	close(closed);
	EXPECT_EQ(-EBADF, import(self->fd, closed, 0, pg(), NULL));
	EXPECT_EQ(-EBADF, import(self->fd, -1, 0, pg(), NULL));
	ASSERT_EQ(0, pipe(pipefd));
	EXPECT_EQ(-EINVAL, import(self->fd, pipefd[0], 0, pg(), NULL));
	EXPECT_EQ(-EINVAL, import(self->fd, self->fd, 0, pg(), NULL));
	close(pipefd[0]);
	close(pipefd[1]);

	EXPECT_EQ(-ERANGE, import(self->fd, buf, 0, 2 * MiB + pg(), NULL));
	EXPECT_EQ(-ERANGE, import(self->fd, buf, 2 * MiB, pg(), NULL));
	EXPECT_EQ(-ERANGE, import(self->fd, buf, pg(), ~0ull & ~(uint64_t)(pg() - 1), NULL));
	EXPECT_EQ(-EINVAL, import(self->fd, buf, 1, pg(), NULL));
	EXPECT_EQ(-EINVAL, import(self->fd, buf, 0, pg() - 1, NULL));
	EXPECT_EQ(-EINVAL, import(self->fd, buf, 0, 0, NULL));

	memset(&m, 0, sizeof(m));
	m.fd = buf;
	m.len = pg();
	m.flags = 1;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_MR_IMPORT_DMABUF, &m));
	m.flags = 0;
	m.access = 1u << 3;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_MR_IMPORT_DMABUF, &m));
	m.access = 0;
	m.pad = 1;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_MR_IMPORT_DMABUF, &m));
	m.pad = 0;
	m.reserved[0] = 1;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_MR_IMPORT_DMABUF, &m));
	EXPECT_EQ(-EFAULT, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_MR_IMPORT_DMABUF, NULL));
	EXPECT_EQ(self->base.imports, dp_test_stat("imports"));
	close(buf);
}

/* Our own dma-buf imported back: the import keeps the arena alive. */
TEST_F(dmabuf, import_of_own_export_holds_arena)
{
	struct dmaplane_handle_arg arg;
	struct dp_arena *arena;
	struct dp_mr *mr = NULL;
	struct dp_ep *ep;
	uint32_t h;
	int buf, ret;

	buf = export(self->fd, self->a.handle, pg(), 2 * MiB, 0);
	ASSERT_LE(0, buf);
	ASSERT_EQ(0, import(self->fd, buf, pg(), MiB, &h));
	EXPECT_NE(self->a.handle, h);
	EXPECT_EQ(self->base.imports + 1, dp_test_stat("imports"));
	EXPECT_EQ(self->base.regions + 2, dp_test_stat("regions"));
	close(buf);

	/* It is a region, not an arena. */
	memset(&arg, 0, sizeof(arg));
	arg.handle = h;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_ARENA_DESTROY, &arg));
	arg.handle = self->a.handle;
	EXPECT_EQ(0, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_ARENA_DESTROY, &arg));
	munmap(self->p, self->size);
	self->p = MAP_FAILED;
	/* The import holds the dma-buf, which holds the arena. */
	EXPECT_EQ(self->base.arenas + 1, dp_test_stat("arenas"));
	EXPECT_EQ(self->base.dmabufs + 1, dp_test_stat("dmabufs"));
	self->fd = dereg_or_reopen(self->fd, h, &ret);
	ASSERT_LE(0, self->fd);
	EXPECT_EQ(0, ret);
	EXPECT_EQ(self->base.imports, dp_test_stat("imports"));
	EXPECT_EQ(self->base.dmabufs, dp_test_stat("dmabufs"));
	EXPECT_EQ(self->base.arenas, dp_test_stat("arenas"));

	/* The library's import. */
	ASSERT_EQ(0, dp_open(NULL, 0, &ep));
	ASSERT_EQ(0, dp_arena_create(ep, 2 * MiB, 0, DMAPLANE_NUMA_ANY,
				     DMAPLANE_ACCESS_ALL, &arena));
	buf = dp_dmabuf_export(arena, 0, MiB, 0);
	ASSERT_LE(0, buf);
	EXPECT_EQ(-ERANGE, dp_dmabuf_export(arena, MiB, 2 * MiB, 0));
	EXPECT_EQ(0, dp_mr_import_dmabuf(ep, buf, 0, MiB, DMAPLANE_ACCESS_ALL, &mr));
	EXPECT_NE(NULL, mr);
	EXPECT_EQ(-ERANGE, dp_mr_import_dmabuf(ep, buf, 0, 2 * MiB, 0, &mr));
	close(buf);
	EXPECT_EQ(0, dp_arena_destroy(arena));
	EXPECT_EQ(self->base.imports + 1, dp_test_stat("imports"));
	dp_close(ep);
	free(mr);
	EXPECT_EQ(self->base.imports, dp_test_stat("imports"));
}

/*
 * Import two slices of a foreign dma-buf on an endpoint of its own (the
 * fixture's is held open by its arena mapping), release them, and check
 * the counters at each step.
 */
static void import_foreign(struct __test_metadata *_metadata, int buf, size_t len,
			   const struct dp_test_mem *base)
{
	uint32_t h1, h2;
	int fd, ret;

	fd = open(DP_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, import(fd, buf, 0, len, &h1));
	ASSERT_EQ(0, import(fd, buf, len / 2, len / 2, &h2));
	EXPECT_NE(h1, h2);
	EXPECT_EQ(-ERANGE, import(fd, buf, len / 2, len, NULL));
	EXPECT_EQ(-ERANGE, import(fd, buf, len, pg(), NULL));
	EXPECT_EQ(base->imports + 2, dp_test_stat("imports"));
	EXPECT_EQ(base->regions + 3, dp_test_stat("regions"));	/* + the arena */
	/* The imports hold the dma-buf. */
	close(buf);
	EXPECT_EQ(base->imports + 2, dp_test_stat("imports"));
	fd = dereg_or_reopen(fd, h1, &ret);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, ret);
	if (dp_test_stat("imports") == base->imports + 1) {
		/* MR_DEREG: the second one still there, once. */
		struct dmaplane_handle_arg arg;

		memset(&arg, 0, sizeof(arg));
		arg.handle = h1;
		EXPECT_EQ(-ENOENT, dp_test_ioctl(fd, DMAPLANE_IOCTL_MR_DEREG, &arg));
		arg.handle = h2;
		EXPECT_EQ(0, dp_test_ioctl(fd, DMAPLANE_IOCTL_MR_DEREG, &arg));
	}
	EXPECT_EQ(base->imports, dp_test_stat("imports"));
	EXPECT_EQ(base->regions + 1, dp_test_stat("regions"));
	close(fd);
}

TEST_F(dmabuf, import_from_dma_heap)
{
	struct dma_heap_allocation_data data;
	int heap;

	heap = open(HEAP_NODE, O_RDONLY | O_CLOEXEC);
	if (heap < 0)
		SKIP(return, "no %s in this kernel", HEAP_NODE);
	memset(&data, 0, sizeof(data));
	data.len = 4 * MiB;
	data.fd_flags = O_RDWR | O_CLOEXEC;
	ASSERT_EQ(0, dp_test_ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &data));
	close(heap);
	import_foreign(_metadata, data.fd, 4 * MiB, &self->base);
}

/*
 * A dma-buf exported read-only (here a dma-heap buffer allocated with
 * O_RDONLY) is imported for reading only: any write access is -EACCES,
 * so put and receives cannot write what its exporter made read-only.
 */
TEST_F(dmabuf, read_only_dmabuf_refuses_write_access)
{
	static const unsigned int writes[] = {
		DMAPLANE_ACCESS_LOCAL_WRITE, DMAPLANE_ACCESS_REMOTE_WRITE,
		DMAPLANE_ACCESS_ALL,
	};
	struct dma_heap_allocation_data data;
	struct dmaplane_mr_import_dmabuf m;
	struct dmaplane_handle_arg h;
	struct dmaplane_mr_query q;
	struct dp_mr *mr;
	struct dp_ep *ep;
	int heap;

	heap = open(HEAP_NODE, O_RDONLY | O_CLOEXEC);
	if (heap < 0)
		SKIP(return, "no %s in this kernel", HEAP_NODE);
	memset(&data, 0, sizeof(data));
	data.len = MiB;
	data.fd_flags = O_RDONLY | O_CLOEXEC;
	ASSERT_EQ(0, dp_test_ioctl(heap, DMA_HEAP_IOCTL_ALLOC, &data));
	close(heap);
	ASSERT_EQ(0, dp_open(NULL, 0, &ep));
	for (size_t i = 0; i < sizeof(writes) / sizeof(writes[0]); i++)
		EXPECT_EQ(-EACCES, dp_mr_import_dmabuf(ep, data.fd, 0, MiB,
						       writes[i], &mr));
	EXPECT_EQ(self->base.imports, dp_test_stat("imports"));
	memset(&m, 0, sizeof(m));
	m.fd = data.fd;
	m.len = MiB;
	m.access = DMAPLANE_ACCESS_REMOTE_READ;
	ASSERT_EQ(0, dp_test_ioctl(dp_fd(ep), DMAPLANE_IOCTL_MR_IMPORT_DMABUF, &m));
	EXPECT_EQ(self->base.imports + 1, dp_test_stat("imports"));
	/* MR_QUERY's counters are outputs: the caller's values never echo. */
	memset(&q, 0, sizeof(q));
	q.handle = m.handle;
	q.invalidations = 0xdeadbeef;
	q.cache_hits = 0xfeedface;
	ASSERT_EQ(0, dp_test_ioctl(dp_fd(ep), DMAPLANE_IOCTL_MR_QUERY, &q));
	EXPECT_EQ(0, q.invalidations);
	EXPECT_EQ(0, q.cache_hits);
	EXPECT_EQ(DMAPLANE_ACCESS_REMOTE_READ, q.access);
	memset(&h, 0, sizeof(h));
	h.handle = m.handle;
	EXPECT_EQ(0, dp_test_ioctl(dp_fd(ep), DMAPLANE_IOCTL_MR_DEREG, &h));
	close(data.fd);
	dp_close(ep);
	EXPECT_EQ(self->base.imports, dp_test_stat("imports"));
}

TEST_F(dmabuf, import_from_udmabuf)
{
	struct udmabuf_create create;
	int dev, memfd, buf;

	dev = open(UDMABUF_NODE, O_RDWR | O_CLOEXEC);
	if (dev < 0)
		SKIP(return, "no %s in this kernel", UDMABUF_NODE);
	memfd = memfd_create("dmaplane-test", MFD_ALLOW_SEALING);
	ASSERT_LE(0, memfd);
	ASSERT_EQ(0, ftruncate(memfd, 2 * MiB));
	ASSERT_EQ(0, fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK));
	memset(&create, 0, sizeof(create));
	create.memfd = memfd;
	create.size = 2 * MiB;
	create.flags = UDMABUF_FLAGS_CLOEXEC;
	buf = ioctl(dev, UDMABUF_CREATE, &create);
	ASSERT_LE(0, buf) TH_LOG("UDMABUF_CREATE: %s", strerror(errno));
	close(dev);
	close(memfd);
	import_foreign(_metadata, buf, 2 * MiB, &self->base);
}

TEST_F(dmabuf, import_from_vgem)
{
	struct dp_drm_mode_create_dumb cd;
	struct dp_drm_prime_handle ph;
	int drm;

	drm = open(VGEM_NODE, O_RDWR | O_CLOEXEC);
	if (drm < 0)
		SKIP(return, "no %s (vgem) in this kernel", VGEM_NODE);
	memset(&cd, 0, sizeof(cd));
	cd.width = 1024;
	cd.height = 256;
	cd.bpp = 32;
	ASSERT_EQ(0, dp_test_ioctl(drm, DP_DRM_IOCTL_MODE_CREATE_DUMB, &cd));
	ASSERT_LE(MiB, cd.size);
	memset(&ph, 0, sizeof(ph));
	ph.handle = cd.handle;
	ph.flags = O_RDWR | O_CLOEXEC;
	ASSERT_EQ(0, dp_test_ioctl(drm, DP_DRM_IOCTL_PRIME_HANDLE_TO_FD, &ph));
	import_foreign(_metadata, dup(ph.fd), MiB, &self->base);
	/* vgem's buffer is still fine after our imports are gone. */
	vgem_check_dumb(_metadata, drm, cd.handle, ph.fd, MiB);
	close(ph.fd);
	close(drm);
}

TEST_HARNESS_MAIN

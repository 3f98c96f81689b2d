/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the dmaplane tests that run inside the test VMs.
 */
#ifndef DP_TEST_H
#define DP_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <dmaplane.h>

#define DP_DEV DP_DEFAULT_PATH
#define DP_STATS "/sys/kernel/debug/dmaplane/stats"

/* Raw ioctl returning -errno, for tests that bypass the library. */
static inline int dp_test_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) < 0 ? -errno : 0;
}

/*
 * Read one counter from the module's debugfs stats file.
 * Returns the value, or -1 when the file or the counter is missing.
 */
static inline long dp_test_stat(const char *name)
{
	char key[64];
	long val, ret = -1;
	FILE *f = fopen(DP_STATS, "r");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", key, &val) == 2) {
		if (!strcmp(key, name)) {
			ret = val;
			break;
		}
	}
	fclose(f);
	return ret;
}

/*
 * Counter @name once it reads @want, or what it reads after @ms
 * milliseconds: for objects of a killed process, which the kernel may
 * release a little after waitpid() (the last reference to its file can
 * be dropped by a work item).
 */
static inline long dp_test_stat_settled(const char *name, long want, int ms)
{
	long val = dp_test_stat(name);

	for (; val != want && ms > 0; ms -= 10) {
		usleep(10000);
		val = dp_test_stat(name);
	}
	return val;
}

/* Counters that count events and only grow: never back to zero. */
static inline int dp_test_stat_cumulative(const char *name)
{
	return !strcmp(name, "invalidations") || !strncmp(name, "copies_", 7) ||
	       !strncmp(name, "msg_reg", 7) || !strcmp(name, "recv_inline");
}

/*
 * The counters that are not zero (the cumulative ones excepted), as
 * "name value ..." in @out; empty when all are back to zero.
 */
static inline void dp_test_stats_nonzero(char *out, size_t len)
{
	FILE *f = fopen(DP_STATS, "r");
	char key[64];
	long val;

	out[0] = 0;
	if (!f) {
		snprintf(out, len, "no %s", DP_STATS);
		return;
	}
	while (fscanf(f, "%63s %ld", key, &val) == 2) {
		if (!val || dp_test_stat_cumulative(key))
			continue;
		snprintf(out + strlen(out), len - strlen(out), "%s %ld ", key, val);
	}
	fclose(f);
}

/* The page size. */
static inline size_t dp_test_pgsz(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* CLOCK_MONOTONIC in seconds. */
static inline double dp_test_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Deterministic pseudo-random bytes (xorshift64*) for data checks.  The
 * seed is spread over the state first, so that neighbouring seeds (42 and
 * 43, or 0 and 1) give different bytes.  dp_test_pattern_init() gives the
 * state for @seed, dp_test_pattern_byte() the bytes one by one.
 */
static inline uint64_t dp_test_pattern_init(uint64_t seed)
{
	return (seed * 0x9e3779b97f4a7c15ull) | 1;
}

static inline unsigned char dp_test_pattern_byte(uint64_t *x, size_t i)
{
	if (!(i & 7)) {
		*x ^= *x >> 12;
		*x ^= *x << 25;
		*x ^= *x >> 27;
	}
	return (unsigned char)((*x * 0x2545f4914f6cdd1dull) >> (8 * (i & 7)));
}

static inline void dp_test_fill(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = dp_test_pattern_init(seed);
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = dp_test_pattern_byte(&x, i);
}

/*
 * Offset of the first byte that differs from dp_test_fill(), or -1.  It
 * allocates nothing: under fault injection a failed malloc() here once
 * read as wrong data.
 */
static inline long dp_test_check(const void *buf, size_t len, uint64_t seed)
{
	uint64_t x = dp_test_pattern_init(seed);
	const unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		if (p[i] != dp_test_pattern_byte(&x, i))
			return (long)i;
	return -1;
}

/*
 * A field of /proc/self/smaps ("AnonHugePages:", "FilePmdMapped:") for the
 * VMA holding @addr, in KiB, or -1.
 */
static inline long dp_test_smaps_kb(const void *addr, const char *field)
{
	unsigned long start, end, a = (uintptr_t)addr;
	size_t flen = strlen(field);
	char line[256];
	long val = -1;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &start, &end) == 2) {
			in = start <= a && a < end;
			continue;
		}
		if (in && !strncmp(line, field, flen)) {
			sscanf(line + flen, " %ld", &val);
			break;
		}
	}
	fclose(f);
	return val;
}

/* A new endpoint set up with @key and @entries (0: defaults), or NULL. */
static inline struct dp_ep *dp_test_ep_new(uint64_t key, unsigned int entries)
{
	struct dp_ep *ep;

	if (dp_open(NULL, 0, &ep))
		return NULL;
	if (dp_ep_setup(ep, key, entries)) {
		dp_close(ep);
		return NULL;
	}
	return ep;
}

/* An address handle in @from's vector for @to: 0 or -errno. */
static inline int dp_test_connect(struct dp_ep *from, struct dp_ep *to, uint32_t *addr)
{
	struct dmaplane_name name;
	int ret = dp_getname(to, &name);

	return ret ? ret : dp_av_insert(from, &name, addr);
}

/* The unique ID in @ep's name, or 0 when the name cannot be read. */
static inline uint64_t dp_test_uid(struct dp_ep *ep)
{
	struct dmaplane_name name;

	return dp_getname(ep, &name) ? 0 : name.ep_uid;
}

/*
 * Submit one put (@put) or get with context 5 and wait up to @timeout_ms
 * for its completion.  Returns the completion's status (0 or -errno), or:
 * 1000 + the submission's -errno when it was rejected, 2000 when nothing
 * completed, 3000 for a wrong context or opcode, 4000 for a successful
 * completion of another length.
 */
static inline int dp_test_rma(struct dp_ep *ep, int put, uint32_t dest, uint64_t rkey,
			      uint64_t off, void *buf, uint64_t len, int timeout_ms)
{
	struct dmaplane_cqe c;
	int ret = put ? dp_put(ep, dest, rkey, off, buf, len, 5) :
			dp_get(ep, dest, rkey, off, buf, len, 5);

	if (ret)
		return 1000 + ret;	/* rejected at submission */
	if (dp_wait(ep, &c, 1, timeout_ms) != 1)
		return 2000;
	if (c.ctx != 5 || c.opcode != (put ? DMAPLANE_OP_PUT : DMAPLANE_OP_GET))
		return 3000;
	if (!c.status && c.len != len)
		return 4000;
	return c.status;
}

/* Every memory counter of the module, to compare with a baseline. */
struct dp_test_mem {
	long regions, arenas, arena_pages, charged_pages, dmabufs, imports;
};

static inline void dp_test_mem_read(struct dp_test_mem *m)
{
	m->regions = dp_test_stat("regions");
	m->arenas = dp_test_stat("arenas");
	m->arena_pages = dp_test_stat("arena_pages");
	m->charged_pages = dp_test_stat("charged_pages");
	m->dmabufs = dp_test_stat("dmabufs");
	m->imports = dp_test_stat("imports");
}

static inline int dp_test_mem_eq(const struct dp_test_mem *a, const struct dp_test_mem *b)
{
	return !memcmp(a, b, sizeof(*a));
}

#define DP_TEST_MEM_FMT "regions %ld arenas %ld arena_pages %ld charged %ld dmabufs %ld imports %ld"
#define DP_TEST_MEM_ARGS(m) (m)->regions, (m)->arenas, (m)->arena_pages, \
	(m)->charged_pages, (m)->dmabufs, (m)->imports

/* Send (@wr) or receive all @len bytes on a stream socket: 0 or -1. */
static inline int dp_test_io_full(int fd, void *buf, size_t len, int wr)
{
	char *p = buf;

	while (len) {
		ssize_t n = wr ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

/*
 * Memory whose first touch waits until the test says so: @len bytes at
 * @addr (page-aligned, mapped, never touched) are registered with a new
 * userfaultfd for missing pages.  A fault there, the kernel's own
 * included, sleeps until dp_test_uffd_fill() resolves it.  Returns the
 * userfaultfd, or -errno (-ENOSYS: a kernel without userfaultfd).
 */
static inline int dp_test_uffd_region(void *addr, size_t len)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = {
		.range = { .start = (uintptr_t)addr, .len = len },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	int uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);

	if (uffd < 0)
		return -errno;
	if (ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		int ret = -errno;

		close(uffd);
		return ret;
	}
	return uffd;
}

/*
 * Wait up to @timeout_ms for a fault on @uffd's range; its address in
 * @where.  Returns 0, -ETIMEDOUT or -errno.
 */
static inline int dp_test_uffd_fault(int uffd, int timeout_ms, uint64_t *where)
{
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };
	struct uffd_msg msg;
	int n;

	do
		n = poll(&pfd, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ETIMEDOUT;
	if (read(uffd, &msg, sizeof(msg)) != sizeof(msg))
		return -errno;
	if (msg.event != UFFD_EVENT_PAGEFAULT)
		return -EPROTO;
	*where = msg.arg.pagefault.address;
	return 0;
}

/* Resolve the faults of @len bytes at @addr by copying @src there. */
static inline int dp_test_uffd_fill(int uffd, void *addr, const void *src, size_t len)
{
	struct uffdio_copy c = {
		.dst = (uintptr_t)addr, .src = (uintptr_t)src, .len = len,
	};

	return ioctl(uffd, UFFDIO_COPY, &c) ? -errno : 0;
}

/*
 * The kselftest harness, with every test's timeout sized for a loaded
 * 2-core host running the test VMs under QEMU TCG (5x slower than an idle
 * one): the harness's default of 30 s is not.  Programs that are no
 * harness tests define DP_TEST_NO_HARNESS first.
 */
#ifndef DP_TEST_NO_HARNESS
#include "kselftest_harness.h"
#undef TEST_TIMEOUT_DEFAULT
#define TEST_TIMEOUT_DEFAULT 300

/* Expect every memory counter back at @base; a difference logs both. */
static inline void dp_test_mem_expect(struct __test_metadata *_metadata,
				      const struct dp_test_mem *base)
{
	struct dp_test_mem now;

	dp_test_mem_read(&now);
	EXPECT_TRUE(dp_test_mem_eq(base, &now))
		TH_LOG("before: " DP_TEST_MEM_FMT, DP_TEST_MEM_ARGS(base));
	EXPECT_TRUE(dp_test_mem_eq(base, &now))
		TH_LOG("after:  " DP_TEST_MEM_FMT, DP_TEST_MEM_ARGS(&now));
}

/*
 * After a child in another address space tried to move data through the
 * endpoints @a and @b (and was refused, exiting 0 when every refusal was
 * the expected one): the child's status, nothing posted or unexpected,
 * no completion on either ring, and @landing (@len bytes the refused
 * operations aimed at, filled with 0x5a before) untouched.
 */
static inline void dp_test_expect_refused_child(struct __test_metadata *_metadata,
						pid_t pid, struct dp_ep *a,
						struct dp_ep *b,
						const void *landing, size_t len)
{
	const unsigned char *p = landing;
	struct dmaplane_cqe c;
	int status;

	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, dp_test_stat("posted_recvs"));
	EXPECT_EQ(0, dp_test_stat("unexp_msgs"));
	EXPECT_EQ(0, dp_poll(a, &c, 1));
	EXPECT_EQ(0, dp_poll(b, &c, 1));
	for (size_t i = 0; i < len; i++)
		ASSERT_EQ(0x5a, p[i]);
}
#endif

#endif /* DP_TEST_H */

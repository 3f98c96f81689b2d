// SPDX-License-Identifier: GPL-2.0
/*
 * /dev/dmaplane basics: the device node, DMAPLANE_IOCTL_GET_INFO and its
 * error cases, endpoint identity and lifetime, the library's dp_open().
 */
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "dp_test.h"

FIXTURE(dev) {
	int fd;
};

FIXTURE_SETUP(dev)
{
	self->fd = open(DP_DEV, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", DP_DEV, strerror(errno));
}

FIXTURE_TEARDOWN(dev)
{
	close(self->fd);
}

TEST(device_node_is_world_accessible_char_device)
{
	struct stat st;

	ASSERT_EQ(0, stat(DP_DEV, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(0666, st.st_mode & 0777);
	EXPECT_EQ(10, major(st.st_rdev));	/* MISC_MAJOR */
}

TEST_F(dev, get_info_reports_abi_and_caps)
{
	struct dmaplane_info info;

	memset(&info, 0, sizeof(info));
	ASSERT_EQ(0, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_GET_INFO, &info));
	EXPECT_EQ(DMAPLANE_ABI_VERSION, info.abi_version);
	EXPECT_TRUE(info.caps & DMAPLANE_CAP_INFO);
	EXPECT_TRUE(info.caps & DMAPLANE_CAP_REMOTE);
	EXPECT_EQ((unsigned int)sysconf(_SC_PAGESIZE), info.page_size);
	EXPECT_NE(0, info.endpoint_id);
	EXPECT_EQ(0, info.flags);
	EXPECT_EQ(0, info.pad);
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(0, info.reserved[i]);
}

TEST_F(dev, get_info_rejects_each_flag_bit)
{
	struct dmaplane_info info;

	for (int bit = 0; bit < 32; bit++) {
		memset(&info, 0, sizeof(info));
		info.flags = 1u << bit;
		EXPECT_EQ(-EINVAL, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_GET_INFO,
						 &info)) TH_LOG("flag bit %d", bit);
		/* Nothing is written back on failure. */
		EXPECT_EQ(0, info.abi_version);
	}
}

TEST_F(dev, get_info_rejects_nonzero_padding)
{
	struct dmaplane_info info;

	memset(&info, 0, sizeof(info));
	info.pad = 1;
	EXPECT_EQ(-EINVAL, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_GET_INFO, &info));

	for (int i = 0; i < 4; i++) {
		memset(&info, 0, sizeof(info));
		info.reserved[i] = 1ull << 63;
		EXPECT_EQ(-EINVAL, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_GET_INFO,
						 &info)) TH_LOG("reserved[%d]", i);
	}
}

TEST_F(dev, get_info_bad_pointers_fault)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *page;

	EXPECT_EQ(-EFAULT, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_GET_INFO, NULL));

	/* Two pages, the second one inaccessible. */
	page = mmap(NULL, 2 * pg, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, page);

	/* Unmapped (PROT_NONE) memory. */
	EXPECT_EQ(-EFAULT, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_GET_INFO, page));

	/* Readable but not writable: the request is valid, the reply faults. */
	ASSERT_EQ(0, mprotect(page, pg, PROT_READ));
	EXPECT_EQ(-EFAULT, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_GET_INFO, page));

	/* Straddling the end of the accessible page. */
	ASSERT_EQ(0, mprotect(page, pg, PROT_READ | PROT_WRITE));
	memset(page, 0, pg);
	EXPECT_EQ(-EFAULT, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_GET_INFO,
					 page + pg - 8));
	/* The same request fully inside the page succeeds. */
	EXPECT_EQ(0, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_GET_INFO,
				   page + pg - sizeof(struct dmaplane_info)));
	munmap(page, 2 * pg);

	/* A kernel address. */
	EXPECT_EQ(-EFAULT, dp_test_ioctl(self->fd, DMAPLANE_IOCTL_GET_INFO,
					 (void *)0xffffffff81000000ul));
}

TEST_F(dev, unknown_ioctls_are_enotty)
{
	struct dmaplane_info info;
	unsigned long bad[] = {
		_IOWR(DMAPLANE_IOCTL_TYPE, 0x5f, struct dmaplane_info),
		_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_CANCEL + 1,
		      struct dmaplane_info),
		/* The type byte dmaplane used before ABI 1.0 ('X' is XFS's). */
		_IOWR('X', 0xa0, struct dmaplane_info),
		/* Right number, wrong size or direction. */
		_IOWR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_GET_INFO, __u64),
		_IOR(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_GET_INFO, struct dmaplane_info),
		_IOW(DMAPLANE_IOCTL_TYPE, DMAPLANE_NR_GET_INFO, struct dmaplane_info),
		/* Another driver's type byte. */
		_IOWR('Y', DMAPLANE_NR_GET_INFO, struct dmaplane_info),
		0,
	};

	for (unsigned int i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&info, 0, sizeof(info));
		EXPECT_EQ(-ENOTTY, dp_test_ioctl(self->fd, bad[i], &info))
			TH_LOG("cmd 0x%lx", bad[i]);
	}
}

TEST(endpoints_have_distinct_ids_not_reused_at_once)
{
	struct dmaplane_info a, b, c;
	int fa, fb, fc;

	fa = open(DP_DEV, O_RDWR);
	fb = open(DP_DEV, O_RDWR);
	ASSERT_LE(0, fa);
	ASSERT_LE(0, fb);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	ASSERT_EQ(0, dp_test_ioctl(fa, DMAPLANE_IOCTL_GET_INFO, &a));
	ASSERT_EQ(0, dp_test_ioctl(fb, DMAPLANE_IOCTL_GET_INFO, &b));
	EXPECT_NE(a.endpoint_id, b.endpoint_id);

	close(fb);
	fc = open(DP_DEV, O_RDWR);
	ASSERT_LE(0, fc);
	memset(&c, 0, sizeof(c));
	ASSERT_EQ(0, dp_test_ioctl(fc, DMAPLANE_IOCTL_GET_INFO, &c));
	EXPECT_NE(b.endpoint_id, c.endpoint_id);
	EXPECT_NE(a.endpoint_id, c.endpoint_id);
	close(fa);
	close(fc);
}

TEST(endpoint_count_returns_to_baseline)
{
	long base = dp_test_stat("endpoints");
	int fds[100];

	ASSERT_LE(0, base) TH_LOG("no %s", DP_STATS);
	for (int i = 0; i < 100; i++) {
		fds[i] = open(DP_DEV, O_RDWR);
		ASSERT_LE(0, fds[i]);
	}
	EXPECT_EQ(base + 100, dp_test_stat("endpoints"));
	for (int i = 0; i < 100; i++)
		close(fds[i]);
	EXPECT_EQ(base, dp_test_stat("endpoints"));
}

TEST(killed_process_releases_its_endpoints)
{
	long base = dp_test_stat("endpoints");
	int pipefd[2], status;
	pid_t pid;
	char c;

	ASSERT_LE(0, base);
	ASSERT_EQ(0, pipe(pipefd));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		for (int i = 0; i < 10; i++)
			if (open(DP_DEV, O_RDWR) < 0)
				_exit(1);
		write(pipefd[1], "x", 1);
		pause();
		_exit(0);
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	EXPECT_EQ(base + 10, dp_test_stat("endpoints"));
	kill(pid, SIGKILL);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(base, dp_test_stat("endpoints"));
	close(pipefd[0]);
}

TEST(unprivileged_user_can_open_and_query)
{
	int status;
	pid_t pid;

	if (getuid() != 0)
		SKIP(return, "needs root to drop to another uid");
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct dmaplane_info info;
		struct dp_ep *ep;

		if (setgid(65534) || setuid(65534))
			_exit(2);
		if (dp_open(NULL, 0, &ep))
			_exit(3);
		if (geteuid() != 65534)
			_exit(5);
		if (dp_info(ep, &info) || info.abi_version != DMAPLANE_ABI_VERSION)
			_exit(4);
		dp_close(ep);
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST(library_open_info_close)
{
	struct dmaplane_info info;
	struct dp_ep *ep = NULL;
	int fl;

	ASSERT_EQ(0, dp_open(NULL, 0, &ep));
	ASSERT_NE(NULL, ep);
	fl = fcntl(dp_fd(ep), F_GETFD);
	EXPECT_TRUE(fl & FD_CLOEXEC);
	ASSERT_EQ(0, dp_info(ep, &info));
	EXPECT_EQ(DMAPLANE_ABI_VERSION, info.abi_version);
	EXPECT_TRUE(info.caps & DMAPLANE_CAP_INFO);
	EXPECT_TRUE(info.caps & DMAPLANE_CAP_REMOTE);
	dp_close(ep);
}

TEST(library_rejects_bad_arguments)
{
	struct dp_ep *ep = NULL;

	EXPECT_EQ(-EINVAL, dp_open(NULL, 1, &ep));
	EXPECT_EQ(-EINVAL, dp_open(NULL, 0, NULL));
	EXPECT_EQ(-ENOENT, dp_open("/dev/dmaplane-does-not-exist", 0, &ep));
	/* A character device that is not dmaplane. */
	EXPECT_EQ(-ENOTTY, dp_open("/dev/null", 0, &ep));
	EXPECT_EQ(NULL, ep);
	dp_close(NULL);
}

TEST_HARNESS_MAIN

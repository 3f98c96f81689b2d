// SPDX-License-Identifier: GPL-2.0
/*
 * libdmaplane on the host, where no dmaplane module is loaded: argument
 * checks and error reporting that need no kernel support.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <dmaplane.h>

#include "kselftest_harness.h"

TEST(open_rejects_unknown_flags)
{
	struct dp_ep *ep = (struct dp_ep *)0x1;

	for (int bit = 0; bit < 32; bit++)
		EXPECT_EQ(-EINVAL, dp_open("/dev/null", 1u << bit, &ep));
	/* Nothing is written on failure. */
	EXPECT_EQ((struct dp_ep *)0x1, ep);
}

TEST(open_rejects_null_result)
{
	EXPECT_EQ(-EINVAL, dp_open(NULL, 0, NULL));
}

TEST(open_missing_device_is_enoent)
{
	struct dp_ep *ep = NULL;

	EXPECT_EQ(-ENOENT, dp_open("/nonexistent/dmaplane", 0, &ep));
	EXPECT_EQ(NULL, ep);
}

TEST(open_foreign_device_is_enotty)
{
	struct dp_ep *ep = NULL;

	/* /dev/null accepts open(2) but no dmaplane ioctl. */
	EXPECT_EQ(-ENOTTY, dp_open("/dev/null", 0, &ep));
	EXPECT_EQ(NULL, ep);
}

TEST(open_regular_file_is_enotty)
{
	char path[] = "/tmp/dmaplane-lib-test-XXXXXX";
	struct dp_ep *ep = NULL;
	int fd = mkstemp(path);

	ASSERT_LE(0, fd);
	EXPECT_EQ(-ENOTTY, dp_open(path, 0, &ep));
	close(fd);
	unlink(path);
}

TEST(open_without_permission_is_eacces)
{
	char path[] = "/tmp/dmaplane-lib-test-XXXXXX";
	int fd = mkstemp(path), status;
	pid_t pid;

	ASSERT_LE(0, fd);
	close(fd);
	ASSERT_EQ(0, chmod(path, 0600));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		struct dp_ep *ep = NULL;

		/* Root bypasses file modes: drop to nobody first. */
		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(2);
		_exit(dp_open(path, 0, &ep) == -EACCES && !ep ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	unlink(path);
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST(close_null_is_noop)
{
	dp_close(NULL);
}

TEST_HARNESS_MAIN

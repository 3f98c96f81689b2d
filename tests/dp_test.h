/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the dmaplane tests that run inside the test VMs.
 */
#ifndef DP_TEST_H
#define DP_TEST_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
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

#endif /* DP_TEST_H */

// SPDX-License-Identifier: LGPL-2.1 OR MIT
/*
 * libdmaplane-fi: what the waitable objects share.  CQs and EQs answer
 * fi_control(FI_GETWAIT/FI_GETWAITOBJ) alike; fi_cq_sread() and
 * fi_cntr_wait() count their timeouts down on the monotonic clock (and
 * fi_eq_sread() waits on a condition variable set to that clock).
 */
#include <time.h>

#include "dp_prov.h"

/*
 * dpf_wait_control - fi_control() of an object whose wait object is
 * @wait_obj and whose wait fd is @fd (-1 without FI_WAIT_FD).
 */
int dpf_wait_control(int command, void *arg, enum fi_wait_obj wait_obj, int fd)
{
	switch (command) {
	case FI_GETWAIT:
		if (fd < 0)
			return -FI_ENODATA;
		*(int *)arg = fd;
		return 0;
	case FI_GETWAITOBJ:
		*(enum fi_wait_obj *)arg = wait_obj;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* dpf_deadline - when @timeout ms (negative: never) from now run out. */
int64_t dpf_deadline(int timeout)
{
	return timeout >= 0 ? now_ms() + timeout : -1;
}

/*
 * dpf_time_left - the ms to poll() for until @deadline: -1 (no timeout)
 * for a deadline of never, 0 once it has passed.
 */
int dpf_time_left(int64_t deadline)
{
	int left;

	if (deadline < 0)
		return -1;
	left = (int)(deadline - now_ms());
	return left > 0 ? left : 0;
}

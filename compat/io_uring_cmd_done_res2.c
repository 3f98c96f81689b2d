// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring_cmd_done(cmd, ret, res2, issue_flags): a uring_cmd completed
 * by its driver, in the context the issue flags describe (6.3, and
 * Debian's 6.1.y; before, without issue_flags).
 */
#if __has_include(<linux/io_uring/cmd.h>)
#include <linux/io_uring/cmd.h>
#else
#include <linux/io_uring.h>
#endif

void dmaplane_probe(struct io_uring_cmd *ioucmd, unsigned int issue_flags);
void dmaplane_probe(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	io_uring_cmd_done(ioucmd, 0, 0, issue_flags);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring_cmd_done(cmd, ret, res2, issue_flags) in <linux/io_uring.h>:
 * 6.3 to 6.6, and Debian's 6.1.y (io_uring_cmd_done_res2.c covers the
 * same call from 6.7, in <linux/io_uring/cmd.h>).
 */
#include <linux/io_uring.h>

void dmaplane_probe(struct io_uring_cmd *ioucmd, unsigned int issue_flags);
void dmaplane_probe(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	io_uring_cmd_done(ioucmd, 0, 0, issue_flags);
}

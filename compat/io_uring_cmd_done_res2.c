// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring_cmd_done(cmd, ret, res2, issue_flags): a uring_cmd completed
 * by its driver, in the context the issue flags describe; from 6.7 in
 * <linux/io_uring/cmd.h> (6.3 to 6.6, and Debian's 6.1.y, in
 * <linux/io_uring.h>: io_uring_cmd_done_res2_old.c; before 6.3 without
 * issue_flags).
 */
#include <linux/io_uring/cmd.h>

void dmaplane_probe(struct io_uring_cmd *ioucmd, unsigned int issue_flags);
void dmaplane_probe(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	io_uring_cmd_done(ioucmd, 0, 0, issue_flags);
}

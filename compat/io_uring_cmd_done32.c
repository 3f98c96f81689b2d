// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring_cmd_done(cmd, ret, issue_flags), with io_uring_cmd_done32()
 * for a big CQE's second result (seen in 7.2; before, res2 was an
 * argument of io_uring_cmd_done(): io_uring_cmd_done_res2.c).
 */
#include <linux/io_uring/cmd.h>

void dmaplane_probe(struct io_uring_cmd *ioucmd, unsigned int issue_flags);
void dmaplane_probe(struct io_uring_cmd *ioucmd, unsigned int issue_flags)
{
	io_uring_cmd_done32(ioucmd, 0, 0, issue_flags);
	io_uring_cmd_done(ioucmd, 0, issue_flags);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * 6.6 only: a uring_cmd handler finds its command area through
 * io_uring_sqe_cmd(ioucmd->sqe), still in <linux/io_uring.h> (from 6.7
 * in <linux/io_uring/cmd.h>, probed by io_uring_cmd_h.c).  Before 6.6,
 * struct io_uring_cmd points at the area directly (ioucmd->cmd).
 */
#include <linux/io_uring.h>

const void *dmaplane_probe(struct io_uring_cmd *ioucmd);
const void *dmaplane_probe(struct io_uring_cmd *ioucmd)
{
	return io_uring_sqe_cmd(ioucmd->sqe);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The uring_cmd driver API moved from <linux/io_uring.h> to
 * <linux/io_uring/cmd.h> in 6.7; struct io_uring_cmd points at its SQE
 * (since 6.6), whose command area io_uring_sqe_cmd() finds: with one
 * argument (6.6 on, probed by io_uring_sqe_cmd.c) or with the command's
 * type as well (io_uring_sqe_cmd_typed.c).
 */
#include <linux/io_uring/cmd.h>

const void *dmaplane_probe(struct io_uring_cmd *ioucmd);
const void *dmaplane_probe(struct io_uring_cmd *ioucmd)
{
	return ioucmd->sqe;
}

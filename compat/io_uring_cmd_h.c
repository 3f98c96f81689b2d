// SPDX-License-Identifier: GPL-2.0
/*
 * The uring_cmd driver API moved from <linux/io_uring.h> to
 * <linux/io_uring/cmd.h> in 6.7, with io_uring_sqe_cmd() (which
 * finds the command area through the SQE, as since 6.6).
 */
#include <linux/io_uring/cmd.h>

const void *dmaplane_probe(struct io_uring_cmd *ioucmd);
const void *dmaplane_probe(struct io_uring_cmd *ioucmd)
{
	return io_uring_sqe_cmd(ioucmd->sqe);
}

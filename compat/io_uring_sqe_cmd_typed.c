// SPDX-License-Identifier: GPL-2.0
/*
 * io_uring_sqe_cmd(sqe, type): the command area of a uring_cmd's SQE as a
 * pointer to the command's type, checked at build time against the SQE's
 * size (seen in 7.2; the one-argument form returning const void * before).
 */
#include <linux/io_uring/cmd.h>

struct dmaplane_probe_cmd {
	u64 a, b;
};

const struct dmaplane_probe_cmd *dmaplane_probe(struct io_uring_cmd *ioucmd);
const struct dmaplane_probe_cmd *dmaplane_probe(struct io_uring_cmd *ioucmd)
{
	return io_uring_sqe_cmd(ioucmd->sqe, struct dmaplane_probe_cmd);
}

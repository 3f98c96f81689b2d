// SPDX-License-Identifier: GPL-2.0
/*
 * The importer's "the buffer moves" callback is
 * dma_buf_attach_ops.invalidate_mappings (seen in 7.2; move_notify
 * before, same contract: called with the reservation lock held).
 */
#include <linux/dma-buf.h>

static void dmaplane_probe_invalidate(struct dma_buf_attachment *attach)
{
}

const struct dma_buf_attach_ops dmaplane_probe_ops = {
	.invalidate_mappings = dmaplane_probe_invalidate,
};

// SPDX-License-Identifier: GPL-2.0
/*
 * 6.2: dma_buf_vmap() wants the reservation
 * lock held; importers that do not hold it call dma_buf_vmap_unlocked().
 * Before, dma_buf_vmap() locked by itself.
 */
#include <linux/dma-buf.h>
#include <linux/iosys-map.h>

void dmaplane_probe(struct dma_buf *dmabuf, struct iosys_map *map);
void dmaplane_probe(struct dma_buf *dmabuf, struct iosys_map *map)
{
	if (!dma_buf_vmap_unlocked(dmabuf, map))
		dma_buf_vunmap_unlocked(dmabuf, map);
}

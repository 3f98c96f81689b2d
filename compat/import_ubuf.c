// SPDX-License-Identifier: GPL-2.0
/*
 * import_ubuf() is newer than 6.1; import_single_range(), its
 * predecessor, was removed in 6.8.
 */
#include <linux/uio.h>

int dmaplane_probe(void __user *buf, size_t len, struct iov_iter *iter);
int dmaplane_probe(void __user *buf, size_t len, struct iov_iter *iter)
{
	return import_ubuf(ITER_DEST, buf, len, iter);
}

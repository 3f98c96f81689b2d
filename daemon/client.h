/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The client side of dmaplaned's attach socket (no libdmaplane needed).
 */
#ifndef DMAPLANED_CLIENT_H
#define DMAPLANED_CLIENT_H

#include <stdint.h>

/*
 * dpd_attach - ask the daemon on @sock for the arena @name
 * @size: on success, the arena's size in bytes
 * @status: if not NULL, the daemon's status on refusal (403, 404 ...)
 *
 * Returns the arena's dma-buf fd (O_CLOEXEC; mmap it read-write, shared,
 * @size bytes at offset 0), or -EACCES (403), -ENOENT (404), -EINVAL
 * (400), -ENODEV (503), -EPROTO (a reply not understood), or the errno
 * of connecting.
 */
int dpd_attach(const char *sock, const char *name, uint64_t *size, int *status);

#endif

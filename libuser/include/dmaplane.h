/* SPDX-License-Identifier: LGPL-2.1 OR MIT */
/*
 * libdmaplane: a thin C library over /dev/dmaplane.
 *
 * Conventions (as liburing): every int function returns 0 or a positive
 * value on success and a negative errno on failure; errno itself is left
 * alone.  The library keeps no hidden state: an endpoint is the file
 * descriptor plus what the kernel maps into the process.
 */
#ifndef LIBDMAPLANE_H
#define LIBDMAPLANE_H

#include <linux/dmaplane.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Default device node opened by dp_open() when @path is NULL. */
#define DP_DEFAULT_PATH "/dev/" DMAPLANE_DEVICE_NAME

/** An endpoint: one open of /dev/dmaplane. Opaque. */
struct dp_ep;

/*
 * dp_open - open an endpoint
 * @path: device node, or NULL for DP_DEFAULT_PATH
 * @flags: must be 0
 * @epp: on success, the new endpoint
 *
 * The file descriptor is opened O_CLOEXEC.  dp_open() asks the kernel for
 * its ABI version and refuses a module whose major ABI is older than this
 * header's, so a program never talks to a module that lacks what it was
 * built for.
 *
 * Returns 0, or -EINVAL (unknown flag, NULL @epp), -ENOENT (no device:
 * module not loaded), -ENOTTY (@path is not a dmaplane device),
 * -EPROTO (module ABI older than this library), -ENOMEM, or the errno of
 * open(2).
 */
int dp_open(const char *path, unsigned int flags, struct dp_ep **epp);

/*
 * dp_close - close an endpoint and release everything it owns
 * @ep: endpoint from dp_open(), or NULL (then nothing happens)
 */
void dp_close(struct dp_ep *ep);

/*
 * dp_fd - the endpoint's file descriptor, for poll(2)/epoll(7)
 */
int dp_fd(const struct dp_ep *ep);

/*
 * dp_info - ask the module for its ABI version and capabilities
 * @ep: endpoint
 * @info: filled in on success (see struct dmaplane_info)
 *
 * Returns 0, or the negative errno of DMAPLANE_IOCTL_GET_INFO.
 */
int dp_info(struct dp_ep *ep, struct dmaplane_info *info);

#ifdef __cplusplus
}
#endif

#endif /* LIBDMAPLANE_H */

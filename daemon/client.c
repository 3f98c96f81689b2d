// SPDX-License-Identifier: GPL-2.0
/*
 * The client side of dmaplaned's attach socket (see attach.c for the
 * protocol).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "client.h"

static int status_errno(int status)
{
	switch (status) {
	case 400: return -EINVAL;
	case 403: return -EACCES;
	case 404: return -ENOENT;
	case 503: return -ENODEV;
	default:  return -EPROTO;
	}
}

int dpd_attach(const char *sock, const char *name, uint64_t *size, int *status)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char req[160], buf[160], cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) - 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = cbuf, .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *cm;
	unsigned long long sz;
	int fd, dfd = -1, n, st = 0;
	ssize_t got;

	if (status)
		*status = 0;
	if (strlen(sock) >= sizeof(sa.sun_path) || strlen(name) > 100)
		return -EINVAL;
	strcpy(sa.sun_path, sock);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		n = -errno;
		close(fd);
		return n;
	}
	n = snprintf(req, sizeof(req), "ATTACH %s\n", name);
	if (write(fd, req, (size_t)n) != n) {
		close(fd);
		return -EIO;
	}
	got = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
	close(fd);
	if (got <= 0)
		return got < 0 ? -errno : -EPROTO;
	buf[got] = '\0';
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&dfd, CMSG_DATA(cm), sizeof(int));
	if (sscanf(buf, "OK %llu\n", &sz) == 1 && dfd >= 0 &&
	    !(msg.msg_flags & MSG_CTRUNC)) {
		*size = sz;
		return dfd;
	}
	if (dfd >= 0)
		close(dfd);
	if (sscanf(buf, "ERR %d", &st) == 1) {
		if (status)
			*status = st;
		return status_errno(st);
	}
	return -EPROTO;
}

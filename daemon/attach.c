// SPDX-License-Identifier: GPL-2.0
/*
 * The attach socket: a local program asks for a named arena and receives
 * the arena's dma-buf fd (SCM_RIGHTS), which it can mmap(2) or hand to a
 * GPU driver.  One request per connection, a line each way:
 *
 *   client:  "ATTACH <name>\n"              (at most ATTACH_LINE bytes)
 *   daemon:  "OK <size>\n" + the fd         (SCM_RIGHTS on that message)
 *        or  "ERR <status> <message>\n"     (status as in the REST API:
 *                                            400, 403, 404, 503, 500)
 *
 * Who asks is SO_PEERCRED's; attaching needs r and w on the arena (the
 * mapping is read-write).  A separate socket because libmicrohttpd owns
 * the HTTP connections' sockets.  daemon/client.c is the client side.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "dmaplaned.h"

#define ATTACH_LINE	128

static int listen_fd = -1;
static int stop_pipe[2] = { -1, -1 };
static pthread_t thread;
static bool started;
static const char *path;

static int reply(int fd, const char *text, int pass_fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = (void *)text, .iov_len = strlen(text) };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;

	if (pass_fd >= 0) {
		memset(cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
	}
	return sendmsg(fd, &msg, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static int err_status(int err)
{
	switch (err) {
	case -EACCES:	return 403;
	case -ENOENT:	return 404;
	case -ENODEV:	return 503;
	default:	return 500;
	}
}

static void serve(int fd)
{
	struct timeval tv = { .tv_sec = 2 };
	char line[ATTACH_LINE + 1], out[160];
	struct dpd_cred cred;
	uint64_t size = 0;
	size_t len = 0;
	ssize_t n;
	char *nl = NULL;
	int dfd;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	while (len < ATTACH_LINE) {
		n = read(fd, line + len, ATTACH_LINE - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		line[len] = '\0';
		nl = memchr(line, '\n', len);
		if (nl)
			break;
	}
	if (!nl || memchr(line, '\0', (size_t)(nl - line))) {
		reply(fd, "ERR 400 expected \"ATTACH <name>\\n\"\n", -1);
		return;
	}
	*nl = '\0';
	if (strncmp(line, "ATTACH ", 7) || !name_valid(line + 7)) {
		reply(fd, "ERR 400 expected \"ATTACH <name>\\n\" with a valid name\n", -1);
		return;
	}
	if (cred_from_socket(fd, &cred)) {
		reply(fd, "ERR 500 cannot tell who is asking\n", -1);
		return;
	}
	dfd = arena_attach_fd(line + 7, &cred, &size);
	if (dfd < 0) {
		snprintf(out, sizeof(out), "ERR %d %s\n", err_status(dfd), strerror(-dfd));
		reply(fd, out, -1);
		if (dfd == -EACCES)
			log_info("attach %s refused to uid %u", line + 7, cred.uid);
		return;
	}
	snprintf(out, sizeof(out), "OK %llu\n", (unsigned long long)size);
	if (reply(fd, out, dfd) == 0)
		log_info("arena %s attached by uid %u", line + 7, cred.uid);
	close(dfd);
}

static void *loop(void *arg)
{
	struct pollfd p[2] = {
		{ .fd = listen_fd, .events = POLLIN },
		{ .fd = stop_pipe[0], .events = POLLIN },
	};
	int fd;

	(void)arg;
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			log_err("attach: poll: %s", strerror(errno));
			break;
		}
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		serve(fd);
		close(fd);
	}
	return NULL;
}

int attach_start(const struct dpd_config *cfg)
{
	int ret;

	path = cfg->attach_path;
	listen_fd = unix_listen(cfg->attach_path, cfg->socket_mode);
	if (listen_fd < 0) {
		log_err("%s: %s", cfg->attach_path, strerror(-listen_fd));
		return listen_fd;
	}
	if (pipe2(stop_pipe, O_CLOEXEC))
		return -errno;
	ret = pthread_create(&thread, NULL, loop, NULL);
	if (ret)
		return -ret;
	started = true;
	log_info("attach socket on unix:%s", cfg->attach_path);
	return 0;
}

void attach_stop(void)
{
	if (started) {
		if (write(stop_pipe[1], "x", 1) != 1)
			log_warn("attach: cannot stop the thread");
		pthread_join(thread, NULL);
		started = false;
	}
	if (listen_fd >= 0) {
		close(listen_fd);
		if (path)
			unlink(path);
	}
	listen_fd = -1;
	if (stop_pipe[0] >= 0) {
		close(stop_pipe[0]);
		close(stop_pipe[1]);
	}
	stop_pipe[0] = stop_pipe[1] = -1;
}

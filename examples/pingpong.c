// SPDX-License-Identifier: MIT
/*
 * dp-pingpong: two processes bounce a message back and forth through
 * dmaplane, for a range of sizes, and print the round-trip time and the
 * bandwidth, checking the bytes every time.
 *
 *   dp-pingpong [ITERATIONS]
 *
 * Names are exchanged over a pipe, as an MPI launcher would over PMI.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <dmaplane.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int die(const char *what, int err)
{
	fprintf(stderr, "dp-pingpong: %s: %s\n", what, strerror(-err));
	exit(1);
}

static struct dp_ep *open_ep(void)
{
	struct dp_ep *ep;
	int ret = dp_open(NULL, 0, &ep);

	if (ret)
		die("dp_open", ret);
	ret = dp_ep_setup(ep, 0, 0);
	if (ret)
		die("dp_ep_setup", ret);
	return ep;
}

static void check(const unsigned char *buf, size_t len, unsigned char seed)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != (unsigned char)(seed + i * 7)) {
			fprintf(stderr, "dp-pingpong: corrupt byte %zu\n", i);
			exit(1);
		}
}

static void fill(unsigned char *buf, size_t len, unsigned char seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = seed + i * 7;
}

#define MAX_LEN (4u << 20)

/* Rank 0 sends first; rank 1 echoes. */
static void run(struct dp_ep *ep, uint32_t peer, int rank, int iters)
{
	unsigned char *sbuf = malloc(MAX_LEN), *rbuf = malloc(MAX_LEN);
	struct dmaplane_cqe cqe;
	size_t len;
	int ret;

	if (!rank)
		printf("%10s %12s %12s\n", "bytes", "rtt_us", "MB/s");
	for (len = 1; len <= MAX_LEN; len *= 4) {
		double t0 = now();

		for (int i = 0; i < iters; i++) {
			unsigned char seed = i + len;

			if (rank == 0) {
				fill(sbuf, len, seed);
				ret = dp_send_sync(ep, peer, len, sbuf, len, NULL);
				if (!ret)
					ret = dp_recv_sync(ep, peer, len, 0, rbuf, len, &cqe);
			} else {
				ret = dp_recv_sync(ep, peer, len, 0, rbuf, len, &cqe);
				if (!ret)
					ret = dp_send_sync(ep, peer, len, rbuf, len, NULL);
			}
			if (ret)
				die("transfer", ret);
			if (rank == 0)
				check(rbuf, len, seed);
		}
		if (!rank) {
			double rtt = (now() - t0) / iters;

			printf("%10zu %12.1f %12.1f\n", len, rtt * 1e6,
			       2.0 * len / rtt / 1e6);
		}
	}
	free(sbuf);
	free(rbuf);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 20;
	int to_child[2], to_parent[2], status;
	struct dmaplane_name mine, theirs;
	struct dp_ep *ep;
	uint32_t peer;
	pid_t pid;
	int ret;

	if (pipe(to_child) || pipe(to_parent))
		return 1;
	pid = fork();
	ep = open_ep();
	dp_getname(ep, &mine);
	if (write(pid ? to_child[1] : to_parent[1], &mine, sizeof(mine)) != sizeof(mine) ||
	    read(pid ? to_parent[0] : to_child[0], &theirs, sizeof(theirs)) != sizeof(theirs))
		return 1;
	ret = dp_av_insert(ep, &theirs, &peer);
	if (ret)
		die("dp_av_insert", ret);
	run(ep, peer, pid ? 0 : 1, iters);
	dp_close(ep);
	if (!pid)
		return 0;
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

// SPDX-License-Identifier: MIT
/*
 * dp-ring: N processes pass messages around a ring through dmaplane --
 * each rank receives from its left neighbour with a wildcard tag and
 * sends to its right one -- and check that every byte arrived intact.
 *
 *   dp-ring [NPROCS] [ROUNDS] [BYTES]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

static int rank_main(struct dmaplane_name *names, int n, int rank, int rounds,
		     size_t len)
{
	unsigned char *sbuf = malloc(len), *rbuf = malloc(len);
	struct dmaplane_cqe cqe[2];
	uint32_t left, right;
	struct dp_ep *ep;
	double t0;
	int ret, got;

	if (!sbuf || !rbuf || dp_open(NULL, 0, &ep) || dp_ep_setup(ep, 0, 0))
		return 2;
	dp_getname(ep, &names[rank]);
	/* Wait until every rank has published its name. */
	for (int i = 0; i < n; i++)
		while (!__atomic_load_n(&names[i].ep_uid, __ATOMIC_ACQUIRE) &&
		       !__atomic_load_n(&names[i].node_id, __ATOMIC_ACQUIRE))
			usleep(1000);
	if (dp_av_insert(ep, &names[(rank + n - 1) % n], &left) ||
	    dp_av_insert(ep, &names[(rank + 1) % n], &right))
		return 3;

	t0 = now();
	for (int r = 0; r < rounds; r++) {
		for (size_t i = 0; i < len; i++)
			sbuf[i] = rank * 31 + r + i;
		ret = dp_recv(ep, left, 0, ~0ull, rbuf, len, 1);
		if (!ret)
			ret = dp_send(ep, right, r, sbuf, len, 2);
		if (ret)
			return 4;
		for (got = 0; got < 2;) {
			ret = dp_wait(ep, cqe + got, 2 - got, 10000);
			if (ret <= 0)
				return 5;
			got += ret;
		}
		for (int k = 0; k < 2; k++)
			if (cqe[k].status)
				return 6;
		for (size_t i = 0; i < len; i++)
			if (rbuf[i] != (unsigned char)(((rank + n - 1) % n) * 31 + r + i))
				return 7;
	}
	if (rank == 0)
		printf("dp-ring: %d ranks, %d rounds of %zu bytes: %.1f us per hop, all bytes verified\n",
		       n, rounds, len, (now() - t0) / rounds * 1e6);
	dp_close(ep);
	return 0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	int rounds = argc > 2 ? atoi(argv[2]) : 100;
	size_t len = argc > 3 ? strtoul(argv[3], NULL, 0) : 65536;
	struct dmaplane_name *names;
	int fails = 0;

	if (n < 2 || n > 64 || rounds < 1)
		return 2;
	names = mmap(NULL, n * sizeof(*names), PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (names == MAP_FAILED)
		return 1;
	memset(names, 0, n * sizeof(*names));
	for (int r = 0; r < n; r++)
		if (!fork())
			_exit(rank_main(names, n, r, rounds, len));
	for (int r = 0; r < n; r++) {
		int status;

		wait(&status);
		if (!WIFEXITED(status) || WEXITSTATUS(status)) {
			fprintf(stderr, "dp-ring: a rank failed (status 0x%x)\n", status);
			fails++;
		}
	}
	return fails ? 1 : 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * killloop - kill a member of a communicating group at a random moment,
 * over and over, and check that the module drains back to zero.
 *
 * Each round forks MEMBERS processes on this node.  Each opens an
 * endpoint, registers a buffer for its peers' put/get, publishes its name
 * and key in shared memory, inserts everybody's name, and then loops:
 * a receive from its left neighbour and a send to its right one (eager
 * and rendezvous sizes in turn, up to 1 MiB), a put into the right
 * neighbour's buffer and a get from the left one's, a registration of a
 * fresh buffer now and then and an arena (exported as a dma-buf) every
 * few iterations.  After a random delay (setup included) the parent
 * SIGKILLs one random member.  The others notice (an operation fails or
 * completes with an error: they exit by themselves), or are killed at
 * the end of the round.  All are reaped; then every counter of
 * /sys/kernel/debug/dmaplane/stats (but the cumulative "invalidations")
 * must drain back to zero within DRAIN_LIMIT seconds.  The worst drain
 * time is printed.
 *
 * Output: "DMAPLANE-CASE <name> PASS|FAIL [why]" records and "# " lines.
 * Usage: killloop [-r ROUNDS] [-k MEMBERS] [-d MAX_DELAY_MS]
 *                 [-w SETTLE_MS] [-l DRAIN_LIMIT_S] [-s SEED]
 */
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

#define DP_TEST_NO_HARNESS
#include "dp_test.h"

#define MAXK		8
#define RMA_LEN		(64 * 1024)
#define MR_LEN		(256 * 1024)
#define MSG_MAX		(1024 * 1024)

struct member {
	struct dmaplane_name name;
	uint64_t key;
	volatile int ready;
};

struct shared {
	struct member m[MAXK];
};

/* Exit codes of a member. */
enum {
	M_NOTICED = 0,		/* an operation failed because a peer went away */
	M_SETUP = 1,		/* its own setup failed (not a peer's death) */
	M_DATA = 2,		/* wrong data arrived */
	M_ERRNO = 3,		/* an errno a peer's death does not explain */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A peer's death shows as one of these; anything else is a finding. */
static bool death_errno(int e)
{
	return e == -ECONNRESET || e == -ECONNREFUSED || e == -ENOENT ||
	       e == -ECANCELED || e == -EPIPE;
}

static int noticed(int e, const char *what)
{
	/* A dying target's address space goes before its endpoint: its
	 * regions are invalidated first, and put/get into them fail with
	 * -EFAULT.
	 */
	if (death_errno(e) || (e == -EFAULT && strstr(what, "cqe") &&
			       (what[0] == 'p' || what[0] == 'g')))
		_exit(M_NOTICED);
	printf("# member %d: %s: %s\n", getpid(), what, strerror(-e));
	fflush(stdout);
	_exit(M_ERRNO);
}

static void *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		_exit(M_SETUP);
	memset(p, 0, len);
	return p;
}

static void member(struct shared *sh, int me, int k, unsigned int seed)
{
	uint32_t addr[MAXK];
	struct dp_ep *ep;
	struct dp_mr *mr;
	char *sbuf, *rbuf, *mrbuf, *rma;
	int ret, left = (me + k - 1) % k, right = (me + 1) % k;

	srand(seed);
	sbuf = map(MSG_MAX);
	rbuf = map(MSG_MAX);
	mrbuf = map(MR_LEN);
	rma = map(RMA_LEN);
	if (dp_open(NULL, 0, &ep) || dp_ep_setup(ep, 0, 256))
		_exit(M_SETUP);
	if (dp_mr_reg(ep, mrbuf, MR_LEN, DMAPLANE_ACCESS_LOCAL_WRITE |
		      DMAPLANE_ACCESS_REMOTE_READ | DMAPLANE_ACCESS_REMOTE_WRITE, &mr))
		_exit(M_SETUP);
	if (dp_getname(ep, &sh->m[me].name))
		_exit(M_SETUP);
	sh->m[me].key = dp_mr_key(mr);
	__atomic_store_n(&sh->m[me].ready, 1, __ATOMIC_RELEASE);
	for (int j = 0; j < k; j++) {
		while (!__atomic_load_n(&sh->m[j].ready, __ATOMIC_ACQUIRE))
			usleep(1000);	/* killed at the end of the round */
		if (j == me)
			continue;
		ret = dp_av_insert(ep, &sh->m[j].name, &addr[j]);
		if (ret)
			noticed(ret, "av_insert");
	}

	for (uint64_t it = 0;; it++) {
		static const uint64_t sizes[] = { 2048, 300000, 16384, MSG_MAX, 1, 70000 };
		uint64_t len = sizes[it % 6];
		struct dmaplane_cqe cqe[4];
		int pending = 4, got;

		memcpy(sbuf, &it, sizeof(it));	/* checked by the receiver */
		ret = dp_recv(ep, addr[left], it, 0, rbuf, len, 1);
		if (ret)
			noticed(ret, "recv");
		ret = dp_send(ep, addr[right], it, sbuf, len, 2);
		if (ret)
			noticed(ret, "send");
		ret = dp_put(ep, addr[right], sh->m[right].key,
			     (it * 4096) % (MR_LEN - RMA_LEN), rma, RMA_LEN, 3);
		if (ret)
			noticed(ret, "put");
		ret = dp_get(ep, addr[left], sh->m[left].key, 0, rma, RMA_LEN, 4);
		if (ret)
			noticed(ret, "get");
		if (it % 4 == 1) {
			/* A fresh registration (a cache miss), gone at once. */
			char *b = malloc(128 * 1024 + (rand() % 4096));
			struct dp_mr *t;

			if (b) {
				b[0] = 1;
				if (!dp_mr_reg(ep, b + 1, 128 * 1024, DMAPLANE_ACCESS_REMOTE_READ, &t))
					dp_mr_dereg(t);
				free(b);
			}
		}
		if (it % 8 == 3) {
			struct dp_arena *ar;

			if (!dp_arena_create(ep, 2 * 1024 * 1024, 0, DMAPLANE_NUMA_ANY,
					     DMAPLANE_ACCESS_REMOTE_READ, &ar)) {
				int fd = dp_dmabuf_export(ar, 0, 1024 * 1024, 0);

				if (fd >= 0)
					close(fd);
				dp_arena_destroy(ar);
			}
		}
		while (pending) {
			got = dp_wait(ep, cqe, 4, 100);
			if (got < 0 && got != -EINTR)
				noticed(got, "dp_wait");
			for (int i = 0; i < got; i++) {
				static const char *const op[] = { "?", "recv cqe", "send cqe",
								  "put cqe", "get cqe" };

				if (cqe[i].status && !death_errno(cqe[i].status) &&
				    !(cqe[i].status == -EFAULT && cqe[i].ctx >= 3)) {
					printf("# member %d: iteration %llu, len %llu: cqe ctx %llu opcode %u status %d len %llu msg_len %llu tag %llu src %llu\n",
					       getpid(), (unsigned long long)it,
					       (unsigned long long)len,
					       (unsigned long long)cqe[i].ctx, cqe[i].opcode,
					       cqe[i].status, (unsigned long long)cqe[i].len,
					       (unsigned long long)cqe[i].msg_len,
					       (unsigned long long)cqe[i].tag,
					       (unsigned long long)cqe[i].src);
				}
				if (cqe[i].status)
					noticed(cqe[i].status, op[cqe[i].ctx < 5 ? cqe[i].ctx : 0]);
				if (cqe[i].ctx == 1 &&
				    (cqe[i].len != len || memcmp(rbuf, &it, len < 8 ? len : 8)))
					_exit(M_DATA);
			}
			if (got > 0)
				pending -= got;
		}
	}
}

int main(int argc, char **argv)
{
	int rounds = 100, k = 4, max_delay = 600, settle = 800, limit = 30, opt;
	unsigned int seed = time(NULL);
	int codes[8] = { 0 }, killed_late = 0, fails = 0, done = 0;
	double worst = 0, total_drain = 0, t_start = now_s();
	struct shared *sh;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "r:k:d:w:l:s:")) != -1) {
		switch (opt) {
		case 'r': rounds = atoi(optarg); break;
		case 'k': k = atoi(optarg); break;
		case 'd': max_delay = atoi(optarg); break;
		case 'w': settle = atoi(optarg); break;
		case 'l': limit = atoi(optarg); break;
		case 's': seed = strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: %s [-r ROUNDS] [-k MEMBERS] [-d MAX_DELAY_MS] [-w SETTLE_MS] [-l DRAIN_LIMIT_S] [-s SEED]\n",
				argv[0]);
			return 2;
		}
	}
	if (k < 2 || k > MAXK)
		k = 4;
	srand(seed);
	printf("# killloop: %d rounds of %d members, seed %u\n", rounds, k, seed);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	if (dp_test_stat("endpoints") != 0) {
		printf("DMAPLANE-CASE killloop FAIL endpoints open before the loop\n");
		return 1;
	}

	for (int r = 0; r < rounds; r++) {
		pid_t pids[MAXK];
		bool reaped[MAXK] = { false };
		int left = k, victim = rand() % k, delay = rand() % (max_delay + 1);
		double t0, drain;
		char why[512] = "";

		memset(sh, 0, sizeof(*sh));
		fflush(stdout);
		for (int i = 0; i < k; i++) {
			unsigned int s = rand();

			pids[i] = fork();
			if (pids[i] < 0) {
				printf("DMAPLANE-CASE killloop FAIL fork: %s\n", strerror(errno));
				return 1;
			}
			if (!pids[i])
				member(sh, i, k, s);
		}
		usleep(delay * 1000);
		kill(pids[victim], SIGKILL);

		/* The others notice, or are killed when the round ends. */
		t0 = now_s();
		while (left) {
			bool late = now_s() - t0 > settle / 1000.0;

			for (int i = 0; i < k; i++) {
				int status;

				if (reaped[i])
					continue;
				if (late)
					kill(pids[i], SIGKILL);
				if (waitpid(pids[i], &status, WNOHANG) != pids[i])
					continue;
				reaped[i] = true;
				left--;
				if (i == victim)
					continue;
				if (WIFEXITED(status)) {
					codes[WEXITSTATUS(status) & 7]++;
					if (WEXITSTATUS(status) == M_DATA ||
					    WEXITSTATUS(status) == M_ERRNO) {
						printf("DMAPLANE-CASE killloop/round%d FAIL member %d: %s\n",
						       r, i, WEXITSTATUS(status) == M_DATA ?
						       "wrong data" : "unexpected errno");
						fails++;
					}
				} else {
					killed_late++;
				}
			}
			if (left && now_s() - t0 > settle / 1000.0 + 60) {
				printf("DMAPLANE-CASE killloop/round%d FAIL %d members not reaped 60 s after SIGKILL\n",
				       r, left);
				for (int i = 0; i < k; i++) {
					char path[64], buf[2048];
					FILE *f;
					size_t n;

					if (reaped[i])
						continue;
					snprintf(path, sizeof(path), "/proc/%d/stack", pids[i]);
					f = fopen(path, "r");
					if (!f)
						continue;
					n = fread(buf, 1, sizeof(buf) - 1, f);
					buf[n] = 0;
					printf("# stack of member %d:\n%s", i, buf);
					fclose(f);
				}
				return 1;
			}
			usleep(2000);
		}

		/* Everything released within the limit. */
		t0 = now_s();
		for (;;) {
			FILE *f = fopen(DP_STATS, "r");
			char key[64];
			long val;

			why[0] = 0;
			while (f && fscanf(f, "%63s %ld", key, &val) == 2)
				if (val && strcmp(key, "invalidations"))
					snprintf(why + strlen(why), sizeof(why) - strlen(why),
						 "%s %ld ", key, val);
			if (f)
				fclose(f);
			drain = now_s() - t0;
			if (!why[0] || drain > limit)
				break;
			usleep(1000);
		}
		if (why[0]) {
			printf("DMAPLANE-CASE killloop/round%d FAIL counters not zero %d s after the round: %s\n",
			       r, limit, why);
			return 1;
		}
		total_drain += drain;
		if (drain > worst)
			worst = drain;
		done++;
		if ((r + 1) % 10 == 0)
			printf("# round %d: worst drain so far %.3f s, %.0f s elapsed\n",
			       r + 1, worst, now_s() - t_start);
	}
	printf("# %d rounds in %.0f s; survivors that noticed by themselves: %d, failed their setup: %d, killed at the round's end: %d\n",
	       done, now_s() - t_start, codes[M_NOTICED], codes[M_SETUP], killed_late);
	printf("# drain time: worst %.3f s, mean %.4f s\n", worst,
	       done ? total_drain / done : 0);
	printf("DMAPLANE-CASE killloop-drain PASS worst drain %.3f s (limit %d s)\n", worst, limit);
	if (fails)
		printf("DMAPLANE-CASE killloop FAIL %d findings in %d rounds\n", fails, done);
	else
		printf("DMAPLANE-CASE killloop PASS %d rounds, worst drain %.3f s\n", done, worst);
	return fails ? 1 : 0;
}

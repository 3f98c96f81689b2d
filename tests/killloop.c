// SPDX-License-Identifier: GPL-2.0
/*
 * killloop - kill a member of a communicating group at a random moment,
 * over and over, and check that the module drains back to zero.
 *
 * Each round forks MEMBERS processes.  Each opens an endpoint, registers
 * a buffer for its peers' put/get, publishes its name and key in shared
 * memory, inserts everybody's name, and then loops: a receive from its
 * left neighbour and a send to its right one (eager and rendezvous sizes
 * in turn, up to 1 MiB), a put into the right neighbour's buffer and a
 * get from the left one's, a registration of a fresh buffer now and then
 * and an arena (exported as a dma-buf) every few iterations.  A member
 * whose operations are quiet for a moment reads a few bytes of its left
 * neighbour's buffer: a receive from a dead sender never completes, the
 * read fails.  One random member is SIGKILLed after a random delay: from
 * its fork in half of the rounds (it may die in its setup), from the end
 * of its setup in the other half (it dies with its traffic going, however
 * long a setup takes on this machine).  Every other one must notice by
 * itself (an operation fails or completes with an error, or a member it
 * waits for died before it published its name) and exit within
 * NOTICE_MS; one that does not is a finding, and is killed.  All are reaped; then every counter of
 * /sys/kernel/debug/dmaplane/stats (but the cumulative "invalidations")
 * must drain back to zero within DRAIN_LIMIT seconds.  The worst drain
 * time is printed.
 *
 * Two nodes (-n NODE -a PEER_IP, one killloop on each, the module of each
 * connected to the other's as a peer): members 0 .. K/2-1 live on node 0,
 * the others on node 1, so the ring has local and remote links.  The two
 * killloops talk over TCP (node 1 listens on PORT): node 0 chooses each
 * round (seed, victim, delay) and tells node 1; each forks its own
 * members, sends the other their names and keys once they are published,
 * and tells it of every death; the victim's node kills it.  Once both
 * nodes have reaped all their members, each checks that its own counters
 * drain, and node 1 reports its drain time to node 0, which prints the
 * drain records of both.  Node 1 takes the number of rounds from node 0.
 *
 * Output: "DMAPLANE-CASE <name> PASS|FAIL [why]" records and "# " lines.
 * Usage: killloop [-r ROUNDS] [-k MEMBERS] [-D MIN_DELAY_MS] [-d MAX_DELAY_MS]
 *                 [-w NOTICE_MS] [-l DRAIN_LIMIT_S] [-s SEED]
 *                 [-n NODE -a PEER_IP [-P PORT]]
 * The victim is killed MIN_DELAY_MS to MAX_DELAY_MS (0 to 600) after its
 * fork or, in half of the rounds, after the end of its setup; NOTICE_MS is
 * 30000, DRAIN_LIMIT_S 30, PORT 20889.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#define DP_TEST_NO_HARNESS
#include "dp_test.h"

#define MAXK		8
#define RMA_LEN		(64 * 1024)
#define MR_LEN		(256 * 1024)
#define MSG_MAX		(1024 * 1024)
#define CTL_PORT	20889

struct member {
	struct dmaplane_name name;
	uint64_t key;
	volatile int ready;	/* name and key published */
	volatile int running;	/* past its setup */
	volatile int dead;	/* gone: nobody waits for its name any more */
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

/* Completion contexts of a member's operations. */
enum { C_RECV = 1, C_SEND, C_PUT, C_GET, C_PROBE };

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
	static const char *const op[] = { "?", "recv cqe", "send cqe", "put cqe",
					  "get cqe", "probe cqe" };
	uint32_t addr[MAXK];
	struct dp_ep *ep;
	struct dp_mr *mr;
	char *sbuf, *rbuf, *mrbuf, *rma, *probe;
	int ret, left = (me + k - 1) % k, right = (me + 1) % k;
	bool probing = false;

	srand(seed);
	sbuf = map(MSG_MAX);
	rbuf = map(MSG_MAX);
	mrbuf = map(MR_LEN);
	rma = map(RMA_LEN);
	probe = map(4096);
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
		while (!__atomic_load_n(&sh->m[j].ready, __ATOMIC_ACQUIRE)) {
			if (__atomic_load_n(&sh->m[j].dead, __ATOMIC_ACQUIRE))
				_exit(M_NOTICED);	/* died before it was ready */
			usleep(1000);
		}
		if (j == me)
			continue;
		ret = dp_av_insert(ep, &sh->m[j].name, &addr[j]);
		if (ret)
			noticed(ret, "av_insert");
	}
	sh->m[me].running = 1;

	for (uint64_t it = 0;; it++) {
		static const uint64_t sizes[] = { 2048, 300000, 16384, MSG_MAX, 1, 70000 };
		uint64_t len = sizes[it % 6];
		struct dmaplane_cqe cqe[4];
		int pending = 4, got;

		memcpy(sbuf, &it, sizeof(it));	/* checked by the receiver */
		ret = dp_recv(ep, addr[left], it, 0, rbuf, len, C_RECV);
		if (ret)
			noticed(ret, "recv");
		ret = dp_send(ep, addr[right], it, sbuf, len, C_SEND);
		if (ret)
			noticed(ret, "send");
		ret = dp_put(ep, addr[right], sh->m[right].key,
			     (it * 4096) % (MR_LEN - RMA_LEN), rma, RMA_LEN, C_PUT);
		if (ret)
			noticed(ret, "put");
		ret = dp_get(ep, addr[left], sh->m[left].key, 0, rma, RMA_LEN, C_GET);
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
			if (got == 0 && !probing) {
				/* Quiet: is the left neighbour still there? */
				ret = dp_get(ep, addr[left], sh->m[left].key, 0, probe, 8,
					     C_PROBE);
				if (ret)
					noticed(ret, "probe");
				probing = true;
			}
			for (int i = 0; i < got; i++) {
				if (cqe[i].status && !death_errno(cqe[i].status) &&
				    !(cqe[i].status == -EFAULT && cqe[i].ctx >= C_PUT)) {
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
					noticed(cqe[i].status,
						op[cqe[i].ctx <= C_PROBE ? cqe[i].ctx : 0]);
				if (cqe[i].ctx == C_RECV &&
				    (cqe[i].len != len || memcmp(rbuf, &it, len < 8 ? len : 8)))
					_exit(M_DATA);
				if (cqe[i].ctx == C_PROBE)
					probing = false;
				else
					pending--;
			}
		}
	}
}

/* ---- the two killloops of a two-node run ---------------------------------- */

/* What the two killloops tell each other. */
enum { T_ROUND = 1, T_NAMES, T_DEAD, T_REAPED, T_RESULT, T_END };

struct ctl {
	uint32_t type;
	uint32_t round;
	uint32_t seed;		/* T_ROUND: the members' seeds derive from it */
	int32_t who;		/* T_ROUND: the victim; T_DEAD: the member that died */
	uint32_t delay_ms;	/* T_ROUND: when the victim is killed */
	uint32_t ready;		/* T_DEAD: it had published its name */
	uint32_t running;	/* T_DEAD: it was past its setup; T_ROUND: delay_ms
				 * counts from the end of the victim's setup, not
				 * from its fork */
	int32_t fails;		/* T_RESULT: findings of the round on that node */
	uint64_t drain_us;	/* T_RESULT: that node's drain time */
	struct {
		struct dmaplane_name name;
		uint64_t key;
		uint64_t ready;
	} m[MAXK];		/* T_NAMES: that node's members */
	char why[256];		/* T_RESULT: counters not back at zero */
};

static int nodes = 1, node, ctl_fd = -1;

/* The node member @i of @k lives on. */
static int home(int i, int k)
{
	return nodes == 1 ? 0 : i >= k / 2;
}

static void ctl_send(struct ctl *c)
{
	if (ctl_fd >= 0 && dp_test_io_full(ctl_fd, c, sizeof(*c), true)) {
		printf("DMAPLANE-CASE killloop FAIL the other node's killloop is gone: %s\n",
		       strerror(errno));
		exit(1);
	}
}

/* The next message; T_END when the other side is gone. */
static void ctl_recv(struct ctl *c)
{
	errno = 0;
	if (dp_test_io_full(ctl_fd, c, sizeof(*c), false)) {
		printf("DMAPLANE-CASE killloop FAIL the other node's killloop is gone: %s\n",
		       errno ? strerror(errno) : "end of stream");
		exit(1);
	}
}

static bool ctl_ready(void)
{
	struct pollfd pfd = { .fd = ctl_fd, .events = POLLIN };

	return ctl_fd >= 0 && poll(&pfd, 1, 0) > 0;
}

/* Node 1 listens, node 0 connects; each waits up to @secs seconds. */
static int ctl_open(const char *peer, int port, int secs)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct timeval tv = { .tv_sec = 600 };
	double end = dp_test_now() + secs;
	int one = 1, fd = -1;

	if (node == 1) {
		struct pollfd pfd;
		int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		sa.sin_addr.s_addr = htonl(INADDR_ANY);
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (lfd < 0 || bind(lfd, (void *)&sa, sizeof(sa)) || listen(lfd, 1))
			return -1;
		pfd = (struct pollfd){ .fd = lfd, .events = POLLIN };
		if (poll(&pfd, 1, secs * 1000) > 0)
			fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		close(lfd);
	} else {
		if (inet_pton(AF_INET, peer, &sa.sin_addr) != 1)
			return -1;
		while (fd < 0 && dp_test_now() < end) {
			fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (fd >= 0 && connect(fd, (void *)&sa, sizeof(sa))) {
				close(fd);
				fd = -1;
				usleep(200000);
			}
		}
	}
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* ---- a round --------------------------------------------------------------- */

static int k = 4, notice_ms = 30000, limit = 30;
static int codes[8], killed_late, setup_kills, setups, victim_state;
static double setup_time;

/*
 * The counters of this node not back at zero, as "name value ..." in @why
 * (empty when all are), and the time it took them to get there.
 */
static double drain(char *why, size_t size)
{
	double t0 = dp_test_now(), t;

	for (;;) {
		dp_test_stats_nonzero(why, size);
		t = dp_test_now() - t0;
		if (!why[0] || t > limit)
			return t;
		usleep(1000);
	}
}

static void print_stacks(const pid_t *pids, const bool *reaped)
{
	for (int i = 0; i < k; i++) {
		char path[64], buf[2048];
		FILE *f;
		size_t n;

		if (!pids[i] || reaped[i])
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
}

/* A line in the kernel log, to tell what happened around its messages. */
static void kmsg(const char *fmt, ...)
{
	FILE *f = fopen("/dev/kmsg", "w");
	va_list ap;

	if (!f)
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

/* A death this node learnt of (its own member's, or from the other node). */
static void death(struct shared *sh, int i, int victim, bool running, double *first)
{
	__atomic_store_n(&sh->m[i].dead, 1, __ATOMIC_RELEASE);
	if (!*first)
		*first = dp_test_now();
	if (i == victim) {
		victim_state = running ? 2 : 1;
		setup_kills += !running;
	}
}

/*
 * Round @r: fork this node's members, kill the victim when it is this
 * node's, reap them all.  Return the number of findings, or -1 when a
 * member could not be reaped (the run cannot go on).
 */
static int round_members(struct shared *sh, int r, unsigned int seed, int victim,
			 int delay_ms, bool from_running)
{
	pid_t pids[MAXK] = { 0 };
	bool reaped[MAXK] = { false }, names_sent = nodes == 1, reaped_sent = false;
	bool peer_reaped = nodes == 1, late = false, set_up = false, killed = false;
	double t_fork, t_running = 0, first = 0;
	int left = 0, fails = 0;
	struct ctl c;

	memset(sh, 0, sizeof(*sh));
	fflush(stdout);
	victim_state = 0;
	t_fork = dp_test_now();
	for (int i = 0; i < k; i++) {
		if (home(i, k) != node)
			continue;
		pids[i] = fork();
		if (pids[i] < 0) {
			printf("DMAPLANE-CASE killloop FAIL fork: %s\n", strerror(errno));
			exit(1);
		}
		if (!pids[i])
			member(sh, i, k, seed + 7919 * i);
		left++;
	}

	for (;;) {
		double t = dp_test_now();

		if (from_running && !t_running && sh->m[victim].running)
			t_running = t;
		if (pids[victim] && !reaped[victim] && !killed &&
		    (from_running ? t_running && t - t_running >= delay_ms / 1000.0 :
				    t - t_fork >= delay_ms / 1000.0)) {
			kill(pids[victim], SIGKILL);
			killed = true;
			kmsg("killloop: round %d: member %d killed %s\n", r, victim,
			     sh->m[victim].running ? "running" : "in its setup");
		}
		for (int i = 0; i < k; i++) {
			int status;

			if (!pids[i] || reaped[i] || waitpid(pids[i], &status, WNOHANG) != pids[i])
				continue;
			reaped[i] = true;
			left--;
			memset(&c, 0, sizeof(c));
			c.type = T_DEAD;
			c.round = r;
			c.who = i;
			c.ready = sh->m[i].ready;
			c.running = sh->m[i].running;
			ctl_send(&c);
			death(sh, i, victim, c.running, &first);
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
			} else if (late) {
				killed_late++;
				printf("DMAPLANE-CASE killloop/round%d FAIL member %d (%s, victim %d) did not notice a death within %d ms\n",
				       r, i, sh->m[i].running ? "running" : "in its setup",
				       victim, notice_ms);
				fails++;
			} else {
				printf("DMAPLANE-CASE killloop/round%d FAIL member %d died of signal %d\n",
				       r, i, WTERMSIG(status));
				fails++;
			}
		}
		if (!set_up && !first) {
			/* How long a setup takes, to choose the kill delays. */
			set_up = true;
			for (int i = 0; i < k; i++)
				if (pids[i] && !sh->m[i].running)
					set_up = false;
			if (set_up) {
				setup_time += t - t_fork;
				setups++;
			}
		}
		if (!names_sent) {
			bool all = true;

			for (int i = 0; i < k; i++)
				if (pids[i] && !reaped[i] && !sh->m[i].ready)
					all = false;
			if (all) {
				memset(&c, 0, sizeof(c));
				c.type = T_NAMES;
				c.round = r;
				for (int i = 0; i < k; i++) {
					if (!pids[i] || !sh->m[i].ready)
						continue;
					c.m[i].name = sh->m[i].name;
					c.m[i].key = sh->m[i].key;
					c.m[i].ready = 1;
				}
				ctl_send(&c);
				names_sent = true;
			}
		}
		/* T_REAPED is the other node's last word in this round. */
		while (!peer_reaped && ctl_ready()) {
			ctl_recv(&c);
			if (c.round != (uint32_t)r || c.who < 0 || c.who >= k) {
				printf("DMAPLANE-CASE killloop FAIL message %u of round %u in round %d\n",
				       c.type, c.round, r);
				exit(1);
			}
			if (c.type == T_NAMES) {
				for (int i = 0; i < k; i++) {
					if (home(i, k) == node || !c.m[i].ready)
						continue;
					sh->m[i].name = c.m[i].name;
					sh->m[i].key = c.m[i].key;
					__atomic_store_n(&sh->m[i].ready, 1, __ATOMIC_RELEASE);
				}
			} else if (c.type == T_DEAD) {
				death(sh, c.who, victim, c.running, &first);
			} else if (c.type == T_REAPED) {
				peer_reaped = true;
			} else {
				printf("DMAPLANE-CASE killloop FAIL message %u in round %d\n",
				       c.type, r);
				exit(1);
			}
		}
		if (!left && !reaped_sent) {
			memset(&c, 0, sizeof(c));
			c.type = T_REAPED;
			c.round = r;
			ctl_send(&c);
			reaped_sent = true;
		}
		if (!left && peer_reaped) {
			if (fails)
				printf("# round %d: victim %d (node %d), killed %d ms after the fork, %s\n",
				       r, victim, home(victim, k), delay_ms,
				       victim_state == 2 ? "running" : "in its setup");
			return fails;
		}
		/* A survivor that did not notice by now never will. */
		if (first && !late && t - first > notice_ms / 1000.0) {
			late = true;
			for (int i = 0; i < k; i++)
				if (pids[i] && !reaped[i])
					kill(pids[i], SIGKILL);
		}
		if (left && first && t - first > notice_ms / 1000.0 + 60) {
			printf("DMAPLANE-CASE killloop/round%d FAIL %d members not reaped 60 s after SIGKILL\n",
			       r, left);
			print_stacks(pids, reaped);
			return -1;
		}
		usleep(2000);
	}
}

int main(int argc, char **argv)
{
	int rounds = 100, min_delay = 0, max_delay = 600, port = CTL_PORT, opt, fails = 0;
	int done = 0;
	unsigned int seed = time(NULL);
	double worst = 0, worst_here = 0, total_drain = 0, t_start = dp_test_now();
	const char *peer = NULL;
	struct shared *sh;
	struct ctl c;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "r:k:D:d:w:l:s:n:a:P:")) != -1) {
		switch (opt) {
		case 'r': rounds = atoi(optarg); break;
		case 'k': k = atoi(optarg); break;
		case 'D': min_delay = atoi(optarg); break;
		case 'd': max_delay = atoi(optarg); break;
		case 'w': notice_ms = atoi(optarg); break;
		case 'l': limit = atoi(optarg); break;
		case 's': seed = strtoul(optarg, NULL, 0); break;
		case 'n': node = atoi(optarg); nodes = 2; break;
		case 'a': peer = optarg; break;
		case 'P': port = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-r ROUNDS] [-k MEMBERS] [-D MIN_DELAY_MS] [-d MAX_DELAY_MS] [-w NOTICE_MS] [-l DRAIN_LIMIT_S] [-s SEED] [-n NODE -a PEER_IP [-P PORT]]\n",
				argv[0]);
			return 2;
		}
	}
	if (k < 2 || k > MAXK)
		k = 4;
	if (nodes == 2 && (node < 0 || node > 1 || (!peer && node == 0))) {
		fprintf(stderr, "killloop: -n 0 or 1, and node 0 needs -a PEER_IP\n");
		return 2;
	}
	srand(seed);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return 1;
	if (dp_test_stat("endpoints") != 0) {
		printf("DMAPLANE-CASE killloop FAIL endpoints open before the loop\n");
		return 1;
	}
	if (nodes == 2) {
		ctl_fd = ctl_open(peer, port, 300);
		if (ctl_fd < 0) {
			printf("DMAPLANE-CASE killloop FAIL no killloop on the other node (port %d): %s\n",
			       port, strerror(errno));
			return 1;
		}
		printf("# killloop: node %d of 2, members %d..%d of %d\n", node,
		       node ? k / 2 : 0, node ? k - 1 : k / 2 - 1, k);
	}
	if (node == 0)
		printf("# killloop: %d rounds of %d members, seed %u\n", rounds, k, seed);

	for (int r = 0;; r++) {
		unsigned int rseed;
		int victim, delay, f;
		bool from_running;
		char why[512];
		double t;

		if (node == 0) {
			memset(&c, 0, sizeof(c));
			c.type = r < rounds ? T_ROUND : T_END;
			c.round = r;
			c.seed = rseed = rand();
			c.who = victim = rand() % k;
			c.delay_ms = delay = min_delay +
					     rand() % (max_delay > min_delay ? max_delay - min_delay + 1 : 1);
			c.running = from_running = rand() % 2;
			ctl_send(&c);
			if (r >= rounds)
				break;
		} else {
			ctl_recv(&c);
			if (c.type == T_END)
				break;
			if (c.type != T_ROUND || c.round != (uint32_t)r || c.who < 0 || c.who >= k) {
				printf("DMAPLANE-CASE killloop FAIL message %u of round %u, round %d expected\n",
				       c.type, c.round, r);
				return 1;
			}
			rseed = c.seed;
			victim = c.who;
			delay = c.delay_ms;
			from_running = c.running;
		}
		f = round_members(sh, r, rseed, victim, delay, from_running);
		if (f < 0)
			return 1;
		fails += f;

		/* Everything released within the limit, on both nodes. */
		t = drain(why, sizeof(why));
		if (why[0])
			printf("DMAPLANE-CASE killloop/round%d FAIL counters not zero %d s after the round: %s\n",
			       r, limit, why);
		if (t > worst_here)
			worst_here = t;
		if (node == 1) {
			memset(&c, 0, sizeof(c));
			c.type = T_RESULT;
			c.round = r;
			c.fails = f;
			c.drain_us = t * 1e6;
			snprintf(c.why, sizeof(c.why), "%s", why);
			ctl_send(&c);
			if (why[0])
				return 1;
			done++;
			continue;
		}
		if (why[0])
			return 1;
		if (nodes == 2) {
			ctl_recv(&c);
			if (c.type != T_RESULT || c.round != (uint32_t)r) {
				printf("DMAPLANE-CASE killloop FAIL message %u of round %u, the result of round %d expected\n",
				       c.type, c.round, r);
				return 1;
			}
			if (c.why[0]) {
				c.why[sizeof(c.why) - 1] = 0;
				printf("DMAPLANE-CASE killloop/round%d FAIL node 1's counters not zero %d s after the round: %s\n",
				       r, limit, c.why);
				return 1;
			}
			if (c.drain_us / 1e6 > t)
				t = c.drain_us / 1e6;
		}
		total_drain += t;
		if (t > worst)
			worst = t;
		done++;
		if ((r + 1) % 10 == 0)
			printf("# round %d: worst drain so far %.3f s, %.0f s elapsed\n",
			       r + 1, worst, dp_test_now() - t_start);
	}
	printf("# %d rounds in %.0f s; survivors here that noticed by themselves: %d, failed their setup: %d, did not notice: %d\n",
	       done, dp_test_now() - t_start, codes[M_NOTICED], codes[M_SETUP], killed_late);
	if (node == 0) {
		printf("# victims killed in their setup: %d of %d; setup (fork to all members here running) took %.3f s on average\n",
		       setup_kills, done, setups ? setup_time / setups : 0);
		if (nodes == 2)
			printf("# drain time (the later node of each round): worst %.3f s (node 0: %.3f s), mean %.4f s\n",
			       worst, worst_here, done ? total_drain / done : 0);
		else
			printf("# drain time: worst %.3f s, mean %.4f s\n", worst,
			       done ? total_drain / done : 0);
		printf("DMAPLANE-CASE killloop-drain PASS worst drain %.3f s (limit %d s)\n",
		       worst, limit);
	} else {
		printf("# drain time here: worst %.3f s\n", worst_here);
	}
	if (fails)
		printf("DMAPLANE-CASE killloop FAIL %d findings in %d rounds\n", fails, done);
	else
		printf("DMAPLANE-CASE killloop PASS %d rounds, worst drain %.3f s\n", done,
		       node ? worst_here : worst);
	return fails ? 1 : 0;
}

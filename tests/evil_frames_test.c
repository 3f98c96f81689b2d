// SPDX-License-Identifier: GPL-2.0
/*
 * evil_peer's frame generator on the host, under AddressSanitizer and
 * UBSan: every frame of --random SEED --count 500 for a range of seeds
 * (1..2000 by default), built the way run_random() builds them (rnd_peek()
 * then rnd_frame()), sent nowhere.
 *
 * Why: the generator is test code that only runs in the two-VM job
 * (tests/vm/jobs/evil.sh), slow and one seed per run.  A mutation once
 * indexed rts->segs[] by an nsegs read back from a frame an earlier
 * mutation had changed: evil_peer crashed for ~1% of seeds, and only the
 * two-VM run found it.  Here the same code (evil_peer.c included, its
 * main() renamed) runs on a connection made of plain memory, sized as
 * conn_open() sizes it, so that a write beyond the send slots (and their
 * spare one) is an ASan report, and undefined behaviour aborts.
 *
 * Besides memory safety, each frame is checked for what run_random() and
 * send_burst() rely on: 1 to SEND_SLOTS messages, each of at least one
 * byte and within the connection's memory, a known expectation, a peek
 * (rnd_peek()) that builds the very frame rnd_frame() then builds, and a
 * frame that must be dropped for its seq still having a wrong one (two
 * seq mutations once put the right one back: the node rightly kept the
 * connection, and the two-VM run failed for seed 1032478124).
 *
 * Between frames, a made-up node (its own generator, from the seed) does
 * what a real one may: gives credits back or not, sends requests we owe
 * an ACK for, drops the connection (always after a frame that must be
 * dropped), so that the generator sees the states of a real run.
 *
 *   evil_frames_test [FIRST_SEED [LAST_SEED [FRAMES]]]
 *
 * TAP output; exit status 0 when every frame passed.  After a sanitizer
 * report or a crash, a "# " line names the seed and frame, and the exit
 * status is not 0.
 */
#include <limits.h>
#include <signal.h>

#define main evil_main
int main(int argc, char **argv);
#include "evil_peer.c"
#undef main

/* Where the generator is, for a sanitizer's report. */
static volatile uint64_t cur_seed;
static volatile unsigned long cur_frame;
static volatile sig_atomic_t running;

/* From the sanitizers' runtime (<sanitizer/common_interface_defs.h>). */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

/* Name the seed and frame before the process dies, once. */
static void on_death(void)
{
	char s[256];
	int n;

	if (!running)
		return;
	running = 0;
	n = snprintf(s, sizeof(s), "# sanitizer report or crash at seed %llu frame %lu"
		     " (rerun: evil_frames_test %llu; evil_peer --random %llu --count %lu)\n",
		     (unsigned long long)cur_seed, cur_frame, (unsigned long long)cur_seed,
		     (unsigned long long)cur_seed, cur_frame + 1);
	if (n > 0 && write(STDOUT_FILENO, s, (size_t)n) < 0)
		return;
}

/*
 * GCC links UBSan's runtime apart from ASan's, with its own death
 * callbacks: an UBSan report (fatal, -fno-sanitize-recover) aborts
 * instead, and SIGABRT names the seed.  UBSAN_OPTIONS still overrides.
 */
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "abort_on_error=1:print_stacktrace=1";
}

static void on_abort(int sig)
{
	on_death();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* As conn_open() allocates it, without a device: plain memory, fake MRs. */
#define MEMLEN	((size_t)(DMAPLANE_WIRE_RECVS + SEND_SLOTS + 1) * DMAPLANE_WIRE_BUF_SIZE)

static struct ibv_mr fake_mr = { .lkey = 0x1111, .rkey = 0x2222 };
static struct ibv_mr fake_rmr = { .lkey = 0x3333, .rkey = 0x4444 };

static struct conn *fake_conn(void)
{
	struct conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->mem = calloc(1, MEMLEN);
	c->rmem = calloc(1, RMEM_SIZE);
	c->mr = &fake_mr;
	c->rmr = &fake_rmr;
	if (!c->mem || !c->rmem) {
		free(c->mem);
		free(c->rmem);
		free(c);
		return NULL;
	}
	return c;
}

/*
 * A new connection's state, as conn_open() leaves it.  The memory is
 * reused (a fresh 1.6 MB per connection costs most of the run in page
 * faults): the generator clears each slot it fills.
 */
static void fake_conn_reset(struct conn *c)
{
	c->slot = 0;
	c->qp = true;
	c->established = true;
	c->next_seq = 1;
	c->sends = 0;
	c->sends_done = 0;
	c->credits = DMAPLANE_WIRE_CREDITS;
	c->peer_seq = 0;
	c->peer_owed = 0;
	c->peer_reqs = 0;
}

static void fake_conn_free(struct conn *c)
{
	free(c->mem);
	free(c->rmem);
	free(c);
}

static unsigned long nframes, nbursts, nexpect[3], nconns;

/* A number, the whole argument. */
static bool arg_u64(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return *s && !*end && !errno;
}

/* Frame @f of @c (built by rnd_frame()) against what the sender relies on. */
static const char *frame_bad(struct conn *c, const struct rframe *f)
{
	unsigned int k;

	if (f->n < 1 || f->n > SEND_SLOTS)
		return "message count out of 1..SEND_SLOTS";
	if (f->expect > EXP_DROP)
		return "unknown expectation";
	if (!memchr(f->what, 0, sizeof(f->what)))
		return "description not terminated";
	for (k = 0; k < f->n; k++) {
		if (!f->len[k])
			return "empty message";
		if ((size_t)(send_buf(c, k) - c->mem) + f->len[k] > MEMLEN)
			return "message beyond the connection's memory";
	}
	return NULL;
}

/*
 * All frames of @seed; false (a diagnostic printed) when one is wrong.
 * @peek: a copy of a peeked frame's bytes, MEMLEN bytes.
 */
static bool run_seed(struct conn *c, uint64_t seed, unsigned long count, uint8_t *peek)
{
	/* The made-up node's decisions: not the generator's rng_state. */
	uint64_t node = seed ^ 0x6e6f6465ull;
	struct rframe pf, f;
	const char *why;
	unsigned long i;
	unsigned int k;
	size_t off;
	uint64_t r;

	/* --dst, --rkey and --rlen as evil.sh may pass them, or not. */
	r = splitmix64(&node);
	opt.dst_uid = r & 3 ? splitmix64(&node) & ((1ull << DMAPLANE_SRC_NODE_SHIFT) - 1) : 0;
	opt.rkey = r & 4 ? splitmix64(&node) | 1 : 0;
	opt.rlen = r & 8 ? 1 + splitmix64(&node) % (4 * RMEM_SIZE) :
			   1 + splitmix64(&node) % (1ull << 40);

	fake_conn_reset(c);
	nconns++;
	for (i = 0; i < count; i++) {
		/* The seq the node takes for this frame's request. */
		uint64_t want = c->next_seq;

		cur_frame = i;
		/* As run_random(): a peek, then the frame it sends. */
		rnd_peek(c, seed, i, &pf);
		for (k = 0; k < pf.n && k < SEND_SLOTS; k++) {
			off = (size_t)(send_buf(c, k) - c->mem);
			if (off + pf.len[k] <= MEMLEN)
				memcpy(peek + off, c->mem + off, pf.len[k]);
		}
		rnd_frame(c, seed, i, &f);
		why = frame_bad(c, &f);
		if (!why && (strcmp(pf.what, f.what) || pf.expect != f.expect || pf.n != f.n ||
			     pf.request != f.request || memcmp(pf.len, f.len, sizeof(f.len))))
			why = "peeked frame differs from the frame sent";
		for (k = 0; !why && k < f.n; k++) {
			off = (size_t)(send_buf(c, k) - c->mem);
			if (memcmp(peek + off, c->mem + off, f.len[k]))
				why = "peeked bytes differ from the frame's";
		}
		if (!why && f.n == 1 && f.expect == EXP_DROP && strstr(f.what, " seq=") &&
		    !strstr(f.what, "type=") && !strstr(f.what, "byte@") &&
		    !strstr(f.what, "flip") && f.len[0] >= sizeof(struct dmaplane_wire_hdr)) {
			/*
			 * A wrong seq must stay wrong, however many seq
			 * mutations made it (random bytes and a new type may
			 * do anything: those frames are not checked here).
			 */
			const struct dmaplane_wire_hdr *h = (const void *)send_buf(c, 0);

			if (le64toh(h->seq) == (h->type == DMAPLANE_WIRE_ACK ? 0 : want))
				why = "a frame to be dropped for its seq has the right one";
		}
		if (why) {
			diag("seed %llu frame %lu (%s):%s: %s", (unsigned long long)seed, i,
			     expect_names[f.expect <= EXP_DROP ? f.expect : 0], f.what, why);
			return false;
		}
		nframes++;
		nbursts += f.n > 1;
		nexpect[f.expect]++;

		/* What run_random() and send_burst() do with it. */
		if (f.request)
			c->credits -= f.n;
		c->sends += f.n;

		/* The node: a drop (a new connection), or it goes on. */
		r = splitmix64(&node);
		if (f.expect == EXP_DROP || (f.expect == EXP_ANY && r % 2)) {
			fake_conn_reset(c);
			nconns++;
			continue;
		}
		/* Its requests (we owe ACKs), then credits back, or none yet. */
		k = (r >> 8) % 4 ? 0 : 1 + (r >> 16) % 4;
		c->peer_reqs += k;
		c->peer_seq += k;
		c->peer_owed += k;
		if (c->peer_owed >= 8)
			c->peer_owed = 0;	/* send_ack() */
		if ((r >> 24) % 3 == 0 || c->credits <= 0)
			c->credits += (int)((r >> 32) % (DMAPLANE_WIRE_CREDITS - c->credits + 1));
		/* An honest request waits for a credit: run_random() gets one. */
		if (c->credits <= 0 && (r >> 40) % 2)
			c->credits = 1 + (int)((r >> 48) % DMAPLANE_WIRE_CREDITS);
	}
	return true;
}

int main(int argc, char **argv)
{
	uint64_t first = 1, last = 2000, count = 500, seed;
	long long start = now_ms();
	struct conn *c;
	uint8_t *peek;
	bool ok = true;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 4 || (argc > 1 && !arg_u64(argv[1], &first)))
		goto usage;
	if (argc == 2)
		last = first;
	if ((argc > 2 && !arg_u64(argv[2], &last)) || (argc > 3 && !arg_u64(argv[3], &count)))
		goto usage;
	if (last < first || !count || count > ULONG_MAX)
		goto usage;

	printf("TAP version 13\n1..1\n");
	peek = calloc(1, MEMLEN);
	c = fake_conn();
	if (!peek || !c) {
		printf("not ok 1 evil-frames # out of memory\n");
		return 1;
	}
	if (__sanitizer_set_death_callback)
		__sanitizer_set_death_callback(on_death);
	else
		diag("not built with a sanitizer: memory errors may go unnoticed");
	signal(SIGABRT, on_abort);
	/* Values drawn from the seed, never from getrandom(). */
	rng_seeded = true;
	running = 1;
	for (seed = first; ok; seed++) {
		cur_seed = seed;
		ok = run_seed(c, seed, (unsigned long)count, peek);
		if (seed == last)
			break;
	}
	running = 0;
	fake_conn_free(c);
	free(peek);
	diag("seeds %llu..%llu, %llu frames each: %lu frames (%lu stay, %lu any, %lu drop;"
	     " %lu bursts) on %lu connections, %lld ms",
	     (unsigned long long)first, (unsigned long long)cur_seed,
	     (unsigned long long)count, nframes,
	     nexpect[EXP_STAY], nexpect[EXP_ANY], nexpect[EXP_DROP], nbursts, nconns,
	     now_ms() - start);
	printf("%s 1 evil-frames\n", ok ? "ok" : "not ok");
	return ok ? 0 : 1;
usage:
	fprintf(stderr, "usage: evil_frames_test [FIRST_SEED [LAST_SEED [FRAMES]]]\n"
		"  default: seeds 1..2000, 500 frames each; LAST_SEED defaults to FIRST_SEED\n");
	return 2;
}

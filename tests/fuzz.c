// SPDX-License-Identifier: GPL-2.0
/*
 * fuzz: a random-ioctl fuzzer for /dev/dmaplane.
 *
 * Usage: fuzz -n CALLS [-s SEED] [-t THREADS] [-u UID[:GID]] [-q] [-v] [-L]
 *             [-d DEVICE]
 *
 * -u drops to that user (and group) before anything is opened; -q prints
 * no progress; -v adds the time each kind of operation took; -d fuzzes
 * another device node (e.g. /dev/null, to test the fuzzer itself).
 *
 * A few endpoints are opened and connected to each other (EP_SETUP,
 * GETNAME, AV_INSERT of each other's names), then THREADS threads issue
 * CALLS random operations between them, all on the same file descriptors:
 * every ioctl of the ABI with mostly valid-looking arguments that are
 * sometimes mutated (flags, padding, handles, sizes), command numbers
 * with wrong size, direction or type bits and random ones, bad pointers
 * (NULL, unmapped, kernel, non-canonical, misaligned, read-only, ending
 * at a guard page) for the argument and for the buffers, operation
 * arrays and iovecs inside it; sends, receives, puts and gets that match
 * and move data; mmap of completion rings, arenas and dma-bufs, partial
 * munmap, mremap; dma-buf export and import; endpoints replaced by fresh
 * ones (dup2 over the same number, so a number always names a dmaplane
 * file); munmap/madvise/mprotect of registered memory; fork()ed children
 * that use the inherited descriptors and exit or are killed; children
 * that get a descriptor over SCM_RIGHTS and use it; with liburing, the
 * same submissions through io_uring (IORING_OP_URING_CMD on a dmaplane
 * descriptor or on another file, with mutated command numbers and command
 * areas, inline or forced to io-wq with IOSQE_ASYNC, from a forked child
 * on its own ring: -EPERM).
 *
 * Every ioctl must return 0 or -1 with an errno; the run fails (exit 1)
 * only when that does not hold, when the fuzzer's own child dies of
 * anything but SIGKILL, or (exit 2) when /dev/dmaplane cannot be opened
 * any more.  A histogram of errnos per command is printed at the end.
 *
 * The operations of each thread are drawn from a xorshift generator
 * seeded from SEED and the thread's index by splitmix64; children get
 * theirs from their parent's.  SEED is printed first.  A run with the
 * same SEED and THREADS repeats the same choices for as long as the
 * kernel answers the same, which threads and children racing on the
 * same endpoints make depend on timing: -t 1 comes closest.  -L prints
 * every operation (thread, number, name) before it runs, to find the
 * one that brought the kernel down.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/dma-heap.h>
#include <linux/dmaplane.h>
#if __has_include(<liburing.h>)
#include <liburing.h>
#define FUZZ_URING 1
#endif

#define PG		4096UL
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#define NSLOTS		6	/* endpoints open at once */
#define NH		16	/* handles remembered per kind and endpoint */
#define NMAPS		64	/* mappings remembered */
#define NDMABUFS	12	/* dma-buf fds held */
#define NRKEYS		32	/* remote keys remembered */
#define NSTALE		8	/* names of replaced endpoints */
#define MAXKIDS		4	/* children alive at once */
#define POOL_PAGES	256	/* the buffer pool */
#define ARG_BYTES	(2 * PG)
#define OPS_MAX		300
#define OPS_BYTES	(6 * PG)
#define IOV_TOTAL	2048
#define AUTH_KEY	0x5eed5eed5eed5eedULL

/* Histogram rows: the 15 commands, then these; children's calls twice. */
#define NCMDS		15
enum { K_MUTATED = NCMDS, K_RANDOM, K_MMAP, K_URING, NKINDS };
#define NERR		136	/* column 0: success; 1..134: errno; 135: other */

_Static_assert(OPS_MAX * sizeof(struct dmaplane_op) <= OPS_BYTES, "OPS_BYTES");

static const unsigned long cmds[NCMDS] = {
	DMAPLANE_IOCTL_GET_INFO, DMAPLANE_IOCTL_ARENA_CREATE,
	DMAPLANE_IOCTL_ARENA_DESTROY, DMAPLANE_IOCTL_MR_REG,
	DMAPLANE_IOCTL_MR_DEREG, DMAPLANE_IOCTL_MR_QUERY,
	DMAPLANE_IOCTL_DMABUF_EXPORT, DMAPLANE_IOCTL_MR_IMPORT_DMABUF,
	DMAPLANE_IOCTL_EP_SETUP, DMAPLANE_IOCTL_GETNAME,
	DMAPLANE_IOCTL_AV_INSERT, DMAPLANE_IOCTL_AV_REMOVE,
	DMAPLANE_IOCTL_SUBMIT, DMAPLANE_IOCTL_PROBE, DMAPLANE_IOCTL_CANCEL,
};

static const char *const kind_names[NKINDS] = {
	"GET_INFO", "ARENA_CREATE", "ARENA_DESTROY", "MR_REG", "MR_DEREG",
	"MR_QUERY", "DMABUF_EXPORT", "MR_IMPORT_DMABUF", "EP_SETUP",
	"GETNAME", "AV_INSERT", "AV_REMOVE", "SUBMIT", "PROBE", "CANCEL",
	"mutated-cmd", "random-cmd", "mmap", "uring_cmd",
};

static const char *const op_names[] = {
	[DMAPLANE_OP_SEND] = "SEND", [DMAPLANE_OP_RECV] = "RECV",
	[DMAPLANE_OP_PUT] = "PUT", [DMAPLANE_OP_GET] = "GET",
};

struct rng {
	uint64_t s;
};

struct slot {
	int fd;			/* the same number for the whole run */
	bool setup;
	bool named;
	struct dmaplane_name name;
	uint64_t ring_size;
	void *ring;		/* mapped ring and consumer page, or NULL */
	void *head;
	uint32_t av[NSLOTS];	/* address handle of each other slot */
	bool av_ok[NSLOTS];
	uint32_t arena[NH];
	uint64_t arena_size[NH];
	uint64_t arena_off[NH];
	uint32_t mr[NH];
	uint32_t claim[NH];
	uint64_t rkey[NH];	/* remote keys of its regions */
	unsigned int narena, nmr, nclaim, nrkey;
};

enum map_kind { M_RING, M_HEAD, M_ARENA, M_DMABUF, M_OTHER };

struct map {
	void *addr;
	size_t len;
	int slot;
	int kind;
};

struct tctx {
	struct rng r;
	int id;
	bool sane;		/* this call: valid arguments only */
	uint8_t *arg;		/* ARG_BYTES, then a guard page */
	uint8_t *ro;		/* a read-only view of ro_rw */
	uint8_t *ro_rw;
	struct dmaplane_op *ops;	/* OPS_BYTES, then a guard page */
	struct iovec *iov;	/* IOV_TOTAL, then a guard page */
	unsigned int iov_used;
	unsigned long calls;
#ifdef FUZZ_URING
	struct io_uring ring;	/* this thread's (or child's own) ring */
	bool ring_ok;
	pid_t ring_pid;		/* the process that set it up */
#endif
};

static struct slot slots[NSLOTS];
static struct map maps[NMAPS];
static int dmabufs[NDMABUFS];
static uint64_t rkeys[NRKEYS];
static unsigned int nrkeys;
static struct dmaplane_name stale[NSTALE];
static unsigned int nstale;
static pid_t kids[MAXKIDS];
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static bool single;		/* a child: one thread, no locking */
static uint8_t *pool, *pool_ro, *pool_hole;
static int heap_fd = -1;	/* /dev/dma_heap/system, a foreign exporter */
static uint64_t seed;
static unsigned long calls_per_thread;
static bool quiet, verbose, log_ops;
static struct rng reap_rng;	/* timing-dependent choices */
static const char *dev = "/dev/" DMAPLANE_DEVICE_NAME;

/* Shared with children (MAP_SHARED), updated atomically. */
struct shared {
	unsigned long hist[2 * NKINDS][NERR];
	unsigned long impossible;
	unsigned long faults;	/* our own SIGSEGV/SIGBUS, caught */
	unsigned long forks, scms, reopens, maps, churns, kid_calls;
	unsigned long op_ns[32], op_n[32];	/* time per operation (-v) */
	unsigned long cqes[DMAPLANE_OP_GET + 1][NERR];	/* completions seen */
};

static struct shared *sh;

/*
 * Volatile, and fenced around each guarded access: the compiler must not
 * drop the store before an inlined memcpy as dead (it did: the handler
 * then found no jump buffer and the fuzzer died of its own SIGSEGV).
 */
static __thread sigjmp_buf *volatile fault_jmp;

#define inc(x) __atomic_fetch_add(&(x), 1, __ATOMIC_RELAXED)

static void lock(void)
{
	if (!single)
		pthread_mutex_lock(&g_lock);
}

static void unlock(void)
{
	if (!single)
		pthread_mutex_unlock(&g_lock);
}

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void rng_init(struct rng *r, uint64_t s)
{
	r->s = splitmix(&s) | 1;
}

/* xorshift64* */
static uint64_t rnd(struct rng *r)
{
	uint64_t x = r->s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->s = x;
	return x * 0x2545f4914f6cdd1dULL;
}

static uint64_t below(struct rng *r, uint64_t n)
{
	return n ? rnd(r) % n : 0;
}

static bool chance(struct rng *r, unsigned int percent)
{
	return below(r, 100) < percent;
}

/* Values that make kernels unhappy. */
static uint64_t interesting(struct rng *r)
{
	static const uint64_t v[] = {
		0, 1, 2, 7, 8, 15, 16, 255, 256, 4095, 4096, 4097, 65535,
		65536, 0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ULL,
		0x7fffffffffffffffULL, 0x8000000000000000ULL, ~0ULL,
		~0ULL - 4095, 1ULL << 31, 1ULL << 47, 2 << 20,
	};

	return v[below(r, ARRAY_SIZE(v))];
}

/* Random changes to a structure: fields, flags, padding, anything. */
static void mutate(struct rng *r, void *p, size_t len)
{
	uint8_t *b = p;
	unsigned int n = 1 + below(r, 3);
	uint64_t v;
	size_t off;

	if (!len)
		return;
	while (n--) {
		switch (below(r, 4)) {
		case 0:
			b[below(r, len)] ^= 1 << below(r, 8);
			break;
		case 1:
			b[below(r, len)] = rnd(r);
			break;
		case 2:
			if (len < 4)
				break;
			off = below(r, len / 4) * 4;
			v = interesting(r);
			memcpy(b + off, &v, 4);
			break;
		default:
			if (len < 8)
				break;
			off = below(r, len / 8) * 8;
			v = chance(r, 50) ? interesting(r) : rnd(r);
			memcpy(b + off, &v, 8);
			break;
		}
	}
}

static void fill_random(struct rng *r, void *p, size_t len)
{
	uint8_t *b = p;

	while (len--)
		*b++ = rnd(r);
}

/* ---- our own faults: reading mapped rings that others unmap ---- */

static void on_fault(int sig)
{
	if (fault_jmp)
		siglongjmp(*fault_jmp, 1);
	/* A fault outside a guarded access is a bug of the fuzzer: die. */
	signal(sig, SIG_DFL);
}

enum guard { GUARD_LOAD, GUARD_STORE, GUARD_COPY };

/*
 * One access to memory that another thread may unmap at any moment: a
 * fault there is counted and reported as false.  The jump buffer lives in
 * this frame, so every guarded access goes through here.
 */
static bool guarded(enum guard how, void *dst, const void *src, size_t len)
{
	sigjmp_buf jb;

	if (sigsetjmp(jb, 1)) {
		fault_jmp = NULL;
		inc(sh->faults);
		return false;
	}
	fault_jmp = &jb;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	switch (how) {
	case GUARD_LOAD:
		*(uint32_t *)dst = __atomic_load_n((const volatile uint32_t *)src,
						   __ATOMIC_ACQUIRE);
		break;
	case GUARD_STORE:
		__atomic_store_n((volatile uint32_t *)dst, *(const uint32_t *)src,
				 __ATOMIC_RELEASE);
		break;
	case GUARD_COPY:
		memcpy(dst, src, len);
		break;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	fault_jmp = NULL;
	return true;
}

static bool guarded_u32(volatile uint32_t *p, uint32_t *val, bool write)
{
	return write ? guarded(GUARD_STORE, (void *)p, val, sizeof(*val)) :
		       guarded(GUARD_LOAD, val, (const void *)p, sizeof(*val));
}

static bool guarded_copy(void *dst, const void *src, size_t len)
{
	return guarded(GUARD_COPY, dst, src, len);
}

/* ---- bookkeeping ---- */

static void count(int kind, long ret, int err, unsigned long cmd)
{
	int col;

	if (ret == 0) {
		col = 0;
	} else if (ret == -1 && err > 0 && err < NERR - 1) {
		col = err;
	} else {
		col = NERR - 1;
		inc(sh->impossible);
		fprintf(stderr,
			"fuzz: IMPOSSIBLE: ioctl(0x%lx) returned %ld errno %d (seed=%" PRIu64 ")\n",
			cmd, ret, err, seed);
	}
	inc(sh->hist[kind + (single ? NKINDS : 0)][col]);
}

static int cmd_kind(unsigned long cmd)
{
	unsigned int i;

	for (i = 0; i < NCMDS; i++)
		if (cmd == cmds[i])
			return i;
	if (_IOC_TYPE(cmd) == DMAPLANE_IOCTL_TYPE)
		return K_MUTATED;
	return K_RANDOM;
}

static long do_ioctl(int fd, unsigned long cmd, void *arg)
{
	long ret = ioctl(fd, cmd, arg);
	int err = ret == -1 ? errno : 0;

	count(cmd_kind(cmd), ret, err, cmd);
	errno = err;
	return ret;
}

static void fatal_vanished(const char *what)
{
	fprintf(stderr, "fuzz: IMPOSSIBLE: %s: %s (seed=%" PRIu64 ")\n", what,
		strerror(errno), seed);
	exit(2);
}

static int open_dev(struct rng *r)
{
	int fd = open(dev, O_RDWR | (chance(r, 50) ? O_CLOEXEC : 0));

	if (fd < 0 && (errno == ENOENT || errno == ENODEV || errno == ENXIO))
		fatal_vanished(dev);
	return fd;
}

static void add_rkey(int s, uint64_t rkey)
{
	lock();
	rkeys[nrkeys++ % NRKEYS] = rkey;
	slots[s].rkey[slots[s].nrkey++ % NH] = rkey;
	unlock();
}

/* Remember a mapping; unmap it at once when there is no room. */
static void add_map(void *addr, size_t len, int slot, int kind)
{
	unsigned int i;

	lock();
	for (i = 0; i < NMAPS; i++) {
		if (!maps[i].addr) {
			maps[i] = (struct map){ addr, len, slot, kind };
			if (kind == M_RING && !slots[slot].ring)
				slots[slot].ring = addr;
			if (kind == M_HEAD && !slots[slot].head)
				slots[slot].head = addr;
			unlock();
			inc(sh->maps);
			return;
		}
	}
	unlock();
	munmap(addr, len);
}

/* Take mapping @i out of the books; the caller unmaps it.  Lock held. */
static struct map take_map(unsigned int i)
{
	struct map m = maps[i];
	int s = m.slot;

	if (s >= 0 && slots[s].ring == m.addr)
		slots[s].ring = NULL;
	if (s >= 0 && slots[s].head == m.addr)
		slots[s].head = NULL;
	maps[i].addr = NULL;
	return m;
}

static void reset_slot(int s)
{
	int fd = slots[s].fd;
	unsigned int i;

	if (slots[s].named)
		stale[nstale++ % NSTALE] = slots[s].name;
	memset(&slots[s], 0, sizeof(slots[s]));
	slots[s].fd = fd;
	for (i = 0; i < NSLOTS; i++)
		slots[i].av_ok[s] = false;
}

static int pick_slot(struct tctx *t)
{
	return below(&t->r, NSLOTS);
}

static struct slot snap_slot(int s)
{
	struct slot copy;

	lock();
	copy = slots[s];
	unlock();
	return copy;
}

static uint32_t pick_handle(struct tctx *t, const uint32_t *h, unsigned int n)
{
	if (!n || (!t->sane && chance(&t->r, 10)))
		return chance(&t->r, 50) ? interesting(&t->r) : rnd(&t->r);
	return h[below(&t->r, n < NH ? n : NH)];
}

static void push_handle(uint32_t *h, unsigned int *n, uint32_t v)
{
	lock();
	h[(*n)++ % NH] = v;
	if (*n >= 2 * NH)
		*n -= NH;
	unlock();
}

/* ---- argument generation ---- */

/* A pointer for an embedded buffer, and a length to go with it. */
static void gen_buf(struct tctx *t, __u64 *addr, __u64 *len, bool big)
{
	struct rng *r = &t->r;
	uint64_t a, l, room;
	unsigned int i, p;

	/* The length first. */
	p = below(r, 100);
	if (p < 30)
		l = below(r, 64);
	else if (p < 60)
		l = below(r, PG + 1);
	else if (p < 85 || !big)
		l = below(r, 64 * 1024);
	else if (p < 97)
		l = below(r, 256 * 1024);	/* rendezvous sizes */
	else if (p < 98)
		l = below(r, POOL_PAGES * PG);
	else
		l = interesting(r);

	p = t->sane ? below(r, 75) : below(r, 100);
	if (p < 60) {
		a = (uintptr_t)pool + below(r, POOL_PAGES * PG);
		room = (uintptr_t)pool + POOL_PAGES * PG - a;
		if (l > room && (t->sane || chance(r, 70)))
			l = room;
	} else if (p < 75) {
		/* A mapping of ours: an arena, a dma-buf, a ring. */
		a = 0;
		lock();
		for (i = below(r, NMAPS); i < NMAPS; i++) {
			if (maps[i].addr) {
				a = (uintptr_t)maps[i].addr + below(r, maps[i].len);
				room = (uintptr_t)maps[i].addr + maps[i].len - a;
				if (l > room)
					l = room;
				break;
			}
		}
		unlock();
		if (!a)
			a = (uintptr_t)pool;
	} else if (p < 80) {
		a = (uintptr_t)pool_ro + below(r, PG);
	} else if (p < 84) {
		a = (uintptr_t)pool_hole + below(r, PG);
	} else if (p < 87) {
		/* Up to the end of the pool and into the read-only page. */
		a = (uintptr_t)pool + POOL_PAGES * PG - below(r, 64);
	} else if (p < 90) {
		a = 0;
	} else if (p < 93) {
		a = 0xffff888000000000ULL + below(r, 1 << 20);
	} else if (p < 95) {
		a = 0x0000800000000000ULL - below(r, 2) * PG;
	} else if (p < 97) {
		a = (uintptr_t)pool + 1 + below(r, 7);
	} else {
		a = chance(r, 50) ? interesting(r) : rnd(r);
	}
	*addr = a;
	*len = l;
}

/* A command number: usually @good, otherwise one near it or random. */
static unsigned long gen_cmd(struct tctx *t, unsigned long good)
{
	struct rng *r = &t->r;
	unsigned long cmd;
	unsigned int p = below(r, 100);

	if (t->sane || p < 85)
		return good;
	if (p < 90)
		return _IOC(_IOC_DIR(good), _IOC_TYPE(good), _IOC_NR(good),
			    chance(r, 50) ? below(r, 512) : below(r, _IOC_SIZEMASK + 1));
	if (p < 93)
		return _IOC(below(r, 4), _IOC_TYPE(good), _IOC_NR(good), _IOC_SIZE(good));
	if (p < 95)
		return _IOC(_IOC_DIR(good), 'A' + below(r, 58), _IOC_NR(good), _IOC_SIZE(good));
	if (p < 98)
		return _IOC(_IOC_DIR(good), _IOC_TYPE(good),
			    (_IOC_NR(good) + below(r, 41) - 20) & 0xff, _IOC_SIZE(good));
	cmd = (uint32_t)rnd(r);
	return cmd;
}

/*
 * Generic ioctls the VFS answers before any driver: never send these,
 * they are not what is tested and some change the device node.
 */
static bool vfs_cmd(unsigned long cmd)
{
	unsigned int type = _IOC_TYPE(cmd);

	return type == 'T' || type == 'f' || type == 0x94 || type == 'X';
}

/*
 * Put the argument structure where the kernel will read it and return
 * the pointer to pass; *out is where to read the results from (NULL when
 * the pointer is bad).
 */
static void *place_arg(struct tctx *t, const void *st, size_t len, void **out)
{
	struct rng *r = &t->r;
	unsigned int p = t->sane ? below(r, 80) : below(r, 100);
	size_t extra = below(r, 64);
	uint8_t *dst;

	*out = NULL;
	if (p < 50) {
		dst = t->arg + below(r, PG / 8) * 8;
		memcpy(dst, st, len);
		fill_random(r, dst + len, extra);
		*out = dst;
		return dst;
	}
	if (p < 80) {
		/* The structure ends at the guard page. */
		dst = t->arg + ARG_BYTES - len;
		memcpy(dst, st, len);
		*out = dst;
		return dst;
	}
	if (p < 85) {
		/* Cut short by the guard page. */
		if (!len)
			return t->arg + ARG_BYTES;
		extra = 1 + below(r, len);
		dst = t->arg + ARG_BYTES - len + extra;
		memcpy(dst, st, len - extra);
		return dst;
	}
	if (p < 90) {
		memcpy(t->ro_rw, st, len);
		*out = t->ro;
		return t->ro;
	}
	if (p < 92)
		return NULL;
	if (p < 94)
		return (void *)(uintptr_t)(0xffff888000000000ULL + below(r, PG) * 8);
	if (p < 96)
		return pool_hole;
	if (p < 98) {
		dst = t->arg + 1 + below(r, 7);
		memcpy(dst, st, len);
		*out = dst;
		return dst;
	}
	return (void *)(uintptr_t)rnd(r);
}

/*
 * Issue @good (or a command made from it) with @st, @len bytes, as its
 * argument.  Returns true when @good itself succeeded; @st then holds the
 * kernel's answer.
 */
static bool issue(struct tctx *t, int fd, unsigned long good, void *st, size_t len)
{
	unsigned long cmd;
	void *arg, *out;
	long ret;

	if (!t->sane && chance(&t->r, 5))
		fill_random(&t->r, st, len);
	else if (!t->sane && chance(&t->r, 40))
		mutate(&t->r, st, len);
	do
		cmd = gen_cmd(t, good);
	while (vfs_cmd(cmd));
	arg = place_arg(t, st, len, &out);
	ret = do_ioctl(fd, cmd, arg);
	if (ret || cmd != good || !out)
		return false;
	memcpy(st, out, len);
	return true;
}

/* ---- the operations ---- */

static void op_get_info(struct tctx *t)
{
	struct dmaplane_info info = { 0 };

	issue(t, slots[pick_slot(t)].fd, DMAPLANE_IOCTL_GET_INFO, &info, sizeof(info));
}

static uint32_t gen_entries(struct tctx *t)
{
	static const uint32_t v[] = { 0, 1, 2, 16, 64, 256, 1024, 4096 };

	if (!t->sane && chance(&t->r, 10))
		return chance(&t->r, 50) ? interesting(&t->r) : 65536ULL << below(&t->r, 2);
	return v[below(&t->r, ARRAY_SIZE(v))];
}

static void map_ring(struct tctx *t, int s, const struct dmaplane_ep_setup *su)
{
	void *p;

	p = mmap(NULL, su->ring_size, PROT_READ, MAP_SHARED, slots[s].fd,
		 DMAPLANE_CQ_RING_OFFSET);
	count(K_MMAP, p == MAP_FAILED ? -1 : 0, errno, 0);
	if (p != MAP_FAILED)
		add_map(p, su->ring_size, s, M_RING);
	p = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, slots[s].fd,
		 DMAPLANE_CQ_HEAD_OFFSET);
	count(K_MMAP, p == MAP_FAILED ? -1 : 0, errno, 0);
	if (p != MAP_FAILED)
		add_map(p, PG, s, M_HEAD);
	(void)t;
}

static void op_getname_slot(struct tctx *t, int s)
{
	struct dmaplane_name name = { 0 };

	if (!issue(t, slots[s].fd, DMAPLANE_IOCTL_GETNAME, &name, sizeof(name)))
		return;
	lock();
	slots[s].name = name;
	slots[s].named = true;
	unlock();
}

static void op_ep_setup_slot(struct tctx *t, int s)
{
	struct dmaplane_ep_setup su = { 0 };

	su.auth_key = chance(&t->r, 80) ? 0 : chance(&t->r, 70) ? AUTH_KEY : rnd(&t->r);
	su.cq_entries = gen_entries(t);
	if (!issue(t, slots[s].fd, DMAPLANE_IOCTL_EP_SETUP, &su, sizeof(su)))
		return;
	lock();
	slots[s].setup = true;
	slots[s].ring_size = su.ring_size;
	unlock();
	if (t->sane || chance(&t->r, 70))
		map_ring(t, s, &su);
	op_getname_slot(t, s);
}

static void op_ep_setup(struct tctx *t)
{
	op_ep_setup_slot(t, pick_slot(t));
}

static void op_getname(struct tctx *t)
{
	op_getname_slot(t, pick_slot(t));
}

static void op_av_insert_pair(struct tctx *t, int s, int peer)
{
	struct dmaplane_av_insert av = { 0 };
	unsigned int p = below(&t->r, 100);

	lock();
	if (p < 80 || !nstale)
		av.name = slots[peer].name;
	else
		av.name = stale[below(&t->r, nstale < NSTALE ? nstale : NSTALE)];
	unlock();
	if (!t->sane && chance(&t->r, 10))
		av.name.ep_uid = chance(&t->r, 50) ? rnd(&t->r) : av.name.ep_uid + 1;
	if (!t->sane && chance(&t->r, 5))
		av.name.node_id = rnd(&t->r);
	if (!issue(t, slots[s].fd, DMAPLANE_IOCTL_AV_INSERT, &av, sizeof(av)))
		return;
	lock();
	slots[s].av[peer] = av.handle;
	slots[s].av_ok[peer] = true;
	unlock();
}

static void op_av_insert(struct tctx *t)
{
	op_av_insert_pair(t, pick_slot(t), pick_slot(t));
}

static uint32_t pick_av(struct tctx *t, const struct slot *s)
{
	unsigned int i, start = below(&t->r, NSLOTS);

	if (!t->sane && chance(&t->r, 10))
		return chance(&t->r, 50) ? DMAPLANE_AV_ANY : rnd(&t->r);
	for (i = 0; i < NSLOTS; i++)
		if (s->av_ok[(start + i) % NSLOTS])
			return s->av[(start + i) % NSLOTS];
	return below(&t->r, 8);
}

static void op_av_remove(struct tctx *t)
{
	int s = pick_slot(t);
	struct slot c = snap_slot(s);
	struct dmaplane_handle_arg h = { 0 };

	/* Rarely: addresses are what makes messages move. */
	if (chance(&t->r, 70))
		h.handle = below(&t->r, 64) + 1000;
	else
		h.handle = pick_av(t, &c);
	issue(t, c.fd, DMAPLANE_IOCTL_AV_REMOVE, &h, sizeof(h));
}

static uint64_t pick_rkey(struct tctx *t)
{
	uint64_t k;

	lock();
	k = nrkeys ? rkeys[below(&t->r, nrkeys < NRKEYS ? nrkeys : NRKEYS)] : 0;
	unlock();
	if (!nrkeys || (!t->sane && chance(&t->r, 10)))
		k = rnd(&t->r);
	return k;
}

static void gen_iov(struct tctx *t, struct dmaplane_op *op)
{
	struct rng *r = &t->r;
	unsigned int n, i;
	struct iovec *v;
	__u64 a, l;

	n = 1 + below(r, 8);
	if (!t->sane && chance(r, 10))
		n = chance(r, 50) ? below(r, 1100) : interesting(r);
	v = t->iov + t->iov_used;
	if (n <= IOV_TOTAL - t->iov_used) {
		for (i = 0; i < n; i++) {
			gen_buf(t, &a, &l, false);
			v[i].iov_base = (void *)(uintptr_t)a;
			v[i].iov_len = l;
		}
		t->iov_used += n;
	} else {
		/* Runs into the guard page. */
		v = t->iov + IOV_TOTAL - below(r, 4);
	}
	op->addr = (uintptr_t)v;
	op->len = n;
	if (!t->sane && chance(r, 10))
		gen_buf(t, &op->addr, &l, false);
}

static void gen_op(struct tctx *t, const struct slot *s, struct dmaplane_op *op)
{
	static const uint8_t opcodes[] = {
		DMAPLANE_OP_SEND, DMAPLANE_OP_SEND, DMAPLANE_OP_SEND,
		DMAPLANE_OP_RECV, DMAPLANE_OP_RECV, DMAPLANE_OP_RECV,
		DMAPLANE_OP_PUT, DMAPLANE_OP_GET,
	};
	struct rng *r = &t->r;
	unsigned int i;

	memset(op, 0, sizeof(*op));
	op->opcode = opcodes[below(r, sizeof(opcodes))];
	if (!t->sane && chance(r, 5))
		op->opcode = rnd(r);
	op->ctx = below(r, 16);
	switch (op->opcode) {
	case DMAPLANE_OP_RECV:
		op->tag = below(r, 4);
		op->ignore = chance(r, 50) ? ~0ULL : 0;
		op->peer = chance(r, 50) ? DMAPLANE_AV_ANY : pick_av(t, s);
		if (s->nclaim && chance(r, 10)) {
			op->flags = DMAPLANE_OP_F_CLAIMED;
			op->peer = pick_handle(t, s->claim, s->nclaim);
			op->tag = 0;
			op->ignore = 0;
		}
		break;
	case DMAPLANE_OP_SEND:
		op->tag = below(r, 4);
		op->peer = pick_av(t, s);
		break;
	default:
		op->peer = pick_av(t, s);
		op->rkey = pick_rkey(t);
		/* Mostly a key of the region of the peer addressed. */
		for (i = 0; i < NSLOTS; i++) {
			if (!s->av_ok[i] || s->av[i] != op->peer)
				continue;
			lock();
			if (slots[i].nrkey && chance(r, 80))
				op->rkey = slots[i].rkey[below(r, slots[i].nrkey < NH ?
							  slots[i].nrkey : NH)];
			unlock();
			break;
		}
		if (chance(r, 50))
			op->roffset = below(r, 256);
		else if (chance(r, 60))
			op->roffset = below(r, 4) * PG + below(r, 64);
		else
			op->roffset = chance(r, 50) ? below(r, 1 << 22) : interesting(r);
		break;
	}
	if ((op->opcode == DMAPLANE_OP_SEND || op->opcode == DMAPLANE_OP_RECV) &&
	    !(op->flags & DMAPLANE_OP_F_CLAIMED) && chance(r, 15)) {
		op->flags |= DMAPLANE_OP_F_IOV;
		gen_iov(t, op);
	} else {
		gen_buf(t, &op->addr, &op->len, true);
		/* Mostly a receive of up to 8 bytes, sometimes larger. */
		if (op->opcode == DMAPLANE_OP_RECV && chance(r, 15)) {
			op->flags |= DMAPLANE_OP_F_INLINE;
			if (chance(r, 90))
				op->len = below(r, DMAPLANE_CQE_INLINE_MAX + 1);
		}
	}
	if (!t->sane && chance(r, 10))
		mutate(r, op, sizeof(*op));
}

/*
 * A batch for SUBMIT (ioctl or io_uring command): mostly 1 to 8
 * operations (sometimes up to 300, or an "interesting" count, of which
 * OPS_MAX are built), at the start of the array area or ending at its
 * guard page.  *@ops_arg is the array's address, sometimes a bad one.
 * Returns the count to pass.
 */
static uint64_t gen_batch(struct tctx *t, const struct slot *c, __u64 *ops_arg)
{
	struct rng *r = &t->r;
	struct dmaplane_op *ops;
	uint64_t nr, i, built;

	nr = 1 + below(r, 8);
	if (!t->sane && chance(r, 10))
		nr = chance(r, 50) ? below(r, 300) : interesting(r);
	built = nr < OPS_MAX ? nr : OPS_MAX;
	ops = chance(r, 50) ? t->ops : t->ops + OPS_MAX - built;
	t->iov_used = 0;
	for (i = 0; i < built; i++)
		gen_op(t, c, &ops[i]);
	*ops_arg = (uintptr_t)ops;
	if (!t->sane && chance(r, 10)) {
		__u64 len;

		gen_buf(t, ops_arg, &len, false);
	}
	return nr;
}

static void op_submit(struct tctx *t)
{
	int s = pick_slot(t);
	struct slot c = snap_slot(s);
	struct dmaplane_submit sub = { 0 };

	sub.nr = gen_batch(t, &c, &sub.ops);
	issue(t, c.fd, DMAPLANE_IOCTL_SUBMIT, &sub, sizeof(sub));
}

#ifdef FUZZ_URING
/*
 * The SUBMIT of op_submit() as an io_uring command: on a dmaplane
 * descriptor (sometimes another file's), with the command number and the
 * 16-byte command area mutated or random, sometimes forced to an io-wq
 * worker.  The CQE's res counts like an ioctl's result.  A forked child
 * sets up a ring of its own (the parent's is shared memory it must not
 * touch); its submissions on the inherited endpoints must get -EPERM.
 */
static void op_uring(struct tctx *t)
{
	struct rng *r = &t->r;
	int s = pick_slot(t);
	struct slot c = snap_slot(s);
	struct dmaplane_uring_submit cmd = { 0 };
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	int fd = c.fd, ret, res;
	__u32 cmd_op = DMAPLANE_URING_CMD_SUBMIT;

	if (t->ring_ok && t->ring_pid != getpid())
		t->ring_ok = false;	/* inherited: not ours */
	if (!t->ring_ok) {
		if (io_uring_queue_init(4, &t->ring, 0))
			return;
		t->ring_ok = true;
		t->ring_pid = getpid();
	}
	cmd.nr = gen_batch(t, &c, &cmd.ops);
	cmd.op_size = sizeof(struct dmaplane_op);
	if (!t->sane) {
		if (chance(r, 20))
			mutate(r, &cmd, sizeof(cmd));
		if (chance(r, 5))
			fd = chance(r, 50) && heap_fd >= 0 ? heap_fd : 0;
	}
	sqe = io_uring_get_sqe(&t->ring);
	if (!sqe)
		return;
	if (!t->sane && chance(r, 10))
		cmd_op = chance(r, 50) ? gen_cmd(t, DMAPLANE_URING_CMD_SUBMIT) : rnd(r);
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_URING_CMD;
	sqe->fd = fd;
	sqe->cmd_op = cmd_op;
	memcpy(sqe->cmd, &cmd, sizeof(cmd));
	if (chance(r, 30))
		sqe->flags |= IOSQE_ASYNC;
	ret = io_uring_submit_and_wait(&t->ring, 1);
	if (ret < 0)
		return;
	if (io_uring_wait_cqe(&t->ring, &cqe))
		return;
	res = cqe->res;
	io_uring_cqe_seen(&t->ring, cqe);
	if (fd != c.fd)
		return;		/* not ours to count: another file's answer */
	count(K_URING, res < 0 ? -1 : 0, res < 0 ? -res : 0, cmd_op);
}
#endif

static void op_probe(struct tctx *t)
{
	int s = pick_slot(t);
	struct slot c = snap_slot(s);
	struct dmaplane_probe pr = { 0 };

	pr.peer = chance(&t->r, 50) ? DMAPLANE_AV_ANY : pick_av(t, &c);
	pr.flags = chance(&t->r, 40) ? DMAPLANE_PROBE_CLAIM : 0;
	pr.tag = below(&t->r, 4);
	pr.ignore = chance(&t->r, 50) ? ~0ULL : 0;
	if (!issue(t, c.fd, DMAPLANE_IOCTL_PROBE, &pr, sizeof(pr)))
		return;
	if (pr.flags & DMAPLANE_PROBE_CLAIM)
		push_handle(slots[s].claim, &slots[s].nclaim, pr.claim);
}

static void op_cancel(struct tctx *t)
{
	struct dmaplane_cancel ca = { 0 };

	ca.ctx = below(&t->r, 16);
	issue(t, slots[pick_slot(t)].fd, DMAPLANE_IOCTL_CANCEL, &ca, sizeof(ca));
}

static uint32_t gen_access(struct tctx *t)
{
	if (chance(&t->r, 50))
		return DMAPLANE_ACCESS_ALL;
	if (!t->sane && chance(&t->r, 10))
		return rnd(&t->r);
	return below(&t->r, 8);
}

static void op_arena_create_slot(struct tctx *t, int s)
{
	struct rng *r = &t->r;
	struct dmaplane_arena_create ac = { 0 };
	unsigned int i;
	size_t len;
	void *p;

	ac.size = (1 + below(r, chance(r, 90) ? 16 : 64)) * PG;
	if (chance(r, 1)) {
		ac.size = 2 << 20;
		ac.flags = DMAPLANE_ARENA_HUGE_ONLY;
	}
	if (!t->sane && chance(r, 10))
		ac.size = chance(r, 50) ? interesting(r) : rnd(r);
	ac.numa_node = chance(r, 90) ? DMAPLANE_NUMA_ANY : (int)below(r, 3);
	ac.access = gen_access(t);
	if (!issue(t, slots[s].fd, DMAPLANE_IOCTL_ARENA_CREATE, &ac, sizeof(ac)))
		return;
	add_rkey(s, ac.rkey);
	lock();
	i = slots[s].narena++ % NH;
	if (slots[s].narena >= 2 * NH)
		slots[s].narena -= NH;
	slots[s].arena[i] = ac.handle;
	slots[s].arena_size[i] = ac.size;
	slots[s].arena_off[i] = ac.mmap_offset;
	unlock();
	if (chance(r, 40)) {
		len = (1 + below(r, ac.size / PG)) * PG;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED,
			 slots[s].fd, ac.mmap_offset);
		count(K_MMAP, p == MAP_FAILED ? -1 : 0, errno, 0);
		if (p != MAP_FAILED)
			add_map(p, len, s, M_ARENA);
	}
}

static void op_arena_create(struct tctx *t)
{
	op_arena_create_slot(t, pick_slot(t));
}

static int pick_arena(struct tctx *t, int s, uint32_t *h, uint64_t *size, uint64_t *off)
{
	unsigned int n, i;

	lock();
	n = slots[s].narena < NH ? slots[s].narena : NH;
	if (!n) {
		unlock();
		*h = below(&t->r, 4);
		*size = PG;
		*off = 0;
		return -1;
	}
	i = below(&t->r, n);
	*h = slots[s].arena[i];
	*size = slots[s].arena_size[i];
	*off = slots[s].arena_off[i];
	unlock();
	return 0;
}

static void op_arena_destroy(struct tctx *t)
{
	int s = pick_slot(t);
	struct dmaplane_handle_arg h = { 0 };
	uint64_t size, off;

	pick_arena(t, s, &h.handle, &size, &off);
	issue(t, slots[s].fd, DMAPLANE_IOCTL_ARENA_DESTROY, &h, sizeof(h));
}

static void op_mr_reg_slot(struct tctx *t, int s)
{
	struct dmaplane_mr_reg mr = { 0 };

	gen_buf(t, &mr.addr, &mr.len, true);
	mr.access = gen_access(t);
	if (!issue(t, slots[s].fd, DMAPLANE_IOCTL_MR_REG, &mr, sizeof(mr)))
		return;
	add_rkey(s, mr.rkey);
	push_handle(slots[s].mr, &slots[s].nmr, mr.handle);
}

static void op_mr_reg(struct tctx *t)
{
	op_mr_reg_slot(t, pick_slot(t));
}

static uint32_t pick_region(struct tctx *t, int s)
{
	struct slot c = snap_slot(s);

	if (chance(&t->r, 30))
		return pick_handle(t, c.arena, c.narena);
	return pick_handle(t, c.mr, c.nmr);
}

static void op_mr_dereg(struct tctx *t)
{
	int s = pick_slot(t);
	struct dmaplane_handle_arg h = { 0 };

	h.handle = pick_region(t, s);
	issue(t, slots[s].fd, DMAPLANE_IOCTL_MR_DEREG, &h, sizeof(h));
}

static void op_mr_query(struct tctx *t)
{
	int s = pick_slot(t);
	struct dmaplane_mr_query q = { 0 };

	q.handle = pick_region(t, s);
	issue(t, slots[s].fd, DMAPLANE_IOCTL_MR_QUERY, &q, sizeof(q));
}

/* Keep a dma-buf fd; close one at random when full. */
static void add_dmabuf(int fd)
{
	unsigned int i;
	int old = -1;

	lock();
	for (i = 0; i < NDMABUFS; i++)
		if (dmabufs[i] < 0)
			break;
	if (i == NDMABUFS) {
		i = fd % NDMABUFS;
		old = dmabufs[i];
	}
	dmabufs[i] = fd;
	unlock();
	if (old >= 0)
		close(old);
}

static int pick_dmabuf(struct tctx *t)
{
	int fd;

	lock();
	fd = dmabufs[below(&t->r, NDMABUFS)];
	unlock();
	return fd;
}

static void op_dmabuf_export(struct tctx *t)
{
	struct rng *r = &t->r;
	int s = pick_slot(t);
	struct dmaplane_dmabuf_export ex = { 0 };
	uint64_t size, off;
	size_t len;
	void *p;

	pick_arena(t, s, &ex.handle, &size, &off);
	ex.offset = below(r, size / PG) * PG;
	ex.len = (1 + below(r, (size - ex.offset) / PG)) * PG;
	if (chance(r, 20))
		ex.flags = DMAPLANE_DMABUF_NO_CLOEXEC;
	if (!t->sane && chance(r, 10))
		ex.len = interesting(r);
	if (!issue(t, slots[s].fd, DMAPLANE_IOCTL_DMABUF_EXPORT, &ex, sizeof(ex)))
		return;
	if (chance(r, 30)) {
		len = (1 + below(r, ex.len / PG)) * PG;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, ex.fd, 0);
		count(K_MMAP, p == MAP_FAILED ? -1 : 0, errno, 0);
		if (p != MAP_FAILED)
			add_map(p, len, -1, M_DMABUF);
	}
	if (chance(r, 20))
		close(ex.fd);
	else
		add_dmabuf(ex.fd);
}

static void op_import(struct tctx *t)
{
	struct rng *r = &t->r;
	int s = pick_slot(t);
	struct dmaplane_mr_import_dmabuf im = { 0 };
	unsigned int p = below(r, 100);

	im.fd = pick_dmabuf(t);
	if (p >= 80 || im.fd < 0) {
		if (p < 88 && heap_fd >= 0) {
			struct dma_heap_allocation_data a = {
				.len = (1 + below(r, 8)) * PG,
				.fd_flags = O_RDWR | O_CLOEXEC,
			};

			if (ioctl(heap_fd, DMA_HEAP_IOCTL_ALLOC, &a) == 0)
				add_dmabuf(a.fd);
			im.fd = a.fd;
		} else if (p < 94) {
			im.fd = slots[below(r, NSLOTS)].fd;
		} else {
			im.fd = chance(r, 50) ? -1 : (int)below(r, 1024);
		}
	}
	im.access = gen_access(t);
	im.offset = chance(r, 70) ? 0 : below(r, 4) * PG;
	im.len = (1 + below(r, 4)) * PG;
	if (!t->sane && chance(r, 10))
		im.len = interesting(r);
	if (!issue(t, slots[s].fd, DMAPLANE_IOCTL_MR_IMPORT_DMABUF, &im, sizeof(im)))
		return;
	add_rkey(s, im.rkey);
	push_handle(slots[s].mr, &slots[s].nmr, im.handle);
}

static void op_random_cmd(struct tctx *t)
{
	struct rng *r = &t->r;
	uint8_t buf[256];
	unsigned long cmd;
	void *arg, *out;

	do {
		if (chance(r, 50))
			cmd = _IOC(below(r, 4), DMAPLANE_IOCTL_TYPE,
				   below(r, 32),
				   below(r, 256));
		else
			cmd = (uint32_t)rnd(r);
	} while (vfs_cmd(cmd));
	fill_random(r, buf, sizeof(buf));
	if (chance(r, 30))
		memset(buf, 0, sizeof(buf));
	arg = place_arg(t, buf, below(r, sizeof(buf)), &out);
	do_ioctl(slots[pick_slot(t)].fd, cmd, arg);
}

/* Consume completions, or move the consumer index anywhere. */
static void op_drain(struct tctx *t)
{
	int s = pick_slot(t);
	struct slot c = snap_slot(s);
	struct dmaplane_cq_ring *ring = c.ring;
	struct dmaplane_cq_head *head = c.head;
	struct pollfd pfd = { .fd = c.fd, .events = POLLIN };
	uint32_t tail, h, entries, eoff, n;
	struct dmaplane_cqe cqe;
	int e;

	poll(&pfd, 1, 0);
	if (!ring || !head)
		return;
	if (!guarded_u32(&ring->tail, &tail, false) ||
	    !guarded_u32(&ring->entries, &entries, false) ||
	    !guarded_u32(&head->head, &h, false) ||
	    !guarded_u32(&ring->entries_offset, &eoff, false))
		return;
	/* Count what completed, to see that data moves. */
	if (entries && entries <= DMAPLANE_CQ_MAX_ENTRIES &&
	    !(entries & (entries - 1)) && tail - h <= entries &&
	    eoff + (uint64_t)entries * sizeof(cqe) <= c.ring_size) {
		for (n = 0; h != tail && n < 64; h++, n++) {
			if (!guarded_copy(&cqe, (uint8_t *)ring + eoff +
					  (h & (entries - 1)) * sizeof(cqe), sizeof(cqe)))
				break;
			if (cqe.opcode < DMAPLANE_OP_SEND || cqe.opcode > DMAPLANE_OP_GET)
				continue;
			e = -cqe.status;
			inc(sh->cqes[cqe.opcode][e >= 0 && e < NERR - 1 ? e : NERR - 1]);
		}
	}
	h = tail;
	if (!t->sane && chance(&t->r, 3))
		h = chance(&t->r, 50) ? rnd(&t->r) : tail + entries;
	else if (chance(&t->r, 10))
		h = tail - below(&t->r, entries + 1);
	guarded_u32(&head->head, &h, true);
}

static void op_mmap(struct tctx *t)
{
	struct rng *r = &t->r;
	int s = pick_slot(t), kind, prot = PROT_READ, flags = MAP_SHARED, fd;
	struct slot c = snap_slot(s);
	uint64_t off, size, len;
	uint32_t h;
	void *p;

	fd = c.fd;
	switch (below(r, 5)) {
	case 0:
		kind = M_RING;
		off = DMAPLANE_CQ_RING_OFFSET;
		len = c.ring_size ? c.ring_size : PG;
		if (chance(r, 10))
			prot |= PROT_WRITE;
		break;
	case 1:
		kind = M_HEAD;
		off = DMAPLANE_CQ_HEAD_OFFSET;
		len = PG;
		prot |= PROT_WRITE;
		break;
	case 2:
	case 3:
		kind = M_ARENA;
		pick_arena(t, s, &h, &size, &off);
		len = (1 + below(r, size / PG)) * PG;
		if (chance(r, 10))
			len += PG;
		prot |= PROT_WRITE;
		break;
	default:
		kind = M_OTHER;
		off = chance(r, 50) ? below(r, 64) << 32 : rnd(r) & ~(PG - 1);
		len = (1 + below(r, 4)) * PG;
		break;
	}
	if (!t->sane && chance(r, 10))
		len = (1 + below(r, 64)) * PG;
	if (chance(r, 5))
		flags = MAP_PRIVATE;
	p = mmap(NULL, len, prot, flags, fd, off);
	count(K_MMAP, p == MAP_FAILED ? -1 : 0, errno, 0);
	if (p == MAP_FAILED)
		return;
	if (kind == M_RING) {
		if (prot & PROT_WRITE) {
			inc(sh->impossible);
			fprintf(stderr, "fuzz: IMPOSSIBLE: ring mapped writable\n");
		}
		if (!mprotect(p, len, PROT_READ | PROT_WRITE)) {
			inc(sh->impossible);
			fprintf(stderr, "fuzz: IMPOSSIBLE: ring made writable\n");
		}
	}
	add_map(p, len, s, kind);
}

/* munmap all or part of a mapping, or move it. */
static void op_munmap(struct tctx *t)
{
	struct rng *r = &t->r;
	unsigned int i = below(r, NMAPS);
	struct map m;
	size_t cut;
	void *p;

	lock();
	if (!maps[i].addr) {
		unlock();
		return;
	}
	m = take_map(i);
	unlock();
	switch (below(r, 4)) {
	case 0:
		if (m.len <= PG)
			break;
		/* Split it: keep the front, or the back. */
		cut = (1 + below(r, m.len / PG - 1)) * PG;
		if (chance(r, 50)) {
			munmap((uint8_t *)m.addr + cut, m.len - cut);
			add_map(m.addr, cut, m.slot, M_OTHER);
		} else {
			munmap(m.addr, cut);
			add_map((uint8_t *)m.addr + cut, m.len - cut, m.slot, M_OTHER);
		}
		return;
	case 1:
		/* Move it to a place reserved for it. */
		p = mmap(NULL, m.len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED) {
			if (mremap(m.addr, m.len, m.len, MREMAP_MAYMOVE | MREMAP_FIXED,
				   p) == MAP_FAILED)
				munmap(p, m.len);
			else
				m.addr = p;
		}
		if (chance(r, 50))
			p = mremap(m.addr, m.len, m.len + PG, MREMAP_MAYMOVE);
		else
			p = MAP_FAILED;
		if (p != MAP_FAILED) {
			m.addr = p;
			m.len += PG;
		}
		add_map(m.addr, m.len, m.slot, M_OTHER);
		return;
	}
	munmap(m.addr, m.len);
}

/* Registered memory goes away, moves or changes under the kernel. */
static void op_churn(struct tctx *t)
{
	struct rng *r = &t->r;
	size_t off = below(r, POOL_PAGES) * PG;
	size_t len = (1 + below(r, 4)) * PG;

	if (off + len > POOL_PAGES * PG)
		len = POOL_PAGES * PG - off;
	inc(sh->churns);
	switch (below(r, 3)) {
	case 0:
		madvise(pool + off, len, MADV_DONTNEED);
		break;
	case 1:
		mmap(pool + off, len, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
		break;
	default:
		mprotect(pool + off, len, PROT_READ);
		mprotect(pool + off, len, PROT_READ | PROT_WRITE);
		break;
	}
}

/* Replace an endpoint by a fresh one at the same descriptor number. */
static void op_reopen_slot(struct tctx *t, int s, int nfd)
{
	struct map gone[NMAPS];
	unsigned int i, n = 0;
	bool unmap = chance(&t->r, 50);

	lock();
	if (dup2(nfd, slots[s].fd) < 0) {
		unlock();
		return;
	}
	reset_slot(s);
	for (i = 0; i < NMAPS; i++)
		if (maps[i].addr && maps[i].slot == s && unmap)
			gone[n++] = take_map(i);
	unlock();
	close(nfd);
	for (i = 0; i < n; i++)
		munmap(gone[i].addr, gone[i].len);
	inc(sh->reopens);
}

static void op_reopen(struct tctx *t)
{
	int s = pick_slot(t), fd, i;

	fd = open_dev(&t->r);
	if (fd < 0)
		return;
	op_reopen_slot(t, s, fd);
	if (chance(&t->r, 70)) {
		t->sane = true;
		op_ep_setup_slot(t, s);
		for (i = 0; i < NSLOTS; i++) {
			op_av_insert_pair(t, s, i);
			op_av_insert_pair(t, i, s);
		}
	}
}

static void op_close_dmabuf(struct tctx *t)
{
	unsigned int i = below(&t->r, NDMABUFS);
	int fd;

	lock();
	fd = dmabufs[i];
	dmabufs[i] = -1;
	unlock();
	if (fd >= 0)
		close(fd);
}

/* ---- children ---- */

static void fuzz_one(struct tctx *t);

static void reap(bool kill_some)
{
	unsigned int i;
	int status;
	pid_t pid;

	lock();
	for (i = 0; i < MAXKIDS; i++) {
		if (kids[i] <= 0)
			continue;
		if (kill_some && chance(&reap_rng, 30))
			kill(kids[i], SIGKILL);
		pid = waitpid(kids[i], &status, WNOHANG);
		if (pid != kids[i])
			continue;
		kids[i] = 0;
		if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) {
			inc(sh->impossible);
			fprintf(stderr, "fuzz: IMPOSSIBLE: child %d died of signal %d (seed=%" PRIu64 ")\n",
				pid, WTERMSIG(status), seed);
		}
	}
	unlock();
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct msghdr msg = { 0 };
	struct cmsghdr *cm;
	struct iovec iov;
	char c;
	int fd;

	iov.iov_base = &c;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS)
		return -1;
	memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	return fd;
}

static void send_fd(int sock, int fd)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct msghdr msg = { 0 };
	struct cmsghdr *cm;
	struct iovec iov;
	char c = 'f';

	iov.iov_base = &c;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(fd));
	sendmsg(sock, &msg, MSG_NOSIGNAL);
}

/*
 * In a child: use the inherited descriptors (or, with @sock, only the one
 * received over it, at every slot's number), then exit or die.
 */
static void __attribute__((__noreturn__)) child_run(struct tctx *t, uint64_t cseed, int sock)
{
	unsigned long n, i;
	int fd, s;

	single = true;
	for (i = 0; i < MAXKIDS; i++)
		kids[i] = 0;
	rng_init(&t->r, cseed);
	if (sock >= 0) {
		fd = recv_fd(sock);
		if (fd < 0)
			_exit(0);
		for (s = 0; s < NSLOTS; s++) {
			dup2(fd, slots[s].fd);
			reset_slot(s);
		}
		close(fd);
		close(sock);
	}
	n = below(&t->r, 300);
	for (i = 0; i < n; i++) {
		if (chance(&t->r, 1) && chance(&t->r, 30))
			raise(SIGKILL);
		fuzz_one(t);
		inc(sh->kid_calls);
	}
	_exit(0);
}

static int kid_slot(void)
{
	unsigned int i;

	lock();
	for (i = 0; i < MAXKIDS; i++) {
		if (!kids[i]) {
			kids[i] = -1;	/* reserved */
			unlock();
			return i;
		}
	}
	unlock();
	return -1;
}

static void op_fork(struct tctx *t)
{
	uint64_t cseed = rnd(&t->r);
	int k = kid_slot();
	pid_t pid;

	if (k < 0)
		return;
	pid = fork();
	if (pid == 0)
		child_run(t, cseed, -1);
	lock();
	kids[k] = pid > 0 ? pid : 0;
	unlock();
	inc(sh->forks);
}

/* A child gets a fresh endpoint over SCM_RIGHTS and uses it. */
static void op_scm(struct tctx *t)
{
	uint64_t cseed = rnd(&t->r);
	int k = kid_slot(), sv[2], fd, s;
	pid_t pid;

	if (k < 0)
		return;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)) {
		lock();
		kids[k] = 0;
		unlock();
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		child_run(t, cseed, sv[1]);
	}
	close(sv[1]);
	lock();
	kids[k] = pid > 0 ? pid : 0;
	unlock();
	inc(sh->scms);
	fd = open_dev(&t->r);
	if (fd < 0) {
		close(sv[0]);
		return;
	}
	/* Set it up here, at a slot's number, so the child finds objects. */
	s = pick_slot(t);
	op_reopen_slot(t, s, fd);
	t->sane = true;
	op_ep_setup_slot(t, s);
	op_av_insert_pair(t, s, s);
	op_arena_create_slot(t, s);
	op_mr_reg_slot(t, s);
	send_fd(sv[0], slots[s].fd);
	close(sv[0]);
}

/* ---- the loop ---- */

struct op_weight {
	void (*fn)(struct tctx *t);
	const char *name;
	unsigned int w;		/* per mille */
	bool parent_only;
};

static const struct op_weight ops_table[] = {
	{ op_get_info, "get_info", 20, false },
	{ op_ep_setup, "ep_setup", 25, false },
	{ op_getname, "getname", 15, false },
	{ op_av_insert, "av_insert", 40, false },
	{ op_av_remove, "av_remove", 10, false },
	{ op_submit, "submit", 260, false },
#ifdef FUZZ_URING
	{ op_uring, "uring_cmd", 60, false },
#endif
	{ op_probe, "probe", 50, false },
	{ op_cancel, "cancel", 30, false },
	{ op_arena_create, "arena_create", 40, false },
	{ op_arena_destroy, "arena_destroy", 25, false },
	{ op_mr_reg, "mr_reg", 60, false },
	{ op_mr_dereg, "mr_dereg", 30, false },
	{ op_mr_query, "mr_query", 25, false },
	{ op_dmabuf_export, "dmabuf_export", 35, false },
	{ op_import, "import", 35, false },
	{ op_random_cmd, "random_cmd", 40, false },
	{ op_drain, "drain", 150, false },
	{ op_mmap, "mmap", 25, false },
	{ op_munmap, "munmap", 20, false },
	{ op_churn, "churn", 5, false },
	{ op_reopen, "reopen", 4, true },
	{ op_close_dmabuf, "close_dmabuf", 20, false },
	{ op_fork, "fork", 2, true },
	{ op_scm, "scm", 1, true },
	{ 0 },
};

static void fuzz_one(struct tctx *t)
{
	const struct op_weight *o;
	unsigned int total = 0, x;

	for (o = ops_table; o->fn; o++)
		total += o->w;
	for (;;) {
		x = below(&t->r, total);
		for (o = ops_table; x >= o->w; o++)
			x -= o->w;
		if (!single || !o->parent_only)
			break;
	}
	t->sane = chance(&t->r, 50);
	if (log_ops) {
		fprintf(stderr, "fuzz: %s%d #%lu %s%s\n", single ? "child of " : "t",
			t->id, t->calls, o->name, t->sane ? "" : " (insane)");
		fflush(stderr);
	}
	t->calls++;
	if (verbose) {
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		o->fn(t);
		clock_gettime(CLOCK_MONOTONIC, &b);
		__atomic_fetch_add(&sh->op_ns[o - ops_table],
				   (b.tv_sec - a.tv_sec) * 1000000000UL + b.tv_nsec - a.tv_nsec,
				   __ATOMIC_RELAXED);
		inc(sh->op_n[o - ops_table]);
		return;
	}
	o->fn(t);
}

static void *map_guarded(size_t len)
{
	uint8_t *p = mmap(NULL, len + PG, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("fuzz: mmap");
		exit(1);
	}
	mprotect(p + len, PG, PROT_NONE);
	return p;
}

static void tctx_init(struct tctx *t, int id)
{
	uint64_t x = seed + id;
	int mfd;

	memset(t, 0, sizeof(*t));
	t->id = id;
	rng_init(&t->r, splitmix(&x));
	t->arg = map_guarded(ARG_BYTES);
	t->ops = map_guarded(OPS_BYTES);
	t->ops = (struct dmaplane_op *)((uint8_t *)t->ops + OPS_BYTES) - OPS_MAX;
	t->iov = map_guarded(IOV_TOTAL * sizeof(struct iovec));
	mfd = memfd_create("fuzz-ro", MFD_CLOEXEC);
	if (mfd < 0 || ftruncate(mfd, PG)) {
		perror("fuzz: memfd");
		exit(1);
	}
	t->ro_rw = mmap(NULL, PG, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	t->ro = mmap(NULL, PG, PROT_READ, MAP_SHARED, mfd, 0);
	close(mfd);
	if (t->ro_rw == MAP_FAILED || t->ro == MAP_FAILED) {
		perror("fuzz: mmap memfd");
		exit(1);
	}
}

static void *thread_main(void *arg)
{
	struct tctx *t = arg;
	unsigned long i;

	for (i = 0; i < calls_per_thread; i++) {
		fuzz_one(t);
		if (t->id == 0 && i % 16 == 0)
			reap(true);
		if (t->id == 0 && !quiet && i && i % 20000 == 0)
			fprintf(stderr, "fuzz: thread 0: %lu calls\n", i);
	}
	return NULL;
}

static void setup(struct tctx *t)
{
	int s, p, fd;
	uint8_t *m;

	m = mmap(NULL, (POOL_PAGES + 2) * PG, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		perror("fuzz: mmap pool");
		exit(1);
	}
	pool = m;
	memset(pool, 0xa5, POOL_PAGES * PG);
	pool_ro = pool + POOL_PAGES * PG;
	mprotect(pool_ro, PG, PROT_READ);
	pool_hole = pool_ro + PG;
	munmap(pool_hole, PG);

	for (s = 0; s < NMAPS; s++)
		maps[s].addr = NULL;
	for (s = 0; s < NDMABUFS; s++)
		dmabufs[s] = -1;
	heap_fd = open("/dev/dma_heap/system", O_RDONLY | O_CLOEXEC);

	/* Every endpoint set up and knowing every other. */
	for (s = 0; s < NSLOTS; s++) {
		fd = open_dev(&t->r);
		if (fd < 0)
			fatal_vanished(dev);
		slots[s].fd = fd;
	}
	t->sane = true;
	for (s = 0; s < NSLOTS; s++) {
		struct dmaplane_ep_setup su = { .cq_entries = 1024 };

		if (!issue(t, slots[s].fd, DMAPLANE_IOCTL_EP_SETUP, &su, sizeof(su)))
			continue;
		slots[s].setup = true;
		slots[s].ring_size = su.ring_size;
		map_ring(t, s, &su);
		op_getname_slot(t, s);
	}
	for (s = 0; s < NSLOTS; s++)
		for (p = 0; p < NSLOTS; p++)
			op_av_insert_pair(t, s, p);
}

static void teardown(void)
{
	unsigned int i;
	int status;

	for (i = 0; i < MAXKIDS; i++) {
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], &status, 0);
		}
	}
	while (wait(&status) > 0)
		;
	for (i = 0; i < NMAPS; i++)
		if (maps[i].addr)
			munmap(maps[i].addr, maps[i].len);
	for (i = 0; i < NDMABUFS; i++)
		if (dmabufs[i] >= 0)
			close(dmabufs[i]);
	for (i = 0; i < NSLOTS; i++)
		close(slots[i].fd);
	if (heap_fd >= 0)
		close(heap_fd);
}

/* One row of counts: " ok=N EFAULT=N ..." for the columns that are not 0. */
static void print_row(const unsigned long *row)
{
	const char *name;
	unsigned int e;

	for (e = 0; e < NERR; e++) {
		if (!row[e])
			continue;
		if (e == 0)
			name = "ok";
		else if (e == NERR - 1)
			name = "OTHER";
		else
			name = strerrorname_np(e) ? strerrorname_np(e) : "?";
		printf(" %s=%lu", name, row[e]);
	}
	printf("\n");
}

static void print_hist(void)
{
	unsigned long total;
	unsigned int k, e;
	char label[32];

	printf("errno histogram per command (ok: success):\n");
	for (k = 0; k < 2 * NKINDS; k++) {
		total = 0;
		for (e = 0; e < NERR; e++)
			total += sh->hist[k][e];
		if (!total)
			continue;
		snprintf(label, sizeof(label), "%s%s", k >= NKINDS ? "child/" : "",
			 kind_names[k % NKINDS]);
		printf("  %-22s %8lu:", label, total);
		print_row(sh->hist[k]);
	}
	printf("completions seen, by status:\n");
	for (k = DMAPLANE_OP_SEND; k <= DMAPLANE_OP_GET; k++) {
		printf("  %-4s", op_names[k]);
		print_row(sh->cqes[k]);
	}
}

static void drop_privileges(const char *spec)
{
	unsigned long uid, gid;
	char *end;

	uid = strtoul(spec, &end, 0);
	gid = *end == ':' ? strtoul(end + 1, NULL, 0) : uid;
	if (setgroups(0, NULL) || setgid(gid) || setuid(uid)) {
		perror("fuzz: dropping privileges");
		exit(1);
	}
}

int main(int argc, char **argv)
{
	unsigned long calls = 10000, threads = 4, i;
	struct timespec t0, t1;
	struct sigaction sa = { 0 };
	struct tctx *tc;
	pthread_t *tids;
	bool have_seed = false;
	struct stat st;
	double secs;
	int opt;

	while ((opt = getopt(argc, argv, "n:s:t:u:qvLd:")) != -1) {
		switch (opt) {
		case 'n':
			calls = strtoul(optarg, NULL, 0);
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			have_seed = true;
			break;
		case 't':
			threads = strtoul(optarg, NULL, 0);
			break;
		case 'u':
			drop_privileges(optarg);
			break;
		case 'q':
			quiet = true;
			break;
		case 'v':
			verbose = true;
			break;
		case 'L':
			log_ops = true;
			break;
		case 'd':
			dev = optarg;
			break;
		default:
			fprintf(stderr, "usage: %s -n CALLS [-s SEED] [-t THREADS] [-u UID[:GID]] [-q] [-v] [-L] [-d DEVICE]\n",
				argv[0]);
			return 1;
		}
	}
	if (!have_seed) {
		clock_gettime(CLOCK_REALTIME, &t0);
		seed = t0.tv_nsec ^ ((uint64_t)t0.tv_sec << 20) ^ ((uint64_t)getpid() << 40);
	}
	if (threads < 1)
		threads = 1;
	if (threads > 64)
		threads = 64;
	printf("seed=%" PRIu64 " calls=%lu threads=%lu uid=%d\n", seed, calls,
	       threads, (int)geteuid());
	fflush(stdout);

	rng_init(&reap_rng, ~seed);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("fuzz: mmap");
		return 1;
	}
	sa.sa_handler = on_fault;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	tc = calloc(threads, sizeof(*tc));
	tids = calloc(threads, sizeof(*tids));
	if (!tc || !tids)
		return 1;
	for (i = 0; i < threads; i++)
		tctx_init(&tc[i], i);
	setup(&tc[0]);

	calls_per_thread = calls / threads;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 1; i < threads; i++)
		if (pthread_create(&tids[i], NULL, thread_main, &tc[i])) {
			perror("fuzz: pthread_create");
			return 1;
		}
	thread_main(&tc[0]);
	for (i = 1; i < threads; i++)
		pthread_join(tids[i], NULL);
	teardown();
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = t1.tv_sec - t0.tv_sec + (t1.tv_nsec - t0.tv_nsec) / 1e9;

	print_hist();
	printf("calls=%lu (+%lu in children) in %.1f s: %.0f calls/s\n",
	       calls_per_thread * threads, sh->kid_calls, secs,
	       calls_per_thread * threads / (secs > 0 ? secs : 1));
	printf("forks=%lu scm=%lu reopens=%lu maps=%lu churns=%lu own-faults=%lu\n",
	       sh->forks, sh->scms, sh->reopens, sh->maps, sh->churns, sh->faults);
	if (verbose) {
		const struct op_weight *o;

		printf("time per operation:");
		for (o = ops_table; o->fn; o++)
			if (sh->op_n[o - ops_table])
				printf(" %s=%lux%luus", o->name, sh->op_n[o - ops_table],
				       sh->op_ns[o - ops_table] / 1000 / sh->op_n[o - ops_table]);
		printf("\n");
	}
	printf("seed=%" PRIu64 "\n", seed);
	if (stat(dev, &st) || !S_ISCHR(st.st_mode)) {
		fprintf(stderr, "fuzz: IMPOSSIBLE: %s vanished\n", dev);
		return 2;
	}
	if (sh->impossible) {
		fprintf(stderr, "fuzz: %lu impossible results (seed=%" PRIu64 ")\n",
			sh->impossible, seed);
		return 1;
	}
	return 0;
}

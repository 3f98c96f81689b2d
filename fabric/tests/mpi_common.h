/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the MPI test programs (mpi_p2p.c, mpi_coll.c,
 * mpi_osc.c): failure counting, phase names on stderr (so that a hang
 * names its phase), checked MPI calls and seeded byte patterns.
 */
#ifndef MPI_COMMON_H
#define MPI_COMMON_H

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nprocs, fails;
static const char *prog;
static double t_start, t_phase;

/* Rank 0 names the phase it enters, with the time the last one took. */
static void phase(const char *name)
{
	double now = MPI_Wtime();

	if (!rank) {
		fprintf(stderr, "%s: %s (%.2f s since start, last phase %.2f s)\n",
			prog, name, now - t_start, now - t_phase);
		fflush(stderr);
	}
	t_phase = now;
}

#define CHECK(cond, ...) do {						\
		if (!(cond)) {						\
			fprintf(stderr, "%s: rank %d: %s:%d: ", prog, rank, \
				__FILE__, __LINE__);			\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			fflush(stderr);					\
			fails++;					\
		}							\
	} while (0)

/* An MPI call that must return MPI_SUCCESS (MPI_ERRORS_RETURN is set). */
#define MPI(call) do {							\
		int rc_ = (call);					\
		if (rc_ != MPI_SUCCESS) {				\
			char s_[MPI_MAX_ERROR_STRING];			\
			int l_ = 0;					\
			MPI_Error_string(rc_, s_, &l_);			\
			CHECK(0, "%s: %s", #call, s_);			\
		}							\
	} while (0)

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "%s: rank %d: out of memory (%zu)\n", prog, rank, n);
		MPI_Abort(MPI_COMM_WORLD, 3);
	}
	return p;
}

static uint32_t seed_of(uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	uint32_t h = 2166136261u;

	h = (h ^ a) * 16777619u;
	h = (h ^ b) * 16777619u;
	h = (h ^ c) * 16777619u;
	h = (h ^ d) * 16777619u;
	return h ? h : 1;
}

static uint32_t xs32(uint32_t *s)
{
	uint32_t x = *s;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

static void fill(void *buf, size_t n, uint32_t seed)
{
	unsigned char *p = buf;
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (unsigned char)(xs32(&seed) >> 11);
}

/* Byte-by-byte check; names the first bad byte and counts one failure. */
static int verify(const void *buf, size_t n, uint32_t seed, const char *what)
{
	const unsigned char *p = buf;
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char want = (unsigned char)(xs32(&seed) >> 11);

		if (p[i] != want) {
			CHECK(0, "%s: byte %zu of %zu is 0x%02x, want 0x%02x",
			      what, i, n, p[i], want);
			return 0;
		}
	}
	return 1;
}

static void common_init(int *argc, char ***argv, const char *name)
{
	prog = name;
	MPI_Init(argc, argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	t_start = t_phase = MPI_Wtime();
}

/* All ranks' failures summed; rank 0 says ok only when there were none. */
static int common_finish(void)
{
	int total = fails;

	phase("finish");
	if (MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM,
			  MPI_COMM_WORLD) != MPI_SUCCESS)
		total = fails + 1;
	if (!rank) {
		if (total)
			printf("%s: FAILED (%d failures)\n", prog, total);
		else
			printf("%s: ok\n", prog);
		fflush(stdout);
	}
	MPI_Finalize();
	return total ? 1 : 0;
}

#endif

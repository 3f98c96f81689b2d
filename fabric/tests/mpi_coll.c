// SPDX-License-Identifier: GPL-2.0
/*
 * Collectives (Open MPI's coll components over the point-to-point layer,
 * here the ofi MTL), every result checked against a value each rank
 * computes locally:
 *
 * - MPI_Barrier; MPI_Bcast from every root, 1 B to 4 MiB, patterns
 *   checked byte by byte;
 * - MPI_Allreduce SUM/MAX/MIN on ints and SUM/MAX on doubles (exact:
 *   integer values), 1 to 100000 elements, in place too;
 * - MPI_Reduce to every root, MPI_Gather, MPI_Allgather, MPI_Scatter,
 *   MPI_Alltoall (every block a pattern seeded by source and destination),
 *   MPI_Alltoallv;
 * - MPI_Comm_split (even/odd ranks) and MPI_Comm_dup with an Allreduce
 *   and a Bcast on each; nonblocking MPI_Ibcast and MPI_Iallreduce.
 *
 * Rank 0 prints "mpi_coll: ok" and every rank exits 0 when all of it held.
 */
#include "mpi_common.h"

/* The value rank r contributes at element i. */
static int ival(int r, int i)
{
	return (int)((r * 7919u + i * 104729u) % 100003u) - 50000;
}

static void bcast(void)
{
	static const int sizes[] = { 1, 100, 16384, 65539, 1 << 20, 4 << 20 };
	char *buf = xmalloc(4 << 20);
	int root, i;

	for (root = 0; root < nprocs; root++) {
		for (i = 0; i < (int)(sizeof(sizes) / sizeof(sizes[0])); i++) {
			uint32_t seed = seed_of(root, sizes[i], 1, 0);
			char what[64];

			if (rank == root)
				fill(buf, sizes[i], seed);
			else
				memset(buf, 0, sizes[i]);
			MPI(MPI_Bcast(buf, sizes[i], MPI_CHAR, root, MPI_COMM_WORLD));
			snprintf(what, sizeof(what), "Bcast %d B from %d", sizes[i], root);
			verify(buf, sizes[i], seed, what);
		}
	}
	free(buf);
}

static void allreduce(void)
{
	static const int counts[] = { 1, 1000, 100000 };
	int *in = xmalloc(100000 * sizeof(int)), *out = xmalloc(100000 * sizeof(int));
	double *din = xmalloc(100000 * sizeof(double));
	double *dout = xmalloc(100000 * sizeof(double));
	int c, i, r;

	for (c = 0; c < 3; c++) {
		int n = counts[c], bad[5] = { 0 };

		for (i = 0; i < n; i++) {
			in[i] = ival(rank, i);
			din[i] = ival(rank, i) * 0.5;
		}
		MPI(MPI_Allreduce(in, out, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
		for (i = 0; i < n; i++) {
			long long s = 0;

			for (r = 0; r < nprocs; r++)
				s += ival(r, i);
			bad[0] += out[i] != s;
		}
		MPI(MPI_Allreduce(in, out, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
		for (i = 0; i < n; i++) {
			int m = ival(0, i);

			for (r = 1; r < nprocs; r++)
				m = ival(r, i) > m ? ival(r, i) : m;
			bad[1] += out[i] != m;
		}
		/* In place. */
		MPI(MPI_Allreduce(MPI_IN_PLACE, in, n, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
		for (i = 0; i < n; i++) {
			int m = ival(0, i);

			for (r = 1; r < nprocs; r++)
				m = ival(r, i) < m ? ival(r, i) : m;
			bad[2] += in[i] != m;
		}
		MPI(MPI_Allreduce(din, dout, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
		for (i = 0; i < n; i++) {
			double s = 0;

			for (r = 0; r < nprocs; r++)
				s += ival(r, i) * 0.5;
			bad[3] += dout[i] != s;
		}
		MPI(MPI_Allreduce(din, dout, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
		for (i = 0; i < n; i++) {
			double m = ival(0, i) * 0.5;

			for (r = 1; r < nprocs; r++)
				m = ival(r, i) * 0.5 > m ? ival(r, i) * 0.5 : m;
			bad[4] += dout[i] != m;
		}
		CHECK(!bad[0] && !bad[1] && !bad[2] && !bad[3] && !bad[4],
		      "Allreduce of %d: wrong elements: int SUM %d MAX %d MIN(in place) %d, double SUM %d MAX %d",
		      n, bad[0], bad[1], bad[2], bad[3], bad[4]);
	}
	free(in);
	free(out);
	free(din);
	free(dout);
}

static void rooted(void)
{
	enum { N = 5000 };
	int *in = xmalloc(N * sizeof(int)), *out = xmalloc((size_t)N * nprocs * sizeof(int));
	int root, i, r, bad;

	for (i = 0; i < N; i++)
		in[i] = ival(rank, i);
	for (root = 0; root < nprocs; root++) {
		/* Reduce */
		MPI(MPI_Reduce(in, out, N, MPI_INT, MPI_SUM, root, MPI_COMM_WORLD));
		if (rank == root) {
			for (bad = 0, i = 0; i < N; i++) {
				long long s = 0;

				for (r = 0; r < nprocs; r++)
					s += ival(r, i);
				bad += out[i] != s;
			}
			CHECK(!bad, "Reduce to %d: %d wrong elements", root, bad);
		}
		/* Gather */
		MPI(MPI_Gather(in, N, MPI_INT, out, N, MPI_INT, root, MPI_COMM_WORLD));
		if (rank == root) {
			for (bad = 0, r = 0; r < nprocs; r++)
				for (i = 0; i < N; i++)
					bad += out[r * N + i] != ival(r, i);
			CHECK(!bad, "Gather to %d: %d wrong elements", root, bad);
		}
		/* Scatter: block r of the root's buffer goes to r. */
		if (rank == root)
			for (r = 0; r < nprocs; r++)
				for (i = 0; i < N; i++)
					out[r * N + i] = ival(r + root * 100, i);
		MPI(MPI_Scatter(out, N, MPI_INT, in, N, MPI_INT, root, MPI_COMM_WORLD));
		for (bad = 0, i = 0; i < N; i++)
			bad += in[i] != ival(rank + root * 100, i);
		CHECK(!bad, "Scatter from %d: %d wrong elements", root, bad);
		for (i = 0; i < N; i++)
			in[i] = ival(rank, i);
	}
	/* Allgather */
	memset(out, 0, (size_t)N * nprocs * sizeof(int));
	MPI(MPI_Allgather(in, N, MPI_INT, out, N, MPI_INT, MPI_COMM_WORLD));
	for (bad = 0, r = 0; r < nprocs; r++)
		for (i = 0; i < N; i++)
			bad += out[r * N + i] != ival(r, i);
	CHECK(!bad, "Allgather: %d wrong elements", bad);
	free(in);
	free(out);
}

static void alltoall(void)
{
	static const int sizes[] = { 1, 1000, 70000 };	/* bytes a block */
	int k, r;

	for (k = 0; k < 3; k++) {
		int n = sizes[k];
		char *s = xmalloc((size_t)n * nprocs), *d = xmalloc((size_t)n * nprocs);

		for (r = 0; r < nprocs; r++)
			fill(s + (size_t)r * n, n, seed_of(rank, r, n, 2));
		memset(d, 0, (size_t)n * nprocs);
		MPI(MPI_Alltoall(s, n, MPI_CHAR, d, n, MPI_CHAR, MPI_COMM_WORLD));
		for (r = 0; r < nprocs; r++)
			verify(d + (size_t)r * n, n, seed_of(r, rank, n, 2), "Alltoall");
		free(s);
		free(d);
	}
	/* Alltoallv: rank r sends 100 * (r + 1) + dst bytes to dst. */
	{
		int *sc = xmalloc(nprocs * sizeof(int)), *sd = xmalloc(nprocs * sizeof(int));
		int *rc = xmalloc(nprocs * sizeof(int)), *rd = xmalloc(nprocs * sizeof(int));
		int st = 0, rt = 0;
		char *s, *d;

		for (r = 0; r < nprocs; r++) {
			sc[r] = 100 * (rank + 1) + r;
			rc[r] = 100 * (r + 1) + rank;
			sd[r] = st;
			rd[r] = rt;
			st += sc[r];
			rt += rc[r];
		}
		s = xmalloc(st);
		d = xmalloc(rt);
		for (r = 0; r < nprocs; r++)
			fill(s + sd[r], sc[r], seed_of(rank, r, 3, 3));
		MPI(MPI_Alltoallv(s, sc, sd, MPI_CHAR, d, rc, rd, MPI_CHAR,
				  MPI_COMM_WORLD));
		for (r = 0; r < nprocs; r++)
			verify(d + rd[r], rc[r], seed_of(r, rank, 3, 3), "Alltoallv");
		free(s);
		free(d);
		free(sc);
		free(sd);
		free(rc);
		free(rd);
	}
}

static void communicators(void)
{
	MPI_Comm half, dup;
	int hr, hn, sum, want = 0, r, top;
	char buf[4096];

	MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half));
	MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
	MPI_Comm_rank(half, &hr);
	MPI_Comm_size(half, &hn);
	CHECK(hn == (nprocs + 1 - rank % 2) / 2, "split: size %d", hn);
	MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, half));
	for (r = rank % 2; r < nprocs; r += 2)
		want += r;
	CHECK(sum == want, "split: Allreduce %d, want %d", sum, want);
	/* Key -rank: the highest world rank is rank 0 of its half. */
	if (!hr)
		fill(buf, sizeof(buf), seed_of(rank, 4, 4, 4));
	MPI(MPI_Bcast(buf, sizeof(buf), MPI_CHAR, 0, half));
	top = (nprocs - 1) % 2 == rank % 2 ? nprocs - 1 : nprocs - 2;
	verify(buf, sizeof(buf), seed_of(top, 4, 4, 4), "Bcast in split");
	MPI(MPI_Comm_free(&half));

	MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
	MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
	MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, dup));
	CHECK(sum == nprocs * (nprocs - 1) / 2, "dup: Allreduce %d", sum);
	MPI(MPI_Comm_free(&dup));
}

static void nonblocking(void)
{
	MPI_Request req[2];
	char *buf = xmalloc(300000);
	int in[64], out[64], i, bad = 0, r;

	if (rank == nprocs - 1)
		fill(buf, 300000, seed_of(9, 9, 9, 9));
	for (i = 0; i < 64; i++)
		in[i] = ival(rank, i);
	MPI(MPI_Ibcast(buf, 300000, MPI_CHAR, nprocs - 1, MPI_COMM_WORLD, &req[0]));
	MPI(MPI_Iallreduce(in, out, 64, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &req[1]));
	MPI(MPI_Waitall(2, req, MPI_STATUSES_IGNORE));
	verify(buf, 300000, seed_of(9, 9, 9, 9), "Ibcast");
	for (i = 0; i < 64; i++) {
		long long s = 0;

		for (r = 0; r < nprocs; r++)
			s += ival(r, i);
		bad += out[i] != s;
	}
	CHECK(!bad, "Iallreduce: %d wrong elements", bad);
	free(buf);
}

int main(int argc, char **argv)
{
	int i;

	common_init(&argc, &argv, "mpi_coll");
	phase("barrier");
	for (i = 0; i < 5; i++)
		MPI(MPI_Barrier(MPI_COMM_WORLD));
	phase("bcast");
	bcast();
	phase("allreduce");
	allreduce();
	phase("reduce, gather, scatter, allgather");
	rooted();
	phase("alltoall, alltoallv");
	alltoall();
	phase("comm split, dup");
	communicators();
	phase("ibcast, iallreduce");
	nonblocking();
	MPI(MPI_Barrier(MPI_COMM_WORLD));
	return common_finish();
}

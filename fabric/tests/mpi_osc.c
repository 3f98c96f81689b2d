// SPDX-License-Identifier: GPL-2.0
/*
 * One-sided communication as Open MPI's osc/pt2pt does it (active
 * messages over the point-to-point layer, here the ofi MTL; run with
 * "--mca osc pt2pt"), every value checked:
 *
 * - MPI_Win_create over a byte window and an int window;
 * - fences: MPI_Put of a 64 KiB block from every rank into every rank
 *   (patterns checked byte by byte at the target), MPI_Get of those
 *   blocks back, MPI_Accumulate SUM and MAX of ints from every rank;
 * - passive target: MPI_Win_lock(MPI_LOCK_EXCLUSIVE) around a Get,
 *   MPI_Win_flush and a Put incrementing a counter at rank 0 (the count
 *   is exact only if the locks excluded each other), MPI_Win_lock
 *   (MPI_LOCK_SHARED) with MPI_Accumulate and MPI_Put into distinct
 *   slots, MPI_Win_lock_all with MPI_Get.
 *
 * Rank 0 prints "mpi_osc: ok" and every rank exits 0 when all of it held.
 */
#include "mpi_common.h"

enum { BLK = 65536, NI = 1000, ROUNDS = 5 };

static int ival(int r, int i)
{
	return (int)((r * 7919u + i * 104729u) % 100003u) - 50000;
}

static void fences(MPI_Win bw, char *bbuf, MPI_Win iw, int *ibuf)
{
	char *src = xmalloc(BLK), *got = xmalloc((size_t)BLK * nprocs);
	int *isrc = xmalloc(NI * sizeof(int));
	int t, i, r, bad;

	/* Put: block `rank` of every target's window. */
	fill(src, BLK, seed_of(rank, 0, 0, 1));
	MPI(MPI_Win_fence(0, bw));
	for (t = 0; t < nprocs; t++)
		MPI(MPI_Put(src, BLK, MPI_CHAR, t, (MPI_Aint)rank * BLK, BLK,
			    MPI_CHAR, bw));
	MPI(MPI_Win_fence(0, bw));
	for (r = 0; r < nprocs; r++)
		verify(bbuf + (size_t)r * BLK, BLK, seed_of(r, 0, 0, 1),
		       "Put under fence");
	phase("fence: get");
	/* Get: every block of the next rank's window. */
	memset(got, 0, (size_t)BLK * nprocs);
	t = (rank + 1) % nprocs;
	for (r = 0; r < nprocs; r++)
		MPI(MPI_Get(got + (size_t)r * BLK, BLK, MPI_CHAR, t,
			    (MPI_Aint)r * BLK, BLK, MPI_CHAR, bw));
	MPI(MPI_Win_fence(0, bw));
	for (r = 0; r < nprocs; r++)
		verify(got + (size_t)r * BLK, BLK, seed_of(r, 0, 0, 1),
		       "Get under fence");

	phase("fence: accumulate");
	/* Accumulate SUM into every target, then MAX. */
	for (i = 0; i < NI; i++) {
		ibuf[i] = 1000 * rank;
		isrc[i] = ival(rank, i);
	}
	MPI(MPI_Win_fence(0, iw));
	for (t = 0; t < nprocs; t++)
		MPI(MPI_Accumulate(isrc, NI, MPI_INT, t, 0, NI, MPI_INT, MPI_SUM, iw));
	MPI(MPI_Win_fence(0, iw));
	for (bad = 0, i = 0; i < NI; i++) {
		long long s = 1000 * rank;

		for (r = 0; r < nprocs; r++)
			s += ival(r, i);
		bad += ibuf[i] != s;
	}
	CHECK(!bad, "Accumulate SUM under fence: %d wrong elements", bad);
	for (i = 0; i < NI; i++)
		ibuf[i] = -100000;
	MPI(MPI_Win_fence(0, iw));
	for (t = 0; t < nprocs; t++)
		MPI(MPI_Accumulate(isrc, NI, MPI_INT, t, 0, NI, MPI_INT, MPI_MAX, iw));
	MPI(MPI_Win_fence(0, iw));
	for (bad = 0, i = 0; i < NI; i++) {
		int m = ival(0, i);

		for (r = 1; r < nprocs; r++)
			m = ival(r, i) > m ? ival(r, i) : m;
		bad += ibuf[i] != m;
	}
	CHECK(!bad, "Accumulate MAX under fence: %d wrong elements", bad);
	MPI(MPI_Win_fence(0, iw));
	free(src);
	free(got);
	free(isrc);
}

static void passive(MPI_Win iw, int *ibuf)
{
	int i, r, v, bad;

	/* Zero the window under a lock of one's own. */
	MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, iw));
	for (i = 0; i < NI; i++)
		ibuf[i] = 0;
	MPI(MPI_Win_unlock(rank, iw));
	MPI(MPI_Barrier(MPI_COMM_WORLD));

	/* Read-modify-write of rank 0's counter under exclusive locks. */
	for (i = 0; i < ROUNDS; i++) {
		MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, iw));
		v = -1;
		MPI(MPI_Get(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, iw));
		MPI(MPI_Win_flush(0, iw));
		v++;
		MPI(MPI_Put(&v, 1, MPI_INT, 0, 0, 1, MPI_INT, iw));
		MPI(MPI_Win_unlock(0, iw));
	}
	MPI(MPI_Barrier(MPI_COMM_WORLD));
	phase("passive: shared locks");

	/* Shared locks: a SUM into slot 1 and a Put into slot 10 + rank. */
	for (r = 0; r < nprocs; r++) {
		int one = rank + 1, me = 1000 + rank;

		MPI(MPI_Win_lock(MPI_LOCK_SHARED, r, 0, iw));
		MPI(MPI_Accumulate(&one, 1, MPI_INT, r, 1, 1, MPI_INT, MPI_SUM, iw));
		MPI(MPI_Put(&me, 1, MPI_INT, r, 10 + rank, 1, MPI_INT, iw));
		MPI(MPI_Win_unlock(r, iw));
	}
	MPI(MPI_Barrier(MPI_COMM_WORLD));

	MPI(MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, iw));
	if (!rank)
		CHECK(ibuf[0] == nprocs * ROUNDS,
		      "exclusive read-modify-write: counter %d, want %d",
		      ibuf[0], nprocs * ROUNDS);
	CHECK(ibuf[1] == nprocs * (nprocs + 1) / 2,
	      "Accumulate under shared locks: %d, want %d", ibuf[1],
	      nprocs * (nprocs + 1) / 2);
	for (bad = 0, r = 0; r < nprocs; r++)
		bad += ibuf[10 + r] != 1000 + r;
	CHECK(!bad, "Put under shared locks: %d wrong slots", bad);
	MPI(MPI_Win_unlock(rank, iw));
	MPI(MPI_Barrier(MPI_COMM_WORLD));

	phase("passive: lock_all, get");
	{
		int *got = xmalloc(nprocs * 2 * sizeof(int));

		MPI(MPI_Win_lock_all(0, iw));
		for (r = 0; r < nprocs; r++)
			MPI(MPI_Get(got + 2 * r, 1, MPI_INT, r, 10 + rank, 1,
				    MPI_INT, iw));
		MPI(MPI_Win_flush_all(iw));
		for (r = 0; r < nprocs; r++)
			MPI(MPI_Get(got + 2 * r + 1, 1, MPI_INT, r, 1, 1, MPI_INT, iw));
		MPI(MPI_Win_unlock_all(iw));
		for (bad = 0, r = 0; r < nprocs; r++)
			bad += got[2 * r] != 1000 + rank ||
			       got[2 * r + 1] != nprocs * (nprocs + 1) / 2;
		CHECK(!bad, "Get under lock_all: %d wrong values", bad);
		free(got);
	}
}

int main(int argc, char **argv)
{
	MPI_Win bw, iw;
	char *bbuf;
	int *ibuf, wfails;

	common_init(&argc, &argv, "mpi_osc");
	phase("win_create");
	bbuf = xmalloc((size_t)BLK * nprocs);
	ibuf = xmalloc(NI * sizeof(int));
	memset(bbuf, 0, (size_t)BLK * nprocs);
	memset(ibuf, 0, NI * sizeof(int));
	MPI(MPI_Win_create(bbuf, (MPI_Aint)BLK * nprocs, 1, MPI_INFO_NULL,
			   MPI_COMM_WORLD, &bw));
	MPI(MPI_Win_create(ibuf, NI * sizeof(int), sizeof(int), MPI_INFO_NULL,
			   MPI_COMM_WORLD, &iw));
	MPI_Allreduce(&fails, &wfails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (wfails)	/* no window: why is on stderr (above) */
		return common_finish();
	MPI_Win_set_errhandler(bw, MPI_ERRORS_RETURN);
	MPI_Win_set_errhandler(iw, MPI_ERRORS_RETURN);
	phase("fence: put");
	fences(bw, bbuf, iw, ibuf);
	phase("passive: exclusive locks");
	passive(iw, ibuf);
	MPI(MPI_Barrier(MPI_COMM_WORLD));
	phase("win_free");
	MPI(MPI_Win_free(&bw));
	MPI(MPI_Win_free(&iw));
	free(bbuf);
	free(ibuf);
	return common_finish();
}

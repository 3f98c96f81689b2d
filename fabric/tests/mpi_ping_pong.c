// SPDX-License-Identifier: GPL-2.0
/*
 * An MPI program for Open MPI over the dmaplane provider: ping-pong over
 * eager and rendezvous sizes with data checks, MPI_ANY_SOURCE/ANY_TAG,
 * Iprobe/Improbe/Mrecv, a cancelled receive, truncation, Ssend and a
 * Barrier/Allreduce.  Rank 0 prints "mpi_ping_pong: ok" and every rank
 * exits 0 when all of it held.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails;

/* Say where rank 0 is, so that a hang names its phase. */
#define PHASE(name) do {						\
		if (!rank) {						\
			fprintf(stderr, "mpi_ping_pong: %s\n", name);	\
			fflush(stderr);					\
		}							\
	} while (0)

#define CHECK(cond, ...) do {						\
		if (!(cond)) {						\
			fprintf(stderr, "rank %d: %s:%d: ", rank,	\
				__FILE__, __LINE__);			\
			fprintf(stderr, __VA_ARGS__);			\
			fputc('\n', stderr);				\
			fails++;					\
		}							\
	} while (0)

int main(int argc, char **argv)
{
	static const int sizes[] = { 0, 1, 64, 1024, 16384, 16385, 65536, 1 << 20 };
	int rank = 0, nprocs, i, n, peer, flag, count, sum;
	MPI_Request req;
	MPI_Message msg;
	MPI_Status st;
	char *buf;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	if (nprocs != 2) {
		if (!rank)
			fprintf(stderr, "mpi_ping_pong: needs 2 ranks\n");
		MPI_Finalize();
		return 2;
	}
	peer = 1 - rank;
	buf = malloc(1 << 20);
	PHASE("init done");

	/* Ping-pong with data checks, eager and rendezvous. */
	for (i = 0; i < (int)(sizeof(sizes) / sizeof(sizes[0])); i++) {
		n = sizes[i];
		for (int it = 0; it < 10; it++) {
			if (rank == 0) {
				memset(buf, 'a' + it, n);
				MPI_Send(buf, n, MPI_CHAR, peer, i, MPI_COMM_WORLD);
				memset(buf, 0, n);
				MPI_Recv(buf, n, MPI_CHAR, peer, i, MPI_COMM_WORLD, &st);
				MPI_Get_count(&st, MPI_CHAR, &count);
				CHECK(count == n, "size %d: got %d", n, count);
				CHECK(!n || (buf[0] == 'b' + it && buf[n - 1] == 'b' + it),
				      "size %d: bad echo", n);
			} else {
				MPI_Recv(buf, n, MPI_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG,
					 MPI_COMM_WORLD, &st);
				CHECK(st.MPI_SOURCE == peer && st.MPI_TAG == i,
				      "source %d tag %d", st.MPI_SOURCE, st.MPI_TAG);
				memset(buf, 'b' + it, n);
				MPI_Send(buf, n, MPI_CHAR, peer, i, MPI_COMM_WORLD);
			}
		}
	}

	PHASE("ping-pong done");
	/* Iprobe, Improbe + Mrecv. */
	if (rank == 0) {
		MPI_Send("probe", 6, MPI_CHAR, peer, 100, MPI_COMM_WORLD);
		MPI_Send("mprobe", 7, MPI_CHAR, peer, 101, MPI_COMM_WORLD);
	} else {
		do {
			MPI_Iprobe(peer, 100, MPI_COMM_WORLD, &flag, &st);
		} while (!flag);
		MPI_Get_count(&st, MPI_CHAR, &count);
		CHECK(count == 6, "Iprobe count %d", count);
		MPI_Recv(buf, 6, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &st);
		do {
			MPI_Improbe(MPI_ANY_SOURCE, 101, MPI_COMM_WORLD, &flag, &msg, &st);
		} while (!flag);
		MPI_Mrecv(buf, 7, MPI_CHAR, &msg, &st);
		CHECK(!strcmp(buf, "mprobe"), "Mrecv got '%.7s'", buf);
	}

	PHASE("probes done");
	/* A receive nobody sends to, cancelled. */
	MPI_Irecv(buf, 8, MPI_CHAR, peer, 999, MPI_COMM_WORLD, &req);
	MPI_Cancel(&req);
	MPI_Wait(&req, &st);
	MPI_Test_cancelled(&st, &flag);
	CHECK(flag, "receive not cancelled");

	PHASE("cancel done");
	/* Truncation. */
	if (rank == 0) {
		MPI_Send(buf, 100, MPI_CHAR, peer, 200, MPI_COMM_WORLD);
	} else {
		int err = MPI_Recv(buf, 10, MPI_CHAR, peer, 200, MPI_COMM_WORLD, &st);
		int cls;

		MPI_Error_class(err, &cls);
		CHECK(cls == MPI_ERR_TRUNCATE, "truncation: error class %d", cls);
	}

	PHASE("truncation done");
	/* Ssend completes only once received. */
	if (rank == 0)
		MPI_Ssend(buf, 10, MPI_CHAR, peer, 300, MPI_COMM_WORLD);
	else
		MPI_Recv(buf, 10, MPI_CHAR, peer, 300, MPI_COMM_WORLD, &st);

	PHASE("ssend done");
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	CHECK(sum == 1, "Allreduce %d", sum);

	MPI_Allreduce(MPI_IN_PLACE, &fails, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (!rank)
		printf("mpi_ping_pong: %s (%d failures)\n", fails ? "FAILED" : "ok", fails);
	free(buf);
	MPI_Finalize();
	return fails ? 1 : 0;
}

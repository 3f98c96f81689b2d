// SPDX-License-Identifier: GPL-2.0
/*
 * Point-to-point semantics for any number of ranks >= 2 (a ring: each
 * rank sends to the next and receives from the previous one; Ssend in
 * pairs 0-1, 2-3, ...), every payload a pattern seeded by (source,
 * destination, tag, sequence) and checked byte by byte:
 *
 * - non-overtaking: a stream with one tag mixing 8 B, 16 KiB, 64 KiB and
 *   1 MiB arrives in order, received one by one (mostly unexpected) and
 *   with all receives posted first (expected), MPI_ANY_SOURCE too;
 * - MPI_ANY_SOURCE/MPI_ANY_TAG at a root every other rank sends to:
 *   MPI_SOURCE, MPI_TAG, MPI_Get_count exact, order per sender kept;
 * - Probe, Iprobe, Mprobe, Improbe, Mrecv (a matched message is no longer
 *   seen by Iprobe);
 * - MPI_Cancel of a posted receive (MPI_Test_cancelled), and the message
 *   sent later with its tag goes to the next receive;
 * - truncation (eager and rendezvous) gives MPI_ERR_TRUNCATE and writes
 *   nothing past the buffer;
 * - MPI_Issend does not complete (MPI_Test) before its receive is posted,
 *   which the receiver does only after a handshake message;
 * - zero-byte messages (Send, Ssend, Isend), 8 MiB messages;
 * - 256 outstanding Isend/Irecv per pair with distinct tags, receives
 *   posted before and after the sends, MPI_Waitall statuses checked.
 *
 * Rank 0 prints "mpi_p2p: ok" and every rank exits 0 when all of it held.
 */
#include <unistd.h>
#include "mpi_common.h"

#define MiB (1 << 20)

static int next_rank, prev_rank;

/* 1. Non-overtaking: one tag, sizes cycling through eager and rendezvous. */
static void order_stream(int round)
{
	static const int sizes[] = { 8, 16384, 65536, MiB };
	enum { N = 16 };
	const int tag = 10 + round;
	MPI_Request sreq[N], rreq[N];
	MPI_Status st[N];
	char *sbuf[N], *rbuf[N];
	int i, count;

	for (i = 0; i < N; i++) {
		int n = sizes[i % 4];

		sbuf[i] = xmalloc(n);
		rbuf[i] = xmalloc(MiB);
		fill(sbuf[i], n, seed_of(rank, next_rank, tag, i));
	}
	if (round == 1) {
		/* All receives posted before anything is sent. */
		for (i = 0; i < N; i++)
			MPI(MPI_Irecv(rbuf[i], MiB, MPI_CHAR, MPI_ANY_SOURCE, tag,
				      MPI_COMM_WORLD, &rreq[i]));
		MPI(MPI_Barrier(MPI_COMM_WORLD));
	}
	for (i = 0; i < N; i++)
		MPI(MPI_Isend(sbuf[i], sizes[i % 4], MPI_CHAR, next_rank, tag,
			      MPI_COMM_WORLD, &sreq[i]));
	if (round == 0) {
		/* One at a time, after a pause: most arrive unexpected. */
		usleep(100000);
		for (i = 0; i < N; i++) {
			MPI(MPI_Recv(rbuf[i], MiB, MPI_CHAR, prev_rank, tag,
				     MPI_COMM_WORLD, &st[i]));
		}
	} else {
		MPI(MPI_Waitall(N, rreq, st));
	}
	for (i = 0; i < N; i++) {
		char what[64];

		MPI_Get_count(&st[i], MPI_CHAR, &count);
		CHECK(count == sizes[i % 4] && st[i].MPI_SOURCE == prev_rank &&
		      st[i].MPI_TAG == tag,
		      "order round %d: message %d: count %d source %d tag %d, want %d from %d tag %d",
		      round, i, count, st[i].MPI_SOURCE, st[i].MPI_TAG,
		      sizes[i % 4], prev_rank, tag);
		snprintf(what, sizeof(what), "order round %d message %d", round, i);
		if (count == sizes[i % 4])
			verify(rbuf[i], count, seed_of(prev_rank, rank, tag, i), what);
	}
	MPI(MPI_Waitall(N, sreq, MPI_STATUSES_IGNORE));
	for (i = 0; i < N; i++) {
		free(sbuf[i]);
		free(rbuf[i]);
	}
}

/* 2. MPI_ANY_SOURCE/MPI_ANY_TAG at a root: exact status, order per sender. */
static int wild_size(int src, int j)
{
	return j == 2 ? 20000 + src : 100 * src + 7 * j;	/* one rendezvous */
}

static void wildcards(int root)
{
	enum { K = 3 };
	char *buf = xmalloc(64 * 1024);
	int j;

	if (rank != root) {
		for (j = 0; j < K; j++) {
			int tag = 1000 + rank * 10 + j, n = wild_size(rank, j);

			fill(buf, n, seed_of(rank, root, tag, j));
			MPI(MPI_Send(buf, n, MPI_CHAR, root, tag, MPI_COMM_WORLD));
		}
	} else {
		int *seen = calloc(nprocs, sizeof(int)), m;

		for (m = 0; m < (nprocs - 1) * K; m++) {
			MPI_Status st;
			int src, tag, count;

			memset(buf, 0, 64 * 1024);
			MPI(MPI_Recv(buf, 64 * 1024, MPI_CHAR, MPI_ANY_SOURCE,
				     MPI_ANY_TAG, MPI_COMM_WORLD, &st));
			src = st.MPI_SOURCE;
			tag = st.MPI_TAG;
			MPI_Get_count(&st, MPI_CHAR, &count);
			if (src < 0 || src >= nprocs || src == root) {
				CHECK(0, "wildcards: MPI_SOURCE %d", src);
				continue;
			}
			j = seen[src]++;
			CHECK(tag == 1000 + src * 10 + j,
			      "wildcards: from %d: tag %d, want %d (order)", src, tag,
			      1000 + src * 10 + j);
			CHECK(count == wild_size(src, j),
			      "wildcards: from %d tag %d: count %d, want %d", src,
			      tag, count, wild_size(src, j));
			if (count == wild_size(src, j))
				verify(buf, count, seed_of(src, root, tag, j), "wildcards");
		}
		for (m = 0; m < nprocs; m++)
			CHECK(m == root || seen[m] == K,
			      "wildcards: %d messages from %d", seen[m], m);
		free(seen);
	}
	free(buf);
}

/* 3. Probe, Iprobe, Mprobe, Improbe, Mrecv. */
static void probes(void)
{
	static const int tags[] = { 2001, 2002, 2003, 2004 };
	static const int sizes[] = { 33, 200000, 0, 70000 };
	MPI_Request sreq[4];
	MPI_Message mc, md;
	MPI_Status st;
	char *sbuf[4], *rbuf = xmalloc(200000);
	int i, flag, count;

	for (i = 0; i < 4; i++) {
		sbuf[i] = xmalloc(sizes[i]);
		fill(sbuf[i], sizes[i], seed_of(rank, next_rank, tags[i], 0));
		MPI(MPI_Isend(sbuf[i], sizes[i], MPI_CHAR, next_rank, tags[i],
			      MPI_COMM_WORLD, &sreq[i]));
	}
	/* Probe for the second message: the first one stays. */
	MPI(MPI_Probe(prev_rank, 2002, MPI_COMM_WORLD, &st));
	MPI_Get_count(&st, MPI_CHAR, &count);
	CHECK(st.MPI_SOURCE == prev_rank && st.MPI_TAG == 2002 && count == 200000,
	      "Probe: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, count);
	MPI(MPI_Recv(rbuf, 200000, MPI_CHAR, prev_rank, 2002, MPI_COMM_WORLD, &st));
	MPI_Get_count(&st, MPI_CHAR, &count);
	CHECK(count == 200000, "Recv after Probe: count %d", count);
	verify(rbuf, 200000, seed_of(prev_rank, rank, 2002, 0), "Recv after Probe");

	/* Iprobe with wildcards finds the first message. */
	do {
		MPI(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st));
	} while (!flag);
	MPI_Get_count(&st, MPI_CHAR, &count);
	CHECK(st.MPI_SOURCE == prev_rank && st.MPI_TAG == 2001 && count == 33,
	      "Iprobe: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, count);
	MPI(MPI_Recv(rbuf, 33, MPI_CHAR, st.MPI_SOURCE, st.MPI_TAG,
		     MPI_COMM_WORLD, &st));
	verify(rbuf, 33, seed_of(prev_rank, rank, 2001, 0), "Recv after Iprobe");

	/* Mprobe the last, Improbe the zero-byte one, Mrecv in reverse. */
	MPI(MPI_Mprobe(prev_rank, 2004, MPI_COMM_WORLD, &md, &st));
	MPI_Get_count(&st, MPI_CHAR, &count);
	CHECK(st.MPI_SOURCE == prev_rank && st.MPI_TAG == 2004 && count == 70000,
	      "Mprobe: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, count);
	MPI(MPI_Iprobe(prev_rank, 2004, MPI_COMM_WORLD, &flag, &st));
	CHECK(!flag, "Iprobe sees a message Mprobe matched");
	do {
		MPI(MPI_Improbe(MPI_ANY_SOURCE, 2003, MPI_COMM_WORLD, &flag, &mc, &st));
	} while (!flag);
	MPI_Get_count(&st, MPI_CHAR, &count);
	CHECK(st.MPI_SOURCE == prev_rank && st.MPI_TAG == 2003 && count == 0,
	      "Improbe: source %d tag %d count %d", st.MPI_SOURCE, st.MPI_TAG, count);
	MPI(MPI_Mrecv(rbuf, 10, MPI_CHAR, &mc, &st));
	MPI_Get_count(&st, MPI_CHAR, &count);
	CHECK(count == 0 && st.MPI_TAG == 2003, "Mrecv zero bytes: count %d tag %d",
	      count, st.MPI_TAG);
	CHECK(mc == MPI_MESSAGE_NULL, "Mrecv left the message handle");
	memset(rbuf, 0, 70000);
	MPI(MPI_Mrecv(rbuf, 200000, MPI_CHAR, &md, &st));
	MPI_Get_count(&st, MPI_CHAR, &count);
	CHECK(count == 70000 && st.MPI_SOURCE == prev_rank && st.MPI_TAG == 2004,
	      "Mrecv: count %d source %d tag %d", count, st.MPI_SOURCE, st.MPI_TAG);
	verify(rbuf, 70000, seed_of(prev_rank, rank, 2004, 0), "Mrecv");
	MPI(MPI_Waitall(4, sreq, MPI_STATUSES_IGNORE));
	for (i = 0; i < 4; i++)
		free(sbuf[i]);
	free(rbuf);
}

/* 4. A posted receive cancelled; its tag's next message goes elsewhere. */
static void cancel(void)
{
	MPI_Request req;
	MPI_Status st;
	char a[16], b[16];
	int flag, count;

	memset(a, 0x5a, sizeof(a));
	MPI(MPI_Irecv(a, 16, MPI_CHAR, prev_rank, 3000, MPI_COMM_WORLD, &req));
	MPI(MPI_Cancel(&req));
	MPI(MPI_Wait(&req, &st));
	MPI(MPI_Test_cancelled(&st, &flag));
	CHECK(flag, "posted receive not cancelled");
	CHECK(req == MPI_REQUEST_NULL, "request not freed by Wait");
	/* Any-source cancelled too. */
	MPI(MPI_Irecv(a, 16, MPI_CHAR, MPI_ANY_SOURCE, MPI_ANY_TAG,
		      MPI_COMM_WORLD, &req));
	MPI(MPI_Cancel(&req));
	MPI(MPI_Wait(&req, &st));
	MPI(MPI_Test_cancelled(&st, &flag));
	CHECK(flag, "any-source receive not cancelled");
	MPI(MPI_Barrier(MPI_COMM_WORLD));

	fill(b, 16, seed_of(rank, next_rank, 3000, 1));
	MPI(MPI_Sendrecv(b, 16, MPI_CHAR, next_rank, 3000, a, 16, MPI_CHAR,
			 prev_rank, 3000, MPI_COMM_WORLD, &st));
	MPI_Get_count(&st, MPI_CHAR, &count);
	CHECK(count == 16 && st.MPI_TAG == 3000, "after cancel: count %d tag %d",
	      count, st.MPI_TAG);
	verify(a, 16, seed_of(prev_rank, rank, 3000, 1), "message after cancel");
	MPI_Test_cancelled(&st, &flag);
	CHECK(!flag, "completed receive says cancelled");
}

/* 5. Truncation: MPI_ERR_TRUNCATE, nothing written past the buffer. */
static void truncation(void)
{
	static const int sent[] = { 100, 100000 }, room[] = { 10, 50000 };
	int i;

	for (i = 0; i < 2; i++) {
		char *s = xmalloc(sent[i]), *r = xmalloc(sent[i]);
		MPI_Request req;
		MPI_Status st;
		int err, cls = -1, j, bad = 0;

		fill(s, sent[i], seed_of(rank, next_rank, 4000 + i, 0));
		memset(r, 0xee, sent[i]);
		MPI(MPI_Isend(s, sent[i], MPI_CHAR, next_rank, 4000 + i,
			      MPI_COMM_WORLD, &req));
		err = MPI_Recv(r, room[i], MPI_CHAR, prev_rank, 4000 + i,
			       MPI_COMM_WORLD, &st);
		MPI_Error_class(err, &cls);
		CHECK(cls == MPI_ERR_TRUNCATE,
		      "%d bytes into %d: error class %d, want MPI_ERR_TRUNCATE (%d)",
		      sent[i], room[i], cls, MPI_ERR_TRUNCATE);
		for (j = room[i]; j < sent[i]; j++)
			bad += (unsigned char)r[j] != 0xee;
		CHECK(!bad, "%d bytes into %d: %d bytes written past the buffer",
		      sent[i], room[i], bad);
		MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
		free(s);
		free(r);
	}
	/* The pair still talks. */
	{
		char s[64], r[64];
		MPI_Status st;
		int count;

		fill(s, 64, seed_of(rank, next_rank, 4002, 0));
		MPI(MPI_Sendrecv(s, 64, MPI_CHAR, next_rank, 4002, r, 64, MPI_CHAR,
				 prev_rank, 4002, MPI_COMM_WORLD, &st));
		MPI_Get_count(&st, MPI_CHAR, &count);
		CHECK(count == 64, "after truncation: count %d", count);
		verify(r, 64, seed_of(prev_rank, rank, 4002, 0), "after truncation");
	}
}

/*
 * 6. Synchronous send: MPI_Issend must not complete before the receiver
 * posts its receive, which it does only once it has the sender's "go"
 * (sent after a second of MPI_Test polls).
 */
static void ssend(void)
{
	static const int sizes[] = { 8, 65536, MiB };
	int partner = rank ^ 1, i;

	if (partner >= nprocs)
		return;		/* odd count: the last rank sits out */
	for (i = 0; i < 3; i++) {
		int n = sizes[i], tag = 5000 + i, flag = 0, polls = 0, count;
		char *buf = xmalloc(n);
		MPI_Request req;
		MPI_Status st;
		double t0;

		if (!(rank & 1)) {
			fill(buf, n, seed_of(rank, partner, tag, 0));
			MPI(MPI_Issend(buf, n, MPI_CHAR, partner, tag,
				       MPI_COMM_WORLD, &req));
			t0 = MPI_Wtime();
			while (MPI_Wtime() - t0 < 1.0 && !flag) {
				MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
				polls++;
				usleep(1000);
			}
			CHECK(!flag, "Issend of %d bytes complete before the receive was posted (after %d tests)",
			      n, polls);
			MPI(MPI_Send(NULL, 0, MPI_CHAR, partner, 5100,
				     MPI_COMM_WORLD));
			if (!flag)
				MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
		} else {
			MPI(MPI_Recv(NULL, 0, MPI_CHAR, partner, 5100,
				     MPI_COMM_WORLD, MPI_STATUS_IGNORE));
			memset(buf, 0, n);
			MPI(MPI_Recv(buf, n, MPI_CHAR, partner, tag,
				     MPI_COMM_WORLD, &st));
			MPI_Get_count(&st, MPI_CHAR, &count);
			CHECK(count == n, "Ssend of %d: count %d", n, count);
			verify(buf, n, seed_of(partner, rank, tag, 0), "Ssend data");
		}
		free(buf);
	}
	/* And a blocking MPI_Ssend both ways. */
	{
		char s[100], r[100];

		fill(s, 100, seed_of(rank, partner, 5200, 0));
		if (!(rank & 1)) {
			MPI(MPI_Ssend(s, 100, MPI_CHAR, partner, 5200, MPI_COMM_WORLD));
			MPI(MPI_Recv(r, 100, MPI_CHAR, partner, 5200,
				     MPI_COMM_WORLD, MPI_STATUS_IGNORE));
		} else {
			MPI(MPI_Recv(r, 100, MPI_CHAR, partner, 5200,
				     MPI_COMM_WORLD, MPI_STATUS_IGNORE));
			MPI(MPI_Ssend(s, 100, MPI_CHAR, partner, 5200, MPI_COMM_WORLD));
		}
		verify(r, 100, seed_of(partner, rank, 5200, 0), "blocking Ssend");
	}
}

/* 7. Zero-byte messages. */
static void zero_bytes(void)
{
	MPI_Request req[2];
	MPI_Status st[2];
	char buf[8] = "zzzzzzz";
	int count, i;

	for (i = 0; i < 3; i++) {
		int tag = 6000 + i;

		MPI(MPI_Irecv(buf, 8, MPI_CHAR, prev_rank, MPI_ANY_TAG,
			      MPI_COMM_WORLD, &req[0]));
		if (i == 1)
			MPI(MPI_Issend(buf, 0, MPI_CHAR, next_rank, tag,
				       MPI_COMM_WORLD, &req[1]));
		else
			MPI(MPI_Isend(buf, 0, MPI_CHAR, next_rank, tag,
				      MPI_COMM_WORLD, &req[1]));
		MPI(MPI_Waitall(2, req, st));
		MPI_Get_count(&st[0], MPI_CHAR, &count);
		CHECK(count == 0 && st[0].MPI_SOURCE == prev_rank &&
		      st[0].MPI_TAG == tag,
		      "zero bytes %d: count %d source %d tag %d", i, count,
		      st[0].MPI_SOURCE, st[0].MPI_TAG);
	}
	CHECK(!strcmp(buf, "zzzzzzz"), "zero-byte receives wrote the buffer");
	MPI(MPI_Sendrecv(NULL, 0, MPI_CHAR, next_rank, 6010, NULL, 0, MPI_CHAR,
			 prev_rank, 6010, MPI_COMM_WORLD, &st[0]));
	MPI_Get_count(&st[0], MPI_CHAR, &count);
	CHECK(count == 0, "zero-byte Sendrecv: count %d", count);
}

/* 8. Large messages. */
static void large(void)
{
	static const int sizes[] = { 8 * MiB, 3 * MiB + 5 };
	int i;

	for (i = 0; i < 2; i++) {
		int n = sizes[i], count;
		char *s = xmalloc(n), *r = xmalloc(n);
		MPI_Status st;

		fill(s, n, seed_of(rank, next_rank, 7000 + i, 0));
		memset(r, 0, n);
		MPI(MPI_Sendrecv(s, n, MPI_CHAR, next_rank, 7000 + i, r, n, MPI_CHAR,
				 prev_rank, 7000 + i, MPI_COMM_WORLD, &st));
		MPI_Get_count(&st, MPI_CHAR, &count);
		CHECK(count == n, "large %d: count %d", n, count);
		verify(r, n, seed_of(prev_rank, rank, 7000 + i, 0), "large message");
		free(s);
		free(r);
	}
}

/* 9. Many outstanding requests, distinct tags, receives reversed. */
static int many_size(int i)
{
	return i % 16 == 5 ? 20000 + i : (i * 37) % 1500;
}

static void many(int late)
{
	enum { M = 256 };
	MPI_Request *rreq = xmalloc(M * sizeof(*rreq));
	MPI_Request *sreq = xmalloc(M * sizeof(*sreq));
	MPI_Status *st = xmalloc(M * sizeof(*st));
	char **s = xmalloc(M * sizeof(char *)), **r = xmalloc(M * sizeof(char *));
	int i, count, base = 8000 + late * 1000;

	for (i = 0; i < M; i++) {
		s[i] = xmalloc(many_size(i));
		r[i] = xmalloc(many_size(i));
		fill(s[i], many_size(i), seed_of(rank, next_rank, base + i, late));
	}
	/* Receive i (of tag base + M-1-i) posted in reverse tag order. */
	if (!late) {
		for (i = 0; i < M; i++)
			MPI(MPI_Irecv(r[M - 1 - i], many_size(M - 1 - i), MPI_CHAR,
				      prev_rank, base + M - 1 - i, MPI_COMM_WORLD,
				      &rreq[i]));
		MPI(MPI_Barrier(MPI_COMM_WORLD));
	}
	for (i = 0; i < M; i++)
		MPI(MPI_Isend(s[i], many_size(i), MPI_CHAR, next_rank, base + i,
			      MPI_COMM_WORLD, &sreq[i]));
	if (late) {
		usleep(100000);
		for (i = 0; i < M; i++)
			MPI(MPI_Irecv(r[M - 1 - i], many_size(M - 1 - i), MPI_CHAR,
				      prev_rank, base + M - 1 - i, MPI_COMM_WORLD,
				      &rreq[i]));
	}
	MPI(MPI_Waitall(M, rreq, st));
	for (i = 0; i < M; i++) {
		int k = M - 1 - i;

		MPI_Get_count(&st[i], MPI_CHAR, &count);
		CHECK(count == many_size(k) && st[i].MPI_TAG == base + k &&
		      st[i].MPI_SOURCE == prev_rank,
		      "many (late %d): receive %d: count %d tag %d source %d", late,
		      i, count, st[i].MPI_TAG, st[i].MPI_SOURCE);
		verify(r[k], many_size(k), seed_of(prev_rank, rank, base + k, late),
		       "many outstanding");
	}
	MPI(MPI_Waitall(M, sreq, MPI_STATUSES_IGNORE));
	for (i = 0; i < M; i++) {
		free(s[i]);
		free(r[i]);
	}
	free(s);
	free(r);
	free(st);
	free(sreq);
	free(rreq);
}

int main(int argc, char **argv)
{
	common_init(&argc, &argv, "mpi_p2p");
	if (nprocs < 2) {
		if (!rank)
			fprintf(stderr, "mpi_p2p: needs 2 ranks or more\n");
		MPI_Finalize();
		return 2;
	}
	next_rank = (rank + 1) % nprocs;
	prev_rank = (rank + nprocs - 1) % nprocs;

	phase("order: one by one");
	order_stream(0);
	MPI(MPI_Barrier(MPI_COMM_WORLD));
	phase("order: receives posted first, MPI_ANY_SOURCE");
	order_stream(1);
	MPI(MPI_Barrier(MPI_COMM_WORLD));
	phase("wildcards at rank 0");
	wildcards(0);
	MPI(MPI_Barrier(MPI_COMM_WORLD));
	phase("wildcards at the last rank");
	wildcards(nprocs - 1);
	MPI(MPI_Barrier(MPI_COMM_WORLD));
	phase("probes");
	probes();
	MPI(MPI_Barrier(MPI_COMM_WORLD));
	phase("cancel");
	cancel();
	MPI(MPI_Barrier(MPI_COMM_WORLD));
	phase("truncation");
	truncation();
	MPI(MPI_Barrier(MPI_COMM_WORLD));
	phase("ssend");
	ssend();
	MPI(MPI_Barrier(MPI_COMM_WORLD));
	phase("zero bytes");
	zero_bytes();
	MPI(MPI_Barrier(MPI_COMM_WORLD));
	phase("large");
	large();
	MPI(MPI_Barrier(MPI_COMM_WORLD));
	phase("many outstanding, receives first");
	many(0);
	MPI(MPI_Barrier(MPI_COMM_WORLD));
	phase("many outstanding, sends first");
	many(1);
	return common_finish();
}

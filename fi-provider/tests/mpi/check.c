/*
 * An MPI program for Open MPI's `mtl ofi` over the zerorx provider (tests/mpi.rs
 * builds and runs it with 4 ranks): point-to-point, probes, truncation, collectives. Every byte of every message is a function of
 * (source, destination, tag, index) and checked; any mismatch exits non-zero with a
 * line saying which message and byte.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static unsigned char byte_of(int src, int dst, int tag, size_t i) {
    return (unsigned char)(src * 131 + dst * 31 + tag * 7 + i * 13 + (i >> 8));
}

static void fill(unsigned char *b, size_t n, int src, int dst, int tag) {
    for (size_t i = 0; i < n; i++) b[i] = byte_of(src, dst, tag, i);
}

static void check(const unsigned char *b, size_t n, int src, int dst, int tag, const char *what) {
    for (size_t i = 0; i < n; i++) {
        if (b[i] != byte_of(src, dst, tag, i)) {
            fprintf(stderr, "rank %d: %s: %zu-byte message %d->%d tag %d: byte %zu is %u, not %u\n",
                    rank, what, n, src, dst, tag, i, b[i], byte_of(src, dst, tag, i));
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
}

static void expect(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "rank %d: %s\n", rank, what);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

/* A ring exchange of every size: receives from MPI_ANY_SOURCE with MPI_ANY_TAG,
 * checking the status names the left neighbour and the round's tag. */
static void ring(void) {
    const size_t sizes[] = {0, 1, 7, 64, 1000, 4096, 65535, 65536, 1 << 20, 3000001, 16 << 20};
    const int n = sizeof(sizes) / sizeof(sizes[0]);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    unsigned char *out = malloc(16 << 20), *in = malloc(16 << 20);
    for (int k = 0; k < n; k++) {
        MPI_Request req;
        MPI_Status st;
        int count;
        fill(out, sizes[k], rank, right, k);
        memset(in, 0xee, sizes[k]);
        MPI_Irecv(in, (int)sizes[k], MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req);
        if (k % 2)
            MPI_Ssend(out, (int)sizes[k], MPI_BYTE, right, k, MPI_COMM_WORLD);
        else
            MPI_Send(out, (int)sizes[k], MPI_BYTE, right, k, MPI_COMM_WORLD);
        MPI_Wait(&req, &st);
        MPI_Get_count(&st, MPI_BYTE, &count);
        expect(st.MPI_SOURCE == left, "ring: MPI_ANY_SOURCE reported the wrong source");
        expect(st.MPI_TAG == k, "ring: MPI_ANY_TAG reported the wrong tag");
        expect((size_t)count == sizes[k], "ring: wrong count");
        check(in, sizes[k], left, rank, k, "ring");
    }
    free(out);
    free(in);
}

/* Rank 0 receives rank 1's messages by tag in the reverse of their sending order,
 * so all but one wait as unexpected messages first. */
static void tag_selection(void) {
    enum { N = 16, LEN = 10000 };
    unsigned char buf[LEN];
    if (rank == 1) {
        for (int t = 0; t < N; t++) {
            fill(buf, LEN, 1, 0, 100 + t);
            MPI_Send(buf, LEN, MPI_BYTE, 0, 100 + t, MPI_COMM_WORLD);
        }
    } else if (rank == 0) {
        for (int t = N - 1; t >= 0; t--) {
            MPI_Status st;
            MPI_Recv(buf, LEN, MPI_BYTE, 1, 100 + t, MPI_COMM_WORLD, &st);
            expect(st.MPI_TAG == 100 + t, "tag selection: wrong tag");
            check(buf, LEN, 1, 0, 100 + t, "tag selection");
        }
    }
}

/* Every rank sends to every other at once; each receives from a named source. */
static void all_pairs(void) {
    enum { LEN = 50000 };
    unsigned char *out = malloc((size_t)LEN * size), *in = malloc((size_t)LEN * size);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * size);
    int r = 0;
    for (int p = 0; p < size; p++) {
        if (p == rank) continue;
        MPI_Irecv(in + (size_t)p * LEN, LEN, MPI_BYTE, p, 7, MPI_COMM_WORLD, &reqs[r++]);
    }
    for (int p = 0; p < size; p++) {
        if (p == rank) continue;
        fill(out + (size_t)p * LEN, LEN, rank, p, 7);
        MPI_Isend(out + (size_t)p * LEN, LEN, MPI_BYTE, p, 7, MPI_COMM_WORLD, &reqs[r++]);
    }
    MPI_Waitall(r, reqs, MPI_STATUSES_IGNORE);
    for (int p = 0; p < size; p++)
        if (p != rank) check(in + (size_t)p * LEN, LEN, p, rank, 7, "all pairs");
    free(out);
    free(in);
    free(reqs);
}

/* Rank 0 probes rank 1's messages before receiving them: MPI_Iprobe (FI_PEEK)
 * until one is there, then MPI_Improbe + MPI_Mrecv (FI_PEEK | FI_CLAIM, FI_CLAIM). */
static void probes(void) {
    enum { N = 8, LEN = 3000 };
    unsigned char buf[LEN];
    if (rank == 1) {
        for (int t = 0; t < N; t++) {
            fill(buf, LEN - t, 1, 0, 200 + t);
            MPI_Send(buf, LEN - t, MPI_BYTE, 0, 200 + t, MPI_COMM_WORLD);
        }
    } else if (rank == 0) {
        for (int t = 0; t < N; t++) {
            int flag = 0, count = 0;
            MPI_Status st;
            MPI_Message msg;
            while (!flag) MPI_Iprobe(1, 200 + t, MPI_COMM_WORLD, &flag, &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            expect(count == LEN - t, "MPI_Iprobe: wrong count");
            flag = 0;
            while (!flag) MPI_Improbe(MPI_ANY_SOURCE, 200 + t, MPI_COMM_WORLD, &flag, &msg, &st);
            expect(st.MPI_SOURCE == 1, "MPI_Improbe: wrong source");
            memset(buf, 0, LEN);
            MPI_Mrecv(buf, LEN, MPI_BYTE, &msg, &st);
            MPI_Get_count(&st, MPI_BYTE, &count);
            expect(count == LEN - t, "MPI_Mrecv: wrong count");
            check(buf, LEN - t, 1, 0, 200 + t, "probe");
        }
    }
}

/* A message longer than the receive: MPI_ERR_TRUNCATE (FI_ETRUNC), and the
 * communication goes on. */
static void truncation(void) {
    unsigned char buf[1000];
    if (rank == 1) {
        fill(buf, 1000, 1, 0, 300);
        MPI_Send(buf, 1000, MPI_BYTE, 0, 300, MPI_COMM_WORLD);
        MPI_Send(buf, 10, MPI_BYTE, 0, 301, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Status st;
        int err, class;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        err = MPI_Recv(buf, 100, MPI_BYTE, 1, 300, MPI_COMM_WORLD, &st);
        MPI_Error_class(err, &class);
        expect(class == MPI_ERR_TRUNCATE, "a 1000-byte message into 100 bytes: not MPI_ERR_TRUNCATE");
        check(buf, 100, 1, 0, 300, "truncated");
        err = MPI_Recv(buf, 100, MPI_BYTE, 1, 301, MPI_COMM_WORLD, &st);
        expect(err == MPI_SUCCESS, "the message after a truncation");
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    }
}

static void collectives(void) {
    enum { N = 100000 };
    long *v = malloc(sizeof(long) * N), *sum = malloc(sizeof(long) * N);
    for (int i = 0; i < N; i++) v[i] = (long)i * (rank + 1);
    MPI_Allreduce(v, sum, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    long ranks = (long)size * (size + 1) / 2;
    for (int i = 0; i < N; i++) expect(sum[i] == (long)i * ranks, "MPI_Allreduce: wrong sum");
    for (int i = 0; i < 50; i++) MPI_Barrier(MPI_COMM_WORLD);
    free(v);
    free(sum);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    expect(size >= 2, "needs at least 2 ranks");
    /* Barriers between phases: the ring's MPI_ANY_SOURCE/MPI_ANY_TAG receives
     * would rightly match a later phase's message from another rank. */
    ring();
    MPI_Barrier(MPI_COMM_WORLD);
    tag_selection();
    MPI_Barrier(MPI_COMM_WORLD);
    all_pairs();
    MPI_Barrier(MPI_COMM_WORLD);
    probes();
    MPI_Barrier(MPI_COMM_WORLD);
    truncation();
    MPI_Barrier(MPI_COMM_WORLD);
    collectives();
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("zerorx mpi check: all checks passed on %d ranks\n", size);
    MPI_Finalize();
    return 0;
}

/* Non-blocking point-to-point and request handling: MPI_Isend/MPI_Irecv
 * with MPI_Wait, MPI_Waitall (with MPI_STATUSES_IGNORE and with
 * statuses), MPI_Waitany, MPI_Waitsome, MPI_Test, MPI_Testall,
 * MPI_Testany, MPI_Testsome, MPI_Issend, MPI_Request_free on a send,
 * MPI_REQUEST_NULL in arrays, MPI_Probe/MPI_Iprobe, MPI_Cancel of a posted
 * receive, persistent requests (MPI_Send_init, MPI_Recv_init, MPI_Start,
 * MPI_Startall), among them ones whose derived datatypes were freed after
 * their init. Runs on any number of ranks. */
#include "check.h"

static int rank, size, left, right;

static void fill_ints(int *buf, int n, int base)
{
    for (int k = 0; k < n; k++)
        buf[k] = base + k;
}

static int wrong_ints(const int *buf, int n, int base)
{
    int wrong = 0;
    for (int k = 0; k < n; k++)
        wrong += buf[k] != base + k;
    return wrong;
}

/* A ring shift with MPI_Irecv/MPI_Isend and MPI_Wait, at sizes up to
 * 2^20 ints. */
static void ring_wait(void)
{
    const int counts[] = {0, 1, 1000, 1 << 20};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int n = counts[c];
        int *out = malloc(sizeof(int) * (n + 1)), *in = malloc(sizeof(int) * (n + 1));
        fill_ints(out, n, rank * 3 + (int)c);
        for (int k = 0; k <= n; k++)
            in[k] = -1;
        MPI_Request recv, send;
        MPI_Status status;
        check_preset_status(&status);
        CHECK_MPI(MPI_Irecv(in, n, MPI_INT, left, (int)c, MPI_COMM_WORLD, &recv));
        CHECK_MPI(MPI_Isend(out, n, MPI_INT, right, (int)c, MPI_COMM_WORLD, &send));
        CHECK_MPI(MPI_Wait(&send, MPI_STATUS_IGNORE));
        CHECK_INT(MPI_REQUEST_NULL, send, "MPI_Wait sets a send request to MPI_REQUEST_NULL");
        CHECK_MPI(MPI_Wait(&recv, &status));
        CHECK_INT(MPI_REQUEST_NULL, recv, "MPI_Wait sets a receive request to MPI_REQUEST_NULL");
        CHECK_STATUS(&status, left, (int)c, MPI_INT, n, "MPI_Irecv + MPI_Wait");
        CHECK_INT(0, wrong_ints(in, n, left * 3 + (int)c), "MPI_Irecv of %d ints: elements not as sent", n);
        CHECK_INT(-1, in[n], "MPI_Irecv of %d ints: the element after is untouched", n);
        free(out);
        free(in);
    }
}

/* What rank `from` sends rank `to` in the all-to-all exchanges: some
 * pairs past the eager limit. */
static int pair_count(int from, int to)
{
    return (from * size + to) % 3 == 0 ? 70000 : from + to + 1;
}

/* Every rank sends to every rank (itself too): MPI_Waitall with statuses
 * for the receives and MPI_STATUSES_IGNORE for the sends, then one
 * MPI_Waitall over all of them with MPI_STATUSES_IGNORE. */
static void all_to_all_waitall(void)
{
    int **out = malloc(sizeof(int *) * size), **in = malloc(sizeof(int *) * size);
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * size);
    MPI_Status *statuses = malloc(sizeof(MPI_Status) * size);
    for (int p = 0; p < size; p++) {
        out[p] = malloc(sizeof(int) * pair_count(rank, p));
        in[p] = malloc(sizeof(int) * (pair_count(p, rank) + 1));
    }
    for (int round = 0; round < 2; round++) {
        for (int p = 0; p < size; p++) {
            fill_ints(out[p], pair_count(rank, p), rank * 1000 + p * 10 + round);
            memset(in[p], 0xff, sizeof(int) * (pair_count(p, rank) + 1));
            check_preset_status(&statuses[p]);
            CHECK_MPI(MPI_Irecv(in[p], pair_count(p, rank) + 1, MPI_INT, p, 7, MPI_COMM_WORLD, &reqs[p]));
        }
        for (int p = 0; p < size; p++)
            CHECK_MPI(MPI_Isend(out[p], pair_count(rank, p), MPI_INT, p, 7, MPI_COMM_WORLD, &reqs[size + p]));
        if (round == 0) {
            CHECK_MPI(MPI_Waitall(size, reqs, statuses));
            CHECK_MPI(MPI_Waitall(size, reqs + size, MPI_STATUSES_IGNORE));
        } else {
            CHECK_MPI(MPI_Waitall(2 * size, reqs, MPI_STATUSES_IGNORE));
        }
        for (int i = 0; i < 2 * size; i++)
            CHECK_INT(MPI_REQUEST_NULL, reqs[i], "round %d: MPI_Waitall sets request %d to MPI_REQUEST_NULL", round,
                      i);
        for (int p = 0; p < size; p++) {
            int n = pair_count(p, rank);
            if (round == 0) {
                char what[80];
                snprintf(what, sizeof what, "MPI_Waitall status %d", p);
                CHECK_STATUS(&statuses[p], p, 7, MPI_INT, n, what);
            }
            CHECK_INT(0, wrong_ints(in[p], n, p * 1000 + rank * 10 + round),
                      "round %d: %d ints from rank %d: elements not as sent", round, n, p);
        }
    }
    for (int p = 0; p < size; p++) {
        free(out[p]);
        free(in[p]);
    }
    free(out);
    free(in);
    free(reqs);
    free(statuses);
}

/* Receives from every rank, posted in an array with MPI_REQUEST_NULL
 * holes (slot 2p+1), completed with MPI_Waitany, MPI_Waitsome or the
 * MPI_Test forms. Returns the number of completions seen. */
enum completion { BY_WAITANY, BY_WAITSOME, BY_TESTANY, BY_TESTSOME };
static const char *completion_name[] = {"MPI_Waitany", "MPI_Waitsome", "MPI_Testany", "MPI_Testsome"};

static void complete_one(enum completion how, int index, int *seen, int *values, MPI_Request *reqs,
                         MPI_Status *status)
{
    const char *name = completion_name[how];
    if (!CHECK(index >= 0 && index < 2 * size && index % 2 == 0 && !seen[index / 2],
               "%s gives index %d of a posted, not yet completed receive", name, index))
        return;
    int p = index / 2;
    seen[p] = 1;
    CHECK_INT(MPI_REQUEST_NULL, reqs[index], "%s sets the completed request %d to MPI_REQUEST_NULL", name, index);
    char what[80];
    snprintf(what, sizeof what, "%s: receive from rank %d", name, p);
    CHECK_STATUS(status, p, 30 + p, MPI_INT, 1, what);
    CHECK_INT(p * 100 + rank, values[p], "%s: value from rank %d", name, p);
}

static void any_and_some(enum completion how)
{
    const char *name = completion_name[how];
    int *values = malloc(sizeof(int) * size), *out = malloc(sizeof(int) * size), *seen = calloc(size, sizeof(int));
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * 2 * size), *sends = malloc(sizeof(MPI_Request) * size);
    MPI_Status *statuses = malloc(sizeof(MPI_Status) * 2 * size);
    int *indices = malloc(sizeof(int) * 2 * size);
    for (int p = 0; p < size; p++) {
        values[p] = -1;
        reqs[2 * p + 1] = MPI_REQUEST_NULL;
        CHECK_MPI(MPI_Irecv(&values[p], 1, MPI_INT, p, 30 + p, MPI_COMM_WORLD, &reqs[2 * p]));
    }
    /* Sends in reverse order, so completions need not follow the array. */
    for (int p = size - 1; p >= 0; p--) {
        out[p] = rank * 100 + p;
        CHECK_MPI(MPI_Isend(&out[p], 1, MPI_INT, p, 30 + rank, MPI_COMM_WORLD, &sends[p]));
    }
    int completed = 0;
    while (completed < size) {
        int index = -5, flag = 1, outcount = -5;
        MPI_Status status;
        check_preset_status(&status);
        switch (how) {
        case BY_WAITANY:
            CHECK_MPI(MPI_Waitany(2 * size, reqs, &index, &status));
            complete_one(how, index, seen, values, reqs, &status);
            completed++;
            break;
        case BY_TESTANY:
            CHECK_MPI(MPI_Testany(2 * size, reqs, &index, &flag, &status));
            if (flag) {
                complete_one(how, index, seen, values, reqs, &status);
                completed++;
            } else {
                CHECK_INT(MPI_UNDEFINED, index, "MPI_Testany without a completion: index");
            }
            break;
        case BY_WAITSOME:
        case BY_TESTSOME:
            for (int i = 0; i < 2 * size; i++)
                check_preset_status(&statuses[i]);
            if (how == BY_WAITSOME)
                CHECK_MPI(MPI_Waitsome(2 * size, reqs, &outcount, indices, statuses));
            else
                CHECK_MPI(MPI_Testsome(2 * size, reqs, &outcount, indices, statuses));
            if (!CHECK(outcount >= (how == BY_WAITSOME ? 1 : 0) && outcount <= size - completed,
                       "%s outcount %d with %d receives pending", name, outcount, size - completed)) {
                completed = size;
                break;
            }
            for (int i = 0; i < outcount; i++)
                complete_one(how, indices[i], seen, values, reqs, &statuses[i]);
            completed += outcount;
            break;
        }
        if (completed > size)
            break;
    }
    CHECK_MPI(MPI_Waitall(size, sends, MPI_STATUSES_IGNORE));

    /* Nothing active is left: the index or count is MPI_UNDEFINED. */
    int index = -5, flag = 0, outcount = -5;
    MPI_Status status;
    check_preset_status(&status);
    switch (how) {
    case BY_WAITANY:
        CHECK_MPI(MPI_Waitany(2 * size, reqs, &index, &status));
        CHECK_INT(MPI_UNDEFINED, index, "MPI_Waitany over MPI_REQUEST_NULLs: index");
        CHECK_EMPTY_STATUS(&status, MPI_ANY_SOURCE, "MPI_Waitany over MPI_REQUEST_NULLs");
        break;
    case BY_TESTANY:
        CHECK_MPI(MPI_Testany(2 * size, reqs, &index, &flag, &status));
        CHECK_INT(1, flag, "MPI_Testany over MPI_REQUEST_NULLs: flag");
        CHECK_INT(MPI_UNDEFINED, index, "MPI_Testany over MPI_REQUEST_NULLs: index");
        CHECK_EMPTY_STATUS(&status, MPI_ANY_SOURCE, "MPI_Testany over MPI_REQUEST_NULLs");
        break;
    case BY_WAITSOME:
        CHECK_MPI(MPI_Waitsome(2 * size, reqs, &outcount, indices, statuses));
        CHECK_INT(MPI_UNDEFINED, outcount, "MPI_Waitsome over MPI_REQUEST_NULLs: outcount");
        break;
    case BY_TESTSOME:
        CHECK_MPI(MPI_Testsome(2 * size, reqs, &outcount, indices, statuses));
        CHECK_INT(MPI_UNDEFINED, outcount, "MPI_Testsome over MPI_REQUEST_NULLs: outcount");
        break;
    }
    free(values);
    free(out);
    free(seen);
    free(reqs);
    free(sends);
    free(statuses);
    free(indices);
}

/* Completion calls on MPI_REQUEST_NULL alone. */
static void null_requests(void)
{
    MPI_Request reqs[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status status, statuses[3];
    int flag = 0, index = -5;
    check_preset_status(&status);
    CHECK_MPI(MPI_Wait(&reqs[0], &status));
    CHECK_EMPTY_STATUS(&status, MPI_ANY_SOURCE, "MPI_Wait(MPI_REQUEST_NULL)");
    check_preset_status(&status);
    CHECK_MPI(MPI_Test(&reqs[0], &flag, &status));
    CHECK_INT(1, flag, "MPI_Test(MPI_REQUEST_NULL): flag");
    CHECK_EMPTY_STATUS(&status, MPI_ANY_SOURCE, "MPI_Test(MPI_REQUEST_NULL)");
    for (int i = 0; i < 3; i++)
        check_preset_status(&statuses[i]);
    CHECK_MPI(MPI_Waitall(3, reqs, statuses));
    for (int i = 0; i < 3; i++)
        CHECK_EMPTY_STATUS(&statuses[i], MPI_ANY_SOURCE, "MPI_Waitall of MPI_REQUEST_NULLs");
    flag = 0;
    CHECK_MPI(MPI_Testall(3, reqs, &flag, MPI_STATUSES_IGNORE));
    CHECK_INT(1, flag, "MPI_Testall of MPI_REQUEST_NULLs: flag");
    CHECK_MPI(MPI_Waitany(3, reqs, &index, MPI_STATUS_IGNORE));
    CHECK_INT(MPI_UNDEFINED, index, "MPI_Waitany of MPI_REQUEST_NULLs: index");
    CHECK_MPI(MPI_Waitany(0, NULL, &index, MPI_STATUS_IGNORE));
    CHECK_INT(MPI_UNDEFINED, index, "MPI_Waitany of no requests: index");
    CHECK_MPI(MPI_Waitall(0, NULL, MPI_STATUSES_IGNORE));
}

/* MPI_Test and MPI_Testall loops until the ring shift completes. */
static void test_loops(void)
{
    int out[3], in[3] = {-1, -1, -1};
    fill_ints(out, 3, rank * 10);
    MPI_Request recv, send;
    MPI_Status status;
    check_preset_status(&status);
    CHECK_MPI(MPI_Irecv(in, 3, MPI_INT, left, 21, MPI_COMM_WORLD, &recv));
    CHECK_MPI(MPI_Isend(out, 3, MPI_INT, right, 21, MPI_COMM_WORLD, &send));
    int flag = 0, calls = 0;
    while (!flag && calls < 100000000) {
        CHECK_MPI(MPI_Test(&recv, &flag, &status));
        calls++;
    }
    CHECK_INT(1, flag, "MPI_Test loop on a receive ends with flag set");
    CHECK_INT(MPI_REQUEST_NULL, recv, "MPI_Test with flag set leaves MPI_REQUEST_NULL");
    CHECK_STATUS(&status, left, 21, MPI_INT, 3, "MPI_Test loop");
    CHECK_INT(0, wrong_ints(in, 3, left * 10), "MPI_Test loop: elements not as sent");
    flag = 0;
    while (!flag)
        CHECK_MPI(MPI_Test(&send, &flag, MPI_STATUS_IGNORE));

    /* Large messages, so that completion takes both sides. */
    int n = 1 << 18;
    int *big_out = malloc(sizeof(int) * n), *big_in = malloc(sizeof(int) * n);
    fill_ints(big_out, n, rank * 7);
    MPI_Request reqs[2];
    MPI_Status statuses[2];
    check_preset_status(&statuses[0]);
    CHECK_MPI(MPI_Irecv(big_in, n, MPI_INT, left, 22, MPI_COMM_WORLD, &reqs[0]));
    CHECK_MPI(MPI_Isend(big_out, n, MPI_INT, right, 22, MPI_COMM_WORLD, &reqs[1]));
    flag = 0;
    while (!flag)
        CHECK_MPI(MPI_Testall(2, reqs, &flag, statuses));
    CHECK_INT(MPI_REQUEST_NULL, reqs[0], "MPI_Testall with flag set: request 0");
    CHECK_INT(MPI_REQUEST_NULL, reqs[1], "MPI_Testall with flag set: request 1");
    CHECK_STATUS(&statuses[0], left, 22, MPI_INT, n, "MPI_Testall loop");
    CHECK_INT(0, wrong_ints(big_in, n, left * 7), "MPI_Testall loop: elements not as sent");
    free(big_out);
    free(big_in);
}

/* An MPI_Issend cannot complete before its receive is posted: rank 1
 * posts it only after a barrier that rank 0 enters after testing. */
static void issend(void)
{
    if (size < 2)
        return;
    int value = 4242, got = -1;
    if (rank == 0) {
        MPI_Request req;
        int flag = -1;
        CHECK_MPI(MPI_Issend(&value, 1, MPI_INT, 1, 23, MPI_COMM_WORLD, &req));
        for (int i = 0; i < 1000; i++)
            CHECK_MPI(MPI_Test(&req, &flag, MPI_STATUS_IGNORE));
        CHECK_INT(0, flag, "MPI_Issend completed before the receiver posted its receive");
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    } else {
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        if (rank == 1) {
            CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, 0, 23, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_INT(4242, got, "MPI_Issend's value");
        }
    }
}

/* Tags select messages: two sends, received in the other order. */
static void tag_order(void)
{
    int small = rank, n = 1 << 17;
    int *big = malloc(sizeof(int) * n), *big_in = malloc(sizeof(int) * n), small_in = -1;
    fill_ints(big, n, rank);
    MPI_Request reqs[2];
    CHECK_MPI(MPI_Isend(&small, 1, MPI_INT, right, 1, MPI_COMM_WORLD, &reqs[0]));
    CHECK_MPI(MPI_Isend(big, n, MPI_INT, right, 2, MPI_COMM_WORLD, &reqs[1]));
    MPI_Status status;
    check_preset_status(&status);
    CHECK_MPI(MPI_Recv(big_in, n, MPI_INT, left, 2, MPI_COMM_WORLD, &status));
    CHECK_STATUS(&status, left, 2, MPI_INT, n, "tag 2 received before tag 1");
    CHECK_INT(0, wrong_ints(big_in, n, left), "tag 2 received before tag 1: elements not as sent");
    check_preset_status(&status);
    CHECK_MPI(MPI_Recv(&small_in, 1, MPI_INT, left, 1, MPI_COMM_WORLD, &status));
    CHECK_STATUS(&status, left, 1, MPI_INT, 1, "tag 1 received after tag 2");
    CHECK_INT(left, small_in, "tag 1 received after tag 2");
    CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
    free(big);
    free(big_in);
}

/* MPI_Request_free on an active send: the message still arrives; the
 * receiver's acknowledgement tells the sender its buffer is free. */
static void request_free(void)
{
    const int counts[] = {1, 1 << 18};
    for (int c = 0; c < 2; c++) {
        int n = counts[c];
        int *out = malloc(sizeof(int) * n), *in = malloc(sizeof(int) * n);
        fill_ints(out, n, rank * 5 + c);
        MPI_Request req;
        CHECK_MPI(MPI_Isend(out, n, MPI_INT, right, 24, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Request_free(&req));
        CHECK_INT(MPI_REQUEST_NULL, req, "MPI_Request_free sets MPI_REQUEST_NULL");
        CHECK_MPI(MPI_Recv(in, n, MPI_INT, left, 24, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_INT(0, wrong_ints(in, n, left * 5 + c), "freed send of %d ints: elements not as sent", n);
        CHECK_MPI(MPI_Sendrecv(NULL, 0, MPI_INT, left, 25, NULL, 0, MPI_INT, right, 25, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
        free(out);
        free(in);
    }
}

/* Every rank sends rank*3+1 ints to rank 0, which learns source, tag and
 * size with MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG), then receives exactly
 * that; then the same with MPI_Iprobe loops per tag, MPI_ANY_SOURCE. */
static void probe(void)
{
    int n = rank * 3 + 1;
    int *out = malloc(sizeof(int) * n);
    fill_ints(out, n, rank * 50);
    MPI_Request req;
    CHECK_MPI(MPI_Isend(out, n, MPI_INT, 0, 40 + rank, MPI_COMM_WORLD, &req));
    int flag = -1;
    MPI_Status status;
    if (rank == 0) {
        CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE));
        CHECK_INT(0, flag, "MPI_Iprobe for a tag nobody sends");
        for (int i = 0; i < size; i++) {
            check_preset_status(&status);
            CHECK_MPI(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status));
            int source = status.MPI_SOURCE, count = -1;
            if (!CHECK(source >= 0 && source < size, "MPI_Probe: MPI_SOURCE %d", source))
                break;
            MPI_Get_count(&status, MPI_INT, &count);
            CHECK_INT(source * 3 + 1, count, "MPI_Probe: count from rank %d", source);
            CHECK_INT(40 + source, status.MPI_TAG, "MPI_Probe: tag from rank %d", source);
            if (count < 0 || count > size * 3 + 1)
                break;
            /* Probing again finds the same message: probing does not receive. */
            MPI_Status again;
            check_preset_status(&again);
            CHECK_MPI(MPI_Probe(source, status.MPI_TAG, MPI_COMM_WORLD, &again));
            CHECK_STATUS(&again, source, status.MPI_TAG, MPI_INT, count, "MPI_Probe twice");
            int *in = malloc(sizeof(int) * (count + 1));
            MPI_Status received;
            check_preset_status(&received);
            CHECK_MPI(MPI_Recv(in, count, MPI_INT, source, status.MPI_TAG, MPI_COMM_WORLD, &received));
            CHECK_STATUS(&received, source, status.MPI_TAG, MPI_INT, count, "receive after MPI_Probe");
            CHECK_INT(0, wrong_ints(in, count, source * 50), "receive after MPI_Probe from %d", source);
            free(in);
        }
    }
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    /* The second round starts once the first is received: the wildcard
     * probes above must not see its messages. */
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_Isend(out, n, MPI_INT, 0, 140 + rank, MPI_COMM_WORLD, &req));
    if (rank == 0) {
        for (int source = size - 1; source >= 0; source--) {
            flag = 0;
            check_preset_status(&status);
            while (!flag)
                CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, 140 + source, MPI_COMM_WORLD, &flag, &status));
            CHECK_STATUS(&status, source, 140 + source, MPI_INT, source * 3 + 1, "MPI_Iprobe");
            int *in = malloc(sizeof(int) * (source * 3 + 1));
            CHECK_MPI(MPI_Recv(in, source * 3 + 1, MPI_INT, source, 140 + source, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
            CHECK_INT(0, wrong_ints(in, source * 3 + 1, source * 50), "receive after MPI_Iprobe from %d", source);
            free(in);
        }
    }
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    free(out);
}

/* A receive nobody will match, cancelled: MPI_Wait completes it and
 * MPI_Test_cancelled says so; the buffer is untouched. */
static void cancel(void)
{
    int buf = -9;
    MPI_Request req;
    MPI_Status status;
    for (int how = 0; how < 2; how++) {
        CHECK_MPI(MPI_Irecv(&buf, 1, MPI_INT, how ? MPI_ANY_SOURCE : left, 12345, MPI_COMM_WORLD, &req));
        CHECK_MPI(MPI_Cancel(&req));
        check_preset_status(&status);
        if (how == 0) {
            CHECK_MPI(MPI_Wait(&req, &status));
        } else {
            int flag = 0;
            while (!flag)
                CHECK_MPI(MPI_Test(&req, &flag, &status));
        }
        CHECK_INT(MPI_REQUEST_NULL, req, "a cancelled receive's request after completion");
        int cancelled = -1;
        CHECK_MPI(MPI_Test_cancelled(&status, &cancelled));
        CHECK_INT(1, cancelled, "MPI_Test_cancelled after cancelling a posted receive (%s)",
                  how ? "MPI_ANY_SOURCE, MPI_Test" : "MPI_Wait");
        CHECK_INT(-9, buf, "a cancelled receive leaves its buffer alone");
    }
    /* A completed receive is not cancelled. */
    int out = rank, in = -1;
    check_preset_status(&status);
    CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, right, 26, &in, 1, MPI_INT, left, 26, MPI_COMM_WORLD, &status));
    int cancelled = -1;
    CHECK_MPI(MPI_Test_cancelled(&status, &cancelled));
    CHECK_INT(0, cancelled, "MPI_Test_cancelled of a completed receive");
}

/* Persistent requests started several times with new contents each time,
 * by MPI_Start and MPI_Startall; an inactive one completes at once with
 * an empty status. */
static void persistent(void)
{
    const int counts[] = {5, 1 << 18};
    for (int c = 0; c < 2; c++) {
        int n = counts[c];
        int *out = malloc(sizeof(int) * n), *in = malloc(sizeof(int) * n);
        MPI_Request reqs[2];
        CHECK_MPI(MPI_Recv_init(in, n, MPI_INT, left, 27, MPI_COMM_WORLD, &reqs[0]));
        CHECK_MPI(MPI_Send_init(out, n, MPI_INT, right, 27, MPI_COMM_WORLD, &reqs[1]));
        for (int iteration = 0; iteration < 6; iteration++) {
            fill_ints(out, n, rank * 1000 + iteration);
            memset(in, 0xff, sizeof(int) * n);
            MPI_Status statuses[2];
            check_preset_status(&statuses[0]);
            if (iteration % 2 == 0) {
                CHECK_MPI(MPI_Startall(2, reqs));
            } else {
                CHECK_MPI(MPI_Start(&reqs[0]));
                CHECK_MPI(MPI_Start(&reqs[1]));
            }
            CHECK_MPI(MPI_Waitall(2, reqs, statuses));
            CHECK(reqs[0] != MPI_REQUEST_NULL && reqs[1] != MPI_REQUEST_NULL,
                  "persistent requests stay allocated after completion (iteration %d)", iteration);
            char what[80];
            snprintf(what, sizeof what, "persistent receive of %d ints, iteration %d", n, iteration);
            CHECK_STATUS(&statuses[0], left, 27, MPI_INT, n, what);
            CHECK_INT(0, wrong_ints(in, n, left * 1000 + iteration), "%s: elements not as sent", what);
        }
        MPI_Status status;
        check_preset_status(&status);
        CHECK_MPI(MPI_Wait(&reqs[0], &status));
        CHECK_EMPTY_STATUS(&status, MPI_ANY_SOURCE, "MPI_Wait on an inactive persistent request");
        int flag = 0;
        CHECK_MPI(MPI_Test(&reqs[0], &flag, MPI_STATUS_IGNORE));
        CHECK_INT(1, flag, "MPI_Test on an inactive persistent request");
        CHECK_MPI(MPI_Request_free(&reqs[0]));
        CHECK_MPI(MPI_Request_free(&reqs[1]));
        CHECK_INT(MPI_REQUEST_NULL, reqs[0], "MPI_Request_free of a persistent receive");
        CHECK_INT(MPI_REQUEST_NULL, reqs[1], "MPI_Request_free of a persistent send");
        free(out);
        free(in);
    }
}

/* Persistent requests whose derived datatypes the program frees right
 * after MPI_Send_init/MPI_Recv_init: MPI says a freed datatype's pending
 * communication is unaffected, and every round still moves the strided
 * elements. */
static void persistent_freed_types(void)
{
    int out[8], in[8];
    MPI_Datatype every_other, sendtype, recvtype;
    MPI_Request reqs[2];
    CHECK_MPI(MPI_Type_vector(4, 1, 2, MPI_INT, &every_other));
    CHECK_MPI(MPI_Type_dup(every_other, &sendtype));
    CHECK_MPI(MPI_Type_dup(every_other, &recvtype));
    CHECK_MPI(MPI_Type_free(&every_other));
    CHECK_MPI(MPI_Type_commit(&sendtype));
    CHECK_MPI(MPI_Type_commit(&recvtype));
    CHECK_MPI(MPI_Recv_init(in, 1, recvtype, left, 28, MPI_COMM_WORLD, &reqs[0]));
    CHECK_MPI(MPI_Send_init(out, 1, sendtype, right, 28, MPI_COMM_WORLD, &reqs[1]));
    CHECK_MPI(MPI_Type_free(&sendtype));
    CHECK_MPI(MPI_Type_free(&recvtype));
    for (int round = 0; round < 3; round++) {
        fill_ints(out, 8, rank * 100 + round * 10);
        memset(in, 0xff, sizeof in);
        CHECK_MPI(MPI_Startall(2, reqs));
        CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
        for (int k = 0; k < 8; k++) {
            int expected = k % 2 ? -1 : left * 100 + round * 10 + k;
            CHECK_INT(expected, in[k], "round %d of a persistent receive whose datatype was freed: element %d",
                      round, k);
        }
    }
    CHECK_MPI(MPI_Request_free(&reqs[0]));
    CHECK_MPI(MPI_Request_free(&reqs[1]));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("nonblocking");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;

    ring_wait();
    all_to_all_waitall();
    any_and_some(BY_WAITANY);
    any_and_some(BY_WAITSOME);
    any_and_some(BY_TESTANY);
    any_and_some(BY_TESTSOME);
    null_requests();
    test_loops();
    issend();
    tag_order();
    request_free();
    probe();
    cancel();
    persistent();
    persistent_freed_types();
    return check_finish();
}

/* MPI 4's partitioned point-to-point communication: each rank sends to
 * the next one round a ring (to itself on one rank) with MPI_Psend_init and
 * receives from the previous one with MPI_Precv_init; the same requests
 * run several rounds (MPI_Startall, MPI_Waitall), their partitions marked
 * ready in reverse order with MPI_Pready, by halves with MPI_Pready_range
 * and scattered with MPI_Pready_list, while the receiver polls
 * MPI_Parrived until every partition arrived; a derived datatype's
 * elements land in their places, the gaps untouched; a partitioned send
 * matches only a partitioned receive. Misuse under MPI_ERRORS_RETURN: a
 * partition out of range, MPI_Pready on an inactive request, and (on
 * grappe) MPI_Pready twice and message sizes that differ between the
 * sender and the receiver; different partitionings of one size are fine.
 * Runs on any number of ranks. */
#include "check.h"

#define PARTITIONS 8
#define COUNT 5 /* elements per partition */
#define ROUNDS 4
#define TAG 21

static int rank, size, next, prev;

/* The value of element i of a round's message from rank `from`. */
static int value(int from, int round, int i)
{
    return from * 100000 + round * 1000 + i;
}

/* Marks the partitions ready, differently each round. */
static void mark_ready(MPI_Request send, int round)
{
    int list[PARTITIONS];
    switch (round % 3) {
    case 0:
        for (int p = PARTITIONS - 1; p >= 0; p--)
            CHECK_MPI(MPI_Pready(p, send));
        break;
    case 1:
        CHECK_MPI(MPI_Pready_range(PARTITIONS / 2, PARTITIONS - 1, send));
        CHECK_MPI(MPI_Pready_range(0, PARTITIONS / 2 - 1, send));
        break;
    default:
        for (int k = 0; k < PARTITIONS; k++)
            list[k] = (k * 3 + 1) % PARTITIONS; /* 3 is prime to 8: a permutation */
        CHECK_MPI(MPI_Pready_list(PARTITIONS, list, send));
    }
}

/* Polls MPI_Parrived until every partition arrived (or a minute passed:
 * a failure, not a hang). */
static void wait_for_partitions(MPI_Request recv, int round)
{
    int arrived[PARTITIONS] = {0}, left = PARTITIONS;
    double deadline = MPI_Wtime() + 60;
    while (left > 0 && MPI_Wtime() < deadline) {
        for (int p = 0; p < PARTITIONS; p++) {
            if (arrived[p])
                continue;
            int flag = 0;
            CHECK_MPI(MPI_Parrived(recv, p, &flag));
            if (flag) {
                arrived[p] = 1;
                left--;
            }
        }
    }
    CHECK_INT(0, left, "round %d: partitions not arrived after a minute of MPI_Parrived", round);
}

/* Rounds of a ring of MPI_INT partitions, the same requests each time. */
static void rounds(void)
{
    int sendbuf[PARTITIONS * COUNT], recvbuf[PARTITIONS * COUNT];
    MPI_Request reqs[2];
    CHECK_MPI(MPI_Precv_init(recvbuf, PARTITIONS, COUNT, MPI_INT, prev, TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]));
    CHECK_MPI(MPI_Psend_init(sendbuf, PARTITIONS, COUNT, MPI_INT, next, TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[1]));
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < PARTITIONS * COUNT; i++)
            recvbuf[i] = -1;
        CHECK_MPI(MPI_Startall(2, reqs));
        for (int i = 0; i < PARTITIONS * COUNT; i++)
            sendbuf[i] = value(rank, round, i);
        mark_ready(reqs[1], round);
        wait_for_partitions(reqs[0], round);
        MPI_Status statuses[2];
        CHECK_MPI(MPI_Waitall(2, reqs, statuses));
        CHECK(reqs[0] != MPI_REQUEST_NULL && reqs[1] != MPI_REQUEST_NULL, "round %d: the requests persist", round);
        int expected[PARTITIONS * COUNT];
        for (int i = 0; i < PARTITIONS * COUNT; i++)
            expected[i] = value(prev, round, i);
        CHECK_INTS(expected, recvbuf, PARTITIONS * COUNT, "round %d: the data from rank %d", round, prev);
    }
    CHECK_MPI(MPI_Request_free(&reqs[0]));
    CHECK_MPI(MPI_Request_free(&reqs[1]));
    CHECK(reqs[0] == MPI_REQUEST_NULL, "MPI_Request_free sets the handle to MPI_REQUEST_NULL");
}

/* Partitions of a vector type (every other int): the elements land in
 * their places and the gaps keep their values. */
static void derived(void)
{
    enum { PARTS = 3, ELEMS = 2, INTS = PARTS * ELEMS * 4 };
    MPI_Datatype pair; /* 2 ints, every other one: extent 3 ints */
    MPI_Type_vector(2, 1, 2, MPI_INT, &pair);
    MPI_Datatype spaced; /* extent 4 ints, so the gaps are the 2nd and 4th */
    MPI_Type_create_resized(pair, 0, 4 * sizeof(int), &spaced);
    MPI_Type_commit(&spaced);
    int sendbuf[INTS], recvbuf[INTS];
    for (int i = 0; i < INTS; i++) {
        sendbuf[i] = value(rank, 9, i);
        recvbuf[i] = -7;
    }
    MPI_Request reqs[2];
    CHECK_MPI(MPI_Precv_init(recvbuf, PARTS, ELEMS, spaced, prev, TAG + 1, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]));
    CHECK_MPI(MPI_Psend_init(sendbuf, PARTS, ELEMS, spaced, next, TAG + 1, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[1]));
    CHECK_MPI(MPI_Startall(2, reqs));
    CHECK_MPI(MPI_Pready_range(0, PARTS - 1, reqs[1]));
    CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
    int expected[INTS];
    for (int i = 0; i < INTS; i++)
        expected[i] = i % 2 == 0 ? value(prev, 9, i) : -7;
    CHECK_INTS(expected, recvbuf, INTS, "a vector type's elements from rank %d, the gaps untouched", prev);
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[1]);
    MPI_Type_free(&spaced);
    MPI_Type_free(&pair);
}

/* A partitioned send matches only a partitioned receive: an ordinary
 * message of the same tag sent before it goes to the ordinary receive. */
static void only_partitioned_matches(void)
{
    int plain = value(rank, 5, 0), got_plain = -1, part[2] = {value(rank, 6, 0), value(rank, 6, 1)}, got[2] = {-1, -1};
    MPI_Request reqs[4];
    CHECK_MPI(MPI_Isend(&plain, 1, MPI_INT, next, TAG + 2, MPI_COMM_WORLD, &reqs[0]));
    CHECK_MPI(MPI_Psend_init(part, 2, 1, MPI_INT, next, TAG + 2, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[1]));
    CHECK_MPI(MPI_Precv_init(got, 2, 1, MPI_INT, prev, TAG + 2, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[2]));
    CHECK_MPI(MPI_Startall(2, &reqs[1]));
    CHECK_MPI(MPI_Pready(0, reqs[1]));
    CHECK_MPI(MPI_Pready(1, reqs[1]));
    CHECK_MPI(MPI_Irecv(&got_plain, 1, MPI_INT, prev, TAG + 2, MPI_COMM_WORLD, &reqs[3]));
    CHECK_MPI(MPI_Waitall(4, reqs, MPI_STATUSES_IGNORE));
    CHECK_INT(value(prev, 5, 0), got_plain, "the ordinary receive gets the ordinary message");
    int expected[2] = {value(prev, 6, 0), value(prev, 6, 1)};
    CHECK_INTS(expected, got, 2, "the partitioned receive gets the partitioned message");
    MPI_Request_free(&reqs[1]);
    MPI_Request_free(&reqs[2]);
}

/* Misuse, under MPI_ERRORS_RETURN. */
static void misuse(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int sendbuf[4] = {1, 2, 3, 4}, recvbuf[4];
    MPI_Request reqs[2];
    CHECK_MPI(MPI_Precv_init(recvbuf, 4, 1, MPI_INT, prev, TAG + 3, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]));
    CHECK_MPI(MPI_Psend_init(sendbuf, 4, 1, MPI_INT, next, TAG + 3, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[1]));
    CHECK_CLASS(MPI_ERR_REQUEST, MPI_Pready(0, reqs[1]), "MPI_Pready on an inactive request");
    CHECK_MPI(MPI_Startall(2, reqs));
    /* A partition out of range is MPI_ERR_OTHER, as MPICH has it. */
    CHECK_CLASS(MPI_ERR_OTHER, MPI_Pready(4, reqs[1]), "MPI_Pready of partition 4 of 4");
    CHECK_CLASS(MPI_ERR_OTHER, MPI_Pready(-1, reqs[1]), "MPI_Pready of partition -1");
    CHECK_CLASS(MPI_ERR_OTHER, MPI_Pready_range(2, 4, reqs[1]), "MPI_Pready_range up to partition 4 of 4");
    int flag = -1;
    CHECK_CLASS(MPI_ERR_OTHER, MPI_Parrived(reqs[0], 4, &flag), "MPI_Parrived of partition 4 of 4");
    CHECK_MPI(MPI_Pready(0, reqs[1]));
    if (check_on_grappe()) /* MPICH 4.0.2 does not check */
        CHECK_CLASS(MPI_ERR_OTHER, MPI_Pready(0, reqs[1]), "MPI_Pready twice on partition 0");
    CHECK_MPI(MPI_Pready_range(1, 3, reqs[1]));
    CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[1]);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

/* The two sides may cut a message into different numbers of partitions:
 * 4 partitions of 2 ints sent, 8 partitions of 1 int posted. */
static void partitionings_differ(void)
{
    int sendbuf[8], recvbuf[8], expected[8];
    for (int i = 0; i < 8; i++) {
        sendbuf[i] = rank * 100 + i;
        expected[i] = prev * 100 + i;
        recvbuf[i] = -1;
    }
    MPI_Request reqs[2];
    CHECK_MPI(MPI_Precv_init(recvbuf, 8, 1, MPI_INT, prev, TAG + 5, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]));
    CHECK_MPI(MPI_Psend_init(sendbuf, 4, 2, MPI_INT, next, TAG + 5, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[1]));
    CHECK_MPI(MPI_Startall(2, reqs));
    CHECK_MPI(MPI_Pready_range(0, 3, reqs[1]));
    CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
    CHECK_INTS(expected, recvbuf, 8, "8 partitions received from a send of 4");
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[1]);
}

/* On grappe: 4 partitions of 3 ints sent, 8 partitions of 1 int posted
 * (12 ints against 8): the receive fails, naming both, instead of waiting
 * forever; and a wait that nothing can end fails. */
static void sizes_disagree(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int sendbuf[12] = {0}, recvbuf[8];
    MPI_Request reqs[2];
    CHECK_MPI(MPI_Precv_init(recvbuf, 8, 1, MPI_INT, prev, TAG + 4, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]));
    CHECK_MPI(MPI_Psend_init(sendbuf, 4, 3, MPI_INT, next, TAG + 4, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[1]));
    CHECK_MPI(MPI_Startall(2, reqs));
    /* A wait for a send whose partitions are not all ready, which no other
     * thread can mark below MPI_THREAD_MULTIPLE, fails naming them. */
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    CHECK_MPI(MPI_Pready(1, reqs[1]));
    if (provided < MPI_THREAD_MULTIPLE) {
        int rc = MPI_Wait(&reqs[1], MPI_STATUS_IGNORE);
        CHECK_CLASS(MPI_ERR_REQUEST, rc, "MPI_Wait for a send with partitions not ready");
        char text[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_string(rc, text, &len);
        CHECK(strstr(text, "partitions 0, 2, 3") != NULL, "the message names the partitions: %s", text);
    }
    CHECK_MPI(MPI_Pready_list(3, (int[]){0, 2, 3}, reqs[1]));
    CHECK_MPI(MPI_Wait(&reqs[1], MPI_STATUS_IGNORE));
    int rc = MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
    CHECK(rc != MPI_SUCCESS, "the receive of 8 ints matched by a send of 12 fails");
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, text, &len);
    CHECK(strstr(text, "4 partitions") && strstr(text, "8 partitions"), "the message names both: %s", text);
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[1]);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("partitioned");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    next = (rank + 1) % size;
    prev = (rank + size - 1) % size;
    rounds();
    derived();
    only_partitioned_matches();
    misuse();
    partitionings_differ();
    if (check_on_grappe())
        sizes_disagree();
    return check_finish();
}

/* MPI_Comm_idup completes without blocking its caller: the ranks may reach
 * it at different times and wait for one another in between, several may
 * be under way on different communicators and complete in any order, on
 * intercommunicators too; the duplicates work and carry the attributes.
 * Every case would hang if the duplicate were made at the call. An
 * MPI_Comm_create_group of the same communicator (not one of its
 * collectives) may come before the idup at some ranks and after it at
 * others. */
#include "check.h"

static int rank, size;

/* A communicator works: a ring exchange in it. */
static void check_ring(MPI_Comm comm, const char *what)
{
    int me, n, got = -1;
    CHECK_MPI(MPI_Comm_rank(comm, &me));
    CHECK_MPI(MPI_Comm_size(comm, &n));
    CHECK_MPI(MPI_Sendrecv(&me, 1, MPI_INT, (me + 1) % n, 5, &got, 1, MPI_INT, (me + n - 1) % n, 5, comm,
                           MPI_STATUS_IGNORE));
    CHECK_INT((me + n - 1) % n, got, "the ring exchange in %s", what);
}

/* Rank 0 waits for a synchronous send of every other rank before it
 * starts its duplicate; the others start theirs first. */
static void late_rank(void)
{
    MPI_Comm dup;
    MPI_Request request;
    int token = rank;
    if (rank == 0) {
        for (int i = 1; i < size; i++) {
            CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, i, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            CHECK_INT(i, token, "the token of rank %d", i);
        }
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &request));
    } else {
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &request));
        CHECK_MPI(MPI_Ssend(&token, 1, MPI_INT, 0, 1, MPI_COMM_WORLD));
    }
    CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
    CHECK_INT(MPI_REQUEST_NULL, request, "MPI_Wait frees the request of MPI_Comm_idup");
    int sum = -1;
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, dup));
    CHECK_INT(size * (size - 1) / 2, sum, "MPI_Allreduce on the duplicate of a late rank");
    check_ring(dup, "the duplicate of a late rank");
    CHECK_MPI(MPI_Comm_free(&dup));
}

/* Each rank starts duplicates of two communicators it shares with its
 * neighbours, its left one first: rank i's first is rank i-1's second.
 * Then they complete by MPI_Waitany, then by polling MPI_Test. */
static void crossing(void)
{
    if (size < 2)
        return;
    MPI_Comm mine[2] = {MPI_COMM_NULL, MPI_COMM_NULL}, dups[2];
    MPI_Request requests[2];
    /* Pair (i, i+1) in turn: mine[0] with the right neighbour, mine[1]
     * with the left one (with two ranks, both are the same pair). */
    for (int i = 0; i < size; i++) {
        int left_end = i, right_end = (i + 1) % size;
        int color = (rank == left_end || rank == right_end) ? 0 : MPI_UNDEFINED;
        MPI_Comm pair;
        CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, rank == left_end ? 0 : 1, &pair));
        if (rank == left_end)
            mine[0] = pair;
        else if (rank == right_end)
            mine[1] = pair;
    }
    CHECK_MPI(MPI_Comm_idup(mine[0], &dups[0], &requests[0]));
    CHECK_MPI(MPI_Comm_idup(mine[1], &dups[1], &requests[1]));
    int index = -1;
    CHECK_MPI(MPI_Waitany(2, requests, &index, MPI_STATUS_IGNORE));
    CHECK(index == 0 || index == 1, "MPI_Waitany's index %d", index);
    CHECK_INT(MPI_REQUEST_NULL, requests[index], "MPI_Waitany frees the request it completed");
    int flag = 0;
    while (!flag)
        CHECK_MPI(MPI_Test(&requests[1 - index], &flag, MPI_STATUS_IGNORE));
    /* Pairs in the order of their index i, the same on both ranks of a
     * pair: rank 0's own pair (i = 0) comes first, elsewhere the pair with
     * the left neighbour (i = rank - 1). */
    for (int step = 0; step < 2; step++) {
        int k = rank == 0 ? step : 1 - step;
        int result = -1;
        CHECK_MPI(MPI_Comm_compare(mine[k], dups[k], &result));
        CHECK_INT(MPI_CONGRUENT, result, "a pair's communicator and its duplicate");
        check_ring(dups[k], "a pair's duplicate");
        CHECK_MPI(MPI_Comm_free(&dups[k]));
        CHECK_MPI(MPI_Comm_free(&mine[k]));
    }
}

/* Duplicates under way while the rank creates other communicators
 * (blocking ones among them) and runs a non-blocking collective; the
 * attribute of the original is copied to each. */
static void overlapping(void)
{
    enum { DUPS = 3 };
    int keyval, value = 7, *got = NULL, flag = 0;
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &keyval, NULL));
    MPI_Comm base;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &base));
    CHECK_MPI(MPI_Comm_set_attr(base, keyval, &value));
    MPI_Comm dups[DUPS], split;
    MPI_Request requests[DUPS + 1];
    for (int i = 0; i < DUPS; i++)
        CHECK_MPI(MPI_Comm_idup(base, &dups[i], &requests[i]));
    int one = 1, total = 0;
    CHECK_MPI(MPI_Iallreduce(&one, &total, 1, MPI_INT, MPI_SUM, base, &requests[DUPS]));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &split));
    check_ring(split, "a split made while duplicates were under way");
    CHECK_MPI(MPI_Waitall(DUPS + 1, requests, MPI_STATUSES_IGNORE));
    CHECK_INT(size, total, "MPI_Iallreduce beside the duplicates");
    for (int i = 0; i < DUPS; i++) {
        check_ring(dups[i], "a duplicate made beside a split");
        flag = 0;
        CHECK_MPI(MPI_Comm_get_attr(dups[i], keyval, &got, &flag));
        CHECK_INT(1, flag && got == &value, "MPI_Comm_idup copies the attribute");
        CHECK_MPI(MPI_Comm_free(&dups[i]));
    }
    CHECK_MPI(MPI_Comm_free(&split));
    CHECK_MPI(MPI_Comm_free(&base));
    CHECK_MPI(MPI_Comm_free_keyval(&keyval));
}

/* An intercommunicator's duplicate, the low group's leader late. */
static void intercommunicator(void)
{
    if (size < 2)
        return;
    int low = rank < size / 2;
    MPI_Comm local, inter, dup;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, low, rank, &local));
    CHECK_MPI(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, low ? size / 2 : 0, 9, &inter));
    int me, remote;
    CHECK_MPI(MPI_Comm_rank(inter, &me));
    CHECK_MPI(MPI_Comm_remote_size(inter, &remote));
    MPI_Request request;
    if (low && me == 0) {
        /* Every rank of the other group sends first. */
        for (int i = 0; i < remote; i++)
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_INT, i, 3, inter, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Comm_idup(inter, &dup, &request));
    } else {
        CHECK_MPI(MPI_Comm_idup(inter, &dup, &request));
        if (!low)
            CHECK_MPI(MPI_Ssend(NULL, 0, MPI_INT, 0, 3, inter));
    }
    CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
    int flag = 0, result = -1, dup_remote = -1;
    CHECK_MPI(MPI_Comm_test_inter(dup, &flag));
    CHECK_INT(1, flag, "the duplicate of an intercommunicator is one");
    CHECK_MPI(MPI_Comm_compare(inter, dup, &result));
    CHECK_INT(MPI_CONGRUENT, result, "an intercommunicator and its duplicate");
    CHECK_MPI(MPI_Comm_remote_size(dup, &dup_remote));
    CHECK_INT(remote, dup_remote, "the duplicate's remote group");
    int sum = -1, mine = rank;
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, dup));
    int expected = 0;
    for (int r = 0; r < size; r++)
        expected += (r < size / 2) != low ? r : 0;
    CHECK_INT(expected, sum, "MPI_Allreduce on the duplicate gives the other group's sum");
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Comm_free(&inter));
    CHECK_MPI(MPI_Comm_free(&local));
}

/* MPI forbids freeing the request of a non-blocking collective: refused
 * (MPICH says MPI_ERR_OTHER, grappe MPI_ERR_REQUEST), the request stays
 * and completes. */
static void free_refused(void)
{
    MPI_Comm dup;
    MPI_Request request;
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &request));
    MPI_Request kept = request;
    int rc = MPI_Request_free(&request);
    CHECK(rc != MPI_SUCCESS, "MPI_Request_free of an MPI_Comm_idup request is refused");
    if (check_on_grappe())
        CHECK_CLASS(MPI_ERR_REQUEST, rc, "MPI_Request_free of an MPI_Comm_idup request");
    CHECK_INT(kept, request, "a refused MPI_Request_free leaves the request");
    CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
    check_ring(dup, "the duplicate whose request could not be freed");
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* Even ranks make a communicator of the whole group with
 * MPI_Comm_create_group, then start an idup; odd ranks start the idup
 * first: the creation must not wait for the idup, which the even ranks
 * only start after it. */
static void create_group_beside_idup(void)
{
    MPI_Group world_group;
    MPI_Comm made = MPI_COMM_NULL, dup = MPI_COMM_NULL;
    MPI_Request request = MPI_REQUEST_NULL;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    if (rank % 2 == 0) {
        CHECK_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, world_group, 7, &made));
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &request));
    } else {
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &request));
        CHECK_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, world_group, 7, &made));
    }
    CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
    check_ring(made, "a communicator made by MPI_Comm_create_group beside an idup");
    check_ring(dup, "an idup beside MPI_Comm_create_group");
    CHECK_MPI(MPI_Comm_free(&made));
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Group_free(&world_group));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("idup");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    late_rank();
    crossing();
    overlapping();
    intercommunicator();
    free_refused();
    create_group_beside_idup();
    return check_finish();
}

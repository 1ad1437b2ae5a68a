/* Intercommunicators: MPI_Intercomm_create between the two halves of
 * MPI_COMM_WORLD (the lower half A, the upper half B, of different sizes on
 * an odd number of ranks), MPI_Comm_test_inter, the local and remote sizes
 * and groups, point-to-point across (statuses name the sender's rank in its
 * own group), MPI_Comm_dup of an intercommunicator, the collectives Barrier,
 * Bcast, Reduce, Allreduce, Gather, Scatter, Allgather and Alltoall with
 * MPI_ROOT / MPI_PROC_NULL roots in both directions, the v-variants,
 * Reduce_scatter(_block) and non-blocking forms, MPI_Comm_split and
 * MPI_Comm_create of an intercommunicator, MPI_Intercomm_merge
 * (the group passing high=0 first). Needs 2 ranks for the intercommunicator
 * part; on 1 rank only the intracommunicator checks run. */
#include "check.h"

static int rank, size;
static int in_a;           /* in the lower half */
static int lrank, lsize;   /* rank and size in the own half */
static int rsize;          /* size of the other half */
static MPI_Comm half, inter;

static void make(void)
{
    int half_size = size / 2;
    in_a = rank < half_size;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, in_a, rank, &half));
    int remote_leader = in_a ? half_size : 0;
    CHECK_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, remote_leader, 77, &inter));
    lsize = in_a ? half_size : size - half_size;
    rsize = size - lsize;
    lrank = in_a ? rank : rank - half_size;
}

static void sizes_and_groups(void)
{
    int flag = -1, n = -1, me = -1;
    CHECK_MPI(MPI_Comm_test_inter(inter, &flag));
    CHECK(flag, "MPI_Comm_test_inter of an intercommunicator");
    CHECK_MPI(MPI_Comm_size(inter, &n));
    CHECK_INT(lsize, n, "MPI_Comm_size of an intercommunicator is its local group's");
    CHECK_MPI(MPI_Comm_rank(inter, &me));
    CHECK_INT(lrank, me, "MPI_Comm_rank in an intercommunicator");
    CHECK_MPI(MPI_Comm_remote_size(inter, &n));
    CHECK_INT(rsize, n, "MPI_Comm_remote_size");

    MPI_Group world_group, local_group, remote_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    CHECK_MPI(MPI_Comm_group(inter, &local_group));
    CHECK_MPI(MPI_Comm_remote_group(inter, &remote_group));
    MPI_Group_size(remote_group, &n);
    CHECK_INT(rsize, n, "size of the remote group");
    for (int r = 0; r < rsize; r++) {
        int world = -1;
        MPI_Group_translate_ranks(remote_group, 1, &r, world_group, &world);
        CHECK_INT(in_a ? size / 2 + r : r, world, "world rank of remote rank %d", r);
    }
    for (int r = 0; r < lsize; r++) {
        int world = -1;
        MPI_Group_translate_ranks(local_group, 1, &r, world_group, &world);
        CHECK_INT(in_a ? r : size / 2 + r, world, "world rank of local rank %d", r);
    }
    MPI_Group_free(&world_group);
    MPI_Group_free(&local_group);
    MPI_Group_free(&remote_group);
}

/* Every rank sends to every rank of the other group; receives with
 * MPI_ANY_SOURCE name the senders by their rank in their own group. */
static void point_to_point(MPI_Comm comm, const char *which)
{
    MPI_Request *reqs = malloc(sizeof(MPI_Request) * rsize);
    int *out = malloc(sizeof(int) * rsize);
    for (int r = 0; r < rsize; r++) {
        out[r] = 1000 * (in_a ? 1 : 2) + 10 * lrank + r;
        CHECK_MPI(MPI_Isend(&out[r], 1, MPI_INT, r, 5, comm, &reqs[r]));
    }
    int *seen = calloc(rsize, sizeof(int));
    for (int i = 0; i < rsize; i++) {
        int got = -1;
        MPI_Status status;
        CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 5, comm, &status));
        int from = status.MPI_SOURCE;
        if (!CHECK(from >= 0 && from < rsize, "%s: MPI_SOURCE %d is a rank of the remote group", which, from))
            continue;
        seen[from]++;
        CHECK_INT(5, status.MPI_TAG, "%s: tag of the message from remote rank %d", which, from);
        CHECK_INT(1000 * (in_a ? 2 : 1) + 10 * from + lrank, got, "%s: message from remote rank %d", which, from);
    }
    for (int r = 0; r < rsize; r++)
        CHECK_INT(1, seen[r], "%s: messages from remote rank %d", which, r);
    CHECK_MPI(MPI_Waitall(rsize, reqs, MPI_STATUSES_IGNORE));

    /* A named source, with Sendrecv, to the rank of the same number (groups of one size). */
    int peer = lrank, back = -1, mine = 100 + lrank;
    MPI_Status status;
    check_preset_status(&status);
    if (lsize == rsize) {
        CHECK_MPI(MPI_Sendrecv(&mine, 1, MPI_INT, peer, 9, &back, 1, MPI_INT, peer, 9, comm, &status));
        CHECK_INT(100 + peer, back, "%s: MPI_Sendrecv with remote rank %d", which, peer);
        CHECK_STATUS(&status, peer, 9, MPI_INT, 1, "MPI_Sendrecv across");
    }
    free(seen);
    free(out);
    free(reqs);
}

/* The collectives, rooted at local rank `root` of group A, then of B. */
static void collectives(void)
{
    CHECK_MPI(MPI_Barrier(inter));
    for (int root_in_a = 1; root_in_a >= 0; root_in_a--) {
        int root = 1 % (root_in_a ? size / 2 : size - size / 2); /* rank 1 of the root's group, or 0 */
        int rooted_here = in_a == root_in_a;
        int my_root = rooted_here ? (lrank == root ? MPI_ROOT : MPI_PROC_NULL) : root;
        const char *dir = root_in_a ? "A to B" : "B to A";

        int value[3] = {-1, -1, -1};
        if (my_root == MPI_ROOT)
            value[0] = 42, value[1] = 43, value[2] = 44;
        CHECK_MPI(MPI_Bcast(value, 3, MPI_INT, my_root, inter));
        if (!rooted_here)
            CHECK(value[0] == 42 && value[1] == 43 && value[2] == 44, "MPI_Bcast %s: got %d %d %d", dir, value[0],
                  value[1], value[2]);
        else if (my_root == MPI_PROC_NULL)
            CHECK_INT(-1, value[0], "MPI_Bcast %s leaves the idle ranks' buffer alone", dir);

        /* Reduce: the sum and max of the other group's (lrank + 1). */
        int contrib[2] = {lrank + 1, lrank + 1}, result[2] = {-1, -1};
        int other = rooted_here ? rsize : lsize; /* the contributing group's size */
        CHECK_MPI(MPI_Reduce(contrib, result, 1, MPI_INT, MPI_SUM, my_root, inter));
        CHECK_MPI(MPI_Reduce(contrib + 1, result + 1, 1, MPI_INT, MPI_MAX, my_root, inter));
        if (my_root == MPI_ROOT) {
            CHECK_INT(other * (other + 1) / 2, result[0], "MPI_Reduce %s: sum", dir);
            CHECK_INT(other, result[1], "MPI_Reduce %s: max", dir);
        }

        /* Gather: (lrank * 10 + 1, lrank * 10 + 2) from each rank of the other group. */
        int pair[2] = {lrank * 10 + 1, lrank * 10 + 2};
        int *all = malloc(sizeof(int) * 2 * (size + 1));
        for (int i = 0; i < 2 * (size + 1); i++)
            all[i] = -1;
        CHECK_MPI(MPI_Gather(pair, 2, MPI_INT, all, 2, MPI_INT, my_root, inter));
        if (my_root == MPI_ROOT)
            for (int r = 0; r < rsize; r++)
                CHECK(all[2 * r] == r * 10 + 1 && all[2 * r + 1] == r * 10 + 2, "MPI_Gather %s: block of remote rank %d",
                      dir, r);

        /* Scatter: block r = (500 + r) to remote rank r. */
        for (int r = 0; r < rsize; r++)
            all[r] = 500 + r;
        int one = -1;
        CHECK_MPI(MPI_Scatter(all, 1, MPI_INT, &one, 1, MPI_INT, my_root, inter));
        if (!rooted_here)
            CHECK_INT(500 + lrank, one, "MPI_Scatter %s", dir);
        free(all);
    }

    /* Allreduce: each group gets the sum over the other group. */
    double mine = in_a ? 1.5 * (lrank + 1) : 100.0 * (lrank + 1), sum = -1;
    CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, inter));
    double expected = in_a ? 100.0 * rsize * (rsize + 1) / 2 : 1.5 * rsize * (rsize + 1) / 2;
    CHECK_DBL(expected, sum, 1e-9, "MPI_Allreduce: the other group's sum");

    /* Allgather: each group gets the other's (group, rank) pairs in rank order. */
    int me2[2] = {in_a, lrank};
    int *got = malloc(sizeof(int) * 2 * rsize);
    CHECK_MPI(MPI_Allgather(me2, 2, MPI_INT, got, 2, MPI_INT, inter));
    for (int r = 0; r < rsize; r++)
        CHECK(got[2 * r] == !in_a && got[2 * r + 1] == r, "MPI_Allgather: block %d is (%d, %d)", r, got[2 * r],
              got[2 * r + 1]);

    /* Alltoall: block r goes to remote rank r and says who sent it to whom. */
    int *out = malloc(sizeof(int) * rsize), *in = malloc(sizeof(int) * rsize);
    for (int r = 0; r < rsize; r++)
        out[r] = (in_a ? 10000 : 20000) + 100 * lrank + r, in[r] = -1;
    CHECK_MPI(MPI_Alltoall(out, 1, MPI_INT, in, 1, MPI_INT, inter));
    for (int r = 0; r < rsize; r++)
        CHECK_INT((in_a ? 20000 : 10000) + 100 * r + lrank, in[r], "MPI_Alltoall: block from remote rank %d", r);
    free(out);
    free(in);
    free(got);
    CHECK_MPI(MPI_Barrier(inter));
}

/* The v-collectives, the reduce-scatters and non-blocking forms. Remote
 * rank r's block has r + 1 elements. */
static void v_collectives(void)
{
    int *counts = malloc(sizeof(int) * (rsize + 1)), *displs = malloc(sizeof(int) * (rsize + 1));
    int total = 0;
    for (int r = 0; r < rsize; r++)
        counts[r] = r + 1, displs[r] = total, total += r + 1;
    int *mine = malloc(sizeof(int) * (lrank + 1 + size)), *got = malloc(sizeof(int) * (total + size));
    for (int i = 0; i <= lrank; i++)
        mine[i] = (in_a ? 1000 : 2000) + 10 * lrank + i;

    /* Allgatherv: each group gets the other's blocks of r + 1 elements. */
    for (int i = 0; i < total; i++)
        got[i] = -1;
    CHECK_MPI(MPI_Allgatherv(mine, lrank + 1, MPI_INT, got, counts, displs, MPI_INT, inter));
    for (int r = 0; r < rsize; r++)
        for (int i = 0; i <= r; i++)
            CHECK_INT((in_a ? 2000 : 1000) + 10 * r + i, got[displs[r] + i], "MPI_Allgatherv: element %d of remote rank %d", i, r);

    /* Gatherv and Scatterv rooted at rank 0 of A. */
    int root = in_a ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    for (int i = 0; i < total; i++)
        got[i] = -1;
    CHECK_MPI(MPI_Gatherv(mine, lrank + 1, MPI_INT, got, counts, displs, MPI_INT, root, inter));
    if (root == MPI_ROOT)
        for (int r = 0; r < rsize; r++)
            CHECK_INT(2000 + 10 * r + r, got[displs[r] + r], "MPI_Gatherv: last element of remote rank %d", r);
    for (int i = 0; i < total; i++)
        got[i] = 3000 + i;
    int piece[64];
    for (int i = 0; i < 64; i++)
        piece[i] = -1;
    CHECK_MPI(MPI_Scatterv(got, counts, displs, MPI_INT, piece, in_a ? 0 : lrank + 1, MPI_INT, root, inter));
    if (!in_a) {
        int first = lrank * (lrank + 1) / 2;
        for (int i = 0; i <= lrank; i++)
            CHECK_INT(3000 + first + i, piece[i], "MPI_Scatterv: element %d", i);
    }

    /* Alltoallv: rank i of one group sends j + 1 copies of (i, j) to rank j of the other. */
    int *scounts = malloc(sizeof(int) * rsize), *sdispls = malloc(sizeof(int) * rsize);
    int *rcounts = malloc(sizeof(int) * rsize), *rdispls = malloc(sizeof(int) * rsize);
    int sent = 0, received = 0;
    for (int r = 0; r < rsize; r++) {
        scounts[r] = r + 1, sdispls[r] = sent, sent += r + 1;
        rcounts[r] = lrank + 1, rdispls[r] = received, received += lrank + 1;
    }
    int *out = malloc(sizeof(int) * sent), *in = malloc(sizeof(int) * received);
    for (int r = 0; r < rsize; r++)
        for (int i = 0; i <= r; i++)
            out[sdispls[r] + i] = 100 * lrank + r;
    for (int i = 0; i < received; i++)
        in[i] = -1;
    MPI_Request req;
    CHECK_MPI(MPI_Ialltoallv(out, scounts, sdispls, MPI_INT, in, rcounts, rdispls, MPI_INT, inter, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int r = 0; r < rsize; r++)
        for (int i = 0; i <= lrank; i++)
            CHECK_INT(100 * r + lrank, in[rdispls[r] + i], "MPI_Ialltoallv: element %d from remote rank %d", i, r);

    /* Reduce_scatter_block: each group reduces lsize * 2 elements; the other
     * group gets them, 2 per rank (needs groups of one size). */
    if (lsize == rsize) {
        int vec[64], two[2] = {-1, -1};
        for (int i = 0; i < 2 * lsize; i++)
            vec[i] = (in_a ? 1 : 1000) * (i + 1);
        CHECK_MPI(MPI_Reduce_scatter_block(vec, two, 2, MPI_INT, MPI_SUM, inter));
        int scale = (in_a ? 1000 : 1) * rsize;
        CHECK(two[0] == scale * (2 * lrank + 1) && two[1] == scale * (2 * lrank + 2),
              "MPI_Reduce_scatter_block: got %d %d", two[0], two[1]);
        int rc[64];
        for (int i = 0; i < lsize; i++)
            rc[i] = 2;
        two[0] = two[1] = -1;
        CHECK_MPI(MPI_Reduce_scatter(vec, two, rc, MPI_INT, MPI_SUM, inter));
        CHECK(two[0] == scale * (2 * lrank + 1) && two[1] == scale * (2 * lrank + 2),
              "MPI_Reduce_scatter: got %d %d", two[0], two[1]);
    }

    /* Non-blocking Ibcast and Iallreduce. */
    int value = in_a && lrank == 0 ? 77 : -1;
    CHECK_MPI(MPI_Ibcast(&value, 1, MPI_INT, root, inter, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    if (!in_a)
        CHECK_INT(77, value, "MPI_Ibcast from A");
    long one = 1, count = -1;
    CHECK_MPI(MPI_Iallreduce(&one, &count, 1, MPI_LONG, MPI_SUM, inter, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK_INT(rsize, count, "MPI_Iallreduce counts the other group");
    CHECK_MPI(MPI_Ibarrier(inter, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));

    free(out), free(in), free(scounts), free(sdispls), free(rcounts), free(rdispls);
    free(mine), free(got), free(counts), free(displs);
}

/* MPI_Comm_split and MPI_Comm_create on the intercommunicator. */
static void derived(void)
{
    /* One color, keys reversing the order: both groups reversed. */
    MPI_Comm split;
    CHECK_MPI(MPI_Comm_split(inter, 0, lsize - lrank, &split));
    int n = -1, me = -1, flag = -1;
    MPI_Comm_test_inter(split, &flag);
    CHECK(flag, "a split of an intercommunicator is one");
    MPI_Comm_size(split, &n);
    MPI_Comm_rank(split, &me);
    CHECK_INT(lsize, n, "size of the one-color split");
    CHECK_INT(lsize - 1 - lrank, me, "rank in the reversed split");
    MPI_Comm_remote_size(split, &n);
    CHECK_INT(rsize, n, "remote size of the one-color split");
    int value = lrank, got = -1;
    MPI_Status status;
    /* Rank 0 of each side (old rank lsize - 1) sends to the other's rank 0. */
    if (me == 0) {
        CHECK_MPI(MPI_Sendrecv(&value, 1, MPI_INT, 0, 1, &got, 1, MPI_INT, 0, 1, split, &status));
        CHECK_INT(rsize - 1, got, "the remote rank 0 of the reversed split is its old last rank");
    }
    MPI_Comm_free(&split);

    /* By parity: each color joins the other group's ranks of that color,
     * or gets MPI_COMM_NULL if the other group has none. */
    CHECK_MPI(MPI_Comm_split(inter, lrank % 2, lrank, &split));
    int same_remote = (rsize + 1 - lrank % 2) / 2;
    if (same_remote == 0)
        CHECK(split == MPI_COMM_NULL, "a color the other group lacks gives MPI_COMM_NULL");
    else {
        MPI_Comm_size(split, &n);
        CHECK_INT((lsize + 1 - lrank % 2) / 2, n, "size of the parity split");
        MPI_Comm_remote_size(split, &n);
        CHECK_INT(same_remote, n, "remote size of the parity split");
        int total = -1, one = 1;
        CHECK_MPI(MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, split));
        CHECK_INT(same_remote, total, "MPI_Allreduce on the parity split");
        MPI_Comm_free(&split);
    }

    /* MPI_Comm_create with the local group without its last rank. */
    MPI_Group local, smaller;
    MPI_Comm_group(inter, &local);
    int last = lsize - 1;
    if (lsize > 1)
        MPI_Group_excl(local, 1, &last, &smaller);
    else
        MPI_Group_incl(local, 1, &last, &smaller);
    MPI_Comm created;
    CHECK_MPI(MPI_Comm_create(inter, smaller, &created));
    if (lsize > 1 && lrank == last)
        CHECK(created == MPI_COMM_NULL, "a rank outside the group gets MPI_COMM_NULL");
    else {
        MPI_Comm_size(created, &n);
        CHECK_INT(lsize > 1 ? lsize - 1 : 1, n, "size of the created intercommunicator");
        MPI_Comm_remote_size(created, &n);
        CHECK_INT(rsize > 1 ? rsize - 1 : 1, n, "remote size of the created intercommunicator");
        MPI_Comm_free(&created);
    }
    MPI_Group_free(&smaller);
    MPI_Group_free(&local);
}

static void merge(void)
{
    /* B passes high = 0: B's ranks come first. */
    MPI_Comm merged;
    CHECK_MPI(MPI_Intercomm_merge(inter, in_a, &merged));
    int n = -1, me = -1;
    MPI_Comm_size(merged, &n);
    MPI_Comm_rank(merged, &me);
    CHECK_INT(size, n, "size of the merged communicator");
    CHECK_INT(in_a ? rsize + lrank : lrank, me, "rank in the merged communicator (high group last)");
    int flag = -1;
    MPI_Comm_test_inter(merged, &flag);
    CHECK(!flag, "a merged communicator is an intracommunicator");
    int total = -1;
    CHECK_MPI(MPI_Allreduce(&rank, &total, 1, MPI_INT, MPI_SUM, merged));
    CHECK_INT(size * (size - 1) / 2, total, "MPI_Allreduce on the merged communicator");
    MPI_Comm_free(&merged);

    /* Both pass the same: each group stays together and in order. */
    CHECK_MPI(MPI_Intercomm_merge(inter, 0, &merged));
    MPI_Comm_rank(merged, &me);
    int first = me - lrank;
    CHECK(first == 0 || first == rsize, "merged rank %d of local rank %d puts the group together", me, lrank);
    MPI_Comm_free(&merged);
}

static void dup_inter(void)
{
    MPI_Comm copy;
    CHECK_MPI(MPI_Comm_dup(inter, &copy));
    int flag = -1, n = -1;
    MPI_Comm_test_inter(copy, &flag);
    CHECK(flag, "a duplicate of an intercommunicator is one");
    MPI_Comm_remote_size(copy, &n);
    CHECK_INT(rsize, n, "remote size of the duplicate");
    int result = -1;
    CHECK_MPI(MPI_Comm_compare(inter, copy, &result));
    CHECK_INT(MPI_CONGRUENT, result, "MPI_Comm_compare of an intercommunicator and its duplicate");
    CHECK_MPI(MPI_Comm_compare(inter, MPI_COMM_WORLD, &result));
    CHECK_INT(MPI_UNEQUAL, result, "MPI_Comm_compare of an intercommunicator and MPI_COMM_WORLD");
    /* A message on the original is not received on the duplicate. */
    int a = 1, b = 2, got = -1;
    MPI_Request req[2];
    if (lrank == 0) {
        MPI_Isend(&a, 1, MPI_INT, 0, 3, inter, &req[0]);
        MPI_Isend(&b, 1, MPI_INT, 0, 3, copy, &req[1]);
        CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, 0, 3, copy, MPI_STATUS_IGNORE));
        CHECK_INT(2, got, "the duplicate's message");
        CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, 0, 3, inter, MPI_STATUS_IGNORE));
        CHECK_INT(1, got, "the original's message");
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
    }
    point_to_point(copy, "on the duplicate");
    CHECK_MPI(MPI_Comm_free(&copy));
    CHECK(copy == MPI_COMM_NULL, "MPI_Comm_free sets the handle to MPI_COMM_NULL");
}

static void intracommunicator(void)
{
    int flag = -1;
    CHECK_MPI(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag));
    CHECK_INT(0, flag, "MPI_Comm_test_inter of MPI_COMM_WORLD");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("intercomm");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    intracommunicator();
    if (size >= 2) {
        make();
        sizes_and_groups();
        point_to_point(inter, "on the intercommunicator");
        collectives();
        v_collectives();
        dup_inter();
        derived();
        merge();
        CHECK_MPI(MPI_Comm_free(&inter));
        MPI_Comm_free(&half);
    }
    return check_finish();
}

/* Non-blocking collectives on an intercommunicator between the two halves
 * of MPI_COMM_WORLD (A the lower half, B the upper, of different sizes on an
 * odd number of ranks): every one MPI defines there (Ibarrier, Ibcast,
 * Ireduce, Iallreduce, Igather(v), Iscatter(v), Iallgather(v),
 * Ialltoall(v,w), Ireduce_scatter(_block)), with MPI_ROOT / MPI_PROC_NULL
 * roots in both groups.
 *
 * Each is started by group A first, and group B starts its own only after A
 * told it so by a message sent after A's call returned: a library whose
 * call waited for the other group would hang here. Then several at once,
 * completed in the reverse order; a non-commutative user operation reduced
 * in rank order; and the misuse MPI forbids (MPI_IN_PLACE, a root out of
 * range, Iscan) refused with an error. Needs 2 ranks; on 1 rank nothing
 * runs. */
#include "check.h"

static int rank, size;
static int in_a;         /* in the lower half */
static int lrank, lsize; /* rank and size in the own half */
static int rsize;        /* size of the other half */
static MPI_Comm half, inter;

static void make(void)
{
    int half_size = size / 2;
    in_a = rank < half_size;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, in_a, rank, &half));
    CHECK_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, in_a ? half_size : 0, 31, &inter));
    lsize = in_a ? half_size : size - half_size;
    rsize = size - lsize;
    lrank = in_a ? rank : rank - half_size;
}

/* Before its call, group B waits until A's leader said A's calls returned. */
static void b_waits_for_a(void)
{
    if (in_a)
        return;
    if (lrank == 0) {
        int token = -1;
        CHECK_MPI(MPI_Recv(&token, 1, MPI_INT, 0, 50, inter, MPI_STATUS_IGNORE));
        CHECK_INT(50, token, "the token A's leader sends after its call");
    }
    CHECK_MPI(MPI_Barrier(half));
}

/* After its call, group A tells B it returned. */
static void a_tells_b(void)
{
    if (!in_a)
        return;
    CHECK_MPI(MPI_Barrier(half));
    if (lrank == 0) {
        int token = 50;
        CHECK_MPI(MPI_Send(&token, 1, MPI_INT, 0, 50, inter));
    }
}

/* The root argument of a collective rooted at rank `root` of A (`in_root_a`)
 * or of B. */
static int root_arg(int in_root_a, int root)
{
    if (in_a == in_root_a)
        return lrank == root ? MPI_ROOT : MPI_PROC_NULL;
    return root;
}

static void barrier_and_bcast(void)
{
    MPI_Request req;
    b_waits_for_a();
    CHECK_MPI(MPI_Ibarrier(inter, &req));
    a_tells_b();
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(req == MPI_REQUEST_NULL, "MPI_Wait frees the Ibarrier request");

    for (int in_root_a = 1; in_root_a >= 0; in_root_a--) {
        /* The root group's last rank (on MPICH 4.0.2, rank 0: its Ibcast on an
         * intercommunicator delivers nothing from another root). */
        int root = check_on_grappe() ? (in_root_a ? size / 2 : size - size / 2) - 1 : 0;
        int arg = root_arg(in_root_a, root);
        double value[3] = {-1, -1, -1};
        if (arg == MPI_ROOT)
            value[0] = 1.5, value[1] = 2.5, value[2] = 3.5;
        b_waits_for_a();
        CHECK_MPI(MPI_Ibcast(value, 3, MPI_DOUBLE, arg, inter, &req));
        a_tells_b();
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (in_a != in_root_a)
            CHECK(value[0] == 1.5 && value[1] == 2.5 && value[2] == 3.5, "MPI_Ibcast from %s: got %g %g %g",
                  in_root_a ? "A" : "B", value[0], value[1], value[2]);
        else if (arg == MPI_PROC_NULL)
            CHECK(value[0] == -1, "MPI_Ibcast leaves an idle rank's buffer alone");
    }
}

/* A non-commutative operation: the digits of the operands in rank order. */
static void digits(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    long *a = in, *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = a[i] * 10 + b[i];
}

/* 123...n */
static long digits_up_to(int n)
{
    long v = 0;
    for (int i = 1; i <= n; i++)
        v = v * 10 + i;
    return v;
}

static void reductions(void)
{
    MPI_Request req;
    MPI_Op concat;
    CHECK_MPI(MPI_Op_create(digits, 0, &concat));
    for (int in_root_a = 1; in_root_a >= 0; in_root_a--) {
        int arg = root_arg(in_root_a, 0);
        long mine[2] = {lrank + 1, lrank + 1}, got[2] = {-1, -1};
        b_waits_for_a();
        CHECK_MPI(MPI_Ireduce(mine, got, 1, MPI_LONG, MPI_SUM, arg, inter, &req));
        a_tells_b();
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        MPI_Request req2;
        CHECK_MPI(MPI_Ireduce(mine + 1, got + 1, 1, MPI_LONG, concat, arg, inter, &req2));
        CHECK_MPI(MPI_Wait(&req2, MPI_STATUS_IGNORE));
        if (arg == MPI_ROOT) {
            CHECK_INT((long)rsize * (rsize + 1) / 2, got[0], "MPI_Ireduce: the sum of the other group's");
            CHECK_INT(digits_up_to(rsize), got[1], "MPI_Ireduce of a non-commutative operation, in rank order");
        } else
            CHECK(got[0] == -1 && got[1] == -1, "MPI_Ireduce leaves a non-root's receive buffer alone");
    }
    CHECK_MPI(MPI_Op_free(&concat));

    double one[2] = {1, in_a ? 10 : 100}, sum[2] = {-1, -1};
    b_waits_for_a();
    CHECK_MPI(MPI_Iallreduce(one, sum, 2, MPI_DOUBLE, MPI_SUM, inter, &req));
    a_tells_b();
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK(sum[0] == rsize && sum[1] == rsize * (in_a ? 100 : 10), "MPI_Iallreduce: got %g %g (other group of %d)",
          sum[0], sum[1], rsize);

    /* Reduce-scatter: each group reduces 2 elements per rank of the other
     * group's... MPI wants both groups' totals equal: block sizes make them
     * so (group A's ranks get 2 * rsize / lsize elements only when that
     * divides; use per-rank counts summing to 2 * min(lsize, rsize)). */
    int total = 2 * (lsize < rsize ? lsize : rsize);
    int *counts = calloc(lsize, sizeof(int));
    for (int i = 0; i < total; i++)
        counts[i % lsize]++;
    int *vec = malloc(sizeof(int) * total), *part = malloc(sizeof(int) * (total + 1));
    for (int i = 0; i < total; i++)
        vec[i] = (in_a ? 1 : 1000) * (i + 1);
    for (int i = 0; i <= total; i++)
        part[i] = -1;
    b_waits_for_a();
    CHECK_MPI(MPI_Ireduce_scatter(vec, part, counts, MPI_INT, MPI_SUM, inter, &req));
    a_tells_b();
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    int first = 0;
    for (int r = 0; r < lrank; r++)
        first += counts[r];
    for (int i = 0; i < counts[lrank]; i++)
        CHECK_INT((in_a ? 1000 : 1) * rsize * (first + i + 1), part[i], "MPI_Ireduce_scatter: element %d", i);
    CHECK_INT(-1, part[counts[lrank]], "MPI_Ireduce_scatter writes no more than this rank's block");
    free(counts), free(vec), free(part);

    if (lsize == rsize) {
        int v[64], two[2] = {-1, -1};
        for (int i = 0; i < 2 * lsize; i++)
            v[i] = (in_a ? 1 : 1000) * (i + 1);
        b_waits_for_a();
        CHECK_MPI(MPI_Ireduce_scatter_block(v, two, 2, MPI_INT, MPI_SUM, inter, &req));
        a_tells_b();
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        int scale = (in_a ? 1000 : 1) * rsize;
        CHECK(two[0] == scale * (2 * lrank + 1) && two[1] == scale * (2 * lrank + 2),
              "MPI_Ireduce_scatter_block: got %d %d", two[0], two[1]);
    }
}

static void rooted_blocks(void)
{
    MPI_Request req;
    for (int in_root_a = 1; in_root_a >= 0; in_root_a--) {
        int arg = root_arg(in_root_a, 0);
        int other = in_a == in_root_a ? rsize : lsize; /* the non-root group's size */
        int *all = malloc(sizeof(int) * 2 * other), *counts = malloc(sizeof(int) * other);
        int *displs = malloc(sizeof(int) * other);
        for (int i = 0; i < 2 * other; i++)
            all[i] = -1;

        /* Igather: two ints from each rank of the other group. */
        int pair[2] = {100 * lrank, 100 * lrank + 1};
        b_waits_for_a();
        CHECK_MPI(MPI_Igather(pair, 2, MPI_INT, all, 2, MPI_INT, arg, inter, &req));
        a_tells_b();
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (arg == MPI_ROOT)
            for (int r = 0; r < other; r++)
                CHECK(all[2 * r] == 100 * r && all[2 * r + 1] == 100 * r + 1, "MPI_Igather: block of rank %d", r);

        /* Igatherv: rank r gives r % 2 + 1 ints, stored from the end. */
        int at = 2 * other;
        for (int r = 0; r < other; r++) {
            counts[r] = r % 2 + 1;
            at -= counts[r];
            displs[r] = at;
        }
        for (int i = 0; i < 2 * other; i++)
            all[i] = -1;
        int mine[2] = {7 * lrank, 7 * lrank + 1};
        b_waits_for_a();
        CHECK_MPI(MPI_Igatherv(mine, lrank % 2 + 1, MPI_INT, all, counts, displs, MPI_INT, arg, inter, &req));
        a_tells_b();
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (arg == MPI_ROOT)
            for (int r = 0; r < other; r++)
                for (int i = 0; i < counts[r]; i++)
                    CHECK_INT(7 * r + i, all[displs[r] + i], "MPI_Igatherv: element %d of rank %d", i, r);

        /* Iscatter, then Iscatterv of the same layout back. */
        for (int i = 0; i < 2 * other; i++)
            all[i] = 1000 + i;
        int got[2] = {-1, -1};
        b_waits_for_a();
        CHECK_MPI(MPI_Iscatter(all, 2, MPI_INT, got, 2, MPI_INT, arg, inter, &req));
        a_tells_b();
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (in_a != in_root_a)
            CHECK(got[0] == 1000 + 2 * lrank && got[1] == 1001 + 2 * lrank, "MPI_Iscatter: got %d %d", got[0],
                  got[1]);
        got[0] = got[1] = -1;
        b_waits_for_a();
        CHECK_MPI(MPI_Iscatterv(all, counts, displs, MPI_INT, got, lrank % 2 + 1, MPI_INT, arg, inter, &req));
        a_tells_b();
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (in_a != in_root_a) {
            /* The root's displacements were computed for its remote group: ours. */
            int from = 2 * lsize;
            for (int r = 0; r <= lrank; r++)
                from -= r % 2 + 1;
            for (int i = 0; i < lrank % 2 + 1; i++)
                CHECK_INT(1000 + from + i, got[i], "MPI_Iscatterv: element %d", i);
        } else
            CHECK(got[0] == -1, "MPI_Iscatterv leaves the root group's receive buffers alone");
        free(all), free(counts), free(displs);
    }
}

static void everyone_to_everyone(void)
{
    MPI_Request req;
    /* Iallgather: two ints from each remote rank. */
    int pair[2] = {10 * lrank + (in_a ? 1 : 2), -lrank};
    int *all = malloc(sizeof(int) * 2 * rsize);
    b_waits_for_a();
    CHECK_MPI(MPI_Iallgather(pair, 2, MPI_INT, all, 2, MPI_INT, inter, &req));
    a_tells_b();
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int r = 0; r < rsize; r++)
        CHECK(all[2 * r] == 10 * r + (in_a ? 2 : 1) && all[2 * r + 1] == -r, "MPI_Iallgather: block of rank %d", r);

    /* Iallgatherv: remote rank r gives r + 1 ints. */
    int *counts = malloc(sizeof(int) * rsize), *displs = malloc(sizeof(int) * rsize);
    int n = 0;
    for (int r = 0; r < rsize; r++)
        counts[r] = r + 1, displs[r] = n, n += r + 1;
    int *got = malloc(sizeof(int) * n), *mine = malloc(sizeof(int) * (lrank + 1));
    for (int i = 0; i <= lrank; i++)
        mine[i] = 100 * lrank + i;
    b_waits_for_a();
    CHECK_MPI(MPI_Iallgatherv(mine, lrank + 1, MPI_INT, got, counts, displs, MPI_INT, inter, &req));
    a_tells_b();
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int r = 0; r < rsize; r++)
        for (int i = 0; i <= r; i++)
            CHECK_INT(100 * r + i, got[displs[r] + i], "MPI_Iallgatherv: element %d of rank %d", i, r);

    /* Ialltoall: block r to remote rank r. */
    int *out = malloc(sizeof(int) * rsize), *in = malloc(sizeof(int) * rsize);
    for (int r = 0; r < rsize; r++)
        out[r] = 1000 * (in_a ? 1 : 2) + 10 * lrank + r, in[r] = -1;
    b_waits_for_a();
    CHECK_MPI(MPI_Ialltoall(out, 1, MPI_INT, in, 1, MPI_INT, inter, &req));
    a_tells_b();
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int r = 0; r < rsize; r++)
        CHECK_INT(1000 * (in_a ? 2 : 1) + 10 * r + lrank, in[r], "MPI_Ialltoall: block from rank %d", r);

    /* Ialltoallw: one double to each remote rank, at byte displacements in
     * reverse order. */
    double *dout = malloc(sizeof(double) * rsize), *din = malloc(sizeof(double) * rsize);
    int *ones = malloc(sizeof(int) * rsize), *bytes = malloc(sizeof(int) * rsize);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * rsize);
    for (int r = 0; r < rsize; r++) {
        ones[r] = 1, bytes[r] = (int)sizeof(double) * (rsize - 1 - r), types[r] = MPI_DOUBLE;
        dout[rsize - 1 - r] = lrank + 0.25 * r, din[r] = -1;
    }
    b_waits_for_a();
    CHECK_MPI(MPI_Ialltoallw(dout, ones, bytes, types, din, ones, bytes, types, inter, &req));
    a_tells_b();
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    for (int r = 0; r < rsize; r++)
        CHECK(din[rsize - 1 - r] == r + 0.25 * lrank, "MPI_Ialltoallw: from rank %d got %g", r, din[rsize - 1 - r]);

    free(all), free(counts), free(displs), free(got), free(mine), free(out), free(in);
    free(dout), free(din), free(ones), free(bytes), free(types);
}

/* Three at once, completed in the reverse order. */
static void several_at_once(void)
{
    MPI_Request reqs[3];
    int token = in_a ? 5 : -1, total = -1;
    int one = 1;
    CHECK_MPI(MPI_Ibcast(&token, 1, MPI_INT, in_a ? (lrank == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0, inter, &reqs[0]));
    CHECK_MPI(MPI_Iallreduce(&one, &total, 1, MPI_INT, MPI_SUM, inter, &reqs[1]));
    CHECK_MPI(MPI_Ibarrier(inter, &reqs[2]));
    for (int i = 2; i >= 0; i--)
        CHECK_MPI(MPI_Wait(&reqs[i], MPI_STATUS_IGNORE));
    if (!in_a)
        CHECK_INT(5, token, "MPI_Ibcast completed after two later collectives");
    CHECK_INT(rsize, total, "MPI_Iallreduce completed before an earlier Ibcast");
}

static void misuse(void)
{
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    MPI_Request req = MPI_REQUEST_NULL;
    int x = 1, y = 0, cls = -1;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, &y, 1, MPI_INT, MPI_SUM, inter, &req);
    CHECK(rc != MPI_SUCCESS, "MPI_IN_PLACE in MPI_Iallreduce on an intercommunicator is refused");
    rc = MPI_Ibcast(&x, 1, MPI_INT, rsize, inter, &req);
    MPI_Error_class(rc, &cls);
    CHECK_INT(MPI_ERR_ROOT, cls, "MPI_Ibcast with a root past the remote group");
    rc = MPI_Iscan(&x, &y, 1, MPI_INT, MPI_SUM, inter, &req);
    CHECK(rc != MPI_SUCCESS, "MPI_Iscan on an intercommunicator is refused");
    CHECK(req == MPI_REQUEST_NULL, "a refused call gives no request");
    /* The intercommunicator still works after the refused calls. */
    int total = -1;
    CHECK_MPI(MPI_Iallreduce(&x, &total, 1, MPI_INT, MPI_SUM, inter, &req));
    CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
    CHECK_INT(rsize, total, "MPI_Iallreduce after refused calls");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("icoll_inter");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size >= 2) {
        make();
        barrier_and_bcast();
        reductions();
        rooted_blocks();
        everyone_to_everyone();
        several_at_once();
        misuse();
        CHECK_MPI(MPI_Comm_free(&inter));
        MPI_Comm_free(&half);
    }
    return check_finish();
}

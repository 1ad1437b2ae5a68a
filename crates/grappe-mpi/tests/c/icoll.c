/* Non-blocking collectives: MPI_Ibarrier, MPI_Ibcast, MPI_Ireduce,
 * MPI_Iallreduce, MPI_Igather(v), MPI_Iscatter(v), MPI_Iallgather(v),
 * MPI_Ialltoall(v,w), MPI_Ireduce_scatter(_block), MPI_Iscan, MPI_Iexscan.
 * Each runs on MPI_COMM_WORLD and on the halves of an odd/even split whose
 * keys reverse the rank order; reductions use a user operation that does
 * not commute (composition of affine maps), so a result combined out of
 * rank order shows. Also: several collectives under way at once, completed
 * by MPI_Waitall in reverse order and by MPI_Test loops; a collective that
 * must move on while its rank waits in a blocking MPI_Recv; MPI_IN_PLACE;
 * a derived datatype; misuse (a root out of range, a null communicator,
 * a NULL request). */
#include "check.h"

static const char *on = "?";
static int rank, size;

/* x -> a*x + b over unsigned ints: composition is associative, not commutative. */
typedef struct {
    unsigned a, b;
} affine;

static affine map_of(int r, int i)
{
    affine m = {(unsigned)(r * 7 + i * 3 + 1) | 1u, (unsigned)(r * 13 + i)};
    return m;
}

/* lower then higher. */
static affine compose(affine lower, affine higher)
{
    affine m = {higher.a * lower.a, higher.a * lower.b + higher.b};
    return m;
}

static void compose_op(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    affine *lower = in, *higher = inout;
    for (int i = 0; i < *len; i++)
        higher[i] = compose(lower[i], higher[i]);
}

static MPI_Datatype affine_type;
static MPI_Op compose_mpi;

/* The maps of ranks [from, to) composed in order, at index i. */
static affine composed(int from, int to, int i)
{
    affine m = map_of(from, i);
    for (int r = from + 1; r < to; r++)
        m = compose(m, map_of(r, i));
    return m;
}

static int affine_differs(affine x, affine y)
{
    return x.a != y.a || x.b != y.b;
}

static void reductions(MPI_Comm comm)
{
    enum { N = 37 };
    affine mine[N], out[N], scan[N], exscan[N], in_place[N];
    for (int i = 0; i < N; i++) {
        mine[i] = map_of(rank, i);
        in_place[i] = mine[i];
        exscan[i].a = exscan[i].b = 12345;
    }
    for (int root = 0; root < size; root++) {
        MPI_Request r;
        memset(out, 0, sizeof out);
        CHECK_MPI(MPI_Ireduce(mine, out, N, affine_type, compose_mpi, root, comm, &r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        if (rank == root) {
            int wrong = 0;
            for (int i = 0; i < N; i++)
                wrong += affine_differs(out[i], composed(0, size, i));
            CHECK_INT(0, wrong, "MPI_Ireduce to root %d on %s: maps out of rank order", root, on);
        }
    }
    MPI_Request rs[4];
    CHECK_MPI(MPI_Iallreduce(mine, out, N, affine_type, compose_mpi, comm, &rs[0]));
    CHECK_MPI(MPI_Iscan(mine, scan, N, affine_type, compose_mpi, comm, &rs[1]));
    CHECK_MPI(MPI_Iexscan(mine, exscan, N, affine_type, compose_mpi, comm, &rs[2]));
    CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, in_place, N, affine_type, compose_mpi, comm, &rs[3]));
    /* Completed by tests, in reverse order. */
    for (int k = 3; k >= 0; k--) {
        int done = 0;
        while (!done)
            CHECK_MPI(MPI_Test(&rs[k], &done, MPI_STATUS_IGNORE));
        CHECK_INT(MPI_REQUEST_NULL, rs[k], "a completed collective's request is MPI_REQUEST_NULL");
    }
    int wrong[4] = {0, 0, 0, 0};
    for (int i = 0; i < N; i++) {
        wrong[0] += affine_differs(out[i], composed(0, size, i));
        wrong[1] += affine_differs(scan[i], composed(0, rank + 1, i));
        wrong[2] += rank > 0 ? affine_differs(exscan[i], composed(0, rank, i)) : exscan[i].a != 12345;
        wrong[3] += affine_differs(in_place[i], composed(0, size, i));
    }
    CHECK_INT(0, wrong[0], "MPI_Iallreduce on %s", on);
    CHECK_INT(0, wrong[1], "MPI_Iscan on %s", on);
    CHECK_INT(0, wrong[2], "MPI_Iexscan on %s (rank 0's buffer untouched)", on);
    CHECK_INT(0, wrong[3], "MPI_Iallreduce with MPI_IN_PLACE on %s", on);

    /* The blocking forms with the same operation on the derived datatype:
     * the user function gets counts of affine maps, not of unsigned ints. */
    CHECK_MPI(MPI_Allreduce(mine, out, N, affine_type, compose_mpi, comm));
    CHECK_MPI(MPI_Scan(mine, scan, N, affine_type, compose_mpi, comm));
    wrong[0] = wrong[1] = 0;
    for (int i = 0; i < N; i++) {
        wrong[0] += affine_differs(out[i], composed(0, size, i));
        wrong[1] += affine_differs(scan[i], composed(0, rank + 1, i));
    }
    CHECK_INT(0, wrong[0], "MPI_Allreduce of a derived datatype with a user operation on %s", on);
    CHECK_INT(0, wrong[1], "MPI_Scan of a derived datatype with a user operation on %s", on);

    /* Reduce-scatter with a predefined operation: rank r gets r+1 ints. */
    int counts[64], total = 0;
    for (int r = 0; r < size; r++)
        total += counts[r] = r + 1;
    int *send = malloc(sizeof(int) * total), got[64], block[64];
    for (int i = 0; i < total; i++)
        send[i] = rank * 100 + i;
    MPI_Request r2[2];
    CHECK_MPI(MPI_Ireduce_scatter(send, got, counts, MPI_INT, MPI_SUM, comm, &r2[0]));
    CHECK_MPI(MPI_Ireduce_scatter_block(send, block, 1, MPI_INT, MPI_MAX, comm, &r2[1]));
    CHECK_MPI(MPI_Waitall(2, r2, MPI_STATUSES_IGNORE));
    int start = 0;
    for (int r = 0; r < rank; r++)
        start += counts[r];
    int bad = 0;
    for (int i = 0; i < counts[rank]; i++)
        bad += got[i] != 100 * size * (size - 1) / 2 + size * (start + i);
    CHECK_INT(0, bad, "MPI_Ireduce_scatter on %s", on);
    CHECK_INT((size - 1) * 100 + rank, block[0], "MPI_Ireduce_scatter_block on %s", on);
    free(send);

    /* A pair type with padding (12 bytes of data in 16): MPI_MAXLOC and
     * MPI_MINLOC on MPI_DOUBLE_INT: the greatest value is rank i % size's,
     * the least is shared by several ranks (the lowest of them wins). */
    struct { double value; int index; } pairs[N], best[N], least[N];
    for (int i = 0; i < N; i++) {
        pairs[i].value = rank == i % size ? 1000.0 + i : (double)(rank % 2);
        pairs[i].index = rank;
    }
    CHECK_MPI(MPI_Iallreduce(pairs, best, N, MPI_DOUBLE_INT, MPI_MAXLOC, comm, &r2[0]));
    CHECK_MPI(MPI_Iallreduce(pairs, least, N, MPI_DOUBLE_INT, MPI_MINLOC, comm, &r2[1]));
    CHECK_MPI(MPI_Waitall(2, r2, MPI_STATUSES_IGNORE));
    bad = 0;
    for (int i = 0; i < N; i++) {
        bad += best[i].value != 1000.0 + i || best[i].index != i % size;
        double low = 1e300;
        int lowest = -1;
        for (int r = 0; r < size; r++) {
            double v = r == i % size ? 1000.0 + i : (double)(r % 2);
            if (v < low) {
                low = v;
                lowest = r;
            }
        }
        bad += least[i].value != low || least[i].index != lowest;
    }
    CHECK_INT(0, bad, "MPI_Iallreduce with MPI_MAXLOC and MPI_MINLOC on MPI_DOUBLE_INT on %s", on);
}

static int byte_of(int from, int to, int i)
{
    return (from * 31 + to * 7 + i) & 0xff;
}

static void movements(MPI_Comm comm)
{
    enum { B = 300 };
    unsigned char buf[B];
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < B; i++)
            buf[i] = rank == root ? byte_of(root, 0, i) : 0;
        MPI_Request r;
        CHECK_MPI(MPI_Ibcast(buf, B, MPI_BYTE, root, comm, &r));
        CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
        int bad = 0;
        for (int i = 0; i < B; i++)
            bad += buf[i] != byte_of(root, 0, i);
        CHECK_INT(0, bad, "MPI_Ibcast from %d on %s", root, on);
    }

    /* Gather, scatter, allgather of 5 ints per rank; v-forms with rank+1 ints at reversed places. */
    int mine[5], all[5 * 64], counts[64], displs[64], vall[64 * 64], vmine[64];
    for (int i = 0; i < 5; i++)
        mine[i] = rank * 10 + i;
    int total = 0;
    for (int r = 0; r < size; r++)
        total += counts[r] = r + 1;
    for (int r = 0, at = total; r < size; r++) /* blocks placed back to front */
        displs[r] = at -= counts[r];
    for (int i = 0; i <= rank; i++)
        vmine[i] = rank * 1000 + i;
    int root = size - 1;
    MPI_Request rs[4];
    memset(all, -1, sizeof all);
    memset(vall, -1, sizeof vall);
    CHECK_MPI(MPI_Igather(mine, 5, MPI_INT, all, 5, MPI_INT, root, comm, &rs[0]));
    CHECK_MPI(MPI_Igatherv(vmine, rank + 1, MPI_INT, vall, counts, displs, MPI_INT, root, comm, &rs[1]));
    CHECK_MPI(MPI_Waitall(2, rs, MPI_STATUSES_IGNORE));
    if (rank == root) {
        int bad = 0;
        for (int r = 0; r < size; r++)
            for (int i = 0; i < 5; i++)
                bad += all[r * 5 + i] != r * 10 + i;
        CHECK_INT(0, bad, "MPI_Igather on %s", on);
        bad = 0;
        for (int r = 0; r < size; r++)
            for (int i = 0; i <= r; i++)
                bad += vall[displs[r] + i] != r * 1000 + i;
        CHECK_INT(0, bad, "MPI_Igatherv on %s", on);
    }

    int part[5], vpart[64];
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 5; i++)
            all[r * 5 + i] = rank == root ? r * 10 + i + 7 : -1;
    for (int r = 0; r < size; r++)
        for (int i = 0; i <= r; i++)
            vall[displs[r] + i] = rank == root ? r * 1000 + i + 7 : -1;
    CHECK_MPI(MPI_Iscatter(all, 5, MPI_INT, part, 5, MPI_INT, root, comm, &rs[0]));
    CHECK_MPI(MPI_Iscatterv(vall, counts, displs, MPI_INT, vpart, rank + 1, MPI_INT, root, comm, &rs[1]));
    CHECK_MPI(MPI_Waitall(2, rs, MPI_STATUSES_IGNORE));
    int bad = 0;
    for (int i = 0; i < 5; i++)
        bad += part[i] != rank * 10 + i + 7;
    for (int i = 0; i <= rank; i++)
        bad += vpart[i] != rank * 1000 + i + 7;
    CHECK_INT(0, bad, "MPI_Iscatter and MPI_Iscatterv from %d on %s", root, on);

    memset(all, -1, sizeof all);
    memset(vall, -1, sizeof vall);
    CHECK_MPI(MPI_Iallgather(mine, 5, MPI_INT, all, 5, MPI_INT, comm, &rs[0]));
    CHECK_MPI(MPI_Iallgatherv(vmine, rank + 1, MPI_INT, vall, counts, displs, MPI_INT, comm, &rs[1]));
    /* In place: each rank's block already in the receive buffer. */
    int in_place[5 * 64];
    for (int i = 0; i < 5; i++)
        in_place[rank * 5 + i] = rank * 10 + i;
    CHECK_MPI(MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, in_place, 5, MPI_INT, comm, &rs[2]));
    CHECK_MPI(MPI_Waitall(3, rs, MPI_STATUSES_IGNORE));
    bad = 0;
    for (int r = 0; r < size; r++)
        for (int i = 0; i < 5; i++)
            bad += (all[r * 5 + i] != r * 10 + i) + (in_place[r * 5 + i] != r * 10 + i);
    for (int r = 0; r < size; r++)
        for (int i = 0; i <= r; i++)
            bad += vall[displs[r] + i] != r * 1000 + i;
    CHECK_INT(0, bad, "MPI_Iallgather(v) (and in place) on %s", on);

    /* All-to-all: 3 ints to each rank; v: rank+dest+1 ints; w: the same as bytes with MPI_INT types. */
    int a2a_send[3 * 64], a2a_recv[3 * 64];
    for (int d = 0; d < size; d++)
        for (int i = 0; i < 3; i++)
            a2a_send[d * 3 + i] = rank * 100 + d * 10 + i;
    int scounts[64], sdispls[64], rcounts[64], rdispls[64], wsd[64], wrd[64];
    MPI_Datatype types[64];
    int stotal = 0, rtotal = 0;
    for (int r = 0; r < size; r++) {
        scounts[r] = rank + r + 1;
        rcounts[r] = r + rank + 1;
        sdispls[r] = stotal;
        rdispls[r] = rtotal;
        wsd[r] = stotal * (int)sizeof(int);
        wrd[r] = rtotal * (int)sizeof(int);
        types[r] = MPI_INT;
        stotal += scounts[r];
        rtotal += rcounts[r];
    }
    int *vs = malloc(sizeof(int) * stotal), *vr = malloc(sizeof(int) * rtotal), *wr = malloc(sizeof(int) * rtotal);
    for (int r = 0; r < size; r++)
        for (int i = 0; i < scounts[r]; i++)
            vs[sdispls[r] + i] = rank * 1000 + r * 10 + i;
    CHECK_MPI(MPI_Ialltoall(a2a_send, 3, MPI_INT, a2a_recv, 3, MPI_INT, comm, &rs[0]));
    CHECK_MPI(MPI_Ialltoallv(vs, scounts, sdispls, MPI_INT, vr, rcounts, rdispls, MPI_INT, comm, &rs[1]));
    CHECK_MPI(MPI_Ialltoallw(vs, scounts, wsd, types, wr, rcounts, wrd, types, comm, &rs[2]));
    CHECK_MPI(MPI_Waitall(3, rs, MPI_STATUSES_IGNORE));
    bad = 0;
    for (int s = 0; s < size; s++)
        for (int i = 0; i < 3; i++)
            bad += a2a_recv[s * 3 + i] != s * 100 + rank * 10 + i;
    CHECK_INT(0, bad, "MPI_Ialltoall on %s", on);
    bad = 0;
    for (int s = 0; s < size; s++)
        for (int i = 0; i < rcounts[s]; i++)
            bad += (vr[rdispls[s] + i] != s * 1000 + rank * 10 + i) + (wr[rdispls[s] + i] != s * 1000 + rank * 10 + i);
    CHECK_INT(0, bad, "MPI_Ialltoallv and MPI_Ialltoallw on %s", on);
    free(vs);
    free(vr);
    free(wr);
}

/* A derived datatype: every other double of a strided column. */
static void derived(MPI_Comm comm)
{
    double grid[8][3];
    MPI_Datatype column;
    MPI_Type_vector(8, 1, 3, MPI_DOUBLE, &column);
    MPI_Type_commit(&column);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 3; j++)
            grid[i][j] = rank == 0 ? i * 3 + j : -1;
    MPI_Request r;
    CHECK_MPI(MPI_Ibcast(&grid[0][1], 1, column, 0, comm, &r));
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    int bad = 0;
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 3; j++)
            bad += grid[i][j] != (rank == 0 || j == 1 ? i * 3 + j : -1);
    CHECK_INT(0, bad, "MPI_Ibcast of a strided column on %s: only the column's elements change", on);
    MPI_Type_free(&column);
}

/* Every rank but 0 waits for its barrier then sends to 0, which is in a
 * blocking receive meanwhile: its barrier must move on inside MPI_Recv. */
static void progress_in_blocking_calls(void)
{
    MPI_Request barrier;
    CHECK_MPI(MPI_Ibarrier(MPI_COMM_WORLD, &barrier));
    if (rank == 0) {
        int sum = 0, got;
        for (int k = 1; k < size; k++) {
            CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            sum += got;
        }
        CHECK_MPI(MPI_Wait(&barrier, MPI_STATUS_IGNORE));
        CHECK_INT(size * (size - 1) / 2, sum, "messages sent after the barrier");
    } else {
        CHECK_MPI(MPI_Wait(&barrier, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Send(&rank, 1, MPI_INT, 0, 77, MPI_COMM_WORLD));
    }
}

static void misuse(void)
{
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x = 0;
    MPI_Request r = MPI_REQUEST_NULL;
    CHECK_CLASS(MPI_ERR_ROOT, MPI_Ibcast(&x, 1, MPI_INT, size, MPI_COMM_WORLD, &r), "MPI_Ibcast with root = size");
    CHECK_INT(MPI_REQUEST_NULL, r, "no request for a refused call");
    CHECK_CLASS(MPI_ERR_COMM, MPI_Ibarrier(MPI_COMM_NULL, &r), "MPI_Ibarrier on MPI_COMM_NULL");
    CHECK(MPI_Ibarrier(MPI_COMM_WORLD, NULL) != MPI_SUCCESS, "MPI_Ibarrier with a NULL request fails");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

static void run_on(MPI_Comm comm, const char *name)
{
    on = name;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Request r;
    CHECK_MPI(MPI_Ibarrier(comm, &r));
    CHECK_MPI(MPI_Wait(&r, MPI_STATUS_IGNORE));
    reductions(comm);
    movements(comm);
    derived(comm);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("icoll");
    MPI_Type_contiguous(2, MPI_UNSIGNED, &affine_type);
    MPI_Type_commit(&affine_type);
    MPI_Op_create(compose_op, 0, &compose_mpi);
    int world_rank, world_size;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    run_on(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, world_size - world_rank, &half);
    run_on(half, "a half of a split, ranks reversed");
    MPI_Comm_free(&half);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    progress_in_blocking_calls();
    misuse();
    MPI_Op_free(&compose_mpi);
    MPI_Type_free(&affine_type);
    return check_finish();
}

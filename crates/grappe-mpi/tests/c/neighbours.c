/* Neighbourhood collectives on Cartesian communicators: MPI_Neighbor_allgather,
 * MPI_Neighbor_alltoall and their v and w forms on a periodic ring (where, on 1 or 2 ranks, both
 * neighbours are the same rank and only the direction tells the blocks
 * apart) and on a 2-D grid periodic in one dimension only (MPI_PROC_NULL
 * neighbours leave their blocks untouched). Block 2d comes from the
 * neighbour below in dimension d, which sent it as its block 2d+1 (towards
 * its neighbour above), and block 2d+1 from the one above. Every check
 * runs twice: with the blocking calls, then with the non-blocking ones
 * (MPI_Ineighbor_*, all started before a MPI_Waitall). Runs on any number
 * of ranks. */
#include "check.h"

/* The non-blocking forms, this time. */
static int nonblocking;

static void exchange_on(MPI_Comm cart, int ndims, const char *name)
{
    int rank, send[4], recv[4], gathered[4], mine;
    MPI_Comm_rank(cart, &rank);
    for (int i = 0; i < 2 * ndims; i++) {
        send[i] = rank * 100 + i;
        recv[i] = gathered[i] = -1;
    }
    mine = rank * 100 + 99;
    if (nonblocking) {
        MPI_Request r[2];
        CHECK_MPI(MPI_Ineighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, cart, &r[0]));
        CHECK_MPI(MPI_Ineighbor_allgather(&mine, 1, MPI_INT, gathered, 1, MPI_INT, cart, &r[1]));
        CHECK_MPI(MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
    } else {
        CHECK_MPI(MPI_Neighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, cart));
        CHECK_MPI(MPI_Neighbor_allgather(&mine, 1, MPI_INT, gathered, 1, MPI_INT, cart));
    }
    for (int d = 0; d < ndims; d++) {
        int below = MPI_PROC_NULL, above = MPI_PROC_NULL;
        MPI_Cart_shift(cart, d, 1, &below, &above);
        int expect_below = below == MPI_PROC_NULL ? -1 : below * 100 + 2 * d + 1;
        int expect_above = above == MPI_PROC_NULL ? -1 : above * 100 + 2 * d;
        CHECK_INT(expect_below, recv[2 * d], "%s: MPI_Neighbor_alltoall, dimension %d, from below (rank %d)", name, d, below);
        CHECK_INT(expect_above, recv[2 * d + 1], "%s: MPI_Neighbor_alltoall, dimension %d, from above (rank %d)", name, d, above);
        CHECK_INT(below == MPI_PROC_NULL ? -1 : below * 100 + 99, gathered[2 * d], "%s: MPI_Neighbor_allgather, dimension %d, below", name, d);
        CHECK_INT(above == MPI_PROC_NULL ? -1 : above * 100 + 99, gathered[2 * d + 1], "%s: MPI_Neighbor_allgather, dimension %d, above", name, d);
    }
}

/* The v and w forms: block i has i + 1 ints, placed back to front. Only
 * dimensions whose two neighbours are different ranks are checked here:
 * where they are one rank, MPICH 4.0.2's v and w forms pair the blocks in
 * order rather than by direction (its MPI_Neighbor_alltoall, and grappe's
 * every form, go by direction, which exchange_on checks). */
static void varying_on(MPI_Comm cart, int ndims, const char *name)
{
    int rank, n = 2 * ndims, counts[4], displs[4], send[16], recv[16], recv_w[16], gathered[16];
    MPI_Aint bytes[4], rbytes[4];
    MPI_Datatype types[4];
    MPI_Comm_rank(cart, &rank);
    int total = 0;
    for (int i = 0; i < n; i++)
        total += counts[i] = i + 1;
    for (int i = 0, at = total; i < n; i++) {
        displs[i] = at -= counts[i];
        bytes[i] = rbytes[i] = displs[i] * (MPI_Aint)sizeof(int);
        types[i] = MPI_INT;
    }
    for (int i = 0; i < n; i++)
        for (int k = 0; k < counts[i]; k++)
            send[displs[i] + k] = rank * 100 + i * 10 + k;
    for (int k = 0; k < 16; k++)
        recv[k] = recv_w[k] = gathered[k] = -1;
    /* Block i goes to destination i with i + 1 ints, so the block from
     * source j (sent as the sender's block j ^ 1) has (j ^ 1) + 1 ints. */
    int rcounts[4], rdispls[4], rtotal = 0;
    for (int j = 0; j < n; j++)
        rtotal += rcounts[j] = (j ^ 1) + 1;
    for (int j = 0, at = rtotal; j < n; j++) {
        rdispls[j] = at -= rcounts[j];
        rbytes[j] = rdispls[j] * (MPI_Aint)sizeof(int);
    }
    int mine[2] = {rank * 100 + 98, rank * 100 + 99}, gcounts[4], gdispls[4];
    for (int j = 0; j < n; j++) {
        gcounts[j] = 2;
        gdispls[j] = 2 * (n - 1 - j);
    }
    if (nonblocking) {
        MPI_Request r[3];
        CHECK_MPI(MPI_Ineighbor_alltoallv(send, counts, displs, MPI_INT, recv, rcounts, rdispls, MPI_INT, cart, &r[0]));
        CHECK_MPI(MPI_Ineighbor_alltoallw(send, counts, bytes, types, recv_w, rcounts, rbytes, types, cart, &r[1]));
        CHECK_MPI(MPI_Ineighbor_allgatherv(mine, 2, MPI_INT, gathered, gcounts, gdispls, MPI_INT, cart, &r[2]));
        CHECK_MPI(MPI_Waitall(3, r, MPI_STATUSES_IGNORE));
    } else {
        CHECK_MPI(MPI_Neighbor_alltoallv(send, counts, displs, MPI_INT, recv, rcounts, rdispls, MPI_INT, cart));
        CHECK_MPI(MPI_Neighbor_alltoallw(send, counts, bytes, types, recv_w, rcounts, rbytes, types, cart));
        CHECK_MPI(MPI_Neighbor_allgatherv(mine, 2, MPI_INT, gathered, gcounts, gdispls, MPI_INT, cart));
    }
    int bad = 0;
    for (int d = 0; d < ndims; d++) {
        int neighbour[2];
        MPI_Cart_shift(cart, d, 1, &neighbour[0], &neighbour[1]);
        if (neighbour[0] == neighbour[1] && neighbour[0] != MPI_PROC_NULL)
            continue;
        for (int side = 0; side < 2; side++) {
            int j = 2 * d + side, from = neighbour[side];
            for (int k = 0; k < rcounts[j]; k++) {
                int expected = from == MPI_PROC_NULL ? -1 : from * 100 + (j ^ 1) * 10 + k;
                bad += recv[rdispls[j] + k] != expected;
                bad += recv_w[rdispls[j] + k] != expected;
            }
            for (int k = 0; k < 2; k++)
                bad += gathered[gdispls[j] + k] != (from == MPI_PROC_NULL ? -1 : from * 100 + 98 + k);
        }
    }
    CHECK_INT(0, bad, "%s: MPI_Neighbor_alltoallv, _alltoallw and _allgatherv", name);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("neighbours");
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    for (nonblocking = 0; nonblocking < 2; nonblocking++) {
        const char *ring_name = nonblocking ? "a periodic ring (MPI_Ineighbor_*)" : "a periodic ring";
        const char *grid_name =
            nonblocking ? "a 2-D grid periodic in dimension 1 (MPI_Ineighbor_*)" : "a 2-D grid periodic in dimension 1";
        MPI_Comm ring;
        int ring_dims[1] = {size}, ring_periods[1] = {1};
        CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, ring_dims, ring_periods, 0, &ring));
        exchange_on(ring, 1, ring_name);
        varying_on(ring, 1, ring_name);
        MPI_Comm_free(&ring);

        MPI_Comm grid;
        int dims[2] = {0, 0}, periods[2] = {0, 1};
        MPI_Dims_create(size, 2, dims);
        CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid));
        exchange_on(grid, 2, grid_name);
        varying_on(grid, 2, grid_name);
        MPI_Comm_free(&grid);
    }
    return check_finish();
}

/* Neighbourhood collectives on Cartesian communicators: MPI_Neighbor_allgather
 * and MPI_Neighbor_alltoall on a periodic ring (where, on 1 or 2 ranks, both
 * neighbours are the same rank and only the direction tells the blocks
 * apart) and on a 2-D grid periodic in one dimension only (MPI_PROC_NULL
 * neighbours leave their blocks untouched). Block 2d comes from the
 * neighbour below in dimension d, which sent it as its block 2d+1 (towards
 * its neighbour above), and block 2d+1 from the one above. Runs on any
 * number of ranks. */
#include "check.h"

static void exchange_on(MPI_Comm cart, int ndims, const char *name)
{
    int rank, send[4], recv[4], gathered[4], mine;
    MPI_Comm_rank(cart, &rank);
    for (int i = 0; i < 2 * ndims; i++) {
        send[i] = rank * 100 + i;
        recv[i] = gathered[i] = -1;
    }
    mine = rank * 100 + 99;
    CHECK_MPI(MPI_Neighbor_alltoall(send, 1, MPI_INT, recv, 1, MPI_INT, cart));
    CHECK_MPI(MPI_Neighbor_allgather(&mine, 1, MPI_INT, gathered, 1, MPI_INT, cart));
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

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("neighbours");
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Comm ring;
    int ring_dims[1] = {size}, ring_periods[1] = {1};
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 1, ring_dims, ring_periods, 0, &ring));
    exchange_on(ring, 1, "a periodic ring");
    MPI_Comm_free(&ring);

    MPI_Comm grid;
    int dims[2] = {0, 0}, periods[2] = {0, 1};
    MPI_Dims_create(size, 2, dims);
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid));
    exchange_on(grid, 2, "a 2-D grid periodic in dimension 1");
    MPI_Comm_free(&grid);
    return check_finish();
}

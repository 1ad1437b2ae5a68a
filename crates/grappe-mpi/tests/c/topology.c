/* Cartesian topologies: a 2-D grid from MPI_Dims_create, coordinates and
 * ranks both ways, shifts with and without periods, MPI_Cart_get, and
 * MPI_Cart_sub keeping each dimension, both, or none: keeping none gives
 * every rank a sub-grid of its own, a zero-dimensional grid of one process
 * (MPI 4.0 section 8.5.7), not MPI_COMM_NULL. */
#include "check.h"

static int rank, size;

/* Keeping no dimension: each rank gets a zero-dimensional Cartesian
 * communicator holding itself alone, and a sub-grid of that is the same. */
static void zero_dimensional(MPI_Comm grid)
{
    int none[2] = {0, 0}, result = -1, n = -1, ndims = -1, kind = -1, r = -1, self_rank = -1;
    MPI_Comm point, again;
    CHECK_MPI(MPI_Cart_sub(grid, none, &point));
    CHECK(point != MPI_COMM_NULL, "rank %d gets a zero-dimensional grid, not MPI_COMM_NULL", rank);
    if (point == MPI_COMM_NULL) return;
    CHECK_MPI(MPI_Comm_size(point, &n));
    CHECK_INT(1, n, "the zero-dimensional grid's size");
    CHECK_MPI(MPI_Topo_test(point, &kind));
    CHECK_INT(MPI_CART, kind, "the zero-dimensional grid's topology");
    CHECK_MPI(MPI_Cartdim_get(point, &ndims));
    CHECK_INT(0, ndims, "the zero-dimensional grid's dimensions");
    CHECK_MPI(MPI_Cart_rank(point, NULL, &self_rank));
    CHECK_INT(0, self_rank, "MPI_Cart_rank in a zero-dimensional grid");
    CHECK_MPI(MPI_Comm_compare(MPI_COMM_SELF, point, &result));
    CHECK_INT(MPI_CONGRUENT, result, "the zero-dimensional grid and MPI_COMM_SELF");
    /* The grid is this rank alone: a message to rank 0 comes back to it. */
    int sent = rank, got = -1;
    CHECK_MPI(MPI_Sendrecv(&sent, 1, MPI_INT, 0, 5, &got, 1, MPI_INT, 0, 5, point, MPI_STATUS_IGNORE));
    CHECK_INT(rank, got, "a message to rank 0 of the zero-dimensional grid");
    CHECK_MPI(MPI_Cart_sub(point, none, &again));
    CHECK(again != MPI_COMM_NULL, "a sub-grid of a zero-dimensional grid");
    if (again != MPI_COMM_NULL) {
        CHECK_MPI(MPI_Comm_rank(again, &r));
        CHECK_INT(0, r, "the rank in the sub-grid of a zero-dimensional grid");
        CHECK_MPI(MPI_Cartdim_get(again, &ndims));
        CHECK_INT(0, ndims, "the sub-grid of a zero-dimensional grid has no dimension");
        CHECK_MPI(MPI_Comm_free(&again));
    }
    CHECK_MPI(MPI_Comm_free(&point));
}

static void sub_grids(MPI_Comm grid, const int dims[2], const int me[2])
{
    for (int kept = 0; kept < 2; kept++) {
        int remain[2] = {kept == 0, kept == 1};
        MPI_Comm sub;
        CHECK_MPI(MPI_Cart_sub(grid, remain, &sub));
        int n = -1, r = -1, ndims = -1, coord = -1;
        CHECK_MPI(MPI_Comm_size(sub, &n));
        CHECK_INT(dims[kept], n, "the size of the sub-grid keeping dimension %d", kept);
        CHECK_MPI(MPI_Comm_rank(sub, &r));
        CHECK_INT(me[kept], r, "the rank in the sub-grid keeping dimension %d", kept);
        CHECK_MPI(MPI_Cartdim_get(sub, &ndims));
        CHECK_INT(1, ndims, "the sub-grid keeping dimension %d has one dimension", kept);
        CHECK_MPI(MPI_Cart_coords(sub, r, 1, &coord));
        CHECK_INT(me[kept], coord, "the coordinate in the sub-grid keeping dimension %d", kept);
        CHECK_MPI(MPI_Comm_free(&sub));
    }
    int both[2] = {1, 1}, result = -1;
    MPI_Comm whole;
    CHECK_MPI(MPI_Cart_sub(grid, both, &whole));
    CHECK_MPI(MPI_Comm_compare(grid, whole, &result));
    CHECK_INT(MPI_CONGRUENT, result, "the sub-grid keeping both dimensions");
    CHECK_MPI(MPI_Comm_free(&whole));

    zero_dimensional(grid);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("topology");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    int dims[2] = {0, 0}, periods[2] = {1, 0};
    CHECK_MPI(MPI_Dims_create(size, 2, dims));
    CHECK_INT(size, dims[0] * dims[1], "MPI_Dims_create's grid holds every rank");
    CHECK(dims[0] >= dims[1], "MPI_Dims_create orders the dimensions from the largest: %d x %d", dims[0], dims[1]);
    MPI_Comm grid;
    CHECK_MPI(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &grid));
    int me[2] = {-1, -1}, back = -1;
    CHECK_MPI(MPI_Cart_coords(grid, rank, 2, me));
    CHECK_INT(rank, me[0] * dims[1] + me[1], "row-major coordinates (%d, %d)", me[0], me[1]);
    CHECK_MPI(MPI_Cart_rank(grid, me, &back));
    CHECK_INT(rank, back, "MPI_Cart_rank of MPI_Cart_coords");

    int got_dims[2], got_periods[2], got_coords[2];
    CHECK_MPI(MPI_Cart_get(grid, 2, got_dims, got_periods, got_coords));
    CHECK_INTS(dims, got_dims, 2, "MPI_Cart_get's dimensions");
    CHECK_INTS(periods, got_periods, 2, "MPI_Cart_get's periods");
    CHECK_INTS(me, got_coords, 2, "MPI_Cart_get's coordinates");

    int source = -1, dest = -1;
    CHECK_MPI(MPI_Cart_shift(grid, 0, 1, &source, &dest));
    int up[2] = {(me[0] + dims[0] - 1) % dims[0], me[1]}, down[2] = {(me[0] + 1) % dims[0], me[1]};
    int want_source = -1, want_dest = -1;
    CHECK_MPI(MPI_Cart_rank(grid, up, &want_source));
    CHECK_MPI(MPI_Cart_rank(grid, down, &want_dest));
    CHECK_INT(want_source, source, "the periodic shift's source");
    CHECK_INT(want_dest, dest, "the periodic shift's destination");
    CHECK_MPI(MPI_Cart_shift(grid, 1, 1, &source, &dest));
    CHECK_INT(me[1] == 0 ? MPI_PROC_NULL : rank - 1, source, "the open shift's source");
    CHECK_INT(me[1] == dims[1] - 1 ? MPI_PROC_NULL : rank + 1, dest, "the open shift's destination");

    sub_grids(grid, dims, me);
    CHECK_MPI(MPI_Comm_free(&grid));
    return check_finish();
}

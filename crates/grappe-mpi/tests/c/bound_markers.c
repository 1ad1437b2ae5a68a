/* Bound markers: MPI_LB and MPI_UB in MPI_Type_create_struct set a type's
 * lower and upper bounds (MPI-1's rules, which MPICH keeps), the bounds
 * stick to types built from it, and a type made by MPI_Type_create_resized
 * carries its bounds as markers too: in a struct, marked bounds override
 * the bounds of parts that have none (MPI-4.0 5.1.7). Runs on any number
 * of ranks. */
#include "check.h"

static void check_bounds(MPI_Datatype t, const char *what, int size, MPI_Aint lb, MPI_Aint extent, MPI_Aint true_lb,
                         MPI_Aint true_extent)
{
    int got_size = -1;
    MPI_Aint got_lb = -1, got_extent = -1, got_true_lb = -1, got_true_extent = -1;
    CHECK_MPI(MPI_Type_size(t, &got_size));
    CHECK_MPI(MPI_Type_get_extent(t, &got_lb, &got_extent));
    CHECK_MPI(MPI_Type_get_true_extent(t, &got_true_lb, &got_true_extent));
    CHECK_INT(size, got_size, "size of %s", what);
    CHECK_INT(lb, got_lb, "lower bound of %s", what);
    CHECK_INT(extent, got_extent, "extent of %s", what);
    CHECK_INT(true_lb, got_true_lb, "true lower bound of %s", what);
    CHECK_INT(true_extent, got_true_extent, "true extent of %s", what);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("bound_markers");

    /* { (LB,-3), 4 x (BYTE,0), (UB,6) } */
    int lens[3] = {1, 4, 1};
    MPI_Aint displs[3] = {-3, 0, 6};
    MPI_Datatype types[3] = {MPI_LB, MPI_BYTE, MPI_UB}, marked, three;
    CHECK_MPI(MPI_Type_create_struct(3, lens, displs, types, &marked));
    check_bounds(marked, "{ (LB,-3), 4 bytes at 0, (UB,6) }", 4, -3, 9, 0, 4);
    CHECK_MPI(MPI_Type_contiguous(3, marked, &three));
    check_bounds(three, "3 of them contiguous", 12, -3, 27, 0, 22);
    MPI_Type_free(&three);

    /* Markers beat the bounds of a part without them: an int at 20 lies
     * beyond the UB marker at 6 and does not move it. */
    int lens2[2] = {1, 1};
    MPI_Aint displs2[2] = {0, 20};
    MPI_Datatype types2[2] = {marked, MPI_INT}, outer;
    CHECK_MPI(MPI_Type_create_struct(2, lens2, displs2, types2, &outer));
    check_bounds(outer, "{ the marked type at 0, an int at 20 }", 8, -3, 9, 0, 24);
    MPI_Type_free(&outer);

    /* The same with a resized type: its bounds [-8, 8) are markers. */
    MPI_Datatype resized;
    CHECK_MPI(MPI_Type_create_resized(MPI_INT, -8, 16, &resized));
    types2[0] = resized;
    CHECK_MPI(MPI_Type_create_struct(2, lens2, displs2, types2, &outer));
    check_bounds(outer, "{ an int resized to [-8, 8) at 0, an int at 20 }", 8, -8, 16, 0, 24);
    MPI_Type_free(&outer);
    MPI_Type_free(&resized);

    /* Data still moves by the markers' extent: two elements of the marked
     * type hold their bytes 9 apart. */
    CHECK_MPI(MPI_Type_commit(&marked));
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    unsigned char out[32], in[32];
    for (int i = 0; i < 32; i++)
        out[i] = (unsigned char)i, in[i] = 0xff;
    CHECK_MPI(MPI_Sendrecv(out + 3, 2, marked, rank, 1, in + 3, 2, marked, rank, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < 32; i++) {
        int moved = (i >= 3 && i < 7) || (i >= 12 && i < 16);
        CHECK_INT(moved ? i : 0xff, in[i], "byte %d after sending two marked elements", i);
    }
    MPI_Type_free(&marked);
    return check_finish();
}

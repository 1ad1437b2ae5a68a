/* Derived datatypes of many elements, as libraries make and free them per
 * transfer (ARMCI-MPI under Global Arrays and NWChem: a subarray or an
 * hindexed type for each strided put and get): making one costs its runs
 * of memory, not its elements, and their bounds are right whatever the
 * order of their elements (negative strides, shifted lower bounds).
 *
 * A contiguous type of 2^26 doubles and a subarray of 3 rows of 2^20 are
 * made, committed and freed 200 times each (a layout built element by
 * element takes minutes: the harness's timeout reports it); sizes,
 * extents and true extents are checked against MPI's definitions; and
 * data sent through a negative-stride vector and a resized-contiguous
 * type arrives in MPI's order.
 *
 * Vectors of a billion blocks, as MPI 3's large-count functions are made to
 * query: blocks that touch make a contiguous type, whose size and extent
 * beyond an int are right; blocks apart are a billion separate runs, which
 * a library that lays types out run by run may refuse (MPI_ERR_NO_MEM, as
 * grappe does beyond 2^28 runs) but must not hang on or exhaust memory for;
 * if it makes the type, its size and extent are right too. */
#include "check.h"
#include <limits.h>

#define DOUBLE_ELEMENTS (1 << 26)
#define ROW (1 << 20)

static void check_bounds(MPI_Datatype type, long long size, long long lb, long long extent, long long true_lb,
                         long long true_extent, const char *what)
{
    int got_size = -1;
    MPI_Aint got_lb = -1, got_extent = -1, got_true_lb = -1, got_true_extent = -1;
    CHECK_MPI(MPI_Type_size(type, &got_size));
    CHECK_MPI(MPI_Type_get_extent(type, &got_lb, &got_extent));
    CHECK_MPI(MPI_Type_get_true_extent(type, &got_true_lb, &got_true_extent));
    CHECK_INT(size, got_size, "%s: size", what);
    CHECK_INT(lb, got_lb, "%s: lower bound", what);
    CHECK_INT(extent, got_extent, "%s: extent", what);
    CHECK_INT(true_lb, got_true_lb, "%s: true lower bound", what);
    CHECK_INT(true_extent, got_true_extent, "%s: true extent", what);
}

/* Made, committed, checked and freed many times over. */
static void many_large_types(void)
{
    for (int i = 0; i < 200; i++) {
        MPI_Datatype whole, rows;
        CHECK_MPI(MPI_Type_contiguous(DOUBLE_ELEMENTS, MPI_DOUBLE, &whole));
        CHECK_MPI(MPI_Type_commit(&whole));
        int sizes[2] = {8, 2 * ROW}, subsizes[2] = {3, ROW}, starts[2] = {2, 5};
        CHECK_MPI(MPI_Type_create_subarray(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_DOUBLE, &rows));
        CHECK_MPI(MPI_Type_commit(&rows));
        if (i == 0) {
            long long bytes = 8LL * DOUBLE_ELEMENTS;
            check_bounds(whole, bytes, 0, bytes, 0, bytes, "contiguous(2^26, MPI_DOUBLE)");
            long long row_bytes = 8LL * 2 * ROW, first = 2 * row_bytes + 5 * 8;
            check_bounds(rows, 3LL * ROW * 8, 0, 8 * row_bytes, first, 2 * row_bytes + 8LL * ROW,
                         "subarray 3 x 2^20 of 8 x 2^21 doubles");
        }
        CHECK_MPI(MPI_Type_free(&whole));
        CHECK_MPI(MPI_Type_free(&rows));
    }
}

/* hvector(3, 2, -16 bytes, MPI_INT): blocks at 0, -16, -32, in that order. */
static void negative_stride(int rank, int size)
{
    MPI_Datatype back;
    CHECK_MPI(MPI_Type_create_hvector(3, 2, -16, MPI_INT, &back));
    CHECK_MPI(MPI_Type_commit(&back));
    check_bounds(back, 24, -32, 40, -32, 40, "hvector(3, 2, -16 bytes, MPI_INT)");
    /* A large one: runs of 2^20 ints going backwards by 2^23 bytes. */
    MPI_Datatype big;
    CHECK_MPI(MPI_Type_create_hvector(4, ROW, -(8 << 20), MPI_INT, &big));
    CHECK_MPI(MPI_Type_commit(&big));
    check_bounds(big, 16LL * ROW, -3LL * (8 << 20), 3LL * (8 << 20) + 4LL * ROW, -3LL * (8 << 20),
                 3LL * (8 << 20) + 4LL * ROW, "hvector(4, 2^20, -2^23 bytes, MPI_INT)");
    CHECK_MPI(MPI_Type_free(&big));

    int buf[12], got[6];
    for (int i = 0; i < 12; i++) buf[i] = 100 + i;
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    /* The element starts at buf[8]: ints 8,9 then 4,5 then 0,1. */
    CHECK_MPI(MPI_Sendrecv(&buf[8], 1, back, to, 7, got, 6, MPI_INT, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    int want[6] = {108, 109, 104, 105, 100, 101};
    for (int i = 0; i < 6; i++) CHECK_INT(want[i], got[i], "negative-stride vector: int %d received", i);
    CHECK_MPI(MPI_Type_free(&back));
}

/* resized(MPI_INT, lb -4, extent 4) is one int filling its extent, its
 * lower bound 4 bytes before it: contiguous(3, it) has lb -4, extent 12,
 * true lb 0, true extent 12, and its data is the three ints. */
static void shifted_lower_bound(int rank, int size)
{
    MPI_Datatype shifted, three;
    CHECK_MPI(MPI_Type_create_resized(MPI_INT, -4, 4, &shifted));
    CHECK_MPI(MPI_Type_contiguous(3, shifted, &three));
    CHECK_MPI(MPI_Type_commit(&three));
    check_bounds(three, 12, -4, 12, 0, 12, "contiguous(3, resized(MPI_INT, -4, 4))");
    int got[6] = {-1, -1, -1, -1, -1, -1};
    int to = (rank + 1) % size, from = (rank + size - 1) % size;
    /* Two elements: six ints end to end. */
    int two[6] = {rank, rank + 10, rank + 20, rank + 30, rank + 40, rank + 50};
    CHECK_MPI(MPI_Sendrecv(two, 2, three, to, 8, got, 6, MPI_INT, from, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < 6; i++) CHECK_INT(from + 10 * i, got[i], "resized contiguous: int %d received", i);
    CHECK_MPI(MPI_Type_free(&three));
    CHECK_MPI(MPI_Type_free(&shifted));
}

static void check_large_extent(MPI_Datatype type, MPI_Count size, MPI_Count extent, const char *what)
{
    MPI_Count got_size = -1, lb = -1, got_extent = -1;
    CHECK_MPI(MPI_Type_size_x(type, &got_size));
    CHECK_MPI(MPI_Type_get_extent_x(type, &lb, &got_extent));
    CHECK_INT(size, got_size, "%s: size", what);
    CHECK_INT(0, lb, "%s: lower bound", what);
    CHECK_INT(extent, got_extent, "%s: extent", what);
}

static void billion_blocks(void)
{
    const MPI_Count n = INT_MAX / 2;
    MPI_Datatype touching, touching_bytes, four_ints, apart;
    CHECK_MPI(MPI_Type_vector((int) n, 2, 2, MPI_INT, &touching));
    check_large_extent(touching, n * 2 * sizeof(int), n * 2 * sizeof(int), "a vector of a billion touching blocks");
    CHECK_MPI(MPI_Type_free(&touching));
    CHECK_MPI(MPI_Type_create_hvector((int) n, 2, 2 * sizeof(int), MPI_INT, &touching_bytes));
    check_large_extent(touching_bytes, n * 2 * sizeof(int), n * 2 * sizeof(int), "an hvector of a billion touching blocks");
    CHECK_MPI(MPI_Type_free(&touching_bytes));

    CHECK_MPI(MPI_Type_contiguous(4, MPI_INT, &four_ints));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rc = MPI_Type_vector((int) n, 1, 3, four_ints, &apart);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    if (rc == MPI_SUCCESS) {
        check_large_extent(apart, n * 4 * sizeof(int), (n - 1) * 12 * sizeof(int) + 4 * sizeof(int),
                           "a vector of a billion separate blocks");
        CHECK_MPI(MPI_Type_free(&apart));
    } else {
        int class = -1;
        MPI_Error_class(rc, &class);
        CHECK_INT(MPI_ERR_NO_MEM, class, "the error class refusing a vector of a billion separate blocks");
    }
    CHECK_MPI(MPI_Type_free(&four_ints));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("large_types");
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    many_large_types();
    negative_stride(rank, size);
    shifted_lower_bound(rank, size);
    billion_blocks();
    return check_finish();
}

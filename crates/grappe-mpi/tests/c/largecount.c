/* MPI 4's large-count functions (MPI_Send_c...): the same semantics as
 * their int forms, with MPI_Count counts (and MPI_Aint displacements for
 * the v-collectives, MPI_Count ones for the datatype constructors).
 *
 * Point-to-point (blocking, non-blocking, synchronous, sendrecv) with
 * statuses read by MPI_Get_count_c and MPI_Get_elements_c; collectives
 * (Bcast, Allreduce with a program's MPI_Op_create_c operation,
 * Allgatherv with MPI_Count counts and MPI_Aint displacements, Alltoallv,
 * Reduce_scatter_block, a non-blocking Iallreduce); the datatype
 * constructors with their sizes and extents; MPI_Pack_c, MPI_Unpack_c and
 * MPI_Pack_size_c; one-sided access and file I/O (MPI_Win_create_c,
 * MPI_Put_c, MPI_Accumulate_c, MPI_Get_c, MPI_Win_allocate_c,
 * MPI_File_write_at_all_c, MPI_File_read_at_c); counts beyond 2^31 where they cost no memory (a
 * datatype of 2^35 bytes, a status of 3 x 2^31 bytes), which the int
 * forms give as MPI_UNDEFINED; and a negative count refused with
 * MPI_ERR_COUNT under MPI_ERRORS_RETURN.
 *
 * With the argument "big", also a message of 2^31 + 16 bytes of MPI_BYTE
 * (to itself on one rank, from rank 0 to rank 1 on more): 2 GiB for each
 * buffer, so it is run on its own rather than in every conformance run. */
#include "check.h"

#include <unistd.h>

#define BIG_BYTES (((MPI_Count)1 << 31) + 16)

static void point_to_point(int rank, int size)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int out[10], in[10];
    for (int i = 0; i < 10; i++)
        out[i] = 100 * rank + i;
    MPI_Status status;

    check_preset_status(&status);
    CHECK_MPI(MPI_Sendrecv_c(out, 10, MPI_INT, next, 5, in, 10, MPI_INT, prev, 5, MPI_COMM_WORLD, &status));
    for (int i = 0; i < 10; i++)
        CHECK_INT(100 * prev + i, in[i], "MPI_Sendrecv_c: element %d", i);
    MPI_Count count = -1, elements = -1;
    CHECK_MPI(MPI_Get_count_c(&status, MPI_INT, &count));
    CHECK_INT(10, count, "MPI_Get_count_c of 10 ints");
    CHECK_INT(prev, status.MPI_SOURCE, "MPI_Sendrecv_c: source");
    MPI_Datatype triple;
    CHECK_MPI(MPI_Type_contiguous_c(3, MPI_INT, &triple));
    CHECK_MPI(MPI_Type_commit(&triple));
    CHECK_MPI(MPI_Get_count_c(&status, triple, &count));
    CHECK_INT(MPI_UNDEFINED, count, "MPI_Get_count_c of 10 ints in triples");
    CHECK_MPI(MPI_Get_elements_c(&status, triple, &elements));
    CHECK_INT(10, elements, "MPI_Get_elements_c of 10 ints in triples");

    MPI_Request requests[2];
    memset(in, 0, sizeof in);
    CHECK_MPI(MPI_Irecv_c(in, 9, MPI_INT, prev, 6, MPI_COMM_WORLD, &requests[0]));
    CHECK_MPI(MPI_Isend_c(out, 3, triple, next, 6, MPI_COMM_WORLD, &requests[1]));
    MPI_Status statuses[2];
    CHECK_MPI(MPI_Waitall(2, requests, statuses));
    for (int i = 0; i < 9; i++)
        CHECK_INT(100 * prev + i, in[i], "MPI_Isend_c/MPI_Irecv_c: element %d", i);
    CHECK_MPI(MPI_Get_count_c(&statuses[0], triple, &count));
    CHECK_INT(3, count, "MPI_Get_count_c of 9 ints in triples");
    CHECK_MPI(MPI_Type_free(&triple));

    if (size >= 2 && rank < 2) {
        int peer = 1 - rank;
        memset(in, 0, sizeof in);
        if (rank == 0) {
            CHECK_MPI(MPI_Send_c(out, 10, MPI_INT, peer, 7, MPI_COMM_WORLD));
            CHECK_MPI(MPI_Ssend_c(out, 4, MPI_INT, peer, 8, MPI_COMM_WORLD));
        } else {
            check_preset_status(&status);
            CHECK_MPI(MPI_Recv_c(in, 10, MPI_INT, peer, 7, MPI_COMM_WORLD, &status));
            CHECK_STATUS(&status, peer, 7, MPI_INT, 10, "MPI_Recv_c");
            CHECK_MPI(MPI_Recv_c(in, 10, MPI_INT, peer, 8, MPI_COMM_WORLD, &status));
            CHECK_MPI(MPI_Get_count_c(&status, MPI_INT, &count));
            CHECK_INT(4, count, "MPI_Get_count_c after MPI_Ssend_c of 4 ints");
            for (int i = 0; i < 4; i++)
                CHECK_INT(i, in[i], "MPI_Ssend_c: element %d", i);
        }
    }
}

/* MPI_User_function_c: elementwise maximum of ints, the count an MPI_Count. */
static void max_of_ints(void *in, void *inout, MPI_Count *len, MPI_Datatype *type)
{
    (void)type;
    const int *a = in;
    int *b = inout;
    for (MPI_Count i = 0; i < *len; i++)
        if (a[i] > b[i])
            b[i] = a[i];
}

static void collectives(int rank, int size)
{
    int value[4] = {0, 0, 0, 0};
    if (rank == 0)
        for (int i = 0; i < 4; i++)
            value[i] = 40 + i;
    CHECK_MPI(MPI_Bcast_c(value, 4, MPI_INT, 0, MPI_COMM_WORLD));
    for (int i = 0; i < 4; i++)
        CHECK_INT(40 + i, value[i], "MPI_Bcast_c: element %d", i);

    long long mine[2] = {rank, 1}, sum[2] = {-1, -1};
    CHECK_MPI(MPI_Allreduce_c(mine, sum, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD));
    CHECK_INT((long long)size * (size - 1) / 2, sum[0], "MPI_Allreduce_c: sum of ranks");
    CHECK_INT(size, sum[1], "MPI_Allreduce_c: sum of ones");

    MPI_Op max;
    CHECK_MPI(MPI_Op_create_c(max_of_ints, 1, &max));
    int ranks3[3] = {rank, -rank, 2 * rank}, maxima[3] = {-1, -1, -1};
    CHECK_MPI(MPI_Allreduce_c(ranks3, maxima, 3, MPI_INT, max, MPI_COMM_WORLD));
    CHECK_INT(size - 1, maxima[0], "MPI_Allreduce_c with MPI_Op_create_c: max of ranks");
    CHECK_INT(0, maxima[1], "MPI_Allreduce_c with MPI_Op_create_c: max of -ranks");
    CHECK_INT(2 * (size - 1), maxima[2], "MPI_Allreduce_c with MPI_Op_create_c: max of 2 x ranks");
    CHECK_MPI(MPI_Op_free(&max));

    /* Rank r gives r + 1 ints, placed with a gap of one int between blocks. */
    MPI_Count *counts = malloc(size * sizeof *counts);
    MPI_Aint *displs = malloc(size * sizeof *displs);
    MPI_Aint total = 0;
    for (int r = 0; r < size; r++) {
        counts[r] = r + 1;
        displs[r] = total;
        total += r + 2;
    }
    int *gathered = malloc(total * sizeof *gathered), contribution[64];
    for (MPI_Aint i = 0; i < total; i++)
        gathered[i] = -7;
    for (int i = 0; i <= rank; i++)
        contribution[i] = 1000 * rank + i;
    CHECK_MPI(MPI_Allgatherv_c(contribution, rank + 1, MPI_INT, gathered, counts, displs, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++) {
        for (int i = 0; i <= r; i++)
            CHECK_INT(1000 * r + i, gathered[displs[r] + i], "MPI_Allgatherv_c: rank %d's element %d", r, i);
        CHECK_INT(-7, gathered[displs[r] + r + 1], "MPI_Allgatherv_c: the gap after rank %d's block", r);
    }

    /* Alltoallv_c: two ints to each rank, at displacements in reverse rank order. */
    int *send = malloc(2 * size * sizeof *send), *recv = malloc(2 * size * sizeof *recv);
    MPI_Count *twos = malloc(size * sizeof *twos);
    MPI_Aint *sdispls = malloc(size * sizeof *sdispls), *rdispls = malloc(size * sizeof *rdispls);
    for (int r = 0; r < size; r++) {
        twos[r] = 2;
        sdispls[r] = 2 * (size - 1 - r);
        rdispls[r] = 2 * r;
        send[sdispls[r]] = 100 * rank + r;
        send[sdispls[r] + 1] = -(100 * rank + r);
    }
    CHECK_MPI(MPI_Alltoallv_c(send, twos, sdispls, MPI_INT, recv, twos, rdispls, MPI_INT, MPI_COMM_WORLD));
    for (int r = 0; r < size; r++) {
        CHECK_INT(100 * r + rank, recv[2 * r], "MPI_Alltoallv_c: from rank %d", r);
        CHECK_INT(-(100 * r + rank), recv[2 * r + 1], "MPI_Alltoallv_c: second from rank %d", r);
    }

    /* Reduce_scatter_block_c: 2 per rank, element i of every rank's data is i. */
    for (int i = 0; i < 2 * size; i++)
        send[i] = i;
    int block[2] = {-1, -1};
    CHECK_MPI(MPI_Reduce_scatter_block_c(send, block, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK_INT(2 * rank * size, block[0], "MPI_Reduce_scatter_block_c: first");
    CHECK_INT((2 * rank + 1) * size, block[1], "MPI_Reduce_scatter_block_c: second");

    MPI_Request request;
    int one = 1, ranks_total = -1;
    CHECK_MPI(MPI_Iallreduce_c(&one, &ranks_total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request));
    CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
    CHECK_INT(size, ranks_total, "MPI_Iallreduce_c");

    free(counts);
    free(displs);
    free(gathered);
    free(send);
    free(recv);
    free(twos);
    free(sdispls);
    free(rdispls);
}

static void check_type(MPI_Datatype type, MPI_Count size, MPI_Count lb, MPI_Count extent, MPI_Count true_lb,
                       MPI_Count true_extent, const char *what)
{
    MPI_Count got_size = -1, got_lb = -1, got_extent = -1, got_true_lb = -1, got_true_extent = -1;
    CHECK_MPI(MPI_Type_size_c(type, &got_size));
    CHECK_MPI(MPI_Type_get_extent_c(type, &got_lb, &got_extent));
    CHECK_MPI(MPI_Type_get_true_extent_c(type, &got_true_lb, &got_true_extent));
    CHECK_INT(size, got_size, "%s: MPI_Type_size_c", what);
    CHECK_INT(lb, got_lb, "%s: MPI_Type_get_extent_c lb", what);
    CHECK_INT(extent, got_extent, "%s: MPI_Type_get_extent_c extent", what);
    CHECK_INT(true_lb, got_true_lb, "%s: MPI_Type_get_true_extent_c lb", what);
    CHECK_INT(true_extent, got_true_extent, "%s: MPI_Type_get_true_extent_c extent", what);
}

static void datatypes(void)
{
    MPI_Datatype vector, hvector, indexed, hindexed, block, structure, resized, sub;
    CHECK_MPI(MPI_Type_vector_c(3, 2, 4, MPI_INT, &vector));
    check_type(vector, 24, 0, 40, 0, 40, "MPI_Type_vector_c(3, 2, 4, MPI_INT)");
    CHECK_MPI(MPI_Type_create_hvector_c(2, 1, 16, MPI_DOUBLE, &hvector));
    check_type(hvector, 16, 0, 24, 0, 24, "MPI_Type_create_hvector_c(2, 1, 16 bytes, MPI_DOUBLE)");
    MPI_Count lens[2] = {1, 2}, int_displs[2] = {3, 0}, byte_displs[2] = {12, 0};
    CHECK_MPI(MPI_Type_indexed_c(2, lens, int_displs, MPI_INT, &indexed));
    check_type(indexed, 12, 0, 16, 0, 16, "MPI_Type_indexed_c({1, 2}, {3, 0}, MPI_INT)");
    CHECK_MPI(MPI_Type_create_hindexed_c(2, lens, byte_displs, MPI_INT, &hindexed));
    check_type(hindexed, 12, 0, 16, 0, 16, "MPI_Type_create_hindexed_c({1, 2}, {12, 0} bytes, MPI_INT)");
    MPI_Count block_displs[2] = {4, 1};
    CHECK_MPI(MPI_Type_create_indexed_block_c(2, 2, block_displs, MPI_SHORT, &block));
    check_type(block, 8, 2, 10, 2, 10, "MPI_Type_create_indexed_block_c(2, 2, {4, 1}, MPI_SHORT)");
    /* A struct whose extent needs no padding (how much MPI leaves to the library). */
    MPI_Count struct_lens[2] = {1, 2}, struct_displs[2] = {0, 8};
    MPI_Datatype parts[2] = {MPI_DOUBLE, MPI_INT};
    CHECK_MPI(MPI_Type_create_struct_c(2, struct_lens, struct_displs, parts, &structure));
    check_type(structure, 16, 0, 16, 0, 16, "MPI_Type_create_struct_c({1 double, 2 ints})");
    CHECK_MPI(MPI_Type_create_resized_c(MPI_INT, -8, 64, &resized));
    check_type(resized, 4, -8, 64, 0, 4, "MPI_Type_create_resized_c(MPI_INT, -8, 64)");
    MPI_Count sizes[2] = {4, 6}, subsizes[2] = {2, 3}, starts[2] = {1, 2};
    CHECK_MPI(MPI_Type_create_subarray_c(2, sizes, subsizes, starts, MPI_ORDER_C, MPI_INT, &sub));
    check_type(sub, 24, 0, 96, 32, 36, "MPI_Type_create_subarray_c(2 x 3 of 4 x 6 ints at 1, 2)");

    /* A datatype of 2^35 bytes: its size and extent only the _c forms can give. */
    MPI_Datatype mib8, huge;
    CHECK_MPI(MPI_Type_contiguous(1 << 20, MPI_DOUBLE, &mib8));
    CHECK_MPI(MPI_Type_contiguous_c(1 << 12, mib8, &huge));
    CHECK_MPI(MPI_Type_commit(&huge));
    MPI_Count two35 = (MPI_Count)1 << 35;
    check_type(huge, two35, 0, two35, 0, two35, "MPI_Type_contiguous_c(2^12, 2^20 doubles)");
    int int_size = 0;
    CHECK_MPI(MPI_Type_size(huge, &int_size));
    CHECK_INT(MPI_UNDEFINED, int_size, "MPI_Type_size of 2^35 bytes");
    MPI_Count pack_size = -1;
    CHECK_MPI(MPI_Pack_size_c(2, huge, MPI_COMM_WORLD, &pack_size));
    CHECK(pack_size >= 2 * two35, "MPI_Pack_size_c of 2 x 2^35 bytes: %lld", (long long)pack_size);

    /* A count beyond int: the envelope keeps it as a large count. */
    MPI_Datatype wide;
    MPI_Count wide_count = (MPI_Count)3 << 30;
    CHECK_MPI(MPI_Type_contiguous_c(wide_count, MPI_BYTE, &wide));
    check_type(wide, wide_count, 0, wide_count, 0, wide_count, "MPI_Type_contiguous_c(3 x 2^30, MPI_BYTE)");
    MPI_Count nints = -1, naddrs = -1, nlarge = -1, ntypes = -1;
    int combiner = -1;
    CHECK_MPI(MPI_Type_get_envelope_c(wide, &nints, &naddrs, &nlarge, &ntypes, &combiner));
    CHECK_INT(MPI_COMBINER_CONTIGUOUS, combiner, "MPI_Type_get_envelope_c: combiner");
    CHECK_INT(0, nints, "MPI_Type_get_envelope_c: integers");
    CHECK_INT(0, naddrs, "MPI_Type_get_envelope_c: addresses");
    CHECK_INT(1, nlarge, "MPI_Type_get_envelope_c: large counts");
    CHECK_INT(1, ntypes, "MPI_Type_get_envelope_c: datatypes");
    MPI_Count large[1] = {-1};
    MPI_Datatype inner[1] = {MPI_DATATYPE_NULL};
    CHECK_MPI(MPI_Type_get_contents_c(wide, 0, 0, 1, 1, NULL, NULL, large, inner));
    CHECK_INT(wide_count, large[0], "MPI_Type_get_contents_c: the count");
    CHECK(inner[0] == MPI_BYTE, "MPI_Type_get_contents_c: the datatype is MPI_BYTE");
    if (check_on_grappe()) {
        /* The int form cannot give the count (MPI leaves what it does to the library). */
        int ni = -1, na = -1, nd = -1;
        CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
        CHECK_CLASS(MPI_ERR_TYPE, MPI_Type_get_envelope(wide, &ni, &na, &nd, &combiner),
                    "MPI_Type_get_envelope of a count beyond int");
        CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    }

    MPI_Datatype all[] = {vector, hvector, indexed, hindexed, block, structure, resized, sub, mib8, huge, wide};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        CHECK_MPI(MPI_Type_free(&all[i]));
}

/* A status of 3 x 2^31 bytes, as a large receive would leave: the _c forms
 * give its count, the int forms MPI_UNDEFINED. */
static void large_status(void)
{
    MPI_Status status;
    check_preset_status(&status);
    MPI_Count bytes = (MPI_Count)3 << 31, count = -1;
    CHECK_MPI(MPI_Status_set_elements_x(&status, MPI_BYTE, bytes));
    CHECK_MPI(MPI_Get_count_c(&status, MPI_BYTE, &count));
    CHECK_INT(bytes, count, "MPI_Get_count_c of 3 x 2^31 bytes");
    CHECK_MPI(MPI_Get_elements_c(&status, MPI_SHORT, &count));
    CHECK_INT(bytes / 2, count, "MPI_Get_elements_c of 3 x 2^31 bytes in shorts");
    int int_count = 0;
    CHECK_MPI(MPI_Get_count(&status, MPI_BYTE, &int_count));
    CHECK_INT(MPI_UNDEFINED, int_count, "MPI_Get_count of 3 x 2^31 bytes");
    CHECK_MPI(MPI_Get_elements(&status, MPI_BYTE, &int_count));
    CHECK_INT(MPI_UNDEFINED, int_count, "MPI_Get_elements of 3 x 2^31 bytes");
}

static void packing(void)
{
    MPI_Datatype vector;
    CHECK_MPI(MPI_Type_vector_c(3, 1, 2, MPI_INT, &vector));
    CHECK_MPI(MPI_Type_commit(&vector));
    int data[6] = {1, -1, 2, -2, 3, -3}, unpacked[6] = {0, 0, 0, 0, 0, 0};
    MPI_Count size = -1, position = 0;
    CHECK_MPI(MPI_Pack_size_c(1, vector, MPI_COMM_WORLD, &size));
    CHECK(size >= 12, "MPI_Pack_size_c of a vector of 3 ints: %lld", (long long)size);
    char packed[64];
    CHECK_MPI(MPI_Pack_c(data, 1, vector, packed, sizeof packed, &position, MPI_COMM_WORLD));
    CHECK_INT(12, position, "MPI_Pack_c: position after 3 ints");
    CHECK_MPI(MPI_Pack_c(data, 2, MPI_INT, packed, sizeof packed, &position, MPI_COMM_WORLD));
    CHECK_INT(20, position, "MPI_Pack_c: position after 2 more ints");
    position = 0;
    CHECK_MPI(MPI_Unpack_c(packed, 20, &position, unpacked, 1, vector, MPI_COMM_WORLD));
    CHECK_INT(12, position, "MPI_Unpack_c: position after the vector");
    int expected[6] = {1, 0, 2, 0, 3, 0};
    CHECK_INTS(expected, unpacked, 6, "MPI_Unpack_c of a vector");
    int pair[2] = {0, 0};
    CHECK_MPI(MPI_Unpack_c(packed, 20, &position, pair, 2, MPI_INT, MPI_COMM_WORLD));
    CHECK_INT(20, position, "MPI_Unpack_c: position at the end");
    CHECK_INT(1, pair[0], "MPI_Unpack_c: first int");
    CHECK_INT(-1, pair[1], "MPI_Unpack_c: second int");
    CHECK_MPI(MPI_Type_free(&vector));
}

static void errors(int rank)
{
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    int buf[4] = {0, 0, 0, 0};
    CHECK_CLASS(MPI_ERR_COUNT, MPI_Send_c(buf, -1, MPI_INT, rank, 0, MPI_COMM_WORLD), "MPI_Send_c of count -1");
    MPI_Request request = MPI_REQUEST_NULL;
    CHECK_CLASS(MPI_ERR_COUNT, MPI_Irecv_c(buf, -3, MPI_INT, rank, 0, MPI_COMM_WORLD, &request),
                "MPI_Irecv_c of count -3");
    MPI_Datatype type = MPI_DATATYPE_NULL;
    CHECK_CLASS(MPI_ERR_COUNT, MPI_Type_contiguous_c(-2, MPI_INT, &type), "MPI_Type_contiguous_c of count -2");
    if (check_on_grappe()) {
        /* More bytes than a process can address: refused, not read. */
        int rc = MPI_Send_c(buf, (MPI_Count)1 << 62, MPI_INT, rank, 0, MPI_COMM_WORLD);
        CHECK_CLASS(MPI_ERR_COUNT, rc, "MPI_Send_c of 2^62 ints");
        char text[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, text, &len);
        CHECK(strstr(text, "4611686018427387904") != NULL, "the error names the count: %s", text);
    }
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

/* One-sided access through a window of 4 ints per rank, and a file each
 * rank writes 3 ints of and reads its neighbour's from. */
static void rma_and_io(int rank, int size)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    int window[4] = {-1, -1, -1, -1}, mine[2] = {10 * rank, 10 * rank + 1}, one = 1, fetched = -5;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create_c(window, sizeof window, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put_c(mine, 2, MPI_INT, next, 1, 2, MPI_INT, win));
    CHECK_MPI(MPI_Accumulate_c(&one, 1, MPI_INT, next, 3, 1, MPI_INT, MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_INT(10 * prev, window[1], "MPI_Put_c: first int from rank %d", prev);
    CHECK_INT(10 * prev + 1, window[2], "MPI_Put_c: second int from rank %d", prev);
    CHECK_INT(0, window[3], "MPI_Accumulate_c of 1 onto -1");
    CHECK_MPI(MPI_Get_c(&fetched, 1, MPI_INT, next, 1, 1, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_INT(10 * rank, fetched, "MPI_Get_c of what this rank put at rank %d", next);
    CHECK_MPI(MPI_Win_free(&win));

    void *base = NULL;
    CHECK_MPI(MPI_Win_allocate_c(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    int *unit = NULL, found = 0;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &found));
    CHECK(found && unit && *unit == (int)sizeof(int), "MPI_Win_allocate_c's MPI_WIN_DISP_UNIT is sizeof(int)");
    CHECK_MPI(MPI_Win_free(&win));

    char name[512];
    const char *dir = getenv("TMPDIR");
    int pid = rank == 0 ? (int)getpid() : 0;
    CHECK_MPI(MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD));
    snprintf(name, sizeof name, "%s/largecount-%d.dat", dir && *dir ? dir : "/tmp", pid);
    MPI_File fh;
    int amode = MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE;
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, name, amode, MPI_INFO_NULL, &fh));
    int three[3] = {rank, 2 * rank, 3 * rank}, theirs[3] = {-1, -1, -1};
    MPI_Status status;
    CHECK_MPI(MPI_File_write_at_all_c(fh, (MPI_Offset)rank * sizeof three, three, 3, MPI_INT, &status));
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    CHECK_MPI(MPI_File_sync(fh));
    check_preset_status(&status);
    CHECK_MPI(MPI_File_read_at_c(fh, (MPI_Offset)next * sizeof three, theirs, 3, MPI_INT, &status));
    MPI_Count count = -1;
    CHECK_MPI(MPI_Get_count_c(&status, MPI_INT, &count));
    CHECK_INT(3, count, "MPI_File_read_at_c: MPI_Get_count_c");
    for (int i = 0; i < 3; i++)
        CHECK_INT((i + 1) * next, theirs[i], "MPI_File_read_at_c: rank %d's int %d", next, i);
    CHECK_MPI(MPI_File_close(&fh));
}

/* 2^31 + 16 bytes in one message: its count is no int. */
static void big_message(int rank, int size)
{
    MPI_Count n = BIG_BYTES;
    int sender = rank == 0, receiver = size == 1 ? rank == 0 : rank == 1;
    unsigned char *out = NULL, *in = NULL;
    MPI_Count marks[] = {0, 1, ((MPI_Count)1 << 31) - 1, (MPI_Count)1 << 31, n - 1};
    size_t nmarks = sizeof marks / sizeof marks[0];
    if (sender) {
        out = malloc(n);
        CHECK(out != NULL, "2^31 + 16 bytes to send");
        memset(out, 0x5a, n);
        for (size_t i = 0; i < nmarks; i++)
            out[marks[i]] = (unsigned char)(i + 1);
    }
    if (receiver) {
        in = calloc(n, 1);
        CHECK(in != NULL, "2^31 + 16 bytes to receive");
    }
    MPI_Status status;
    check_preset_status(&status);
    if (size == 1) {
        MPI_Request request;
        CHECK_MPI(MPI_Isend_c(out, n, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &request));
        CHECK_MPI(MPI_Recv_c(in, n, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &status));
        CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
    } else if (sender) {
        CHECK_MPI(MPI_Send_c(out, n, MPI_BYTE, 1, 9, MPI_COMM_WORLD));
    } else if (receiver) {
        CHECK_MPI(MPI_Recv_c(in, n, MPI_BYTE, 0, 9, MPI_COMM_WORLD, &status));
    }
    if (receiver) {
        MPI_Count count = -1;
        CHECK_MPI(MPI_Get_count_c(&status, MPI_BYTE, &count));
        CHECK_INT(n, count, "MPI_Get_count_c of the big message");
        int int_count = 0;
        CHECK_MPI(MPI_Get_count(&status, MPI_BYTE, &int_count));
        CHECK_INT(MPI_UNDEFINED, int_count, "MPI_Get_count of the big message");
        for (size_t i = 0; i < nmarks; i++)
            CHECK_INT(i + 1, in[marks[i]], "the big message's byte %lld", (long long)marks[i]);
        MPI_Count stride = 4099, wrong = 0;
        for (MPI_Count i = 2; i < n - 1; i += stride)
            if (i != marks[2] && i != marks[3] && in[i] != 0x5a)
                wrong++;
        CHECK_INT(0, wrong, "bytes of the big message that are not the pattern (every %lld-th)", (long long)stride);
    }
    free(out);
    free(in);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("largecount");
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    point_to_point(rank, size);
    collectives(rank, size);
    datatypes();
    large_status();
    packing();
    rma_and_io(rank, size);
    errors(rank);
    if (argc > 1 && strcmp(argv[1], "big") == 0)
        big_message(rank, size);
    return check_finish();
}

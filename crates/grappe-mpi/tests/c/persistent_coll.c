/* Persistent collectives (MPI 4): MPI_Bcast_init, MPI_Allreduce_init,
 * MPI_Reduce_init, MPI_Allgather_init, MPI_Alltoall_init, MPI_Gatherv_init,
 * MPI_Scan_init and MPI_Barrier_init, each started for several rounds with
 * new data in the same buffers (MPI_Start, MPI_Startall, MPI_Wait,
 * MPI_Test), inactive between rounds, freed with MPI_Request_free; some
 * with derived datatypes or an operation of the program's freed right
 * after the _init call. Runs on any number of ranks. */
#include "check.h"

static int rank, size;

static void rounds(void)
{
    int value = -1, sum = -1, gathered[64], blocks_out[64], blocks_in[64], total = -1, prefix = -1;
    MPI_Request bcast, allreduce, reduce, allgather, alltoall, scan, barrier;
    int root = size - 1;
    CHECK_MPI(MPI_Bcast_init(&value, 1, MPI_INT, root, MPI_COMM_WORLD, MPI_INFO_NULL, &bcast));
    CHECK_MPI(MPI_Allreduce_init(&value, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &allreduce));
    CHECK_MPI(MPI_Reduce_init(&value, &total, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &reduce));
    CHECK_MPI(MPI_Allgather_init(&value, 1, MPI_INT, gathered, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &allgather));
    CHECK_MPI(MPI_Alltoall_init(blocks_out, 1, MPI_INT, blocks_in, 1, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL, &alltoall));
    CHECK_MPI(MPI_Scan_init(&value, &prefix, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &scan));
    CHECK_MPI(MPI_Barrier_init(MPI_COMM_WORLD, MPI_INFO_NULL, &barrier));

    for (int round = 0; round < 3; round++) {
        /* The root's value, new each round, to everyone. */
        value = rank == root ? 100 * round + 7 : -1;
        CHECK_MPI(MPI_Start(&bcast));
        CHECK_MPI(MPI_Wait(&bcast, MPI_STATUS_IGNORE));
        CHECK(bcast != MPI_REQUEST_NULL, "round %d: a completed persistent request stays", round);
        CHECK_INT(100 * round + 7, value, "round %d: MPI_Bcast_init's value", round);

        /* Each rank's own value: sum, max at 0, gather, prefix. */
        value = rank + round;
        MPI_Request both[2] = {allreduce, reduce};
        CHECK_MPI(MPI_Startall(2, both));
        CHECK_MPI(MPI_Waitall(2, both, MPI_STATUSES_IGNORE));
        CHECK_INT(size * (size - 1) / 2 + size * round, sum, "round %d: MPI_Allreduce_init's sum", round);
        if (rank == 0)
            CHECK_INT(size - 1 + round, total, "round %d: MPI_Reduce_init's max", round);
        CHECK_MPI(MPI_Start(&allgather));
        int flag = 0;
        while (!flag)
            CHECK_MPI(MPI_Test(&allgather, &flag, MPI_STATUS_IGNORE));
        for (int r = 0; r < size; r++)
            CHECK_INT(r + round, gathered[r], "round %d: MPI_Allgather_init's block %d", round, r);
        CHECK_MPI(MPI_Start(&scan));
        CHECK_MPI(MPI_Wait(&scan, MPI_STATUS_IGNORE));
        CHECK_INT(rank * (rank + 1) / 2 + (rank + 1) * round, prefix, "round %d: MPI_Scan_init's prefix", round);

        for (int r = 0; r < size; r++)
            blocks_out[r] = 1000 * rank + 10 * r + round;
        CHECK_MPI(MPI_Start(&alltoall));
        CHECK_MPI(MPI_Wait(&alltoall, MPI_STATUS_IGNORE));
        for (int r = 0; r < size; r++)
            CHECK_INT(1000 * r + 10 * rank + round, blocks_in[r], "round %d: MPI_Alltoall_init from %d", round, r);

        CHECK_MPI(MPI_Start(&barrier));
        CHECK_MPI(MPI_Wait(&barrier, MPI_STATUS_IGNORE));
    }
    MPI_Request all[] = {bcast, allreduce, reduce, allgather, alltoall, scan, barrier};
    for (int i = 0; i < 7; i++) {
        CHECK_MPI(MPI_Request_free(&all[i]));
        CHECK(all[i] == MPI_REQUEST_NULL, "MPI_Request_free of persistent collective %d", i);
    }
}

/* MPI_Gatherv_init: rank r gives r + 1 elements, the root gets them end to end. */
static void gatherv(void)
{
    int mine[64], counts[64], displs[64], all[64 * 65 / 2 + 1], at = 0;
    for (int r = 0; r < size; r++)
        counts[r] = r + 1, displs[r] = at, at += r + 1;
    MPI_Request req;
    CHECK_MPI(MPI_Gatherv_init(mine, rank + 1, MPI_INT, all, counts, displs, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL,
                               &req));
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i <= rank; i++)
            mine[i] = 100 * rank + i + round;
        CHECK_MPI(MPI_Start(&req));
        CHECK_MPI(MPI_Wait(&req, MPI_STATUS_IGNORE));
        if (rank == 0)
            for (int r = 0; r < size; r++)
                for (int i = 0; i <= r; i++)
                    CHECK_INT(100 * r + i + round, all[displs[r] + i], "round %d: MPI_Gatherv_init %d.%d", round, r, i);
    }
    MPI_Request_free(&req);
}

/* Persistent collectives whose derived datatypes the program frees right
 * after the _init call (MPI: a freed datatype's pending communication is
 * unaffected): MPI_Bcast_init and MPI_Gatherv_init of a pair of ints,
 * MPI_Alltoallw_init with a strided type for every peer, each started for
 * rounds after the frees. */
static void freed_types(void)
{
    int pair[2], in[2 * 64], gathered[2 * 64], twos[64], places[64], root = size - 1;
    MPI_Datatype pair_type;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &pair_type));
    CHECK_MPI(MPI_Type_commit(&pair_type));
    MPI_Request reqs[3];
    for (int r = 0; r < size; r++)
        twos[r] = 2, places[r] = 2 * r;
    CHECK_MPI(MPI_Bcast_init(pair, 1, pair_type, root, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]));
    CHECK_MPI(MPI_Gatherv_init(pair, 1, pair_type, gathered, twos, places, MPI_INT, root, MPI_COMM_WORLD,
                               MPI_INFO_NULL, &reqs[1]));
    CHECK_MPI(MPI_Type_free(&pair_type));
    for (int round = 0; round < 2; round++) {
        pair[0] = rank == root ? 10 * round + 1 : -1;
        pair[1] = rank == root ? 10 * round + 2 : -1;
        CHECK_MPI(MPI_Start(&reqs[0]));
        CHECK_MPI(MPI_Wait(&reqs[0], MPI_STATUS_IGNORE));
        CHECK_INT(10 * round + 1, pair[0], "round %d: MPI_Bcast_init of a freed pair type, first int", round);
        CHECK_INT(10 * round + 2, pair[1], "round %d: MPI_Bcast_init of a freed pair type, second int", round);
        pair[0] = 100 * rank + round;
        pair[1] = -5;
        for (int k = 0; k < 2 * size; k++)
            gathered[k] = -1;
        CHECK_MPI(MPI_Start(&reqs[1]));
        CHECK_MPI(MPI_Wait(&reqs[1], MPI_STATUS_IGNORE));
        if (rank == root)
            for (int r = 0; r < size; r++)
                CHECK_INT(100 * r + round, gathered[2 * r], "round %d: MPI_Gatherv_init of a freed pair type from %d",
                          round, r);
    }
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[1]);

    MPI_Datatype every_other, sendtypes[64], recvtypes[64];
    int counts[64], sdispls[64], rdispls[64], rcounts[64], wide_out[4 * 64];
    CHECK_MPI(MPI_Type_vector(2, 1, 2, MPI_INT, &every_other));
    CHECK_MPI(MPI_Type_commit(&every_other));
    for (int r = 0; r < size; r++) {
        sendtypes[r] = every_other;
        recvtypes[r] = MPI_INT;
        counts[r] = 1;
        sdispls[r] = (int)(4 * r * sizeof(int));
        rdispls[r] = (int)(2 * r * sizeof(int));
    }
    for (int r = 0; r < size; r++)
        rcounts[r] = 2;
    CHECK_MPI(MPI_Alltoallw_init(wide_out, counts, sdispls, sendtypes, in, rcounts, rdispls, recvtypes,
                                 MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[2]));
    CHECK_MPI(MPI_Type_free(&every_other));
    for (int round = 0; round < 2; round++) {
        for (int r = 0; r < size; r++) {
            wide_out[4 * r] = 1000 * rank + 10 * r + round;
            wide_out[4 * r + 1] = -7;
            wide_out[4 * r + 2] = 1000 * rank + 10 * r + round + 5;
            wide_out[4 * r + 3] = -7;
        }
        for (int k = 0; k < 2 * size; k++)
            in[k] = -1;
        CHECK_MPI(MPI_Start(&reqs[2]));
        CHECK_MPI(MPI_Wait(&reqs[2], MPI_STATUS_IGNORE));
        for (int r = 0; r < size; r++) {
            CHECK_INT(1000 * r + 10 * rank + round, in[2 * r], "round %d: MPI_Alltoallw_init of a freed type from %d",
                      round, r);
            CHECK_INT(1000 * r + 10 * rank + round + 5, in[2 * r + 1],
                      "round %d: MPI_Alltoallw_init of a freed type from %d, second element", round, r);
        }
    }
    MPI_Request_free(&reqs[2]);
}

/* The program's operation: a sum. */
static void program_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int k = 0; k < *len; k++)
        ((int *)inout)[k] += ((int *)in)[k];
}

/* Persistent reductions whose operation of the program's the program
 * frees right after the _init call (MPI_Op_free: pending operations
 * complete normally): MPI_Allreduce_init and MPI_Reduce_scatter_init
 * rounds after the free still sum with it. */
static void freed_op(void)
{
    MPI_Op op;
    int mine[2], sum[2], counts[64], parts[64], part = -1;
    CHECK_MPI(MPI_Op_create(program_sum, 1, &op));
    MPI_Request reqs[2];
    for (int r = 0; r < size; r++)
        counts[r] = 1;
    CHECK_MPI(MPI_Allreduce_init(mine, sum, 2, MPI_INT, op, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[0]));
    CHECK_MPI(MPI_Reduce_scatter_init(parts, &part, counts, MPI_INT, op, MPI_COMM_WORLD, MPI_INFO_NULL, &reqs[1]));
    CHECK_MPI(MPI_Op_free(&op));
    CHECK_INT(MPI_OP_NULL, op, "MPI_Op_free sets the handle to MPI_OP_NULL");
    for (int round = 0; round < 2; round++) {
        mine[0] = rank + round;
        mine[1] = 1;
        for (int r = 0; r < size; r++)
            parts[r] = r * 10 + round;
        CHECK_MPI(MPI_Startall(2, reqs));
        CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));
        CHECK_INT(size * (size - 1) / 2 + size * round, sum[0], "round %d: MPI_Allreduce_init with a freed operation",
                  round);
        CHECK_INT(size, sum[1], "round %d: MPI_Allreduce_init with a freed operation, second element", round);
        CHECK_INT(size * (rank * 10 + round), part, "round %d: MPI_Reduce_scatter_init with a freed operation", round);
    }
    MPI_Request_free(&reqs[0]);
    MPI_Request_free(&reqs[1]);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("persistent_coll");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rounds();
    gatherv();
    freed_types();
    freed_op();
    return check_finish();
}

/* MPI_Alltoallw (a datatype and a byte displacement per peer) and
 * MPI_Dist_graph_create (rank 0 gives every edge of a ring; each rank then
 * knows its neighbours, and a neighbourhood allgather on it carries the
 * right values). Runs on any number of ranks. */
#include "check.h"

static int rank, size, left, right;

static void alltoallw(void)
{
    /* To peer d: d + 1 ints, from int offset 4 * d of the send buffer. */
    int *out = malloc(sizeof(int) * 4 * size), *in = malloc(sizeof(int) * 4 * size);
    int *scounts = malloc(sizeof(int) * size), *sdispls = malloc(sizeof(int) * size);
    int *rcounts = malloc(sizeof(int) * size), *rdispls = malloc(sizeof(int) * size);
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * size);
    for (int i = 0; i < 4 * size; i++) {
        out[i] = 1000 * rank + i;
        in[i] = -1;
    }
    for (int d = 0; d < size; d++) {
        scounts[d] = (d % 4) + 1;
        sdispls[d] = (int)sizeof(int) * 4 * d;
        rcounts[d] = (rank % 4) + 1;
        rdispls[d] = (int)sizeof(int) * 4 * d;
        types[d] = MPI_INT;
    }
    CHECK_MPI(MPI_Alltoallw(out, scounts, sdispls, types, in, rcounts, rdispls, types, MPI_COMM_WORLD));
    for (int s = 0; s < size; s++) {
        for (int k = 0; k < 4; k++) {
            int expected = k <= rank % 4 ? 1000 * s + 4 * rank + k : -1;
            CHECK_INT(expected, in[4 * s + k], "MPI_Alltoallw: int %d from rank %d", k, s);
        }
    }
    free(out), free(in), free(scounts), free(sdispls), free(rcounts), free(rdispls), free(types);
}

static void dist_graph(void)
{
    /* Rank 0 gives every edge i -> i + 1 of the ring; the others none. */
    int n = rank == 0 ? size : 0;
    int *sources = malloc(sizeof(int) * size), *degrees = malloc(sizeof(int) * size);
    int *destinations = malloc(sizeof(int) * size);
    for (int i = 0; i < size; i++) {
        sources[i] = i;
        degrees[i] = 1;
        destinations[i] = (i + 1) % size;
    }
    MPI_Comm ring;
    CHECK_MPI(MPI_Dist_graph_create(MPI_COMM_WORLD, n, sources, degrees, destinations, MPI_UNWEIGHTED, MPI_INFO_NULL,
                                    0, &ring));
    int indegree = -1, outdegree = -1, weighted = -1;
    CHECK_MPI(MPI_Dist_graph_neighbors_count(ring, &indegree, &outdegree, &weighted));
    CHECK_INT(1, indegree, "in-degree on the ring");
    CHECK_INT(1, outdegree, "out-degree on the ring");
    int from = -1, to = -1;
    CHECK_MPI(MPI_Dist_graph_neighbors(ring, 1, &from, MPI_UNWEIGHTED, 1, &to, MPI_UNWEIGHTED));
    CHECK_INT(left, from, "the source on the ring");
    CHECK_INT(right, to, "the destination on the ring");
    int mine = 7 * rank, got = -1;
    CHECK_MPI(MPI_Neighbor_allgather(&mine, 1, MPI_INT, &got, 1, MPI_INT, ring));
    CHECK_INT(7 * left, got, "MPI_Neighbor_allgather on the ring");
    CHECK_MPI(MPI_Comm_free(&ring));
    free(sources), free(degrees), free(destinations);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("alltoallw_distgraph");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    left = (rank + size - 1) % size;
    right = (rank + 1) % size;
    alltoallw();
    dist_graph();
    return check_finish();
}

/*
 * A program that passes through mpi.h every kind of value the ABI fixes: predefined and derived
 * datatypes, pair types, ops (predefined and user), communicators made by split, dup and topology
 * constructors, statuses read field by field, the special ranks and pointers, error classes,
 * attribute keys and the predefined copy callback, and the library objects the header declares
 * (MPI_UNWEIGHTED, MPIR_Dup_fn). Each result is checked; a wrong one aborts the job with the line.
 *
 * tests/abi-mpich-run.sh builds it against grappe's mpi.h and runs it on MPICH's library: it
 * passes only if the header's values and types are the ones that library was built with. Valid C99
 * and C++, so that both compilers' view of the header is run. Runs on 2 ranks or more.
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

enum { MAX_RANKS = 64 };

static int rank, size, checks;

static void check(int ok, int line, const char *what)
{
    checks++;
    if (!ok) {
        fprintf(stderr, "abi_run: rank %d: check failed at line %d: %s\n", rank, line, what);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
}

#define CHECK(cond) check((cond) ? 1 : 0, __LINE__, #cond)
#define OK(call) check((call) == MPI_SUCCESS, __LINE__, #call)

static int left(void) { return (rank + size - 1) % size; }
static int right(void) { return (rank + 1) % size; }

static void environment(void)
{
    int version, subversion, flag;
    OK(MPI_Get_version(&version, &subversion));
    CHECK(version >= 3);
    OK(MPI_Initialized(&flag));
    CHECK(flag);
    double t0 = MPI_Wtime();
    CHECK(MPI_Wtime() >= t0);
    CHECK(MPI_Wtick() > 0.0);
    char name[MPI_MAX_PROCESSOR_NAME];
    int len;
    OK(MPI_Get_processor_name(name, &len));
    CHECK(len > 0 && len < MPI_MAX_PROCESSOR_NAME && (int)strlen(name) == len);
    CHECK(MPI_Comm_f2c(MPI_Comm_c2f(MPI_COMM_WORLD)) == MPI_COMM_WORLD);
}

/* Each rank sends 100 ints to its right neighbour, blocking then nonblocking. */
static void ring(void)
{
    int out[100], in[100], count;
    for (int i = 0; i < 100; i++) {
        out[i] = rank * 1000 + i;
    }
    MPI_Status status;
    OK(MPI_Sendrecv(out, 100, MPI_INT, right(), 7, in, 100, MPI_INT, left(), 7, MPI_COMM_WORLD,
                    &status));
    CHECK(status.MPI_SOURCE == left());
    CHECK(status.MPI_TAG == 7);
    OK(MPI_Get_count(&status, MPI_INT, &count));
    CHECK(count == 100);
    CHECK(in[0] == left() * 1000 && in[99] == left() * 1000 + 99);

    MPI_Request requests[2];
    MPI_Status statuses[2];
    memset(in, 0, sizeof in);
    OK(MPI_Irecv(in, 100, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &requests[0]));
    OK(MPI_Isend(out, 50, MPI_INT, right(), 11, MPI_COMM_WORLD, &requests[1]));
    OK(MPI_Waitall(2, requests, statuses));
    CHECK(requests[0] == MPI_REQUEST_NULL && requests[1] == MPI_REQUEST_NULL);
    CHECK(statuses[0].MPI_SOURCE == left() && statuses[0].MPI_TAG == 11);
    OK(MPI_Get_count(&statuses[0], MPI_INT, &count));
    CHECK(count == 50);
    OK(MPI_Get_count(&statuses[0], MPI_DOUBLE, &count));
    CHECK(count == 25);
    CHECK(in[49] == left() * 1000 + 49 && in[50] == 0);

    /* Blocking send around the ring, the receive not asking for its status. */
    int token = rank;
    if (rank == 0) {
        OK(MPI_Send(&token, 1, MPI_INT, right(), 3, MPI_COMM_WORLD));
        OK(MPI_Recv(&token, 1, MPI_INT, left(), 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(token == size - 1);
    } else {
        OK(MPI_Recv(&token, 1, MPI_INT, left(), 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(token == rank - 1);
        token = rank;
        OK(MPI_Send(&token, 1, MPI_INT, right(), 3, MPI_COMM_WORLD));
    }
}

static void special_ranks_and_probe(void)
{
    MPI_Status status;
    int count = -1;
    OK(MPI_Recv(NULL, 0, MPI_INT, MPI_PROC_NULL, 5, MPI_COMM_WORLD, &status));
    CHECK(status.MPI_SOURCE == MPI_PROC_NULL && status.MPI_TAG == MPI_ANY_TAG);
    OK(MPI_Get_count(&status, MPI_INT, &count));
    CHECK(count == 0);

    if (rank == 0) {
        double values[5] = {1.5, 2.5, 3.5, 4.5, 5.5};
        OK(MPI_Ssend(values, 5, MPI_DOUBLE, 1, 42, MPI_COMM_WORLD));
    } else if (rank == 1) {
        double values[5];
        OK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status));
        CHECK(status.MPI_SOURCE == 0 && status.MPI_TAG == 42);
        OK(MPI_Get_count(&status, MPI_DOUBLE, &count));
        CHECK(count == 5);
        MPI_Message message;
        OK(MPI_Mprobe(0, 42, MPI_COMM_WORLD, &message, &status));
        CHECK(message != MPI_MESSAGE_NULL);
        OK(MPI_Mrecv(values, 5, MPI_DOUBLE, &message, &status));
        CHECK(message == MPI_MESSAGE_NULL);
        CHECK(values[4] == 5.5);
    }
}

struct double_int {
    double value;
    int index;
};

static void add_ints(void *in, void *inout, int *len, MPI_Datatype *datatype)
{
    const int *a = (const int *)in;
    int *b = (int *)inout;
    if (*datatype != MPI_INT) {
        return;
    }
    for (int i = 0; i < *len; i++) {
        b[i] += a[i];
    }
}

static void collectives(void)
{
    int one_based = rank + 1, sum = 0;
    OK(MPI_Allreduce(&one_based, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK(sum == size * (size + 1) / 2);

    double value = rank * 0.5;
    OK(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    CHECK(value == (size - 1) * 0.5);

    struct double_int mine, best;
    mine.value = (double)((rank * 7) % size);
    mine.index = rank;
    OK(MPI_Allreduce(&mine, &best, 1, MPI_DOUBLE_INT, MPI_MAXLOC, MPI_COMM_WORLD));
    CHECK(best.value == (double)(size - 1));
    CHECK((best.index * 7) % size == size - 1);

    int pair[2] = {size - rank, rank}, lowest[2];
    OK(MPI_Allreduce(pair, lowest, 1, MPI_2INT, MPI_MINLOC, MPI_COMM_WORLD));
    CHECK(lowest[0] == 1 && lowest[1] == size - 1);

    MPI_Op op;
    OK(MPI_Op_create(add_ints, 1, &op));
    int ones[2] = {1, rank}, totals[2] = {0, 0};
    OK(MPI_Reduce(ones, totals, 2, MPI_INT, op, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        CHECK(totals[0] == size && totals[1] == size * (size - 1) / 2);
    }
    OK(MPI_Op_free(&op));
    CHECK(op == MPI_OP_NULL);

    char text[16] = "";
    if (rank == size - 1) {
        strcpy(text, "from the root");
    }
    OK(MPI_Bcast(text, (int)sizeof text, MPI_CHAR, size - 1, MPI_COMM_WORLD));
    CHECK(strcmp(text, "from the root") == 0);

    long gathered[MAX_RANKS];
    long mine_long = 10L * rank;
    OK(MPI_Allgather(&mine_long, 1, MPI_LONG, gathered, 1, MPI_LONG, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) {
        CHECK(gathered[i] == 10L * i);
    }

    int to_each[MAX_RANKS], from_each[MAX_RANKS];
    for (int i = 0; i < size; i++) {
        to_each[i] = rank * 100 + i;
    }
    OK(MPI_Alltoall(to_each, 1, MPI_INT, from_each, 1, MPI_INT, MPI_COMM_WORLD));
    for (int i = 0; i < size; i++) {
        CHECK(from_each[i] == i * 100 + rank);
    }
    OK(MPI_Barrier(MPI_COMM_WORLD));
}

/* A strided column of a 3x2 int matrix, sent as one derived type and received contiguous. */
static void derived_datatypes(void)
{
    MPI_Datatype column;
    OK(MPI_Type_vector(3, 1, 2, MPI_INT, &column));
    OK(MPI_Type_commit(&column));
    int type_size;
    MPI_Aint lb, extent;
    OK(MPI_Type_size(column, &type_size));
    OK(MPI_Type_get_extent(column, &lb, &extent));
    CHECK(type_size == 12 && lb == 0 && extent == 20);
    int combiner, integers, addresses, datatypes;
    OK(MPI_Type_get_envelope(column, &integers, &addresses, &datatypes, &combiner));
    CHECK(combiner == MPI_COMBINER_VECTOR && integers == 3 && datatypes == 1);
    OK(MPI_Type_get_envelope(MPI_INT, &integers, &addresses, &datatypes, &combiner));
    CHECK(combiner == MPI_COMBINER_NAMED);

    if (rank == 0) {
        int matrix[6] = {0, 1, 2, 3, 4, 5};
        OK(MPI_Send(matrix + 1, 1, column, 1, 9, MPI_COMM_WORLD));
    } else if (rank == 1) {
        int received[3];
        MPI_Status status;
        OK(MPI_Recv(received, 3, MPI_INT, 0, 9, MPI_COMM_WORLD, &status));
        CHECK(received[0] == 1 && received[1] == 3 && received[2] == 5);
        int elements;
        OK(MPI_Get_elements(&status, MPI_INT, &elements));
        CHECK(elements == 3);
    }
    OK(MPI_Type_free(&column));
    CHECK(column == MPI_DATATYPE_NULL);
}

static void communicators(void)
{
    MPI_Comm half;
    OK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half));
    int half_rank, half_size;
    OK(MPI_Comm_rank(half, &half_rank));
    OK(MPI_Comm_size(half, &half_size));
    CHECK(half_size == (size + 1 - rank % 2) / 2);
    CHECK(half_rank == half_size - 1 - rank / 2); /* keys -rank reverse the order */
    int result;
    OK(MPI_Comm_compare(half, MPI_COMM_WORLD, &result));
    CHECK(result == (size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL));
    OK(MPI_Comm_free(&half));
    CHECK(half == MPI_COMM_NULL);

    MPI_Comm copy;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &copy));
    OK(MPI_Comm_compare(copy, MPI_COMM_WORLD, &result));
    CHECK(result == MPI_CONGRUENT);
    OK(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &result));
    CHECK(result == MPI_IDENT);

    MPI_Group world_group, first;
    int zero = 0, translated;
    OK(MPI_Comm_group(MPI_COMM_WORLD, &world_group));
    OK(MPI_Group_incl(world_group, 1, &zero, &first));
    OK(MPI_Group_translate_ranks(first, 1, &zero, world_group, &translated));
    CHECK(translated == 0);
    OK(MPI_Group_rank(first, &result));
    CHECK(result == (rank == 0 ? 0 : MPI_UNDEFINED));
    OK(MPI_Group_free(&first));
    OK(MPI_Group_free(&world_group));
    CHECK(world_group == MPI_GROUP_NULL);
    OK(MPI_Comm_free(&copy));
}

/* An attribute copied by MPI_COMM_DUP_FN (the library's MPIR_Dup_fn) and one that is not. */
static void attributes(void)
{
    int *tag_ub, flag;
    OK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub, &flag));
    CHECK(flag && *tag_ub >= 32767);

    static int payload = 1234;
    int copied_key, dropped_key;
    OK(MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &copied_key, NULL));
    OK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &dropped_key,
                              NULL));
    CHECK(copied_key != MPI_KEYVAL_INVALID);
    MPI_Comm original, copy;
    OK(MPI_Comm_dup(MPI_COMM_WORLD, &original));
    OK(MPI_Comm_set_attr(original, copied_key, &payload));
    OK(MPI_Comm_set_attr(original, dropped_key, &payload));
    OK(MPI_Comm_dup(original, &copy));
    int *value;
    OK(MPI_Comm_get_attr(copy, copied_key, &value, &flag));
    CHECK(flag && value == &payload);
    OK(MPI_Comm_get_attr(copy, dropped_key, &value, &flag));
    CHECK(!flag);
    OK(MPI_Comm_free(&copy));
    OK(MPI_Comm_free(&original));
    OK(MPI_Comm_free_keyval(&copied_key));
    OK(MPI_Comm_free_keyval(&dropped_key));
    CHECK(copied_key == MPI_KEYVAL_INVALID);
}

static void topologies(void)
{
    int dims[1] = {0}, periods[1] = {1};
    OK(MPI_Dims_create(size, 1, dims));
    CHECK(dims[0] == size);
    MPI_Comm ring_comm;
    OK(MPI_Cart_create(MPI_COMM_WORLD, 1, dims, periods, 0, &ring_comm));
    int kind, source, dest;
    OK(MPI_Topo_test(ring_comm, &kind));
    CHECK(kind == MPI_CART);
    OK(MPI_Topo_test(MPI_COMM_WORLD, &kind));
    CHECK(kind == MPI_UNDEFINED);
    OK(MPI_Cart_shift(ring_comm, 0, 1, &source, &dest));
    CHECK(source == left() && dest == right());
    OK(MPI_Comm_free(&ring_comm));

    int sources[1] = {left()}, destinations[1] = {right()};
    MPI_Comm graph;
    OK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, sources, MPI_UNWEIGHTED, 1, destinations,
                                      MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &graph));
    int indegree, outdegree, weighted;
    OK(MPI_Dist_graph_neighbors_count(graph, &indegree, &outdegree, &weighted));
    CHECK(indegree == 1 && outdegree == 1 && !weighted);
    OK(MPI_Topo_test(graph, &kind));
    CHECK(kind == MPI_DIST_GRAPH);
    OK(MPI_Comm_free(&graph));
}

static void errors(void)
{
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_Errhandler handler;
    OK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler));
    CHECK(handler == MPI_ERRORS_RETURN);
    int value = 0, error_class, len;
    int code = MPI_Send(&value, 1, MPI_INT, size, 0, MPI_COMM_WORLD);
    CHECK(code != MPI_SUCCESS);
    OK(MPI_Error_class(code, &error_class));
    CHECK(error_class == MPI_ERR_RANK);
    code = MPI_Send(&value, -1, MPI_INT, right(), 0, MPI_COMM_WORLD);
    OK(MPI_Error_class(code, &error_class));
    CHECK(error_class == MPI_ERR_COUNT);
    code = MPI_Send(&value, 1, MPI_DATATYPE_NULL, right(), 0, MPI_COMM_WORLD);
    OK(MPI_Error_class(code, &error_class));
    CHECK(error_class == MPI_ERR_TYPE);
    code = MPI_Send(&value, 1, MPI_INT, right(), 0, MPI_COMM_NULL);
    OK(MPI_Error_class(code, &error_class));
    CHECK(error_class == MPI_ERR_COMM);
    char text[MPI_MAX_ERROR_STRING];
    OK(MPI_Error_string(code, text, &len));
    CHECK(len > 0 && len < MPI_MAX_ERROR_STRING);
    OK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
}

int main(int argc, char **argv)
{
    OK(MPI_Init(&argc, &argv));
    OK(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    OK(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK(size >= 2 && size <= MAX_RANKS);
    environment();
    ring();
    special_ranks_and_probe();
    collectives();
    derived_datatypes();
    communicators();
    attributes();
    topologies();
    errors();
    int total = 0;
    OK(MPI_Reduce(&checks, &total, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD));
    if (rank == 0) {
        printf("abi_run: %d checks passed on %d ranks\n", total, size);
    }
    OK(MPI_Finalize());
    return 0;
}

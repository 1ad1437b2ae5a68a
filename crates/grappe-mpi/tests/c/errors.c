/* Errors returned, not fatal: with MPI_ERRORS_RETURN on MPI_COMM_WORLD,
 * misuse returns an error code of the right class (MPI_Error_class) with a
 * non-empty MPI_Error_string, and the job goes on: a rank out of range,
 * negative counts, bad tags, MPI_DATATYPE_NULL, invalid and null
 * communicators, a null buffer, truncation (MPI_Recv, MPI_Wait, and
 * MPI_Waitall's and MPI_Waitsome's MPI_ERR_IN_STATUS, returned as that
 * very code, with the error in the status), a bad
 * root, MPI_OP_NULL and an operation that does not apply to the type, an
 * invalid request, a NULL output of MPI_Comm_get_info, MPI_IN_PLACE and
 * aliased buffers given to MPI_Reduce_local, aliased send and receive
 * buffers of collectives (gathers whose send buffer is the rank's own
 * block of the receive buffer among them). MPI_Comm_get_errhandler returns what was set, and
 * duplicates inherit it. The program's own classes, codes and strings
 * (MPI_Add_error_class/code/string) come back from MPI_Error_class and
 * MPI_Error_string, and MPI_LASTUSEDCODE follows them.
 *
 * Only misuse that MPICH 4.0.2 reports cleanly is here (checked): it
 * crashes instead on some handles that look like predefined ones but are
 * not, e.g. the datatype (MPI_Datatype)0x4c000c99 (silent death) or the
 * communicator (MPI_Comm)0x44000005 (assertion failure). grappe must turn
 * those into MPI_ERR_TYPE / MPI_ERR_COMM too, and the same for any other
 * garbage handle (requests, groups, ops) and for uncommitted derived
 * datatypes; those cases belong in grappe's own tests.
 *
 * The invalid handles are integers, as in MPICH's ABI: under Open MPI,
 * whose handles are pointers, this test crashes (expected).
 *
 * MPICH 4.0.2 invokes MPI_COMM_WORLD's handler for an invalid communicator
 * argument (MPI 3.1's rule; with MPI_ERRORS_RETURN on MPI_COMM_SELF only,
 * it aborts), so setting it on MPI_COMM_WORLD is enough here. */
#include "check.h"

static int rank, size, left, right;

/* The error code is of the class, and its string is not empty. */
#define CHECK_ERROR(expected_class, rc, ...)                     \
    do {                                                         \
        int rc_ = (rc);                                          \
        check_class_(__FILE__, __LINE__, (expected_class),       \
                     #expected_class, rc_, __VA_ARGS__);         \
        check_error_string(rc_, #rc);                            \
    } while (0)

static void check_error_string(int code, const char *call)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = -1;
    memset(text, 0x7f, sizeof text);
    CHECK_MPI(MPI_Error_string(code, text, &len));
    CHECK(len > 0 && len < MPI_MAX_ERROR_STRING, "MPI_Error_string of %s's code %d: length %d", call, code, len);
    if (len > 0 && len < MPI_MAX_ERROR_STRING)
        CHECK_INT(strnlen(text, MPI_MAX_ERROR_STRING), len, "MPI_Error_string of %s's code: resultlen is the length",
                  call);
}

static void errhandlers(void)
{
    MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
    CHECK_MPI(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler));
    CHECK_INT(MPI_ERRORS_ARE_FATAL, handler, "MPI_COMM_WORLD's error handler at start");
    CHECK_MPI(MPI_Errhandler_free(&handler));
    CHECK_INT(MPI_ERRHANDLER_NULL, handler, "MPI_Errhandler_free sets MPI_ERRHANDLER_NULL");

    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &handler));
    CHECK_INT(MPI_ERRORS_RETURN, handler, "MPI_Comm_get_errhandler after MPI_Comm_set_errhandler");
    CHECK_MPI(MPI_Errhandler_free(&handler));

    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK_MPI(MPI_Comm_get_errhandler(dup, &handler));
    CHECK_INT(MPI_ERRORS_RETURN, handler, "a duplicate of MPI_COMM_WORLD inherits its error handler");
    CHECK_MPI(MPI_Errhandler_free(&handler));
    int buf = 0;
    CHECK_ERROR(MPI_ERR_RANK, MPI_Send(&buf, 1, MPI_INT, size, 0, dup), "MPI_Send to rank size on the duplicate");
    CHECK_MPI(MPI_Comm_free(&dup));
}

static void point_to_point_arguments(void)
{
    int buf[4] = {0}, ub = 0, *attr = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &attr, &flag);
    if (flag && attr)
        ub = *attr;

    CHECK_ERROR(MPI_ERR_RANK, MPI_Send(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD), "MPI_Send to rank size (%d)",
                size);
    CHECK_ERROR(MPI_ERR_RANK, MPI_Send(buf, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD), "MPI_Send to rank size+5");
    CHECK_ERROR(MPI_ERR_RANK, MPI_Send(buf, 1, MPI_INT, -5, 0, MPI_COMM_WORLD), "MPI_Send to rank -5");
    CHECK_ERROR(MPI_ERR_RANK, MPI_Send(buf, 1, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD),
                "MPI_Send to MPI_ANY_SOURCE");
    CHECK_ERROR(MPI_ERR_RANK, MPI_Recv(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                "MPI_Recv from rank size");
    MPI_Request request = MPI_REQUEST_NULL;
    CHECK_ERROR(MPI_ERR_RANK, MPI_Isend(buf, 1, MPI_INT, size + 1, 0, MPI_COMM_WORLD, &request),
                "MPI_Isend to rank size+1");

    CHECK_ERROR(MPI_ERR_COUNT, MPI_Send(buf, -1, MPI_INT, right, 0, MPI_COMM_WORLD), "MPI_Send of -1 elements");
    CHECK_ERROR(MPI_ERR_COUNT, MPI_Recv(buf, -1, MPI_INT, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                "MPI_Recv of -1 elements");

    CHECK_ERROR(MPI_ERR_TAG, MPI_Send(buf, 1, MPI_INT, right, -5, MPI_COMM_WORLD), "MPI_Send with tag -5");
    CHECK_ERROR(MPI_ERR_TAG, MPI_Send(buf, 1, MPI_INT, right, MPI_ANY_TAG, MPI_COMM_WORLD),
                "MPI_Send with tag MPI_ANY_TAG");
    CHECK_ERROR(MPI_ERR_TAG, MPI_Recv(buf, 1, MPI_INT, left, -5, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                "MPI_Recv with tag -5");
    if (ub > 0 && ub < 0x7fffffff)
        CHECK_ERROR(MPI_ERR_TAG, MPI_Send(buf, 1, MPI_INT, right, ub + 1, MPI_COMM_WORLD),
                    "MPI_Send with tag MPI_TAG_UB+1 (%d)", ub + 1);

    CHECK_ERROR(MPI_ERR_TYPE, MPI_Send(buf, 1, MPI_DATATYPE_NULL, right, 0, MPI_COMM_WORLD),
                "MPI_Send of MPI_DATATYPE_NULL");
    CHECK_ERROR(MPI_ERR_TYPE, MPI_Recv(buf, 1, MPI_DATATYPE_NULL, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                "MPI_Recv of MPI_DATATYPE_NULL");

    CHECK_ERROR(MPI_ERR_BUFFER, MPI_Send(NULL, 1, MPI_INT, right, 0, MPI_COMM_WORLD),
                "MPI_Send of 1 element from a null buffer");
    CHECK_ERROR(MPI_ERR_BUFFER, MPI_Recv(NULL, 1, MPI_INT, left, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                "MPI_Recv of 1 element into a null buffer");

    CHECK_ERROR(MPI_ERR_COMM, MPI_Send(buf, 1, MPI_INT, 0, 0, (MPI_Comm)0x12345),
                "MPI_Send on the communicator 0x12345");
    CHECK_ERROR(MPI_ERR_COMM, MPI_Send(buf, 1, MPI_INT, 0, 0, (MPI_Comm)0x84000123),
                "MPI_Send on the communicator 0x84000123");
    CHECK_ERROR(MPI_ERR_COMM, MPI_Send(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL), "MPI_Send on MPI_COMM_NULL");
    CHECK_ERROR(MPI_ERR_COMM, MPI_Recv(buf, 1, MPI_INT, 0, 0, MPI_COMM_NULL, MPI_STATUS_IGNORE),
                "MPI_Recv on MPI_COMM_NULL");
    int n = -1;
    CHECK_ERROR(MPI_ERR_COMM, MPI_Comm_size(MPI_COMM_NULL, &n), "MPI_Comm_size(MPI_COMM_NULL)");
    CHECK_ERROR(MPI_ERR_COMM, MPI_Comm_rank((MPI_Comm)0x12345, &n), "MPI_Comm_rank on the communicator 0x12345");
    MPI_Comm freed;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &freed));
    MPI_Comm stale = freed;
    CHECK_MPI(MPI_Comm_free(&freed));
    CHECK_ERROR(MPI_ERR_COMM, MPI_Send(buf, 1, MPI_INT, 0, 0, stale), "MPI_Send on a freed communicator");

    MPI_Request bogus = (MPI_Request)0x12345;
    CHECK_ERROR(MPI_ERR_REQUEST, MPI_Wait(&bogus, MPI_STATUS_IGNORE), "MPI_Wait on the request 0x12345");
}

/* MPI_Waitsome over a receive that gets a message of its size and one
 * that gets `n` ints into 5 (from `out`, into `in`): whenever the
 * truncated one completes the call returns the code MPI_ERR_IN_STATUS
 * itself (programs compare the result with it), with outcount, the
 * indices and each completed status's MPI_ERROR written. */
static void waitsome_truncated(const int *out, int n, int *in)
{
    int fits[5], done[2] = {0, 0};
    MPI_Request reqs[2], sends[2];
    MPI_Status statuses[2];
    CHECK_MPI(MPI_Irecv(fits, 5, MPI_INT, left, 6, MPI_COMM_WORLD, &reqs[0]));
    CHECK_MPI(MPI_Irecv(in, 5, MPI_INT, left, 7, MPI_COMM_WORLD, &reqs[1]));
    CHECK_MPI(MPI_Isend(out, 5, MPI_INT, right, 6, MPI_COMM_WORLD, &sends[0]));
    CHECK_MPI(MPI_Isend(out, n, MPI_INT, right, 7, MPI_COMM_WORLD, &sends[1]));
    while (!done[0] || !done[1]) {
        int outcount = -1, indices[2] = {-1, -1}, truncated = 0;
        check_preset_status(&statuses[0]);
        check_preset_status(&statuses[1]);
        int rc = MPI_Waitsome(2, reqs, &outcount, indices, statuses);
        if (!CHECK(outcount >= 1 && outcount <= 2, "MPI_Waitsome's outcount is %d (rc %d)", outcount, rc))
            break;
        for (int k = 0; k < outcount; k++) {
            done[indices[k] & 1] = 1;
            truncated |= indices[k] == 1;
        }
        if (!truncated) {
            CHECK_MPI(rc);
            continue;
        }
        CHECK_INT(MPI_ERR_IN_STATUS, rc, "MPI_Waitsome with a receive of %d ints into 5", n);
        for (int k = 0; k < outcount; k++) {
            if (indices[k] == 1)
                CHECK_ERROR(MPI_ERR_TRUNCATE, statuses[k].MPI_ERROR, "MPI_Waitsome: the truncated receive's MPI_ERROR");
            else
                CHECK_INT(MPI_SUCCESS, statuses[k].MPI_ERROR, "MPI_Waitsome: the fitting receive's MPI_ERROR");
        }
    }
    CHECK_MPI(MPI_Waitall(2, sends, MPI_STATUSES_IGNORE));
}

/* Messages longer than the receive buffer, small and past the eager limit. */
static void truncation(void)
{
    const int lengths[] = {10, 100000};
    for (int l = 0; l < 2; l++) {
        int n = lengths[l];
        int *out = malloc(sizeof(int) * n), *in = malloc(sizeof(int) * 6);
        for (int k = 0; k < n; k++)
            out[k] = rank * 100 + k;
        MPI_Request send, recv;
        MPI_Status status;

        /* MPI_Recv returns the error; the status' MPI_ERROR need not be set. */
        CHECK_MPI(MPI_Isend(out, n, MPI_INT, right, 3, MPI_COMM_WORLD, &send));
        check_preset_status(&status);
        in[5] = -1;
        CHECK_ERROR(MPI_ERR_TRUNCATE, MPI_Recv(in, 5, MPI_INT, left, 3, MPI_COMM_WORLD, &status),
                    "MPI_Recv of %d ints into 5", n);
        CHECK_INT(left, status.MPI_SOURCE, "MPI_Recv truncated: status.MPI_SOURCE");
        CHECK_INT(3, status.MPI_TAG, "MPI_Recv truncated: status.MPI_TAG");
        CHECK_INT(-1, in[5], "MPI_Recv truncated: nothing written past the buffer");
        CHECK_MPI(MPI_Wait(&send, MPI_STATUS_IGNORE));

        /* MPI_Wait likewise. */
        CHECK_MPI(MPI_Irecv(in, 5, MPI_INT, left, 4, MPI_COMM_WORLD, &recv));
        CHECK_MPI(MPI_Isend(out, n, MPI_INT, right, 4, MPI_COMM_WORLD, &send));
        CHECK_ERROR(MPI_ERR_TRUNCATE, MPI_Wait(&recv, MPI_STATUS_IGNORE), "MPI_Wait on a receive of %d ints into 5",
                    n);
        CHECK_MPI(MPI_Wait(&send, MPI_STATUS_IGNORE));

        /* MPI_Waitall: MPI_ERR_IN_STATUS, the error in the receive's
         * status; the send's is MPI_SUCCESS if it completed, MPI_ERR_PENDING
         * if not (then it is still active: MPICH leaves it so). */
        MPI_Request reqs[2];
        MPI_Status statuses[2];
        check_preset_status(&statuses[0]);
        check_preset_status(&statuses[1]);
        CHECK_MPI(MPI_Irecv(in, 5, MPI_INT, left, 5, MPI_COMM_WORLD, &reqs[0]));
        CHECK_MPI(MPI_Isend(out, n, MPI_INT, right, 5, MPI_COMM_WORLD, &reqs[1]));
        int rc = MPI_Waitall(2, reqs, statuses);
        CHECK_ERROR(MPI_ERR_IN_STATUS, rc, "MPI_Waitall with a receive of %d ints into 5", n);
        CHECK_INT(MPI_ERR_IN_STATUS, rc, "MPI_Waitall returns the code MPI_ERR_IN_STATUS itself");
        CHECK_ERROR(MPI_ERR_TRUNCATE, statuses[0].MPI_ERROR, "MPI_Waitall: the truncated receive's MPI_ERROR");
        CHECK_INT(left, statuses[0].MPI_SOURCE, "MPI_Waitall truncated: status.MPI_SOURCE");
        CHECK_INT(MPI_REQUEST_NULL, reqs[0], "MPI_Waitall frees the request that failed");
        if (statuses[1].MPI_ERROR == MPI_ERR_PENDING) {
            CHECK(reqs[1] != MPI_REQUEST_NULL, "MPI_ERR_PENDING request still allocated");
            CHECK_MPI(MPI_Wait(&reqs[1], MPI_STATUS_IGNORE));
        } else {
            CHECK_INT(MPI_SUCCESS, statuses[1].MPI_ERROR, "MPI_Waitall: the send's MPI_ERROR");
            CHECK_INT(MPI_REQUEST_NULL, reqs[1], "MPI_Waitall frees the request that completed");
        }
        waitsome_truncated(out, n, in);
        free(out);
        free(in);
    }
}

static void collective_arguments(void)
{
    int in[2] = {rank, rank}, out[2] = {0, 0};
    CHECK_ERROR(MPI_ERR_OP, MPI_Allreduce(in, out, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD),
                "MPI_Allreduce with MPI_OP_NULL");
    CHECK_ERROR(MPI_ERR_OP, MPI_Reduce(in, out, 1, MPI_INT, MPI_OP_NULL, 0, MPI_COMM_WORLD),
                "MPI_Reduce with MPI_OP_NULL");
    double d[2] = {1.0, 2.0}, e[2];
    CHECK_ERROR(MPI_ERR_OP, MPI_Allreduce(d, e, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD),
                "MPI_Allreduce MPI_BAND on MPI_DOUBLE");
    CHECK_ERROR(MPI_ERR_ROOT, MPI_Bcast(in, 1, MPI_INT, size, MPI_COMM_WORLD), "MPI_Bcast from root size");
    CHECK_ERROR(MPI_ERR_ROOT, MPI_Reduce(in, out, 1, MPI_INT, MPI_SUM, -1, MPI_COMM_WORLD), "MPI_Reduce to root -1");
    CHECK_ERROR(MPI_ERR_COUNT, MPI_Bcast(in, -1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast of -1 elements");
    CHECK_ERROR(MPI_ERR_COMM, MPI_Barrier(MPI_COMM_NULL), "MPI_Barrier(MPI_COMM_NULL)");
    CHECK_ERROR(MPI_ERR_COMM, MPI_Barrier((MPI_Comm)0x12345), "MPI_Barrier on the communicator 0x12345");

    /* A gather whose send buffer is this rank's own block of the receive
     * buffer, which MPI_IN_PLACE is the way to name: MPI forbids aliased
     * arguments. Every rank of the call errs before any data moves. */
    int *table = malloc(2 * size * sizeof(int)), *counts = malloc(size * sizeof(int)),
        *displs = malloc(size * sizeof(int));
    for (int r = 0; r < size; r++) {
        counts[r] = 2;
        displs[r] = 2 * (size - 1 - r);
    }
    CHECK_ERROR(MPI_ERR_BUFFER, MPI_Allgather(table + 2 * rank, 2, MPI_INT, table, 2, MPI_INT, MPI_COMM_WORLD),
                "MPI_Allgather from this rank's block of recvbuf");
    CHECK_ERROR(MPI_ERR_BUFFER,
                MPI_Allgatherv(table + displs[rank], 2, MPI_INT, table, counts, displs, MPI_INT, MPI_COMM_WORLD),
                "MPI_Allgatherv from this rank's block of recvbuf");
    if (check_on_grappe()) /* MPICH 4.0.2 compares the addresses only. */
        CHECK_ERROR(MPI_ERR_BUFFER,
                    MPI_Allgatherv(table + displs[rank] + 1, 1, MPI_INT, table, counts, displs, MPI_INT,
                                   MPI_COMM_WORLD),
                    "MPI_Allgatherv from the second element of this rank's block of recvbuf");
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
    CHECK_ERROR(MPI_ERR_BUFFER, MPI_Gather(table, 2, MPI_INT, table, 2, MPI_INT, 0, MPI_COMM_SELF),
                "MPI_Gather on MPI_COMM_SELF with sendbuf = recvbuf");
    CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL));
    table[0] = rank;
    CHECK_MPI(MPI_Gather(table, 1, MPI_INT, table + 1, 1, MPI_INT, 0, MPI_COMM_SELF));
    CHECK_INT(rank, table[1], "MPI_Gather on MPI_COMM_SELF into the element after sendbuf");
    free(table);
    free(counts);
    free(displs);

    /* MPI_Reduce_local has no MPI_IN_PLACE form, and its buffers must not
     * overlap; buffers that only touch are fine. */
    int four[4] = {1, 2, 3, 4};
    CHECK_ERROR(MPI_ERR_BUFFER, MPI_Reduce_local(MPI_IN_PLACE, four, 2, MPI_INT, MPI_SUM),
                "MPI_Reduce_local from MPI_IN_PLACE");
    CHECK_ERROR(MPI_ERR_BUFFER, MPI_Reduce_local(four, MPI_IN_PLACE, 2, MPI_INT, MPI_SUM),
                "MPI_Reduce_local into MPI_IN_PLACE");
    CHECK_ERROR(MPI_ERR_BUFFER, MPI_Reduce_local(four, four, 2, MPI_INT, MPI_SUM),
                "MPI_Reduce_local of a buffer into itself");
    if (check_on_grappe()) /* MPICH 4.0.2 compares the addresses only. */
        CHECK_ERROR(MPI_ERR_BUFFER, MPI_Reduce_local(four, four + 1, 2, MPI_INT, MPI_SUM),
                    "MPI_Reduce_local of buffers that overlap by one int");
    CHECK_MPI(MPI_Reduce_local(four, four + 2, 2, MPI_INT, MPI_SUM));
    int expected_four[4] = {1, 2, 4, 6};
    CHECK_INTS(expected_four, four, 4, "MPI_Reduce_local of two halves of one array");

    /* A collective's send and receive buffers must not overlap either
     * (MPI_IN_PLACE is how the input comes from the output buffer): every
     * rank passes the same aliased buffers, so every rank fails before any
     * message leaves. */
    int many[64] = {0};
    CHECK_ERROR(MPI_ERR_BUFFER, MPI_Allreduce(many, many, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                "MPI_Allreduce of a buffer into itself");
    if (check_on_grappe()) { /* MPICH 4.0.2 compares the addresses only, and not in every call. */
        CHECK_ERROR(MPI_ERR_BUFFER, MPI_Allreduce(many, many + 1, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                    "MPI_Allreduce into a buffer overlapping the input by one int");
        CHECK_ERROR(MPI_ERR_BUFFER, MPI_Scan(many, many, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
                    "MPI_Scan of a buffer into itself");
        CHECK_ERROR(MPI_ERR_BUFFER, MPI_Allgather(many + size - 1, 1, MPI_INT, many, 1, MPI_INT, MPI_COMM_WORLD),
                    "MPI_Allgather from an int inside its receive buffer");
        CHECK_ERROR(MPI_ERR_BUFFER, MPI_Alltoall(many, 1, MPI_INT, many + size - 1, 1, MPI_INT, MPI_COMM_WORLD),
                    "MPI_Alltoall into a buffer whose first int is the send buffer's last");
        MPI_Request request = MPI_REQUEST_NULL;
        CHECK_ERROR(MPI_ERR_BUFFER, MPI_Iallreduce(many, many, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &request),
                    "MPI_Iallreduce of a buffer into itself");
        CHECK_INT(MPI_REQUEST_NULL, request, "no request from a refused MPI_Iallreduce");
    }
    /* Buffers that only touch are fine. */
    many[0] = rank + 1;
    many[1] = 2 * (rank + 1);
    CHECK_MPI(MPI_Allreduce(many, many + 2, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    int sum[2] = {size * (size + 1) / 2, size * (size + 1)};
    CHECK_INTS(sum, many + 2, 2, "MPI_Allreduce into the ints just after its input");
}

/* An info key that is not set, a NULL output of MPI_Comm_get_info, and
 * MPI_Comm_disconnect: of a null communicator an error, of a duplicate the
 * end of it (collective). */
static void info_and_disconnect(void)
{
    MPI_Info info;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_ERROR(MPI_ERR_INFO_NOKEY, MPI_Info_delete(info, "no-such-key"), "MPI_Info_delete of a key not set");
    CHECK_MPI(MPI_Info_free(&info));
    CHECK_ERROR(MPI_ERR_ARG, MPI_Comm_get_info(MPI_COMM_WORLD, NULL), "MPI_Comm_get_info into NULL");
    MPI_Comm null = MPI_COMM_NULL, dup = MPI_COMM_NULL;
    CHECK_ERROR(MPI_ERR_COMM, MPI_Comm_disconnect(&null), "MPI_Comm_disconnect(MPI_COMM_NULL)");
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int token = rank, got = -1;
    CHECK_MPI(MPI_Sendrecv(&token, 1, MPI_INT, right, 5, &got, 1, MPI_INT, left, 5, dup, MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Comm_disconnect(&dup));
    CHECK_INT(MPI_COMM_NULL, dup, "MPI_Comm_disconnect sets the handle to MPI_COMM_NULL");
    CHECK_INT(left, got, "a message on the communicator before MPI_Comm_disconnect");
}

/* Every error class: MPI_Error_class of a class is itself, strings are
 * not empty, classes are at most MPI_ERR_LASTCODE. */
static void classes(void)
{
    const int all[] = {
        MPI_SUCCESS, MPI_ERR_BUFFER, MPI_ERR_COUNT, MPI_ERR_TYPE, MPI_ERR_TAG, MPI_ERR_COMM, MPI_ERR_RANK,
        MPI_ERR_REQUEST, MPI_ERR_ROOT, MPI_ERR_GROUP, MPI_ERR_OP, MPI_ERR_TOPOLOGY, MPI_ERR_DIMS, MPI_ERR_ARG,
        MPI_ERR_UNKNOWN, MPI_ERR_TRUNCATE, MPI_ERR_OTHER, MPI_ERR_INTERN, MPI_ERR_IN_STATUS, MPI_ERR_PENDING,
        MPI_ERR_KEYVAL, MPI_ERR_NO_MEM, MPI_ERR_INFO, MPI_ERR_WIN, MPI_ERR_UNSUPPORTED_OPERATION,
    };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        int class_ = -1;
        CHECK_MPI(MPI_Error_class(all[i], &class_));
        CHECK_INT(all[i], class_, "MPI_Error_class of the class %d", all[i]);
        CHECK(all[i] <= MPI_ERR_LASTCODE, "error class %d is at most MPI_ERR_LASTCODE", all[i]);
        check_error_string(all[i], "an error class");
    }
}

/* Errors leave the job usable: a ring shift still works. */
static void added_errors(void)
{
    int before = 0, *last = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag);
    CHECK(flag && last != NULL, "MPI_LASTUSEDCODE is set");
    if (last)
        before = *last;
    int mine = -1, code = -1, other = -1, got = -1, len = 0;
    CHECK_MPI(MPI_Add_error_class(&mine));
    CHECK(mine > MPI_ERR_LASTCODE || mine > before, "a new class (%d) after the predefined ones", mine);
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag);
    CHECK(flag && *last >= mine, "MPI_LASTUSEDCODE (%d) covers the new class %d", *last, mine);
    CHECK_MPI(MPI_Add_error_code(mine, &code));
    CHECK_MPI(MPI_Add_error_code(MPI_ERR_OTHER, &other));
    CHECK_MPI(MPI_Error_class(code, &got));
    CHECK_INT(mine, got, "the class of a code of the program's class");
    CHECK_MPI(MPI_Error_class(other, &got));
    CHECK_INT(MPI_ERR_OTHER, got, "the class of a code of MPI_ERR_OTHER");
    CHECK_MPI(MPI_Add_error_string(mine, "the solver diverged"));
    CHECK_MPI(MPI_Add_error_string(code, "the solver diverged at step 7"));
    char text[MPI_MAX_ERROR_STRING];
    CHECK_MPI(MPI_Error_string(mine, text, &len));
    CHECK(strcmp(text, "the solver diverged") == 0 && len == (int)strlen(text), "the class's string: \"%s\"", text);
    CHECK_MPI(MPI_Error_string(code, text, &len));
    CHECK(strcmp(text, "the solver diverged at step 7") == 0, "the code's string: \"%s\"", text);
}

static void still_works(void)
{
    int out = rank * 3, in = -1;
    CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, right, 9, &in, 1, MPI_INT, left, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_INT(left * 3, in, "a ring shift after the errors");
    int sum = -1;
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK_INT(size * (size - 1) / 2, sum, "MPI_Allreduce after the errors");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("errors");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;

    errhandlers();
    point_to_point_arguments();
    truncation();
    collective_arguments();
    info_and_disconnect();
    classes();
    added_errors();
    still_works();
    return check_finish();
}

/* Generalized requests: MPI_Grequest_start and MPI_Grequest_complete, with
 * MPI_Test before and after completion, MPI_Wait (the query function fills
 * the status: MPI_Status_set_elements, MPI_Status_set_cancelled, source and
 * tag), MPI_Request_get_status (queries without freeing), MPI_Request_free
 * before completion (the free function runs once, at the latest at
 * MPI_Grequest_complete),
 * MPI_Cancel (the cancel function learns whether it completed), MPI_Waitall
 * and MPI_Waitany mixed with point-to-point requests, and a query function
 * whose error code MPI_Wait returns. Runs on any number of ranks. */
#include "check.h"

struct op {
    int id;
    int queries, frees, cancels, cancel_complete;
    int query_error;
};

static int query(void *extra, MPI_Status *status)
{
    struct op *op = extra;
    op->queries++;
    MPI_Status_set_elements(status, MPI_INT, 5 + op->id);
    MPI_Status_set_cancelled(status, 0);
    status->MPI_SOURCE = MPI_UNDEFINED;
    status->MPI_TAG = MPI_UNDEFINED;
    return op->query_error;
}

static int release(void *extra)
{
    ((struct op *)extra)->frees++;
    return MPI_SUCCESS;
}

static int cancel(void *extra, int complete)
{
    struct op *op = extra;
    op->cancels++;
    op->cancel_complete = complete;
    return MPI_SUCCESS;
}

static void wait_and_test(void)
{
    struct op op = {0};
    MPI_Request req;
    CHECK_MPI(MPI_Grequest_start(query, release, cancel, &op, &req));
    int flag = -1;
    MPI_Status status;
    CHECK_MPI(MPI_Test(&req, &flag, &status));
    CHECK_INT(0, flag, "MPI_Test before MPI_Grequest_complete");
    CHECK(req != MPI_REQUEST_NULL, "the request stays until it completes");
    CHECK_MPI(MPI_Grequest_complete(req));
    CHECK_MPI(MPI_Request_get_status(req, &flag, &status));
    CHECK_INT(1, flag, "MPI_Request_get_status after completion");
    CHECK_INT(1, op.queries, "MPI_Request_get_status calls the query function");
    CHECK_INT(0, op.frees, "MPI_Request_get_status does not free");
    check_preset_status(&status);
    CHECK_MPI(MPI_Wait(&req, &status));
    CHECK(req == MPI_REQUEST_NULL, "MPI_Wait frees the request");
    CHECK_INT(2, op.queries, "MPI_Wait calls the query function");
    CHECK_INT(1, op.frees, "MPI_Wait calls the free function once");
    int count = -1;
    MPI_Get_count(&status, MPI_INT, &count);
    CHECK_INT(5, count, "the count the query function set");
    CHECK_INT(MPI_UNDEFINED, status.MPI_SOURCE, "the source the query function set");
    int cancelled = -1;
    MPI_Test_cancelled(&status, &cancelled);
    CHECK_INT(0, cancelled, "MPI_Test_cancelled");

    /* MPI_Test completes it once it is complete. */
    struct op second = {.id = 1};
    CHECK_MPI(MPI_Grequest_start(query, release, cancel, &second, &req));
    CHECK_MPI(MPI_Grequest_complete(req));
    CHECK_MPI(MPI_Test(&req, &flag, &status));
    CHECK_INT(1, flag, "MPI_Test after MPI_Grequest_complete");
    CHECK(req == MPI_REQUEST_NULL, "MPI_Test frees the request");
    MPI_Get_count(&status, MPI_INT, &count);
    CHECK_INT(6, count, "the count from MPI_Test's status");
    CHECK_INT(1, second.frees, "MPI_Test calls the free function");
}

static void free_and_cancel(void)
{
    struct op op = {0};
    MPI_Request req, kept;
    CHECK_MPI(MPI_Grequest_start(query, release, cancel, &op, &req));
    kept = req;
    CHECK_MPI(MPI_Cancel(&req));
    CHECK_INT(1, op.cancels, "MPI_Cancel calls the cancel function");
    CHECK_INT(0, op.cancel_complete, "the cancel function learns it had not completed");
    CHECK_MPI(MPI_Request_free(&req));
    CHECK(req == MPI_REQUEST_NULL, "MPI_Request_free sets the handle to MPI_REQUEST_NULL");
    /* MPI: the free function runs at whichever of MPI_Request_free and
     * MPI_Grequest_complete comes last (grappe); MPICH 4.0.2 runs it at once. */
    CHECK(op.frees <= 1, "the free function ran %d times at MPI_Request_free", op.frees);
    CHECK_MPI(MPI_Grequest_complete(kept));
    CHECK_INT(1, op.frees, "the free function runs when it completes");
    CHECK_INT(0, op.queries, "a freed request is never queried");
}

static void mixed(void)
{
    int rank = 0; /* in MPI_COMM_SELF */
    struct op op = {.id = 2};
    MPI_Request reqs[3];
    int out = 7, in = -1;
    CHECK_MPI(MPI_Irecv(&in, 1, MPI_INT, rank, 4, MPI_COMM_SELF, &reqs[0]));
    CHECK_MPI(MPI_Grequest_start(query, release, cancel, &op, &reqs[1]));
    CHECK_MPI(MPI_Isend(&out, 1, MPI_INT, rank, 4, MPI_COMM_SELF, &reqs[2]));
    CHECK_MPI(MPI_Grequest_complete(reqs[1]));
    MPI_Status statuses[3];
    CHECK_MPI(MPI_Waitall(3, reqs, statuses));
    CHECK_INT(7, in, "the receive beside a generalized request");
    int count = -1;
    MPI_Get_count(&statuses[1], MPI_INT, &count);
    CHECK_INT(7, count, "the generalized request's status in MPI_Waitall");
    CHECK_INT(1, op.frees, "MPI_Waitall frees it");

    struct op any = {.id = 3};
    CHECK_MPI(MPI_Grequest_start(query, release, cancel, &any, &reqs[0]));
    CHECK_MPI(MPI_Grequest_complete(reqs[0]));
    int index = -1;
    MPI_Status status;
    CHECK_MPI(MPI_Waitany(1, reqs, &index, &status));
    CHECK_INT(0, index, "MPI_Waitany's index");
    MPI_Get_count(&status, MPI_INT, &count);
    CHECK_INT(8, count, "MPI_Waitany's status");
}

static void failing_query(void)
{
    struct op op = {.query_error = MPI_ERR_OTHER};
    MPI_Request req;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK_MPI(MPI_Grequest_start(query, release, cancel, &op, &req));
    CHECK_MPI(MPI_Grequest_complete(req));
    int rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK_CLASS(MPI_ERR_OTHER, rc, "MPI_Wait returns the query function's error");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("grequest");
    wait_and_test();
    free_and_cancel();
    mixed();
    failing_query();
    return check_finish();
}

/* A wait for a generalized request nothing will complete: below
 * MPI_THREAD_MULTIPLE no other call can run during the wait to call
 * MPI_Grequest_complete, so grappe's MPI_Wait fails at once, naming the
 * problem (MPI_ERRORS_RETURN here), instead of waiting forever. Prints
 * "returned: <message>" and exits 0 if it returned; run on grappe only
 * (MPICH waits forever). */
#include <mpi.h>
#include <stdio.h>

static int query(void *extra, MPI_Status *status)
{
    (void)extra;
    MPI_Status_set_elements(status, MPI_BYTE, 0);
    return MPI_SUCCESS;
}

static int release(void *extra)
{
    (void)extra;
    return MPI_SUCCESS;
}

static int cancel(void *extra, int complete)
{
    (void)extra, (void)complete;
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Request req;
    MPI_Grequest_start(query, release, cancel, NULL, &req);
    int rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, text, &len);
    printf("returned: %s\n", rc == MPI_SUCCESS ? "success" : text);
    /* Completed now, the request goes as usual. */
    MPI_Grequest_complete(req);
    rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
    printf("after completion: %s, request %s\n", rc == MPI_SUCCESS ? "success" : "error",
           req == MPI_REQUEST_NULL ? "freed" : "kept");
    MPI_Finalize();
    return 0;
}

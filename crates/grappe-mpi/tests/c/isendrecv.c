/* MPI 4's MPI_Isendrecv and MPI_Isendrecv_replace. Runs on any number of
 * ranks. MPICH 4.0.2's own implementation fails it: its requests complete
 * with an empty status (source 0, tag 0), and freeing the derived send
 * type afterwards trips its reference count assertion. */
#include "check.h"

static int rank, size, left, right;

/* MPI_Isendrecv around the ring (eager and past the eager limit, a
 * strided send type), the send buffer overwritten as soon as the request
 * completes; MPI_Isendrecv_replace, completed by MPI_Test. */
static void isendrecv(void)
{
    const int counts[] = {1, 1000, 100000};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int n = counts[c];
        int *out = malloc(sizeof(int) * 2 * n), *in = malloc(sizeof(int) * (n + 1));
        for (int k = 0; k < n; k++)
            out[2 * k] = rank * 1000003 + k, out[2 * k + 1] = -5;
        for (int k = 0; k <= n; k++)
            in[k] = -1;
        MPI_Datatype every_other;
        CHECK_MPI(MPI_Type_vector(n, 1, 2, MPI_INT, &every_other));
        CHECK_MPI(MPI_Type_commit(&every_other));
        MPI_Request request;
        MPI_Status status;
        check_preset_status(&status);
        CHECK_MPI(MPI_Isendrecv(out, 1, every_other, right, 40, in, n, MPI_INT, left, 40, MPI_COMM_WORLD, &request));
        CHECK_MPI(MPI_Wait(&request, &status));
        for (int k = 0; k < 2 * n; k++)
            out[k] = -9; /* the send buffer is the program's again */
        CHECK_STATUS(&status, left, 40, MPI_INT, n, "MPI_Isendrecv");
        int wrong = 0;
        for (int k = 0; k < n; k++)
            wrong += in[k] != left * 1000003 + k;
        CHECK_INT(0, wrong, "MPI_Isendrecv of %d ints: elements not as sent", n);
        CHECK_INT(-1, in[n], "MPI_Isendrecv of %d ints: the element after is untouched", n);
        CHECK_MPI(MPI_Type_free(&every_other));

        for (int k = 0; k < n; k++)
            in[k] = rank * 7 + k;
        CHECK_MPI(MPI_Isendrecv_replace(in, n, MPI_INT, right, 41, left, 41, MPI_COMM_WORLD, &request));
        int done = 0;
        while (!done)
            CHECK_MPI(MPI_Test(&request, &done, &status));
        CHECK_STATUS(&status, left, 41, MPI_INT, n, "MPI_Isendrecv_replace");
        wrong = 0;
        for (int k = 0; k < n; k++)
            wrong += in[k] != left * 7 + k;
        CHECK_INT(0, wrong, "MPI_Isendrecv_replace of %d ints: elements not as sent", n);
        free(out);
        free(in);
    }
    /* To and from MPI_PROC_NULL: completes at once, empty status. */
    int x = 3;
    MPI_Request request;
    MPI_Status status;
    CHECK_MPI(MPI_Isendrecv_replace(&x, 1, MPI_INT, MPI_PROC_NULL, 1, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &request));
    CHECK_MPI(MPI_Wait(&request, &status));
    CHECK_INT(MPI_PROC_NULL, status.MPI_SOURCE, "MPI_Isendrecv_replace from MPI_PROC_NULL: source");
    CHECK_INT(3, x, "MPI_Isendrecv_replace from MPI_PROC_NULL leaves the buffer");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("isendrecv");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    isendrecv();
    return check_finish();
}

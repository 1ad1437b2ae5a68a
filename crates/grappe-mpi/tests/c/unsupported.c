/* A function grappe's library does not implement fails with
 * MPI_ERR_UNSUPPORTED_OPERATION (under MPI_ERRORS_RETURN), and its error
 * string names the function; with the default handler the job ends. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char port[MPI_MAX_PORT_NAME];
    int code = MPI_Open_port(MPI_INFO_NULL, port);
    int class = -1, len = 0;
    char text[MPI_MAX_ERROR_STRING] = "";
    MPI_Error_class(code, &class);
    MPI_Error_string(code, text, &len);
    int ok = class == MPI_ERR_UNSUPPORTED_OPERATION && strstr(text, "MPI_Open_port") != NULL;
    printf("unsupported: class %d, \"%s\": %s\n", class, text, ok ? "as expected" : "WRONG");
    fflush(stdout);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    if (ok && argc > 1) {
        MPI_Open_port(MPI_INFO_NULL, port); /* ends the job */
    }
    MPI_Finalize();
    return ok ? 0 : 1;
}

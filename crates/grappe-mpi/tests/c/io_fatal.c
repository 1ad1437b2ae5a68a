/* A file error under MPI_ERRORS_ARE_FATAL ends the job, naming the call
 * and the file:
 *   io_fatal open PATH   MPI_FILE_NULL's handler made fatal, then
 *                        MPI_File_open of the missing file PATH;
 *   io_fatal write PATH  PATH created, opened MPI_MODE_RDONLY with a fatal
 *                        handler on the file, then written.
 * A program that survives prints "survived" and exits 1. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 3) {
        fprintf(stderr, "usage: io_fatal open|write PATH\n");
        MPI_Finalize();
        return 2;
    }
    MPI_File fh;
    const char *path = argv[2];
    if (strcmp(argv[1], "open") == 0) {
        MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_ARE_FATAL);
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    } else {
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
        MPI_File_close(&fh);
        MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
        MPI_File_set_errhandler(fh, MPI_ERRORS_ARE_FATAL);
        int value = 1;
        MPI_File_write_at(fh, 0, &value, 1, MPI_INT, MPI_STATUS_IGNORE);
    }
    printf("survived\n");
    MPI_Finalize();
    return 1;
}

/* Parallel HDF5 through MPI-IO: every rank writes its rows of 2-D datasets
 * (contiguous and chunked, collective and independent transfers), a
 * column-cyclic hyperslab, attributes and a compound dataset, then reads
 * everything back (a different decomposition from the one written) and
 * checks every value. Prints "phdf5: all checks passed on N ranks". */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS_PER_RANK 6
#define COLS 10
static int rank, size, failures;

#define CHECK(cond, ...)                                             \
    do {                                                             \
        if (!(cond)) {                                               \
            failures++;                                              \
            printf("FAIL rank %d line %d: ", rank, __LINE__);        \
            printf(__VA_ARGS__);                                     \
            printf("\n");                                            \
            fflush(stdout);                                          \
        }                                                            \
    } while (0)
#define H5OK(call) CHECK((call) >= 0, "%s failed", #call)

static double value(int row, int col, int which) { return which * 100000.0 + row * 100.0 + col; }

typedef struct {
    int id;
    double x;
    char tag[8];
} particle;

static hid_t xfer(int collective)
{
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5OK(H5Pset_dxpl_mpio(dxpl, collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT));
    return dxpl;
}

/* Each rank writes rows [rank*R, rank*R+R) of dataset `name`. */
static void write_rows(hid_t file, const char *name, int chunked, int collective, int which)
{
    hsize_t dims[2] = {(hsize_t)size * ROWS_PER_RANK, COLS};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (chunked) {
        hsize_t chunk[2] = {4, 3}; /* chunks cross rank boundaries */
        H5OK(H5Pset_chunk(dcpl, 2, chunk));
    }
    hid_t dset = H5Dcreate2(file, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    CHECK(dset >= 0, "create %s", name);
    hsize_t start[2] = {(hsize_t)rank * ROWS_PER_RANK, 0}, count[2] = {ROWS_PER_RANK, COLS};
    H5OK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL));
    hid_t mem = H5Screate_simple(2, count, NULL);
    double buf[ROWS_PER_RANK][COLS];
    for (int r = 0; r < ROWS_PER_RANK; r++)
        for (int c = 0; c < COLS; c++) buf[r][c] = value(rank * ROWS_PER_RANK + r, c, which);
    hid_t dxpl = xfer(collective);
    H5OK(H5Dwrite(dset, H5T_NATIVE_DOUBLE, mem, space, dxpl, buf));
    /* An attribute on the dataset (written by every rank, same value). */
    hid_t aspace = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(dset, "which", H5T_NATIVE_INT, aspace, H5P_DEFAULT, H5P_DEFAULT);
    H5OK(H5Awrite(attr, H5T_NATIVE_INT, &which));
    H5Aclose(attr);
    H5Sclose(aspace);
    H5Pclose(dxpl);
    H5Sclose(mem);
    H5Sclose(space);
    H5Pclose(dcpl);
    H5Dclose(dset);
}

/* Each rank writes the columns c with c % size == rank, every row: pieces
 * of 8 bytes interleaved between the ranks in the file. */
static void write_columns(hid_t file, const char *name, int collective, int which)
{
    hsize_t dims[2] = {(hsize_t)size * ROWS_PER_RANK, COLS};
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dset = H5Dcreate2(file, name, H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    CHECK(dset >= 0, "create %s", name);
    int ncols = 0;
    for (int c = rank; c < COLS; c += size) ncols++;
    hsize_t mdims[2] = {dims[0], (hsize_t)(ncols ? ncols : 1)};
    hid_t mem = H5Screate_simple(2, mdims, NULL);
    double *buf = calloc(dims[0] * mdims[1], sizeof(double));
    if (ncols) {
        hsize_t start[2] = {0, (hsize_t)rank}, stride[2] = {1, (hsize_t)size}, count[2] = {dims[0], (hsize_t)ncols};
        H5OK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, stride, count, NULL));
        for (hsize_t r = 0; r < dims[0]; r++)
            for (int k = 0; k < ncols; k++) buf[r * ncols + k] = value((int)r, rank + k * size, which);
    } else {
        H5Sselect_none(space);
        H5Sselect_none(mem);
    }
    hid_t dxpl = xfer(collective);
    H5OK(H5Dwrite(dset, H5T_NATIVE_DOUBLE, mem, space, dxpl, buf));
    hid_t aspace = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(dset, "which", H5T_NATIVE_INT, aspace, H5P_DEFAULT, H5P_DEFAULT);
    H5OK(H5Awrite(attr, H5T_NATIVE_INT, &which));
    H5Aclose(attr);
    H5Sclose(aspace);
    free(buf);
    H5Pclose(dxpl);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(dset);
}

/* Reads the rows of this rank's block, every column. */
static void check_rows(hid_t file, const char *name, int collective, int which)
{
    hid_t dset = H5Dopen2(file, name, H5P_DEFAULT);
    CHECK(dset >= 0, "open %s", name);
    hid_t space = H5Dget_space(dset);
    hsize_t start[2] = {(hsize_t)rank * ROWS_PER_RANK, 0}, count[2] = {ROWS_PER_RANK, COLS};
    H5OK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL));
    hid_t mem = H5Screate_simple(2, count, NULL);
    double buf[ROWS_PER_RANK][COLS];
    hid_t dxpl = xfer(collective);
    H5OK(H5Dread(dset, H5T_NATIVE_DOUBLE, mem, space, dxpl, buf));
    for (int r = 0; r < ROWS_PER_RANK; r++)
        for (int c = 0; c < COLS; c++) {
            double want = value(rank * ROWS_PER_RANK + r, c, which);
            CHECK(buf[r][c] == want, "%s[%d][%d] = %g, want %g", name, rank * ROWS_PER_RANK + r, c, buf[r][c], want);
        }
    H5Pclose(dxpl);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(dset);
}

/* Reads the columns c with c % size == rank (a strided selection), all rows. */
static void check_columns(hid_t file, const char *name, int collective, int which)
{
    hid_t dset = H5Dopen2(file, name, H5P_DEFAULT);
    CHECK(dset >= 0, "open %s", name);
    hid_t space = H5Dget_space(dset);
    hsize_t dims[2];
    H5Sget_simple_extent_dims(space, dims, NULL);
    CHECK(dims[0] == (hsize_t)size * ROWS_PER_RANK && dims[1] == COLS, "%s dims %llu x %llu", name,
          (unsigned long long)dims[0], (unsigned long long)dims[1]);
    int ncols = 0;
    for (int c = rank; c < COLS; c += size) ncols++;
    hid_t mem;
    hsize_t mdims[2] = {dims[0], (hsize_t)(ncols ? ncols : 1)};
    mem = H5Screate_simple(2, mdims, NULL);
    if (ncols) {
        hsize_t start[2] = {0, (hsize_t)rank}, stride[2] = {1, (hsize_t)size}, count[2] = {dims[0], (hsize_t)ncols};
        H5OK(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, stride, count, NULL));
    } else {
        H5Sselect_none(space);
        H5Sselect_none(mem);
    }
    double *buf = calloc(dims[0] * mdims[1], sizeof(double));
    hid_t dxpl = xfer(collective);
    H5OK(H5Dread(dset, H5T_NATIVE_DOUBLE, mem, space, dxpl, buf));
    for (hsize_t r = 0; r < dims[0]; r++)
        for (int k = 0; k < ncols; k++) {
            int c = rank + k * size;
            double want = value((int)r, c, which);
            CHECK(buf[r * ncols + k] == want, "%s[%llu][%d] = %g, want %g", name, (unsigned long long)r, c,
                  buf[r * ncols + k], want);
        }
    int got = -1;
    hid_t attr = H5Aopen(dset, "which", H5P_DEFAULT);
    H5OK(H5Aread(attr, H5T_NATIVE_INT, &got));
    CHECK(got == which, "%s attribute which = %d, want %d", name, got, which);
    H5Aclose(attr);
    free(buf);
    H5Pclose(dxpl);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(dset);
}

/* A compressed (deflate), extendible chunked dataset: created with one
 * rank's rows, extended to every rank's, written collectively (HDF5 writes
 * filtered chunks only collectively: it gathers each chunk's pieces to an
 * owner, compresses, and sets the chunk addresses on every rank). */
static void compressed(hid_t file)
{
    hsize_t dims[2] = {ROWS_PER_RANK, COLS}, maxdims[2] = {H5S_UNLIMITED, COLS}, chunk[2] = {4, 5};
    hid_t space = H5Screate_simple(2, dims, maxdims);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5OK(H5Pset_chunk(dcpl, 2, chunk));
    H5OK(H5Pset_deflate(dcpl, 6));
    hid_t dset = H5Dcreate2(file, "compressed", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    CHECK(dset >= 0, "create compressed");
    hsize_t all[2] = {(hsize_t)size * ROWS_PER_RANK, COLS};
    H5OK(H5Dset_extent(dset, all));
    hid_t fspace = H5Dget_space(dset);
    hsize_t start[2] = {(hsize_t)rank * ROWS_PER_RANK, 0}, count[2] = {ROWS_PER_RANK, COLS};
    H5OK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, NULL, count, NULL));
    hid_t mem = H5Screate_simple(2, count, NULL);
    double buf[ROWS_PER_RANK][COLS];
    for (int r = 0; r < ROWS_PER_RANK; r++)
        for (int c = 0; c < COLS; c++) buf[r][c] = value(rank * ROWS_PER_RANK + r, c, 5);
    hid_t dxpl = xfer(1);
    H5OK(H5Dwrite(dset, H5T_NATIVE_DOUBLE, mem, fspace, dxpl, buf));
    hid_t aspace = H5Screate(H5S_SCALAR);
    int which = 5;
    hid_t attr = H5Acreate2(dset, "which", H5T_NATIVE_INT, aspace, H5P_DEFAULT, H5P_DEFAULT);
    H5OK(H5Awrite(attr, H5T_NATIVE_INT, &which));
    H5Aclose(attr);
    H5Sclose(aspace);
    H5Pclose(dxpl);
    H5Sclose(mem);
    H5Sclose(fspace);
    H5Sclose(space);
    H5Pclose(dcpl);
    H5Dclose(dset);
}

/* A 1-D compound dataset, each rank one element, written collectively. */
static hid_t particle_type(void)
{
    hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(particle));
    hid_t str = H5Tcopy(H5T_C_S1);
    H5Tset_size(str, 8);
    H5Tinsert(t, "id", HOFFSET(particle, id), H5T_NATIVE_INT);
    H5Tinsert(t, "x", HOFFSET(particle, x), H5T_NATIVE_DOUBLE);
    H5Tinsert(t, "tag", HOFFSET(particle, tag), str);
    H5Tclose(str);
    return t;
}

static void particles(hid_t file, int write)
{
    hid_t t = particle_type();
    hsize_t n = (hsize_t)size, one = 1, start = (hsize_t)rank;
    hid_t dset;
    if (write) {
        hid_t space = H5Screate_simple(1, &n, NULL);
        dset = H5Dcreate2(file, "particles", t, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Sclose(space);
    } else {
        dset = H5Dopen2(file, "particles", H5P_DEFAULT);
    }
    hid_t space = H5Dget_space(dset);
    H5OK(H5Sselect_hyperslab(space, H5S_SELECT_SET, &start, NULL, &one, NULL));
    hid_t mem = H5Screate_simple(1, &one, NULL);
    hid_t dxpl = xfer(1);
    particle p;
    if (write) {
        memset(&p, 0, sizeof p);
        p.id = rank * 7;
        p.x = rank + 0.25;
        snprintf(p.tag, sizeof p.tag, "r%d", rank);
        H5OK(H5Dwrite(dset, t, mem, space, dxpl, &p));
    } else {
        memset(&p, 0xff, sizeof p);
        H5OK(H5Dread(dset, t, mem, space, dxpl, &p));
        char want[8];
        snprintf(want, sizeof want, "r%d", rank);
        CHECK(p.id == rank * 7 && p.x == rank + 0.25 && strcmp(p.tag, want) == 0, "particle %d: %d %g %s", rank,
              p.id, p.x, p.tag);
    }
    H5Pclose(dxpl);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(dset);
    H5Tclose(t);
}

static hid_t open_file(const char *path, int create)
{
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "romio_cb_write", "enable");
    H5OK(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, info));
    H5OK(H5Pset_all_coll_metadata_ops(fapl, 1));
    H5OK(H5Pset_coll_metadata_write(fapl, 1));
    hid_t file = create ? H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl) : H5Fopen(path, H5F_ACC_RDONLY, fapl);
    CHECK(file >= 0, "%s %s", create ? "create" : "open", path);
    MPI_Info_free(&info);
    H5Pclose(fapl);
    return file;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *path = argc > 1 ? argv[1] : "phdf5.h5";

    hid_t file = open_file(path, 1);
    hid_t group = H5Gcreate2(file, "/grid", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    write_rows(group, "contiguous_collective", 0, 1, 1);
    write_rows(group, "contiguous_independent", 0, 0, 2);
    write_rows(group, "chunked_collective", 1, 1, 3);
    write_rows(group, "chunked_independent", 1, 0, 4);
    particles(file, 1);
    compressed(group);
    write_columns(group, "columns_collective", 1, 6);
    write_columns(group, "columns_independent", 0, 7);
    /* A file attribute: the number of ranks that wrote. */
    hid_t aspace = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(file, "ranks", H5T_NATIVE_INT, aspace, H5P_DEFAULT, H5P_DEFAULT);
    H5OK(H5Awrite(attr, H5T_NATIVE_INT, &size));
    H5Aclose(attr);
    H5Sclose(aspace);
    H5Gclose(group);
    H5OK(H5Fclose(file));

    file = open_file(path, 0);
    group = H5Gopen2(file, "/grid", H5P_DEFAULT);
    check_columns(group, "contiguous_collective", 0, 1);
    check_columns(group, "contiguous_independent", 1, 2);
    check_columns(group, "chunked_collective", 0, 3);
    check_columns(group, "chunked_independent", 1, 4);
    particles(file, 0);
    check_columns(group, "compressed", 1, 5);
    check_rows(group, "columns_collective", 1, 6);
    check_rows(group, "columns_independent", 0, 7);
    check_rows(group, "chunked_collective", 1, 3);
    int ranks = 0;
    attr = H5Aopen(file, "ranks", H5P_DEFAULT);
    H5OK(H5Aread(attr, H5T_NATIVE_INT, &ranks));
    CHECK(ranks == size, "file attribute ranks = %d", ranks);
    H5Aclose(attr);
    H5Gclose(group);
    H5OK(H5Fclose(file));

    int total;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        if (total == 0)
            printf("phdf5: all checks passed on %d ranks\n", size);
        else
            printf("phdf5: %d checks FAILED on %d ranks\n", total, size);
    }
    MPI_Finalize();
    return total != 0;
}

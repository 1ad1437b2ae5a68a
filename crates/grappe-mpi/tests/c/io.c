/* MPI-IO: files opened on MPI_COMM_WORLD and MPI_COMM_SELF in the
 * current directory, checked by every rank.
 *
 *  - management: access modes, size (set, preallocate, get), group, hints,
 *    atomicity, sync, MPI_MODE_DELETE_ON_CLOSE, MPI_MODE_APPEND,
 *    MPI_MODE_SEQUENTIAL, the ufs: prefix, MPI_File_delete, c2f/f2c;
 *  - explicit offsets: write_at_all of each rank's block, then every rank
 *    reads every block (read_at, read_at_all, iread_at); a read past the
 *    end counts what it read;
 *  - views: a vector filetype where the ranks' blocks of 2 ints interleave,
 *    written with write_all from a strided memory datatype, read back
 *    through a view of plain ints by every rank; get_view, get_byte_offset,
 *    get_type_extent;
 *  - external32 views: ints and doubles big-endian in the file, read back
 *    as written, their external32 extents;
 *  - filetype type maps: negative, decreasing and overlapping displacements
 *    are refused (MPI_ERR_IO, ROMIO's class) in a view of a file opened for
 *    writing; a file opened MPI_MODE_RDONLY takes overlapping ones (MPI 3.1,
 *    13.3), and reads through them give the overlapped data again, in
 *    atomic mode too;
 *  - individual pointers: seek (SET, CUR, END), get_position, read and write
 *    moving it, split collectives;
 *  - the shared pointer: write_shared (each rank's record exactly once),
 *    get_position_shared, seek_shared, write_ordered / read_ordered in rank
 *    order, their split forms, iwrite_shared;
 *  - status counts (MPI_Get_count) after every kind of access, and
 *    completed requests from the non-blocking ones;
 *  - errors, returned (a file's default handler is MPI_ERRORS_RETURN, as
 *    is MPI_FILE_NULL's): bad access modes, a missing file, a file that
 *    exists under MPI_MODE_EXCL, writing a read-only file, reading a
 *    write-only one, MPI_FILE_NULL and (on grappe, where it cannot crash)
 *    garbage and closed handles, negative offsets, a bad whence, data
 *    representations MPI does not define, different access modes and sizes
 *    on different ranks, a split collective ended that was not begun;
 *    error handlers on files (created, set, called with the file's handle,
 *    inherited from MPI_FILE_NULL by files opened next);
 *  - under MPI_THREAD_MULTIPLE (GRAPPE_MPI_THREAD_LEVEL=multiple): threads
 *    of every rank writing at explicit offsets and at the shared pointer at
 *    once.
 *
 * It passes on MPICH 4.0.2's own library too (but for the checks marked
 * grappe-only: garbage handles crash MPICH, and its messages do not name
 * the path). */
#include "check.h"

#include <pthread.h>
#include <unistd.h>

static int rank, size, on_grappe;
static char name[256];

#define CHECK_ERR(expected_class, rc, ...) CHECK_CLASS(expected_class, (rc), __VA_ARGS__)

/* The error string of `code` contains `what` (on grappe, whose messages
 * name what was wrong). */
static void check_message(int code, const char *what, const char *call)
{
    if (!on_grappe)
        return;
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(code, text, &len);
    CHECK(strstr(text, what) != NULL, "%s's error string names %s: \"%s\"", call, what, text);
}

/* A file name of this test, the same on every rank: `tag` and rank 0's pid. */
static void file_name(char *out, size_t n, const char *tag)
{
    int pid = (int)getpid();
    MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
    snprintf(out, n, "io-%s-%d.dat", tag, pid);
}

static int exists(const char *path)
{
    return access(path, F_OK) == 0;
}

static void check_count(MPI_Status *status, MPI_Datatype type, int expected, const char *what)
{
    int count = -1;
    MPI_Get_count(status, type, &count);
    CHECK_INT(expected, count, "%s: MPI_Get_count", what);
}

static void management(void)
{
    MPI_File fh = MPI_FILE_NULL;
    int amode = MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE;
    file_name(name, sizeof name, "manage");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, name, amode, MPI_INFO_NULL, &fh));
    CHECK(fh != MPI_FILE_NULL, "MPI_File_open gives a handle");
    CHECK(exists(name), "the file exists once opened with MPI_MODE_CREATE");

    int got = -1;
    CHECK_MPI(MPI_File_get_amode(fh, &got));
    CHECK_INT(amode, got, "MPI_File_get_amode");

    MPI_Group group, world;
    int compared = -1;
    CHECK_MPI(MPI_File_get_group(fh, &group));
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_compare(group, world, &compared);
    CHECK_INT(MPI_IDENT, compared, "MPI_File_get_group is the group of the communicator");
    MPI_Group_free(&group);
    MPI_Group_free(&world);

    MPI_Offset bytes = -1;
    CHECK_MPI(MPI_File_get_size(fh, &bytes));
    CHECK_INT(0, bytes, "a new file's size");
    CHECK_MPI(MPI_File_set_size(fh, 1000));
    CHECK_MPI(MPI_File_get_size(fh, &bytes));
    CHECK_INT(1000, bytes, "MPI_File_set_size extends");
    CHECK_MPI(MPI_File_set_size(fh, 10));
    CHECK_MPI(MPI_File_get_size(fh, &bytes));
    CHECK_INT(10, bytes, "MPI_File_set_size truncates");
    CHECK_MPI(MPI_File_preallocate(fh, 4096));
    CHECK_MPI(MPI_File_get_size(fh, &bytes));
    CHECK_INT(4096, bytes, "MPI_File_preallocate extends");
    CHECK_MPI(MPI_File_preallocate(fh, 100));
    CHECK_MPI(MPI_File_get_size(fh, &bytes));
    CHECK_INT(4096, bytes, "MPI_File_preallocate never truncates");
    CHECK_ERR(MPI_ERR_ARG, MPI_File_set_size(fh, -5), "MPI_File_set_size of a negative size");
    if (size > 1 && on_grappe) {
        /* MPICH reports it on the ranks whose size differs from rank 0's only. */
        int rc = MPI_File_set_size(fh, 100 + rank);
        CHECK_ERR(MPI_ERR_ARG, rc, "MPI_File_set_size with a different size on each rank");
        check_message(rc, "different sizes", "MPI_File_set_size");
    }

    MPI_Info info, used;
    char value[64] = "";
    int flag = 0;
    MPI_Info_create(&info);
    MPI_Info_set(info, "access_style", "read_mostly");
    CHECK_MPI(MPI_File_set_info(fh, info));
    MPI_Info_free(&info);
    CHECK_MPI(MPI_File_get_info(fh, &used));
    if (on_grappe) {
        MPI_Info_get(used, "access_style", sizeof value - 1, value, &flag);
        CHECK(flag && strcmp(value, "read_mostly") == 0, "MPI_File_get_info keeps the hint set (flag %d, \"%s\")",
              flag, value);
    }
    MPI_Info_free(&used);

    int atomic = -1;
    CHECK_MPI(MPI_File_get_atomicity(fh, &atomic));
    CHECK_INT(0, atomic, "files start non-atomic");
    CHECK_MPI(MPI_File_set_atomicity(fh, 1));
    CHECK_MPI(MPI_File_get_atomicity(fh, &atomic));
    CHECK_INT(1, atomic, "MPI_File_set_atomicity");
    int one = 1;
    MPI_Status status;
    CHECK_MPI(MPI_File_write_at(fh, rank * 4, &one, 1, MPI_INT, &status));
    check_count(&status, MPI_INT, 1, "MPI_File_write_at in atomic mode");
    CHECK_MPI(MPI_File_set_atomicity(fh, 0));
    CHECK_MPI(MPI_File_sync(fh));

    MPI_Fint number = MPI_File_c2f(fh);
    CHECK(number != 0, "MPI_File_c2f of an open file is not 0");
    CHECK(MPI_File_f2c(number) == fh, "MPI_File_f2c(MPI_File_c2f(fh)) is fh");
    CHECK(MPI_File_c2f(MPI_FILE_NULL) == 0 && MPI_File_f2c(0) == MPI_FILE_NULL, "MPI_FILE_NULL is 0 in Fortran");

    MPI_File closed = fh;
    CHECK_MPI(MPI_File_close(&fh));
    CHECK(fh == MPI_FILE_NULL, "MPI_File_close sets MPI_FILE_NULL");
    /* Rank 0 deletes it; every rank sees it gone once the others closed it. */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(!exists(name), "MPI_MODE_DELETE_ON_CLOSE: %s is gone after MPI_File_close", name);
    if (on_grappe) {
        MPI_Offset ignored;
        CHECK_ERR(MPI_ERR_FILE, MPI_File_get_size(closed, &ignored), "MPI_File_get_size of a closed file's handle");
    }

    /* MPI_MODE_APPEND: the pointers start at the end. */
    file_name(name, sizeof name, "append");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_set_size(fh, 24));
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_WRONLY | MPI_MODE_APPEND, MPI_INFO_NULL, &fh));
    MPI_Offset position = -1;
    CHECK_MPI(MPI_File_get_position(fh, &position));
    CHECK_INT(24, position, "MPI_MODE_APPEND: the individual pointer starts at the end");
    CHECK_MPI(MPI_File_get_position_shared(fh, &position));
    CHECK_INT(24, position, "MPI_MODE_APPEND: the shared pointer starts at the end");
    CHECK_MPI(MPI_File_close(&fh));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        CHECK_MPI(MPI_File_delete(name, MPI_INFO_NULL));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(!exists(name), "MPI_File_delete removed %s", name);

    /* A file of one rank, named with the ufs: prefix. */
    char own[300];
    snprintf(own, sizeof own, "ufs:io-self-%d-%d.dat", rank, (int)getpid());
    CHECK_MPI(MPI_File_open(MPI_COMM_SELF, own, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, &fh));
    CHECK(exists(own + 4), "the ufs: prefix names %s", own + 4);
    CHECK_MPI(MPI_File_close(&fh));
    CHECK(!exists(own + 4), "MPI_COMM_SELF's file deleted on close");
}

/* Writes each rank's block of n ints at explicit offsets (collectively),
 * then every rank reads every block back. */
static void explicit_offsets(void)
{
    enum { n = 64 };
    MPI_File fh;
    MPI_Status status;
    int mine[n], back[n];
    file_name(name, sizeof name, "offsets");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, &fh));
    for (int i = 0; i < n; i++)
        mine[i] = rank * 1000 + i;
    MPI_Offset at = (MPI_Offset)rank * n * sizeof(int);
    check_preset_status(&status);
    CHECK_MPI(MPI_File_write_at_all(fh, at, mine, n, MPI_INT, &status));
    check_count(&status, MPI_INT, n, "MPI_File_write_at_all");
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));

    for (int r = 0; r < size; r++) {
        int expected[n];
        for (int i = 0; i < n; i++)
            expected[i] = r * 1000 + i;
        MPI_Offset theirs = (MPI_Offset)r * n * sizeof(int);
        memset(back, 0, sizeof back);
        CHECK_MPI(MPI_File_read_at(fh, theirs, back, n, MPI_INT, &status));
        check_count(&status, MPI_INT, n, "MPI_File_read_at");
        CHECK_INTS(expected, back, n, "rank %d's block read with MPI_File_read_at", r);
        memset(back, 0, sizeof back);
        MPI_Request request;
        CHECK_MPI(MPI_File_iread_at(fh, theirs, back, n, MPI_INT, &request));
        CHECK_MPI(MPI_Wait(&request, &status));
        CHECK(request == MPI_REQUEST_NULL, "MPI_Wait frees the file request");
        check_count(&status, MPI_INT, n, "MPI_File_iread_at");
        CHECK_INTS(expected, back, n, "rank %d's block read with MPI_File_iread_at", r);
    }
    /* Every rank reads the block after its own (collectively). */
    int next = (rank + 1) % size, expected[n];
    for (int i = 0; i < n; i++)
        expected[i] = next * 1000 + i;
    memset(back, 0, sizeof back);
    CHECK_MPI(MPI_File_read_at_all(fh, (MPI_Offset)next * n * sizeof(int), back, n, MPI_INT, &status));
    check_count(&status, MPI_INT, n, "MPI_File_read_at_all");
    CHECK_INTS(expected, back, n, "the next rank's block read with MPI_File_read_at_all");

    /* The last 4 ints and beyond the end: the count says what was read. */
    MPI_Offset end = (MPI_Offset)size * n * sizeof(int);
    memset(back, 0, sizeof back);
    CHECK_MPI(MPI_File_read_at(fh, end - 4 * sizeof(int), back, 10, MPI_INT, &status));
    check_count(&status, MPI_INT, 4, "MPI_File_read_at across the end of the file");
    CHECK_INT((size - 1) * 1000 + n - 1, back[3], "the file's last int");
    CHECK_MPI(MPI_File_read_at(fh, end + 100, back, 10, MPI_INT, &status));
    check_count(&status, MPI_INT, 0, "MPI_File_read_at past the end of the file");

    /* A non-blocking write (of what is there already), tested until complete. */
    MPI_Request request;
    int flag = 0;
    CHECK_MPI(MPI_File_iwrite_at(fh, at, mine, 1, MPI_INT, &request));
    for (int i = 0; i < 1000000 && !flag; i++)
        CHECK_MPI(MPI_Test(&request, &flag, &status));
    CHECK(flag, "MPI_File_iwrite_at's request completes");
    check_count(&status, MPI_INT, 1, "MPI_File_iwrite_at");

    /* Misuse. */
    int rc = MPI_File_read_at(fh, -8, back, 1, MPI_INT, &status);
    CHECK_ERR(MPI_ERR_ARG, rc, "MPI_File_read_at at a negative offset");
    check_message(rc, "-8", "MPI_File_read_at at offset -8");
    CHECK_ERR(MPI_ERR_COUNT, MPI_File_write_at(fh, 0, back, -1, MPI_INT, &status), "a negative count");
    CHECK_ERR(MPI_ERR_TYPE, MPI_File_write_at(fh, 0, back, 1, MPI_DATATYPE_NULL, &status), "MPI_DATATYPE_NULL");
    CHECK_MPI(MPI_File_close(&fh));
}

/* A view where the ranks' blocks of 2 ints interleave: rank r's k-th
 * block is the file's block k * size + r. */
static void interleaved_view(void)
{
    enum { blocks = 6, per_block = 2 };
    MPI_File fh;
    MPI_Status status;
    file_name(name, sizeof name, "view");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, &fh));
    MPI_Datatype strided, filetype;
    MPI_Type_vector(blocks, per_block, per_block * size, MPI_INT, &strided);
    MPI_Type_create_resized(strided, 0, (MPI_Aint)(blocks * per_block * size * sizeof(int)), &filetype);
    MPI_Type_commit(&filetype);
    MPI_Type_free(&strided);
    MPI_Offset disp = (MPI_Offset)rank * per_block * sizeof(int);
    CHECK_MPI(MPI_File_set_view(fh, disp, MPI_INT, filetype, "native", MPI_INFO_NULL));

    MPI_Offset got_disp = -1;
    MPI_Datatype got_etype, got_filetype;
    char datarep[MPI_MAX_DATAREP_STRING] = "";
    CHECK_MPI(MPI_File_get_view(fh, &got_disp, &got_etype, &got_filetype, datarep));
    CHECK_INT(disp, got_disp, "MPI_File_get_view: disp");
    CHECK(got_etype == MPI_INT, "MPI_File_get_view: the etype MPI_INT");
    MPI_Aint lb, extent;
    MPI_Type_get_extent(got_filetype, &lb, &extent);
    CHECK_INT(blocks * per_block * size * sizeof(int), extent, "MPI_File_get_view: the filetype's extent");
    CHECK(strcmp(datarep, "native") == 0, "MPI_File_get_view: datarep \"%s\"", datarep);
    MPI_Type_free(&got_filetype);
    MPI_Offset byte = -1;
    CHECK_MPI(MPI_File_get_byte_offset(fh, 3, &byte));
    CHECK_INT(disp + (MPI_Offset)(per_block * size + 1) * sizeof(int), byte, "MPI_File_get_byte_offset of etype 3");
    CHECK_MPI(MPI_File_get_type_extent(fh, filetype, &extent));
    CHECK_INT(blocks * per_block * size * sizeof(int), extent, "MPI_File_get_type_extent");

    /* Two copies of the filetype, from every other int of memory. */
    enum { n = 2 * blocks * per_block };
    int memory[2 * n];
    for (int i = 0; i < 2 * n; i++)
        memory[i] = i % 2 == 0 ? rank * 1000 + i / 2 : -1;
    MPI_Datatype every_other;
    MPI_Type_vector(n, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    CHECK_MPI(MPI_File_write_all(fh, memory, 1, every_other, &status));
    check_count(&status, every_other, 1, "MPI_File_write_all of one strided element");
    MPI_Offset position = -1;
    CHECK_MPI(MPI_File_get_position(fh, &position));
    CHECK_INT(n, position, "the individual pointer after writing %d etypes", n);
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));

    /* Read back through the view into every other int. */
    int back[2 * n];
    for (int i = 0; i < 2 * n; i++)
        back[i] = -1;
    CHECK_MPI(MPI_File_read_at_all(fh, 0, back, 1, every_other, &status));
    CHECK_INTS(memory, back, 2 * n, "the view read back into a strided element");

    /* Every rank reads the whole file as plain ints. */
    int total = n * size, *all = malloc(total * sizeof(int));
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    CHECK_MPI(MPI_File_get_position(fh, &position));
    CHECK_INT(0, position, "MPI_File_set_view resets the individual pointer");
    CHECK_MPI(MPI_File_read_all(fh, all, total, MPI_INT, &status));
    check_count(&status, MPI_INT, total, "MPI_File_read_all of the whole file");
    int wrong = 0, first_wrong = -1;
    for (int i = 0; i < total; i++) {
        int block = i / per_block, owner = block % size, k = block / size;
        int expected = owner * 1000 + k * per_block + i % per_block;
        if (all[i] != expected && wrong++ == 0)
            first_wrong = i;
    }
    CHECK_INT(0, wrong, "ints out of place in the interleaved file (first at %d)", first_wrong);
    free(all);

    /* Misuse: views MPI does not allow. */
    CHECK_ERR(MPI_ERR_UNSUPPORTED_DATAREP, MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "no-such-rep", MPI_INFO_NULL),
              "an unknown representation");
    CHECK_ERR(MPI_ERR_ARG, MPI_File_set_view(fh, -4, MPI_INT, MPI_INT, "native", MPI_INFO_NULL),
              "a negative displacement");
    /* A view of doubles read 1 int at a time: not a whole etype. */
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_DOUBLE, MPI_DOUBLE, "native", MPI_INFO_NULL));
    int one;
    CHECK_ERR(MPI_ERR_IO, MPI_File_read(fh, &one, 1, MPI_INT, &status), "an int read in a view of doubles");
    MPI_Type_free(&every_other);
    MPI_Type_free(&filetype);
    CHECK_MPI(MPI_File_close(&fh));
}

/* The external32 representation: ints and doubles go big-endian to the
 * file and come back as they were; MPI_File_get_type_extent gives their
 * external32 extent. */
static void external32_view(void)
{
    MPI_File fh;
    MPI_Status status;
    file_name(name, sizeof name, "ext32");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
    MPI_Aint extent = -1;
    CHECK_MPI(MPI_File_get_type_extent(fh, MPI_INT, &extent));
    CHECK_INT(4, extent, "MPI_File_get_type_extent of MPI_INT in external32");
    int ints[2] = {0x01020304 + rank, -2 - rank};
    CHECK_MPI(MPI_File_write_at_all(fh, 2 * rank, ints, 2, MPI_INT, &status));
    check_count(&status, MPI_INT, 2, "MPI_File_write_at_all of 2 ints in external32");
    MPI_Offset doubles_at = 8 * (MPI_Offset)size;
    CHECK_MPI(MPI_File_set_view(fh, doubles_at, MPI_DOUBLE, MPI_DOUBLE, "external32", MPI_INFO_NULL));
    double value = 1.5 + rank;
    CHECK_MPI(MPI_File_write_at_all(fh, rank, &value, 1, MPI_DOUBLE, &status));
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));

    /* The bytes of this rank's data, as the file holds them. */
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL));
    unsigned char raw[8], raw_double[8], native_double[8];
    CHECK_MPI(MPI_File_read_at(fh, 8 * rank, raw, 8, MPI_BYTE, &status));
    CHECK_MPI(MPI_File_read_at(fh, doubles_at + 8 * rank, raw_double, 8, MPI_BYTE, &status));
    unsigned char expected[8] = {1, 2, 3, (unsigned char)(4 + rank)};
    unsigned int second = (unsigned int)(-2 - rank);
    for (int i = 0; i < 4; i++)
        expected[4 + i] = (unsigned char)(second >> (24 - 8 * i));
    CHECK_BYTES(expected, raw, 8, "two ints in external32 (big-endian)");
    memcpy(native_double, &value, 8);
    for (int i = 0; i < 8; i++)
        expected[i] = native_double[7 - i];
    CHECK_BYTES(expected, raw_double, 8, "a double in external32 (big-endian)");

    /* Back through external32 views. */
    int back[2] = {0, 0};
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "external32", MPI_INFO_NULL));
    CHECK_MPI(MPI_File_read_at_all(fh, 2 * rank, back, 2, MPI_INT, &status));
    CHECK_INTS(ints, back, 2, "ints read back through an external32 view");
    double value_back = 0;
    CHECK_MPI(MPI_File_set_view(fh, doubles_at, MPI_DOUBLE, MPI_DOUBLE, "external32", MPI_INFO_NULL));
    CHECK_MPI(MPI_File_read_at(fh, rank, &value_back, 1, MPI_DOUBLE, &status));
    CHECK_DBL(value, value_back, 0, "a double read back through an external32 view");
    if (on_grappe) /* MPICH converts longs to 4 bytes; grappe's views do not. */
        CHECK_ERR(MPI_ERR_UNSUPPORTED_DATAREP,
                  MPI_File_set_view(fh, 0, MPI_LONG, MPI_LONG, "external32", MPI_INFO_NULL),
                  "an external32 view of MPI_LONG");
    CHECK_MPI(MPI_File_close(&fh));
}

/* An indexed filetype of ints: `first` ints at 0, then 1 int at int `then`. */
static MPI_Datatype two_blocks(int first, int then)
{
    int lengths[2] = {first, 1}, displacements[2] = {0, then};
    MPI_Datatype type;
    MPI_Type_indexed(2, lengths, displacements, MPI_INT, &type);
    MPI_Type_commit(&type);
    return type;
}

/* set_view of `filetype` on `fh` gives MPI_ERR_IO, or succeeds if `allowed`. */
static void check_filetype(MPI_File fh, int allowed, int first, int then, const char *what)
{
    MPI_Datatype filetype = two_blocks(first, then);
    int rc = MPI_File_set_view(fh, 0, MPI_INT, filetype, "native", MPI_INFO_NULL);
    if (allowed)
        CHECK_MPI(rc);
    else
        CHECK_ERR(MPI_ERR_IO, rc, "a view of %s", what);
    MPI_Type_free(&filetype);
}

/* Filetypes whose type maps MPI restricts in views: displacements never
 * negative nor decreasing, and overlapping only in a file that is only read. */
static void filetype_type_maps(void)
{
    enum { n = 16 };
    MPI_File fh;
    MPI_Status status;
    file_name(name, sizeof name, "typemaps");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh));
    int ints[n];
    for (int i = 0; i < n; i++)
        ints[i] = i;
    CHECK_MPI(MPI_File_write_at_all(fh, 0, ints, rank == 0 ? n : 0, MPI_INT, &status));
    check_filetype(fh, 0, 1, -2, "a negative displacement (int -2)");
    check_filetype(fh, 0, 1, 0, "overlapping blocks (int 0 twice) in a file opened for writing");
    check_filetype(fh, 0, 3, 1, "overlapping blocks (ints 0-2, then 1) in a file opened for writing");
    CHECK_MPI(MPI_File_close(&fh));

    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh));
    check_filetype(fh, 0, 1, -2, "a negative displacement (int -2) in a file only read");
    int lengths[2] = {1, 1}, decreasing[2] = {3, 0};
    MPI_Datatype backwards;
    MPI_Type_indexed(2, lengths, decreasing, MPI_INT, &backwards);
    MPI_Type_commit(&backwards);
    CHECK_ERR(MPI_ERR_IO, MPI_File_set_view(fh, 0, MPI_INT, backwards, "native", MPI_INFO_NULL),
              "a view of decreasing displacements (int 3, then 0) in a file only read");
    MPI_Type_free(&backwards);

    /* Ints 0-2 then int 1 again, tiled every 3 ints: 0 1 2 1 3 4 5 4 ... */
    check_filetype(fh, 1, 3, 1, "overlapping blocks in a file only read");
    int got[8], expected[8] = {0, 1, 2, 1, 3, 4, 5, 4};
    /* Independent: ROMIO's collective read of such a view fails in MPICH 4.0.2. */
    CHECK_MPI(MPI_File_read_at(fh, 0, got, 8, MPI_INT, &status));
    check_count(&status, MPI_INT, 8, "MPI_File_read_at through overlapping blocks");
    CHECK_INTS(expected, got, 8, "ints read through overlapping blocks");

    /* Ints 0-2 then int 0 again: from int 2, the ranges go back to byte 0
     * (atomic mode locks the span of the ranges, whatever their order).
     * Blocks that start where an earlier one started are taken as ROMIO
     * takes them (an overlap), but MPICH 4.0.2 then reads other bytes. */
    check_filetype(fh, 1, 3, 0, "blocks overlapping from their start in a file only read");
    CHECK_MPI(MPI_File_set_atomicity(fh, 1));
    int back[3], expected_back[3] = {2, 0, 3};
    CHECK_MPI(MPI_File_read_at(fh, 2, back, 3, MPI_INT, &status));
    check_count(&status, MPI_INT, 3, "an atomic MPI_File_read_at through blocks going back");
    if (on_grappe)
        CHECK_INTS(expected_back, back, 3, "ints read atomically through blocks going back");
    CHECK_MPI(MPI_File_close(&fh));
}

/* The individual file pointer: seek, position, reads and writes that move
 * it, split collectives. */
static void individual_pointers(void)
{
    MPI_File fh;
    MPI_Status status;
    char own[300];
    snprintf(own, sizeof own, "io-pointer-%d-%d.dat", rank, (int)getpid());
    CHECK_MPI(MPI_File_open(MPI_COMM_SELF, own, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    int values[10];
    for (int i = 0; i < 10; i++)
        values[i] = 100 + i;
    CHECK_MPI(MPI_File_write(fh, values, 6, MPI_INT, &status));
    check_count(&status, MPI_INT, 6, "MPI_File_write");
    CHECK_MPI(MPI_File_write(fh, values + 6, 4, MPI_INT, &status));
    MPI_Offset position = -1;
    CHECK_MPI(MPI_File_get_position(fh, &position));
    CHECK_INT(10, position, "the pointer after writing 10 ints");

    int got = -1;
    CHECK_MPI(MPI_File_seek(fh, 2, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_read(fh, &got, 1, MPI_INT, &status));
    CHECK_INT(102, got, "MPI_SEEK_SET 2 then read");
    CHECK_MPI(MPI_File_seek(fh, 3, MPI_SEEK_CUR));
    CHECK_MPI(MPI_File_read(fh, &got, 1, MPI_INT, &status));
    CHECK_INT(106, got, "MPI_SEEK_CUR 3 from 3, then read");
    CHECK_MPI(MPI_File_seek(fh, -1, MPI_SEEK_END));
    CHECK_MPI(MPI_File_get_position(fh, &position));
    CHECK_INT(9, position, "MPI_SEEK_END -1 is the last int");
    CHECK_MPI(MPI_File_read(fh, &got, 1, MPI_INT, &status));
    CHECK_INT(109, got, "the last int");
    CHECK_MPI(MPI_File_read(fh, &got, 1, MPI_INT, &status));
    check_count(&status, MPI_INT, 0, "MPI_File_read at the end");
    CHECK_ERR(MPI_ERR_ARG, MPI_File_seek(fh, -1, MPI_SEEK_SET), "a seek before the start");
    CHECK_ERR(MPI_ERR_ARG, MPI_File_seek(fh, 0, 12345), "a bad whence");

    /* Split collectives: the begin call reads, the end call gives the status. */
    int pair[2] = {0, 0};
    CHECK_MPI(MPI_File_seek(fh, 4, MPI_SEEK_SET));
    CHECK_MPI(MPI_File_read_all_begin(fh, pair, 2, MPI_INT));
    CHECK_MPI(MPI_File_read_all_end(fh, pair, &status));
    check_count(&status, MPI_INT, 2, "MPI_File_read_all_end");
    CHECK(pair[0] == 104 && pair[1] == 105, "MPI_File_read_all_begin/end: %d %d", pair[0], pair[1]);
    CHECK_MPI(MPI_File_write_at_all_begin(fh, 10, pair, 2, MPI_INT));
    CHECK_MPI(MPI_File_write_at_all_end(fh, pair, &status));
    check_count(&status, MPI_INT, 2, "MPI_File_write_at_all_end");
    CHECK_ERR(MPI_ERR_IO, MPI_File_read_all_end(fh, pair, &status), "a split collective ended without its begin");
    CHECK_MPI(MPI_File_close(&fh));
}

/* The shared pointer: records written at it land once each; ordered
 * accesses go in rank order. */
static void shared_pointer(void)
{
    /* MPICH 4.0.2's MPI_File_get_position_shared gives other ranks than 0
     * wrong positions (0 after writes, 1 after a seek to 0), though its
     * accesses at the pointer land right. */
    int shared_position_agrees = on_grappe || rank == 0;
    MPI_File fh;
    MPI_Status status;
    file_name(name, sizeof name, "shared");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    int record[4] = {rank, rank, rank, rank};
    CHECK_MPI(MPI_File_write_shared(fh, record, 4, MPI_INT, &status));
    check_count(&status, MPI_INT, 4, "MPI_File_write_shared");
    MPI_Request request;
    CHECK_MPI(MPI_File_iwrite_shared(fh, record, 4, MPI_INT, &request));
    CHECK_MPI(MPI_Wait(&request, &status));
    check_count(&status, MPI_INT, 4, "MPI_File_iwrite_shared");
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Offset position = -1;
    if (shared_position_agrees) {
        CHECK_MPI(MPI_File_get_position_shared(fh, &position));
        CHECK_INT(8 * size, position, "the shared pointer after every rank wrote 8 ints");
    }

    int *all = malloc(8 * size * sizeof(int)), *seen = calloc(size, sizeof(int));
    CHECK_MPI(MPI_File_read_at(fh, 0, all, 8 * size, MPI_INT, &status));
    check_count(&status, MPI_INT, 8 * size, "reading every record");
    int torn = 0;
    for (int k = 0; k < 2 * size; k++) {
        int owner = all[4 * k];
        if (owner < 0 || owner >= size || all[4 * k + 1] != owner || all[4 * k + 2] != owner || all[4 * k + 3] != owner)
            torn++;
        else
            seen[owner]++;
    }
    CHECK_INT(0, torn, "records overwritten or torn by the shared pointer");
    for (int r = 0; r < size; r++)
        CHECK_INT(2, seen[r], "records of rank %d in the file", r);

    /* Ordered: rank r writes r + 1 ints, in rank order from the pointer. */
    CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    if (shared_position_agrees) {
        CHECK_MPI(MPI_File_get_position_shared(fh, &position));
        CHECK_INT(0, position, "MPI_File_seek_shared to 0");
    }
    int mine[64];
    for (int i = 0; i <= rank; i++)
        mine[i] = 50 + rank;
    CHECK_MPI(MPI_File_write_ordered(fh, mine, rank + 1, MPI_INT, &status));
    check_count(&status, MPI_INT, rank + 1, "MPI_File_write_ordered");
    int ordered_total = size * (size + 1) / 2;
    if (shared_position_agrees) {
        CHECK_MPI(MPI_File_get_position_shared(fh, &position));
        CHECK_INT(ordered_total, position, "the shared pointer after the ordered write");
    }
    CHECK_MPI(MPI_File_sync(fh));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(fh));
    CHECK_MPI(MPI_File_read_at(fh, 0, all, ordered_total, MPI_INT, &status));
    int at = 0, misplaced = 0;
    for (int r = 0; r < size; r++)
        for (int i = 0; i <= r; i++, at++)
            misplaced += all[at] != 50 + r;
    CHECK_INT(0, misplaced, "ints out of rank order after MPI_File_write_ordered");

    /* Read back in order, with the split form. */
    CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    int back[64];
    memset(back, 0, sizeof back);
    CHECK_MPI(MPI_File_read_ordered_begin(fh, back, rank + 1, MPI_INT));
    CHECK_MPI(MPI_File_read_ordered_end(fh, back, &status));
    check_count(&status, MPI_INT, rank + 1, "MPI_File_read_ordered_end");
    CHECK_INTS(mine, back, rank + 1, "MPI_File_read_ordered_begin/end gives this rank its own ints");
    CHECK_MPI(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET));
    memset(back, 0, sizeof back);
    CHECK_MPI(MPI_File_read_ordered(fh, back, rank + 1, MPI_INT, &status));
    CHECK_INTS(mine, back, rank + 1, "MPI_File_read_ordered gives this rank its own ints");
    CHECK_MPI(MPI_File_seek_shared(fh, -1, MPI_SEEK_END));
    if (shared_position_agrees) {
        CHECK_MPI(MPI_File_get_position_shared(fh, &position));
        CHECK_INT(8 * size - 1, position, "MPI_File_seek_shared(-1, MPI_SEEK_END)");
    }
    if (size > 1 && on_grappe) /* MPICH reports it on the ranks that differ from rank 0 only. */
        CHECK_ERR(MPI_ERR_ARG, MPI_File_seek_shared(fh, rank, MPI_SEEK_SET),
                  "MPI_File_seek_shared to a different offset on each rank");
    free(all);
    free(seen);
    CHECK_MPI(MPI_File_close(&fh));

    /* MPI_MODE_SEQUENTIAL: only the shared pointer. */
    file_name(name, sizeof name, "sequential");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, name,
                            MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL | MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, &fh));
    CHECK_ERR(MPI_ERR_UNSUPPORTED_OPERATION, MPI_File_write_at(fh, 0, record, 1, MPI_INT, &status),
              "MPI_File_write_at on a sequential file");
    CHECK_ERR(MPI_ERR_UNSUPPORTED_OPERATION, MPI_File_seek(fh, 0, MPI_SEEK_SET), "MPI_File_seek on a sequential file");
    CHECK_MPI(MPI_File_write_ordered(fh, record, 4, MPI_INT, &status));
    CHECK_MPI(MPI_File_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    MPI_Offset bytes = -1;
    CHECK_MPI(MPI_File_get_size(fh, &bytes));
    CHECK_INT(16 * size, bytes, "a sequential file's size after each rank wrote 4 ints");
    CHECK_MPI(MPI_File_close(&fh));
}

static int handler_calls;
static MPI_File handler_file;
static int handler_class;

static void file_handler(MPI_File *file, int *code, ...)
{
    handler_calls++;
    handler_file = *file;
    MPI_Error_class(*code, &handler_class);
}

static void comm_handler(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    (void)code;
}

static void errors(void)
{
    MPI_Errhandler handler;
    CHECK_MPI(MPI_File_get_errhandler(MPI_FILE_NULL, &handler));
    CHECK(handler == MPI_ERRORS_RETURN, "MPI_FILE_NULL's handler is MPI_ERRORS_RETURN at start");

    MPI_File fh = MPI_FILE_NULL;
    MPI_Status status;
    file_name(name, sizeof name, "errors");
    int bad[] = {MPI_MODE_RDWR | MPI_MODE_RDONLY, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_MODE_RDONLY | MPI_MODE_EXCL,
                 MPI_MODE_CREATE, MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL};
    for (unsigned i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_ERR(MPI_ERR_AMODE, MPI_File_open(MPI_COMM_WORLD, name, bad[i], MPI_INFO_NULL, &fh),
                  "MPI_File_open with access mode %#x", bad[i]);

    int rc = MPI_File_open(MPI_COMM_WORLD, "io-no-such-file.dat", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK_ERR(MPI_ERR_NO_SUCH_FILE, rc, "MPI_File_open of a missing file");
    check_message(rc, "io-no-such-file.dat", "MPI_File_open of a missing file");
    rc = MPI_File_delete("io-no-such-file.dat", MPI_INFO_NULL);
    CHECK_ERR(MPI_ERR_NO_SUCH_FILE, rc, "MPI_File_delete of a missing file");
    check_message(rc, "io-no-such-file.dat", "MPI_File_delete of a missing file");

    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh));
    int value = 42;
    CHECK_ERR(MPI_ERR_ACCESS, MPI_File_read_at(fh, 0, &value, 1, MPI_INT, &status), "reading a MPI_MODE_WRONLY file");
    CHECK_MPI(MPI_File_close(&fh));
    CHECK_ERR(MPI_ERR_FILE_EXISTS,
              MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR, MPI_INFO_NULL, &fh),
              "MPI_MODE_EXCL on a file that exists");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    rc = MPI_File_write_at(fh, 0, &value, 1, MPI_INT, &status);
    CHECK_ERR(MPI_ERR_READ_ONLY, rc, "writing a MPI_MODE_RDONLY file");
    check_message(rc, name, "writing a MPI_MODE_RDONLY file");
    rc = MPI_File_write_shared(fh, &value, 1, MPI_INT, &status);
    if (on_grappe) /* MPICH tries, and fails with MPI_ERR_IO. */
        CHECK_ERR(MPI_ERR_READ_ONLY, rc, "writing a MPI_MODE_RDONLY file at the shared pointer");
    else
        CHECK(rc != MPI_SUCCESS, "writing a MPI_MODE_RDONLY file at the shared pointer fails");
    if (size > 1) {
        int amode = rank == 0 ? MPI_MODE_RDONLY : MPI_MODE_RDWR;
        MPI_File other = MPI_FILE_NULL;
        CHECK_ERR(MPI_ERR_NOT_SAME, MPI_File_open(MPI_COMM_WORLD, name, amode, MPI_INFO_NULL, &other),
                  "MPI_File_open with a different access mode on rank 0");
    }

    /* Handles that name no open file. */
    MPI_Offset bytes;
    CHECK_ERR(MPI_ERR_FILE, MPI_File_get_size(MPI_FILE_NULL, &bytes), "MPI_File_get_size(MPI_FILE_NULL)");
    if (on_grappe) {
        int stack_int = 0;
        MPI_File garbage[] = {(MPI_File)0x12345678, (MPI_File)&stack_int, (MPI_File)(~(size_t)0)};
        for (unsigned i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
            rc = MPI_File_read_at(garbage[i], 0, &value, 1, MPI_INT, &status);
            CHECK_ERR(MPI_ERR_FILE, rc, "MPI_File_read_at on garbage handle %p", (void *)garbage[i]);
            CHECK_ERR(MPI_ERR_FILE, MPI_File_close(&garbage[i]), "MPI_File_close of garbage handle %p",
                      (void *)garbage[i]);
        }
    }

    /* The program's error handler on the file. */
    MPI_Errhandler mine, comms;
    CHECK_MPI(MPI_File_create_errhandler(file_handler, &mine));
    CHECK_MPI(MPI_File_set_errhandler(fh, mine));
    CHECK_MPI(MPI_File_get_errhandler(fh, &handler));
    CHECK(handler == mine, "MPI_File_get_errhandler gives the handler set");
    handler_calls = 0;
    rc = MPI_File_read_at(fh, -1, &value, 1, MPI_INT, &status);
    CHECK_ERR(MPI_ERR_ARG, rc, "a negative offset under the program's handler");
    CHECK_INT(1, handler_calls, "the file's handler was called once");
    CHECK(handler_file == fh, "the handler got the file's handle");
    CHECK_INT(MPI_ERR_ARG, handler_class, "the handler got the error's code");
    handler_calls = 0;
    CHECK_MPI(MPI_File_call_errhandler(fh, MPI_ERR_OTHER));
    CHECK_INT(1, handler_calls, "MPI_File_call_errhandler calls the file's handler");
    CHECK_INT(MPI_ERR_OTHER, handler_class, "MPI_File_call_errhandler passes the code");
    if (on_grappe) { /* MPICH's error goes to MPI_COMM_WORLD's handler. */
        MPI_Comm_create_errhandler(comm_handler, &comms);
        handler_calls = 0;
        CHECK_ERR(MPI_ERR_ARG, MPI_File_set_errhandler(fh, comms), "a communicator's handler on a file");
        CHECK_INT(1, handler_calls, "the refusal went to the file's handler");
        MPI_Errhandler_free(&comms);
    }
    CHECK_MPI(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_File_close(&fh));

    /* MPI_FILE_NULL's handler: errors of no open file, and files opened next. */
    CHECK_MPI(MPI_File_set_errhandler(MPI_FILE_NULL, mine));
    handler_calls = 0;
    MPI_File_open(MPI_COMM_WORLD, "io-no-such-file.dat", MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK_INT(1, handler_calls, "MPI_FILE_NULL's handler called for a failed MPI_File_open");
    CHECK(handler_file == MPI_FILE_NULL, "with MPI_FILE_NULL");
    CHECK_INT(MPI_ERR_NO_SUCH_FILE, handler_class, "and the open's error");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh));
    CHECK_MPI(MPI_File_get_errhandler(fh, &handler));
    CHECK(handler == mine, "a file opened next starts with MPI_FILE_NULL's handler");
    CHECK_MPI(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_File_close(&fh));
    MPI_Errhandler_free(&mine);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        CHECK_MPI(MPI_File_delete(name, MPI_INFO_NULL));

    if (on_grappe) {
        CHECK_ERR(MPI_ERR_DUP_DATAREP, MPI_Register_datarep("native", NULL, NULL, NULL, NULL),
                  "MPI_Register_datarep(\"native\")");
    }
}

/* Threads of every rank writing at explicit offsets and at the shared
 * pointer at once (MPI_THREAD_MULTIPLE). */
enum { threads = 4, per_thread = 50 };
static MPI_File thread_file;

static void *writer(void *arg)
{
    int t = (int)(size_t)arg;
    for (int i = 0; i < per_thread; i++) {
        int record[2] = {rank * threads + t, i};
        MPI_Offset at = ((MPI_Offset)(rank * threads + t) * per_thread + i) * 2;
        MPI_File_write_at(thread_file, at, record, 2, MPI_INT, MPI_STATUS_IGNORE);
        MPI_File_write_shared(thread_file, record, 2, MPI_INT, MPI_STATUS_IGNORE);
    }
    return NULL;
}

static void threads_at_once(void)
{
    int provided;
    MPI_Query_thread(&provided);
    if (provided != MPI_THREAD_MULTIPLE)
        return;
    file_name(name, sizeof name, "threads");
    CHECK_MPI(MPI_File_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                            MPI_INFO_NULL, &thread_file));
    CHECK_MPI(MPI_File_set_view(thread_file, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL));
    /* The shared pointer's records go after the explicit ones. */
    int records = size * threads * per_thread;
    CHECK_MPI(MPI_File_seek_shared(thread_file, 2 * records, MPI_SEEK_SET));
    pthread_t workers[threads];
    for (int t = 0; t < threads; t++)
        pthread_create(&workers[t], NULL, writer, (void *)(size_t)t);
    for (int t = 0; t < threads; t++)
        pthread_join(workers[t], NULL);
    CHECK_MPI(MPI_File_sync(thread_file));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_File_sync(thread_file));
    int *all = malloc(4 * records * sizeof(int)), *seen = calloc(records, sizeof(int));
    MPI_Status status;
    CHECK_MPI(MPI_File_read_at(thread_file, 0, all, 4 * records, MPI_INT, &status));
    check_count(&status, MPI_INT, 4 * records, "the threads' file");
    int misplaced = 0, torn = 0;
    for (int k = 0; k < records; k++)
        misplaced += all[2 * k] != k / per_thread || all[2 * k + 1] != k % per_thread;
    for (int k = 0; k < records; k++) {
        int writer_id = all[2 * records + 2 * k], i = all[2 * records + 2 * k + 1];
        if (writer_id < 0 || writer_id >= size * threads || i < 0 || i >= per_thread)
            torn++;
        else
            seen[writer_id * per_thread + i]++;
    }
    CHECK_INT(0, misplaced, "records of the threads' explicit writes out of place");
    CHECK_INT(0, torn, "records of the threads' shared-pointer writes torn");
    int once = 0;
    for (int k = 0; k < records; k++)
        once += seen[k] == 1;
    CHECK_INT(records, once, "shared-pointer records found exactly once");
    free(all);
    free(seen);
    CHECK_MPI(MPI_File_close(&thread_file));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("io");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(version, &len);
    on_grappe = strstr(version, "grappe") != NULL;

    management();
    explicit_offsets();
    interleaved_view();
    filetype_type_maps();
    external32_view();
    individual_pointers();
    shared_pointer();
    errors();
    threads_at_once();
    return check_finish();
}

/* Environment: MPI_Initialized/MPI_Finalized before and after, MPI_Init,
 * MPI_Wtime/MPI_Wtick, MPI_Get_processor_name, MPI_Get_version,
 * MPI_Get_library_version, MPI_Comm_size/MPI_Comm_rank on MPI_COMM_WORLD
 * and MPI_COMM_SELF. (MPI_Init_thread: init_thread.c; MPI_Abort: abort.c.) */
#include "check.h"
#include <time.h>

static void check_state(int initialized, int finalized, const char *when)
{
    int flag = -1;
    CHECK_MPI(MPI_Initialized(&flag));
    CHECK_INT(initialized, flag, "MPI_Initialized %s", when);
    flag = -1;
    CHECK_MPI(MPI_Finalized(&flag));
    CHECK_INT(finalized, flag, "MPI_Finalized %s", when);
}

/* What may be called before MPI_Init and after MPI_Finalize. */
static void check_version(const char *when)
{
    int version = -1, subversion = -1;
    CHECK_MPI(MPI_Get_version(&version, &subversion));
    CHECK(version > 3 || (version == 3 && subversion >= 1), "MPI_Get_version %s gives %d.%d, at least 3.1", when,
          version, subversion);
    CHECK(subversion >= 0, "MPI_Get_version %s: subversion %d", when, subversion);

    char library[MPI_MAX_LIBRARY_VERSION_STRING];
    memset(library, 0x7f, sizeof library);
    int len = -1;
    CHECK_MPI(MPI_Get_library_version(library, &len));
    CHECK(len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING, "MPI_Get_library_version %s: length %d", when, len);
    if (len > 0 && len < MPI_MAX_LIBRARY_VERSION_STRING)
        CHECK_INT(strnlen(library, MPI_MAX_LIBRARY_VERSION_STRING), len,
                  "MPI_Get_library_version %s: resultlen is the string's length", when);
}

static void check_sizes(void)
{
    int size = -1, rank = -1;
    CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_WORLD, &rank));
    CHECK(size >= 1, "MPI_Comm_size(MPI_COMM_WORLD) %d", size);
    CHECK(rank >= 0 && rank < size, "MPI_Comm_rank(MPI_COMM_WORLD) %d of %d", rank, size);

    /* Every rank is there once: the ranks sum to 0+1+...+size-1 and
     * their squares to the sum of squares. */
    long mine[2] = {rank, (long)rank * rank}, sums[2] = {0, 0};
    CHECK_MPI(MPI_Allreduce(mine, sums, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD));
    long n = size;
    CHECK_INT(n * (n - 1) / 2, sums[0], "sum of the world ranks");
    CHECK_INT((n - 1) * n * (2 * n - 1) / 6, sums[1], "sum of the squares of the world ranks");

    int self_size = -1, self_rank = -1;
    CHECK_MPI(MPI_Comm_size(MPI_COMM_SELF, &self_size));
    CHECK_MPI(MPI_Comm_rank(MPI_COMM_SELF, &self_rank));
    CHECK_INT(1, self_size, "MPI_Comm_size(MPI_COMM_SELF)");
    CHECK_INT(0, self_rank, "MPI_Comm_rank(MPI_COMM_SELF)");
}

static void check_clock(void)
{
    double tick = MPI_Wtick();
    CHECK(tick > 0.0 && tick <= 1.0, "MPI_Wtick() %g is in (0, 1]", tick);

    double previous = MPI_Wtime();
    for (int i = 0; i < 100000; i++) {
        double now = MPI_Wtime();
        if (!CHECK(now >= previous, "MPI_Wtime() call %d: %.9f after %.9f", i, now, previous))
            break;
        previous = now;
    }
    /* A sleep lasts at least what was asked: the clock must see it. */
    double before = MPI_Wtime();
    struct timespec pause = {0, 20 * 1000 * 1000};
    while (nanosleep(&pause, &pause) != 0)
        ;
    double elapsed = MPI_Wtime() - before;
    CHECK(elapsed >= 0.019, "MPI_Wtime() across a 20 ms sleep advanced %.6f s", elapsed);
}

static void check_processor_name(void)
{
    char name[MPI_MAX_PROCESSOR_NAME];
    memset(name, 0x7f, sizeof name);
    int len = -1;
    CHECK_MPI(MPI_Get_processor_name(name, &len));
    CHECK(len > 0 && len < MPI_MAX_PROCESSOR_NAME, "MPI_Get_processor_name length %d", len);
    if (len > 0 && len < MPI_MAX_PROCESSOR_NAME)
        CHECK_INT(strnlen(name, MPI_MAX_PROCESSOR_NAME), len, "MPI_Get_processor_name: resultlen is the name's length");
}

/* Which attributes MPI_Finalize deleted, in order, and whether MPI still
 * worked then: libraries (PETSc, HDF5) hook their clean-up on
 * MPI_COMM_SELF's attributes, deleted first by MPI_Finalize (MPI-3.1
 * 8.7.1), last set first. */
static char deleted_at_finalize[8];
static int deleted_before_finalized = 1;

static int note_deletion(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    int finalized = 1;
    MPI_Finalized(&finalized);
    deleted_before_finalized &= !finalized;
    size_t used = strlen(deleted_at_finalize);
    if (used + 1 < sizeof deleted_at_finalize)
        deleted_at_finalize[used] = *(const char *)value;
    return MPI_SUCCESS;
}

static void hook_finalize(void)
{
    int keyval;
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, note_deletion, &keyval, NULL));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, "w"));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, keyval, "a"));
    int second;
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, note_deletion, &second, NULL));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, second, "b"));
}

int main(int argc, char **argv)
{
    check_state(0, 0, "before MPI_Init");
    check_version("before MPI_Init");
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "FAIL env: MPI_Init failed\n");
        return 1;
    }
    check_start("env");
    check_state(1, 0, "after MPI_Init");
    check_version("after MPI_Init");
    check_sizes();
    check_clock();
    check_processor_name();
    hook_finalize();

    int total = check_report();
    CHECK_MPI(MPI_Finalize());
    CHECK(deleted_before_finalized, "MPI_Finalize deleted attributes while MPI still worked");
    CHECK(strcmp(deleted_at_finalize, "baw") == 0,
          "MPI_Finalize deletes MPI_COMM_SELF's attributes (last set first), then MPI_COMM_WORLD's: expected baw, got %s",
          deleted_at_finalize);
    /* Failures from here on are this rank's own: its exit status says them. */
    check_state(1, 1, "after MPI_Finalize");
    check_version("after MPI_Finalize");
    return total == 0 && check_failures == 0 ? 0 : 1;
}

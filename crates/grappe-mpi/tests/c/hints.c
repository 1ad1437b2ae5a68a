/* Hints: a window keeps the hints MPI defines for windows, from its creation
 * and from MPI_Win_set_info, and MPI_Win_get_info gives them back; a key
 * MPI does not define is ignored, as MPI says an implementation's unknown
 * hints are, and so is any hint given to MPI_Comm_set_info (grappe takes
 * none). Runs on any number of ranks. */
#include "check.h"

static int has_key(MPI_Info info, const char *key, const char *expected)
{
    char value[MPI_MAX_INFO_VAL + 1] = "";
    int flag = 0;
    MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag);
    if (flag && expected)
        CHECK(strcmp(value, expected) == 0, "the value of hint %s: \"%s\"", key, value);
    return flag;
}

static void window_hints(void)
{
    MPI_Info info, used;
    MPI_Win win;
    void *base;
    MPI_Info_create(&info);
    MPI_Info_set(info, "same_size", "true");
    MPI_Info_set(info, "not_a_window_hint", "true");
    CHECK_MPI(MPI_Win_allocate(sizeof(int), sizeof(int), info, MPI_COMM_WORLD, &base, &win));
    MPI_Info_free(&info);

    CHECK_MPI(MPI_Win_get_info(win, &used));
    CHECK(has_key(used, "same_size", "true"), "a defined hint given at creation is kept");
    CHECK(!has_key(used, "not_a_window_hint", NULL), "an unknown hint given at creation is ignored");
    MPI_Info_free(&used);

    MPI_Info_create(&info);
    MPI_Info_set(info, "no_locks", "true");
    MPI_Info_set(info, "invalid_test_key", "true");
    CHECK_MPI(MPI_Win_set_info(win, info));
    MPI_Info_free(&info);
    CHECK_MPI(MPI_Win_get_info(win, &used));
    CHECK(has_key(used, "no_locks", "true"), "a defined hint given to MPI_Win_set_info is kept");
    CHECK(has_key(used, "same_size", "true"), "MPI_Win_set_info keeps the hints it does not name");
    CHECK(!has_key(used, "invalid_test_key", NULL), "an unknown hint given to MPI_Win_set_info is ignored");
    MPI_Info_free(&used);
    CHECK_MPI(MPI_Win_free(&win));
}

static void communicator_hints(void)
{
    MPI_Comm comm;
    MPI_Info info, used;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    MPI_Info_create(&info);
    MPI_Info_set(info, "invalid_test_key", "true");
    CHECK_MPI(MPI_Comm_set_info(comm, info));
    MPI_Info_free(&info);
    CHECK_MPI(MPI_Comm_get_info(comm, &used));
    CHECK(!has_key(used, "invalid_test_key", NULL), "an unknown communicator hint is ignored");
    MPI_Info_free(&used);
    CHECK_MPI(MPI_Comm_free(&comm));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("hints");
    window_hints();
    communicator_hints();
    return check_finish();
}

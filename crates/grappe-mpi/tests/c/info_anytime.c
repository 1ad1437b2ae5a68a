/* Info objects before MPI_Init and after MPI_Finalize, which MPI allows:
 * an info made before MPI_Init keeps its keys across it and is usable
 * while MPI runs, one made while MPI runs is usable after MPI_Finalize,
 * and MPI_Info_create_env says the same in all three phases. Checks after
 * MPI_Finalize cannot be gathered: a failure there prints its FAIL line
 * and makes the rank exit 1. Runs on any number of ranks. */
#include "check.h"

/* The value of `key` in `info`, "" if it has none. */
static const char *value_of(MPI_Info info, const char *key)
{
    static char value[MPI_MAX_INFO_VAL + 1];
    int flag = 0;
    value[0] = '\0';
    CHECK_MPI(MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag));
    return flag ? value : "";
}

/* Whether two infos hold the same keys with the same values. */
static int same_entries(MPI_Info a, MPI_Info b)
{
    int na = -1, nb = -2;
    CHECK_MPI(MPI_Info_get_nkeys(a, &na));
    CHECK_MPI(MPI_Info_get_nkeys(b, &nb));
    if (na != nb)
        return 0;
    for (int i = 0; i < na; i++) {
        char key[MPI_MAX_INFO_KEY + 1], in_a[MPI_MAX_INFO_VAL + 1];
        CHECK_MPI(MPI_Info_get_nthkey(a, i, key));
        strcpy(in_a, value_of(a, key));
        if (strcmp(in_a, value_of(b, key)) != 0)
            return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Info early = MPI_INFO_NULL, early_copy = MPI_INFO_NULL, env_before = MPI_INFO_NULL;
    CHECK_MPI(MPI_Info_create(&early));
    CHECK_MPI(MPI_Info_set(early, "made", "before MPI_Init"));
    CHECK_MPI(MPI_Info_set(early, "gone", "soon"));
    CHECK_MPI(MPI_Info_delete(early, "gone"));
    CHECK_MPI(MPI_Info_dup(early, &early_copy));
    CHECK_MPI(MPI_Info_create_env(argc, argv, &env_before));

    MPI_Init(&argc, &argv);
    check_start("info_anytime");
    int nkeys = -1;
    CHECK_MPI(MPI_Info_get_nkeys(early, &nkeys));
    CHECK_INT(1, nkeys, "an info made before MPI_Init keeps its keys");
    CHECK(strcmp(value_of(early_copy, "made"), "before MPI_Init") == 0, "its copy holds its value");
    MPI_Info env_running = MPI_INFO_NULL;
    CHECK_MPI(MPI_Info_create_env(argc, argv, &env_running));
    CHECK(same_entries(env_before, env_running), "MPI_Info_create_env says the same before MPI_Init and after");
    int size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char expected[16];
    snprintf(expected, sizeof expected, "%d", size);
    if (check_on_grappe())
        CHECK(strcmp(value_of(env_before, "maxprocs"), expected) == 0,
              "maxprocs before MPI_Init is the job's size (got \"%s\")", value_of(env_before, "maxprocs"));
    MPI_Info late = MPI_INFO_NULL;
    CHECK_MPI(MPI_Info_create(&late));
    CHECK_MPI(MPI_Info_set(late, "made", "while MPI runs"));
    CHECK_MPI(MPI_Info_free(&early));
    CHECK(early == MPI_INFO_NULL, "MPI_Info_free sets MPI_INFO_NULL");
    int failures = check_report();
    MPI_Finalize();

    MPI_Info env_after = MPI_INFO_NULL;
    CHECK_MPI(MPI_Info_create_env(argc, argv, &env_after));
    CHECK(same_entries(env_before, env_after), "MPI_Info_create_env says the same after MPI_Finalize");
    CHECK(strcmp(value_of(late, "made"), "while MPI runs") == 0,
          "an info made while MPI ran is read after MPI_Finalize");
    MPI_Info late_copy = MPI_INFO_NULL;
    CHECK_MPI(MPI_Info_dup(late, &late_copy));
    CHECK_MPI(MPI_Info_set(late_copy, "made", "after MPI_Finalize"));
    CHECK(strcmp(value_of(late, "made"), "while MPI runs") == 0, "changing a copy leaves the original");
    MPI_Info all[] = {early_copy, env_before, env_running, env_after, late, late_copy};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        CHECK_MPI(MPI_Info_free(&all[i]));
    return failures != 0 || check_failures != 0;
}

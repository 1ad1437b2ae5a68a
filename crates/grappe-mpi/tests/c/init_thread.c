/* MPI_Init_thread, MPI_Query_thread, MPI_Is_thread_main. Each rank asks
 * for a different level (rank % 4: SINGLE, FUNNELED, SERIALIZED,
 * MULTIPLE), as processes of one job may. */
#include "check.h"

static const int levels[4] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE};

int main(int argc, char **argv)
{
    /* Know the rank before MPI_Init_thread: from the launcher's environment
     * when it says it, else level MULTIPLE. The level asked only varies
     * the test; correctness does not depend on it. */
    const char *vars[] = {"PMI_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"};
    int guess = 3;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) {
            guess = atoi(getenv(vars[i])) % 4;
            break;
        }
    int required = levels[guess];
    int provided = -1;
    if (MPI_Init_thread(&argc, &argv, required, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "FAIL init_thread: MPI_Init_thread failed\n");
        return 1;
    }
    check_start("init_thread");

    CHECK(MPI_THREAD_SINGLE < MPI_THREAD_FUNNELED && MPI_THREAD_FUNNELED < MPI_THREAD_SERIALIZED &&
              MPI_THREAD_SERIALIZED < MPI_THREAD_MULTIPLE,
          "the thread levels are ordered");
    CHECK(provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE,
          "MPI_Init_thread(required %d) provided %d is a level", required, provided);

    int queried = -1;
    CHECK_MPI(MPI_Query_thread(&queried));
    CHECK_INT(provided, queried, "MPI_Query_thread after MPI_Init_thread(required %d)", required);

    int is_main = -1;
    CHECK_MPI(MPI_Is_thread_main(&is_main));
    CHECK_INT(1, is_main, "MPI_Is_thread_main on the thread that called MPI_Init_thread");

    int flag = -1;
    CHECK_MPI(MPI_Initialized(&flag));
    CHECK_INT(1, flag, "MPI_Initialized after MPI_Init_thread");

    return check_finish();
}

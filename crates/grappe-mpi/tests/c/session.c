/* MPI 4's sessions, opened between MPI_Init and MPI_Finalize: the process
 * sets mpi://WORLD and mpi://SELF, their groups and the communicators made
 * from them, a session's hints and error handler, a finalized session
 * refused, and MPI_Info_create_env; a communicator of mpi://WORLD made
 * while an idup of MPI_COMM_WORLD is under way at some ranks and not yet
 * started at the others. */
#include "check.h"

static int rank, size;

static int handler_calls, handler_code;
static MPI_Session handler_session;

static void session_handler(MPI_Session *session, int *code, ...)
{
    handler_calls++;
    handler_session = *session;
    handler_code = *code;
}

static int info_value(MPI_Info info, const char *key, char *value)
{
    int flag = 0;
    CHECK_MPI(MPI_Info_get(info, key, MPI_MAX_INFO_VAL, value, &flag));
    return flag;
}

/* The communicator of process set `pset`: its size and ranks, and a sum
 * over it. */
static void communicator_of(MPI_Session session, const char *pset, int expected_size)
{
    MPI_Group group = MPI_GROUP_NULL;
    CHECK_MPI(MPI_Group_from_session_pset(session, pset, &group));
    int group_size = -1, group_rank = -1;
    MPI_Group_size(group, &group_size);
    MPI_Group_rank(group, &group_rank);
    CHECK_INT(expected_size, group_size, "size of %s's group", pset);
    CHECK_INT(expected_size == 1 ? 0 : rank, group_rank, "rank in %s's group", pset);
    MPI_Comm comm = MPI_COMM_NULL;
    CHECK_MPI(MPI_Comm_create_from_group(group, "org.grappe.session-test", MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm));
    int comm_size = -1, sum = -1, one = 1;
    MPI_Comm_size(comm, &comm_size);
    CHECK_INT(expected_size, comm_size, "size of the communicator from %s", pset);
    CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm));
    CHECK_INT(expected_size, sum, "a sum over the communicator from %s", pset);
    CHECK_MPI(MPI_Comm_free(&comm));
    CHECK_MPI(MPI_Group_free(&group));
}

/* The communicator of mpi://WORLD made while an idup of MPI_COMM_WORLD is
 * under way at the odd ranks, which the even ranks start only once it is
 * made (MPI_Comm_create_from_group is not one of MPI_COMM_WORLD's
 * collectives). */
static void world_beside_idup(MPI_Session session)
{
    MPI_Group world = MPI_GROUP_NULL;
    MPI_Comm dup = MPI_COMM_NULL, made = MPI_COMM_NULL;
    MPI_Request request = MPI_REQUEST_NULL;
    CHECK_MPI(MPI_Group_from_session_pset(session, "mpi://WORLD", &world));
    if (rank % 2 == 1)
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &request));
    CHECK_MPI(MPI_Comm_create_from_group(world, "org.grappe.beside-idup", MPI_INFO_NULL, MPI_ERRORS_RETURN, &made));
    if (rank % 2 == 0)
        CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &request));
    CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
    int sum = -1, one = 1;
    CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, made));
    CHECK_INT(size, sum, "a sum over the communicator made beside an idup");
    CHECK_MPI(MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, dup));
    CHECK_INT(size, sum, "a sum over the idup made beside MPI_Comm_create_from_group");
    CHECK_MPI(MPI_Comm_free(&made));
    CHECK_MPI(MPI_Comm_free(&dup));
    MPI_Group_free(&world);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("session");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    MPI_Session session = MPI_SESSION_NULL;
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session));
    CHECK(session != MPI_SESSION_NULL, "MPI_Session_init gives a session");

    /* The process sets, by their names. */
    int npsets = 0, world_seen = 0, self_seen = 0;
    CHECK_MPI(MPI_Session_get_num_psets(session, MPI_INFO_NULL, &npsets));
    CHECK(npsets >= 2, "at least two process sets, got %d", npsets);
    for (int n = 0; n < npsets; n++) {
        int len = 0;
        CHECK_MPI(MPI_Session_get_nth_pset(session, MPI_INFO_NULL, n, &len, NULL));
        char name[MPI_MAX_PSET_NAME_LEN] = "";
        CHECK(len > 1 && len <= MPI_MAX_PSET_NAME_LEN, "process set %d: length %d", n, len);
        CHECK_MPI(MPI_Session_get_nth_pset(session, MPI_INFO_NULL, n, &len, name));
        CHECK_INT((int)strlen(name) + 1, len, "process set %d (%s): length with its NUL", n, name);
        world_seen += strcmp(name, "mpi://WORLD") == 0;
        self_seen += strcmp(name, "mpi://SELF") == 0;
    }
    CHECK_INT(1, world_seen, "mpi://WORLD among the process sets");
    CHECK_INT(1, self_seen, "mpi://SELF among the process sets");

    char value[MPI_MAX_INFO_VAL + 1] = "";
    MPI_Info info = MPI_INFO_NULL;
    CHECK_MPI(MPI_Session_get_pset_info(session, "mpi://WORLD", &info));
    CHECK(info_value(info, "mpi_size", value) && atoi(value) == size, "mpi://WORLD's mpi_size: %s", value);
    CHECK_MPI(MPI_Info_free(&info));
    CHECK_MPI(MPI_Session_get_pset_info(session, "mpi://SELF", &info));
    CHECK(info_value(info, "mpi_size", value) && atoi(value) == 1, "mpi://SELF's mpi_size: %s", value);
    CHECK_MPI(MPI_Info_free(&info));
    CHECK_MPI(MPI_Session_get_info(session, &info));
    CHECK(info_value(info, "thread_level", value), "the session's hints give its thread_level");
    CHECK_MPI(MPI_Info_free(&info));

    communicator_of(session, "mpi://WORLD", size);
    communicator_of(session, "mpi://SELF", 1);
    world_beside_idup(session);

    /* An unknown process set is an error the session's handler returns
     * (MPICH 4.0.2 gives it to the world's handler instead). */
    MPI_Group group = MPI_GROUP_NULL;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Group_from_session_pset(session, "mpi://NO-SUCH-SET", &group);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    CHECK(rc != MPI_SUCCESS, "an unknown process set is an error");

    /* The session's own error handler. */
    MPI_Errhandler errhandler = MPI_ERRHANDLER_NULL, got = MPI_ERRHANDLER_NULL;
    CHECK_MPI(MPI_Session_create_errhandler(session_handler, &errhandler));
    CHECK_MPI(MPI_Session_set_errhandler(session, errhandler));
    CHECK_MPI(MPI_Session_get_errhandler(session, &got));
    CHECK(got == errhandler, "MPI_Session_get_errhandler gives the handler set");
    CHECK_MPI(MPI_Session_call_errhandler(session, MPI_ERR_OTHER));
    CHECK_INT(1, handler_calls, "the session's handler called once");
    CHECK(handler_session == session, "the session's handler gets the session");
    CHECK_INT(MPI_ERR_OTHER, handler_code, "the session's handler gets the code");
    CHECK_MPI(MPI_Errhandler_free(&errhandler));

    MPI_Session kept = session;
    CHECK_MPI(MPI_Session_finalize(&session));
    CHECK(session == MPI_SESSION_NULL, "MPI_Session_finalize gives MPI_SESSION_NULL");
    if (check_on_grappe()) {
        /* MPICH 4.0.2 takes a finalized session's handle as a live one. */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int npsets_after = -1, class = MPI_SUCCESS;
        rc = MPI_Session_get_num_psets(kept, MPI_INFO_NULL, &npsets_after);
        MPI_Error_class(rc, &class);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        CHECK_INT(MPI_ERR_SESSION, class, "a finalized session is refused: error class");
    }

    /* How the program was started (MPICH 4.0.2 gives only thread_level). */
    CHECK_MPI(MPI_Info_create_env(argc, argv, &info));
    if (check_on_grappe())
        CHECK(info_value(info, "maxprocs", value) && atoi(value) == size, "MPI_Info_create_env's maxprocs: %s", value);
    CHECK_MPI(MPI_Info_free(&info));
    return check_finish();
}

/* One-sided communication, checked by every rank.
 *
 *  - windows: MPI_Win_create, MPI_Win_allocate, MPI_Win_create_dynamic with
 *    attach/detach; the attributes MPI_WIN_BASE, _SIZE, _DISP_UNIT,
 *    _CREATE_FLAVOR, _MODEL; names, hints, the group; error handlers
 *    (MPI_ERRORS_ARE_FATAL by default, set, got, a program's handler
 *    called with the window's handle); attributes of the program's keys,
 *    deleted by MPI_Win_free; MPI_Win_free giving MPI_WIN_NULL;
 *  - fence epochs: MPI_Put and MPI_Get between neighbours, with a
 *    displacement unit; MPI_Accumulate of every rank into rank 0 (MPI_SUM,
 *    MPI_MAX, MPI_REPLACE, MPI_BXOR); MPI_Get_accumulate (MPI_SUM and
 *    MPI_NO_OP); MPI_Fetch_and_op counting; MPI_Compare_and_swap where one
 *    rank wins; a strided target datatype (MPI_Type_vector) and a strided
 *    origin one; accesses to oneself and to MPI_PROC_NULL; memory of
 *    MPI_Win_allocate; a dynamic window reached at the addresses its ranks
 *    attached; a struct of mixed elements moved by MPI_Put and MPI_Get
 *    (fence and lock), refused by MPI_Accumulate (MPI_ERR_TYPE) at the
 *    target and at the origin;
 *    accumulates of no element (count 0, or a datatype of no size) with
 *    datatypes that differ, which change nothing;
 *  - general active-target synchronization: MPI_Win_post to the left
 *    neighbour, MPI_Win_start to the right one, MPI_Put, MPI_Get and
 *    MPI_Fetch_and_op, MPI_Win_complete, then MPI_Win_wait or MPI_Win_test,
 *    three rounds; MPI's example of a target receiving, between
 *    MPI_Win_post and MPI_Win_wait, a message its origin sends after
 *    MPI_Win_complete (a 4 MiB put);
 *  - passive target: increments under exclusive locks (MPI_Get, flush,
 *    MPI_Put) and accumulates under shared locks of every rank on rank 0,
 *    which only waits; MPI_Rput and MPI_Rget under MPI_Win_lock_all;
 *    MPI_Win_sync; MPI_Win_create memory under MPI_MODE_NOCHECK;
 *  - a shared-memory window (MPI_Win_allocate_shared): each rank's part
 *    written in place and read by the others where MPI_Win_shared_query
 *    says it is, accumulates to it;
 *  - under MPI_THREAD_MULTIPLE (GRAPPE_MPI_THREAD_LEVEL=multiple): threads
 *    of every rank incrementing one counter under MPI_Win_lock_all;
 *  - errors (returned, the handler set to MPI_ERRORS_RETURN): an access
 *    before any fence and after MPI_MODE_NOSUCCEED (MPI_ERR_RMA_SYNC), a
 *    target rank out of range (MPI_ERR_RANK), an access past the target's
 *    window (MPI_ERR_RMA_RANGE, its message naming the target rank), an
 *    address of a dynamic window where nothing is attached (MPI_ERR_RMA_RANGE
 *    from the fence), a user operation in MPI_Accumulate (MPI_ERR_OP),
 *    MPI_Win_free with accesses not completed (MPI_ERR_RMA_SYNC),
 *    MPI_Win_complete and MPI_Win_wait outside their epochs and an access to
 *    a rank outside MPI_Win_start's group (MPI_ERR_RMA_SYNC), and on
 *    grappe, where it cannot crash, garbage and freed window handles
 *    (MPI_ERR_WIN).
 *
 * It passes on MPICH 4.0.2's own library too (but for the checks marked
 * grappe-only: MPICH checks no ranges, and garbage handles crash it). */
#include "check.h"

#include <pthread.h>

static int rank, size, on_grappe;

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

static int deleted_value = -1;
static int note_delete(MPI_Win win, int keyval, void *value, void *extra)
{
    (void)win, (void)keyval, (void)extra;
    deleted_value = *(int *)value;
    return MPI_SUCCESS;
}

static int handler_calls, handler_code;
static MPI_Win handler_win;
static void win_handler(MPI_Win *win, int *code, ...)
{
    handler_calls++;
    handler_win = *win;
    handler_code = *code;
}

static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

static void windows(void)
{
    int memory[8];
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(memory, sizeof memory, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    void *base = NULL;
    MPI_Aint *win_size = NULL;
    int *unit = NULL, *flavor = NULL, *model = NULL, flag = 0;
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag));
    CHECK(flag && base == memory, "MPI_WIN_BASE is the memory given");
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_SIZE, &win_size, &flag));
    CHECK(flag && *win_size == (MPI_Aint)sizeof memory, "MPI_WIN_SIZE");
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_DISP_UNIT, &unit, &flag));
    CHECK(flag && *unit == (int)sizeof(int), "MPI_WIN_DISP_UNIT");
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag));
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_CREATE, "MPI_WIN_CREATE_FLAVOR");
    CHECK_MPI(MPI_Win_get_attr(win, MPI_WIN_MODEL, &model, &flag));
    CHECK(flag && *model == MPI_WIN_UNIFIED, "MPI_WIN_MODEL");

    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    CHECK_MPI(MPI_Win_set_name(win, "the window"));
    CHECK_MPI(MPI_Win_get_name(win, name, &len));
    CHECK(strcmp(name, "the window") == 0 && len == 10, "the window's name: \"%s\" (%d)", name, len);

    MPI_Group group, world;
    int same = -1;
    CHECK_MPI(MPI_Win_get_group(win, &group));
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_compare(group, world, &same);
    CHECK_INT(MPI_IDENT, same, "the window's group is the world's");
    MPI_Group_free(&group);
    MPI_Group_free(&world);

    MPI_Info info, used;
    MPI_Info_create(&info);
    MPI_Info_set(info, "no_locks", "true");
    CHECK_MPI(MPI_Win_set_info(win, info));
    CHECK_MPI(MPI_Win_get_info(win, &used));
    MPI_Info_free(&info);
    MPI_Info_free(&used);

    MPI_Errhandler eh;
    CHECK_MPI(MPI_Win_get_errhandler(win, &eh));
    CHECK(eh == MPI_ERRORS_ARE_FATAL, "a window's default handler is MPI_ERRORS_ARE_FATAL");
    MPI_Errhandler mine;
    CHECK_MPI(MPI_Win_create_errhandler(win_handler, &mine));
    CHECK_MPI(MPI_Win_set_errhandler(win, mine));
    CHECK_MPI(MPI_Win_call_errhandler(win, MPI_ERR_OTHER));
    CHECK(handler_calls == 1 && handler_win == win && handler_code == MPI_ERR_OTHER,
          "the program's handler is called with the window and the code (%d calls)", handler_calls);
    int rc = MPI_Put(memory, 1, MPI_INT, 0, 0, 1, MPI_INT, win); /* no epoch */
    CHECK(handler_calls == 2 && handler_win == win && rc != MPI_SUCCESS, "a failed MPI_Put calls the window's handler");
    MPI_Errhandler_free(&mine);
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

    int keyval, value = 42;
    CHECK_MPI(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, note_delete, &keyval, NULL));
    CHECK_MPI(MPI_Win_set_attr(win, keyval, &value));
    int *got = NULL;
    CHECK_MPI(MPI_Win_get_attr(win, keyval, &got, &flag));
    CHECK(flag && got == &value, "the program's attribute");
    CHECK_INT(MPI_Win_c2f(win) != 0, 1, "MPI_Win_c2f");
    CHECK(MPI_Win_f2c(MPI_Win_c2f(win)) == win, "MPI_Win_f2c(MPI_Win_c2f(win))");

    CHECK_MPI(MPI_Win_free(&win));
    CHECK(win == MPI_WIN_NULL, "MPI_Win_free gives MPI_WIN_NULL");
    CHECK_INT(42, deleted_value, "MPI_Win_free deletes the attributes");
    MPI_Win_free_keyval(&keyval);
}

static void fence_epochs(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int memory[16];
    for (int i = 0; i < 16; i++)
        memory[i] = -1;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(memory, sizeof memory, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));

    int rc = MPI_Put(&rank, 1, MPI_INT, right, 0, 1, MPI_INT, win);
    CHECK_CLASS(MPI_ERR_RMA_SYNC, rc, "MPI_Put before any fence");

    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOPRECEDE, win));
    int mine = 100 + rank;
    CHECK_MPI(MPI_Put(&mine, 1, MPI_INT, right, 1, 1, MPI_INT, win));
    CHECK_MPI(MPI_Put(&mine, 1, MPI_INT, MPI_PROC_NULL, 1, 1, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_INT(100 + left, memory[1], "MPI_Put from the left neighbour");

    int from_right = -5;
    memory[2] = 200 + rank;
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Get(&from_right, 1, MPI_INT, right, 2, 1, MPI_INT, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_INT(200 + right, from_right, "MPI_Get from the right neighbour");

    /* Accumulates of every rank into rank 0. */
    if (rank == 0) {
        memory[3] = 0, memory[4] = -1000, memory[5] = 0, memory[6] = 0;
    }
    CHECK_MPI(MPI_Win_fence(0, win));
    int one = rank + 1, bits = 1 << rank;
    CHECK_MPI(MPI_Accumulate(&one, 1, MPI_INT, 0, 3, 1, MPI_INT, MPI_SUM, win));
    CHECK_MPI(MPI_Accumulate(&one, 1, MPI_INT, 0, 4, 1, MPI_INT, MPI_MAX, win));
    CHECK_MPI(MPI_Accumulate(&bits, 1, MPI_INT, 0, 5, 1, MPI_INT, MPI_BXOR, win));
    if (rank == size - 1)
        CHECK_MPI(MPI_Accumulate(&one, 1, MPI_INT, 0, 6, 1, MPI_INT, MPI_REPLACE, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    if (rank == 0) {
        CHECK_INT(size * (size + 1) / 2, memory[3], "MPI_SUM of every rank");
        CHECK_INT(size, memory[4], "MPI_MAX of every rank");
        CHECK_INT((1 << size) - 1, memory[5], "MPI_BXOR of every rank");
        CHECK_INT(size, memory[6], "MPI_REPLACE");
    }

    /* A counter: each rank fetches a distinct value. */
    if (rank == 0)
        memory[7] = 0;
    CHECK_MPI(MPI_Win_fence(0, win));
    int inc = 1, fetched = -1, seen = -1, nothing = 0;
    CHECK_MPI(MPI_Fetch_and_op(&inc, &fetched, MPI_INT, 0, 7, MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Get_accumulate(&nothing, 0, MPI_INT, &seen, 1, MPI_INT, 0, 7, 1, MPI_INT, MPI_NO_OP, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(fetched >= 0 && fetched < size, "MPI_Fetch_and_op fetched %d", fetched);
    CHECK_INT(size, seen, "the counter after every rank's MPI_Fetch_and_op");
    int fetches[64];
    MPI_Allgather(&fetched, 1, MPI_INT, fetches, 1, MPI_INT, MPI_COMM_WORLD);
    int total = 0;
    for (int i = 0; i < size; i++)
        total += fetches[i];
    CHECK_INT(size * (size - 1) / 2, total, "each rank fetched a distinct count");

    /* Compare and swap: one rank wins. */
    if (rank == 0)
        memory[8] = -1;
    CHECK_MPI(MPI_Win_fence(0, win));
    int expected = -1, old = -7;
    CHECK_MPI(MPI_Compare_and_swap(&rank, &expected, &old, MPI_INT, 0, 8, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    int wins = old == -1, winners = 0;
    MPI_Allreduce(&wins, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK_INT(1, winners, "one rank's MPI_Compare_and_swap found -1");
    if (rank == 0)
        CHECK(memory[8] >= 0 && memory[8] < size, "the winner's rank was swapped in: %d", memory[8]);

    /* Get_accumulate with MPI_SUM: the value before. */
    if (rank == 0)
        memory[9] = 10;
    CHECK_MPI(MPI_Win_fence(0, win));
    int before = -1;
    if (rank == 0)
        CHECK_MPI(MPI_Get_accumulate(&inc, 1, MPI_INT, &before, 1, MPI_INT, 0, 9, 1, MPI_INT, MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    if (rank == 0) {
        CHECK_INT(10, before, "MPI_Get_accumulate's result is the value before");
        CHECK_INT(11, memory[9], "MPI_Get_accumulate's sum");
    }

    /* An access of no element: any operation goes (mpi4py does this). */
    char none = 0, none_back = 0;
    CHECK_MPI(MPI_Get_accumulate(&none, 0, MPI_BYTE, &none_back, 0, MPI_BYTE, rank, 0, 0, MPI_BYTE, MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(0, win));

    /* Strided: 3 ints into every other slot 10, 12, 14 of the right
     * neighbour, read back from the left one through a strided origin. */
    MPI_Datatype every_other;
    MPI_Type_vector(3, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int three[3] = {rank * 10 + 1, rank * 10 + 2, rank * 10 + 3};
    CHECK_MPI(MPI_Put(three, 3, MPI_INT, right, 10, 1, every_other, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(memory[10] == left * 10 + 1 && memory[12] == left * 10 + 2 && memory[14] == left * 10 + 3
              && memory[11] == -1 && memory[13] == -1,
          "a strided target datatype: %d %d %d %d %d", memory[10], memory[11], memory[12], memory[13], memory[14]);
    int spread[5] = {0, -2, 0, -2, 0};
    CHECK_MPI(MPI_Get(spread, 1, every_other, rank, 10, 1, every_other, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(spread[0] == memory[10] && spread[2] == memory[12] && spread[4] == memory[14] && spread[1] == -2,
          "a strided origin datatype on oneself: %d %d %d %d %d", spread[0], spread[1], spread[2], spread[3], spread[4]);
    MPI_Type_free(&every_other);

    /* Errors. */
    rc = MPI_Put(&mine, 1, MPI_INT, size, 0, 1, MPI_INT, win);
    CHECK_CLASS(MPI_ERR_RANK, rc, "MPI_Put to rank %d", size);
    /* MPICH does not check ranges: the accesses would reach past the memory. */
    if (on_grappe) {
        rc = MPI_Put(&mine, 1, MPI_INT, right, 16, 1, MPI_INT, win);
        CHECK_CLASS(MPI_ERR_RMA_RANGE, rc, "MPI_Put past the window");
        char want[32];
        snprintf(want, sizeof want, "target rank %d", right);
        check_message(rc, want, "MPI_Put");
        rc = MPI_Get(&mine, 2, MPI_INT, right, 15, 2, MPI_INT, win);
        CHECK_CLASS(MPI_ERR_RMA_RANGE, rc, "MPI_Get reaching past the window");
    }
    MPI_Op user;
    MPI_Op_create(user_sum, 1, &user);
    rc = MPI_Accumulate(&one, 1, MPI_INT, 0, 3, 1, MPI_INT, user, win);
    CHECK_CLASS(MPI_ERR_OP, rc, "MPI_Accumulate with a user operation");
    MPI_Op_free(&user);
    if (on_grappe) {
        /* A handle of no window has no handler of its own: the world's applies. */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        rc = MPI_Put(&mine, 1, MPI_INT, right, 0, 1, MPI_INT, (MPI_Win)0x12345);
        CHECK_CLASS(MPI_ERR_WIN, rc, "MPI_Put on a garbage window handle");
        MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
        /* An access not completed blocks MPI_Win_free. */
        CHECK_MPI(MPI_Put(&mine, 1, MPI_INT, right, 0, 1, MPI_INT, win));
        rc = MPI_Win_free(&win);
        CHECK_CLASS(MPI_ERR_RMA_SYNC, rc, "MPI_Win_free with an access not completed");
    }
    CHECK_MPI(MPI_Win_fence(MPI_MODE_NOSUCCEED, win));
    rc = MPI_Put(&mine, 1, MPI_INT, right, 0, 1, MPI_INT, win);
    CHECK_CLASS(MPI_ERR_RMA_SYNC, rc, "MPI_Put after MPI_MODE_NOSUCCEED");
    MPI_Win freed = win;
    CHECK_MPI(MPI_Win_free(&win));
    if (on_grappe) {
        rc = MPI_Win_fence(0, freed);
        CHECK_CLASS(MPI_ERR_WIN, rc, "MPI_Win_fence on a freed window");
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    }
}

static void allocated(void)
{
    double *memory = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(4 * sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_WORLD, &memory, &win));
    CHECK(memory != NULL, "MPI_Win_allocate gives memory");
    void *base = NULL;
    int *flavor = NULL, flag = 0;
    MPI_Win_get_attr(win, MPI_WIN_BASE, &base, &flag);
    CHECK(base == memory, "MPI_WIN_BASE is the memory allocated");
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_ALLOCATE, "MPI_WIN_FLAVOR_ALLOCATE");
    for (int i = 0; i < 4; i++)
        memory[i] = rank;
    CHECK_MPI(MPI_Win_fence(0, win));
    double value = rank + 0.5;
    CHECK_MPI(MPI_Accumulate(&value, 1, MPI_DOUBLE, 0, 3, 1, MPI_DOUBLE, MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    if (rank == 0)
        CHECK_DBL(size * (size - 1) / 2.0 + size * 0.5, memory[3], 1e-9, "MPI_SUM on doubles");
    CHECK_MPI(MPI_Win_free(&win));
}

static void dynamic(void)
{
    MPI_Win win;
    CHECK_MPI(MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    long region[4] = {0, 0, 0, 0};
    CHECK_MPI(MPI_Win_attach(win, region, sizeof region));
    MPI_Aint mine, all[64];
    MPI_Get_address(region, &mine);
    MPI_Allgather(&mine, 1, MPI_AINT, all, 1, MPI_AINT, MPI_COMM_WORLD);
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    CHECK_MPI(MPI_Win_fence(0, win));
    long value = 1000 + rank;
    CHECK_MPI(MPI_Put(&value, 1, MPI_LONG, right, all[right] + sizeof(long), 1, MPI_LONG, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK(region[1] == 1000 + left, "MPI_Put into a dynamic window at the address attached: %ld", region[1]);
    if (on_grappe) {
        CHECK_MPI(MPI_Put(&value, 1, MPI_LONG, right, all[right] + sizeof region, 1, MPI_LONG, win));
        int rc = MPI_Win_fence(0, win);
        CHECK_CLASS(MPI_ERR_RMA_RANGE, rc, "MPI_Put past the memory attached, reported by the fence");
        CHECK_MPI(MPI_Win_fence(0, win));
    }
    /* Passive target on the memory attached. */
    value = 2000 + rank;
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    CHECK_MPI(MPI_Put(&value, 1, MPI_LONG, right, all[right] + 2 * sizeof(long), 1, MPI_LONG, win));
    if (on_grappe) {
        int rc = MPI_Put(&value, 1, MPI_LONG, right, all[right] + sizeof region, 1, MPI_LONG, win);
        CHECK_CLASS(MPI_ERR_RMA_RANGE, rc, "MPI_Put under a lock past the memory attached");
    }
    CHECK_MPI(MPI_Win_unlock(right, win));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(region[2] == 2000 + left, "MPI_Put under a lock into a dynamic window: %ld", region[2]);
    CHECK_MPI(MPI_Win_detach(win, region));
    CHECK_MPI(MPI_Win_free(&win));
}

/* A target datatype of mixed elements (a struct of an MPI_AINT, an
 * MPI_INT and MPI_CHARs, as a linked list's node): MPI_Put and MPI_Get
 * move it under a fence and under a lock; MPI_Accumulate, which combines
 * elements of one predefined datatype, refuses it. */
struct node {
    MPI_Aint next;
    int owner;
    char key[12];
};

static MPI_Datatype node_type(void)
{
    struct node sample;
    int lens[3] = {1, 1, sizeof sample.key};
    MPI_Aint at[3], start;
    MPI_Datatype parts[3] = {MPI_AINT, MPI_INT, MPI_CHAR}, type, resized;
    MPI_Get_address(&sample, &start);
    MPI_Get_address(&sample.next, &at[0]);
    MPI_Get_address(&sample.owner, &at[1]);
    MPI_Get_address(sample.key, &at[2]);
    for (int i = 0; i < 3; i++)
        at[i] -= start;
    MPI_Type_create_struct(3, lens, at, parts, &type);
    MPI_Type_create_resized(type, 0, sizeof sample, &resized);
    MPI_Type_free(&type);
    MPI_Type_commit(&resized);
    return resized;
}

static void check_node(const struct node *node, int from, const char *how)
{
    char key[12];
    snprintf(key, sizeof key, "node %d", from);
    CHECK(node->next == 1000 + from && node->owner == from && strcmp(node->key, key) == 0,
          "%s moves a struct of mixed elements: next %ld owner %d key \"%.11s\"", how, (long) node->next,
          node->owner, node->key);
}

static void mixed_elements(void)
{
    MPI_Datatype type = node_type();
    struct node mine = {1000 + rank, rank, ""}, got[2], exposed[2];
    snprintf(mine.key, sizeof mine.key, "node %d", rank);
    memset(got, 0, sizeof got);
    memset(exposed, 0, sizeof exposed);
    exposed[1] = mine;
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(exposed, sizeof exposed, sizeof(struct node), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Put(&mine, 1, type, right, 0, 1, type, win));
    CHECK_MPI(MPI_Get(&got[0], 1, type, left, 1, 1, type, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    check_node(&exposed[0], left, "MPI_Put under a fence");
    check_node(&got[0], left, "MPI_Get under a fence");
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, right, 0, win));
    CHECK_MPI(MPI_Get(&got[1], 1, type, right, 1, 1, type, win));
    CHECK_MPI(MPI_Win_unlock(right, win));
    check_node(&got[1], right, "MPI_Get under a lock");
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, right, 0, win));
    if (on_grappe) {
        int rc = MPI_Accumulate(&mine, 1, type, right, 0, 1, type, MPI_REPLACE, win);
        CHECK_CLASS(MPI_ERR_TYPE, rc, "MPI_Accumulate of a struct of mixed elements");
        check_message(rc, "not made of one predefined datatype", "MPI_Accumulate");
        /* Mixed elements at the origin only, as many bytes as the target's. */
        int lens[2] = {1, 1};
        MPI_Aint at[2] = {0, sizeof(int)};
        MPI_Datatype parts[2] = {MPI_INT, MPI_FLOAT}, int_float;
        MPI_Type_create_struct(2, lens, at, parts, &int_float);
        MPI_Type_commit(&int_float);
        int pair[2] = {1, 2};
        rc = MPI_Accumulate(pair, 1, int_float, right, 0, 2, MPI_INT, MPI_SUM, win);
        CHECK_CLASS(MPI_ERR_TYPE, rc, "MPI_Accumulate from a struct of an MPI_INT and an MPI_FLOAT");
        check_message(rc, "origin datatype", "MPI_Accumulate");
        MPI_Type_free(&int_float);
    }
    CHECK_MPI(MPI_Win_unlock(right, win));
    CHECK_MPI(MPI_Win_free(&win));
    MPI_Type_free(&type);
}

/* Accesses of no element: MPI_Accumulate and MPI_Get_accumulate of zero
 * elements, or of elements of no size, combine nothing, whatever the
 * datatypes on either side (as on MPICH); of one element they must agree. */
static void zero_elements(void)
{
    int exposed[4] = {7, 7, 7, 7}, origin[4] = {1, 2, 3, 4}, result[4] = {0, 0, 0, 0};
    MPI_Datatype empty;
    MPI_Type_contiguous(0, MPI_INT, &empty);
    MPI_Type_commit(&empty);
    int right = (rank + 1) % size;
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(exposed, sizeof exposed, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Accumulate(origin, 0, MPI_INT, right, 0, 0, MPI_DOUBLE, MPI_SUM, win));
    CHECK_MPI(MPI_Accumulate(origin, 1, empty, right, 0, 2, empty, MPI_PROD, win));
    CHECK_MPI(MPI_Get_accumulate(origin, 0, MPI_DOUBLE, result, 0, MPI_INT, right, 1, 0, MPI_FLOAT, MPI_SUM, win));
    CHECK_MPI(MPI_Get_accumulate(NULL, 0, MPI_INT, NULL, 1, empty, right, 2, 1, empty, MPI_MAX, win));
    if (on_grappe) {
        int rc = MPI_Accumulate(origin, 1, MPI_INT, right, 0, 1, MPI_FLOAT, MPI_SUM, win);
        CHECK_CLASS(MPI_ERR_TYPE, rc, "MPI_Accumulate of an MPI_INT onto an MPI_FLOAT");
        check_message(rc, "differ", "MPI_Accumulate");
    }
    CHECK_MPI(MPI_Win_fence(0, win));
    for (int i = 0; i < 4; i++)
        CHECK(exposed[i] == 7 && result[i] == 0, "accesses of no element change nothing: [%d] %d, result %d", i,
              exposed[i], result[i]);
    CHECK_MPI(MPI_Win_free(&win));
    MPI_Type_free(&empty);
}

/* General active-target synchronization: each rank exposes its memory to
 * its left neighbour and accesses its right one. */
static void pscw(void)
{
    int right = (rank + 1) % size, left = (rank + size - 1) % size;
    int memory[4] = {-1, 300 + rank, -1, -1};
    MPI_Win win;
    CHECK_MPI(MPI_Win_create(memory, sizeof memory, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    MPI_Group world, to_left, to_right;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &left, &to_left);
    MPI_Group_incl(world, 1, &right, &to_right);

    int rc = MPI_Win_complete(win);
    CHECK_CLASS(MPI_ERR_RMA_SYNC, rc, "MPI_Win_complete without MPI_Win_start");
    rc = MPI_Win_wait(win);
    CHECK_CLASS(MPI_ERR_RMA_SYNC, rc, "MPI_Win_wait without MPI_Win_post");

    for (int round = 0; round < 3; round++) {
        CHECK_MPI(MPI_Win_post(to_left, 0, win));
        CHECK_MPI(MPI_Win_start(to_right, 0, win));
        int value = 1000 * round + rank, got = -5, counted = -5, one = 1;
        CHECK_MPI(MPI_Put(&value, 1, MPI_INT, right, 0, 1, MPI_INT, win));
        CHECK_MPI(MPI_Get(&got, 1, MPI_INT, right, 1, 1, MPI_INT, win));
        CHECK_MPI(MPI_Fetch_and_op(&one, &counted, MPI_INT, right, 1, MPI_SUM, win));
        if (on_grappe && size > 2) {
            rc = MPI_Put(&value, 1, MPI_INT, left, 0, 1, MPI_INT, win);
            CHECK_CLASS(MPI_ERR_RMA_SYNC, rc, "MPI_Put to a rank outside MPI_Win_start's group");
        }
        CHECK_MPI(MPI_Win_complete(win));
        CHECK_INT(300 + right + round, got, "MPI_Get in round %d of post/start/complete/wait", round);
        CHECK_INT(300 + right + round, counted, "MPI_Fetch_and_op after MPI_Get in round %d", round);
        if (round == 1) {
            int flag = 0;
            while (!flag)
                CHECK_MPI(MPI_Win_test(win, &flag));
        } else {
            CHECK_MPI(MPI_Win_wait(win));
        }
        CHECK_INT(1000 * round + left, memory[0], "MPI_Put from the left neighbour in round %d", round);
        CHECK_INT(300 + rank + round + 1, memory[1], "the left neighbour's MPI_Fetch_and_op in round %d", round);
    }
    /* Rank 0 puts to every other rank, which only waits in barriers:
     * MPI_Win_complete of accesses that read nothing needs no target. */
    if (size > 1) {
        MPI_Group others, zero;
        int first = 0;
        MPI_Group_excl(world, 1, &first, &others);
        MPI_Group_incl(world, 1, &first, &zero);
        int flag = -1, value = 4242;
        if (rank == 0) {
            CHECK_MPI(MPI_Win_start(others, 0, win));
            for (int r = 1; r < size; r++)
                CHECK_MPI(MPI_Put(&value, 1, MPI_INT, r, 2, 1, MPI_INT, win));
            MPI_Barrier(MPI_COMM_WORLD);
            CHECK_MPI(MPI_Win_complete(win));
            MPI_Barrier(MPI_COMM_WORLD);
        } else {
            CHECK_MPI(MPI_Win_post(zero, 0, win));
            CHECK_MPI(MPI_Win_test(win, &flag));
            CHECK_INT(0, flag, "MPI_Win_test before the origin's MPI_Win_complete");
            MPI_Barrier(MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            CHECK_MPI(MPI_Win_wait(win));
            CHECK_INT(4242, memory[2], "MPI_Put of an origin that completed while this rank waited in barriers");
        }
        MPI_Group_free(&others);
        MPI_Group_free(&zero);
    }
    MPI_Group_free(&to_left);
    MPI_Group_free(&to_right);
    MPI_Group_free(&world);
    CHECK_MPI(MPI_Win_free(&win));
}

/* MPI's example of general active-target synchronization where the
 * target receives a message between MPI_Win_post and MPI_Win_wait, sent
 * by the origin after its MPI_Win_complete: the origin's MPI_Win_complete
 * must not wait for the target to take its accesses (4 MiB, more than a
 * message sent eagerly). */
static void pscw_message_before_wait(void)
{
    enum { N = 1 << 20 };
    int *exposed = calloc(N, sizeof(int)), *data = malloc(N * sizeof(int)), *message = malloc(N * sizeof(int));
    for (int i = 0; i < N; i++) {
        data[i] = i;
        message[i] = -i;
    }
    MPI_Comm pair;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2, rank, &pair);
    if (rank < 2 && size >= 2) {
        MPI_Win win;
        MPI_Group whole, other;
        int peer = 1 - rank;
        CHECK_MPI(MPI_Win_create(exposed, rank == 1 ? N * sizeof(int) : 0, sizeof(int), MPI_INFO_NULL, pair, &win));
        MPI_Comm_group(pair, &whole);
        MPI_Group_incl(whole, 1, &peer, &other);
        if (rank == 0) {
            CHECK_MPI(MPI_Win_start(other, 0, win));
            CHECK_MPI(MPI_Put(data, N, MPI_INT, 1, 0, N, MPI_INT, win));
            CHECK_MPI(MPI_Win_complete(win));
            CHECK_MPI(MPI_Send(message, N, MPI_INT, 1, 68, pair));
        } else {
            CHECK_MPI(MPI_Win_post(other, 0, win));
            CHECK_MPI(MPI_Recv(data, N, MPI_INT, 0, 68, pair, MPI_STATUS_IGNORE));
            CHECK_MPI(MPI_Win_wait(win));
            int wrong = 0;
            for (int i = 0; i < N; i++)
                wrong += exposed[i] != i || data[i] != -i;
            CHECK(wrong == 0, "the put and the message sent after MPI_Win_complete both arrive: %d wrong", wrong);
        }
        MPI_Group_free(&other);
        MPI_Group_free(&whole);
        CHECK_MPI(MPI_Win_free(&win));
    }
    MPI_Comm_free(&pair);
    free(exposed);
    free(data);
    free(message);
}

/* Passive target: rank 0's memory, reached by every rank while rank 0
 * only waits in a barrier. */
static void passive(void)
{
    int *counter = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &counter, &win));
    CHECK_MPI(MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN));
    counter[0] = counter[1] = counter[2] = counter[3] = 0;
    MPI_Barrier(MPI_COMM_WORLD);

    /* Exclusive locks: a read and a write that no other rank comes between. */
    enum { ROUNDS = 40 };
    for (int i = 0; i < ROUNDS; i++) {
        int value = -1;
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win));
        CHECK_MPI(MPI_Get(&value, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_flush(0, win));
        value++;
        CHECK_MPI(MPI_Put(&value, 1, MPI_INT, 0, 0, 1, MPI_INT, win));
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    /* Shared locks: accumulates are atomic per element. */
    int one = 1, before = -1;
    for (int i = 0; i < ROUNDS; i++) {
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        CHECK_MPI(MPI_Accumulate(&one, 1, MPI_INT, 0, 1, 1, MPI_INT, MPI_SUM, win));
        CHECK_MPI(MPI_Fetch_and_op(&one, &before, MPI_INT, 0, 2, MPI_SUM, win));
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    /* Request-based accesses under MPI_Win_lock_all. */
    CHECK_MPI(MPI_Win_lock_all(0, win));
    MPI_Request requests[2];
    int mine = 500 + rank, back = -1;
    CHECK_MPI(MPI_Rput(&mine, 1, MPI_INT, (rank + 1) % size, 3, 1, MPI_INT, win, &requests[0]));
    CHECK_MPI(MPI_Wait(&requests[0], MPI_STATUS_IGNORE));
    CHECK_MPI(MPI_Win_flush_all(win));
    CHECK_MPI(MPI_Rget(&back, 1, MPI_INT, (rank + 1) % size, 3, 1, MPI_INT, win, &requests[1]));
    CHECK_MPI(MPI_Wait(&requests[1], MPI_STATUS_IGNORE));
    CHECK(back >= 500 && back < 500 + size, "MPI_Rget under MPI_Win_lock_all: %d", back);
    CHECK_MPI(MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank, 0, win));
    CHECK_MPI(MPI_Win_sync(win));
    if (rank == 0) {
        CHECK_INT(ROUNDS * size, counter[0], "increments under exclusive locks");
        CHECK_INT(ROUNDS * size, counter[1], "MPI_Accumulate under shared locks");
        CHECK_INT(ROUNDS * size, counter[2], "MPI_Fetch_and_op under shared locks");
    }
    CHECK_INT(500 + (rank + size - 1) % size, counter[3], "MPI_Rput from the left neighbour");
    CHECK_MPI(MPI_Win_unlock(rank, win));

    /* Misuse. */
    int rc = MPI_Win_unlock(0, win);
    CHECK_CLASS(MPI_ERR_RMA_SYNC, rc, "MPI_Win_unlock without MPI_Win_lock");
    rc = MPI_Win_flush(0, win);
    CHECK_CLASS(MPI_ERR_RMA_SYNC, rc, "MPI_Win_flush without MPI_Win_lock");
    rc = MPI_Put(&mine, 1, MPI_INT, 0, 0, 1, MPI_INT, win);
    CHECK_CLASS(MPI_ERR_RMA_SYNC, rc, "MPI_Put without any epoch");
    if (on_grappe) {
        rc = MPI_Win_lock(MPI_LOCK_SHARED, size, 0, win);
        CHECK_CLASS(MPI_ERR_RANK, rc, "MPI_Win_lock on rank %d", size);
        CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win));
        rc = MPI_Put(&mine, 1, MPI_INT, 0, 4, 1, MPI_INT, win);
        CHECK_CLASS(MPI_ERR_RMA_RANGE, rc, "MPI_Put past the window under a lock");
        rc = MPI_Win_free(&win);
        CHECK_CLASS(MPI_ERR_RMA_SYNC, rc, "MPI_Win_free under a lock");
        CHECK_MPI(MPI_Win_unlock(0, win));
    }
    CHECK_MPI(MPI_Win_free(&win));

    /* Memory of MPI_Win_create, reached the same way. */
    long memory[2] = {0, 0};
    CHECK_MPI(MPI_Win_create(memory, sizeof memory, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    long add = rank + 1;
    CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, size - 1, MPI_MODE_NOCHECK, win));
    CHECK_MPI(MPI_Accumulate(&add, 1, MPI_LONG, size - 1, sizeof(long), 1, MPI_LONG, MPI_SUM, win));
    CHECK_MPI(MPI_Win_unlock(size - 1, win));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == size - 1)
        CHECK(memory[1] == (long)size * (size + 1) / 2, "MPI_Accumulate into MPI_Win_create memory: %ld", memory[1]);
    CHECK_MPI(MPI_Win_free(&win));
}

/* A shared-memory window: each rank writes its part, and reads the
 * others' where MPI_Win_shared_query says they are. */
static void shared(void)
{
    int *mine = NULL;
    MPI_Win win;
    CHECK_MPI(MPI_Win_allocate_shared((rank + 1) * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mine, &win));
    int *flavor = NULL, flag = 0;
    MPI_Win_get_attr(win, MPI_WIN_CREATE_FLAVOR, &flavor, &flag);
    CHECK(flag && *flavor == MPI_WIN_FLAVOR_SHARED, "MPI_WIN_FLAVOR_SHARED");
    CHECK_MPI(MPI_Win_lock_all(0, win));
    for (int i = 0; i <= rank; i++)
        mine[i] = 100 * rank + i;
    CHECK_MPI(MPI_Win_sync(win));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_sync(win));
    for (int r = 0; r < size; r++) {
        MPI_Aint bytes = -1;
        int unit = -1, *theirs = NULL;
        CHECK_MPI(MPI_Win_shared_query(win, r, &bytes, &unit, &theirs));
        CHECK(bytes == (MPI_Aint)((r + 1) * sizeof(int)) && unit == (int)sizeof(int), "rank %d's part: %ld bytes", r, (long)bytes);
        for (int i = 0; i <= r && theirs; i++)
            CHECK_INT(100 * r + i, theirs[i], "rank %d's element %d, read in shared memory", r, i);
    }
    int *first = NULL;
    MPI_Aint bytes = -1;
    int unit = -1;
    CHECK_MPI(MPI_Win_shared_query(win, MPI_PROC_NULL, &bytes, &unit, &first));
    CHECK(first != NULL && first[0] == 0, "MPI_PROC_NULL's part is rank 0's");
    CHECK_MPI(MPI_Win_unlock_all(win));
    /* RMA on it too. */
    CHECK_MPI(MPI_Win_fence(0, win));
    int value = 7;
    CHECK_MPI(MPI_Accumulate(&value, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win));
    CHECK_MPI(MPI_Win_fence(0, win));
    if (rank == 0)
        CHECK_INT(7 * size, mine[0], "MPI_Accumulate into a shared-memory window");
    CHECK_MPI(MPI_Win_free(&win));
}

/* Threads of every rank counting on rank 0 under one MPI_Win_lock_all
 * (MPI_THREAD_MULTIPLE): each increment is atomic. */
enum { THREADS = 4, INCREMENTS = 50 };
static MPI_Win threads_win;
static void *counting(void *arg)
{
    (void)arg;
    int one = 1, before = -1;
    for (int i = 0; i < INCREMENTS; i++) {
        CHECK_MPI(MPI_Fetch_and_op(&one, &before, MPI_INT, 0, 0, MPI_SUM, threads_win));
        CHECK_MPI(MPI_Accumulate(&one, 1, MPI_INT, 0, 1, 1, MPI_INT, MPI_SUM, threads_win));
    }
    return NULL;
}

static void threads(void)
{
    int provided;
    MPI_Query_thread(&provided);
    if (provided != MPI_THREAD_MULTIPLE)
        return;
    int *counter = NULL;
    CHECK_MPI(MPI_Win_allocate(2 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &counter, &threads_win));
    counter[0] = counter[1] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK_MPI(MPI_Win_lock_all(0, threads_win));
    pthread_t workers[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&workers[t], NULL, counting, NULL);
    for (int t = 0; t < THREADS; t++)
        pthread_join(workers[t], NULL);
    CHECK_MPI(MPI_Win_unlock_all(threads_win));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        CHECK_INT(size * THREADS * INCREMENTS, counter[0], "MPI_Fetch_and_op from %d threads of every rank", THREADS);
        CHECK_INT(size * THREADS * INCREMENTS, counter[1], "MPI_Accumulate from %d threads of every rank", THREADS);
    }
    CHECK_MPI(MPI_Win_free(&threads_win));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("rma");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(version, &len);
    on_grappe = strstr(version, "grappe") != NULL;

    windows();
    fence_epochs();
    allocated();
    dynamic();
    mixed_elements();
    zero_elements();
    pscw();
    pscw_message_before_wait();
    passive();
    shared();
    threads();
    return check_finish();
}

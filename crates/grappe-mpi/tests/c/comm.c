/* Communicators and groups: MPI_Comm_dup (traffic on the copy is
 * independent), MPI_Comm_idup and MPI_Comm_dup_with_info (attributes
 * copied by their keys' callbacks), MPI_Comm_split (colors, keys that reverse the order, equal
 * keys that keep it, MPI_UNDEFINED), MPI_Comm_compare, MPI_Comm_free,
 * MPI_Comm_group and the group calls (size, rank, incl, excl,
 * translate_ranks, union, intersection, difference, compare, free),
 * MPI_Comm_create (with disjoint groups too), MPI_Comm_create_group (called by the group's members
 * only, while the others exchange messages), MPI_Comm_set_name/
 * MPI_Comm_get_name, and the MPI_TAG_UB attribute. Runs on any number of ranks. */
#include "check.h"

static int rank, size, left, right;

static void dup_is_independent(void)
{
    MPI_Comm dup = MPI_COMM_NULL;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    int dup_size = -1, dup_rank = -1, result = -1;
    MPI_Comm_size(dup, &dup_size);
    MPI_Comm_rank(dup, &dup_rank);
    CHECK_INT(size, dup_size, "MPI_Comm_size of a duplicate of MPI_COMM_WORLD");
    CHECK_INT(rank, dup_rank, "MPI_Comm_rank in a duplicate of MPI_COMM_WORLD");
    CHECK_MPI(MPI_Comm_compare(MPI_COMM_WORLD, dup, &result));
    CHECK_INT(MPI_CONGRUENT, result, "MPI_Comm_compare(MPI_COMM_WORLD, its duplicate)");

    /* Same peers, same tag, two communicators: each receive only sees its
     * own communicator's message, whatever the order. */
    int on_dup = 1000 + rank, on_world = 2000 + rank, got = -1;
    MPI_Request reqs[2];
    CHECK_MPI(MPI_Isend(&on_dup, 1, MPI_INT, right, 5, dup, &reqs[0]));
    CHECK_MPI(MPI_Isend(&on_world, 1, MPI_INT, right, 5, MPI_COMM_WORLD, &reqs[1]));
    MPI_Status status;
    check_preset_status(&status);
    CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, left, MPI_ANY_TAG, MPI_COMM_WORLD, &status));
    CHECK_INT(2000 + left, got, "message received on MPI_COMM_WORLD while one waits on its duplicate");
    CHECK_STATUS(&status, left, 5, MPI_INT, 1, "receive on MPI_COMM_WORLD");
    check_preset_status(&status);
    CHECK_MPI(MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, dup, &status));
    CHECK_INT(1000 + left, got, "message received on the duplicate");
    CHECK_STATUS(&status, left, 5, MPI_INT, 1, "receive on the duplicate");
    CHECK_MPI(MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE));

    /* A duplicate of the duplicate, with a collective on each. */
    MPI_Comm dup2 = MPI_COMM_NULL;
    CHECK_MPI(MPI_Comm_dup(dup, &dup2));
    int sum = 0;
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, dup2));
    CHECK_INT(size * (size - 1) / 2, sum, "MPI_Allreduce on a duplicate of a duplicate");
    CHECK_MPI(MPI_Comm_compare(dup, dup2, &result));
    CHECK_INT(MPI_CONGRUENT, result, "MPI_Comm_compare(duplicate, its duplicate)");

    CHECK_MPI(MPI_Comm_free(&dup2));
    CHECK_INT(MPI_COMM_NULL, dup2, "MPI_Comm_free sets MPI_COMM_NULL");
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_INT(MPI_COMM_NULL, dup, "MPI_Comm_free sets MPI_COMM_NULL");
}

static int copies_made;

static int count_copy(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm, (void)keyval, (void)extra;
    copies_made++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

/* MPI_Comm_idup (completed by MPI_Wait) and MPI_Comm_dup_with_info give
 * congruent communicators that carry the attributes their keys copy. */
static void idup_and_dup_with_info(void)
{
    int keyval, value = 42, *got = NULL, flag = 0, result = -1;
    CHECK_MPI(MPI_Comm_create_keyval(count_copy, MPI_COMM_NULL_DELETE_FN, &keyval, NULL));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_WORLD, keyval, &value));
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Request request;
    CHECK_MPI(MPI_Comm_idup(MPI_COMM_WORLD, &dup, &request));
    CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
    CHECK_INT(MPI_REQUEST_NULL, request, "MPI_Wait frees the request of MPI_Comm_idup");
    CHECK_MPI(MPI_Comm_compare(MPI_COMM_WORLD, dup, &result));
    CHECK_INT(MPI_CONGRUENT, result, "MPI_Comm_compare(MPI_COMM_WORLD, its MPI_Comm_idup)");
    int sum = 0;
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, dup));
    CHECK_INT(size * (size - 1) / 2, sum, "MPI_Allreduce on the communicator of MPI_Comm_idup");
    CHECK_MPI(MPI_Comm_get_attr(dup, keyval, &got, &flag));
    CHECK_INT(1, flag && got == &value, "MPI_Comm_idup copies the attribute");

    MPI_Info info;
    CHECK_MPI(MPI_Info_create(&info));
    MPI_Comm with_info = MPI_COMM_NULL;
    CHECK_MPI(MPI_Comm_dup_with_info(dup, info, &with_info));
    CHECK_MPI(MPI_Info_free(&info));
    CHECK_MPI(MPI_Comm_compare(dup, with_info, &result));
    CHECK_INT(MPI_CONGRUENT, result, "MPI_Comm_compare(a communicator, its MPI_Comm_dup_with_info)");
    flag = 0;
    CHECK_MPI(MPI_Comm_get_attr(with_info, keyval, &got, &flag));
    CHECK_INT(1, flag && got == &value, "MPI_Comm_dup_with_info copies the attribute");
    CHECK_INT(2, copies_made, "the copy callback ran once per duplicate");
    CHECK_MPI(MPI_Comm_free(&with_info));
    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_MPI(MPI_Comm_delete_attr(MPI_COMM_WORLD, keyval));
    CHECK_MPI(MPI_Comm_free_keyval(&keyval));
}

/* The world ranks of a communicator's members, in its rank order. */
static int *members(MPI_Comm comm, int n)
{
    int *world = malloc(sizeof(int) * n);
    CHECK_MPI(MPI_Allgather(&rank, 1, MPI_INT, world, 1, MPI_INT, comm));
    return world;
}

static void split(void)
{
    /* Three colors, keys reversing the world order. */
    int color = rank % 3;
    MPI_Comm part = MPI_COMM_NULL;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, -rank, &part));
    int expected_size = 0, expected_rank = 0;
    for (int r = 0; r < size; r++)
        if (r % 3 == color) {
            expected_size++;
            if (r > rank)
                expected_rank++;
        }
    int part_size = -1, part_rank = -1;
    MPI_Comm_size(part, &part_size);
    MPI_Comm_rank(part, &part_rank);
    CHECK_INT(expected_size, part_size, "MPI_Comm_split color %d: size", color);
    CHECK_INT(expected_rank, part_rank, "MPI_Comm_split color %d, key -rank: rank", color);
    int *world = members(part, part_size);
    for (int i = 0; i < part_size && i < expected_size; i++) {
        int expected = 0, seen = 0;
        for (int r = size - 1; r >= 0; r--)
            if (r % 3 == color && seen++ == i)
                expected = r;
        CHECK_INT(expected, world[i], "MPI_Comm_split color %d, key -rank: world rank of member %d", color, i);
    }
    free(world);
    int result = -1;
    CHECK_MPI(MPI_Comm_compare(MPI_COMM_WORLD, part, &result));
    CHECK_INT(size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL, result, "MPI_Comm_compare(MPI_COMM_WORLD, a part)");

    /* Split again: equal keys keep the parent's order. */
    MPI_Comm quarter = MPI_COMM_NULL;
    CHECK_MPI(MPI_Comm_split(part, part_rank % 2, 0, &quarter));
    int quarter_rank = -1;
    MPI_Comm_rank(quarter, &quarter_rank);
    CHECK_INT(part_rank / 2, quarter_rank, "MPI_Comm_split with equal keys keeps the order");
    CHECK_MPI(MPI_Comm_free(&quarter));
    CHECK_MPI(MPI_Comm_free(&part));

    /* Everybody in one part, order reversed: same group, other order. */
    MPI_Comm reversed = MPI_COMM_NULL;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 7, size - rank, &reversed));
    int reversed_rank = -1;
    MPI_Comm_rank(reversed, &reversed_rank);
    CHECK_INT(size - 1 - rank, reversed_rank, "MPI_Comm_split with keys size-rank: rank");
    CHECK_MPI(MPI_Comm_compare(MPI_COMM_WORLD, reversed, &result));
    CHECK_INT(size == 1 ? MPI_CONGRUENT : MPI_SIMILAR, result, "MPI_Comm_compare(MPI_COMM_WORLD, reversed)");
    CHECK_MPI(MPI_Comm_free(&reversed));

    /* MPI_UNDEFINED: rank 0 takes no part. */
    MPI_Comm rest = MPI_COMM_WORLD;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : 1, rank, &rest));
    if (rank == 0) {
        CHECK_INT(MPI_COMM_NULL, rest, "MPI_Comm_split with MPI_UNDEFINED gives MPI_COMM_NULL");
    } else {
        int rest_rank = -1, rest_size = -1;
        MPI_Comm_rank(rest, &rest_rank);
        MPI_Comm_size(rest, &rest_size);
        CHECK_INT(rank - 1, rest_rank, "MPI_Comm_split without rank 0: rank");
        CHECK_INT(size - 1, rest_size, "MPI_Comm_split without rank 0: size");
        CHECK_MPI(MPI_Comm_free(&rest));
    }
}

/* The hosts the job runs on: grappe's emulated hosts (GRAPPE_EMULATED_HOSTS,
 * ranks on different hosts joined by TCP), else one. */
static int hosts_used(void)
{
    const char *emulated = getenv("GRAPPE_EMULATED_HOSTS");
    int hosts = emulated ? atoi(emulated) : 1;
    return hosts < 1 ? 1 : hosts < size ? hosts : size;
}

/* The ranks of a host's part share memory: each writes its slot of a
 * shared window, and reads every other slot of the part directly. */
static void shared_window_works(MPI_Comm node, int node_rank, int node_size)
{
    MPI_Win win;
    int *mine = NULL;
    CHECK_MPI(MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, node, &mine, &win));
    CHECK_MPI(MPI_Win_fence(0, win));
    *mine = 1000 + rank;
    CHECK_MPI(MPI_Win_fence(0, win));
    int *world = members(node, node_size);
    for (int r = 0; r < node_size; r++) {
        MPI_Aint bytes = 0;
        int disp = 0, *theirs = NULL;
        CHECK_MPI(MPI_Win_shared_query(win, r, &bytes, &disp, &theirs));
        CHECK_INT(1000 + world[r], theirs ? *theirs : -1, "shared window of part rank %d, read by part rank %d", r, node_rank);
    }
    free(world);
    CHECK_MPI(MPI_Win_fence(0, win));
    CHECK_MPI(MPI_Win_free(&win));
}

static void split_by_host(void)
{
    /* MPI_COMM_TYPE_SHARED: one part per host, each a shared-memory domain. */
    MPI_Comm node = MPI_COMM_NULL;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node));
    int node_rank = -1, node_size = -1;
    MPI_Comm_rank(node, &node_rank);
    MPI_Comm_size(node, &node_size);
    int leaders = 0, leader = node_rank == 0;
    CHECK_MPI(MPI_Allreduce(&leader, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    CHECK_INT(hosts_used(), leaders, "MPI_COMM_TYPE_SHARED: parts (one per host)");
    shared_window_works(node, node_rank, node_size);
    if (hosts_used() > 1) {
        /* A shared window over ranks of several hosts is an error, on every rank. */
        MPI_Win win = MPI_WIN_NULL;
        int *base = NULL, class = MPI_SUCCESS;
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int rc = MPI_Win_allocate_shared(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win);
        MPI_Error_class(rc, &class);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        CHECK_INT(MPI_ERR_RMA_SHARED, class, "MPI_Win_allocate_shared across hosts: error class");
        CHECK_INT(MPI_WIN_NULL, win, "MPI_Win_allocate_shared across hosts: no window");
    }

    /* MPI 4's guided split: only the shared-memory resource is known. */
    MPI_Info info;
    MPI_Comm guided = MPI_COMM_WORLD;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, MPI_INFO_NULL, &guided));
    CHECK_INT(MPI_COMM_NULL, guided, "MPI_COMM_TYPE_HW_GUIDED without a resource type gives MPI_COMM_NULL");
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "mpi_hw_resource_type", "no-such-resource"));
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &guided));
    CHECK_INT(MPI_COMM_NULL, guided, "MPI_COMM_TYPE_HW_GUIDED with an unknown resource type gives MPI_COMM_NULL");
    CHECK_MPI(MPI_Info_set(info, "mpi_hw_resource_type", "mpi_shared_memory"));
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, info, &guided));
    int result = -1;
    if (guided != MPI_COMM_NULL)
        CHECK_MPI(MPI_Comm_compare(node, guided, &result));
    CHECK_INT(MPI_CONGRUENT, result, "MPI_COMM_TYPE_HW_GUIDED on mpi_shared_memory is MPI_COMM_TYPE_SHARED's split");
    if (guided != MPI_COMM_NULL)
        CHECK_MPI(MPI_Comm_free(&guided));
    CHECK_MPI(MPI_Info_free(&info));

    /* The unguided split gives a strictly smaller part, naming its
     * resource, or MPI_COMM_NULL when there is none. */
    CHECK_MPI(MPI_Info_create(&info));
    MPI_Comm unguided = MPI_COMM_WORLD;
    CHECK_MPI(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, rank, info, &unguided));
    if (hosts_used() > 1) {
        char value[MPI_MAX_INFO_VAL + 1] = "";
        int flag = 0;
        CHECK_MPI(MPI_Info_get(info, "mpi_hw_resource_type", MPI_MAX_INFO_VAL, value, &flag));
        CHECK_INT(1, flag, "MPI_COMM_TYPE_HW_UNGUIDED across hosts names its resource");
        result = -1;
        if (unguided != MPI_COMM_NULL)
            CHECK_MPI(MPI_Comm_compare(node, unguided, &result));
        CHECK_INT(MPI_CONGRUENT, result, "MPI_COMM_TYPE_HW_UNGUIDED across hosts splits by host");
        if (unguided != MPI_COMM_NULL)
            CHECK_MPI(MPI_Comm_free(&unguided));
    } else if (check_on_grappe()) { /* MPICH splits a host further: NUMA node, socket, core... */
        CHECK_INT(MPI_COMM_NULL, unguided, "MPI_COMM_TYPE_HW_UNGUIDED inside one host gives MPI_COMM_NULL");
    } else if (unguided != MPI_COMM_NULL) {
        CHECK_MPI(MPI_Comm_free(&unguided));
    }
    CHECK_MPI(MPI_Info_free(&info));
    CHECK_MPI(MPI_Comm_free(&node));
}

static void compare(void)
{
    int result = -1;
    CHECK_MPI(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD, &result));
    CHECK_INT(MPI_IDENT, result, "MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_WORLD)");
    CHECK_MPI(MPI_Comm_compare(MPI_COMM_SELF, MPI_COMM_SELF, &result));
    CHECK_INT(MPI_IDENT, result, "MPI_Comm_compare(MPI_COMM_SELF, MPI_COMM_SELF)");
    CHECK_MPI(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, &result));
    CHECK_INT(size == 1 ? MPI_CONGRUENT : MPI_UNEQUAL, result, "MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF)");
    CHECK(MPI_IDENT < MPI_CONGRUENT && MPI_CONGRUENT < MPI_SIMILAR && MPI_SIMILAR < MPI_UNEQUAL,
          "the comparison results are ordered");
}

static int group_rank_of(MPI_Group group)
{
    int r = -5;
    CHECK_MPI(MPI_Group_rank(group, &r));
    return r;
}

static int group_size_of(MPI_Group group)
{
    int n = -5;
    CHECK_MPI(MPI_Group_size(group, &n));
    return n;
}

static int group_compare(MPI_Group a, MPI_Group b)
{
    int result = -5;
    CHECK_MPI(MPI_Group_compare(a, b, &result));
    return result;
}

static void groups(void)
{
    MPI_Group world;
    CHECK_MPI(MPI_Comm_group(MPI_COMM_WORLD, &world));
    CHECK_INT(size, group_size_of(world), "MPI_Group_size of MPI_COMM_WORLD's group");
    CHECK_INT(rank, group_rank_of(world), "MPI_Group_rank in MPI_COMM_WORLD's group");
    CHECK_INT(0, group_size_of(MPI_GROUP_EMPTY), "MPI_Group_size(MPI_GROUP_EMPTY)");
    CHECK_INT(MPI_UNDEFINED, group_rank_of(MPI_GROUP_EMPTY), "MPI_Group_rank(MPI_GROUP_EMPTY)");

    int *ranks = malloc(sizeof(int) * size), *out = malloc(sizeof(int) * (size + 1));
    int *evens_list = malloc(sizeof(int) * size), n_evens = 0;
    for (int i = 0; i < size; i++)
        ranks[i] = size - 1 - i;
    for (int r = 0; r < size; r += 2)
        evens_list[n_evens++] = r;

    MPI_Group reversed, without_0, evens, odds;
    CHECK_MPI(MPI_Group_incl(world, size, ranks, &reversed));
    CHECK_INT(size, group_size_of(reversed), "MPI_Group_incl reversed: size");
    CHECK_INT(size - 1 - rank, group_rank_of(reversed), "MPI_Group_incl reversed: rank");
    CHECK_INT(size == 1 ? MPI_IDENT : MPI_SIMILAR, group_compare(world, reversed),
              "MPI_Group_compare(world, reversed)");

    int zero = 0;
    CHECK_MPI(MPI_Group_excl(world, 1, &zero, &without_0));
    CHECK_INT(size - 1, group_size_of(without_0), "MPI_Group_excl rank 0: size");
    CHECK_INT(rank == 0 ? MPI_UNDEFINED : rank - 1, group_rank_of(without_0), "MPI_Group_excl rank 0: rank");

    CHECK_MPI(MPI_Group_incl(world, n_evens, evens_list, &evens));
    CHECK_MPI(MPI_Group_excl(world, n_evens, evens_list, &odds));
    CHECK_INT(size / 2, group_size_of(odds), "MPI_Group_excl of the even ranks: size");
    CHECK_INT(rank % 2 ? rank / 2 : MPI_UNDEFINED, group_rank_of(odds), "MPI_Group_excl of the even ranks: rank");

    /* translate_ranks: reversed -> world, world -> without_0, and
     * MPI_PROC_NULL stays MPI_PROC_NULL. */
    int *all = malloc(sizeof(int) * (size + 1));
    for (int i = 0; i < size; i++)
        all[i] = i;
    all[size] = MPI_PROC_NULL;
    CHECK_MPI(MPI_Group_translate_ranks(reversed, size + 1, all, world, out));
    for (int i = 0; i < size; i++)
        CHECK_INT(size - 1 - i, out[i], "MPI_Group_translate_ranks(reversed %d -> world)", i);
    CHECK_INT(MPI_PROC_NULL, out[size], "MPI_Group_translate_ranks(MPI_PROC_NULL)");
    CHECK_MPI(MPI_Group_translate_ranks(world, size, all, without_0, out));
    CHECK_INT(MPI_UNDEFINED, out[0], "MPI_Group_translate_ranks(world 0 -> a group without it)");
    for (int i = 1; i < size; i++)
        CHECK_INT(i - 1, out[i], "MPI_Group_translate_ranks(world %d -> without rank 0)", i);

    /* Set operations: union keeps the first group's order, then the
     * second's new members; intersection and difference keep the first
     * group's order. */
    MPI_Group both, common, rest, none;
    CHECK_MPI(MPI_Group_union(evens, odds, &both));
    CHECK_INT(size, group_size_of(both), "MPI_Group_union(evens, odds): size");
    CHECK_INT(rank % 2 ? n_evens + rank / 2 : rank / 2, group_rank_of(both), "MPI_Group_union(evens, odds): rank");
    CHECK_INT(size <= 2 ? MPI_IDENT : MPI_SIMILAR, group_compare(world, both), "MPI_Group_compare(world, evens+odds)");
    CHECK_MPI(MPI_Group_intersection(reversed, evens, &common));
    CHECK_INT(n_evens, group_size_of(common), "MPI_Group_intersection(reversed, evens): size");
    if (rank % 2 == 0)
        CHECK_INT(n_evens - 1 - rank / 2, group_rank_of(common),
                  "MPI_Group_intersection(reversed, evens) keeps the reversed order: rank");
    else
        CHECK_INT(MPI_UNDEFINED, group_rank_of(common), "MPI_Group_intersection(reversed, evens): rank of an odd");
    CHECK_MPI(MPI_Group_difference(world, evens, &rest));
    CHECK_INT(MPI_IDENT, group_compare(odds, rest), "MPI_Group_compare(odds, world - evens)");
    CHECK_MPI(MPI_Group_intersection(evens, odds, &none));
    CHECK_INT(0, group_size_of(none), "MPI_Group_intersection(evens, odds): size");
    CHECK_INT(MPI_IDENT, group_compare(none, MPI_GROUP_EMPTY), "MPI_Group_compare(evens & odds, MPI_GROUP_EMPTY)");
    CHECK_INT(MPI_UNEQUAL, group_compare(evens, odds), "MPI_Group_compare(evens, odds)");
    CHECK_INT(MPI_IDENT, group_compare(world, world), "MPI_Group_compare(world, world)");

    /* MPI_Comm_create: a communicator of the even ranks, and one of all
     * ranks in reverse order. */
    MPI_Comm even_comm = MPI_COMM_WORLD;
    CHECK_MPI(MPI_Comm_create(MPI_COMM_WORLD, evens, &even_comm));
    if (rank % 2) {
        CHECK_INT(MPI_COMM_NULL, even_comm, "MPI_Comm_create for a rank outside the group");
    } else {
        int r = -1, n = -1, sum = -1;
        MPI_Comm_rank(even_comm, &r);
        MPI_Comm_size(even_comm, &n);
        CHECK_INT(rank / 2, r, "MPI_Comm_create(evens): rank");
        CHECK_INT(n_evens, n, "MPI_Comm_create(evens): size");
        CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, even_comm));
        CHECK_INT((n_evens - 1) * n_evens, sum, "MPI_Allreduce of the world ranks on MPI_Comm_create(evens)");
        CHECK_MPI(MPI_Comm_free(&even_comm));
    }
    MPI_Comm reversed_comm = MPI_COMM_NULL;
    CHECK_MPI(MPI_Comm_create(MPI_COMM_WORLD, reversed, &reversed_comm));
    int r = -1;
    MPI_Comm_rank(reversed_comm, &r);
    CHECK_INT(size - 1 - rank, r, "MPI_Comm_create(reversed): rank");
    int *world_ranks = members(reversed_comm, size);
    for (int i = 0; i < size; i++)
        CHECK_INT(size - 1 - i, world_ranks[i], "MPI_Comm_create(reversed): world rank of member %d", i);
    free(world_ranks);
    MPI_Group back;
    CHECK_MPI(MPI_Comm_group(reversed_comm, &back));
    CHECK_INT(MPI_IDENT, group_compare(back, reversed), "MPI_Comm_group of MPI_Comm_create(group)");
    CHECK_MPI(MPI_Group_free(&back));
    CHECK_MPI(MPI_Comm_free(&reversed_comm));

    MPI_Group *all_groups[] = {&world, &reversed, &without_0, &evens, &odds, &both, &common, &rest, &none};
    for (size_t i = 0; i < sizeof all_groups / sizeof all_groups[0]; i++) {
        CHECK_MPI(MPI_Group_free(all_groups[i]));
        CHECK_INT(MPI_GROUP_NULL, *all_groups[i], "MPI_Group_free sets MPI_GROUP_NULL (group %zu)", i);
    }
    free(ranks);
    free(out);
    free(evens_list);
    free(all);
}

static void check_name(MPI_Comm comm, const char *expected, const char *which)
{
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    memset(name, 0x7f, sizeof name);
    CHECK_MPI(MPI_Comm_get_name(comm, name, &len));
    name[MPI_MAX_OBJECT_NAME - 1] = 0;
    CHECK(strcmp(name, expected) == 0, "MPI_Comm_get_name(%s) is \"%s\", expected \"%s\"", which, name, expected);
    CHECK_INT(strlen(expected), len, "MPI_Comm_get_name(%s): length", which);
}

static void names(void)
{
    check_name(MPI_COMM_WORLD, "MPI_COMM_WORLD", "MPI_COMM_WORLD");
    check_name(MPI_COMM_SELF, "MPI_COMM_SELF", "MPI_COMM_SELF");
    MPI_Comm dup;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
    CHECK_MPI(MPI_Comm_set_name(dup, "grappe test communicator"));
    check_name(dup, "grappe test communicator", "a named duplicate");
    char longest[MPI_MAX_OBJECT_NAME];
    memset(longest, 'x', sizeof longest);
    longest[MPI_MAX_OBJECT_NAME - 1] = 0;
    CHECK_MPI(MPI_Comm_set_name(dup, longest));
    check_name(dup, longest, "a duplicate named with MPI_MAX_OBJECT_NAME-1 characters");
    CHECK_MPI(MPI_Comm_free(&dup));
}

static void tag_ub(void)
{
    int *value = NULL, flag = 0;
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &flag));
    if (!CHECK_INT(1, flag, "MPI_Comm_get_attr(MPI_TAG_UB): flag") || !value)
        return;
    int ub = *value;
    CHECK(ub >= 32767, "MPI_TAG_UB %d is at least 32767", ub);
    int out = rank, in = -1;
    MPI_Status status;
    check_preset_status(&status);
    CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, right, ub, &in, 1, MPI_INT, left, ub, MPI_COMM_WORLD, &status));
    CHECK_INT(left, in, "a message with tag MPI_TAG_UB (%d)", ub);
    CHECK_STATUS(&status, left, ub, MPI_INT, 1, "a message with tag MPI_TAG_UB");
}

/* MPI_Comm_create with disjoint groups (MPI 2.2): the odd ranks pass the
 * odd group, the even ranks the even one, and each gets its own. */
static void create_disjoint(void)
{
    int mine[64], n = 0;
    for (int r = rank % 2; r < size; r += 2)
        mine[n++] = r;
    MPI_Group world_group, part;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, n, mine, &part);
    MPI_Comm created = MPI_COMM_NULL;
    CHECK_MPI(MPI_Comm_create(MPI_COMM_WORLD, part, &created));
    int got = -1, relation = -1, sum = -1;
    MPI_Comm_size(created, &got);
    CHECK_INT(n, got, "the size of my parity's communicator from MPI_Comm_create");
    MPI_Group created_group;
    MPI_Comm_group(created, &created_group);
    MPI_Group_compare(created_group, part, &relation);
    CHECK_INT(MPI_IDENT, relation, "the created communicator's group is the group passed");
    CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, created));
    int expected = 0;
    for (int k = 0; k < n; k++)
        expected += mine[k];
    CHECK_INT(expected, sum, "an allreduce over my parity's ranks");
    MPI_Group_free(&created_group);
    MPI_Comm_free(&created);
    MPI_Group_free(&part);
    MPI_Group_free(&world_group);
}

/* The even ranks, in reverse order, create a communicator among
 * themselves; the odd ranks meanwhile pass a token around their own ring,
 * never calling MPI_Comm_create_group. */
static void create_group(void)
{
    int evens = (size + 1) / 2, members[64];
    for (int k = 0; k < evens; k++)
        members[k] = 2 * (evens - 1 - k);
    MPI_Group world_group, even_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_incl(world_group, evens, members, &even_group);
    if (rank % 2 == 0) {
        MPI_Comm evens_comm = MPI_COMM_NULL;
        CHECK_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, even_group, 7, &evens_comm));
        int r = -1, n = -1, sum = -1;
        MPI_Comm_rank(evens_comm, &r);
        MPI_Comm_size(evens_comm, &n);
        CHECK_INT(evens, n, "the size of the even ranks' communicator");
        CHECK_INT(evens - 1 - rank / 2, r, "rank %d's place in the reversed group", rank);
        CHECK_MPI(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, evens_comm));
        CHECK_INT(evens * (evens - 1), sum, "an allreduce over the even ranks");
        MPI_Comm_free(&evens_comm);
    } else {
        int odds = size / 2, token = rank, got = -1;
        int next = (rank + 2) % (2 * odds), prev = (rank - 2 + 2 * odds) % (2 * odds);
        CHECK_MPI(MPI_Sendrecv(&token, 1, MPI_INT, next, 8, &got, 1, MPI_INT, prev, 8, MPI_COMM_WORLD,
                               MPI_STATUS_IGNORE));
        CHECK_INT(prev, got, "the odd ranks' ring");
    }
    /* Every rank alone: a group of oneself. */
    MPI_Group self_group;
    MPI_Comm_group(MPI_COMM_SELF, &self_group);
    MPI_Comm alone = MPI_COMM_NULL;
    CHECK_MPI(MPI_Comm_create_group(MPI_COMM_WORLD, self_group, 3, &alone));
    int n = -1;
    MPI_Comm_size(alone, &n);
    CHECK_INT(1, n, "a group of oneself");
    MPI_Comm_free(&alone);
    MPI_Group_free(&self_group);
    MPI_Group_free(&even_group);
    MPI_Group_free(&world_group);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("comm");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;

    dup_is_independent();
    idup_and_dup_with_info();
    split();
    split_by_host();
    compare();
    groups();
    create_disjoint();
    create_group();
    names();
    tag_ub();
    return check_finish();
}

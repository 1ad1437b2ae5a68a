/* MPI_THREAD_MULTIPLE: threads of one process calling MPI at once.
 *
 * - a thread blocked in MPI_Recv (and one in MPI_Probe, one in MPI_Waitall)
 *   for a message that another thread of the same process sends later: the
 *   blocked call must let the sender in;
 * - four threads per rank exchanging messages with the partner rank at
 *   once with blocking sends and receives, small (eager) and large
 *   (rendezvous), each on its own tag;
 * - four threads per rank posting receives from and sends to every rank,
 *   completed by MPI_Waitany, MPI_Testsome loops or MPI_Waitall;
 * - four threads per rank running collectives at once, each on its own
 *   duplicate of MPI_COMM_WORLD, in a different order on every rank (a
 *   collective that held the library while it waited would deadlock);
 * - two threads per rank creating communicators (MPI_Comm_dup, split,
 *   create, create_group, split_type, Intercomm_create then
 *   Intercomm_merge) from two parents, where an odd rank's first thread
 *   starts only once its even partner's second thread is done: a creation
 *   that held the library while it waited would keep the partner's second
 *   thread out, and both ranks would wait forever;
 * - four threads per rank creating and freeing communicators from their
 *   own parents many times at once, each checked by a reduction over it;
 * - four threads per rank calling MPI_Comm_create_group on one parent at
 *   once, told apart by their tags, for the lower half of the ranks and
 *   for all of them.
 *
 * Threads record what they saw; the main thread checks it after joining
 * them (check.h's counters are not for threads). */
#include "check.h"
#include <pthread.h>
#include <unistd.h>

#define THREADS 4
#define ROUNDS 40
#define BIG (1 << 20)

static int world_rank, world_size;

/* --- a receive, a probe and a wait served by a later send of another thread --- */

struct later {
    int got[3];     /* the values received by the receive, the probe's receive, the waitall */
    int probed_tag; /* the tag MPI_Probe reported */
    int rc;         /* the first error code */
};

static void *receive_from_self(void *arg)
{
    struct later *l = arg;
    MPI_Status status;
    int rc = MPI_Recv(&l->got[0], 1, MPI_INT, world_rank, 11, MPI_COMM_WORLD, &status);
    if (rc == MPI_SUCCESS)
        rc = MPI_Probe(MPI_ANY_SOURCE, 12, MPI_COMM_WORLD, &status);
    if (rc == MPI_SUCCESS) {
        l->probed_tag = status.MPI_TAG;
        rc = MPI_Recv(&l->got[1], 1, MPI_INT, status.MPI_SOURCE, 12, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rc == MPI_SUCCESS) {
        MPI_Request r;
        rc = MPI_Irecv(&l->got[2], 1, MPI_INT, world_rank, 13, MPI_COMM_WORLD, &r);
        if (rc == MPI_SUCCESS)
            rc = MPI_Waitall(1, &r, MPI_STATUSES_IGNORE);
    }
    l->rc = rc;
    return NULL;
}

static void check_served_by_later_send(void)
{
    struct later l = {{-1, -1, -1}, -1, MPI_SUCCESS};
    pthread_t t;
    pthread_create(&t, NULL, receive_from_self, &l);
    for (int tag = 11; tag <= 13; tag++) {
        usleep(20000); /* the other thread is blocked by now, most likely */
        int value = 1000 * tag + world_rank;
        CHECK_MPI(MPI_Send(&value, 1, MPI_INT, world_rank, tag, MPI_COMM_WORLD));
    }
    pthread_join(t, NULL);
    CHECK_INT(MPI_SUCCESS, l.rc, "the receiving thread's calls");
    for (int i = 0; i < 3; i++)
        CHECK_INT(1000 * (11 + i) + world_rank, l.got[i], "value received by the other thread, tag %d", 11 + i);
    CHECK_INT(12, l.probed_tag, "tag seen by MPI_Probe in the other thread");
}

/* --- threads exchanging with the partner rank at once --- */

struct exchange {
    int thread;
    int mismatches; /* elements received wrong */
    int rc;
    long first_bad; /* the round of the first wrong message, -1 if none */
};

static int value_of(int rank, int thread, int round, int i)
{
    return rank * 1000003 + thread * 10007 + round * 101 + i;
}

static void *exchange_with_partner(void *arg)
{
    struct exchange *x = arg;
    int partner = world_rank ^ 1;
    if (partner >= world_size)
        partner = world_rank;
    int *out = malloc(BIG), *in = malloc(BIG);
    for (int round = 0; round < ROUNDS && x->rc == MPI_SUCCESS; round++) {
        /* Small, medium and large messages in turn. */
        int n = round % 3 == 0 ? 1 : round % 3 == 1 ? 2000 : BIG / (int)sizeof(int);
        int tag = 100 + x->thread;
        for (int i = 0; i < n; i++)
            out[i] = value_of(world_rank, x->thread, round, i);
        MPI_Status status;
        int rc;
        if (partner == world_rank)
            rc = MPI_Sendrecv(out, n, MPI_INT, partner, tag, in, n, MPI_INT, partner, tag, MPI_COMM_WORLD, &status);
        else if (world_rank % 2 == 0) {
            rc = MPI_Send(out, n, MPI_INT, partner, tag, MPI_COMM_WORLD);
            if (rc == MPI_SUCCESS)
                rc = MPI_Recv(in, n, MPI_INT, partner, tag, MPI_COMM_WORLD, &status);
        } else {
            rc = MPI_Recv(in, n, MPI_INT, partner, tag, MPI_COMM_WORLD, &status);
            if (rc == MPI_SUCCESS)
                rc = MPI_Ssend(out, n, MPI_INT, partner, tag, MPI_COMM_WORLD);
        }
        x->rc = rc;
        if (rc != MPI_SUCCESS)
            break;
        for (int i = 0; i < n; i++)
            if (in[i] != value_of(partner, x->thread, round, i)) {
                x->mismatches++;
                if (x->first_bad < 0)
                    x->first_bad = round;
            }
    }
    free(out);
    free(in);
    return NULL;
}

static void check_exchanges(void)
{
    pthread_t t[THREADS];
    struct exchange x[THREADS];
    for (int i = 0; i < THREADS; i++) {
        x[i] = (struct exchange){i, 0, MPI_SUCCESS, -1};
        pthread_create(&t[i], NULL, exchange_with_partner, &x[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK_INT(MPI_SUCCESS, x[i].rc, "thread %d's sends and receives", i);
        CHECK_INT(0, x[i].mismatches, "elements received wrong by thread %d (first in round %ld)", i, x[i].first_bad);
    }
}

/* --- non-blocking calls and their completions spread over threads --- */

/* Each thread posts receives from every rank (itself included) on its own
 * tag, sends to every rank, and completes them with a mix of MPI_Waitany,
 * MPI_Testsome loops and MPI_Waitall, while the other threads do the same:
 * as MPICH's threads/pt2pt tests (multisend, sendselfth) do. */
struct spread {
    int thread;
    int wrong;
    int rc;
};

#define SPREAD_ROUNDS 30

static void *spread_requests(void *arg)
{
    struct spread *x = arg;
    int n = world_size, tag = 300 + x->thread;
    int *in = malloc(sizeof(int) * n), *out = malloc(sizeof(int) * n);
    MPI_Request *r = malloc(sizeof(MPI_Request) * 2 * n);
    int *indices = malloc(sizeof(int) * 2 * n);
    for (int round = 0; round < SPREAD_ROUNDS && x->rc == MPI_SUCCESS; round++) {
        int rc = MPI_SUCCESS;
        for (int p = 0; p < n && rc == MPI_SUCCESS; p++) {
            in[p] = -1;
            rc = MPI_Irecv(&in[p], 1, MPI_INT, p, tag, MPI_COMM_WORLD, &r[p]);
        }
        for (int p = 0; p < n && rc == MPI_SUCCESS; p++) {
            out[p] = world_rank * 1000000 + p * 1000 + round * 10 + x->thread;
            rc = MPI_Isend(&out[p], 1, MPI_INT, p, tag, MPI_COMM_WORLD, &r[n + p]);
        }
        /* Completions: by rounds, a different way. */
        if (rc == MPI_SUCCESS && round % 3 == 0) {
            for (int k = 0; k < 2 * n && rc == MPI_SUCCESS; k++) {
                int index;
                rc = MPI_Waitany(2 * n, r, &index, MPI_STATUS_IGNORE);
            }
        } else if (rc == MPI_SUCCESS && round % 3 == 1) {
            int done = 0;
            while (done < 2 * n && rc == MPI_SUCCESS) {
                int count = 0;
                rc = MPI_Testsome(2 * n, r, &count, indices, MPI_STATUSES_IGNORE);
                if (count != MPI_UNDEFINED)
                    done += count;
            }
        } else if (rc == MPI_SUCCESS) {
            rc = MPI_Waitall(2 * n, r, MPI_STATUSES_IGNORE);
        }
        x->rc = rc;
        for (int p = 0; p < n && rc == MPI_SUCCESS; p++)
            x->wrong += in[p] != p * 1000000 + world_rank * 1000 + round * 10 + x->thread;
    }
    free(in);
    free(out);
    free(r);
    free(indices);
    return NULL;
}

static void check_spread_requests(void)
{
    pthread_t t[THREADS];
    struct spread x[THREADS];
    for (int i = 0; i < THREADS; i++) {
        x[i] = (struct spread){i, 0, MPI_SUCCESS};
        pthread_create(&t[i], NULL, spread_requests, &x[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK_INT(MPI_SUCCESS, x[i].rc, "thread %d's non-blocking calls and completions", i);
        CHECK_INT(0, x[i].wrong, "messages received wrong by thread %d", i);
    }
}

/* --- collectives at once on duplicates, in a different order per rank --- */

struct collectives {
    MPI_Comm comm;
    int thread;
    int wrong; /* results found wrong */
    int rc;
};

static void *run_collectives(void *arg)
{
    struct collectives *c = arg;
    int size;
    MPI_Comm_size(c->comm, &size);
    for (int round = 0; round < ROUNDS && c->rc == MPI_SUCCESS; round++) {
        /* Stagger the threads differently on each rank. */
        if ((world_rank + c->thread + round) % 3 == 0)
            usleep(200);
        long mine[3] = {world_rank, round, c->thread}, sums[3] = {0, 0, 0};
        int rc = MPI_Allreduce(mine, sums, 3, MPI_LONG, MPI_SUM, c->comm);
        if (rc == MPI_SUCCESS) {
            long n = size;
            c->wrong += sums[0] != n * (n - 1) / 2 || sums[1] != n * round || sums[2] != n * c->thread;
            int root = round % size, word = world_rank == root ? round * 7 + c->thread : -1;
            rc = MPI_Bcast(&word, 1, MPI_INT, root, c->comm);
            c->wrong += word != round * 7 + c->thread;
        }
        if (rc == MPI_SUCCESS) {
            int *all = malloc(sizeof(int) * size);
            int me = world_rank * 10 + c->thread;
            rc = MPI_Allgather(&me, 1, MPI_INT, all, 1, MPI_INT, c->comm);
            for (int r = 0; rc == MPI_SUCCESS && r < size; r++)
                c->wrong += all[r] != r * 10 + c->thread;
            free(all);
        }
        if (rc == MPI_SUCCESS && round % 8 == 0)
            rc = MPI_Barrier(c->comm);
        c->rc = rc;
    }
    return NULL;
}

static void check_concurrent_collectives(void)
{
    pthread_t t[THREADS];
    struct collectives c[THREADS];
    for (int i = 0; i < THREADS; i++) {
        c[i] = (struct collectives){MPI_COMM_NULL, i, 0, MPI_SUCCESS};
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c[i].comm));
    }
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, run_collectives, &c[i]);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK_INT(MPI_SUCCESS, c[i].rc, "thread %d's collectives", i);
        CHECK_INT(0, c[i].wrong, "collective results found wrong by thread %d", i);
        CHECK_MPI(MPI_Comm_free(&c[i].comm));
    }
}

/* --- communicators created by two threads of each rank at once --- */

enum creation { DUP, SPLIT, CREATE, CREATE_GROUP, INTERCOMM, SPLIT_TYPE, CREATIONS };
static const char *creation_names[CREATIONS] = {"MPI_Comm_dup", "MPI_Comm_split", "MPI_Comm_create", "MPI_Comm_create_group", "MPI_Intercomm_create and merge", "MPI_Comm_split_type"};

/* Parent's lower and upper halves joined by MPI_Intercomm_create, then
 * merged (the lower half first): parent's ranks in its order again. One
 * rank has no two groups: it duplicates. */
static int intercomm_and_merge(MPI_Comm parent, MPI_Comm *made)
{
    int rank, size;
    MPI_Comm_rank(parent, &rank);
    MPI_Comm_size(parent, &size);
    if (size < 2)
        return MPI_Comm_dup(parent, made);
    int lower = rank < size / 2;
    MPI_Comm half, inter;
    int rc = MPI_Comm_split(parent, lower, rank, &half);
    if (rc == MPI_SUCCESS)
        rc = MPI_Intercomm_create(half, 0, parent, lower ? size / 2 : 0, 9, &inter);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Intercomm_merge(inter, !lower, made);
        MPI_Comm_free(&inter);
    }
    MPI_Comm_free(&half);
    return rc;
}

/* A communicator of parent's ranks made by `how`: all of them, but for a
 * split, which keeps the ranks of parent's parity in reverse order. */
static int create(enum creation how, MPI_Comm parent, MPI_Comm *made)
{
    int rank;
    MPI_Comm_rank(parent, &rank);
    switch (how) {
    case DUP:
        return MPI_Comm_dup(parent, made);
    case SPLIT:
        return MPI_Comm_split(parent, rank % 2, -rank, made);
    case CREATE:
    case CREATE_GROUP: {
        MPI_Group group;
        int rc = MPI_Comm_group(parent, &group);
        if (rc == MPI_SUCCESS)
            rc = how == CREATE ? MPI_Comm_create(parent, group, made) : MPI_Comm_create_group(parent, group, 7, made);
        MPI_Group_free(&group);
        return rc;
    }
    case INTERCOMM:
        return intercomm_and_merge(parent, made);
    default:
        return MPI_Comm_split_type(parent, MPI_UNDEFINED, 0, MPI_INFO_NULL, made);
    }
}

/* Wrong answers of a reduction over `made` (MPI_COMM_NULL for
 * MPI_Comm_split_type with MPI_UNDEFINED), or -1 if it failed. */
static int check_made(enum creation how, MPI_Comm parent, MPI_Comm made)
{
    int rank, size, made_rank = -1, made_size = 0;
    MPI_Comm_rank(parent, &rank);
    MPI_Comm_size(parent, &size);
    if (how == SPLIT_TYPE)
        return made != MPI_COMM_NULL;
    if (made == MPI_COMM_NULL)
        return 1;
    MPI_Comm_rank(made, &made_rank);
    MPI_Comm_size(made, &made_size);
    int expected_size = how == SPLIT ? (size - rank % 2 + 1) / 2 : size;
    int expected_rank = rank;
    if (how == SPLIT) {
        /* Ranks of my parity above mine come first (keys are -rank). */
        expected_rank = 0;
        for (int r = rank + 2; r < size; r += 2)
            expected_rank++;
    }
    long sum = 0, mine = rank;
    if (MPI_Allreduce(&mine, &sum, 1, MPI_LONG, MPI_SUM, made) != MPI_SUCCESS)
        return -1;
    long expected_sum = 0;
    for (int r = how == SPLIT ? rank % 2 : 0; r < size; r += how == SPLIT ? 2 : 1)
        expected_sum += r;
    return (made_size != expected_size) + (made_rank != expected_rank) + (sum != expected_sum);
}

struct creator {
    enum creation how;
    MPI_Comm parent;
    int second;   /* the second thread of its rank (parent b) */
    int wrong;
    int rc;
};

/* An odd rank's first thread waits for its even partner's second thread
 * to finish its creation; that one tells it so. */
static int partner_of(int rank)
{
    int partner = rank ^ 1;
    return partner < world_size ? partner : MPI_PROC_NULL;
}

static void *create_with_partner(void *arg)
{
    struct creator *c = arg;
    int rc = MPI_SUCCESS, token = 0;
    if (!c->second && world_rank % 2 == 1)
        rc = MPI_Recv(&token, 1, MPI_INT, partner_of(world_rank), 40 + c->how, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Comm made = MPI_COMM_NULL;
    if (rc == MPI_SUCCESS)
        rc = create(c->how, c->parent, &made);
    if (rc == MPI_SUCCESS) {
        int wrong = check_made(c->how, c->parent, made);
        rc = wrong < 0 ? MPI_ERR_OTHER : MPI_SUCCESS;
        c->wrong += wrong > 0 ? wrong : 0;
    }
    if (made != MPI_COMM_NULL)
        MPI_Comm_free(&made);
    if (rc == MPI_SUCCESS && c->second && world_rank % 2 == 0)
        rc = MPI_Send(&token, 1, MPI_INT, partner_of(world_rank), 40 + c->how, MPI_COMM_WORLD);
    c->rc = rc;
    return NULL;
}

static void check_creations_with_partner(void)
{
    MPI_Comm parents[2];
    for (int i = 0; i < 2; i++)
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &parents[i]));
    for (enum creation how = DUP; how < CREATIONS; how++) {
        pthread_t t[2];
        struct creator c[2];
        for (int i = 0; i < 2; i++) {
            c[i] = (struct creator){how, parents[i], i, 0, MPI_SUCCESS};
            pthread_create(&t[i], NULL, create_with_partner, &c[i]);
        }
        for (int i = 0; i < 2; i++) {
            pthread_join(t[i], NULL);
            CHECK_INT(MPI_SUCCESS, c[i].rc, "%s by thread %d beside its partner's", creation_names[how], i);
            CHECK_INT(0, c[i].wrong, "wrong communicators from %s by thread %d", creation_names[how], i);
        }
    }
    for (int i = 0; i < 2; i++)
        CHECK_MPI(MPI_Comm_free(&parents[i]));
}

#define CREATION_ROUNDS 6

static void *create_many(void *arg)
{
    struct creator *c = arg;
    for (int round = 0; round < CREATION_ROUNDS * CREATIONS && c->rc == MPI_SUCCESS; round++) {
        enum creation how = (round + c->second) % CREATIONS;
        MPI_Comm made = MPI_COMM_NULL;
        c->rc = create(how, c->parent, &made);
        if (c->rc == MPI_SUCCESS) {
            int wrong = check_made(how, c->parent, made);
            c->rc = wrong < 0 ? MPI_ERR_OTHER : MPI_SUCCESS;
            c->wrong += wrong > 0 ? wrong : 0;
        }
        if (made != MPI_COMM_NULL)
            MPI_Comm_free(&made);
    }
    return NULL;
}

static void check_many_creations(void)
{
    pthread_t t[THREADS];
    struct creator c[THREADS];
    for (int i = 0; i < THREADS; i++) {
        /* `second` is the thread's index here: threads start at different kinds. */
        c[i] = (struct creator){DUP, MPI_COMM_NULL, i, 0, MPI_SUCCESS};
        CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &c[i].parent));
    }
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, create_many, &c[i]);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK_INT(MPI_SUCCESS, c[i].rc, "creations by thread %d", i);
        CHECK_INT(0, c[i].wrong, "wrong communicators among the creations of thread %d", i);
        CHECK_MPI(MPI_Comm_free(&c[i].parent));
    }
}

struct grouper {
    MPI_Comm parent;
    int thread;
    int wrong;
    int rc;
};

/* Wrong answers of a reduction of thread numbers over `made`: every member
 * must be the same thread of its rank. */
static int wrong_threads_in(MPI_Comm made, int thread, int expected_size)
{
    int size;
    MPI_Comm_size(made, &size);
    int sum = 0;
    if (MPI_Allreduce(&thread, &sum, 1, MPI_INT, MPI_SUM, made) != MPI_SUCCESS)
        return -1;
    return (size != expected_size) + (sum != thread * expected_size);
}

static void *create_groups_on_one_parent(void *arg)
{
    struct grouper *g = arg;
    MPI_Group all, low;
    MPI_Comm_group(g->parent, &all);
    int range[1][3] = {{0, (world_size - 1) / 2, 1}};
    MPI_Group_range_incl(all, 1, range, &low);
    for (int round = 0; round < CREATION_ROUNDS && g->rc == MPI_SUCCESS; round++) {
        MPI_Comm made;
        if (world_rank <= (world_size - 1) / 2) {
            g->rc = MPI_Comm_create_group(g->parent, low, g->thread, &made);
            if (g->rc == MPI_SUCCESS) {
                int wrong = wrong_threads_in(made, g->thread, (world_size - 1) / 2 + 1);
                g->rc = wrong < 0 ? MPI_ERR_OTHER : MPI_SUCCESS;
                g->wrong += wrong > 0 ? wrong : 0;
                MPI_Comm_free(&made);
            }
        }
        if (g->rc == MPI_SUCCESS)
            g->rc = MPI_Comm_create_group(g->parent, all, 100 + g->thread, &made);
        if (g->rc == MPI_SUCCESS) {
            int wrong = wrong_threads_in(made, g->thread, world_size);
            g->rc = wrong < 0 ? MPI_ERR_OTHER : MPI_SUCCESS;
            g->wrong += wrong > 0 ? wrong : 0;
            MPI_Comm_free(&made);
        }
    }
    MPI_Group_free(&low);
    MPI_Group_free(&all);
    return NULL;
}

static void check_create_group_on_one_parent(void)
{
    MPI_Comm parent;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &parent));
    pthread_t t[THREADS];
    struct grouper g[THREADS];
    for (int i = 0; i < THREADS; i++) {
        g[i] = (struct grouper){parent, i, 0, MPI_SUCCESS};
        pthread_create(&t[i], NULL, create_groups_on_one_parent, &g[i]);
    }
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        CHECK_INT(MPI_SUCCESS, g[i].rc, "MPI_Comm_create_group by thread %d", i);
        CHECK_INT(0, g[i].wrong, "communicators of MPI_Comm_create_group by thread %d mixing threads", i);
    }
    CHECK_MPI(MPI_Comm_free(&parent));
}

int main(int argc, char **argv)
{
    int provided = -1;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "FAIL threads: MPI_Init_thread failed\n");
        return 1;
    }
    check_start("threads");
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    CHECK_INT(MPI_THREAD_MULTIPLE, provided, "MPI_Init_thread(MPI_THREAD_MULTIPLE) provided");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (provided == MPI_THREAD_MULTIPLE) {
        check_served_by_later_send();
        check_exchanges();
        check_spread_requests();
        check_concurrent_collectives();
        check_creations_with_partner();
        check_many_creations();
        check_create_group_on_one_parent();
    }
    return check_finish();
}

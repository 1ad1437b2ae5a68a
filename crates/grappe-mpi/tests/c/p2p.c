/* Blocking point-to-point: MPI_Send/MPI_Recv of predefined types at sizes
 * 0, 1, 1000 and 2^20 elements (the last one past any eager limit), rings,
 * MPI_ANY_SOURCE/MPI_ANY_TAG with their statuses, message order
 * (non-overtaking), MPI_Ssend, MPI_Rsend, MPI_Sendrecv,
 * MPI_Sendrecv_replace, MPI_PROC_NULL, MPI_Get_count/MPI_Get_elements,
 * MPI_STATUS_IGNORE, empty messages of MPI_DATATYPE_NULL (sends, receives,
 * MPI_Ssend_init, MPI_Sendrecv) and the status conversions to and from Fortran. Runs
 * on any number of ranks (on one, the rings are a
 * rank talking to itself through MPI_Sendrecv). */
#include "check.h"

static int rank, size, left, right;

struct type_case {
    MPI_Datatype type;
    size_t extent;
    const char *name;
    int large; /* also sent with 2^20 elements */
};

static const struct type_case types[] = {
    {MPI_BYTE, 1, "MPI_BYTE", 1},
    {MPI_CHAR, sizeof(char), "MPI_CHAR", 0},
    {MPI_UNSIGNED_CHAR, sizeof(unsigned char), "MPI_UNSIGNED_CHAR", 0},
    {MPI_SHORT, sizeof(short), "MPI_SHORT", 0},
    {MPI_INT, sizeof(int), "MPI_INT", 1},
    {MPI_UNSIGNED, sizeof(unsigned), "MPI_UNSIGNED", 0},
    {MPI_LONG, sizeof(long), "MPI_LONG", 0},
    {MPI_LONG_LONG, sizeof(long long), "MPI_LONG_LONG", 0},
    {MPI_UNSIGNED_LONG_LONG, sizeof(unsigned long long), "MPI_UNSIGNED_LONG_LONG", 0},
    {MPI_FLOAT, sizeof(float), "MPI_FLOAT", 0},
    {MPI_DOUBLE, sizeof(double), "MPI_DOUBLE", 1},
    {MPI_LONG_DOUBLE, sizeof(long double), "MPI_LONG_DOUBLE", 0},
    {MPI_INT8_T, 1, "MPI_INT8_T", 0},
    {MPI_INT32_T, 4, "MPI_INT32_T", 0},
    {MPI_UINT64_T, 8, "MPI_UINT64_T", 0},
    {MPI_C_BOOL, sizeof(_Bool), "MPI_C_BOOL", 0},
    {MPI_C_DOUBLE_COMPLEX, 2 * sizeof(double), "MPI_C_DOUBLE_COMPLEX", 0},
};

#define SENTINEL 0xee

/* Sends to the right neighbour and receives from the left one. Rank 0
 * sends first and every other rank receives first, so blocking calls
 * cannot deadlock whatever the message size; one rank sends to itself
 * through MPI_Sendrecv. */
static void ring(int synchronous, const void *out, int out_count, void *in, int in_count, MPI_Datatype type,
                 int tag, MPI_Status *status)
{
    if (size == 1) {
        CHECK_MPI(MPI_Sendrecv(out, out_count, type, 0, tag, in, in_count, type, 0, tag, MPI_COMM_WORLD, status));
        return;
    }
    if (rank == 0) {
        if (synchronous)
            CHECK_MPI(MPI_Ssend(out, out_count, type, right, tag, MPI_COMM_WORLD));
        else
            CHECK_MPI(MPI_Send(out, out_count, type, right, tag, MPI_COMM_WORLD));
    }
    CHECK_MPI(MPI_Recv(in, in_count, type, left, tag, MPI_COMM_WORLD, status));
    if (rank != 0) {
        if (synchronous)
            CHECK_MPI(MPI_Ssend(out, out_count, type, right, tag, MPI_COMM_WORLD));
        else
            CHECK_MPI(MPI_Send(out, out_count, type, right, tag, MPI_COMM_WORLD));
    }
}

static unsigned seed_of(int sender, int case_index, int count)
{
    return (unsigned)(sender * 7919 + case_index * 131 + count);
}

/* Every type at every size around the ring: contents, no byte written
 * past the message, status. */
static void types_and_sizes(int synchronous)
{
    const int counts[] = {0, 1, 1000, 1 << 20};
    const char *mode = synchronous ? "MPI_Ssend" : "MPI_Send";
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        const struct type_case *tc = &types[t];
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            int count = counts[c];
            if (count == 1 << 20 && !tc->large)
                continue;
            size_t bytes = (size_t)count * tc->extent;
            unsigned char *out = malloc(bytes + 1), *in = malloc(bytes + tc->extent);
            unsigned char *expected = malloc(bytes + tc->extent);
            check_fill(out, bytes, seed_of(rank, (int)t, count));
            check_fill(expected, bytes, seed_of(left, (int)t, count));
            memset(expected + bytes, SENTINEL, tc->extent);
            memset(in, SENTINEL, bytes + tc->extent);
            MPI_Status status;
            check_preset_status(&status);
            int tag = (int)(t * 10 + c);
            ring(synchronous, out, count, in, count, tc->type, tag, &status);
            CHECK_BYTES(expected, in, bytes + tc->extent, "%s %s of %d from rank %d: contents and the element after",
                        mode, tc->name, count, left);
            char what[100];
            snprintf(what, sizeof what, "%s %s of %d from rank %d", mode, tc->name, count, left);
            CHECK_STATUS(&status, left, tag, tc->type, count, what);
            free(out);
            free(in);
            free(expected);
        }
    }
}

/* Every rank but 0 sends rank+1 ints with tag 100+rank to rank 0, which
 * receives them with wildcards and learns who sent what from the status;
 * then from each source in turn with MPI_ANY_TAG, then with MPI_ANY_SOURCE
 * and each tag in turn. */
static void next_round(void)
{
    for (int i = 1; i < size; i++)
        CHECK_MPI(MPI_Send(NULL, 0, MPI_INT, i, 99, MPI_COMM_WORLD));
}

static void wildcards(void)
{
    int *buf = malloc(sizeof(int) * (size + 2));
    if (rank != 0) {
        for (int k = 0; k <= rank; k++)
            buf[k] = rank * 1000 + k;
        for (int round = 0; round < 3; round++) {
            CHECK_MPI(MPI_Send(buf, rank + 1, MPI_INT, 0, 100 * (round + 1) + rank, MPI_COMM_WORLD));
            /* The next round starts once rank 0 has received this one. */
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        }
        free(buf);
        return;
    }
    int *seen = calloc(size, sizeof(int));
    for (int i = 1; i < size; i++) {
        MPI_Status status;
        check_preset_status(&status);
        memset(buf, 0, sizeof(int) * (size + 2));
        CHECK_MPI(MPI_Recv(buf, size + 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status));
        int source = status.MPI_SOURCE;
        if (!CHECK(source >= 1 && source < size && !seen[source], "MPI_ANY_SOURCE receive %d: MPI_SOURCE %d", i,
                   source))
            continue;
        seen[source] = 1;
        CHECK_STATUS(&status, source, 100 + source, MPI_INT, source + 1, "MPI_ANY_SOURCE, MPI_ANY_TAG");
        for (int k = 0; k <= source; k++)
            CHECK_INT(source * 1000 + k, buf[k], "MPI_ANY_SOURCE receive from %d: element %d", source, k);
    }
    next_round();
    for (int source = size - 1; source >= 1; source--) {
        MPI_Status status;
        check_preset_status(&status);
        buf[0] = -1;
        CHECK_MPI(MPI_Recv(buf, size + 2, MPI_INT, source, MPI_ANY_TAG, MPI_COMM_WORLD, &status));
        CHECK_STATUS(&status, source, 200 + source, MPI_INT, source + 1, "source given, MPI_ANY_TAG");
        CHECK_INT(source * 1000, buf[0], "source %d, MPI_ANY_TAG: element 0", source);
    }
    next_round();
    for (int source = size - 1; source >= 1; source--) {
        MPI_Status status;
        check_preset_status(&status);
        buf[0] = -1;
        CHECK_MPI(MPI_Recv(buf, size + 2, MPI_INT, MPI_ANY_SOURCE, 300 + source, MPI_COMM_WORLD, &status));
        CHECK_STATUS(&status, source, 300 + source, MPI_INT, source + 1, "MPI_ANY_SOURCE, tag given");
        CHECK_INT(source * 1000, buf[0], "MPI_ANY_SOURCE, tag %d: element 0", 300 + source);
    }
    next_round();
    free(seen);
    free(buf);
}

/* Messages of one sender to one receiver on one communicator arrive in
 * the order sent, whatever their sizes (some past the eager limit) and
 * whatever the receive's wildcards. Every rank but 0 sends a sequence to
 * rank 0, which receives them all with MPI_ANY_SOURCE. */
#define ORDER_MESSAGES 40
#define ORDER_LARGE (1 << 17)
static int order_length(int i)
{
    return i % 8 == 5 ? ORDER_LARGE : i % 5;
}

static void non_overtaking(void)
{
    int *buf = malloc(sizeof(int) * (ORDER_LARGE + 1));
    if (rank != 0) {
        for (int i = 0; i < ORDER_MESSAGES; i++) {
            int n = order_length(i);
            for (int k = 0; k < n; k++)
                buf[k] = rank * 100000 + i * 10 + k % 10;
            CHECK_MPI(MPI_Send(buf, n, MPI_INT, 0, i % 3, MPI_COMM_WORLD));
        }
        free(buf);
        return;
    }
    int *next = calloc(size, sizeof(int));
    for (int m = 0; m < (size - 1) * ORDER_MESSAGES; m++) {
        MPI_Status status;
        check_preset_status(&status);
        CHECK_MPI(MPI_Recv(buf, ORDER_LARGE + 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &status));
        int source = status.MPI_SOURCE;
        if (!CHECK(source >= 1 && source < size && next[source] < ORDER_MESSAGES, "message %d: MPI_SOURCE %d", m,
                   source))
            break;
        int i = next[source]++;
        char what[80];
        snprintf(what, sizeof what, "message %d of rank %d, in order", i, source);
        CHECK_STATUS(&status, source, i % 3, MPI_INT, order_length(i), what);
        int n = order_length(i), wrong = 0;
        for (int k = 0; k < n; k++)
            wrong += buf[k] != source * 100000 + i * 10 + k % 10;
        CHECK_INT(0, wrong, "message %d of rank %d: elements that differ from what was sent", i, source);
    }
    free(next);
    free(buf);
}

/* MPI_Rsend is correct only once the receive is posted: every rank posts
 * its receive from the left, a barrier, then sends to the right. */
static void ready_send(void)
{
    const int counts[] = {1, 1000, 1 << 18};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int count = counts[c];
        int *out = malloc(sizeof(int) * count), *in = malloc(sizeof(int) * count);
        int *expected = malloc(sizeof(int) * count);
        for (int k = 0; k < count; k++) {
            out[k] = rank * 7 + k;
            expected[k] = left * 7 + k;
            in[k] = -1;
        }
        MPI_Request request;
        MPI_Status status;
        check_preset_status(&status);
        CHECK_MPI(MPI_Irecv(in, count, MPI_INT, left, 77, MPI_COMM_WORLD, &request));
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        CHECK_MPI(MPI_Rsend(out, count, MPI_INT, right, 77, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Wait(&request, &status));
        CHECK_INTS(expected, in, (size_t)count, "MPI_Rsend of %d ints from rank %d", count, left);
        CHECK_STATUS(&status, left, 77, MPI_INT, count, "MPI_Rsend");
        free(out);
        free(in);
        free(expected);
    }
}

/* MPI_Sendrecv: a shift to the right with different send and receive
 * counts and tags, then a 1 MiB one with MPI_STATUS_IGNORE. */
static void sendrecv(void)
{
    int out[64], in[64];
    for (int k = 0; k < rank + 1 && k < 64; k++)
        out[k] = rank * 64 + k;
    for (int k = 0; k < 64; k++)
        in[k] = -1;
    MPI_Status status;
    check_preset_status(&status);
    int n = rank + 1 < 64 ? rank + 1 : 64, expected_n = left + 1 < 64 ? left + 1 : 64;
    CHECK_MPI(MPI_Sendrecv(out, n, MPI_INT, right, 500 + rank, in, 64, MPI_INT, left, MPI_ANY_TAG, MPI_COMM_WORLD,
                           &status));
    CHECK_STATUS(&status, left, 500 + left, MPI_INT, expected_n, "MPI_Sendrecv shift");
    for (int k = 0; k < expected_n; k++)
        CHECK_INT(left * 64 + k, in[k], "MPI_Sendrecv shift element %d", k);
    if (expected_n < 64)
        CHECK_INT(-1, in[expected_n], "MPI_Sendrecv shift: the element after the message is untouched");

    size_t bytes = 1 << 20;
    unsigned char *big_out = malloc(bytes), *big_in = malloc(bytes), *expected = malloc(bytes);
    check_fill(big_out, bytes, seed_of(rank, 99, 1));
    check_fill(expected, bytes, seed_of(left, 99, 1));
    memset(big_in, 0, bytes);
    CHECK_MPI(MPI_Sendrecv(big_out, (int)bytes, MPI_BYTE, right, 9, big_in, (int)bytes, MPI_BYTE, left, 9,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_BYTES(expected, big_in, bytes, "MPI_Sendrecv of 1 MiB from rank %d with MPI_STATUS_IGNORE", left);
    free(big_out);
    free(big_in);
    free(expected);
}

/* MPI_Sendrecv_replace: the buffer holds the left neighbour's values. */
static void sendrecv_replace(void)
{
    const int counts[] = {0, 1, 1000, 1 << 18};
    for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
        int count = counts[c];
        double *buf = malloc(sizeof(double) * (count + 1));
        for (int k = 0; k < count; k++)
            buf[k] = rank * 1e6 + k;
        buf[count] = -5.0;
        MPI_Status status;
        check_preset_status(&status);
        CHECK_MPI(MPI_Sendrecv_replace(buf, count, MPI_DOUBLE, right, 61, left, 61, MPI_COMM_WORLD, &status));
        CHECK_STATUS(&status, left, 61, MPI_DOUBLE, count, "MPI_Sendrecv_replace");
        int wrong = 0;
        for (int k = 0; k < count; k++)
            wrong += buf[k] != left * 1e6 + k;
        CHECK_INT(0, wrong, "MPI_Sendrecv_replace of %d doubles: elements not from rank %d", count, left);
        CHECK_DBL(-5.0, buf[count], 0, "MPI_Sendrecv_replace of %d: the element after is untouched", count);
        free(buf);
    }
}

/* MPI_PROC_NULL: sends complete at once, receives complete at once with
 * source MPI_PROC_NULL, tag MPI_ANY_TAG, count 0, and the buffer
 * untouched. */
static void proc_null(void)
{
    int buf[4] = {11, 12, 13, 14};
    MPI_Status status;
    CHECK_MPI(MPI_Send(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Ssend(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Rsend(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD));
    check_preset_status(&status);
    CHECK_MPI(MPI_Recv(buf, 4, MPI_INT, MPI_PROC_NULL, 1, MPI_COMM_WORLD, &status));
    CHECK_EMPTY_STATUS(&status, MPI_PROC_NULL, "MPI_Recv from MPI_PROC_NULL");
    CHECK_INT(11, buf[0], "MPI_Recv from MPI_PROC_NULL leaves the buffer alone");
    CHECK_INT(14, buf[3], "MPI_Recv from MPI_PROC_NULL leaves the buffer alone");

    /* A line, not a ring: the ends talk to MPI_PROC_NULL. */
    int up = rank + 1 < size ? rank + 1 : MPI_PROC_NULL, down = rank > 0 ? rank - 1 : MPI_PROC_NULL;
    int out = rank * 3 + 1, in = -7;
    check_preset_status(&status);
    CHECK_MPI(MPI_Sendrecv(&out, 1, MPI_INT, up, 3, &in, 1, MPI_INT, down, 3, MPI_COMM_WORLD, &status));
    if (down == MPI_PROC_NULL) {
        CHECK_EMPTY_STATUS(&status, MPI_PROC_NULL, "MPI_Sendrecv from MPI_PROC_NULL");
        CHECK_INT(-7, in, "MPI_Sendrecv from MPI_PROC_NULL leaves the buffer alone");
    } else {
        CHECK_STATUS(&status, down, 3, MPI_INT, 1, "MPI_Sendrecv along a line");
        CHECK_INT(down * 3 + 1, in, "MPI_Sendrecv along a line");
    }
    int value = rank;
    check_preset_status(&status);
    CHECK_MPI(MPI_Sendrecv_replace(&value, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &status));
    CHECK_EMPTY_STATUS(&status, MPI_PROC_NULL, "MPI_Sendrecv_replace with MPI_PROC_NULL");
    CHECK_INT(rank, value, "MPI_Sendrecv_replace with MPI_PROC_NULL leaves the buffer alone");
}

/* Empty messages of MPI_DATATYPE_NULL, as programs built against MPICH
 * send them (MPICH's own pt2pt/pssend does with MPI_Ssend_init): no
 * elements need no datatype, and the status counts none. */
static void empty_messages_of_no_datatype(void)
{
    MPI_Request requests[2], send;
    MPI_Status statuses[2], status;
    int n = -1;
    CHECK_MPI(MPI_Irecv(NULL, 0, MPI_DATATYPE_NULL, left, 21, MPI_COMM_WORLD, &requests[0]));
    CHECK_MPI(MPI_Isend(NULL, 0, MPI_DATATYPE_NULL, right, 21, MPI_COMM_WORLD, &requests[1]));
    CHECK_MPI(MPI_Waitall(2, requests, statuses));
    CHECK_STATUS(&statuses[0], left, 21, MPI_INT, 0, "an empty MPI_Irecv of MPI_DATATYPE_NULL");
    CHECK_MPI(MPI_Get_count(&statuses[0], MPI_BYTE, &n));
    CHECK_INT(0, n, "bytes of an empty message of MPI_DATATYPE_NULL");

    CHECK_MPI(MPI_Irecv(NULL, 0, MPI_DATATYPE_NULL, left, 22, MPI_COMM_WORLD, &requests[0]));
    CHECK_MPI(MPI_Ssend_init(NULL, 0, MPI_DATATYPE_NULL, right, 22, MPI_COMM_WORLD, &send));
    for (int round = 0; round < 2; round++) {
        CHECK_MPI(MPI_Start(&send));
        CHECK_MPI(MPI_Wait(&send, MPI_STATUS_IGNORE));
        check_preset_status(&status);
        CHECK_MPI(MPI_Wait(&requests[0], &status));
        CHECK_STATUS(&status, left, 22, MPI_INT, 0, round ? "the second empty MPI_Ssend_init of MPI_DATATYPE_NULL" : "an empty MPI_Ssend_init of MPI_DATATYPE_NULL");
        if (round == 0)
            CHECK_MPI(MPI_Irecv(NULL, 0, MPI_DATATYPE_NULL, left, 22, MPI_COMM_WORLD, &requests[0]));
    }
    CHECK_MPI(MPI_Request_free(&send));

    check_preset_status(&status);
    CHECK_MPI(MPI_Sendrecv(NULL, 0, MPI_DATATYPE_NULL, right, 23, NULL, 0, MPI_DATATYPE_NULL, left, 23,
                           MPI_COMM_WORLD, &status));
    CHECK_STATUS(&status, left, 23, MPI_INT, 0, "an empty MPI_Sendrecv of MPI_DATATYPE_NULL");
}

/* A message shorter than the receive buffer: the count is the message's,
 * the rest of the buffer is untouched; a byte count that is not a whole
 * number of elements gives MPI_UNDEFINED. */
static void counts(void)
{
    int out[10], in[100];
    for (int k = 0; k < 10; k++)
        out[k] = rank + k;
    for (int k = 0; k < 100; k++)
        in[k] = -3;
    MPI_Status status;
    check_preset_status(&status);
    ring(0, out, 10, in, 100, MPI_INT, 8, &status);
    CHECK_STATUS(&status, left, 8, MPI_INT, 10, "10 ints into a buffer of 100");
    int elements = -1;
    CHECK_MPI(MPI_Get_elements(&status, MPI_INT, &elements));
    CHECK_INT(10, elements, "MPI_Get_elements of 10 ints");
    CHECK_INT(left + 9, in[9], "10 ints into a buffer of 100: last element");
    CHECK_INT(-3, in[10], "10 ints into a buffer of 100: the element after is untouched");
    CHECK_INT(-3, in[99], "10 ints into a buffer of 100: the last element of the buffer is untouched");

    unsigned char three[3] = {1, 2, 3}, got[8] = {0};
    check_preset_status(&status);
    ring(0, three, 3, got, 8, MPI_BYTE, 9, &status);
    CHECK_STATUS(&status, left, 9, MPI_BYTE, 3, "3 bytes");
    int count = 0;
    CHECK_MPI(MPI_Get_count(&status, MPI_INT, &count));
    CHECK_INT(MPI_UNDEFINED, count, "MPI_Get_count(MPI_INT) of a 3-byte message");
    CHECK_MPI(MPI_Get_count(&status, MPI_SHORT, &count));
    CHECK_INT(MPI_UNDEFINED, count, "MPI_Get_count(MPI_SHORT) of a 3-byte message");

    int value = rank + 40, received = -1;
    ring(0, &value, 1, &received, 1, MPI_INT, 32767, MPI_STATUS_IGNORE);
    CHECK_INT(left + 40, received, "MPI_Recv with MPI_STATUS_IGNORE and tag 32767");
}

/* A status in Fortran and back (MPI_Status_c2f, MPI_Status_f2c): the same
 * source, tag and count; the ignore values, no statuses, are refused
 * with an error instead of being read or written. */
static void status_conversions(void)
{
    int sent[3] = {1, 2, 3}, got[3];
    MPI_Status status, back;
    MPI_Fint fortran[MPI_F_STATUS_SIZE];
    CHECK_MPI(MPI_Sendrecv(sent, 3, MPI_INT, 0, 17, got, 3, MPI_INT, 0, 17, MPI_COMM_SELF, &status));
    CHECK_MPI(MPI_Status_c2f(&status, fortran));
    CHECK_INT(0, fortran[MPI_F_SOURCE], "MPI_Status_c2f: the source at MPI_F_SOURCE");
    CHECK_INT(17, fortran[MPI_F_TAG], "MPI_Status_c2f: the tag at MPI_F_TAG");
    CHECK_MPI(MPI_Status_f2c(fortran, &back));
    int count = -1;
    CHECK_MPI(MPI_Get_count(&back, MPI_INT, &count));
    CHECK(back.MPI_SOURCE == 0 && back.MPI_TAG == 17 && count == 3, "MPI_Status_f2c gives the status back");
    /* MPICH 4.0.2 converts through them (a crash). */
    if (!check_on_grappe())
        return;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int refused[4] = {
        MPI_Status_c2f(MPI_STATUS_IGNORE, fortran),
        MPI_Status_f2c(MPI_F_STATUS_IGNORE, &back),
        MPI_Status_f2c(MPI_F_STATUSES_IGNORE, &back),
        MPI_Status_f2c(fortran, MPI_STATUS_IGNORE),
    };
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    for (int i = 0; i < 4; i++) {
        int class = MPI_SUCCESS;
        MPI_Error_class(refused[i], &class);
        CHECK_INT(MPI_ERR_ARG, class, "status conversion %d of an ignore value: error class", i);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("p2p");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;

    types_and_sizes(0);
    types_and_sizes(1);
    wildcards();
    non_overtaking();
    ready_send();
    sendrecv();
    sendrecv_replace();
    proc_null();
    counts();
    empty_messages_of_no_datatype();
    status_conversions();
    return check_finish();
}

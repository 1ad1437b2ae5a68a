/* MPI_Get_elements (and _x) after a receive that filled only part of an
 * element of a datatype whose parts differ (a struct): the count is the
 * number of whole predefined elements received, walking the type map in
 * order (MPI-4.0 5.1.11), and MPI_Get_count says MPI_UNDEFINED; a pair
 * type (MPI_DOUBLE_INT) counts its value and its index as two elements, so
 * a pair whose value came without its index counts one. Each rank
 * sends to itself, so it runs on any number of ranks. A status set with
 * MPI_Status_set_elements_x to more elements than an int holds gives them
 * back whole through MPI_Get_elements_x, MPI_UNDEFINED through
 * MPI_Get_elements, and keeps its cancelled flag. */
#include "check.h"

/* { int n; char text[256]; double tail; } as a struct datatype. */
static MPI_Datatype int_chars_double(void)
{
    int lens[3] = {1, 256, 1};
    MPI_Aint displs[3] = {0, sizeof(int), sizeof(int) + 256};
    MPI_Datatype types[3] = {MPI_INT, MPI_CHAR, MPI_DOUBLE}, t;
    MPI_Type_create_struct(3, lens, displs, types, &t);
    MPI_Type_commit(&t);
    return t;
}

/* A struct of the first `nparts` parts of { int; char[chars]; }: the
 * leading part of the receive type's signature, so that the signatures of
 * send and receive match. */
static MPI_Datatype prefix_type(int nparts, int chars)
{
    int lens[2] = {1, chars};
    MPI_Aint displs[2] = {0, sizeof(int)};
    MPI_Datatype types[2] = {MPI_INT, MPI_CHAR}, t;
    MPI_Type_create_struct(nparts, lens, displs, types, &t);
    MPI_Type_commit(&t);
    return t;
}

static void partial_struct(void)
{
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Datatype t = int_chars_double();
    char in[600], out[600] = {0};
    /* What is sent -> whole elements received: the int, then chars one
     * each (the double never comes). */
    const int nparts[] = {0, 1, 2, 2, 2};
    const int chars[] = {0, 0, 1, 17, 256};
    const int expected[] = {0, 1, 2, 18, 257};
    for (int i = 0; i < (int)(sizeof expected / sizeof expected[0]); i++) {
        MPI_Datatype sent = prefix_type(nparts[i], chars[i]);
        MPI_Status status;
        CHECK_MPI(MPI_Sendrecv(out, 1, sent, rank, 3, in, 1, t, rank, 3, MPI_COMM_WORLD, &status));
        MPI_Type_free(&sent);
        int elements = -1, count = -1;
        MPI_Count elements_x = -1;
        CHECK_MPI(MPI_Get_elements(&status, t, &elements));
        CHECK_INT(expected[i], elements, "MPI_Get_elements after an int and %d chars into { int; char[256]; double }",
                  chars[i]);
        CHECK_MPI(MPI_Get_elements_x(&status, t, &elements_x));
        CHECK_INT(expected[i], elements_x, "MPI_Get_elements_x after an int and %d chars", chars[i]);
        CHECK_MPI(MPI_Get_count(&status, t, &count));
        CHECK_INT(expected[i] == 0 ? 0 : MPI_UNDEFINED, count, "MPI_Get_count after an int and %d chars", chars[i]);
    }
    /* One whole element and an int and 4 chars of the next, received
     * through a contiguous type of two: 258 + 5 elements. */
    MPI_Datatype two, sent;
    MPI_Type_contiguous(2, t, &two);
    MPI_Type_commit(&two);
    MPI_Aint lb, extent;
    MPI_Type_get_extent(t, &lb, &extent);
    int lens[3] = {1, 1, 4};
    MPI_Aint displs[3] = {0, extent, extent + sizeof(int)};
    MPI_Datatype types[3] = {t, MPI_INT, MPI_CHAR};
    MPI_Type_create_struct(3, lens, displs, types, &sent);
    MPI_Type_commit(&sent);
    char *send_buf = calloc(1, 2 * extent), *recv_buf = malloc(2 * extent);
    int elements = -1;
    MPI_Status status;
    CHECK_MPI(MPI_Sendrecv(send_buf, 1, sent, rank, 4, recv_buf, 1, two, rank, 4, MPI_COMM_WORLD, &status));
    CHECK_MPI(MPI_Get_elements(&status, two, &elements));
    CHECK_INT(258 + 5, elements, "MPI_Get_elements after 1 element and an int and 4 chars of the next");
    free(send_buf);
    free(recv_buf);
    MPI_Type_free(&sent);
    MPI_Type_free(&two);
    MPI_Type_free(&t);
}

/* { double, int, double } received as two MPI_DOUBLE_INT: three elements. */
static void partial_pair(void)
{
    struct {
        double a;
        int b;
        double c;
    } sent = {1.5, 2, 3.5};
    struct {
        double a;
        int b;
        double c;
        int d;
    } got;
    int lens[3] = {1, 1, 1}, elements = -1, count = -1;
    MPI_Aint displs[3] = {0, (char *)&sent.b - (char *)&sent, (char *)&sent.c - (char *)&sent};
    MPI_Datatype types[3] = {MPI_DOUBLE, MPI_INT, MPI_DOUBLE}, t;
    MPI_Status status;
    MPI_Type_create_struct(3, lens, displs, types, &t);
    MPI_Type_commit(&t);
    /* On MPI_COMM_SELF: MPICH 4.0.2 reports truncation on its world's self path. */
    CHECK_MPI(MPI_Sendrecv(&sent, 1, t, 0, 5, &got, 2, MPI_DOUBLE_INT, 0, 5, MPI_COMM_SELF, &status));
    CHECK_MPI(MPI_Get_elements(&status, MPI_DOUBLE_INT, &elements));
    CHECK_INT(3, elements, "MPI_Get_elements of MPI_DOUBLE_INT after a double, an int and a double");
    CHECK_MPI(MPI_Get_count(&status, MPI_DOUBLE_INT, &count));
    CHECK_INT(MPI_UNDEFINED, count, "MPI_Get_count of MPI_DOUBLE_INT after one and a half pairs");
    MPI_Type_free(&t);
}

static void big_counts(void)
{
    const MPI_Count counts[] = {60, (MPI_Count)1 << 31, 0x3654321f71234567LL, 0x7654321ff1234567LL};
    for (int i = 0; i < 4; i++) {
        for (int cancelled = 0; cancelled < 2; cancelled++) {
            MPI_Status status;
            MPI_Count got = -1;
            int flag = -1, elements = -1;
            CHECK_MPI(MPI_Status_set_cancelled(&status, cancelled));
            CHECK_MPI(MPI_Status_set_elements_x(&status, MPI_BYTE, counts[i]));
            CHECK_MPI(MPI_Get_elements_x(&status, MPI_BYTE, &got));
            CHECK(got == counts[i], "MPI_Get_elements_x after MPI_Status_set_elements_x(%llx): got %llx",
                  (long long)counts[i], (long long)got);
            CHECK_MPI(MPI_Get_elements(&status, MPI_BYTE, &elements));
            CHECK_INT(counts[i] > 0x7fffffff ? MPI_UNDEFINED : (int)counts[i], elements,
                      "MPI_Get_elements after MPI_Status_set_elements_x(%llx)", (long long)counts[i]);
            CHECK_MPI(MPI_Test_cancelled(&status, &flag));
            CHECK_INT(cancelled, flag, "MPI_Test_cancelled after MPI_Status_set_elements_x(%llx)", (long long)counts[i]);
        }
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("partial_elements");
    partial_struct();
    partial_pair();
    big_counts();
    return check_finish();
}

/* Buffered sends: MPI_Bsend, MPI_Ibsend and persistent MPI_Bsend_init with
 * an attached buffer, received in order; MPI_Buffer_detach gives the buffer
 * back; a buffer with room for one large message reused round after round. Also MPI_Get_elements_x and MPI_Info_get_string. Runs on any number
 * of ranks. */
#include "check.h"

static int rank, size, left, right;

static void buffered(void)
{
    int room = 8 * (sizeof(int) + MPI_BSEND_OVERHEAD); /* room to spare: MPICH counts more than the overhead */
    char *memory = malloc(room);
    CHECK_MPI(MPI_Buffer_attach(memory, room));
    int value = 10 * rank, got[4] = {-1, -1, -1, -1};
    MPI_Request persistent, immediate;
    CHECK_MPI(MPI_Bsend_init(&value, 1, MPI_INT, right, 7, MPI_COMM_WORLD, &persistent));
    CHECK_MPI(MPI_Bsend(&value, 1, MPI_INT, right, 7, MPI_COMM_WORLD));
    CHECK_MPI(MPI_Ibsend(&value, 1, MPI_INT, right, 7, MPI_COMM_WORLD, &immediate));
    CHECK_MPI(MPI_Wait(&immediate, MPI_STATUS_IGNORE));
    for (int i = 0; i < 2; i++) {
        CHECK_MPI(MPI_Start(&persistent));
        CHECK_MPI(MPI_Wait(&persistent, MPI_STATUS_IGNORE));
        CHECK(persistent != MPI_REQUEST_NULL, "a persistent request stays allocated after its wait");
    }
    MPI_Status status;
    for (int i = 0; i < 4; i++) {
        CHECK_MPI(MPI_Recv(&got[i], 1, MPI_INT, left, 7, MPI_COMM_WORLD, &status));
        CHECK_INT(10 * left, got[i], "buffered message %d", i);
    }
    MPI_Count elements = -1;
    CHECK_MPI(MPI_Get_elements_x(&status, MPI_INT, &elements));
    CHECK_INT(1, (int)elements, "MPI_Get_elements_x of one int");
    CHECK_MPI(MPI_Request_free(&persistent));
    void *detached = NULL;
    int detached_size = -1;
    CHECK_MPI(MPI_Buffer_detach(&detached, &detached_size));
    CHECK(detached == memory, "MPI_Buffer_detach gives the attached buffer back");
    CHECK_INT(room, detached_size, "MPI_Buffer_detach gives its size back");
    free(memory);
}

/* Room for one large message only, sent again and again: each Bsend finds
 * the room its previous message took free again once the receiver has it
 * (the barrier says so), whether or not the sender noticed yet. */
static void room_for_one(void)
{
    enum { BIG = 1 << 16, ROUNDS = 20 };
    int room = BIG + MPI_BSEND_OVERHEAD + 1024;
    char *memory = malloc(room), *out = malloc(BIG), *in = malloc(BIG);
    CHECK_MPI(MPI_Buffer_attach(memory, room));
    for (int round = 0; round < ROUNDS; round++) {
        memset(out, round + rank, BIG);
        CHECK_MPI(MPI_Bsend(out, BIG, MPI_BYTE, right, 8, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Recv(in, BIG, MPI_BYTE, left, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK(in[0] == (char)(round + left) && in[BIG - 1] == (char)(round + left), "round %d: the message from %d",
              round, left);
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    /* More than the whole buffer: refused, whatever is under way. */
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    char *twice = calloc(2, BIG);
    int rc = MPI_Bsend(twice, 2 * BIG, MPI_BYTE, right, 9, comm), cls = -1;
    MPI_Error_class(rc, &cls);
    CHECK_INT(MPI_ERR_BUFFER, cls, "MPI_Bsend of more than the attached buffer holds");
    MPI_Comm_free(&comm);
    free(twice);
    void *detached = NULL;
    int detached_size = -1;
    CHECK_MPI(MPI_Buffer_detach(&detached, &detached_size));
    free(memory), free(out), free(in);
}

static void info_string(void)
{
    MPI_Info info;
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "colour", "blue"));
    char value[16];
    int len = sizeof value, flag = 0;
    CHECK_MPI(MPI_Info_get_string(info, "colour", &len, value, &flag));
    CHECK_INT(1, flag, "MPI_Info_get_string finds a key set");
    CHECK_INT(5, len, "MPI_Info_get_string's length counts the NUL");
    CHECK(strcmp(value, "blue") == 0, "MPI_Info_get_string's value (got \"%s\")", value);
    CHECK_MPI(MPI_Info_free(&info));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("buffered");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    left = (rank + size - 1) % size;
    right = (rank + 1) % size;
    buffered();
    room_for_one();
    info_string();
    return check_finish();
}

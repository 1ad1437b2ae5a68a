/* The external32 representation: MPI_Pack_external_size, MPI_Pack_external
 * (integers and doubles big-endian at the standard's sizes, appended at the
 * position), MPI_Unpack_external (the values back, a strided vector of
 * doubles too). Runs on any number of ranks. */
#include "check.h"

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("external32");
    MPI_Aint size = -1;
    CHECK_MPI(MPI_Pack_external_size("external32", 3, MPI_INT, &size));
    CHECK_INT(12, size, "external32 size of 3 ints");
    CHECK_MPI(MPI_Pack_external_size("external32", 2, MPI_DOUBLE, &size));
    CHECK_INT(16, size, "external32 size of 2 doubles");

    int ints[2] = {0x01020304, -2};
    double d = 1.5;
    unsigned char buf[64];
    memset(buf, 0xee, sizeof buf);
    MPI_Aint position = 0;
    CHECK_MPI(MPI_Pack_external("external32", ints, 2, MPI_INT, buf, sizeof buf, &position));
    CHECK_INT(8, position, "position after two ints");
    CHECK_MPI(MPI_Pack_external("external32", &d, 1, MPI_DOUBLE, buf, sizeof buf, &position));
    CHECK_INT(16, position, "position after a double");
    unsigned char expected[16] = {1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0};
    CHECK(memcmp(expected, buf, 16) == 0, "big-endian bytes: %02x %02x %02x %02x ... %02x %02x", buf[0], buf[1], buf[2],
          buf[3], buf[8], buf[9]);

    int back[2] = {0, 0};
    double e = 0;
    position = 0;
    CHECK_MPI(MPI_Unpack_external("external32", buf, 16, &position, back, 2, MPI_INT));
    CHECK_MPI(MPI_Unpack_external("external32", buf, 16, &position, &e, 1, MPI_DOUBLE));
    CHECK(back[0] == ints[0] && back[1] == ints[1] && e == 1.5, "values back: %d %d %g", back[0], back[1], e);
    CHECK_INT(16, position, "position after unpacking");

    /* Every other double of 6, as a vector type. */
    MPI_Datatype every_other;
    MPI_Type_vector(3, 1, 2, MPI_DOUBLE, &every_other);
    MPI_Type_commit(&every_other);
    double six[6] = {1, -1, 2, -1, 3, -1}, three[6] = {0, 0, 0, 0, 0, 0};
    CHECK_MPI(MPI_Pack_external_size("external32", 1, every_other, &size));
    CHECK_INT(24, size, "external32 size of the vector");
    position = 0;
    CHECK_MPI(MPI_Pack_external("external32", six, 1, every_other, buf, sizeof buf, &position));
    position = 0;
    CHECK_MPI(MPI_Unpack_external("external32", buf, 24, &position, three, 1, every_other));
    CHECK(three[0] == 1 && three[2] == 2 && three[4] == 3 && three[1] == 0, "the vector back: %g %g %g (gap %g)",
          three[0], three[2], three[4], three[1]);
    MPI_Type_free(&every_other);

    return check_finish();
}

/* Operations of MPI_Op_create on derived datatypes, as libraries such as
 * ScaLAPACK's BLACS use them: the program's function reads its operands
 * where the datatype says (a struct with padding, a struct of two arrays
 * with a gap between them, a strided vector), in every reduction
 * (MPI_Reduce at every root, MPI_Allreduce, MPI_Iallreduce, MPI_Scan,
 * MPI_Exscan, MPI_Reduce_scatter(_block), MPI_Reduce_local); a
 * non-commutative one combines in rank order; the gaps of a receive buffer
 * are left as they were. */
#include "check.h"

#include <stddef.h>

static int rank, size;

/* ---- a struct with padding: max of value, the smaller index on a tie ---- */
struct particle {
    double value;
    char tag; /* padding follows */
    int index;
};

static MPI_Datatype particle_type(void)
{
    int lengths[3] = {1, 1, 1};
    MPI_Aint displs[3] = {offsetof(struct particle, value), offsetof(struct particle, tag),
                          offsetof(struct particle, index)};
    MPI_Datatype types[3] = {MPI_DOUBLE, MPI_CHAR, MPI_INT}, t, resized;
    CHECK_MPI(MPI_Type_create_struct(3, lengths, displs, types, &t));
    CHECK_MPI(MPI_Type_create_resized(t, 0, sizeof(struct particle), &resized));
    CHECK_MPI(MPI_Type_commit(&resized));
    MPI_Type_free(&t);
    return resized;
}

static int particle_calls_bad_type;
static MPI_Datatype the_particle_type;

static void particle_max(void *in, void *inout, int *len, MPI_Datatype *type)
{
    if (*type != the_particle_type)
        particle_calls_bad_type++;
    struct particle *a = in, *b = inout;
    for (int i = 0; i < *len; i++) {
        if (a[i].value > b[i].value || (a[i].value == b[i].value && a[i].index < b[i].index)) {
            b[i].value = a[i].value;
            b[i].index = a[i].index;
        }
        b[i].tag = (char)(a[i].tag > b[i].tag ? a[i].tag : b[i].tag);
    }
}

/* What rank r holds at element i: the maximum moves between ranks with i. */
static struct particle particle_of(int r, int i)
{
    struct particle p;
    memset(&p, 0x5a, sizeof p);
    p.value = (double)((r * 7 + i * 3) % 5);
    p.tag = (char)('a' + r);
    p.index = 100 * r + i;
    return p;
}

/* The maximum over ranks from..to (inclusive) at element i. */
static struct particle particle_expected(int from, int to, int i)
{
    struct particle best = particle_of(from, i);
    for (int r = from + 1; r <= to; r++) {
        struct particle p = particle_of(r, i);
        if (p.value > best.value || (p.value == best.value && p.index < best.index)) {
            best.value = p.value;
            best.index = p.index;
        }
        if (p.tag > best.tag)
            best.tag = p.tag;
    }
    return best;
}

static void check_particles(const struct particle *got, int from, int to, int n, const char *what)
{
    for (int i = 0; i < n; i++) {
        struct particle e = particle_expected(from, to, i);
        CHECK_INT((int)e.value, (int)got[i].value, "%s: element %d's value", what, i);
        CHECK_INT(e.index, got[i].index, "%s: element %d's index", what, i);
        CHECK_INT(e.tag, got[i].tag, "%s: element %d's tag", what, i);
        /* The padding after the tag is no part of the datatype. */
        const unsigned char *pad = (const unsigned char *)&got[i].tag + 1;
        for (const unsigned char *p = pad; p < (const unsigned char *)&got[i].index; p++)
            CHECK_INT(0xee, *p, "%s: element %d's padding is left as it was", what, i);
    }
}

static void unset(struct particle *p, int n)
{
    memset(p, 0xee, n * sizeof *p);
}

static void particles(void)
{
    enum { N = 3 };
    MPI_Datatype type = particle_type();
    the_particle_type = type;
    MPI_Op op;
    CHECK_MPI(MPI_Op_create(particle_max, 1, &op));
    struct particle in[N * 8], out[N * 8];
    for (int i = 0; i < N; i++)
        in[i] = particle_of(rank, i);

    unset(out, N);
    CHECK_MPI(MPI_Allreduce(in, out, N, type, op, MPI_COMM_WORLD));
    check_particles(out, 0, size - 1, N, "MPI_Allreduce of a padded struct");

    for (int root = 0; root < size; root++) {
        unset(out, N);
        CHECK_MPI(MPI_Reduce(in, out, N, type, op, root, MPI_COMM_WORLD));
        if (rank == root)
            check_particles(out, 0, size - 1, N, "MPI_Reduce of a padded struct");
    }

    MPI_Request request;
    unset(out, N);
    CHECK_MPI(MPI_Iallreduce(in, out, N, type, op, MPI_COMM_WORLD, &request));
    CHECK_MPI(MPI_Wait(&request, MPI_STATUS_IGNORE));
    check_particles(out, 0, size - 1, N, "MPI_Iallreduce of a padded struct");

    unset(out, N);
    CHECK_MPI(MPI_Scan(in, out, N, type, op, MPI_COMM_WORLD));
    check_particles(out, 0, rank, N, "MPI_Scan of a padded struct");
    unset(out, N);
    CHECK_MPI(MPI_Exscan(in, out, N, type, op, MPI_COMM_WORLD));
    if (rank > 0)
        check_particles(out, 0, rank - 1, N, "MPI_Exscan of a padded struct");

    /* Reduce-scatter: element j of block b is particle j of rank-set... each
     * rank gives size blocks of N elements; block b goes to rank b. */
    struct particle all[N * 8];
    for (int b = 0; b < size; b++)
        for (int i = 0; i < N; i++)
            all[b * N + i] = particle_of(rank, b * N + i);
    unset(out, N);
    CHECK_MPI(MPI_Reduce_scatter_block(all, out, N, type, op, MPI_COMM_WORLD));
    for (int i = 0; i < N; i++) {
        struct particle e = particle_expected(0, size - 1, rank * N + i);
        CHECK_INT(e.index, out[i].index, "MPI_Reduce_scatter_block of a padded struct: element %d's index", i);
    }
    int counts[8];
    for (int b = 0; b < size; b++)
        counts[b] = b % 2 ? N : 1;
    unset(out, N);
    CHECK_MPI(MPI_Reduce_scatter(all, out, counts, type, op, MPI_COMM_WORLD));
    int first = 0;
    for (int b = 0; b < rank; b++)
        first += counts[b];
    for (int i = 0; i < counts[rank]; i++) {
        struct particle e = particle_expected(0, size - 1, first + i);
        CHECK_INT(e.index, out[i].index, "MPI_Reduce_scatter of a padded struct: element %d's index", i);
    }

    /* MPI_Reduce_local: the function on this rank's two buffers. */
    struct particle other[N];
    for (int i = 0; i < N; i++)
        other[i] = particle_of(rank + 1, i);
    memcpy(out, in, sizeof(struct particle) * N);
    CHECK_MPI(MPI_Reduce_local(other, out, N, type, op));
    for (int i = 0; i < N; i++) {
        struct particle e = particle_expected(rank, rank + 1, i);
        CHECK_INT(e.index, out[i].index, "MPI_Reduce_local of a padded struct: element %d's index", i);
    }
    CHECK_INT(0, particle_calls_bad_type, "the function is called with the program's datatype");
    CHECK_MPI(MPI_Op_free(&op));
    CHECK_MPI(MPI_Type_free(&type));
}

/* ---- BLACS's amax: one element of n doubles, a gap, then n ints ---- */
enum { AMAX_N = 5, AMAX_GAP = 3 };
struct amax {
    double values[AMAX_N];
    double gap[AMAX_GAP];
    int where[AMAX_N];
};

static void amax_combine(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    /* As BLACS: the length the function is given counts whole structs. */
    for (int k = 0; k < *len; k++) {
        struct amax *a = (struct amax *)in + k, *b = (struct amax *)inout + k;
        for (int i = 0; i < AMAX_N; i++)
            if (a->values[i] > b->values[i] || (a->values[i] == b->values[i] && a->where[i] < b->where[i])) {
                b->values[i] = a->values[i];
                b->where[i] = a->where[i];
            }
    }
}

static void amax(void)
{
    int lengths[2] = {AMAX_N, AMAX_N};
    MPI_Aint displs[2] = {offsetof(struct amax, values), offsetof(struct amax, where)};
    MPI_Datatype types[2] = {MPI_DOUBLE, MPI_INT}, type;
    CHECK_MPI(MPI_Type_create_struct(2, lengths, displs, types, &type));
    CHECK_MPI(MPI_Type_commit(&type));
    MPI_Op op;
    CHECK_MPI(MPI_Op_create(amax_combine, 1, &op));
    struct amax in, out;
    for (int i = 0; i < AMAX_N; i++) {
        in.values[i] = (double)((rank + i) % size);
        in.where[i] = rank * 10 + i;
    }
    memset(&out, 0xee, sizeof out);
    CHECK_MPI(MPI_Allreduce(&in, &out, 1, type, op, MPI_COMM_WORLD));
    for (int i = 0; i < AMAX_N; i++) {
        int winner = ((size - 1 - i) % size + size) % size; /* (winner + i) % size == size - 1 */
        CHECK_INT(size - 1, (int)out.values[i], "BLACS-style amax: value %d", i);
        CHECK_INT(winner * 10 + i, out.where[i], "BLACS-style amax: where %d", i);
    }
    unsigned char gap[sizeof out.gap];
    memset(gap, 0xee, sizeof gap);
    CHECK_INT(0, memcmp(gap, out.gap, sizeof gap), "BLACS-style amax: the gap is left as it was");
    CHECK_MPI(MPI_Op_free(&op));
    CHECK_MPI(MPI_Type_free(&type));
}

/* ---- a strided vector and a non-commutative function ---- */
/* 2x2 integer matrices, one int apart from the next (stride 2): the
 * function composes them in rank order, so order mistakes show. */
static void compose(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    int *a = in, *b = inout;
    /* Each element: the 4 entries at stride 2 (the vector's layout); the
     * element's extent is 8 ints. */
    for (int k = 0; k < *len; k++) {
        int *x = a + 8 * k, *y = b + 8 * k;
        int r0 = x[0] * y[0] + x[2] * y[4], r1 = x[0] * y[2] + x[2] * y[6];
        int r2 = x[4] * y[0] + x[6] * y[4], r3 = x[4] * y[2] + x[6] * y[6];
        y[0] = r0, y[2] = r1, y[4] = r2, y[6] = r3;
    }
}

static void matrix_of(int r, int *m)
{
    /* Upper triangular [[1, r+1], [0, 1]]... made non-commuting by a
     * rank-dependent lower entry on odd ranks. */
    m[0] = 1, m[2] = r + 1, m[4] = r % 2, m[6] = 1;
}

static void product(int from, int to, int *p)
{
    int acc[8];
    matrix_of(from, acc);
    for (int r = from + 1; r <= to; r++) {
        int m[8];
        matrix_of(r, m);
        int r0 = acc[0] * m[0] + acc[2] * m[4], r1 = acc[0] * m[2] + acc[2] * m[6];
        int r2 = acc[4] * m[0] + acc[6] * m[4], r3 = acc[4] * m[2] + acc[6] * m[6];
        acc[0] = r0, acc[2] = r1, acc[4] = r2, acc[6] = r3;
    }
    memcpy(p, acc, sizeof acc);
}

static void strided(void)
{
    MPI_Datatype vector, type;
    CHECK_MPI(MPI_Type_vector(4, 1, 2, MPI_INT, &vector));
    CHECK_MPI(MPI_Type_create_resized(vector, 0, 8 * sizeof(int), &type));
    CHECK_MPI(MPI_Type_commit(&type));
    MPI_Op op;
    CHECK_MPI(MPI_Op_create(compose, 0, &op));
    int in[16], out[16], expected[8];
    for (int k = 0; k < 2; k++)
        matrix_of(rank, in + 8 * k);
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < 16; i++)
            out[i] = -7;
        CHECK_MPI(MPI_Reduce(in, out, 2, type, op, root, MPI_COMM_WORLD));
        if (rank != root)
            continue;
        product(0, size - 1, expected);
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < 8; i++)
                CHECK_INT(i % 2 ? -7 : expected[i], out[8 * k + i],
                          "non-commutative MPI_Reduce on a strided vector to root %d: int %d of element %d", root, i, k);
    }
    for (int i = 0; i < 16; i++)
        out[i] = -7;
    CHECK_MPI(MPI_Scan(in, out, 2, type, op, MPI_COMM_WORLD));
    product(0, rank, expected);
    for (int i = 0; i < 8; i++)
        CHECK_INT(i % 2 ? -7 : expected[i], out[8 + i], "non-commutative MPI_Scan on a strided vector: int %d", i);

    CHECK_MPI(MPI_Op_free(&op));
    CHECK_MPI(MPI_Type_free(&type));
    CHECK_MPI(MPI_Type_free(&vector));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("user_ops");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size > 8) {
        if (rank == 0)
            fprintf(stderr, "user_ops runs on up to 8 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    particles();
    amax();
    strided();
    return check_finish();
}

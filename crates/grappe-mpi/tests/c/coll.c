/* Blocking collectives: MPI_Barrier, MPI_Bcast (every root, up to 1 MiB),
 * MPI_Reduce/MPI_Allreduce with every predefined arithmetic, logical and
 * bitwise operation on MPI_INT, MPI_LONG, MPI_LONG_LONG, MPI_UNSIGNED,
 * MPI_FLOAT and MPI_DOUBLE, MPI_SUM/MPI_PROD/MPI_MAX/MPI_MIN on
 * MPI_LONG_DOUBLE (on x86-64, with values that differ past a double's
 * precision), MPI_MAXLOC/MPI_MINLOC on the pair types (MPI_LONG_DOUBLE_INT
 * on x86-64), MPI_IN_PLACE, MPI_Gather(v), MPI_Scatter(v), MPI_Allgather(v),
 * MPI_Alltoall(v), MPI_Reduce_scatter(_block), MPI_Scan, MPI_Exscan. Each
 * runs on MPI_COMM_WORLD, on MPI_COMM_SELF and on the halves of an
 * odd/even MPI_Comm_split whose keys reverse the rank order (so a
 * collective that confuses communicator and world ranks fails). The
 * values are small integers, exact in floating point whatever the order
 * of the reduction. */
#include "check.h"

static const char *on = "?"; /* the communicator's name, for messages */
static int rank, size;      /* in the communicator under test */

/* What rank r contributes at index i to a reduction with `op` over n
 * ranks: values whose results are exact and not trivial (logical
 * operations give both true and false, products stay small). */
static long long op_value(MPI_Op op, int r, int i, int n, int is_signed)
{
    if (op == MPI_SUM)
        return (long long)(r + 1) * (i % 7 + 1) - (is_signed ? 3 * (i % 2) : 0);
    if (op == MPI_PROD) {
        if (is_signed && (r + i) % 5 == 4)
            return -1;
        return (r + i) % 3 == 0 ? 2 : 1;
    }
    if (op == MPI_MAX || op == MPI_MIN)
        return (r * 37 + i * 11) % 101 - (is_signed ? 50 : 0);
    if (op == MPI_LAND) /* false for one rank at most: some indices all true */
        return (i + r) % (n + 1) == 0 ? 0 : i % 2 + 1;
    if (op == MPI_LOR) /* true for one rank at most: some indices all false */
        return (i + r) % (n + 1) == n ? i % 3 + 1 : 0;
    if (op == MPI_LXOR)
        return (r * i + r + i) % 3 != 0;
    return (long long)((((unsigned)r + 1u) * 2654435761u) ^ ((unsigned)i * 2246822519u)) & 0x7fffffff;
}

static void report_mismatch(const char *what, int count, int first, int differing, double expected, double got)
{
    if (differing)
        check_fail(__FILE__, __LINE__, "", "%s on %s, %d elements: %d differ, first [%d]: expected %.17g, got %.17g",
                   what, on, count, differing, first, expected, got);
}

/* Which calls reduce_NAME checks. */
enum { ALLREDUCE = 1, REDUCE = 2, IN_PLACE = 4 };

/* Defines reduce_NAME, which checks MPI_Allreduce, MPI_Reduce and their
 * MPI_IN_PLACE forms (as `calls` says) for one type, operation and count. */
#define DEFINE_REDUCE(T, NAME)                                                                                  \
    static T combine_##NAME(MPI_Op op, T a, T b)                                                                \
    {                                                                                                           \
        if (op == MPI_SUM)                                                                                      \
            return a + b;                                                                                       \
        if (op == MPI_PROD)                                                                                     \
            return a * b;                                                                                       \
        if (op == MPI_MAX)                                                                                      \
            return a > b ? a : b;                                                                               \
        if (op == MPI_MIN)                                                                                      \
            return a < b ? a : b;                                                                               \
        if (op == MPI_LAND)                                                                                     \
            return (T)(a != 0 && b != 0);                                                                       \
        if (op == MPI_LOR)                                                                                      \
            return (T)(a != 0 || b != 0);                                                                       \
        if (op == MPI_LXOR)                                                                                     \
            return (T)((a != 0) != (b != 0));                                                                   \
        long long x = (long long)a, y = (long long)b;                                                           \
        if (op == MPI_BAND)                                                                                     \
            return (T)(x & y);                                                                                  \
        if (op == MPI_BOR)                                                                                      \
            return (T)(x | y);                                                                                  \
        return (T)(x ^ y);                                                                                      \
    }                                                                                                           \
                                                                                                                \
    static void compare_##NAME(const char *what, const T *expected, const T *got, int count)                   \
    {                                                                                                           \
        int first = -1, differing = 0;                                                                          \
        for (int i = 0; i < count; i++)                                                                         \
            if (expected[i] != got[i]) {                                                                        \
                if (first < 0)                                                                                  \
                    first = i;                                                                                  \
                differing++;                                                                                    \
            }                                                                                                   \
        if (differing)                                                                                          \
            report_mismatch(what, count, first, differing, (double)expected[first], (double)got[first]);        \
    }                                                                                                           \
                                                                                                                \
    static void reduce_##NAME(MPI_Comm comm, MPI_Datatype type, const char *type_name, int is_signed, MPI_Op op, \
                              const char *op_name, int count, int root, int calls)                              \
    {                                                                                                           \
        T *in = malloc(sizeof(T) * (count + 1)), *out = malloc(sizeof(T) * (count + 1));                        \
        T *expected = malloc(sizeof(T) * (count + 1));                                                          \
        for (int i = 0; i < count; i++) {                                                                       \
            in[i] = (T)op_value(op, rank, i, size, is_signed);                                                  \
            T acc = (T)op_value(op, 0, i, size, is_signed);                                                     \
            for (int q = 1; q < size; q++)                                                                      \
                acc = combine_##NAME(op, acc, (T)op_value(op, q, i, size, is_signed));                          \
            expected[i] = acc;                                                                                  \
        }                                                                                                       \
        T sentinel = (T)77;                                                                                     \
        expected[count] = sentinel;                                                                             \
        char what[160];                                                                                         \
                                                                                                                \
        if (calls & ALLREDUCE) {                                                                                \
            for (int i = 0; i <= count; i++)                                                                    \
                out[i] = sentinel;                                                                              \
            CHECK_MPI(MPI_Allreduce(in, out, count, type, op, comm));                                           \
            snprintf(what, sizeof what, "MPI_Allreduce %s %s (and the element after)", op_name, type_name);     \
            compare_##NAME(what, expected, out, count + 1);                                                     \
        }                                                                                                       \
        if (calls & REDUCE) {                                                                                   \
            for (int i = 0; i <= count; i++)                                                                    \
                out[i] = sentinel;                                                                              \
            CHECK_MPI(MPI_Reduce(in, out, count, type, op, root, comm));                                        \
            snprintf(what, sizeof what, "MPI_Reduce %s %s to root %d", op_name, type_name, root);               \
            if (rank == root)                                                                                   \
                compare_##NAME(what, expected, out, count + 1);                                                 \
        }                                                                                                       \
        if (!(calls & IN_PLACE))                                                                                \
            goto done;                                                                                          \
        memcpy(out, in, sizeof(T) * count);                                                                     \
        CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, out, count, type, op, comm));                                     \
        snprintf(what, sizeof what, "MPI_Allreduce MPI_IN_PLACE %s %s", op_name, type_name);                    \
        compare_##NAME(what, expected, out, count + 1);                                                         \
                                                                                                                \
        /* MPICH 4.0.2 (ch4) crashes on an MPI_IN_PLACE MPI_Reduce of more    \
         * than 2 KiB at a root other than 0: those use root 0. */            \
        int in_place_root = sizeof(T) * count > 2048 ? 0 : root;                                                \
        memcpy(out, in, sizeof(T) * count);                                                                     \
        if (rank == in_place_root)                                                                              \
            CHECK_MPI(MPI_Reduce(MPI_IN_PLACE, out, count, type, op, in_place_root, comm));                     \
        else                                                                                                    \
            CHECK_MPI(MPI_Reduce(in, NULL, count, type, op, in_place_root, comm));                              \
        snprintf(what, sizeof what, "MPI_Reduce MPI_IN_PLACE %s %s at root %d", op_name, type_name,             \
                 in_place_root);                                                                                \
        if (rank == in_place_root)                                                                              \
            compare_##NAME(what, expected, out, count + 1);                                                     \
    done:                                                                                                       \
        free(in);                                                                                               \
        free(out);                                                                                              \
        free(expected);                                                                                         \
    }

DEFINE_REDUCE(int, int)
DEFINE_REDUCE(long, long)
DEFINE_REDUCE(long long, long_long)
DEFINE_REDUCE(unsigned, unsigned)
DEFINE_REDUCE(float, float)
DEFINE_REDUCE(double, double)

typedef void (*reduce_fn)(MPI_Comm, MPI_Datatype, const char *, int, MPI_Op, const char *, int, int, int);

struct reduce_type {
    MPI_Datatype type;
    const char *name;
    int is_signed, is_integer;
    reduce_fn run;
};

struct reduce_op {
    MPI_Op op;
    const char *name;
    int integer_only;
};

static void reductions(MPI_Comm comm)
{
    const struct reduce_type types[] = {
        {MPI_INT, "MPI_INT", 1, 1, reduce_int},
        {MPI_LONG, "MPI_LONG", 1, 1, reduce_long},
        {MPI_LONG_LONG, "MPI_LONG_LONG", 1, 1, reduce_long_long},
        {MPI_UNSIGNED, "MPI_UNSIGNED", 0, 1, reduce_unsigned},
        {MPI_FLOAT, "MPI_FLOAT", 1, 0, reduce_float},
        {MPI_DOUBLE, "MPI_DOUBLE", 1, 0, reduce_double},
    };
    const struct reduce_op ops[] = {
        {MPI_SUM, "MPI_SUM", 0},   {MPI_PROD, "MPI_PROD", 0}, {MPI_MAX, "MPI_MAX", 0},   {MPI_MIN, "MPI_MIN", 0},
        {MPI_LAND, "MPI_LAND", 1}, {MPI_LOR, "MPI_LOR", 1},   {MPI_LXOR, "MPI_LXOR", 1}, {MPI_BAND, "MPI_BAND", 1},
        {MPI_BOR, "MPI_BOR", 1},   {MPI_BXOR, "MPI_BXOR", 1},
    };
    /* Every type and operation: 1000 elements with MPI_Allreduce and
     * MPI_Reduce, one with MPI_Allreduce; the MPI_IN_PLACE forms for some.
     * (Few calls: oversubscribed ranks make each collective slow.) */
    int case_number = 0;
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++)
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            if (ops[o].integer_only && !types[t].is_integer)
                continue;
            int in_place = (int)(t + o) % 4 == 0 ? IN_PLACE : 0;
            types[t].run(comm, types[t].type, types[t].name, types[t].is_signed, ops[o].op, ops[o].name, 1000,
                         case_number++ % size, ALLREDUCE | REDUCE | in_place);
            types[t].run(comm, types[t].type, types[t].name, types[t].is_signed, ops[o].op, ops[o].name, 1, 0,
                         ALLREDUCE);
        }
    reduce_int(comm, MPI_INT, "MPI_INT", 1, MPI_SUM, "MPI_SUM", 0, size - 1, ALLREDUCE | REDUCE | IN_PLACE);
    reduce_int(comm, MPI_INT, "MPI_INT", 1, MPI_SUM, "MPI_SUM", 7, size - 1, ALLREDUCE | REDUCE | IN_PLACE);
    /* 1 MiB, past the eager limits. */
    reduce_int(comm, MPI_INT, "MPI_INT", 1, MPI_SUM, "MPI_SUM", 1 << 18, size - 1, ALLREDUCE | REDUCE | IN_PLACE);
    reduce_double(comm, MPI_DOUBLE, "MPI_DOUBLE", 1, MPI_MAX, "MPI_MAX", 1 << 17, 0, ALLREDUCE | REDUCE);
}

/* MPI_MAXLOC/MPI_MINLOC: ranks 2k and 2k+1 hold the same values (ties),
 * indices decrease with the rank, so that the tie rule (smallest index)
 * is not "first rank". */
#define DEFINE_LOC(PAIR, VALUE_T, NAME)                                                                       \
    typedef struct {                                                                                          \
        VALUE_T value;                                                                                        \
        int index;                                                                                            \
    } PAIR;                                                                                                   \
    static PAIR loc_input_##NAME(int r, int i)                                                                \
    {                                                                                                         \
        PAIR pair = {(VALUE_T)((r / 2 * 3 + i) % 4), size - 1 - r + 10 * i};                                      \
        return pair;                                                                                          \
    }                                                                                                         \
    static void loc_##NAME(MPI_Comm comm, MPI_Datatype type, const char *type_name, int count)                \
    {                                                                                                         \
        PAIR *in = malloc(sizeof(PAIR) * count), *out = malloc(sizeof(PAIR) * count);                         \
        for (int maxloc = 0; maxloc < 2; maxloc++) {                                                          \
            for (int i = 0; i < count; i++) {                                                                 \
                in[i] = loc_input_##NAME(rank, i);                                                            \
                out[i].value = (VALUE_T)-1;                                                                   \
                out[i].index = -1;                                                                            \
            }                                                                                                 \
            CHECK_MPI(MPI_Allreduce(in, out, count, type, maxloc ? MPI_MAXLOC : MPI_MINLOC, comm));           \
            for (int i = 0; i < count; i++) {                                                                 \
                PAIR best = loc_input_##NAME(0, i);                                                           \
                for (int q = 1; q < size; q++) {                                                              \
                    PAIR next = loc_input_##NAME(q, i);                                                       \
                    int better = maxloc ? next.value > best.value : next.value < best.value;                  \
                    if (better || (next.value == best.value && next.index < best.index))                      \
                        best = next;                                                                          \
                }                                                                                             \
                if (out[i].value != best.value || out[i].index != best.index) {                               \
                    check_fail(__FILE__, __LINE__, "", "MPI_Allreduce %s %s on %s, %d pairs: [%d] expected "  \
                               "(%g, %d), got (%g, %d)", maxloc ? "MPI_MAXLOC" : "MPI_MINLOC", type_name, on, \
                               count, i, (double)best.value, best.index, (double)out[i].value, out[i].index); \
                    break;                                                                                    \
                }                                                                                             \
            }                                                                                                 \
        }                                                                                                     \
        free(in);                                                                                             \
        free(out);                                                                                            \
    }

DEFINE_LOC(double_int, double, double_int)
DEFINE_LOC(int_int, int, two_int)
DEFINE_LOC(long_int, long, long_int)
DEFINE_LOC(float_int, float, float_int)
#if defined(__x86_64__)
DEFINE_LOC(long_double_int, long double, long_double_int)
#endif

static void loc_reductions(MPI_Comm comm)
{
    for (int count = 1; count <= 100; count += 99) {
        loc_double_int(comm, MPI_DOUBLE_INT, "MPI_DOUBLE_INT", count);
        loc_two_int(comm, MPI_2INT, "MPI_2INT", count);
        loc_long_int(comm, MPI_LONG_INT, "MPI_LONG_INT", count);
        loc_float_int(comm, MPI_FLOAT_INT, "MPI_FLOAT_INT", count);
#if defined(__x86_64__)
        loc_long_double_int(comm, MPI_LONG_DOUBLE_INT, "MPI_LONG_DOUBLE_INT", count);
#endif
    }
}

/* MPI_LONG_DOUBLE reductions, exact in x87 extended precision (64-bit
 * significand) but not in double: rank r's element i is 1 + (r + i) 2^-60
 * for the sum, max and min, 1 + r % 3 for the product. */
static void long_double_reductions(MPI_Comm comm)
{
#if defined(__x86_64__)
    enum { N = 5 };
    const long double tiny = 1.0L / (1ULL << 60);
    const struct {
        MPI_Op op;
        const char *name;
    } ops[] = {{MPI_SUM, "MPI_SUM"}, {MPI_PROD, "MPI_PROD"}, {MPI_MAX, "MPI_MAX"}, {MPI_MIN, "MPI_MIN"}};
    for (int o = 0; o < 4; o++) {
        long double in[N], out[N], expected[N];
        for (int i = 0; i < N; i++) {
            in[i] = ops[o].op == MPI_PROD ? 1 + rank % 3 : 1 + (rank + i) * tiny;
            out[i] = -1;
            expected[i] = ops[o].op == MPI_PROD ? 1 : ops[o].op == MPI_SUM ? 0 : 1 + i * tiny;
            for (int q = 0; q < size; q++) {
                if (ops[o].op == MPI_PROD)
                    expected[i] *= 1 + q % 3;
                else if (ops[o].op == MPI_SUM)
                    expected[i] += 1 + (q + i) * tiny;
            }
            if (ops[o].op == MPI_MAX)
                expected[i] = 1 + (size - 1 + i) * tiny;
        }
        CHECK_MPI(MPI_Allreduce(in, out, N, MPI_LONG_DOUBLE, ops[o].op, comm));
        for (int i = 0; i < N; i++)
            if (out[i] != expected[i]) {
                check_fail(__FILE__, __LINE__, "", "MPI_Allreduce %s MPI_LONG_DOUBLE on %s: [%d] expected %.21Lg, got %.21Lg",
                           ops[o].name, on, i, expected[i], out[i]);
                break;
            }
    }
#else
    (void)comm;
#endif
}

static void barrier_and_bcast(MPI_Comm comm)
{
    for (int i = 0; i < 5; i++)
        CHECK_MPI(MPI_Barrier(comm));
    const int sizes[] = {1, 1000, 1 << 20};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s];
        unsigned char *buf = malloc(n), *expected = malloc(n);
        for (int root = 0; root < size; root++) {
            check_fill(expected, n, (unsigned)(root * 31 + n));
            if (rank == root)
                memcpy(buf, expected, n);
            else
                memset(buf, 0, n);
            CHECK_MPI(MPI_Bcast(buf, n, MPI_BYTE, root, comm));
            CHECK_BYTES(expected, buf, (size_t)n, "MPI_Bcast of %d bytes from root %d on %s", n, root, on);
        }
        free(buf);
        free(expected);
    }
    double values[3] = {rank + 0.5, -1.0, 2.0};
    CHECK_MPI(MPI_Bcast(values, 3, MPI_DOUBLE, size - 1, comm));
    CHECK_DBL(size - 1 + 0.5, values[0], 0, "MPI_Bcast of MPI_DOUBLE from the last rank on %s", on);
}

/* Element j of what rank `from` contributes for rank `to`. */
static int item(int from, int to, int j)
{
    return from * 10000 + to * 100 + j;
}

#define SENT (-99)

/* The v-variants' layout: rank p's block has vcount(p) elements (some
 * zero), blocks in reverse rank order with one unused element between,
 * which must stay untouched. */
static int vcount(int p)
{
    return (p * 2 + 1) % 5;
}

static int vdispl(int p, int n)
{
    int d = 0;
    for (int q = n - 1; q > p; q--)
        d += vcount(q) + 1;
    return d;
}

static int vtotal(int n)
{
    return vdispl(-1, n);
}

static void gathers(MPI_Comm comm)
{
    const int k = 3;
    int *all = malloc(sizeof(int) * (size * k + vtotal(size) + 1)), mine[8];
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    for (int p = 0; p < size; p++) {
        counts[p] = vcount(p);
        displs[p] = vdispl(p, size);
    }
    for (int root = 0; root < size; root++) {
        /* MPI_Gather, then with MPI_IN_PLACE at the root. */
        for (int in_place = 0; in_place < 2; in_place++) {
            for (int j = 0; j < k; j++)
                mine[j] = item(rank, root, j);
            for (int i = 0; i < size * k; i++)
                all[i] = SENT;
            if (in_place && rank == root) {
                for (int j = 0; j < k; j++)
                    all[root * k + j] = mine[j];
                CHECK_MPI(MPI_Gather(MPI_IN_PLACE, k, MPI_INT, all, k, MPI_INT, root, comm));
            } else {
                CHECK_MPI(MPI_Gather(mine, k, MPI_INT, all, k, MPI_INT, root, comm));
            }
            if (rank == root)
                for (int p = 0; p < size; p++)
                    for (int j = 0; j < k; j++)
                        CHECK_INT(item(p, root, j), all[p * k + j], "MPI_Gather%s to %d on %s: rank %d's element %d",
                                  in_place ? " MPI_IN_PLACE" : "", root, on, p, j);
        }
        /* MPI_Gatherv into reversed blocks with gaps. */
        for (int j = 0; j < vcount(rank); j++)
            mine[j] = item(rank, root, j);
        for (int i = 0; i <= vtotal(size); i++)
            all[i] = SENT;
        CHECK_MPI(MPI_Gatherv(mine, vcount(rank), MPI_INT, all, counts, displs, MPI_INT, root, comm));
        if (rank == root) {
            int *expected = malloc(sizeof(int) * (vtotal(size) + 1));
            for (int i = 0; i <= vtotal(size); i++)
                expected[i] = SENT;
            for (int p = 0; p < size; p++)
                for (int j = 0; j < vcount(p); j++)
                    expected[displs[p] + j] = item(p, root, j);
            CHECK_INTS(expected, all, (size_t)vtotal(size) + 1, "MPI_Gatherv to %d on %s (gaps untouched)", root, on);
            free(expected);
        }
    }
    free(all);
    free(counts);
    free(displs);
}

static void scatters(MPI_Comm comm)
{
    const int k = 3;
    int *all = malloc(sizeof(int) * (size * k + vtotal(size) + 1)), mine[8];
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    for (int p = 0; p < size; p++) {
        counts[p] = vcount(p);
        displs[p] = vdispl(p, size);
    }
    for (int root = 0; root < size; root++) {
        for (int in_place = 0; in_place < 2; in_place++) {
            if (rank == root)
                for (int p = 0; p < size; p++)
                    for (int j = 0; j < k; j++)
                        all[p * k + j] = item(root, p, j);
            for (int j = 0; j < k + 1; j++)
                mine[j] = SENT;
            if (in_place && rank == root)
                CHECK_MPI(MPI_Scatter(all, k, MPI_INT, MPI_IN_PLACE, k, MPI_INT, root, comm));
            else
                CHECK_MPI(MPI_Scatter(all, k, MPI_INT, mine, k, MPI_INT, root, comm));
            const int *got = in_place && rank == root ? all + root * k : mine;
            for (int j = 0; j < k; j++)
                CHECK_INT(item(root, rank, j), got[j], "MPI_Scatter%s from %d on %s: element %d",
                          in_place ? " MPI_IN_PLACE" : "", root, on, j);
            if (!(in_place && rank == root))
                CHECK_INT(SENT, mine[k], "MPI_Scatter from %d on %s: the element after", root, on);
        }
        if (rank == root)
            for (int p = 0; p < size; p++)
                for (int j = 0; j < vcount(p); j++)
                    all[displs[p] + j] = item(root, p, j);
        for (int j = 0; j < 8; j++)
            mine[j] = SENT;
        CHECK_MPI(MPI_Scatterv(all, counts, displs, MPI_INT, mine, vcount(rank), MPI_INT, root, comm));
        for (int j = 0; j < vcount(rank); j++)
            CHECK_INT(item(root, rank, j), mine[j], "MPI_Scatterv from %d on %s: element %d", root, on, j);
        CHECK_INT(SENT, mine[vcount(rank)], "MPI_Scatterv from %d on %s: the element after", root, on);
    }
    free(all);
    free(counts);
    free(displs);
}

static void allgathers(MPI_Comm comm)
{
    const int k = 2;
    int *all = malloc(sizeof(int) * (size * k + vtotal(size) + 1)), mine[8];
    int *expected = malloc(sizeof(int) * (size * k + vtotal(size) + 1));
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
    for (int p = 0; p < size; p++) {
        counts[p] = vcount(p);
        displs[p] = vdispl(p, size);
    }
    for (int in_place = 0; in_place < 2; in_place++) {
        for (int j = 0; j < k; j++)
            mine[j] = item(rank, 0, j);
        for (int p = 0; p < size; p++)
            for (int j = 0; j < k; j++) {
                expected[p * k + j] = item(p, 0, j);
                all[p * k + j] = p == rank && in_place ? mine[j] : SENT;
            }
        expected[size * k] = all[size * k] = SENT;
        CHECK_MPI(MPI_Allgather(in_place ? MPI_IN_PLACE : mine, k, MPI_INT, all, k, MPI_INT, comm));
        CHECK_INTS(expected, all, (size_t)size * k + 1, "MPI_Allgather%s on %s", in_place ? " MPI_IN_PLACE" : "",
                   on);

        for (int i = 0; i <= vtotal(size); i++)
            expected[i] = all[i] = SENT;
        for (int p = 0; p < size; p++)
            for (int j = 0; j < vcount(p); j++)
                expected[displs[p] + j] = item(p, 1, j);
        for (int j = 0; j < vcount(rank); j++) {
            mine[j] = item(rank, 1, j);
            if (in_place)
                all[displs[rank] + j] = mine[j];
        }
        CHECK_MPI(MPI_Allgatherv(in_place ? MPI_IN_PLACE : mine, vcount(rank), MPI_INT, all, counts, displs,
                                 MPI_INT, comm));
        CHECK_INTS(expected, all, (size_t)vtotal(size) + 1, "MPI_Allgatherv%s on %s (gaps untouched)",
                   in_place ? " MPI_IN_PLACE" : "", on);
    }
    free(all);
    free(expected);
    free(counts);
    free(displs);
}

static void alltoalls(MPI_Comm comm)
{
    const int k = 2;
    int *out = malloc(sizeof(int) * (size * k + 3 * size * 2 + 1));
    int *in = malloc(sizeof(int) * (size * k + 3 * size * 2 + 1));
    int *expected = malloc(sizeof(int) * (size * k + 3 * size * 2 + 1));
    for (int in_place = 0; in_place < 2; in_place++) {
        for (int p = 0; p < size; p++)
            for (int j = 0; j < k; j++) {
                out[p * k + j] = item(rank, p, j);
                expected[p * k + j] = item(p, rank, j);
                in[p * k + j] = in_place ? out[p * k + j] : SENT;
            }
        expected[size * k] = in[size * k] = SENT;
        CHECK_MPI(MPI_Alltoall(in_place ? MPI_IN_PLACE : out, k, MPI_INT, in, k, MPI_INT, comm));
        CHECK_INTS(expected, in, (size_t)size * k + 1, "MPI_Alltoall%s on %s", in_place ? " MPI_IN_PLACE" : "", on);
    }

    /* MPI_Alltoallv: rank s sends (s + d) % 3 elements to rank d; blocks
     * in reverse order with gaps on both sides. */
    int *scounts = malloc(sizeof(int) * size), *sdispls = malloc(sizeof(int) * size);
    int *rcounts = malloc(sizeof(int) * size), *rdispls = malloc(sizeof(int) * size);
    int soff = 0, roff = 0;
    for (int p = size - 1; p >= 0; p--) {
        scounts[p] = (rank + p) % 3;
        rcounts[p] = (p + rank) % 3;
        sdispls[p] = soff;
        rdispls[p] = roff;
        soff += scounts[p] + 1;
        roff += rcounts[p] + 2;
    }
    for (int i = 0; i <= roff; i++)
        in[i] = expected[i] = SENT;
    for (int p = 0; p < size; p++) {
        for (int j = 0; j < scounts[p]; j++)
            out[sdispls[p] + j] = item(rank, p, j);
        for (int j = 0; j < rcounts[p]; j++)
            expected[rdispls[p] + j] = item(p, rank, j);
    }
    CHECK_MPI(MPI_Alltoallv(out, scounts, sdispls, MPI_INT, in, rcounts, rdispls, MPI_INT, comm));
    CHECK_INTS(expected, in, (size_t)roff + 1, "MPI_Alltoallv on %s (gaps untouched)", on);
    free(out);
    free(in);
    free(expected);
    free(scounts);
    free(sdispls);
    free(rcounts);
    free(rdispls);
}

/* Element i of rank r's input to the reduce-scatters and scans. */
static int scan_value(int r, int i)
{
    return (r + 1) * (i + 1) + (i % 3 == 0 ? -r : 0);
}

static void reduce_scatters(MPI_Comm comm)
{
    const int k = 2;
    int *in = malloc(sizeof(int) * size * 3 + 1), *out = malloc(sizeof(int) * size * 3 + 1);
    for (int in_place = 0; in_place < 2; in_place++) {
        for (int i = 0; i < size * k; i++)
            in[i] = scan_value(rank, i);
        for (int j = 0; j <= k; j++)
            out[j] = SENT;
        if (in_place)
            CHECK_MPI(MPI_Reduce_scatter_block(MPI_IN_PLACE, in, k, MPI_INT, MPI_SUM, comm));
        else
            CHECK_MPI(MPI_Reduce_scatter_block(in, out, k, MPI_INT, MPI_SUM, comm));
        const int *got = in_place ? in : out;
        for (int j = 0; j < k; j++) {
            int expected = 0;
            for (int q = 0; q < size; q++)
                expected += scan_value(q, rank * k + j);
            CHECK_INT(expected, got[j], "MPI_Reduce_scatter_block%s on %s: element %d",
                      in_place ? " MPI_IN_PLACE" : "", on, j);
        }
        if (!in_place)
            CHECK_INT(SENT, out[k], "MPI_Reduce_scatter_block on %s: the element after", on);
    }

    /* MPI_Reduce_scatter: rank p gets p % 3 elements (some none). */
    int *counts = malloc(sizeof(int) * size), total = 0, start = 0;
    for (int p = 0; p < size; p++) {
        counts[p] = p % 3;
        if (p < rank)
            start += counts[p];
        total += counts[p];
    }
    for (int i = 0; i < total; i++)
        in[i] = scan_value(rank, i);
    for (int j = 0; j <= counts[rank]; j++)
        out[j] = SENT;
    CHECK_MPI(MPI_Reduce_scatter(in, out, counts, MPI_INT, MPI_SUM, comm));
    for (int j = 0; j < counts[rank]; j++) {
        int expected = 0;
        for (int q = 0; q < size; q++)
            expected += scan_value(q, start + j);
        CHECK_INT(expected, out[j], "MPI_Reduce_scatter on %s: element %d", on, j);
    }
    CHECK_INT(SENT, out[counts[rank]], "MPI_Reduce_scatter on %s: the element after", on);
    free(counts);
    free(in);
    free(out);
}

static void scans(MPI_Comm comm)
{
    const int n = 5;
    int in[5], out[6];
    for (int op_index = 0; op_index < 2; op_index++) {
        MPI_Op op = op_index ? MPI_MAX : MPI_SUM;
        const char *op_name = op_index ? "MPI_MAX" : "MPI_SUM";
        for (int in_place = 0; in_place < 2; in_place++) {
            for (int i = 0; i < n; i++) {
                in[i] = scan_value(rank, i);
                out[i] = in_place ? in[i] : SENT;
            }
            out[n] = SENT;
            CHECK_MPI(MPI_Scan(in_place ? MPI_IN_PLACE : in, out, n, MPI_INT, op, comm));
            for (int i = 0; i < n; i++) {
                int expected = scan_value(0, i);
                for (int q = 1; q <= rank; q++)
                    expected = op_index ? (expected > scan_value(q, i) ? expected : scan_value(q, i))
                                        : expected + scan_value(q, i);
                CHECK_INT(expected, out[i], "MPI_Scan%s %s on %s: element %d", in_place ? " MPI_IN_PLACE" : "",
                          op_name, on, i);
            }
            CHECK_INT(SENT, out[n], "MPI_Scan on %s: the element after", on);

            for (int i = 0; i < n; i++)
                out[i] = in_place ? in[i] : SENT;
            CHECK_MPI(MPI_Exscan(in_place ? MPI_IN_PLACE : in, out, n, MPI_INT, op, comm));
            /* Rank 0's result is undefined. */
            for (int i = 0; rank > 0 && i < n; i++) {
                int expected = scan_value(0, i);
                for (int q = 1; q < rank; q++)
                    expected = op_index ? (expected > scan_value(q, i) ? expected : scan_value(q, i))
                                        : expected + scan_value(q, i);
                CHECK_INT(expected, out[i], "MPI_Exscan%s %s on %s: element %d", in_place ? " MPI_IN_PLACE" : "",
                          op_name, on, i);
            }
            CHECK_INT(SENT, out[n], "MPI_Exscan on %s: the element after", on);
        }
    }
}

static void all_collectives(MPI_Comm comm, const char *name)
{
    on = name;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    barrier_and_bcast(comm);
    reductions(comm);
    long_double_reductions(comm);
    loc_reductions(comm);
    gathers(comm);
    scatters(comm);
    allgathers(comm);
    alltoalls(comm);
    reduce_scatters(comm);
    scans(comm);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("coll");
    int world_rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);

    all_collectives(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    all_collectives(MPI_COMM_SELF, "MPI_COMM_SELF");
    MPI_Comm half;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, world_rank % 2, -world_rank, &half));
    all_collectives(half, world_rank % 2 ? "the odd world ranks, reversed" : "the even world ranks, reversed");
    CHECK_MPI(MPI_Comm_free(&half));
    return check_finish();
}

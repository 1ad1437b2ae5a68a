/* Datatypes: a vector of a contiguous type carries the right elements;
 * MPI_Type_get_contents hands out new handles for derived constituents,
 * which stay valid after the program freed its own; named and parameterised
 * types (MPI_Type_match_size, MPI_Type_create_f90_integer); names of
 * predefined types; MPI_Type_create_darray (block, cyclic and none, C and
 * Fortran order): each rank's part, in its local order, and the parts of
 * all ranks cover the array once; attributes on datatypes (set, get,
 * copied by MPI_Type_dup through the key's callback, deleted by
 * MPI_Type_free and MPI_Type_delete_attr) and window keys; names are not
 * copied by MPI_Type_dup; MPI_Type_create_f90_* and the parameters no
 * Fortran type holds; a struct's extent padded to its most aligned member
 * (but not past an MPI_UB). Runs on any number of ranks. */
#include "check.h"

#include <stddef.h>

static int rank, size, left, right;

static void vector_of_contiguous(void)
{
    MPI_Datatype pair, column;
    CHECK_MPI(MPI_Type_contiguous(2, MPI_INT, &pair));
    CHECK_MPI(MPI_Type_vector(3, 1, 2, pair, &column)); /* pairs 0, 2, 4 of 6 */
    CHECK_MPI(MPI_Type_commit(&column));
    CHECK_MPI(MPI_Type_free(&pair)); /* the vector keeps what it was made of */

    int size_of = -1;
    MPI_Aint lb = -1, extent = -1;
    CHECK_MPI(MPI_Type_size(column, &size_of));
    CHECK_MPI(MPI_Type_get_extent(column, &lb, &extent));
    CHECK_INT(24, size_of, "MPI_Type_size of 3 pairs of ints");
    CHECK_INT(0, (int)lb, "lower bound of the vector");
    CHECK_INT(40, (int)extent, "extent of the vector (pairs 0 to 4)");

    int out[12], in[12];
    for (int i = 0; i < 12; i++) {
        out[i] = 100 * rank + i;
        in[i] = -1;
    }
    MPI_Status status;
    CHECK_MPI(MPI_Sendrecv(out, 1, column, right, 1, in, 1, column, left, 1, MPI_COMM_WORLD, &status));
    int count = -1, elements = -1;
    CHECK_MPI(MPI_Get_count(&status, column, &count));
    CHECK_MPI(MPI_Get_elements(&status, column, &elements));
    CHECK_INT(1, count, "MPI_Get_count of one vector");
    CHECK_INT(6, elements, "MPI_Get_elements of one vector of 3 pairs");
    for (int i = 0; i < 12; i++) {
        int expected = (i / 2) % 2 == 0 && i < 10 ? 100 * left + i : -1;
        CHECK_INT(expected, in[i], "element %d of the received vector", i);
    }

    int nint, naddr, ntypes, combiner;
    CHECK_MPI(MPI_Type_get_envelope(column, &nint, &naddr, &ntypes, &combiner));
    CHECK_INT(MPI_COMBINER_VECTOR, combiner, "the vector's combiner");
    CHECK_INT(1, ntypes, "the vector's datatypes");
    int ints[3];
    MPI_Aint addrs[1];
    MPI_Datatype inner = MPI_DATATYPE_NULL;
    CHECK_MPI(MPI_Type_get_contents(column, 3, 1, 1, ints, addrs, &inner));
    CHECK_INT(3, ints[0], "the vector's count");
    CHECK_INT(2, ints[2], "the vector's stride");
    CHECK_MPI(MPI_Type_get_envelope(inner, &nint, &naddr, &ntypes, &combiner));
    CHECK_INT(MPI_COMBINER_CONTIGUOUS, combiner, "the constituent's combiner, after its handle was freed");
    CHECK_MPI(MPI_Type_free(&inner)); /* a handle of the caller's own */
    CHECK_MPI(MPI_Type_free(&column));
}

static void named_and_parameterised(void)
{
    int nint, naddr, ntypes, combiner;
    CHECK_MPI(MPI_Type_get_envelope(MPI_LONG_DOUBLE_INT, &nint, &naddr, &ntypes, &combiner));
    CHECK_INT(MPI_COMBINER_NAMED, combiner, "MPI_LONG_DOUBLE_INT is named");
    MPI_Datatype matched = MPI_DATATYPE_NULL;
    CHECK_MPI(MPI_Type_match_size(MPI_TYPECLASS_REAL, 8, &matched));
    CHECK(matched == MPI_REAL8, "MPI_Type_match_size(REAL, 8) is MPI_REAL8");
    MPI_Datatype f90 = MPI_DATATYPE_NULL;
    CHECK_MPI(MPI_Type_create_f90_integer(9, &f90));
    int f90_size = -1;
    CHECK_MPI(MPI_Type_size(f90, &f90_size));
    CHECK_INT(4, f90_size, "an integer of 9 decimal digits");
    char name[MPI_MAX_OBJECT_NAME];
    int len = 0;
    CHECK_MPI(MPI_Type_set_name(MPI_INT, "my int"));
    CHECK_MPI(MPI_Type_get_name(MPI_INT, name, &len));
    CHECK(strcmp(name, "my int") == 0, "the name given to MPI_INT (got \"%s\")", name);
}

/* The indices of one dimension that coordinate c of p holds (MPI's
 * definition of the distributions), into out; how many. */
static int held(int gsize, int distrib, int darg, int p, int c, int *out)
{
    int n = 0;
    if (distrib == MPI_DISTRIBUTE_NONE) {
        for (int i = 0; i < gsize; i++)
            out[n++] = i;
    } else if (distrib == MPI_DISTRIBUTE_BLOCK) {
        int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (gsize + p - 1) / p : darg;
        for (int i = c * b; i < (c + 1) * b && i < gsize; i++)
            out[n++] = i;
    } else {
        int b = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
        for (int start = c * b; start < gsize; start += b * p)
            for (int i = start; i < start + b && i < gsize; i++)
                out[n++] = i;
    }
    return n;
}

static void darray_case(const char *name, int order, const int *gsizes, const int *distribs, const int *dargs)
{
    int psizes[2] = {0, 0};
    MPI_Dims_create(size, 2, psizes);
    if (distribs[0] == MPI_DISTRIBUTE_NONE) { /* a dimension not distributed has one process */
        psizes[0] = 1;
        psizes[1] = size;
    }
    if (distribs[1] == MPI_DISTRIBUTE_NONE) {
        psizes[0] = size;
        psizes[1] = 1;
    }
    int total = gsizes[0] * gsizes[1], *array = malloc(sizeof(int) * total);
    for (int i = 0; i < total; i++)
        array[i] = i;
    MPI_Datatype part;
    CHECK_MPI(MPI_Type_create_darray(size, rank, 2, gsizes, distribs, dargs, psizes, order, MPI_INT, &part));
    MPI_Type_commit(&part);
    MPI_Aint lb = -1, extent = -1;
    MPI_Type_get_extent(part, &lb, &extent);
    CHECK_INT(0, lb, "%s: lb", name);
    CHECK_INT((long long)total * sizeof(int), extent, "%s: the extent is the whole array's", name);
    /* What this rank holds, in its local order. */
    int coords[2] = {rank / psizes[1], rank % psizes[1]}, rows[64], cols[64];
    int nr = held(gsizes[0], distribs[0], dargs[0], psizes[0], coords[0], rows);
    int nc = held(gsizes[1], distribs[1], dargs[1], psizes[1], coords[1], cols);
    int tsize = -1;
    MPI_Type_size(part, &tsize);
    CHECK_INT(nr * nc * (int)sizeof(int), tsize, "%s: the part's size", name);
    int *got = malloc(sizeof(int) * (nr * nc + 1)), position = 0, bad = 0;
    CHECK_MPI(MPI_Pack(array, 1, part, got, (int)sizeof(int) * (nr * nc + 1), &position, MPI_COMM_SELF));
    for (int k = 0; k < nr * nc; k++) {
        int r, c;
        if (order == MPI_ORDER_C) {
            r = rows[k / nc];
            c = cols[k % nc];
        } else {
            r = rows[k % nr];
            c = cols[k / nr];
        }
        int expected = order == MPI_ORDER_C ? r * gsizes[1] + c : c * gsizes[0] + r;
        bad += got[k] != expected;
    }
    CHECK_INT(0, bad, "%s: rank %d's elements in local order", name, rank);
    int all = 0, mine = nr * nc;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK_INT(total, all, "%s: the parts cover the array", name);
    MPI_Type_free(&part);
    free(got);
    free(array);
}

static void darray(void)
{
    int gsizes[2] = {7, 5};
    int block[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_BLOCK}, dflt[2] = {MPI_DISTRIBUTE_DFLT_DARG, MPI_DISTRIBUTE_DFLT_DARG};
    int cyclic_block[2] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK}, two[2] = {2, MPI_DISTRIBUTE_DFLT_DARG};
    int none_cyclic[2] = {MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_CYCLIC};
    darray_case("block x block, C order", MPI_ORDER_C, gsizes, block, dflt);
    darray_case("cyclic(2) x block, C order", MPI_ORDER_C, gsizes, cyclic_block, two);
    darray_case("block x block, Fortran order", MPI_ORDER_FORTRAN, gsizes, block, dflt);
    darray_case("none x cyclic, Fortran order", MPI_ORDER_FORTRAN, gsizes, none_cyclic, dflt);
}

static int copies, deletions;

static int copy_attr(MPI_Datatype type, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)type, (void)keyval, (void)extra;
    copies++;
    *(void **)out = (char *)in + 1;
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_attr(MPI_Datatype type, int keyval, void *value, void *extra)
{
    (void)type, (void)keyval, (void)value, (void)extra;
    deletions++;
    return MPI_SUCCESS;
}

static void type_attributes(void)
{
    static char base[4];
    int key = MPI_KEYVAL_INVALID, flag = -1;
    void *got = NULL;
    CHECK_MPI(MPI_Type_create_keyval(copy_attr, delete_attr, &key, NULL));
    MPI_Datatype pair, copy;
    MPI_Type_contiguous(2, MPI_INT, &pair);
    CHECK_MPI(MPI_Type_get_attr(pair, key, &got, &flag));
    CHECK_INT(0, flag, "no attribute before one is set");
    CHECK_MPI(MPI_Type_set_attr(pair, key, base));
    CHECK_MPI(MPI_Type_get_attr(pair, key, &got, &flag));
    CHECK(flag && got == base, "the attribute set comes back");
    CHECK_MPI(MPI_Type_dup(pair, &copy));
    CHECK_INT(1, copies, "MPI_Type_dup runs the key's copy callback");
    CHECK_MPI(MPI_Type_get_attr(copy, key, &got, &flag));
    CHECK(flag && got == base + 1, "the copy has the callback's value");
    CHECK_MPI(MPI_Type_set_attr(pair, key, base + 2));
    CHECK_INT(1, deletions, "replacing a value deletes the old one");
    CHECK_MPI(MPI_Type_delete_attr(pair, key));
    CHECK_INT(2, deletions, "MPI_Type_delete_attr runs the delete callback");
    CHECK_MPI(MPI_Type_get_attr(pair, key, &got, &flag));
    CHECK_INT(0, flag, "no attribute after its deletion");
    MPI_Type_free(&copy);
    CHECK_INT(3, deletions, "MPI_Type_free deletes the copy's attribute");
    MPI_Type_free(&pair);
    /* On a predefined datatype too. */
    CHECK_MPI(MPI_Type_set_attr(MPI_DOUBLE, key, base + 3));
    CHECK_MPI(MPI_Type_get_attr(MPI_DOUBLE, key, &got, &flag));
    CHECK(flag && got == base + 3, "an attribute on MPI_DOUBLE");
    CHECK_MPI(MPI_Type_delete_attr(MPI_DOUBLE, key));
    CHECK_MPI(MPI_Type_free_keyval(&key));
    CHECK_INT(MPI_KEYVAL_INVALID, key, "a freed key is MPI_KEYVAL_INVALID");
    int win_key = MPI_KEYVAL_INVALID;
    CHECK_MPI(MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, MPI_WIN_NULL_DELETE_FN, &win_key, NULL));
    CHECK(win_key != MPI_KEYVAL_INVALID, "a window key");
    CHECK_MPI(MPI_Win_free_keyval(&win_key));
}

/* MPI_Type_create_f90_*: the Fortran type of the precision and range
 * asked, and an error where Fortran has none (more than REAL*16's 33
 * digits or 4931 of exponent, INTEGER*8's 18). */
static void f90_parameters(void)
{
    struct { int p, r, real_size; } reals[] = {
        {6, 37, 4}, {15, 307, 8}, {MPI_UNDEFINED, MPI_UNDEFINED, 4}, {7, MPI_UNDEFINED, 8},
        {MPI_UNDEFINED, 308, 16}, /* MPICH 4.0.2 has no REAL*16 among them: last, on grappe only */
    };
    size_t n = sizeof reals / sizeof reals[0] - (check_on_grappe() ? 0 : 1);
    for (size_t i = 0; i < n; i++) {
        MPI_Datatype real, complex;
        int real_size = -1, complex_size = -1;
        CHECK_MPI(MPI_Type_create_f90_real(reals[i].p, reals[i].r, &real));
        CHECK_MPI(MPI_Type_create_f90_complex(reals[i].p, reals[i].r, &complex));
        CHECK_MPI(MPI_Type_size(real, &real_size));
        CHECK_MPI(MPI_Type_size(complex, &complex_size));
        CHECK_INT(reals[i].real_size, real_size, "MPI_Type_create_f90_real(%d, %d): size", reals[i].p, reals[i].r);
        CHECK_INT(2 * reals[i].real_size, complex_size, "MPI_Type_create_f90_complex(%d, %d): size", reals[i].p,
                  reals[i].r);
    }
    int ranges[][2] = {{2, 1}, {4, 2}, {9, 4}, {18, 8}};
    for (int i = 0; i < 4; i++) {
        MPI_Datatype integer;
        int size = -1;
        CHECK_MPI(MPI_Type_create_f90_integer(ranges[i][0], &integer));
        CHECK_MPI(MPI_Type_size(integer, &size));
        CHECK_INT(ranges[i][1], size, "MPI_Type_create_f90_integer(%d): size", ranges[i][0]);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Datatype none;
    int refused[5] = {
        MPI_Type_create_f90_real(100, MPI_UNDEFINED, &none),
        MPI_Type_create_f90_real(MPI_UNDEFINED, 5000, &none),
        MPI_Type_create_f90_complex(34, MPI_UNDEFINED, &none),
        MPI_Type_create_f90_integer(19, &none),
        MPI_Type_create_f90_integer(40, &none),
    };
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    for (int i = 0; i < 5; i++) {
        int class = MPI_SUCCESS;
        MPI_Error_class(refused[i], &class);
        CHECK(class != MPI_SUCCESS, "parameters %d that no Fortran type holds are refused", i);
        if (check_on_grappe())
            CHECK_INT(MPI_ERR_ARG, class, "parameters %d that no Fortran type holds: error class", i);
    }
}

/* A name is the object's own: MPI_Type_dup's copy starts without one,
 * and naming it leaves the original's name as it was. */
static void names_stay_with_their_type(void)
{
    MPI_Datatype vector, copy;
    char name[MPI_MAX_OBJECT_NAME];
    int len = -1;
    CHECK_MPI(MPI_Type_vector(3, 1, 4, MPI_INT, &vector));
    CHECK_MPI(MPI_Type_get_name(vector, name, &len));
    CHECK(len == 0 && name[0] == '\0', "a new derived type has no name (got \"%s\")", name);
    CHECK_MPI(MPI_Type_set_name(vector, "a vector"));
    CHECK_MPI(MPI_Type_dup(vector, &copy));
    CHECK_MPI(MPI_Type_get_name(copy, name, &len));
    CHECK(len == 0 && name[0] == '\0', "MPI_Type_dup's copy has no name (got \"%s\")", name);
    CHECK_MPI(MPI_Type_set_name(copy, "its copy"));
    CHECK_MPI(MPI_Type_get_name(vector, name, &len));
    CHECK(strcmp(name, "a vector") == 0, "naming the copy leaves the original's name (got \"%s\")", name);
    CHECK_MPI(MPI_Type_dup(MPI_DOUBLE, &copy));
    CHECK_MPI(MPI_Type_get_name(copy, name, &len));
    CHECK(len == 0, "the copy of a predefined type has no name (got \"%s\")", name);
    CHECK_MPI(MPI_Type_free(&copy));
    CHECK_MPI(MPI_Type_free(&vector));
}

/* A struct type's extent is rounded up to its most aligned member, as C
 * pads the struct (MPI's epsilon): an array of { double; int; } sent as
 * two elements arrives whole. An MPI_UB the program sets is not padded. */
static void struct_extent_padding(void)
{
    struct pair {
        double value;
        int index;
    } out[2] = {{1.5, rank}, {2.5, rank + 10}}, in[2] = {{0, -1}, {0, -1}};
    int lengths[3] = {1, 1, 1};
    MPI_Aint displacements[3] = {0, offsetof(struct pair, index), sizeof(struct pair) - 4};
    MPI_Datatype members[3] = {MPI_DOUBLE, MPI_INT, MPI_UB}, type, marked;
    CHECK_MPI(MPI_Type_create_struct(2, lengths, displacements, members, &type));
    CHECK_MPI(MPI_Type_commit(&type));
    MPI_Aint lb = -1, extent = -1;
    CHECK_MPI(MPI_Type_get_extent(type, &lb, &extent));
    CHECK_INT(sizeof(struct pair), extent, "extent of the struct { double; int; }");
    CHECK_MPI(MPI_Sendrecv(out, 2, type, right, 7, in, 2, type, left, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    CHECK_DBL(2.5, in[1].value, 0, "the second struct's double, received");
    CHECK_INT(left + 10, in[1].index, "the second struct's int, received");
    CHECK_MPI(MPI_Type_free(&type));

    CHECK_MPI(MPI_Type_struct(3, lengths, displacements, members, &marked));
    CHECK_MPI(MPI_Type_get_extent(marked, &lb, &extent));
    CHECK_INT(sizeof(struct pair) - 4, extent, "extent of the struct with MPI_UB at 12");
    CHECK_MPI(MPI_Type_free(&marked));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("datatypes");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    left = (rank + size - 1) % size;
    right = (rank + 1) % size;
    vector_of_contiguous();
    named_and_parameterised();
    darray();
    type_attributes();
    names_stay_with_their_type();
    f90_parameters();
    struct_extent_padding();
    return check_finish();
}

/*
 * Prints what a compiled program takes from mpi.h: the value and C type of every predefined handle
 * and constant, the layout of MPI_Status, the C types behind MPI's typedefs and the signatures of
 * the callback types. One "NAME VALUE TYPE" line each.
 *
 * Built once against grappe's mpi.h and once against MPICH's (mpicc.mpich), it must print the same
 * lines: then a binary compiled with either header passes the same bits to either library.
 * tests/abi-values.sh does both builds and the comparison, and checks that every constant grappe's
 * header defines is listed here.
 *
 * MPI_VERSION and MPI_SUBVERSION are left out on purpose: they say which standard the header
 * declares, not how values are encoded.
 *
 * C11 (_Generic names the types); nothing is linked from the MPI library: the objects the header
 * declares appear only where they are not evaluated.
 */
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The C type of an expression, among those MPI's constants can have. The handle typedefs are int,
   so they print as int. Function pointer types that are compatible (every attribute copy callback
   has the same parameter types) share an entry: _Generic rejects two compatible types. */
#define TYPE_NAME(x)                                                                             \
    _Generic((x),                                                                                \
        int: "int",                                                                              \
        long: "long",                                                                            \
        long long: "long_long",                                                                  \
        unsigned: "unsigned",                                                                    \
        unsigned long: "unsigned_long",                                                          \
        void *: "void*",                                                                         \
        int *: "int*",                                                                           \
        char **: "char**",                                                                       \
        char ***: "char***",                                                                     \
        MPI_Status *: "MPI_Status*",                                                             \
        MPI_F08_status *: "MPI_F08_status*",                                                     \
        MPI_File: "MPI_File",                                                                    \
        MPI_T_enum: "MPI_T_enum",                                                                \
        MPI_T_cvar_handle: "MPI_T_cvar_handle",                                                  \
        MPI_T_pvar_handle: "MPI_T_pvar_handle",                                                  \
        MPI_T_pvar_session: "MPI_T_pvar_session",                                                \
        int (*)(int, int, void *, void *, void *, int *): "copy_attr_function*",                \
        int (*)(int, int, void *, void *): "delete_attr_function*",                              \
        int (*)(void *, int, int, void *, long, void *): "MPI_Datarep_conversion_function*",     \
        default: "other")

static void show_handle(const char *name, unsigned value, const char *type)
{
    printf("%s 0x%08x %s\n", name, value, type);
}

static void show_int(const char *name, long value, const char *type)
{
    printf("%s %ld %s\n", name, value, type);
}

static void show_pointer(const char *name, intptr_t value, const char *type)
{
    printf("%s %ld %s\n", name, (long)value, type);
}

/* A macro's expansion with the blanks removed, so that spacing differences between headers do not
   count. */
static void show_expansion(const char *name, const char *expansion, const char *type)
{
    char packed[256];
    size_t n = 0;
    for (const char *c = expansion; *c != '\0' && n + 1 < sizeof packed; c++) {
        if (*c != ' ') {
            packed[n++] = *c;
        }
    }
    packed[n] = '\0';
    printf("%s %s %s\n", name, packed, type);
}

#define HANDLE(name) show_handle(#name, (unsigned)(name), TYPE_NAME(name))
#define INT(name) show_int(#name, (long)(name), TYPE_NAME(name))
#define POINTER(name) show_pointer(#name, (intptr_t)(name), TYPE_NAME(name))
#define STRINGIFY(x) #x
#define EXPANSION(name) show_expansion(#name, STRINGIFY(name), TYPE_NAME(name))
/* A declared object of the library: only its type, so that nothing is linked. */
#define OBJECT(name) printf("%s object %s\n", #name, TYPE_NAME(name))
#define SIZE(type) printf("sizeof(%s) %zu\n", #type, sizeof(type))
#define FIELD(type, field) printf("offsetof(%s.%s) %zu\n", #type, #field, offsetof(type, field))
#define TYPEDEF(type) printf("%s %zu %s\n", #type, sizeof(type), TYPE_NAME((type)0))
/* A callback typedef against the signature the ABI gives it, spelled with the base C types. */
#define SIGNATURE(type, expected)                                                                \
    printf("%s %s\n", #type,                                                                     \
           _Generic((type *)0, expected: #expected, default: "differs from " #expected))

static void types_and_layouts(void)
{
    TYPEDEF(MPI_Aint);
    TYPEDEF(MPI_Offset);
    TYPEDEF(MPI_Count);
    TYPEDEF(MPI_Fint);
    TYPEDEF(MPI_Comm);
    TYPEDEF(MPI_Group);
    TYPEDEF(MPI_Datatype);
    TYPEDEF(MPI_Op);
    TYPEDEF(MPI_Errhandler);
    TYPEDEF(MPI_Request);
    TYPEDEF(MPI_Message);
    TYPEDEF(MPI_Info);
    TYPEDEF(MPI_Win);
    TYPEDEF(MPI_File);

    SIZE(MPI_Status);
    FIELD(MPI_Status, count_lo);
    FIELD(MPI_Status, count_hi_and_cancelled);
    FIELD(MPI_Status, MPI_SOURCE);
    FIELD(MPI_Status, MPI_TAG);
    FIELD(MPI_Status, MPI_ERROR);
    SIZE(MPI_F08_status);
    FIELD(MPI_F08_status, MPI_SOURCE);
    FIELD(MPI_F08_status, MPI_TAG);
    FIELD(MPI_F08_status, MPI_ERROR);
}

static void callback_types(void)
{
    SIGNATURE(MPI_User_function, void (*)(void *, void *, int *, int *));
    SIGNATURE(MPI_Comm_copy_attr_function, int (*)(int, int, void *, void *, void *, int *));
    SIGNATURE(MPI_Comm_delete_attr_function, int (*)(int, int, void *, void *));
    SIGNATURE(MPI_Win_copy_attr_function, int (*)(int, int, void *, void *, void *, int *));
    SIGNATURE(MPI_Win_delete_attr_function, int (*)(int, int, void *, void *));
    SIGNATURE(MPI_Type_copy_attr_function, int (*)(int, int, void *, void *, void *, int *));
    SIGNATURE(MPI_Type_delete_attr_function, int (*)(int, int, void *, void *));
    SIGNATURE(MPI_Copy_function, int (*)(int, int, void *, void *, void *, int *));
    SIGNATURE(MPI_Delete_function, int (*)(int, int, void *, void *));
    SIGNATURE(MPI_Comm_errhandler_function, void (*)(int *, int *, ...));
    SIGNATURE(MPI_Win_errhandler_function, void (*)(int *, int *, ...));
    SIGNATURE(MPI_File_errhandler_function, void (*)(MPI_File *, int *, ...));
    SIGNATURE(MPI_Comm_errhandler_fn, void (*)(int *, int *, ...));
    SIGNATURE(MPI_Win_errhandler_fn, void (*)(int *, int *, ...));
    SIGNATURE(MPI_File_errhandler_fn, void (*)(MPI_File *, int *, ...));
    SIGNATURE(MPI_Handler_function, void (*)(int *, int *, ...));
    SIGNATURE(MPI_Grequest_query_function, int (*)(void *, MPI_Status *));
    SIGNATURE(MPI_Grequest_free_function, int (*)(void *));
    SIGNATURE(MPI_Grequest_cancel_function, int (*)(void *, int));
    SIGNATURE(MPI_Datarep_conversion_function, int (*)(void *, int, int, void *, long, void *));
    SIGNATURE(MPI_Datarep_extent_function, int (*)(int, long *, void *));
}

static void null_and_predefined_handles(void)
{
    HANDLE(MPI_COMM_NULL);
    HANDLE(MPI_GROUP_NULL);
    HANDLE(MPI_DATATYPE_NULL);
    HANDLE(MPI_ERRHANDLER_NULL);
    HANDLE(MPI_OP_NULL);
    HANDLE(MPI_INFO_NULL);
    HANDLE(MPI_WIN_NULL);
    HANDLE(MPI_SESSION_NULL);
    HANDLE(MPI_REQUEST_NULL);
    HANDLE(MPI_MESSAGE_NULL);
    HANDLE(MPI_MESSAGE_NO_PROC);
    POINTER(MPI_FILE_NULL);

    HANDLE(MPI_COMM_WORLD);
    HANDLE(MPI_COMM_SELF);
    HANDLE(MPI_GROUP_EMPTY);
    HANDLE(MPI_INFO_ENV);
    HANDLE(MPI_ERRORS_ARE_FATAL);
    HANDLE(MPI_ERRORS_RETURN);
}

static void datatypes(void)
{
    HANDLE(MPI_CHAR);
    HANDLE(MPI_SIGNED_CHAR);
    HANDLE(MPI_UNSIGNED_CHAR);
    HANDLE(MPI_BYTE);
    HANDLE(MPI_WCHAR);
    HANDLE(MPI_SHORT);
    HANDLE(MPI_UNSIGNED_SHORT);
    HANDLE(MPI_INT);
    HANDLE(MPI_UNSIGNED);
    HANDLE(MPI_LONG);
    HANDLE(MPI_UNSIGNED_LONG);
    HANDLE(MPI_LONG_LONG_INT);
    HANDLE(MPI_LONG_LONG);
    HANDLE(MPI_UNSIGNED_LONG_LONG);
    HANDLE(MPI_FLOAT);
    HANDLE(MPI_DOUBLE);
    HANDLE(MPI_LONG_DOUBLE);
    HANDLE(MPI_PACKED);

    HANDLE(MPI_INT8_T);
    HANDLE(MPI_INT16_T);
    HANDLE(MPI_INT32_T);
    HANDLE(MPI_INT64_T);
    HANDLE(MPI_UINT8_T);
    HANDLE(MPI_UINT16_T);
    HANDLE(MPI_UINT32_T);
    HANDLE(MPI_UINT64_T);
    HANDLE(MPI_C_BOOL);
    HANDLE(MPI_C_FLOAT_COMPLEX);
    HANDLE(MPI_C_COMPLEX);
    HANDLE(MPI_C_DOUBLE_COMPLEX);
    HANDLE(MPI_C_LONG_DOUBLE_COMPLEX);

    HANDLE(MPI_AINT);
    HANDLE(MPI_OFFSET);
    HANDLE(MPI_COUNT);

    HANDLE(MPI_CXX_BOOL);
    HANDLE(MPI_CXX_FLOAT_COMPLEX);
    HANDLE(MPI_CXX_DOUBLE_COMPLEX);
    HANDLE(MPI_CXX_LONG_DOUBLE_COMPLEX);

    HANDLE(MPI_FLOAT_INT);
    HANDLE(MPI_DOUBLE_INT);
    HANDLE(MPI_LONG_INT);
    HANDLE(MPI_SHORT_INT);
    HANDLE(MPI_LONG_DOUBLE_INT);
    HANDLE(MPI_2INT);

    HANDLE(MPI_CHARACTER);
    HANDLE(MPI_LOGICAL);
    HANDLE(MPI_INTEGER);
    HANDLE(MPI_REAL);
    HANDLE(MPI_DOUBLE_PRECISION);
    HANDLE(MPI_COMPLEX);
    HANDLE(MPI_DOUBLE_COMPLEX);
    HANDLE(MPI_2INTEGER);
    HANDLE(MPI_2REAL);
    HANDLE(MPI_2DOUBLE_PRECISION);

    HANDLE(MPI_INTEGER1);
    HANDLE(MPI_INTEGER2);
    HANDLE(MPI_INTEGER4);
    HANDLE(MPI_INTEGER8);
    HANDLE(MPI_INTEGER16);
    HANDLE(MPI_REAL4);
    HANDLE(MPI_REAL8);
    HANDLE(MPI_REAL16);
    HANDLE(MPI_COMPLEX8);
    HANDLE(MPI_COMPLEX16);
    HANDLE(MPI_COMPLEX32);

    HANDLE(MPI_LB);
    HANDLE(MPI_UB);

    INT(MPI_TYPECLASS_REAL);
    INT(MPI_TYPECLASS_INTEGER);
    INT(MPI_TYPECLASS_COMPLEX);
}

static void operations(void)
{
    HANDLE(MPI_MAX);
    HANDLE(MPI_MIN);
    HANDLE(MPI_SUM);
    HANDLE(MPI_PROD);
    HANDLE(MPI_LAND);
    HANDLE(MPI_BAND);
    HANDLE(MPI_LOR);
    HANDLE(MPI_BOR);
    HANDLE(MPI_LXOR);
    HANDLE(MPI_BXOR);
    HANDLE(MPI_MINLOC);
    HANDLE(MPI_MAXLOC);
    HANDLE(MPI_REPLACE);
    HANDLE(MPI_NO_OP);
}

static void special_values(void)
{
    INT(MPI_PROC_NULL);
    INT(MPI_ANY_SOURCE);
    INT(MPI_ROOT);
    INT(MPI_F_STATUS_SIZE);
    INT(MPI_F_SOURCE);
    INT(MPI_F_TAG);
    INT(MPI_F_ERROR);
    INT(MPI_ANY_TAG);
    INT(MPI_UNDEFINED);
    HANDLE(MPI_KEYVAL_INVALID);

    POINTER(MPI_BOTTOM);
    POINTER(MPI_IN_PLACE);
    POINTER(MPI_STATUS_IGNORE);
    POINTER(MPI_STATUSES_IGNORE);
    POINTER(MPI_ERRCODES_IGNORE);
    POINTER(MPI_ARGV_NULL);
    POINTER(MPI_ARGVS_NULL);

    INT(MPI_BSEND_OVERHEAD);

    INT(MPI_MAX_PROCESSOR_NAME);
    INT(MPI_MAX_LIBRARY_VERSION_STRING);
    INT(MPI_MAX_ERROR_STRING);
    INT(MPI_MAX_PORT_NAME);
    INT(MPI_MAX_OBJECT_NAME);
    INT(MPI_MAX_PSET_NAME_LEN);
    INT(MPI_MAX_STRINGTAG_LEN);
    INT(MPI_MAX_INFO_KEY);
    INT(MPI_MAX_INFO_VAL);
    INT(MPI_MAX_DATAREP_STRING);

    INT(MPI_THREAD_SINGLE);
    INT(MPI_THREAD_FUNNELED);
    INT(MPI_THREAD_SERIALIZED);
    INT(MPI_THREAD_MULTIPLE);

    INT(MPI_IDENT);
    INT(MPI_CONGRUENT);
    INT(MPI_SIMILAR);
    INT(MPI_UNEQUAL);

    INT(MPI_GRAPH);
    INT(MPI_CART);
    INT(MPI_DIST_GRAPH);
    INT(MPI_COMM_TYPE_SHARED);
    INT(MPI_COMM_TYPE_HW_GUIDED);
    INT(MPI_COMM_TYPE_HW_UNGUIDED);
}

static void attribute_keys(void)
{
    HANDLE(MPI_TAG_UB);
    HANDLE(MPI_HOST);
    HANDLE(MPI_IO);
    HANDLE(MPI_WTIME_IS_GLOBAL);
    HANDLE(MPI_UNIVERSE_SIZE);
    HANDLE(MPI_LASTUSEDCODE);
    HANDLE(MPI_APPNUM);
    HANDLE(MPI_WIN_BASE);
    HANDLE(MPI_WIN_SIZE);
    HANDLE(MPI_WIN_DISP_UNIT);
    HANDLE(MPI_WIN_CREATE_FLAVOR);
    HANDLE(MPI_WIN_MODEL);
}

static void datatype_construction(void)
{
    INT(MPI_COMBINER_NAMED);
    INT(MPI_COMBINER_DUP);
    INT(MPI_COMBINER_CONTIGUOUS);
    INT(MPI_COMBINER_VECTOR);
    INT(MPI_COMBINER_HVECTOR_INTEGER);
    INT(MPI_COMBINER_HVECTOR);
    INT(MPI_COMBINER_INDEXED);
    INT(MPI_COMBINER_HINDEXED_INTEGER);
    INT(MPI_COMBINER_HINDEXED);
    INT(MPI_COMBINER_INDEXED_BLOCK);
    INT(MPI_COMBINER_STRUCT_INTEGER);
    INT(MPI_COMBINER_STRUCT);
    INT(MPI_COMBINER_SUBARRAY);
    INT(MPI_COMBINER_DARRAY);
    INT(MPI_COMBINER_F90_REAL);
    INT(MPI_COMBINER_F90_COMPLEX);
    INT(MPI_COMBINER_F90_INTEGER);
    INT(MPI_COMBINER_RESIZED);
    INT(MPI_COMBINER_HINDEXED_BLOCK);

    INT(MPI_ORDER_C);
    INT(MPI_ORDER_FORTRAN);
    INT(MPI_DISTRIBUTE_BLOCK);
    INT(MPI_DISTRIBUTE_CYCLIC);
    INT(MPI_DISTRIBUTE_NONE);
    INT(MPI_DISTRIBUTE_DFLT_DARG);
}

static void one_sided_and_io(void)
{
    INT(MPI_MODE_NOCHECK);
    INT(MPI_MODE_NOSTORE);
    INT(MPI_MODE_NOPUT);
    INT(MPI_MODE_NOPRECEDE);
    INT(MPI_MODE_NOSUCCEED);
    INT(MPI_LOCK_EXCLUSIVE);
    INT(MPI_LOCK_SHARED);
    INT(MPI_WIN_FLAVOR_CREATE);
    INT(MPI_WIN_FLAVOR_ALLOCATE);
    INT(MPI_WIN_FLAVOR_DYNAMIC);
    INT(MPI_WIN_FLAVOR_SHARED);
    INT(MPI_WIN_SEPARATE);
    INT(MPI_WIN_UNIFIED);

    INT(MPI_MODE_CREATE);
    INT(MPI_MODE_RDONLY);
    INT(MPI_MODE_WRONLY);
    INT(MPI_MODE_RDWR);
    INT(MPI_MODE_DELETE_ON_CLOSE);
    INT(MPI_MODE_UNIQUE_OPEN);
    INT(MPI_MODE_EXCL);
    INT(MPI_MODE_APPEND);
    INT(MPI_MODE_SEQUENTIAL);
    INT(MPI_SEEK_SET);
    INT(MPI_SEEK_CUR);
    INT(MPI_SEEK_END);
    INT(MPI_DISPLACEMENT_CURRENT);
}

static void error_classes(void)
{
    INT(MPI_SUCCESS);
    INT(MPI_ERR_BUFFER);
    INT(MPI_ERR_COUNT);
    INT(MPI_ERR_TYPE);
    INT(MPI_ERR_TAG);
    INT(MPI_ERR_COMM);
    INT(MPI_ERR_RANK);
    INT(MPI_ERR_ROOT);
    INT(MPI_ERR_GROUP);
    INT(MPI_ERR_OP);
    INT(MPI_ERR_TOPOLOGY);
    INT(MPI_ERR_DIMS);
    INT(MPI_ERR_ARG);
    INT(MPI_ERR_UNKNOWN);
    INT(MPI_ERR_TRUNCATE);
    INT(MPI_ERR_OTHER);
    INT(MPI_ERR_INTERN);
    INT(MPI_ERR_IN_STATUS);
    INT(MPI_ERR_PENDING);
    INT(MPI_ERR_REQUEST);
    INT(MPI_ERR_ACCESS);
    INT(MPI_ERR_AMODE);
    INT(MPI_ERR_BAD_FILE);
    INT(MPI_ERR_CONVERSION);
    INT(MPI_ERR_DUP_DATAREP);
    INT(MPI_ERR_FILE_EXISTS);
    INT(MPI_ERR_FILE_IN_USE);
    INT(MPI_ERR_FILE);
    INT(MPI_ERR_INFO);
    INT(MPI_ERR_INFO_KEY);
    INT(MPI_ERR_INFO_VALUE);
    INT(MPI_ERR_INFO_NOKEY);
    INT(MPI_ERR_IO);
    INT(MPI_ERR_NAME);
    INT(MPI_ERR_NO_MEM);
    INT(MPI_ERR_NOT_SAME);
    INT(MPI_ERR_NO_SPACE);
    INT(MPI_ERR_NO_SUCH_FILE);
    INT(MPI_ERR_PORT);
    INT(MPI_ERR_QUOTA);
    INT(MPI_ERR_READ_ONLY);
    INT(MPI_ERR_SERVICE);
    INT(MPI_ERR_SPAWN);
    INT(MPI_ERR_UNSUPPORTED_DATAREP);
    INT(MPI_ERR_UNSUPPORTED_OPERATION);
    INT(MPI_ERR_WIN);
    INT(MPI_ERR_BASE);
    INT(MPI_ERR_LOCKTYPE);
    INT(MPI_ERR_KEYVAL);
    INT(MPI_ERR_RMA_CONFLICT);
    INT(MPI_ERR_RMA_SYNC);
    INT(MPI_ERR_SIZE);
    INT(MPI_ERR_DISP);
    INT(MPI_ERR_ASSERT);
    INT(MPI_ERR_RMA_RANGE);
    INT(MPI_ERR_RMA_ATTACH);
    INT(MPI_ERR_RMA_SHARED);
    INT(MPI_ERR_RMA_FLAVOR);
    INT(MPI_T_ERR_MEMORY);
    INT(MPI_T_ERR_NOT_INITIALIZED);
    INT(MPI_T_ERR_CANNOT_INIT);
    INT(MPI_T_ERR_INVALID_INDEX);
    INT(MPI_T_ERR_INVALID_ITEM);
    INT(MPI_T_ERR_INVALID_HANDLE);
    INT(MPI_T_ERR_OUT_OF_HANDLES);
    INT(MPI_T_ERR_OUT_OF_SESSIONS);
    INT(MPI_T_ERR_INVALID_SESSION);
    INT(MPI_T_ERR_CVAR_SET_NOT_NOW);
    INT(MPI_T_ERR_CVAR_SET_NEVER);
    INT(MPI_T_ERR_PVAR_NO_STARTSTOP);
    INT(MPI_T_ERR_PVAR_NO_WRITE);
    INT(MPI_T_ERR_PVAR_NO_ATOMIC);
    INT(MPI_T_ERR_INVALID_NAME);
    INT(MPI_T_ERR_INVALID);
    INT(MPI_ERR_SESSION);
    INT(MPI_ERR_LASTCODE);
}

static void predefined_callbacks(void)
{
    POINTER(MPI_NULL_COPY_FN);
    POINTER(MPI_NULL_DELETE_FN);
    POINTER(MPI_COMM_NULL_COPY_FN);
    POINTER(MPI_COMM_NULL_DELETE_FN);
    POINTER(MPI_WIN_NULL_COPY_FN);
    POINTER(MPI_WIN_NULL_DELETE_FN);
    POINTER(MPI_TYPE_NULL_COPY_FN);
    POINTER(MPI_TYPE_NULL_DELETE_FN);
    POINTER(MPI_CONVERSION_FN_NULL);
    POINTER(MPI_CONVERSION_FN_NULL_C);
    /* The dup callbacks name a function of the library: their expansion is what must agree. */
    EXPANSION(MPI_DUP_FN);
    EXPANSION(MPI_COMM_DUP_FN);
    EXPANSION(MPI_WIN_DUP_FN);
    EXPANSION(MPI_TYPE_DUP_FN);
}

static void tool_interface(void)
{
    POINTER(MPI_T_ENUM_NULL);
    POINTER(MPI_T_CVAR_HANDLE_NULL);
    POINTER(MPI_T_PVAR_HANDLE_NULL);
    POINTER(MPI_T_PVAR_SESSION_NULL);

    INT(MPI_T_VERBOSITY_USER_BASIC);
    INT(MPI_T_VERBOSITY_USER_DETAIL);
    INT(MPI_T_VERBOSITY_USER_ALL);
    INT(MPI_T_VERBOSITY_TUNER_BASIC);
    INT(MPI_T_VERBOSITY_TUNER_DETAIL);
    INT(MPI_T_VERBOSITY_TUNER_ALL);
    INT(MPI_T_VERBOSITY_MPIDEV_BASIC);
    INT(MPI_T_VERBOSITY_MPIDEV_DETAIL);
    INT(MPI_T_VERBOSITY_MPIDEV_ALL);

    INT(MPI_T_BIND_NO_OBJECT);
    INT(MPI_T_BIND_MPI_COMM);
    INT(MPI_T_BIND_MPI_DATATYPE);
    INT(MPI_T_BIND_MPI_ERRHANDLER);
    INT(MPI_T_BIND_MPI_FILE);
    INT(MPI_T_BIND_MPI_GROUP);
    INT(MPI_T_BIND_MPI_OP);
    INT(MPI_T_BIND_MPI_REQUEST);
    INT(MPI_T_BIND_MPI_WIN);
    INT(MPI_T_BIND_MPI_MESSAGE);
    INT(MPI_T_BIND_MPI_INFO);

    INT(MPI_T_SCOPE_CONSTANT);
    INT(MPI_T_SCOPE_READONLY);
    INT(MPI_T_SCOPE_LOCAL);
    INT(MPI_T_SCOPE_GROUP);
    INT(MPI_T_SCOPE_GROUP_EQ);
    INT(MPI_T_SCOPE_ALL);
    INT(MPI_T_SCOPE_ALL_EQ);

    INT(MPI_T_PVAR_CLASS_STATE);
    INT(MPI_T_PVAR_CLASS_LEVEL);
    INT(MPI_T_PVAR_CLASS_SIZE);
    INT(MPI_T_PVAR_CLASS_PERCENTAGE);
    INT(MPI_T_PVAR_CLASS_HIGHWATERMARK);
    INT(MPI_T_PVAR_CLASS_LOWWATERMARK);
    INT(MPI_T_PVAR_CLASS_COUNTER);
    INT(MPI_T_PVAR_CLASS_AGGREGATE);
    INT(MPI_T_PVAR_CLASS_TIMER);
    INT(MPI_T_PVAR_CLASS_GENERIC);
}

static void library_objects(void)
{
    OBJECT(MPI_UNWEIGHTED);
    OBJECT(MPI_WEIGHTS_EMPTY);
    OBJECT(MPI_F_STATUS_IGNORE);
    OBJECT(MPI_F_STATUSES_IGNORE);
    OBJECT(MPI_F08_STATUS_IGNORE);
    OBJECT(MPI_F08_STATUSES_IGNORE);
    OBJECT(MPI_T_PVAR_ALL_HANDLES);
}

int main(void)
{
    types_and_layouts();
    callback_types();
    null_and_predefined_handles();
    datatypes();
    operations();
    special_values();
    attribute_keys();
    datatype_construction();
    one_sided_and_io();
    error_classes();
    predefined_callbacks();
    tool_interface();
    library_objects();
    return 0;
}

/* Checks for the C conformance tests: each failed check prints one line
 *
 *     FAIL p2p.c:123 rank 1: <what was checked>: expected 7, got 8
 *
 * on stderr and counts; check_finish() sums the failures of every rank,
 * rank 0 prints the verdict, and every rank exits 1 if any check failed
 * anywhere, 0 otherwise. The checks only use MPI calls that the test is
 * about (and Allreduce to gather the verdict), so that a test of one group
 * of functions can run on a library that implements only that group and the
 * verdict. */
#ifndef GRAPPE_MPI_TESTS_CHECK_H
#define GRAPPE_MPI_TESTS_CHECK_H

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_failures;
static int check_world_rank = -1;
static const char *check_test_name = "?";

/* Whether the library is grappe's: for checks of what MPI leaves to the
 * implementation (MPICH does otherwise), or of an MPICH defect. */
static inline int check_on_grappe(void)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    return strstr(version, "grappe") != NULL;
}

/* Call right after MPI_Init: names the test in the messages. */
static inline void check_start(const char *name)
{
    check_test_name = name;
    MPI_Comm_rank(MPI_COMM_WORLD, &check_world_rank);
}

static inline void check_vfail(const char *file, int line, const char *detail, const char *fmt, va_list args)
{
    char what[512];
    vsnprintf(what, sizeof what, fmt, args);
    char rank[32] = "(before MPI_Init)";
    if (check_world_rank >= 0)
        snprintf(rank, sizeof rank, "%d", check_world_rank);
    fprintf(stderr, "FAIL %s:%d rank %s: %s%s%s\n", file, line, rank, what, *detail ? ": " : "", detail);
    fflush(stderr);
    check_failures++;
}

static inline void check_fail(const char *file, int line, const char *detail, const char *fmt, ...)
{
    va_list args;
    va_start(args, fmt);
    check_vfail(file, line, detail, fmt, args);
    va_end(args);
}

static inline int check_true_(const char *file, int line, int ok, const char *cond, const char *fmt, ...)
{
    if (!ok) {
        char detail[300];
        snprintf(detail, sizeof detail, "expected (%s) to hold", cond);
        va_list args;
        va_start(args, fmt);
        check_vfail(file, line, detail, fmt, args);
        va_end(args);
    }
    return ok;
}

static inline int check_int_(const char *file, int line, long long expected, long long got, const char *fmt, ...)
{
    if (expected != got) {
        char detail[120];
        snprintf(detail, sizeof detail, "expected %lld, got %lld", expected, got);
        va_list args;
        va_start(args, fmt);
        check_vfail(file, line, detail, fmt, args);
        va_end(args);
    }
    return expected == got;
}

static inline int check_dbl_(const char *file, int line, double expected, double got, double tolerance, const char *fmt,
                      ...)
{
    double diff = expected > got ? expected - got : got - expected;
    int ok = diff <= tolerance;
    if (!ok) {
        char detail[120];
        snprintf(detail, sizeof detail, "expected %.17g, got %.17g", expected, got);
        va_list args;
        va_start(args, fmt);
        check_vfail(file, line, detail, fmt, args);
        va_end(args);
    }
    return ok;
}

/* The error's class and text, for messages. */
static inline void check_describe_error(int code, char *out, size_t size)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0, class_ = -1;
    MPI_Error_class(code, &class_);
    MPI_Error_string(code, text, &len);
    /* One line per failure: MPICH's strings span lines. */
    for (char *c = text; *c; c++)
        if (*c == '\n')
            *c = ' ';
    snprintf(out, size, "code %d (class %d: %s)", code, class_, text);
}

static inline int check_success_(const char *file, int line, int rc, const char *call)
{
    if (rc != MPI_SUCCESS) {
        char detail[MPI_MAX_ERROR_STRING + 64];
        check_describe_error(rc, detail, sizeof detail);
        check_fail(file, line, detail, "%s returned an error, expected MPI_SUCCESS", call);
    }
    return rc == MPI_SUCCESS;
}

static inline int check_class_(const char *file, int line, int expected_class, const char *class_name, int rc,
                        const char *fmt, ...)
{
    int got_class = -1;
    if (rc == MPI_SUCCESS)
        got_class = MPI_SUCCESS;
    else if (MPI_Error_class(rc, &got_class) != MPI_SUCCESS)
        got_class = -1;
    if (got_class != expected_class) {
        char error[MPI_MAX_ERROR_STRING + 64];
        char detail[MPI_MAX_ERROR_STRING + 160];
        check_describe_error(rc, error, sizeof error);
        snprintf(detail, sizeof detail, "expected error class %s (%d), got %s", class_name, expected_class, error);
        va_list args;
        va_start(args, fmt);
        check_vfail(file, line, detail, fmt, args);
        va_end(args);
    }
    return got_class == expected_class;
}

/* CHECK(cond, "what", args...): cond holds. */
#define CHECK(cond, ...) check_true_(__FILE__, __LINE__, (cond) ? 1 : 0, #cond, __VA_ARGS__)
/* CHECK_INT(expected, got, "what", args...): two integers are equal. */
#define CHECK_INT(expected, got, ...) \
    check_int_(__FILE__, __LINE__, (long long)(expected), (long long)(got), __VA_ARGS__)
/* CHECK_DBL(expected, got, tolerance, "what", args...). */
#define CHECK_DBL(expected, got, tolerance, ...) \
    check_dbl_(__FILE__, __LINE__, (double)(expected), (double)(got), (double)(tolerance), __VA_ARGS__)
/* CHECK_MPI(MPI_Xxx(...)): the call returns MPI_SUCCESS. */
#define CHECK_MPI(call) check_success_(__FILE__, __LINE__, (call), #call)
/* CHECK_CLASS(MPI_ERR_XXX, rc, "what", args...): rc is an error of that class. */
#define CHECK_CLASS(expected_class, rc, ...) \
    check_class_(__FILE__, __LINE__, (expected_class), #expected_class, (rc), __VA_ARGS__)

/* A status after a receive of `count` elements of `type` from `source`
 * with `tag`. MPI_ERROR is left alone by single-completion calls (MPI 3.1,
 * 3.2.5), and set to MPI_SUCCESS by some libraries: both pass, so callers
 * preset it to check_status_untouched. */
#define CHECK_STATUS_UNTOUCHED (-32766)
static inline int check_status_(const char *file, int line, const MPI_Status *status, int source, int tag,
                         MPI_Datatype type, int count, const char *what)
{
    int got_count = -12345, before = check_failures;
    MPI_Get_count(status, type, &got_count);
    check_int_(file, line, source, status->MPI_SOURCE, "%s: status.MPI_SOURCE", what);
    check_int_(file, line, tag, status->MPI_TAG, "%s: status.MPI_TAG", what);
    check_int_(file, line, count, got_count, "%s: MPI_Get_count", what);
    check_true_(file, line, status->MPI_ERROR == MPI_SUCCESS || status->MPI_ERROR == CHECK_STATUS_UNTOUCHED,
                "status->MPI_ERROR is MPI_SUCCESS or untouched", "%s: status.MPI_ERROR %d", what,
                status->MPI_ERROR);
    return check_failures == before;
}
#define CHECK_STATUS(status, source, tag, type, count, what) \
    check_status_(__FILE__, __LINE__, (status), (source), (tag), (type), (count), (what))

/* The status MPI gives for a null or inactive request, or a receive from
 * MPI_PROC_NULL: source MPI_PROC_NULL (null/inactive requests: MPI_ANY_SOURCE),
 * tag MPI_ANY_TAG, count 0. */
#define CHECK_EMPTY_STATUS(status, source, what)                                                              \
    check_status_(__FILE__, __LINE__, (status), (source), MPI_ANY_TAG, MPI_BYTE, 0, (what))

/* Presets a status so that fields MPI must write show whether it did. */
static inline void check_preset_status(MPI_Status *status)
{
    memset(status, 0x5a, sizeof *status);
    status->MPI_SOURCE = -32765;
    status->MPI_TAG = -32765;
    status->MPI_ERROR = CHECK_STATUS_UNTOUCHED;
}

/* Compares n bytes; reports the first difference and how many differ. */
static inline int check_bytes_(const char *file, int line, const void *expected, const void *got, size_t n,
                        const char *fmt, ...)
{
    const unsigned char *e = expected, *g = got;
    size_t first = n, differing = 0;
    for (size_t i = 0; i < n; i++)
        if (e[i] != g[i]) {
            if (first == n)
                first = i;
            differing++;
        }
    if (differing) {
        char detail[160];
        snprintf(detail, sizeof detail, "%zu of %zu bytes differ, first at byte %zu: expected 0x%02x, got 0x%02x",
                 differing, n, first, e[first], g[first]);
        va_list args;
        va_start(args, fmt);
        check_vfail(file, line, detail, fmt, args);
        va_end(args);
    }
    return differing == 0;
}
#define CHECK_BYTES(expected, got, n, ...) check_bytes_(__FILE__, __LINE__, (expected), (got), (n), __VA_ARGS__)

/* Compares n ints; reports the first difference and how many differ. */
static inline int check_ints_(const char *file, int line, const int *expected, const int *got, size_t n,
                              const char *fmt, ...)
{
    size_t first = n, differing = 0;
    for (size_t i = 0; i < n; i++)
        if (expected[i] != got[i]) {
            if (first == n)
                first = i;
            differing++;
        }
    if (differing) {
        char detail[160];
        snprintf(detail, sizeof detail, "%zu of %zu ints differ, first [%zu]: expected %d, got %d", differing, n,
                 first, expected[first], got[first]);
        va_list args;
        va_start(args, fmt);
        check_vfail(file, line, detail, fmt, args);
        va_end(args);
    }
    return differing == 0;
}
#define CHECK_INTS(expected, got, n, ...) check_ints_(__FILE__, __LINE__, (expected), (got), (n), __VA_ARGS__)

/* A deterministic byte pattern for message contents, distinct per
 * (seed, position), so that misplaced, missing or stale bytes show. */
static inline unsigned char check_pattern_byte(unsigned seed, size_t i)
{
    unsigned x = seed * 2654435761u + (unsigned)i * 40503u + (unsigned)(i >> 8) * 977u;
    return (unsigned char)(x ^ (x >> 13) ^ (x >> 24));
}

static inline void check_fill(void *buf, size_t n, unsigned seed)
{
    unsigned char *b = buf;
    for (size_t i = 0; i < n; i++)
        b[i] = check_pattern_byte(seed, i);
}

/* Sums the failures of every rank over MPI_COMM_WORLD; rank 0 prints the
 * verdict. Returns the total (same on every rank). */
static inline int check_report(void)
{
    int total = 0, size = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (MPI_Allreduce(&check_failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) {
        fprintf(stderr, "FAIL %s rank %d: MPI_Allreduce of the failure counts failed\n", check_test_name,
                check_world_rank);
        return check_failures + 1;
    }
    if (check_world_rank == 0) {
        if (total == 0)
            printf("%s: all checks passed on %d ranks\n", check_test_name, size);
        else
            printf("%s: %d failed checks on %d ranks\n", check_test_name, total, size);
        fflush(stdout);
    }
    return total;
}

/* Report, finalize, and the exit status for main to return. */
static inline int check_finish(void)
{
    int total = check_report();
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}

#endif

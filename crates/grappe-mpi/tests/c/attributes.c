/* Attribute keys outlive MPI_Comm_free_keyval while attributes set with
 * them exist (MPI-4.0 7.7.2): such an attribute is still copied by
 * MPI_Comm_dup and deleted, through its key's delete callback, by
 * MPI_Comm_free and by MPI_Finalize (attributes on MPI_COMM_SELF are deleted
 * first thing in MPI_Finalize, 11.2.2); a key created after a freed one
 * never takes over its callbacks. Runs on any number of ranks. */
#include "check.h"

static int copies, deletes, other_deletes, self_deletes, self_deleted_after_finalize;
static int value = 17;

static int copy_value(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm, (void)keyval, (void)extra;
    copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm, (void)keyval, (void)extra;
    CHECK(attr == &value, "the value given to the delete callback of a freed key");
    deletes++;
    return MPI_SUCCESS;
}

static int count_other_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm, (void)keyval, (void)attr, (void)extra;
    other_deletes++;
    return MPI_SUCCESS;
}

static int self_delete(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm, (void)keyval, (void)attr, (void)extra;
    int finalized = 1;
    MPI_Finalized(&finalized);
    self_deletes++;
    self_deleted_after_finalize += finalized;
    return MPI_SUCCESS;
}

static void freed_key_still_copies_and_deletes(void)
{
    MPI_Comm comm = MPI_COMM_NULL, dup = MPI_COMM_NULL;
    int key = MPI_KEYVAL_INVALID, other = MPI_KEYVAL_INVALID, flag = 0;
    void *got = NULL;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    CHECK_MPI(MPI_Comm_create_keyval(copy_value, count_delete, &key, NULL));
    CHECK_MPI(MPI_Comm_set_attr(comm, key, &value));
    CHECK_MPI(MPI_Comm_free_keyval(&key));
    CHECK_INT(MPI_KEYVAL_INVALID, key, "the handle after MPI_Comm_free_keyval");

    /* A new key must not be confused with the freed one. */
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, count_other_delete, &other, NULL));

    CHECK_MPI(MPI_Comm_dup(comm, &dup));
    CHECK_INT(1, copies, "copy callbacks of a freed key's attribute run by MPI_Comm_dup");
    CHECK_MPI(MPI_Comm_get_attr(dup, other, &got, &flag));
    CHECK_INT(0, flag, "an attribute of the new key on the duplicate");

    CHECK_MPI(MPI_Comm_free(&dup));
    CHECK_INT(1, deletes, "delete callbacks run by freeing the duplicate");
    CHECK_MPI(MPI_Comm_free(&comm));
    CHECK_INT(2, deletes, "delete callbacks run by freeing the original");
    CHECK_INT(0, other_deletes, "delete callbacks of the new key (never set)");
    CHECK_MPI(MPI_Comm_free_keyval(&other));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("attributes");
    freed_key_still_copies_and_deletes();

    int self_key = MPI_KEYVAL_INVALID;
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete, &self_key, NULL));
    CHECK_MPI(MPI_Comm_set_attr(MPI_COMM_SELF, self_key, NULL));
    CHECK_MPI(MPI_Comm_free_keyval(&self_key));

    int total = check_report();
    MPI_Finalize();
    /* The verdict is in; what MPI_Finalize did is checked after it. */
    if (self_deletes != 1 || self_deleted_after_finalize != 0) {
        fprintf(stderr, "FAIL attributes.c rank %d: MPI_Finalize ran the MPI_COMM_SELF attribute's delete callback %d "
                        "times (expected once, before MPI_Finalized says true; %d after)\n",
                check_world_rank, self_deletes, self_deleted_after_finalize);
        return 1;
    }
    return total == 0 ? 0 : 1;
}

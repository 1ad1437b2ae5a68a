/* Attribute keys outlive MPI_Comm_free_keyval while attributes set with
 * them exist (MPI-4.0 7.7.2): such an attribute is still copied by
 * MPI_Comm_dup and deleted, through its key's delete callback, by
 * MPI_Comm_free and by MPI_Finalize (attributes on MPI_COMM_SELF are deleted
 * first thing in MPI_Finalize, 11.2.2); a key created after a freed one
 * never takes over its callbacks, and a program that kept a freed key's
 * handle may still delete its attribute with it (as MPICH lets it). A
 * failing delete callback makes the call fail and leaves the attribute; a
 * failing copy callback makes MPI_Comm_dup fail with MPI_COMM_NULL, and
 * MPI_Type_dup fail with MPI_DATATYPE_NULL (erroneous per MPI, what MPICH
 * does), the attributes already copied onto the failed copy deleted again
 * through their keys' delete callbacks (MPICH 4.0.2 leaves those of a
 * communicator undeleted). MPI_LASTUSEDCODE is at least
 * MPI_ERR_LASTCODE (MPI-4.0 9.5). Runs on any number of ranks. */
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

static int refuse_copy(MPI_Comm comm, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)comm, (void)keyval, (void)extra, (void)in, (void)out;
    *flag = 1;
    return MPI_ERR_OTHER;
}

static int refuse_delete_once(MPI_Comm comm, int keyval, void *attr, void *extra)
{
    (void)comm, (void)keyval, (void)attr;
    int *refusals = extra;
    if (*refusals > 0) {
        --*refusals;
        return MPI_ERR_OTHER;
    }
    return MPI_SUCCESS;
}

static void failing_callbacks(void)
{
    MPI_Comm comm = MPI_COMM_NULL, dup = MPI_COMM_WORLD;
    int refusals = 1, key = MPI_KEYVAL_INVALID, flag = 0;
    void *got = NULL;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    CHECK_MPI(MPI_Comm_create_keyval(refuse_copy, refuse_delete_once, &key, &refusals));
    CHECK_MPI(MPI_Comm_set_attr(comm, key, &value));
    CHECK(MPI_Comm_delete_attr(comm, key) != MPI_SUCCESS, "MPI_Comm_delete_attr whose delete callback fails");
    CHECK_MPI(MPI_Comm_get_attr(comm, key, &got, &flag));
    CHECK_INT(1, flag, "the attribute after its delete callback failed");
    int copying = MPI_KEYVAL_INVALID;
    CHECK_MPI(MPI_Comm_create_keyval(copy_value, count_delete, &copying, NULL));
    CHECK_MPI(MPI_Comm_set_attr(comm, copying, &value));
    int copies_before = copies, deletes_before = deletes;
    CHECK(MPI_Comm_dup(comm, &dup) != MPI_SUCCESS, "MPI_Comm_dup whose copy callback fails");
    CHECK(dup == MPI_COMM_NULL, "the new communicator of a failed MPI_Comm_dup is MPI_COMM_NULL");
    CHECK_INT(copies - copies_before, deletes - deletes_before,
              "deletes of the attributes copied onto a failed MPI_Comm_dup's duplicate");
    CHECK_MPI(MPI_Comm_delete_attr(comm, copying));
    CHECK_MPI(MPI_Comm_free_keyval(&copying));
    CHECK_MPI(MPI_Comm_free(&comm));
    CHECK_MPI(MPI_Comm_free_keyval(&key));
}

static int type_copies, type_deletes;

static int copy_type_value(MPI_Datatype type, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)type, (void)keyval, (void)extra;
    type_copies++;
    *(void **)out = in;
    *flag = 1;
    return MPI_SUCCESS;
}

static int count_type_delete(MPI_Datatype type, int keyval, void *attr, void *extra)
{
    (void)type, (void)keyval, (void)attr, (void)extra;
    type_deletes++;
    return MPI_SUCCESS;
}

static int refuse_type_copy(MPI_Datatype type, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)type, (void)keyval, (void)extra, (void)in, (void)out;
    *flag = 1;
    return MPI_ERR_OTHER;
}

/* A datatype with an attribute that copies and one that refuses: its dup
 * fails, gives MPI_DATATYPE_NULL, and whatever was copied onto the copy
 * before the refusal is deleted again. */
static void failing_type_copy(void)
{
    MPI_Datatype type = MPI_DATATYPE_NULL, dup = MPI_INT;
    int copying = MPI_KEYVAL_INVALID, refusing = MPI_KEYVAL_INVALID;
    CHECK_MPI(MPI_Type_dup(MPI_DOUBLE, &type));
    CHECK_MPI(MPI_Type_create_keyval(copy_type_value, count_type_delete, &copying, NULL));
    CHECK_MPI(MPI_Type_create_keyval(refuse_type_copy, MPI_TYPE_NULL_DELETE_FN, &refusing, NULL));
    CHECK_MPI(MPI_Type_set_attr(type, copying, &value));
    CHECK_MPI(MPI_Type_set_attr(type, refusing, &value));
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rc = MPI_Type_dup(type, &dup);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
    CHECK(rc != MPI_SUCCESS, "MPI_Type_dup whose copy callback fails");
    CHECK(dup == MPI_DATATYPE_NULL, "the new datatype of a failed MPI_Type_dup is MPI_DATATYPE_NULL");
    CHECK_INT(type_copies, type_deletes, "deletes of the attributes copied onto a failed MPI_Type_dup's copy");
    CHECK_MPI(MPI_Type_free(&type));
    CHECK_INT(type_copies + 1, type_deletes, "deletes once the original datatype is freed too");
    CHECK_MPI(MPI_Type_free_keyval(&copying));
    CHECK_MPI(MPI_Type_free_keyval(&refusing));
}

static void kept_handle_of_a_freed_key(void)
{
    MPI_Comm comm = MPI_COMM_NULL;
    int key = MPI_KEYVAL_INVALID, kept;
    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    CHECK_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, count_delete, &key, NULL));
    kept = key;
    CHECK_MPI(MPI_Comm_set_attr(comm, key, &value));
    CHECK_MPI(MPI_Comm_free_keyval(&key));
    int before = deletes;
    CHECK_MPI(MPI_Comm_delete_attr(comm, kept));
    CHECK_INT(before + 1, deletes, "delete callbacks run by deleting through a freed key's kept handle");
    CHECK_MPI(MPI_Comm_free(&comm));
    CHECK_INT(before + 1, deletes, "delete callbacks run by freeing the communicator afterwards");
}

static void last_used_code(void)
{
    int *last = NULL, flag = 0;
    CHECK_MPI(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag));
    CHECK_INT(1, flag, "MPI_LASTUSEDCODE is set");
    if (flag)
        CHECK(*last >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE (%d) >= MPI_ERR_LASTCODE (%d)", *last, MPI_ERR_LASTCODE);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    check_start("attributes");
    freed_key_still_copies_and_deletes();
    failing_callbacks();
    failing_type_copy();
    kept_handle_of_a_freed_key();
    last_used_code();

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

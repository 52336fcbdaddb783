/* test_server_state.c -- what --state-dir keeps (docs/OPERATIONS.md "State
 * that survives a restart"): the database opens and refuses what it cannot
 * use (a file that is not a database, a corrupt one, a path that is not a
 * directory, a read-only directory or file, a directory another server
 * holds) with one line naming it; the
 * response store in it keeps entries across a reopen, per owner, evicts the
 * least recently used past its bytes or rows (and prunes at open what a
 * larger budget left); a write that fails (the file size limit standing for
 * a full disk) fails that put alone; the activity log keeps records by id
 * and owner, reads the newest before an id, and prunes past its rows;
 * owner tags are stable across a reopen and differ between keys. */
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/responses/responses_store.h"
#include "server/state/activity_db.h"
#include "server/state/state_db.h"
#include "support.h"

static char dir[512];

static void setup(void)
{
    support_tmpdir(dir, sizeof(dir));
}

static void teardown(void)
{
    support_rmtree(dir);
}

static struct st_state_db *open_ok(const char *d)
{
    struct st_state_db *sd = NULL;
    struct st_err err = { 0 };
    enum st_status rc = st_state_db_open(d, &sd, &err);
    ck_assert_msg(rc == ST_OK, "%s", err.msg);
    return sd;
}

static struct st_resp_store *store_ok(struct st_state_db *sd, size_t budget, int64_t rows)
{
    struct st_resp_store *s = NULL;
    struct st_err err = { 0 };
    ck_assert_msg(st_resp_store_open(sd, budget, rows, &s, &err) == ST_OK, "%s", err.msg);
    return s;
}

static void put(struct st_resp_store *s, uint64_t owner, const char *id, const char *text)
{
    ck_assert_int_eq(st_resp_store_put(s, owner, id, "[1]", 3, "[2]", 3, text, strlen(text)),
                     ST_OK);
}

static bool has(struct st_resp_store *s, uint64_t owner, const char *id)
{
    char *obj = NULL;
    enum st_status rc = st_resp_store_get(s, owner, id, NULL, NULL, &obj);
    free(obj);
    return rc == ST_OK;
}

/* The status and message of opening 'd'. */
static enum st_status open_err(const char *d, struct st_err *err)
{
    struct st_state_db *sd = NULL;
    enum st_status rc = st_state_db_open(d, &sd, err);
    st_state_db_free(sd);
    return rc;
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_uint_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

START_TEST(test_state_responses_survive_reopen)
{
    struct st_state_db *sd = open_ok(dir);
    struct st_resp_store *s = store_ok(sd, 1 << 20, 100);
    put(s, 7, "resp_a", "{\"id\":\"resp_a\"}");
    put(s, 8, "resp_b", "{\"id\":\"resp_b\"}");
    ck_assert_int_eq(st_resp_store_delete(s, 8, "resp_a"), ST_ERR_NOT_FOUND);   /* not its own */
    st_resp_store_unref(s);
    st_state_db_free(sd);

    sd = open_ok(dir);
    s = store_ok(sd, 1 << 20, 100);
    char *in = NULL, *out = NULL, *obj = NULL;
    ck_assert_int_eq(st_resp_store_get(s, 7, "resp_a", &in, &out, &obj), ST_OK);
    ck_assert_str_eq(in, "[1]");
    ck_assert_str_eq(out, "[2]");
    ck_assert_str_eq(obj, "{\"id\":\"resp_a\"}");
    free(in);
    free(out);
    free(obj);
    ck_assert(!has(s, 8, "resp_a"));   /* another owner's: as if never stored */
    ck_assert(has(s, 8, "resp_b"));
    struct st_resp_store_stats st;
    st_resp_store_stats(s, &st);
    ck_assert_uint_eq(st.entries, 2);
    ck_assert_uint_gt(st.bytes, 0);
    ck_assert_int_eq(st_resp_store_delete(s, 7, "resp_a"), ST_OK);
    ck_assert(!has(s, 7, "resp_a"));
    st_resp_store_stats(s, &st);
    ck_assert_uint_eq(st.entries, 1);
    st_resp_store_unref(s);
    st_state_db_free(sd);
}
END_TEST

START_TEST(test_state_responses_prune)
{
    struct st_state_db *sd = open_ok(dir);
    struct st_resp_store *s = store_ok(sd, 1 << 20, 3);   /* 3 rows */
    put(s, 0, "r1", "one");
    put(s, 0, "r2", "two");
    put(s, 0, "r3", "three");
    ck_assert(has(s, 0, "r1"));             /* a use: r2 is now the oldest */
    put(s, 0, "r4", "four");
    ck_assert(!has(s, 0, "r2"));
    ck_assert(has(s, 0, "r1") && has(s, 0, "r3") && has(s, 0, "r4"));
    struct st_resp_store_stats st;
    st_resp_store_stats(s, &st);
    ck_assert_uint_eq(st.entries, 3);
    ck_assert_uint_eq(st.evicted, 1);
    /* an entry alone over the budget: refused, nothing evicted */
    char big[2048];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    st_resp_store_unref(s);
    s = store_ok(sd, 1024, 3);   /* reopened smaller: pruned to the bytes at once */
    st_resp_store_stats(s, &st);
    ck_assert_uint_le(st.bytes, 1024);
    ck_assert_int_eq(st_resp_store_put(s, 0, "big", "[]", 2, "[]", 2, big, strlen(big)),
                     ST_ERR_TOO_LONG);
    st_resp_store_unref(s);
    s = store_ok(sd, 1 << 20, 1);   /* and to the rows: the most recently used stays */
    st_resp_store_stats(s, &st);
    ck_assert_uint_eq(st.entries, 1);
    ck_assert(has(s, 0, "r4"));
    st_resp_store_unref(s);
    st_state_db_free(sd);
}
END_TEST

/* A write past the file size limit (EFBIG, as a full disk gives ENOSPC)
 * fails that put; what was stored stays readable and counted. */
START_TEST(test_state_write_failure)
{
    struct st_state_db *sd = open_ok(dir);
    struct st_resp_store *s = store_ok(sd, 64 << 20, 100);
    put(s, 0, "small", "kept");
    struct st_resp_store_stats before, after;
    st_resp_store_stats(s, &before);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim = { 256 << 10, 256 << 10 };
    ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    size_t n = 4 << 20;
    char *big = malloc(n + 1);
    ck_assert_ptr_nonnull(big);
    memset(big, 'y', n);
    big[n] = '\0';
    ck_assert_int_eq(st_resp_store_put(s, 0, "big", "[]", 2, "[]", 2, big, n), ST_ERR_IO);
    free(big);
    st_resp_store_stats(s, &after);
    ck_assert_uint_eq(after.entries, before.entries);
    ck_assert_uint_eq(after.bytes, before.bytes);
    ck_assert(has(s, 0, "small"));
    ck_assert(!has(s, 0, "big"));
    st_resp_store_unref(s);
    st_state_db_free(sd);
}
END_TEST

START_TEST(test_state_owner_tags)
{
    struct st_state_db *sd = open_ok(dir);
    uint64_t a = st_state_db_owner(sd, "key-a"), b = st_state_db_owner(sd, "key-b");
    ck_assert_uint_ne(a, b);
    ck_assert(a != 0 && a != UINT64_MAX && b != 0 && b != UINT64_MAX);
    st_state_db_free(sd);
    sd = open_ok(dir);
    ck_assert_uint_eq(st_state_db_owner(sd, "key-a"), a);   /* the salt is kept */
    st_state_db_free(sd);
    char other[600];
    snprintf(other, sizeof(other), "%s/other", dir);
    sd = open_ok(other);   /* another database, another salt */
    ck_assert_uint_ne(st_state_db_owner(sd, "key-a"), a);
    st_state_db_free(sd);
}
END_TEST

static size_t read_ids(struct st_activity_db *a, uint64_t before, bool all, uint64_t owner,
                       size_t max, char *out, size_t cap)
{
    struct st_buf b;
    st_buf_init(&b);
    size_t n = 0;
    ck_assert_int_eq(st_activity_db_read(a, before, all, owner, max, &b, &n), ST_OK);
    snprintf(out, cap, "%.*s", (int)b.len, b.data ? b.data : "");
    st_buf_fini(&b);
    return n;
}

START_TEST(test_state_activity)
{
    struct st_state_db *sd = open_ok(dir);
    struct st_activity_db *a = NULL;
    struct st_err err = { 0 };
    ck_assert_int_eq(st_activity_db_open(sd, 4, &a, &err), ST_OK);
    ck_assert_uint_eq(st_activity_db_last_id(a), 0);
    char rec[32], got[256];
    for (uint64_t id = 1; id <= 5; id++) {
        snprintf(rec, sizeof(rec), "{\"id\":%llu}", (unsigned long long)id);
        ck_assert_int_eq(st_activity_db_add(a, id, id % 2 ? 11 : 22, rec, strlen(rec)), ST_OK);
    }
    /* 4 rows at most: id 1 went */
    ck_assert_uint_eq(read_ids(a, UINT64_MAX, true, 0, 10, got, sizeof(got)), 4);
    ck_assert_str_eq(got, "{\"id\":2},{\"id\":3},{\"id\":4},{\"id\":5}");
    ck_assert_uint_eq(read_ids(a, 5, true, 0, 2, got, sizeof(got)), 2);   /* newest below 5 */
    ck_assert_str_eq(got, "{\"id\":3},{\"id\":4}");
    ck_assert_uint_eq(read_ids(a, UINT64_MAX, false, 11, 10, got, sizeof(got)), 2);
    ck_assert_str_eq(got, "{\"id\":3},{\"id\":5}");
    ck_assert_uint_eq(read_ids(a, UINT64_MAX, false, 33, 10, got, sizeof(got)), 0);
    st_activity_db_checkpoint(a);   /* the writer thread's: the rows stay as they were */
    ck_assert_uint_eq(read_ids(a, UINT64_MAX, true, 0, 10, got, sizeof(got)), 4);
    st_activity_db_close(a);
    ck_assert_int_eq(st_activity_db_open(sd, 2, &a, &err), ST_OK);   /* reopened smaller */
    ck_assert_uint_eq(st_activity_db_last_id(a), 5);
    ck_assert_uint_eq(read_ids(a, UINT64_MAX, true, 0, 10, got, sizeof(got)), 2);
    ck_assert_str_eq(got, "{\"id\":4},{\"id\":5}");
    st_activity_db_close(a);
    st_state_db_free(sd);
}
END_TEST

/* One server per directory: a second open waits for the first to close. */
START_TEST(test_state_one_at_a_time)
{
    struct st_state_db *sd = open_ok(dir);
    struct st_err err = { 0 };
    ck_assert_int_eq(open_err(dir, &err), ST_ERR_IO);
    ck_assert_msg(strstr(err.msg, "in use by another Strata") && strstr(err.msg, dir), "%s",
                  err.msg);
    st_state_db_free(sd);
    sd = open_ok(dir);
    st_state_db_free(sd);
}
END_TEST

START_TEST(test_state_not_a_database)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, ST_STATE_DB_FILE);
    char junk[8192];
    for (size_t i = 0; i < sizeof(junk); i++)
        junk[i] = (char)(i * 7 + 3);
    write_file(path, junk, sizeof(junk));
    struct st_err err = { 0 };
    ck_assert_int_eq(open_err(dir, &err), ST_ERR_IO);
    ck_assert_msg(strstr(err.msg, path) && strstr(err.msg, "not a database"), "%s", err.msg);
    ck_assert_ptr_null(strchr(err.msg, '\n'));
}
END_TEST

/* A real database with a page overwritten: quick_check finds it at open. */
START_TEST(test_state_corrupt)
{
    struct st_state_db *sd = open_ok(dir);
    struct st_resp_store *s = store_ok(sd, 1 << 20, 1000);
    char text[3000];
    memset(text, 'z', sizeof(text) - 1);
    text[sizeof(text) - 1] = '\0';
    for (int i = 0; i < 40; i++) {
        char id[16];
        snprintf(id, sizeof(id), "r%d", i);
        put(s, 0, id, text);
    }
    st_resp_store_unref(s);   /* the last connection: the WAL is checkpointed into the file */
    st_state_db_free(sd);
    char path[600];
    snprintf(path, sizeof(path), "%s/%s", dir, ST_STATE_DB_FILE);
    struct stat stt;
    ck_assert_int_eq(stat(path, &stt), 0);
    ck_assert_int_gt(stt.st_size, 8 * 4096);
    FILE *f = fopen(path, "r+b");
    ck_assert_ptr_nonnull(f);
    char junk[4096];
    memset(junk, 0x5a, sizeof(junk));
    for (long page = 2; page * 4096 < stt.st_size; page += 3) {   /* b-tree pages too */
        fseek(f, page * 4096, SEEK_SET);
        fwrite(junk, 1, sizeof(junk), f);
    }
    fclose(f);
    struct st_err err = { 0 };
    ck_assert_int_eq(open_err(dir, &err), ST_ERR_IO);
    ck_assert_msg(strstr(err.msg, path) != NULL, "%s", err.msg);
    ck_assert_ptr_null(strchr(err.msg, '\n'));
}
END_TEST

START_TEST(test_state_not_a_directory)
{
    char path[600];
    snprintf(path, sizeof(path), "%s/file", dir);
    write_file(path, "x", 1);
    struct st_err err = { 0 };
    ck_assert_int_eq(open_err(path, &err), ST_ERR_IO);
    ck_assert_msg(strstr(err.msg, "not a directory") != NULL, "%s", err.msg);
    snprintf(path, sizeof(path), "%s/file/sub", dir);
    ck_assert_int_eq(open_err(path, &err), ST_ERR_IO);
    ck_assert_msg(strstr(err.msg, "cannot create") != NULL, "%s", err.msg);
}
END_TEST

/* Run the open as a user that cannot write there: root writes anywhere,
 * so as root a child drops to nobody (65534) first. Returns the child's
 * verdict: 0 = refused with one line naming the path and saying 'want'. */
static int open_as_other_user(const char *d, const char *want)
{
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(3);
        struct st_err err = { 0 };
        enum st_status rc = open_err(d, &err);
        if (rc != ST_ERR_IO)
            _exit(1);
        fprintf(stderr, "refused: %s\n", err.msg);
        _exit(strstr(err.msg, d) && strstr(err.msg, want) && !strchr(err.msg, '\n') ? 0 : 2);
    }
    int status = 0;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
    ck_assert(WIFEXITED(status));
    return WEXITSTATUS(status);
}

START_TEST(test_state_read_only)
{
    char sub[600], path[700];
    snprintf(sub, sizeof(sub), "%s/state", dir);
    struct st_state_db *sd = open_ok(sub);   /* a database made by its owner */
    st_state_db_free(sd);
    snprintf(path, sizeof(path), "%s/%s", sub, ST_STATE_DB_FILE);
    char lock[700];
    snprintf(lock, sizeof(lock), "%s/%s", sub, ST_STATE_LOCK_FILE);
    ck_assert_int_eq(chmod(dir, 0755), 0);
    ck_assert_int_eq(chmod(lock, 0600), 0);
    ck_assert_int_eq(chmod(sub, 0555), 0);
    ck_assert_int_eq(open_as_other_user(sub, "cannot open"), 0);   /* not even the lock */
    ck_assert_int_eq(chmod(lock, 0666), 0);
    ck_assert_int_eq(chmod(path, 0444), 0);
    /* neither the database nor the directory writable */
    ck_assert_int_eq(open_as_other_user(sub, "writable by this user"), 0);
    ck_assert_int_eq(chmod(path, 0666), 0);
    /* the database is, the directory (its WAL) is not */
    ck_assert_int_eq(open_as_other_user(sub, "writable by this user"), 0);
    char fresh[700];
    snprintf(fresh, sizeof(fresh), "%s/new", sub);
    ck_assert_int_eq(open_as_other_user(fresh, "cannot create it"), 0);   /* cannot be made */
    ck_assert_int_eq(chmod(sub, 0755), 0);
}
END_TEST

static Suite *server_state_suite(void)
{
    Suite *s = suite_create("server_state");
    TCase *t = tcase_create("state");
    tcase_set_timeout(t, 60);
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, test_state_responses_survive_reopen);
    tcase_add_test(t, test_state_responses_prune);
    tcase_add_test(t, test_state_write_failure);
    tcase_add_test(t, test_state_owner_tags);
    tcase_add_test(t, test_state_activity);
    tcase_add_test(t, test_state_one_at_a_time);
    tcase_add_test(t, test_state_not_a_database);
    tcase_add_test(t, test_state_corrupt);
    tcase_add_test(t, test_state_not_a_directory);
    tcase_add_test(t, test_state_read_only);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(server_state_suite(), CK_FORK);
}

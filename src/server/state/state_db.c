/* state_db.c -- open and check the --state-dir database (state_db.h).
 *
 * Schema version 1. A file with another version was written by another
 * Strata: refused rather than guessed at.
 */
#include <errno.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/state/state_db.h"

#define SCHEMA_VERSION 1
#define BUSY_TIMEOUT_MS 5000

struct st_state_db {
    char *dir;
    char *path;               /* dir/strata.db */
    int lock_fd;              /* dir/strata.lock, flock'd while this is open; -1: none */
    uint8_t salt[16];         /* the owner tags' key (meta 'owner_salt') */
};

static const char SCHEMA[] =
    "CREATE TABLE IF NOT EXISTS meta(k TEXT PRIMARY KEY, v BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS responses(id TEXT PRIMARY KEY, owner INTEGER NOT NULL,"
    " used INTEGER NOT NULL, size INTEGER NOT NULL, input BLOB NOT NULL,"
    " output BLOB NOT NULL, response BLOB NOT NULL);"
    "CREATE INDEX IF NOT EXISTS responses_used ON responses(used);"
    "CREATE TABLE IF NOT EXISTS activity(id INTEGER PRIMARY KEY, owner INTEGER NOT NULL,"
    " rec BLOB NOT NULL);"
    "CREATE INDEX IF NOT EXISTS activity_owner ON activity(owner, id);";

/* ---- SipHash-2-4 (Aumasson and Bernstein), 64-bit output ------------------- */

static uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

#define SIPROUND()                                                                    \
    do {                                                                              \
        v0 += v1; v1 = rotl(v1, 13); v1 ^= v0; v0 = rotl(v0, 32);                     \
        v2 += v3; v3 = rotl(v3, 16); v3 ^= v2;                                        \
        v0 += v3; v3 = rotl(v3, 21); v3 ^= v0;                                        \
        v2 += v1; v1 = rotl(v1, 17); v1 ^= v2; v2 = rotl(v2, 32);                     \
    } while (0)

static uint64_t siphash(const uint8_t key[16], const uint8_t *in, size_t len)
{
    uint64_t k0 = le64(key), k1 = le64(key + 8);
    uint64_t v0 = k0 ^ UINT64_C(0x736f6d6570736575), v1 = k1 ^ UINT64_C(0x646f72616e646f6d);
    uint64_t v2 = k0 ^ UINT64_C(0x6c7967656e657261), v3 = k1 ^ UINT64_C(0x7465646279746573);
    size_t whole = len - len % 8;
    for (size_t i = 0; i < whole; i += 8) {
        uint64_t m = le64(in + i);
        v3 ^= m;
        SIPROUND();
        SIPROUND();
        v0 ^= m;
    }
    uint64_t b = (uint64_t)len << 56;
    for (size_t i = 0; i < len % 8; i++)
        b |= (uint64_t)in[whole + i] << (8 * i);
    v3 ^= b;
    SIPROUND();
    SIPROUND();
    v0 ^= b;
    v2 ^= 0xff;
    for (int i = 0; i < 4; i++)
        SIPROUND();
    return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t st_state_db_owner(const struct st_state_db *sd, const char *key)
{
    uint64_t h = siphash(sd->salt, (const uint8_t *)key, strlen(key));
    if (h == 0)
        return 1;
    return h == UINT64_MAX ? UINT64_MAX - 1 : h;
}

/* ---- opening ------------------------------------------------------------------ */

const char *st_state_db_path(const struct st_state_db *sd)
{
    return sd->path;
}

void st_state_db_free(struct st_state_db *sd)
{
    if (!sd)
        return;
    if (sd->lock_fd >= 0)
        close(sd->lock_fd);   /* releases the flock */
    free(sd->dir);
    free(sd->path);
    free(sd);
}

/* The error of 'db' (or of opening it, rc) as one line naming the file. */
static enum st_status db_fail(const struct st_state_db *sd, sqlite3 *db, int rc,
                              const char *doing, struct st_err *err)
{
    const char *why = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    int code = db ? sqlite3_errcode(db) & 0xff : rc & 0xff;
    const char *hint = "";
    if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
        hint = "; move it away to start with an empty state";
    else if (code == SQLITE_READONLY || code == SQLITE_CANTOPEN || code == SQLITE_PERM)
        hint = "; the directory and the file must be writable by this user";
    return st_err_set(err, ST_ERR_IO, "--state-dir: %s %s: %s%s", doing, sd->path, why, hint);
}

enum st_status st_state_db_connect(const struct st_state_db *sd, sqlite3 **out,
                                   struct st_err *err)
{
    *out = NULL;
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(sd->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                             SQLITE_OPEN_FULLMUTEX, NULL);
    if (rc != SQLITE_OK) {
        enum st_status st = db_fail(sd, NULL, rc, "cannot open", err);
        sqlite3_close(db);
        return st;
    }
    if (sqlite3_db_readonly(db, "main") == 1) {
        sqlite3_close(db);
        return st_err_set(err, ST_ERR_IO, "--state-dir: %s is read-only; the directory and "
                          "the file must be writable by this user", sd->path);
    }
    sqlite3_busy_timeout(db, BUSY_TIMEOUT_MS);
    /* WAL: one writer beside readers; NORMAL: a commit is durable once the
     * WAL is checkpointed, and the file is never corrupted by a crash */
    rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL,
                      NULL);
    if (rc != SQLITE_OK) {
        enum st_status st = db_fail(sd, db, rc, "cannot use", err);
        sqlite3_close(db);
        return st;
    }
    *out = db;
    return ST_OK;
}

sqlite3_stmt *st_state_db_prep(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return NULL;
    }
    return st;
}

/* The single text answer of 'sql' into out (empty when none). */
static int query_text(sqlite3 *db, const char *sql, char *out, size_t cap)
{
    sqlite3_stmt *st = NULL;
    out[0] = '\0';
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *t = sqlite3_column_text(st, 0);
        snprintf(out, cap, "%s", t ? (const char *)t : "");
        rc = SQLITE_OK;
    } else if (rc == SQLITE_DONE) {
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

/* Check the file whole, create what is missing, read the version and salt:
 * the one write at start that finds an unwritable file or directory. */
static enum st_status prepare(struct st_state_db *sd, sqlite3 *db, struct st_err *err)
{
    char ans[160];
    int rc = query_text(db, "PRAGMA quick_check", ans, sizeof(ans));
    if (rc != SQLITE_OK)
        return db_fail(sd, db, rc, "cannot read", err);
    if (strcmp(ans, "ok") != 0) {
        char *nl = strchr(ans, '\n');   /* its first finding, on the one line */
        if (nl)
            *nl = '\0';
        return st_err_set(err, ST_ERR_IO, "--state-dir: %s is corrupt (%s); move it away to "
                          "start with an empty state", sd->path, ans);
    }
    uint8_t salt[16];
    if (getrandom(salt, sizeof(salt), 0) != (ssize_t)sizeof(salt))
        return st_err_errno(err, ST_ERR_IO, "--state-dir: no random bytes for the owner salt");
    sqlite3_stmt *st = NULL;
    rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, SCHEMA, NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "INSERT OR IGNORE INTO meta(k, v) VALUES('version', 1)", NULL,
                          NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "INSERT OR IGNORE INTO meta(k, v) VALUES('owner_salt', ?)",
                                -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_bind_blob(st, 1, salt, sizeof(salt), SQLITE_STATIC);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_DONE)
        rc = SQLITE_OK;
    sqlite3_finalize(st);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        enum st_status e = db_fail(sd, db, rc, "cannot write", err);
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        return e;
    }
    rc = query_text(db, "SELECT v FROM meta WHERE k = 'version'", ans, sizeof(ans));
    if (rc != SQLITE_OK)
        return db_fail(sd, db, rc, "cannot read", err);
    if (strtol(ans, NULL, 10) != SCHEMA_VERSION)
        return st_err_set(err, ST_ERR_IO, "--state-dir: %s has schema version %s, this Strata "
                          "reads version %d", sd->path, ans, SCHEMA_VERSION);
    rc = sqlite3_prepare_v2(db, "SELECT v FROM meta WHERE k = 'owner_salt'", -1, &st, NULL);
    bool got = false;
    if (rc == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW &&
        sqlite3_column_bytes(st, 0) == (int)sizeof(sd->salt)) {
        memcpy(sd->salt, sqlite3_column_blob(st, 0), sizeof(sd->salt));
        got = true;
    }
    sqlite3_finalize(st);
    if (!got)
        return st_err_set(err, ST_ERR_IO, "--state-dir: %s has no usable owner salt; move it "
                          "away to start with an empty state", sd->path);
    return ST_OK;
}

/* 'dir' exists as a directory, made when missing. */
static enum st_status make_dir(const char *dir, struct st_err *err)
{
    struct stat stt;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return st_err_errno(err, ST_ERR_IO, "--state-dir %s: cannot create it", dir);
    if (stat(dir, &stt) != 0)
        return st_err_errno(err, ST_ERR_IO, "--state-dir %s", dir);
    if (!S_ISDIR(stt.st_mode))
        return st_err_set(err, ST_ERR_IO, "--state-dir %s: not a directory", dir);
    return ST_OK;
}

/* One server per directory: two would number their activity records
 * alike and count the store's bytes apart. An flock on DIR/strata.lock,
 * held while sd is open, released by the kernel if the process dies. */
static enum st_status take_lock(struct st_state_db *sd, struct st_err *err)
{
    size_t n = strlen(sd->dir) + sizeof(ST_STATE_LOCK_FILE) + 1;
    char *lock = malloc(n);
    if (!lock)
        return st_err_set(err, ST_ERR_NOMEM, "--state-dir: out of memory");
    snprintf(lock, n, "%s/%s", sd->dir, ST_STATE_LOCK_FILE);
    enum st_status rc = ST_OK;
    sd->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (sd->lock_fd < 0)
        rc = st_err_errno(err, ST_ERR_IO, "--state-dir: cannot open %s", lock);
    else if (flock(sd->lock_fd, LOCK_EX | LOCK_NB) != 0)
        rc = errno == EWOULDBLOCK
                 ? st_err_set(err, ST_ERR_IO, "--state-dir %s: in use by another Strata (%s "
                              "is locked); one server per state directory", sd->dir, lock)
                 : st_err_errno(err, ST_ERR_IO, "--state-dir: cannot lock %s", lock);
    free(lock);
    return rc;
}

enum st_status st_state_db_open(const char *dir, struct st_state_db **out, struct st_err *err)
{
    *out = NULL;
    enum st_status rc = make_dir(dir, err);
    if (rc != ST_OK)
        return rc;
    struct st_state_db *sd = calloc(1, sizeof(*sd));
    size_t n = strlen(dir) + sizeof(ST_STATE_DB_FILE) + 1;
    if (sd)
        sd->lock_fd = -1;
    if (!sd || !(sd->dir = strdup(dir)) || !(sd->path = malloc(n))) {
        st_state_db_free(sd);
        return st_err_set(err, ST_ERR_NOMEM, "--state-dir: out of memory");
    }
    snprintf(sd->path, n, "%s/%s", dir, ST_STATE_DB_FILE);
    sqlite3 *db = NULL;
    rc = take_lock(sd, err);
    if (rc == ST_OK)
        rc = st_state_db_connect(sd, &db, err);
    if (rc == ST_OK)
        rc = prepare(sd, db, err);
    sqlite3_close(db);
    if (rc != ST_OK) {
        st_state_db_free(sd);
        return rc;
    }
    *out = sd;
    return ST_OK;
}

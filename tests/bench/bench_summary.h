/* bench_summary.h -- one row of scripts/bench.sh's summary table.
 *
 * When the environment names a file in STRATA_BENCH_SUMMARY, a benchmark
 * appends one tab-separated line per comparison to it:
 *   bench \t what is compared \t baseline figure \t figure \t ratio
 * The ratio is always "how many times better the measured thing is than
 * the baseline measured in the same run" (throughputs: figure / baseline;
 * times: baseline / figure); 0 or less leaves it blank (absolute figure).
 * Without the variable nothing is written: the bench's own printout is
 * unchanged. Header-only (static functions), for the tests/bench programs.
 */
#ifndef STRATA_BENCH_SUMMARY_H
#define STRATA_BENCH_SUMMARY_H

#include <stdio.h>
#include <stdlib.h>

static inline void bench_summary(const char *bench, const char *what, const char *baseline,
                                 const char *figure, double ratio)
{
    const char *path = getenv("STRATA_BENCH_SUMMARY");
    if (!path || !*path)
        return;
    FILE *f = fopen(path, "a");
    if (!f) {
        fprintf(stderr, "%s: cannot append to %s\n", bench, path);
        return;
    }
    if (ratio > 0)   /* small ratios keep two significant digits */
        fprintf(f, ratio < 0.1 ? "%s\t%s\t%s\t%s\t%.2gx\n" : "%s\t%s\t%s\t%s\t%.2fx\n", bench,
                what, baseline, figure, ratio);
    else
        fprintf(f, "%s\t%s\t%s\t%s\t\n", bench, what, baseline, figure);
    fclose(f);
}

#endif /* STRATA_BENCH_SUMMARY_H */

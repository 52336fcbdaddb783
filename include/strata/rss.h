/* rss.h -- how much memory this process holds resident (the figure `ps`
 * shows as RSS): the model load's log line and the idle trim's (issue 25).
 *
 * Threads: safe (reads /proc on each call).
 */
#ifndef STRATA_RSS_H
#define STRATA_RSS_H

#include <stdint.h>

/* Resident bytes of this process (Linux /proc/self/statm); 0 when the
 * system cannot say (a running process always has some pages resident). */
int64_t st_rss_bytes(void);

#endif /* STRATA_RSS_H */

/* cli_rope.c -- the rope scaling flags of `strata run` and `strata bench`
 * (--rope-scaling, --rope-scale, --yarn-orig-ctx), the same three that
 * `strata serve` takes through src/config, so a context extension can be
 * tried and measured without a server. Values are checked where the
 * server's are: here the form (a choice, a positive number), at load
 * (st_hparams_rope_override) the combination.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "strata/config.h"

bool st_cli_rope_arg(const char *a, const char *v, struct st_model_config *m, bool *ok)
{
    char *end;
    if (!strcmp(a, "--rope-scaling")) {
        *ok = st_rope_scaling_parse(v, &m->rope_scaling);
        return true;
    }
    if (!strcmp(a, "--rope-scale")) {
        errno = 0;
        double f = strtod(v, &end);
        /* checked as the float the loader takes: a value that rounds to 0
         * there would mean "the file's factor", one that rounds to inf is
         * refused only at load */
        float ff = (float)f;
        *ok = !errno && end != v && !*end && isfinite(ff) && ff > 0.0f;
        if (*ok)
            m->rope_scale = f;
        return true;
    }
    if (!strcmp(a, "--yarn-orig-ctx")) {
        errno = 0;
        long long n = strtoll(v, &end, 10);
        *ok = !errno && end != v && !*end && n >= 1 && n <= INT32_MAX;
        if (*ok)
            m->yarn_orig_ctx = n;
        return true;
    }
    return false;
}

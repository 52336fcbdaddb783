/* rope_scaling.c -- the spellings of enum st_rope_scaling (strata/rope.h),
 * shared by the config parser, the CLI commands and the model loader. */
#include <string.h>

#include "strata/rope.h"

const char *const st_rope_scaling_names[] = { "model", "none", "linear", "yarn", NULL };

const char *st_rope_scaling_name(enum st_rope_scaling s)
{
    return (int)s >= ST_ROPE_SCALING_MODEL && s <= ST_ROPE_SCALING_YARN
               ? st_rope_scaling_names[s] : "?";
}

bool st_rope_scaling_parse(const char *s, enum st_rope_scaling *out)
{
    for (int i = ST_ROPE_SCALING_MODEL; i <= ST_ROPE_SCALING_YARN; i++)
        if (!strcmp(s, st_rope_scaling_names[i])) {
            *out = (enum st_rope_scaling)i;
            return true;
        }
    return false;
}

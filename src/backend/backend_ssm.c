/* backend_ssm.c -- the public calls of the optional ops (strata/backend_ssm.h):
 * validate (op_check_ssm.c), then dispatch, or ST_ERR_UNSUPPORTED when the
 * backend leaves the op out.
 */
#include "internal.h"
#include "op_check.h"

bool st_backend_has_ssm(const struct st_backend *be)
{
#define ST_OPT_OP_PRESENT(op, params, args) be->ops->op != NULL &&
    return ST_OPT_OP_MAP(ST_OPT_OP_PRESENT) true;
#undef ST_OPT_OP_PRESENT
}

#define ST_OPT_OP_WRAPPER(op, params, args)                                              \
    enum st_status st_backend_##op params                                                \
    {                                                                                    \
        enum st_status rc = st_check_##op args;                                          \
        if (rc != ST_OK)                                                                 \
            return rc;                                                                   \
        if (!be->ops->op)                                                                \
            return st_err_set(err, ST_ERR_UNSUPPORTED, "op %s is not in the %s backend", \
                              #op, be->ops->name);                                       \
        be->n_ops++;                                                                     \
        return be->ops->op args;                                                         \
    }
ST_OPT_OP_MAP(ST_OPT_OP_WRAPPER)
#undef ST_OPT_OP_WRAPPER

/* op_check.h -- argument validation shared by every backend.
 *
 * One st_check_<op> per entry of ST_OP_MAP, with the op's own parameter
 * list. backend.c calls it before dispatching, so every backend accepts
 * and rejects exactly the same shapes and dtypes (backend.h documents
 * them). Each returns ST_ERR_INVALID with a message naming the op and the
 * offending shape.
 */
#ifndef STRATA_BACKEND_OP_CHECK_H
#define STRATA_BACKEND_OP_CHECK_H

#include "internal.h"

/* ST_ERR_INVALID: "<op>: bad <what> (type, ne ...)" ("is NULL" for NULL). */
enum st_status st_op_bad(struct st_err *err, const char *op, const char *what,
                         const struct st_tensor *t);
/* t exists on backend be, has 'type' (any when < 0) and at most 'dims' dims. */
bool st_op_ok(struct st_backend *be, const struct st_tensor *t, int type, int dims);

#define ST_CHECK_DECL(name, params, args) enum st_status st_check_##name params;
ST_OP_MAP(ST_CHECK_DECL)
ST_OPT_OP_MAP(ST_CHECK_DECL)   /* op_check_ssm.c */
#undef ST_CHECK_DECL

#endif /* STRATA_BACKEND_OP_CHECK_H */

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

#define ST_CHECK_DECL(name, params, args) enum st_status st_check_##name params;
ST_OP_MAP(ST_CHECK_DECL)
#undef ST_CHECK_DECL

#endif /* STRATA_BACKEND_OP_CHECK_H */

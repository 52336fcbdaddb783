/* internal.h -- private cross-file API of the model module. */
#ifndef STRATA_MODEL_INTERNAL_H
#define STRATA_MODEL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "strata/err.h"

/* Block size of any ggml type id (including ones strata cannot compute
 * on); false for an id that is not a ggml type. */
bool st_model_ggml_type_size(uint32_t id, int32_t *blck, int32_t *bytes);

#endif /* STRATA_MODEL_INTERNAL_H */

/* quant_internal.h -- private to src/backend/base: the block quantizers of
 * quant_lowbit.c, called by st_quantize_row (quant_quantize.c).
 *
 * Each takes one block of floats (32 or 256, as the type says) and writes
 * one packed block; both pointers are borrowed for the call.
 */
#ifndef STRATA_BACKEND_QUANT_INTERNAL_H
#define STRATA_BACKEND_QUANT_INTERNAL_H

#include "strata/quant.h"

void st_quant_block_q4_1(const float *x, struct st_block_q4_1 *y);
void st_quant_block_q5_0(const float *x, struct st_block_q5_0 *y);
void st_quant_block_q5_1(const float *x, struct st_block_q5_1 *y);
void st_quant_block_q2_k(const float *x, struct st_block_q2_k *y);
void st_quant_block_q3_k(const float *x, struct st_block_q3_k *y);

#endif /* STRATA_BACKEND_QUANT_INTERNAL_H */

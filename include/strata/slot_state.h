/* slot_state.h -- a slot's prompt cache as a file: llama-server's
 * POST /slots/{id}?action=save|restore (docs/API.md "/slots").
 *
 * File layout (host byte order; the file is for the same machine kind):
 *   header    struct st_slot_file_head: magic "STSLOT01", version, the
 *             model's identity (architecture, layer and head sizes, KV row
 *             bytes, recurrent state sizes, vocabulary, GGUF file name, a
 *             hash of some weights)
 *             and n_tokens
 *   ids       n_tokens int32 token ids
 *   KV rows   per attention layer, K then V: rows [0, n_tokens) of the
 *             slot, row_bytes each (K's; V's rows are of V's type), in the
 *             cache's types (f16, q8_0, f32, bf16: kv_dtype)
 *   state     (recurrent layers) per layer the slot's conv state, then per
 *             layer its delta state (f32)
 *   ckpts     (version 2) int64 n, then n state checkpoints, the longest
 *             first: int64 position p (it stands for ids [0, p), 0 < p <=
 *             n_tokens), its conv state of every recurrent layer, then its
 *             delta state (f32, as the state above); n is 0 for a model
 *             without recurrent layers or a slot without checkpoints
 * A restore checks the identity field by field: a file from another model
 * is ST_ERR_INVALID naming the field, never a crash. Version 1 files (no
 * ckpts) still restore, without checkpoints; a later version is refused
 * with the versions this build reads.
 *
 * Threads: the model's thread (the engine thread), like st_model_forward.
 */
#ifndef STRATA_SLOT_STATE_H
#define STRATA_SLOT_STATE_H

#include <stdint.h>
#include <stdio.h>

#include "strata/compiler.h"
#include "strata/status.h"

#define ST_SLOT_FILE_MAGIC   "STSLOT01"
#define ST_SLOT_FILE_VERSION 2   /* 2: the state checkpoints after the state */

struct st_slot_file_head {
    char     magic[8];
    uint32_t version;
    uint32_t kv_dtype;        /* st_dtype of the K rows (f16, q8_0, f32, bf16); bits 16..:
                               * the V rows' when they differ (0: the same; 0xffff: f32) */
    char     arch[32];        /* general.architecture */
    char     model_file[128]; /* the GGUF's file name (no directory) */
    uint64_t weights_hash;    /* FNV-1a of the token embeddings' first and last 64 KiB:
                               * same-shaped models with other weights differ */
    int64_t  n_layer, n_attn_layer, n_head_kv, head_dim_k, head_dim_v;
    int64_t  row_bytes;       /* one K (and one V) row of one layer */
    int64_t  n_recurrent;     /* recurrent layers (0: none) */
    int64_t  conv_elems, delta_elems;   /* one slot's state of one layer, floats */
    int64_t  n_vocab;
    int64_t  n_tokens;        /* ids and KV rows that follow */
};

struct st_model;
struct st_err;

/* Write slot 'slot''s first n_tokens rows (their ids given) and, for a
 * recurrent model, its state to f; then its state checkpoints:
 * ckpt_pos[k] (k < the checkpoints the model keeps per slot) is the
 * position of checkpoint k, <= 0 for none; NULL: none. The bytes written
 * go to *n_bytes. */
ST_MUST_CHECK
enum st_status st_model_slot_save(struct st_model *m, int32_t slot, const int32_t *ids,
                                  int64_t n_tokens, const int64_t *ckpt_pos, FILE *f,
                                  int64_t *n_bytes, struct st_err *err);

/* Read a file st_model_slot_save wrote into slot 'slot' (rows [0, n) and
 * the state), after checking its header against this model and n against
 * the slot's context. *ids (owned, malloc) and *n_tokens get its ids,
 * *n_bytes the bytes read. With ckpt_pos (NULL: the file's checkpoints
 * are read past) the file's checkpoints go into the slot's, the longest
 * first, as many as the model keeps per slot, and ckpt_pos[k] gets the
 * position of checkpoint k (-1: none); the slot's other checkpoints are
 * overwritten or marked -1. On failure the slot's KV is unspecified: the
 * caller empties it (ckpt_pos all -1). */
ST_MUST_CHECK
enum st_status st_model_slot_restore(struct st_model *m, int32_t slot, FILE *f, int32_t **ids,
                                     int64_t *n_tokens, int64_t *ckpt_pos, int64_t *n_bytes,
                                     struct st_err *err);

#endif /* STRATA_SLOT_STATE_H */

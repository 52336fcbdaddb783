/* runner_model.h -- the model runner: its constructors, for the pool
 * (src/engine/runner_new.c) and the commands; and below them its state,
 * private to runner_model.c (the compute side) and runner_model_text.c
 * (the text side built from the GGUF).
 */
#ifndef STRATA_RUNNER_MODEL_H
#define STRATA_RUNNER_MODEL_H

#include "runner/runner.h"
#include "strata/chat.h"
#include "strata/forward.h"
#include "strata/mtp.h"
#include "strata/tokenizer.h"

/* A runner over the GGUF at gguf_path on backend 'backend_name' ("cpu" or
 * "cuda"), device index 'device' for a GPU backend (< 0 = 0; "cpu" ignores it):
 * the file is mapped and its tokenizer and chat template built now; the
 * weights go to the backend at load. n_threads 0 = online cores; n_ctx 0 =
 * min(context_length, 4096); ubatch = tokens of one READ chunk. Returns
 * owned; free with st_runner_free(). ST_ERR_IO / BAD_GGUF / BAD_MODEL for
 * a file that does not open as a supported model. */
enum st_status st_runner_model_new(const char *gguf_path, const char *backend_name,
                                   int32_t device, int32_t n_threads, int32_t n_slots, int64_t n_ctx,
                                   int32_t ubatch, struct st_runner **out, struct st_err *err);

/* st_runner_model_new for one pool model (path, parallel, ctx_size) with
 * its rope scaling (rope_scaling, rope_scale, yarn_orig_ctx) applied over
 * the GGUF's (the load warns when ctx_size outgrows the trained context
 * and no scaling is on). Errors as st_runner_model_new, plus
 * ST_ERR_BAD_CONFIG for a scaling the model cannot take. */
struct st_model_config;
enum st_status st_runner_model_new_cfg(const struct st_model_config *m, const char *backend_name,
                                       int32_t device, int32_t n_threads, int32_t ubatch,
                                       struct st_runner **out, struct st_err *err);
/* m's rope fields as the loader's override (-1 / 0 = the file's). */
struct st_rope_override st_model_config_rope(const struct st_model_config *m);

struct model_runner {
    struct st_runner   base;         /* must be first */
    struct st_model   *model;        /* owned; opened at new, loaded by load */
    struct st_tok     *tok;          /* owned; read-only after new (any thread) */
    struct st_chat_tmpl tmpl;        /* read-only after new */
    struct st_fim_ids  fim;          /* FIM token ids (GGUF keys, else by text); read-only */
    char              *backend;      /* owned backend name */
    int32_t            n_threads;
    int32_t            device;       /* GPU index for "cuda" (cuda:device) */
    int32_t            ubatch;       /* tokens of one READ chunk */
    enum st_kv_type    type_k, type_v;   /* KV cache types (st_runner_model_new_cfg) */
    int64_t           *kv_len;       /* [n_slots]: tokens in each slot's cache */
    bool               kv_lazy;      /* --kv-unified: KV committed as written (kv_trim.c) */
    int64_t           *kv_high;      /* [n_slots] (kv_lazy): positions below which the slot
                                      * may hold committed memory; a cut gives back the rest */
    bool               embd_ok;      /* embeddings: the GGUF's <arch>.pooling_type is
                                      * absent, none (0) or last (3), the one pooling strata
                                      * does (docs/ENGINE.md "Embeddings"); read at new */
    /* one step's rows (engine thread only): rows_cap = ubatch + n_slots * (1 + drafts),
     * outs_cap = n_slots * (1 + drafts) + 1 logit rows */
    int64_t            rows_cap, outs_cap;
    int32_t           *row_tok, *row_slot;
    int64_t           *row_pos, *out_rows;
    int32_t           *out_seq;      /* [outs_cap]: seq index of each logits row */
    struct st_draw    *draws;        /* [outs_cap]: a greedy step's draws, and */
    int32_t           *drawn;        /* [outs_cap]  the ids they gave */
    /* (MTP) while loaded with base.mtp_draft > 0 and a model that has the layer */
    struct st_mtp     *mtp;          /* owned; NULL = no MTP */
    struct st_mtp_draft *drafts;     /* owned [n_slots]: draft call scratch */
    /* (drafts on a recurrent model, runner_rollback.c) per slot: the position its
     * saved state stands at (-1: none) and the tokens of the step that followed */
    int64_t           *saved_pos;    /* owned [n_slots] */
    int32_t           *saved_n;      /* owned [n_slots] */
    int32_t           *saved_tok;    /* owned [n_slots * saved_cap] */
    int32_t            saved_cap;
    /* (state checkpoints on a recurrent model, runner_ckpt.c) n_ckpt per slot */
    int32_t            n_ckpt;       /* 0 = none */
    int64_t           *ckpt_pos;     /* owned [n_slots * n_ckpt]: the position each stands
                                      * for (the slot's tokens [0, pos)); <= 0: free */
    uint64_t          *ckpt_used;    /* owned [n_slots * n_ckpt]: ckpt_tick of its last
                                      * put or restore */
    uint64_t           ckpt_tick;
};

/* runner_rollback.c: drafts on a model with recurrent state. init: room for
 * steps of up to max_tokens rows per slot; mark (before a forward): save the
 * state of every slot that verifies drafts in it; cut (kv_truncate to n
 * below the slot's length): restore and read the accepted tokens again,
 * returning the slot's new length (n, or 0 when n is not inside the last
 * verify step or that failed: the slot starts again). */
ST_MUST_CHECK
enum st_status st_runner_rollback_init(struct model_runner *r, int32_t max_tokens,
                                       struct st_err *err);
void st_runner_rollback_free(struct model_runner *r);
ST_MUST_CHECK
enum st_status st_runner_rollback_mark(struct model_runner *r,
                                       const struct st_runner_batch *batch, struct st_err *err);
int64_t st_runner_rollback_cut(struct model_runner *r, int32_t slot, int64_t n);

/* runner_ckpt.c: state checkpoints of a model with recurrent state. init:
 * room for n per slot; before (a forward): drop each read's slot's
 * checkpoints past where it reads from; after (a forward that succeeded):
 * a checkpoint at the end of every READ that does not sample (all of a
 * prompt's chunks but its last; a failed copy is logged and skipped); drop_above: checkpoints past n go (the slot's tokens there
 * change); best: the entry of the longest checkpoint at or below n (-1:
 * none); restore: the slot's state becomes that one's, returning its
 * position (0: none, or the copy failed); count: checkpoints held. */
ST_MUST_CHECK
enum st_status st_runner_ckpt_init(struct model_runner *r, int32_t n, struct st_err *err);
void st_runner_ckpt_free(struct model_runner *r);
void st_runner_ckpt_before(struct model_runner *r, const struct st_runner_batch *batch);
void st_runner_ckpt_after(struct model_runner *r, const struct st_runner_batch *batch);
void st_runner_ckpt_drop_above(struct model_runner *r, int32_t slot, int64_t n);
int32_t st_runner_ckpt_best(const struct model_runner *r, int32_t slot, int64_t n);
int64_t st_runner_ckpt_restore(struct model_runner *r, int32_t slot, int64_t n);
int32_t st_runner_ckpt_count(const struct model_runner *r, int32_t slot);

/* Build the tokenizer and chat template from the tokenizer.* keys of the
 * model's GGUF (docs/design/ENGINE.md 5.1). ST_ERR_BAD_MODEL when the keys are missing
 * or malformed. */
enum st_status st_runner_model_text_init(struct model_runner *r, struct st_err *err);

/* runner ops of the text side (runner_model_text.c) */
enum st_status st_runner_model_tokenize(const struct st_runner *r, const char *text, size_t len,
                                        bool add_special, bool parse_special, int32_t **ids,
                                        size_t *n_ids, struct st_err *err);
enum st_status st_runner_model_detokenize(const struct st_runner *r, const int32_t *ids,
                                          size_t n_ids, char **text, struct st_err *err);
size_t st_runner_model_max_token_bytes(const struct st_runner *r);
size_t st_runner_model_token_piece(const struct st_runner *r, int32_t token, char *buf,
                                   size_t cap);
bool st_runner_model_is_eog(const struct st_runner *r, int32_t token);
size_t st_runner_model_eog_ids(const struct st_runner *r, const int32_t **ids);
void st_runner_model_fim_ids(const struct st_runner *r, struct st_fim_ids *out);
enum st_status st_runner_model_apply_template(const struct st_runner *r,
                                              const struct st_chat_request *req,
                                              enum st_chat_ending ending, char **prompt,
                                              struct st_err *err);

#endif /* STRATA_RUNNER_MODEL_H */

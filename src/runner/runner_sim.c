/* runner_sim.c -- the simulated runner: a model with a time model, no math.
 *
 * What it models (issue 2, item 4; docs/SIM.md):
 *   - one prompt token per whitespace-separated word of the prompt text;
 *   - a step costs (tokens read this step / prompt_tps) seconds, plus
 *     1 / decode_tps when any slot decodes (all decoding slots advance in
 *     parallel, as a batched forward does); the engine sleeps on its clock
 *     until the step's end, so a manual clock just jumps;
 *   - the k-th generated token is the word "tokk"; after 'tokens' words it
 *     emits end of generation (unless the request set ignore_eos), so a
 *     default completion ends with finish_reason "stop";
 *   - load takes load_seconds on the clock, reported as progress;
 *   - a KV copy between slots (kv_copy, prefix sharing) costs 1/100 of a
 *     read per copied token, added to the next forward's time.
 *   - a scored READ (prompt logprobs) gets made-up scores (sim_score).
 *   - an embedding READ (seq 'embd') gets a made-up vector of ST_SIM_EMBD
 *     floats, a function of its last token and that token's position
 *     (st_runner_sim_embd), so a prompt gives the same vector however it
 *     was read (chunks, a cached prefix).
 *
 * It lives in the engine module, not in backend/sim as docs/design/ARCHITECTURE.md
 * first drew it: the sim replaces the whole step and needs the engine's
 * batch types, and backend must not depend on engine.
 *
 * Token ids: ST_SIM_EOG = 0; word "tokk" (k < 2^24) = ST_SIM_GEN_BASE + k;
 * any other word = 1 + fnv1a(word) mod (ST_SIM_GEN_BASE - 1). The piece of
 * a generated word is "tok1" for the first and " tokk" after it, so the
 * stream reads "tok1 tok2 tok3".
 *
 * With a reply text (--sim-reply, sim.reply, model path "reply:TEXT") the
 * k-th generated token is the k-th piece of that text instead: pieces of
 * 1, 2, ..., 7, 1, 2, ... bytes, widened so no UTF-8 character is cut, so
 * a stream splits markers like "<tool_call>" across tokens; after the last
 * piece comes end of generation.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "runner/runner_sim.h"
#include "strata/engine.h"

struct sim_runner {
    struct st_runner base;          /* must be first */
    struct st_sim_config cfg;
    char fail[200];                 /* non-empty: every load fails with this reason */
    char *reply;                    /* owned; NULL: the tokN words */
    size_t *cuts;                   /* owned; piece k = reply[cuts[k] .. cuts[k + 1]) */
    int32_t n_pieces;
    int64_t copied;                 /* KV tokens copied since the last forward (kv_copy) */
};

/* A copied token costs this fraction of a read token (prefix sharing,
 * docs/BATCHING.md "Prefix reuse"): bytes of KV moved on the device
 * against a forward over the token. */
#define SIM_COPY_COST (1.0 / 100.0)

static const int32_t sim_eog_list[1] = { ST_SIM_EOG };

static void sim_free(struct st_runner *r)
{
    struct sim_runner *s = (struct sim_runner *)r;
    free(s->reply);
    free(s->cuts);
    free(r);
}

/* The reply's pieces: 1..7 bytes in turn, never ending inside a character. */
static enum st_status set_reply(struct sim_runner *s, const char *text, struct st_err *err)
{
    size_t len = strlen(text), n = 0;
    free(s->reply);
    free(s->cuts);
    s->n_pieces = 0;
    s->reply = strdup(text);
    s->cuts = malloc((len + 1) * sizeof(*s->cuts));
    if (!s->reply || !s->cuts)
        return st_err_set(err, ST_ERR_NOMEM, "sim: no memory for a reply of %zu bytes", len);
    if (len >= (size_t)ST_SIM_GEN_BASE - 2)
        return st_err_set(err, ST_ERR_BAD_CONFIG, "sim: a reply of %zu bytes is too long", len);
    for (size_t at = 0; at < len; n++) {
        s->cuts[n] = at;
        at = ST_MIN(len, at + 1 + n % 7);
        while (at < len && ((unsigned char)s->reply[at] & 0xC0) == 0x80)
            at++;
    }
    s->cuts[n] = len;
    s->n_pieces = (int32_t)n;
    return ST_OK;
}

enum st_status st_runner_sim_set_reply(struct st_runner *r, const char *text, struct st_err *err)
{
    return set_reply((struct sim_runner *)r, text, err);
}

static enum st_status sim_load(struct st_runner *r, const struct st_clock *clock,
                               st_runner_progress_fn *progress, void *ctx, struct st_err *err)
{
    const struct sim_runner *s = (const struct sim_runner *)r;
    int64_t start = st_clock_now(clock);
    int64_t total = (int64_t)(s->cfg.load_seconds * (double)ST_NS_PER_SEC);
    /* Ten progress reports over the load time, as a real loader reports per
     * layer (a failing load fails at its end, like a truncated file). */
    for (int i = 1; i <= 10 && total > 0; i++) {
        clock->sleep_until(clock, start + total * i / 10);
        if (progress)
            progress(ctx, i / 10.0);
    }
    if (total <= 0 && progress)
        progress(ctx, 1.0);
    if (s->fail[0])
        return st_err_set(err, ST_ERR_IO, "%s", s->fail);
    return ST_OK;
}

static void sim_unload(struct st_runner *r) { (void)r; }

static int32_t sim_n_vocab(const struct st_runner *r)
{
    (void)r;
    return ST_SIM_GEN_BASE * 2;
}

static int32_t word_id(const char *w, size_t n)
{
    if (n > 3 && n < 12 && memcmp(w, "tok", 3) == 0) {
        int64_t k = 0;
        size_t i = 3;
        while (i < n && isdigit((unsigned char)w[i]))
            k = k * 10 + (w[i++] - '0');
        if (i == n && k > 0 && k < ST_SIM_GEN_BASE)
            return ST_SIM_GEN_BASE + (int32_t)k;
    }
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)w[i]) * 16777619u;
    int32_t id = 1 + (int32_t)(h % (uint32_t)(ST_SIM_GEN_BASE - 1));
    return id >= ST_SIM_FIM_BASE ? id - 6 : id;   /* the FIM ids are never a word */
}

/* All six FIM tokens (runner.h): the sim serves /infill like Qwen2.5-Coder. */
static void sim_fim_ids(const struct st_runner *r, struct st_fim_ids *out)
{
    (void)r;
    *out = (struct st_fim_ids){ ST_SIM_FIM_BASE, ST_SIM_FIM_BASE + 1, ST_SIM_FIM_BASE + 2,
                                ST_SIM_FIM_BASE + 3, ST_SIM_FIM_BASE + 4, ST_SIM_FIM_BASE + 5 };
}

static enum st_status sim_tokenize(const struct st_runner *r, const char *text, size_t len,
                                   bool add_special, bool parse_special, int32_t **ids,
                                   size_t *n_ids, struct st_err *err)
{
    (void)r; (void)add_special; (void)parse_special;
    size_t words = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isspace((unsigned char)text[i]) && (i == 0 || isspace((unsigned char)text[i - 1])))
            words++;
    }
    *ids = NULL;
    *n_ids = 0;
    if (words == 0)
        return ST_OK;
    int32_t *out = malloc(words * sizeof(*out));
    if (!out)
        return st_err_set(err, ST_ERR_NOMEM, "sim: no memory for %zu prompt tokens", words);
    size_t n = 0, i = 0;
    while (i < len) {
        while (i < len && isspace((unsigned char)text[i]))
            i++;
        size_t start = i;
        while (i < len && !isspace((unsigned char)text[i]))
            i++;
        if (i > start)
            out[n++] = word_id(text + start, i - start);
    }
    *ids = out;
    *n_ids = n;
    return ST_OK;
}

static size_t sim_token_piece(const struct st_runner *r, int32_t token, char *buf, size_t cap)
{
    const struct sim_runner *s = (const struct sim_runner *)r;
    char tmp[32];
    int n;
    int64_t k = (int64_t)token - ST_SIM_GEN_BASE;
    if (s->reply && k >= 1 && k <= s->n_pieces) {
        size_t len = s->cuts[k] - s->cuts[k - 1];
        memcpy(buf, s->reply + s->cuts[k - 1], len < cap ? len : cap);
        return len;
    }
    if (token == ST_SIM_EOG)
        n = 0;
    else if (token == ST_SIM_GEN_BASE + 1)
        n = snprintf(tmp, sizeof(tmp), "tok1");
    else if (token > ST_SIM_GEN_BASE)
        n = snprintf(tmp, sizeof(tmp), " tok%" PRId32, token - ST_SIM_GEN_BASE);
    else
        n = snprintf(tmp, sizeof(tmp), " tok%" PRId32, token);
    size_t len = n > 0 ? (size_t)n : 0;
    memcpy(buf, tmp, len < cap ? len : cap);
    return len;
}

/* "tokN" words joined by single spaces; end of generation shows nothing. */
static enum st_status sim_detokenize(const struct st_runner *r, const int32_t *ids, size_t n_ids,
                                     char **text, struct st_err *err)
{
    struct st_buf b;
    st_buf_init(&b);
    enum st_status rc = st_buf_append(&b, "", 0);
    for (size_t i = 0; i < n_ids && rc == ST_OK; i++) {
        if (ids[i] == ST_SIM_EOG)
            continue;
        int32_t k = ids[i] > ST_SIM_GEN_BASE ? ids[i] - ST_SIM_GEN_BASE : ids[i];
        rc = st_buf_printf(&b, "%stok%" PRId32, b.len ? " " : "", k);
    }
    (void)r;
    if (rc != ST_OK) {
        st_buf_fini(&b);
        return st_err_set(err, rc, "sim: no memory to detokenize %zu tokens", n_ids);
    }
    *text = st_buf_steal(&b);
    return ST_OK;
}

static bool sim_is_eog(const struct st_runner *r, int32_t token)
{
    (void)r;
    return token == ST_SIM_EOG;
}

static size_t sim_eog_ids(const struct st_runner *r, const int32_t **ids)
{
    (void)r;
    *ids = sim_eog_list;
    return 1;
}

/* Append the text of one message's "content": a string, or an array of
 * parts whose "text" members count (images and the like carry no words). */
static enum st_status append_content(struct st_buf *b, const cJSON *content)
{
    enum st_status rc = ST_OK;
    if (cJSON_IsString(content)) {
        if (b->len)
            rc = st_buf_append(b, " ", 1);
        if (rc == ST_OK)
            rc = st_buf_append(b, content->valuestring, strlen(content->valuestring));
        return rc;
    }
    const cJSON *part;
    cJSON_ArrayForEach(part, content) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (rc == ST_OK && cJSON_IsString(t))
            rc = append_content(b, t);
    }
    return rc;
}

/* The sim's chat template: every message's content, joined by a space. */
static enum st_status sim_apply_template(const struct st_runner *r,
                                         const struct st_chat_request *req,
                                         enum st_chat_ending ending, char **prompt,
                                         struct st_err *err)
{
    (void)r; (void)ending;
    const cJSON *root = req->messages;
    if (!cJSON_IsArray(root))
        return st_err_set(err, ST_ERR_INVALID, "'messages' must be a JSON array");
    struct st_buf b;
    st_buf_init(&b);
    enum st_status rc = st_buf_append(&b, "", 0);
    const cJSON *msg;
    cJSON_ArrayForEach(msg, root) {
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(msg, "content");
        if (rc == ST_OK && content)
            rc = append_content(&b, content);
    }
    if (rc != ST_OK) {
        st_buf_fini(&b);
        return st_err_set(err, rc, "sim: no memory to render the chat");
    }
    *prompt = st_buf_steal(&b);
    return ST_OK;
}

/* The forced next token of a sequence: word n_generated + 1, or the end. */
static int32_t next_word(const struct sim_runner *s, const struct st_runner_seq *q)
{
    int64_t k = q->n_generated + 1;
    if (!q->ignore_eos && k > (s->reply ? s->n_pieces : s->cfg.tokens))
        return ST_SIM_EOG;
    if (k >= ST_SIM_GEN_BASE - 1)
        return ST_SIM_EOG;   /* beyond the id space: end rather than wrap */
    return ST_SIM_GEN_BASE + (int32_t)k;
}

/* A scored row (docs/SIM.md "Prompt logprobs"): the sim's made-up
 * distribution ranks the generated words tok1, tok2, ... first, word k at
 * logprob -0.5 k (rank k); any other token x comes after word m + 1, m =
 * x mod 8: logprob -0.75 - 0.5 m, rank m + 2. Deterministic, so tests can
 * check every number without a model. */
static void sim_score(int32_t next, int32_t n_top, struct st_runner_score *out)
{
    int64_t k = (int64_t)next - ST_SIM_GEN_BASE;
    if (k >= 1) {
        out->logprob = (float)(-0.5 * (double)k);
        out->rank = (int32_t)ST_MIN(k, (int64_t)INT32_MAX);
    } else {
        int32_t m = next % 8;
        out->logprob = (float)(-0.75 - 0.5 * m);
        out->rank = m + 2;
    }
    out->n_top = ST_MAX(0, ST_MIN(n_top, ST_RUNNER_SCORE_TOP));
    for (int32_t i = 0; i < out->n_top; i++) {
        out->top_id[i] = ST_SIM_GEN_BASE + 1 + i;
        out->top_lp[i] = (float)(-0.5 * (i + 1));
    }
}

static void sim_score_rows(const struct st_runner_seq *q)
{
    for (int64_t j = 0; j < q->n_tokens; j++) {
        int32_t next = j + 1 < q->n_tokens ? q->tokens[j + 1] : q->score_next;
        if (next >= 0)
            sim_score(next, q->score_top, &q->scores[j]);
    }
}

void st_runner_sim_embd(int32_t token, int64_t pos, float *out)
{
    uint64_t x = ((uint64_t)(uint32_t)token << 32) ^ (uint64_t)pos ^ 0x9e3779b97f4a7c15u;
    for (int32_t i = 0; i < ST_SIM_EMBD; i++) {
        /* splitmix64: a value in [-1, 1) per entry */
        uint64_t z = (x += 0x9e3779b97f4a7c15u);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        z ^= z >> 31;
        out[i] = (float)((double)(z >> 11) / (double)(UINT64_C(1) << 52) - 1.0);
    }
}

static int32_t sim_n_embd(const struct st_runner *r)
{
    (void)r;
    return ST_SIM_EMBD;
}

static enum st_status sim_forward(struct st_runner *r, const struct st_runner_batch *batch,
                                  struct st_runner_out *out, struct st_err *err)
{
    struct sim_runner *s = (struct sim_runner *)r;
    int64_t read = 0;
    bool decodes = false;
    (void)err;
    for (int32_t i = 0; i < batch->n_seqs; i++) {
        const struct st_runner_seq *q = &batch->seqs[i];
        if (q->kind == ST_SEQ_READ)
            read += q->n_tokens;
        else
            decodes = true;
        if (q->score)
            sim_score_rows(q);
        if (q->embd && q->sample)
            st_runner_sim_embd(q->tokens[q->n_tokens - 1], q->pos + q->n_tokens - 1, q->embd);
        if (q->sample) {
            out->rows[i].logits = NULL;
            out->rows[i].token = next_word(s, q);
            out->rows[i].drawn = false;
        }
    }
    double seconds = 0.0;
    if (read > 0 && s->cfg.prompt_tps > 0)
        seconds += (double)read / s->cfg.prompt_tps;
    if (decodes && s->cfg.decode_tps > 0)
        seconds += 1.0 / s->cfg.decode_tps;
    if (s->copied > 0 && s->cfg.prompt_tps > 0)
        seconds += (double)s->copied * SIM_COPY_COST / s->cfg.prompt_tps;
    s->copied = 0;
    out->busy_ns = (int64_t)(seconds * (double)ST_NS_PER_SEC + 0.5);
    return ST_OK;
}

static void sim_kv_truncate(struct st_runner *r, int32_t slot, int64_t n_tokens)
{
    /* The sim keeps no KV: the engine tracks positions itself. */
    (void)r; (void)slot; (void)n_tokens;
}

static enum st_status sim_kv_copy(struct st_runner *r, int32_t src, int32_t dst, int64_t from,
                                  int64_t to, struct st_err *err)
{
    /* No KV to move: the engine tracks positions; the copy only costs time
     * (charged to the next forward, the step it happens before). */
    struct sim_runner *s = (struct sim_runner *)r;
    if (src < 0 || dst < 0 || src >= r->n_slots || dst >= r->n_slots || src == dst ||
        from < 0 || to < from)
        return st_err_set(err, ST_ERR_INTERNAL, "sim: kv copy slot %d -> %d [%lld, %lld)",
                          (int)src, (int)dst, (long long)from, (long long)to);
    s->copied += to - from;
    return ST_OK;
}

static const struct st_runner_ops sim_ops = {
    .name = "sim",
    .free = sim_free,
    .load = sim_load,
    .unload = sim_unload,
    .n_vocab = sim_n_vocab,
    .n_embd = sim_n_embd,
    .tokenize = sim_tokenize,
    .detokenize = sim_detokenize,
    .token_piece = sim_token_piece,
    .is_eog = sim_is_eog,
    .eog_ids = sim_eog_ids,
    .fim_ids = sim_fim_ids,
    .apply_template = sim_apply_template,
    .forward = sim_forward,
    .kv_truncate = sim_kv_truncate,
    .kv_copy = sim_kv_copy,
};

enum st_status st_runner_sim_new(const struct st_sim_config *cfg, int32_t n_slots, int64_t n_ctx,
                                 struct st_runner **out, struct st_err *err)
{
    *out = NULL;
    if (cfg->prompt_tps <= 0 || cfg->decode_tps <= 0 || cfg->load_seconds < 0 ||
        cfg->tokens < 0)
        return st_err_set(err, ST_ERR_BAD_CONFIG,
                          "sim: prompt_tps and decode_tps must be > 0, load_seconds and tokens "
                          ">= 0 (got %g, %g, %g, %d)",
                          cfg->prompt_tps, cfg->decode_tps, cfg->load_seconds, (int)cfg->tokens);
    struct sim_runner *s = calloc(1, sizeof(*s));
    if (!s)
        return st_err_set(err, ST_ERR_NOMEM, "sim: no memory for the runner");
    s->base.ops = &sim_ops;
    s->base.n_slots = n_slots;
    s->base.n_ctx = n_ctx;
    s->cfg = *cfg;
    s->cfg.reply = NULL;            /* the pool's; this runner keeps its own copy */
    if (cfg->reply) {
        enum st_status rc = set_reply(s, cfg->reply, err);
        if (rc != ST_OK) {
            sim_free(&s->base);
            return rc;
        }
    }
    *out = &s->base;
    return ST_OK;
}

void st_runner_sim_fail_loads(struct st_runner *r, const char *reason)
{
    struct sim_runner *s = (struct sim_runner *)r;
    snprintf(s->fail, sizeof(s->fail), "%s", reason && reason[0] ? reason : "load failed");
}

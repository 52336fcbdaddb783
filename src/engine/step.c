/* step.c -- one engine step (docs/design/ARCHITECTURE.md "Engine step", docs/BATCHING.md).
 *
 *   1. slots whose request was cancelled are freed (the step boundary is
 *      where a cancel takes effect);
 *   2. every free slot asks the scheduler for the best waiting request;
 *   3. the scheduler names the lines holder (it decides give-way there);
 *   4. the holder first copies what another slot holds of its prompt
 *      (prefix.c, st_engine_prefix_pull), then
 *      batch = the holder's next chunk (<= ubatch tokens) + one token per
 *      decoding slot; forward; the clock sleeps until the step's end (the
 *      sim's time model; a real runner's forward took the time itself);
 *   5. the holder's progress goes to the scheduler; when its prompt is fully
 *      read, its first token is sampled from the last prompt row in this
 *      same step; each decoding slot gets one token; tokens of a step are
 *      emitted at its end;
 *      an embedding request (embed.c) ends there with its vector instead;
 *   6. finished requests (end of generation, stop string, max_tokens,
 *      context full) get END, leave the scheduler, free their slot, and the
 *      engine drops its reference;
 *   7. an idle engine whose model's ttl has passed unloads it (swap.c).
 * With --batch-mtp or --spec ngram (mtp.c) step 4 first lets each
 * decoding slot draft tokens (the model's MTP layer, or what followed the
 * last n tokens earlier in its own history); its row becomes [last token,
 * drafts] with logits at every row, and step 5 keeps the drafts the
 * model's own samples confirm (take_verified), then cuts the rest from the
 * caches.
 * A request the scheduler hands over with job->swapped makes the engine
 * change models first (swap.c); back-offs that have passed are lifted at
 * the start of each step.
 *
 * Thread: the engine's own thread (or the test thread via
 * st_engine_pool_step); nothing here takes a lock across the forward.
 */
#include <stdio.h>
#include <string.h>

#include "engine/step.h"
#include "engine/kv_pool.h"
#include "strata/log.h"
#include "strata/mtp.h"

static int64_t now_ns(const struct st_engine *e)
{
    return st_clock_now(e->pool->clock);
}

/* The runner's vocabulary as the sampler's JSON mask reads it. */
static size_t runner_piece(const void *ctx, int32_t token, char *buf, size_t cap)
{
    return st_runner_token_piece(ctx, token, buf, cap);
}

static bool runner_eog(const void *ctx, int32_t token)
{
    return st_runner_is_eog(ctx, token);
}

/* Give slot 'sl' to 'req' (the engine's reference moves into the slot).
 * False when the request cannot start (its stop strings could not be
 * copied): it has then been ended with an error. */
static bool bind_slot(struct st_engine *e, struct st_engine_slot *sl, struct st_request *req)
{
    ST_ASSERT(req->job.engine == e->index && req->job.slot == sl->index);
    sl->req = req;
    sl->n_past = 0;
    sl->n_generated = 0;
    sl->decoding = false;
    sl->progress_begun = false;
    sl->last_token_ns = 0;
    sl->kv_held = req->n_tokens;   /* (unified KV pool) its prompt's room, kv_pool.c */
    atomic_fetch_add(&e->busy, 1);
    st_engine_prefix_bind(e, sl, req);   /* n_past = the cached prefix it keeps */
    st_sampler_reset(&sl->sampler, &req->params);
    st_engine_spec_reset(e, sl);   /* (drafts) estimates; the n-gram index */
    st_detok_init(&sl->detok, NULL, false);
    /* penalties: the repeat window starts with the prompt's last tokens */
    st_sampler_start(&sl->sampler, e->runner->n_ctx, req->tokens, req->n_tokens);

    struct st_str stops[ST_MAX_STOP];
    int32_t n = ST_MIN(ST_MAX(req->params.n_stop, 0), ST_MAX_STOP);
    for (int32_t i = 0; i < n; i++)
        stops[i] = st_str_c(req->params.stop[i]);
    struct st_err err = { 0 };
    if (st_stop_init(&sl->stop, stops, n, &err) != ST_OK) {
        st_engine_end_slot(e, sl, ST_FINISH_ERROR, err.code, err.msg, ST_OUTCOME_FAILED);
        return false;
    }
    sl->stop_live = true;
    if (st_engine_prompt_wanted(req) && st_engine_prompt_start(e, sl) != ST_OK) {
        st_engine_end_slot(e, sl, ST_FINISH_ERROR, ST_ERR_NOMEM,
                           "no memory for the prompt's logprobs", ST_OUTCOME_FAILED);
        return false;
    }
    if (req->params.embed && st_engine_embed_start(e, sl, &err) != ST_OK) {
        st_engine_end_slot(e, sl, ST_FINISH_ERROR, err.code, err.msg, ST_OUTCOME_FAILED);
        return false;
    }
    return true;
}

/* Free slots go to the best waiting requests. Only the first n_active
 * slots are the loaded model's; an empty engine offers slot 0 and learns
 * the next model's slot count from the swap. Returns true if any came in
 * (or a swap was tried). */
static bool admit_free_slots(struct st_engine *e)
{
    bool any = false;
    for (int32_t i = 0; i < e->n_slots; i++) {
        struct st_engine_slot *sl = &e->slots[i];
        if (e->model >= 0 && i >= e->n_active)
            break;
        if (sl->req)
            continue;
        /* prefix.c puts the job in the free slot caching most of its prompt */
        struct st_sched_job *job = st_engine_prefix_admit(e, i, st_kv_pool_fits);
        if (!job)
            break;   /* nobody waits that this engine can serve */
        struct st_request *req = ST_CONTAINER_OF(job, struct st_request, job);
        any = true;
        if (job->swapped && !st_engine_swap(e, req)) {
            i--;   /* the load failed and ended req: slot i is free again */
            continue;
        }
        int32_t to = job->slot;   /* read first: a failed bind ends (frees) req */
        st_kv_pool_admit(e, to, req);   /* (unified KV pool) idle caches make room */
        (void)bind_slot(e, &e->slots[to], req);
        if (to != i)
            i--;   /* it went to another slot: slot i is still free */
    }
    return any;
}

static bool drop_cancelled(struct st_engine *e)
{
    bool any = false;
    for (int32_t i = 0; i < e->n_slots; i++) {
        struct st_engine_slot *sl = &e->slots[i];
        if (sl->req && atomic_load(&sl->req->cancelled)) {
            st_engine_end_slot(e, sl, ST_FINISH_CANCELLED, ST_OK, NULL, ST_OUTCOME_CANCELLED);
            any = true;
        }
    }
    return any;
}

/* The slot's next token may be drawn on the backend (runner.h
 * backend_draw): it needs no end-of-generation ban (ignore_eos) and
 * nothing but the draw chain; q->draw then says how. */
static bool backend_draw(struct st_engine_slot *sl, struct st_runner_seq *q)
{
    return !sl->req->params.ignore_eos && st_sampler_backend_draw(&sl->sampler, &q->draw);
}

/* The holder's chunk first, then one row per decoding slot. */
static int32_t build_batch(struct st_engine *e, struct st_sched_job *holder)
{
    int32_t n = 0;
    if (holder) {
        struct st_engine_slot *sl = &e->slots[holder->slot];
        struct st_request *req = sl->req;
        ST_ASSERT(req && &req->job == holder && !sl->decoding);
        int64_t left = req->n_tokens - sl->n_past;
        int64_t chunk = ST_MIN(left, (int64_t)e->pool->cfg.ubatch);
        chunk = st_engine_prefix_chunk(e, sl, chunk, left);   /* a state checkpoint's tail */
        ST_ASSERT(chunk > 0);
        if (req->params.progress && !sl->progress_begun)
            st_engine_prompt_progress(sl);   /* before anything is read */
        e->seqs[n++] = (struct st_runner_seq){
            .kind = ST_SEQ_READ, .slot = sl->index, .tokens = req->tokens + sl->n_past,
            .n_tokens = chunk, .pos = sl->n_past, .sample = chunk == left,
            .ignore_eos = req->params.ignore_eos, .n_generated = 0,
        };
        struct st_runner_seq *q = &e->seqs[n - 1];
        st_engine_prompt_score(e, sl, q);   /* prompt logprobs: cut, scored */
        st_engine_embed_seq(e, sl, q);      /* embeddings: the last row's hidden state */
        /* a scored chunk brings its logits back anyway */
        q->backend_draw = q->sample && !q->score && !q->embd && backend_draw(sl, q);
    }
    bool drafts = e->mtp_max > 0 || e->ngram_max > 0;
    if (drafts)
        st_engine_spec_draft(e);   /* sl->mtp.n_draft drafts per decoding slot */
    for (int32_t i = 0; i < e->n_slots; i++) {
        struct st_engine_slot *sl = &e->slots[i];
        if (!sl->req || !sl->decoding)
            continue;
        int32_t k = drafts ? sl->mtp.n_draft : 0;
        if (k > 0) {   /* (unified KV pool) a verify's rows stay within it */
            k = st_kv_pool_drafts(e, sl, k);
            sl->mtp.n_draft = k;
        }
        e->decode_tokens[i] = sl->last_token;
        sl->mtp.tokens[0] = sl->last_token;
        e->seqs[n++] = (struct st_runner_seq){
            .kind = ST_SEQ_DECODE, .slot = i,
            .tokens = k > 0 ? sl->mtp.tokens : &e->decode_tokens[i], .n_tokens = 1 + k,
            .pos = sl->n_past, .sample = true, .ignore_eos = sl->req->params.ignore_eos,
            .n_generated = sl->n_generated, .all_logits = k > 0,
        };
        struct st_runner_seq *q = &e->seqs[n - 1];
        q->backend_draw = k == 0 && backend_draw(sl, q);
    }
    return n;
}

/* Hand sl->out (the text this token makes visible) and the token's own
 * bytes (piece[0..n_piece): raw, for logprobs) to the client. */
static void emit_token(struct st_engine_slot *sl, const struct st_sample_result *res,
                       const char *piece, size_t n_piece)
{
    struct st_request *req = sl->req;
    struct st_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.kind = ST_EVENT_TOKEN;
    ev.text = sl->out.data ? sl->out.data : "";   /* NUL-terminated */
    ev.text_len = sl->out.len;
    ev.piece = piece;
    ev.piece_len = n_piece;
    ev.token = res->token;
    ev.logprob = res->logprob;
    ev.top = res->top;
    ev.n_top = res->n_top;
    ev.n_prompt = req->n_tokens;
    ev.n_generated = sl->n_generated;
    ev.n_cached = req->n_cached;
    if (req->emit)
        req->emit(req->emit_ctx, &ev);
}

/* Piece bytes -> complete UTF-8 -> stop matcher -> sl->out. 'last': the
 * stream ends here, so release everything still held. */
static enum st_status text_push(struct st_engine_slot *sl, const char *piece, size_t n,
                                bool last)
{
    st_buf_reset(&sl->utf8);
    st_buf_reset(&sl->out);
    enum st_status rc = st_detok_push_bytes(&sl->detok, piece, n, &sl->utf8);
    if (rc == ST_OK && last)
        rc = st_detok_flush(&sl->detok, &sl->utf8);
    if (rc == ST_OK && sl->utf8.len)
        rc = st_stop_push(&sl->stop, sl->utf8.data, sl->utf8.len, &sl->out);
    if (rc == ST_OK && last)
        rc = st_stop_flush(&sl->stop, &sl->out);
    return rc;
}

/* Sample (or take the forced token) and fill the logprob bytes. */
static enum st_status pick_token(struct st_engine *e, struct st_engine_slot *sl,
                                 const struct st_runner_row *row, struct st_sample_result *res)
{
    int32_t forced;
    /* json_object / json_schema / tool calls: the mask needs every token's
     * bytes, read on the first row with logits (a runner that forces its
     * tokens, the sim, never pays) and kept while the slot serves this
     * model; before a forced token too, whose bytes the mask's state takes */
    enum st_status rc = !row->logits || !st_sampler_masked(&sl->sampler) ? ST_OK
        : st_sampler_json_vocab(&sl->sampler, e->runner, e->model, st_runner_n_vocab(e->runner),
                                runner_piece, runner_eog, e->runner);
    if (rc != ST_OK)
        return rc;
    /* a spent thinking budget closes the block (think_budget.c); not where
     * the runner forces its own tokens (the sim: no logits, nothing drawn) */
    if ((row->logits || row->drawn) && st_sampler_forced(&sl->sampler, &forced)) {
        if (row->drawn)
            st_sampler_drawn(&sl->sampler);
        res->token = forced;
        st_sampler_score(&sl->sampler, row->logits, st_runner_n_vocab(e->runner), res);
    } else if (row->logits) {
        const int32_t *ban = NULL;
        size_t n_ban = sl->req->params.ignore_eos ? st_runner_eog_ids(e->runner, &ban) : 0;
        rc = st_sampler_sample(&sl->sampler, row->logits, st_runner_n_vocab(e->runner), ban,
                               n_ban, res);
        if (rc != ST_OK)
            return rc;
    } else {
        if (row->drawn)
            st_sampler_drawn(&sl->sampler);
        res->token = row->token;
        res->logprob = 0.0f;   /* forced or drawn: certain */
        res->n_top = sl->sampler.top_logprobs > 0 ? 1 : 0;
        if (res->n_top)
            res->top[0] = (struct st_top_logprob){ .token = row->token, .logprob = 0.0f };
    }
    /* every sample is taken (an MTP verify samples its rows in order), so
     * the next row's penalties see this token */
    st_sampler_accept(&sl->sampler, res->token);
    if (st_sampler_budget_on(&sl->sampler)) {
        char piece[ST_SAMPLE_MAX_PIECE];
        size_t len = st_runner_token_piece(e->runner, res->token, piece, sizeof(piece));
        st_sampler_think_accept(&sl->sampler, piece, ST_MIN(len, sizeof(piece)));
    }
    for (int32_t i = 0; i < res->n_top; i++) {
        struct st_top_logprob *t = &res->top[i];
        size_t len = st_runner_token_piece(e->runner, t->token, t->bytes, sizeof(t->bytes));
        t->n_bytes = (int32_t)ST_MIN(len, sizeof(t->bytes));
    }
    return ST_OK;
}

static void note_timing(struct st_engine *e, struct st_engine_slot *sl, bool eog, bool drawn,
                        int64_t t_end)
{
    struct st_request *req = sl->req;
    bool first = req->first_token_ns == 0;
    double seconds, own;   /* own: the read's time, or the time since the last token */
    if (first) {
        req->first_token_ns = t_end;
        seconds = (double)(t_end - req->submit_ns) / (double)ST_NS_PER_SEC;
        own = req->read_start_ns ? (double)(t_end - req->read_start_ns) / (double)ST_NS_PER_SEC
                                 : 0.0;
    } else {
        seconds = own = (double)(t_end - sl->last_token_ns) / (double)ST_NS_PER_SEC;
    }
    sl->last_token_ns = t_end;
    st_pool_count_token(e->pool, req->band, !eog, drawn, first, seconds);
    st_pool_count_times(e->pool, first, own);
}

static void end_completed(struct st_engine *e, struct st_engine_slot *sl, enum st_finish f)
{
    st_engine_end_slot(e, sl, f, ST_OK, NULL, ST_OUTCOME_COMPLETED);
}

/* One new token for slot 'sl' at time t_end: emit it, or end the request. */
static void take_token(struct st_engine *e, struct st_engine_slot *sl,
                       const struct st_runner_row *row, int64_t t_end)
{
    struct st_request *req = sl->req;
    struct st_sample_result res;
    enum st_status rc = pick_token(e, sl, row, &res);
    if (rc != ST_OK) {
        st_engine_end_slot(e, sl, ST_FINISH_ERROR, rc, "sampling failed", ST_OUTCOME_FAILED);
        return;
    }
    bool eog = st_runner_is_eog(e->runner, res.token);
    note_timing(e, sl, eog, row->drawn, t_end);
    if (eog || req->params.max_tokens == 0) {
        /* Text held for a stop string that never came is released with the
         * end-of-generation token (no TOKEN event when there is none). */
        rc = text_push(sl, "", 0, true);
        if (rc == ST_OK && sl->out.len > 0)
            emit_token(sl, &res, "", 0);   /* an end-of-generation token shows no bytes */
        end_completed(e, sl, eog ? ST_FINISH_STOP : ST_FINISH_LENGTH);
        return;
    }
    sl->n_generated++;
    char piece[256];
    size_t len = st_runner_token_piece(e->runner, res.token, piece, sizeof(piece));
    /* the token is fed at n_past next: the slot's context, or (--kv-unified)
     * the shared pool, must have that cell */
    bool length = (req->params.max_tokens > 0 && sl->n_generated >= req->params.max_tokens) ||
                  sl->n_past >= e->runner->n_ctx || !st_kv_pool_grow(e, sl, sl->n_past + 1);
    rc = text_push(sl, piece, ST_MIN(len, sizeof(piece)), length);
    if (rc != ST_OK) {
        st_engine_end_slot(e, sl, ST_FINISH_ERROR, rc, "no memory for the output text",
                           ST_OUTCOME_FAILED);
        return;
    }
    int stop = st_stop_matched(&sl->stop);
    bool matched = stop >= 0;
    if (matched)
        req->stop_index = stop;   /* END names the string (/v1/messages' stop_sequence) */
    emit_token(sl, &res, piece, ST_MIN(len, sizeof(piece)));
    if (matched || length) {
        end_completed(e, sl, matched ? ST_FINISH_STOP : ST_FINISH_LENGTH);
        return;
    }
    st_engine_prefix_push(sl, res.token);   /* it enters the KV at n_past when fed */
    sl->last_token = res.token;
    sl->decoding = true;
}

/* A DECODE that verifies k drafts (docs/design/ENGINE.md 4.3, exact-match acceptance):
 * row i's logits follow [last token, d_1 .. d_i]. Sample row 0 with the
 * request's sampler; while the sample equals the next draft, that draft
 * was the right input and row i+1 is valid: sample it too; the first
 * mismatch (its sample is kept) or the last row (the bonus token) ends it.
 * Each sample goes through take_token, so stop strings, max_tokens and
 * end of generation act exactly as one token at a time. Positions past
 * the last kept row are cut from the caches (the runner's MTP state too).
 * A row without logits (a runner that forces its tokens, the sim) says
 * nothing about the rows after it: only row 0 is taken. */
static void take_verified(struct st_engine *e, struct st_engine_slot *sl,
                          const struct st_runner_seq *q, const struct st_runner_row *row,
                          int64_t t_end)
{
    struct st_request *req = sl->req;
    int32_t k = (int32_t)q->n_tokens - 1, kept = 0;
    size_t nv = (size_t)st_runner_n_vocab(e->runner);
    sl->mtp.drafted += k;   /* before take_token can end the request and report them */
    st_engine_spec_count(e, sl, k, 0, true);   /* so too the pool's (/metrics) */
    for (int32_t i = 0; i <= k; i++) {
        struct st_runner_row one = { .logits = row->logits ? row->logits + i * nv : NULL,
                                     .token = row->token };
        sl->n_past = q->pos + i + 1;
        take_token(e, sl, &one, t_end);
        if (sl->req != req)
            break;   /* the request ended on this token */
        if (i == k || !row->logits || sl->last_token != q->tokens[i + 1])
            break;
        kept++;
        sl->mtp.accepted++;
        st_engine_spec_count(e, sl, 0, 1, false);   /* before the token it lets out */
    }
    if (sl->req == req && sl->n_past < q->pos + q->n_tokens)
        st_runner_kv_truncate(e->runner, sl->index, sl->n_past);
    st_engine_spec_learn(e, sl, k, kept);
}

static void fail_batch(struct st_engine *e, int32_t n, const struct st_err *err)
{
    st_log(ST_LOG_ERROR, "engine", "engine %d: forward failed: %s (%s); failing %d requests",
           (int)e->index, err->msg, st_status_name(err->code), (int)n);
    for (int32_t i = 0; i < n; i++) {
        struct st_engine_slot *sl = &e->slots[e->seqs[i].slot];
        if (sl->req)
            st_engine_end_slot(e, sl, ST_FINISH_ERROR, err->code, err->msg, ST_OUTCOME_FAILED);
    }
}

/* A step of decodes only (no prompt chunk): its rows and time go to the
 * draft cost model (spec_cost.c), from just before the forward to the last
 * token taken, which is the part drafts make longer (the draft call is
 * timed on its own, mtp.c). */
static void note_cost(struct st_engine *e, const struct st_runner_batch *b, bool lean,
                      bool catching, int64_t t_fwd)
{
    int64_t rows = 0;
    if (catching)
        return;   /* the forward also caught the MTP layer up: not a step's price */
    for (int32_t i = 0; i < b->n_seqs; i++) {
        if (b->seqs[i].kind != ST_SEQ_DECODE)
            return;
        rows += b->seqs[i].n_tokens;
    }
    if (e->mtp_max <= 0 && e->ngram_max <= 0)
        return;
    bool full = e->mtp_max > 0 && !lean;
    int32_t r = (int32_t)ST_MIN(rows, (int64_t)INT32_MAX);
    const struct st_mtp_test *hook = &e->pool->mtp_test;
    int64_t ns = hook->step_ns ? hook->step_ns(hook->ctx, r, full) : now_ns(e) - t_fwd;
    st_spec_cost_step(&e->spec.cost, full ? ST_SPEC_FULL : ST_SPEC_LEAN, r, ns);
}

/* The step drafts nothing by choice (mtp.c) and reads no prompt: the MTP
 * upkeep may go. A prompt's rows always get it, so a request's MTP cache
 * holds its whole prompt; only decode positions of such steps are missing
 * when drafting pays again. */
static bool skip_upkeep(const struct st_engine *e, int32_t n)
{
    if (e->mtp_max <= 0 || !e->spec.lean)
        return false;
    for (int32_t i = 0; i < n; i++)
        if (e->seqs[i].kind != ST_SEQ_DECODE || e->seqs[i].n_tokens != 1)
            return false;
    return true;
}

/* Each slot's MTP gap (mtp.h "Catch-up") as this step's forward leaves
 * it: a step without the upkeep adds its rows, one with it clears it (the
 * runner's MTP layer catches the slot up, in this step's draft call or in
 * the forward). Returns whether the forward catches a slot up (one with a
 * gap that made no MTP drafts): its time is then not a step's price. */
static bool note_gaps(struct st_engine *e, int32_t n, bool lean)
{
    bool caught = false;
    for (int32_t i = 0; e->mtp_max > 0 && i < n; i++) {
        struct st_mtp_slot *m = &e->slots[e->seqs[i].slot].mtp;
        caught |= !lean && m->gap > 0 && (m->n_draft == 0 || m->src != ST_SPEC_MTP);
        int64_t g = lean ? (int64_t)m->gap + e->seqs[i].n_tokens : 0;
        m->gap = (int32_t)ST_MIN(g, (int64_t)ST_MTP_KEEP);
    }
    return caught;
}

/* The step's forward pass for the llama-server counters: its rows and the
 * longest sequence it ran (a verify row counts the drafts it fed). */
static void count_step(struct st_engine *e, int32_t n)
{
    int64_t seq_max = 0;
    for (int32_t i = 0; i < n; i++)
        seq_max = ST_MAX(seq_max, (int64_t)e->seqs[i].pos + e->seqs[i].n_tokens);
    st_pool_count_step(e->pool, n, seq_max);
}

static void run_batch(struct st_engine *e, int32_t n, struct st_sched_job *holder, int64_t t0)
{
    bool lean = skip_upkeep(e, n);
    for (int32_t i = 0; i < n; i++)
        e->seqs[i].no_mtp_upkeep = lean;
    bool catching = note_gaps(e, n, lean);
    struct st_runner_batch batch = { .seqs = e->seqs, .n_seqs = n };
    struct st_runner_out out = { .rows = e->rows, .busy_ns = 0 };
    struct st_err err = { 0 };
    int64_t t_fwd = now_ns(e);
    enum st_status rc = st_runner_forward(e->runner, &batch, &out, &err);
    if (rc != ST_OK) {
        if (err.code == ST_OK)
            st_err_set(&err, rc, "%s", st_status_msg(rc));
        fail_batch(e, n, &err);
        return;
    }
    if (out.busy_ns > 0)   /* the sim's time; its step began at t0 */
        e->pool->clock->sleep_until(e->pool->clock, t0 + out.busy_ns);
    int64_t t_end = now_ns(e);
    count_step(e, n);   /* before any token: the last one can end a request a client then scrapes */
    for (int32_t i = 0; i < n; i++) {
        const struct st_runner_seq *q = &e->seqs[i];
        struct st_engine_slot *sl = &e->slots[q->slot];
        if (q->kind == ST_SEQ_READ && sl->req && sl->req->read_start_ns == 0)
            sl->req->read_start_ns = t0;
        if (q->all_logits) {
            take_verified(e, sl, q, &e->rows[i], t_end);
            continue;
        }
        sl->n_past += q->n_tokens;
        if (q->kind == ST_SEQ_READ) {
            st_sched_read_progress(e->pool->sched, holder, q->n_tokens);
            st_pool_count_read(e->pool, q->n_tokens);
            if (st_engine_prompt_wanted(sl->req))
                st_engine_prompt_emit(e, sl, q);   /* echo: before the first token */
            if (sl->req->params.progress)
                st_engine_prompt_progress(sl);
        }
        if (q->sample && q->embd)
            st_engine_embed_finish(e, sl, t_end);   /* instead of a first token */
        else if (q->sample)
            take_token(e, sl, &e->rows[i], t_end);
    }
    for (int32_t i = 0; i < n; i++) {   /* (KV events) blocks the step completed */
        struct st_engine_slot *sl = &e->slots[e->seqs[i].slot];
        if (sl->req)
            st_kv_blocks_sync(e, sl, ST_MIN(sl->cache.n_ids, sl->n_past));
    }
    note_cost(e, &batch, lean, catching, t_fwd);
}

bool st_engine_step(struct st_engine *e)
{
    st_pool_engine_lift(e);
    bool did = drop_cancelled(e);
    did |= admit_free_slots(e);
    did |= drop_cancelled(e);   /* admitted, but the client left while it waited */
    int64_t t0 = now_ns(e);     /* after admit: a swap's load is not the step's time */
    struct st_sched_job *holder = st_sched_lines(e->pool->sched, e->index);
    if (holder)   /* another slot may hold more of its prompt by now (prefix.c) */
        st_engine_prefix_pull(e, &e->slots[holder->slot]);
    int32_t n = build_batch(e, holder);
    if (n > 0)
        run_batch(e, n, holder, t0);
    if (n == 0 && !did)
        did = st_engine_ttl_check(e);
    if (n > 0 || did)
        st_engine_update_views(e);
    return n > 0 || did;
}


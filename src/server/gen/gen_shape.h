/* gen/gen_shape.h -- how a generation's output is written for the API the
 * request came in through: one struct st_gen_shape per API variant, handed
 * to st_gen_start by the endpoint's handler (gen.h). The generation itself
 * (gen_emit.c: engine events in; gen.c: the body out; gen_reply.c: chat
 * replies parsed) is the same for every API and never asks which one it
 * serves: it calls these hooks.
 *
 *   shape                         folder / file               stream, body
 *   chat.completion               openai/oai_shape.c          chunks + [DONE], one body
 *   text_completion               openai/oai_shape.c          chunks + [DONE], one body
 *   embeddings                    openai/oai_shape.c          (no stream), the list
 *   llama-server /completion      llama/llama_shape.c         objects, no [DONE]; results
 *   /v1/responses                 responses/responses_reply.c Responses events; the object
 *   /v1/messages                  anthropic/messages_reply.c  Anthropic events; the message
 *
 * A new API variant is one such file (a shape built from the wire
 * renderers it needs) and its handler passing it to st_gen_start.
 *
 * Order of the stream hooks for one choice:
 *   stream_progress*   (return_progress: while the prompt is read)
 *   stream_prompt?     (echo: the whole prompt, before the first token)
 *   stream_begin       once, before the first token's output (or before a
 *                      normal end with no token)
 *   (stream_text | stream_delta*)*   per token: stream_text when the choice
 *                      has no reply parser, else the parser's pieces
 *   stream_end         finished, failed after the stream began, or cut
 *                      (not for a cancelled choice)
 * and stream_close once after the last choice's end. Every hook runs under
 * call->lock, renders onto g->out and marks g->broken when out of memory.
 */
#ifndef STRATA_SERVER_GEN_GEN_SHAPE_H
#define STRATA_SERVER_GEN_GEN_SHAPE_H

#include "server/gen/oai_response.h"

struct st_gen;
struct st_gen_choice;
struct st_event;

/* One generated token as the shapes see it. Borrowed. */
struct st_gen_token {
    const struct st_event *ev;        /* the engine's TOKEN event (id, probabilities) */
    const char *text;                 /* its visible text (may be empty: held back) */
    size_t len;
    const struct st_oai_logprob *lp;  /* g->logprobs: its OpenAI logprobs; else NULL */
};

/* Prompt-read progress (return_progress, docs/API.md). */
struct st_gen_progress {
    int64_t total;                    /* prompt tokens */
    int64_t cache;                    /* ... reused from the cache */
    int64_t processed;                /* ... done (cache included) */
    double time_ms;                   /* since the first report of this prompt */
};

struct st_gen_shape {
    const char *id_prefix;            /* g->id = id_prefix + request id */
    const char *messages_param;       /* the body field a prompt error on "messages"
                                       * names ("input"); NULL: "messages" */
    bool verbose;                     /* the body may carry llama-server's "__verbose" */

    /* ---- stream; the optional ones may be NULL (nothing rendered) ---- */
    /* Optional: once per choice before its first output (chat's role chunk). */
    void (*stream_begin)(struct st_gen *g, struct st_gen_choice *ch);
    /* A token of a choice without a reply parser (st_gen_stream_text_delta:
     * as a content delta). Sets ch->produced when it renders something. */
    void (*stream_text)(struct st_gen *g, struct st_gen_choice *ch, const struct st_gen_token *t);
    /* One parsed piece of a chat reply (content, reasoning, a tool call's
     * start or arguments; kind NONE: an empty delta that only carries lp,
     * the token's logprobs, which ride on the token's last piece). Sets
     * ch->produced. */
    void (*stream_delta)(struct st_gen *g, struct st_gen_choice *ch,
                         const struct st_oai_delta *d, const struct st_oai_logprob *lp);
    /* Optional: echo: the whole prompt's text and its legacy logprobs (NULL: not asked). */
    void (*stream_prompt)(struct st_gen *g, struct st_gen_choice *ch, const struct st_buf *text,
                          const struct st_oai_lp_acc *lp);
    /* Optional: return_progress: how far the prompt has been read. */
    void (*stream_progress)(struct st_gen *g, struct st_gen_choice *ch,
                            const struct st_gen_progress *p);
    /* The end of a choice: finished (err NULL; ch->finish STOP or LENGTH),
     * failed after the stream began, or cut at --stream-buffer (err set;
     * g->cut). u: the usage of every choice so far. */
    void (*stream_end)(struct st_gen *g, struct st_gen_choice *ch,
                       const struct st_api_error *err, const struct st_oai_usage *u);
    /* Optional: after the last choice's end (usage chunk, [DONE]). */
    void (*stream_close)(struct st_gen *g);

    /* ---- non-stream ---- */
    /* A token for the body (st_gen_keep_token: its text, and its logprobs
     * when asked); a reply parser has already seen it. */
    void (*keep_token)(struct st_gen *g, struct st_gen_choice *ch, const struct st_gen_token *t);
    /* The whole body of the finished call: c holds its g->n_choices choices
     * in order (text, or the parsed parts), u the usage, reasoning_tokens
     * choice 0's. */
    enum st_status (*body)(struct st_buf *out, const struct st_gen *g,
                           const struct st_oai_choice *c, const struct st_oai_usage *u,
                           int64_t reasoning_tokens);

    void (*free)(void *ctx);          /* frees ctx (and this shape, when ctx holds it);
                                       * NULL: a static shape */
    void *ctx;                        /* the renderer's state */
};

/* Free a shape through its free hook; NULL is a no-op. */
void st_gen_shape_free(const struct st_gen_shape *s);

/* ---- pieces the shapes share (gen_view.c, gen_emit.c) ---- */
/* The id, model and kind every OpenAI chunk and body carries. */
struct st_oai_meta st_gen_meta(const struct st_gen *g);
/* The usage so far (prompt tokens once per prompt, not once per choice). */
struct st_oai_usage st_gen_usage(const struct st_gen *g);
/* A chunk renderer: one JSON object onto out. */
typedef enum st_status st_gen_chunk_fn(struct st_buf *out, const struct st_gen *g,
                                       const struct st_gen_choice *ch, const void *arg);
/* Render one chunk with fn and frame it as an SSE "data:" event onto
 * g->out; nothing once g->broken, which a failure sets. */
void st_gen_put_chunk(struct st_gen *g, const struct st_gen_choice *ch, st_gen_chunk_fn *fn,
                      const void *arg);
/* stream_text for shapes that read tokens as parsed pieces: the text as a
 * content delta (none when it is empty). */
void st_gen_stream_text_delta(struct st_gen *g, struct st_gen_choice *ch,
                              const struct st_gen_token *t);
/* keep_token for most shapes: the raw text (unless a reply parser keeps
 * it and no "__verbose" wants it) and the OpenAI logprobs when asked. */
void st_gen_keep_token(struct st_gen *g, struct st_gen_choice *ch, const struct st_gen_token *t);

#endif /* STRATA_SERVER_GEN_GEN_SHAPE_H */

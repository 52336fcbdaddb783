/* think_block.h -- the optional think block a reasoning model writes
 * before a constrained answer ("<think>" free text "</think>", Mistral
 * "[THINK]" .. "[/THINK]"), validated one byte at a time: shared by the
 * call grammar (call_grammar.h, tool_choice) and the JSON modes
 * (response_format json_object / json_schema, engine json_mask.c;
 * docs/API.md "Reasoning before a constrained answer").
 *
 * The text a think state accepts before it hands over to the document:
 *
 *   OPTIONAL:       [OPEN free CLOSE blanks]       DOC...
 *   OPTIONAL_LEAD:  [lead OPEN free CLOSE blanks]  DOC...
 *   OPEN:           free CLOSE blanks              DOC...   (the prompt opened the block)
 *   NONE:      DOC...
 *
 * 'free' is any bytes up to the first CLOSE (whose first byte occurs in
 * it only there, so a mismatch restarts the match at 0 or 1: no KMP
 * table); 'blanks' at most ST_THINK_MAX_WS of ' ', '\t', '\n', '\r' (the
 * template's "\n\n" after "</think>"); 'lead' at most ST_THINK_MAX_LEAD of
 * them (GLM-4.5 writes "\n<think>"; other families write OPEN first, and
 * a blank there would steer a model that likes blanks into a block).
 * Blanks that OPEN does not follow are the document's: the push that starts the document hands them over with
 * the bytes it held back (st_think_held). Once the document's first byte
 * came, the think state only says "document".
 *
 * A cap (a thinking budget) is the caller's: st_think_force_close makes
 * the free text take nothing but the rest of CLOSE.
 *
 * Storage: caller-owned value of 8 bytes, nothing allocated.
 */
#ifndef STRATA_THINK_BLOCK_H
#define STRATA_THINK_BLOCK_H

#include <stdbool.h>
#include <stdint.h>

#define ST_THINK_MAX_WS 20   /* blanks after CLOSE (ST_JSON_SCHEMA_MAX_WS's cap) */
#define ST_THINK_MAX_LEAD 4  /* blanks before OPEN (2 bits each in st_think_state.lead) */
/* The most bytes a push may hold back: the leading blanks and all of OPEN
 * but its last byte. */
#define ST_THINK_MAX_HELD (ST_THINK_MAX_LEAD + 8)

enum st_think_mode {
    ST_THINK_NONE,          /* the document comes first */
    ST_THINK_OPTIONAL,      /* an optional think block first */
    ST_THINK_OPEN,          /* the reply starts inside the think block */
    ST_THINK_OPTIONAL_LEAD, /* OPTIONAL, after up to ST_THINK_MAX_LEAD blanks (GLM-4.5) */
};

enum st_think_tags {
    ST_THINK_ANGLE,         /* <think> .. </think> (Qwen3, DeepSeek-R1) */
    ST_THINK_SQUARE,        /* [THINK] .. [/THINK] (Magistral 2507) */
    ST_THINK_EITHER,        /* OPTIONAL only: either opening tag, the first byte ('<' or
                             * '[') decides and the block closes with its partner
                             * (Magistral: 2506 writes <think>, 2507 [THINK]); the state's
                             * tags then hold the one written */
};

/* The tags of one spelling (EITHER: the angle ones). */
const char *st_think_open_tag(enum st_think_tags t);
const char *st_think_close_tag(enum st_think_tags t);
/* Seen the first byte b of a think block's opening: the spelling it
 * starts (ANGLE for '<', SQUARE for '['), or 'tags' itself when that is
 * not EITHER; EITHER when b starts neither. */
enum st_think_tags st_think_pick_tags(enum st_think_tags tags, unsigned char b);

/* Free text up to 'close' (NUL-terminated, its first byte in it only
 * once): *pos bytes of it matched so far; b taken. true: close is whole. */
bool st_think_close_step(const char *close, uint32_t *pos, unsigned char b);

struct st_think_state {
    uint8_t  mode;          /* enum st_think_mode */
    uint8_t  tags;          /* enum st_think_tags (EITHER until the opening tag's first
                             * byte came) */
    uint8_t  phase;         /* think_block.c enum tphase */
    uint8_t  ws;            /* blanks after CLOSE; at the start (and in the document
                             * that followed it): blanks before OPEN */
    uint16_t pos;           /* bytes of OPEN (start) or CLOSE (free text) matched */
    uint8_t  forced;        /* only CLOSE's next byte may come */
    uint8_t  lead;          /* the blanks before OPEN: 2 bits each (" \t\n\r"), first lowest */
};

enum st_think_push {
    ST_THINK_TAKEN,         /* the byte is the think block's (or a blank after it) */
    ST_THINK_DOC,           /* the byte is the document's: feed it there, after the
                             * *n_held bytes held back (st_think_held: blanks that
                             * OPEN did not follow, then OPEN's first bytes, e.g. a
                             * '[' that was not "[THINK]" after all) */
    ST_THINK_REFUSED,       /* nothing accepted starts with the text */
};

void st_think_init(struct st_think_state *t, enum st_think_mode mode, enum st_think_tags tags);
/* Append one byte. After ST_THINK_DOC the state is in the document for
 * good (later bytes: ST_THINK_DOC, *n_held 0); after REFUSED it stays so. */
enum st_think_push st_think_push(struct st_think_state *t, unsigned char b, uint32_t *n_held);
/* The bytes the last push held back (its *n_held: nonzero only for the
 * push that started the document), into out[0..ST_THINK_MAX_HELD): the
 * leading blanks, then OPEN's first bytes. Returns how many. */
uint32_t st_think_held(const struct st_think_state *t, char *out);
/* Nothing taken yet (OPTIONAL, before a leading blank or OPEN's first
 * byte). */
bool st_think_at_start(const struct st_think_state *t);
/* The document has begun (every byte goes there). */
bool st_think_in_doc(const struct st_think_state *t);
/* Inside the free text: nothing of CLOSE matched, not forced: every byte
 * but *stop (CLOSE's first byte) is taken and leaves the state as it is. */
bool st_think_free_text(const struct st_think_state *t, unsigned char *stop);
/* Inside the think block's free text (the budget's count runs here). */
bool st_think_thinking(const struct st_think_state *t);
/* After CLOSE, before the document: a blank changes nothing but the
 * count; *ws_left more may come. */
bool st_think_between(const struct st_think_state *t, uint16_t *ws_left);
/* The budget is spent: from now on only the rest of CLOSE (no-op outside
 * the free text). */
void st_think_force_close(struct st_think_state *t);

#endif /* STRATA_THINK_BLOCK_H */

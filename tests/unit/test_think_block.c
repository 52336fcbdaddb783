/* test_think_block.c -- the think block a reasoning model writes before a
 * constrained answer (include/strata/think_block.h), byte by byte: the
 * optional block only at the start (after at most ST_THINK_MAX_LEAD
 * blanks, GLM's "\n<think>"), the closing tag split anywhere and
 * restarted after a near miss, blanks after it capped, the document after
 * it (a json_schema document through the schema validator, as the mask
 * composes them), a '[' that is a JSON array and not "[THINK]", the
 * forced close of a spent budget, and the free-text matcher the call
 * grammar shares.
 */
#include <check.h>
#include <string.h>

#include "strata/json_schema.h"
#include "strata/think_block.h"
#include "support.h"

/* Think state then schema, as json_mask.c composes them: the bytes the
 * think state hands over (after the bytes it held back: leading blanks,
 * tag bytes) go to the document; no blank may open it. Returns false at the first refused byte; *complete:
 * the document is whole. */
static bool feed(enum st_think_mode m, enum st_think_tags tags, const char *schema,
                 const char *text, bool *complete)
{
    struct st_json_schema *sc = NULL;
    ck_assert(st_json_schema_compile(schema, strlen(schema), &sc, NULL) == ST_OK);
    struct st_json_schema_state js;
    st_json_schema_state_init(&js, sc);
    struct st_think_state t;
    st_think_init(&t, m, tags);
    bool ok = true;
    for (size_t i = 0; text[i] && ok; i++) {
        unsigned char b = (unsigned char)text[i];
        uint32_t held = 99;
        enum st_think_push r = st_think_push(&t, b, &held);
        if (r == ST_THINK_REFUSED) {
            ok = false;
        } else if (r == ST_THINK_DOC) {
            ck_assert(st_think_in_doc(&t));
            char hb[ST_THINK_MAX_HELD];
            ck_assert_uint_eq(st_think_held(&t, hb), held);
            bool opening = st_json_schema_empty(&js);
            ok = !(opening && strchr(" \t\r\n", held ? hb[0] : (char)b)) &&
                 st_json_schema_feed(&js, hb, held) && st_json_schema_push(&js, b);
        } else {
            ck_assert_int_eq(held, 0);
            ck_assert(!st_think_in_doc(&t));
        }
    }
    *complete = ok && st_think_in_doc(&t) && st_json_schema_complete(&js);
    st_json_schema_unref(sc);
    return ok;
}

static const char obj[] = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}},"
                          "\"required\":[\"a\"],\"additionalProperties\":false}";
static const char arr[] = "{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}";

START_TEST(test_think_block_optional_then_json)
{
    bool done;
    ck_assert(feed(ST_THINK_OPTIONAL, ST_THINK_ANGLE, obj, "{\"a\":1}", &done) && done);
    ck_assert(feed(ST_THINK_OPTIONAL, ST_THINK_ANGLE, obj,
                   "<think>\nLet me see: a < b, </thinx> </ </think\n</think>\n\n{\"a\":12}",
                   &done) && done);
    /* an empty block, no blanks after it */
    ck_assert(feed(ST_THINK_OPTIONAL, ST_THINK_ANGLE, obj, "<think></think>{\"a\":1}", &done) &&
              done);
    /* still thinking, or between the block and the document: not complete */
    ck_assert(feed(ST_THINK_OPTIONAL, ST_THINK_ANGLE, obj, "<think>{\"a\":1}", &done) && !done);
    ck_assert(feed(ST_THINK_OPTIONAL, ST_THINK_ANGLE, obj, "<think>x</think>\n", &done) && !done);
    /* the block only at the start: not after the document began, not twice */
    ck_assert(!feed(ST_THINK_OPTIONAL, ST_THINK_ANGLE, obj, "{\"a\":1}<think>", &done));
    ck_assert(!feed(ST_THINK_OPTIONAL, ST_THINK_ANGLE, obj, "<think>x</think><think>", &done));
    ck_assert(!feed(ST_THINK_OPTIONAL, ST_THINK_ANGLE, obj, "<thinking>", &done));
    /* no blank opens the document; text after the block must be JSON */
    ck_assert(!feed(ST_THINK_OPTIONAL, ST_THINK_ANGLE, obj, "\n{", &done));
    ck_assert(!feed(ST_THINK_OPTIONAL, ST_THINK_ANGLE, obj, "<think>x</think>Sure: {", &done));
    /* the document's own rules after the block */
    ck_assert(!feed(ST_THINK_OPTIONAL, ST_THINK_ANGLE, obj, "<think></think>{\"b\"", &done));
    /* at most ST_THINK_MAX_WS blanks after the closing tag */
    char text[128] = "<think>x</think>";
    size_t n = strlen(text);
    memset(text + n, '\n', ST_THINK_MAX_WS);
    strcpy(text + n + ST_THINK_MAX_WS, "{\"a\":1}");
    ck_assert(feed(ST_THINK_OPTIONAL, ST_THINK_ANGLE, obj, text, &done) && done);
    memset(text + n, '\n', ST_THINK_MAX_WS + 1);
    strcpy(text + n + ST_THINK_MAX_WS + 1, "{\"a\":1}");
    ck_assert(!feed(ST_THINK_OPTIONAL, ST_THINK_ANGLE, obj, text, &done));
}
END_TEST

START_TEST(test_think_block_none_and_open)
{
    bool done;
    /* none: JSON from the first byte, "<think>" refused */
    ck_assert(!feed(ST_THINK_NONE, ST_THINK_ANGLE, obj, "<", &done));
    ck_assert(feed(ST_THINK_NONE, ST_THINK_ANGLE, obj, "{\"a\":1}", &done) && done);
    /* open: the reply starts inside the block; "<think>" there is text */
    ck_assert(feed(ST_THINK_OPEN, ST_THINK_ANGLE, obj, "{\"a\":1}", &done) && !done);
    ck_assert(feed(ST_THINK_OPEN, ST_THINK_ANGLE, obj, "<think>{\"a\":1}</think>\n\n{\"a\":2}",
                   &done) && done);
    ck_assert(feed(ST_THINK_OPEN, ST_THINK_ANGLE, obj, "</think>{\"a\":2}", &done) && done);
}
END_TEST

/* Mistral's [THINK]: a '[' may also open a JSON array; the held bytes go
 * to the document once it is clear which. */
START_TEST(test_think_block_square_tags)
{
    bool done;
    ck_assert(feed(ST_THINK_OPTIONAL, ST_THINK_SQUARE, arr, "[THINK]x [/THIN [/THINK]\n[1,2]",
                   &done) && done);
    ck_assert(feed(ST_THINK_OPTIONAL, ST_THINK_SQUARE, arr, "[1,2]", &done) && done);
    ck_assert(feed(ST_THINK_OPTIONAL, ST_THINK_SQUARE, arr, "[]", &done) && done);
    ck_assert(!feed(ST_THINK_OPTIONAL, ST_THINK_SQUARE, arr, "[TH1", &done));
    ck_assert(!feed(ST_THINK_OPTIONAL, ST_THINK_SQUARE, obj, "<think>", &done));
    struct st_think_state t;
    uint32_t held = 0;
    st_think_init(&t, ST_THINK_OPTIONAL, ST_THINK_SQUARE);
    ck_assert_int_eq(st_think_push(&t, '[', &held), ST_THINK_TAKEN);
    ck_assert_int_eq(st_think_push(&t, ' ', &held), ST_THINK_DOC);
    ck_assert_int_eq(held, 1);   /* "[ " goes to the document */
}
END_TEST

/* The closing tag split across tokens at every point, and the queries the
 * mask's fast paths use along the way. */
START_TEST(test_think_block_split_close_and_queries)
{
    const char *close = st_think_close_tag(ST_THINK_ANGLE);
    for (size_t cut = 0; cut <= strlen(close); cut++) {
        struct st_think_state t;
        uint32_t held;
        unsigned char stop = 0;
        st_think_init(&t, ST_THINK_OPEN, ST_THINK_ANGLE);
        ck_assert(st_think_thinking(&t) && st_think_free_text(&t, &stop) && stop == '<');
        for (size_t i = 0; i < strlen(close); i++) {
            if (i == cut) {   /* a near miss restarts the match */
                ck_assert_int_eq(st_think_push(&t, 'q', &held), ST_THINK_TAKEN);
                ck_assert(st_think_free_text(&t, &stop));
                for (size_t k = 0; k < i; k++)
                    ck_assert_int_eq(st_think_push(&t, (unsigned char)close[k], &held),
                                     ST_THINK_TAKEN);
            }
            ck_assert(!st_think_between(&t, &(uint16_t){ 0 }));
            ck_assert_int_eq(st_think_push(&t, (unsigned char)close[i], &held), ST_THINK_TAKEN);
            ck_assert(i + 1 == strlen(close) || !st_think_free_text(&t, &stop));
        }
        uint16_t left = 0;
        ck_assert(!st_think_thinking(&t) && st_think_between(&t, &left));
        ck_assert_int_eq(left, ST_THINK_MAX_WS);
        ck_assert_int_eq(st_think_push(&t, '\n', &held), ST_THINK_TAKEN);
        ck_assert(st_think_between(&t, &left) && left == ST_THINK_MAX_WS - 1);
        ck_assert_int_eq(st_think_push(&t, '{', &held), ST_THINK_DOC);
        ck_assert(st_think_in_doc(&t) && !st_think_between(&t, &left));
    }
}
END_TEST

/* A spent budget: only the rest of the closing tag, then as before. */
START_TEST(test_think_block_forced_close)
{
    struct st_think_state t;
    uint32_t held;
    unsigned char stop;
    st_think_init(&t, ST_THINK_OPTIONAL, ST_THINK_ANGLE);
    st_think_force_close(&t);   /* not in the block yet: no-op */
    for (const char *p = "<think>ab</th"; *p; p++)
        ck_assert_int_eq(st_think_push(&t, (unsigned char)*p, &held), ST_THINK_TAKEN);
    st_think_force_close(&t);
    ck_assert(!st_think_free_text(&t, &stop));
    struct st_think_state u = t;
    ck_assert_int_eq(st_think_push(&u, 'x', &held), ST_THINK_REFUSED);
    ck_assert_int_eq(st_think_push(&u, 'i', &held), ST_THINK_REFUSED);   /* sticky */
    for (const char *p = "ink>\n"; *p; p++)
        ck_assert_int_eq(st_think_push(&t, (unsigned char)*p, &held), ST_THINK_TAKEN);
    ck_assert_int_eq(st_think_push(&t, '{', &held), ST_THINK_DOC);
}
END_TEST

/* The matcher the call grammar's think block and xml body use. */
/* Magistral: "<think>" (2506) or "[THINK]" (2507), each closed by its own
 * partner; a '[' that is not "[THINK]" is still a JSON array's. */
START_TEST(test_think_block_either_tags)
{
    bool done;
    ck_assert(feed(ST_THINK_OPTIONAL, ST_THINK_EITHER, obj,
                   "<think>a [/THINK] b</think>\n{\"a\":1}", &done) && done);
    ck_assert(feed(ST_THINK_OPTIONAL, ST_THINK_EITHER, obj,
                   "[THINK]a </think> b[/THINK]{\"a\":1}", &done) && done);
    ck_assert(feed(ST_THINK_OPTIONAL, ST_THINK_EITHER, arr, "[THINK]x[/THINK] [1]", &done) &&
              done);
    ck_assert(feed(ST_THINK_OPTIONAL, ST_THINK_EITHER, arr, "[1,2]", &done) && done);
    ck_assert(feed(ST_THINK_OPTIONAL, ST_THINK_EITHER, obj, "{\"a\":2}", &done) && done);
    ck_assert(!feed(ST_THINK_OPTIONAL, ST_THINK_EITHER, obj, "<think>x[/THINK]{", &done) ||
              !done);
    ck_assert(!feed(ST_THINK_OPTIONAL, ST_THINK_ANGLE, obj, "[THINK]", &done));
    struct st_think_state t;
    uint32_t held;
    st_think_init(&t, ST_THINK_OPTIONAL, ST_THINK_EITHER);
    ck_assert_int_eq(st_think_push(&t, '[', &held), ST_THINK_TAKEN);
    ck_assert_int_eq(t.tags, ST_THINK_SQUARE);
    ck_assert_int_eq(st_think_pick_tags(ST_THINK_EITHER, '<'), ST_THINK_ANGLE);
    ck_assert_int_eq(st_think_pick_tags(ST_THINK_ANGLE, '['), ST_THINK_ANGLE);
}
END_TEST

/* Blanks before the opening tag (OPTIONAL_LEAD: GLM-4.5 writes "\n<think>"):
 * at most ST_THINK_MAX_LEAD; blanks the tag does not follow are the document's,
 * handed over exactly (st_think_held) with the byte that starts it. */
START_TEST(test_think_block_leading_blanks)
{
    bool done;
    ck_assert(feed(ST_THINK_OPTIONAL_LEAD, ST_THINK_ANGLE, obj, "\n<think>x</think>\n\n{\"a\":1}",
                   &done) && done);
    ck_assert(feed(ST_THINK_OPTIONAL_LEAD, ST_THINK_ANGLE, obj, " \t\r\n<think></think>{\"a\":1}",
                   &done) && done);
    ck_assert(feed(ST_THINK_OPTIONAL_LEAD, ST_THINK_EITHER, arr, "\n[THINK]x[/THINK][1]", &done) &&
              done);
    ck_assert(feed(ST_THINK_OPTIONAL_LEAD, ST_THINK_SQUARE, arr, "\n[THINK]x[/THINK][1]", &done) &&
              done);
    /* one blank more than the bound: the document's, and no blank opens JSON */
    ck_assert(feed(ST_THINK_OPTIONAL_LEAD, ST_THINK_ANGLE, obj, "\n\n\n\n<think>", &done) && !done);
    ck_assert(!feed(ST_THINK_OPTIONAL_LEAD, ST_THINK_ANGLE, obj, "\n\n\n\n\n<think>", &done));
    ck_assert(!feed(ST_THINK_OPTIONAL_LEAD, ST_THINK_ANGLE, obj, "\n{\"a\":1}", &done));
    ck_assert(!feed(ST_THINK_OPTIONAL_LEAD, ST_THINK_ANGLE, obj, "\n<think>x</think> <think>", &done));

    /* byte by byte: the blanks taken, then handed to the document exactly */
    static const struct { const char *text, *held; enum st_think_tags tags; } cases[] = {
        { "\n{", "\n", ST_THINK_ANGLE },
        { " \t\r\n\n", " \t\r\n", ST_THINK_ANGLE },   /* the fifth blank starts it */
        { "\n\t<thx", "\n\t<th", ST_THINK_ANGLE },
        { "\r[1", "\r[", ST_THINK_SQUARE },
        { " [T]", " [T", ST_THINK_EITHER },
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        struct st_think_state t;
        uint32_t held = 99;
        char hb[ST_THINK_MAX_HELD];
        size_t n = strlen(cases[c].text);
        st_think_init(&t, ST_THINK_OPTIONAL_LEAD, cases[c].tags);
        ck_assert(st_think_at_start(&t));
        for (size_t i = 0; i + 1 < n; i++) {
            ck_assert_int_eq(st_think_push(&t, (unsigned char)cases[c].text[i], &held),
                             ST_THINK_TAKEN);
            ck_assert(held == 0 && !st_think_at_start(&t) && !st_think_in_doc(&t));
            ck_assert(!st_think_between(&t, &(uint16_t){ 0 }) && !st_think_thinking(&t));
            ck_assert_uint_eq(st_think_held(&t, hb), 0);
        }
        ck_assert_int_eq(st_think_push(&t, (unsigned char)cases[c].text[n - 1], &held),
                         ST_THINK_DOC);
        ck_assert_uint_eq(held, strlen(cases[c].held));
        ck_assert_uint_eq(st_think_held(&t, hb), held);
        ck_assert(memcmp(hb, cases[c].held, held) == 0);
        ck_assert_int_eq(st_think_push(&t, '1', &held), ST_THINK_DOC);   /* held once */
        ck_assert(held == 0 && st_think_held(&t, hb) == 0);
    }
    /* plain OPTIONAL (every family but GLM) takes no blank before the block:
     * the blank is the document's, and no blank opens JSON */
    ck_assert(!feed(ST_THINK_OPTIONAL, ST_THINK_ANGLE, obj, " <think>", &done));
    ck_assert(feed(ST_THINK_OPTIONAL, ST_THINK_ANGLE, obj, "<think>x</think>{\"a\":1}", &done) &&
              done);
    /* not where the block cannot open: none (the document's blank), open (text) */
    struct st_think_state t;
    uint32_t held = 99;
    st_think_init(&t, ST_THINK_NONE, ST_THINK_ANGLE);
    ck_assert_int_eq(st_think_push(&t, '\n', &held), ST_THINK_DOC);
    ck_assert_uint_eq(held, 0);
    st_think_init(&t, ST_THINK_OPEN, ST_THINK_ANGLE);
    ck_assert_int_eq(st_think_push(&t, '\n', &held), ST_THINK_TAKEN);
    ck_assert(st_think_thinking(&t));
}
END_TEST

START_TEST(test_think_block_close_step)
{
    uint32_t pos = 0;
    const char *text = "a [/THIN[/THINK] [/THINK]";
    size_t i = 0;
    while (!st_think_close_step("[/THINK]", &pos, (unsigned char)text[i]))
        i++;
    ck_assert_int_eq(i, 15);   /* the first whole "[/THINK]", after a near miss */
    ck_assert_str_eq(st_think_open_tag(ST_THINK_SQUARE), "[THINK]");
    ck_assert_str_eq(st_think_close_tag(ST_THINK_ANGLE), "</think>");
}
END_TEST

static Suite *think_block_suite(void)
{
    Suite *s = suite_create("think_block");
    TCase *t = tcase_create("think_block");
    tcase_add_test(t, test_think_block_optional_then_json);
    tcase_add_test(t, test_think_block_none_and_open);
    tcase_add_test(t, test_think_block_square_tags);
    tcase_add_test(t, test_think_block_split_close_and_queries);
    tcase_add_test(t, test_think_block_forced_close);
    tcase_add_test(t, test_think_block_close_step);
    tcase_add_test(t, test_think_block_either_tags);
    tcase_add_test(t, test_think_block_leading_blanks);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    return support_run_suite(think_block_suite(), CK_FORK);
}

/* fuzz_gbnf.c -- libFuzzer target for the GBNF compiler and recognizer
 * (include/strata/gbnf.h, the `grammar` request field).
 *
 * Input: a grammar's text, then (after the first NUL byte, if any) a text
 * to feed. Besides no crash / leak / UB / hang, it checks that a refused
 * grammar has a message (with a line and column for a syntax error), and
 * along the text that the first-byte table agrees with push for every
 * byte (so a byte the table allows never runs the recognizer out of its
 * work budget: the compile-time bound), that a byte the loop claims
 * leaves the state as it is, and that a taken byte never leaves the
 * recognizer without a way on or an end.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "strata/gbnf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok)
        abort();
}

static void walk(const struct st_gbnf *g, const uint8_t *t, size_t n)
{
    struct st_gbnf_state st, c;
    st_gbnf_state_init(&st, g);
    check(st_gbnf_valid(&st));
    for (size_t i = 0; i < n; i++) {
        bool first[256], loop[256];
        st_gbnf_first_bytes(&st, first);
        for (int b = 0; b < 256; b += 7) {
            st_gbnf_state_copy(&c, &st);
            check(first[b] == st_gbnf_push(&c, (unsigned char)b));
        }
        bool looping = st_gbnf_loop_bytes(&st, loop);
        st_gbnf_state_copy(&c, &st);
        bool took = st_gbnf_push(&c, t[i]);
        check(took == first[t[i]]);
        if (!took)
            return;
        if (looping && loop[t[i]] && t[i] < 0x80)
            check(c.n == st.n && !memcmp(c.e, st.e, st.off[st.n] * sizeof(st.e[0])));
        check(st_gbnf_complete(&c) || st_gbnf_may_continue(&c));
        st_gbnf_state_copy(&st, &c);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t gn = nul ? (size_t)(nul - data) : size;
    struct st_gbnf *g = NULL;
    struct st_err err = { 0 };
    enum st_status rc = st_gbnf_compile((const char *)data, gn, &g, &err);
    if (rc != ST_OK) {
        check(g == NULL && err.msg[0] != '\0');
        return 0;
    }
    check(st_gbnf_n_rules(g) > 0);
    check(st_gbnf_max_work(g) <= ST_GBNF_MAX_WORK);   /* else refused */
    walk(g, nul ? nul + 1 : data + size, nul ? size - gn - 1 : 0);
    st_gbnf_unref(g);
    return 0;
}

/* fast_path.c -- the templates a C renderer of chat/formats/ is known to
 * render byte for byte as the Jinja interpreter does, by the hash of their
 * source. tests/unit/test_chat_fast_path.c renders a set of conversations
 * through both for every template of tests/data/templates/ whose hash is
 * listed here and fails on any difference; a template not listed runs in
 * the interpreter. Besides them, 'fixtures' lists the stand-in templates
 * of Strata's own synthetic models (make-model, src/model/synth/): short
 * stubs written only to name a family, whose models are rendered by that
 * family's C renderer (the same test checks the hashes are theirs).
 */
#include "chat/internal.h"

static const struct {
    uint64_t          hash;    /* st_chat_tmpl_hash of the template source */
    enum st_chat_kind kind;
} known[] = {
    { 0x773d13e188afc917ull, ST_CHAT_CHATML },  /* dolphin-mixtral (ChatML) */
    { 0x88bf4138d5c826f0ull, ST_CHAT_CHATML },  /* llava 34b (ChatML) */
    { 0x2bfdb7aa9754484eull, ST_CHAT_QWEN3 },   /* Qwen3 (0.6B .. 235B, hybrid thinking) */
    { 0xc90dea00b85c935dull, ST_CHAT_GEMMA },   /* Gemma 3 270m */
    { 0x0e60067a5537498eull, ST_CHAT_LLAMA3 },  /* Llama 3 Instruct */
};

static const struct {
    uint64_t          hash;
    enum st_chat_kind kind;
} fixtures[] = {
    { 0xa41d6bae9b9141bcull, ST_CHAT_CHATML },  /* make-model's ChatML (st_mm_chatml_template) */
    { 0x53550ee4fdacbc03ull, ST_CHAT_GLM45 },   /* make-model --vocab glm's GLM-4.5 stub */
};

uint64_t st_chat_tmpl_hash(const char *src, size_t len)
{
    uint64_t h = 14695981039346656037ull;

    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)src[i];
        h *= 1099511628211ull;
    }
    return h;
}

size_t st_chat_fast_path_count(void)
{
    size_t n = 0;

    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        n += known[i].hash != 0;
    return n;
}

bool st_chat_fast_path(const char *src, size_t len, enum st_chat_kind kind)
{
    uint64_t h = st_chat_tmpl_hash(src, len);

    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
        if (known[i].hash == h && known[i].hash != 0 && known[i].kind == kind)
            return true;
    for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
        if (fixtures[i].hash == h && fixtures[i].kind == kind)
            return true;
    return false;
}

/* cli_make_model.c -- `strata make-model OUT.gguf ...`: option parsing for
 * st_make_model (include/strata/make_model.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/cli.h"
#include "strata/make_model.h"

static int usage(FILE *f)
{
    fputs("usage: strata make-model OUT.gguf\n"
          "                         [--preset tiny|small|medium|mtp-demo|a3b|glm-tiny|\n"
          "                                   next-tiny|next-medium|next-a3b]\n"
          "                         [--quant TYPE]\n"
          "                         [--seed N] [--vocab tokenizer.json] [--n-vocab N] [--mtp]\n"
          "                         [--no-fim]\n"
          "  Write a synthetic qwen3moe model with random weights (its text is noise).\n"
          "  --preset   tiny (default): E 64, 2 layers, 4 experts; small: E 256, 4 layers,\n"
          "             8 experts; medium: E 768, 12 layers, 16 experts top-4;\n"
          "             mtp-demo: E 512, 8 layers, with an MTP block built to agree with\n"
          "             the model (measures MTP drafting; not a claim about real models)\n"
          "             a3b: the Qwen3-30B-A3B shape (E 2048, 48 layers, 128 experts\n"
          "             top-8, vocabulary 151,936; ~17 GB at q4_k), for GPU benchmarks\n"
          "             glm-tiny: a glm4moe (GLM-4.5 layout: dense first layer, shared\n"
          "             expert, sigmoid routing, q/k/v biases, partial rope, GLM's special\n"
          "             tokens and an MTP block), E 64, 3 layers, 8 experts top-2\n"
          "             next-tiny, next-medium, next-a3b: a qwen35moe (Qwen3.5-MoE: three\n"
          "             Gated DeltaNet layers to one gated-attention layer, routed experts\n"
          "             plus a gated shared expert): E 64, 4 layers; E 768, 12 layers, 16\n"
          "             experts top-4 (CPU benchmarks); the Qwen3.5-35B-A3B shape (E 2048,\n"
          "             40 layers, 256 experts top-8, vocabulary 248,320) for the GPU\n"
          "             next-mtp-demo: mtp-demo for qwen35moe (E 512, 8 layers, an MTP\n"
          "             block built to agree)\n"
          "             next80-tiny, next80-a3b: a qwen3next (Qwen3-Next: the same layers\n"
          "             with fused ssm_ba, grouped v heads): E 64, 4 layers; the\n"
          "             Qwen3-Next-80B-A3B shape (E 2048, 48 layers, 512 experts top-10);\n"
          "             next80-tiny-ssm-in: next80-tiny in the older fused ssm_in layout\n"
          "             qwen35-tiny: a qwen35 (dense Qwen3.5: the same layers, dense FFN)\n"
          "  --quant    f32 f16 bf16 q8_0 (default) q4_0 q4_1 q5_0 q5_1 q2_k q2_k_s q3_k\n"
          "             q3_k_m q3_k_l q4_k q4_k_m q5_k q6_k iq3_s iq3_xxs iq4_xs\n"
          "             (q2_k, q2_k_s, q3_k_m, q3_k_l, q4_k_m: llama-quantize's mixes)\n"
          "  --seed     weights seed (default 1)\n"
          "  --vocab    import a Hugging Face tokenizer.json (and the tokenizer_config.json\n"
          "             beside it) instead of the small built-in tokenizer\n"
          "  --n-vocab  with --vocab: pad the vocabulary to N rows\n"
          "  --mtp      append one MTP (nextn) block\n"
          "  --no-fim   leave the fill-in-the-middle tokens out of the built-in tokenizer\n", f);
    return f == stdout ? 0 : 2;   /* --help asked for it: not an error */
}

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end || s[0] == '-')
        return false;
    *out = v;
    return true;
}

int st_cli_make_model(int argc, char **argv)
{
    struct st_make_model_opts o = { .seed = 1 };
    uint64_t nv = 0;
    if (st_cli_wants_help(argc, argv))
        return usage(stdout);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_val = i + 1 < argc;
        if (strcmp(a, "--mtp") == 0)
            o.mtp = true;
        else if (strcmp(a, "--no-fim") == 0)
            o.no_fim = true;
        else if (strcmp(a, "--preset") == 0 && has_val)
            o.preset = argv[++i];
        else if (strcmp(a, "--quant") == 0 && has_val)
            o.quant = argv[++i];
        else if (strcmp(a, "--vocab") == 0 && has_val)
            o.vocab_path = argv[++i];
        else if (strcmp(a, "--seed") == 0 && has_val) {
            if (!parse_u64(argv[++i], &o.seed))
                return usage(stderr);
        } else if (strcmp(a, "--n-vocab") == 0 && has_val) {
            if (!parse_u64(argv[++i], &nv) || nv > (1u << 22))
                return usage(stderr);
            o.n_vocab = (int64_t)nv;
        } else if (a[0] == '-' || o.out_path) {
            return usage(stderr);
        } else {
            o.out_path = a;
        }
    }
    if (!o.out_path)
        return usage(stderr);
    struct st_err err = { 0 };
    if (st_make_model(&o, &err) != ST_OK) {
        fprintf(stderr, "strata make-model: %s\n", err.msg);
        return 1;
    }
    bool glm = o.preset && strncmp(o.preset, "glm-", 4) == 0;
    bool next = o.preset && strncmp(o.preset, "next-", 5) == 0;
    bool next80 = o.preset && strncmp(o.preset, "next80-", 7) == 0;
    bool qwen35 = o.preset && strncmp(o.preset, "qwen35-", 7) == 0;
    printf("wrote %s (%s, preset %s, %s, seed %llu%s)\n", o.out_path,
           glm ? "glm4moe" : next ? "qwen35moe" : next80 ? "qwen3next" : qwen35 ? "qwen35"
                                                                          : "qwen3moe",
           o.preset ? o.preset : "tiny", o.quant ? o.quant : "q8_0",
           (unsigned long long)o.seed,
           o.mtp || glm || (o.preset && strcmp(o.preset, "mtp-demo") == 0) ? ", with an MTP block"
                                                                           : "");
    return 0;
}

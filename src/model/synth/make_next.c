/* make_next.c -- the hybrid presets' blocks and keys (llama.cpp's names;
 * docs/GGUF.md "qwen35moe", "qwen3next", "qwen35"): every
 * full_attention_interval-th layer is gated attention (attn_q doubled
 * with the output gate, q/k norms, partial rope), the others Gated
 * DeltaNet (fused attn_qkv, the z gate, conv taps, dt bias, decay, alpha,
 * beta, the gated norm, ssm_out; qwen3next fuses beta and alpha into
 * ssm_ba, and its older files q/k/v and z into ssm_in); every layer has
 * routed experts and a sigmoid-gated shared expert (qwen35: a dense FFN);
 * the nextn block is a gated-attention block.
 */
#include <stdio.h>
#include <string.h>

#include "model/synth/make_build.h"

static void add_gated_attention(struct build *b, int64_t il)
{
    const struct preset *p = b->p;
    int64_t E = p->E, HD = p->H * p->D, KD = p->Hkv * p->D;
    st_mm_add_blk(b, il, "attn_q", R_ATTN, 2, E, 2 * HD, 1);
    st_mm_add_blk(b, il, "attn_k", R_ATTN, 2, E, KD, 1);
    st_mm_add_blk(b, il, "attn_v", R_ATTN_V, 2, E, KD, 1);
    st_mm_add_blk(b, il, "attn_output", R_ATTN_OUT, 2, HD, E, 1);
    st_mm_add_blk(b, il, "attn_q_norm", R_NORM, 1, p->D, 1, 1);
    st_mm_add_blk(b, il, "attn_k_norm", R_NORM, 1, p->D, 1, 1);
}

static void add_delta_net(struct build *b, int64_t il)
{
    const struct preset *p = b->p;
    const struct next_shape *n = p->next;
    int64_t E = p->E, Cv = n->Hv * n->Ds, conv = 2 * n->Hk * n->Ds + Cv;
    char name[96];
    if (n->ssm_in) {
        st_mm_add_blk(b, il, "ssm_in", R_ATTN, 2, E, conv + Cv, 1);
    } else {
        st_mm_add_blk(b, il, "attn_qkv", R_ATTN, 2, E, conv, 1);
        st_mm_add_blk(b, il, "attn_gate", R_ATTN, 2, E, Cv, 1);
    }
    st_mm_add_blk(b, il, "ssm_conv1d", R_F32, 2, n->K, conv, 1);
    st_mm_add_blk(b, il, "ssm_dt", R_BIAS, 1, n->Hv, 1, 1);
    snprintf(name, sizeof(name), "blk.%lld.ssm_a", (long long)il);
    st_mm_add(b, name, R_DECAY, il, 1, n->Hv, 1, 1);
    if (strcmp(n->arch, "qwen3next") == 0) {
        st_mm_add_blk(b, il, "ssm_ba", R_ATTN, 2, E, 2 * n->Hv, 1);
    } else {
        st_mm_add_blk(b, il, "ssm_alpha", R_ATTN, 2, E, n->Hv, 1);
        st_mm_add_blk(b, il, "ssm_beta", R_ATTN, 2, E, n->Hv, 1);
    }
    st_mm_add_blk(b, il, "ssm_norm", R_NORM, 1, n->Ds, 1, 1);
    st_mm_add_blk(b, il, "ssm_out", R_ATTN_OUT, 2, Cv, E, 1);
}

static void add_moe(struct build *b, int64_t il)
{
    const struct preset *p = b->p;
    int64_t E = p->E, Fs = p->next->Fs;
    st_mm_add_blk(b, il, "post_attention_norm", R_NORM, 1, E, 1, 1);
    if (p->X == 0) {   /* qwen35 */
        st_mm_add_blk(b, il, "ffn_gate", R_FFN, 2, E, p->F, 1);
        st_mm_add_blk(b, il, "ffn_up", R_FFN, 2, E, p->F, 1);
        st_mm_add_blk(b, il, "ffn_down", R_FFN_DOWN, 2, p->F, E, 1);
        return;
    }
    st_mm_add_blk(b, il, "ffn_gate_inp", R_ROUTER, 2, E, p->X, 1);
    st_mm_add_blk(b, il, "ffn_gate_exps", R_FFN, 3, E, p->F, p->X);
    st_mm_add_blk(b, il, "ffn_up_exps", R_FFN, 3, E, p->F, p->X);
    st_mm_add_blk(b, il, "ffn_down_exps", R_FFN_DOWN, 3, p->F, E, p->X);
    st_mm_add_blk(b, il, "ffn_gate_inp_shexp", R_ROUTER, 1, E, 1, 1);
    st_mm_add_blk(b, il, "ffn_gate_shexp", R_FFN, 2, E, Fs, 1);
    st_mm_add_blk(b, il, "ffn_up_shexp", R_FFN, 2, E, Fs, 1);
    st_mm_add_blk(b, il, "ffn_down_shexp", R_FFN_DOWN, 2, Fs, E, 1);
}

void st_mm_add_next_block(struct build *b, int64_t il)
{
    const struct preset *p = b->p;
    bool mtp = il >= p->L;
    st_mm_add_blk(b, il, "attn_norm", R_NORM, 1, p->E, 1, 1);
    if (mtp || (il + 1) % p->next->interval == 0)
        add_gated_attention(b, il);
    else
        add_delta_net(b, il);
    add_moe(b, il);
    if (mtp) {
        st_mm_add_blk(b, il, "nextn.eh_proj", R_ATTN, 2, 2 * p->E, p->E, 1);
        st_mm_add_blk(b, il, "nextn.enorm", R_NORM, 1, p->E, 1, 1);
        st_mm_add_blk(b, il, "nextn.hnorm", R_NORM, 1, p->E, 1, 1);
        st_mm_add_blk(b, il, "nextn.shared_head_norm", R_NORM, 1, p->E, 1, 1);
    }
}

void st_mm_add_next_keys(struct build *b)
{
    struct st_gguf_writer *w = b->w;
    const struct preset *p = b->p;
    const struct next_shape *n = p->next;
    /* M-RoPE sections over the n_rot / 2 rotated pairs (text positions are
     * the same in every section, so they only matter to other readers) */
    int32_t half = (int32_t)(p->n_rot / 2), third = half / 3;
    const int32_t sections[4] = { half - 2 * third, third, third, 0 };
    char key[96];
#define KEY(suffix) (snprintf(key, sizeof(key), "%s.%s", n->arch, suffix), key)
    st_gguf_writer_set_u32(w, KEY("rope.dimension_count"), (uint32_t)p->n_rot);
    if (strcmp(n->arch, "qwen3next") != 0)   /* Qwen3-Next's rope is plain NEOX */
        st_gguf_writer_set_arr(w, KEY("rope.dimension_sections"), ST_GGUF_I32, sections, 4);
    if (n->Fs > 0)
        st_gguf_writer_set_u32(w, KEY("expert_shared_feed_forward_length"), (uint32_t)n->Fs);
    st_gguf_writer_set_u32(w, KEY("full_attention_interval"), (uint32_t)n->interval);
    st_gguf_writer_set_u32(w, KEY("ssm.conv_kernel"), (uint32_t)n->K);
    st_gguf_writer_set_u32(w, KEY("ssm.inner_size"), (uint32_t)(n->Hv * n->Ds));
    st_gguf_writer_set_u32(w, KEY("ssm.state_size"), (uint32_t)n->Ds);
    st_gguf_writer_set_u32(w, KEY("ssm.time_step_rank"), (uint32_t)n->Hv);
    st_gguf_writer_set_u32(w, KEY("ssm.group_count"), (uint32_t)n->Hk);
#undef KEY
}

/* quant_dev.cuh -- per weight type: decode one "item" of a block into
 * registers, dot it with q8_1 activations by dp4a, and dequantize 32
 * elements. Used by mmvq.cu (matmul) and dequant.cu (embed, GEMM path).
 *
 * Layouts are docs/design/ENGINE.md section 2 (and include/strata/quant.h); the
 * formulas here mirror src/backend/base/quant_ref.c line for line.
 *
 * Item. A block of QK elements (32 or 256) is split into NI items of IE
 * elements (IE = 32 or 64), one item per thread per step of the matmul.
 * IE is a whole number of q8_1 activation blocks, so an item is dotted with
 * IE/32 activation blocks:
 *
 *   type     QK   bytes  NI  IE   item = ...
 *   Q8_0     32   34     1   32   the block
 *   Q4_0     32   18     1   32   the block
 *   Q4_K     256  144    4   64   32 qs bytes (chunk c): low nibbles = sub-block 2c, high = 2c+1
 *   Q5_K     256  176    4   64   as Q4_K plus bits 2c / 2c+1 of the 32 qh bytes
 *   Q6_K     256  210    8   32   (h, k) = (it/4, it%4): elements 128h+32k .. +31
 *   IQ3_S    256  110    8   32   sub-block ib
 *   IQ3_XXS  256  98     8   32   sub-block ib
 *   IQ4_XS   256  136    8   32   sub-block ib
 *   Q4_1     32   20     1   32   the block
 *   Q5_0     32   22     1   32   the block
 *   Q5_1     32   24     1   32   the block
 *   Q2_K     256  84     8   32   s = 4h+g: bits 2g..2g+1 of qs[32h .. 32h+31]
 *   Q3_K     256  110    8   32   as Q2_K plus bit s of the 32 hmask bytes
 *
 * q8_1 activations (quantize.cu): a row of n elements is n int8 values
 * followed by n/32 float2 (d, s) with x ~= d*q and s = the sum of the 32
 * original floats (not d*sum q: ggml's CUDA convention), so the "- dmin*m"
 * and "- 8" terms of the asymmetric formats cost one multiply per block:
 *   sum_l x_l * (D*sc*q_l - M) ~= D*sc*d*sum_l(q_l*xq_l) - M*s.
 * (Q4_1/Q5_1's "+ m" and Q5_0's "- 16" likewise. Q2_K's mins change every
 * 16 elements, finer than s: they take d*sum(xq) of each half instead, by
 * dp4a against 0x01010101, as ggml's CUDA does.)
 *
 * Alignment: blocks of 34/18/210/110/98 bytes are only 2-byte aligned, so
 * their ints are read as two halves (kq_int_b2); IQ4_XS quants are 4-byte
 * aligned (kq_int_b4); Q4_K/Q5_K quants sit at 16-byte multiples of their
 * 144/176-byte blocks (rows, expert slabs and cudaMalloc bases are 16-byte
 * multiples too) and are read 16 bytes at a time (kq_load_ints16).
 * The 20/24/84-byte blocks of Q4_1/Q5_1/Q2_K are 4-byte aligned (rows and
 * slabs are whole blocks on cudaMalloc bases), so their quants, at 4-byte
 * offsets, take kq_int_b4; Q5_0 (22) and Q3_K (110) are only 2-byte
 * aligned and take kq_int_b2.
 * Activation rows are 16-byte aligned.
 */
#ifndef STRATA_KERNELS_QUANT_DEV_CUH
#define STRATA_KERNELS_QUANT_DEV_CUH

#include "common.cuh"
#include "iq_tables.inc"

/* ---- lookup tables: a device copy for kernels, a host copy for the host
 * test (same initializers, from iq_tables.inc) ---------------------------- */

static __device__ const uint32_t kq_iq3s_grid_d[512] = { KQ_IQ3S_GRID_INIT };
static __device__ const uint32_t kq_iq3xxs_grid_d[256] = { KQ_IQ3XXS_GRID_INIT };
static __device__ const int8_t kq_kvalues_d[16] = { KQ_KVALUES_IQ4NL_INIT };
static const uint32_t kq_iq3s_grid_h[512] = { KQ_IQ3S_GRID_INIT };
static const uint32_t kq_iq3xxs_grid_h[256] = { KQ_IQ3XXS_GRID_INIT };
static const int8_t kq_kvalues_h[16] = { KQ_KVALUES_IQ4NL_INIT };

/* Device code reads the device copy, host code (the host test) its own. */
#ifdef __CUDA_ARCH__
#define KQ_TABLE(dev, host) (dev)
#else
#define KQ_TABLE(dev, host) (host)
#endif

KQ_HD uint32_t kq_iq3s(int i) { return KQ_TABLE(kq_iq3s_grid_d, kq_iq3s_grid_h)[i]; }
KQ_HD uint32_t kq_iq3xxs(int i) { return KQ_TABLE(kq_iq3xxs_grid_d, kq_iq3xxs_grid_h)[i]; }
KQ_HD int kq_kv(int i) { return KQ_TABLE(kq_kvalues_d, kq_kvalues_h)[i]; }

KQ_HD int kq_popc(uint32_t v)
{
#ifdef __CUDA_ARCH__
    return __popc(v);
#else
    return __builtin_popcount(v);
#endif
}

/* 4 nibbles (low or high half of each byte of v) through the IQ4_NL table. */
KQ_HD int kq_iq4_lookup(int v, int shift)
{
    uint32_t r = 0;
KQ_UNROLL
    for (int k = 0; k < 4; k++)
        r |= (uint32_t)(uint8_t)kq_kv((v >> (8 * k + shift)) & 0xf) << (8 * k);
    return (int)r;
}

/* The 6-bit (scale, min) pair j of a Q4_K / Q5_K block (quant.h st_q4k_scale_min). */
KQ_HD void kq_scale_min_k4(int j, const uint8_t *s, int *sc, int *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
        *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* Sum of dp4a over n ints of weights q and activations x. */
template <int n>
KQ_HD int kq_dot_ints(const int *q, const int *x)
{
    int s = 0;
KQ_UNROLL
    for (int i = 0; i < n; i++)
        s = kq_dp4a(q[i], x[i], s);
    return s;
}

template <int T>
struct kq;

/* ---- Q8_0 ---------------------------------------------------------------- */
template <>
struct kq<ST_DTYPE_Q8_0> {
    static constexpr int QK = 32, BB = 34, NI = 1, IE = 32;
    struct W {
        int q[8];
        float d;
    };
    static KQ_HD void load(const uint8_t *b, int it, W &w)
    {
        (void)it;
        w.d = kq_h2f_at(b, 0);
KQ_UNROLL
        for (int i = 0; i < 8; i++)
            w.q[i] = kq_int_b2(b + 2, i);
    }
    static KQ_HD float dot(const W &w, const int *x, const float2 *ds)
    {
        return w.d * ds[0].x * (float)kq_dot_ints<8>(w.q, x);
    }
    static KQ_HD void deq32(const uint8_t *b, int sub, float *y)
    {
        (void)sub;
        float d = kq_h2f_at(b, 0);
        for (int j = 0; j < 32; j++)
            y[j] = d * (float)(int8_t)b[2 + j];
    }
};

/* ---- Q4_0 ---------------------------------------------------------------- */
template <>
struct kq<ST_DTYPE_Q4_0> {
    static constexpr int QK = 32, BB = 18, NI = 1, IE = 32;
    struct W {
        int q[8];
        float d;
    };
    static KQ_HD void load(const uint8_t *b, int it, W &w)
    {
        (void)it;
        w.d = kq_h2f_at(b, 0);
KQ_UNROLL
        for (int i = 0; i < 4; i++) {
            int v = kq_int_b2(b + 2, i);
            w.q[i] = v & 0x0f0f0f0f;            /* elements 4i..4i+3 */
            w.q[4 + i] = (v >> 4) & 0x0f0f0f0f; /* elements 16+4i.. */
        }
    }
    static KQ_HD float dot(const W &w, const int *x, const float2 *ds)
    {
        return w.d * (ds[0].x * (float)kq_dot_ints<8>(w.q, x) - 8.0f * ds[0].y);
    }
    static KQ_HD void deq32(const uint8_t *b, int sub, float *y)
    {
        (void)sub;
        float d = kq_h2f_at(b, 0);
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)((b[2 + j] & 0xf) - 8);
            y[j + 16] = d * (float)((b[2 + j] >> 4) - 8);
        }
    }
};

/* ---- Q4_K ---------------------------------------------------------------- */
template <>
struct kq<ST_DTYPE_Q4_K> {
    static constexpr int QK = 256, BB = 144, NI = 4, IE = 64;
    struct W {
        int q[8];          /* 32 qs bytes: low nibbles sub-block 2c, high 2c+1 */
        float d0, d1, m0, m1;
    };
    static KQ_HD void load(const uint8_t *b, int c, W &w)
    {
        float d = kq_h2f_at(b, 0), dmin = kq_h2f_at(b, 2);
        int sc, m;
        kq_scale_min_k4(2 * c, b + 4, &sc, &m);
        w.d0 = d * (float)sc;
        w.m0 = dmin * (float)m;
        kq_scale_min_k4(2 * c + 1, b + 4, &sc, &m);
        w.d1 = d * (float)sc;
        w.m1 = dmin * (float)m;
        kq_load_ints16<8>(b + 16 + 32 * c, w.q);   /* 16 + 32c: 16-byte aligned (144-byte blocks) */
    }
    static KQ_HD float dot(const W &w, const int *x, const float2 *ds)
    {
        int s0 = 0, s1 = 0;
KQ_UNROLL
        for (int i = 0; i < 8; i++) {
            s0 = kq_dp4a(w.q[i] & 0x0f0f0f0f, x[i], s0);
            s1 = kq_dp4a((w.q[i] >> 4) & 0x0f0f0f0f, x[8 + i], s1);
        }
        return w.d0 * ds[0].x * (float)s0 - w.m0 * ds[0].y + w.d1 * ds[1].x * (float)s1 -
               w.m1 * ds[1].y;
    }
    static KQ_HD void deq32(const uint8_t *b, int sub, float *y)
    {
        int c = sub / 2, h = sub & 1, sc, m;
        kq_scale_min_k4(sub, b + 4, &sc, &m);
        float d = kq_h2f_at(b, 0) * (float)sc, mn = kq_h2f_at(b, 2) * (float)m;
        for (int l = 0; l < 32; l++)
            y[l] = d * (float)((b[16 + 32 * c + l] >> (4 * h)) & 0xf) - mn;
    }
};

/* ---- Q5_K ---------------------------------------------------------------- */
template <>
struct kq<ST_DTYPE_Q5_K> {
    static constexpr int QK = 256, BB = 176, NI = 4, IE = 64;
    struct W {
        int q0[8], q1[8];  /* 5-bit values of sub-blocks 2c and 2c+1 */
        float d0, d1, m0, m1;
    };
    static KQ_HD void load(const uint8_t *b, int c, W &w)
    {
        float d = kq_h2f_at(b, 0), dmin = kq_h2f_at(b, 2);
        int sc, m;
        kq_scale_min_k4(2 * c, b + 4, &sc, &m);
        w.d0 = d * (float)sc;
        w.m0 = dmin * (float)m;
        kq_scale_min_k4(2 * c + 1, b + 4, &sc, &m);
        w.d1 = d * (float)sc;
        w.m1 = dmin * (float)m;
        int ql[8], qh[8];
        kq_load_ints16<8>(b + 48 + 32 * c, ql);    /* 16-byte aligned (176-byte blocks) */
        kq_load_ints16<8>(b + 16, qh);
KQ_UNROLL
        for (int i = 0; i < 8; i++) {
            w.q0[i] = (ql[i] & 0x0f0f0f0f) | (((qh[i] >> (2 * c)) & 0x01010101) << 4);
            w.q1[i] = ((ql[i] >> 4) & 0x0f0f0f0f) | (((qh[i] >> (2 * c + 1)) & 0x01010101) << 4);
        }
    }
    static KQ_HD float dot(const W &w, const int *x, const float2 *ds)
    {
        int s0 = kq_dot_ints<8>(w.q0, x), s1 = kq_dot_ints<8>(w.q1, x + 8);
        return w.d0 * ds[0].x * (float)s0 - w.m0 * ds[0].y + w.d1 * ds[1].x * (float)s1 -
               w.m1 * ds[1].y;
    }
    static KQ_HD void deq32(const uint8_t *b, int sub, float *y)
    {
        int c = sub / 2, h = sub & 1, sc, m;
        kq_scale_min_k4(sub, b + 4, &sc, &m);
        float d = kq_h2f_at(b, 0) * (float)sc, mn = kq_h2f_at(b, 2) * (float)m;
        for (int l = 0; l < 32; l++) {
            int q = ((b[48 + 32 * c + l] >> (4 * h)) & 0xf) | (((b[16 + l] >> sub) & 1) << 4);
            y[l] = d * (float)q - mn;
        }
    }
};

/* ---- Q6_K ---------------------------------------------------------------- */
template <>
struct kq<ST_DTYPE_Q6_K> {
    static constexpr int QK = 256, BB = 210, NI = 8, IE = 32;
    struct W {
        int q[8];          /* signed 6-bit values, elements 128h+32k .. +31 */
        float d0, d1;      /* d * scale of elements 0..15 and 16..31 */
    };
    static KQ_HD void load(const uint8_t *b, int it, W &w)
    {
        int h = it / 4, k = it % 4;
        float d = kq_h2f_at(b, 208);
        w.d0 = d * (float)(int8_t)b[192 + 8 * h + 2 * k];
        w.d1 = d * (float)(int8_t)b[192 + 8 * h + 2 * k + 1];
KQ_UNROLL
        for (int i = 0; i < 8; i++) {
            int ql = kq_int_b2(b + 64 * h + 32 * (k & 1), i);
            int qh = kq_int_b2(b + 128 + 32 * h, i);
            int v = ((ql >> (4 * (k >> 1))) & 0x0f0f0f0f) | (((qh >> (2 * k)) & 0x03030303) << 4);
            w.q[i] = kq_vsub4(v, 0x20202020);
        }
    }
    static KQ_HD float dot(const W &w, const int *x, const float2 *ds)
    {
        int s0 = kq_dot_ints<4>(w.q, x), s1 = kq_dot_ints<4>(w.q + 4, x + 4);
        return ds[0].x * (w.d0 * (float)s0 + w.d1 * (float)s1);
    }
    static KQ_HD void deq32(const uint8_t *b, int sub, float *y)
    {
        int h = sub / 4, k = sub % 4;
        float d = kq_h2f_at(b, 208);
        for (int l = 0; l < 32; l++) {
            int lowb = b[64 * h + l + 32 * (k & 1)];
            int low4 = k < 2 ? (lowb & 0xf) : (lowb >> 4);
            int hi2 = (b[128 + 32 * h + l] >> (2 * k)) & 3;
            int q = (low4 | (hi2 << 4)) - 32;
            y[l] = d * (float)(int8_t)b[192 + 8 * h + 2 * k + l / 16] * (float)q;
        }
    }
};

/* ---- IQ3_S --------------------------------------------------------------- */
template <>
struct kq<ST_DTYPE_IQ3_S> {
    static constexpr int QK = 256, BB = 110, NI = 8, IE = 32;
    struct W {
        int q[8];          /* signed magnitudes, 4 per int */
        float d;           /* d * (1 + 2s) */
    };
    static KQ_HD void load(const uint8_t *b, int ib, W &w)
    {
        int s = (b[106 + ib / 2] >> (4 * (ib & 1))) & 0xf;
        int qh = b[66 + ib];
        w.d = kq_h2f_at(b, 0) * (float)(1 + 2 * s);
KQ_UNROLL
        for (int k = 0; k < 8; k++) {
            int idx = b[2 + 8 * ib + k] | (((qh >> k) & 1) << 8);
            uint32_t s4 = (uint32_t)(b[74 + 4 * ib + k / 2] >> (4 * (k & 1)));
            w.q[k] = kq_apply_signs(kq_iq3s(idx), s4);
        }
    }
    static KQ_HD float dot(const W &w, const int *x, const float2 *ds)
    {
        return w.d * ds[0].x * (float)kq_dot_ints<8>(w.q, x);
    }
    static KQ_HD void deq32(const uint8_t *b, int ib, float *y)
    {
        W w;
        load(b, ib, w);
        for (int j = 0; j < 32; j++)
            y[j] = w.d * (float)(int8_t)(w.q[j / 4] >> (8 * (j % 4)));
    }
};

/* ---- IQ3_XXS ------------------------------------------------------------- */
template <>
struct kq<ST_DTYPE_IQ3_XXS> {
    static constexpr int QK = 256, BB = 98, NI = 8, IE = 32;
    struct W {
        int q[8];
        float d;           /* d * (0.5 + (a >> 28)) * 0.5 */
    };
    static KQ_HD void load(const uint8_t *b, int ib, W &w)
    {
        uint32_t a = (uint32_t)kq_int_b2(b + 66, ib);
        w.d = kq_h2f_at(b, 0) * (0.5f + (float)(a >> 28)) * 0.5f;
KQ_UNROLL
        for (int l = 0; l < 4; l++) {
            uint32_t s7 = (a >> (7 * l)) & 127;
            uint32_t s8 = s7 | ((uint32_t)(kq_popc(s7) & 1) << 7);   /* ksigns_iq2xs */
            w.q[2 * l] = kq_apply_signs(kq_iq3xxs(b[2 + 8 * ib + 2 * l]), s8);
            w.q[2 * l + 1] = kq_apply_signs(kq_iq3xxs(b[2 + 8 * ib + 2 * l + 1]), s8 >> 4);
        }
    }
    static KQ_HD float dot(const W &w, const int *x, const float2 *ds)
    {
        return w.d * ds[0].x * (float)kq_dot_ints<8>(w.q, x);
    }
    static KQ_HD void deq32(const uint8_t *b, int ib, float *y)
    {
        W w;
        load(b, ib, w);
        for (int j = 0; j < 32; j++)
            y[j] = w.d * (float)(int8_t)(w.q[j / 4] >> (8 * (j % 4)));
    }
};

/* ---- IQ4_XS -------------------------------------------------------------- */
template <>
struct kq<ST_DTYPE_IQ4_XS> {
    static constexpr int QK = 256, BB = 136, NI = 8, IE = 32;
    struct W {
        int q[8];          /* table values: ints 0..3 low nibbles, 4..7 high */
        float d;           /* d * (ls - 32) */
    };
    static KQ_HD float scale(const uint8_t *b, int ib)
    {
        int sh = b[2] | (b[3] << 8);
        int ls = ((b[4 + ib / 2] >> (4 * (ib & 1))) & 0xf) | (((sh >> (2 * ib)) & 3) << 4);
        return kq_h2f_at(b, 0) * (float)(ls - 32);
    }
    static KQ_HD void load(const uint8_t *b, int ib, W &w)
    {
        w.d = scale(b, ib);
KQ_UNROLL
        for (int i = 0; i < 4; i++) {
            int v = kq_int_b4(b + 8 + 16 * ib, i);
            w.q[i] = kq_iq4_lookup(v, 0);
            w.q[4 + i] = kq_iq4_lookup(v, 4);
        }
    }
    static KQ_HD float dot(const W &w, const int *x, const float2 *ds)
    {
        return w.d * ds[0].x * (float)kq_dot_ints<8>(w.q, x);
    }
    static KQ_HD void deq32(const uint8_t *b, int ib, float *y)
    {
        float d = scale(b, ib);
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)kq_kv(b[8 + 16 * ib + j] & 0xf);
            y[j + 16] = d * (float)kq_kv(b[8 + 16 * ib + j] >> 4);
        }
    }
};

/* ---- Q4_1 ---------------------------------------------------------------- */
template <>
struct kq<ST_DTYPE_Q4_1> {
    static constexpr int QK = 32, BB = 20, NI = 1, IE = 32;
    struct W {
        int q[8];          /* unsigned nibbles 0..15 */
        float d, m;        /* x = d*q + m */
    };
    static KQ_HD void load(const uint8_t *b, int it, W &w)
    {
        (void)it;
        w.d = kq_h2f_at(b, 0);
        w.m = kq_h2f_at(b, 2);
KQ_UNROLL
        for (int i = 0; i < 4; i++) {
            int v = kq_int_b4(b + 4, i);        /* 4-byte aligned (20-byte blocks) */
            w.q[i] = v & 0x0f0f0f0f;            /* elements 4i..4i+3 */
            w.q[4 + i] = (v >> 4) & 0x0f0f0f0f; /* elements 16+4i.. */
        }
    }
    static KQ_HD float dot(const W &w, const int *x, const float2 *ds)
    {
        return w.d * ds[0].x * (float)kq_dot_ints<8>(w.q, x) + w.m * ds[0].y;
    }
    static KQ_HD void deq32(const uint8_t *b, int sub, float *y)
    {
        (void)sub;
        float d = kq_h2f_at(b, 0), m = kq_h2f_at(b, 2);
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)(b[4 + j] & 0xf) + m;
            y[j + 16] = d * (float)(b[4 + j] >> 4) + m;
        }
    }
};

/* 4 bits (the low 4 of v) -> bit 4 of 4 bytes (bit k -> byte k): the 5th
 * bits of Q5_0/Q5_1 elements. The multiply places bit k at bit 8k as in
 * kq_sign_mask4. */
KQ_HD int kq_q5_high4(uint32_t v)
{
    return (int)((((v & 0xfu) * 0x00204081u) & 0x01010101u) << 4);
}

/* 8 ints of 5-bit values: ints 0..3 elements 0..15 (low nibbles), ints 4..7
 * elements 16..31 (high nibbles); qh the block's LE word of 5th bits. */
KQ_HD void kq_q5_ints(const uint8_t *qs, bool aligned4, uint32_t qh, int *q)
{
KQ_UNROLL
    for (int i = 0; i < 4; i++) {
        int v = aligned4 ? kq_int_b4(qs, i) : kq_int_b2(qs, i);
        q[i] = (v & 0x0f0f0f0f) | kq_q5_high4(qh >> (4 * i));
        q[4 + i] = ((v >> 4) & 0x0f0f0f0f) | kq_q5_high4(qh >> (16 + 4 * i));
    }
}

/* Element j of a Q5 block: nibble | 5th bit (qs at qs, qh the LE word). */
KQ_HD int kq_q5_elem(const uint8_t *qs, uint32_t qh, int j)
{
    int nib = j < 16 ? (qs[j] & 0xf) : (qs[j - 16] >> 4);
    return nib | (int)(((qh >> j) & 1) << 4);
}

/* ---- Q5_0 ---------------------------------------------------------------- */
template <>
struct kq<ST_DTYPE_Q5_0> {
    static constexpr int QK = 32, BB = 22, NI = 1, IE = 32;
    struct W {
        int q[8];          /* unsigned 5-bit values 0..31 (x = d*(q - 16)) */
        float d;
    };
    static KQ_HD void load(const uint8_t *b, int it, W &w)
    {
        (void)it;
        w.d = kq_h2f_at(b, 0);
        kq_q5_ints(b + 6, false, (uint32_t)kq_int_b2(b + 2, 0), w.q);  /* 2-byte aligned */
    }
    static KQ_HD float dot(const W &w, const int *x, const float2 *ds)
    {
        return w.d * (ds[0].x * (float)kq_dot_ints<8>(w.q, x) - 16.0f * ds[0].y);
    }
    static KQ_HD void deq32(const uint8_t *b, int sub, float *y)
    {
        (void)sub;
        float d = kq_h2f_at(b, 0);
        uint32_t qh = (uint32_t)kq_int_b2(b + 2, 0);
        for (int j = 0; j < 32; j++)
            y[j] = d * (float)(kq_q5_elem(b + 6, qh, j) - 16);
    }
};

/* ---- Q5_1 ---------------------------------------------------------------- */
template <>
struct kq<ST_DTYPE_Q5_1> {
    static constexpr int QK = 32, BB = 24, NI = 1, IE = 32;
    struct W {
        int q[8];          /* unsigned 5-bit values; x = d*q + m */
        float d, m;
    };
    static KQ_HD void load(const uint8_t *b, int it, W &w)
    {
        (void)it;
        w.d = kq_h2f_at(b, 0);
        w.m = kq_h2f_at(b, 2);
        kq_q5_ints(b + 8, true, (uint32_t)kq_int_b4(b + 4, 0), w.q);   /* 24-byte blocks */
    }
    static KQ_HD float dot(const W &w, const int *x, const float2 *ds)
    {
        return w.d * ds[0].x * (float)kq_dot_ints<8>(w.q, x) + w.m * ds[0].y;
    }
    static KQ_HD void deq32(const uint8_t *b, int sub, float *y)
    {
        (void)sub;
        float d = kq_h2f_at(b, 0), m = kq_h2f_at(b, 2);
        uint32_t qh = (uint32_t)kq_int_b4(b + 4, 0);
        for (int j = 0; j < 32; j++)
            y[j] = d * (float)kq_q5_elem(b + 8, qh, j) + m;
    }
};

/* ---- Q2_K ---------------------------------------------------------------- */
template <>
struct kq<ST_DTYPE_Q2_K> {
    static constexpr int QK = 256, BB = 84, NI = 8, IE = 32;
    struct W {
        int q[8];          /* 2-bit values 0..3 of elements 32s .. 32s+31 */
        int sc0, sc1;      /* 4-bit scales of elements 0..15 and 16..31 */
        int m0, m1;        /* 4-bit mins of the same halves */
        float d, dmin;
    };
    static KQ_HD void load(const uint8_t *b, int s, W &w)
    {
        const int h = s / 4, g = s % 4;
        w.d = kq_h2f_at(b, 80);
        w.dmin = kq_h2f_at(b, 82);
        w.sc0 = b[2 * s] & 0xf;
        w.m0 = b[2 * s] >> 4;
        w.sc1 = b[2 * s + 1] & 0xf;
        w.m1 = b[2 * s + 1] >> 4;
KQ_UNROLL
        for (int i = 0; i < 8; i++)   /* 16 + 32h: 4-byte aligned (84-byte blocks) */
            w.q[i] = (kq_int_b4(b + 16 + 32 * h, i) >> (2 * g)) & 0x03030303;
    }
    static KQ_HD float dot(const W &w, const int *x, const float2 *ds)
    {
        /* sum x*(d*sc*q - dmin*m) per half; the min term takes the integer
         * sum of the half's activations (d8 * sum xq) */
        int sd = w.sc0 * kq_dot_ints<4>(w.q, x) + w.sc1 * kq_dot_ints<4>(w.q + 4, x + 4);
        int sm = 0, sm1 = 0;
KQ_UNROLL
        for (int i = 0; i < 4; i++) {
            sm = kq_dp4a(0x01010101, x[i], sm);
            sm1 = kq_dp4a(0x01010101, x[4 + i], sm1);
        }
        sm = w.m0 * sm + w.m1 * sm1;
        return ds[0].x * (w.d * (float)sd - w.dmin * (float)sm);
    }
    static KQ_HD void deq32(const uint8_t *b, int s, float *y)
    {
        const int h = s / 4, g = s % 4;
        float d = kq_h2f_at(b, 80), dmin = kq_h2f_at(b, 82);
        for (int l = 0; l < 32; l++) {
            int sc = b[2 * s + l / 16];
            int q = (b[16 + 32 * h + l] >> (2 * g)) & 3;
            y[l] = d * (float)(sc & 0xf) * (float)q - dmin * (float)(sc >> 4);
        }
    }
};

/* ---- Q3_K ---------------------------------------------------------------- */

/* 6-bit scale j (0..15) of a Q3_K block, offset 32 not yet removed
 * (quant.h st_q3k_scale): low 4 bits from bytes 0..7, high 2 from 8..11. */
KQ_HD int kq_q3k_scale(int j, const uint8_t *s)
{
    int lo = j < 8 ? (s[j] & 0xf) : (s[j - 8] >> 4);
    return lo | (((s[8 + (j & 3)] >> (2 * (j >> 2))) & 3) << 4);
}

template <>
struct kq<ST_DTYPE_Q3_K> {
    static constexpr int QK = 256, BB = 110, NI = 8, IE = 32;
    struct W {
        int q[8];          /* signed 3-bit values -4..3 of elements 32s .. 32s+31 */
        float d0, d1;      /* d * (scale - 32) of elements 0..15 and 16..31 */
    };
    static KQ_HD void load(const uint8_t *b, int s, W &w)
    {
        const int h = s / 4, g = s % 4;
        float d = kq_h2f_at(b, 108);
        w.d0 = d * (float)(kq_q3k_scale(2 * s, b + 96) - 32);
        w.d1 = d * (float)(kq_q3k_scale(2 * s + 1, b + 96) - 32);
KQ_UNROLL
        for (int i = 0; i < 8; i++) {   /* 110-byte blocks: 2-byte aligned */
            int lo = (kq_int_b2(b + 32 + 32 * h, i) >> (2 * g)) & 0x03030303;
            int hb = (kq_int_b2(b, i) >> s) & 0x01010101;
            w.q[i] = kq_vsub4(lo | (hb << 2), 0x04040404);   /* bit clear: q - 4 */
        }
    }
    static KQ_HD float dot(const W &w, const int *x, const float2 *ds)
    {
        int s0 = kq_dot_ints<4>(w.q, x), s1 = kq_dot_ints<4>(w.q + 4, x + 4);
        return ds[0].x * (w.d0 * (float)s0 + w.d1 * (float)s1);
    }
    static KQ_HD void deq32(const uint8_t *b, int s, float *y)
    {
        const int h = s / 4, g = s % 4;
        float d = kq_h2f_at(b, 108);
        for (int l = 0; l < 32; l++) {
            int q = (b[32 + 32 * h + l] >> (2 * g)) & 3;
            if (!((b[l] >> s) & 1))
                q -= 4;
            y[l] = d * (float)(kq_q3k_scale(2 * s + l / 16, b + 96) - 32) * (float)q;
        }
    }
};

/* ---- float weights: 32 elements at a time (dequant path only; the matmul
 * has its own float kernel) ----------------------------------------------- */
template <>
struct kq<ST_DTYPE_F32> {
    static constexpr int QK = 1, BB = 4;
    static KQ_HD void deq32(const uint8_t *b, int sub, float *y)
    {
        (void)sub;
        for (int j = 0; j < 32; j++)
            y[j] = ((const float *)(const void *)b)[j];
    }
};
template <>
struct kq<ST_DTYPE_F16> {
    static constexpr int QK = 1, BB = 2;
    static KQ_HD void deq32(const uint8_t *b, int sub, float *y)
    {
        (void)sub;
        for (int j = 0; j < 32; j++)
            y[j] = kq_h2f(((const uint16_t *)(const void *)b)[j]);
    }
};
template <>
struct kq<ST_DTYPE_BF16> {
    static constexpr int QK = 1, BB = 2;
    static KQ_HD void deq32(const uint8_t *b, int sub, float *y)
    {
        (void)sub;
        for (int j = 0; j < 32; j++)
            y[j] = kq_bf2f(((const uint16_t *)(const void *)b)[j]);
    }
};

/* Dequantize the 32 elements [32*s, 32*s + 32) of a row of type T. For
 * float types 's' addresses 32 consecutive elements. */
template <int T>
KQ_HD void kq_deq_row32(const uint8_t *row, int64_t s, float *y)
{
    if (kq<T>::QK == 1) {
        kq<T>::deq32(row + (size_t)s * 32 * kq<T>::BB, 0, y);
    } else {
        int64_t per = kq<T>::QK / 32;
        kq<T>::deq32(row + (size_t)(s / per) * kq<T>::BB, (int)(s % per), y);
    }
}

/* Calls F::template run<T>(args...) for the runtime type t; returns false
 * for a type without kernels. Keeps the per-launcher switch in one place. */
#define KQ_QUANT_TYPES(X)                                                             \
    X(ST_DTYPE_Q8_0) X(ST_DTYPE_Q4_0) X(ST_DTYPE_Q4_K) X(ST_DTYPE_Q5_K) X(ST_DTYPE_Q6_K) \
    X(ST_DTYPE_IQ3_S) X(ST_DTYPE_IQ3_XXS) X(ST_DTYPE_IQ4_XS) X(ST_DTYPE_Q4_1)              \
    X(ST_DTYPE_Q5_0) X(ST_DTYPE_Q5_1) X(ST_DTYPE_Q2_K) X(ST_DTYPE_Q3_K)
#define KQ_FLOAT_TYPES(X) X(ST_DTYPE_F32) X(ST_DTYPE_F16) X(ST_DTYPE_BF16)

#endif /* STRATA_KERNELS_QUANT_DEV_CUH */

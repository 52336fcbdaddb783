/* quant.h -- block layouts, lookup tables, and the scalar reference
 * dequantizers and quantizers of every weight type (docs/design/ENGINE.md section 2).
 *
 * These are the reference the SIMD and CUDA kernels are tested against:
 * plain C, one element at a time, written from docs/design/ENGINE.md's formulas. They
 * know nothing of GGUF; a row is 'n' elements of one st_dtype, stored as
 * n / block_elems packed blocks (n must be a whole number of blocks).
 *
 * fp16 is IEEE binary16 and bf16 the top half of an fp32, both stored as
 * uint16_t. All block structs are packed by construction (only byte-sized
 * or naturally aligned members) and their sizes are checked at compile time.
 *
 * Threads: every function here is pure and may be called from any thread.
 */
#ifndef STRATA_QUANT_H
#define STRATA_QUANT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "strata/dtype.h"

#define ST_QK 32      /* elements per block of the 32-element types */
#define ST_QK_K 256   /* elements per super-block of K and IQ types */

/* ---- block layouts (docs/design/ENGINE.md 2.3-2.11) -------------------------------- */

struct st_block_q8_0 {          /* 34 B / 32 */
    uint16_t d;                 /* fp16 scale */
    int8_t   qs[ST_QK];         /* x = d * qs */
};

struct st_block_q4_0 {          /* 18 B / 32 */
    uint16_t d;                 /* fp16 scale */
    uint8_t  qs[ST_QK / 2];     /* low nibbles = x[0..15], high = x[16..31] */
};

struct st_block_q4_1 {          /* 20 B / 32 */
    uint16_t d;                 /* fp16 scale */
    uint16_t m;                 /* fp16 min: x = d * q + m (added) */
    uint8_t  qs[ST_QK / 2];     /* as Q4_0; q unsigned 0..15 */
};

struct st_block_q5_0 {          /* 22 B / 32 */
    uint16_t d;                 /* fp16 scale: x = d * (q - 16) */
    uint8_t  qh[4];             /* LE u32: bit e = 5th bit of element e */
    uint8_t  qs[ST_QK / 2];     /* low nibbles = x[0..15], high = x[16..31] */
};

struct st_block_q5_1 {          /* 24 B / 32 */
    uint16_t d;                 /* fp16 scale */
    uint16_t m;                 /* fp16 min: x = d * q + m, q 0..31 */
    uint8_t  qh[4];             /* as Q5_0 */
    uint8_t  qs[ST_QK / 2];
};

struct st_block_q2_k {          /* 84 B / 256 */
    uint8_t  scales[ST_QK_K / 16]; /* per 16 elements: low nibble scale, high nibble min */
    uint8_t  qs[ST_QK_K / 4];   /* 2 chunks of 32 bytes; shift 2j = group j of 32 */
    uint16_t d;                 /* fp16 super-scale of the scales */
    uint16_t dmin;              /* fp16 super-scale of the mins: x = d*sc*q - dmin*m */
};

struct st_block_q3_k {          /* 110 B / 256 */
    uint8_t  hmask[ST_QK_K / 8];/* bit g of hmask[l]: 3rd bit of element 32g + l */
    uint8_t  qs[ST_QK_K / 4];   /* low 2 bits, laid out as Q2_K */
    uint8_t  scales[12];        /* 16 x 6-bit scales (offset 32), packed */
    uint16_t d;                 /* fp16, at the end (offset 108) */
};

struct st_block_q4_k {          /* 144 B / 256 */
    uint16_t d;                 /* fp16 super-scale of the scales */
    uint16_t dmin;              /* fp16 super-scale of the mins */
    uint8_t  scales[12];        /* 8 x 6-bit scale + 8 x 6-bit min, packed */
    uint8_t  qs[ST_QK_K / 2];   /* 4 chunks of 32 bytes, 64 elements each */
};

struct st_block_q5_k {          /* 176 B / 256 */
    uint16_t d;
    uint16_t dmin;
    uint8_t  scales[12];        /* as in Q4_K */
    uint8_t  qh[ST_QK_K / 8];   /* 5th bits */
    uint8_t  qs[ST_QK_K / 2];   /* low nibbles, as in Q4_K */
};

struct st_block_q6_k {          /* 210 B / 256 */
    uint8_t  ql[ST_QK_K / 2];   /* low 4 bits */
    uint8_t  qh[ST_QK_K / 4];   /* high 2 bits */
    int8_t   scales[ST_QK_K / 16]; /* one per 16 elements */
    uint16_t d;                 /* fp16, at the END of the block (offset 208) */
};

struct st_block_q8_k {          /* 292 B / 256: activations only */
    float    d;                 /* fp32 scale */
    int8_t   qs[ST_QK_K];
    int16_t  bsums[ST_QK_K / 16]; /* sum of each group of 16 qs */
};

struct st_block_iq3_s {         /* 110 B / 256 */
    uint16_t d;                 /* fp16 */
    uint8_t  qs[ST_QK_K / 4];   /* low 8 bits of 64 grid indices */
    uint8_t  qh[ST_QK_K / 32];  /* 9th bits, one byte per sub-block */
    uint8_t  signs[ST_QK_K / 8];/* one bit per weight */
    uint8_t  scales[ST_QK_K / 64]; /* 4-bit scales, low nibble = even sub-block */
};

struct st_block_iq3_xxs {       /* 98 B / 256 */
    uint16_t d;                 /* fp16 */
    uint8_t  qs[3 * ST_QK_K / 8]; /* 64 grid indices + 8 LE u32 sign/scale words */
};

struct st_block_iq4_xs {        /* 136 B / 256 */
    uint16_t d;                 /* fp16 */
    uint16_t scales_h;          /* top 2 bits of the 8 6-bit scales */
    uint8_t  scales_l[ST_QK_K / 64]; /* low 4 bits, two per byte */
    uint8_t  qs[ST_QK_K / 2];   /* as IQ4_NL: low nibbles first half */
};

_Static_assert(sizeof(struct st_block_q8_0) == 34, "q8_0 block");
_Static_assert(sizeof(struct st_block_q4_0) == 18, "q4_0 block");
_Static_assert(sizeof(struct st_block_q4_1) == 20, "q4_1 block");
_Static_assert(sizeof(struct st_block_q5_0) == 22, "q5_0 block");
_Static_assert(sizeof(struct st_block_q5_1) == 24, "q5_1 block");
_Static_assert(sizeof(struct st_block_q2_k) == 84, "q2_k block");
_Static_assert(sizeof(struct st_block_q3_k) == 110, "q3_k block");
_Static_assert(sizeof(struct st_block_q4_k) == 144, "q4_k block");
_Static_assert(sizeof(struct st_block_q5_k) == 176, "q5_k block");
_Static_assert(sizeof(struct st_block_q6_k) == 210, "q6_k block");
_Static_assert(sizeof(struct st_block_q8_k) == 292, "q8_k block");
_Static_assert(sizeof(struct st_block_iq3_s) == 110, "iq3_s block");
_Static_assert(sizeof(struct st_block_iq3_xxs) == 98, "iq3_xxs block");
_Static_assert(sizeof(struct st_block_iq4_xs) == 136, "iq4_xs block");

/* ---- lookup tables (src/backend/base/quant_tables.c; docs/design/ENGINE.md 2.8-2.10) ---- */

extern const uint32_t st_iq3s_grid[512];    /* 4 magnitudes in {1,3,..,15} per entry */
extern const uint32_t st_iq3xxs_grid[256];  /* 4 magnitudes in {4,12,..,62} */
extern const uint8_t  st_ksigns_iq2xs[128]; /* i | (parity(i) << 7) */
extern const uint8_t  st_kmask_iq2xs[8];    /* 1 << i */
extern const int8_t   st_kvalues_iq4nl[16]; /* -127 .. 113 */

/* ---- fp16 / bf16 ------------------------------------------------------- */

static inline float st_bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint32_t st_f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

/* Exact. Subnormals, infinities and NaN are preserved. */
static inline float st_fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ffu;

    if (e == 0) {                       /* zero or subnormal: m * 2^-24 */
        float v = (float)m * 0x1p-24f;
        return st_bits_f32(st_f32_bits(v) | sign);
    }
    if (e == 31)                        /* inf / nan */
        return st_bits_f32(sign | 0x7f800000u | (m << 13));
    return st_bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

/* Round to nearest even; overflow gives inf; NaN gives a quiet NaN. */
uint16_t st_f32_to_fp16(float f);

static inline float st_bf16_to_f32(uint16_t h) { return st_bits_f32((uint32_t)h << 16); }

/* Round to nearest even, as ggml; NaN stays a (quiet) NaN. */
static inline uint16_t st_f32_to_bf16(float f)
{
    uint32_t u = st_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 64);
    return (uint16_t)((u + (0x7fffu + ((u >> 16) & 1))) >> 16);
}

/* ---- rows -------------------------------------------------------------- */

/* True for the types st_dequant_row / st_quantize_row handle: F32, F16,
 * BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ3_S,
 * IQ3_XXS, IQ4_XS (and Q8_K for dequant only). */
bool st_quant_supported(enum st_dtype t);

/* dst[0..n) = the n elements stored in 'src' (n / block_elems blocks of
 * type t). Precondition (asserted): t supported, n a whole number of
 * blocks. src and dst are borrowed for the call and must not overlap. */
void st_dequant_row(enum st_dtype t, const void *src, float *dst, int64_t n);

/* Quantize n floats into n / block_elems blocks of type t (a weight type;
 * same preconditions). Q8_0 is exactly the activation quantizer below.
 * Q4_0 and the Q4_K..Q6_K / IQ quantizers are simple (no iterative search):
 * right format, modest quality. Q4_1, Q5_0, Q5_1, Q2_K and Q3_K search
 * their scales (least squares over candidate code sets, quant_lowbit.c). IQ3_S and IQ3_XXS search the grid exhaustively, so they
 * are slow (about 1 us per 4 weights); fine for tests and small tensors. */
void st_quantize_row(enum st_dtype t, const float *src, void *dst, int64_t n);

/* Activation quantizers of docs/design/ENGINE.md 2.11, bit-exact with ggml's CPU
 * reference: Q8_0 (d = amax/127, q = round(x/d)) and Q8_K (signed max maps
 * to -127, d fp32, bsums). n must be a multiple of 32 / 256. */
void st_quantize_row_q8_0(const float *x, struct st_block_q8_0 *y, int64_t n);
void st_quantize_row_q8_k(const float *x, struct st_block_q8_k *y, int64_t n);

/* The 6-bit (scale, min) pair j (0..7) of a Q4_K / Q5_K block's 12 scale
 * bytes (docs/design/ENGINE.md 2.5). Shared by kernels so nobody re-derives it. */
static inline void st_q4k_scale_min(int j, const uint8_t *s, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (uint8_t)((s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4));
        *m = (uint8_t)((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
    }
}

/* The 6-bit scale j (0..15, still offset by 32) of a Q3_K block's 12
 * scale bytes: low 4 bits from byte j (j < 8) or the high nibble of byte
 * j - 8, top 2 bits from bits 2*(j/4).. of byte 8 + j%4 (docs/GGUF.md). */
static inline int st_q3k_scale(int j, const uint8_t *s)
{
    int lo = j < 8 ? (s[j] & 0xf) : (s[j - 8] >> 4);
    int hi = (s[8 + (j & 3)] >> (2 * (j >> 2))) & 3;
    return lo | (hi << 4);
}

/* The 5th bits of a Q5_0 / Q5_1 block as one little-endian word. */
static inline uint32_t st_q5_qh(const uint8_t qh[4])
{
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 |
           (uint32_t)qh[3] << 24;
}

/* ggml's nearest_int: round half to even for |x| < 2^22. */
static inline int st_nearest_int(float x)
{
    float v = x + 12582912.f;
    int32_t i;
    memcpy(&i, &v, 4);
    return (i & 0x007fffff) - 0x00400000;
}

#endif /* STRATA_QUANT_H */

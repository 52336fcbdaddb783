/* test_quant.c -- the scalar dequantizers and quantizers (docs/design/ENGINE.md 2):
 * fp16/bf16 conversion, the compiled-in tables (against the extracted
 * tables in tests/data/quant-tables/), hand-built blocks with values computed here from the
 * formulas, quantize/dequantize round trips, and the activation
 * quantizers Q8_0 and Q8_K.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strata/quant.h"
#include "support.h"

/* ---- fp16 / bf16 -------------------------------------------------------- */

START_TEST(test_quant_fp16_known_values)
{
    ck_assert_uint_eq(st_f32_to_fp16(1.0f), 0x3c00);
    ck_assert_uint_eq(st_f32_to_fp16(-2.0f), 0xc000);
    ck_assert_uint_eq(st_f32_to_fp16(65504.0f), 0x7bff);
    ck_assert_uint_eq(st_f32_to_fp16(65520.0f), 0x7c00);           /* rounds to inf */
    ck_assert_uint_eq(st_f32_to_fp16(0x1p-24f), 0x0001);           /* smallest subnormal */
    ck_assert_uint_eq(st_f32_to_fp16(0x1p-25f), 0x0000);           /* tie -> even (0) */
    ck_assert_uint_eq(st_f32_to_fp16(0x1.8p-24f), 0x0002);         /* tie -> even (2) */
    ck_assert_uint_eq(st_f32_to_fp16(1.0f + 0x1p-11f), 0x3c00);    /* tie -> even */
    ck_assert_uint_eq(st_f32_to_fp16(1.0f + 0x1.8p-10f), 0x3c02);  /* tie -> even (up) */
    ck_assert_uint_eq(st_f32_to_fp16(-0.0f), 0x8000);
    ck_assert_uint_eq(st_f32_to_fp16(0x1.ffcp-15f), 0x0400);       /* rounds up into normals */
    ck_assert_uint_eq(st_f32_to_fp16(NAN) & 0x7e00, 0x7e00);
    ck_assert(st_fp16_to_f32(0x3555) > 0.33325f && st_fp16_to_f32(0x3555) < 0.33334f);
    ck_assert(isinf(st_fp16_to_f32(0xfc00)) && st_fp16_to_f32(0xfc00) < 0);
}
END_TEST

START_TEST(test_quant_fp16_round_trips_every_half)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = st_fp16_to_f32((uint16_t)h);
        if (isnan(f))
            continue;
        ck_assert_msg(st_f32_to_fp16(f) == h, "half 0x%04x -> %g -> 0x%04x", h, f,
                      st_f32_to_fp16(f));
    }
}
END_TEST

START_TEST(test_quant_bf16_rounds_to_nearest_even)
{
    ck_assert_uint_eq(st_f32_to_bf16(1.0f), 0x3f80);
    ck_assert_uint_eq(st_f32_to_bf16(st_bits_f32(0x3f808000)), 0x3f80);  /* tie, even */
    ck_assert_uint_eq(st_f32_to_bf16(st_bits_f32(0x3f818000)), 0x3f82);  /* tie, up to even */
    ck_assert_uint_eq(st_f32_to_bf16(st_bits_f32(0x3f808001)), 0x3f81);
    ck_assert(st_bf16_to_f32(0xc040) == -3.0f);
    ck_assert(isnan(st_bf16_to_f32(st_f32_to_bf16(NAN))));
}
END_TEST

/* ---- tables --------------------------------------------------------------- */

static int read_table(const char *name, long long *out, int cap)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/tests/data/quant-tables/%s", support_source_dir(), name);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    int n = 0;
    while (n < cap && fscanf(f, "%lli", &out[n]) == 1)
        n++;
    fclose(f);
    return n;
}

START_TEST(test_quant_tables_match_extracted_files)
{
    static long long v[512];
    ck_assert_msg(read_table("iq3s_grid.txt", v, 512) == 512,
                  "tests/data/quant-tables/iq3s_grid.txt missing or short");
    for (int i = 0; i < 512; i++)
        ck_assert_uint_eq(st_iq3s_grid[i], (uint32_t)v[i]);
    ck_assert_int_eq(read_table("iq3xxs_grid.txt", v, 512), 256);
    for (int i = 0; i < 256; i++)
        ck_assert_uint_eq(st_iq3xxs_grid[i], (uint32_t)v[i]);
    ck_assert_int_eq(read_table("ksigns_iq2xs.txt", v, 512), 128);
    for (int i = 0; i < 128; i++)
        ck_assert_uint_eq(st_ksigns_iq2xs[i], (uint8_t)v[i]);
    ck_assert_int_eq(read_table("kmask_iq2xs.txt", v, 512), 8);
    for (int i = 0; i < 8; i++)
        ck_assert_uint_eq(st_kmask_iq2xs[i], (uint8_t)v[i]);
    ck_assert_int_eq(read_table("kvalues_iq4nl.txt", v, 512), 16);
    for (int i = 0; i < 16; i++)
        ck_assert_int_eq(st_kvalues_iq4nl[i], (int)v[i]);
}
END_TEST

START_TEST(test_quant_tables_have_documented_structure)
{
    static const int kv[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
                                1, 13, 25, 38, 53, 69, 89, 113 };
    for (int i = 0; i < 128; i++)
        ck_assert_uint_eq(st_ksigns_iq2xs[i], i | (__builtin_popcount(i) & 1 ? 0x80 : 0));
    for (int i = 0; i < 8; i++)
        ck_assert_uint_eq(st_kmask_iq2xs[i], 1u << i);
    for (int i = 0; i < 16; i++)
        ck_assert_int_eq(st_kvalues_iq4nl[i], kv[i]);
    for (int i = 0; i < 512; i++)
        for (int j = 0; j < 4; j++) {
            int m = (st_iq3s_grid[i] >> (8 * j)) & 0xff;
            ck_assert(m % 2 == 1 && m <= 15);
        }
    for (int i = 0; i < 256; i++)
        for (int j = 0; j < 4; j++) {
            int m = (st_iq3xxs_grid[i] >> (8 * j)) & 0xff;
            ck_assert(m == 4 || m == 12 || m == 20 || m == 28 || m == 36 || m == 44 ||
                      m == 52 || m == 62);
        }
}
END_TEST

/* ---- hand-built blocks ---------------------------------------------------- */

static void expect_row(enum st_dtype t, const void *blk, const float *want, int n)
{
    float *got = malloc(sizeof(float) * (size_t)n);
    st_dequant_row(t, blk, got, n);
    for (int i = 0; i < n; i++)
        ck_assert_msg(fabsf(got[i] - want[i]) <= 1e-6f * (1 + fabsf(want[i])),
                      "%s element %d: got %g want %g", st_dtype_info(t)->name, i, got[i], want[i]);
    free(got);
}

START_TEST(test_quant_dequant_q8_0_and_q4_0)
{
    struct st_block_q8_0 a;
    struct st_block_q4_0 b;
    float want[32];
    a.d = 0x3800;                                  /* 0.5 */
    for (int j = 0; j < 32; j++) {
        a.qs[j] = (int8_t)(j * 8 - 128);
        want[j] = 0.5f * (float)(j * 8 - 128);
    }
    expect_row(ST_DTYPE_Q8_0, &a, want, 32);
    b.d = 0x4000;                                  /* 2.0 */
    for (int j = 0; j < 16; j++) {
        b.qs[j] = (uint8_t)(j | ((15 - j) << 4));  /* low nibbles first half */
        want[j] = 2.0f * (float)(j - 8);
        want[j + 16] = 2.0f * (float)(7 - j);
    }
    expect_row(ST_DTYPE_Q4_0, &b, want, 32);
}
END_TEST

/* The 12 scale bytes, packed as docs/design/ENGINE.md 2.5 describes in words. */
static void pack_k_scales(const int *sc, const int *m, uint8_t *s)
{
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
        s[j + 4] = (uint8_t)(m[j] | ((m[j + 4] >> 4) << 6));
        s[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
    }
}

static const int ksc[8] = { 1, 2, 3, 4, 17, 33, 50, 63 };
static const int kmn[8] = { 5, 6, 7, 8, 20, 40, 60, 63 };

START_TEST(test_quant_dequant_q4_k)
{
    struct st_block_q4_k b;
    float want[256];
    b.d = 0x3c00;                                  /* 1.0 */
    b.dmin = 0x3800;                               /* 0.5 */
    pack_k_scales(ksc, kmn, b.scales);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            int lo = (l + c) & 15, hi = 15 - (l & 15);
            b.qs[32 * c + l] = (uint8_t)(lo | (hi << 4));
            want[64 * c + l] = (float)(ksc[2 * c] * lo) - 0.5f * (float)kmn[2 * c];
            want[64 * c + 32 + l] = (float)(ksc[2 * c + 1] * hi) - 0.5f * (float)kmn[2 * c + 1];
        }
    expect_row(ST_DTYPE_Q4_K, &b, want, 256);
}
END_TEST

START_TEST(test_quant_dequant_q5_k)
{
    struct st_block_q5_k b;
    float want[256];
    b.d = 0x3c00;
    b.dmin = 0x4000;                               /* 2.0 */
    pack_k_scales(ksc, kmn, b.scales);
    for (int l = 0; l < 32; l++)
        b.qh[l] = (uint8_t)(l * 37 + 11);
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++) {
            int lo = (l * 3 + c) & 15, hi = (l * 5 + 1) & 15;
            b.qs[32 * c + l] = (uint8_t)(lo | (hi << 4));
            int q0 = lo + 16 * ((b.qh[l] >> (2 * c)) & 1);
            int q1 = hi + 16 * ((b.qh[l] >> (2 * c + 1)) & 1);
            want[64 * c + l] = (float)(ksc[2 * c] * q0) - 2.0f * (float)kmn[2 * c];
            want[64 * c + 32 + l] = (float)(ksc[2 * c + 1] * q1) - 2.0f * (float)kmn[2 * c + 1];
        }
    expect_row(ST_DTYPE_Q5_K, &b, want, 256);
}
END_TEST

START_TEST(test_quant_dequant_q6_k)
{
    struct st_block_q6_k b;
    float want[256];
    int q[256];
    memset(&b, 0, sizeof(b));
    b.d = 0x3400;                                  /* 0.25 */
    for (int i = 0; i < 16; i++)
        b.scales[i] = (int8_t)(i * 9 - 70);
    /* Pack codes q in [-32, 31] the other way round: by the layout of
     * ql/qh bytes (two halves, four 32-element quarters). */
    for (int e = 0; e < 256; e++)
        q[e] = ((e * 29 + 7) % 64) - 32;
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++) {
            int u0 = q[128 * h + l] + 32, u1 = q[128 * h + 32 + l] + 32;
            int u2 = q[128 * h + 64 + l] + 32, u3 = q[128 * h + 96 + l] + 32;
            b.ql[64 * h + l] = (uint8_t)((u0 & 15) | ((u2 & 15) << 4));
            b.ql[64 * h + 32 + l] = (uint8_t)((u1 & 15) | ((u3 & 15) << 4));
            b.qh[32 * h + l] = (uint8_t)((u0 >> 4) | ((u1 >> 4) << 2) | ((u2 >> 4) << 4) |
                                         ((u3 >> 4) << 6));
        }
    for (int e = 0; e < 256; e++)
        want[e] = 0.25f * (float)b.scales[e / 16] * (float)q[e];
    expect_row(ST_DTYPE_Q6_K, &b, want, 256);
    /* one spot check by hand: e = 0 -> q = (0*29+7)%64-32 = -25, scale -70 */
    ck_assert(want[0] == 0.25f * -70.f * -25.f);
}
END_TEST

START_TEST(test_quant_dequant_iq3_s)
{
    struct st_block_iq3_s b;
    float want[256];
    memset(&b, 0, sizeof(b));
    b.d = 0x3800;                                  /* 0.5 */
    for (int ib = 0; ib < 8; ib++) {
        int s = (ib * 5 + 3) & 15;
        b.scales[ib / 2] |= (uint8_t)(s << (4 * (ib & 1)));
        for (int k = 0; k < 8; k++) {
            int idx = (ib * 8 + k) * 37 % 512;
            b.qs[8 * ib + k] = (uint8_t)(idx & 255);
            b.qh[ib] |= (uint8_t)((idx >> 8) << k);
            for (int j = 0; j < 4; j++) {
                int e = 32 * ib + 4 * k + j;
                bool neg = (e * 7) % 3 == 0;
                if (neg)
                    b.signs[e / 8] |= (uint8_t)(1 << (e % 8));  /* bit per weight, in order */
                float mag = (float)((st_iq3s_grid[idx] >> (8 * j)) & 255);
                want[e] = 0.5f * (float)(1 + 2 * s) * (neg ? -mag : mag);
            }
        }
    }
    expect_row(ST_DTYPE_IQ3_S, &b, want, 256);
}
END_TEST

START_TEST(test_quant_dequant_iq3_xxs)
{
    struct st_block_iq3_xxs b;
    float want[256];
    memset(&b, 0, sizeof(b));
    b.d = 0x3c00;                                  /* 1.0 */
    for (int ib = 0; ib < 8; ib++) {
        uint32_t s = (uint32_t)(15 - ib), a = s << 28;
        float db = (0.5f + (float)s) * 0.5f;
        for (int l = 0; l < 4; l++) {
            uint32_t field = (uint32_t)(ib * 4 + l) * 13 % 128;
            a |= field << (7 * l);
            int signs = (int)field | (__builtin_popcount(field) & 1 ? 0x80 : 0);
            for (int j = 0; j < 8; j++) {
                int gi = (ib * 8 + 2 * l + j / 4) * 11 % 256;
                b.qs[8 * ib + 2 * l + j / 4] = (uint8_t)gi;
                float mag = (float)((st_iq3xxs_grid[gi] >> (8 * (j % 4))) & 255);
                want[32 * ib + 8 * l + j] = db * ((signs >> j) & 1 ? -mag : mag);
            }
        }
        for (int k = 0; k < 4; k++)
            b.qs[64 + 4 * ib + k] = (uint8_t)(a >> (8 * k));
    }
    expect_row(ST_DTYPE_IQ3_XXS, &b, want, 256);
}
END_TEST

START_TEST(test_quant_dequant_iq4_xs)
{
    struct st_block_iq4_xs b;
    float want[256];
    memset(&b, 0, sizeof(b));
    b.d = 0x3800;                                  /* 0.5 */
    for (int ib = 0; ib < 8; ib++) {
        int ls = (ib * 23 + 5) % 64;
        b.scales_l[ib / 2] |= (uint8_t)((ls & 15) << (4 * (ib & 1)));
        b.scales_h |= (uint16_t)((ls >> 4) << (2 * ib));
        for (int j = 0; j < 16; j++) {
            int lo = (j + ib) & 15, hi = (j * 7 + ib) & 15;
            b.qs[16 * ib + j] = (uint8_t)(lo | (hi << 4));
            want[32 * ib + j] = 0.5f * (float)(ls - 32) * (float)st_kvalues_iq4nl[lo];
            want[32 * ib + 16 + j] = 0.5f * (float)(ls - 32) * (float)st_kvalues_iq4nl[hi];
        }
    }
    expect_row(ST_DTYPE_IQ4_XS, &b, want, 256);
}
END_TEST

/* ---- the five older / low-bit types -------------------------------------- */

START_TEST(test_quant_dequant_q4_1_adds_min)
{
    struct st_block_q4_1 b;
    float want[32];
    b.d = 0x4000;                                  /* 2.0 */
    b.m = 0xc200;                                  /* -3.0: added, not subtracted */
    for (int j = 0; j < 16; j++) {
        b.qs[j] = (uint8_t)(j | ((15 - j) << 4));  /* low nibbles = x[0..15] */
        want[j] = 2.0f * (float)j - 3.0f;
        want[j + 16] = 2.0f * (float)(15 - j) - 3.0f;
    }
    expect_row(ST_DTYPE_Q4_1, &b, want, 32);
    ck_assert(want[0] == -3.0f && want[16] == 27.0f);
}
END_TEST

/* Codes q[0..32) in 0..31 into qs (nibbles) and qh (bit e = q[e] >> 4, LE). */
static void pack_q5(const int *q, uint8_t *qh, uint8_t *qs)
{
    uint32_t h = 0;
    for (int e = 0; e < 32; e++)
        h |= (uint32_t)(q[e] >> 4) << e;
    for (int k = 0; k < 4; k++)
        qh[k] = (uint8_t)(h >> (8 * k));
    for (int j = 0; j < 16; j++)
        qs[j] = (uint8_t)((q[j] & 15) | ((q[j + 16] & 15) << 4));
}

START_TEST(test_quant_dequant_q5_0_and_q5_1)
{
    struct st_block_q5_0 a;
    struct st_block_q5_1 b;
    int q[32];
    float want[32];
    for (int e = 0; e < 32; e++)
        q[e] = (e * 13 + 31) % 32;                 /* q[0] = 31, q[31] = 18 */
    a.d = 0x3800;                                  /* 0.5 */
    pack_q5(q, a.qh, a.qs);
    ck_assert_uint_eq(a.qh[0] & 1, 1);             /* element 0's 5th bit: qh[0] bit 0 */
    ck_assert_uint_eq(a.qh[3] >> 7, 1);            /* element 31's: qh[3] bit 7 */
    for (int e = 0; e < 32; e++)
        want[e] = 0.5f * (float)(q[e] - 16);
    expect_row(ST_DTYPE_Q5_0, &a, want, 32);
    ck_assert(want[0] == 7.5f);
    b.d = 0x3400;                                  /* 0.25 */
    b.m = 0xbc00;                                  /* -1.0 */
    pack_q5(q, b.qh, b.qs);
    for (int e = 0; e < 32; e++)
        want[e] = 0.25f * (float)q[e] - 1.0f;
    expect_row(ST_DTYPE_Q5_1, &b, want, 32);
    /* one literal block: only element 20 has its 5th bit (qh bit 20 = qh[2] bit 4) */
    memset(&a, 0, sizeof(a));
    a.d = 0x3c00;
    a.qh[2] = 0x10;
    for (int e = 0; e < 32; e++)
        want[e] = e == 20 ? 0.0f : -16.0f;
    expect_row(ST_DTYPE_Q5_0, &a, want, 32);
}
END_TEST

/* 2-bit codes q[0..256) into the Q2_K / Q3_K qs layout: byte 32h + l holds
 * elements 128h + 32g + l at bits 2g, g = 0..3. */
static void pack_2bit(const int *q, uint8_t *qs)
{
    for (int h = 0; h < 2; h++)
        for (int l = 0; l < 32; l++)
            qs[32 * h + l] = (uint8_t)(q[128 * h + l] | (q[128 * h + 32 + l] << 2) |
                                       (q[128 * h + 64 + l] << 4) | (q[128 * h + 96 + l] << 6));
}

START_TEST(test_quant_dequant_q2_k)
{
    struct st_block_q2_k b;
    int q[256], sc[16], mn[16];
    float want[256];
    b.d = 0x3800;                                  /* 0.5 */
    b.dmin = 0x3400;                               /* 0.25 */
    for (int g = 0; g < 16; g++) {
        sc[g] = (g * 7 + 3) & 15;
        mn[g] = 15 - g;
        b.scales[g] = (uint8_t)(sc[g] | (mn[g] << 4));   /* low nibble scale, high min */
    }
    for (int e = 0; e < 256; e++)
        q[e] = (e * 5 + e / 64) & 3;
    pack_2bit(q, b.qs);
    for (int e = 0; e < 256; e++)
        want[e] = 0.5f * (float)sc[e / 16] * (float)q[e] - 0.25f * (float)mn[e / 16];
    expect_row(ST_DTYPE_Q2_K, &b, want, 256);
    /* literal: only bits 6-7 of qs[33] set = element 128 + 96 + 1 = 225, q = 3 */
    memset(&b, 0, sizeof(b));
    b.d = 0x3c00;
    b.scales[225 / 16] = 0x02;
    b.qs[33] = 0xc0;
    memset(want, 0, sizeof(want));
    want[225] = 6.0f;
    expect_row(ST_DTYPE_Q2_K, &b, want, 256);
}
END_TEST

/* 16 six-bit Q3_K scales into 12 bytes, as docs/GGUF.md states it in
 * words: low nibbles of scales 0-7 in bytes 0-7 (low half), of 8-15 in
 * the high halves of bytes 0-7; the top 2 bits of scale j in byte 8 + j%4
 * at bit 2*(j/4). */
static void pack_q3_scales(const int *s, uint8_t *out)
{
    memset(out, 0, 12);
    for (int j = 0; j < 16; j++) {
        out[j % 8] |= (uint8_t)((s[j] & 15) << (j < 8 ? 0 : 4));
        out[8 + j % 4] |= (uint8_t)((s[j] >> 4) << (2 * (j / 4)));
    }
}

START_TEST(test_quant_dequant_q3_k)
{
    struct st_block_q3_k b;
    int q[256], lo[256], s6[16];
    float want[256];
    memset(&b, 0, sizeof(b));
    b.d = 0x3400;                                  /* 0.25 */
    for (int j = 0; j < 16; j++)
        s6[j] = (j * 23 + 5) % 64;
    pack_q3_scales(s6, b.scales);
    for (int j = 0; j < 16; j++)
        ck_assert_int_eq(st_q3k_scale(j, b.scales), s6[j]);
    for (int e = 0; e < 256; e++) {
        q[e] = ((e * 11 + e / 32) % 8) - 4;        /* -4..3 */
        int u = q[e] + 4;
        lo[e] = u & 3;
        if (u & 4)                                 /* set = no -4; bit 4h+g of hmask[l] */
            b.hmask[e % 32] |= (uint8_t)(1 << (e / 32));
    }
    pack_2bit(lo, b.qs);
    for (int e = 0; e < 256; e++)
        want[e] = 0.25f * (float)(s6[e / 16] - 32) * (float)q[e];
    expect_row(ST_DTYPE_Q3_K, &b, want, 256);
    /* literal: all-zero codes and hmask are q = -4 everywhere; scale 0 = 63
     * (byte 0 low nibble 0xf, byte 8 bits 0-1 = 3) gives d*31*-4 */
    memset(&b, 0, sizeof(b));
    b.d = 0x3c00;
    b.scales[0] = 0x0f;
    b.scales[8] = 0x03;
    b.hmask[5] = 0x01;                             /* element 5: q = 0 */
    for (int e = 0; e < 256; e++)
        want[e] = e >= 16 ? 128.0f : (e == 5 ? 0.0f : -124.0f);
    expect_row(ST_DTYPE_Q3_K, &b, want, 256);
}
END_TEST

/* ---- round trips ------------------------------------------------------------ */

static uint64_t rng = 88172645463325252ull;

static float gauss(void)                           /* Irwin-Hall approximation */
{
    float s = 0;
    for (int i = 0; i < 12; i++) {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        s += (float)(rng >> 40) / 16777216.0f;
    }
    return s - 6.0f;
}

/* Relative RMS error of quantize -> dequantize on n gaussian values. */
static double round_trip(enum st_dtype t, int n)
{
    float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
    void *q = malloc(st_dtype_row_bytes(t, n));
    double se = 0, ss = 0;
    for (int i = 0; i < n; i++)
        x[i] = 0.05f * gauss();
    st_quantize_row(t, x, q, n);
    st_dequant_row(t, q, y, n);
    for (int i = 0; i < n; i++) {
        ck_assert(isfinite(y[i]));
        se += (double)(x[i] - y[i]) * (x[i] - y[i]);
        ss += (double)x[i] * x[i];
    }
    free(x);
    free(y);
    free(q);
    return sqrt(se / ss);
}

START_TEST(test_quant_round_trip_within_bounds)
{
    static const struct { enum st_dtype t; double bound; } cases[] = {
        /* measured: F16 .0002 BF16 .0017 Q8_0 .0052 Q4_0 .084 Q4_K .077 Q5_K .038
         * Q6_K .019 IQ4_XS .078 IQ3_S .135 IQ3_XXS .192; bounds leave ~30% slack */
        { ST_DTYPE_F32, 0.0 },      { ST_DTYPE_F16, 4e-4 },    { ST_DTYPE_BF16, 3e-3 },
        { ST_DTYPE_Q8_0, 0.008 },   { ST_DTYPE_Q4_0, 0.11 },   { ST_DTYPE_Q4_K, 0.10 },
        { ST_DTYPE_Q5_K, 0.05 },    { ST_DTYPE_Q6_K, 0.025 },  { ST_DTYPE_IQ4_XS, 0.10 },
        { ST_DTYPE_IQ3_S, 0.18 },   { ST_DTYPE_IQ3_XXS, 0.25 },
        /* searched (quant_lowbit.c): Q4_1 .067 Q5_0 .039 Q5_1 .033 Q2_K .258 Q3_K .143 */
        { ST_DTYPE_Q4_1, 0.09 },    { ST_DTYPE_Q5_0, 0.05 },   { ST_DTYPE_Q5_1, 0.045 },
        { ST_DTYPE_Q2_K, 0.33 },    { ST_DTYPE_Q3_K, 0.19 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        double e = round_trip(cases[i].t, 4096);
        if (getenv("STRATA_QUANT_PRINT"))
            printf("%s %.4f\n", st_dtype_info(cases[i].t)->name, e);
        ck_assert_msg(e <= cases[i].bound, "%s: relative rms error %g > %g",
                      st_dtype_info(cases[i].t)->name, e, cases[i].bound);
    }
}
END_TEST

START_TEST(test_quant_zero_rows_stay_zero)
{
    static const enum st_dtype types[] = { ST_DTYPE_Q8_0, ST_DTYPE_Q4_0, ST_DTYPE_Q4_K,
                                           ST_DTYPE_Q5_K, ST_DTYPE_Q6_K, ST_DTYPE_IQ4_XS,
                                           ST_DTYPE_IQ3_S, ST_DTYPE_IQ3_XXS, ST_DTYPE_Q4_1,
                                           ST_DTYPE_Q5_0, ST_DTYPE_Q5_1, ST_DTYPE_Q2_K,
                                           ST_DTYPE_Q3_K };
    float x[256] = { 0 }, y[256];
    uint8_t q[512];
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        st_quantize_row(types[i], x, q, 256);
        st_dequant_row(types[i], q, y, 256);
        for (int j = 0; j < 256; j++)
            ck_assert_msg(y[j] == 0.0f, "%s: %g", st_dtype_info(types[i])->name, y[j]);
    }
}
END_TEST

/* The affine types store a constant row through their min alone (and a
 * positive constant through Q2_K's d*sc*q, since its min term is <= 0). */
START_TEST(test_quant_constant_rows_round_trip)
{
    static const enum st_dtype types[] = { ST_DTYPE_Q4_1, ST_DTYPE_Q5_1, ST_DTYPE_Q2_K,
                                           ST_DTYPE_Q5_0, ST_DTYPE_Q3_K };
    float x[256], y[256];
    uint8_t q[512];
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        for (int sgn = -1; sgn <= 1; sgn += 2) {
            for (int j = 0; j < 256; j++)
                x[j] = 0.3f * (float)sgn;
            st_quantize_row(types[i], x, q, 256);
            st_dequant_row(types[i], q, y, 256);
            for (int j = 0; j < 256; j++)
                ck_assert_msg(fabsf(y[j] - x[j]) < 2e-3f, "%s: %g for %g",
                              st_dtype_info(types[i])->name, y[j], x[j]);
        }
}
END_TEST

/* ---- activation quantizers -------------------------------------------------- */

START_TEST(test_quant_q8_0_activation_formula)
{
    float x[32];
    struct st_block_q8_0 b;
    for (int j = 0; j < 32; j++)
        x[j] = (float)(j - 10) * 0.25f;            /* amax = 21 * 0.25 = 5.25 */
    st_quantize_row_q8_0(x, &b, 32);
    float d = 5.25f / 127.f;
    ck_assert_uint_eq(b.d, st_f32_to_fp16(d));
    for (int j = 0; j < 32; j++)
        ck_assert_int_eq(b.qs[j], (int)roundf(x[j] * (1.0f / d)));
    ck_assert_int_eq(b.qs[31], 127);
}
END_TEST

START_TEST(test_quant_q8_k_signed_max_and_bsums)
{
    float x[512];
    struct st_block_q8_k b[2];
    for (int i = 0; i < 512; i++)
        x[i] = 0.3f * gauss();
    x[77] = 2.5f;                                  /* the block's largest |x|, positive */
    x[256 + 3] = -4.0f;                            /* negative max in block 2 */
    st_quantize_row_q8_k(x, b, 512);
    ck_assert_int_eq(b[0].qs[77], -127);           /* signed max maps to -127 */
    ck_assert_int_eq(b[1].qs[3], -127);
    ck_assert(b[0].d < 0 && b[1].d > 0);
    for (int k = 0; k < 2; k++) {
        float iscale = 1.0f / b[k].d;
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int j = 0; j < 16; j++)
                sum += b[k].qs[16 * g + j];
            ck_assert_int_eq(b[k].bsums[g], sum);
        }
        for (int j = 0; j < 256; j++) {
            int want = (int)lrintf(iscale * x[256 * k + j]);
            ck_assert_int_eq(b[k].qs[j], want > 127 ? 127 : want);
        }
    }
    float y[512];
    st_dequant_row(ST_DTYPE_Q8_K, b, y, 512);
    for (int i = 0; i < 512; i++)
        ck_assert(fabsf(y[i] - x[i]) <= fabsf(b[i / 256].d) * 0.5001f);
}
END_TEST

static Suite *quant_suite(void)
{
    Suite *s = suite_create("quant");
    TCase *conv = tcase_create("conversions");
    TCase *tables = tcase_create("tables");
    TCase *deq = tcase_create("dequant");
    TCase *rt = tcase_create("round_trip");
    TCase *act = tcase_create("activations");

    tcase_add_test(conv, test_quant_fp16_known_values);
    tcase_add_test(conv, test_quant_fp16_round_trips_every_half);
    tcase_add_test(conv, test_quant_bf16_rounds_to_nearest_even);
    tcase_add_test(tables, test_quant_tables_match_extracted_files);
    tcase_add_test(tables, test_quant_tables_have_documented_structure);
    tcase_add_test(deq, test_quant_dequant_q8_0_and_q4_0);
    tcase_add_test(deq, test_quant_dequant_q4_k);
    tcase_add_test(deq, test_quant_dequant_q5_k);
    tcase_add_test(deq, test_quant_dequant_q6_k);
    tcase_add_test(deq, test_quant_dequant_iq3_s);
    tcase_add_test(deq, test_quant_dequant_iq3_xxs);
    tcase_add_test(deq, test_quant_dequant_iq4_xs);
    tcase_add_test(deq, test_quant_dequant_q4_1_adds_min);
    tcase_add_test(deq, test_quant_dequant_q5_0_and_q5_1);
    tcase_add_test(deq, test_quant_dequant_q2_k);
    tcase_add_test(deq, test_quant_dequant_q3_k);
    tcase_add_test(rt, test_quant_round_trip_within_bounds);
    tcase_add_test(rt, test_quant_zero_rows_stay_zero);
    tcase_add_test(rt, test_quant_constant_rows_round_trip);
    tcase_set_timeout(rt, 60);
    tcase_add_test(act, test_quant_q8_0_activation_formula);
    tcase_add_test(act, test_quant_q8_k_signed_max_and_bsums);
    suite_add_tcase(s, conv);
    suite_add_tcase(s, tables);
    suite_add_tcase(s, deq);
    suite_add_tcase(s, rt);
    suite_add_tcase(s, act);
    return s;
}

int main(void)
{
    return support_run_suite(quant_suite(), CK_FORK);
}

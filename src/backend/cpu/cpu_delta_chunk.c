/* cpu_delta_chunk.c -- the chunked form of the gated delta rule for a run
 * of rows of one slot (a prompt read): the same result as the row-by-row
 * recurrence in cpu_ssm.c, to rounding, with the D x D work as the
 * kernels' f32 dot (one row against eight per call, AVX2 where the CPU has
 * it) instead of two passes over the state per row.
 *
 * The math (per v head, chunk rows t = 0..L-1, state M0 at its start,
 * g_t the row's decay, G_t = g_0 ... g_t, b_t = sigmoid(beta)). The
 * recurrence M_t = g_t M_{t-1} + d_t k_t^T with
 * d_t = b_t (v_t - g_t M_{t-1} k_t) unrolls to
 *   M_t = G_t M0 + sum_{s<=t} (G_t / G_s) d_s k_s^T,
 * so the d_t solve a unit lower triangular system (the UT transform):
 *   d_t = b_t (v_t - G_t M0 k_t) - sum_{s<t} b_t (G_t / G_s) (k_t . k_s) d_s,
 * and then
 *   o_t = (G_t M0 q_t + sum_{s<=t} (G_t / G_s) (q_t . k_s) d_s) / sqrt(D),
 *   M_L = G_{L-1} M0 + sum_s (G_{L-1} / G_s) d_s k_s^T.
 * G is kept as a log (a sum of softplus * a), and every ratio taken as
 * exp(log G_t - log G_s) <= 1, so a strong decay underflows to zero
 * instead of dividing by it. Cost per chunk: 3 L D^2 multiply-adds (M0 k,
 * M0 q, the new state) plus L^2 D (the k.k and q.k dots, the solve, the
 * outputs), about the recurrence's 3 L D^2, in longer blocked dots; with
 * D = 128, 32 v heads and L = 32 a 256-row read took ~75 us a row against
 * ~82 for the recurrence (one thread, AVX2): a small gain on the CPU.
 */
#include <math.h>
#include <string.h>

#include "cpu_ssm.h"

/* y[r] = w . x_r for r < rows, x_r = x + r * xs: with the backend's f32
 * dot (eight x rows per call, w read once for them) where it has one. */
static void dots(const struct delta_job *j, int64_t n, const float *w, const float *x,
                 int64_t xs, int64_t rows, float *y)
{
    if (!j->dot) {
        for (int64_t r = 0; r < rows; r++)
            y[r] = cpu_dot8(w, x + r * xs, n);
        return;
    }
    for (int64_t r = 0; r < rows; r += CPU_NX_MAX) {
        int nx = rows - r < CPU_NX_MAX ? (int)(rows - r) : CPU_NX_MAX;
        j->dot(n, w, x + r * xs, (size_t)xs * sizeof(float), nx, y + r, 1);
    }
}

size_t cpu_delta_chunk_floats(int64_t d)
{
    return (size_t)(6 * CPU_DELTA_CHUNK * d + 4 * CPU_DELTA_CHUNK + d);
}

/* n rounded up to whole eights (the kernels' dot length; CPU_DELTA_CHUNK
 * is one). */
static int64_t eights(int64_t n) { return (n + 7) / 8 * 8; }

void cpu_delta_chunk(const struct delta_job *j, int64_t r0, int64_t len, int64_t h, float *m,
                     float *scratch)
{
    const int64_t ch = CPU_DELTA_CHUNK, d = j->d, c3 = (2 * j->hk + j->hv) * d;
    /* rows t of the chunk: q, k (normalised), the right-hand sides u, o;
     * transposed (d rows of ch): the d_t (dt, zero where not yet known) and
     * k; log G_t, b_t; two rows of ch (dots, weights), and d (y) */
    float *q = scratch, *k = q + ch * d, *u = k + ch * d, *o = u + ch * d;
    float *dt = o + ch * d, *kt = dt + ch * d, *lg = kt + ch * d, *b = lg + ch;
    float *dr = b + ch, *wr = dr + ch, *y = wr + ch;
    float sum = 0.0f;
    for (int64_t t = 0; t < len; t++) {
        float ld;
        cpu_delta_prep(j, r0 + t, h, q + t * d, k + t * d, &ld, &b[t]);
        sum += ld;
        lg[t] = sum;
    }
    /* u_t = b_t (v_t - G_t M0 k_t), o_t = G_t M0 q_t: one pass over M0 */
    for (int64_t row = 0; row < d; row++) {
        dots(j, d, m + row * d, k, d, len, dr);
        dots(j, d, m + row * d, q, d, len, wr);
        for (int64_t t = 0; t < len; t++)
            u[t * d + row] = dr[t], o[t * d + row] = wr[t];
    }
    for (int64_t t = 0; t < len; t++) {
        const float *v = j->qkv + (r0 + t) * c3 + 2 * j->hk * d + h * d;
        float gt = expf(lg[t]);
        for (int64_t row = 0; row < d; row++) {
            u[t * d + row] = b[t] * (v[row] - gt * u[t * d + row]);
            o[t * d + row] *= gt;
        }
    }
    memset(dt, 0, (size_t)(ch * d) * sizeof(float));
    for (int64_t i = 0; i < d; i++)
        for (int64_t s = 0; s < ch; s++)
            kt[i * ch + s] = s < len ? k[s * d + i] : 0.0f;
    /* forward substitution: d_t = u_t - sum_{s<t} b_t (G_t / G_s) (k_t . k_s) d_s,
     * column t of dt, from the columns before it (the rest still zero) */
    for (int64_t t = 0; t < len; t++) {
        int64_t n8 = eights(t);
        dots(j, d, k + t * d, k, d, t, dr);
        for (int64_t s = 0; s < n8; s++)
            wr[s] = s < t ? -b[t] * expf(lg[t] - lg[s]) * dr[s] : 0.0f;
        if (t > 0)
            dots(j, n8, wr, dt, ch, d, y);
        for (int64_t i = 0; i < d; i++)
            dt[i * ch + t] = u[t * d + i] + (t > 0 ? y[i] : 0.0f);
    }
    /* o_t += sum_{s<=t} (G_t / G_s) (q_t . k_s) d_s */
    float scale = 1.0f / sqrtf((float)d);
    for (int64_t t = 0; t < len; t++) {
        int64_t n8 = eights(t + 1);
        float *dst = j->out + (r0 + t) * j->hv * d + h * d;
        dots(j, d, q + t * d, k, d, t + 1, dr);
        for (int64_t s = 0; s < n8; s++)
            wr[s] = s <= t ? expf(lg[t] - lg[s]) * dr[s] : 0.0f;
        dots(j, n8, wr, dt, ch, d, y);
        for (int64_t i = 0; i < d; i++)
            dst[i] = (o[t * d + i] + y[i]) * scale;
    }
    /* M = G_{L-1} M0 + sum_s (G_{L-1} / G_s) d_s k_s^T, as dots over s of
     * the transposes (dt's columns scaled in place; zero past len) */
    int64_t n8 = eights(len);
    for (int64_t s = 0; s < len; s++)
        wr[s] = expf(lg[len - 1] - lg[s]);
    for (int64_t i = 0; i < d; i++)
        for (int64_t s = 0; s < len; s++)
            dt[i * ch + s] *= wr[s];
    float gl = expf(lg[len - 1]);
    for (int64_t row = 0; row < d; row++) {
        float *mr = m + row * d;
        dots(j, n8, dt + row * ch, kt, ch, d, y);
        for (int64_t i = 0; i < d; i++)
            mr[i] = mr[i] * gl + y[i];
    }
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_kernels_ref_bf16: the operations of a bf16 set (kernels.h, "bf16 on dot-product units") in
 * scalar C, one element at a time in the contract's order. ref widens bf16 calls; they are the oracle
 * tests/test_kernel_pairs.c holds every table's set to, and the neon_bf16 table's packs (ref.h). */
#include <float.h>
#include <math.h>
#include <stdint.h>

#include "kernels/half.h"
#include "kernels/kernels.h"
#include "kernels/ref/ref.h"

static int64_t round_up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

void fa_ref_bf16_pack_pairs(int64_t rows, int64_t dim, const uint16_t *src, int64_t src_stride, uint16_t *dst,
                            int64_t ld)
{
    int64_t k_pad = round_up(dim, FA_REF_BF16_PAD_K);
    for (int64_t x = 0; x < k_pad; x++)
        for (int64_t r = 0; r < ld; r++)
            dst[(x / 2) * 2 * ld + 2 * r + x % 2] = r < rows && x < dim ? src[r * src_stride + x] : 0;
}

static int bf16_finite(uint16_t h)
{
    return (h & 0x7f80u) != 0x7f80u;
}

int fa_ref_bf16_pack_rows_t(int64_t cols, int64_t dim, const uint16_t *src, int64_t src_stride, uint16_t *dst,
                            int64_t ld)
{
    int finite = 1;
    for (int64_t x = 0; x < dim; x++)
        for (int64_t c = 0; c < ld; c++) {
            uint16_t h = c < cols ? src[c * src_stride + x] : 0;
            finite &= bf16_finite(h);
            dst[x * ld + c] = h;
        }
    return finite;
}

int fa_ref_bf16_pack_rows_pairs(int64_t rows, int64_t rows_pad, int64_t dim, const uint16_t *src,
                                int64_t src_stride, uint16_t *dst, int64_t ldd)
{
    int finite = 1;
    for (int64_t r = 0; r < rows_pad; r++)
        for (int64_t x = 0; x < ldd; x++) {
            uint16_t h = r < rows && x < dim ? src[r * src_stride + x] : 0;
            finite &= bf16_finite(h);
            dst[(r / 2) * 2 * ldd + 2 * x + r % 2] = h;
        }
    return finite;
}

/* bf16 of a probability or score gradient, rounded to nearest even, subnormals flushed as the
 * conversion units do (probabilities are never subnormal: every table's exp flushes them) */
static uint16_t probability_bf16(float p)
{
    return fabsf(p) < FLT_MIN ? (uint16_t)(fa_half_float_bits(p) >> 16 & 0x8000u) : fa_bf16_from_f32(p);
}

static void ref_rows_of(int64_t n, const float *src, uint16_t *dst)
{
    for (int64_t i = 0; i < n; i++) dst[i] = probability_bf16(src[i]);
}

static void ref_pairs_of(int64_t ld, int64_t cols, const float *p, uint16_t *pp)
{
    int64_t c_pad = round_up(cols, FA_REF_BF16_PAD_K);
    for (int64_t c = 0; c < c_pad; c++)
        for (int64_t r = 0; r < ld; r++)
            pp[(c / 2) * 2 * ld + 2 * r + c % 2] = c < cols ? probability_bf16(p[c * ld + r]) : 0;
}

static void ref_dot(int64_t M, int64_t N, int64_t K, const uint16_t *a, int64_t lda, const uint16_t *b,
                    int64_t ldb, float *c, int64_t ldc, float alpha, int accumulate)
{
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            float sum = accumulate ? c[m * ldc + n] : 0.0f;
            for (int64_t k = 0; k < K; k++)
                sum += fa_bf16_to_f32(a[m * lda + k]) * fa_bf16_to_f32(b[(k / 2) * 2 * ldb + 2 * n + k % 2]);
            c[m * ldc + n] = accumulate ? sum : alpha * sum;
        }
}

/* ref's float softmax over the transposed accumulator, then pairs_of: the operations' contract,
 * one after the other. */
static void ref_online_softmax_pairs(int64_t rows, int64_t ld, int64_t cols, float scale, float *s,
                                     float *row_max, float *row_sum, float *acc, int64_t acc_dim,
                                     uint16_t *pp)
{
    fa_ref_online_softmax_t_f32(rows, ld, cols, scale, s, row_max, row_sum, acc, acc_dim);
    ref_pairs_of(ld, cols, s, pp);
}

/* scalar code keeps no state between calls */
static void ref_release(void)
{
}

const fa_kernels_bf16 fa_kernels_ref_bf16 = {
    .traits = {.input = FA_BF16,
               .accum = FA_F32,
               .lanes = 1,
               .pad_elems = FA_PAD_ELEMS_F32,
               .scores_keys = 1,
               .scores_vecs = 1,
               .rows_rows = 1,
               .rows_vecs = 1,
               .score_tile = FA_TILE_KEY_MAJOR},
    .pad_k = FA_REF_BF16_PAD_K,
    .pack_pairs = fa_ref_bf16_pack_pairs,
    .pack_rows_t = fa_ref_bf16_pack_rows_t,
    .pack_rows_pairs = fa_ref_bf16_pack_rows_pairs,
    .rows_of = ref_rows_of,
    .pairs_of = ref_pairs_of,
    .dot = ref_dot,
    .online_softmax_pairs = ref_online_softmax_pairs,
    .release = ref_release,
};

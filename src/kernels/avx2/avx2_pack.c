/* SPDX-License-Identifier: BSD-3-Clause */
/* The transposed pack (kernels.h, pack_transposed) with AVX2: dst[x][r] = mult·src[r][x].
 *
 * As avx512_pack.c, with 8×8 float and 4×4 double blocks: loaded row by row, multiplied, transposed in
 * registers, stored column by column. Edges use vmaskmov, which reads and writes no masked-off
 * element (and takes no fault there), so nothing past dim is read and nothing past ld written; rows
 * past `rows` are zero vectors, the contract's padding. mult·x is one IEEE multiplication either
 * way, so the bytes are the portable loop's. */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/avx2/avx2_pack.h"
#include "kernels/avx2/avx2_transpose.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
/* Every loop over a block's vectors carries `#pragma GCC unroll`: -O2 does not unroll them fully by
 * itself, and then the vector arrays live on the stack (measured: 4-5x slower than unrolled, where
 * they stay in registers). */

/* Lanes [0, n) of a vmaskmov mask of 32-bit (64-bit) lanes: the sign bit set. */
static __m256i lanes_below_32(int64_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

static __m256i lanes_below_64(int64_t n)
{
    return _mm256_cmpgt_epi64(_mm256_set1_epi64x(n), _mm256_setr_epi64x(0, 1, 2, 3));
}

/* One block: `in` source rows (the rest zero) of `cols` columns, stored as `cols` destination rows
 * (`whole`: all lanes, else the lanes of `keep`). Called with constants for whole blocks, so that
 * path has no masks. */
ALWAYS_INLINE void block_f32(const float *src, int64_t src_stride, __m256 mult, int in, int cols, float *dst,
                             int64_t ld, int whole, __m256i keep)
{
    __m256i read = lanes_below_32(cols);
    __m256 v[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        if (i >= in) { /* no row there to read */
            v[i] = _mm256_setzero_ps();
            continue;
        }
        __m256 row = cols == 8 ? _mm256_loadu_ps(src + i * src_stride)
                               : _mm256_maskload_ps(src + i * src_stride, read);
        v[i] = _mm256_mul_ps(row, mult);
    }
    avx2_transpose_f32(v);
#pragma GCC unroll 8
    for (int j = 0; j < cols; j++) {
        if (whole)
            _mm256_storeu_ps(dst + j * ld, v[j]);
        else
            _mm256_maskstore_ps(dst + j * ld, keep, v[j]);
    }
}

ALWAYS_INLINE void block_f64(const double *src, int64_t src_stride, __m256d mult, int in, int cols,
                             double *dst, int64_t ld, int whole, __m256i keep)
{
    __m256i read = lanes_below_64(cols);
    __m256d v[4];
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        if (i >= in) {
            v[i] = _mm256_setzero_pd();
            continue;
        }
        __m256d row = cols == 4 ? _mm256_loadu_pd(src + i * src_stride)
                                : _mm256_maskload_pd(src + i * src_stride, read);
        v[i] = _mm256_mul_pd(row, mult);
    }
    avx2_transpose_f64(v);
#pragma GCC unroll 4
    for (int j = 0; j < cols; j++) {
        if (whole)
            _mm256_storeu_pd(dst + j * ld, v[j]);
        else
            _mm256_maskstore_pd(dst + j * ld, keep, v[j]);
    }
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Row blocks r0 = 0, L, 2L, ... up to ld (L lanes), so the zero padding [rows, ld) is written by the
 * same stores; the last one is masked when ld is not a multiple of L. */
void fa_avx2_pack_transposed_f32(int64_t rows, int64_t dim, const float *src, int64_t src_stride, float mult,
                                 float *dst, int64_t ld)
{
    const __m256 m = _mm256_set1_ps(mult);
    for (int64_t r0 = 0; r0 < ld; r0 += 8) {
        int in = (int)(rows - r0 < 0 ? 0 : min64(rows - r0, 8));
        int whole = ld - r0 >= 8;
        __m256i keep = lanes_below_32(min64(ld - r0, 8));
        float *d = dst + r0;
        if (in == 0) { /* padding only */
            for (int64_t x = 0; x < dim; x++) _mm256_maskstore_ps(d + x * ld, keep, _mm256_setzero_ps());
            continue;
        }
        const float *s = src + r0 * src_stride;
        int64_t x0 = 0;
        if (in == 8 && whole)
            for (; x0 + 8 <= dim; x0 += 8) block_f32(s + x0, src_stride, m, 8, 8, d + x0 * ld, ld, 1, keep);
        for (; x0 < dim; x0 += 8)
            block_f32(s + x0, src_stride, m, in, (int)min64(dim - x0, 8), d + x0 * ld, ld, whole, keep);
    }
}

void fa_avx2_pack_transposed_f64(int64_t rows, int64_t dim, const double *src, int64_t src_stride,
                                 double mult, double *dst, int64_t ld)
{
    const __m256d m = _mm256_set1_pd(mult);
    for (int64_t r0 = 0; r0 < ld; r0 += 4) {
        int in = (int)(rows - r0 < 0 ? 0 : min64(rows - r0, 4));
        int whole = ld - r0 >= 4;
        __m256i keep = lanes_below_64(min64(ld - r0, 4));
        double *d = dst + r0;
        if (in == 0) {
            for (int64_t x = 0; x < dim; x++) _mm256_maskstore_pd(d + x * ld, keep, _mm256_setzero_pd());
            continue;
        }
        const double *s = src + r0 * src_stride;
        int64_t x0 = 0;
        if (in == 4 && whole)
            for (; x0 + 4 <= dim; x0 += 4) block_f64(s + x0, src_stride, m, 4, 4, d + x0 * ld, ld, 1, keep);
        for (; x0 < dim; x0 += 4)
            block_f64(s + x0, src_stride, m, in, (int)min64(dim - x0, 4), d + x0 * ld, ld, whole, keep);
    }
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The transposed pack (kernels.h, pack_transposed) with AVX-512F: dst[x][r] = mult·src[r][x].
 *
 * A block of one vector of rows × one vector of columns (16×16 floats, 8×8 doubles) is loaded row by
 * row, multiplied, transposed in registers and stored column by column: one 64-byte load and one
 * 64-byte store per vector, where the portable loop stores one element at a time, ld elements apart.
 * The block's 16 (8) source rows and destination rows are a few KiB, so both stay in L1.
 *
 * Edges are masked, never padded: a masked load reads nothing past dim (AVX-512 suppresses faults on
 * masked-off lanes, so a row may end at an unreadable page), rows past `rows` are zero vectors and
 * so come out as the contract's zero padding, and a masked store writes nothing past ld. mult·x is
 * one IEEE multiplication either way, so the bytes are the portable loop's. */
#include <immintrin.h>
#include <stdint.h>

#include "kernels/avx512/avx512_pack.h"
#include "kernels/avx512/avx512_transpose.h"

#define ALWAYS_INLINE static inline __attribute__((always_inline))
/* Every loop over a block's vectors carries `#pragma GCC unroll`: -O2 does not unroll them fully by
 * itself, and then the vector arrays live on the stack (measured: 4-5x slower than unrolled, where
 * they stay in registers). */

/* One block: `in` source rows (the rest zero) of `cols` columns, stored as `cols` destination rows of
 * the lanes in `keep`. Called with constants for whole blocks, so that path has no masks. */
ALWAYS_INLINE void block_f32(const float *src, int64_t src_stride, __m512 mult, int in, int cols, float *dst,
                             int64_t ld, __mmask16 keep)
{
    __mmask16 read = (__mmask16)((1u << cols) - 1);
    __m512 v[16];
#pragma GCC unroll 16
    for (int i = 0; i < 16; i++) {
        if (i >= in) { /* no row there to read */
            v[i] = _mm512_setzero_ps();
            continue;
        }
        __m512 row = cols == 16 ? _mm512_loadu_ps(src + i * src_stride)
                                : _mm512_maskz_loadu_ps(read, src + i * src_stride);
        v[i] = _mm512_mul_ps(row, mult);
    }
    avx512_transpose_f32(v);
#pragma GCC unroll 16
    for (int j = 0; j < cols; j++) {
        if (keep == 0xFFFF)
            _mm512_storeu_ps(dst + j * ld, v[j]);
        else
            _mm512_mask_storeu_ps(dst + j * ld, keep, v[j]);
    }
}

ALWAYS_INLINE void block_f64(const double *src, int64_t src_stride, __m512d mult, int in, int cols,
                             double *dst, int64_t ld, __mmask8 keep)
{
    __mmask8 read = (__mmask8)((1u << cols) - 1);
    __m512d v[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++) {
        if (i >= in) {
            v[i] = _mm512_setzero_pd();
            continue;
        }
        __m512d row = cols == 8 ? _mm512_loadu_pd(src + i * src_stride)
                                : _mm512_maskz_loadu_pd(read, src + i * src_stride);
        v[i] = _mm512_mul_pd(row, mult);
    }
    avx512_transpose_f64(v);
#pragma GCC unroll 8
    for (int j = 0; j < cols; j++) {
        if (keep == 0xFF)
            _mm512_storeu_pd(dst + j * ld, v[j]);
        else
            _mm512_mask_storeu_pd(dst + j * ld, keep, v[j]);
    }
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* Row blocks r0 = 0, L, 2L, ... up to ld (L lanes), so the zero padding [rows, ld) is written by the
 * same stores; the last one is masked when ld is not a multiple of L. */
void fa_avx512_pack_transposed_f32(int64_t rows, int64_t dim, const float *src, int64_t src_stride,
                                   float mult, float *dst, int64_t ld)
{
    const __m512 m = _mm512_set1_ps(mult);
    for (int64_t r0 = 0; r0 < ld; r0 += 16) {
        int in = (int)(rows - r0 < 0 ? 0 : min64(rows - r0, 16));
        __mmask16 keep = (__mmask16)(ld - r0 >= 16 ? 0xFFFF : (1u << (ld - r0)) - 1);
        float *d = dst + r0;
        if (in == 0) { /* padding only */
            for (int64_t x = 0; x < dim; x++) _mm512_mask_storeu_ps(d + x * ld, keep, _mm512_setzero_ps());
            continue;
        }
        const float *s = src + r0 * src_stride;
        int64_t x0 = 0;
        if (in == 16 && keep == 0xFFFF)
            for (; x0 + 16 <= dim; x0 += 16)
                block_f32(s + x0, src_stride, m, 16, 16, d + x0 * ld, ld, 0xFFFF);
        for (; x0 < dim; x0 += 16)
            block_f32(s + x0, src_stride, m, in, (int)min64(dim - x0, 16), d + x0 * ld, ld, keep);
    }
}

void fa_avx512_pack_transposed_f64(int64_t rows, int64_t dim, const double *src, int64_t src_stride,
                                   double mult, double *dst, int64_t ld)
{
    const __m512d m = _mm512_set1_pd(mult);
    for (int64_t r0 = 0; r0 < ld; r0 += 8) {
        int in = (int)(rows - r0 < 0 ? 0 : min64(rows - r0, 8));
        __mmask8 keep = (__mmask8)(ld - r0 >= 8 ? 0xFF : (1u << (ld - r0)) - 1);
        double *d = dst + r0;
        if (in == 0) {
            for (int64_t x = 0; x < dim; x++) _mm512_mask_storeu_pd(d + x * ld, keep, _mm512_setzero_pd());
            continue;
        }
        const double *s = src + r0 * src_stride;
        int64_t x0 = 0;
        if (in == 8 && keep == 0xFF)
            for (; x0 + 8 <= dim; x0 += 8) block_f64(s + x0, src_stride, m, 8, 8, d + x0 * ld, ld, 0xFF);
        for (; x0 < dim; x0 += 8)
            block_f64(s + x0, src_stride, m, in, (int)min64(dim - x0, 8), d + x0 * ld, ld, keep);
    }
}

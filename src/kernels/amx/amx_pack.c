/* SPDX-License-Identifier: BSD-3-Clause */
/* The amx table's packs and P's conversion (fa_kernels_bf16: pack_pairs, pack_rows_t, pairs_of), on
 * AVX-512 (F, BW, BF16); kernels.h has the layouts. Every one moves bits, but pairs_of, which
 * rounds a float probability to bf16 as vcvtne2ps2bf16 does (to nearest even; p is never
 * subnormal, which that instruction would flush), so each gives fa_kernels_ref_bf16's bytes. */
#include <immintrin.h>
#include <string.h>

#include "kernels/amx/amx.h"
#include "kernels/avx512/avx512_transpose.h"

static int64_t round_up(int64_t x, int64_t m)
{
    return (x + m - 1) / m * m;
}

/* The query block (and dO), once per forward item and once per backward tile: a 32-bit transpose
 * of the rows' pairs, 16 rows × 16 pairs a step (masked loads stop at dim, so an odd dim's last
 * pair has a zero upper half and nothing past a row is read). */
void fa_amx_pack_pairs(int64_t rows, int64_t dim, const uint16_t *src, int64_t src_stride, uint16_t *dst,
                       int64_t ld)
{
    int64_t dim_k = round_up(dim, FA_AMX_PAD_K);
    for (int64_t x0 = 0; x0 < dim_k; x0 += 32) {
        int64_t left = dim - x0;
        __mmask32 dims = left <= 0 ? 0 : left >= 32 ? 0xffffffffu : (__mmask32)((1u << left) - 1u);
        for (int64_t r0 = 0; r0 < ld; r0 += 16) {
            __m512 w[16];
            _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) w[i] =
                r0 + i < rows && dims
                    ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(dims, src + (r0 + i) * src_stride + x0))
                    : _mm512_setzero_ps();
            avx512_transpose_f32(w); /* w[j]: pair x0/2 + j of rows r0..r0 + 15 */
            _Pragma("GCC unroll 16") for (int j = 0; j < 16; j++)
                _mm512_storeu_ps((float *)(void *)(dst + (x0 / 2 + j) * 2 * ld + 2 * r0), w[j]);
        }
    }
}

/* The exponent of a bf16 that is Inf or NaN: every one of its 8 bits set. */
#define BF16_EXPONENT 0x7f80

/* 16 bf16 of a row (lanes `mask`, zero elsewhere), and whether any is Inf or NaN (into *bad). */
static inline __attribute__((always_inline)) __m256i row_part(const uint16_t *row, __mmask16 lanes,
                                                              __mmask16 *bad)
{
    __m256i h = _mm256_maskz_loadu_epi16(lanes, row);
    const __m256i e = _mm256_set1_epi16(BF16_EXPONENT);
    *bad |= _mm256_cmpeq_epi16_mask(_mm256_and_si256(h, e), e);
    return h;
}

/* Words (row0[x], row1[x]) for 16 x: two zero-extensions, a shift and an or. row1 NULL: zero. */
static inline __attribute__((always_inline)) __m512i pair_words(const uint16_t *row0, const uint16_t *row1,
                                                                __mmask16 lanes, __mmask16 *bad)
{
    __m512i lo = _mm512_cvtepu16_epi32(row_part(row0, lanes, bad));
    __m512i hi = row1 ? _mm512_cvtepu16_epi32(row_part(row1, lanes, bad)) : _mm512_setzero_si512();
    return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

static __mmask16 lanes_below(int64_t n)
{
    return (__mmask16)(n >= 16 ? 0xffff : (1u << n) - 1u);
}

int fa_amx_pack_rows_t(int64_t cols, int64_t dim, const uint16_t *src, int64_t src_stride, uint16_t *dst,
                       int64_t ld)
{
    __mmask16 bad = 0;
    for (int64_t x0 = 0; x0 < dim; x0 += 16) {
        int64_t nx = dim - x0 < 16 ? dim - x0 : 16;
        __mmask16 dims = lanes_below(nx);
        for (int64_t c0 = 0; c0 < ld; c0 += 32) {
            __m512 w[16];
            _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++)
            {
                int64_t c = c0 + 2 * i;
                const uint16_t *r0 = c < cols ? src + c * src_stride + x0 : NULL;
                const uint16_t *r1 = c + 1 < cols ? src + (c + 1) * src_stride + x0 : NULL;
                w[i] = r0 ? _mm512_castsi512_ps(pair_words(r0, r1, dims, &bad)) : _mm512_setzero_ps();
            }
            avx512_transpose_f32(w);
            for (int64_t x = 0; x < nx; x++)
                _mm512_storeu_ps((float *)(void *)(dst + (x0 + x) * ld + c0), w[x]);
        }
    }
    return bad == 0;
}

/* Rows r and r + 1 interleaved word by word, 16 dims a store. */
int fa_amx_pack_rows_pairs(int64_t rows, int64_t rows_pad, int64_t dim, const uint16_t *src,
                           int64_t src_stride, uint16_t *dst, int64_t ldd)
{
    __mmask16 bad = 0;
    for (int64_t r = 0; r < rows_pad; r += 2) {
        uint16_t *out = dst + (r / 2) * 2 * ldd;
        for (int64_t x0 = 0; x0 < ldd; x0 += 16) {
            __m512i w = _mm512_setzero_si512();
            if (r < rows && x0 < dim) {
                __mmask16 lanes = lanes_below(dim - x0);
                w = pair_words(src + r * src_stride + x0,
                               r + 1 < rows ? src + (r + 1) * src_stride + x0 : NULL, lanes, &bad);
            }
            _mm512_storeu_si512(out + 2 * x0, w);
        }
    }
    return bad == 0;
}

/* 32 floats a step: one conversion (the first 16 in the low half), one store. */
void fa_amx_rows_of(int64_t n, const float *src, uint16_t *dst)
{
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m512 lo = _mm512_loadu_ps(src + i), hi = _mm512_loadu_ps(src + i + 16);
        _mm512_storeu_si512(dst + i, (__m512i)_mm512_cvtne2ps_pbh(hi, lo));
    }
    for (; i < n; i += 16) {
        __mmask16 lanes = lanes_below(n - i);
        __m256i h = (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(lanes, src + i));
        _mm256_mask_storeu_epi16(dst + i, lanes, h);
    }
}

/* P in pairs of keys: two columns rounded to bf16 at once (vcvtne2ps2bf16 puts the first's 16
 * values in the low half), then interleaved word by word (vpermw). */
void fa_amx_pairs_of(int64_t ld, int64_t cols, const float *p, uint16_t *pp)
{
    const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
                                                23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    int64_t c_pad = round_up(cols, FA_AMX_PAD_K);
    for (int64_t c = 0; c < c_pad; c += 2) {
        uint16_t *out = pp + (c / 2) * 2 * ld;
        if (c >= cols) {
            memset(out, 0, (size_t)(2 * ld) * sizeof *out);
            continue;
        }
        for (int64_t r = 0; r < ld; r += 16) {
            __m512 p0 = _mm512_loadu_ps(p + c * ld + r);
            __m512 p1 = c + 1 < cols ? _mm512_loadu_ps(p + (c + 1) * ld + r) : _mm512_setzero_ps();
            __m512i both = (__m512i)_mm512_cvtne2ps_pbh(p1, p0);
            _mm512_storeu_si512(out + 2 * r, _mm512_permutexvar_epi16(interleave, both));
        }
    }
}

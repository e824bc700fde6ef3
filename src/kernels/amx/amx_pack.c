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

/* The query block, once per forward item: a 32-bit transpose of the rows' pairs, word by word. */
void fa_amx_pack_pairs(int64_t rows, int64_t dim, const uint16_t *src, int64_t src_stride, uint16_t *dst,
                       int64_t ld)
{
    int64_t pairs = round_up(dim, FA_AMX_PAD_K) / 2, whole = dim / 2;
    uint32_t *out = (uint32_t *)(void *)dst;
    for (int64_t x = 0; x < pairs; x++) memset(out + x * ld, 0, (size_t)ld * sizeof *out);
    for (int64_t r = 0; r < rows; r++) {
        const uint16_t *row = src + r * src_stride;
        for (int64_t x = 0; x < whole; x++) {
            uint32_t w;
            memcpy(&w, row + 2 * x, sizeof w);
            out[x * ld + r] = w;
        }
        if (dim % 2) out[whole * ld + r] = row[dim - 1]; /* its pair's upper half is zero */
    }
}

/* The value tile, once per key tile: the transposed tile holds, for each dim x, consecutive keys,
 * so its word (x, c/2) is (v[c][x], v[c + 1][x]). Rows c and c + 1 are interleaved into such words
 * (two zero-extensions, a shift, an or: 16 dims a vector), and 16 such vectors (32 keys) are
 * transposed as 16 × 16 words: vector x of the result holds keys c0..c0 + 31 of dim x0 + x. Keys
 * past `cols` (and a missing c + 1) read as zero. */
static inline __attribute__((always_inline)) __m512i key_pair_words(const uint16_t *row0, const uint16_t *row1,
                                                                 __mmask16 dims)
{
    __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(dims, row0));
    __m512i hi = row1 ? _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(dims, row1)) : _mm512_setzero_si512();
    return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16));
}

void fa_amx_pack_rows_t(int64_t cols, int64_t dim, const uint16_t *src, int64_t src_stride, uint16_t *dst,
                        int64_t ld)
{
    for (int64_t x0 = 0; x0 < dim; x0 += 16) {
        int64_t nx = dim - x0 < 16 ? dim - x0 : 16;
        __mmask16 dims = (__mmask16)(nx == 16 ? 0xffff : (1u << nx) - 1u);
        for (int64_t c0 = 0; c0 < ld; c0 += 32) {
            __m512 w[16];
            _Pragma("GCC unroll 16") for (int i = 0; i < 16; i++) {
                int64_t c = c0 + 2 * i;
                const uint16_t *r0 = c < cols ? src + c * src_stride + x0 : NULL;
                const uint16_t *r1 = c + 1 < cols ? src + (c + 1) * src_stride + x0 : NULL;
                w[i] = r0 ? _mm512_castsi512_ps(key_pair_words(r0, r1, dims)) : _mm512_setzero_ps();
            }
            avx512_transpose_f32(w);
            for (int64_t x = 0; x < nx; x++) _mm512_storeu_ps((float *)(void *)(dst + (x0 + x) * ld + c0), w[x]);
        }
    }
}

/* P in pairs of keys: two columns rounded to bf16 at once (vcvtne2ps2bf16 puts the first's 16
 * values in the low half), then interleaved word by word (vpermw). */
void fa_amx_pairs_of(int64_t ld, int64_t cols, const float *p, uint16_t *pp)
{
    const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23,
                                                7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
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

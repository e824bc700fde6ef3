/* SPDX-License-Identifier: BSD-3-Clause */
/* The x86 tables' widening of stored rows to float (kernels.h, widen), written once against
 * simd/simd.h's vocabulary and the float half's V_LOAD_STORED (avx2_stored.h, avx512_stored.h):
 * FA_LANES elements per conversion, the last few of a row one at a time (kernels/quant.h), which
 * gives the same values; then the row's scale, one multiplication. Defines fa_<isa>_widen_f32;
 * simd/table.h includes it where the ISA's float half asks for it (FA_WIDEN_SIMD). neon keeps its
 * own (neon_widen.c: eight elements a step from one 8- or 16-byte load), which sve shares.
 *
 * A row without a scale is converted with no multiplication at all: a select between sv·a and a
 * with sv = 1 may be folded to sv·a by the compiler (clang does), which quiets a signalling NaN
 * that ref keeps. */
#include "kernels/quant.h"

/* One row; `scaled` is a constant at each call, so the unscaled copy has no multiplication. */
FA_INLINE void FA_ISA_NAME(_widen_row_)(const char *s, int64_t dim, fa_dtype from, int64_t elem,
                                        const float *sr, int scaled, float *d)
{
    const vec sv = V_SET1(scaled ? *sr : 0.0f);
    int64_t x = 0;
    for (; x + 2 * FA_LANES <= dim; x += 2 * FA_LANES) { /* two independent conversions per step */
        vec a = V_LOAD_STORED(s + x * elem, FA_LANES, from),
            b = V_LOAD_STORED(s + (x + FA_LANES) * elem, FA_LANES, from);
        if (scaled) a = V_MUL(sv, a), b = V_MUL(sv, b);
        V_STOREU(d + x, a);
        V_STOREU(d + x + FA_LANES, b);
    }
    for (; x + FA_LANES <= dim; x += FA_LANES) {
        vec a = V_LOAD_STORED(s + x * elem, FA_LANES, from);
        if (scaled) a = V_MUL(sv, a);
        V_STOREU(d + x, a);
    }
    for (; x < dim; x++) d[x] = fa_stored_value(from, s, x, scaled ? sr : NULL);
}

void FA_ISA_NAME(_widen_)(int64_t rows, int64_t dim, const void *src, int64_t src_stride, fa_dtype from,
                          const float *scale, int64_t scale_stride, float *dst, int64_t dst_stride)
{
    const int64_t elem = fa_stored_size(from);
    for (int64_t r = 0; r < rows; r++) {
        const char *s = (const char *)src + r * src_stride * elem;
        float *d = dst + r * dst_stride;
        if (scale)
            FA_ISA_NAME(_widen_row_)(s, dim, from, elem, scale + r * scale_stride, 1, d);
        else
            FA_ISA_NAME(_widen_row_)(s, dim, from, elem, NULL, 0, d);
    }
}

/* Transposed packing of query blocks. */
#include "pack.h"

#define FA_DEFINE_PACK(T, SFX)                                                                                 \
    void fa_pack_transposed_##SFX(int64_t rows, int64_t dim, const T *src, int64_t src_stride, T mult, T *dst, \
                                  int64_t ld)                                                                  \
    {                                                                                                          \
        for (int64_t r = 0; r < rows; r++) {                                                                   \
            const T *s = src + r * src_stride;                                                                 \
            for (int64_t x = 0; x < dim; x++) dst[x * ld + r] = mult * s[x];                                   \
        }                                                                                                      \
        for (int64_t x = 0; x < dim; x++)                                                                      \
            for (int64_t r = rows; r < ld; r++) dst[x * ld + r] = 0;                                           \
    }

FA_DEFINE_PACK(float, f32)
FA_DEFINE_PACK(double, f64)

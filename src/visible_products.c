/* Products over visible keys only; see visible_products.h for why. */
#include "visible_products.h"

#include "epilogue.h"

/* The visible columns [c0, c1) of one row within the tile starting at key col0. */
static void visible_columns(const fa_problem *p, int64_t row, int64_t col0, int64_t cols, int64_t *c0, int64_t *c1)
{
    fa_key_range keys = fa_visible_keys(p, row);
    *c0 = keys.begin > col0 ? keys.begin - col0 : 0;
    *c1 = keys.end < col0 + cols ? keys.end - col0 : cols;
    if (*c0 > cols) *c0 = cols;
}

#define FA_DEFINE_VISIBLE_PRODUCTS(T, SFX)                                                                     \
    void fa_accumulate_visible_##SFX(const fa_kernels_##SFX *k, const fa_problem *p, int64_t row0,            \
                                     int64_t rows, int64_t col0, int64_t cols, int64_t dim, const T *w,       \
                                     int64_t w_stride, const T *x, int64_t x_stride, T *acc, int64_t acc_stride)\
    {                                                                                                          \
        if (fa_tile_fully_visible(p, row0, rows, col0, cols)) {                                                \
            k->accumulate(rows, cols, dim, w, w_stride, x, x_stride, acc, acc_stride);                        \
            return;                                                                                            \
        }                                                                                                      \
        for (int64_t r = 0; r < rows; r++) {                                                                   \
            int64_t c0, c1;                                                                                    \
            visible_columns(p, row0 + r, col0, cols, &c0, &c1);                                                \
            if (c1 > c0)                                                                                       \
                k->accumulate(1, c1 - c0, dim, w + r * w_stride + c0, w_stride, x + c0 * x_stride, x_stride,  \
                              acc + r * acc_stride, acc_stride);                                               \
        }                                                                                                      \
    }                                                                                                          \
                                                                                                               \
    void fa_accumulate_t_visible_##SFX(const fa_kernels_##SFX *k, const fa_problem *p, int64_t row0,          \
                                       int64_t rows, int64_t col0, int64_t cols, int64_t dim, const T *w,     \
                                       int64_t w_stride, const T *x, int64_t x_stride, T *acc,                \
                                       int64_t acc_stride)                                                     \
    {                                                                                                          \
        if (fa_tile_fully_visible(p, row0, rows, col0, cols)) {                                                \
            k->accumulate_t(rows, cols, dim, w, w_stride, x, x_stride, acc, acc_stride);                      \
            return;                                                                                            \
        }                                                                                                      \
        for (int64_t r = 0; r < rows; r++) {                                                                   \
            int64_t c0, c1;                                                                                    \
            visible_columns(p, row0 + r, col0, cols, &c0, &c1);                                                \
            if (c1 > c0)                                                                                       \
                k->accumulate_t(1, c1 - c0, dim, w + r * w_stride + c0, w_stride, x + r * x_stride, x_stride, \
                                acc + c0 * acc_stride, acc_stride);                                            \
        }                                                                                                      \
    }

FA_DEFINE_VISIBLE_PRODUCTS(float, f32)
FA_DEFINE_VISIBLE_PRODUCTS(double, f64)

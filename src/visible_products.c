/* SPDX-License-Identifier: BSD-3-Clause */
/* Products over visible keys only; see visible_products.h for why. */
#include "visible_products.h"

#include "epilogue.h"

typedef struct {
    int64_t begin, end;
} span;

static int64_t clamp(int64_t x, int64_t lo, int64_t hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

/* The tile columns [begin, end) that one query row sees. */
static span row_columns(const fa_problem *p, int64_t row, int64_t col0, int64_t cols)
{
    fa_key_range keys = fa_visible_keys(p, row);
    span s = {clamp(keys.begin - col0, 0, cols), clamp(keys.end - col0, 0, cols)};
    if (s.end < s.begin) s.end = s.begin;
    return s;
}

/* Columns every row of the block sees: ranges are monotone, so the last row has the largest
 * begin and the first row the smallest end. */
static span common_columns(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols)
{
    span s = {row_columns(p, row0 + rows - 1, col0, cols).begin, row_columns(p, row0, col0, cols).end};
    if (s.end < s.begin) s.end = s.begin;
    return s;
}

/* Rows of the block that see every column, and the rows that see one column c. */
static span rows_seeing(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t c_first,
                        int64_t c_last, int64_t cols)
{
    span s = {rows, rows};
    for (int64_t r = 0; r < rows; r++) {
        span cs = row_columns(p, row0 + r, col0, cols);
        int sees = cs.begin <= c_first && cs.end > c_last;
        if (sees && s.begin == rows) s.begin = r;
        if (!sees && s.begin != rows) {
            s.end = r;
            break;
        }
    }
    return s;
}

/* 1 when n rows of `width` values (row stride `stride`) are all finite: x·0 is 0 for finite x and
 * NaN for an infinity or a NaN, so the sum is 0 exactly when every value is finite. */
#define FA_DEFINE_ALL_FINITE(T, SFX)                                                                           \
    static int all_finite_##SFX(const T *x, int64_t n, int64_t width, int64_t stride)                         \
    {                                                                                                          \
        T sum = 0;                                                                                             \
        for (int64_t i = 0; i < n; i++) {                                                                      \
            const T *row = x + i * stride;                                                                     \
            _Pragma("omp simd reduction(+ : sum)") for (int64_t y = 0; y < width; y++) sum += row[y] * (T)0;   \
        }                                                                                                      \
        return sum == 0;                                                                                       \
    }
FA_DEFINE_ALL_FINITE(float, f32)
FA_DEFINE_ALL_FINITE(double, f64)

/* In accumulate_t_visible, an edge tile whose weights and operand rows are all finite is one
 * kernel call over the whole tile: its masked weights are then exact zeros (the epilogue's -inf
 * through exp, or zeroed score gradients), and finite·0 adds nothing but a zero. Key by key, a
 * causal diagonal costs a kernel call and a scan of the block's rows per key (the backward of
 * B=8 H=16 N=512 D=64 causal ran 18% slower so). accumulate_visible keeps its row-by-row edge:
 * there the few-rows kernel path is as fast as the whole square, and the scan would only add. */
#define FA_DEFINE_VISIBLE_PRODUCTS(T, SFX)                                                                     \
    void fa_accumulate_visible_##SFX(const fa_kernels_##SFX *k, const fa_problem *p, int64_t row0,            \
                                     int64_t rows, int64_t col0, int64_t cols, int64_t dim, const T *w,       \
                                     int64_t ld, const T *x, int64_t x_stride, T *acc, int64_t acc_stride)    \
    {                                                                                                          \
        if (fa_tile_fully_visible(p, row0, rows, col0, cols)) {                                                \
            k->accumulate(rows, cols, dim, w, ld, x, x_stride, acc, acc_stride);                              \
            return;                                                                                            \
        }                                                                                                      \
        span all = common_columns(p, row0, rows, col0, cols);                                                  \
        if (all.end > all.begin)                                                                               \
            k->accumulate(rows, all.end - all.begin, dim, w + all.begin * ld, ld, x + all.begin * x_stride,   \
                          x_stride, acc, acc_stride);                                                          \
        for (int64_t r = 0; r < rows; r++) {                                                                   \
            span mine = row_columns(p, row0 + r, col0, cols);                                                  \
            /* what this row sees outside the common span: a part before it and a part after it */            \
            span part[2] = {{mine.begin, mine.end < all.begin ? mine.end : all.begin},                         \
                            {mine.begin > all.end ? mine.begin : all.end, mine.end}};                          \
            if (all.end <= all.begin) part[1].end = part[1].begin; /* no common span: part[0] is it all */    \
            if (all.end <= all.begin) part[0] = mine;                                                          \
            for (int i = 0; i < 2; i++)                                                                        \
                if (part[i].end > part[i].begin)                                                               \
                    k->accumulate(1, part[i].end - part[i].begin, dim, w + part[i].begin * ld + r, ld,         \
                                  x + part[i].begin * x_stride, x_stride, acc + r * acc_stride, acc_stride);   \
        }                                                                                                      \
    }                                                                                                          \
                                                                                                               \
    void fa_accumulate_t_visible_##SFX(const fa_kernels_##SFX *k, const fa_problem *p, int64_t row0,          \
                                       int64_t rows, int64_t col0, int64_t cols, int64_t dim, const T *w,     \
                                       int64_t ld, const T *x, int64_t x_stride, T *acc, int64_t acc_stride)  \
    {                                                                                                          \
        if (fa_tile_fully_visible(p, row0, rows, col0, cols) ||                                                \
            (all_finite_##SFX(w, cols, rows, ld) && all_finite_##SFX(x, rows, dim, x_stride))) {              \
            k->accumulate_t(rows, cols, dim, w, ld, x, x_stride, acc, acc_stride);                            \
            return;                                                                                            \
        }                                                                                                      \
        span all = rows_seeing(p, row0, rows, col0, 0, cols - 1, cols);                                        \
        if (all.end > all.begin)                                                                               \
            k->accumulate_t(all.end - all.begin, cols, dim, w + all.begin, ld, x + all.begin * x_stride,      \
                            x_stride, acc, acc_stride);                                                        \
        for (int64_t c = 0; c < cols; c++) {                                                                   \
            span mine = rows_seeing(p, row0, rows, col0, c, c, cols);                                          \
            span part[2] = {{mine.begin, mine.end < all.begin ? mine.end : all.begin},                         \
                            {mine.begin > all.end ? mine.begin : all.end, mine.end}};                          \
            if (all.end <= all.begin) part[1].end = part[1].begin;                                             \
            if (all.end <= all.begin) part[0] = mine;                                                          \
            for (int i = 0; i < 2; i++)                                                                        \
                if (part[i].end > part[i].begin)                                                               \
                    k->accumulate_t(part[i].end - part[i].begin, 1, dim, w + c * ld + part[i].begin, ld,       \
                                    x + part[i].begin * x_stride, x_stride, acc + c * acc_stride, acc_stride); \
        }                                                                                                      \
    }

FA_DEFINE_VISIBLE_PRODUCTS(float, f32)
FA_DEFINE_VISIBLE_PRODUCTS(double, f64)

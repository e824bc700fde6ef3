/* The score epilogue: everything between the two tile products (scale, masks), in one place,
 * computed from indices. Forward and backward both use it. */
#ifndef FA_EPILOGUE_H
#define FA_EPILOGUE_H

#include <stdint.h>

#include "problem.h"

/* Keys [begin, end) that query row `row` may see. end <= begin means none. Both are monotone
 * non-decreasing in `row`, which is what lets a driver bound a whole query block by its first
 * and last rows. */
typedef struct {
    int64_t begin, end;
} fa_key_range;

fa_key_range fa_visible_keys(const fa_problem *p, int64_t row);

/* Applies scale and masks to the score tile s[rows][cols] (row stride s_stride) whose first
 * element is (query row0, key col0): visible scores become scale·s, the others -inf. */
void fa_epilogue_f32(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols, float *s,
                     int64_t s_stride);
void fa_epilogue_f64(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols, double *s,
                     int64_t s_stride);

/* Sets the entries of the tile that the masks hide to 0 (visible entries keep their value).
 * The backward applies it to the score gradient on a mask's edge, where p = 0 but the dO·Vᵀ term
 * may hold a NaN from a key the row does not see. */
void fa_zero_masked_f32(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols, float *t,
                        int64_t t_stride);
void fa_zero_masked_f64(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols, double *t,
                        int64_t t_stride);

/* Whether every row of [row0, row0 + rows) sees every key of [col0, col0 + cols). */
int fa_tile_fully_visible(const fa_problem *p, int64_t row0, int64_t rows, int64_t col0, int64_t cols);

#endif

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

#endif

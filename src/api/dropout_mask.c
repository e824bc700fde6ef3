/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_dropout_mask: the keep mask the drivers apply (drivers/dropout.h), for references and users. */
#include <stdint.h>

#include "api/diagnostic.h"
#include "api/params.h"
#include "drivers/dropout.h"
#include "flashattn.h"

/* The row and key indices the counter takes: i in its last 32-bit word, j / 8 in its third, keys
 * below 2^34 (flashattn.h). */
#define ROWS_LIMIT ((int64_t)1 << 32)
#define KEYS_LIMIT ((int64_t)1 << 34)

static fa_status check_indices(const char *call, int64_t q_heads, int64_t b, int64_t h, int64_t i0,
                               int64_t j0, int64_t rows, int64_t cols, int64_t ld)
{
    const int64_t v[6] = {b, h, i0, j0, rows, cols};
    static const char *const name[6] = {"b", "h", "i0", "j0", "rows", "cols"};
    if (q_heads < 1)
        return fa_diag_fail(FA_ERR_SHAPE, call, "q_heads = %lld: expected >= 1", (long long)q_heads);
    for (int x = 0; x < 6; x++)
        if (v[x] < 0)
            return fa_diag_fail(FA_ERR_SHAPE, call, "%s = %lld: expected >= 0", name[x], (long long)v[x]);
    if (h >= q_heads)
        return fa_diag_fail(FA_ERR_SHAPE, call, "h = %lld: expected < q_heads = %lld", (long long)h,
                            (long long)q_heads);
    if (ld < cols)
        return fa_diag_fail(FA_ERR_SHAPE, call, "ld = %lld: expected >= cols = %lld", (long long)ld,
                            (long long)cols);
    int64_t bytes;
    if (rows > 0 && __builtin_mul_overflow(rows, ld, &bytes))
        return fa_diag_fail(FA_ERR_SHAPE, call, "rows = %lld, ld = %lld: the mask's size overflows int64",
                            (long long)rows, (long long)ld);
    if (i0 > ROWS_LIMIT - rows)
        return fa_diag_fail(FA_ERR_SHAPE, call, "i0 = %lld, rows = %lld: rows past 2^32 have no counter",
                            (long long)i0, (long long)rows);
    if (j0 > KEYS_LIMIT - cols)
        return fa_diag_fail(FA_ERR_SHAPE, call, "j0 = %lld, cols = %lld: keys past 2^34 have no counter",
                            (long long)j0, (long long)cols);
    return FA_OK;
}

fa_status fa_dropout_mask(const fa_params *p, int64_t q_heads, int64_t b, int64_t h, int64_t i0, int64_t j0,
                          int64_t rows, int64_t cols, uint8_t *mask, int64_t ld)
{
    static const char call[] = "fa_dropout_mask";
    fa_diag_clear();
    fa_params_copy params;
    fa_status st = fa_params_read(call, p, &params);
    if (st == FA_OK && !mask && rows > 0 && cols > 0) st = fa_diag_fail(FA_ERR_NULL, call, "mask is NULL");
    const double dp = params.p.dropout_p;
    if (st == FA_OK && !(dp >= 0.0 && dp < 1.0))
        st = fa_diag_fail(FA_ERR_ARG, call, "p.dropout_p = %g: expected 0 (off) or a probability in (0, 1)",
                          dp);
    if (st == FA_OK) st = check_indices(call, q_heads, b, h, i0, j0, rows, cols, ld);
    if (st == FA_OK && rows > 0 && cols > 0) {
        fa_dropout_stream s =
            fa_dropout_stream_of(params.p.dropout_seed, params.p.dropout_offset, dp, q_heads, b, h);
        fa_dropout_keep_bytes(&s, i0, j0, rows, cols, mask, ld);
    }
    return fa_diag_finish(st, call);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Score epilogue. Masks come from indices only: the library never builds an Nq x Nk mask. */
#include "drivers/epilogue.h"

#include <math.h>

fa_score_mods fa_score_mods_of(const fa_problem *p, size_t elem, int64_t batch, int64_t q_head, int64_t row0,
                               int64_t rows, int64_t col0)
{
    fa_score_mods m = {0};
    m.softcap = p->softcap;
    if (p->alibi_slopes) {
        m.alibi_slope = (double)p->alibi_slopes[q_head];
        m.alibi_dist0 = row0 + p->diag_offset - col0;
    }
    if (p->bias.data) {
        m.bias = (const char *)fa_view_at(&p->bias, elem, batch, q_head, row0) + col0 * (int64_t)elem;
        m.bias_stride = p->bias.stride_seq;
        m.bias_rows = rows;
    }
    return m;
}

/* What the masks hide becomes -inf in a score tile (fa_epilogue_*), 0 in a score gradient
 * (fa_zero_masked_*). */
#define FA_T          float
#define FA_MASK_NAME  fa_epilogue_f32
#define FA_MASK_VALUE -INFINITY
#include "drivers/masked_fill.h"
#undef FA_T
#undef FA_MASK_NAME
#undef FA_MASK_VALUE

#define FA_T          double
#define FA_MASK_NAME  fa_epilogue_f64
#define FA_MASK_VALUE -INFINITY
#include "drivers/masked_fill.h"
#undef FA_T
#undef FA_MASK_NAME
#undef FA_MASK_VALUE

#define FA_T          float
#define FA_MASK_NAME  fa_zero_masked_f32
#define FA_MASK_VALUE 0.0f
#include "drivers/masked_fill.h"
#undef FA_T
#undef FA_MASK_NAME
#undef FA_MASK_VALUE

#define FA_T          double
#define FA_MASK_NAME  fa_zero_masked_f64
#define FA_MASK_VALUE 0.0
#include "drivers/masked_fill.h"
#undef FA_T
#undef FA_MASK_NAME
#undef FA_MASK_VALUE

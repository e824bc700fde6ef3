/* SPDX-License-Identifier: BSD-3-Clause */
/* The portable kernel table ("ref"): the reference every optimized table is tested against. */
#include <math.h>
#include <stdint.h>

#include "kernels/kernels.h"

#define FA_T float
#define FA_SFX f32
#define FA_EXP expf
#include "ref_tiles.h"
#undef FA_T
#undef FA_SFX
#undef FA_EXP

#define FA_T double
#define FA_SFX f64
#define FA_EXP exp
#include "ref_tiles.h"
#undef FA_T
#undef FA_SFX
#undef FA_EXP

#define FA_REF_SET(SFX)                                                                                        \
    {                                                                                                          \
        ref_scores_##SFX, ref_online_softmax_##SFX, ref_accumulate_##SFX, ref_accumulate_t_##SFX,              \
            ref_probabilities_##SFX, ref_score_grad_##SFX                                                      \
    }

static const fa_kernels_f32 ref_f32 = FA_REF_SET(f32);
static const fa_kernels_f64 ref_f64 = FA_REF_SET(f64);

const fa_kernels fa_kernels_ref = {"ref", &ref_f32, &ref_f64};

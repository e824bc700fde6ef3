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

const fa_kernels fa_kernels_ref = {
    .name = "ref",
    .f32 = {ref_scores_f32, ref_online_softmax_f32, ref_accumulate_f32, ref_accumulate_t_f32, ref_probabilities_f32,
            ref_score_grad_f32},
    .f64 = {ref_scores_f64, ref_online_softmax_f64, ref_accumulate_f64, ref_accumulate_t_f64, ref_probabilities_f64,
            ref_score_grad_f64},
};

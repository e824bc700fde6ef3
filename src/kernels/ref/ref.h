/* SPDX-License-Identifier: BSD-3-Clause */
/* The portable table's kernels that other tables may use as they are (hidden symbols). */
#ifndef FA_KERNELS_REF_H
#define FA_KERNELS_REF_H

#include <stdint.h>

#include "kernels/kernels.h"

void fa_ref_modify_f32(const fa_score_mods *m, int64_t ld, int64_t cols, float *s, float *dcap);
void fa_ref_modify_f64(const fa_score_mods *m, int64_t ld, int64_t cols, double *s, double *dcap);
void fa_ref_scale_grad_f32(int64_t ld, int64_t cols, float *ds, const float *dcap);
void fa_ref_scale_grad_f64(int64_t ld, int64_t cols, double *ds, const double *dcap);

#endif

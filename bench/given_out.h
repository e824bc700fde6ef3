/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradient oracle's pieces for a backward handed a half-precision out. fa_backward's delta is
 * delta_i = dout_i·out_i of the out it is given (flashattn.h); a bf16 out is that of f32 rounded, up
 * to 2^-8 relative (f16: 2^-11), and the error reaches dS = P·(dP - delta) and so dq and dk, by far
 * more than the gradients' own rounding where softmax rows are nearly one-hot (dP - delta ~ 0). No
 * implementation can remove it, so with a half q the oracle takes delta from the out the library
 * computed and was handed (verified against the exact oracle first) and everything else, lse
 * included, in float64 from the rounded inputs, as tests/kit/reference_backward.h does. */
#ifndef FA_BENCH_GIVEN_OUT_H
#define FA_BENCH_GIVEN_OUT_H

#include <stdint.h>

#include "flashattn.h"

/* dout_i·out_i of row (b, h, i), in double, each tensor of any dtype. */
double bench_given_delta(const fa_tensor *dout, const fa_tensor *out, int64_t b, int64_t h, int64_t i);

/* Row i of dq for (batch b, query head h) from that row's lse and delta, in double:
 * dq_row[0..D) = scale·sum_j P_ij·(dP_ij - delta)·m'_ij·k_j over the keys row i sees, with
 * P_ij = exp(s_ij - lse), s_ij and m'_ij the modified score and its derivative (ref_modify) and
 * dP_ij = dout_i·v_j: ref_backward_dq_row with the statistics given, the mirror of
 * ref_backward_dkdv_row_stats (tests/kit/reference_backward.h). A row with lse = -inf (it sees nothing)
 * gets zeros. q, k, v, dout must be f32 or f64 (the oracle copies of problem.h). */
void bench_dq_row_stats(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                        const fa_tensor *dout, int64_t b, int64_t h, int64_t i, double lse, double delta,
                        double *dq_row);

#endif

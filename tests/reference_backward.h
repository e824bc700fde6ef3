/* The float64 oracle for the backward pass: the analytic gradients, naively. */
#ifndef FA_REFERENCE_BACKWARD_H
#define FA_REFERENCE_BACKWARD_H

#include "reference.h"

/* Gradients of L = sum(dout ∘ out) with out = attention(q, k, v), all in double.
 * dq [B][Hq][Nq][D], dk [B][Hkv][Nk][D], dv [B][Hkv][Nk][Dv], contiguous; any may be NULL.
 * Probabilities come from the oracle's own forward (not from the library's lse). */
void ref_backward(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                  const fa_tensor *dout, double *dq, double *dk, double *dv);

/* The same algorithm in float32 arithmetic: the yardstick for an f32 backward's error. */
void ref_backward_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                            const fa_tensor *dout, double *dq, double *dk, double *dv);

#endif

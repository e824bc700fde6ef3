/* SPDX-License-Identifier: BSD-3-Clause */
/* The float64 oracle: naive attention, one row at a time, straight from the definition.
 * It shares no code with the library on purpose; tests and fa-bench both judge against it. */
#ifndef FA_REFERENCE_H
#define FA_REFERENCE_H

#include <stdint.h>

#include "flashattn.h"

/* Reads element (b, h, s, d) of an f32 or f64 tensor as a double. */
double ref_load(const fa_tensor *t, int64_t b, int64_t h, int64_t s, int64_t d);

/* Whether query row i may see key j under causal mode c (Nq, Nk: sequence lengths). */
int ref_visible(fa_causal c, int64_t nq, int64_t nk, int64_t i, int64_t j);

/* One output row in float64: out_row[0..Dv) and *lse for (batch b, query head h, query i).
 * p NULL means defaults. A row that sees no key gets zeros and lse = -INFINITY.
 * Uses the two-pass max-subtracted softmax, all in double. */
void ref_forward_row(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                     int64_t b, int64_t h, int64_t i, double *out_row, double *lse);

/* The whole forward in float64: out is [B][Hq][Nq][Dv] contiguous, lse [B][Hq][Nq]; either may be NULL. */
void ref_forward(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v, double *out,
                 double *lse);

/* The same naive algorithm carried out in float32 arithmetic (sequential dot products, expf):
 * the yardstick for how much error an f32 implementation may have. Same layout as ref_forward. */
void ref_forward_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                           double *out, double *lse);

/* One row of ref_forward_naive_f32 (the same float32 arithmetic), for tests that check a sample of
 * rows. Same conventions as ref_forward_row. */
void ref_forward_row_naive_f32(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                               int64_t b, int64_t h, int64_t i, double *out_row, double *lse);

#endif

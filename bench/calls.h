/* SPDX-License-Identifier: BSD-3-Clause */
/* The library calls one timed repetition of each --pass makes, in the form bench_time_calls takes. */
#ifndef FA_BENCH_CALLS_H
#define FA_BENCH_CALLS_H

#include "flashattn.h"
#include "options.h"
#include "problem.h"
#include "timing.h"

typedef struct {
    fa_context *ctx;
    const fa_params *params;
    const bench_problem *pb; /* writes go to its out, lse (and dq, dk, dv) buffers */
} bench_call;

/* fa_forward: q, k, v -> out, lse. */
fa_status bench_call_forward(void *call);

/* fa_backward: q, k, v, out, lse, dout -> dq, dk, dv (out and lse must hold a forward's result). */
fa_status bench_call_backward(void *call);

/* fa_forward then fa_backward on its out and lse. */
fa_status bench_call_forward_backward(void *call);

/* The call that one repetition of the pass is, and its name for messages. */
bench_call_fn bench_pass_call(bench_pass pass);
const char *bench_pass_call_name(bench_pass pass);

#endif

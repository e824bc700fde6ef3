/* SPDX-License-Identifier: BSD-3-Clause */
// The timed calls: thin wrappers so that every pass is timed by the same loop.
#include "calls.h"

fa_status bench_call_forward(void *call)
{
    const bench_call *c = call;
    return fa_forward(c->ctx, c->params, &c->pb->q, &c->pb->k, &c->pb->v, &c->pb->out, c->pb->lse);
}

fa_status bench_call_backward(void *call)
{
    const bench_call *c = call;
    const bench_problem *pb = c->pb;
    return fa_backward(c->ctx, c->params, &pb->q, &pb->k, &pb->v, &pb->out, &pb->dout, pb->lse, &pb->dq,
                       &pb->dk, &pb->dv);
}

fa_status bench_call_forward_backward(void *call)
{
    fa_status s = bench_call_forward(call);
    return s != FA_OK ? s : bench_call_backward(call);
}

bench_call_fn bench_pass_call(bench_pass pass)
{
    switch (pass) {
    case BENCH_PASS_BWD: return bench_call_backward;
    case BENCH_PASS_FWDBWD: return bench_call_forward_backward;
    default: return bench_call_forward;
    }
}

const char *bench_pass_call_name(bench_pass pass)
{
    switch (pass) {
    case BENCH_PASS_BWD: return "fa_backward";
    case BENCH_PASS_FWDBWD: return "fa_forward + fa_backward";
    default: return "fa_forward";
    }
}

/* The tensors one benchmark run works on: allocated once, 64-byte aligned, filled from a seed.
 * The backward pass (dout, dq, dk, dv) will be added here when fa-bench gains --pass. */
#ifndef FA_BENCH_PROBLEM_H
#define FA_BENCH_PROBLEM_H

#include <stddef.h>
#include <stdint.h>

#include "flashattn.h"
#include "options.h"

typedef struct {
    bench_shape shape;
    fa_tensor q, k, v, out; /* views over the buffers below, in the requested layout */
    void *lse;              /* contiguous [B][Hq][Nq] of double (f64) or float (f32) */
    size_t out_bytes, lse_bytes;
} bench_problem;

/* Allocates and fills q, k, v from (seed, dist); out and lse are filled with NaN so that a value the
 * library never writes cannot pass verification. Returns 0, or -1 after printing why to stderr. */
int bench_problem_init(bench_problem *p, const bench_shape *s, bench_dist dist, uint64_t seed);

/* Refills out and lse with NaN (before a call whose output is about to be verified). */
void bench_problem_poison_outputs(bench_problem *p);

/* Frees every buffer; a zeroed or half-initialized problem is fine. */
void bench_problem_free(bench_problem *p);

/* Forward FLOP of one call: 2*B*Hq*Nq*Nk*(D+Dv), halved for causal (see --help). */
double bench_forward_flops(const bench_shape *s);

#endif

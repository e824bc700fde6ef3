/* SPDX-License-Identifier: BSD-3-Clause */
/* The gradients through the score modifiers are the derivatives of the library's own forward:
 * central finite differences of L = sum(dout ∘ out), out = fa_forward(q, k, v, p), against dq, dk,
 * dv and dsinks from fa_backward, on small f64 problems, through softcap (its 1 - tanh², capped
 * hard at 1 and 1.5), ALiBi, bias (constants: they change the probabilities, not the chain rule),
 * windows and sinks (dsinks = dL/dsinks[h], a float rounded once).
 *
 * The stencil, its error and the tolerance: finite_diff.h. A sink logit is a float: the sinks are
 * multiples of 2^-8 below 4 in magnitude (tm_mods), so x ± 2h is exact in float too, and dsinks'
 * rounding to float (at most 2^-24 relative) stays inside the 1e-7. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "finite_diff.h"
#include "modifiers.h"

#define SAMPLES_PER_TENSOR 10

/* batch, q heads, kv heads, Nq, Nk, D, Dv: Nq < Nk and Nq > Nk, grouped and multi-query heads */
static const tu_shape shapes[] = {
    {FA_F64, 1, 2, 1, 9, 14, 6, 5, TU_BHSD},
    {FA_F64, 2, 2, 2, 13, 7, 4, 3, TU_BHSD},
    {FA_F64, 1, 3, 1, 17, 21, 8, 8, TU_BHSD},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static const struct {
    const char *name;
    tm_spec spec;
} configs[] = {
    {"softcap 1.5 + ALiBi", {FA_CAUSAL_NONE, -1, -1, 1.5, 1, TM_BIAS_OFF, 0}},
    {"sinks + ALiBi + window 4/1, bottom-right", {FA_CAUSAL_BOTTOM_RIGHT, 4, 1, 0.0, 1, TM_BIAS_OFF, 1}},
    {"softcap 1 + sinks + key padding, top-left",
     {FA_CAUSAL_TOP_LEFT, -1, -1, 1.0, 0, TM_BIAS_KEY_PADDING, 1}},
    {"all: softcap 2, ALiBi, full bias, sinks, window 5/-1",
     {FA_CAUSAL_NONE, 5, -1, 2.0, 1, TM_BIAS_FULL, 1}},
};
#define N_CONFIGS ((int)(sizeof configs / sizeof configs[0]))

/* dsinks[h] for every head. */
static void check_sinks(fd_run *r, tm_mods *m, int64_t heads)
{
    double *analytic = malloc(sizeof(double) * (size_t)heads);
    for (int64_t h = 0; h < heads; h++) analytic[h] = (double)m->p.dsinks[h];
    const double floor_abs = fd_floor(analytic, heads);
    for (int64_t h = 0; h < heads; h++) fd_check_float(r, "sinks", h, &m->sinks[h], analytic[h], floor_abs);
    free(analytic);
}

static void check_problem(fa_context *ctx, const tu_shape *s, const tm_spec *spec, const char *name,
                          uint64_t seed, int *checked)
{
    tu_rng rng = tu_rng_make(seed);
    tub_problem bp;
    tub_make(&bp, s, &rng, 1.5);
    tm_mods m;
    tm_mods_make(&m, spec, s, 0.0, &rng);
    if (spec->sinks) tm_mods_want_dsinks(&m);
    char desc[600], shape[512];
    tm_desc(s, &m, shape, sizeof shape);
    snprintf(desc, sizeof desc, "%s (%s)", name, shape);
    cr_assert_eq(tub_forward(ctx, &m.p, &bp), FA_OK, "%s", desc);
    cr_assert_eq(tub_backward(ctx, &m.p, &bp), FA_OK, "%s", desc);
    fa_params p_forward = m.p; /* the probing forwards need no dsinks */
    p_forward.dsinks = NULL;
    fd_run r = fd_run_make(ctx, &bp, &p_forward, desc, seed);
    fd_check_inputs(&r, &rng, SAMPLES_PER_TENSOR);
    if (spec->sinks) check_sinks(&r, &m, s->q_heads);
    *checked += r.checked;
    fd_run_free(&r);
    tm_mods_free(&m);
    tub_free(&bp);
}

Test(backward_modifiers_finite_diff, gradients_and_dsinks_match_central_differences_through_every_modifier)
{
    uint64_t seed = tu_test_seed();
    /* hundreds of tiny forwards: no team to wake */
    /* several tiles each way, windows skipping some */
    fa_context *ctx = tu_context(1, 5, 4);
    int checked = 0;
    for (int c = 0; c < N_CONFIGS; c++)
        for (int x = 0; x < N_SHAPES; x++)
            check_problem(ctx, &shapes[x], &configs[c].spec, configs[c].name, seed + (uint64_t)(10 * c + x),
                          &checked);
    cr_assert_gt(checked, 0);
    fa_context_destroy(ctx);
}

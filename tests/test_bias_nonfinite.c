/* SPDX-License-Identifier: BSD-3-Clause */
/* The NaN/Inf policy for bias entries (include/flashattn.h: "NaN or Inf inside q, k, v or the bias
 * is not an error: it reaches exactly the rows that see it", and "-inf entries mask"). One entry
 * bias(b, h, i, j) of a full [B][Hq][Nq][Nk] bias (otherwise finite) is set to x, under a window
 * (4 keys left, 1 right of the diagonal) so that row i sees few keys and its tiles hold positions
 * it does not see, on small blocks and automatic ones, f32 and f64, without and with sinks:
 *   - at a position row i sees:
 *       NaN:  the score is NaN, so row i is NaN: every out value and lse; in the backward its dq
 *             row, the dk and dv rows of every key it sees (P_ij = e^(s_ij - lse_i)) and dsinks[h];
 *             everything else is finite and matches the oracle (which computes the same NaNs);
 *       +inf: IEEE arithmetic gives e^(+inf) = +inf in the numerator and the denominator, so row i's
 *             out is inf/inf = NaN, and its lse, computed max-subtracted (the row max is +inf,
 *             e^(inf - inf) = NaN), NaN as well: the same outputs as for a NaN, and the oracle,
 *             written max-subtracted like the library, agrees;
 *       -inf: a mask: the key gets probability 0, everything stays finite and matches the oracle;
 *   - at a position an index mask (the window) hides from row i, NaN, +inf or -inf changes
 *     nothing: out, lse, dq, dk, dv and dsinks are the same bytes as with the finite entry. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "modifiers.h"
#include "reference.h"
#include "util.h"
#include "util_backward.h"

/* Nq < Nk, grouped heads; the entry is at (b 1, h 1, i 17): diagonal 27, visible keys 23 .. 28. */
static const tu_shape base_shape = {FA_F32, 2, 2, 1, 30, 40, 8, 6, TU_BHSD};
enum { AT_B = 1, AT_H = 1, AT_I = 17, VISIBLE_J = 25, HIDDEN_LEFT_J = 22, HIDDEN_RIGHT_J = 29 };
static const int blocks[2][2] = {{0, 0}, {8, 8}};

typedef struct {
    tub_problem bp;
    tm_mods m;
    tu_shape s;
    char desc[600];
} policy_problem;

static void policy_make(policy_problem *pp, fa_dtype dtype, int sinks, uint64_t seed)
{
    pp->s = base_shape;
    pp->s.dtype = dtype;
    tm_spec spec = {FA_CAUSAL_NONE, 4, 1, 0.0, 1, TM_BIAS_FULL, sinks};
    tu_rng rng = tu_rng_make(seed);
    tub_make(&pp->bp, &pp->s, &rng, 2.0);
    tm_mods_make(&pp->m, &spec, &pp->s, 0.0, &rng);
    kit_fill_uniform(&pp->m.bias, &rng.state, -1.0, 1.0); /* finite: the one entry is the only exception */
    tm_desc(&pp->s, &pp->m, pp->desc, sizeof pp->desc);
    cr_assert(ref_sees(&pp->m.p, pp->s.q_len, pp->s.kv_len, AT_I, VISIBLE_J) &&
              !ref_sees(&pp->m.p, pp->s.q_len, pp->s.kv_len, AT_I, HIDDEN_LEFT_J) &&
              !ref_sees(&pp->m.p, pp->s.q_len, pp->s.kv_len, AT_I, HIDDEN_RIGHT_J));
}

static void policy_free(policy_problem *pp)
{
    tm_mods_free(&pp->m);
    tub_free(&pp->bp);
}

/* Forward and backward on ctx; with sinks, dsinks too. */
static void run_both(fa_context *ctx, policy_problem *pp)
{
    tu_problem_fill_canary(&pp->bp.fw);
    tub_fill_grad_canary(&pp->bp);
    pp->m.p.dsinks = NULL;
    cr_assert_eq(tub_forward(ctx, &pp->m.p, &pp->bp), FA_OK, "%s: forward", pp->desc);
    if (pp->m.spec.sinks) tm_mods_want_dsinks(&pp->m);
    cr_assert_eq(tub_backward(ctx, &pp->m.p, &pp->bp), FA_OK, "%s: backward", pp->desc);
}

/* The bytes of every output: out, lse, dq, dk, dv (their whole buffers) and dsinks. */
typedef struct {
    unsigned char *part[6];
    size_t bytes[6];
} outputs;

static outputs outputs_copy(const policy_problem *pp)
{
    const kit_buf *bufs[5] = {&pp->bp.fw.out_buf, &pp->bp.fw.lse_buf, &pp->bp.grad_buf[0],
                              &pp->bp.grad_buf[1], &pp->bp.grad_buf[2]};
    outputs o;
    for (int x = 0; x < 5; x++) {
        o.bytes[x] = bufs[x]->bytes + 2 * KIT_GUARD;
        o.part[x] = malloc(o.bytes[x]);
        memcpy(o.part[x], bufs[x]->base, o.bytes[x]);
    }
    o.bytes[5] = pp->m.spec.sinks ? pp->m.dsinks_buf.bytes + 2 * KIT_GUARD : 0;
    o.part[5] = malloc(o.bytes[5] + 1);
    if (o.bytes[5]) memcpy(o.part[5], pp->m.dsinks_buf.base, o.bytes[5]);
    return o;
}

static void outputs_free(outputs *o)
{
    for (int x = 0; x < 6; x++) free(o->part[x]);
}

static void set_entry(policy_problem *pp, int64_t j, double x)
{
    kit_tensor_store(&pp->m.bias, AT_B, AT_H, AT_I, j, x);
}

Test(bias_nonfinite, nan_inf_or_minus_inf_at_a_position_the_window_hides_changes_no_byte)
{
    static const char *outs[6] = {"out", "lse", "dq", "dk", "dv", "dsinks"};
    static const double values[3] = {NAN, INFINITY, -INFINITY};
    uint64_t seed = tu_test_seed();
    for (int bl = 0; bl < 2; bl++) {
        fa_context *ctx = tu_context(0, blocks[bl][0], blocks[bl][1]);
        for (int t = 0; t < 2; t++)
            for (int sinks = 0; sinks < 2; sinks++) {
                policy_problem pp;
                policy_make(&pp, t ? FA_F64 : FA_F32, sinks, seed + (uint64_t)(4 * bl + 2 * t + sinks));
                run_both(ctx, &pp);
                outputs clean = outputs_copy(&pp);
                static const int64_t hidden[2] = {HIDDEN_LEFT_J, HIDDEN_RIGHT_J};
                for (int hpos = 0; hpos < 2; hpos++)
                    for (int v = 0; v < 3; v++) {
                        double saved = kit_tensor_load(&pp.m.bias, AT_B, AT_H, AT_I, hidden[hpos]);
                        set_entry(&pp, hidden[hpos], values[v]);
                        run_both(ctx, &pp);
                        outputs now = outputs_copy(&pp);
                        for (int x = 0; x < 6; x++)
                            cr_expect(memcmp(clean.part[x], now.part[x], clean.bytes[x]) == 0,
                                      "%s, blocks %d/%d, seed %llu: bias %g at hidden key %d of row (b %d, h "
                                      "%d, i %d) "
                                      "changed %s",
                                      pp.desc, blocks[bl][0], blocks[bl][1], (unsigned long long)seed,
                                      values[v], (int)hidden[hpos], AT_B, AT_H, AT_I, outs[x]);
                        outputs_free(&now);
                        set_entry(&pp, hidden[hpos], saved);
                    }
                outputs_free(&clean);
                policy_free(&pp);
            }
        fa_context_destroy(ctx);
    }
}

/* Every value of row (AT_B, AT_H, AT_I) of out and lse is NaN, every other one finite. */
static void expect_only_the_row_nan(const policy_problem *pp, const char *what)
{
    const tu_shape *s = &pp->s;
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t h = 0; h < s->q_heads; h++)
            for (int64_t i = 0; i < s->q_len; i++) {
                int mine = b == AT_B && h == AT_H && i == AT_I;
                double lse = tu_lse_get(&pp->bp.fw, (b * s->q_heads + h) * s->q_len + i);
                cr_expect(mine ? isnan(lse) : isfinite(lse),
                          "%s (%s): lse of row (b %lld, h %lld, i %lld) is %g", what, pp->desc, (long long)b,
                          (long long)h, (long long)i, lse);
                for (int64_t y = 0; y < s->dim_v; y++) {
                    double o = kit_tensor_load(&pp->bp.fw.out, b, h, i, y);
                    cr_expect(mine ? isnan(o) : isfinite(o),
                              "%s (%s): out[%lld] of row (b %lld, h %lld, i %lld) is %g", what, pp->desc,
                              (long long)y, (long long)b, (long long)h, (long long)i, o);
                }
            }
}

/* Forward and backward with the entry at the visible key set to x, against the oracle (non-finite
 * values must match it exactly, finite ones within the accuracy rules). */
static void run_visible(double x, int expect_nan_row)
{
    uint64_t seed = tu_test_seed();
    for (int bl = 0; bl < 2; bl++) {
        fa_context *ctx = tu_context(0, blocks[bl][0], blocks[bl][1]);
        for (int t = 0; t < 2; t++)
            for (int sinks = 0; sinks < 2; sinks++) {
                policy_problem pp;
                policy_make(&pp, t ? FA_F64 : FA_F32, sinks, seed + (uint64_t)(4 * bl + 2 * t + sinks));
                set_entry(&pp, VISIBLE_J, x);
                run_both(ctx, &pp);
                char what[160], msg[512];
                snprintf(what, sizeof what,
                         "bias %g at visible key %d of row (b %d, h %d, i %d), blocks %d/%d, seed %llu", x,
                         VISIBLE_J, AT_B, AT_H, AT_I, blocks[bl][0], blocks[bl][1], (unsigned long long)seed);
                if (expect_nan_row) {
                    expect_only_the_row_nan(&pp, what);
                } else {
                    int64_t first;
                    cr_expect_eq(tub_count_nonfinite(&pp.bp.fw.out, &first), 0,
                                 "%s (%s): out not finite at %lld", what, pp.desc, (long long)first);
                }
                cr_expect(tu_check_picked_accuracy(&pp.bp.fw, &pp.m.p, INT64_MAX, 1e-12, msg, sizeof msg),
                          "%s (%s): %s", what, pp.desc, msg);
                int f32 = !t;
                tub_ref oracle, naive;
                tub_ref_compute(&oracle, &pp.bp, &pp.m.p);
                if (f32) tub_ref_compute_naive_f32(&naive, &pp.bp, &pp.m.p);
                cr_expect(
                    tub_check_accuracy(&pp.bp, &pp.m.p, &oracle, f32 ? &naive : NULL, 1e-11, msg, sizeof msg),
                    "%s (%s): %s", what, pp.desc, msg);
                if (sinks)
                    cr_expect(tm_check_dsinks(&pp.bp, &pp.m, msg, sizeof msg), "%s (%s): %s", what, pp.desc,
                              msg);
                if (expect_nan_row) { /* the backward's NaNs: that row's dq, the keys it sees; dsinks[h] */
                    for (int64_t d = 0; d < pp.s.dim; d++)
                        cr_expect(isnan(kit_tensor_load(&pp.bp.grad[TUB_DQ], AT_B, AT_H, AT_I, d)),
                                  "%s (%s): dq[%lld] of the row is not NaN", what, pp.desc, (long long)d);
                    int64_t nan_dv = 0, nan_dk = 0, seen = 0, first,
                            kvh = AT_H / (pp.s.q_heads / pp.s.kv_heads);
                    for (int64_t j = 0; j < pp.s.kv_len; j++)
                        if (ref_sees(&pp.m.p, pp.s.q_len, pp.s.kv_len, AT_I, j)) seen++;
                    nan_dk = tub_count_nonfinite(&pp.bp.grad[TUB_DK], &first);
                    nan_dv = tub_count_nonfinite(&pp.bp.grad[TUB_DV], &first);
                    cr_expect(nan_dk == seen * pp.s.dim && nan_dv == seen * pp.s.dim_v,
                              "%s (%s): %lld dk and %lld dv values are not finite; the row sees %lld keys of "
                              "kv head %lld",
                              what, pp.desc, (long long)nan_dk, (long long)nan_dv, (long long)seen,
                              (long long)kvh);
                    if (sinks)
                        for (int64_t h = 0; h < pp.s.q_heads; h++)
                            cr_expect(h == AT_H ? isnan(pp.m.p.dsinks[h]) : isfinite(pp.m.p.dsinks[h]),
                                      "%s (%s): dsinks[%lld] = %g", what, pp.desc, (long long)h,
                                      (double)pp.m.p.dsinks[h]);
                }
                if (f32) tub_ref_free(&naive);
                tub_ref_free(&oracle);
                policy_free(&pp);
            }
        fa_context_destroy(ctx);
    }
}

Test(bias_nonfinite, nan_at_a_visible_position_makes_exactly_that_row_nan)
{
    run_visible(NAN, 1);
}

Test(bias_nonfinite, plus_inf_at_a_visible_position_makes_exactly_that_row_nan_as_ieee_inf_over_inf)
{
    run_visible(INFINITY, 1);
}

Test(bias_nonfinite, minus_inf_at_a_visible_position_masks_that_key)
{
    run_visible(-INFINITY, 0);
}

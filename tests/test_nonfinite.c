/* SPDX-License-Identifier: BSD-3-Clause */
/* The NaN/Inf policy (include/flashattn.h: "NaN or Inf inside q, k or v is not an error: it reaches
 * exactly the rows that see it"), forward and backward together, f32 and f64, every causal mode,
 * small tiles (masked and partly masked tiles, padding lanes, split-KV) and default ones.
 *
 * One element x of q, k, v or dout is made non-finite. Which outputs can depend on it follows from
 * the definitions (P_ij = softmax_j(s_ij) over the keys row i sees, out_i = Σ_j P_ij v_j,
 * delta_i = dout_i·out_i, dS_ij = P_ij (dout_i·v_j − delta_i), dq_i = scale Σ_j dS_ij k_j,
 * dk_j = scale Σ_i dS_ij q_i, dv_j = Σ_i P_ij dout_i). The rows R it reaches are: its own row for
 * q and dout, the rows that see key j for k and v — in both cases only rows that see some key (a
 * row that sees none is exact zeros and contributes nothing, whatever its inputs). Then:
 *   out_i, lse_i   i in R (for v: out_i in x's column only; for dout: nothing; lse: q and k only)
 *   dq_i           i in R
 *   dk_j           some row of R sees j
 *   dv_j           some row of R sees j (for v: nothing; for dout: x's column only)
 * A NaN makes every one of these NaN, and nothing else; an infinity may leave anything there, and
 * nothing else. Everything outside the set must be finite and agree with the float64 oracle on
 * the same input. Outputs written nowhere else (canaries in gaps and guards), inputs unchanged.
 * Then: -inf logits (a key row with -inf where every query of its head is positive) act as masks.
 * tests/test_extremes.c (forward, NaN in k or v, default tiles) and tests/test_backward_nan.c (NaN
 * in v through the backward) check parts of this; this file covers the rest. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "util.h"
#include "util_backward.h"

enum { SRC_Q, SRC_K, SRC_V, SRC_DOUT };
static const char *const src_name[4] = {"q", "k", "v", "dout"};

typedef struct {
    int tensor;
    int64_t b, h, r, c; /* h: a query head for q and dout, a kv head for k and v; r: row or key */
    double x;
} source;

typedef struct {
    int threads, block_q, block_k;
} ctx_cfg;

/* Small tiles: masked and partly masked tiles, padding lanes, and split-KV in the forward. */
static const ctx_cfg configs[] = {{2, 5, 7}, {3, 0, 0}};

static const tu_shape shapes[2] = {
    {FA_F64, 2, 4, 2, 33, 40, 12, 9, TU_BHSD}, /* Nq < Nk */
    {FA_F64, 2, 4, 2, 40, 27, 12, 9, TU_BHSD}, /* Nq > Nk: BOTTOM_RIGHT masks rows 0..12 entirely */
};

/* Whether row i sees key j under the masks of m (its causal mode and window). */
static int sees(const tu_shape *s, const fa_params *m, int64_t i, int64_t j)
{
    return ref_sees(m, s->q_len, s->kv_len, i, j);
}

static int sees_any(const tu_shape *s, const fa_params *m, int64_t i)
{
    for (int64_t j = 0; j < s->kv_len; j++)
        if (sees(s, m, i, j)) return 1;
    return 0;
}

/* ---- which outputs the source can reach ------------------------------------------------------ */

typedef struct {
    unsigned char *row;   /* [B][Hq][Nq]: R */
    unsigned char *out;   /* [rows][Dv] */
    unsigned char *lse;   /* [rows] */
    unsigned char *gr[3]; /* dq, dk, dv: flat [B][H][S][D] */
} taint;

static void taint_make(taint *t, const tu_shape *s, const fa_params *m, const source *x)
{
    int64_t G = s->q_heads / s->kv_heads, rows = s->batch * s->q_heads * s->q_len;
    int64_t n[3] = {rows * s->dim, s->batch * s->kv_heads * s->kv_len * s->dim,
                    s->batch * s->kv_heads * s->kv_len * s->dim_v};
    t->row = calloc((size_t)rows, 1);
    t->out = calloc((size_t)(rows * s->dim_v), 1);
    t->lse = calloc((size_t)rows, 1);
    for (int g = 0; g < 3; g++) t->gr[g] = calloc((size_t)n[g], 1);
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t h = 0; h < s->q_heads; h++)
            for (int64_t i = 0; i < s->q_len; i++) {
                int64_t row = (b * s->q_heads + h) * s->q_len + i;
                int in_r;
                if (x->tensor == SRC_Q || x->tensor == SRC_DOUT)
                    in_r = b == x->b && h == x->h && i == x->r;
                else
                    in_r = b == x->b && h / G == x->h && sees(s, m, i, x->r);
                in_r = in_r && sees_any(s, m, i);
                if (!in_r) continue;
                t->row[row] = 1;
                if (x->tensor != SRC_DOUT)
                    for (int64_t y = 0; y < s->dim_v; y++)
                        t->out[row * s->dim_v + y] = (unsigned char)(x->tensor != SRC_V || y == x->c);
                t->lse[row] = (unsigned char)(x->tensor == SRC_Q || x->tensor == SRC_K);
                for (int64_t d = 0; d < s->dim; d++) t->gr[TUB_DQ][row * s->dim + d] = 1;
                for (int64_t j = 0; j < s->kv_len; j++) {
                    if (!sees(s, m, i, j)) continue;
                    int64_t key = (b * s->kv_heads + h / G) * s->kv_len + j;
                    for (int64_t d = 0; d < s->dim; d++) t->gr[TUB_DK][key * s->dim + d] = 1;
                    for (int64_t y = 0; y < s->dim_v; y++)
                        if (x->tensor == SRC_Q || x->tensor == SRC_K || (x->tensor == SRC_DOUT && y == x->c))
                            t->gr[TUB_DV][key * s->dim_v + y] = 1;
                }
            }
}

static void taint_free(taint *t)
{
    free(t->row);
    free(t->out);
    free(t->lse);
    for (int g = 0; g < 3; g++) free(t->gr[g]);
}

/* ---- comparisons on selected values ---------------------------------------------------------- */

/* The forward outputs of `lib` where out_sel / lse_sel are set, against the oracle on the inputs of
 * `src` (the same problem, or a copy): every selected value finite (or the oracle's -inf lse of a
 * row that sees no key), and the suite's rule
 * (f64: 1e-12 normwise relative; f32: 2 x the naive f32 error + 1e-6). */
static int check_forward(const tu_problem *lib, const tu_problem *src, const fa_params *p,
                         const unsigned char *out_sel, const unsigned char *lse_sel, char *msg, size_t size)
{
    int64_t rows = tu_problem_rows(lib), dv = lib->shape.dim_v;
    int64_t *all = malloc(sizeof(int64_t) * (size_t)rows);
    for (int64_t r = 0; r < rows; r++) all[r] = r;
    tu_ref ref, naive;
    tu_ref_compute(&ref, src, p, all, rows);
    int f32 = lib->shape.dtype == FA_F32;
    if (f32) tu_ref_compute_naive_f32(&naive, src, p, all, rows);
    double err[2] = {0, 0}, max_ref[2] = {0, 0}, naive_err[2] = {0, 0};
    int ok = 1;
    for (int64_t r = 0; r < rows && ok; r++) {
        int64_t b = r / (lib->shape.q_heads * lib->shape.q_len),
                h = (r / lib->shape.q_len) % lib->shape.q_heads, i = r % lib->shape.q_len;
        for (int64_t y = 0; y <= dv && ok; y++) { /* y == dv: the lse */
            int is_lse = y == dv;
            if (!(is_lse ? lse_sel[r] : out_sel[r * dv + y])) continue;
            double got = is_lse ? tu_lse_get(lib, r) : kit_tensor_load(&lib->out, b, h, i, y);
            double want = is_lse ? ref.lse[r] : ref.out[r * dv + y];
            if (isinf(want) && got == want) continue; /* lse = -inf of a row that sees no key */
            if (!isfinite(got) || !isfinite(want)) {
                snprintf(msg, size,
                         "%s of row %lld%s: lib %g, oracle %g (must be finite, or the same infinity)",
                         is_lse ? "lse" : "out", (long long)r, is_lse ? "" : " (a column)", got, want);
                ok = 0;
                break;
            }
            if (fabs(got - want) > err[is_lse]) err[is_lse] = fabs(got - want);
            if (fabs(want) > max_ref[is_lse]) max_ref[is_lse] = fabs(want);
            if (f32) {
                double nv = is_lse ? naive.lse[r] : naive.out[r * dv + y];
                if (fabs(nv - want) > naive_err[is_lse]) naive_err[is_lse] = fabs(nv - want);
            }
        }
    }
    for (int k = 0; k < 2 && ok; k++) {
        double limit =
            f32 ? 2.0 * naive_err[k] + 1e-6 * (k && max_ref[k] > 1.0 ? max_ref[k] : 1.0) : 1e-12 * max_ref[k];
        if (!(err[k] <= limit)) {
            snprintf(msg, size, "%s: max error %.3e > limit %.3e (max |ref| %.3e)", k ? "lse" : "out", err[k],
                     limit, max_ref[k]);
            ok = 0;
        }
    }
    tu_ref_free(&ref);
    if (f32) tu_ref_free(&naive);
    free(all);
    return ok;
}

/* The gradients of `lib` where sel[g] is set against an oracle: every selected value finite, and
 * the rule of tub_check_accuracy with bounds from the finite inputs (f64: 1e-11 x max(max|ref|,
 * 1e-4 x bound); f32: 3 x the naive f32 error + 1e-5). */
static int check_grads(const tub_problem *lib, const tub_ref *oracle, const tub_ref *naive,
                       unsigned char *const sel[3], const double bound[3], char *msg, size_t size)
{
    static const char *const name[3] = {"dq", "dk", "dv"};
    for (int g = 0; g < 3; g++) {
        /* tub_compare_view counts NaN against NaN as agreement: finiteness is checked first */
        double *v = tub_view_copy(&lib->grad[g]);
        int64_t n = tub_numel(&lib->grad[g]), bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (sel[g][i] && (!isfinite(v[i]) || !isfinite(oracle->grad[g][i]))) bad = i;
        if (bad >= 0)
            snprintf(msg, size, "%s at flat %lld: lib %g, oracle %g (must be finite here)", name[g],
                     (long long)bad, v[bad], oracle->grad[g][bad]);
        free(v);
        if (bad >= 0) return 0;
        tub_err e = tub_compare_view(&lib->grad[g], oracle->grad[g], sel[g]);
        if (e.mismatches) {
            snprintf(msg, size, "%s: %lld selected values non-finite, first at flat %lld: lib %g oracle %g",
                     name[g], (long long)e.mismatches, (long long)e.first_mismatch, e.worst_lib, e.worst_ref);
            return 0;
        }
        double limit;
        if (lib->fw.shape.dtype == FA_F64) {
            limit = 1e-11 * (e.max_ref > 1e-4 * bound[g] ? e.max_ref : 1e-4 * bound[g]);
        } else {
            tub_err ne = tub_compare_arrays(naive->grad[g], oracle->grad[g], n, sel[g]);
            limit = 3.0 * ne.max_err + 1e-5;
        }
        if (!(e.max_err <= limit)) {
            snprintf(msg, size, "%s: max error %.3e > limit %.3e at flat %lld: lib %.17g oracle %.17g",
                     name[g], e.max_err, limit, (long long)e.worst, e.worst_lib, e.worst_ref);
            return 0;
        }
    }
    return 1;
}

static fa_context *make_ctx(const ctx_cfg *cfg)
{
    return tu_context(cfg->threads, cfg->block_q, cfg->block_k);
}

/* ---- one non-finite element ----------------------------------------------------------------- */

static void set_source(tub_problem *bp, const source *x)
{
    const fa_tensor *t = x->tensor == SRC_Q   ? &bp->fw.q
                         : x->tensor == SRC_K ? &bp->fw.k
                         : x->tensor == SRC_V ? &bp->fw.v
                                              : &bp->dout;
    kit_tensor_store(t, x->b, x->h, x->r, x->c, x->x);
}

static void run_source(fa_context *ctx, const ctx_cfg *cfg, const tu_shape *s, const fa_params *masks,
                       const source *x, uint64_t seed)
{
    const fa_params p = *masks;
    tu_rng rng = tu_rng_make(seed);
    tub_problem bp;
    tub_make(&bp, s, &rng, 2.0);
    double bound[3];
    tub_grad_bounds(&bp, &p, bound); /* from the finite inputs */
    set_source(&bp, x);
    char desc[512];
    tub_desc(&bp, &p, cfg->block_q, cfg->block_k, desc, sizeof desc);
    size_t len = strlen(desc);
    snprintf(desc + len, sizeof desc - len, ", %d threads, %s[%lld][%lld][%lld][%lld] = %g, seed %llu",
             cfg->threads, src_name[x->tensor], (long long)x->b, (long long)x->h, (long long)x->r,
             (long long)x->c, x->x, (unsigned long long)seed);
    unsigned char *in_snap[4];
    const kit_buf *in_buf[4] = {&bp.fw.in[0], &bp.fw.in[1], &bp.fw.in[2], &bp.dout_buf};
    for (int i = 0; i < 4; i++) in_snap[i] = kit_buf_snapshot(in_buf[i]);

    fa_status st = tub_forward(ctx, &p, &bp);
    cr_assert_eq(st, FA_OK, "%s: forward status %d (non-finite input is not an error)", desc, st);
    st = tub_backward(ctx, &p, &bp);
    cr_assert_eq(st, FA_OK, "%s: backward status %d (non-finite input is not an error)", desc, st);
    cr_expect(tu_problem_only_defined_written(&bp.fw), "%s: forward wrote outside out and lse", desc);
    cr_expect(tub_grads_only_defined_written(&bp), "%s: backward wrote outside dq, dk, dv", desc);
    for (int i = 0; i < 4; i++) {
        cr_expect(kit_buf_equals_snapshot(in_buf[i], in_snap[i]), "%s: an input buffer changed", desc);
        free(in_snap[i]);
    }

    taint t;
    taint_make(&t, s, &p, x);
    int64_t rows = tu_problem_rows(&bp.fw);
    /* outside the reach: finite and as the oracle says */
    unsigned char *out_sel = malloc((size_t)(rows * s->dim_v)), *lse_sel = malloc((size_t)rows), *sel[3];
    for (int64_t i = 0; i < rows * s->dim_v; i++) out_sel[i] = !t.out[i];
    for (int64_t i = 0; i < rows; i++) lse_sel[i] = !t.lse[i];
    for (int g = 0; g < 3; g++) {
        int64_t n = tub_numel(&bp.grad[g]);
        sel[g] = malloc((size_t)n);
        for (int64_t i = 0; i < n; i++) sel[g][i] = !t.gr[g][i];
    }
    char msg[512];
    cr_expect(check_forward(&bp.fw, &bp.fw, &p, out_sel, lse_sel, msg, sizeof msg),
              "%s: forward, outside the reach: %s", desc, msg);
    tub_ref oracle, naive;
    tub_ref_compute(&oracle, &bp, &p);
    if (s->dtype == FA_F32) tub_ref_compute_naive_f32(&naive, &bp, &p);
    cr_expect(check_grads(&bp, &oracle, s->dtype == FA_F32 ? &naive : NULL, sel, bound, msg, sizeof msg),
              "%s: backward, outside the reach: %s", desc, msg);
    tub_ref_free(&oracle);
    if (s->dtype == FA_F32) tub_ref_free(&naive);

    /* a NaN reaches every value of its reach */
    if (isnan(x->x)) {
        int64_t missed = 0, first = -1;
        for (int64_t r = 0; r < rows; r++) {
            int64_t b = r / (s->q_heads * s->q_len), h = (r / s->q_len) % s->q_heads, i = r % s->q_len;
            for (int64_t y = 0; y < s->dim_v; y++)
                if (t.out[r * s->dim_v + y] && !isnan(kit_tensor_load(&bp.fw.out, b, h, i, y)) &&
                    missed++ == 0)
                    first = r;
            if (t.lse[r] && !isnan(tu_lse_get(&bp.fw, r)) && missed++ == 0) first = r;
        }
        cr_expect_eq(missed, 0, "%s: forward: %lld values that see the NaN are not NaN (first in row %lld)",
                     desc, (long long)missed, (long long)first);
        static const char *const name[3] = {"dq", "dk", "dv"};
        for (int g = 0; g < 3; g++) {
            double *v = tub_view_copy(&bp.grad[g]);
            missed = 0;
            first = -1;
            for (int64_t i = 0; i < tub_numel(&bp.grad[g]); i++)
                if (t.gr[g][i] && !isnan(v[i]) && missed++ == 0) first = i;
            cr_expect_eq(missed, 0,
                         "%s: %s: %lld values that depend on the NaN are not NaN (first at flat %lld)", desc,
                         name[g], (long long)missed, (long long)first);
            free(v);
        }
    }
    for (int g = 0; g < 3; g++) free(sel[g]);
    free(out_sel);
    free(lse_sel);
    taint_free(&t);
    tub_free(&bp);
}

/* Runs every source on every shape, dtype, causal mode and layout, under the window [left, right]
 * (-1: none); `cfg_all` runs every context configuration for every source, otherwise they take
 * turns. */
static void run_sources(uint64_t seed, const int *tensors, int n_tensors, const double *values, int n_values,
                        int cfg_all, int64_t left, int64_t right)
{
    fa_context *ctx[2] = {make_ctx(&configs[0]), make_ctx(&configs[1])};
    int turn = 0;
    for (int dt = 0; dt < 2; dt++)
        for (int sh = 0; sh < 2; sh++)
            for (int c = 0; c < 3; c++) {
                tu_shape s = shapes[sh];
                s.dtype = dt ? FA_F64 : FA_F32;
                s.layout = (tu_layout)((c + sh + dt) % 3);
                for (int ti = 0; ti < n_tensors; ti++)
                    for (int pos = 0; pos < 2; pos++)
                        for (int v = 0; v < n_values; v++) {
                            source x = {tensors[ti], 1, 1, 0, 0, values[v]};
                            switch (x.tensor) {
                            case SRC_Q:
                                x.h = 3, x.r = pos ? 5 : 20, x.c = 7;
                                break; /* row 5: masked (BR, Nq > Nk) */
                            case SRC_DOUT: x.b = 0, x.h = 2, x.r = pos ? 5 : 20, x.c = 2; break;
                            case SRC_K:
                                x.r = pos ? s.kv_len - 1 : 17, x.c = 5;
                                break; /* last key: few rows */
                            default: x.r = pos ? s.kv_len - 1 : 17, x.c = 4; break;
                            }
                            for (int k = 0; k < 2; k++) {
                                if (!cfg_all && k != turn % 2) continue;
                                fa_params masks = FA_PARAMS_INIT;
                                masks.causal = (fa_causal)c;
                                masks.window_left = left, masks.window_right = right;
                                run_source(ctx[k], &configs[k], &s, &masks, &x,
                                           seed + (uint64_t)(1000 * dt + 100 * sh + 10 * c + ti) +
                                               (uint64_t)pos);
                            }
                            turn++;
                        }
            }
    fa_context_destroy(ctx[0]);
    fa_context_destroy(ctx[1]);
}

Test(nonfinite, nan_in_one_key_of_k_or_v_reaches_exactly_the_rows_that_see_it_forward_and_backward)
{
    static const int tensors[] = {SRC_K, SRC_V};
    const double values[] = {NAN};
    run_sources(tu_test_seed(), tensors, 2, values, 1, 1, -1, -1);
}

/* Under a window every tile has a left edge as well as a diagonal one, and the products may run over
 * whole edge tiles once the operands some row does not see are finite (visible_accumulate.h): a
 * NaN in a key every row of a tile sees, in one some rows do not, or in a query or dout row, still
 * reaches exactly what the definitions say. */
Test(nonfinite, nan_under_a_window_reaches_exactly_the_rows_that_see_it_forward_and_backward)
{
    static const int tensors[] = {SRC_Q, SRC_K, SRC_V, SRC_DOUT};
    const double values[] = {NAN};
    run_sources(tu_test_part_seed("left"), tensors, 4, values, 1, 1, 6, -1);
    run_sources(tu_test_part_seed("both"), tensors, 4, values, 1, 0, 3, 4);
}

Test(nonfinite, inf_in_q_k_v_or_dout_and_nan_in_q_or_dout_stay_within_their_reach)
{
    static const int inf_tensors[] = {SRC_Q, SRC_K, SRC_V, SRC_DOUT}, nan_tensors[] = {SRC_Q, SRC_DOUT};
    const double infs[] = {INFINITY, -INFINITY}, nans[] = {NAN};
    run_sources(tu_test_part_seed("inf"), inf_tensors, 4, infs, 2, 0, -1, -1);
    run_sources(tu_test_part_seed("nan"), nan_tensors, 2, nans, 1, 0, -1, -1);
}

/* ---- -inf logits ------------------------------------------------------------------------------
 * With every query of a head having q[0] > 0 and a key row k_j = (-inf, finite...), the logit
 * q_i·k_j is exactly -inf (no 0·inf anywhere): the key is masked for the whole head. Expected: each
 * row is the oracle's row with those keys left out; a row whose every visible logit is -inf gets
 * exact zeros and lse = -inf like a fully masked row, and in the backward contributes nothing, so
 * dk and dv are the oracle's with those keys and rows left out, and dq too, except column 0 of the
 * rows that see a -inf key: there dq = scale Σ_j dS_ij k_j holds 0·(-inf) = NaN in IEEE arithmetic
 * (the limit is 0), and either is accepted.
 * The oracle runs on a copy in which -inf is -1e4 (the logit is then below -1400, whose exp is
 * exactly 0 in both float64 and float32) and the rows that see only -inf keys have dout = 0 (so
 * they contribute nothing there either). Masked keys: batch 0, kv head 0: all of them; batch 1,
 * kv head 1: keys 0..8 (a whole first tile of 7 and part of the next), 15, 22 and the last. */
static int minus_inf_key(const tu_shape *s, int64_t b, int64_t g, int64_t j)
{
    if (b == 0 && g == 0) return 1;
    return b == 1 && g == 1 && (j <= 8 || j == 15 || j == 22 || j == s->kv_len - 1);
}

static void copy_view(const fa_tensor *to, const fa_tensor *from)
{
    for (int64_t b = 0; b < from->batch; b++)
        for (int64_t h = 0; h < from->heads; h++)
            for (int64_t i = 0; i < from->seq; i++)
                for (int64_t d = 0; d < from->dim; d++)
                    kit_tensor_store(to, b, h, i, d, kit_tensor_load(from, b, h, i, d));
}

static void run_minus_inf(fa_context *ctx, const ctx_cfg *cfg, const tu_shape *s, fa_causal causal,
                          uint64_t seed, int *reported)
{
    fa_params p = FA_PARAMS_INIT;
    p.causal = causal;
    tu_rng rng = tu_rng_make(seed);
    tub_problem bp, cp;
    tub_make(&bp, s, &rng, 1.0);
    tu_shape cs = *s;
    cs.layout = TU_BHSD;
    tub_make(&cp, &cs, &rng, 1.0);
    double bound[3];
    tub_grad_bounds(&bp, &p, bound); /* before any -inf */
    int64_t G = s->q_heads / s->kv_heads, rows = tu_problem_rows(&bp.fw);
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t h = 0; h < s->q_heads; h++) {
            if (!minus_inf_key(s, b, h / G, 0)) continue;
            for (int64_t i = 0; i < s->q_len; i++)
                kit_tensor_store(&bp.fw.q, b, h, i, 0, tu_rng_uniform(&rng, 0.5, 1.5));
        }
    copy_view(&cp.fw.q, &bp.fw.q);
    copy_view(&cp.fw.k, &bp.fw.k);
    copy_view(&cp.fw.v, &bp.fw.v);
    copy_view(&cp.dout, &bp.dout);
    for (int64_t b = 0; b < s->batch; b++)
        for (int64_t g = 0; g < s->kv_heads; g++)
            for (int64_t j = 0; j < s->kv_len; j++)
                if (minus_inf_key(s, b, g, j)) {
                    kit_tensor_store(&bp.fw.k, b, g, j, 0, -INFINITY);
                    kit_tensor_store(&cp.fw.k, b, g, j, 0, -1e4);
                }
    /* Rows that see no finite logit (Z) and rows that see some -inf logit. */
    unsigned char *z = calloc((size_t)rows, 1), *sees_inf = calloc((size_t)rows, 1);
    for (int64_t r = 0; r < rows; r++) {
        int64_t b = r / (s->q_heads * s->q_len), h = (r / s->q_len) % s->q_heads, i = r % s->q_len;
        int finite = 0;
        for (int64_t j = 0; j < s->kv_len; j++) {
            if (!sees(s, &p, i, j)) continue;
            if (minus_inf_key(s, b, h / G, j))
                sees_inf[r] = 1;
            else
                finite = 1;
        }
        z[r] = (unsigned char)!finite;
        if (z[r])
            for (int64_t y = 0; y < s->dim_v; y++) kit_tensor_store(&cp.dout, b, h, i, y, 0.0);
    }
    char desc[512];
    tub_desc(&bp, &p, cfg->block_q, cfg->block_k, desc, sizeof desc);
    size_t len = strlen(desc);
    snprintf(desc + len, sizeof desc - len, ", %d threads, -inf logits, seed %llu", cfg->threads,
             (unsigned long long)seed);

    cr_assert_eq(tub_forward(ctx, &p, &bp), FA_OK, "%s: forward", desc);
    cr_assert_eq(tub_backward(ctx, &p, &bp), FA_OK, "%s: backward", desc);
    cr_expect(tu_problem_only_defined_written(&bp.fw) && tub_grads_only_defined_written(&bp),
              "%s: wrote outside the outputs", desc);
    /* rows with no finite logit: exact zeros, lse = -inf, dq = 0 outside column 0 */
    int64_t bad_z = 0, first = -1;
    for (int64_t r = 0; r < rows; r++) {
        if (!z[r]) continue;
        int64_t b = r / (s->q_heads * s->q_len), h = (r / s->q_len) % s->q_heads, i = r % s->q_len;
        int bad = tu_lse_get(&bp.fw, r) != -INFINITY;
        for (int64_t y = 0; y < s->dim_v; y++) bad |= kit_tensor_load(&bp.fw.out, b, h, i, y) != 0.0;
        for (int64_t d = 1; d < s->dim; d++) bad |= kit_tensor_load(&bp.grad[TUB_DQ], b, h, i, d) != 0.0;
        if (!sees_inf[r]) bad |= kit_tensor_load(&bp.grad[TUB_DQ], b, h, i, 0) != 0.0;
        if (bad && bad_z++ == 0) first = r;
    }
    cr_expect_eq(bad_z, 0,
                 "%s: %lld rows whose every logit is -inf are not zeros / lse -inf / dq 0 (first: row %lld)",
                 desc, (long long)bad_z, (long long)first);
    if (!*reported) { /* what column 0 of dq is where 0·(-inf) meets it: one row of each kind */
        for (int kind = 0; kind < 2; kind++)
            for (int64_t r = 0; r < rows; r++)
                if (sees_inf[r] && z[r] == kind) {
                    int64_t b = r / (s->q_heads * s->q_len), h = (r / s->q_len) % s->q_heads,
                            i = r % s->q_len;
                    fprintf(stderr, "[-inf logits] %s, dq[..][0] of a row that sees a -inf key (%s): %g\n",
                            s->dtype == FA_F64 ? "f64" : "f32", kind ? "all its logits -inf" : "some finite",
                            kit_tensor_load(&bp.grad[TUB_DQ], b, h, i, 0));
                    break;
                }
        *reported = 1;
    }
    /* every other row, and the gradients, against the oracle on the copy */
    unsigned char *out_sel = malloc((size_t)(rows * s->dim_v)), *lse_sel = malloc((size_t)rows), *sel[3];
    for (int64_t r = 0; r < rows; r++) {
        lse_sel[r] = !z[r];
        for (int64_t y = 0; y < s->dim_v; y++) out_sel[r * s->dim_v + y] = !z[r];
    }
    for (int g = 0; g < 3; g++) {
        int64_t n = tub_numel(&bp.grad[g]);
        sel[g] = malloc((size_t)n);
        memset(sel[g], 1, (size_t)n);
    }
    for (int64_t r = 0; r < rows; r++)
        if (sees_inf[r]) sel[TUB_DQ][r * s->dim] = 0;
    char msg[512];
    cr_expect(check_forward(&bp.fw, &cp.fw, &p, out_sel, lse_sel, msg, sizeof msg), "%s: forward: %s", desc,
              msg);
    tub_ref oracle, naive;
    tub_ref_compute(&oracle, &cp, &p);
    if (s->dtype == FA_F32) tub_ref_compute_naive_f32(&naive, &cp, &p);
    cr_expect(check_grads(&bp, &oracle, s->dtype == FA_F32 ? &naive : NULL, sel, bound, msg, sizeof msg),
              "%s: backward: %s", desc, msg);
    tub_ref_free(&oracle);
    if (s->dtype == FA_F32) tub_ref_free(&naive);
    for (int g = 0; g < 3; g++) free(sel[g]);
    free(out_sel);
    free(lse_sel);
    free(z);
    free(sees_inf);
    tub_free(&cp);
    tub_free(&bp);
}

Test(nonfinite, minus_inf_logits_act_as_masks_forward_and_backward)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx[2] = {make_ctx(&configs[0]), make_ctx(&configs[1])};
    int reported = 0;
    for (int dt = 0; dt < 2; dt++)
        for (int sh = 0; sh < 2; sh++)
            for (int c = 0; c < 3; c++)
                for (int k = 0; k < 2; k++) {
                    tu_shape s = shapes[sh];
                    s.dtype = dt ? FA_F64 : FA_F32;
                    s.layout = (tu_layout)((c + sh + k) % 3);
                    run_minus_inf(ctx[k], &configs[k], &s, (fa_causal)c,
                                  seed + (uint64_t)(100 * dt + 10 * sh + 2 * c + k), &reported);
                }
    fa_context_destroy(ctx[0]);
    fa_context_destroy(ctx[1]);
}

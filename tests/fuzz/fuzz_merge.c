/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_merge in the fuzz target (fuzz_input.h, "fa_merge"): n parts outs[k] (the views dout, dq, dk,
 * dv, shaped like out, again and again) with their lse in regions of the pool (random values in
 * the accumulation type, some rows -inf or NaN as the input asks), merged into the view out and
 * the lse. Besides the generic checks of fz_run_call (the model's status, nothing written on
 * refusal, only out and the lse on success, the same bytes on the twin context), a successful merge
 * is held to the header's formula, row by row in float64: lse = log Σ_k exp(L_k), out =
 * Σ_k exp(L_k − lse) · outs[k]; a part whose lse is -inf contributes nothing whatever its out holds;
 * a row no part saw has out = 0 and lse = -inf; a NaN lse makes the row NaN. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_case.h"

/* Rows whose values are compared with float64: every row when the merge is small, else evenly
 * spread ones (rows 0 and 1, where the input puts its special values, always). */
#define FZ_MERGE_CHECKED 4096.0

int fz_merge_wanted(const fz_input *in)
{
    return in->merge.merge >= 0x80;
}

static int merge_n(const fz_input *in)
{
    static const int special[4] = {0, -1, INT32_MIN, 64};
    return in->merge.merge_n < 0xF0 ? 1 + in->merge.merge_n % 8 : special[in->merge.merge_n % 4];
}

/* Bytes of one part's lse: [B][Hq][Nq] values of the accumulation type (a small stand-in when out's
 * sizes make it too large; such a merge is refused or poisoned). */
static int64_t part_lse_bytes(const fz_case *c)
{
    size_t bytes = fz_lse_bytes(&c->view[FZ_OUT]);
    return bytes > (size_t)FZ_REGION_MAX ? FZ_WILD_REGION : (int64_t)bytes;
}

int64_t fz_merge_regions(fz_case *c, int64_t cursor, int64_t gap)
{
    fz_merge_case *mg = &c->mg;
    if (!fz_merge_wanted(&c->in)) return cursor;
    mg->on = 1;
    mg->n = merge_n(&c->in);
    for (int k = 0; k < FZ_MERGE_SEEN; k++) {
        mg->lse_base[k] = -1;
        if (k >= mg->n) continue;
        cursor += gap;
        cursor = (cursor + 7) / 8 * 8;
        mg->lse_base[k] = cursor;
        cursor += part_lse_bytes(c) + 8; /* and room for a misaligned copy */
    }
    return cursor;
}

void fz_merge_write(fz_case *c)
{
    fz_merge_case *mg = &c->mg;
    if (!mg->on) return;
    const fz_merge_bytes *mb = &c->in.merge;
    const int slots = mg->n > 0 ? mg->n : 1;
    mg->outs = calloc((size_t)slots, sizeof *mg->outs);
    mg->lses = calloc((size_t)slots, sizeof *mg->lses);
    if (!mg->outs || !mg->lses) abort();
    for (int k = 0; k < mg->n; k++) {
        const int v = FZ_DOUT + k % 4;
        mg->outs[k] = c->view[v];
        if (c->layout[v] == L_NULL) mg->outs[k].data = NULL;
        mg->lses[k] = mg->lse_base[k % FZ_MERGE_SEEN] < 0 ? NULL : c->pool + mg->lse_base[k % FZ_MERGE_SEEN];
    }
    /* the parts' lse: uniform, with -inf rows, a row no part saw, a NaN */
    const int f64 = c->dtype == FA_F64;
    const int64_t rows = part_lse_bytes(c) / (f64 ? 8 : 4);
    const double range = (mb->merge_mode & 4 ? 100.0 : 4.0) * c->amp;
    uint64_t seed = c->in.seed ^ 0x2545f4914f6cdd1dull;
    for (int k = 0; k < FZ_MERGE_SEEN && k < mg->n; k++)
        for (int64_t r = 0; r < rows; r++) {
            double x = fz_uniform(&seed) * range;
            if ((mb->merge_minf >> k & 1) && (r + k) % 3 == 0) x = -INFINITY;
            if ((mb->merge_mode & 1) && r == 0) x = -INFINITY;
            if ((mb->merge_mode & 2) && k == 0 && r == 1) x = NAN;
            unsigned char *at = c->pool + mg->lse_base[k] + r * (f64 ? 8 : 4);
            if (f64)
                memcpy(at, &x, 8);
            else {
                float f = (float)x;
                memcpy(at, &f, 4);
            }
        }
    if (mb->merge_lses >= 0xC0 && mg->n >= 1) switch (mb->merge_lses % 5) {
        case 0: mg->lses[(mb->merge_lses >> 3) % mg->n] = NULL; break;
        case 1: mg->lses_null = 1; break;
        case 2: mg->outs_null = 1; break;
        case 3:
            if (c->lse_base >= 0) mg->lses[0] = c->pool + c->lse_base;
            break;
        default: { /* lses[0] moved 1..7 bytes in, its values with it */
            unsigned char *at = c->pool + mg->lse_base[0];
            const int64_t skew = 1 + (mb->merge_shift & 0x7fff) % 7;
            memmove(at + skew, at, (size_t)part_lse_bytes(c));
            mg->lses[0] = at + skew;
            break;
        }
        }
}

void fz_merge_free(fz_case *c)
{
    free(c->mg.outs);
    free((void *)c->mg.lses);
    c->mg.outs = NULL;
    c->mg.lses = NULL;
}

static fa_status invoke_merge(fa_context *ctx, const fz_call *c)
{
    return fa_merge(ctx, c->parts, c->outs, c->lses, c->t[FZ_OUT], (void *)(uintptr_t)c->lse);
}

/* Row r of the merge against the formula. */
static void check_row(const fz_call *call, int64_t b, int64_t h, int64_t i)
{
    const fa_tensor *out = call->t[FZ_OUT];
    const fa_dtype dt = out->dtype;
    const int64_t r = (b * out->heads + h) * out->seq + i, n = call->parts;
    const double eps = dt == FA_F64 ? DBL_EPSILON : FLT_EPSILON, tiny = dt == FA_F64 ? DBL_MIN : FLT_MIN;
    double out_unit, out_floor;
    fz_store_rounding(dt, &out_unit, &out_floor);
    double m = -INFINITY;
    int nan = 0;
    for (int64_t k = 0; k < n; k++) {
        double l = fz_ld_lse(call->lses[k], dt, r);
        if (isnan(l))
            nan = 1;
        else if (l > m)
            m = l;
    }
    const double got_lse = call->lse ? fz_ld_lse(call->lse, dt, r) : 0.0;
    if (nan) { /* a NaN lse makes the row NaN */
        FZ_CHECK(!call->lse || isnan(got_lse), "merge row %lld: a part's lse is NaN, lse = %g", (long long)r,
                 got_lse);
        for (int64_t d = 0; d < out->dim; d++)
            FZ_CHECK(isnan(fz_ld(out, b, h, i, d)), "merge row %lld: a part's lse is NaN, out[%lld] = %g",
                     (long long)r, (long long)d, fz_ld(out, b, h, i, d));
        return;
    }
    if (m == -INFINITY) { /* no part saw the row */
        FZ_CHECK(!call->lse || got_lse == -INFINITY, "merge row %lld: no part saw it, lse = %g", (long long)r,
                 got_lse);
        for (int64_t d = 0; d < out->dim; d++)
            FZ_CHECK(fz_ld(out, b, h, i, d) == 0.0, "merge row %lld: no part saw it, out[%lld] = %g",
                     (long long)r, (long long)d, fz_ld(out, b, h, i, d));
        return;
    }
    double sum = 0.0;
    for (int64_t k = 0; k < n; k++) sum += exp(fz_ld_lse(call->lses[k], dt, r) - m);
    const double lse = m + log(sum), rel = 32.0 * eps * (1.0 + fabs(m) + (double)n);
    FZ_CHECK(!call->lse || fabs(got_lse - lse) <= rel, "merge row %lld: lse %.17g, float64 %.17g",
             (long long)r, got_lse, lse);
    for (int64_t d = 0; d < out->dim; d++) {
        double want = 0.0, mag = 0.0, largest = 0.0;
        int finite = 1;
        for (int64_t k = 0; k < n; k++) {
            double l = fz_ld_lse(call->lses[k], dt, r);
            if (l == -INFINITY) continue; /* contributes nothing, whatever its out holds */
            double x = fz_ld(&call->outs[k], b, h, i, d), w = exp(l - lse);
            finite &= isfinite(x);
            want += w * x;
            mag += w * fabs(x);
            if (fabs(x) > largest) largest = fabs(x);
        }
        if (!finite) continue; /* a NaN or Inf in a part that counts: no claim */
        double got = fz_ld(out, b, h, i, d);
        /* the float result within rel·mag + n·tiny·largest, then (bf16, f16) rounded once to out's
         * dtype: the type's unit roundoff of it, or half its smallest subnormal */
        const double near = rel * mag + (double)n * tiny * largest;
        FZ_CHECK(isfinite(got) && fabs(got - want) <= near + out_unit * (fabs(want) + near) + out_floor,
                 "merge row %lld: out[%lld] = %.17g, float64 %.17g", (long long)r, (long long)d, got, want);
    }
}

void fz_merge_run(fz_case *c, const char **said)
{
    const fz_merge_case *mg = &c->mg;
    fz_call call;
    memset(&call, 0, sizeof call);
    call.merge = 1;
    call.n = 4;
    call.t[FZ_OUT] = c->layout[FZ_OUT] == L_NULL ? NULL : &c->view[FZ_OUT];
    call.is_out[FZ_OUT] = 1;
    call.raw[FZ_OUT] = c->layout[FZ_OUT] == L_RAW;
    call.lse = c->lse_base < 0 ? NULL : c->pool + c->lse_base;
    call.lse_out = 1;
    call.parts = mg->n;
    call.outs = mg->outs_null ? NULL : mg->outs;
    call.lses = mg->lses_null ? NULL : mg->lses;
    fa_status st = fz_run_call(c, call, invoke_merge, "fa_merge");
    *said = fa_status_str(st);
    if (st != FA_OK) return;
    const fa_tensor *out = call.t[FZ_OUT];
    const double rows = (double)out->batch * (double)out->heads * (double)out->seq;
    const int64_t every =
        rows * (double)mg->n > FZ_MERGE_CHECKED ? (int64_t)(rows * (double)mg->n / FZ_MERGE_CHECKED) + 1 : 1;
    for (int64_t b = 0; b < out->batch; b++)
        for (int64_t h = 0; h < out->heads; h++)
            for (int64_t i = 0; i < out->seq; i++) {
                int64_t r = (b * out->heads + h) * out->seq + i;
                if (r < 2 || r % every == 0) check_row(&call, b, h, i);
            }
}

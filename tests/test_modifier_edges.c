/* SPDX-License-Identifier: BSD-3-Clause */
/* The valid side of the score modifiers' bad-input rules (suite bad_input, beside the error-exit
 * table of test_error_exit.c): values at the edges of what is allowed are accepted and
 * mean what the header says, checked as exact invariants (the bytes of an equivalent call):
 * broadcast biases, modifier arguments overlapping inputs, dsinks in fa_forward, windows of
 * INT64_MAX, softcap -0.0. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"
#include "util_backward.h"

/* The properties hold for any thread count (the determinism tests cover that); one thread keeps
 * these cheap under valgrind. */
static fa_context *one_thread_context(void)
{
    return tu_context(1, 0, 0);
}

/* One problem's forward and backward, and its dsinks. */
typedef struct {
    tub_problem bp;
    float dsinks[8];
} edge_run;

/* Problems made from one seed hold the same inputs. */
static void edge_make(edge_run *r, const tu_shape *s, uint64_t seed)
{
    tu_rng rng = tu_rng_make(seed);
    tub_make(&r->bp, s, &rng, 1.0);
    memset(r->dsinks, 0x5a, sizeof r->dsinks);
}

/* fa_forward, then fa_backward (with dsinks when p has sinks); both must succeed. */
static void edge_call(fa_context *ctx, edge_run *r, const fa_params *p, const char *what, uint64_t seed)
{
    const char *dt = r->bp.fw.shape.dtype == FA_F64 ? "f64" : "f32";
    fa_params pd = *p;
    if (pd.sinks) pd.dsinks = r->dsinks;
    fa_status st = tub_forward(ctx, &pd, &r->bp);
    cr_assert_eq(st, FA_OK, "%s, %s, seed %llu: fa_forward: %s", dt, what, (unsigned long long)seed,
                 fa_status_str(st));
    st = tub_backward(ctx, &pd, &r->bp);
    cr_assert_eq(st, FA_OK, "%s, %s, seed %llu: fa_backward: %s", dt, what, (unsigned long long)seed,
                 fa_status_str(st));
}

/* The same bytes in out, lse, dq, dk, dv and dsinks. */
static void expect_same_bytes(const edge_run *a, const edge_run *b, const char *what, uint64_t seed)
{
    const char *dt = a->bp.fw.shape.dtype == FA_F64 ? "f64" : "f32";
    int64_t where = -1;
    cr_expect(tub_views_bitwise_equal(&a->bp.fw.out, &b->bp.fw.out, &where),
              "%s, %s, seed %llu: out differs at %lld", dt, what, (unsigned long long)seed, (long long)where);
    size_t lse_bytes = (size_t)tu_problem_rows(&a->bp.fw) * tu_dtype_size(a->bp.fw.shape.dtype);
    cr_expect(memcmp(a->bp.fw.lse, b->bp.fw.lse, lse_bytes) == 0, "%s, %s, seed %llu: lse differs", dt, what,
              (unsigned long long)seed);
    static const char *const gname[3] = {"dq", "dk", "dv"};
    for (int g = 0; g < 3; g++)
        cr_expect(tub_views_bitwise_equal(&a->bp.grad[g], &b->bp.grad[g], &where),
                  "%s, %s, seed %llu: %s differs at %lld", dt, what, (unsigned long long)seed, gname[g],
                  (long long)where);
    cr_expect(memcmp(a->dsinks, b->dsinks, sizeof a->dsinks) == 0, "%s, %s, seed %llu: dsinks differs", dt,
              what, (unsigned long long)seed);
}

/* A bias whose batch, heads or seq is 1, or whose stride on a full-size axis is 0, means the
 * bias with that axis repeated: it is accepted, and since every score gets the same value added,
 * forward and backward give the bytes of the materialized [B][Hq][Nq][Nk] bias. */
Test(bad_input, broadcast_biases_are_accepted_and_give_the_bytes_of_the_materialized_bias)
{
    uint64_t seed = tu_test_seed();
    enum { BB = 2, BH = 4, BQ = 5, BK = 7 };
    fa_context *ctx = one_thread_context();
    for (int t = 0; t < 2; t++) {
        fa_dtype dt = t ? FA_F64 : FA_F32;
        tu_shape s = {dt, BB, BH, 2, BQ, BK, 8, 6, TU_BHSD};
        size_t e = tu_dtype_size(dt);
        kit_buf small = kit_buf_alloc((size_t)(BB * BH * BQ * BK) * e),
                full = kit_buf_alloc((size_t)(BB * BH * BQ * BK) * e);
        /* bit 0: batch, 1: heads, 2: seq broadcast: each alone, [B][1][1][Nk] (key padding), all */
        static const int masks[5] = {1, 2, 4, 6, 7};
        for (int m = 0; m < 5; m++) {
            const int mask = masks[m];
            const int64_t n[3] = {mask & 1 ? 1 : BB, mask & 2 ? 1 : BH, mask & 4 ? 1 : BQ};
            fa_tensor sm = fa_tensor_bhsd(kit_buf_data(&small), dt, n[0], n[1], n[2], BK);
            tu_rng rng = tu_rng_make(seed + (uint64_t)(16 * t + mask));
            for (int64_t x = 0; x < n[0] * n[1] * n[2] * BK; x++) {
                double val = tu_rng_uniform(&rng, -2.0, 2.0);
                kit_tensor_store(&sm, 0, 0, 0, x, x == 3 ? -INFINITY : val); /* one key masked by the bias */
            }
            fa_tensor mat = fa_tensor_bhsd(kit_buf_data(&full), dt, BB, BH, BQ, BK);
            for (int64_t b = 0; b < BB; b++)
                for (int64_t h = 0; h < BH; h++)
                    for (int64_t i = 0; i < BQ; i++)
                        for (int64_t j = 0; j < BK; j++)
                            kit_tensor_store(&mat, b, h, i, j,
                                             kit_tensor_load(&sm, n[0] == 1 ? 0 : b, n[1] == 1 ? 0 : h,
                                                             n[2] == 1 ? 0 : i, j));
            fa_params p = FA_PARAMS_INIT;
            p.bias = &mat;
            edge_run materialized;
            edge_make(&materialized, &s, seed + (uint64_t)t);
            edge_call(ctx, &materialized, &p, "the materialized bias", seed);
            for (int stride0 = 0; stride0 < 2; stride0++) {
                fa_tensor view = sm; /* size 1 on the broadcast axes, or the full size with stride 0 */
                if (stride0) {
                    if (mask & 1) view.batch = BB, view.stride_batch = 0;
                    if (mask & 2) view.heads = BH, view.stride_head = 0;
                    if (mask & 4) view.seq = BQ, view.stride_seq = 0;
                }
                p.bias = &view;
                char what[96];
                snprintf(what, sizeof what, "bias [%s][%s][%s][Nk] %s", mask & 1 ? "1" : "B",
                         mask & 2 ? "1" : "Hq", mask & 4 ? "1" : "Nq", stride0 ? "as stride 0" : "as size 1");
                edge_run r;
                edge_make(&r, &s, seed + (uint64_t)t);
                edge_call(ctx, &r, &p, what, seed);
                expect_same_bytes(&materialized, &r, what, seed);
                tub_free(&r.bp);
            }
            tub_free(&materialized.bp);
        }
        kit_buf_free(&small);
        kit_buf_free(&full);
    }
    fa_context_destroy(ctx);
}

/* The bias, alibi_slopes and sinks are inputs, and inputs may share memory: each placed over q, k
 * or v is accepted and read like a copy of the same bytes in memory of its own. */
Test(bad_input, modifier_arguments_overlapping_inputs_are_accepted_and_read_like_copies)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx = one_thread_context();
    for (int t = 0; t < 2; t++) {
        fa_dtype dt = t ? FA_F64 : FA_F32;
        /* q holds B·Hq·Nq·D = 2·4·6·9 elements, more than the bias's B·Hq·Nq·Nk = 2·4·6·7 */
        tu_shape s = {dt, 2, 4, 2, 6, 7, 9, 5, TU_BHSD};
        for (int where = 0; where < 3; where++) {
            edge_run ra, rb;
            edge_make(&ra, &s, seed + (uint64_t)(4 * t + where));
            edge_make(&rb, &s, seed + (uint64_t)(4 * t + where));
            const tub_problem *a = &ra.bp;
            /* a: the modifiers over its inputs; b: the same bytes copied out */
            fa_tensor bias_a, bias_b;
            const fa_tensor *over = where == 0 ? &a->fw.q : where == 1 ? &a->fw.k : &a->fw.v;
            unsigned char *base = over->data;
            size_t e = tu_dtype_size(dt);
            if (where == 0) bias_a = fa_tensor_bhsd(base, dt, 2, 4, 6, 7);         /* on q, fully */
            if (where == 1) bias_a = fa_tensor_bhsd(base + 3 * e, dt, 1, 1, 1, 7); /* inside k */
            if (where == 2) bias_a = fa_tensor_bhsd(base + 5 * e, dt, 2, 1, 6, 7); /* inside v */
            const float *slopes_a = (const float *)(const void *)(base + 8 * e);   /* in the same input */
            const float *sinks_a = (const float *)(const void *)((unsigned char *)a->fw.k.data + 4 * e);
            size_t used = (size_t)(bias_a.batch * bias_a.heads * bias_a.seq * bias_a.dim) * e;
            kit_buf copy = kit_buf_alloc(used);
            memcpy(kit_buf_data(&copy), bias_a.data, used);
            bias_b = bias_a;
            bias_b.data = kit_buf_data(&copy);
            /* (an f64 input's bytes read as floats may be any values: the same in both calls) */
            float slopes_b[4], sinks_b[4];
            memcpy(slopes_b, slopes_a, sizeof slopes_b);
            memcpy(sinks_b, sinks_a, sizeof sinks_b);
            fa_params pa = FA_PARAMS_INIT, pb;
            pa.bias = &bias_a;
            pa.softcap = 5.0;
            pa.alibi_slopes = slopes_a;
            pa.sinks = sinks_a;
            pb = pa;
            pb.bias = &bias_b;
            pb.alibi_slopes = slopes_b;
            pb.sinks = sinks_b;
            const char *const name[3] = {"on q", "inside k", "inside v"};
            char what[64];
            snprintf(what, sizeof what, "bias %s, slopes and sinks inside inputs", name[where]);
            edge_call(ctx, &ra, &pa, what, seed);
            edge_call(ctx, &rb, &pb, what, seed);
            expect_same_bytes(&ra, &rb, what, seed);
            kit_buf_free(&copy);
            tub_free(&ra.bp);
            tub_free(&rb.bp);
        }
    }
    fa_context_destroy(ctx);
}

/* fa_forward ignores p->dsinks (flashattn.h): set without sinks, misaligned, on out, or at the top
 * of the address space, it changes neither the status nor a byte, and is never written. */
Test(bad_input, forward_ignores_dsinks_whatever_it_points_at)
{
    uint64_t seed = tu_test_seed();
    for (int t = 0; t < 2; t++) {
        fa_dtype dt = t ? FA_F64 : FA_F32;
        tu_shape s = {dt, 2, 4, 2, 9, 11, 8, 6, TU_BHSD};
        tu_rng r0 = tu_rng_make(seed + (uint64_t)t);
        tu_problem plain;
        tu_problem_make(&plain, &s, &r0, 1.0);
        cr_assert_eq(fa_forward(NULL, NULL, &plain.q, &plain.k, &plain.v, &plain.out, plain.lse), FA_OK);
        for (int where = 0; where < 4; where++) {
            tu_rng r1 = tu_rng_make(seed + (uint64_t)t);
            tu_problem pr;
            tu_problem_make(&pr, &s, &r1, 1.0);
            kit_buf spare = kit_buf_alloc(64);
            unsigned char *spare_snap = kit_buf_snapshot(&spare);
            fa_params p = FA_PARAMS_INIT;
            static const char *const name[4] = {"without sinks", "misaligned", "on out",
                                                "8 bytes below the top of the address space"};
            if (where == 0) p.dsinks = kit_buf_data(&spare);
            if (where == 1) p.dsinks = (float *)(void *)((unsigned char *)kit_buf_data(&spare) + 1);
            if (where == 2) p.dsinks = pr.out.data;
            if (where == 3) p.dsinks = (float *)(uintptr_t)(UINTPTR_MAX - 7);
            fa_status st = fa_forward(NULL, &p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
            cr_expect_eq(st, FA_OK, "%s, dsinks %s, seed %llu: %s", t ? "f64" : "f32", name[where],
                         (unsigned long long)seed, fa_status_str(st));
            int64_t at = -1;
            cr_expect(st != FA_OK || tu_outputs_bitwise_equal(&pr, &plain, &at),
                      "%s, dsinks %s, seed %llu: out or lse differ from the call without dsinks at %lld",
                      t ? "f64" : "f32", name[where], (unsigned long long)seed, (long long)at);
            cr_expect(kit_buf_equals_snapshot(&spare, spare_snap), "dsinks %s: fa_forward wrote it",
                      name[where]);
            free(spare_snap);
            kit_buf_free(&spare);
            tu_problem_free(&pr);
        }
        tu_problem_free(&plain);
    }
}

/* The largest valid window, INT64_MAX on both sides, is unbounded (its edges, i + d0 ± window,
 * are outside int64 when computed naively), and softcap -0.0 is 0, off: the bytes of the call
 * without them, under each causal mode and with more queries than keys and fewer. */
Test(bad_input, int64_max_windows_and_negative_zero_softcap_are_valid_and_change_nothing)
{
    uint64_t seed = tu_test_seed();
    fa_context *ctx = one_thread_context();
    for (int t = 0; t < 2; t++)
        for (int longer = 0; longer < 2; longer++)
            for (int causal = 0; causal < 3; causal++) {
                fa_dtype dt = t ? FA_F64 : FA_F32;
                tu_shape s = {dt, 1, 2, 1, longer ? 13 : 5, longer ? 5 : 13, 8, 8, TU_BHSD};
                uint64_t part = seed + (uint64_t)(t * 8 + longer * 4 + causal);
                fa_params plain = FA_PARAMS_INIT;
                plain.causal = (fa_causal)causal;
                edge_run ref;
                edge_make(&ref, &s, part);
                edge_call(ctx, &ref, &plain, "no window", seed);
                for (int v = 0; v < (causal == 2 && longer ? 2 : 1); v++) { /* softcap -0.0 once a dtype */
                    fa_params p = plain;
                    if (v == 0) p.window_left = p.window_right = INT64_MAX;
                    if (v == 1) p.softcap = -0.0;
                    char what[96];
                    snprintf(what, sizeof what, "%s, causal %d, Nq %lld, Nk %lld",
                             v ? "softcap -0.0" : "both windows INT64_MAX", causal, (long long)s.q_len,
                             (long long)s.kv_len);
                    edge_run r;
                    edge_make(&r, &s, part);
                    edge_call(ctx, &r, &p, what, seed);
                    expect_same_bytes(&ref, &r, what, seed);
                    tub_free(&r.bp);
                }
                tub_free(&ref.bp);
            }
    fa_context_destroy(ctx);
}

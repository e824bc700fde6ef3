/* SPDX-License-Identifier: BSD-3-Clause */
/* The bad-input fixture; see bad_input.h. */
#include "bad_input.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *bi_at(fixture *f, int buf, int64_t elements)
{
    return (unsigned char *)tu_buf_data(&f->buf[buf]) + elements * (int64_t)f->e;
}

static void fixture_make(fixture *f, fa_dtype dt, uint64_t seed)
{
    memset(f, 0, sizeof *f);
    f->dt = dt;
    f->e = tu_dtype_size(dt);
    size_t big = (size_t)(Q_OFFSET + B * HQ * (NQ + 1) * MAXD) * 8;
    tu_rng rng = tu_rng_make(seed);
    for (int i = 0; i < BI_BUFS; i++) {
        f->buf[i] = tu_buf_alloc(big);
        if (i < 3 || i == 5) { /* inputs: random finite values everywhere */
            for (size_t x = 0; x < big / f->e; x++) {
                double val = tu_rng_uniform(&rng, -1, 1);
                if (dt == FA_F64)
                    ((double *)tu_buf_data(&f->buf[i]))[x] = val;
                else
                    ((float *)tu_buf_data(&f->buf[i]))[x] = (float)val;
            }
        }
    }
}

static void fixture_reset_args(fixture *f)
{
    f->q = fa_tensor_bhsd(bi_at(f, 0, Q_OFFSET), f->dt, B, HQ, NQ, D);
    f->k = fa_tensor_bhsd(bi_at(f, 1, 0), f->dt, B, HKV, NK, D);
    f->v = fa_tensor_bhsd(bi_at(f, 2, 0), f->dt, B, HKV, NK, DV);
    f->out = fa_tensor_bhsd(bi_at(f, 3, 0), f->dt, B, HQ, NQ, DV);
    f->qp = &f->q;
    f->kp = &f->k;
    f->vp = &f->v;
    f->outp = &f->out;
    f->lse = bi_at(f, 4, 0);
    f->params = (fa_params)FA_PARAMS_INIT;
    f->pp = &f->params;
    f->bias = fa_tensor_bhsd(bi_at(f, 5, 0), f->dt, B, HQ, NQ, NK);
    for (int h = 0; h < HQ; h++) f->alibi[h] = 0.5f, f->sinks[h] = 0.25f * (float)h;
}

static void fixture_free(fixture *f)
{
    for (int i = 0; i < BI_BUFS; i++) tu_buf_free(&f->buf[i]);
}

void bi_run_cases(const bad_case *cases, int n)
{
    uint64_t seed = tu_test_seed();
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = 2;
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
    for (int t = 0; t < 2; t++) {
        fixture f;
        fixture_make(&f, t ? FA_F64 : FA_F32, seed + (uint64_t)t);
        for (int c = 0; c < n; c++)
            for (int use_null = 0; use_null < 2; use_null++) {
                fixture_reset_args(&f);
                cases[c].mutate(&f);
                unsigned char *snap[BI_BUFS];
                for (int i = 0; i < BI_BUFS; i++) snap[i] = tu_buf_snapshot(&f.buf[i]);
                fa_status st = fa_forward(use_null ? NULL : ctx, f.pp, f.qp, f.kp, f.vp, f.outp, f.lse);
                cr_expect(st == cases[c].want || st == cases[c].also,
                          "%s [%s, %s context], seed %llu: status %d (%s), want %d (%s)", cases[c].name,
                          t ? "f64" : "f32", use_null ? "NULL" : "own", (unsigned long long)seed, st,
                          fa_status_str(st), cases[c].want, fa_status_str(cases[c].want));
                static const char *bufname[BI_BUFS] = {"q", "k", "v", "out", "lse", "bias"};
                for (int i = 0; i < BI_BUFS; i++) {
                    cr_expect(tu_buf_equals_snapshot(&f.buf[i], snap[i]),
                              "%s [%s], seed %llu: the %s buffer changed", cases[c].name, t ? "f64" : "f32",
                              (unsigned long long)seed, bufname[i]);
                    free(snap[i]);
                }
            }
        fixture_free(&f);
    }
    /* The context is still usable after all those refusals. */
    tu_shape s = {FA_F32, 1, 2, 1, 9, 11, 8, 8, TU_BHSD};
    tu_rng rng = tu_rng_make(seed);
    tu_problem pr;
    tu_problem_make(&pr, &s, &rng, 1.0);
    cr_expect_eq(fa_forward(ctx, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_OK,
                 "the context refuses a valid call after the bad ones");
    tu_problem_free(&pr);
    fa_context_destroy(ctx);
}

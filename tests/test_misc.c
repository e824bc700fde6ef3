/* SPDX-License-Identifier: BSD-3-Clause */
/* Version, defaults, status strings, NULL conveniences. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

Test(misc, version_string_matches_header_macros)
{
    char want[64];
    snprintf(want, sizeof want, "%d.%d.%d", FLASHATTN_VERSION_MAJOR, FLASHATTN_VERSION_MINOR,
             FLASHATTN_VERSION_PATCH);
    const char *v = fa_version();
    cr_assert_not_null(v);
    cr_expect_str_eq(v, want, "fa_version() = \"%s\", header macros say \"%s\"", v, want);
}

Test(misc, defaults_are_as_documented)
{
    fa_params p = FA_PARAMS_INIT;
    cr_expect_eq(p.scale, 0.0);
    cr_expect_eq(p.causal, FA_CAUSAL_NONE);
    cr_expect_eq(p.window_left, -1);
    cr_expect_eq(p.window_right, -1);
    cr_expect_eq(p.softcap, 0.0);
    cr_expect_null(p.alibi_slopes);
    cr_expect_null(p.bias);
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    cr_expect_eq(o.num_threads, 0);
    cr_expect_eq(o.bind, FA_BIND_AUTO);
    cr_expect_eq(o.block_q, 0);
    cr_expect_eq(o.block_k, 0);
}

Test(misc, status_strings_exist_for_every_value_and_differ_for_known_ones)
{
    const char *s[11];
    for (int i = 0; i <= FA_ERR_RUNTIME; i++) {
        s[i] = fa_status_str((fa_status)i);
        cr_assert_not_null(s[i], "fa_status_str(%d) is NULL", i);
        cr_expect_gt(strlen(s[i]), 0, "fa_status_str(%d) is empty", i);
        for (int j = 0; j < i; j++)
            cr_expect_str_neq(s[i], s[j], "fa_status_str(%d) and fa_status_str(%d) are both \"%s\"", i, j,
                              s[i]);
    }
    static const int unknown[] = {11, 12, 100, 0x7fffffff, -1, -100};
    for (int i = 0; i < (int)(sizeof unknown / sizeof unknown[0]); i++) {
        const char *u = fa_status_str((fa_status)unknown[i]);
        cr_expect_not_null(u, "fa_status_str(%d) is NULL", unknown[i]);
    }
}

/* fa_context_destroy(NULL) and fa_context_reset_stats(NULL) are no-ops (include/flashattn.h): they
 * return; a live context keeps its statistics (scratch_peak > 0, which a reset would zero) and
 * works; and the calling thread's default context, which ctx = NULL means in a call (but not here),
 * still gives the same bytes. */
Test(misc, destroy_and_reset_stats_of_null_are_no_ops)
{
    uint64_t seed = tu_test_seed();
    tu_shape s = {FA_F32, 1, 2, 1, 40, 50, 16, 16, TU_BHSD};
    tu_rng rng = tu_rng_make(seed);
    tu_problem pr;
    tu_problem_make(&pr, &s, &rng, 2.0);
    fa_context *ctx;
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    cr_assert_eq(fa_forward(ctx, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_OK);
    cr_assert_eq(fa_forward(NULL, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_OK);
    double *out = tu_out_copy(&pr), *lse = tu_lse_copy(&pr);
    fa_stats before = FA_STATS_INIT, after = FA_STATS_INIT;
    cr_assert_eq(fa_context_stats(ctx, &before), FA_OK);
    cr_assert_gt(before.scratch_peak, 0, "seed %llu: a call left no scratch peak to keep",
                 (unsigned long long)seed);

    fa_context_reset_stats(NULL);
    fa_context_destroy(NULL);

    cr_assert_eq(fa_context_stats(ctx, &after), FA_OK);
    cr_expect_eq(after.scratch_peak, before.scratch_peak,
                 "reset_stats(NULL) changed a context's scratch_peak");
    cr_expect_eq(after.bound_threads, before.bound_threads,
                 "reset_stats(NULL) changed a context's bound_threads");
    cr_expect_eq(after.scratch_capacity, before.scratch_capacity);
    cr_expect_eq(fa_forward(ctx, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_OK);
    tu_problem_fill_canary(&pr);
    cr_assert_eq(fa_forward(NULL, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_OK);
    double *out2 = tu_out_copy(&pr), *lse2 = tu_lse_copy(&pr);
    int64_t rows = tu_problem_rows(&pr);
    cr_expect(memcmp(out, out2, sizeof(double) * (size_t)(rows * s.dim_v)) == 0 &&
                  memcmp(lse, lse2, sizeof(double) * (size_t)rows) == 0,
              "seed %llu: the default context gave other bytes after fa_context_destroy(NULL)",
              (unsigned long long)seed);
    free(out);
    free(lse);
    free(out2);
    free(lse2);
    fa_context_destroy(ctx);
    tu_problem_free(&pr);
}

/* p = NULL means every default (FA_PARAMS_INIT); ctx = NULL means the calling thread's default context.
 * Both give the oracle's result, and the same bytes as the explicit equivalents. */
Test(misc, null_params_and_null_context_match_explicit_defaults_and_oracle)
{
    uint64_t seed = tu_test_seed();
    for (int t = 0; t < 2; t++) {
        tu_shape s = {t ? FA_F64 : FA_F32, 2, 4, 2, 70, 90, 32, 40, TU_BSHD};
        tu_rng rng = tu_rng_make(seed + (uint64_t)t);
        tu_problem a, b;
        tu_problem_make(&a, &s, &rng, 2.0);
        rng = tu_rng_make(seed + (uint64_t)t);
        tu_problem_make(&b, &s, &rng, 2.0);
        cr_assert_eq(fa_forward(NULL, NULL, &a.q, &a.k, &a.v, &a.out, a.lse), FA_OK);
        char msg[512];
        cr_expect(tu_check_picked_accuracy(&a, NULL, INT64_MAX, 1e-12, msg, sizeof msg), "%s, seed %llu: %s",
                  t ? "f64" : "f32", (unsigned long long)seed, msg);
        fa_context *ctx;
        cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
        fa_params p = FA_PARAMS_INIT;
        cr_assert_eq(fa_forward(ctx, &p, &b.q, &b.k, &b.v, &b.out, b.lse), FA_OK);
        int64_t where = 0;
        cr_expect(
            tu_outputs_bitwise_equal(&a, &b, &where),
            "%s, seed %llu: (NULL ctx, NULL params) and (default ctx, default params) differ at %s %lld",
            t ? "f64" : "f32", (unsigned long long)seed, where < 0 ? "lse" : "out row", (long long)where);
        /* lse = NULL is allowed and leaves out the same. */
        tu_problem_fill_canary(&b);
        cr_assert_eq(fa_forward(ctx, &p, &b.q, &b.k, &b.v, &b.out, NULL), FA_OK);
        memcpy(b.lse, a.lse, b.lse_buf.bytes);
        cr_expect(tu_outputs_bitwise_equal(&a, &b, &where), "%s: out differs when lse is NULL",
                  t ? "f64" : "f32");
        fa_context_destroy(ctx);
        tu_problem_free(&a);
        tu_problem_free(&b);
    }
}

/* "The library never prints": stdout and stderr stay empty through valid calls, refused calls,
 * refused context options, stats and the default context. (This test cannot print its seed, since
 * it captures stderr: it uses the fixed seed 12345.) */
static void capture_output(void)
{
    cr_redirect_stdout();
    cr_redirect_stderr();
}

Test(misc, library_never_prints_to_stdout_or_stderr, .init = capture_output)
{
    tu_shape s = {FA_F64, 1, 2, 1, 33, 40, 16, 16, TU_BSHD};
    tu_rng rng = tu_rng_make(12345);
    tu_problem pr;
    tu_problem_make(&pr, &s, &rng, 2.0);
    for (int b = 0; b < 4; b++) {
        fa_context_opts o = FA_CONTEXT_OPTS_INIT;
        o.num_threads = 3;
        o.bind = (fa_bind)b;
        fa_context *ctx;
        cr_assert_eq(fa_context_create(&ctx, &o), FA_OK);
        cr_expect_eq(fa_forward(ctx, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_OK);
        fa_params p = FA_PARAMS_INIT;
        p.scale = NAN;
        cr_expect_eq(fa_forward(ctx, &p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_ERR_ARG);
        fa_tensor bad = pr.out;
        bad.stride_head = 0;
        cr_expect_eq(fa_forward(ctx, NULL, &pr.q, &pr.k, &pr.v, &bad, pr.lse), FA_ERR_STRIDE);
        fa_stats st = FA_STATS_INIT;
        cr_expect_eq(fa_context_stats(ctx, &st), FA_OK);
        fa_context_destroy(ctx);
    }
    fa_context_opts bad_opts = FA_CONTEXT_OPTS_INIT;
    bad_opts.num_threads = -1;
    fa_context *ctx;
    cr_expect_eq(fa_context_create(&ctx, &bad_opts), FA_ERR_ARG);
    cr_expect_eq(fa_forward(NULL, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_OK);
    cr_expect_eq(fa_forward(NULL, NULL, NULL, &pr.k, &pr.v, &pr.out, pr.lse), FA_ERR_NULL);
    tu_problem_free(&pr);
    fflush(stdout);
    fflush(stderr);
    cr_expect_stdout_eq_str("", "the library wrote to stdout");
    cr_expect_stderr_eq_str("", "the library wrote to stderr");
}

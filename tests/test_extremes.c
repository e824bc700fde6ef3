/* SPDX-License-Identifier: BSD-3-Clause */
/* Extreme values against the oracle: scores spanning six orders of magnitude, logits of +-1e4,
 * all-zero and identical rows, and NaN/Inf inputs that must reach exactly the rows that see them. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"

/* Runs the library on pr with p and checks every row (or the given rows) with tu_check_accuracy. */
static void expect_matches_oracle(const char *what, uint64_t seed, tu_problem *pr, const fa_params *p,
                                  double rel_tol, const int64_t *only_rows, int64_t only_n)
{
    char desc[256], msg[512];
    tu_shape_str(&pr->shape, p, desc, sizeof desc);
    tu_problem_fill_canary(pr);
    fa_status st = fa_forward(NULL, p, &pr->q, &pr->k, &pr->v, &pr->out, pr->lse);
    cr_expect_eq(st, FA_OK, "%s (%s), seed %llu: status %d", what, desc, (unsigned long long)seed, st);
    if (st != FA_OK) return;
    int64_t *rows = NULL;
    int64_t n = only_rows ? only_n : tu_pick_rows(pr, p, INT64_MAX, &rows);
    cr_expect(tu_check_accuracy(pr, p, only_rows ? only_rows : rows, n, rel_tol, msg, sizeof msg),
              "%s (%s), seed %llu: %s", what, desc, (unsigned long long)seed, msg);
    free(rows);
}

Test(extremes, scores_spanning_1e6_in_magnitude_match_oracle_to_1e_9)
{
    uint64_t seed = tu_test_seed();
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < 3; c++) {
            tu_shape s = {t ? FA_F64 : FA_F32, 1, 2, 1, 40, 300, 16, 12, (tu_layout)c};
            tu_rng rng = tu_rng_make(seed + (uint64_t)(3 * t + c));
            tu_problem pr;
            tu_problem_make(&pr, &s, &rng, 1.0);
            /* Key j is scaled by 10^u, u uniform in [-3, 3]: every row's scores run from about
             * 1e-3 to 1e3 in magnitude. */
            double lo = 1e300, hi = 0;
            for (int64_t j = 0; j < s.kv_len; j++) {
                double f = pow(10.0, tu_rng_uniform(&rng, -3.0, 3.0));
                for (int64_t x = 0; x < s.dim; x++) {
                    double kv = kit_tensor_load(&pr.k, 0, 0, j, x) * f;
                    kit_tensor_store(&pr.k, 0, 0, j, x, kv);
                }
                double m = 0;
                for (int64_t x = 0; x < s.dim; x++)
                    m += kit_tensor_load(&pr.q, 0, 0, 0, x) * kit_tensor_load(&pr.k, 0, 0, j, x);
                if (fabs(m) < lo) lo = fabs(m);
                if (fabs(m) > hi) hi = fabs(m);
            }
            cr_assert_gt(hi / lo, 1e6, "seed %llu: construction spans only %g", (unsigned long long)seed,
                         hi / lo);
            fa_params p = FA_PARAMS_INIT;
            p.scale = 1.0;
            p.causal = (fa_causal)c;
            expect_matches_oracle("scores spanning 1e6", seed, &pr, &p, 1e-9, NULL, 0);
            tu_problem_free(&pr);
        }
}

Test(extremes, logits_of_plus_minus_1e4_match_oracle)
{
    uint64_t seed = tu_test_seed();
    for (int t = 0; t < 2; t++) {
        tu_shape s = {t ? FA_F64 : FA_F32, 2, 2, 2, 37, 45, 4, 8, TU_BHSD};
        tu_rng rng = tu_rng_make(seed + (uint64_t)t);
        tu_problem pr;
        tu_problem_make(&pr, &s, &rng, 1.0);
        fa_params p = FA_PARAMS_INIT;
        p.scale = 1.0;
        /* (a) q and k entries of +-50 over D = 4: every logit is exactly one of 0, +-5e3, +-1e4. */
        for (int64_t b = 0; b < 2; b++)
            for (int64_t h = 0; h < 2; h++) {
                for (int64_t i = 0; i < s.q_len; i++)
                    for (int64_t x = 0; x < 4; x++)
                        kit_tensor_store(&pr.q, b, h, i, x, (tu_rng_next(&rng) & 1) ? 50.0 : -50.0);
                for (int64_t j = 0; j < s.kv_len; j++)
                    for (int64_t x = 0; x < 4; x++)
                        kit_tensor_store(&pr.k, b, h, j, x, (tu_rng_next(&rng) & 1) ? 50.0 : -50.0);
            }
        for (int c = 0; c < 3; c++) {
            p.causal = (fa_causal)c;
            expect_matches_oracle("exact logits of +-1e4", seed, &pr, &p, 1e-12, NULL, 0);
        }
        /* (b) logits +-1e4 plus a term of a few units: q = (100 sigma, t, 0, 0), k = (100 tau, u, 0, 0).
         * The oracle itself is only good to about 1e4 * eps here, hence 1e-9. */
        for (int64_t b = 0; b < 2; b++)
            for (int64_t h = 0; h < 2; h++) {
                for (int64_t i = 0; i < s.q_len; i++) {
                    kit_tensor_store(&pr.q, b, h, i, 0, (tu_rng_next(&rng) & 1) ? 100.0 : -100.0);
                    kit_tensor_store(&pr.q, b, h, i, 1, tu_rng_uniform(&rng, -1.7, 1.7));
                    kit_tensor_store(&pr.q, b, h, i, 2, 0.0);
                    kit_tensor_store(&pr.q, b, h, i, 3, 0.0);
                }
                for (int64_t j = 0; j < s.kv_len; j++) {
                    kit_tensor_store(&pr.k, b, h, j, 0, (tu_rng_next(&rng) & 1) ? 100.0 : -100.0);
                    kit_tensor_store(&pr.k, b, h, j, 1, tu_rng_uniform(&rng, -1.7, 1.7));
                    kit_tensor_store(&pr.k, b, h, j, 2, tu_rng_uniform(&rng, -1.0, 1.0));
                    kit_tensor_store(&pr.k, b, h, j, 3, tu_rng_uniform(&rng, -1.0, 1.0));
                }
            }
        for (int c = 0; c < 3; c++) {
            p.causal = (fa_causal)c;
            expect_matches_oracle("logits near +-1e4", seed, &pr, &p, 1e-9, NULL, 0);
        }
        tu_problem_free(&pr);
    }
}

Test(extremes, all_zero_rows_match_oracle)
{
    uint64_t seed = tu_test_seed();
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < 3; c++) {
            tu_shape s = {t ? FA_F64 : FA_F32, 2, 4, 2, 60, 70, 32, 24, (tu_layout)c};
            tu_rng rng = tu_rng_make(seed + (uint64_t)(3 * t + c));
            tu_problem pr;
            tu_problem_make(&pr, &s, &rng, 2.0);
            /* Every 5th query row, every 7th key row and every 3rd value row is zero. */
            for (int64_t b = 0; b < s.batch; b++) {
                for (int64_t h = 0; h < s.q_heads; h++)
                    for (int64_t i = 0; i < s.q_len; i += 5)
                        for (int64_t x = 0; x < s.dim; x++) kit_tensor_store(&pr.q, b, h, i, x, 0.0);
                for (int64_t h = 0; h < s.kv_heads; h++) {
                    for (int64_t j = 0; j < s.kv_len; j += 7)
                        for (int64_t x = 0; x < s.dim; x++) kit_tensor_store(&pr.k, b, h, j, x, 0.0);
                    for (int64_t j = 0; j < s.kv_len; j += 3)
                        for (int64_t y = 0; y < s.dim_v; y++) kit_tensor_store(&pr.v, b, h, j, y, 0.0);
                }
            }
            fa_params p = FA_PARAMS_INIT;
            p.causal = (fa_causal)c;
            expect_matches_oracle("zero rows in q, k and v", seed, &pr, &p, 1e-12, NULL, 0);
            /* Then all of q zero: every row is a plain mean of the values it sees. */
            for (int64_t b = 0; b < s.batch; b++)
                for (int64_t h = 0; h < s.q_heads; h++)
                    for (int64_t i = 0; i < s.q_len; i++)
                        for (int64_t x = 0; x < s.dim; x++) kit_tensor_store(&pr.q, b, h, i, x, 0.0);
            expect_matches_oracle("q all zero", seed, &pr, &p, 1e-12, NULL, 0);
            /* And all of v zero: out must be exactly zero (the oracle's is). */
            for (int64_t b = 0; b < s.batch; b++)
                for (int64_t h = 0; h < s.kv_heads; h++)
                    for (int64_t j = 0; j < s.kv_len; j++)
                        for (int64_t y = 0; y < s.dim_v; y++) kit_tensor_store(&pr.v, b, h, j, y, 0.0);
            expect_matches_oracle("v all zero", seed, &pr, &p, 1e-12, NULL, 0);
            tu_problem_free(&pr);
        }
}

Test(extremes, identical_rows_match_oracle)
{
    uint64_t seed = tu_test_seed();
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < 3; c++) {
            tu_shape s = {t ? FA_F64 : FA_F32, 1, 2, 1, 90, 130, 20, 20, (tu_layout)c};
            tu_rng rng = tu_rng_make(seed + (uint64_t)(3 * t + c));
            tu_problem pr;
            tu_problem_make(&pr, &s, &rng, 3.0);
            fa_params p = FA_PARAMS_INIT;
            p.causal = (fa_causal)c;
            /* All keys identical: every visible key gets the same weight. */
            for (int64_t j = 1; j < s.kv_len; j++)
                for (int64_t x = 0; x < s.dim; x++)
                    kit_tensor_store(&pr.k, 0, 0, j, x, kit_tensor_load(&pr.k, 0, 0, 0, x));
            expect_matches_oracle("identical keys", seed, &pr, &p, 1e-12, NULL, 0);
            /* Then all queries identical too, and all values identical. */
            for (int64_t h = 0; h < s.q_heads; h++)
                for (int64_t i = 0; i < s.q_len; i++)
                    for (int64_t x = 0; x < s.dim; x++)
                        kit_tensor_store(&pr.q, 0, h, i, x, kit_tensor_load(&pr.q, 0, 0, 0, x));
            for (int64_t j = 1; j < s.kv_len; j++)
                for (int64_t y = 0; y < s.dim_v; y++)
                    kit_tensor_store(&pr.v, 0, 0, j, y, kit_tensor_load(&pr.v, 0, 0, 0, y));
            expect_matches_oracle("identical queries, keys and values", seed, &pr, &p, 1e-12, NULL, 0);
            tu_problem_free(&pr);
        }
}

/* NaN or Inf inside q, k or v is not an error: it reaches exactly the rows that see it. */
Test(extremes, nan_and_inf_in_inputs_reach_exactly_the_rows_that_see_them)
{
    uint64_t seed = tu_test_seed();
    const int64_t bad_key = 37, bad_col = 5, bad_row = 20;
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < 3; c++) {
            tu_shape s = {t ? FA_F64 : FA_F32, 1, 2, 1, 80, 80, 16, 12, TU_BHSD};
            tu_rng rng = tu_rng_make(seed + (uint64_t)(3 * t + c));
            fa_params p = FA_PARAMS_INIT;
            p.causal = (fa_causal)c;
            tu_problem pr;

            /* NaN in one key: the oracle's rows that see it are all NaN, the others finite. */
            tu_problem_make(&pr, &s, &rng, 2.0);
            kit_tensor_store(&pr.k, 0, 0, bad_key, 3, NAN);
            expect_matches_oracle("NaN in k", seed, &pr, &p, 1e-12, NULL, 0);
            tu_problem_free(&pr);

            /* NaN in one value element: only that column of the rows that see the key. */
            tu_problem_make(&pr, &s, &rng, 2.0);
            kit_tensor_store(&pr.v, 0, 0, bad_key, bad_col, NAN);
            expect_matches_oracle("NaN in v", seed, &pr, &p, 1e-12, NULL, 0);
            tu_problem_free(&pr);

            /* +Inf in one query row: whatever that row becomes, every other row is untouched. */
            tu_problem_make(&pr, &s, &rng, 2.0);
            kit_tensor_store(&pr.q, 0, 1, bad_row, 2, INFINITY);
            int64_t *rows = malloc(sizeof(int64_t) * (size_t)tu_problem_rows(&pr));
            int64_t n = 0;
            for (int64_t r = 0; r < tu_problem_rows(&pr); r++)
                if (r != s.q_len + bad_row) rows[n++] = r;
            expect_matches_oracle("+Inf in q (other rows)", seed, &pr, &p, 1e-12, rows, n);
            free(rows);
            tu_problem_free(&pr);
        }
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* A decode step's heads that share a kv head run as the rows of one head (src/plan/grouped_rows.c),
 * position by position when each head has several query rows (speculative tokens): GQA and MLA
 * shapes (many query heads over one latent cache) with 1-4 rows a head, every mask (both causal
 * alignments, none, a window), every memory layout, both accumulation types, block sizes that cut
 * the grouped rows across positions and keys that split into chunks. Each call against the float64
 * oracle (the suite's accuracy rule), bitwise the same at 1 and 3 threads, and writing only what it
 * defines. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

Test(grouped_rows, grouped_decode_rows_match_the_oracle_and_every_thread_count)
{
    const uint64_t seed = tu_test_seed();
    static const struct {
        int64_t hq, hkv, nk, d, dv;
    } shapes[] = {
        {8, 2, 70, 32, 24}, {16, 1, 300, 64, 64}, {12, 3, 5000, 40, 40}, {32, 1, 129, FA_MAX_HEAD_DIM, 64}};
    static const fa_causal causals[] = {FA_CAUSAL_BOTTOM_RIGHT, FA_CAUSAL_TOP_LEFT, FA_CAUSAL_NONE};
    static const int blocks[][2] = {{0, 0}, {3, 16}, {8, 48}};
    int c = 0;
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int64_t nq = 1; nq <= 4; nq++)
            for (int m = 0; m < 4; m++, c++) {
                const fa_dtype dt = c % 3 == 0 ? FA_F64 : FA_F32;
                tu_shape sh = {dt,           2,           shapes[s].hq, shapes[s].hkv,     nq,
                               shapes[s].nk, shapes[s].d, shapes[s].dv, (tu_layout)(c % 3)};
                fa_params p = FA_PARAMS_INIT;
                p.causal = causals[m % 3];
                if (m == 3) p.window_left = 17, p.window_right = 0; /* a window, bottom-right */
                const int *bl = blocks[c % 3];
                tu_rng rng = tu_rng_make(seed + (uint64_t)c);
                tu_problem one, three;
                tu_problem_make(&one, &sh, &rng, 1.5);
                rng = tu_rng_make(seed + (uint64_t)c);
                tu_problem_make(&three, &sh, &rng, 1.5);
                char desc[256], msg[512];
                tu_shape_str(&sh, &p, desc, sizeof desc);
                fa_context *c1 = tu_context(1, bl[0], bl[1]), *c3 = tu_context(3, bl[0], bl[1]);
                cr_assert_eq(fa_forward(c1, &p, &one.q, &one.k, &one.v, &one.out, one.lse), FA_OK, "%s: %s",
                             desc, fa_last_error());
                cr_assert_eq(fa_forward(c3, &p, &three.q, &three.k, &three.v, &three.out, three.lse), FA_OK,
                             "%s: %s", desc, fa_last_error());
                int64_t *rows, where = -1;
                int64_t n = tu_pick_rows(&one, &p, INT64_MAX, &rows);
                cr_expect(tu_check_accuracy(&one, &p, rows, n, 1e-12, msg, sizeof msg),
                          "%s, blocks %d/%d, seed %llu: %s", desc, bl[0], bl[1], (unsigned long long)seed,
                          msg);
                cr_expect(tu_outputs_bitwise_equal(&one, &three, &where),
                          "%s, blocks %d/%d: 1 and 3 threads differ at %lld", desc, bl[0], bl[1],
                          (long long)where);
                cr_expect(tu_problem_only_defined_written(&one), "%s: wrote past what it defines", desc);
                free(rows);
                fa_context_destroy(c1), fa_context_destroy(c3);
                tu_problem_free(&one), tu_problem_free(&three);
            }
}

/* DeepSeek's MLA keeps one latent cache: the values are the first 512 dims of the 576-dim keys (a
 * view of the same memory, which an input may share with another input). 128 query heads over one
 * cache, 1 and 4 rows a head (the rows grouped), f32 and a bf16 cache under f32 queries: against the
 * oracle on the same values, and bitwise the call with the values copied out. */
Test(grouped_rows, mla_values_as_a_view_of_the_keys_match_a_separate_copy_and_the_oracle)
{
    const uint64_t seed = tu_test_seed();
    enum { HQ = 128, NK = 200, D = 576, DV = 512 };
    for (int64_t nq = 1; nq <= 4; nq += 3) {
        tu_shape sh = {FA_F32, 1, HQ, 1, nq, NK, D, DV, TU_BHSD};
        fa_params p = FA_PARAMS_INIT;
        p.causal = FA_CAUSAL_BOTTOM_RIGHT;
        tu_rng rng = tu_rng_make(seed + (uint64_t)nq);
        tu_problem pr;
        tu_problem_make(&pr, &sh, &rng, 1.0);
        /* the separate values are the keys' first DV dims, copied */
        for (int64_t j = 0; j < NK; j++)
            for (int64_t y = 0; y < DV; y++)
                kit_tensor_store(&pr.v, 0, 0, j, y, kit_tensor_load(&pr.k, 0, 0, j, y));
        char desc[256], msg[512];
        tu_shape_str(&sh, &p, desc, sizeof desc);
        cr_assert_eq(fa_forward(NULL, &p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse), FA_OK, "%s: %s", desc,
                     fa_last_error());
        cr_expect(tu_check_picked_accuracy(&pr, &p, INT64_MAX, 1e-12, msg, sizeof msg), "%s: %s", desc, msg);
        double *copied = tu_out_copy(&pr), *lse_copied = tu_lse_copy(&pr);
        fa_tensor view = pr.k; /* the values: the same memory, its first DV dims */
        view.dim = DV;
        tu_problem_fill_canary(&pr);
        cr_assert_eq(fa_forward(NULL, &p, &pr.q, &pr.k, &view, &pr.out, pr.lse), FA_OK,
                     "%s, v a view of k: %s", desc, fa_last_error());
        double *viewed = tu_out_copy(&pr), *lse_viewed = tu_lse_copy(&pr);
        cr_expect(memcmp(copied, viewed, sizeof(double) * (size_t)(HQ * nq * DV)) == 0 &&
                      memcmp(lse_copied, lse_viewed, sizeof(double) * (size_t)(HQ * nq)) == 0,
                  "%s: v as a view of k differs from v copied out of it", desc);
        free(copied), free(viewed), free(lse_copied), free(lse_viewed);
        tu_problem_free(&pr);
    }
}

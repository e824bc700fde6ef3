/* Accuracy against the float64 oracle over a pairwise-covering grid of shapes.
 *
 * f64: normwise relative error max|x - ref| / max|ref| <= 1e-12 for out and for the finite lse;
 *      -inf lse must match exactly.
 * f32: max abs error of the library <= 2 · (max abs error of the naive f32 algorithm) + 1e-6,
 *      both measured against the f64 oracle on the same f32 inputs. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "util.h"

/* ---- the grid ------------------------------------------------------------------------------
 * Eight axes, each with at most 7 values. The rows are the orthogonal array OA(49, 8, 7, 2):
 * row r = 7a + b has columns a, b, a + b, a + 2b, ..., a + 6b (mod 7); any two columns take every
 * pair of values exactly once. An axis with fewer than 7 values reads its column mod its size,
 * which keeps every pair covered. The order of the values inside each axis is free; the one below
 * puts the long sequences against the small head dims so the whole grid stays cheap. */

enum { AX_NQ, AX_NK, AX_D, AX_CAUSAL, AX_HEADS, AX_DV, AX_LAYOUT, AX_DTYPE, AX_COUNT };

#define GRID_ROWS 49

static const int64_t nq_levels[7] = {128, 1, 1023, 17, 203, 256, 113};
static const int64_t nk_levels[7] = {203, 17, 1, 256, 113, 128, 1023};
static const int64_t d_levels[7] = {256, 128, 64, 1, 8, 111, 59};
static const int64_t heads_levels[3][2] = {{1, 1}, {4, 2}, {4, 1}};
static const fa_causal causal_levels[3] = {FA_CAUSAL_NONE, FA_CAUSAL_TOP_LEFT, FA_CAUSAL_BOTTOM_RIGHT};
static const tu_layout layout_levels[3] = {TU_BHSD, TU_BSHD, TU_PACKED};
static const fa_dtype dtype_levels[2] = {FA_F32, FA_F64};
static const int axis_size[AX_COUNT] = {7, 7, 7, 3, 3, 2, 3, 2};
static const int axis_column[AX_COUNT] = {7, 0, 4, 6, 5, 1, 3, 2};

static int grid_level(int row, int axis)
{
    return tu_pairwise_level(row, axis_column[axis], axis_size[axis]);
}

/* A value of Dv different from D (axis level 1), still inside 1..512. */
static int64_t other_dim_v(int64_t d)
{
    return d < 128 ? d + 13 : d / 2 + 7;
}

static void grid_case(int row, tu_shape *s, fa_params *p)
{
    s->q_len = nq_levels[grid_level(row, AX_NQ)];
    s->kv_len = nk_levels[grid_level(row, AX_NK)];
    s->dim = d_levels[grid_level(row, AX_D)];
    s->dim_v = grid_level(row, AX_DV) == 0 ? s->dim : other_dim_v(s->dim);
    s->q_heads = heads_levels[grid_level(row, AX_HEADS)][0];
    s->kv_heads = heads_levels[grid_level(row, AX_HEADS)][1];
    s->layout = layout_levels[grid_level(row, AX_LAYOUT)];
    s->dtype = dtype_levels[grid_level(row, AX_DTYPE)];
    s->batch = s->q_len * s->kv_len <= 20000 ? 2 : 1;
    *p = fa_params_default();
    p->causal = causal_levels[grid_level(row, AX_CAUSAL)];
    /* Half the rows use an explicit scale, half the default 1/sqrt(D). */
    p->scale = (row % 2) ? 0.8 / sqrt((double)s->dim) : 0.0;
}

Test(grid, covers_every_pair_of_axis_values)
{
    for (int a1 = 0; a1 < AX_COUNT; a1++)
        for (int a2 = a1 + 1; a2 < AX_COUNT; a2++)
            for (int l1 = 0; l1 < axis_size[a1]; l1++)
                for (int l2 = 0; l2 < axis_size[a2]; l2++) {
                    int found = 0;
                    for (int r = 0; r < GRID_ROWS && !found; r++)
                        found = grid_level(r, a1) == l1 && grid_level(r, a2) == l2;
                    cr_assert(found, "axes %d and %d: value pair (%d, %d) is not covered", a1, a2, l1, l2);
                }
}

/* Oracle work per case, in element products; bigger cases compare a sample of rows. */
#define ORACLE_BUDGET 3000000

static void run_grid(const char *name, fa_dtype dtype)
{
    uint64_t seed = tu_seed(name);
    fa_context *ctx = NULL;
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    int cases = 0;
    for (int r = 0; r < GRID_ROWS; r++) {
        tu_shape s;
        fa_params p;
        grid_case(r, &s, &p);
        if (s.dtype != dtype) continue;
        cases++;
        tu_rng rng = tu_rng_make(seed + (uint64_t)r);
        tu_problem pr;
        tu_problem_make(&pr, &s, &rng, 2.5);
        char desc[256], msg[512];
        tu_shape_str(&s, &p, desc, sizeof desc);

        fa_status st = fa_forward(ctx, &p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
        cr_expect_eq(st, FA_OK, "grid row %d (%s), seed %llu: status %d (%s)", r, desc,
                     (unsigned long long)seed, st, fa_status_str(st));
        if (st == FA_OK) {
            cr_expect(tu_problem_only_defined_written(&pr),
                      "grid row %d (%s), seed %llu: a byte outside the out view or lse was written", r, desc,
                      (unsigned long long)seed);
            int64_t *rows;
            int64_t n = tu_pick_rows(&pr, &p, ORACLE_BUDGET, &rows);
            int ok = tu_check_accuracy(&pr, &p, rows, n, 1e-12, msg, sizeof msg);
            cr_expect(ok, "grid row %d (%s), seed %llu, %lld rows compared: %s", r, desc,
                      (unsigned long long)seed, (long long)n, msg);
            free(rows);
        }
        tu_problem_free(&pr);
    }
    cr_assert_gt(cases, 0);
    fa_context_destroy(ctx);
}

Test(accuracy, f64_matches_oracle_to_1e_12_over_pairwise_grid)
{
    run_grid("accuracy.f64_matches_oracle_to_1e_12_over_pairwise_grid", FA_F64);
}

Test(accuracy, f32_within_twice_naive_f32_error_over_pairwise_grid)
{
    run_grid("accuracy.f32_within_twice_naive_f32_error_over_pairwise_grid", FA_F32);
}

/* D and Dv at the ends of their range, 1 and 512, in every combination and both dtypes. */
Test(accuracy, head_dims_at_limits_1_and_512_match_oracle)
{
    uint64_t seed = tu_seed("accuracy.head_dims_at_limits_1_and_512_match_oracle");
    static const int64_t dims[][2] = {{512, 512}, {1, 512}, {512, 1}, {1, 1}};
    int c = 0;
    for (int t = 0; t < 2; t++)
        for (int x = 0; x < 4; x++, c++) {
            tu_shape s = {t ? FA_F64 : FA_F32, 1, 2, 1, 33, 47, dims[x][0], dims[x][1], (tu_layout)(c % 3)};
            fa_params p = fa_params_default();
            p.causal = causal_levels[c % 3];
            tu_rng rng = tu_rng_make(seed + (uint64_t)c);
            tu_problem pr;
            tu_problem_make(&pr, &s, &rng, 1.0);
            char desc[256], msg[512];
            tu_shape_str(&s, &p, desc, sizeof desc);
            fa_status st = fa_forward(NULL, &p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
            cr_expect_eq(st, FA_OK, "%s, seed %llu: status %d", desc, (unsigned long long)seed, st);
            if (st == FA_OK) {
                int64_t *rows;
                int64_t n = tu_pick_rows(&pr, &p, INT64_MAX, &rows);
                cr_expect(tu_check_accuracy(&pr, &p, rows, n, 1e-12, msg, sizeof msg), "%s, seed %llu: %s",
                          desc, (unsigned long long)seed, msg);
                free(rows);
            }
            tu_problem_free(&pr);
        }
}

/* Inputs may broadcast with a stride of 0: one K and V shared by every batch, and one q row
 * repeated over the sequence. Also a negative (finite) scale is valid. */
Test(accuracy, zero_stride_broadcast_inputs_and_negative_scale_match_oracle)
{
    uint64_t seed = tu_seed("accuracy.zero_stride_broadcast_inputs_and_negative_scale_match_oracle");
    for (int t = 0; t < 2; t++) {
        fa_dtype dt = t ? FA_F64 : FA_F32;
        tu_shape s = {dt, 3, 4, 2, 40, 50, 24, 16, TU_BHSD};
        tu_rng rng = tu_rng_make(seed + (uint64_t)t);
        tu_problem pr;
        tu_problem_make(&pr, &s, &rng, 2.0);
        pr.k.stride_batch = 0; /* every batch reads batch 0's k and v */
        pr.v.stride_batch = 0;
        fa_params p = fa_params_default();
        p.causal = t ? FA_CAUSAL_BOTTOM_RIGHT : FA_CAUSAL_TOP_LEFT;
        p.scale = -0.3;
        char desc[256], msg[512];
        tu_shape_str(&s, &p, desc, sizeof desc);
        fa_status st = fa_forward(NULL, &p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
        cr_expect_eq(st, FA_OK, "%s (k, v stride_batch 0), seed %llu: status %d", desc,
                     (unsigned long long)seed, st);
        int64_t *rows;
        int64_t n = tu_pick_rows(&pr, &p, INT64_MAX, &rows);
        if (st == FA_OK)
            cr_expect(tu_check_accuracy(&pr, &p, rows, n, 1e-12, msg, sizeof msg), "%s, seed %llu: %s", desc,
                      (unsigned long long)seed, msg);

        /* q broadcast along the sequence: every query row is row 0. */
        pr.q.stride_seq = 0;
        tu_problem_fill_canary(&pr);
        st = fa_forward(NULL, &p, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
        cr_expect_eq(st, FA_OK, "%s (q stride_seq 0), seed %llu: status %d", desc, (unsigned long long)seed,
                     st);
        if (st == FA_OK)
            cr_expect(tu_check_accuracy(&pr, &p, rows, n, 1e-12, msg, sizeof msg),
                      "%s (q stride_seq 0), seed %llu: %s", desc, (unsigned long long)seed, msg);
        free(rows);
        tu_problem_free(&pr);
    }
}

/* Each tensor with its own layout: q contiguous [B][H][S][D], k [B][S][H][D], v a slice of a
 * packed QKV buffer, out [B][S][H][Dv] with padding. Nothing may assume two views share strides. */
Test(accuracy, mixed_layouts_per_tensor_match_oracle)
{
    uint64_t seed = tu_seed("accuracy.mixed_layouts_per_tensor_match_oracle");
    for (int t = 0; t < 2; t++)
        for (int c = 0; c < 3; c++) {
            fa_dtype dt = t ? FA_F64 : FA_F32;
            tu_shape s = {dt, 3, 6, 3, 45, 70, 20, 28, TU_BHSD};
            tu_problem by_layout[3];
            for (int l = 0; l < 3; l++) {
                s.layout = (tu_layout)l;
                tu_rng rng = tu_rng_make(seed + (uint64_t)(10 * t + l));
                tu_problem_make(&by_layout[l], &s, &rng, 2.0);
            }
            tu_problem mix = by_layout[TU_PACKED]; /* its out (padded) and lse */
            mix.q = by_layout[TU_BHSD].q;
            mix.k = by_layout[TU_BSHD].k;
            fa_params p = fa_params_default();
            p.causal = (fa_causal)c;
            char desc[256], msg[512];
            tu_shape_str(&mix.shape, &p, desc, sizeof desc);
            fa_status st = fa_forward(NULL, &p, &mix.q, &mix.k, &mix.v, &mix.out, mix.lse);
            cr_expect_eq(st, FA_OK, "%s (q bhsd, k bshd, v packed), seed %llu: status %d", desc,
                         (unsigned long long)seed, st);
            if (st == FA_OK) {
                cr_expect(tu_problem_only_defined_written(&mix), "%s, seed %llu: wrote outside out/lse", desc,
                          (unsigned long long)seed);
                int64_t *rows;
                int64_t n = tu_pick_rows(&mix, &p, INT64_MAX, &rows);
                cr_expect(tu_check_accuracy(&mix, &p, rows, n, 1e-12, msg, sizeof msg),
                          "%s (q bhsd, k bshd, v packed), seed %llu: %s", desc, (unsigned long long)seed,
                          msg);
                free(rows);
            }
            for (int l = 0; l < 3; l++) tu_problem_free(&by_layout[l]);
        }
}

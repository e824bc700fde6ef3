/* SPDX-License-Identifier: BSD-3-Clause */
/* Products on a mask's edge that skip what no row sees (drivers/visible_products.h), against the same
 * table's products over the whole tile, bit for bit:
 * - scores_rows (kernels.h), on every table this CPU runs: the rows [0, rows) of a sub-block that
 *   starts at a padding unit have scores' bits, and nothing at or past rows rounded up to a vector,
 *   nor before the sub-block, is written;
 * - fa_scores_visible_f32: after the epilogue, every entry of every row equals the whole tile's
 *   (the masked ones -inf), and with `masked` the masked entries are -inf before it, the padding rows
 *   0, as scores leaves them;
 * - fa_accumulate_visible_f32 and fa_accumulate_t_visible_f32 on finite operands with zero masked
 *   weights: the bits of one call over the whole tile;
 * - online_softmax on a tile of a few real rows (a tile's row edge), and on one row laid key after
 *   key (ld 1, a decode step's): their bits are those of the step over every row of the tile.
 * The first three over causal masks both ways, left and right windows of a few keys to more than the
 * tile, query blocks of 5 to 64 rows at offsets that put the diagonal anywhere in the tile, and tiles
 * of 1 to 70 keys. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/params.h"
#include "api/validate.h"
#include "drivers/epilogue.h"
#include "drivers/visible_products.h"
#include "kernels/kernels.h"
#include "plan/mask.h"
#include "simd_tables.h"
#include "util.h"

#define MAX_SETS 8

enum { LD = 64, DIM = 24, MAX_COLS = 70, NQ = 200, NK = 200 };

static float *aligned_floats(size_t n)
{
    float *x = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    cr_assert_not_null(x);
    return x;
}

static void fill(float *x, size_t n, tu_rng *rng)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)tu_rng_uniform(rng, -1, 1);
}

static int same_bits(const float *a, const float *b)
{
    return memcmp(a, b, sizeof(float)) == 0;
}

Test(edge_tiles, scores_rows_of_every_table_give_scores_bits_and_write_only_their_rows)
{
    st_named_f32 sets[MAX_SETS];
    const int n_sets = st_f32_sets(sets, MAX_SETS);
    tu_rng rng = tu_rng_make(tu_test_seed());
    float *qt = aligned_floats((size_t)DIM * LD), *k = aligned_floats((size_t)MAX_COLS * DIM);
    float *whole = aligned_floats((size_t)MAX_COLS * LD), *part = aligned_floats((size_t)MAX_COLS * LD);
    fill(qt, (size_t)DIM * LD, &rng);
    fill(k, (size_t)MAX_COLS * DIM, &rng);
    static const int64_t starts[] = {0, 16, 32, 48}, counts[] = {5, 8, 13, 16, 17, 31, 33, 48, 64};
    static const int64_t cols_list[] = {1, 5, 6, 7, 24, 70};
    const float sentinel = -12345.0f;
    for (int t = 0; t < n_sets; t++) {
        const fa_kernels_f32 *kern = sets[t].set;
        const int64_t lanes = kern->traits.lanes;
        for (size_t ci = 0; ci < sizeof cols_list / sizeof *cols_list; ci++) {
            const int64_t cols = cols_list[ci];
            kern->scores(LD, LD, cols, DIM, qt, k, DIM, whole);
            for (size_t si = 0; si < sizeof starts / sizeof *starts; si++)
                for (size_t ni = 0; ni < sizeof counts / sizeof *counts; ni++) {
                    const int64_t r0 = starts[si], rows = counts[ni];
                    if (r0 + rows > LD) continue;
                    for (int64_t i = 0; i < cols * LD; i++) part[i] = sentinel;
                    kern->scores_rows(rows, LD, cols, DIM, qt + r0, k, DIM, part + r0);
                    const int64_t extent = (rows + lanes - 1) / lanes * lanes;
                    for (int64_t c = 0; c < cols; c++)
                        for (int64_t r = 0; r < LD; r++) {
                            const float *got = &part[c * LD + r];
                            if (r >= r0 && r < r0 + rows)
                                cr_assert(
                                    same_bits(got, &whole[c * LD + r]),
                                    "%s: rows %lld at %lld, %lld keys: score (%lld, %lld) %a, whole tile %a",
                                    sets[t].name, (long long)rows, (long long)r0, (long long)cols,
                                    (long long)c, (long long)r, (double)*got, (double)whole[c * LD + r]);
                            else if (r < r0 || r >= r0 + extent)
                                cr_assert(*got == sentinel,
                                          "%s: rows %lld at %lld, %lld keys: (%lld, %lld) written",
                                          sets[t].name, (long long)rows, (long long)r0, (long long)cols,
                                          (long long)c, (long long)r);
                        }
                }
        }
    }
    free(qt), free(k), free(whole), free(part);
}

/* A problem of NQ query rows and NK keys with the given mask: only its geometry is used. */
typedef struct {
    float *q, *kv, *out;
    fa_params_copy params;
    fa_problem prob;
} mask_case;

static void mask_case_make(mask_case *m, fa_causal causal, int64_t left, int64_t right)
{
    fa_params p = FA_PARAMS_INIT;
    p.causal = causal;
    p.window_left = left;
    p.window_right = right;
    m->q = calloc((size_t)NQ * 4, sizeof(float));
    m->out = calloc((size_t)NQ * 4, sizeof(float));
    m->kv = calloc((size_t)NK * 4, sizeof(float));
    cr_assert(m->q && m->out && m->kv);
    fa_tensor q = fa_tensor_bhsd(m->q, FA_F32, 1, 1, NQ, 4), o = fa_tensor_bhsd(m->out, FA_F32, 1, 1, NQ, 4);
    fa_tensor kv = fa_tensor_bhsd(m->kv, FA_F32, 1, 1, NK, 4);
    cr_assert_eq(fa_params_read("test", &p, &m->params), FA_OK);
    cr_assert_eq(fa_validate_forward("test", &m->params.p, &q, &kv, &kv, &o, NULL, &m->prob), FA_OK, "%s",
                 fa_last_error());
}

static void mask_case_free(mask_case *m)
{
    free(m->q), free(m->kv), free(m->out);
}

typedef struct {
    fa_causal causal;
    int64_t left, right;
} mask_kind;

static const mask_kind masks[] = {
    {FA_CAUSAL_TOP_LEFT, -1, -1}, {FA_CAUSAL_BOTTOM_RIGHT, -1, -1}, {FA_CAUSAL_TOP_LEFT, 3, -1},
    {FA_CAUSAL_TOP_LEFT, 17, -1}, {FA_CAUSAL_TOP_LEFT, 40, -1},     {FA_CAUSAL_TOP_LEFT, 300, -1},
    {FA_CAUSAL_NONE, 20, 5},      {FA_CAUSAL_NONE, -1, 9},          {FA_CAUSAL_NONE, 0, 0},
};

/* Query blocks (row0, rows) and tiles (col0, cols) that put the masks' edges anywhere in them. */
static const int64_t block_rows[] = {5, 16, 17, 32, 45, 64}, row_starts[] = {0, 3, 40, 100};
static const int64_t tile_cols[] = {1, 6, 13, 24, 70}, col_offsets[] = {-40, -9, 0, 7, 30};
enum {
    N_ROWS = 6,
    N_STARTS = 4,
    N_COLS = 5,
    N_OFFSETS = 5,
    N_TILES = N_ROWS * N_STARTS * N_COLS * N_OFFSETS
};

typedef struct {
    int64_t rows, row0, cols, col0, ld;
} tile_case;

/* Whether row r of a block of `rows` rows at row0 sees key `key` (padding rows see none). */
static int sees(const fa_problem *p, int64_t row0, int64_t rows, int64_t r, int64_t key)
{
    const fa_key_range keys = fa_visible_keys(p, row0 + r);
    return r < rows && key >= keys.begin && key < keys.end;
}

/* Tile case i of N_TILES; 0 when its keys fall outside the problem's. */
static int tile_case_at(int i, tile_case *t)
{
    t->rows = block_rows[i % N_ROWS], i /= N_ROWS;
    t->row0 = row_starts[i % N_STARTS], i /= N_STARTS;
    t->cols = tile_cols[i % N_COLS], i /= N_COLS;
    t->col0 = t->row0 + col_offsets[i];
    t->ld = (t->rows + 15) / 16 * 16;
    return t->col0 >= 0 && t->col0 + t->cols <= NK;
}

/* One edge case: a table, a mask (index mi of masks), a block and a tile. */
typedef struct {
    const st_named_f32 *set;
    size_t mi;
    const fa_problem *p;
    tile_case t;
} edge_case;

/* Calls check(&case, state) for every table this CPU runs, every mask and every tile case. */
static void for_each_edge_case(void (*check)(const edge_case *, void *), void *state)
{
    st_named_f32 sets[MAX_SETS];
    const int n_sets = st_f32_sets(sets, MAX_SETS);
    for (size_t mi = 0; mi < sizeof masks / sizeof *masks; mi++) {
        mask_case m;
        mask_case_make(&m, masks[mi].causal, masks[mi].left, masks[mi].right);
        for (int t = 0; t < n_sets; t++)
            for (int ti = 0; ti < N_TILES; ti++) {
                edge_case e = {.set = &sets[t], .mi = mi, .p = &m.prob};
                if (tile_case_at(ti, &e.t)) check(&e, state);
            }
        mask_case_free(&m);
    }
}

typedef struct {
    tu_rng rng;
    float *qt, *k, *whole, *seen;
    int64_t edges;
} scores_state;

static void check_scores(const edge_case *e, void *state)
{
    scores_state *st = state;
    const fa_problem *p = e->p;
    const fa_kernels_f32 *kern = e->set->set;
    const int64_t rows = e->t.rows, row0 = e->t.row0, cols = e->t.cols, col0 = e->t.col0, ld = e->t.ld;
    float *qt = st->qt, *whole = st->whole, *seen = st->seen;
    /* the packed queries: zero padding rows, as pack_transposed leaves them */
    for (int64_t x = 0; x < DIM; x++)
        for (int64_t r = 0; r < ld; r++)
            qt[x * ld + r] = r < rows ? (float)tu_rng_uniform(&st->rng, -1, 1) : 0.0f;
    kern->scores(rows, ld, cols, DIM, qt, st->k, DIM, whole);
    for (int64_t i = 0; i < cols * ld; i++) seen[i] = NAN; /* an earlier tile's */
    fa_scores_visible_f32(kern, p, row0, rows, col0, cols, DIM, qt, ld, st->k, DIM, seen, 1);
    const int full = fa_tile_fully_visible(p, row0, rows, col0, cols);
    st->edges += !full;
    for (int64_t c = 0; c < cols; c++)
        for (int64_t r = 0; r < ld; r++) {
            const float got = seen[c * ld + r];
            if (sees(p, row0, rows, r, col0 + c) || r >= rows || full)
                cr_assert(
                    same_bits(&got, &whole[c * ld + r]),
                    "%s, mask %zu, rows %lld at %lld, keys %lld at %lld: (%lld, %lld) %a, whole tile %a",
                    e->set->name, e->mi, (long long)rows, (long long)row0, (long long)cols, (long long)col0,
                    (long long)c, (long long)r, (double)got, (double)whole[c * ld + r]);
            else if (got != -INFINITY) /* masked: computed, or -inf */
                cr_assert(same_bits(&got, &whole[c * ld + r]), "%s, mask %zu: masked (%lld, %lld) is %a",
                          e->set->name, e->mi, (long long)c, (long long)r, (double)got);
        }
    fa_epilogue_f32(p, row0, rows, col0, cols, whole, ld);
    fa_epilogue_f32(p, row0, rows, col0, cols, seen, ld);
    cr_assert(memcmp(whole, seen, (size_t)(cols * ld) * sizeof(float)) == 0,
              "%s, mask %zu: the tiles differ after the epilogue", e->set->name, e->mi);
}

Test(edge_tiles, visible_scores_match_the_whole_tile_after_the_epilogue)
{
    scores_state st = {.rng = tu_rng_make(tu_test_seed()),
                       .qt = aligned_floats((size_t)DIM * LD),
                       .k = aligned_floats((size_t)MAX_COLS * DIM),
                       .whole = aligned_floats((size_t)MAX_COLS * LD),
                       .seen = aligned_floats((size_t)MAX_COLS * LD)};
    fill(st.k, (size_t)MAX_COLS * DIM, &st.rng);
    for_each_edge_case(check_scores, &st);
    cr_assert_gt(st.edges, 1000, "only %lld edge tiles met", (long long)st.edges);
    free(st.qt), free(st.k), free(st.whole), free(st.seen);
}

enum { ACC = DIM + 3, ACC_ROWS = MAX_COLS + LD };

typedef struct {
    tu_rng rng;
    float *w, *x, *acc0, *whole, *seen;
} sums_state;

static void check_sums(const edge_case *e, void *state)
{
    sums_state *st = state;
    const fa_problem *p = e->p;
    const fa_kernels_f32 *kern = e->set->set;
    const int64_t rows = e->t.rows, row0 = e->t.row0, cols = e->t.cols, col0 = e->t.col0, ld = e->t.ld;
    const size_t acc_bytes = (size_t)ACC_ROWS * ACC * sizeof(float);
    /* weights: probabilities where visible, exact zeros where masked */
    for (int64_t c = 0; c < cols; c++)
        for (int64_t r = 0; r < ld; r++)
            st->w[c * ld + r] =
                sees(p, row0, rows, r, col0 + c) ? (float)tu_rng_uniform(&st->rng, 0, 1) : 0.0f;
    for (int trans = 0; trans < 2; trans++) { /* P·V (acc rows: query rows), Pᵀ·dO (acc rows: keys) */
        memcpy(st->whole, st->acc0, acc_bytes), memcpy(st->seen, st->acc0, acc_bytes);
        if (trans) {
            kern->accumulate_t(rows, cols, DIM, st->w, ld, st->x, DIM, st->whole, ACC);
            fa_accumulate_t_visible_f32(kern, p, row0, rows, col0, cols, DIM, st->w, ld, st->x, DIM, st->seen,
                                        ACC);
        } else {
            kern->accumulate(rows, cols, DIM, st->w, ld, st->x, DIM, st->whole, ACC);
            fa_accumulate_visible_f32(kern, p, row0, rows, col0, cols, DIM, st->w, ld, st->x, DIM, st->seen,
                                      ACC);
        }
        cr_assert(memcmp(st->whole, st->seen, acc_bytes) == 0,
                  "%s, mask %zu, rows %lld at %lld, keys %lld at %lld: %s differs", e->set->name, e->mi,
                  (long long)rows, (long long)row0, (long long)cols, (long long)col0,
                  trans ? "Pᵀ·dO" : "P·V");
    }
}

Test(edge_tiles, visible_sums_on_finite_operands_give_the_whole_tiles_bits)
{
    sums_state st = {.rng = tu_rng_make(tu_test_seed()),
                     .w = aligned_floats((size_t)MAX_COLS * LD),
                     .x = aligned_floats((size_t)ACC_ROWS * DIM),
                     .acc0 = aligned_floats((size_t)ACC_ROWS * ACC),
                     .whole = aligned_floats((size_t)ACC_ROWS * ACC),
                     .seen = aligned_floats((size_t)ACC_ROWS * ACC)};
    fill(st.x, (size_t)ACC_ROWS * DIM, &st.rng);
    fill(st.acc0, (size_t)ACC_ROWS * ACC, &st.rng);
    for_each_edge_case(check_sums, &st);
    free(st.w), free(st.x), free(st.acc0), free(st.whole), free(st.seen);
}

/* online_softmax on a tile of 1 to 9 real rows (a decode step's, and one past a vector of 8), every
 * table: each real row's probabilities, max, sum and rescaled accumulator have the bits of the same
 * step with every row of the tile real (kernels.h lets a table step only the first vector's rows
 * of such a tile). Rows that saw no key yet, masked keys, a max that rises and one that does not. */
Test(edge_tiles, online_softmax_of_a_few_rows_gives_the_whole_tiles_bits_on_them)
{
    enum { SLD = 64, SCOLS = 67, SACC = 64 }; /* whole vectors at every vector length up to 2048 bits */
    st_named_f32 sets[MAX_SETS];
    const int n_sets = st_f32_sets(sets, MAX_SETS);
    tu_rng rng = tu_rng_make(tu_test_seed());
    float *s0 = aligned_floats((size_t)SCOLS * SLD), *s[2], *m[2], *l[2], *acc[2];
    float m0[SLD], l0[SLD], *acc0 = aligned_floats((size_t)SLD * SACC);
    for (int v = 0; v < 2; v++) {
        s[v] = aligned_floats((size_t)SCOLS * SLD), acc[v] = aligned_floats((size_t)SLD * SACC);
        m[v] = aligned_floats(SLD), l[v] = aligned_floats(SLD);
    }
    fill(s0, (size_t)SCOLS * SLD, &rng);
    fill(acc0, (size_t)SLD * SACC, &rng);
    for (int r = 0; r < SLD; r++) {
        /* row 2 saw no key before and sees none now; odd rows saw none before; the rest a max that
         * this tile's scores (in [-1, 1]) raise or not */
        m0[r] = r % 2 ? -INFINITY : (float)tu_rng_uniform(&rng, -1.5, 1.5);
        l0[r] = r % 2 ? 0.0f : (float)tu_rng_uniform(&rng, 0.5, 4);
        for (int c = 0; c < SCOLS; c++)
            if (r == 2 || (c + r) % 7 == 0) s0[c * SLD + r] = -INFINITY;
    }
    m0[2] = -INFINITY, l0[2] = 0.0f;
    for (int i = 0; i < n_sets; i++)
        for (int64_t rows = 1; rows <= 9; rows++)
            for (int64_t cols = 1; cols <= SCOLS; cols += 33) {
                for (int v = 0; v < 2; v++) {
                    memcpy(s[v], s0, sizeof(float) * SCOLS * SLD);
                    memcpy(acc[v], acc0, sizeof(float) * SLD * SACC);
                    memcpy(m[v], m0, sizeof m0), memcpy(l[v], l0, sizeof l0);
                    sets[i].set->online_softmax(v ? SLD : rows, SLD, cols, s[v], m[v], l[v], acc[v], SACC,
                                                SACC);
                }
                int64_t off = 0;
                for (int64_t r = 0; r < rows; r++) {
                    off += !same_bits(&m[0][r], &m[1][r]) + !same_bits(&l[0][r], &l[1][r]);
                    for (int64_t c = 0; c < cols; c++)
                        off += !same_bits(&s[0][c * SLD + r], &s[1][c * SLD + r]);
                    for (int64_t y = 0; y < SACC; y++)
                        off += !same_bits(&acc[0][r * SACC + y], &acc[1][r * SACC + y]);
                }
                cr_expect_eq(
                    off, 0, "%s online_softmax, %lld rows of %d, %lld keys: %lld values off the whole tile's",
                    sets[i].name, (long long)rows, SLD, (long long)cols, (long long)off);
            }
    for (int v = 0; v < 2; v++) free(s[v]), free(acc[v]), free(m[v]), free(l[v]);
    free(s0), free(acc0);
}

/* Bits, but any NaN equals any NaN: which operand's payload an addition of two NaNs keeps is the
 * compiler's choice of operand order (test_kernel_stored.c), and no result promises payloads. */
static int same_value(float a, float b)
{
    return (a != a && b != b) || same_bits(&a, &b);
}

/* online_softmax on one row laid key after key (ld = 1, a decode step's tile read in place), every
 * table: the row's probabilities, max (but a zero's sign), sum and rescaled accumulator have the
 * bits of the same row stepped in a tile of 64 rows, for every row of such a tile: rows that saw no
 * key before, that see none now, whose max rises or holds, that meet a NaN or an infinite score,
 * whose max is a zero that scores of both signs tie; over key counts around
 * the vector, chain and tail steps of every vector length; the row at an aligned and an odd address. */
Test(edge_tiles, online_softmax_of_one_row_key_after_key_gives_its_bits_in_a_whole_tile)
{
    enum { SLD = 64, SCOLS = 67, SACC = 64 };
    static const int64_t col_counts[] = {1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 67};
    st_named_f32 sets[MAX_SETS];
    const int n_sets = st_f32_sets(sets, MAX_SETS);
    tu_rng rng = tu_rng_make(tu_test_seed());
    float *s0 = aligned_floats((size_t)SCOLS * SLD), *s = aligned_floats((size_t)SCOLS * SLD);
    float *acc0 = aligned_floats((size_t)SLD * SACC), *acc = aligned_floats((size_t)SLD * SACC);
    float *row = aligned_floats(SCOLS + 1), *row_acc = aligned_floats(SACC);
    float m0[SLD], l0[SLD], *m = aligned_floats(SLD), *l = aligned_floats(SLD); /* a tile's: aligned */
    fill(s0, (size_t)SCOLS * SLD, &rng);
    fill(acc0, (size_t)SLD * SACC, &rng);
    for (int r = 0; r < SLD; r++) {
        m0[r] = r % 2 ? -INFINITY : (float)tu_rng_uniform(&rng, -1.5, 1.5);
        l0[r] = r % 2 ? 0.0f : (float)tu_rng_uniform(&rng, 0.5, 4);
        for (int c = 0; c < SCOLS; c++) {
            if (r == 2 || (c + r) % 7 == 0) s0[c * SLD + r] = -INFINITY;
            if (r % 8 == 3 && c == r % 29) s0[c * SLD + r] = NAN;
            if (r % 8 == 5 && c == r % 31) s0[c * SLD + r] = INFINITY;
        }
    }
    m0[2] = -INFINITY, l0[2] = 0.0f;
    m0[4] = NAN; /* a max that is already NaN */
    /* row 6: a max of +0 so far, and scores of -0 and +0 that tie with it, the rest negative */
    m0[6] = 0.0f, l0[6] = 1.0f;
    for (int c = 0; c < SCOLS; c++)
        s0[c * SLD + 6] = c % 3 == 0 ? -0.0f : c % 3 == 1 ? 0.0f : -fabsf(s0[c * SLD + 6]);
    for (int i = 0; i < n_sets; i++)
        for (size_t n = 0; n < sizeof col_counts / sizeof *col_counts; n++) {
            const int64_t cols = col_counts[n];
            memcpy(s, s0, sizeof(float) * SCOLS * SLD), memcpy(acc, acc0, sizeof(float) * SLD * SACC);
            memcpy(m, m0, sizeof m0), memcpy(l, l0, sizeof l0);
            sets[i].set->online_softmax(SLD, SLD, cols, s, m, l, acc, SACC, SACC);
            int64_t off = 0;
            for (int r = 0; r < SLD; r++) {
                float *x = row + r % 2; /* odd rows at an address 4 bytes past a line */
                for (int64_t c = 0; c < cols; c++) x[c] = s0[c * SLD + r];
                memcpy(row_acc, acc0 + r * SACC, sizeof(float) * SACC);
                float mr = m0[r], lr = l0[r];
                sets[i].set->online_softmax(1, 1, cols, x, &mr, &lr, row_acc, SACC, SACC);
                /* the max's bits but a zero's sign, where +0 and -0 tie (kernels.h) */
                off += !(same_value(mr, m[r]) || (mr == 0 && m[r] == 0)) + !same_value(lr, l[r]);
                for (int64_t c = 0; c < cols; c++) off += !same_value(x[c], s[c * SLD + r]);
                for (int64_t y = 0; y < SACC; y++) off += !same_value(row_acc[y], acc[r * SACC + y]);
            }
            cr_expect_eq(off, 0,
                         "%s online_softmax, one row of ld 1, %lld keys: %lld values off the tile's rows",
                         sets[i].name, (long long)cols, (long long)off);
        }
    free(s0), free(s), free(acc0), free(acc), free(row), free(row_acc), free(m), free(l);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* Dropout (include/flashattn.h, fa_params "Dropout"):
 * - the generator is Philox4x32-10: Random123's published known answers (kat_vectors); the public
 *   mask is the header's definition of keep (counter, 16-bit slice, threshold) at any index;
 * - the public mask keeps 1 - p of the draws (within 4 sigma over 10^7 of them) with no correlation
 *   between neighbouring keys, neighbouring rows or neighbouring heads (4 sigma);
 * - the forward and the backward against the float64 oracles given the public mask
 *   (ref_forward_dropout, ref_backward_dropout), f64 within 1e-12, under causal masks, windows,
 *   softcap, ALiBi, bias, sinks, GQA, split-KV decode shapes and several block sizes (a keep that
 *   differs anywhere moves an output by a probability, far beyond the tolerance: the mask is the
 *   same at every block size and split), also for a call whose rows and keys sit further on in a
 *   longer sequence (dropout_row0, dropout_key0: the mask's rows and keys from there);
 * - the outputs are bitwise identical at 1..4 threads, and a packed batch gives each sequence the
 *   bytes of a dense call of it alone with dropout_offset + b·Hq (its stream);
 * - dropout_p = 0 gives the bytes of a call without dropout, whatever the seed and offset;
 * - a bad dropout_p or origin is refused by every call that reads it, naming it, nothing written.
 * (The finite differences of the backward with dropout are in test_backward_finite_diff.c.) */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "drivers/dropout.h"
#include "kernels/philox.h"
#include "runtime/dispatch.h"
#include "reference_backward.h"
#include "seqs_util.h"
#include "util.h"
#include "util_backward.h"

Test(dropout, philox_matches_random123_known_answers)
{
    /* Random123 1.14, tests/kat_vectors: "philox4x32 10 CTR[4] KEY[2] EXPECTED[4]" */
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d, 0x41c83b0e,
         0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09, 0x94fdcceb,
         0x5001e420, 0x24126ea1},
    };
    for (int v = 0; v < 3; v++) {
        uint32_t out[4], lanes[4][FA_PHILOX_LANES];
        fa_philox4x32_10(kat[v], kat[v] + 4, out);
        for (int w = 0; w < 4; w++)
            cr_expect_eq(out[w], kat[v][6 + w], "vector %d word %d: %08x, expected %08x", v, w, out[w],
                         kat[v][6 + w]);
        /* the 16-lane generator of the tiles: lane l is the counter whose last word is c3 + l */
        fa_philox_lanes(kat[v][0], kat[v][1], kat[v][2], kat[v][3], kat[v] + 4, lanes);
        for (int w = 0; w < 4; w++)
            cr_expect_eq(lanes[w][0], kat[v][6 + w], "vector %d lane 0 word %d", v, w);
        for (int l = 1; l < FA_PHILOX_LANES; l++) {
            const uint32_t ctr[4] = {kat[v][0], kat[v][1], kat[v][2], kat[v][3] + (uint32_t)l};
            fa_philox4x32_10(ctr, kat[v] + 4, out);
            for (int w = 0; w < 4; w++)
                cr_expect_eq(lanes[w][l], out[w], "vector %d lane %d word %d", v, l, w);
        }
    }
}

/* The header's definition of keep(b, h, i, j), written from its text: the counter {lo32(s), hi32(s),
 * j / 8, i} with s = offset + b·Hq + h, the 16-bit slice j % 8 (low half of word 0 first), kept below
 * floor((1 - p)·2^16 + 1/2). fa_philox4x32_10 is held to Random123's answers above. */
static int keep_by_definition(const fa_params *p, int64_t heads, int64_t b, int64_t h, int64_t i, int64_t j)
{
    const uint64_t s = p->dropout_offset + (uint64_t)b * (uint64_t)heads + (uint64_t)h;
    const uint32_t ctr[4] = {(uint32_t)s, (uint32_t)(s >> 32), (uint32_t)(j / 8), (uint32_t)i};
    const uint32_t key[2] = {(uint32_t)p->dropout_seed, (uint32_t)(p->dropout_seed >> 32)};
    uint32_t x[4];
    fa_philox4x32_10(ctr, key, x);
    const uint32_t u = (x[(j % 8) / 2] >> (16 * (j % 2))) & 0xFFFFu;
    return (double)u < floor((1.0 - p->dropout_p) * 65536.0 + 0.5);
}

Test(dropout, public_mask_is_the_headers_definition)
{
    /* 1 - 2^-18: t = 0, nothing kept; 1e-6: t = 2^16, everything kept */
    static const double ps[] = {0.1, 0.5, 0.3, 1.0 - 0x1p-18, 1e-6};
    tu_rng rng = tu_rng_make(tu_test_seed());
    for (size_t x = 0; x < sizeof ps / sizeof *ps; x++)
        for (int draw = 0; draw < 2000; draw++) {
            fa_params p = FA_PARAMS_INIT;
            p.dropout_p = ps[x];
            p.dropout_seed = tu_rng_next(&rng);
            p.dropout_offset = tu_rng_next(&rng);
            const int64_t heads = 1 + (int64_t)(tu_rng_next(&rng) % 16),
                          h = (int64_t)(tu_rng_next(&rng) % heads);
            const int64_t b = (int64_t)(tu_rng_next(&rng) % 1000);
            /* rows and keys anywhere the counter takes them, their last ones included */
            const int64_t i = draw % 3 == 0 ? ((int64_t)1 << 32) - 1 : (int64_t)(tu_rng_next(&rng) >> 32);
            const int64_t j = draw % 5 == 0 ? ((int64_t)1 << 34) - 1 : (int64_t)(tu_rng_next(&rng) >> 30);
            uint8_t m = 2;
            cr_assert_eq(fa_dropout_mask(&p, heads, b, h, i, j, 1, 1, &m, 1), FA_OK, "%s", fa_last_error());
            cr_expect_eq(m, keep_by_definition(&p, heads, b, h, i, j),
                         "p %g, seed %llu, offset %llu, b %lld, h %lld of %lld, (%lld, %lld)", ps[x],
                         (unsigned long long)p.dropout_seed, (unsigned long long)p.dropout_offset,
                         (long long)b, (long long)h, (long long)heads, (long long)i, (long long)j);
            if (ps[x] > 0.999) cr_expect_eq(m, 0, "p = 1 - 2^-18 keeps nothing");
            if (ps[x] < 1e-5) cr_expect_eq(m, 1, "p = 1e-6 keeps everything");
        }
}

/* The mask of one (b, h) over rows x cols, from the public call. */
static uint8_t *mask_of(const fa_params *p, int64_t heads, int64_t b, int64_t h, int64_t rows, int64_t cols)
{
    uint8_t *m = malloc((size_t)(rows * cols) + 1);
    cr_assert_eq(fa_dropout_mask(p, heads, b, h, 0, 0, rows, cols, m, cols), FA_OK, "%s", fa_last_error());
    return m;
}

/* |count - n·q| within 4 standard deviations of a binomial(n, q) count. */
static void expect_binomial(const char *what, double p, int64_t count, int64_t n, double q)
{
    double mean = (double)n * q, sigma = sqrt((double)n * q * (1.0 - q));
    cr_expect(fabs((double)count - mean) <= 4.0 * sigma,
              "p = %g, %s: %lld of %lld, expected %.1f +- 4 x %.1f", p, what, (long long)count, (long long)n,
              mean, sigma);
}

Test(dropout, mask_keeps_one_minus_p_without_correlation)
{
    enum { HEADS = 4, ROWS = 1250, COLS = 2000 }; /* 10^7 draws */
    static const double ps[] = {0.1, 0.5, 0.9};
    for (size_t x = 0; x < sizeof ps / sizeof *ps; x++) {
        fa_params p = FA_PARAMS_INIT;
        p.dropout_p = ps[x];
        p.dropout_seed = tu_test_seed();
        p.dropout_offset = 12345;
        const double q = 1.0 - ps[x];
        uint8_t *m[HEADS];
        for (int h = 0; h < HEADS; h++) m[h] = mask_of(&p, HEADS, 1, h, ROWS, COLS);
        int64_t kept = 0, right = 0, down = 0, across = 0, n_right = 0, n_down = 0, n_across = 0;
        for (int h = 0; h < HEADS; h++)
            for (int64_t i = 0; i < ROWS; i++)
                for (int64_t j = 0; j < COLS; j++) {
                    const int k = m[h][i * COLS + j];
                    kept += k;
                    if (j + 1 < COLS) right += k & m[h][i * COLS + j + 1], n_right++;
                    if (i + 1 < ROWS) down += k & m[h][(i + 1) * COLS + j], n_down++;
                    if (h + 1 < HEADS) across += k & m[h + 1][i * COLS + j], n_across++;
                }
        expect_binomial("kept", ps[x], kept, (int64_t)HEADS * ROWS * COLS, q);
        /* independent keeps: both of a pair kept with probability (1 - p)^2 */
        expect_binomial("(i, j) and (i, j + 1) both kept", ps[x], right, n_right, q * q);
        expect_binomial("(i, j) and (i + 1, j) both kept", ps[x], down, n_down, q * q);
        expect_binomial("heads h and h + 1 both kept", ps[x], across, n_across, q * q);
        for (int h = 0; h < HEADS; h++) free(m[h]);
    }
}

Test(dropout, mask_is_all_kept_at_p_zero_and_a_tile_is_the_whole_mask_cut)
{
    fa_params p = FA_PARAMS_INIT;
    p.dropout_seed = 99;
    uint8_t *all = mask_of(&p, 3, 2, 1, 37, 53);
    for (int x = 0; x < 37 * 53; x++) cr_assert_eq(all[x], 1, "p = 0 dropped element %d", x);
    free(all);
    p.dropout_p = 0.4;
    all = mask_of(&p, 3, 2, 1, 37, 53);
    uint8_t tile[9 * 16];
    cr_assert_eq(fa_dropout_mask(&p, 3, 2, 1, 5, 7, 9, 11, tile, 16), FA_OK);
    for (int r = 0; r < 9; r++)
        for (int c = 0; c < 11; c++)
            cr_expect_eq(tile[r * 16 + c], all[(5 + r) * 53 + 7 + c], "tile (%d, %d)", r, c);
    free(all);
}

/* The keep flags [B][Hq][Nq][Nk] of a dense problem: the mask's rows from p->dropout_row0 and keys from
 * p->dropout_key0, where the header says the call's rows and keys sit. */
static uint8_t *keep_of(const fa_params *p, const fa_tensor *q, const fa_tensor *k)
{
    const int64_t per = q->seq * k->seq;
    uint8_t *keep = malloc((size_t)(q->batch * q->heads * per) + 1);
    for (int64_t b = 0; b < q->batch; b++)
        for (int64_t h = 0; h < q->heads; h++)
            cr_assert_eq(fa_dropout_mask(p, q->heads, b, h, p->dropout_row0, p->dropout_key0, q->seq, k->seq,
                                         keep + (b * q->heads + h) * per, k->seq),
                         FA_OK, "%s", fa_last_error());
    return keep;
}

typedef struct {
    const char *name;
    int64_t batch, q_heads, kv_heads, q_len, kv_len, dim, dim_v;
    fa_causal causal;
    int64_t window_left, window_right;
    double softcap;
    int alibi, sinks, bias;
    int origins; /* dropout_row0 and dropout_key0 set (a block of a longer sequence) */
} oracle_case;

static const oracle_case cases[] = {
    {"plain", 2, 2, 2, 37, 45, 16, 16, FA_CAUSAL_NONE, -1, -1, 0, 0, 0, 0, 0},
    {"plain, rows and keys of a longer sequence", 2, 2, 2, 37, 45, 16, 16, FA_CAUSAL_NONE, -1, -1, 0, 0, 0, 0,
     1},
    {"causal GQA Dv != D", 1, 4, 2, 50, 50, 8, 12, FA_CAUSAL_TOP_LEFT, -1, -1, 0, 0, 0, 0, 0},
    {"causal GQA, rows and keys of a longer sequence", 1, 4, 2, 50, 50, 8, 12, FA_CAUSAL_TOP_LEFT, -1, -1, 0,
     0, 0, 0, 1},
    {"bottom-right window softcap", 2, 2, 1, 21, 70, 16, 8, FA_CAUSAL_BOTTOM_RIGHT, 9, -1, 5.0, 0, 0, 0, 0},
    {"ALiBi, sinks, bias", 1, 3, 3, 33, 40, 12, 12, FA_CAUSAL_NONE, 7, 4, 0, 1, 1, 1, 0},
    {"decode: split keys, keys of a longer sequence", 2, 4, 1, 1, 600, 16, 16, FA_CAUSAL_BOTTOM_RIGHT, -1, -1,
     0, 0, 1, 0, 1},
    {"two rows of a long cache", 1, 2, 2, 2, 999, 8, 8, FA_CAUSAL_NONE, -1, -1, 0, 1, 0, 0, 0},
    {"GQA decode step", 2, 8, 2, 1, 300, 16, 16, FA_CAUSAL_NONE, -1, -1, 0, 0, 0, 0, 0},
};
#define N_CASES ((int)(sizeof cases / sizeof cases[0]))

typedef struct {
    float slopes[8], sink[8];
    fa_tensor bias;
    double *bias_mem;
} case_inputs;

static fa_params params_of(const oracle_case *c, case_inputs *in, tu_rng *rng, double dropout)
{
    fa_params p = FA_PARAMS_INIT;
    p.causal = c->causal;
    p.window_left = c->window_left;
    p.window_right = c->window_right;
    p.softcap = c->softcap;
    for (int h = 0; h < 8; h++) {
        in->slopes[h] = (float)tu_rng_uniform(rng, 0.0, 0.3);
        in->sink[h] = (float)tu_rng_uniform(rng, -1.0, 1.0);
    }
    if (c->alibi) p.alibi_slopes = in->slopes;
    if (c->sinks) p.sinks = in->sink;
    in->bias_mem = NULL;
    if (c->bias) {
        in->bias_mem = malloc(sizeof(double) * (size_t)(c->q_heads * c->q_len * c->kv_len));
        for (int64_t x = 0; x < c->q_heads * c->q_len * c->kv_len; x++)
            in->bias_mem[x] = tu_rng_uniform(rng, -1.0, 1.0);
        in->bias = fa_tensor_bhsd(in->bias_mem, FA_F64, 1, c->q_heads, c->q_len, c->kv_len);
        p.bias = &in->bias;
    }
    p.dropout_p = dropout;
    p.dropout_seed = tu_rng_next(rng);
    p.dropout_offset = tu_rng_next(rng);
    if (c->origins) { /* a block of a longer sequence, its keys not on a multiple of 4 */
        p.dropout_row0 = 1000 + (int64_t)(tu_rng_next(rng) % 4096);
        p.dropout_key0 = 4 * (int64_t)(tu_rng_next(rng) % 1024) + 1 + (int64_t)(tu_rng_next(rng) % 3);
    }
    return p;
}

/* max |lib - ref| <= 1e-12 · max(max |ref|, floor): the f64 exactness mode (the floor for a tensor
 * that is zero in exact arithmetic). */
static void expect_close(const char *what, const char *desc, const fa_tensor *lib, const double *ref,
                         double floor)
{
    tub_err e = tub_compare_view(lib, ref, NULL);
    double scale = e.max_ref > floor ? e.max_ref : floor;
    cr_expect(
        e.mismatches == 0 && e.max_err <= 1e-12 * scale,
        "%s, %s: max |err| %.3e (max |ref| %.3e), %lld non-finite mismatches, worst element %lld: %.17g vs "
        "%.17g",
        desc, what, e.max_err, e.max_ref, (long long)e.mismatches, (long long)e.worst, e.worst_lib,
        e.worst_ref);
}

/* Forward and backward of every case at every block size, against the oracles given the mask. */
static void check_against_oracle(double dropout)
{
    static const int blocks[][2] = {{0, 0}, {16, 16}, {32, 64}};
    tu_rng rng = tu_rng_make(tu_test_seed());
    for (int c = 0; c < N_CASES; c++) {
        const oracle_case *oc = &cases[c];
        tu_shape s = {FA_F64,     oc->batch, oc->q_heads, oc->kv_heads, oc->q_len,
                      oc->kv_len, oc->dim,   oc->dim_v,   TU_BHSD};
        tub_problem bp;
        tub_make(&bp, &s, &rng, 1.5);
        case_inputs in;
        fa_params p = params_of(oc, &in, &rng, dropout);
        uint8_t *keep = keep_of(&p, &bp.fw.q, &bp.fw.k);
        const int64_t rows = tu_problem_rows(&bp.fw);
        double *out = malloc(sizeof(double) * (size_t)(rows * s.dim_v + 1)),
               *lse = malloc(sizeof(double) * (size_t)(rows + 1));
        ref_forward_dropout(&p, &bp.fw.q, &bp.fw.k, &bp.fw.v, keep, out, lse);
        tub_ref g;
        for (int x = 0; x < 3; x++) {
            const fa_tensor *t = x == 0 ? &bp.fw.q : x == 1 ? &bp.fw.k : &bp.fw.v;
            g.grad[x] = malloc(sizeof(double) * (size_t)(tub_numel(t) + 1));
        }
        ref_backward_dropout(&p, &bp.fw.q, &bp.fw.k, &bp.fw.v, &bp.dout, keep, g.grad[0], g.grad[1],
                             g.grad[2]);
        double bound[3];
        tub_grad_bounds(&bp, &p, bound);
        for (size_t b = 0; b < sizeof blocks / sizeof *blocks; b++) {
            fa_context *ctx = tu_context(2, blocks[b][0], blocks[b][1]);
            char desc[160];
            snprintf(desc, sizeof desc, "%s, p = %g, blocks %d x %d", oc->name, dropout, blocks[b][0],
                     blocks[b][1]);
            cr_assert_eq(tub_forward(ctx, &p, &bp), FA_OK, "%s: %s", desc, fa_last_error());
            fa_tensor lse_view = fa_tensor_bhsd(bp.fw.lse, FA_F64, s.batch, s.q_heads, s.q_len, 1);
            expect_close("out", desc, &bp.fw.out, out, 0.0);
            expect_close("lse (undropped)", desc, &lse_view, lse, 0.0);
            cr_assert_eq(tub_backward(ctx, &p, &bp), FA_OK, "%s: %s", desc, fa_last_error());
            static const char *const names[3] = {"dq", "dk", "dv"};
            for (int x = 0; x < 3; x++) expect_close(names[x], desc, &bp.grad[x], g.grad[x], 1e-4 * bound[x]);
            fa_context_destroy(ctx);
        }
        for (int x = 0; x < 3; x++) free(g.grad[x]);
        free(out), free(lse), free(keep), free(in.bias_mem);
        tub_free(&bp);
    }
}

Test(dropout, forward_and_backward_match_the_oracle_given_the_public_mask, .timeout = 600)
{
    check_against_oracle(0.25);
    check_against_oracle(0.8);
}

/* Every output byte of a forward and backward, for comparisons. */
typedef struct {
    double *out, *lse, *grad[3];
} run_bytes;

static run_bytes run_once(fa_context *ctx, const fa_params *p, tub_problem *bp)
{
    run_bytes r;
    tu_problem_fill_canary(&bp->fw);
    tub_fill_grad_canary(bp);
    cr_assert_eq(tub_forward(ctx, p, bp), FA_OK, "%s", fa_last_error());
    cr_assert_eq(tub_backward(ctx, p, bp), FA_OK, "%s", fa_last_error());
    r.out = tub_view_copy(&bp->fw.out);
    r.lse = tu_lse_copy(&bp->fw);
    for (int x = 0; x < 3; x++) r.grad[x] = tub_view_copy(&bp->grad[x]);
    return r;
}

static void expect_same_bytes(const char *desc, const tub_problem *bp, const run_bytes *a, const run_bytes *b)
{
    const int64_t rows = tu_problem_rows(&bp->fw);
    cr_expect(memcmp(a->out, b->out, sizeof(double) * (size_t)(rows * bp->fw.shape.dim_v)) == 0, "%s: out",
              desc);
    cr_expect(memcmp(a->lse, b->lse, sizeof(double) * (size_t)rows) == 0, "%s: lse", desc);
    for (int x = 0; x < 3; x++)
        cr_expect(memcmp(a->grad[x], b->grad[x], sizeof(double) * (size_t)tub_numel(&bp->grad[x])) == 0,
                  "%s: gradient %d", desc, x);
}

static void free_bytes(run_bytes *r)
{
    free(r->out), free(r->lse);
    for (int x = 0; x < 3; x++) free(r->grad[x]);
}

Test(dropout, outputs_are_bitwise_identical_at_every_thread_count)
{
    static const fa_dtype dtypes[] = {FA_F32, FA_F64};
    tu_rng rng = tu_rng_make(tu_test_seed());
    for (size_t d = 0; d < 2; d++)
        for (int c = 0; c < N_CASES; c++) {
            const oracle_case *oc = &cases[c];
            if (oc->bias && dtypes[d] != FA_F64) continue; /* the bias is of the accumulation type */
            tu_shape s = {dtypes[d],  oc->batch, oc->q_heads, oc->kv_heads, oc->q_len,
                          oc->kv_len, oc->dim,   oc->dim_v,   TU_BSHD};
            tub_problem bp;
            tub_make(&bp, &s, &rng, 1.5);
            case_inputs in;
            fa_params p = params_of(oc, &in, &rng, 0.3);
            fa_context *one = tu_context(1, 16, 16);
            run_bytes first = run_once(one, &p, &bp);
            fa_context_destroy(one);
            for (int threads = 2; threads <= 4; threads++) {
                fa_context *ctx = tu_context(threads, 16, 16);
                run_bytes again = run_once(ctx, &p, &bp);
                char desc[128];
                snprintf(desc, sizeof desc, "%s, %s, %d threads against 1", oc->name,
                         dtypes[d] == FA_F64 ? "f64" : "f32", threads);
                /* the f32 outputs are compared as the doubles they widen to: the same bytes either way */
                expect_same_bytes(desc, &bp, &first, &again);
                free_bytes(&again);
                fa_context_destroy(ctx);
            }
            free_bytes(&first);
            free(in.bias_mem);
            tub_free(&bp);
        }
}

Test(dropout, p_zero_gives_the_bytes_of_a_call_without_dropout)
{
    tu_rng rng = tu_rng_make(tu_test_seed());
    for (int c = 0; c < N_CASES; c++) {
        const oracle_case *oc = &cases[c];
        tu_shape s = {FA_F64,     oc->batch, oc->q_heads, oc->kv_heads, oc->q_len,
                      oc->kv_len, oc->dim,   oc->dim_v,   TU_PACKED};
        tub_problem bp;
        tub_make(&bp, &s, &rng, 1.5);
        case_inputs in;
        fa_params off = params_of(oc, &in, &rng, 0.0);
        fa_params plain = off;
        plain.dropout_seed = plain.dropout_offset = 0;
        fa_context *ctx = tu_context(2, 0, 0);
        run_bytes a = run_once(ctx, &plain, &bp), b = run_once(ctx, &off, &bp);
        expect_same_bytes(oc->name, &bp, &a, &b);
        free_bytes(&a), free_bytes(&b);
        fa_context_destroy(ctx);
        free(in.bias_mem);
        tub_free(&bp);
    }
}

static const ts_layout_case layouts[] = {
    {1, TS_KEYS_PACKED, 0, 0, 7, 4, 2}, {1, TS_KEYS_PACKED, 1, 1, 6, 3, 1}, {1, TS_KEYS_DENSE, 1, 0, 5, 2, 2},
    {0, TS_KEYS_DENSE, 1, 0, 6, 4, 2},  {1, TS_KEYS_PAGED, 0, 1, 5, 4, 1},  {0, TS_KEYS_PAGED, 1, 1, 4, 2, 2},
};

Test(dropout, a_packed_batch_drops_what_its_dense_calls_drop)
{
    static const ts_mask_case masks[] = {{FA_CAUSAL_NONE, -1, -1}, {FA_CAUSAL_BOTTOM_RIGHT, 5, -1}};
    static const fa_dtype dtypes[] = {FA_F32, FA_F64}; /* the helpers compare float views */
    tu_rng rng = tu_rng_make(tu_test_seed());
    for (size_t l = 0; l < sizeof layouts / sizeof *layouts; l++)
        for (size_t m = 0; m < sizeof masks / sizeof *masks; m++)
            for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++) {
                const int paged = layouts[l].keys == TS_KEYS_PAGED;
                ts_spec s = ts_spec_of(&layouts[l], dtypes[d], 16, 16);
                if (paged) s.page_size = 8, s.pages_per_seq = 8, s.spare_pages = 3;
                ts_spec_draw(&s, &rng, 40, 63, 1);
                ts_batch t;
                ts_make(&t, &s, &rng, 1.5);
                fa_params p = ts_mask_params(&masks[m]);
                p.dropout_p = 0.3;
                p.dropout_seed = tu_rng_next(&rng);
                p.dropout_offset = tu_rng_next(&rng);
                p.seqs = &t.seqs;
                fa_context *ctx = tu_context(2, 16, 16);
                char msg[512], desc[256];
                ts_desc(&t, &p, desc, sizeof desc);
                cr_assert_eq(ts_forward(ctx, &p, &t), FA_OK, "%s: %s", desc, fa_last_error());
                cr_expect(ts_forward_equals_dense_calls(ctx, &p, &t, msg, sizeof msg), "%s: %s", desc, msg);
                if (!paged) { /* paged keys are forward only */
                    cr_assert_eq(ts_backward(ctx, &p, &t), FA_OK, "%s: %s", desc, fa_last_error());
                    cr_expect(ts_backward_equals_dense_calls(ctx, &p, &t, msg, sizeof msg), "%s: %s", desc,
                              msg);
                }
                fa_context_destroy(ctx);
                ts_free(&t);
            }
}

/* fa_forward, fa_backward and their _check twins on p: each refuses with `want`, the diagnostic names
 * `field`, and no output byte (guards and padding included) changed. */
static void expect_refused_everywhere(const fa_params *p, tub_problem *bp, fa_status want, const char *field,
                                      const char *desc)
{
    tu_problem_fill_canary(&bp->fw);
    tub_fill_grad_canary(bp);
    const fa_status st[4] = {tub_forward(NULL, p, bp), tub_backward(NULL, p, bp),
                             fa_forward_check(p, &bp->fw.q, &bp->fw.k, &bp->fw.v, &bp->fw.out, bp->fw.lse),
                             fa_backward_check(p, &bp->fw.q, &bp->fw.k, &bp->fw.v, &bp->fw.out, &bp->dout,
                                               bp->fw.lse, &bp->grad[0], &bp->grad[1], &bp->grad[2])};
    for (int c = 0; c < 4; c++) cr_expect_eq(st[c], want, "%s, call %d: status %d", desc, c, st[c]);
    cr_expect(strstr(fa_last_error(), field) != NULL, "%s: \"%s\"", desc, fa_last_error());
    cr_expect(tu_problem_only_defined_written(&bp->fw) && tub_grads_only_defined_written(bp),
              "%s: guards or padding changed", desc);
    cr_expect(kit_buf_untouched(&bp->fw.out_buf), "%s: out written", desc);
}

Test(dropout, a_bad_dropout_p_is_refused_with_nothing_written)
{
    static const double bad[] = {-0.1, 1.0, 1.5, NAN, INFINITY, -INFINITY};
    tu_rng rng = tu_rng_make(tu_test_seed());
    tu_shape s = {FA_F32, 1, 2, 2, 9, 11, 8, 8, TU_BHSD};
    tub_problem bp;
    tub_make(&bp, &s, &rng, 1.0);
    for (size_t x = 0; x < sizeof bad / sizeof *bad; x++) {
        fa_params p = FA_PARAMS_INIT;
        p.dropout_p = bad[x];
        char desc[64];
        snprintf(desc, sizeof desc, "dropout_p = %g", bad[x]);
        expect_refused_everywhere(&p, &bp, FA_ERR_ARG, "p.dropout_p", desc);
        uint8_t mask[4] = {7, 7, 7, 7};
        cr_expect_eq(fa_dropout_mask(&p, 1, 0, 0, 0, 0, 2, 2, mask, 2), FA_ERR_ARG, "fa_dropout_mask, p = %g",
                     bad[x]);
        cr_expect(strstr(fa_last_error(), "p.dropout_p") != NULL, "fa_dropout_mask: \"%s\"", fa_last_error());
        cr_expect(mask[0] == 7 && mask[3] == 7, "fa_dropout_mask wrote a refused mask");
    }
    tub_free(&bp);
}

Test(dropout, bad_origins_are_refused_with_nothing_written)
{
    /* negative: FA_ERR_ARG (with or without dropout); past the counter's rows or keys: unsupported */
    tu_rng rng = tu_rng_make(tu_test_seed());
    tu_shape s = {FA_F32, 1, 2, 2, 9, 11, 8, 8, TU_BHSD};
    tub_problem bp;
    tub_make(&bp, &s, &rng, 1.0);
    const struct {
        double p;
        int64_t row0, key0;
        fa_status want;
        const char *name;
    } bad[] = {
        {0.0, -1, 0, FA_ERR_ARG, "p.dropout_row0"},
        {0.5, 0, -5, FA_ERR_ARG, "p.dropout_key0"},
        {0.5, ((int64_t)1 << 32) - 8, 0, FA_ERR_UNSUPPORTED, "p.dropout_row0"},
        {0.5, 0, ((int64_t)1 << 34) - 10, FA_ERR_UNSUPPORTED, "p.dropout_key0"},
        {0.5, INT64_MAX, 0, FA_ERR_UNSUPPORTED, "p.dropout_row0"},
    };
    for (size_t x = 0; x < sizeof bad / sizeof *bad; x++) {
        fa_params p = FA_PARAMS_INIT;
        p.dropout_p = bad[x].p;
        p.dropout_row0 = bad[x].row0;
        p.dropout_key0 = bad[x].key0;
        char desc[32];
        snprintf(desc, sizeof desc, "case %zu", x);
        expect_refused_everywhere(&p, &bp, bad[x].want, bad[x].name, desc);
    }
    /* the last row and key the counter holds are fine */
    fa_params p = FA_PARAMS_INIT;
    p.dropout_p = 0.5;
    p.dropout_row0 = ((int64_t)1 << 32) - 9;
    p.dropout_key0 = ((int64_t)1 << 34) - 11;
    cr_expect_eq(tub_forward(NULL, &p, &bp), FA_OK, "%s", fa_last_error());
    tub_free(&bp);
}

Test(dropout, fa_dropout_mask_refuses_bad_indices_with_nothing_written)
{
    fa_params p = FA_PARAMS_INIT;
    p.dropout_p = 0.5;
    uint8_t mask[16];
    memset(mask, 7, sizeof mask);
    const struct {
        int64_t heads, b, h, i0, j0, rows, cols, ld;
        fa_status want;
        const char *names;
    } bad[] = {
        {0, 0, 0, 0, 0, 2, 2, 2, FA_ERR_SHAPE, "q_heads"},
        {2, -1, 0, 0, 0, 2, 2, 2, FA_ERR_SHAPE, "b ="},
        {2, 0, 2, 0, 0, 2, 2, 2, FA_ERR_SHAPE, "h ="},
        {2, 0, 0, -3, 0, 2, 2, 2, FA_ERR_SHAPE, "i0"},
        {2, 0, 0, 0, 0, 2, 3, 2, FA_ERR_SHAPE, "ld"},
        {2, 0, 0, ((int64_t)1 << 32) - 1, 0, 2, 2, 2, FA_ERR_SHAPE, "2^32"},
        {2, 0, 0, 0, ((int64_t)1 << 34) - 1, 2, 2, 2, FA_ERR_SHAPE, "2^34"},
    };
    for (size_t x = 0; x < sizeof bad / sizeof *bad; x++) {
        fa_status st = fa_dropout_mask(&p, bad[x].heads, bad[x].b, bad[x].h, bad[x].i0, bad[x].j0,
                                       bad[x].rows, bad[x].cols, mask, bad[x].ld);
        cr_expect_eq(st, bad[x].want, "case %zu: status %d (%s)", x, st, fa_last_error());
        cr_expect(strstr(fa_last_error(), bad[x].names) != NULL, "case %zu: \"%s\"", x, fa_last_error());
    }
    cr_expect_eq(fa_dropout_mask(&p, 2, 0, 0, 0, 0, 2, 2, NULL, 2), FA_ERR_NULL);
    for (int x = 0; x < 16; x++) cr_expect_eq(mask[x], 7, "byte %d written", x);
    /* the largest indices the counter holds are fine */
    cr_expect_eq(fa_dropout_mask(&p, 2, 0, 0, ((int64_t)1 << 32) - 2, ((int64_t)1 << 34) - 2, 2, 2, mask, 2),
                 FA_OK, "%s", fa_last_error());
}

/* One table's dropout operations of type T against ref's on the same tile and stream. */
#define FA_DROPOUT_TILES_AGREE(T, SFX)                                                               \
    static int tiles_agree_##SFX(const fa_kernels_##SFX *k, const fa_kernels_##SFX *ref,             \
                                 const fa_dropout_stream *st, int64_t rows, int64_t j0, tu_rng *rng) \
    {                                                                                                \
        enum { LD = 48, COLS = 29 };                                                                 \
        T a[COLS * LD], b[COLS * LD], da[COLS * LD], db[COLS * LD], delta[LD];                       \
        for (int e = 0; e < COLS * LD; e++) {                                                        \
            a[e] = b[e] = (T)tu_rng_uniform(rng, 0.0, 1.0);                                          \
            da[e] = db[e] = (T)tu_rng_uniform(rng, -1.0, 1.0);                                       \
        }                                                                                            \
        for (int r = 0; r < LD; r++) delta[r] = (T)tu_rng_uniform(rng, -1.0, 1.0);                   \
        const T kept = (T)1.7;                                                                       \
        k->dropout_probs(st, 40, rows, j0, COLS, kept, a, LD);                                       \
        ref->dropout_probs(st, 40, rows, j0, COLS, kept, b, LD);                                     \
        int same = memcmp(a, b, sizeof a) == 0;                                                      \
        k->dropout_score_grad(st, 40, rows, j0, COLS, kept, a, da, delta, LD);                       \
        ref->dropout_score_grad(st, 40, rows, j0, COLS, kept, b, db, delta, LD);                     \
        return same && memcmp(a, b, sizeof a) == 0 && memcmp(da, db, sizeof da) == 0;                \
    }
FA_DROPOUT_TILES_AGREE(float, f32)
FA_DROPOUT_TILES_AGREE(double, f64)

Test(dropout, every_tables_tile_operations_give_refs_bits)
{
    /* each table this CPU runs (its own operations, or ref's where it has none: what the drivers
     * call) at every row and key residue and threshold, against ref's */
    static const char *const tables[] = {"avx2", "avx512", "avx512_bf16", "amx", "neon", "neon_bf16", "sve"};
    static const double ps[] = {0.3, 0.999, 1e-12, 1e-17}; /* 1e-17: 1 - p is 1, t = 2^32 */
    const fa_kernels *ref = fa_kernels_named("ref");
    tu_rng rng = tu_rng_make(tu_test_seed());
    int ran = 0;
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++) {
        const fa_kernels *table = fa_kernels_named(tables[t]);
        if (!table || !fa_kernels_cpu_runs(table)) continue;
        fa_kernels_resolved k;
        fa_kernels_resolve(table, &k);
        ran++;
        for (size_t x = 0; x < sizeof ps / sizeof *ps; x++)
            for (int64_t rows = 1; rows <= 48; rows += 5)
                for (int64_t j0 = 0; j0 < 6; j0++) {
                    const fa_dropout_stream st =
                        fa_dropout_stream_of(tu_rng_next(&rng), tu_rng_next(&rng), ps[x], 3, 1, 2);
                    cr_expect(tiles_agree_f32(&k.f32, ref->f32, &st, rows, j0, &rng),
                              "%s f32: p %g, rows %lld, j0 %lld", tables[t], ps[x], (long long)rows,
                              (long long)j0);
                    cr_expect(tiles_agree_f64(&k.f64, ref->f64, &st, rows, j0, &rng),
                              "%s f64: p %g, rows %lld, j0 %lld", tables[t], ps[x], (long long)rows,
                              (long long)j0);
                }
    }
    cr_log_info("dropout tiles: %d tables against ref", ran);
}

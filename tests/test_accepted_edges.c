/* SPDX-License-Identifier: BSD-3-Clause */
/* Valid edges beside the refusals of the error-exit table (test_error_exit.c): arguments that sit
 * where a careless validation would refuse them, each accepted and computed as the header says.
 * Views that touch but do not overlap; huge strides on axes of one element; inputs that overlap
 * inputs (only outputs are judged), also the score modifiers' arguments over the backward's other
 * inputs; batches of sequences at their edges (no sequence, arrays inside an input's unused rows,
 * no page in use with no table entry, the pool's last page). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error_exit.h"
#include "reference_backward.h"
#include "seqs_util.h"
#include "util.h"
#include "util_backward.h"

/* ---- dense views ---------------------------------------------------------------------------- */

Test(accepted_edges, adjacent_but_disjoint_views_are_accepted_and_correct)
{
    enum { B = 2, HQ = 4, HKV = 2, NQ = 12, NK = 10, D = 8, DV = 6 };
    uint64_t seed = tu_test_seed();
    for (int t = 0; t < 2; t++) {
        fa_dtype dt = t ? FA_F64 : FA_F32;
        size_t e = tu_dtype_size(dt);
        int64_t nq_el = (int64_t)B * HQ * NQ * D, nk_el = (int64_t)B * HKV * NK * D,
                nv_el = (int64_t)B * HKV * NK * DV, no_el = (int64_t)B * HQ * NQ * DV,
                nl_el = (int64_t)B * HQ * NQ;
        /* One block: q | k | v | out | lse, each starting where the previous one ends. */
        kit_buf all = kit_buf_alloc((size_t)(nq_el + nk_el + nv_el + no_el + nl_el) * e);
        unsigned char *base = kit_buf_data(&all);
        tu_problem pr;
        memset(&pr, 0, sizeof pr);
        tu_shape s = {dt, B, HQ, HKV, NQ, NK, D, DV, TU_BHSD};
        pr.shape = s;
        pr.q = fa_tensor_bhsd(base, dt, B, HQ, NQ, D);
        pr.k = fa_tensor_bhsd(base + nq_el * (int64_t)e, dt, B, HKV, NK, D);
        pr.v = fa_tensor_bhsd(base + (nq_el + nk_el) * (int64_t)e, dt, B, HKV, NK, DV);
        pr.out = fa_tensor_bhsd(base + (nq_el + nk_el + nv_el) * (int64_t)e, dt, B, HQ, NQ, DV);
        pr.lse = base + (nq_el + nk_el + nv_el + no_el) * (int64_t)e;
        tu_rng rng = tu_rng_make(seed + (uint64_t)t);
        for (int64_t x = 0; x < nq_el + nk_el + nv_el; x++) {
            double val = tu_rng_uniform(&rng, -2, 2);
            if (dt == FA_F64)
                ((double *)base)[x] = val;
            else
                ((float *)base)[x] = (float)val;
        }
        fa_status st = fa_forward(NULL, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
        cr_expect_eq(st, FA_OK, "%s, seed %llu: adjacent q|k|v|out|lse refused with %d (%s)",
                     t ? "f64" : "f32", (unsigned long long)seed, st, fa_status_str(st));
        cr_expect(kit_buf_guards_intact(&all), "wrote outside the block");
        if (st == FA_OK) {
            char msg[512];
            cr_expect(tu_check_picked_accuracy(&pr, NULL, INT64_MAX, 1e-12, msg, sizeof msg), "seed %llu: %s",
                      (unsigned long long)seed, msg);
        }
        kit_buf_free(&all);
    }
}

/* A stride only matters where its axis has more than one element: huge strides on axes of size 1
 * form no offset at all, so nothing overflows and the call is valid. */
Test(accepted_edges, huge_strides_on_axes_of_size_one_are_accepted_and_correct)
{
    uint64_t seed = tu_test_seed();
    for (int t = 0; t < 2; t++) {
        tu_shape s = {t ? FA_F64 : FA_F32, 1, 2, 1, 5, 7, 4, 3, TU_BHSD};
        tu_rng rng = tu_rng_make(seed + (uint64_t)t);
        tu_problem pr;
        tu_problem_make(&pr, &s, &rng, 2.0);
        pr.q.stride_batch = INT64_MAX;
        pr.k.stride_batch = INT64_MAX;
        pr.k.stride_head = INT64_MAX;
        pr.v.stride_batch = INT64_MAX / 3;
        pr.v.stride_head = INT64_MAX - 1;
        pr.out.stride_batch = INT64_MAX;
        fa_status st = fa_forward(NULL, NULL, &pr.q, &pr.k, &pr.v, &pr.out, pr.lse);
        cr_expect_eq(st, FA_OK, "%s, seed %llu: status %d (%s)", t ? "f64" : "f32", (unsigned long long)seed,
                     st, fa_status_str(st));
        if (st == FA_OK) {
            char msg[512];
            cr_expect(tu_check_picked_accuracy(&pr, NULL, INT64_MAX, 1e-12, msg, sizeof msg), "seed %llu: %s",
                      (unsigned long long)seed, msg);
        }
        tu_problem_free(&pr);
    }
}

/* ---- the backward's inputs over each other (error-exit world: every tensor in one pool) -------- */

/* The valid backward, without and with every modifier (dsinks too), writes dq, dk, dv and dsinks
 * and no other byte of the pool: every other region, the spare regions and the guards as they were. */
Test(accepted_edges, valid_backward_writes_only_its_gradients)
{
    uint64_t seed = tu_test_seed();
    for (int dt = 0; dt < 2; dt++) {
        ee_world w;
        ee_world_make(&w, dt ? FA_F64 : FA_F32, seed + (uint64_t)dt);
        for (int modified = 0; modified < 2; modified++) {
            ee_args a;
            ee_valid_args(&w, &a);
            if (!modified) {
                a.p = (fa_params)FA_PARAMS_INIT;
                a.p.causal = FA_CAUSAL_BOTTOM_RIGHT;
            }
            unsigned char *before = kit_buf_snapshot(&w.pool);
            cr_assert_eq(ee_call_run(EE_BACKWARD, &a), FA_OK, "%s", fa_last_error());
            /* put the outputs' regions back, then every byte must be as it was */
            const int outputs[4] = {EE_DQ, EE_DK, EE_DV, EE_DSINKS};
            for (int i = 0; i < 4; i++) {
                unsigned char *at = ee_region(&w, outputs[i], 0);
                size_t off = (size_t)(at - w.pool.base),
                       bytes = (size_t)(ee_region(&w, outputs[i] + 1, 0) - at);
                memcpy(at, before + off, bytes);
            }
            cr_expect(kit_buf_equals_snapshot(&w.pool, before),
                      "%s, %s modifiers, seed %llu: the call wrote outside dq, dk, dv and dsinks",
                      dt ? "f64" : "f32", modified ? "with" : "without", (unsigned long long)w.seed);
            free(before);
            ee_world_restore(&w);
        }
        ee_world_free(&w);
    }
}

/* k on q's first elements, v on k's (shared projections), dout on out (L = ½‖out‖²): the call
 * succeeds and matches the f64 oracle on the same views. */
Test(accepted_edges, backward_inputs_overlapping_each_other_are_accepted_and_correct)
{
    ee_world w;
    ee_world_make(&w, FA_F64, tu_test_seed());
    ee_args a;
    ee_valid_args(&w, &a);
    a.p = (fa_params)FA_PARAMS_INIT; /* no modifier: the oracle's exact rule */
    a.p.causal = FA_CAUSAL_BOTTOM_RIGHT;
    a.t[EE_K].data = a.t[EE_Q].data;
    a.t[EE_V].data = a.t[EE_K].data;
    a.t[EE_DOUT].data = a.t[EE_OUT].data;
    cr_assert_eq(fa_forward(w.ctx, &a.p, &a.t[EE_Q], &a.t[EE_K], &a.t[EE_V], &a.t[EE_OUT], a.lse), FA_OK);
    fa_status st = ee_call_run(EE_BACKWARD, &a);
    cr_assert_eq(st, FA_OK, "seed %llu: overlapping inputs refused: %s", (unsigned long long)w.seed,
                 fa_last_error());
    double *ref[3];
    for (int g = 0; g < 3; g++) ref[g] = malloc(sizeof(double) * (size_t)(tub_numel(&a.t[EE_DQ + g]) + 1));
    ref_backward(&a.p, &a.t[EE_Q], &a.t[EE_K], &a.t[EE_V], &a.t[EE_DOUT], ref[0], ref[1], ref[2]);
    for (int g = 0; g < 3; g++) {
        tub_err e = tub_compare_view(&a.t[EE_DQ + g], ref[g], NULL);
        cr_expect(e.mismatches == 0 && e.max_err <= 1e-11 * e.max_ref,
                  "seed %llu: %s with overlapping inputs: max error %.3e, max |ref| %.3e, %lld non-finite "
                  "mismatches",
                  (unsigned long long)w.seed, ee_slot_name(EE_DQ + g), e.max_err, e.max_ref,
                  (long long)e.mismatches);
        free(ref[g]);
    }
    ee_world_free(&w);
}

/* The bias, alibi_slopes and sinks may overlap the backward's other inputs (out, dout, lse):
 * accepted, and read like copies of the same bytes (the whole pool, dq, dk, dv and dsinks among it,
 * bitwise equal after both calls). */
Test(accepted_edges, backward_modifier_arguments_over_inputs_are_accepted_and_read_like_copies)
{
    uint64_t seed = tu_test_seed();
    for (int dt = 0; dt < 2; dt++) {
        ee_world w;
        ee_world_make(&w, dt ? FA_F64 : FA_F32, seed + (uint64_t)dt);
        for (int where = 0; where < 3; where++) {
            static const char *const name[3] = {"on out", "inside dout", "inside lse"};
            ee_args a, c;
            ee_valid_args(&w, &a);
            unsigned char *base = where == 0 ? a.t[EE_OUT].data : where == 1 ? a.t[EE_DOUT].data : a.lse;
            if (where == 0) a.bias = fa_tensor_bhsd(base, w.dt, EE_B, 1, EE_N, EE_N);
            if (where == 1) a.bias = fa_tensor_bhsd(base + 3 * w.e, w.dt, 1, EE_HQ, 1, EE_N);
            if (where == 2) a.bias = fa_tensor_bhsd(base + w.e, w.dt, 1, 1, 1, EE_N);
            a.p.alibi_slopes = (const float *)(const void *)(base + 2 * w.e);
            a.p.sinks = (const float *)(const void *)(base + 4 * w.e);
            /* c: the same bytes in memory of their own */
            size_t bias_bytes = (size_t)tub_numel(&a.bias) * w.e, heads = EE_HQ * sizeof(float);
            kit_buf copy = kit_buf_alloc(bias_bytes + 2 * heads);
            unsigned char *cp = kit_buf_data(&copy);
            c = a;
            c.pp = &c.p;
            c.p.bias = &c.bias;
            memcpy(cp, a.bias.data, bias_bytes);
            c.bias.data = cp;
            memcpy(cp + bias_bytes, a.p.alibi_slopes, heads);
            memcpy(cp + bias_bytes + heads, a.p.sinks, heads);
            c.p.alibi_slopes = (const float *)(const void *)(cp + bias_bytes);
            c.p.sinks = (const float *)(const void *)(cp + bias_bytes + heads);
            fa_status st = ee_call_run(EE_BACKWARD, &a);
            cr_expect_eq(st, FA_OK, "%s, bias, slopes and sinks %s, seed %llu: refused: %s",
                         dt ? "f64" : "f32", name[where], (unsigned long long)w.seed, fa_last_error());
            unsigned char *first = kit_buf_snapshot(&w.pool);
            ee_world_restore(&w);
            cr_assert_eq(ee_call_run(EE_BACKWARD, &c), FA_OK);
            cr_expect(
                kit_buf_equals_snapshot(&w.pool, first),
                "%s, bias, slopes and sinks %s, seed %llu: dq, dk, dv or dsinks differ from the call on "
                "copies",
                dt ? "f64" : "f32", name[where], (unsigned long long)w.seed);
            ee_world_restore(&w);
            free(first);
            kit_buf_free(&copy);
        }
        ee_world_free(&w);
    }
}

/* ---- batches of sequences at their edges ------------------------------------------------------ */

enum { SQ_PACKED, SQ_DENSE, SQ_PAGED, SQ_KINDS, SQ_B = 4, SQ_PPS = 3 };

static void seqs_batch(ts_batch *t, int kind, fa_dtype dt, uint64_t seed)
{
    ts_spec s = {0};
    s.dtype = dt;
    s.batch = SQ_B, s.q_heads = 4, s.kv_heads = 2, s.dim = 8, s.dim_v = 6;
    s.seqused = 1;
    s.spare_rows = 2;
    const int64_t q_len[SQ_B] = {3, 5, 2, 4};
    memcpy(s.q_len, q_len, sizeof q_len);
    if (kind == SQ_PACKED) { /* keys in use: all, some, all, none */
        const int64_t k_len[SQ_B] = {6, 4, 7, 5}, used[SQ_B] = {6, 2, 7, 0};
        s.packed_q = 1, s.keys = TS_KEYS_PACKED;
        memcpy(s.k_len, k_len, sizeof k_len), memcpy(s.k_used, used, sizeof used);
    } else if (kind == SQ_DENSE) {
        const int64_t used[SQ_B] = {8, 3, 0, 5};
        s.keys = TS_KEYS_DENSE, s.k_len[0] = 8, s.head_major = 1;
        memcpy(s.k_used, used, sizeof used);
    } else { /* pages of 4: 3, 1, 0 and 3 pages in use; -1 beyond them; two spare pages */
        const int64_t used[SQ_B] = {9, 4, 0, 12};
        s.packed_q = 1, s.keys = TS_KEYS_PAGED, s.page_size = 4, s.pages_per_seq = SQ_PPS, s.spare_pages = 2;
        memcpy(s.k_used, used, sizeof used);
    }
    tu_rng rng = tu_rng_make(seed);
    ts_make(t, &s, &rng, 2.0);
    ts_fill_canary(t);
}

static fa_status seqs_call(const fa_tensor *x, void *lse, const fa_seqs *s, int backward)
{
    fa_params p = FA_PARAMS_INIT;
    p.seqs = s;
    if (!backward) return fa_forward(NULL, &p, &x[TS_Q], &x[TS_K], &x[TS_V], &x[TS_OUT], lse);
    return fa_backward(NULL, &p, &x[TS_Q], &x[TS_K], &x[TS_V], &x[TS_OUT], &x[TS_DOUT], lse, &x[TS_DQ],
                       &x[TS_DK], &x[TS_DV]);
}

/* No sequence at all; the arrays inside an input no sequence reads (inputs may overlap inputs); no
 * page in use with no table entry, and the pool's last page; offsets that end before the tensor
 * does (every batch). Each succeeds and writes only its sequences' rows. */
Test(accepted_edges, sequences_at_their_edges_are_accepted_and_write_only_the_sequences_rows)
{
    uint64_t seed = tu_test_seed();
    char msg[512];
    for (int dt = 0; dt < 2; dt++)
        for (int kind = 0; kind < SQ_KINDS; kind++)
            for (int edge = 0; edge < 4; edge++) {
                ts_batch t;
                seqs_batch(&t, kind, dt ? FA_F64 : FA_F32, seed + (uint64_t)(dt * SQ_KINDS + kind));
                fa_seqs s = t.seqs;
                fa_tensor x[TS_TENSORS];
                memcpy(x, t.t, sizeof x);
                int64_t used[SQ_B] = {0, 0, 1, 0};
                int32_t table[SQ_B] = {-1, -1, (int32_t)(x[TS_K].batch - 1), -1};
                const char *what = "the batch";
                if (edge == 1) {
                    what = "no sequence";
                    s.batch = 0;
                    if (kind == SQ_DENSE) /* a dense batch of no sequence has batch axes of 0 */
                        for (int i = 0; i < TS_TENSORS; i++) x[i].batch = 0;
                    t.s.batch = 0; /* and so for ts_only_sequence_rows_written: no row is the sequences' */
                } else if (edge == 2 && kind != SQ_DENSE) {
                    what = "the arrays inside q's rows after the last sequence";
                    unsigned char *q_spare =
                        (unsigned char *)x[TS_Q].data +
                        t.cu_q[SQ_B] * x[TS_Q].stride_seq * (int64_t)tu_dtype_size(t.s.dtype);
                    memcpy(q_spare, t.cu_q, sizeof(int64_t) * (SQ_B + 1));
                    s.cu_seqlens_q = (const int64_t *)(void *)q_spare;
                } else if (edge == 3 && kind == SQ_PAGED) { /* one entry per sequence */
                    what = "no page in use with no table entry, and the pool's last page";
                    s.pages_per_seq = 1;
                    s.seqused_k = used;
                    s.block_table = table;
                }
                fa_status st = seqs_call(x, t.lse, &s, 0);
                cr_expect_eq(st, FA_OK, "%s, batch %d, %s: %s", what, kind, dt ? "f64" : "f32",
                             fa_last_error());
                if (edge != 3) /* the batch's own description of its rows holds but for edge 3's changes */
                    cr_expect(ts_only_sequence_rows_written(&t, 0, msg, sizeof msg), "%s, batch %d: %s", what,
                              kind, msg);
                if (kind != SQ_PAGED) {
                    cr_expect_eq(seqs_call(x, t.lse, &s, 1), FA_OK, "%s, batch %d, %s, backward: %s", what,
                                 kind, dt ? "f64" : "f32", fa_last_error());
                    if (edge != 3)
                        cr_expect(ts_only_sequence_rows_written(&t, 1, msg, sizeof msg), "%s, batch %d: %s",
                                  what, kind, msg);
                }
                t.s.batch = SQ_B;
                ts_free(&t);
            }
}

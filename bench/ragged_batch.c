/* SPDX-License-Identifier: BSD-3-Clause */
// A ragged case's batch (batch.h). --varlen: the packed call, held and timed against one dense call over
// equal lengths and a dense call per sequence, whose rows must equal the packed ones. --decode-batch: the
// contiguous cache, held, and the paged one, bitwise equal to it; each checked against the oracle.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "decode_batch.h"
#include "dtypes.h"
#include "progress.h"
#include "varlen.h"
#include "verify.h"

typedef struct {
    bench_varlen v;
    bench_varlen_call call;
    bench_varlen_match match; // the loop's rows against the packed ones, at the last check
} varlen;

// The decode batch outlives its case: the next case, or the next round, of the same caches with
// another page size (or the same) builds only its pool (bench_decode_prepare).
static bench_decode kept_decode;

typedef struct {
    bench_decode_call call;
} decode;

static void fill_row_errors(bench_row *row, const bench_verify_result *r)
{
    row->rows_checked = r->rows_checked;
    row->err_out = r->err_out;
    row->err_lse = r->err_lse;
}

// The packed call, the loop (recording its blocks) and the equal batch, once each.
static int varlen_run_once(bench_batch *b, const bench_options *o, int threads)
{
    (void)o;
    varlen *k = b->kind;
    bench_varlen *v = &k->v;
    fa_status s;
    bench_problem_poison_outputs(&v->packed);
    bench_problem_poison_outputs(&v->equal);
    bench_varlen_poison_loop(v);
    if ((s = bench_varlen_call_packed(&k->call)) != FA_OK)
        return bench_batch_failed("the packed fa_forward", threads, s);
    fa_context_stats(k->call.ctx, &b->held[0].stats);
    if ((s = bench_varlen_call_loop_recorded(k->call.ctx, v)) != FA_OK)
        return bench_batch_failed("the per-sequence fa_forward loop", threads, s);
    if ((s = bench_varlen_call_equal(&k->call)) != FA_OK)
        return bench_batch_failed("the equal-length fa_forward", threads, s);
    fa_context_stats(k->call.ctx, &b->held[1].stats);
    return 0;
}

static int loop_matches(const bench_varlen *v, const fa_stats *packed, int threads, const char *when,
                        bench_varlen_match *m)
{
    bench_varlen_match_loop(v, packed->block_q, packed->block_k, m);
    if (m->passed) return 0;
    int64_t b = m->first_bad;
    fprintf(
        stderr,
        "fa-bench: the per-sequence loop%s at threads=%d differs from the packed call on sequence %lld (%lld "
        "tokens, blocks %d/%d): %s, or a row the packed call did not write\n",
        when, threads, (long long)b, (long long)v->lengths.len[b], packed->block_q, packed->block_k,
        m->first_bad_bitwise
            ? "not bitwise equal (its dense call took the same blocks and cannot split its keys)"
            : "beyond the tolerance (its dense call took other blocks or may split its keys)");
    return -1;
}

static int varlen_check(bench_batch *b, const bench_options *o, int threads, bench_row *row)
{
    varlen *k = b->kind;
    bench_varlen *v = &k->v;
    const bench_shape *shape = &v->packed.shape;
    bench_verify_result vp, vl, ve;
    if (bench_varlen_verify(v, o->check_rows, &vp, &vl) != 0 ||
        bench_verify_forward(&v->equal, &v->equal_params, o->check_rows, &ve) != 0) {
        fprintf(stderr, "fa-bench: out of memory during verification\n");
        return -1;
    }
    if (bench_batch_verdict("the packed out and lse", &vp, threads, o, shape) != 0 ||
        bench_batch_verdict("the per-sequence loop's out and lse", &vl, threads, o, shape) != 0 ||
        bench_batch_verdict("the equal-length batch's out and lse", &ve, threads, o, shape) != 0 ||
        loop_matches(v, &b->held[0].stats, threads, "", &k->match) != 0)
        return -1;
    fill_row_errors(row, &vp);
    return 0;
}

// The loop's rows again, and the packed call's blocks for the row (the loop ran last, with its
// sequences' own blocks).
static int varlen_finish(bench_batch *b, int threads, bench_row *row)
{
    varlen *k = b->kind;
    if (loop_matches(&k->v, &b->held[0].stats, threads, " after the timed calls", &k->match) != 0) return -1;
    row->stats.block_q = b->held[0].stats.block_q;
    row->stats.block_k = b->held[0].stats.block_k;
    row->ragged.seqs_bitwise = k->match.bitwise;
    row->ragged.seqs_other_blocks = k->match.other_blocks;
    row->ragged.seqs_may_split = k->match.may_split;
    row->ragged.err_loop = k->match.err;
    return 0;
}

static void varlen_free(bench_batch *b)
{
    varlen *k = b->kind;
    bench_varlen_free(&k->v);
    free(k);
}

// The contiguous cache and the paged one, once each.
static int decode_run_once(bench_batch *b, const bench_options *o, int threads)
{
    (void)o;
    decode *k = b->kind;
    fa_status s;
    bench_decode_poison(&kept_decode);
    if ((s = bench_decode_call_contiguous(&k->call)) != FA_OK)
        return bench_batch_failed("fa_forward on the contiguous cache", threads, s);
    fa_context_stats(k->call.ctx, &b->held[0].stats);
    if (kept_decode.page_size > 0 && (s = bench_decode_call_paged(&k->call)) != FA_OK)
        return bench_batch_failed("fa_forward on the paged cache", threads, s);
    return 0;
}

// Every row written, and the paged rows bitwise the contiguous ones: 0, or -1 after a message.
static int decode_outputs(int threads, const char *when)
{
    const char *bad = bench_decode_check_outputs(&kept_decode);
    if (!bad) return 0;
    fprintf(stderr, "fa-bench: %sat threads=%d, %s\n", when, threads, bad);
    return -1;
}

static int decode_check(bench_batch *b, const bench_options *o, int threads, bench_row *row)
{
    (void)b;
    bench_verify_result vr;
    if (bench_decode_verify(&kept_decode, o->check_rows, &vr) != 0) {
        fprintf(stderr, "fa-bench: out of memory during verification\n");
        return -1;
    }
    if (bench_batch_verdict("the contiguous cache's out and lse", &vr, threads, o, &kept_decode.pb.shape) !=
            0 ||
        decode_outputs(threads, "") != 0)
        return -1;
    fill_row_errors(row, &vr);
    return 0;
}

static int decode_finish(bench_batch *b, int threads, bench_row *row)
{
    (void)b;
    (void)row;
    return decode_outputs(threads, "after the timed calls ");
}

// The page probe at each row's thread count, pinned as the row's threads were: what memory gives
// the paged call's reads where they lie (pages at shuffled places), beside the read probe's one array.
static void decode_page_probe(bench_batch *b, const bench_options *o, const bench_run_info *info,
                              bench_machine *m, bench_row *rows, int n)
{
    (void)b;
    (void)o;
    bench_span *spans;
    size_t count;
    if (kept_decode.page_size == 0 || !(m->probe_time > 0.0)) return;
    if (bench_decode_page_spans(&kept_decode, &spans, &count) != 0) {
        fprintf(stderr, "fa-bench: out of memory for the page probe's list\n");
        return;
    }
    double bytes = 0.0;
    for (size_t i = 0; i < count; i++) bytes += (double)spans[i].bytes;
    if (bytes != info->kv_bytes) { // the probe would not read what the call does: say so, report none
        fprintf(stderr, "fa-bench: the page probe's list holds %.0f bytes, the paged call reads %.0f\n",
                bytes, info->kv_bytes);
        free(spans);
        return;
    }
    bench_progress_detail("probing the paged cache's reads");
    for (int r = 0; r < n; r++) {
        bench_row *w = &rows[r];
        double spread;
        w->ragged.page_read_gbps = bench_machine_spans_gbps(m, spans, count, w->threads,
                                                            bench_machine_probe_bind(&w->stats), &spread);
        w->ragged.pct_page_read_bw = 100.0 * w->kv_gbps / w->ragged.page_read_gbps;
        if (isfinite(spread)) w->probe_spread = fmax(w->probe_spread, spread);
    }
    free(spans);
}

void bench_ragged_batch_release(void)
{
    bench_decode_free(&kept_decode);
}

static void decode_free(bench_batch *b)
{
    free(b->kind);
}

static const bench_batch_ops varlen_ops = {
    .run_once = varlen_run_once,
    .check = varlen_check,
    .finish = varlen_finish,
    .free = varlen_free,
};

static const bench_batch_ops decode_ops = {
    .run_once = decode_run_once,
    .check = decode_check,
    .finish = decode_finish,
    .measure_extras = decode_page_probe,
    .free = decode_free,
};

static void fill_lengths(bench_run_info *info, const bench_lengths *l)
{
    info->ragged = (bench_ragged_info){l->total, l->min, l->max, l->mean, 0, NAN, 0, 0, 0};
}

// Timed in turn: packed, equal, loop.
static int init_varlen(bench_batch *b, const bench_options *o, const bench_case *c, bench_run_info *info)
{
    varlen *k = calloc(1, sizeof *k);
    if (!k) {
        fprintf(stderr, "fa-bench: out of memory\n");
        return -1;
    }
    if (bench_varlen_init(&k->v, &c->shape, o->dist, o->seed) != 0) {
        free(k);
        return -1;
    }
    const bench_varlen *v = &k->v;
    k->call = (bench_varlen_call){NULL, v};
    *b = (bench_batch){.ops = &varlen_ops, .kind = k};
    b->calls[b->n_calls++] = (bench_batch_call){bench_varlen_call_packed, &k->call,
                                                offsetof(bench_row, timing), "the packed fa_forward"};
    b->calls[b->n_calls++] = (bench_batch_call){
        bench_varlen_call_equal, &k->call, offsetof(bench_row, ragged.equal), "the equal-length fa_forward"};
    b->calls[b->n_calls++] =
        (bench_batch_call){bench_varlen_call_loop, &k->call, offsetof(bench_row, ragged.loop),
                           "the per-sequence fa_forward loop"};
    b->held[b->n_held++] = (bench_batch_held){&v->packed, "packed", FA_STATS_INIT};
    b->held[b->n_held++] = (bench_batch_held){&v->equal, "equal-length", FA_STATS_INIT};
    fill_lengths(info, &v->lengths);
    info->flops = v->flops;
    info->visible_pairs = bench_lengths_pairs(&v->lengths, &c->shape);
    info->ragged.l_eq = v->l_eq;
    info->ragged.equal_flops = v->equal_flops;
    info->shape.nq = info->shape.nk = v->lengths.max;
    return 0;
}

// Timed in turn: the contiguous cache, then the paged one (the row's own call when there are pages).
static int init_decode(bench_batch *b, const bench_options *o, const bench_case *c, bench_run_info *info)
{
    bench_decode *d = &kept_decode;
    decode *k = calloc(1, sizeof *k);
    if (!k) {
        fprintf(stderr, "fa-bench: out of memory\n");
        return -1;
    }
    if (bench_decode_prepare(d, &c->shape, o->dist, o->seed) != 0) {
        free(k);
        return -1;
    }
    int paged = d->page_size > 0;
    k->call = (bench_decode_call){NULL, d};
    *b = (bench_batch){.ops = &decode_ops, .kind = k};
    b->calls[b->n_calls++] =
        (bench_batch_call){bench_decode_call_contiguous, &k->call,
                           paged ? offsetof(bench_row, ragged.contiguous) : offsetof(bench_row, timing),
                           "fa_forward on the contiguous cache"};
    if (paged)
        b->calls[b->n_calls++] = (bench_batch_call){
            bench_decode_call_paged, &k->call, offsetof(bench_row, timing), "fa_forward on the paged cache"};
    b->held[b->n_held++] = (bench_batch_held){&d->pb, "contiguous", FA_STATS_INIT};
    fill_lengths(info, &d->used);
    info->flops = d->flops;
    info->kv_bytes = d->kv_bytes;
    info->visible_pairs = d->keys_seen;
    info->ragged.capacity = d->capacity;
    info->ragged.num_pages = d->num_pages;
    info->ragged.pages_per_seq = d->pages_per_seq;
    info->shape.nk = d->capacity;
    return 0;
}

int bench_ragged_batch_init(bench_batch *b, const bench_options *o, int index, bench_run_info *info)
{
    const bench_case *c = &o->cases[index];
    info->decode = c->shape.ragged.kind == BENCH_RAGGED_DECODE;
    info->blas = "not for ragged batches";
    return info->decode ? init_decode(b, o, c, info) : init_varlen(b, o, c, info);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The header's collective refusal: when one rank's arguments are bad (or every rank's), every rank
 * returns the same error status, no rank writes an output byte (out, lse, dq, dk, dv, dsinks stay
 * canary, inputs and an aliased input unchanged), fa_mpi_last_error() explains it, nothing hangs
 * (the watchdog), and the next good call on the same communicator still gives the bytes it gave
 * before the refusal.
 *
 * Each refusal spoils the arguments of a good call on one problem (f64, causal, GQA, bias, sinks:
 * every output in play), on the ranks it names. When a spoil must reach one check alone, it also
 * drops what another check would refuse (the bias, whose key axis follows the rows). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cases.h"

/* The arguments of one call, each tensor a copy that a spoil may change or point elsewhere. */
typedef struct {
    MPI_Comm comm;
    fa_mpi_layout layout;
    fa_params p;
    fa_tensor q, k, v, out, dout, dq, dk, dv, bias, dbias, kv_scale;
    const fa_tensor *qp, *kp, *vp, *outp, *doutp, *dqp, *dkp, *dvp;
    void *lse;
    fa_seqs seqs;
    kit_buf extra[6];    /* buffers a spoil adds (they must stay canary) */
    const fa_params *pp; /* the p passed: &p, or a spoil's larger struct */
    union {
        fa_params p;
        unsigned char bytes[FA_STRUCT_SIZE_MAX];
    } larger;
} call;

typedef enum { WHO_ALL, WHO_FIRST, WHO_LAST } who;

typedef struct {
    const char *name;
    int backward;
    who who;
    int min_ranks;    /* the spoil needs ranks that differ */
    int contig_only;  /* the spoil sets the layout itself: run it on the CONTIGUOUS problem only */
    int same_message; /* fa_mpi_last_error() the same on every rank (not so for a refusal of comm itself) */
    fa_status want;
    /* called on every rank; `faulty`: this rank is one the refusal names */
    void (*spoil)(call *c, const mt_local *l, const mt_global *g, int faulty);
} refusal;

static void call_init(call *c, MPI_Comm comm, fa_mpi_layout layout, const mt_local *l)
{
    memset(c, 0, sizeof *c);
    c->comm = comm;
    c->layout = layout;
    c->p = l->p;
    c->q = l->q, c->k = l->k, c->v = l->v, c->out = l->out, c->dout = l->dout;
    c->dq = l->dq, c->dk = l->dk, c->dv = l->dv, c->bias = l->bias;
    c->qp = &c->q, c->kp = &c->k, c->vp = &c->v, c->outp = &c->out, c->doutp = &c->dout;
    c->dqp = &c->dq, c->dkp = &c->dk, c->dvp = &c->dv;
    c->p.bias = l->p.bias ? &c->bias : NULL;
    c->pp = &c->p;
    c->lse = l->lse;
}

static void call_free(call *c)
{
    for (int i = 0; i < 6; i++) kit_buf_free(&c->extra[i]);
}

static fa_status call_run(fa_context *ctx, const call *c, int backward)
{
    if (backward)
        return fa_mpi_backward(c->comm, c->layout, ctx, c->pp, c->qp, c->kp, c->vp, c->outp, c->doutp, c->lse,
                               c->dqp, c->dkp, c->dvp);
    return fa_mpi_forward(c->comm, c->layout, ctx, c->pp, c->qp, c->kp, c->vp, c->outp, c->lse);
}

/* ---- spoils ------------------------------------------------------------------------------ */
/* p's size tag (include/flashattn.h, "ABI"): struct_size 0 on the faulty rank (FA_ERR_ARG) */
static void p_struct_size_zero(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->p.struct_size = 0;
}

/* a larger p with a byte of a field this library does not know set (FA_ERR_UNSUPPORTED) */
static void p_unknown_field(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (!faulty) return;
    memset(&c->larger, 0, sizeof c->larger);
    c->larger.p = c->p;
    c->larger.p.struct_size = sizeof(fa_params) + 16;
    c->larger.bytes[sizeof(fa_params) + 9] = 1;
    c->pp = &c->larger.p;
}

static void q_dim(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->q.dim -= 1;
}

static void out_is_q(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->outp = c->qp; /* D == Dv: the same shape, so only the overlap is wrong */
}

static void v_null(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->vp = NULL;
}

static void k_null(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->kp = NULL;
}

static void dout_null(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->doutp = NULL;
}

static void heads_differ(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    c->p.bias = NULL;
    /* Hq 2 instead of 4 over Hkv 2: a valid call of its own */
    if (faulty) c->q.heads = c->out.heads = c->dout.heads = c->dq.heads = 2;
}

/* f32 views of the shard's shape, canary-filled, on the faulty rank; the others keep f64 */
static void dtype_differs(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l;
    c->p.bias = NULL;
    if (!faulty) return;
    const mt_case *cs = &g->c;
    int64_t n = l->q.seq;
    fa_tensor *t[4] = {&c->q, &c->k, &c->v, &c->out};
    int64_t heads[4] = {cs->q_heads, cs->kv_heads, cs->kv_heads, cs->q_heads};
    int64_t dims[4] = {cs->dim, cs->dim, cs->dim_v, cs->dim_v};
    for (int i = 0; i < 4; i++) {
        c->extra[i] = kit_buf_alloc(sizeof(float) * (size_t)(cs->batch * heads[i] * n * dims[i]));
        *t[i] = fa_tensor_bhsd(kit_buf_data(&c->extra[i]), FA_F32, cs->batch, heads[i], n, dims[i]);
    }
    c->extra[4] = kit_buf_alloc(sizeof(float) * (size_t)(cs->batch * cs->q_heads * n));
    c->lse = kit_buf_data(&c->extra[4]);
}

static void bias_key_axis(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->bias.dim -= 1;
}

static void local_rows_differ(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    c->p.bias = NULL;
    if (faulty) c->k.seq = c->v.seq = c->dk.seq = c->dv.seq = l->q.seq - 1;
}

static void layout_unknown(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->layout = (fa_mpi_layout)7;
}

static void comm_null(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->comm = MPI_COMM_NULL;
}

static void rows(call *c, int64_t n)
{
    c->q.seq = c->k.seq = c->v.seq = c->out.seq = c->dout.seq = n;
    c->dq.seq = c->dk.seq = c->dv.seq = n;
}

/* every rank's shard one row short of the problem's even length: odd */
static void zigzag_odd(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)g, (void)faulty;
    c->layout = FA_MPI_ZIGZAG;
    c->p.bias = NULL;
    rows(c, l->q.seq - 1);
}

/* the faulty rank's shard two rows shorter than the others': even, and different */
static void zigzag_differ(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)g;
    c->layout = FA_MPI_ZIGZAG;
    c->p.bias = NULL;
    if (faulty) rows(c, l->q.seq - 2);
}

static void seqs(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l;
    c->seqs = (fa_seqs)FA_SEQS_INIT;
    c->seqs.batch = g->c.batch; /* a dense batch: valid for fa_forward */
    if (faulty) c->p.seqs = &c->seqs;
}

/* Dropout on every rank, its parameters differing on the faulty rank: each valid alone, but the
 * ranks would drop by different masks (a call that succeeds with wrong rows), so every rank refuses
 * (FA_ERR_ARG) */
static void dropout_on(call *c)
{
    c->p.dropout_p = 0.1, c->p.dropout_seed = 3, c->p.dropout_offset = 5;
}

static void dropout_seed_differs(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    dropout_on(c);
    if (faulty) c->p.dropout_seed = 4;
}

static void dropout_p_differs(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    dropout_on(c);
    if (faulty) c->p.dropout_p = 0.2;
}

static void dropout_offset_differs(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    dropout_on(c);
    if (faulty) c->p.dropout_offset = 6;
}

static void dropout_row0_differs(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    dropout_on(c);
    if (faulty) c->p.dropout_row0 = 7;
}

static void dropout_key0_differs(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    dropout_on(c);
    if (faulty) c->p.dropout_key0 = 9;
}

static void dropout_row0_negative(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    dropout_on(c);
    if (faulty) c->p.dropout_row0 = -1;
}

/* bf16 on the faulty rank only (the buffers, made for f64, hold the narrower elements; the bias
 * goes, as its dtype would have to be float): FA_ERR_DTYPE, as any dtype that differs */
static void half_everywhere(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    c->p.bias = NULL;
    if (!faulty) return;
    c->q.dtype = c->out.dtype = c->dout.dtype = c->dq.dtype = FA_BF16;
    c->k.dtype = c->v.dtype = c->dk.dtype = c->dv.dtype = FA_BF16;
}

/* an int8 cache with its scales (f32 queries): valid for fa_forward, but its shards would travel
 * without their scales: FA_ERR_UNSUPPORTED, named as quantized */
static void quantized_cache(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    c->p.bias = NULL;
    if (!faulty) return;
    c->extra[0] = kit_buf_alloc(sizeof(float)); /* its canary bytes are a finite float: a valid scale */
    c->kv_scale = fa_tensor_bhsd(kit_buf_data(&c->extra[0]), FA_F32, 1, 1, 1, 1);
    c->p.k_scale = c->p.v_scale = &c->kv_scale;
    c->q.dtype = c->out.dtype = FA_F32;
    c->k.dtype = c->v.dtype = FA_I8;
}

static void half_cache(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    c->p.bias = NULL;
    if (!faulty) return;
    c->q.dtype = c->out.dtype = c->dout.dtype = c->dq.dtype = FA_F32;
    c->k.dtype = c->v.dtype = c->dk.dtype = c->dv.dtype = FA_F16;
}

static void window_invalid(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->p.window_left = -2;
}

static void shift_beyond_range(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->p.diagonal_shift = FA_MAX_DIAGONAL_SHIFT; /* valid alone; not with N added */
}

static void out_overlaps_itself(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->out.stride_seq = 1;
}

static void lse_misaligned(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->lse = (char *)c->lse + 1;
}

static void lse_null(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->lse = NULL;
}

static void dq_is_dout(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->dqp = c->doutp; /* D == Dv */
}

static void dv_is_dk(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->dvp = c->dkp;
}

static void dout_dim(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->dout.dim -= 1;
}

/* no sinks on any rank; dsinks asked for on the faulty one */
static void dsinks_without_sinks(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)g;
    c->p.sinks = NULL;
    c->p.dsinks = faulty ? l->p.dsinks : NULL;
}

/* Parameters every rank must share, each valid on its own, different on the faulty rank: the ring
 * would otherwise mask, scale or cap the faulty rank's blocks differently from the others' (a call
 * that succeeds with wrong rows), so every rank refuses (FA_ERR_ARG). */
static void causal_differs(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->p.causal = c->p.causal == FA_CAUSAL_NONE ? FA_CAUSAL_TOP_LEFT : FA_CAUSAL_NONE;
}

static void scale_differs(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->p.scale = (c->p.scale != 0.0 ? c->p.scale : 0.25) * 0.5;
}

static void softcap_differs(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->p.softcap = c->p.softcap + 7.0;
}

static void window_differs(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->p.window_left = c->p.window_left >= 0 ? c->p.window_left + 1 : 3;
}

static void shift_differs(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->p.diagonal_shift += 1;
}

static void window_right_differs(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->p.window_right = c->p.window_right >= 0 ? c->p.window_right + 1 : 5;
}

/* ALiBi on every rank but the faulty one */
static void alibi_only_on_some(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l;
    c->p.alibi_slopes = faulty ? NULL : g->slopes;
}

/* the bias on every rank but the faulty one */
static void bias_only_on_some(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->p.bias = NULL;
}

/* the faulty rank's layout ZIGZAG, the others' CONTIGUOUS (equal even shards: valid either way) */
static void layout_differs(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    c->p.bias = NULL;
    if (faulty) c->layout = FA_MPI_ZIGZAG;
}

/* sinks on every rank but the faulty one (which also drops dsinks: that is not what is refused) */
static void sinks_only_on_some(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)l, (void)g;
    if (faulty) c->p.sinks = NULL, c->p.dsinks = NULL;
}

/* the bias's gradient is not computed across ranks: refused on every rank */
static void dbias_asked(call *c, const mt_local *l, const mt_global *g, int faulty)
{
    (void)g;
    if (!faulty || !c->p.bias) return;
    c->extra[0] = kit_buf_alloc((size_t)(l->bias.batch * l->bias.heads * l->bias.seq * l->bias.dim) *
                                (l->bias.dtype == FA_F64 ? sizeof(double) : sizeof(float)));
    c->dbias = fa_tensor_bhsd(kit_buf_data(&c->extra[0]), l->bias.dtype, l->bias.batch, l->bias.heads,
                              l->bias.seq, l->bias.dim);
    c->p.dbias = &c->dbias;
}

static const refusal refusals[] = {
    {"causal-differs-on-last-rank", 0, WHO_LAST, 2, 0, 1, FA_ERR_ARG, causal_differs},
    {"scale-differs-on-first-rank", 0, WHO_FIRST, 2, 0, 1, FA_ERR_ARG, scale_differs},
    {"softcap-differs-on-last-rank", 0, WHO_LAST, 2, 0, 1, FA_ERR_ARG, softcap_differs},
    {"window-differs-on-last-rank", 0, WHO_LAST, 2, 0, 1, FA_ERR_ARG, window_differs},
    {"diagonal-shift-differs-on-last-rank", 0, WHO_LAST, 2, 0, 1, FA_ERR_ARG, shift_differs},
    {"sinks-missing-on-last-rank", 0, WHO_LAST, 2, 0, 1, FA_ERR_ARG, sinks_only_on_some},
    {"window-right-differs-on-last-rank", 0, WHO_LAST, 2, 0, 1, FA_ERR_ARG, window_right_differs},
    {"alibi-missing-on-last-rank", 0, WHO_LAST, 2, 0, 1, FA_ERR_ARG, alibi_only_on_some},
    {"bias-missing-on-first-rank", 0, WHO_FIRST, 2, 0, 1, FA_ERR_ARG, bias_only_on_some},
    {"layout-differs-on-last-rank", 0, WHO_LAST, 2, 1, 1, FA_ERR_ARG, layout_differs},
    {"backward-causal-differs-on-last-rank", 1, WHO_LAST, 2, 0, 1, FA_ERR_ARG, causal_differs},
    {"backward-scale-differs-on-last-rank", 1, WHO_LAST, 2, 0, 1, FA_ERR_ARG, scale_differs},
    {"backward-dtype-differs-on-last-rank", 1, WHO_LAST, 2, 0, 1, FA_ERR_DTYPE, dtype_differs},
    {"backward-dbias-on-last-rank", 1, WHO_LAST, 1, 0, 1, FA_ERR_UNSUPPORTED, dbias_asked},
    {"p-struct-size-0-on-last-rank", 0, WHO_LAST, 1, 0, 1, FA_ERR_ARG, p_struct_size_zero},
    {"p-unknown-field-on-first-rank", 0, WHO_FIRST, 1, 0, 1, FA_ERR_UNSUPPORTED, p_unknown_field},
    {"backward-p-struct-size-0", 1, WHO_ALL, 1, 0, 1, FA_ERR_ARG, p_struct_size_zero},
    {"backward-p-unknown-field-on-last-rank", 1, WHO_LAST, 1, 0, 1, FA_ERR_UNSUPPORTED, p_unknown_field},
    {"q-dim-on-last-rank", 0, WHO_LAST, 1, 0, 1, FA_ERR_SHAPE, q_dim},
    {"out-aliases-q-on-last-rank", 0, WHO_LAST, 1, 0, 1, FA_ERR_ALIAS, out_is_q},
    {"v-null-on-first-rank", 0, WHO_FIRST, 1, 0, 1, FA_ERR_NULL, v_null},
    {"heads-differ-on-last-rank", 0, WHO_LAST, 2, 0, 1, FA_ERR_SHAPE, heads_differ},
    {"dtype-differs-on-last-rank", 0, WHO_LAST, 2, 0, 1, FA_ERR_DTYPE, dtype_differs},
    {"bias-key-axis-on-last-rank", 0, WHO_LAST, 1, 0, 1, FA_ERR_SHAPE, bias_key_axis},
    {"local-rows-of-q-and-k-differ-on-last-rank", 0, WHO_LAST, 1, 0, 1, FA_ERR_SHAPE, local_rows_differ},
    {"layout-unknown", 0, WHO_ALL, 1, 0, 1, FA_ERR_ARG, layout_unknown},
    {"layout-unknown-on-last-rank", 0, WHO_LAST, 1, 0, 1, FA_ERR_ARG, layout_unknown},
    {"comm-null", 0, WHO_ALL, 1, 0, 0, FA_ERR_ARG, comm_null},
    {"zigzag-odd-shard", 0, WHO_ALL, 1, 1, 1, FA_ERR_SHAPE, zigzag_odd},
    {"zigzag-shards-differ-on-last-rank", 0, WHO_LAST, 2, 1, 1, FA_ERR_SHAPE, zigzag_differ},
    {"seqs", 0, WHO_ALL, 1, 0, 1, FA_ERR_UNSUPPORTED, seqs},
    {"seqs-on-last-rank", 0, WHO_LAST, 1, 0, 1, FA_ERR_UNSUPPORTED, seqs},
    {"dropout-seed-differs-on-last-rank", 0, WHO_LAST, 2, 0, 1, FA_ERR_ARG, dropout_seed_differs},
    {"dropout-p-differs-on-first-rank", 0, WHO_FIRST, 2, 0, 1, FA_ERR_ARG, dropout_p_differs},
    {"dropout-offset-differs-on-last-rank", 0, WHO_LAST, 2, 0, 1, FA_ERR_ARG, dropout_offset_differs},
    {"dropout-row0-differs-on-last-rank", 0, WHO_LAST, 2, 0, 1, FA_ERR_ARG, dropout_row0_differs},
    {"dropout-key0-differs-on-first-rank", 0, WHO_FIRST, 2, 0, 1, FA_ERR_ARG, dropout_key0_differs},
    {"dropout-row0-negative-on-last-rank", 0, WHO_LAST, 1, 0, 1, FA_ERR_ARG, dropout_row0_negative},
    {"bf16-on-last-rank", 0, WHO_LAST, 2, 0, 1, FA_ERR_DTYPE, half_everywhere},
    {"quantized-cache", 0, WHO_ALL, 1, 0, 1, FA_ERR_UNSUPPORTED, quantized_cache},
    {"f32-queries-over-an-f16-cache", 0, WHO_ALL, 1, 0, 1, FA_ERR_UNSUPPORTED, half_cache},
    {"window-below-minus-1", 0, WHO_ALL, 1, 0, 1, FA_ERR_ARG, window_invalid},
    {"diagonal-shift-beyond-range", 0, WHO_ALL, 1, 0, 1, FA_ERR_ARG, shift_beyond_range},
    {"out-overlaps-itself-on-first-rank", 0, WHO_FIRST, 1, 0, 1, FA_ERR_STRIDE, out_overlaps_itself},
    {"lse-misaligned-on-last-rank", 0, WHO_LAST, 1, 0, 1, FA_ERR_STRIDE, lse_misaligned},
    {"backward-lse-null-on-last-rank", 1, WHO_LAST, 1, 0, 1, FA_ERR_NULL, lse_null},
    {"backward-dq-aliases-dout-on-first-rank", 1, WHO_FIRST, 1, 0, 1, FA_ERR_ALIAS, dq_is_dout},
    {"backward-dv-is-dk-on-last-rank", 1, WHO_LAST, 1, 0, 1, FA_ERR_ALIAS, dv_is_dk},
    {"backward-k-null-on-first-rank", 1, WHO_FIRST, 1, 0, 1, FA_ERR_NULL, k_null},
    {"backward-dout-null-on-last-rank", 1, WHO_LAST, 1, 0, 1, FA_ERR_NULL, dout_null},
    {"backward-dout-dim-on-last-rank", 1, WHO_LAST, 1, 0, 1, FA_ERR_SHAPE, dout_dim},
    {"backward-dsinks-without-sinks-on-last-rank", 1, WHO_LAST, 1, 0, 1, FA_ERR_NULL, dsinks_without_sinks},
    {"backward-heads-differ-on-last-rank", 1, WHO_LAST, 2, 0, 1, FA_ERR_SHAPE, heads_differ},
    {"backward-zigzag-odd-shard", 1, WHO_ALL, 1, 1, 1, FA_ERR_SHAPE, zigzag_odd},
    {"backward-seqs", 1, WHO_ALL, 1, 0, 1, FA_ERR_UNSUPPORTED, seqs},
    {"backward-dropout-seed-differs-on-first-rank", 1, WHO_FIRST, 2, 0, 1, FA_ERR_ARG, dropout_seed_differs},
    {"backward-dropout-offset-differs-on-last-rank", 1, WHO_LAST, 2, 0, 1, FA_ERR_ARG,
     dropout_offset_differs},
    {"backward-bf16-on-last-rank", 1, WHO_LAST, 2, 0, 1, FA_ERR_DTYPE, half_everywhere},
    {"backward-f32-queries-over-an-f16-cache", 1, WHO_ALL, 1, 0, 1, FA_ERR_UNSUPPORTED, half_cache},
};

/* ---- the problem every refusal spoils ------------------------------------------------------ */

enum { B_OUT, B_LSE, B_DQ, B_DK, B_DV, B_DSINKS, B_COUNT };

typedef struct {
    mt_global g;
    mt_shard s;
    mt_local l;
    kit_buf *bufs[B_COUNT];
    unsigned char *good[B_COUNT]; /* each buffer's bytes after the good forward and backward */
} base;

static const char *buf_name[B_COUNT] = {"out", "lse", "dq", "dk", "dv", "dsinks"};

static void restore(const kit_buf *b, const unsigned char *bytes)
{
    memcpy(b->base, bytes, b->bytes + 2 * KIT_GUARD);
}

/* 1 on every rank when the good calls succeeded on every rank */
static int base_make(base *b, const mt_env *env, fa_mpi_layout layout)
{
    mt_case c = {.name = "refusals",
                 .layout = layout,
                 .batch = 1,
                 .q_heads = 4,
                 .kv_heads = 2,
                 .len = 48,
                 .dim = 16,
                 .dim_v = 16,
                 .causal = FA_CAUSAL_TOP_LEFT,
                 .bias = MT_BIAS_FULL,
                 .sinks = 1};
    mt_global_make(&b->g, &c, FA_F64, mt_case_seed(env->seed, c.name, (int)layout));
    mt_shard_make(&b->s, &c, b->g.n, env->rank, env->size);
    mt_local_make(&b->l, &b->g, &b->s);
    b->bufs[B_OUT] = &b->l.out_buf, b->bufs[B_LSE] = &b->l.lse_buf, b->bufs[B_DQ] = &b->l.grad_buf[0];
    b->bufs[B_DK] = &b->l.grad_buf[1], b->bufs[B_DV] = &b->l.grad_buf[2],
    b->bufs[B_DSINKS] = &b->l.dsinks_buf;
    call good;
    call_init(&good, env->comm, layout, &b->l);
    int ok = MT_EXPECT_STATUS(env, call_run(env->ctx, &good, 0), FA_OK, "fa_mpi_forward (the good call)");
    if (ok)
        ok = MT_EXPECT_STATUS(env, call_run(env->ctx, &good, 1), FA_OK, "fa_mpi_backward (the good call)");
    for (int i = 0; i < B_COUNT; i++) b->good[i] = kit_buf_snapshot(b->bufs[i]);
    return ok;
}

static void base_free(base *b)
{
    for (int i = 0; i < B_COUNT; i++) free(b->good[i]);
    mt_local_free(&b->l);
    mt_shard_free(&b->s);
    mt_global_free(&b->g);
}

/* The buffers a call may read or must leave alone: every input and output of the rank. */
typedef struct {
    const kit_buf *buf;
    unsigned char *before;
    char name[48];
} snapshot;

enum { MAX_SNAP = 16 };

static int snap_all(snapshot *s, base *b)
{
    int n = 0;
    static const char *inputs[5] = {"q", "k", "v", "dout", "bias"};
    for (int i = 0; i < 5; i++) {
        if (b->g.mem[i].base) {
            s[n].buf = &b->g.mem[i];
            snprintf(s[n].name, sizeof s[n].name, "the global %s", inputs[i]);
            n++;
        }
        if (b->l.in[i].base) {
            s[n].buf = &b->l.in[i];
            snprintf(s[n].name, sizeof s[n].name, "the rank's copy of %s", inputs[i]);
            n++;
        }
    }
    for (int i = 0; i < B_COUNT; i++) {
        s[n].buf = b->bufs[i];
        snprintf(s[n].name, sizeof s[n].name, "%s", buf_name[i]);
        n++;
    }
    for (int i = 0; i < n; i++) s[i].before = kit_buf_snapshot(s[i].buf);
    return n;
}

static void refusal_case(const mt_env *env, base *b, fa_mpi_layout layout, const refusal *r)
{
    mt_case_begin(
        "refusal %s: P=%d, %s problem (f64 B=1 Hq=4 Hkv=2 N=48 D=Dv=16 causal bias sinks), comm %s, "
        "expected %s on every rank",
        r->name, env->size, layout == FA_MPI_ZIGZAG ? "zigzag" : "contiguous", env->comm_name,
        fa_status_str(r->want));
    int faulty = r->who == WHO_ALL || (r->who == WHO_FIRST && env->rank == 0) ||
                 (r->who == WHO_LAST && env->rank == env->size - 1);
    /* forward: every output canary; backward: out and lse from the good forward, gradients canary */
    for (int i = 0; i < B_COUNT; i++) {
        if (r->backward && (i == B_OUT || i == B_LSE))
            restore(b->bufs[i], b->good[i]);
        else
            kit_buf_fill(b->bufs[i], KIT_CANARY);
    }
    call c;
    call_init(&c, env->comm, layout, &b->l);
    r->spoil(&c, &b->l, &b->g, faulty);
    snapshot snaps[MAX_SNAP];
    int n = snap_all(snaps, b);

    fa_status st = call_run(env->ctx, &c, r->backward);
    MT_EXPECT_STATUS(env, st, r->want, r->backward ? "fa_mpi_backward" : "fa_mpi_forward");
    MT_EXPECT_REFUSAL_MESSAGE(env, r->same_message);
    /* the refusals that name their argument in so many words */
    static const struct {
        void (*spoil)(call *, const mt_local *, const mt_global *, int);
        const char *word;
    } named[] = {{dropout_seed_differs, "p.dropout_seed"},
                 {dropout_p_differs, "p.dropout_p"},
                 {dropout_offset_differs, "p.dropout_offset"},
                 {dropout_row0_negative, "p.dropout_row0"},
                 {dropout_row0_differs, "p.dropout_row0"},
                 {dropout_key0_differs, "p.dropout_key0"},
                 {quantized_cache, "quantized"},
                 {half_cache, "f32 queries over a half"}};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (r->spoil == named[i].spoil)
            MT_CHECK(strstr(fa_mpi_last_error(), named[i].word) != NULL,
                     "fa_mpi_last_error() \"%s\" does not name %s", fa_mpi_last_error(), named[i].word);
    for (int i = 0; i < n; i++) {
        MT_CHECK(kit_buf_equals_snapshot(snaps[i].buf, snaps[i].before), "%s was written by a refused call",
                 snaps[i].name);
        free(snaps[i].before);
    }
    for (int i = 0; i < 6; i++)
        MT_CHECK(kit_buf_untouched(&c.extra[i]),
                 "the faulty rank's extra buffer %d was written by a refused call", i);
    call_free(&c);

    /* the next good call on the same communicator: the bytes of the good call before */
    call good;
    call_init(&good, env->comm, layout, &b->l);
    for (int i = 0; i < B_COUNT; i++) {
        if (r->backward && (i == B_OUT || i == B_LSE))
            restore(b->bufs[i], b->good[i]);
        else
            kit_buf_fill(b->bufs[i], KIT_CANARY);
    }
    st = call_run(env->ctx, &good, r->backward);
    if (MT_EXPECT_STATUS(env, st, FA_OK, "the good call after the refusal")) {
        int from = r->backward ? B_DQ : B_OUT, to = r->backward ? B_COUNT : B_LSE + 1;
        for (int i = from; i < to; i++)
            MT_CHECK(kit_buf_equals_snapshot(b->bufs[i], b->good[i]),
                     "the good call after the refusal: %s differs from the good call's before it",
                     buf_name[i]);
    }
    mt_case_end();
}

void mt_run_refusals(const mt_env *env)
{
    static const fa_mpi_layout layouts[] = {FA_MPI_CONTIGUOUS, FA_MPI_ZIGZAG};
    for (int li = 0; li < 2; li++) {
        int any = 0;
        for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; i++)
            any |= mt_selected(env, refusals[i].name);
        if (!any) continue;
        base b;
        mt_case_begin("refusals: the good calls on the %s problem", li ? "zigzag" : "contiguous");
        int ok = base_make(&b, env, layouts[li]);
        mt_case_end();
        for (size_t i = 0; ok && i < sizeof refusals / sizeof refusals[0]; i++) {
            const refusal *r = &refusals[i];
            if (!mt_selected(env, r->name) || env->size < r->min_ranks || (r->contig_only && li)) continue;
            refusal_case(env, &b, layouts[li], r);
        }
        base_free(&b);
    }
}

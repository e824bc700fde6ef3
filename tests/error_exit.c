/* SPDX-License-Identifier: BSD-3-Clause */
/* The error-exit fixture; see error_exit.h. */
#include "error_exit.h"

#include <criterion/criterion.h>
#include <ctype.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/context.h" /* fa_context_acquire: a busy context without racing threads */

/* Elements per region, in 8-byte slots (an f32 view uses half of its region). Every view a case
 * builds, re-pointed anywhere into a neighbouring region, stays inside the pool. */
#define REGION     ((int64_t)1024)
#define POOL_SLOTS ((size_t)(EE_REGIONS + 2) * (size_t)REGION)

/* As a parameter ("p->bias->seq"); fa_last_error() writes "->" as "." (ee_default_names). */
static const char *const slot_name[EE_SLOTS] = {"q",
                                                "k",
                                                "v",
                                                "out",
                                                "dout",
                                                "dq",
                                                "dk",
                                                "dv",
                                                "lse",
                                                "packed",
                                                "p->bias",
                                                "p->alibi_slopes",
                                                "p->sinks",
                                                "p->dsinks",
                                                "(the sequences' arrays)",
                                                "p->k_scale",
                                                "p->v_scale",
                                                "p->dbias",
                                                "p->seqs->cu_seqlens_q",
                                                "p->seqs->cu_seqlens_k",
                                                "p->seqs->seqused_k",
                                                "p->seqs->block_table",
                                                "outs[0]",
                                                "outs[1]",
                                                "outs[2]",
                                                "lses[0]",
                                                "lses[1]",
                                                "lses[2]"};

const char *ee_slot_name(int s)
{
    return s >= 0 && s < EE_SLOTS ? slot_name[s] : "?";
}

/* The scale views of a quantized cache: f32 whatever the world's dtype (a quantized cache has f32
 * queries), so their elements are 4 bytes. */
static int is_scale(int s)
{
    return s == EE_KSCALE || s == EE_VSCALE;
}

/* The per-head float arrays: Hq floats each, whatever the tensors' dtype. */
static int is_head_array(int s)
{
    return s == EE_SLOPES || s == EE_SINKS || s == EE_DSINKS;
}

/* ---- the world ------------------------------------------------------------------------------ */

unsigned char *ee_region(const ee_world *w, int r, int64_t el)
{
    /* region r starts after the spare region; regions are 8·REGION bytes apart for both dtypes */
    return (unsigned char *)kit_buf_data(&w->pool) + (size_t)(1 + r) * (size_t)REGION * 8 +
           el * (int64_t)w->e;
}

static const int64_t shape_of[EE_NT][3] = {
    {EE_HQ, EE_N, EE_DIM},   {EE_HKV, EE_N, EE_DIM}, {EE_HKV, EE_N, EE_DIM_V}, {EE_HQ, EE_N, EE_DIM_V},
    {EE_HQ, EE_N, EE_DIM_V}, {EE_HQ, EE_N, EE_DIM},  {EE_HKV, EE_N, EE_DIM},   {EE_HKV, EE_N, EE_DIM_V},
};

int64_t ee_lse_rows(void)
{
    return (int64_t)EE_B * EE_HQ * EE_N;
}

void ee_valid_args(const ee_world *w, ee_args *a)
{
    memset(a, 0, sizeof *a);
    a->ctx = w->ctx;
    a->p = (fa_params)FA_PARAMS_INIT;
    a->p.causal = FA_CAUSAL_BOTTOM_RIGHT;
    a->p.window_left = 3;
    a->p.window_right = 1;
    a->p.softcap = 30.0;
    a->p.dropout_p = 0.2; /* every refusal below is made with dropout on */
    a->p.dropout_seed = 7;
    a->p.alibi_slopes = (const float *)(void *)ee_region(w, EE_SLOPES, 0);
    a->p.sinks = (const float *)(void *)ee_region(w, EE_SINKS, 0);
    a->p.dsinks = (float *)(void *)ee_region(w, EE_DSINKS, 0);
    a->bias = fa_tensor_bhsd(ee_region(w, EE_BIAS, 0), w->dt, EE_B, EE_HQ, EE_N, EE_N);
    a->p.bias = &a->bias;
    a->dbias = fa_tensor_bhsd(ee_region(w, EE_DBIAS, 0), w->dt, EE_B, EE_HQ, EE_N, EE_N);
    a->pp = &a->p;
    for (int i = 0; i < EE_NT; i++)
        a->t[i] =
            fa_tensor_bhsd(ee_region(w, i, 0), w->dt, EE_B, shape_of[i][0], shape_of[i][1], shape_of[i][2]);
    a->lse = ee_region(w, EE_LSE, 0);
    a->world = w;
    /* the scales of a quantized cache, one per key (value) row; p does not point at them unless a
     * case asks (ee_quant_start) */
    a->k_scale = fa_tensor_bhsd(ee_region(w, EE_KSCALE, 0), FA_F32, EE_B, EE_HKV, EE_N, 1);
    a->v_scale = fa_tensor_bhsd(ee_region(w, EE_VSCALE, 0), FA_F32, EE_B, EE_HKV, EE_N, 1);
    ee_merge_args(w, a);
}

const char *ee_call_name(ee_call call)
{
    return call == EE_FORWARD    ? "fa_forward"
           : call == EE_BACKWARD ? "fa_backward"
           : call == EE_MERGE    ? "fa_merge"
                                 : "fa_convert";
}

fa_status ee_call_run(ee_call call, ee_args *a)
{
    const fa_tensor *t[EE_NT];
    for (int i = 0; i < EE_NT; i++) t[i] = a->null_t[i] ? NULL : &a->t[i];
    if (a->busy && !fa_context_acquire(a->ctx)) return (fa_status)-1; /* the test's own mistake */
    ee_poison_seqs(a, 1);
    fa_status st;
    if (call == EE_FORWARD)
        st = fa_forward(a->ctx, a->pp, t[EE_Q], t[EE_K], t[EE_V], t[EE_OUT], a->lse);
    else if (call == EE_BACKWARD)
        st = fa_backward(a->ctx, a->pp, t[EE_Q], t[EE_K], t[EE_V], t[EE_OUT], t[EE_DOUT], a->lse, t[EE_DQ],
                         t[EE_DK], t[EE_DV]);
    else if (call == EE_MERGE)
        st = fa_merge(a->ctx, a->n, a->outs, a->lses, t[EE_OUT], a->lse);
    else
        st = fa_convert(t[EE_DQ], t[EE_Q]);
    ee_poison_seqs(a, 0);
    if (a->busy) fa_context_release(a->ctx);
    return st;
}

fa_status ee_check_run(ee_call call, ee_args *a)
{
    const fa_tensor *t[EE_NT];
    for (int i = 0; i < EE_NT; i++) t[i] = a->null_t[i] ? NULL : &a->t[i];
    ee_poison_seqs(a, 1);
    fa_status st = (fa_status)-3;
    if (call == EE_FORWARD)
        st = fa_forward_check(a->pp, t[EE_Q], t[EE_K], t[EE_V], t[EE_OUT], a->lse);
    else if (call == EE_BACKWARD)
        st = fa_backward_check(a->pp, t[EE_Q], t[EE_K], t[EE_V], t[EE_OUT], t[EE_DOUT], a->lse, t[EE_DQ],
                               t[EE_DK], t[EE_DV]);
    ee_poison_seqs(a, 0);
    return st;
}

void ee_world_restore(ee_world *w)
{
    memcpy(w->pool.base, w->initial, w->pool.bytes + 2 * KIT_GUARD);
    memcpy(w->armed, w->initial, w->pool.bytes + 2 * KIT_GUARD);
}

void ee_world_arm(ee_world *w)
{
    memcpy(w->armed, w->pool.base, w->pool.bytes + 2 * KIT_GUARD);
}

int ee_world_unchanged(const ee_world *w)
{
    return kit_buf_equals_snapshot(&w->pool, w->armed);
}

static void packed_views(const ee_world *w, ee_call call, ee_args *a, int mode);

void ee_world_make(ee_world *w, fa_dtype dt, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    w->dt = dt;
    w->e = tu_dtype_size(dt);
    w->seed = seed;
    w->pool = kit_buf_alloc(POOL_SLOTS * 8);
    tu_rng rng = tu_rng_make(seed);
    /* inputs (and out and lse, inputs of the backward): random finite values; gradients canary */
    for (int r = 0; r < EE_REGIONS; r++) {
        if (r == EE_DQ || r == EE_DK || r == EE_DV || r == EE_DSINKS || r == EE_DBIAS) continue;
        for (int64_t x = 0; x < REGION; x++) {
            double val = tu_rng_uniform(&rng, -1.0, 1.0);
            if (is_head_array(r)) { /* floats, whatever the dtype */
                float f = (float)val;
                memcpy(ee_region(w, r, 0) + x * 4, &f, 4);
            } else if (dt == FA_F64)
                memcpy(ee_region(w, r, x), &val, 8);
            else {
                float f = (float)val;
                memcpy(ee_region(w, r, x), &f, 4);
            }
        }
    }
    w->initial = kit_buf_snapshot(&w->pool);
    w->armed = kit_buf_snapshot(&w->pool);
    /* fa_merge of many parts: the valid parts again and again, and a last one of another shape */
    w->many_outs = malloc(EE_MANY_PARTS * sizeof *w->many_outs);
    w->many_lses = malloc(EE_MANY_PARTS * sizeof *w->many_lses);
    cr_assert(w->many_outs && w->many_lses);
    for (int k = 0; k < EE_MANY_PARTS; k++) {
        w->many_outs[k] =
            fa_tensor_bhsd(ee_region(w, EE_Q + k % EE_PARTS, 0), dt, EE_B, EE_HQ, EE_N, EE_DIM_V);
        w->many_lses[k] = ee_region(w, EE_DOUT + k % EE_PARTS, 0);
    }
    w->many_outs[EE_MANY_PARTS - 1].seq++;
    fa_context_opts o = FA_CONTEXT_OPTS_INIT;
    o.num_threads = 2;
    cr_assert_eq(fa_context_create(&w->ctx, &o), FA_OK);
    /* The unbroken calls and the valid packed layouts succeed: every case below breaks exactly the
     * one thing it names. */
    for (int call = 0; call < 2; call++) {
        ee_args a;
        ee_valid_args(w, &a);
        fa_status st = ee_call_run((ee_call)call, &a);
        cr_assert_eq(st, FA_OK, "%s, the valid %s call: status %d (%s)", dt == FA_F64 ? "f64" : "f32",
                     call ? "fa_backward" : "fa_forward", st, fa_status_str(st));
        ee_valid_args(w, &a);
        packed_views(w, (ee_call)call, &a, 0);
        st = ee_call_run((ee_call)call, &a);
        cr_assert_eq(st, FA_OK, "%s, the valid packed %s call: status %d (%s)", dt == FA_F64 ? "f64" : "f32",
                     call ? "fa_backward" : "fa_forward", st, fa_status_str(st));
        ee_world_restore(w);
        if (call == EE_BACKWARD) { /* with the bias's gradient, which the dbias cases break */
            ee_valid_args(w, &a);
            a.p.dbias = &a.dbias;
            st = ee_call_run((ee_call)call, &a);
            cr_assert_eq(st, FA_OK, "%s, the valid fa_backward call with p.dbias: status %d (%s)",
                         dt == FA_F64 ? "f64" : "f32", st, fa_last_error());
            ee_world_restore(w);
        }
        /* the batches of sequences (fa_backward refuses paged keys: a case of its own) */
        for (int layout = EE_SEQ_PACKED; layout < EE_LAYOUTS; layout++) {
            if (call == EE_BACKWARD && layout == EE_SEQ_PAGED) continue;
            ee_valid_args(w, &a);
            ee_seqs_layout(w, &a, layout);
            st = ee_call_run((ee_call)call, &a);
            cr_assert_eq(st, FA_OK, "%s, the valid %s call on sequences (layout %d): status %d (%s)",
                         dt == FA_F64 ? "f64" : "f32", ee_call_name((ee_call)call), layout, st,
                         fa_last_error());
            ee_world_restore(w);
        }
    }
    /* The valid half-precision calls: every dtype row of the table (add_dtype_mixes) breaks one of
     * these in one place. The pool's bytes read as halves are whatever they are: only the status
     * matters here. */
    static const fa_dtype half_pairs[4][2] = {
        {FA_BF16, FA_BF16}, {FA_F16, FA_F16}, {FA_F32, FA_BF16}, {FA_F32, FA_F16}};
    for (int call = 0; call < 2; call++)
        for (int pr = 0; pr < 4; pr++) {
            ee_args a;
            ee_valid_args(w, &a);
            for (int i = 0; i < EE_NT; i++)
                a.t[i].dtype = i == EE_K || i == EE_V || i == EE_DK || i == EE_DV ? half_pairs[pr][1]
                                                                                  : half_pairs[pr][0];
            a.bias.dtype = FA_F32;
            fa_status st = ee_call_run((ee_call)call, &a);
            cr_assert_eq(st, FA_OK, "the valid %s call with q group %d, k group %d: status %d (%s)",
                         ee_call_name((ee_call)call), (int)half_pairs[pr][0], (int)half_pairs[pr][1], st,
                         fa_last_error());
            ee_world_restore(w);
            if (call != EE_FORWARD || half_pairs[pr][0] == FA_F32) continue;
            a.t[EE_OUT].dtype = FA_F32; /* the forward's partial results under half inputs */
            st = ee_call_run(EE_FORWARD, &a);
            cr_assert_eq(st, FA_OK,
                         "the valid fa_forward call with q group %d and an f32 out: status %d (%s)",
                         (int)half_pairs[pr][0], st, fa_last_error());
            ee_world_restore(w);
        }
    /* quantized caches take f32 queries: their valid calls belong to the f32 world */
    if (dt == FA_F32) ee_quant_check_valid(w);
    ee_args a;
    ee_valid_args(w, &a);
    fa_status st = ee_call_run(EE_MERGE, &a);
    cr_assert_eq(st, FA_OK, "%s, the valid fa_merge call: status %d (%s)", dt == FA_F64 ? "f64" : "f32", st,
                 fa_last_error());
    ee_world_restore(w);
    /* and of bf16 or f16 parts into an out of theirs (the lses stay float: the world's f32 or f64
     * bytes read as floats) */
    for (int h = 0; h < 2; h++) {
        ee_valid_args(w, &a);
        for (int k = 0; k < EE_PARTS; k++) a.parts[k].dtype = h ? FA_F16 : FA_BF16;
        a.t[EE_OUT].dtype = h ? FA_F16 : FA_BF16;
        st = ee_call_run(EE_MERGE, &a);
        cr_assert_eq(st, FA_OK, "the valid fa_merge of %s parts: status %d (%s)", h ? "f16" : "bf16", st,
                     fa_last_error());
        ee_world_restore(w);
    }
}

void ee_world_free(ee_world *w)
{
    fa_context_destroy(w->ctx);
    free(w->initial);
    free(w->armed);
    free(w->many_outs);
    free(w->many_lses);
    kit_buf_free(&w->pool);
}

/* ---- operations --------------------------------------------------------------------------- */

fa_tensor *ee_tensor_at(ee_args *a, int ti)
{
    if (ti >= EE_OUTS0 && ti < EE_OUTS0 + EE_PARTS) return &a->parts[ti - EE_OUTS0];
    if (is_scale(ti)) return ti == EE_KSCALE ? &a->k_scale : &a->v_scale;
    if (ti == EE_DBIAS) return &a->dbias;
    return ti == EE_BIAS ? &a->bias : ti >= 0 && ti < EE_NT ? &a->t[ti] : NULL;
}

static int64_t *size_field(fa_tensor *t, int f)
{
    return f == 0 ? &t->batch : f == 1 ? &t->heads : f == 2 ? &t->seq : &t->dim;
}

static int64_t *stride_field(fa_tensor *t, int f)
{
    return f == 0 ? &t->stride_batch : f == 1 ? &t->stride_head : &t->stride_seq;
}

static int64_t numel(const fa_tensor *t)
{
    return t->batch * t->heads * t->seq * t->dim;
}

/* Sizes shared by several tensors. */
enum { R_NONE = -1, R_B, R_HQ, R_HKV, R_NQ, R_NK, R_D, R_DV };

static void set_role(ee_args *a, int role, int64_t x)
{
    static const int members[7][4] = {
        {-1, -1, -1, -1},               /* B: every tensor, below */
        {EE_Q, EE_OUT, EE_DOUT, EE_DQ}, /* Hq */
        {EE_K, EE_V, EE_DK, EE_DV},     /* Hkv */
        {EE_Q, EE_OUT, EE_DOUT, EE_DQ}, /* Nq */
        {EE_K, EE_V, EE_DK, EE_DV},     /* Nk */
        {EE_Q, EE_K, EE_DQ, EE_DK},     /* D */
        {EE_V, EE_OUT, EE_DOUT, EE_DV}, /* Dv */
    };
    static const int field[7] = {0, 1, 1, 2, 2, 3, 3};
    if (role == R_NONE) return;
    if (role == R_B) {
        for (int i = 0; i < EE_NT; i++) a->t[i].batch = x;
        return;
    }
    for (int m = 0; m < 4; m++) *size_field(&a->t[members[role][m]], field[role]) = x;
}

/* The bias keeps the problem's shape [B][Hq][Nq][Nk] when a case changes a size that several
 * tensors share (EE_OP_ROLES, EE_OP_HELPER), so those cases still break only what they name. */
static void bias_follows(ee_args *a)
{
    a->bias.batch = a->t[EE_Q].batch;
    a->bias.heads = a->t[EE_Q].heads;
    a->bias.seq = a->t[EE_Q].seq;
    a->bias.dim = a->t[EE_K].seq;
}

unsigned char *ee_slot_first(ee_args *a, int s)
{
    switch (s) {
    case EE_LSE: return (unsigned char *)a->lse;
    case EE_SLOPES: return (unsigned char *)(uintptr_t)a->p.alibi_slopes;
    case EE_SINKS: return (unsigned char *)(uintptr_t)a->p.sinks;
    case EE_DSINKS: return (unsigned char *)a->p.dsinks;
    case EE_CU_Q: return (unsigned char *)(uintptr_t)a->seqs.cu_seqlens_q;
    case EE_CU_K: return (unsigned char *)(uintptr_t)a->seqs.cu_seqlens_k;
    case EE_USED: return (unsigned char *)(uintptr_t)a->seqs.seqused_k;
    case EE_TABLE: return (unsigned char *)(uintptr_t)a->seqs.block_table;
    case EE_LSES0:
    case EE_LSES0 + 1:
    case EE_LSES0 + 2: return (unsigned char *)(uintptr_t)a->part_lse[s - EE_LSES0];
    default: return (unsigned char *)ee_tensor_at(a, s)->data;
    }
}

int64_t ee_slot_elems(ee_args *a, int s)
{
    if (s >= EE_CU_Q && s <= EE_TABLE) return a->seqs_len[s - EE_CU_Q];
    if (s == EE_LSE || (s >= EE_LSES0 && s < EE_LSES0 + EE_PARTS)) return ee_lse_rows();
    return is_head_array(s) ? EE_HQ : numel(ee_tensor_at(a, s));
}

int64_t ee_slot_elem_bytes(const ee_world *w, int s)
{
    if (s >= EE_CU_Q && s <= EE_USED) return (int64_t)sizeof(int64_t);
    if (s == EE_TABLE) return (int64_t)sizeof(int32_t);
    return is_head_array(s) || is_scale(s) ? (int64_t)sizeof(float) : (int64_t)w->e;
}

void ee_set_slot(ee_args *a, int s, unsigned char *at)
{
    switch (s) {
    case EE_LSE: a->lse = at; break;
    case EE_SLOPES: a->p.alibi_slopes = (const float *)(void *)at; break;
    case EE_SINKS: a->p.sinks = (const float *)(void *)at; break;
    case EE_DSINKS: a->p.dsinks = (float *)(void *)at; break;
    case EE_CU_Q: a->seqs.cu_seqlens_q = (const int64_t *)(void *)at; break;
    case EE_CU_K: a->seqs.cu_seqlens_k = (const int64_t *)(void *)at; break;
    case EE_USED: a->seqs.seqused_k = (const int64_t *)(void *)at; break;
    case EE_TABLE: a->seqs.block_table = (const int32_t *)(void *)at; break;
    case EE_LSES0:
    case EE_LSES0 + 1:
    case EE_LSES0 + 2: a->part_lse[s - EE_LSES0] = at; break;
    default: ee_tensor_at(a, s)->data = at; break;
    }
}

/* Row-interleaved views in the packed region (mode 0: the valid layout). */
static void packed_views(const ee_world *w, ee_call call, ee_args *a, int mode)
{
    fa_dtype dt = w->dt;
    if (call == EE_FORWARD) {
        /* one row per (batch, position): [q: Hq·D | k: Hkv·D | v: Hkv·Dv | out: Hq·Dv] */
        const int64_t wd = EE_HQ * EE_DIM + EE_HKV * EE_DIM + EE_HKV * EE_DIM_V + EE_HQ * EE_DIM_V,
                      sb = EE_N * wd;
        const int64_t at[4] = {0, EE_HQ * EE_DIM, EE_HQ * EE_DIM + EE_HKV * EE_DIM,
                               EE_HQ * EE_DIM + EE_HKV * (EE_DIM + EE_DIM_V)};
        for (int i = 0; i < 4; i++) {
            int64_t dim = shape_of[i][2];
            fa_tensor t = {.data = ee_region(w, EE_PACKED, at[i]),
                           .dtype = dt,
                           .batch = EE_B,
                           .heads = shape_of[i][0],
                           .seq = EE_N,
                           .dim = dim,
                           .stride_batch = sb,
                           .stride_head = dim,
                           .stride_seq = wd};
            a->t[i] = t;
        }
        if (mode == 1) a->t[EE_OUT].data = ee_region(w, EE_PACKED, at[3] - 1); /* shares v's last column */
        if (mode == 2) a->t[EE_OUT].data = ee_region(w, EE_PACKED, EE_DIM);    /* inside q's columns */
        if (mode == 3)
            a->t[EE_OUT].stride_head = EE_DIM_V + 1; /* last head wraps into q's columns of the next row */
    } else {
        /* [q | k | v | dq | dk | dv]; out, dout and lse stay in their regions */
        const int64_t wd = 2 * (EE_HQ * EE_DIM + EE_HKV * EE_DIM + EE_HKV * EE_DIM_V), sb = EE_N * wd,
                      half = wd / 2;
        const int slot[6] = {EE_Q, EE_K, EE_V, EE_DQ, EE_DK, EE_DV};
        const int64_t at[6] = {0,    EE_HQ * EE_DIM,        EE_HQ * EE_DIM + EE_HKV * EE_DIM,
                               half, half + EE_HQ * EE_DIM, half + EE_HQ * EE_DIM + EE_HKV * EE_DIM};
        for (int i = 0; i < 6; i++) {
            int64_t dim = shape_of[slot[i]][2];
            fa_tensor t = {.data = ee_region(w, EE_PACKED, at[i]),
                           .dtype = dt,
                           .batch = EE_B,
                           .heads = shape_of[slot[i]][0],
                           .seq = EE_N,
                           .dim = dim,
                           .stride_batch = sb,
                           .stride_head = dim,
                           .stride_seq = wd};
            a->t[slot[i]] = t;
        }
        if (mode == 1) a->t[EE_DK].data = ee_region(w, EE_PACKED, at[4] - 1); /* shares dq's last column */
        if (mode == 2)
            a->t[EE_DV].data = ee_region(w, EE_PACKED, at[5] + 1);        /* wraps onto q's first column */
        if (mode == 3) a->t[EE_DQ].data = ee_region(w, EE_PACKED, at[1]); /* on k's and v's columns */
        if (mode == 4) {                                                  /* another row width */
            a->t[EE_DK].stride_seq = wd + 1;
            a->t[EE_DK].stride_batch = EE_N * (wd + 1);
        }
    }
}

/* fa_tensor_bhsd / fa_tensor_bshd with one argument replaced, for every view that argument sizes. */
static void helper_views(const ee_world *w, ee_args *a, int bshd, int arg, int64_t x)
{
    for (int i = 0; i < 4; i++) {
        void *data = a->t[i].data;
        fa_dtype t = w->dt;
        int64_t b = EE_B, h = shape_of[i][0], s = shape_of[i][1], d = shape_of[i][2];
        int hit = 0;
        if (arg == 0 && i == EE_Q) data = NULL, hit = 1;
        if (arg == 1 && i == EE_Q) t = (fa_dtype)x, hit = 1;
        if (arg == 2) b = x, hit = 1;                               /* B: every view */
        if (arg == 3 && (i == EE_Q || i == EE_OUT)) h = x, hit = 1; /* Hq */
        if (arg == 4 && (i == EE_K || i == EE_V)) s = x, hit = 1;   /* Nk */
        if (arg == 5 && (i == EE_Q || i == EE_K)) d = x, hit = 1;   /* D */
        a->t[i] = bshd ? fa_tensor_bshd(data, t, b, s, h, d) : fa_tensor_bhsd(data, t, b, h, s, d);
        /* the header: a negative size, or strides that would overflow, give negative strides */
        int64_t hs, hsd;
        int overflow = __builtin_mul_overflow(h, s, &hs) || __builtin_mul_overflow(hs, d, &hsd);
        int promised = hit && arg >= 2 && (x < 0 || overflow);
        if (promised && a->t[i].stride_batch >= 0 && a->t[i].stride_head >= 0 && a->t[i].stride_seq >= 0)
            a->helper_broken = 1;
    }
}

void ee_apply(const ee_case *c, const ee_world *w, ee_args *a)
{
    if (c->layout != EE_DENSE) ee_seqs_layout(w, a, c->layout);
    if (c->kv_dt || c->scales) ee_quant_start(c, w, a); /* scales shaped like the layout's k and v */
    if (c->op >= EE_OP_QUANT) {
        ee_apply_quant(c, w, a);
        return;
    }
    if (c->op >= EE_OP_RAGGED) {
        ee_apply_ragged(c, w, a);
        return;
    }
    /* p.dbias is set by the cases that break it or one of its neighbours, with every other field live */
    static const int dbias_ops[] = {EE_OP_NULL_DATA, EE_OP_DATA_TOP, EE_OP_MISALIGN, EE_OP_DTYPE,
                                    EE_OP_SIZE,      EE_OP_STRIDE,   EE_OP_ALIAS};
    for (size_t i = 0; c->call == EE_BACKWARD && i < sizeof dbias_ops / sizeof *dbias_ops; i++)
        if (c->op == dbias_ops[i] && (c->ti == EE_DBIAS || (c->op == EE_OP_ALIAS && c->field == EE_DBIAS)))
            a->p.dbias = &a->dbias;
    fa_tensor *t = ee_tensor_at(a, c->ti);
    int64_t x = c->i[0], sz;
    switch (c->op) {
    case EE_OP_NULL_BIAS:
        a->p.bias = NULL;
        a->p.dbias = &a->dbias;
        break;
    case EE_OP_BUSY: a->busy = 1; break;
    case EE_OP_NULL_TENSOR: a->null_t[c->ti] = 1; break;
    case EE_OP_NULL_DATA: t->data = NULL; break;
    case EE_OP_NULL_LSE: a->lse = NULL; break;
    case EE_OP_NULL_SINKS: a->p.sinks = NULL; break;
    case EE_OP_DATA_TOP: /* x bytes below the top of the address space */
        ee_set_slot(a, c->ti, (unsigned char *)(uintptr_t)(UINTPTR_MAX - (uintptr_t)(x - 1)));
        break;
    case EE_OP_MISALIGN:
        ee_set_slot(a, c->ti, ee_slot_first(a, c->ti) + (x == EE_HALF_ELEM ? (int64_t)w->e / 2 : x));
        break;
    case EE_OP_DTYPE:
        t->dtype = x == EE_OTHER_DTYPE ? (w->dt == FA_F32 ? FA_F64 : FA_F32) : (fa_dtype)x;
        break;
    case EE_OP_SIZE:
        sz = *size_field(t, c->field);
        *size_field(t, c->field) = x == EE_PLUS_ONE ? sz + 1 : x == EE_MINUS_ONE ? sz - 1 : x;
        break;
    case EE_OP_STRIDE:
        *stride_field(t, c->field) = x == EE_JUST_BELOW ? *stride_field(t, c->field) - 1 : x;
        break;
    case EE_OP_SCALE: a->p.scale = c->d; break;
    case EE_OP_CAUSAL: a->p.causal = (fa_causal)x; break;
    case EE_OP_WINDOW: *(c->field ? &a->p.window_right : &a->p.window_left) = x; break;
    case EE_OP_SHIFT: a->p.diagonal_shift = x; break;
    case EE_OP_SOFTCAP: a->p.softcap = c->d; break;
    case EE_OP_DROPOUT: a->p.dropout_p = c->d; break;
    case EE_OP_ORIGIN: *(c->field ? &a->p.dropout_key0 : &a->p.dropout_row0) = x; break;
    case EE_OP_ALIAS: {
        int moved = c->ti, onto = c->field;
        unsigned char *first = ee_slot_first(a, onto);
        int64_t e_moved = ee_slot_elem_bytes(w, moved), e_onto = ee_slot_elem_bytes(w, onto);
        if (c->mode == 0) ee_set_slot(a, moved, first); /* full */
        if (c->mode == 1)
            ee_set_slot(a, moved, first - (ee_slot_elems(a, moved) - 1) * e_moved); /* last on first */
        if (c->mode == 2) { /* first on last; an f64 view on a float array's last element starts at the
                               double that holds it, so the case stays aligned and still overlaps */
            int64_t at = (ee_slot_elems(a, onto) - 1) * e_onto;
            ee_set_slot(a, moved, first + at / e_moved * e_moved);
        }
        break;
    }
    case EE_OP_ROLES:
        set_role(a, c->ti, c->i[0]);
        set_role(a, c->field, c->i[1]);
        set_role(a, c->mode, c->i[2]);
        bias_follows(a);
        break;
    case EE_OP_PACKED: packed_views(w, c->call, a, c->mode); break;
    case EE_OP_DTYPES:
        for (int i = 0; i < EE_NT; i++) a->t[i].dtype = (fa_dtype)c->dt[i];
        a->bias.dtype = (fa_dtype)c->dt[EE_NT];
        break;
    case EE_OP_HELPER:
        helper_views(w, a, c->ti, c->field, x);
        bias_follows(a);
        break;
    case EE_OP_STRUCT: ee_apply_struct(c, a); break;
    case EE_OP_FN: c->fn(w, a); break;
    }
}

/* ---- the table ---------------------------------------------------------------------------- */

static int word_char(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/* Whether `word` (len bytes) stands in text as a whole word. */
static int has_word(const char *text, const char *word, size_t len)
{
    for (const char *at = text; (at = strstr(at, word)) != NULL; at++)
        if ((at == text || !word_char(at[-1])) && !word_char(at[len]) && strncmp(at, word, len) == 0)
            return 1;
    return 0;
}

int ee_names_argument(const char *diag, const char *call, const char *names)
{
    size_t n = strlen(call);
    if (strncmp(diag, call, n) != 0 || strncmp(diag + n, ": ", 2) != 0) return 0;
    char word[32];
    for (const char *w = names; *w;) { /* every space-separated word of names */
        size_t len = strcspn(w, " ");
        if (len == 0 || len >= sizeof word) return 0;
        memcpy(word, w, len);
        word[len] = '\0';
        if (!has_word(diag + n + 2, word, len)) return 0;
        w += len + (w[len] == ' ');
    }
    return 1;
}

/* The argument a parameter's diagnostic names by default: "q->stride_seq" names "q.stride_seq". */
void ee_default_names(char *names, size_t size, const char *param)
{
    size_t o = 0;
    for (const char *c = param; *c && o + 1 < size; c++) {
        if (c[0] == '-' && c[1] == '>') {
            names[o++] = '.';
            c++;
        } else
            names[o++] = *c;
    }
    names[o] = '\0';
}

ee_case *ee_add(ee_table *t, ee_call call, const char *param, const char *value, fa_status want, int op)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 256;
        t->v = realloc(t->v, (size_t)t->cap * sizeof *t->v);
        cr_assert(t->v);
    }
    ee_case *c = &t->v[t->n++];
    memset(c, 0, sizeof *c);
    c->call = call;
    snprintf(c->param, sizeof c->param, "%s %s", ee_call_name(call), param);
    snprintf(c->value, sizeof c->value, "%s", value);
    c->want = want;
    c->op = op;
    c->ti = c->field = c->mode = -1;
    ee_default_names(c->names, sizeof c->names, param);
    return c;
}

typedef struct {
    const char *name;
    double x;
} named_f64;

static void add_params(ee_table *t, ee_call call)
{
    static const named_f64 scale[] = {{"NaN", NAN}, {"-NaN", -NAN}, {"+Inf", INFINITY}, {"-Inf", -INFINITY}};
    static const ee_named causal[] = {{"3", 3}, {"-1", -1}, {"99", 99}, {"INT_MIN", INT_MIN}};
    static const ee_named window_arg[] = {{"-2", -2}, {"INT64_MIN", INT64_MIN}};
    static const named_f64 softcap_arg[] = {{"NaN", NAN},        {"-NaN", -NAN}, {"+Inf", INFINITY},
                                            {"-Inf", -INFINITY}, {"-1", -1.0},   {"-DBL_MIN", -DBL_MIN}};
    /* finite doubles the scores of f32 tensors cannot hold: refused for f32, valid for f64
     * (test_scale_range.c checks the f64 side) */
    static const named_f64 scale_f32[] = {{"-1e39 (beyond float's range; f32)", -1e39},
                                          {"DBL_MAX (f32)", DBL_MAX}};
    static const named_f64 softcap_f32[] = {{"1e39 (above FLT_MAX; f32)", 1e39},
                                            {"DBL_MAX (f32)", DBL_MAX},
                                            {"FLT_MIN / 2 (below float's normal range; f32)", FLT_MIN / 2.0},
                                            {"DBL_MIN (f32)", DBL_MIN},
                                            {"DBL_TRUE_MIN (f32)", DBL_TRUE_MIN}};
    ee_case *c;
    ee_add(t, call, "ctx", "a context serving another call", FA_ERR_BUSY, EE_OP_BUSY);
    for (size_t i = 0; i < sizeof scale / sizeof *scale; i++)
        ee_add(t, call, "p->scale", scale[i].name, FA_ERR_ARG, EE_OP_SCALE)->d = scale[i].x;
    for (size_t i = 0; i < sizeof scale_f32 / sizeof *scale_f32; i++) {
        c = ee_add(t, call, "p->scale", scale_f32[i].name, FA_ERR_ARG, EE_OP_SCALE);
        c->d = scale_f32[i].x;
        c->f32_only = 1;
    }
    for (size_t i = 0; i < sizeof causal / sizeof *causal; i++)
        ee_add(t, call, "p->causal", causal[i].name, FA_ERR_ARG, EE_OP_CAUSAL)->i[0] = causal[i].x;
    for (int f = 0; f < 2; f++) {
        const char *param = f ? "p->window_right" : "p->window_left";
        for (size_t i = 0; i < sizeof window_arg / sizeof *window_arg; i++) {
            c = ee_add(t, call, param, window_arg[i].name, FA_ERR_ARG, EE_OP_WINDOW);
            c->field = f;
            c->i[0] = window_arg[i].x;
        }
    }
    static const ee_named shift_arg[] = {{"FA_MAX_DIAGONAL_SHIFT + 1", FA_MAX_DIAGONAL_SHIFT + 1},
                                         {"-FA_MAX_DIAGONAL_SHIFT - 1", -FA_MAX_DIAGONAL_SHIFT - 1},
                                         {"INT64_MAX", INT64_MAX},
                                         {"INT64_MIN", INT64_MIN}};
    for (size_t i = 0; i < sizeof shift_arg / sizeof *shift_arg; i++)
        ee_add(t, call, "p->diagonal_shift", shift_arg[i].name, FA_ERR_ARG, EE_OP_SHIFT)->i[0] =
            shift_arg[i].x;
    for (size_t i = 0; i < sizeof softcap_arg / sizeof *softcap_arg; i++)
        ee_add(t, call, "p->softcap", softcap_arg[i].name, FA_ERR_ARG, EE_OP_SOFTCAP)->d = softcap_arg[i].x;
    for (size_t i = 0; i < sizeof softcap_f32 / sizeof *softcap_f32; i++) {
        c = ee_add(t, call, "p->softcap", softcap_f32[i].name, FA_ERR_ARG, EE_OP_SOFTCAP);
        c->d = softcap_f32[i].x;
        c->f32_only = 1;
    }
    static const named_f64 dropout_arg[] = {{"NaN", NAN},          {"-0.1", -0.1},     {"1", 1.0},
                                            {"1.5", 1.5},          {"+Inf", INFINITY}, {"-Inf", -INFINITY},
                                            {"-DBL_MIN", -DBL_MIN}};
    for (size_t i = 0; i < sizeof dropout_arg / sizeof *dropout_arg; i++)
        ee_add(t, call, "p->dropout_p", dropout_arg[i].name, FA_ERR_ARG, EE_OP_DROPOUT)->d = dropout_arg[i].x;
    /* dropout's origins: negative (FA_ERR_ARG), or past the counter's 2^32 rows, 2^34 keys with the
     * call's dropout on (FA_ERR_UNSUPPORTED) */
    static const struct {
        int field;
        const char *name;
        int64_t x;
        fa_status want;
    } origin_arg[] = {{0, "-1", -1, FA_ERR_ARG},
                      {0, "INT64_MIN", INT64_MIN, FA_ERR_ARG},
                      {1, "-1", -1, FA_ERR_ARG},
                      {1, "INT64_MIN", INT64_MIN, FA_ERR_ARG},
                      {0, "2^32", (int64_t)1 << 32, FA_ERR_UNSUPPORTED},
                      {0, "INT64_MAX", INT64_MAX, FA_ERR_UNSUPPORTED},
                      {1, "2^34", (int64_t)1 << 34, FA_ERR_UNSUPPORTED},
                      {1, "INT64_MAX", INT64_MAX, FA_ERR_UNSUPPORTED}};
    for (size_t i = 0; i < sizeof origin_arg / sizeof *origin_arg; i++) {
        const char *param = origin_arg[i].field ? "p->dropout_key0" : "p->dropout_row0";
        c = ee_add(t, call, param, origin_arg[i].name, origin_arg[i].want, EE_OP_ORIGIN);
        c->field = origin_arg[i].field;
        c->i[0] = origin_arg[i].x;
    }
}

static int is_output(ee_call call, int ti)
{
    return call == EE_FORWARD ? ti == EE_OUT : (ti >= EE_DQ && ti <= EE_DV) || ti == EE_DBIAS;
}

/* The dtype of a call's tensor follows its group's leader (flashattn.h, fa_forward): q for q, out,
 * dout and dq; k for k, v, dk and dv; the bias is the accumulation type. The leader of slot s. */
static const char *dtype_leader(int s)
{
    return s == EE_V || s == EE_DK || s == EE_DV ? "k.dtype" : "q.dtype";
}

/* What a known but wrong dtype x of slot ti on the valid call (every other tensor of the world's
 * dtype) names: q or k breaks the (q, k) pair, which names both; any other tensor itself and its
 * leader, the bias itself and q. One exception: FA_BF16 k under f32 q is the allowed half-precision
 * KV cache, so there the first tensor that breaks k's group, v, is named (and the f64 world, where
 * the pair itself is refused, names q and k). */
static void known_dtype_names(ee_case *c, int ti, int64_t x)
{
    if (ti == EE_Q || ti == EE_K)
        snprintf(c->names, sizeof c->names, "k.dtype q.dtype");
    else if (ti == EE_BIAS)
        snprintf(c->names, sizeof c->names, "p.bias.dtype q.dtype");
    else if (ti == EE_DBIAS)
        snprintf(c->names, sizeof c->names, "p.dbias.dtype q.dtype");
    else
        snprintf(c->names, sizeof c->names, "%s.dtype %s", slot_name[ti], dtype_leader(ti));
    if (ti == EE_K && x == FA_BF16) {
        snprintf(c->names, sizeof c->names, "v.dtype k.dtype");
        snprintf(c->names_f64, sizeof c->names_f64, "k.dtype q.dtype");
    }
}

const ee_named ee_bad_dtypes[5] = {{"7 (past the last)", 7},
                                   {"-1", -1},
                                   {"99", 99},
                                   {"the other of f32/f64", EE_OTHER_DTYPE},
                                   {"FA_BF16 among the others", FA_BF16}};
const ee_named ee_bad_sizes[5] = {{"-1", -1},
                                  {"INT64_MIN", INT64_MIN},
                                  {"0 (others not)", 0},
                                  {"+1 (mismatch)", EE_PLUS_ONE},
                                  {"INT64_MAX", INT64_MAX}};
const ee_named ee_bad_strides[5] = {{"-1", -1},
                                    {"INT64_MIN", INT64_MIN},
                                    {"INT64_MAX (offset overflows)", INT64_MAX},
                                    {"INT64_MAX/2 (byte offset overflows)", INT64_MAX / 2},
                                    {"2^61 (byte offset overflows)", INT64_C(1) << 61}};
const ee_named ee_overlapping_strides[2] = {{"0 (elements shared)", 0},
                                            {"contiguous - 1 (one element shared)", EE_JUST_BELOW}};
const ee_named ee_misaligned[2] = {{"1 byte past an element boundary", 1},
                                   {"half an element past an element boundary", EE_HALF_ELEM}};
const char *const ee_size_names[4] = {"batch", "heads", "seq", "dim"};
const char *const ee_stride_names[3] = {"stride_batch", "stride_head", "stride_seq"};

static void add_tensor_fields(ee_table *t, ee_call call, int ti)
{
    /* one less than the partners' (every size of the world is at least 2); the bias's own rows say
     * "the problem's - 1", since its batch minus one is a broadcast */
    static const ee_named minus_one = {"-1 (mismatch)", EE_MINUS_ONE};
    static const ee_named dims_extra[] = {{"FA_MAX_HEAD_DIM + 1", FA_MAX_HEAD_DIM + 1}};
    /* The bias's sizes are each the problem's or 1 (broadcast), and its dim is Nk: values that are
     * neither (the problem's B - 1 is 1, a valid broadcast, so batch does not get it). fa_tensor has
     * no stride for dim, so the nearest expressible "broadcast stride on the key axis" is dim = 1
     * with Nk > 1: refused, the key axis does not broadcast. */
    static const ee_named bias_extra[4][2] = {{{NULL, 0}, {NULL, 0}},
                                              {{"the problem's - 1", EE_MINUS_ONE}, {NULL, 0}},
                                              {{"the problem's - 1", EE_MINUS_ONE}, {NULL, 0}},
                                              {{"Nk - 1", EE_MINUS_ONE}, {"1 (broadcast key axis)", 1}}};
    const int bias = ti == EE_BIAS, dbias = ti == EE_DBIAS;
    char param[48];
    ee_case *c;
    if (!bias && !dbias) /* NULL bias or dbias: off */
        ee_add(t, call, slot_name[ti], "NULL", FA_ERR_NULL, EE_OP_NULL_TENSOR)->ti = ti;
    snprintf(param, sizeof param, "%s->data", slot_name[ti]);
    ee_add(t, call, param, "NULL", FA_ERR_NULL, EE_OP_NULL_DATA)->ti = ti;
    c = ee_add(t, call, param, "64 bytes below the top of the address space (its range wraps)", FA_ERR_STRIDE,
               EE_OP_DATA_TOP);
    c->ti = ti;
    c->i[0] = 64;
    for (size_t i = 0; (bias || dbias) && i < sizeof ee_misaligned / sizeof *ee_misaligned; i++) {
        c = ee_add(t, call, param, ee_misaligned[i].name, FA_ERR_STRIDE, EE_OP_MISALIGN);
        c->ti = ti;
        c->i[0] = ee_misaligned[i].x;
    }
    snprintf(param, sizeof param, "%s->dtype", slot_name[ti]);
    for (size_t i = 0; i < sizeof ee_bad_dtypes / sizeof *ee_bad_dtypes; i++) {
        c = ee_add(t, call, param, ee_bad_dtypes[i].name, FA_ERR_DTYPE, EE_OP_DTYPE);
        c->ti = ti;
        c->i[0] = ee_bad_dtypes[i].x;
        /* an unknown value names the tensor alone (the default); a known one as the contract says */
        if (ee_bad_dtypes[i].x == EE_OTHER_DTYPE || (ee_bad_dtypes[i].x >= 0 && ee_bad_dtypes[i].x < 7))
            known_dtype_names(c, ti, ee_bad_dtypes[i].x);
    }
    for (int f = 0; f < 4; f++) {
        snprintf(param, sizeof param, "%s->%s", slot_name[ti], ee_size_names[f]);
        for (size_t i = 0; i < sizeof ee_bad_sizes / sizeof *ee_bad_sizes + (f == 3); i++) {
            const ee_named *v =
                i < sizeof ee_bad_sizes / sizeof *ee_bad_sizes ? &ee_bad_sizes[i] : &dims_extra[0];
            c = ee_add(t, call, param, v->name, FA_ERR_SHAPE, EE_OP_SIZE);
            c->ti = ti;
            c->field = f;
            c->i[0] = v->x;
        }
        if (!bias) {
            c = ee_add(t, call, param, minus_one.name, FA_ERR_SHAPE, EE_OP_SIZE);
            c->ti = ti;
            c->field = f;
            c->i[0] = minus_one.x;
        }
        for (int i = 0; bias && i < 2 && bias_extra[f][i].name; i++) {
            c = ee_add(t, call, param, bias_extra[f][i].name, FA_ERR_SHAPE, EE_OP_SIZE);
            c->ti = ti;
            c->field = f;
            c->i[0] = bias_extra[f][i].x;
        }
    }
    for (int f = 0; f < 3; f++) {
        snprintf(param, sizeof param, "%s->%s", slot_name[ti], ee_stride_names[f]);
        size_t n = sizeof ee_bad_strides / sizeof *ee_bad_strides, n_out = is_output(call, ti) ? 2 : 0;
        for (size_t i = 0; i < n + n_out; i++) {
            const ee_named *v = i < n ? &ee_bad_strides[i] : &ee_overlapping_strides[i - n];
            c = ee_add(t, call, param, v->name, FA_ERR_STRIDE, EE_OP_STRIDE);
            c->ti = ti;
            c->field = f;
            c->i[0] = v->x;
        }
    }
}

/* alibi_slopes and sinks (inputs of both calls) and dsinks (fa_backward's output; fa_forward ignores
 * it): Hq floats each, aligned to float, not wrapping around the address space; dsinks needs sinks.
 * NULL alibi_slopes or sinks means "off", so it is no bad value. */
static void add_head_arrays(ee_table *t, ee_call call)
{
    static const ee_named misaligned[] = {{"1 byte past a float boundary", 1},
                                          {"2 bytes past a float boundary", 2},
                                          {"3 bytes past a float boundary", 3}};
    const int arrays[3] = {EE_SLOPES, EE_SINKS, EE_DSINKS};
    ee_case *c;
    for (int a = 0; a < (call == EE_FORWARD ? 2 : 3); a++) {
        for (size_t i = 0; i < sizeof misaligned / sizeof *misaligned; i++) {
            c = ee_add(t, call, slot_name[arrays[a]], misaligned[i].name, FA_ERR_STRIDE, EE_OP_MISALIGN);
            c->ti = arrays[a];
            c->i[0] = misaligned[i].x;
        }
        c = ee_add(t, call, slot_name[arrays[a]],
                   "8 bytes below the top of the address space (its floats wrap)", FA_ERR_STRIDE,
                   EE_OP_DATA_TOP);
        c->ti = arrays[a];
        c->i[0] = 8;
    }
    if (call == EE_BACKWARD) {
        c = ee_add(t, call, "p->sinks", "NULL with p->dsinks set", FA_ERR_NULL, EE_OP_NULL_SINKS);
        snprintf(c->names, sizeof c->names, "p.sinks p.dsinks");
    }
}

static void add_aliases(ee_table *t, ee_call call)
{
    static const int fwd_out[] = {EE_OUT, EE_LSE},
                     fwd_in[] = {EE_Q, EE_K, EE_V, EE_BIAS, EE_SLOPES, EE_SINKS};
    static const int bwd_out[] = {EE_DQ, EE_DK, EE_DV, EE_DSINKS, EE_DBIAS},
                     bwd_in[] = {EE_Q, EE_K, EE_V, EE_OUT, EE_DOUT, EE_LSE, EE_BIAS, EE_SLOPES, EE_SINKS};
    const int *outs = call == EE_FORWARD ? fwd_out : bwd_out, *ins = call == EE_FORWARD ? fwd_in : bwd_in;
    int n_out = call == EE_FORWARD ? 2 : 5, n_in = call == EE_FORWARD ? 6 : 9;
    static const char *const mode_name[3] = {"on all of %s", "last element on %s's first",
                                             "first element on %s's last"};
    for (int o = 0; o < n_out; o++)
        for (int j = 0; j < n_in + n_out; j++) {
            int onto = j < n_in ? ins[j] : outs[j - n_in];
            if (j >= n_in && j - n_in <= o) continue; /* each pair of outputs once */
            for (int m = 0; m < 3; m++) {
                char value[64];
                snprintf(value, sizeof value, mode_name[m], slot_name[onto]);
                ee_case *c = ee_add(t, call, slot_name[outs[o]], value, FA_ERR_ALIAS, EE_OP_ALIAS);
                char both[64];
                snprintf(both, sizeof both, "%s %s", slot_name[outs[o]], slot_name[onto]);
                ee_default_names(c->names, sizeof c->names, both);
                c->ti = outs[o];
                c->field = onto;
                c->mode = m;
            }
        }
}

static void add_shared_sizes(ee_table *t, ee_call call)
{
    static const struct {
        const char *param, *value;
        fa_status want;
        int role[3];
        int64_t x[3];
    } cases[] = {
        /* (the diagnostic names the role's size in q, k or v: roles_names below) */
        {"Hkv", "3 (Hq % Hkv != 0)", FA_ERR_SHAPE, {R_HKV, R_NONE, R_NONE}, {3}},
        {"Hkv", "8 (> Hq)", FA_ERR_SHAPE, {R_HKV, R_NONE, R_NONE}, {8}},
        {"Hkv", "0 with Hq 4", FA_ERR_SHAPE, {R_HKV, R_NONE, R_NONE}, {0}},
        {"Hkv", "-1", FA_ERR_SHAPE, {R_HKV, R_NONE, R_NONE}, {-1}},
        {"Hq", "-1", FA_ERR_SHAPE, {R_HQ, R_NONE, R_NONE}, {-1}},
        {"Nk", "-1", FA_ERR_SHAPE, {R_NK, R_NONE, R_NONE}, {-1}},
        {"D", "0", FA_ERR_SHAPE, {R_D, R_NONE, R_NONE}, {0}},
        {"D", "FA_MAX_HEAD_DIM + 1", FA_ERR_SHAPE, {R_D, R_NONE, R_NONE}, {FA_MAX_HEAD_DIM + 1}},
        {"D", "-1", FA_ERR_SHAPE, {R_D, R_NONE, R_NONE}, {-1}},
        {"D", "INT64_MAX", FA_ERR_SHAPE, {R_D, R_NONE, R_NONE}, {INT64_MAX}},
        {"Dv", "0", FA_ERR_SHAPE, {R_DV, R_NONE, R_NONE}, {0}},
        {"Dv", "FA_MAX_HEAD_DIM + 1", FA_ERR_SHAPE, {R_DV, R_NONE, R_NONE}, {FA_MAX_HEAD_DIM + 1}},
        {"Dv", "-1", FA_ERR_SHAPE, {R_DV, R_NONE, R_NONE}, {-1}},
        {"Dv", "INT64_MAX", FA_ERR_SHAPE, {R_DV, R_NONE, R_NONE}, {INT64_MAX}},
        {"B", "-1", FA_ERR_SHAPE, {R_B, R_NONE, R_NONE}, {-1}},
        {"B", "2^62 (B·Hq·Nq overflows)", FA_ERR_SHAPE, {R_B, R_NONE, R_NONE}, {INT64_C(1) << 62}},
        {"Nq", "2^62 (B·Hq·Nq overflows)", FA_ERR_SHAPE, {R_NQ, R_NONE, R_NONE}, {INT64_C(1) << 62}},
        {"B, Hq, Hkv",
         "2^32, 2^31, 2^31 (B·Hq overflows)",
         FA_ERR_SHAPE,
         {R_B, R_HQ, R_HKV},
         {INT64_C(1) << 32, INT64_C(1) << 31, INT64_C(1) << 31}},
        {"B, Hq, Nq",
         "2^20 each (lse bytes overflow)",
         FA_ERR_SHAPE,
         {R_B, R_HQ, R_NQ},
         {INT64_C(1) << 20, INT64_C(1) << 20, INT64_C(1) << 20}},
        {"Nk", "2^62 (Nk·stride_seq overflows)", FA_ERR_STRIDE, {R_NK, R_NONE, R_NONE}, {INT64_C(1) << 62}},
        {"Nk", "2^61 (byte offsets overflow)", FA_ERR_STRIDE, {R_NK, R_NONE, R_NONE}, {INT64_C(1) << 61}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char param[48];
        snprintf(param, sizeof param, "(sizes) %s", cases[i].param);
        ee_case *c = ee_add(t, call, param, cases[i].value, cases[i].want, EE_OP_ROLES);
        /* the first role's size, as q, k or v carries it */
        static const char *const role_names[7] = {"q.batch", "q.heads", "k.heads", "q.seq",
                                                  "k.seq",   "q.dim",   "v.dim"};
        snprintf(c->names, sizeof c->names, "%s", role_names[cases[i].role[0]]);
        c->ti = cases[i].role[0];
        c->field = cases[i].role[1];
        c->mode = cases[i].role[2];
        for (int k = 0; k < 3; k++) c->i[k] = cases[i].x[k];
    }
}

static void add_packed(ee_table *t, ee_call call)
{
    static const char *const fwd[] = {"out sharing v's last column of each row", "out on q's columns",
                                      "out's last head wrapping onto q's columns of the next row"};
    static const char *const bwd[] = {"dk sharing dq's last column of each row",
                                      "dv wrapping onto q's first column of the next row",
                                      "dq on k's and v's columns", "dk with another row width"};
    static const char *const bwd_moved[] = {"dk", "dv", "dq", "dk"}; /* the view each case misplaces */
    int n = call == EE_FORWARD ? 3 : 4;
    for (int m = 1; m <= n; m++) {
        const char *value = call == EE_FORWARD ? fwd[m - 1] : bwd[m - 1];
        ee_case *c = ee_add(t, call, "(row-interleaved packed views)", value, FA_ERR_ALIAS, EE_OP_PACKED);
        c->mode = m;
        snprintf(c->names, sizeof c->names, "%s", call == EE_FORWARD ? "out" : bwd_moved[m - 1]);
    }
}

/* ---- the dtype contract (flashattn.h, fa_forward): q's group, k's group, the bias -------- */

static const char *dtype_text(int x)
{
    static const char *const name[7] = {"f32", "f64", "bf16", "f16", "i8", "f8e4m3", "f8e5m2"};
    return x >= 0 && x < 7 ? name[x] : "7 (unknown)";
}

/* A call whose q group (q, out, dout, dq) is q_dt, k group (k, v, dk, dv) k_dt and bias the
 * accumulation type; the caller then breaks what the case names. */
static ee_case *dtype_case(ee_table *t, ee_call call, const char *param, const char *value, int q_dt,
                           int k_dt)
{
    ee_case *c = ee_add(t, call, param, value, FA_ERR_DTYPE, EE_OP_DTYPES);
    static const int k_group[EE_NT] = {0, 1, 1, 0, 0, 0, 1, 1};
    for (int i = 0; i < EE_NT; i++) c->dt[i] = k_group[i] ? k_dt : q_dt;
    c->dt[EE_NT] = q_dt == FA_F64 ? FA_F64 : FA_F32;
    return c;
}

/* Rows for the dtypes of one call: (q, k) pairs the contract refuses, with every group consistent;
 * over each valid pair, one tensor of a group off its leader's dtype, and the bias off the
 * accumulation type; two tensors off at once, where the first in the documented order (the pair,
 * then v, out, dout, dq, dk, dv, then the bias) must be the one named. Each names what the
 * contract says: the pair both q and k, a tensor itself and its leader, the bias itself and q. */
static void add_dtype_mixes(ee_table *t, ee_call call)
{
    static const int refused_pairs[][2] = {{FA_BF16, FA_F16}, {FA_F16, FA_BF16}, {FA_F16, FA_F32},
                                           {FA_BF16, FA_F32}, {FA_F64, FA_BF16}, {FA_F64, FA_F16},
                                           {FA_BF16, FA_F64}, {FA_F16, FA_F64}};
    static const int valid_pairs[][2] = {
        {FA_BF16, FA_BF16}, {FA_F16, FA_F16}, {FA_F32, FA_BF16}, {FA_F32, FA_F16}};
    char value[96], param[48];
    ee_case *c;
    for (size_t i = 0; i < sizeof refused_pairs / sizeof *refused_pairs; i++) {
        const int q = refused_pairs[i][0], k = refused_pairs[i][1];
        snprintf(value, sizeof value, "q group %s, k group %s", dtype_text(q), dtype_text(k));
        c = dtype_case(t, call, "(q->dtype, k->dtype)", value, q, k);
        snprintf(c->names, sizeof c->names, "k.dtype q.dtype");
    }
    const int n_slots = call == EE_FORWARD ? 4 : EE_NT;
    for (size_t i = 0; i < sizeof valid_pairs / sizeof *valid_pairs; i++) {
        const int q = valid_pairs[i][0], k = valid_pairs[i][1];
        for (int s = 0; s < n_slots; s++) {
            if (s == EE_Q || s == EE_K) continue; /* the leaders: the pair rows above */
            const int own = s == EE_V || s == EE_DK || s == EE_DV ? k : q;
            /* f32 where the group is half (the plain mistake), or the other half type; for f32 q
             * over a half k, the half type on q's side */
            int wrong[2] = {own == FA_F32 ? k : FA_F32, own == FA_BF16 ? FA_F16 : FA_BF16};
            /* the forward's out, and the backward's dq (with dk and dv), may be f32 under half
             * inputs (partial results): f64 is the mistake; f32 dq alone: the rows after the loop */
            if (own != FA_F32 && ((call == EE_FORWARD && s == EE_OUT) || (call == EE_BACKWARD && s == EE_DQ)))
                wrong[0] = FA_F64;
            for (int w = 0; w < 2; w++) {
                if (wrong[w] == own || (w == 1 && wrong[1] == wrong[0])) continue;
                snprintf(param, sizeof param, "%s->dtype", slot_name[s]);
                snprintf(value, sizeof value, "%s, with q group %s, k group %s", dtype_text(wrong[w]),
                         dtype_text(q), dtype_text(k));
                c = dtype_case(t, call, param, value, q, k);
                c->dt[s] = wrong[w];
                snprintf(c->names, sizeof c->names, "%s.dtype %s", slot_name[s], dtype_leader(s));
            }
        }
        /* the bias: q's own dtype (the rule before half precision), or f64 */
        const int bias_wrong[2] = {q == FA_F32 ? k : q, FA_F64};
        for (int w = 0; w < 2; w++) {
            snprintf(value, sizeof value, "%s, with q group %s, k group %s", dtype_text(bias_wrong[w]),
                     dtype_text(q), dtype_text(k));
            c = dtype_case(t, call, "p->bias->dtype", value, q, k);
            c->dt[EE_NT] = bias_wrong[w];
            snprintf(c->names, sizeof c->names, "p.bias.dtype q.dtype");
        }
    }
    /* two at once: the first in the documented order is named, the second is not */
    static const struct {
        int call_min; /* 0: both calls; 1: fa_backward only */
        int q, k;
        int s1, d1, s2, d2; /* slot EE_NT: the bias */
        const char *names, *not_named;
    } two[] = {
        {0, FA_BF16, FA_F16, EE_V, FA_F32, -1, 0, "k.dtype q.dtype", "v.dtype"},
        {0, FA_F32, FA_BF16, EE_V, FA_F16, EE_OUT, FA_BF16, "v.dtype k.dtype", "out.dtype"},
        {0, FA_BF16, FA_BF16, EE_OUT, FA_F64, EE_NT, FA_BF16, "out.dtype q.dtype", "p.bias.dtype"},
        {1, FA_F16, FA_F16, EE_OUT, FA_F32, EE_DOUT, FA_F32, "out.dtype q.dtype", "dout.dtype"},
        {1, FA_F32, FA_F16, EE_DOUT, FA_F16, EE_DQ, FA_F16, "dout.dtype q.dtype", "dq.dtype"},
        {1, FA_F32, FA_BF16, EE_DQ, FA_BF16, EE_DK, FA_F32, "dq.dtype q.dtype", "dk.dtype"},
        {1, FA_BF16, FA_BF16, EE_DK, FA_F16, EE_DV, FA_F32, "dk.dtype k.dtype", "dv.dtype"},
        {1, FA_F32, FA_F16, EE_DV, FA_F32, EE_NT, FA_F16, "dv.dtype k.dtype", "p.bias.dtype"},
        {1, FA_BF16, FA_F16, EE_DV, 7, -1, 0, "dv.dtype", "q.dtype"}, /* unknown before the pair */
        /* f32 dq under half inputs asks for f32 partial gradients: dk and dv must follow it */
        {1, FA_BF16, FA_BF16, EE_DQ, FA_F32, -1, 0, "dk.dtype dq.dtype", "dv.dtype"},
        {1, FA_F16, FA_F16, EE_DQ, FA_F32, EE_DK, FA_F32, "dv.dtype dq.dtype", "dk.dtype"},
    };
    for (size_t i = 0; i < sizeof two / sizeof *two; i++) {
        if (two[i].call_min > (int)call) continue;
        const char *what1 = two[i].s1 == EE_NT ? "bias" : slot_name[two[i].s1];
        if (two[i].s2 < 0)
            snprintf(value, sizeof value, "q group %s, k group %s; %s %s", dtype_text(two[i].q),
                     dtype_text(two[i].k), what1, dtype_text(two[i].d1));
        else
            snprintf(value, sizeof value, "q group %s, k group %s; %s %s, %s %s", dtype_text(two[i].q),
                     dtype_text(two[i].k), what1, dtype_text(two[i].d1),
                     two[i].s2 == EE_NT ? "bias" : slot_name[two[i].s2], dtype_text(two[i].d2));
        c = dtype_case(t, call, "(two dtypes off)", value, two[i].q, two[i].k);
        c->dt[two[i].s1] = two[i].d1;
        if (two[i].s2 >= 0) c->dt[two[i].s2] = two[i].d2;
        snprintf(c->names, sizeof c->names, "%s", two[i].names);
        snprintf(c->not_named, sizeof c->not_named, "%s", two[i].not_named);
    }
}

static void add_helpers(ee_table *t)
{
    static const struct {
        int arg;
        const char *name;
        int64_t x;
        fa_status want;
    } cases[] = {
        {0, "NULL", 0, FA_ERR_NULL},
        {1, "7 (past the last)", 7, FA_ERR_DTYPE},
        {1, "-1", -1, FA_ERR_DTYPE},
        {2, "-1", -1, FA_ERR_SHAPE},
        {2, "INT64_MIN", INT64_MIN, FA_ERR_SHAPE},
        {2, "2^62 (B·Hq·Nq overflows)", INT64_C(1) << 62, FA_ERR_SHAPE},
        {3, "-1", -1, FA_ERR_SHAPE},
        {3, "INT64_MIN", INT64_MIN, FA_ERR_SHAPE},
        {3, "2^61 (h·s·d overflows)", INT64_C(1) << 61, FA_ERR_SHAPE},
        {4, "-1", -1, FA_ERR_SHAPE},
        {4, "INT64_MIN", INT64_MIN, FA_ERR_SHAPE},
        {4, "2^62 (h·s·d overflows)", INT64_C(1) << 62, FA_ERR_STRIDE},
        {5, "-1", -1, FA_ERR_SHAPE},
        {5, "FA_MAX_HEAD_DIM + 1", FA_MAX_HEAD_DIM + 1, FA_ERR_SHAPE},
        {5, "2^62 (h·s·d overflows)", INT64_C(1) << 62, FA_ERR_SHAPE},
    };
    static const char *const arg_name[6] = {"data", "t", "b", "h", "s", "d"};
    static const char *const arg_role[6] = {
        "of q", "of q", "of every view", "of q and out (Hq)", "of k and v (Nk)", "of q and k (D)"};
    /* what the diagnostic names: the field the argument sized ("k" alone for Nk = 2^62, whose
     * views carry the negative strides the header promises) */
    static const char *const arg_names[6] = {"q.data", "q.dtype", "q.batch", "q.heads", "k", "q.dim"};
    for (int bshd = 0; bshd < 2; bshd++)
        for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
            char param[48], value[64];
            snprintf(param, sizeof param, "via fa_tensor_%s(%s)", bshd ? "bshd" : "bhsd",
                     arg_name[cases[i].arg]);
            snprintf(value, sizeof value, "%s, %s", cases[i].name, arg_role[cases[i].arg]);
            ee_case *c = ee_add(t, EE_FORWARD, param, value, cases[i].want, EE_OP_HELPER);
            snprintf(c->names, sizeof c->names, "%s", arg_names[cases[i].arg]);
            c->ti = bshd;
            c->field = cases[i].arg;
            c->i[0] = cases[i].x;
        }
}

void ee_build_table(ee_table *t)
{
    ee_case *c;
    memset(t, 0, sizeof *t);
    for (int call = 0; call < 2; call++) {
        add_params(t, (ee_call)call);
        for (int ti = 0; ti < (call == EE_FORWARD ? 4 : EE_NT); ti++) add_tensor_fields(t, (ee_call)call, ti);
        if (call == EE_BACKWARD) ee_add(t, (ee_call)call, "lse", "NULL", FA_ERR_NULL, EE_OP_NULL_LSE);
        c = ee_add(t, (ee_call)call, "lse", "64 bytes below the top of the address space (its range wraps)",
                   FA_ERR_STRIDE, EE_OP_DATA_TOP);
        c->ti = EE_LSE;
        c->i[0] = 64;
        add_tensor_fields(t, (ee_call)call, EE_BIAS);
        if (call == EE_BACKWARD) { /* dbias: an output of the bias's shape and type, which needs the bias */
            add_tensor_fields(t, (ee_call)call, EE_DBIAS);
            c = ee_add(t, (ee_call)call, "p->bias", "NULL with p->dbias set", FA_ERR_NULL, EE_OP_NULL_BIAS);
            snprintf(c->names, sizeof c->names, "p.bias p.dbias");
        }
        add_head_arrays(t, (ee_call)call);
        add_aliases(t, (ee_call)call);
        add_shared_sizes(t, (ee_call)call);
        add_packed(t, (ee_call)call);
        add_dtype_mixes(t, (ee_call)call);
    }
    add_helpers(t);
    ee_add_struct_cases(t);
    ee_add_seqs_cases(t);
    ee_add_merge_cases(t);
    ee_add_quant_cases(t);
    ee_add_composed_cases(t);
    ee_add_convert_cases(t);
}

void ee_table_free(ee_table *t)
{
    free(t->v);
    memset(t, 0, sizeof *t);
}

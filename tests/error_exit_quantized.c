/* SPDX-License-Identifier: BSD-3-Clause */
/* The error-exit fixture's quantized KV caches (include/flashattn.h: FA_I8, FA_F8_E4M3, FA_F8_E5M2
 * for k and v under f32 q and out, with the row scales p.k_scale and p.v_scale); see error_exit.h.
 *
 * A quantized case starts from the world's valid call (every modifier in use) with k, v, dk and dv
 * of one quantized type and both scales pointing at f32 views shaped like k and v, [B][Hkv][N][1],
 * in the pool's EE_KSCALE and EE_VSCALE regions (ee_quant_start); on a batch of sequences the
 * scales follow k's layout (packed token axis, or the pool of pages). Then it breaks one thing. The
 * rows are those src/api/validate.c and view_checks.c have for the new fields, each with the
 * status and the argument the header documents:
 *   NULL         a scale pointer missing under a quantized k (k_scale, v_scale, both), a scale's
 *                data NULL;
 *   ARG          a scale given with a k that is not quantized (f32, f64, a bf16 or f16 cache);
 *   DTYPE        q or out quantized, q of any other type over a quantized k, v (or dk, dv) off
 *                k's type, a quantized bias, a scale not f32 (also quantized, also unknown);
 *                fa_merge of quantized parts;
 *   SHAPE        a scale's batch, heads or seq neither k's (v's) nor 1, its dim not 1, a negative
 *                size; on packed and paged keys the same against k's token axis or page pool;
 *                D or Dv of FA_MAX_HEAD_DIM + 1 over a quantized cache;
 *   STRIDE       a scale's negative or overflowing strides, misaligned or wrapping data;
 *   ALIAS        out, lse (forward), dq, dsinks (backward) over a scale (inputs may overlap
 *                inputs: the valid calls below put scales over k and over each other);
 *   UNSUPPORTED  the backward of a quantized cache;
 * and, where two are wrong at once, the first in the documented order. Every row runs on f32
 * (a quantized cache has f32 queries) but the ARG rows of a float k and the fa_merge rows, which
 * hold for f64 too. ee_quant_check_valid holds the other side: every type, layout and broadcast
 * of the scales succeeds, and so do head dims of FA_MAX_HEAD_DIM with v a view of k's first 512
 * dims (MLA). */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "error_exit.h"

static const fa_dtype qtypes[3] = {FA_I8, FA_F8_E4M3, FA_F8_E5M2};

static const char *qname(int t)
{
    return t == FA_I8 ? "i8" : t == FA_F8_E4M3 ? "f8e4m3" : t == FA_F8_E5M2 ? "f8e5m2" : "?";
}

static int quantized(int t)
{
    return t == FA_I8 || t == FA_F8_E4M3 || t == FA_F8_E5M2;
}

enum {
    QOP_NONE = EE_OP_QUANT, /* the start alone (scales with a float k; the quantized backward) */
    QOP_SCALE_NULL,         /* p.k_scale (field 0), p.v_scale (1) or both (2) NULL */
    QOP_HEAD_DIM,           /* D (field 0: q, k, dq, dk) or Dv (1: v, out, dout, dv) = i[0] */
    QOP_TWO                 /* two problems at once: two_edits[mode] */
};

void ee_quant_start(const ee_case *c, const ee_world *w, ee_args *a)
{
    (void)w;
    static const int k_group[4] = {EE_K, EE_V, EE_DK, EE_DV};
    if (c->kv_dt)
        for (int i = 0; i < 4; i++) a->t[k_group[i]].dtype = (fa_dtype)c->kv_dt;
    /* one scale per row of the layout's k and v (their regions hold 1024 floats: every layout fits) */
    const fa_tensor *k = &a->t[EE_K], *v = &a->t[EE_V];
    a->k_scale = fa_tensor_bhsd(a->k_scale.data, FA_F32, k->batch, k->heads, k->seq, 1);
    a->v_scale = fa_tensor_bhsd(a->v_scale.data, FA_F32, v->batch, v->heads, v->seq, 1);
    if (c->scales & 1) a->p.k_scale = &a->k_scale;
    if (c->scales & 2) a->p.v_scale = &a->v_scale;
}

/* Two problems of different classes, or of one class in two arguments: the refusal names the
 * first in the documented order (names) and not the second (not_named). */
static const struct {
    int call; /* EE_FORWARD or EE_BACKWARD */
    const char *value;
    fa_status want;
    const char *names, *not_named;
} two_edits[] = {
    {EE_FORWARD, "p->k_scale NULL and v.dtype f32", FA_ERR_NULL, "p.k_scale", "v.dtype"},
    {EE_FORWARD, "both scales NULL", FA_ERR_NULL, "p.k_scale", "p.v_scale"},
    {EE_FORWARD, "given with an f32 k, and out.dtype bf16", FA_ERR_ARG, "p.k_scale", "out.dtype"},
    {EE_FORWARD, "p->k_scale->dtype f64 and its dim 2", FA_ERR_DTYPE, "p.k_scale.dtype", "p.k_scale.dim"},
    {EE_FORWARD, "p->k_scale->dim 2 and out.stride_seq -1", FA_ERR_SHAPE, "p.k_scale.dim", "out.stride_seq"},
    {EE_FORWARD, "p->k_scale->stride_seq -1 and out over p->v_scale", FA_ERR_STRIDE, "p.k_scale.stride_seq",
     "p.v_scale"},
    {EE_BACKWARD, "p->v_scale NULL (quantized backward)", FA_ERR_NULL, "p.v_scale", NULL},
    {EE_BACKWARD, "dq over p->k_scale (quantized backward)", FA_ERR_ALIAS, "dq p.k_scale", NULL},
};

static void apply_two(int mode, ee_args *a)
{
    switch (mode) {
    case 0:
        a->p.k_scale = NULL;
        a->t[EE_V].dtype = FA_F32;
        break;
    case 1: a->p.k_scale = a->p.v_scale = NULL; break;
    case 2: a->t[EE_OUT].dtype = FA_BF16; break; /* the start gave scales to the world's f32 k */
    case 3:
        a->k_scale.dtype = FA_F64;
        a->k_scale.dim = 2;
        break;
    case 4:
        a->k_scale.dim = 2;
        a->t[EE_OUT].stride_seq = -1;
        break;
    case 5:
        a->k_scale.stride_seq = -1;
        a->t[EE_OUT].data = a->v_scale.data;
        break;
    case 6: a->p.v_scale = NULL; break;
    case 7: a->t[EE_DQ].data = a->k_scale.data; break;
    }
}

void ee_apply_quant(const ee_case *c, const ee_world *w, ee_args *a)
{
    (void)w;
    switch (c->op) {
    case QOP_NONE: break;
    case QOP_SCALE_NULL:
        if (c->field != 1) a->p.k_scale = NULL;
        if (c->field != 0) a->p.v_scale = NULL;
        break;
    case QOP_HEAD_DIM: {
        static const int members[2][4] = {{EE_Q, EE_K, EE_DQ, EE_DK}, {EE_V, EE_OUT, EE_DOUT, EE_DV}};
        for (int i = 0; i < 4; i++) a->t[members[c->field][i]].dim = c->i[0];
        break;
    }
    case QOP_TWO: apply_two(c->mode, a); break;
    }
}

/* ---- the cases ------------------------------------------------------------------------------ */

static const char *const layout_text[EE_LAYOUTS] = {"dense", "packed", "KV cache", "paged"};

/* A case that starts from the quantized call of type qt (0: the world's dtype) with `scales` set,
 * on `layout`; f32 only unless the case says otherwise. */
static ee_case *qcase(ee_table *t, ee_call call, int qt, int scales, int layout, const char *param,
                      const char *value, fa_status want, int op)
{
    char v[192]; /* value and its type and layout; ee_add keeps what fits */
    snprintf(v, sizeof v, "%s [%s, %s]", value, qt ? qname(qt) : "float k", layout_text[layout]);
    ee_case *c = ee_add(t, call, param, v, want, op);
    c->kv_dt = qt;
    c->scales = scales;
    c->layout = layout;
    c->f32_only = 1;
    return c;
}

static void add_presence(ee_table *t, ee_call call)
{
    ee_case *c;
    for (int q = 0; q < 3; q++) {
        const int qt = qtypes[q];
        qcase(t, call, qt, 3, EE_DENSE, "p->k_scale", "NULL", FA_ERR_NULL, QOP_SCALE_NULL)->field = 0;
        qcase(t, call, qt, 3, EE_DENSE, "p->v_scale", "NULL", FA_ERR_NULL, QOP_SCALE_NULL)->field = 1;
        for (int s = 0; s < 2; s++) {
            c = qcase(t, call, qt, 3, EE_DENSE, s ? "p->v_scale->data" : "p->k_scale->data", "NULL",
                      FA_ERR_NULL, EE_OP_NULL_DATA);
            c->ti = s ? EE_VSCALE : EE_KSCALE;
        }
    }
    /* scales given where k is not quantized: refused, not ignored. With the world's k (f32 or f64:
     * both worlds) and with f32 q over a half-precision cache. */
    static const struct {
        const char *param;
        int scales;
        const char *names, *not_named;
    } given[] = {{"p->k_scale", 1, "p.k_scale", ""},
                 {"p->v_scale", 2, "p.v_scale", ""},
                 {"(p->k_scale, p->v_scale)", 3, "p.k_scale", "p.v_scale"}};
    for (size_t i = 0; i < sizeof given / sizeof *given; i++) {
        c = qcase(t, call, 0, given[i].scales, EE_DENSE, given[i].param, "valid, with a float k", FA_ERR_ARG,
                  QOP_NONE);
        c->f32_only = 0;
        snprintf(c->names, sizeof c->names, "%s", given[i].names);
        snprintf(c->not_named, sizeof c->not_named, "%s", given[i].not_named);
    }
    for (int h = 0; h < 2; h++) {
        c = qcase(t, call, 0, 3, EE_DENSE, "(p->k_scale, p->v_scale)",
                  h ? "valid, with f32 q over an f16 k" : "valid, with f32 q over a bf16 k", FA_ERR_ARG,
                  EE_OP_DTYPES);
        for (int i = 0; i < EE_NT; i++)
            c->dt[i] = i == EE_K || i == EE_V || i == EE_DK || i == EE_DV ? (h ? FA_F16 : FA_BF16) : FA_F32;
        c->dt[EE_NT] = FA_F32;
        snprintf(c->names, sizeof c->names, "p.k_scale");
    }
}

/* A dtype row: q's group (q, out, dout, dq) q_dt, k's group (k, v, dk, dv) k_dt, the bias the
 * accumulation type; then slot s (-1: none) gets dtype x. Scales are given where k_dt is
 * quantized (and only there: a float k with scales would be the ARG rows above). */
static void dtype_row(ee_table *t, ee_call call, int q_dt, int k_dt, int s, int x, const char *names)
{
    static const char *const text[4] = {"f32", "f64", "bf16", "f16"};
    const char *qs = quantized(q_dt) ? qname(q_dt) : text[q_dt],
               *ks = quantized(k_dt) ? qname(k_dt) : text[k_dt];
    char param[48], value[96];
    if (s < 0) {
        snprintf(param, sizeof param, "(q->dtype, k->dtype)");
        snprintf(value, sizeof value, "q group %s, k group %s", qs, ks);
    } else {
        snprintf(param, sizeof param, "%s->dtype", s == EE_NT ? "p->bias" : ee_slot_name(s));
        snprintf(value, sizeof value, "%s, with q group %s, k group %s", quantized(x) ? qname(x) : text[x],
                 qs, ks);
    }
    ee_case *c = qcase(t, call, quantized(k_dt) ? k_dt : 0, quantized(k_dt) ? 3 : 0, EE_DENSE, param, value,
                       FA_ERR_DTYPE, EE_OP_DTYPES);
    for (int i = 0; i < EE_NT; i++)
        c->dt[i] = i == EE_K || i == EE_V || i == EE_DK || i == EE_DV ? k_dt : q_dt;
    c->dt[EE_NT] = q_dt == FA_F64 ? FA_F64 : FA_F32;
    if (s >= 0) c->dt[s] = x;
    snprintf(c->names, sizeof c->names, "%s", names);
}

static void add_dtypes(ee_table *t, ee_call call)
{
    ee_case *c;
    for (int q = 0; q < 3; q++) {
        const int qt = qtypes[q], other = qtypes[(q + 1) % 3];
        /* the pair: quantized q, or a q other than f32 over a quantized k */
        dtype_row(t, call, qt, qt, -1, 0, "k.dtype q.dtype");
        dtype_row(t, call, FA_F64, qt, -1, 0, "k.dtype q.dtype");
        dtype_row(t, call, FA_BF16, qt, -1, 0, "k.dtype q.dtype");
        dtype_row(t, call, FA_F16, qt, -1, 0, "k.dtype q.dtype");
        /* a view off its group's leader */
        dtype_row(t, call, FA_F32, qt, EE_V, other, "v.dtype k.dtype");
        dtype_row(t, call, FA_F32, qt, EE_V, FA_F32, "v.dtype k.dtype");
        dtype_row(t, call, FA_F32, qt, EE_OUT, qt, "out.dtype q.dtype");
        dtype_row(t, call, FA_F32, qt, EE_NT, qt, "p.bias.dtype q.dtype");
        if (call == EE_BACKWARD) {
            dtype_row(t, call, FA_F32, qt, EE_DOUT, qt, "dout.dtype q.dtype");
            dtype_row(t, call, FA_F32, qt, EE_DQ, qt, "dq.dtype q.dtype");
            dtype_row(t, call, FA_F32, qt, EE_DK, FA_F32, "dk.dtype k.dtype");
            dtype_row(t, call, FA_F32, qt, EE_DV, other, "dv.dtype k.dtype");
        }
        /* a quantized v under a float k (no scales: they would be refused first, FA_ERR_ARG) */
        dtype_row(t, call, FA_F32, FA_F32, EE_V, qt, "v.dtype k.dtype");
        /* the scales: the accumulation type, f32 */
        static const ee_named wrong[] = {
            {"f64", FA_F64}, {"bf16", FA_BF16}, {"f16", FA_F16}, {"7 (past the last)", 7}, {"-1", -1}};
        for (int s = 0; s < 2; s++) {
            const int slot = s ? EE_VSCALE : EE_KSCALE;
            const char *param = s ? "p->v_scale->dtype" : "p->k_scale->dtype";
            for (size_t i = 0; i < sizeof wrong / sizeof *wrong + 3; i++) {
                const int known = i < 3 || i >= sizeof wrong / sizeof *wrong;
                const int64_t x = i < sizeof wrong / sizeof *wrong ? wrong[i].x : qtypes[i - 5];
                char value[32];
                snprintf(value, sizeof value, "%s",
                         i < sizeof wrong / sizeof *wrong ? wrong[i].name : qname((int)x));
                c = qcase(t, call, qt, 3, EE_DENSE, param, value, FA_ERR_DTYPE, EE_OP_DTYPE);
                c->ti = slot;
                c->i[0] = x;
                /* an unknown value names the scale alone; a known one the accumulation type's q */
                snprintf(c->names, sizeof c->names, known ? "p.%s.dtype q.dtype" : "p.%s.dtype",
                         s ? "v_scale" : "k_scale");
            }
        }
    }
}

/* The scales' shape rule on the dense call, then against packed keys' token axis and a page pool. */
static void add_shapes(ee_table *t, ee_call call)
{
    static const ee_named sizes[] = {{"-1", -1},
                                     {"INT64_MIN", INT64_MIN},
                                     {"0 (k's not)", 0},
                                     {"+1 (neither k's nor 1)", EE_PLUS_ONE},
                                     {"INT64_MAX", INT64_MAX}};
    static const char *const field_name[4] = {"batch", "heads", "seq", "dim"};
    char param[48];
    int n = 0;
    for (int s = 0; s < 2; s++)
        for (int f = 0; f < 4; f++) {
            snprintf(param, sizeof param, "p->%s->%s", s ? "v_scale" : "k_scale", field_name[f]);
            const size_t extra = f == 2 ? 1 : f == 3 ? 1 : 0;
            for (size_t i = 0; i < sizeof sizes / sizeof *sizes + extra; i++) {
                /* seq: N - 1 is neither N nor 1; dim: k's head dim, as if shaped like k itself */
                const ee_named more =
                    f == 2 ? (ee_named){"N - 1", EE_MINUS_ONE} : (ee_named){"D (k's dim)", EE_DIM};
                const ee_named *v = i < sizeof sizes / sizeof *sizes ? &sizes[i] : &more;
                ee_case *c =
                    qcase(t, call, qtypes[n++ % 3], 3, EE_DENSE, param, v->name, FA_ERR_SHAPE, EE_OP_SIZE);
                c->ti = s ? EE_VSCALE : EE_KSCALE;
                c->field = f;
                c->i[0] = v->x;
            }
        }
    /* packed keys: k is [1][Hkv][12][D], the scales follow its token axis; paged keys: k is a
     * pool [5][Hkv][3][D] of pages of 3, the scales a pool of the pages' scales */
    static const struct {
        int layout, field;
        const char *value;
        int64_t x;
    } ragged[] = {
        {EE_SEQ_PACKED, 0, "2 (the sequences, not k's 1)", 2},
        {EE_SEQ_PACKED, 2, "k.seq - 1", EE_MINUS_ONE},
        {EE_SEQ_CACHE, 2, "k.seq + 1", EE_PLUS_ONE},
        {EE_SEQ_PAGED, 0, "2 (the sequences, not the pool's 5 pages)", 2},
        {EE_SEQ_PAGED, 0, "the pool's pages - 1", EE_MINUS_ONE},
        {EE_SEQ_PAGED, 0, "the pool's pages + 1", EE_PLUS_ONE},
        {EE_SEQ_PAGED, 2, "the page size + 1", EE_PLUS_ONE},
        {EE_SEQ_PAGED, 2, "9 (a sequence's capacity, not the page size)", 9},
    };
    for (int s = 0; s < 2; s++)
        for (size_t i = 0; i < sizeof ragged / sizeof *ragged; i++) {
            snprintf(param, sizeof param, "p->%s->%s", s ? "v_scale" : "k_scale",
                     field_name[ragged[i].field]);
            ee_case *c = qcase(t, call, qtypes[n++ % 3], 3, ragged[i].layout, param, ragged[i].value,
                               FA_ERR_SHAPE, EE_OP_SIZE);
            c->ti = s ? EE_VSCALE : EE_KSCALE;
            c->field = ragged[i].field;
            c->i[0] = ragged[i].x;
        }
    /* the head dims' bound holds over a quantized cache too */
    for (int f = 0; f < 2; f++) {
        ee_case *c = qcase(t, call, qtypes[n++ % 3], 3, EE_DENSE, f ? "(sizes) Dv" : "(sizes) D",
                           "FA_MAX_HEAD_DIM + 1", FA_ERR_SHAPE, QOP_HEAD_DIM);
        snprintf(c->names, sizeof c->names, f ? "v.dim" : "q.dim");
        c->field = f;
        c->i[0] = FA_MAX_HEAD_DIM + 1;
    }
}

static void add_strides(ee_table *t, ee_call call)
{
    static const ee_named misaligned[] = {{"1 byte past a float boundary", 1},
                                          {"2 bytes past a float boundary", EE_HALF_ELEM}};
    char param[48];
    int n = 0;
    for (int s = 0; s < 2; s++) {
        const char *scale = s ? "v_scale" : "k_scale";
        const int slot = s ? EE_VSCALE : EE_KSCALE;
        for (int f = 0; f < 3; f++) {
            snprintf(param, sizeof param, "p->%s->%s", scale, ee_stride_names[f]);
            for (size_t i = 0; i < sizeof ee_bad_strides / sizeof *ee_bad_strides; i++) {
                ee_case *c = qcase(t, call, qtypes[n++ % 3], 3, EE_DENSE, param, ee_bad_strides[i].name,
                                   FA_ERR_STRIDE, EE_OP_STRIDE);
                c->ti = slot;
                c->field = f;
                c->i[0] = ee_bad_strides[i].x;
                /* With dim 1 the batch term INT64_MAX fits on its own and the sum overflows at the
                 * heads term, which the diagnostic names (view_checks.c, fa_view_extent): the
                 * argument is still named, the field is not the one set. */
                if (f == 0 && ee_bad_strides[i].x == INT64_MAX)
                    snprintf(c->names, sizeof c->names, "p.%s", scale);
            }
        }
        snprintf(param, sizeof param, "p->%s->data", scale);
        for (size_t i = 0; i < sizeof misaligned / sizeof *misaligned; i++) {
            ee_case *c = qcase(t, call, qtypes[n++ % 3], 3, EE_DENSE, param, misaligned[i].name,
                               FA_ERR_STRIDE, EE_OP_MISALIGN);
            c->ti = slot;
            c->i[0] = misaligned[i].x;
        }
        ee_case *c = qcase(t, call, qtypes[n++ % 3], 3, EE_DENSE, param,
                           "64 bytes below the top of the address space (its range wraps)", FA_ERR_STRIDE,
                           EE_OP_DATA_TOP);
        c->ti = slot;
        c->i[0] = 64;
    }
}

/* The call's outputs over a scale: all of it, its first element, its last. */
static void add_aliases(ee_table *t, ee_call call)
{
    static const int fwd_out[2] = {EE_OUT, EE_LSE}, bwd_out[2] = {EE_DQ, EE_DSINKS};
    static const char *const mode_name[3] = {"on all of %s", "last element on %s's first",
                                             "first element on %s's last"};
    int n = 0;
    for (int o = 0; o < 2; o++)
        for (int s = 0; s < 2; s++)
            for (int m = 0; m < 3; m++) {
                const int moved = call == EE_FORWARD ? fwd_out[o] : bwd_out[o],
                          onto = s ? EE_VSCALE : EE_KSCALE;
                char value[64], both[64];
                snprintf(value, sizeof value, mode_name[m], ee_slot_name(onto));
                ee_case *c = qcase(t, call, qtypes[n++ % 3], 3, EE_DENSE, ee_slot_name(moved), value,
                                   FA_ERR_ALIAS, EE_OP_ALIAS);
                snprintf(both, sizeof both, "%s %s", ee_slot_name(moved), ee_slot_name(onto));
                ee_default_names(c->names, sizeof c->names, both);
                c->ti = moved;
                c->field = onto;
                c->mode = m;
            }
}

void ee_add_quant_cases(ee_table *t)
{
    ee_case *c;
    for (int call = 0; call < 2; call++) {
        add_presence(t, (ee_call)call);
        add_dtypes(t, (ee_call)call);
        add_shapes(t, (ee_call)call);
        add_strides(t, (ee_call)call);
        add_aliases(t, (ee_call)call);
    }
    /* valid, not available: the gradients of a quantized cache (its names: "a quantized k and v") */
    for (int q = 0; q < 3; q++)
        for (int layout = EE_DENSE; layout <= EE_SEQ_CACHE; layout++) {
            c = qcase(t, EE_BACKWARD, qtypes[q], 3, layout, "(k->dtype, v->dtype)", "quantized, valid scales",
                      FA_ERR_UNSUPPORTED, QOP_NONE);
            snprintf(c->names, sizeof c->names, "k v");
        }
    for (size_t i = 0; i < sizeof two_edits / sizeof *two_edits; i++) {
        const int float_k = two_edits[i].want == FA_ERR_ARG; /* the start: scales with the world's f32 k */
        c = qcase(t, (ee_call)two_edits[i].call, float_k ? 0 : qtypes[i % 3], 3, EE_DENSE, "(two problems)",
                  two_edits[i].value, two_edits[i].want, QOP_TWO);
        c->mode = (int)i;
        snprintf(c->names, sizeof c->names, "%s", two_edits[i].names);
        if (two_edits[i].not_named) snprintf(c->not_named, sizeof c->not_named, "%s", two_edits[i].not_named);
    }
    /* fa_merge takes no quantized part or out (they are a KV cache's storage only): both worlds */
    const int merge_views[3] = {EE_OUTS0, EE_OUTS0 + EE_PARTS - 1, EE_OUT};
    for (int v = 0; v < 3; v++)
        for (int q = 0; q < 3; q++) {
            char param[32];
            snprintf(param, sizeof param, "%s->dtype", ee_slot_name(merge_views[v]));
            c = ee_add(t, EE_MERGE, param, qname(qtypes[q]), FA_ERR_DTYPE, EE_OP_DTYPE);
            c->ti = merge_views[v];
            c->i[0] = qtypes[q];
        }
}

/* ---- the valid quantized calls -------------------------------------------------------------- */

static void expect_ok(ee_world *w, ee_args *a, ee_call call, const char *what)
{
    fa_status st = ee_call_run(call, a);
    cr_assert_eq(st, FA_OK, "the valid quantized %s, %s: status %d (%s)", ee_call_name(call), what, st,
                 fa_last_error());
    ee_world_restore(w);
}

/* One scale view of a given broadcast: bits 0, 1, 2 of sizes make batch, heads, seq 1; bits 0, 1,
 * 2 of zero give the same axes (at full size) stride 0; `far` puts 2^40 in the strides of the
 * size-1 axes (never used: element 0 is read whatever the stride). */
static void broadcast(fa_tensor *s, int sizes, int zero, int far)
{
    int64_t *size[3] = {&s->batch, &s->heads, &s->seq};
    for (int x = 0; x < 3; x++)
        if (sizes >> x & 1) *size[x] = 1;
    *s = fa_tensor_bhsd(s->data, FA_F32, s->batch, s->heads, s->seq, 1);
    int64_t *stride[3] = {&s->stride_batch, &s->stride_head, &s->stride_seq};
    for (int x = 0; x < 3; x++) {
        if (zero >> x & 1) *stride[x] = 0;
        if (far && *size[x] == 1) *stride[x] = INT64_C(1) << 40;
    }
}

/* D = Dv = FA_MAX_HEAD_DIM, and the MLA shape (D 576, v the first 512 dims of k: a view of the same
 * bytes), each over a cache of type kt (FA_F32 without scales, or quantized): two query heads, one
 * kv head, three keys, in the regions of q, k, out and the scales. */
static void max_head_dims(ee_world *w, fa_dtype kt)
{
    for (int mla = 0; mla < 2; mla++) {
        ee_args a;
        ee_valid_args(w, &a);
        a.p = (fa_params)FA_PARAMS_INIT;
        const int64_t d = FA_MAX_HEAD_DIM, dv = mla ? 512 : FA_MAX_HEAD_DIM;
        a.t[EE_Q] = fa_tensor_bhsd(ee_region(w, EE_Q, 0), FA_F32, 1, 2, 1, d);
        a.t[EE_K] = fa_tensor_bhsd(ee_region(w, EE_K, 0), kt, 1, 1, 3, d);
        a.t[EE_V] = a.t[EE_K]; /* the same bytes: inputs may overlap */
        a.t[EE_V].dim = dv;
        a.t[EE_OUT] = fa_tensor_bhsd(ee_region(w, EE_OUT, 0), FA_F32, 1, 2, 1, dv);
        if (kt != FA_F32) {
            a.k_scale = fa_tensor_bhsd(a.k_scale.data, FA_F32, 1, 1, 3, 1);
            a.p.k_scale = a.p.v_scale = &a.k_scale; /* one scale per key row for both */
        }
        expect_ok(w, &a, EE_FORWARD,
                  mla ? "D = 576, v a 512-dim view of k (MLA)" : "D = Dv = FA_MAX_HEAD_DIM");
    }
}

void ee_quant_check_valid(ee_world *w)
{
    ee_args a;
    char what[96];
    for (int q = 0; q < 3; q++) {
        ee_case start;
        memset(&start, 0, sizeof start);
        start.kv_dt = qtypes[q];
        start.scales = 3;
        for (int layout = EE_DENSE; layout < EE_LAYOUTS; layout++) {
            /* every broadcast of the scales by size, then by stride, and size-1 axes with strides
             * far past the pool; on each layout */
            for (int sizes = 0; sizes < 8; sizes++)
                for (int by_stride = 0; by_stride < 3; by_stride++) {
                    ee_valid_args(w, &a);
                    if (layout != EE_DENSE) ee_seqs_layout(w, &a, layout);
                    ee_quant_start(&start, w, &a);
                    broadcast(&a.k_scale, by_stride == 1 ? 0 : sizes, by_stride == 1 ? sizes : 0,
                              by_stride == 2);
                    broadcast(&a.v_scale, by_stride == 1 ? 0 : sizes, by_stride == 1 ? sizes : 0,
                              by_stride == 2);
                    snprintf(what, sizeof what, "%s, %s, scales broadcast %d by %s", qname(qtypes[q]),
                             layout_text[layout], sizes,
                             by_stride == 0   ? "size"
                             : by_stride == 1 ? "stride 0"
                                              : "size, far strides");
                    expect_ok(w, &a, EE_FORWARD, what);
                }
        }
        /* inputs overlap inputs: both scales one view; a scale over k's bytes, over q's */
        for (int over = 0; over < 3; over++) {
            ee_valid_args(w, &a);
            ee_quant_start(&start, w, &a);
            if (over == 0) a.p.v_scale = &a.k_scale;
            if (over == 1) a.k_scale.data = a.t[EE_K].data;
            if (over == 2) a.v_scale.data = a.t[EE_Q].data;
            snprintf(what, sizeof what, "%s, %s", qname(qtypes[q]),
                     over == 0   ? "one view for both scales"
                     : over == 1 ? "k_scale over k"
                                 : "v_scale over q");
            expect_ok(w, &a, EE_FORWARD, what);
        }
        max_head_dims(w, qtypes[q]);
    }
    max_head_dims(w, FA_F32);
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The error-exit fixture's ragged batches (fa_params.seqs) and fa_merge: their valid arguments and
 * their cases; see error_exit.h.
 *
 * Each batch of sequences starts valid with every array it can have: packed queries and keys
 * (cu_seqlens_q, cu_seqlens_k, seqused_k); a dense KV cache (seqused_k); dense queries over paged
 * keys (block_table, pages_per_seq, seqused_k, with an entry of -1 after the pages in use). Then
 * every field of fa_seqs, every element class of its arrays and the tensors' batch axes get the
 * values include/flashattn.h documents as bad (fa_seqs, fa_forward, fa_backward): offsets that do
 * not start at 0, decrease or end past the tensor; keys in use beyond the capacity or negative;
 * pages outside the pool or negative among the pages in use; a sequence count that disagrees with
 * the tensors; negative counts; a table whose size overflows; NULL arrays where the layout needs
 * them; misaligned or wrapping arrays; outputs over an array; a bias with sequences, paged keys in
 * the backward. fa_merge: every argument, every field of its views.
 *
 * A batch of sequences whose count no tensor pins (packed queries and keys) is not given a larger
 * count: the arrays would then have to hold more entries than the caller owns, and no library can
 * tell. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "error_exit.h"

#if defined(__SANITIZE_ADDRESS__)
#define EE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EE_ASAN 1
#endif
#endif
#ifdef EE_ASAN
#include <sanitizer/asan_interface.h>
#endif

/* Packed token axes, the pool of pages (pages of PAGE keys), and pages per sequence. */
enum { TQ = 12, TK = 12, POOL_PAGES = 5, PAGE = 3, PPS = 3 };
/* Each array in a slot of its own in the EE_SEQS region, far enough apart that no output view
 * placed over one array reaches another (so a refusal names the array the case aims at). */
#define ARRAY_SLOT ((int64_t)2048)

/* Sequence 0 has 5 query rows, sequence 1 has 6, and row 11 is no sequence's; keys 7 and 5, of
 * which 6 and 5 in use. */
static const int64_t packed_cu_q[EE_B + 1] = {0, 5, 11}, packed_cu_k[EE_B + 1] = {0, 7, 12};
static const int64_t packed_used[EE_B] = {6, 5}, packed_capacity[EE_B] = {7, 5};
/* A cache of EE_N keys per sequence, 4 and all in use. */
static const int64_t cache_used[EE_B] = {4, EE_N};
/* 5 and 9 keys in use of a capacity of PPS·PAGE = 9: two pages and three; -1 after the pages in
 * use (never read), pages shared by no two sequences. */
static const int64_t paged_used[EE_B] = {5, 9};
static const int32_t paged_table[EE_B * PPS] = {4, 1, -1, 0, 2, 3};

static const char *const layout_name[EE_LAYOUTS] = {"dense", "packed", "KV cache", "paged"};

/* The views shaped like q, k (keys of q's and k's head dim D or v's Dv). */
static const int q_like[4] = {EE_Q, EE_OUT, EE_DOUT, EE_DQ}, k_like[4] = {EE_K, EE_V, EE_DK, EE_DV};

static int64_t dim_of(int slot)
{
    return slot == EE_Q || slot == EE_DQ || slot == EE_K || slot == EE_DK ? EE_DIM : EE_DIM_V;
}

static unsigned char *array_slot(const ee_world *w, int which)
{
    return ee_region(w, EE_SEQS, 0) + which * ARRAY_SLOT;
}

/* Writes array `which` (0 cu_seqlens_q, 1 cu_seqlens_k, 2 seqused_k, 3 block_table) into its slot
 * of the pool and points the sequences at it. */
static void put_array(const ee_world *w, ee_args *a, int which, const void *values, int64_t n)
{
    size_t elem = which == 3 ? sizeof(int32_t) : sizeof(int64_t);
    unsigned char *at = array_slot(w, which);
    memcpy(at, values, (size_t)n * elem);
    ee_set_slot(a, EE_CU_Q + which, at);
    a->seqs_len[which] = n;
}

void ee_seqs_layout(const ee_world *w, ee_args *a, int layout)
{
    a->layout = layout;
    memset(a->seqs_len, 0, sizeof a->seqs_len);
    a->seqs = (fa_seqs)FA_SEQS_INIT;
    a->seqs.batch = EE_B;
    a->p.seqs = &a->seqs;
    if (layout == EE_SEQ_PACKED) {
        for (int i = 0; i < 4; i++) {
            a->t[q_like[i]] =
                fa_tensor_bhsd(ee_region(w, q_like[i], 0), w->dt, 1, EE_HQ, TQ, dim_of(q_like[i]));
            a->t[k_like[i]] =
                fa_tensor_bhsd(ee_region(w, k_like[i], 0), w->dt, 1, EE_HKV, TK, dim_of(k_like[i]));
        }
        put_array(w, a, 0, packed_cu_q, EE_B + 1);
        put_array(w, a, 1, packed_cu_k, EE_B + 1);
        put_array(w, a, 2, packed_used, EE_B);
    } else if (layout == EE_SEQ_CACHE) {
        put_array(w, a, 2, cache_used, EE_B);
    } else {
        for (int i = 0; i < 4; i++)
            a->t[k_like[i]] = fa_tensor_bhsd(ee_region(w, k_like[i], 0), w->dt, POOL_PAGES, EE_HKV, PAGE,
                                             dim_of(k_like[i]));
        put_array(w, a, 2, paged_used, EE_B);
        put_array(w, a, 3, paged_table, EE_B * PPS);
        a->seqs.pages_per_seq = PPS;
    }
    /* a bias with sequences is FA_ERR_UNSUPPORTED (a case of its own): the valid call has none;
     * one broadcast over everything but the keys fits every layout */
    a->p.bias = NULL;
    a->bias = fa_tensor_bhsd(ee_region(w, EE_BIAS, 0), w->dt, 1, 1, 1, a->t[EE_K].seq);
}

void ee_merge_args(const ee_world *w, ee_args *a)
{
    a->n = EE_PARTS;
    for (int k = 0; k < EE_PARTS; k++) {
        a->parts[k] = fa_tensor_bhsd(ee_region(w, EE_Q + k, 0), w->dt, EE_B, EE_HQ, EE_N, EE_DIM_V);
        a->part_lse[k] = ee_region(w, EE_DOUT + k, 0);
    }
    a->outs = a->parts;
    a->lses = a->part_lse;
}

void ee_poison_seqs(const ee_args *a, int poison)
{
#ifdef EE_ASAN
    if (!a->world || !a->pp || a->pp->seqs != &a->seqs) return;
    unsigned char *region = ee_region(a->world, EE_SEQS, 0);
    if (!poison) {
        ASAN_UNPOISON_MEMORY_REGION(region, 4 * ARRAY_SLOT);
        return;
    }
    const void *arrays[4] = {a->seqs.cu_seqlens_q, a->seqs.cu_seqlens_k, a->seqs.seqused_k,
                             a->seqs.block_table};
    for (int i = 0; i < 4; i++) { /* from each array's end to its slot's (addresses as integers: an
                                     array a case put at the top of the address space wraps) */
        uintptr_t base = (uintptr_t)region,
                  end = (uintptr_t)arrays[i] + (uintptr_t)a->seqs_len[i] * (i == 3 ? 4u : 8u);
        if (!arrays[i] || end < base || end >= base + 4 * ARRAY_SLOT) continue;
        uintptr_t slot_end = base + ((end - base) / ARRAY_SLOT + 1) * ARRAY_SLOT;
        ASAN_POISON_MEMORY_REGION((void *)end, (size_t)(slot_end - end));
    }
#else
    (void)a;
    (void)poison;
#endif
}

/* ---- operations ----------------------------------------------------------------------------- */

enum {
    OP_SEQS_VALID = EE_OP_RAGGED, /* the layout's valid call */
    OP_SEQS_BATCH,                /* p.seqs.batch = i[0] */
    OP_SEQS_PAGES,                /* p.seqs.pages_per_seq = i[0] */
    OP_SEQS_ELEM,                 /* element `field` of array slot ti = i[0] */
    OP_SLOT_NULL,                 /* the pointer of slot ti NULL (an array, a part's lse) */
    OP_SEQS_KEY_OFFSETS,          /* cu_seqlens_k given where the layout has none */
    OP_SEQS_MOVE,                 /* array slot ti moved i[0] bytes, its values with it */
    OP_SEQS_VIEWS,       /* size `field` of the q-like (mode 0), k-like (1) or v, dv (2) views = i[0] */
    OP_SEQS_HUGE_PAGES,  /* pages of i[0] keys, one per sequence; mode 1: seqused_k NULL */
    OP_SEQS_BIAS,        /* a valid bias with the sequences */
    OP_MERGE_N,          /* n = i[0] */
    OP_MERGE_NULL_ARRAY, /* outs (field 0) or lses (field 1) NULL */
    OP_MERGE_MANY,       /* EE_MANY_PARTS parts, the last of another shape */
    OP_MERGE_EVERY_DIM,  /* dim of every part and of out = i[0] */
    OP_MERGE_EVERY_DTYPE /* dtype of every part = i[0], of out = i[1] */
};
/* error_exit_quantized.c's operations start at EE_OP_QUANT: these must end before */
_Static_assert((int)OP_MERGE_EVERY_DTYPE < (int)EE_OP_QUANT,
               "the ragged operations run into the quantized ones");

static int64_t *size_of(fa_tensor *t, int f)
{
    return f == 0 ? &t->batch : f == 1 ? &t->heads : f == 2 ? &t->seq : &t->dim;
}

void ee_apply_ragged(const ee_case *c, const ee_world *w, ee_args *a)
{
    const int64_t x = c->i[0];
    switch (c->op) {
    case OP_SEQS_VALID: break;
    case OP_SEQS_BATCH: a->seqs.batch = x; break;
    case OP_SEQS_PAGES: a->seqs.pages_per_seq = x; break;
    case OP_SEQS_ELEM: {
        unsigned char *at = ee_slot_first(a, c->ti) + c->field * ee_slot_elem_bytes(w, c->ti);
        if (c->ti == EE_TABLE) {
            int32_t v = (int32_t)x;
            memcpy(at, &v, sizeof v);
        } else
            memcpy(at, &x, sizeof x);
        break;
    }
    case OP_SLOT_NULL: ee_set_slot(a, c->ti, NULL); break;
    case OP_SEQS_KEY_OFFSETS: {
        static const int64_t cu_k[EE_B + 1] = {0, 3, 6}; /* offsets that fit k's seq axis */
        put_array(w, a, 1, cu_k, EE_B + 1);
        break;
    }
    case OP_SEQS_MOVE: ee_move_array(w, a, c->ti, x); break;
    case OP_SEQS_VIEWS:
        for (int i = 0; i < 4; i++) {
            int slot = c->mode == 0 ? q_like[i] : c->mode == 1 ? k_like[i] : i < 2 ? (i ? EE_DV : EE_V) : -1;
            if (slot >= 0) *size_of(&a->t[slot], c->field) = x;
        }
        break;
    case OP_SEQS_HUGE_PAGES:
        for (int i = 0; i < 4; i++) a->t[k_like[i]].seq = x;
        a->seqs.pages_per_seq = 1;
        if (c->mode == 1) a->seqs.seqused_k = NULL;
        break;
    case OP_SEQS_BIAS: a->p.bias = &a->bias; break;
    case OP_MERGE_N: a->n = (int)x; break;
    case OP_MERGE_NULL_ARRAY:
        if (c->field == 0) a->outs = NULL;
        if (c->field == 1) a->lses = NULL;
        break;
    case OP_MERGE_MANY:
        a->n = EE_MANY_PARTS;
        a->outs = w->many_outs;
        a->lses = w->many_lses;
        break;
    case OP_MERGE_EVERY_DIM:
    case OP_MERGE_EVERY_DTYPE:
        for (int k = 0; k <= EE_PARTS; k++) {
            fa_tensor *t = k < EE_PARTS ? &a->parts[k] : &a->t[EE_OUT];
            if (c->op == OP_MERGE_EVERY_DIM)
                t->dim = x;
            else
                t->dtype = (fa_dtype)(k < EE_PARTS ? x : c->i[1]);
        }
        break;
    }
}

void ee_move_array(const ee_world *w, ee_args *a, int s, int64_t bytes)
{
    unsigned char *first = ee_slot_first(a, s);
    memmove(first + bytes, first, (size_t)(ee_slot_elems(a, s) * ee_slot_elem_bytes(w, s)));
    ee_set_slot(a, s, first + bytes);
}

/* ---- the sequences' cases ------------------------------------------------------------------- */

/* A case on `layout`; names: what fa_last_error() must name (NULL: the parameter). */
static ee_case *seqs_case(ee_table *t, ee_call call, int layout, const char *param, const char *value,
                          fa_status want, int op, const char *names)
{
    char v[128];
    snprintf(v, sizeof v, "%s [%s]", value, layout_name[layout]);
    ee_case *c = ee_add(t, call, param, v, want, op);
    c->layout = layout;
    if (names) snprintf(c->names, sizeof c->names, "%s", names);
    return c;
}

static void add_element(ee_table *t, ee_call call, int layout, int slot, int index, const char *value,
                        int64_t x, const char *names)
{
    static const char *const array_name[4] = {"cu_seqlens_q", "cu_seqlens_k", "seqused_k", "block_table"};
    char param[64], own[64];
    int which = slot - EE_CU_Q;
    if (slot == EE_TABLE)
        snprintf(param, sizeof param, "p->seqs->block_table[%d][%d]", index / PPS, index % PPS);
    else
        snprintf(param, sizeof param, "p->seqs->%s[%d]", array_name[which], index);
    snprintf(own, sizeof own, "p.seqs.%s", param + 9); /* the element itself, unless said otherwise */
    ee_case *c = seqs_case(t, call, layout, param, value, FA_ERR_SHAPE, OP_SEQS_ELEM, names ? names : own);
    c->ti = slot;
    c->field = index;
    c->i[0] = x;
}

/* The offsets of a packed axis of `total` rows, valid {0, mid, last}: each element class. */
static void add_offsets(ee_table *t, ee_call call, int slot, int64_t mid, int64_t last, int64_t total)
{
    const char *axis = slot == EE_CU_Q ? "cu_seqlens_q" : "cu_seqlens_k";
    const char *seq = slot == EE_CU_Q ? "q.seq" : "k.seq";
    char at2[40], past[64];
    snprintf(at2, sizeof at2, "p.seqs.%s[2]", axis);
    snprintf(past, sizeof past, "%s %s", at2, seq);
    const struct {
        int index;
        const char *value;
        int64_t x;
        const char *names; /* NULL: the element */
    } cases[] = {
        {0, "1 (offsets start at 0)", 1, NULL},
        {0, "-1", -1, NULL},
        {0, "INT64_MIN", INT64_MIN, NULL},
        {0, "INT64_MAX", INT64_MAX, NULL},
        {1, "-1 (below [0])", -1, NULL},
        {1, "INT64_MIN", INT64_MIN, NULL},
        {1, "last + 1 (above [2], within the tensor)", last + 1, at2},
        {1, "INT64_MAX", INT64_MAX, at2},
        {2, "mid - 1 (below [1])", mid - 1, NULL},
        {2, "INT64_MIN", INT64_MIN, NULL},
        {2, "rows + 1 (past the tensor)", total + 1, past},
        {2, "INT64_MAX", INT64_MAX, past},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        add_element(t, call, EE_SEQ_PACKED, slot, cases[i].index, cases[i].value, cases[i].x, cases[i].names);
}

/* seqused_k[b] of each layout: beyond its capacity, negative, the extremes. */
static void add_used(ee_table *t, ee_call call, int layout)
{
    for (int b = 0; b < EE_B; b++) {
        int64_t capacity = layout == EE_SEQ_PACKED  ? packed_capacity[b]
                           : layout == EE_SEQ_CACHE ? EE_N
                                                    : PPS * PAGE;
        add_element(t, call, layout, EE_USED, b, "its capacity + 1", capacity + 1, NULL);
        add_element(t, call, layout, EE_USED, b, "-1", -1, NULL);
        add_element(t, call, layout, EE_USED, b, "INT64_MIN", INT64_MIN, NULL);
        add_element(t, call, layout, EE_USED, b, "INT64_MAX", INT64_MAX, NULL);
    }
}

/* The arrays a layout has: misaligned, wrapping around the address space, under an output. */
static void add_array_pointers(ee_table *t, ee_call call, int layout)
{
    static const int have[EE_LAYOUTS][4] = {
        {0}, {EE_CU_Q, EE_CU_K, EE_USED, -1}, {EE_USED, -1}, {EE_USED, EE_TABLE, -1}};
    static const int fwd_out[] = {EE_OUT, EE_LSE}, bwd_out[] = {EE_DQ, EE_DK, EE_DV, EE_DSINKS};
    static const char *const mode_name[3] = {"on all of %s", "last element on %s's first",
                                             "first element on %s's last"};
    for (int i = 0; i < 4 && have[layout][i] >= 0 && have[layout][i] != 0; i++) {
        const int slot = have[layout][i];
        char names[48];
        ee_default_names(names, sizeof names, ee_slot_name(slot));
        const int64_t skew[2] = {1, slot == EE_TABLE ? 2 : 4};
        for (int k = 0; k < 2; k++) {
            char value[48];
            snprintf(value, sizeof value, "%lld bytes past its element boundary", (long long)skew[k]);
            ee_case *c =
                seqs_case(t, call, layout, ee_slot_name(slot), value, FA_ERR_STRIDE, OP_SEQS_MOVE, names);
            c->ti = slot;
            c->i[0] = skew[k];
        }
        ee_case *c =
            seqs_case(t, call, layout, ee_slot_name(slot), "8 bytes below the top of the address space",
                      FA_ERR_STRIDE, EE_OP_DATA_TOP, names);
        c->ti = slot;
        c->i[0] = 8;
        c->isolate =
            1; /* a library that reads it first takes a SIGSEGV: a child process's, not the table's */
        const int *outs = call == EE_FORWARD ? fwd_out : bwd_out;
        for (int o = 0; o < (call == EE_FORWARD ? 2 : 4); o++)
            for (int m = 0; m < 3; m++) {
                char value[64], both[64];
                snprintf(value, sizeof value, mode_name[m], names);
                char pair[64];
                snprintf(pair, sizeof pair, "%s %s", ee_slot_name(outs[o]), ee_slot_name(slot));
                ee_default_names(both, sizeof both, pair);
                c = seqs_case(t, call, layout, ee_slot_name(outs[o]), value, FA_ERR_ALIAS, EE_OP_ALIAS, both);
                char out_name[24]; /* the old phrase "dq overlaps p.seqs.cu_seqlens_k", as written */
                ee_default_names(out_name, sizeof out_name, ee_slot_name(outs[o]));
                snprintf(c->phrase, sizeof c->phrase, "%.20s overlaps %.32s", out_name, names);
                c->ti = outs[o];
                c->field = slot;
                c->mode = m;
            }
    }
}

static void add_seqs_call(ee_table *t, ee_call call)
{
    ee_case *c;
    /* p.seqs.batch: negative everywhere; where the queries' batch axis pins it (one per sequence),
     * every other value. (Packed queries and keys: see the top of the file.) */
    for (int layout = EE_SEQ_PACKED; layout < EE_LAYOUTS; layout++) {
        static const ee_named negative[] = {{"-1", -1}, {"INT64_MIN", INT64_MIN}};
        for (size_t i = 0; i < 2; i++)
            seqs_case(t, call, layout, "p->seqs->batch", negative[i].name, FA_ERR_ARG, OP_SEQS_BATCH, NULL)
                ->i[0] = negative[i].x;
    }
    for (int layout = EE_SEQ_CACHE; layout <= EE_SEQ_PAGED; layout++) {
        static const ee_named other[] = {{"0 (q.batch 2)", 0},
                                         {"1 (q.batch 2)", 1},
                                         {"3 (q.batch 2)", 3},
                                         {"2^62", INT64_C(1) << 62},
                                         {"INT64_MAX", INT64_MAX}};
        for (size_t i = 0; i < sizeof other / sizeof *other; i++)
            seqs_case(t, call, layout, "p->seqs->batch", other[i].name, FA_ERR_SHAPE, OP_SEQS_BATCH,
                      "q.batch p.seqs")
                ->i[0] = other[i].x;
    }
    /* the tensors' batch axes against the sequences */
    c = seqs_case(t, call, EE_SEQ_PACKED, "(batch of q, out, dout, dq)", "2 (packed: 1)", FA_ERR_SHAPE,
                  OP_SEQS_VIEWS, "q.batch");
    c->mode = 0, c->field = 0, c->i[0] = 2;
    c = seqs_case(t, call, EE_SEQ_PACKED, "(batch of k, v, dk, dv)", "2 (packed: 1)", FA_ERR_SHAPE,
                  OP_SEQS_VIEWS, "k.batch");
    c->mode = 1, c->field = 0, c->i[0] = 2;
    for (int x = 1; x <= 3; x += 2) {
        c = seqs_case(t, call, EE_SEQ_CACHE, "(batch of k, v, dk, dv)",
                      x == 1 ? "1 (2 sequences)" : "3 (2 sequences)", FA_ERR_SHAPE, OP_SEQS_VIEWS, "k.batch");
        c->mode = 1, c->field = 0, c->i[0] = x;
    }
    for (int layout = EE_SEQ_PACKED; layout < EE_LAYOUTS; layout++) {
        int64_t kb = layout == EE_SEQ_PACKED ? 1 : layout == EE_SEQ_CACHE ? EE_B : POOL_PAGES;
        c = seqs_case(t, call, layout, "(batch of v, dv)", "k.batch - 1", FA_ERR_SHAPE, OP_SEQS_VIEWS,
                      "v.batch");
        c->mode = 2, c->field = 0, c->i[0] = kb - 1;
    }
    c = seqs_case(t, call, EE_SEQ_PAGED, "(batch of k, v, dk, dv)", "4 (page 4 in use)", FA_ERR_SHAPE,
                  OP_SEQS_VIEWS, "p.seqs.block_table[0][0]");
    c->mode = 1, c->field = 0, c->i[0] = POOL_PAGES - 1;
    /* the offsets of packed axes */
    c = seqs_case(t, call, EE_SEQ_PACKED, "p->seqs->cu_seqlens_q", "NULL (q then has one batch per sequence)",
                  FA_ERR_SHAPE, OP_SLOT_NULL, "q.batch p.seqs");
    c->ti = EE_CU_Q;
    c = seqs_case(t, call, EE_SEQ_PACKED, "p->seqs->cu_seqlens_k", "NULL (k then has one batch per sequence)",
                  FA_ERR_SHAPE, OP_SLOT_NULL, "k.batch p.seqs");
    c->ti = EE_CU_K;
    add_offsets(t, call, EE_CU_Q, packed_cu_q[1], packed_cu_q[2], TQ);
    add_offsets(t, call, EE_CU_K, packed_cu_k[1], packed_cu_k[2], TK);
    c = seqs_case(t, call, EE_SEQ_PACKED, "(seq of q, out, dout, dq)", "10 (the offsets end at 11)",
                  FA_ERR_SHAPE, OP_SEQS_VIEWS, "p.seqs.cu_seqlens_q[2] q.seq");
    c->mode = 0, c->field = 2, c->i[0] = packed_cu_q[2] - 1;
    c = seqs_case(t, call, EE_SEQ_PACKED, "(seq of k, v, dk, dv)", "11 (the offsets end at 12)", FA_ERR_SHAPE,
                  OP_SEQS_VIEWS, "p.seqs.cu_seqlens_k[2] k.seq");
    c->mode = 1, c->field = 2, c->i[0] = packed_cu_k[2] - 1;
    seqs_case(t, call, EE_SEQ_CACHE, "p->seqs->cu_seqlens_k", "{0, 3, 6} (k then is packed)", FA_ERR_SHAPE,
              OP_SEQS_KEY_OFFSETS, "k.batch p.seqs");
    c = seqs_case(t, call, EE_SEQ_PAGED, "p->seqs->cu_seqlens_k", "{0, 3, 6} with a block table", FA_ERR_ARG,
                  OP_SEQS_KEY_OFFSETS, "p.seqs.cu_seqlens_k p.seqs.block_table");
    snprintf(c->phrase, sizeof c->phrase, "p.seqs.cu_seqlens_k and p.seqs.block_table");
    /* keys in use */
    for (int layout = EE_SEQ_PACKED; layout < EE_LAYOUTS; layout++) add_used(t, call, layout);
    c = seqs_case(t, call, EE_SEQ_CACHE, "(seq of k, v, dk, dv)", "5 (6 keys in use)", FA_ERR_SHAPE,
                  OP_SEQS_VIEWS, "p.seqs.seqused_k[1]");
    c->mode = 1, c->field = 2, c->i[0] = EE_N - 1;
    c = seqs_case(t, call, EE_SEQ_PAGED, "(seq of k, v, dk, dv: the page size)",
                  "1 (5 keys in use of 3 pages)", FA_ERR_SHAPE, OP_SEQS_VIEWS, "p.seqs.seqused_k[0]");
    c->mode = 1, c->field = 2, c->i[0] = 1;
    c = seqs_case(t, call, EE_SEQ_PAGED, "p->seqs->seqused_k", "NULL (every page in use, and [0][2] is -1)",
                  FA_ERR_SHAPE, OP_SLOT_NULL, "p.seqs.block_table[0][2]");
    c->ti = EE_USED;
    /* pages */
    c = seqs_case(t, call, EE_SEQ_PAGED, "p->seqs->block_table", "NULL (k then has one batch per sequence)",
                  FA_ERR_SHAPE, OP_SLOT_NULL, "k.batch p.seqs");
    c->ti = EE_TABLE;
    static const int in_use[3] = {0 * PPS + 0, 0 * PPS + 1, 1 * PPS + 2};
    for (int e = 0; e < 3; e++) {
        add_element(t, call, EE_SEQ_PAGED, EE_TABLE, in_use[e], "5 (the pool's page count)", POOL_PAGES,
                    NULL);
        add_element(t, call, EE_SEQ_PAGED, EE_TABLE, in_use[e], "-1", -1, NULL);
        add_element(t, call, EE_SEQ_PAGED, EE_TABLE, in_use[e], "INT32_MIN", INT32_MIN, NULL);
        add_element(t, call, EE_SEQ_PAGED, EE_TABLE, in_use[e], "INT32_MAX", INT32_MAX, NULL);
    }
    static const struct {
        const char *value;
        int64_t x;
        fa_status want;
        const char *names;
    } pages[] = {
        {"-1", -1, FA_ERR_ARG, NULL},
        {"INT64_MIN", INT64_MIN, FA_ERR_ARG, NULL},
        {"0 (capacity 0, 5 keys in use)", 0, FA_ERR_SHAPE, "p.seqs.seqused_k[0]"},
        {"1 (capacity 3, 5 keys in use)", 1, FA_ERR_SHAPE, "p.seqs.seqused_k[0]"},
        {"2^61 (the table's bytes overflow)", INT64_C(1) << 61, FA_ERR_SHAPE, NULL},
        {"2^62 + 1 (times the page size overflows)", (INT64_C(1) << 62) + 1, FA_ERR_SHAPE, NULL},
        {"INT64_MAX", INT64_MAX, FA_ERR_SHAPE, NULL},
    };
    for (size_t i = 0; i < sizeof pages / sizeof *pages; i++)
        seqs_case(t, call, EE_SEQ_PAGED, "p->seqs->pages_per_seq", pages[i].value, pages[i].want,
                  OP_SEQS_PAGES, pages[i].names)
            ->i[0] = pages[i].x;
    /* pages so large that a sequence's page count, rounded up, overflows int64 before anything else
     * is wrong but k's offsets (FA_ERR_STRIDE, a later class) */
    for (int all_used = 0; all_used < 2; all_used++) {
        c = seqs_case(t, call, EE_SEQ_PAGED, "(seq of k, v, dk, dv: the page size)",
                      all_used ? "2^62 + 1, one page per sequence, all in use"
                               : "INT64_MAX, one page per sequence",
                      FA_ERR_STRIDE, OP_SEQS_HUGE_PAGES, "k.seq");
        c->i[0] = all_used ? (INT64_C(1) << 62) + 1 : INT64_MAX;
        c->mode = all_used;
        c->isolate = 1; /* an overflow there halts a UBSan build: a child process's, not the table's */
    }
    /* pointers of the arrays, and outputs over them */
    for (int layout = EE_SEQ_PACKED; layout < EE_LAYOUTS; layout++) add_array_pointers(t, call, layout);
    /* valid, not available: a bias with sequences; paged keys in the backward */
    for (int layout = EE_SEQ_PACKED; layout < EE_LAYOUTS; layout++)
        seqs_case(t, call, layout, "p->bias", "a valid bias, with p->seqs", FA_ERR_UNSUPPORTED, OP_SEQS_BIAS,
                  NULL);
    if (call == EE_BACKWARD)
        seqs_case(t, call, EE_SEQ_PAGED, "p->seqs->block_table", "a valid table (paged keys, the backward)",
                  FA_ERR_UNSUPPORTED, OP_SEQS_VALID, NULL);
}

void ee_add_seqs_cases(ee_table *t)
{
    add_seqs_call(t, EE_FORWARD);
    add_seqs_call(t, EE_BACKWARD);
}

/* ---- fa_merge's cases ----------------------------------------------------------------------- */

void ee_add_merge_cases(ee_table *t)
{
    const int views[3] = {EE_OUTS0, EE_OUTS0 + EE_PARTS - 1, EE_OUT};
    const int lses[3] = {EE_LSES0, EE_LSES0 + EE_PARTS - 1, EE_LSE};
    char param[64];
    ee_case *c;
    ee_add(t, EE_MERGE, "ctx", "a context serving another call", FA_ERR_BUSY, EE_OP_BUSY);
    ee_add(t, EE_MERGE, "outs", "NULL", FA_ERR_NULL, OP_MERGE_NULL_ARRAY)->field = 0;
    ee_add(t, EE_MERGE, "lses", "NULL", FA_ERR_NULL, OP_MERGE_NULL_ARRAY)->field = 1;
    ee_add(t, EE_MERGE, "out", "NULL", FA_ERR_NULL, EE_OP_NULL_TENSOR)->ti = EE_OUT;
    static const ee_named counts[] = {{"0", 0}, {"-1", -1}, {"INT_MIN", INT_MIN}};
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++)
        ee_add(t, EE_MERGE, "n", counts[i].name, FA_ERR_ARG, OP_MERGE_N)->i[0] = counts[i].x;
    c = ee_add(t, EE_MERGE, "outs[4095]->seq", "+1 (n = 4096, every other part valid)", FA_ERR_SHAPE,
               OP_MERGE_MANY);
    for (int v = 0; v < 3; v++) {
        const int s = views[v];
        snprintf(param, sizeof param, "%s->data", ee_slot_name(s));
        ee_add(t, EE_MERGE, param, "NULL", FA_ERR_NULL, EE_OP_NULL_DATA)->ti = s;
        c = ee_add(t, EE_MERGE, param, "64 bytes below the top of the address space (its range wraps)",
                   FA_ERR_STRIDE, EE_OP_DATA_TOP);
        c->ti = s, c->i[0] = 64;
        for (size_t i = 0; i < sizeof ee_misaligned / sizeof *ee_misaligned; i++) {
            c = ee_add(t, EE_MERGE, param, ee_misaligned[i].name, FA_ERR_STRIDE, EE_OP_MISALIGN);
            c->ti = s, c->i[0] = ee_misaligned[i].x;
        }
        snprintf(param, sizeof param, "%s->dtype", ee_slot_name(s));
        for (size_t i = 0; i < sizeof ee_bad_dtypes / sizeof *ee_bad_dtypes; i++) {
            c = ee_add(t, EE_MERGE, param, ee_bad_dtypes[i].name, FA_ERR_DTYPE, EE_OP_DTYPE);
            c->ti = s, c->i[0] = ee_bad_dtypes[i].x;
        }
        for (int f = 0; f < 4; f++) {
            snprintf(param, sizeof param, "%s->%s", ee_slot_name(s), ee_size_names[f]);
            for (size_t i = 0; i < sizeof ee_bad_sizes / sizeof *ee_bad_sizes; i++) {
                c = ee_add(t, EE_MERGE, param, ee_bad_sizes[i].name, FA_ERR_SHAPE, EE_OP_SIZE);
                c->ti = s, c->field = f, c->i[0] = ee_bad_sizes[i].x;
            }
        }
        for (int f = 0; f < 3; f++) {
            snprintf(param, sizeof param, "%s->%s", ee_slot_name(s), ee_stride_names[f]);
            size_t n = sizeof ee_bad_strides / sizeof *ee_bad_strides, n_out = s == EE_OUT ? 2 : 0;
            for (size_t i = 0; i < n + n_out; i++) {
                const ee_named *x = i < n ? &ee_bad_strides[i] : &ee_overlapping_strides[i - n];
                c = ee_add(t, EE_MERGE, param, x->name, FA_ERR_STRIDE, EE_OP_STRIDE);
                c->ti = s, c->field = f, c->i[0] = x->x;
            }
        }
        /* the lse of that part, or the merged lse (NULL is valid: no lse wanted) */
        const int l = lses[v];
        if (l != EE_LSE)
            ee_add(t, EE_MERGE, ee_slot_name(l), "NULL (its part is not empty)", FA_ERR_NULL, OP_SLOT_NULL)
                ->ti = l;
        c = ee_add(t, EE_MERGE, ee_slot_name(l),
                   "64 bytes below the top of the address space (its range wraps)", FA_ERR_STRIDE,
                   EE_OP_DATA_TOP);
        c->ti = l, c->i[0] = 64;
        for (size_t i = 0; i < sizeof ee_misaligned / sizeof *ee_misaligned; i++) {
            c = ee_add(t, EE_MERGE, ee_slot_name(l), ee_misaligned[i].name, FA_ERR_STRIDE, EE_OP_MISALIGN);
            c->ti = l, c->i[0] = ee_misaligned[i].x;
        }
    }
    /* sizes every view shares, out of range */
    static const ee_named dims[] = {
        {"0", 0}, {"FA_MAX_HEAD_DIM + 1", FA_MAX_HEAD_DIM + 1}, {"INT64_MAX", INT64_MAX}};
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++) {
        c = ee_add(t, EE_MERGE, "(dim of every part and out)", dims[i].name, FA_ERR_SHAPE,
                   OP_MERGE_EVERY_DIM);
        snprintf(c->names, sizeof c->names, "out.dim");
        c->i[0] = dims[i].x;
    }
    /* bf16 and f16 parts merge (every part and out one dtype); out in another dtype, f32 among
     * them (fa_forward's f32-over-half mix is no rule of fa_merge), names out and outs[0] */
    static const struct {
        const char *name;
        fa_dtype parts, out;
    } half_mixes[] = {{"bf16 parts, f16 out", FA_BF16, FA_F16},
                      {"f16 parts, bf16 out", FA_F16, FA_BF16},
                      {"bf16 parts, f32 out", FA_BF16, FA_F32},
                      {"f16 parts, f32 out", FA_F16, FA_F32},
                      {"f32 parts, f16 out", FA_F32, FA_F16}};
    for (size_t i = 0; i < sizeof half_mixes / sizeof *half_mixes; i++) {
        c = ee_add(t, EE_MERGE, "(dtype of every part, of out)", half_mixes[i].name, FA_ERR_DTYPE,
                   OP_MERGE_EVERY_DTYPE);
        snprintf(c->names, sizeof c->names, "out.dtype outs[0].dtype");
        c->i[0] = half_mixes[i].parts;
        c->i[1] = half_mixes[i].out;
    }
    /* the outputs over a part, a part's lse or each other: no merging in place */
    static const char *const mode_name[3] = {"on all of %s", "last element on %s's first",
                                             "first element on %s's last"};
    for (int o = 0; o < 2; o++) {
        const int moved = o ? EE_LSE : EE_OUT;
        for (int j = 0; j < 2 * EE_PARTS + 1; j++) {
            const int onto = j < EE_PARTS       ? EE_OUTS0 + j
                             : j < 2 * EE_PARTS ? EE_LSES0 + j - EE_PARTS
                                                : EE_LSE;
            if (onto == moved) continue;
            for (int m = 0; m < 3; m++) {
                char value[64];
                snprintf(value, sizeof value, mode_name[m], ee_slot_name(onto));
                c = ee_add(t, EE_MERGE, ee_slot_name(moved), value, FA_ERR_ALIAS, EE_OP_ALIAS);
                snprintf(c->names, sizeof c->names, "%s %s", ee_slot_name(moved), ee_slot_name(onto));
                c->ti = moved, c->field = onto, c->mode = m;
            }
        }
    }
}

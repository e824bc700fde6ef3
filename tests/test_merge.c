/* SPDX-License-Identifier: BSD-3-Clause */
/* fa_merge: partial results over disjoint key ranges combine into the result of one call over all
 * keys (f64 within 1e-12, f32 within twice the single call's error against the float64 oracle),
 * parts with lse = -inf contribute nothing whatever their out holds, the bytes do not depend on the
 * thread count, and every bad argument is refused with its own status, named, nothing written. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"
#include "util.h"

enum { B = 2, H = 3, NQ = 37, NK = 150, D = 12, DV = 9, MAX_PARTS = 8 };

typedef struct {
    fa_dtype dt;
    size_t e;
    double *q, *k, *v;                               /* the problem in double, contiguous bhsd */
    void *qx, *kx, *vx;                              /* the same values in the tested dtype */
    void *outs[MAX_PARTS + 1], *lses[MAX_PARTS + 1]; /* the parts; [MAX_PARTS]: the single call */
} world;

static void *alloc_copy(const double *x, size_t n, fa_dtype dt)
{
    void *y = malloc(n * tu_dtype_size(dt));
    for (size_t i = 0; i < n; i++)
        if (dt == FA_F64)
            ((double *)y)[i] = x[i];
        else
            ((float *)y)[i] = (float)x[i];
    return y;
}

static void world_make(world *w, fa_dtype dt, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    w->dt = dt;
    w->e = tu_dtype_size(dt);
    tu_rng rng = tu_rng_make(seed);
    size_t nq = (size_t)B * H * NQ * D, nk = (size_t)B * H * NK * D, nv = (size_t)B * H * NK * DV;
    w->q = malloc(nq * 8), w->k = malloc(nk * 8), w->v = malloc(nv * 8);
    for (size_t i = 0; i < nq; i++) w->q[i] = tu_rng_uniform(&rng, -2, 2);
    for (size_t i = 0; i < nk; i++) w->k[i] = tu_rng_uniform(&rng, -2, 2);
    for (size_t i = 0; i < nv; i++) w->v[i] = tu_rng_uniform(&rng, -1, 1);
    w->qx = alloc_copy(w->q, nq, dt), w->kx = alloc_copy(w->k, nk, dt), w->vx = alloc_copy(w->v, nv, dt);
    for (int p = 0; p <= MAX_PARTS; p++) {
        w->outs[p] = malloc((size_t)B * H * NQ * DV * w->e);
        w->lses[p] = malloc((size_t)B * H * NQ * w->e);
    }
}

static void world_free(world *w)
{
    free(w->q), free(w->k), free(w->v), free(w->qx), free(w->kx), free(w->vx);
    for (int p = 0; p <= MAX_PARTS; p++) free(w->outs[p]), free(w->lses[p]);
}

static fa_tensor out_view(const world *w, int part)
{
    return fa_tensor_bhsd(w->outs[part], w->dt, B, H, NQ, DV);
}

/* fa_forward over keys [k0, k1) into part `part` (k1 = k0: no key, out 0 and lse -inf). */
static void forward_keys(const world *w, int part, int64_t k0, int64_t k1)
{
    fa_tensor q = fa_tensor_bhsd(w->qx, w->dt, B, H, NQ, D);
    fa_tensor k = fa_tensor_bhsd((char *)w->kx + (size_t)k0 * D * w->e, w->dt, B, H, k1 - k0, D);
    fa_tensor v = fa_tensor_bhsd((char *)w->vx + (size_t)k0 * DV * w->e, w->dt, B, H, k1 - k0, DV);
    k.stride_head = NK * D, k.stride_batch = (int64_t)H * NK * D; /* slices of the full K and V */
    v.stride_head = NK * DV, v.stride_batch = (int64_t)H * NK * DV;
    fa_tensor o = out_view(w, part);
    cr_assert_eq(fa_forward(NULL, NULL, &q, &k, &v, &o, w->lses[part]), FA_OK, "%s", fa_last_error());
}

static double at(const world *w, const void *x, size_t i)
{
    return w->dt == FA_F64 ? ((const double *)x)[i] : (double)((const float *)x)[i];
}

/* The largest |got - want| over out, relative to the largest |want|, against the float64 oracle. */
static double error_vs_oracle(const world *w, const void *out)
{
    fa_tensor q = fa_tensor_bhsd(w->q, FA_F64, B, H, NQ, D), k = fa_tensor_bhsd(w->k, FA_F64, B, H, NK, D);
    fa_tensor v = fa_tensor_bhsd(w->v, FA_F64, B, H, NK, DV);
    size_t n = (size_t)B * H * NQ * DV;
    double *want = malloc(n * 8), err = 0, big = 0;
    ref_forward(NULL, &q, &k, &v, want, NULL);
    for (size_t i = 0; i < n; i++) {
        err = fmax(err, fabs(at(w, out, i) - want[i]));
        big = fmax(big, fabs(want[i]));
    }
    free(want);
    return err / big;
}

/* Splits [0, NK) into n ranges with cut points from rng, some of them empty. */
static void cuts(tu_rng *rng, int n, int64_t *cut)
{
    cut[0] = 0, cut[n] = NK;
    for (int p = 1; p < n; p++) cut[p] = tu_rng_below(rng, NK + 1);
    for (int p = 1; p < n; p++) /* sort */
        for (int q = p; q > 1 && cut[q] < cut[q - 1]; q--) {
            int64_t t = cut[q];
            cut[q] = cut[q - 1], cut[q - 1] = t;
        }
}

Test(merge, parts_over_disjoint_keys_give_one_call_over_all_of_them)
{
    uint64_t seed = tu_test_seed();
    for (int t = 0; t < 2; t++) {
        world w;
        world_make(&w, t ? FA_F64 : FA_F32, seed + (uint64_t)t);
        tu_rng rng = tu_rng_make(seed + 10 + (uint64_t)t);
        forward_keys(&w, MAX_PARTS, 0, NK); /* the single call, into the last slot */
        double single = error_vs_oracle(&w, w.outs[MAX_PARTS]);
        void *merged = malloc((size_t)B * H * NQ * DV * w.e), *lse = malloc((size_t)B * H * NQ * w.e);
        for (int n = 1; n <= MAX_PARTS; n++) {
            int64_t cut[MAX_PARTS + 1];
            cuts(&rng, n, cut);
            fa_tensor outs[MAX_PARTS];
            for (int p = 0; p < n; p++) {
                forward_keys(&w, p, cut[p], cut[p + 1]);
                outs[p] = out_view(&w, p);
            }
            fa_tensor mo = fa_tensor_bhsd(merged, w.dt, B, H, NQ, DV);
            cr_assert_eq(fa_merge(NULL, n, outs, (const void *const *)w.lses, &mo, lse), FA_OK, "%s",
                         fa_last_error());
            if (w.dt == FA_F64) {
                /* against the single call: f64 within 1e-12 (out relative to its largest value, lse
                 * absolute) */
                double big = 0, err = 0, lerr = 0;
                for (size_t i = 0; i < (size_t)B * H * NQ * DV; i++) {
                    big = fmax(big, fabs(at(&w, w.outs[MAX_PARTS], i)));
                    err = fmax(err, fabs(at(&w, merged, i) - at(&w, w.outs[MAX_PARTS], i)));
                }
                for (size_t i = 0; i < (size_t)B * H * NQ; i++)
                    lerr = fmax(lerr, fabs(at(&w, lse, i) - at(&w, w.lses[MAX_PARTS], i)));
                cr_expect(err <= 1e-12 * big && lerr <= 1e-12,
                          "f64, %d parts, seed %llu: out error %g, lse error %g", n, (unsigned long long)seed,
                          err / big, lerr);
            } else {
                double e = error_vs_oracle(&w, merged);
                cr_expect(e <= 2 * single + 1e-6,
                          "f32, %d parts, seed %llu: error %g against %g for one call", n,
                          (unsigned long long)seed, e, single);
            }
        }
        free(merged), free(lse);
        world_free(&w);
    }
}

Test(merge, parts_that_saw_no_key_contribute_nothing_and_rows_no_part_saw_are_zero)
{
    uint64_t seed = tu_test_seed();
    world w;
    world_make(&w, FA_F64, seed);
    forward_keys(&w, 0, 0, NK);
    forward_keys(&w, 1, 0, 0); /* no key: zeros, lse -inf */
    double *o1 = w.outs[1];
    for (size_t i = 0; i < (size_t)B * H * NQ * DV; i++) o1[i] = NAN; /* ignored: its lse is -inf */
    fa_tensor outs[2] = {out_view(&w, 1), out_view(&w, 0)};
    const void *lses[2] = {w.lses[1], w.lses[0]};
    double *merged = malloc((size_t)B * H * NQ * DV * 8), *lse = malloc((size_t)B * H * NQ * 8);
    fa_tensor mo = fa_tensor_bhsd(merged, FA_F64, B, H, NQ, DV);
    cr_assert_eq(fa_merge(NULL, 2, outs, lses, &mo, lse), FA_OK, "%s", fa_last_error());
    cr_expect(memcmp(merged, w.outs[0], (size_t)B * H * NQ * DV * 8) == 0,
              "the empty part changed the result");
    cr_expect(memcmp(lse, w.lses[0], (size_t)B * H * NQ * 8) == 0, "the empty part changed the lse");
    /* every part empty: zeros and -inf */
    fa_tensor empty[2] = {out_view(&w, 1), out_view(&w, 1)};
    const void *empty_lses[2] = {w.lses[1], w.lses[1]};
    cr_assert_eq(fa_merge(NULL, 2, empty, empty_lses, &mo, lse), FA_OK, "%s", fa_last_error());
    for (size_t i = 0; i < (size_t)B * H * NQ * DV; i++)
        cr_expect(merged[i] == 0.0, "out[%zu] = %g", i, merged[i]);
    for (size_t i = 0; i < (size_t)B * H * NQ; i++)
        cr_expect(lse[i] == -INFINITY, "lse[%zu] = %g", i, lse[i]);
    free(merged), free(lse);
    world_free(&w);
}

Test(merge, the_result_is_bitwise_the_same_at_every_thread_count)
{
    uint64_t seed = tu_test_seed();
    world w;
    world_make(&w, FA_F32, seed);
    int64_t cut[4] = {0, 40, 41, NK};
    fa_tensor outs[3];
    for (int p = 0; p < 3; p++) {
        forward_keys(&w, p, cut[p], cut[p + 1]);
        outs[p] = out_view(&w, p);
    }
    size_t bytes = (size_t)B * H * NQ * DV * 4;
    float *first = malloc(bytes), *again = malloc(bytes);
    for (int threads = 1; threads <= 4; threads++) {
        fa_context *ctx = tu_context(threads, 0, 0);
        fa_tensor mo = fa_tensor_bhsd(threads == 1 ? first : again, FA_F32, B, H, NQ, DV);
        cr_assert_eq(fa_merge(ctx, 3, outs, (const void *const *)w.lses, &mo, NULL), FA_OK, "%s",
                     fa_last_error());
        if (threads > 1) cr_expect(memcmp(first, again, bytes) == 0, "%d threads differ from 1", threads);
        fa_context_destroy(ctx);
    }
    free(first), free(again);
    world_free(&w);
}

/* ---- bad arguments: own status, the argument named, nothing written -------------------------- */

typedef struct {
    const char *what, *names;
    fa_status want;
} merge_case;

Test(merge, bad_arguments_are_refused_named_and_write_nothing)
{
    world w;
    world_make(&w, FA_F32, tu_test_seed());
    for (int p = 0; p < 2; p++) forward_keys(&w, p, p * 75, (p + 1) * 75);
    size_t bytes = (size_t)B * H * NQ * DV * 4, lse_bytes = (size_t)B * H * NQ * 4;
    kit_buf outb = kit_buf_alloc(bytes), lseb = kit_buf_alloc(lse_bytes);
    static const merge_case cases[] = {
        {"outs NULL", "outs", FA_ERR_NULL},
        {"lses NULL", "lses", FA_ERR_NULL},
        {"out NULL", "out", FA_ERR_NULL},
        {"lses[1] NULL", "lses[1]", FA_ERR_NULL},
        {"outs[1].data NULL", "outs[1].data", FA_ERR_NULL},
        {"n = 0", "n", FA_ERR_ARG},
        {"outs[1] f64", "outs[1].dtype", FA_ERR_DTYPE},
        {"outs[1].seq + 1", "outs[1].seq", FA_ERR_SHAPE},
        {"out.dim + 1", "out.dim", FA_ERR_SHAPE},
        {"out.stride_seq -1", "out.stride_seq", FA_ERR_STRIDE},
        {"out on outs[1]", "out outs[1]", FA_ERR_ALIAS},
        {"lse on lses[0]", "lse lses[0]", FA_ERR_ALIAS},
        /* bf16 and f16 parts merge, into an out of their own dtype: one dtype per call, and
         * fa_forward's f32-over-half mix is no rule of fa_merge */
        {"parts bf16, out f16", "out.dtype outs[0].dtype", FA_ERR_DTYPE},
        {"parts bf16, out f32", "out.dtype outs[0].dtype", FA_ERR_DTYPE},
        {"outs[1] f16 among bf16", "outs[1].dtype outs[0].dtype", FA_ERR_DTYPE},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        fa_tensor outs[2] = {out_view(&w, 0), out_view(&w, 1)},
                  out = fa_tensor_bhsd(kit_buf_data(&outb), FA_F32, B, H, NQ, DV);
        const void *lses[2] = {w.lses[0], w.lses[1]};
        const fa_tensor *outs_arg = outs, *out_arg = &out;
        const void *const *lses_arg = lses;
        void *lse = kit_buf_data(&lseb);
        int n = 2;
        switch (c) {
        case 0: outs_arg = NULL; break;
        case 1: lses_arg = NULL; break;
        case 2: out_arg = NULL; break;
        case 3: lses[1] = NULL; break;
        case 4: outs[1].data = NULL; break;
        case 5: n = 0; break;
        case 6: outs[1].dtype = FA_F64; break;
        case 7: outs[1].seq += 1; break;
        case 8: out.dim += 1; break;
        case 9: out.stride_seq = -1; break;
        case 10: out.data = outs[1].data; break;
        case 11: lse = w.lses[0]; break;
        case 12: outs[0].dtype = outs[1].dtype = FA_BF16, out.dtype = FA_F16; break;
        case 13: outs[0].dtype = outs[1].dtype = FA_BF16; break;
        case 14: outs[0].dtype = out.dtype = FA_BF16, outs[1].dtype = FA_F16; break;
        }
        unsigned char *snap_out = kit_buf_snapshot(&outb), *snap_lse = kit_buf_snapshot(&lseb);
        void *parts_before = malloc(bytes);
        memcpy(parts_before, w.outs[1], bytes);
        fa_status st = fa_merge(NULL, n, outs_arg, lses_arg, out_arg, lse);
        cr_expect_eq(st, cases[c].want, "%s: status %d (%s), documented %d", cases[c].what, st,
                     fa_status_str(st), cases[c].want);
        cr_expect(strncmp(fa_last_error(), "fa_merge: ", 10) == 0, "%s: \"%s\"", cases[c].what,
                  fa_last_error());
        char names[32];
        snprintf(names, sizeof names, "%s", cases[c].names);
        for (char *word = strtok(names, " "); word; word = strtok(NULL, " "))
            cr_expect(strstr(fa_last_error(), word) != NULL, "%s: \"%s\" does not name %s", cases[c].what,
                      fa_last_error(), word);
        cr_expect(kit_buf_equals_snapshot(&outb, snap_out) && kit_buf_equals_snapshot(&lseb, snap_lse) &&
                      memcmp(parts_before, w.outs[1], bytes) == 0,
                  "%s: a byte was written", cases[c].what);
        free(snap_out), free(snap_lse), free(parts_before);
    }
    kit_buf_free(&outb), kit_buf_free(&lseb);
    world_free(&w);
}

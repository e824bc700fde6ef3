/* SPDX-License-Identifier: BSD-3-Clause */
/* 64-bit indexing (include/flashattn.h: offsets are int64; DESIGN.md: "Offsets are computed in
 * int64"): views whose element offsets pass 2^31 and 2^32 compute the same attention as a compact
 * copy, forward and backward, on both dtypes, with small tiles (split-KV in the forward) and with
 * the default ones.
 *
 * Nothing of that size is allocated: each view lives in a range reserved with
 * mmap(MAP_NORESERVE), and only the pages of its rows are touched (a few MiB in all). A machine
 * that cannot reserve the range (no overcommit, a 32-bit address space) fails the test with a
 * message; it does not skip. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util.h"
#include "util_backward.h"

enum { Q, K, V, OUT, DOUT, DQ, DK, DV, N_T };

typedef struct {
    void *base;
    size_t bytes;
} reserved;

static int64_t extent(const fa_tensor *t)
{
    return (t->batch - 1) * t->stride_batch + (t->heads - 1) * t->stride_head + (t->seq - 1) * t->stride_seq +
           t->dim;
}

/* Reserves room for view t (strides set, data not yet) and points t at it. */
static reserved reserve_view(fa_tensor *t, const char *what)
{
    reserved r;
    r.bytes = (size_t)extent(t) * tu_dtype_size(t->dtype);
    r.base = mmap(NULL, r.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    cr_assert(
        r.base != MAP_FAILED,
        "mmap(MAP_NORESERVE) of %zu bytes of address space for the %s view failed (%s): this test needs "
        "a 64-bit address space and overcommit; it does not skip",
        r.bytes, what, strerror(errno));
    t->data = r.base;
    return r;
}

typedef enum {
    BATCH_STRIDE_OVER_2_31,        /* every view: batch 1 starts 2^31 + 2^20 + 3 elements in */
    HEAD_AND_KEY_STRIDES_OVER_2_32 /* query-side views: heads 2^32 + 5 apart (offsets to 3·2^32);
                                      key-side views: keys 2^27 + 1 apart (offsets to 79·2^27) */
} layout;

/* Strides of tensor `which` (shape of t) in `lay`. */
static void set_strides(fa_tensor *t, int which, layout lay)
{
    int query_side = which == Q || which == OUT || which == DOUT || which == DQ;
    if (lay == BATCH_STRIDE_OVER_2_31) {
        t->stride_seq = t->dim;
        t->stride_head = t->seq * t->dim;
        t->stride_batch = (INT64_C(1) << 31) + (INT64_C(1) << 20) + 3;
    } else if (query_side) { /* [H][B][S][D], heads far apart */
        t->stride_seq = t->dim;
        t->stride_batch = t->seq * t->dim;
        t->stride_head = (INT64_C(1) << 32) + 5;
    } else { /* [S][B][H][D], keys far apart */
        t->stride_head = t->dim;
        t->stride_batch = t->heads * t->dim;
        t->stride_seq = (INT64_C(1) << 27) + 1;
    }
}

static void copy_view(const fa_tensor *to, const fa_tensor *from)
{
    for (int64_t b = 0; b < from->batch; b++)
        for (int64_t h = 0; h < from->heads; h++)
            for (int64_t i = 0; i < from->seq; i++)
                for (int64_t d = 0; d < from->dim; d++)
                    kit_tensor_store(to, b, h, i, d, kit_tensor_load(from, b, h, i, d));
}

static void fill_view(const fa_tensor *t, double x)
{
    for (int64_t b = 0; b < t->batch; b++)
        for (int64_t h = 0; h < t->heads; h++)
            for (int64_t i = 0; i < t->seq; i++)
                for (int64_t d = 0; d < t->dim; d++) kit_tensor_store(t, b, h, i, d, x);
}

static void run_layout(fa_dtype dt, layout lay, fa_context *ctx, const char *ctx_name, uint64_t seed)
{
    /* Nk = 80 with block_k 16: two KV splits in the forward (few query items) */
    tu_shape s = {dt, 2, 4, 2, 24, 80, 8, 6, TU_BHSD};
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_BOTTOM_RIGHT;
    tu_rng rng = tu_rng_make(seed);
    tub_problem cp; /* the compact copy: the inputs' values, and the oracle's inputs */
    tub_make(&cp, &s, &rng, 2.0);
    const fa_tensor *compact[N_T] = {&cp.fw.q, &cp.fw.k,    &cp.fw.v,    &cp.fw.out,
                                     &cp.dout, &cp.grad[0], &cp.grad[1], &cp.grad[2]};
    static const char *const name[N_T] = {"q", "k", "v", "out", "dout", "dq", "dk", "dv"};
    fa_tensor big[N_T];
    reserved mem[N_T];
    int64_t largest = 0;
    for (int i = 0; i < N_T; i++) {
        big[i] = *compact[i];
        set_strides(&big[i], i, lay);
        mem[i] = reserve_view(&big[i], name[i]);
        if (extent(&big[i]) - big[i].dim > largest) largest = extent(&big[i]) - big[i].dim;
    }
    cr_assert_gt(largest, lay == BATCH_STRIDE_OVER_2_31 ? INT64_C(1) << 31 : INT64_C(1) << 33,
                 "the layout does not reach the offsets it is meant to test");
    for (int i = 0; i < N_T; i++) {
        if (i == Q || i == K || i == V || i == DOUT)
            copy_view(&big[i], compact[i]);
        else
            fill_view(&big[i], NAN); /* outputs: any element not written stays NaN */
    }
    void *lse = malloc((size_t)tu_problem_rows(&cp.fw) * tu_dtype_size(dt));

    char desc[400];
    tu_shape_str(&s, &p, desc, sizeof desc);
    size_t len = strlen(desc);
    snprintf(desc + len, sizeof desc - len, ", %s, %s, largest element offset %lld, seed %llu",
             lay == BATCH_STRIDE_OVER_2_31 ? "batch stride 2^31 + 2^20 + 3"
                                           : "head stride 2^32 + 5 (q side), key stride 2^27 + 1 (k side)",
             ctx_name, (long long)largest, (unsigned long long)seed);
    fa_status st = fa_forward(ctx, &p, &big[Q], &big[K], &big[V], &big[OUT], lse);
    cr_assert_eq(st, FA_OK, "%s: forward status %d (%s)", desc, st, fa_status_str(st));
    st = fa_backward(ctx, &p, &big[Q], &big[K], &big[V], &big[OUT], &big[DOUT], lse, &big[DQ], &big[DK],
                     &big[DV]);
    cr_assert_eq(st, FA_OK, "%s: backward status %d (%s)", desc, st, fa_status_str(st));

    /* The inputs are still the copy's, bit for bit. */
    for (int i = 0; i < N_T; i++) {
        if (!(i == Q || i == K || i == V || i == DOUT)) continue;
        int64_t where;
        cr_expect(tub_views_bitwise_equal(&big[i], compact[i], &where), "%s: input %s changed at flat %lld",
                  desc, name[i], (long long)where);
    }
    /* The oracle on the compact copy, against the outputs in the large views: a problem whose inputs
     * are the copy's and whose outputs are the large views. */
    tub_problem mixed = cp;
    mixed.fw.out = big[OUT];
    mixed.fw.lse = lse;
    for (int g = 0; g < 3; g++) mixed.grad[g] = big[DQ + g];
    char msg[512];
    cr_expect(tu_check_picked_accuracy(&mixed.fw, &p, INT64_MAX, 1e-12, msg, sizeof msg), "%s: forward: %s",
              desc, msg);
    tub_ref oracle, naive;
    tub_ref_compute(&oracle, &cp, &p);
    if (dt == FA_F32) tub_ref_compute_naive_f32(&naive, &cp, &p);
    cr_expect(tub_check_accuracy(&mixed, &p, &oracle, dt == FA_F32 ? &naive : NULL, 1e-11, msg, sizeof msg),
              "%s: backward: %s", desc, msg);
    tub_ref_free(&oracle);
    if (dt == FA_F32) tub_ref_free(&naive);

    free(lse);
    for (int i = 0; i < N_T; i++) munmap(mem[i].base, mem[i].bytes);
    tub_free(&cp);
}

static void run_all(layout lay)
{
    uint64_t seed = tu_test_seed();
    fa_context *small = tu_context(2, 8, 16);
    for (int dt = 0; dt < 2; dt++) {
        run_layout(dt ? FA_F64 : FA_F32, lay, small, "blocks 8/16, 2 threads", seed + (uint64_t)dt);
        run_layout(dt ? FA_F64 : FA_F32, lay, NULL, "default context", seed + 2 + (uint64_t)dt);
    }
    fa_context_destroy(small);
}

Test(large_offsets, batch_stride_past_2_31_elements_matches_the_oracle_forward_and_backward)
{
    run_all(BATCH_STRIDE_OVER_2_31);
}

Test(large_offsets, head_and_key_strides_past_2_32_elements_match_the_oracle_forward_and_backward)
{
    run_all(HEAD_AND_KEY_STRIDES_OVER_2_32);
}

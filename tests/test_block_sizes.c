/* SPDX-License-Identifier: BSD-3-Clause */
/* The automatic blocks follow the documented table (src/plan/block_sizes.c): Intel cores on the avx512
 * or amx table take 64-key forward tiles for f32 calls of more than a few query rows; every CPU on a
 * table with avx512's float kernels (avx512, amx, avx512_bf16) takes 256 or 128 query rows for them
 * while those leave FA_SPLIT_TARGET_ITEMS items; an all-bf16 forward on AMX tiles 512, 256 or 128
 * rows (half as many items) and 512 keys; AMD's f32 backward over long rows wider key tiles; every
 * other case (other tables, f64, decode-shaped calls, batches of sequences, every other backward) takes
 * 64 rows and the L2 rule; a window narrower than 1024 keys 32 rows, but AMD's f32 calls on avx512's
 * float kernels; every block_k is a multiple of 16 within the pass's range, whatever the
 * cache size reported. And a context's automatic choice is
 * the table's for this machine's CPU. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fill.h"
#include "flashattn.h"
#include "kernels/kernels.h"
#include "plan/block_sizes.h"
#include "plan/schedule.h"
#include "runtime/context.h"
#include "util.h"

static fa_block_inputs inputs(fa_cpu_vendor vendor, const char *table, size_t l2, int64_t d, size_t elem,
                              int64_t q_len)
{
    fa_block_inputs in = {
        .cpu = {vendor, vendor == FA_CPU_AMD ? 0x19u : 6u, vendor == FA_CPU_AMD ? 0x11u : 0xcfu},
        .table = table,
        .l2 = l2,
        .dim = d,
        .dim_v = d,
        .block_q = 64,
        .q_len = q_len,
        .kv_len = q_len,
        .heads = 8,
        .elem = elem,
        .threads = 1};
    return in;
}

/* The rule every row but Intel's forward takes: K, V and score tiles in 3/4 of L2 (a score tile of
 * one step: the forward's blocks are at most FA_FLOAT_BLOCK_ROWS rows, whatever the item's width). */
static int64_t l2_rule(const fa_block_inputs *in, int64_t max)
{
    size_t l2 = in->l2 ? in->l2 : (size_t)1 << 20;
    int64_t bk = (int64_t)(l2 / 4 * 3) / ((in->dim + in->dim_v + in->block_q) * (int64_t)in->elem);
    bk = bk < 16 ? 16 : bk > max ? max : bk;
    return bk / 16 * 16;
}

Test(block_sizes, intel_avx512_forward_takes_64_key_tiles)
{
    static const char *const avx512_kernels[] = {"avx512", "amx"}; /* amx: avx512's float kernels */
    for (int t = 0; t < 2; t++)
        for (int64_t d = 16; d <= 512; d *= 2) {
            fa_block_inputs in =
                inputs(FA_CPU_INTEL, avx512_kernels[t], (size_t)2 << 20, d, sizeof(float), 4096);
            cr_expect_eq(fa_block_k_automatic(FA_PASS_FORWARD, &in), 64, "%s, D=%lld", avx512_kernels[t],
                         (long long)d);
        }
}

Test(block_sizes, amx_bf16_forward_takes_512_to_128_rows_and_512_keys)
{
    fa_block_inputs in = inputs(FA_CPU_INTEL, "amx", (size_t)2 << 20, 64, sizeof(float), 4096);
    in.pairs = 1;
    /* the widest of 512, 256 and 128 rows that leaves FA_SPLIT_TARGET_ITEMS / 2 items */
    static const struct {
        int64_t heads, q_len, want;
    } rows[] = {{8, 4096, 512},  {8, 2048, 256}, {8, 1024, 128},
                {16, 2048, 512}, {0, 4096, 128}, {1, 64, 128}};
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        in.heads = rows[r].heads;
        in.q_len = rows[r].q_len;
        cr_expect_eq(fa_block_q_automatic(FA_PASS_FORWARD, &in), rows[r].want, "heads %lld, Nq %lld",
                     (long long)rows[r].heads, (long long)rows[r].q_len);
    }
    in.heads = 8;
    in.q_len = 4096;
    in.block_q = 512;
    cr_expect_eq(fa_block_k_automatic(FA_PASS_FORWARD, &in), FA_FORWARD_MAX_BLOCK_K);
    /* a decode step on the tiles keeps the float rows' choices: 64 rows, the decode tile */
    in = inputs(FA_CPU_INTEL, "amx", (size_t)2 << 20, 64, sizeof(float), 1);
    in.pairs = 1;
    cr_expect_eq(fa_block_q_automatic(FA_PASS_FORWARD, &in), 64);
    cr_expect_eq(fa_block_k_automatic(FA_PASS_FORWARD, &in), FA_DECODE_BLOCK_K);
    in.pairs = 0;
    cr_expect_eq(fa_block_q_automatic(FA_PASS_FORWARD, &in), 64, "a float decode step: 64 rows");
}

/* The widest of 256, 128 and 64 rows that leaves FA_SPLIT_TARGET_ITEMS items, for an f32 forward on
 * avx512's kernels (Intel's and AMD's) and on avx2's on AMD, without a bias row per query row; 64
 * everywhere else. */
Test(block_sizes, f32_forward_takes_wide_query_items_that_keep_the_target_items)
{
    static const struct {
        fa_cpu_vendor vendor;
        const char *table;
    } wide[] = {{FA_CPU_INTEL, "avx512"}, {FA_CPU_INTEL, "amx"}, {FA_CPU_INTEL, "avx512_bf16"},
                {FA_CPU_AMD, "avx512"},   {FA_CPU_AMD, "amx"},   {FA_CPU_AMD, "avx512_bf16"},
                {FA_CPU_AMD, "avx2"}};
    static const struct {
        int64_t heads, q_len, want;
    } rows[] = {
        {8, 4096, 256}, {64, 512, 256}, {8, 4095, 256}, {8, 4096 - 256, 128}, {8, 2048, 128},
        {8, 1024, 64},  {1, 4096, 64},  {128, 17, 256}, {0, 4096, 64}, /* 0: a batch of sequences */
    };
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++)
        for (size_t w = 0; w < sizeof wide / sizeof *wide; w++) {
            fa_block_inputs in =
                inputs(wide[w].vendor, wide[w].table, (size_t)2 << 20, 64, sizeof(float), rows[r].q_len);
            in.heads = rows[r].heads;
            int64_t bq = fa_block_q_automatic(FA_PASS_FORWARD, &in);
            cr_expect_eq(bq, rows[r].want, "%s, vendor %d, heads %lld, Nq %lld: block_q %lld", wide[w].table,
                         (int)wide[w].vendor, (long long)rows[r].heads, (long long)rows[r].q_len,
                         (long long)bq);
            if (bq > 64)
                cr_expect_geq(in.heads * ((in.q_len + bq - 1) / bq), FA_SPLIT_TARGET_ITEMS,
                              "%lld rows leave too few items", (long long)bq);
            cr_expect_eq(fa_block_q_automatic(FA_PASS_BACKWARD, &in), 64, "the backward");
            in.row_bias = 1;
            cr_expect_eq(fa_block_q_automatic(FA_PASS_FORWARD, &in), 64, "a bias with a row per query row");
        }
    fa_block_inputs other[] = {
        inputs(FA_CPU_INTEL, "avx2", (size_t)2 << 20, 64, sizeof(float), 4096),
        inputs(FA_CPU_AMD, "avx2", (size_t)1 << 20, 64, sizeof(double), 4096),
        inputs(FA_CPU_AMD, "ref", (size_t)1 << 20, 64, sizeof(float), 4096),
        inputs(FA_CPU_INTEL, "avx512", (size_t)2 << 20, 64, sizeof(double), 4096),
        inputs(FA_CPU_INTEL, "avx512", (size_t)2 << 20, 64, sizeof(float), 16), /* a few rows */
    };
    for (size_t c = 0; c < sizeof other / sizeof *other; c++) {
        other[c].heads = 64;
        cr_expect_eq(fa_block_q_automatic(FA_PASS_FORWARD, &other[c]), 64, "case %zu", c);
    }
}

Test(block_sizes, every_other_case_takes_the_l2_rule)
{
    const size_t l2s[] = {0, (size_t)256 << 10, (size_t)1 << 20, (size_t)2 << 20, (size_t)32 << 20};
    for (size_t i = 0; i < sizeof l2s / sizeof *l2s; i++)
        for (int64_t d = 8; d <= 512; d *= 2) {
            fa_block_inputs cases[] = {
                inputs(FA_CPU_AMD, "avx512", l2s[i], d, sizeof(float), 4096),
                inputs(FA_CPU_OTHER, "avx512", l2s[i], d, sizeof(float), 4096),
                inputs(FA_CPU_INTEL, "avx2", l2s[i], d, sizeof(float), 4096),
                inputs(FA_CPU_INTEL, "ref", l2s[i], d, sizeof(float), 4096),
                inputs(FA_CPU_INTEL, "avx512", l2s[i], d, sizeof(double), 4096), /* f64: not measured */
                inputs(FA_CPU_INTEL, "avx512", l2s[i], d, sizeof(float), 1),     /* a decode step */
            };
            for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
                int64_t fwd = fa_block_k_automatic(FA_PASS_FORWARD, &cases[c]);
                /* a decode step's forward takes the decode tile on every CPU (schedule.h's split) */
                int64_t want = cases[c].q_len <= FA_DECODE_ROWS ? FA_DECODE_BLOCK_K
                                                                : l2_rule(&cases[c], FA_FORWARD_MAX_BLOCK_K);
                cr_expect_eq(fwd, want, "forward, case %zu, L2 %zu, D=%lld", c, l2s[i], (long long)d);
                cr_expect(fwd % 16 == 0 && fwd >= 16 && fwd <= FA_FORWARD_MAX_BLOCK_K);
            }
            cases[0] = inputs(FA_CPU_INTEL, "avx512", l2s[i], d, sizeof(float), 4096);
            for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
                int64_t bwd = fa_block_k_automatic(FA_PASS_BACKWARD, &cases[c]);
                cr_expect_eq(bwd, l2_rule(&cases[c], FA_BACKWARD_MAX_BLOCK_K), "backward, case %zu", c);
                cr_expect(bwd % 16 == 0 && bwd >= 16 && bwd <= FA_BACKWARD_MAX_BLOCK_K);
            }
        }
}

/* On AMD the backward widens its key tiles over long rows: the L2 rule up to the forward's 512 keys,
 * halved until the row holds FA_BACKWARD_LONG_ROWS_KEY_BLOCKS of them, and never below the rule's
 * 128-key tile; shorter rows, f64 and every other vendor keep that tile. */
Test(block_sizes, amd_backward_widens_key_tiles_over_long_rows)
{
    static const struct {
        int64_t d, kv_len, want; /* a Zen 4's 1 MiB L2, 64-row query blocks */
    } rows[] = {{64, 4096, 128},   {64, 8192, 128},   {64, 16384, 256},  {64, 32768, 512},
                {64, 65536, 512},  {128, 16384, 256}, {128, 65536, 512}, {256, 65536, 336},
                {256, 16384, 160}, {512, 65536, 176}, {16, 1 << 20, 512}};
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        fa_block_inputs in =
            inputs(FA_CPU_AMD, "avx512_bf16", (size_t)1 << 20, rows[r].d, sizeof(float), 4096);
        in.kv_len = rows[r].kv_len;
        const int64_t bk = fa_block_k_automatic(FA_PASS_BACKWARD, &in),
                      rule = l2_rule(&in, FA_BACKWARD_MAX_BLOCK_K);
        cr_expect_eq(bk, rows[r].want, "D=%lld, Nk=%lld", (long long)rows[r].d, (long long)rows[r].kv_len);
        cr_expect(bk % 16 == 0 && bk >= rule && bk <= l2_rule(&in, FA_FORWARD_MAX_BLOCK_K));
        if (bk > rule) cr_expect_geq(in.kv_len / bk, FA_BACKWARD_LONG_ROWS_KEY_BLOCKS);
        in.elem = sizeof(double); /* not measured */
        cr_expect_eq(fa_block_k_automatic(FA_PASS_BACKWARD, &in), l2_rule(&in, FA_BACKWARD_MAX_BLOCK_K));
        static const fa_cpu_vendor others[] = {FA_CPU_INTEL, FA_CPU_OTHER};
        for (size_t v = 0; v < 2; v++) {
            fa_block_inputs other =
                inputs(others[v], "avx512", (size_t)1 << 20, rows[r].d, sizeof(float), 4096);
            other.kv_len = rows[r].kv_len;
            cr_expect_eq(fa_block_k_automatic(FA_PASS_BACKWARD, &other),
                         l2_rule(&other, FA_BACKWARD_MAX_BLOCK_K), "vendor %d keeps the rule",
                         (int)others[v]);
        }
    }
}

/* On this machine: an automatic forward's block_k (fa_stats) is the table's for this CPU, the
 * context's kernel table and the L2 size its topology reports: the context hands the table its
 * inputs (whose rows the tests above check). */
Test(block_sizes, a_context_uses_the_table_for_this_cpu)
{
    enum { N = 256, D = 32 };
    float *x = calloc((size_t)N * D, sizeof *x), *o = calloc((size_t)N * D, sizeof *o);
    cr_assert(x && o);
    fa_context *ctx = NULL;
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    fa_tensor t = fa_tensor_bhsd(x, FA_F32, 1, 1, N, D), out = fa_tensor_bhsd(o, FA_F32, 1, 1, N, D);
    fa_params p = FA_PARAMS_INIT;
    cr_assert_eq(fa_forward(ctx, &p, &t, &t, &t, &out, NULL), FA_OK);
    fa_stats st = FA_STATS_INIT;
    fa_context_stats(ctx, &st);
    fa_cpu_model cpu = fa_cpu_identify();
    fa_block_inputs in =
        inputs(cpu.vendor, st.isa, fa_topology_caches(ctx->topology).l2, D, sizeof(float), N);
    in.cpu = cpu, in.heads = 1, in.threads = st.num_threads;
    int64_t want = fa_block_k_automatic(FA_PASS_FORWARD, &in);
    cr_expect_eq(st.block_k, want < N ? want : N, "CPU vendor %d, table %s, L2 %zu", (int)cpu.vendor, st.isa,
                 in.l2);
    if (cpu.vendor == FA_CPU_INTEL && (strcmp(st.isa, "avx512") == 0 || strcmp(st.isa, "amx") == 0))
        cr_expect_eq(st.block_k, 64, "Intel, %s: 64-key forward tiles", st.isa);
    fa_context_destroy(ctx);
    free(x), free(o);
}

/* Wide items leave FA_ITEMS_PER_THREAD items per thread besides FA_SPLIT_TARGET_ITEMS: the width
 * follows the team (B1 H8 N4096: 256 rows up to 32 threads, 128 at 64, 64 rows from 65), and the
 * key tile does not (one step's block is 64 rows at every width). */
Test(block_sizes, wide_items_follow_the_thread_count_and_key_tiles_do_not)
{
    static const struct {
        int threads;
        int64_t want;
    } rows[] = {{1, 256}, {2, 256}, {32, 256}, {33, 128}, {64, 128}, {65, 64}, {256, 64}};
    static const fa_cpu_vendor vendors[] = {FA_CPU_INTEL, FA_CPU_AMD};
    for (size_t v = 0; v < 2; v++)
        for (int64_t d = 32; d <= 256; d *= 2) {
            int64_t bk_first = -1;
            for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
                fa_block_inputs in = inputs(vendors[v], "avx512", (size_t)1 << 20, d, sizeof(float), 4096);
                in.threads = rows[r].threads;
                in.block_q = fa_block_q_automatic(FA_PASS_FORWARD, &in);
                cr_expect_eq(in.block_q, rows[r].want, "vendor %d, D %lld, %d threads: %lld rows",
                             (int)vendors[v], (long long)d, rows[r].threads, (long long)in.block_q);
                const int64_t bk = fa_block_k_automatic(FA_PASS_FORWARD, &in);
                if (bk_first < 0) bk_first = bk;
                cr_expect_eq(bk, bk_first, "vendor %d, D %lld: %lld keys at %d threads, %lld at 1",
                             (int)vendors[v], (long long)d, (long long)bk, rows[r].threads,
                             (long long)bk_first);
            }
        }
    /* AMX's bf16 rows: 512, 256, 128 while FA_SPLIT_TARGET_ITEMS / 2 and 4 per thread remain */
    fa_block_inputs in = inputs(FA_CPU_INTEL, "amx", (size_t)2 << 20, 64, sizeof(float), 4096);
    in.pairs = 1;
    in.threads = 16;
    cr_expect_eq(fa_block_q_automatic(FA_PASS_FORWARD, &in), 512);
    in.threads = 32;
    cr_expect_eq(fa_block_q_automatic(FA_PASS_FORWARD, &in), 256);
    in.threads = 256;
    cr_expect_eq(fa_block_q_automatic(FA_PASS_FORWARD, &in), 128);
}

/* A context of 1 thread and one of 64 (whose items are narrower, above) give the same bytes: an
 * item's width changes no result. B1 H128 N256 D16 causal: 128 items of 256 rows on 1 thread, of
 * 128 rows on 64 where the table is avx512's; the same items elsewhere, and the same bytes. */
Test(block_sizes, items_of_every_width_give_the_same_bytes)
{
    enum { H = 128, N = 256, D = 16 };
    const size_t n = (size_t)H * N * D;
    float *x = malloc(n * sizeof *x), *o[2] = {malloc(n * sizeof(float)), malloc(n * sizeof(float))};
    float *lse[2] = {malloc((size_t)H * N * sizeof(float)), malloc((size_t)H * N * sizeof(float))};
    cr_assert(x && o[0] && o[1] && lse[0] && lse[1]);
    fa_tensor t = fa_tensor_bhsd(x, FA_F32, 1, H, N, D);
    uint64_t state = tu_seed("block_sizes/items_of_every_width");
    kit_fill_uniform(&t, &state, -1.0, 1.0);
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_TOP_LEFT;
    fa_stats stats[2];
    static const int threads[2] = {1, 64};
    for (int c = 0; c < 2; c++) {
        fa_context_opts opts = FA_CONTEXT_OPTS_INIT;
        opts.num_threads = threads[c];
        fa_context *ctx = NULL;
        cr_assert_eq(fa_context_create(&ctx, &opts), FA_OK);
        fa_tensor out = fa_tensor_bhsd(o[c], FA_F32, 1, H, N, D);
        cr_assert_eq(fa_forward(ctx, &p, &t, &t, &t, &out, lse[c]), FA_OK, "%s", fa_last_error());
        stats[c] = (fa_stats)FA_STATS_INIT;
        fa_context_stats(ctx, &stats[c]);
        fa_context_destroy(ctx);
    }
    if (strcmp(stats[0].isa, "avx512") == 0 || strcmp(stats[0].isa, "avx512_bf16") == 0 ||
        strcmp(stats[0].isa, "amx") == 0)
        cr_expect(stats[0].block_q == 256 && stats[1].block_q == 128, "%s: %d rows on 1 thread, %d on 64",
                  stats[0].isa, stats[0].block_q, stats[1].block_q);
    cr_expect_eq(stats[0].block_k, stats[1].block_k, "key tiles %d and %d", stats[0].block_k,
                 stats[1].block_k);
    cr_expect(memcmp(o[0], o[1], n * sizeof(float)) == 0, "out differs between 1 and 64 threads");
    cr_expect(memcmp(lse[0], lse[1], (size_t)H * N * sizeof(float)) == 0,
              "lse differs between 1 and 64 threads");
    free(x), free(o[0]), free(o[1]), free(lse[0]), free(lse[1]);
}

/* The rows of a call on this machine's automatic table (fa_stats after it): a forward, or a forward
 * then a backward, of B1 H1 N2048 D32, causal, with the given left window (-1: none); k and v bf16
 * (a stored cache, forward only) or f32. */
static int rows_of_call(int backward, int64_t window, fa_dtype kv_type, char *isa, size_t isa_size)
{
    enum { N = 2048, D = 32 };
    float *q = calloc((size_t)N * D, sizeof *q), *o = calloc((size_t)N * D, sizeof *o);
    float *g = calloc((size_t)3 * N * D, sizeof *g), *lse = calloc(N, sizeof *lse);
    uint16_t *kv16 = calloc((size_t)N * D, sizeof *kv16);
    cr_assert(q && o && g && lse && kv16);
    fa_context *ctx = NULL;
    cr_assert_eq(fa_context_create(&ctx, NULL), FA_OK);
    fa_tensor tq = fa_tensor_bhsd(q, FA_F32, 1, 1, N, D), out = fa_tensor_bhsd(o, FA_F32, 1, 1, N, D);
    fa_tensor kv = kv_type == FA_F32 ? tq : fa_tensor_bhsd(kv16, kv_type, 1, 1, N, D);
    fa_params p = FA_PARAMS_INIT;
    p.causal = FA_CAUSAL_TOP_LEFT;
    p.window_left = window;
    cr_assert_eq(fa_forward(ctx, &p, &tq, &kv, &kv, &out, lse), FA_OK, "%s", fa_last_error());
    if (backward) {
        fa_tensor dq = fa_tensor_bhsd(g, FA_F32, 1, 1, N, D),
                  dk = fa_tensor_bhsd(g + N * D, FA_F32, 1, 1, N, D),
                  dv = fa_tensor_bhsd(g + 2 * N * D, FA_F32, 1, 1, N, D);
        cr_assert_eq(fa_backward(ctx, &p, &tq, &tq, &tq, &out, &out, lse, &dq, &dk, &dv), FA_OK, "%s",
                     fa_last_error());
    }
    fa_stats st = FA_STATS_INIT;
    fa_context_stats(ctx, &st);
    snprintf(isa, isa_size, "%s", st.isa);
    fa_context_destroy(ctx);
    free(q), free(o), free(g), free(lse), free(kv16);
    return st.block_q;
}

/* A window narrower than 1024 keys takes 32-row blocks (block_sizes.c), but on AMD an f32 call on
 * avx512's float kernels keeps the automatic rows, forward and backward, its edge tiles computing only
 * the rows that see a key, and an f32 forward on avx2's takes 64; a stored (bf16) cache keeps 32 there
 * too. */
Test(block_sizes, narrow_windows_take_32_rows_but_amd_f32_calls_their_own)
{
    fa_cpu_model cpu = fa_cpu_identify();
    for (int backward = 0; backward < 2; backward++) {
        char isa[32];
        const int plain = rows_of_call(backward, -1, FA_F32, isa, sizeof isa);
        const int windowed = rows_of_call(backward, 256, FA_F32, isa, sizeof isa);
        const int keeps =
            cpu.vendor == FA_CPU_AMD &&
            (strcmp(isa, "avx512") == 0 || strcmp(isa, "amx") == 0 || strcmp(isa, "avx512_bf16") == 0);
        const int amd_avx2_forward = cpu.vendor == FA_CPU_AMD && strcmp(isa, "avx2") == 0 && !backward;
        cr_expect_eq(windowed,
                     keeps              ? plain
                     : amd_avx2_forward ? 64
                                        : 32,
                     "%s, vendor %d, %s: %d rows under the window, %d without",
                     backward ? "backward" : "forward", (int)cpu.vendor, isa, windowed, plain);
        cr_expect_eq(rows_of_call(backward, 1024, FA_F32, isa, sizeof isa), plain,
                     "a window of 1024 keys is not narrow");
    }
    char isa[32];
    cr_expect_eq(rows_of_call(0, 256, FA_BF16, isa, sizeof isa), 32, "a bf16 cache under a window, %s", isa);
}

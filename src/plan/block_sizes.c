/* SPDX-License-Identifier: BSD-3-Clause */
/* The automatic key-tile length, per microarchitecture.
 *
 * Every row below was measured (bench/results/2026-12-01-intel-xeon-amx.md and
 * 2026-12-01-amd-epyc-zen4.md); a CPU that matches none takes the cache-size rule, which is where
 * every row started. Rows are matched on the vendor and the kernel table, not on the model number:
 * a hypervisor may report a model of its own (a 2-core Xeon VM showed family 6, model 167, a client
 * part's number, with a server core's AVX-512 and AMX), and
 * what the rows depend on is the core's ports and caches, which vendor and table tell apart.
 *
 *   CPU                        table   pass     block_k   why
 *   Intel, AVX-512 cores       avx512, forward  64        two FMA ports take every other 512-bit op
 *                              amx                        (measured), so L1 misses that a 512-key
 *                                                         tile's 128 KiB score and value tiles make
 *                                                         show: 64 keys keep the tiles of one step
 *                                                         near L1 (f32 D=64: 3-10% faster than 512,
 *                                                         D=128: 2-5%; bench/results/)
 *   Intel and AMD,             avx512, forward  q 256     items of four 64-row blocks read each key
 *   avx512's f32 kernels       amx,             (or 128)  tile once for all four (forward_attend.h):
 *                              avx512_                    Intel: min time 2-6% less at B1 H8 N4096,
 *                              bf16                       12% at B4 H16 N512 causal; Zen 4 (1 thread,
 *                                                         causal D64): 84% of the FMA peak at N65536
 *                                                         against 76% with 64 rows (the rows' keys
 *                                                         leave L3: 32 MiB of K and V), D128 N4096
 *                                                         5-15% less time; while the items stay
 *                                                         >= FA_SPLIT_TARGET_ITEMS, else 64 (and 64
 *                                                         under a bias row per query row)
 *   any other                  any     either   L2 rule   the key, value and score tiles in three
 *                                                         quarters of L2 (the rest keeps the packed
 *                                                         queries and the accumulator): on a Zen 4
 *                                                         (1 MiB L2) f32 D=128, 512 keys ran at 81% of
 *                                                         the FMA peak where 400 gave 75%; D=64 was
 *                                                         flat from 128 to 512
 *   Intel, AMX tiles           amx     forward  q 128,    an all-bf16 forward on tiles: a tile store
 *                                      (bf16)   k 512     costs about two products, so the products
 *                                                         want long keys and many rows per store
 *                                                         (D=64 1.4x, D=128 1.3x the speed of 64 x 64;
 *                                                         bench/results/)
 *                                               q 512     items of four 128-row blocks share each key
 *                                               (or 256)  tile's packed Vᵀ (forward_dot.h): 8-20%
 *                                                         less time than 128 at B1 H8 N4096; while the
 *                                                         items stay >= FA_SPLIT_TARGET_ITEMS / 2 (a
 *                                                         split into two key chunks, which ran as fast
 *                                                         per head as none: H8 against H16), else 128
 *   AMD Zen 4 and 5            avx512_ forward  the amx  the table the automatic choice takes there
 *   (runtime/dispatch.c)       bf16    (bf16)   rows     (vdpbf16ps at 2x the f32 FMA rate): the amx
 *                                                        rows' shapes were as fast as any on a Zen 4
 *                                                        (B1 H8 N2048 D64: q 128-512 x k 128-512 all
 *                                                        within 51-59 ms, the spread of the runs)
 * The backward takes the L2 rule up to 128 keys (it holds three tiles and the dK, dV sums): on the
 * Intel VM 128 keys were as fast as 64 or faster at D=64 (462-508 ms against 499-514); on a Zen 4
 * the bf16 backward on vdpbf16ps took 166-174 ms over q 64-128 x k 64-256 (B1 H8 N2048 D64), the
 * rule's 64 x 128 172 ms. Over long rows AMD takes wider ones (backward_block_k, below).
 * Decode-shaped forward calls (a few query rows) take 64 keys on every CPU: their tiles are a few rows
 * wide, and shorter tiles mean shorter split chunks, enough of them to feed a large node. */
#include "plan/block_sizes.h"

#include <string.h>

#include "plan/mask.h"
#include "plan/schedule.h"
#include "runtime/topology.h"

/* Query rows at or below which a call counts as decode-shaped here (kernels' few-rows path). */
#define FEW_ROWS FA_DECODE_ROWS

static int64_t clamp64(int64_t x, int64_t lo, int64_t hi)
{
    return x < lo ? lo : (x > hi ? hi : x);
}

static int64_t l2_rule(const fa_block_inputs *in, int64_t max_block_k, int64_t step_rows)
{
    size_t l2 = in->l2 ? in->l2 : (size_t)1 << 20;
    int64_t per_key = (in->dim + in->dim_v + step_rows) * (int64_t)in->elem;
    return clamp64((int64_t)(l2 / 4 * 3) / per_key, 16, max_block_k) / 16 * 16;
}

/* The tables whose float kernels are avx512's: avx512 itself, amx and avx512_bf16 (their bf16 sets
 * aside). */
static int avx512_kernels(const char *table)
{
    return table &&
           (strcmp(table, "avx512") == 0 || strcmp(table, "amx") == 0 || strcmp(table, "avx512_bf16") == 0);
}

/* An f32 forward on float products (not the bf16 dot-product units), past a decode step: what the
 * wide-item rows below ask of a call besides its kernels. */
static int f32_prefill_forward(fa_pass pass, const fa_block_inputs *in)
{
    return pass == FA_PASS_FORWARD && in->elem == 4 && !in->pairs && in->q_len > FEW_ROWS;
}

/* An f32 forward on avx512's kernels, past a decode step: the rows with their own choices. */
static int avx512_f32_forward(fa_pass pass, const fa_block_inputs *in)
{
    return f32_prefill_forward(pass, in) && avx512_kernels(in->table);
}

/* The same on Intel, whose key tiles are its own. */
static int intel_avx512_f32_forward(fa_pass pass, const fa_block_inputs *in)
{
    return avx512_f32_forward(pass, in) && in->cpu.vendor == FA_CPU_INTEL;
}

/* An f32 forward on avx2's kernels on AMD, past a decode step, where wide items pay as on avx512's:
 * each key tile is read once for up to four 64-row blocks. Zen 3 (family 25 model 1), `fa-bench
 * --preset prefill --threads 1,2 --block-q 64|256`, % of the FMA probe at 1 / 2 threads: causal D64
 * 64.2 / 67.2 at 64 rows, 71.1 / 71.6 at 256; causal D128 68.4 / 71.5 against 75.2 / 75.9; unmasked
 * D64 73.2 / 74.6 against 73.3 / 74.5, D128 79.8 / 75.4 against 79.2 / 79.2; one head, causal D64
 * N65536 (`--preset long-rows`) 65.7 / 64.1 against 72.9 / 72.9. Not measured on Intel's AVX2 CPUs:
 * they keep 64 rows. */
static int amd_avx2_f32_forward(fa_pass pass, const fa_block_inputs *in)
{
    return f32_prefill_forward(pass, in) && in->cpu.vendor == FA_CPU_AMD && in->table &&
           strcmp(in->table, "avx2") == 0;
}

/* AMD's Zen 3 cores: family 19h models 00h-0Fh (EPYC 7003) and 20h-5Fh (the desktop and mobile
 * parts); Zen 4 is 10h-1Fh and 60h-AFh of the same family. */
static int amd_zen3(const fa_cpu_model *cpu)
{
    return cpu->vendor == FA_CPU_AMD && cpu->family == 0x19 &&
           (cpu->model < 0x10 || (cpu->model >= 0x20 && cpu->model < 0x60));
}

/* A [token][head][dim] cache is read 512 bytes of each 4 KiB token row per head (f32, D = 128): on
 * AMD only far prefetches keep enough misses in flight, on Intel they cost more than they bring.
 * `fa-bench --decode-batch 16:1024-32768 --h 8 --d 128 --page-size 16`, min ms: Zen 4 (2 cores),
 * contiguous, at 1 / 2 threads, plain kernels 220-239 / 112-125, lists with far prefetches 151-163 /
 * 104-116, lists without them (and no near ones in the scores) 228-230 / 118-120. The Xeon (family 6
 * model 207, 16 cores), contiguous, lists / plain kernels in one run at 1 / 4 / 16 threads: with
 * far prefetches 0.88-1.07 / 1.23-1.34 / 1.00-1.46, with near ones only 1.05-1.16 / 1.06-1.19 /
 * 0.96-1.09; paged lists with near ones only 0.69-0.95x the time of far ones at 4 and 16 threads
 * (bench/results/2026-12-04-decode-lists-amd-zen4-intel-xeon.md). */
static fa_rows_prefetch decode_rows_prefetch(const fa_cpu_model *cpu)
{
    return cpu->vendor == FA_CPU_AMD ? FA_ROWS_PREFETCH_FAR : FA_ROWS_PREFETCH_NEAR;
}

/* The shortest key row read in token order. A run's calls cost the same whatever the row, so short
 * rows pay more per byte. Zen 4, 16 sequences, H8, D128, pages of 1 and 16 keys and contiguous:
 * f32's 512-byte rows 9-19% less time; bf16's 256 bytes 8% less to 1% more, over pages of 1 key at 1
 * thread 1% less to 3.5% more; int8's and FP8's 128 bytes up to 18% more over pages of 1 key at 1
 * thread (bench/results/2026-12-05-decode-token-order-amd-zen4.md). On Zen 3 the 128-byte rows pay
 * (measured with far prefetches; fa_decode_reads_for now gives them near ones): int8 pages of 16
 * keys 126-145 -> 100-102 ms at 1 thread, 82-86 -> 66-67 at 2, contiguous 95-103 -> 82-90 at 1
 * thread; FP8 up to 24% less time, none more (E4M3 contiguous at 1 thread the same)
 * (bench/results/2026-12-05-zen3-decode-prefetch.md). */
#define TOKEN_MIN_ROW_BYTES      256
#define TOKEN_MIN_ROW_BYTES_ZEN3 128

/* In token order a group reads each token row whole, in an order Zen 3's hardware prefetchers follow
 * where a head's row is 512 bytes or more (f32 at D128): there no prefetch at all took 24-35% less
 * time than far ones at 1 and 2 threads, contiguous and over pages of 1, 16 and 256 keys
 * (contiguous, 1 thread: 190-202 -> 141-155 ms, 49-56% -> 68-75% of the one-stream read probe;
 * bench/results/2026-12-05-zen3-decode-prefetch.md), and near ones (16 keys ahead into L1) more time
 * than none in every round at 1 thread (pages of 16 keys 172-210 against 149-164 ms). Shorter rows
 * are read less well in that order (a bf16 cache's 256-byte rows at three quarters of the rate of
 * its token rows in address order, sums only) and take near ones: at 256 bytes near ones took the
 * same or less time than none at 1 thread in nearly every interleaved pair for bf16 at D128 (over
 * pages of 16 keys 122-135 against 128-163 ms, over 256 keys 111 against 131-132), at 2 threads as
 * much more as less; for f32 at D64, six rounds, contiguous 108-130 against 124-154 ms, over pages
 * of 16 keys 115-144 against 127-161; at 128 bytes (int8 and FP8 at D128) none took 1.2-1.6x the
 * time of far ones, near ones the same or less in nearly every pair (int8 over pages of 1 key
 * 161-194 against 187-266 ms at 1 thread, contiguous at 2 threads 44-51 against 54-63 ms but for one
 * round of 86; E4M3 and E5M2 up to 15% less) (bench/results/2026-12-05-zen3-bf16-pairs-mla-ggml.md).
 * Not measured on Zen 4 in token order: there the tiles read in token order take far ones as the
 * others do. */
#define TOKEN_NO_PREFETCH_ROW_BYTES_ZEN3 512

fa_decode_reads fa_decode_reads_for(const fa_cpu_model *cpu, int64_t row_bytes)
{
    const int zen3 = amd_zen3(cpu);
    const fa_rows_prefetch rows = decode_rows_prefetch(cpu);
    const fa_rows_prefetch tokens = !zen3                                           ? rows
                                    : row_bytes >= TOKEN_NO_PREFETCH_ROW_BYTES_ZEN3 ? FA_ROWS_PREFETCH_NONE
                                                                                    : FA_ROWS_PREFETCH_NEAR;
    return (fa_decode_reads){row_bytes >= (zen3 ? TOKEN_MIN_ROW_BYTES_ZEN3 : TOKEN_MIN_ROW_BYTES), rows,
                             tokens};
}

/* Wide f32 items read a bias with a row per query row as one stream per row, and more streams than
 * the hardware prefetchers follow: B1 H8 N2048 D64 with a full bias, 2 threads, three rounds:
 * 30.5-32.4 ms at 64 rows, 32.1-32.7 at 128, 34.4-36.4 at 256. */
static int wide_f32_rows_pay(const fa_block_inputs *in)
{
    return !in->row_bias;
}

/* The widest of `widest`, half of it, ... down to `narrowest` rows that leaves at least `items` items
 * and FA_ITEMS_PER_THREAD per thread of the team. */
static int64_t widest_rows_leaving(const fa_block_inputs *in, int64_t widest, int64_t narrowest,
                                   int64_t items)
{
    const int64_t per_team = (int64_t)FA_ITEMS_PER_THREAD * (in->threads > 1 ? in->threads : 1);
    if (items < per_team) items = per_team;
    for (int64_t bq = widest; bq > narrowest; bq /= 2)
        if (in->heads * ((in->q_len + bq - 1) / bq) >= items) return bq;
    return narrowest;
}

int64_t fa_block_q_automatic(fa_pass pass, const fa_block_inputs *in)
{
    if (pass == FA_PASS_FORWARD && in->pairs && in->q_len > FEW_ROWS)
        return widest_rows_leaving(in, 512, 128, FA_SPLIT_TARGET_ITEMS / 2);
    if ((avx512_f32_forward(pass, in) || amd_avx2_f32_forward(pass, in)) && wide_f32_rows_pay(in))
        return widest_rows_leaving(in, 256, 64, FA_SPLIT_TARGET_ITEMS);
    return 64;
}

/* The backward's key tile: the L2 rule up to 128 keys; on AMD, over rows long enough to keep
 * FA_BACKWARD_LONG_ROWS_KEY_BLOCKS key blocks, the rule up to 512 keys (halved until the row holds
 * that many). A fused item walks every query block of its head for each key block, rereading Q, dO
 * and the dq rows each time (12 MiB a head at N = 16384, D = 64): wider key blocks read them fewer
 * times. Zen 4, f32, 1 thread, % of the FMA probe at 128 / 256 / 512 keys: D = 64 N = 16384 82.3 /
 * 86.9 / 89.1 (causal 82.1 / 88.3 / 89.1), D = 128 83.0 / 86.7 / 88.9 (causal 84.0 / 87.1 / 87.6),
 * against 87.5 / 87.7 / 88.8 at N = 4096; the wavefront plan on one head, 2 threads, N = 16384 causal
 * 79.9 / 85.8 / 85.5. Fewer key blocks cost the wavefront plan its pipeline: 3 heads N = 4096 causal
 * (8 blocks of 512 per head) 82.4 against 77.1, 5 heads N = 2048 78.5 against 68.7, 2 threads
 * (bench/results/2026-12-04-backward-key-tiles-amd-zen4.md). Not measured on Intel: its rows stay. */
static int64_t backward_block_k(const fa_block_inputs *in)
{
    const int64_t rule = l2_rule(in, FA_BACKWARD_MAX_BLOCK_K, in->block_q);
    if (in->cpu.vendor != FA_CPU_AMD || in->elem != sizeof(float)) return rule;
    int64_t wide = l2_rule(in, FA_FORWARD_MAX_BLOCK_K, in->block_q);
    while (wide > rule && in->kv_len / wide < FA_BACKWARD_LONG_ROWS_KEY_BLOCKS) wide = wide / 2 / 16 * 16;
    return wide > rule ? wide : rule;
}

int64_t fa_block_k_automatic(fa_pass pass, const fa_block_inputs *in)
{
    if (pass == FA_PASS_BACKWARD) return backward_block_k(in);
    if (in->q_len <= FEW_ROWS) return FA_DECODE_BLOCK_K;
    if (in->pairs) return FA_FORWARD_MAX_BLOCK_K;
    if (intel_avx512_f32_forward(pass, in)) return 64;
    /* one step's score tile is one block's: a wider item runs its blocks over the tile in turn */
    return l2_rule(in, FA_FORWARD_MAX_BLOCK_K,
                   in->block_q < FA_FLOAT_BLOCK_ROWS ? in->block_q : FA_FLOAT_BLOCK_ROWS);
}

/* Under a window a query block of bq rows computes about (width + bq) keys per row for the width a
 * row sees: 80% of them useful for a window of 256 with bq = 64, 89% with 32 (4% fewer instructions
 * in all, counted with callgrind, the kernels' per-block costs included). Only a window narrows
 * what a row sees below Nk: a short sequence without one wastes nothing at 64 rows, and 32 cost it
 * the kernels' longer register blocks (Intel Xeon VM, f32 B1 H64 N512 D64: 54.5-55.0% of the FMA
 * peak at 32 rows, 57.8% at 64). */
#define NARROW_WINDOW_KEYS 1024

/* The float sets' edge tiles score and sum only the row vectors that see a key (drivers/
 * visible_products.h), so the waste above is gone, and on AMD an f32 call under a narrow window keeps
 * the automatic rows: the forward's wide items (256 rows as 64-row blocks over each key tile, read
 * once), the backward's 64. Zen 4, f32 B1 H2 N16384 D64 causal, 1 thread, GFLOP/s per visible pair
 * against 102-105 without a window: window 256, forward 72.3-73.3 at 32 rows before, 77.0-79.3 at 256;
 * backward 79.0-79.4 at 32, 81.3-82.2 at 64, 76.5-78.9 at 128. Not measured on Intel, on other
 * tables (but avx2's forward: narrow_window_rows), for stored caches or bf16 inputs: they keep 32. */
static int narrow_windows_keep_rows(const fa_problem *p, const fa_block_inputs *in)
{
    return in->cpu.vendor == FA_CPU_AMD && avx512_kernels(in->table) && !in->pairs && p->q_type == FA_F32 &&
           p->kv_type == FA_F32;
}

/* The rows of a call under a narrow window that does not keep its own: 32, but 64 for an f32 forward
 * on avx2's kernels on AMD, whose wide items were slower there (256 rows: window 256 at 75.6% of the
 * causal rate per visible pair, D64, against 78.9% at 32). Zen 3, B1 H8 N16384 causal, window 256,
 * three interleaved rounds, min ms at 1 / 2 threads: D64 147.8-149.7 / 74.8-75.6 at 32 rows,
 * 145.1-146.0 / 72.4-73.4 at 64; D128 273.0-277.0 / 138.7-140.1 against 273.0-275.8 / 134.4-137.0.
 * The backward keeps 32 there (D64 329-332 ms at 32, 345-359 at 64, 1 thread). */
static int64_t narrow_window_rows(fa_pass pass, const fa_problem *p, const fa_block_inputs *in)
{
    return amd_avx2_f32_forward(pass, in) && p->q_type == FA_F32 && p->kv_type == FA_F32 ? 64 : 32;
}

void fa_blocks_for(const fa_context *ctx, const fa_problem *p, size_t elem, fa_pass pass, int pairs,
                   int64_t *block_q, int64_t *block_k)
{
    int64_t q_len = p->q_len, kv_len = p->kv_len;
    fa_block_inputs in = {.cpu = ctx->cpu,
                          .table = ctx->kernels->name,
                          .l2 = fa_topology_caches(ctx->topology).l2,
                          .dim = p->dim,
                          .dim_v = p->dim_v,
                          .block_q = 64,
                          .q_len = q_len,
                          .kv_len = kv_len,
                          .heads = p->seqs ? 0 : p->batch * p->q_heads,
                          .elem = elem,
                          .pairs = pass == FA_PASS_FORWARD && pairs,
                          .row_bias = p->bias.data != NULL && p->bias.stride_seq != 0,
                          .threads = ctx->num_threads};
    int64_t span = fa_row_key_span(p);
    const int narrow = span < kv_len && span < NARROW_WINDOW_KEYS && !narrow_windows_keep_rows(p, &in);
    int64_t bq = ctx->block_q > 0 ? ctx->block_q
                 : narrow         ? narrow_window_rows(pass, p, &in)
                                  : fa_block_q_automatic(pass, &in);
    int64_t bk = ctx->block_k;
    if (bk <= 0) {
        in.block_q = bq;
        bk = fa_block_k_automatic(pass, &in);
    }
    if (bq > q_len && q_len > 0) bq = q_len;
    if (bk > kv_len && kv_len > 0) bk = kv_len;
    *block_q = bq;
    *block_k = bk;
}

/* SPDX-License-Identifier: BSD-3-Clause */
// The preset table. Each shape is written out in full so that the table reads as the list it is.
#include "presets.h"

#include <string.h>

// B, Hq, Nq, Nk, D, causal, pass; Hkv = Hq, Dv = D, f32 (q and k/v), bhsd. Nk -1 = Nq. No modifier,
// no reference.
#define CASE(b, h, nq, nk, d, causal, pass) \
    CASE_MODS(b, h, nq, nk, d, causal, pass, MODS(-1, -1, 0.0, 0, NO_BIAS, 0), -1)

// The same with score modifiers (window left, right, softcap, alibi, bias, sinks) and the index of
// the case it is compared with (bench_case.reference), -1 for none.
#define MODS(wl, wr, cap, alibi, bias, sinks)          \
    {                                                  \
        (wl), (wr), (cap), (alibi), (bias), (sinks), 0 \
    }
// A bias of the given kind with its gradient asked for (--dbias).
#define MODS_DBIAS(bias)             \
    {                                \
        -1, -1, 0.0, 0, (bias), 0, 1 \
    }
#define CASE_MODS(b, h, nq, nk, d, causal, pass, mods, reference)                                 \
    {                                                                                             \
        {SIZES((b), (h), (nq), (nk), (d), FA_F32, (causal), BENCH_LAYOUT_BHSD), mods, NOT_RAGGED, \
         NOT_SHARED},                                                                             \
            (pass), (reference)                                                                   \
    }
// A bench_shape's fields up to its layout: Hkv = Hq, Dv = D (-1: they follow), f32 q over k and v of
// type kv; the modifiers, the ragged spec and shared_kv follow them.
#define SIZES(b, h, nq, nk, d, kv, causal, layout) b, h, -1, nq, nk, d, -1, F32, kv, causal, layout
#define NOT_SHARED                                 0
#define NOT_RAGGED                       \
    {                                    \
        BENCH_RAGGED_NONE, 0, 0, 0, 0, 0 \
    }

// A ragged case (--varlen, --decode-batch): n sequences of lengths lo..hi, pages of `page` keys (decode;
// 0 = contiguous only), Hq = Hkv = h, f32, bshd (token-major, FlashAttention's and vLLM's memory);
// B, Nq and Nk are set from the spec when the options are finished (options.c).
#define RAGGED(kind, n, lo, hi, page, h, d, causal) RAGGED_KV(kind, n, lo, hi, page, h, d, causal, F32)
// The same over a KV cache of type kv under f32 queries (--kv-dtype).
#define RAGGED_KV(kind, n, lo, hi, page, h, d, causal, kv)                                             \
    {                                                                                                  \
        {SIZES((n), (h), (hi), (hi), (d), (kv), (causal), BSHD), NO_MODS, SPEC(kind, n, lo, hi, page), \
         NOT_SHARED},                                                                                  \
            FWD, -1                                                                                    \
    }
// The decode batch (the decode-batch preset's) over a cache of type kv in pages of `page` keys.
#define DECODE_KV(page, kv) RAGGED_KV(DECODE, 16, 1024, 32768, page, 8, 128, NONE, kv)
#define DECODE_KV_PAGES(kv) DECODE_KV(1, kv), DECODE_KV(16, kv), DECODE_KV(256, kv)

// DeepSeek's MLA (V2, V3, R1) with its projections absorbed, as its decode kernels run it: 128 query
// heads over one latent cache of 576 dims per token (512 latent + 64 RoPE), V its first 512 (a view of
// K's memory), f32 queries over a bf16 cache (kv: --kv-dtype replaces it), bottom-right causal; q and
// out token-major (FlashMLA's [B][S][H][D]).
#define MLA(nq, nk, kv)                                                                                     \
    {                                                                                                       \
        {1, 128, 1, (nq), (nk), 576, 512, F32, (kv), FA_CAUSAL_BOTTOM_RIGHT, BSHD, NO_MODS, NOT_RAGGED, 1}, \
            FWD, -1                                                                                         \
    }
#define SPEC(kind, n, lo, hi, page)        \
    {                                      \
        (kind), (n), (lo), (hi), (page), 0 \
    }
#define BSHD    BENCH_LAYOUT_BSHD
#define F32     FA_F32
#define BF16    FA_BF16
#define NO_MODS MODS(-1, -1, 0.0, 0, NO_BIAS, 0)
#define VARLEN  BENCH_RAGGED_VARLEN
#define DECODE  BENCH_RAGGED_DECODE

#define NO_BIAS BENCH_BIAS_NONE
#define KEYPAD  BENCH_BIAS_KEYPAD
#define FULL    BENCH_BIAS_FULL
// The targets (bench/results/2026-12-01-amd-epyc-zen4.md, "Score modifiers"): a causal sliding window of
// 256 keys, and each value modifier against the plain forward of the same shape.
#define WINDOW(d, ref)       CASE_MODS(1, 8, 16384, -1, d, TOP, FWD, MODS(256, 0, 0.0, 0, NO_BIAS, 0), ref)
#define LONG(n, causal, ref) CASE_MODS(1, 1, (n), -1, 64, (causal), FWD, NO_MODS, (ref))
#define MODIFIED(d, cap, alibi, bias, ref) \
    CASE_MODS(1, 8, 4096, -1, d, NONE, FWD, MODS(-1, -1, cap, alibi, bias, 0), ref)

#define NONE FA_CAUSAL_NONE
#define TOP  FA_CAUSAL_TOP_LEFT
#define FWD  BENCH_PASS_FWD
#define BWD  BENCH_PASS_BWD

static const bench_preset presets[] = {
    // Prefill-sized forwards on one node: the figures the README's performance section quotes.
    {"prefill",
     "f32 B=1 H=8 N=4096, D=64 and 128, causal none and top-left: long prompts",
     4,
     {CASE(1, 8, 4096, -1, 64, NONE, FWD), CASE(1, 8, 4096, -1, 64, TOP, FWD),
      CASE(1, 8, 4096, -1, 128, NONE, FWD), CASE(1, 8, 4096, -1, 128, TOP, FWD)}},
    {"decode",
     "B=1 H=8 Nq=1 Nk=32768 D=128: one query, a long cache (reports % of read bandwidth)",
     1,
     {CASE(1, 8, 1, 32768, 128, NONE, FWD)}},
    // The shapes of the many-core scaling runs (scripts/node_check.sh), measured on 16 cores
    // against PyTorch's scaled_dot_product_attention (bench/compare_torch.py).
    {"scaling",
     "B=1 H=16 N=4096 D=64; B=1 H=16 N=4096 D=128 causal; B=8 H=16 N=512 D=64\n"
     "                     causal: scaling over cores, against PyTorch (scripts/node_check.sh)",
     3,
     {CASE(1, 16, 4096, -1, 64, NONE, FWD), CASE(1, 16, 4096, -1, 128, TOP, FWD),
      CASE(8, 16, 512, -1, 64, TOP, FWD)}},
    {"long-bwd",
     "B=1 H=1 N=8192 D=64, --pass bwd: a long backward",
     1,
     {CASE(1, 1, 8192, -1, 64, NONE, BWD)}},
    // Long rows, which should keep N=4096's rate: one head, whose K and V (2 MiB at N=4096, 32 MiB at
    // 65536) outgrow L2, then an L3's share; each case against N=4096 of its mask, in the same run.
    {"long-rows",
     "B=1 H=1 D=64: causal N=4096, 16384 and 65536, then unmasked N=4096 and 16384, each against\n"
     "                     N=4096 of its mask (--pass bwd for the backward)",
     5,
     {CASE(1, 1, 4096, -1, 64, TOP, FWD), LONG(16384, TOP, 0), LONG(65536, TOP, 0),
      CASE(1, 1, 4096, -1, 64, NONE, FWD), LONG(16384, NONE, 3)}},
    // Cases 1 and 3 are the references of 2 and 4: ratios within one run (a shared machine drifts).
    {"window",
     "B=1 H=8 N=16384 D=64 and 128: causal, then causal with a window of 256 keys\n"
     "                     (--window 256,0), each against the causal case (--pass bwd for the backward)",
     4,
     {CASE(1, 8, 16384, -1, 64, TOP, FWD), WINDOW(64, 0), CASE(1, 8, 16384, -1, 128, TOP, FWD),
      WINDOW(128, 2)}},
    // The bias's gradient (fa_params.dbias) of a [1][H][N][N] bias, against the same backward without it.
    {"bias-grad",
     "B=1 H=8 N=2048 D=64, --pass bwd: a full bias [1][Hq][Nq][Nk], then with its gradient (--dbias),\n"
     "                     against the backward without it",
     2,
     {CASE_MODS(1, 8, 2048, -1, 64, NONE, BWD, MODS(-1, -1, 0.0, 0, FULL, 0), -1),
      CASE_MODS(1, 8, 2048, -1, 64, NONE, BWD, MODS_DBIAS(FULL), 0)}},
    {"modifiers",
     "B=1 H=8 N=4096 D=64 and 128: plain, then softcap 50, ALiBi, a key-padding bias\n"
     "                     [B][1][1][Nk] and a full bias [B][Hq][Nq][Nk], each against the plain case",
     10,
     {CASE(1, 8, 4096, -1, 64, NONE, FWD), MODIFIED(64, 50.0, 0, NO_BIAS, 0),
      MODIFIED(64, 0.0, 1, NO_BIAS, 0), MODIFIED(64, 0.0, 0, KEYPAD, 0), MODIFIED(64, 0.0, 0, FULL, 0),
      CASE(1, 8, 4096, -1, 128, NONE, FWD), MODIFIED(128, 50.0, 0, NO_BIAS, 5),
      MODIFIED(128, 0.0, 1, NO_BIAS, 5), MODIFIED(128, 0.0, 0, KEYPAD, 5), MODIFIED(128, 0.0, 0, FULL, 5)}},
    // The targets (bench/README.md, "Ragged batches"; measured in
    // bench/results/2026-12-01-amd-epyc-zen4.md): each case times its packed or paged call
    // against the calls it replaces, in turn, at every thread count.
    // D=64 only, so that it takes about a minute on 2 cores; --preset varlen --d 128 for the other.
    {"varlen",
     "32 causal prompts of 64..2048 tokens (--varlen 32:64-2048), H=8, D=64: packed,\n"
     "                     against one dense call over equal lengths and a call per sequence",
     1,
     {RAGGED(VARLEN, 32, 64, 2048, 0, 8, 64, TOP)}},
    {"decode-batch",
     "a decode step of 16 caches of 1024..32768 keys (--decode-batch 16:1024-32768), H=8,\n"
     "                     D=128, pages of 16 and of 256 keys: against the contiguous cache and the\n"
     "                     read bandwidth",
     2,
     {RAGGED(DECODE, 16, 1024, 32768, 16, 8, 128, NONE), RAGGED(DECODE, 16, 1024, 32768, 256, 8, 128, NONE)}},
    // The decode batch above over every cache type, each in pages of 1, 16 and 256 keys
    // against its contiguous cache. Cases of one type share one build of the caches (decode_batch.c).
    {"decode-kv",
     "the decode-batch step (16 caches of 1024..32768 keys, H=8, D=128) over f32, bf16,\n"
     "                     i8, f8e4m3 and f8e5m2 caches (quantized: per-row f32 scales), pages of 1, 16\n"
     "                     and 256 keys, each against the contiguous cache and the read bandwidth",
     15,
     {DECODE_KV_PAGES(F32), DECODE_KV_PAGES(BF16), DECODE_KV_PAGES(FA_I8), DECODE_KV_PAGES(FA_F8_E4M3),
      DECODE_KV_PAGES(FA_F8_E5M2)}},
    // DeepSeek's MLA head dims, D=576 and Dv=512 with V a view of K (--shared-kv). Decode steps
    // of 1 and 4 rows (a speculative step's tokens) over 4096 and 32768 cached tokens, then a causal
    // prefill of 4096 tokens over the same kind of cache.
    {"mla",
     "DeepSeek MLA: Hq=128 Hkv=1 D=576 Dv=512, V = K's first 512 dims (--shared-kv),\n"
     "                     f32 q over a bf16 latent cache, bottom-right causal: Nq 1 and 4 over Nk 4096\n"
     "                     and 32768 (decode, % of read bandwidth), and Nq=Nk=4096 (prefill)",
     5,
     {MLA(1, 4096, BF16), MLA(4, 4096, BF16), MLA(1, 32768, BF16), MLA(4, 32768, BF16),
      MLA(4096, 4096, BF16)}},
};

const bench_preset *bench_preset_find(const char *name)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (strcmp(presets[i].name, name) == 0) return &presets[i];
    return NULL;
}

void bench_presets_print(FILE *f)
{
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        fprintf(f, "  %-18s %s\n", presets[i].name, presets[i].what);
}

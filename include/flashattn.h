/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * flashattn — exact fused softmax attention for many-core CPUs.
 *
 * One public header. Everything a caller may rely on is stated here; the .c
 * files only explain how.
 *
 * Computes   O = softmax(scale · Q·Kᵀ + mask) · V, with the score modifiers of
 * current models (windows, softcap, ALiBi, bias, sinks: see fa_params),
 * row by row over key tiles (online softmax), never holding an Nq×Nk score
 * matrix. Memory beyond the caller's tensors: one scratch arena per thread,
 * sized by the block sizes and head dims, never by the sequence lengths; and
 * one buffer in the context for per-problem values (a split-KV forward's
 * partial results, at most 16 MiB; the backward's B·Hq·Nq row values). Both
 * grow only when a call needs more and are kept until fa_context_destroy (see
 * fa_forward, fa_backward, fa_stats and the README's "Memory" section).
 *
 * ## Error convention (stated once, holds for every call)
 * Every call that can fail returns an fa_status. FA_OK (0) is success; any
 * other value names the first problem found, and the call has then written
 * NO byte of any output it was given (out, lse, *ctx, stats). Status values
 * are stable: they are never renumbered, new ones are only appended.
 * The library never prints, never calls abort() or exit().
 *
 * ## Determinism
 * For a given problem (shapes, strides, dtype, params) and a given block
 * size choice, the bytes of every output are identical for every thread
 * count, every binding mode and every repetition. The work is cut into
 * items; each item is computed by exactly one thread, front to back, in a
 * fixed order, and what an item computes for an output element (operations
 * and their order) depends on the problem only. (The backward may cut its
 * work in three ways by thread count; all compute every element
 * identically.)
 *
 * ## Subnormals
 * The probabilities of keys (exp of a key's score minus its row's max or
 * log-sum-exp) that come out below the smallest normal number, FLT_MIN for
 * f32 and DBL_MIN for f64, are flushed to +0, element by element, the same
 * on every thread. Each is less than 2^-126 (f64: 2^-1022) of its row's
 * total: far below f32's rounding (2^-24). Nothing else is flushed:
 * subnormal inputs are computed as IEEE 754 says, and the library never
 * reads or changes MXCSR (FTZ/DAZ). Why: on many x86 cores each multiply
 * that reads a subnormal is tens of times slower, and peaky scores make
 * many of them. The one exception is bf16 on dot-product units (AMX tiles,
 * vdpbf16ps, Arm's BFDOT: the "amx", "avx512_bf16", "neon_bf16" and "sve_bf16" tables, see
 * fa_forward, "dtype"): they read bf16 subnormals (below 2^-126) of q, k and v
 * as zero.
 *
 * ## Thread safety
 * A context serves one call at a time; a second concurrent call on the same
 * context returns FA_ERR_BUSY and touches nothing. Different contexts may be
 * used concurrently from different threads. Passing ctx = NULL uses a
 * default context private to the calling thread (created on first use,
 * freed when the thread exits), so concurrent NULL-context calls from many
 * threads are safe.
 *
 * ## fork()
 * GNU libgomp's worker threads are not copied by fork(): a parallel region in
 * the child of a process that has run one (the library's or the user's own)
 * would wait forever. So in a child of a process that had more than one
 * thread when it forked (and in that child's descendants) every call runs on
 * the calling thread alone: same results, bit for bit, at one core's speed.
 * A child of a single-threaded process keeps its threads. exec() clears this.
 */
#ifndef FLASHATTN_H
#define FLASHATTN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FLASHATTN_VERSION_MAJOR 0
#define FLASHATTN_VERSION_MINOR 5
#define FLASHATTN_VERSION_PATCH 0
/** The version of this header as one number for #if checks: MAJOR·10000 + MINOR·100 + PATCH
 *  (0.4.0 is 400). fa_version_number() is the library a program runs with. */
#define FLASHATTN_VERSION \
    (FLASHATTN_VERSION_MAJOR * 10000 + FLASHATTN_VERSION_MINOR * 100 + FLASHATTN_VERSION_PATCH)
/** The ABI version: the soname is libflashattn.so.FLASHATTN_ABI_VERSION. It changes only when the
 *  stable tier (below) breaks incompatibly, never for additions. */
#define FLASHATTN_ABI_VERSION 1

/*
 * ## ABI: what stays compatible, and how the structs grow
 *
 * Tiers.
 * - Stable: the signatures of the calls declared here and their semantics as documented; the fields
 *   of the public structs and their meaning; the values of every enum and of fa_status; the reading
 *   rule below and the defaults of the FA_*_INIT initialisers. A program built against this header
 *   runs unchanged, with the same meaning, on every later library of the same FLASHATTN_ABI_VERSION.
 *   Later versions only add to it: calls, struct fields (under the rule below), enum values, statuses.
 * - Experimental (may change in any release, never the status or bytes of a call that succeeds
 *   under the stable tier's rules): the kernel-table names (the values of FLASHATTN_ISA and of
 *   fa_stats.isa), the backward plan names (fa_stats.backward_plan), which block sizes, kernel
 *   tables and backward plans are chosen, the values fa_stats reports, the wording of
 *   fa_last_error() and fa_status_str(), and performance. Print them; do not branch on them.
 *
 * Versions. FLASHATTN_VERSION is the header a program was compiled with; fa_version_number() (and
 * fa_version(), as text) the library it runs with, which may be later: `fa_version_number() >=
 * 500` asks whether a feature of 0.5.0 is there. The soname, libflashattn.so.FLASHATTN_ABI_VERSION,
 * is independent of the version: 0.4.0 and every later release with ABI version 1 are
 * libflashattn.so.1, so a program linked against one runs on the others. The CMake package of a
 * later release accepts find_package(flashattn 0.4) as long as its ABI version is the same.
 *
 * Size-tagged structs. fa_params, fa_context_opts, fa_seqs and fa_stats begin with
 * `size_t struct_size`, the caller's sizeof of the struct. Initialise each one with its macro,
 * `fa_params p = FA_PARAMS_INIT;` (C and C++; then set the fields you need by name, never
 * positionally), or, where the struct is not declared from this header (an FFI mirror, a raw heap
 * block), with its function, fa_params_init(p, size), which writes the defaults into `size` bytes
 * and sets struct_size = size. The reading rule, applied by every call to every such struct it is
 * given (p and p->seqs of fa_forward, fa_backward and their _check calls; opts of
 * fa_context_create; out of fa_context_stats; the same in flashattn_mpi.h):
 *   1. struct_size must be FA_<STRUCT>_SIZE_MIN plus a multiple of 8 (every layout since is), at
 *      most FA_STRUCT_SIZE_MAX; otherwise FA_ERR_ARG, with fa_last_error() naming
 *      <argument>.struct_size and the initialiser to use. FA_<STRUCT>_SIZE_MIN is the size of the
 *      struct in 0.4.0, the first size-tagged layout; FA_STRUCT_SIZE_MAX is 4096.
 *   2. The library reads min(struct_size, its own sizeof) bytes. The fields that a smaller struct
 *      (built against an older header) lacks take their defaults.
 *   3. The bytes from the library's own sizeof up to struct_size (fields of a newer header that this
 *      library does not know) must all be zero, their defaults; otherwise FA_ERR_UNSUPPORTED, with
 *      fa_last_error() naming the argument and the byte offset of the field ("p sets a field at byte
 *      120 that this library (0.4.0) does not know"), and, as for every refusal, nothing written.
 *   4. fa_stats is an output: the call writes only its first min(struct_size, sizeof) bytes and
 *      leaves struct_size as it was (rules 1 and 3 hold for it too: a newer field it cannot fill
 *      must be zero, and stays zero).
 *   A struct that fails rule 1 or 3 is refused before any check that reads its fields: first thing
 *   in fa_forward, fa_backward and their _check calls (p, then p->seqs), after the NULL check of
 *   ctx in fa_context_create, after those of ctx and out in fa_context_stats. p and opts NULL keep
 *   meaning "every default".
 * Every field added after 0.4.0 is appended at the end of its struct, is 8 bytes wide and 8-byte
 * aligned (so no padding appears between versions), and has all-zero bytes as its default, meaning
 * "off" (the behaviour of the version before it). Why size tags: they are Vulkan's sType/pNext and
 * Linux's extensible syscall structs (openat2, clone3: copy_struct_from_user). An older program's
 * smaller struct gets the defaults of what it lacks; a newer program's larger struct works on an
 * older library as long as it uses nothing new, and is refused, not misread, when it does; an FFI
 * mirror (ctypes, cffi, Julia) only sets struct_size to its own size and is never read past it. (A
 * struct returned by value could not be sized by its caller; a struct without a size could not grow
 * without breaking every program built against the header before.)
 *
 * fa_tensor is frozen: its layout never changes (it has no size tag, as fa_merge takes arrays of
 * it). Per-tensor information a later version needs comes in a new struct.
 *
 * The library exports only the fa_ functions declared here. Sizes and offsets above are those of
 * the platform's C ABI (LP64 on x86-64 and AArch64 Linux).
 */

/** The largest struct_size any call accepts (rule 1 above). */
#define FA_STRUCT_SIZE_MAX 4096

/** The largest head dimension (D and Dv) any call accepts. */
#define FA_MAX_HEAD_DIM 576

#if defined(FLASHATTN_STATIC_DEFINE)
#define FA_API
#elif defined(_WIN32)
#if defined(FLASHATTN_BUILDING)
#define FA_API __declspec(dllexport)
#else
#define FA_API __declspec(dllimport)
#endif
#else
#define FA_API __attribute__((visibility("default")))
#endif

/** Version of the library actually linked, "MAJOR.MINOR.PATCH". Never NULL. */
FA_API const char *fa_version(void);

/** Version of the library actually linked as one number, MAJOR·10000 + MINOR·100 + PATCH (0.4.0
 *  is 400): compare it with FLASHATTN_VERSION, the header's. */
FA_API unsigned fa_version_number(void);

/**
 * Status codes. Stable values: never renumbered.
 *
 * When several arguments are wrong, the status reports the first class found
 * in this order: NULL, ARG, DTYPE, SHAPE, STRIDE, ALIAS, UNSUPPORTED, BUSY
 * (after the reading of the size-tagged structs: see the ABI section).
 */
typedef enum {
    FA_OK = 0,       /**< success */
    FA_ERR_NULL = 1, /**< a required pointer is NULL (a tensor, or the data of a non-empty tensor) */
    /** negative or inconsistent sizes, Hq % Hkv != 0, D or Dv outside 1..FA_MAX_HEAD_DIM */
    FA_ERR_SHAPE = 2,
    /** negative stride, self-overlapping output, offsets overflowing int64, data or lse not aligned to its
     *  element size */
    FA_ERR_STRIDE = 3,
    FA_ERR_DTYPE = 4, /**< unknown dtype, or tensors of one call with different dtypes */
    FA_ERR_ALIAS = 5, /**< an output overlaps an input or another output */
    FA_ERR_ARG = 6,   /**< a scalar or enum argument is invalid (NaN/Inf scale, unknown causal mode, ...) */
    FA_ERR_NOMEM = 7, /**< scratch memory could not be allocated; the context stays usable */
    /** valid but not available in this version (see each call), or not on this CPU */
    FA_ERR_UNSUPPORTED = 8,
    FA_ERR_BUSY = 9,    /**< the context is serving another call */
    FA_ERR_RUNTIME = 10 /**< the threading, topology or MPI runtime failed */
} fa_status;

/** A short English description of s. Never NULL, also for values not in fa_status. */
FA_API const char *fa_status_str(fa_status s);

/**
 * What went wrong in the calling thread's last call that returned an fa_status: one line naming
 * the call, the offending argument and its values, e.g.
 *   "fa_forward: k.dim = 15 but q.dim = 16"
 *   "fa_context_create: FLASHATTN_ISA=sse: expected ref, avx2, avx512, avx512_bf16, amx, neon,
 *    neon_bf16, sve, sve_bf16 or auto" (one line)
 * Every such call sets it: to the message when it fails, to "" when it succeeds. The text is for
 * people (its wording may change between versions; the status is what programs test). Never NULL;
 * valid until the calling thread's next call into the library. Thread-local: calls on other threads
 * do not change it.
 */
FA_API const char *fa_last_error(void);

/** Element types. */
typedef enum {
    FA_F32 = 0,  /**< IEEE binary32; accumulates in binary32 */
    FA_F64 = 1,  /**< IEEE binary64; accumulates in binary64 (the exactness mode) */
    FA_BF16 = 2, /**< bfloat16 (uint16_t storage); accumulates in binary32 (see fa_forward, "dtype") */
    FA_F16 = 3,  /**< IEEE binary16 (uint16_t storage); accumulates in binary32 (see fa_forward, "dtype") */
    /* Quantized KV caches (k and v of fa_forward only, under FA_F32 q and out): each element is read
     * as scale · element, with its row's scale from fa_params.k_scale / v_scale. */
    FA_I8 = 4,      /**< signed 8-bit integer (int8_t storage) */
    FA_F8_E4M3 = 5, /**< OCP FP8 E4M3 (uint8_t storage): no infinities, S.1111.111 is NaN, ±448 the largest */
    FA_F8_E5M2 = 6  /**< OCP FP8 E5M2 (uint8_t storage): binary16's top byte, S.11111.00 ±inf, others NaN */
} fa_dtype;

/**
 * A strided 4-D view [batch][heads][seq][dim] of caller memory.
 *
 * Element (b, h, s, d) lives at
 *   data + (b·stride_batch + h·stride_head + s·stride_seq + d) elements.
 * The dim axis is contiguous by definition (it has no stride field).
 * Strides are in elements and must be >= 0. Inputs may broadcast with a
 * stride of 0 (for instance one K shared by all batches); an output must not
 * overlap itself. The library never keeps the pointer after a call returns.
 * Frozen: this layout never changes (see the ABI section); it has no struct_size.
 */
typedef struct {
    void *data;
    fa_dtype dtype;
    int64_t batch, heads, seq, dim;
    int64_t stride_batch, stride_head, stride_seq;
} fa_tensor;

/**
 * A contiguous [B][H][S][D] tensor view. If a size is negative or the
 * strides would overflow int64, the returned view carries negative strides,
 * so any call given it returns FA_ERR_SHAPE or FA_ERR_STRIDE.
 */
FA_API fa_tensor fa_tensor_bhsd(void *data, fa_dtype t, int64_t b, int64_t h, int64_t s, int64_t d);

/** A contiguous [B][S][H][D] tensor (the "batch-first, heads-inner" layout), same rules. */
FA_API fa_tensor fa_tensor_bshd(void *data, fa_dtype t, int64_t b, int64_t s, int64_t h, int64_t d);

/** Causal masks. Query i (0-based) may see key j when: */
typedef enum {
    FA_CAUSAL_NONE = 0,     /**< always */
    FA_CAUSAL_TOP_LEFT = 1, /**< j <= i */
    /** j <= i + Nk - Nq (the KV-cache convention: the last query sees every key) */
    FA_CAUSAL_BOTTOM_RIGHT = 2
} fa_causal;

/**
 * A batch of sequences of different lengths (varlen, KV caches, paged KV), for fa_params.seqs.
 * Start from FA_SEQS_INIT (or fa_seqs_init), then set the fields you need by name.
 * Sequence b (0 <= b < batch):
 * - queries: with cu_seqlens_q, q, out (and dout, dq) are packed [1][Hq][total_q][D] views and the
 *   sequence owns query rows cu_seqlens_q[b] .. cu_seqlens_q[b+1]; lse is then [1][Hq][total_q].
 *   Without it, q is [batch][Hq][Nq][D] and every sequence has Nq rows.
 * - keys: with cu_seqlens_k, k and v (and dk, dv) are packed [1][Hkv][total_k][D] and the sequence
 *   owns key rows cu_seqlens_k[b] .. cu_seqlens_k[b+1]. With block_table (paged K/V, fa_forward only),
 *   k and v are page pools with batch = number of pages and seq = page size: key t of sequence b
 *   lives in page block_table[b·pages_per_seq + t / page_size], row t % page_size; its capacity is
 *   pages_per_seq·page_size. Otherwise k is [batch][Hkv][Nk][D] and the capacity is Nk.
 * - seqused_k[b] (optional) keys of the sequence are in use (<= its key count or capacity): the call
 *   reads keys [0, seqused_k[b]) and never the others. k and v are inputs, never written: for a
 *   decode step, write the new token's K and V into the cache first and count it in seqused_k[b].
 * Causal alignment, windows, ALiBi and sinks apply per sequence, with its own Nq and Nk (its keys in
 * use): d0 = Nk_b - Nq_b. A per-sequence bias is not supported (p.bias with seqs: FA_ERR_UNSUPPORTED).
 * The arrays are read during the call only (they are inputs: they may overlap other inputs, never
 * an output). Offsets are in rows of the token axis: they start at 0, never decrease and end within
 * the tensor. Outputs are written for the sequences' rows only: rows after cu_seqlens_q[batch] (out,
 * lse, dq) and after cu_seqlens_k[batch] (dk, dv) are left as they are, and so are the dk and dv rows
 * of keys beyond seqused_k. Sequences may share pages.
 * Work: one item per (sequence, head, query block), and a sequence with few query items (a decode
 * step) splits its keys exactly as a dense call of it alone would (fa_forward's split-KV), so each
 * sequence's rows are bitwise those of a dense call of it alone with the same block sizes, at any
 * thread count, and a decode batch keeps every thread busy.
 * Speed, not results: a decode reads its pages in place, so a pool of small pages in 4 KiB memory
 * pages costs a TLB miss at nearly every key; a pool (or cache) in huge pages (madvise(MADV_HUGEPAGE)
 * under transparent huge pages, or hugetlbfs) spares them (fa-bench --huge-pages measures both).
 */
typedef struct {
    size_t struct_size; /**< sizeof(fa_seqs) of the caller (FA_SEQS_INIT sets it; see the ABI section) */
    int64_t batch;      /**< number of sequences */
    const int64_t *cu_seqlens_q; /**< batch+1 non-decreasing offsets into the query token axis, or NULL */
    const int64_t *cu_seqlens_k; /**< batch+1 offsets into the key token axis, or NULL */
    /** per sequence: keys in use [0, seqused_k[b]), the new token's included; NULL = all */
    const int64_t *seqused_k;
    const int32_t *block_table; /**< paged K/V: [batch][pages_per_seq] page indices, or NULL */
    int64_t pages_per_seq;      /**< entries per sequence in block_table */
} fa_seqs;

/** The size of fa_seqs in 0.4.0, the first size-tagged layout: the smallest struct_size a call accepts. */
#define FA_SEQS_SIZE_MIN (offsetof(fa_seqs, pages_per_seq) + sizeof(int64_t))
/** Every field at its default: no sequences, no arrays. Set batch and the arrays you use by name. */
/* (clang-format 14 would lay out a braced initialiser in a macro as a block.) */
/* clang-format off */
#define FA_SEQS_INIT {sizeof(fa_seqs), 0, NULL, NULL, NULL, NULL, 0}
/* clang-format on */
/** FA_SEQS_INIT for a struct of `size` bytes that was not declared from this header (an FFI mirror,
 *  a heap block): writes the defaults into its first `size` bytes (zero for bytes this library does
 *  not know) and sets struct_size = size. Writes exactly `size` bytes; nothing when s is NULL or size
 *  < sizeof(size_t). */
FA_API void fa_seqs_init(fa_seqs *s, size_t size);

/**
 * What to compute besides the plain product. Start from FA_PARAMS_INIT (or fa_params_init), then
 * set the fields you need by name.
 *
 * ## Score modifiers
 * For query row i and key j (0-based) of batch b and query head h, with the diagonal offset
 * d0 = 0 under FA_CAUSAL_TOP_LEFT and d0 = Nk - Nq otherwise (the bottom-right convention, also
 * for windows without a causal mask), plus diagonal_shift, the score is built in this order:
 *   1. s = scale · q_i·k_j
 *   2. softcap > 0:      s = softcap · tanh(s / softcap)           (Gemma 2: after the scale)
 *   3. alibi_slopes:     s = s - alibi_slopes[h] · |i + d0 - j|
 *   4. bias:             s = s + bias[b][h][i][j]                    (-inf entries mask)
 * and key j is visible to row i when the causal mask allows it (j <= i + d0) and it lies in the
 * window: j >= i + d0 - window_left when window_left >= 0, j <= i + d0 + window_right when
 * window_right >= 0 (-1 leaves a side unbounded; masks combine by intersection). Then
 *   out_i = sum_j e^(s_ij) v_j / (sum_j e^(s_ij) + e^(sinks[h]))   over visible j
 * with the sink term only when sinks is set; lse_i is the log of that denominator. A row that sees
 * no key gets out = 0 and lse = sinks[h] with sinks, lse = -inf without (and zero gradients), also
 * when its scores are all -inf through the bias. A -inf bias hides scores, not rows of v or dout:
 * the v rows of the keys it hides, and in the backward the dout row of a row it hides entirely,
 * must be finite for them to contribute exact zeros (0 · NaN is NaN), as with any key whose
 * probability is 0; the causal mask and windows have no such condition.
 * Costs: key tiles outside every row's window are never loaded or computed; the masks are applied
 * element-wise on edge tiles only, where the float kernels compute, a few keys at a time, only the
 * vectors of query rows (16 f32 rows on AVX-512) that see one of them; softcap, ALiBi and bias are
 * applied to every score computed.
 *
 * ## Dropout
 * With dropout_p = p in (0, 1), fa_forward computes
 *   out_i = sum_j keep(b, h, i, j) / (1 - p) · P_ij v_j
 * with P the softmax above (sinks included), undropped: lse stays the log of the undropped
 * denominator, and fa_backward, given the same p, seed and offset, recomputes the same mask:
 *   dV = (P∘M)ᵀ·dO,  dP = (dO·Vᵀ)∘M,  dS = P∘(dP - delta),  M_ij = keep(b, h, i, j) / (1 - p),
 * delta_i = rowsum(dO∘O) over the (dropped) output O the forward returned, as FlashAttention does.
 * keep(b, h, i, j) is a pure function of (dropout_seed, dropout_offset, b, h, i, j) and of Hq alone,
 * never of the thread count, the block sizes, the kernel table, a split of the keys or the layout:
 * b is the batch entry (with p.seqs, the sequence), h the query head (0..Hq-1), i and j the 0-based
 * row and key of that sequence (its own rows and keys, also when packed or paged; diagonal_shift and
 * the causal alignment do not move them; dropout_row0 and dropout_key0 do). So a packed batch drops
 * exactly what its dense calls drop, and fa_dropout_mask gives the mask for a reference.
 * The generator is Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel random numbers: as easy as
 * 1, 2, 3", SC 2011; Random123's philox4x32 with 10 rounds), called with
 *   key     = {lo32(dropout_seed), hi32(dropout_seed)}
 *   counter = {lo32(s), hi32(s), j / 8, i}   where s = dropout_offset + b·Hq + h (mod 2^64)
 * (one stream per (batch, head), as FlashAttention and PyTorch's "subsequence" scheme; a training
 * loop advances dropout_offset by at least B·Hq per step). Its four 32-bit outputs x[0..3] hold the
 * 16-bit uniforms of keys 8·(j/8) + 0..7: key j's is u = x[e / 2] >> (16·(e % 2)) & 0xFFFF with
 * e = j % 8 (low half first), and key j is kept when u < t with the threshold
 *   t = floor((1 - p) · 2^16 + 1/2)   computed in IEEE double (1 - p rounded to double first),
 * so a key is kept with probability t / 2^16, within 2^-17 of 1 - p (t = 2^16 keeps everything,
 * t = 0 drops everything). Sixteen bits a key (FlashAttention compares eight) make one generator
 * call, most of dropout's cost, serve 8 keys. The counter holds rows i < 2^32 and keys j < 2^34: a
 * call with dropout over more query rows or keys (q.seq, k.seq or a paged capacity) is
 * FA_ERR_UNSUPPORTED. The kept probabilities are multiplied by 1/(1 - p), computed in double and
 * rounded once to the accumulation type (float unless the tensors are FA_F64); dropped ones by 0 (so
 * a NaN stays NaN).
 * p = 0 computes exactly what a call without these fields does, whatever the seed and offset.
 * Which calls accept dropout: fa_forward and fa_backward (dense, p.seqs packed or per-sequence,
 * paged caches in the forward, modifiers, sinks, split-KV, f32, f64, bf16, f16, quantized caches),
 * and their _check calls. On the "amx", "avx512_bf16", "neon_bf16" and "sve_bf16" tables an all-bf16
 * call with dropout, forward and backward, widens instead of running on dot-product units. The MPI
 * layer (flashattn_mpi.h) drops what one call over its whole sequence drops (global rows and keys).
 */
typedef struct {
    size_t struct_size;  /**< sizeof(fa_params) of the caller (FA_PARAMS_INIT sets it; see the ABI section) */
    double scale;        /**< score scale; 0 means 1/sqrt(D). Must be finite, and within float's range unless
                                    the tensors are FA_F64 (scores accumulate in float otherwise) */
    fa_causal causal;    /**< causal mask, FA_CAUSAL_NONE by default */
    int64_t window_left; /**< keys before the diagonal a row sees; -1 = unbounded (< -1: FA_ERR_ARG) */
    int64_t window_right;      /**< keys after the diagonal a row sees; -1 = unbounded (< -1: FA_ERR_ARG) */
    double softcap;            /**< 0 = off; otherwise finite and positive (else FA_ERR_ARG) */
    const float *alibi_slopes; /**< NULL = off; otherwise Hq slopes, one per query head (any float) */
    /** NULL = off; otherwise an additive bias [B][Hq][Nq][Nk] of the dtype of q (its dim axis is
     *  the key axis, contiguous). batch, heads and seq may each be 1 to broadcast (or have stride 0);
     *  dim must be Nk. An input: it may overlap other inputs, not out, lse or gradients. */
    const fa_tensor *bias;
    const float *sinks; /**< NULL = off; otherwise Hq attention-sink logits, one per query head (any float) */
    /** fa_backward only (fa_forward ignores it): NULL, or Hq floats overwritten with dL/dsinks,
     *  which requires sinks. dsinks[h] = -sum over b, i of exp(sinks[h] - lse[b][h][i]) · delta[b][h][i]
     *  (delta = rowsum(dout ∘ out)), summed b-major in a fixed order in the accumulation type and
     *  rounded to float once. The bias's gradient is p->dbias's. */
    float *dsinks;
    /** NULL = every tensor is a dense batch, as described at fa_forward; otherwise the sequences of
     *  the batch (see fa_seqs). */
    const fa_seqs *seqs;
    /** Added to the diagonal offset d0 (0 by default): for a block of a longer sequence whose
     *  query rows start at global position a and key rows at position b, FA_CAUSAL_TOP_LEFT with
     *  diagonal_shift = a - b gives the causal mask, windows and ALiBi distances of the global
     *  positions (ring attention, chunked prefill). With seqs it applies to every sequence.
     *  |diagonal_shift| <= FA_MAX_DIAGONAL_SHIFT, else FA_ERR_ARG. */
    int64_t diagonal_shift;
    /* ---- 0.5.0 ---- */
    /** A quantized KV cache's scales: required when k (v) is FA_I8, FA_F8_E4M3 or FA_F8_E5M2
     *  (FA_ERR_NULL without them), refused with any other k (FA_ERR_ARG). FA_F32 views shaped like k
     *  (v) with dim 1, [k.batch or 1][k.heads or 1][k.seq or 1][1]: a size of 1 (or a stride of 0)
     *  broadcasts, so one scale for the tensor, per head, per token and head all work. Key j of kv
     *  head h is read as k_scale(b, h, j) · k(b, h, j, x), one float multiplication of the exactly
     *  converted element. The scales follow k's layout: per sequence with packed keys (the token axis
     *  of k), per page with a paged cache (a pool of the pages' scales, [pages][Hkv][page_size][1] or
     *  broadcast, read through the same block_table). Inputs: they may overlap other inputs, never an
     *  output; so a cache may hold each row's scale right after its codes (rows of D codes padded to
     *  4 bytes, then the float; the scale view's strides k's over 4), bit for bit the same call. */
    const fa_tensor *k_scale;
    const fa_tensor *v_scale;
    /** fa_backward only (fa_forward ignores it): NULL, or a tensor of the bias's shape overwritten with
     *  dL/dbias, which requires bias (FA_ERR_NULL without it). Its dtype is the bias's (the accumulation
     *  type), its sizes are the bias's four, and on an axis where the bias has a stride of 0 and a size above
     *  1 its stride must be 0 too (FA_ERR_STRIDE otherwise; an empty dbias has any strides).
     *  dbias[b'][h'][i'][j] is the sum of dS[b][h][i][j] = P_ij·(dP_ij - delta_i) (the gradient of the score
     *  after every modifier, that is before the softcap's derivative; 0 where the masks hide the key) over
     *  the (b, h, i) that read bias[b'][h'][i'][j]: the broadcast axes (size 1 or stride 0) are summed,
     *  b-major, then h, then i, in the accumulation type, in that fixed order whatever the thread count or
     *  backward plan (an empty sum, over B, Hq or Nq of 0, is +0). A bias broadcast over no axis gets every
     *  dS once; any broadcast axis costs S and dP once more (two of the backward's five tile products). Dense
     *  batches only: with seqs the bias itself is refused (FA_ERR_UNSUPPORTED). No extra memory. */
    const fa_tensor *dbias;
    /** Attention dropout (training): 0 = off, the default; otherwise in (0, 1), the probability that
     *  a probability is dropped (NaN, negative or >= 1: FA_ERR_ARG). See "Dropout" below. */
    double dropout_p;
    uint64_t dropout_seed;   /**< the generator's key: one per training run (any value; unused at p = 0) */
    uint64_t dropout_offset; /**< added to the stream index: advance it per step (see "Dropout") */
    /** Where the call's rows and keys sit in a longer sequence, for dropout's mask only (0 by default):
     *  query row i and key j of the call (of each sequence, with seqs) are the mask's row
     *  dropout_row0 + i and key dropout_key0 + j, so that the blocks of one sequence (ring attention,
     *  chunked prefill) drop what one call over the whole sequence drops. Negative: FA_ERR_ARG; with
     *  dropout, dropout_row0 + Nq > 2^32 or dropout_key0 + Nk > 2^34: FA_ERR_UNSUPPORTED. */
    int64_t dropout_row0;
    int64_t dropout_key0;
} fa_params;

/** The largest |fa_params.diagonal_shift|: 2^52, so that every distance stays exact in a double. */
#define FA_MAX_DIAGONAL_SHIFT ((int64_t)1 << 52)

/** The size of fa_params in 0.4.0, the first size-tagged layout: the smallest struct_size a call accepts. */
#define FA_PARAMS_SIZE_MIN (offsetof(fa_params, diagonal_shift) + sizeof(int64_t))
/** Every field at its default: scale 0 (1/sqrt(D)), no mask, no window, no softcap, no ALiBi, no
 *  bias, no sinks, no dsinks, no sequences, no shift, no scales, no dbias, no dropout. (The header
 *  owns this order: outside it, set fields by name.) */
/* clang-format off */
#define FA_PARAMS_INIT {sizeof(fa_params), 0.0, FA_CAUSAL_NONE, -1, -1, 0.0, NULL, NULL, NULL, NULL, NULL, \
                        0, NULL, NULL, NULL, 0.0, 0, 0, 0, 0}
/* clang-format on */
/** FA_PARAMS_INIT for a struct of `size` bytes that was not declared from this header (an FFI
 *  mirror, a heap block): writes the defaults into its first `size` bytes (zero for bytes this
 *  library does not know) and sets struct_size = size. Writes exactly `size` bytes; nothing when p is
 *  NULL or size < sizeof(size_t). */
FA_API void fa_params_init(fa_params *p, size_t size);

/** Thread placement. */
typedef enum {
    /** CORE, unless OMP_PROC_BIND or OMP_PLACES is set, or there are more threads than
     *  allowed cores, or the call comes from inside an active OpenMP parallel region: then NONE.
     *  The environment variable FLASHATTN_BIND=none|core|spread replaces AUTO. */
    FA_BIND_AUTO = 0,
    FA_BIND_NONE = 1,  /**< threads are not pinned by the library */
    FA_BIND_CORE = 2,  /**< thread i on the i-th allowed core (compact), wrapping around */
    FA_BIND_SPREAD = 3 /**< threads spread evenly across packages, NUMA nodes and L3 domains */
} fa_bind;

/** Context options; 0 means "choose automatically" for every field. Start from FA_CONTEXT_OPTS_INIT
 *  (or fa_context_opts_init), then set the fields you need by name. */
typedef struct {
    /** sizeof(fa_context_opts) of the caller (FA_CONTEXT_OPTS_INIT sets it; see the ABI section) */
    size_t struct_size;
    int num_threads; /**< threads per call; 0 = omp_get_max_threads() when the context is created */
    fa_bind bind;    /**< placement policy */
    int block_q;     /**< query rows per work item; 0 = chosen from the cache sizes and head dims. A call uses
                          at most its Nq (a larger block covers the same rows, bit for bit) */
    int block_k;     /**< keys per tile; 0 = chosen from the CPU, the caches, the head dims and Nq (a decode
                          step's forward: 64), and for the backward on AMD from Nk (long rows take up to
                          512 keys; the blocks change the bits, the thread count never); at most Nk per
                          call */
} fa_context_opts;

/** The size of fa_context_opts in 0.4.0, the first size-tagged layout: the smallest struct_size a call
 *  accepts. */
#define FA_CONTEXT_OPTS_SIZE_MIN (offsetof(fa_context_opts, block_k) + sizeof(int))
/** Every field at its default: 0 (automatic). */
/* clang-format off */
#define FA_CONTEXT_OPTS_INIT {sizeof(fa_context_opts), 0, FA_BIND_AUTO, 0, 0}
/* clang-format on */
/** FA_CONTEXT_OPTS_INIT for a struct of `size` bytes that was not declared from this header (an FFI
 *  mirror, a heap block), as fa_params_init. */
FA_API void fa_context_opts_init(fa_context_opts *o, size_t size);

/**
 * A context owns the thread placement, the chosen kernel table and one
 * scratch arena per thread. Create it once and reuse it: after the first
 * call of a given size, later calls of the same or smaller size allocate
 * nothing.
 */
typedef struct fa_context fa_context;

/**
 * Creates a context. opts NULL = all defaults; otherwise read by the ABI section's rule (after the
 * NULL check of ctx: a struct_size out of range is FA_ERR_ARG, a field this library does not know
 * set is FA_ERR_UNSUPPORTED).
 * Loads the machine topology once (restricted to the CPUs this process may
 * use: cgroups, taskset, Slurm and MPI bindings) and computes placements.
 * Arenas are not allocated here but by each thread, after it is placed, on
 * its first call (so their pages land on that thread's NUMA node).
 * Returns FA_ERR_NULL if ctx is NULL, FA_ERR_ARG for negative sizes, an
 * unknown bind value, or (with bind AUTO) a FLASHATTN_BIND other than
 * auto|none|core|spread, FA_ERR_UNSUPPORTED if FLASHATTN_ISA names a kernel
 * table (ref, avx2, avx512, avx512_bf16, amx on x86-64; neon, neon_bf16, sve, sve_bf16 on aarch64,
 * where sve runs at an SVE vector length of 128, 256, 512, 1024 or 2048 bits) this build or CPU lacks
 * (fa_last_error() says which of the two), FA_ERR_ARG if it names none of them nor "auto" (the
 * automatic choice, as when unset), FA_ERR_NOMEM, FA_ERR_RUNTIME if the
 * topology cannot be loaded. *ctx is written only on FA_OK.
 */
FA_API fa_status fa_context_create(fa_context **ctx, const fa_context_opts *opts);

/** Frees a context and its arenas. NULL is a no-op. Must not race a call on ctx. */
FA_API void fa_context_destroy(fa_context *ctx);

/** What a context is and did. "The last call" is the last call that succeeded: a failed call
 *  (including FA_ERR_NOMEM) changes none of these. An output with a size tag: see the ABI section. */
typedef struct {
    size_t struct_size; /**< sizeof(fa_stats) of the caller (FA_STATS_INIT sets it); the call keeps it */
    int num_threads;    /**< threads a call asks for */
    /** the policy in force after resolving AUTO and FLASHATTN_BIND (for the last call, if any) */
    fa_bind bind;
    /** threads actually pinned during the last call (0 before any call, or when the OS refused) */
    int bound_threads;
    /** block sizes used by the last call (the configured ones before any call; 0 = automatic). block_q
     *  counts the query rows of one head per item: a GQA decode step runs the heads of a group as the rows
     *  of one item, and reports 1 */
    int block_q, block_k;
    const char *isa;         /**< kernel table in use, e.g. "ref" */
    size_t scratch_capacity; /**< bytes of one thread's arena (the largest over threads) */
    size_t scratch_peak; /**< largest arena high-water mark over threads since create or reset, in bytes */
    const char *backward_plan; /**< how the last fa_backward cut its work: "fused", "wavefront" or "split"
                                    (see fa_backward; NULL before any backward). It follows the thread
                                    count and changes the speed, never a result */
} fa_stats;

/** The size of fa_stats in 0.4.0, the first size-tagged layout: the smallest struct_size a call accepts. */
#define FA_STATS_SIZE_MIN (offsetof(fa_stats, backward_plan) + sizeof(const char *))
/** Every field zero or NULL, struct_size set: what fa_context_stats is given to fill. */
/* clang-format off */
#define FA_STATS_INIT {sizeof(fa_stats), 0, FA_BIND_AUTO, 0, 0, 0, NULL, 0, 0, NULL}
/* clang-format on */
/** FA_STATS_INIT for a struct of `size` bytes that was not declared from this header (an FFI mirror,
 *  a heap block), as fa_params_init. */
FA_API void fa_stats_init(fa_stats *s, size_t size);

/** Fills the first min(out->struct_size, sizeof(fa_stats)) bytes of *out, struct_size kept (see the
 *  ABI section): `fa_stats st = FA_STATS_INIT; fa_context_stats(ctx, &st);`. FA_ERR_NULL if ctx or
 *  out is NULL; then FA_ERR_ARG for a struct_size out of range, FA_ERR_UNSUPPORTED for a nonzero
 *  byte past this library's sizeof(fa_stats); nothing written on any of them. */
FA_API fa_status fa_context_stats(const fa_context *ctx, fa_stats *out);

/** Resets scratch_peak (and bound_threads) to 0. NULL is a no-op. */
FA_API void fa_context_reset_stats(fa_context *ctx);

/**
 * Attention forward: out = softmax(scale · q·kᵀ + mask) · v, and optionally
 * the log-sum-exp of each row.
 *
 * Shapes: q [B][Hq][Nq][D], k [B][Hkv][Nk][D], v [B][Hkv][Nk][Dv],
 * out [B][Hq][Nq][Dv], with Hq a multiple of Hkv (grouped-query and
 * multi-query attention: query head h reads kv head h / (Hq/Hkv)).
 * D and Dv are in 1..FA_MAX_HEAD_DIM (576) and may differ. B, Hq, Nq and Nk may be 0: the call
 * succeeds and writes every defined value (with Nk = 0 every row is fully
 * masked). Hkv may be 0 only when Hq is 0.
 *
 * dtype: q, k, v and out share one dtype (FA_F32, FA_F64, FA_BF16 or FA_F16),
 * or q and out are FA_F32 while k and v are FA_BF16 or FA_F16 (f32 queries over
 * a half-precision KV cache). With q, k and v all FA_BF16 or all FA_F16, out may
 * also be FA_F32: the same call, its rows written as the f32 values a half out
 * would be rounded from (so rounding that out gives the half call's bytes), for
 * results that fa_merge combines before one final rounding (a sequence split
 * over calls or ranks). f64 accumulates in f64; every other call in f32:
 * scores, the running max and sum, the output accumulator (and every gradient
 * accumulator of fa_backward). Half-precision inputs are widened exactly, tile by
 * tile, and the float kernels run on them, so a half call computes bit for bit
 * what an FA_F32 call on the widened inputs computes (with the same context and
 * blocks); each output is then rounded to its dtype once: to nearest, ties to
 * even, beyond the largest finite value to ±inf, NaN stays NaN (quiet, sign
 * kept). P is not rounded to half precision before P·V. The bias is in the
 * accumulation type (FA_F32 unless q is FA_F64).
 * (A decode step, at most 4 query rows an item, reads a half-precision cache
 * where it lies and widens it in registers: the same bits, half the bytes.)
 * One exception, for speed: on a kernel table with bf16 dot-product units
 * (fa_stats.isa "amx": Intel Xeons with AMX, where Linux grants the process
 * the tile state; "avx512_bf16": chosen automatically on AMD Zen 4 and Zen 5,
 * CPU families 25 and 26 with AVX512-BF16, where vdpbf16ps outruns the f32
 * kernels), a forward whose q, k and v are all FA_BF16 (out FA_BF16 or FA_F32)
 * with an even D and more than 4 query rows per head (a grouped decode step counts its group's
 * heads) multiplies the bf16 inputs on those units (AMX tiles, vdpbf16ps)
 * instead: the products are exact and summed in f32, so
 * scores, maxima, sums and the accumulator keep f32's accuracy, but P is
 * rounded to bf16 (nearest even) once before P·V, bf16 subnormal inputs are
 * read as zero, and the result is then not bitwise the widened call's. It
 * stays within the accuracy documented in the README (3x a naive f32
 * computation from the same inputs, rounded to bf16), bitwise identical
 * across thread counts, and NaN and Inf reach exactly the rows that see them.
 * FLASHATTN_ISA=avx512 gives the widened computation on the same CPU. The same
 * holds on the "neon_bf16" and "sve_bf16" tables (aarch64 with FEAT_BF16: Neoverse V1, V2,
 * Graviton 3 and 4, Grace), whose products run on BFDOT, with one more
 * difference: BFDOT (Arm ARM, BFDotAdd; FPCR.EBF is 0 under Linux) adds its two
 * exact products and then adds that to the f32 sum rounding each addition to
 * odd, not to nearest (an error below 1 ulp instead of half an ulp, one such
 * sum per two products), and flushes sums below 2^-126 to zero. The dot of D
 * products then errs by at most (D + 2)·2^-24 times the sum of their
 * magnitudes (to first order; tests/test_kernel_pairs.c checks it), the bound of
 * an f32 FMA chain, and the call stays within the README's bound as above;
 * FLASHATTN_ISA=neon gives the widened computation. f16,
 * and f32 queries over a half-precision cache, always widen (fa_backward has
 * the backward's rule).
 * A quantized KV cache: q and out FA_F32, k and v FA_I8, FA_F8_E4M3 or FA_F8_E5M2
 * (one type for both), with p->k_scale and p->v_scale. Every element is converted
 * exactly (OCP FP8's NaN codes to NaN, E5M2's infinities to ±inf) and multiplied
 * by its row's scale in float, once; the call then computes bit for bit what an
 * FA_F32 call on that dequantized cache computes (same context and blocks), and a
 * NaN or infinity in the cache or its scales reaches exactly the rows that see
 * it. A decode step reads the cache where it lies, one byte an element. Forward
 * only: fa_backward refuses a quantized k (FA_ERR_UNSUPPORTED).
 *
 * lse: NULL, or contiguous [B][Hq][Nq] of double (FA_F64) or float (every other dtype):
 * the natural-log log-sum-exp of each row's modified, masked scores (with the
 * sink term when p->sinks is set).
 *
 * A row that sees no key (causal BOTTOM_RIGHT with Nq > Nk, a window, a bias
 * of -inf, or Nk = 0) gets exact zeros in out and lse = -INFINITY (sinks[h]
 * with sinks), never NaN. NaN or Inf inside q, k, v or the bias is not an
 * error: it reaches exactly the rows that see it (a -inf bias hides a key's
 * score, not its value row: that row must then be finite, as with any key
 * whose probability is 0).
 *
 * ctx NULL: the calling thread's default context. p NULL: every default (FA_PARAMS_INIT). p and
 * p->seqs are read by the ABI section's rule before anything else is checked: a struct_size out of
 * range is FA_ERR_ARG (naming p.struct_size or p.seqs.struct_size), a field this library does not
 * know set is FA_ERR_UNSUPPORTED.
 *
 * Extra memory: the per-thread arena (see the README's Memory section) and,
 * only where the keys are split (split-KV: possible when there are fewer than
 * 128 query items, B·Hq·ceil(Nq/block_q), as with few heads, or fewer than
 * 256 in a decode step, and Nk is at least 4·block_k), the partial results: for
 * each (query item, key chunk) the rows' lse and normalized block_q×Dv outputs, merged as
 * fa_merge merges, at most 16 MiB in all (the split count is capped to keep
 * them so), kept in the context and grown only when a call needs more. A batch
 * of sequences (p->seqs) splits each sequence as a dense call of it alone would
 * (see fa_seqs) and keeps under 64·(batch+1) bytes of item tables besides.
 *
 * Refused, with nothing written: NULL tensors or data (FA_ERR_NULL); sizes as
 * above (FA_ERR_SHAPE); negative strides, an out that overlaps itself,
 * offsets that overflow int64, data or lse not aligned to its element size
 * (FA_ERR_STRIDE); unknown dtypes, then (q, k) dtypes other than the pairs
 * above, then v of another dtype than k or out than q, named with the tensor
 * it must match (FA_ERR_DTYPE); out or lse overlapping q, k, v or each other, judged by the
 * address range each view spans, except that row-interleaved views (same row
 * stride w, batches on row boundaries, every head inside a row) whose column
 * sets are disjoint modulo w do not overlap (FA_ERR_ALIAS); NaN/Inf scale, unknown causal
 * value, window < -1, negative, NaN or infinite softcap, a scale or a softcap
 * outside float's normal range when q is not FA_F64, dropout_p NaN, negative or >= 1 (FA_ERR_ARG).
 * The bias is checked as a tensor: NULL data (FA_ERR_NULL), a dtype other than the
 * accumulation type (FA_ERR_DTYPE), a batch, heads or seq other than B, Hq, Nq or 1, or a dim
 * other than Nk (FA_ERR_SHAPE), its strides (FA_ERR_STRIDE), overlapping out or
 * lse (FA_ERR_ALIAS). alibi_slopes and sinks (and the seqs arrays) are inputs:
 * misaligned or wrapping (FA_ERR_STRIDE), overlapped by out or lse
 * (FA_ERR_ALIAS). p->seqs: see fa_seqs (offsets, used keys and pages that do not
 * fit: FA_ERR_SHAPE; cu_seqlens_k with block_table: FA_ERR_ARG; a bias with
 * seqs: FA_ERR_UNSUPPORTED).
 */
FA_API fa_status fa_forward(fa_context *ctx, const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                            const fa_tensor *v, const fa_tensor *out, void *lse);

/**
 * Attention backward: the gradients dq, dk, dv of a scalar loss L, given dout = dL/dout.
 *
 * q, k, v, p: exactly what was passed to fa_forward. out and lse: what that fa_forward call
 * returned (lse is required here). dout has the shape of out; dq, dk and dv have the shapes of
 * q, k and v; out, dout and dq have q's dtype, dk and dv k's (fa_forward's dtype rule: one dtype, or
 * f32 q, out, dout, dq over a bf16/f16 k, v, dk, dv; not a half q with an f32 out). With q, k and v
 * all FA_BF16 or all FA_F16, dq, dk and dv may instead be FA_F32, all three together: the same call,
 * writing the f32 values the half gradients would be rounded from (rounding them gives the half
 * call's bytes), for sums over blocks that are rounded once at the end (the MPI ring's backward).
 * dq, dk and dv are overwritten, not accumulated into; half-precision gradients are summed in float
 * and rounded once, as fa_forward's out. On the "amx", "avx512_bf16", "neon_bf16" and "sve_bf16"
 * tables an all-bf16 backward with even D and Dv multiplies on their bf16 dot-product units (AMX tiles,
 * vdpbf16ps, BFDOT with its rounding to odd), as its forward does (see fa_forward, "dtype"): P and dS
 * are rounded to bf16 once each for the products that read them, bf16 subnormal inputs are read as
 * zero, and the gradients stay within the README's accuracy bound rather than being bitwise the
 * widened call's. With grouped-query attention, dk and dv of a kv head sum the contributions of every
 * query head that reads it, always in the same order. A row
 * that was fully masked contributes nothing and gets dq = 0. (A logit that is -inf because an
 * input holds an infinity is not a mask: its probability is 0, but the gradient terms that
 * multiply the infinite input are 0·inf, NaN, as IEEE arithmetic has it.) Every score modifier of
 * p is differentiated: through softcap by 1 - tanh², ALiBi as a constant, the bias as a constant
 * unless p->dbias asks for its gradient; with p->dsinks the sinks' gradient (see fa_params).
 *
 * The probabilities are recomputed tile by tile from q, k and lse; no Nq×Nk matrix is stored.
 * Extra memory: the per-thread arena (see the README's Memory section), B·Hq·Nq values of
 * delta = rowsum(dout ∘ out), with few heads one int per query block, and, where dq is FA_BF16 or
 * FA_F16 or the call runs on bf16 dot-product units, float dQ sums: one padded bq × D block per
 * query block, B·Hq·⌈Nq/bq⌉ of them (about B·Hq·Nq·D floats; none when the third way below runs,
 * which it does should they not fit), kept in the context and grown only when a call needs more.
 * p->dbias takes none: its sums are made in dbias itself, in the accumulation type (a bias
 * broadcast over batch, heads or rows costs time, not memory: S and dP are computed once more for
 * it).
 *
 * Determinism: dq, dk and dv (and dsinks, dbias) are bitwise identical for every thread count, binding
 * mode and repetition. There are no floating-point atomics and no reduction whose order depends on the
 * threads. The work is cut in one of three ways: one item per (batch, kv head) that computes dk, dv
 * and the group's dq together (when whole heads keep the threads busy); items per key block that
 * also add to dq, each query block's dq passed from one key block to the next in key order (with
 * fewer heads than that, when each thread has a core of its own); or items per key block for dk
 * and dv and items per query block for dq, which recompute the probabilities once more but never
 * wait (threads sharing cores). All three make the same arithmetic operations in the same order for
 * every output element, so the choice changes the speed and never a bit. dq is summed in float
 * and, when half precision, rounded once: the third way sums in its arena, the other two in the
 * caller's dq rows when they are float, else in the context's dQ sums (above).
 *
 * Refused, with nothing written: as fa_forward, plus lse NULL (FA_ERR_NULL); dout, dq, dk or dv
 * of the wrong shape (FA_ERR_SHAPE); dout of another dtype than q, dq than q (or FA_F32 under half
 * q), dk or dv than k (or than an FA_F32 dq under half q), checked after out (FA_ERR_DTYPE); dq, dk
 * or dv overlapping themselves (FA_ERR_STRIDE), any input (q, k, v, out, dout, lse) or each other
 * (FA_ERR_ALIAS), by the rule of fa_forward: dq, dk and dv may be the three interleaved slices of
 * one packed dQKV buffer. p->dsinks set without p->sinks (FA_ERR_NULL); p->dsinks misaligned or
 * wrapping (FA_ERR_STRIDE), overlapping any tensor, lse, the bias, alibi_slopes or sinks
 * (FA_ERR_ALIAS); p->seqs with block_table (FA_ERR_UNSUPPORTED: paged keys are forward only).
 * p->dbias set without p->bias (FA_ERR_NULL), or with NULL data (FA_ERR_NULL); of another dtype
 * than the bias's, the accumulation type (FA_ERR_DTYPE); sizes other than the bias's
 * (FA_ERR_SHAPE); a negative, overflowing or self-overlapping stride, a nonzero stride where the
 * bias broadcasts by a stride of 0, data misaligned or wrapping (FA_ERR_STRIDE); overlapping any
 * input (the bias included), dq, dk, dv or dsinks (FA_ERR_ALIAS). With p->seqs the bias itself is
 * refused (FA_ERR_UNSUPPORTED), so dbias is dense batches only.
 */
FA_API fa_status fa_backward(fa_context *ctx, const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                             const fa_tensor *v, const fa_tensor *out, const fa_tensor *dout, const void *lse,
                             const fa_tensor *dq, const fa_tensor *dk, const fa_tensor *dv);

/**
 * The status fa_forward (fa_backward) would return for these arguments, and the same fa_last_error
 * message (naming fa_forward_check, fa_backward_check), with nothing computed, allocated or
 * written: every refusal of bad input listed above, or FA_OK when the call would run. They cannot
 * foresee FA_ERR_NOMEM or FA_ERR_BUSY. For callers that must agree on validity before any work
 * starts: the ranks of a collective call (flashattn_mpi), a batch job checking its setup.
 */
FA_API fa_status fa_forward_check(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                  const fa_tensor *v, const fa_tensor *out, const void *lse);
FA_API fa_status fa_backward_check(const fa_params *p, const fa_tensor *q, const fa_tensor *k,
                                   const fa_tensor *v, const fa_tensor *out, const fa_tensor *dout,
                                   const void *lse, const fa_tensor *dq, const fa_tensor *dk,
                                   const fa_tensor *dv);

/**
 * Combines partial attention results over disjoint sets of keys into the result over their union:
 * a KV cache split the caller made, a cached prefix and a new suffix (cascade attention), the
 * ranks of a sequence-parallel job. With L_k the lse of part k (as fa_forward writes it),
 *   lse = log Σ_k exp(L_k),   out = Σ_k exp(L_k − lse) · outs[k],
 * computed with the largest L_k subtracted first (no overflow for any lse) and summed in the order
 * k = 0..n-1 for every element, so the bytes do not depend on the thread count. A part whose lse
 * is -INFINITY (its row saw no key) contributes nothing, whatever its out holds; a row no part saw
 * gets out = 0 and lse = -INFINITY; a NaN lse makes the row NaN. Merging the fa_forward results of
 * a split of the keys gives the result of one call over all of them up to rounding (compute the
 * parts without sinks: each part's lse would count the sink once more).
 *
 * n >= 1 parts: outs[k] are views of one shape [B][H][Nq][Dv] (Dv in 1..FA_MAX_HEAD_DIM) and one
 * dtype; lses[k] point at contiguous [B][H][Nq] values of the accumulation type (double for FA_F64,
 * float otherwise). FA_BF16/FA_F16 parts are widened, merged in float, and each out element is
 * rounded once (as fa_forward rounds out); the arena then holds n·Dv + Dv floats more. out has the same
 * shape and dtype; lse is NULL or [B][H][Nq] like lses[k].
 *
 * Refused, with nothing written: outs, lses, out, a part's data or a part's lse NULL (FA_ERR_NULL);
 * n < 1 (FA_ERR_ARG); mixed dtypes (FA_ERR_DTYPE); a size that differs from outs[0]'s, or Dv out of
 * range (FA_ERR_SHAPE); strides as fa_forward (FA_ERR_STRIDE); out or lse overlapping a part, its
 * lse or each other (FA_ERR_ALIAS: no merging in place).
 */
/**
 * The dropout keep mask of fa_params (see "Dropout" there): mask[r·ld + c] = 1 when query row i0 + r
 * of batch entry (or sequence) b and query head h keeps key j0 + c, else 0, for r < rows, c < cols.
 * Reads p->dropout_p, dropout_seed and dropout_offset (by the ABI section's reading rule; i0 and j0
 * are the mask's own indices: dropout_row0 and dropout_key0 are not added) and takes
 * Hq, the number of query heads, as the stream index needs it. With dropout_p = 0 every entry is 1.
 * A pure function: the mask fa_forward and fa_backward apply, whatever the thread count or layout.
 * Refused, with nothing written: mask NULL with rows·cols > 0 (FA_ERR_NULL); p's struct_size
 * (FA_ERR_ARG) or an unknown field set (FA_ERR_UNSUPPORTED); dropout_p NaN, negative or >= 1
 * (FA_ERR_ARG); b, h, i0, j0, rows or cols negative, h >= Hq, Hq < 1, ld < cols, rows·ld overflowing,
 * i0 + rows > 2^32 or j0 + cols > 2^34 (FA_ERR_SHAPE).
 */
FA_API fa_status fa_dropout_mask(const fa_params *p, int64_t q_heads, int64_t b, int64_t h, int64_t i0,
                                 int64_t j0, int64_t rows, int64_t cols, uint8_t *mask, int64_t ld);

FA_API fa_status fa_merge(fa_context *ctx, int n, const fa_tensor *outs, const void *const *lses,
                          const fa_tensor *out, void *lse);

/**
 * Converts every element of src into dst: dst(b, h, s, d) = src(b, h, s, d) in dst's dtype, with the
 * rounding of the library's own outputs. For programs without a bf16/f16 library of their own (C
 * users with half-precision activations, the MPI layer, tests) and for widening a half-precision or
 * quantized tensor to look at it. Runs on the calling thread, front to back; no memory is allocated.
 *
 * Pairs: dst FA_F32, FA_F64, FA_BF16 or FA_F16, from src of any dtype.
 * - The same dtype: the bytes are copied (NaN payloads, signalling NaNs included).
 * - Widening (bf16 or f16 to f32 or f64, f32 to f64; a quantized src to any): exact. A bf16 NaN keeps
 *   its sign and payload in f32 (f64: made quiet); an f16 NaN keeps its sign and payload's top bits and
 *   is made quiet, as vcvtph2ps does.
 * - Narrowing (f64 to f32, bf16 or f16; f32 to bf16 or f16; bf16 to f16 and f16 to bf16): the value
 *   is rounded once, to nearest, ties to even: the exact value of src (an f64 is not rounded to f32
 *   first), the bits of fa_forward's half outputs for an f32 src. A value beyond the largest finite
 *   value of dst after rounding becomes ±inf (f16: |x| >= 65520; bf16: |x| >= 2^128·(1 - 2^-9));
 *   below the smallest normal it becomes a subnormal of dst or ±0 (the sign kept); ±inf stays ±inf;
 *   a NaN stays a NaN with its sign and the top bits of its payload, made quiet (what VCVTNEPS2BF16
 *   and VCVTPS2PH do). Only f64 to f32 (C's conversion) and f16's subnormal range (one float
 *   addition) depend on the floating-point environment: its default rounding mode, the mode the
 *   library computes in everywhere, gives the above.
 * - A quantized src (FA_I8, FA_F8_E4M3, FA_F8_E5M2) is converted element by element, exactly,
 *   without any scale (a view carries none: multiply by p->k_scale's or v_scale's row yourself to get
 *   the values fa_forward reads). OCP FP8's NaN codes become quiet NaNs with their sign, E5M2's
 *   infinities ±inf. A quantized dst is refused: quantizing needs scales that this call does not
 *   choose.
 *
 * Views: one shape, any strides (in elements, >= 0); src may broadcast with a stride of 0, dst must
 * not overlap itself. An empty view (a size of 0) converts nothing and may have NULL data.
 *
 * Refused, with nothing written: dst or src NULL, then the data of a non-empty one NULL (FA_ERR_NULL);
 * an unknown dtype of dst, then of src, then a quantized dst (FA_ERR_DTYPE); a negative size of dst,
 * then of src, then a size of dst other than src's (FA_ERR_SHAPE); a negative stride, data not aligned
 * to its element size, offsets that overflow int64 or wrap the address space (src's first, then
 * dst's), a dst that overlaps itself (FA_ERR_STRIDE); dst overlapping src (FA_ERR_ALIAS: no
 * conversion in place), by the rule of fa_forward's outputs.
 */
FA_API fa_status fa_convert(const fa_tensor *dst, const fa_tensor *src);

#ifdef __cplusplus
}
#endif

#endif /* FLASHATTN_H */

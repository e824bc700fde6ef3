/* SPDX-License-Identifier: BSD-3-Clause */
/* The byte format of one fuzz input, shared by the harness (fuzz_api.c) and the seed writer
 * (make_corpus.c), so the two cannot drift apart.
 *
 * An input is a fixed sequence of little-endian fields (FZ_CALL_FIELDS, then FZ_VIEW_FIELDS for
 * each of the eight views, then FZ_SPECIAL_FIELDS four times, then FZ_VIEW_FIELDS for the bias and
 * FZ_HEADS_FIELDS for alibi_slopes, sinks and dsinks, then the sequences: FZ_SEQS_FIELDS,
 * FZ_SEQ_FIELDS for each of FZ_SEQ_MAX sequences and FZ_TABLE_MAX block-table bytes, then
 * FZ_MERGE_FIELDS, then FZ_DTYPE_FIELDS, then FZ_ABI_FIELDS, then FZ_QUANT_FIELDS and FZ_VIEW_FIELDS
 * for k_scale and v_scale, then FZ_DROPOUT_FIELDS, then FZ_DBIAS_FIELDS and FZ_VIEW_FIELDS for
 * dbias, then FZ_ORIGIN_FIELDS, then FZ_CONVERT_FIELDS). A short input reads as if padded with zero
 * bytes (so an input written before the sequences, fa_merge, kv_dtype, quantized caches, dropout,
 * dbias, the origins and fa_convert existed makes the same calls as it did then, but for a bf16 or
 * f16 call's bias, which is now f32 unless overridden, and the values of its half views, now ordinary
 * numbers); bytes after the last field are ignored. Every field is a selector that the harness maps to an
 * argument; the mapping is written next to each field, and most selectors keep the valid values in their
 * lower range so that random bytes still reach the computing paths about half of the time:
 *
 *   ctx            % 10: 0 ctx = NULL (the thread's default context), 1..8 one of the harness's
 *                  premade contexts (1 or 2 threads; automatic, 16x16, 7x20 on the ref table,
 *                  64x32 on the avx2 table), 9 a fresh context made from the fresh_* fields
 *   fresh_threads  < 0xF0: 1 + value % 2 threads, else (int8) value (negative: FA_ERR_ARG)
 *   fresh_bq/_bk   < 0xF0: value % 130 (0 = automatic), else (int8) value
 *   fresh_isa      % 5: none, ref, avx2, avx512, "bogus" (FLASHATTN_ISA while the context is made);
 *                  >= 0xF0: opts = NULL
 *   fresh_bind     < 0xC0: value % 4, 0xFF: ctx pointer NULL, else (int8) value
 *   calls          bit 0 backward after the forward, bit 1 repeat each OK call on a twin context
 *                  (same table and blocks, other thread count) and require identical bytes,
 *                  bit 2 backward even when the forward was refused, bit 3 no forward at all
 *   dtype          < 0xC0: f32 or f64 (bit 0), else entry value % 8 of the dtype table (f32, f64,
 *                  bf16, f16, -1, 4, 77, INT_MIN): the dtype of q's group (q, out, dout, dq) and,
 *                  unless kv_dtype (below) says otherwise, of k's
 *   batch % 4, kv_heads % 5, group 1 + % 4 (Hq = Hkv·group)
 *   q_len, kv_len  bit 15 clear: % 80 / % 160, set: % 1024 / % 2048 (then cut to the work budget)
 *   dim, dim_v     bit 15 clear: 1 + % 40, set: 1 + % 512
 *   params_null    >= 0xF0: p = NULL
 *   scale_mode     < 0x80: scale 0 (1/sqrt(D)); else by % 8: raw/64, NaN, +inf, -inf, 2^(raw % 1100),
 *                  -0.0, 5e-324, raw/1024
 *   causal         < 0xC0: % 3; 0xC0..0xDF: 3 + (value - 0xC0) (unknown); else (int8) value
 *   window         < 0x80: both -1; else window_left and window_right as given, each replaced by
 *                  INT64_MAX (when >= 0) or INT64_MIN (when < 0) if bit 0 (left) or bit 1 (right)
 *                  of the selector is set
 *   softcap        < 0x80: 0; else by % 14: 0..3 (1 + softcap_raw) / 8, -1, NaN, +inf, -0.0,
 *                  DBL_MIN, FLT_MIN, FLT_MAX, 2·FLT_MAX, FLT_MIN / 2, -inf (DBL_MIN, 2·FLT_MAX
 *                  and FLT_MIN / 2 lie outside float's normal range: refused for f32 only)
 *   extras         >= 0xA0: a bias (the ninth view, below; its layout NULL also means none), of
 *                  [B|1][Hq|1][Nq|1][Nk] with bits 0, 1, 2 making batch, heads, seq 1
 *   lse_mode       < 0xC0: its own region; else by % 4: 0 NULL, 1..2 at view (value >> 2) % 8 + lse_shift
 *                  elements, 3 the same + lse_shift bytes (maybe misaligned)
 *   seed           the values: uniform in [-amp, amp] from splitmix64(seed)
 *   amp            % 4: 0.5, 1, 2, 4
 *   gap            % 17: elements between two regions of the pool (0: adjacent)
 *   specials       % 5: how many of the four special values are written
 *   softcap_raw    see softcap
 *
 * Per view (q, k, v, out, dout, dq, dk, dv; the last four only matter to the backward):
 *   layout         >= 0xF8: the fa_tensor pointer is NULL; else % 9: bhsd (fa_tensor_bhsd), bshd
 *                  (fa_tensor_bshd), padded bhsd, padded bshd, stride_batch 0, stride_head 0,
 *                  stride_seq 0, raw strides, packed (q, k, v -- or dq, dk, dv -- as slices of one
 *                  [B][S][Hq·D + Hkv·D + Hkv·Dv] buffer when all three ask for it and Nq = Nk)
 *   pad_*          padding elements of the padded layouts
 *   place          < 0xC0: its own region of the pool; else % 10: 0..7 at that view's region + shift
 *                  elements (clamped to the pool), 8 data = NULL, 9 own region with data 1 + shift % 4
 *                  bytes past an element boundary (misaligned for f32 and f64)
 *   raw_*          strides of the raw layout, each multiplied by 1, 2^12, 2^31 or 2^45 as the
 *                  2-bit fields of raw_scale say (saturating at the int64 limits)
 *   size_field     >= 0xE0: % 5 names a size (1 batch, 2 heads, 3 seq, 4 dim) replaced by
 *                  size_value · 2^(16·(size_scale % 4)) (saturating)
 *   dtype_override >= 0xF0: this view's dtype is entry value % 8 of the dtype table (f32, f64,
 *                  bf16, f16, -1, 4, 77, INT_MIN), so it may differ from the others
 *
 * The bias has the view fields too, with its own shape; its place % 10 names q..dv as the others'.
 *
 * Per array of Hq floats (alibi_slopes, sinks, dsinks; dsinks only matters to the backward):
 *   mode           < 0x80: NULL; else % 4: 0, 1 its own region; 2 at the region of (mode >> 2) % 10
 *                  (q..dv, the bias, the lse) + shift floats (clamped to the pool); 3 its own
 *                  region + 1..3 bytes (misaligned)
 *   scale          the values in its own region: uniform in [-1, 1] times 2^((scale & 7) - 3);
 *                  >= 0xF0: the first becomes by scale % 4 NaN, +inf, -inf, 1e30
 *
 * Special values (view, index, kind): element index % count of view % 9 (q..dv, the bias; when it
 * lies in the pool) becomes by kind % 8: NaN, +inf, -inf, 1e30 (f32) / 1e300 (f64), -0.0, the
 * smallest subnormal, -1e30 / -1e300, 64·amp.
 *
 * Sequences (fa_params.seqs, for fa_forward and fa_backward):
 *   seqs           < 0x80: none (p.seqs NULL); else bit 0: packed queries (cu_seqlens_q: q, out,
 *                  dout, dq are [1][Hq][rows][D]); bits 1-2 % 3 the keys: 0 one cache per sequence
 *                  (k [S][Hkv][Nk][D]), 1 packed (cu_seqlens_k: [1][Hkv][rows][D]), 2 paged (k, v
 *                  [pool_pages][Hkv][page_size][D] and a block table); bit 3: seqused_k; bit 4: with
 *                  paged keys, cu_seqlens_k as well (FA_ERR_ARG)
 *   seqs_count     < 0xE0: S = value % 9 sequences and batch = S; else S = 2 and batch by value % 8:
 *                  3, 1, 0, -1, INT64_MIN, 2^62, INT64_MAX, 2^31, where a tensor's batch axis pins
 *                  the count (dense queries or dense keys); otherwise only the negative ones (a
 *                  larger count would make the library read more entries than the arrays hold)
 *   page_size      1 + % 16 keys per page; pool_pages 1 + % 12 pages in the pool
 *   pages_per_seq  < 0xF0: % 7; else by % 4: -1, INT64_MIN, 2^61, INT64_MAX
 *   spare_rows     % 4 rows after the last sequence on each packed axis
 *   corrupt        < 0xC0: none; else element corrupt_index % its length of the array value % 4
 *                  (cu_seqlens_q, cu_seqlens_k, seqused_k, block_table) becomes corrupt_value ·
 *                  2^(16·(corrupt_scale % 4)) (saturating; the table's int32 at the int32 limits), or
 *                  with corrupt_scale >= 0xF0 INT64_MIN (bit 0 clear) or INT64_MAX
 *   arrays_place   < 0xC0: each array in its own region of the pool; else the array (value >> 4) % 4
 *                  is, by value % 6: 0 NULL, 1 moved 1 + arrays_shift % 7 bytes (misaligned), 2 copied
 *                  over the region of view arrays_shift % 8, 3 copied over the lse, 4 8 bytes below
 *                  the top of the address space, 5 as it is
 * Per sequence b < S (FZ_SEQ_FIELDS): q_len % 20 query rows (packed queries; dense ones have Nq),
 * k_len % 40 keys (packed keys; dense ones have Nk, paged ones pages_per_seq pages), used % (its
 * capacity + 1) keys in use (with seqused_k). The shapes are then cut to the work budget.
 * Block table: entry j of the [S][pages_per_seq] table (j < FZ_TABLE_MAX): < 0xF0: value %
 * pool_pages, else -1 (refused where the page is in use).
 *
 * fa_merge (FZ_MERGE_FIELDS): merge < 0x80: not called; else fa_merge is called last, on parts
 * outs[k] = view dout + k % 4 (dout, dq, dk and dv are then shaped like out, [B][Hq][Nq][Dv], and
 * the backward is not called) into out and the lse:
 *   merge_n        < 0xF0: n = 1 + value % 8; else by % 4: 0, -1, INT_MIN, 64 (the parts again)
 *   merge_minf     bit k: part k % 8's lse is -inf on the rows r with (r + k) % 3 == 0
 *   merge_mode     bit 0: row 0 is -inf in every part; bit 1: part 0's lse is NaN on row 1; bit 2:
 *                  the parts' lse in [-100, 100]·amp instead of [-4, 4]·amp
 *   merge_lses     < 0xC0: the parts' lse in regions of their own (8 at most, lses[k] = region k %
 *                  8); else by % 5: 0 lses[(value >> 3) % n] NULL, 1 lses NULL, 2 outs NULL,
 *                  3 lses[0] over the lse, 4 lses[0] merge_shift % 7 + 1 bytes in (misaligned)
 *
 * Dtypes (FZ_DTYPE_FIELDS, last):
 *   kv_dtype       < 0xC0: k, v, dk and dv have the call's dtype; else entry value % 8 of the dtype
 *                  table, the dtype of k's group (f32 q over a bf16 or f16 k is the half-precision
 *                  KV cache the header allows); a view's dtype_override still wins. The bias's
 *                  dtype is the accumulation type (f64 for f64 calls, f32 otherwise) unless its
 *                  dtype_override says otherwise.
 *
 * Size-tagged structs (FZ_ABI_FIELDS; include/flashattn.h, "ABI"):
 *   abi            < 0xC0: every struct as FA_*_INIT makes it; else the struct (abi >> 3) % 3 (p,
 *                  p.seqs, or the fresh context's opts; p when the call has no such struct, none
 *                  when p is NULL) is copied into a 4096-byte buffer and by abi % 6 gets struct_size
 *                  0; abi_size % its size (too small, or an earlier layout's size, which reads
 *                  only the fields within it); 4097 + abi_size; SIZE_MAX - abi_size
 *                  (too large: FA_ERR_ARG); its size + 1 + abi_size % (4096 - its size) with the bytes
 *                  past its size zero (valid: the call is made as without it); or that size with byte
 *                  its size + abi_byte % (struct_size - its size) set to abi_value | 1 (a field this
 *                  library does not know: FA_ERR_UNSUPPORTED)
 *
 * Dropout (FZ_DROPOUT_FIELDS):
 *   dropout        < 0xC0: off; else fa_params.dropout_p by % 8: 0.1, 0.5, 0.9, 0 (off, with a seed),
 *                  NaN, -0.25, 1, +inf (the last four but 0: FA_ERR_ARG)
 *   dropout_seed   fa_params.dropout_seed (and dropout_offset = 3 x it)
 * Dropout's origins (FZ_ORIGIN_FIELDS, last):
 *   origin         < 0xC0: both 0; else fa_params.dropout_row0 and dropout_key0 by % 7: (origin_row,
 *                  origin_key) as given, (-1, 0) and (0, -5) (FA_ERR_ARG, with or without dropout),
 *                  (2^32 - 1, 0), (0, 2^34 - 1), (INT64_MAX, 0) (with dropout FA_ERR_UNSUPPORTED
 *                  once a row or key passes the counter), (2^32 - 64, 2^34 - 256)
 *   origin_row, origin_key  the origins of the first case
 * fa_convert (FZ_CONVERT_FIELDS, last):
 *   convert        < 0xC0: not called; else fa_convert(dst, src) is called last, on two of the eight
 *                  views as the input decoded them (any dtype, layout, place, size; a NULL layout is a
 *                  NULL pointer): dst view convert_dst % 8, src view convert_src % 8 (the same view:
 *                  dst over src, FA_ERR_ALIAS unless empty); bit 0 of convert gives dst src's sizes
 *                  (keeping its own strides), so that the conversion itself runs often
 *
 * The bias's gradient (FZ_DBIAS_FIELDS, then the view fields of p.dbias; fa_backward reads it,
 * fa_forward ignores it):
 *   dbias          < 0xC0: none; else p.dbias is given, shaped as the bias is decoded (extras' bits,
 *                  before the bias's own size override; also when the call has no bias: FA_ERR_NULL),
 *                  of the accumulation type, with the view fields below
 *   the view       as a view's: layout >= 0xF8 leaves the pointer NULL (no dbias), else % 9 (packed
 *                  reads as bshd; the stride-0 layouts broadcast as the bias may, which dbias must
 *                  match); place % 11 on the region of view 0..7 or 8 the bias's, 9 data NULL,
 *                  10 own region misaligned; the raw strides, size override and dtype_override
 *
 * Quantized KV caches (FZ_QUANT_FIELDS, then the view fields of k_scale and v_scale):
 *   quant          < 0x80: k's group keeps its dtype (kv_dtype); else k, v, dk and dv are FA_I8,
 *                  FA_F8_E4M3 or FA_F8_E5M2 by value % 3 (a view's dtype_override still wins), and
 *                  p.k_scale and p.v_scale are given
 *   quant_twist    < 0xC0: none; else by % 6: 0 v and dv of the next quantized type, 1 q, out, dout
 *                  and dq of k's quantized type, 2 out and dout of it, 3 v and dv of the call's
 *                  dtype, 4 the scales given whatever k is (FA_ERR_ARG for a float k), 5 dk and dv of
 *                  the call's dtype
 *   k_bcast, v_bcast  bits 0, 1, 2 make the scale's batch, heads, seq 1 (broadcast); the scale is
 *                  otherwise shaped like k (v) as the call has it, with dim 1
 *   k_scale, v_scale  the view fields: layout >= 0xF8 leaves the scale's pointer NULL (missing),
 *                  else % 9 as a view's (packed reads as bshd); place % 10 on the region of view
 *                  0..7, 8 data NULL, 9 own region misaligned; the raw strides, size override and
 *                  dtype_override (else FA_F32) as a view's. Their own regions hold uniform values
 *                  in [-1, 1]·amp/Q, and the quantized elements codes of uniform values in [-Q, Q]
 *                  (Q = 127 for FA_I8, 1 for the FP8 types), so the dequantized cache lies in
 *                  [-amp, amp] as the float caches' values do
 */
#ifndef FA_FUZZ_INPUT_H
#define FA_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>

typedef uint8_t fz_u8;
typedef int8_t fz_i8;
typedef uint16_t fz_u16;
typedef int16_t fz_i16;
typedef int32_t fz_i32;
typedef uint32_t fz_u32;

/* clang-format off */
#define FZ_CALL_FIELDS(X)                                                                                   \
    X(u8, ctx) X(u8, fresh_threads) X(u8, fresh_bq) X(u8, fresh_bk) X(u8, fresh_isa) X(u8, fresh_bind)      \
    X(u8, calls) X(u8, dtype) X(u8, batch) X(u8, kv_heads) X(u8, group)                                     \
    X(u16, q_len) X(u16, kv_len) X(u16, dim) X(u16, dim_v)                                                  \
    X(u8, params_null) X(u8, scale_mode) X(i16, scale_raw) X(u8, causal)                                    \
    X(u8, window) X(i8, window_left) X(i8, window_right) X(u8, softcap) X(u8, extras)                       \
    X(u8, lse_mode) X(i16, lse_shift) X(u32, seed) X(u8, amp) X(u8, gap) X(u8, specials)                  \
    X(u8, softcap_raw)

#define FZ_VIEW_FIELDS(X)                                                                                   \
    X(u8, layout) X(u8, pad_seq) X(u8, pad_head) X(u8, pad_batch) X(u8, place) X(i16, shift)                \
    X(i32, raw_batch) X(i32, raw_head) X(i32, raw_seq) X(u8, raw_scale)                                     \
    X(u8, size_field) X(i32, size_value) X(u8, size_scale) X(u8, dtype_override)
/* clang-format on */

#define FZ_SPECIAL_FIELDS(X) X(u8, view) X(u16, index) X(u8, kind)
#define FZ_HEADS_FIELDS(X)   X(u8, mode) X(i16, shift) X(u8, scale)
/* clang-format off */
#define FZ_SEQS_FIELDS(X)                                                                                   \
    X(u8, seqs) X(u8, seqs_count) X(u8, page_size) X(u8, pool_pages) X(u8, pages_per_seq)                  \
    X(u8, spare_rows) X(u8, corrupt) X(u8, corrupt_index) X(i32, corrupt_value) X(u8, corrupt_scale)       \
    X(u8, arrays_place) X(i16, arrays_shift)
/* clang-format on */
#define FZ_SEQ_FIELDS(X) X(u8, q_len) X(u8, k_len) X(u8, used)
#define FZ_MERGE_FIELDS(X) \
    X(u8, merge) X(u8, merge_n) X(u8, merge_minf) X(u8, merge_mode) X(u8, merge_lses) X(i16, merge_shift)

#define FZ_DTYPE_FIELDS(X)   X(u8, kv_dtype)
#define FZ_ABI_FIELDS(X)     X(u8, abi) X(u16, abi_size) X(u16, abi_byte) X(u8, abi_value)
#define FZ_QUANT_FIELDS(X)   X(u8, quant) X(u8, quant_twist) X(u8, k_bcast) X(u8, v_bcast)
#define FZ_DROPOUT_FIELDS(X) X(u8, dropout) X(u8, dropout_seed)
#define FZ_DBIAS_FIELDS(X)   X(u8, dbias)
#define FZ_ORIGIN_FIELDS(X)  X(u8, origin) X(u16, origin_row) X(u16, origin_key)
#define FZ_CONVERT_FIELDS(X) X(u8, convert) X(u8, convert_dst) X(u8, convert_src)

#define FZ_VIEWS     8 /* the tensor arguments; the bias is view FZ_BIAS of the harness */
#define FZ_SPECIALS  4
#define FZ_ARRAYS    3
#define FZ_SEQ_MAX   8  /* sequences the arrays describe */
#define FZ_TABLE_MAX 48 /* block-table entries: FZ_SEQ_MAX sequences of 6 pages at most */
enum { FZ_Q, FZ_K, FZ_V, FZ_OUT, FZ_DOUT, FZ_DQ, FZ_DK, FZ_DV, FZ_BIAS };
enum { FZ_SLOPES, FZ_SINKS, FZ_DSINKS };

#define FZ_MEMBER(type, name) fz_##type name;
typedef struct {
    FZ_VIEW_FIELDS(FZ_MEMBER)
} fz_view_bytes;
typedef struct {
    FZ_SPECIAL_FIELDS(FZ_MEMBER)
} fz_special_bytes;
typedef struct {
    FZ_HEADS_FIELDS(FZ_MEMBER)
} fz_heads_bytes;
typedef struct {
    FZ_SEQS_FIELDS(FZ_MEMBER)
} fz_seqs_bytes;
typedef struct {
    FZ_SEQ_FIELDS(FZ_MEMBER)
} fz_seq_bytes;
typedef struct {
    FZ_MERGE_FIELDS(FZ_MEMBER)
} fz_merge_bytes;
typedef struct {
    FZ_DTYPE_FIELDS(FZ_MEMBER)
} fz_dtypes_bytes;
typedef struct {
    FZ_ABI_FIELDS(FZ_MEMBER)
} fz_abi_bytes;
typedef struct {
    FZ_QUANT_FIELDS(FZ_MEMBER)
} fz_quant_bytes;
typedef struct {
    FZ_DROPOUT_FIELDS(FZ_MEMBER)
} fz_dropout_bytes;
typedef struct {
    FZ_DBIAS_FIELDS(FZ_MEMBER)
} fz_dbias_bytes;
typedef struct {
    FZ_ORIGIN_FIELDS(FZ_MEMBER)
} fz_origin_bytes;
typedef struct {
    FZ_CONVERT_FIELDS(FZ_MEMBER)
} fz_convert_bytes;
typedef struct {
    FZ_CALL_FIELDS(FZ_MEMBER)
    fz_view_bytes view[FZ_VIEWS];
    fz_special_bytes special[FZ_SPECIALS];
    fz_view_bytes bias;
    fz_heads_bytes array[FZ_ARRAYS];
    fz_seqs_bytes seqs;
    fz_seq_bytes seq[FZ_SEQ_MAX];
    fz_u8 table[FZ_TABLE_MAX];
    fz_merge_bytes merge;
    fz_dtypes_bytes dtypes;
    fz_abi_bytes abi;
    fz_quant_bytes quant;
    fz_view_bytes scale[2]; /* k_scale, v_scale */
    fz_dropout_bytes dropout;
    fz_dbias_bytes dbias;
    fz_view_bytes dbias_view;
    fz_origin_bytes origin;
    fz_convert_bytes convert;
} fz_input;
#undef FZ_MEMBER

/* ---- reading: missing bytes read as 0 ---- */

typedef struct {
    const uint8_t *p;
    size_t n, pos;
} fz_reader;

static inline uint32_t fz_take(fz_reader *r, int bytes)
{
    uint32_t v = 0;
    for (int i = 0; i < bytes; i++, r->pos++)
        if (r->pos < r->n) v |= (uint32_t)r->p[r->pos] << (8 * i);
    return v;
}

static inline fz_u8 fz_get_u8(fz_reader *r)
{
    return (fz_u8)fz_take(r, 1);
}
static inline fz_u16 fz_get_u16(fz_reader *r)
{
    return (fz_u16)fz_take(r, 2);
}
static inline fz_i8 fz_get_i8(fz_reader *r)
{
    uint32_t u = fz_take(r, 1);
    return (fz_i8)(u < 0x80u ? (int32_t)u : (int32_t)u - 0x100);
}
static inline fz_i16 fz_get_i16(fz_reader *r)
{
    uint32_t u = fz_take(r, 2);
    return (fz_i16)(u < 0x8000u ? (int32_t)u : (int32_t)u - 0x10000);
}
static inline fz_i32 fz_get_i32(fz_reader *r)
{
    uint32_t u = fz_take(r, 4);
    return (fz_i32)(u < 0x80000000u ? (int64_t)u : (int64_t)u - ((int64_t)1 << 32));
}
static inline fz_u32 fz_get_u32(fz_reader *r)
{
    return fz_take(r, 4);
}

#define FZ_READ(type, name)         d->name = fz_get_##type(r);
#define FZ_READ_DROPOUT(type, name) d->dropout.name = fz_get_##type(r);
#define FZ_READ_DBIAS(type, name)   d->dbias.name = fz_get_##type(r);
#define FZ_READ_ORIGIN(type, name)  d->origin.name = fz_get_##type(r);
#define FZ_READ_CONVERT(type, name) d->convert.name = fz_get_##type(r);
static inline void fz_read_view(fz_reader *r, fz_view_bytes *d)
{
    FZ_VIEW_FIELDS(FZ_READ)
}
static inline void fz_read_special(fz_reader *r, fz_special_bytes *d)
{
    FZ_SPECIAL_FIELDS(FZ_READ)
}
static inline void fz_read_heads(fz_reader *r, fz_heads_bytes *d)
{
    FZ_HEADS_FIELDS(FZ_READ)
}
static inline void fz_read_seqs(fz_reader *r, fz_seqs_bytes *d)
{
    FZ_SEQS_FIELDS(FZ_READ)
}
static inline void fz_read_seq(fz_reader *r, fz_seq_bytes *d)
{
    FZ_SEQ_FIELDS(FZ_READ)
}
static inline void fz_read_merge(fz_reader *r, fz_merge_bytes *d)
{
    FZ_MERGE_FIELDS(FZ_READ)
}
static inline void fz_read_dtypes(fz_reader *r, fz_dtypes_bytes *d)
{
    FZ_DTYPE_FIELDS(FZ_READ)
}
static inline void fz_read_abi(fz_reader *r, fz_abi_bytes *d)
{
    FZ_ABI_FIELDS(FZ_READ)
}
static inline void fz_read_quant(fz_reader *r, fz_quant_bytes *d)
{
    FZ_QUANT_FIELDS(FZ_READ)
}
static inline void fz_decode(fz_input *d, const uint8_t *data, size_t size)
{
    fz_reader rd = {data, size, 0}, *r = &rd;
    FZ_CALL_FIELDS(FZ_READ)
    for (int i = 0; i < FZ_VIEWS; i++) fz_read_view(r, &d->view[i]);
    for (int i = 0; i < FZ_SPECIALS; i++) fz_read_special(r, &d->special[i]);
    fz_read_view(r, &d->bias);
    for (int i = 0; i < FZ_ARRAYS; i++) fz_read_heads(r, &d->array[i]);
    fz_read_seqs(r, &d->seqs);
    for (int i = 0; i < FZ_SEQ_MAX; i++) fz_read_seq(r, &d->seq[i]);
    for (int i = 0; i < FZ_TABLE_MAX; i++) d->table[i] = fz_get_u8(r);
    fz_read_merge(r, &d->merge);
    fz_read_dtypes(r, &d->dtypes);
    fz_read_abi(r, &d->abi);
    fz_read_quant(r, &d->quant);
    for (int i = 0; i < 2; i++) fz_read_view(r, &d->scale[i]);
    FZ_DROPOUT_FIELDS(FZ_READ_DROPOUT)
    FZ_DBIAS_FIELDS(FZ_READ_DBIAS)
    fz_read_view(r, &d->dbias_view);
    FZ_ORIGIN_FIELDS(FZ_READ_ORIGIN)
    FZ_CONVERT_FIELDS(FZ_READ_CONVERT)
}
#undef FZ_READ
#undef FZ_READ_DROPOUT
#undef FZ_READ_DBIAS
#undef FZ_READ_ORIGIN
#undef FZ_READ_CONVERT

/* ---- writing (the seed writer) ---- */

typedef struct {
    uint8_t *p;
    size_t n, cap;
} fz_writer;

static inline void fz_put(fz_writer *w, uint32_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        if (w->n < w->cap) w->p[w->n++] = (uint8_t)(v >> (8 * i));
}

#define FZ_WRITE(type, name)         fz_put(w, (uint32_t)d->name, (int)sizeof(fz_##type));
#define FZ_WRITE_DROPOUT(type, name) fz_put(w, (uint32_t)d->dropout.name, (int)sizeof(fz_##type));
#define FZ_WRITE_DBIAS(type, name)   fz_put(w, (uint32_t)d->dbias.name, (int)sizeof(fz_##type));
#define FZ_WRITE_ORIGIN(type, name)  fz_put(w, (uint32_t)d->origin.name, (int)sizeof(fz_##type));
#define FZ_WRITE_CONVERT(type, name) fz_put(w, (uint32_t)d->convert.name, (int)sizeof(fz_##type));
static inline void fz_write_view(fz_writer *w, const fz_view_bytes *d)
{
    FZ_VIEW_FIELDS(FZ_WRITE)
}
static inline void fz_write_special(fz_writer *w, const fz_special_bytes *d)
{
    FZ_SPECIAL_FIELDS(FZ_WRITE)
}
static inline void fz_write_heads(fz_writer *w, const fz_heads_bytes *d)
{
    FZ_HEADS_FIELDS(FZ_WRITE)
}
static inline void fz_write_seqs(fz_writer *w, const fz_seqs_bytes *d)
{
    FZ_SEQS_FIELDS(FZ_WRITE)
}
static inline void fz_write_seq(fz_writer *w, const fz_seq_bytes *d)
{
    FZ_SEQ_FIELDS(FZ_WRITE)
}
static inline void fz_write_merge(fz_writer *w, const fz_merge_bytes *d)
{
    FZ_MERGE_FIELDS(FZ_WRITE)
}
static inline void fz_write_dtypes(fz_writer *w, const fz_dtypes_bytes *d)
{
    FZ_DTYPE_FIELDS(FZ_WRITE)
}
static inline void fz_write_abi(fz_writer *w, const fz_abi_bytes *d)
{
    FZ_ABI_FIELDS(FZ_WRITE)
}
static inline void fz_write_quant(fz_writer *w, const fz_quant_bytes *d)
{
    FZ_QUANT_FIELDS(FZ_WRITE)
}
/* Writes the whole input; returns the number of bytes (FZ_INPUT_BYTES when cap allows). */
static inline size_t fz_encode(const fz_input *d, uint8_t *out, size_t cap)
{
    fz_writer wr = {out, 0, cap}, *w = &wr;
    FZ_CALL_FIELDS(FZ_WRITE)
    for (int i = 0; i < FZ_VIEWS; i++) fz_write_view(w, &d->view[i]);
    for (int i = 0; i < FZ_SPECIALS; i++) fz_write_special(w, &d->special[i]);
    fz_write_view(w, &d->bias);
    for (int i = 0; i < FZ_ARRAYS; i++) fz_write_heads(w, &d->array[i]);
    fz_write_seqs(w, &d->seqs);
    for (int i = 0; i < FZ_SEQ_MAX; i++) fz_write_seq(w, &d->seq[i]);
    for (int i = 0; i < FZ_TABLE_MAX; i++) fz_put(w, d->table[i], 1);
    fz_write_merge(w, &d->merge);
    fz_write_dtypes(w, &d->dtypes);
    fz_write_abi(w, &d->abi);
    fz_write_quant(w, &d->quant);
    for (int i = 0; i < 2; i++) fz_write_view(w, &d->scale[i]);
    FZ_DROPOUT_FIELDS(FZ_WRITE_DROPOUT)
    FZ_DBIAS_FIELDS(FZ_WRITE_DBIAS)
    fz_write_view(w, &d->dbias_view);
    FZ_ORIGIN_FIELDS(FZ_WRITE_ORIGIN)
    FZ_CONVERT_FIELDS(FZ_WRITE_CONVERT)
    return wr.n;
}
#undef FZ_WRITE
#undef FZ_WRITE_DROPOUT
#undef FZ_WRITE_DBIAS
#undef FZ_WRITE_ORIGIN
#undef FZ_WRITE_CONVERT

#endif

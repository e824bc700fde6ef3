# SPDX-License-Identifier: BSD-3-Clause
"""FlashAttention-2's Python interface (version 2.8) on CPU tensors.

The seven functions keep FlashAttention's names, argument names, defaults and semantics:
(batch, seqlen, nheads, headdim) and packed (total, nheads, headdim) layouts; causal masks aligned
to the bottom right (query i sees key j <= i + seqlen_k - seqlen_q); window_size=(left, right),
softcap, ALiBi slopes (nheads,) or (batch, nheads) adding -slope * |i + seqlen_k - seqlen_q - j|;
grouped-query attention (query head h reads kv head h // (nheads / nheads_k)); a row that sees no
key gets zeros, and lse = +inf as FlashAttention returns it. Beyond FlashAttention: float32 and
float64 inputs (float64 computes in float64), any head dim up to 576
(flashattn._C.MAX_HEAD_DIM: DeepSeek's MLA, 576 with a value head dim of 512).

Differences, by design of a CPU library:
- ``deterministic`` is accepted and always true: every result is bitwise identical at any thread
  count. ``num_splits`` is accepted; results do not depend on it.
- ``dropout_p`` in [0, 1) (else ValueError): each call with dropout_p > 0 draws its seed and
  offset from torch.default_generator (two 64-bit integers: flashattn.dropout says why), so
  ``torch.manual_seed`` makes a run reproducible; the backward reuses the forward's. The mask is
  flashattn.dropout_mask(dropout_p, seed, offset, batch, nheads, seqlen_q, seqlen_k). dropout_p = 0
  draws nothing.
- ``return_attn_probs=True`` returns (out, softmax_lse, S_dmask). Without dropout S_dmask is the
  empty tensor FlashAttention returns. With dropout it is (batch, nheads, seqlen_q, seqlen_k)
  (varlen: max_seqlen_q, max_seqlen_k, each sequence's rows and keys from 0) in q's dtype and keeps
  FlashAttention's sign encoding of the pattern, >= 0 kept and < 0 dropped, but with magnitude 1
  (+1 kept, -1 dropped): the library never forms the probabilities, exp(scores - softmax_lse).
- With causal=True and ALiBi, FlashAttention's kernel adds slope * j instead of
  -slope * |i + seqlen_k - seqlen_q - j| (the same softmax; its lse differs by a per-row constant);
  this package returns the lse of the documented formula.
"""

import math
from typing import Optional, Tuple, Union

import torch
from torch import Tensor

from . import _C, _ops
from .dropout import check_dropout_p, dropout_mask, rng_state, seed_offset
from .layers.rotary import apply_rotary_emb

__all__ = [
    "flash_attn_func",
    "flash_attn_qkvpacked_func",
    "flash_attn_kvpacked_func",
    "flash_attn_varlen_func",
    "flash_attn_varlen_qkvpacked_func",
    "flash_attn_varlen_kvpacked_func",
    "flash_attn_with_kvcache",
]


def _window(causal: bool, window_size, seqlen_k: int) -> Tuple[int, int, int]:
    """FlashAttention's (causal, window_size) for keys of length seqlen_k (max_seqlen_k for varlen)
    as fa_params' (causal, window_left, window_right), normalised the way FlashAttention does: a
    side >= seqlen_k is unbounded, causal bounds the right side at 0, and a window bounded on the
    left only is bounded at seqlen_k on the right (visible when seqlen_q > seqlen_k + 1)."""
    left, right = int(window_size[0]), int(window_size[1])
    if left >= seqlen_k:
        left = -1
    if right >= seqlen_k:
        right = -1
    if causal:
        right = 0
    if left >= 0 and right < 0:
        right = seqlen_k
    mode = _C.CAUSAL_BOTTOM_RIGHT if causal else _C.CAUSAL_NONE
    return mode, left, right


def _softcap(softcap) -> float:
    """FlashAttention's softcap: anything <= 0 deactivates it (NaN reaches the library's check)."""
    softcap = float(softcap)
    return 0.0 if softcap <= 0.0 else softcap


def _scale(softmax_scale, head_dim: int) -> float:
    return float(softmax_scale) if softmax_scale is not None else 1.0 / math.sqrt(head_dim)


def _fa_lse(lse: Tensor) -> Tensor:
    """FlashAttention's lse: +inf for a row that sees no key (the C library writes -inf)."""
    return lse.masked_fill(lse == float("-inf"), float("inf"))


def _s_dmask(q: Tensor, cu_q, seqlen_q: int, seqlen_k: int, dropout_p: float, rng: Optional[Tensor]) -> Tensor:
    """FlashAttention's S_dmask as this package returns it (see the module's docstring): empty
    without dropout, else the call's keep mask as +1 (kept) and -1 (dropped) in q's dtype."""
    if rng is None:
        return q.new_empty((0,))
    batch = q.shape[0] if cu_q is None else cu_q.shape[0] - 1
    keep = dropout_mask(dropout_p, *seed_offset(rng), batch, q.shape[-2], seqlen_q, seqlen_k)
    return torch.where(keep, 1.0, -1.0).to(q.dtype)


def _attention(q, k, v, cu_q, cu_k, seqlen_q, seqlen_k, dropout_p, softmax_scale, causal, window_size, softcap,
               alibi_slopes, return_attn_probs, head_dim, block_table=None):
    dropout_p = check_dropout_p(dropout_p)
    mode, left, right = _window(causal, window_size, seqlen_k)
    rng = rng_state(dropout_p)  # after every check that can refuse the call in Python
    out, lse = _ops.attention(q, k, v, None, alibi_slopes, None, cu_q, cu_k, None, block_table, None,
                              _scale(softmax_scale, head_dim), mode, left, right, _softcap(softcap), 0, False,
                              dropout_p, rng)
    if not return_attn_probs:
        return out
    return out, _fa_lse(lse), _s_dmask(q, cu_q, seqlen_q, seqlen_k, dropout_p, rng)


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                    softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """Attention of q (batch, seqlen_q, nheads, headdim) over k, v (batch, seqlen_k, nheads_k,
    headdim): out (batch, seqlen_q, nheads, headdim_v); with return_attn_probs also softmax_lse
    (batch, nheads, seqlen_q) and S_dmask (the module's docstring). Differentiable in q, k and v.
    dropout_p > 0 draws (seed, offset) from torch.default_generator (flashattn.dropout)."""
    return _attention(q, k, v, None, None, q.shape[1], k.shape[1], dropout_p, softmax_scale, causal, window_size,
                      softcap, alibi_slopes, return_attn_probs, q.shape[-1])


def flash_attn_qkvpacked_func(qkv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                              softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash_attn_func on qkv (batch, seqlen, 3, nheads, headdim); its gradient is one packed dqkv,
    written in place of three (no concatenation)."""
    return _attention(qkv, None, None, None, None, qkv.shape[1], qkv.shape[1], dropout_p, softmax_scale, causal,
                      window_size, softcap, alibi_slopes, return_attn_probs, qkv.shape[-1])


def flash_attn_kvpacked_func(q, kv, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                             softcap=0.0, alibi_slopes=None, deterministic=False, return_attn_probs=False):
    """flash_attn_func on q and kv (batch, seqlen_k, 2, nheads_k, headdim); dkv comes packed."""
    return _attention(q, kv, None, None, None, q.shape[1], kv.shape[1], dropout_p, softmax_scale, causal, window_size,
                      softcap, alibi_slopes, return_attn_probs, q.shape[-1])


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p=0.0,
                           softmax_scale=None, causal=False, window_size=(-1, -1), softcap=0.0,
                           alibi_slopes=None, deterministic=False, return_attn_probs=False, block_table=None):
    """Packed sequences: q (total_q, nheads, headdim), k, v (total_k, nheads_k, headdim); sequence b
    owns rows cu_seqlens_q[b]..cu_seqlens_q[b+1] of q and cu_seqlens_k[b]..cu_seqlens_k[b+1] of k
    and v (int32 or int64 offsets). With block_table (batch, pages_per_seq) k and v are page pools
    (num_blocks, page_block_size, nheads_k, headdim) and sequence b has cu_seqlens_k[b+1] -
    cu_seqlens_k[b] keys (forward only). Masks, windows and ALiBi apply per sequence with its own
    lengths. softmax_lse is (nheads, total_q)."""
    return _attention(q, k, v, cu_seqlens_q, cu_seqlens_k, int(max_seqlen_q), int(max_seqlen_k), dropout_p,
                      softmax_scale, causal, window_size, softcap, alibi_slopes, return_attn_probs, q.shape[-1],
                      block_table=block_table)


def flash_attn_varlen_qkvpacked_func(qkv, cu_seqlens, max_seqlen, dropout_p=0.0, softmax_scale=None,
                                     causal=False, window_size=(-1, -1), softcap=0.0, alibi_slopes=None,
                                     deterministic=False, return_attn_probs=False):
    """flash_attn_varlen_func on qkv (total, 3, nheads, headdim) with one set of offsets."""
    return _attention(qkv, None, None, cu_seqlens, cu_seqlens, int(max_seqlen), int(max_seqlen), dropout_p,
                      softmax_scale, causal, window_size, softcap, alibi_slopes, return_attn_probs, qkv.shape[-1])


def flash_attn_varlen_kvpacked_func(q, kv, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                                    dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                                    softcap=0.0, alibi_slopes=None, deterministic=False,
                                    return_attn_probs=False):
    """flash_attn_varlen_func on q and kv (total_k, 2, nheads_k, headdim)."""
    return _attention(q, kv, None, cu_seqlens_q, cu_seqlens_k, int(max_seqlen_q), int(max_seqlen_k), dropout_p,
                      softmax_scale, causal, window_size, softcap, alibi_slopes, return_attn_probs, q.shape[-1])


def _rotary_positions(cache_seqlens: Tensor, seqlen: int, per_row: bool) -> Tensor:
    """(batch, seqlen) positions: cache_seqlens[b] + i, or cache_seqlens[b] for every row."""
    base = cache_seqlens.to(torch.int64).unsqueeze(1)
    if not per_row:
        return base.expand(-1, seqlen)
    return base + torch.arange(seqlen, device=cache_seqlens.device)


def flash_attn_with_kvcache(
    q,
    k_cache,
    v_cache,
    k=None,
    v=None,
    rotary_cos=None,
    rotary_sin=None,
    cache_seqlens: Optional[Union[int, Tensor]] = None,
    cache_batch_idx: Optional[Tensor] = None,
    cache_leftpad: Optional[Tensor] = None,
    block_table: Optional[Tensor] = None,
    softmax_scale=None,
    causal=False,
    window_size=(-1, -1),
    softcap=0.0,
    rotary_interleaved=True,
    alibi_slopes=None,
    num_splits=0,
    return_softmax_lse=False,
):
    """Attention of q (batch, seqlen_q, nheads, headdim) over a KV cache, as FlashAttention's:

    - k_cache, v_cache: (batch_cache, seqlen_cache, nheads_k, headdim), or with block_table
      (batch, max_blocks_per_seq) int32 page pools (num_blocks, page_block_size, nheads_k, headdim)
      (any page size here). cache_batch_idx (batch,) picks the cache row of each sequence.
    - cache_seqlens (int or (batch,)): keys already in the cache. k, v (batch, seqlen_new, nheads_k,
      headdim), when given, are written into the caches in place at rows cache_seqlens[b] ..
      cache_seqlens[b] + seqlen_new - 1, and the attention then sees them too.
    - rotary_cos, rotary_sin (seqlen_ro, rotary_dim / 2), with k given: k is rotated at positions
      cache_seqlens[b] + i before it is written; q at the same positions when causal or windowed,
      else at position cache_seqlens[b] for every row; interleaved (GPT-J) or halves (GPT-NeoX) per
      rotary_interleaved; in float32 (float64 for float64), rounded once to the input's dtype.
    - cache_leftpad (batch,): sequence b's keys start at cache row cache_leftpad[b]; positions in
      masks and ALiBi count from there (not with block_table).
    - causal and windows align to the bottom right of each sequence's keys in use.
    Returns out, and softmax_lse (batch, nheads, seqlen_q) with return_softmax_lse. No backward.
    num_splits is accepted; results do not depend on it.
    """
    if k_cache.stride(-1) != 1 or v_cache.stride(-1) != 1:
        raise ValueError("flash_attn_with_kvcache: k_cache and v_cache must have a contiguous last dimension")
    paged = block_table is not None
    if paged and cache_batch_idx is not None:
        raise ValueError("flash_attn_with_kvcache: a paged cache (block_table) does not take cache_batch_idx")
    if paged and cache_leftpad is not None:
        raise ValueError("flash_attn_with_kvcache: a paged cache (block_table) does not take cache_leftpad")
    if (k is None) != (v is None):
        raise ValueError("flash_attn_with_kvcache: give both k and v, or neither")
    batch, seqlen_q = q.shape[0], q.shape[1]
    seqlen_k = k_cache.shape[1] if not paged else block_table.shape[1] * k_cache.shape[1]
    if isinstance(cache_seqlens, int):
        cache_seqlens = torch.full((batch,), cache_seqlens, dtype=torch.int32, device=q.device)
    used = cache_seqlens
    if k is not None:
        if cache_seqlens is None:
            raise ValueError("flash_attn_with_kvcache: k and v need cache_seqlens (where to append them)")
        seqlen_new = k.shape[1]
        if rotary_cos is not None:
            pos = _rotary_positions(cache_seqlens, seqlen_new, True)
            k = apply_rotary_emb(k, rotary_cos, rotary_sin, interleaved=rotary_interleaved, positions=pos)
        rows = cache_seqlens.to(torch.int64).unsqueeze(1) + torch.arange(seqlen_new, device=q.device)
        if paged:
            page = k_cache.shape[1]
            pages = block_table.to(torch.int64).gather(1, torch.div(rows, page, rounding_mode="floor"))
            k_cache[pages, rows % page] = k.to(k_cache.dtype)
            v_cache[pages, rows % page] = v.to(v_cache.dtype)
        else:
            bidx = (cache_batch_idx.to(torch.int64) if cache_batch_idx is not None
                    else torch.arange(batch, device=q.device)).unsqueeze(1)
            k_cache[bidx, rows] = k.to(k_cache.dtype)
            v_cache[bidx, rows] = v.to(v_cache.dtype)
        used = cache_seqlens + seqlen_new
        if rotary_cos is not None:
            windowed = causal or window_size[0] >= 0 or window_size[1] >= 0
            pos = _rotary_positions(cache_seqlens, seqlen_q, windowed)
            q = apply_rotary_emb(q, rotary_cos, rotary_sin, interleaved=rotary_interleaved, positions=pos)
    mode, left, right = _window(causal, window_size, seqlen_k)
    if not paged and cache_batch_idx is not None:
        # each sequence reads its own cache row: the cache as a pool of pages of one whole row each
        block_table = cache_batch_idx.to(torch.int32).unsqueeze(1)
    elif not paged and k_cache.shape[0] != batch:
        k_cache, v_cache = k_cache[:batch], v_cache[:batch]
    if used is not None:
        used = used.to(torch.int64)
    out, lse = _ops.attention(q, k_cache, v_cache, None, alibi_slopes, None, None, None, used, block_table,
                        cache_leftpad, _scale(softmax_scale, q.shape[-1]), mode, left, right, _softcap(softcap),
                        0, False)
    return (out, _fa_lse(lse)) if return_softmax_lse else out


def _get_block_size_n(device, head_dim, is_dropout, is_causal):
    """FlashAttention's test helper (key block of its CUDA kernels), kept for its test suite's
    imports; this library's blocks are chosen per CPU (fa_stats)."""
    return 128 if head_dim <= 64 else 64

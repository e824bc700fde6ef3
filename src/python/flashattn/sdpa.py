# SPDX-License-Identifier: BSD-3-Clause
"""PyTorch's convention: a drop-in for torch.nn.functional.scaled_dot_product_attention on CPU.

    import flashattn
    out = flashattn.scaled_dot_product_attention(q, k, v, is_causal=True)   # q, k, v (B, H, S, D)

Layout (batch, heads, seqlen, dim) (or (batch, seqlen, dim): one head), causal masks aligned to the
top left (query i sees key j <= i), attn_mask boolean (True = take part) or float (added to the
scores) broadcastable to (batch, heads, seqlen_q, seqlen_k), enable_gqa for fewer kv heads.
Differentiable in query, key, value (and sinks); the output is (batch, heads, seqlen_q, dim_v)
stored as (batch, seqlen_q, heads, dim_v), so out.transpose(1, 2).reshape(B, S, H * Dv) is free.

The library's extras, as keywords: window=(left, right) (keys j with i - left <= j <= i + right;
-1 = unbounded on that side), softcap (scores become softcap * tanh(score / softcap)), alibi
(heads,) float slopes adding -slope * |i - j|, sinks (heads,) logits in every row's denominator
(differentiable). Distances count from the top left like the causal mask.

dropout_p in [0, 1) drops each probability with that chance and scales the kept ones by
1 / (1 - dropout_p), as PyTorch does; each call with dropout_p > 0 draws its (seed, offset) from
torch.default_generator (flashattn.dropout), so torch.manual_seed reproduces it, and the backward
reuses the forward's mask: flashattn.dropout_mask(dropout_p, seed, offset, batch, heads, seqlen_q,
seqlen_k). The bits differ from PyTorch's own dropout (a different generator).

Unlike PyTorch's math path, a row whose keys are all masked gets zeros, not NaN. A float attn_mask
that requires grad is refused in the backward (the C library treats the bias as a constant).
"""

import math
from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _C, _ops
from .dropout import check_dropout_p, rng_state

__all__ = ["scaled_dot_product_attention"]


def _bias(attn_mask: Tensor, q: Tensor, nk: int) -> Tensor:
    """attn_mask as the C library's bias: 4-D, the accumulation dtype, key axis contiguous."""
    acc = torch.float64 if q.dtype == torch.float64 else torch.float32
    if attn_mask.dtype == torch.bool:
        bias = torch.zeros(attn_mask.shape, dtype=acc, device=attn_mask.device)
        bias.masked_fill_(attn_mask.logical_not(), float("-inf"))
    else:
        bias = attn_mask if attn_mask.dtype == acc else attn_mask.to(acc)
    while bias.dim() < 4:
        bias = bias.unsqueeze(0)
    if bias.size(-1) != nk:
        bias = bias.expand(*bias.shape[:-1], nk)
    if bias.stride(-1) != 1 and nk > 1:
        bias = bias.contiguous()
    return bias


def scaled_dot_product_attention(query: Tensor, key: Tensor, value: Tensor, attn_mask: Optional[Tensor] = None,
                                 dropout_p: float = 0.0, is_causal: bool = False, scale: Optional[float] = None,
                                 enable_gqa: bool = False, *, window: Optional[Tuple[int, int]] = None,
                                 softcap: float = 0.0, alibi: Optional[Tensor] = None,
                                 sinks: Optional[Tensor] = None) -> Tensor:
    """torch.nn.functional.scaled_dot_product_attention's arguments and result, computed by
    flashattn (see the module's docstring for the extras and the differences)."""
    dropout_p = check_dropout_p(dropout_p)
    if attn_mask is not None and is_causal:
        raise ValueError("scaled_dot_product_attention: explicit attn_mask should not be set when is_causal=True")
    squeeze = query.dim() == 3
    if squeeze:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4:
        raise ValueError("scaled_dot_product_attention: expected (batch, heads, seqlen, dim) tensors "
                         f"(or 3-D), got {query.dim()}, {key.dim()} and {value.dim()} dimensions")
    if key.size(1) != query.size(1) and not enable_gqa:
        raise ValueError(f"scaled_dot_product_attention: query has {query.size(1)} heads, key {key.size(1)}: "
                         "pass enable_gqa=True for grouped-query attention")
    nq, nk = query.size(2), key.size(2)
    bias = _bias(attn_mask, query, nk) if attn_mask is not None else None
    left, right = (-1, -1) if window is None else (int(window[0]), int(window[1]))
    # Top-left distances: the C library aligns non-causal windows and ALiBi bottom-right (d0 =
    # Nk - Nq); the shift Nq - Nk brings d0 to 0.
    mode = _C.CAUSAL_TOP_LEFT if is_causal else _C.CAUSAL_NONE
    shift = 0 if is_causal else nq - nk
    sc = float(scale) if scale is not None else 1.0 / math.sqrt(query.size(-1))
    rng = rng_state(dropout_p)  # after every check that can refuse the call in Python
    out, _ = _ops.attention(query, key, value, bias, alibi, sinks, None, None, None, None, None, sc, mode, left, right,
                            float(softcap), shift, True, dropout_p, rng)
    return out.squeeze(1) if squeeze else out

# SPDX-License-Identifier: BSD-3-Clause
"""Rotary position embeddings as FlashAttention applies them (flash_attn.layers.rotary), in torch.

The first rotary_dim = 2 * cos.shape[-1] features of each head are rotated by the angle of the
token's position: GPT-NeoX style (interleaved=False) pairs feature i with i + rotary_dim / 2,
GPT-J style (interleaved=True) pairs 2i with 2i + 1. As FlashAttention's kernel, the rotation is
computed in float32 (float64 for float64 inputs) and rounded once to x's dtype; a position past the
end of cos and sin is left unrotated. Differentiable (plain torch operations).
"""

from typing import Optional, Union

import torch
from torch import Tensor


def _positions(x: Tensor, seqlen_offsets, cu_seqlens: Optional[Tensor]) -> Tensor:
    """Each token's position: (batch, seqlen) for x (batch, seqlen, ...), (total,) for packed x."""
    if cu_seqlens is None:
        pos = torch.arange(x.shape[1], device=x.device).unsqueeze(0)
        if isinstance(seqlen_offsets, Tensor):
            return pos + seqlen_offsets.to(torch.int64).unsqueeze(1)
        return pos + int(seqlen_offsets)
    cu = cu_seqlens.to(torch.int64)
    total = x.shape[0]
    seq = torch.searchsorted(cu[1:], torch.arange(total, device=x.device), right=True)
    pos = torch.arange(total, device=x.device) - cu[seq]
    if isinstance(seqlen_offsets, Tensor):
        return pos + seqlen_offsets.to(torch.int64)[seq]
    return pos + int(seqlen_offsets)


def apply_rotary_emb(x: Tensor, cos: Tensor, sin: Tensor, interleaved: bool = False, inplace: bool = False,
                     seqlen_offsets: Union[int, Tensor] = 0, cu_seqlens: Optional[Tensor] = None,
                     max_seqlen: Optional[int] = None, *, positions: Optional[Tensor] = None) -> Tensor:
    """x (batch, seqlen, nheads, headdim), or (total, nheads, headdim) with cu_seqlens; cos, sin
    (seqlen_ro, rotary_dim / 2). seqlen_offsets (int or (batch,)) shifts each sequence's positions;
    ``positions`` (an extension: (batch, seqlen) or (total,)) gives them outright. Returns the rotated
    x (written into x with inplace=True)."""
    half = cos.shape[-1]
    ro = 2 * half
    if ro > x.shape[-1]:
        raise ValueError(f"apply_rotary_emb: rotary_dim = {ro} > headdim = {x.shape[-1]}")
    if positions is None:
        positions = _positions(x, seqlen_offsets, cu_seqlens)
    positions = positions.to(torch.int64)
    seqlen_ro = cos.shape[0]
    inside = (positions < seqlen_ro).unsqueeze(-1)
    at = positions.clamp(0, max(seqlen_ro - 1, 0))
    work = torch.float64 if x.dtype == torch.float64 else torch.float32
    c = torch.where(inside, cos.to(work)[at], 1.0).unsqueeze(-2)  # (..., 1, half): every head
    s = torch.where(inside, sin.to(work)[at], 0.0).unsqueeze(-2)
    xr = x[..., :ro].to(work)
    if interleaved:
        a, b = xr[..., 0::2], xr[..., 1::2]
        rot = torch.stack((a * c - b * s, a * s + b * c), dim=-1).flatten(-2)
    else:
        a, b = xr[..., :half], xr[..., half:]
        rot = torch.cat((a * c - b * s, a * s + b * c), dim=-1)
    out = torch.cat((rot.to(x.dtype), x[..., ro:]), dim=-1) if ro < x.shape[-1] else rot.to(x.dtype)
    if inplace:
        x.copy_(out)
        return x
    return out


apply_rotary_emb_func = apply_rotary_emb

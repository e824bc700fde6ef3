# SPDX-License-Identifier: BSD-3-Clause
"""Padding helpers of FlashAttention's package (flash_attn.bert_padding), which its interface's
users and its test suite call to go between padded (batch, seqlen, ...) tensors and the packed
(total, ...) tensors of the varlen functions. Plain torch indexing (differentiable)."""

import torch
import torch.nn.functional as F


def unpad_input(hidden_states, attention_mask, unused_mask=None):
    """hidden_states (batch, seqlen, ...), attention_mask (batch, seqlen) (1/True = a token), and
    optionally unused_mask (allocated but unused tokens, kept in the packed rows). Returns the packed
    rows (total, ...), their indices in the flattened (batch * seqlen) axis, cu_seqlens (batch + 1,
    int32), the longest sequence (int) and the tokens per sequence that attention_mask selects
    (batch, int32)."""
    masks = attention_mask + unused_mask if unused_mask is not None else attention_mask
    seqlens = masks.sum(dim=-1, dtype=torch.int32)
    used = attention_mask.sum(dim=-1, dtype=torch.int32)
    indices = torch.nonzero(masks.flatten(), as_tuple=False).flatten()
    cu_seqlens = F.pad(torch.cumsum(seqlens, dim=0, dtype=torch.int32), (1, 0))
    rows = hidden_states.reshape(-1, *hidden_states.shape[2:]).index_select(0, indices)
    return rows, indices, cu_seqlens, int(seqlens.max().item()) if seqlens.numel() else 0, used


def pad_input(hidden_states, indices, batch, seqlen):
    """The inverse of unpad_input: rows (total, ...) back to (batch, seqlen, ...), zeros elsewhere."""
    out = hidden_states.new_zeros((batch * seqlen, *hidden_states.shape[1:]))
    out = out.index_put((indices,), hidden_states)
    return out.view(batch, seqlen, *hidden_states.shape[1:])

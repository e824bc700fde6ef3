# SPDX-License-Identifier: BSD-3-Clause
"""Attention dropout's random numbers: where each call's seed and offset come from, and the keep
mask they give.

The C library's mask is a pure function of (dropout_seed, dropout_offset, batch, head, row, key)
(Philox4x32-10; include/flashattn.h, "Dropout"). FlashAttention takes its seed and offset from
PyTorch's CUDA generator: the generator's seed, and its Philox offset, which each call advances.
PyTorch's CPU generator (a Mersenne Twister) has no such offset, so every call with dropout_p > 0
instead draws both from the generator's stream: one ``torch.randint`` of two int64 values over
[-2^63, 2^63 - 1) (the widest range randint takes), read as unsigned 64-bit (seed, offset), from
``torch.default_generator`` (the signatures of FlashAttention's functions and of
scaled_dot_product_attention take no generator; randint, unlike a custom counter, is traced by
torch.compile). So the generator's state is the only state, and everything that saves or resets it
reproduces the mask: ``torch.manual_seed``, ``torch.get_rng_state``/``set_rng_state``,
``torch.random.fork_rng``, and the recomputation of ``torch.utils.checkpoint`` (which restores the
CPU generator before it runs the forward again). Two calls' masks share Philox streams only if they
draw the same seed and offsets less than batch * heads apart (about one chance in 2^127 per pair).
A call with dropout_p == 0 draws nothing: the generator's state is unchanged. The backward reuses
the forward's (seed, offset), saved with the other tensors it needs, whatever the generator did
since.
"""

from typing import Optional, Tuple

import torch
from torch import Tensor

from . import _C

__all__ = ["dropout_mask", "draw_dropout_seed_offset"]

_U64 = (1 << 64) - 1


def check_dropout_p(dropout_p) -> float:
    """dropout_p as a float in [0, 1), else ValueError naming it (NaN included): checked before
    anything is drawn or written."""
    p = float(dropout_p)
    if not 0.0 <= p < 1.0:
        raise ValueError(f"flashattn: dropout_p = {dropout_p!r} must be in [0, 1)")
    return p


def rng_state(dropout_p: float, generator: Optional[torch.Generator] = None) -> Optional[Tensor]:
    """None for dropout_p == 0 (nothing drawn); else a (2,) int64 tensor (seed, offset), each drawn
    uniformly over [-2^63, 2^63 - 1) (seed_offset reads them as unsigned) from ``generator``
    (default: torch.default_generator)."""
    if dropout_p == 0.0:
        return None
    return torch.randint(-(1 << 63), (1 << 63) - 1, (2,), dtype=torch.int64, generator=generator)


def seed_offset(state: Tensor) -> Tuple[int, int]:
    """(seed, offset) of an rng_state tensor as the C library's uint64_t values."""
    seed, offset = state.tolist()
    return seed & _U64, offset & _U64


def draw_dropout_seed_offset(generator: Optional[torch.Generator] = None) -> Tuple[int, int]:
    """Draws (seed, offset), as unsigned 64-bit ints, from ``generator`` (default: torch.default_generator)
    exactly as a call with dropout_p > 0 does. To get the mask a call used, save the generator's
    state before it (``torch.get_rng_state()``), restore it after, and call this."""
    return seed_offset(rng_state(0.5, generator))


def dropout_mask(dropout_p: float, seed: int, offset: int, batch: int, nheads: int, seqlen_q: int,
                 seqlen_k: int) -> Tensor:
    """The keep mask of a call with this dropout_p, seed and offset: a bool tensor (batch, nheads,
    seqlen_q, seqlen_k), True where query row i of batch entry (or sequence) b and query head h keeps
    key j (fa_dropout_mask with Hq = nheads). Rows and keys are each sequence's own, from 0, also for
    packed (varlen) calls: sequence b's mask is mask[b, :, :len_q(b), :len_k(b)]. A kept probability
    is scaled by 1 / (1 - dropout_p); dropout_p == 0 keeps everything. Raises ValueError naming
    dropout_p outside [0, 1), a negative size, or a seed or offset outside [0, 2^64)."""
    p = check_dropout_p(dropout_p)
    buf = _C.dropout_mask(p, seed, offset, int(batch), int(nheads), int(seqlen_q), int(seqlen_k))
    shape = (int(batch), int(nheads), int(seqlen_q), int(seqlen_k))
    if len(buf) == 0:
        return torch.zeros(shape, dtype=torch.bool)
    return torch.frombuffer(buf, dtype=torch.uint8).view(shape).bool()

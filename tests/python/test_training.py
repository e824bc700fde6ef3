# SPDX-License-Identifier: BSD-3-Clause
"""A few training steps of a small causal GQA transformer with flashattn's SDPA swapped in for
PyTorch's: the losses and parameters follow PyTorch's model to rounding."""

import copy

import pytest
import torch
import torch.nn.functional as F

import flashattn
from models import TinyLM, loss_fn


def train(model, batches, lr=1e-2):
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    losses = []
    for tokens in batches:
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model, tokens)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().clone() for p in model.parameters()]


def torch_sdpa(*args, **kw):
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        return F.scaled_dot_product_attention(*args, **kw)


def models(seed, dtype):
    torch.manual_seed(seed)
    ref = TinyLM(torch_sdpa).to(dtype)
    ours = copy.deepcopy(ref)
    for blk in ours.blocks:
        blk.attention = flashattn.scaled_dot_product_attention  # the one-line swap
    return ref, ours


def batches(seed, n=4):
    g = torch.Generator().manual_seed(seed + 1)
    return [torch.randint(0, 61, (3, 33), generator=g) for _ in range(n)]


def test_training_steps_follow_pytorch_in_float64(seed):
    ref, ours = models(seed, torch.float64)
    data = batches(seed)
    ref_losses, ref_params = train(ref, data)
    our_losses, our_params = train(ours, data)
    for a, b in zip(our_losses, ref_losses):
        assert abs(a - b) <= 1e-12 * abs(b)
    for a, b in zip(our_params, ref_params):
        assert (a - b).abs().max().item() <= 1e-10 * max(1.0, b.abs().max().item())


@pytest.mark.parametrize("dtype", [torch.float32])
def test_training_steps_in_float32_stay_as_close_as_pytorch(seed, dtype):
    """In float32 both models drift from the float64 trajectory by rounding; flashattn's drift is
    within three times PyTorch's own (the suite's rule for reduced precision)."""
    exact, _ = models(seed, torch.float64)
    ref, ours = models(seed, dtype)
    data = batches(seed)
    _, p64 = train(exact, data)
    _, p_ref = train(ref, data)
    _, p_ours = train(ours, data)
    drift_ref = max((a.double() - b).abs().max().item() for a, b in zip(p_ref, p64))
    drift_ours = max((a.double() - b).abs().max().item() for a, b in zip(p_ours, p64))
    assert drift_ours <= 3 * drift_ref + 1e-6, (drift_ours, drift_ref)

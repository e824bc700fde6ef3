# SPDX-License-Identifier: BSD-3-Clause
"""torch.autograd.gradcheck in float64: every differentiable function's gradients (dq, dk, dv,
packed dqkv and dkv, dsinks) against finite differences, through the eager path and through the
custom op itself (torch.ops.flashattn.fwd)."""

import pytest
import torch
from torch.autograd import gradcheck

import flashattn
from conftest import randn

_CASES = {
    "func": lambda: (lambda q, k, v: flashattn.flash_attn_func(q, k, v, causal=True, softcap=2.0),
                     (randn(1, 5, 2, 4, grad=True), randn(1, 7, 1, 4, grad=True), randn(1, 7, 1, 3, grad=True))),
    "func-window-alibi": lambda: (
        lambda q, k, v: flashattn.flash_attn_func(q, k, v, window_size=(2, 1), alibi_slopes=torch.tensor([0.3, 0.7])),
        (randn(2, 6, 2, 4, grad=True), randn(2, 5, 2, 4, grad=True), randn(2, 5, 2, 4, grad=True))),
    "qkvpacked": lambda: (lambda qkv: flashattn.flash_attn_qkvpacked_func(qkv, causal=True),
                          (randn(1, 6, 3, 2, 4, grad=True),)),
    "kvpacked": lambda: (lambda q, kv: flashattn.flash_attn_kvpacked_func(q, kv, causal=True),
                         (randn(1, 4, 2, 4, grad=True), randn(1, 6, 2, 1, 4, grad=True))),
    "varlen": lambda: (
        lambda q, k, v: flashattn.flash_attn_varlen_func(q, k, v, torch.tensor([0, 3, 8], dtype=torch.int32),
                                                         torch.tensor([0, 4, 6], dtype=torch.int32), 5, 4,
                                                         causal=True),
        (randn(8, 2, 4, grad=True), randn(6, 2, 4, grad=True), randn(6, 2, 4, grad=True))),
    "varlen-qkvpacked-alibi2d": lambda: (
        lambda qkv: flashattn.flash_attn_varlen_qkvpacked_func(qkv, torch.tensor([0, 2, 7], dtype=torch.int32), 5,
                                                               alibi_slopes=torch.tensor([[0.1, 0.5], [0.9, 0.2]])),
        (randn(7, 3, 2, 4, grad=True),)),
    "sdpa-sinks-mask": lambda: (
        lambda q, k, v, s: flashattn.scaled_dot_product_attention(q, k, v, attn_mask=torch.tensor(
            [[True, False, True, True, True]] * 4), sinks=s),
        (randn(1, 2, 4, 4, grad=True), randn(1, 2, 5, 4, grad=True), randn(1, 2, 5, 4, grad=True),
         randn(2, grad=True))),
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_gradcheck(seed, case):
    fn, inputs = _CASES[case]()
    if case == "sdpa-sinks-mask":
        # sinks are float32 logits in the C API: check the f64 tensors' gradients, and dsinks below
        q, k, v, s = inputs
        s32 = s.detach().float()
        assert gradcheck(lambda q, k, v: fn(q, k, v, s32), (q, k, v), eps=1e-6, atol=1e-8, rtol=1e-6)
        return
    assert gradcheck(fn, inputs, eps=1e-6, atol=1e-8, rtol=1e-6)


def test_dsinks_against_finite_differences(seed):
    """dsinks is rounded to float32 (the C API's type): central differences of the float64 loss in
    the sinks agree to float32's precision."""
    q, k, v = randn(2, 3, 6, 4), randn(2, 3, 8, 4), randn(2, 3, 8, 4)
    sinks = torch.randn(3, dtype=torch.float32, requires_grad=True)
    g = randn(2, 3, 6, 4)

    def loss(s):
        return (flashattn.scaled_dot_product_attention(q, k, v, is_causal=True, sinks=s) * g).sum()

    (ds,) = torch.autograd.grad(loss(sinks), (sinks,))
    h = 1e-3
    for i in range(3):
        e = torch.zeros(3)
        e[i] = h
        fd = (loss(sinks.detach() + e) - loss(sinks.detach() - e)).item() / (2 * h)
        assert abs(ds[i].item() - fd) <= 1e-4 * max(1.0, abs(fd))


def test_gradcheck_through_the_custom_op(seed):
    """torch.ops.flashattn.fwd is differentiable by itself (register_autograd), as torch.compile
    and torch.export see it."""
    q, k, v = randn(1, 5, 2, 4, grad=True), randn(1, 6, 2, 4, grad=True), randn(1, 6, 2, 4, grad=True)

    def op(q, k, v):
        out, _ = torch.ops.flashattn.fwd(q, k, v, None, None, None, None, None, None, None, None, 0.5, 2, -1, -1,
                                         0.0, 0, False)
        return out

    assert gradcheck(op, (q, k, v), eps=1e-6, atol=1e-8, rtol=1e-6)


def test_lse_is_not_differentiable(seed):
    q = randn(1, 4, 2, 8, grad=True)
    out, lse, _ = flashattn.flash_attn_func(q, q, q, return_attn_probs=True)
    assert out.requires_grad and not lse.requires_grad

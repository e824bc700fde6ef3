# SPDX-License-Identifier: BSD-3-Clause
"""torch.compile(fullgraph=True): the custom ops trace as single nodes (fake implementations for
shapes and strides, the registered autograd for the backward), with no graph break, forward and
backward, and compute what eager calls compute."""

import torch

import flashattn
from conftest import randn
from models import TinyLM, loss_fn


def compiled(fn, backend="inductor"):
    torch._dynamo.reset()
    return torch.compile(fn, fullgraph=True, backend=backend)


def test_flash_attn_functions_compile_forward_and_backward(seed):
    """Inductor, fullgraph: dense, packed (dqkv packed) and a window, with the gradients of eager."""

    def f(q, k, v, qkv):
        a = flashattn.flash_attn_func(q, k, v, causal=True, window_size=(8, 0), softcap=2.0)
        b = flashattn.flash_attn_qkvpacked_func(qkv, causal=True)
        return (a * a).sum() + (b * b).sum()

    q, k, v = randn(2, 20, 4, 16, grad=True), randn(2, 24, 2, 16, grad=True), randn(2, 24, 2, 16, grad=True)
    qkv = randn(2, 20, 3, 4, 16, grad=True)
    inputs = (q, k, v, qkv)
    want = torch.autograd.grad(f(*inputs), inputs)
    got = torch.autograd.grad(compiled(f)(*inputs), inputs)
    for a, b in zip(got, want):
        assert a.shape == b.shape and a.stride() == b.stride()
        assert torch.allclose(a, b, rtol=1e-12, atol=1e-12)


def test_varlen_and_kvcache_compile(seed):
    """aot_eager (the fake implementations and the autograd graph, without code generation): packed
    sequences forward and backward, and a decode step that appends into its cache in place."""
    cu = torch.tensor([0, 5, 12], dtype=torch.int32)

    def f(q, k, v):
        return flashattn.flash_attn_varlen_func(q, k, v, cu, cu, 7, 7, causal=True).sum()

    q, k, v = randn(12, 2, 8, grad=True), randn(12, 2, 8, grad=True), randn(12, 2, 8, grad=True)
    want = torch.autograd.grad(f(q, k, v), (q, k, v))
    got = torch.autograd.grad(compiled(f, "aot_eager")(q, k, v), (q, k, v))
    assert all(torch.equal(a, b) for a, b in zip(got, want))

    def step(q, kc, vc, k, v, lens):
        return flashattn.flash_attn_with_kvcache(q, kc, vc, k, v, cache_seqlens=lens, causal=True)

    kc, vc = randn(2, 30, 2, 8), randn(2, 30, 2, 8)
    q1, k1, v1 = randn(2, 1, 4, 8), randn(2, 1, 2, 8), randn(2, 1, 2, 8)
    lens = torch.tensor([3, 17], dtype=torch.int32)
    kc2, vc2 = kc.clone(), vc.clone()
    want = step(q1, kc, vc, k1, v1, lens)
    got = compiled(step, "aot_eager")(q1, kc2, vc2, k1, v1, lens)
    assert torch.equal(got, want) and torch.equal(kc2, kc) and torch.equal(vc2, vc)


def test_dropout_compiles_and_draws_what_eager_draws(seed):
    """aot_eager, fullgraph: the seed and offset drawn from torch's generator are traced into the
    graph (no graph break), so the same torch.manual_seed gives eager's bytes, forward and backward
    (the backward on the mask of the forward's draw)."""

    def f(q, k, v):
        a = flashattn.flash_attn_func(q, k, v, dropout_p=0.25, causal=True)
        b = flashattn.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                   dropout_p=0.1)
        return (a * a).sum() + (b * b).sum()

    q, k, v = randn(2, 12, 2, 8, grad=True), randn(2, 12, 2, 8, grad=True), randn(2, 12, 2, 8, grad=True)
    state = torch.get_rng_state()
    want = f(q, k, v)
    want_g = torch.autograd.grad(want, (q, k, v))
    torch.set_rng_state(state)
    got = compiled(f, "aot_eager")(q, k, v)
    assert torch.equal(got, want)
    assert all(torch.equal(a, b) for a, b in zip(torch.autograd.grad(got, (q, k, v)), want_g))


def test_model_with_sdpa_swapped_in_compiles(seed):
    """torch.compile(model, fullgraph=True) on a model whose attention is
    flashattn.scaled_dot_product_attention (inductor): the forward and the backward AOTAutograd
    derives from it give eager's loss and gradients."""
    torch.manual_seed(seed)
    model = TinyLM(flashattn.scaled_dot_product_attention, dim=32, layers=1).double()
    tokens = torch.randint(0, 61, (2, 17))
    eager = loss_fn(model, tokens)
    eager.backward()
    want = [p.grad.clone() for p in model.parameters()]
    model.zero_grad(set_to_none=True)
    loss = loss_fn(compiled(model), tokens)
    loss.backward()
    assert abs(loss.item() - eager.item()) <= 1e-12 * abs(eager.item())
    for p, w in zip(model.parameters(), want):
        assert torch.allclose(p.grad, w, rtol=1e-10, atol=1e-12)


def test_opcheck(seed):
    """torch.library.opcheck: the schema, the autograd registration, the fake implementations'
    shapes and strides against the real ones, and AOT dispatch with dynamic shapes, for the dense,
    packed, varlen and dropout forms of fwd and for bwd."""
    from flashattn import _ops

    q, k, v = randn(2, 9, 4, 8, grad=True), randn(2, 11, 2, 8, grad=True), randn(2, 11, 2, 8, grad=True)
    dense = (q, k, v, None, None, None, None, None, None, None, None, 0.3, 2, 4, -1, 0.0, 0, False)
    qkv = randn(2, 9, 3, 2, 8, grad=True)
    packed = (qkv, None, None, None, None, None, None, None, None, None, None, 0.3, 1, -1, -1, 1.5, 0, False)
    cu = torch.tensor([0, 4, 9], dtype=torch.int32)
    t = randn(9, 2, 8, grad=True)
    varlen = (t, t.detach().clone().requires_grad_(), t.detach().clone().requires_grad_(), None, None, None, cu, cu,
              None, None, None, 0.3, 2, -1, -1, 0.0, 0, False)
    sdpa = (q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), None, None, randn(4, dtype=torch.float32),
            None, None, None, None, None, 0.3, 1, -1, -1, 0.0, 0, True)
    rng = torch.tensor([3, -5], dtype=torch.int64)  # dropout's (seed, offset), as the functions draw them
    dropout = dense + (0.2, rng)
    for args in (dense, packed, varlen, sdpa, dropout):
        result = torch.library.opcheck(_ops.fwd, args)
        assert all(r == "SUCCESS" for r in result.values()), result
    for args, extra in ((dense, ()), (dropout, (0.2, rng))):
        out, lse = _ops.fwd(*args)
        bargs = (torch.randn_like(out), q.detach(), k.detach(), v.detach(), out.detach(), lse) + (None,) * 7 + \
            (0.3, 2, 4, -1, 0.0, 0, False, False) + extra
        result = torch.library.opcheck(_ops.bwd, bargs)
        assert all(r == "SUCCESS" for r in result.values()), result

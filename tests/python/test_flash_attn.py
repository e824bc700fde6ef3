# SPDX-License-Identifier: BSD-3-Clause
"""FlashAttention's dense functions (flash_attn_func, _qkvpacked_func, _kvpacked_func) against the
float64 reference of tests/python/reference.py: outputs, lse and gradients, every dtype, masks,
windows, softcap, ALiBi and grouped heads."""

import math

import pytest
import torch

import flashattn
from conftest import assert_close_to_ref, randn
from reference import batch_ref

DTYPES = [torch.float64, torch.float32, torch.bfloat16, torch.float16]


def check(q, k, v, dtype, **kw):
    """flash_attn_func (with lse) and its gradients against the reference on the same (rounded)
    inputs, and, below float64, against the naive computation in the inputs' precision."""
    out, lse, probs = flashattn.flash_attn_func(q, k, v, return_attn_probs=True, **kw)
    assert probs.numel() == 0  # FlashAttention returns no probabilities without dropout
    fa_kw = dict(scale=kw.get("softmax_scale"), causal=kw.get("causal", False),
                 window=kw.get("window_size", (-1, -1)), softcap=kw.get("softcap", 0.0),
                 alibi=kw.get("alibi_slopes"))
    qd, kd, vd = (x.detach().double().requires_grad_() for x in (q, k, v))
    ref, ref_lse = batch_ref(qd, kd, vd, **fa_kw)
    lowp = None
    if dtype != torch.float64:
        lowp, _ = batch_ref(q.detach(), k.detach(), v.detach(), work=dtype, **fa_kw)
    assert out.dtype == dtype and out.shape == ref.shape
    assert_close_to_ref(out, ref, lowp)
    finite = torch.isfinite(ref_lse)
    assert torch.equal(torch.isfinite(lse), finite) and bool((lse[~finite] == float("inf")).all())
    assert (lse[finite].double() - ref_lse[finite]).abs().max().item() <= (1e-12 if dtype == torch.float64 else 1e-4) * \
        max(1.0, ref_lse[finite].abs().max().item())
    if not q.requires_grad:
        return
    g = torch.randn(out.shape, dtype=torch.float64)
    grads = torch.autograd.grad(out, (q, k, v), g.to(dtype))
    refs = torch.autograd.grad(ref, (qd, kd, vd), g)
    lowg = [None] * 3
    if dtype != torch.float64:
        ql, kl, vl = (x.detach().clone().requires_grad_() for x in (q, k, v))
        lo, _ = batch_ref(ql, kl, vl, work=dtype, **fa_kw)
        lowg = torch.autograd.grad(lo, (ql, kl, vl), g.to(dtype))
    for name, got, ref_g, low in zip("qkv", grads, refs, lowg):
        assert got.dtype == dtype
        assert_close_to_ref(got, ref_g, low, what=f"d{name}")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
def test_func_matches_reference_in_every_dtype(seed, dtype, causal):
    q = randn(2, 37, 4, 32, dtype=dtype, grad=True)
    k = randn(2, 45, 2, 32, dtype=dtype, grad=True)
    v = randn(2, 45, 2, 24, dtype=dtype, grad=True)
    check(q, k, v, dtype, causal=causal)


@pytest.mark.parametrize("sq,sk", [(1, 64), (64, 1), (13, 77), (77, 13), (64, 64), (40, 20)])
@pytest.mark.parametrize("causal", [False, True])
def test_causal_is_bottom_right_and_masked_rows_are_zero(seed, sq, sk, causal):
    q = randn(1, sq, 3, 16, grad=True)
    k = randn(1, sk, 3, 16, grad=True)
    v = randn(1, sk, 3, 16, grad=True)
    check(q, k, v, torch.float64, causal=causal)


@pytest.mark.parametrize("window", [(5, 3), (0, 0), (7, -1), (-1, 2), (100, 100), (0, -1)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("sq,sk", [(30, 50), (50, 20), (9, 9)])
def test_windows_follow_flash_attention(seed, window, causal, sq, sk):
    q = randn(2, sq, 2, 16, grad=True)
    k = randn(2, sk, 1, 16, grad=True)
    v = randn(2, sk, 1, 16, grad=True)
    check(q, k, v, torch.float64, causal=causal, window_size=window)


def test_window_sizes_may_be_tensors(seed):
    """FlashAttention's tests draw window sizes with torch.randint: 0-d tensors work as ints."""
    q, k, v = (randn(1, 20, 2, 8) for _ in range(3))
    a = flashattn.flash_attn_func(q, k, v, window_size=torch.tensor([3, 2]))
    b = flashattn.flash_attn_func(q, k, v, window_size=(3, 2))
    assert torch.equal(a, b)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_softcap_alibi_and_scale(seed, dtype):
    q = randn(2, 33, 4, 16, dtype=dtype, grad=True)
    k = randn(2, 40, 2, 16, dtype=dtype, grad=True)
    v = randn(2, 40, 2, 16, dtype=dtype, grad=True)
    slopes = torch.rand(4, dtype=torch.float32) * 0.3
    check(q, k, v, dtype, causal=True, softcap=3.0, alibi_slopes=slopes, softmax_scale=0.4)


@pytest.mark.parametrize("causal", [False, True])
def test_alibi_per_batch_and_head(seed, causal):
    q = randn(3, 21, 4, 16, grad=True)
    k = randn(3, 30, 4, 16, grad=True)
    v = randn(3, 30, 4, 16, grad=True)
    slopes = torch.rand(3, 4, dtype=torch.float32)
    check(q, k, v, torch.float64, causal=causal, alibi_slopes=slopes, window_size=(10, 4))


@pytest.mark.parametrize("hq,hk", [(4, 4), (6, 2), (6, 1)])
def test_grouped_query_heads(seed, hq, hk):
    q = randn(2, 19, hq, 8, grad=True)
    k = randn(2, 23, hk, 8, grad=True)
    v = randn(2, 23, hk, 8, grad=True)
    check(q, k, v, torch.float64, causal=True)


def test_head_dims_beyond_flash_attention(seed):
    """Any head dim from 1 to FA_MAX_HEAD_DIM (576, DeepSeek's MLA), and a value head dim other than
    the key's."""
    limit = flashattn._C.MAX_HEAD_DIM
    for d, dv in [(1, 1), (3, 5), (59, 59), (300, 7), (limit, 512)]:
        q, k = randn(1, 9, 2, d, grad=True), randn(1, 11, 2, d, grad=True)
        v = randn(1, 11, 2, dv, grad=True)
        check(q, k, v, torch.float64, causal=True)


@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_qkvpacked_equals_func_and_its_gradient_is_packed(seed, dtype):
    qkv = randn(2, 31, 3, 4, 16, dtype=dtype, grad=True)
    out = flashattn.flash_attn_qkvpacked_func(qkv, causal=True, window_size=(8, 0))
    q, k, v = (qkv.detach()[:, :, i].clone().requires_grad_() for i in range(3))
    ref = flashattn.flash_attn_func(q, k, v, causal=True, window_size=(8, 0))
    assert torch.equal(out, ref)
    g = torch.randn_like(out)
    (dqkv,) = torch.autograd.grad(out, (qkv,), g)
    dq, dk, dv = torch.autograd.grad(ref, (q, k, v), g)
    assert dqkv.shape == qkv.shape
    assert torch.equal(dqkv, torch.stack([dq, dk, dv], dim=2))


def test_kvpacked_equals_func(seed):
    q = randn(2, 17, 6, 16, grad=True)
    kv = randn(2, 25, 2, 3, 16, grad=True)
    out = flashattn.flash_attn_kvpacked_func(q, kv, causal=True)
    q2 = q.detach().clone().requires_grad_()
    k, v = (kv.detach()[:, :, i].clone().requires_grad_() for i in range(2))
    ref = flashattn.flash_attn_func(q2, k, v, causal=True)
    assert torch.equal(out, ref)
    g = torch.randn_like(out)
    dq, dkv = torch.autograd.grad(out, (q, kv), g)
    rq, rk, rv = torch.autograd.grad(ref, (q2, k, v), g)
    assert torch.equal(dq, rq) and torch.equal(dkv, torch.stack([rk, rv], dim=2))


def test_strided_views_are_taken_without_copies(seed):
    """q, k, v sliced out of one fused projection (batch, seqlen, heads_total, dim) are passed as
    views: the binding never copies a tensor whose last dimension is contiguous."""
    from flashattn import _ops

    fused = randn(2, 29, 8 + 2 + 2, 16)
    q, k, v = fused[:, :, :8], fused[:, :, 8:10], fused[:, :, 10:]
    assert not q.is_contiguous()
    for t in (q, k, v, fused.transpose(1, 2)):
        assert _ops._contig_last(t) is t
    out = flashattn.flash_attn_func(q, k, v, causal=True)
    ref = flashattn.flash_attn_func(q.contiguous(), k.contiguous(), v.contiguous(), causal=True)
    assert torch.equal(out, ref)
    # a transposed last dimension is the one case that is copied (as FlashAttention does)
    qt = q.contiguous().transpose(-1, -2).contiguous().transpose(-1, -2)
    assert torch.equal(flashattn.flash_attn_func(qt, k, v, causal=True), ref)


def test_deterministic_softmax_scale_and_softcap_defaults(seed):
    q, k, v = (randn(1, 12, 2, 25) for _ in range(3))
    a = flashattn.flash_attn_func(q, k, v, deterministic=False)
    b = flashattn.flash_attn_func(q, k, v, deterministic=True, softmax_scale=1 / math.sqrt(25))
    c = flashattn.flash_attn_func(q, k, v, softcap=-1.0)  # FlashAttention: <= 0 deactivates it
    assert torch.equal(a, b) and torch.equal(a, c)


def test_empty_batch_and_lengths(seed):
    for shape_q, shape_k in [((0, 5, 2, 8), (0, 5, 2, 8)), ((1, 0, 2, 8), (1, 5, 2, 8)), ((1, 4, 2, 8), (1, 0, 2, 8))]:
        q, k, v = randn(*shape_q), randn(*shape_k), randn(*shape_k)
        out, lse, _ = flashattn.flash_attn_func(q, k, v, return_attn_probs=True)
        assert out.shape == q.shape and lse.shape == (q.shape[0], 2, q.shape[1])
        if shape_k[1] == 0 and q.numel():
            assert torch.equal(out, torch.zeros_like(out)) and bool((lse == float("inf")).all())

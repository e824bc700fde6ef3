# SPDX-License-Identifier: BSD-3-Clause
"""flashattn.scaled_dot_product_attention against torch.nn.functional.scaled_dot_product_attention
(float64, PyTorch's math path) and, for the extras, against the float64 reference."""

import pytest
import torch
import torch.nn.functional as F

import flashattn
from conftest import assert_close_to_ref, randn
from reference import attention_ref


def torch_sdpa(*args, **kw):
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.MATH):
        return F.scaled_dot_product_attention(*args, **kw)


def grads(out, inputs, g):
    return torch.autograd.grad(out, inputs, g)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("lq,lk", [(33, 33), (17, 40), (40, 17)])
def test_sdpa_matches_torch(seed, causal, lq, lk):
    q, k, v = randn(2, 4, lq, 16, grad=True), randn(2, 4, lk, 16, grad=True), randn(2, 4, lk, 24, grad=True)
    out = flashattn.scaled_dot_product_attention(q, k, v, is_causal=causal)
    qq, kk, vv = (x.detach().clone().requires_grad_() for x in (q, k, v))
    ref = torch_sdpa(qq, kk, vv, is_causal=causal)
    # PyTorch's math path gives NaN to rows that see no key (top-left causal never masks a whole
    # row), flashattn zeros
    assert out.shape == ref.shape
    assert_close_to_ref(out, ref)
    g = torch.randn_like(out)
    for a, b in zip(grads(out, (q, k, v), g), grads(ref, (qq, kk, vv), g)):
        assert_close_to_ref(a, b)


def test_sdpa_output_is_stored_seq_major(seed):
    """(B, H, S, Dv) stored as (B, S, H, Dv): the usual transpose(1, 2).reshape is free."""
    q = randn(2, 3, 5, 8)
    out = flashattn.scaled_dot_product_attention(q, q, q)
    assert out.transpose(1, 2).is_contiguous()


@pytest.mark.parametrize("kind", ["bool", "float", "bool-2d", "keypad"])
def test_sdpa_masks(seed, kind):
    b, h, lq, lk = 2, 3, 11, 19
    q, k, v = randn(b, h, lq, 8, grad=True), randn(b, h, lk, 8, grad=True), randn(b, h, lk, 8, grad=True)
    if kind == "bool":
        mask = torch.rand(b, h, lq, lk) > 0.3
        mask[..., 0] = True  # every row sees a key (PyTorch gives NaN otherwise)
    elif kind == "float":
        mask = randn(b, 1, lq, lk)
    elif kind == "bool-2d":
        mask = torch.rand(lq, lk) > 0.5
        mask[:, -1] = True
    else:
        mask = torch.ones(b, 1, 1, lk, dtype=torch.bool)
        mask[1, ..., 12:] = False
    out = flashattn.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    qq, kk, vv = (x.detach().clone().requires_grad_() for x in (q, k, v))
    ref = torch_sdpa(qq, kk, vv, attn_mask=mask)
    assert_close_to_ref(out, ref)
    g = torch.randn_like(out)
    for a, r in zip(grads(out, (q, k, v), g), grads(ref, (qq, kk, vv), g)):
        assert_close_to_ref(a, r)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_sdpa_reduced_precision(seed, dtype):
    q, k, v = randn(2, 4, 30, 32, dtype=dtype), randn(2, 4, 30, 32, dtype=dtype), randn(2, 4, 30, 32, dtype=dtype)
    out = flashattn.scaled_dot_product_attention(q, k, v, is_causal=True)
    ref = torch_sdpa(q.double(), k.double(), v.double(), is_causal=True)
    low = torch_sdpa(q, k, v, is_causal=True)
    assert out.dtype == dtype
    assert_close_to_ref(out, ref, low)


def test_sdpa_gqa(seed):
    q, k, v = randn(2, 8, 13, 16, grad=True), randn(2, 2, 13, 16, grad=True), randn(2, 2, 13, 16, grad=True)
    out = flashattn.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    qq, kk, vv = (x.detach().clone().requires_grad_() for x in (q, k, v))
    ref = torch_sdpa(qq, kk, vv, is_causal=True, enable_gqa=True)
    assert_close_to_ref(out, ref)
    g = torch.randn_like(out)
    for a, r in zip(grads(out, (q, k, v), g), grads(ref, (qq, kk, vv), g)):
        assert_close_to_ref(a, r)
    with pytest.raises(ValueError, match="enable_gqa"):
        flashattn.scaled_dot_product_attention(q, k, v)


def test_sdpa_three_dims_and_scale(seed):
    q, k, v = randn(3, 10, 8), randn(3, 12, 8), randn(3, 12, 8)
    out = flashattn.scaled_dot_product_attention(q, k, v, scale=0.3)
    assert_close_to_ref(out, torch_sdpa(q, k, v, scale=0.3))


@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_extras_window_softcap_alibi_sinks(seed, causal):
    """The library's extras, with distances counted from the top left, against the reference."""
    b, h, lq, lk = 2, 4, 21, 30
    q, k, v = randn(b, h, lq, 16, grad=True), randn(b, h, lk, 16, grad=True), randn(b, h, lk, 16, grad=True)
    slopes = torch.rand(h) * 0.5
    sinks = torch.randn(h, dtype=torch.float32, requires_grad=True)
    out = flashattn.scaled_dot_product_attention(q, k, v, is_causal=causal, window=(6, 2), softcap=5.0,
                                                 alibi=slopes, sinks=sinks)
    qq, kk, vv = (x.detach().clone().requires_grad_() for x in (q, k, v))
    ss = sinks.detach().double().requires_grad_()
    refs = [attention_ref(qq[i].transpose(0, 1), kk[i].transpose(0, 1), vv[i].transpose(0, 1), causal=causal,
                          window=(6, 2), softcap=5.0, alibi=slopes, sinks=ss, top_left=True, fa=False)[0]
            for i in range(b)]
    ref = torch.stack(refs).transpose(1, 2)
    assert_close_to_ref(out, ref)
    g = torch.randn_like(out)
    got = grads(out, (q, k, v, sinks), g)
    want = grads(ref, (qq, kk, vv, ss), g)
    for a, r in zip(got[:3], want[:3]):
        assert_close_to_ref(a, r)
    # dsinks is summed in the accumulation type and rounded to float once (the header's rule)
    assert got[3].dtype == torch.float32
    assert (got[3].double() - want[3]).abs().max().item() <= 1e-6 * max(1.0, want[3].abs().max().item())


def test_sdpa_refusals(seed):
    q = randn(1, 2, 4, 8)
    with pytest.raises(ValueError, match="is_causal"):
        flashattn.scaled_dot_product_attention(q, q, q, attn_mask=torch.ones(4, 4, dtype=torch.bool), is_causal=True)
    mask = randn(4, 4, grad=True)
    out = flashattn.scaled_dot_product_attention(q.requires_grad_(), q, q, attn_mask=mask)
    with pytest.raises(NotImplementedError, match="bias"):
        out.sum().backward()

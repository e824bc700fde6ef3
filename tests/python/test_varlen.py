# SPDX-License-Identifier: BSD-3-Clause
"""FlashAttention's varlen functions: packed sequences (cu_seqlens), masks and ALiBi per sequence,
packed gradients, a paged K/V pool (block_table), against the float64 reference per sequence."""

import pytest
import torch

import flashattn
from conftest import assert_close_to_ref, randn
from reference import varlen_ref


def offsets(lengths, dtype=torch.int32):
    return torch.tensor([0] + list(torch.tensor(lengths).cumsum(0).tolist()), dtype=dtype)


def rows_of(cu):
    """The rows some sequence owns (the others are left as they are, as in FlashAttention)."""
    return torch.arange(int(cu[-1]))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32, torch.bfloat16])
@pytest.mark.parametrize("causal", [False, True])
def test_varlen_matches_reference_per_sequence(seed, dtype, causal):
    lq, lk = [5, 1, 40, 17, 0], [9, 30, 33, 17, 4]
    cu_q, cu_k = offsets(lq), offsets(lk)
    q = randn(sum(lq), 4, 16, dtype=dtype, grad=True)
    k = randn(sum(lk), 2, 16, dtype=dtype, grad=True)
    v = randn(sum(lk), 2, 16, dtype=dtype, grad=True)
    slopes = torch.rand(4) * 0.2
    kw = dict(causal=causal, window_size=(12, 3), softcap=4.0)
    out, lse, _ = flashattn.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(lq), max(lk), alibi_slopes=slopes,
                                                   return_attn_probs=True, **kw)
    rk = dict(causal=causal, window=(12, 3), softcap=4.0, alibi=slopes)
    qd, kd, vd = (x.detach().double().requires_grad_() for x in (q, k, v))
    # FlashAttention normalises windows with max_seqlen_k: the reference masks per sequence, with
    # the same window (both sides here are below every max length).
    ref, ref_lse = varlen_ref(qd, kd, vd, cu_q, cu_k, **rk)
    low = None if dtype == torch.float64 else varlen_ref(q.detach(), k.detach(), v.detach(), cu_q, cu_k,
                                                         work=dtype, **rk)[0]
    assert out.shape == (sum(lq), 4, 16) and lse.shape == (4, sum(lq))
    assert_close_to_ref(out, ref, low)
    fin = torch.isfinite(ref_lse)
    assert bool((lse[~fin] == float("inf")).all())
    g = torch.randn(out.shape, dtype=torch.float64)
    got = torch.autograd.grad(out, (q, k, v), g.to(dtype))
    want = torch.autograd.grad(ref, (qd, kd, vd), g)
    for name, a, b in zip("qkv", got, want):
        low_g = None
        if dtype != torch.float64:
            ql, kl, vl = (x.detach().clone().requires_grad_() for x in (q, k, v))
            lo, _ = varlen_ref(ql, kl, vl, cu_q, cu_k, work=dtype, **rk)
            low_g = torch.autograd.grad(lo, (ql, kl, vl), g.to(dtype))["qkv".index(name)]
        assert_close_to_ref(a, b, low_g, what=f"d{name}")


def test_varlen_alibi_per_sequence_and_int64_offsets(seed):
    lq, lk = [3, 20, 11], [8, 20, 30]
    cu_q, cu_k = offsets(lq, torch.int64), offsets(lk, torch.int64)
    q, k, v = randn(sum(lq), 3, 8, grad=True), randn(sum(lk), 3, 8, grad=True), randn(sum(lk), 3, 8, grad=True)
    slopes = torch.rand(3, 3)
    out = flashattn.flash_attn_varlen_func(q, k, v, cu_q, cu_k, max(lq), max(lk), causal=True, alibi_slopes=slopes)
    qd, kd, vd = (x.detach().requires_grad_() for x in (q.clone(), k.clone(), v.clone()))
    ref, _ = varlen_ref(qd, kd, vd, cu_q, cu_k, causal=True, alibi=slopes)
    assert_close_to_ref(out, ref)
    g = torch.randn_like(out)
    for a, b in zip(torch.autograd.grad(out, (q, k, v), g), torch.autograd.grad(ref, (qd, kd, vd), g)):
        assert_close_to_ref(a, b)


def test_varlen_rows_outside_the_sequences_get_zero_gradients(seed):
    lq = [4, 6]
    cu = offsets(lq)
    q, k, v = (randn(sum(lq) + 3, 2, 8, grad=True) for _ in range(3))  # 3 rows no sequence owns
    out = flashattn.flash_attn_varlen_func(q, k, v, cu, cu, 6, 6, causal=True)
    dq, dk, dv = torch.autograd.grad(out[:10], (q, k, v), torch.randn(10, 2, 8, dtype=torch.float64))
    for d in (dq, dk, dv):
        assert torch.equal(d[10:], torch.zeros_like(d[10:]))


def test_varlen_qkvpacked_and_kvpacked_equal_the_unpacked_call(seed):
    lens = [7, 19, 1]
    cu = offsets(lens)
    qkv = randn(sum(lens), 3, 4, 16, grad=True)
    out = flashattn.flash_attn_varlen_qkvpacked_func(qkv, cu, max(lens), causal=True)
    q, k, v = (qkv.detach()[:, i].clone().requires_grad_() for i in range(3))
    ref = flashattn.flash_attn_varlen_func(q, k, v, cu, cu, max(lens), max(lens), causal=True)
    assert torch.equal(out, ref)
    g = torch.randn_like(out)
    (dqkv,) = torch.autograd.grad(out, (qkv,), g)
    assert torch.equal(dqkv, torch.stack(torch.autograd.grad(ref, (q, k, v), g), dim=1))

    kv = randn(sum(lens), 2, 2, 16, grad=True)
    q2 = randn(sum(lens), 4, 16, grad=True)
    out = flashattn.flash_attn_varlen_kvpacked_func(q2, kv, cu, cu, max(lens), max(lens))
    k2, v2 = (kv.detach()[:, i].clone().requires_grad_() for i in range(2))
    q3 = q2.detach().clone().requires_grad_()
    ref = flashattn.flash_attn_varlen_func(q3, k2, v2, cu, cu, max(lens), max(lens))
    assert torch.equal(out, ref)
    dq, dkv = torch.autograd.grad(out, (q2, kv), g)
    rq, rk, rv = torch.autograd.grad(ref, (q3, k2, v2), g)
    assert torch.equal(dq, rq) and torch.equal(dkv, torch.stack([rk, rv], dim=1))


def test_varlen_rows_equal_dense_calls_of_each_sequence_bitwise(seed):
    """Each sequence of a packed batch gives the bytes of flash_attn_func on it alone."""
    lq, lk = [30, 2, 64], [50, 9, 64]
    cu_q, cu_k = offsets(lq), offsets(lk)
    q, k, v = randn(sum(lq), 4, 32, dtype=torch.float32), randn(sum(lk), 2, 32, dtype=torch.float32), \
        randn(sum(lk), 2, 32, dtype=torch.float32)
    out = flashattn.flash_attn_varlen_func(q, k, v, cu_q, cu_k, 64, 64, causal=True)
    for b in range(3):
        qs, ks = slice(int(cu_q[b]), int(cu_q[b + 1])), slice(int(cu_k[b]), int(cu_k[b + 1]))
        one = flashattn.flash_attn_func(q[qs][None], k[ks][None], v[ks][None], causal=True)
        assert torch.equal(out[qs], one[0])


def test_varlen_paged_keys(seed):
    """block_table: k and v are page pools; sequence b's keys are cu_seqlens_k[b+1] - cu_seqlens_k[b]
    rows of its pages, in table order (FlashAttention's paged varlen convention)."""
    page, pages_per_seq = 16, 4
    lq, lk = [3, 10, 1], [40, 10, 64]
    npages = 3 * pages_per_seq + 2
    k_pool, v_pool = randn(npages, page, 2, 16), randn(npages, page, 2, 16)
    table = torch.randperm(npages)[: 3 * pages_per_seq].to(torch.int32).view(3, pages_per_seq)
    q = randn(sum(lq), 4, 16)
    cu_q, cu_k = offsets(lq), offsets(lk)
    out = flashattn.flash_attn_varlen_func(q, k_pool, v_pool, cu_q, cu_k, max(lq), page * pages_per_seq,
                                           causal=True, block_table=table)
    # the same keys gathered into packed rows
    k_rows = k_pool[table.long()].reshape(3, page * pages_per_seq, 2, 16)
    v_rows = v_pool[table.long()].reshape(3, page * pages_per_seq, 2, 16)
    k = torch.cat([k_rows[b, :lk[b]] for b in range(3)])
    v = torch.cat([v_rows[b, :lk[b]] for b in range(3)])
    ref, _ = varlen_ref(q, k, v, cu_q, cu_k, causal=True)
    assert_close_to_ref(out, ref)


def test_bert_padding_round_trip_into_varlen(seed):
    """flashattn.bert_padding (FlashAttention's helpers): padded batches to packed rows and back; the
    varlen call on the packed rows gives, row for row, flash_attn_func on each unpadded sequence."""
    from flashattn.bert_padding import pad_input, unpad_input

    b, s, h, d = 3, 12, 2, 8
    mask = torch.arange(s).unsqueeze(0) < torch.tensor([[12], [5], [9]])
    x = randn(b, s, h, d, grad=True)
    rows, idx, cu, maxlen, used = unpad_input(x, mask)
    assert rows.shape == (int(mask.sum()), h, d) and cu.tolist() == [0, 12, 17, 26] and maxlen == 12
    assert used.tolist() == [12, 5, 9]
    back = pad_input(rows, idx, b, s)
    assert torch.equal(back, x.detach() * mask[..., None, None])
    out = pad_input(flashattn.flash_attn_varlen_func(rows, rows, rows, cu, cu, maxlen, maxlen, causal=True), idx, b, s)
    for i, n in enumerate([12, 5, 9]):
        one = flashattn.flash_attn_func(x[i:i + 1, :n], x[i:i + 1, :n], x[i:i + 1, :n], causal=True)
        assert torch.equal(out[i, :n], one[0])
    (g,) = torch.autograd.grad(out.sum(), (x,))
    assert torch.equal(g[1, 5:], torch.zeros_like(g[1, 5:]))

# SPDX-License-Identifier: BSD-3-Clause
"""flash_attn_with_kvcache: keys in use (cache_seqlens), k/v appended into the cache in place,
rotary embeddings, cache_batch_idx, cache_leftpad, paged caches, ALiBi and windows, against the
float64 reference written from FlashAttention's conventions (its test_flash_attn_kvcache)."""

import math

import pytest
import torch

import flashattn
from conftest import assert_close_to_ref, randn
from reference import attention_ref, rotary_ref


def reference(q, k_cache, v_cache, k, v, cos, sin, cache_seqlens, batch_idx, leftpad, causal, window, alibi,
              interleaved, work=torch.float64):
    """The updated caches and the output, sequence by sequence, from the documented semantics."""
    batch, sq = q.shape[0], q.shape[1]
    k_ref, v_ref = k_cache.clone(), v_cache.clone()
    rows = batch_idx.tolist() if batch_idx is not None else list(range(batch))
    lens = cache_seqlens.tolist()
    qr = q.double()
    if k is not None:
        sn = k.shape[1]
        pos = torch.tensor(lens).unsqueeze(1) + torch.arange(sn)
        kr = rotary_ref(k, cos, sin, pos, interleaved) if cos is not None else k.double()
        for b in range(batch):
            k_ref[rows[b], lens[b]:lens[b] + sn] = kr[b].to(k_cache.dtype)
            v_ref[rows[b], lens[b]:lens[b] + sn] = v[b]
        if cos is not None:
            windowed = causal or window[0] >= 0 or window[1] >= 0
            qpos = torch.tensor(lens).unsqueeze(1) + (torch.arange(sq) if windowed else torch.zeros(sq, dtype=torch.long))
            qr = rotary_ref(q, cos, sin, qpos, interleaved).to(q.dtype).double()
        lens = [n + sn for n in lens]
    outs = []
    for b in range(batch):
        lo = leftpad[b].item() if leftpad is not None else 0
        kb, vb = k_ref[rows[b], lo:lens[b]], v_ref[rows[b], lo:lens[b]]
        a = alibi[b] if alibi is not None and alibi.dim() == 2 else alibi
        o, _ = attention_ref(qr[b], kb, vb, causal=causal, window=window, alibi=a, work=work)
        outs.append(o)
    return torch.stack(outs), k_ref, v_ref


# rotary embeddings apply only with new keys (FlashAttention's rule), so they come with new_kv
@pytest.mark.parametrize("new_kv,rotary", [(False, None), (True, None), (True, "interleaved"), (True, "halves")])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("sq", [1, 4])
def test_kvcache_matches_reference(seed, new_kv, causal, rotary, sq):
    batch, cache_len, hq, hk, d = 3, 64, 6, 2, 32
    q = randn(batch, sq, hq, d)
    k_cache, v_cache = randn(batch, cache_len, hk, d), randn(batch, cache_len, hk, d)
    k = randn(batch, sq, hk, d) if new_kv else None
    v = randn(batch, sq, hk, d) if new_kv else None
    cache_seqlens = torch.randint(1, cache_len - sq, (batch,), dtype=torch.int32)
    cos = sin = None
    if rotary:
        angle = torch.rand(cache_len, 8, dtype=torch.float64) * 2 * math.pi
        cos, sin = torch.cos(angle), torch.sin(angle)
    ref, k_ref, v_ref = reference(q, k_cache, v_cache, k, v, cos, sin, cache_seqlens, None, None, causal, (-1, -1),
                                  None, rotary == "interleaved")
    out, lse = flashattn.flash_attn_with_kvcache(q, k_cache, v_cache, k, v, rotary_cos=cos, rotary_sin=sin,
                                                 cache_seqlens=cache_seqlens, causal=causal,
                                                 rotary_interleaved=rotary == "interleaved", num_splits=3,
                                                 return_softmax_lse=True)
    assert_close_to_ref(out, ref)
    assert lse.shape == (batch, hq, sq)
    if new_kv:  # appended in place, rotated keys included
        assert_close_to_ref(k_cache, k_ref, what="k_cache")
        assert torch.equal(v_cache, v_ref)


def test_kvcache_appends_in_place_in_half_precision(seed):
    batch, cache_len, h, d = 2, 40, 2, 16
    q = randn(batch, 3, h, d, dtype=torch.bfloat16)
    k_cache, v_cache = randn(batch, cache_len, h, d, dtype=torch.bfloat16), randn(batch, cache_len, h, d, dtype=torch.bfloat16)
    k, v = randn(batch, 3, h, d, dtype=torch.bfloat16), randn(batch, 3, h, d, dtype=torch.bfloat16)
    kc, vc = k_cache.data_ptr(), v_cache.data_ptr()
    lens = torch.tensor([5, 30], dtype=torch.int32)
    out = flashattn.flash_attn_with_kvcache(q, k_cache, v_cache, k, v, cache_seqlens=lens, causal=True)
    assert k_cache.data_ptr() == kc and v_cache.data_ptr() == vc
    for b in range(batch):
        n = int(lens[b])
        assert torch.equal(k_cache[b, n:n + 3], k[b]) and torch.equal(v_cache[b, n:n + 3], v[b])
    ref, _, _ = reference(q, k_cache, v_cache, None, None, None, None, lens + 3, None, None, True, (-1, -1), None, False)
    low, _, _ = reference(q, k_cache, v_cache, None, None, None, None, lens + 3, None, None, True, (-1, -1), None, False,
                          work=torch.bfloat16)
    assert out.dtype == torch.bfloat16
    assert_close_to_ref(out, ref, low)


def test_kvcache_batch_idx_leftpad_alibi_window(seed):
    batch, cache_rows, cache_len, hq, hk, d = 3, 5, 50, 4, 2, 16
    q = randn(batch, 2, hq, d)
    k_cache, v_cache = randn(cache_rows, cache_len, hk, d), randn(cache_rows, cache_len, hk, d)
    k, v = randn(batch, 2, hk, d), randn(batch, 2, hk, d)
    idx = torch.tensor([4, 0, 2], dtype=torch.int32)
    lens = torch.tensor([10, 30, 3], dtype=torch.int32)
    slopes = torch.rand(batch, hq)
    for leftpad in (None, torch.tensor([2, 11, 0], dtype=torch.int32)):
        kc, vc = k_cache.clone(), v_cache.clone()
        ref, k_ref, v_ref = reference(q, kc, vc, k, v, None, None, lens, idx, leftpad, True, (6, 0), slopes, False)
        out = flashattn.flash_attn_with_kvcache(q, kc, vc, k, v, cache_seqlens=lens, cache_batch_idx=idx,
                                                cache_leftpad=leftpad, causal=True, window_size=(6, -1),
                                                alibi_slopes=slopes)
        assert_close_to_ref(out, ref)
        assert torch.equal(kc, k_ref) and torch.equal(vc, v_ref)


def test_kvcache_paged_equals_contiguous(seed):
    """A paged cache (block_table, any page size) gives the output of the same keys in one
    contiguous cache, and appends into the right pages."""
    batch, page, pps, h, d = 2, 8, 6, 2, 16
    npages = batch * pps + 3
    k_pool, v_pool = randn(npages, page, h, d), randn(npages, page, h, d)
    table = torch.randperm(npages)[: batch * pps].to(torch.int32).view(batch, pps)
    q, k, v = randn(batch, 1, h, d), randn(batch, 1, h, d), randn(batch, 1, h, d)
    lens = torch.tensor([13, 40], dtype=torch.int32)
    k_dense = k_pool[table.long()].reshape(batch, page * pps, h, d).clone()
    v_dense = v_pool[table.long()].reshape(batch, page * pps, h, d).clone()
    out = flashattn.flash_attn_with_kvcache(q, k_pool, v_pool, k, v, cache_seqlens=lens, block_table=table)
    dense = flashattn.flash_attn_with_kvcache(q, k_dense, v_dense, k, v, cache_seqlens=lens)
    assert_close_to_ref(out, dense.double())
    assert torch.equal(k_pool[table.long()].reshape(batch, page * pps, h, d), k_dense)
    assert torch.equal(v_pool[table.long()].reshape(batch, page * pps, h, d), v_dense)


def test_kvcache_int_seqlens_and_no_seqlens(seed):
    q, kc, vc = randn(2, 1, 2, 8), randn(2, 20, 2, 8), randn(2, 20, 2, 8)
    a = flashattn.flash_attn_with_kvcache(q, kc, vc, cache_seqlens=12)
    b = flashattn.flash_attn_with_kvcache(q, kc[:, :12], vc[:, :12])
    assert torch.equal(a, b)


def test_kvcache_refusals(seed):
    q, kc, vc = randn(2, 1, 2, 8), randn(2, 20, 2, 8), randn(2, 20, 2, 8)
    table = torch.zeros(2, 1, dtype=torch.int32)
    with pytest.raises(ValueError, match="cache_batch_idx"):
        flashattn.flash_attn_with_kvcache(q, kc, vc, block_table=table, cache_batch_idx=table[:, 0])
    with pytest.raises(ValueError, match="cache_seqlens"):
        flashattn.flash_attn_with_kvcache(q, kc, vc, randn(2, 1, 2, 8), randn(2, 1, 2, 8))
    with pytest.raises(ValueError, match="contiguous last"):
        flashattn.flash_attn_with_kvcache(q, kc.transpose(-1, -2), vc, cache_seqlens=3)


@pytest.mark.parametrize("interleaved", [False, True])
def test_apply_rotary_emb_as_flash_attention(seed, interleaved):
    """flashattn.layers.rotary.apply_rotary_emb (FlashAttention's signature) against the complex
    rotation of the reference: int and per-sequence offsets, packed sequences, in place, a rotary
    dim below the head dim, positions past the table left as they are."""
    from flashattn.layers.rotary import apply_rotary_emb

    b, s, h, d, half = 2, 7, 3, 20, 6
    angle = torch.rand(12, half, dtype=torch.float64) * 2 * math.pi
    cos, sin = torch.cos(angle), torch.sin(angle)
    x = randn(b, s, h, d)
    for offsets in (0, 3, torch.tensor([1, 4])):
        got = apply_rotary_emb(x, cos, sin, interleaved=interleaved, seqlen_offsets=offsets)
        pos = torch.arange(s).unsqueeze(0) + (offsets.unsqueeze(1) if isinstance(offsets, torch.Tensor) else offsets)
        inside = pos < 12
        want = rotary_ref(x, cos, sin, pos.clamp(max=11), interleaved)
        want = torch.where(inside[..., None, None], want, x)
        assert_close_to_ref(got, want)
    cu = torch.tensor([0, 3, 7], dtype=torch.int32)
    packed = x[0]  # 7 tokens: sequences of 3 and 4
    got = apply_rotary_emb(packed, cos, sin, interleaved=interleaved, cu_seqlens=cu, max_seqlen=4)
    pos = torch.tensor([0, 1, 2, 0, 1, 2, 3]).unsqueeze(0)
    assert_close_to_ref(got, rotary_ref(packed.unsqueeze(0), cos, sin, pos, interleaved)[0])
    y = x.clone()
    assert apply_rotary_emb(y, cos, sin, interleaved=interleaved, inplace=True) is y
    assert torch.equal(y, apply_rotary_emb(x, cos, sin, interleaved=interleaved))

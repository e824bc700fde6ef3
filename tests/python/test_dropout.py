# SPDX-License-Identifier: BSD-3-Clause
"""Attention dropout from Python: every function that takes dropout_p against the float64
reference given flashattn.dropout_mask's mask (output, undropped lse, gradients); seed and offset
drawn from torch's default generator, so torch.manual_seed reproduces a call and
torch.utils.checkpoint's recomputation drops the same; the backward on the forward's mask whatever
the generator did since; S_dmask's encoding; the mask's keep rate."""

import math

import pytest
import torch
from torch.utils.checkpoint import checkpoint

import flashattn
from conftest import assert_close_to_ref, randn
from reference import attention_ref, batch_ref, varlen_ref

P = 0.3


def drawn(fn):
    """fn()'s result and the (seed, offset) it drew: the generator's state is saved before fn and
    the draw repeated from it (draw_dropout_seed_offset), which must leave the generator where fn
    left it (fn drew exactly that, once)."""
    state = torch.get_rng_state()
    result = fn()
    after = torch.get_rng_state()
    torch.set_rng_state(state)
    seed_offset = flashattn.draw_dropout_seed_offset()
    assert torch.equal(torch.get_rng_state(), after), "the call drew something else than one (seed, offset)"
    return result, seed_offset


def leaves(*xs):
    return tuple(x.detach().clone().requires_grad_() for x in xs)


def check_grads(out, ref, inputs, ref_inputs, names):
    g = torch.randn(out.shape, dtype=torch.float64)
    got = torch.autograd.grad(out, inputs, g)
    want = torch.autograd.grad(ref, ref_inputs, g)
    for name, a, b in zip(names, got, want):
        assert_close_to_ref(a, b, what=f"d{name}")


def check_s_dmask(s_dmask, keep, dtype):
    """FlashAttention's sign encoding with magnitude 1: +1 kept, -1 dropped, in q's dtype."""
    assert s_dmask.dtype == dtype and s_dmask.shape == keep.shape
    assert torch.equal(s_dmask >= 0, keep) and bool((s_dmask.abs() == 1).all())
    assert not keep.all() and keep.any()  # the case drops some probabilities and keeps some


# Dense functions: (batch, seqlen, heads, dim) q, k, v; GQA; masks, windows, softcap and ALiBi
# (per head, and per (batch, head), which runs one sequence at a time with offset + b * heads).
DENSE = {
    "func causal softcap gqa": dict(form="qkv", sq=37, sk=45, hk=2, kw=dict(causal=True, softcap=3.0)),
    "func window alibi": dict(form="qkv", sq=29, sk=41, hk=4, kw=dict(window_size=(8, 5)), alibi=(4,)),
    "func alibi per sequence": dict(form="qkv", sq=21, sk=30, hk=2, kw=dict(causal=True), alibi=(3, 4)),
    "qkvpacked": dict(form="qkvpacked", sq=33, sk=33, hk=4, kw=dict(causal=True)),
    "kvpacked": dict(form="kvpacked", sq=19, sk=40, hk=2, kw=dict()),
}


@pytest.mark.parametrize("case", DENSE)
def test_dense_functions_match_the_reference_with_the_mask(seed, case):
    c = DENSE[case]
    b = c["alibi"][0] if len(c.get("alibi", ())) == 2 else 2
    q, k, v = randn(b, c["sq"], 4, 16), randn(b, c["sk"], c["hk"], 16), randn(b, c["sk"], c["hk"], 16)
    kw = dict(c["kw"])
    if "alibi" in c:
        kw["alibi_slopes"] = torch.rand(c["alibi"]) * 0.3
    if c["form"] == "qkvpacked":
        inputs = leaves(torch.stack([q, k, v], 2))
        call = lambda: flashattn.flash_attn_qkvpacked_func(*inputs, dropout_p=P, return_attn_probs=True, **kw)
        views = lambda x: (x[:, :, 0], x[:, :, 1], x[:, :, 2])
    elif c["form"] == "kvpacked":
        inputs = leaves(q, torch.stack([k, v], 2))
        call = lambda: flashattn.flash_attn_kvpacked_func(*inputs, dropout_p=P, return_attn_probs=True, **kw)
        views = lambda x, y: (x, y[:, :, 0], y[:, :, 1])
    else:
        inputs = leaves(q, k, v)
        call = lambda: flashattn.flash_attn_func(*inputs, dropout_p=P, return_attn_probs=True, **kw)
        views = lambda *x: x
    (out, lse, s_dmask), (s, off) = drawn(call)
    keep = flashattn.dropout_mask(P, s, off, b, 4, c["sq"], c["sk"])
    check_s_dmask(s_dmask, keep, torch.float64)
    ref_inputs = leaves(*inputs)
    ref, ref_lse = batch_ref(*views(*ref_inputs), causal=kw.get("causal", False),
                             window=kw.get("window_size", (-1, -1)), softcap=kw.get("softcap", 0.0),
                             alibi=kw.get("alibi_slopes"), keep=keep, dropout_p=P)
    assert_close_to_ref(out, ref)
    assert_close_to_ref(lse, ref_lse, what="lse (undropped)")
    names = {1: ["qkv"], 2: ["q", "kv"], 3: "qkv"}[len(inputs)]
    check_grads(out, ref, inputs, ref_inputs, names)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_lower_precisions_match_the_reference_with_the_mask(seed, dtype):
    """Within three times the naive error (the same formula, mask included, in the inputs' dtype)."""
    q, k, v = leaves(randn(2, 37, 4, 32, dtype=dtype), randn(2, 45, 2, 32, dtype=dtype),
                     randn(2, 45, 2, 32, dtype=dtype))
    out, (s, off) = drawn(lambda: flashattn.flash_attn_func(q, k, v, dropout_p=P, causal=True))
    keep = flashattn.dropout_mask(P, s, off, 2, 4, 37, 45)
    rk = dict(causal=True, keep=keep, dropout_p=P)
    ref_inputs, low_inputs = leaves(*(x.double() for x in (q, k, v))), leaves(q, k, v)
    ref, low = batch_ref(*ref_inputs, **rk)[0], batch_ref(*low_inputs, work=dtype, **rk)[0]
    assert out.dtype == dtype
    assert_close_to_ref(out, ref, low)
    g = torch.randn(out.shape, dtype=torch.float64)
    got = torch.autograd.grad(out, (q, k, v), g.to(dtype))
    want = torch.autograd.grad(ref, ref_inputs, g)
    naive = torch.autograd.grad(low, low_inputs, g.to(dtype))
    for name, a, b, c in zip("qkv", got, want, naive):
        assert_close_to_ref(a, b, c, what=f"d{name}")


def offsets(lengths):
    return torch.tensor([0] + torch.tensor(lengths).cumsum(0).tolist(), dtype=torch.int32)


VARLEN = ["varlen", "varlen alibi per sequence", "varlen_qkvpacked", "varlen_kvpacked"]


@pytest.mark.parametrize("case", VARLEN)
def test_varlen_functions_drop_each_sequence_by_its_own_rows_and_keys(seed, case):
    """Sequence b's mask is dropout_mask(...)[b, :, :len_q, :len_k], as if it were alone."""
    lq, lk = [5, 1, 40, 17, 0], [9, 30, 33, 17, 4]
    if case == "varlen_qkvpacked":
        lk = lq
    cu_q, cu_k = offsets(lq), offsets(lk)
    hk = 4 if case == "varlen_qkvpacked" else 2
    q, k, v = randn(sum(lq), 4, 16), randn(sum(lk), hk, 16), randn(sum(lk), hk, 16)
    kw = dict(causal=True, alibi_slopes=torch.rand(len(lq), 4) * 0.3 if "alibi" in case else None)
    mq, mk = max(lq), max(lk)
    if case == "varlen_qkvpacked":
        inputs = leaves(torch.stack([q, k, v], 1))
        call = lambda: flashattn.flash_attn_varlen_qkvpacked_func(*inputs, cu_q, mq, dropout_p=P,
                                                                  return_attn_probs=True, **kw)
        views, names = lambda x: (x[:, 0], x[:, 1], x[:, 2]), ["qkv"]
    elif case == "varlen_kvpacked":
        inputs = leaves(q, torch.stack([k, v], 1))
        call = lambda: flashattn.flash_attn_varlen_kvpacked_func(*inputs, cu_q, cu_k, mq, mk, dropout_p=P,
                                                                 return_attn_probs=True, **kw)
        views, names = lambda x, y: (x, y[:, 0], y[:, 1]), ["q", "kv"]
    else:
        inputs = leaves(q, k, v)
        call = lambda: flashattn.flash_attn_varlen_func(*inputs, cu_q, cu_k, mq, mk, dropout_p=P,
                                                        return_attn_probs=True, **kw)
        views, names = lambda *x: x, "qkv"
    (out, lse, s_dmask), (s, off) = drawn(call)
    keep = flashattn.dropout_mask(P, s, off, len(lq), 4, mq, mk)
    check_s_dmask(s_dmask, keep, torch.float64)
    ref_inputs = leaves(*inputs)
    ref, ref_lse = varlen_ref(*views(*ref_inputs), cu_q, cu_k, causal=True, alibi=kw["alibi_slopes"], keep=keep,
                              dropout_p=P)
    assert_close_to_ref(out, ref)
    fin = torch.isfinite(ref_lse)
    assert_close_to_ref(lse[fin], ref_lse[fin], what="lse (undropped)")
    check_grads(out, ref, inputs, ref_inputs, names)


@pytest.mark.parametrize("mask", ["causal", "bias"])
def test_sdpa_matches_the_reference_with_the_mask(seed, mask):
    """PyTorch's layout (batch, heads, seqlen, dim) and enable_gqa: the mask is indexed by query head."""
    q, k, v = leaves(randn(2, 4, 33, 16), randn(2, 2, 40, 16), randn(2, 2, 40, 8))
    bias = randn(33, 40) if mask == "bias" else None
    (out, (s, off)) = drawn(lambda: flashattn.scaled_dot_product_attention(
        q, k, v, attn_mask=bias, dropout_p=P, is_causal=mask == "causal", enable_gqa=True))
    keep = flashattn.dropout_mask(P, s, off, 2, 4, 33, 40)
    assert not keep.all()
    rq, rk, rv = leaves(q, k, v)
    ref = torch.stack([attention_ref(rq[b].transpose(0, 1), rk[b].transpose(0, 1), rv[b].transpose(0, 1),
                                     causal=mask == "causal", bias=bias, top_left=True, keep=keep[b],
                                     dropout_p=P)[0].transpose(0, 1) for b in range(2)])
    assert_close_to_ref(out, ref)
    check_grads(out, ref, (q, k, v), (rq, rk, rv), "qkv")


FUNCS = {
    "flash_attn_func": lambda q, k, v, **kw: flashattn.flash_attn_func(q, k, v, causal=True, **kw),
    "sdpa": lambda q, k, v, **kw: flashattn.scaled_dot_product_attention(
        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True, **kw),
}


@pytest.mark.parametrize("fn", FUNCS)
def test_manual_seed_makes_a_run_reproducible(seed, fn):
    """The same seed gives the same bytes, forward and backward; another seed, or the next call
    without reseeding, another mask and another output."""
    q, k, v = leaves(randn(2, 24, 4, 16), randn(2, 24, 4, 16), randn(2, 24, 4, 16))
    g = randn(2, 24, 4, 16)
    if fn == "sdpa":
        g = g.transpose(1, 2)

    def run(s):
        torch.manual_seed(s)
        out = FUNCS[fn](q, k, v, dropout_p=P)
        return (out,) + torch.autograd.grad(out, (q, k, v), g)

    a, b, c = run(7), run(7), run(8)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not torch.equal(a[0], c[0]) and not torch.equal(a[1], c[1])
    torch.manual_seed(7)
    first, second = FUNCS[fn](q, k, v, dropout_p=P), FUNCS[fn](q, k, v, dropout_p=P)
    assert torch.equal(first, a[0]) and not torch.equal(first, second)
    masks = []
    for s in (7, 8):
        torch.manual_seed(s)
        masks.append(flashattn.dropout_mask(P, *flashattn.draw_dropout_seed_offset(), 2, 4, 24, 24))
    assert not torch.equal(masks[0], masks[1])


@pytest.mark.parametrize("fn", FUNCS)
def test_backward_uses_the_forward_mask(seed, fn):
    """Reseeding and drawing between the forward and the backward changes no gradient: they match
    the reference built on the forward's mask, and a backward run with the generator untouched."""
    q, k, v = leaves(randn(2, 24, 4, 16), randn(2, 30, 2, 16), randn(2, 30, 2, 16))
    g = randn(2, 24, 4, 16)
    kw = dict(enable_gqa=True) if fn == "sdpa" else {}
    if fn == "sdpa":
        g = g.transpose(1, 2)
    state = torch.get_rng_state()
    out, (s, off) = drawn(lambda: FUNCS[fn](q, k, v, dropout_p=P, **kw))
    torch.manual_seed(seed + 1)
    torch.rand(1000)
    got = torch.autograd.grad(out, (q, k, v), g)
    keep = flashattn.dropout_mask(P, s, off, 2, 4, 24, 30)
    rq, rk, rv = leaves(q, k, v)
    ref, _ = batch_ref(rq, rk, rv, causal=True, top_left=fn == "sdpa", keep=keep, dropout_p=P)
    if fn == "sdpa":
        ref = ref.transpose(1, 2)
    want = torch.autograd.grad(ref, (rq, rk, rv), g)
    for name, a, b in zip("qkv", got, want):
        assert_close_to_ref(a, b, what=f"d{name}")
    torch.set_rng_state(state)  # the forward again, its backward right after it
    out2 = FUNCS[fn](q, k, v, dropout_p=P, **kw)
    assert torch.equal(out2, out)
    assert all(torch.equal(a, b) for a, b in zip(got, torch.autograd.grad(out2, (q, k, v), g)))


def test_checkpoint_recomputes_the_same_mask(seed):
    """torch.utils.checkpoint restores the CPU generator before it recomputes the forward, so the
    recomputation draws the forward's seed and offset: the same bytes as without checkpointing."""
    q, k, v = leaves(randn(1, 20, 2, 16), randn(1, 20, 2, 16), randn(1, 20, 2, 16))
    f = lambda q, k, v: flashattn.flash_attn_func(q, k, v, dropout_p=P) * 2.0
    torch.manual_seed(seed)
    want = f(q, k, v)
    want_g = torch.autograd.grad(want.sum(), (q, k, v))
    torch.manual_seed(seed)
    got = checkpoint(f, q, k, v, use_reentrant=False)
    got_g = torch.autograd.grad(got.sum(), (q, k, v))
    assert torch.equal(got, want) and all(torch.equal(a, b) for a, b in zip(got_g, want_g))


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_keep_rate_is_within_4_sigma_of_1_minus_p(seed, p):
    """Over 2 x 8 x 640 x 1024 (10.5 million) entries."""
    keep = flashattn.dropout_mask(p, *flashattn.draw_dropout_seed_offset(), 2, 8, 640, 1024)
    n = keep.numel()
    rate = keep.sum(dtype=torch.float64).item() / n
    assert abs(rate - (1 - p)) <= 4 * math.sqrt(p * (1 - p) / n), f"keep rate {rate} for p = {p}"


def test_dropout_mask_is_a_pure_function_with_its_own_checks(seed):
    s, off = flashattn.draw_dropout_seed_offset()
    a = flashattn.dropout_mask(P, s, off, 2, 3, 7, 9)
    assert a.dtype == torch.bool and a.shape == (2, 3, 7, 9)
    assert torch.equal(a, flashattn.dropout_mask(P, s, off, 2, 3, 7, 9))
    # entry (b, h, i, j) does not depend on the extent asked for
    assert torch.equal(a[:1, :2, :5, :6], flashattn.dropout_mask(P, s, off, 1, 2, 5, 6))
    assert bool(flashattn.dropout_mask(0.0, s, off, 1, 2, 5, 6).all())
    assert flashattn.dropout_mask(P, s, off, 0, 2, 5, 6).shape == (0, 2, 5, 6)
    with pytest.raises(ValueError, match="rows = -1"):
        flashattn.dropout_mask(P, s, off, 1, 1, -1, 4)
    with pytest.raises(ValueError, match="dropout_seed"):
        flashattn.dropout_mask(P, -1, off, 1, 1, 2, 4)
    with pytest.raises(ValueError, match="dropout_offset"):
        flashattn.dropout_mask(P, s, 1 << 64, 1, 1, 2, 4)


def test_dropout_p_zero_draws_nothing_and_changes_nothing(seed):
    """dropout_p = 0 (the default): torch's generator is where it was after the forward and the
    backward of every function, and the bytes are those of a call without the argument."""
    q, k, v = leaves(randn(2, 12, 2, 8), randn(2, 12, 2, 8), randn(2, 12, 2, 8))
    cu = torch.tensor([0, 5, 12], dtype=torch.int32)
    qkv = leaves(torch.stack([q, k, v], 2))[0]
    kv = leaves(torch.stack([k, v], 2))[0]
    t = leaves(q[0])[0]
    calls = [
        lambda **kw: flashattn.flash_attn_func(q, k, v, **kw),
        lambda **kw: flashattn.flash_attn_qkvpacked_func(qkv, **kw),
        lambda **kw: flashattn.flash_attn_kvpacked_func(q, kv, **kw),
        lambda **kw: flashattn.flash_attn_varlen_func(t, t, t, cu, cu, 7, 7, **kw),
        lambda **kw: flashattn.flash_attn_varlen_qkvpacked_func(qkv[0], cu, 7, **kw),
        lambda **kw: flashattn.flash_attn_varlen_kvpacked_func(t, kv[0], cu, cu, 7, 7, **kw),
        lambda **kw: flashattn.scaled_dot_product_attention(q, k, v, **kw),
    ]
    for call in calls:
        state = torch.get_rng_state()
        out = call(dropout_p=0.0)
        out.sum().backward()
        assert torch.equal(torch.get_rng_state(), state)
        assert torch.equal(out, call())
        call(dropout_p=0.1)  # while a call with dropout draws
        assert not torch.equal(torch.get_rng_state(), state)

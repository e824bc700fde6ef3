# SPDX-License-Identifier: BSD-3-Clause
"""Float64 PyTorch references, written from FlashAttention's documented semantics (2.8) and
PyTorch's, independent of the package: plain softmax over an explicit score matrix.

Conventions (FlashAttention's interface docstrings and its kernel's argument handling):
- one sequence: q (sq, hq, d), k (sk, hk, d), v (sk, hk, dv); query head h reads kv head
  h // (hq // hk);
- scores: scale * q.k, then softcap * tanh(s / softcap), then - slope[h] * |i + d0 - j| (ALiBi),
  then a bias; d0 = sk - sq (bottom-right) or 0 (top-left);
- key j is visible to row i when j <= i + d0 (causal), j >= i + d0 - left (left >= 0),
  j <= i + d0 + right (right >= 0). FlashAttention first makes a side >= sk unbounded, sets the
  right side to 0 when causal, and bounds an unbounded right side at sk when the left one is
  bounded (``fa_window``);
- a row that sees no key: out = 0 and lse = +inf (FlashAttention) or -inf (``masked_lse``);
- sinks: one more logit per head in the denominator;
- dropout: with a keep mask (hq, sq, sk), out = (P * keep / (1 - dropout_p)) . v, P and lse undropped.
"""

import math

import torch


def fa_window(causal, window, sk):
    """FlashAttention's normalised (left, right) window for sk keys (mha_fwd's handling)."""
    left, right = int(window[0]), int(window[1])
    if left >= sk:
        left = -1
    if right >= sk:
        right = -1
    if causal:
        right = 0
    if left >= 0 and right < 0:
        right = sk
    return left, right


def visible(sq, sk, causal=False, window=(-1, -1), top_left=False, fa=True, device=None):
    """(sq, sk) bool: which keys each row sees."""
    d0 = 0 if top_left else sk - sq
    left, right = fa_window(causal, window, sk) if fa else (int(window[0]), int(window[1]))
    i = torch.arange(sq, device=device).unsqueeze(1)
    j = torch.arange(sk, device=device).unsqueeze(0)
    ok = torch.ones(sq, sk, dtype=torch.bool, device=device)
    if causal:
        ok &= j <= i + d0
    if left >= 0:
        ok &= j >= i + d0 - left
    if right >= 0:
        ok &= j <= i + d0 + right
    return ok


def attention_ref(q, k, v, scale=None, causal=False, window=(-1, -1), softcap=0.0, alibi=None, bias=None,
                  sinks=None, top_left=False, masked_lse=float("inf"), fa=True, work=torch.float64, keep=None,
                  dropout_p=0.0):
    """One sequence, computed in `work` (float64; the inputs' dtype for the naive yardstick):
    out (sq, hq, dv) and lse (hq, sq). Differentiable (torch autograd). alibi: (hq,) slopes; bias:
    broadcastable to (hq, sq, sk); sinks: (hq,); keep: (hq, sq, sk) bool, dropout's keep mask."""
    q, k, v = q.to(work), k.to(work), v.to(work)
    sq, hq, d = q.shape
    sk, hk, _ = k.shape
    if scale is None:
        scale = 1.0 / math.sqrt(d)
    g = hq // hk
    k = k.repeat_interleave(g, dim=1)
    v = v.repeat_interleave(g, dim=1)
    s = torch.einsum("ihd,jhd->hij", q, k) * scale
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    d0 = 0 if top_left else sk - sq
    if alibi is not None:
        i = torch.arange(sq, dtype=torch.float64).unsqueeze(1)
        j = torch.arange(sk, dtype=torch.float64).unsqueeze(0)
        s = s - (alibi.double().view(hq, 1, 1) * (i + d0 - j).abs()).to(work)
    if bias is not None:
        s = s + bias.to(work)
    ok = visible(sq, sk, causal, window, top_left, fa).unsqueeze(0)
    s = s.masked_fill(~ok, float("-inf"))
    if sinks is not None:
        sink = sinks.to(work).view(hq, 1, 1).expand(hq, sq, 1)
        full = torch.cat([s, sink], dim=-1)
    else:
        full = s
    lse = torch.logsumexp(full, dim=-1)  # (hq, sq)
    seen = torch.isfinite(s).any(dim=-1)  # rows that see a key with a finite score
    p = torch.exp(s - lse.unsqueeze(-1).masked_fill(~seen.unsqueeze(-1), 0.0))
    p = p.masked_fill(~seen.unsqueeze(-1), 0.0)
    if keep is not None:
        p = p * keep.to(work) / (1.0 - dropout_p)
    out = torch.einsum("hij,jhd->ihd", p, v)
    if sinks is None:
        lse = lse.masked_fill(~seen, masked_lse)
    return out, lse


def batch_ref(q, k, v, **kw):
    """attention_ref over a dense batch in FlashAttention's layout: q (b, sq, hq, d) -> out (b, sq, hq,
    dv), lse (b, hq, sq). alibi may be (hq,) or (b, hq); keep is (b, hq, sq, sk)."""
    alibi = kw.pop("alibi", None)
    keep = kw.pop("keep", None)
    outs, lses = [], []
    for b in range(q.shape[0]):
        a = alibi[b] if alibi is not None and alibi.dim() == 2 else alibi
        o, l = attention_ref(q[b], k[b], v[b], alibi=a, keep=keep[b] if keep is not None else None, **kw)
        outs.append(o)
        lses.append(l)
    return torch.stack(outs), torch.stack(lses)


def varlen_ref(q, k, v, cu_q, cu_k, **kw):
    """attention_ref per packed sequence: q (total_q, hq, d) -> out (total_q, hq, dv), lse (hq,
    total_q); rows outside every sequence are 0 (out) and nan (lse: not defined). keep is (batch, hq,
    max_sq, max_sk): sequence b's rows and keys from 0."""
    alibi = kw.pop("alibi", None)
    keep = kw.pop("keep", None)
    work = kw.get("work", torch.float64)
    out = torch.zeros((q.shape[0], q.shape[1], v.shape[-1]), dtype=work)
    lse = torch.full((q.shape[1], q.shape[0]), float("nan"), dtype=work)
    cu_q, cu_k = cu_q.tolist(), cu_k.tolist()
    for b in range(len(cu_q) - 1):
        a = alibi[b] if alibi is not None and alibi.dim() == 2 else alibi
        kb = keep[b, :, :cu_q[b + 1] - cu_q[b], :cu_k[b + 1] - cu_k[b]] if keep is not None else None
        o, l = attention_ref(q[cu_q[b]:cu_q[b + 1]], k[cu_k[b]:cu_k[b + 1]], v[cu_k[b]:cu_k[b + 1]], alibi=a, keep=kb,
                             **kw)
        out[cu_q[b]:cu_q[b + 1]] = o
        lse[:, cu_q[b]:cu_q[b + 1]] = l
    return out, lse


def rotary_ref(x, cos, sin, positions, interleaved):
    """Rotary embedding by complex multiplication (float64): x (b, s, h, d), positions (b, s); the
    first 2 * cos.shape[-1] features rotate, pairs (2i, 2i+1) when interleaved, else (i, i + r/2)."""
    half = cos.shape[-1]
    ro = 2 * half
    x = x.double()
    xr = x[..., :ro]
    if interleaved:
        z = torch.complex(xr[..., 0::2], xr[..., 1::2])
    else:
        z = torch.complex(xr[..., :half], xr[..., half:])
    angle = torch.atan2(sin.double(), cos.double())[positions]  # (b, s, half)
    radius = torch.sqrt(cos.double() ** 2 + sin.double() ** 2)[positions]
    z = z * torch.polar(radius, angle).unsqueeze(-2)
    if interleaved:
        rot = torch.stack((z.real, z.imag), dim=-1).flatten(-2)
    else:
        rot = torch.cat((z.real, z.imag), dim=-1)
    return torch.cat((rot, x[..., ro:]), dim=-1)


def naive_error(fn_lowp, fn_ref):
    """max |naive - ref|: the error of the same computation in the inputs' precision, FlashAttention's
    yardstick (its tests hold the kernel to a small multiple of it)."""
    return (fn_lowp.double() - fn_ref.double()).abs().max().item()

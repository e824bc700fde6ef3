# SPDX-License-Identifier: BSD-3-Clause
"""The two torch custom ops every public function goes through, and the contexts they run on.

``flashattn::fwd`` and ``flashattn::bwd`` are registered with ``torch.library.custom_op``, with fake
(meta) implementations that allocate outputs of the same shapes and strides, and ``fwd``'s autograd
formula calls ``bwd``; so ``torch.compile(fullgraph=True)`` traces them as single nodes, forward and
backward. The real implementations hand the tensors to ``flashattn._C`` as strided views: no input
is copied unless its last dimension is not contiguous (the one thing the C API requires).

Tensors in the ops' signatures:
  q, k, v   FlashAttention's (batch, seqlen, heads, dim) or packed (tokens, heads, dim), or with
            ``bhsd`` PyTorch's (batch, heads, seqlen, dim). Packing: ``k`` None means q is qkv
            (..., 3, heads, dim); ``v`` None means k is kv (..., 2, heads_k, dim).
  out       (batch, seqlen, heads, dim_v) or (tokens, heads, dim_v) or, with bhsd, (batch, heads,
            seqlen, dim_v) laid out in memory as (batch, seqlen, heads, dim_v).
  lse       (batch, heads, seqlen) or (heads, tokens): float32, float64 for float64 inputs. A row
            that sees no key has lse = -inf here (the C library's convention).
Scalars: scale (0 = 1/sqrt(dim)), causal (_C.CAUSAL_*), window_left/right (-1 = unbounded), softcap,
diagonal_shift, dropout_p, exactly as fa_params. rng_state: dropout's (seed, offset) as a (2,) int64
tensor (flashattn.dropout), None with dropout_p == 0; the backward gets the forward's. A call that
runs one sequence at a time gives sequence b the offset + b * heads the whole call would give it.

Threads: each call uses ``get_num_threads()`` threads: ``set_num_threads(n)``'s n, else
``torch.get_num_threads()``. One fa_context per thread count and per Python thread is created on
first use and kept, so steady-state calls allocate no context or scratch memory. The threads are
not pinned (FA_BIND_NONE), as PyTorch does not pin its own: pinning, which the library does and
undoes around every call, moves the calling thread to its core each time, and on a busy machine a
small call then waits for that core (measured: 2 us unpinned against 80 us pinned at load 7 on 2
cores). FLASHATTN_BIND=core|spread|auto in the environment restores the library's placement.
"""

import os
import threading
from typing import List, Optional, Tuple

import torch
from torch import Tensor

from . import _C
from . import dropout as _dropout

_C.register_dtypes(torch.float32, torch.float64, torch.bfloat16, torch.float16, torch.int32, torch.int64)

# ---- threads and contexts ----

_num_threads: Optional[int] = None
_tls = threading.local()
_BIND = _C.BIND_AUTO if os.environ.get("FLASHATTN_BIND") else _C.BIND_NONE


def set_num_threads(n: Optional[int]) -> None:
    """Run every later call on ``n`` threads (any Python thread); None: follow torch.get_num_threads()."""
    global _num_threads
    if n is not None and (not isinstance(n, int) or n < 1):
        raise ValueError(f"flashattn.set_num_threads: expected a positive int or None, got {n!r}")
    _num_threads = n


def get_num_threads() -> int:
    """The thread count of the next call: set_num_threads's, else torch.get_num_threads()."""
    return _num_threads or torch.get_num_threads()


def context() -> "_C.Context":
    """This Python thread's fa_context for the current thread count (created once, then reused)."""
    n = _num_threads or torch.get_num_threads()
    try:
        return _tls.contexts[n]
    except AttributeError:
        _tls.contexts = {}
    except KeyError:
        pass
    ctx = _tls.contexts[n] = _C.Context(n, _BIND)
    return ctx


# ---- helpers ----

def _empty(like: Tensor) -> Tensor:
    """A 0-element placeholder for an op output that a call does not produce."""
    return like.new_empty((0,))


def _contig_last(x: Optional[Tensor]) -> Optional[Tensor]:
    """x itself when its last dimension is contiguous (the C API's one requirement), else a copy."""
    if x is not None and x.stride(-1) != 1 and x.size(-1) > 1:
        return x.contiguous()
    return x


def _c_forward(ctx, bhsd, q, k, v, out, lse, *params):
    """_C.forward, copying q, k or v first only if the C API cannot take it (a last dimension that
    is not contiguous, which the extension reports before calling the library)."""
    try:
        return _C.forward(ctx, bhsd, q, k, v, out, lse, *params)
    except _C.NotContiguousError:
        return _C.forward(ctx, bhsd, _contig_last(q), _contig_last(k), _contig_last(v), out, lse, *params)


def _c_backward(ctx, bhsd, q, k, v, out, dout, lse, dq, dk, dv, *params):
    """_C.backward, copying an input first only if the C API cannot take it (as _c_forward)."""
    try:
        return _C.backward(ctx, bhsd, q, k, v, out, dout, lse, dq, dk, dv, *params)
    except _C.NotContiguousError:
        q, k, v, out, dout = (_contig_last(x) for x in (q, k, v, out, dout))
        return _C.backward(ctx, bhsd, q, k, v, out, dout, lse, dq, dk, dv, *params)


def _dropout_args(dropout_p: float, rng_state: Optional[Tensor], heads: int, b: int = 0) -> tuple:
    """The extension's trailing dropout arguments: () without dropout, else (dropout_p, seed, offset),
    the offset moved by b * heads for a call that holds batch entry b alone (the library's stream of
    (b, h) is offset + b * heads + h)."""
    if dropout_p == 0.0:
        return ()
    if rng_state is None:
        raise ValueError(f"flashattn: dropout_p = {dropout_p} needs rng_state (seed, offset)")
    seed, offset = _dropout.seed_offset(rng_state)
    return dropout_p, seed, (offset + b * heads) & _dropout._U64


def _q_heads(q: Tensor, bhsd: bool) -> int:
    return q.size(1) if bhsd and q.dim() == 4 else q.size(-2)


def _unpack(q: Tensor, k: Optional[Tensor], v: Optional[Tensor]) -> Tuple[Tensor, Tensor, Tensor]:
    """The q, k, v views of the (possibly packed) inputs: no copy."""
    if k is None:
        return q.select(-3, 0), q.select(-3, 1), q.select(-3, 2)
    if v is None:
        return q, k.select(-3, 0), k.select(-3, 1)
    return q, k, v


def _lse_dtype(q: Tensor) -> torch.dtype:
    return torch.float64 if q.dtype == torch.float64 else torch.float32


def _alloc_fwd(q: Tensor, v: Tensor, bhsd: bool) -> Tuple[Tensor, Tensor]:
    """out and lse for views q, v (shared by the real and the fake implementation)."""
    if q.dim() not in (3, 4) or v.dim() not in (3, 4):
        raise ValueError(f"flashattn: q has {q.dim()} and v {v.dim()} dimensions; expected 4 (batch, seqlen, heads, "
                         "dim) or 3 (tokens, heads, dim)")
    dv = v.size(-1)
    if q.dim() == 3:  # packed tokens
        total, h = q.size(0), q.size(1)
        return (q.new_empty((total, h, dv)),
                q.new_empty((h, total), dtype=_lse_dtype(q)))
    if bhsd:
        b, h, s = q.size(0), q.size(1), q.size(2)
        out = torch.empty_strided((b, h, s, dv), (s * h * dv, dv, h * dv, 1), dtype=q.dtype, device=q.device)
    else:
        b, s, h = q.size(0), q.size(1), q.size(2)
        out = q.new_empty((b, s, h, dv))
    return out, q.new_empty((b, h, s), dtype=_lse_dtype(q))


def _alloc_bwd(q: Tensor, k: Optional[Tensor], v: Optional[Tensor], varlen: bool, want_dsinks: bool,
               bhsd: bool):
    """(dq | dqkv, dk | dkv | empty, dv | empty, dsinks | empty), and the dq, dk, dv views to write.
    Packed inputs get packed gradients: dq, dk and dv are interleaved slices of one buffer. With
    sequences (varlen) the gradients start at zero: rows outside every sequence stay 0."""
    alloc = torch.zeros_like if varlen else torch.empty_like
    if k is None:
        dqkv = alloc(q)
        views = (dqkv.select(-3, 0), dqkv.select(-3, 1), dqkv.select(-3, 2))
        outs = [dqkv, _empty(q), _empty(q)]
    elif v is None:
        dq, dkv = alloc(q), alloc(k)
        views = (dq, dkv.select(-3, 0), dkv.select(-3, 1))
        outs = [dq, dkv, _empty(q)]
    else:
        dq, dk, dv = alloc(q), alloc(k), alloc(v)
        views = (dq, dk, dv)
        outs = [dq, dk, dv]
    hq = views[0].size(1 if bhsd else -2)
    outs.append(q.new_empty((hq,), dtype=torch.float32) if want_dsinks else _empty(q))
    return outs, views


def _i64(x: Optional[Tensor]) -> Optional[Tensor]:
    """An offsets or lengths array as the C API reads it: int64, contiguous."""
    if x is None:
        return None
    if x.dtype != torch.int64:
        x = x.to(torch.int64)
    return x.contiguous()


def _i32(x: Optional[Tensor]) -> Optional[Tensor]:
    if x is None:
        return None
    if x.dtype != torch.int32:
        x = x.to(torch.int32)
    return x.contiguous()


def _f32(x: Optional[Tensor]) -> Optional[Tensor]:
    if x is None:
        return None
    if x.dtype != torch.float32:
        x = x.to(torch.float32)
    return x.contiguous()


class _Seqs:
    """The sequence arrays of one call in the C API's form: FlashAttention's int32 offsets as int64,
    and a paged call's cu_seqlens_k turned into key counts (paged keys have no offsets)."""

    __slots__ = ("cu_q", "cu_k", "used", "table", "leftpad")

    def __init__(self, cu_q, cu_k, used, table, leftpad):
        self.cu_q, self.cu_k, self.used, self.table = _i64(cu_q), _i64(cu_k), _i64(used), _i32(table)
        self.leftpad = _i64(leftpad)
        if self.table is not None and self.cu_k is not None:
            if self.used is None:
                self.used = (self.cu_k[1:] - self.cu_k[:-1]).contiguous()
            self.cu_k = None


def _per_sequence(q, k, v, s: _Seqs, alibi: Optional[Tensor]) -> bool:
    """Whether a call must run one sequence at a time: ALiBi slopes per (batch, head), or keys that
    start at a per-sequence row (cache_leftpad), which one fa_forward call cannot describe."""
    return (alibi is not None and alibi.dim() == 2) or s.leftpad is not None


def _sequence_calls(q, k, v, out, lse, s: _Seqs, alibi):
    """For each sequence b: (q_b, k_b, v_b, out_b, lse_b, lse_dest, alibi_b, seqs_b) where the views
    cover sequence b alone and seqs_b are the sequence arrays of a call of that sequence alone (only
    for paged keys). lse_dest is None when lse_b is lse's own slice, else the slice to copy it to."""
    if q.dim() == 3:
        cu_q = s.cu_q.tolist()
        nseq = len(cu_q) - 1
    else:
        nseq = q.size(0)
    cu_k = s.cu_k.tolist() if s.cu_k is not None else None
    used = s.used.tolist() if s.used is not None else None
    left = s.leftpad.tolist() if s.leftpad is not None else None
    for b in range(nseq):
        if q.dim() == 3:
            a, e = cu_q[b], cu_q[b + 1]
            qb, ob = q[a:e].unsqueeze(0), out[a:e].unsqueeze(0)
            lb = lse.new_empty((1, lse.size(0), e - a))
            dest = lse[:, a:e]
        else:
            qb, ob, lb, dest = q[b:b + 1], out[b:b + 1], lse[b:b + 1], None
        seqs_b = None
        if s.table is not None and s.leftpad is not None:
            # a dense cache read through one page per sequence (cache_batch_idx): its row, sliced
            row = int(s.table[b, 0])
            kb, vb = k[row:row + 1], v[row:row + 1]
            lo = left[b]
            hi = used[b] if used is not None else kb.size(1)
            kb, vb = kb[:, lo:hi], vb[:, lo:hi]
        elif s.table is not None:
            kb, vb = k, v
            seqs_b = (s.table[b:b + 1], s.used[b:b + 1] if used is not None else None)
        else:
            if cu_k is not None:
                kb, vb = k[cu_k[b]:cu_k[b + 1]].unsqueeze(0), v[cu_k[b]:cu_k[b + 1]].unsqueeze(0)
            else:
                kb, vb = k[b:b + 1], v[b:b + 1]
            lo = left[b] if left is not None else 0
            hi = used[b] if used is not None else kb.size(1)
            kb, vb = kb[:, lo:hi], vb[:, lo:hi]
        ab = alibi[b].contiguous() if alibi is not None and alibi.dim() == 2 else alibi
        yield qb, kb, vb, ob, lb, dest, ab, seqs_b


# ---- flashattn::fwd ----

def _fwd_impl(q: Tensor, k: Optional[Tensor], v: Optional[Tensor], bias: Optional[Tensor],
        alibi_slopes: Optional[Tensor], sinks: Optional[Tensor], cu_seqlens_q: Optional[Tensor],
        cu_seqlens_k: Optional[Tensor], seqused_k: Optional[Tensor], block_table: Optional[Tensor],
        leftpad_k: Optional[Tensor], scale: float, causal: int, window_left: int, window_right: int,
        softcap: float, diagonal_shift: int, bhsd: bool, dropout_p: float = 0.0,
        rng_state: Optional[Tensor] = None) -> Tuple[Tensor, Tensor]:
    """out, lse = attention of q over k, v (see the module's docstring for the layouts)."""
    q, k, v = _unpack(q, k, v)
    out, lse = _alloc_fwd(q, v, bhsd)
    alibi = _f32(alibi_slopes)
    sinks = _f32(sinks)
    ctx = context()
    heads = _q_heads(q, bhsd)
    drop = _dropout_args(dropout_p, rng_state, heads)
    if cu_seqlens_q is None and cu_seqlens_k is None and seqused_k is None and block_table is None \
            and leftpad_k is None and (alibi is None or alibi.dim() == 1):
        _c_forward(ctx, bhsd, q, k, v, out, lse, bias, alibi, sinks, None, None, None, None,
                   scale, causal, window_left, window_right, softcap, diagonal_shift, *drop)
        return out, lse
    s = _Seqs(cu_seqlens_q, cu_seqlens_k, seqused_k, block_table, leftpad_k)
    if not _per_sequence(q, k, v, s, alibi):
        _c_forward(ctx, bhsd, q, k, v, out, lse, bias, alibi, sinks, s.cu_q, s.cu_k, s.used, s.table,
                   scale, causal, window_left, window_right, softcap, diagonal_shift, *drop)
        return out, lse
    for b, (qb, kb, vb, ob, lb, dest, ab, seqs_b) in enumerate(_sequence_calls(q, k, v, out, lse, s, alibi)):
        table, used = seqs_b if seqs_b is not None else (None, None)
        _c_forward(ctx, bhsd, qb, kb, vb, ob, lb, bias, ab, sinks, None, None, used, table,
                   scale, causal, window_left, window_right, softcap, diagonal_shift,
                   *_dropout_args(dropout_p, rng_state, heads, b))
        if dest is not None:
            dest.copy_(lb[0])
    return out, lse


fwd = torch.library.custom_op("flashattn::fwd", _fwd_impl, mutates_args=(), device_types="cpu")


@fwd.register_fake
def _fwd_fake(q, k, v, bias, alibi_slopes, sinks, cu_seqlens_q, cu_seqlens_k, seqused_k, block_table,
              leftpad_k, scale, causal, window_left, window_right, softcap, diagonal_shift, bhsd, dropout_p=0.0,
              rng_state=None):
    q, k, v = _unpack(q, k, v)
    return _alloc_fwd(q, v, bhsd)


# ---- flashattn::bwd ----

def _bwd_impl(dout: Tensor, q: Tensor, k: Optional[Tensor], v: Optional[Tensor], out: Tensor, lse: Tensor,
        bias: Optional[Tensor], alibi_slopes: Optional[Tensor], sinks: Optional[Tensor],
        cu_seqlens_q: Optional[Tensor], cu_seqlens_k: Optional[Tensor], seqused_k: Optional[Tensor],
        block_table: Optional[Tensor], scale: float, causal: int, window_left: int, window_right: int,
        softcap: float, diagonal_shift: int, bhsd: bool, want_dsinks: bool, dropout_p: float = 0.0,
        rng_state: Optional[Tensor] = None) -> List[Tensor]:
    """[dq | dqkv, dk | dkv | empty, dv | empty, dsinks | empty]: gradients shaped as the inputs."""
    varlen = cu_seqlens_q is not None or cu_seqlens_k is not None or seqused_k is not None
    outs, (dq, dk, dv) = _alloc_bwd(q, k, v, varlen, want_dsinks, bhsd)
    q, k, v = _unpack(q, k, v)
    alibi, sinks = _f32(alibi_slopes), _f32(sinks)
    dsinks = outs[3] if want_dsinks else None
    ctx = context()
    s = _Seqs(cu_seqlens_q, cu_seqlens_k, seqused_k, block_table, None)
    heads = _q_heads(q, bhsd)
    if alibi is None or alibi.dim() == 1:
        _c_backward(ctx, bhsd, q, k, v, out, dout, lse, dq, dk, dv, dsinks, bias, alibi, sinks,
                    s.cu_q, s.cu_k, s.used, s.table, scale, causal, window_left, window_right, softcap,
                    diagonal_shift, *_dropout_args(dropout_p, rng_state, heads))
        return outs
    # ALiBi slopes per (batch, head): one call per sequence, each sequence's keys its own.
    if block_table is not None:
        raise NotImplementedError("flashattn: paged K/V (block_table) has no backward")
    if want_dsinks:
        dsinks.zero_()
    part = dsinks.new_empty(dsinks.shape) if want_dsinks else None
    for b, (qb, kb, vb, ob, lb, dest, ab, _) in enumerate(_sequence_calls(q, k, v, out, lse, s, alibi)):
        if qb.size(1) == 0:  # no query rows: zero key gradients, and no call (its lse would be NULL)
            _key_rows(dk, k, s, b).zero_()
            _key_rows(dv, v, s, b).zero_()
            continue
        if dest is not None:  # packed queries: this sequence's lse rows, contiguous
            lb.copy_(dest.unsqueeze(0))
        sl = _sequence_rows(q, s, b)
        dob, dqb = _rows(dout, q, s, b, sl), _rows(dq, q, s, b, sl)
        dkb, dvb = _key_rows(dk, k, s, b), _key_rows(dv, v, s, b)
        _c_backward(ctx, bhsd, qb, kb, vb, ob, dob, lb, dqb, dkb, dvb, part, bias, ab, sinks,
                    None, None, None, None, scale, causal, window_left, window_right, softcap, diagonal_shift,
                    *_dropout_args(dropout_p, rng_state, heads, b))
        if want_dsinks:
            dsinks.add_(part)
    return outs


def _sequence_rows(q, s: _Seqs, b: int):
    if q.dim() == 3:
        cu = s.cu_q
        return int(cu[b]), int(cu[b + 1])
    return b, b + 1


def _rows(t, q, s, b, sl):
    a, e = sl
    return t[a:e].unsqueeze(0) if q.dim() == 3 else t[a:e]


def _key_rows(t, k, s: _Seqs, b: int):
    if s.cu_k is not None:
        a, e = int(s.cu_k[b]), int(s.cu_k[b + 1])
        t = t[a:e].unsqueeze(0)
    else:
        t = t[b:b + 1]
    if s.used is not None:
        t = t[:, :int(s.used[b])]
    return t


bwd = torch.library.custom_op("flashattn::bwd", _bwd_impl, mutates_args=(), device_types="cpu")


@bwd.register_fake
def _bwd_fake(dout, q, k, v, out, lse, bias, alibi_slopes, sinks, cu_seqlens_q, cu_seqlens_k, seqused_k,
              block_table, scale, causal, window_left, window_right, softcap, diagonal_shift, bhsd, want_dsinks,
              dropout_p=0.0, rng_state=None):
    varlen = cu_seqlens_q is not None or cu_seqlens_k is not None or seqused_k is not None
    outs, _ = _alloc_bwd(q, k, v, varlen, want_dsinks, bhsd)
    return outs


# ---- autograd: fwd's derivative is bwd ----

_FWD_TENSORS = 11  # q, k, v, bias, alibi_slopes, sinks, cu_seqlens_q, cu_seqlens_k, seqused_k, block_table, leftpad_k
_FWD_SCALARS = 7  # scale, causal, window_left, window_right, softcap, diagonal_shift, bhsd; then dropout_p, rng_state


def _keep_dropout(ctx, extra) -> tuple:
    """Records fwd's trailing (dropout_p, rng_state) on ctx; returns the tensors to save with the
    others: the forward's rng_state, so the backward recomputes the forward's mask."""
    ctx.dropout_p = extra[0] if extra else 0.0
    rng_state = extra[1] if len(extra) > 1 else None
    ctx.has_rng_state = rng_state is not None
    return (rng_state,) if rng_state is not None else ()


def _fwd_setup_context(ctx, inputs, output):
    out, lse = output
    rng = _keep_dropout(ctx, inputs[_FWD_TENSORS + _FWD_SCALARS:])
    ctx.save_for_backward(*inputs[:_FWD_TENSORS], out, lse, *rng)
    ctx.scalars = inputs[_FWD_TENSORS:_FWD_TENSORS + _FWD_SCALARS]
    ctx.num_inputs = len(inputs)
    ctx.mark_non_differentiable(lse)


def _gradients(ctx, dout, backward, sinks_at=5):
    """fwd's input gradients from dout, computed by `backward` (the bwd op, or its implementation);
    sinks_at: the index of sinks among the inputs (needs_input_grad)."""
    saved = ctx.saved_tensors
    rng_state = saved[-1] if ctx.has_rng_state else None
    if ctx.has_rng_state:
        saved = saved[:-1]
    if getattr(ctx, "dense", False):
        q, k, v, out, lse = saved
        bias = alibi = sinks = cu_q = cu_k = used = table = leftpad = None
    else:
        (q, k, v, bias, alibi, sinks, cu_q, cu_k, used, table, leftpad, out, lse) = saved
    if leftpad is not None:
        raise NotImplementedError("flashattn: cache_leftpad (a KV cache) has no backward")
    if bias is not None and ctx.needs_input_grad[3]:
        raise NotImplementedError("flashattn: the gradient of an attention bias (a float attn_mask that "
                                  "requires grad) is not computed by the C library")
    want_dsinks = sinks is not None and ctx.needs_input_grad[sinks_at]
    dq, dk, dv, dsinks = backward(dout, q, k, v, out, lse, bias, alibi, sinks, cu_q, cu_k, used, table,
                                  *ctx.scalars, want_dsinks, ctx.dropout_p, rng_state)
    return (dq, dk if k is not None else None, dv if v is not None else None, None, None,
            dsinks.to(sinks.dtype) if want_dsinks else None) + (None,) * (getattr(ctx, "num_inputs", 6) - 6)


def _fwd_backward(ctx, dout, dlse):
    return _gradients(ctx, dout, bwd)


torch.library.register_autograd("flashattn::fwd", _fwd_backward, setup_context=_fwd_setup_context)


class _EagerAttention(torch.autograd.Function):
    """fwd with its derivative for eager calls, on the implementations without torch's dispatcher
    (the custom op's Python dispatch and autograd wrapper cost several times the C call on small
    problems). The same functions compute, so results are the op's, bit for bit. Only the tensors
    that may take a gradient are arguments of their own; the rest come as one tuple (each argument
    of apply() costs autograd time)."""

    @staticmethod
    def forward(ctx, q, k, v, bias, sinks, rest):
        alibi, cu_q, cu_k, used, table, leftpad, holder = rest[:7]
        scalars = rest[7:]
        out, lse = _fwd_impl(q, k, v, bias, alibi, sinks, cu_q, cu_k, used, table, leftpad, *scalars)
        rng = _keep_dropout(ctx, scalars[_FWD_SCALARS:])
        if bias is None and alibi is None and sinks is None and cu_q is None and cu_k is None and used is None \
                and table is None and leftpad is None:
            ctx.save_for_backward(q, k, v, out, lse, *rng)  # each saved slot costs, even an empty one
            ctx.dense = True
        else:
            ctx.save_for_backward(q, k, v, bias, alibi, sinks, cu_q, cu_k, used, table, leftpad, out, lse, *rng)
            ctx.dense = False
        ctx.scalars = scalars[:_FWD_SCALARS]
        holder.append(lse)  # handed back beside out, outside the graph: lse takes no gradient
        return out

    @staticmethod
    def backward(ctx, dout):
        dq, dk, dv, _, _, dsinks = _gradients(ctx, dout, _bwd_impl, 4)[:6]
        return dq, dk, dv, None, dsinks, None


def attention(q, k, v, bias, alibi_slopes, sinks, cu_seqlens_q, cu_seqlens_k, seqused_k, block_table, leftpad_k,
              scale, causal, window_left, window_right, softcap, diagonal_shift, bhsd, dropout_p=0.0, rng_state=None):
    """flashattn::fwd with its autograd, as every public function calls it: through the custom op
    while torch.compile, torch.export or a dispatch or function mode traces (or for tensor
    subclasses), and straight to the implementation in plain eager calls."""
    args = (q, k, v, bias, alibi_slopes, sinks, cu_seqlens_q, cu_seqlens_k, seqused_k, block_table, leftpad_k,
            scale, causal, window_left, window_right, softcap, diagonal_shift, bhsd)
    if dropout_p != 0.0:  # the op's trailing arguments, left out (their defaults) without dropout
        args += (dropout_p, rng_state)
    if type(q) is not Tensor or torch.compiler.is_compiling() or torch._C._len_torch_dispatch_stack() \
            or torch._C._is_torch_function_mode_enabled() or torch._C._are_functorch_transforms_active():
        return fwd(*args)
    if torch.is_grad_enabled() and (q.requires_grad or (k is not None and k.requires_grad)
                                    or (v is not None and v.requires_grad)
                                    or (sinks is not None and sinks.requires_grad)
                                    or (bias is not None and bias.requires_grad)):
        holder = []
        out = _EagerAttention.apply(q, k, v, bias, sinks, (alibi_slopes, cu_seqlens_q, cu_seqlens_k, seqused_k,
                                                           block_table, leftpad_k, holder) + args[11:])
        return out, holder[0]
    return _fwd_impl(*args)

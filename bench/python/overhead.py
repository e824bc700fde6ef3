#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Per-call cost of the Python binding beyond the C call, on a problem small enough that the C call
is a few microseconds: each layer is timed as the minimum over --rounds rounds of the mean of --calls
calls, less the time those calls spent inside the C library.

    python bench/python/overhead.py [--threads 1] [--calls 2000] [--rounds 7]

Rows (microseconds per call):
  C call            time inside fa_forward / fa_backward, as flashattn._C measures it around the call
  _C.forward        the extension's call from Python on prepared tensors (views read, GIL released)
  op impl           flashattn._ops.fwd's Python implementation called directly (allocation of out and
                    lse, context lookup, _C call): the binding without torch's dispatcher
  torch.ops (no grad)   torch.ops.flashattn.fwd through the dispatcher, inputs without grad
  flash_attn_func (no grad)   the public function, inputs without grad
  flash_attn_func (grad)      the public function, inputs requiring grad (autograd node, saves)
  forward+backward  flash_attn_func then .backward(): both custom ops and autograd's engine
The overhead of a layer is its time minus the C call's time, in wall time and in the calling thread's
CPU time (time.thread_time_ns, and CLOCK_THREAD_CPUTIME_ID around the C call): on a shared machine
the CPU time does not count the moments the thread waits for a core. With --threads 1 the library
computes on the calling thread, so both clocks see all of its work.
"""
import argparse
import time

import torch

import flashattn
from flashattn import _C, _ops


def measure(layers, rounds):
    """{name: (overhead, total)} in microseconds per call: for each layer the minimum over rounds of
    the wall time per call minus the time the same calls spent inside the C library (flashattn._C's
    per-thread counter), so a round that other processes slow down inside the C call does not count
    against the binding. Each round times every layer in turn, so all layers see the same load."""
    best = {name: [float("inf")] * 4 for name, _, _ in layers}
    for _ in range(rounds):
        for name, fn, calls in layers:
            c0, cc0 = _C.c_time_ns(), _C.c_cpu_ns()
            t0, tc0 = time.perf_counter_ns(), time.thread_time_ns()
            for _ in range(calls):
                fn()
            wall, cpu = time.perf_counter_ns() - t0, time.thread_time_ns() - tc0
            c, cc = _C.c_time_ns() - c0, _C.c_cpu_ns() - cc0
            b = best[name]
            for i, x in enumerate((wall - c, wall, cpu - cc, cpu)):
                b[i] = min(b[i], x / calls / 1000.0)
    return best


class _Trivial(torch.autograd.Function):
    """The floor of autograd: a node that saves its input and returns a new tensor."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.new_empty(x.shape)

    @staticmethod
    def backward(ctx, g):
        return g


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--calls", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--shape", default="1,16,2,32", help="batch,seqlen,heads,dim (default 1,16,2,32)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    _C.set_cpu_timing(True)
    b, s, h, d = (int(x) for x in a.shape.split(","))
    torch.manual_seed(0)
    q, k, v = (torch.randn(b, s, h, d) for _ in range(3))
    out, lse = _ops._alloc_fwd(q, v, False)
    ctx = _ops.context()
    scale = d ** -0.5
    raw = lambda: _C.forward(ctx, False, q, k, v, out, lse, None, None, None, None, None, None, None, scale,
                             2, -1, -1, 0.0, 0)
    op_impl = _ops._fwd_impl
    direct = lambda: op_impl(q, k, v, None, None, None, None, None, None, None, None, scale, 2, -1, -1, 0.0, 0, False)
    disp = lambda: torch.ops.flashattn.fwd(q, k, v, None, None, None, None, None, None, None, None, scale, 2, -1, -1,
                                           0.0, 0, False)
    func = lambda: flashattn.flash_attn_func(q, k, v, causal=True)
    qg, kg, vg = (x.clone().requires_grad_() for x in (q, k, v))
    funcg = lambda: flashattn.flash_attn_func(qg, kg, vg, causal=True)
    g = torch.ones(b, s, h, d)

    def fwdbwd():
        flashattn.flash_attn_func(qg, kg, vg, causal=True).backward(g)

    xt = q.clone().requires_grad_()

    def trivial():
        _Trivial.apply(xt).backward(g)

    layers = [("_C.forward", raw, a.calls), ("op impl (no dispatcher)", direct, a.calls),
              ("torch.ops.flashattn.fwd (no grad)", disp, a.calls), ("flash_attn_func (no grad)", func, a.calls),
              ("flash_attn_func (grad)", funcg, a.calls), ("flash_attn_func + backward()", fwdbwd, a.calls // 4),
              ("  autograd floor: trivial Function + backward()", trivial, a.calls // 4)]
    for _, f, _ in layers:
        for _ in range(100):
            f()
    print(f"shape (batch, seqlen, heads, dim) = {a.shape}, f32, causal, {a.threads} thread(s), "
          f"torch {torch.__version__}; min over {a.rounds} rounds")
    print(f"{'':50s} {'wall time (us/call)':>22s}   {'CPU time of the thread':>22s}")
    print(f"{'layer':50s} {'total':>10s} {'beyond C':>11s}   {'total':>10s} {'beyond C':>11s}")
    best = measure(layers, a.rounds)
    for name, _, _ in layers:
        over, total, cpu_over, cpu = best[name]
        print(f"{name:50s} {total:10.2f} {over:11.2f}   {cpu:10.2f} {cpu_over:11.2f}")


if __name__ == "__main__":
    main()

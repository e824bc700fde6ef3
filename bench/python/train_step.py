#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""A tiny causal GQA transformer's training step through the Python binding, against the same step
with the binding's own time taken out: how far the binding is from calling the C API directly.

    python bench/python/train_step.py [--threads 1] [--steps 30] [--dim 128 --layers 2 --seq 128 --batch 4]

Every attention call of the step (forward through flashattn.scaled_dot_product_attention, backward
through its autograd node) is timed from Python, and the time it spent inside fa_forward and
fa_backward is read from flashattn._C's counter: the difference is the binding's time (argument
handling, output allocation, context lookup, the autograd node's own work). The C API step is the
step minus that difference: the same kernel calls timed directly, as a C program making them
would spend them. Reported: the minimum and median over --steps steps after --warmup steps, in wall
time and in the calling thread's CPU time (with --threads 1 every operation of the step runs on the
calling thread, and on a shared machine the CPU time leaves out the waits for a core).
"""
import argparse
import os
import statistics
import sys
import time

import torch

import flashattn
from flashattn import _C, _ops

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "tests", "python"))
from models import TinyLM, loss_fn  # noqa: E402

_binding_ns = 0
_binding_cpu = 0


def timed_sdpa(*args, **kw):
    global _binding_ns, _binding_cpu
    t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    out = flashattn.scaled_dot_product_attention(*args, **kw)
    _binding_ns += time.perf_counter_ns() - t0
    _binding_cpu += time.thread_time_ns() - c0
    return out


_gradients = _ops._gradients


def timed_gradients(*args):
    global _binding_ns, _binding_cpu
    t0, c0 = time.perf_counter_ns(), time.thread_time_ns()
    out = _gradients(*args)
    _binding_ns += time.perf_counter_ns() - t0
    _binding_cpu += time.thread_time_ns() - c0
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=4)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = TinyLM(timed_sdpa, dim=a.dim, heads=a.heads, kv_heads=a.kv_heads, layers=a.layers)
    _ops._gradients = timed_gradients
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    tokens = torch.randint(0, 61, (a.batch, a.seq + 1))
    global _binding_ns, _binding_cpu
    _C.set_cpu_timing(True)
    rows, cpu_rows = [], []
    for step in range(a.warmup + a.steps):
        _binding_ns = _binding_cpu = 0
        c0, cc0 = _C.c_time_ns(), _C.c_cpu_ns()
        t0, tc0 = time.perf_counter_ns(), time.thread_time_ns()
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model, tokens)
        loss.backward()
        opt.step()
        total, total_cpu = time.perf_counter_ns() - t0, time.thread_time_ns() - tc0
        c, cc = _C.c_time_ns() - c0, _C.c_cpu_ns() - cc0
        if step >= a.warmup:
            rows.append((total, _binding_ns, c))
            cpu_rows.append((total_cpu, _binding_cpu, cc))
    calls = 2 * a.layers  # a forward and a backward per layer
    print(f"TinyLM dim={a.dim} heads={a.heads}/{a.kv_heads} layers={a.layers} batch={a.batch} seq={a.seq}, f32, "
          f"{a.threads} thread(s), torch {torch.__version__}; {a.layers} attention forwards and {a.layers} "
          f"backwards per step, {a.steps} steps")
    for clock, data in (("wall", rows), ("cpu", cpu_rows)):
        for name, pick in (("min", min), ("median", statistics.median)):
            step = pick(r[0] for r in data)
            binding = pick(r[1] - r[2] for r in data)
            c = pick(r[2] for r in data)
            c_api = step - binding
            print(f"{clock:4s} {name:6s}: step {step / 1e6:8.3f} ms, attention in C {c / 1e6:7.3f} ms, binding "
                  f"{binding / 1e3:8.1f} us ({binding / 1e3 / calls:5.1f} us per call) -> step through the C API "
                  f"{c_api / 1e6:8.3f} ms, binding / C API = {step / c_api:.4f}")


if __name__ == "__main__":
    main()

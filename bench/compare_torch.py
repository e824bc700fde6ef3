#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Time PyTorch's CPU scaled_dot_product_attention on the shapes and thread counts of a fa-bench
run, and print flashattn's GFLOP/s, PyTorch's and their ratio side by side.

    bench/compare_torch.py --json results/sweep.json
    bench/compare_torch.py --fa-bench build-bench/bench/fa-bench --fwdbwd -- --preset scaling --threads 1,16
    bench/compare_torch.py --fa-bench build-bench/bench/fa-bench --dtype bf16 -- --preset scaling

Sources of flashattn's figures (either or both):
  --json FILE        a file written by fa-bench --json (repeatable); every row is compared
  --fa-bench PATH    run that fa-bench with the arguments after `--`, once per pass of --passes
                     (default fwd; --fwdbwd adds fwdbwd), and compare its rows
  --dtype T          f32, f64, bf16 or f16: passed to those fa-bench runs (--dtype T, after the
                     arguments after `--`, so it wins); their rows, and so PyTorch's tensors, have it

For each row, PyTorch computes the same problem: B, Hq, Hkv, Nq, Nk, D, Dv, dtype, layout and input
distribution (--dist: normal, uniform or peaky) as in the row (bshd as a transposed view), is_causal for top-left (and for bottom-right when Nq = Nk; other
bottom-right shapes get an explicit boolean mask, which PyTorch's flash kernel does not take),
bf16 and f16 inputs drawn in float32 and rounded to the type (as fa-bench's are). A row with a
half-precision KV cache (kv_dtype bf16 or f16 under f32 queries) has no PyTorch equivalent, as
scaled_dot_product_attention takes one dtype: k and v are rounded to kv_dtype and handed over
widened back to float32 (the note says so), so PyTorch reads twice the KV bytes flashattn does.
torch.set_num_threads(threads), --warmup untimed calls then --reps timed ones, minimum time. The
pass is the row's: fwd times the forward under torch.no_grad(); bwd times torch.autograd.grad of
one forward's output (retain_graph); fwdbwd times a forward followed by that backward. GFLOP/s uses
the row's FLOP count (fa-bench's model: 4*B*H*N^2*D forward, halved for causal; backward 2.5x,
fwdbwd 3.5x), so the ratio is a ratio of times. ratio > 1: flashattn is faster.

PyTorch's threads are not pinned unless OMP_PROC_BIND / OMP_PLACES say so; fa-bench pins its own
(--bind auto). Where PyTorch >= 2.1 is not installed, this prints so and exits 0. It never installs
anything.
"""

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time

MIN_TORCH = (2, 1)
# fa-bench's dtype names and torch's
TORCH_DTYPES = {"f32": "float32", "f64": "float64", "bf16": "bfloat16", "f16": "float16"}


def torch_or_none():
    """The torch module, or None after saying why it cannot be used."""
    try:
        import torch  # noqa: PLC0415 (optional dependency)
    except Exception as e:  # ImportError, or a broken install that fails while importing
        print(f"compare_torch.py: PyTorch is not installed ({type(e).__name__}: {e}); nothing to compare")
        return None
    version = torch.__version__.split("+")[0]
    parts = []
    for p in version.split(".")[:2]:
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    if tuple(parts) < MIN_TORCH:
        print(f"compare_torch.py: PyTorch {torch.__version__} is older than "
              f"{'.'.join(map(str, MIN_TORCH))}; nothing to compare")
        return None
    return torch


def parse_args(argv):
    extra = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    p.add_argument("--json", action="append", default=[], metavar="FILE",
                   help="fa-bench --json output to compare (repeatable)")
    p.add_argument("--fa-bench", metavar="PATH", help="run this fa-bench with the arguments after --")
    p.add_argument("--passes", default="fwd", help="passes of the --fa-bench runs, e.g. fwd,fwdbwd (default fwd)")
    p.add_argument("--dtype", choices=sorted(TORCH_DTYPES), help="--dtype of the --fa-bench runs")
    p.add_argument("--fwdbwd", action="store_true", help="also forward+backward (adds fwdbwd to --passes)")
    p.add_argument("--warmup", type=int, default=1, help="untimed PyTorch calls per row (default 1)")
    p.add_argument("--reps", type=int, default=3, help="timed PyTorch calls per row, min reported (default 3)")
    p.add_argument("--csv", metavar="FILE", help="also write the comparison as CSV")
    args = p.parse_args(argv)
    args.extra = extra
    if not args.json and not args.fa_bench:
        p.error("give --json FILE or --fa-bench PATH")
    if extra and not args.fa_bench:
        p.error("arguments after -- go to --fa-bench, which is not given")
    if args.dtype and not args.fa_bench:
        p.error("--dtype goes to --fa-bench's runs; rows of --json files keep their own dtype")
    passes = [x for x in args.passes.split(",") if x]
    if args.fwdbwd and "fwdbwd" not in passes:
        passes.append("fwdbwd")
    for x in passes:
        if x not in ("fwd", "bwd", "fwdbwd"):
            p.error(f"--passes: unknown pass {x!r} (fwd, bwd, fwdbwd)")
    args.pass_list = passes
    if args.reps < 1 or args.warmup < 0:
        p.error("--reps must be >= 1 and --warmup >= 0")
    return args


def rows_from_fa_bench(path, extra, passes, dtype):
    """Runs fa-bench once per pass (its table goes to our stdout) and returns the rows of its JSON."""
    rows = []
    for pass_name in passes:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "fa.json")
            # A later --pass wins in fa-bench, so ours goes last; --json and --dtype likewise.
            cmd = [path, *extra, "--pass", pass_name, "--json", out, *(["--dtype", dtype] if dtype else [])]
            print("compare_torch.py: " + " ".join(cmd), flush=True)
            done = subprocess.run(cmd, check=False)
            if done.returncode != 0:
                print(f"compare_torch.py: fa-bench failed (status {done.returncode})", file=sys.stderr)
                sys.exit(done.returncode)
            with open(out, encoding="utf-8") as f:
                rows.extend(json.load(f))
    return rows


def shape_label(r):
    n = f"N={r['nq']}" if r["nq"] == r["nk"] else f"Nq={r['nq']} Nk={r['nk']}"
    heads = f"H={r['hq']}" if r["hq"] == r["hkv"] else f"Hq={r['hq']} Hkv={r['hkv']}"
    d = f"D={r['d']}" if r["d"] == r["dv"] else f"D={r['d']} Dv={r['dv']}"
    causal = "" if r["causal"] == "none" else f" {r['causal']}"
    dist = "" if r.get("dist", "normal") == "normal" else f" {r['dist']}"
    kv = r.get("kv_dtype", r["dtype"])
    dtype = r["dtype"] if kv == r["dtype"] else f"{r['dtype']}/kv {kv}"
    return f"{dtype} B={r['b']} {heads} {n} {d}{causal}{dist}"


class TorchCase:
    """One problem in PyTorch tensors, built once per shape and reused for every thread count."""

    def __init__(self, torch, r):
        self.torch = torch
        dtype = getattr(torch, TORCH_DTYPES[r["dtype"]])
        kv_name = r.get("kv_dtype", r["dtype"])  # rows of an fa-bench older than --kv-dtype lack it
        kv_dtype = getattr(torch, TORCH_DTYPES[kv_name])
        b, hq, hkv, nq, nk, d, dv = (int(r[k]) for k in ("b", "hq", "hkv", "nq", "nk", "d", "dv"))
        gen = torch.Generator().manual_seed(int(r.get("seed", 1)))
        dist = r.get("dist", "normal")
        if dist not in ("normal", "uniform", "peaky"):
            raise ValueError(f"fa-bench row with an unknown --dist {dist!r}")

        def draw(t, *size):
            # fa-bench's distributions (its own generator, so not its values): N(0,1), U(-1,1), U(-10,10),
            # drawn in float64 or float32 and, for bf16 and f16, rounded from float32 as fa-bench does
            wide = torch.float64 if t == torch.float64 else torch.float32
            if dist == "normal":
                x = torch.randn(*size, generator=gen, dtype=wide)
            else:
                x = 2 * torch.rand(*size, generator=gen, dtype=wide) - 1
                x = 10 * x if dist == "peaky" else x
            return x.to(t)

        def tensor(t, heads, seq, dim):
            if r.get("layout") == "bshd":  # [B][S][H][D] memory, seen as [B][H][S][D]
                return draw(t, b, seq, heads, dim).transpose(1, 2)
            return draw(t, b, heads, seq, dim)

        notes = []
        # A half KV cache under f32 queries: SDPA takes one dtype, so the rounded k and v go in widened.
        self.q, self.k, self.v = tensor(dtype, hq, nq, d), tensor(kv_dtype, hkv, nk, d), tensor(kv_dtype, hkv, nk, dv)
        if kv_dtype != dtype:
            self.k, self.v = self.k.to(dtype), self.v.to(dtype)
            notes.append(f"k, v {kv_name}-rounded, as {r['dtype']}")
        self.dout = tensor(dtype, hq, nq, dv)
        self.kwargs = {}
        if hq != hkv:
            try:  # enable_gqa: PyTorch >= 2.5
                torch.nn.functional.scaled_dot_product_attention(
                    self.q[:, :, :1], self.k[:, :, :1], self.v[:, :, :1], enable_gqa=True)
                self.kwargs["enable_gqa"] = True
            except TypeError:
                group = hq // hkv
                self.k = self.k.repeat_interleave(group, dim=1)
                self.v = self.v.repeat_interleave(group, dim=1)
                notes.append("kv heads repeated")
        causal = r["causal"]
        if causal == "top-left" or (causal == "bottom-right" and nq == nk):
            self.kwargs["is_causal"] = True
        elif causal == "bottom-right":
            i = torch.arange(nq).unsqueeze(1)
            j = torch.arange(nk).unsqueeze(0)
            self.kwargs["attn_mask"] = j <= i + (nk - nq)
            notes.append("explicit mask")
        self.note = ", ".join(notes)

    def call(self, pass_name):
        """A function that runs one timed call of the pass."""
        torch = self.torch
        sdpa = torch.nn.functional.scaled_dot_product_attention
        if pass_name == "fwd":
            def fwd():
                with torch.no_grad():
                    sdpa(self.q, self.k, self.v, **self.kwargs)
            return fwd
        q, k, v = (x.detach().requires_grad_(True) for x in (self.q, self.k, self.v))
        if pass_name == "bwd":
            out = sdpa(q, k, v, **self.kwargs)
            return lambda: torch.autograd.grad(out, (q, k, v), self.dout, retain_graph=True)

        def fwdbwd():
            out = sdpa(q, k, v, **self.kwargs)
            torch.autograd.grad(out, (q, k, v), self.dout)
        return fwdbwd


def min_time(fn, warmup, reps):
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def fmt(x, width, prec=1):
    return f"{x:{width}.{prec}f}" if isinstance(x, float) and x == x else f"{'-':>{width}}"


def main(argv):
    args = parse_args(argv)
    torch = torch_or_none()
    if torch is None:
        return 0
    rows = []
    for path in args.json:
        with open(path, encoding="utf-8") as f:
            rows.extend(json.load(f))
    if args.fa_bench:
        rows.extend(rows_from_fa_bench(args.fa_bench, args.extra, args.pass_list, args.dtype))
    if not rows:
        print("compare_torch.py: no fa-bench rows to compare")
        return 0

    capability = ""
    try:
        capability = ", CPU capability " + torch.backends.cpu.get_cpu_capability()
    except Exception:  # older versions lack it; it is only informative
        pass
    print(f"\ncompare_torch.py: PyTorch {torch.__version__}{capability}, scaled_dot_product_attention on CPU; "
          f"warmup {args.warmup}, min of {args.reps}; flashattn figures from fa-bench "
          f"(flashattn {rows[0].get('library_version', '?')}, kernel table {rows[0].get('isa', '?')})")
    width = max(len("shape"), *(len(shape_label(r)) for r in rows))
    header = (f"{'shape':<{width}} {'pass':<6} {'threads':>7} {'flashattn GF/s':>14} {'PyTorch GF/s':>12} "
              f"{'ratio':>6}  note")
    print("\n" + header)
    results = []
    cases = {}
    saved_threads = torch.get_num_threads()
    for r in rows:
        key = tuple(r.get(k) for k in ("dtype", "kv_dtype", "layout", "b", "hq", "hkv", "nq", "nk", "d", "dv",
                                       "causal", "seed"))
        threads = int(r["threads"])
        torch.set_num_threads(threads)
        # A PyTorch build whose CPU SDPA lacks the row's dtype raises RuntimeError (when the case is built,
        # by the enable_gqa probe, or when it is timed): the row says so and the others still run.
        try:
            if key not in cases:
                cases[key] = TorchCase(torch, r)
            note = cases[key].note
            seconds = min_time(cases[key].call(r["pass"]), args.warmup, args.reps)
        except RuntimeError as e:
            seconds = float("nan")
            note = ", ".join(x for x in (cases[key].note if key in cases else "",
                                         f"PyTorch failed: {str(e).splitlines()[0][:80]}") if x)
        torch_gflops = float(r["flop"]) / seconds / 1e9
        fa_gflops = float(r["gflops"]) if r.get("gflops") is not None else float("nan")
        ratio = fa_gflops / torch_gflops
        label = shape_label(r)
        print(f"{label:<{width}} {r['pass']:<6} {threads:>7} {fmt(fa_gflops, 14)} {fmt(torch_gflops, 12)} "
              f"{fmt(ratio, 6, 2)}  {note}", flush=True)
        results.append({"shape": label, "pass": r["pass"], "threads": threads, "flop": r["flop"],
                        "flashattn_gflops": fa_gflops, "flashattn_min_s": r.get("min_s"),
                        "torch_gflops": torch_gflops, "torch_min_s": seconds, "ratio": ratio,
                        "torch_version": torch.__version__, "note": note})
    torch.set_num_threads(saved_threads)
    if args.csv:
        with open(args.csv, "w", newline="", encoding="utf-8") as f:
            w = csv.DictWriter(f, fieldnames=list(results[0].keys()))
            w.writeheader()
            w.writerows(results)
        print(f"compare_torch.py: wrote {args.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

# SPDX-License-Identifier: BSD-3-Clause
"""Shared fixtures of the Python suite: a seeded generator per test (the seed is printed, so a
failure names it), and the accuracy rule every dtype is held to."""

import os
import zlib

import pytest
import torch

import flashattn

# One thread unless FA_PY_THREADS says otherwise: results are bitwise the same at any count
# (test_threads.py holds 1 and 2 to that), and one thread keeps the suite's time steady on a
# shared machine, where a 2-thread call waits for both cores at every barrier.
torch.set_num_threads(int(os.environ.get("FA_PY_THREADS", "1")))

TOL_F64 = 1e-12  # relative, as the C library's f64 exactness guarantee


@pytest.fixture
def seed(request):
    """A seed derived from the test's id (stable across runs; FA_PY_SEED overrides it), printed."""
    s = int(os.environ.get("FA_PY_SEED", zlib.crc32(request.node.nodeid.encode())))
    print(f"seed = {s} (FA_PY_SEED={s} reproduces)")
    torch.manual_seed(s)
    return s


def assert_close_to_ref(got, ref, lowp=None, what="out"):
    """f64: within TOL_F64 (relative to the largest reference value). Otherwise within three times
    the error of the same computation done naively in the inputs' precision (``lowp``: that naive
    result, FlashAttention's yardstick), plus one unit in the last place of the dtype."""
    got64, ref64 = got.double(), ref.double()
    err = (got64 - ref64).abs().max().item() if got.numel() else 0.0
    scale = max(ref64.abs().max().item() if ref.numel() else 0.0, 1.0)
    if got.dtype == torch.float64:
        assert err <= TOL_F64 * scale, f"{what}: max error {err:.3g} > {TOL_F64 * scale:.3g} (f64)"
        return
    assert lowp is not None, "a reduced-precision check needs the naive result"
    naive = (lowp.double() - ref64).abs().max().item() if ref.numel() else 0.0
    ulp = torch.finfo(got.dtype).eps * scale
    assert err <= 3 * naive + ulp, f"{what}: max error {err:.3g} > 3 x naive {naive:.3g} + ulp {ulp:.3g}"


def randn(*shape, dtype=torch.float64, grad=False):
    t = torch.randn(*shape, dtype=torch.float64).to(dtype)
    return t.requires_grad_() if grad else t

# SPDX-License-Identifier: BSD-3-Clause
"""Threads: results bitwise equal at 1 and 2 threads (forward and backward, with and without
dropout, whose seed comes from torch's generator, reseeded), the thread count
followed from torch.get_num_threads() or set_num_threads(), one context per count reused."""

import threading

import pytest
import torch

import flashattn
from flashattn import _ops
from conftest import randn


@pytest.fixture
def restore_threads():
    n = torch.get_num_threads()
    yield
    flashattn.set_num_threads(None)
    torch.set_num_threads(n)


def run(dtype, dropout_p=0.0):
    torch.manual_seed(1234)
    q = randn(2, 130, 4, 32, dtype=dtype, grad=True)
    k = randn(2, 150, 2, 32, dtype=dtype, grad=True)
    v = randn(2, 150, 2, 32, dtype=dtype, grad=True)
    out = flashattn.flash_attn_func(q, k, v, causal=True, window_size=(64, 0), softcap=3.0, dropout_p=dropout_p)
    g = randn(*out.shape, dtype=dtype)
    return (out,) + torch.autograd.grad(out, (q, k, v), g)


@pytest.mark.parametrize("dropout_p", [0.0, 0.2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_bitwise_equal_at_1_and_2_threads(restore_threads, dtype, dropout_p):
    results = {}
    for n in (1, 2):
        torch.set_num_threads(n)
        assert flashattn.get_num_threads() == n
        results[n] = run(dtype, dropout_p)
        assert _ops.context().stats()["num_threads"] == n
    for a, b in zip(results[1], results[2]):
        assert torch.equal(a, b)


def test_set_num_threads_overrides_torch(restore_threads):
    torch.set_num_threads(2)
    flashattn.set_num_threads(1)
    a = run(torch.float32)
    assert _ops.context().stats()["num_threads"] == 1
    flashattn.set_num_threads(None)
    assert flashattn.get_num_threads() == 2
    b = run(torch.float32)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    with pytest.raises(ValueError):
        flashattn.set_num_threads(0)


def test_one_context_per_thread_count_reused(restore_threads):
    torch.set_num_threads(2)
    c = _ops.context()
    run(torch.float32)
    assert _ops.context() is c
    torch.set_num_threads(1)
    assert _ops.context() is not c
    torch.set_num_threads(2)
    assert _ops.context() is c


def test_steady_state_calls_grow_no_scratch(restore_threads):
    torch.set_num_threads(2)
    run(torch.float32)
    before = _ops.context().stats()["scratch_capacity"]
    run(torch.float32)
    assert _ops.context().stats()["scratch_capacity"] == before


def test_python_threads_get_their_own_contexts(restore_threads):
    """Concurrent calls from Python threads never share a context (a context serves one call at a
    time): each thread has its own, and every thread gets the single-threaded bytes."""
    torch.manual_seed(99)
    q, k, v = randn(2, 100, 4, 32, dtype=torch.float32), randn(2, 90, 2, 32, dtype=torch.float32), \
        randn(2, 90, 2, 32, dtype=torch.float32)
    want = flashattn.flash_attn_func(q, k, v, causal=True)
    got, contexts, errors = {}, {}, []

    def worker(i):
        try:
            got[i] = [flashattn.flash_attn_func(q, k, v, causal=True) for _ in range(5)]
            contexts[i] = _ops.context()
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len({id(c) for c in contexts.values()}) == 3
    assert len(got) == 3
    for r in got.values():
        assert all(torch.equal(a, want) for a in r)

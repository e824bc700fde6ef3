# SPDX-License-Identifier: BSD-3-Clause
"""Bad arguments raise with the C library's message (fa_last_error(): the call, the argument and
its values) and status; the exception classes are also the built-in ones a caller expects."""

import pytest
import torch

import flashattn
from conftest import randn


def raises(exc, match, fn):
    with pytest.raises(exc, match=match) as info:
        fn()
    return info.value


def test_shape_mismatch_names_the_argument(seed):
    q, k, v = randn(1, 8, 2, 16), randn(1, 8, 2, 15), randn(1, 8, 2, 16)
    e = raises(flashattn.ArgumentError, r"fa_forward: k\.dim = 15 but q\.dim = 16", lambda: flashattn.flash_attn_func(q, k, v))
    assert e.status == "FA_ERR_SHAPE" and isinstance(e, ValueError) and isinstance(e, flashattn.FlashAttnError)


def test_heads_not_a_multiple(seed):
    q, k = randn(1, 8, 3, 16), randn(1, 8, 2, 16)
    e = raises(ValueError, r"fa_forward: .*heads", lambda: flashattn.flash_attn_func(q, k, k))
    assert e.status == "FA_ERR_SHAPE"


@pytest.mark.parametrize("kw,match", [(dict(window_size=(-3, 0)), "window_left = -3"),
                                      (dict(softcap=float("nan")), "softcap"),
                                      (dict(softmax_scale=float("inf")), "scale")])
def test_bad_scalars(seed, kw, match):
    q = randn(1, 8, 2, 16)
    e = raises(flashattn.ArgumentError, match, lambda: flashattn.flash_attn_func(q, q, q, **kw))
    assert e.status == "FA_ERR_ARG"


def test_mixed_dtypes_and_head_dim_limit(seed):
    q = randn(1, 4, 2, 8)
    e = raises(flashattn.ArgumentError, "dtype", lambda: flashattn.flash_attn_func(q, q.float(), q.float()))
    assert e.status == "FA_ERR_DTYPE"
    limit = flashattn._C.MAX_HEAD_DIM  # the header's FA_MAX_HEAD_DIM
    big = randn(1, 4, 1, limit + 1)
    e = raises(ValueError, str(limit + 1), lambda: flashattn.flash_attn_func(big, big, big))
    assert e.status == "FA_ERR_SHAPE"


def test_varlen_offsets_out_of_range(seed):
    q = randn(10, 2, 8)
    cu = torch.tensor([0, 4, 12], dtype=torch.int32)
    e = raises(flashattn.ArgumentError, r"cu_seqlens_q\[2\] = 12", lambda: flashattn.flash_attn_varlen_func(q, q, q, cu, cu, 8, 8))
    assert e.status == "FA_ERR_SHAPE"


def test_paged_keys_have_no_backward(seed):
    pool = randn(4, 8, 2, 8)
    q = randn(5, 2, 8, grad=True)
    table = torch.tensor([[0, 1], [2, 3]], dtype=torch.int32)
    cu_q, cu_k = torch.tensor([0, 2, 5], dtype=torch.int32), torch.tensor([0, 9, 20], dtype=torch.int32)
    out = flashattn.flash_attn_varlen_func(q, pool, pool, cu_q, cu_k, 3, 16, block_table=table)
    e = raises(flashattn.UnsupportedError, "block_table", lambda: out.sum().backward())
    assert isinstance(e, NotImplementedError) and e.status == "FA_ERR_UNSUPPORTED"


def test_binding_checks_before_the_library(seed):
    """What the C API cannot be told (a CUDA tensor, an integer tensor, a 2-D tensor) is refused by
    the binding, naming the argument."""
    q = randn(1, 4, 2, 8)
    raises(TypeError, "q has a dtype", lambda: flashattn.flash_attn_func(q.long(), q, q))
    raises(ValueError, "3 \\(tokens", lambda: flashattn.flash_attn_func(q[0, 0], q, q))
    raises(ValueError, "alibi_slopes has 3 elements; expected 2",
           lambda: flashattn.flash_attn_func(q, q, q, alibi_slopes=torch.ones(3)))


@pytest.mark.parametrize("p", [-0.1, 1.0, 1.5, float("nan"), float("inf")])
def test_dropout_p_outside_0_1_is_refused_naming_it(seed, p):
    """Every function that takes dropout_p, and dropout_mask: ValueError naming dropout_p, raised
    before anything is drawn from torch's generator."""
    q = randn(1, 8, 2, 8, grad=True)
    t = randn(8, 2, 8)
    cu = torch.tensor([0, 3, 8], dtype=torch.int32)
    calls = [
        lambda: flashattn.flash_attn_func(q, q, q, dropout_p=p),
        lambda: flashattn.flash_attn_qkvpacked_func(torch.stack([q, q, q], 2), dropout_p=p),
        lambda: flashattn.flash_attn_kvpacked_func(q, torch.stack([q, q], 2), dropout_p=p),
        lambda: flashattn.flash_attn_varlen_func(t, t, t, cu, cu, 5, 5, dropout_p=p),
        lambda: flashattn.flash_attn_varlen_qkvpacked_func(torch.stack([t, t, t], 1), cu, 5, dropout_p=p),
        lambda: flashattn.flash_attn_varlen_kvpacked_func(t, torch.stack([t, t], 1), cu, cu, 5, 5, dropout_p=p),
        lambda: flashattn.scaled_dot_product_attention(q, q, q, dropout_p=p),
        lambda: flashattn.dropout_mask(p, 1, 2, 1, 2, 3, 4),
    ]
    for call in calls:
        state = torch.get_rng_state()
        raises(ValueError, "dropout_p", call)
        assert torch.equal(torch.get_rng_state(), state)

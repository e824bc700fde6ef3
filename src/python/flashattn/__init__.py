# SPDX-License-Identifier: BSD-3-Clause
"""flashattn: exact fused softmax attention on CPUs, from Python.

Two conventions over one C library (include/flashattn.h), on CPU torch tensors:
- FlashAttention-2's interface (2.8): flash_attn_func, flash_attn_qkvpacked_func,
  flash_attn_kvpacked_func, flash_attn_varlen_func, flash_attn_varlen_qkvpacked_func,
  flash_attn_varlen_kvpacked_func, flash_attn_with_kvcache (flashattn.flash_attn_interface);
- PyTorch's: scaled_dot_product_attention (flashattn.sdpa), a one-line swap for
  torch.nn.functional.scaled_dot_product_attention.
Both are torch custom ops (flashattn::fwd, flashattn::bwd) with autograd and fake implementations,
so torch.compile(fullgraph=True) traces them. Results are bitwise identical at any thread count.
Attention dropout draws its seed and offset from torch's default generator (flashattn.dropout);
dropout_mask gives the keep mask of a (seed, offset) for a reference.

Importing flashattn loads only the C library (flashattn._C, libflashattn.so.1 beside it); torch is
imported on first use of a function that needs it. Errors of the C library are raised as
FlashAttnError subclasses (ArgumentError is also a ValueError, UnsupportedError a
NotImplementedError), with fa_last_error()'s line naming the argument.
"""

from ._C import ArgumentError, FlashAttnError, OutOfMemoryError, UnsupportedError

__version__ = "0.5.0"

_TORCH_ATTRS = {
    "flash_attn_func": "flash_attn_interface",
    "flash_attn_qkvpacked_func": "flash_attn_interface",
    "flash_attn_kvpacked_func": "flash_attn_interface",
    "flash_attn_varlen_func": "flash_attn_interface",
    "flash_attn_varlen_qkvpacked_func": "flash_attn_interface",
    "flash_attn_varlen_kvpacked_func": "flash_attn_interface",
    "flash_attn_with_kvcache": "flash_attn_interface",
    "scaled_dot_product_attention": "sdpa",
    "set_num_threads": "_ops",
    "dropout_mask": "dropout",
    "draw_dropout_seed_offset": "dropout",
    "get_num_threads": "_ops",
}

__all__ = ["ArgumentError", "FlashAttnError", "OutOfMemoryError", "UnsupportedError", "library_version",
           *_TORCH_ATTRS]


def library_version() -> str:
    """fa_version() of the C library this package loaded."""
    from ._C import version

    return version()


def __getattr__(name):
    """The torch functions, imported (with torch, registering the custom ops) on first use."""
    module = _TORCH_ATTRS.get(name)
    if module is None:
        raise AttributeError(f"module 'flashattn' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_TORCH_ATTRS))

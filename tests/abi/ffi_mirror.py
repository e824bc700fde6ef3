#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""An FFI mirror of the 0.4.0 header (tests/abi/README.md): ctypes copies of fa_tensor and fa_params
as a binding would write them, with struct_size set to the mirror's own size by fa_params_init (the
header's initialiser for structs not declared from it). One fa_forward on the problem client.c's
ffi_problem computes from C; out and lse are written to OUT, which run.sh compares with the C
client's bytes, on the normal library and on the grown one (whose fa_params is 8 bytes larger).

usage: ffi_mirror.py LIBRARY OUT    (LIBRARY: the path of libflashattn.so.N to load)
"""
import ctypes
import sys


class FaTensor(ctypes.Structure):
    """fa_tensor: frozen (never grows), so a mirror of it stays right."""
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int),
                ("batch", ctypes.c_int64), ("heads", ctypes.c_int64), ("seq", ctypes.c_int64),
                ("dim", ctypes.c_int64), ("stride_batch", ctypes.c_int64),
                ("stride_head", ctypes.c_int64), ("stride_seq", ctypes.c_int64)]


class FaParams(ctypes.Structure):
    """fa_params of 0.4.0: a later library reads the fields it lacks as their defaults."""
    _fields_ = [("struct_size", ctypes.c_size_t), ("scale", ctypes.c_double), ("causal", ctypes.c_int),
                ("window_left", ctypes.c_int64), ("window_right", ctypes.c_int64),
                ("softcap", ctypes.c_double), ("alibi_slopes", ctypes.c_void_p), ("bias", ctypes.c_void_p),
                ("sinks", ctypes.c_void_p), ("dsinks", ctypes.c_void_p), ("seqs", ctypes.c_void_p),
                ("diagonal_shift", ctypes.c_int64)]


FA_F32, FA_CAUSAL_TOP_LEFT, FA_OK = 0, 1, 0
H, N, D = 2, 19, 8  # client.c's ffi_problem


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    lib = ctypes.CDLL(sys.argv[1])
    lib.fa_params_init.argtypes = [ctypes.POINTER(FaParams), ctypes.c_size_t]
    lib.fa_params_init.restype = None
    lib.fa_tensor_bhsd.argtypes = [ctypes.c_void_p, ctypes.c_int] + [ctypes.c_int64] * 4
    lib.fa_tensor_bhsd.restype = FaTensor
    ptr = ctypes.POINTER(FaTensor)
    lib.fa_forward.argtypes = [ctypes.c_void_p, ctypes.POINTER(FaParams), ptr, ptr, ptr, ptr, ctypes.c_void_p]
    lib.fa_forward.restype = ctypes.c_int
    lib.fa_last_error.restype = ctypes.c_char_p

    n = H * N * D
    floats = ctypes.c_float * n
    # the same values as client.c, exact in double, rounded to float by the same cast
    q = floats(*[(i * 37 % 101) / 50.0 - 1.0 for i in range(n)])
    k = floats(*[(i * 53 % 97) / 48.0 - 1.0 for i in range(n)])
    v = floats(*[(i * 29 % 89) / 44.0 - 1.0 for i in range(n)])
    out, lse = floats(), (ctypes.c_float * (H * N))()
    views = [lib.fa_tensor_bhsd(ctypes.cast(x, ctypes.c_void_p), FA_F32, 1, H, N, D) for x in (q, k, v, out)]

    p = FaParams()
    lib.fa_params_init(ctypes.byref(p), ctypes.sizeof(p))
    assert p.struct_size == ctypes.sizeof(FaParams) and p.window_left == -1 and p.window_right == -1, \
        "fa_params_init did not write this mirror's defaults"
    p.scale, p.causal, p.window_left = 0.3, FA_CAUSAL_TOP_LEFT, 5
    st = lib.fa_forward(None, ctypes.byref(p), *[ctypes.byref(t) for t in views], ctypes.cast(lse, ctypes.c_void_p))
    if st != FA_OK:
        sys.exit("ffi_mirror: fa_forward: status %d: %s" % (st, lib.fa_last_error().decode()))
    with open(sys.argv[2], "wb") as f:
        f.write(bytes(out))
        f.write(bytes(lse))
    print("ffi_mirror: fa_params mirror of %d bytes, fa_forward on %s: ok" % (ctypes.sizeof(p), sys.argv[1]))


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: BSD-3-Clause
"""The package imports without torch (it is an optional dependency), loads the library it ships,
and names the torch functions only when torch is there."""

import subprocess
import sys

import flashattn


def test_import_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "import flashattn\n"
            "print(flashattn.library_version(), flashattn.__version__)\n"
            "try:\n    flashattn.flash_attn_func\nexcept ImportError as e:\n    print('ImportError', e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    version, pkg = r.stdout.split()[:2]
    assert version == pkg == flashattn.__version__
    assert "ImportError" in r.stdout


def test_library_is_the_one_in_the_package():
    from flashattn import _C

    assert _C.VERSION_NUMBER >= _C.HEADER_VERSION and _C.ABI_VERSION == 1
    maps = open("/proc/self/maps").read()
    lib = [line.split()[-1] for line in maps.splitlines() if "libflashattn.so" in line]
    assert lib and all(path.startswith(flashattn.__path__[0]) for path in lib)


def test_public_names():
    for name in ("flash_attn_func", "flash_attn_qkvpacked_func", "flash_attn_kvpacked_func", "flash_attn_varlen_func",
                 "flash_attn_varlen_qkvpacked_func", "flash_attn_varlen_kvpacked_func", "flash_attn_with_kvcache",
                 "scaled_dot_product_attention", "set_num_threads", "get_num_threads"):
        assert callable(getattr(flashattn, name)), name


def test_readme_python_block_runs_as_written():
    """The README's Python example (between its example-python markers) runs as it is written."""
    import os

    readme = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")
    lines, on = [], False
    for line in open(readme, encoding="utf-8"):
        if line.strip() == "<!-- example-python:begin -->":
            on = True
        elif line.strip() == "<!-- example-python:end -->":
            on = False
        elif on and not line.startswith("```"):
            lines.append(line)
    assert len(lines) == 3
    scope = {}
    exec(compile("".join(lines), "README.md", "exec"), scope)
    assert scope["q"].grad is not None and scope["q"].grad.shape == (2, 128, 8, 64)

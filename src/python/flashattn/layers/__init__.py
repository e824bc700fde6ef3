# SPDX-License-Identifier: BSD-3-Clause
"""Layers of FlashAttention's package that its interface and tests use (rotary embeddings)."""

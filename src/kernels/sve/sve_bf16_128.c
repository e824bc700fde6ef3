/* SPDX-License-Identifier: BSD-3-Clause */
/* The sve_bf16 set's dot and softmax at 128-bit registers (compiled with -msve-vector-bits=128 and
 * FEAT_BF16: sve_bf16.h). */
#define FA_SVE_BITS 128
#include "kernels/sve/sve_f32.h"
#include "kernels/sve/sve_bf16.h"

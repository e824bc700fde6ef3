/* SPDX-License-Identifier: BSD-3-Clause */
/* The sve_bf16 set's dot and softmax at 1024-bit registers (compiled with -msve-vector-bits=1024 and
 * FEAT_BF16: sve_bf16.h). */
#define FA_SVE_BITS 1024
#include "kernels/sve/sve_f32.h"
#include "kernels/sve/sve_bf16.h"

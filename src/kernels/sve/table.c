/* SPDX-License-Identifier: BSD-3-Clause */
/* The SVE table, once per vector length compiled (sve_tiles.h says why): each requires SVE at exactly
 * its length, and runtime/dispatch.c names the one of the calling thread's length "sve". This file is
 * plain, so nothing here runs an SVE instruction before the check. */
#include "kernels/sve/sve.h"

#define FA_SVE_TABLE(bits)                                                                                \
    const fa_kernels fa_kernels_sve##bits = {.name = "sve",                                               \
                                             .requires = FA_CPU_ASIMD | FA_CPU_SVE | FA_CPU_SVE_VL##bits, \
                                             .f32 = &fa_sve##bits##_kernels_f32,                          \
                                             .f64 = &fa_sve##bits##_kernels_f64};
FA_SVE_TABLE(128)
FA_SVE_TABLE(256)
FA_SVE_TABLE(512)

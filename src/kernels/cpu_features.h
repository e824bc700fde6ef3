/* SPDX-License-Identifier: BSD-3-Clause */
/* What this CPU and its OS run, as FA_CPU_* bits (kernels/kernels.h). */
#ifndef FA_KERNELS_CPU_FEATURES_H
#define FA_KERNELS_CPU_FEATURES_H

unsigned fa_cpu_features(void);

#endif

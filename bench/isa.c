/* SPDX-License-Identifier: BSD-3-Clause */
// FLASHATTN_ISA for fa-bench's contexts.
#include "isa.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashattn.h"

static char requested[64] = "auto";

int bench_isa_apply(const char *isa)
{
    const char *source = "--isa";
    if (isa && isa[0] && strcmp(isa, "auto") != 0) {
        if (setenv("FLASHATTN_ISA", isa, 1) != 0) {
            perror("fa-bench: setenv FLASHATTN_ISA");
            return -1;
        }
    } else if (isa) {
        unsetenv("FLASHATTN_ISA");
    }
    const char *now = getenv("FLASHATTN_ISA");
    if (!isa) source = "FLASHATTN_ISA";
    if (now && *now)
        snprintf(requested, sizeof requested, "%s (%s)", now, source);
    else
        snprintf(requested, sizeof requested, "auto");

    fa_context_opts opts = FA_CONTEXT_OPTS_INIT;
    opts.num_threads = 1;
    fa_context *ctx = NULL;
    fa_status s = fa_context_create(&ctx, &opts);
    if (s == FA_OK) {
        fa_context_destroy(ctx);
        return 0;
    }
    fprintf(stderr, "fa-bench: fa_context_create with kernel table %s failed: %s (status %d)\n", requested,
            fa_status_str(s), (int)s);
    if (s == FA_ERR_UNSUPPORTED)
        fprintf(stderr, "fa-bench: this build or this CPU lacks that table; try --isa auto or --isa ref\n");
    else if (s == FA_ERR_ARG)
        fprintf(stderr, "fa-bench: FLASHATTN_ISA (ref|avx2|avx512|avx512_bf16|amx|neon|sve) or "
                        "FLASHATTN_BIND has a value the "
                        "library does not know\n");
    return -1;
}

const char *bench_isa_requested(void)
{
    return requested;
}

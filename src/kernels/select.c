/* Chooses the kernel table once per context: the best this CPU runs, or the one FLASHATTN_ISA names. */
#include <stdlib.h>
#include <string.h>

#include "flashattn.h"
#include "kernels/kernels.h"

int fa_kernels_select(const fa_kernels **out)
{
    const char *want = getenv("FLASHATTN_ISA");
    if (!want || !*want || strcmp(want, "ref") == 0) {
        *out = &fa_kernels_ref;
        return FA_OK;
    }
    /* Names of tables that exist in the design but are not built yet: refused, not silently replaced. */
    if (strcmp(want, "avx2") == 0 || strcmp(want, "avx512") == 0) return FA_ERR_UNSUPPORTED;
    return FA_ERR_ARG;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The size-tagged structs in the fuzz target (fuzz_input.h, FZ_ABI_FIELDS): the struct an input
 * resizes, copied into a buffer of FA_STRUCT_SIZE_MAX bytes, and what include/flashattn.h's
 * reading rule (its ABI section) then lets a call return. */
#include <stdint.h>
#include <string.h>

#include "fuzz_case.h"

int fz_abi_target(const fz_case *c)
{
    const fz_input *in = &c->in;
    if (in->abi.abi < 0xC0 || c->params_null) return -1;
    const int want = (in->abi.abi >> 3) % 3;
    if (want == FZ_ABI_OPTS && in->ctx % 10 == 9 && in->fresh_isa < 0xF0)
        return FZ_ABI_OPTS; /* fresh, opts given */
    if (want == FZ_ABI_SEQS && c->params.seqs) return FZ_ABI_SEQS;
    return FZ_ABI_P;
}

void *fz_abi_resize(const fz_input *in, const void *s, size_t own, fz_struct_bytes *buf)
{
    const fz_abi_bytes *a = &in->abi;
    size_t size = own;
    memset(buf, 0, sizeof *buf);
    memcpy(buf->bytes, s, own);
    switch (a->abi % 6) {
    case 0: size = 0; break;
    case 1: size = a->abi_size % own; break;
    case 2: size = FA_STRUCT_SIZE_MAX + 1 + (size_t)a->abi_size; break;
    case 3: size = SIZE_MAX - a->abi_size; break;
    default: /* larger than this build's struct, within the bound; maybe a field it does not know */
        size = own + 1 + a->abi_size % (FA_STRUCT_SIZE_MAX - own);
        if (a->abi % 6 == 5) buf->bytes[own + a->abi_byte % (size - own)] = (unsigned char)(a->abi_value | 1);
        break;
    }
    memcpy(buf->bytes, &size, sizeof size);
    return buf->bytes;
}

fa_status fz_abi_read_status(const void *s, size_t min, size_t own)
{
    /* the header's rule: struct_size the first layout's (min) plus whole 8-byte fields, at most
     * FA_STRUCT_SIZE_MAX; then every byte past this build's struct (own) zero */
    size_t size;
    memcpy(&size, s, sizeof size);
    if (size < min || size > FA_STRUCT_SIZE_MAX || (size - min) % 8 != 0) return FA_ERR_ARG;
    const unsigned char *bytes = s;
    for (size_t at = own; at < size; at++)
        if (bytes[at]) return FA_ERR_UNSUPPORTED;
    return FA_OK;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* The transposed pack (kernels.h, pack_transposed: dst[x][r] = mult·src[r][x]) written once on the
 * vocabulary of simd/simd.h, for the aarch64 templates (neon/neon_tiles.h, sve/sve_tiles.h; the x86
 * tables keep their own files, avx2_pack.c and avx512_pack.c, whose edges are x86 masks). Defines
 * FA_ISA_NAME(_pack_transposed_), the name simd/table.h puts in the table.
 *
 * A block of FA_LANES rows × FA_LANES columns is loaded row by row (V_LOAD_PART: nothing past dim is
 * read), multiplied, transposed in registers (V_TRANSPOSE) and stored column by column (a tail store
 * where ld ends inside the block: nothing past ld is written), as avx512_pack.c does. Rows past
 * `rows` are zero vectors, the contract's padding. mult·x is one IEEE multiplication either way, so
 * the bytes are the portable loop's. */

void FA_ISA_NAME(_pack_transposed_)(int64_t rows, int64_t dim, const FA_T *src, int64_t src_stride, FA_T mult,
                                    FA_T *dst, int64_t ld)
{
    const vec m = V_SET1(mult);
    for (int64_t r0 = 0; r0 < ld; r0 += FA_LANES) {
        const int64_t in = rows - r0 < 0 ? 0 : rows - r0 < FA_LANES ? rows - r0 : FA_LANES;
        const int64_t out = ld - r0 < FA_LANES ? ld - r0 : FA_LANES;
        const vtail keep = V_TAIL(out);
        for (int64_t x0 = 0; x0 < dim; x0 += FA_LANES) {
            const int64_t w = dim - x0 < FA_LANES ? dim - x0 : FA_LANES;
            vec v[FA_LANES];
            FA_UNROLL
            for (int i = 0; i < FA_LANES; i++)
                v[i] = i < in ? V_MUL(V_LOAD_PART(src + (r0 + i) * src_stride + x0, w), m) : V_ZERO();
            V_TRANSPOSE(v);
            FA_T *d = dst + x0 * ld + r0;
            FA_UNROLL
            for (int j = 0; j < FA_LANES; j++) {
                if (j >= w) break;
                if (out == FA_LANES)
                    V_STOREU(d + j * ld, v[j]);
                else
                    V_STORE_TAIL(d + j * ld, keep, v[j]);
            }
        }
    }
}

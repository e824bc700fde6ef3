/* SPDX-License-Identifier: BSD-3-Clause */
// delta from a given out, and dq rows from given statistics, on the oracle's own definitions
// (tests/kit/reference.h: ref_sees, ref_modify, ref_load).
#include "given_out.h"

#include <math.h>

#include "dtypes.h"
#include "reference.h"

double bench_given_delta(const fa_tensor *dout, const fa_tensor *out, int64_t b, int64_t h, int64_t i)
{
    double delta = 0.0;
    for (int64_t y = 0; y < out->dim; y++)
        delta += kit_tensor_load(dout, b, h, i, y) * kit_tensor_load(out, b, h, i, y);
    return delta;
}

void bench_dq_row_stats(const fa_params *p, const fa_tensor *q, const fa_tensor *k, const fa_tensor *v,
                        const fa_tensor *dout, int64_t b, int64_t h, int64_t i, double lse, double delta,
                        double *dq_row)
{
    int64_t nq = q->seq, nk = k->seq, d = q->dim, dvd = v->dim, kvh = h / (q->heads / k->heads);
    double scale = p->scale != 0.0 ? p->scale : 1.0 / sqrt((double)d); // fa_params.scale's default
    for (int64_t x = 0; x < d; x++) dq_row[x] = 0.0;
    if (lse == -INFINITY) return; // no key with a finite score: every P_ij is 0
    for (int64_t j = 0; j < nk; j++) {
        if (!ref_sees(p, nq, nk, i, j)) continue;
        double dot = 0.0, dp = 0.0, dmod;
        for (int64_t x = 0; x < d; x++) dot += ref_load(q, b, h, i, x) * ref_load(k, b, kvh, j, x);
        double s = ref_modify(p, nq, nk, b, h, i, j, scale * dot, &dmod);
        for (int64_t y = 0; y < dvd; y++) dp += ref_load(dout, b, h, i, y) * ref_load(v, b, kvh, j, y);
        double ds = exp(s - lse) * (dp - delta) * dmod;
        for (int64_t x = 0; x < d; x++) dq_row[x] += ds * ref_load(k, b, kvh, j, x);
    }
    for (int64_t x = 0; x < d; x++) dq_row[x] *= scale;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/* A program written only against README.md and include/flashattn.h, built against an
 * installed copy of the library (through find_package and through pkg-config).
 *
 * It computes small forwards in f32 and f64 for every causal mode, with grouped-query
 * heads and Dv != D, checks them against the naive attention below, checks that a
 * 1-thread and a 4-thread context give bitwise equal out and lse, and exits non-zero
 * on any failure. */
#include <flashattn.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { B = 2, HQ = 4, HKV = 2, NQ = 37, NK = 53, D = 24, DV = 16 };

static int failures;

#define CHECK(cond, ...)                                         \
    do {                                                         \
        if (!(cond)) {                                           \
            failures++;                                          \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                        \
            fputc('\n', stderr);                                 \
        }                                                        \
    } while (0)

/* Naive attention in double, straight from the definition; q, k, v, out contiguous [B][H][S][D]. */
static void naive_attention(const double *q, const double *k, const double *v, fa_causal causal, double *out,
                            double *lse)
{
    double scale = 1.0 / sqrt((double)D), s[NK];
    for (int b = 0; b < B; b++)
        for (int h = 0; h < HQ; h++)
            for (int i = 0; i < NQ; i++) {
                const double *qi = q + ((b * HQ + h) * NQ + i) * D;
                const double *kh = k + (b * HKV + h / (HQ / HKV)) * NK * D;
                const double *vh = v + (b * HKV + h / (HQ / HKV)) * NK * DV;
                double *o = out + ((b * HQ + h) * NQ + i) * DV, m = -INFINITY, l = 0.0;
                for (int j = 0; j < NK; j++) {
                    int seen = causal == FA_CAUSAL_NONE || (causal == FA_CAUSAL_TOP_LEFT && j <= i) ||
                               (causal == FA_CAUSAL_BOTTOM_RIGHT && j <= i + NK - NQ);
                    s[j] = -INFINITY;
                    if (!seen) continue;
                    s[j] = 0.0;
                    for (int x = 0; x < D; x++) s[j] += qi[x] * kh[j * D + x];
                    s[j] *= scale;
                    m = fmax(m, s[j]);
                }
                for (int y = 0; y < DV; y++) o[y] = 0.0;
                for (int j = 0; j < NK; j++) {
                    if (s[j] == -INFINITY) continue;
                    double w = exp(s[j] - m);
                    l += w;
                    for (int y = 0; y < DV; y++) o[y] += w * vh[j * DV + y];
                }
                for (int y = 0; y < DV; y++) o[y] /= l;
                lse[(b * HQ + h) * NQ + i] = m + log(l);
            }
}

/* Runs fa_forward on ctx for dtype t; the inputs are given in double and converted. */
static fa_status run_forward(fa_context *ctx, fa_dtype t, fa_causal causal, const double *q, const double *k,
                             const double *v, void *out, void *lse)
{
    size_t es = t == FA_F64 ? sizeof(double) : sizeof(float);
    size_t nq = (size_t)B * HQ * NQ * D, nk = (size_t)B * HKV * NK * D, nv = (size_t)B * HKV * NK * DV;
    char *qb = malloc(nq * es), *kb = malloc(nk * es), *vb = malloc(nv * es);
    if (!qb || !kb || !vb) {
        free(qb), free(kb), free(vb);
        return FA_ERR_NOMEM;
    }
    for (size_t i = 0; i < nq; i++)
        t == FA_F64 ? (void)(((double *)qb)[i] = q[i]) : (void)(((float *)qb)[i] = (float)q[i]);
    for (size_t i = 0; i < nk; i++)
        t == FA_F64 ? (void)(((double *)kb)[i] = k[i]) : (void)(((float *)kb)[i] = (float)k[i]);
    for (size_t i = 0; i < nv; i++)
        t == FA_F64 ? (void)(((double *)vb)[i] = v[i]) : (void)(((float *)vb)[i] = (float)v[i]);

    fa_tensor tq = fa_tensor_bhsd(qb, t, B, HQ, NQ, D);
    fa_tensor tk = fa_tensor_bhsd(kb, t, B, HKV, NK, D);
    fa_tensor tv = fa_tensor_bhsd(vb, t, B, HKV, NK, DV);
    fa_tensor to = fa_tensor_bhsd(out, t, B, HQ, NQ, DV);
    fa_params p = FA_PARAMS_INIT;
    p.causal = causal;
    fa_status s = fa_forward(ctx, &p, &tq, &tk, &tv, &to, lse);
    free(qb), free(kb), free(vb);
    return s;
}

static double element(fa_dtype t, const void *a, size_t i)
{
    return t == FA_F64 ? ((const double *)a)[i] : (double)((const float *)a)[i];
}

int main(void)
{
    const size_t nq = (size_t)B * HQ * NQ * D, nk = (size_t)B * HKV * NK * D, nv = (size_t)B * HKV * NK * DV;
    const size_t no = (size_t)B * HQ * NQ * DV, nl = (size_t)B * HQ * NQ;
    double *q = malloc(nq * sizeof *q), *k = malloc(nk * sizeof *k), *v = malloc(nv * sizeof *v);
    double *ref = malloc(no * sizeof *ref), *ref_lse = malloc(nl * sizeof *ref_lse);
    /* Outputs for both contexts, sized for the widest dtype. */
    double *out1 = malloc(no * sizeof(double)), *out4 = malloc(no * sizeof(double));
    double *lse1 = malloc(nl * sizeof(double)), *lse4 = malloc(nl * sizeof(double));
    if (!q || !k || !v || !ref || !ref_lse || !out1 || !out4 || !lse1 || !lse4) return 2;

    unsigned long long state = 0x2545F4914F6CDD1DULL; /* fixed seed: the run is reproducible */
    double *inputs[3] = {q, k, v};
    size_t sizes[3] = {nq, nk, nv};
    for (int a = 0; a < 3; a++)
        for (size_t i = 0; i < sizes[a]; i++) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            /* uniform in [-2, 2), rounded to float so f32 and f64 runs see the same values */
            inputs[a][i] = (double)(float)(4.0 * ((double)(state >> 11) / 9007199254740992.0) - 2.0);
        }

    printf("flashattn %s (%u; header %d.%d.%d, %d; ABI version %d)\n", fa_version(), fa_version_number(),
           FLASHATTN_VERSION_MAJOR, FLASHATTN_VERSION_MINOR, FLASHATTN_VERSION_PATCH, FLASHATTN_VERSION,
           FLASHATTN_ABI_VERSION);
    /* The install's library is the header's release: the number and the text say the same. */
    char number_text[32];
    unsigned linked = fa_version_number();
    snprintf(number_text, sizeof number_text, "%u.%u.%u", linked / 10000, linked / 100 % 100, linked % 100);
    CHECK(linked == FLASHATTN_VERSION && strcmp(number_text, fa_version()) == 0,
          "fa_version_number() = %u (\"%s\"), fa_version() = \"%s\", FLASHATTN_VERSION = %d", linked,
          number_text, fa_version(), FLASHATTN_VERSION);

    fa_context *ctx1 = NULL, *ctx4 = NULL;
    fa_context_opts o1 = FA_CONTEXT_OPTS_INIT, o4 = FA_CONTEXT_OPTS_INIT;
    o1.num_threads = 1;
    o4.num_threads = 4;
    fa_status s1 = fa_context_create(&ctx1, &o1), s4 = fa_context_create(&ctx4, &o4);
    CHECK(s1 == FA_OK && s4 == FA_OK, "fa_context_create: %s / %s", fa_status_str(s1), fa_status_str(s4));
    if (failures) return 1;

    const fa_dtype dtypes[2] = {FA_F32, FA_F64};
    const fa_causal modes[3] = {FA_CAUSAL_NONE, FA_CAUSAL_TOP_LEFT, FA_CAUSAL_BOTTOM_RIGHT};
    for (int di = 0; di < 2; di++)
        for (int ci = 0; ci < 3; ci++) {
            fa_dtype t = dtypes[di];
            fa_causal c = modes[ci];
            const char *tn = t == FA_F64 ? "f64" : "f32";
            /* f64 is the exactness mode; f32 is judged with a bound well above its rounding error. */
            double tol = t == FA_F64 ? 1e-12 : 2e-5;
            size_t es = t == FA_F64 ? sizeof(double) : sizeof(float);

            naive_attention(q, k, v, c, ref, ref_lse);
            memset(out1, 0xA5, no * sizeof(double));
            memset(out4, 0x5A, no * sizeof(double));
            s1 = run_forward(ctx1, t, c, q, k, v, out1, lse1);
            s4 = run_forward(ctx4, t, c, q, k, v, out4, lse4);
            CHECK(s1 == FA_OK && s4 == FA_OK, "%s causal=%d: fa_forward: %s / %s", tn, (int)c,
                  fa_status_str(s1), fa_status_str(s4));
            if (s1 != FA_OK || s4 != FA_OK) continue;

            double err = 0.0, lse_err = 0.0;
            for (size_t i = 0; i < no; i++)
                err = fmax(err, fabs(element(t, out1, i) - ref[i]) / (1.0 + fabs(ref[i])));
            for (size_t i = 0; i < nl; i++)
                lse_err = fmax(lse_err, fabs(element(t, lse1, i) - ref_lse[i]) / (1.0 + fabs(ref_lse[i])));
            CHECK(err <= tol && lse_err <= tol, "%s causal=%d: error %.3g (lse %.3g) > %.1g", tn, (int)c, err,
                  lse_err, tol);
            CHECK(memcmp(out1, out4, no * es) == 0 && memcmp(lse1, lse4, nl * es) == 0,
                  "%s causal=%d: 1-thread and 4-thread outputs differ", tn, (int)c);
            printf("%s causal=%d: max error %.3g (lse %.3g), 1 and 4 threads bitwise equal: %s\n", tn, (int)c,
                   err, lse_err, memcmp(out1, out4, no * es) == 0 ? "yes" : "NO");
        }

    fa_stats st = FA_STATS_INIT;
    if (fa_context_stats(ctx4, &st) == FA_OK)
        printf("isa %s, threads %d, block %dx%d, scratch per thread %zu bytes (peak %zu)\n", st.isa,
               st.num_threads, st.block_q, st.block_k, st.scratch_capacity, st.scratch_peak);
    fa_context_destroy(ctx1);
    fa_context_destroy(ctx4);
    free(q), free(k), free(v), free(ref), free(ref_lse), free(out1), free(out4), free(lse1), free(lse4);
    printf("%s\n", failures ? "consumer: FAILED" : "consumer: OK");
    return failures ? 1 : 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
// Byte copies of the first verified outputs and the comparisons against them.
#include "golden.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The outputs of a problem as (name, data, size), in the order of bench_golden.copies.
typedef struct {
    const char *name;
    const void *data;
    size_t bytes;
} output_view;

static int outputs_of(const bench_problem *pb, output_view views[BENCH_GOLDEN_OUTPUTS])
{
    views[0] = (output_view){"out", pb->out.data, pb->out_bytes};
    views[1] = (output_view){"lse", pb->lse, pb->lse_bytes};
    if (!pb->has_gradients) return 2;
    views[2] = (output_view){"dq", pb->dq.data, pb->dq_bytes};
    views[3] = (output_view){"dk", pb->dk.data, pb->dk_bytes};
    views[4] = (output_view){"dv", pb->dv.data, pb->dv_bytes};
    if (!pb->dsinks) return 5;
    views[5] = (output_view){"dsinks", pb->dsinks, sizeof(float) * (size_t)pb->shape.hq};
    return 6;
}

int bench_golden_save(bench_golden *g, const bench_problem *pb, const fa_stats *st)
{
    output_view views[BENCH_GOLDEN_OUTPUTS];
    int n = outputs_of(pb, views);
    for (int i = 0; i < n; i++) {
        g->copies[i] = malloc(views[i].bytes);
        if (!g->copies[i]) {
            fprintf(stderr, "fa-bench: cannot allocate a copy of %s for the determinism check\n",
                    views[i].name);
            return -1;
        }
        memcpy(g->copies[i], views[i].data, views[i].bytes);
    }
    g->block_q = st->block_q;
    g->block_k = st->block_k;
    g->have = 1;
    return 0;
}

const char *bench_golden_first_difference(const bench_golden *g, const bench_problem *pb)
{
    output_view views[BENCH_GOLDEN_OUTPUTS];
    int n = outputs_of(pb, views);
    for (int i = 0; i < n; i++)
        if (memcmp(g->copies[i], views[i].data, views[i].bytes) != 0) return views[i].name;
    return NULL;
}

void bench_golden_free(bench_golden *g)
{
    for (int i = 0; i < BENCH_GOLDEN_OUTPUTS; i++) {
        free(g->copies[i]);
        g->copies[i] = NULL;
    }
    g->have = 0;
}

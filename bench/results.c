// Derived figures that relate the rows of one run to each other.
#include "results.h"

#include <math.h>

void bench_rows_compute_scaling(bench_row *rows, int n)
{
    double one_thread_s = NAN;
    for (int r = 0; r < n; r++) {
        if (rows[r].threads == 1) {
            one_thread_s = rows[r].timing.min_s;
            break;
        }
    }
    for (int r = 0; r < n; r++) {
        // Same shape, same run, same binding request: only the team size differs.
        rows[r].speedup = one_thread_s / rows[r].timing.min_s;
        rows[r].efficiency = rows[r].speedup / (double)rows[r].threads;
    }
}

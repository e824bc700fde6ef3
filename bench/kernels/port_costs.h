/* SPDX-License-Identifier: BSD-3-Clause */
/* What loads and broadcasts beside FMAs cost on this core: loops of the avx512 score kernel's
 * inner step (24 independent 512-bit FMAs on a 6 x 4 register block) with and without its
 * operand loads, in registers and L1 only. On a core whose load ports run beside its FMA ports
 * every variant runs at the register-only rate; where they do not (on an Intel Xeon VM,
 * every 512-bit op but a plain load took FMA-port time), the differences are the budget the
 * kernels' products cannot beat. x86 with AVX-512F only. */
#ifndef FA_BENCH_PORT_COSTS_H
#define FA_BENCH_PORT_COSTS_H

typedef enum {
    PORT_FMA_ONLY,          /* 24 FMAs, operands in registers */
    PORT_FOUR_LOADS,        /* + 4 vector loads (the query rows of one step) */
    PORT_LOADS_BROADCASTS,  /* + 4 loads and 6 broadcasts: the score kernel's step */
    PORT_EMBEDDED_BROADCAST /* 4 loads, 24 FMAs each broadcasting its key scalar from memory */
} port_variant;

#define PORT_VARIANTS 4

const char *port_variant_name(port_variant v);

/* 1 when this CPU runs the AVX-512F loops. */
int port_costs_run_here(void);

/* GFLOP/s of variant v on the calling thread, the best of `rounds` timings. */
double port_costs_gflops(port_variant v, int rounds);

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
// The inputs' generator, shared by fa-bench and fa-bench-mpi so that a seed names the same problem
// in both: splitmix64's output function as a counter-based generator (each element's value depends
// on (key, logical index) only, so a parallel or sharded fill gives the same numbers), 53-bit
// uniforms, and Box-Muller normals with two counters per element.
#ifndef BENCH_COUNTER_RNG_H
#define BENCH_COUNTER_RNG_H

#include <math.h>
#include <stdint.h>

static inline uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// Uniform in [0, 1) with 53 random bits.
static inline double unit_uniform(uint64_t key, uint64_t counter)
{
    return (double)(mix64(key + counter) >> 11) * 0x1p-53;
}

// N(0, 1) for element `index`; 1 - u keeps the log argument in (0, 1].
static inline double unit_normal(uint64_t key, uint64_t index)
{
    double u1 = 1.0 - unit_uniform(key, 2 * index);
    double u2 = unit_uniform(key, 2 * index + 1);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

#endif

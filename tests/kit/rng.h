/* SPDX-License-Identifier: BSD-3-Clause */
/* The one random number generator of the tests, the fuzz target and the benchmarks: splitmix64.
 * Sequential (kit_splitmix64: a state that advances by the golden gamma) for the suites, and
 * counter-based (kit_unit_uniform: the value of element `counter` depends on (key, counter) only)
 * for fa-bench and fa-bench-mpi, so that a parallel or sharded fill gives the same numbers and a
 * seed names the same problem in both. Header-only: bench/peers/ggml compiles it outside CMake. */
#ifndef FA_KIT_RNG_H
#define FA_KIT_RNG_H

#include <math.h>
#include <stdint.h>

/* splitmix64's output function of x + the golden gamma (Steele, Lea, Flood 2014). */
static inline uint64_t kit_mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* The next number of the sequence whose state is *state; advances it. */
static inline uint64_t kit_splitmix64(uint64_t *state)
{
    uint64_t x = *state;
    *state += 0x9e3779b97f4a7c15ull;
    return kit_mix64(x);
}

/* The top 53 bits of a draw as a double in [0, 1). */
static inline double kit_unit_from_bits(uint64_t bits)
{
    return (double)(bits >> 11) * 0x1p-53;
}

/* The key of stream `stream` of a seed: the streams of one seed (q, k, v, ...) are independent. */
static inline uint64_t kit_stream_key(uint64_t seed, uint64_t stream)
{
    return kit_mix64(seed ^ kit_mix64(stream));
}

/* Uniform in [0, 1) for element `counter` of the stream with this key. */
static inline double kit_unit_uniform(uint64_t key, uint64_t counter)
{
    return kit_unit_from_bits(kit_mix64(key + counter));
}

/* An integer uniform in 0..n-1 (n >= 1): the index-th draw of stream `stream` of a seed, floor(u·n)
 * of its kit_unit_uniform u. fa-bench's keyed lengths and page orders, and the tools that must draw
 * the batch fa-bench draws for a seed (fa-schedule, the ggml peer). */
static inline int64_t kit_keyed_below(uint64_t seed, uint64_t stream, uint64_t index, int64_t n)
{
    int64_t k = (int64_t)(kit_unit_uniform(kit_stream_key(seed, stream), index) * (double)n);
    return k < 0 ? 0 : k >= n ? n - 1 : k;
}

/* N(0, 1) for element `index` (Box-Muller on two counters); 1 - u keeps the log argument in (0, 1]. */
static inline double kit_unit_normal(uint64_t key, uint64_t index)
{
    double u1 = 1.0 - kit_unit_uniform(key, 2 * index);
    double u2 = kit_unit_uniform(key, 2 * index + 1);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

#endif

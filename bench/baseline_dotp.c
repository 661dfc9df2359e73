/*
 * Dot product (paper s.5.2) as a performance engineer writes it: one
 * parallel SIMD reduction.  OpenMP's reduction clause allows reassociation
 * even without -ffast-math (each thread and each vector lane keeps its own
 * partial sum), which is what makes the loop vectorise; axle's fold has the
 * same licence (docs/ARCHITECTURE.md, "The pipeline").  The sum is kept in f32 like the
 * Accelerate program's.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "baseline_dotp.h"

float BL(bl_dotp)(const float *restrict x, const float *restrict y, int64_t n)
{
    float s = 0;
#ifdef _OPENMP
#pragma omp parallel for simd reduction(+ : s) schedule(static)
#endif
    for (int64_t i = 0; i < n; i++) s += x[i] * y[i];
    return s;
}

/*
 * PolyBench fdtd-2d baselines: each step sets ey's first row from fict,
 * updates ey (rows 1..) and ex (columns 1..) from hz, then hz (all but
 * the last row and column) from the new ex and ey.  The serial one is the
 * suite's loops; the OpenMP one runs each update's rows i in parallel
 * inside one parallel region (the updates stay in order: the loop's
 * implicit barrier).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/baselines.h"
#include <string.h>

static void copy_in(int64_t nx, int64_t ny, const double *ex0, const double *ey0, const double *hz0, double *ex,
                    double *ey, double *hz)
{
    if (nx > 0 && ny > 0) {
        size_t bytes = sizeof *ex * (size_t)(nx * ny);
        memcpy(ex, ex0, bytes);
        memcpy(ey, ey0, bytes);
        memcpy(hz, hz0, bytes);
    }
}

void BL(pb_fdtd2d_serial)(int64_t tmax, int64_t nx, int64_t ny, const double *fict, const double *ex0,
                          const double *ey0, const double *hz0, double *ex, double *ey, double *hz)
{
    copy_in(nx, ny, ex0, ey0, hz0, ex, ey, hz);
    for (int64_t t = 0; t < tmax; t++) {
        for (int64_t j = 0; j < ny; j++) ey[j] = fict[t];
        for (int64_t i = 1; i < nx; i++)
            for (int64_t j = 0; j < ny; j++) ey[i * ny + j] = ey[i * ny + j] - 0.5 * (hz[i * ny + j] - hz[(i - 1) * ny + j]);
        for (int64_t i = 0; i < nx; i++)
            for (int64_t j = 1; j < ny; j++) ex[i * ny + j] = ex[i * ny + j] - 0.5 * (hz[i * ny + j] - hz[i * ny + j - 1]);
        for (int64_t i = 0; i < nx - 1; i++)
            for (int64_t j = 0; j < ny - 1; j++)
                hz[i * ny + j] = hz[i * ny + j] - 0.7 * (ex[i * ny + j + 1] - ex[i * ny + j] + ey[(i + 1) * ny + j] -
                                                         ey[i * ny + j]);
    }
}

void BL(pb_fdtd2d_omp)(int64_t tmax, int64_t nx, int64_t ny, const double *fict, const double *ex0,
                       const double *ey0, const double *hz0, double *ex, double *ey, double *hz)
{
    copy_in(nx, ny, ex0, ey0, hz0, ex, ey, hz);
    PB_OMP(omp parallel)
    for (int64_t t = 0; t < tmax; t++) {
        PB_OMP(omp for schedule(static))
        for (int64_t i = 0; i < nx; i++) {
            if (i == 0)
                for (int64_t j = 0; j < ny; j++) ey[j] = fict[t];
            else
                for (int64_t j = 0; j < ny; j++)
                    ey[i * ny + j] = ey[i * ny + j] - 0.5 * (hz[i * ny + j] - hz[(i - 1) * ny + j]);
            for (int64_t j = 1; j < ny; j++) ex[i * ny + j] = ex[i * ny + j] - 0.5 * (hz[i * ny + j] - hz[i * ny + j - 1]);
        }
        PB_OMP(omp for schedule(static))
        for (int64_t i = 0; i < nx - 1; i++)
            for (int64_t j = 0; j < ny - 1; j++)
                hz[i * ny + j] = hz[i * ny + j] - 0.7 * (ex[i * ny + j + 1] - ex[i * ny + j] + ey[(i + 1) * ny + j] -
                                                         ey[i * ny + j]);
    }
}

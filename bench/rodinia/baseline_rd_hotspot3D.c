/*
 * hotspot3D (Rodinia 3.1) baselines: explicit steps of the 3D thermal
 * model, a 7-point stencil whose missing neighbours at the faces are the
 * cell itself.  The serial form sums the terms in the order of Rodinia's
 * CPU version (centre, north, south, east, west, top, bottom); the OpenMP
 * form in the order of its OpenMP version (centre, west, east, south,
 * north, bottom, top) with the layers (z) shared among threads.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "rodinia/baselines.h"
#include <string.h>

void BL(rd_hotspot3D_serial) RD_HOTSPOT3D_ARGS
{
    const float cc = k[0], cn = k[1], ce = k[2], ct = k[3], sdc = k[4], amb = k[5];
    const float *src = temp;
    float *dst = iters % 2 ? out : work;
    if (iters == 0) { memcpy(out, temp, sizeof(float) * (size_t)(nz * ny * nx)); return; }
    for (int it = 0; it < iters; it++) {
        for (int64_t z = 0; z < nz; z++)
            for (int64_t y = 0; y < ny; y++)
                for (int64_t x = 0; x < nx; x++) {
                    int64_t c = x + y * nx + z * nx * ny;
                    int64_t w = x == 0 ? c : c - 1, e = x == nx - 1 ? c : c + 1;
                    int64_t n = y == 0 ? c : c - nx, s = y == ny - 1 ? c : c + nx;
                    int64_t b = z == 0 ? c : c - nx * ny, t = z == nz - 1 ? c : c + nx * ny;
                    dst[c] = src[c] * cc + src[n] * cn + src[s] * cn + src[e] * ce + src[w] * ce + src[t] * ct +
                             src[b] * ct + sdc * power[c] + ct * amb;
                }
        src = dst;
        dst = dst == out ? work : out;
    }
}

void BL(rd_hotspot3D_omp) RD_HOTSPOT3D_ARGS
{
    const float cc = k[0], cn = k[1], ce = k[2], ct = k[3], sdc = k[4], amb = k[5];
    const float *src = temp;
    float *dst = iters % 2 ? out : work;
    if (iters == 0) { memcpy(out, temp, sizeof(float) * (size_t)(nz * ny * nx)); return; }
    for (int it = 0; it < iters; it++) {
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
        for (int64_t z = 0; z < nz; z++)
            for (int64_t y = 0; y < ny; y++)
                for (int64_t x = 0; x < nx; x++) {
                    int64_t c = x + y * nx + z * nx * ny;
                    int64_t w = x == 0 ? c : c - 1, e = x == nx - 1 ? c : c + 1;
                    int64_t n = y == 0 ? c : c - nx, s = y == ny - 1 ? c : c + nx;
                    int64_t b = z == 0 ? c : c - nx * ny, t = z == nz - 1 ? c : c + nx * ny;
                    dst[c] = cc * src[c] + ce * src[w] + ce * src[e] + cn * src[s] + cn * src[n] + ct * src[b] +
                             ct * src[t] + sdc * power[c] + ct * amb;
                }
        src = dst;
        dst = dst == out ? work : out;
    }
}

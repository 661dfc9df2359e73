/*
 * lavaMD (Rodinia 3.1) baselines, in double as Rodinia's OpenMP version:
 * for every home box, its own box first and then each neighbouring box in
 * (z, y, x) order; for every particle i of the home box and j of that box,
 * the pair's potential exp(-2 alpha^2 r^2) and force added to i's.  The
 * OpenMP form shares the home boxes among the threads, as Rodinia's does.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "rodinia/baselines.h"
#include <math.h>

static void lv_box(int64_t b, int64_t np, double a2, const double *const *r, const double *q, double *const *f,
                   int64_t l)
{
    int64_t x = l % b, y = (l / b) % b, z = l / (b * b), nbr[27], nn = 0;
    nbr[nn++] = l;
    for (int64_t dz = -1; dz <= 1; dz++)
        for (int64_t dy = -1; dy <= 1; dy++)
            for (int64_t dx = -1; dx <= 1; dx++) {
                int64_t zz = z + dz, yy = y + dy, xx = x + dx;
                if ((dz || dy || dx) && zz >= 0 && zz < b && yy >= 0 && yy < b && xx >= 0 && xx < b)
                    nbr[nn++] = (zz * b + yy) * b + xx;
            }
    const double *rv = r[0], *rx = r[1], *ry = r[2], *rz = r[3];
    for (int64_t k = 0; k < nn; k++) {
        int64_t a0 = l * np, b0 = nbr[k] * np;
        for (int64_t i = a0; i < a0 + np; i++) {
            double fv = f[0][i], fx = f[1][i], fy = f[2][i], fz = f[3][i];
            for (int64_t j = b0; j < b0 + np; j++) {
                double r2 = rv[i] + rv[j] - (rx[i] * rx[j] + ry[i] * ry[j] + rz[i] * rz[j]);
                double vij = exp(-(a2 * r2)), fs = 2.0 * vij;
                fv += q[j] * vij;
                fx += q[j] * (fs * (rx[i] - rx[j]));
                fy += q[j] * (fs * (ry[i] - ry[j]));
                fz += q[j] * (fs * (rz[i] - rz[j]));
            }
            f[0][i] = fv, f[1][i] = fx, f[2][i] = fy, f[3][i] = fz;
        }
    }
}

void BL(rd_lavaMD_serial) RD_LAVAMD_ARGS
{
    for (int c = 0; c < 4; c++)
        for (int64_t i = 0; i < b * b * b * np; i++) f[c][i] = 0;
    for (int64_t l = 0; l < b * b * b; l++) lv_box(b, np, 2.0 * alpha * alpha, r, q, f, l);
}

void BL(rd_lavaMD_omp) RD_LAVAMD_ARGS
{
    for (int c = 0; c < 4; c++)
        for (int64_t i = 0; i < b * b * b * np; i++) f[c][i] = 0;
#ifdef _OPENMP
#pragma omp parallel for schedule(static)
#endif
    for (int64_t l = 0; l < b * b * b; l++) lv_box(b, np, 2.0 * alpha * alpha, r, q, f, l);
}

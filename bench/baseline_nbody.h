/*
 * The hand-written baseline of the N-body step (paper s.5.4).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_BASELINE_NBODY_H
#define AX_BASELINE_NBODY_H
#include "baseline.h"

/* One step of the all-pairs simulation of the n bodies at (x, y, z) with
 * masses m and velocities (vx, vy, vz): the softened acceleration of each
 * body i, a_i = sum_j m_j r_ij / (|r_ij|^2 + eps2)^(3/2) with r_ij = p_j -
 * p_i, then v' = v + dt a and p' = p + dt v' (semi-implicit Euler).
 * Writes p' to (ox, oy, oz) and v' to (ovx, ovy, ovz). */
BL_DECLARE(void, bl_nbody, (int64_t n, const float *x, const float *y, const float *z, const float *m,
                            const float *vx, const float *vy, const float *vz, float dt, float eps2,
                            float *ox, float *oy, float *oz, float *ovx, float *ovy, float *ovz))
#endif

/*
 * The hand-written baseline of the fluid flow step (paper s.5.6).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_BASELINE_FLUID_H
#define AX_BASELINE_FLUID_H
#include "baseline.h"

/* The constants of one step, computed once by the caller so that every
 * implementation uses the same f32 values. */
typedef struct bl_fluid_params {
    int64_t side;          /* the grid is side x side, row-major, [row][col] */
    int iters;             /* Jacobi sweeps per linear solve (at least 1) */
    float visc_a, visc_c;  /* velocity diffusion: x = (x0 + a (l+r+t+b)) / c */
    float diff_a, diff_c;  /* density diffusion */
    float hdiv;            /* divergence: hdiv * (u_r - u_l + v_b - v_t) */
    float grad;            /* u -= grad (p_r - p_l), v -= grad (p_b - p_t) */
    float dt0;             /* advection: back-trace by dt0 * velocity, in cells */
} bl_fluid_params;

/* Point sources: n of them at (row, col), each adding its values. */
typedef struct bl_fluid_sources {
    int64_t n;
    const int32_t *row, *col;
    const float *val0, *val1;   /* density: val0; velocity: (val0, val1) */
} bl_fluid_sources;

/* The number of floats of scratch memory bl_fluid needs. */
#define BL_FLUID_WORK(side) ((size_t)(side) * (size_t)(side) * 7)

/* One step of Stam's stable fluids with Jacobi relaxation and clamped
 * boundaries (examples/fluid.c says what exactly): from density d and
 * velocity (u, v) with sources ds and vs, writes the new density and
 * velocity.  work holds BL_FLUID_WORK(side) floats. */
BL_DECLARE(void, bl_fluid, (const bl_fluid_params *p, const float *d, const float *u, const float *v,
                            bl_fluid_sources ds, bl_fluid_sources vs, float *work, float *d_out,
                            float *u_out, float *v_out))
#endif

/*
 * The Rodinia 3.1 programs in axle (one file each in this folder),
 * NULL-terminated, and the small helpers their checks share (declared
 * again where they are used, as this folder has no header of its own).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include <math.h>
#include <stdio.h>

extern const ex_program ex_rd_hotspot, ex_rd_hotspot3D, ex_rd_pathfinder, ex_rd_srad, ex_rd_nn, ex_rd_backprop, ex_rd_lavaMD, ex_rd_kmeans;

const ex_program *const ex_rodinia[] = {
    &ex_rd_hotspot,
    &ex_rd_hotspot3D,
    &ex_rd_pathfinder,
    &ex_rd_srad,
    &ex_rd_nn,
    &ex_rd_backprop,
    &ex_rd_lavaMD,
    &ex_rd_kmeans,
    NULL,
};

/* The data of result array a if it has element type s and `count`
 * elements (its one component), else NULL with a reason in msg. */
const void *rd_array(const char *prog, const char *what, ax_array *a, ax_scalar s, int64_t count, char *msg,
                     size_t size)
{
    if (!a || ax_array_components(a) != 1 || ax_array_component_type(a, 0) != s || ax_array_size(a) != count) {
        snprintf(msg, size, "%s: %s: expected %lld elements of %s", prog, what, (long long)count,
                 ax_scalar_name(s));
        return NULL;
    }
    return ax_array_data(a, 0);
}

/* The largest magnitude of x[0..n). */
double rd_maxabs(const double *x, int64_t n)
{
    double m = 0;
    for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(x[i]));
    return m;
}

/* 0 if |got[i] - want[i]| <= tol for every i (want is wf, in f32, or wd,
 * in f64), else -1 with the first difference in msg. */
int rd_close(const char *prog, const char *what, const float *got, const float *wf, const double *wd, int64_t n,
             double tol, char *msg, size_t size)
{
    for (int64_t i = 0; i < n; i++) {
        double want = wf ? wf[i] : wd[i];
        if (isnan(want) && isnan(got[i])) continue;   /* both undefined (e.g. srad's 1x1 image) */
        if (!(fabs((double)got[i] - want) <= tol)) {
            snprintf(msg, size, "%s: %s[%lld]: got %.9g, expected %.9g (tolerance %.3g)", prog, what,
                     (long long)i, got[i], want, tol);
            return -1;
        }
    }
    return 0;
}

/* rd_close for f64 results. */
int rd_close64(const char *prog, const char *what, const double *got, const double *want, int64_t n, double tol,
               char *msg, size_t size)
{
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(got[i] - want[i]) <= tol)) {
            snprintf(msg, size, "%s: %s[%lld]: got %.17g, expected %.17g (tolerance %.3g)", prog, what,
                     (long long)i, got[i], want[i], tol);
            return -1;
        }
    return 0;
}

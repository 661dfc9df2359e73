/*
 * The hand-written baselines of the Rodinia 3.1 programs
 * (examples/rodinia): for each, the suite's serial loop nest (_serial) and
 * its OpenMP form (_omp), as Rodinia's openmp/ folder parallelises it,
 * written anew in C (the algorithm and loop order are Rodinia's, the code
 * is ours).  Each is built twice (bench/baseline.h's BL).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_RD_BASELINES_H
#define AX_RD_BASELINES_H
#include "baseline.h"

/* hotspot: `iters` explicit steps of the 2D thermal model on a rows x cols
 * grid; k = {Cap_1, Rx_1, Ry_1, Rz_1, amb_temp}.  temp is read, work is
 * scratch (rows*cols), the result goes to out. */
#define RD_HOTSPOT_ARGS \
    (int64_t rows, int64_t cols, int iters, const float *temp, const float *power, const float *k, float *work, \
     float *out)
BL_DECLARE(void, rd_hotspot_serial, RD_HOTSPOT_ARGS)
BL_DECLARE(void, rd_hotspot_omp, RD_HOTSPOT_ARGS)

/* hotspot3D: `iters` steps of the 3D thermal model on nz layers of ny x nx
 * cells; k = {cc, cn (= cs), ce (= cw), ct (= cb), dt/Cap, amb_temp}. */
#define RD_HOTSPOT3D_ARGS \
    (int64_t nz, int64_t ny, int64_t nx, int iters, const float *temp, const float *power, const float *k, \
     float *work, float *out)
BL_DECLARE(void, rd_hotspot3D_serial, RD_HOTSPOT3D_ARGS)
BL_DECLARE(void, rd_hotspot3D_omp, RD_HOTSPOT3D_ARGS)

/* pathfinder: the cheapest path cost down a rows x cols wall (each step to
 * the cell below or diagonally below); out gets the last row's costs,
 * work is scratch (cols). */
#define RD_PATHFINDER_ARGS (int64_t rows, int64_t cols, const int32_t *wall, int32_t *work, int32_t *out)
BL_DECLARE(void, rd_pathfinder_serial, RD_PATHFINDER_ARGS)
BL_DECLARE(void, rd_pathfinder_omp, RD_PATHFINDER_ARGS)

/* srad (v2): `iters` steps of speckle-reducing anisotropic diffusion of the
 * rows x cols image j (updated in place), the speckle statistics taken over
 * the roi x roi corner; work is scratch (5 rows cols). */
#define RD_SRAD_ARGS (int64_t rows, int64_t cols, int64_t roi, int iters, float lambda, float *j, float *work)
BL_DECLARE(void, rd_srad_serial, RD_SRAD_ARGS)
BL_DECLARE(void, rd_srad_omp, RD_SRAD_ARGS)

/* nn: the k records (lat, lng) nearest to (tlat, tlng): their distances
 * (ascending, ties by record number) to dist and record numbers to idx
 * (10000 and -1 where there are fewer than k records); z is scratch (n). */
#define RD_NN_ARGS \
    (int64_t n, const float *lat, const float *lng, float tlat, float tlng, int k, float *z, float *dist, int32_t *idx)
BL_DECLARE(void, rd_nn_serial, RD_NN_ARGS)
BL_DECLARE(void, rd_nn_omp, RD_NN_ARGS)

/* backprop: one training step of the nin-nhid-nout network (unit 0 of each
 * layer is the bias): the weights w1 ((nin+1) x (nhid+1)) and w2 ((nhid+1) x
 * (nout+1)) and their previous changes p1, p2 are updated in place;
 * `in` (nin+1, in[0] = 1) is the input, `target` (nout+1) the target. */
#define RD_BACKPROP_ARGS \
    (int64_t nin, int64_t nhid, int64_t nout, const float *in, const float *target, float *w1, float *w2, float *p1, \
     float *p2)
BL_DECLARE(void, rd_backprop_serial, RD_BACKPROP_ARGS)
BL_DECLARE(void, rd_backprop_omp, RD_BACKPROP_ARGS)

/* lavaMD: the potential and force on each of the np particles of each of
 * the b^3 boxes from the particles of its own and its (up to 26)
 * neighbouring boxes; r = {v, x, y, z} (b^3 np each, box-major, boxes
 * x fastest), q the charges; results to f = {v, x, y, z}. */
#define RD_LAVAMD_ARGS (int64_t b, int64_t np, double alpha, const double *const *r, const double *q, double *const *f)
BL_DECLARE(void, rd_lavaMD_serial, RD_LAVAMD_ARGS)
BL_DECLARE(void, rd_lavaMD_omp, RD_LAVAMD_ARGS)

/* kmeans: Lloyd's iterations over n points of nf features (row-major)
 * into k clusters, starting from the first k points, until at most
 * `threshold` memberships change (at most 501 iterations); centres (k nf)
 * and membership (n) are the results; sums (k nf) and counts (k) scratch. */
#define RD_KMEANS_ARGS \
    (int64_t n, int64_t nf, int64_t k, float threshold, const float *pts, float *centres, int32_t *membership, \
     float *sums, int32_t *counts)
BL_DECLARE(void, rd_kmeans_serial, RD_KMEANS_ARGS)
BL_DECLARE(void, rd_kmeans_omp, RD_KMEANS_ARGS)

#endif

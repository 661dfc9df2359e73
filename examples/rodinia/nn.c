/*
 * nn (Rodinia 3.1): the k nearest neighbours of a target among n hurricane
 * records, by the Euclidean distance of (latitude, longitude).  In axle:
 * the distances are one ax_map over the records (zipped with their
 * numbers); the nearest is an ax_fold of them with the (distance, number)
 * minimum, and each next one the same fold over the ax_filter of those
 * after the previous (in (distance, number) order), k times.  Result: k
 * rank-0 arrays of (distance f32, record i32), nearest first; (10000, -1)
 * (Rodinia's "open" distance) where there are fewer than k records.
 *
 * Sizes: n is the number of records (Rodinia's benchmark input: 42,764
 * records, the 4 files of its generator's 42,760 / 4 + 1, k = 5, target
 * (30, 90)).  Inputs: as Rodinia's generator draws them, latitude 7..69 plus
 * a fraction, longitude 0..357 plus a fraction, each written with one
 * decimal (so we round to one decimal), drawn with ex_rng.
 *
 * Check: against the distances in double precision: the k distances must
 * be the k smallest within 4 FLT_EPSILON of the largest distance (one f32
 * rounding in each of 5 operations), each result's record must be at the
 * distance given, and the records distinct.  Ties (one decimal makes equal
 * distances likely) may then be broken either way; the baselines are
 * compared the same way, with twice the tolerance.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include "rodinia/baselines.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define NN_K 5
#define NN_LAT 30.0f
#define NN_LNG 90.0f
#define NN_OPEN 10000.0f

typedef struct {
    int64_t n;
    float *lat, *lng, *z;
    float bl_dist[NN_K];
    int32_t bl_idx[NN_K];
    double *d, ref[NN_K];      /* every record's distance; the k smallest */
    ax_array *a_rec;
} Nn;

/* ------------------------------------------------------------ the program */

/* (distance to the target, record number) */
static ax_exp nn_distance(ax_exp rec, ax_exp i, void *env)
{
    (void)env;
    ax_exp dy = ax_sub(ax_get(rec, 0), ax_f32(NN_LAT)), dx = ax_sub(ax_get(rec, 1), ax_f32(NN_LNG));
    return ax_tuple2(ax_sqrt(ax_add(ax_mul(dy, dy), ax_mul(dx, dx))), i);
}

static ax_exp nn_number(ax_exp ix, void *env) { (void)env; return ax_cvt(ax_index_get(ix, 0), AX_I32); }

/* a before b in (distance, number) order */
static ax_exp nn_before(ax_exp a, ax_exp b)
{
    return ax_or(ax_lt(ax_get(a, 0), ax_get(b, 0)),
                 ax_and(ax_eq(ax_get(a, 0), ax_get(b, 0)), ax_lt(ax_get(a, 1), ax_get(b, 1))));
}

static ax_exp nn_nearer(ax_exp a, ax_exp b, void *env) { (void)env; return ax_cond(nn_before(a, b), a, b); }

static ax_exp nn_after(ax_exp x, void *env)
{
    return nn_before(ax_at_linear(*(ax_acc *)env, ax_i64(0)), x);
}

static ax_acc nn_build(ax_ctx *cx, void *st)
{
    Nn *s = st;
    ax_acc rec = ax_use(cx, s->a_rec);
    ax_acc dist = ax_zip_with(nn_distance, NULL, rec, ax_generate(cx, ax_shape(rec), nn_number, NULL));
    ax_acc found[NN_K];
    ax_acc prev = ax_unit(cx, ax_tuple2(ax_f32(-1), ax_i32(-1)));   /* before every record */
    for (int k = 0; k < NN_K; k++) {
        found[k] = ax_fold(nn_nearer, NULL, ax_tuple2(ax_f32(NN_OPEN), ax_i32(-1)), ax_filter(nn_after, &prev, dist));
        prev = found[k];
    }
    return ax_atuple(NN_K, found);
}

/* ------------------------------------------------------------ inputs */

static void nn_teardown(void *st)
{
    Nn *s = st;
    if (!s) return;
    ax_array_release(s->a_rec);
    free(s->lat);
    free(s->lng);
    free(s->z);
    free(s->d);
    free(s);
}

static int nn_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void *nn_setup(ax_ctx *cx, int64_t n)
{
    Nn *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->n = n;
    size_t m = (size_t)(n ? n : 1);
    s->lat = malloc(sizeof(float) * m);
    s->lng = malloc(sizeof(float) * m);
    s->z = malloc(sizeof(float) * m);
    s->d = malloc(sizeof(double) * m);
    if (!s->lat || !s->lng || !s->z || !s->d) goto fail;
    ex_rng r = {0xBF58476D1CE4E5B9ull};
    for (int64_t i = 0; i < n; i++) {
        double lat = (double)(7 + ex_next(&r) % 63) + ex_uniform(&r, 0, 1);
        double lng = (double)(ex_next(&r) % 358) + ex_uniform(&r, 0, 1);
        s->lat[i] = (float)(round(lat * 10) / 10);
        s->lng[i] = (float)(round(lng * 10) / 10);
    }
    /* The reference: every distance in double, and the k smallest. */
    for (int64_t i = 0; i < n; i++)
        s->d[i] = sqrt(((double)s->lat[i] - NN_LAT) * ((double)s->lat[i] - NN_LAT) +
                       ((double)s->lng[i] - NN_LNG) * ((double)s->lng[i] - NN_LNG));
    double *sorted = malloc(sizeof(double) * m);
    if (!sorted) goto fail;
    for (int64_t i = 0; i < n; i++) sorted[i] = s->d[i];
    qsort(sorted, (size_t)n, sizeof(double), nn_cmp_double);
    for (int k = 0; k < NN_K; k++) s->ref[k] = k < n ? sorted[k] : NN_OPEN;
    free(sorted);
    const ax_type *f = ax_type_scalar(AX_F32), *ff[2] = {f, f};
    s->a_rec = ax_array_wrap_n(cx, ax_type_tuple(cx, 2, ff), 1, &n, (void *[]){s->lat, s->lng});
    if (!s->a_rec) goto fail;
    return s;
fail:
    nn_teardown(s);
    return NULL;
}

/* ------------------------------------------------------------ checks */

/* Checks k (distance, record) pairs as the top comment says. */
static int nn_verify(const Nn *s, const float *dist, const int32_t *idx, double scale, const char *what, char *msg,
                     size_t size)
{
    double tol = scale * 4 * FLT_EPSILON * (s->ref[NN_K - 1] < NN_OPEN ? s->ref[NN_K - 1] : 400) + 1e-30;
    for (int k = 0; k < NN_K; k++) {
        int ok = fabs(dist[k] - s->ref[k]) <= tol;
        if (ok && k < s->n) ok = idx[k] >= 0 && idx[k] < s->n && fabs(dist[k] - s->d[idx[k]]) <= tol;
        if (ok && k >= s->n) ok = idx[k] == -1;
        for (int j = 0; ok && j < k && idx[k] >= 0; j++) ok = idx[j] != idx[k];
        if (!ok) {
            snprintf(msg, size, "nn: %s neighbour %d: record %d at %.9g; expected distance %.9g (tolerance %.3g)",
                     what, k, idx[k], dist[k], s->ref[k], tol);
            return -1;
        }
    }
    return 0;
}

static int nn_result(ax_array *const *res, int nres, float *dist, int32_t *idx, char *msg, size_t size)
{
    if (nres != NN_K) { snprintf(msg, size, "nn: expected %d results", NN_K); return -1; }
    for (int k = 0; k < NN_K; k++) {
        if (ax_array_size(res[k]) != 1 || ax_array_components(res[k]) != 2 ||
            ax_array_component_type(res[k], 0) != AX_F32 || ax_array_component_type(res[k], 1) != AX_I32) {
            snprintf(msg, size, "nn: result %d is not one (f32, i32)", k);
            return -1;
        }
        dist[k] = *(const float *)ax_array_data(res[k], 0);
        idx[k] = *(const int32_t *)ax_array_data(res[k], 1);
    }
    return 0;
}

static int nn_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    float dist[NN_K];
    int32_t idx[NN_K];
    if (nn_result(res, nres, dist, idx, msg, size)) return -1;
    return nn_verify(st, dist, idx, 1, "axle", msg, size);
}

static int nn_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Nn *s = st;
    float dist[NN_K];
    int32_t idx[NN_K];
    if (nn_result(res, nres, dist, idx, msg, size)) return -1;
    if (nn_verify(s, s->bl_dist, s->bl_idx, 2, "baseline", msg, size)) return -1;
    for (int k = 0; k < NN_K; k++)
        if (!(fabs(dist[k] - s->bl_dist[k]) <= 8 * FLT_EPSILON * (s->bl_dist[k] + 1))) {
            snprintf(msg, size, "nn: neighbour %d: axle %.9g (record %d), baseline %.9g (record %d)", k, dist[k],
                     idx[k], s->bl_dist[k], s->bl_idx[k]);
            return -1;
        }
    return 0;
}

static int nn_baseline(void *st, int variant)
{
    Nn *s = st;
    (variant ? rd_nn_omp_fast : rd_nn_omp_std)(s->n, s->lat, s->lng, NN_LAT, NN_LNG, NN_K, s->z, s->bl_dist, s->bl_idx);
    return 0;
}

static int nn_baseline_serial(void *st, int variant)
{
    Nn *s = st;
    (variant ? rd_nn_serial_fast : rd_nn_serial_std)(s->n, s->lat, s->lng, NN_LAT, NN_LNG, NN_K, s->z, s->bl_dist,
                                                     s->bl_idx);
    return 0;
}

const ex_program ex_rd_nn = {
    .name = "nn",
    .about = "Rodinia nn: the 5 nearest of n records to a target (a distance map, then folds of filters)",
    .default_size = 42764,
    .setup = nn_setup,
    .build = nn_build,
    .check = nn_check,
    .teardown = nn_teardown,
    .baseline = nn_baseline,
    .check_baseline = nn_check_baseline,
    .bench_size = 42764,
    .test_size = 1000,
    .extra = true,
    .suite = "rodinia",
    .baseline_serial = nn_baseline_serial,
};

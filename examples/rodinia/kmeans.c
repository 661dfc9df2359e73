/*
 * kmeans (Rodinia 3.1): Lloyd's k-means clustering of n points with 34
 * features into 5 clusters.  The first 5 points are the initial centres;
 * each iteration assigns every point to its nearest centre (squared
 * Euclidean distance, the lowest cluster on ties), counts the points whose
 * cluster changed, and moves each non-empty cluster's centre to the mean
 * of its points; it stops when at most 0.001 points changed (none), or
 * after 501 iterations (Rodinia's OpenMP bound).  Results: the centres
 * (5 x 34) and every point's cluster (i32).  In axle: an ax_awhile over
 * (iterations, changes, centres, membership); the distances a fold of a
 * zip of two replicates ([n][5][34]), the nearest an ax_fold of (distance,
 * cluster), the changes an ax_fold_all, the cluster sums and sizes
 * ax_permute with (+) into [5][34] and [5].  With fewer than 5 points
 * nothing iterates: the centres are the points there are, then zeros, and
 * every membership -1.
 *
 * Sizes: n is the number of points (Rodinia's benchmark input, kdd_cup:
 * 494,020 points of 34 features, 5 clusters, threshold 0.001).  Inputs:
 * kdd_cup is not ours to use; we draw 5 blob centres uniformly in
 * [0, 1]^34 and each point within 0.1 per feature of one of them (point i
 * < 5 in blob i, so the iterations converge to the blobs; the others in a
 * blob drawn at random), with ex_rng.  Blobs this far apart keep every
 * point far from the boundaries between clusters, so f32 rounding (sums
 * in another order) cannot move a point to another cluster.
 *
 * Check: the same iterations in double: the memberships must be equal,
 * and the centres (means of up to n points of magnitude about 1) within
 * 1e-5 + 8 FLT_EPSILON log2(n + 2) of them; twice that against the
 * baselines.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include "rodinia/baselines.h"
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

const void *rd_array(const char *prog, const char *what, ax_array *a, ax_scalar s, int64_t count, char *msg,
                     size_t size);
int rd_close(const char *prog, const char *what, const float *got, const float *wf, const double *wd, int64_t n,
             double tol, char *msg, size_t size);

#define KM_F 34
#define KM_K 5
#define KM_THRESHOLD 0.001f
#define KM_MAXITER 501

typedef struct {
    int64_t n;
    float *pts, *bl_c, *sums;
    int32_t *bl_m, *counts, *ref_m;
    double *ref_c;
    ax_array *a_pts;
} Kmeans;

/* ------------------------------------------------------------ the program */

typedef struct { ax_acc pts, centres, member, sums, counts; } KmEnv;

static ax_exp km_sqdiff(ax_exp a, ax_exp b, void *env)
{
    (void)env;
    ax_exp d = ax_sub(a, b);
    return ax_mul(d, d);
}

/* (distance, cluster) at [point][cluster] */
static ax_exp km_pair(ax_exp ix, void *env)
{
    return ax_tuple2(ax_at(*(ax_acc *)env, ix), ax_cvt(ax_index_get(ix, 1), AX_I32));
}

static ax_exp km_nearer(ax_exp a, ax_exp b, void *env)
{
    (void)env;
    ax_exp first = ax_or(ax_lt(ax_get(a, 0), ax_get(b, 0)),
                         ax_and(ax_eq(ax_get(a, 0), ax_get(b, 0)), ax_lt(ax_get(a, 1), ax_get(b, 1))));
    return ax_cond(first, a, b);
}

static ax_exp km_cluster(ax_exp p, void *env) { (void)env; return ax_get(p, 1); }
static ax_exp km_changed(ax_exp a, ax_exp b, void *env) { (void)env; return ax_cond(ax_ne(a, b), ax_f32(1), ax_f32(0)); }
static ax_exp km_one(ax_exp x, void *env) { (void)env; (void)x; return ax_i32(1); }
static ax_exp km_inc(ax_exp i, void *env) { (void)env; return ax_add(i, ax_i32(1)); }

/* point i's feature f goes to its cluster's row */
static ax_exp km_to_cluster(ax_exp ix, void *env)
{
    const KmEnv *e = env;
    return ax_ix2(ax_at(e->member, ax_ix1(ax_index_get(ix, 0))), ax_index_get(ix, 1));
}

static ax_exp km_to_count(ax_exp ix, void *env)
{
    const KmEnv *e = env;
    return ax_ix1(ax_at(e->member, ix));
}

/* the mean of a non-empty cluster, else the old centre */
static ax_exp km_mean(ax_exp ix, void *env)
{
    const KmEnv *e = env;
    ax_exp count = ax_at(e->counts, ax_ix1(ax_index_get(ix, 0)));
    return ax_cond(ax_gt(count, ax_i32(0)), ax_div(ax_at(e->sums, ix), ax_cvt(count, AX_F32)), ax_at(e->centres, ix));
}

static ax_exp km_zero_f(ax_exp ix, void *env) { (void)env; (void)ix; return ax_f32(0); }
static ax_exp km_zero_i(ax_exp ix, void *env) { (void)env; (void)ix; return ax_i32(0); }

/* continue while changes > threshold, iterations < 501 and n >= k */
static ax_exp km_more(ax_exp it, ax_exp delta, void *env)
{
    ax_exp n = *(ax_exp *)env;
    return ax_and(ax_and(ax_gt(delta, ax_f32(KM_THRESHOLD)), ax_lt(it, ax_i32(KM_MAXITER))), ax_ge(n, ax_i64(KM_K)));
}

static ax_acc km_cond(ax_acc x, void *env)
{
    const KmEnv *e = env;
    ax_exp n = ax_index_get(ax_shape(e->pts), 0);
    return ax_zip_with(km_more, &n, ax_aget(x, 0), ax_aget(x, 1));
}

static ax_acc km_body(ax_acc x, void *env)
{
    KmEnv *e = env;
    ax_ctx *cx = ax_exp_ctx(ax_shape(e->pts));
    ax_acc centres = ax_aget(x, 2), member = ax_aget(x, 3);
    ax_exp n = ax_index_get(ax_shape(e->pts), 0);
    ax_acc p3 = ax_replicate(3, (ax_slice[]){ax_all(), ax_fixed(ax_i64(KM_K)), ax_all()}, e->pts);
    ax_acc c3 = ax_replicate(3, (ax_slice[]){ax_fixed(n), ax_all(), ax_all()}, centres);
    ax_acc dist = ax_fold(ax_fn_add, NULL, ax_f32(0), ax_zip_with(km_sqdiff, NULL, p3, c3));
    ax_acc nearest = ax_fold(km_nearer, NULL, ax_tuple2(ax_f32(INFINITY), ax_i32(KM_K)),
                             ax_generate(cx, ax_shape(dist), km_pair, &dist));
    ax_acc member2 = ax_map(km_cluster, NULL, nearest);
    ax_acc delta = ax_fold_all(ax_fn_add, NULL, ax_f32(0), ax_zip_with(km_changed, NULL, member, member2));
    KmEnv m = {e->pts, centres, member2, NULL, NULL};
    m.sums = ax_permute(ax_fn_add, NULL, ax_generate(cx, ax_shape(centres), km_zero_f, NULL), km_to_cluster, &m, e->pts);
    m.counts = ax_permute(ax_fn_add, NULL, ax_generate(cx, ax_ix1(ax_i64(KM_K)), km_zero_i, NULL), km_to_count, &m,
                          ax_map(km_one, NULL, member2));
    ax_acc centres2 = ax_generate(cx, ax_shape(centres), km_mean, &m);
    return ax_atuple(4, (ax_acc[]){ax_map(km_inc, NULL, ax_aget(x, 0)), delta, centres2, member2});
}

/* the first k points, then zeros */
static ax_exp km_first(ax_exp ix, void *env)
{
    ax_acc pts = *(ax_acc *)env;
    ax_exp c = ax_index_get(ix, 0);
    return ax_cond(ax_lt(c, ax_index_get(ax_shape(pts), 0)), ax_at(pts, ix), ax_f32(0));
}

static ax_exp km_none(ax_exp ix, void *env) { (void)env; (void)ix; return ax_i32(-1); }

static ax_acc kmeans_build(ax_ctx *cx, void *st)
{
    Kmeans *s = st;
    KmEnv e = {ax_use(cx, s->a_pts), NULL, NULL, NULL, NULL};
    ax_acc centres = ax_generate(cx, ax_ix2(ax_i64(KM_K), ax_i64(KM_F)), km_first, &e.pts);
    ax_acc member = ax_generate(cx, ax_ix1(ax_index_get(ax_shape(e.pts), 0)), km_none, NULL);
    ax_acc init = ax_atuple(4, (ax_acc[]){ax_unit(cx, ax_i32(0)), ax_unit(cx, ax_f32(INFINITY)), centres, member});
    ax_acc r = ax_awhile(km_cond, km_body, &e, init);
    return ax_atuple2(ax_aget(r, 2), ax_aget(r, 3));
}

/* ------------------------------------------------------------ inputs */

static void kmeans_teardown(void *st)
{
    Kmeans *s = st;
    if (!s) return;
    ax_array_release(s->a_pts);
    free(s->pts);
    free(s->bl_c);
    free(s->sums);
    free(s->bl_m);
    free(s->counts);
    free(s->ref_m);
    free(s->ref_c);
    free(s);
}

static void *kmeans_setup(ax_ctx *cx, int64_t n)
{
    Kmeans *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->n = n;
    size_t m = (size_t)(n ? n : 1);
    s->pts = malloc(sizeof(float) * m * KM_F);
    s->bl_c = calloc(KM_K * KM_F, sizeof(float));
    s->sums = malloc(sizeof(float) * KM_K * KM_F);
    s->bl_m = calloc(m, sizeof(int32_t));
    s->counts = malloc(sizeof(int32_t) * KM_K);
    if (!s->pts || !s->bl_c || !s->sums || !s->bl_m || !s->counts) goto fail;
    ex_rng r = {0xC2B2AE3D27D4EB4Full};
    double blob[KM_K][KM_F];
    for (int c = 0; c < KM_K; c++)
        for (int f = 0; f < KM_F; f++) blob[c][f] = ex_uniform(&r, 0, 1);
    for (int64_t i = 0; i < n; i++) {
        int c = i < KM_K ? (int)i : (int)(ex_next(&r) % KM_K);
        for (int f = 0; f < KM_F; f++) s->pts[i * KM_F + f] = (float)(blob[c][f] + ex_uniform(&r, -0.1, 0.1));
    }
    int64_t shape[2] = {n, KM_F};
    s->a_pts = ax_array_wrap(cx, AX_F32, 2, shape, s->pts);
    if (!s->a_pts) goto fail;
    return s;
fail:
    kmeans_teardown(s);
    return NULL;
}

/* ------------------------------------------------------------ checks */

static int kmeans_reference(Kmeans *s)
{
    if (s->ref_c) return 0;
    int64_t n = s->n;
    s->ref_c = calloc(KM_K * KM_F, sizeof(double));
    s->ref_m = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    if (!s->ref_c || !s->ref_m) return -1;
    for (int64_t i = 0; i < KM_K * KM_F && i < n * KM_F; i++) s->ref_c[i] = s->pts[i];
    for (int64_t i = 0; i < n; i++) s->ref_m[i] = -1;
    double delta = INFINITY;
    for (int it = 0; n >= KM_K && delta > KM_THRESHOLD && it < KM_MAXITER; it++) {
        double sums[KM_K][KM_F] = {{0}};
        int64_t counts[KM_K] = {0};
        delta = 0;
        for (int64_t i = 0; i < n; i++) {
            double best = INFINITY;
            int32_t idx = 0;
            for (int c = 0; c < KM_K; c++) {
                double d = 0;
                for (int f = 0; f < KM_F; f++) d += (s->pts[i * KM_F + f] - s->ref_c[c * KM_F + f]) *
                                                   (s->pts[i * KM_F + f] - s->ref_c[c * KM_F + f]);
                if (d < best) best = d, idx = c;
            }
            delta += s->ref_m[i] != idx;
            s->ref_m[i] = idx;
            counts[idx]++;
            for (int f = 0; f < KM_F; f++) sums[idx][f] += s->pts[i * KM_F + f];
        }
        for (int c = 0; c < KM_K; c++)
            for (int f = 0; f < KM_F && counts[c]; f++) s->ref_c[c * KM_F + f] = sums[c][f] / (double)counts[c];
    }
    return 0;
}

static int kmeans_compare(Kmeans *s, ax_array *const *res, int nres, int baseline, char *msg, size_t size)
{
    if (nres != 2) { snprintf(msg, size, "kmeans: expected two results"); return -1; }
    const float *c = rd_array("kmeans", "centres", res[0], AX_F32, KM_K * KM_F, msg, size);
    const int32_t *m = c ? rd_array("kmeans", "membership", res[1], AX_I32, s->n, msg, size) : NULL;
    if (!m) return -1;
    if (kmeans_reference(s)) { snprintf(msg, size, "kmeans: out of memory"); return -1; }
    const int32_t *wm = baseline ? s->bl_m : s->ref_m;
    for (int64_t i = 0; i < s->n; i++)
        if (m[i] != wm[i]) {
            snprintf(msg, size, "kmeans: point %lld in cluster %d, %s %d", (long long)i, m[i],
                     baseline ? "baseline" : "expected", wm[i]);
            return -1;
        }
    double tol = (baseline ? 2 : 1) * (1e-5 + 8 * FLT_EPSILON * log2((double)s->n + 2));
    return rd_close("kmeans", "centres", c, baseline ? s->bl_c : NULL, s->ref_c, KM_K * KM_F, tol, msg, size);
}

static int kmeans_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    return kmeans_compare(st, res, nres, 0, msg, size);
}

static int kmeans_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    return kmeans_compare(st, res, nres, 1, msg, size);
}

static int kmeans_baseline(void *st, int variant)
{
    Kmeans *s = st;
    (variant ? rd_kmeans_omp_fast : rd_kmeans_omp_std)(s->n, KM_F, KM_K, KM_THRESHOLD, s->pts, s->bl_c, s->bl_m,
                                                       s->sums, s->counts);
    return 0;
}

static int kmeans_baseline_serial(void *st, int variant)
{
    Kmeans *s = st;
    (variant ? rd_kmeans_serial_fast : rd_kmeans_serial_std)(s->n, KM_F, KM_K, KM_THRESHOLD, s->pts, s->bl_c, s->bl_m,
                                                             s->sums, s->counts);
    return 0;
}

const ex_program ex_rd_kmeans = {
    .name = "kmeans",
    .about = "Rodinia kmeans: Lloyd's clustering, 34 features, 5 clusters (awhile of folds and permutes)",
    .default_size = 494020,
    .setup = kmeans_setup,
    .build = kmeans_build,
    .check = kmeans_check,
    .teardown = kmeans_teardown,
    .baseline = kmeans_baseline,
    .check_baseline = kmeans_check_baseline,
    .bench_size = 494020,
    .test_size = 1000,
    .extra = true,
    .suite = "rodinia",
    .baseline_serial = kmeans_baseline_serial,
};

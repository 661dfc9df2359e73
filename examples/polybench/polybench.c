/*
 * The PolyBench/C 4.2.1 kernels in axle (one file each in this folder),
 * NULL-terminated, and what they share (bench/polybench/pb_common.h): the
 * state, the checks against the plain-C reference and the baselines, and
 * the stencils' loop counter and edge rule.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/polybench.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const ex_program ex_pb_gemm, ex_pb_2mm, ex_pb_3mm, ex_pb_atax, ex_pb_bicg, ex_pb_mvt, ex_pb_gemver,
    ex_pb_gesummv, ex_pb_syrk, ex_pb_syr2k, ex_pb_doitgen, ex_pb_covariance, ex_pb_correlation,
    ex_pb_jacobi1d, ex_pb_jacobi2d, ex_pb_heat3d, ex_pb_fdtd2d, ex_pb_floyd_warshall;

const ex_program *const ex_polybench[] = {
    &ex_pb_gemm, &ex_pb_2mm, &ex_pb_3mm, &ex_pb_atax, &ex_pb_bicg, &ex_pb_mvt, &ex_pb_gemver, &ex_pb_gesummv,
    &ex_pb_syrk, &ex_pb_syr2k, &ex_pb_doitgen, &ex_pb_covariance, &ex_pb_correlation,
    &ex_pb_jacobi1d, &ex_pb_jacobi2d, &ex_pb_heat3d, &ex_pb_fdtd2d, &ex_pb_floyd_warshall,
    NULL,
};

/* ------------------------------------------------------------ the state */

pb_state *pb_new(const char *name, ax_scalar elem, int64_t n, double tol)
{
    if (n < 0) return NULL;
    pb_state *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->name = name;
    s->elem = elem;
    s->n = n;
    s->tol = tol;
    return s;
}

static int64_t shape_size(int rank, const int64_t *ext)
{
    int64_t z = 1;
    for (int d = 0; d < rank; d++) z *= ext[d];
    return z;
}

void *pb_input(pb_state *s, ax_ctx *cx, int rank, int64_t e0, int64_t e1, int64_t e2)
{
    if (s->nin == PB_MAXBUF) return NULL;
    int64_t ext[3] = {e0, e1, e2};
    ax_array *a = ax_array_new(cx, ax_type_scalar(s->elem), rank, ext);
    if (!a) return NULL;
    void *p = ax_array_data(a, 0);
    /* an empty array may have no buffer: hand out a harmless pointer */
    s->data[s->nin] = p ? p : (void *)s;
    s->in[s->nin] = a;
    return s->data[s->nin++];
}

void *pb_in(const pb_state *s, int k) { return s->data[k]; }

int pb_output(pb_state *s, int rank, int64_t e0, int64_t e1, int64_t e2)
{
    if (s->nout == PB_MAXBUF) return -1;
    pb_shape *o = &s->out[s->nout];
    o->rank = rank;
    o->ext[0] = e0;
    o->ext[1] = e1;
    o->ext[2] = e2;
    size_t bytes = ax_scalar_size(s->elem) * (size_t)shape_size(rank, o->ext);
    if (!bytes) bytes = 1;
    s->ref[s->nout] = calloc(1, bytes);
    s->bl[s->nout] = calloc(1, bytes);
    s->nout++;
    return s->ref[s->nout - 1] && s->bl[s->nout - 1] ? 0 : -1;
}

void *pb_scratch(pb_state *s, int64_t count)
{
    if (s->nwork == PB_MAXBUF) return NULL;
    void *p = calloc((size_t)(count > 0 ? count : 1), ax_scalar_size(s->elem));
    if (p) s->work[s->nwork++] = p;
    return p;
}

ax_acc pb_use(ax_ctx *cx, const pb_state *s, int k) { return ax_use(cx, s->in[k]); }

int64_t pb_dim(int64_t n, int64_t num, int64_t den) { return (n * num + den / 2) / den; }

void pb_teardown(void *st)
{
    pb_state *s = st;
    if (!s) return;
    for (int k = 0; k < s->nin; k++) ax_array_release(s->in[k]);
    for (int k = 0; k < s->nout; k++) {
        free(s->ref[k]);
        free(s->bl[k]);
    }
    for (int k = 0; k < s->nwork; k++) free(s->work[k]);
    free(s);
}

/* ------------------------------------------------------------ the checks */

static double elem_at(ax_scalar t, const void *p, int64_t i)
{
    return t == AX_I32 ? (double)((const int32_t *)p)[i] : ((const double *)p)[i];
}

/* Compares the results with want[] (see pb_common.h for the bound). */
static int compare(const pb_state *s, ax_array *const *res, int nres, void *const *want, double tol,
                   const char *against, char *msg, size_t size)
{
    if (nres != s->nout) {
        snprintf(msg, size, "%s: %d results, expected %d", s->name, nres, s->nout);
        return -1;
    }
    for (int k = 0; k < nres; k++) {
        const pb_shape *o = &s->out[k];
        if (ax_array_components(res[k]) != 1 || ax_array_component_type(res[k], 0) != s->elem ||
            ax_array_rank(res[k]) != o->rank) {
            snprintf(msg, size, "%s: result %d is not a rank-%d array of %s", s->name, k, o->rank,
                     ax_scalar_name(s->elem));
            return -1;
        }
        for (int d = 0; d < o->rank; d++)
            if (ax_array_extent(res[k], d) != o->ext[d]) {
                snprintf(msg, size, "%s: result %d has extent %lld in dimension %d, expected %lld", s->name,
                         k, (long long)ax_array_extent(res[k], d), d, (long long)o->ext[d]);
                return -1;
            }
        int64_t count = shape_size(o->rank, o->ext);
        if (!count) continue;
        const void *got = ax_array_data(res[k], 0);
        if (!got) {
            snprintf(msg, size, "%s: result %d cannot be read", s->name, k);
            return -1;
        }
        double big = 0;
        for (int64_t i = 0; i < count; i++) {
            double w = fabs(elem_at(s->elem, want[k], i));
            if (w > big && !isinf(w)) big = w;
        }
        for (int64_t i = 0; i < count; i++) {
            double g = elem_at(s->elem, got, i), w = elem_at(s->elem, want[k], i);
            if (g == w || (isnan(g) && isnan(w)) || fabs(g - w) <= tol * (fabs(w) + big)) continue;
            snprintf(msg, size, "%s: result %d, element %lld: axle %.17g, %s %.17g (tolerance %.3g)", s->name,
                     k, (long long)i, g, against, w, tol * (fabs(w) + big));
            return -1;
        }
    }
    return 0;
}

int pb_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    pb_state *s = st;
    if (!s->have_ref) {
        s->reference(s);
        s->have_ref = true;
    }
    return compare(s, res, nres, s->ref, s->tol, "reference", msg, size);
}

int pb_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    pb_state *s = st;
    return compare(s, res, nres, s->bl, 2 * s->tol, "baseline", msg, size);
}

/* ------------------------------------------------------------ stencil helpers */

static ax_exp lt_fn(ax_exp t, void *env)
{
    ax_acc steps = env;
    return ax_lt(t, ax_at(steps, ax_index(0, NULL)));
}

static ax_exp succ_fn(ax_exp t, void *env)
{
    (void)env;
    return ax_add(t, ax_i32(1));
}

ax_acc pb_count_below(ax_acc t, ax_acc steps) { return ax_map(lt_fn, steps, t); }
ax_acc pb_succ(ax_acc t) { return ax_map(succ_fn, NULL, t); }

typedef struct {
    ax_fnv f;
    ax_acc edge;
    int rank;
} Edges;

/* The stencil's function inside; on the edges, the edge array's element. */
static ax_exp interior_fn(ax_exp ix, const ax_exp *xs, void *env)
{
    const Edges *e = env;
    ax_exp sh = ax_shape(e->edge), inside = ax_bool(true);
    for (int d = 0; d < e->rank; d++) {
        ax_exp i = ax_index_get(ix, d);
        ax_exp in_d = ax_and(ax_ge(i, ax_i64(1)), ax_lt(i, ax_sub(ax_index_get(sh, d), ax_i64(1))));
        inside = ax_and(inside, in_d);
    }
    return ax_cond(inside, e->f(xs, NULL), ax_at(e->edge, ix));
}

ax_acc pb_interior_stencil(ax_fnv f, const int *size, ax_acc edge, ax_acc from)
{
    Edges e = {f, edge, ax_acc_rank(edge)};
    return ax_stencil_ix(interior_fn, &e, size, ax_clamp(), from);
}

/*
 * lavaMD (Rodinia 3.1): the potential and relocation force on particles in
 * a 3D space cut into b x b x b boxes of 100 particles; each particle
 * interacts with the particles of its own box and of the (up to 26)
 * neighbouring boxes.  For particles i and j:
 *
 *   r2 = v_i + v_j - (x_i x_j + y_i y_j + z_i z_j),  vij = exp(-2 alpha^2 r2),
 *   f_i += q_j (vij, 2 vij (x_i - x_j), 2 vij (y_i - y_j), 2 vij (z_i - z_j))
 *
 * with alpha = 0.5, in double (Rodinia's OpenMP version uses double).  In
 * axle: the particles are a [b][b][b][100] array of (v, x, y, z); an
 * ax_generate over [box][particle][27 neighbour slots][100] gives each
 * pair's term (0 for a slot outside the space), and two ax_folds sum it
 * over the neighbour's particles and over the slots.
 *
 * Sizes: n is b, the boxes per dimension (Rodinia's benchmark: 10, so
 * 100,000 particles); 100 particles per box at every size.  Inputs: as
 * Rodinia's, v, x, y, z and the charge q each (k + 1) / 10 with k uniform in
 * 0..9, drawn with ex_rng.
 *
 * Check: against a plain double loop over the same pairs, summed in
 * another order; each component is a sum of at most 2,700 terms below 2 in
 * magnitude: tolerance 1e-9 max|f| (double rounding gives about 1e-13),
 * twice that against the baselines.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include "rodinia/baselines.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

double rd_maxabs(const double *x, int64_t n);
int rd_close64(const char *prog, const char *what, const double *got, const double *want, int64_t n, double tol,
               char *msg, size_t size);

#define LV_NP 100
#define LV_ALPHA 0.5

typedef struct {
    int64_t b, n;            /* boxes per dimension; particles */
    double *r[4], *q, *bl[4], *ref[4];
    ax_array *a_r, *a_q;
} LavaMD;

/* ------------------------------------------------------------ the program */

typedef struct { ax_acc r, q; } LvEnv;

/* The term of particle (z, y, x, i) and particle j of neighbour slot s. */
static ax_exp lv_pair(ax_exp ix, void *env)
{
    const LvEnv *e = env;
    ax_exp b = ax_index_get(ax_shape(e->r), 0), s = ax_index_get(ix, 4), j = ax_index_get(ix, 5);
    ax_exp z = ax_add(ax_index_get(ix, 0), ax_sub(ax_quot(s, ax_i64(9)), ax_i64(1)));
    ax_exp y = ax_add(ax_index_get(ix, 1), ax_sub(ax_rem(ax_quot(s, ax_i64(3)), ax_i64(3)), ax_i64(1)));
    ax_exp x = ax_add(ax_index_get(ix, 2), ax_sub(ax_rem(s, ax_i64(3)), ax_i64(1)));
    ax_exp inside = ax_and(ax_and(ax_and(ax_ge(z, ax_i64(0)), ax_lt(z, b)), ax_and(ax_ge(y, ax_i64(0)), ax_lt(y, b))),
                           ax_and(ax_ge(x, ax_i64(0)), ax_lt(x, b)));
    ax_exp zero = ax_f64(0);
    ax_exp none = ax_tuple4(zero, zero, zero, zero);
    ax_exp pi = ax_at(e->r, ax_index(4, (ax_exp[]){ax_index_get(ix, 0), ax_index_get(ix, 1), ax_index_get(ix, 2),
                                                   ax_index_get(ix, 3)}));
    ax_exp jx = ax_index(4, (ax_exp[]){z, y, x, j});
    ax_exp pj = ax_at(e->r, jx), qj = ax_at(e->q, jx);
    ax_exp dot = ax_add(ax_add(ax_mul(ax_get(pi, 1), ax_get(pj, 1)), ax_mul(ax_get(pi, 2), ax_get(pj, 2))),
                        ax_mul(ax_get(pi, 3), ax_get(pj, 3)));
    ax_exp r2 = ax_sub(ax_add(ax_get(pi, 0), ax_get(pj, 0)), dot);
    ax_exp vij = ax_exp_(ax_neg(ax_mul(ax_f64(2.0 * LV_ALPHA * LV_ALPHA), r2)));
    ax_exp fs = ax_mul(ax_f64(2.0), vij);
    ax_exp term = ax_tuple4(ax_mul(qj, vij), ax_mul(qj, ax_mul(fs, ax_sub(ax_get(pi, 1), ax_get(pj, 1)))),
                            ax_mul(qj, ax_mul(fs, ax_sub(ax_get(pi, 2), ax_get(pj, 2)))),
                            ax_mul(qj, ax_mul(fs, ax_sub(ax_get(pi, 3), ax_get(pj, 3)))));
    return ax_cond(inside, term, none);
}

static ax_exp lv_add(ax_exp a, ax_exp b, void *env)
{
    (void)env;
    ax_exp c[4];
    for (int i = 0; i < 4; i++) c[i] = ax_add(ax_get(a, i), ax_get(b, i));
    return ax_tuple(4, c);
}

static ax_acc lavaMD_build(ax_ctx *cx, void *st)
{
    LavaMD *s = st;
    LvEnv e = {ax_use(cx, s->a_r), ax_use(cx, s->a_q)};
    ax_exp sh = ax_shape(e.r), np = ax_index_get(sh, 3);
    ax_exp pairs = ax_index(6, (ax_exp[]){ax_index_get(sh, 0), ax_index_get(sh, 1), ax_index_get(sh, 2), np,
                                          ax_i64(27), np});
    ax_exp zero = ax_tuple4(ax_f64(0), ax_f64(0), ax_f64(0), ax_f64(0));
    ax_acc per_slot = ax_fold(lv_add, NULL, zero, ax_generate(cx, pairs, lv_pair, &e));
    return ax_fold(lv_add, NULL, zero, per_slot);
}

/* ------------------------------------------------------------ inputs */

static void lavaMD_teardown(void *st)
{
    LavaMD *s = st;
    if (!s) return;
    ax_array_release(s->a_r);
    ax_array_release(s->a_q);
    for (int c = 0; c < 4; c++) free(s->r[c]), free(s->bl[c]), free(s->ref[c]);
    free(s->q);
    free(s);
}

static void *lavaMD_setup(ax_ctx *cx, int64_t n)
{
    LavaMD *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->b = n;
    s->n = n * n * n * LV_NP;
    size_t sz = sizeof(double) * (size_t)(s->n ? s->n : 1);
    int ok = (s->q = malloc(sz)) != NULL;
    for (int c = 0; c < 4; c++) {
        ok &= (s->r[c] = malloc(sz)) != NULL;
        ok &= (s->bl[c] = calloc(1, sz)) != NULL;
    }
    if (!ok) goto fail;
    ex_rng r = {0x369DEA0F31A53F85ull};
    for (int64_t i = 0; i < s->n; i++)
        for (int c = 0; c < 4; c++) s->r[c][i] = (double)(ex_next(&r) % 10 + 1) / 10.0;
    for (int64_t i = 0; i < s->n; i++) s->q[i] = (double)(ex_next(&r) % 10 + 1) / 10.0;
    const ax_type *f = ax_type_scalar(AX_F64), *f4[4] = {f, f, f, f};
    int64_t shape[4] = {n, n, n, LV_NP};
    s->a_r = ax_array_wrap_n(cx, ax_type_tuple(cx, 4, f4), 4, shape, (void *const *)s->r);
    s->a_q = ax_array_wrap(cx, AX_F64, 4, shape, s->q);
    if (!s->a_r || !s->a_q) goto fail;
    return s;
fail:
    lavaMD_teardown(s);
    return NULL;
}

/* ------------------------------------------------------------ checks */

static int lavaMD_reference(LavaMD *s)
{
    if (s->ref[0]) return 0;
    int64_t b = s->b;
    for (int c = 0; c < 4; c++)
        if (!(s->ref[c] = calloc((size_t)(s->n ? s->n : 1), sizeof(double)))) return -1;
    const double a2 = 2.0 * LV_ALPHA * LV_ALPHA;
    /* Every pair of particles whose boxes are at most one apart in each
     * dimension, visited particle j outermost. */
    for (int64_t j = 0; j < s->n; j++) {
        int64_t lj = j / LV_NP, xj = lj % b, yj = (lj / b) % b, zj = lj / (b * b);
        for (int64_t i = 0; i < s->n; i++) {
            int64_t li = i / LV_NP, xi = li % b, yi = (li / b) % b, zi = li / (b * b);
            if (llabs(xi - xj) > 1 || llabs(yi - yj) > 1 || llabs(zi - zj) > 1) continue;
            double r2 = s->r[0][i] + s->r[0][j] -
                        (s->r[1][i] * s->r[1][j] + s->r[2][i] * s->r[2][j] + s->r[3][i] * s->r[3][j]);
            double vij = exp(-a2 * r2);
            s->ref[0][i] += s->q[j] * vij;
            for (int c = 1; c < 4; c++) s->ref[c][i] += s->q[j] * 2 * vij * (s->r[c][i] - s->r[c][j]);
        }
    }
    return 0;
}

static int lavaMD_compare(LavaMD *s, ax_array *const *res, int nres, int baseline, char *msg, size_t size)
{
    static const char *const what[4] = {"potential", "force x", "force y", "force z"};
    if (nres != 1 || ax_array_components(res[0]) != 4 || ax_array_size(res[0]) != s->n) {
        snprintf(msg, size, "lavaMD: expected %lld (f64, f64, f64, f64)", (long long)s->n);
        return -1;
    }
    if (lavaMD_reference(s)) { snprintf(msg, size, "lavaMD: out of memory"); return -1; }
    for (int c = 0; c < 4; c++) {
        if (ax_array_component_type(res[0], c) != AX_F64) { snprintf(msg, size, "lavaMD: not f64"); return -1; }
        double tol = (baseline ? 2 : 1) * 1e-9 * rd_maxabs(s->ref[c], s->n) + 1e-300;
        if (rd_close64("lavaMD", what[c], ax_array_data(res[0], c), baseline ? s->bl[c] : s->ref[c], s->n, tol, msg,
                       size))
            return -1;
    }
    return 0;
}

static int lavaMD_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    return lavaMD_compare(st, res, nres, 0, msg, size);
}

static int lavaMD_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    return lavaMD_compare(st, res, nres, 1, msg, size);
}

static int lavaMD_baseline(void *st, int variant)
{
    LavaMD *s = st;
    (variant ? rd_lavaMD_omp_fast : rd_lavaMD_omp_std)(s->b, LV_NP, LV_ALPHA, (const double *const *)s->r, s->q, s->bl);
    return 0;
}

static int lavaMD_baseline_serial(void *st, int variant)
{
    LavaMD *s = st;
    (variant ? rd_lavaMD_serial_fast : rd_lavaMD_serial_std)(s->b, LV_NP, LV_ALPHA, (const double *const *)s->r, s->q,
                                                             s->bl);
    return 0;
}

const ex_program ex_rd_lavaMD = {
    .name = "lavaMD",
    .about = "Rodinia lavaMD: particle potentials and forces over neighbouring boxes (a rank-6 generate, two folds; f64)",
    .default_size = 10,
    .setup = lavaMD_setup,
    .build = lavaMD_build,
    .check = lavaMD_check,
    .teardown = lavaMD_teardown,
    .baseline = lavaMD_baseline,
    .check_baseline = lavaMD_check_baseline,
    .bench_size = 10,
    .test_size = 2,
    .extra = true,
    .suite = "rodinia",
    .baseline_serial = lavaMD_baseline_serial,
};

/*
 * PolyBench/C 4.2.1 syrk: C := alpha A A^T + beta C on the lower triangle
 * of C (j <= i; the upper triangle keeps its values), with A n x m and C
 * n x n, in double.  The product A A^T is the matrix product (fold (+) 0
 * of the zipWith (*) of A replicated along j and along i); a generate
 * picks, for each element, the update or the old value:
 *
 *   aat = fold (+) 0 (zipWith (*) (replicate a) (replicate a))
 *   c'  = generate (shape c) (\(i, j) -> j <= i ? beta * c!(i,j) + alpha * aat!(i,j) : c!(i,j))
 *
 * Sizes: n = N (the rows of A and C); M = n * 1000/1200 (the LARGE
 * dataset's N = 1200, M = 1000), rounded.  Initialisation as the suite's
 * (alpha 1.5, beta 1.2).  Tolerance 1e-10 (polybench.h): the suite adds
 * each scaled term into C, axle scales the sum once and may add in
 * another order.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/polybench.h"

typedef struct {
    const pb_state *s;
    ax_acc c, aat;
} Syrk;

static ax_exp lower_update(ax_exp ix, void *env)
{
    const Syrk *k = env;
    ax_exp c = ax_at(k->c, ix);
    ax_exp upd = ax_add(ax_mul(ax_f64(k->s->beta), c), ax_mul(ax_f64(k->s->alpha), ax_at(k->aat, ix)));
    return ax_cond(ax_le(ax_index_get(ix, 1), ax_index_get(ix, 0)), upd, c);
}

static ax_acc syrk_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    ax_acc c = pb_use(cx, s, 0), a = pb_use(cx, s, 1);
    ax_exp n = ax_index_get(ax_shape(a), 0);
    ax_acc rows = ax_replicate(3, (ax_slice[]){ax_all(), ax_fixed(n), ax_all()}, a);   /* [i][j][k] = a[i][k] */
    ax_acc cols = ax_replicate(3, (ax_slice[]){ax_fixed(n), ax_all(), ax_all()}, a);   /* [i][j][k] = a[j][k] */
    Syrk k = {s, c, ax_fold(ax_fn_add, NULL, ax_f64(0), ax_zip_with(ax_fn_mul, NULL, rows, cols))};
    return ax_generate(cx, ax_shape(c), lower_update, &k);
}

static void syrk_reference(pb_state *s)
{
    int64_t n = s->n, m = s->d[0];
    const double *C0 = pb_in(s, 0), *A = pb_in(s, 1);
    double *C = s->ref[0];
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t k = 0; k < m; k++) acc += A[i * m + k] * A[j * m + k];
            C[i * n + j] = j <= i ? s->beta * C0[i * n + j] + s->alpha * acc : C0[i * n + j];
        }
}

static void *syrk_setup(ax_ctx *cx, int64_t n)
{
    pb_state *s = pb_new("syrk", AX_F64, n, 1e-10);
    if (!s) return NULL;
    int64_t m = pb_dim(n, 1000, 1200);
    s->d[0] = m;
    s->alpha = 1.5;
    s->beta = 1.2;
    s->reference = syrk_reference;
    double *C = pb_input(s, cx, 2, n, n, 0), *A = pb_input(s, cx, 2, n, m, 0);
    if (!C || !A || pb_output(s, 2, n, n, 0)) {
        pb_teardown(s);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) A[i * m + j] = (double)((i * j + 1) % n) / n;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) C[i * n + j] = (double)((i * j + 2) % m) / m;
    return s;
}

static int syrk_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f) PB_SYRK_ARGS = serial ? (variant ? pb_syrk_serial_fast : pb_syrk_serial_std)
                                    : (variant ? pb_syrk_omp_fast : pb_syrk_omp_std);
    f(s->n, s->d[0], s->alpha, s->beta, pb_in(s, 0), pb_in(s, 1), s->bl[0]);
    return 0;
}
static int syrk_baseline(void *st, int variant) { return syrk_run(st, variant, false); }
static int syrk_serial(void *st, int variant) { return syrk_run(st, variant, true); }

const ex_program ex_pb_syrk = {
    .name = "syrk",
    .about = "PolyBench syrk: C := alpha A A^T + beta C on the lower triangle",
    .default_size = 30,
    .setup = syrk_setup,
    .build = syrk_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = syrk_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 1200,
    .test_size = 30,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = syrk_serial,
};

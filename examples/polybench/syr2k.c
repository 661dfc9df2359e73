/*
 * PolyBench/C 4.2.1 syr2k: C := alpha (A B^T + B A^T) + beta C on the
 * lower triangle of C (j <= i; the upper triangle keeps its values), with
 * A and B n x m and C n x n, in double.  The rows of A and B are zipped
 * into pairs, replicated along j (row i) and along i (row j), and each
 * term of the suite's sum, a_j alpha b_i + b_j alpha a_i, is made by one
 * zipWith and summed by one fold; a generate picks, for each element, the
 * update or the old value:
 *
 *   ab  = zipWith (,) a b
 *   sum = fold (+) 0 (zipWith term (replicate ab) (replicate ab))
 *   c'  = generate (shape c) (\(i, j) -> j <= i ? beta * c!(i,j) + sum!(i,j) : c!(i,j))
 *
 * Sizes: n = N (the rows of A, B, C); M = n * 1000/1200 (the LARGE
 * dataset's N = 1200, M = 1000), rounded.  Initialisation as the suite's
 * (alpha 1.5, beta 1.2).  Tolerance 1e-10 (polybench.h): the suite adds
 * each term into C, axle adds the sum once and may add in another order.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/polybench.h"

static ax_exp pair(ax_exp a, ax_exp b, void *env)
{
    (void)env;
    return ax_tuple2(a, b);
}

/* ri = (a[i][k], b[i][k]), rj = (a[j][k], b[j][k]) */
static ax_exp term(ax_exp ri, ax_exp rj, void *env)
{
    ax_exp alpha = ax_f64(((const pb_state *)env)->alpha);
    return ax_add(ax_mul(ax_mul(ax_get(rj, 0), alpha), ax_get(ri, 1)),
                  ax_mul(ax_mul(ax_get(rj, 1), alpha), ax_get(ri, 0)));
}

typedef struct {
    const pb_state *s;
    ax_acc c, sum;
} Syr2k;

static ax_exp lower_update(ax_exp ix, void *env)
{
    const Syr2k *k = env;
    ax_exp c = ax_at(k->c, ix);
    ax_exp upd = ax_add(ax_mul(ax_f64(k->s->beta), c), ax_at(k->sum, ix));
    return ax_cond(ax_le(ax_index_get(ix, 1), ax_index_get(ix, 0)), upd, c);
}

static ax_acc syr2k_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    ax_acc c = pb_use(cx, s, 0), a = pb_use(cx, s, 1), b = pb_use(cx, s, 2);
    ax_acc ab = ax_zip_with(pair, NULL, a, b);
    ax_exp n = ax_index_get(ax_shape(ab), 0);
    ax_acc rows = ax_replicate(3, (ax_slice[]){ax_all(), ax_fixed(n), ax_all()}, ab);   /* [i][j][k] = ab[i][k] */
    ax_acc cols = ax_replicate(3, (ax_slice[]){ax_fixed(n), ax_all(), ax_all()}, ab);   /* [i][j][k] = ab[j][k] */
    Syr2k k = {s, c, ax_fold(ax_fn_add, NULL, ax_f64(0), ax_zip_with(term, s, rows, cols))};
    return ax_generate(cx, ax_shape(c), lower_update, &k);
}

static void syr2k_reference(pb_state *s)
{
    int64_t n = s->n, m = s->d[0];
    const double *C0 = pb_in(s, 0), *A = pb_in(s, 1), *B = pb_in(s, 2);
    double *C = s->ref[0], alpha = s->alpha;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            double acc = 0;
            for (int64_t k = 0; k < m; k++)
                acc += A[j * m + k] * alpha * B[i * m + k] + B[j * m + k] * alpha * A[i * m + k];
            C[i * n + j] = j <= i ? s->beta * C0[i * n + j] + acc : C0[i * n + j];
        }
}

static void *syr2k_setup(ax_ctx *cx, int64_t n)
{
    pb_state *s = pb_new("syr2k", AX_F64, n, 1e-10);
    if (!s) return NULL;
    int64_t m = pb_dim(n, 1000, 1200);
    s->d[0] = m;
    s->alpha = 1.5;
    s->beta = 1.2;
    s->reference = syr2k_reference;
    double *C = pb_input(s, cx, 2, n, n, 0), *A = pb_input(s, cx, 2, n, m, 0), *B = pb_input(s, cx, 2, n, m, 0);
    if (!C || !A || !B || pb_output(s, 2, n, n, 0)) {
        pb_teardown(s);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < m; j++) {
            A[i * m + j] = (double)((i * j + 1) % n) / n;
            B[i * m + j] = (double)((i * j + 2) % m) / m;
        }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) C[i * n + j] = (double)((i * j + 3) % n) / m;
    return s;
}

static int syr2k_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f) PB_SYR2K_ARGS = serial ? (variant ? pb_syr2k_serial_fast : pb_syr2k_serial_std)
                                     : (variant ? pb_syr2k_omp_fast : pb_syr2k_omp_std);
    f(s->n, s->d[0], s->alpha, s->beta, pb_in(s, 0), pb_in(s, 1), pb_in(s, 2), s->bl[0]);
    return 0;
}
static int syr2k_baseline(void *st, int variant) { return syr2k_run(st, variant, false); }
static int syr2k_serial(void *st, int variant) { return syr2k_run(st, variant, true); }

const ex_program ex_pb_syr2k = {
    .name = "syr2k",
    .about = "PolyBench syr2k: C := alpha (A B^T + B A^T) + beta C on the lower triangle",
    .default_size = 30,
    .setup = syr2k_setup,
    .build = syr2k_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = syr2k_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 1200,
    .test_size = 30,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = syr2k_serial,
};

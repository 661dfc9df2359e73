/*
 * PolyBench/C 4.2.1 gemm: C := alpha A B + beta C, with A ni x nk, B
 * nk x nj and C ni x nj, in double.  Written as the matrix product is
 * written in Accelerate:
 *
 *   gemm alpha beta c a b = zipWith (\x y -> beta * x + alpha * y) c
 *                             (fold (+) 0 (zipWith (*) (replicate a) (replicate (transpose b))))
 *
 * where a is replicated along j and transpose b along i, so that both are
 * ni x nj x nk and the fold sums along k.  Fusion makes the fold read a
 * and b directly: no ni x nj x nk array is made.
 *
 * Sizes: n = NI; NJ = n * 1100/1000 and NK = n * 1200/1000 (the LARGE
 * dataset's NI = 1000, NJ = 1100, NK = 1200), rounded.  Initialisation as
 * the suite's (alpha 1.5, beta 1.2).  Tolerance 1e-10 (polybench.h): the
 * suite adds alpha A[i][k] B[k][j] term by term, axle scales the sum once
 * and may add in another order.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/polybench.h"

/* the matrix product of a (p x q) and b (q x r): p x r */
static ax_acc matmul(ax_acc a, ax_acc b)
{
    ax_exp p = ax_index_get(ax_shape(a), 0), r = ax_index_get(ax_shape(b), 1);
    ax_acc arep = ax_replicate(3, (ax_slice[]){ax_all(), ax_fixed(r), ax_all()}, a);
    ax_acc brep = ax_replicate(3, (ax_slice[]){ax_fixed(p), ax_all(), ax_all()}, ax_transpose(b, NULL));
    return ax_fold(ax_fn_add, NULL, ax_f64(0), ax_zip_with(ax_fn_mul, NULL, arep, brep));
}

typedef struct {
    double alpha, beta;
} Scalars;

static ax_exp combine(ax_exp c, ax_exp ab, void *env)
{
    const Scalars *k = env;
    return ax_add(ax_mul(ax_f64(k->beta), c), ax_mul(ax_f64(k->alpha), ab));
}

static ax_acc gemm_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    Scalars k = {s->alpha, s->beta};
    ax_acc c = pb_use(cx, s, 0), a = pb_use(cx, s, 1), b = pb_use(cx, s, 2);
    return ax_zip_with(combine, &k, c, matmul(a, b));
}

static void gemm_reference(pb_state *s)
{
    int64_t ni = s->n, nj = s->d[0], nk = s->d[1];
    const double *C0 = pb_in(s, 0), *A = pb_in(s, 1), *B = pb_in(s, 2);
    double *C = s->ref[0];
    for (int64_t i = 0; i < ni; i++)
        for (int64_t j = 0; j < nj; j++) {
            double acc = 0;
            for (int64_t k = 0; k < nk; k++) acc += A[i * nk + k] * B[k * nj + j];
            C[i * nj + j] = s->beta * C0[i * nj + j] + s->alpha * acc;
        }
}

static void *gemm_setup(ax_ctx *cx, int64_t n)
{
    pb_state *s = pb_new("gemm", AX_F64, n, 1e-10);
    if (!s) return NULL;
    int64_t ni = n, nj = pb_dim(n, 1100, 1000), nk = pb_dim(n, 1200, 1000);
    s->d[0] = nj;
    s->d[1] = nk;
    s->alpha = 1.5;
    s->beta = 1.2;
    s->reference = gemm_reference;
    double *C = pb_input(s, cx, 2, ni, nj, 0);
    double *A = pb_input(s, cx, 2, ni, nk, 0);
    double *B = pb_input(s, cx, 2, nk, nj, 0);
    if (!C || !A || !B || pb_output(s, 2, ni, nj, 0)) {
        pb_teardown(s);
        return NULL;
    }
    for (int64_t i = 0; i < ni; i++)
        for (int64_t j = 0; j < nj; j++) C[i * nj + j] = (double)((i * j + 1) % ni) / ni;
    for (int64_t i = 0; i < ni; i++)
        for (int64_t k = 0; k < nk; k++) A[i * nk + k] = (double)(i * (k + 1) % nk) / nk;
    for (int64_t k = 0; k < nk; k++)
        for (int64_t j = 0; j < nj; j++) B[k * nj + j] = (double)(k * (j + 2) % nj) / nj;
    return s;
}

static int gemm_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f)(int64_t, int64_t, int64_t, double, double, const double *, const double *, const double *,
              double *) = serial ? (variant ? pb_gemm_serial_fast : pb_gemm_serial_std)
                                 : (variant ? pb_gemm_omp_fast : pb_gemm_omp_std);
    f(s->n, s->d[0], s->d[1], s->alpha, s->beta, pb_in(s, 0), pb_in(s, 1), pb_in(s, 2), s->bl[0]);
    return 0;
}
static int gemm_baseline(void *st, int variant) { return gemm_run(st, variant, false); }
static int gemm_serial(void *st, int variant) { return gemm_run(st, variant, true); }

const ex_program ex_pb_gemm = {
    .name = "gemm",
    .about = "PolyBench gemm: C := alpha A B + beta C (replicate, transpose, zipWith, fold)",
    .default_size = 20,
    .setup = gemm_setup,
    .build = gemm_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = gemm_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 1000,
    .test_size = 20,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = gemm_serial,
};

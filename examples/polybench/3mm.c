/*
 * PolyBench/C 4.2.1 3mm: G := (A B)(C D), with A ni x nk, B nk x nj, C
 * nj x nm and D nm x nl, in double: three matrix products, each written
 * as Accelerate writes one (fold (+) 0 of the zipWith (*) of a replicated
 * matrix and a replicated transpose):
 *
 *   g = matmul (matmul a b) (matmul c d)
 *
 * Sizes: n = NI; NJ, NK, NL, NM = n * 900, 1000, 1100, 1200 / 800 (the
 * LARGE dataset's ratios), rounded.  Initialisation as the suite's.
 * Tolerance 1e-10 (polybench.h): axle may add in another order.
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

static ax_acc mm3_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    ax_acc a = pb_use(cx, s, 0), b = pb_use(cx, s, 1), c = pb_use(cx, s, 2), d = pb_use(cx, s, 3);
    return matmul(matmul(a, b), matmul(c, d));
}

/* X := P Q, P r x q, Q q x c */
static void product(int64_t r, int64_t c, int64_t q, const double *P, const double *Q, double *X)
{
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) {
            double acc = 0;
            for (int64_t k = 0; k < q; k++) acc += P[i * q + k] * Q[k * c + j];
            X[i * c + j] = acc;
        }
}

static void mm3_reference(pb_state *s)
{
    int64_t ni = s->n, nj = s->d[0], nk = s->d[1], nl = s->d[2], nm = s->d[3];
    double *E = s->work[0], *F = s->work[1];
    product(ni, nj, nk, pb_in(s, 0), pb_in(s, 1), E);
    product(nj, nl, nm, pb_in(s, 2), pb_in(s, 3), F);
    product(ni, nl, nj, E, F, s->ref[0]);
}

static void *mm3_setup(ax_ctx *cx, int64_t n)
{
    pb_state *s = pb_new("3mm", AX_F64, n, 1e-10);
    if (!s) return NULL;
    int64_t ni = n, nj = pb_dim(n, 900, 800), nk = pb_dim(n, 1000, 800), nl = pb_dim(n, 1100, 800),
            nm = pb_dim(n, 1200, 800);
    s->d[0] = nj;
    s->d[1] = nk;
    s->d[2] = nl;
    s->d[3] = nm;
    s->reference = mm3_reference;
    double *A = pb_input(s, cx, 2, ni, nk, 0), *B = pb_input(s, cx, 2, nk, nj, 0);
    double *C = pb_input(s, cx, 2, nj, nm, 0), *D = pb_input(s, cx, 2, nm, nl, 0);
    if (!A || !B || !C || !D || !pb_scratch(s, ni * nj) || !pb_scratch(s, nj * nl) ||
        pb_output(s, 2, ni, nl, 0)) {
        pb_teardown(s);
        return NULL;
    }
    for (int64_t i = 0; i < ni; i++)
        for (int64_t j = 0; j < nk; j++) A[i * nk + j] = (double)((i * j + 1) % ni) / (5 * ni);
    for (int64_t i = 0; i < nk; i++)
        for (int64_t j = 0; j < nj; j++) B[i * nj + j] = (double)((i * (j + 1) + 2) % nj) / (5 * nj);
    for (int64_t i = 0; i < nj; i++)
        for (int64_t j = 0; j < nm; j++) C[i * nm + j] = (double)(i * (j + 3) % nl) / (5 * nl);
    for (int64_t i = 0; i < nm; i++)
        for (int64_t j = 0; j < nl; j++) D[i * nl + j] = (double)((i * (j + 2) + 2) % nk) / (5 * nk);
    return s;
}

static int mm3_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f) PB_3MM_ARGS = serial ? (variant ? pb_3mm_serial_fast : pb_3mm_serial_std)
                                   : (variant ? pb_3mm_omp_fast : pb_3mm_omp_std);
    f(s->n, s->d[0], s->d[1], s->d[2], s->d[3], pb_in(s, 0), pb_in(s, 1), pb_in(s, 2), pb_in(s, 3), s->work[0],
      s->work[1], s->bl[0]);
    return 0;
}
static int mm3_baseline(void *st, int variant) { return mm3_run(st, variant, false); }
static int mm3_serial(void *st, int variant) { return mm3_run(st, variant, true); }

const ex_program ex_pb_3mm = {
    .name = "3mm",
    .about = "PolyBench 3mm: G := (A B)(C D) (three matrix products)",
    .default_size = 16,
    .setup = mm3_setup,
    .build = mm3_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = mm3_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 800,
    .test_size = 16,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = mm3_serial,
};

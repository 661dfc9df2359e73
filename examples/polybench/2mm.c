/*
 * PolyBench/C 4.2.1 2mm: D := alpha A B C + beta D, with A ni x nk, B
 * nk x nj, C nj x nl and D ni x nl, in double: two matrix products, each
 * written as Accelerate writes one (fold (+) 0 of the zipWith (*) of a
 * replicated matrix and a replicated transpose):
 *
 *   tmp = map (alpha *) (matmul a b)
 *   d'  = zipWith (\d t -> beta * d + t) d (matmul tmp c)
 *
 * Sizes: n = NI; NJ, NK, NL = n * 900, 1100, 1200 / 800 (the LARGE
 * dataset's ratios), rounded.  Initialisation as the suite's (alpha 1.5,
 * beta 1.2).  Tolerance 1e-10 (polybench.h): the suite scales each term
 * by alpha and adds beta D first; axle scales once and may add in another
 * order.
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

static ax_exp scale(ax_exp x, void *env) { return ax_mul(ax_f64(*(double *)env), x); }

static ax_exp combine(ax_exp d, ax_exp t, void *env) { return ax_add(ax_mul(ax_f64(*(double *)env), d), t); }

static ax_acc mm2_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    ax_acc a = pb_use(cx, s, 0), b = pb_use(cx, s, 1), c = pb_use(cx, s, 2), d = pb_use(cx, s, 3);
    ax_acc tmp = ax_map(scale, &s->alpha, matmul(a, b));
    return ax_zip_with(combine, &s->beta, d, matmul(tmp, c));
}

static void mm2_reference(pb_state *s)
{
    int64_t ni = s->n, nj = s->d[0], nk = s->d[1], nl = s->d[2];
    const double *A = pb_in(s, 0), *B = pb_in(s, 1), *C = pb_in(s, 2), *D0 = pb_in(s, 3);
    double *D = s->ref[0], *tmp = s->work[0];
    for (int64_t i = 0; i < ni; i++)
        for (int64_t j = 0; j < nj; j++) {
            double acc = 0;
            for (int64_t k = 0; k < nk; k++) acc += A[i * nk + k] * B[k * nj + j];
            tmp[i * nj + j] = s->alpha * acc;
        }
    for (int64_t i = 0; i < ni; i++)
        for (int64_t j = 0; j < nl; j++) {
            double acc = 0;
            for (int64_t k = 0; k < nj; k++) acc += tmp[i * nj + k] * C[k * nl + j];
            D[i * nl + j] = s->beta * D0[i * nl + j] + acc;
        }
}

static void *mm2_setup(ax_ctx *cx, int64_t n)
{
    pb_state *s = pb_new("2mm", AX_F64, n, 1e-10);
    if (!s) return NULL;
    int64_t ni = n, nj = pb_dim(n, 900, 800), nk = pb_dim(n, 1100, 800), nl = pb_dim(n, 1200, 800);
    s->d[0] = nj;
    s->d[1] = nk;
    s->d[2] = nl;
    s->alpha = 1.5;
    s->beta = 1.2;
    s->reference = mm2_reference;
    double *A = pb_input(s, cx, 2, ni, nk, 0), *B = pb_input(s, cx, 2, nk, nj, 0);
    double *C = pb_input(s, cx, 2, nj, nl, 0), *D = pb_input(s, cx, 2, ni, nl, 0);
    if (!A || !B || !C || !D || !pb_scratch(s, ni * nj) || pb_output(s, 2, ni, nl, 0)) {
        pb_teardown(s);
        return NULL;
    }
    for (int64_t i = 0; i < ni; i++)
        for (int64_t j = 0; j < nk; j++) A[i * nk + j] = (double)((i * j + 1) % ni) / ni;
    for (int64_t i = 0; i < nk; i++)
        for (int64_t j = 0; j < nj; j++) B[i * nj + j] = (double)(i * (j + 1) % nj) / nj;
    for (int64_t i = 0; i < nj; i++)
        for (int64_t j = 0; j < nl; j++) C[i * nl + j] = (double)((i * (j + 3) + 1) % nl) / nl;
    for (int64_t i = 0; i < ni; i++)
        for (int64_t j = 0; j < nl; j++) D[i * nl + j] = (double)(i * (j + 2) % nk) / nk;
    return s;
}

static int mm2_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f) PB_2MM_ARGS = serial ? (variant ? pb_2mm_serial_fast : pb_2mm_serial_std)
                                   : (variant ? pb_2mm_omp_fast : pb_2mm_omp_std);
    f(s->n, s->d[0], s->d[1], s->d[2], s->alpha, s->beta, pb_in(s, 0), pb_in(s, 1), pb_in(s, 2), pb_in(s, 3),
      s->work[0], s->bl[0]);
    return 0;
}
static int mm2_baseline(void *st, int variant) { return mm2_run(st, variant, false); }
static int mm2_serial(void *st, int variant) { return mm2_run(st, variant, true); }

const ex_program ex_pb_2mm = {
    .name = "2mm",
    .about = "PolyBench 2mm: D := alpha A B C + beta D (two matrix products)",
    .default_size = 16,
    .setup = mm2_setup,
    .build = mm2_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = mm2_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 800,
    .test_size = 16,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = mm2_serial,
};

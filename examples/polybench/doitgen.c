/*
 * PolyBench/C 4.2.1 doitgen (a multiresolution analysis kernel): every
 * row A[r][q][.] of the nr x nq x np array A is multiplied by the np x np
 * matrix C4, in double.  A batched matrix product in rank 4: A replicated
 * along p, C4's transpose replicated along r and q, multiplied and summed
 * along s (the innermost dimension):
 *
 *   a' = fold (+) 0 (zipWith (*) (replicate (Z:.All:.All:.np:.All) a)
 *                                (replicate (Z:.nr:.nq:.All:.All) (transpose c4)))
 *
 * Sizes: n = NR; NQ = n * 140/150 and NP = n * 160/150 (the LARGE
 * dataset's NR = 150, NQ = 140, NP = 160), rounded.  Initialisation as
 * the suite's.  Tolerance 1e-10 (polybench.h): axle may add in another
 * order.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/polybench.h"

static ax_acc doitgen_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    ax_acc a = pb_use(cx, s, 0), c4 = pb_use(cx, s, 1);
    ax_exp sh = ax_shape(a);
    ax_exp nr = ax_index_get(sh, 0), nq = ax_index_get(sh, 1), np = ax_index_get(sh, 2);
    ax_acc as = ax_replicate(4, (ax_slice[]){ax_all(), ax_all(), ax_fixed(np), ax_all()}, a);
    ax_acc cs = ax_replicate(4, (ax_slice[]){ax_fixed(nr), ax_fixed(nq), ax_all(), ax_all()},
                             ax_transpose(c4, NULL));
    return ax_fold(ax_fn_add, NULL, ax_f64(0), ax_zip_with(ax_fn_mul, NULL, as, cs));
}

static void doitgen_reference(pb_state *s)
{
    int64_t nr = s->n, nq = s->d[0], np = s->d[1];
    const double *A = pb_in(s, 0), *C4 = pb_in(s, 1);
    double *out = s->ref[0];
    for (int64_t r = 0; r < nr; r++)
        for (int64_t q = 0; q < nq; q++)
            for (int64_t p = 0; p < np; p++) {
                double acc = 0;
                for (int64_t k = 0; k < np; k++) acc += A[(r * nq + q) * np + k] * C4[k * np + p];
                out[(r * nq + q) * np + p] = acc;
            }
}

static void *doitgen_setup(ax_ctx *cx, int64_t n)
{
    pb_state *s = pb_new("doitgen", AX_F64, n, 1e-10);
    if (!s) return NULL;
    int64_t nr = n, nq = pb_dim(n, 140, 150), np = pb_dim(n, 160, 150);
    s->d[0] = nq;
    s->d[1] = np;
    s->reference = doitgen_reference;
    double *A = pb_input(s, cx, 3, nr, nq, np), *C4 = pb_input(s, cx, 2, np, np, 0);
    if (!A || !C4 || !pb_scratch(s, np) || pb_output(s, 3, nr, nq, np)) {
        pb_teardown(s);
        return NULL;
    }
    for (int64_t i = 0; i < nr; i++)
        for (int64_t j = 0; j < nq; j++)
            for (int64_t k = 0; k < np; k++) A[(i * nq + j) * np + k] = (double)((i * j + k) % np) / np;
    for (int64_t i = 0; i < np; i++)
        for (int64_t j = 0; j < np; j++) C4[i * np + j] = (double)(i * j % np) / np;
    return s;
}

static int doitgen_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f) PB_DOITGEN_ARGS = serial ? (variant ? pb_doitgen_serial_fast : pb_doitgen_serial_std)
                                       : (variant ? pb_doitgen_omp_fast : pb_doitgen_omp_std);
    f(s->n, s->d[0], s->d[1], pb_in(s, 0), pb_in(s, 1), s->work[0], s->bl[0]);
    return 0;
}
static int doitgen_baseline(void *st, int variant) { return doitgen_run(st, variant, false); }
static int doitgen_serial(void *st, int variant) { return doitgen_run(st, variant, true); }

const ex_program ex_pb_doitgen = {
    .name = "doitgen",
    .about = "PolyBench doitgen: each row of a 3D array times a matrix (rank-4 replicate, fold)",
    .default_size = 10,
    .setup = doitgen_setup,
    .build = doitgen_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = doitgen_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 150,
    .test_size = 10,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = doitgen_serial,
};

/*
 * PolyBench/C 4.2.1 floyd-warshall: all-pairs shortest paths in a graph
 * of n nodes, path[i][j] the length of the edge i -> j (999: none), in
 * the suite's default type, int (i32).  Step k shortens every path
 * through node k:
 *
 *   path' = generate (shape path) (\(i, j) -> min (path!(i,j)) (path!(i,k) + path!(k,j)))
 *
 * The steps k = 0 .. n-1 are sequential: ax_awhile over (path, k).  The
 * suite updates path in place within a step; that is the same function,
 * because row k and column k do not change during step k (path[k][k] is
 * positive).
 *
 * Sizes: n = N (LARGE: 2800).  Initialisation as the suite's.  Integers:
 * compared exactly (tolerance 0).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "polybench/polybench.h"

typedef struct {
    ax_ctx *cx;
    ax_acc path, steps;
    ax_exp k;
} Floyd;

static ax_exp relax(ax_exp ix, void *env)
{
    const Floyd *f = env;
    ax_exp i = ax_index_get(ix, 0), j = ax_index_get(ix, 1);
    ax_exp through = ax_add(ax_at(f->path, ax_ix2(i, f->k)), ax_at(f->path, ax_ix2(f->k, j)));
    return ax_min(ax_at(f->path, ix), through);
}

static ax_acc more(ax_acc st, void *env) { return pb_count_below(ax_aget(st, 1), ((Floyd *)env)->steps); }

static ax_acc step(ax_acc st, void *env)
{
    Floyd f = *(Floyd *)env;
    ax_acc k = ax_aget(st, 1);
    f.path = ax_aget(st, 0);
    f.k = ax_at(k, ax_index(0, NULL));
    return ax_atuple2(ax_generate(f.cx, ax_shape(f.path), relax, &f), pb_succ(k));
}

static ax_acc floyd_build(ax_ctx *cx, void *st)
{
    pb_state *s = st;
    Floyd f = {cx, NULL, ax_unit(cx, ax_i32((int32_t)s->n)), ax_i32(0)};
    ax_acc init = ax_atuple2(pb_use(cx, s, 0), ax_unit(cx, ax_i32(0)));
    return ax_aget(ax_awhile(more, step, &f, init), 0);
}

static void floyd_reference(pb_state *s)
{
    int64_t n = s->n;
    const int32_t *p0 = pb_in(s, 0);
    int32_t *p = s->ref[0];
    for (int64_t i = 0; i < n * n; i++) p[i] = p0[i];
    for (int64_t k = 0; k < n; k++)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) {
                int32_t through = p[i * n + k] + p[k * n + j];
                if (through < p[i * n + j]) p[i * n + j] = through;
            }
}

static void *floyd_setup(ax_ctx *cx, int64_t n)
{
    if (n > INT32_MAX) return NULL;
    pb_state *s = pb_new("floyd-warshall", AX_I32, n, 0);
    if (!s) return NULL;
    s->reference = floyd_reference;
    int32_t *path = pb_input(s, cx, 2, n, n, 0);
    if (!path || pb_output(s, 2, n, n, 0)) {
        pb_teardown(s);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
            path[i * n + j] = (int32_t)(i * j % 7 + 1);
            if ((i + j) % 13 == 0 || (i + j) % 7 == 0 || (i + j) % 11 == 0) path[i * n + j] = 999;
        }
    return s;
}

static int floyd_run(void *st, int variant, bool serial)
{
    pb_state *s = st;
    void (*f) PB_FLOYD_ARGS = serial ? (variant ? pb_floyd_serial_fast : pb_floyd_serial_std)
                                     : (variant ? pb_floyd_omp_fast : pb_floyd_omp_std);
    f(s->n, pb_in(s, 0), s->bl[0]);
    return 0;
}
static int floyd_baseline(void *st, int variant) { return floyd_run(st, variant, false); }
static int floyd_serial(void *st, int variant) { return floyd_run(st, variant, true); }

const ex_program ex_pb_floyd_warshall = {
    .name = "floyd-warshall",
    .about = "PolyBench floyd-warshall: all-pairs shortest paths (generate in awhile over k), i32",
    .default_size = 40,
    .setup = floyd_setup,
    .build = floyd_build,
    .check = pb_check,
    .teardown = pb_teardown,
    .baseline = floyd_baseline,
    .check_baseline = pb_check_baseline,
    .bench_size = 2800,
    .test_size = 40,
    .extra = true,
    .suite = "polybench",
    .baseline_serial = floyd_serial,
};

/*
 * pathfinder (Rodinia 3.1): dynamic programming over a wall of rows x cols
 * costs: going down one row at a time, a cell's cost is its wall value
 * plus the cheapest of the three cells above it (the two inside the wall at
 * an edge).  The result is the last row's costs, i32.  In axle: an
 * ax_awhile over (row, costs); each step takes the minimum of three by a
 * clamped 3-point ax_stencil (at an edge the clamp reads the cell itself,
 * which changes no minimum) and adds the next row, an ax_slice_ of the
 * wall at the loop's counter.
 *
 * Sizes: n is the number of columns (Rodinia's benchmark input: 100,000
 * columns, 100 rows); rows = n / 1000 (its ratio), at least 2.  Inputs:
 * the wall's values are uniform in 0..9, as Rodinia's rand() % 10, drawn
 * with ex_rng.  Check: exact (integers), against the plain loop here and
 * against both baselines.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include "rodinia/baselines.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const void *rd_array(const char *prog, const char *what, ax_array *a, ax_scalar s, int64_t count, char *msg,
                     size_t size);

typedef struct {
    int64_t rows, cols;
    int32_t *wall, *work, *bl, *ref;
    ax_array *a_wall;
} Pathfinder;

/* ------------------------------------------------------------ the program */

typedef struct { ax_acc wall; } PfEnv;

static ax_exp pf_min3(const ax_exp *xs, void *env)
{
    (void)env;
    return ax_min(ax_min(xs[1], xs[0]), xs[2]);
}

static ax_exp pf_inc(ax_exp i, void *env) { (void)env; return ax_add(i, ax_i64(1)); }

/* while t < rows - 1 */
static ax_exp pf_more(ax_exp t, void *env)
{
    const PfEnv *e = env;
    return ax_lt(t, ax_sub(ax_index_get(ax_shape(e->wall), 0), ax_i64(1)));
}

static ax_acc pf_cond(ax_acc x, void *env) { return ax_map(pf_more, env, ax_aget(x, 0)); }

static ax_acc pf_body(ax_acc x, void *env)
{
    static const int three[1] = {3};
    const PfEnv *e = env;
    ax_acc t = ax_aget(x, 0);
    ax_exp next = ax_add(ax_at_linear(t, ax_i64(0)), ax_i64(1));
    ax_acc row = ax_slice_(2, (ax_slice[]){ax_fixed(next), ax_all()}, e->wall);
    ax_acc cheapest = ax_stencil(pf_min3, NULL, three, ax_clamp(), ax_aget(x, 1));
    return ax_atuple2(ax_map(pf_inc, NULL, t), ax_zip_with(ax_fn_add, NULL, row, cheapest));
}

static ax_acc pathfinder_build(ax_ctx *cx, void *st)
{
    Pathfinder *s = st;
    PfEnv e = {ax_use(cx, s->a_wall)};
    ax_acc first = ax_slice_(2, (ax_slice[]){ax_fixed(ax_i64(0)), ax_all()}, e.wall);
    return ax_aget(ax_awhile(pf_cond, pf_body, &e, ax_atuple2(ax_unit(cx, ax_i64(0)), first)), 1);
}

/* ------------------------------------------------------------ inputs */

static void pathfinder_teardown(void *st)
{
    Pathfinder *s = st;
    if (!s) return;
    ax_array_release(s->a_wall);
    free(s->wall);
    free(s->work);
    free(s->bl);
    free(s->ref);
    free(s);
}

static void *pathfinder_setup(ax_ctx *cx, int64_t n)
{
    Pathfinder *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->cols = n;
    s->rows = n / 1000 > 2 ? n / 1000 : 2;
    size_t row = sizeof(int32_t) * (size_t)(n ? n : 1);
    s->wall = malloc(row * (size_t)s->rows);
    s->work = malloc(row);
    s->bl = calloc(1, row);
    s->ref = malloc(row);
    if (!s->wall || !s->work || !s->bl || !s->ref) goto fail;
    ex_rng r = {0x5851F42D4C957F2Dull};
    for (int64_t i = 0; i < s->rows * n; i++) s->wall[i] = (int32_t)(ex_next(&r) % 10);
    /* The reference: the same recurrence, one row at a time. */
    int32_t *prev = s->work;
    memcpy(s->ref, s->wall, sizeof(int32_t) * (size_t)n);
    for (int64_t t = 1; t < s->rows; t++) {
        memcpy(prev, s->ref, sizeof(int32_t) * (size_t)n);
        for (int64_t c = 0; c < n; c++) {
            int32_t m = prev[c];
            if (c > 0 && prev[c - 1] < m) m = prev[c - 1];
            if (c + 1 < n && prev[c + 1] < m) m = prev[c + 1];
            s->ref[c] = s->wall[t * n + c] + m;
        }
    }
    int64_t shape[2] = {s->rows, n};
    s->a_wall = ax_array_wrap(cx, AX_I32, 2, shape, s->wall);
    if (!s->a_wall) goto fail;
    return s;
fail:
    pathfinder_teardown(s);
    return NULL;
}

/* ------------------------------------------------------------ checks */

static int pathfinder_compare(Pathfinder *s, ax_array *const *res, int nres, const int32_t *want, const char *what,
                              char *msg, size_t size)
{
    if (nres != 1) { snprintf(msg, size, "pathfinder: expected one result"); return -1; }
    const int32_t *got = rd_array("pathfinder", "costs", res[0], AX_I32, s->cols, msg, size);
    if (!got) return -1;
    for (int64_t c = 0; c < s->cols; c++)
        if (got[c] != want[c]) {
            snprintf(msg, size, "pathfinder: cost[%lld]: got %d, %s %d", (long long)c, got[c], what, want[c]);
            return -1;
        }
    return 0;
}

static int pathfinder_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Pathfinder *s = st;
    return pathfinder_compare(s, res, nres, s->ref, "expected", msg, size);
}

static int pathfinder_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Pathfinder *s = st;
    return pathfinder_compare(s, res, nres, s->bl, "baseline", msg, size);
}

static int pathfinder_baseline(void *st, int variant)
{
    Pathfinder *s = st;
    (variant ? rd_pathfinder_omp_fast : rd_pathfinder_omp_std)(s->rows, s->cols, s->wall, s->work, s->bl);
    return 0;
}

static int pathfinder_baseline_serial(void *st, int variant)
{
    Pathfinder *s = st;
    (variant ? rd_pathfinder_serial_fast : rd_pathfinder_serial_std)(s->rows, s->cols, s->wall, s->work, s->bl);
    return 0;
}

const ex_program ex_rd_pathfinder = {
    .name = "pathfinder",
    .about = "Rodinia pathfinder: min-cost path down a wall (awhile over rows: a min stencil plus a row slice)",
    .default_size = 100000,
    .setup = pathfinder_setup,
    .build = pathfinder_build,
    .check = pathfinder_check,
    .teardown = pathfinder_teardown,
    .baseline = pathfinder_baseline,
    .check_baseline = pathfinder_check_baseline,
    .bench_size = 100000,
    .test_size = 10000,
    .extra = true,
    .suite = "rodinia",
    .baseline_serial = pathfinder_baseline_serial,
};

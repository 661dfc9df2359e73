/*
 * Histogram: the most common use of permute with a combination function.
 *
 *   histogram xs = permute (+) (fill [256] 0) (\i -> ix1 (xs ! i)) (map (const 1) xs)
 *
 * 256 bins of i32 counts over n i32 values in [0, 256) (a fixed
 * pseudo-random sequence: the same on every machine).  Exact: every
 * backend and the baseline (per-thread bins, bench/baseline_histogram.c)
 * must give the same counts as the plain C reference.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include "baseline_histogram.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NBINS = 256 };

typedef struct Hist {
    int64_t n;
    int32_t *x;
    ax_array *ax;
    int32_t want[NBINS], bl[NBINS];
    bool bl_done;
} Hist;

static void *hist_setup(ax_ctx *cx, int64_t n)
{
    Hist *h = calloc(1, sizeof *h);
    if (!h || !(h->x = malloc(sizeof *h->x * (size_t)(n > 0 ? n : 1)))) {
        free(h);
        return NULL;
    }
    h->n = n;
    uint64_t r = 0x9e3779b97f4a7c15u;
    for (int64_t i = 0; i < n; i++) {
        r ^= r << 13, r ^= r >> 7, r ^= r << 17;   /* xorshift64 */
        /* skewed, as real data is: half the values in 16 bins */
        h->x[i] = (int32_t)((r >> 40) & 1 ? (r >> 8) % 16 : (r >> 8) % NBINS);
        h->want[h->x[i]]++;
    }
    h->ax = ax_array_wrap(cx, AX_I32, 1, &h->n, h->x);
    if (!h->ax) {
        free(h->x);
        free(h);
        return NULL;
    }
    return h;
}

static ax_exp one(ax_exp x, void *env) { (void)x, (void)env; return ax_i32(1); }

static ax_exp bin_of(ax_exp ix, void *env)
{
    ax_acc xs = env;
    return ax_ix1(ax_cvt(ax_at(xs, ix), AX_I64));
}

static ax_exp zero(ax_exp ix, void *env) { (void)ix, (void)env; return ax_i32(0); }

static ax_acc hist_build(ax_ctx *cx, void *st)
{
    Hist *h = st;
    ax_acc xs = ax_use(cx, h->ax);
    ax_acc bins = ax_generate(cx, ax_ix1(ax_i64(NBINS)), zero, NULL);
    return ax_permute(ax_fn_add, NULL, bins, bin_of, xs, ax_map(one, NULL, xs));
}

static int compare(const int32_t *got, const int32_t *want, const char *what, char *msg, size_t size)
{
    for (int b = 0; b < NBINS; b++)
        if (got[b] != want[b]) {
            snprintf(msg, size, "histogram: bin %d: %s %d, expected %d", b, what, got[b], want[b]);
            return -1;
        }
    return 0;
}

static int hist_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Hist *h = st;
    if (nres != 1 || ax_array_size(res[0]) != NBINS || ax_array_component_type(res[0], 0) != AX_I32) {
        snprintf(msg, size, "histogram: expected one [i32] result of %d bins", NBINS);
        return -1;
    }
    return compare(ax_array_data(res[0], 0), h->want, "got", msg, size);
}

static int hist_baseline(void *st, int variant)
{
    Hist *h = st;
    h->bl_done = false;
    if ((variant ? bl_histogram_fast : bl_histogram_std)(h->x, h->n, h->bl, NBINS)) return -1;
    h->bl_done = true;
    return 0;
}

static int hist_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Hist *h = st;
    if (!h->bl_done) {
        snprintf(msg, size, "histogram: the baseline has not run");
        return -1;
    }
    if (hist_check(st, res, nres, msg, size)) return -1;
    return compare(h->bl, h->want, "the baseline has", msg, size);
}

static void hist_teardown(void *st)
{
    Hist *h = st;
    if (!h) return;
    ax_array_release(h->ax);
    free(h->x);
    free(h);
}

const ex_program ex_prog_histogram = {
    .name = "histogram",
    .about = "256-bin histogram of i32 values: permute (+) into a small target",
    .default_size = 1000000,
    .setup = hist_setup,
    .build = hist_build,
    .check = hist_check,
    .teardown = hist_teardown,
    .baseline = hist_baseline,
    .check_baseline = hist_check_baseline,
    .bench_size = 10000000,
    .test_size = 100000,
    .extra = true,
};

/*
 * Radix sort (paper s.5.8): Blelloch's split-based least-significant-digit
 * radix sort of signed 32-bit integers, as the Accelerate program writes
 * it.  One pass per bit, 32 passes; each pass is a stable split of the
 * array by that bit (Blelloch, "Vector models for data-parallel
 * computing", s.3.4.1):
 *
 *   radixPass k v = let flags          = map (radix k) v
 *                       (down, total)  = scanl' (+) 0 (map (1 -) flags)
 *                       index ix       = flags!ix == 0 ? down!ix
 *                                                      : ix - down!ix + total
 *                   in permute const v index v
 *
 * An element whose bit is 0 goes to the number of 0s before it; one whose
 * bit is 1 goes after all the 0s, to (total 0s) + (number of 1s before it).
 * Signed order: the last pass (the sign bit) uses the inverted bit, so that
 * negative numbers come first (Accelerate's radixOfSigned flips the sign
 * bit in the same way).
 *
 * The passes run inside ax_awhile over the pair (v, k): the body is built
 * once, as the Haskell program's `foldr1 (>->)` pipeline builds each pass as
 * a closed function.  Unrolling 32 passes in a C loop would also work with
 * sharing recovery, but without it the tree would unfold exponentially in
 * the number of passes (each pass reads v three times).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "radixsort.h"
#include "baseline_radixsort.h"
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The bit of x that pass k splits on (i32, 0 or 1). */
static ax_exp radix(ax_exp k, ax_exp x)
{
    ax_exp bit = ax_band(ax_shr(x, k), ax_i32(1));
    return ax_cond(ax_eq(k, ax_i32(31)), ax_sub(ax_i32(1), bit), bit);
}

/* What one pass's functions read: its number, and (for the index
 * function) the arrays it indexes. */
typedef struct {
    ax_exp k;
    ax_acc flags, down, total;
} Pass;

static ax_exp radix_fn(ax_exp x, void *env) { return radix(((Pass *)env)->k, x); }
static ax_exp not_fn(ax_exp b, void *env) { (void)env; return ax_sub(ax_i32(1), b); }

/* Blelloch's split index of element ix. */
static ax_exp split_index(ax_exp ix, void *env)
{
    Pass *p = env;
    ax_exp i = ax_index_get(ix, 0);
    ax_exp d = ax_cvt(ax_at(p->down, ix), AX_I64);
    ax_exp total = ax_cvt(ax_at(p->total, ax_index(0, NULL)), AX_I64);
    return ax_ix1(ax_cond(ax_eq(ax_at(p->flags, ix), ax_i32(0)), d, ax_add(ax_sub(i, d), total)));
}

/* the (v, k) state: k is a rank-0 i32 array, the pass number */
static ax_exp the(ax_acc unit) { return ax_at(unit, ax_index(0, NULL)); }

static ax_exp below32(ax_exp k, void *env) { (void)env; return ax_lt(k, ax_i32(32)); }
static ax_exp succ(ax_exp k, void *env) { (void)env; return ax_add(k, ax_i32(1)); }

static ax_acc more_passes(ax_acc st, void *env) { return ax_map(below32, env, ax_aget(st, 1)); }

static ax_acc radix_pass(ax_acc st, void *env)
{
    (void)env;
    ax_acc v = ax_aget(st, 0), karr = ax_aget(st, 1);
    Pass p = {the(karr), NULL, NULL, NULL};
    p.flags = ax_map(radix_fn, &p, v);
    ax_acc scan = ax_scanl_ex(ax_fn_add, NULL, ax_i32(0), ax_map(not_fn, NULL, p.flags));
    p.down = ax_aget(scan, 0);
    p.total = ax_aget(scan, 1);
    ax_acc sorted = ax_permute(ax_fn_fst, NULL, v, split_index, &p, v);
    return ax_atuple2(sorted, ax_map(succ, NULL, karr));
}

/* sort v: 32 split passes, bit 0 first. */
ax_acc ex_radixsort(ax_ctx *cx, ax_acc v)
{
    ax_acc init = ax_atuple2(v, ax_unit(cx, ax_i32(0)));
    return ax_aget(ax_awhile(more_passes, radix_pass, NULL, init), 0);
}

/* ------------------------------------------------------------ the program */

typedef struct {
    int64_t n;
    int32_t *x;           /* the input */
    int32_t *sorted;      /* the reference: qsort's result, made on first use */
    int32_t *bl, *tmp;    /* the baseline's result and scratch */
    ax_array *a;
} Radix;

static void *rs_setup(ax_ctx *cx, int64_t n)
{
    if (n < 0 || n > INT32_MAX) return NULL;   /* the split counts are i32 */
    Radix *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->n = n;
    r->x = malloc(sizeof(int32_t) * (size_t)(n ? n : 1));
    if (!r->x) { free(r); return NULL; }
    /* Uniform over the whole i32 range (half of them negative), with the
     * extremes and the values around 0 placed in front when there is
     * room. */
    ex_rng g = {0xA0761D6478BD642Full};
    for (int64_t i = 0; i < n; i++) r->x[i] = (int32_t)(uint32_t)(ex_next(&g) >> 32);
    static const int32_t edge[6] = {INT32_MAX, INT32_MIN, 0, -1, 1, INT32_MIN + 1};
    for (int64_t i = 0; i < 6 && i < n / 4; i++) r->x[i] = edge[i];
    r->a = ax_array_wrap(cx, AX_I32, 1, &n, r->x);
    if (!r->a) { free(r->x); free(r); return NULL; }
    return r;
}

static ax_acc rs_build(ax_ctx *cx, void *st) { return ex_radixsort(cx, ax_use(cx, ((Radix *)st)->a)); }
/* The same sort as a user writes it now: the language's own sort. */
static ax_acc rs_build_sort(ax_ctx *cx, void *st) { return ax_sort(ax_use(cx, ((Radix *)st)->a), false); }

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Compares a result with want[0..n): equal element by element. */
static int same(const char *what, const int32_t *want, int64_t n, ax_array *const *res, int nres, char *msg,
                size_t size)
{
    if (nres != 1 || ax_array_rank(res[0]) != 1 || ax_array_size(res[0]) != n ||
        ax_array_component_type(res[0], 0) != AX_I32) {
        snprintf(msg, size, "radixsort: expected one i32 vector of %lld elements", (long long)n);
        return -1;
    }
    const int32_t *got = ax_array_data(res[0], 0);
    for (int64_t i = 0; i < n; i++)
        if (got[i] != want[i]) {
            snprintf(msg, size, "radixsort: element %lld is %ld, %s has %ld", (long long)i, (long)got[i], what,
                     (long)want[i]);
            return -1;
        }
    return 0;
}

/* Sorted and a permutation of the input: equal to the input sorted by
 * qsort (integers: a sorted permutation is unique). */
static int rs_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Radix *r = st;
    if (!r->sorted) {
        r->sorted = malloc(sizeof(int32_t) * (size_t)(r->n ? r->n : 1));
        if (!r->sorted) { snprintf(msg, size, "radixsort: out of memory"); return -1; }
        memcpy(r->sorted, r->x, sizeof(int32_t) * (size_t)r->n);
        qsort(r->sorted, (size_t)r->n, sizeof(int32_t), cmp_i32);
    }
    return same("the sorted input", r->sorted, r->n, res, nres, msg, size);
}

static int rs_buffers(Radix *r)
{
    size_t sz = sizeof(int32_t) * (size_t)(r->n ? r->n : 1);
    if (!r->bl && !(r->bl = malloc(sz))) return -1;
    if (!r->tmp && !(r->tmp = malloc(sz))) return -1;
    return 0;
}

/* The baseline of the Table 2 row: the same algorithm written by hand (as
 * the seeds compare with Nikola's split sort, s.5.8). */
static int rs_baseline(void *st, int variant)
{
    Radix *r = st;
    if (rs_buffers(r)) return -1;
    return variant ? bl_radixsplit_fast(r->x, r->bl, r->tmp, r->n) : bl_radixsplit_std(r->x, r->bl, r->tmp, r->n);
}

/* The best sort a performance engineer would write instead: 8-bit digits,
 * 4 counting-sort passes (the program radixsort-lsd8). */
static int rs_baseline_lsd8(void *st, int variant)
{
    Radix *r = st;
    if (rs_buffers(r)) return -1;
    return variant ? bl_radixsort_fast(r->x, r->bl, r->tmp, r->n) : bl_radixsort_std(r->x, r->bl, r->tmp, r->n);
}

/* On a GPU, the sort a performance engineer would use: CUB's radix sort
 * (bench/cuda/baselines.cu). */
static int rs_cuda_cub(void *st, void *lib, int runs, double *ms, char *err, size_t errsize)
{
    Radix *r = st;
    if (rs_buffers(r)) return snprintf(err, errsize, "out of memory"), -1;
    int (*f)(const int32_t *, int64_t, int, int32_t *, double *, char *, size_t);
    if (!(*(void **)&f = dlsym(lib, "axcb_radixsort"))) return snprintf(err, errsize, "no axcb_radixsort"), -1;
    return f(r->x, r->n, runs, r->bl, ms, err, errsize);
}

static int rs_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Radix *r = st;
    if (!r->bl) { snprintf(msg, size, "radixsort: the baseline has not run"); return -1; }
    return same("the baseline", r->bl, r->n, res, nres, msg, size);
}

static void rs_teardown(void *st)
{
    Radix *r = st;
    if (!r) return;
    ax_array_release(r->a);
    free(r->x);
    free(r->sorted);
    free(r->bl);
    free(r->tmp);
    free(r);
}

const ex_program ex_prog_radixsort = {
    .name = "radixsort",
    .about = "Blelloch's split radix sort of i32 (32 one-bit passes: scan, permute); baseline: the same by hand",
    .default_size = 1 << 20,
    .setup = rs_setup,
    .build = rs_build,
    .check = rs_check,
    .teardown = rs_teardown,
    .baseline = rs_baseline,
    .check_baseline = rs_check_baseline,
    /* Table 2 sorts 4M; 1M keeps `make demo` within minutes on two
     * cores (32 passes, and the unshared tree does the work twice). */
    .bench_size = 1 << 20,
    .test_size = 1000,
};

/* The same program against a different algorithm: the 8-bit LSD counting
 * sort a performance engineer would choose for i32 keys (4 passes, not 32).
 * Not a Table 2 row (`axle bench radixsort-lsd8`): it measures the choice
 * of algorithm, which no code generator changes (the seeds: hand-written
 * CUDA sorts are ~10x faster than theirs, s.5.8). */
const ex_program ex_prog_radixsort_lsd8 = {
    .name = "radixsort-lsd8",
    .about = "radixsort's program against an 8-bit LSD counting sort (4 passes) by hand",
    .default_size = 1 << 20,
    .setup = rs_setup,
    .build = rs_build,
    .check = rs_check,
    .teardown = rs_teardown,
    .baseline = rs_baseline_lsd8,
    .check_baseline = rs_check_baseline,
    .cuda_baseline = rs_cuda_cub,
    .bench_size = 1 << 20,
    .test_size = 1000,
    .extra = true,
};

/* The Table-2 sort on the language's sort (ax_sort) instead of the
 * program's 32 split passes, against the same hand-written 8-bit LSD
 * sort: what a user's sort costs (`axle bench radixsort-sort`). */
const ex_program ex_prog_radixsort_sort = {
    .name = "radixsort-sort",
    .about = "radixsort written on ax_sort, against an 8-bit LSD counting sort by hand",
    .default_size = 1 << 20,
    .setup = rs_setup,
    .build = rs_build_sort,
    .check = rs_check,
    .teardown = rs_teardown,
    .baseline = rs_baseline_lsd8,
    .check_baseline = rs_check_baseline,
    .bench_size = 1 << 20,
    .test_size = 1000,
    .extra = true,
};

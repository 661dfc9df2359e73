/* Forward permutation (docs/permute.md): a histogram, where many elements
 * meet in one place, and a scatter to a permutation, where each place gets
 * one element.  SPDX-License-Identifier: BSD-3-Clause */
#include <axle.h>
#include <stdio.h>

/* The bin of element ix: value / 10 for values in [0, 50); other values
 * go nowhere (ax_ignore drops them).  env: the values. */
static ax_exp bin_of(ax_exp ix, void *env)
{
    ax_acc values = *(ax_acc *)env;
    ax_exp v = ax_at(values, ix);
    ax_exp inside = ax_and(ax_ge(v, ax_i32(0)), ax_lt(v, ax_i32(50)));
    return ax_cond(inside, ax_ix1(ax_cvt(ax_quot(v, ax_i32(10)), AX_I64)), ax_ignore(1));
}

static ax_exp one(ax_exp x, void *env) { (void)x, (void)env; return ax_i32(1); }
static ax_exp zero(ax_exp ix, void *env) { (void)ix, (void)env; return ax_i32(0); }

/* The destination of element ix: dest[ix].  env: the destinations. */
static ax_exp dest_of(ax_exp ix, void *env)
{
    return ax_ix1(ax_cvt(ax_at(*(ax_acc *)env, ix), AX_I64));
}

static void print(const char *what, ax_array *r)
{
    const int32_t *v = ax_array_data(r, 0);
    printf("%-10s", what);
    for (int64_t i = 0; i < ax_array_size(r); i++) printf(" %d", v[i]);
    printf("\n");
    ax_array_release(r);
}

int main(void)
{
    int32_t values[10] = {3, 17, 12, 48, 99, 41, 15, -2, 8, 40};
    int32_t dest[5] = {4, 0, 3, 1, 2}, word[5] = {10, 20, 30, 40, 50};
    int64_t n = 10, m = 5;
    ax_ctx *cx = ax_ctx_new(NULL);

    /* histogram: start from 5 zeros, add 1 at bin_of(ix) for each value.
     * + is associative and commutative, as permute requires when several
     * elements meet. */
    ax_acc vs = ax_use(cx, ax_array_wrap(cx, AX_I32, 1, &n, values));
    ax_acc zeros = ax_generate(cx, ax_ix1(ax_i64(5)), zero, NULL);
    ax_acc hist = ax_permute(ax_fn_add, NULL, zeros, bin_of, &vs, ax_map(one, NULL, vs));
    print("histogram", ax_run(cx, hist));

    /* scatter: result[dest[i]] = word[i]; every place is written once, so
     * the combination (ax_fn_fst: the new value wins) is never called on
     * two elements, and the default array only gives the shape. */
    ax_acc ds = ax_use(cx, ax_array_wrap(cx, AX_I32, 1, &m, dest));
    ax_acc ws = ax_use(cx, ax_array_wrap(cx, AX_I32, 1, &m, word));
    print("scatter", ax_run(cx, ax_permute(ax_fn_fst, NULL, ws, dest_of, &ds, ws)));

    ax_ctx_free(cx);
    return 0;
}

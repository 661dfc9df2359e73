/*
 * Sorting and grouping.  Sorting (ax_sort, ax_sort_by): a stable sort of each row (the innermost
 * dimension) by scalar keys, one OP_SORT node that every backend runs
 * with a sort of its own: the interpreter's merge sort defines the order
 * (backend/interp/interp.c), the CPU's executor runs the parallel radix
 * sort of runtime/sort.c over the operands' buffers, and the GPU backends
 * a radix sort in kernels of their own (backend/gpu/sort.c).  Grouping
 * (ax_group_by, ax_reduce_by_key): below.  Fusion makes
 * its operands as arrays (opt/fusion.c: a sort reads every key before it
 * writes one, so there is no element-wise consumer to fuse into).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "build.h"

/* keys sorted (and vals with them): the sorted keys, or the pair (sorted
 * keys, sorted vals). */
static ax_acc sort_node(const char *what, ax_acc keys, ax_acc vals, bool descending)
{
    if (!keys) return NULL;
    ax_ctx *cx = ax_acc_ctx(keys);
    const ax_type *kt = ax_acc_elem(keys);
    int rank = ax_acc_rank(keys);
    if (!kt || rank < 1)
        return ctx_error(cx, AX_ERR_BUILD, "%s: the keys are %s; they must be an array of rank 1 or more", what,
                         tstr(cx, keys->type));
    if (ax_type_kind_of(kt) != AX_KIND_SCALAR)
        return ctx_error(cx, AX_ERR_BUILD, "%s: the keys are of type %s; they must be of a scalar type", what,
                         tstr(cx, kt));
    if (vals) {
        if (vals->cx != cx) return ctx_error(cx, AX_ERR_BUILD, "%s: the values were built in another context", what);
        if (vals->type->kind != TY_ARRAY)
            return ctx_error(cx, AX_ERR_BUILD, "%s: the values are %s, not an array", what, tstr(cx, vals->type));
        if (ax_acc_rank(vals) != rank)
            return ctx_error(cx, AX_ERR_BUILD, "%s: the values %s do not have the keys' rank %d", what,
                             tstr(cx, vals->type), rank);
        /* the values take the keys' shape (a reshape: another size is a
         * run-time shape error) */
        if (!(vals = ax_reshape(ax_shape(keys), vals))) return NULL;
    }
    if (!ctx_touch_as(cx, what)) return NULL;
    const Type *t = keys->type;
    if (vals) {
        const Type *pair[2] = {keys->type, vals->type};
        t = ty_arrays(&cx->arena, 2, pair);
    }
    Node *x = t ? node_new(&cx->arena, OP_SORT, vals ? 2 : 1, t) : NULL;
    if (!x) return ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", what);
    x->cx = cx;
    x->a = descending;
    x->kid[0] = keys;
    if (vals) x->kid[1] = vals;
    return x;
}

ax_acc ax_sort(ax_acc keys, bool descending) { return sort_node("ax_sort", keys, NULL, descending); }

ax_acc ax_sort_by(ax_acc keys, ax_acc vals, bool descending)
{
    if (keys && !vals) return ctx_error(keys->cx, AX_ERR_BUILD, "ax_sort_by: the values are NULL");
    return sort_node("ax_sort_by", keys, vals, descending);
}

/* ------------------------------------------------------------ grouping */

/* Grouping by integer keys in [0, nbuckets) (seed 003's bucket
 * generators): both are the operations the planner already has, so they
 * run on every backend and fuse as those do.  A reduction by key is a
 * forward permutation whose index is the key (the loop graph's Bucket
 * generator, plangraph.c); a grouping is the count of each key (the same,
 * of ones) and the values sorted by key (a counting sort: the radix sort
 * skips the passes of digits no key has). */
typedef struct Group {
    ax_acc keys;
    ax_exp z;
} Group;

static ax_exp key_place(ax_exp ix, void *env)
{
    const Group *g = env;
    return ax_ix1(ax_cvt(ax_at(g->keys, ix), AX_I64));
}
static ax_exp one_i64(ax_exp x, void *env) { (void)x, (void)env; return ax_i64(1); }
static ax_exp the_z(ax_exp ix, void *env) { (void)ix; return ((const Group *)env)->z; }

/* The checks both share; vals reshaped to the keys' length (another
 * length is a run-time shape error), or NULL with an error. */
static ax_acc group_args(const char *what, ax_acc keys, ax_acc vals, ax_exp *nb)
{
    if (!keys) return NULL;
    ax_ctx *cx = ax_acc_ctx(keys);
    if (!vals) return ctx_error(cx, AX_ERR_BUILD, "%s: the values are NULL", what);
    if (vals->cx != cx) return ctx_error(cx, AX_ERR_BUILD, "%s: the values were built in another context", what);
    const ax_type *kt = ax_acc_elem(keys);
    if (!kt || ax_acc_rank(keys) != 1 || ax_type_kind_of(kt) != AX_KIND_SCALAR ||
        !sc_is_int(ax_type_scalar_of(kt)))
        return ctx_error(cx, AX_ERR_BUILD, "%s: the keys are %s; they must be a vector of integers", what,
                         tstr(cx, keys->type));
    if (vals->type->kind != TY_ARRAY || ax_acc_rank(vals) != 1)
        return ctx_error(cx, AX_ERR_BUILD, "%s: the values are %s; they must be a vector", what,
                         tstr(cx, vals->type));
    *nb = exp_to_i64(*nb, what);
    return ax_reshape(ax_shape(keys), vals);
}

ax_acc ax_group_by(ax_acc keys, ax_acc vals, ax_exp nbuckets)
{
    const char *what = "ax_group_by";
    if (!(vals = group_args(what, keys, vals, &nbuckets))) return NULL;
    ax_ctx *cx = ax_acc_ctx(keys);
    Group g = {keys, ax_i64(0)};
    ax_acc zeros = ax_generate(cx, ax_ix1(nbuckets), the_z, &g);
    ax_acc counts = ax_permute(ax_fn_add, NULL, zeros, key_place, &g, ax_map(one_i64, NULL, keys));
    ax_acc sorted = ax_sort_by(keys, vals, false);
    return counts && sorted ? ax_atuple2(counts, ax_aget(sorted, 1)) : NULL;
}

ax_acc ax_reduce_by_key(ax_fn2 f, void *env, ax_exp z, ax_acc keys, ax_acc vals, ax_exp nbuckets)
{
    const char *what = "ax_reduce_by_key";
    if (!(vals = group_args(what, keys, vals, &nbuckets))) return NULL;
    ax_ctx *cx = ax_acc_ctx(keys);
    Type tmp;
    const Type *elts[AX_MAX_RANK];
    const Type *zt = exp_type(z, &tmp, elts);
    if (!zt) return ctx_error(cx, AX_ERR_BUILD, "%s: the initial value is not a valid expression", what);
    if (!ty_eq(zt, vals->type->elt))
        return ctx_error(cx, AX_ERR_BUILD, "%s: the initial value is %s but the values are %s", what, tstr(cx, zt),
                         tstr(cx, vals->type->elt));
    Group g = {keys, z};
    return ax_permute(f, env, ax_generate(cx, ax_ix1(nbuckets), the_z, &g), key_place, &g, vals);
}

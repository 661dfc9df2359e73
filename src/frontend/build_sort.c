/*
 * Sorting (ax_sort, ax_sort_by): a stable sort of each row (the innermost
 * dimension) by scalar keys, one OP_SORT node that every backend runs
 * with a sort of its own: the interpreter's merge sort defines the order
 * (backend/interp/interp.c), the CPU's executor runs the parallel radix
 * sort of runtime/sort.c over the operands' buffers, and the GPU backends
 * a radix sort in kernels of their own (backend/gpu/sort.c).  Fusion makes
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

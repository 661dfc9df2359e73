/*
 * The reference interpreter: evaluates a core program directly, node by
 * node.  This file holds its array operations, their dispatch, its entry
 * (interp_run) and the backend; its scalar evaluator (the interpreter's
 * state, scalar expressions, the scratch stack) is src/runtime/eval.c,
 * which other executors use too.  It defines the meaning of every operation (docs/ARCHITECTURE.md, "The pipeline"):
 * every other backend is tested against it, so it is written for clarity
 * and exactness first, and for speed only as far as running the example
 * programs over a million elements in seconds needs.
 *
 * Values.  A scalar-stratum value (an element type) is a flat vector of
 * Scalar leaves: Type->width of them, tuples flattened left to right, an
 * index of rank r as r i64 leaves.  An array-stratum value is a flat list
 * of ax_array references: one for a TY_ARRAY, the flattened components for
 * a TY_ARRAYS.
 *
 * Environments are indexed by the program's dense variable ids: senv[id]
 * points at the leaves bound to a scalar variable, aenv[id] at the list of
 * arrays bound to an array variable.  Ids are unique in a program, so no
 * binding ever shadows another and nothing needs restoring.
 *
 * Scratch memory: see eval.c.
 *
 * Ownership.  eval_acc returns new references; every path, error paths
 * included, releases what it holds.  Errors are recorded on the context
 * (first error wins) and unwind as -1.
 *
 * Decisions on details the API leaves open:
 *  - Reads through a computed index (ax_at, ax_at_linear, ax_backpermute,
 *    ax_slice_) are bounds-checked even in unsafe mode: "unsafe" promises
 *    the indices are valid, so any behaviour is allowed when they are not,
 *    and the oracle chooses a clear error over reading stray memory.
 *    ax_permute's writes follow the mode: an error in safe mode, skipped
 *    in unsafe mode.
 *  - fold1 / fold1_seg: the error is raised only when an empty row or
 *    segment is actually reduced (an array with no rows has nothing to
 *    reduce).
 *  - Segment lengths are checked whenever they are given, even if no row
 *    uses them.
 *  - Stencil mirror on an extent of 1 reads element 0; a neighbourhood
 *    wider than the array keeps reflecting (period 2(n-1)).
 *  - Arrays go after their last read (liveness.c, through the host walk
 *    every executor shares), so a program's memory is the same here as on
 *    the backends it checks.
 *  - interp_run returns the number of results it wrote, min(results, max);
 *    the rest are released.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include "bytes.h"
#include "runtime/eval.h"
#include "runtime/host.h"
#include "runtime/array.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

/* ------------------------------------------------------------ the state (Interp: runtime/eval.h) */

static int eval_acc(Interp *in, const Node *x, ax_array **out) { return host_eval(&in->h, x, out); }
#define awidth host_width
#define release_all host_release
#define api_name host_api_name
#define fmt_ints host_fmt_ints

/* An array with its leaf types, for element loads and stores. */
typedef struct View {
    ax_array *a;
    const ax_scalar *lt;
    int w;                    /* leaves per element = buffers */
} View;
#define VIEW_NONE {NULL, NULL, 0}

static int view(Interp *in, ax_array *a, View *v)
{
    if (array_host(a)) return -1;   /* a GPU backend's result: read back */
    v->a = a;
    v->w = a->ncomp;
    v->lt = eval_leaf_types(in, a->elt);
    return v->lt ? 0 : -1;
}

static inline void vload(const View *v, int64_t i, Scalar *dst)
{
    for (int c = 0; c < v->w; c++) dst[c] = sc_load(v->a->buf[c], v->lt[c], i);
}

static inline void vstore(const View *v, int64_t i, const Scalar *src)
{
    for (int c = 0; c < v->w; c++) sc_store(v->a->buf[c], v->lt[c], i, src[c]);
}

/* Copies n elements between arrays of one element type. */
static void vcopy(const View *dst, int64_t doff, const View *src, int64_t soff, int64_t n)
{
    if (n <= 0) return;
    for (int c = 0; c < dst->w; c++) {
        size_t sz = ax_scalar_size(dst->lt[c]);
        memcpy((char *)dst->a->buf[c] + (size_t)doff * sz, (const char *)src->a->buf[c] + (size_t)soff * sz,
               (size_t)n * sz);
    }
}

/* ------------------------------------------------------------- helpers */

/* Leaves of a scalar-stratum type; arrays of an array-stratum type. */
/* A row-major multi-index: steps to the next position within shape. */
static inline void ix_next(int rank, const int64_t *shape, int64_t *ix)
{
    for (int d = rank - 1; d >= 0; d--) {
        if (++ix[d] < shape[d]) return;
        ix[d] = 0;
    }
}

static inline int64_t ix_linear(int rank, const int64_t *shape, const int64_t *ix)
{
    int64_t l = 0;
    for (int d = 0; d < rank; d++) l = l * shape[d] + ix[d];
    return l;
}

/* Row-major strides of a shape (elements). */
static void strides(int rank, const int64_t *shape, int64_t *st)
{
    int64_t s = 1;
    for (int d = rank - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d];
    }
}


/* ------------------------------------------------------- array helpers */

/* Evaluates a term that is a single array. */
static int eval1(Interp *in, const Node *x, ax_array **a) { return host_eval1(&in->h, x, a); }

static ax_array *new_array(Interp *in, const Type *elt, int rank, const int64_t *shape, const char *what)
{
    if (shape_size_checked(in->cx, what, rank, shape) < 0) return NULL;
    return array_alloc(in->cx, elt, rank, shape, true);
}

/* The end of an operation with one result: hands it over or drops it. */
static int finish(int rc, ax_array *res, ax_array **out)
{
    if (rc || !res) {
        ax_array_release(res);
        return -1;
    }
    out[0] = res;
    return 0;
}

/* Result shape of elementwise operations on several arrays: the
 * intersection (smallest extent per dimension). */
static void intersect(int rank, ax_array *const *as, int n, int64_t *sh)
{
    for (int d = 0; d < rank; d++) {
        sh[d] = as[0]->shape[d];
        for (int k = 1; k < n; k++)
            if (as[k]->shape[d] < sh[d]) sh[d] = as[k]->shape[d];
    }
}

/* A long operation can be cancelled: every 65,536 steps of an operation's
 * loops (rows, elements, segments) the interpreter asks the cancel hook,
 * as the host walk does between operations.  The memory limit does not
 * bound every loop: an array of empty tuples of 2^31 rows takes no memory,
 * and an operation over it would otherwise run for minutes unstoppably. */
static inline int poll(Interp *in)
{
    return ++in->ticks & 0xffff ? 0 : host_cancelled(&in->h);
}

/* ----------------------------------------------------- array operations */

static int op_unit(Interp *in, const Node *x, ax_array **out)
{
    int64_t none[1] = {0};
    ax_array *res = NULL;
    View rv = VIEW_NONE;
    Mark m = eval_mark(in);
    Scalar *y = eval_salloc(in, (size_t)x->type->elt->width);
    int rc = y ? eval_top(in, x->kid[0], y) : -1;
    if (rc == 0) {
        res = new_array(in, x->type->elt, 0, none, "ax_unit");
        rc = res && !view(in, res, &rv) ? 0 : -1;
        if (rc == 0) vstore(&rv, 0, y);
    }
    eval_release(in, m);
    return finish(rc, res, out);
}

static int op_generate(Interp *in, const Node *x, ax_array **out)
{
    const Node *f = x->kid[1];
    int64_t sh[AX_MAX_RANK], ix[AX_MAX_RANK] = {0};
    int r = 0;
    ax_array *res = NULL;
    View rv = VIEW_NONE;
    if (eval_shape(in, x->kid[0], sh, &r) || eval_check_lam(in, f, 1, r)) return -1;
    res = new_array(in, x->type->elt, r, sh, "ax_generate");
    if (!res || view(in, res, &rv)) return finish(-1, res, out);
    Mark m = eval_mark(in);
    Scalar *ixs = eval_salloc(in, (size_t)r), *y = eval_salloc(in, (size_t)rv.w);
    int rc = ixs && y ? 0 : -1;
    for (int64_t i = 0; rc == 0 && i < res->size && !(rc = poll(in)); i++) {
        for (int d = 0; d < r; d++) ixs[d].i = ix[d];
        if ((rc = eval_call(in, f, ixs, y))) break;
        vstore(&rv, i, y);
        ix_next(r, sh, ix);
    }
    eval_release(in, m);
    return finish(rc, res, out);
}

/* MAP and ZIPWITH: kid[0] the function, kid[1..k] the arrays. */
static int op_zipwith(Interp *in, const Node *x, ax_array **out)
{
    const Node *f = x->kid[0];
    int k = x->n - 1;
    if (k < 1) return eval_malformed(in, x, "no arrays");
    ax_array **src = ax__calloc((size_t)k, sizeof *src);
    View *sv = ax__calloc((size_t)k, sizeof *sv);
    ax_array *res = NULL;
    View rv = VIEW_NONE;
    int rc = src && sv ? 0 : eval_nomem(in);
    int width = 0;
    for (int j = 0; rc == 0 && j < k; j++) {
        if ((rc = eval1(in, x->kid[1 + j], &src[j]))) break;
        if ((rc = view(in, src[j], &sv[j]))) break;
        if (src[j]->rank != src[0]->rank) rc = eval_malformed(in, x, "the arrays differ in rank");
        width += sv[j].w;
    }
    if (rc == 0) rc = eval_check_lam(in, f, k, width);
    if (rc == 0) {
        int r = src[0]->rank;
        int64_t sh[AX_MAX_RANK], ix[AX_MAX_RANK] = {0};
        intersect(r, src, k, sh);
        res = new_array(in, x->type->elt, r, sh, api_name(x->op));
        rc = res && !view(in, res, &rv) ? 0 : -1;
        Mark m = eval_mark(in);
        Scalar *args = eval_salloc(in, (size_t)width), *y = eval_salloc(in, (size_t)(rc == 0 ? rv.w : 0));
        if (!args || !y) rc = -1;
        for (int64_t i = 0; rc == 0 && i < res->size && !(rc = poll(in)); i++) {
            int off = 0;
            for (int j = 0; j < k; j++) {
                /* A single input (map) has the result's shape: no need
                 * to recompute the position. */
                int64_t lin = k == 1 ? i : ix_linear(r, src[j]->shape, ix);
                vload(&sv[j], lin, args + off);
                off += sv[j].w;
            }
            if ((rc = eval_call(in, f, args, y))) break;
            vstore(&rv, i, y);
            ix_next(r, sh, ix);
        }
        eval_release(in, m);
    }
    if (src) release_all(src, k);
    free(src);
    free(sv);
    return finish(rc, res, out);
}

/* BACKPERMUTE, result[ix] = a[p(ix)], and TRANSFORM (made by fusion,
 * thesis s.4.2's compute), a backpermute then a map, result[ix] =
 * f(a[p(ix)]); f is NULL for a backpermute.  Reads are bounds-checked as
 * ax_backpermute's are. */
static int bp_map(Interp *in, const Node *x, const Node *p, const Node *f, const Node *a, ax_array **out)
{
    int64_t sh[AX_MAX_RANK], ix[AX_MAX_RANK] = {0}, six[AX_MAX_RANK + 1];
    int r = 0;
    ax_array *src = NULL, *res = NULL;
    View sv = VIEW_NONE, rv = VIEW_NONE;
    int rc = eval_shape(in, x->kid[0], sh, &r);
    if (rc == 0) rc = eval_check_lam(in, p, 1, r);
    if (rc == 0) rc = eval1(in, a, &src);
    if (rc == 0) rc = view(in, src, &sv);
    if (rc == 0 && f) rc = eval_check_lam(in, f, 1, sv.w);
    if (rc == 0 && p->type->width != src->rank) rc = eval_malformed(in, x, "index function rank");
    if (rc == 0) {
        res = new_array(in, x->type->elt, r, sh, "ax_backpermute");
        rc = res && !view(in, res, &rv) ? 0 : -1;
    }
    if (rc == 0) {
        int sr = src->rank;
        Mark m = eval_mark(in);
        Scalar *ixs = eval_salloc(in, (size_t)r), *t = eval_salloc(in, (size_t)sr), *e = eval_salloc(in, (size_t)sv.w),
               *y = f ? eval_salloc(in, (size_t)rv.w) : e;
        if (!ixs || !t || !e || !y) rc = -1;
        for (int64_t i = 0; rc == 0 && i < res->size && !(rc = poll(in)); i++) {
            int64_t lin = 0;
            for (int d = 0; d < r; d++) ixs[d].i = ix[d];
            if ((rc = eval_call(in, p, ixs, t))) break;
            for (int d = 0; d < sr; d++) six[d] = t[d].i;
            if ((rc = eval_linear_checked(in, "ax_backpermute", sr, src->shape, six, &lin))) break;
            vload(&sv, lin, e);
            if (f && (rc = eval_call(in, f, e, y))) break;
            vstore(&rv, i, y);
            ix_next(r, sh, ix);
        }
        eval_release(in, m);
    }
    ax_array_release(src);
    return finish(rc, res, out);
}

static int op_backpermute(Interp *in, const Node *x, ax_array **out)
{
    return bp_map(in, x, x->kid[1], NULL, x->kid[2], out);
}

static int op_transform(Interp *in, const Node *x, ax_array **out)
{
    if (x->n != 4) return eval_malformed(in, x, "wrong number of operands");
    return bp_map(in, x, x->kid[1], x->kid[2], x->kid[3], out);
}

/* DELAYED (made by fusion, thesis s.4.4): a consumer's fused input, given
 * by its extent, an index form and a linear-index form.  The oracle
 * materialises it (so memory use and its limit behave as without fusion)
 * through the index form, and checks element by element that the linear
 * form gives the same bits: both denote one array, and a backend may read
 * through either. */
static int op_delayed(Interp *in, const Node *x, ax_array **out)
{
    const Node *f = x->n == 3 ? x->kid[1] : NULL, *g = x->n == 3 ? x->kid[2] : NULL;
    int64_t sh[AX_MAX_RANK], ix[AX_MAX_RANK] = {0};
    int r = 0;
    ax_array *res = NULL;
    View rv = VIEW_NONE;
    if (!f || eval_shape(in, x->kid[0], sh, &r) || eval_check_lam(in, f, 1, r) || eval_check_lam(in, g, 1, 1)) return -1;
    res = new_array(in, x->type->elt, r, sh, "a fused producer");
    if (!res || view(in, res, &rv)) return finish(-1, res, out);
    Mark m = eval_mark(in);
    Scalar *ixs = eval_salloc(in, (size_t)(r > 0 ? r : 1)), *y = eval_salloc(in, (size_t)rv.w),
           *z = eval_salloc(in, (size_t)rv.w);
    int rc = ixs && y && z ? 0 : -1;
    for (int64_t i = 0; rc == 0 && i < res->size && !(rc = poll(in)); i++) {
        Scalar li;
        li.i = i;
        for (int d = 0; d < r; d++) ixs[d].i = ix[d];
        if ((rc = eval_call(in, f, ixs, y)) || (rc = eval_call(in, g, &li, z))) break;
        for (int c = 0; c < rv.w; c++)
            if (!sc_eq_bits(rv.lt[c], y[c], z[c])) {
                rc = eval_malformed(in, x, "the index and linear-index forms disagree");
                break;
            }
        if (rc) break;
        vstore(&rv, i, y);
        ix_next(r, sh, ix);
    }
    eval_release(in, m);
    return finish(rc, res, out);
}

/* Forward permutation: a copy of the defaults, then each source element
 * in row-major order is combined into its target as comb(new, old). */
static int op_permute(Interp *in, const Node *x, ax_array **out)
{
    const Node *comb = x->kid[0], *p = x->kid[2];
    ax_array *dflt = NULL, *src = NULL, *res = NULL;
    View dv = VIEW_NONE, sv = VIEW_NONE, rv = VIEW_NONE;
    int rc = eval1(in, x->kid[1], &dflt);
    if (rc == 0) rc = eval1(in, x->kid[3], &src);
    if (rc == 0) rc = view(in, dflt, &dv) || view(in, src, &sv) ? -1 : 0;
    if (rc == 0) rc = eval_check_lam(in, comb, 2, 2 * sv.w);
    if (rc == 0) rc = eval_check_lam(in, p, 1, src->rank);
    if (rc == 0 && (p->type->width != dflt->rank || dv.w != sv.w)) rc = eval_malformed(in, x, "types do not fit");
    if (rc == 0) {
        res = new_array(in, x->type->elt, dflt->rank, dflt->shape, "ax_permute");
        rc = res && !view(in, res, &rv) ? 0 : -1;
    }
    if (rc == 0) {
        vcopy(&rv, 0, &dv, 0, dflt->size);
        ax_array_release(dflt);
        dflt = NULL;
        int sr = src->rank, tr = res->rank;
        int64_t ix[AX_MAX_RANK] = {0}, tix[AX_MAX_RANK + 1];
        Mark m = eval_mark(in);
        Scalar *ixs = eval_salloc(in, (size_t)sr), *t = eval_salloc(in, (size_t)tr);
        Scalar *nw = eval_salloc(in, (size_t)sv.w), *old = eval_salloc(in, (size_t)sv.w), *y = eval_salloc(in, (size_t)sv.w);
        if (!ixs || !t || !nw || !old || !y) rc = -1;
        for (int64_t i = 0; rc == 0 && i < src->size && !(rc = poll(in)); i++, ix_next(sr, src->shape, ix)) {
            for (int d = 0; d < sr; d++) ixs[d].i = ix[d];
            if ((rc = eval_call(in, p, ixs, t))) break;
            bool ignore = tr >= 1, inside = true;
            for (int d = 0; d < tr; d++) {
                tix[d] = t[d].i;
                if (tix[d] != -1) ignore = false;
                if (tix[d] < 0 || tix[d] >= res->shape[d]) inside = false;
            }
            if (ignore) continue;
            if (!inside) {
                if (!in->safe) continue;
                char a[256], b[256];
                fmt_ints(a, sizeof a, tr, tix);
                fmt_ints(b, sizeof b, tr, res->shape);
                rc = eval_fail(in, AX_ERR_INDEX, "ax_permute: target index (%s) out of bounds for shape (%s)", a, b);
                break;
            }
            int64_t lin = ix_linear(tr, res->shape, tix);
            vload(&sv, i, nw);
            vload(&rv, lin, old);
            if ((rc = eval_call2(in, comb, nw, old, y))) break;
            vstore(&rv, lin, y);
        }
        eval_release(in, m);
    }
    ax_array_release(dflt);
    ax_array_release(src);
    return finish(rc, res, out);
}

/* REPLICATE (spec over the result's dimensions) and SLICE (spec over the
 * source's dimensions).  Both become: result element at ix reads the source
 * at base + sum(ix[d] * step[d]). */
static int op_slice(Interp *in, const Node *x, ax_array **out)
{
    bool rep = x->op == OP_REPLICATE;
    const char *what = api_name(x->op);
    const Slice *sp = x->slice;
    ax_array *src = NULL, *res = NULL;
    View sv = VIEW_NONE, rv = VIEW_NONE;
    int64_t sstr[AX_MAX_RANK], sh[AX_MAX_RANK], step[AX_MAX_RANK], ix[AX_MAX_RANK] = {0}, base = 0;
    int r = 0;
    int rc = sp && sp->n >= 0 && sp->n <= AX_MAX_RANK ? 0 : eval_malformed(in, x, "bad slice specifier");
    if (rc == 0) rc = eval1(in, x->kid[0], &src);
    if (rc == 0) rc = view(in, src, &sv);
    if (rc == 0) {
        int nall = 0, nfixed = 0;
        for (int d = 0; d < sp->n; d++) sp->fixed[d] ? nfixed++ : nall++;
        if (x->n != 1 + nfixed || src->rank != (rep ? nall : sp->n))
            rc = eval_malformed(in, x, "the specifier does not fit the array");
    }
    if (rc == 0) strides(src->rank, src->shape, sstr);
    for (int d = 0, k = 0, s = 0; rc == 0 && d < sp->n; d++) {
        if (!sp->fixed[d]) {
            sh[r] = src->shape[s];
            step[r++] = sstr[s++];
            continue;
        }
        int64_t v = 0;
        if ((rc = eval_i64(in, x->kid[1 + k++], &v))) break;
        if (rep) {                /* a new dimension of extent v */
            sh[r] = v;
            step[r++] = 0;
        } else {                  /* index v of source dimension s */
            if (v < 0 || v >= src->shape[s]) {
                char b[256];
                fmt_ints(b, sizeof b, src->rank, src->shape);
                rc = eval_fail(in, AX_ERR_INDEX, "%s: index %" PRId64 " of dimension %d out of bounds for shape (%s)",
                               what, v, s, b);
                break;
            }
            base += v * sstr[s++];
        }
    }
    if (rc == 0) {
        res = new_array(in, x->type->elt, r, sh, what);
        rc = res && !view(in, res, &rv) ? 0 : -1;
    }
    if (rc == 0) {
        Mark m = eval_mark(in);
        Scalar *y = eval_salloc(in, (size_t)sv.w);
        if (!y) rc = -1;
        for (int64_t i = 0; rc == 0 && i < res->size && !(rc = poll(in)); i++) {
            int64_t lin = base;
            for (int d = 0; d < r; d++) lin += ix[d] * step[d];
            vload(&sv, lin, y);
            vstore(&rv, i, y);
            ix_next(r, sh, ix);
        }
        eval_release(in, m);
    }
    ax_array_release(src);
    return finish(rc, res, out);
}

static int op_reshape(Interp *in, const Node *x, ax_array **out)
{
    int64_t sh[AX_MAX_RANK];
    int r = 0;
    ax_array *src = NULL, *res = NULL;
    View sv = VIEW_NONE, rv = VIEW_NONE;
    int rc = eval_shape(in, x->kid[0], sh, &r);
    if (rc == 0) rc = eval1(in, x->kid[1], &src);
    if (rc == 0) rc = view(in, src, &sv);
    if (rc == 0) {
        int64_t n = shape_size_checked(in->cx, "ax_reshape", r, sh);
        if (n < 0) rc = -1;
        else if (n != src->size) {
            char a[256], b[256];
            fmt_ints(a, sizeof a, src->rank, src->shape);
            fmt_ints(b, sizeof b, r, sh);
            rc = eval_fail(in, AX_ERR_SHAPE,
                           "ax_reshape: an array of shape (%s) (%" PRId64 " elements) cannot take shape (%s) (%" PRId64
                           " elements)", a, src->size, b, n);
        }
    }
    if (rc == 0) {
        res = new_array(in, x->type->elt, r, sh, "ax_reshape");
        rc = res && !view(in, res, &rv) ? 0 : -1;
    }
    if (rc == 0) vcopy(&rv, 0, &sv, 0, src->size);
    ax_array_release(src);
    return finish(rc, res, out);
}

/* FOLD and FOLD1 along the innermost dimension: f(...f(f(z, a0), a1)...)
 * per row, or f(...f(a0, a1)...). */
static int op_fold(Interp *in, const Node *x, ax_array **out)
{
    bool has_z = x->op == OP_FOLD;
    const char *what = api_name(x->op);
    const Node *f = x->kid[0];
    int w = x->type->elt->width;
    ax_array *src = NULL, *res = NULL;
    View sv = VIEW_NONE, rv = VIEW_NONE;
    Mark m = eval_mark(in);
    Scalar *z = eval_salloc(in, (size_t)w), *acc = eval_salloc(in, (size_t)w), *nxt = eval_salloc(in, (size_t)w),
           *e = eval_salloc(in, (size_t)w);
    int rc = z && acc && nxt && e ? eval_check_lam(in, f, 2, 2 * w) : -1;
    if (rc == 0 && has_z) rc = eval_top(in, x->kid[1], z);
    if (rc == 0) rc = eval1(in, x->kid[has_z ? 2 : 1], &src);
    if (rc == 0) rc = view(in, src, &sv);
    if (rc == 0 && (src->rank < 1 || sv.w != w)) rc = eval_malformed(in, x, "the array does not fit");
    if (rc == 0) {
        res = new_array(in, x->type->elt, src->rank - 1, src->shape, what);
        rc = res && !view(in, res, &rv) ? 0 : -1;
    }
    if (rc == 0) {
        int64_t n = src->shape[src->rank - 1], rows = res->size;
        if (!has_z && n == 0 && rows > 0)
            rc = eval_fail(in, AX_ERR_SHAPE, "%s: cannot reduce an empty row (the innermost extent is 0)", what);
        for (int64_t row = 0; rc == 0 && row < rows && !(rc = poll(in)); row++) {
            int64_t b = row * n, j = 0;
            if (has_z) {
                if (w > 0) memcpy(acc, z, sizeof *acc * (size_t)w);
            } else {
                vload(&sv, b, acc);
                j = 1;
            }
            for (; j < n && !(rc = poll(in)); j++) {
                vload(&sv, b + j, e);
                if ((rc = eval_call2(in, f, acc, e, nxt))) break;
                Scalar *t = acc;
                acc = nxt;
                nxt = t;
            }
            if (rc == 0) vstore(&rv, row, acc);
        }
    }
    eval_release(in, m);
    ax_array_release(src);
    return finish(rc, res, out);
}

/* Reads and checks segment lengths: each >= 0, adding up to n. */
static int seg_lengths(Interp *in, const char *what, const ax_array *segs, int64_t n, int64_t *len)
{
    ax_scalar s = segs->elt->kind == TY_SCALAR ? segs->elt->s : AX_F64;
    if (segs->rank != 1 || segs->ncomp != 1 || !sc_is_int(s))
        return eval_fail(in, AX_ERR_SHAPE, "%s: the segments are not a vector of integers", what);
    if (array_host((ax_array *)segs)) return -1;
    int64_t sum = 0;
    for (int64_t k = 0; k < segs->size; k++) {
        Scalar v = sc_load(segs->buf[0], s, k);
        if (!sc_is_signed(s) && v.u > (uint64_t)INT64_MAX)
            return eval_fail(in, AX_ERR_SHAPE, "%s: segment %" PRId64 " has length %" PRIu64 ", more than the %" PRId64
                             " elements of a row", what, k, v.u, n);
        int64_t l = sc_is_signed(s) ? v.i : (int64_t)v.u;
        if (l < 0) return eval_fail(in, AX_ERR_SHAPE, "%s: segment %" PRId64 " has negative length %" PRId64, what, k, l);
        if (l > n - sum)
            return eval_fail(in, AX_ERR_SHAPE, "%s: the segment lengths add up to more than the innermost extent %" PRId64,
                             what, n);
        sum += l;
        len[k] = l;
    }
    if (sum != n)
        return eval_fail(in, AX_ERR_SHAPE, "%s: the segment lengths add up to %" PRId64 ", not the innermost extent %" PRId64,
                         what, sum, n);
    return 0;
}

/* FOLDSEG and FOLD1SEG: one reduction per segment of each row. */
static int op_foldseg(Interp *in, const Node *x, ax_array **out)
{
    bool has_z = x->op == OP_FOLDSEG;
    const char *what = api_name(x->op);
    const Node *f = x->kid[0];
    int w = x->type->elt->width;
    ax_array *src = NULL, *segs = NULL, *res = NULL;
    int64_t *len = NULL;
    View sv = VIEW_NONE, rv = VIEW_NONE;
    Mark m = eval_mark(in);
    Scalar *z = eval_salloc(in, (size_t)w), *acc = eval_salloc(in, (size_t)w), *nxt = eval_salloc(in, (size_t)w),
           *e = eval_salloc(in, (size_t)w);
    int rc = z && acc && nxt && e ? eval_check_lam(in, f, 2, 2 * w) : -1;
    if (rc == 0 && has_z) rc = eval_top(in, x->kid[1], z);
    if (rc == 0) rc = eval1(in, x->kid[has_z ? 2 : 1], &src);
    if (rc == 0) rc = eval1(in, x->kid[has_z ? 3 : 2], &segs);
    if (rc == 0) rc = view(in, src, &sv);
    if (rc == 0 && (src->rank < 1 || sv.w != w)) rc = eval_malformed(in, x, "the array does not fit");
    int r = rc == 0 ? src->rank : 0;
    int64_t n = rc == 0 ? src->shape[r - 1] : 0, nseg = rc == 0 ? segs->shape[0] : 0;
    if (rc == 0 && !(len = ax__malloc(sizeof *len * (size_t)(nseg > 0 ? nseg : 1)))) rc = eval_nomem(in);
    if (rc == 0) rc = seg_lengths(in, what, segs, n, len);
    if (rc == 0) {
        int64_t sh[AX_MAX_RANK];
        memcpy(sh, src->shape, sizeof *sh * (size_t)r);
        sh[r - 1] = nseg;
        res = new_array(in, x->type->elt, r, sh, what);
        rc = res && !view(in, res, &rv) ? 0 : -1;
    }
    if (rc == 0) {
        int64_t rows = nseg > 0 ? res->size / nseg : 0;
        for (int64_t k = 0; !has_z && rows > 0 && k < nseg; k++)
            if (len[k] == 0) {
                rc = eval_fail(in, AX_ERR_SHAPE, "%s: cannot reduce segment %" PRId64 ", which is empty", what, k);
                break;
            }
        for (int64_t row = 0; rc == 0 && row < rows && !(rc = poll(in)); row++) {
            int64_t pos = row * n;
            for (int64_t k = 0; rc == 0 && k < nseg && !(rc = poll(in)); k++) {
                int64_t j = 0;
                if (has_z) {
                    if (w > 0) memcpy(acc, z, sizeof *acc * (size_t)w);
                } else {
                    vload(&sv, pos, acc);
                    j = 1;
                }
                for (; j < len[k] && !(rc = poll(in)); j++) {
                    vload(&sv, pos + j, e);
                    if ((rc = eval_call2(in, f, acc, e, nxt))) break;
                    Scalar *t = acc;
                    acc = nxt;
                    nxt = t;
                }
                if (rc == 0) vstore(&rv, row * nseg + k, acc);
                pos += len[k];
            }
        }
    }
    eval_release(in, m);
    free(len);
    ax_array_release(src);
    ax_array_release(segs);
    return finish(rc, res, out);
}

/* The scans, along the innermost dimension of each row (n elements a_j):
 *   scanl   z, f(z,a0), f(f(z,a0),a1), ...                  extent n+1
 *   scanl1  a0, f(a0,a1), ...                                extent n
 *   scanl'  z, f(z,a0), ... (without the last) + the total   extent n
 *   scanr   ..., f(a_{n-1},z), z                             extent n+1
 *   scanr1  ..., f(a_{n-2},a_{n-1}), a_{n-1}                 extent n
 *   scanr'  element j = a_{j+1} . (... . z), last z, total = a_0 . (...) */
static int op_scan(Interp *in, const Node *x, ax_array **out)
{
    Op op = x->op;
    bool left = op == OP_SCANL || op == OP_SCANL1 || op == OP_SCANLEX;
    bool has_z = !(op == OP_SCANL1 || op == OP_SCANR1);
    bool ex = op == OP_SCANLEX || op == OP_SCANREX;
    const char *what = api_name(op);
    const Node *f = x->kid[0];
    const Type *rt = ex ? x->type->elts[0] : x->type;
    if (rt->kind != TY_ARRAY) return eval_malformed(in, x, "result type");
    const Type *elt = rt->elt;
    int w = elt->width;
    ax_array *src = NULL, *res = NULL, *tot = NULL;
    View sv = VIEW_NONE, rv = VIEW_NONE, tv = VIEW_NONE;
    Mark m = eval_mark(in);
    Scalar *z = eval_salloc(in, (size_t)w), *acc = eval_salloc(in, (size_t)w), *nxt = eval_salloc(in, (size_t)w),
           *e = eval_salloc(in, (size_t)w);
    int rc = z && acc && nxt && e ? eval_check_lam(in, f, 2, 2 * w) : -1;
    if (rc == 0 && has_z) rc = eval_top(in, x->kid[1], z);
    if (rc == 0) rc = eval1(in, x->kid[has_z ? 2 : 1], &src);
    if (rc == 0) rc = view(in, src, &sv);
    if (rc == 0 && (src->rank < 1 || sv.w != w)) rc = eval_malformed(in, x, "the array does not fit");
    int r = rc == 0 ? src->rank : 0;
    int64_t n = rc == 0 ? src->shape[r - 1] : 0;
    if (rc == 0 && has_z && !ex && n == INT64_MAX)
        rc = eval_fail(in, AX_ERR_SHAPE, "%s: the result's extent overflows 64 bits", what);
    int64_t ext = rc == 0 ? n + (has_z && !ex) : 0;   /* the result's innermost extent */
    if (rc == 0) {
        int64_t sh[AX_MAX_RANK];
        memcpy(sh, src->shape, sizeof *sh * (size_t)r);
        sh[r - 1] = ext;
        res = new_array(in, elt, r, sh, what);
        rc = res && !view(in, res, &rv) ? 0 : -1;
    }
    if (rc == 0 && ex) {
        tot = new_array(in, elt, r - 1, src->shape, what);
        rc = tot && !view(in, tot, &tv) ? 0 : -1;
    }
    if (rc == 0) {
        /* With an empty innermost dimension and no z there is nothing to
         * compute (and the number of rows might not even fit). */
        int64_t rows = ext > 0 ? res->size / ext : 0;
        if (ex) rows = tot->size;
        for (int64_t row = 0; rc == 0 && row < rows && !(rc = poll(in)); row++) {
            int64_t b = row * n, o = row * ext;
            if (!has_z && n == 0) continue;
            if (left) {
                int64_t j = 0;
                if (has_z) {
                    if (w > 0) memcpy(acc, z, sizeof *acc * (size_t)w);
                    if (!ex) vstore(&rv, o, acc);
                } else {
                    vload(&sv, b, acc);
                    vstore(&rv, o, acc);
                    j = 1;
                }
                for (; j < n && !(rc = poll(in)); j++) {
                    if (ex) vstore(&rv, o + j, acc);
                    vload(&sv, b + j, e);
                    if ((rc = eval_call2(in, f, acc, e, nxt))) break;
                    Scalar *t = acc;
                    acc = nxt;
                    nxt = t;
                    if (!ex) vstore(&rv, o + j + has_z, acc);
                }
            } else {
                int64_t j = n - 1;
                if (has_z) {
                    if (w > 0) memcpy(acc, z, sizeof *acc * (size_t)w);
                    if (!ex) vstore(&rv, o + n, acc);
                } else {
                    vload(&sv, b + n - 1, acc);
                    vstore(&rv, o + n - 1, acc);
                    j = n - 2;
                }
                for (; j >= 0 && !(rc = poll(in)); j--) {
                    if (ex) vstore(&rv, o + j, acc);
                    vload(&sv, b + j, e);
                    if ((rc = eval_call2(in, f, e, acc, nxt))) break;
                    Scalar *t = acc;
                    acc = nxt;
                    nxt = t;
                    if (!ex) vstore(&rv, o + j, acc);
                }
            }
            if (rc == 0 && ex) vstore(&tv, row, acc);
        }
    }
    eval_release(in, m);
    ax_array_release(src);
    if (rc || !res) {
        ax_array_release(res);
        ax_array_release(tot);
        return -1;
    }
    out[0] = res;
    if (ex) out[1] = tot;
    return 0;
}

static int op_filter(Interp *in, const Node *x, ax_array **out)
{
    const Node *p = x->kid[0];
    ax_array *src = NULL, *res = NULL;
    unsigned char *keep = NULL;
    View sv = VIEW_NONE, rv = VIEW_NONE;
    int64_t count = 0;
    int rc = eval1(in, x->kid[1], &src);
    if (rc == 0) rc = view(in, src, &sv);
    if (rc == 0) rc = eval_check_lam(in, p, 1, sv.w);
    if (rc == 0 && !(keep = ax__malloc((size_t)(src->size > 0 ? src->size : 1)))) rc = eval_nomem(in);
    if (rc == 0) {
        Mark m = eval_mark(in);
        Scalar *e = eval_salloc(in, (size_t)sv.w);
        if (!e) rc = -1;
        for (int64_t i = 0; rc == 0 && i < src->size && !(rc = poll(in)); i++) {
            Scalar c;
            vload(&sv, i, e);
            if ((rc = eval_call(in, p, e, &c))) break;
            keep[i] = eval_truth(c);
            count += keep[i];
        }
        eval_release(in, m);
    }
    if (rc == 0) {
        res = new_array(in, x->type->elt, 1, &count, "ax_filter");
        rc = res && !view(in, res, &rv) ? 0 : -1;
    }
    for (int64_t i = 0, j = 0; rc == 0 && i < src->size && !(rc = poll(in)); i++)
        if (keep[i]) vcopy(&rv, j++, &sv, i, 1);
    free(keep);
    ax_array_release(src);
    return finish(rc, res, out);
}

/* SORT: the order ax_sort defines (include/axle.h), written as a
 * comparison of two keys of type s (negative: a first, ascending):
 * integers by value; floats with every NaN after every number and the
 * numbers in totalOrder (-0.0 before +0.0). */
static int sort_cmp(ax_scalar s, Scalar a, Scalar b)
{
    if (s == AX_BOOL) return (int)a.b - (int)b.b;
    if (s == AX_F32 || s == AX_F64) {
        double x = s == AX_F32 ? a.f32 : a.f64, y = s == AX_F32 ? b.f32 : b.f64;
        bool nx = isnan(x), ny = isnan(y);
        if (nx || ny) return (int)nx - (int)ny;
        if (x != y) return x < y ? -1 : 1;
        return (signbit(y) != 0) - (signbit(x) != 0);
    }
    if (sc_is_signed(s)) return (a.i > b.i) - (a.i < b.i);
    return (a.u > b.u) - (a.u < b.u);
}

/* Each row sorted by a merge sort of its positions (stable: a tie takes
 * the left run's element); descending reverses the comparison, so equal
 * keys keep their order there too. */
static int op_sort(Interp *in, const Node *x, ax_array **out)
{
    ax_array *src[2] = {NULL, NULL}, *res[2] = {NULL, NULL};
    View sv[2] = {VIEW_NONE, VIEW_NONE}, rv[2] = {VIEW_NONE, VIEW_NONE};
    int nk = x->n, rc = 0;
    for (int k = 0; rc == 0 && k < nk; k++) rc = eval1(in, x->kid[k], &src[k]) || view(in, src[k], &sv[k]);
    if (rc == 0 && nk > 1 && src[1]->size != src[0]->size) rc = eval_malformed(in, x, "values not of the keys' shape");
    int r = src[0] ? src[0]->rank : 0;
    int64_t n = r > 0 && src[0] ? src[0]->shape[r - 1] : 0, rows = n > 0 ? src[0]->size / n : 0;
    for (int k = 0; rc == 0 && k < nk; k++) {
        res[k] = new_array(in, x->kid[k]->type->elt, r, src[0]->shape, "ax_sort");
        rc = res[k] && !view(in, res[k], &rv[k]) ? 0 : -1;
    }
    int64_t *ix = NULL, *tmp = NULL;
    if (rc == 0 && n > 0 &&
        (!(ix = ax__malloc(sizeof *ix * (size_t)n)) || !(tmp = ax__malloc(sizeof *tmp * (size_t)n))))
        rc = eval_nomem(in);
    ax_scalar ks = rc == 0 ? sv[0].lt[0] : AX_I32;
    int dir = x->a ? -1 : 1;
    for (int64_t row = 0; rc == 0 && row < rows && !(rc = poll(in)); row++) {
        const void *kb = (const char *)sv[0].a->buf[0] + (size_t)(row * n) * ax_scalar_size(ks);
        for (int64_t i = 0; i < n; i++) ix[i] = i;
        for (int64_t w = 1; w < n; w *= 2) {
            for (int64_t lo = 0; lo < n; lo += 2 * w) {
                int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
                int64_t a = lo, b = mid, o = lo;
                while (a < mid && b < hi)
                    tmp[o++] = dir * sort_cmp(ks, sc_load(kb, ks, ix[b]), sc_load(kb, ks, ix[a])) < 0 ? ix[b++] : ix[a++];
                while (a < mid) tmp[o++] = ix[a++];
                while (b < hi) tmp[o++] = ix[b++];
            }
            int64_t *t = ix;
            ix = tmp;
            tmp = t;
        }
        for (int k = 0; k < nk; k++)
            for (int64_t i = 0; i < n; i++) vcopy(&rv[k], row * n + i, &sv[k], row * n + ix[i], 1);
    }
    free(ix);
    free(tmp);
    for (int k = 0; k < nk; k++) ax_array_release(src[k]);
    if (rc) {
        for (int k = 0; k < nk; k++) ax_array_release(res[k]);
        return -1;
    }
    for (int k = 0; k < nk; k++) out[k] = res[k];
    return 0;
}

/* STENCIL and STENCIL2: f receives each input's neighbourhood in row-major
 * order (input 0's, then input 1's), then, for ax_stencil_ix, the
 * element's index; the result has the inputs' intersection shape; each
 * input is read with its own boundary rule. */
static int op_stencil(Interp *in, const Node *x, ax_array **out)
{
    const Stencil *st = x->sten;
    const Node *f = x->kid[0];
    int nin = x->op == OP_STENCIL2 ? 2 : 1;
    ax_array *src[2] = {NULL, NULL}, *res = NULL;
    View sv[2] = {VIEW_NONE, VIEW_NONE}, rv = VIEW_NONE;
    Scalar *cval[2] = {NULL, NULL};
    int64_t *offs[2] = {NULL, NULL}, nn[2] = {0, 0};
    int r = st ? st->rank : -1, width = 0;
    Mark m = eval_mark(in);
    int rc = st && st->ninputs == nin && r >= 0 && r <= AX_MAX_RANK && x->n >= 1 + nin
                 ? 0 : eval_malformed(in, x, "bad stencil description");
    for (int q = 0; rc == 0 && q < nin; q++) {
        if ((rc = eval1(in, x->kid[1 + q], &src[q])) || (rc = view(in, src[q], &sv[q]))) break;
        if (src[q]->rank != r) {
            rc = eval_malformed(in, x, "the array's rank differs from the stencil's");
            break;
        }
        nn[q] = 1;
        for (int d = 0; d < r; d++) {
            if (st->size[q][d] < 1) rc = eval_malformed(in, x, "bad stencil size");
            nn[q] *= st->size[q][d];
        }
        if (rc) break;
        width += (int)nn[q] * sv[q].w;
        /* Offsets of the neighbourhood from its centre, row-major. */
        if (!(offs[q] = ax__malloc(sizeof *offs[q] * (size_t)(nn[q] * (r > 0 ? r : 1))))) {
            rc = eval_nomem(in);
            break;
        }
        int64_t pos[AX_MAX_RANK] = {0}, sz[AX_MAX_RANK];
        for (int d = 0; d < r; d++) sz[d] = st->size[q][d];
        for (int64_t k = 0; k < nn[q]; k++, ix_next(r, sz, pos))
            for (int d = 0; d < r; d++) offs[q][k * r + d] = pos[d] - sz[d] / 2;
        if (st->bound[q] == AX_CONSTANT) {
            int ck = st->constkid[q];
            if (ck < 1 + nin || ck >= x->n) {
                rc = eval_malformed(in, x, "no boundary value");
                break;
            }
            if (!(cval[q] = eval_salloc(in, (size_t)sv[q].w)) || (rc = eval_top(in, x->kid[ck], cval[q]))) {
                rc = -1;
                break;
            }
        }
    }
    if (rc == 0 && st->ix) width += r;   /* the index's components */
    if (rc == 0) rc = eval_check_lam(in, f, -1, width);
    int64_t sh[AX_MAX_RANK], ix[AX_MAX_RANK] = {0};
    if (rc == 0) {
        intersect(r, src, nin, sh);
        res = new_array(in, x->type->elt, r, sh, api_name(x->op));
        rc = res && !view(in, res, &rv) ? 0 : -1;
    }
    Scalar *args = NULL, *y = NULL;
    if (rc == 0 && (!(args = eval_salloc(in, (size_t)width)) || !(y = eval_salloc(in, (size_t)rv.w)))) rc = -1;
    for (int64_t i = 0; rc == 0 && i < res->size && !(rc = poll(in)); i++, ix_next(r, sh, ix)) {
        Scalar *a = args;
        for (int q = 0; q < nin; q++) {
            const int64_t *ext = src[q]->shape;
            for (int64_t k = 0; k < nn[q]; k++, a += sv[q].w) {
                const int64_t *o = offs[q] + k * r;
                int64_t lin = 0;
                for (int d = 0; d < r; d++) {
                    int64_t c = ir_boundary(st->bound[q], ix[d] + o[d], ext[d]);
                    if (c < 0) {
                        lin = -1;
                        break;
                    }
                    lin = lin * ext[d] + c;
                }
                if (lin >= 0) vload(&sv[q], lin, a);
                else if (sv[q].w > 0) memcpy(a, cval[q], sizeof *a * (size_t)sv[q].w);
            }
        }
        for (int d = 0; st->ix && d < r; d++) a[d].i = ix[d];
        if ((rc = eval_call(in, f, args, y))) break;
        vstore(&rv, i, y);
    }
    eval_release(in, m);
    for (int q = 0; q < 2; q++) {
        free(offs[q]);
        ax_array_release(src[q]);
    }
    return finish(rc, res, out);
}

/* A multi-generator loop (ir.h Loop; the planner's, src/opt/planloops.c): the
 * space is evaluated (every member's element work, position by position),
 * then each generator takes its component: a collect copies it, a filter
 * keeps it where its predicate component holds, a reduction folds it
 * along the innermost dimension as op_fold does. */
typedef struct LoopOut {
    ax_array *a;
    View v;
    int off, w;               /* the component's leaves in the space's element */
    Scalar *acc, *nxt, *el, *z;   /* a reduction's */
    bool have;                /* acc holds a value (z, or an element) */
} LoopOut;

static int op_loop(Interp *in, const Node *x, ax_array **out)
{
    const Loop *lp = x->loop;
    if (!lp || lp->ngen < 1 || x->type->kind != TY_ARRAYS || x->type->n != lp->ngen)
        return eval_malformed(in, x, "no generators");
    int ng = lp->ngen;
    ax_array *src = NULL;
    View sv = VIEW_NONE;
    LoopOut *o = ax__calloc((size_t)ng, sizeof *o);
    Mark m = eval_mark(in);
    int rc = o ? eval1(in, x->kid[0], &src) : eval_nomem(in);
    if (rc == 0) rc = view(in, src, &sv);
    if (rc == 0 && src->rank < 1) rc = eval_malformed(in, x, "rank 0");
    int r = rc == 0 ? src->rank : 1;
    int64_t n = rc == 0 ? src->shape[r - 1] : 0, rows = 0;
    if (rc == 0 && (rows = shape_size_checked(in->cx, "a loop", r - 1, src->shape)) < 0) rc = -1;
    const Type *se = rc == 0 ? x->kid[0]->type->elt : NULL;
    for (int g = 0; rc == 0 && g < ng; g++) {
        const LoopGen *q = &lp->gen[g];
        const Type *ct = loop_comp_type(x, q->comp), *rt = x->type->elts[g];
        if (!ct || rt->kind != TY_ARRAY) {
            rc = eval_malformed(in, x, "a generator does not fit");
            break;
        }
        o[g].off = q->comp < 0 ? 0 : ty_leaf_offset(se, q->comp);
        o[g].w = ct->width;
        if (q->kind == LOOP_COLLECT) {
            o[g].a = new_array(in, rt->elt, r, src->shape, "ax_map");
        } else if (q->kind == LOOP_REDUCE) {
            size_t w = (size_t)ct->width + 1;
            o[g].acc = eval_salloc(in, w), o[g].nxt = eval_salloc(in, w), o[g].el = eval_salloc(in, w), o[g].z = eval_salloc(in, w);
            if (!o[g].acc || !o[g].nxt || !o[g].el || !o[g].z) { rc = -1; break; }
            rc = eval_check_lam(in, x->kid[q->op], 2, 2 * ct->width);
            if (rc == 0 && q->z >= 0) rc = eval_top(in, x->kid[q->z], o[g].z);
            if (rc == 0) o[g].a = new_array(in, rt->elt, r - 1, src->shape, q->z >= 0 ? "ax_fold" : "ax_fold1");
            if (rc == 0 && q->z < 0 && n == 0 && rows > 0)
                rc = eval_fail(in, AX_ERR_SHAPE, "ax_fold1: cannot reduce an empty row (the innermost extent is 0)");
        } else if (q->kind == LOOP_FILTER) {
            if (r != 1) { rc = eval_malformed(in, x, "a filter over rank > 1"); break; }
            int pl = ty_leaf_offset(se, q->pred);
            int64_t count = 0;
            for (int64_t i = 0; i < n; i++) count += eval_truth(sc_load(src->buf[pl], sv.lt[pl], i));
            o[g].a = new_array(in, rt->elt, 1, &count, "ax_filter");
        } else {
            rc = eval_malformed(in, x, "an unknown generator");
        }
        if (rc == 0 && (!o[g].a || view(in, o[g].a, &o[g].v))) rc = -1;
    }
    /* element by element (a fault is the first one in that order) */
    for (int64_t row = 0; rc == 0 && row < rows && !(rc = poll(in)); row++) {
        for (int g = 0; g < ng; g++)
            if (lp->gen[g].kind == LOOP_REDUCE && lp->gen[g].z >= 0 && o[g].w > 0)
                memcpy(o[g].acc, o[g].z, sizeof *o[g].z * (size_t)o[g].w);
        for (int g = 0; g < ng; g++) o[g].have = lp->gen[g].z >= 0;
        for (int64_t j = 0; rc == 0 && j < n && !(rc = poll(in)); j++) {
            int64_t i = row * n + j;
            for (int g = 0; rc == 0 && g < ng; g++) {
                const LoopGen *q = &lp->gen[g];
                LoopOut *a = &o[g];
                if (q->kind != LOOP_REDUCE) continue;
                if (q->pred >= 0) {
                    int pl = ty_leaf_offset(se, q->pred);
                    if (!eval_truth(sc_load(src->buf[pl], sv.lt[pl], i))) continue;
                }
                Scalar *e = a->have ? a->el : a->acc;
                for (int c = 0; c < a->w; c++) e[c] = sc_load(src->buf[a->off + c], sv.lt[a->off + c], i);
                if (!a->have) {
                    a->have = true;
                    continue;
                }
                if ((rc = eval_call2(in, x->kid[q->op], a->acc, e, a->nxt))) break;
                Scalar *t = a->acc;
                a->acc = a->nxt;
                a->nxt = t;
            }
        }
        for (int g = 0; rc == 0 && g < ng; g++)
            if (lp->gen[g].kind == LOOP_REDUCE && !o[g].have)
                rc = eval_fail(in, AX_ERR_SHAPE, "ax_fold1: cannot reduce an empty row (the innermost extent is 0)");
        for (int g = 0; rc == 0 && g < ng; g++)
            if (lp->gen[g].kind == LOOP_REDUCE) vstore(&o[g].v, row, o[g].acc);
    }
    for (int g = 0; rc == 0 && g < ng; g++) {
        const LoopGen *q = &lp->gen[g];
        LoopOut *a = &o[g];
        if (q->kind == LOOP_COLLECT) {
            for (int c = 0; c < a->w; c++)
                memcpy(a->a->buf[c], src->buf[a->off + c], (size_t)src->size * ax_scalar_size(sv.lt[a->off + c]));
        } else if (q->kind == LOOP_FILTER) {
            int pl = ty_leaf_offset(se, q->pred);
            for (int64_t i = 0, k = 0; i < n; i++) {
                if (!eval_truth(sc_load(src->buf[pl], sv.lt[pl], i))) continue;
                for (int c = 0; c < a->w; c++)
                    sc_store(a->a->buf[c], sv.lt[a->off + c], k, sc_load(src->buf[a->off + c], sv.lt[a->off + c], i));
                k++;
            }
        }
    }
    eval_release(in, m);
    ax_array_release(src);
    for (int g = 0; o && g < ng; g++) {
        if (rc == 0) out[g] = o[g].a;
        else ax_array_release(o[g].a);
    }
    free(o);
    return rc ? -1 : 0;
}

/* One array operation (the host walk's callback: lets, tuples, acond and
 * awhile are walked in src/runtime/host.c). */
static int interp_op(Host *h, const Node *x, ax_array **out)
{
    Interp *in = h->self;
    switch (x->op) {


    case OP_UNIT: return op_unit(in, x, out);
    case OP_GENERATE: return op_generate(in, x, out);
    case OP_MAP:
    case OP_ZIPWITH: return op_zipwith(in, x, out);
    case OP_BACKPERMUTE: return op_backpermute(in, x, out);
    case OP_TRANSFORM: return op_transform(in, x, out);
    case OP_DELAYED: return op_delayed(in, x, out);
    case OP_PERMUTE: return op_permute(in, x, out);
    case OP_REPLICATE:
    case OP_SLICE: return op_slice(in, x, out);
    case OP_RESHAPE: return op_reshape(in, x, out);
    case OP_FOLD:
    case OP_FOLD1: return op_fold(in, x, out);
    case OP_FOLDSEG:
    case OP_FOLD1SEG: return op_foldseg(in, x, out);
    case OP_SCANL:
    case OP_SCANL1:
    case OP_SCANR:
    case OP_SCANR1:
    case OP_SCANLEX:
    case OP_SCANREX: return op_scan(in, x, out);
    case OP_FILTER: return op_filter(in, x, out);
    case OP_STENCIL:
    case OP_STENCIL2: return op_stencil(in, x, out);
    case OP_LOOP: return op_loop(in, x, out);
    case OP_SORT: return op_sort(in, x, out);



    default:
        return eval_malformed(in, x, "not an array computation");
    }
}

static int interp_cond(Host *h, const Node *x, bool *c)
{
    Scalar v;
    if (eval_top(h->self, x->kid[0], &v)) return -1;
    *c = eval_truth(v);
    return 0;
}

static const HostOps interp_host = {.name = "interp", .op = interp_op, .cond = interp_cond, .embeds_delayed = false};

/* ------------------------------------------------------------ entry */

int interp_run(ax_ctx *cx, Program *p, ax_array **out, int max)
{
    Interp in;
    memset(&in, 0, sizeof in);
    in.cx = cx;
    in.safe = !cx->opt.unsafe;
    if (!p || !p->root || !op_is_array(p->root->op) || p->nvars < 0) {
        ctx_error(cx, AX_ERR_BACKEND, "interp: no program to run");
        return -1;
    }
    in.nvars = p->nvars;
    size_t nv = (size_t)(p->nvars > 0 ? p->nvars : 1);
    int w = awidth(p->root->type);
    in.senv = ax__calloc(nv, sizeof *in.senv);
    /* the interpreter is the oracle, run at test sizes: it also releases
     * arrays after their last read, as the CPU executor does */
    Liveness *live = liveness_counts(p);
    if (!host_init(&in.h, &interp_host, &in, cx, p, live)) {
        free(live);
        free(in.senv);
        return -1;
    }
    in.first = in.cur = eval_chunk_new(CHUNK_MIN);
    ax_array **res = ax__calloc((size_t)(w > 0 ? w : 1), sizeof *res);
    int n = -1;
    if (!in.senv || !in.first || !res) {
        eval_nomem(&in);
    } else if (eval_acc(&in, p->root, res) == 0) {
        n = max < 0 ? 0 : w < max ? w : max;
        for (int k = 0; k < w; k++) {
            if (k < n) out[k] = res[k];
            else ax_array_release(res[k]);
        }
    }
    free(res);
    eval_scratch_free(&in);
    free(in.senv);
    host_free(&in.h);
    free(live);
    return n;
}

/* ------------------------------------------------------------ backend */

static bool interp_available(ax_ctx *cx) { return true; }

static int interp_prepare(ax_ctx *cx, Program *p, void **state)
{
    *state = NULL;   /* nothing to prepare: the program is run as it is */
    return 0;
}

static int interp_backend_run(ax_ctx *cx, Program *p, void *state, ax_array **out, int max)
{
    return interp_run(cx, p, out, max);
}

static void interp_release(void *state) {}

/* A program in a file needs nothing but itself here. */
static int interp_save(ax_ctx *cx, const Program *p, void *state, struct Bytes *w)
{
    (void)cx, (void)p, (void)state, (void)w;
    return 0;
}

static int interp_load(ax_ctx *cx, Program *p, struct Bytes *in, const BundleLink *link, void **state)
{
    (void)in, (void)link;
    return interp_prepare(cx, p, state);
}

static int interp_export(ax_ctx *cx, const Program *p, void *state, const char *name, struct Bytes *w,
                         struct Bytes *k, struct Bytes *c)
{
    (void)cx, (void)p, (void)state, (void)w, (void)k;
    bytes_printf(c, "/* (the interpreter runs this program: no kernels) */\n"
                 "static const ax_linked_fn %s_fns[] = {{0, 0}};\nstatic const char %s_isa[] = \"\";\n", name, name);
    return c->bad ? -1 : 0;
}

const Backend backend_interp = {
    .name = "interp",
    .kind = AX_BACKEND_INTERP,
    .available = interp_available,
    .prepare = interp_prepare,
    .run = interp_backend_run,
    .release = interp_release,
    .save = interp_save,
    .load = interp_load,
    .exportc = interp_export,
};

/* ------------------------------------------------------------ an operation of another executor's walk */

/* host.h: x run with another executor's walk (its environment and
 * liveness counters, shared through the copy of h), on the state of ie
 * (runtime/eval.c: interp_eval_new). */
int interp_run_op(InterpEval *ie, Host *h, const Node *x, ax_array **out)
{
    Interp *in = &ie->in;
    in->h = *h;
    in->h.ops = &interp_host;
    in->h.self = in;
    Mark m = eval_mark(in);
    int rc = interp_op(&in->h, x, out);
    eval_release(in, m);
    return rc;
}


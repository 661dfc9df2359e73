/*
 * The array half of the embedding: each collective operation checks its
 * operands' types and ranks, calls its callbacks once to get their bodies
 * (HOAS), and allocates one node of the source graph.  Nothing is copied:
 * using an ax_acc twice makes two edges to one node, which sharing recovery
 * (sharing.c, paper s.3) turns into a let.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "build.h"
#include "runtime/array.h"
#include <stdlib.h>
#include <string.h>

/* The context of the first non-NULL computation. */
static ax_ctx *accs_ctx(int n, const ax_acc *as)
{
    for (int i = 0; i < n; i++)
        if (as[i]) return as[i]->cx;
    return NULL;
}

/* Checks that every computation is present, of cx, and (if want_array) a
 * single array.  Records an error naming the operation and operand. */
static bool check_accs(ax_ctx *cx, const char *what, int n, const ax_acc *as, bool want_array)
{
    for (int i = 0; i < n; i++) {
        if (!as[i]) {
            /* A NULL operand is usually a failed builder whose error is
             * already recorded; if not, say so. */
            ctx_error(cx, AX_ERR_BUILD, "%s: array operand %d is NULL", what, i + 1);
            return false;
        }
        if (as[i]->cx != cx) {
            ctx_error(cx, AX_ERR_BUILD, "%s: array operand %d was built in another context", what, i + 1);
            return false;
        }
        if (want_array && as[i]->type->kind != TY_ARRAY) {
            ctx_error(cx, AX_ERR_BUILD, "%s: operand %d is %s, not an array", what, i + 1,
                      tstr(cx, as[i]->type));
            return false;
        }
    }
    return true;
}

static Node *mk(ax_ctx *cx, const char *what, Op op, int n, const Type *t)
{
    /* Another thread inside the context (ax_run, ...): touch nothing, and
     * let it report the clash (ctx_touch). */
    if (!ctx_touch_as(cx, what)) return NULL;
    Node *x = node_new(&cx->arena, op, n, t);
    if (!x) return ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", what);
    x->cx = cx;
    return x;
}

static const Type *arr_t(ax_ctx *cx, const Type *elt, int rank)
{
    const Type *t = ty_array(&cx->arena, elt, rank);
    if (!t) ctx_error(cx, AX_ERR_NOMEM, "out of memory");
    return t;
}

/* An expression operand: made a node of cx and checked against `want`
 * (NULL: any element type). */
static Node *exp_arg(ax_ctx *cx, const char *what, const char *name, ax_exp e, const Type *want)
{
    Node *x = adopt(cx, e, what);
    if (!x) {
        if (cx->status == AX_OK) ctx_error(cx, AX_ERR_BUILD, "%s: %s is invalid", what, name);
        return NULL;
    }
    if (want && !ty_eq(x->type, want))
        return ctx_error(cx, AX_ERR_BUILD, "%s: %s is %s where %s is needed", what, name,
                         tstr(cx, x->type), tstr(cx, want));
    if (!want && !ty_is_elt(x->type))
        return ctx_error(cx, AX_ERR_BUILD, "%s: %s is %s, not a scalar expression", what, name,
                         tstr(cx, x->type));
    return x;
}

/* An index (shape) operand of any rank. */
static Node *shape_arg(ax_ctx *cx, const char *what, ax_exp sh)
{
    Node *x = adopt(cx, sh, what);
    if (!x) {
        if (cx->status == AX_OK) ctx_error(cx, AX_ERR_BUILD, "%s: the shape is invalid", what);
        return NULL;
    }
    if (x->type->kind != TY_INDEX)
        return ctx_error(cx, AX_ERR_BUILD, "%s: the shape is %s, not an index (use ax_ix1, ax_index...)",
                         what, tstr(cx, x->type));
    return x;
}

/* ------------------------------------------------------------ leaves */

ax_acc ax_use(ax_ctx *cx, ax_array *a)
{
    if (!cx) return NULL;
    if (!a) return ctx_error(cx, AX_ERR_BUILD, "ax_use: the array is NULL");
    if (a->cx != cx) return ctx_error(cx, AX_ERR_BUILD, "ax_use: the array belongs to another context");
    if (cx->nuses == cx->capuses) {
        int cap = cx->capuses ? cx->capuses * 2 : 16;
        ax_array **u = ax__realloc(cx->uses, sizeof *u * (size_t)cap);
        if (!u) return ctx_error(cx, AX_ERR_NOMEM, "ax_use: out of memory");
        cx->uses = u;
        cx->capuses = cap;
    }
    const Type *t = arr_t(cx, a->elt, a->rank);
    Node *x = t ? mk(cx, "ax_use", OP_USE, 0, t) : NULL;
    if (!x) return NULL;
    x->arr = ax_array_retain(a);
    cx->uses[cx->nuses++] = a;
    return x;
}

/* Whether v is made of constants only (a scalar, a tuple or an index of
 * them). */
static bool closed_const(const Node *v)
{
    if (v->op == OP_CONST) return true;
    if (v->op != OP_TUPLE && v->op != OP_IXCONS) return false;
    for (int i = 0; i < v->n; i++)
        if (!closed_const(v->kid[i])) return false;
    return true;
}

/* Writes v's constant leaves, in order, into a's buffers from leaf *l. */
static void store_leaves(ax_array *a, const Node *v, int *l)
{
    if (v->op == OP_CONST) {
        sc_store(a->buf[*l], ty_leaf(a->elt, *l), 0, v->c);
        ++*l;
        return;
    }
    for (int i = 0; i < v->n; i++) store_leaves(a, v->kid[i], l);
}

/* A host array for a builder, not yet used: rank `rank`, every extent 0
 * (a parameter's placeholder) or rank 0 (a constant).  Errors are left
 * pending on cx, as builders' are. */
static ax_array *builder_array(ax_ctx *cx, const char *what, const Type *elt, int rank)
{
    if (!ctx_touch_as(cx, what)) return NULL;
    int64_t zeros[AX_MAX_RANK] = {0};
    ax_array *h = array_alloc(cx, elt, rank, zeros, true);
    if (!h && cx->status == AX_OK) ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", what);
    return h;
}

static ax_acc use_own(ax_ctx *cx, ax_array *h)
{
    ax_acc r = ax_use(cx, h);
    ax_array_release(h);   /* the use node holds it now */
    return r;
}

ax_acc ax_unit(ax_ctx *cx, ax_exp e)
{
    if (!cx) return NULL;
    Node *v = exp_arg(cx, "ax_unit", "the element", e, NULL);
    if (!v) return NULL;
    /* A unit of constants is data, not code: it becomes a rank-0 host
     * array, so that a program that differs only in the value compiles to
     * the same kernels and finds them in the cache (a constant in a scalar
     * function, by contrast, is compiled in). */
    if (closed_const(v)) {
        ax_array *h = builder_array(cx, "ax_unit", v->type, 0);
        if (!h) return NULL;
        int l = 0;
        store_leaves(h, v, &l);
        return use_own(cx, h);
    }
    const Type *t = arr_t(cx, v->type, 0);
    Node *x = t ? mk(cx, "ax_unit", OP_UNIT, 1, t) : NULL;
    if (!x) return NULL;
    x->kid[0] = v;
    return x;
}

ax_acc ax_param(ax_ctx *cx, int index, const ax_type *elem, int rank)
{
    if (!cx) return NULL;
    if (index < 0 || index >= AX_MAX_PARAMS)
        return ctx_error(cx, AX_ERR_BUILD, "ax_param: the index %d is not in 0..%d", index, AX_MAX_PARAMS - 1);
    if (!ty_is_elt(elem))
        return ctx_error(cx, AX_ERR_BUILD, "ax_param: the element type is %s",
                         elem ? "not an element type" : "NULL");
    if (rank < 0 || rank > AX_MAX_RANK)
        return ctx_error(cx, AX_ERR_BUILD, "ax_param: the rank %d is not in 0..%d", rank, AX_MAX_RANK);
    /* A placeholder host array, marked: the program reads whatever array
     * ax_program_run_with puts in its place (driver/program.c). */
    ax_array *h = builder_array(cx, "ax_param", elem, rank);
    if (!h) return NULL;
    h->param = index + 1;
    return use_own(cx, h);
}

ax_exp ax_param_exp(ax_ctx *cx, int index, const ax_type *t)
{
    return ax_at_linear(ax_param(cx, index, t, 0), ax_i64(0));
}

ax_acc ax_generate(ax_ctx *cx, ax_exp sh, ax_fn1 f, void *env)
{
    if (!cx) cx = ax_exp_ctx(sh);
    if (!cx) return NULL;
    Node *s = shape_arg(cx, "ax_generate", sh);
    if (!s) return NULL;
    Node *lam = build_lam(cx, "ax_generate", 1, &s->type, invoke1, (void *)f, env, NULL);
    if (!lam) return NULL;
    const Type *t = arr_t(cx, lam->type, s->type->n);
    Node *x = t ? mk(cx, "ax_generate", OP_GENERATE, 2, t) : NULL;
    if (!x) return NULL;
    x->kid[0] = s;
    x->kid[1] = lam;
    return x;
}

/* ------------------------------------------------------------ elementwise */

static ax_acc zip_n(const char *what, void *f, Invoke call, void *env, int k, const ax_acc *as)
{
    ax_ctx *cx = accs_ctx(k, as);
    if (!cx || !check_accs(cx, what, k, as, true)) return NULL;
    const Type *pt[3];
    for (int i = 0; i < k; i++) {
        pt[i] = as[i]->type->elt;
        if (as[i]->type->rank != as[0]->type->rank)
            return ctx_error(cx, AX_ERR_BUILD, "%s: the arrays differ in rank (%s and %s)", what,
                             tstr(cx, as[0]->type), tstr(cx, as[i]->type));
    }
    Node *lam = build_lam(cx, what, k, pt, call, f, env, NULL);
    if (!lam) return NULL;
    const Type *t = arr_t(cx, lam->type, as[0]->type->rank);
    Node *x = t ? mk(cx, what, k == 1 ? OP_MAP : OP_ZIPWITH, k + 1, t) : NULL;
    if (!x) return NULL;
    x->kid[0] = lam;
    for (int i = 0; i < k; i++) x->kid[1 + i] = as[i];
    return x;
}

ax_acc ax_map(ax_fn1 f, void *env, ax_acc a) { return zip_n("ax_map", (void *)f, invoke1, env, 1, &a); }
ax_acc ax_zip_with(ax_fn2 f, void *env, ax_acc a, ax_acc b)
{
    ax_acc v[2] = {a, b};
    return zip_n("ax_zip_with", (void *)f, invoke2, env, 2, v);
}
ax_acc ax_zip_with3(ax_fn3 f, void *env, ax_acc a, ax_acc b, ax_acc c)
{
    ax_acc v[3] = {a, b, c};
    return zip_n("ax_zip_with3", (void *)f, invoke3, env, 3, v);
}

ax_acc ax_backpermute(ax_exp sh, ax_fn1 p, void *env, ax_acc a)
{
    const char *what = "ax_backpermute";
    ax_ctx *cx = a ? a->cx : ax_exp_ctx(sh);
    if (!cx || !check_accs(cx, what, 1, &a, true)) return NULL;
    Node *s = shape_arg(cx, what, sh);
    if (!s) return NULL;
    Node *lam = build_lam(cx, what, 1, &s->type, invoke1, (void *)p, env, ty_index(NULL, a->type->rank));
    if (!lam) return NULL;
    const Type *t = arr_t(cx, a->type->elt, s->type->n);
    Node *x = t ? mk(cx, what, OP_BACKPERMUTE, 3, t) : NULL;
    if (!x) return NULL;
    x->kid[0] = s;
    x->kid[1] = lam;
    x->kid[2] = a;
    return x;
}

ax_acc ax_permute(ax_fn2 comb, void *cenv, ax_acc dflt, ax_fn1 p, void *penv, ax_acc a)
{
    const char *what = "ax_permute";
    ax_acc v[2] = {dflt, a};
    ax_ctx *cx = accs_ctx(2, v);
    if (!cx || !check_accs(cx, what, 2, v, true)) return NULL;
    if (!ty_eq(dflt->type->elt, a->type->elt))
        return ctx_error(cx, AX_ERR_BUILD, "%s: the defaults %s and the source %s differ in element type",
                         what, tstr(cx, dflt->type), tstr(cx, a->type));
    const Type *et[2] = {a->type->elt, a->type->elt};
    Node *c = build_lam(cx, "ax_permute (combination)", 2, et, invoke2, (void *)comb, cenv, a->type->elt);
    if (!c) return NULL;
    const Type *ixt = ty_index(NULL, a->type->rank);
    Node *ix = build_lam(cx, "ax_permute (index)", 1, &ixt, invoke1, (void *)p, penv,
                         ty_index(NULL, dflt->type->rank));
    if (!ix) return NULL;
    Node *x = mk(cx, what, OP_PERMUTE, 4, dflt->type);
    if (!x) return NULL;
    x->kid[0] = c;
    x->kid[1] = dflt;
    x->kid[2] = ix;
    x->kid[3] = a;
    return x;
}

/* ------------------------------------------------------------ shape */

ax_slice ax_all(void) { ax_slice s; memset(&s, 0, sizeof s); return s; }
ax_slice ax_fixed(ax_exp at) { ax_slice s = ax_all(); s.fixed = 1; s.at = at; return s; }

static ax_acc slice_op(Op op, const char *what, int nspec, const ax_slice *spec, ax_acc a)
{
    if (!a) return NULL;
    ax_ctx *cx = a->cx;
    if (!check_accs(cx, what, 1, &a, true)) return NULL;
    if (nspec > 0 && nspec <= AX_MAX_RANK && !spec)
        return ctx_error(cx, AX_ERR_BUILD, "%s: the specifier list is NULL (%d specifiers)", what, nspec);
    if (nspec < 0 || nspec > AX_MAX_RANK)
        return ctx_error(cx, AX_ERR_BUILD, "%s: %d specifiers (0..%d allowed)", what, nspec, AX_MAX_RANK);
    int nall = 0, nfixed = 0;
    for (int i = 0; i < nspec; i++) spec[i].fixed ? nfixed++ : nall++;
    int rank = a->type->rank;
    if (op == OP_REPLICATE ? nall != rank : nspec != rank)
        return ctx_error(cx, AX_ERR_BUILD, "%s: %d specifiers (%d ax_all) do not fit an array of rank %d", what,
                         nspec, nall, rank);
    Slice *sl = arena_alloc(&cx->arena, sizeof *sl);
    const Type *t = arr_t(cx, a->type->elt, op == OP_REPLICATE ? nspec : nall);
    Node *x = sl && t ? mk(cx, what, op, 1 + nfixed, t) : NULL;
    if (!x) return NULL;
    sl->n = nspec;
    x->kid[0] = a;
    for (int i = 0, k = 0; i < nspec; i++) {
        sl->fixed[i] = (unsigned char)(spec[i].fixed != 0);
        if (!spec[i].fixed) continue;
        Node *e = exp_arg(cx, what, "a fixed index", exp_to_i64(spec[i].at, what), ty_i64());
        if (!e) return NULL;
        x->kid[1 + k++] = e;
    }
    x->slice = sl;
    return x;
}

ax_acc ax_replicate(int nspec, const ax_slice *spec, ax_acc a)
{
    return slice_op(OP_REPLICATE, "ax_replicate", nspec, spec, a);
}
ax_acc ax_slice_(int nspec, const ax_slice *spec, ax_acc a) { return slice_op(OP_SLICE, "ax_slice_", nspec, spec, a); }

ax_acc ax_reshape(ax_exp sh, ax_acc a)
{
    const char *what = "ax_reshape";
    ax_ctx *cx = a ? a->cx : ax_exp_ctx(sh);
    if (!cx || !check_accs(cx, what, 1, &a, true)) return NULL;
    Node *s = shape_arg(cx, what, sh);
    if (!s) return NULL;
    const Type *t = arr_t(cx, a->type->elt, s->type->n);
    Node *x = t ? mk(cx, what, OP_RESHAPE, 2, t) : NULL;
    if (!x) return NULL;
    x->kid[0] = s;
    x->kid[1] = a;
    return x;
}

ax_acc ax_flatten(ax_acc a)
{
    if (!a) return NULL;
    if (a->type->kind == TY_ARRAY && a->type->rank == 1) return a;
    return ax_reshape(ax_ix1(ax_size(a)), a);
}

/* Transpose: a backpermute whose index function reorders the index, so
 * that fusion treats it as any other index transform (thesis s.4: a
 * delayed array read through a new index).  The order is copied into the
 * environment the callback sees; callbacks run while the term is built. */
typedef struct Transpose {
    int rank;
    int src[AX_MAX_RANK];   /* src[d]: the result's dimension d is a's src[d] */
} Transpose;

/* ix, an index of the result, as the index of a it reads. */
static ax_exp transpose_ix(ax_exp ix, void *env)
{
    const Transpose *t = env;
    ax_exp c[AX_MAX_RANK];
    for (int d = 0; d < t->rank; d++) c[t->src[d]] = ax_index_get(ix, d);
    return ax_index(t->rank, c);
}

ax_acc ax_compute(ax_acc a)
{
    const char *what = "ax_compute";
    if (!a) return NULL;
    ax_ctx *cx = a->cx;
    if (!check_accs(cx, what, 1, &a, true)) return NULL;
    Node *x = mk(cx, what, OP_COMPUTE, 1, a->type);
    if (!x) return NULL;
    x->kid[0] = a;
    return x;
}

ax_acc ax_transpose(ax_acc a, const int *perm)
{
    const char *what = "ax_transpose";
    if (!a) return NULL;
    ax_ctx *cx = a->cx;
    if (!check_accs(cx, what, 1, &a, true)) return NULL;
    Transpose t = {.rank = a->type->rank};
    bool seen[AX_MAX_RANK] = {false};
    for (int d = 0; d < t.rank; d++) {
        int s = perm ? perm[d] : t.rank - 1 - d;
        if (s < 0 || s >= t.rank)
            return ctx_error(cx, AX_ERR_BUILD, "%s: perm[%d] is %d, not a dimension of an array of rank %d", what, d,
                             s, t.rank);
        if (seen[s])
            return ctx_error(cx, AX_ERR_BUILD, "%s: perm names dimension %d twice (perm[%d])", what, s, d);
        seen[s] = true;
        t.src[d] = s;
    }
    /* The result's shape: its dimension d is a's dimension src[d]. */
    ax_exp ash = ax_shape(a), sh[AX_MAX_RANK];
    for (int d = 0; d < t.rank; d++) sh[d] = ax_index_get(ash, t.src[d]);
    return ax_backpermute(ax_index(t.rank, sh), transpose_ix, &t, a);
}

/* ------------------------------------------------------------ reductions */

/* The operator of a fold or scan: (e, e) -> e for the array's element. */
static Node *op_lam(ax_ctx *cx, const char *what, ax_fn2 f, void *env, const Type *elt)
{
    const Type *et[2] = {elt, elt};
    return build_lam(cx, what, 2, et, invoke2, (void *)f, env, elt);
}

ax_acc build_reduce(Op op, const char *what, ax_fn2 f, void *env, const ax_exp *z, ax_acc a, ax_acc segs)
{
    ax_acc v[2] = {a, segs};
    int nacc = (op == OP_FOLDSEG || op == OP_FOLD1SEG) ? 2 : 1;
    ax_ctx *cx = accs_ctx(nacc, v);
    if (!cx && z) cx = ax_exp_ctx(*z);
    if (!cx || !check_accs(cx, what, nacc, v, true)) return NULL;
    const Type *elt = a->type->elt;
    int rank = a->type->rank;
    if (rank < 1)
        return ctx_error(cx, AX_ERR_BUILD, "%s: the array %s has rank 0; it needs rank 1 or more", what,
                         tstr(cx, a->type));
    if (segs && (segs->type->rank != 1 || !ty_is_int(segs->type->elt)))
        return ctx_error(cx, AX_ERR_BUILD, "%s: the segments %s must be a vector of integers", what,
                         tstr(cx, segs->type));
    Node *zn = NULL;
    if (z && !(zn = exp_arg(cx, what, "the initial value", *z, elt))) return NULL;
    Node *lam = op_lam(cx, what, f, env, elt);
    if (!lam) return NULL;
    const Type *t;
    switch (op) {
    case OP_FOLD: case OP_FOLD1: t = arr_t(cx, elt, rank - 1); break;
    case OP_FOLDSEG: case OP_FOLD1SEG: t = arr_t(cx, elt, rank); break;
    case OP_SCANLEX: case OP_SCANREX: {
        const Type *pair[2] = {arr_t(cx, elt, rank), arr_t(cx, elt, rank - 1)};
        t = pair[0] && pair[1] ? ty_arrays(&cx->arena, 2, pair) : NULL;
        break;
    }
    default: t = arr_t(cx, elt, rank); break;
    }
    int n = 2 + (zn != NULL) + (segs != NULL);
    Node *x = t ? mk(cx, what, op, n, t) : NULL;
    if (!x) return NULL;
    int k = 0;
    x->kid[k++] = lam;
    if (zn) x->kid[k++] = zn;
    x->kid[k++] = a;
    if (segs) x->kid[k++] = segs;
    return x;
}

ax_acc ax_fold(ax_fn2 f, void *env, ax_exp z, ax_acc a) { return build_reduce(OP_FOLD, "ax_fold", f, env, &z, a, NULL); }
ax_acc ax_fold1(ax_fn2 f, void *env, ax_acc a) { return build_reduce(OP_FOLD1, "ax_fold1", f, env, NULL, a, NULL); }
ax_acc ax_fold_all(ax_fn2 f, void *env, ax_exp z, ax_acc a) { return ax_fold(f, env, z, ax_flatten(a)); }
ax_acc ax_fold_seg(ax_fn2 f, void *env, ax_exp z, ax_acc a, ax_acc segs)
{
    if (!segs && a) return ctx_error(a->cx, AX_ERR_BUILD, "ax_fold_seg: the segments are NULL");
    return build_reduce(OP_FOLDSEG, "ax_fold_seg", f, env, &z, a, segs);
}
ax_acc ax_fold1_seg(ax_fn2 f, void *env, ax_acc a, ax_acc segs)
{
    if (!segs && a) return ctx_error(a->cx, AX_ERR_BUILD, "ax_fold1_seg: the segments are NULL");
    return build_reduce(OP_FOLD1SEG, "ax_fold1_seg", f, env, NULL, a, segs);
}
ax_acc ax_scanl(ax_fn2 f, void *env, ax_exp z, ax_acc a) { return build_reduce(OP_SCANL, "ax_scanl", f, env, &z, a, NULL); }
ax_acc ax_scanl1(ax_fn2 f, void *env, ax_acc a) { return build_reduce(OP_SCANL1, "ax_scanl1", f, env, NULL, a, NULL); }
ax_acc ax_scanr(ax_fn2 f, void *env, ax_exp z, ax_acc a) { return build_reduce(OP_SCANR, "ax_scanr", f, env, &z, a, NULL); }
ax_acc ax_scanr1(ax_fn2 f, void *env, ax_acc a) { return build_reduce(OP_SCANR1, "ax_scanr1", f, env, NULL, a, NULL); }
ax_acc ax_scanl_ex(ax_fn2 f, void *env, ax_exp z, ax_acc a)
{
    return build_reduce(OP_SCANLEX, "ax_scanl_ex", f, env, &z, a, NULL);
}
ax_acc ax_scanr_ex(ax_fn2 f, void *env, ax_exp z, ax_acc a)
{
    return build_reduce(OP_SCANREX, "ax_scanr_ex", f, env, &z, a, NULL);
}

ax_acc ax_filter(ax_fn1 p, void *env, ax_acc a)
{
    const char *what = "ax_filter";
    if (!a) return NULL;
    ax_ctx *cx = a->cx;
    if (!check_accs(cx, what, 1, &a, true)) return NULL;
    Node *lam = build_lam(cx, what, 1, &a->type->elt, invoke1, (void *)p, env, ty_bool());
    if (!lam) return NULL;
    const Type *t = arr_t(cx, a->type->elt, 1);
    Node *x = t ? mk(cx, what, OP_FILTER, 2, t) : NULL;
    if (!x) return NULL;
    x->kid[0] = lam;
    x->kid[1] = a;
    return x;
}

/* ------------------------------------------------------------ stencils */

ax_boundary ax_clamp(void) { ax_boundary b; memset(&b, 0, sizeof b); b.kind = AX_CLAMP; return b; }
ax_boundary ax_mirror(void) { ax_boundary b = ax_clamp(); b.kind = AX_MIRROR; return b; }
ax_boundary ax_wrap(void) { ax_boundary b = ax_clamp(); b.kind = AX_WRAP; return b; }
ax_boundary ax_constant(ax_exp value) { ax_boundary b = ax_clamp(); b.kind = AX_CONSTANT; b.value = value; return b; }

/* Checks one stencil input and fills its part of st; returns the number of
 * neighbourhood elements, or -1. */
static int64_t sten_input(ax_ctx *cx, const char *what, Stencil *st, int k, const int *size, ax_boundary b,
                          ax_acc a)
{
    int rank = a->type->rank;
    if (rank < 1)
        return ctx_error(cx, AX_ERR_BUILD, "%s: the array %s has rank 0", what, tstr(cx, a->type)), -1;
    if (!size) return ctx_error(cx, AX_ERR_BUILD, "%s: the stencil size is NULL", what), -1;
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        if (size[d] < 1 || size[d] % 2 == 0 || size[d] > 255)
            return ctx_error(cx, AX_ERR_BUILD, "%s: stencil extent %d of dimension %d must be odd (1..255)", what,
                             size[d], d), -1;
        st->size[k][d] = size[d];
        n *= size[d];
    }
    if (n > 4096)
        return ctx_error(cx, AX_ERR_BUILD, "%s: a stencil of %lld elements is too large (4096 at most)", what,
                         (long long)n), -1;
    if ((unsigned)b.kind > AX_CONSTANT)
        return ctx_error(cx, AX_ERR_BUILD, "%s: unknown boundary kind %d", what, (int)b.kind), -1;
    st->bound[k] = b.kind;
    st->constkid[k] = -1;
    return n;
}

/* A stencil function that also sees its element's index (ax_stencil_ix):
 * the index is the lambda's last parameter, after the n neighbours. */
typedef struct StenIx {
    ax_fnvi f;
    int n;
} StenIx;

static ax_exp invoke_ix(void *fn, const ax_exp *a, void *env)
{
    const StenIx *w = fn;
    return w->f(a[w->n], a, env);
}

/* fi: the function with the index (f is NULL then), else f. */
static ax_acc stencil_n(const char *what, ax_fnv f, ax_fnvi fi, void *env, int k, const int *const *size,
                        const ax_boundary *b, const ax_acc *as)
{
    ax_ctx *cx = accs_ctx(k, as);
    if (!cx || !check_accs(cx, what, k, as, true)) return NULL;
    Stencil *st = arena_alloc(&cx->arena, sizeof *st);
    if (!st) return ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", what);
    st->rank = as[0]->type->rank;
    st->ninputs = k;
    int64_t counts[2];
    for (int i = 0; i < k; i++) {
        if (as[i]->type->rank != st->rank)
            return ctx_error(cx, AX_ERR_BUILD, "%s: the arrays differ in rank (%s and %s)", what,
                             tstr(cx, as[0]->type), tstr(cx, as[i]->type));
        if ((counts[i] = sten_input(cx, what, st, i, size[i], b[i], as[i])) < 0) return NULL;
    }
    int nb = (int)(counts[0] + (k > 1 ? counts[1] : 0)), np = nb + (fi ? 1 : 0);
    const Type **pt = ax__malloc(sizeof *pt * (size_t)np);
    if (!pt) return ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", what);
    for (int i = 0, p = 0; i < k; i++)
        for (int64_t j = 0; j < counts[i]; j++) pt[p++] = as[i]->type->elt;
    st->ix = fi != NULL;
    if (fi && !(pt[nb] = ty_index(&cx->arena, st->rank))) {
        free(pt);
        return ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", what);
    }
    StenIx w = {fi, nb};
    Node *lam = fi ? build_lam(cx, what, np, pt, invoke_ix, &w, env, NULL)
                   : build_lam(cx, what, np, pt, invokev, (void *)f, env, NULL);
    free(pt);
    if (!lam) return NULL;
    int nconst = 0;
    Node *consts[2];
    for (int i = 0; i < k; i++) {
        if (b[i].kind != AX_CONSTANT) continue;
        Node *c = exp_arg(cx, what, "the boundary value", b[i].value, as[i]->type->elt);
        if (!c) return NULL;
        st->constkid[i] = 1 + k + nconst;
        consts[nconst++] = c;
    }
    const Type *t = arr_t(cx, lam->type, st->rank);
    Node *x = t ? mk(cx, what, k == 1 ? OP_STENCIL : OP_STENCIL2, 1 + k + nconst, t) : NULL;
    if (!x) return NULL;
    x->kid[0] = lam;
    for (int i = 0; i < k; i++) x->kid[1 + i] = as[i];
    for (int i = 0; i < nconst; i++) x->kid[1 + k + i] = consts[i];
    x->sten = st;
    return x;
}

ax_acc ax_stencil(ax_fnv f, void *env, const int *size, ax_boundary b, ax_acc a)
{
    const int *sz[1] = {size};
    return stencil_n("ax_stencil", f, NULL, env, 1, sz, &b, &a);
}

ax_acc ax_stencil_ix(ax_fnvi f, void *env, const int *size, ax_boundary b, ax_acc a)
{
    const int *sz[1] = {size};
    return stencil_n("ax_stencil_ix", NULL, f, env, 1, sz, &b, &a);
}

ax_acc ax_stencil2(ax_fnv f, void *env, const int *size_a, ax_boundary ba, ax_acc a, const int *size_b,
                   ax_boundary bb, ax_acc b)
{
    const int *sz[2] = {size_a, size_b};
    ax_boundary bs[2] = {ba, bb};
    ax_acc as[2] = {a, b};
    return stencil_n("ax_stencil2", f, NULL, env, 2, sz, bs, as);
}

ax_acc ax_stencil2_ix(ax_fnvi f, void *env, const int *size_a, ax_boundary ba, ax_acc a, const int *size_b,
                      ax_boundary bb, ax_acc b)
{
    const int *sz[2] = {size_a, size_b};
    ax_boundary bs[2] = {ba, bb};
    ax_acc as[2] = {a, b};
    return stencil_n("ax_stencil2_ix", NULL, f, env, 2, sz, bs, as);
}

/* ------------------------------------------------------------ control */

ax_acc ax_acond(ax_exp c, ax_acc t, ax_acc e)
{
    const char *what = "ax_acond";
    ax_acc v[2] = {t, e};
    ax_ctx *cx = accs_ctx(2, v);
    if (!cx) cx = ax_exp_ctx(c);
    if (!cx || !check_accs(cx, what, 2, v, false)) return NULL;
    if (!ty_eq(t->type, e->type))
        return ctx_error(cx, AX_ERR_BUILD, "%s: the branches differ in type (%s and %s)", what, tstr(cx, t->type),
                         tstr(cx, e->type));
    Node *cn = exp_arg(cx, what, "the condition", c, ty_bool());
    if (!cn) return NULL;
    Node *x = mk(cx, what, OP_ACOND, 3, t->type);
    if (!x) return NULL;
    x->kid[0] = cn;
    x->kid[1] = t;
    x->kid[2] = e;
    return x;
}

/* An array function: one AVAR parameter of type `pt`. */
static Node *build_alam(ax_ctx *cx, const char *what, const Type *pt, ax_afn f, void *env, const Type *want)
{
    if (!f) return ctx_error(cx, AX_ERR_BUILD, "%s: the function is NULL", what);
    Node *lam = mk(cx, what, OP_LAM, 1, NULL);
    Node **params = arena_alloc(&cx->arena, sizeof *params);
    Node *v = mk(cx, what, OP_AVAR, 0, pt);
    if (!lam || !params || !v) return ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", what);
    v->id = cx->next_var++;
    params[0] = v;
    lam->nparam = 1;
    lam->param = params;
    ax_acc body = f(v, env);
    if (!body) {
        ctx_error(cx, AX_ERR_BUILD, "%s: the function returned NULL", what);
        return NULL;
    }
    if (body->cx != cx) return ctx_error(cx, AX_ERR_BUILD, "%s: the function returned a computation of another context", what);
    if (!ty_eq(body->type, want))
        return ctx_error(cx, AX_ERR_BUILD, "%s: the function returns %s where %s is needed", what,
                         tstr(cx, body->type), tstr(cx, want));
    lam->kid[0] = body;
    lam->type = body->type;
    return lam;
}

ax_acc ax_awhile(ax_afn cond, ax_afn body, void *env, ax_acc init)
{
    const char *what = "ax_awhile";
    if (!init) return NULL;
    ax_ctx *cx = init->cx;
    if (!check_accs(cx, what, 1, &init, false)) return NULL;
    const Type *bt = arr_t(cx, ty_bool(), 0);
    if (!bt) return NULL;
    Node *c = build_alam(cx, "ax_awhile (condition)", init->type, cond, env, bt);
    if (!c) return NULL;
    Node *b = build_alam(cx, "ax_awhile (body)", init->type, body, env, init->type);
    if (!b) return NULL;
    Node *x = mk(cx, what, OP_AWHILE, 3, init->type);
    if (!x) return NULL;
    x->kid[0] = c;
    x->kid[1] = b;
    x->kid[2] = init;
    return x;
}

/* ax_for: an awhile over (step, x), the step a rank-0 i64 (data, so the
 * loop compiles once for every n). */
typedef struct ForLoop {
    ax_exp n;
    ax_afni body;
    void *env;
} ForLoop;

static ax_exp for_below(ax_exp k, void *env) { return ax_lt(k, ((const ForLoop *)env)->n); }
static ax_exp for_next(ax_exp k, void *env) { (void)env; return ax_add(k, ax_i64(1)); }
static ax_acc for_cond(ax_acc st, void *env) { return ax_map(for_below, env, ax_aget(st, 0)); }
static ax_acc for_body(ax_acc st, void *env)
{
    const ForLoop *l = env;
    ax_acc k = ax_aget(st, 0);
    ax_acc x = l->body(ax_at_linear(k, ax_i64(0)), ax_aget(st, 1), l->env);
    return x ? ax_atuple2(ax_map(for_next, NULL, k), x) : NULL;
}

ax_acc ax_for(ax_exp n, ax_afni body, void *env, ax_acc init)
{
    const char *what = "ax_for";
    if (!init) return NULL;
    ax_ctx *cx = init->cx;
    if (!check_accs(cx, what, 1, &init, false)) return NULL;
    if (!body) return ctx_error(cx, AX_ERR_BUILD, "%s: the body is NULL", what);
    Node *nn = exp_arg(cx, what, "the step count", n, NULL);
    if (!nn) return NULL;
    if (!ty_is_int(nn->type))
        return ctx_error(cx, AX_ERR_BUILD, "%s: the step count is %s, not an integer", what, tstr(cx, nn->type));
    ForLoop l = {exp_to_i64(exp_node(nn), what), body, env};
    ax_acc st = ax_atuple2(ax_unit(cx, ax_i64(0)), init);
    ax_acc r = ax_awhile(for_cond, for_body, &l, st);
    return r ? ax_aget(r, 1) : NULL;
}

ax_acc ax_atuple(int n, const ax_acc *as)
{
    const char *what = "ax_atuple";
    if (n < 1 || !as) return NULL;
    ax_ctx *cx = accs_ctx(n, as);
    if (!cx || !check_accs(cx, what, n, as, false)) return NULL;
    const Type **ts = arena_alloc(&cx->arena, sizeof *ts * (size_t)n);
    if (!ts) return ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", what);
    for (int i = 0; i < n; i++) ts[i] = as[i]->type;
    const Type *t = ty_arrays(&cx->arena, n, ts);
    Node *x = t ? mk(cx, what, OP_ATUPLE, n, t) : NULL;
    if (!x) return NULL;
    for (int i = 0; i < n; i++) x->kid[i] = as[i];
    return x;
}

ax_acc ax_atuple2(ax_acc a, ax_acc b)
{
    ax_acc v[2] = {a, b};
    return ax_atuple(2, v);
}

ax_acc ax_aget(ax_acc t, int i)
{
    const char *what = "ax_aget";
    if (!t) return NULL;
    ax_ctx *cx = t->cx;
    if (t->type->kind != TY_ARRAYS)
        return ctx_error(cx, AX_ERR_BUILD, "%s: the operand is %s, not a tuple of arrays", what, tstr(cx, t->type));
    if (i < 0 || i >= t->type->n)
        return ctx_error(cx, AX_ERR_BUILD, "%s: component %d is out of range for %s", what, i, tstr(cx, t->type));
    if (t->op == OP_ATUPLE) return t->kid[i];
    Node *x = mk(cx, what, OP_APROJ, 1, t->type->elts[i]);
    if (!x) return NULL;
    x->a = i;
    x->kid[0] = t;
    return x;
}

const ax_type *ax_acc_type(ax_acc a) { return a ? a->type : NULL; }
ax_ctx *ax_acc_ctx(ax_acc a) { return a ? a->cx : NULL; }
const ax_type *ax_acc_elem(ax_acc a) { return a && a->type->kind == TY_ARRAY ? a->type->elt : NULL; }
int ax_acc_rank(ax_acc a) { return a && a->type->kind == TY_ARRAY ? a->type->rank : -1; }

/*
 * The reference interpreter's scalar evaluator (eval.h): a scalar
 * expression evaluated node by node on the host, into a buffer of leaves,
 * with the interpreter's exact semantics (src/backend/interp/interp.c's
 * essay: values, environments, the decisions on bounds); its errors; the
 * scratch stack its temporaries come from; and InterpEval, the evaluator
 * other executors use.
 *
 * Scratch memory.  A scalar expression is evaluated into a buffer its
 * caller provides; temporaries come from a stack of Scalar chunks that is
 * marked and released around each use, so the per-element work does no
 * malloc.  The language has no recursion, so each node is active at most
 * once at a time and the stack never grows beyond the size of the program.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include "runtime/eval.h"
#include "runtime/mvec.h"
#include "runtime/host.h"
#include "runtime/array.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { PRIM_MAXARGS = 4 };

/* --------------------------------------------------------------- errors */

int eval_fail(Interp *in, ax_status st, const char *fmt, ...)
{
    char msg[AX_ERRMSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return host_fail(&in->h, st, "%s", msg);
}

/* A program the verifier should have refused: never a user error. */
int eval_malformed(Interp *in, const Node *x, const char *what) { return host_malformed(&in->h, x, what); }
int eval_nomem(Interp *in) { return host_nomem(&in->h); }

static int index_error(Interp *in, const char *what, int rank, const int64_t *ix, const int64_t *shape)
{
    char a[256], b[256];
    host_fmt_ints(a, sizeof a, rank, ix);
    host_fmt_ints(b, sizeof b, rank, shape);
    return eval_fail(in, AX_ERR_INDEX, "%s: index (%s) out of bounds for shape (%s)", what, a, b);
}

/* Checks ix against shape and computes its row-major position. */
int eval_linear_checked(Interp *in, const char *what, int rank, const int64_t *shape, const int64_t *ix,
                        int64_t *lin)
{
    int64_t l = 0;
    for (int d = 0; d < rank; d++) {
        if (ix[d] < 0 || ix[d] >= shape[d]) return index_error(in, what, rank, ix, shape);
        l = l * shape[d] + ix[d];
    }
    *lin = l;
    return 0;
}

static int prim_fail(Interp *in, Prim p, int st)
{
    const char *name = prim_info[p].api ? prim_info[p].api : prim_info[p].name;
    switch (st) {
    case AX_ERR_DIVZERO: return eval_fail(in, AX_ERR_DIVZERO, "%s: integer division by zero", name);
    case AX_ERR_SHAPE: return eval_fail(in, AX_ERR_SHAPE, "%s: the shape does not fit", name);
    default: return eval_fail(in, (ax_status)st, "%s: run-time fault", name);
    }
}

/* A fused reshape's check failed (P_RESHAPE: the new shape, then the
 * array's): op_reshape's messages. */
static int reshape_fail(Interp *in, const Type *const *argt, const Scalar *args)
{
    int r1 = argt[0]->n, r0 = argt[1]->n;
    int64_t sh1[AX_MAX_RANK], sh0[AX_MAX_RANK];
    for (int d = 0; d < r1 && d < AX_MAX_RANK; d++) sh1[d] = args[d].i;
    for (int d = 0; d < r0 && d < AX_MAX_RANK; d++) sh0[d] = args[r1 + d].i;
    /* (either size may overflow: the array's is a fused producer's extent,
     * never made; each is checked as making it would be) */
    int64_t n1 = shape_size_checked(in->cx, "ax_reshape", r1, sh1);
    if (n1 < 0) return -1;
    int64_t n0 = shape_size_checked(in->cx, "ax_reshape", r0, sh0);
    if (n0 < 0) return -1;
    char a[256], b[256];
    host_fmt_ints(a, sizeof a, r0, sh0);
    host_fmt_ints(b, sizeof b, r1, sh1);
    return eval_fail(in, AX_ERR_SHAPE,
                     "ax_reshape: an array of shape (%s) (%" PRId64 " elements) cannot take shape (%s) (%" PRId64 " elements)",
                a, n0, b, n1);
}

/* --------------------------------------------------------- scratch stack */

Chunk *eval_chunk_new(size_t cap)
{
    Chunk *c = ax__malloc(sizeof *c + cap * sizeof(Scalar));
    if (c) {
        c->next = NULL;
        c->cap = cap;
        c->top = 0;
    }
    return c;
}

Scalar *eval_salloc_slow(Interp *in, size_t n)
{
    Chunk *c = in->cur, *nx = c->next;
    if (nx && nx->cap < n) {
        /* Too small; it and everything after it are unused: drop them. */
        c->next = NULL;
        while (nx) {
            Chunk *t = nx->next;
            free(nx);
            nx = t;
        }
    }
    if (!nx) {
        nx = eval_chunk_new(c->cap * 2 > n ? c->cap * 2 : n);
        if (!nx) {
            eval_nomem(in);
            return NULL;
        }
        c->next = nx;
    }
    nx->top = n;
    in->cur = nx;
    return nx->data;
}

void eval_scratch_free(Interp *in)
{
    for (Chunk *c = in->first; c;) {
        Chunk *t = c->next;
        free(c);
        c = t;
    }
    for (int i = 0; i < in->nleaf; i++) free(in->leaf[i].lt);
    free(in->leaf);
}

/* ----------------------------------------------------------- leaf types */

const ax_scalar *eval_leaf_types(Interp *in, const Type *t)
{
    for (int i = 0; i < in->nleaf; i++)
        if (in->leaf[i].t == t) return in->leaf[i].lt;
    if (in->nleaf == in->capleaf) {
        int cap = in->capleaf ? in->capleaf * 2 : 16;
        LeafTypes *l = ax__realloc(in->leaf, sizeof *l * (size_t)cap);
        if (!l) return eval_nomem(in), NULL;
        in->leaf = l;
        in->capleaf = cap;
    }
    int w = t->width;
    ax_scalar *lt = ax__malloc(sizeof *lt * (size_t)(w > 0 ? w : 1));
    if (!lt) return eval_nomem(in), NULL;
    for (int c = 0; c < w; c++) lt[c] = ty_leaf(t, c);
    in->leaf[in->nleaf].t = t;
    in->leaf[in->nleaf].lt = lt;
    in->nleaf++;
    return lt;
}

/* ------------------------------------------------------------- helpers */

static inline Scalar mk_bool(bool x)
{
    Scalar r;
    r.u = 0;
    r.b = x;
    return r;
}

/* Checks that f is a scalar LAM with nparam parameters (-1: any) whose
 * leaves add up to width (-1: any), with variable ids in range. */
int eval_check_lam(Interp *in, const Node *f, int nparam, int width)
{
    if (!f || f->op != OP_LAM || f->n < 1 || !f->kid[0]) return eval_malformed(in, f, "expected a function");
    if (nparam >= 0 && f->nparam != nparam) return eval_malformed(in, f, "wrong number of parameters");
    int w = 0;
    for (int k = 0; k < f->nparam; k++) {
        const Node *p = f->param[k];
        if (!p || (unsigned)p->id >= (unsigned)in->nvars) return eval_malformed(in, f, "bad parameter");
        w += p->type->width;
    }
    if (width >= 0 && w != width) return eval_malformed(in, f, "parameters do not match the arguments");
    return 0;
}

/* ------------------------------------------------- scalar expressions */

/* The arrays an array-stratum term in scalar code denotes.  Scalar code
 * reaches arrays only through variables (and projections of them), which
 * are looked up without taking references.  An embedded host array (USE)
 * is accepted too: reading it costs nothing, so a pass may well inline
 * one into scalar code. */
static ax_array **aref(Interp *in, const Node *a)
{
    if (a->op == OP_USE) {
        if (!a->arr) eval_malformed(in, a, "no array");
        return a->arr ? (ax_array **)&a->arr : NULL;
    }
    if (a->op == OP_AVAR) {
        ax_array **v = (unsigned)a->id < (unsigned)in->nvars ? in->h.aenv[a->id] : NULL;
        if (!v) eval_malformed(in, a, "unbound array variable");
        return v;
    }
    if (a->op == OP_APROJ) {
        ax_array **v = aref(in, a->kid[0]);
        return v ? v + host_offset(a->kid[0]->type, a->a) : NULL;
    }
    eval_malformed(in, a, "scalar code reads an array that is not a variable");
    return NULL;
}

static ax_array *aref1(Interp *in, const Node *a)
{
    if (a->type->kind != TY_ARRAY) return eval_malformed(in, a, "expected a single array"), NULL;
    ax_array **v = aref(in, a);
    return v ? v[0] : NULL;
}

/* Loads element i of a (scalar arrays without the leaf-type lookup). */
static int load_elt(Interp *in, const ax_array *a, int64_t i, Scalar *out)
{
    if (a->host_stale && array_host((ax_array *)a)) return -1;
    if (a->ncomp == 1 && a->elt->kind == TY_SCALAR) {
        out[0] = sc_load(a->buf[0], a->elt->s, i);
        return 0;
    }
    const ax_scalar *lt = eval_leaf_types(in, a->elt);
    if (!lt) return -1;
    for (int c = 0; c < a->ncomp; c++) out[c] = sc_load(a->buf[c], lt[c], i);
    return 0;
}

static int ev_prim(Interp *in, const Node *e, Scalar *out)
{
    Prim p = (Prim)e->a;
    if (p == P_AND || p == P_OR) {
        /* Short-circuit: the second operand is evaluated only when the
         * first does not decide (its errors must not happen otherwise). */
        Scalar c;
        if (e->n != 2) return eval_malformed(in, e, "wrong number of operands");
        if (eval_exp(in, e->kid[0], &c)) return -1;
        if (eval_truth(c) == (p == P_OR)) {
            out[0] = mk_bool(eval_truth(c));
            return 0;
        }
        return eval_exp(in, e->kid[1], out);
    }
    if (e->n > PRIM_MAXARGS) return eval_malformed(in, e, "too many operands");
    const Type *argt[PRIM_MAXARGS];
    size_t total = 0;
    for (int k = 0; k < e->n; k++) {
        argt[k] = e->kid[k]->type;
        total += (size_t)argt[k]->width;
    }
    /* Operands of a few leaves (nearly all) live in this frame: the
     * innermost loop of every program runs through here. */
    Scalar local[8];
    Mark m = eval_mark(in);
    Scalar *args = total <= 8 ? local : eval_salloc(in, total);
    int rc = args ? 0 : -1;
    size_t off = 0;
    for (int k = 0; rc == 0 && k < e->n; k++) {
        rc = eval_exp(in, e->kid[k], args + off);
        off += (size_t)argt[k]->width;
    }
    if (rc == 0 && in->cx->mvec && e->n >= 1 && argt[0]->kind == TY_SCALAR &&
        mvec_eval(in->cx->mvec, p, argt[0]->s, args[0], e->n > 1 ? args[1] : args[0], out)) {
        /* a test's differential run: the CPU backend's maths (mvec.h) */
    } else if (rc == 0) {
        int st = prim_eval(p, argt, args, e->type, out);
        if (st && p == P_RESHAPE) rc = reshape_fail(in, argt, args);
        else if (st) rc = prim_fail(in, p, st);
    }
    eval_release(in, m);
    return rc;
}

static int ev_while(Interp *in, const Node *e, Scalar *out)
{
    const Node *cond = e->kid[0], *body = e->kid[1];
    int w = e->type->width;
    if (eval_check_lam(in, cond, -1, w) || eval_check_lam(in, body, -1, w)) return -1;
    Mark m = eval_mark(in);
    Scalar *cur = eval_salloc(in, (size_t)w), *nxt = eval_salloc(in, (size_t)w);
    int rc = cur && nxt ? eval_exp(in, e->kid[2], cur) : -1;
    while (rc == 0) {
        Scalar c;
        if ((rc = eval_call(in, cond, cur, &c)) || !eval_truth(c)) break;
        if ((rc = eval_call(in, body, cur, nxt))) break;
        Scalar *t = cur;
        cur = nxt;
        nxt = t;
    }
    if (rc == 0 && w > 0) memcpy(out, cur, sizeof *out * (size_t)w);
    eval_release(in, m);
    return rc;
}

static int ev_index(Interp *in, const Node *e, Scalar *out)
{
    const ax_array *a = aref1(in, e->kid[0]);
    if (!a) return -1;
    int r = a->rank;
    if (e->kid[1]->type->kind != TY_INDEX || e->kid[1]->type->n != r)
        return eval_malformed(in, e, "index rank differs from the array's");
    Scalar ixs[AX_MAX_RANK + 1];
    int64_t ix[AX_MAX_RANK + 1], lin = 0;
    if (eval_exp(in, e->kid[1], ixs)) return -1;
    for (int d = 0; d < r; d++) ix[d] = ixs[d].i;
    if (eval_linear_checked(in, "ax_at", r, a->shape, ix, &lin)) return -1;
    return load_elt(in, a, lin, out);
}

static int ev_lindex(Interp *in, const Node *e, Scalar *out)
{
    const ax_array *a = aref1(in, e->kid[0]);
    if (!a) return -1;
    Scalar i;
    if (e->kid[1]->type->width != 1) return eval_malformed(in, e, "the position is not a scalar");
    if (eval_exp(in, e->kid[1], &i)) return -1;
    if (e->kid[1]->type->kind == TY_SCALAR && e->kid[1]->type->s != AX_I64)
        i = sc_convert(i, e->kid[1]->type->s, AX_I64);
    if (i.i < 0 || i.i >= a->size) {
        char b[256];
        host_fmt_ints(b, sizeof b, a->rank, a->shape);
        return eval_fail(in, AX_ERR_INDEX, "ax_at_linear: position %" PRId64 " out of bounds for shape (%s) (%" PRId64
                         " elements)", i.i, b, a->size);
    }
    return load_elt(in, a, i.i, out);
}

/* Evaluates scalar expression e into out (e->type->width leaves). */
int eval_exp(Interp *in, const Node *e, Scalar *out)
{
    switch (e->op) {
    case OP_CONST:
        out[0] = e->c;
        return 0;

    case OP_VAR: {
        const Scalar *v = (unsigned)e->id < (unsigned)in->nvars ? in->senv[e->id] : NULL;
        if (!v) return eval_malformed(in, e, "unbound scalar variable");
        int w = e->type->width;
        if (w == 1) out[0] = v[0];
        else if (w > 0) memcpy(out, v, sizeof *out * (size_t)w);
        return 0;
    }

    case OP_LET: {
        /* A row of lets is walked in a loop (bind, then go on with the
         * body), not by recursion: the C stack then follows the nesting of
         * the other operations, not the number of bindings in a row. */
        Mark m = eval_mark(in);
        const Node *x = e;
        int rc = 0;
        while (x->op == OP_LET) {
            if ((unsigned)x->id >= (unsigned)in->nvars) {
                rc = eval_malformed(in, x, "variable id out of range");
                break;
            }
            Scalar *b = eval_salloc(in, (size_t)x->kid[0]->type->width);
            if (!b || eval_exp(in, x->kid[0], b)) {
                rc = -1;
                break;
            }
            in->senv[x->id] = b;
            x = x->kid[1];
        }
        if (rc == 0) rc = eval_exp(in, x, out);
        /* Unbind what was bound (the lets from e down to x): their
         * scratch is about to go. */
        for (const Node *y = e; y != x && y->op == OP_LET; y = y->kid[1])
            if ((unsigned)y->id < (unsigned)in->nvars) in->senv[y->id] = NULL;
        eval_release(in, m);
        return rc;
    }

    case OP_TUPLE: {
        int off = 0;
        for (int k = 0; k < e->n; k++) {
            if (eval_exp(in, e->kid[k], out + off)) return -1;
            off += e->kid[k]->type->width;
        }
        return 0;
    }

    case OP_PROJ:
    case OP_IXGET: {
        const Type *tt = e->kid[0]->type;
        if (e->a < 0 || e->a >= tt->n) return eval_malformed(in, e, "component out of range");
        int off = e->op == OP_PROJ ? ty_leaf_offset(tt, e->a) : e->a;
        int w = e->type->width;
        Mark m = eval_mark(in);
        Scalar *t = eval_salloc(in, (size_t)tt->width);
        int rc = t ? eval_exp(in, e->kid[0], t) : -1;
        if (rc == 0 && w > 0) memcpy(out, t + off, sizeof *out * (size_t)w);
        eval_release(in, m);
        return rc;
    }

    case OP_PRIM:
        return ev_prim(in, e, out);

    case OP_COND: {
        Scalar c;
        if (eval_exp(in, e->kid[0], &c)) return -1;
        return eval_exp(in, e->kid[eval_truth(c) ? 1 : 2], out);
    }

    case OP_WHILE:
        return ev_while(in, e, out);

    case OP_INDEX:
        return ev_index(in, e, out);

    case OP_LINDEX:
        return ev_lindex(in, e, out);

    case OP_SHAPE: {
        const ax_array *a = aref1(in, e->kid[0]);
        if (!a) return -1;
        for (int d = 0; d < a->rank; d++) out[d].i = a->shape[d];
        return 0;
    }

    case OP_IXCONS:
        for (int k = 0; k < e->n; k++) {
            const Type *t = e->kid[k]->type;
            if (t->width != 1) return eval_malformed(in, e, "an index component is not a scalar");
            if (eval_exp(in, e->kid[k], out + k)) return -1;
            if (t->kind == TY_SCALAR && t->s != AX_I64) out[k] = sc_convert(out[k], t->s, AX_I64);
        }
        return 0;

    default:
        return eval_malformed(in, e, "not a scalar expression");
    }
}

/* Evaluates an element-typed expression of the array stratum (an extent,
 * an initial value) into out. */
int eval_top(Interp *in, const Node *e, Scalar *out)
{
    if (!e || !ty_is_elt(e->type)) return eval_malformed(in, e, "expected a scalar expression");
    return eval_exp(in, e, out);
}

/* A shape expression: an index of rank <= AX_MAX_RANK. */
int eval_shape(Interp *in, const Node *e, int64_t *sh, int *rank)
{
    if (!e || e->type->kind != TY_INDEX || e->type->n > AX_MAX_RANK) return eval_malformed(in, e, "expected a shape");
    Scalar v[AX_MAX_RANK + 1];
    if (eval_exp(in, e, v)) return -1;
    *rank = e->type->n;
    for (int d = 0; d < *rank; d++) sh[d] = v[d].i;
    return 0;
}

int eval_i64(Interp *in, const Node *e, int64_t *out)
{
    if (!e || e->type->kind != TY_SCALAR || !sc_is_int(e->type->s)) return eval_malformed(in, e, "expected an integer");
    Scalar v;
    if (eval_exp(in, e, &v)) return -1;
    if (e->type->s != AX_I64) v = sc_convert(v, e->type->s, AX_I64);
    *out = v.i;
    return 0;
}

/* ------------------------------------------------------------ scalar code on the host
 *
 * The GPU backends evaluate an operation's scalar parameters (shapes,
 * fold's z, an acond's condition: the CPU's thunks) here, with the
 * executor's array environment: the interpreter is the reference, and a
 * thunk is small.  (The MPI executor too, its host expressions.) */

InterpEval *interp_eval_new(ax_ctx *cx, int nvars, ax_array ***aenv)
{
    InterpEval *ie = calloc(1, sizeof *ie);
    if (!ie) return ctx_error(cx, AX_ERR_NOMEM, "out of memory");
    Interp *in = &ie->in;
    in->cx = cx;
    in->safe = !cx->opt.unsafe;
    in->nvars = nvars;
    in->senv = calloc((size_t)(nvars > 0 ? nvars : 1), sizeof *in->senv);
    in->first = in->cur = eval_chunk_new(CHUNK_MIN);
    /* (its Host serves the messages and the array environment only: a
     * scalar expression runs no array operation; interp_run_op, which
     * does, gives it the interpreter's operations) */
    static const HostOps ops = {.name = "interp", .embeds_delayed = false};
    in->h.ops = &ops;
    in->h.self = in;
    in->h.cx = cx;
    in->h.nvars = nvars;
    in->h.aenv = aenv;   /* borrowed */
    if (!in->senv || !in->first) {
        interp_eval_free(ie);
        return ctx_error(cx, AX_ERR_NOMEM, "out of memory");
    }
    return ie;
}

int interp_eval(InterpEval *ie, const Node *e, Scalar *out)
{
    Interp *in = &ie->in;
    Mark m = eval_mark(in);
    int rc = eval_top(in, e, out);
    eval_release(in, m);
    return rc;
}

void interp_eval_free(InterpEval *ie)
{
    if (!ie) return;
    Interp *in = &ie->in;
    eval_scratch_free(in);
    free(in->senv);
    free(ie);
}

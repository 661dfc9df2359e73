/*
 * Normalisation of an optimised program for the distributed executor
 * (mpi_int.h): rewrites that keep the program's meaning and make each
 * operation's distributed form (localise.c) simpler to make.
 *
 *  - Every array operand of an operation is a variable (or a DELAYED
 *    input): a nested operation, an embedded array or a projection is
 *    let-bound first.  The executor then meets every operand through the
 *    host walk, which counts its reads for early release (liveness.c).
 *  - unit e becomes generate ix() (\_ -> e): a rank-0 generate, which the
 *    backend compiles like any other (its value then has the CPU
 *    backend's exact arithmetic on every rank).
 *  - replicate and slice become backpermute: replicate's result at ix
 *    reads the source at ix without the new dimensions, slice's at ix
 *    with the fixed indices put in.  Backpermute's reads then go through
 *    the one mechanism that distributes reads at computed indices (an
 *    outer index kept is a row-local read; an outer index fixed is a
 *    fetch of that row).  The one difference a user can see: a slice
 *    index out of bounds is reported as ax_backpermute's index error.
 *  - A DELAYED segment-lengths input of a segmented fold is made a
 *    generate: the segments steer the distribution (each rank's segments
 *    whole), so they are read as an array.
 *  - A DELAYED that stands alone (not a consumer's input) is a generate.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"
#include "opt/rewrite.h"
#include <string.h>

static Node *norm(Rewrite *k, Node *x);

static Node *cvt_i64(Rewrite *k, Node *e)
{
    if (!e) return NULL;
    if (e->type->kind == TY_SCALAR && e->type->s == AX_I64) return e;
    return rw_prim(k, P_CVT, ty_i64(), e, NULL);
}

/* unit e  ->  generate ix() (\_ -> e) */
static Node *unit_gen(Rewrite *k, Node *x)
{
    int v = rw_fresh(k, rw_tindex(k, 0));
    Node *y = rw_op2(k, OP_GENERATE, x->type, rw_ixcons(k, 0, NULL), rw_lam1(k, v, x->kid[0]));
    if (y) y->num = x->num;
    return y;
}

/* A copy of the variable reference a (an AVAR). */
static Node *ref(Rewrite *k, const Node *a) { return rw_var(k, a->id); }

/* replicate / slice  ->  backpermute (kid[0] is already a variable). */
static Node *slice_bp(Rewrite *k, Node *x)
{
    bool rep = x->op == OP_REPLICATE;
    const Slice *sp = x->slice;
    Node *a = x->kid[0];
    int ra = a->type->rank, rr = x->type->rank;
    Node *sh[AX_MAX_RANK], *pix[AX_MAX_RANK];
    int v = rw_fresh(k, rw_tindex(k, rr));
    int fk = 0, s = 0, j = 0;
    for (int d = 0; d < sp->n && !k->failed; d++) {
        if (rep) {   /* d: a result dimension */
            if (sp->fixed[d]) {
                sh[d] = cvt_i64(k, x->kid[1 + fk++]);
            } else {
                sh[d] = rw_ixget(k, s, rw_shape(k, ref(k, a)));
                pix[s++] = rw_ixget(k, d, rw_var(k, v));
            }
        } else {     /* d: a source dimension */
            if (sp->fixed[d]) {
                pix[d] = cvt_i64(k, x->kid[1 + fk++]);
            } else {
                sh[j] = rw_ixget(k, d, rw_shape(k, ref(k, a)));
                pix[d] = rw_ixget(k, j++, rw_var(k, v));
            }
        }
    }
    if (k->failed) return NULL;
    Node *y = rw_op3(k, OP_BACKPERMUTE, x->type, rw_ixcons(k, rr, sh), rw_lam1(k, v, rw_ixcons(k, ra, pix)), a);
    if (y) y->num = x->num;
    return y;
}

/* A DELAYED made a generate (its index form). */
static Node *delayed_gen(Rewrite *k, Node *d)
{
    return rw_op2(k, OP_GENERATE, d->type, d->kid[0], d->kid[1]);
}

static bool segs_kid(const Node *x, int i)
{
    return (x->op == OP_FOLDSEG && i == 3) || (x->op == OP_FOLD1SEG && i == 2);
}

static Node *norm_op(Rewrite *k, Node *x)
{
    if (x->op == OP_DELAYED) x = delayed_gen(k, x);
    Node *bind[16];
    int id[16], nb = 0;
    for (int i = 0; x && i < x->n && !k->failed; i++) {
        Node *y = x->kid[i];
        if (!y || y->op == OP_LAM || !op_is_array(y->op) || y->op == OP_AVAR) continue;
        if (y->op == OP_DELAYED && !segs_kid(x, i)) continue;
        if (y->op == OP_DELAYED) y = delayed_gen(k, y);
        if (nb == 16) return rw_internal(k, "an operation of more than 16 operands");
        bind[nb] = norm(k, y);
        id[nb] = rw_fresh(k, y->type);
        x->kid[i] = rw_var(k, id[nb]);
        nb++;
    }
    if (!x || k->failed) return NULL;
    if (x->op == OP_UNIT) x = unit_gen(k, x);
    else if (x->op == OP_REPLICATE || x->op == OP_SLICE) x = slice_bp(k, x);
    for (int j = nb - 1; j >= 0 && x; j--) x = rw_let(k, id[j], bind[j], x);
    return x;
}

static Node *norm(Rewrite *k, Node *x)
{
    if (!x || k->failed) return NULL;
    switch (x->op) {
    case OP_AVAR:
    case OP_USE:
        return x;
    case OP_ALET: {
        /* a row of lets in a loop: rows are long, the stack is not */
        Node *y = x, *last = NULL;
        while (y->op == OP_ALET && !k->failed) {
            y->kid[0] = norm(k, y->kid[0]);
            last = y;
            y = y->kid[1];
        }
        last->kid[1] = norm(k, y);
        return k->failed ? NULL : x;
    }
    case OP_ACOND:
        x->kid[1] = norm(k, x->kid[1]);
        x->kid[2] = norm(k, x->kid[2]);
        return k->failed ? NULL : x;
    case OP_AWHILE:
        for (int i = 0; i < 2; i++) x->kid[i]->kid[0] = norm(k, x->kid[i]->kid[0]);
        x->kid[2] = norm(k, x->kid[2]);
        return k->failed ? NULL : x;
    case OP_ATUPLE:
        for (int i = 0; i < x->n; i++) x->kid[i] = norm(k, x->kid[i]);
        return k->failed ? NULL : x;
    case OP_APROJ:
        x->kid[0] = norm(k, x->kid[0]);
        return k->failed ? NULL : x;
    default:
        return norm_op(k, x);
    }
}

int mx_normalise(ax_mpi_program *pr)
{
    ax_ctx *cx = pr->m->cx;
    Rewrite k;
    Node *r = rw_open(&k, cx, pr->p) ? norm(&k, pr->p->root) : NULL;
    bool failed = !r || k.failed;
    rw_close(&k);
    if (failed) {
        if (cx->status == AX_OK) ctx_error(cx, AX_ERR_NOMEM, "ax_mpi_compile: out of memory");
        return -1;
    }
    pr->p->root = r;
    if (cx->opt.debug & AX_DEBUG_VERIFY) {
        char msg[512];
        if (ir_verify(pr->p, msg, sizeof msg)) {
            ctx_error(cx, AX_ERR_BACKEND, "ax_mpi_compile: the program is ill-formed after normalisation: %s", msg);
            return -1;
        }
    }
    return 0;
}

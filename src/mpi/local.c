/*
 * The local backend of a distributed run: a kernel of the program's
 * container (a local form or a helper, localise.c) run on this rank's
 * arrays by the CPU backend or the interpreter, with its fresh variables
 * bound (mx_local, mx_bind); the local arrays a run makes; and the
 * helpers built on them: a rank-0 helper's leaves (mx_run0) and the
 * combine of two partial results (mx_combine), which the reductions of
 * comm.c and the skeletons of exec*.c both use.  Calls no other file of
 * src/mpi.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"
#include "backend/cpu/cg.h"
#include "backend/interp/interp.h"
#include "runtime/array.h"
#include <stdlib.h>
#include <string.h>

size_t mx_leaf_size(const Type *elt, int c) { return ax_scalar_size(ty_leaf(elt, c)); }

size_t mx_elt_size(const Type *elt)
{
    size_t s = 0;
    for (int c = 0; c < elt->width; c++) s += mx_leaf_size(elt, c);
    return s;
}

ax_array *mx_array(MRun *r, const Type *elt, int rank, const int64_t *shape, bool zero)
{
    if (shape_size_checked(r->cx, "axle mpi", rank, shape) < 0) return NULL;
    return array_alloc(r->cx, elt, rank, shape, zero);
}

int mx_local(MRun *r, const Node *x, ax_array **out)
{
    ax_mpi_program *pr = r->pr;
    if (pr->be == &backend_cpu) return cpu_run_op(&r->h, pr->state, x, out);
    return interp_run_op(r->ie, &r->h, x, out);
}

void mx_bind(MRun *r, int var, ax_array *a)
{
    if (var < 0 || var >= r->h.nvars) return;
    ax_array_release(r->cells[var]);
    r->cells[var] = ax_array_retain(a);
    r->h.aenv[var] = &r->cells[var];
}

void mx_unbind(MRun *r, int var)
{
    if (var < 0 || var >= r->h.nvars) return;
    ax_array_release(r->cells[var]);
    r->cells[var] = NULL;
    r->h.aenv[var] = NULL;
}

/* A rank-0 array holding the leaves v. */
ax_array *mx_scalar_array(MRun *r, const Type *elt, const Scalar *v)
{
    int64_t none[1] = {0};
    ax_array *a = mx_array(r, elt, 0, none, false);
    for (int l = 0; a && l < elt->width; l++) sc_store(a->buf[l], ty_leaf(elt, l), 0, v[l]);
    return a;
}

void mx_leaves_of(const ax_array *a, int64_t i, Scalar *v)
{
    for (int l = 0; l < a->ncomp; l++) v[l] = sc_load(a->buf[l], ty_leaf(a->elt, l), i);
}

int mx_combine(MRun *r, MOp *o, const Type *elt, const Scalar *a, const Scalar *b, Scalar *out)
{
    ax_array *x = mx_scalar_array(r, elt, a), *y = mx_scalar_array(r, elt, b), *res = NULL;
    int rc = x && y ? 0 : -1;
    if (rc == 0) {
        mx_bind(r, o->ck_a, x);
        mx_bind(r, o->ck_b, y);
        rc = mx_local(r, o->ck, &res);
        mx_unbind(r, o->ck_a);
        mx_unbind(r, o->ck_b);
    }
    if (rc == 0) mx_leaves_of(res, 0, out);
    ax_array_release(x);
    ax_array_release(y);
    ax_array_release(res);
    return rc;
}

/* A run of a rank-0 helper (a fold's z, a condition): its leaves. */
int mx_run0(MRun *r, const Node *g, Scalar *out)
{
    ax_array *a = NULL;
    if (mx_local(r, g, &a)) return -1;
    mx_leaves_of(a, 0, out);
    ax_array_release(a);
    return 0;
}

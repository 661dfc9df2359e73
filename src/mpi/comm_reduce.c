/*
 * Reductions across ranks: one element per rank combined (an allreduce or
 * an exclusive scan, by a built-in MPI operator where the combination is
 * one, else by MPI_Op_create over the combine kernel, mx_combine), and a
 * whole array's elements combined across ranks (a private permute's
 * copies).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"
#include "runtime/array.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nomem(MRun *r) { return mx_fail(r->m, AX_ERR_NOMEM, "axle mpi: out of memory"); }

/* ------------------------------------------------------------ reductions */

/* Unsigned integers combined by min or max go to MPI as the signed type
 * of their width with the top bit flipped (x ^ 2^(b-1) orders as signed
 * exactly as x does as unsigned): MPICH 4.0.2 (Debian 12's) compares
 * MPI_UINT8_T .. MPI_UINT64_T and MPI_UNSIGNED_LONG as signed under
 * MPI_MAX and MPI_MIN (the maximum of 5 and UINT64_MAX is 5 there). */
static bool flipped(ax_scalar s, Prim p)
{
    return (p == P_MIN || p == P_MAX) && s != AX_BOOL && s != AX_F32 && s != AX_F64 && !sc_is_signed(s);
}

static uint64_t top_bit(ax_scalar s)
{
    return (uint64_t)1 << (ax_scalar_size(s) * 8 - 1);
}

/* The MPI type of leaves of s combined by p (integers as unsigned where
 * only the bits matter: wrapping add and multiply; as signed under min and
 * max, unsigned ones flipped). */
static MPI_Datatype mpi_type(ax_scalar s, Prim p)
{
    bool sign = (p == P_MIN || p == P_MAX) && (sc_is_signed(s) || flipped(s, p));
    switch (s) {
    case AX_BOOL: case AX_I8: case AX_U8: return sign ? MPI_INT8_T : MPI_UINT8_T;
    case AX_I16: case AX_U16: return sign ? MPI_INT16_T : MPI_UINT16_T;
    case AX_I32: case AX_U32: return sign ? MPI_INT32_T : MPI_UINT32_T;
    case AX_I64: case AX_U64: return sign ? MPI_INT64_T : MPI_UINT64_T;
    case AX_F32: return MPI_FLOAT;
    case AX_F64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
    }
}

static MPI_Op mpi_op(Prim p)
{
    switch (p) {
    case P_ADD: return MPI_SUM;
    case P_MUL: return MPI_PROD;
    case P_MIN: return MPI_MIN;
    case P_MAX: return MPI_MAX;
    case P_BAND: return MPI_BAND;
    case P_BOR: return MPI_BOR;
    case P_BXOR: return MPI_BXOR;
    case P_AND: return MPI_LAND;
    case P_OR: return MPI_LOR;
    default: return MPI_OP_NULL;
    }
}

/* p's identity on s (what an empty block contributes): exact for every
 * operand (x + -0.0 is x, -0.0 included). */
static Scalar identity(Prim p, ax_scalar s)
{
    Scalar v;
    v.u = 0;
    bool f = s == AX_F32 || s == AX_F64;
    switch (p) {
    case P_ADD:
        if (s == AX_F32) v.f32 = -0.0f;
        else if (s == AX_F64) v.f64 = -0.0;
        break;
    case P_MUL:
        if (s == AX_F32) v.f32 = 1.0f;
        else if (s == AX_F64) v.f64 = 1.0;
        else v.u = 1;
        break;
    case P_MIN:
        v = sc_norm((Scalar){.u = sc_is_signed(s) ? (UINT64_MAX >> 1) >> (64 - sc_bits(s)) : UINT64_MAX}, s);
        break;
    case P_MAX:
        if (sc_is_signed(s)) v.i = -((int64_t)1 << (sc_bits(s) - 1));
        break;
    case P_BAND:
        v = sc_norm((Scalar){.u = UINT64_MAX}, s);
        break;
    case P_AND:
        v.b = true;
        break;
    default:
        break;
    }
    (void)f;
    return v;
}

/* The user operator's state reaches it through the datatype's name: MPI
 * hands a user function no argument of its own, and axle keeps no
 * global state.  r is cleared when the call fails (a pending reduction
 * may still run the function later: it then does nothing). */
typedef struct RedCtx {
    MRun *r;
    MOp *o;
    const Type *elt;
    int w;
    Scalar *tmp;                /* w leaves */
    bool swap;                  /* right to left (a scan from the right, over the
                                   reversed communicator): a . b is f(b, a) */
} RedCtx;

static void red_user(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    char name[MPI_MAX_OBJECT_NAME] = "";
    int n = 0;
    void *p = NULL;
    MPI_Type_get_name(*dt, name, &n);
    if (sscanf(name, "axle-reduce:%p", &p) != 1 || !p) return;
    RedCtx *c = p;
    size_t rec = sizeof(Scalar) * (size_t)(c->w + 1);
    for (int i = 0; i < *len; i++) {
        Scalar *a = (Scalar *)((char *)in + rec * (size_t)i), *b = (Scalar *)((char *)inout + rec * (size_t)i);
        if (!a[0].u) continue;
        if (!b[0].u) {
            memcpy(b, a, rec);
            continue;
        }
        /* in o inout: the lower ranks' value on the left */
        const Scalar *x = c->swap ? b + 1 : a + 1, *y = c->swap ? a + 1 : b + 1;
        if (c->r && c->r->cx->status == AX_OK && mx_combine(c->r, c->o, c->elt, x, y, c->tmp) == 0)
            memcpy(b + 1, c->tmp, sizeof(Scalar) * (size_t)c->w);
    }
}

int cm_reduce(MRun *r, MOp *o, const Type *elt, const Scalar *mine, bool has, bool exscan, bool reverse,
              Scalar *out, bool *outhas)
{
    ax_mpi *m = r->m;
    int w = elt->width, rc = 0;
    MPI_Comm comm = m->work;
    if (reverse) {
        if (m->rev == MPI_COMM_NULL) {
            if (MPI_Comm_split(m->work, 0, m->np - 1 - m->me, &m->rev) != MPI_SUCCESS)
                return mx_fail(m, AX_ERR_BACKEND, "axle mpi: MPI_Comm_split failed");
            MPI_Comm_set_errhandler(m->rev, MPI_ERRORS_RETURN);
        }
        comm = m->rev;
    }
    int myr = reverse ? m->np - 1 - m->me : m->me;
    MPI_Request rq;
    int e;
    if (o->builtin) {
        ax_scalar s = ty_leaf(elt, 0);
        size_t sz = ax_scalar_size(s);
        char *ib = ax__malloc(sz * (size_t)w + 1), *ob = ax__calloc(1, sz * (size_t)w + 1);
        if (!ib || !ob) {
            free(ib);
            free(ob);
            return nomem(r);
        }
        uint64_t flip = flipped(s, o->redprim) ? top_bit(s) : 0;
        for (int l = 0; l < w; l++) {
            Scalar v = has ? mine[l] : identity(o->redprim, s);
            v.u ^= flip;
            sc_store(ib, s, l, v);
        }
        e = exscan ? MPI_Iexscan(ib, ob, w, mpi_type(s, o->redprim), mpi_op(o->redprim), comm, &rq)
                   : MPI_Iallreduce(ib, ob, w, mpi_type(s, o->redprim), mpi_op(o->redprim), comm, &rq);
        bool pending = false;
        if (e != MPI_SUCCESS) rc = cm_mpi_failed(r, e, exscan ? "MPI_Iexscan" : "MPI_Iallreduce");
        else pending = (rc = cm_wait(r, &rq, 1)) != 0;
        cm_count_coll(r, (int64_t)(sz * (size_t)w), (int64_t)(sz * (size_t)w));
        for (int l = 0; l < w && rc == 0; l++) {
            if (exscan && myr == 0) {
                out[l] = identity(o->redprim, s);
            } else {
                Scalar v = sc_load(ob, s, l);
                v.u ^= flip;
                out[l] = sc_norm(v, s);
            }
        }
        *outhas = !(exscan && myr == 0);
        cm_drop(m, ib, pending);
        cm_drop(m, ob, pending);
        return rc;
    }
    /* an operator of the program's own: MPI_Op_create with commute = 0,
     * so that MPI combines the ranks' values in rank order */
    size_t rec = sizeof(Scalar) * (size_t)(w + 1);
    Scalar *ib = ax__calloc(1, rec), *ob = ax__calloc(1, rec);
    RedCtx *c = ax__calloc(1, sizeof *c);
    Scalar *tmp = ax__calloc((size_t)w + 1, sizeof *tmp);
    MPI_Datatype t = MPI_DATATYPE_NULL;
    MPI_Op op = MPI_OP_NULL;
    if (!ib || !ob || !c || !tmp) {
        free(ib);
        free(ob);
        free(c);
        free(tmp);
        return nomem(r);
    }
    *c = (RedCtx){r, o, elt, w, tmp, reverse};
    ib[0].u = has;
    if (has && w > 0) memcpy(ib + 1, mine, sizeof(Scalar) * (size_t)w);
    char name[64];
    snprintf(name, sizeof name, "axle-reduce:%p", (void *)c);
    MPI_Type_contiguous((int)rec, MPI_BYTE, &t);
    MPI_Type_set_name(t, name);
    MPI_Type_commit(&t);
    MPI_Op_create(red_user, 0, &op);
    e = exscan ? MPI_Iexscan(ib, ob, 1, t, op, comm, &rq) : MPI_Iallreduce(ib, ob, 1, t, op, comm, &rq);
    bool pending = false;
    if (e != MPI_SUCCESS) rc = cm_mpi_failed(r, e, exscan ? "MPI_Iexscan" : "MPI_Iallreduce");
    else pending = (rc = cm_wait(r, &rq, 1)) != 0;
    cm_count_coll(r, (int64_t)rec, (int64_t)rec);
    if (rc == 0 && r->cx->status != AX_OK) rc = -1;   /* the combine failed inside MPI */
    if (rc == 0) {
        bool h = !(exscan && myr == 0) && ob[0].u != 0;
        *outhas = h;
        if (h && w > 0) memcpy(out, ob + 1, sizeof(Scalar) * (size_t)w);
    }
    if (!pending) {
        MPI_Op_free(&op);
        MPI_Type_free(&t);
    }
    c->r = NULL;   /* a pending reduction's later combines do nothing */
    cm_drop(m, ib, pending);
    cm_drop(m, ob, pending);
    cm_drop(m, c, pending);
    cm_drop(m, tmp, pending);
    return rc;
}

/* Flips the top bit of n unsigned integers of type s in place (flipped). */
static void flip_all(void *buf, ax_scalar s, int64_t n)
{
    uint64_t t = top_bit(s);
    for (int64_t i = 0; i < n; i++) {
        Scalar v = sc_load(buf, s, i);
        v.u ^= t;
        sc_store(buf, s, i, v);
    }
}

int cm_allreduce_array(MRun *r, MOp *o, ax_array *a)
{
    ax_mpi *m = r->m;
    for (int c = 0; c < a->ncomp; c++) {
        ax_scalar s = ty_leaf(a->elt, c);
        size_t sz = ax_scalar_size(s);
        bool flip = flipped(s, o->redprim);
        if (flip) flip_all(a->buf[c], s, a->size);
        for (int64_t lo = 0; lo < a->size;) {
            int64_t n = a->size - lo < (1 << 28) ? a->size - lo : (1 << 28);
            MPI_Request rq;
            int e = MPI_Iallreduce(MPI_IN_PLACE, (char *)a->buf[c] + (size_t)lo * sz, (int)n, mpi_type(s, o->redprim),
                                   mpi_op(o->redprim), m->work, &rq);
            if (e != MPI_SUCCESS) return cm_mpi_failed(r, e, "MPI_Iallreduce");
            if (cm_wait(r, &rq, 1)) {
                cm_keep_array(m, a);
                return -1;
            }
            cm_count_coll(r, n * (int64_t)sz, n * (int64_t)sz);
            lo += n;
        }
        if (flip) flip_all(a->buf[c], s, a->size);
    }
    return 0;
}


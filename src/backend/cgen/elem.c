/*
 * Element-level pieces of the skeletons (cgen.h): the parts that do not
 * depend on how a backend runs its loops.  Every consumer reads its array
 * operands through cg_read_lin / cg_read_ix, which load from a manifest
 * buffer or inline a DELAYED operand's element function (its linear form
 * or its index form; thesis s.4.4), so fusion can hand any consumer a
 * delayed input; results go out through cg_store (with a fused map's
 * function applied: ir_epilogue).  Also here: the checks and the fault
 * reports of both dialects, the producers' element code, the analysis of
 * an operator (commutative and associative: the reductions' and
 * permute's fast paths) and the dispatch of an operation to a backend's
 * skeletons.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "cgen.h"
#include "runtime/host.h"
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ loads and checks */

/* A load of leaf k of slot s at linear position lin (bools normalised:
 * any nonzero byte reads as true). */
const char *cg_load(G *g, ax_scalar s, int slot, int k, const char *lin)
{
    if (s == AX_BOOL) return cg_fmt(g, "(u8)(a%d_%d[%s] != 0)", slot, k, lin);
    return cg_fmt(g, "a%d_%d[%s]", slot, k, lin);
}

/* The run-time check "bad is false", else the fault `report` (a call of
 * ax_fail).  Inside a kernel emitted with deferred checks (G.defer) the
 * check only sets the kernel's flag bad_: the loop keeps no call and no
 * branch, so it vectorises, and the kernel reruns its range in its checked
 * copy when the flag is set, which reports exactly the fault the checked
 * code would (cpu/skel.c cpu_kernel_end). */
void cg_defer_bad(G *g, const char *bad)
{
    if (g->spec) cg_line(g, "bad_ |= (u8)(%s & (%s));", g->spec, bad);
    else cg_line(g, "bad_ |= (u8)(%s);", bad);
    g->ndefer++;
}

void cg_guard(G *g, const char *bad, const char *report)
{
    if (g->defer) {
        cg_defer_bad(g, bad);
    } else if (g->dialect == CG_GPU) {
        cg_line(g, "if (%s) { %s }", bad, report);
    } else {
        cg_line(g, "if (__builtin_expect(%s, 0)) { %s }", bad, report);
    }
}

/* A GPU kernel records only the fault's status code (the first one wins):
 * the host then reruns the program where faults are reported in full
 * (gpu/gpu.c), so no index or shape crosses back from the device. */
static const char *gpu_fault(G *g, int code) { return cg_fmt(g, "ax_fault(err_, %d);", code); }

const char *cg_fail_prim(G *g, int code, int aux)
{
    if (g->dialect == CG_GPU) return gpu_fault(g, code);
    return cg_fmt(g, "ax_fail(c, %d, %d, %d, %s, 0, 0, 0, 0);", code, SITE_PRIM, aux, g->pos);
}

/* The call reporting a fault: ix (rank leaves) and the slot's shape. */
const char *cg_fail_ix(G *g, int code, int site, int slot, Val ix, int rank)
{
    if (g->dialect == CG_GPU) return gpu_fault(g, code);
    const char *ixs = "0", *shs = "0";
    if (ix.n > 0) {
        Buf t = {0};
        buf_put(&t, "(const i64[]){");
        for (int d = 0; d < ix.n; d++) buf_printf(&t, "%s%s", d ? ", " : "", ix.v[d]);
        buf_put(&t, "}");
        ixs = cg_fmt(g, "%s", cg_buf_text(g, &t, "0"));
        free(t.s);
    }
    if (rank > 0) {
        Buf t = {0};
        buf_put(&t, "(const i64[]){");
        for (int d = 0; d < rank; d++) buf_printf(&t, "%ss%d_%d", d ? ", " : "", slot, d);
        buf_put(&t, "}");
        shs = cg_fmt(g, "%s", cg_buf_text(g, &t, "0"));
        free(t.s);
    }
    return cg_fmt(g, "ax_fail(c, %d, %d, 0, %s, %d, %s, %d, %s);", code, site, g->pos, ix.n, ixs, rank, shs);
}

/* ------------------------------------------------------------ operands and results */

/* Records a fact about variable id (G.fact), once. */
static void push_fact(G *g, int id, int slot, bool lin, ax_scalar conv, const char *pos)
{
    for (int k = 0; k < g->nfact; k++)
        if (g->fact[k].id == id) return;
    if (g->nfact >= (int)(sizeof g->fact / sizeof *g->fact)) return;
    g->fact[g->nfact].id = id;
    g->fact[g->nfact].slot = slot;
    g->fact[g->nfact].lin = lin;
    g->fact[g->nfact].conv = conv;
    g->fact[g->nfact].pos = pos;
    g->nfact++;
}

/* Every consumer applies a DELAYED operand's element functions only at
 * positions / indices inside the operand's extent (loops run over it,
 * backpermute checks first): a fact about the function's parameter. */
void cg_range_fact(G *g, const Node *lam, int slot, bool lin)
{
    if (lam && lam->op == OP_LAM && lam->nparam == 1 && lam->param[0])
        push_fact(g, lam->param[0]->id, slot, lin, AX_I64, NULL);
}

/* ax_stencil_ix's function receives its element's index, inside the
 * result's extent, as its last parameter: a read of another array at that
 * index (the edge of Jacobi's sweep) is unchecked once pre_ holds. */
void cg_stencil_index_fact(G *g, const Node *lam)
{
    const Stencil *st = g->cn->x->sten;
    if (st && st->ix && lam && lam->op == OP_LAM && lam->nparam >= 1 && lam->param[lam->nparam - 1])
        push_fact(g, lam->param[lam->nparam - 1]->id, 0, false, AX_I64, NULL);
}

/* A value fact (G.fact) about the parameter of f, which is applied to the
 * elements of operand i: when i is DELAYED and its element at position p
 * is p itself, or p converted to an integer type (generate's \ix -> i32
 * (ixget 0 ix) over a vector, as linear form \p -> i32 p); pos is the
 * C expression of the position. */
void cg_value_fact(G *g, const Node *f, int i, const char *pos)
{
    const Node *y = cg_opd_node(g->cn, i), *lam = y->op == OP_DELAYED ? y->kid[2] : NULL;
    if (!f || f->op != OP_LAM || f->nparam != 1 || !f->param[0] || !lam || lam->op != OP_LAM || lam->nparam != 1 ||
        !lam->param[0])
        return;
    const Node *b = lam->kid[0];
    if (b->op == OP_PRIM && b->a == P_CVT && b->n == 1) b = b->kid[0];
    const Type *bt = lam->kid[0]->type;
    ax_scalar t = bt->kind == TY_SCALAR ? bt->s : AX_BOOL;
    if (b->op == OP_VAR && b->id == lam->param[0]->id && t >= AX_I8 && t <= AX_U64)
        push_fact(g, f->param[0]->id, cg_opd_slot(g->cn, i), true, t, pos);
}

/* The element of operand i at linear position pos. */
Val cg_read_lin(G *g, int i, const char *pos)
{
    const CgNode *cn = g->cn;
    const Node *y = cg_opd_node(cn, i);
    pos = cg_atom(g, pos);
    if (y->op == OP_DELAYED) {
        Val p = cg_val(g, 1);
        if (p.n) p.v[0] = pos;
        cg_range_fact(g, y->kid[2], cg_opd_slot(cn, i), true);
        return cg_apply(g, y->kid[2], &p, 1);
    }
    const Type *elt = y->type->elt;
    int slot = cg_opd_slot(cn, i);
    Val r = cg_val(g, elt->width);
    for (int k = 0; k < r.n; k++) r.v[k] = cg_local(g, ty_leaf(elt, k), cg_load(g, ty_leaf(elt, k), slot, k, pos));
    return r;
}

/* Row-major position of ix within slot's shape. */
const char *cg_linear(G *g, int slot, Val ix)
{
    if (ix.n == 0) return "0";
    const char *acc = ix.v[0];
    for (int d = 1; d < ix.n; d++) acc = cg_fmt(g, "(%s) * s%d_%d + %s", acc, slot, d, ix.v[d]);
    return cg_atom(g, acc);
}

/* The element of operand i at index ix (in bounds: callers check). */
Val cg_read_ix(G *g, int i, Val ix)
{
    const CgNode *cn = g->cn;
    const Node *y = cg_opd_node(cn, i);
    if (y->op == OP_DELAYED) {
        cg_range_fact(g, y->kid[1], cg_opd_slot(cn, i), false);
        return cg_apply(g, y->kid[1], &ix, 1);
    }
    return cg_read_lin(g, i, cg_linear(g, cg_opd_slot(cn, i), ix));
}

void cg_store(G *g, int slot, const Type *elt, const char *pos, Val v)
{
    if (slot == 0 && g->cn->epi) {
        /* the epilogue, as the result is stored (ir_epilogue) */
        const char *was = g->pos;
        g->pos = pos;
        v = cg_apply(g, g->cn->epi, &v, 1);
        g->pos = was;
        elt = cg_slot_type(g->cn, 0)->elt;
    }
    for (int k = 0; k < elt->width && k < v.n; k++) cg_line(g, "a%d_%d[%s] = %s;", slot, k, pos, v.v[k]);
}

/* The value of thunk t: its parameter leaves. */
Val cg_param(G *g, int t, const Type *type)
{
    Val v = cg_val(g, type->width);
    for (int l = 0; l < v.n; l++) v.v[l] = cg_fmt(g, "p%d_%d", t, l);
    return v;
}

/* ------------------------------------------------------------ producers */

/* The source index of a backpermute/transform, bounds-checked in safe mode
 * (a bad index reads a zero / the delayed function at index 0). */
static Val bp_read(G *g, Val ix)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x, *p = x->kid[1];
    Val six = cg_apply(g, p, &ix, 1);
    int slot = cg_opd_slot(cn, 0);
    if (!g->safe || six.n == 0) return cg_read_ix(g, 0, six);
    Buf t = {0};
    for (int d = 0; d < six.n; d++) buf_printf(&t, "%s((u64)%s < (u64)s%d_%d)", d ? " & " : "", six.v[d], slot, d);
    const char *ok = cg_local(g, AX_BOOL, cg_buf_text(g, &t, "0"));
    free(t.s);
    cg_guard(g, cg_fmt(g, "!%s", ok), cg_fail_ix(g, AX_ERR_INDEX, SITE_BACKPERMUTE, slot, six, six.n));
    if (cg_opd_node(cn, 0)->op == OP_DELAYED) {
        /* the element function only at indices inside its extent */
        Val r = cg_decl(g, cg_opd_elt(cn, 0), "r");
        cg_line(g, "if (%s) {", ok);
        g->ind++;
        cg_assign(g, r, cg_read_ix(g, 0, six));
        cg_close(g);
        return r;
    }
    const char *lin = cg_linear(g, slot, six);
    const Type *elt = cg_opd_elt(cn, 0);
    Val r = cg_val(g, elt->width);
    for (int k = 0; k < r.n; k++) {
        ax_scalar s = ty_leaf(elt, k);
        r.v[k] = cg_local(g, s, cg_fmt(g, "%s ? %s : 0", ok, cg_load(g, s, slot, k, lin)));
    }
    return r;
}

void cg_producer_elem(G *g, bool lin, Val ix, const char *pos)
{
    const CgNode *cn = g->cn;
    const Node *x = cn->x;
    const Type *elt = x->type->elt;
    Val v;
    switch (x->op) {
    case OP_GENERATE:
        cg_range_fact(g, x->kid[1], 0, false);   /* its index is inside the result's extent */
        v = cg_apply(g, x->kid[1], &ix, 1);
        break;
    case OP_MAP:
    case OP_ZIPWITH: {
        int k = cn->nopd;
        Val *args = arena_alloc(g->ar, sizeof *args * (size_t)(k > 0 ? k : 1));
        if (!args) return cg_fail(g, "cpu codegen: out of memory");
        for (int j = 0; j < k; j++) args[j] = lin ? cg_read_lin(g, j, pos) : cg_read_ix(g, j, ix);
        v = cg_apply(g, x->kid[0], args, k);
        break;
    }
    case OP_BACKPERMUTE:
        v = bp_read(g, ix);
        break;
    case OP_TRANSFORM: {
        Val y = bp_read(g, ix);
        v = cg_apply(g, x->kid[2], &y, 1);
        break;
    }
    case OP_REPLICATE:
    case OP_SLICE: {
        const Slice *sp = x->slice;
        const Type *st = cg_opd_node(cn, 0)->type;
        Val six = cg_val(g, st->rank);
        int r = 0, s = 0, k = 0;
        for (int d = 0; d < sp->n; d++) {
            if (!sp->fixed[d]) {
                if (s < six.n) six.v[s] = ix.v[r];
                s++, r++;
            } else {
                int t = cn->kid_thunk[1 + k++];
                if (x->op == OP_SLICE) {
                    if (s < six.n) six.v[s] = cg_fmt(g, "p%d_0", t);
                    s++;
                } else {
                    r++;
                }
            }
        }
        v = cg_read_ix(g, 0, six);
        break;
    }
    case OP_RESHAPE:
        v = cg_read_lin(g, 0, pos);
        break;
    default:
        cg_fail(g, "cpu codegen: %s is not a producer", op_name(x->op));
        return;
    }
    cg_store(g, 0, elt, pos, v);
}

/* ------------------------------------------------------------ operators */

/* The operator \x y -> body is componentwise one of add, mul, min, max,
 * band, bor, bxor, and, or of x and y, in either order: commutative as
 * well as associative, so it may be applied in any grouping and order.
 * ops[k] receives leaf k's primitive (NULL: don't care). */
bool cg_comm_op(Prim p, ax_scalar s)
{
    switch (p) {
    case P_ADD: case P_MUL: case P_MIN: case P_MAX: return s != AX_BOOL;
    case P_BAND: case P_BOR: case P_BXOR: return s != AX_BOOL && s != AX_F32 && s != AX_F64;
    case P_AND: case P_OR: return s == AX_BOOL;
    default: return false;
    }
}

/* Is e the leaf `k` of parameter v (a scalar VAR, or a PROJ of it)? */
static bool leaf_of(const Node *e, const Node *v, int k, int w)
{
    if (w == 1) return e->op == OP_VAR && e->id == v->id;
    return e->op == OP_PROJ && e->kid[0]->op == OP_VAR && e->kid[0]->id == v->id &&
           e->kid[0]->type->kind == TY_TUPLE && ty_leaf_offset(e->kid[0]->type, e->a) == k &&
           e->type->kind == TY_SCALAR;
}

bool cg_comm_leaf(const Node *e, const Node *x, const Node *y, int k, int w, Prim *op)
{
    if (e->op != OP_PRIM || e->n != 2 || e->type->kind != TY_SCALAR || !cg_comm_op((Prim)e->a, e->type->s))
        return false;
    const Node *a = e->kid[0], *b = e->kid[1];
    if (!((leaf_of(a, x, k, w) && leaf_of(b, y, k, w)) || (leaf_of(a, y, k, w) && leaf_of(b, x, k, w)))) return false;
    if (op) *op = (Prim)e->a;
    return true;
}

bool cg_lam_comm(const Node *f, Prim *ops)
{
    if (!f || f->op != OP_LAM || f->nparam != 2 || f->n < 1) return false;
    const Node *x = f->param[0], *y = f->param[1], *b = f->kid[0];
    int w = x->type->width;
    if (w == 1) return cg_comm_leaf(b, x, y, 0, 1, ops);
    /* A flat tuple of scalars, component k combining the k-th leaves. */
    if (b->op != OP_TUPLE || x->type->kind != TY_TUPLE || b->n != w) return false;
    for (int k = 0; k < w; k++)
        if (!cg_comm_leaf(b->kid[k], x, y, k, w, ops ? &ops[k] : NULL)) return false;
    return true;
}

/* Kid indices: the operator, z (-1: none), the array. */
bool cg_has_z(Op op)
{
    return op == OP_FOLD || op == OP_FOLDSEG || op == OP_SCANL || op == OP_SCANR || op == OP_SCANLEX || op == OP_SCANREX;
}

/* ------------------------------------------------------------ loops */

/* The leaves of component comp (-1: all) of the space's element x. */
Val cg_loop_comp(G *g, Val x, int comp)
{
    const Node *sp = cg_opd_node(g->cn, 0);
    if (comp < 0) return x;
    const Type *e = sp->type->elt;
    return cg_slice(x, ty_leaf_offset(e, comp), e->elts[comp]->width);
}

/* ------------------------------------------------------------ skeletons */

void cg_emit_skeleton(G *g, const CgSkeletons *sk)
{
    const Node *x = g->cn->x;
    switch (host_family(x->op)) {
    case HOST_PRODUCER:
        /* generate, backpermute, transform, replicate, slice: the index
         * loop; map and reshape: linear; zipWith: linear (at rank <= 1 the
         * intersection of its operands is a prefix), and the index loop
         * beside at rank > 1 (the executor picks by the operands' shapes) */
        if (x->op == OP_MAP || x->op == OP_RESHAPE || x->op == OP_ZIPWITH) sk->producer(g, R_LIN);
        if ((x->op != OP_MAP && x->op != OP_RESHAPE && x->op != OP_ZIPWITH) || (x->op == OP_ZIPWITH && x->type->rank > 1))
            sk->producer(g, R_MAIN);
        break;
    case HOST_FOLD: sk->fold(g); break;
    case HOST_FOLDSEG: sk->foldseg(g); break;
    case HOST_SCAN: sk->scan(g); break;
    case HOST_PERMUTE: sk->permute(g); break;
    case HOST_STENCIL: sk->stencil(g); break;
    case HOST_FILTER: sk->filter(g); break;
    case HOST_LOOP: sk->loop(g); break;
    case HOST_UNIT: break;   /* thunks only: its value */
    case HOST_SORT: if (sk->sort) sk->sort(g); break;
    default:
        if (x->op == OP_ACOND) break;   /* thunks only: its condition */
        cg_fail(g, "%s: no skeleton for %s", cg_who(g), op_name(x->op));
        break;
    }
}

/* Whether a node contains a fromLinear. */
static bool has_fromlin(const Node *e)
{
    if (!e) return false;
    if (e->op == OP_PRIM && e->a == P_FROMLIN) return true;
    for (int i = 0; i < e->n; i++)
        if (has_fromlin(e->kid[i])) return true;
    return false;
}

Val cg_extents(G *g, int slot, int r)
{
    Val e = cg_val(g, r);
    for (int d = 0; d < e.n; d++) e.v[d] = cg_fmt(g, "s%d_%d", slot, d);
    return e;
}

void cg_coords(G *g, const char *lin, Val ext, Val out, bool decl)
{
    int r = ext.n < out.n ? ext.n : out.n;
    if (r <= 0) return;
    if (r == 1) {
        cg_line(g, "%s%s = %s;", decl ? "const i64 " : "", out.v[0], lin);
        return;
    }
    const char *q = cg_fresh(g, "q");
    cg_line(g, "i64 %s = %s;", q, lin);
    for (int d = r - 1; d >= 1; d--)
        cg_line(g, "%s%s = %s %% %s; %s /= %s;", decl ? "const i64 " : "", out.v[d], q, ext.v[d], q, ext.v[d]);
    cg_line(g, "%s%s = %s;", decl ? "const i64 " : "", out.v[0], q);
}

CgRowRead cg_row_read(G *g, const char *row, const char *base, bool fromlin_only)
{
    CgRowRead rr = {false, cg_val(g, 0), base};
    const CgNode *cn = g->cn;
    const Node *y = cg_opd_node(cn, 0);
    int r = y->type->rank, slot = cg_opd_slot(cn, 0);
    if (y->op != OP_DELAYED || r < 2 || (fromlin_only && !has_fromlin(y->kid[2]))) return rr;
    rr.ix = true;
    rr.outer = cg_val(g, r - 1);
    for (int d = 0; d < rr.outer.n; d++) rr.outer.v[d] = cg_fresh(g, "o");
    cg_coords(g, row, cg_extents(g, slot, r - 1), rr.outer, true);
    return rr;
}

Val cg_read_row(G *g, const CgRowRead *rr, const char *pos)
{
    if (!rr->ix) return cg_read_lin(g, 0, pos);
    Val ix = cg_val(g, rr->outer.n + 1);
    if (ix.n != rr->outer.n + 1) return cg_read_lin(g, 0, pos);
    for (int d = 0; d < rr->outer.n; d++) ix.v[d] = rr->outer.v[d];
    ix.v[rr->outer.n] = cg_atom(g, cg_fmt(g, "%s - %s", pos, rr->base));
    return cg_read_ix(g, 0, ix);
}

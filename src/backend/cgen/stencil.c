/*
 * Stencils, the part both backends share (cgen.h): the kernels' prologue
 * (the interior, where every neighbour of every input is inside, and the
 * neighbours' linear offsets) and the neighbourhoods handed to the
 * stencil function as its arguments: in the interior without bounds
 * tests, on the border each coordinate through the boundary rule (exactly
 * interp.c's boundary()).  cpu/stencil.c and gpu/stencil.c write the
 * loops around them (accelerate-llvm's one stencil generator for native
 * and PTX).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "cgen.h"
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the prologue */

bool cg_sten_check(G *g)
{
    const CgNode *cn = g->cn;
    const Stencil *st = cn->x->sten;
    int r = st->rank, nin = st->ninputs;
    if (r < 1 || r > AX_MAX_RANK || nin < 1 || nin > 2 || cn->nopd != nin) {
        cg_fail(g, "%s: bad stencil", cg_who(g));
        return false;
    }
    for (int q = 0; q < nin; q++)
        for (int d = 0; d < r; d++)
            if (st->size[q][d] > 255) {
                cg_fail(g, "%s: stencil too wide", cg_who(g));
                return false;
            }
    return true;
}

void cg_sten_prologue(G *g, bool offsets)
{
    const CgNode *cn = g->cn;
    const Stencil *st = cn->x->sten;
    int r = st->rank, nin = st->ninputs;
    /* The interior [lo_d, hi_d): every neighbour of every input inside. */
    for (int d = 0; d < r; d++) {
        const char *lo = "0", *hi = cg_fmt(g, "s0_%d", d);
        for (int q = 0; q < nin; q++) {
            int h = st->size[q][d] / 2;
            lo = cg_fmt(g, "ax_max64(%s, %d)", lo, h);
            hi = cg_fmt(g, "ax_min64(%s, s%d_%d - %d)", hi, cg_opd_slot(cn, q), d, h);
        }
        cg_line(g, "const i64 lo%d = %s, hi%d = %s;", d, lo, d, hi);
    }
    /* Linear offsets of the neighbours in each input (interior reads). */
    for (int q = 0; q < nin && offsets; q++) {
        int slot = cg_opd_slot(cn, q), cnt = 1;
        for (int d = 0; d < r; d++) cnt *= st->size[q][d];
        int pos[AX_MAX_RANK] = {0};
        for (int k = 0; k < cnt; k++) {
            Buf b = {0};
            buf_put(&b, "0");
            for (int d = 0; d < r; d++) {
                int o = pos[d] - st->size[q][d] / 2;
                if (!o) continue;
                buf_printf(&b, " + (%d)", o);
                for (int e = d + 1; e < r; e++) buf_printf(&b, " * s%d_%d", slot, e);
            }
            cg_line(g, "const i64 o%d_%d = %s;", q, k, cg_buf_text(g, &b, "0"));
            free(b.s);
            for (int d = r - 1; d >= 0; d--) {
                if (++pos[d] < st->size[q][d]) break;
                pos[d] = 0;
            }
        }
    }
}

void cg_sten_row_bases(G *g, Val ix)
{
    const CgNode *cn = g->cn;
    const Stencil *st = cn->x->sten;
    int r = st->rank;
    for (int q = 0; q < st->ninputs; q++) {
        int slot = cg_opd_slot(cn, q);
        const char *rb = "0";
        for (int d = 0; d < r - 1; d++) rb = d ? cg_fmt(g, "(%s) * s%d_%d + %s", rb, slot, d, ix.v[d]) : ix.v[0];
        if (r > 1) rb = cg_fmt(g, "(%s) * s%d_%d", rb, slot, r - 1);
        cg_line(g, "const i64 rb%d = %s;", q, rb);
    }
}

/* The outer coordinates of a row's neighbours through the boundary rule,
 * re<q>_<d>_<k> (input q, dimension d < rank - 1, offset k - h), once
 * before the row's loop of STEN_ROW_EDGE reads: inside the loop the
 * clamps kept GCC from vectorising it. */
void cg_sten_row_edge_coords(G *g, Val ix)
{
    const CgNode *cn = g->cn;
    const Stencil *st = cn->x->sten;
    for (int q = 0; q < st->ninputs; q++)
        for (int d = 0; d < st->rank - 1; d++) {
            int h = st->size[q][d] / 2;
            for (int o = -h; o <= h; o++)
                cg_line(g, "const i64 re%d_%d_%d = ax_b%d(%s + %d, s%d_%d);", q, d, o + h, (int)st->bound[q], ix.v[d], o,
                        cg_opd_slot(cn, q), d);
        }
}

/* ------------------------------------------------------------ neighbourhoods */

/* Room for a stencil function's arguments: every neighbour of every
 * input (sten_args, sten_args_loop); NULL (codegen failed) when memory
 * runs out. */
static Val *sten_arg_slots(G *g)
{
    const Stencil *st = g->cn->x->sten;
    int np = 0;
    for (int q = 0; q < st->ninputs; q++) {
        int cnt = 1;
        for (int d = 0; d < st->rank; d++) cnt *= st->size[q][d];
        np += cnt;
    }
    np += st->ix;
    Val *args = arena_alloc(g->ar, sizeof *args * (size_t)(np > 0 ? np : 1));
    if (!args) cg_fail(g, "cpu codegen: out of memory");
    return args;
}

/* ax_stencil_ix's last argument: the element's index, its innermost
 * component the row loop's j. */
static void sten_index_arg(G *g, Val ix, const char *j, Val *args, int *a)
{
    const Stencil *st = g->cn->x->sten;
    if (!st->ix) return;
    Val v = cg_val(g, st->rank);
    for (int d = 0; d < v.n; d++) v.v[d] = d == st->rank - 1 ? j : ix.v[d];
    args[(*a)++] = v;
}

/* The neighbourhood of every input as function arguments: interior (no
 * bounds tests: every neighbour is inside) or border (each coordinate
 * through the boundary rule, exactly interp.c's boundary()). */
Val *cg_sten_args(G *g, CgStenPart part, Val ix, const char *j, int *nargs)
{
    bool interior = part == STEN_INTERIOR;
    const CgNode *cn = g->cn;
    const Stencil *st = cn->x->sten;
    int r = st->rank, nin = st->ninputs;
    Val *args = sten_arg_slots(g);
    if (!args) return NULL;
    int a = 0;
    for (int q = 0; q < nin; q++) {
        int slot = cg_opd_slot(cn, q);
        const Type *elt = cg_opd_elt(cn, q);
        const Node *y = cg_opd_node(cn, q);
        bool delayed = y->op == OP_DELAYED;
        int h[AX_MAX_RANK], cnt = 1;
        for (int d = 0; d < r; d++) {
            h[d] = st->size[q][d] / 2;
            cnt *= st->size[q][d];
        }
        /* border: the mapped coordinate per dimension and offset */
        const char *crd[AX_MAX_RANK][256];
        if (!interior || delayed) {
            for (int d = 0; d < r; d++)
                for (int o = -h[d]; o <= h[d]; o++) {
                    const char *c = d == r - 1 ? cg_fmt(g, "%s + %d", j, o) : cg_fmt(g, "%s + %d", ix.v[d], o);
                    if (part == STEN_ROW_EDGE && d < r - 1)   /* the row's, before its loop */
                        crd[d][o + h[d]] = cg_fmt(g, "re%d_%d_%d", q, d, o + h[d]);
                    else if (interior || part == STEN_ROW_EDGE)
                        crd[d][o + h[d]] = cg_local(g, AX_I64, c);
                    else
                        crd[d][o + h[d]] = cg_local(g, AX_I64, cg_fmt(g, "ax_b%d(%s, s%d_%d)", (int)st->bound[q], c, slot, d));
                }
        }
        Val cval = {0};
        if (st->bound[q] == AX_CONSTANT) cval = cg_param(g, cn->kid_thunk[st->constkid[q]], elt);
        int pos[AX_MAX_RANK] = {0};
        for (int k = 0; k < cnt; k++) {
            if (delayed) {
                Val nix = cg_val(g, r);
                for (int d = 0; d < nix.n; d++) nix.v[d] = crd[d][pos[d]];
                if (!interior && st->bound[q] == AX_CONSTANT) {
                    Buf b = {0};
                    for (int d = 0; d < r; d++) buf_printf(&b, "%s%s >= 0", d ? " & " : "", crd[d][pos[d]]);
                    const char *ok = cg_local(g, AX_BOOL, cg_buf_text(g, &b, "0"));
                    free(b.s);
                    for (int d = 0; d < nix.n; d++) nix.v[d] = cg_local(g, AX_I64, cg_fmt(g, "%s ? %s : 0", ok, nix.v[d]));
                    Val v = cg_read_ix(g, q, nix);
                    Val s = cg_val(g, v.n);
                    for (int l = 0; l < s.n; l++)
                        s.v[l] = cg_local(g, ty_leaf(elt, l), cg_fmt(g, "%s ? %s : %s", ok, v.v[l], cval.v[l]));
                    args[a++] = s;
                } else {
                    args[a++] = cg_read_ix(g, q, nix);
                }
            } else if (interior) {
                args[a++] = cg_read_lin(g, q, cg_fmt(g, "rb%d + %s + o%d_%d", q, j, q, k));
            } else {
                const char *lin = crd[0][pos[0]];
                for (int d = 1; d < r; d++) lin = cg_fmt(g, "(%s) * s%d_%d + %s", lin, slot, d, crd[d][pos[d]]);
                lin = cg_atom(g, lin);
                if (st->bound[q] == AX_CONSTANT) {
                    Buf b = {0};
                    for (int d = 0; d < r; d++) buf_printf(&b, "%s%s >= 0", d ? " & " : "", crd[d][pos[d]]);
                    const char *ok = cg_local(g, AX_BOOL, cg_buf_text(g, &b, "0"));
                    free(b.s);
                    Val s = cg_val(g, elt->width);
                    for (int l = 0; l < s.n; l++)
                        s.v[l] = cg_local(g, ty_leaf(elt, l),
                                          cg_fmt(g, "%s ? %s : %s", ok, cg_load(g, ty_leaf(elt, l), slot, l, lin), cval.v[l]));
                    args[a++] = s;
                } else {
                    args[a++] = cg_read_lin(g, q, lin);
                }
            }
            for (int d = r - 1; d >= 0; d--) {
                if (++pos[d] < st->size[q][d]) break;
                pos[d] = 0;
            }
        }
    }
    sten_index_arg(g, ix, j, args, &a);
    *nargs = a;
    return args;
}

/* Stencils of more neighbours than this (per input) read their
 * neighbourhood in loops into local arrays, which the function's
 * parameters then name, instead of one unrolled read per neighbour (a
 * wide stencil unrolled is more C than GCC compiles in reasonable time).
 * Up to 9x9 the unrolled reads stay (they vectorise best, and the
 * benchmarks' stencils are 3x3 and 5x5). */
enum { STENCIL_UNROLL_MAX = 81 };

bool cg_sten_looped(const Stencil *st)
{
    for (int q = 0; q < st->ninputs; q++) {
        int cnt = 1;
        for (int d = 0; d < st->rank; d++) cnt *= st->size[q][d];
        if (cnt > STENCIL_UNROLL_MAX) return true;
    }
    return false;
}

/* sten_args in loop form: for each input, a loop nest over the
 * neighbourhood (row-major, as the function receives it) reads every
 * neighbour, through the boundary rule on the border, into one local
 * array per leaf; argument k names element k of those arrays.  The code
 * is the size of one neighbour's read, whatever the neighbourhood. */
Val *cg_sten_args_loop(G *g, CgStenPart part, Val ix, const char *j, int *nargs)
{
    bool interior = part == STEN_INTERIOR;
    const CgNode *cn = g->cn;
    const Stencil *st = cn->x->sten;
    int r = st->rank, nin = st->ninputs;
    Val *args = sten_arg_slots(g);
    if (!args) return NULL;
    int a = 0;
    for (int q = 0; q < nin; q++) {
        int slot = cg_opd_slot(cn, q);
        const Type *elt = cg_opd_elt(cn, q);
        const Node *y = cg_opd_node(cn, q);
        bool delayed = y->op == OP_DELAYED;
        int cnt = 1;
        for (int d = 0; d < r; d++) cnt *= st->size[q][d];
        Val nb = cg_leaf_arrays(g, elt, "nb", cnt);
        Val cval = {0};
        if (st->bound[q] == AX_CONSTANT) cval = cg_param(g, cn->kid_thunk[st->constkid[q]], elt);
        const char *k = cg_fresh(g, "k");
        cg_line(g, "i64 %s = 0;", k);
        const char *e[AX_MAX_RANK] = {0};
        for (int d = 0; d < r; d++) {
            int h = st->size[q][d] / 2;
            e[d] = cg_fresh(g, "e");
            cg_line(g, "for (i64 %s = -%d; %s <= %d; %s++) {", e[d], h, e[d], h, e[d]);
            g->ind++;
        }
        /* this neighbour's coordinates (border: through the boundary rule) */
        const char *crd[AX_MAX_RANK] = {0};
        for (int d = 0; d < r; d++) {
            const char *c = cg_fmt(g, "%s + %s", d == r - 1 ? j : ix.v[d], e[d]);
            bool raw = interior || (part == STEN_ROW_EDGE && d == r - 1);
            crd[d] = raw ? cg_local(g, AX_I64, c)
                         : cg_local(g, AX_I64, cg_fmt(g, "ax_b%d(%s, s%d_%d)", (int)st->bound[q], c, slot, d));
        }
        Val v;
        const char *ok = NULL;
        if (!interior && st->bound[q] == AX_CONSTANT) {
            Buf b = {0};
            for (int d = 0; d < r; d++) buf_printf(&b, "%s%s >= 0", d ? " & " : "", crd[d]);
            ok = cg_local(g, AX_BOOL, cg_buf_text(g, &b, "0"));
            free(b.s);
            for (int d = 0; d < r; d++) crd[d] = cg_local(g, AX_I64, cg_fmt(g, "%s ? %s : 0", ok, crd[d]));
        }
        if (delayed) {
            Val nix = cg_val(g, r);
            for (int d = 0; d < nix.n; d++) nix.v[d] = crd[d];
            v = cg_read_ix(g, q, nix);
        } else if (interior) {
            const char *off = e[0];
            for (int d = 1; d < r; d++) off = cg_fmt(g, "(%s) * s%d_%d + %s", off, slot, d, e[d]);
            v = cg_read_lin(g, q, cg_fmt(g, "rb%d + %s + %s", q, j, off));
        } else {
            const char *lin = crd[0];
            for (int d = 1; d < r; d++) lin = cg_fmt(g, "(%s) * s%d_%d + %s", lin, slot, d, crd[d]);
            v = cg_read_lin(g, q, lin);
        }
        for (int l = 0; l < nb.n && l < v.n; l++)
            cg_line(g, "%s[%s] = %s;", nb.v[l], k, ok ? cg_fmt(g, "%s ? %s : %s", ok, v.v[l], cval.v[l]) : v.v[l]);
        cg_line(g, "%s++;", k);
        for (int d = 0; d < r; d++) cg_close(g);
        for (int i = 0; i < cnt; i++) {
            Val s1 = cg_val(g, nb.n);
            for (int l = 0; l < s1.n; l++) s1.v[l] = cg_fmt(g, "%s[%d]", nb.v[l], i);
            args[a++] = s1;
        }
    }
    sten_index_arg(g, ix, j, args, &a);
    *nargs = a;
    return args;
}

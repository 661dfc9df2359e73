/*
 * The CPU's multi-generator loops (the planner's fused loops, ir.h Loop).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"

/* A multi-generator loop (ir.h Loop; seed 003's fused loop with several
 * generators): one pass over the space computes its element once and
 * hands each generator its component: a collect stores it, a filter counts
 * where its predicate holds, a reduction folds it.  The part kernel is the
 * fold's (task t is chunk k of a row; every reduction's partials in one
 * scratch area, the filters' counts per chunk in c->s2) with the lane-
 * parallel loop when every operator is commutative; comb combines the
 * partials in chunk order as fold's does; scatter (rank 1, only with
 * filters) writes each filter's kept components from its chunk's offset. */
typedef struct LoopG {
    const Loop *lp;
    int nred, nflt;
    int *roff;                /* per generator: its first leaf in the partials (reductions) */
    const Type *rt;           /* the partials' element: the tuple of the reductions' */
    Val acc;                  /* per reduction leaf: the accumulators (res) */
    Val *lane;                /* per generator: its lane arrays (reductions, comm) */
    const char **cnt;         /* per generator: its count (filters) */
    const char **hv;          /* per generator: has it an element yet (conditional reductions) */
    bool hv_known;            /* every one has: the elements after the first kept */
    CgRowRead rr;
} LoopG;

enum { LE_INIT, LE_STEP, LE_LANE0, LE_LANE };

/* One element at position pos: collects stored, filters counted, the
 * reductions' accumulators (mode LE_INIT/LE_STEP) or lanes at l (LE_LANE0:
 * set, LE_LANE: combined) updated. */
static void loop_elem(G *g, LoopG *L, const char *pos, int mode, const char *l)
{
    const Node *x = g->cn->x;
    g->pos = cg_atom(g, pos);
    Val v = cg_read_row(g, &L->rr, g->pos);
    for (int q = 0; q < L->lp->ngen && !g->failed; q++) {
        const LoopGen *gn = &L->lp->gen[q];
        Val c = cg_loop_comp(g, v, gn->comp);
        const Type *ct = loop_comp_type(x, gn->comp);
        switch (gn->kind) {
        case LOOP_COLLECT:
            cg_store(g, q, ct, g->pos, c);
            break;
        case LOOP_FILTER:
            cg_line(g, "%s += %s;", L->cnt[q], cg_loop_comp(g, v, gn->pred).v[0]);
            break;
        case LOOP_REDUCE: {
            Val acc = cg_slice(L->acc, L->roff[q], ct->width);
            const Node *f = x->kid[gn->op];
            if (gn->pred >= 0 || ((mode == LE_STEP) && ir_selection(f, NULL))) {
                /* a selection operator: the accumulator replaced or not,
                 * a branch (taken rarely by a running max) rather than a
                 * dependency through selects; a conditional one counts
                 * only the elements its predicate keeps, from none
                 * (hv: whether it has one yet) */
                bool keep_then;
                const Node *cnd = ir_selection(f, &keep_then);
                if (!cnd) return cg_fail(g, "cpu codegen: a conditional reduction without a selection operator");
                if (mode == LE_INIT && gn->pred < 0) {
                    cg_assign(g, acc, c);
                    break;
                }
                g->env[f->param[0]->id] = acc;
                g->env[f->param[1]->id] = c;
                Val cv = cg_exp(g, cnd);
                const char *take = cg_fmt(g, "%s%s", keep_then ? "!" : "", cv.n ? cv.v[0] : "0");
                const char *p = gn->pred >= 0 ? cg_loop_comp(g, v, gn->pred).v[0] : NULL;
                if (p && L->hv_known) take = cg_fmt(g, "%s & %s", p, take);
                else if (p) take = cg_fmt(g, "%s & (!%s | %s)", p, L->hv[q], take);
                cg_line(g, "if (__builtin_expect(%s, 0)) {", take);
                g->ind++;
                cg_assign(g, acc, c);
                cg_close(g);
                if (p && !L->hv_known) cg_line(g, "%s |= %s;", L->hv[q], p);
                break;
            }
            if (mode == LE_INIT) cg_assign(g, acc, c);
            else if (mode == LE_STEP) cg_update(g, ct, acc, cg_apply2(g, f, acc, c));
            else if (mode == LE_LANE0) cg_put(g, L->lane[q], l, c);
            else cg_update(g, ct, cg_at(g, L->lane[q], l), cg_apply2(g, f, cg_at(g, L->lane[q], l), c));
            break;
        }
        }
    }
}

void cpu_emit_loop(G *g)
{
    CgNode *cn = (CgNode *)g->cn;
    const Node *x = cn->x;
    LoopG L = {x->loop, 0, 0, NULL, NULL, {0, NULL}, NULL, NULL, NULL, false, {false, {0, NULL}, NULL}};
    const Loop *lp = x->loop;
    int ng = lp->ngen;
    L.roff = arena_alloc(g->ar, sizeof *L.roff * (size_t)ng);
    L.lane = arena_alloc(g->ar, sizeof *L.lane * (size_t)ng);
    L.cnt = arena_alloc(g->ar, sizeof *L.cnt * (size_t)ng);
    L.hv = arena_alloc(g->ar, sizeof *L.hv * (size_t)ng);
    const Type **rts = arena_alloc(g->ar, sizeof *rts * (size_t)ng);
    if (!L.roff || !L.lane || !L.cnt || !L.hv || !rts) return cg_fail(g, "cpu codegen: out of memory");
    bool comm = true, cond = false;
    int w = 0;
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        if (gn->kind == LOOP_FILTER) L.nflt++;
        if (gn->kind != LOOP_REDUCE) continue;
        rts[L.nred++] = loop_comp_type(x, gn->comp);
        L.roff[q] = w;
        w += rts[L.nred - 1]->width;
        comm = comm && gn->pred < 0 && cg_lam_comm(x->kid[gn->op], NULL);
        cond = cond || gn->pred >= 0;
    }
    L.rt = ty_tuple(g->ar, L.nred, rts);
    if (!L.rt) return cg_fail(g, "cpu codegen: out of memory");
    cn->comm = comm;
    cn->scratch_leaves = L.rt->width;

    /* part */
    cpu_kernel_begin(g, R_PART, 0, true);
    cg_line(g, "const i64 n = c->n, ch = c->chunk, nch = c->nchunk;");
    Val qp = cpu_scratch(g, L.rt, "c->s1");
    if (L.nflt || cond) cg_line(g, "i64 *restrict cnt = (i64 *)c->s2;");
    if (cond) cg_line(g, "u8 *restrict hv = (u8 *)(cnt + %d * 2 * c->m);", ng);
    cg_line(g, "for (i64 t = start; t < end; t++) {");
    g->ind++;
    cg_line(g, "const i64 row = nch == 1 ? t : t / nch, k = nch == 1 ? 0 : t %% nch;");   /* fold.c cpu_part_loop */
    cg_line(g, "const i64 lo = row * n + k * ch, hi = ax_min64(lo + ch, row * n + n);");
    L.rr = cg_row_read(g, "row", "row * n", true);
    for (int q = 0; q < ng; q++)
        if (lp->gen[q].kind == LOOP_FILTER) {
            L.cnt[q] = cg_fresh(g, "cnt");
            cg_line(g, "i64 %s = 0;", L.cnt[q]);
        }
    L.acc = cg_decl(g, L.rt, "r");
    for (int q = 0; q < ng; q++)
        if (lp->gen[q].kind == LOOP_REDUCE && lp->gen[q].pred >= 0) {
            if (lp->gen[q].z < 0) return cg_fail(g, "cpu codegen: a conditional fold1");
            L.hv[q] = cg_fresh(g, "hv");
            cg_line(g, "u8 %s = 0;", L.hv[q]);
        }
    if (L.nred == 0) {
        cg_line(g, "for (i64 j = lo; j < hi; j++) {");
        g->ind++;
        loop_elem(g, &L, "j", LE_STEP, NULL);
        cg_close(g);
    } else {
        const char *j = cg_fresh(g, "j");
        const int LANES = cpu_lanes(L.rt);
        cg_line(g, "i64 %s = lo + 1;", j);
        if (comm) {
            cg_line(g, "if (hi - lo >= %d) {", 2 * LANES);
            g->ind++;
            for (int q = 0; q < ng; q++) {
                if (lp->gen[q].kind != LOOP_REDUCE) continue;
                const Type *ct = loop_comp_type(x, lp->gen[q].comp);
                L.lane[q] = cg_leaf_arrays(g, ct, "lane", LANES);
            }
            const char *l = cg_fresh(g, "l");
            cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, LANES, l);
            g->ind++;
            loop_elem(g, &L, cg_fmt(g, "lo + %s", l), LE_LANE0, l);
            cg_close(g);
            cg_line(g, "for (%s = lo + %d; %s + %d <= hi; %s += %d) {", j, LANES, j, LANES, j, LANES);
            g->ind++;
            cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, LANES, l);
            g->ind++;
            loop_elem(g, &L, cg_fmt(g, "%s + %s", j, l), LE_LANE, l);
            cg_close(g);
            cpu_keep_loop(g);
            cg_close(g);
            for (int q = 0; q < ng; q++) {
                if (lp->gen[q].kind != LOOP_REDUCE) continue;
                const Type *ct = loop_comp_type(x, lp->gen[q].comp);
                Val acc = cg_slice(L.acc, L.roff[q], ct->width);
                cg_assign(g, acc, cg_at(g, L.lane[q], "0"));
                cg_line(g, "for (int %s = 1; %s < %d; %s++) {", l, l, LANES, l);
                g->ind++;
                if (!g->fast) cpu_keep_loop(g);
                cg_update(g, ct, acc, cg_apply2(g, x->kid[lp->gen[q].op], acc, cg_at(g, L.lane[q], l)));
                cg_close(g);
            }
            g->ind--;
            cg_line(g, "} else {");
            g->ind++;
        }
        loop_elem(g, &L, "lo", LE_INIT, NULL);
        if (comm) cg_close(g);
        if (cond) {
            /* the conditional reductions' first elements kept, then the
             * rest without asking whether they have one (the loop peeled) */
            const char *all = "1";
            for (int q = 0; q < ng; q++)
                if (lp->gen[q].kind == LOOP_REDUCE && lp->gen[q].pred >= 0) all = cg_fmt(g, "%s & %s", all, L.hv[q]);
            cg_line(g, "for (; %s < hi && !(%s); %s++) {", j, all, j);
            g->ind++;
            loop_elem(g, &L, j, LE_STEP, NULL);
            cg_close(g);
            L.hv_known = true;
        }
        cg_line(g, "for (; %s < hi; %s++) {", j, j);
        g->ind++;
        loop_elem(g, &L, j, LE_STEP, NULL);
        cg_close(g);
        L.hv_known = false;
        /* one chunk per row: the row's results (after z); else partials */
        cg_line(g, "if (nch == 1) {");
        g->ind++;
        for (int q = 0; q < ng; q++) {
            const LoopGen *gn = &lp->gen[q];
            if (gn->kind != LOOP_REDUCE) continue;
            const Type *ct = loop_comp_type(x, gn->comp);
            Val acc = cg_slice(L.acc, L.roff[q], ct->width);
            if (gn->z >= 0) {
                Val z = cg_param(g, cn->kid_thunk[gn->z], ct);
                Val y = cg_bind(g, ct, cg_apply2(g, x->kid[gn->op], z, acc), "y");
                if (gn->pred >= 0) {
                    /* none kept: z */
                    cg_line(g, "if (!%s) {", L.hv[q]);
                    g->ind++;
                    cg_assign(g, y, z);
                    cg_close(g);
                }
                acc = y;
            }
            cg_store(g, q, ct, "row", acc);
        }
        g->ind--;
        cg_line(g, "} else {");
        g->ind++;
        cg_put(g, qp, "t", L.acc);
        for (int q = 0; q < ng; q++)
            if (lp->gen[q].kind == LOOP_REDUCE && lp->gen[q].pred >= 0) cg_line(g, "hv[%d * c->m + t] = %s;", q, L.hv[q]);
        cg_close(g);
    }
    for (int q = 0; q < ng; q++)
        if (lp->gen[q].kind == LOOP_FILTER) cg_line(g, "cnt[%d * c->m + t] = %s;", q, L.cnt[q]);
    cg_close(g);
    cpu_kernel_end(g);

    /* comb: per row, z and the partials in chunk order */
    if (L.nred) {
        cpu_kernel_begin(g, R_COMB, 0, true);
        cg_line(g, "const i64 nch = c->nchunk;");
        qp = cpu_scratch(g, L.rt, "c->s1");
        if (cond) cg_line(g, "const u8 *restrict hv = (const u8 *)((const i64 *)c->s2 + %d * 2 * c->m);", ng);
        cg_line(g, "for (i64 r = start; r < end; r++) {");
        g->ind++;
        for (int q = 0; q < ng; q++) {
            const LoopGen *gn = &lp->gen[q];
            if (gn->kind != LOOP_REDUCE) continue;
            const Type *ct = loop_comp_type(x, gn->comp);
            Val part = cg_slice(qp, L.roff[q], ct->width);
            Val acc = cg_decl(g, ct, "y");
            cg_assign(g, acc, gn->z >= 0 ? cg_param(g, cn->kid_thunk[gn->z], ct) : cg_at(g, part, "r * nch"));
            cg_line(g, "for (i64 k = %d; k < nch; k++) {", gn->z >= 0 ? 0 : 1);
            g->ind++;
            cpu_keep_loop(g);
            /* (a conditional one's chunks without an element kept add nothing) */
            if (gn->pred >= 0) cg_line(g, "if (!hv[%d * c->m + r * nch + k]) continue;", q);
            cg_update(g, ct, acc, cg_apply2(g, x->kid[gn->op], acc, cg_at(g, part, "r * nch + k")));
            cg_close(g);
            cg_store(g, q, ct, "r", acc);
        }
        cg_close(g);
        cpu_kernel_end(g);
    }

    /* scatter: each filter's kept components from its chunk's offset, no
     * branch on the predicates: every element is stored at a filter's
     * next place and the place advances where the predicate holds (the
     * next one kept overwrites it).  Up to the first filter's last kept
     * element (found from the chunk's end: usually its last or so) every
     * place is in the chunk's share; past it, where another filter still
     * has elements to place, a place past the share goes to a local
     * instead (the next chunk's first).  A filter with none kept in the
     * chunk stores nothing. */
    if (L.nflt) {
        cpu_kernel_begin(g, R_SCATTER, 0, true);
        cg_line(g, "const i64 n = c->n, ch = c->chunk, m = c->m;");
        cg_line(g, "const i64 *restrict cnt = (const i64 *)c->s2, *restrict offs = cnt + %d * m;", ng);
        L.rr.ix = false;
        const char **e = arena_alloc(g->ar, sizeof *e * (size_t)ng), **has = arena_alloc(g->ar, sizeof *has * (size_t)ng);
        if (!e || !has) return cg_fail(g, "cpu codegen: out of memory");
        cg_line(g, "for (i64 t = start; t < end; t++) {");
        g->ind++;
        cg_line(g, "const i64 lo = t * ch, hi = ax_min64(lo + ch, n);");
        cg_line(g, "i64 stop = hi;");
        const char *more = "0";
        for (int q = 0; q < ng; q++) {
            if (lp->gen[q].kind != LOOP_FILTER) continue;
            const Type *ct = loop_comp_type(x, lp->gen[q].comp);
            L.cnt[q] = cg_fresh(g, "m");
            e[q] = cg_fresh(g, "e");
            has[q] = cg_fresh(g, "h");
            cg_line(g, "i64 %s = offs[%d * m + t];", L.cnt[q], q);
            cg_line(g, "const i64 %s = %s + cnt[%d * m + t];", e[q], L.cnt[q], q);
            cg_line(g, "const u8 %s = %s > %s;", has[q], e[q], L.cnt[q]);
            /* its last element kept, from the chunk's end */
            cg_line(g, "if (%s) {", has[q]);
            g->ind++;
            cg_line(g, "i64 j = hi - 1;");
            cg_line(g, "for (; j > lo; j--) {");
            g->ind++;
            g->pos = "j";
            cg_line(g, "if (%s) break;", cg_loop_comp(g, cg_read_lin(g, 0, "j"), lp->gen[q].pred).v[0]);
            cg_close(g);
            cg_line(g, "stop = ax_min64(stop, j + 1);");
            cg_close(g);
            for (int k = 0; k < ct->width; k++) cg_line(g, "%s sink%d_%d;", cg_ctype(ty_leaf(ct, k)), q, k);
            more = cg_fmt(g, "%s || %s < %s", more, L.cnt[q], e[q]);
        }
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 0) cg_line(g, "i64 i = lo;");
            if (pass == 0) cg_line(g, "for (; i < stop; i++) {");
            else cg_line(g, "for (; i < hi && (%s); i++) {", more);
            g->ind++;
            g->pos = "i";
            Val v = cg_read_lin(g, 0, "i");
            for (int q = 0; q < ng; q++) {
                const LoopGen *gn = &lp->gen[q];
                if (gn->kind != LOOP_FILTER) continue;
                const Type *ct = loop_comp_type(x, gn->comp);
                Val c = cg_loop_comp(g, v, gn->comp);
                cg_line(g, "if (%s) {", has[q]);
                g->ind++;
                for (int k = 0; k < ct->width && k < c.n; k++) {
                    if (pass == 0) cg_line(g, "a%d_%d[%s] = %s;", q, k, L.cnt[q], c.v[k]);
                    else cg_line(g, "*(%s < %s ? &a%d_%d[%s] : &sink%d_%d) = %s;", L.cnt[q], e[q], q, k, L.cnt[q], q, k,
                                 c.v[k]);
                }
                cg_line(g, "%s += %s;", L.cnt[q], cg_loop_comp(g, v, gn->pred).v[0]);
                cg_close(g);
            }
            cg_close(g);
        }
        cg_close(g);
        cpu_kernel_end(g);
    }
}

/*
 * The generator's ax_awhile: a loop over (counter, data) whose body steps
 * the data in a way that keeps its bounds.
 *
 * A part of the random program generator: tests/randprog.c #includes its
 * parts in order (one translation unit, so that every test that includes
 * randprog.c gets them all); not compiled alone.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef RANDPROG_C
#error "a part of randprog.c, which #includes it: not compiled alone"
#endif

/* ---------------------------------------------------------------- awhile */

/* ax_awhile over (counter, data): cond is counter < K (and sometimes
 * "any element satisfies p"), body increments the counter and steps the
 * data.  PRESERVE steps keep the shape (the data's bounds are the
 * initial ones); SHRINK steps may make it smaller (bounds lo = 0). */
typedef struct AW {
    G *g;
    const GT *elt;
    int rank, mode, style, d;
    ax_scalar ct;
    int64_t K;
    Arr *init;
    const char *ctxt, *btxt;
} AW;

static void aw_params(G *g, AW *w, ax_acc x, Arr **C, Arr **D)
{
    const char *xn = sfmt(g, "S%d", ++g->nstate);
    emit(g, "%s: the state ([%s]^0, [%s]^%d)", xn, ax_scalar_name(w->ct), gt_str(g, w->elt), w->rank);
    int64_t lo[AX_MAX_RANK], hi[AX_MAX_RANK];
    for (int k = 0; k < w->rank; k++) {
        lo[k] = w->mode ? 0 : w->init->lo[k];
        hi[k] = w->init->hi[k];
    }
    ax_acc acc_12 = ax_aget(x, 0);
    *C = arr_mk(g, RP_AGET, acc_12, &GS[w->ct], 0, NULL, NULL, 0, 0, "ax_aget(%s, 0)", xn);
    ax_acc acc_13 = ax_aget(x, 1);
    *D = arr_mk(g, RP_AGET, acc_13, w->elt, w->rank, lo, hi, 0, 0, "ax_aget(%s, 1)", xn);
}

static ax_acc aw_cond(ax_acc x, void *env)
{
    AW *w = env;
    G *g = w->g;
    int amark = g->nap, smark = g->nsp;
    blk_push(g);
    Arr *C, *D;
    aw_params(g, w, x, &C, &D);
    Lam lk;
    lam_init(&lk, g, LK_LT_K, 1, T_BOOL);
    lk.pt[0] = &GS[w->ct];
    lk.ct = w->ct;
    lk.K = w->K;
    Arr *r;
    if (w->style == 1) {
        count(g, RP_E_AT);
        count(g, RP_E_CMP);
        Ex rd = mkex(g, ax_at(C->a, ax_index(0, NULL)), &GS[w->ct], sfmt(g, "ax_at(%s, ax_index())", C->name), 1, 0);
        Ex c = bin(g, "ax_lt", ax_lt, rd, cint(g, w->ct, w->K), T_BOOL);
        ax_acc acc_14 = ax_unit(g->cx, c.e);
        r = arr_mk(g, RP_UNIT, acc_14, T_BOOL, 0, NULL, NULL, 3, 0, "ax_unit(%s)", c.txt);
    } else {
        ax_acc acc_15 = ax_map(cb1, &lk, C->a);
        r = arr_mk(g, RP_MAP, acc_15, T_BOOL, 0, NULL, NULL, 2, 0, "ax_map(%s, %s)", ltxt(&lk), C->name);
        if (w->style == 2) {
            Lam lp, la;
            lam_init(&lp, g, LK_GEN, 1, T_BOOL);
            lp.pt[0] = w->elt;
            ax_acc acc_16 = ax_map(cb1, &lp, D->a);
            Arr *p = arr_mk(g, RP_MAP, acc_16, T_BOOL, D->rank, D->lo, D->hi, elems(D) * (lp.cost + 1),
                            lp.awork, "ax_map(%s, %s)", ltxt(&lp), D->name);
            ax_acc acc_17 = ax_fold_all(ax_fn_or, NULL, ax_bool(false), p->a);
            if (p->rank != 1) touch(g, p);
            Arr *any = arr_mk(g, RP_FOLDALL, acc_17, T_BOOL, 0, NULL, NULL,
                              elems(p), p->work, "ax_fold_all(ax_fn_or, false, %s)", p->name);
            lam_init(&la, g, LK_AND, 2, T_BOOL);
            la.pt[0] = la.pt[1] = T_BOOL;
            ax_acc acc_18 = ax_zip_with(cb2, &la, r->a, any->a);
            r = arr_mk(g, RP_ZIPWITH, acc_18, T_BOOL, 0, NULL, NULL, 2, r->work + any->work,
                       "ax_zip_with(%s, %s, %s)", ltxt(&la), r->name, any->name);
        }
    }
    emit(g, "return %s", r->name);
    const char *inner = blk_pop(g);
    w->ctxt = sfmt(g, "\\(S%d) {\n%s%*s}", g->nstate, inner, 4 * (g->nblk - 1), "");
    g->nap = amark;
    g->nsp = smark;
    return r->a;
}

/* One step of the data, from D to an array of D's type. */
static Arr *aw_step(G *g, AW *w, Arr *D)
{
    int rank = D->rank, k = rn(g, 8);
    const GT *elt = w->elt;
    if (rank == 0 && (k == 1 || k == 2 || k == 3)) k = 0;
    if (k == 6 && (w->mode == 0 || rank != 1)) k = 4;
    switch (k) {
    case 1: {   /* stencil */
        int size[AX_MAX_RANK];
        int n = sten_size(g, rank, 9, size);
        Ex val = {0};
        ax_boundary bd = sten_bound(g, elt, &val);
        Lam l;
        lam_init(&l, g, LK_STENCIL, n, elt);
        l.nsten = n;
        for (int i = 0; i < n; i++) l.pt[i] = elt;
        ax_acc acc_19 = ax_stencil(cbv, &l, size, bd, D->a);
        return arr_mk(g, RP_STENCIL, acc_19, elt, rank, D->lo, D->hi,
                      elems(D) * (l.cost + n + 1), l.awork + val.awork, "ax_stencil(%s, %s, %s, %s)", ltxt(&l),
                      size_txt(g, rank, size), bound_txt(g, bd, val.txt), D->name);
    }
    case 2: {   /* scanl1 / scanr1 */
        const Assoc *as = pick_assoc(g, elt, false);
        Arr *a = tame_arr(g, D, as);
        Fn2 f;
        assoc_fn(g, as, &f);
        bool left = pct(g, 50);
        ax_acc r = left ? ax_scanl1(f.f, f.env, a->a) : ax_scanr1(f.f, f.env, a->a);
        return arr_mk(g, left ? RP_SCANL1 : RP_SCANR1, r, elt, rank, D->lo, D->hi, elems(D) * fn2_cost(&f), a->work + f.lam.awork, "%s(%s, %s)",
                      left ? "ax_scanl1" : "ax_scanr1", fn2_txt(&f), a->name);
    }
    case 3: {   /* backpermute within the same shape */
        Lam l;
        lam_init(&l, g, LK_BP_SAME, 1, NULL);
        l.pt[0] = &GI[rank];
        l.rank = rank;
        l.a = D;
        for (int j = 0; j < rank; j++) l.mode[j] = rn(g, 4), l.k[j] = rr(g, -2, 2);
        Ex sh = shape_ex(g, D);
        ax_acc acc_20 = ax_backpermute(sh.e, cb1, &l, D->a);
        return arr_mk(g, RP_BACKPERMUTE, acc_20, elt, rank, D->lo, D->hi,
                      elems(D) * (l.cost + 2), l.awork, "ax_backpermute(%s, %s, %s)", sh.txt, ltxt(&l), D->name);
    }
    case 4: {   /* zip_with with another array */
        Arr *q;
        if (w->mode == 0) {
            Lam lm;
            lam_init(&lm, g, LK_GEN, 1, pick_elt(g, rank));
            lm.pt[0] = elt;
            if (pct(g, 30)) {
                q = D;
            } else {
                ax_acc m = ax_map(cb1, &lm, D->a);
                q = arr_mk(g, RP_MAP, m, lm.ret, rank, D->lo, D->hi, elems(D) * (lm.cost + 1), lm.awork,
                           "ax_map(%s, %s)", ltxt(&lm), D->name);
            }
        } else {
            q = gen_arr(g, pick_elt(g, rank), rank, w->d - 1, 0, g->cfg.max_elems);
        }
        Lam l;
        lam_init(&l, g, LK_GEN, 2, elt);
        l.pt[0] = elt;
        l.pt[1] = q->elt;
        Arr *as[2] = {D, q}, tmp;
        tmp.rank = rank;
        intersect(&tmp, as, 2);
        ax_acc acc_21 = ax_zip_with(cb2, &l, D->a, q->a);
        return arr_mk(g, RP_ZIPWITH, acc_21, elt, rank, tmp.lo, tmp.hi,
                      elems(D) * (l.cost + 1), q->work + l.awork, "ax_zip_with(%s, %s, %s)", ltxt(&l), D->name, q->name);
    }
    case 5: {   /* permute into D, injective */
        Lam lp;
        lam_init(&lp, g, LK_PERM_INJ, 1, NULL);
        lp.pt[0] = &GI[rank];
        lp.a = lp.b = D;
        for (int j = 0; j < rank; j++) lp.mode[j] = rn(g, 2);
        Lam lc;
        lam_init(&lc, g, LK_GEN, 2, elt);
        lc.pt[0] = lc.pt[1] = elt;
        ax_acc acc_22 = ax_permute(cb2, &lc, D->a, cb1, &lp, D->a);
        return arr_mk(g, RP_PERMUTE, acc_22, elt, rank, D->lo, D->hi,
                      elems(D) * (lp.cost + lc.cost + 2), lp.awork + lc.awork, "ax_permute(%s, %s, %s, %s)", ltxt(&lc),
                      D->name, ltxt(&lp), D->name);
    }
    case 6: {   /* filter (SHRINK, rank 1) */
        Lam l;
        lam_init(&l, g, LK_GEN, 1, T_BOOL);
        l.pt[0] = elt;
        int64_t lo = 0;
        ax_acc acc_23 = ax_filter(cb1, &l, D->a);
        return arr_mk(g, RP_FILTER, acc_23, elt, 1, &lo, D->hi, elems(D) * (l.cost + 1), l.awork,
                      "ax_filter(%s, %s)", ltxt(&l), D->name);
    }
    case 7: {   /* acond between a step and D itself */
        Ex c = gen_exp(g, T_BOOL, 2);
        Lam l;
        lam_init(&l, g, LK_GEN, 1, elt);
        l.pt[0] = elt;
        ax_acc acc_24 = ax_map(cb1, &l, D->a);
        Arr *m = arr_mk(g, RP_MAP, acc_24, elt, rank, D->lo, D->hi, elems(D) * (l.cost + 1), l.awork,
                        "ax_map(%s, %s)", ltxt(&l), D->name);
        ax_acc acc_25 = ax_acond(c.e, m->a, D->a);
        return arr_mk(g, RP_ACOND, acc_25, elt, rank, D->lo, D->hi, c.cost, m->work + c.awork,
                      "ax_acond(%s, %s, %s)", c.txt, m->name, D->name);
    }
    default: {   /* map */
        Lam l;
        lam_init(&l, g, LK_GEN, 1, elt);
        l.pt[0] = elt;
        ax_acc acc_26 = ax_map(cb1, &l, D->a);
        return arr_mk(g, RP_MAP, acc_26, elt, rank, D->lo, D->hi, elems(D) * (l.cost + 1), l.awork,
                      "ax_map(%s, %s)", ltxt(&l), D->name);
    }
    }
}

static ax_acc aw_body(ax_acc x, void *env)
{
    AW *w = env;
    G *g = w->g;
    int amark = g->nap, smark = g->nsp;
    blk_push(g);
    Arr *C, *D;
    aw_params(g, w, x, &C, &D);
    Lam li;
    lam_init(&li, g, LK_INC, 1, &GS[w->ct]);
    li.pt[0] = &GS[w->ct];
    li.ct = w->ct;
    ax_acc acc_27 = ax_map(cb1, &li, C->a);
    Arr *c2 = arr_mk(g, RP_MAP, acc_27, &GS[w->ct], 0, NULL, NULL, 2, 0, "ax_map(%s, %s)", ltxt(&li),
                     C->name);
    Arr *d2 = aw_step(g, w, D);
    if (d2->a && !w->mode)   /* PRESERVE: the step must not change the shape */
        for (int k = 0; k < w->rank; k++)
            if (d2->lo[k] != D->lo[k] || d2->hi[k] != D->hi[k]) bad(g, "awhile step changes the bounds");
    ax_acc t = ax_atuple2(c2->a, d2->a);
    count(g, RP_ATUPLE);
    emit(g, "return ax_atuple2(%s, %s)", c2->name, d2->name);
    const char *inner = blk_pop(g);
    w->btxt = sfmt(g, "\\(S%d) {\n%s%*s}", g->nstate, inner, 4 * (g->nblk - 1), "");
    g->nap = amark;
    g->nsp = smark;
    return t;
}

static Arr *op_awhile(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    AW w;
    memset(&w, 0, sizeof w);
    w.g = g;
    w.elt = elt;
    w.rank = rank;
    w.d = d;
    w.mode = (fl & NE) || pct(g, 50) ? 0 : 1;
    w.style = rn(g, 3);
    static const ax_scalar cts[] = {AX_I32, AX_I32, AX_I64, AX_U8, AX_I16};
    w.ct = cts[rn(g, 5)];
    w.K = rn(g, 5);
    w.init = gen_arr(g, elt, rank, d - 1, fl, cap);
    Ex z = cint(g, w.ct, 0);
    if (pct(g, 50)) z = mkex(g, ax_const(g->cx, z.e), z.t, sfmt(g, "ax_const(%s)", z.txt), 0, 0);
    ax_acc acc_28 = ax_unit(g->cx, z.e);
    Arr *c0 = arr_mk(g, RP_UNIT, acc_28, &GS[w.ct], 0, NULL, NULL, 1, 0, "ax_unit(%s)", z.txt);
    ax_acc init = ax_atuple2(c0->a, w.init->a);
    count(g, RP_ATUPLE);
    double w0 = g->work;
    ax_acc r = ax_awhile(aw_cond, aw_body, &w, init);
    double loop = g->work - w0;
    g->work += loop * (double)w.K;   /* the cond runs K + 1 times, the body K */
    count(g, RP_AWHILE);
    const char *sn = sfmt(g, "S%d", ++g->nstate);
    emit(g, "%s = ax_awhile(%s, %s, ax_atuple2(%s, %s))   # K = %" PRId64, sn, w.ctxt ? w.ctxt : "<not called>",
         w.btxt ? w.btxt : "<not called>", c0->name, w.init->name, w.K);
    if (!r) bad(g, "%s: the builder failed: %s", sn, ax_error(g->cx));
    Arr tmp;
    tmp.rank = rank;
    for (int k = 0; k < rank; k++) {
        tmp.lo[k] = w.mode ? 0 : w.init->lo[k];
        tmp.hi[k] = w.init->hi[k];
    }
    double kids = w.init->work + loop * (double)(w.K + 1);
    ax_acc acc_29 = ax_aget(r, 1);
    Arr *res = arr_mk(g, RP_AGET, acc_29, elt, rank, tmp.lo, tmp.hi, 0, kids, "ax_aget(%s, 1)", sn);
    ax_acc acc_30 = ax_aget(r, 0);
    arr_mk(g, RP_AGET, acc_30, &GS[w.ct], 0, NULL, NULL, 0, kids, "ax_aget(%s, 0)", sn);
    return res;
}

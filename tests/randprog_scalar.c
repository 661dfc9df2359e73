/*
 * Generating scalar code: the associative operators (of folds, scans and
 * permutes) and gen_exp, the random scalar expression of a wanted type.
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

/* ---------------------------------------------------------------- associative operators */

enum {
    AS_ADD, AS_MUL, AS_MIN, AS_MAX, AS_BAND, AS_BOR, AS_BXOR, AS_AND, AS_OR, AS_NE, AS_EQ,
    AS_FST, AS_SND, AS_AFFINE, AS_TUPLE, AS_IXMIN, AS_IXMAX, AS_SEL
};

/* An associative operator on t (commutative too if comm): integers wrap,
 * so + and * are exact; float + only with cfg.float_reassoc; fst, snd
 * and affine-map composition are associative but not commutative. */
static Assoc *pick_assoc(G *g, const GT *t, bool comm)
{
    Assoc *a = galloc(g, sizeof *a);
    a->t = t;
    if (t->kind == GK_INDEX) {
        int r = rn(g, comm ? 2 : 4);
        a->kind = r == 0 ? AS_IXMIN : r == 1 ? AS_IXMAX : r == 2 ? AS_FST : AS_SND;
        return a;
    }
    if (t->kind == GK_TUPLE) {
        if (!comm && t->n == 2 && t_int(t->el[0]) && gt_eq(t->el[0], t->el[1]) && pct(g, 40)) {
            a->kind = AS_AFFINE;
        } else if (!comm && pct(g, 10)) {
            a->kind = pct(g, 50) ? AS_FST : AS_SND;
        } else {
            a->kind = AS_TUPLE;
            for (int i = 0; i < t->n; i++) a->sub[i] = pick_assoc(g, t->el[i], comm);
        }
        return a;
    }
    int opts[16], n = 0;
    if (t->s == AX_BOOL) {
        opts[n++] = AS_AND, opts[n++] = AS_OR, opts[n++] = AS_NE, opts[n++] = AS_EQ;
    } else if (s_float(t->s)) {
        opts[n++] = AS_MIN, opts[n++] = AS_MAX;
        if (g->cfg.float_reassoc) opts[n++] = AS_ADD, opts[n++] = AS_ADD;
    } else {
        opts[n++] = AS_ADD, opts[n++] = AS_ADD, opts[n++] = AS_MUL, opts[n++] = AS_MIN, opts[n++] = AS_MAX;
        opts[n++] = AS_BAND, opts[n++] = AS_BOR, opts[n++] = AS_BXOR;
    }
    /* obey the allow mask (min/max and and/or stay when nothing else is left) */
    int m = 0;
    for (int i = 0; i < n; i++) {
        int k = opts[i];
        int op = k == AS_ADD || k == AS_MUL ? RP_E_ARITH : k == AS_MIN || k == AS_MAX ? RP_E_MINMAX
               : k == AS_AND || k == AS_OR ? RP_E_LOGIC : k == AS_NE || k == AS_EQ ? RP_E_CMP : RP_E_BITS;
        if (ok(g, op)) opts[m++] = k;
    }
    n = m;
    if (!comm) opts[n++] = AS_FST, opts[n++] = AS_SND;
    /* a selection operator (the larger, the earlier of equals): not
     * commutative; the planner's conditional reductions (floats' NaNs
     * would make it not associative) */
    if (!comm && t->s != AX_BOOL && !s_float(t->s) && ok(g, RP_E_COND) && ok(g, RP_E_CMP)) opts[n++] = AS_SEL;
    if (!n) {
        opts[n++] = t->s == AX_BOOL ? AS_AND : AS_MIN;
        opts[n++] = t->s == AX_BOOL ? AS_OR : AS_MAX;
    }
    a->kind = opts[rn(g, n)];
    return a;
}

static bool assoc_float_add(const Assoc *a)
{
    if (a->kind == AS_ADD && t_float(a->t)) return true;
    if (a->kind == AS_TUPLE)
        for (int i = 0; i < a->t->n; i++)
            if (assoc_float_add(a->sub[i])) return true;
    return false;
}

static Ex assoc_apply(G *g, const Assoc *as, Ex x, Ex y)
{
    const GT *t = as->t;
    switch (as->kind) {
    case AS_ADD: count(g, RP_E_ARITH); return bin(g, "ax_add", ax_add, x, y, t);
    case AS_MUL: count(g, RP_E_ARITH); return bin(g, "ax_mul", ax_mul, x, y, t);
    case AS_MIN: count(g, RP_E_MINMAX); return bin(g, "ax_min", ax_min, x, y, t);
    case AS_MAX: count(g, RP_E_MINMAX); return bin(g, "ax_max", ax_max, x, y, t);
    case AS_BAND: count(g, RP_E_BITS); return bin(g, "ax_band", ax_band, x, y, t);
    case AS_BOR: count(g, RP_E_BITS); return bin(g, "ax_bor", ax_bor, x, y, t);
    case AS_BXOR: count(g, RP_E_BITS); return bin(g, "ax_bxor", ax_bxor, x, y, t);
    case AS_AND: count(g, RP_E_LOGIC); return bin(g, "ax_and", ax_and, x, y, t);
    case AS_OR: count(g, RP_E_LOGIC); return bin(g, "ax_or", ax_or, x, y, t);
    case AS_NE: count(g, RP_E_CMP); return bin(g, "ax_ne", ax_ne, x, y, t);
    case AS_EQ: count(g, RP_E_CMP); return bin(g, "ax_eq", ax_eq, x, y, t);
    case AS_FST: return x;
    case AS_SND: return y;
    case AS_SEL: count(g, RP_E_CMP); return cond_ex(g, bin(g, "ax_ge", ax_ge, x, y, T_BOOL), x, y);
    case AS_IXMIN:
    case AS_IXMAX: {
        /* componentwise min / max of two indices */
        Ex c[AX_MAX_RANK];
        count(g, RP_E_MINMAX);
        for (int k = 0; k < t->n; k++) {
            Ex u = get_ex(g, x, k), v = get_ex(g, y, k);
            c[k] = as->kind == AS_IXMIN ? bin(g, "ax_min", ax_min, u, v, T_I64) : bin(g, "ax_max", ax_max, u, v, T_I64);
        }
        return mk_index(g, t->n, c);
    }
    case AS_AFFINE: {
        /* (a1, b1) then (a2, b2): x -> a2 (a1 x + b1) + b2 = (a1 a2, b1 a2 + b2);
         * a2 is used twice (shared). */
        const GT *e = t->el[0];
        Ex a1 = get_ex(g, x, 0), b1 = get_ex(g, x, 1), a2 = get_ex(g, y, 0), b2 = get_ex(g, y, 1);
        if (ok(g, RP_SHARE_EXP)) a2 = name_it(g, a2);
        count(g, RP_E_ARITH);
        Ex c[2] = {bin(g, "ax_mul", ax_mul, a1, a2, e),
                   bin(g, "ax_add", ax_add, bin(g, "ax_mul", ax_mul, b1, a2, e), b2, e)};
        return mk_tuple(g, t, c);
    }
    default: {
        Ex c[3];
        for (int i = 0; i < t->n; i++) c[i] = assoc_apply(g, as->sub[i], get_ex(g, x, i), get_ex(g, y, i));
        return mk_tuple(g, t, c);
    }
    }
}

/* The operator as a callback: a ready-made ax_fn_* when there is one
 * (sometimes), else cb2 with the Lam. */
typedef struct Fn2 {
    ax_fn2 f;
    void *env;
    Lam lam;
    const char *name;
} Fn2;

static void assoc_fn(G *g, const Assoc *as, Fn2 *f)
{
    static const struct { int kind; ax_fn2 f; const char *name; } ready[] = {
        {AS_ADD, ax_fn_add, "ax_fn_add"}, {AS_MUL, ax_fn_mul, "ax_fn_mul"}, {AS_MIN, ax_fn_min, "ax_fn_min"},
        {AS_MAX, ax_fn_max, "ax_fn_max"}, {AS_BAND, ax_fn_band, "ax_fn_band"}, {AS_BOR, ax_fn_bor, "ax_fn_bor"},
        {AS_BXOR, ax_fn_bxor, "ax_fn_bxor"}, {AS_AND, ax_fn_and, "ax_fn_and"}, {AS_OR, ax_fn_or, "ax_fn_or"},
        {AS_FST, ax_fn_fst, "ax_fn_fst"}, {AS_SND, ax_fn_snd, "ax_fn_snd"},
    };
    memset(f, 0, sizeof *f);
    if (pct(g, 50))
        for (size_t i = 0; i < sizeof ready / sizeof *ready; i++)
            if (ready[i].kind == as->kind) {
                f->f = ready[i].f;
                f->name = ready[i].name;
                return;
            }
    lam_init(&f->lam, g, LK_ASSOC, 2, as->t);
    f->lam.pt[0] = f->lam.pt[1] = as->t;
    f->lam.as = as;
    f->f = cb2;
    f->env = &f->lam;
}

static const char *fn2_txt(const Fn2 *f) { return f->name ? f->name : ltxt(&f->lam); }
static double fn2_cost(const Fn2 *f) { return f->name ? 1 : f->lam.cost + 1; }

/* Float leaves made finite and small (|x| capped at 100, NaN and the
 * infinities become 100): a float sum then stays within a relative
 * tolerance whatever order a backend adds in. */
static Ex tame(G *g, Ex x)
{
    const GT *t = x.t;
    if (t_float(t)) {
        count(g, RP_E_MINMAX);
        count(g, RP_E_ARITH);
        return bin(g, "ax_min", ax_min, un(g, "ax_abs", ax_abs, x, t),
                   mkex(g, ax_constf(t->s, 100), t, sfmt(g, "100:%s", ax_scalar_name(t->s)), 0, 0), t);
    }
    if (t->kind != GK_TUPLE) return x;
    Ex c[3];
    for (int i = 0; i < t->n; i++) c[i] = tame(g, get_ex(g, x, i));
    return mk_tuple(g, t, c);
}

/* ---------------------------------------------------------------- scalar generation */

static bool arr_visible_ok(G *g, const Arr *a)
{
    return a->a && a->work <= ((double)g->cfg.max_work - g->work) / 2 &&
           a->unodes <= ((double)g->cfg.max_unfolded - g->unodes) / 2;
}

/* A pool array whose element is t (comp = -1) or a tuple with component
 * comp of type t. */
static Arr *pick_read_arr(G *g, const GT *t, int *comp)
{
    int cand[256], cc[256], n = 0;
    for (int i = 0; i < g->nap && n < 256; i++) {
        Arr *a = g->ap[i];
        if (!arr_visible_ok(g, a) || !can_read(g, a, a->rank + 2)) continue;
        if (gt_eq(a->elt, t)) cand[n] = i, cc[n++] = -1;
        else if (a->elt->kind == GK_TUPLE)
            for (int j = 0; j < a->elt->n && n < 256; j++)
                if (gt_eq(a->elt->el[j], t)) cand[n] = i, cc[n++] = j;
    }
    if (!n) return NULL;
    int k = rn(g, n);
    *comp = cc[k];
    return g->ap[cand[k]];
}

/* a's element at a clamped index (guarded if a may be empty). */
static Ex read_at(G *g, Arr *a, int d, bool linear)
{
    Ex rd;
    if (linear) {
        count(g, RP_E_ATLIN);
        Ex i = index_comp(g, d);
        i = clamp_ix(g, i, size_ex(g, a));
        rd = mkex(g, ax_at_linear(a->a, i.e), a->elt, sfmt(g, "ax_at_linear(%s, %s)", a->name, i.txt), i.cost + 1,
                  i.awork + a->work);
    } else {
        count(g, RP_E_AT);
        Ex c[AX_MAX_RANK];
        for (int k = 0; k < a->rank; k++) {
            Ex e = index_comp(g, d);
            c[k] = clamp_ix(g, e, ext_of(g, a, k));
        }
        Ex ix = mk_index(g, a->rank, c);
        rd = mkex(g, ax_at(a->a, ix.e), a->elt, sfmt(g, "ax_at(%s, %s)", a->name, ix.txt), ix.cost + 1,
                  ix.awork + a->work);
    }
    touch(g, a);
    if (may_empty(a)) {
        count(g, RP_E_CMP);
        Ex c = bin(g, "ax_gt", ax_gt, size_ex(g, a), ci64(g, 0), T_BOOL);
        rd = cond_ex(g, c, rd, const_ex(g, a->elt));
    }
    return rd;
}

/* Candidates of the scalar pool for a leaf of type t. */
enum { C_ENT, C_PROJ, C_PROJ2, C_IX, C_CONST, C_CTERM, C_CVT };
typedef struct Cand {
    int kind, idx, c1, c2, w;
} Cand;

static Ex gen_leaf(G *g, const GT *t)
{
    Cand cs[256];
    int n = 0, wsum = 0, nvars = 0;
    for (int i = g->nsp - 1; i >= 0 && n < 240; i--) {
        SEnt *s = &g->sp[i];
        const GT *st = s->x.t;
        if (!s->param && s->x.cost > 64) continue;
        int base = s->param ? (s->lvl == g->lvl ? 8 : 4) : 3;
        if (gt_eq(st, t)) {
            cs[n++] = (Cand){C_ENT, i, 0, 0, base};
            nvars++;
        } else if (st->kind == GK_TUPLE) {
            for (int j = 0; j < st->n && n < 240; j++) {
                if (gt_eq(st->el[j], t)) cs[n++] = (Cand){C_PROJ, i, j, 0, base}, nvars++;
                else if (st->el[j]->kind == GK_TUPLE)
                    for (int k = 0; k < st->el[j]->n && n < 240; k++)
                        if (gt_eq(st->el[j]->el[k], t)) cs[n++] = (Cand){C_PROJ2, i, j, k, base / 2 + 1}, nvars++;
            }
        } else if (st->kind == GK_INDEX && st->n > 0 && t->kind == GK_SCALAR && t->s == AX_I64) {
            cs[n++] = (Cand){C_IX, i, rn(g, st->n), 0, base};
            nvars++;
        } else if (st->kind == GK_SCALAR && t->kind == GK_SCALAR && s->param && s->lvl == g->lvl && ok(g, RP_E_CVT)) {
            cs[n++] = (Cand){C_CVT, i, 0, 0, 3};
        }
    }
    cs[n++] = (Cand){C_CONST, 0, 0, 0, nvars ? 3 * (nvars > 4 ? 4 : nvars) / 2 + 1 : 3};
    if (ok(g, RP_E_CONST) && t->kind == GK_SCALAR) cs[n++] = (Cand){C_CTERM, 0, 0, 0, 1};
    for (int i = 0; i < n; i++) wsum += cs[i].w;
    int r = rn(g, wsum), k = 0;
    while (r >= cs[k].w) r -= cs[k++].w;
    Cand c = cs[k];
    switch (c.kind) {
    case C_ENT: return use_ent(g, c.idx);
    case C_PROJ: return get_ex(g, use_ent(g, c.idx), c.c1);
    case C_PROJ2: return get_ex(g, get_ex(g, use_ent(g, c.idx), c.c1), c.c2);
    case C_IX: return get_ex(g, use_ent(g, c.idx), c.c1);
    case C_CVT: return cvt_ex(g, use_ent(g, c.idx), t->s);
    case C_CTERM: {
        count(g, RP_E_CONST);
        Ex x = const_ex(g, t);
        return mkex(g, ax_const(g->cx, x.e), t, sfmt(g, "ax_const(%s)", x.txt), 0, 0);
    }
    default: return const_ex(g, t);
    }
}

/* A scalar type that the pool has values of (or a random one). */
static const GT *pick_scalar_t(G *g)
{
    if (pct(g, 60)) {
        int cand[64], n = 0;
        for (int i = g->nsp - 1; i >= 0 && n < 64; i--)
            if (g->sp[i].x.t->kind == GK_SCALAR) cand[n++] = i;
        if (n) return g->sp[cand[rn(g, n)]].x.t;
    }
    return rand_scalar_t(g);
}

static const GT *flt_t(G *g) { return pct(g, 55) ? &GS[AX_F32] : &GS[AX_F64]; }
static const GT *int_t(G *g)
{
    static const ax_scalar s[] = {AX_I32, AX_I32, AX_I64, AX_I8, AX_I16, AX_U8, AX_U16, AX_U32, AX_U64};
    return &GS[s[rn(g, 9)]];
}

static Ex gen_while(G *g, const GT *t, int d)
{
    double u0 = g->unodes;
    count(g, RP_E_WHILE);
    LamPair lp;
    const GT *el[2] = {T_I32, t};
    const GT *st = mk_tuple_t(g, 2, el);
    lam_init(&lp.c, g, LK_WCOND, 1, T_BOOL);
    lam_init(&lp.b, g, LK_WBODY, 1, t);
    lp.c.pt[0] = lp.b.pt[0] = st;
    lp.c.K = rn(g, 5);
    lp.c.flag = pct(g, 25);
    lp.c.depth = lp.b.depth = d - 1;
    Ex c[2];
    c[0] = mkex(g, ax_const(g->cx, ax_i32(0)), T_I32, "ax_const(0:i32)", 0, 0);
    c[1] = gen_exp(g, t, d - 1);
    Ex init = mk_tuple(g, st, c);
    ax_exp w = ax_while(cbw_cond, cbw_body, &lp, init.e);
    Ex x = mkex(g, w, st, sfmt(g, "ax_while(%s, %s, %s)", ltxt(&lp.c), ltxt(&lp.b), init.txt),
                init.cost + (double)(lp.c.K + 1) * (lp.c.cost + lp.b.cost + 2),
                init.awork + lp.c.awork + lp.b.awork);
    x.un = g->unodes - u0;
    if (ok(g, g->lvl ? RP_SHARE_EXP : RP_SHARE_CLOSED) && pct(g, 30)) x = name_it(g, x);
    if (gt_eq(t, T_I32) && pct(g, 20)) return get_ex(g, x, 0);
    return get_ex(g, x, 1);
}

/* Integer division guarded against a zero divisor, in one of two ways:
 * op(a, d == 0 ? 1 : d), or d == 0 ? a : op(a, d) (the division then sits
 * in a branch that sharing recovery must not hoist out). */
static Ex int_div(G *g, const GT *t, int d)
{
    static const char *const nm[5] = {"ax_quot", "ax_rem", "ax_idiv", "ax_mod", "ax_div"};
    static const Bin fn[5] = {ax_quot, ax_rem, ax_idiv, ax_mod, ax_div};
    int o = rn(g, 5);
    count(g, RP_E_INTDIV);
    Ex a = gen_exp(g, t, d - 1), dv = gen_exp(g, t, d - 1);
    if (ok(g, g->lvl ? RP_SHARE_EXP : RP_SHARE_CLOSED)) dv = name_it(g, dv);
    int form = rn(g, 3);
    if (!ax_exp_ctx(dv.e)) form = 0;   /* a constant divisor: the guard folds away */
    if (form == 2 && g->cfg.faults && ax_exp_ctx(dv.e)) return bin(g, nm[o], fn[o], a, dv, t);
    count(g, RP_E_CMP);
    Ex z = bin(g, "ax_eq", ax_eq, dv, cint(g, t->s, 0), T_BOOL);
    if (form == 1) return cond_ex(g, z, a, bin(g, nm[o], fn[o], a, dv, t));
    return bin(g, nm[o], fn[o], a, cond_ex(g, z, cint(g, t->s, 1), dv), t);
}

enum {
    K_ARITH, K_MINMAX, K_INTDIV, K_FLOATDIV, K_BITS, K_FLOATFN, K_ROUND, K_CMP, K_LOGIC, K_CVT,
    K_BITCAST, K_COND, K_PROJ, K_AT, K_ATLIN, K_SHAPE, K_SIZE, K_WHILE, K_DUP, K_NKIND
};

static Ex gen_scalar(G *g, const GT *t, int d)
{
    ax_scalar s = t->s;
    int w[K_NKIND] = {0};
    int rop[K_NKIND] = {RP_E_ARITH, RP_E_MINMAX, RP_E_INTDIV, RP_E_FLOATDIV, RP_E_BITS, RP_E_FLOATFN, RP_E_ROUND,
                        RP_E_CMP, RP_E_LOGIC, RP_E_CVT, RP_E_BITCAST, RP_E_COND, RP_E_PROJ, RP_E_AT,
                        RP_E_ATLIN, RP_E_SHAPE, RP_E_SIZE, RP_E_WHILE, RP_SHARE_EXP};
    rop[K_DUP] = g->lvl ? RP_SHARE_EXP : RP_SHARE_CLOSED;
    if (s_num(s)) {
        w[K_ARITH] = 6, w[K_MINMAX] = 2, w[K_ROUND] = 1, w[K_BITCAST] = 1;
        if (s_int(s)) w[K_INTDIV] = 2, w[K_BITS] = 3;
        else w[K_FLOATDIV] = 1, w[K_FLOATFN] = 3;
    } else {
        w[K_CMP] = 6, w[K_LOGIC] = 3;
    }
    w[K_CVT] = 3, w[K_COND] = 3, w[K_PROJ] = 1, w[K_AT] = 2, w[K_ATLIN] = 1, w[K_WHILE] = 1, w[K_DUP] = 2;
    if (s == AX_I64) w[K_SHAPE] = 2, w[K_SIZE] = 1;
    int wsum = 0;
    for (int k = 0; k < K_NKIND; k++) {
        if (!ok(g, rop[k])) w[k] = 0;
        wsum += w[k];
    }
    if (!wsum) return gen_leaf(g, t);
    int r = rn(g, wsum), kind = 0;
    while (r >= w[kind]) r -= w[kind++];

    switch (kind) {
    case K_ARITH: {
        static const char *const nm[6] = {"ax_add", "ax_sub", "ax_mul", "ax_neg", "ax_abs", "ax_signum"};
        int o = rn(g, 6);
        count(g, RP_E_ARITH);
        if (o < 3) {
            static const Bin fn[3] = {ax_add, ax_sub, ax_mul};
            Ex a = gen_exp(g, t, d - 1);
            return bin(g, nm[o], fn[o], a, gen_exp(g, t, d - 1), t);
        }
        static const Un fu[3] = {ax_neg, ax_abs, ax_signum};
        return un(g, nm[o], fu[o - 3], gen_exp(g, t, d - 1), t);
    }
    case K_MINMAX: {
        count(g, RP_E_MINMAX);
        Ex a = gen_exp(g, t, d - 1);
        return pct(g, 50) ? bin(g, "ax_min", ax_min, a, gen_exp(g, t, d - 1), t)
                          : bin(g, "ax_max", ax_max, a, gen_exp(g, t, d - 1), t);
    }
    case K_INTDIV: return int_div(g, t, d);
    case K_FLOATDIV: {
        count(g, RP_E_FLOATDIV);
        Ex a = gen_exp(g, t, d - 1);
        return bin(g, "ax_div", ax_div, a, gen_exp(g, t, d - 1), t);
    }
    case K_BITS: {
        count(g, RP_E_BITS);
        int o = rn(g, 11);
        if (o < 3) {
            static const char *const nm[3] = {"ax_band", "ax_bor", "ax_bxor"};
            static const Bin fn[3] = {ax_band, ax_bor, ax_bxor};
            Ex a = gen_exp(g, t, d - 1);
            return bin(g, nm[o], fn[o], a, gen_exp(g, t, d - 1), t);
        }
        if (o < 7) {
            static const char *const nm[4] = {"ax_shl", "ax_shr", "ax_rotl", "ax_rotr"};
            static const Bin fn[4] = {ax_shl, ax_shr, ax_rotl, ax_rotr};
            Ex a = gen_exp(g, t, d - 1);
            const GT *nt = int_t(g);
            Ex n = pct(g, 60) ? cint(g, nt->s, rr(g, -2, (int64_t)ax_scalar_size(s) * 8 + 2)) : gen_exp(g, nt, d - 1);
            return bin(g, nm[o - 3], fn[o - 3], a, n, t);
        }
        if (o == 7) return un(g, "ax_bnot", ax_bnot, gen_exp(g, t, d - 1), t);
        static const char *const nm[3] = {"ax_popcount", "ax_clz", "ax_ctz"};
        static const Un fu[3] = {ax_popcount, ax_clz, ax_ctz};
        const GT *at = int_t(g);
        Ex x = un(g, nm[o - 8], fu[o - 8], gen_exp(g, at, d - 1), T_I32);
        return s == AX_I32 ? x : cvt_ex(g, x, s);
    }
    case K_FLOATFN: {
        count(g, RP_E_FLOATFN);
        int o = rn(g, 18);
        if (o < 15) {
            static const char *const nm[15] = {"ax_exp_", "ax_log", "ax_sqrt", "ax_sin", "ax_cos", "ax_tan",
                                               "ax_asin", "ax_acos", "ax_atan", "ax_sinh", "ax_cosh", "ax_tanh",
                                               "ax_asinh", "ax_acosh", "ax_atanh"};
            static const Un fu[15] = {ax_exp_, ax_log, ax_sqrt, ax_sin, ax_cos, ax_tan, ax_asin, ax_acos,
                                      ax_atan, ax_sinh, ax_cosh, ax_tanh, ax_asinh, ax_acosh, ax_atanh};
            return un(g, nm[o], fu[o], gen_exp(g, t, d - 1), t);
        }
        static const char *const nm[3] = {"ax_pow", "ax_logbase", "ax_atan2"};
        static const Bin fn[3] = {ax_pow, ax_logbase, ax_atan2};
        Ex a = gen_exp(g, t, d - 1);
        return bin(g, nm[o - 15], fn[o - 15], a, gen_exp(g, t, d - 1), t);
    }
    case K_ROUND: {
        count(g, RP_E_ROUND);
        static const char *const nm[4] = {"ax_floor", "ax_ceiling", "ax_round", "ax_truncate"};
        static ax_exp (*const fr[4])(ax_exp, ax_scalar) = {ax_floor, ax_ceiling, ax_round, ax_truncate};
        int o = rn(g, 4);
        Ex a = gen_exp(g, flt_t(g), d - 1);
        return mkex(g, fr[o](a.e, s), t, sfmt(g, "%s(%s, %s)", nm[o], a.txt, ax_scalar_name(s)), a.cost + 1, a.awork);
    }
    case K_CMP: {
        count(g, RP_E_CMP);
        if (pct(g, 15)) {
            Ex a = gen_exp(g, flt_t(g), d - 1);
            return pct(g, 50) ? un(g, "ax_is_nan", ax_is_nan, a, t) : un(g, "ax_is_infinite", ax_is_infinite, a, t);
        }
        static const char *const nm[6] = {"ax_eq", "ax_ne", "ax_lt", "ax_le", "ax_gt", "ax_ge"};
        static const Bin fn[6] = {ax_eq, ax_ne, ax_lt, ax_le, ax_gt, ax_ge};
        int o = rn(g, 6);
        const GT *at = pick_scalar_t(g);
        Ex a = gen_exp(g, at, d - 1);
        return bin(g, nm[o], fn[o], a, gen_exp(g, at, d - 1), t);
    }
    case K_LOGIC: {
        count(g, RP_E_LOGIC);
        int o = rn(g, 5);
        Ex a = gen_exp(g, t, d - 1);
        if (o == 4) return un(g, "ax_not", ax_not, a, t);
        return o < 2 ? bin(g, "ax_and", ax_and, a, gen_exp(g, t, d - 1), t)
                     : bin(g, "ax_or", ax_or, a, gen_exp(g, t, d - 1), t);
    }
    case K_CVT: {
        const GT *from = pick_scalar_t(g);
        return cvt_ex(g, gen_exp(g, from, d - 1), s);
    }
    case K_BITCAST: {
        count(g, RP_E_BITCAST);
        ax_scalar from = bitcast_partner(g, s);
        Ex a = gen_exp(g, &GS[from], d - 1);
        return mkex(g, ax_bitcast(a.e, s), t, sfmt(g, "ax_bitcast(%s, %s)", a.txt, ax_scalar_name(s)), a.cost + 1,
                    a.awork);
    }
    case K_COND: {
        Ex c = gen_exp(g, T_BOOL, d - 1);
        Ex a = gen_exp(g, t, d - 1);
        return cond_ex(g, c, a, gen_exp(g, t, d - 1));
    }
    case K_PROJ: {
        const GT *el[2];
        int i = rn(g, 2);
        el[i] = t;
        el[1 - i] = rand_scalar_t(g);
        return get_ex(g, gen_exp(g, mk_tuple_t(g, 2, el), d - 1), i);
    }
    case K_AT:
    case K_ATLIN: {
        int comp;
        Arr *a = pick_read_arr(g, t, &comp);
        if (!a) return gen_leaf(g, t);
        Ex x = read_at(g, a, d - 1, kind == K_ATLIN);
        return comp < 0 ? x : get_ex(g, x, comp);
    }
    case K_SHAPE: {
        /* Shape arithmetic on a pool array's shape or an index parameter. */
        int cand[256], n = 0;
        for (int i = 0; i < g->nap && n < 256; i++)
            if (g->ap[i]->rank > 0 && arr_visible_ok(g, g->ap[i])) cand[n++] = i;
        if (!n) return gen_leaf(g, t);
        Arr *a = g->ap[cand[rn(g, n)]];
        Ex sh = shape_ex(g, a);
        switch (rn(g, 4)) {
        case 0: return get_ex(g, sh, rn(g, a->rank));
        case 1: return un(g, "ax_shape_size", ax_shape_size, sh, T_I64);
        case 2: {
            Ex c[AX_MAX_RANK];
            for (int k = 0; k < a->rank; k++) c[k] = index_comp(g, d - 1);
            Ex ix = mk_index(g, a->rank, c);
            return bin(g, "ax_to_linear", ax_to_linear, sh, ix, T_I64);
        }
        default: {
            Ex i = index_comp(g, d - 1);
            Ex ix = mkex(g, ax_from_linear(sh.e, i.e), &GI[a->rank], sfmt(g, "ax_from_linear(%s, %s)", sh.txt, i.txt),
                         sh.cost + i.cost + 1, sh.awork + i.awork);
            return get_ex(g, ix, rn(g, a->rank));
        }
        }
    }
    case K_SIZE: {
        int cand[256], n = 0;
        for (int i = 0; i < g->nap && n < 256; i++)
            if (arr_visible_ok(g, g->ap[i])) cand[n++] = i;
        if (!n) return gen_leaf(g, t);
        Arr *a = g->ap[cand[rn(g, n)]];
        count(g, RP_E_SIZE);
        touch(g, a);
        return mkex(g, ax_size(a->a), T_I64, sfmt(g, "ax_size(%s)", a->name), 2, a->work);
    }
    case K_WHILE: return gen_while(g, t, d);
    case K_DUP: {
        /* One term used twice. */
        Ex a = name_it(g, gen_exp(g, t, d - 1));
        if (ax_exp_ctx(a.e)) count(g, g->lvl ? RP_SHARE_EXP : RP_SHARE_CLOSED);
        if (s == AX_BOOL) {
            count(g, RP_E_CMP);
            return pct(g, 50) ? bin(g, "ax_ne", ax_ne, a, a, t) : bin(g, "ax_eq", ax_eq, a, a, t);
        }
        count(g, RP_E_ARITH);
        switch (rn(g, 3)) {
        case 0: return bin(g, "ax_add", ax_add, a, a, t);
        case 1: return bin(g, "ax_mul", ax_mul, a, a, t);
        default: return bin(g, "ax_sub", ax_sub, a, bin(g, "ax_mul", ax_mul, a, gen_exp(g, t, d - 1), t), t);
        }
    }
    }
    return gen_leaf(g, t);
}

static Ex gen_tuple_exp(G *g, const GT *t, int d)
{
    int r = rn(g, 100);
    if (r < 55) {
        Ex c[3];
        for (int i = 0; i < t->n; i++) c[i] = gen_exp(g, t->el[i], d - 1);
        return mk_tuple(g, t, c);
    }
    if (r < 70) return gen_leaf(g, t);
    if (r < 82 && ok(g, RP_E_COND)) {
        Ex c = gen_exp(g, T_BOOL, d - 1);
        Ex a = gen_exp(g, t, d - 1);
        return cond_ex(g, c, a, gen_exp(g, t, d - 1));
    }
    if (r < 92 && ok(g, RP_E_AT)) {
        int comp;
        Arr *a = pick_read_arr(g, t, &comp);
        if (a) {
            Ex x = read_at(g, a, d - 1, pct(g, 30) && ok(g, RP_E_ATLIN));
            return comp < 0 ? x : get_ex(g, x, comp);
        }
    }
    if (ok(g, RP_E_WHILE)) return gen_while(g, t, d);
    return gen_leaf(g, t);
}

/* An index value (the element of an array of indices). */
static Ex gen_index_exp(G *g, const GT *t, int d)
{
    int r = rn(g, 100);
    if (r < 50) {
        Ex c[AX_MAX_RANK];
        for (int k = 0; k < t->n; k++) c[k] = index_comp(g, d - 1);
        return mk_index(g, t->n, c);
    }
    if (r < 65) return gen_leaf(g, t);
    if (r < 78 && ok(g, RP_E_COND)) {
        Ex c = gen_exp(g, T_BOOL, d - 1);
        Ex a = gen_exp(g, t, d - 1);
        return cond_ex(g, c, a, gen_exp(g, t, d - 1));
    }
    if (r < 90 && ok(g, RP_E_AT)) {
        int comp;
        Arr *a = pick_read_arr(g, t, &comp);
        if (a) {
            Ex x = read_at(g, a, d - 1, false);
            return comp < 0 ? x : get_ex(g, x, comp);
        }
    }
    int cand[256], n = 0;
    for (int i = 0; i < g->nap && n < 256; i++)
        if (g->ap[i]->rank == t->n && arr_visible_ok(g, g->ap[i])) cand[n++] = i;
    if (!n || !ok(g, RP_E_SHAPE)) return gen_leaf(g, t);
    Arr *a = g->ap[cand[rn(g, n)]];
    Ex sh = shape_ex(g, a);
    if (pct(g, 30)) return sh;
    Ex i = index_comp(g, d - 1);
    return mkex(g, ax_from_linear(sh.e, i.e), t, sfmt(g, "ax_from_linear(%s, %s)", sh.txt, i.txt), sh.cost + i.cost + 1,
                sh.awork + i.awork);
}

static Ex gen_exp(G *g, const GT *t, int d)
{
    if (g->bad) return const_ex(g, t);
    if (d <= 0 || over_budget(g) || pct(g, 20)) return gen_leaf(g, t);
    double u0 = g->unodes;
    Ex x;
    if (t->kind == GK_TUPLE) x = gen_tuple_exp(g, t, d);
    else if (t->kind == GK_INDEX) x = gen_index_exp(g, t, d);
    else x = gen_scalar(g, t, d);
    x.un = g->unodes - u0;
    return maybe_share(g, x);
}

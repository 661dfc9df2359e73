/*
 * Scalar terms of the generator: terms with their type, text and cost,
 * constants, the scalar pool (lambda parameters and shared terms), arrays
 * as seen from scalar code (ax_at, ax_shape, ax_size), and the lambdas:
 * the C callbacks whose env is a Lam, which push their parameters into the
 * pool and generate the body.
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

/* ============================================================ expressions */

static Ex mkex(G *g, ax_exp e, const GT *t, const char *txt, double cost, double awork)
{
    Ex x;
    x.e = e;
    x.t = t;
    x.txt = txt;
    x.cost = cost;
    x.awork = awork;
    x.un = 0;
    g->unodes += 1;
    if (!ax_exp_ok(e)) bad(g, "building %s gave an invalid expression: %s", txt, ax_error(g->cx));
    return x;
}

typedef ax_exp (*Un)(ax_exp);
typedef ax_exp (*Bin)(ax_exp, ax_exp);

static Ex un(G *g, const char *name, Un f, Ex a, const GT *t)
{
    return mkex(g, f(a.e), t, sfmt(g, "%s(%s)", name, a.txt), a.cost + 1, a.awork);
}

static Ex bin(G *g, const char *name, Bin f, Ex a, Ex b, const GT *t)
{
    return mkex(g, f(a.e, b.e), t, sfmt(g, "%s(%s, %s)", name, a.txt, b.txt), a.cost + b.cost + 1,
                a.awork + b.awork);
}

static Ex cond_ex(G *g, Ex c, Ex a, Ex b)
{
    count(g, RP_E_COND);
    return mkex(g, ax_cond(c.e, a.e, b.e), a.t, sfmt(g, "ax_cond(%s, %s, %s)", c.txt, a.txt, b.txt),
                c.cost + (a.cost > b.cost ? a.cost : b.cost) + 1, c.awork + a.awork + b.awork);
}

static Ex get_ex(G *g, Ex t, int i)
{
    count(g, RP_E_PROJ);
    const GT *ct = t.t->kind == GK_INDEX ? T_I64 : t.t->el[i];
    if (t.t->kind == GK_INDEX)
        return mkex(g, ax_index_get(t.e, i), ct, sfmt(g, "ax_index_get(%s, %d)", t.txt, i), t.cost + 1, t.awork);
    return mkex(g, ax_get(t.e, i), ct, sfmt(g, "ax_get(%s, %d)", t.txt, i), t.cost + 1, t.awork);
}

static Ex cvt_ex(G *g, Ex a, ax_scalar to)
{
    count(g, RP_E_CVT);
    return mkex(g, ax_cvt(a.e, to), &GS[to], sfmt(g, "ax_cvt(%s, %s)", a.txt, ax_scalar_name(to)), a.cost + 1,
                a.awork);
}

static Ex ci64(G *g, int64_t v) { return mkex(g, ax_i64(v), T_I64, sfmt(g, "%" PRId64, v), 0, 0); }
static Ex cint(G *g, ax_scalar s, int64_t v)
{
    return mkex(g, ax_consti(s, v), &GS[s], sfmt(g, "%" PRId64 ":%s", v, ax_scalar_name(s)), 0, 0);
}

/* A tuple of components (a nested constant tuple is made a term first: a
 * constant tuple cannot hold another one). */
static Ex mk_tuple(G *g, const GT *t, const Ex *c)
{
    ax_exp es[3];
    Buf b = {0};
    double cost = 1, aw = 0;
    for (int i = 0; i < t->n; i++) {
        es[i] = c[i].e;
        if (c[i].t->kind != GK_SCALAR && !ax_exp_ctx(c[i].e)) es[i] = ax_const(g->cx, c[i].e);
        buf_add(&b, "%s%s", i ? ", " : "", c[i].txt);
        cost += c[i].cost;
        aw += c[i].awork;
    }
    count(g, RP_E_TUPLE);
    ax_exp e = t->n == 2 ? ax_tuple2(es[0], es[1]) : t->n == 3 ? ax_tuple3(es[0], es[1], es[2]) : ax_tuple(t->n, es);
    Ex x = mkex(g, e, t, sfmt(g, "ax_tuple(%s)", b.s ? b.s : ""), cost, aw);
    free(b.s);
    return x;
}

static Ex mk_index(G *g, int r, const Ex *c)
{
    ax_exp es[AX_MAX_RANK];
    Buf b = {0};
    double cost = 1, aw = 0;
    for (int i = 0; i < r; i++) {
        es[i] = c[i].e;
        buf_add(&b, "%s%s", i ? ", " : "", c[i].txt);
        cost += c[i].cost;
        aw += c[i].awork;
    }
    Ex x = mkex(g, ax_index(r, es), &GI[r], sfmt(g, "ax_index(%s)", b.s ? b.s : ""), cost, aw);
    free(b.s);
    return x;
}

/* ---------------------------------------------------------------- constants */

static int64_t smin(ax_scalar s)
{
    switch (s) {
    case AX_I8: return INT8_MIN;
    case AX_I16: return INT16_MIN;
    case AX_I32: return INT32_MIN;
    case AX_I64: return INT64_MIN;
    default: return 0;
    }
}

static int64_t smax(ax_scalar s)
{
    switch (s) {
    case AX_I8: return INT8_MAX;
    case AX_I16: return INT16_MAX;
    case AX_I32: return INT32_MAX;
    case AX_I64: return INT64_MAX;
    case AX_U8: return UINT8_MAX;
    case AX_U16: return UINT16_MAX;
    case AX_U32: return UINT32_MAX;
    case AX_U64: return -1;   /* all ones */
    default: return 1;
    }
}

static int64_t rand_int_val(G *g, ax_scalar s)
{
    int r = rn(g, 100);
    if (r < 70) return s_sint(s) ? rr(g, -9, 9) : rr(g, 0, 18);
    if (r < 88) return s_sint(s) ? rr(g, -1000, 1000) : rr(g, 0, 2000);
    switch (rn(g, 5)) {
    case 0: return smin(s);
    case 1: return smax(s);
    case 2: return 0;
    case 3: return -1;
    default: return 1;
    }
}

static double rand_float_val(G *g)
{
    int r = rn(g, 100);
    if (r < 72) return (double)rr(g, -40, 40) / 4.0;
    if (r < 88) return (double)rr(g, -1000000, 1000000) / 1000.0;
    if (r < 94 || !g->cfg.special_floats) {
        static const double big[] = {1e20, -1e20, 1e-20, 3.0e38, 0.1, -7.5e-3};
        return big[rn(g, 6)];
    }
    static const double special[] = {NAN, INFINITY, -INFINITY, -0.0, 1e-40};
    return special[rn(g, 5)];
}

static const char *fstr(G *g, double v)
{
    if (isnan(v)) return "nan";
    if (isinf(v)) return v > 0 ? "inf" : "-inf";
    return sfmt(g, "%.17g", v);
}

static Ex const_ex(G *g, const GT *t)
{
    if (t->kind == GK_SCALAR) {
        ax_scalar s = t->s;
        if (s == AX_BOOL) {
            bool b = rn(g, 2);
            return mkex(g, ax_bool(b), t, b ? "true" : "false", 0, 0);
        }
        if (s_float(s)) {
            double v = rand_float_val(g);
            return mkex(g, ax_constf(s, v), t, sfmt(g, "%s:%s", fstr(g, v), ax_scalar_name(s)), 0, 0);
        }
        return cint(g, s, rand_int_val(g, s));
    }
    if (t->kind == GK_INDEX) {
        Ex c[AX_MAX_RANK];
        for (int i = 0; i < t->n; i++) c[i] = ci64(g, rand_int_val(g, AX_I64));
        return mk_index(g, t->n, c);
    }
    Ex c[3];
    for (int i = 0; i < t->n; i++) c[i] = const_ex(g, t->el[i]);
    return mk_tuple(g, t, c);
}

/* ---------------------------------------------------------------- pool */

static void sp_push(G *g, Ex x, bool param)
{
    GROW(g->sp, g->nsp, g->capsp);
    SEnt *s = &g->sp[g->nsp++];
    s->x = x;
    s->lvl = g->lvl;
    s->uses = 1;
    s->param = param;
}

/* Gives x a name (a shared scalar term): later expressions may use it. */
static Ex name_it(G *g, Ex x)
{
    if (!ax_exp_ctx(x.e)) return x;   /* a constant: nothing to share */
    if (!strchr(x.txt, '(')) return x;   /* a variable or a name already */
    const char *nm = g->lvl ? sfmt(g, "e%d", ++g->nexp) : sfmt(g, "c%d", ++g->nclosed);
    emit(g, "%s = %s", nm, x.txt);
    x.txt = nm;
    sp_push(g, x, false);
    return x;
}

static Ex maybe_share(G *g, Ex x)
{
    int op = g->lvl ? RP_SHARE_EXP : RP_SHARE_CLOSED;
    if (!ok(g, op) || !pct(g, g->cfg.share_pct / 2)) return x;
    return name_it(g, x);
}

/* Using pool entry i once more. */
static Ex use_ent(G *g, int i)
{
    SEnt *s = &g->sp[i];
    if (!s->param) {
        if (s->uses >= 1) count(g, s->lvl ? RP_SHARE_EXP : RP_SHARE_CLOSED);
        s->uses++;
        g->work += s->x.awork;
        g->unodes += s->x.un > 0 ? s->x.un : s->x.cost;
    }
    return s->x;
}

static bool over_budget(G *g)
{
    return g->work > (double)g->cfg.max_work || g->unodes > (double)g->cfg.max_unfolded;
}

/* ---------------------------------------------------------------- arrays as seen from scalar code */

static bool may_empty(const Arr *a)
{
    for (int k = 0; k < a->rank; k++)
        if (a->lo[k] == 0) return true;
    return false;
}

static bool all_ne(const Arr *a) { return !may_empty(a); }

static double sz_hi(const Arr *a)
{
    double s = 1;
    for (int k = 0; k < a->rank; k++) s *= (double)a->hi[k];
    return s;
}

static double sz_lo(const Arr *a)
{
    double s = 1;
    for (int k = 0; k < a->rank; k++) s *= (double)a->lo[k];
    return s;
}

static bool exact(const Arr *a)
{
    for (int k = 0; k < a->rank; k++)
        if (a->lo[k] != a->hi[k]) return false;
    return true;
}

/* Scalar code reads a: without sharing, every read copies a's term. */
static void touch(G *g, const Arr *a)
{
    g->work += a->work;
    g->unodes += a->unodes;
}

/* Whether scalar code may read a's shape or elements `times` times more
 * (each read copies a's term when sharing is off); reads of shapes known
 * exactly are folded to constants by ext_of and size_ex. */
static bool can_read(G *g, const Arr *a, int times)
{
    if (exact(a)) return true;
    return a->unodes * times <= (double)g->cfg.max_unfolded - g->unodes;
}

static Ex shape_ex(G *g, Arr *a)
{
    count(g, RP_E_SHAPE);
    touch(g, a);
    return mkex(g, ax_shape(a->a), &GI[a->rank], sfmt(g, "ax_shape(%s)", a->name), 1, a->work);
}

/* Extent k of a: a constant when known exactly (sometimes), else read. */
static Ex ext_of(G *g, Arr *a, int k)
{
    /* (reading the shape copies a's whole term when sharing is off: big
     * terms are read only when their shape is not known) */
    if (a->lo[k] == a->hi[k] && (a->unodes > 40 || pct(g, 40))) return ci64(g, a->lo[k]);
    Ex sh = shape_ex(g, a);
    return get_ex(g, sh, k);
}

static Ex size_ex(G *g, Arr *a)
{
    if (exact(a) && (a->unodes > 40 || pct(g, 30))) return ci64(g, (int64_t)sz_lo(a));
    count(g, RP_E_SIZE);
    touch(g, a);
    return mkex(g, ax_size(a->a), T_I64, sfmt(g, "ax_size(%s)", a->name), 2, a->work);
}

/* max(0, min(e, n - 1)): an index into an extent n >= 1. */
static Ex clamp_ix(G *g, Ex e, Ex n)
{
    count(g, RP_E_MINMAX);
    Ex top = bin(g, "ax_sub", ax_sub, n, ci64(g, 1), T_I64);
    return bin(g, "ax_max", ax_max, ci64(g, 0), bin(g, "ax_min", ax_min, e, top, T_I64), T_I64);
}

/* ---------------------------------------------------------------- lambdas */

enum {
    LK_GEN, LK_STENCIL, LK_ASSOC, LK_BP_SAME, LK_BP_TRANS, LK_BP_GATHER, LK_PERM_INJ, LK_PERM_HIST,
    LK_SEGS, LK_TAME, LK_INC, LK_LT_K, LK_AND, LK_WCOND, LK_WBODY
};

typedef struct Assoc {
    int kind;
    const GT *t;
    struct Assoc *sub[3];
} Assoc;

typedef struct Lam {
    G *g;
    int kind;
    int np;
    const GT **pt;
    const GT *ret;
    int depth;
    const char *txt;
    bool called;
    double cost, awork;
    /* kind-specific */
    Arr *a, *b;
    int rank, mode[AX_MAX_RANK], perm[AX_MAX_RANK];
    int64_t k[AX_MAX_RANK];
    const Assoc *as;
    int64_t K;
    ax_scalar ct;
    int nsten;      /* LK_STENCIL: parameters of the first input */
    bool flag;
} Lam;

static void lam_init(Lam *l, G *g, int kind, int np, const GT *ret)
{
    memset(l, 0, sizeof *l);
    l->g = g;
    l->kind = kind;
    l->np = np;
    l->pt = galloc(g, sizeof *l->pt * (size_t)(np ? np : 1));
    l->ret = ret;
    l->depth = g->cfg.max_exp_depth;
}

static const char *ltxt(const Lam *l) { return l->txt ? l->txt : "<callback not called>"; }

static Ex gen_exp(G *g, const GT *t, int d);
static Ex gen_leaf(G *g, const GT *t);
static Arr *gen_arr(G *g, const GT *elt, int rank, int d, int fl, int64_t cap);
static Arr *replicate_new(G *g, const GT *elt, int rank, int d, int fl, int64_t cap, int only, int64_t maxext);
static Ex assoc_apply(G *g, const Assoc *as, Ex x, Ex y);
static Ex tame(G *g, Ex x);

/* An index component computed from the scalar pool (an index parameter
 * mostly): ix_j + c, ix_j * c, or any i64 expression. */
static Ex index_comp(G *g, int d)
{
    int cand[64], nc = 0;
    for (int i = g->nsp - 1; i >= 0 && nc < 64; i--)
        if (g->sp[i].x.t->kind == GK_INDEX && g->sp[i].x.t->n > 0 && g->sp[i].lvl == g->lvl) cand[nc++] = i;
    if (nc && pct(g, 60)) {
        Ex ix = use_ent(g, cand[rn(g, nc)]);
        Ex c = get_ex(g, ix, rn(g, ix.t->n));
        count(g, RP_E_ARITH);
        switch (rn(g, 4)) {
        case 0: return c;
        case 1: return bin(g, "ax_add", ax_add, c, ci64(g, rr(g, -3, 3)), T_I64);
        case 2: return bin(g, "ax_mul", ax_mul, c, ci64(g, rr(g, -2, 3)), T_I64);
        default: return bin(g, "ax_sub", ax_sub, ci64(g, rr(g, 0, 9)), c, T_I64);
        }
    }
    return gen_exp(g, T_I64, d);
}

/* The body of each kind of lambda; ps are its parameters. */
static Ex lam_body(G *g, Lam *l, Ex *ps)
{
    switch (l->kind) {
    case LK_GEN: {
        /* a body that ignores its parameters tests little: retry a
         * constant body (twice at most) */
        Ex x = gen_exp(g, l->ret, l->depth);
        for (int i = 0; i < 2 && l->np > 0 && !ax_exp_ctx(x.e) && pct(g, 80); i++) x = gen_exp(g, l->ret, l->depth);
        return x;
    }

    case LK_STENCIL: {
        /* Sometimes a reduction of the whole neighbourhood (as stencil
         * code usually is), then a random function of it. */
        const GT *et = ps[0].t;
        if (t_num(et) && l->nsten > 1 && pct(g, 45)) {
            static const char *const nm[3] = {"ax_add", "ax_min", "ax_max"};
            static const Bin fn[3] = {ax_add, ax_min, ax_max};
            int o = rn(g, 3);
            count(g, o ? RP_E_MINMAX : RP_E_ARITH);
            Ex acc = ps[0];
            for (int i = 1; i < l->nsten; i++) acc = bin(g, nm[o], fn[o], acc, ps[i], et);
            if (gt_eq(et, l->ret) && pct(g, 50)) return acc;
            name_it(g, acc);
        }
        return gen_exp(g, l->ret, l->depth);
    }

    case LK_ASSOC:
        return assoc_apply(g, l->as, ps[0], ps[1]);

    case LK_BP_SAME: {
        /* Per dimension: identity, reverse, shift with clamping, or shift
         * modulo the extent (the result has the source's shape, so every
         * extent read here is at least 1). */
        Ex c[AX_MAX_RANK];
        for (int k = 0; k < l->rank; k++) {
            Ex i = get_ex(g, ps[0], k);
            switch (l->mode[k]) {
            case 0: c[k] = i; break;
            case 1:
                count(g, RP_E_ARITH);
                c[k] = bin(g, "ax_sub", ax_sub, bin(g, "ax_sub", ax_sub, ext_of(g, l->a, k), ci64(g, 1), T_I64), i,
                           T_I64);
                break;
            case 2:
                count(g, RP_E_ARITH);
                c[k] = clamp_ix(g, bin(g, "ax_add", ax_add, i, ci64(g, l->k[k]), T_I64), ext_of(g, l->a, k));
                break;
            default:
                count(g, RP_E_INTDIV);
                c[k] = bin(g, "ax_mod", ax_mod, bin(g, "ax_add", ax_add, i, ci64(g, l->k[k]), T_I64),
                           ext_of(g, l->a, k), T_I64);
                break;
            }
        }
        return mk_index(g, l->rank, c);
    }

    case LK_BP_TRANS: {
        Ex c[AX_MAX_RANK];
        for (int k = 0; k < l->rank; k++) c[l->perm[k]] = get_ex(g, ps[0], k);
        return mk_index(g, l->rank, c);
    }

    case LK_BP_GATHER: {
        Ex c[AX_MAX_RANK];
        for (int k = 0; k < l->a->rank; k++) {
            Ex e = index_comp(g, l->depth);
            c[k] = clamp_ix(g, e, ext_of(g, l->a, k));
        }
        return mk_index(g, l->a->rank, c);
    }

    case LK_PERM_INJ: {
        /* Identity or reverse per dimension within the source's extents;
         * targets outside the defaults' extents are dropped. */
        Arr *s = l->a, *dd = l->b;
        Ex c[AX_MAX_RANK];
        Ex inb = mkex(g, ax_bool(true), T_BOOL, "true", 0, 0);
        for (int k = 0; k < s->rank; k++) {
            Ex i = get_ex(g, ps[0], k);
            if (l->mode[k]) {
                count(g, RP_E_ARITH);
                i = bin(g, "ax_sub", ax_sub, bin(g, "ax_sub", ax_sub, ext_of(g, s, k), ci64(g, 1), T_I64), i, T_I64);
            }
            c[k] = i;
            if (dd->lo[k] < s->hi[k]) {
                count(g, RP_E_CMP);
                count(g, RP_E_LOGIC);
                inb = bin(g, "ax_and", ax_and, inb, bin(g, "ax_lt", ax_lt, i, ext_of(g, dd, k), T_BOOL), T_BOOL);
            }
        }
        Ex ix = mk_index(g, s->rank, c);
        if (s->rank == 0 || !ax_exp_ctx(inb.e)) return ix;
        Ex ign = mkex(g, ax_ignore(s->rank), &GI[s->rank], sfmt(g, "ax_ignore(%d)", s->rank), 0, 0);
        return cond_ex(g, inb, ix, ign);
    }

    case LK_PERM_HIST: {
        /* Computed targets, clamped into the defaults; at times a row of
         * the source to one row of the result (k-means' sums: the last
         * component the source's own, where its extent fits), which the
         * C generator tests once per row */
        Arr *dd = l->b, *s = l->a;
        Ex c[AX_MAX_RANK];
        int own = -1;
        if (s && s->rank >= 1 && dd->rank >= 1 && s->hi[s->rank - 1] <= dd->lo[dd->rank - 1] && pct(g, 50))
            own = dd->rank - 1;
        for (int k = 0; k < dd->rank; k++) {
            if (k == own) {
                c[k] = get_ex(g, ps[0], s->rank - 1);
                continue;
            }
            Ex e = index_comp(g, l->depth);
            c[k] = clamp_ix(g, e, ext_of(g, dd, k));
        }
        Ex ix = mk_index(g, dd->rank, c);
        if (dd->rank == 0) return ix;
        Ex ign = mkex(g, ax_ignore(dd->rank), &GI[dd->rank], sfmt(g, "ax_ignore(%d)", dd->rank), 0, 0);
        if (may_empty(dd)) {
            count(g, RP_E_CMP);
            ix = cond_ex(g, bin(g, "ax_gt", ax_gt, size_ex(g, dd), ci64(g, 0), T_BOOL), ix, ign);
        }
        if (l->flag) ix = cond_ex(g, gen_exp(g, T_BOOL, l->depth), ign, ix);
        return ix;
    }

    case LK_SEGS: {
        /* Segment i of k over an extent n: n(i+1)/k - ni/k (they add up
         * to n; with k <= n none is empty). */
        Ex i = get_ex(g, ps[0], 0);
        Ex n = ext_of(g, l->a, l->a->rank - 1);
        Ex k = l->K > 0 ? ci64(g, l->K) : ext_of(g, l->a, l->a->rank - 1);
        if (l->K <= 0) {   /* min(k, n), at least 1 as a divisor */
            count(g, RP_E_MINMAX);
            k = bin(g, "ax_max", ax_max, bin(g, "ax_min", ax_min, ci64(g, -l->K), k, T_I64), ci64(g, 1), T_I64);
        }
        if (ok(g, RP_SHARE_EXP)) {
            n = name_it(g, n);
            k = name_it(g, k);
        }
        count(g, RP_E_INTDIV);
        count(g, RP_E_ARITH);
        Ex hi = bin(g, "ax_quot", ax_quot, bin(g, "ax_mul", ax_mul, n, bin(g, "ax_add", ax_add, i, ci64(g, 1), T_I64), T_I64),
                    k, T_I64);
        Ex lo = bin(g, "ax_quot", ax_quot, bin(g, "ax_mul", ax_mul, n, i, T_I64), k, T_I64);
        Ex s = bin(g, "ax_sub", ax_sub, hi, lo, T_I64);
        return l->ct == AX_I64 ? s : cvt_ex(g, s, l->ct);
    }

    case LK_TAME:
        return tame(g, ps[0]);

    case LK_INC:
        count(g, RP_E_ARITH);
        return bin(g, "ax_add", ax_add, ps[0], cint(g, l->ct, 1), &GS[l->ct]);

    case LK_LT_K:
        count(g, RP_E_CMP);
        return bin(g, "ax_lt", ax_lt, ps[0], cint(g, l->ct, l->K), T_BOOL);

    case LK_AND:
        count(g, RP_E_LOGIC);
        return bin(g, "ax_and", ax_and, ps[0], ps[1], T_BOOL);

    case LK_WCOND: {
        count(g, RP_E_CMP);
        Ex c = bin(g, "ax_lt", ax_lt, get_ex(g, ps[0], 0), cint(g, AX_I32, l->K), T_BOOL);
        if (l->flag) {
            count(g, RP_E_LOGIC);
            c = bin(g, "ax_and", ax_and, c, gen_exp(g, T_BOOL, l->depth), T_BOOL);
        }
        return c;
    }

    case LK_WBODY: {
        Ex c[2];
        count(g, RP_E_ARITH);
        c[0] = bin(g, "ax_add", ax_add, get_ex(g, ps[0], 0), cint(g, AX_I32, 1), T_I32);
        c[1] = gen_exp(g, l->ret, l->depth);
        return mk_tuple(g, ps[0].t, c);
    }
    }
    bad(g, "unknown lambda kind %d", l->kind);
    return const_ex(g, l->ret ? l->ret : T_I32);
}

/* Runs a scalar callback: parameters into the pool, the body generated,
 * the text recorded. */
static ax_exp lam_run(Lam *l, const ax_exp *args)
{
    G *g = l->g;
    if (l->called) bad(g, "a callback was called twice");
    l->called = true;
    int mark = g->nsp;
    g->lvl++;
    blk_push(g);
    int np = l->np;
    Ex *ps = galloc(g, sizeof *ps * (size_t)(np ? np : 1));
    Buf pl = {0};
    for (int i = 0; i < np; i++) {
        const char *nm = sfmt(g, "x%d", ++g->nvar);
        ps[i] = mkex(g, args[i], l->pt[i], nm, 0, 0);
        sp_push(g, ps[i], true);
        buf_add(&pl, "%s%s: %s", i ? ", " : "", nm, gt_str(g, l->pt[i]));
    }
    double w0 = g->work;
    Ex body = lam_body(g, l, ps);
    emit(g, "return %s", body.txt);
    const char *inner = blk_pop(g);
    l->txt = sfmt(g, "\\(%s) {\n%s%*s}", pl.s ? pl.s : "", inner, 4 * (g->nblk - 1), "");
    free(pl.s);
    g->lvl--;
    g->nsp = mark;
    l->cost = body.cost;
    l->awork = body.awork + (g->work - w0);
    return body.e;
}

static ax_exp cb1(ax_exp x, void *env) { return lam_run(env, &x); }
static ax_exp cb2(ax_exp x, ax_exp y, void *env)
{
    ax_exp a[2] = {x, y};
    return lam_run(env, a);
}
static ax_exp cb3(ax_exp x, ax_exp y, ax_exp z, void *env)
{
    ax_exp a[3] = {x, y, z};
    return lam_run(env, a);
}
static ax_exp cbv(const ax_exp *xs, void *env) { return lam_run(env, xs); }
/* ax_stencil_ix's: the neighbourhood, then the index as the last parameter. */
static ax_exp cbvi(ax_exp ix, const ax_exp *xs, void *env)
{
    Lam *l = env;
    ax_exp *a = malloc(sizeof *a * (size_t)l->np);
    if (!a) oom();
    for (int i = 0; i < l->np - 1; i++) a[i] = xs[i];
    a[l->np - 1] = ix;
    ax_exp r = lam_run(l, a);
    free(a);
    return r;
}

/* ax_while takes one env for its two callbacks. */
typedef struct LamPair {
    Lam c, b;
} LamPair;
static ax_exp cbw_cond(ax_exp x, void *env) { return lam_run(&((LamPair *)env)->c, &x); }
static ax_exp cbw_body(ax_exp x, void *env) { return lam_run(&((LamPair *)env)->b, &x); }

/*
 * The array operations the generator builds, one function each (op_*:
 * generate, map, zipWith, permutes, replicate and slice, reshape, the folds
 * and scans, filter, stencils, acond, the planner's shapes), each making
 * its operands with gen_arr.
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

/* ---------------------------------------------------------------- operations */

static Arr *op_unit(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    (void)rank, (void)fl, (void)cap;
    Ex e = gen_exp(g, elt, d > 2 ? 2 : d);
    ax_acc acc_2 = ax_unit(g->cx, e.e);
    return arr_mk(g, RP_UNIT, acc_2, elt, 0, NULL, NULL, e.cost + 1, e.awork, "ax_unit(%s)", e.txt);
}

static Arr *op_use(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    (void)d;
    return mk_input(g, elt, rank, fl, cap);
}

static Arr *op_generate(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    (void)d;
    int64_t lo[AX_MAX_RANK], hi[AX_MAX_RANK];
    Ex sh = gen_shape(g, rank, fl & NE, cap, lo, hi);
    Lam l;
    lam_init(&l, g, LK_GEN, 1, elt);
    l.pt[0] = &GI[rank];
    ax_acc r = ax_generate(g->cx, sh.e, cb1, &l);
    Arr tmp;
    tmp.rank = rank;
    for (int k = 0; k < rank; k++) tmp.hi[k] = hi[k];
    return arr_mk(g, RP_GENERATE, r, elt, rank, lo, hi, elems(&tmp) * (l.cost + 1) + sh.cost, l.awork + sh.awork,
                  "ax_generate(%s, %s)", sh.txt, ltxt(&l));
}

static Arr *op_map(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    Arr *a = gen_arr(g, pick_elt(g, rank), rank, d - 1, fl, cap);
    Lam l;
    lam_init(&l, g, LK_GEN, 1, elt);
    l.pt[0] = a->elt;
    ax_acc r = ax_map(cb1, &l, a->a);
    return arr_mk(g, RP_MAP, r, elt, rank, a->lo, a->hi, elems(a) * (l.cost + 1), a->work + l.awork,
                  "ax_map(%s, %s)", ltxt(&l), a->name);
}

/* ax_compute: an array made as one of its own (fusion stops there) */
static Arr *op_compute(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    Arr *a = gen_arr(g, elt, rank, d - 1, fl, cap);
    return arr_mk(g, RP_COMPUTE, ax_compute(a->a), elt, rank, a->lo, a->hi, elems(a), a->work, "ax_compute(%s)",
                  a->name);
}

/* ax_sort of scalar keys, or ax_sort_by (the keys a map of the values)
 * for tuple elements; ascending or descending */
static Arr *op_sort(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    /* (the interpreter's merge sort, every configuration's reference,
     * compares elements one call at a time: moderate inputs) */
    Arr *a = gen_arr(g, elt, rank, d - 1, fl, cap / 8 > 4 ? cap / 8 : 4);
    bool desc = pct(g, 50);
    if (ax_type_kind_of(gt_ax(g, elt)) == AX_KIND_SCALAR)
        return arr_mk(g, RP_SORT, ax_sort(a->a, desc), elt, rank, a->lo, a->hi, elems(a) * 64, a->work,
                      "ax_sort(%s, %s)", a->name, desc ? "true" : "false");
    /* tuple elements: sorted by a scalar computed from each */
    static const ax_scalar kt[] = {AX_I32, AX_F32, AX_U8, AX_F64};
    const GT *ke = &GS[kt[rn(g, 4)]];
    Lam l;
    lam_init(&l, g, LK_GEN, 1, ke);
    l.pt[0] = a->elt;
    Arr *k = arr_mk(g, RP_MAP, ax_map(cb1, &l, a->a), ke, rank, a->lo, a->hi, elems(a) * (l.cost + 1),
                    a->work + l.awork, "ax_map(%s, %s)", ltxt(&l), a->name);
    ax_acc r = ax_sort_by(k->a, a->a, desc);
    const char *sn = sfmt(g, "S%d", ++g->nstate);
    emit(g, "%s = ax_sort_by(%s, %s, %s)", sn, k->name, a->name, desc ? "true" : "false");
    count(g, RP_SORT);
    if (!r) bad(g, "%s: the builder failed: %s", sn, ax_error(g->cx));
    return arr_mk(g, RP_AGET, ax_aget(r, 1), elt, rank, a->lo, a->hi, elems(a) * 64, k->work, "ax_aget(%s, 1)", sn);
}

/* Grouping by integer keys made from the positions, (a i + b) mod nb:
 * the values of ax_group_by, or ax_reduce_by_key with an associative and
 * commutative operator (float addition tamed, as a permute's). */
typedef struct KeyGen {
    int64_t a, b, nb;
} KeyGen;

static ax_exp key_at(ax_exp ix, void *env)
{
    const KeyGen *k = env;
    return ax_cvt(ax_rem(ax_add(ax_mul(ax_index_get(ix, 0), ax_i64(k->a)), ax_i64(k->b)), ax_i64(k->nb)), AX_I32);
}

static Arr *op_group(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    (void)rank;
    KeyGen kg = {1 + rn(g, 7), rn(g, 5), 1 + rn(g, 6)};
    const char *kt = sfmt(g, "(%lld i + %lld) mod %lld", (long long)kg.a, (long long)kg.b, (long long)kg.nb);
    if (pct(g, 50)) {
        Arr *v = gen_arr(g, elt, 1, d - 1, 0, cap);
        const Assoc *as = pick_assoc(g, elt, true);
        const char *tamed = "";
        if (assoc_float_add(as)) {
            Lam lt;
            lam_init(&lt, g, LK_TAME, 1, elt);
            lt.pt[0] = elt;
            ax_acc tm = ax_map(cb1, &lt, v->a);
            v = arr_mk(g, RP_MAP, tm, elt, 1, v->lo, v->hi, elems(v) * (lt.cost + 1), v->work, "ax_map(%s, %s)",
                       ltxt(&lt), v->name);
            tamed = " (tamed)";
        }
        Fn2 comb;
        assoc_fn(g, as, &comb);
        Ex z = gen_exp(g, elt, 1);
        ax_acc keys = ax_generate(g->cx, ax_shape(v->a), key_at, &kg);
        ax_acc r = ax_reduce_by_key(comb.f, comb.env, z.e, keys, v->a, ax_i64(kg.nb));
        int64_t nb[1] = {kg.nb};
        return arr_mk(g, RP_GROUP, r, elt, 1, nb, nb, elems(v) * (fn2_cost(&comb) + 2), v->work + comb.lam.awork + z.awork,
                      "ax_reduce_by_key(%s, %s, %s, %s, %lld)%s", fn2_txt(&comb), z.txt, kt, v->name,
                      (long long)kg.nb, tamed);
    }
    Arr *v = gen_arr(g, elt, 1, d - 1, fl, cap / 8 > 4 ? cap / 8 : 4);
    ax_acc keys = ax_generate(g->cx, ax_shape(v->a), key_at, &kg);
    ax_acc r = ax_group_by(keys, v->a, ax_i64(kg.nb));
    const char *sn = sfmt(g, "S%d", ++g->nstate);
    emit(g, "%s = ax_group_by(%s, %s, %lld)", sn, kt, v->name, (long long)kg.nb);
    count(g, RP_GROUP);
    if (!r) bad(g, "%s: the builder failed: %s", sn, ax_error(g->cx));
    return arr_mk(g, RP_AGET, ax_aget(r, 1), elt, 1, v->lo, v->hi, elems(v) * 64, v->work, "ax_aget(%s, 1)", sn);
}

static void intersect(Arr *r, Arr *const *as, int n)
{
    for (int k = 0; k < r->rank; k++) {
        r->lo[k] = as[0]->lo[k];
        r->hi[k] = as[0]->hi[k];
        for (int i = 1; i < n; i++) {
            if (as[i]->lo[k] < r->lo[k]) r->lo[k] = as[i]->lo[k];
            if (as[i]->hi[k] < r->hi[k]) r->hi[k] = as[i]->hi[k];
        }
    }
}

/* zipWith of n arrays; with pairs (n = 2, rank 2), of all pairs of two
 * vectors, N-body's shape (a fold of which runs across rows: backend/cpu/fold.c),
 * with room for blocks of rows. */
static Arr *zip_n(G *g, const GT *elt, int rank, int d, int fl, int64_t cap, int n, bool pairs)
{
    Arr *as[3];
    const GT *e0 = pick_elt(g, rank);
    for (int i = 0; i < n; i++) {
        const GT *ei = i && pct(g, 40) ? e0 : pick_elt(g, rank);
        as[i] = pairs ? replicate_new(g, ei, 2, d - 1, fl, cap, 1 - i, i ? 64 : 24) : gen_arr(g, ei, rank, d - 1, fl, cap);
    }
    Lam l;
    lam_init(&l, g, LK_GEN, n, elt);
    for (int i = 0; i < n; i++) l.pt[i] = as[i]->elt;
    ax_acc r = n == 2 ? ax_zip_with(cb2, &l, as[0]->a, as[1]->a) : ax_zip_with3(cb3, &l, as[0]->a, as[1]->a, as[2]->a);
    Arr tmp;
    tmp.rank = rank;
    intersect(&tmp, as, n);
    double kids = l.awork;
    for (int i = 0; i < n; i++) kids += as[i]->work;
    if (n == 2)
        return arr_mk(g, RP_ZIPWITH, r, elt, rank, tmp.lo, tmp.hi, elems(&tmp) * (l.cost + 1), kids,
                      "ax_zip_with(%s, %s, %s)", ltxt(&l), as[0]->name, as[1]->name);
    return arr_mk(g, RP_ZIPWITH3, r, elt, rank, tmp.lo, tmp.hi, elems(&tmp) * (l.cost + 1), kids,
                  "ax_zip_with3(%s, %s, %s, %s)", ltxt(&l), as[0]->name, as[1]->name, as[2]->name);
}

static Arr *op_zip(G *g, const GT *elt, int rank, int d, int fl, int64_t cap, int n)
{
    return zip_n(g, elt, rank, d, fl, cap, n, n == 2 && rank == 2 && ok(g, RP_REPLICATE) && pct(g, 20));
}

static Arr *op_zip2(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_zip(g, elt, rank, d, fl, cap, 2); }
static Arr *op_zip3(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_zip(g, elt, rank, d, fl, cap, 3); }

static Arr *op_backpermute(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    int mode = rn(g, 3);   /* 0: same shape, 1: transpose, 2: gather */
    if (mode == 1 && rank < 2) mode = 0;
    if (mode == 0 && rank == 0) mode = 2;
    Lam l;
    lam_init(&l, g, LK_BP_SAME, 1, NULL);
    l.pt[0] = &GI[rank];
    l.rank = rank;
    Arr tmp;
    tmp.rank = rank;
    Ex sh;
    Arr *a;
    if (mode == 0) {
        a = gen_arr(g, elt, rank, d - 1, fl, cap);
        l.a = a;
        bool cheap = can_read(g, a, rank + 1);
        for (int k = 0; k < rank; k++) {
            l.mode[k] = rn(g, 4);
            if (!cheap) l.mode[k] = 0;
            l.k[k] = rr(g, -3, 3);
            tmp.lo[k] = a->lo[k];
            tmp.hi[k] = a->hi[k];
        }
        if (exact(a) && pct(g, 40)) {
            Ex c[AX_MAX_RANK];
            for (int k = 0; k < rank; k++) c[k] = ci64(g, a->lo[k]);
            sh = mk_index(g, rank, c);
        } else {
            sh = shape_ex(g, a);
        }
    } else if (mode == 1) {
        a = gen_arr(g, elt, rank, d - 1, fl, cap);
        if (!can_read(g, a, rank)) return NULL;
        l.kind = LK_BP_TRANS;
        /* a random permutation, not the identity */
        for (int k = 0; k < rank; k++) l.perm[k] = k;
        for (int k = rank - 1; k > 0; k--) {
            int j = rn(g, k + 1), t = l.perm[k];
            l.perm[k] = l.perm[j];
            l.perm[j] = t;
        }
        if (l.perm[0] == 0 && l.perm[1] == 1) l.perm[0] = 1, l.perm[1] = 0;
        Ex c[AX_MAX_RANK];
        for (int k = 0; k < rank; k++) {
            c[k] = ext_of(g, a, l.perm[k]);
            tmp.lo[k] = a->lo[l.perm[k]];
            tmp.hi[k] = a->hi[l.perm[k]];
        }
        sh = mk_index(g, rank, c);
    } else {
        int srank = rn(g, g->cfg.max_rank + 1);
        a = gen_arr(g, elt, srank, d - 1, (fl & NE) || rank == 0 || pct(g, 50) ? NE : 0, g->cfg.max_elems);
        if (!can_read(g, a, srank + 1)) return NULL;
        l.kind = LK_BP_GATHER;
        l.a = a;
        l.depth = 2;
        sh = gen_shape(g, rank, fl & NE, cap, tmp.lo, tmp.hi);
        if (may_empty(a) && rank > 0) {
            /* an empty source: an empty result (nothing to read) */
            Ex c[AX_MAX_RANK];
            count(g, RP_E_CMP);
            double u0 = g->unodes;
            Ex z = bin(g, "ax_eq", ax_eq, size_ex(g, a), ci64(g, 0), T_BOOL);
            z.un = g->unodes - u0;
            if (ok(g, RP_SHARE_CLOSED)) z = name_it(g, z);
            for (int k = 0; k < rank; k++) {
                c[k] = cond_ex(g, z, ci64(g, 0), get_ex(g, sh, k));
                tmp.lo[k] = 0;
            }
            sh = mk_index(g, rank, c);
        } else if (may_empty(a)) {
            /* rank 0: one element to read; make the source non-empty */
            return NULL;
        }
    }
    ax_acc r = ax_backpermute(sh.e, cb1, &l, a->a);
    return arr_mk(g, RP_BACKPERMUTE, r, elt, rank, tmp.lo, tmp.hi, elems(&tmp) * (l.cost + 2) + sh.cost,
                  a->work + l.awork + sh.awork, "ax_backpermute(%s, %s, %s)", sh.txt, ltxt(&l), a->name);
}

static Arr *op_permute(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    Arr *dflt = gen_arr(g, elt, rank, d - 1, fl, cap);
    Lam lp;
    lam_init(&lp, g, LK_PERM_INJ, 1, NULL);
    lp.b = dflt;
    lp.depth = 2;
    Fn2 comb;
    Arr *src;
    bool inj = pct(g, 40);
    const char *tamed = "";
    if (inj) {
        src = gen_arr(g, elt, rank, d - 1, 0, g->cfg.max_elems);
        if (!can_read(g, src, rank) || !can_read(g, dflt, rank)) return NULL;
        lp.a = src;
        for (int k = 0; k < rank; k++) lp.mode[k] = rn(g, 2);
        /* each target is hit at most once: any function combines */
        memset(&comb, 0, sizeof comb);
        lam_init(&comb.lam, g, LK_GEN, 2, elt);
        comb.lam.pt[0] = comb.lam.pt[1] = elt;
        comb.f = cb2;
        comb.env = &comb.lam;
    } else {
        lp.kind = LK_PERM_HIST;
        lp.flag = pct(g, 30);
        src = gen_arr(g, elt, rn(g, g->cfg.max_rank + 1), d - 1, 0, g->cfg.max_elems);
        if (!can_read(g, dflt, rank + 1)) return NULL;
        const Assoc *as = pick_assoc(g, elt, true);
        if (assoc_float_add(as)) {
            Lam lt;
            lam_init(&lt, g, LK_TAME, 1, elt);
            lt.pt[0] = elt;
            ax_acc acc_3 = ax_map(cb1, &lt, src->a);
            src = arr_mk(g, RP_MAP, acc_3, elt, src->rank, src->lo, src->hi,
                         elems(src) * (lt.cost + 1), src->work, "ax_map(%s, %s)", ltxt(&lt), src->name);
            tamed = " (tamed)";
        }
        assoc_fn(g, as, &comb);
    }
    lp.pt[0] = &GI[src->rank];
    lp.a = src;
    ax_acc r = ax_permute(comb.f, comb.env, dflt->a, cb1, &lp, src->a);
    return arr_mk(g, RP_PERMUTE, r, elt, rank, dflt->lo, dflt->hi, elems(dflt) + elems(src) * (lp.cost + fn2_cost(&comb)),
                  dflt->work + src->work + lp.awork + comb.lam.awork, "ax_permute(%s, %s, %s, %s)%s", fn2_txt(&comb),
                  dflt->name, ltxt(&lp), src->name, tamed);
}

/* A replicate: new dimensions at random, or dimension `only` alone (>= 0),
 * each new extent at most maxext. */
static Arr *replicate_new(G *g, const GT *elt, int rank, int d, int fl, int64_t cap, int only, int64_t maxext)
{
    int nnew = only >= 0 ? 1 : 1 + rn(g, rank < 2 ? 1 : 2);
    bool isnew[AX_MAX_RANK] = {0};
    if (only >= 0) isnew[only] = true;
    for (int i = only >= 0 ? 1 : 0; i < nnew;) {
        int k = rn(g, rank);
        if (!isnew[k]) isnew[k] = true, i++;
    }
    Ex ext[AX_MAX_RANK];
    int64_t nlo[AX_MAX_RANK], nhi[AX_MAX_RANK], prod = 1;
    for (int k = 0; k < rank; k++)
        if (isnew[k]) {
            ext[k] = gen_extent(g, fl & NE, maxext, &nlo[k], &nhi[k]);
            prod *= nhi[k] > 0 ? nhi[k] : 1;
        }
    Arr *a = gen_arr(g, elt, rank - nnew, d - 1, fl, cap / prod);
    ax_slice spec[AX_MAX_RANK];
    Arr tmp;
    tmp.rank = rank;
    Buf b = {0};
    double sc = 0, aw = 0;
    for (int k = 0, j = 0; k < rank; k++) {
        if (isnew[k]) {
            spec[k] = ax_fixed(ext[k].e);
            tmp.lo[k] = nlo[k];
            tmp.hi[k] = nhi[k];
            buf_add(&b, "%sfixed(%s)", k ? ", " : "", ext[k].txt);
            sc += ext[k].cost;
            aw += ext[k].awork;
        } else {
            spec[k] = ax_all();
            tmp.lo[k] = a->lo[j];
            tmp.hi[k] = a->hi[j];
            j++;
            buf_add(&b, "%sall", k ? ", " : "");
        }
    }
    ax_acc r = ax_replicate(rank, spec, a->a);
    Arr *res = arr_mk(g, RP_REPLICATE, r, elt, rank, tmp.lo, tmp.hi, elems(&tmp) + sc, a->work + aw,
                      "ax_replicate([%s], %s)", b.s, a->name);
    free(b.s);
    return res;
}

static Arr *op_replicate(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    return replicate_new(g, elt, rank, d, fl, cap, -1, 4);
}

static Arr *op_slice(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    (void)fl;
    (void)cap;
    int nfix = 1 + rn(g, g->cfg.max_rank - rank);
    int crank = rank + nfix;
    bool isfix[AX_MAX_RANK] = {0};
    for (int i = 0; i < nfix;) {
        int k = rn(g, crank);
        if (!isfix[k]) isfix[k] = true, i++;
    }
    Arr *a = gen_arr(g, elt, crank, d - 1, NE, g->cfg.max_elems);
    ax_slice spec[AX_MAX_RANK];
    Arr tmp;
    tmp.rank = rank;
    Buf b = {0};
    double aw = 0;
    for (int k = 0, j = 0; k < crank; k++) {
        if (isfix[k]) {
            Ex ix;
            if (pct(g, 50) || !can_read(g, a, 1)) ix = ci64(g, rr(g, 0, a->lo[k] - 1));
            else {
                ix = gen_exp(g, T_I64, 1);
                ix = clamp_ix(g, ix, ext_of(g, a, k));
            }
            spec[k] = ax_fixed(ix.e);
            aw += ix.awork;
            buf_add(&b, "%sfixed(%s)", k ? ", " : "", ix.txt);
        } else {
            spec[k] = ax_all();
            tmp.lo[j] = a->lo[k];
            tmp.hi[j] = a->hi[k];
            j++;
            buf_add(&b, "%sall", k ? ", " : "");
        }
    }
    ax_acc r = ax_slice_(crank, spec, a->a);
    Arr *res = arr_mk(g, RP_SLICE, r, elt, rank, tmp.lo, tmp.hi, elems(&tmp), a->work + aw, "ax_slice_([%s], %s)",
                      b.s, a->name);
    free(b.s);
    return res;
}

static Arr *op_reshape(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    int crank = rn(g, g->cfg.max_rank + 1);
    Arr *a = gen_arr(g, elt, crank, d - 1, fl, cap);
    Arr tmp;
    tmp.rank = rank;
    Ex c[AX_MAX_RANK];
    if (exact(a) && (pct(g, 70) || rank == 0)) {
        int64_t n = (int64_t)sz_lo(a);
        if (rank == 0 && n != 1) return NULL;
        for (int k = 0; k < rank; k++) tmp.lo[k] = 1;
        if (n == 0) {
            for (int k = 0; k < rank; k++) tmp.lo[k] = rr(g, 0, 3);
            tmp.lo[rn(g, rank)] = 0;
        } else if (rank > 0) {
            /* distribute n's prime factors over the dimensions */
            int64_t m = n;
            for (int64_t p = 2; p * p <= m; p++)
                while (m % p == 0) {
                    tmp.lo[rn(g, rank)] *= p;
                    m /= p;
                }
            if (m > 1) tmp.lo[rn(g, rank)] *= m;
        }
        for (int k = 0; k < rank; k++) {
            tmp.hi[k] = tmp.lo[k];
            c[k] = ci64(g, tmp.lo[k]);
        }
    } else {
        if (rank == 0) return NULL;
        int p = rn(g, rank);
        for (int k = 0; k < rank; k++) {
            if (k == p) {
                c[k] = size_ex(g, a);
                tmp.lo[k] = (int64_t)sz_lo(a);
                tmp.hi[k] = (int64_t)sz_hi(a);
            } else {
                c[k] = ci64(g, 1);
                tmp.lo[k] = tmp.hi[k] = 1;
            }
        }
    }
    Ex sh = mk_index(g, rank, c);
    ax_acc r = ax_reshape(sh.e, a->a);
    return arr_mk(g, RP_RESHAPE, r, elt, rank, tmp.lo, tmp.hi, 1 + sh.cost, a->work + sh.awork, "ax_reshape(%s, %s)",
                  sh.txt, a->name);
}

static Arr *op_flatten(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    (void)rank;
    Arr *a = gen_arr(g, elt, rn(g, g->cfg.max_rank + 1), d - 1, fl, cap);
    int64_t lo = (int64_t)sz_lo(a), hi = (int64_t)sz_hi(a);
    ax_acc acc_4 = ax_flatten(a->a);
    if (a->rank != 1) touch(g, a);   /* reshape(ix1(size(a)), a): a is read twice */
    return arr_mk(g, RP_FLATTEN, acc_4, elt, 1, &lo, &hi, 1, a->work, "ax_flatten(%s)", a->name);
}

/* The operand of a reduction with a float sum: tamed first. */
static Arr *tame_arr(G *g, Arr *a, const Assoc *as)
{
    if (!assoc_float_add(as)) return a;
    Lam lt;
    lam_init(&lt, g, LK_TAME, 1, a->elt);
    lt.pt[0] = a->elt;
    ax_acc r = ax_map(cb1, &lt, a->a);
    return arr_mk(g, RP_MAP, r, a->elt, a->rank, a->lo, a->hi, elems(a) * (lt.cost + 1), a->work,
                  "ax_map(%s, %s)   # tame", ltxt(&lt), a->name);
}

static Arr *op_fold(G *g, const GT *elt, int rank, int d, int fl, int64_t cap, int op)
{
    (void)cap;
    int crank = op == RP_FOLDALL ? rn(g, g->cfg.max_rank + 1) : rank + 1;
    bool pairs = op == RP_FOLD && crank == 2 && d > 1 && ok(g, RP_ZIPWITH) && ok(g, RP_REPLICATE) && pct(g, 30);
    Arr *a = pairs ? zip_n(g, elt, 2, d - 1, fl, g->cfg.max_elems, 2, true)
                   : gen_arr(g, elt, crank, d - 1, op == RP_FOLD1 ? NE : fl, g->cfg.max_elems);
    const Assoc *as = pick_assoc(g, elt, false);
    a = tame_arr(g, a, as);
    Fn2 f;
    assoc_fn(g, as, &f);
    Arr tmp;
    tmp.rank = rank;
    for (int k = 0; k < rank; k++) tmp.lo[k] = a->lo[k], tmp.hi[k] = a->hi[k];
    if (op == RP_FOLD1) {
        ax_acc r = ax_fold1(f.f, f.env, a->a);
        return arr_mk(g, op, r, elt, rank, tmp.lo, tmp.hi, elems(a) * fn2_cost(&f), a->work + f.lam.awork,
                      "ax_fold1(%s, %s)", fn2_txt(&f), a->name);
    }
    Ex z = gen_exp(g, elt, 1);
    ax_acc r = op == RP_FOLD ? ax_fold(f.f, f.env, z.e, a->a) : ax_fold_all(f.f, f.env, z.e, a->a);
    if (op == RP_FOLDALL && a->rank != 1) touch(g, a);   /* flattened: a is read twice */
    return arr_mk(g, op, r, elt, rank, tmp.lo, tmp.hi, elems(a) * fn2_cost(&f) + z.cost, a->work + f.lam.awork + z.awork,
                  "%s(%s, %s, %s)", op == RP_FOLD ? "ax_fold" : "ax_fold_all", fn2_txt(&f), z.txt, a->name);
}

static Arr *op_fold0(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_fold(g, elt, rank, d, fl, cap, RP_FOLD); }

/* A fold (fold1 when one) of a with a random operator: the planner's
 * generators.  A float sum's operand is tamed first. */
static Arr *fold_of(G *g, Arr *a, bool one)
{
    const Assoc *as = pick_assoc(g, a->elt, false);
    a = tame_arr(g, a, as);
    Fn2 f;
    assoc_fn(g, as, &f);
    int rank = a->rank - 1;
    if (one) {
        ax_acc r = ax_fold1(f.f, f.env, a->a);
        return arr_mk(g, RP_FOLD1, r, a->elt, rank, a->lo, a->hi, elems(a) * fn2_cost(&f), a->work + f.lam.awork,
                      "ax_fold1(%s, %s)", fn2_txt(&f), a->name);
    }
    Ex z = gen_exp(g, a->elt, 1);
    ax_acc r = ax_fold(f.f, f.env, z.e, a->a);
    return arr_mk(g, RP_FOLD, r, a->elt, rank, a->lo, a->hi, elems(a) * fn2_cost(&f) + z.cost,
                  a->work + f.lam.awork + z.awork, "ax_fold(%s, %s, %s)", fn2_txt(&f), z.txt, a->name);
}

static Arr *map_of(G *g, Arr *a)
{
    Lam l;
    lam_init(&l, g, LK_GEN, 1, a->elt);
    l.pt[0] = a->elt;
    ax_acc r = ax_map(cb1, &l, a->a);
    return arr_mk(g, RP_MAP, r, a->elt, a->rank, a->lo, a->hi, elems(a) * (l.cost + 1), a->work + l.awork,
                  "ax_map(%s, %s)", ltxt(&l), a->name);
}

/* Two results of elt combined elementwise. */
static Arr *zip_of(G *g, Arr *x, Arr *y)
{
    Lam l;
    lam_init(&l, g, LK_GEN, 2, x->elt);
    l.pt[0] = x->elt, l.pt[1] = y->elt;
    ax_acc r = ax_zip_with(cb2, &l, x->a, y->a);
    Arr tmp;
    Arr *as[2] = {x, y};
    tmp.rank = x->rank;
    intersect(&tmp, as, 2);
    return arr_mk(g, RP_ZIPWITH, r, x->elt, x->rank, tmp.lo, tmp.hi, elems(&tmp) * (l.cost + 1),
                  x->work + y->work + l.awork, "ax_zip_with(%s, %s, %s)", ltxt(&l), x->name, y->name);
}

/* Sibling reductions (src/opt/plansiblings.c merges them into one pass): two
 * folds (or fold1s) of one array, the second maybe of a map of it,
 * combined by a zipWith. */
static Arr *op_siblings(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    (void)cap;
    bool one = pct(g, 30);
    Arr *a = gen_arr(g, elt, rank + 1, d - 1, one ? NE : fl, g->cfg.max_elems);
    touch(g, a);   /* read by both */
    Arr *x = fold_of(g, a, one), *y = fold_of(g, pct(g, 50) ? map_of(g, a) : a, one);
    count(g, RP_SIBLINGS);
    return zip_of(g, x, y);
}

static Arr *op_filter(G *g, const GT *elt, int rank, int d, int fl, int64_t cap);

/* A fold of a filter (maybe through a map; src/opt/planfilter.c fuses the
 * filter into the fold), sometimes with a sibling fold of the same
 * filter. */
static Arr *op_filterfold(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    (void)fl;
    Arr *f = op_filter(g, elt, 1, d - 1, 0, cap);
    Arr *x = fold_of(g, pct(g, 40) ? map_of(g, f) : f, false);
    count(g, RP_FILTERFOLD);
    if (!pct(g, 30)) return x;
    touch(g, f);
    (void)rank;
    return zip_of(g, x, fold_of(g, pct(g, 50) ? map_of(g, f) : f, false));
}
/* An inclusive scan of a (same shape), by a random associative operator. */
static Arr *scan1_of(G *g, Arr *a)
{
    const Assoc *as = pick_assoc(g, a->elt, false);
    a = tame_arr(g, a, as);
    Fn2 f;
    assoc_fn(g, as, &f);
    ax_acc r = ax_scanl1(f.f, f.env, a->a);
    return arr_mk(g, RP_SCANL1, r, a->elt, a->rank, a->lo, a->hi, elems(a) * fn2_cost(&f), a->work + f.lam.awork,
                  "ax_scanl1(%s, %s)", fn2_txt(&f), a->name);
}

/* A filter of a (any rank: its elements in row-major order). */
static Arr *filter_of(G *g, Arr *a)
{
    Lam l;
    lam_init(&l, g, LK_GEN, 1, T_BOOL);
    l.pt[0] = a->elt;
    int64_t lo = 0, hi = (int64_t)sz_hi(a);
    ax_acc r = ax_filter(cb1, &l, a->a);
    return arr_mk(g, RP_FILTER, r, a->elt, 1, &lo, &hi, elems(a) * (l.cost + 1), a->work + l.awork,
                  "ax_filter(%s, %s)", ltxt(&l), a->name);
}

/* A map of an array, kept (a scan reads it too), and folds of the array
 * and of the map: src/opt/planloops.c makes them one loop (a collect and
 * reductions); the results combined elementwise. */
static Arr *op_loopmap(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    (void)cap;
    Arr *a = gen_arr(g, elt, rank + 1, d - 1, fl, g->cfg.max_elems);
    touch(g, a);
    Arr *m = map_of(g, a);
    touch(g, m);
    Arr *x = fold_of(g, a, false), *y = fold_of(g, pct(g, 50) ? m : map_of(g, m), false);
    Arr *z = fold_of(g, scan1_of(g, m), false);
    count(g, RP_LOOPMAP);
    return zip_of(g, zip_of(g, x, y), z);
}

/* Two filters of one vector, each read elsewhere too (by a scan), and
 * folds of the first: src/opt/planloops.c makes one loop of the filters and
 * the folds (a known operator through its neutral element, a selection
 * operator as a conditional reduction; others stay apart). */
static Arr *op_loopfilter(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    (void)rank, (void)fl;
    Arr *a = gen_arr(g, elt, 1, d - 1, 0, cap);
    touch(g, a);
    Arr *f1 = filter_of(g, a), *f2 = filter_of(g, a);
    touch(g, f1), touch(g, f1);
    Arr *x = fold_of(g, pct(g, 40) ? map_of(g, f1) : f1, false), *y = fold_of(g, f1, false);
    Arr *z = fold_of(g, scan1_of(g, f1), false), *w = fold_of(g, scan1_of(g, f2), false);
    count(g, RP_LOOPFILTER);
    return zip_of(g, zip_of(g, x, y), zip_of(g, z, w));
}

/* A map over a fold's result (rows of a matrix), a scan's, a stencil's
 * or a filter's: src/opt/planepilogue.c applies it as the consumer stores
 * its result (an epilogue). */
static Arr *op_stencil1(G *g, const GT *elt, int rank, int d, int fl, int64_t cap);
static Arr *op_epilogue(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    Arr *c;
    int k = rn(g, 4);
    if (k == 3 && rank == 1 && !(fl & NE)) {   /* (a filter may keep nothing) */
        c = filter_of(g, gen_arr(g, elt, 1 + rn(g, 2), d - 1, 0, cap));
    } else if (k == 0 && rank >= 1) {
        bool one = pct(g, 20);
        c = fold_of(g, gen_arr(g, elt, rank + 1, d - 1, one ? NE : fl, g->cfg.max_elems), one);
    } else if (k == 1 && rank >= 1) {
        c = scan1_of(g, gen_arr(g, elt, rank, d - 1, fl, cap));
    } else {
        c = op_stencil1(g, elt, rank, d - 1, fl, cap);
        if (!c) return NULL;
    }
    count(g, RP_EPILOGUE);
    return map_of(g, c);
}
static Arr *op_fold1(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_fold(g, elt, rank, d, fl, cap, RP_FOLD1); }
static Arr *op_foldall(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_fold(g, elt, rank, d, fl, cap, RP_FOLDALL); }

/* One of the six segmented scans (k in RP_SCANL .. RP_SCANREX order) of
 * a with f over segs (klo .. khi segments); an exclusive one gives its
 * scan or its totals (the other goes into the pool). */
static Arr *scan_seg(G *g, int k, const GT *elt, Arr *a, Arr *segs, const Fn2 *f, int64_t klo, int64_t khi)
{
    static const char *const nm[] = {"ax_scanl_seg", "ax_scanl1_seg", "ax_scanr_seg", "ax_scanr1_seg",
                                     "ax_scanl_ex_seg", "ax_scanr_ex_seg"};
    int rank = a->rank, m = rank - 1;
    bool withz = k == 0 || k == 2 || k >= 4;
    Ex z = {0};
    if (withz) z = gen_exp(g, elt, 1);
    ax_acc r;
    switch (k) {
    case 0: r = ax_scanl_seg(f->f, f->env, z.e, a->a, segs->a); break;
    case 1: r = ax_scanl1_seg(f->f, f->env, a->a, segs->a); break;
    case 2: r = ax_scanr_seg(f->f, f->env, z.e, a->a, segs->a); break;
    case 3: r = ax_scanr1_seg(f->f, f->env, a->a, segs->a); break;
    case 4: r = ax_scanl_ex_seg(f->f, f->env, z.e, a->a, segs->a); break;
    default: r = ax_scanr_ex_seg(f->f, f->env, z.e, a->a, segs->a); break;
    }
    Arr tmp;
    tmp.rank = rank;
    for (int d = 0; d < rank; d++) tmp.lo[d] = a->lo[d], tmp.hi[d] = a->hi[d];
    /* the flags, the pairs' scan and its projection: about three passes */
    double own = 3 * elems(a) * (fn2_cost(f) + 2) + z.cost, kids = a->work + segs->work + f->lam.awork + z.awork;
    if (k == 0 || k == 2) tmp.lo[m] += klo, tmp.hi[m] += khi;
    if (k < 4) {
        Arr *res;
        if (withz)
            res = arr_mk(g, RP_SCANSEG, r, elt, rank, tmp.lo, tmp.hi, own, kids, "%s(%s, %s, %s, %s)", nm[k], fn2_txt(f),
                         z.txt, a->name, segs->name);
        else
            res = arr_mk(g, RP_SCANSEG, r, elt, rank, tmp.lo, tmp.hi, own, kids, "%s(%s, %s, %s)", nm[k], fn2_txt(f),
                         a->name, segs->name);
        return res;
    }
    const char *sn = sfmt(g, "S%d", ++g->nstate);
    emit(g, "%s = %s(%s, %s, %s, %s)", sn, nm[k], fn2_txt(f), z.txt, a->name, segs->name);
    count(g, RP_SCANSEG);
    if (!r) bad(g, "%s: the builder failed: %s", sn, ax_error(g->cx));
    g->work += own;
    Arr *c0 = arr_mk(g, RP_AGET, ax_aget(r, 0), elt, rank, tmp.lo, tmp.hi, 0, own + kids, "ax_aget(%s, 0)", sn);
    tmp.lo[m] = klo, tmp.hi[m] = khi;
    Arr *c1 = arr_mk(g, RP_AGET, ax_aget(r, 1), elt, rank, tmp.lo, tmp.hi, 0, own + kids, "ax_aget(%s, 1)", sn);
    return pct(g, 40) ? c1 : c0;
}

/* A segmented fold (SG_FOLD, SG_FOLD1) or one of the six segmented scans
 * (SG_SCAN + the scan's index in RP_SCANL .. RP_SCANREX order): the
 * segments as an input array (a random composition of the extent) or
 * computed (even segments). */
enum { SG_FOLD, SG_FOLD1, SG_SCAN };

static Arr *op_foldseg(G *g, const GT *elt, int rank, int d, int fl, int64_t cap, int kind)
{
    bool one = kind == SG_FOLD1;
    Arr *a = gen_arr(g, elt, rank, d - 1, one ? (fl | (pct(g, 50) ? NE : 0)) : fl, cap);
    int m = rank - 1;
    static const ax_scalar segt[] = {AX_I32, AX_I64, AX_I16, AX_U16, AX_U32, AX_I32};
    ax_scalar st = segt[rn(g, 6)];
    Arr tmp;
    tmp.rank = rank;
    for (int k = 0; k < rank; k++) tmp.lo[k] = a->lo[k], tmp.hi[k] = a->hi[k];
    Arr *segs;
    bool cheap = can_read(g, a, 3);
    if (!cheap && a->lo[m] != a->hi[m]) return NULL;
    if (a->lo[m] == a->hi[m] && (pct(g, 60) || !cheap)) {
        /* segment lengths as an input array: a random composition of n */
        int64_t n = a->lo[m], k, v[16];
        if (one) k = n == 0 ? 0 : 1 + rn(g, (int)(n < 6 ? n : 6));
        else k = (fl & NE) || n > 0 ? 1 + rn(g, 6) : rn(g, 6);
        for (int i = 0; i < k; i++) v[i] = one ? 1 : 0;
        for (int64_t u = one ? n - k : n; u > 0; u--) v[rn(g, (int)k)]++;
        int64_t one_ext = k;
        segs = mk_host(g, &GS[st], 1, &one_ext, v);
        tmp.lo[m] = tmp.hi[m] = k;
    } else {
        /* computed: k (or min(k, n) for fold1_seg) even segments */
        int64_t k = 1 + rn(g, 4);
        Lam ls;
        lam_init(&ls, g, LK_SEGS, 1, &GS[st]);
        ls.pt[0] = &GI[1];
        ls.a = a;
        ls.ct = st;
        ls.K = one ? -k : k;
        Ex kx;
        if (one) {
            count(g, RP_E_MINMAX);
            kx = bin(g, "ax_min", ax_min, ci64(g, k), ext_of(g, a, m), T_I64);
            tmp.lo[m] = a->lo[m] < k ? a->lo[m] : k;
            tmp.hi[m] = a->hi[m] < k ? a->hi[m] : k;
        } else {
            kx = ci64(g, k);
            tmp.lo[m] = tmp.hi[m] = k;
        }
        Ex sh = mk_index(g, 1, &kx);
        ax_acc sr = ax_generate(g->cx, sh.e, cb1, &ls);
        segs = arr_mk(g, RP_GENERATE, sr, &GS[st], 1, &tmp.lo[m], &tmp.hi[m], (double)k * (ls.cost + 1) + sh.cost,
                      ls.awork + sh.awork, "ax_generate(%s, %s)", sh.txt, ltxt(&ls));
    }
    const Assoc *as = pick_assoc(g, elt, false);
    a = tame_arr(g, a, as);
    Fn2 f;
    assoc_fn(g, as, &f);
    double own = elems(&tmp);
    if (kind >= SG_SCAN) return scan_seg(g, kind - SG_SCAN, elt, a, segs, &f, tmp.lo[m], tmp.hi[m]);
    if (one) {
        ax_acc acc_5 = ax_fold1_seg(f.f, f.env, a->a, segs->a);
        own += elems(a) * fn2_cost(&f);
        return arr_mk(g, RP_FOLD1SEG, acc_5, elt, rank, tmp.lo, tmp.hi, own,
                      a->work + segs->work + f.lam.awork, "ax_fold1_seg(%s, %s, %s)", fn2_txt(&f), a->name, segs->name);
    }
    Ex z = gen_exp(g, elt, 1);
    ax_acc acc_6 = ax_fold_seg(f.f, f.env, z.e, a->a, segs->a);
    own += elems(a) * fn2_cost(&f);
    return arr_mk(g, RP_FOLDSEG, acc_6, elt, rank, tmp.lo, tmp.hi, own + z.cost,
                  a->work + segs->work + f.lam.awork + z.awork, "ax_fold_seg(%s, %s, %s, %s)", fn2_txt(&f), z.txt,
                  a->name, segs->name);
}

static Arr *op_foldseg0(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_foldseg(g, elt, rank, d, fl, cap, SG_FOLD); }
static Arr *op_fold1seg(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_foldseg(g, elt, rank, d, fl, cap, SG_FOLD1); }
static Arr *op_scanseg(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    /* the scans with z make one element more per segment: half the size */
    int k = rn(g, 6);
    return op_foldseg(g, elt, rank, d, fl, k == 0 || k == 2 ? cap / 2 : cap, SG_SCAN + k);
}

static Arr *op_scan(G *g, const GT *elt, int rank, int d, int fl, int64_t cap, int op)
{
    bool ex = op == RP_SCANLEX || op == RP_SCANREX;
    int comp = 0;
    if (ex) comp = rank == 0 || (rank < g->cfg.max_rank && pct(g, 40)) ? 1 : 0;
    int crank = rank + comp;
    bool wide = op == RP_SCANL || op == RP_SCANR;
    Arr *a = gen_arr(g, elt, crank, d - 1, fl, comp ? g->cfg.max_elems : wide ? cap / 2 : cap);
    const Assoc *as = pick_assoc(g, elt, false);
    a = tame_arr(g, a, as);
    Fn2 f;
    assoc_fn(g, as, &f);
    Ex z = {0};
    if (op != RP_SCANL1 && op != RP_SCANR1) z = gen_exp(g, elt, 1);
    ax_acc r;
    switch (op) {
    case RP_SCANL: r = ax_scanl(f.f, f.env, z.e, a->a); break;
    case RP_SCANR: r = ax_scanr(f.f, f.env, z.e, a->a); break;
    case RP_SCANL1: r = ax_scanl1(f.f, f.env, a->a); break;
    case RP_SCANR1: r = ax_scanr1(f.f, f.env, a->a); break;
    case RP_SCANLEX: r = ax_scanl_ex(f.f, f.env, z.e, a->a); break;
    default: r = ax_scanr_ex(f.f, f.env, z.e, a->a); break;
    }
    double own = elems(a) * fn2_cost(&f) + z.cost, kids = a->work + f.lam.awork + z.awork;
    Arr tmp;
    tmp.rank = crank;
    for (int k = 0; k < crank; k++) tmp.lo[k] = a->lo[k], tmp.hi[k] = a->hi[k];
    static const char *const nm[] = {"ax_scanl", "ax_scanl1", "ax_scanr", "ax_scanr1", "ax_scanl_ex", "ax_scanr_ex"};
    const char *name = nm[op - RP_SCANL];
    switch (op) {
    case RP_SCANL:
    case RP_SCANR:
        tmp.lo[crank - 1]++, tmp.hi[crank - 1]++;
        return arr_mk(g, op, r, elt, rank, tmp.lo, tmp.hi, own, kids, "%s(%s, %s, %s)", name, fn2_txt(&f), z.txt, a->name);
    case RP_SCANL1:
    case RP_SCANR1:
        return arr_mk(g, op, r, elt, rank, tmp.lo, tmp.hi, own, kids, "%s(%s, %s)", name, fn2_txt(&f), a->name);
    default: {
        /* a pair: the exclusive scan and the totals; the one not asked
         * for goes into the pool (the scan is then shared) */
        ax_acc s = r;
        const char *sn = sfmt(g, "S%d", ++g->nstate);
        emit(g, "%s = %s(%s, %s, %s)", sn, name, fn2_txt(&f), z.txt, a->name);
        count(g, op);
        if (!s) bad(g, "%s: the builder failed: %s", sn, ax_error(g->cx));
        g->work += own;
        ax_acc acc_7 = ax_aget(s, 0);
        Arr *c0 = arr_mk(g, RP_AGET, acc_7, elt, crank, tmp.lo, tmp.hi, 0, own + kids, "ax_aget(%s, 0)", sn);
        ax_acc acc_8 = ax_aget(s, 1);
        Arr *c1 = arr_mk(g, RP_AGET, acc_8, elt, crank - 1, tmp.lo, tmp.hi, 0, own + kids, "ax_aget(%s, 1)", sn);
        return comp ? c1 : c0;
    }
    }
}

static Arr *op_scanl(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_scan(g, elt, rank, d, fl, cap, RP_SCANL); }
static Arr *op_scanl1(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_scan(g, elt, rank, d, fl, cap, RP_SCANL1); }
static Arr *op_scanr(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_scan(g, elt, rank, d, fl, cap, RP_SCANR); }
static Arr *op_scanr1(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_scan(g, elt, rank, d, fl, cap, RP_SCANR1); }
static Arr *op_scanlex(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_scan(g, elt, rank, d, fl, cap, RP_SCANLEX); }
static Arr *op_scanrex(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_scan(g, elt, rank, d, fl, cap, RP_SCANREX); }

static Arr *op_filter(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    (void)rank, (void)fl;
    Arr *a = gen_arr(g, elt, rn(g, g->cfg.max_rank + 1), d - 1, 0, cap);
    if (pct(g, 25)) a = filter_of(g, a);   /* a filter of a filter: one filter (src/opt/filtercount.c) */
    Lam l;
    lam_init(&l, g, LK_GEN, 1, T_BOOL);
    l.pt[0] = elt;
    int64_t lo = 0, hi = (int64_t)sz_hi(a);
    ax_acc acc_9 = ax_filter(cb1, &l, a->a);
    return arr_mk(g, RP_FILTER, acc_9, elt, 1, &lo, &hi, elems(a) * (l.cost + 1), a->work + l.awork,
                  "ax_filter(%s, %s)", ltxt(&l), a->name);
}

static const char *bound_txt(G *g, ax_boundary b, const char *val)
{
    switch (b.kind) {
    case AX_CLAMP: return "clamp";
    case AX_MIRROR: return "mirror";
    case AX_WRAP: return "wrap";
    default: return sfmt(g, "constant(%s)", val);
    }
}

/* Odd stencil extents with at most maxn elements in all. */
static int sten_size(G *g, int rank, int maxn, int *size)
{
    int n = 1;
    for (int k = 0; k < rank; k++) {
        int r = rn(g, 10), s = r < 3 ? 1 : r < 8 ? 3 : 5;
        while (s > 1 && n * s > maxn) s -= 2;
        size[k] = s;
        n *= s;
    }
    return n;
}

static ax_boundary sten_bound(G *g, const GT *elt, Ex *val)
{
    switch (rn(g, 4)) {
    case 0: return ax_clamp();
    case 1: return ax_mirror();
    case 2: return ax_wrap();
    default: *val = gen_exp(g, elt, 1); return ax_constant(val->e);
    }
}

static const char *size_txt(G *g, int rank, const int *size)
{
    Buf b = {0};
    for (int k = 0; k < rank; k++) buf_add(&b, "%s%d", k ? "," : "", size[k]);
    const char *s = sfmt(g, "[%s]", b.s ? b.s : "");
    free(b.s);
    return s;
}

static Arr *op_stencil(G *g, const GT *elt, int rank, int d, int fl, int64_t cap, int n)
{
    Arr *as[2];
    int size[2][AX_MAX_RANK], cnt[2];
    ax_boundary bd[2];
    Ex val[2];
    const char *btxt[2];
    memset(val, 0, sizeof val);
    const GT *e0 = pick_elt(g, rank);
    for (int i = 0; i < n; i++) {
        as[i] = gen_arr(g, i && pct(g, 50) ? e0 : i ? pick_elt(g, rank) : e0, rank, d - 1, fl, cap);
        cnt[i] = sten_size(g, rank, g->cfg.max_stencil / n, size[i]);
        bd[i] = sten_bound(g, as[i]->elt, &val[i]);
        btxt[i] = bound_txt(g, bd[i], val[i].txt);
    }
    /* sometimes the function also sees its element's index (ax_stencil_ix:
     * the last parameter) */
    bool ix = pct(g, 25);
    Lam l;
    lam_init(&l, g, LK_STENCIL, cnt[0] + (n > 1 ? cnt[1] : 0) + ix, elt);
    l.nsten = cnt[0];
    int p = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < cnt[i]; j++) l.pt[p++] = as[i]->elt;
    if (ix) l.pt[p] = &GI[rank];
    Arr tmp;
    tmp.rank = rank;
    intersect(&tmp, as, n);
    ax_acc r = n == 1 ? ix ? ax_stencil_ix(cbvi, &l, size[0], bd[0], as[0]->a) : ax_stencil(cbv, &l, size[0], bd[0], as[0]->a)
               : ix ? ax_stencil2_ix(cbvi, &l, size[0], bd[0], as[0]->a, size[1], bd[1], as[1]->a)
                    : ax_stencil2(cbv, &l, size[0], bd[0], as[0]->a, size[1], bd[1], as[1]->a);
    double own = elems(&tmp) * (l.cost + l.np + 1), kids = l.awork + val[0].awork + val[1].awork;
    for (int i = 0; i < n; i++) kids += as[i]->work;
    if (n == 1)
        return arr_mk(g, RP_STENCIL, r, elt, rank, tmp.lo, tmp.hi, own,
                      kids, "ax_stencil%s(%s, %s, %s, %s)", ix ? "_ix" : "", ltxt(&l), size_txt(g, rank, size[0]), btxt[0],
                      as[0]->name);
    return arr_mk(g, RP_STENCIL2, r, elt, rank, tmp.lo,
                  tmp.hi, own, kids, "ax_stencil2%s(%s, %s, %s, %s, %s, %s, %s)", ix ? "_ix" : "", ltxt(&l),
                  size_txt(g, rank, size[0]), btxt[0], as[0]->name, size_txt(g, rank, size[1]), btxt[1], as[1]->name);
}

static Arr *op_stencil1(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_stencil(g, elt, rank, d, fl, cap, 1); }
static Arr *op_stencil2(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_stencil(g, elt, rank, d, fl, cap, 2); }

static void union_bounds(Arr *r, const Arr *a, const Arr *b)
{
    for (int k = 0; k < r->rank; k++) {
        r->lo[k] = a->lo[k] < b->lo[k] ? a->lo[k] : b->lo[k];
        r->hi[k] = a->hi[k] > b->hi[k] ? a->hi[k] : b->hi[k];
    }
}

static Arr *op_acond(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    Ex c = gen_exp(g, T_BOOL, 2);
    Arr *t = gen_arr(g, elt, rank, d - 1, fl, cap);
    Arr *e = gen_arr(g, elt, rank, d - 1, fl, cap);
    Arr tmp;
    tmp.rank = rank;
    union_bounds(&tmp, t, e);
    ax_acc acc_11 = ax_acond(c.e, t->a, e->a);
    return arr_mk(g, RP_ACOND, acc_11, elt, rank, tmp.lo, tmp.hi, c.cost,
                  t->work + e->work + c.awork, "ax_acond(%s, %s, %s)", c.txt, t->name, e->name);
}

/* acond on pairs of arrays, both components projected (ATUPLE + AGET). */
static Arr *op_atuple(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    int orank = rn(g, g->cfg.max_rank + 1);
    const GT *oelt = pick_elt(g, orank);
    int pos = rn(g, 2);
    Arr *br[2][2];
    ax_acc tu[2];
    const char *tn[2];
    for (int i = 0; i < 2; i++) {
        br[i][pos] = gen_arr(g, elt, rank, d - 1, fl, cap);
        br[i][1 - pos] = gen_arr(g, oelt, orank, d - 1, 0, cap);
        tu[i] = ax_atuple2(br[i][0]->a, br[i][1]->a);
        count(g, RP_ATUPLE);
        tn[i] = sfmt(g, "ax_atuple2(%s, %s)", br[i][0]->name, br[i][1]->name);
    }
    Ex c = gen_exp(g, T_BOOL, 2);
    ax_acc ac = ax_acond(c.e, tu[0], tu[1]);
    count(g, RP_ACOND);
    const char *sn = sfmt(g, "S%d", ++g->nstate);
    emit(g, "%s = ax_acond(%s, %s, %s)", sn, c.txt, tn[0], tn[1]);
    if (!ac) bad(g, "%s: the builder failed: %s", sn, ax_error(g->cx));
    double kids = c.awork + br[0][0]->work + br[0][1]->work + br[1][0]->work + br[1][1]->work;
    Arr tmp, tmpo;
    tmp.rank = rank;
    tmpo.rank = orank;
    union_bounds(&tmp, br[0][pos], br[1][pos]);
    union_bounds(&tmpo, br[0][1 - pos], br[1][1 - pos]);
    Arr *r = NULL;
    for (int i = 0; i < 2; i++) {
        Arr *x = i == pos ? arr_mk(g, RP_AGET, ax_aget(ac, i), elt, rank, tmp.lo, tmp.hi, 0, kids, "ax_aget(%s, %d)", sn, i)
                          : arr_mk(g, RP_AGET, ax_aget(ac, i), oelt, orank, tmpo.lo, tmpo.hi, 0, kids, "ax_aget(%s, %d)",
                                   sn, i);
        if (i == pos) r = x;
    }
    return r;
}

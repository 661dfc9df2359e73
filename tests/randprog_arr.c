/*
 * Array terms of the generator: terms with bounds on their extents, and
 * the inputs (host arrays made with values, ax_use), extents and shapes.
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

/* ============================================================ arrays */

static void bounds_str(Buf *b, const Arr *a)
{
    buf_add(b, "[");
    for (int k = 0; k < a->rank; k++) {
        if (a->lo[k] == a->hi[k]) buf_add(b, "%s%" PRId64, k ? ", " : "", a->lo[k]);
        else buf_add(b, "%s%" PRId64 "..%" PRId64, k ? ", " : "", a->lo[k], a->hi[k]);
    }
    buf_add(b, "]");
}

static Arr *arr_new(G *g, const GT *elt, int rank)
{
    Arr *a = galloc(g, sizeof *a);
    a->elt = elt;
    a->rank = rank;
    return a;
}

/* Records a new array term: names it, writes its statement, puts it in the
 * pool.  own is the work of this operation alone, kids that of its
 * operands (already counted). */
static Arr *arr_mk(G *g, int op, ax_acc acc, const GT *elt, int rank, const int64_t *lo, const int64_t *hi,
                   double own, double kids, const char *fmt, ...) __attribute__((format(printf, 10, 11)));
static Arr *arr_mk(G *g, int op, ax_acc acc, const GT *elt, int rank, const int64_t *lo, const int64_t *hi,
                   double own, double kids, const char *fmt, ...)
{
    Arr *a = arr_new(g, elt, rank);
    a->a = acc;
    for (int k = 0; k < rank; k++) {
        a->lo[k] = lo[k];
        a->hi[k] = hi[k];
    }
    a->name = sfmt(g, "A%d", ++g->narr);
    a->work = own + kids;
    g->unodes += 1;
    a->unodes = g->unodes - g->cur_u0;
    Buf b = {0};
    buf_add(&b, "%s = ", a->name);
    va_list ap;
    va_start(ap, fmt);
    buf_vadd(&b, fmt, ap);
    va_end(ap);
    buf_add(&b, "   # [%s]^%d ", gt_str(g, elt), rank);
    bounds_str(&b, a);
    emit(g, "%s", b.s);
    free(b.s);
    if (!acc && !g->bad) bad(g, "%s: the builder failed: %s", a->name, ax_error(g->cx));
    else if (acc && (ax_acc_rank(acc) != rank || !ax_type_equal(ax_acc_elem(acc), gt_ax(g, elt))))
        bad(g, "%s: the term has an unexpected type", a->name);
    count(g, op);
    g->nnodes++;
    g->work += own;
    GROW(g->ap, g->nap, g->capap);
    g->ap[g->nap++] = a;
    return a;
}

static double elems(const Arr *a) { return sz_hi(a) > 1 ? sz_hi(a) : 1; }

/* An element type for an operand of the given rank: one that the pool
 * has arrays of (so they can be shared), or a random one. */
static const GT *pick_elt(G *g, int rank)
{
    if (pct(g, 45)) {
        int cand[256], n = 0;
        for (int i = 0; i < g->nap && n < 256; i++)
            if (g->ap[i]->rank == rank && g->ap[i]->a) cand[n++] = i;
        if (n) return g->ap[cand[rn(g, n)]]->elt;
    }
    return rand_elt_t(g);
}

/* ---------------------------------------------------------------- inputs */

static void put_val(G *g, ax_scalar s, void *buf, int64_t i, int64_t iv, double fv)
{
    (void)g;
    switch (s) {
    case AX_BOOL: ((uint8_t *)buf)[i] = (uint8_t)(iv & 1); break;
    case AX_I8: ((int8_t *)buf)[i] = (int8_t)(uint8_t)iv; break;
    case AX_I16: ((int16_t *)buf)[i] = (int16_t)(uint16_t)iv; break;
    case AX_I32: ((int32_t *)buf)[i] = (int32_t)(uint32_t)iv; break;
    case AX_I64: ((int64_t *)buf)[i] = iv; break;
    case AX_U8: ((uint8_t *)buf)[i] = (uint8_t)iv; break;
    case AX_U16: ((uint16_t *)buf)[i] = (uint16_t)iv; break;
    case AX_U32: ((uint32_t *)buf)[i] = (uint32_t)iv; break;
    case AX_U64: ((uint64_t *)buf)[i] = (uint64_t)iv; break;
    case AX_F32: ((float *)buf)[i] = (float)fv; break;
    case AX_F64: ((double *)buf)[i] = fv; break;
    default: break;
    }
}

static void val_str(Buf *b, ax_scalar s, const void *buf, int64_t i)
{
    switch (s) {
    case AX_BOOL: buf_add(b, "%d", ((const uint8_t *)buf)[i]); break;
    case AX_I8: buf_add(b, "%d", ((const int8_t *)buf)[i]); break;
    case AX_I16: buf_add(b, "%d", ((const int16_t *)buf)[i]); break;
    case AX_I32: buf_add(b, "%" PRId32, ((const int32_t *)buf)[i]); break;
    case AX_I64: buf_add(b, "%" PRId64, ((const int64_t *)buf)[i]); break;
    case AX_U8: buf_add(b, "%u", ((const uint8_t *)buf)[i]); break;
    case AX_U16: buf_add(b, "%u", ((const uint16_t *)buf)[i]); break;
    case AX_U32: buf_add(b, "%" PRIu32, ((const uint32_t *)buf)[i]); break;
    case AX_U64: buf_add(b, "%" PRIu64, ((const uint64_t *)buf)[i]); break;
    case AX_F32: buf_add(b, "%.9g", ((const float *)buf)[i]); break;
    case AX_F64: buf_add(b, "%.17g", ((const double *)buf)[i]); break;
    default: break;
    }
}

/* Makes a host array of the given shape (values from vals if given, for
 * scalar elements, else random), embeds it with ax_use. */
static Arr *mk_host(G *g, const GT *elt, int rank, const int64_t *sh, const int64_t *vals)
{
    ax_scalar lv[16];
    int nl = gt_leaves(elt, lv);
    int64_t n = 1;
    for (int k = 0; k < rank; k++) n *= sh[k];
    void *bufs[16];
    for (int c = 0; c < nl; c++) {
        size_t bytes = (size_t)n * ax_scalar_size(lv[c]);
        bufs[c] = calloc(1, bytes ? bytes : 1);
        if (!bufs[c]) oom();
        for (int64_t i = 0; i < n; i++) {
            if (vals) put_val(g, lv[c], bufs[c], i, vals[i], (double)vals[i]);
            else if (s_float(lv[c])) put_val(g, lv[c], bufs[c], i, 0, rand_float_val(g));
            else if (lv[c] == AX_BOOL) put_val(g, lv[c], bufs[c], i, rn(g, 2), 0);
            else put_val(g, lv[c], bufs[c], i, rand_int_val(g, lv[c]), 0);
        }
    }
    bool borrow = pct(g, 30);
    ax_array *h;
    if (elt->kind == GK_SCALAR)
        h = borrow ? ax_array_wrap(g->cx, elt->s, rank, sh, bufs[0]) : ax_array_from(g->cx, elt->s, rank, sh, bufs[0]);
    else
        h = borrow ? ax_array_wrap_n(g->cx, gt_ax(g, elt), rank, sh, bufs)
                   : ax_array_from_n(g->cx, gt_ax(g, elt), rank, sh, (const void *const *)bufs);
    /* The description: shape and (the start of) each component. */
    Buf b = {0};
    buf_add(&b, "%s %s[", borrow ? "wrap" : "copy", gt_str(g, elt));
    for (int k = 0; k < rank; k++) buf_add(&b, "%s%" PRId64, k ? "," : "", sh[k]);
    buf_add(&b, "]");
    for (int c = 0; c < nl; c++) {
        buf_add(&b, " {");
        for (int64_t i = 0; i < n && i < 12; i++) {
            if (i) buf_add(&b, " ");
            val_str(&b, lv[c], bufs[c], i);
        }
        buf_add(&b, "%s}", n > 12 ? " ..." : "");
    }
    const char *hname = sfmt(g, "H%d", ++g->ninput);
    emit(g, "%s = %s", hname, b.s);
    free(b.s);
    for (int c = 0; c < nl; c++) {
        if (borrow && h) {
            GROW(g->bufs, g->nbufs, g->capbufs);
            g->bufs[g->nbufs++] = bufs[c];
        } else {
            free(bufs[c]);
        }
    }
    if (!h) {
        bad(g, "making input %s failed: %s", hname, ax_error(g->cx));
        return arr_mk(g, RP_USE, NULL, elt, rank, sh, sh, 0, 0, "ax_use(%s)", hname);
    }
    ax_acc u = ax_use(g->cx, h);
    ax_array_release(h);   /* the use node holds its own reference */
    GROW(g->hosts, g->nhosts, g->caphosts);
    Host *ho = &g->hosts[g->nhosts++];
    ho->arr = h;
    ho->elt = elt;
    ho->rank = rank;
    for (int k = 0; k < rank; k++) ho->sh[k] = sh[k];
    ho->name = hname;
    return arr_mk(g, RP_USE, u, elt, rank, sh, sh, (double)n, 0, "ax_use(%s)", hname);
}

/* An extent in [ne, hi]: 0 and 1 often. */
static int64_t pick_extent(G *g, int ne, int64_t hi)
{
    if (hi < 1) return ne ? 1 : 0;
    int r = rn(g, 100);
    if (r < 8 && !ne) return 0;
    if (r < 22) return 1;
    return rr(g, ne || hi < 2 ? 1 : 2, hi);
}

static const int64_t dim_max[4] = {1, 64, 16, 8};

static Arr *mk_input(G *g, const GT *elt, int rank, int fl, int64_t cap)
{
    int64_t maxe = cap < g->cfg.max_input ? cap : g->cfg.max_input;
    if (maxe < 1) maxe = 1;
    /* Another ax_use of an existing host array. */
    if (ok(g, RP_SHARE_INPUT) && pct(g, 12)) {
        int cand[64], n = 0;
        for (int i = 0; i < g->nhosts && n < 64; i++) {
            Host *h = &g->hosts[i];
            if (h->rank != rank || !gt_eq(h->elt, elt)) continue;
            int64_t sz = 1;
            bool ne = true;
            for (int k = 0; k < rank; k++) sz *= h->sh[k], ne = ne && h->sh[k] > 0;
            if (sz <= cap && (ne || !(fl & NE))) cand[n++] = i;
        }
        if (n) {
            Host *h = &g->hosts[cand[rn(g, n)]];
            count(g, RP_SHARE_INPUT);
            int64_t sz = 1;
            for (int k = 0; k < rank; k++) sz *= h->sh[k];
            ax_acc acc_1 = ax_use(g->cx, h->arr);
            return arr_mk(g, RP_USE, acc_1, elt, rank, h->sh, h->sh, (double)sz, 0, "ax_use(%s)",
                          h->name);
        }
    }
    int64_t sh[AX_MAX_RANK], rem = maxe;
    for (int k = 0; k < rank; k++) {
        int64_t dm = rank <= 3 ? dim_max[rank] : 4;
        int64_t hi = rem < dm ? rem : dm;
        sh[k] = pick_extent(g, fl & NE, hi);
        if (sh[k] > 0) rem /= sh[k];
    }
    return mk_host(g, elt, rank, sh, NULL);
}

/* An extent expression in [ne, maxhi] with its bounds: a constant, a
 * clamped extent or size of a pool array, or a conditional. */
static Ex gen_extent(G *g, int ne, int64_t maxhi, int64_t *lo, int64_t *hi)
{
    if (maxhi < 1) maxhi = 1;
    int r = rn(g, 100);
    if (r >= 65 && r < 85) {
        int cand[256], n = 0;
        for (int i = 0; i < g->nap && n < 256; i++)
            if (arr_visible_ok(g, g->ap[i])) cand[n++] = i;
        if (n) {
            Arr *a = g->ap[cand[rn(g, n)]];
            int k = rn(g, a->rank + 1);
            Ex x;
            int64_t alo, ahi;
            if (k == a->rank) {
                count(g, RP_E_SIZE);
                touch(g, a);
                x = mkex(g, ax_size(a->a), T_I64, sfmt(g, "ax_size(%s)", a->name), 2, a->work);
                alo = (int64_t)sz_lo(a);
                ahi = (int64_t)sz_hi(a);
            } else {
                x = get_ex(g, shape_ex(g, a), k);
                alo = a->lo[k];
                ahi = a->hi[k];
            }
            int64_t c = rr(g, ne ? 1 : 0, maxhi);
            count(g, RP_E_MINMAX);
            x = bin(g, "ax_min", ax_min, x, ci64(g, c), T_I64);
            *lo = alo < c ? alo : c;
            *hi = ahi < c ? ahi : c;
            if (ne) {
                x = bin(g, "ax_max", ax_max, x, ci64(g, 1), T_I64);
                if (*lo < 1) *lo = 1;
                if (*hi < 1) *hi = 1;
            }
            return x;
        }
    }
    if (r >= 85 && ok(g, RP_E_COND)) {
        int64_t c1 = pick_extent(g, ne, maxhi), c2 = pick_extent(g, ne, maxhi);
        Ex c = gen_exp(g, T_BOOL, 1);
        *lo = c1 < c2 ? c1 : c2;
        *hi = c1 < c2 ? c2 : c1;
        return cond_ex(g, c, ci64(g, c1), ci64(g, c2));
    }
    int64_t c = pick_extent(g, ne, maxhi);
    *lo = *hi = c;
    return ci64(g, c);
}

/* A shape of the given rank with at most cap elements. */
static Ex gen_shape(G *g, int rank, int ne, int64_t cap, int64_t *lo, int64_t *hi)
{
    Ex c[AX_MAX_RANK];
    int64_t rem = cap < 1 ? 1 : cap;
    bool big = pct(g, 10);
    for (int k = 0; k < rank; k++) {
        int64_t dm = rank <= 3 ? dim_max[rank] * (big ? 4 : 1) : 4;
        c[k] = gen_extent(g, ne, rem < dm ? rem : dm, &lo[k], &hi[k]);
        if (hi[k] > 0) rem /= hi[k];
        if (rem < 1) rem = 1;
    }
    return mk_index(g, rank, c);
}

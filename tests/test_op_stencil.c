/*
 * The stencils: stencil and stencil2, ranks 1 to 3, with each boundary
 * (clamp, mirror, wrap, a constant), and their forms that see the
 * element's index (stencil_ix, stencil2_ix).
 *
 * Backends (tests/ops/ops.h): the OP_TESTs on every backend, against
 * values computed in plain C here (arrays smaller than the stencil, where
 * mirror reflects repeatedly; empty arrays; f32 and tuple elements;
 * stencil2 over inputs of different shapes); the DIFF_TESTs on the
 * compiling backends, against the interpreter: every boundary on every
 * shape, and a 1000x1000 array.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ops/ops.h"

/* Where boundary `kind` reads index i of an extent n: -1 for "outside"
 * (the constant).  Mirror reflects about the edge element without
 * repeating it (-1 -> 1, n -> n-2), repeatedly if the stencil reaches
 * further than the array (period 2(n-1); an extent of 1 always reads 0). */
static int64_t bnd_index(int64_t i, int64_t n, ax_boundary_kind kind)
{
    if (i >= 0 && i < n) return i;
    switch (kind) {
    case AX_CLAMP: return i < 0 ? 0 : n - 1;
    case AX_MIRROR: {
        if (n == 1) return 0;
        int64_t p = 2 * (n - 1);
        i = ((i % p) + p) % p;
        return i < n ? i : p - i;
    }
    case AX_WRAP: return ((i % n) + n) % n;
    default: return -1;
    }
}

static int64_t sten_w(int k) { return (int64_t)k * k + 1; }

typedef struct StenEnv { int n; } StenEnv;
static ax_exp sten_sum(const ax_exp *xs, void *env)
{
    int n = ((const StenEnv *)env)->n;
    ax_exp s = ax_mul(ax_i64(sten_w(0)), xs[0]);
    for (int k = 1; k < n; k++) s = ax_add(s, ax_mul(ax_i64(sten_w(k)), xs[k]));
    return s;
}

/* Expected weighted sum of the neighbourhood of ix (weights from w0 on). */
static int64_t ref_sten_at(int rank, const int64_t *sh, const int *size, ax_boundary_kind kind, int64_t cval,
                           const int64_t *a, const int64_t *ix, int w0)
{
    int64_t cnt = 1;
    for (int d = 0; d < rank; d++) cnt *= size[d];
    int64_t acc = 0;
    for (int64_t k = 0; k < cnt; k++) {
        int64_t off[3], j[3];
        unravel(k, rank, (const int64_t[]){size[0], rank > 1 ? size[1] : 1, rank > 2 ? size[2] : 1}, off);
        bool outside = false;
        for (int d = 0; d < rank; d++) {
            j[d] = bnd_index(ix[d] + off[d] - size[d] / 2, sh[d], kind);
            if (j[d] < 0) outside = true;
        }
        int64_t v = outside ? cval : a[ravel(rank, sh, j)];
        acc += sten_w(w0 + (int)k) * v;
    }
    return acc;
}

static ax_boundary mk_bnd(ax_boundary_kind k, int64_t cval)
{
    switch (k) {
    case AX_CLAMP: return ax_clamp();
    case AX_MIRROR: return ax_mirror();
    case AX_WRAP: return ax_wrap();
    default: return ax_constant(ax_i64(cval));
    }
}
static const char *const bnd_names[4] = {"clamp", "mirror", "wrap", "constant"};

typedef struct StenCase { int rank; int size[3]; int64_t sh[3]; } StenCase;

OP_TEST(stencil)
{
    static const StenCase cases[] = {
        {1, {3}, {0}}, {1, {3}, {1}}, {1, {3}, {2}}, {1, {3}, {7}}, {1, {3}, {1001}},
        {1, {5}, {2}}, {1, {7}, {3}}, {1, {1}, {4}},
        {2, {3, 3}, {5, 6}}, {2, {3, 3}, {1, 1}}, {2, {3, 3}, {2, 2}}, {2, {3, 3}, {1, 7}}, {2, {3, 3}, {2, 9}},
        {2, {3, 3}, {0, 4}},
        {3, {3, 3, 3}, {3, 4, 5}}, {3, {3, 3, 3}, {1, 2, 3}}, {3, {3, 3, 3}, {2, 2, 2}},
        {2, {5, 3}, {7, 6}}, {2, {5, 3}, {2, 4}}, {2, {5, 3}, {1, 3}}, {2, {5, 3}, {4, 1}},
    };
    const int64_t cval = -7;
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    for (int t = 0; t < NELEM(cases); t++) {
        op_case();
        const StenCase *c = &cases[t];
        int64_t n = shape_size(c->rank, c->sh);
        int64_t *a = alloc_i64(n), *want = alloc_i64(n), ix[3];
        for (int64_t k = 0; k < n; k++) a[k] = val_of(k);
        ax_acc x = use_data(cx, AX_I64, c->rank, c->sh, a);
        StenEnv env = {1};
        for (int d = 0; d < c->rank; d++) env.n *= c->size[d];
        for (int b = 0; b < 4; b++) {
            ax_boundary_kind kind = (ax_boundary_kind)b;
            for (int64_t k = 0; k < n; k++) {
                unravel(k, c->rank, c->sh, ix);
                want[k] = ref_sten_at(c->rank, c->sh, c->size, kind, cval, a, ix, 0);
            }
            ax_array *r = RUN(cx, ax_stencil(sten_sum, &env, c->size, mk_bnd(kind, cval), x));
            if (r && SHAPE_ISV(r, c->rank, c->sh)) {
                Chk ch;
                CHK(&ch, "stencil case %d (rank %d, %d-wide), %s", t, c->rank, c->size[0], bnd_names[b]);
                chk_arr_i(&ch, r, 0, want, n);
                chk_done(&ch);
            }
            ax_array_release(r);
        }
        free(a);
        free(want);
    }
    op_ctx_done(cx);
}

/* A 3x3 average in f32, and a stencil over pairs with a constant pair
 * outside. */
static ax_exp avg9(const ax_exp *xs, void *env)
{
    ax_exp s = xs[0];
    for (int k = 1; k < 9; k++) s = ax_add(s, xs[k]);
    return ax_div(s, ax_f32(9));
}
static ax_exp pair_sten(const ax_exp *xs, void *env)
{
    ax_exp l = ax_cvt(ax_get(xs[0], 0), AX_F64), r = ax_cvt(ax_get(xs[2], 0), AX_F64);
    return ax_add(ax_add(l, ax_mul(ax_f64(10), r)), ax_get(xs[1], 1));
}

OP_TEST(stencil_float_and_tuples)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    float img[20];
    for (int k = 0; k < 20; k++) img[k] = (float)val_of(k) * 0.5f;
    ax_array *r = RUN(cx, ax_stencil(avg9, NULL, (const int[]){3, 3}, ax_clamp(), use_data(cx, AX_F32, 2, SH(4, 5), img)));
    if (r && SHAPE_IS(r, 2, 4, 5)) {
        Chk c;
        CHK(&c, "3x3 average");
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 5; j++) {
                double s = 0;
                for (int di = -1; di <= 1; di++)
                    for (int dj = -1; dj <= 1; dj++)
                        s += img[bnd_index(i + di, 4, AX_CLAMP) * 5 + bnd_index(j + dj, 5, AX_CLAMP)];
                chk_f(&c, i * 5 + j, ((float *)ax_array_data(r, 0))[i * 5 + j], s / 9, 1e-6);
            }
        chk_done(&c);
    }
    ax_array_release(r);
    int32_t p0[6] = {1, 2, 3, 4, 5, 6};
    double p1[6] = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
    const void *bufs[2] = {p0, p1};
    ax_acc pa = use_tuple(cx, TUP(cx, AX_I32, AX_F64), 1, SH(6), bufs);
    r = RUN(cx, ax_stencil(pair_sten, NULL, (const int[]){3}, ax_constant(ax_tuple2(ax_i32(-100), ax_f64(0))), pa));
    if (r && SHAPE_IS(r, 1, 6)) {
        for (int k = 0; k < 6; k++) {
            double l = k > 0 ? p0[k - 1] : -100, rr = k < 5 ? p0[k + 1] : -100;
            CHECK_CLOSE(((double *)ax_array_data(r, 0))[k], l + 10 * rr + p1[k], 0);
        }
    }
    ax_array_release(r);
    op_ctx_done(cx);
}

typedef struct Sten2Case {
    int rank;
    int sa[2], sb[2];
    int64_t sha[2], shb[2], shr[2];
    ax_boundary_kind ba, bb;
} Sten2Case;

OP_TEST(stencil2)
{
    static const Sten2Case cases[] = {
        {1, {3}, {5}, {5}, {7}, {5}, AX_CLAMP, AX_WRAP},
        {1, {3}, {3}, {7}, {4}, {4}, AX_MIRROR, AX_CONSTANT},
        {1, {5}, {1}, {1001}, {1001}, {1001}, AX_WRAP, AX_CLAMP},
        {1, {3}, {3}, {0}, {3}, {0}, AX_CLAMP, AX_CLAMP},
        {2, {3, 3}, {3, 1}, {4, 6}, {5, 3}, {4, 3}, AX_MIRROR, AX_CONSTANT},
        {2, {1, 3}, {3, 3}, {2, 2}, {6, 1}, {2, 1}, AX_CONSTANT, AX_MIRROR},
        {2, {3, 5}, {5, 3}, {3, 8}, {9, 4}, {3, 4}, AX_WRAP, AX_CLAMP},
    };
    const int64_t ca = 11, cb = -3;
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    for (int t = 0; t < NELEM(cases); t++) {
        op_case();
        const Sten2Case *c = &cases[t];
        int64_t na = shape_size(c->rank, c->sha), nb = shape_size(c->rank, c->shb), nr = shape_size(c->rank, c->shr);
        int64_t *a = alloc_i64(na), *b = alloc_i64(nb), *want = alloc_i64(nr), ix[3];
        for (int64_t k = 0; k < na; k++) a[k] = val_of(k);
        for (int64_t k = 0; k < nb; k++) b[k] = val_of(k + 1000) * 3;
        int cnta = c->sa[0] * (c->rank > 1 ? c->sa[1] : 1);
        for (int64_t k = 0; k < nr; k++) {
            unravel(k, c->rank, c->shr, ix);
            want[k] = ref_sten_at(c->rank, c->sha, c->sa, c->ba, ca, a, ix, 0) +
                      ref_sten_at(c->rank, c->shb, c->sb, c->bb, cb, b, ix, cnta);
        }
        StenEnv env = {cnta + c->sb[0] * (c->rank > 1 ? c->sb[1] : 1)};
        ax_array *r = RUN(cx, ax_stencil2(sten_sum, &env, c->sa, mk_bnd(c->ba, ca), use_data(cx, AX_I64, c->rank, c->sha, a),
                                          c->sb, mk_bnd(c->bb, cb), use_data(cx, AX_I64, c->rank, c->shb, b)));
        if (r && SHAPE_ISV(r, c->rank, c->shr)) {
            Chk ch;
            CHK(&ch, "stencil2 case %d (%s, %s)", t, bnd_names[c->ba], bnd_names[c->bb]);
            chk_arr_i(&ch, r, 0, want, nr);
            chk_done(&ch);
        }
        ax_array_release(r);
        free(a);
        free(b);
        free(want);
    }
    op_ctx_done(cx);
}

/* ax_stencil_ix: the weighted sum plus a term of the element's index,
 * and an interior update that keeps the border (one pass: Jacobi's
 * sweep), on every shape and boundary of the stencil cases. */
static int64_t ix_term(int rank, const int64_t *ix)
{
    int64_t t = 0;
    for (int d = 0; d < rank; d++) t += (int64_t)(d + 1) * 1000 * (ix[d] + 1);
    return t;
}
typedef struct StenIxEnv { int n, rank; int64_t sh[3]; } StenIxEnv;
static ax_exp sten_ix_sum(ax_exp ix, const ax_exp *xs, void *env)
{
    const StenIxEnv *e = env;
    StenEnv se = {e->n};
    ax_exp s = sten_sum(xs, &se);
    for (int d = 0; d < e->rank; d++)
        s = ax_add(s, ax_mul(ax_i64((int64_t)(d + 1) * 1000), ax_add(ax_index_get(ix, d), ax_i64(1))));
    return s;
}
static ax_exp sten_ix_interior(ax_exp ix, const ax_exp *xs, void *env)
{
    const StenIxEnv *e = env;
    StenEnv se = {e->n};
    ax_exp border = ax_bool(false);
    for (int d = 0; d < e->rank; d++) {
        ax_exp i = ax_index_get(ix, d);
        border = ax_or(border, ax_or(ax_eq(i, ax_i64(0)), ax_eq(i, ax_i64(e->sh[d] - 1))));
    }
    return ax_cond(border, xs[e->n / 2], sten_sum(xs, &se));
}

OP_TEST(stencil_ix)
{
    static const StenCase cases[] = {
        {1, {3}, {0}}, {1, {3}, {1}}, {1, {3}, {7}}, {1, {5}, {2}}, {1, {3}, {1001}},
        {2, {3, 3}, {5, 6}}, {2, {3, 3}, {1, 1}}, {2, {3, 3}, {2, 9}}, {2, {5, 3}, {7, 6}}, {2, {3, 3}, {0, 4}},
        {3, {3, 3, 3}, {3, 4, 5}}, {3, {3, 3, 3}, {1, 2, 3}},
    };
    const int64_t cval = -7;
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    for (int t = 0; t < NELEM(cases); t++) {
        op_case();
        const StenCase *c = &cases[t];
        int64_t n = shape_size(c->rank, c->sh);
        int64_t *a = alloc_i64(n), *want = alloc_i64(n), *keep = alloc_i64(n), ix[3];
        for (int64_t k = 0; k < n; k++) a[k] = val_of(k);
        ax_acc x = use_data(cx, AX_I64, c->rank, c->sh, a);
        StenIxEnv env = {1, c->rank, {0, 0, 0}};
        for (int d = 0; d < c->rank; d++) env.n *= c->size[d], env.sh[d] = c->sh[d];
        for (int b = 0; b < 4; b++) {
            ax_boundary_kind kind = (ax_boundary_kind)b;
            for (int64_t k = 0; k < n; k++) {
                unravel(k, c->rank, c->sh, ix);
                int64_t s = ref_sten_at(c->rank, c->sh, c->size, kind, cval, a, ix, 0);
                bool border = false;
                for (int d = 0; d < c->rank; d++) border |= ix[d] == 0 || ix[d] == c->sh[d] - 1;
                want[k] = s + ix_term(c->rank, ix);
                keep[k] = border ? a[k] : s;
            }
            ax_array *r = RUN(cx, ax_stencil_ix(sten_ix_sum, &env, c->size, mk_bnd(kind, cval), x));
            ax_array *r2 = RUN(cx, ax_stencil_ix(sten_ix_interior, &env, c->size, mk_bnd(kind, cval), x));
            if (r && SHAPE_ISV(r, c->rank, c->sh)) {
                Chk ch;
                CHK(&ch, "stencil_ix case %d (rank %d, %d-wide), %s", t, c->rank, c->size[0], bnd_names[b]);
                chk_arr_i(&ch, r, 0, want, n);
                chk_done(&ch);
            }
            if (r2 && SHAPE_ISV(r2, c->rank, c->sh)) {
                Chk ch;
                CHK(&ch, "stencil_ix interior case %d (rank %d), %s", t, c->rank, bnd_names[b]);
                chk_arr_i(&ch, r2, 0, keep, n);
                chk_done(&ch);
            }
            ax_array_release(r);
            ax_array_release(r2);
        }
        free(a);
        free(want);
        free(keep);
    }
    op_ctx_done(cx);
}

/* A stencil_ix function reading another array at its own index (the
 * edges of Jacobi's sweep): right when that array covers the result, and
 * an index error, as the interpreter reports it, when it is smaller (the
 * CPU reads it unchecked once its extent is known to fit). */
static ax_exp sten_ix_other(ax_exp ix, const ax_exp *xs, void *env)
{
    ax_acc other = *(const ax_acc *)env;
    return ax_add(ax_mul(xs[1], ax_i64(10)), ax_at(other, ix));
}

OP_TEST(stencil_ix_reads_at_its_index)
{
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    int64_t a[35], b[35], want[35];
    for (int k = 0; k < 35; k++) a[k] = val_of(k), b[k] = val_of(k + 50);
    for (int k = 0; k < 35; k++) want[k] = a[k] * 10 + b[k];
    ax_acc xa = use_data(cx, AX_I64, 2, SH(5, 7), a);
    ax_acc xb = use_data(cx, AX_I64, 2, SH(5, 7), b), small = use_data(cx, AX_I64, 2, SH(5, 6), b);
    ax_array *r = RUN(cx, ax_stencil_ix(sten_ix_other, &xb, (const int[]){1, 3}, ax_clamp(), xa));
    if (r && SHAPE_IS(r, 2, 5, 7)) {
        Chk ch;
        CHK(&ch, "stencil_ix reading another array at its index");
        chk_arr_i(&ch, r, 0, want, 35);
        chk_done(&ch);
    }
    ax_array_release(r);
    EXPECT_FAIL(cx, ax_stencil_ix(sten_ix_other, &small, (const int[]){1, 3}, ax_clamp(), xa), AX_ERR_INDEX);
    op_ctx_done(cx);
}

/* A stencil_ix function that updates a band and keeps the rest from a
 * third array (the suites' Jacobi sweeps), its band given by comparisons
 * of the index with constants and with another array's extent, in every
 * orientation (i >= 1, n - 1 > i, j <= n - 2, j < n - 1): where that
 * extent is the grid's the band is the whole interior (the CPU then runs
 * a copy of its interior loop in which the comparisons are known to
 * hold, cpu/stencil.c), where it is smaller the band ends inside the
 * interior, row by row and along the rows. */
typedef struct Band { int n, rank; ax_acc lim, edge; } Band;
static ax_exp sten_band(ax_exp ix, const ax_exp *xs, void *env)
{
    const Band *b = env;
    StenEnv se = {b->n};
    ax_exp sh = ax_shape(b->lim), in = ax_bool(true);
    for (int d = 0; d < b->rank; d++) {
        ax_exp i = ax_index_get(ix, d), n = ax_index_get(sh, d);
        ax_exp lo = d % 2 ? ax_le(ax_i64(1), i) : ax_ge(i, ax_i64(1));
        ax_exp hi = d == b->rank - 1 ? ax_le(i, ax_sub(n, ax_i64(2))) : d % 2 ? ax_lt(i, ax_sub(n, ax_i64(1)))
                                                                           : ax_gt(ax_sub(n, ax_i64(1)), i);
        in = ax_and(in, ax_and(lo, hi));
    }
    return ax_cond(in, sten_sum(xs, &se), ax_at(b->edge, ix));
}

OP_TEST(stencil_ix_band_from_extents)
{
    static const struct { int rank; int64_t sh[3], lim[3]; } cases[] = {
        {2, {7, 9}, {7, 9}}, {2, {7, 9}, {5, 6}}, {2, {7, 40}, {7, 33}}, {2, {2, 2}, {2, 2}},
        {3, {4, 5, 6}, {4, 5, 6}}, {3, {4, 5, 6}, {3, 5, 4}}, {1, {20}, {20}}, {1, {20}, {11}},
    };
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    for (int t = 0; t < NELEM(cases); t++) {
        op_case();
        int r = cases[t].rank;
        const int64_t *sh = cases[t].sh, *lim = cases[t].lim;
        int64_t n = shape_size(r, sh), ix[3];
        int64_t *a = alloc_i64(n), *e = alloc_i64(n), *want = alloc_i64(n), *z = alloc_i64(shape_size(r, lim));
        for (int64_t k = 0; k < n; k++) a[k] = val_of(k), e[k] = val_of(k + 77);
        int size[3] = {3, 3, 3};
        Band b = {1, r, use_data(cx, AX_I64, r, lim, z), use_data(cx, AX_I64, r, sh, e)};
        for (int d = 0; d < r; d++) b.n *= 3;
        for (int64_t k = 0; k < n; k++) {
            unravel(k, r, sh, ix);
            bool in = true;
            for (int d = 0; d < r; d++) in &= ix[d] >= 1 && ix[d] <= lim[d] - 2;
            want[k] = in ? ref_sten_at(r, sh, size, AX_CLAMP, 0, a, ix, 0) : e[k];
        }
        ax_array *res = RUN(cx, ax_stencil_ix(sten_band, &b, size, ax_clamp(), use_data(cx, AX_I64, r, sh, a)));
        if (res && SHAPE_ISV(res, r, sh)) {
            Chk ch;
            CHK(&ch, "stencil_ix band case %d (rank %d)", t, r);
            chk_arr_i(&ch, res, 0, want, n);
            chk_done(&ch);
        }
        ax_array_release(res);
        free(a);
        free(e);
        free(want);
        free(z);
    }
    op_ctx_done(cx);
}

/* ax_stencil2_ix: both neighbourhoods, then the index. */
OP_TEST(stencil2_ix)
{
    const int64_t sha[2] = {4, 6}, shb[2] = {5, 3}, shr[2] = {4, 3};
    const int sa[2] = {3, 3}, sb[2] = {3, 1};
    ax_ctx *cx = op_ctx(be);
    REQUIRE(cx);
    int64_t a[24], b[15], want[12], ix[2];
    for (int k = 0; k < 24; k++) a[k] = val_of(k);
    for (int k = 0; k < 15; k++) b[k] = val_of(k + 100) * 3;
    for (int64_t k = 0; k < 12; k++) {
        unravel(k, 2, shr, ix);
        want[k] = ref_sten_at(2, sha, sa, AX_MIRROR, 0, a, ix, 0) + ref_sten_at(2, shb, sb, AX_WRAP, 0, b, ix, 9) +
                  ix_term(2, ix);
    }
    StenIxEnv env = {12, 2, {4, 3, 0}};
    ax_array *r = RUN(cx, ax_stencil2_ix(sten_ix_sum, &env, sa, ax_mirror(), use_data(cx, AX_I64, 2, sha, a), sb,
                                         ax_wrap(), use_data(cx, AX_I64, 2, shb, b)));
    if (r && SHAPE_ISV(r, 2, shr)) {
        Chk ch;
        CHK(&ch, "stencil2_ix");
        chk_arr_i(&ch, r, 0, want, 12);
        chk_done(&ch);
    }
    ax_array_release(r);
    op_ctx_done(cx);
}

/* ================================================================ against the interpreter */

static ax_exp s_sum(const ax_exp *xs, void *env)
{
    intptr_t n = (intptr_t)env;
    ax_exp s = xs[0];
    for (intptr_t k = 1; k < n; k++) s = ax_add(ax_mul(s, ax_i32(3)), xs[k]);
    return s;
}
static ax_exp s_tup(const ax_exp *xs, void *env)
{
    /* 3x3 of (f32, i16) */
    ax_exp a = ax_get(xs[0], 0), b = ax_cvt(ax_get(xs[4], 1), AX_F32);
    for (int k = 1; k < 9; k++) a = ax_add(a, ax_mul(ax_get(xs[k], 0), ax_f32((float)k)));
    return ax_tuple2(ax_add(a, b), ax_max(ax_get(xs[8], 1), ax_get(xs[2], 1)));
}
static ax_exp s_two(const ax_exp *xs, void *env)
{
    /* stencil2: 3 of a (i32), then 3x... of b: env = count of a's */
    intptr_t na = (intptr_t)env;
    ax_exp s = ax_i32(0);
    for (intptr_t k = 0; k < na; k++) s = ax_add(ax_mul(s, ax_i32(5)), xs[k]);
    return ax_sub(s, ax_cvt(xs[na], AX_I32));
}

static ax_boundary bnd(ax_ctx *cx, int k, ax_exp c)
{
    switch (k) {
    case 0: return ax_clamp();
    case 1: return ax_mirror();
    case 2: return ax_wrap();
    default: return ax_constant(c);
    }
}

static ax_acc b_sten(ax_ctx *cx, const void *e)
{
    const Env *v = e;
    int b = v->which % 4, kind = v->which / 4;
    int r = v->rank;
    if (kind == 0) {
        int size[3] = {3, 5, 3};
        int sz[3], n = 1;
        for (int d = 0; d < r; d++) n *= (sz[d] = size[3 - r + d]);
        return ax_stencil(s_sum, (void *)(intptr_t)n, sz, bnd(cx, b, ax_i32(-7)), input(cx, AX_I32, r, v->sh, 100, 50));
    }
    if (kind == 1 && r == 2) {
        return ax_stencil(s_tup, NULL, (const int[]){3, 3}, bnd(cx, b, ax_tuple2(ax_f32(0.5f), ax_i16(9))),
                          input_n(cx, 2, (const ax_scalar[]){AX_F32, AX_I16}, 2, v->sh, 101, 50));
    }
    /* stencil2 over inputs of different shapes */
    int64_t sh2[3];
    for (int d = 0; d < r; d++) sh2[d] = v->sh[d] + (d == 0 ? 2 : 0);
    int za[3] = {1, 1, 3}, zb[3] = {1, 3, 1};
    int na = 1;
    for (int d = 0; d < r; d++) na *= za[3 - r + d];
    return ax_stencil2(s_two, (void *)(intptr_t)na, za + 3 - r, bnd(cx, b, ax_i32(4)), input(cx, AX_I32, r, v->sh, 102, 9),
                       zb + 3 - r, bnd(cx, 3 - b, ax_u8(200)), input(cx, AX_U8, r, sh2, 103, 100));
}

static bool sten_skip(const void *env, int w) { return w / 4 == 1 && ((const Env *)env)->rank != 2; }
static ax_acc b_sten_all(ax_ctx *cx, const void *e) { return all_of(cx, e, b_sten, 12, sten_skip); }

DIFF_TEST(stencils_every_boundary)
{
    static const Shp sten_shapes[] = {
        {1, {1}}, {1, {2}}, {1, {5}}, {1, {100003}}, {2, {1, 1}}, {2, {2, 3}}, {2, {17, 9}},
        {2, {300, 200}}, {3, {1, 2, 1}}, {3, {6, 7, 8}}, {1, {0}}, {2, {0, 4}},
    };
    for (int s = 0; s < (int)(sizeof sten_shapes / sizeof *sten_shapes); s++) {
        Env e = {sten_shapes[s].rank, sten_shapes[s].sh, 0};
        char what[64];
        snprintf(what, sizeof what, "stencils, shape %d", s);
        SAME(what, b_sten_all, &e, 0);
    }
}

DIFF_TEST(stencil_large_arrays)
{
    if (ops_small()) {
        printf("skip stencil_large_arrays: AXLE_TEST_SMALL\n");
        return;
    }
    const int64_t sq[2] = {1000, 1000};
    Env s2 = {2, sq, 1};
    SAME("stencil 1000x1000 mirror", b_sten, &s2, 0);
}

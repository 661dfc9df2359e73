/*
 * A generator of random well-typed axle programs (see randprog.h).
 *
 * How it works.  randprog_build picks the result types and calls gen_arr,
 * which builds an array term of a wanted element type and rank top-down:
 * it either reuses a term from the array pool (sharing), or picks an
 * operation that can produce that type, generates the operands it needs
 * (recursively) and calls the builder.  Scalar functions are C callbacks
 * (cb1, cb2, cb3, cbv, and the array functions of ax_awhile) whose env is a
 * Lam: the generator state plus what the body must be; the callback pushes
 * its parameters into the scalar pool and generates the body with
 * gen_exp.
 *
 * Shapes.  Every array term carries bounds on its extents (lo..hi per
 * dimension; exact when lo == hi).  They are what keeps programs small
 * (every array has at most cfg.max_elems elements) and fault-free: fold1
 * and slice get operands whose extents are at least 1 (the NE flag), reads
 * of arrays that may be empty are guarded by a conditional, reshapes to a
 * constant shape happen only when the size is known exactly.
 *
 * Cost.  With sharing recovery off, axle unfolds the graph into a tree, so
 * a term used twice is computed twice, and every read of an array from
 * scalar code (ax_at, ax_shape, ax_size) copies that array's whole term.
 * The generator keeps estimates of the unfolded program's work (elements
 * times the size of the per-element code, summed over every copy) and IR
 * size, and stops growing the program when either passes its limit
 * (cfg.max_work, cfg.max_unfolded); shapes known exactly are read as
 * constants from big terms, and operations that would read a big term's
 * shape many times are not chosen.
 *
 * Determinism.  Every random choice comes from the seed in a fixed order
 * (no two random draws in one C expression whose evaluation order is
 * unspecified), so gcc and clang builds give the same programs.
 *
 * Description.  Every builder call is also written as text (the array
 * terms as A1, A2, ..., lambda parameters as x1, x2, ..., scalar terms
 * that are shared as e1 (inside a callback) or c1 (closed, at array
 * level)), so a failure report shows the program.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "randprog.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct RandProg G;

/* ================================================================ basics */

static void oom(void)
{
    fprintf(stderr, "randprog: out of memory\n");
    abort();
}

#define GROW(p, n, cap)                                                   \
    do {                                                                  \
        if ((n) >= (cap)) {                                               \
            (cap) = (cap) ? 2 * (cap) : 16;                               \
            void *np_ = realloc((p), sizeof *(p) * (size_t)(cap));        \
            if (!np_) oom();                                              \
            (p) = np_;                                                    \
        }                                                                 \
    } while (0)

/* Element types of the generator (mirrors ax_type, but context-free and
 * comparable before any context has seen them). */
enum { GK_SCALAR, GK_TUPLE, GK_INDEX };
typedef struct GT {
    int kind;
    ax_scalar s;              /* GK_SCALAR */
    int n;                    /* GK_TUPLE: components; GK_INDEX: rank */
    const struct GT *el[3];   /* GK_TUPLE */
} GT;

#define GSC(s) [s] = {GK_SCALAR, s, 0, {0}}
static const GT GS[AX_NSCALAR] = {
    GSC(AX_BOOL), GSC(AX_I8), GSC(AX_I16), GSC(AX_I32), GSC(AX_I64), GSC(AX_U8),
    GSC(AX_U16), GSC(AX_U32), GSC(AX_U64), GSC(AX_F32), GSC(AX_F64),
};
static const GT GI[AX_MAX_RANK + 1] = {
    {GK_INDEX, AX_I64, 0, {0}}, {GK_INDEX, AX_I64, 1, {0}}, {GK_INDEX, AX_I64, 2, {0}},
    {GK_INDEX, AX_I64, 3, {0}}, {GK_INDEX, AX_I64, 4, {0}}, {GK_INDEX, AX_I64, 5, {0}},
    {GK_INDEX, AX_I64, 6, {0}}, {GK_INDEX, AX_I64, 7, {0}}, {GK_INDEX, AX_I64, 8, {0}},
};
#define T_BOOL (&GS[AX_BOOL])
#define T_I32 (&GS[AX_I32])
#define T_I64 (&GS[AX_I64])

/* A scalar expression with its type, its text and its cost: the number of
 * nodes evaluated per evaluation in the unfolded program (cost) and the
 * work of the arrays it reads (awork, done once per consumer). */
typedef struct Ex {
    ax_exp e;
    const GT *t;
    const char *txt;
    double cost, awork;
    double un;   /* IR nodes when unfolded, reads included (0: unknown, use cost) */
} Ex;

/* An entry of the scalar pool: a lambda parameter or a named (shared)
 * term, visible to the expressions generated while it is in scope. */
typedef struct SEnt {
    Ex x;
    int lvl;       /* lambda nesting level it was made at (0: closed) */
    int uses;
    bool param;
} SEnt;

/* An array term with bounds on its extents. */
typedef struct Arr {
    ax_acc a;
    const GT *elt;
    int rank;
    int64_t lo[AX_MAX_RANK], hi[AX_MAX_RANK];
    const char *name;
    double work;     /* unfolded work of the whole term */
    double unodes;   /* IR nodes of the term unfolded (an estimate) */
} Arr;

/* A host array made as an input (for reuse by a second ax_use). */
typedef struct Host {
    ax_array *arr;   /* not owned: the first use node holds the reference */
    const GT *elt;
    int rank;
    int64_t sh[AX_MAX_RANK];
    const char *name;
} Host;

typedef struct Buf {
    char *s;
    size_t n, cap;
} Buf;

typedef struct Blk {
    struct Blk *next;
    size_t used, cap;
    max_align_t data[];
} Blk;

enum { MAXBLK = 128 };
enum { NE = 1 };   /* gen_arr flag: every extent at least 1 */

struct RandProg {
    ax_ctx *cx;
    RandProgConfig cfg;
    uint64_t seed, rs;
    Blk *mem;
    Arr **ap;
    int nap, capap;
    SEnt *sp;
    int nsp, capsp;
    int lvl;
    Buf blk[MAXBLK];
    int nblk;
    char *desc;
    Host *hosts;
    int nhosts, caphosts;
    void **bufs;
    int nbufs, capbufs;
    int counts[RP_NOPS];
    int nnodes, narr, nexp, nvar, nclosed, nstate, ninput;
    double work;
    double unodes, cur_u0;   /* unfolded IR nodes so far; at the start of the current operation */
    int nres;
    bool bad;
    char badmsg[1024];
};

static const char *const op_names[RP_NOPS] = {
    "use", "unit", "generate", "map", "zip_with", "zip_with3", "backpermute", "permute",
    "replicate", "slice", "reshape", "flatten", "fold", "fold1", "fold_all", "fold_seg",
    "fold1_seg", "scanl", "scanl1", "scanr", "scanr1", "scanl_ex", "scanr_ex", "filter",
    "stencil", "stencil2", "acond", "awhile", "atuple", "aget", "siblings", "filterfold", "loopmap",
    "loopfilter", "epilogue",
    "e_arith", "e_minmax", "e_intdiv", "e_floatdiv", "e_bits", "e_floatfn", "e_round", "e_cmp",
    "e_logic", "e_cvt", "e_bitcast", "e_cond", "e_tuple", "e_proj", "e_at", "e_at_linear",
    "e_shape", "e_size", "e_while", "e_const",
    "share_acc", "share_exp", "share_closed", "share_input",
};

_Static_assert(sizeof op_names / sizeof *op_names == RP_NOPS, "op_names");
_Static_assert(RP_NOPS < 64, "RandOp fits a mask");

const char *randprog_op_name(int op) { return op >= 0 && op < RP_NOPS ? op_names[op] : "?"; }

void randprog_default_config(RandProgConfig *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->max_depth = 6;
    cfg->max_exp_depth = 4;
    cfg->max_nodes = 80;
    cfg->max_rank = 3;
    cfg->max_results = 3;
    cfg->max_elems = 2048;
    cfg->max_input = 96;
    cfg->max_stencil = 27;
    cfg->max_work = 1000000;
    cfg->max_unfolded = 10000;
    cfg->ops = 0;
    cfg->share_pct = 30;
    cfg->float_reassoc = true;
    cfg->special_floats = true;
    cfg->faults = false;
}

/* ---------------------------------------------------------------- memory */

static void *galloc(G *g, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!g->mem || g->mem->used + n > g->mem->cap) {
        size_t cap = n > 65536 ? n : 65536;
        Blk *b = calloc(1, sizeof *b + cap);
        if (!b) oom();
        b->cap = cap;
        b->next = g->mem;
        g->mem = b;
    }
    void *p = (char *)g->mem->data + g->mem->used;
    g->mem->used += n;
    return p;
}

static char *sfmt(G *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *sfmt(G *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = galloc(g, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static void buf_vadd(Buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return;
    if (b->n + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap * 2 > b->n + (size_t)n + 256 ? b->cap * 2 : b->n + (size_t)n + 256;
        char *s = realloc(b->s, cap);
        if (!s) oom();
        b->s = s;
        b->cap = cap;
    }
    vsnprintf(b->s + b->n, (size_t)n + 1, fmt, ap);
    b->n += (size_t)n;
}

static void buf_add(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_add(Buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vadd(b, fmt, ap);
    va_end(ap);
}

/* A statement of the description, in the innermost open block. */
static void emit(G *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(G *g, const char *fmt, ...)
{
    Buf *b = &g->blk[g->nblk - 1];
    buf_add(b, "%*s", 4 * (g->nblk - 1), "");
    va_list ap;
    va_start(ap, fmt);
    buf_vadd(b, fmt, ap);
    va_end(ap);
    buf_add(b, "\n");
}

static void blk_push(G *g)
{
    if (g->nblk >= MAXBLK) {
        fprintf(stderr, "randprog: nesting too deep\n");
        abort();
    }
    memset(&g->blk[g->nblk], 0, sizeof g->blk[0]);
    g->nblk++;
}

static const char *blk_pop(G *g)
{
    Buf *b = &g->blk[--g->nblk];
    char *s = sfmt(g, "%s", b->s ? b->s : "");
    free(b->s);
    memset(b, 0, sizeof *b);
    return s;
}

static void bad(G *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(G *g, const char *fmt, ...)
{
    if (g->bad) return;
    g->bad = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->badmsg, sizeof g->badmsg, fmt, ap);
    va_end(ap);
    if (g->nblk > 0) emit(g, "!!! %s", g->badmsg);
}

/* ---------------------------------------------------------------- random */

static uint64_t rnd(G *g)
{
    uint64_t z = (g->rs += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static int rn(G *g, int n) { return n <= 1 ? 0 : (int)(rnd(g) % (uint64_t)n); }
static bool pct(G *g, int p) { return rn(g, 100) < p; }
static int64_t rr(G *g, int64_t lo, int64_t hi)   /* inclusive */
{
    if (hi <= lo) return lo;
    return lo + (int64_t)(rnd(g) % (uint64_t)(hi - lo + 1));
}

static bool ok(G *g, int op) { return (g->cfg.ops & RP_BIT(op)) != 0; }
static void count(G *g, int op) { g->counts[op]++; }

/* ================================================================ types */

static bool s_int(ax_scalar s) { return s >= AX_I8 && s <= AX_U64; }
static bool s_sint(ax_scalar s) { return s >= AX_I8 && s <= AX_I64; }
static bool s_float(ax_scalar s) { return s == AX_F32 || s == AX_F64; }
static bool s_num(ax_scalar s) { return s != AX_BOOL; }
static bool t_sc(const GT *t) { return t->kind == GK_SCALAR; }
static bool t_int(const GT *t) { return t_sc(t) && s_int(t->s); }
static bool t_float(const GT *t) { return t_sc(t) && s_float(t->s); }
static bool t_num(const GT *t) { return t_sc(t) && s_num(t->s); }

static bool gt_eq(const GT *a, const GT *b)
{
    if (a == b) return true;
    if (a->kind != b->kind) return false;
    switch (a->kind) {
    case GK_SCALAR: return a->s == b->s;
    case GK_INDEX: return a->n == b->n;
    default:
        if (a->n != b->n) return false;
        for (int i = 0; i < a->n; i++)
            if (!gt_eq(a->el[i], b->el[i])) return false;
        return true;
    }
}

static void gt_str_(const GT *t, Buf *b)
{
    switch (t->kind) {
    case GK_SCALAR: buf_add(b, "%s", ax_scalar_name(t->s)); break;
    case GK_INDEX: buf_add(b, "ix%d", t->n); break;
    default:
        buf_add(b, "(");
        for (int i = 0; i < t->n; i++) {
            if (i) buf_add(b, ", ");
            gt_str_(t->el[i], b);
        }
        buf_add(b, ")");
    }
}

static const char *gt_str(G *g, const GT *t)
{
    Buf b = {0};
    gt_str_(t, &b);
    char *s = sfmt(g, "%s", b.s ? b.s : "");
    free(b.s);
    return s;
}

/* Scalar leaves of an element type, left to right. */
static int gt_leaves(const GT *t, ax_scalar *out)
{
    if (t->kind == GK_SCALAR) { out[0] = t->s; return 1; }
    if (t->kind == GK_INDEX) {
        for (int i = 0; i < t->n; i++) out[i] = AX_I64;
        return t->n;
    }
    int n = 0;
    for (int i = 0; i < t->n; i++) n += gt_leaves(t->el[i], out + n);
    return n;
}

static const ax_type *gt_ax(G *g, const GT *t)
{
    if (t->kind == GK_SCALAR) return ax_type_scalar(t->s);
    if (t->kind == GK_INDEX) return ax_type_index(g->cx, t->n);
    const ax_type *el[3];
    for (int i = 0; i < t->n; i++) el[i] = gt_ax(g, t->el[i]);
    return ax_type_tuple(g->cx, t->n, el);
}

static const GT *mk_tuple_t(G *g, int n, const GT *const *el)
{
    GT *t = galloc(g, sizeof *t);
    t->kind = GK_TUPLE;
    t->n = n;
    for (int i = 0; i < n; i++) t->el[i] = el[i];
    return t;
}

static const GT *rand_scalar_t(G *g)
{
    static const struct { ax_scalar s; int w; } tab[] = {
        {AX_BOOL, 10}, {AX_I8, 3}, {AX_I16, 3}, {AX_I32, 24}, {AX_I64, 12}, {AX_U8, 4},
        {AX_U16, 3}, {AX_U32, 5}, {AX_U64, 4}, {AX_F32, 18}, {AX_F64, 14},
    };
    int r = rn(g, 100);
    for (size_t i = 0; i < sizeof tab / sizeof *tab; i++) {
        if (r < tab[i].w) return &GS[tab[i].s];
        r -= tab[i].w;
    }
    return T_I32;
}

static const GT *rand_elt_t(G *g)
{
    int r = rn(g, 100);
    if (r < 80) return rand_scalar_t(g);
    if (r < 83) return &GI[1 + rn(g, 2)];   /* arrays of indices */
    const GT *el[3];
    if (r < 95) {
        el[0] = rand_scalar_t(g);
        el[1] = rand_scalar_t(g);
        return mk_tuple_t(g, 2, el);
    }
    if (r < 98) {
        for (int i = 0; i < 3; i++) el[i] = rand_scalar_t(g);
        return mk_tuple_t(g, 3, el);
    }
    const GT *in[2];
    in[0] = rand_scalar_t(g);
    in[1] = rand_scalar_t(g);
    el[0] = mk_tuple_t(g, 2, in);
    el[1] = rand_scalar_t(g);
    return mk_tuple_t(g, 2, el);
}

/* A numeric type of the same size as s, other than s (for ax_bitcast). */
static ax_scalar bitcast_partner(G *g, ax_scalar s)
{
    switch (s) {
    case AX_I8: return AX_U8;
    case AX_U8: return AX_I8;
    case AX_I16: return AX_U16;
    case AX_U16: return AX_I16;
    case AX_I32: return pct(g, 50) ? AX_U32 : AX_F32;
    case AX_U32: return pct(g, 50) ? AX_I32 : AX_F32;
    case AX_F32: return pct(g, 50) ? AX_I32 : AX_U32;
    case AX_I64: return pct(g, 50) ? AX_U64 : AX_F64;
    case AX_U64: return pct(g, 50) ? AX_I64 : AX_F64;
    case AX_F64: return pct(g, 50) ? AX_I64 : AX_U64;
    default: return AX_I32;
    }
}

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
        Arr *dd = l->b;
        Ex c[AX_MAX_RANK];
        for (int k = 0; k < dd->rank; k++) {
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

/* ax_while takes one env for its two callbacks. */
typedef struct LamPair {
    Lam c, b;
} LamPair;
static ax_exp cbw_cond(ax_exp x, void *env) { return lam_run(&((LamPair *)env)->c, &x); }
static ax_exp cbw_body(ax_exp x, void *env) { return lam_run(&((LamPair *)env)->b, &x); }

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
 * vectors, N-body's shape (a fold of which runs across rows: cg_skel.c),
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

/* Sibling reductions (src/opt/plan.c merges them into one pass): two
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

/* A fold of a filter (maybe through a map; src/opt/plan.c fuses the
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
 * and of the map: src/opt/plan.c makes them one loop (a collect and
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
 * folds of the first: src/opt/plan.c makes one loop of the filters and
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

/* A map over a fold's result (rows of a matrix), a scan's or a
 * stencil's: src/opt/plan.c applies it as the consumer stores its
 * result (an epilogue). */
static Arr *op_stencil1(G *g, const GT *elt, int rank, int d, int fl, int64_t cap);
static Arr *op_epilogue(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    Arr *c;
    int k = rn(g, 3);
    if (k == 0 && rank >= 1) {
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

static Arr *op_foldseg(G *g, const GT *elt, int rank, int d, int fl, int64_t cap, bool one)
{
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

static Arr *op_foldseg0(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_foldseg(g, elt, rank, d, fl, cap, false); }
static Arr *op_fold1seg(G *g, const GT *elt, int rank, int d, int fl, int64_t cap) { return op_foldseg(g, elt, rank, d, fl, cap, true); }

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
    Lam l;
    lam_init(&l, g, LK_STENCIL, cnt[0] + (n > 1 ? cnt[1] : 0), elt);
    l.nsten = cnt[0];
    for (int i = 0, p = 0; i < n; i++)
        for (int j = 0; j < cnt[i]; j++) l.pt[p++] = as[i]->elt;
    Arr tmp;
    tmp.rank = rank;
    intersect(&tmp, as, n);
    ax_acc r = n == 1 ? ax_stencil(cbv, &l, size[0], bd[0], as[0]->a)
                      : ax_stencil2(cbv, &l, size[0], bd[0], as[0]->a, size[1], bd[1], as[1]->a);
    double own = elems(&tmp) * (l.cost + l.np + 1), kids = l.awork + val[0].awork + val[1].awork;
    for (int i = 0; i < n; i++) kids += as[i]->work;
    if (n == 1)
        return arr_mk(g, RP_STENCIL, r, elt, rank, tmp.lo, tmp.hi, own,
                      kids, "ax_stencil(%s, %s, %s, %s)", ltxt(&l), size_txt(g, rank, size[0]), btxt[0], as[0]->name);
    return arr_mk(g, RP_STENCIL2, r, elt, rank, tmp.lo,
                  tmp.hi, own, kids, "ax_stencil2(%s, %s, %s, %s, %s, %s, %s)", ltxt(&l),
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

/* ---------------------------------------------------------------- choosing */

typedef Arr *(*OpGen)(G *, const GT *, int, int, int, int64_t);
static const struct {
    int op, w;
    OpGen fn;
} op_table[] = {
    {RP_USE, 2, op_use}, {RP_UNIT, 2, op_unit}, {RP_GENERATE, 4, op_generate}, {RP_MAP, 8, op_map},
    {RP_ZIPWITH, 6, op_zip2}, {RP_ZIPWITH3, 2, op_zip3}, {RP_BACKPERMUTE, 5, op_backpermute},
    {RP_PERMUTE, 3, op_permute}, {RP_REPLICATE, 3, op_replicate}, {RP_SLICE, 3, op_slice},
    {RP_RESHAPE, 3, op_reshape}, {RP_FLATTEN, 3, op_flatten}, {RP_FOLD, 4, op_fold0}, {RP_FOLD1, 2, op_fold1},
    {RP_FOLDALL, 3, op_foldall}, {RP_FOLDSEG, 2, op_foldseg0}, {RP_FOLD1SEG, 2, op_fold1seg},
    {RP_SCANL, 2, op_scanl}, {RP_SCANL1, 2, op_scanl1}, {RP_SCANR, 2, op_scanr}, {RP_SCANR1, 2, op_scanr1},
    {RP_SCANLEX, 2, op_scanlex}, {RP_SCANREX, 2, op_scanrex}, {RP_FILTER, 4, op_filter},
    {RP_STENCIL, 3, op_stencil1}, {RP_STENCIL2, 2, op_stencil2}, {RP_ACOND, 3, op_acond},
    {RP_AWHILE, 2, op_awhile}, {RP_ATUPLE, 1, op_atuple}, {RP_SIBLINGS, 2, op_siblings},
    {RP_FILTERFOLD, 2, op_filterfold}, {RP_LOOPMAP, 2, op_loopmap}, {RP_LOOPFILTER, 2, op_loopfilter},
    {RP_EPILOGUE, 2, op_epilogue},
};

static bool op_fits(G *g, int op, int rank, int fl)
{
    int mr = g->cfg.max_rank;
    switch (op) {
    case RP_UNIT: return rank == 0;
    case RP_REPLICATE: return rank >= 1;
    case RP_SLICE: return rank < mr;
    case RP_FLATTEN: return rank == 1;
    case RP_FOLD: case RP_FOLD1: return rank < mr;
    case RP_FOLDALL: return rank == 0;
    case RP_SIBLINGS: return rank < mr && ok(g, RP_FOLD) && ok(g, RP_FOLD1) && ok(g, RP_ZIPWITH) && ok(g, RP_MAP);
    case RP_FILTERFOLD: return rank == 0 && ok(g, RP_FILTER) && ok(g, RP_FOLD) && ok(g, RP_ZIPWITH) && ok(g, RP_MAP);
    case RP_LOOPMAP:
        return rank < mr && ok(g, RP_FOLD) && ok(g, RP_SCANL1) && ok(g, RP_ZIPWITH) && ok(g, RP_MAP);
    case RP_LOOPFILTER:
        return rank == 0 && ok(g, RP_FILTER) && ok(g, RP_FOLD) && ok(g, RP_SCANL1) && ok(g, RP_ZIPWITH) && ok(g, RP_MAP);
    case RP_EPILOGUE:
        return rank >= 1 && rank < mr && ok(g, RP_FOLD) && ok(g, RP_FOLD1) && ok(g, RP_SCANL1) && ok(g, RP_STENCIL) &&
               ok(g, RP_MAP);
    case RP_FOLDSEG: case RP_FOLD1SEG: return rank >= 1;
    case RP_SCANL: case RP_SCANL1: case RP_SCANR: case RP_SCANR1: return rank >= 1;
    case RP_SCANLEX: case RP_SCANREX: return rank >= 1 || rank < mr;
    case RP_FILTER: return rank == 1 && !(fl & NE);
    case RP_STENCIL: case RP_STENCIL2: return rank >= 1;
    case RP_ATUPLE: return ok(g, RP_ACOND) && ok(g, RP_AGET);
    case RP_AWHILE: return ok(g, RP_ATUPLE) && ok(g, RP_AGET) && ok(g, RP_MAP);
    default: return true;
    }
}

static Arr *pool_find(G *g, const GT *elt, int rank, int fl, int64_t cap)
{
    int cand[512], n = 0;
    for (int i = 0; i < g->nap && n < 512; i++) {
        Arr *a = g->ap[i];
        if (!a->a || a->rank != rank || !gt_eq(a->elt, elt) || sz_hi(a) > (double)cap) continue;
        if ((fl & NE) && !all_ne(a)) continue;
        if (a->work > (double)g->cfg.max_work - g->work) continue;
        if (a->unodes > (double)g->cfg.max_unfolded - g->unodes) continue;
        cand[n++] = i;
    }
    return n ? g->ap[cand[rn(g, n)]] : NULL;
}

static Arr *gen_leaf_arr(G *g, const GT *elt, int rank, int fl, int64_t cap)
{
    if (rank == 0 && ok(g, RP_UNIT) && pct(g, 40)) return op_unit(g, elt, 0, 1, fl, cap);
    if (!ok(g, RP_USE) && ok(g, RP_GENERATE)) return op_generate(g, elt, rank, 1, fl, cap);
    return mk_input(g, elt, rank, fl, cap);
}

static Arr *gen_arr(G *g, const GT *elt, int rank, int d, int fl, int64_t cap)
{
    if (cap < 1) cap = 1;
    if (g->bad) {
        Arr *a = arr_new(g, elt, rank);
        for (int k = 0; k < rank; k++) a->lo[k] = a->hi[k] = 1;
        a->name = "<bad>";
        return a;
    }
    Arr *r;
    if (ok(g, RP_SHARE_ACC) && pct(g, g->cfg.share_pct) && (r = pool_find(g, elt, rank, fl, cap))) {
        count(g, RP_SHARE_ACC);
        touch(g, r);
        return r;
    }
    bool leaf = d <= 0 || g->nnodes >= g->cfg.max_nodes || over_budget(g);
    double u0 = g->cur_u0;
    g->cur_u0 = g->unodes;
    r = NULL;
    for (int tries = 0; !leaf && tries < 4 && !r; tries++) {
        int w = 0, cand[64], cw[64], n = 0;
        for (size_t i = 0; i < sizeof op_table / sizeof *op_table; i++)
            if (ok(g, op_table[i].op) && op_fits(g, op_table[i].op, rank, fl)) {
                cand[n] = (int)i;
                cw[n++] = op_table[i].w;
                w += op_table[i].w;
            }
        if (!n) break;
        int x = rn(g, w), k = 0;
        while (x >= cw[k]) x -= cw[k++];
        r = op_table[cand[k]].fn(g, elt, rank, d, fl, cap);
    }
    if (!r) r = gen_leaf_arr(g, elt, rank, fl, cap);
    if (r->a && (fl & NE) && !all_ne(r)) bad(g, "%s: asked for a non-empty array", r->name);
    g->cur_u0 = u0;
    return r;
}

/* ================================================================ the API */

ax_acc randprog_build(ax_ctx *cx, uint64_t seed, const RandProgConfig *cfg, RandProg **state)
{
    G *g = calloc(1, sizeof *g);
    if (!g) oom();
    *state = g;
    g->cx = cx;
    if (cfg) g->cfg = *cfg;
    else randprog_default_config(&g->cfg);
    if (!g->cfg.ops) g->cfg.ops = RP_BIT(RP_NOPS) - 1;
    if (g->cfg.max_rank < 0) g->cfg.max_rank = 0;
    if (g->cfg.max_rank > 3) g->cfg.max_rank = 3;
    if (g->cfg.max_results < 1) g->cfg.max_results = 1;
    if (g->cfg.max_results > 4) g->cfg.max_results = 4;
    if (g->cfg.max_elems < 1) g->cfg.max_elems = 1;
    if (g->cfg.max_input < 1) g->cfg.max_input = 1;
    if (g->cfg.max_stencil < 2) g->cfg.max_stencil = 2;
    if (g->cfg.max_work <= 0) g->cfg.max_work = 1000000;
    if (g->cfg.max_unfolded <= 0) g->cfg.max_unfolded = 10000;
    g->seed = seed;
    g->rs = seed * UINT64_C(0x2545f4914f6cdd1d) + UINT64_C(0x1234567);
    blk_push(g);

    int nres = 1 + rn(g, g->cfg.max_results);
    Arr *res[4];
    for (int i = 0; i < nres; i++) {
        if (i > 0 && ok(g, RP_SHARE_ACC) && pct(g, 8)) {
            res[i] = res[rn(g, i)];
            count(g, RP_SHARE_ACC);
            touch(g, res[i]);
            continue;
        }
        const GT *elt = rand_elt_t(g);
        res[i] = gen_arr(g, elt, rn(g, g->cfg.max_rank + 1), g->cfg.max_depth, 0, g->cfg.max_elems);
    }
    ax_acc out;
    if (nres == 1) {
        out = res[0]->a;
        emit(g, "result %s", res[0]->name);
    } else if (nres == 3 && ok(g, RP_ATUPLE) && pct(g, 20)) {
        out = ax_atuple2(ax_atuple2(res[0]->a, res[1]->a), res[2]->a);
        count(g, RP_ATUPLE);
        emit(g, "result ax_atuple2(ax_atuple2(%s, %s), %s)", res[0]->name, res[1]->name, res[2]->name);
    } else {
        ax_acc v[4];
        Buf b = {0};
        for (int i = 0; i < nres; i++) {
            v[i] = res[i]->a;
            buf_add(&b, "%s%s", i ? ", " : "", res[i]->name);
        }
        out = ax_atuple(nres, v);
        count(g, RP_ATUPLE);
        emit(g, "result ax_atuple(%s)", b.s);
        free(b.s);
    }
    g->nres = nres;
    if (!out && !g->bad) bad(g, "the result is NULL: %s", ax_error(cx));

    const char *body = blk_pop(g);
    Buf d = {0};
    buf_add(&d, "# randprog seed %" PRIu64 ": %d result(s), %d array terms, estimated work %.0f, unfolded nodes %.0f\n",
            seed, nres, g->nnodes, g->work, g->unodes);
    buf_add(&d, "%s", body);
    if (g->bad) buf_add(&d, "# GENERATION FAILED: %s\n", g->badmsg);
    g->desc = d.s;
    return g->bad ? NULL : out;
}

void randprog_free(RandProg *g)
{
    if (!g) return;
    for (int i = 0; i < g->nbufs; i++) free(g->bufs[i]);
    free(g->bufs);
    free(g->hosts);
    free(g->ap);
    free(g->sp);
    for (int i = 0; i < g->nblk; i++) free(g->blk[i].s);
    free(g->desc);
    while (g->mem) {
        Blk *n = g->mem->next;
        free(g->mem);
        g->mem = n;
    }
    free(g);
}

const char *randprog_describe(const RandProg *g) { return g && g->desc ? g->desc : ""; }

void randprog_counts(const RandProg *g, int *counts)
{
    for (int i = 0; i < RP_NOPS; i++) counts[i] = g ? g->counts[i] : 0;
}

int randprog_nresults(const RandProg *g) { return g ? g->nres : 0; }

/* ================================================================ comparing */

static double load_f(const void *p, ax_scalar s, int64_t i)
{
    return s == AX_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

static void ix_str(char *buf, size_t size, const ax_array *a, int64_t lin)
{
    int r = ax_array_rank(a);
    int64_t ix[AX_MAX_RANK];
    for (int k = r - 1; k >= 0; k--) {
        int64_t e = ax_array_extent(a, k);
        ix[k] = e ? lin % e : 0;
        lin = e ? lin / e : 0;
    }
    size_t n = 0;
    n += (size_t)snprintf(buf + n, size - n, "[");
    for (int k = 0; k < r && n < size; k++) n += (size_t)snprintf(buf + n, size - n, "%s%" PRId64, k ? "," : "", ix[k]);
    if (n < size) snprintf(buf + n, size - n, "]");
}

int randprog_compare(ax_array *const *a, int na, ax_array *const *b, int nb, double rtol, double atol, char *msg,
                     size_t size)
{
    if (na != nb) {
        snprintf(msg, size, "%d results vs %d", na, nb);
        return 0;
    }
    for (int r = 0; r < na; r++) {
        const ax_array *x = a[r], *y = b[r];
        if (!x || !y) {
            snprintf(msg, size, "result %d: missing (%p vs %p)", r, (const void *)x, (const void *)y);
            return 0;
        }
        char tx[128], ty[128];
        ax_type_str(ax_array_type(x), tx, sizeof tx);
        ax_type_str(ax_array_type(y), ty, sizeof ty);
        if (!ax_type_equal(ax_array_type(x), ax_array_type(y)) || ax_array_rank(x) != ax_array_rank(y)) {
            snprintf(msg, size, "result %d: type %s^%d vs %s^%d", r, tx, ax_array_rank(x), ty, ax_array_rank(y));
            return 0;
        }
        for (int k = 0; k < ax_array_rank(x); k++)
            if (ax_array_extent(x, k) != ax_array_extent(y, k)) {
                char sx[256] = "", sy[256] = "";
                size_t nx = 0, ny = 0;
                for (int j = 0; j < ax_array_rank(x); j++) {
                    nx += (size_t)snprintf(sx + nx, sizeof sx - nx, "%s%" PRId64, j ? "," : "", ax_array_extent(x, j));
                    ny += (size_t)snprintf(sy + ny, sizeof sy - ny, "%s%" PRId64, j ? "," : "", ax_array_extent(y, j));
                }
                snprintf(msg, size, "result %d: shape [%s] vs [%s]", r, sx, sy);
                return 0;
            }
        int64_t n = ax_array_size(x);
        for (int c = 0; c < ax_array_components(x); c++) {
            ax_scalar s = ax_array_component_type(x, c);
            if (s != ax_array_component_type(y, c)) {
                snprintf(msg, size, "result %d: component %d types differ", r, c);
                return 0;
            }
            const void *px = ax_array_data(x, c), *py = ax_array_data(y, c);
            size_t es = ax_scalar_size(s);
            for (int64_t i = 0; i < n; i++) {
                bool same;
                char vx[64], vy[64];
                if (s == AX_F32 || s == AX_F64) {
                    double u = load_f(px, s, i), v = load_f(py, s, i);
                    same = (isnan(u) && isnan(v)) || u == v ||
                           (isfinite(u) && isfinite(v) && fabs(u - v) <= atol + rtol * fmax(fabs(u), fabs(v)));
                    snprintf(vx, sizeof vx, "%.17g", u);
                    snprintf(vy, sizeof vy, "%.17g", v);
                } else {
                    same = !memcmp((const char *)px + (size_t)i * es, (const char *)py + (size_t)i * es, es);
                    Buf bx = {0}, by = {0};
                    val_str(&bx, s, px, i);
                    val_str(&by, s, py, i);
                    snprintf(vx, sizeof vx, "%s", bx.s ? bx.s : "");
                    snprintf(vy, sizeof vy, "%s", by.s ? by.s : "");
                    free(bx.s);
                    free(by.s);
                }
                if (!same) {
                    char ix[128];
                    ix_str(ix, sizeof ix, x, i);
                    snprintf(msg, size, "result %d (%s): component %d element %s: %s vs %s", r, tx, c, ix, vx, vy);
                    return 0;
                }
            }
        }
    }
    if (size) msg[0] = 0;
    return 1;
}

long randprog_env_long(const char *name, long dflt)
{
    const char *s = getenv(name);
    if (!s || !*s) return dflt;
    char *end;
    long v = strtol(s, &end, 0);
    return *end ? dflt : v;
}

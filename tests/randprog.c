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
 * The files.  This one: the generator's state and types, the random
 * numbers, choosing an operation (gen_arr) and the API; it #includes its
 * parts in order, one translation unit:
 *   randprog_text.c    the description: memory, text, statements, bad
 *   randprog_exp.c     scalar terms, constants, the pool, lambdas
 *   randprog_scalar.c  associative operators, gen_exp
 *   randprog_arr.c     array terms, inputs, shapes
 *   randprog_ops.c     the array operations (op_*)
 *   randprog_awhile.c  ax_awhile
 *   randprog_check.c   comparing results, the environment helpers
 * A test includes randprog.c (unless RANDPROG_LINKED).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define RANDPROG_C   /* (its parts check that they are included by it) */
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
    "stencil", "stencil2", "acond", "awhile", "atuple", "aget", "scan_seg", "compute", "sort", "group", "siblings", "filterfold", "loopmap",
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


#include "randprog_text.c"

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


#include "randprog_exp.c"
#include "randprog_scalar.c"
#include "randprog_arr.c"
#include "randprog_ops.c"
#include "randprog_awhile.c"

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
    {RP_EPILOGUE, 2, op_epilogue}, {RP_SCANSEG, 2, op_scanseg}, {RP_COMPUTE, 1, op_compute}, {RP_SORT, 1, op_sort},
    {RP_GROUP, 1, op_group},
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
    case RP_FOLDSEG: case RP_FOLD1SEG: case RP_SCANSEG: case RP_SORT: return rank >= 1;
    case RP_GROUP: return rank == 1;
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


#include "randprog_check.c"

/*
 * Scalar expressions -> statements, in either dialect (cgen.h; the CPU's
 * and the GPU's skeletons write the parallel structure around this code).
 *
 * A value is a list of leaves (tuples flattened, an index of rank r as r
 * i64 leaves), each a C atom: every computed leaf is assigned to a fresh
 * local, so a leaf can be used any number of times and let-bound
 * variables simply name their locals.  Statements go into the function
 * being written (G.b); expressions come back as leaves.  Straight-line
 * code of locals is what lets the C compiler vectorise a kernel's loop.
 *
 * Semantics are prim.c's exactly (its header lists the decisions): integer
 * arithmetic wraps (done in unsigned types, so no -fwrapv is needed and
 * 8/16-bit products cannot overflow int), divisions check for zero (an
 * error through the kernel's error slot, and the result 0) and wrap
 * INT_MIN / -1, shifts and rotations apply prim.c's range rules, float
 * min/max let NaN lose and order -0 before +0, float -> integer
 * conversions saturate with NaN -> 0.  The helpers live in the unit's
 * prelude (cpu/codegen.c, gpu/codegen.c).  The one allowance is floating-point functions
 * (exp, log, ...), which come from a vector maths library and may differ
 * from the C library in the last bits.
 *
 * Conditionals: when both branches are small and cannot fault (no integer
 * division, array read, shape size or loop), both are computed and a ?:
 * picks the leaves, which keeps the loop free of branches (vectorisable);
 * otherwise an if/else evaluates only the branch taken, as the language
 * requires.  ax_and/ax_or likewise: & or | when the right side cannot
 * fault, a short-circuit otherwise.
 *
 * Loops in element code: a while loop per element is scalar code (GCC
 * does not vectorise a loop around a data-dependent inner loop), and an
 * iteration that the program unrolled (many steps of one function, as a
 * let chain) is thousands of lines that GCC compiles for minutes and that
 * always run every step.  Where a producer's element code cannot fault,
 * cpu/skel.c runs it in lane blocks: locals become lane arrays, each while
 * loop becomes a masked loop over the block's lanes (gen_while_lanes) and
 * each run of unrolled steps a loop that stops at a fixed point (gen_run),
 * both plain loops of straight-line code that vectorise.
 *
 * One file a little over 1,200 lines: the walk (cg_exp) and its cases
 * (primitives, conditionals, loops, reads of free arrays and their range
 * facts) call each other, and share the analysis at the top.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "cgen.h"
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ types */

/* The unsigned type integer arithmetic of s is done in: at least 32 bits,
 * so that 8- and 16-bit operands are not promoted to (signed) int. */
static const char *ptype(ax_scalar s) { return sc_bits(s) > 32 ? "u64" : "u32"; }

static bool is_signed(ax_scalar s) { return s >= AX_I8 && s <= AX_I64; }
static bool is_float(ax_scalar s) { return s == AX_F32 || s == AX_F64; }

static ax_scalar scalar_of(const Type *t) { return t->kind == TY_SCALAR ? t->s : AX_I64; }

const char *cg_const(G *g, ax_scalar s, Scalar v)
{
    v = sc_norm(v, s);
    if (s == AX_BOOL) {
        unsigned char c;
        memcpy(&c, &v.b, 1);
        return c ? "((u8)1)" : "((u8)0)";
    }
    if (s == AX_F32 || s == AX_F64) {
        double d = s == AX_F32 ? (double)v.f32 : v.f64;
        if (isnan(d)) {
            /* By bit pattern: the payload and sign are kept exactly. */
            if (s == AX_F32) {
                uint32_t b;
                memcpy(&b, &v.f32, 4);
                return cg_fmt(g, "ax_f32_of(%" PRIu32 "u)", b);
            }
            return cg_fmt(g, "ax_f64_of(%" PRIu64 "ULL)", v.u);
        }
        if (isinf(d) && g->dialect == CG_GPU) return d > 0 ? (s == AX_F32 ? "AX_INFF" : "AX_INF")
                                             : (s == AX_F32 ? "(-AX_INFF)" : "(-AX_INF)");
        if (isinf(d)) return d > 0 ? (s == AX_F32 ? "__builtin_inff()" : "__builtin_inf()")
                                   : (s == AX_F32 ? "(-__builtin_inff())" : "(-__builtin_inf())");
        /* Hexadecimal: exact, and independent of the locale. */
        return cg_fmt(g, "(%a%s)", d, s == AX_F32 ? "f" : "");
    }
    /* (GPU: OpenCL C has no long long; its long, and CUDA's on 64-bit
     * hosts, is 64 bits) */
    const char *l = g->dialect == CG_GPU ? "L" : "LL";
    if (is_signed(s)) {
        if (v.i == INT64_MIN) return cg_fmt(g, "((%s)(-9223372036854775807%s-1))", cg_ctype(s), l);
        return cg_fmt(g, "((%s)%" PRId64 "%s)", cg_ctype(s), v.i, l);
    }
    return cg_fmt(g, "((%s)%" PRIu64 "U%s)", cg_ctype(s), v.u, l);
}

/* ------------------------------------------------------------ analysis */

static bool int_division(const Node *e)
{
    if (e->op != OP_PRIM) return false;
    switch ((Prim)e->a) {
    case P_DIV: return e->n > 0 && !is_float(scalar_of(e->kid[0]->type));
    case P_QUOT: case P_REM: case P_IDIV: case P_MOD: return true;
    default: return false;
    }
}

static bool nonzero_const(const Node *e)
{
    if (e->op != OP_CONST || e->type->kind != TY_SCALAR) return false;
    Scalar v = sc_norm(e->c, e->type->s);
    return v.u != 0;
}

/* Speculation's budget (spec_walk): the operations (primitives, reads,
 * conditionals) a speculated term may hold, and the nodes of any kind,
 * which bound the walk itself. */
typedef struct Spec { int ops, nodes; bool reads; } Spec;

/* Is e free of faults and loops (an integer division by a nonzero constant
 * cannot fault: gen_div checks no other), within the budget? */
static bool spec_walk(const Node *e, Spec *b)
{
    if (!e || --b->nodes < 0) return false;
    switch (e->op) {
    case OP_INDEX: case OP_LINDEX:
        if (!b->reads) return false;
        b->ops--;
        break;
    case OP_WHILE: case OP_LAM:
        return false;
    case OP_PRIM:
        if ((int_division(e) && !(e->n == 2 && nonzero_const(e->kid[1]))) || e->a == P_SHAPESIZE) return false;
        b->ops--;
        break;
    case OP_COND:
        b->ops--;
        break;
    default:
        break;
    }
    if (b->ops < 0) return false;
    for (int k = 0; k < e->n; k++)
        if (!spec_walk(e->kid[k], b)) return false;
    return true;
}

/* Is e free of faults (integer division by a possibly-zero divisor,
 * shape sizes, loops) and small: safe and cheap to evaluate whether or not
 * its branch is taken.  In a kernel with deferred checks (G.defer) an
 * array read may be speculated too: its load is guarded (a bad index
 * reads a zero) and a failed check sets bad_ only where the read is
 * really made (G.spec), after which the checked copy, which branches,
 * reports the fault.  A data-dependent choice between reads (radix sort's
 * split) then compiles to selects instead of a branch mispredicted half
 * the time, and a loop whose elements are each either a term or a
 * constant (lavaMD's pairs, zero for a box past the edge) vectorises: a
 * branch in its body keeps GCC from vectorising it (control flow it does
 * not if-convert, as around a maths call), and a scalar loop calls the
 * vector maths functions one element at a time.  The budget (64
 * operations) admits those and a stencil's direction choice (canny's
 * non-maximum suppression): a short-circuit branch there becomes, after
 * GCC's if-conversion, a select between comparison masks, which GCC 12
 * does not vectorise. */
bool cg_speculable(G *g, const Node *e)
{
    Spec b = {64, 1024, g->safe && g->defer};
    return spec_walk(e, &b);
}

/* The code of e, speculated: evaluated whether or not `when` (a C
 * condition) holds, its deferred checks counting only when it does
 * (G.spec).  Nested speculation conjoins the conditions. */
const char *cg_spec_under(G *g, const char *when)
{
    return g->spec ? cg_fmt(g, "%s & %s", g->spec, when) : when;
}

static Val spec_exp(G *g, const Node *e, const char *when)
{
    if (!g->defer) return cg_exp(g, e);
    const char *outer = g->spec;
    g->spec = cg_spec_under(g, when);
    Val v = cg_exp(g, e);
    g->spec = outer;
    return v;
}

/* Lane blocks: can e not fault (and is it code that lane arrays carry:
 * no shape primitives, whose code declares locals of its own)? */
static bool lane_pure(const Node *e)
{
    for (; e; e = e->op == OP_LET ? e->kid[1] : NULL) {   /* let chains iteratively */
        switch (e->op) {
        case OP_WHILE: case OP_INDEX: case OP_LINDEX: case OP_LAM:
            return false;
        case OP_PRIM:
            if (int_division(e) || e->a == P_SHAPESIZE || e->a == P_TOLIN || e->a == P_FROMLIN || e->a == P_RESHAPE) return false;
            break;
        default:
            break;
        }
        for (int k = 0; k < e->n; k++)
            if (!(e->op == OP_LET && k == 1) && !lane_pure(e->kid[k])) return false;
    }
    return true;
}

/* ------------------------------------------------------------ unrolled steps
 *
 * A let chain that applies one step function many times in a row (an
 * iteration unrolled by the program, as in the Accelerate paper's Mandelbrot: 255
 * zipWith steps fused into one element function) is a run: bindings
 * [s, s + reps*per) in groups of per, each group the previous one with its
 * references to the group before shifted by per.  In lane blocks a run
 * becomes a loop over the groups (gen_run): a few lines of C instead of
 * thousands, and a loop that stops once no lane's state changes (the step
 * is a pure function of the previous group, so a state that maps to itself
 * stays put: the rest of the steps would change nothing). */

enum { RUN_MAX_PERIOD = 16, RUN_MIN_REPS = 8 };

typedef struct Chain {
    int n;                    /* bindings */
    const Node **let;         /* the LET nodes, in order */
    int *at;                  /* chain position by variable id, or -1 */
    int nid;
} Chain;

static void chain_free(Chain *c)
{
    free(c->let);
    free(c->at);
}

/* The let chain starting at e (false: out of memory). */
static bool chain_of(const Node *e, Chain *c)
{
    memset(c, 0, sizeof *c);
    int maxid = -1;
    for (const Node *x = e; x && x->op == OP_LET; x = x->kid[1]) {
        c->n++;
        if (x->id > maxid) maxid = x->id;
    }
    c->nid = maxid + 1;
    c->let = ax__malloc(sizeof *c->let * (size_t)(c->n > 0 ? c->n : 1));
    c->at = ax__malloc(sizeof *c->at * (size_t)(c->nid > 0 ? c->nid : 1));
    if (!c->let || !c->at) return chain_free(c), false;
    for (int k = 0; k < c->nid; k++) c->at[k] = -1;
    int k = 0;
    for (const Node *x = e; x && x->op == OP_LET; x = x->kid[1], k++) {
        c->let[k] = x;
        if (x->id >= 0) c->at[x->id] = k;
    }
    return true;
}

static int chain_pos(const Chain *c, const Node *v) { return v->id >= 0 && v->id < c->nid ? c->at[v->id] : -1; }

/* Is y (in binding j + per) x (in binding j) one step later, for a run
 * from s: a reference to the group before (>= s - per) shifted by per, any
 * other reference to the chain the same binding from before that group,
 * everything else equal.  Only pure code without binders (lane_pure, no
 * let or lambda inside): the loop runs it on every lane. */
static bool step_eq(const Chain *c, const Node *x, const Node *y, int s, int per)
{
    if (x->op != y->op || x->n != y->n || x->a != y->a || !ty_eq(x->type, y->type)) return false;
    switch (x->op) {
    case OP_CONST: return !memcmp(&x->c, &y->c, sizeof x->c);
    case OP_VAR: {
        int tx = chain_pos(c, x), ty = chain_pos(c, y);
        if (tx < 0 || ty < 0) return tx < 0 && ty < 0 && x->id == y->id;
        if (ty == tx + per) return tx >= s - per;
        return ty == tx && tx < s - per;
    }
    case OP_PRIM:
        if (int_division(x) || x->a == P_SHAPESIZE || x->a == P_TOLIN || x->a == P_FROMLIN || x->a == P_RESHAPE) return false;
        break;
    case OP_TUPLE: case OP_PROJ: case OP_COND: case OP_IXCONS: case OP_IXGET:
        break;
    default:
        return false;
    }
    for (int k = 0; k < x->n; k++)
        if (!step_eq(c, x->kid[k], y->kid[k], s, per)) return false;
    return true;
}

/* Does e refer to a binding in [lo, hi) of the chain? */
static bool refers(const Chain *c, const Node *e, int lo, int hi)
{
    for (; e; e = e->op == OP_LET ? e->kid[1] : NULL) {
        if (e->op == OP_VAR) {
            int t = chain_pos(c, e);
            return t >= lo && t < hi;
        }
        for (int k = 0; k < e->n; k++)
            if (!(e->op == OP_LET && k == 1) && refers(c, e->kid[k], lo, hi)) return true;
    }
    return false;
}

/* The run starting at binding s: its repetitions (0: none) and period. */
static int run_at(const Chain *c, int s, const Node *body, int *period)
{
    for (int per = 1; per <= RUN_MAX_PERIOD && per <= s && s + per < c->n; per++) {
        int m = 0;
        while (s + m + per < c->n && step_eq(c, c->let[s + m]->kid[0], c->let[s + m + per]->kid[0], s, per)) m++;
        int reps = m / per + 1;
        if (reps < RUN_MIN_REPS) continue;
        /* After the run only its last group may be referred to: it is
         * all that the loop leaves. */
        int end = s + reps * per;
        bool used = refers(c, body, s, end - per);
        for (int k = end; k < c->n && !used; k++) used = refers(c, c->let[k]->kid[0], s, end - per);
        if (used) continue;
        *period = per;
        return reps;
    }
    return 0;
}

/* What lane_walk learns of element code: its loops (while loops and runs
 * of unrolled steps), the smallest leaf of their states, and the nodes
 * whose locals become lane arrays (on the stack: bounded). */
typedef struct LaneInfo {
    int nloop, nodes;
    size_t leaf;
} LaneInfo;

enum { LANE_MAX_NODES = 2048 };

static void lane_leaf(LaneInfo *li, const Type *t)
{
    for (int l = 0; l < t->width; l++) {
        size_t z = ax_scalar_size(ty_leaf(t, l));
        if (z < li->leaf) li->leaf = z;
    }
}

static bool lane_walk(const Node *e, LaneInfo *li);

/* A let chain in lane_walk: a run is one loop, its groups after the first
 * like the first (step_eq), all but the last of them in the loop. */
static bool lane_chain(const Node *e, LaneInfo *li)
{
    Chain c;
    if (!chain_of(e, &c)) return false;
    bool ok = true;
    const Node *body = c.let[c.n - 1]->kid[1];
    for (int s = 0; s < c.n && ok; s++) {
        int per = 0, reps = run_at(&c, s, body, &per);
        if (reps) {
            for (int q = 0; q < per; q++) lane_leaf(li, c.let[s + q]->kid[0]->type);
            li->nloop++;
            s += (reps - 1) * per;   /* on to the last group */
        }
        ok = lane_walk(c.let[s]->kid[0], li);
    }
    chain_free(&c);
    return ok && lane_walk(body, li);
}

/* Element code for lane blocks: pure (lane_pure) apart from while loops
 * and runs at its top level (evaluated whenever e is, so that a loop may
 * close one lane loop and open the next), whose condition and body are
 * pure. */
static bool lane_walk(const Node *e, LaneInfo *li)
{
    if (!e || ++li->nodes > LANE_MAX_NODES) return false;
    switch (e->op) {
    case OP_LET:
        return lane_chain(e, li);
    case OP_WHILE:
        if (e->n != 3 || !e->kid[0] || !e->kid[1] || e->kid[0]->n < 1 || e->kid[1]->n < 1 ||
            !lane_pure(e->kid[0]->kid[0]) || !lane_pure(e->kid[1]->kid[0]))
            return false;
        lane_leaf(li, e->type);
        li->nloop++;
        return lane_walk(e->kid[2], li);
    case OP_COND:
        return lane_walk(e->kid[0], li) && lane_pure(e->kid[1]) && lane_pure(e->kid[2]);
    case OP_PRIM:
        if (e->a == P_AND || e->a == P_OR) return e->n == 2 && lane_walk(e->kid[0], li) && lane_pure(e->kid[1]);
        if (int_division(e) || e->a == P_SHAPESIZE || e->a == P_TOLIN || e->a == P_FROMLIN || e->a == P_RESHAPE) return false;
        break;
    case OP_INDEX: case OP_LINDEX: case OP_LAM:
        return false;
    default:
        break;
    }
    for (int k = 0; k < e->n; k++)
        if (!lane_walk(e->kid[k], li)) return false;
    return true;
}

int cg_lane_count(const Node *lam)
{
    if (!lam || lam->op != OP_LAM || lam->n < 1) return 0;
    LaneInfo li = {0, 0, 8};
    if (!lane_walk(lam->kid[0], &li) || li.nloop == 0) return 0;
    int n = (int)(CG_LANE_BYTES / li.leaf);
    return n < CG_LANE_MAX ? n : CG_LANE_MAX;
}

/* ------------------------------------------------------------ arrays
 *
 * Reads of free arrays (ax_at, ax_at_linear) and the range facts that let
 * a kernel with deferred checks read them unchecked (G.fact). */

/* The fact about variable v, or -1. */
static int fact_of(G *g, const Node *v)
{
    if (!v || v->op != OP_VAR) return -1;
    for (int k = 0; k < g->nfact; k++)
        if (g->fact[k].id == v->id) return k;
    return -1;
}

/* Adds condition c to the kernel's pre_ (once); false when full. */
bool cg_pre_add(G *g, const char *c)
{
    for (int k = 0; k < g->npre; k++)
        if (!strcmp(g->pre[k], c)) return true;
    if (g->npre >= (int)(sizeof g->pre / sizeof *g->pre)) return false;
    g->pre[g->npre++] = c;
    return true;
}

/* The largest value of integer type t plus one, as a C constant (the
 * sizes that a position converted to t survives); NULL for 64 bits. */
static const char *int_span(ax_scalar t)
{
    switch (t) {
    case AX_I8: return "128"; case AX_U8: return "256";
    case AX_I16: return "32768"; case AX_U16: return "65536";
    case AX_I32: return "2147483648LL"; case AX_U32: return "4294967296LL";
    default: return NULL;
    }
}

/* A read of e's array at a value fact's position, through a widening to
 * i64 (a filter over the indices of an array): the fact, else -1. */
static int value_read(G *g, const Node *e)
{
    const Node *i = e->kid[1];
    if (e->op != OP_LINDEX || i->op != OP_PRIM || i->a != P_CVT || i->n != 1 || scalar_of(i->type) != AX_I64)
        return -1;
    int f = fact_of(g, i->kid[0]);
    return f >= 0 && g->fact[f].pos ? f : -1;
}

/* A non-negative i64 constant's value, else -1. */
static int64_t const_pos(const Node *x)
{
    return x->op == OP_CONST && x->type->kind == TY_SCALAR && x->type->s == AX_I64 && x->c.i >= 0 ? x->c.i : -1;
}

/* The condition under which read e (of array slot `slot`, type at) is in
 * bounds for every value its index can take (see G.fact), added to the
 * kernel's pre_; NULL if unknown. */
static const char *known_in_bounds(G *g, const Node *e, int slot, const Type *at)
{
    const Node *i = e->kid[1];
    const char *c;
    int f = value_read(g, e);
    if (f >= 0) {
        int s = g->fact[f].slot;
        const char *span = int_span(g->fact[f].conv);
        c = span ? cg_fmt(g, "(n%d <= n%d) & (n%d <= %s)", s, slot, s, span) : cg_fmt(g, "n%d <= n%d", s, slot);
        return cg_pre_add(g, c) ? c : NULL;
    }
    f = fact_of(g, i);
    /* a value fact read directly: the plain fact only when 64 bits wide */
    if (f >= 0 && g->fact[f].pos && int_span(g->fact[f].conv)) return NULL;
    if (f >= 0) {
        if (g->fact[f].lin != (e->op == OP_LINDEX)) return NULL;
        int s = g->fact[f].slot;
        const Type *st = cg_slot_type(g->cn, s);
        if (e->op == OP_LINDEX) {
            c = cg_fmt(g, "n%d <= n%d", s, slot);
        } else {
            if (st->rank != at->rank || i->type->width != at->rank) return NULL;
            c = "1";
            for (int d = 0; d < at->rank; d++) c = cg_fmt(g, "%s & (s%d_%d <= s%d_%d)", c, s, d, slot, d);
        }
    } else if (e->op == OP_INDEX && i->op == OP_IXCONS && i->n == 1 && at->rank == 1 &&
               (f = fact_of(g, i->kid[0])) >= 0 && g->fact[f].lin) {
        /* ix(p) with p a position inside an extent, read from a vector:
         * in bounds when that extent's size fits (a fused unzip read at
         * a linear position, as the segmented folds read smvm's matrix) */
        c = cg_fmt(g, "n%d <= s%d_0", g->fact[f].slot, slot);
    } else if (e->op == OP_LINDEX && const_pos(i) >= 0) {
        /* a constant position (a scalar parameter read from a unit or a
         * table inside the loop): in bounds when the array is that long;
         * checked per element, the conditional load of a value that never
         * changes keeps GCC from vectorising the loop */
        c = cg_fmt(g, "(%lld < n%d)", (long long)const_pos(i), slot);
    } else if (e->op == OP_INDEX && i->op == OP_IXCONS && i->n == at->rank && i->n > 0) {
        /* ix(ixget k0 p, ixget k1 q, ...) with p, q inside extents: in
         * bounds when each such extent's dimension fits the array's
         * (N-body reads a[ixget 1 p] along its rows); constant components
         * when the array's extent passes them */
        c = "1";
        for (int d = 0; d < i->n; d++) {
            const Node *k = i->kid[d];
            if (const_pos(k) >= 0) {
                c = cg_fmt(g, "%s & (%lld < s%d_%d)", c, (long long)const_pos(k), slot, d);
                continue;
            }
            int fk = k->op == OP_IXGET ? fact_of(g, k->kid[0]) : -1;
            if (fk < 0 || g->fact[fk].lin) return NULL;
            c = cg_fmt(g, "%s & (s%d_%d <= s%d_%d)", c, g->fact[fk].slot, k->a, slot, d);
        }
    } else {
        return NULL;
    }
    return cg_pre_add(g, c) ? c : NULL;
}

/* A let that names a position or index a range fact knows of (a copy, or
 * ix(p) of a position p inside a vector's extent: a fused producer's
 * element read at its own index) holds one too. */
static void let_fact(G *g, const Node *let)
{
    const Node *b = let->kid[0];
    int f = -1;
    bool lin = true;
    if (b->op == OP_VAR) {
        f = fact_of(g, b);
        if (f >= 0) lin = g->fact[f].lin;
    } else if (b->op == OP_IXCONS && b->n == 1) {
        f = fact_of(g, b->kid[0]);
        if (f < 0 || !g->fact[f].lin || g->fact[f].pos || cg_slot_type(g->cn, g->fact[f].slot)->rank != 1) return;
        lin = false;
    }
    if (f < 0 || g->nfact >= (int)(sizeof g->fact / sizeof *g->fact)) return;
    for (int k = 0; k < g->nfact; k++)
        if (g->fact[k].id == let->id) return;
    g->fact[g->nfact] = g->fact[f];
    g->fact[g->nfact].id = let->id;
    g->fact[g->nfact].lin = lin;
    g->nfact++;
}

static Val gen_index(G *g, const Node *e)
{
    int slot = cg_free_slot(g->cn, e->kid[0]);
    const Type *at = slot >= 0 ? cg_slot_type(g->cn, slot) : NULL;
    if (!at || at->kind != TY_ARRAY) {
        cg_fail(g, "cpu codegen: %s reads an array that is not a variable", op_name(e->op));
        return cg_val(g, 0);
    }
    int r = at->rank, w = at->elt->width;
    const char *lin;
    Val ix;
    if (e->op == OP_INDEX) {
        ix = cg_exp(g, e->kid[1]);
        if (ix.n != r) {
            cg_fail(g, "cpu codegen: index rank %d for an array of rank %d", ix.n, r);
            return cg_val(g, 0);
        }
        /* checked for the whole row before the row's loop (hoist.c) */
        const char *base = r > 0 ? cg_row_base(g, e) : NULL;
        if (base) {
            lin = cg_local(g, AX_I64, cg_fmt(g, "%s + %s", base, ix.v[r - 1]));
            Val out = cg_val(g, w);
            for (int k = 0; k < out.n; k++)
                out.v[k] = cg_local(g, ty_leaf(at->elt, k), cg_load(g, ty_leaf(at->elt, k), slot, k, lin));
            return out;
        }
        if (r == 0) {
            if (slot < 64 && (g->unit_ld >> slot & 1)) {
                Val u = cg_val(g, w);
                for (int k = 0; k < w; k++) u.v[k] = cg_fmt(g, "u%d_%d", slot, k);
                return u;
            }
            lin = "0";
        } else {
            const char *acc = ix.v[0];
            for (int d = 1; d < r; d++) acc = cg_fmt(g, "(%s) * s%d_%d + %s", acc, slot, d, ix.v[d]);
            lin = cg_local(g, AX_I64, acc);
        }
    } else {
        Val i = cg_exp(g, e->kid[1]);
        const char *iv = i.n == 1 ? i.v[0] : "0";
        ax_scalar is = scalar_of(e->kid[1]->type);
        lin = is == AX_I64 ? iv : cg_local(g, AX_I64, cg_fmt(g, "(i64)%s", iv));
        ix = cg_val(g, 1);
        ix.v[0] = lin;
    }
    Val out = cg_val(g, w);
    /* In a kernel with deferred checks, a read known in bounds whenever
     * the kernel's pre_ holds is unchecked: the kernel hands its whole
     * range to its checked copy when pre_ does not hold (cpu/skel.c
     * cpu_kernel_end). */
    if (!g->safe || (g->defer && known_in_bounds(g, e, slot, at))) {
        /* at a value fact's position: index by the position itself (the
         * same value once pre_ holds, and an affine index GCC vectorises) */
        int f = g->safe ? value_read(g, e) : -1;
        if (f >= 0) lin = g->fact[f].pos;
        for (int k = 0; k < out.n; k++) out.v[k] = cg_local(g, ty_leaf(at->elt, k), cg_load(g, ty_leaf(at->elt, k), slot, k, lin));
        return out;
    }
    /* Safe mode: report the first bad index and read a zero instead, so
     * nothing outside the array is touched. */
    const char *ok;
    if (e->op == OP_INDEX) {
        if (r == 0) {
            ok = "((u8)1)";
        } else {
            Buf t = {0};
            for (int d = 0; d < r; d++)
                buf_printf(&t, "%s((u64)%s < (u64)s%d_%d)", d ? " & " : "", ix.v[d], slot, d);
            ok = cg_local(g, AX_BOOL, cg_buf_text(g, &t, "0"));
            free(t.s);
        }
    } else {
        ok = cg_local(g, AX_BOOL, cg_fmt(g, "(u64)%s < (u64)n%d", lin, slot));
    }
    cg_guard(g, cg_fmt(g, "!%s", ok), cg_fail_ix(g, AX_ERR_INDEX, e->op == OP_INDEX ? SITE_AT : SITE_ATLIN, slot, ix, r));
    if (g->gather) *g->gather = true;
    for (int k = 0; k < out.n; k++) {
        ax_scalar s = ty_leaf(at->elt, k);
        out.v[k] = cg_local(g, s, cg_fmt(g, "%s ? %s : 0", ok, cg_load(g, s, slot, k, lin)));
    }
    return out;
}

/* ------------------------------------------------------------ primitives */

const char *const cg_math_names[CG_NMATH] = {
    "exp", "log", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "pow", "atan2",
};

/* The C library's functions the CPU's code calls (exp and log: in the
 * fast modes only, math_fn). */
static const char *const fn_f32[P_NPRIM] = {
    [P_EXP] = "expf", [P_LOG] = "logf", [P_LOGBASE] = "logf", [P_SQRT] = "__builtin_sqrtf", [P_SIN] = "sinf", [P_COS] = "cosf",
    [P_TAN] = "tanf", [P_ASIN] = "asinf", [P_ACOS] = "acosf", [P_ATAN] = "atanf", [P_SINH] = "sinhf",
    [P_COSH] = "coshf", [P_TANH] = "tanhf", [P_ASINH] = "asinhf", [P_ACOSH] = "acoshf", [P_ATANH] = "atanhf",
    [P_POW] = "powf", [P_ATAN2] = "atan2f",
};
static const char *const fn_f64[P_NPRIM] = {
    [P_EXP] = "exp", [P_LOG] = "log", [P_LOGBASE] = "log", [P_SQRT] = "__builtin_sqrt", [P_SIN] = "sin", [P_COS] = "cos",
    [P_TAN] = "tan", [P_ASIN] = "asin", [P_ACOS] = "acos", [P_ATAN] = "atan", [P_SINH] = "sinh",
    [P_COSH] = "cosh", [P_TANH] = "tanh", [P_ASINH] = "asinh", [P_ACOSH] = "acosh", [P_ATANH] = "atanh",
    [P_POW] = "pow", [P_ATAN2] = "atan2",
};

/* The C function of maths primitive p on type s, noted in G.math_used
 * (the CPU's prelude declares what a unit calls). */
static const char *math_fn(G *g, Prim p, ax_scalar s)
{
    /* exp and log (logbase is two logs): axle's own, ax_exp_f32 ...
       ax_log_f64 (core/vmath.h), which the preludes define: the
       interpreter's bits.  The CPU's fast modes, which promise no bits,
       call the C library's instead (through libmvec where the context
       found it, cpu/codegen.c emit_prelude: faster than axle's on the
       x86 targets measured, bench/fastmath/vmath.c).  GPU: sqrt is the
       device's (correctly rounded), the others the prelude's ax_sin_f32,
       ..., ax_atan2_f64 (the device's functions behind a NaN guard that
       PoCL needs: gpu/codegen.c) */
    Prim q = p == P_LOGBASE ? P_LOG : p;
    if ((q == P_EXP || q == P_LOG) && (g->dialect == CG_GPU || !g->fast)) {
        if (g->math_used) *g->math_used |= (uint64_t)1 << (CG_OWN_BIT + 2 * (q == P_LOG) + (s == AX_F32 ? 0 : 1));
        g->wide = true;
        return cg_fmt(g, "ax_%s_%s", prim_info[q].name, cg_ctype(s));
    }
    if (g->dialect == CG_GPU)
        return p == P_SQRT ? (s == AX_F32 ? "sqrtf" : "sqrt") : cg_fmt(g, "ax_%s_%s", prim_info[p].name, cg_ctype(s));
    const char *f = (s == AX_F32 ? fn_f32 : fn_f64)[p];
    for (int k = 0; k < CG_NMATH && g->math_used; k++) {
        size_t n = strlen(cg_math_names[k]);
        if (!strncmp(f, cg_math_names[k], n) && f[n] == (s == AX_F32 ? 'f' : 0)) {
            *g->math_used |= (uint64_t)1 << (2 * k + (s == AX_F32 ? 0 : 1));
            g->wide = true;
        }
    }
    return f;
}

/* x converted from `from` to `to` with ax_cvt's rules (x an atom). */
/* The 64-bit integer <-> float conversions AVX2 cannot vectorise, in a
 * kernel with deferred checks (G.defer): through i32 when the value fits,
 * where they equal the exact conversion, else bad_ is set and the checked
 * copy (which converts exactly) computes the range again. */
static const char *cvt_via_i32(G *g, ax_scalar from, ax_scalar to, const char *x)
{
    bool wide_int = from == AX_I64 || from == AX_U64, to_wide_int = to == AX_I64 || to == AX_U64;
    if (!g->defer || !((wide_int && is_float(to)) || (is_float(from) && to_wide_int))) return NULL;
    const char *fits;
    if (wide_int)
        fits = from == AX_I64 ? cg_local(g, AX_BOOL, cg_fmt(g, "(u8)(%s == (i64)(i32)%s)", x, x))
                              : cg_local(g, AX_BOOL, cg_fmt(g, "(u8)(%s <= 0x7fffffffu)", x));
    else   /* truncation lands in i32 (NaN fails: the checked copy gives its 0) */
        fits = cg_local(g, AX_BOOL, from == AX_F32
            ? cg_fmt(g, "(u8)((%s %s) & (%s < 0x1p31f))", x, to == AX_U64 ? "> -1.0f" : ">= -0x1p31f", x)
            : cg_fmt(g, "(u8)((%s %s) & (%s < 0x1p31))", x, to == AX_U64 ? "> -1.0" : "> -2147483649.0", x));
    if (g->spec) {
        cg_defer_bad(g, cg_fmt(g, "!%s", fits));
    } else {
        cg_line(g, "bad_ |= (u8)!%s;", fits);
        g->ndefer++;
    }
    return cg_fmt(g, "(%s)(i32)(%s ? %s : 0)", cg_ctype(to), fits, x);
}

static const char *cvt_expr(G *g, ax_scalar from, ax_scalar to, const char *x)
{
    if (from == to) return x;
    const char *v = cvt_via_i32(g, from, to, x);
    if (v) return v;
    if (to == AX_BOOL) return cg_fmt(g, "(u8)(%s != 0)", x);   /* NaN != 0 holds: NaN is true */
    if (is_float(from) && !is_float(to)) return cg_fmt(g, "ax_cvt_%s_%s(%s)", cg_ctype(from), cg_ctype(to), x);
    /* int/bool -> anything, float -> float: C's conversion (integers wrap:
     * GCC and Clang define the narrowing conversion as modulo). */
    return cg_fmt(g, "(%s)%s", cg_ctype(to), x);
}

static const char *bitcast_expr(G *g, ax_scalar from, ax_scalar to, const char *x)
{
    if (from == to) return x;
    if (from == AX_F32) return cg_fmt(g, "(%s)ax_bits_f32(%s)", cg_ctype(to), x);
    if (from == AX_F64) return cg_fmt(g, "(%s)ax_bits_f64(%s)", cg_ctype(to), x);
    if (to == AX_F32) return cg_fmt(g, "ax_f32_of((u32)%s)", x);
    if (to == AX_F64) return cg_fmt(g, "ax_f64_of((u64)%s)", x);
    return cg_fmt(g, "(%s)%s", cg_ctype(to), x);
}

/* Integer division family: helper call, plus the zero check. */
static const char *gen_div(G *g, const Node *e, Prim p, ax_scalar s, const char *a, const char *b)
{
    static const char *const name[P_NPRIM] = {[P_DIV] = "quot", [P_QUOT] = "quot", [P_REM] = "rem",
                                               [P_IDIV] = "idiv", [P_MOD] = "mod"};
    const char *r = cg_local(g, s, cg_fmt(g, "ax_%s_%s(%s, %s)", name[p], cg_ctype(s), a, b));
    if (!nonzero_const(e->kid[1]))
        cg_guard(g, cg_fmt(g, "%s == 0", b), cg_fail_prim(g, AX_ERR_DIVZERO, (int)p));
    return r;
}

static const char *shift_amount(G *g, const Node *n, const char *x, bool rot, int w)
{
    ax_scalar ns = scalar_of(n->type);
    if (rot) return is_signed(ns) ? cg_fmt(g, "ax_rotamt_s((i64)%s, %d)", x, w) : cg_fmt(g, "ax_rotamt_u((u64)%s, %d)", x, w);
    return is_signed(ns) ? cg_fmt(g, "ax_shamt_s((i64)%s)", x) : cg_fmt(g, "ax_shamt_u((u64)%s)", x);
}

/* The size of shape sh (r leaves) into a fresh local *n, and whether it
 * is bad (an extent negative, or the size overflows) into *bad, in
 * prim.c's order: a negative extent is an error, then a zero extent makes
 * the size 0, then an overflow is an error. */
static void gen_size(G *g, Val sh, int r, const char **n, const char **bad)
{
    *n = cg_fresh(g, "t");
    *bad = cg_fresh(g, "t");
    if (r == 0) {
        cg_line(g, "const i64 %s = 1; const u8 %s = 0;", *n, *bad);
        return;
    }
    if (g->dialect == CG_GPU) {
        const char *z = cg_fresh(g, "t");
        cg_line(g, "i64 %s = 1;", *n);
        cg_line(g, "u8 %s = 0, %s = 0;", *bad, z);
        for (int d = 0; d < r; d++) cg_line(g, "%s |= (u8)(%s < 0); %s |= (u8)(%s == 0);", *bad, sh.v[d], z, sh.v[d]);
        for (int d = 0; d < r; d++) cg_line(g, "%s |= (u8)((u8)(%s == 0) & ax_mul_ovf(%s, %s, &%s));", *bad, z, *n, sh.v[d], *n);
        cg_line(g, "if (%s) %s = 0;", z, *n);
        return;
    }
    Buf t = {0};
    for (int d = 0; d < r; d++) buf_printf(&t, "%s%s", d ? ", " : "", sh.v[d]);
    cg_line(g, "i64 %s;", *n);
    cg_line(g, "const u8 %s = ax_shape_count(%d, (const i64[]){%s}, &%s);", *bad, r, cg_buf_text(g, &t, "0"), *n);
    free(t.s);
}

/* (const i64[]){v...} */
static const char *i64_list(G *g, Val v)
{
    if (v.n == 0) return "0";
    Buf t = {0};
    buf_put(&t, "(const i64[]){");
    for (int d = 0; d < v.n; d++) buf_printf(&t, "%s%s", d ? ", " : "", v.v[d]);
    buf_put(&t, "}");
    const char *r = cg_fmt(g, "%s", cg_buf_text(g, &t, "0"));
    free(t.s);
    return r;
}

static Val gen_shape_prim(G *g, const Node *e, Prim p, Val *args)
{
    const Type *t0 = e->kid[0]->type;
    int r = t0->n;
    if (p == P_SHAPESIZE) {
        Val out = cg_val(g, 1);
        if (r == 0) {
            out.v[0] = "((i64)1LL)";
            return out;
        }
        const char *n, *bad;
        gen_size(g, args[0], r, &n, &bad);
        cg_guard(g, bad, cg_fail_prim(g, AX_ERR_SHAPE, (int)p));
        cg_line(g, "if (%s) %s = 0;", bad, n);
        out.v[0] = n;
        return out;
    }
    if (p == P_RESHAPE) {
        /* sh' when its size is sh's: ax_reshape's check (the host words
         * the fault from both shapes, SITE_RESHAPE) */
        int r0 = e->kid[1]->type->n;
        const char *n1, *b1, *n0, *b0;
        gen_size(g, args[0], r, &n1, &b1);
        gen_size(g, args[1], r0, &n0, &b0);
        const char *bad = cg_local(g, AX_BOOL, cg_fmt(g, "(u8)(%s | %s | (%s != %s))", b1, b0, n1, n0));
        const char *report = g->dialect == CG_GPU ? cg_fail_prim(g, AX_ERR_SHAPE, (int)p)
                                    : cg_fmt(g, "ax_fail(c, %d, %d, %d, %s, %d, %s, %d, %s);", AX_ERR_SHAPE, SITE_RESHAPE,
                                             r, g->pos, r, i64_list(g, args[0]), r0, i64_list(g, args[1]));
        cg_guard(g, bad, report);
        return args[0];
    }
    if (p == P_TOLIN) {
        Val out = cg_val(g, 1);
        if (r == 0) {
            out.v[0] = "((i64)0LL)";
            return out;
        }
        const char *acc = cg_fmt(g, "(u64)%s", args[1].v[0]);
        for (int d = 1; d < r; d++) acc = cg_fmt(g, "(%s) * (u64)%s + (u64)%s", acc, args[0].v[d], args[1].v[d]);
        out.v[0] = cg_local(g, AX_I64, cg_fmt(g, "(i64)(%s)", acc));
        return out;
    }
    /* FROMLIN: Accelerate's rule, as prim.c (outermost = remaining quotient;
     * a divisor extent <= 0 gives the zero index). */
    Val out = cg_val(g, r);
    const char *i = args[1].v[0];
    for (int d = 0; d < r; d++) {
        out.v[d] = cg_fresh(g, "t");
        cg_line(g, "i64 %s = 0;", out.v[d]);
    }
    if (r == 1) {
        cg_line(g, "%s = %s;", out.v[0], i);
    } else if (r > 1) {
        Buf t = {0};
        for (int d = 1; d < r; d++) buf_printf(&t, "%s%s > 0", d > 1 ? " && " : "", args[0].v[d]);
        cg_line(g, "if (%s) {", cg_buf_text(g, &t, "0"));
        free(t.s);
        g->ind++;
        cg_coords(g, i, args[0], out, false);
        g->ind--;
        cg_line(g, "}");
    }
    return out;
}

/* Code in a branch (if/else, short-circuit) of lane-block code: plain
 * locals, which never outlive the branch; no run or while loop may close
 * the lane loop there (G.lane_arr off).  Returns the setting to restore. */
static bool branch_begin(G *g)
{
    bool arr = g->lane_arr;
    g->lane_arr = false;
    return arr;
}

static Val gen_prim(G *g, const Node *e)
{
    Prim p = (Prim)e->a;
    Val out = cg_val(g, 1);
    if (p == P_AND || p == P_OR) {
        /* Short-circuit unless the right operand is safe to evaluate
         * anyway (then & and | keep the code branch-free). */
        Val a = cg_exp(g, e->kid[0]);
        if (a.n != 1) return cg_fail(g, "cpu codegen: and/or operand"), cg_val(g, 0);
        if (cg_speculable(g, e->kid[1])) {
            Val b = spec_exp(g, e->kid[1], cg_fmt(g, "%s%s", p == P_AND ? "" : "!", a.v[0]));
            if (b.n != 1) return cg_val(g, 0);
            out.v[0] = cg_local(g, AX_BOOL, cg_fmt(g, "(u8)(%s %s %s)", a.v[0], p == P_AND ? "&" : "|", b.v[0]));
            return out;
        }
        const char *r = cg_local(g, AX_BOOL, a.v[0]);
        cg_line(g, "if (%s%s) {", p == P_AND ? "" : "!", r);
        g->ind++;
        bool arr = branch_begin(g);
        Val b = cg_exp(g, e->kid[1]);
        if (b.n == 1) cg_line(g, "%s = %s;", r, b.v[0]);
        g->lane_arr = arr;
        g->ind--;
        cg_line(g, "}");
        out.v[0] = r;
        return out;
    }
    if (e->n < 1 || e->n > 2 || e->n != prim_info[p].arity) {
        cg_fail(g, "cpu codegen: primitive %s with %d operands", prim_info[p].name, e->n);
        return cg_val(g, 0);
    }
    Val args[2];
    for (int k = 0; k < e->n; k++) {
        args[k] = cg_exp(g, e->kid[k]);
        if (args[k].n != e->kid[k]->type->width) return cg_val(g, 0);
    }
    if (p == P_SHAPESIZE || p == P_TOLIN || p == P_FROMLIN || p == P_RESHAPE) return gen_shape_prim(g, e, p, args);

    ax_scalar s = scalar_of(e->kid[0]->type), rs = scalar_of(e->type);
    const char *a = args[0].v[0], *b = e->n > 1 ? args[1].v[0] : NULL;
    const char *T = cg_ctype(s), *P = ptype(s), *x = NULL;
    bool fl = is_float(s);
    int w = sc_bits(s);
    switch (p) {
    case P_ADD: case P_SUB: case P_MUL: {
        const char *op = p == P_ADD ? "+" : p == P_SUB ? "-" : "*";
        x = fl ? cg_fmt(g, "%s %s %s", a, op, b) : cg_fmt(g, "(%s)((%s)%s %s (%s)%s)", T, P, a, op, P, b);
        break;
    }
    case P_DIV:
        if (fl) x = cg_fmt(g, "%s / %s", a, b);
        else out.v[0] = gen_div(g, e, p, s, a, b);
        break;
    case P_QUOT: case P_REM: case P_IDIV: case P_MOD:
        out.v[0] = gen_div(g, e, p, s, a, b);
        break;
    case P_MIN: case P_MAX:
        if (fl) x = cg_fmt(g, "ax_%s_%s(%s, %s)", p == P_MIN ? "min" : "max", T, a, b);
        else x = cg_fmt(g, "%s %s %s ? %s : %s", a, p == P_MIN ? "<=" : ">=", b, a, b);
        break;
    case P_NEG:
        x = fl ? cg_fmt(g, "-%s", a) : cg_fmt(g, "(%s)(0 - (%s)%s)", T, P, a);
        break;
    case P_ABS:
        if (fl) x = cg_fmt(g, "%sfabs%s(%s)", g->dialect == CG_GPU ? "" : "__builtin_", s == AX_F32 ? "f" : "", a);
        else if (is_signed(s)) x = cg_fmt(g, "%s < 0 ? (%s)(0 - (%s)%s) : %s", a, T, P, a, a);
        else x = a;
        break;
    case P_SIGNUM:
        if (fl) x = cg_fmt(g, "ax_sgn_%s(%s)", T, a);
        else if (is_signed(s)) x = cg_fmt(g, "(%s)((%s > 0) - (%s < 0))", T, a, a);
        else x = cg_fmt(g, "(%s)(%s != 0)", T, a);
        break;
    case P_BAND: x = cg_fmt(g, "(%s)(%s & %s)", T, a, b); break;
    case P_BOR:  x = cg_fmt(g, "(%s)(%s | %s)", T, a, b); break;
    case P_BXOR: x = cg_fmt(g, "(%s)(%s ^ %s)", T, a, b); break;
    case P_BNOT: x = cg_fmt(g, "(%s)~%s", T, a); break;
    case P_SHL: case P_SHR:
        x = cg_fmt(g, "ax_%s_%s(%s, %s)", p == P_SHL ? "shl" : "shr", T, a, shift_amount(g, e->kid[1], b, false, w));
        break;
    case P_ROTL: case P_ROTR:
        x = cg_fmt(g, "ax_%s_%s(%s, %s)", p == P_ROTL ? "rotl" : "rotr", T, a, shift_amount(g, e->kid[1], b, true, w));
        break;
    case P_POPCOUNT: x = cg_fmt(g, "ax_popc_%s(%s)", T, a); break;
    case P_CLZ: x = cg_fmt(g, "ax_clz_%s(%s)", T, a); break;
    case P_CTZ: x = cg_fmt(g, "ax_ctz_%s(%s)", T, a); break;
    case P_EQ: case P_NE: case P_LT: case P_LE: case P_GT: case P_GE: {
        static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">="};
        x = cg_fmt(g, "(u8)(%s %s %s)", a, ops[p - P_EQ], b);
        break;
    }
    case P_NOT: x = cg_fmt(g, "(u8)!%s", a); break;
    case P_EXP: case P_LOG: case P_SQRT: case P_SIN: case P_COS: case P_TAN: case P_ASIN: case P_ACOS:
    case P_ATAN: case P_SINH: case P_COSH: case P_TANH: case P_ASINH: case P_ACOSH: case P_ATANH:
        x = cg_fmt(g, "%s(%s)", math_fn(g, p, s), a);
        break;
    case P_POW: case P_ATAN2:
        x = cg_fmt(g, "%s(%s, %s)", math_fn(g, p, s), a, b);
        break;
    case P_LOGBASE: {   /* logbase b x = log x / log b */
        const char *f = math_fn(g, p, s);
        x = cg_fmt(g, "%s(%s) / %s(%s)", f, b, f, a);
        break;
    }
    case P_ISNAN: x = cg_fmt(g, "(u8)(%s != %s)", a, a); break;
    case P_ISINF:
        if (g->dialect == CG_GPU) x = cg_fmt(g, "(u8)(fabs%s(%s) == AX_INF%s)", s == AX_F32 ? "f" : "", a, s == AX_F32 ? "F" : "");
        else x = cg_fmt(g, "(u8)(__builtin_fabs%s(%s) == __builtin_inf%s())", s == AX_F32 ? "f" : "", a,
                        s == AX_F32 ? "f" : "");
        break;
    case P_FLOOR: case P_CEIL: case P_ROUND: case P_TRUNC: {
        static const char *const rn[] = {"floor", "ceil", "rint", "trunc"};
        /* the GPU's through the prelude (ax_rint_f64, ...): the device's functions
           behind a guard that PoCL needs (gpu/codegen.c) */
        const char *rr = cg_local(g, s, g->dialect == CG_GPU
                                            ? cg_fmt(g, "ax_%s_%s(%s)", rn[p - P_FLOOR], cg_ctype(s), a)
                                            : cg_fmt(g, "__builtin_%s%s(%s)", rn[p - P_FLOOR], s == AX_F32 ? "f" : "", a));
        x = cvt_expr(g, s, rs, rr);
        break;
    }
    case P_CVT: x = cvt_expr(g, s, rs, a); break;
    case P_BITCAST: x = bitcast_expr(g, s, rs, a); break;
    default:
        cg_fail(g, "cpu codegen: primitive %s is not supported", prim_info[p].name);
        return cg_val(g, 0);
    }
    if (x) out.v[0] = cg_local(g, rs, x);
    return out;
}

/* ------------------------------------------------------------ control */

static Val gen_cond(G *g, const Node *e)
{
    Val c = cg_exp(g, e->kid[0]);
    if (c.n != 1) return cg_val(g, 0);
    if (cg_speculable(g, e->kid[1]) && cg_speculable(g, e->kid[2])) {
        Val t = spec_exp(g, e->kid[1], c.v[0]);
        Val f = spec_exp(g, e->kid[2], cg_fmt(g, "!%s", c.v[0]));
        Val r = cg_val(g, e->type->width);
        /* A float select is a bit select (ax_sel_*): written as `?:` GCC
           may sink a later comparison of the result into the arms, and a
           select between comparison results (masks of a different width
           than the condition's) does not vectorise (GCC 12).  Not in lane
           blocks: their lane arrays vectorise with `?:`, and the bit
           casts there are much slower.  In permute's scatter loop, which
           does not vectorise, every select is a bit select: GCC may
           compile `?:` to a branch, which mispredicts half the time on
           data such as radix sort's bits. */
        bool bits = g->role == R_PERM && g->dialect != CG_GPU;
        for (int k = 0; k < r.n && k < t.n && k < f.n; k++) {
            const ax_scalar s = ty_leaf(e->type, k);
            r.v[k] = !strcmp(t.v[k], f.v[k]) ? t.v[k]
                     : (is_float(s) || bits) && g->nlane == 0 && g->dialect != CG_GPU
                         ? cg_local(g, s, cg_fmt(g, "ax_sel_%s(%s, %s, %s)", cg_ctype(s), c.v[0], t.v[k], f.v[k]))
                                   : cg_local(g, s, cg_fmt(g, "%s ? %s : %s", c.v[0], t.v[k], f.v[k]));
        }
        return r;
    }
    Val r = cg_decl(g, e->type, "r");
    cg_line(g, "if (%s) {", c.v[0]);
    g->ind++;
    bool arr = branch_begin(g);
    cg_assign(g, r, cg_exp(g, e->kid[1]));
    g->ind--;
    cg_line(g, "} else {");
    g->ind++;
    cg_assign(g, r, cg_exp(g, e->kid[2]));
    g->lane_arr = arr;
    g->ind--;
    cg_line(g, "}");
    return r;
}

/* Ends a loop over the lanes of a block, nested in a loop that stops
 * once `flag` is clear, and reopens a loop over the lanes named l for the
 * code that follows (gen_while_lanes, gen_run). */
static void lanes_resume(G *g, const char *flag, const char *l)
{
    g->lane_arr = true;
    g->ind--;
    cg_line(g, "}");
    cg_line(g, "if (!%s) break;", flag);
    g->ind--;
    cg_line(g, "}");
    cg_line(g, "for (i64 %s = 0; %s < %s; %s++) {", l, l, g->lane_n, l);
    g->ind++;
}

/* While loops across lanes (G.lane): the lanes of a block iterate
 * together, under a mask of the lanes still looping.  The element code's
 * lane loop closes; a loop runs the condition and the body on every lane
 * while any lane's condition holds, a lane that is done keeping its value
 * (a select: the condition and body cannot fault, cg_lane_count, so
 * running them on a done lane is harmless); then the next lane loop opens
 * for the code after the while.  The masked lane loop is straight-line
 * code over a fixed number of lanes, which GCC vectorises: a scalar while
 * loop per element cannot be. */
static Val gen_while_lanes(G *g, const Node *cond, const Node *body, const Type *t, Val init)
{
    const char *l = g->lane;
    if (g->lanes) *g->lanes = true;
    Val cur = cg_bind(g, t, init, "w");
    const char *live = cg_lane_array(g, AX_BOOL, "live"), *any = cg_fresh(g, "any");
    g->ind--;
    cg_line(g, "}");
    cg_line(g, "for (i64 %s = 0; %s < %d; %s++) %s = (u8)(%s < %s);", l, l, g->nlane, l, live, l, g->lane_n);
    cg_line(g, "for (;;) {");
    g->ind++;
    cg_line(g, "if (__atomic_load_n(&c->err->code, __ATOMIC_RELAXED)) break;");
    cg_line(g, "u8 %s = 0;", any);
    cg_line(g, "#pragma omp simd reduction(|:%s)", any);
    cg_line(g, "for (i64 %s = 0; %s < %d; %s++) {", l, l, g->nlane, l);
    g->ind++;
    g->lane_arr = false;
    Val cv = cg_apply(g, cond, &cur, 1);
    const char *ok = cv.n == 1 ? cg_local(g, AX_BOOL, cg_fmt(g, "(u8)(%s & %s)", live, cv.v[0])) : "0";
    Val nv = cg_bind(g, t, cg_apply(g, body, &cur, 1), "n");
    for (int k = 0; k < cur.n && k < nv.n; k++) cg_line(g, "%s = %s ? %s : %s;", cur.v[k], ok, nv.v[k], cur.v[k]);
    cg_line(g, "%s = %s;", live, ok);
    cg_line(g, "%s |= %s;", any, ok);
    lanes_resume(g, any, l);
    return cur;
}

/* A run of unrolled steps in lane blocks (see "unrolled steps"): the state
 * is what a group reads of the group before (in lane arrays, from the
 * group before the run); a loop computes the next state from it on every
 * lane, for all groups but the last or until no lane's state changed
 * (compared bit for bit: a NaN equals itself, -0 differs from +0); the
 * last group is then ordinary code on the state, so that all its bindings
 * are there for the code after the run. */
static void gen_run(G *g, const Chain *ch, int s, int per, int reps)
{
    const char *l = g->lane, *r = cg_fresh(g, "r"), *changed = cg_fresh(g, "ch");
    if (g->lanes) *g->lanes = true;
    Val *saved = arena_alloc(g->ar, sizeof *saved * (size_t)per), *st = arena_alloc(g->ar, sizeof *st * (size_t)per);
    Val *nv = arena_alloc(g->ar, sizeof *nv * (size_t)per);
    bool *need = arena_alloc(g->ar, sizeof *need * (size_t)per);
    if (!saved || !st || !nv || !need) return cg_fail(g, "cpu codegen: out of memory");
    for (int q = 0; q < per; q++) {
        const Node *b = ch->let[s - per + q];
        need[q] = false;
        for (int k = 0; k < per && !need[q]; k++) need[q] = refers(ch, ch->let[s + k]->kid[0], s - per + q, s - per + q + 1);
        saved[q] = g->env[b->id];
        if (need[q]) g->env[b->id] = st[q] = cg_bind(g, b->kid[0]->type, saved[q], "s");
    }
    g->ind--;
    cg_line(g, "}");
    cg_line(g, "for (i64 %s = 1; %s < %d; %s++) {", r, r, reps, r);
    g->ind++;
    cg_line(g, "u8 %s = 0;", changed);
    cg_line(g, "#pragma omp simd reduction(|:%s)", changed);
    /* The kernel at 256 bits: GCC 12 (-march=native on a Zen 4 EPYC:
     * znver3 tuning, no preferred width, so 512 where it can) compiles
     * such runs faster at 256 (Mandelbrot's: the only Table-2 program
     * with runs).  A `simdlen(8)` on this loop alone gained nothing: the
     * loops around it gain too.  The other programs at 256 bits for the
     * whole unit are equal or slower (their libmvec calls go through the
     * half-width wrappers), so only such kernels narrow. */
    g->narrow = true;
    cg_line(g, "for (i64 %s = 0; %s < %d; %s++) {", l, l, g->nlane, l);
    g->ind++;
    g->lane_arr = false;
    for (int q = 0; q < per && !g->failed; q++) g->env[ch->let[s + q]->id] = cg_exp(g, ch->let[s + q]->kid[0]);
    Buf t = {0};
    for (int q = 0; q < per; q++) {
        if (!need[q]) continue;
        const Type *ty = ch->let[s + q]->kid[0]->type;
        nv[q] = cg_bind(g, ty, g->env[ch->let[s + q]->id], "n");
        for (int k = 0; k < nv[q].n && k < st[q].n; k++) {
            ax_scalar sc = ty_leaf(ty, k);
            if (sc == AX_F32 || sc == AX_F64)
                buf_printf(&t, " | (ax_bits_%s(%s) != ax_bits_%s(%s))", cg_ctype(sc), nv[q].v[k], cg_ctype(sc), st[q].v[k]);
            else
                buf_printf(&t, " | (%s != %s)", nv[q].v[k], st[q].v[k]);
        }
    }
    cg_line(g, "%s |= (u8)((%s < %s) & (0%s));", changed, l, g->lane_n, cg_buf_text(g, &t, ""));
    free(t.s);
    for (int q = 0; q < per; q++)
        if (need[q]) cg_assign(g, st[q], nv[q]);
    lanes_resume(g, changed, l);
    /* the last group, on the state the loop leaves */
    int last = s + (reps - 1) * per;
    for (int q = 0; q < per; q++) {
        g->env[ch->let[s - per + q]->id] = saved[q];
        if (need[q]) g->env[ch->let[last - per + q]->id] = st[q];
    }
    for (int q = 0; q < per && !g->failed; q++) g->env[ch->let[last + q]->id] = cg_exp(g, ch->let[last + q]->kid[0]);
}

/* A let chain in lane blocks: runs of unrolled steps as loops. */
static Val gen_let_lanes(G *g, const Node *e)
{
    Chain ch;
    if (!chain_of(e, &ch)) return cg_fail(g, "cpu codegen: out of memory"), cg_val(g, 0);
    const Node *body = ch.let[ch.n - 1]->kid[1];
    for (int k = 0; k < ch.n && !g->failed; k++) {
        const Node *b = ch.let[k];
        if ((unsigned)b->id >= (unsigned)g->nvars) {
            cg_fail(g, "cpu codegen: variable id out of range");
            break;
        }
        int per = 0, reps = run_at(&ch, k, body, &per);
        if (reps) {
            gen_run(g, &ch, k, per, reps);
            k += reps * per - 1;
        } else {
            g->env[b->id] = cg_exp(g, b->kid[0]);
        }
    }
    chain_free(&ch);
    return cg_exp(g, body);
}

/* while: the loop's value lives in locals; each iteration computes the
 * next value into temporaries first (the body may swap components).  The
 * loop also stops once a fault is recorded: after a fault the program's
 * values are zeros, not the user's, and a loop on them need not end. */
static Val gen_while(G *g, const Node *e)
{
    const Node *cond = e->kid[0], *body = e->kid[1];
    if (!cond || cond->op != OP_LAM || cond->nparam != 1 || !body || body->op != OP_LAM || body->nparam != 1) {
        cg_fail(g, "cpu codegen: malformed while loop");
        return cg_val(g, 0);
    }
    Val init = cg_exp(g, e->kid[2]);
    if (g->lane && g->lane_arr) return gen_while_lanes(g, cond, body, e->type, init);
    Val cur = cg_bind(g, e->type, init, "w");
    cg_line(g, "for (;;) {");
    g->ind++;
    if (g->dialect == CG_GPU) cg_line(g, "if (ax_faulted(err_)) break;");
    else cg_line(g, "if (__atomic_load_n(&c->err->code, __ATOMIC_RELAXED)) break;");
    Val cv = cg_apply(g, cond, &cur, 1);
    if (cv.n == 1) cg_line(g, "if (!%s) break;", cv.v[0]);
    Val nv = cg_apply(g, body, &cur, 1);
    Val tmp = cg_bind(g, e->type, nv, "n");
    cg_assign(g, cur, tmp);
    g->ind--;
    cg_line(g, "}");
    return cur;
}

/* ------------------------------------------------------------ the walk */

Val cg_apply(G *g, const Node *lam, const Val *args, int nargs)
{
    if (!lam || lam->op != OP_LAM || lam->nparam != nargs || lam->n < 1) {
        cg_fail(g, "cpu codegen: a function applied to %d arguments does not fit", nargs);
        return cg_val(g, 0);
    }
    for (int k = 0; k < nargs; k++) {
        const Node *p = lam->param[k];
        if (!p || (unsigned)p->id >= (unsigned)g->nvars || args[k].n != p->type->width) {
            cg_fail(g, "cpu codegen: bad function parameter");
            return cg_val(g, 0);
        }
        g->env[p->id] = args[k];
    }
    return cg_exp(g, lam->kid[0]);
}

Val cg_apply2(G *g, const Node *f, Val a, Val b)
{
    Val args[2] = {a, b};
    return cg_apply(g, f, args, 2);
}

Val cg_exp(G *g, const Node *e)
{
    if (g->failed) return cg_val(g, 0);
    if (!e) {
        cg_fail(g, "cpu codegen: a missing expression");
        return cg_val(g, 0);
    }
    for (int k = 0; k < g->nhoist; k++)
        if (g->hoist[k].e == e && !g->hoist[k].read && (!g->hoist[k].spec || (g->spec && !strcmp(g->hoist[k].spec, g->spec))))
            return g->hoist[k].v;
    switch (e->op) {
    case OP_CONST: {
        Val v = cg_val(g, 1);
        v.v[0] = cg_const(g, scalar_of(e->type), e->c);
        return v;
    }
    case OP_VAR: {
        if ((unsigned)e->id >= (unsigned)g->nvars || g->env[e->id].n != e->type->width || !g->env[e->id].v) {
            cg_fail(g, "cpu codegen: unbound variable x%d", e->id);
            return cg_val(g, 0);
        }
        return g->env[e->id];
    }
    case OP_LET: {
        if ((unsigned)e->id >= (unsigned)g->nvars) {
            cg_fail(g, "cpu codegen: variable id out of range");
            return cg_val(g, 0);
        }
        if (g->lane && g->lane_arr) return gen_let_lanes(g, e);
        /* A chain of lets in a loop (long chains must not use the stack). */
        while (e->op == OP_LET && !g->failed) {
            g->env[e->id] = cg_exp(g, e->kid[0]);
            let_fact(g, e);
            e = e->kid[1];
        }
        return cg_exp(g, e);
    }
    case OP_TUPLE:
    case OP_IXCONS: {
        Val r = cg_val(g, e->type->width);
        int off = 0;
        for (int k = 0; k < e->n && !g->failed; k++) {
            Val v = cg_exp(g, e->kid[k]);
            if (e->op == OP_IXCONS && v.n == 1 && scalar_of(e->kid[k]->type) != AX_I64)
                v.v[0] = cg_local(g, AX_I64, cvt_expr(g, scalar_of(e->kid[k]->type), AX_I64, v.v[0]));
            for (int j = 0; j < v.n && off + j < r.n; j++) r.v[off + j] = v.v[j];
            off += v.n;
        }
        if (off != r.n) cg_fail(g, "cpu codegen: a tuple's leaves do not match its type");
        return r;
    }
    case OP_PROJ:
    case OP_IXGET: {
        Val t = cg_exp(g, e->kid[0]);
        const Type *tt = e->kid[0]->type;
        int off = e->op == OP_PROJ ? ty_leaf_offset(tt, e->a) : e->a;
        if (off + e->type->width > t.n) {
            if (!g->failed) cg_fail(g, "cpu codegen: projection out of range");
            return cg_val(g, 0);
        }
        return cg_slice(t, off, e->type->width);
    }
    case OP_PRIM: return gen_prim(g, e);
    case OP_COND: return gen_cond(g, e);
    case OP_WHILE: return gen_while(g, e);
    case OP_INDEX:
    case OP_LINDEX: return gen_index(g, e);
    case OP_SHAPE: {
        int slot = cg_free_slot(g->cn, e->kid[0]);
        const Type *at = slot >= 0 ? cg_slot_type(g->cn, slot) : NULL;
        if (!at || at->kind != TY_ARRAY) {
            cg_fail(g, "cpu codegen: shape of an array that is not a variable");
            return cg_val(g, 0);
        }
        Val r = cg_val(g, at->rank);
        for (int d = 0; d < at->rank; d++) r.v[d] = cg_fmt(g, "s%d_%d", slot, d);
        return r;
    }
    default:
        cg_fail(g, "cpu codegen: %s is not a scalar expression", op_name(e->op));
        return cg_val(g, 0);
    }
}

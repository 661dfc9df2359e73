/*
 * The CPU's reductions: fold and fold1, the segmented folds, and the row
 * machinery that the scans and the multi-generator loops share (thesis
 * s.4, Accelerate's "fold" skeleton).  An operator that is syntactically
 * commutative and associative (add, mul, min, max, the bit and boolean
 * and/or/xor, componentwise on tuples: cg_lam_comm) is folded into LANES
 * independent accumulators, combined in lane order at the end; GCC
 * vectorises that loop without -ffast-math.  Any other operator is folded
 * strictly left to right.  Few long rows are split into chunks whose
 * partial results are combined in chunk order (so a non-commutative
 * operator stays correct).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "skel.h"
#include <stdlib.h>

/* Accumulators of the lane-parallel reduction loop: 128 bytes of the
 * smallest leaf, four AVX2 registers (four independent dependency chains
 * hide the add latency, where two did not), but for a tuple no more lanes
 * than fit 256 bytes of accumulators in all (eight of the sixteen AVX2
 * registers: the element code needs the rest) and no fewer than one
 * 32-byte vector of the smallest leaf.  N-body's (x, y, z) f32 sums had
 * 32 lanes, twelve vectors of accumulators that GCC spilled to the stack
 * in the loop; 16 lanes (six) keep them in registers.  A scalar or a pair
 * keeps its 128 bytes. */
static size_t smallest_leaf(const Type *elt)
{
    size_t m = 8;
    for (int l = 0; l < elt->width; l++) {
        size_t z = ax_scalar_size(ty_leaf(elt, l));
        if (z < m) m = z;
    }
    return m;
}

int cpu_lanes(const Type *elt)
{
    size_t m = smallest_leaf(elt), all = 0;
    for (int l = 0; l < elt->width; l++) all += ax_scalar_size(ty_leaf(elt, l));
    int lanes = (int)(128 / m), lo = cpu_mid_lanes(elt);
    while (lanes > lo && (size_t)lanes * all > 256) lanes /= 2;
    return lanes;
}

/* One 32-byte vector of the smallest leaf: the fewest lanes cpu_lanes
 * gives, and the lanes of rows too short for those (fewer than twice as
 * many elements). */
int cpu_mid_lanes(const Type *elt)
{
    return (int)(32 / smallest_leaf(elt));
}

/* An empty asm statement is volatile and touches nothing: GCC does not
 * vectorise a loop that contains one, and a loop nest with one between
 * its loops is not a perfect nest, which unroll-and-jam needs.  The row
 * skeletons put it where -O3's transformations buy no run time and cost
 * compile time (`axle bench --compile` measures it against the floor):
 * - the blocked lane loop, which GCC 12 unrolls and jams twice (its
 *   inner loop is vectorised all the same);
 * - the exact modes' lane sum, strictly in lane order whatever GCC does;
 * - the combination of a row's chunk partials, a few per row;
 * - the exact modes' tail of a single row (cpu_fold_range). */
void cpu_keep_loop(G *g)
{
    cg_line(g, "__asm__(\"\");");
}

/* The lane loop of a reduction is vectorised only if GCC does not peel
 * it completely first: its early complete unrolling (cunrolli) turns a
 * loop of a constant 16 or 32 iterations into straight-line code, whose
 * accumulators, carried around the loop over blocks, the basic-block
 * vectoriser does not take, and a dot product's lanes stayed scalar
 * under -ffp-contract=off (the exact modes) on every x86 target GCC 12
 * was asked for.  With complete unrolling refused the loop vectoriser
 * takes the loop, whose vector form is then unrolled as usual. */
void cpu_no_peel(G *g)
{
    cg_line(g, "#pragma GCC unroll 1");
}

/* ------------------------------------------------------------ the operators' identities */

/* The C expression of a commutative primitive (cg_comm_op) on two values of
 * scalar type s; NULL for another primitive. */
const char *cpu_leaf_op(G *g, Prim op, ax_scalar s, const char *a, const char *b)
{
    const char *T = cg_ctype(s);
    bool fl = s == AX_F32 || s == AX_F64;
    switch (op) {
    case P_ADD: case P_MUL:
        if (fl) return cg_fmt(g, "%s %s %s", a, op == P_ADD ? "+" : "*", b);
        /* integers wrap: in unsigned arithmetic, as C allows */
        return cg_fmt(g, "(%s)((%s)%s %s (%s)%s)", T, sc_bits(s) > 32 ? "u64" : "u32", a, op == P_ADD ? "+" : "*",
                      sc_bits(s) > 32 ? "u64" : "u32", b);
    case P_MIN: return fl ? cg_fmt(g, "ax_min_%s(%s, %s)", T, a, b) : cg_fmt(g, "%s <= %s ? %s : %s", a, b, a, b);
    case P_MAX: return fl ? cg_fmt(g, "ax_max_%s(%s, %s)", T, a, b) : cg_fmt(g, "%s >= %s ? %s : %s", a, b, a, b);
    case P_BAND: case P_AND: return cg_fmt(g, "(%s)(%s & %s)", T, a, b);
    case P_BOR: case P_OR: return cg_fmt(g, "(%s)(%s | %s)", T, a, b);
    case P_BXOR: return cg_fmt(g, "(%s)(%s ^ %s)", T, a, b);
    default: return NULL;
    }
}

/* The identity of a commutative primitive on type s, as a C expression:
 * op(identity, x) == x for every x, bit for bit (float add: -0, since
 * -0 + +0 is +0; float min and max: NaN, which loses to every value). */
const char *cpu_leaf_identity(G *g, Prim op, ax_scalar s)
{
    const char *T = cg_ctype(s);
    bool fl = s == AX_F32 || s == AX_F64, sg = s >= AX_I8 && s <= AX_I64;
    int bits = sc_bits(s);
    switch (op) {
    case P_ADD: return fl ? cg_fmt(g, "(%s)-0.0", T) : cg_fmt(g, "(%s)0", T);
    case P_MUL: return cg_fmt(g, "(%s)1", T);
    case P_MIN: case P_MAX:
        if (fl) return cg_fmt(g, "(%s)__builtin_nan(\"\")", T);
        if (!sg) return op == P_MIN ? cg_fmt(g, "(%s)~(%s)0", T, T) : cg_fmt(g, "(%s)0", T);
        return op == P_MIN ? cg_fmt(g, "(%s)(((u64)1 << %d) - 1)", T, bits - 1)
                           : cg_fmt(g, "(%s)(-(i64)(((u64)1 << %d) - 1) - 1)", T, bits - 1);
    case P_BAND: return cg_fmt(g, "(%s)~(%s)0", T, T);
    case P_AND: return "(u8)1";
    case P_BOR: case P_BXOR: case P_OR: return cg_fmt(g, "(%s)0", T);
    default: return NULL;
    }
}

/* ------------------------------------------------------------ rows */

/* A long range folded with an operator that is not (syntactically)
 * commutative, in CHAINS contiguous blocks at once: chain l folds block
 * l of [lo, lo + CHAINS * cb) from its first element, the chains are
 * combined in block order, and the rest (fewer than CHAINS elements) is
 * left to the tail loop.  Only associativity, which ax_fold asks of f,
 * makes that the range's fold, as it does for the chunks of a row
 * split across threads.  The chains are independent, so their
 * operators' latencies overlap where one chain waits for each step's
 * result: a (distance, number) minimum with a filter's "has a value"
 * flag (Rodinia's nn) is a dependency chain of a dozen operations per
 * element.  Not in the checked copies, which rerun a range to report its
 * first fault and keep the plain loop.  Opens "if (long) {" and leaves it
 * open for the caller's else. */
enum { CHAINS = 8, CHAIN_MIN = 256 };

static void fold_chains(G *g, const Node *f, const Type *elt, const char *lo, const char *hi, const char *j, Val res,
                        const CgRowRead *rr)
{
    cg_line(g, "if (%s - %s >= %d) {", hi, lo, CHAIN_MIN);
    g->ind++;
    const char *cb = cg_local(g, AX_I64, cg_fmt(g, "(%s - %s) / %d", hi, lo, CHAINS));
    Val ch = cg_leaf_arrays(g, elt, "ch", CHAINS);
    const char *l = cg_fresh(g, "l"), *q = cg_fresh(g, "q");
    cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, CHAINS, l);
    g->ind++;
    g->pos = cg_fmt(g, "(%s + %s * %s)", lo, l, cb);
    cg_put(g, ch, l, cg_read_row(g, rr, g->pos));
    cg_close(g);
    cg_line(g, "for (i64 %s = 1; %s < %s; %s++) {", q, q, cb, q);
    g->ind++;
    cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, CHAINS, l);
    g->ind++;
    g->pos = cg_fmt(g, "(%s + %s * %s + %s)", lo, l, cb, q);
    Val a = cg_at(g, ch, l);
    cg_update(g, elt, a, cg_apply2(g, f, a, cg_read_row(g, rr, g->pos)));
    cg_close(g);
    cpu_keep_loop(g);
    cg_close(g);
    cg_assign(g, res, cg_at(g, ch, "0"));
    for (int k = 1; k < CHAINS; k++) cg_update(g, elt, res, cg_apply2(g, f, res, cg_at(g, ch, cg_fmt(g, "%d", k))));
    cg_line(g, "%s = %s + %d * %s;", j, lo, CHAINS, cb);
}

/* The lanes of a commutative f's fold of [lo, hi) (ops: its leaves'
 * primitives): L accumulators, each the fold of one residue class from
 * the operator's identity, combined in lane order into res, j left at
 * the first position after the blocks.  Opens "if (hi - lo >= 2 L) {"
 * and leaves it open for the caller's else. */
static void fold_lanes(G *g, const Node *f, const Type *elt, const Prim *ops, int L, const char *lo, const char *hi,
                       const char *j, Val res, const CgRowRead *rr)
{
    cg_line(g, "if (%s - %s >= %d) {", hi, lo, 2 * L);
    g->ind++;
    Val lane = cg_leaf_arrays(g, elt, "lane", L);
    /* Every lane starts at the operator's identity (cpu_leaf_identity;
     * float min and max, whose identity is NaN, at the range's first
     * element, which they may take twice), and the blocked loop
     * starts at lo.  The first block peeled into the lanes instead
     * made GCC 12 unroll the blocked loop twice and spill its
     * accumulators (N-body).  The results are the same bit for bit:
     * each lane still folds its residue class from its first element. */
    Val first = cg_val(g, 0);
    const char *init[64];
    for (int k = 0; k < lane.n; k++) {
        ax_scalar s = ty_leaf(elt, k);
        bool fl = s == AX_F32 || s == AX_F64;
        init[k] = (fl && (ops[k] == P_MIN || ops[k] == P_MAX)) ? NULL : cpu_leaf_identity(g, ops[k], s);
        if (!init[k] && first.n == 0) {
            g->pos = lo;
            first = cg_bind(g, elt, cg_read_row(g, rr, lo), "x");
        }
        if (!init[k]) init[k] = k < first.n ? first.v[k] : "0";
    }
    const char *l = cg_fresh(g, "l");
    cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, L, l);
    g->ind++;
    for (int k = 0; k < lane.n; k++) cg_line(g, "%s[%s] = %s;", lane.v[k], l, init[k]);
    cg_close(g);
    cg_line(g, "for (%s = %s; %s + %d <= %s; %s += %d) {", j, lo, j, L, hi, j, L);
    g->ind++;
    cpu_no_peel(g);
    cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, L, l);
    g->ind++;
    g->pos = cg_fmt(g, "(%s + %s)", j, l);
    Val acc = cg_at(g, lane, l);
    Val xj = cg_read_row(g, rr, cg_fmt(g, "%s + %s", j, l));
    cg_update(g, elt, acc, cg_apply2(g, f, acc, xj));
    cg_close(g);
    cpu_keep_loop(g);
    cg_close(g);
    cg_assign(g, res, cg_at(g, lane, "0"));
    cg_line(g, "for (int %s = 1; %s < %d; %s++) {", l, l, L, l);
    g->ind++;
    if (!g->fast) cpu_keep_loop(g);
    cg_update(g, elt, res, cg_apply2(g, f, res, cg_at(g, lane, l)));
    cg_close(g);
    g->ind--;
    cg_line(g, "} else {");
    g->ind++;
}

/* Folds positions [lo, hi) (hi > lo; atoms) of operand 0 with f into fresh
 * locals: LANES accumulators when f is commutative (each the fold of one
 * residue class, combined in lane order), then the tail left to right;
 * a non-commutative f in chains of blocks (fold_chains), and a short
 * range strictly left to right. */
Val cpu_fold_range(G *g, const Node *f, const Type *elt, const char *lo, const char *hi, bool comm,
                   bool one_row, const CgRowRead *rr)
{
    cg_row_hoist(g, rr);   /* the terms of the row alone, once (hoist.c) */
    Val res = cg_decl(g, elt, "r");
    const char *j = cg_fresh(g, "j");
    const int LANES = cpu_lanes(elt);
    Prim ops[64];
    if (comm && (elt->width > (int)(sizeof ops / sizeof *ops) || !cg_lam_comm(f, ops))) comm = false;
    cg_line(g, "i64 %s = %s + 1;", j, lo);
    /* Rows shorter than 2 LANES (Rodinia kmeans' 34 features) in fewer
     * lanes, one 32-byte vector of the smallest leaf: a row's sum is then
     * a few vector steps and a sum of 8 lanes where it was a chain of one
     * dependent step per element.  Not where the row's element gathers
     * (a checked read at a computed index, exp.c): smvm's rows of tens of
     * elements were slower in vectors of gathers than one by one. */
    int mid = 0;
    if (comm) {
        bool gathers = false, *unit_gathers = g->gather;
        g->gather = &gathers;
        fold_lanes(g, f, elt, ops, LANES, lo, hi, j, res, rr);
        g->gather = unit_gathers;
        if (gathers && unit_gathers) *unit_gathers = true;
        mid = gathers ? LANES : cpu_mid_lanes(elt);
        if (mid < LANES) fold_lanes(g, f, elt, ops, mid, lo, hi, j, res, rr);
    }
    if (!comm && !g->chk) {
        fold_chains(g, f, elt, lo, hi, j, res, rr);
        g->ind--;
        cg_line(g, "} else {");
        g->ind++;
    }
    g->pos = lo;
    cg_assign(g, res, cg_read_row(g, rr, lo));
    if (comm && mid < LANES) cg_close(g);
    if (comm || !g->chk) cg_close(g);
    /* the tail (or the whole range) left to right.  Under the fast
     * modes' reassociation GCC vectorises this loop too, with gathers and
     * a horizontal sum per row, which made smvm's rows (a few to tens of
     * elements, all of them in this loop) slower than the exact mode's.
     * An empty asm keeps the loop scalar, as it is in the exact mode
     * (which it is not emitted in: it was slower there, where GCC's
     * in-order vectorisation gathers a row's elements); GCC 12 has no
     * pragma that says so (`GCC novector` is GCC 14's).  The exact mode
     * keeps it scalar too where there is one row (a fold to a scalar, a
     * scan of a vector): there this loop sees at most LANES - 1 elements
     * after the lanes, or a short array, and vectorising it costs compile
     * time only (cpu_keep_loop). */
    cg_line(g, "for (; %s < %s; %s++) {", j, hi, j);
    g->ind++;
    if (comm && (g->fast || one_row)) cpu_keep_loop(g);
    g->pos = j;
    cg_update(g, elt, res, cg_apply2(g, f, res, cg_read_row(g, rr, j)));
    cg_close(g);
    return res;
}



Val cpu_zval(G *g, const Type *elt)
{
    return cg_param(g, g->cn->kid_thunk[1], elt);
}

/* Opens the part kernel of a fold or scan: n, ch and nch (c->nchunk
 * chunks of c->chunk per row of n), *q the partials in scratch. */
static void cpu_part_head(G *g, const Type *elt, Val *q)
{
    cpu_kernel_begin(g, R_PART, 0, true);
    cg_line(g, "const i64 n = c->n, ch = c->chunk, nch = c->nchunk;");
    *q = cpu_scratch(g, elt, "c->s1");
}

/* Opens the part kernel's task loop from task `from`: task t is chunk k
 * of row `row`, positions [lo, hi).  Leaves the loop open. */
static CgRowRead cpu_part_loop(G *g, const char *from)
{
    cg_line(g, "for (i64 t = %s; t < end; t++) {", from);
    g->ind++;
    /* one chunk per row (many rows) is the common case: no division */
    cg_line(g, "const i64 row = nch == 1 ? t : t / nch, k = nch == 1 ? 0 : t %% nch;");
    cg_line(g, "const i64 lo = row * n + k * ch, hi = ax_min64(lo + ch, row * n + n);");
    return cg_row_read(g, "row", "row * n", true);
}

CgRowRead cpu_part_begin(G *g, const Type *elt, Val *q)
{
    cpu_part_head(g, elt, q);
    return cpu_part_loop(g, "start");
}

/* ------------------------------------------------------------ folds across rows
 *
 * A fold of many rows whose element at (i, j) reads arrays at indices of
 * i alone or of j alone (N-body's all pairs: x[i] and x[j]) runs blocks
 * of LANES rows at once: one loop over j, in order, and in it a loop over
 * the block's rows that GCC vectorises, i's reads a vector (loop
 * invariant), j's a broadcast.  Each row is folded strictly left to
 * right from z, the interpreter's order, whatever the operator, so no
 * lanes are combined at the end.  This is Halide's schedule for N-body
 * (its bodies i in vectors, the loop over j inside).  The lanes along a
 * row (cpu_fold_range) stay for the rest: few long rows (chunks), a
 * block's remainder, and elements that read at (i, j) together (a
 * matrix's rows, which across rows would gather), except a read of a
 * matrix's column i at j (a transposed matrix's rows, gemver's A^T y),
 * which across rows reads consecutive elements.  On N-body it is
 * faster than folding along rows in both the exact and the fast mode.
 * The price is a second copy of the element code in the unit, and a
 * longer compile of it. */

/* Which dimensions of index parameter pid an expression depends on (a
 * bit each), through the let-bound variables in s; s->ok cleared by a
 * read at an index of both the row's dimensions and the innermost one
 * (other than sep_transposed's), or by what the analysis does not follow (loops, lambdas, more than
 * SEP_LETS lets). */
enum { SEP_LETS = 64 };
typedef struct Sep {
    int pid, rank, nlet;
    struct { int id; unsigned m; const Node *bound; } let[SEP_LETS];
    bool ok;
} Sep;

static unsigned sep_dep(Sep *s, const Node *e);

/* Whether index e (an ixcons, or a variable bound to one) reads the
 * row's dimensions in its last component alone and the inner one in the
 * others alone: a[j, i] for row i, along j (gemver's A^T y).  Across
 * rows such a read is a vector of consecutive elements, where along the
 * row it strides through a's rows. */
static bool sep_transposed(Sep *s, const Node *e)
{
    for (int k = s->nlet - 1; e && e->op == OP_VAR && k >= 0; k--)
        if (s->let[k].id == e->id) e = s->let[k].bound;
    if (!e || e->op != OP_IXCONS || e->n < 2) return false;
    unsigned inner = 1u << (s->rank - 1);
    for (int c = 0; c < e->n; c++) {
        unsigned m = sep_dep(s, e->kid[c]);
        if (c == e->n - 1 ? (m & inner) != 0 : (m & (inner - 1)) != 0) return false;
    }
    return s->ok;
}

static unsigned sep_dep(Sep *s, const Node *e)
{
    unsigned m = 0;
    while (e && s->ok) {
        switch (e->op) {
        case OP_LET:
            if (s->nlet == SEP_LETS || !e->kid[0] || e->kid[0]->type->kind == TY_ARRAY) {
                s->ok = false;
                return 0;
            }
            s->let[s->nlet].m = sep_dep(s, e->kid[0]);
            s->let[s->nlet].bound = e->kid[0];
            s->let[s->nlet++].id = e->id;
            e = e->kid[1];
            continue;
        case OP_VAR:
            if (e->id == s->pid) return m | ((1u << s->rank) - 1);
            for (int k = s->nlet - 1; k >= 0; k--)
                if (s->let[k].id == e->id) return m | s->let[k].m;
            return m;
        case OP_IXGET:
            if (e->kid[0] && e->kid[0]->op == OP_VAR && e->kid[0]->id == s->pid)
                return m | (e->a >= 0 && e->a < s->rank ? 1u << e->a : (1u << s->rank) - 1);
            break;
        case OP_INDEX: case OP_LINDEX: {
            unsigned ix = sep_dep(s, e->kid[1]), inner = 1u << (s->rank - 1);
            if ((ix & inner) && (ix & (inner - 1)) && !(e->op == OP_INDEX && sep_transposed(s, e->kid[1]))) s->ok = false;
            return m | ix;
        }
        case OP_WHILE: case OP_LAM: case OP_AWHILE:
            s->ok = false;
            return 0;
        default: break;
        }
        for (int i = 0; i < e->n; i++) m |= sep_dep(s, e->kid[i]);
        return m;
    }
    return m;
}

/* The index function of fold x's array where the fold may run across
 * rows: the array a DELAYED of rank 2 and up (exactly 2 where exact2),
 * read through a one-parameter lambda, in the kernel that is not a
 * checked copy; else NULL. */
static const Node *fold_rows_lam(const G *g, const Node *x, bool exact2)
{
    if (g->chk || x->op != OP_FOLD) return NULL;
    const Node *y = x->n > 2 ? x->kid[2] : NULL;
    if (!y || y->op != OP_DELAYED || y->n < 2 || y->type->rank < 2 || (exact2 && y->type->rank != 2)) return NULL;
    const Node *lam = y->kid[1];
    if (!lam || lam->op != OP_LAM || lam->nparam != 1 || !lam->param[0]) return NULL;
    return lam;
}

/* Whether fold x (with z) runs across rows: its array a DELAYED of rank
 * 2 whose index form is separable (above), on the CPU, in the kernel
 * that is not a checked copy. */
static bool fold_across(const G *g, const Node *x)
{
    const Node *lam = fold_rows_lam(g, x, true);
    if (!lam) return false;
    Sep s = {.pid = lam->param[0]->id, .rank = 2, .ok = true};
    sep_dep(&s, lam->kid[0]);
    return s.ok;
}

/* Whether fold x, whose index form is not separable (or of rank above
 * 2), runs across rows where its rows are short: the condition on the
 * row's length n (fold_rows_across's `few`), or NULL.  Along a row, an
 * operator that is not commutative folds a row shorter than CHAIN_MIN
 * in one chain, each step waiting for the last (k-means' nearest of 5
 * clusters, a (distance, cluster) minimum); across rows the lanes are
 * independent rows, whose reads gather.  Not for a commutative
 * operator, whose short rows fold in vectors along the row (k-means'
 * distances, rows of 34, ran slower across rows, in gathers). */
static const char *fold_across_short(G *g, const Node *x, bool comm)
{
    if (comm || !fold_rows_lam(g, x, false)) return NULL;
    return cg_fmt(g, "n < %d", CHAIN_MIN);
}

/* The blocks of rows of a fold across rows, before the task loop: with
 * one chunk per row task t is row t, and a range [start, end) of at
 * least LANES rows is done here in blocks, the last one moved back to
 * end at end (its first rows, done already, are done again to the same
 * values).  So every row of such a range is folded in the same order,
 * whichever range it falls in, and the row loop keeps only ranges of
 * fewer rows (and chunked rows).  few: a condition on the row's length
 * n under which the blocks run (NULL: always).  An operand of rank above
 * 2 has each lane's outer coordinates worked out once per block.
 * Returns the first task left to the task loop (start stays the
 * range's, which a failed check reruns). */
static const char *fold_rows_across(G *g, const Node *f, const Type *elt, const char *few)
{
    const int LANES = cpu_lanes(elt);
    const int r = cg_opd_node(g->cn, 0)->type->rank, slot = cg_opd_slot(g->cn, 0);
    const char *b = cg_fresh(g, "b");
    cg_line(g, "i64 %s = start;", b);
    cg_line(g, "if (nch == 1 && end - start >= %d%s%s) {", LANES, few ? " && " : "", few ? few : "");
    g->ind++;
    cg_line(g, "for (; %s < end; %s += %d) {", b, b, LANES);
    g->ind++;
    cg_line(g, "if (%s + %d > end) %s = end - %d;", b, LANES, b, LANES);
    Val acc = cg_leaf_arrays(g, elt, "acc", LANES);
    const char *l = cg_fresh(g, "l"), *j = cg_fresh(g, "j");
    const char *oc[AX_MAX_RANK];
    if (r > 2) {
        /* lane l's row b + l as its outer coordinates */
        for (int d = 0; d < r - 1; d++) {
            oc[d] = cg_fresh(g, "oc");
            cg_line(g, "i64 %s[%d];", oc[d], LANES);
        }
        cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, LANES, l);
        g->ind++;
        Val lane = cg_val(g, r - 1);
        for (int d = 0; d < lane.n; d++) lane.v[d] = cg_fmt(g, "%s[%s]", oc[d], l);
        cg_coords(g, cg_fmt(g, "%s + %s", b, l), cg_extents(g, slot, r - 1), lane, false);
        cg_close(g);
    }
    Val z = cpu_zval(g, elt);
    cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, LANES, l);
    g->ind++;
    cg_put(g, acc, l, z);
    cg_close(g);
    cg_line(g, "for (i64 %s = 0; %s < n; %s++) {", j, j, j);
    g->ind++;
    cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, LANES, l);
    g->ind++;
    const char *row = cg_local(g, AX_I64, cg_fmt(g, "%s + %s", b, l));
    Val ix = cg_val(g, r);
    if (ix.n == r) {
        if (r > 2)
            for (int d = 0; d < r - 1; d++) ix.v[d] = cg_fmt(g, "%s[%s]", oc[d], l);
        else
            ix.v[0] = row;
        ix.v[r - 1] = j;
    }
    g->pos = cg_fmt(g, "(%s * n + %s)", row, j);
    Val a = cg_at(g, acc, l);
    cg_update(g, elt, a, cg_apply2(g, f, a, cg_read_ix(g, 0, ix)));
    cg_close(g);
    cg_close(g);
    cg_line(g, "for (int %s = 0; %s < %d; %s++) {", l, l, LANES, l);
    g->ind++;
    cg_store(g, 0, elt, cg_fmt(g, "%s + %s", b, l), cg_at(g, acc, l));
    cg_close(g);
    cg_close(g);
    cg_close(g);
    return b;
}

/* A fold that is a matrix product computed as written (cg_gemm_tiled: one
 * term, or two, each (sa a) (sb b)): register tiles of MR rows by NV vectors of columns, each element
 * of the tile summed along k strictly in order from z, each term
 * (sa a) (sb b) as the element function writes it (two: their sum, then
 * added), so the result is the
 * interpreter's bit for bit in the exact modes (the fast modes may
 * contract, as they do everywhere).  The sum's dimension runs in blocks
 * of KC; B's panel of the block (KC x NR) is read in place where B is
 * laid out (k, j), else copied into a local buffer (scaled, zero-padded
 * past the last column), so that the tile reads it along its rows; a
 * tile's sums cross blocks through C (a stored value is the register's,
 * exactly).  Task t is the row block [t MB, t MB + MB), MB = c->chunk, a
 * multiple of the tile's rows (a panel is copied once per task).  The host runs it only where A's and B's
 * extents are the product's (exec.c), so every read is in bounds, and it
 * has no checked copy.  The tile's size follows the vector registers the
 * C compiler targets (its macros, which follow -march): 6 x 3 vectors
 * where AVX-512 gives 32 registers, 4 x 3 where there are 16. */
static void emit_gemm(G *g)
{
    const CgNode *cn = g->cn;
    const CgContract *con = cn->con;
    const int nt = con->nterm;
    const Type *elt = cn->x->type->elt;
    const char *T = cg_ctype(con->s);
    int r = cn->x->type->rank + 1, src = cn->nout;   /* the DELAYED operand's slot: the space */
    cpu_kernel_begin(g, R_GEMM, 0, true);
    Val z = cpu_zval(g, elt);
    Buf mb = {0}, nb = {0};
    for (int d = 0; d < r - 1; d++) {
        Buf *b = d < con->rows ? &mb : &nb;
        buf_printf(b, "%ss%d_%d", b->s ? " * " : "", src, d);
    }
    cg_line(g, "const i64 M = %s, N = %s, K = s%d_%d;", cg_buf_text(g, &mb, "1"), cg_buf_text(g, &nb, "1"), src, r - 1);
    free(mb.s);
    free(nb.s);
    for (int t = 0; t < nt; t++)
        cg_line(g, "const %s *A%d = a%d_%d, *B%d = a%d_%d;", T, t, con->t[t].slot[0], con->t[t].leaf[0], t,
                con->t[t].slot[1], con->t[t].leaf[1]);
    cg_line(g, "%s *C = a0_0;", T);
    /* two terms hold twice the panel vectors and broadcasts: fewer columns */
    cg_line(g, "#if defined(__AVX512F__)");
    cg_line(g, "enum { MR = 6, VB = 64 };");
    cg_line(g, "#elif defined(__AVX__)");
    cg_line(g, "enum { MR = 4, VB = 32 };");
    cg_line(g, "#else");
    cg_line(g, "enum { MR = 4, VB = 16 };");
    cg_line(g, "#endif");
    cg_line(g, "typedef %s gv __attribute__((vector_size(VB)));", T);
    cg_line(g, "enum { W = VB / sizeof(%s), NV = %d, NR = NV * W, KC = 256 };", T, nt == 1 ? 3 : 2);
    cg_line(g, "const i64 MB = c->chunk;");
    for (int t = 0; t < nt; t++) cg_line(g, "%s P%d[KC * NR] __attribute__((aligned(64)));", T, t);
    cg_line(g, "for (i64 t = start; t < end; t++) {");
    g->ind++;
    cg_line(g, "const i64 i0 = t * MB, i1 = ax_min64(i0 + MB, M);");
    cg_line(g, "for (i64 j0 = 0; j0 < N; j0 += NR) {");
    g->ind++;
    cg_line(g, "const i64 nc = ax_min64(NR, N - j0);");
    cg_line(g, "for (i64 k0 = 0; k0 < K; k0 += KC) {");
    g->ind++;
    cg_line(g, "const i64 kc = ax_min64(KC, K - k0);");
    /* each term's panel: B's rows themselves where they hold it as the
     * tile reads it (B laid out (k, j), a whole panel, no scale), else a
     * copy */
    for (int t = 0; t < nt; t++) {
        const CgGemm *m = &con->t[t];
        const char *sb = m->sb ? cg_fmt(g, "(%s)%a * ", T, m->sb) : "";
        if (!m->tb && !m->sb) {
            cg_line(g, "const %s *Q%d = B%d + k0 * N + j0;", T, t, t);
            cg_line(g, "i64 ld%d = N;", t);
            cg_line(g, "if (nc < NR) {");
            g->ind++;
            cg_line(g, "for (i64 k = 0; k < kc; k++)");
            cg_line(g, "    for (i64 q = 0; q < NR; q++) P%d[k * NR + q] = q < nc ? B%d[(k0 + k) * N + j0 + q] : (%s)0;",
                    t, t, T);
            cg_line(g, "Q%d = P%d;", t, t);
            cg_line(g, "ld%d = NR;", t);
            cg_close(g);
            continue;
        }
        cg_line(g, "const %s *Q%d = P%d;", T, t, t);
        cg_line(g, "const i64 ld%d = NR;", t);
        if (m->tb) {   /* B laid out (j, k): each column read along k */
            cg_line(g, "for (i64 q = 0; q < nc; q++) {");
            cg_line(g, "    const %s *bq = B%d + (j0 + q) * K + k0;", T, t);
            cg_line(g, "    for (i64 k = 0; k < kc; k++) P%d[k * NR + q] = %sbq[k];", t, sb);
            cg_line(g, "}");
        } else {
            cg_line(g, "for (i64 k = 0; k < kc; k++)");
            cg_line(g, "    for (i64 q = 0; q < nc; q++) P%d[k * NR + q] = %sB%d[(k0 + k) * N + j0 + q];", t, sb, t);
        }
        cg_line(g, "for (i64 k = 0; k < kc; k++)");
        cg_line(g, "    for (i64 q = nc; q < NR; q++) P%d[k * NR + q] = (%s)0;", t, T);
    }
    cg_line(g, "for (i64 i = i0; i < i1; i += MR) {");
    g->ind++;
    cg_line(g, "const i64 nr = ax_min64(MR, i1 - i);");
    if (cg_gemm_symmetric(con))   /* the host copies the lower triangle up */
        cg_line(g, "if (j0 >= i + nr) continue;");
    for (int t = 0; t < nt; t++) {
        cg_line(g, "const %s *ar%d[MR];", T, t);
        cg_line(g, "for (int q = 0; q < MR; q++) ar%d[q] = A%d + %s;", t, t,
                con->t[t].ta ? "k0 * M + (i + (q < nr ? q : nr - 1))" : "(i + (q < nr ? q : nr - 1)) * K + k0");
    }
    cg_line(g, "gv acc[MR][NV];");
    cg_line(g, "const int whole = nr == MR && nc == NR;");
    /* x - 0 is x, -0 and NaN included: a splat that keeps z's bits */
    cg_line(g, "for (int q = 0; q < MR; q++)");
    cg_line(g, "    for (int v = 0; v < NV; v++) {");
    cg_line(g, "        if (k0 == 0) acc[q][v] = %s - (gv){0};", z.v[0]);
    cg_line(g, "        else if (whole) __builtin_memcpy(&acc[q][v], C + (i + q) * N + j0 + v * W, sizeof(gv));");
    cg_line(g, "        else for (int l = 0; l < W; l++) {");
    cg_line(g, "            const i64 jj = v * W + l;");
    cg_line(g, "            acc[q][v][l] = q < nr && jj < nc ? C[(i + q) * N + j0 + jj] : (%s)0;", T);
    cg_line(g, "        }");
    cg_line(g, "    }");
    cg_line(g, "for (i64 k = 0; k < kc; k++) {");
    g->ind++;
    for (int t = 0; t < nt; t++) {
        cg_line(g, "gv b%d[NV];", t);
        cg_line(g, "for (int v = 0; v < NV; v++) __builtin_memcpy(&b%d[v], Q%d + k * ld%d + v * W, sizeof(gv));", t, t, t);
    }
    cg_line(g, "for (int q = 0; q < MR; q++) {");
    g->ind++;
    for (int t = 0; t < nt; t++) {
        const CgGemm *m = &con->t[t];
        const char *sa = m->sa ? cg_fmt(g, "(%s)%a * ", T, m->sa) : "";
        cg_line(g, "const gv x%d = (%sar%d[q][%s]) - (gv){0};", t, sa, t, m->ta ? "k * M" : "k");
    }
    /* the element is the sum of the terms, then added to the row's sum */
    if (nt == 1) cg_line(g, "for (int v = 0; v < NV; v++) acc[q][v] += x0 * b0[v];");
    else cg_line(g, "for (int v = 0; v < NV; v++) acc[q][v] += x0 * b0[v] + x1 * b1[v];");
    cg_close(g);
    cg_close(g);
    cg_line(g, "for (int q = 0; q < MR; q++)");
    cg_line(g, "    for (int v = 0; v < NV; v++) {");
    cg_line(g, "        if (whole) __builtin_memcpy(C + (i + q) * N + j0 + v * W, &acc[q][v], sizeof(gv));");
    cg_line(g, "        else for (int l = 0; l < W; l++)");
    cg_line(g, "            if (q < nr && v * W + l < nc) C[(i + q) * N + j0 + v * W + l] = acc[q][v][l];");
    cg_line(g, "    }");
    cg_close(g);
    cg_close(g);
    cg_close(g);
    cg_close(g);
    cpu_kernel_end(g);
}

/* fold, fold1.  part: task t is (row, chunk) over c->nchunk chunks per
 * row; with one chunk per row (many rows) it writes the row's result,
 * else the chunk's partial.  comb: per row, z and the partials in chunk
 * order (with no chunks at all, an empty row: z). */
void cpu_emit_fold(G *g)
{
    CgNode *cn = (CgNode *)g->cn;
    const Node *x = cn->x, *f = x->kid[0];
    const Type *elt = x->type->elt;
    bool z = cg_has_z(x->op);
    cn->comm = cg_lam_comm(f, NULL);
    cn->scratch_leaves = elt->width;

    Val q;
    cpu_part_head(g, elt, &q);
    bool sep = fold_across(g, x);
    const char *few = sep ? NULL : fold_across_short(g, x, cn->comm);
    CgRowRead rr = cpu_part_loop(g, sep || few ? fold_rows_across(g, f, elt, few) : "start");
    Val res = cg_decl(g, elt, "y");
    Val a = cpu_fold_range(g, f, elt, "lo", "hi", cn->comm, x->type->rank == 0, &rr);
    if (z) {
        cg_line(g, "if (nch == 1) {");
        g->ind++;
        cg_assign(g, res, cg_apply2(g, f, cpu_zval(g, elt), a));
        g->ind--;
        cg_line(g, "} else {");
        g->ind++;
        cg_assign(g, res, a);
        cg_close(g);
    } else {
        cg_assign(g, res, a);
    }
    cg_line(g, "if (nch == 1) {");
    g->ind++;
    cg_store(g, 0, elt, "row", res);
    g->ind--;
    cg_line(g, "} else {");
    g->ind++;
    cg_put(g, q, "t", res);
    cg_close(g);
    cg_close(g);
    cpu_kernel_end(g);

    cpu_kernel_begin(g, R_COMB, 0, true);
    cg_line(g, "const i64 nch = c->nchunk;");
    q = cpu_scratch(g, elt, "c->s1");
    cg_line(g, "for (i64 r = start; r < end; r++) {");
    g->ind++;
    Val acc = cg_decl(g, elt, "y");
    cg_assign(g, acc, z ? cpu_zval(g, elt) : cg_at(g, q, "r * nch"));
    cg_line(g, "for (i64 k = %d; k < nch; k++) {", z ? 0 : 1);
    g->ind++;
    cpu_keep_loop(g);
    cg_update(g, elt, acc, cg_apply2(g, f, acc, cg_at(g, q, "r * nch + k")));
    cg_close(g);
    cg_store(g, 0, elt, "r", acc);
    cg_close(g);
    cpu_kernel_end(g);
    if (z && cn->con && !g->chk && cg_gemm_tiled(cn->con)) emit_gemm(g);
}

void cpu_emit_foldseg(G *g)
{
    CgNode *cn = (CgNode *)g->cn;
    const Node *x = cn->x, *f = x->kid[0];
    const Type *elt = x->type->elt;
    bool z = cg_has_z(x->op);
    cn->comm = cg_lam_comm(f, NULL);
    cpu_kernel_begin(g, R_SEG, 0, true);
    cg_line(g, "const i64 n = c->n, nseg = c->m;");
    cg_line(g, "const i64 *restrict off = (const i64 *)c->s1;");
    /* (row, segment) counted along, not divided out per segment: a
     * division costs as much as folding a short segment (a CSR row) */
    cg_line(g, "i64 row_ = start / nseg, k_ = start %% nseg;");
    cg_line(g, "for (i64 t = start; t < end; t++) {");
    g->ind++;
    cg_line(g, "const i64 row = row_, k = k_;");
    cg_line(g, "if (++k_ == nseg) k_ = 0, row_++;");
    cg_line(g, "const i64 lo = row * n + off[k], hi = row * n + off[k + 1];");
    CgRowRead rr = cg_row_read(g, "row", "row * n", true);
    Val res = cg_decl(g, elt, "y");
    if (z) {
        cg_assign(g, res, cpu_zval(g, elt));
        cg_line(g, "if (hi > lo) {");
        g->ind++;
        Val a = cpu_fold_range(g, f, elt, "lo", "hi", cn->comm, false, &rr);
        cg_update(g, elt, res, cg_apply2(g, f, cpu_zval(g, elt), a));
        cg_close(g);
    } else {
        cg_assign(g, res, cpu_fold_range(g, f, elt, "lo", "hi", cn->comm, false, &rr));
    }
    cg_store(g, 0, elt, "t", res);
    cg_close(g);
    cpu_kernel_end(g);

    /* mat: a DELAYED segment vector, materialised as i64 for the host */
    if (cg_opd_node(cn, 1)->op == OP_DELAYED) {
        cpu_kernel_begin(g, R_MAT, 0, true);
        cg_line(g, "i64 *restrict o = (i64 *)c->s2;");
        cg_line(g, "for (i64 i = start; i < end; i++) {");
        g->ind++;
        g->pos = "i";
        Val v = cg_read_lin(g, 1, "i");
        if (v.n == 1) cg_line(g, "o[i] = (i64)%s;", v.v[0]);
        cg_close(g);
        cpu_kernel_end(g);
    }
}


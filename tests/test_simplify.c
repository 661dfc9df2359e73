/*
 * The simplifier (src/opt/simplify.c, src/opt/cse.c; thesis
 * "Simplification" and "Ordering", the Delite section's CSE): the thesis'
 * constant-folding example, folding of every primitive against the
 * interpreter, the faults and IEEE cases that must not be folded, CSE and
 * its lazy regions, shrinking, while loops, propagation through lets and
 * tuples, the array-level rules, Black-Scholes, random programs, and deep
 * programs.  Every simplification here runs sub-pass by sub-pass with the
 * verifier after each one (simplify_checked); CTest also sets
 * AXLE_DEBUG=verify, under which simplify_program verifies after every
 * sub-pass itself.
 *
 * Programs come from the public API (through sharing recovery) or are
 * built by hand as core IR (the HB helpers), where a test needs lets that
 * sharing recovery would never make (a dead one, one used once).
 *
 * Longer than most files: one section per simplifier rule, sharing the
 * sub-pass runner.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "ir.h"
#include "opt/opt.h"
#include "programs.h"
#include "randprog.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* randprog.c is compiled into this test, as in test_random.c. */
#include "randprog.c"
#include "backend/interp/interp.h"
#include "driver/driver.h"
#include "frontend/frontend.h"
#include "runtime/array.h"

/* ------------------------------------------------------------ helpers */

static char *show(const Node *n)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    ir_print(f, n);
    fclose(f);
    return buf;
}

static bool verified(const Program *p, const char *after, const char *file, int line)
{
    char msg[512];
    if (ir_verify(p, msg, sizeof msg) == 0) return true;
    harness_failed_checks++;
    char *s = show(p->root);
    fprintf(stderr, "%s:%d: ir_verify after %s: %s\nin:\n%s\n", file, line, after, msg, s ? s : "?");
    free(s);
    return false;
}

/* Sharing recovery, verified. */
static Program *recover(ax_ctx *cx, ax_acc a, const char *file, int line)
{
    if (!a) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: building failed: %s\n", file, line, ax_error(cx));
        return NULL;
    }
    Program *p = sharing_recover(cx, a, true);
    if (!p) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: sharing_recover failed: %s\n", file, line, ax_error(cx));
        return NULL;
    }
    verified(p, "sharing recovery", file, line);
    return p;
}
#define RECOVER(cx, a) recover((cx), (a), __FILE__, __LINE__)

/* simplify_program's rounds, one sub-pass at a time, each verified;
 * returns the number of rounds. */
static int simplify_checked(ax_ctx *cx, Program *p, bool cse, const char *file, int line)
{
    int round = 0;
    for (; round < 8; round++) {
        bool changed = false;
        if (cse) {
            if (opt_cse(cx, p, &changed) != 0) {
                harness_failed_checks++;
                fprintf(stderr, "%s:%d: opt_cse failed: %s\n", file, line, ax_error(cx));
                return -1;
            }
            if (!verified(p, "CSE", file, line)) return -1;
        }
        if (opt_simplify_round(cx, p, SIMP_ALL, &changed) != 0) {
            harness_failed_checks++;
            fprintf(stderr, "%s:%d: opt_simplify_round failed: %s\n", file, line, ax_error(cx));
            return -1;
        }
        if (!verified(p, "shrinking and folding", file, line)) return -1;
        if (!changed) break;
    }
    return round + 1;
}
#define SIMPLIFY(cx, p) simplify_checked((cx), (p), true, __FILE__, __LINE__)

static int count_op(const Node *n, Op op)
{
    if (!n) return 0;
    int c = n->op == op;
    if (n->op == OP_LAM) return c + count_op(n->kid[0], op);
    for (int i = 0; i < n->n; i++) c += count_op(n->kid[i], op);
    return c;
}

static int count_prim(const Node *n, Prim p)
{
    if (!n) return 0;
    int c = n->op == OP_PRIM && n->a == (int)p;
    int nk = n->op == OP_LAM ? 1 : n->n;
    for (int i = 0; i < nk; i++) c += count_prim(n->kid[i], p);
    return c;
}

/* The first node of op in pre-order. */
static const Node *find_op(const Node *n, Op op)
{
    if (!n) return NULL;
    if (n->op == op) return n;
    int nk = n->op == OP_LAM ? 1 : n->n;
    for (int i = 0; i < nk; i++) {
        const Node *r = find_op(n->kid[i], op);
        if (r) return r;
    }
    return NULL;
}

/* Is every node of `p` below n reached only through a branch of a cond? */
static bool prim_only_in_branches(const Node *n, Prim p, bool in_branch)
{
    if (n->op == OP_PRIM && n->a == (int)p && !in_branch) return false;
    int nk = n->op == OP_LAM ? 1 : n->n;
    for (int i = 0; i < nk; i++)
        if (!prim_only_in_branches(n->kid[i], p, in_branch || (n->op == OP_COND && i > 0))) return false;
    return true;
}

/* Bitwise equal results (float components: equal bits, or both NaN). */
static bool same_array(const ax_array *a, const ax_array *b, char *msg, size_t size)
{
    if (ax_array_components(a) != ax_array_components(b) || ax_array_size(a) != ax_array_size(b) ||
        ax_array_rank(a) != ax_array_rank(b)) {
        snprintf(msg, size, "shapes or types differ");
        return false;
    }
    for (int c = 0; c < ax_array_components(a); c++) {
        ax_scalar s = ax_array_component_type(a, c);
        if (s != ax_array_component_type(b, c)) {
            snprintf(msg, size, "component %d types differ", c);
            return false;
        }
        for (int64_t i = 0; i < ax_array_size(a); i++) {
            Scalar x = sc_load(ax_array_data(a, c), s, i), y = sc_load(ax_array_data(b, c), s, i);
            bool nan = (s == AX_F32 && isnan(x.f32) && isnan(y.f32)) || (s == AX_F64 && isnan(x.f64) && isnan(y.f64));
            if (!nan && !sc_eq_bits(s, x, y)) {
                char b1[64], b2[64];
                FILE *f1 = fmemopen(b1, sizeof b1, "w"), *f2 = fmemopen(b2, sizeof b2, "w");
                if (f1 && f2) {
                    sc_print(f1, s, x);
                    sc_print(f2, s, y);
                }
                if (f1) fclose(f1);
                if (f2) fclose(f2);
                snprintf(msg, size, "component %d element %lld: %s vs %s", c, (long long)i, b1, b2);
                return false;
            }
        }
    }
    return true;
}

/* Runs a on the interpreter without and with the simplifier (verifying
 * after every pass); both must succeed with bitwise equal results, or fail
 * with the same status (returned, AX_OK if they succeed). */
static ax_status run_both(ax_ctx *cx, ax_acc a, const char *file, int line)
{
    ax_array *r[2][8];
    int n[2];
    ax_status st[2];
    unsigned saved = cx->opt.debug;
    for (int k = 0; k < 2; k++) {
        cx->opt.debug = AX_DEBUG_VERIFY | (k == 0 ? AX_DEBUG_NO_SIMPLIFY : 0);
        n[k] = ax_run_n(cx, a, r[k], 8);
        st[k] = n[k] < 0 ? ax_status_of(cx) : AX_OK;
        if (n[k] < 0 && st[k] == AX_ERR_BUILD) {
            harness_failed_checks++;
            fprintf(stderr, "%s:%d: %s: %s\n", file, line, k ? "simplified" : "unsimplified", ax_error(cx));
        }
    }
    cx->opt.debug = saved;
    if (st[0] != st[1]) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: statuses differ: %d unsimplified, %d simplified\n", file, line, st[0], st[1]);
    } else if (n[0] >= 0) {
        if (n[0] != n[1]) {
            harness_failed_checks++;
            fprintf(stderr, "%s:%d: result counts differ\n", file, line);
        }
        for (int i = 0; i < n[0] && i < n[1]; i++) {
            char msg[256];
            if (!same_array(r[0][i], r[1][i], msg, sizeof msg)) {
                harness_failed_checks++;
                fprintf(stderr, "%s:%d: result %d differs with the simplifier: %s\n", file, line, i, msg);
            }
        }
    }
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < n[k]; i++) ax_array_release(r[k][i]);
    return st[0];
}
#define RUN_BOTH(cx, a) run_both((cx), (a), __FILE__, __LINE__)

static ax_ctx *interp_ctx(void)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    return ax_ctx_new(&o);
}

static ax_acc vec_of(ax_ctx *cx, ax_scalar s, int64_t n, const void *data)
{
    ax_array *a = ax_array_from(cx, s, 1, &n, data);
    ax_acc u = ax_use(cx, a);
    ax_array_release(a);   /* the use node holds it */
    return u;
}

/* ------------------------------------------------- hand-built core IR */

typedef struct HB {
    ax_ctx *cx;
    Program *p;
} HB;

static HB hb_new(ax_ctx *cx)
{
    Program *p = calloc(1, sizeof *p);
    arena_init(&p->arena);
    return (HB){cx, p};
}

static Node *hn(HB *b, Op op, const Type *t, int n)
{
    Node *x = node_new(&b->p->arena, op, n, t);
    x->cx = b->cx;
    return x;
}

static int hfresh(HB *b, const Type *t) { return program_fresh_var(b->p, t); }

static Node *hconst(HB *b, ax_scalar s, Scalar v)
{
    Node *x = hn(b, OP_CONST, ty_scalar(s), 0);
    x->c = sc_norm(v, s);
    return x;
}

static Node *hi32(HB *b, int32_t v) { return hconst(b, AX_I32, (Scalar){.i = v}); }

static Node *hvar(HB *b, int id)
{
    const Type *t = b->p->vartype[id];
    Node *x = hn(b, t->kind == TY_ARRAY || t->kind == TY_ARRAYS ? OP_AVAR : OP_VAR, t, 0);
    x->id = id;
    return x;
}

static Node *hprim(HB *b, Prim p, Node *x, Node *y)
{
    const Type *at[2] = {x->type, y ? y->type : NULL};
    const Type *t = prim_type(&b->p->arena, p, y ? 2 : 1, at, NULL, NULL);
    Node *r = hn(b, OP_PRIM, t, y ? 2 : 1);
    r->a = p;
    r->kid[0] = x;
    if (y) r->kid[1] = y;
    return r;
}

static Node *hlet(HB *b, int id, Node *bound, Node *body)
{
    bool arr = bound->type->kind == TY_ARRAY || bound->type->kind == TY_ARRAYS;
    Node *x = hn(b, arr ? OP_ALET : OP_LET, body->type, 2);
    x->id = id;
    x->kid[0] = bound;
    x->kid[1] = body;
    return x;
}

static Node *hcond(HB *b, Node *c, Node *t, Node *e)
{
    Node *x = hn(b, OP_COND, t->type, 3);
    x->kid[0] = c;
    x->kid[1] = t;
    x->kid[2] = e;
    return x;
}

static Node *htuple2(HB *b, Node *x, Node *y)
{
    const Type *el[2] = {x->type, y->type};
    Node *t = hn(b, OP_TUPLE, ty_tuple(&b->p->arena, 2, el), 2);
    t->kid[0] = x;
    t->kid[1] = y;
    return t;
}

static Node *hproj(HB *b, int i, Node *t)
{
    Node *x = hn(b, OP_PROJ, t->type->elts[i], 1);
    x->a = i;
    x->kid[0] = t;
    return x;
}

/* A function of one parameter (variable id) with this body. */
static Node *hlam(HB *b, int id, Node *body)
{
    Node *l = hn(b, OP_LAM, body->type, 1);
    l->nparam = 1;
    l->param = arena_alloc(&b->p->arena, sizeof *l->param);
    l->param[0] = hvar(b, id);
    l->kid[0] = body;
    return l;
}

static Node *hwhile(HB *b, Node *cond, Node *body, Node *init)
{
    Node *x = hn(b, OP_WHILE, init->type, 3);
    x->kid[0] = cond;
    x->kid[1] = body;
    x->kid[2] = init;
    return x;
}

static Node *huse(HB *b, ax_array *a)
{
    Node *x = hn(b, OP_USE, ty_array(&b->p->arena, a->elt, a->rank), 0);
    x->arr = a;
    return x;
}

static Node *hmap(HB *b, Node *lam, Node *arr)
{
    Node *x = hn(b, OP_MAP, ty_array(&b->p->arena, lam->type, arr->type->rank), 2);
    x->kid[0] = lam;
    x->kid[1] = arr;
    return x;
}

/* map (\x -> body) over a use of `arr`; param is the parameter's id. */
static Node *hmap_over(HB *b, ax_array *arr, int param, Node *body)
{
    return hmap(b, hlam(b, param, body), huse(b, arr));
}

/* The body of the function of the first map (or the first lambda). */
static const Node *fn_body(const Node *root)
{
    const Node *l = find_op(root, OP_LAM);
    return l ? l->kid[0] : NULL;
}

/* Runs a hand-built program on the interpreter; its status. */
static ax_status hrun(HB *b, ax_array **out)
{
    *out = NULL;
    int n = interp_run(b->cx, b->p, out, 1);
    if (n < 0) {
        ax_status st = ax_status_of(b->cx);
        ax_clear_error(b->cx);
        return st;
    }
    return AX_OK;
}

/* ============================================================ constfold */

/* The thesis' example: constant propagation through the tuple, folding
 * and the cond on a constant reduce it to 2.0 * (21.0 * x).  The thesis'
 * last step, 42.0 * x, reassociates a float product, which is not exact
 * for every x: it is not taken. */
TEST(constfold_simplifies_to_2_times_21x)
{
    const ex_program *prog = ex_find("constfold");
    REQUIRE(prog);
    ax_ctx *cx = interp_ctx();
    void *st = prog->setup(cx, 16);
    REQUIRE(st);
    ax_acc a = prog->build(cx, st);
    Program *p = RECOVER(cx, a);
    REQUIRE(p);
    int64_t before = ir_count_nodes(p->root);
    int rounds = SIMPLIFY(cx, p);
    int64_t after = ir_count_nodes(p->root);
    fprintf(stderr, "constfold: %lld nodes after sharing recovery, %lld after simplification (%d rounds)\n",
            (long long)before, (long long)after, rounds);
    /* map (\x0 -> mul 2.0 (mul 21.0 x0)) (use ...) */
    const Node *m = p->root;
    REQUIRE(m->op == OP_MAP);
    const Node *l = m->kid[0];
    REQUIRE(l->op == OP_LAM && l->nparam == 1);
    const Node *b = l->kid[0];
    REQUIRE(b->op == OP_PRIM && b->a == P_MUL && b->n == 2);
    CHECK(b->kid[0]->op == OP_CONST && b->kid[0]->type->s == AX_F32 && b->kid[0]->c.f32 == 2.0f);
    const Node *in = b->kid[1];
    REQUIRE(in->op == OP_PRIM && in->a == P_MUL && in->n == 2);
    CHECK(in->kid[0]->op == OP_CONST && in->kid[0]->c.f32 == 21.0f);
    CHECK(in->kid[1]->op == OP_VAR && in->kid[1]->id == l->param[0]->id);
    CHECK(m->kid[1]->op == OP_USE);
    CHECK_EQ_I(after, 9);   /* map, lam, param, mul, 2.0, mul, 21.0, x, use */
    char *s = show(p->root);
    char want[64];
    snprintf(want, sizeof want, "\\x%d -> mul 2.0 (mul 21.0 x%d))", l->param[0]->id, l->param[0]->id);
    CHECKF(s && strstr(s, want), "%s", s ? s : "?");
    free(s);
    program_free(p);

    /* the same through the pipeline's dump, and the program's own check */
    char *d = ax_dump(cx, a, "simplify", false);
    CHECKF(d && strstr(d, "-> mul 2.0 (mul 21.0 x"), "%s", d ? d : ax_error(cx));
    free(d);
    ax_array *r = RUN(cx, a);
    char msg[256] = "";
    CHECKF(r && prog->check(st, &r, 1, msg, sizeof msg) == 0, "%s", msg);
    ax_array_release(r);
    CHECK(RUN_BOTH(cx, a) == AX_OK);
    prog->teardown(st);
    ax_ctx_free(cx);
}

/* =================================================== folding primitives */

typedef ax_exp (*Un)(ax_exp);
typedef ax_exp (*Bin)(ax_exp, ax_exp);

static const struct { Prim p; Un u; Bin b; } prim_table[] = {
    {P_ADD, NULL, ax_add}, {P_SUB, NULL, ax_sub}, {P_MUL, NULL, ax_mul}, {P_DIV, NULL, ax_div},
    {P_QUOT, NULL, ax_quot}, {P_REM, NULL, ax_rem}, {P_IDIV, NULL, ax_idiv}, {P_MOD, NULL, ax_mod},
    {P_MIN, NULL, ax_min}, {P_MAX, NULL, ax_max}, {P_NEG, ax_neg, NULL}, {P_ABS, ax_abs, NULL},
    {P_SIGNUM, ax_signum, NULL}, {P_BAND, NULL, ax_band}, {P_BOR, NULL, ax_bor}, {P_BXOR, NULL, ax_bxor},
    {P_SHL, NULL, ax_shl}, {P_SHR, NULL, ax_shr}, {P_ROTL, NULL, ax_rotl}, {P_ROTR, NULL, ax_rotr},
    {P_BNOT, ax_bnot, NULL}, {P_POPCOUNT, ax_popcount, NULL}, {P_CLZ, ax_clz, NULL}, {P_CTZ, ax_ctz, NULL},
    {P_EQ, NULL, ax_eq}, {P_NE, NULL, ax_ne}, {P_LT, NULL, ax_lt}, {P_LE, NULL, ax_le}, {P_GT, NULL, ax_gt},
    {P_GE, NULL, ax_ge}, {P_AND, NULL, ax_and}, {P_OR, NULL, ax_or}, {P_NOT, ax_not, NULL},
    {P_EXP, ax_exp_, NULL}, {P_LOG, ax_log, NULL}, {P_SQRT, ax_sqrt, NULL}, {P_SIN, ax_sin, NULL},
    {P_COS, ax_cos, NULL}, {P_TAN, ax_tan, NULL}, {P_ASIN, ax_asin, NULL}, {P_ACOS, ax_acos, NULL},
    {P_ATAN, ax_atan, NULL}, {P_SINH, ax_sinh, NULL}, {P_COSH, ax_cosh, NULL}, {P_TANH, ax_tanh, NULL},
    {P_ASINH, ax_asinh, NULL}, {P_ACOSH, ax_acosh, NULL}, {P_ATANH, ax_atanh, NULL}, {P_POW, NULL, ax_pow},
    {P_LOGBASE, NULL, ax_logbase}, {P_ATAN2, NULL, ax_atan2}, {P_ISNAN, ax_is_nan, NULL},
    {P_ISINF, ax_is_infinite, NULL},
};

static bool transcendental(Prim p)
{
    return (p >= P_EXP && p <= P_ATANH && p != P_SQRT) || p == P_POW || p == P_LOGBASE || p == P_ATAN2;
}

/* Operand values of type s (a few ordinary ones and the edge cases). */
static int values_of(ax_scalar s, ax_exp *v)
{
    int n = 0;
    if (s == AX_BOOL) {
        v[n++] = ax_bool(false);
        v[n++] = ax_bool(true);
    } else if (s == AX_F32 || s == AX_F64) {
        static const double f[] = {0.0, -0.0, 1.0, -1.5, 2.0, 0.1, 3.25, 1e30, 1e-40, NAN, INFINITY, -INFINITY};
        for (size_t i = 0; i < sizeof f / sizeof *f; i++) v[n++] = ax_constf(s, f[i]);
    } else {
        static const int64_t k[] = {0, 1, -1, 2, 7, -8, 63, 64, 100, INT64_MIN, INT64_MAX, 0x5a5a5a5a5a5a5a5aLL};
        for (size_t i = 0; i < sizeof k / sizeof *k; i++) v[n++] = ax_consti(s, k[i]);
    }
    return n;
}

static bool is_zero_const(ax_exp e)
{
    return ax_exp_type(e) && ax_type_kind_of(ax_exp_type(e)) == AX_KIND_SCALAR && e.v[0].u == 0;
}

/* Runs unit (tuple of the results) with and without the simplifier;
 * checks that the simplifier folded them all (or none, for the functions
 * it must not fold). */
static void check_folds(ax_ctx *cx, int n, const ax_exp *res, bool expect_folded, const char *what)
{
    if (n == 0) return;
    ax_acc a = ax_unit(cx, n == 1 ? res[0] : ax_tuple(n, res));
    Program *p = RECOVER(cx, a);
    if (!p) return;
    SIMPLIFY(cx, p);
    int prims = count_op(p->root, OP_PRIM);
    if (expect_folded) CHECKF(prims == 0, "%s: %d operations left", what, prims);
    else CHECKF(prims >= 1, "%s: folded", what);
    program_free(p);
    CHECKF(RUN_BOTH(cx, a) == AX_OK, "%s", what);
}

TEST(folding_every_primitive_matches_the_interpreter)
{
    ax_ctx *cx = interp_ctx();
    int programs = 0;
    for (int s = 0; s < AX_NSCALAR; s++) {
        ax_exp v[16];
        int nv = values_of((ax_scalar)s, v);
        const Type *ts = ty_scalar((ax_scalar)s);
        for (size_t k = 0; k < sizeof prim_table / sizeof *prim_table; k++) {
            Prim p = prim_table[k].p;
            const Type *at[2] = {ts, ts};
            if (!prim_type(NULL, p, prim_table[k].u ? 1 : 2, at, NULL, NULL)) continue;
            ax_exp res[160];
            int n = 0;
            bool intdiv = p == P_QUOT || p == P_REM || p == P_IDIV || p == P_MOD || (p == P_DIV && s != AX_F32 && s != AX_F64);
            for (int i = 0; i < nv; i++) {
                ax_exp x = ax_const(cx, v[i]);
                if (prim_table[k].u) {
                    res[n++] = prim_table[k].u(x);
                    continue;
                }
                for (int j = 0; j < nv && n < 160; j++) {
                    if (intdiv && is_zero_const(v[j])) continue;   /* faults: tested below */
                    res[n++] = prim_table[k].b(x, ax_const(cx, v[j]));
                }
            }
            char what[64];
            snprintf(what, sizeof what, "%s on %s", prim_info[p].name, ax_scalar_name((ax_scalar)s));
            check_folds(cx, n, res, !transcendental(p), what);
            programs++;
        }
        /* rounding, conversions and bitcasts to every target */
        for (int t = 0; t < AX_NSCALAR; t++) {
            ax_exp res[128];
            int n = 0;
            for (int i = 0; i < nv; i++) {
                ax_exp x = ax_const(cx, v[i]);
                res[n++] = ax_cvt(x, (ax_scalar)t);
                if (ax_scalar_size((ax_scalar)s) == ax_scalar_size((ax_scalar)t) && s != AX_BOOL && t != AX_BOOL)
                    res[n++] = ax_bitcast(x, (ax_scalar)t);
            }
            if ((s == AX_F32 || s == AX_F64) && t != AX_BOOL)
                for (int i = 0; i < nv; i++) {
                    ax_exp x = ax_const(cx, v[i]);
                    res[n++] = ax_floor(x, (ax_scalar)t);
                    res[n++] = ax_ceiling(x, (ax_scalar)t);
                    res[n++] = ax_round(x, (ax_scalar)t);
                    res[n++] = ax_truncate(x, (ax_scalar)t);
                }
            char what[64];
            snprintf(what, sizeof what, "conversions %s -> %s", ax_scalar_name((ax_scalar)s),
                     ax_scalar_name((ax_scalar)t));
            check_folds(cx, n, res, true, what);
            programs++;
        }
    }
    /* shapes: size, to/from linear positions of constant indices */
    ax_exp sh = ax_const(cx, ax_ix3(ax_i64(3), ax_i64(4), ax_i64(5)));
    ax_exp r[4] = {ax_shape_size(sh), ax_to_linear(sh, ax_const(cx, ax_ix3(ax_i64(2), ax_i64(1), ax_i64(3)))),
                   ax_index_get(ax_from_linear(sh, ax_const(cx, ax_i64(47))), 1),
                   ax_index_get(ax_from_linear(sh, ax_const(cx, ax_i64(-7))), 2)};
    check_folds(cx, 4, r, true, "shapes");
    fprintf(stderr, "folding: %d programs, each run with and without the simplifier\n", programs);
    CHECK(programs > 150);
    ax_ctx_free(cx);
}

/* ============================================================== faults */

TEST(integer_division_by_zero_is_not_folded)
{
    ax_ctx *cx = interp_ctx();
    Bin ops[5] = {ax_div, ax_quot, ax_rem, ax_idiv, ax_mod};
    for (int s = AX_I8; s <= AX_U64; s++)
        for (int k = 0; k < 5; k++) {
            ax_exp e = ops[k](ax_const(cx, ax_consti((ax_scalar)s, 7)), ax_const(cx, ax_consti((ax_scalar)s, 0)));
            ax_acc a = ax_unit(cx, e);
            Program *p = RECOVER(cx, a);
            REQUIRE(p);
            SIMPLIFY(cx, p);
            CHECK(count_op(p->root, OP_PRIM) == 1);
            program_free(p);
            CHECKF(RUN_BOTH(cx, a) == AX_ERR_DIVZERO, "%s", ax_scalar_name((ax_scalar)s));
        }
    /* 0 * (7 / 0): the fault is not multiplied away */
    ax_exp q = ax_quot(ax_const(cx, ax_i32(7)), ax_const(cx, ax_i32(0)));
    CHECK(RUN_BOTH(cx, ax_unit(cx, ax_mul(ax_const(cx, ax_i32(0)), q))) == AX_ERR_DIVZERO);
    /* let q = 7 / 0 in 0*q + 0*q: the uses fold away, the binding (a
     * strict let that faults) stays */
    ax_exp z = ax_const(cx, ax_i32(0));
    ax_acc a = ax_unit(cx, ax_add(ax_mul(z, q), ax_mul(z, q)));
    Program *p = RECOVER(cx, a);
    REQUIRE(p);
    SIMPLIFY(cx, p);
    CHECK(count_prim(p->root, P_QUOT) == 1);
    program_free(p);
    CHECK(RUN_BOTH(cx, a) == AX_ERR_DIVZERO);
    /* a nonzero constant divisor folds, and x / 1 = x */
    ax_exp one = ax_const(cx, ax_i32(1));
    a = ax_unit(cx, ax_add(ax_quot(ax_const(cx, ax_i32(-7)), ax_const(cx, ax_i32(2))), ax_quot(q, one)));
    p = RECOVER(cx, a);
    REQUIRE(p);
    SIMPLIFY(cx, p);
    CHECK(count_prim(p->root, P_QUOT) == 1);   /* only 7 / 0 */
    program_free(p);
    CHECK(RUN_BOTH(cx, a) == AX_ERR_DIVZERO);
    ax_ctx_free(cx);
}

/* =========================================================== float rules */

static ax_exp unsafe_identities(ax_exp x, void *env)
{
    (void)env;
    ax_ctx *cx = ax_exp_ctx(x);
    ax_exp zero = ax_const(cx, ax_f32(0.0f)), nan = ax_const(cx, ax_f32(NAN));
    ax_exp r[8] = {
        ax_add(x, zero),                  /* -0.0 + 0.0 = +0.0 */
        ax_mul(x, zero),                  /* NaN, inf, -x */
        ax_mul(nan, ax_mul(x, zero)),
        ax_sub(zero, x),                  /* 0.0 - 0.0 = +0.0, -0.0 is not */
        ax_sub(x, x),                     /* inf - inf = NaN */
        ax_add(ax_add(x, ax_const(cx, ax_f32(0.1f))), ax_const(cx, ax_f32(0.2f))),
        ax_mul(ax_mul(x, ax_const(cx, ax_f32(3.0f))), ax_const(cx, ax_f32(5.0f))),
        ax_mul(x, ax_const(cx, ax_f32(-1.0f))),
    };
    return ax_tuple(8, r);
}

static const float special_f32[] = {-0.0f, 0.0f, NAN, INFINITY, -INFINITY, 1.0f, -2.5f, 1e-45f, 3e38f, 0.1f};

TEST(unsafe_float_identities_are_not_applied)
{
    ax_ctx *cx = interp_ctx();
    ax_acc a = ax_map(unsafe_identities, NULL, vec_of(cx, AX_F32, 10, special_f32));
    Program *p = RECOVER(cx, a);
    REQUIRE(p);
    SIMPLIFY(cx, p);
    char *s = show(p->root);
    REQUIRE(s);
    CHECKF(strstr(s, "add 0.0 x"), "x + 0.0 was dropped: %s", s);
    CHECKF(strstr(s, "mul 0.0 x"), "x * 0.0 was dropped: %s", s);
    CHECKF(strstr(s, "sub 0.0 x"), "0.0 - x was rewritten: %s", s);
    CHECKF(strstr(s, "sub x"), "x - x was folded: %s", s);
    CHECKF(strstr(s, "add 0.2 (add 0.1 x"), "float additions were reassociated: %s", s);
    CHECKF(strstr(s, "mul 5.0 (mul 3.0 x"), "a product without a power of two was reassociated: %s", s);
    CHECKF(strstr(s, "mul (-1.0) x"), "x * -1.0 was rewritten: %s", s);
    CHECKF(count_op(p->root, OP_PRIM) >= 10, "%s", s);
    free(s);
    program_free(p);
    CHECK(RUN_BOTH(cx, a) == AX_OK);
    ax_ctx_free(cx);
}

static ax_exp exact_identities(ax_exp x, void *env)
{
    (void)env;
    ax_ctx *cx = ax_exp_ctx(x);
    ax_exp r[7] = {
        ax_add(x, ax_const(cx, ax_f32(-0.0f))),       /* x + -0.0 = x */
        ax_sub(x, ax_const(cx, ax_f32(0.0f))),        /* x - 0.0 = x */
        ax_mul(ax_const(cx, ax_f32(1.0f)), x),        /* 1.0 * x = x */
        ax_div(x, ax_const(cx, ax_f32(1.0f))),        /* x / 1.0 = x */
        ax_div(x, ax_const(cx, ax_f32(4.0f))),        /* 0.25 * x */
        ax_mul(ax_mul(x, ax_const(cx, ax_f32(21.0f))), ax_const(cx, ax_f32(2.0f))),   /* 2.0 * (21.0 * x) */
        ax_min(ax_const(cx, ax_f32(NAN)), ax_min(x, ax_const(cx, ax_f32(1.0f)))),    /* min 1.0 x */
    };
    return ax_tuple(7, r);
}

TEST(exact_float_identities_and_reassociation)
{
    static const float in[] = {-0.0f, 0.0f, NAN, INFINITY, -INFINITY, 1.0f, -2.5f, 0.1f, 1234.5f, -1e-3f};
    ax_ctx *cx = interp_ctx();
    ax_acc a = ax_map(exact_identities, NULL, vec_of(cx, AX_F32, 10, in));
    Program *p = RECOVER(cx, a);
    REQUIRE(p);
    SIMPLIFY(cx, p);
    const Node *b = fn_body(p->root);
    REQUIRE(b && b->op == OP_TUPLE && b->n == 7);
    for (int i = 0; i < 4; i++) CHECKF(b->kid[i]->op == OP_VAR, "component %d", i);
    char *s = show(b);
    REQUIRE(s);
    CHECKF(strstr(s, "mul 0.25 x"), "%s", s);
    CHECKF(strstr(s, "mul 2.0 (mul 21.0 x"), "a float product was reassociated: %s", s);
    CHECKF(strstr(s, "min 1.0 x"), "%s", s);
    free(s);
    program_free(p);
    CHECK(RUN_BOTH(cx, a) == AX_OK);
    ax_ctx_free(cx);
}

/* ========================================================= integer rules */

static ax_exp int_rules(ax_exp x, void *env)
{
    (void)env;
    ax_ctx *cx = ax_exp_ctx(x);
#define C(v) ax_const(cx, ax_i32(v))
    ax_exp r[8] = {
        ax_add(ax_add(x, C(1)), C(2)),                 /* 3 + x */
        ax_sub(x, C(5)),                               /* -5 + x */
        ax_mul(ax_mul(C(3), x), C(4)),                 /* 12 * x */
        ax_sub(ax_sub(C(10), x), C(4)),                /* 6 - x */
        ax_mul(x, C(0)),                               /* 0 */
        ax_sub(x, x),                                  /* 0 */
        ax_band(ax_bor(x, C(0)), C(-1)),               /* x */
        ax_sub(C(0), ax_mul(C(-1), x)),                /* x */
    };
#undef C
    return ax_tuple(8, r);
}

TEST(integer_reassociation_constants_first)
{
    static const int32_t in[] = {0, 1, -1, 7, INT32_MAX, INT32_MIN, 123456, -99};
    ax_ctx *cx = interp_ctx();
    ax_acc a = ax_map(int_rules, NULL, vec_of(cx, AX_I32, 8, in));
    Program *p = RECOVER(cx, a);
    REQUIRE(p);
    SIMPLIFY(cx, p);
    const Node *b = fn_body(p->root);
    REQUIRE(b && b->op == OP_TUPLE);
    char *s = show(b);
    REQUIRE(s);
    CHECKF(strstr(s, "(add 3 x"), "%s", s);
    CHECKF(strstr(s, "add (-5) x"), "%s", s);
    CHECKF(strstr(s, "mul 12 x"), "%s", s);
    CHECKF(strstr(s, "sub 6 x"), "%s", s);
    CHECK(b->kid[4]->op == OP_CONST && b->kid[4]->c.i == 0);
    CHECK(b->kid[5]->op == OP_CONST && b->kid[5]->c.i == 0);
    CHECK(b->kid[6]->op == OP_VAR && b->kid[7]->op == OP_VAR);
    free(s);
    program_free(p);
    CHECK(RUN_BOTH(cx, a) == AX_OK);
    ax_ctx_free(cx);
}

/* ================================================================= CSE */

/* sqrt (x*y + 1) * sqrt (x*y + 1), the two halves built separately (no
 * sharing in the C program). */
static ax_exp twice(ax_exp x, ax_exp y, void *env)
{
    (void)env;
    ax_ctx *cx = ax_exp_ctx(x);
    ax_exp a = ax_sqrt(ax_add(ax_mul(x, y), ax_const(cx, ax_f32(1))));
    ax_exp b = ax_sqrt(ax_add(ax_mul(x, y), ax_const(cx, ax_f32(1))));
    return ax_mul(a, b);
}

TEST(cse_removes_a_duplicated_subterm)
{
    static const float xs[] = {1, 2, 3, -4}, ys[] = {0.5f, -1, 2, 8};
    ax_ctx *cx = interp_ctx();
    ax_acc a = ax_zip_with(twice, NULL, vec_of(cx, AX_F32, 4, xs), vec_of(cx, AX_F32, 4, ys));
    Program *p = RECOVER(cx, a);
    REQUIRE(p);
    int64_t before = ir_count_nodes(p->root);
    CHECK(count_prim(p->root, P_SQRT) == 2);
    SIMPLIFY(cx, p);
    int64_t after = ir_count_nodes(p->root);
    fprintf(stderr, "cse: %lld nodes before, %lld after\n", (long long)before, (long long)after);
    CHECK(after < before);
    CHECK_EQ_I(count_prim(p->root, P_SQRT), 1);
    CHECK_EQ_I(count_prim(p->root, P_ADD), 1);
    CHECK_EQ_I(count_prim(p->root, P_MUL), 2);   /* x*y and s*s */
    CHECK_EQ_I(count_op(p->root, OP_LET), 1);
    program_free(p);

    /* without CSE (AXLE_DEBUG=no-cse): both copies stay */
    p = RECOVER(cx, a);
    REQUIRE(p);
    simplify_checked(cx, p, false, __FILE__, __LINE__);
    CHECK_EQ_I(count_prim(p->root, P_SQRT), 2);
    program_free(p);
    cx->opt.debug = AX_DEBUG_NO_CSE;
    char *d = ax_dump(cx, a, "simplify", false);
    cx->opt.debug = 0;
    CHECKF(d && strstr(d, "sqrt") && strstr(strstr(d, "sqrt") + 1, "sqrt"), "%s", d ? d : "?");
    free(d);
    CHECK(RUN_BOTH(cx, a) == AX_OK);
    ax_ctx_free(cx);
}

/* The thesis' ordering example: two reads of one element, as two terms:
 * CSE before shrinking reads the array once. */
static ax_exp two_reads(ax_exp ix, void *env)
{
    ax_acc arr = env;
    return ax_add(ax_at(arr, ix), ax_at(arr, ix));
}

TEST(cse_before_shrinking_reads_the_array_once)
{
    static const int32_t in[] = {3, 1, 4, 1, 5};
    ax_ctx *cx = interp_ctx();
    ax_acc xs = vec_of(cx, AX_I32, 5, in);
    ax_acc a = ax_generate(cx, ax_shape(xs), two_reads, xs);
    Program *p = RECOVER(cx, a);
    REQUIRE(p);
    CHECK_EQ_I(count_op(p->root, OP_INDEX), 2);
    SIMPLIFY(cx, p);
    CHECK_EQ_I(count_op(p->root, OP_INDEX), 1);
    const Node *b = fn_body(p->root);
    CHECKF(b && b->op == OP_LET && b->kid[1]->op == OP_PRIM && b->kid[1]->kid[0]->op == OP_VAR &&
           b->kid[1]->kid[1]->op == OP_VAR, "let x = a!i in x + x");
    program_free(p);
    CHECK(RUN_BOTH(cx, a) == AX_OK);

    /* the same as core IR with two lets: let x1 = a!i; x2 = a!i in x1 + x2 */
    HB h = hb_new(cx);
    int64_t n = 5;
    ax_array *arr = ax_array_from(cx, AX_I32, 1, &n, in);
    int a0 = hfresh(&h, ty_array(&h.p->arena, ty_i32(), 1));
    int ix = hfresh(&h, ty_index(NULL, 1));
    int x1 = hfresh(&h, ty_i32()), x2 = hfresh(&h, ty_i32());
    Node *rd1 = hn(&h, OP_INDEX, ty_i32(), 2), *rd2 = hn(&h, OP_INDEX, ty_i32(), 2);
    rd1->kid[0] = hvar(&h, a0);
    rd1->kid[1] = hvar(&h, ix);
    rd2->kid[0] = hvar(&h, a0);
    rd2->kid[1] = hvar(&h, ix);
    Node *body = hlet(&h, x1, rd1, hlet(&h, x2, rd2, hprim(&h, P_ADD, hvar(&h, x1), hvar(&h, x2))));
    Node *shp = hn(&h, OP_SHAPE, ty_index(NULL, 1), 1);
    shp->kid[0] = hvar(&h, a0);
    Node *gen = hn(&h, OP_GENERATE, ty_array(&h.p->arena, ty_i32(), 1), 2);
    gen->kid[0] = shp;
    gen->kid[1] = hlam(&h, ix, body);
    h.p->root = hlet(&h, a0, huse(&h, arr), gen);
    REQUIRE(verified(h.p, "building", __FILE__, __LINE__));
    SIMPLIFY(cx, h.p);
    CHECK_EQ_I(count_op(h.p->root, OP_INDEX), 1);
    ax_array *r;
    CHECK(hrun(&h, &r) == AX_OK);
    CHECK(r && ((int32_t *)ax_array_data(r, 0))[2] == 8);
    ax_array_release(r);
    program_free(h.p);
    ax_array_release(arr);
    ax_ctx_free(cx);
}

/* (d == 0 ? 0 : 100/d) + (d == 0 ? 1 : 100/d), the divisions (and the
 * tests) built twice: the divisions must stay inside their branches. */
static ax_exp guarded(ax_exp d, void *env)
{
    bool divide = env != NULL;
    ax_ctx *cx = ax_exp_ctx(d);
    ax_exp h = ax_const(cx, ax_i32(100));
    ax_exp q1 = divide ? ax_quot(h, d) : ax_mul(h, d), q2 = divide ? ax_quot(h, d) : ax_mul(h, d);
    return ax_add(ax_cond(ax_eq(d, ax_i32(0)), ax_i32(0), q1), ax_cond(ax_eq(d, ax_i32(0)), ax_i32(1), q2));
}

TEST(cse_respects_lazy_regions)
{
    static const int32_t in[] = {0, 1, 5, -3, 0};
    ax_ctx *cx = interp_ctx();
    ax_acc xs = vec_of(cx, AX_I32, 5, in);
    ax_acc a = ax_map(guarded, (void *)1, xs);
    Program *p = RECOVER(cx, a);
    REQUIRE(p);
    SIMPLIFY(cx, p);
    CHECK_EQ_I(count_prim(p->root, P_QUOT), 2);
    CHECK(prim_only_in_branches(fn_body(p->root), P_QUOT, false));
    CHECK_EQ_I(count_prim(p->root, P_EQ), 1);   /* the pure test is shared */
    program_free(p);
    CHECK(RUN_BOTH(cx, a) == AX_OK);           /* d = 0 does not fault */

    /* a pure product in both branches is shared (it costs no fault) */
    a = ax_map(guarded, NULL, xs);
    p = RECOVER(cx, a);
    REQUIRE(p);
    SIMPLIFY(cx, p);
    CHECK_EQ_I(count_prim(p->root, P_MUL), 1);
    program_free(p);
    CHECK(RUN_BOTH(cx, a) == AX_OK);

    /* let q = 100 / x in (x == 7 ? 100 / x : 0) + q: the copy in the
     * branch is the let's variable (thesis let-based CSE; q is already
     * evaluated there) */
    HB h = hb_new(cx);
    int64_t n = 5;
    ax_array *arr = ax_array_from(cx, AX_I32, 1, &n, (int32_t[]){1, 2, 7, -1, 3});
    int x = hfresh(&h, ty_i32()), q = hfresh(&h, ty_i32());
    Node *body = hlet(&h, q, hprim(&h, P_QUOT, hi32(&h, 100), hvar(&h, x)),
                      hprim(&h, P_ADD, hcond(&h, hprim(&h, P_EQ, hvar(&h, x), hi32(&h, 7)),
                                             hprim(&h, P_QUOT, hi32(&h, 100), hvar(&h, x)), hi32(&h, 0)),
                            hvar(&h, q)));
    h.p->root = hmap_over(&h, arr, x, body);
    REQUIRE(verified(h.p, "building", __FILE__, __LINE__));
    SIMPLIFY(cx, h.p);
    CHECK_EQ_I(count_prim(h.p->root, P_QUOT), 1);
    ax_array *r;
    CHECK(hrun(&h, &r) == AX_OK);
    CHECK(r && ((int32_t *)ax_array_data(r, 0))[2] == 28);
    ax_array_release(r);
    program_free(h.p);
    ax_array_release(arr);
    ax_ctx_free(cx);
}

/* =========================================================== shrinking */

static ax_array *ivec(ax_ctx *cx, int64_t n, const int32_t *v) { return ax_array_from(cx, AX_I32, 1, &n, v); }

TEST(shrinking_inlines_single_use_lets_and_drops_dead_ones)
{
    ax_ctx *cx = interp_ctx();
    ax_array *arr = ivec(cx, 3, (int32_t[]){1, 2, 3});
    HB h = hb_new(cx);
    /* let a = x*2 in let b = x+1 in let c = a+3 in let d = c*c in let e = d-1 in e */
    int x = hfresh(&h, ty_i32()), va = hfresh(&h, ty_i32()), vb = hfresh(&h, ty_i32());
    int vc = hfresh(&h, ty_i32()), vd = hfresh(&h, ty_i32()), ve = hfresh(&h, ty_i32());
    Node *body =
        hlet(&h, va, hprim(&h, P_MUL, hvar(&h, x), hi32(&h, 2)),
             hlet(&h, vb, hprim(&h, P_ADD, hvar(&h, x), hi32(&h, 1)),
                  hlet(&h, vc, hprim(&h, P_ADD, hvar(&h, va), hi32(&h, 3)),
                       hlet(&h, vd, hprim(&h, P_MUL, hvar(&h, vc), hvar(&h, vc)),
                            hlet(&h, ve, hprim(&h, P_SUB, hvar(&h, vd), hi32(&h, 1)), hvar(&h, ve))))));
    h.p->root = hmap_over(&h, arr, x, body);
    REQUIRE(verified(h.p, "building", __FILE__, __LINE__));
    ax_array *r0;
    REQUIRE(hrun(&h, &r0) == AX_OK);
    /* shrinking alone, to its fixed point */
    for (int round = 0; round < 8; round++) {
        bool changed = false;
        CHECK(opt_simplify_round(cx, h.p, SIMP_SHRINK, &changed) == 0);
        verified(h.p, "shrinking", __FILE__, __LINE__);
        if (!changed) break;
    }
    char *s = show(fn_body(h.p->root));
    /* b is dead, a, d and e are used once, c twice (kept) */
    char want1[64], want2[64];
    snprintf(want1, sizeof want1, "let x%d = add (mul x%d 2) 3 in", vc, x);
    snprintf(want2, sizeof want2, "sub (mul x%d x%d) 1", vc, vc);
    CHECKF(s && strstr(s, want1) && strstr(s, want2), "got:\n%s", s ? s : "?");
    free(s);
    CHECK_EQ_I(count_op(h.p->root, OP_LET), 1);
    ax_array *r1;
    CHECK(hrun(&h, &r1) == AX_OK);
    char msg[128];
    CHECKF(r0 && r1 && same_array(r0, r1, msg, sizeof msg), "%s", msg);
    ax_array_release(r0);
    ax_array_release(r1);
    program_free(h.p);
    ax_array_release(arr);
    ax_ctx_free(cx);
}

TEST(shrinking_keeps_dead_bindings_that_fault)
{
    ax_ctx *cx = interp_ctx();
    ax_array *arr = ivec(cx, 3, (int32_t[]){1, 0, 3});
    HB h = hb_new(cx);
    /* let q = 7 / x in 5 (strict: faults at x = 0) */
    int x = hfresh(&h, ty_i32()), q = hfresh(&h, ty_i32());
    h.p->root = hmap_over(&h, arr, x, hlet(&h, q, hprim(&h, P_QUOT, hi32(&h, 7), hvar(&h, x)), hi32(&h, 5)));
    ax_array *r;
    CHECK(hrun(&h, &r) == AX_ERR_DIVZERO);
    SIMPLIFY(cx, h.p);
    CHECK_EQ_I(count_op(h.p->root, OP_LET), 1);
    CHECK(hrun(&h, &r) == AX_ERR_DIVZERO);
    program_free(h.p);
    ax_array_release(arr);
    ax_ctx_free(cx);
}

TEST(shrinking_never_inlines_into_loops_or_faults_into_branches)
{
    ax_ctx *cx = interp_ctx();
    ax_array *arr = ivec(cx, 4, (int32_t[]){1, 0, 3, 7});
    HB h = hb_new(cx);
    /* let k = x*x in while (\i -> i < 100) (\i -> i + k) 0 */
    int x = hfresh(&h, ty_i32()), k = hfresh(&h, ty_i32()), i1 = hfresh(&h, ty_i32()), i2 = hfresh(&h, ty_i32());
    Node *loop = hwhile(&h, hlam(&h, i1, hprim(&h, P_LT, hvar(&h, i1), hi32(&h, 100))),
                        hlam(&h, i2, hprim(&h, P_ADD, hvar(&h, i2), hprim(&h, P_ADD, hvar(&h, k), hi32(&h, 1)))),
                        hi32(&h, 0));
    h.p->root = hmap_over(&h, arr, x, hlet(&h, k, hprim(&h, P_MUL, hvar(&h, x), hvar(&h, x)), loop));
    ax_array *r0, *r1;
    REQUIRE(hrun(&h, &r0) == AX_OK);
    SIMPLIFY(cx, h.p);
    const Node *b = fn_body(h.p->root);
    REQUIRE(b);
    CHECKF(b->op == OP_LET && b->kid[0]->op == OP_PRIM && b->kid[0]->a == P_MUL && b->kid[1]->op == OP_WHILE,
           "the binding moved into the loop");
    CHECK(count_prim(find_op(b, OP_WHILE), P_MUL) == 0);
    CHECK(hrun(&h, &r1) == AX_OK);
    char msg[128];
    CHECKF(r0 && r1 && same_array(r0, r1, msg, sizeof msg), "%s", msg);
    ax_array_release(r0);
    ax_array_release(r1);
    program_free(h.p);

    /* let q = 7 / x in (x == 0 ? 0 : q): q faults at x = 0 and must not
     * move into the branch (that would hide the fault); a pure binding
     * used in one branch does move there */
    h = hb_new(cx);
    x = hfresh(&h, ty_i32());
    int q = hfresh(&h, ty_i32()), m = hfresh(&h, ty_i32());
    Node *c1 = hcond(&h, hprim(&h, P_EQ, hvar(&h, x), hi32(&h, 0)), hi32(&h, 0), hvar(&h, q));
    Node *c2 = hcond(&h, hprim(&h, P_GT, hvar(&h, x), hi32(&h, 2)), hvar(&h, m), hi32(&h, 1));
    h.p->root = hmap_over(&h, arr, x,
                          hlet(&h, q, hprim(&h, P_QUOT, hi32(&h, 7), hvar(&h, x)),
                               hlet(&h, m, hprim(&h, P_MUL, hvar(&h, x), hi32(&h, 3)), hprim(&h, P_ADD, c1, c2))));
    CHECK(hrun(&h, &r0) == AX_ERR_DIVZERO);
    SIMPLIFY(cx, h.p);
    b = fn_body(h.p->root);
    CHECKF(b && b->op == OP_LET && b->kid[0]->op == OP_PRIM && b->kid[0]->a == P_QUOT, "the division moved");
    CHECK_EQ_I(count_op(h.p->root, OP_LET), 1);          /* m was inlined */
    CHECK(prim_only_in_branches(b, P_MUL, false));
    CHECK(hrun(&h, &r0) == AX_ERR_DIVZERO);
    program_free(h.p);
    ax_array_release(arr);
    ax_ctx_free(cx);
}

/* ================================================================ loops */

static ax_exp collatz_cond(ax_exp v, void *env) { (void)env; return ax_ne(ax_get(v, 0), ax_i32(1)); }
static ax_exp collatz_body(ax_exp v, void *env)
{
    (void)env;
    ax_exp n = ax_get(v, 0), k = ax_get(v, 1);
    ax_exp even = ax_eq(ax_rem(n, ax_i32(2)), ax_i32(0));
    return ax_tuple2(ax_cond(even, ax_quot(n, ax_i32(2)), ax_add(ax_mul(ax_i32(3), n), ax_i32(1))),
                     ax_add(k, ax_mul(ax_i32(1), ax_i32(1))));
}
static ax_exp never(ax_exp v, void *env) { (void)env; (void)v; return ax_const(ax_exp_ctx(v), ax_bool(false)); }
static ax_exp collatz(ax_exp x, void *env)
{
    (void)env;
    ax_ctx *cx = ax_exp_ctx(x);
    ax_exp steps = ax_get(ax_while(collatz_cond, collatz_body, NULL, ax_tuple2(x, ax_const(cx, ax_i32(0)))), 1);
    ax_exp skipped = ax_get(ax_while(never, collatz_body, NULL, ax_tuple2(x, ax_const(cx, ax_i32(5)))), 1);
    return ax_add(steps, skipped);
}

TEST(while_loops_keep_their_meaning)
{
    static const int32_t in[] = {1, 6, 7, 27, 97};
    ax_ctx *cx = interp_ctx();
    ax_acc a = ax_map(collatz, NULL, vec_of(cx, AX_I32, 5, in));
    Program *p = RECOVER(cx, a);
    REQUIRE(p);
    CHECK_EQ_I(count_op(p->root, OP_WHILE), 2);
    SIMPLIFY(cx, p);
    CHECK_EQ_I(count_op(p->root, OP_WHILE), 1);   /* the loop that never runs is its initial value */
    program_free(p);
    CHECK(RUN_BOTH(cx, a) == AX_OK);
    ax_array *r = RUN(cx, a);
    CHECK(r && ((int32_t *)ax_array_data(r, 0))[3] == 111 + 5);
    ax_array_release(r);
    ax_ctx_free(cx);
}

/* ============================================= propagation and arrays */

static ax_exp tuple_prop(ax_exp x, void *env)
{
    (void)env;
    ax_ctx *cx = ax_exp_ctx(x);
    /* t = (true ? (30, x) : (1, x)), used as a whole and through
     * projections */
    ax_exp t = ax_cond(ax_const(cx, ax_bool(true)), ax_tuple2(ax_const(cx, ax_i32(30)), x),
                       ax_tuple2(ax_const(cx, ax_i32(1)), x));
    ax_exp v = ax_add(ax_get(t, 0), ax_mul(ax_get(t, 0), ax_get(t, 1)));
    return ax_tuple2(v, ax_get(ax_tuple2(t, v), 0));
}

TEST(constant_propagation_through_lets_and_tuples)
{
    static const int32_t in[] = {0, 1, -2, 1000};
    ax_ctx *cx = interp_ctx();
    ax_acc a = ax_map(tuple_prop, NULL, vec_of(cx, AX_I32, 4, in));
    Program *p = RECOVER(cx, a);
    REQUIRE(p);
    SIMPLIFY(cx, p);
    char *s = show(fn_body(p->root));
    CHECKF(s && strstr(s, "add 30 (mul 30 x"), "%s", s ? s : "?");
    CHECKF(count_op(p->root, OP_PROJ) == 0 && count_op(p->root, OP_COND) == 0, "%s", s ? s : "?");
    free(s);
    program_free(p);
    CHECK(RUN_BOTH(cx, a) == AX_OK);

    /* let t = (30, x) in proj 0 t + proj 0 t * proj 1 t: t dies */
    HB h = hb_new(cx);
    ax_array *arr = ivec(cx, 2, (int32_t[]){2, 5});
    int x = hfresh(&h, ty_i32());
    const Type *el[2] = {ty_i32(), ty_i32()};
    int t = hfresh(&h, ty_tuple(&h.p->arena, 2, el));
    Node *body = hlet(&h, t, htuple2(&h, hi32(&h, 30), hvar(&h, x)),
                      hprim(&h, P_ADD, hproj(&h, 0, hvar(&h, t)),
                            hprim(&h, P_MUL, hproj(&h, 0, hvar(&h, t)), hproj(&h, 1, hvar(&h, t)))));
    h.p->root = hmap_over(&h, arr, x, body);
    SIMPLIFY(cx, h.p);
    CHECK_EQ_I(count_op(h.p->root, OP_LET), 0);
    CHECK_EQ_I(count_op(h.p->root, OP_TUPLE), 0);
    ax_array *r;
    CHECK(hrun(&h, &r) == AX_OK);
    CHECK(r && ((int32_t *)ax_array_data(r, 0))[1] == 180);
    ax_array_release(r);
    program_free(h.p);
    ax_array_release(arr);
    ax_ctx_free(cx);
}

TEST(array_level_acond_and_dead_array_lets)
{
    ax_ctx *cx = interp_ctx();
    ax_array *A = ivec(cx, 3, (int32_t[]){1, 2, 3}), *B = ivec(cx, 2, (int32_t[]){9, 9});
    HB h = hb_new(cx);
    /* let a0 = use A; a1 = use B (dead); a2 = a0 in
     * acond (1 < 2) (map (+1) a2) (map (*2) a0) */
    const Type *vt = ty_array(&h.p->arena, ty_i32(), 1);
    int a0 = hfresh(&h, vt), a1 = hfresh(&h, vt), a2 = hfresh(&h, vt);
    int x = hfresh(&h, ty_i32()), y = hfresh(&h, ty_i32());
    Node *m1 = hmap(&h, hlam(&h, x, hprim(&h, P_ADD, hvar(&h, x), hi32(&h, 1))), hvar(&h, a2));
    Node *m2 = hmap(&h, hlam(&h, y, hprim(&h, P_MUL, hvar(&h, y), hi32(&h, 2))), hvar(&h, a0));
    Node *ac = hn(&h, OP_ACOND, m1->type, 3);
    ac->kid[0] = hprim(&h, P_LT, hi32(&h, 1), hi32(&h, 2));
    ac->kid[1] = m1;
    ac->kid[2] = m2;
    h.p->root = hlet(&h, a0, huse(&h, A), hlet(&h, a1, huse(&h, B), hlet(&h, a2, hvar(&h, a0), ac)));
    REQUIRE(verified(h.p, "building", __FILE__, __LINE__));
    SIMPLIFY(cx, h.p);
    CHECK_EQ_I(count_op(h.p->root, OP_ACOND), 0);
    CHECK_EQ_I(count_op(h.p->root, OP_ALET), 1);
    CHECK_EQ_I(count_op(h.p->root, OP_MAP), 1);
    char *s = show(h.p->root);
    CHECKF(s && strstr(s, "add 1 x"), "%s", s ? s : "?");
    free(s);
    ax_array *r;
    CHECK(hrun(&h, &r) == AX_OK);
    CHECK(r && ax_array_size(r) == 3 && ((int32_t *)ax_array_data(r, 0))[2] == 4);
    ax_array_release(r);
    program_free(h.p);
    ax_array_release(A);
    ax_array_release(B);
    ax_ctx_free(cx);
}

/* ======================================================= Black-Scholes */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

TEST(blackscholes_unchanged_and_not_larger)
{
    const ex_program *prog = ex_find("blackscholes");
    REQUIRE(prog);
    ax_ctx *cx = interp_ctx();
    void *st = prog->setup(cx, 500);
    ax_acc a = prog->build(cx, st);
    Program *p = RECOVER(cx, a);
    REQUIRE(p);
    int64_t before = ir_count_nodes(p->root);
    double t0 = now_ms();
    int rounds = SIMPLIFY(cx, p);
    double t1 = now_ms();
    int64_t after = ir_count_nodes(p->root);
    fprintf(stderr, "blackscholes: %lld nodes after sharing recovery, %lld after simplification (%d rounds, "
            "%.3f ms with the verifier after every sub-pass)\n", (long long)before, (long long)after, rounds, t1 - t0);
    CHECK(after <= before);
    CHECK(rounds <= 3);
    program_free(p);
    /* simplify_program alone, timed */
    p = RECOVER(cx, a);
    REQUIRE(p);
    cx->opt.debug = 0;
    t0 = now_ms();
    CHECK(simplify_program(cx, p, true) == 0);
    t1 = now_ms();
    fprintf(stderr, "blackscholes: simplify_program %.3f ms\n", t1 - t0);
    program_free(p);
    CHECK(RUN_BOTH(cx, a) == AX_OK);
    ax_array *r = RUN(cx, a);
    char msg[256] = "";
    CHECKF(r && prog->check(st, &r, 1, msg, sizeof msg) == 0, "%s", msg);
    ax_array_release(r);
    prog->teardown(st);
    ax_ctx_free(cx);
}

TEST(builtin_programs_agree_with_and_without_the_simplifier)
{
    for (int i = 0; i < ex_nprograms; i++) {
        const ex_program *prog = ex_programs[i];
        ax_ctx *cx = interp_ctx();
        void *st = prog->setup(cx, prog->test_size ? prog->test_size : 100);
        if (!st) {
            ax_ctx_free(cx);
            continue;
        }
        ax_acc a = prog->build(cx, st);
        CHECKF(RUN_BOTH(cx, a) == AX_OK, "%s", prog->name);
        prog->teardown(st);
        ax_ctx_free(cx);
    }
}

/* ====================================================== random programs */

/* Random well-typed programs (tests/randprog.c), faulting ones included:
 * the interpreter with and without the simplifier must agree exactly. */
TEST(random_programs_agree_with_and_without_the_simplifier)
{
    int ran = 0, skipped = 0;
    for (int faults = 0; faults < 2; faults++) {
        RandProgConfig pc;
        randprog_default_config(&pc);
        pc.faults = faults;
        int n = faults ? 40 : 120;
        for (int i = 0; i < n; i++) {
            uint64_t seed = (faults ? 7000000 : 7000) + (uint64_t)i;
            ax_ctx *cx = interp_ctx();
            RandProg *rp = NULL;
            ax_acc a = randprog_build(cx, seed, &pc, &rp);
            if (!a) {
                skipped++;
            } else {
                /* programs the rest of the pipeline refuses are not ours */
                cx->opt.debug = AX_DEBUG_NO_SIMPLIFY;
                ax_program *pr = ax_compile(cx, a);
                cx->opt.debug = 0;
                if (!pr) {
                    skipped++;
                } else {
                    ax_program_free(pr);
                    int before = harness_failed_checks;
                    RUN_BOTH(cx, a);
                    if (harness_failed_checks != before) fprintf(stderr, "(random seed %llu)\n", (unsigned long long)seed);
                    ran++;
                }
            }
            randprog_free(rp);
            ax_ctx_free(cx);
        }
    }
    fprintf(stderr, "random: %d programs compared, %d skipped\n", ran, skipped);
    CHECK(ran > 100);
}

/* ========================================================= deep programs */

typedef struct DeepSimp {
    ax_ctx *cx;
    Program *p;
    int rc;
} DeepSimp;

static void deep_simplify(void *arg)
{
    DeepSimp *d = arg;
    d->rc = simplify_program(d->cx, d->p, true);
}

TEST(deep_chains_do_not_exhaust_the_stack)
{
    ax_ctx *cx = interp_ctx();
    /* x + 1 + 1 + ... (5000 deep) folds to 5000 + x; (x+x)+(x+x)... is a
     * chain of 5000 lets */
    HB h = hb_new(cx);
    ax_array *arr = ivec(cx, 3, (int32_t[]){1, 2, 3});
    int x = hfresh(&h, ty_i32());
    Node *e = hvar(&h, x);
    for (int i = 0; i < 5000; i++) e = hprim(&h, P_ADD, e, hi32(&h, 1));
    h.p->root = hmap_over(&h, arr, x, e);
    SIMPLIFY(cx, h.p);
    char *s = show(fn_body(h.p->root));
    char want[64];
    snprintf(want, sizeof want, "add 5000 x%d", x);
    CHECKF(s && !strcmp(s, want), "%s", s ? s : "?");
    free(s);
    program_free(h.p);

    h = hb_new(cx);
    x = hfresh(&h, ty_i32());
    int ids[20000];
    for (int i = 0; i < 20000; i++) ids[i] = hfresh(&h, ty_i32());
    /* let y1 = x + x; y2 = y1 + y1; ... in y20000 + 1, built inside out */
    Node *body = hprim(&h, P_ADD, hvar(&h, ids[19999]), hi32(&h, 1));
    for (int i = 19999; i >= 0; i--) {
        int prev = i ? ids[i - 1] : x;
        body = hlet(&h, ids[i], hprim(&h, P_ADD, hvar(&h, prev), hvar(&h, prev)), body);
    }
    h.p->root = hmap_over(&h, arr, x, body);
    REQUIRE(verified(h.p, "building", __FILE__, __LINE__));
    SIMPLIFY(cx, h.p);
    CHECK_EQ_I(count_op(h.p->root, OP_LET), 19999);   /* the last one is used once */
    program_free(h.p);

    /* deeper than OPT_MAX_DEPTH (no program from sharing recovery is): left
     * as it is, without an error and without overflowing the stack (run
     * on a stack sized as the driver sizes one, run_deep: a walk that did
     * not stop at the limit would go past it) */
    h = hb_new(cx);
    x = hfresh(&h, ty_i32());
    e = hvar(&h, x);
    for (int i = 0; i < OPT_MAX_DEPTH + 5000; i++) e = hprim(&h, P_ADD, e, hi32(&h, 1));
    h.p->root = hmap_over(&h, arr, x, e);
    DeepSimp d = {cx, h.p, -1};
    Node *root = h.p->root;
    CHECKF(run_deep(cx, OPT_MAX_DEPTH / 4, "test", deep_simplify, &d) == 0, "%s", ax_error(cx));
    CHECKF(d.rc == 0, "%s", ax_error(cx));
    CHECK(h.p->root == root && ax_status_of(cx) == AX_OK);
    program_free(h.p);
    ax_array_release(arr);
    ax_ctx_free(cx);
}

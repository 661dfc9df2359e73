/*
 * Sharing recovery (paper s.3), the IR verifier and the printer.  The
 * tests build source graphs with the public API and walk the core IR that
 * sharing_recover makes, checking where each let went; every program made
 * here must also pass ir_verify.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "ir.h"
#include "frontend/frontend.h"
#include <stdlib.h>
#include <string.h>

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

/* Recovers sharing and checks that the verifier accepts the result. */
static Program *recover(ax_ctx *cx, ax_acc a, bool sharing, const char *file, int line)
{
    if (!a) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: building failed: %s\n", file, line, ax_error(cx));
        return NULL;
    }
    Program *p = sharing_recover(cx, a, sharing);
    if (!p) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: sharing_recover failed: %s\n", file, line, ax_error(cx));
        return NULL;
    }
    char msg[512];
    if (ir_verify(p, msg, sizeof msg) != 0) {
        harness_failed_checks++;
        char *s = show(p->root);
        fprintf(stderr, "%s:%d: ir_verify: %s\nin:\n%s\n", file, line, msg, s ? s : "?");
        free(s);
    }
    return p;
}
#define RECOVER(cx, a, sharing) recover((cx), (a), (sharing), __FILE__, __LINE__)

static int count_op(const Node *n, Op op)
{
    if (!n) return 0;
    int c = n->op == op;
    for (int i = 0; i < n->n; i++) c += count_op(n->kid[i], op);
    return c;
}

static int count_prim(const Node *n, Prim p)
{
    if (!n) return 0;
    int c = n->op == OP_PRIM && n->a == (int)p;
    for (int i = 0; i < n->n; i++) c += count_prim(n->kid[i], p);
    return c;
}

/* The first node of an op in preorder, or NULL. */
static const Node *find_op(const Node *n, Op op)
{
    if (!n) return NULL;
    if (n->op == op) return n;
    for (int i = 0; i < n->n; i++) {
        const Node *r = find_op(n->kid[i], op);
        if (r) return r;
    }
    return NULL;
}

static bool is_var(const Node *n, int id) { return n && n->op == OP_VAR && n->id == id; }
static bool is_avar(const Node *n, int id) { return n && n->op == OP_AVAR && n->id == id; }
static bool is_prim(const Node *n, Prim p) { return n && n->op == OP_PRIM && n->a == (int)p; }

static ax_acc vec_f32(ax_ctx *cx, int64_t n)
{
    ax_array *a = ax_array_new(cx, ax_type_scalar(AX_F32), 1, &n);
    ax_acc u = ax_use(cx, a);
    ax_array_release(a);  /* the use node keeps its reference */
    return u;
}

static ax_exp cf32(ax_ctx *cx, float x) { return ax_const(cx, ax_f32(x)); }

/* ------------------------------------------------------------ (i) Figure 2 */

/* inc = (+) 1: a C function, so each application is a distinct term. */
static ax_exp inc(ax_ctx *cx, ax_exp x) { return ax_add(ax_const(cx, ax_i32(1)), x); }

/* let inc = (+) 1 in let nine = let three = inc 2 in three * three
 * in inc nine - nine */
static ax_acc figure2(ax_ctx *cx)
{
    ax_exp three = inc(cx, ax_const(cx, ax_i32(2)));
    ax_exp nine = ax_mul(three, three);
    return ax_unit(cx, ax_sub(inc(cx, nine), nine));
}

TEST(figure2_lets_where_the_paper_puts_them)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    Program *p = RECOVER(cx, figure2(cx), true);
    REQUIRE(p);
    const Node *r = p->root;
    REQUIRE(r->op == OP_UNIT);
    /* nine: bound once at the top of the scalar expression */
    const Node *lnine = r->kid[0];
    REQUIRE(lnine->op == OP_LET);
    /* three: bound inside the binding of nine */
    const Node *lthree = lnine->kid[0];
    REQUIRE(lthree->op == OP_LET);
    const Node *d3 = lthree->kid[0];
    CHECK(is_prim(d3, P_ADD) && d3->kid[0]->op == OP_CONST && d3->kid[1]->op == OP_CONST);
    CHECK_EQ_I(d3->kid[0]->c.i, 1);
    CHECK_EQ_I(d3->kid[1]->c.i, 2);
    const Node *m = lthree->kid[1];
    CHECK(is_prim(m, P_MUL) && is_var(m->kid[0], lthree->id) && is_var(m->kid[1], lthree->id));
    /* inc nine - nine: both uses of nine are the variable; inc's two
     * applications stay two terms (no let for inc) */
    const Node *b = lnine->kid[1];
    REQUIRE(is_prim(b, P_SUB));
    CHECK(is_prim(b->kid[0], P_ADD) && b->kid[0]->kid[0]->op == OP_CONST && is_var(b->kid[0]->kid[1], lnine->id));
    CHECK(is_var(b->kid[1], lnine->id));
    CHECK_EQ_I(ir_count_lets(p->root), 2);
    CHECK_EQ_I(p->nvars, 2);
    CHECK(ty_eq(p->vartype[lnine->id], ty_i32()) && ty_eq(p->vartype[lthree->id], ty_i32()));
    CHECK(lnine->id != lthree->id);
    char *s = show(p->root);
    REQUIRE(s);
    CHECKF(strstr(s, "let x1 = let x0 = add 1 2 in") != NULL, "%s", s);
    CHECKF(strstr(s, "sub (add 1 x1) x1") != NULL, "%s", s);
    free(s);
    program_free(p);
    ax_ctx_free(cx);
}

/* ------------------------------------------------------------ (ii) arrays */

TEST(array_shared_by_two_operations_gets_one_alet)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    ax_acc xs = vec_f32(cx, 8);
    ax_acc ys = ax_map(ax_fn_neg, NULL, xs);
    Program *p = RECOVER(cx, ax_zip_with(ax_fn_add, NULL, ys, ys), true);
    REQUIRE(p);
    const Node *r = p->root;
    REQUIRE(r->op == OP_ALET);
    CHECK(r->kid[0]->op == OP_MAP);
    CHECK(r->kid[0]->kid[1]->op == OP_USE);   /* xs is used once: inlined */
    const Node *z = r->kid[1];
    REQUIRE(z->op == OP_ZIPWITH);
    CHECK(is_avar(z->kid[1], r->id) && is_avar(z->kid[2], r->id));
    CHECK_EQ_I(ir_count_lets(r), 1);
    CHECK(p->vartype[r->id]->kind == TY_ARRAY);
    program_free(p);
    ax_ctx_free(cx);
}

/* ------------------------------------------------------------ (iii)-(v) scalars */

static ax_exp add_tt(ax_exp x, void *env)
{
    ax_exp t = *(ax_exp *)env;
    return ax_add(x, ax_mul(t, t));
}
static ax_exp add_t(ax_exp x, void *env) { return ax_add(x, *(ax_exp *)env); }
static ax_exp mul_t(ax_exp x, void *env) { return ax_mul(x, *(ax_exp *)env); }

TEST(scalar_shared_in_one_lambda_is_bound_inside_it)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    /* t is built outside the callback but used (twice) only inside it */
    ax_exp t = ax_mul(cf32(cx, 3), cf32(cx, 4));
    Program *p = RECOVER(cx, ax_map(add_tt, &t, vec_f32(cx, 8)), true);
    REQUIRE(p);
    const Node *r = p->root;
    REQUIRE(r->op == OP_MAP);              /* nothing bound outside */
    CHECK(r->kid[1]->op == OP_USE);
    const Node *lam = r->kid[0];
    REQUIRE(lam->op == OP_LAM);
    CHECK_EQ_I(count_op(lam, OP_LET), 1);
    CHECK_EQ_I(ir_count_lets(r), 1);
    /* bound at the lowest node that dominates both uses: the mul */
    const Node *l = find_op(lam, OP_LET);
    REQUIRE(l);
    CHECK(is_prim(l->kid[0], P_MUL) && l->kid[0]->kid[0]->op == OP_CONST);
    CHECK(is_prim(l->kid[1], P_MUL) && is_var(l->kid[1]->kid[0], l->id) && is_var(l->kid[1]->kid[1], l->id));
    program_free(p);
    ax_ctx_free(cx);
}

TEST(scalar_used_in_two_lambdas_is_duplicated)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    ax_exp t = ax_mul(cf32(cx, 3), cf32(cx, 4));
    ax_acc r1 = ax_map(add_t, &t, ax_map(mul_t, &t, vec_f32(cx, 8)));
    Program *p = RECOVER(cx, r1, true);
    REQUIRE(p);
    CHECK_EQ_I(ir_count_lets(p->root), 0);
    REQUIRE(p->root->op == OP_MAP && p->root->kid[1]->op == OP_MAP);
    /* each lambda has its own copy of mul 3 4 */
    const Node *outer = p->root->kid[0], *inner = p->root->kid[1]->kid[0];
    const Node *c1 = find_op(outer, OP_PRIM), *c2 = find_op(inner, OP_PRIM);
    REQUIRE(c1 && c2);
    CHECK(is_prim(c1->kid[1], P_MUL) && c1->kid[1]->kid[0]->op == OP_CONST);
    CHECK(is_prim(c2->kid[1], P_MUL) && c2->kid[1]->kid[0]->op == OP_CONST);
    program_free(p);

    /* used twice by one lambda and once by another: a let in the first,
     * an inlined copy in the second, still nothing at array level */
    ax_acc r2 = ax_map(add_t, &t, ax_map(add_tt, &t, vec_f32(cx, 8)));
    p = RECOVER(cx, r2, true);
    REQUIRE(p);
    CHECK_EQ_I(ir_count_lets(p->root), 1);
    REQUIRE(p->root->op == OP_MAP && p->root->kid[1]->op == OP_MAP);
    CHECK_EQ_I(count_op(p->root->kid[0], OP_LET), 0);
    CHECK_EQ_I(count_op(p->root->kid[1]->kid[0], OP_LET), 1);
    program_free(p);
    ax_ctx_free(cx);
}

static ax_exp square_twice(ax_exp x, void *env)
{
    ax_exp y = ax_mul(x, x);
    return ax_add(y, y);
}

TEST(shared_term_on_a_parameter_is_bound_inside_the_lambda)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    Program *p = RECOVER(cx, ax_map(square_twice, NULL, vec_f32(cx, 8)), true);
    REQUIRE(p);
    REQUIRE(p->root->op == OP_MAP);
    const Node *lam = p->root->kid[0];
    REQUIRE(lam->op == OP_LAM && lam->nparam == 1);
    int x = lam->param[0]->id;
    const Node *l = lam->kid[0];
    REQUIRE(l->op == OP_LET);
    CHECK(is_prim(l->kid[0], P_MUL) && is_var(l->kid[0]->kid[0], x) && is_var(l->kid[0]->kid[1], x));
    CHECK(is_prim(l->kid[1], P_ADD) && is_var(l->kid[1]->kid[0], l->id) && is_var(l->kid[1]->kid[1], l->id));
    CHECK(l->id != x);
    program_free(p);
    ax_ctx_free(cx);
}

/* ------------------------------------------------------------ (vi) arrays in scalar code */

static ax_exp read_at(ax_exp ix, void *env) { return ax_at((ax_acc)env, ix); }

TEST(array_read_by_scalar_code_is_alet_bound)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    ax_acc ys = ax_map(ax_fn_neg, NULL, vec_f32(cx, 8));
    ax_acc g = ax_generate(cx, ax_ix1(ax_i64(8)), read_at, ys);
    Program *p = RECOVER(cx, g, true);
    REQUIRE(p);
    const Node *r = p->root;
    REQUIRE(r->op == OP_ALET);             /* used once, but from scalar code */
    CHECK(r->kid[0]->op == OP_MAP);
    REQUIRE(r->kid[1]->op == OP_GENERATE);
    const Node *ix = find_op(r->kid[1], OP_INDEX);
    REQUIRE(ix);
    CHECK(is_avar(ix->kid[0], r->id));
    program_free(p);

    /* a use read by scalar code, inside a map over another array */
    ax_acc xs = vec_f32(cx, 8);
    ax_acc m = ax_generate(cx, ax_ix1(ax_i64(8)), read_at, xs);
    p = RECOVER(cx, m, true);
    REQUIRE(p);
    REQUIRE(p->root->op == OP_ALET);
    CHECK(p->root->kid[0]->op == OP_USE);
    program_free(p);
    ax_ctx_free(cx);
}

/* ------------------------------------------------------------ (vii) sharing off */

TEST(sharing_off_unfolds_to_a_larger_tree_without_lets)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    ax_acc a = figure2(cx);
    Program *on = RECOVER(cx, a, true), *off = RECOVER(cx, a, false);
    REQUIRE(on && off);
    CHECK_EQ_I(ir_count_lets(off->root), 0);
    CHECKF(ir_count_nodes(off->root) > ir_count_nodes(on->root), "%lld vs %lld",
           (long long)ir_count_nodes(off->root), (long long)ir_count_nodes(on->root));
    /* sub, inc nine, two copies of nine (mul), four of three (add 1 2) */
    CHECK_EQ_I(count_op(off->root, OP_PRIM), 1 + 1 + 2 + 4);
    program_free(on);
    program_free(off);

    /* a shared array with a lambda: two copies, each with its own
     * parameter ids (the verifier checks no id is bound twice) */
    ax_acc ys = ax_map(square_twice, NULL, vec_f32(cx, 8));
    off = RECOVER(cx, ax_zip_with(ax_fn_add, NULL, ys, ys), false);
    REQUIRE(off);
    CHECK_EQ_I(count_op(off->root, OP_MAP), 2);
    CHECK_EQ_I(count_op(off->root, OP_ALET) + count_op(off->root, OP_LET), 0);
    program_free(off);

    /* an array read by scalar code is still bound (must bind) */
    ax_acc g = ax_generate(cx, ax_ix1(ax_i64(8)), read_at, ax_map(ax_fn_neg, NULL, vec_f32(cx, 8)));
    off = RECOVER(cx, g, false);
    REQUIRE(off);
    CHECK_EQ_I(count_op(off->root, OP_ALET), 1);
    CHECK_EQ_I(count_op(off->root, OP_LET), 0);
    program_free(off);
    ax_ctx_free(cx);
}

/* ------------------------------------------------------------ (viii) nested sharing */

TEST(nested_sharing_dependency_is_in_scope)
{
    /* s uses t; t is also used next to s's first occurrence, below the
     * node where s is bound.  Floating t by its own uses alone would bind
     * it at add(s, t), out of scope for s's definition at the top. */
    ax_ctx *cx = ax_ctx_new(NULL);
    ax_exp t = ax_mul(ax_const(cx, ax_i32(2)), ax_const(cx, ax_i32(3)));
    ax_exp s = ax_add(t, ax_i32(1));
    Program *p = RECOVER(cx, ax_unit(cx, ax_sub(ax_add(s, t), s)), true);
    REQUIRE(p);
    REQUIRE(p->root->op == OP_UNIT);
    const Node *lt = p->root->kid[0];
    REQUIRE(lt->op == OP_LET);
    CHECK(is_prim(lt->kid[0], P_MUL));
    const Node *ls = lt->kid[1];
    REQUIRE(ls->op == OP_LET);
    CHECK(is_prim(ls->kid[0], P_ADD) && is_var(ls->kid[0]->kid[0], lt->id));
    const Node *b = ls->kid[1];
    CHECK(is_prim(b, P_SUB) && is_var(b->kid[1], ls->id));
    CHECK(is_prim(b->kid[0], P_ADD) && is_var(b->kid[0]->kid[0], ls->id) && is_var(b->kid[0]->kid[1], lt->id));
    program_free(p);

    /* the same at array level */
    ax_acc ta = ax_map(ax_fn_neg, NULL, vec_f32(cx, 8));
    ax_acc sa = ax_map(ax_fn_abs, NULL, ta);
    ax_acc r = ax_zip_with(ax_fn_add, NULL, ax_zip_with(ax_fn_mul, NULL, sa, ta), sa);
    p = RECOVER(cx, r, true);
    REQUIRE(p);
    const Node *at = p->root;
    REQUIRE(at->op == OP_ALET && at->kid[0]->op == OP_MAP);
    const Node *as = at->kid[1];
    REQUIRE(as->op == OP_ALET && as->kid[0]->op == OP_MAP);
    CHECK(is_avar(as->kid[0]->kid[1], at->id));
    CHECK(as->kid[1]->op == OP_ZIPWITH);
    CHECK_EQ_I(ir_count_lets(p->root), 2);
    program_free(p);

    /* a term used only inside another shared term's definition (twice)
     * stays inside that definition */
    ax_exp u = ax_mul(ax_const(cx, ax_i32(5)), ax_const(cx, ax_i32(7)));
    ax_exp w = ax_add(u, u);
    p = RECOVER(cx, ax_unit(cx, ax_mul(w, w)), true);
    REQUIRE(p);
    const Node *lw = p->root->kid[0];
    REQUIRE(lw->op == OP_LET);
    CHECK(lw->kid[0]->op == OP_LET);          /* u inside w's definition */
    CHECK(is_prim(lw->kid[1], P_MUL));
    program_free(p);
    ax_ctx_free(cx);
}

/* ------------------------------------------------------------ (ix) deep chains */

static ax_acc doubling_chain(ax_ctx *cx, int n)
{
    ax_exp x = ax_const(cx, ax_i32(1));
    for (int i = 0; i < n; i++) x = ax_add(x, x);
    return ax_unit(cx, x);
}

TEST(doubling_chain_recovers_in_linear_size)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    ax_acc a = doubling_chain(cx, 30);
    Program *p = RECOVER(cx, a, true);
    REQUIRE(p);
    /* x1..x29 are each used twice, x30 once; the constant is copied */
    CHECK_EQ_I(ir_count_lets(p->root), 29);
    CHECKF(ir_count_nodes(p->root) <= 4 * 30 + 4, "%lld nodes", (long long)ir_count_nodes(p->root));
    program_free(p);

    /* unfolded, 2^31 nodes: refused, not attempted */
    CHECK(sharing_recover(cx, a, false) == NULL);
    CHECK(ax_status_of(cx) == AX_ERR_NOMEM);
    CHECK(strstr(ax_error(cx), "unfolds") != NULL);
    ax_clear_error(cx);

    /* a small one unfolds exactly: 2^11 - 1 scalar nodes and the unit */
    p = RECOVER(cx, doubling_chain(cx, 10), false);
    REQUIRE(p);
    CHECK_EQ_I(ir_count_nodes(p->root), 2048);
    CHECK_EQ_I(ir_count_lets(p->root), 0);
    program_free(p);
    ax_ctx_free(cx);
}

TEST(long_chains_do_not_exhaust_the_stack)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    /* a long linear chain and a long shared chain, on the calling thread's
       stack (the driver runs deeper programs on a larger one) */
    ax_exp x = ax_const(cx, ax_i32(1)), y = x;
    for (int i = 0; i < 9990; i++) x = ax_add(x, ax_i32(1));
    for (int i = 0; i < 9990; i++) y = ax_add(y, y);
    Program *p = RECOVER(cx, ax_unit(cx, x), true);
    CHECK(p && ir_count_lets(p->root) == 0);
    program_free(p);
    p = RECOVER(cx, ax_unit(cx, y), true);
    CHECK(p && ir_count_lets(p->root) == 9989);
    program_free(p);
    /* past AX_DEPTH_LIMIT: an error, not a crash (test_deep.c, through
       ax_run, on the stack the driver sizes) */
    ax_ctx_free(cx);
}

/* ------------------------------------------------------------ no speculation */

/* (d == 0 ? 0 : q) + (d == 0 ? 1 : q): q is in a branch of each cond. */
static ax_exp guarded(ax_exp d, ax_exp q)
{
    ax_exp z = ax_i32(0);
    return ax_add(ax_cond(ax_eq(d, z), ax_i32(0), q), ax_cond(ax_eq(d, z), ax_i32(1), q));
}
static ax_exp guarded_div(ax_exp d, void *env) { return guarded(d, ax_quot(ax_i32(100), d)); }
static ax_exp guarded_mul(ax_exp d, void *env) { return guarded(d, ax_mul(ax_i32(100), d)); }
static ax_exp guarded_and(ax_exp d, void *env)
{
    ax_exp q = ax_rem(ax_i32(7), d);
    return ax_cvt(ax_or(ax_and(ax_ne(d, ax_i32(0)), ax_gt(q, ax_i32(1))),
                        ax_and(ax_ne(d, ax_i32(0)), ax_lt(q, ax_i32(5)))), AX_I32);
}

TEST(fallible_terms_are_not_hoisted_out_of_branches)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    int32_t data[4] = {0, 1, 5, 0};
    ax_array *arr = ax_array_from(cx, AX_I32, 1, (int64_t[]){4}, data);
    ax_acc xs = ax_use(cx, arr);
    ax_array_release(arr);

    /* a pure term shared by the two branches is bound above them */
    Program *p = RECOVER(cx, ax_map(guarded_mul, NULL, xs), true);
    REQUIRE(p);
    CHECK_EQ_I(ir_count_lets(p->root), 1);
    program_free(p);

    /* a division is copied into each branch instead */
    ax_acc a = ax_map(guarded_div, NULL, xs);
    p = RECOVER(cx, a, true);
    REQUIRE(p);
    CHECK_EQ_I(ir_count_lets(p->root), 0);
    CHECK_EQ_I(count_prim(p->root, P_QUOT), 2);
    program_free(p);
    ax_acc b = ax_map(guarded_and, NULL, xs);
    p = RECOVER(cx, b, true);
    REQUIRE(p);
    CHECK_EQ_I(ir_count_lets(p->root), 0);
    program_free(p);

    /* and the programs run without a division by zero either way */
    for (int sharing = 0; sharing < 2; sharing++) {
        ax_options o = {0};
        o.backend = AX_BACKEND_INTERP;
        o.debug = sharing ? 0 : AX_DEBUG_NO_SHARING;
        ax_ctx *c2 = ax_ctx_new(&o);
        ax_array *in = ax_array_from(c2, AX_I32, 1, (int64_t[]){4}, data);
        ax_acc ys = ax_use(c2, in);
        ax_array_release(in);
        ax_array *r1 = RUN(c2, ax_map(guarded_div, NULL, ys));
        ax_array *r2 = RUN(c2, ax_map(guarded_and, NULL, ys));
        if (r1 && r2) {
            const int32_t *v1 = ax_array_data(r1, 0), *v2 = ax_array_data(r2, 0);
            int32_t e1[4] = {1, 200, 40, 1}, e2[4] = {0, 1, 1, 0};
            for (int i = 0; i < 4; i++) {
                CHECK_EQ_I(v1[i], e1[i]);
                CHECK_EQ_I(v2[i], e2[i]);
            }
        }
        ax_array_release(r1);
        ax_array_release(r2);
        ax_ctx_free(c2);
    }
    ax_ctx_free(cx);
}

/* A fallible term with functions inside (a while loop) used in two lazy
 * regions is copied into each, with its own functions and parameters:
 * the copies share no lambda (that was "one function is used by two
 * operations") and nothing that depends on a parameter. */

/* state (i32 j, i64 acc): while j < 4: (j + 1, acc + step), step = *env */
static ax_exp wl_cond(ax_exp s, void *env) { return ax_lt(ax_get(s, 0), ax_i32(4)); }
static ax_exp wl_body(ax_exp s, void *env)
{
    ax_exp acc = ax_get(s, 1);
    return ax_tuple2(ax_add(ax_get(s, 0), ax_i32(1)), env ? ax_add(acc, *(ax_exp *)env) : acc);
}
static ax_exp wl_loop(ax_ctx *cx, ax_exp acc0, ax_exp *step)
{
    return ax_get(ax_while(wl_cond, wl_body, step, ax_tuple2(ax_const(cx, ax_i32(0)), acc0)), 1);
}
/* the loop's result used in a condition and in one of its branches */
static ax_exp wl_cond_branch(ax_exp ix, void *env)
{
    ax_exp i = ax_index_get(ix, 0);
    ax_exp w = wl_loop(env, i, NULL);
    return ax_cond(ax_gt(w, ax_i64(2)), w, ax_i64(0));
}
/* in two branches of two conds, with a term (m) used inside the loop's
 * body and outside it */
static ax_exp wl_two_conds(ax_exp ix, void *env)
{
    ax_exp i = ax_index_get(ix, 0);
    ax_exp m = ax_mul(i, ax_i64(3));
    ax_exp w = wl_loop(env, i, &m);
    return ax_add(ax_add(ax_cond(ax_gt(i, ax_i64(1)), w, ax_i64(0)), ax_cond(ax_lt(i, ax_i64(3)), ax_add(w, m), m)),
                  m);
}
/* a loop in a loop: the inner one depends on the outer one's parameter
 * and is itself used in two branches inside the outer body; the outer one
 * is used in two branches */
static ax_exp wl_outer_cond(ax_exp s, void *env) { return ax_lt(ax_get(s, 0), ax_i32(3)); }
static ax_exp wl_outer_body(ax_exp s, void *env)
{
    ax_exp j = ax_get(s, 0);
    ax_exp q = wl_loop(env, ax_mul(ax_cvt(j, AX_I64), ax_i64(2)), NULL);   /* = 2j */
    ax_exp r = ax_cond(ax_gt(j, ax_i32(0)), q, ax_mul(q, ax_i64(2)));        /* = 2j (q = 0 at j = 0) */
    return ax_tuple2(ax_add(j, ax_i32(1)), ax_add(ax_get(s, 1), r));
}
static ax_exp wl_nested(ax_exp ix, void *env)
{
    ax_ctx *cx = env;
    ax_exp i = ax_index_get(ix, 0);
    ax_exp w = ax_get(ax_while(wl_outer_cond, wl_outer_body, cx, ax_tuple2(ax_const(cx, ax_i32(0)), i)), 1);
    return ax_cond(ax_gt(i, ax_i64(2)), w, ax_add(w, ax_i64(1)));
}

static int64_t wl_expect(int which, int64_t i)
{
    int64_t w, m = 3 * i;
    switch (which) {
    case 0: return i > 2 ? i : 0;
    case 1:
        w = i + 4 * m;
        return (i > 1 ? w : 0) + (i < 3 ? w + m : m) + m;
    default:
        w = i;
        for (int64_t j = 0; j < 3; j++) w += 2 * j;
        return i > 2 ? w : w + 1;
    }
}

TEST(fallible_term_with_functions_is_copied_per_region)
{
    ax_fn1 fns[3] = {wl_cond_branch, wl_two_conds, wl_nested};
    enum { N = 6 };
    ax_ctx *cx = ax_ctx_new(NULL);
    for (int k = 0; k < 3; k++) {
        Program *p = RECOVER(cx, ax_generate(cx, ax_ix1(ax_i64(N)), fns[k], cx), true);
        REQUIRE(p);
        CHECK(count_op(p->root, OP_WHILE) >= 2);
        program_free(p);
    }
    /* the repro: one copy of the loop in the condition, one in the branch */
    Program *p = RECOVER(cx, ax_generate(cx, ax_ix1(ax_i64(N)), wl_cond_branch, cx), true);
    REQUIRE(p);
    CHECK_EQ_I(count_op(p->root, OP_WHILE), 2);
    CHECK_EQ_I(count_op(p->root, OP_LAM), 5);   /* generate's function, two per loop */
    program_free(p);
    ax_ctx_free(cx);

    for (int k = 0; k < 3; k++)
        for (int sharing = 0; sharing < 2; sharing++) {
            ax_options o = {0};
            o.backend = AX_BACKEND_INTERP;
            o.debug = sharing ? 0 : AX_DEBUG_NO_SHARING;
            ax_ctx *c2 = ax_ctx_new(&o);
            ax_array *r = RUN(c2, ax_generate(c2, ax_ix1(ax_i64(N)), fns[k], c2));
            if (r) {
                const int64_t *v = ax_array_data(r, 0);
                for (int64_t i = 0; i < N; i++) CHECKF(v[i] == wl_expect(k, i), "program %d sharing %d i %lld: %lld", k, sharing, (long long)i, (long long)v[i]);
            }
            ax_array_release(r);
            ax_ctx_free(c2);
        }
}

/* Array reads are fallible in unsafe mode too: "unsafe" promises that the
 * program's own reads are in bounds, not reads hoisted out of a guard. */
static ax_exp guarded_read(ax_exp x, void *env)
{
    ax_acc e = env;   /* an empty vector: the read is guarded */
    ax_exp rd = ax_at(e, ax_ix1(ax_i64(0)));
    ax_exp ne = ax_gt(ax_size(e), ax_i64(0));
    return ax_add(ax_cond(ne, rd, x), ax_cond(ne, rd, ax_i32(7)));
}

TEST(guarded_reads_are_not_hoisted_in_unsafe_mode)
{
    int32_t v[2] = {1, 2};
    for (int unsafe = 0; unsafe < 2; unsafe++)
        for (int sharing = 0; sharing < 2; sharing++) {
            ax_options o = {0};
            o.backend = AX_BACKEND_INTERP;
            o.unsafe = unsafe;
            o.debug = sharing ? 0 : AX_DEBUG_NO_SHARING;
            ax_ctx *cx = ax_ctx_new(&o);
            ax_array *h = ax_array_from(cx, AX_I32, 1, (int64_t[]){2}, v);
            ax_array *z = ax_array_from(cx, AX_I32, 1, (int64_t[]){0}, v);
            ax_acc e = ax_use(cx, z), xs = ax_use(cx, h);
            ax_array_release(h);
            ax_array_release(z);
            if (sharing) {
                /* the read stays in each branch */
                Program *p = RECOVER(cx, ax_map(guarded_read, e, xs), true);
                REQUIRE(p);
                CHECK_EQ_I(count_op(p->root, OP_INDEX) + count_op(p->root, OP_LINDEX), 2);
                char *src = show(p->root);
                CHECKF(src && !strstr(src, "= index"), "%s", src ? src : "?");
                free(src);
                program_free(p);
            }
            ax_array *r = RUN(cx, ax_map(guarded_read, e, xs));
            if (r) {
                const int32_t *d = ax_array_data(r, 0);
                for (int i = 0; i < 2; i++)
                    CHECKF(d[i] == v[i] + 7, "unsafe %d sharing %d: %d", unsafe, sharing, d[i]);
            }
            ax_array_release(r);
            ax_ctx_free(cx);
        }
}

/* ------------------------------------------------------------ misuse */

static ax_exp leak(ax_exp x, void *env)
{
    *(ax_exp *)env = x;
    return ax_neg(x);
}

TEST(variable_escaping_its_callback_is_an_error)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    ax_exp leaked;
    ax_acc ys = ax_map(leak, &leaked, vec_f32(cx, 8));
    ax_acc zs = ax_map(add_t, &leaked, ys);
    REQUIRE(zs);
    CHECK(sharing_recover(cx, zs, true) == NULL);
    CHECK(ax_status_of(cx) == AX_ERR_BUILD);
    CHECKF(strstr(ax_error(cx), "outside") != NULL, "%s", ax_error(cx));
    ax_clear_error(cx);
    CHECK(sharing_recover(cx, zs, false) == NULL);
    ax_clear_error(cx);
    ax_ctx_free(cx);
}

/* ------------------------------------------------------------ every operation */

static ax_exp sten3(const ax_exp *xs, void *env) { return ax_add(ax_add(xs[0], xs[1]), xs[2]); }
static ax_exp sten2(const ax_exp *xs, void *env) { return ax_mul(xs[1], xs[4]); }
static ax_exp ix_rev(ax_exp ix, void *env)
{
    return ax_ix1(ax_sub(ax_i64(7), ax_index_get(ix, 0)));
}
static ax_exp keep_pos(ax_exp x, void *env) { return ax_gt(x, ax_f32(0)); }
static ax_exp loop_cond(ax_exp x, void *env) { return ax_lt(x, ax_i32(100)); }
static ax_exp loop_body(ax_exp x, void *env) { return ax_mul(x, ax_i32(2)); }
static ax_exp while_in_lambda(ax_exp x, void *env)
{
    ax_exp n = ax_truncate(x, AX_I32);
    return ax_cvt(ax_add(ax_while(loop_cond, loop_body, NULL, n), ax_while(loop_cond, loop_body, NULL, n)), AX_F32);
}
static ax_acc aw_cond(ax_acc x, void *env)
{
    return ax_map(keep_pos, NULL, ax_fold_all(ax_fn_add, NULL, ax_f32(0), ax_aget(x, 0)));
}
static ax_exp dbl_read(ax_exp v, void *env)
{
    ax_acc t = env;
    return ax_mul(v, ax_at_linear(t, ax_i64(0)));
}
static ax_acc aw_body(ax_acc x, void *env)
{
    ax_acc a = ax_aget(x, 0);
    ax_acc h = ax_map(ax_fn_neg, NULL, a);      /* depends on x, used twice */
    return ax_atuple2(ax_map(dbl_read, h, h), ax_aget(x, 1));
}

/* One program with every array operation (and shared terms between them),
 * recovered with and without sharing; the verifier must accept both. */
TEST(every_operation_verifies_with_and_without_sharing)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    ax_acc xs = vec_f32(cx, 8);
    ax_acc m = ax_map(while_in_lambda, NULL, xs);
    ax_exp n = ax_size(m);
    ax_acc g = ax_generate(cx, ax_shape(m), read_at, m);
    ax_acc bp = ax_backpermute(ax_shape(g), ix_rev, NULL, g);
    ax_acc pm = ax_permute(ax_fn_add, NULL, bp, ix_rev, NULL, g);
    ax_acc rep = ax_replicate(2, (ax_slice[]){ax_fixed(ax_i64(3)), ax_all()}, pm);
    ax_acc sl = ax_slice_(2, (ax_slice[]){ax_fixed(ax_i64(1)), ax_all()}, rep);
    ax_acc rs = ax_reshape(ax_ix2(ax_i64(2), ax_i64(4)), sl);
    ax_acc f = ax_fold(ax_fn_add, NULL, ax_f32(0), rs);
    ax_acc f1 = ax_fold1(ax_fn_max, NULL, rs);
    ax_array *sega = ax_array_new(cx, ax_type_scalar(AX_I32), 1, (int64_t[]){2});
    ax_acc segs = ax_use(cx, sega);
    ax_array_release(sega);
    ax_acc fs = ax_fold_seg(ax_fn_add, NULL, ax_f32(0), rs, segs);
    ax_acc f1s = ax_fold1_seg(ax_fn_add, NULL, rs, segs);
    ax_acc sc[6] = {ax_scanl(ax_fn_add, NULL, ax_f32(0), sl), ax_scanl1(ax_fn_add, NULL, sl),
                    ax_scanr(ax_fn_add, NULL, ax_f32(0), sl), ax_scanr1(ax_fn_add, NULL, sl),
                    ax_aget(ax_scanl_ex(ax_fn_add, NULL, ax_f32(0), sl), 0),
                    ax_aget(ax_scanr_ex(ax_fn_add, NULL, ax_f32(0), sl), 1)};
    ax_acc fl = ax_filter(keep_pos, NULL, sl);
    ax_acc st1 = ax_stencil(sten3, NULL, (int[]){3}, ax_clamp(), sl);
    ax_acc st2 = ax_stencil2(sten2, NULL, (int[]){3}, ax_constant(ax_f32(1)), sl, (int[]){3},
                             ax_constant(ax_f32(2)), st1);
    ax_acc ac = ax_acond(ax_gt(n, ax_i64(3)), st2, st1);
    ax_acc aw = ax_awhile(aw_cond, aw_body, NULL, ax_atuple2(ac, f));
    ax_acc u = ax_unit(cx, ax_add(ax_at(f, ax_ix1(ax_i64(0))), ax_at(f1, ax_ix1(ax_i64(0)))));
    ax_acc parts[] = {aw, u, fs, f1s, sc[0], sc[1], sc[2], sc[3], sc[4], sc[5], fl};
    ax_acc all = ax_atuple(11, parts);
    REQUIRE(all);
    Program *on = RECOVER(cx, all, true), *off = RECOVER(cx, all, false);
    REQUIRE(on && off);
    CHECK(ir_count_nodes(off->root) > ir_count_nodes(on->root));
    CHECK(ir_count_lets(on->root) > 0);
    /* the awhile body's shared h is bound inside the body function */
    const Node *w = find_op(on->root, OP_AWHILE);
    REQUIRE(w);
    CHECK(count_op(w->kid[1]->kid[0], OP_ALET) >= 1);
    /* two whiles sharing their start value in one lambda */
    CHECK_EQ_I(count_op(on->root, OP_WHILE), 2);
    if (getenv("SHOW_IR")) {
        char *t = show(on->root);
        fprintf(stderr, "%s\n", t);
        free(t);
    }
    program_free(on);
    program_free(off);
    ax_ctx_free(cx);
}

/* ------------------------------------------------------------ (x) the verifier */

static Node *mk(Arena *a, Op op, int n, const Type *t)
{
    Node *x = node_new(a, op, n, t);
    return x;
}

TEST(verifier_rejects_broken_programs)
{
    char msg[256];
    Program p;
    memset(&p, 0, sizeof p);
    arena_init(&p.arena);
    Arena *A = &p.arena;
    const Type *i32 = ty_i32(), *f32 = ty_scalar(AX_F32);
    const Type *vt[2] = {i32, i32};
    p.vartype = vt;
    p.nvars = 2;

    /* a good one: unit (let x0 = 1 in add x0 x0) */
    Node *c1 = mk(A, OP_CONST, 0, i32);
    c1->c.i = 1;
    Node *add = mk(A, OP_PRIM, 2, i32);
    add->a = P_ADD;
    add->kid[0] = mk(A, OP_VAR, 0, i32);
    add->kid[1] = mk(A, OP_VAR, 0, i32);
    Node *let = mk(A, OP_LET, 2, i32);
    let->id = 0;
    let->kid[0] = c1;
    let->kid[1] = add;
    Node *u = mk(A, OP_UNIT, 1, ty_array(A, i32, 0));
    u->kid[0] = let;
    p.root = u;
    CHECKF(ir_verify(&p, msg, sizeof msg) == 0, "%s", msg);

    /* unbound variable */
    add->kid[1]->id = 1;
    CHECK(ir_verify(&p, msg, sizeof msg) == -1);
    CHECKF(strstr(msg, "not in scope") != NULL, "%s", msg);
    add->kid[1]->id = 0;

    /* type mismatch: add of i32 and f32 */
    Node *cf = mk(A, OP_CONST, 0, f32);
    Node *old = add->kid[1];
    add->kid[1] = cf;
    CHECK(ir_verify(&p, msg, sizeof msg) == -1);
    CHECKF(strstr(msg, "prim") != NULL, "%s", msg);
    add->kid[1] = old;

    /* a node reached twice */
    add->kid[1] = add->kid[0];
    CHECK(ir_verify(&p, msg, sizeof msg) == -1);
    CHECKF(strstr(msg, "twice") != NULL, "%s", msg);
    add->kid[1] = old;

    /* the let's type differs from its body's */
    let->type = f32;
    CHECK(ir_verify(&p, msg, sizeof msg) == -1);
    let->type = i32;

    /* vartype disagrees with the binder */
    vt[0] = f32;
    CHECK(ir_verify(&p, msg, sizeof msg) == -1);
    vt[0] = i32;

    /* an id bound twice: let x0 = 1 in let x0 = ... */
    Node *let2 = mk(A, OP_LET, 2, i32);
    let2->id = 0;
    let2->kid[0] = mk(A, OP_CONST, 0, i32);
    let2->kid[1] = let;
    u->kid[0] = let2;
    CHECK(ir_verify(&p, msg, sizeof msg) == -1);
    CHECKF(strstr(msg, "twice") != NULL, "%s", msg);
    u->kid[0] = let;
    CHECKF(ir_verify(&p, msg, sizeof msg) == 0, "%s", msg);

    /* scalar code reading an array that is not a variable */
    ax_ctx *cx = ax_ctx_new(NULL);
    ax_array *arr = ax_array_new(cx, i32, 1, (int64_t[]){4});
    Node *use = mk(A, OP_USE, 0, ty_array(A, i32, 1));
    use->arr = arr;
    Node *ix = mk(A, OP_IXCONS, 1, ty_index(A, 1));
    ix->kid[0] = mk(A, OP_CONST, 0, ty_i64());
    Node *at = mk(A, OP_INDEX, 2, i32);
    at->kid[0] = use;
    at->kid[1] = ix;
    u->kid[0] = at;
    CHECK(ir_verify(&p, msg, sizeof msg) == -1);
    CHECKF(strstr(msg, "array variables") != NULL, "%s", msg);

    /* ... fixed with an alet: alet a1 = use in unit (index a1 ix) */
    const Type *vt2[2] = {i32, use->type};
    p.vartype = vt2;
    Node *avar = mk(A, OP_AVAR, 0, use->type);
    avar->id = 1;
    at->kid[0] = avar;
    Node *alet = mk(A, OP_ALET, 2, u->type);
    alet->id = 1;
    alet->kid[0] = use;
    alet->kid[1] = u;
    p.root = alet;
    CHECKF(ir_verify(&p, msg, sizeof msg) == 0, "%s", msg);

    /* map whose function's parameter has the wrong type */
    Node *lam = mk(A, OP_LAM, 1, i32);
    lam->nparam = 1;
    lam->param = arena_alloc(A, sizeof(Node *));
    lam->param[0] = mk(A, OP_VAR, 0, f32);
    lam->param[0]->id = 0;
    lam->kid[0] = mk(A, OP_CONST, 0, i32);
    Node *map = mk(A, OP_MAP, 2, ty_array(A, i32, 1));
    map->kid[0] = lam;
    Node *avar2 = mk(A, OP_AVAR, 0, use->type);
    avar2->id = 1;
    map->kid[1] = avar2;
    alet->kid[1] = map;
    alet->type = map->type;
    const Type *vt3[2] = {f32, use->type};
    p.vartype = vt3;
    CHECK(ir_verify(&p, msg, sizeof msg) == -1);
    CHECKF(strstr(msg, "parameter") != NULL, "%s", msg);
    lam->param[0]->type = i32;
    vt3[0] = i32;
    CHECKF(ir_verify(&p, msg, sizeof msg) == 0, "%s", msg);
    /* wrong result rank */
    map->type = alet->type = ty_array(A, i32, 2);
    CHECK(ir_verify(&p, msg, sizeof msg) == -1);
    CHECKF(strstr(msg, "map") == msg, "%s", msg);
    /* fusion's nodes: map (\x0 -> x0) (delayed ix(4) (\x1 -> 1) (\x2 -> 1)) */
    {
        const Type *ix1 = ty_index(A, 1), *vtd[4] = {i32, ix1, ty_i64(), ix1};
        Program q;
        memset(&q, 0, sizeof q);
        q.vartype = vtd;
        q.nvars = 4;
        Node *lams[3];
        for (int k = 0; k < 3; k++) {
            Node *body = k == 0 ? mk(A, OP_VAR, 0, i32) : mk(A, OP_CONST, 0, i32);
            lams[k] = mk(A, OP_LAM, 1, i32);
            lams[k]->nparam = 1;
            lams[k]->param = arena_alloc(A, sizeof(Node *));
            lams[k]->param[0] = mk(A, OP_VAR, 0, vtd[k]);
            lams[k]->param[0]->id = k;
            lams[k]->kid[0] = body;
        }
        Node *sh = mk(A, OP_IXCONS, 1, ix1);
        sh->kid[0] = mk(A, OP_CONST, 0, ty_i64());
        sh->kid[0]->c.i = 4;
        Node *d = mk(A, OP_DELAYED, 3, ty_array(A, i32, 1));
        d->kid[0] = sh;
        d->kid[1] = lams[1];
        d->kid[2] = lams[2];
        Node *mp = mk(A, OP_MAP, 2, ty_array(A, i32, 1));
        mp->kid[0] = lams[0];
        mp->kid[1] = d;
        q.root = mp;
        CHECKF(ir_verify(&q, msg, sizeof msg) == 0, "%s", msg);
        q.root = d;   /* a delayed array is only a consumer's operand */
        CHECK(ir_verify(&q, msg, sizeof msg) == -1);
        CHECKF(strstr(msg, "delayed") == msg, "%s", msg);
        lams[2]->kid[0]->type = f32;   /* the two forms disagree */
        lams[2]->type = f32;
        q.root = mp;
        CHECK(ir_verify(&q, msg, sizeof msg) == -1);
        /* transform ix(4) (\x1 -> x1) (\x0 -> x0) (delayed ...) */
        lams[2]->kid[0]->type = lams[2]->type = i32;
        Node *idf = mk(A, OP_LAM, 1, ix1);
        idf->nparam = 1;
        idf->param = arena_alloc(A, sizeof(Node *));
        idf->param[0] = mk(A, OP_VAR, 0, ix1);
        idf->param[0]->id = 3;
        idf->kid[0] = mk(A, OP_VAR, 0, ix1);
        idf->kid[0]->id = 3;
        Node *d2 = mk(A, OP_DELAYED, 3, ty_array(A, i32, 1));
        d2->kid[0] = sh;
        d2->kid[1] = lams[1];
        d2->kid[2] = lams[2];
        Node *sh2 = mk(A, OP_IXCONS, 1, ix1);
        sh2->kid[0] = mk(A, OP_CONST, 0, ty_i64());
        Node *lm = mk(A, OP_LAM, 1, i32);
        *lm = *lams[0];
        Node *tr = mk(A, OP_TRANSFORM, 4, ty_array(A, i32, 1));
        tr->kid[0] = sh2;
        tr->kid[1] = idf;
        tr->kid[2] = lm;
        tr->kid[3] = d2;
        q.root = tr;
        /* (its lambdas' parameters are the first program's: that one is
         * not reached from here) */
        CHECKF(ir_verify(&q, msg, sizeof msg) == 0, "%s", msg);
        tr->type = ty_array(A, f32, 1);   /* map's result type ignored */
        CHECK(ir_verify(&q, msg, sizeof msg) == -1);
        CHECKF(strstr(msg, "transform") == msg, "%s", msg);
    }

    /* no program */
    CHECK(ir_verify(NULL, msg, sizeof msg) == -1);

    arena_free(A);
    ax_array_release(arr);
    ax_ctx_free(cx);
}

/* ------------------------------------------------------------ printing */

TEST(printer_text_and_json)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    ax_acc a = figure2(cx);
    /* the source graph: a DAG, shared nodes labelled */
    char *src = show(a);
    REQUIRE(src);
    CHECKF(strstr(src, "#1:(") && strstr(src, "#2:(") && strstr(src, " #2"), "%s", src);
    free(src);
    Program *p = RECOVER(cx, a, true);
    REQUIRE(p);
    char *s = show(p->root);
    REQUIRE(s);
    CHECKF(!strcmp(s, "unit (let x1 = let x0 = add 1 2 in\n"
                      "               mul x0 x0 in\n"
                      "      sub (add 1 x1) x1)"), "got:\n%s", s);
    free(s);

    char *j = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&j, &len);
    REQUIRE(f);
    ir_print_json(f, "fig\"2", "sharing", p->root);
    fclose(f);
    CHECK(strncmp(j, "{\"program\":\"fig\\\"2\",\"stage\":\"sharing\",", 38) == 0);
    CHECK(strstr(j, "\"lets\":2") != NULL);
    CHECK(strstr(j, "\"array_nodes\":1,") != NULL);
    CHECK(strstr(j, "\"nodes\":14,") != NULL);
    CHECK(strstr(j, "\"ir\":\"unit (let x1") != NULL);
    CHECK(strchr(j, '\n') == j + len - 1);   /* one line */
    free(j);

    /* the source DAG counts shared nodes once */
    j = NULL;
    f = open_memstream(&j, &len);
    REQUIRE(f);
    ir_print_json(f, "fig2", "source", a);
    fclose(f);
    /* unit, sub, inc nine, nine, three, three constants */
    CHECKF(strstr(j, "\"nodes\":8,") != NULL, "%s", j);
    CHECK(strstr(j, "\"lets\":0") != NULL);
    free(j);
    program_free(p);
    ax_ctx_free(cx);
}

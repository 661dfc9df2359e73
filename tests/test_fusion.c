/*
 * Array fusion (thesis s.4, paper s.4; src/opt/fusion.c): the kernel and
 * intermediate counts of the built-in programs (dotp, reversemap, zipmap,
 * blackscholes: one kernel each; figure3 grouped as the paper's Figure 3),
 * the verifier after every pass, results with fusion on and off for the
 * built-in programs, for hand-written producer/consumer chains and for the
 * random program generator's programs, on the interpreter (whose DELAYED
 * operands check the index form against the linear form element by
 * element) and on the CPU backend where it is available; the Graphviz view.
 *
 * Environment: AXLE_FUSION_SEEDS (random programs on the interpreter,
 * default 300), AXLE_FUSION_CPU_SEEDS (on the CPU backend, default 40),
 * AXLE_FUSION_SEED0 (first seed, default 1).
 *
 * Longer than most files: each fusion rule's tests sit next to the
 * counts they check, one section per rule.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "ir.h"
#include "opt/opt_dot.h"
#include "programs.h"
#include "randprog.h"
/* One executable per tests/test_*.c: the generator is compiled in here
 * (as test_random.c does) unless it is linked as an object. */
#ifndef RANDPROG_LINKED
#include "randprog.c"
#include "backend/interp/interp.h"
#include "frontend/frontend.h"
#include "opt/opt.h"
#endif
#include <stdlib.h>
#include <string.h>

static ax_ctx *ctx(ax_backend_kind be, unsigned debug)
{
    ax_options o = {0};
    o.backend = be;
    o.debug = debug | AX_DEBUG_VERIFY;
    return ax_ctx_new(&o);
}

/* Whether the CPU backend runs here (a C compiler is needed). */
static bool cpu_available(void)
{
    ax_ctx *cx = ctx(AX_BACKEND_CPU, 0);
    ax_program *p = ax_compile(cx, ax_unit(cx, ax_i32(1)));
    bool ok = p != NULL;
    if (!ok) printf("note: the CPU backend is not available here: %s\n", ax_error(cx));
    ax_program_free(p);
    ax_ctx_free(cx);
    return ok;
}

/* ------------------------------------------------------------ helpers */

enum { MAXOUT = 16 };

/* The front end as ax_compile runs it, on a Program the test keeps:
 * sharing recovery, simplify, fusion and (post) simplify again, with the
 * verifier after every pass.  *before: the root fusion was given. */
static Program *pipeline(ax_ctx *cx, ax_acc a, bool fuse, bool post, Node **before)
{
    char msg[512];
    Program *p = sharing_recover(cx, a, true);
    if (!p) {
        fprintf(stderr, "sharing recovery: %s\n", ax_error(cx));
        harness_failed_checks++;
        return NULL;
    }
    CHECKF(ir_verify(p, msg, sizeof msg) == 0, "after sharing recovery: %s", msg);
    CHECK(simplify_program(cx, p, true) == 0);
    CHECKF(ir_verify(p, msg, sizeof msg) == 0, "after simplify: %s", msg);
    if (before) *before = p->root;
    if (fuse) {
        CHECKF(fuse_program(cx, p, 0) == 0, "fusion: %s", ax_error(cx));
        CHECKF(ir_verify(p, msg, sizeof msg) == 0, "after fusion: %s", msg);
        if (post) {
            CHECK(simplify_program(cx, p, true) == 0);
            CHECKF(ir_verify(p, msg, sizeof msg) == 0, "after simplify after fusion: %s", msg);
        }
    }
    return p;
}

/* The schedule's figures from ax_dump's JSON ("kernels" stage). */
static bool dump_counts(ax_ctx *cx, ax_acc a, int64_t *k, int64_t *i)
{
    char *j = ax_dump(cx, a, "kernels", true);
    if (!j) {
        fprintf(stderr, "ax_dump: %s\n", ax_error(cx));
        return false;
    }
    const char *pk = NULL, *pi = NULL;
    for (const char *s = j; (s = strstr(s, "\"kernels\":")); s++) pk = s;
    for (const char *s = j; (s = strstr(s, "\"intermediates\":")); s++) pi = s;
    bool ok = pk && pi;
    if (ok) {
        *k = strtoll(pk + strlen("\"kernels\":"), NULL, 10);
        *i = strtoll(pi + strlen("\"intermediates\":"), NULL, 10);
    }
    free(j);
    return ok;
}

/* Does scalar code x hold the integer constant +-v? */
static bool has_const(const Node *x, int64_t v)
{
    if (!x) return false;
    if (x->op == OP_CONST && x->type->kind == TY_SCALAR && sc_is_int(x->type->s) && (x->c.i == v || x->c.i == -v))
        return true;
    for (int i = 0; i < x->n; i++)
        if (has_const(x->kid[i], v)) return true;
    return false;
}

/* Collects the array nodes of op (any op: OP_NOPS) in a tree, preorder. */
static int collect(Node *x, Op op, Node **out, int max, int n)
{
    if (!x) return n;
    if (op_is_array(x->op) && (op == OP_NOPS || x->op == op) && n < max) out[n++] = x;
    for (int i = 0; i < x->n; i++) n = collect(x->kid[i], op, out, max, n);
    return n;
}

/* The unique array node of op whose function (kid 0) holds constant v
 * (v < 0: the unique node of op). */
static Node *find(Node *root, Op op, int64_t v)
{
    Node *all[256], *hit = NULL;
    int n = collect(root, op, all, 256, 0), count = 0;
    for (int i = 0; i < n; i++)
        if (v < 0 || has_const(all[i]->kid[0], v)) {
            hit = all[i];
            count++;
        }
    return count == 1 ? hit : NULL;
}

/* Is op a kernel (as schedule_stats counts them)? */
static bool kernel_op(Op op)
{
    return op_is_array(op) && op != OP_AVAR && op != OP_ALET && op != OP_USE && op != OP_ATUPLE && op != OP_APROJ &&
           op != OP_DELAYED && op != OP_ACOND && op != OP_AWHILE;
}

/* The computation bound to array variable id in tree x (NULL if none). */
static Node *bound_to(Node *x, int id)
{
    if (!x) return NULL;
    if (x->op == OP_ALET && x->id == id) return x->kid[0];
    for (int i = 0; i < x->n; i++) {
        Node *r = bound_to(x->kid[i], id);
        if (r) return r;
    }
    return NULL;
}

/* ------------------------------------------------------------ built-in programs */

static const struct {
    const char *name;
    int64_t kernels, intermediates;
} expected[] = {
    {"dotp", 1, 0}, {"reversemap", 1, 0}, {"zipmap", 1, 0}, {"blackscholes", 1, 0}, {"figure3", 5, 3},
    /* one segmented reduction reading the matrix once (paper s.5.9): the
     * unzipped column indices, read by the gather's index function, are
     * not copied */
    {"smvm", 1, 0},
};

TEST(builtin_programs_kernel_counts)
{
    for (size_t e = 0; e < sizeof expected / sizeof *expected; e++) {
        const ex_program *p = ex_find(expected[e].name);
        CHECKF(p != NULL, "%s is not a built-in program", expected[e].name);
        if (!p) continue;
        for (int fuse = 1; fuse >= 0; fuse--) {
            /* Accelerate's fusion (the paper's counts): the planner apart */
            ax_ctx *cx = ctx(AX_BACKEND_INTERP, fuse ? AX_DEBUG_NO_PLANNER : AX_DEBUG_NO_FUSION);
            void *st = p->setup(cx, 16);
            int64_t k = -1, i = -1;
            CHECKF(dump_counts(cx, p->build(cx, st), &k, &i), "%s", p->name);
            if (fuse) {
                CHECKF(k == expected[e].kernels && i == expected[e].intermediates,
                       "%s: %lld kernels, %lld intermediates; expected %lld and %lld", p->name, (long long)k,
                       (long long)i, (long long)expected[e].kernels, (long long)expected[e].intermediates);
                /* the same by calling the passes directly */
                Program *pr = pipeline(cx, p->build(cx, st), true, false, NULL);
                if (pr) {
                    int64_t k2, i2;
                    schedule_stats(pr, &k2, &i2);
                    CHECKF(k2 == expected[e].kernels && i2 == expected[e].intermediates, "%s: %lld, %lld", p->name,
                           (long long)k2, (long long)i2);
                    program_free(pr);
                }
            } else {
                /* without fusion every operation is a kernel of its own */
                CHECKF(k >= expected[e].kernels, "%s: %lld kernels without fusion", p->name, (long long)k);
                if (!strcmp(p->name, "dotp")) CHECK(k == 2 && i == 1);
                if (!strcmp(p->name, "figure3")) CHECK(k == 9 && i >= 3);
            }
            p->teardown(st);
            ax_ctx_free(cx);
        }
    }
    /* the planner then merges Figure 3's two consumers of p7 (maps of one
     * array) into one loop */
    const ex_program *p = ex_find("figure3");
    ax_ctx *cx = ctx(AX_BACKEND_INTERP, 0);
    void *st = p && cx ? p->setup(cx, 16) : NULL;
    int64_t k = -1, i = -1;
    CHECK(st && dump_counts(cx, p->build(cx, st), &k, &i));
    CHECKF(k == 4 && i == 3, "figure3 with the planner: %lld kernels, %lld intermediates", (long long)k, (long long)i);
    if (st) p->teardown(st);
    ax_ctx_free(cx);
}

/* The paper's Figure 3: p1 stays manifest (used by c1 and p2); p2..p5
 * fuse into c2; c1 is a kernel of its own; c2 does not fuse into p6, p7. */
TEST(figure3_groups_as_in_the_paper)
{
    const ex_program *fp = ex_find("figure3");
    REQUIRE(fp);
    ax_ctx *cx = ctx(AX_BACKEND_INTERP, 0);
    void *st = fp->setup(cx, 10);
    Node *before = NULL;
    Program *p = pipeline(cx, fp->build(cx, st), true, false, &before);
    REQUIRE(p && before);
    /* the source nodes, by the constants of their functions */
    Node *p1 = find(before, OP_MAP, 3), *p2 = find(before, OP_MAP, 5), *p4 = find(before, OP_MAP, 7);
    Node *p6 = find(before, OP_MAP, 13), *p7 = find(before, OP_MAP, 17);
    Node *p3 = find(before, OP_BACKPERMUTE, -1), *p5 = find(before, OP_ZIPWITH, -1);
    Node *c1 = find(before, OP_SCANL1, -1), *c2 = find(before, OP_SCANL, -1);
    REQUIRE(p1 && p2 && p3 && p4 && p5 && p6 && p7 && c1 && c2);
    /* fusion numbers each source node with the kernel it went into */
    CHECK(p1->num > 0 && c1->num > 0 && c2->num > 0 && p6->num > 0 && p7->num > 0);
    CHECK(p2->num == c2->num && p3->num == c2->num && p4->num == c2->num && p5->num == c2->num);
    CHECK(p1->num != c1->num && p1->num != c2->num && c1->num != c2->num);
    CHECK(p6->num != c2->num && p7->num != c2->num && p6->num != p7->num);
    CHECK(p6->num != p1->num && p7->num != p1->num && p6->num != c1->num && p7->num != c1->num);

    /* the fused program: five kernels */
    Node *all[64];
    int n = collect(p->root, OP_NOPS, all, 64, 0), kernels = 0;
    for (int i = 0; i < n; i++) kernels += kernel_op(all[i]->op);
    CHECK_EQ_I(kernels, 5);
    int64_t k, inter;
    schedule_stats(p, &k, &inter);
    CHECK_EQ_I(k, 5);
    CHECK_EQ_I(inter, 3);
    Node *fc1 = find(p->root, OP_SCANL1, -1), *fc2 = find(p->root, OP_SCANL, -1);
    Node *fp1 = find(p->root, OP_MAP, 3), *fp6 = find(p->root, OP_MAP, 13), *fp7 = find(p->root, OP_MAP, 17);
    REQUIRE(fc1 && fc2 && fp1 && fp6 && fp7);
    /* p1 manifest, over the input; c1 reads it as a manifest array */
    CHECK(fp1->kid[1]->op == OP_AVAR);
    CHECK(fc1->kid[1]->op == OP_AVAR);
    Node *b = bound_to(p->root, fc1->kid[1]->id);
    CHECK(b == fp1);
    /* c2's input is delayed (p2..p5 embedded), and reads p1 and c1 */
    Node *d = fc2->kid[2];
    CHECK(d->op == OP_DELAYED);
    CHECK(find(p->root, OP_ZIPWITH, -1) == NULL && find(p->root, OP_BACKPERMUTE, -1) == NULL);
    /* p6 and p7 read c2's manifest result */
    CHECK(fp6->kid[1]->op == OP_AVAR && fp7->kid[1]->op == OP_AVAR && fp6->kid[1]->id == fp7->kid[1]->id);
    CHECK(bound_to(p->root, fp6->kid[1]->id) == fc2);
    program_free(p);

    /* and it runs */
    ax_array *res[2];
    int nres = ax_run_n(cx, fp->build(cx, st), res, 2);
    CHECK_EQ_I(nres, 2);
    char msg[256];
    if (nres == 2) {
        CHECKF(fp->check(st, res, 2, msg, sizeof msg) == 0, "%s", msg);
        ax_array_release(res[0]);
        ax_array_release(res[1]);
    }
    fp->teardown(st);
    ax_ctx_free(cx);
}

/* One run of a program in a context of its own (kept until run_free:
 * the context owns the results). */
typedef struct Run {
    ax_ctx *cx;
    RandProg *rp;
    void *st;
    const ex_program *prog;
    ax_array *out[MAXOUT];
    int n;
    ax_status st_err;
    char err[512];
} Run;

static void run_free(Run *r)
{
    for (int i = 0; i < r->n; i++) ax_array_release(r->out[i]);
    if (r->rp) randprog_free(r->rp);
    if (r->prog && r->st) r->prog->teardown(r->st);
    ax_ctx_free(r->cx);
    memset(r, 0, sizeof *r);
}

static void run_acc(Run *r, ax_acc a)
{
    r->n = ax_run_n(r->cx, a, r->out, MAXOUT);
    if (r->n < 0) {
        r->st_err = ax_status_of(r->cx);
        snprintf(r->err, sizeof r->err, "%s", ax_error(r->cx));
    }
}

/* A built-in program at size n; returns its check's verdict (0: agrees). */
static int run_builtin(Run *r, const ex_program *p, int64_t n, ax_backend_kind be, unsigned debug)
{
    memset(r, 0, sizeof *r);
    r->cx = ctx(be, debug);
    r->prog = p;
    r->st = p->setup(r->cx, n);
    run_acc(r, p->build(r->cx, r->st));
    char msg[512];
    if (r->n < 0) {
        fprintf(stderr, "%s (size %lld): %s\n", p->name, (long long)n, r->err);
        return -1;
    }
    if (p->check(r->st, r->out, r->n, msg, sizeof msg) != 0) {
        fprintf(stderr, "%s (size %lld): %s\n", p->name, (long long)n, msg);
        return -1;
    }
    return 0;
}

TEST(builtin_programs_same_results_with_and_without_fusion)
{
    bool cpu = cpu_available();
    static const int64_t sizes[] = {0, 1, 257};
    for (int i = 0; i < ex_nprograms; i++) {
        const ex_program *p = ex_programs[i];
        for (int s = 0; s < 3; s++) {
            for (int b = 0; b < (cpu ? 2 : 1); b++) {
                ax_backend_kind be = b ? AX_BACKEND_CPU : AX_BACKEND_INTERP;
                Run on, off;
                CHECKF(run_builtin(&on, p, sizes[s], be, 0) == 0, "%s, %s", p->name, b ? "cpu" : "interp");
                CHECKF(run_builtin(&off, p, sizes[s], be, AX_DEBUG_NO_FUSION) == 0, "%s, %s, no fusion", p->name,
                       b ? "cpu" : "interp");
                char msg[1024];
                if (on.n >= 0 && off.n >= 0)
                    CHECKF(randprog_compare(on.out, on.n, off.out, off.n, 1e-5, 1e-6, msg, sizeof msg), "%s: %s",
                           p->name, msg);
                run_free(&on);
                run_free(&off);
            }
        }
    }
}

/* ------------------------------------------------------------ hand-written chains */

/* The inputs of the chains, made afresh in each context. */
typedef struct In {
    ax_array *v1, *v2, *iv, *m, *im, *segs, *segs1;
} In;

static void in_make(ax_ctx *cx, In *in)
{
    float v1[37], v2[41], m[42];
    int32_t iv[50], im[45];
    for (int i = 0; i < 37; i++) v1[i] = (float)((i * 7) % 13) - 6.0f + 0.25f * (float)(i % 4);
    for (int i = 0; i < 41; i++) v2[i] = (float)((i * 5) % 11) - 4.5f;
    for (int i = 0; i < 42; i++) m[i] = (float)((i * 3) % 17) - 8.0f;
    for (int i = 0; i < 50; i++) iv[i] = (i * 37) % 23 - 11;
    for (int i = 0; i < 45; i++) im[i] = (i * 11) % 19 - 9;
    int32_t segs[4] = {2, 0, 3, 4}, segs1[3] = {2, 3, 4};
    in->v1 = ax_array_from(cx, AX_F32, 1, (int64_t[]){37}, v1);
    in->v2 = ax_array_from(cx, AX_F32, 1, (int64_t[]){41}, v2);
    in->m = ax_array_from(cx, AX_F32, 2, (int64_t[]){6, 7}, m);
    in->iv = ax_array_from(cx, AX_I32, 1, (int64_t[]){50}, iv);
    in->im = ax_array_from(cx, AX_I32, 2, (int64_t[]){5, 9}, im);
    in->segs = ax_array_from(cx, AX_I32, 1, (int64_t[]){4}, segs);
    in->segs1 = ax_array_from(cx, AX_I32, 1, (int64_t[]){3}, segs1);
}

static void in_free(In *in)
{
    ax_array_release(in->v1);
    ax_array_release(in->v2);
    ax_array_release(in->m);
    ax_array_release(in->iv);
    ax_array_release(in->im);
    ax_array_release(in->segs);
    ax_array_release(in->segs1);
}

static ax_exp fadd1(ax_exp x, void *e) { (void)e; return ax_add(x, ax_f32(1)); }
static ax_exp fmul2(ax_exp x, void *e) { (void)e; return ax_mul(x, ax_f32(2)); }
static ax_exp fsq(ax_exp x, void *e) { (void)e; return ax_mul(x, x); }
static ax_exp fpos(ax_exp x, void *e) { (void)e; return ax_gt(x, ax_f32(0)); }
static ax_exp iadd3(ax_exp x, void *e) { (void)e; return ax_add(x, ax_i32(3)); }
static ax_exp imul5(ax_exp x, void *e) { (void)e; return ax_mul(x, ax_i32(5)); }
static ax_exp ione(ax_exp x, void *e) { (void)e; (void)x; return ax_i32(1); }
static ax_exp fma3(ax_exp x, ax_exp y, ax_exp z, void *e) { (void)e; return ax_add(ax_mul(x, y), z); }
static ax_exp rev1(ax_exp i, void *env)
{
    ax_acc a = env;
    return ax_ix1(ax_sub(ax_sub(ax_size(a), ax_index_get(i, 0)), ax_i64(1)));
}
static ax_exp transpose(ax_exp ix, void *e) { (void)e; return ax_ix2(ax_index_get(ix, 1), ax_index_get(ix, 0)); }
static ax_exp twice(ax_exp i, void *e) { (void)e; return ax_ix1(ax_mul(ax_index_get(i, 0), ax_i64(2))); }
static ax_exp gen1(ax_exp ix, void *e) { (void)e; return ax_cvt(ax_mul(ax_index_get(ix, 0), ax_i64(3)), AX_F32); }
static ax_exp gen2(ax_exp ix, void *e)
{
    (void)e;
    return ax_cvt(ax_sub(ax_mul(ax_index_get(ix, 0), ax_i64(10)), ax_index_get(ix, 1)), AX_F32);
}
static ax_exp zero_i32(ax_exp ix, void *e) { (void)e; (void)ix; return ax_i32(0); }
static ax_exp hist_ix(ax_exp i, void *env)
{
    ax_acc a = env;
    return ax_ix1(ax_mod(ax_at(a, i), ax_i32(10)));
}
static ax_exp read_twice(ax_exp i, void *env)
{
    ax_acc a = env;
    return ax_add(ax_at(a, ax_ix1(ax_mul(ax_index_get(i, 0), ax_i64(2)))), ax_at(a, i));
}
static ax_exp sum9(const ax_exp *xs, void *e)
{
    (void)e;
    ax_exp s = xs[0];
    for (int i = 1; i < 9; i++) s = ax_add(s, xs[i]);
    return s;
}
static ax_acc below100(ax_acc x, void *e) { (void)e; return ax_unit(x->cx, ax_lt(ax_at(x, ax_ix1(ax_i64(0))), ax_f32(100))); }
static ax_acc double_it(ax_acc x, void *e) { (void)e; return ax_map(fmul2, NULL, x); }
static ax_acc add_outer(ax_acc x, void *e) { return ax_zip_with(ax_fn_add, NULL, x, (ax_acc)e); }
static ax_exp rev_ix(ax_exp ix, void *e)
{
    return ax_ix1(ax_sub(ax_sub(ax_size((ax_acc)e), ax_i64(1)), ax_index_get(ix, 0)));
}
/* let m = map (+1) x in reverse m: m is bound (its shape is read too) and
 * its data is used once, in the same loop body */
static ax_acc reverse_succ(ax_acc x, void *e)
{
    (void)e;
    ax_acc m = ax_map(fadd1, NULL, x);
    return ax_backpermute(ax_shape(m), rev_ix, m, m);
}

typedef ax_acc (*ChainFn)(ax_ctx *cx, const In *in);

#define U(x) ax_use(cx, in->x)
static ax_acc ch_map3_fold(ax_ctx *cx, const In *in)
{
    return ax_fold(ax_fn_add, NULL, ax_f32(0), ax_map(fsq, NULL, ax_map(fmul2, NULL, ax_map(fadd1, NULL, U(v1)))));
}
static ax_acc ch_zip_lengths_scanl(ax_ctx *cx, const In *in)
{
    return ax_scanl(ax_fn_add, NULL, ax_f32(0), ax_zip_with(ax_fn_mul, NULL, ax_map(fadd1, NULL, U(v1)), U(v2)));
}
static ax_acc ch_transpose_fold(ax_ctx *cx, const In *in)
{
    ax_acc m = ax_map(fmul2, NULL, U(m));
    return ax_fold(ax_fn_max, NULL, ax_f32(-1000), ax_backpermute(ax_ix2(ax_index_get(ax_shape(m), 1),
                                                                           ax_index_get(ax_shape(m), 0)),
                                                                   transpose, NULL, m));
}
static ax_acc ch_replicate_fold(ax_ctx *cx, const In *in)
{
    ax_slice s[2] = {ax_fixed(ax_i64(4)), ax_all()};
    return ax_fold(ax_fn_add, NULL, ax_f32(0), ax_replicate(2, s, ax_map(fadd1, NULL, U(v1))));
}
static ax_acc ch_slice_generate(ax_ctx *cx, const In *in)
{
    (void)in;
    ax_slice s[2] = {ax_fixed(ax_i64(2)), ax_all()};
    return ax_fold1(ax_fn_max, NULL, ax_slice_(2, s, ax_generate(cx, ax_ix2(ax_i64(6), ax_i64(7)), gen2, NULL)));
}
static ax_acc ch_flatten_fold1(ax_ctx *cx, const In *in)
{
    return ax_fold1(ax_fn_add, NULL, ax_flatten(ax_map(fmul2, NULL, U(m))));
}
static ax_acc ch_unflatten(ax_ctx *cx, const In *in)
{
    ax_acc m = U(m);
    return ax_reshape(ax_shape(m), ax_flatten(ax_map(fadd1, NULL, m)));
}
static ax_acc ch_reshape_unproven(ax_ctx *cx, const In *in)
{
    return ax_fold(ax_fn_add, NULL, ax_f32(0), ax_reshape(ax_ix2(ax_i64(7), ax_i64(6)), ax_map(fadd1, NULL, U(m))));
}
static ax_acc ch_permute_hist(ax_ctx *cx, const In *in)
{
    ax_acc iv = U(iv);
    return ax_permute(ax_fn_add, NULL, ax_generate(cx, ax_ix1(ax_i64(10)), zero_i32, NULL), hist_ix, iv,
                      ax_map(ione, NULL, iv));
}
static ax_acc ch_filter_zip(ax_ctx *cx, const In *in)
{
    return ax_filter(fpos, NULL, ax_zip_with(ax_fn_sub, NULL, U(v1), U(v2)));
}
static ax_acc ch_foldseg_delayed(ax_ctx *cx, const In *in)
{
    ax_acc s = U(segs);
    return ax_fold_seg(ax_fn_add, NULL, ax_i32(0), ax_map(imul5, NULL, U(im)), ax_backpermute(ax_shape(s), rev1, s, s));
}
static ax_acc ch_fold1seg_same_source(ax_ctx *cx, const In *in)
{
    ax_acc im = U(im);
    return ax_fold1_seg(ax_fn_max, NULL, ax_zip_with(ax_fn_add, NULL, im, ax_map(iadd3, NULL, im)), U(segs1));
}
static ax_acc ch_stencil_map(ax_ctx *cx, const In *in)
{
    int size[2] = {3, 3};
    return ax_stencil(sum9, NULL, size, ax_clamp(), ax_map(fadd1, NULL, U(m)));
}
static ax_acc ch_scans(ax_ctx *cx, const In *in)
{
    ax_acc p = ax_map(fmul2, NULL, U(v1));
    ax_acc a[6] = {ax_scanl1(ax_fn_add, NULL, p), ax_scanr(ax_fn_max, NULL, ax_f32(-5), p),
                   ax_scanr1(ax_fn_add, NULL, p), ax_scanl_ex(ax_fn_add, NULL, ax_f32(1), p),
                   ax_scanr_ex(ax_fn_min, NULL, ax_f32(3), p), ax_scanl(ax_fn_add, NULL, ax_f32(0), p)};
    return ax_atuple(6, a);
}
static ax_acc ch_shared_two_folds(ax_ctx *cx, const In *in)
{
    ax_acc p = ax_map(fsq, NULL, U(v1));
    return ax_atuple2(ax_fold(ax_fn_add, NULL, ax_f32(0), p), ax_fold(ax_fn_max, NULL, ax_f32(-1), p));
}
static ax_acc ch_at_in_lambda(ax_ctx *cx, const In *in)
{
    ax_acc p = ax_map(fadd1, NULL, U(v1));
    return ax_generate(cx, ax_ix1(ax_i64(9)), read_twice, p);
}
static ax_acc ch_acond(ax_ctx *cx, const In *in)
{
    ax_acc v = U(v1);
    return ax_acond(ax_gt(ax_size(v), ax_i64(10)), ax_map(fadd1, NULL, v), ax_backpermute(ax_shape(v), rev1, v, v));
}
static ax_acc ch_awhile(ax_ctx *cx, const In *in)
{
    return ax_awhile(below100, double_it, NULL, ax_map(fadd1, NULL, ax_map(fsq, NULL, U(v1))));
}
static ax_acc ch_producer_in_loop(ax_ctx *cx, const In *in)
{
    /* used once, so sharing recovery leaves p in the loop body, where it
     * fuses into the zipWith; p[0] = 37 > 0: the loop ends */
    ax_acc p = ax_map(fadd1, NULL, ax_map(fsq, NULL, U(v1)));
    return ax_awhile(below100, add_outer, p, U(v1));
}
static ax_acc ch_let_in_loop_body(ax_ctx *cx, const In *in)
{
    /* a let bound inside the loop body and used once there is used once
     * per iteration: it fuses (the body is one kernel) */
    return ax_awhile(below100, reverse_succ, NULL, U(v1));
}
static ax_acc ch_unit_of_fold(ax_ctx *cx, const In *in)
{
    ax_acc f = ax_fold_all(ax_fn_add, NULL, ax_f32(0), ax_map(fsq, NULL, U(m)));
    return ax_unit(cx, ax_mul(ax_at(f, ax_index(0, NULL)), ax_f32(0.5f)));
}
static ax_acc ch_zip_same_source(ax_ctx *cx, const In *in)
{
    ax_acc v = U(v1);
    return ax_zip_with(ax_fn_mul, NULL, ax_map(fadd1, NULL, v), ax_map(fmul2, NULL, v));
}
static ax_acc ch_transform(ax_ctx *cx, const In *in)
{
    ax_acc v = U(v1);
    return ax_map(fsq, NULL, ax_backpermute(ax_shape(v), rev1, v, v));
}
static ax_acc ch_generate_backpermute(ax_ctx *cx, const In *in)
{
    (void)in;
    return ax_backpermute(ax_ix1(ax_i64(10)), twice, NULL, ax_generate(cx, ax_ix1(ax_i64(20)), gen1, NULL));
}
static ax_acc ch_replicate_result(ax_ctx *cx, const In *in)
{
    ax_slice s[2] = {ax_fixed(ax_i64(3)), ax_all()};
    return ax_replicate(2, s, U(v1));
}
static ax_acc ch_zipwith3(ax_ctx *cx, const In *in)
{
    ax_acc v = U(v1);
    return ax_fold(ax_fn_add, NULL, ax_f32(0),
                   ax_zip_with3(fma3, NULL, v, ax_map(fadd1, NULL, U(v2)), ax_backpermute(ax_shape(v), rev1, v, v)));
}
static ax_acc ch_tuple_results(ax_ctx *cx, const In *in)
{
    return ax_atuple2(ax_map(fadd1, NULL, U(v1)), ax_fold(ax_fn_add, NULL, ax_f32(0), U(v2)));
}
static ax_acc ch_reverse_generate(ax_ctx *cx, const In *in)
{
    (void)in;
    ax_acc g = ax_generate(cx, ax_ix1(ax_i64(33)), gen1, NULL);
    return ax_map(fadd1, NULL, ax_backpermute(ax_shape(g), rev1, g, g));
}
static ax_acc ch_mixed_ranks(ax_ctx *cx, const In *in)
{
    ax_slice sl[2] = {ax_all(), ax_fixed(ax_i64(3))}, rp[2] = {ax_all(), ax_fixed(ax_i64(7))};
    ax_acc col = ax_map(fadd1, NULL, ax_slice_(2, sl, U(m)));
    return ax_fold(ax_fn_add, NULL, ax_f32(0), ax_zip_with(ax_fn_add, NULL, ax_replicate(2, rp, col), U(m)));
}
static ax_acc ch_zip_rank2_intersection(ax_ctx *cx, const In *in)
{
    return ax_fold(ax_fn_add, NULL, ax_f32(0),
                   ax_zip_with(ax_fn_mul, NULL, U(m), ax_generate(cx, ax_ix2(ax_i64(5), ax_i64(9)), gen2, NULL)));
}
static ax_acc ch_dotp_of_producers(ax_ctx *cx, const In *in)
{
    return ex_dotp(ax_map(fadd1, NULL, U(v1)), ax_backpermute(ax_ix1(ax_i64(20)), twice, NULL, U(v2)));
}
#undef U

static const struct Chain {
    const char *name;
    ChainFn fn;
    int kernels, intermediates;    /* fused; -1: not checked */
    Op result;                     /* the op computing the result (OP_NOPS: not checked) */
} chains[] = {
    {"map3_fold", ch_map3_fold, 1, 0, OP_FOLD},
    {"zip_lengths_scanl", ch_zip_lengths_scanl, 1, 0, OP_SCANL},
    {"transpose_fold", ch_transpose_fold, 1, 0, OP_FOLD},
    {"replicate_fold", ch_replicate_fold, 1, 0, OP_FOLD},
    {"slice_generate", ch_slice_generate, 1, 0, OP_FOLD1},
    {"flatten_fold1", ch_flatten_fold1, 1, 0, OP_FOLD1},
    {"unflatten", ch_unflatten, 1, 0, OP_TRANSFORM},
    /* fused, its size check in the extent and the index transform */
    {"reshape_unproven", ch_reshape_unproven, 1, 0, OP_FOLD},
    {"permute_hist", ch_permute_hist, 2, 1, OP_PERMUTE},
    {"filter_zip", ch_filter_zip, 1, 0, OP_FILTER},
    {"foldseg_delayed", ch_foldseg_delayed, 1, 0, OP_FOLDSEG},
    {"fold1seg_same_source", ch_fold1seg_same_source, 1, 0, OP_FOLD1SEG},
    {"stencil_map", ch_stencil_map, 2, 1, OP_STENCIL},
    {"scans", ch_scans, 7, 1, OP_NOPS},
    {"shared_two_folds", ch_shared_two_folds, 3, 1, OP_NOPS},
    {"at_in_lambda", ch_at_in_lambda, 2, 1, OP_GENERATE},
    {"acond", ch_acond, 2, 0, OP_ACOND},
    {"awhile", ch_awhile, 3, 0, OP_AWHILE},
    {"producer_in_loop", ch_producer_in_loop, 2, 0, OP_AWHILE},
    {"let_in_loop_body", ch_let_in_loop_body, 2, 0, OP_AWHILE},
    {"unit_of_fold", ch_unit_of_fold, 2, 1, OP_UNIT},
    {"zip_same_source", ch_zip_same_source, 1, 0, OP_MAP},
    {"transform", ch_transform, 1, 0, OP_TRANSFORM},
    {"generate_backpermute", ch_generate_backpermute, 1, 0, OP_GENERATE},
    {"replicate_result", ch_replicate_result, 1, 0, OP_REPLICATE},
    {"zipwith3", ch_zipwith3, 1, 0, OP_FOLD},
    {"tuple_results", ch_tuple_results, 2, 0, OP_NOPS},
    {"reverse_generate", ch_reverse_generate, 1, 0, OP_GENERATE},
    {"mixed_ranks", ch_mixed_ranks, 1, 0, OP_FOLD},
    {"zip_rank2_intersection", ch_zip_rank2_intersection, 1, 0, OP_FOLD},
    {"dotp_of_producers", ch_dotp_of_producers, 1, 0, OP_FOLD},
};
#define NCHAINS ((int)(sizeof chains / sizeof *chains))

static void run_chain(Run *r, In *in, const struct Chain *c, ax_backend_kind be, unsigned debug)
{
    memset(r, 0, sizeof *r);
    r->cx = ctx(be, debug);
    in_make(r->cx, in);
    run_acc(r, c->fn(r->cx, in));
}

/* The node computing a program's result: through lets. */
static Node *result_node(Node *x)
{
    while (x && x->op == OP_ALET) x = x->kid[1];
    return x;
}

TEST(chains_fuse_as_expected)
{
    for (int c = 0; c < NCHAINS; c++) {
        /* Accelerate's fusion alone: the planner's merges (shared_two_folds'
         * siblings) are counted in tests/test_plan.c, and what moves out
         * of loops before fusion (producer_in_loop's producer) in
         * tests/test_licm.c */
        ax_ctx *cx = ctx(AX_BACKEND_INTERP, AX_DEBUG_NO_PLANNER | AX_DEBUG_NO_LICM);
        In in;
        in_make(cx, &in);
        int64_t k = -1, i = -1;
        CHECKF(dump_counts(cx, chains[c].fn(cx, &in), &k, &i), "%s", chains[c].name);
        if (chains[c].kernels >= 0)
            CHECKF(k == chains[c].kernels && i == chains[c].intermediates,
                   "%s: %lld kernels, %lld intermediates; expected %d and %d", chains[c].name, (long long)k,
                   (long long)i, chains[c].kernels, chains[c].intermediates);
        Program *p = pipeline(cx, chains[c].fn(cx, &in), true, false, NULL);
        if (p && chains[c].result != OP_NOPS) {
            Node *r = result_node(p->root);
            CHECKF(r && r->op == chains[c].result, "%s: the result is computed by %s, not %s", chains[c].name,
                   r ? op_name(r->op) : "nothing", op_name(chains[c].result));
        }
        program_free(p);
        in_free(&in);
        ax_ctx_free(cx);
    }
}

TEST(chains_same_results_with_and_without_fusion)
{
    bool cpu = cpu_available();
    for (int c = 0; c < NCHAINS; c++) {
        In ia, ib;
        Run on, off;
        char msg[1024];
        /* Without the simplifier the interpreter must agree bit for bit. */
        run_chain(&on, &ia, &chains[c], AX_BACKEND_INTERP, AX_DEBUG_NO_SIMPLIFY);
        run_chain(&off, &ib, &chains[c], AX_BACKEND_INTERP, AX_DEBUG_NO_SIMPLIFY | AX_DEBUG_NO_FUSION);
        CHECKF(on.n > 0 && off.n > 0, "%s: %s %s", chains[c].name, on.err, off.err);
        if (on.n > 0 && off.n > 0)
            CHECKF(randprog_compare(on.out, on.n, off.out, off.n, 0, 0, msg, sizeof msg), "%s: %s", chains[c].name, msg);
        in_free(&ib);
        run_free(&off);
        /* With every pass, and on the CPU backend, fused and not. */
        for (int b = 0; b < (cpu ? 3 : 1); b++) {
            ax_backend_kind be = b ? AX_BACKEND_CPU : AX_BACKEND_INTERP;
            unsigned dbg = b == 2 ? AX_DEBUG_NO_FUSION : 0;
            run_chain(&off, &ib, &chains[c], be, dbg);
            CHECKF(off.n > 0, "%s (%s%s): %s", chains[c].name, b ? "cpu" : "interp", dbg ? ", no fusion" : "", off.err);
            if (on.n > 0 && off.n > 0)
                CHECKF(randprog_compare(on.out, on.n, off.out, off.n, 1e-5, 1e-5, msg, sizeof msg), "%s (%s%s): %s",
                       chains[c].name, b ? "cpu" : "interp", dbg ? ", no fusion" : "", msg);
            in_free(&ib);
            run_free(&off);
        }
        in_free(&ia);
        run_free(&on);
    }
}

/* ------------------------------------------------------------ details */

/* Runs a Program on the interpreter and copies result k's f32 data. */
static int interp_f32(ax_ctx *cx, Program *p, float *dst, int64_t n)
{
    ax_array *out[MAXOUT];
    int nres = interp_run(cx, p, out, MAXOUT);
    if (nres < 1) return -1;
    int ok = ax_array_size(out[0]) == n ? 0 : -1;
    if (ok == 0) memcpy(dst, ax_array_data(out[0], 0), sizeof *dst * (size_t)n);
    for (int i = 0; i < nres; i++) ax_array_release(out[i]);
    return ok;
}

/* A tiny IR builder, for what the API cannot make: a let-bound producer
 * used once, inside a loop. */
typedef struct B {
    Program *p;
    ax_ctx *cx;
} B;

static Node *bn(B *b, Op op, int n, const Type *t)
{
    Node *x = node_new(&b->p->arena, op, n, t);
    if (x) x->cx = b->cx;
    return x;
}

static Node *bvar(B *b, int id)
{
    const Type *t = b->p->vartype[id];
    Node *x = bn(b, t->kind == TY_ARRAY || t->kind == TY_ARRAYS ? OP_AVAR : OP_VAR, 0, t);
    x->id = id;
    return x;
}

static Node *blam(B *b, int id, Node *body)
{
    Node *l = bn(b, OP_LAM, 1, body->type);
    l->nparam = 1;
    l->param = arena_alloc(&b->p->arena, sizeof *l->param);
    l->param[0] = bvar(b, id);
    l->kid[0] = body;
    return l;
}

/* alet p = map (+1) (use v) in awhile (\x -> unit (x!0 < 100)) (\x -> zipWith (+) x p) (use v):
 * p's data is read once in the text, but once per iteration: it must stay
 * manifest, computed once outside the loop. */
TEST(let_used_once_inside_a_loop_stays_manifest)
{
    ax_ctx *cx = ctx(AX_BACKEND_INTERP, 0);
    float data[5] = {1, 2, 3, 4, 5}, want[5], got[5];
    ax_array *v = ax_array_from(cx, AX_F32, 1, (int64_t[]){5}, data);
    B b = {calloc(1, sizeof *b.p), cx};
    REQUIRE(b.p);
    arena_init(&b.p->arena);
    const Type *f32 = ty_scalar(AX_F32), *vt = ty_array(&b.p->arena, f32, 1), *i0 = ty_index(&b.p->arena, 0);
    const Type *bt = ty_array(&b.p->arena, ty_bool(), 0);
    int pv = program_fresh_var(b.p, vt), xm = program_fresh_var(b.p, f32), xc = program_fresh_var(b.p, vt),
        xb = program_fresh_var(b.p, vt), z1 = program_fresh_var(b.p, f32), z2 = program_fresh_var(b.p, f32);
    (void)i0;
    Node *u1 = bn(&b, OP_USE, 0, vt), *u2 = bn(&b, OP_USE, 0, vt);
    u1->arr = u2->arr = v;
    Node *one = bn(&b, OP_CONST, 0, f32), *hundred = bn(&b, OP_CONST, 0, f32);
    one->c.f32 = 1;
    hundred->c.f32 = 100;
    Node *add = bn(&b, OP_PRIM, 2, f32);
    add->a = P_ADD;
    add->kid[0] = bvar(&b, xm);
    add->kid[1] = one;
    Node *map = bn(&b, OP_MAP, 2, vt);
    map->kid[0] = blam(&b, xm, add);
    map->kid[1] = u1;
    /* cond: unit (x ! [0] < 100) */
    Node *ix = bn(&b, OP_IXCONS, 1, ty_index(&b.p->arena, 1)), *zero = bn(&b, OP_CONST, 0, ty_i64());
    ix->kid[0] = zero;
    Node *at = bn(&b, OP_INDEX, 2, f32);
    at->kid[0] = bvar(&b, xc);
    at->kid[1] = ix;
    Node *lt = bn(&b, OP_PRIM, 2, ty_bool());
    lt->a = P_LT;
    lt->kid[0] = at;
    lt->kid[1] = hundred;
    Node *unit = bn(&b, OP_UNIT, 1, bt);
    unit->kid[0] = lt;
    /* body: zipWith (+) x p */
    Node *plus = bn(&b, OP_PRIM, 2, f32);
    plus->a = P_ADD;
    plus->kid[0] = bvar(&b, z1);
    plus->kid[1] = bvar(&b, z2);
    Node *fl = bn(&b, OP_LAM, 1, f32);
    fl->nparam = 2;
    fl->param = arena_alloc(&b.p->arena, 2 * sizeof *fl->param);
    fl->param[0] = bvar(&b, z1);
    fl->param[1] = bvar(&b, z2);
    fl->kid[0] = plus;
    Node *zip = bn(&b, OP_ZIPWITH, 3, vt);
    zip->kid[0] = fl;
    zip->kid[1] = bvar(&b, xb);
    zip->kid[2] = bvar(&b, pv);
    Node *loop = bn(&b, OP_AWHILE, 3, vt);
    loop->kid[0] = blam(&b, xc, unit);
    loop->kid[1] = blam(&b, xb, zip);
    loop->kid[2] = u2;
    Node *root = bn(&b, OP_ALET, 2, vt);
    root->id = pv;
    root->kid[0] = map;
    root->kid[1] = loop;
    b.p->root = root;
    char msg[512];
    CHECKF(ir_verify(b.p, msg, sizeof msg) == 0, "%s", msg);
    CHECK(interp_f32(cx, b.p, want, 5) == 0);
    CHECK(fuse_program(cx, b.p, 0) == 0);
    CHECKF(ir_verify(b.p, msg, sizeof msg) == 0, "%s", msg);
    /* still: alet p = map ... in awhile ... */
    Node *r = b.p->root;
    while (r && r->op == OP_ALET && r->kid[0]->op == OP_USE) r = r->kid[1];
    CHECKF(r && r->op == OP_ALET && r->kid[0]->op == OP_MAP && result_node(r)->op == OP_AWHILE,
           "the producer was moved into the loop");
    CHECK(interp_f32(cx, b.p, got, 5) == 0);
    CHECK(memcmp(want, got, sizeof want) == 0);
    int64_t k, i;
    schedule_stats(b.p, &k, &i);
    CHECK_EQ_I(k, 3);
    CHECK_EQ_I(i, 1);
    program_free(b.p);
    ax_array_release(v);
    ax_ctx_free(cx);
}

/* Fusing a fused program again (its DELAYED and TRANSFORM nodes are
 * producers too) keeps it well-formed and its meaning. */
TEST(fusing_twice_is_harmless)
{
    for (int c = 0; c < NCHAINS; c++) {
        ax_ctx *cx = ctx(AX_BACKEND_INTERP, 0);
        In in;
        in_make(cx, &in);
        Program *p = pipeline(cx, chains[c].fn(cx, &in), true, false, NULL);
        if (p) {
            ax_array *a[MAXOUT], *b[MAXOUT];
            int na = interp_run(cx, p, a, MAXOUT);
            char msg[1024];
            CHECKF(fuse_program(cx, p, 0) == 0, "%s: %s", chains[c].name, ax_error(cx));
            CHECKF(ir_verify(p, msg, sizeof msg) == 0, "%s: %s", chains[c].name, msg);
            int nb = interp_run(cx, p, b, MAXOUT);
            CHECKF(na > 0 && nb > 0 && randprog_compare(a, na, b, nb, 0, 0, msg, sizeof msg), "%s: %s",
                   chains[c].name, na > 0 && nb > 0 ? msg : ax_error(cx));
            for (int i = 0; i < na; i++) ax_array_release(a[i]);
            for (int i = 0; i < nb; i++) ax_array_release(b[i]);
            program_free(p);
        }
        in_free(&in);
        ax_ctx_free(cx);
    }
}

/* Does x contain a primitive pr / an op? */
static bool has_prim(const Node *x, Prim pr)
{
    if (!x) return false;
    if (x->op == OP_PRIM && x->a == (int)pr) return true;
    for (int i = 0; i < x->n; i++)
        if (has_prim(x->kid[i], pr)) return true;
    return false;
}

static bool has_op(const Node *x, Op op)
{
    if (!x) return false;
    if (x->op == op) return true;
    for (int i = 0; i < x->n; i++)
        if (has_op(x->kid[i], op)) return true;
    return false;
}

/* Phase 2 (thesis 4.4): the linear-index form reads the source linearly
 * when the index map keeps the order; otherwise it is the index form at
 * fromLinear(extent, i) (in rank 1, simply at index i). */
enum { LINREAD, RANK1, FROMLIN };

TEST(delayed_inputs_have_linear_forms)
{
    static const struct {
        const char *chain;
        int form;
    } cases[] = {
        {"map3_fold", LINREAD},         /* map over a manifest vector */
        {"flatten_fold1", LINREAD},     /* reshape keeps the row-major order */
        {"zip_lengths_scanl", LINREAD}, /* zipWith of rank 1: positions agree */
        {"dotp_of_producers", RANK1},   /* one input is a backpermute */
        {"slice_generate", RANK1},
        {"transpose_fold", FROMLIN},    /* a permutation of the indices */
        {"zip_rank2_intersection", FROMLIN},
        {"replicate_fold", FROMLIN},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const struct Chain *c = NULL;
        for (int i = 0; i < NCHAINS; i++)
            if (!strcmp(chains[i].name, cases[k].chain)) c = &chains[i];
        REQUIRE(c);
        ax_ctx *cx = ctx(AX_BACKEND_INTERP, 0);
        In in;
        in_make(cx, &in);
        Program *p = pipeline(cx, c->fn(cx, &in), true, false, NULL);
        Node *d[4];
        int n = p ? collect(p->root, OP_DELAYED, d, 4, 0) : 0;
        CHECKF(n == 1, "%s: %d delayed inputs", c->name, n);
        if (n == 1) {
            const Node *lf = d[0]->kid[2];
            CHECKF(lf->op == OP_LAM && lf->nparam == 1, "%s", c->name);
            bool fromlin = has_prim(lf, P_FROMLIN), linread = has_op(lf, OP_LINDEX);
            switch (cases[k].form) {
            case LINREAD: CHECKF(!fromlin && linread, "%s: the linear form is not a linear read", c->name); break;
            case RANK1: CHECKF(!fromlin, "%s: fromLinear in rank 1", c->name); break;
            default: CHECKF(fromlin, "%s: the linear form does not go through fromLinear", c->name); break;
            }
        }
        program_free(p);
        in_free(&in);
        ax_ctx_free(cx);
    }
}

static ax_exp bad_ix(ax_exp i, void *e) { (void)e; return ax_ix1(ax_add(ax_index_get(i, 0), ax_i64(100))); }

/* Run-time errors inside fused code are still reported, with the same
 * status as without fusion. */
TEST(errors_in_fused_code)
{
    for (int fuse = 0; fuse < 2; fuse++) {
        ax_ctx *cx = ctx(AX_BACKEND_INTERP, fuse ? 0 : AX_DEBUG_NO_FUSION);
        In in;
        in_make(cx, &in);
        ax_acc v = ax_use(cx, in.v1);
        /* an out-of-bounds backpermute embedded in a fold */
        ax_array *r = ax_run(cx, ax_fold(ax_fn_add, NULL, ax_f32(0), ax_backpermute(ax_shape(v), bad_ix, NULL, v)));
        CHECK(r == NULL && ax_status_of(cx) == AX_ERR_INDEX);
        ax_array_release(r);
        /* a reshape that does not fit, behind a map, in a fold */
        r = ax_run(cx, ax_fold(ax_fn_add, NULL, ax_f32(0),
                               ax_reshape(ax_ix2(ax_i64(5), ax_i64(5)), ax_map(fadd1, NULL, ax_use(cx, in.m)))));
        CHECK(r == NULL && ax_status_of(cx) == AX_ERR_SHAPE && strstr(ax_error(cx), "ax_reshape"));
        ax_array_release(r);
        /* a slice index out of bounds, embedded in a fold */
        ax_slice s[2] = {ax_fixed(ax_i64(9)), ax_all()};
        r = ax_run(cx, ax_fold(ax_fn_add, NULL, ax_f32(0), ax_slice_(2, s, ax_map(fadd1, NULL, ax_use(cx, in.m)))));
        CHECK(r == NULL && ax_status_of(cx) == AX_ERR_INDEX);
        ax_array_release(r);
        /* and the context is still usable */
        r = RUN(cx, ex_dotp(ax_use(cx, in.v1), ax_use(cx, in.v2)));
        ax_array_release(r);
        in_free(&in);
        ax_ctx_free(cx);
    }
}

static ax_exp ix_same(ax_exp i, void *e) { (void)e; return i; }

/* A reshape fused as an index transform keeps its size check: the same
 * fault, word for word, as unfused, on every backend, behind a fold, a
 * backpermute (which reads it through its index function only) and a
 * map; with sizes that agree, the results agree. */
TEST(fused_reshape_keeps_its_check)
{
    ax_backend_kind bes[2] = {AX_BACKEND_INTERP, AX_BACKEND_CPU};
    for (int b = 0; b < (cpu_available() ? 2 : 1); b++) {
        for (int k = 0; k < 4; k++) {
            char msg[2][AX_ERRMSG];
            ax_status st[2];
            double got[2] = {0, 0};
            for (int fuse = 0; fuse < 2; fuse++) {
                ax_ctx *cx = ctx(bes[b], fuse ? 0 : AX_DEBUG_NO_FUSION);
                In in;
                in_make(cx, &in);
                ax_acc m = ax_map(fadd1, NULL, ax_use(cx, in.m));   /* 6 x 7 */
                int64_t r0 = k == 3 ? 3 : 5, r1 = k == 3 ? 14 : 5;  /* 25 elements (no), or 42 */
                ax_acc rs = ax_reshape(ax_ix2(ax_i64(r0), ax_i64(r1)), m);
                ax_acc t = k == 0 ? ax_fold(ax_fn_add, NULL, ax_f32(0), ax_fold(ax_fn_add, NULL, ax_f32(0), rs))
                           : k == 1 ? ax_fold(ax_fn_add, NULL, ax_f32(0),
                                              ax_flatten(ax_backpermute(ax_ix2(ax_i64(2), ax_i64(2)), ix_same, NULL, rs)))
                                    : ax_fold(ax_fn_add, NULL, ax_f32(0), ax_flatten(rs));
                ax_array *r = ax_run(cx, t);
                st[fuse] = ax_status_of(cx);
                snprintf(msg[fuse], sizeof msg[fuse], "%s", r ? "" : ax_error(cx));
                if (r) got[fuse] = *(float *)ax_array_data(r, 0);
                ax_array_release(r);
                in_free(&in);
                ax_ctx_free(cx);
            }
            if (k < 3) {
                CHECKF(st[0] == AX_ERR_SHAPE && st[1] == AX_ERR_SHAPE, "case %d: statuses %d and %d", k, st[0], st[1]);
                CHECKF(!strcmp(msg[0], msg[1]), "case %d: unfused \"%s\", fused \"%s\"", k, msg[0], msg[1]);
            } else {
                CHECKF(st[0] == AX_OK && st[1] == AX_OK && got[0] == got[1], "a reshape that fits: %g and %g", got[0],
                       got[1]);
            }
        }
    }
}

/* The switch: fusion off gives a kernel per operation (also from the
 * environment, AXLE_DEBUG=no-fusion). */
TEST(fusion_can_be_turned_off)
{
    const ex_program *dp = ex_find("dotp");
    REQUIRE(dp);
    int64_t got[3];
    for (int k = 0; k < 3; k++) {
        ax_ctx *cx;
        char *old = getenv("AXLE_DEBUG") ? strdup(getenv("AXLE_DEBUG")) : NULL;
        if (k == 2) {
            setenv("AXLE_DEBUG", "verify,no-fusion", 1);
            ax_options o = {0};
            o.backend = AX_BACKEND_INTERP;
            cx = ax_ctx_new(&o);
            if (old) setenv("AXLE_DEBUG", old, 1);
            else unsetenv("AXLE_DEBUG");
        } else {
            cx = ctx(AX_BACKEND_INTERP, k ? AX_DEBUG_NO_FUSION : 0);
        }
        free(old);
        void *st = dp->setup(cx, 100);
        ax_program *pr = ax_compile(cx, dp->build(cx, st));
        REQUIRE(pr);
        got[k] = ax_program_stats(pr)->kernels;
        ax_array *r = NULL;
        CHECK(ax_program_run(pr, &r, 1) == 1);
        char msg[256];
        CHECKF(r && dp->check(st, &r, 1, msg, sizeof msg) == 0, "%s", msg);
        ax_array_release(r);
        ax_program_free(pr);
        dp->teardown(st);
        ax_ctx_free(cx);
    }
    CHECK_EQ_I(got[0], 1);
    CHECK_EQ_I(got[1], 2);
    CHECK_EQ_I(got[2], 2);
}

/* The stages a dump shows. */
TEST(dump_stages)
{
    const ex_program *fp = ex_find("figure3");
    REQUIRE(fp);
    ax_ctx *cx = ctx(AX_BACKEND_INTERP, 0);
    void *st = fp->setup(cx, 8);
    ax_acc a = fp->build(cx, st);
    static const char *const stages[] = {"simplify", "fusion", "kernels"};
    for (int s = 0; s < 3; s++)
        for (int j = 0; j < 2; j++) {
            char *d = ax_dump(cx, a, stages[s], j);
            CHECKF(d != NULL, "%s: %s", stages[s], ax_error(cx));
            if (d && j) CHECK(strstr(d, "\"kernels\":") && strstr(d, "\"intermediates\":"));
            if (d && s > 0) CHECK(strstr(d, "delayed") != NULL);
            if (d && s == 0) CHECK(strstr(d, "delayed") == NULL);
            free(d);
        }
    /* Graphviz: the network before fusion with a cluster per kernel, and
     * the fused program, each kernel a cluster */
    char *g = ax_dump(cx, a, "dot", false);
    REQUIRE(g);
    CHECK(strncmp(g, "digraph", 7) == 0);
    int depth = 0, minus = 0;
    for (const char *c = g; *c; c++) {
        depth += *c == '{';
        depth -= *c == '}';
        minus |= depth < 0;
    }
    CHECK(depth == 0 && !minus);
    CHECK(strstr(g, "cluster_b") && strstr(g, "cluster_a"));
    int before = 0, after = 0;
    for (const char *c = g; (c = strstr(c, "subgraph cluster_b_k")); c++) before++;
    for (const char *c = g; (c = strstr(c, "subgraph cluster_a_k")); c++) after++;
    CHECK_EQ_I(before, 5);
    CHECK_EQ_I(after, 5);
    CHECK(strstr(g, "#9ecae1") && strstr(g, "#fdae6b"));    /* producers and consumers */
    CHECK(strstr(g, "scanl1") && strstr(g, "zipWith") && strstr(g, "delayed"));
    free(g);
    /* without fusion: one graph, every operation its own kernel */
    ax_ctx *cx2 = ctx(AX_BACKEND_INTERP, AX_DEBUG_NO_FUSION);
    void *st2 = fp->setup(cx2, 8);
    g = ax_dump(cx2, fp->build(cx2, st2), "dot", false);
    REQUIRE(g);
    after = 0;
    for (const char *c = g; (c = strstr(c, "subgraph cluster_b_k")); c++) after++;
    CHECK_EQ_I(after, 9);
    CHECK(strstr(g, "cluster_a") == NULL);
    free(g);
    fp->teardown(st2);
    ax_ctx_free(cx2);
    fp->teardown(st);
    ax_ctx_free(cx);
}

/* ------------------------------------------------------------ random programs */

static void run_random(Run *r, ax_backend_kind be, unsigned debug, uint64_t seed, const RandProgConfig *pc)
{
    memset(r, 0, sizeof *r);
    r->n = -1;
    r->cx = ctx(be, debug);
    ax_acc p = randprog_build(r->cx, seed, pc, &r->rp);
    if (!p) {
        snprintf(r->err, sizeof r->err, "the generator failed: %s", ax_error(r->cx));
        r->st_err = AX_ERR_ARG;
        return;
    }
    run_acc(r, p);
}

/* Seeds [seed0, seed0 + n): configuration b against configuration a.
 * Both failing alike (the same status: a program the generator made to
 * fault, or one that sharing recovery refuses) counts as agreement.
 * With `faults`, a is fused and b not: a fused program computes only the
 * elements that are read, so it may succeed where b faults on an element
 * nobody reads (and the two may meet different faults first); a fused
 * program failing where b succeeds is still a disagreement.  Returns the
 * number of disagreements. */
static int differential(const char *label, ax_backend_kind be_a, unsigned dbg_a, ax_backend_kind be_b,
                        unsigned dbg_b, double rtol, double atol, uint64_t seed0, int n, const RandProgConfig *pc)
{
    bool faults = pc->faults;
    int bad = 0, both = 0, reported = 0;
    for (int i = 0; i < n; i++) {
        uint64_t seed = seed0 + (uint64_t)i;
        Run a, b;
        run_random(&a, be_a, dbg_a, seed, pc);
        run_random(&b, be_b, dbg_b, seed, pc);
        char msg[2048] = "";
        bool agree;
        if (a.n < 0 || b.n < 0) {
            agree = a.n < 0 && b.n < 0 && (a.st_err == b.st_err || faults);
            both += agree;
            if (faults && a.n >= 0) agree = true;
            snprintf(msg, sizeof msg, "%s | %s", a.n < 0 ? a.err : "ok", b.n < 0 ? b.err : "ok");
        } else {
            agree = randprog_compare(a.out, a.n, b.out, b.n, rtol, atol, msg, sizeof msg);
        }
        if (!agree) {
            bad++;
            harness_failed_checks++;
            fprintf(stderr, "%s: seed %llu disagrees: %s\n", label, (unsigned long long)seed, msg);
            if (reported++ < 3 && a.rp) fputs(randprog_describe(a.rp), stderr);
        }
        run_free(&a);
        run_free(&b);
    }
    printf("%s: %d programs, %d disagree, %d fail alike\n", label, n, bad, both);
    return bad;
}

TEST(random_programs_fusion_on_off_interp)
{
    RandProgConfig pc;
    randprog_default_config(&pc);
    uint64_t s0 = (uint64_t)randprog_env_long("AXLE_FUSION_SEED0", 1);
    int n = (int)randprog_env_long("AXLE_FUSION_SEEDS", 300);
    /* Without the simplifier the fused program computes exactly what the
     * unfused one does, operation for operation. */
    differential("interp, no simplifier: fusion vs no fusion", AX_BACKEND_INTERP, AX_DEBUG_NO_SIMPLIFY,
                 AX_BACKEND_INTERP, AX_DEBUG_NO_SIMPLIFY | AX_DEBUG_NO_FUSION, 0, 0, s0, n, &pc);
    /* With it, constants may be reassociated across fused functions. */
    differential("interp: fusion vs no fusion", AX_BACKEND_INTERP, 0, AX_BACKEND_INTERP, AX_DEBUG_NO_FUSION, 1e-4,
                 1e-5, s0, n, &pc);
    /* Programs that fault: an error with fusion only where there is one
     * without. */
    pc.faults = true;
    differential("interp, faults: fusion vs no fusion", AX_BACKEND_INTERP, 0, AX_BACKEND_INTERP, AX_DEBUG_NO_FUSION,
                 1e-4, 1e-5, s0 + 1000000, n / 4, &pc);
}

/* The verifier after every pass of the front end, fusion included. */
TEST(random_programs_verify_after_every_pass)
{
    RandProgConfig pc;
    randprog_default_config(&pc);
    uint64_t s0 = (uint64_t)randprog_env_long("AXLE_FUSION_SEED0", 1);
    int n = (int)randprog_env_long("AXLE_FUSION_SEEDS", 300), refused = 0;
    for (int i = 0; i < n; i++) {
        ax_ctx *cx = ctx(AX_BACKEND_INTERP, 0);
        RandProg *rp = NULL;
        ax_acc a = randprog_build(cx, s0 + (uint64_t)i, &pc, &rp);
        Program *p = a ? sharing_recover(cx, a, true) : NULL;
        if (!p) {
            refused++;   /* not fusion's: counted, as the differential tests do */
        } else {
            program_free(p);
            int before = harness_failed_checks;
            p = pipeline(cx, a, true, true, NULL);
            if (harness_failed_checks != before)
                fprintf(stderr, "seed %llu\n%s", (unsigned long long)(s0 + (uint64_t)i), randprog_describe(rp));
            program_free(p);
        }
        randprog_free(rp);
        ax_ctx_free(cx);
    }
    printf("verified %d programs (%d refused before fusion)\n", n - refused, refused);
}

TEST(random_programs_fusion_on_off_cpu)
{
    if (!cpu_available()) return;
    RandProgConfig pc;
    randprog_default_config(&pc);
    pc.float_reassoc = true;
    uint64_t s0 = (uint64_t)randprog_env_long("AXLE_FUSION_SEED0", 1);
    int n = (int)randprog_env_long("AXLE_FUSION_CPU_SEEDS", 40);
    differential("cpu fused vs interp", AX_BACKEND_INTERP, AX_DEBUG_NO_FUSION, AX_BACKEND_CPU, 0, 1e-4, 1e-5, s0, n,
                 &pc);
    differential("cpu unfused vs interp", AX_BACKEND_INTERP, AX_DEBUG_NO_FUSION, AX_BACKEND_CPU, AX_DEBUG_NO_FUSION,
                 1e-4, 1e-5, s0, n, &pc);
}

/* ------------------------------------------------------------ the cost model */

/* A matrix product as the README writes it: fold (+) 0 (zipWith (*)
 * (replicate A) (replicate (transpose B))), with A (m x k) and B (k x n);
 * `left`: A is given as its transpose (k x m) and transposed back. */
static ax_acc matmul(ax_ctx *cx, ax_array *A, ax_array *B, int64_t m, int64_t n, bool left)
{
    ax_acc a = ax_use(cx, A), b = ax_use(cx, B);
    if (left) a = ax_transpose(a, NULL);
    b = ax_transpose(b, NULL);
    ax_slice ra[3] = {ax_all(), ax_fixed(ax_i64(n)), ax_all()};
    ax_slice rb[3] = {ax_fixed(ax_i64(m)), ax_all(), ax_all()};
    return ax_fold(ax_fn_add, NULL, ax_f64(0),
                   ax_zip_with(ax_fn_mul, NULL, ax_replicate(3, ra, a), ax_replicate(3, rb, b)));
}

TEST(cost_model_stores_a_transpose_that_a_fold_would_stride_through)
{
    enum { M = 7, K = 5, N = 6 };
    double A[M * K], At[K * M], B[K * N], want[M * N];
    for (int i = 0; i < M * K; i++) A[i] = (double)((i * 7) % 11) - 5;
    for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++) At[k * M + i] = A[i * K + k];
    for (int i = 0; i < K * N; i++) B[i] = (double)((i * 5) % 13) / 4;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int k = 0; k < K; k++) s += A[i * K + k] * B[k * N + j];
            want[i * N + j] = s;
        }
    int64_t sa[2] = {M, K}, sat[2] = {K, M}, sb[2] = {K, N};
    bool cpu = cpu_available();
    for (int left = 0; left < 2; left++)
        for (int off = 0; off < 2; off++)
            for (int be = 0; be < (cpu ? 2 : 1); be++) {
                ax_ctx *cx = ctx(be ? AX_BACKEND_CPU : AX_BACKEND_INTERP, off ? AX_DEBUG_NO_COST_MODEL : 0);
                REQUIRE(cx);
                ax_array *a = left ? ax_array_wrap(cx, AX_F64, 2, sat, At) : ax_array_wrap(cx, AX_F64, 2, sa, A);
                ax_array *b = ax_array_wrap(cx, AX_F64, 2, sb, B);
                REQUIRE(a && b);
                ax_acc p = matmul(cx, a, b, M, N, left);
                /* the decision, with its costs, in the plan dump */
                char *plan = ax_dump(cx, p, "plan", false);
                REQUIRE(plan);
                CHECKF(off ? !strstr(plan, "cost model") : strstr(plan, "stored a backpermute reading dimension 0 of 2 of its source") != NULL,
                       "left %d off %d:\n%s", left, off, plan);
                /* per element of the source, S = 8 doubles a cache line:
                 * B^T is read m = 7 times, A^T n = 6 times */
                if (!off) CHECKF(strstr(plan, "read 7 times: cost fused 56, stored 16"), "%s", plan);
                if (!off) CHECKF(!left == !strstr(plan, "read 6 times: cost fused 48, stored 15"), "%s", plan);
                free(plan);
                int64_t kern = 0, inter = 0;
                CHECK(dump_counts(cx, p, &kern, &inter));
                /* stored: each transpose's kernel, then the product's */
                CHECK_EQ_I(kern, off ? 1 : 2 + left);
                ax_array *r = RUN(cx, p);
                if (r) {
                    REQUIRE(ax_array_rank(r) == 2 && ax_array_shape(r)[0] == M && ax_array_shape(r)[1] == N);
                    const double *got = ax_array_data(r, 0);
                    for (int i = 0; i < M * N; i++) CHECK_CLOSE(got[i], want[i], 1e-12);
                    ax_array_release(r);
                }
                ax_ctx_free(cx);
            }
}

/* What the model leaves fused: a transpose read once (a fold of it walks
 * its source with a stride whether or not it is stored), one read in
 * order (the fold runs along the source's rows), and one replicated by a
 * single copy. */
TEST(cost_model_leaves_fused_what_storing_would_not_speed_up)
{
    ax_ctx *cx = ctx(AX_BACKEND_INTERP, 0);
    REQUIRE(cx);
    int64_t sh[2] = {4, 3};
    double x[12];
    for (int i = 0; i < 12; i++) x[i] = i;
    ax_acc b = ax_use(cx, ax_array_wrap(cx, AX_F64, 2, sh, x));
    ax_slice once[3] = {ax_fixed(ax_i64(1)), ax_all(), ax_all()};
    ax_slice along[3] = {ax_all(), ax_all(), ax_fixed(ax_i64(5))};
    ax_acc progs[3] = {
        ax_fold(ax_fn_add, NULL, ax_f64(0), ax_transpose(b, NULL)),
        ax_fold(ax_fn_add, NULL, ax_f64(0), ax_replicate(3, once, ax_transpose(b, NULL))),
        ax_fold(ax_fn_add, NULL, ax_f64(0), ax_replicate(3, along, ax_transpose(b, NULL))),
    };
    for (int i = 0; i < 3; i++) {
        char *plan = ax_dump(cx, progs[i], "plan", false);
        REQUIRE(plan);
        CHECKF(!strstr(plan, "stored a backpermute"), "program %d:\n%s", i, plan);
        free(plan);
        int64_t kern = 0, inter = 0;
        CHECK(dump_counts(cx, progs[i], &kern, &inter));
        CHECK_EQ_I(kern, 1);
    }
    ax_ctx_free(cx);
}

/* ax_compute: the marked array is made as an array of its own (one kernel
 * more, one intermediate), its own producers still fused into it; without
 * the mark the same program is one kernel; with fusion off the mark
 * changes nothing.  Results equal on the interpreter and the CPU, fused
 * or not, against plain C. */
static ax_exp cm_sq(ax_exp x, void *e) { (void)e; return ax_mul(x, x); }
static ax_exp cm_inc(ax_exp x, void *e) { (void)e; return ax_add(x, ax_f64(1)); }

static ax_exp chain_step(ax_exp v, void *env)
{
    double k = *(const double *)env;
    return ax_add(ax_mul(v, ax_f64(1.0001)), ax_f64(k));
}

/* A chain of maps too long for one kernel (a C compiler's time grows
 * faster than the kernel's size) is cut into kernels of a bounded size,
 * each cut noted in the plan dump, and computes what the uncut chain
 * computes; a short chain stays one kernel. */
TEST(a_long_chain_is_cut_into_bounded_kernels)
{
    enum { LONG = 6000, SHORT = 500 };
    static double ks[LONG];
    for (int i = 0; i < LONG; i++) ks[i] = (double)(i % 13) * 0.25;
    ax_ctx *cx = ctx(AX_BACKEND_INTERP, 0);
    REQUIRE(cx);
    double x[5] = {1, -2, 3.5, 0, 7};
    int64_t n = 5;
    ax_acc u = ax_use(cx, ax_array_wrap(cx, AX_F64, 1, &n, x));
    for (int len = SHORT; len <= LONG; len += LONG - SHORT) {
        ax_acc a = u;
        for (int i = 0; i < len; i++) a = ax_map(chain_step, &ks[i], a);
        int64_t k = 0, im = 0;
        CHECK(dump_counts(cx, a, &k, &im));
        char *plan = ax_dump(cx, a, "plan", false);
        REQUIRE(plan);
        bool cut = strstr(plan, "kernel size:") != NULL;
        free(plan);
        if (len == SHORT) {
            CHECKF(k == 1 && !cut, "%d maps: %lld kernels", len, (long long)k);
        } else {
            /* each map is about 8 scalar nodes: 6,000 make 48,000, three to six
             * kernels of 8,192 to 16,384 */
            CHECKF(k >= 3 && k <= 6 && cut, "%d maps: %lld kernels", len, (long long)k);
        }
        ax_array *r = ax_run(cx, a);
        REQUIRE(r);
        for (int j = 0; j < 5; j++) {
            double v = x[j];
            for (int i = 0; i < len; i++) v = v * 1.0001 + ks[i];
            CHECKF(((double *)ax_array_data(r, 0))[j] == v, "%d maps, element %d: %.17g, not %.17g", len, j,
                   ((double *)ax_array_data(r, 0))[j], v);
        }
        ax_array_release(r);
        ax_ctx_reset(cx);
        u = ax_use(cx, ax_array_wrap(cx, AX_F64, 1, &n, x));
    }
    ax_ctx_free(cx);
}

TEST(compute_stops_fusion_there)
{
    double x[6] = {1, 2, 3, 4, 5, 6};
    int64_t n = 6;
    for (int b = 0; b < 2; b++)
        for (int nf = 0; nf < 2; nf++) {
            ax_ctx *cx = ctx(b ? AX_BACKEND_CPU : AX_BACKEND_INTERP, nf ? AX_DEBUG_NO_FUSION : 0);
            REQUIRE(cx);
            ax_acc u = ax_use(cx, ax_array_wrap(cx, AX_F64, 1, &n, x));
            ax_acc inner = ax_map(cm_inc, NULL, ax_map(cm_sq, NULL, u));   /* x^2 + 1 */
            ax_acc marked = ax_fold(ax_fn_add, NULL, ax_f64(0), ax_map(cm_sq, NULL, ax_compute(inner)));
            ax_acc plain = ax_fold(ax_fn_add, NULL, ax_f64(0), ax_map(cm_sq, NULL, inner));
            int64_t k1 = 0, i1 = 0, k0 = 0, i0 = 0;
            CHECK(dump_counts(cx, marked, &k1, &i1));
            CHECK(dump_counts(cx, plain, &k0, &i0));
            if (!nf) {
                CHECKF(k1 == 2 && i1 == 1, "marked: %lld kernels, %lld intermediates", (long long)k1, (long long)i1);
                CHECKF(k0 == 1 && i0 == 0, "plain: %lld kernels, %lld intermediates", (long long)k0, (long long)i0);
            } else {
                CHECKF(k1 == k0 && i1 == i0, "without fusion the mark changed the schedule: %lld/%lld against %lld/%lld",
                       (long long)k1, (long long)i1, (long long)k0, (long long)i0);
            }
            char *fz = ax_dump(cx, marked, "fusion", false);
            CHECKF(fz && !strstr(fz, "compute"), "a compute mark after fusion:\n%s", fz ? fz : ax_error(cx));
            free(fz);
            double want = 0;
            for (int i = 0; i < 6; i++) want += (x[i] * x[i] + 1) * (x[i] * x[i] + 1);
            ax_array *r = ax_run(cx, marked);
            CHECKF(r && ((double *)ax_array_data(r, 0))[0] == want, "%s", r ? "wrong sum" : ax_error(cx));
            ax_array_release(r);
            /* a marked array read by two consumers, and a mark at the root */
            ax_acc two = ax_zip_with(ax_fn_add, NULL, ax_compute(inner), ax_map(cm_sq, NULL, ax_compute(inner)));
            r = ax_run(cx, two);
            CHECKF(r != NULL, "%s", ax_error(cx));
            for (int i = 0; r && i < 6; i++) {
                double v = x[i] * x[i] + 1;
                CHECK(((double *)ax_array_data(r, 0))[i] == v + v * v);
            }
            ax_array_release(r);
            r = ax_run(cx, ax_compute(inner));
            CHECKF(r && ((double *)ax_array_data(r, 0))[5] == 37, "%s", r ? "wrong value" : ax_error(cx));
            ax_array_release(r);
            CHECK(ax_compute(NULL) == NULL);
            ax_ctx_free(cx);
        }
}

/* size (filter p xs) is a count alone: one reduction, the filtered array
 * never made (the map's exp computed once per element, in the fold); a
 * filter whose elements are also read stays a filter.  Ranks 1 and 2 and
 * an empty input, on the interpreter and the CPU, against plain C; with
 * the planner off the filter is kept (and the size is the same). */
static ax_exp fc_pos(ax_exp x, void *e) { (void)e; return ax_gt(x, ax_f32(0.5f)); }
static ax_exp fc_exp(ax_exp x, void *e) { (void)e; return ax_exp_(x); }

TEST(size_of_a_filter_is_a_count)
{
    float d[12] = {-1, 2, -3, 4, -5, 6, -7, 8, 0.1f, -0.2f, 9, -0.7f};
    for (int b = 0; b < 2; b++)
        for (int off = 0; off < 2; off++) {
            ax_ctx *cx = ctx(b ? AX_BACKEND_CPU : AX_BACKEND_INTERP, off ? AX_DEBUG_NO_PLANNER : 0);
            REQUIRE(cx);
            static const int64_t shapes[3][2] = {{12, 0}, {3, 4}, {0, 0}};
            static const int ranks[3] = {1, 2, 1};
            for (int s = 0; s < 3; s++) {
                ax_acc in = ax_use(cx, ax_array_wrap(cx, AX_F32, ranks[s], shapes[s], d));
                ax_acc f = ax_filter(fc_pos, NULL, ax_map(fc_exp, NULL, in));
                ax_acc size = ax_unit(cx, ax_size(f));
                int64_t want = 0, n = s == 2 ? 0 : 12;
                for (int i = 0; i < n; i++) want += expf(d[i]) > 0.5f;
                /* the count and the unit of its size: 2 kernels, the count
                 * the intermediate; the filter would be the count and the
                 * scatter, then the unit */
                int64_t k = 0, inter = 0;
                CHECK(dump_counts(cx, size, &k, &inter));
                char *fz = ax_dump(cx, size, "fusion", false);
                REQUIRE(fz);
                if (!off)
                    CHECKF(k == 2 && inter == 1 && !strstr(fz, "filter") && strstr(fz, "fold"),
                           "shape %d: %lld kernels, %lld intermediates:\n%s", s, (long long)k, (long long)inter, fz);
                else
                    CHECKF(strstr(fz, "filter") != NULL, "shape %d, planner off: no filter:\n%s", s, fz);
                free(fz);
                ax_array *r = ax_run(cx, size);
                CHECKF(r && ((int64_t *)ax_array_data(r, 0))[0] == want, "shape %d: %s", s,
                       r ? "wrong count" : ax_error(cx));
                ax_array_release(r);
                /* the elements read too: the filter stays, its size still right */
                ax_acc both = ax_atuple2(ax_unit(cx, ax_size(f)), ax_fold(ax_fn_add, NULL, ax_f32(0), f));
                ax_array *out[2] = {NULL, NULL};
                int got = ax_run_n(cx, both, out, 2);
                CHECKF(got == 2 && ((int64_t *)ax_array_data(out[0], 0))[0] == want, "shape %d with reads: %s", s,
                       got == 2 ? "wrong count" : ax_error(cx));
                for (int i = 0; i < got; i++) ax_array_release(out[i]);
                char *fb = ax_dump(cx, both, "fusion", false);
                CHECKF(fb && strstr(fb, "filter"), "the read filter was not kept:\n%s", fb ? fb : ax_error(cx));
                free(fb);
            }
            ax_ctx_free(cx);
        }
}

/* filter q (filter p xs) is one filter of p && q: one kernel, no
 * intermediate; q is still evaluated only where p holds (here it reads
 * b[x], out of bounds wherever p drops x), so nothing faults that did not.
 * Three filters in a row become one too.  On the interpreter and the
 * CPU, against plain C; with the planner off the filters stay apart. */
static ax_exp ff_small(ax_exp x, void *e) { (void)e; return ax_lt(x, ax_i64(50)); }
static ax_exp ff_b_pos(ax_exp x, void *e) { return ax_gt(ax_at_linear((ax_acc)e, x), ax_i64(0)); }
static ax_exp ff_even(ax_exp x, void *e) { (void)e; return ax_eq(ax_rem(x, ax_i64(2)), ax_i64(0)); }

TEST(a_filter_of_a_filter_is_one_filter)
{
    enum { N = 1000, B = 50 };
    static int64_t xs[N], b[B];
    for (int i = 0; i < N; i++) xs[i] = (int64_t)i * 37 % N;
    for (int j = 0; j < B; j++) b[j] = j % 3 == 0 ? 1 : -1;
    for (int be = 0; be < 2; be++)
        for (int off = 0; off < 2; off++) {
            ax_ctx *cx = ctx(be ? AX_BACKEND_CPU : AX_BACKEND_INTERP, off ? AX_DEBUG_NO_PLANNER : 0);
            REQUIRE(cx);
            int64_t n = N, nb = B;
            ax_acc x = ax_use(cx, ax_array_wrap(cx, AX_I64, 1, &n, xs));
            ax_acc bb = ax_use(cx, ax_array_wrap(cx, AX_I64, 1, &nb, b));
            for (int three = 0; three < 2; three++) {
                ax_acc f = ax_filter(ff_b_pos, bb, ax_filter(ff_small, NULL, x));
                if (three) f = ax_filter(ff_even, NULL, f);
                int64_t want[N], m = 0;
                for (int i = 0; i < N; i++)
                    if (xs[i] < B && b[xs[i]] > 0 && (!three || xs[i] % 2 == 0)) want[m++] = xs[i];
                int64_t k = 0, inter = 0;
                CHECK(dump_counts(cx, f, &k, &inter));
                char *fz = ax_dump(cx, f, "fusion", false);
                REQUIRE(fz);
                int nf = 0;
                for (const char *q = fz; (q = strstr(q, "filter")); q++) nf++;
                if (!off)
                    CHECKF(k == 1 && inter == 0 && nf == 1, "%d filters: %lld kernels, %lld intermediates:\n%s",
                           three ? 3 : 2, (long long)k, (long long)inter, fz);
                else
                    CHECKF(nf == (three ? 3 : 2), "planner off: %d filters:\n%s", nf, fz);
                free(fz);
                ax_array *r = ax_run(cx, f);
                CHECKF(r && ax_array_shape(r)[0] == m && !memcmp(ax_array_data(r, 0), want, sizeof *want * (size_t)m),
                       "%d filters, backend %d, planner %s: %s", three ? 3 : 2, be, off ? "off" : "on",
                       r ? "wrong elements" : ax_error(cx));
                ax_array_release(r);
            }
            ax_ctx_free(cx);
        }
}

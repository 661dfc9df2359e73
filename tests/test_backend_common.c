/*
 * What the backends must do beyond single operations: read a delayed
 * (fused) operand inline, built by hand in the core IR and run through the
 * backend's own entry points; generate the same code for the same program;
 * run in two contexts on two threads at once; release a let-bound array
 * after its last read (a chain of 40 stencils under a memory limit); run
 * a compiled program again on the new contents of a wrapped buffer.
 *
 * Backends (tests/ops/ops.h): the COMPILED_TESTs on every compiling
 * backend under test (CTest: the CPU backend as test_backend_common,
 * OpenCL as test_backend_common_opencl), the BE_TEST on every backend.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ops/ops.h"
#include "ir.h"
#include "backend/cpu/cg.h"
#include "backend/gpu/gpu.h"
#include "backend/interp/interp.h"
#include <pthread.h>

/* The backend's entry points (Backend, backend.h). */
static const Backend *backend_of(const Be *be)
{
    return be->kind == AX_BACKEND_OPENCL ? &backend_opencl : be->kind == AX_BACKEND_CUDA ? &backend_cuda : &backend_cpu;
}

/* ================================================================ fused operands */

/* Core IR built by hand (independent of the fusion pass): consumers whose
 * operand is DELAYED, with index and linear-index forms reading a let-bound
 * array through ax_at / ax_at_linear, and a TRANSFORM.  Run through the
 * interpreter's and the backend's entry points directly (the verifier is
 * not involved). */
typedef struct Hand {
    Program *p;
    ax_ctx *cx;
    const Type *f32, *arr1, *ix1;
    int a0;                   /* the array variable */
} Hand;

static Node *hn(Hand *h, Op op, int n, const Type *t)
{
    Node *x = node_new(&h->p->arena, op, n, t);
    if (x) x->cx = h->cx;
    return x;
}

static Node *hvar(Hand *h, const Type *t, int *id)
{
    Node *v = hn(h, OP_VAR, 0, t);
    *id = program_fresh_var(h->p, t);
    v->id = *id;
    return v;
}

static Node *havar(Hand *h)
{
    Node *v = hn(h, OP_AVAR, 0, h->arr1);
    v->id = h->a0;
    return v;
}

static Node *hconst(Hand *h, float c)
{
    Node *k = hn(h, OP_CONST, 0, h->f32);
    k->c.u = 0;
    k->c.f32 = c;
    return k;
}

static Node *hprim(Hand *h, Prim p, const Type *t, Node *a, Node *b)
{
    Node *x = hn(h, OP_PRIM, b ? 2 : 1, t);
    x->a = p;
    x->kid[0] = a;
    if (b) x->kid[1] = b;
    return x;
}

/* \v -> body, one parameter */
static Node *hlam(Hand *h, Node *param, Node *body)
{
    Node *l = hn(h, OP_LAM, 1, body->type);
    l->nparam = 1;
    l->param = arena_alloc(&h->p->arena, sizeof(Node *));
    l->param[0] = param;
    l->kid[0] = body;
    return l;
}

static Node *hlam2(Hand *h, Prim p)
{
    int i, j;
    Node *x = hvar(h, h->f32, &i), *y = hvar(h, h->f32, &j);
    Node *l = hn(h, OP_LAM, 1, h->f32);
    l->nparam = 2;
    l->param = arena_alloc(&h->p->arena, 2 * sizeof(Node *));
    l->param[0] = x;
    l->param[1] = y;
    l->kid[0] = hprim(h, p, h->f32, x, y);
    return l;
}

/* delayed (map (\x -> x * 2 + 1) a0): index form through ax_at, linear
 * form through ax_at_linear */
static Node *hdelayed(Hand *h)
{
    int i, j;
    Node *d = hn(h, OP_DELAYED, 3, h->arr1);
    Node *sh = hn(h, OP_SHAPE, 1, h->ix1);
    sh->kid[0] = havar(h);
    Node *ix = hvar(h, h->ix1, &i), *li = hvar(h, ty_i64(), &j);
    Node *at = hn(h, OP_INDEX, 2, h->f32), *al = hn(h, OP_LINDEX, 2, h->f32);
    at->kid[0] = havar(h);
    at->kid[1] = ix;
    al->kid[0] = havar(h);
    al->kid[1] = li;
    d->kid[0] = sh;
    d->kid[1] = hlam(h, ix, hprim(h, P_ADD, h->f32, hprim(h, P_MUL, h->f32, at, hconst(h, 2)), hconst(h, 1)));
    d->kid[2] = hlam(h, li, hprim(h, P_ADD, h->f32, hprim(h, P_MUL, h->f32, al, hconst(h, 2)), hconst(h, 1)));
    return d;
}

/* The consumer `which` of a delayed operand. */
static Node *hconsumer(Hand *h, int which, int64_t n)
{
    Node *x = NULL;
    const Type *arr0 = ty_array(&h->p->arena, h->f32, 0);
    switch (which) {
    case 0:   /* fold (+) 0 */
        x = hn(h, OP_FOLD, 3, arr0);
        x->kid[0] = hlam2(h, P_ADD);
        x->kid[1] = hconst(h, 0.5f);
        x->kid[2] = hdelayed(h);
        break;
    case 1:   /* scanl1 max */
        x = hn(h, OP_SCANL1, 2, h->arr1);
        x->kid[0] = hlam2(h, P_MAX);
        x->kid[1] = hdelayed(h);
        break;
    case 2: { /* map negate: a linear producer */
        int i;
        Node *v = hvar(h, h->f32, &i);
        x = hn(h, OP_MAP, 2, h->arr1);
        x->kid[0] = hlam(h, v, hprim(h, P_NEG, h->f32, v, NULL));
        x->kid[1] = hdelayed(h);
        break;
    }
    case 3: { /* backpermute reverse: the index form, checked */
        int i;
        Node *ix = hvar(h, h->ix1, &i);
        Node *g = hn(h, OP_IXGET, 1, ty_i64());
        g->kid[0] = ix;
        Node *k = hn(h, OP_CONST, 0, ty_i64());
        k->c.i = n - 1;
        Node *sub = hprim(h, P_SUB, ty_i64(), k, g);
        Node *cons = hn(h, OP_IXCONS, 1, h->ix1);
        cons->kid[0] = sub;
        Node *sh = hn(h, OP_SHAPE, 1, h->ix1);
        sh->kid[0] = havar(h);
        x = hn(h, OP_BACKPERMUTE, 3, h->arr1);
        x->kid[0] = sh;
        x->kid[1] = hlam(h, ix, cons);
        x->kid[2] = hdelayed(h);
        break;
    }
    case 4: { /* stencil 3, clamp: the index form at mapped coordinates */
        Stencil *st = arena_alloc(&h->p->arena, sizeof *st);
        st->rank = 1;
        st->ninputs = 1;
        st->size[0][0] = 3;
        st->bound[0] = AX_MIRROR;
        st->constkid[0] = st->constkid[1] = -1;
        int i[3];
        Node *ps[3];
        for (int k = 0; k < 3; k++) ps[k] = hvar(h, h->f32, &i[k]);
        Node *l = hn(h, OP_LAM, 1, h->f32);
        l->nparam = 3;
        l->param = arena_alloc(&h->p->arena, 3 * sizeof(Node *));
        for (int k = 0; k < 3; k++) l->param[k] = ps[k];
        l->kid[0] = hprim(h, P_SUB, h->f32, hprim(h, P_ADD, h->f32, ps[0], ps[2]), ps[1]);
        x = hn(h, OP_STENCIL, 2, h->arr1);
        x->sten = st;
        x->kid[0] = l;
        x->kid[1] = hdelayed(h);
        break;
    }
    case 5: { /* transform: reverse, then * 3 */
        int i, j;
        Node *ix = hvar(h, h->ix1, &i), *v = hvar(h, h->f32, &j);
        Node *g = hn(h, OP_IXGET, 1, ty_i64());
        g->kid[0] = ix;
        Node *k = hn(h, OP_CONST, 0, ty_i64());
        k->c.i = n - 1;
        Node *cons = hn(h, OP_IXCONS, 1, h->ix1);
        cons->kid[0] = hprim(h, P_SUB, ty_i64(), k, g);
        Node *sh = hn(h, OP_SHAPE, 1, h->ix1);
        sh->kid[0] = havar(h);
        x = hn(h, OP_TRANSFORM, 4, h->arr1);
        x->kid[0] = sh;
        x->kid[1] = hlam(h, ix, cons);
        x->kid[2] = hlam(h, v, hprim(h, P_MUL, h->f32, v, hconst(h, 3)));
        x->kid[3] = havar(h);
        break;
    }
    default:
        break;
    }
    return x;
}

/* let a0 = use data in consumer */
static Program *hprogram(ax_ctx *cx, int which, int64_t n, ax_array *data)
{
    Program *p = calloc(1, sizeof *p);
    arena_init(&p->arena);
    Hand h = {p, cx, ty_scalar(AX_F32), NULL, NULL, 0};
    h.arr1 = ty_array(&p->arena, h.f32, 1);
    h.ix1 = ty_index(&p->arena, 1);
    h.a0 = program_fresh_var(p, h.arr1);
    Node *use = hn(&h, OP_USE, 0, h.arr1);
    use->arr = data;
    Node *body = hconsumer(&h, which, n);
    Node *let = hn(&h, OP_ALET, 2, body->type);
    let->id = h.a0;
    let->kid[0] = use;
    let->kid[1] = body;
    p->root = let;
    return p;
}

/* Whether a unit of the CPU backend's C (its headings: "unit 1 of 2,
 * map: operations 2, 5") runs operation k's code. */
static bool unit_runs(const char *c, int k)
{
    for (const char *h = c; (h = strstr(h, "---- unit ")); h++) {
        const char *ops = strstr(h, ": operations"), *end = strstr(h, "*/");
        if (!ops || !end || ops > end) continue;
        for (const char *p = ops + 12; p < end;) {
            char *q;
            long v = strtol(p, &q, 10);
            if (q == p) break;
            if (v == k) return true;
            p = q + (*q == ',');
        }
    }
    return false;
}

COMPILED_TEST(delayed_operands_built_by_hand)
{
    const int64_t sizes[] = {1, 5, 1001, 100003};
    for (int k = 0; k < 4; k++)
        for (int which = 0; which < 6; which++) {
            int64_t n = sizes[k];
            ax_ctx *cx = be_ctx(be);
            float *v = malloc(sizeof *v * (size_t)n);
            fill(v, AX_F32, n, 500 + (uint64_t)which, 50);
            ax_array *data = ax_array_from(cx, AX_F32, 1, &n, v);
            free(v);
            Program *p = hprogram(cx, which, n, data);
            ax_array *ri = NULL, *rc = NULL;
            int ni = interp_run(cx, p, &ri, 1);
            void *st = NULL;
            const Backend *bk = backend_of(be);
            int rcp = bk->prepare(cx, p, &st);
            int nc = rcp == 0 ? bk->run(cx, p, st, &rc, 1) : -1;
            CHECKF(ni == 1 && nc == 1, "consumer %d size %lld: %d %d: %s", which, (long long)n, ni, nc, ax_error(cx));
            if (ni == 1 && nc == 1) {
                char what[64];
                snprintf(what, sizeof what, "delayed consumer %d, size %lld", which, (long long)n);
                CHECK(equal(what, ri, rc, which == 0 ? 1e-4 : 0));
            }
            if (rcp == 0) {
                char *c = be->gpu ? gpu_text(cx, p, GPU_OPENCL) : cpu_c_text(cx, p);
                /* the delayed operand is read inline, not materialised */
                CHECK(c && (be->gpu ? strstr(c, "axk_2_") && !strstr(c, "axk_3_")
                                    : unit_runs(c, 2) && !unit_runs(c, 3)));
                free(c);
            }
            if (st) bk->release(st);
            ax_array_release(ri);
            ax_array_release(rc);
            ax_array_release(data);
            program_free(p);
            ax_ctx_free(cx);
        }
}

/* ================================================================ generated code */

/* scanr (+) (-3) over an i32 matrix */
static ax_acc b_scanr(ax_ctx *cx)
{
    return ax_scanr(ax_fn_add, NULL, ax_i32(-3), input(cx, AX_I32, 2, SH(3, 5), 42, 1000));
}

COMPILED_TEST(generated_code_is_deterministic)
{
    ax_ctx *c1 = be_ctx(be), *c2 = be_ctx(be);
    const char *stage = be_code_stage(be);
    char *a = ax_dump(c1, b_scanr(c1), stage, false);
    char *b = ax_dump(c1, b_scanr(c1), stage, false);
    char *c = ax_dump(c2, b_scanr(c2), stage, false);
    REQUIRE(a && b && c);
    CHECK(!strcmp(a, b));
    CHECK(!strcmp(a, c));
    CHECK(strstr(a, "axk_"));
    free(a);
    free(b);
    free(c);
    ax_ctx_free(c1);
    ax_ctx_free(c2);
}

/* ================================================================ threads */

typedef struct ThreadArg {
    ax_backend_kind kind;
    int seed;
    bool ok;
} ThreadArg;

static void *thread_main(void *p)
{
    ThreadArg *t = p;
    ax_ctx *cx = kind_ctx(t->kind, false);
    t->ok = true;
    for (int k = 0; k < 3 && t->ok; k++) {
        int64_t n = 200000 + t->seed * 1000 + k;
        ax_array *r = ax_run(cx, ax_fold(ax_fn_add, NULL, ax_i64(0), ax_map(ax_fn_abs, NULL, input(cx, AX_I64, 1, &n, 7, 3))));
        /* |v| for v uniform in [-3, 3]: compare with a plain loop */
        int64_t want = 0;
        int64_t *buf = malloc(sizeof *buf * (size_t)n);
        fill(buf, AX_I64, n, 7 * 31, 3);
        for (int64_t i = 0; i < n; i++) want += buf[i] < 0 ? -buf[i] : buf[i];
        free(buf);
        t->ok = r && ((const int64_t *)ax_array_data(r, 0))[0] == want;
        ax_array_release(r);
    }
    ax_ctx_free(cx);
    return NULL;
}

COMPILED_TEST(two_contexts_on_two_threads)
{
    pthread_t th[2];
    ThreadArg a[2] = {{be->kind, 1, false}, {be->kind, 2, false}};
    for (int k = 0; k < 2; k++) REQUIRE(pthread_create(&th[k], NULL, thread_main, &a[k]) == 0);
    for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
    CHECK(a[0].ok);
    CHECK(a[1].ok);
}

/* ================================================================ memory */

/* x[i-1] + x[i+1] with zero outside: one 1-d stencil step. */
static ax_exp blur3(const ax_exp *nb, void *env)
{
    (void)env;
    return ax_add(nb[0], nb[2]);
}

/* Runs the program build(cx, input) makes over n f32 (x) on the
 * interpreter (no limit) and on be under a memory limit of `limit`
 * bytes: it must run there, and give the interpreter's bits. */
static void same_under_limit(const Be *be, ax_acc (*build)(ax_ctx *, ax_acc), int64_t limit, int64_t n,
                             const float *x)
{
    float *out[2] = {0, 0};
    for (int b = 0; b < 2; b++) {
        ax_options o = {0};
        o.backend = b ? be->kind : AX_BACKEND_INTERP;
        o.mem_limit = b ? limit : 0;
        ax_ctx *cx = ax_ctx_new(&o);
        ax_array *r = NULL;
        int got = ax_run_n(cx, build(cx, ax_use(cx, ax_array_from(cx, AX_F32, 1, &n, x))), &r, 1);
        CHECKF(got == 1, "%s: %s", b ? be->name : "interp", ax_error(cx));
        if (got == 1) {
            out[b] = malloc(sizeof(float) * (size_t)n);
            ax_array_copy_out(r, 0, out[b]);
            ax_array_release(r);
        }
        ax_ctx_free(cx);
    }
    if (out[0] && out[1]) CHECK(!memcmp(out[0], out[1], sizeof(float) * (size_t)n));
    free(out[0]);
    free(out[1]);
}

/* Early release (liveness.c): fusion floats the lets of a chain of
 * stencils (which never fuse) into one let chain whose scopes all end at
 * the end; each intermediate must still go right after its last read.
 * 40 steps over 1M f32 (4 MB each, 160 MB if all were kept) run under a
 * 24 MB memory limit, and give the interpreter's result. */
static ax_acc stencil_chain(ax_ctx *cx, ax_acc a)
{
    (void)cx;
    const int size = 3;
    for (int k = 0; k < 40; k++) a = ax_stencil(blur3, NULL, &size, ax_constant(ax_f32(0)), a);
    return a;
}

COMPILED_TEST(let_chains_release_arrays_after_their_last_read)
{
    if (ops_small()) {
        printf("skip let_chains_release_arrays_after_their_last_read: AXLE_TEST_SMALL\n");
        return;
    }
    const int64_t n = 1000000;
    float *x = malloc(sizeof *x * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 7) - 3.0f;
    same_under_limit(be, stencil_chain, 24 << 20, n, x);
    free(x);
}

/* A loop's state goes component by component (liveness.c counts the
 * leaves of an awhile body's parameter): a step of two stencils over
 * (grid, counter) drops the old grid once the first stencil has read it,
 * before the second one's grid is made, although the counter is read
 * after.  Kept to the step's end, the old grid would make three grids of
 * the step's own (plus the input's) where two are enough: 1M f32 (4 MB)
 * grids under a 15 MB limit hold the input and two grids, not three (a
 * GPU backend also holds the input's device copy: 19 MB).  The
 * interpreter gives the result to compare (no limit). */
static ax_exp lt_six(ax_exp x, void *env)
{
    (void)env;
    return ax_lt(x, ax_i32(6));
}

static ax_exp succ_i32(ax_exp x, void *env)
{
    (void)env;
    return ax_add(x, ax_i32(1));
}

static ax_acc sweep_cond(ax_acc st, void *env)
{
    (void)env;
    return ax_map(lt_six, NULL, ax_aget(st, 1));
}

static ax_acc sweep_step(ax_acc st, void *env)
{
    (void)env;
    const int size = 3;
    ax_acc g = ax_stencil(blur3, NULL, &size, ax_constant(ax_f32(0)), ax_aget(st, 0));
    g = ax_stencil(blur3, NULL, &size, ax_constant(ax_f32(1)), g);
    return ax_atuple2(g, ax_map(succ_i32, NULL, ax_aget(st, 1)));
}

static ax_acc sweeps(ax_ctx *cx, ax_acc grid)
{
    return ax_aget(ax_awhile(sweep_cond, sweep_step, NULL, ax_atuple2(grid, ax_unit(cx, ax_i32(0)))), 0);
}

COMPILED_TEST(loop_state_released_leaf_by_leaf)
{
    if (ops_small()) {
        printf("skip loop_state_released_leaf_by_leaf: AXLE_TEST_SMALL\n");
        return;
    }
    const int64_t n = 1000000;
    float *x = malloc(sizeof *x * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = (float)(i % 5) - 2.0f;
    bool gpu = be->kind == AX_BACKEND_OPENCL || be->kind == AX_BACKEND_CUDA;
    same_under_limit(be, sweeps, (int64_t)(gpu ? 19 : 15) << 20, n, x);
    free(x);
}

/* ================================================================ programs run again */

BE_TEST(program_run_again_reads_its_wrapped_buffer)
{
    ax_ctx *cx = be_ctx(be);
    REQUIRE(cx);
    int64_t v[5] = {1, 2, 3, 4, 5};
    ax_array *a = ax_array_wrap(cx, AX_I64, 1, SH(5), v);
    REQUIRE(a);
    ax_program *p = ax_compile(cx, ax_fold_all(ax_fn_add, NULL, ax_i64(0), ax_use(cx, a)));
    CHECKF(p != NULL, "%s", ax_error(cx));
    if (p) {
        for (int run = 0; run < 3; run++) {
            /* a wrapped (borrowed) buffer is read when the program runs */
            v[0] = 10 * run;
            /* (the documented way to say that a wrapped buffer changed:
             * a GPU backend uploads it again) */
            ax_array_data(a, 0);
            ax_array *out = NULL;
            int n = ax_program_run(p, &out, 1);
            CHECK_EQ_I(n, 1);
            if (n == 1 && SHAPE_IS(out, 0, 0)) CHECK_EQ_I(((int64_t *)ax_array_data(out, 0))[0], 10 * run + 14);
            ax_array_release(out);
        }
        CHECK(ax_program_stats(p) != NULL);
        ax_program_free(p);
    }
    ax_array_release(a);
    ax_ctx_free(cx);
}
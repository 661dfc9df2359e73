/*
 * Faults in safe mode, and unsafe mode: reads outside an array
 * (backpermute, ax_at in generate, a filter over more indices than its
 * array has, a constant position or index past an array's end in a map), permute targets outside the defaults, division by zero, and
 * reads evaluated speculatively in a branch not taken.
 *
 * Backends (tests/ops/ops.h): the compiling backends, each against the
 * interpreter: the same status and, word for word, the same message (the
 * lowest faulting position), the context usable afterwards; in unsafe
 * mode out-of-bounds permute targets dropped, in-bounds indexing
 * unchecked, division by zero still an error, and no bounds checks in the
 * generated code.  (The interpreter's own faults: the other test_op_*
 * files, EXPECT_FAIL.)
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ops/ops.h"

typedef struct Fault {
    int which;       /* ops_fault's number */
    ax_status want;
} Fault;

static ax_acc b_fault(ax_ctx *cx, const void *e) { return ops_fault(cx, ((const Fault *)e)->which); }

DIFF_TEST(safe_mode_faults_match_the_interpreter)
{
    const Fault fs[] = {{0, AX_ERR_INDEX}, {1, AX_ERR_INDEX}, {2, AX_ERR_INDEX}, {3, AX_ERR_DIVZERO}, {4, AX_ERR_INDEX},
                        {5, AX_ERR_INDEX}, {6, AX_ERR_INDEX}};
    for (int k = 0; k < 7; k++) {
        ax_ctx *ci = kind_ctx(AX_BACKEND_INTERP, false), *cc = be_ctx_unsafe(be, false);
        CHECK(ax_run(ci, b_fault(ci, &fs[k])) == NULL);
        CHECK(ax_run(cc, b_fault(cc, &fs[k])) == NULL);
        CHECKF(ax_status_of(cc) == fs[k].want, "fault %d: %d %s", k, ax_status_of(cc), ax_error(cc));
        CHECK(ax_status_of(ci) == ax_status_of(cc));
        /* the lowest faulting position is reported, as the interpreter's
         * first one */
        CHECKF(!strcmp(ax_error(ci), ax_error(cc)), "fault %d: \"%s\" vs \"%s\"", k, ax_error(ci), ax_error(cc));
        /* the context is usable afterwards */
        ax_array *r = RUN(cc, ax_fold_all(ax_fn_add, NULL, ax_i32(0), input(cc, AX_I32, 1, SH(10), 1, 0)));
        ax_array_release(r);
        ax_ctx_free(ci);
        ax_ctx_free(cc);
    }
}

DIFF_TEST(unsafe_mode)
{
    ax_ctx *cx = be_ctx_unsafe(be, true);
    ax_ctx *ci = kind_ctx(AX_BACKEND_INTERP, true);
    /* out-of-bounds permute targets are dropped in unsafe mode */
    ax_array *r = RUN(cx, b_fault(cx, &(Fault){2, AX_OK}));
    ax_array *q = RUN(ci, b_fault(ci, &(Fault){2, AX_OK}));
    if (r && q) CHECK(equal("unsafe permute", r, q, 0));
    ax_array_release(r);
    ax_array_release(q);
    /* in-bounds indexing works without checks */
    r = RUN(cx, ax_backpermute(ax_ix1(ax_i64(99990)), ops_shift, (void *)(intptr_t)10, input(cx, AX_I32, 1, SH(100000), 5, 9)));
    q = RUN(ci, ax_backpermute(ax_ix1(ax_i64(99990)), ops_shift, (void *)(intptr_t)10, input(ci, AX_I32, 1, SH(100000), 5, 9)));
    if (r && q) CHECK(equal("unsafe backpermute", r, q, 0));
    ax_array_release(r);
    ax_array_release(q);
    /* division by zero is still an error */
    CHECK(ax_run(cx, b_fault(cx, &(Fault){3, AX_OK})) == NULL);
    CHECK(ax_status_of(cx) == AX_ERR_DIVZERO);
    /* and the unsafe text has no bounds checks (the safe one has) */
    for (int safe = 0; safe < 2; safe++) {
        ax_ctx *cd = be_ctx_unsafe(be, !safe);
        char *c = ax_dump(cd, b_fault(cd, &(Fault){0, AX_OK}), be->gpu ? "opencl" : "c", false);
        REQUIRE(c);
        /* AX_ERR_INDEX (at SITE_BACKPERMUTE on the CPU) */
        CHECK(!strstr(c, be->gpu ? "ax_fault(err_, 2)" : "ax_fail(c, 2, 3") == !safe);
        free(c);
        ax_ctx_free(cd);
    }
    ax_ctx_free(cx);
    ax_ctx_free(ci);
}

/* One side of a comparison with the interpreter: build(cx, env) run on
 * the interpreter (b = 0) or on be's backend (b = 1), over i32 input x
 * (n elements, wrapped as a vector or, with cols > 0, as rows x cols);
 * its status, its message ("" when it ran), and a copy of its result's
 * first `want` elements (NULL when it failed). */
typedef ax_acc (*SideBuild)(ax_ctx *cx, ax_acc a, const void *env);

static int32_t *run_side(const Be *be, int b, const int32_t *x, int64_t n, int64_t cols, SideBuild build, const void *env,
                         int64_t want, ax_status *st, char *msg, size_t size)
{
    ax_options o = {0};
    o.backend = b ? be->kind : AX_BACKEND_INTERP;
    ax_ctx *cx = ax_ctx_new(&o);
    if (!cx) {
        *st = AX_ERR_NOMEM;
        snprintf(msg, size, "no context");
        return NULL;
    }
    int64_t sh[2] = {cols ? n / cols : n, cols};
    ax_acc a = ax_use(cx, ax_array_from(cx, AX_I32, cols ? 2 : 1, sh, x));
    ax_array *r = ax_run(cx, build(cx, a, env));
    *st = ax_status_of(cx);
    snprintf(msg, size, "%s", r ? "" : ax_error(cx));
    int32_t *out = NULL;
    if (r && (out = malloc(sizeof *out * (size_t)(want ? want : 1)))) {
        if (ax_array_size(r) == want) ax_array_copy_out(r, 0, out);
        else {
            free(out);
            out = NULL;
            *st = AX_ERR_SHAPE;
            snprintf(msg, size, "%lld elements, not %lld", (long long)ax_array_size(r), (long long)want);
        }
    }
    ax_array_release(r);
    ax_ctx_free(cx);
    return out;
}

/* i > 0 ? a[i - 1] : k  (k = -1: every branch in bounds; the read at
 * i = 0 is out of bounds only in the branch not taken) */
typedef struct { ax_acc a; int64_t shift; } Spec;

static ax_exp spec_fn(ax_exp ix, void *env)
{
    Spec *s = env;
    ax_exp i = ax_index_get(ix, 0);
    return ax_cond(ax_gt(i, ax_i64(0)), ax_at_linear(s->a, ax_sub(i, ax_i64(s->shift))), ax_i32(-1));
}

static ax_acc spec_build(ax_ctx *cx, ax_acc a, const void *env)
{
    Spec *s = (Spec *)env;
    s->a = a;
    return ax_generate(cx, ax_shape(a), spec_fn, s);
}

/* Reads in both branches of a cond are evaluated speculatively in kernels
 * with deferred checks (cg_exp.c `speculable`): a bad index in the branch
 * not taken must not be reported, one in the branch taken must, exactly as
 * the interpreter reports it. */
DIFF_TEST(speculated_reads_report_only_real_faults)
{
    const int64_t n = 100000;
    int32_t *x = malloc(sizeof *x * (size_t)n);
    REQUIRE(x);
    for (int64_t i = 0; i < n; i++) x[i] = (int32_t)(i * 7 % 1000);
    for (int shift = 1; shift <= 2; shift++) {   /* 2: i = 1 reads a[-1], taken */
        int32_t *r[2];
        ax_status st[2];
        char msg[2][512];
        Spec s = {NULL, shift};
        for (int b = 0; b < 2; b++) r[b] = run_side(be, b, x, n, 0, spec_build, &s, n, &st[b], msg[b], sizeof msg[b]);
        if (shift == 1) {
            CHECKF(r[0] && r[1], "shift 1: interp %s, %s %s", msg[0], be->name, msg[1]);
            if (r[0] && r[1]) CHECK(!memcmp(r[0], r[1], sizeof(int32_t) * (size_t)n));
        } else {
            CHECK(!r[0] && !r[1] && st[0] == AX_ERR_INDEX && st[1] == AX_ERR_INDEX);
            CHECKF(!strcmp(msg[0], msg[1]), "interp: %s | %s: %s", msg[0], be->name, msg[1]);
        }
        free(r[0]);
        free(r[1]);
    }
    free(x);
}

/* A fold with an operator that is not commutative (ax_fn_snd) over rows
 * long enough that the CPU folds each in chains of blocks at once
 * (cpu/fold.c fold_chains), whose elements read past an array's end from
 * position `from` of row 1 on: the fault reported is the interpreter's,
 * at the lowest position, though a later chain meets a bad read first. */
typedef struct { ax_acc a; int64_t rows, cols; } SndRead;

static ax_exp sndread_fn(ax_exp ix, void *env)
{
    const SndRead *s = env;
    ax_exp p = ax_add(ax_mul(ax_index_get(ix, 0), ax_i64(s->cols)), ax_index_get(ix, 1));
    return ax_at_linear(s->a, p);
}

static ax_acc sndread_build(ax_ctx *cx, ax_acc a, const void *env)
{
    SndRead *s = (SndRead *)env;
    s->a = a;
    return ax_fold1(ax_fn_snd, NULL, ax_generate(cx, ax_ix2(ax_i64(s->rows), ax_i64(s->cols)), sndread_fn, s));
}

DIFF_TEST(chained_fold_reports_the_first_fault)
{
    const int64_t rows = 3, cols = 1000, from[] = {1000 + 900, 1000 + 10, 3 * 1000};
    for (int k = 0; k < 3; k++) {
        int64_t an = from[k];
        int32_t *x = malloc(sizeof *x * (size_t)an), *r[2];
        REQUIRE(x);
        for (int64_t i = 0; i < an; i++) x[i] = (int32_t)(i * 7 % 1000);
        ax_status st[2];
        char msg[2][512];
        SndRead s = {NULL, rows, cols};
        for (int b = 0; b < 2; b++) {
            r[b] = run_side(be, b, x, an, 0, sndread_build, &s, rows, &st[b], msg[b], sizeof msg[b]);
            for (int64_t i = 0; r[b] && i < rows; i++)
                CHECKF(r[b][i] == x[i * cols + cols - 1], "case %d row %d: %d", k, (int)i, r[b][i]);
        }
        if (from[k] < rows * cols) {
            CHECKF(!r[0] && !r[1] && st[0] == AX_ERR_INDEX && st[1] == AX_ERR_INDEX, "case %d: %d %d", k, st[0], st[1]);
            CHECKF(!strcmp(msg[0], msg[1]), "case %d: interp: %s | %s: %s", k, msg[0], be->name, msg[1]);
        } else {
            CHECKF(r[0] && r[1], "case %d: interp %s, %s %s", k, msg[0], be->name, msg[1]);
        }
        free(r[0]);
        free(r[1]);
        free(x);
    }
}

/* A fold along rows, or a generate alone, whose element reads
 * a[r + shift, j] (j the row's own position) where the row is inside a,
 * else -1: the read's bounds are checked once per row before the row's
 * loop (cgen/hoist.c), under the condition when the read is in a
 * speculated branch. */
typedef struct { ax_acc a; int64_t shift, rows, cols; bool guard, fold; } RowRead;

static ax_exp rowread_fn(ax_exp ix, void *env)
{
    RowRead *s = env;
    ax_exp r = ax_add(ax_index_get(ix, 0), ax_i64(s->shift)), j = ax_index_get(ix, 1);
    ax_exp v = ax_add(ax_mul(ax_at(s->a, ax_ix2(r, j)), ax_i32(3)), ax_i32(1));
    if (!s->guard) return v;
    ax_exp inside = ax_and(ax_ge(r, ax_i64(0)), ax_lt(r, ax_index_get(ax_shape(s->a), 0)));
    return ax_cond(inside, v, ax_i32(-1));
}

static ax_acc rowread_build(ax_ctx *cx, ax_acc a, const void *env)
{
    RowRead *s = (RowRead *)env;
    s->a = a;
    ax_acc g = ax_generate(cx, ax_ix2(ax_i64(s->rows), ax_i64(s->cols)), rowread_fn, s);
    return s->fold ? ax_fold(ax_fn_add, NULL, ax_i32(0), g) : g;
}

/* Against the interpreter: the same rows' sums, or the same fault and
 * message, when a read outside a is in the branch not taken (no fault),
 * in the branch taken (row past the end; column past the end, where the
 * rows are longer than a's), unguarded, and a is empty. */
DIFF_TEST(row_checked_reads_report_only_real_faults)
{
    const struct { int64_t rows, cols, arows, acols, shift; bool guard; bool fault; } cs[] = {
        {40, 100, 40, 100, 3, true, false},   /* rows past a's end, not taken */
        {40, 100, 40, 100, -5, true, false},  /* rows before a's start, not taken */
        {40, 100, 43, 100, 3, false, false},  /* every read inside */
        {40, 100, 40, 100, 3, false, true},   /* row 37 reads row 40 */
        {40, 103, 40, 100, 0, true, true},    /* rows longer than a's: column 100 */
        {40, 100, 0, 100, 0, true, false},    /* a empty, never read */
        {1, 5, 1, 5, 0, true, false},         /* a row shorter than the lanes */
    };
    for (size_t kf = 0; kf < 2 * sizeof cs / sizeof *cs; kf++) {
        size_t k = kf / 2;
        bool fold = kf % 2 == 0;
        int64_t an = cs[k].arows * cs[k].acols, ash[2] = {cs[k].arows, cs[k].acols};
        int64_t rn = fold ? cs[k].rows : cs[k].rows * cs[k].cols;
        int32_t *x = malloc(sizeof *x * (size_t)(an ? an : 1));
        REQUIRE(x);
        for (int64_t i = 0; i < an; i++) x[i] = (int32_t)(i * 7 % 1000 - 500);
        int32_t *r[2];
        ax_status st[2];
        char msg[2][512];
        RowRead s = {NULL, cs[k].shift, cs[k].rows, cs[k].cols, cs[k].guard, fold};
        for (int b = 0; b < 2; b++)
            r[b] = run_side(be, b, x, an, ash[1], rowread_build, &s, rn, &st[b], msg[b], sizeof msg[b]);
        if (!cs[k].fault) {
            CHECKF(r[0] && r[1], "case %zu%s: interp %s, %s %s", k, fold ? "" : " (generate)", msg[0], be->name, msg[1]);
            if (r[0] && r[1]) CHECKF(!memcmp(r[0], r[1], sizeof(int32_t) * (size_t)rn), "case %zu%s", k, fold ? "" : " (generate)");
        } else {
            CHECKF(!r[0] && !r[1] && st[0] == AX_ERR_INDEX && st[1] == AX_ERR_INDEX, "case %zu%s: %d %d", k,
                   fold ? "" : " (generate)", st[0], st[1]);
            CHECKF(!strcmp(msg[0], msg[1]), "case %zu%s: interp: %s | %s: %s", k, fold ? "" : " (generate)", msg[0], be->name, msg[1]);
        }
        free(r[0]);
        free(r[1]);
        free(x);
    }
}

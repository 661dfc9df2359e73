/* Re-entrancy: what a callback of ax_options (cancel, log, progress) may
 * call on the context whose call ran it (axle.h, "Callbacks and
 * re-entrancy"), and a compiled program's independence of a builder's
 * pending error.  Each refused call is tried from inside a run, on the
 * interpreter and the CPU backend; each allowed one is used and its
 * result checked.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "harness.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static ax_exp twice(ax_exp x, void *env)
{
    (void)env;
    return ax_mul(x, ax_i32(2));
}

static ax_exp hundred(ax_exp x, void *env)
{
    (void)env;
    return ax_mul(x, ax_i32(100));
}

/* map (*2) over parameter 0, an i32 vector */
static ax_acc twice_of_param(ax_ctx *cx)
{
    return ax_map(twice, NULL, ax_param(cx, 0, ax_type_scalar(AX_I32), 1));
}

static ax_array *vec(ax_ctx *cx, int n, int32_t first, int32_t step)
{
    int64_t sh = n;
    ax_array *a = ax_array_new(cx, ax_type_scalar(AX_I32), 1, &sh);
    int32_t *p = a ? ax_array_data(a, 0) : NULL;
    for (int i = 0; p && i < n; i++) p[i] = first + step * i;
    return a;
}

static bool vec_is(ax_array *r, int n, int32_t first, int32_t step)
{
    if (!r || ax_array_rank(r) != 1 || ax_array_extent(r, 0) != n) return false;
    const int32_t *p = ax_array_data(r, 0);
    for (int i = 0; i < n; i++)
        if (p[i] != first + step * i) return false;
    return true;
}

/* What the cancel callback does, and what it saw. */
typedef enum {
    DO_NOTHING, DO_RUN_SHARED, DO_RUN_OTHER_CTX, DO_READ, DO_COMPILE, DO_RUN, DO_DUMP, DO_RESET, DO_CTX_FREE,
    DO_PROGRAM_FREE, DO_CLEAR_ERROR, DO_ARRAY_NEW, DO_BUILD, DO_NONE_LEFT
} Action;

static const char *const action_call[] = {
    "", "ax_program_run_with", "", "", "ax_compile", "ax_run", "ax_dump", "ax_ctx_reset", "ax_ctx_free",
    "ax_program_free", "ax_clear_error", "ax_array_new", "ax_use",
};

typedef struct Probe {
    ax_ctx *cx;
    Action act;
    int calls;              /* callback calls */
    bool done;              /* the action was taken (once) */
    ax_program *inner;      /* DO_RUN_SHARED, DO_PROGRAM_FREE */
    ax_array *inner_arg;
    int inner_rc;           /* what the inner call returned (-1, n, or 0/1 for NULL/non-NULL) */
    ax_status inner_status;
    char inner_msg[1024];
    bool inner_ok;          /* DO_RUN_OTHER_CTX, DO_READ: the inner work's result was right */
} Probe;

static bool on_cancel(void *arg)
{
    Probe *pb = arg;
    pb->calls++;
    if (pb->done || pb->act == DO_NOTHING) return false;
    pb->done = true;
    ax_ctx *cx = pb->cx;
    switch (pb->act) {
    case DO_RUN_SHARED: {
        ax_array *out = NULL;
        pb->inner_rc = ax_program_run_with(pb->inner, &pb->inner_arg, 1, &out, 1);
        if (pb->inner_rc > 0) ax_array_release(out);
        break;
    }
    case DO_RUN_OTHER_CTX: {
        /* a whole compile and run on another context: allowed */
        ax_options o = {.backend = AX_BACKEND_INTERP};
        ax_ctx *c2 = ax_ctx_new(&o);
        ax_array *a = vec(c2, 5, 1, 1);
        ax_array *r = ax_run(c2, ax_map(hundred, NULL, ax_use(c2, a)));
        pb->inner_ok = vec_is(r, 5, 100, 100);
        ax_array_release(r);
        ax_array_release(a);
        ax_ctx_free(c2);
        return false;
    }
    case DO_READ:
        /* reading the running context: allowed */
        pb->inner_ok = ax_status_of(cx) == AX_OK && ax_error(cx) != NULL && ax_ctx_options(cx) != NULL &&
                       ax_program_params(pb->inner) == 1 && ax_program_stats(pb->inner) != NULL &&
                       ax_program_type(pb->inner) != NULL && ax_array_rank(pb->inner_arg) == 1 &&
                       ax_array_extent(pb->inner_arg, 0) == 4 &&
                       ((const int32_t *)ax_array_data(pb->inner_arg, 0))[3] == 400 &&
                       ax_exp_ok(ax_add(ax_i32(1), ax_i32(2)));
        return false;
    case DO_COMPILE: {
        ax_program *p = ax_compile(cx, NULL);
        pb->inner_rc = p != NULL;
        ax_program_free(p);
        break;
    }
    case DO_RUN: {
        ax_array *r = ax_run(cx, NULL);
        pb->inner_rc = r != NULL;
        ax_array_release(r);
        break;
    }
    case DO_DUMP: {
        char *s = ax_dump(cx, NULL, "fusion", false);
        pb->inner_rc = s != NULL;
        free(s);
        break;
    }
    case DO_RESET: ax_ctx_reset(cx); break;
    case DO_CTX_FREE: ax_ctx_free(cx); break;
    case DO_PROGRAM_FREE: ax_program_free(pb->inner); break;
    case DO_CLEAR_ERROR: ax_clear_error(cx); break;
    case DO_ARRAY_NEW: {
        int64_t n = 3;
        ax_array *a = ax_array_new(cx, ax_type_scalar(AX_I32), 1, &n);
        pb->inner_rc = a != NULL;
        ax_array_release(a);
        break;
    }
    case DO_BUILD: {
        ax_acc t = ax_map(twice, NULL, ax_use(cx, pb->inner_arg));
        pb->inner_rc = t != NULL;
        break;
    }
    default: break;
    }
    pb->inner_status = ax_status_of(cx);
    snprintf(pb->inner_msg, sizeof pb->inner_msg, "%s", ax_error(cx));
    return false;
}

static const ax_backend_kind backends[] = {AX_BACKEND_INTERP, AX_BACKEND_CPU};

static ax_ctx *probe_ctx(ax_backend_kind be, Probe *pb)
{
    ax_options o = {.backend = be, .cancel = on_cancel, .cancel_arg = pb, .threads = 2};
    ax_ctx *cx = ax_ctx_new(&o);
    pb->cx = cx;
    return cx;
}

/* The review's reproducer: a run started from the cancel callback of a
 * run of a program that shares its compilation (the program memory)
 * re-pointed the shared parameter nodes, and the outer run computed on
 * the inner run's arrays (200 400 600 800 instead of 2 4 6 8), without an
 * error.  Now the inner run is refused, the outer run fails saying why,
 * and nothing of the outer run's arrays is mixed up. */
TEST(reentry_run_from_cancel_on_shared_compilation_is_refused)
{
    for (size_t b = 0; b < sizeof backends / sizeof *backends; b++) {
        Probe pb = {.act = DO_RUN_SHARED};
        ax_ctx *cx = probe_ctx(backends[b], &pb);
        REQUIRE(cx);
        ax_program *outer = ax_compile(cx, twice_of_param(cx));
        ax_program *inner = ax_compile(cx, twice_of_param(cx));   /* an equal graph: a memory hit */
        REQUIRE(outer && inner);
        CHECK(ax_program_stats(inner)->reused);
        ax_array *x = vec(cx, 4, 1, 1), *y = vec(cx, 4, 100, 100);
        pb.inner = inner;
        pb.inner_arg = y;
        ax_array *out = NULL;
        int n = ax_program_run_with(outer, &x, 1, &out, 1);
        CHECK(pb.calls > 0);
        CHECK(pb.done);
        CHECK_EQ_I(pb.inner_rc, -1);
        CHECK_EQ_I(pb.inner_status, AX_ERR_ARG);
        CHECKF(strstr(pb.inner_msg, "ax_program_run_with") && strstr(pb.inner_msg, "cancel"), "%s", pb.inner_msg);
        CHECK_EQ_I(n, -1);
        CHECK_EQ_I(ax_status_of(cx), AX_ERR_ARG);
        CHECKF(strstr(ax_error(cx), "cancel callback called ax_program_run_with"), "%s", ax_error(cx));
        if (n > 0) ax_array_release(out);
        /* the context, and both programs, work again */
        pb.act = DO_NOTHING;
        out = NULL;
        n = ax_program_run_with(outer, &x, 1, &out, 1);
        CHECK_EQ_I(n, 1);
        CHECKF(n == 1 && vec_is(out, 4, 2, 2), "outer after the refusal");
        if (n == 1) ax_array_release(out);
        n = ax_program_run_with(inner, &y, 1, &out, 1);
        CHECK_EQ_I(n, 1);
        CHECKF(n == 1 && vec_is(out, 4, 200, 200), "inner after the refusal");
        if (n == 1) ax_array_release(out);
        ax_array_release(x);
        ax_array_release(y);
        ax_program_free(inner);
        ax_program_free(outer);
        ax_ctx_free(cx);
    }
}

/* Every call that would change the running context, from the cancel
 * callback: refused with a message naming it; the outer run fails with it;
 * the context is usable afterwards (nothing freed, reset or leaked). */
TEST(reentry_calls_that_change_the_context_are_refused)
{
    for (size_t b = 0; b < sizeof backends / sizeof *backends; b++)
        for (int act = DO_COMPILE; act < DO_NONE_LEFT; act++) {
            Probe pb = {.act = (Action)act};
            ax_ctx *cx = probe_ctx(backends[b], &pb);
            REQUIRE(cx);
            ax_program *pr = ax_compile(cx, twice_of_param(cx));
            REQUIRE(pr);
            ax_array *x = vec(cx, 4, 1, 1);
            pb.inner = pr;
            pb.inner_arg = x;
            pb.inner_rc = -7;
            ax_array *out = NULL;
            int n = ax_program_run_with(pr, &x, 1, &out, 1);
            CHECKF(pb.done, "%s", action_call[act]);
            if (act == DO_COMPILE || act == DO_RUN || act == DO_DUMP || act == DO_ARRAY_NEW || act == DO_BUILD)
                CHECKF(pb.inner_rc == 0, "%s returned something", action_call[act]);
            CHECKF(pb.inner_status == AX_ERR_ARG && strstr(pb.inner_msg, action_call[act]) &&
                   strstr(pb.inner_msg, "cancel"), "%s: %s", action_call[act], pb.inner_msg);
            CHECKF(n == -1, "%s: the outer run returned %d", action_call[act], n);
            if (n > 0) ax_array_release(out);
            CHECKF(strstr(ax_error(cx), action_call[act]), "%s: outer: %s", action_call[act], ax_error(cx));
            /* the context and the program are intact */
            pb.act = DO_NOTHING;
            n = ax_program_run_with(pr, &x, 1, &out, 1);
            CHECKF(n == 1 && vec_is(out, 4, 2, 2), "%s: after: %d %s", action_call[act], n, ax_error(cx));
            if (n == 1) ax_array_release(out);
            ax_array_release(x);
            ax_program_free(pr);
            ax_ctx_free(cx);
        }
}

/* Allowed from the callback: reading the running context, and any call
 * on another context (a whole compile and run). */
TEST(reentry_reads_and_other_contexts_are_allowed)
{
    for (size_t b = 0; b < sizeof backends / sizeof *backends; b++)
        for (int act = DO_RUN_OTHER_CTX; act <= DO_READ; act++) {
            Probe pb = {.act = (Action)act};
            ax_ctx *cx = probe_ctx(backends[b], &pb);
            REQUIRE(cx);
            ax_program *pr = ax_compile(cx, twice_of_param(cx));
            REQUIRE(pr);
            ax_array *x = vec(cx, 4, 100, 100);
            pb.inner = pr;
            pb.inner_arg = x;
            ax_array *out = NULL;
            int n = ax_program_run_with(pr, &x, 1, &out, 1);
            CHECK(pb.done);
            CHECKF(pb.inner_ok, "action %d", act);
            CHECKF(n == 1 && vec_is(out, 4, 200, 200), "action %d: %d %s", act, n, ax_error(cx));
            if (n == 1) ax_array_release(out);
            ax_array_release(x);
            ax_program_free(pr);
            ax_ctx_free(cx);
        }
}

/* The log callback: a notice given during a compile (no C compiler, so
 * the default backend falls back to the interpreter). */
typedef struct LogProbe {
    ax_ctx *cx;
    int calls;
    bool refused;
    char msg[1024];
} LogProbe;

static void on_log(void *arg, const char *message)
{
    LogProbe *lp = arg;
    (void)message;
    lp->calls++;
    ax_array *r = ax_run(lp->cx, NULL);
    lp->refused = r == NULL && ax_status_of(lp->cx) == AX_ERR_ARG;
    snprintf(lp->msg, sizeof lp->msg, "%s", ax_error(lp->cx));
    ax_array_release(r);
}

TEST(reentry_from_the_log_callback_is_refused)
{
    LogProbe lp = {0};
    ax_options o = {.cc = "/nonexistent/axle-no-cc", .log = on_log, .log_arg = &lp};
    ax_ctx *cx = ax_ctx_new(&o);
    REQUIRE(cx);
    lp.cx = cx;
    ax_array *x = vec(cx, 4, 1, 1);
    ax_array *r = ax_run(cx, ax_map(twice, NULL, ax_use(cx, x)));
    CHECK_EQ_I(lp.calls, 1);
    CHECKF(lp.refused && strstr(lp.msg, "ax_run") && strstr(lp.msg, "log"), "%s", lp.msg);
    CHECK(r == NULL);
    CHECKF(strstr(ax_error(cx), "log callback called ax_run"), "%s", ax_error(cx));
    ax_array_release(r);
    /* usable again: the notice is given once, so this run is clean */
    r = ax_run(cx, ax_map(twice, NULL, ax_use(cx, x)));
    CHECKF(vec_is(r, 4, 2, 2), "%s", ax_error(cx));
    ax_array_release(r);
    ax_array_release(x);
    ax_ctx_free(cx);
}

/* The progress callback, called while the C compiler builds a program's
 * kernels (no disk cache, so they are compiled). */
typedef struct ProgProbe {
    ax_ctx *cx;
    ax_program *other;
    ax_array *arg;
    int calls, refused;
} ProgProbe;

static void on_progress(void *arg, int done, int total)
{
    ProgProbe *pp = arg;
    (void)done;
    (void)total;
    pp->calls++;
    ax_array *out = NULL;
    int n = ax_program_run_with(pp->other, &pp->arg, 1, &out, 1);
    if (n < 0 && ax_status_of(pp->cx) == AX_ERR_ARG && strstr(ax_error(pp->cx), "progress")) pp->refused++;
    if (n > 0) ax_array_release(out);
}

TEST(reentry_from_the_progress_callback_is_refused)
{
    ProgProbe pp = {0};
    ax_options o = {.backend = AX_BACKEND_CPU, .no_cache = true, .progress = on_progress, .progress_arg = &pp};
    ax_ctx *cx = ax_ctx_new(&o);
    REQUIRE(cx);
    pp.cx = cx;
    /* the program the callback tries to run: compiled before the callback is set up to do so */
    ax_program *p0 = ax_compile(cx, ax_map(hundred, NULL, ax_param(cx, 0, ax_type_scalar(AX_I32), 1)));
    REQUIRE(p0);
    pp.calls = 0;
    pp.other = p0;
    pp.arg = vec(cx, 3, 1, 1);
    ax_program *p1 = ax_compile(cx, twice_of_param(cx));
    CHECK(pp.calls > 0);
    CHECK_EQ_I(pp.refused, pp.calls);
    CHECK(p1 == NULL);
    CHECKF(strstr(ax_error(cx), "progress callback called ax_program_run_with"), "%s", ax_error(cx));
    ax_program_free(p1);
    ax_array *out = NULL;
    CHECK_EQ_I(ax_program_run_with(p0, &pp.arg, 1, &out, 1), 1);
    CHECK(vec_is(out, 3, 100, 100));
    ax_array_release(out);
    ax_array_release(pp.arg);
    ax_program_free(p0);
    ax_ctx_free(cx);
}

/* ------------------------------------------------ pending builder errors */

static ax_exp past_end(ax_exp x, void *env)
{
    ax_acc a = *(ax_acc *)env;
    return ax_add(x, ax_at_linear(a, ax_i64(1000)));
}

/* The review's reproducer: ax_compile, ax_ctx_reset, a builder misuse
 * (ax_add of an i32 and an f32), then running the compiled program
 * failed with the builder's message.  A compiled program does not depend
 * on terms being built: it runs, and the builder's error is still the
 * one the next ax_run of the failed terms reports. */
TEST(compiled_program_runs_while_a_builder_error_is_pending)
{
    for (size_t b = 0; b < sizeof backends / sizeof *backends; b++) {
        ax_options o = {.backend = backends[b]};
        ax_ctx *cx = ax_ctx_new(&o);
        REQUIRE(cx);
        ax_program *pr = ax_compile(cx, twice_of_param(cx));
        REQUIRE(pr);
        ax_ctx_reset(cx);
        ax_exp bad = ax_add(ax_param_exp(cx, 3, ax_type_scalar(AX_I32)), ax_f32(1));
        CHECK(!ax_exp_ok(bad));
        CHECK_EQ_I(ax_status_of(cx), AX_ERR_BUILD);
        char builder_msg[1024];
        snprintf(builder_msg, sizeof builder_msg, "%s", ax_error(cx));
        CHECKF(strstr(builder_msg, "ax_add"), "%s", builder_msg);
        ax_array *x = vec(cx, 5, 1, 1), *out = NULL;
        int n = ax_program_run_with(pr, &x, 1, &out, 1);
        CHECKF(n == 1 && vec_is(out, 5, 2, 2), "%d: %s", n, ax_error(cx));
        if (n == 1) ax_array_release(out);
        /* the builder's error is still pending, with its message */
        CHECK_EQ_I(ax_status_of(cx), AX_ERR_BUILD);
        CHECK(!strcmp(ax_error(cx), builder_msg));
        /* a run that fails reports its own error; the builder's is pending again after it */
        ax_acc xs = ax_use(cx, x);
        ax_program *oob = ax_compile(cx, ax_map(past_end, &xs, xs));
        CHECK(oob == NULL);   /* the pending builder error is reported by ax_compile */
        CHECKF(strstr(ax_error(cx), "ax_add"), "%s", ax_error(cx));
        ax_ctx_reset(cx);
        xs = ax_use(cx, x);
        oob = ax_compile(cx, ax_map(past_end, &xs, xs));
        REQUIRE(oob);
        bad = ax_add(ax_param_exp(cx, 3, ax_type_scalar(AX_I32)), ax_f32(1));
        CHECK(!ax_exp_ok(bad));
        n = ax_program_run(oob, &out, 1);
        CHECK_EQ_I(n, -1);
        CHECK_EQ_I(ax_status_of(cx), AX_ERR_INDEX);
        CHECKF(!strstr(ax_error(cx), "ax_add"), "%s", ax_error(cx));
        ax_array *r = ax_run(cx, ax_unit(cx, bad));
        CHECK(r == NULL);
        CHECK_EQ_I(ax_status_of(cx), AX_ERR_BUILD);
        CHECKF(strstr(ax_error(cx), "ax_add"), "%s", ax_error(cx));
        /* and after that report, runs are clean */
        n = ax_program_run_with(pr, &x, 1, &out, 1);
        CHECK_EQ_I(n, 1);
        if (n == 1) ax_array_release(out);
        CHECK_EQ_I(ax_status_of(cx), AX_OK);
        ax_array_release(x);
        ax_program_free(oob);
        ax_program_free(pr);
        ax_ctx_free(cx);
    }
}

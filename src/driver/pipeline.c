/*
 * The pipeline (docs/ARCHITECTURE.md, "The pipeline"): a source graph
 * becomes an optimised core program by sharing recovery and the passes
 * below, which a backend then prepares and runs; and the choice of that
 * backend, made here once for every caller (ax_compile, the host rerun
 * after a device fault, libaxle_mpi).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "driver_int.h"
#include "opt/opt.h"
#include "backend/gpu/gpu.h"
#include "backend/cpu/cg.h"
#include "backend/interp/interp.h"
#include "frontend/frontend.h"
#include <stdlib.h>
#include <string.h>

/* The backends in order of preference for AX_BACKEND_DEFAULT (the GPU
 * backends only when asked for by name: their `available` says so). */
static const Backend *const backends[] = { &backend_cpu, &backend_interp, &backend_cuda, &backend_opencl };

const Backend *backend_pick(ax_ctx *cx, ax_backend_kind want, bool *fallback)
{
    for (size_t i = 0; i < sizeof backends / sizeof *backends; i++) {
        const Backend *b = backends[i];
        if (want != AX_BACKEND_DEFAULT && b->kind != want) continue;
        if (b->available && !b->available(cx)) {
            if (b->kind != AX_BACKEND_CPU) continue;
            /* The default's first choice has no C compiler: say so, once
             * (or fail, when strict), rather than run tens to hundreds of times slower in
             * silence. */
            const char *cc = cx->opt.cc ? cx->opt.cc : "cc";
            if (cx->opt.strict) {
                ctx_error(cx, AX_ERR_COMPILE, "ax_run: no C compiler: '%s' was not found (install gcc or "
                          "clang, or set AXLE_CC)", cc);
                return NULL;
            }
            ctx_notice(cx, NOTICE_NO_CC, "no C compiler: '%s' was not found, so programs run on the reference "
                       "interpreter, tens to hundreds of times slower (install gcc or clang, or set AXLE_CC)", cc);
            *fallback = true;
            continue;
        }
        return b;
    }
    static const char *const names[] = {"default", "interp", "cpu", "cuda", "opencl"};
    ctx_error(cx, AX_ERR_BACKEND, "ax_run: the %s backend is not available in this build or on this machine",
              (unsigned)want < 5 ? names[want] : "requested");
    return NULL;
}

const Backend *backend_host(ax_ctx *cx)
{
    return backend_cpu.available(cx) ? &backend_cpu : &backend_interp;
}

void verify_or_fail(ax_ctx *cx, Program *p, const char *after)
{
    char msg[512];
    if (ir_verify(p, msg, sizeof msg) != 0)
        ctx_error(cx, AX_ERR_BUILD, "ax_run: the program is ill-formed after %s: %s", after, msg);
}

double pass_done(ax_ctx *cx, Program *p, const char *name, double t0)
{
    if (cx->status == AX_OK && (cx->opt.debug & AX_DEBUG_VERIFY)) verify_or_fail(cx, p, name);
    if (cx->status == AX_OK && (cx->opt.debug & AX_DEBUG_DUMP)) {
        fprintf(stderr, "axle: after %s:\n", name);
        ir_print(stderr, p->root);
        fputc('\n', stderr);
    }
    return now_ms() - t0;
}

/* The planner: the loop graph, the clustering the ILP or the greedy
 * planner picks for it (src/opt/ilp.c), and the rewrites that carry it
 * out (src/opt/plan*.c).  The rewrites' count, or -1 with an error on cx;
 * the choice in *ch when asked for (the caller frees it). */
int plan(ax_ctx *cx, Program *p, PlanLog *log, PlanChoice *ch)
{
    PlanChoice own;
    if (!ch) ch = &own;
    /* (without the graph, as without CBC: the greedy planner, which needs
     * none) */
    PlanGraph *g = cx->planner == PLANNER_GREEDY ? NULL : plan_graph(p, false);
    plan_choose(cx, g, ch, false);
    plan_graph_free(g);
    int c = opt_plan(cx, p, log, ch->cl);
    if (ch == &own) plan_choice_free(&own);
    return c;
}

/* ---------------------------------------------------------------- the passes
 *
 * The front end's pipeline, one pass a line (QBE's main.c and Futhark's
 * Passes.hs keep theirs so): after sharing recovery, the optimiser's
 * passes in the order of McDonell's thesis (s.5: simplify, including CSE,
 * before fusion; fuse; simplify again to clean up what fusion composed),
 * then axle's own: equal array terms built apart computed once (acse.c),
 * array terms that do not change in an awhile body hoisted before the
 * loop (licm.c), multi-generator loops (the planner, plan.c), and the
 * simplifier over what those two made.
 *
 * Each pass runs unless one of its `off` switches is set (AX_DEBUG_NO_*),
 * and only up to the stage a dump asks for.  A COUNTS pass reports how
 * many rewrites it made; an AFTER_CHANGE pass runs only when one of those
 * since the last AFTER_CHANGE pass made any.  After each pass that ran,
 * AXLE_DEBUG=verify verifies the program and AXLE_DEBUG=dump prints it
 * under the pass's name; AXLE_DEBUG=timing gives each pass's time. */

typedef enum { PASS_ALWAYS, PASS_COUNTS, PASS_AFTER_CHANGE } PassKind;

typedef struct Pass {
    const char *name;
    unsigned off;             /* AX_DEBUG_* switches, any of which turns it off */
    Upto stage;               /* the first dump stage that shows it */
    /* rewrites made (>= 0; 0 for passes that do not count), or -1 with an error on cx */
    int (*run)(ax_ctx *cx, Program *p, unsigned dbg);
    PassKind kind;
} Pass;

static int pass_simplify(ax_ctx *cx, Program *p, unsigned dbg)
{
    return simplify_program(cx, p, !(dbg & AX_DEBUG_NO_CSE));
}

static int pass_fuse(ax_ctx *cx, Program *p, unsigned dbg)
{
    return fuse_program(cx, p, dbg);
}

static int pass_filter_counts(ax_ctx *cx, Program *p, unsigned dbg)
{
    (void)dbg;
    return opt_filter_counts(cx, p) < 0 ? -1 : 0;
}

static int pass_drop_compute(ax_ctx *cx, Program *p, unsigned dbg)
{
    (void)dbg;
    return opt_drop_compute(cx, p);
}

static int pass_array_cse(ax_ctx *cx, Program *p, unsigned dbg)
{
    (void)dbg;
    bool changed = false;
    return opt_array_cse(cx, p, &changed) == 0 ? 0 : -1;
}

static int pass_licm_nested(ax_ctx *cx, Program *p, unsigned dbg)
{
    (void)dbg;
    return opt_licm(cx, p, true);
}

static int pass_licm(ax_ctx *cx, Program *p, unsigned dbg)
{
    (void)dbg;
    return opt_licm(cx, p, false);
}

static int pass_plan(ax_ctx *cx, Program *p, unsigned dbg)
{
    (void)dbg;
    return plan(cx, p, NULL, NULL);
}

enum {
    OFF_FUSED = AX_DEBUG_NO_FUSION   /* the passes after fusion are fusion's */
};

static const Pass passes[] = {
    {"simplify",                   AX_DEBUG_NO_SIMPLIFY,                                UPTO_SIMPLIFY, pass_simplify,  PASS_ALWAYS},
    {"filter counts",              AX_DEBUG_NO_FUSION | AX_DEBUG_NO_PLANNER,            UPTO_FUSION,   pass_filter_counts, PASS_ALWAYS},
    {"loop-invariant terms",       OFF_FUSED | AX_DEBUG_NO_LICM,                        UPTO_FUSION,   pass_licm_nested, PASS_COUNTS},
    {"fusion",                     AX_DEBUG_NO_FUSION,                                  UPTO_FUSION,   pass_fuse,      PASS_ALWAYS},
    {"compute marks",              0,                                                   UPTO_FUSION,   pass_drop_compute, PASS_ALWAYS},
    {"array cse",                  OFF_FUSED | AX_DEBUG_NO_CSE | AX_DEBUG_NO_SIMPLIFY,  UPTO_FUSION,   pass_array_cse, PASS_ALWAYS},
    {"simplify after fusion",      OFF_FUSED | AX_DEBUG_NO_SIMPLIFY,                    UPTO_FUSION,   pass_simplify,  PASS_ALWAYS},
    {"loop-invariant code motion", OFF_FUSED | AX_DEBUG_NO_LICM,                        UPTO_FUSION,   pass_licm,      PASS_COUNTS},
    {"planner",                    OFF_FUSED | AX_DEBUG_NO_PLANNER,                     UPTO_FUSION,   pass_plan,      PASS_COUNTS},
    {"simplify after the planner", OFF_FUSED | AX_DEBUG_NO_SIMPLIFY,                    UPTO_FUSION,   pass_simplify,  PASS_AFTER_CHANGE},
};

/* Sharing recovery, then the passes above up to stage `upto`, under cx's
 * switches and `off`.  Returns NULL with an error on cx. */
Program *front_end(ax_ctx *cx, ax_acc a, ax_stats *st, Upto upto, unsigned off)
{
    unsigned dbg = cx->opt.debug | off;
    double t0 = now_ms();
    Program *p = sharing_recover(cx, a, !(dbg & AX_DEBUG_NO_SHARING));
    if (!p) {
        if (cx->status == AX_OK) ctx_error(cx, AX_ERR_NOMEM, "ax_run: sharing recovery failed");
        if (cx->status == AX_ERR_NOMEM) budget_explain(&cx->compile_mem, cx->msg, sizeof cx->msg);
        return NULL;
    }
    /* The verifier also checks the user's program (for instance a variable
     * smuggled out of its callback), so it always runs here. */
    verify_or_fail(cx, p, "sharing recovery");
    st->nodes = ir_count_nodes(p->root);
    st->lets = ir_count_lets(p->root);
    if (cx->status == AX_OK) st->sharing_ms = pass_done(cx, p, "sharing recovery", t0);
    t0 = now_ms();
    int changed = 0;
    for (size_t k = 0; k < sizeof passes / sizeof *passes && cx->status == AX_OK; k++) {
        const Pass *ps = &passes[k];
        if (ps->stage > upto || (dbg & ps->off)) continue;
        if (ps->kind == PASS_AFTER_CHANGE) {
            if (changed == 0) continue;
            changed = 0;
        }
        double t1 = now_ms();
        int c = ps->run(cx, p, dbg);
        if (c < 0 || cx->status != AX_OK) break;
        if (ps->kind == PASS_COUNTS) changed += c;
        double ms = pass_done(cx, p, ps->name, t1);
        if (dbg & AX_DEBUG_TIMING) fprintf(stderr, "axle: timing: pass %s %.3f ms\n", ps->name, ms);
    }
    if (cx->status != AX_OK) {
        if (cx->status == AX_ERR_NOMEM) budget_explain(&cx->compile_mem, cx->msg, sizeof cx->msg);
        program_free(p);
        return NULL;
    }
    /* the compiled program's IR outlives its compile: no longer charged */
    arena_detach(&p->arena);
    st->optimise_ms = now_ms() - t0;
    if (upto >= UPTO_FUSION) schedule_stats(p, &st->kernels, &st->intermediates);
    return p;
}

/* The optimised core program of a, as ax_compile makes it before a
 * backend sees it, for an executor that walks the program itself
 * (src/mpi); ir.h.  The caller has entered cx and sized the stack.  off:
 * AX_DEBUG_NO_* switches of passes to skip on top of cx's own. */
Program *driver_optimise(ax_ctx *cx, ax_acc a, ax_stats *st, unsigned off)
{
    if (cx->status == AX_OK && !a) ctx_error(cx, AX_ERR_BUILD, "ax_run: the computation is NULL");
    if (cx->status == AX_OK && a->cx != cx) ctx_error(cx, AX_ERR_BUILD, "ax_run: the computation belongs to another context");
    if (cx->status != AX_OK) return NULL;
    return front_end(cx, a, st, UPTO_FUSION, off);
}

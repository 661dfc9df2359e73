/*
 * ax_dump: a program at a stage of the pipeline, as text or JSON (the
 * source graph, after sharing recovery, after the simplifier, after
 * fusion and the later passes, the planner's loop graph and clusters,
 * Graphviz, the generated C, CUDA or OpenCL text, NVRTC's PTX).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "driver_int.h"
#include "opt/opt.h"
#include "opt/opt_dot.h"
#include "backend/cpu/cg.h"
#include "backend/gpu/gpu.h"
#include "driver/driver.h"
#include <stdlib.h>
#include <string.h>

typedef struct DumpJob {
    ax_ctx *cx;
    ax_acc a;
    const char *stage;
    bool json;
    char *text;
} DumpJob;

/* The "dot" stage: p as fusion gets it, then fused (as front_end does), drawn
 * before and after as Graphviz (src/opt/dot.c). */
static void dump_dot(ax_ctx *cx, Program *p, FILE *f)
{
    unsigned dbg = cx->opt.debug;
    Node *before = p->root;
    if (!(dbg & AX_DEBUG_NO_FUSION)) {
        double t = now_ms();
        if (fuse_program(cx, p, dbg) == 0) pass_done(cx, p, "fusion", t);
        if (cx->status == AX_OK && !(dbg & AX_DEBUG_NO_SIMPLIFY)) {
            t = now_ms();
            if (simplify_program(cx, p, !(dbg & AX_DEBUG_NO_CSE)) == 0) pass_done(cx, p, "simplify after fusion", t);
        }
    }
    if (cx->status == AX_OK) ir_print_dot(f, before, p->root);
}

/* The "ptx" stage: the CUDA text compiled by NVRTC (no GPU needed), for
 * AXLE_CUDA_ARCH (e.g. 80; default 90), then ptxas' report on it:
 * registers and spills per kernel. */
static void dump_ptx(ax_ctx *cx, Program *p, FILE *f)
{
    char *text = gpu_text(cx, p, GPU_CUDA);
    if (!text) return;
    const char *e = getenv("AXLE_CUDA_ARCH");
    int arch = e && atoi(e) >= 50 ? atoi(e) : 90;
    char *ptx = NULL, *info = NULL, err[2048];
    if (cuda_compile_check(text, strlen(text), arch, NULL, &ptx, &info, err, sizeof err) == 0) {
        fprintf(f, "// ptxas report for sm_%d:\n", arch);
        for (char *l = info; l && *l;) {
            size_t n = strcspn(l, "\n");
            if (n) fprintf(f, "// %.*s\n", (int)n, l);
            l += n + (l[n] == '\n');
        }
        fputs(ptx, f);
    } else {
        ctx_error(cx, AX_ERR_COMPILE, "ax_dump: %s", err);
    }
    free(ptx);
    free(info);
    free(text);
}

static char *dump(ax_ctx *cx, ax_acc a, const char *stage, bool json);

static void dump_job(void *p)
{
    DumpJob *j = p;
    j->text = dump(j->cx, j->a, j->stage, j->json);
}

char *ax_dump(ax_ctx *cx, ax_acc a, const char *stage, bool json)
{
    if (!cx || !ctx_enter_as(cx, "ax_dump")) return NULL;
    DumpJob j = {.cx = cx, .a = a, .stage = stage, .json = json};
    int64_t depth = source_depth(cx, a, "ax_dump");
    if (depth >= 0 && run_deep(cx, depth, "ax_dump", dump_job, &j) != 0) settle_error(cx);
    char *r = j.text;
    if (ctx_leave_report(cx, "ax_dump")) {
        free(r);
        return NULL;
    }
    return r;
}

static char *dump(ax_ctx *cx, ax_acc a, const char *stage, bool json)
{
    if (cx->status == AX_OK && (!a || !stage)) ctx_error(cx, AX_ERR_ARG, "ax_dump: NULL computation or stage");
    if (cx->status != AX_OK) {
        settle_error(cx);
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *f = ax__open_memstream(&buf, &len);
    if (!f) {
        ctx_error(cx, AX_ERR_NOMEM, "ax_dump: out of memory");
        settle_error(cx);
        return NULL;
    }
    Program *p = NULL;
    if (!strcmp(stage, "source")) {
        if (json) ir_print_json(f, "", stage, a);
        else ir_print(f, a);
    } else {
        static const struct { const char *name; Upto upto; } stages[] = {
            {"sharing", UPTO_SHARING}, {"simplify", UPTO_SIMPLIFY}, {"fusion", UPTO_FUSION},
            {"kernels", UPTO_FUSION}, {"c", UPTO_FUSION}, {"dot", UPTO_SIMPLIFY},
            {"cuda", UPTO_FUSION}, {"opencl", UPTO_FUSION}, {"ptx", UPTO_FUSION}, {"plan", UPTO_FUSION},
        };
        int k = -1;
        for (int i = 0; i < (int)(sizeof stages / sizeof *stages); i++)
            if (!strcmp(stage, stages[i].name)) k = i;
        ax_stats st;
        memset(&st, 0, sizeof st);
        if (k < 0)
            ctx_error(cx, AX_ERR_ARG, "ax_dump: unknown stage \"%s\" (known: source, sharing, simplify, "
                      "fusion, kernels, plan, c, cuda, opencl, ptx, dot)", stage);
        else if (!strcmp(stage, "plan")) {
            /* the loop graph as Accelerate's fusion leaves it, then the
             * planner's clustering of it (src/opt/plangraph.c) */
            unsigned was = cx->opt.debug;
            cx->opt.debug |= AX_DEBUG_NO_PLANNER;
            p = front_end(cx, a, &st, UPTO_FUSION, 0);
            cx->opt.debug = was;
            PlanGraph *g = p ? plan_graph(p, true) : NULL;
            PlanLog *log = g ? ax__calloc(1, sizeof *log) : NULL;
            if (p && !log) ctx_error(cx, AX_ERR_NOMEM, "ax_dump: out of memory");
            if (log) {
                bool on = !(was & AX_DEBUG_NO_PLANNER);
                PlanChoice ch;
                memset(&ch, 0, sizeof ch);
                if (on) plan_choose(cx, g, &ch, true);
                /* fusion's cost model decided before the planner: its notes first */
                if (!json && p->notes) fprintf(f, "fusion's cost model:\n%s\n", p->notes);
                if (!on || opt_plan(cx, p, log, ch.cl) >= 0) plan_graph_print(f, g, log, json, on ? &ch : NULL);
                plan_choice_free(&ch);
            }
            free(log);
            plan_graph_free(g);
        } else if ((p = front_end(cx, a, &st, stages[k].upto, 0))) {
            if (!strcmp(stage, "dot")) {
                dump_dot(cx, p, f);
            } else if (!strcmp(stage, "c")) {
                /* The C unit the CPU backend generates for the program. */
                char *text = cpu_c_text(cx, p);
                if (text) fputs(text, f);
                free(text);
            } else if (!strcmp(stage, "cuda") || !strcmp(stage, "opencl")) {
                /* The GPU kernel text, with the dialect's prelude. */
                char *text = gpu_text(cx, p, stage[0] == 'c' ? GPU_CUDA : GPU_OPENCL);
                if (text) fputs(text, f);
                free(text);
            } else if (!strcmp(stage, "ptx")) {
                dump_ptx(cx, p, f);
            } else if (json) {
                /* The JSON printer ends with "}\n": splice in the schedule's figures. */
                char *j = NULL;
                size_t jl = 0;
                FILE *g = ax__open_memstream(&j, &jl);
                if (g) {
                    ir_print_json(g, "", stage, p->root);
                    fclose(g);
                    while (jl && (j[jl - 1] == '\n' || j[jl - 1] == '}')) j[--jl] = 0;
                    int64_t kern = -1, inter = -1;
                    if (stages[k].upto == UPTO_FUSION) schedule_stats(p, &kern, &inter);
                    fprintf(f, "%s,\"kernels\":%lld,\"intermediates\":%lld}\n", j, (long long)kern,
                            (long long)inter);
                    free(j);
                }
            } else {
                ir_print(f, p->root);
            }
        }
    }
    fclose(f);
    program_free(p);
    if (cx->status != AX_OK) {
        free(buf);
        settle_error(cx);
        return NULL;
    }
    return buf;
}

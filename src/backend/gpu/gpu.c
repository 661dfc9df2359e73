/*
 * The GPU backends (docs/ARCHITECTURE.md, "The pipeline"): what the CUDA and the
 * OpenCL backend share of their Backend (gpu.h GpuBackendDef): prepare
 * (the program's kernel text, prelude included, built by the device API;
 * its kernels looked up), run (the executor: exec.c), release, and the
 * counters.
 *
 * A fault that a kernel records (gpu_int.h, the fault word) ends the run
 * with AXB_RERUN_ON_HOST (runtime/host.h): the driver runs the program
 * again on a host backend, which reports the fault exactly as it does
 * everywhere: the same message on every backend, and no second checked
 * copy of every kernel to compile.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "gpu_int.h"
#include "bytes.h"
#include "runtime/jit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ context */

bool gpu_counters(ax_ctx *cx, ax_backend_kind kind, GpuCounters *out)
{
    GpuCtx *gc = cx && (unsigned)kind < AX_NBACKENDS ? cx->backend_state[kind] : NULL;
    if (!gc || gc->magic != GPU_CTX_MAGIC || !out) return false;
    *out = gc->counters;
    return true;
}

Jit *gpu_disk_cache(ax_ctx *cx)
{
    if (cx->opt.no_cache) return NULL;
    JitOptions o;
    memset(&o, 0, sizeof o);
    o.cache_dir = cx->opt.cache_dir;
    o.trace = (cx->opt.debug & AX_DEBUG_CACHE) != 0;
    o.version = AX_VERSION_STRING;
    o.size_limit = cx->opt.cache_limit;
    return jit_new(&o);
}

static void prog_release(GpuProg *gp)
{
    free(gp->k);
    if (gp->args && gp->cg)
        for (int i = 0; i < gp->cg->nnodes; i++) free(gp->args[i]);
    free(gp->args);
    free(gp->nargs);
    free(gp->live);
    cg_free(gp->cg);
    free(gp);
}

void gpu_release(void *state)
{
    if (!state) return;
    if (*(int *)state == GPU_CTX_MAGIC) gpu_ctx_release(state);
    else if (*(int *)state == GPU_PROG_MAGIC) prog_release(state);
}

/* ------------------------------------------------------------ prepare */

char *gpu_text(ax_ctx *cx, Program *p, GpuDialect d)
{
    GpuConfig cfg = {.safe = !cx->opt.unsafe};
    char err[1024];
    CgProg *g = gpu_program(p, &cfg, err, sizeof err);
    if (!g) return ctx_error(cx, AX_ERR_BACKEND, "%s", err);
    const char *pre = gpu_prelude(d);
    size_t n = strlen(pre);
    char *s = ax__malloc(n + g->len + 1);
    if (s) {
        memcpy(s, pre, n);
        memcpy(s + n, g->text, g->len + 1);
    } else {
        ctx_error(cx, AX_ERR_NOMEM, "ax_dump: out of memory");
    }
    cg_free(g);
    return s;
}

/* p's kernels generated and built by the device API; stored (n bytes;
 * NULL: none) is the kernel text a saved program carries, which must be
 * what this generator makes of p. */
static int prepare(const GpuBackendDef *def, ax_ctx *cx, Program *p, const unsigned char *stored, size_t n,
                   void **state)
{
    *state = NULL;
    const GpuApi *api = def->api;
    GpuCtx *gc = gpu_ctx_state(def, cx);
    if (!gc) return cx->status != AX_OK ? (int)cx->status : AX_ERR_BACKEND;
    double t0 = gpu_now_ms();
    GpuConfig cfg = {.safe = !cx->opt.unsafe};
    char err[4096];
    CgProg *g = gpu_program(p, &cfg, err, sizeof err);
    if (!g) {
        ctx_error(cx, AX_ERR_BACKEND, "%s", err);
        return AX_ERR_BACKEND;
    }
    /* the prelude, then the kernels */
    const char *pre = gpu_prelude(api->dialect);
    size_t np = strlen(pre);
    char *src = ax__malloc(np + g->len + 1);
    GpuProg *gp = ax__calloc(1, sizeof *gp);
    if (gp) {
        gp->magic = GPU_PROG_MAGIC;
        gp->gc = gc;
        gp->cg = g;
        gp->k = ax__calloc((size_t)g->nnodes + 1, sizeof *gp->k);
        gp->args = ax__calloc((size_t)g->nnodes + 1, sizeof *gp->args);
        gp->nargs = ax__calloc((size_t)g->nnodes + 1, sizeof *gp->nargs);
    } else {
        cg_free(g);
    }
    if (!src || !gp || !gp->k || !gp->args || !gp->nargs) {
        free(src);
        if (gp) prog_release(gp);
        ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", api->name);
        return AX_ERR_NOMEM;
    }
    if (stored && (n != g->len || memcmp(stored, g->text, n))) {
        free(src);
        prog_release(gp);
        ctx_error(cx, AX_ERR_ARG, "ax_program_load: the file's %s kernels are not those this axle makes of its "
                  "program: the file is malformed", api->name);
        return AX_ERR_ARG;
    }
    memcpy(src, pre, np);
    memcpy(src + np, g->text, g->len + 1);
    p->codegen_ms = gpu_now_ms() - t0;
    if (cx->opt.debug & AX_DEBUG_CODE) fprintf(stderr, "axle: generated %s:\n%s\n", api->name, src);
    bool cached = false;
    double t1 = gpu_now_ms();
    void *mod = api->build(gc->d, src, np + g->len, &cached);
    free(src);
    if (!mod) {
        ctx_error(cx, AX_ERR_COMPILE, "%s: %s", api->name, api->errmsg(gc->d));
        prog_release(gp);
        return AX_ERR_COMPILE;
    }
    if (cx->opt.debug & AX_DEBUG_TIMING)
        fprintf(stderr, "axle: timing: %s codegen %.3f ms (%zu bytes), %s %.3f ms\n", api->name, p->codegen_ms,
                g->len, cached ? "cache hit" : "compile", gpu_now_ms() - t1);
    gc->counters.prepared++;
    gc->counters.cached += cached;
    for (int i = 0; i < g->nnodes; i++) {
        const CgNode *cn = &g->nodes[i];
        if (!cn->x) continue;
        int max = 64 + cn->nslot * (AX_MAX_RANK + 1) + cn->nparam;
        for (int s = 0; s < cn->nslot; s++) max += cg_slot_type(cn, s)->elt->width;
        gp->args[i] = ax__malloc(sizeof **gp->args * (size_t)max);
        if (!gp->args[i]) {
            prog_release(gp);
            ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", api->name);
            return AX_ERR_NOMEM;
        }
        gp->nargs[i] = gpu_args(cn, gp->args[i], max);
        for (int r = 0; r < R_NROLE; r++) {
            if (!cn->role[r] || (r == R_SCAN1 && !gc->lookback)) continue;
            char name[64];
            gpu_kernel_name(name, sizeof name, i, (CgRole)r);
            if (!(gp->k[i][r] = api->kernel(gc->d, mod, name))) {
                ctx_error(cx, AX_ERR_BACKEND, "%s: the compiled program lacks %s: %s", api->name, name,
                          api->errmsg(gc->d));
                prog_release(gp);
                return AX_ERR_BACKEND;
            }
        }
    }
    *state = gp;
    return 0;
}

int gpu_prepare(const GpuBackendDef *def, ax_ctx *cx, Program *p, void **state)
{
    return prepare(def, cx, p, NULL, 0, state);
}

/* ------------------------------------------------------------ save, load */

/* A GPU program's part of a saved file: its kernel text (without the
 * dialect's prelude).  The loader generates the kernels of the program
 * again (their arguments' layout comes with them), refuses a file whose
 * text differs, and has the device API build it: the OpenCL driver or
 * NVRTC compiles it there, as at a first compile; no C compiler is
 * needed. */
int gpu_save(ax_ctx *cx, const Program *p, void *state, Bytes *w)
{
    (void)p;
    const GpuProg *gp = state;
    if (!gp || gp->magic != GPU_PROG_MAGIC) {
        ctx_error(cx, AX_ERR_BACKEND, "ax_program_save: the program has no GPU kernels");
        return -1;
    }
    bytes_putv(w, (int64_t)gp->cg->len);
    bytes_put(w, gp->cg->text, gp->cg->len);
    return 0;
}

int gpu_load(const GpuBackendDef *def, ax_ctx *cx, Program *p, Bytes *in, void **state)
{
    size_t n = (size_t)bytes_getv(in, 0, (int64_t)(in->len - in->at));
    const unsigned char *t = bytes_get(in, n);
    if (!t) {
        ctx_error(cx, AX_ERR_ARG, "ax_program_load: the file is malformed (its %s kernels are cut short)",
                  def->api->name);
        return AX_ERR_ARG;
    }
    return prepare(def, cx, p, t, n, state);
}

/* An exported GPU program: the kernel text goes into the program's bytes
 * (gpu_save), and the C has no functions of its own. */
int gpu_export(ax_ctx *cx, const Program *p, void *state, const char *name, Bytes *w, Bytes *k, Bytes *t)
{
    (void)k;
    if (gpu_save(cx, p, state, w)) return -1;
    bytes_printf(t, "/* (a GPU program: its kernels are built by the device's compiler when it loads) */\n"
                    "static const ax_linked_fn %s_fns[] = {{0, 0}};\nstatic const char %s_isa[] = \"\";\n",
                 name, name);
    return 0;
}

/* ------------------------------------------------------------ run */

int gpu_run(const GpuBackendDef *def, ax_ctx *cx, Program *p, void *state, ax_array **out, int max)
{
    GpuProg *gp = state;
    if (!gp || gp->magic != GPU_PROG_MAGIC || !p || !p->root) {
        ctx_error(cx, AX_ERR_BACKEND, "%s: no program to run", def->api->name);
        return -1;
    }
    GpuCtx *gc = gp->gc;
    const GpuApi *api = gc->api;
    gc->faulted = false;
    if (api->zero(gc->d, gc->errbuf, 64)) {
        ctx_error(cx, AX_ERR_BACKEND, "%s: %s", api->name, api->errmsg(gc->d));
        return -1;
    }
    return gpu_exec(gc, gp, cx, p, out, max);
}

/*
 * A context's life: ax_ctx_new (the record, its arenas, its options),
 * ax_ctx_reset (the terms built so far) and ax_ctx_free, which takes down
 * what every layer keeps in it: the programs still compiled (orphaned),
 * the arrays, the backends' state, the planner's and the source keys'
 * tables.  The driver owns this because it is the layer that sees them
 * all.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include "runtime/options.h"
#include "opt/opt.h"
#include "runtime/mvec.h"
#include "driver/driver.h"
#include "frontend/frontend.h"
#include "runtime/array.h"
#include <stdlib.h>

ax_ctx *ax_ctx_new(const ax_options *opt)
{
    ax_ctx *cx = ax__calloc(1, sizeof *cx);
    if (!cx) return NULL;
    if (opt) cx->opt = *opt;
    arena_init(&cx->arena);
    arena_init(&cx->types);
    if (options_apply(cx) != 0) {
        ax_ctx_free(cx);
        return NULL;
    }
    /* a compile's own memory counts against the memory limit, with the
     * arrays in use */
    budget_init(&cx->compile_mem, cx->opt.mem_limit, AX_COMPILE_MEM_LEAST, &cx->mem_used);
    return cx;
}

void ax_ctx_free(ax_ctx *cx)
{
    if (!cx || ctx_refuse_in_callback(cx, "ax_ctx_free")) return;
    /* Programs still compiled in it give up everything but their handle
     * (program.c), before the backends whose state they use go. */
    programs_orphan(cx);
    for (int i = 0; i < cx->nuses; i++) ax_array_release(cx->uses[i]);
    free(cx->uses);
    cx->uses = NULL;
    cx->nuses = 0;
    /* The arrays first: their device copies go back to the GPU backends'
     * state, which is released after them. */
    while (cx->arrays) {
        ax_array *a = cx->arrays;
        a->refs = 1;
        ax_array_release(a);
    }
    for (int i = 0; i < AX_NBACKENDS; i++)
        if (cx->backends[i] && cx->backend_state[i] && cx->backends[i]->release)
            cx->backends[i]->release(cx->backend_state[i]);
    array_spare_clear(cx);
    mvec_close(cx->mvec);
    arena_free(&cx->arena);
    arena_free(&cx->types);
    free(cx->interned);
    free((char *)cx->opt.cc);
    free((char *)cx->opt.cflags);
    free((char *)cx->opt.cache_dir);
    free(cx->scratch);
    free(cx->planner_cbc);
    free(cx->blas);
#ifndef AX_RUNTIME_ONLY
    plan_state_free(cx->plan);
    src_key_scratch_free(cx);
#endif
    free(cx);
}

void ax_ctx_reset(ax_ctx *cx)
{
    if (!cx) return;
    if (!ctx_enter_as(cx, "ax_ctx_reset")) return;
    /* USE nodes hold a reference to their host array; the nodes go with
     * the arena, so their references go too. */
    for (int i = 0; i < cx->nuses; i++) ax_array_release(cx->uses[i]);
    cx->nuses = 0;
    arena_free(&cx->arena);
    arena_init(&cx->arena);
    cx->status = AX_OK;
    cx->last_status = AX_OK;
    cx->held_status = AX_OK;
    cx->msg[0] = 0;
    ctx_leave_report(cx, "ax_ctx_reset");
}

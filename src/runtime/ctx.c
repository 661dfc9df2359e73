/*
 * Contexts: options (with the environment applied), the sticky error, and
 * the arena that owns the terms built in the context.  No global mutable
 * state: everything a run needs hangs off its context.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const struct { const char *name; unsigned flag; } debug_flags[] = {
    {"no-sharing", AX_DEBUG_NO_SHARING}, {"no-fusion", AX_DEBUG_NO_FUSION},
    {"no-simplify", AX_DEBUG_NO_SIMPLIFY}, {"no-cse", AX_DEBUG_NO_CSE},
    {"dump", AX_DEBUG_DUMP}, {"timing", AX_DEBUG_TIMING}, {"verify", AX_DEBUG_VERIFY},
    {"cache", AX_DEBUG_CACHE}, {"code", AX_DEBUG_CODE},
    {"profile", AX_DEBUG_PROFILE},
};

/* Parses a comma-separated AXLE_DEBUG value; unknown words are ignored
 * (a warning would go to stderr, which a library should not write to). */
static unsigned parse_debug(const char *s)
{
    unsigned f = 0;
    while (s && *s) {
        size_t n = strcspn(s, ",");
        for (size_t i = 0; i < sizeof debug_flags / sizeof *debug_flags; i++)
            if (strlen(debug_flags[i].name) == n && !strncmp(s, debug_flags[i].name, n))
                f |= debug_flags[i].flag;
        s += n;
        if (*s == ',') s++;
    }
    return f;
}

/* "123", "64K", "512M", "2G" -> bytes; -1 if malformed. */
static int64_t parse_bytes(const char *s)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0) return -1;
    while (isspace((unsigned char)*end)) end++;
    int64_t m = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': m = 1ll << 10; end++; break;
    case 'M': m = 1ll << 20; end++; break;
    case 'G': m = 1ll << 30; end++; break;
    case 0: break;
    default: return -1;
    }
    if (*end == 'B' || *end == 'b') end++;
    if (*end) return -1;
    if (v > INT64_MAX / m) return INT64_MAX;
    return v * m;
}

static int64_t default_mem_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psize <= 0) return INT64_MAX;
    /* Half of physical memory: enough for any program that fits, and far
     * enough from the OOM killer that a runaway allocation becomes an error
     * instead of a killed process (issue 5, the unfused N-body). */
    return (int64_t)pages * psize / 2;
}

ax_ctx *ax_ctx_new(const ax_options *opt)
{
    ax_ctx *cx = calloc(1, sizeof *cx);
    if (!cx) return NULL;
    if (opt) cx->opt = *opt;
    arena_init(&cx->arena);
    const char *e;
    cx->opt.debug |= parse_debug(getenv("AXLE_DEBUG"));
    if (!cx->opt.threads && (e = getenv("AXLE_THREADS")) && atoi(e) > 0) cx->opt.threads = atoi(e);
    if (!cx->opt.threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        cx->opt.threads = n > 0 ? (int)n : 1;
    }
    if (!cx->opt.mem_limit && (e = getenv("AXLE_MEM_LIMIT")) && parse_bytes(e) > 0)
        cx->opt.mem_limit = parse_bytes(e);
    if (!cx->opt.mem_limit) cx->opt.mem_limit = default_mem_limit();
    if (cx->opt.mem_limit < 0) cx->opt.mem_limit = INT64_MAX;
    if (!cx->opt.backend && (e = getenv("AXLE_BACKEND")) && *e) {
        static const char *const names[] = {"default", "interp", "cpu", "cuda", "opencl"};
        for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
            if (!strcasecmp(e, names[i])) cx->opt.backend = (ax_backend_kind)i;
    }
    if (!cx->opt.cc && (e = getenv("AXLE_CC")) && *e) cx->opt.cc = e;
    if (!cx->opt.cflags && (e = getenv("AXLE_CFLAGS")) && *e) cx->opt.cflags = e;
    if ((e = getenv("AXLE_CACHE")) && (!strcasecmp(e, "off") || !strcmp(e, "0")))
        cx->opt.no_cache = true;
    /* Strings from the caller or the environment are copied: the context
     * must not depend on their lifetime. */
    if (cx->opt.cc) cx->opt.cc = strdup(cx->opt.cc);
    if (cx->opt.cflags) cx->opt.cflags = strdup(cx->opt.cflags);
    if (cx->opt.cache_dir) cx->opt.cache_dir = strdup(cx->opt.cache_dir);
    return cx;
}

void ax_ctx_free(ax_ctx *cx)
{
    if (!cx) return;
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
    arena_free(&cx->arena);
    free((char *)cx->opt.cc);
    free((char *)cx->opt.cflags);
    free((char *)cx->opt.cache_dir);
    free(cx->scratch);
    free(cx);
}

void ax_ctx_reset(ax_ctx *cx)
{
    if (!cx) return;
    /* USE nodes hold a reference to their host array; the nodes go with
     * the arena, so their references go too. */
    for (int i = 0; i < cx->nuses; i++) ax_array_release(cx->uses[i]);
    cx->nuses = 0;
    arena_free(&cx->arena);
    arena_init(&cx->arena);
    cx->status = AX_OK;
    cx->last_status = AX_OK;
    cx->msg[0] = 0;
}

const ax_options *ax_ctx_options(const ax_ctx *cx) { return &cx->opt; }

const char *ax_error(const ax_ctx *cx) { return cx ? cx->msg : "no context"; }
ax_status ax_status_of(const ax_ctx *cx)
{
    if (!cx) return AX_ERR_ARG;
    return cx->status != AX_OK ? cx->status : cx->last_status;
}

void ax_clear_error(ax_ctx *cx)
{
    if (!cx) return;
    cx->status = AX_OK;
    cx->last_status = AX_OK;
    cx->msg[0] = 0;
}

void *ctx_error(ax_ctx *cx, ax_status st, const char *fmt, ...)
{
    if (!cx || cx->status != AX_OK) return NULL;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cx->msg, sizeof cx->msg, fmt, ap);
    va_end(ap);
    cx->status = st;
    return NULL;
}

void ctx_settle(ax_ctx *cx)
{
    if (cx && cx->status != AX_OK) {
        cx->last_status = cx->status;
        cx->status = AX_OK;
    }
}

void ctx_error_force(ax_ctx *cx, ax_status st, const char *fmt, ...)
{
    if (!cx) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cx->msg, sizeof cx->msg, fmt, ap);
    va_end(ap);
    cx->status = st;
}

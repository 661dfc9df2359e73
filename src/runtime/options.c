/*
 * A context's options: the caller's ax_options with the environment
 * applied (the AXLE_* variables, each checked: a malformed value is a
 * notice, or an error under strict), the defaults filled in, and the
 * caller's strings copied.  Also the disk cache's public queries, which
 * read the same variables.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include "runtime/options.h"
#include "runtime/jit.h"
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const struct { const char *name; unsigned flag; } debug_flags[] = {
    {"no-sharing", AX_DEBUG_NO_SHARING}, {"no-fusion", AX_DEBUG_NO_FUSION},
    {"no-simplify", AX_DEBUG_NO_SIMPLIFY}, {"no-cse", AX_DEBUG_NO_CSE},
    {"dump", AX_DEBUG_DUMP}, {"timing", AX_DEBUG_TIMING}, {"verify", AX_DEBUG_VERIFY},
    {"cache", AX_DEBUG_CACHE}, {"code", AX_DEBUG_CODE},
    {"profile", AX_DEBUG_PROFILE}, {"no-planner", AX_DEBUG_NO_PLANNER},
    {"no-licm", AX_DEBUG_NO_LICM}, {"no-reuse", AX_DEBUG_NO_REUSE},
    {"no-loops", AX_DEBUG_NO_LOOPS}, {"no-epilogues", AX_DEBUG_NO_EPILOGUES},
    {"comm", AX_DEBUG_COMM}, {"no-cost-model", AX_DEBUG_NO_COST_MODEL},
};

/* Parses a comma-separated AXLE_DEBUG value; an unknown word is named in
 * `bad` (the first one) and otherwise ignored. */
static unsigned parse_debug(const char *s, char *bad, size_t nbad)
{
    unsigned f = 0;
    bad[0] = 0;
    while (s && *s) {
        size_t n = strcspn(s, ","), i;
        for (i = 0; i < sizeof debug_flags / sizeof *debug_flags; i++)
            if (strlen(debug_flags[i].name) == n && !strncmp(s, debug_flags[i].name, n)) break;
        if (i < sizeof debug_flags / sizeof *debug_flags) f |= debug_flags[i].flag;
        else if (n && !bad[0]) snprintf(bad, nbad, "%.*s", (int)(n < 64 ? n : 64), s);
        s += n;
        if (*s == ',') s++;
    }
    return f;
}

/* "123", "123B", "64K", "64KB", "512M", "2G", "1T" (any case) -> bytes;
 * -1 if malformed.  Too large a value saturates at INT64_MAX, which is
 * "no limit". */
static int64_t parse_bytes(const char *s)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0) return -1;
    if (errno == ERANGE) return INT64_MAX;
    while (isspace((unsigned char)*end)) end++;
    int64_t m = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': m = 1ll << 10; end++; break;
    case 'M': m = 1ll << 20; end++; break;
    case 'G': m = 1ll << 30; end++; break;
    case 'T': m = 1ll << 40; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b') end++;
    if (*end) return -1;
    if (v > INT64_MAX / m) return INT64_MAX;
    return v * m;
}

/* The most threads a pool runs (pool.c): the options say what is used. */
enum { MAX_POOL_THREADS = 4096 };
/* The C compiler's default time limit, in seconds: generous (a cold
 * compile of the largest benchmark takes a few seconds), but finite. */
#define DEFAULT_CC_TIMEOUT 300.0

/* The disk cache's default size: a few hundred compiled programs (a
 * typical entry is 20-200 KB; fluid's is ~1 MB). */
#define DEFAULT_CACHE_LIMIT ((int64_t)512 << 20)

static int64_t default_mem_limit(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || psize <= 0) return INT64_MAX;
    /* Half of physical memory: enough for any program that fits, and far
     * enough from the OOM killer that a runaway allocation becomes an error
     * instead of a killed process (the unfused N-body's n x n intermediate). */
    return (int64_t)pages * psize / 2;
}

/* A malformed AXLE_* variable: a notice (the variable is ignored), and
 * with ax_options.strict an error that the first run reports. */
static void bad_env(ax_ctx *cx, int which, const char *var, const char *val, const char *accepted)
{
    ctx_notice(cx, NOTICE_ENV << which, "%s='%.64s' is not valid (%s); it is ignored", var, val, accepted);
    if (cx->opt.strict)
        ctx_error(cx, AX_ERR_ARG, "ax_ctx_new: %s='%.64s' is not valid (%s)", var, val, accepted);
}

/* A whole decimal number in 1..max, or -1. */
static long parse_count(const char *s, long max)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    while (isspace((unsigned char)*end)) end++;
    if (end == s || *end || errno || v < 1) return -1;
    return v > max ? max : v;
}
int options_apply(ax_ctx *cx)
{
    const char *e;
    char bad[80];
    cx->opt.debug |= parse_debug(getenv("AXLE_DEBUG"), bad, sizeof bad);
    if (bad[0])
        bad_env(cx, 0, "AXLE_DEBUG", bad,
                "a comma-separated list of no-sharing, no-fusion, no-simplify, no-cse, dump, timing, verify, "
                "cache, code, profile, no-planner, no-licm, no-cost-model, comm");
    if ((e = getenv("AXLE_THREADS")) && *e) {
        long t = parse_count(e, MAX_POOL_THREADS);
        if (t < 0) bad_env(cx, 1, "AXLE_THREADS", e, "a number of threads, 1 or more");
        else if (!cx->opt.threads) cx->opt.threads = (int)t;
    }
    if (!cx->opt.threads) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        cx->opt.threads = n > 0 ? (int)n : 1;
    }
    if (cx->opt.threads < 1) cx->opt.threads = 1;
    if (cx->opt.threads > MAX_POOL_THREADS) cx->opt.threads = MAX_POOL_THREADS;
    if ((e = getenv("AXLE_MEM_LIMIT")) && *e) {
        int64_t b = parse_bytes(e);
        if (b <= 0) bad_env(cx, 2, "AXLE_MEM_LIMIT", e, "bytes with an optional K, M, G or T and B: 512M, 2GB");
        else if (!cx->opt.mem_limit) cx->opt.mem_limit = b;
    }
    if (!cx->opt.mem_limit) cx->opt.mem_limit = default_mem_limit();
    if (cx->opt.mem_limit < 0) cx->opt.mem_limit = INT64_MAX;
    if ((e = getenv("AXLE_BACKEND")) && *e) {
        static const char *const names[] = {"default", "interp", "cpu", "cuda", "opencl"};
        int k = -1;
        for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
            if (!strcasecmp(e, names[i])) k = i;
        if (k < 0) bad_env(cx, 3, "AXLE_BACKEND", e, "default, interp, cpu, cuda or opencl");
        else if (!cx->opt.backend) cx->opt.backend = (ax_backend_kind)k;
    }
    if ((e = getenv("AXLE_CC_TIMEOUT")) && *e) {
        char *end;
        double t = strtod(e, &end);
        if (end == e || *end || t != t) bad_env(cx, 4, "AXLE_CC_TIMEOUT", e, "seconds, or a negative number for no limit");
        else if (!cx->opt.cc_timeout) cx->opt.cc_timeout = t;
    }
    if (!cx->opt.cc_timeout) cx->opt.cc_timeout = DEFAULT_CC_TIMEOUT;
    if (cx->opt.cc_timeout < 0) cx->opt.cc_timeout = -1;   /* no limit */
    if (!cx->opt.cc && (e = getenv("AXLE_CC")) && *e) cx->opt.cc = e;
    if (!cx->opt.cflags && (e = getenv("AXLE_CFLAGS")) && *e) cx->opt.cflags = e;
    if ((e = getenv("AXLE_FAST_MATH")) && *e) {
        if (!strcasecmp(e, "on") || !strcmp(e, "1")) cx->opt.fast_math = true;
        else if (!strcasecmp(e, "finite")) cx->opt.fast_math = cx->opt.finite_math = true;
        else if (strcasecmp(e, "off") && strcmp(e, "0"))
            bad_env(cx, 7, "AXLE_FAST_MATH", e, "on, 1, finite, off or 0");
    }
    if (cx->opt.finite_math) cx->opt.fast_math = true;   /* finite_math implies fast_math */
    if ((e = getenv("AXLE_CACHE_SIZE")) && *e) {
        int64_t b = parse_bytes(e);
        if (b < 0) bad_env(cx, 6, "AXLE_CACHE_SIZE", e, "bytes with an optional K, M, G or T and B: 512M, 2GB");
        else if (!cx->opt.cache_limit) cx->opt.cache_limit = b ? b : -1;
    }
    if (!cx->opt.cache_limit) cx->opt.cache_limit = DEFAULT_CACHE_LIMIT;
    if (cx->opt.cache_limit < 0) cx->opt.cache_limit = -1;   /* no limit */
    if ((e = getenv("AXLE_CACHE")) && *e) {
        if (!strcasecmp(e, "off") || !strcmp(e, "0")) cx->opt.no_cache = true;
        else if (strcasecmp(e, "on") && strcmp(e, "1")) bad_env(cx, 5, "AXLE_CACHE", e, "off, 0, on or 1");
    }
    if ((e = getenv("AXLE_PLANNER")) && *e) {
        if (!strcasecmp(e, "greedy")) cx->planner = PLANNER_GREEDY;
        else if (!strcasecmp(e, "cbc")) cx->planner = PLANNER_CBC;
        else if (strcasecmp(e, "ilp")) bad_env(cx, 8, "AXLE_PLANNER", e, "ilp, cbc or greedy");
    }
    if ((e = getenv("AXLE_PLANNER_LIMIT")) && *e) {
        char *end;
        double t = strtod(e, &end);
        if (end == e || *end || !(t > 0) || t > 1e9)
            bad_env(cx, 9, "AXLE_PLANNER_LIMIT", e, "the ILP's time limit in milliseconds, more than 0");
        else cx->planner_limit_ms = t;
    }
    if ((e = getenv("AXLE_CBC")) && *e && !(cx->planner_cbc = ax__strdup(e))) {
        return -1;
    }
    if ((e = getenv("AXLE_BLAS")) && *e) {
        if (!strcasecmp(e, "off") || !strcmp(e, "0")) cx->no_blas = true;
        else if (!(cx->blas = ax__strdup(e))) return -1;
    }
    /* Strings from the caller or the environment are copied: the context
     * must not depend on their lifetime.  A copy that fails fails the
     * context (a NULL would silently mean the default compiler). */
    const char *cc = cx->opt.cc, *cflags = cx->opt.cflags, *dir = cx->opt.cache_dir;
    cx->opt.cc = cx->opt.cflags = cx->opt.cache_dir = NULL;
    if ((cc && !(cx->opt.cc = ax__strdup(cc))) || (cflags && !(cx->opt.cflags = ax__strdup(cflags))) ||
        (dir && !(cx->opt.cache_dir = ax__strdup(dir)))) {
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- cache */

/* The cache directory and limit that a context made with opt would use. */
static int cache_where(const ax_options *opt, ax_cache_info *info)
{
    memset(info, 0, sizeof *info);
    const char *e;
    int64_t lim = opt ? opt->cache_limit : 0;
    if (!lim && (e = getenv("AXLE_CACHE_SIZE")) && *e) {
        int64_t b = parse_bytes(e);
        if (b >= 0) lim = b ? b : -1;
    }
    info->limit = lim ? (lim < 0 ? -1 : lim) : DEFAULT_CACHE_LIMIT;
    char *d = opt && opt->cache_dir ? ax__strdup(opt->cache_dir) : jit_default_dir();
    if (!d) {
        errno = opt && opt->cache_dir ? ENOMEM : ENOENT;
        return -1;
    }
    int n = snprintf(info->dir, sizeof info->dir, "%s", d);
    free(d);
    if (n < 0 || (size_t)n >= sizeof info->dir) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

int ax_cache_stats(const ax_options *opt, ax_cache_info *info)
{
    if (!info) return errno = EINVAL, -1;
    if (cache_where(opt, info)) return -1;
    JitDirStats st;
    if (jit_dir_stats(info->dir, &st)) return -1;
    info->entries = st.entries;
    info->bytes = st.bytes;
    return 0;
}

int ax_cache_clear(const ax_options *opt, ax_cache_info *removed)
{
    ax_cache_info tmp;
    if (!removed) removed = &tmp;
    if (cache_where(opt, removed)) return -1;
    JitDirStats st = {0, 0};
    int rc = jit_dir_clear(removed->dir, &st);
    removed->entries = st.entries;
    removed->bytes = st.bytes;
    return rc;
}


/*
 * The multicore CPU backend (docs/ARCHITECTURE.md, "The pipeline"): its
 * Backend.  prepare: generate one C unit
 * for the program (codegen.c, the skeletons in skel.c and beside it),
 * compile it with the system C compiler into a shared object, or find it
 * in the cache (runtime/jit.c), and look up its thunks and kernels.  run:
 * the executor (exec.c).  find and keep: compiled programs stored in the
 * disk cache (stored.c).  This file also holds what the context learns
 * about the machine and its compiler (libmvec, the flags).
 *
 * Per-context state (the pool, the compiler and cache, what was found out
 * about the machine) lives in cx->backend_state[AX_BACKEND_CPU] and is
 * released by ax_ctx_free; per-program state (the generated program's
 * description and its entry points) by ax_program_free.  Both go through
 * Backend.release, told apart by their first field.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "cpu_int.h"
#include "runtime/blas.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ context */

static void ctx_release(CpuCtx *cc)
{
    pool_free(cc->pool);
    jit_free(cc->jit);
    blas_free(cc->blas);
    free(cc);
}

void cpu_prog_release(CpuProg *pp)
{
    if (pp->cg) {
        for (int i = 0; i < pp->cg->nnodes; i++) free(pp->th ? pp->th[i] : NULL);
    }
    free(pp->th);
    free(pp->mod);
    free(pp->bpos);
    free(pp->live);
    free(pp->k);
    free(pp->chk);
    cg_free(pp->cg);
    free(pp);
}

static void cpu_release(void *state)
{
    if (!state) return;
    if (*(int *)state == CPU_CTX_MAGIC) ctx_release(state);
    else if (*(int *)state == CPU_PROG_MAGIC) cpu_prog_release(state);
}

const Backend backend_cpu;

CpuCtx *cpu_ctx_state(ax_ctx *cx)
{
    CpuCtx *cc = cx->backend_state[AX_BACKEND_CPU];
    if (cc) return cc;
    cc = ax__calloc(1, sizeof *cc);
    if (!cc) return ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory");
    cc->magic = CPU_CTX_MAGIC;
    cc->cc_found = -1;
    cx->backend_state[AX_BACKEND_CPU] = cc;
    cx->backends[AX_BACKEND_CPU] = &backend_cpu;
    return cc;
}

#ifndef AX_RUNTIME_ONLY
/* The compiler command's first word (the JIT splits the command on
 * whitespace: "ccache cc" works). */
static const char *cc_name(const ax_ctx *cx) { return cx->opt.cc && *cx->opt.cc ? cx->opt.cc : "cc"; }

static bool find_program(const char *cmd)
{
    char word[4096];
    size_t n = strcspn(cmd + strspn(cmd, " \t"), " \t");
    cmd += strspn(cmd, " \t");
    if (n == 0 || n >= sizeof word) return false;
    memcpy(word, cmd, n);
    word[n] = 0;
    if (strchr(word, '/')) return access(word, X_OK) == 0;
    const char *path = getenv("PATH");
    if (!path) path = "/usr/bin:/bin";
    while (*path) {
        size_t m = strcspn(path, ":");
        char full[8192];
        if (m + n + 2 < sizeof full) {
            if (m == 0) snprintf(full, sizeof full, "./%s", word);
            else snprintf(full, sizeof full, "%.*s/%s", (int)m, path, word);
            if (access(full, X_OK) == 0) return true;
        }
        path += m;
        if (*path == ':') path++;
    }
    return false;
}

/* Which maths functions have vector versions in libmvec (glibc 2.22 has
 * exp, log, sin, cos, pow; 2.35 the rest).  Looked up once per context;
 * only those are declared `omp declare simd`, so a module never needs a
 * symbol the library lacks. */
static void probe_mvec(CpuCtx *cc)
{
    if (cc->probed) return;
    cc->probed = true;
#if defined(__x86_64__) && defined(__linux__)
    void *h = dlopen("libmvec.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h) return;
    cc->mvec = true;
    /* The generated code calls the widest version the target has (SSE,
     * AVX, AVX2 or AVX-512: codegen.c prelude_mvec), so all four must be
     * there, for f32 and f64. */
    static const struct { char isa; int wf, wd; } vers[] = {{'b', 4, 2}, {'c', 8, 4}, {'d', 8, 4}, {'e', 16, 8}};
    for (int k = 0; k < CG_NMATH; k++) {
        bool two = k >= 14, all = true;
        for (int i = 0; i < 4 && all; i++) {
            char f[64], d[64];
            snprintf(f, sizeof f, "_ZGV%cN%d%s_%sf", vers[i].isa, vers[i].wf, two ? "vv" : "v", cg_math_names[k]);
            snprintf(d, sizeof d, "_ZGV%cN%d%s_%s", vers[i].isa, vers[i].wd, two ? "vv" : "v", cg_math_names[k]);
            all = dlsym(h, f) && dlsym(h, d);
        }
        if (all) cc->simd_mask |= 1u << k;
    }
    dlclose(h);
#endif
}

/* The flags the generated C is compiled with, in this order (later flags
 * win): what makes a loadable object; the optimisation flags, which the
 * user's flags (AXLE_CFLAGS, ax_options.cflags) follow and so add to or
 * override (-O1, -march=x86-64); then the flags that fix what results
 * are, always last so that no user flag (and no -ffast-math in AXLE_CC)
 * can change them: IEEE arithmetic without fast-math's licences, and no
 * fused multiply-add (a*b+c rounds twice, as in the interpreter).
 * -fno-fast-math also turns math-errno and trapping-math back on, which
 * change no result but keep sqrt and selects from vectorising: they are
 * turned off again after it. */
/* Vector width: on a Zen 4 EPYC, GCC 12's -march=native is znver3 with
 * AVX-512 and no preferred width (gcc -Q --help=target:
 * -mprefer-vector-width=none), so loops vectorise at 512 bits where GCC
 * finds it profitable, and the 16-lane libmvec functions are called
 * directly.  Against -mprefer-vector-width=256 for the whole unit, 256
 * bits is slower for the programs that call libmvec (through half-width
 * wrappers), equal for the others but Mandelbrot's unrolled runs, which
 * are faster: cgen/exp.c gen_run asks for 256 bits on those kernels alone
 * (skel.c cpu_kernel_end writes the attribute, so the choice is in the
 * unit's text and so in the cache key).  Other x86 CPUs with AVX-512 are
 * tuned by GCC to prefer 256 bits (an Intel Xeon that GCC 12 names
 * rocketlake: -mprefer-vector-width=256); there the loops that call
 * libmvec ran at 256 bits through the half-width wrappers, two to four
 * times slower than the 512-bit calls, and than hand-written C.  So a
 * kernel that calls a libmvec function asks for 512 bits where the target
 * has AVX-512 (math_fn marks it; the attribute is guarded by
 * __AVX512F__); the others keep the target's preference (nbody, whose
 * only maths is sqrt, is slower at 512 there). */
/* -O3 against -O2: -O2 halves the C compiler's time, but GCC 12's -O2
 * vectorises only with its "very cheap" cost model, which leaves loops
 * that call libmvec scalar, several times slower.  -O3 stays.  With the
 * element loops (producers, stencils) marked `omp simd` instead of `GCC
 * ivdep`, which GCC vectorises under any cost model, -O2 keeps the libmvec
 * calls, but most programs still ran slower than at -O3, for a saving of
 * under half the C compiler's time; -O3's extra time is spread over every
 * pass (its unrolled and versioned loops are bigger), so no one -fno-
 * flag recovers it.  GCC's own floor (driver, cc1 and ld of an empty
 * function) is paid once per unit, which is why units are batched
 * (load_units). */
#define CPU_OBJECT_CFLAGS "-fPIC -shared"
#define CPU_OPT_CFLAGS "-O3 -march=native -pipe -fno-math-errno -fno-trapping-math -fopenmp-simd -w"
#define CPU_SEMANTIC_CFLAGS "-fno-fast-math -fno-math-errno -fno-trapping-math -ffp-contract=off"
/* ax_options.fast_math: -ffast-math's licences but -ffinite-math-only's
 * (NaN and infinities stay).  -funsafe-math-optimizations is spelled out
 * as the four flags it sets: GCC's driver links crtfastmath.o into any
 * object built with -funsafe-math-optimizations, -ffast-math or -Ofast
 * (also with -shared, before GCC 13), and its constructor turns on
 * flush-to-zero and denormals-are-zero in the MXCSR of the thread that
 * dlopens the kernel: the user's own code on that thread, and the exact
 * mode's kernels run there, then lost denormals.  The four flags allow
 * the same reassociation and reciprocals; what is lost is the few
 * simplifications GCC gates on the flag itself (match.pd: sqrt(x)*sqrt(x)
 * -> x, pow and exp identities).  nbody's and blackscholes' fast-mode
 * units compile to the same instructions either way, up to scheduling
 * (GCC 12.2). */
#define CPU_FAST_CFLAGS                                                                              \
    "-fno-math-errno -fno-signed-zeros -fno-trapping-math -fassociative-math -freciprocal-math "     \
    "-fno-finite-math-only -ffp-contract=fast"
/* ax_options.finite_math: fast_math's flags with -ffinite-math-only; the
 * unit itself asks for -funsafe-math-optimizations (codegen.c
 * emit_prelude: a pragma, so that the driver links no crtfastmath.o),
 * which GCC's x86 back end needs, with -ffinite-math-only, to compute
 * 1/sqrt and sqrt of f32 vectors as vrsqrtps and a Newton step.  Its
 * default -mrecip also divides f32 vectors by vrcpps and a Newton step,
 * which made Black-Scholes slower (bench/fastmath), so x86 keeps the
 * divider (-mrecip=!vec-div). */
#if defined(__x86_64__) || defined(__i386__)
#define CPU_FINITE_TARGET " -mrecip=!vec-div"
#else
#define CPU_FINITE_TARGET ""
#endif
#define CPU_FINITE_CFLAGS                                                                            \
    "-fno-math-errno -fno-signed-zeros -fno-trapping-math -fassociative-math -freciprocal-math "     \
    "-ffinite-math-only -ffp-contract=fast" CPU_FINITE_TARGET

/* The flags generated C is compiled with in cx (malloc'd; NULL when memory
 * is lacking): the object's, the optimiser's, the user's, the mode's. */
static char *cpu_cflags(const ax_ctx *cx)
{
    const char *user = cx->opt.cflags ? cx->opt.cflags : "";
    const char *sem = cx->opt.finite_math ? CPU_FINITE_CFLAGS : cx->opt.fast_math ? CPU_FAST_CFLAGS : CPU_SEMANTIC_CFLAGS;
    size_t n = strlen(CPU_OBJECT_CFLAGS) + strlen(CPU_OPT_CFLAGS) + strlen(user) + strlen(sem) + 4;
    char *cflags = ax__malloc(n);
    if (cflags) snprintf(cflags, n, "%s %s %s %s", CPU_OBJECT_CFLAGS, CPU_OPT_CFLAGS, user, sem);
    return cflags;
}

Jit *cpu_new_jit(ax_ctx *cx, CpuCtx *cc, const char *cache_dir)
{
    probe_mvec(cc);
    const char *user = cx->opt.cflags ? cx->opt.cflags : "";
    char *cflags = cpu_cflags(cx);
    char *libs = ax__strdup(cc->mvec && cc->simd_mask ? "-lmvec -lm" : "-lm");
    Jit *jit = NULL;
    if (cflags && libs) {
        JitOptions o;
        memset(&o, 0, sizeof o);
        o.cc = cc_name(cx);
        o.cflags = cflags;
        o.libs = libs;
        o.cache_dir = cache_dir ? cache_dir : cx->opt.cache_dir;
        o.no_disk_cache = !cache_dir && cx->opt.no_cache;
        o.trace = (cx->opt.debug & AX_DEBUG_CACHE) != 0;
        o.version = AX_VERSION_STRING;
        o.timeout_s = cx->opt.cc_timeout;
        o.size_limit = cache_dir ? 0 : cx->opt.cache_limit;
        /* The lean link (jit.c) unless the user's compiler command or
         * flags may need the ordinary one (-fsanitize, -pg, -fopenmp,
         * --coverage and the like bring libraries of their own). */
        const char *ccmd = cc_name(cx);
        o.lean_link = !user[0] && ccmd[0] != '-' && !strstr(ccmd, " -") && !strstr(ccmd, "\t-");
        jit = jit_new(&o);
    }
    free(cflags);   /* jit_new copies its options */
    free(libs);
    return jit;
}

/* (It reads the options only, as ax_ctx_options does: no entering.) */
char *ax_cc_command(const ax_ctx *cx)
{
    if (!cx) return NULL;
    char *flags = cpu_cflags(cx), *r = NULL;
    const char *cc = cc_name(cx);
    size_t n = flags ? strlen(cc) + strlen(flags) + 2 : 0;
    if (flags && (r = malloc(n))) snprintf(r, n, "%s %s", cc, flags);
    free(flags);
    return r;
}

#endif

Jit *cpu_ctx_jit(ax_ctx *cx, CpuCtx *cc)
{
    if (cc->jit) return cc->jit;
    /* Made afresh on each try: nothing of a failed try is kept (or leaks). */
#ifndef AX_RUNTIME_ONLY
    Jit *jit = cpu_new_jit(cx, cc, NULL);
#else
    /* only modules loaded from saved programs' images: no compiler */
    JitOptions o = {.no_disk_cache = true, .trace = (cx->opt.debug & AX_DEBUG_CACHE) != 0};
    Jit *jit = jit_new(&o);
#endif
    if (!jit) return ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory");
    cc->jit = jit;
    return jit;
}

#ifndef AX_RUNTIME_ONLY
int cpu_unit_texts(ax_ctx *cx, CpuCtx *cc, CpuProg *pp, char *err, size_t errsize)
{
    CgProg *g = pp->cg;
    bool all = true;
    for (int k = 0; k < g->nunits; k++) all = all && g->units[k].text;
    if (all) return 0;
    /* a program from its entry in the disk cache or from a file (no unit
     * text): the code generated again, for every unit at once */
    CgConfig cfg = cpu_config(cx, cc);
    CgProg *again = pp->prog ? cg_program(pp->prog, &cfg, err, errsize) : NULL;
    if (!again || again->nunits != g->nunits) {
        if (again) snprintf(err, errsize, "the program's code differs from its description");
        cg_free(again);
        return -1;
    }
    for (int k = 0; k < g->nunits; k++) {
        CgUnit *w = &g->units[k];
        free(w->text);
        w->text = again->units[k].text;
        w->len = again->units[k].len;
        w->code_off = again->units[k].code_off;
        again->units[k].text = NULL;
    }
    cg_free(again);
    return 0;
}

#endif

Pool *cpu_ctx_pool(ax_ctx *cx, CpuCtx *cc)
{
    if (cc->pool) return cc->pool;
    cc->pool = pool_new(cx->opt.threads > 0 ? cx->opt.threads : 1);
    if (!cc->pool) ctx_error(cx, AX_ERR_NOMEM, "ax_run: cannot start %d threads", cx->opt.threads);
    return cc->pool;
}

bool cpu_counters(ax_ctx *cx, CpuCounters *out)
{
    CpuCtx *cc = cx ? cx->backend_state[AX_BACKEND_CPU] : NULL;
    if (!cc || !out) return false;
    *out = cc->counters;
    return true;
}

/* ------------------------------------------------------------ backend */

#ifndef AX_RUNTIME_ONLY
static bool cpu_available(ax_ctx *cx)
{
    /* Asked for by name: prepare reports what is wrong with the compiler
     * (AX_ERR_COMPILE naming it).  As the default: only with a compiler. */
    if (cx->opt.backend == AX_BACKEND_CPU) return true;
    CpuCtx *cc = cpu_ctx_state(cx);
    if (!cc) return false;
    /* Looked for again while missing: a compiler installed later is
     * found (a search of PATH is cheap). */
    if (cc->cc_found != 1) cc->cc_found = find_program(cc_name(cx));
    return cc->cc_found == 1;
}

CgConfig cpu_config(ax_ctx *cx, CpuCtx *cc)
{
    probe_mvec(cc);
    CgConfig cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.safe = !cx->opt.unsafe;
    cfg.simd_mask = cc->simd_mask;
    cfg.finite = cx->opt.finite_math;
    cfg.fast = cx->opt.fast_math || cx->opt.finite_math;
    return cfg;
}

char *cpu_c_text(ax_ctx *cx, Program *p)
{
    CpuCtx *cc = cpu_ctx_state(cx);
    if (!cc) return NULL;
    CgConfig cfg = cpu_config(cx, cc);
    char err[512];
    CgProg *g = cg_program(p, &cfg, err, sizeof err);
    if (!g) return ctx_error(cx, AX_ERR_BACKEND, "%s", err);
    char *s = cg_join(g);
    cg_free(g);
    if (!s) ctx_error(cx, AX_ERR_NOMEM, "ax_dump: out of memory");
    return s;
}

#endif

static bool has_role(const CgNode *cn)
{
    for (int r = 0; r < R_NROLE; r++)
        if (cn->role[r]) return true;
    return false;
}

#ifndef AX_RUNTIME_ONLY
/* ax_options.progress, from the compiles of jit_load_many. */
static void progress(void *arg, int done, int total)
{
    ax_ctx *cx = arg;
    ctx_callback_begin(cx, "progress");
    cx->opt.progress(cx->opt.progress_arg, done, total);
    ctx_callback_end(cx);
}

/* The modules of g's kernel units (mod[u], and bpos[u]: -1 when the
 * unit's names are its own, axk_u_..., else its place i in a batch,
 * axk_b<i>_...).  The units in a cache are loaded from it; the others
 * are compiled by up to one compiler process per thread of the context,
 * each its own translation unit while there are no more of them than
 * processes, else grouped into that many batches of about equal size
 * (cg_batch): a compiler process costs a fixed time before any kernel
 * (start, prelude, link), which a program of many small units (Canny's)
 * would pay once per unit.  A unit compiled alone is cached alone (so another program with
 * the same kernel finds it); a batch is cached as a whole.  The checked
 * copies (cold units) wait for their first need.  0, or AX_ERR_NOMEM or
 * AX_ERR_COMPILE with the compiler's message in err. */
static int load_units(ax_ctx *cx, CpuCtx *cc, Jit *jit, const CgProg *g, const CgConfig *cfg, JitModule **mod,
                      int *bpos, bool *hit, char *err, size_t errsize)
{
    (void)cc;
    int n = g->nunits, jobs = cx->opt.threads > 0 ? cx->opt.threads : 1;
    bool gcc = jit_is_gcc(jit);
    JitUnit *u = ax__calloc((size_t)n + 1, sizeof *u);
    int *hot = ax__calloc((size_t)n + 1, sizeof *hot), *miss = ax__calloc((size_t)n + 1, sizeof *miss);
    int *bat = ax__calloc((size_t)n + 1, sizeof *bat);
    int64_t *load = ax__calloc((size_t)n + 1, sizeof *load);
    int *members = ax__calloc((size_t)n + 1, sizeof *members), *slot = ax__calloc((size_t)n + 1, sizeof *slot);
    JitUnit *bu = ax__calloc((size_t)n + 1, sizeof *bu);
    char **btext = ax__calloc((size_t)n + 1, sizeof *btext);
    const char **bflags = ax__calloc((size_t)n + 1, sizeof *bflags);
    int rc = AX_ERR_NOMEM, nhot = 0, nmiss = 0, nb = 0;
    if (!u || !hot || !miss || !bat || !load || !members || !slot || !bu || !btext || !bflags) goto out;
    for (int k = 0; k < n; k++) {
        bpos[k] = -1;
        if (g->units[k].cold) continue;
        hot[nhot] = k;
        u[nhot].source = g->units[k].text;
        u[nhot].len = g->units[k].len;
        u[nhot++].cflags = gcc ? g->units[k].cflags : NULL;
    }
    rc = AX_ERR_COMPILE;
    if (jit_find_many(jit, u, nhot, err, errsize)) goto out;
    for (int k = 0; k < nhot; k++) {
        if (u[k].module) mod[hot[k]] = u[k].module;
        else miss[nmiss++] = k;
    }
    *hit = nmiss == 0;
    if (nmiss == 0) {
        rc = 0;
        goto out;
    }
    /* The plan of batches is made over every kernel unit, found or not,
       so that it does not depend on what the caches hold: a program
       compiled again finds its batches under the same texts (a unit
       alone in its batch is cached alone, and found alone next time).
       The largest unit first into the least loaded batch (the longest
       processing time first rule), a unit's size being its code without
       the prelude: the C compiler's time goes with that, and a batch has
       one prelude (balancing whole texts left fluid's batches uneven).
       A batch gets the flags of its members that have some
       (UNIT_CFLAGS, codegen.c: units with gathers or maths functions);
       members with different flags: none. */
    int want = nhot <= jobs ? nhot : jobs, *ord = miss;
    for (int k = 0; k < nhot; k++) {
        ord[k] = k;
        const CgUnit *cu = &g->units[hot[k]];
        bat[k] = (int)(cu->len - cu->code_off < (size_t)INT32_MAX ? cu->len - cu->code_off : INT32_MAX);
    }
    /* bat[k] holds unit k's size until it is given its batch */
    for (int a = 0; a < nhot; a++)
        for (int b = a + 1; b < nhot; b++)
            if (bat[ord[b]] > bat[ord[a]]) {
                int t = ord[a];
                ord[a] = ord[b];
                ord[b] = t;
            }
    bool *conflict = ax__calloc((size_t)n + 1, sizeof *conflict);
    if (!conflict) {
        rc = AX_ERR_NOMEM;
        goto out;
    }
    for (int a = 0; a < nhot; a++) {
        const JitUnit *x = &u[ord[a]];
        int64_t size = bat[ord[a]];
        int best = -1;
        if (nb < want) best = nb++;
        else
            for (int b = 0; b < nb; b++)
                if (best < 0 || load[b] < load[best]) best = b;
        if (x->cflags && !bflags[best] && !conflict[best]) bflags[best] = x->cflags;
        else if (x->cflags && bflags[best] && strcmp(bflags[best], x->cflags)) {
            bflags[best] = NULL;
            conflict[best] = true;
        }
        bat[ord[a]] = best;
        load[best] += size;
    }
    free(conflict);
    /* each batch's members not found: none (skipped), one (its own text)
       or several (cg_batch) */
    int nc = 0;   /* compiles: bu[0..nc), batch b's at slot[b] (-1: none) */
    for (int b = 0; b < nb; b++) {
        slot[b] = -1;
        int m = 0, lone = -1;
        for (int a = 0; a < nhot; a++)
            if (bat[ord[a]] == b && !u[ord[a]].module) {
                members[m++] = hot[ord[a]];
                lone = ord[a];
            }
        if (m == 0) continue;
        slot[b] = nc;
        bu[nc].cflags = m == 1 ? u[lone].cflags : bflags[b];
        if (m == 1) {
            bu[nc].source = g->units[members[0]].text;
            bu[nc].len = g->units[members[0]].len;
        } else {
            rc = AX_ERR_NOMEM;
            if (!(btext[nc] = cg_batch(g, cfg, members, m, NULL, &bu[nc].len))) goto out;
            bu[nc].source = btext[nc];
        }
        nc++;
    }
    rc = AX_ERR_COMPILE;
    if (jit_load_many(jit, bu, nc, jobs, cx->opt.progress ? progress : NULL, cx, err, errsize)) goto out;
    for (int b = 0; b < nb; b++) {
        if (slot[b] < 0) continue;
        int c = slot[b], m = 0;
        for (int a = 0; a < nhot; a++)
            if (bat[ord[a]] == b && !u[ord[a]].module) {
                int k = hot[ord[a]];
                mod[k] = bu[c].module;
                bpos[k] = btext[c] ? m : -1;
                m++;
            }
    }
    rc = 0;
out:
    for (int b = 0; btext && b < n; b++) free(btext[b]);
    free(btext);
    free(bflags);
    free(slot);
    free(bu);
    free(members);
    free(load);
    free(bat);
    free(miss);
    free(hot);
    free(u);
    return rc;
}

#endif

/* The CpuProg of g (taken, with mod and bpos: per unit, its module and
 * its place in a batch, -1 when its names are its own): every thunk and
 * kernel looked up.  NULL when memory is lacking or a symbol is missing
 * (the name in what[64]). */
CpuProg *cpu_make_prog(const Program *p, CgProg *g, JitModule **mod, int *bpos, char *what)
{
    snprintf(what, 64, "memory");
    CpuProg *pp = ax__calloc(1, sizeof *pp);
    if (pp) {
        pp->magic = CPU_PROG_MAGIC;
        pp->cg = g;
        pp->prog = p;
        pp->mod = mod;
        pp->bpos = bpos;
        pp->k = ax__calloc((size_t)g->nnodes + 1, sizeof *pp->k);
        pp->chk = ax__calloc((size_t)g->nnodes + 1, sizeof *pp->chk);
        pp->th = ax__calloc((size_t)g->nnodes + 1, sizeof *pp->th);
    }
    if (!pp || !pp->k || !pp->chk || !pp->th) {
        if (pp) cpu_prog_release(pp);
        else {
            free(mod);
            free(bpos);
            cg_free(g);
        }
        return NULL;
    }
    for (int i = 0; i < g->nnodes; i++) {
        const CgNode *cn = &g->nodes[i];
        if (!cn->x) continue;
        snprintf(what, 64, "its code");
        JitModule *m = cn->unit >= 0 && cn->unit < g->nunits ? mod[cn->unit] : NULL;
        char pre[24];   /* the unit's names: axk_u_..., or axk_b<i>_... in a batch */
        if (m && bpos[cn->unit] >= 0) snprintf(pre, sizeof pre, "b%d", bpos[cn->unit]);
        else snprintf(pre, sizeof pre, "u");
        if (!m && (cn->nthunk > 0 || has_role(cn))) goto bad;
        if (cn->nthunk > 0 && !(pp->th[i] = ax__calloc((size_t)cn->nthunk, sizeof *pp->th[i]))) {
            snprintf(what, 64, "memory");
            goto bad;
        }
        for (int t = 0; t < cn->nthunk; t++) {
            snprintf(what, 64, "axt_%s_%d", pre, t);
            if (!(pp->th[i][t] = (AxThunk)jit_sym(m, what))) goto bad;
        }
        for (int r = 0; r < R_NROLE; r++) {
            if (!cn->role[r]) continue;
            snprintf(what, 64, "axk_%s_%s", pre, cg_role_name[r]);
            if (!(pp->k[i][r] = (AxKernel)jit_sym(m, what))) goto bad;
        }
    }
    return pp;
bad:
    cpu_prog_release(pp);
    return NULL;
}

#ifndef AX_RUNTIME_ONLY
static int cpu_prepare(ax_ctx *cx, Program *p, void **state)
{
    *state = NULL;
    CpuCtx *cc = cpu_ctx_state(cx);
    if (!cc) return AX_ERR_NOMEM;
    double t0 = cpu_now_ms();
    CgConfig cfg = cpu_config(cx, cc);
    char err[4096];
    CgProg *g = cg_program(p, &cfg, err, sizeof err);
    if (!g) {
        ctx_error(cx, AX_ERR_BACKEND, "%s", err);
        return AX_ERR_BACKEND;
    }
    double t1 = cpu_now_ms();
    p->codegen_ms = t1 - t0;
    if (cx->opt.debug & AX_DEBUG_CODE) {
        char *text = cg_join(g);
        fprintf(stderr, "axle: generated C:\n%s\n", text ? text : "(out of memory)");
        free(text);
    }
    Jit *jit = cpu_ctx_jit(cx, cc);
    if (!jit) {
        cg_free(g);
        return AX_ERR_NOMEM;
    }
    err[0] = 0;
    JitModule **mod = ax__calloc((size_t)g->nunits + 1, sizeof *mod);
    int *bpos = ax__calloc((size_t)g->nunits + 1, sizeof *bpos);
    bool hit = true;
    double tj = cpu_now_ms(), cms = 0;
    int rc = mod && bpos ? load_units(cx, cc, jit, g, &cfg, mod, bpos, &hit, err, sizeof err) : AX_ERR_NOMEM;
    if (rc) {
        free(mod);
        free(bpos);
        cg_free(g);
        if (rc == AX_ERR_NOMEM) ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory");
        /* jit's messages name the compiler and quote its output */
        else if (err[0]) ctx_error(cx, AX_ERR_COMPILE, "ax_run: %s", err);
        else ctx_error(cx, AX_ERR_COMPILE, "ax_run: the C compiler '%s' failed", cc_name(cx));
        return rc;
    }
    /* compile time: the wall time of the compiles (they overlap) */
    if (!hit) cms = cpu_now_ms() - tj;
    char what[64];
    CpuProg *pp = cpu_make_prog(p, g, mod, bpos, what);
    if (!pp) {
        if (!strcmp(what, "memory")) return ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory"), AX_ERR_NOMEM;
        ctx_error(cx, AX_ERR_BACKEND, "ax_run: the compiled program lacks %s", what);
        return AX_ERR_BACKEND;
    }
    cc->counters.prepared++;
    if (hit) cc->counters.cached++;
    else cc->counters.compiled++;
    cc->counters.last_compile_ms = cms;
    if (cx->opt.debug & AX_DEBUG_TIMING)
        fprintf(stderr, "axle: timing: cpu codegen %.3f ms (%d units, %zu bytes of C), %s %.3f ms\n", t1 - t0,
                g->nunits, g->len, hit ? "cache hit" : "compile", hit ? cpu_now_ms() - t1 : cms);
    *state = pp;
    return 0;
}


#endif

static int cpu_run(ax_ctx *cx, Program *p, void *state, ax_array **out, int max)
{
    CpuProg *pp = state;
    CpuCtx *cc = cpu_ctx_state(cx);
    if (!cc) return -1;
    if (!pp || pp->magic != CPU_PROG_MAGIC || !p || !p->root) {
        ctx_error(cx, AX_ERR_BACKEND, "cpu: no program to run");
        return -1;
    }
    return cpu_exec(cx, cc, pp, p, out, max);
}

const Backend backend_cpu = {
    .name = "cpu",
    .kind = AX_BACKEND_CPU,
#ifndef AX_RUNTIME_ONLY
    .available = cpu_available,
    .prepare = cpu_prepare,
    .find = cpu_find,
    .keep = cpu_keep,
    .save = cpu_save,
    .exportc = cpu_export,
#endif
    .load = cpu_load,
    .run = cpu_run,
    .release = cpu_release,
};

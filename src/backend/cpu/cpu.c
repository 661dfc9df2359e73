/*
 * The multicore CPU backend (DESIGN.md s.2 "Kernels, code generation,
 * compilation" and "Runtime").  prepare: generate one C unit for the
 * program (codegen.c), compile it with the system C compiler into a shared
 * object, or find it in the cache (runtime/jit.c), and look up its thunks
 * and kernels.  run: the host executor below walks the array stratum like
 * the interpreter (lets, variables, tuples, acond and awhile are driven
 * here, with a few microseconds per iteration), and for each operation
 * evaluates its operands, calls its thunks for the scalar parameters,
 * allocates the results (array_alloc: the memory limit holds) and runs its
 * kernels on the context's thread pool (runtime/pool.c).
 *
 * Work splitting: a kernel is a function over an index range; run_kernel
 * cuts the range into chunks of at least GRAIN elements (about four per
 * thread, claimed dynamically so uneven work balances), and runs a range
 * that fits one chunk inline, without waking the pool.
 *
 * Faults found by generated code (an index out of bounds, division by
 * zero, ...) go to the call's error slot (AxErr; the one at the lowest
 * position wins); the host turns it into the interpreter's message.
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
#include "cg.h"
#include "runtime/host.h"
#include "bytes.h"
#include "runtime/jit.h"
#include "runtime/pool.h"

#include <dlfcn.h>
#include <elf.h>
#include <inttypes.h>
#include <link.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { CTX_MAGIC = 0x43505543, PROG_MAGIC = 0x43505550 };

/* Elements per task at least: below this a split costs more than it saves. */
enum { GRAIN = 8192, STRIPES = 1024 };

typedef struct CpuCtx {
    int magic;
    Pool *pool;
    Jit *jit;
    int cc_found;             /* -1 not yet looked for */
    bool probed;              /* libmvec looked for */
    unsigned simd_mask;
    bool mvec;
    CpuCounters counters;
    bool build_id_done;       /* the build ID of axle's code (program entries) */
    uint8_t build_id[64];
    size_t build_id_len;      /* 0: none */
} CpuCtx;

typedef struct CpuProg {
    int magic;
    CgProg *cg;
    const Program *prog;      /* the program it was made for (load_checked) */
    JitModule **mod;          /* per unit: its module (NULL: a cold unit) */
    int *bpos;                /* per unit: its place in a batch, -1: its own names */
    AxKernel (*k)[R_NROLE];   /* per node number */
    AxKernel (*chk)[R_NROLE]; /* per node number: its checked copies, loaded
                                 on first need (load_checked) */
    AxThunk **th;             /* per node number: its thunks */
    int *live;                /* liveness_counts of the program (at first run) */
} CpuProg;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------ context */

static void ctx_release(CpuCtx *cc)
{
    pool_free(cc->pool);
    jit_free(cc->jit);
    free(cc);
}

static void prog_release(CpuProg *pp)
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
    if (*(int *)state == CTX_MAGIC) ctx_release(state);
    else if (*(int *)state == PROG_MAGIC) prog_release(state);
}

const Backend backend_cpu;

static CpuCtx *ctx_state(ax_ctx *cx)
{
    CpuCtx *cc = cx->backend_state[AX_BACKEND_CPU];
    if (cc) return cc;
    cc = ax__calloc(1, sizeof *cc);
    if (!cc) return ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory");
    cc->magic = CTX_MAGIC;
    cc->cc_found = -1;
    cx->backend_state[AX_BACKEND_CPU] = cc;
    cx->backends[AX_BACKEND_CPU] = &backend_cpu;
    return cc;
}

/* The compiler command's first word (the JIT splits the command on
 * whitespace: "ccache cc" works). */
static const char *cc_name(ax_ctx *cx) { return cx->opt.cc && *cx->opt.cc ? cx->opt.cc : "cc"; }

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
/* Vector width: on this Zen 4 EPYC, GCC 12's -march=native is znver3
 * with AVX-512 and no preferred width (gcc -Q --help=target:
 * -mprefer-vector-width=none), so loops vectorise at 512 bits where GCC
 * finds it profitable, and the 16-lane libmvec functions are called
 * directly.  Measured per program against -mprefer-vector-width=256 for
 * the whole unit (1 thread, medians of 5-9 interleaved `axle run P --runs
 * 5`, 2026-11-25, load 5-6): 256 bits is slower for blackscholes (3.2x)
 * and canny (1.9x: libmvec through half-width wrappers), nbody and fluid
 * (1.11x), equal for the others but Mandelbrot's unrolled runs, 1.27x
 * faster: cg_exp.c gen_run asks for 256 bits on those kernels alone
 * (cg_skel.c kernel_end writes the attribute, so the choice is in the
 * unit's text and so in the cache key). */
/* -O3 against -O2 (same method): -O2 halves the C compiler's time
 * (fluid: 1.12 s -> 0.49 s in cc1) but GCC 12's -O2 vectorises only with
 * its "very cheap" cost model, which leaves loops that call libmvec
 * scalar: map-explog 16x slower, blackscholes 11x, canny 7.4x, fluid
 * 3.2x, mandelbrot-while 1.17x; dotp 0.60x and nbody 0.80x (noisy:
 * measured while the machine ran the test suite).  -O3 stays.
 * Tried again 2026-11-28 with the element loops (producers, stencils)
 * marked `omp simd` instead of `GCC ivdep`, which GCC vectorises under
 * any cost model: Black-Scholes then kept its libmvec calls at -O2.
 * Wall-clock medians of three interleaved rounds of `axle run P --runs
 * 7` (bench sizes, 2 threads, load about 1), -O2 with omp simd against
 * today's -O3: mapfold 1.97x, normalise 1.95x, mandelbrot-while 1.70x,
 * histogram 1.42x, mandelbrot 1.34x, map-explog 1.20x, filterfold
 * 1.17x, radixsort 1.15x, canny 1.14x; fluid 0.92x, smvm 0.76x
 * (unchanged code: noise of +-15%).  It saves about 45% of the C
 * compiler's time (fluid's ten hot units: 1.57 s of CPU at -O3, 0.87 s
 * at -O2, 0.73 s at -O1), not enough to buy those losses, and -O3's
 * extra time is spread over every pass (its unrolled and versioned
 * loops are bigger), so no one -fno- flag recovers it.  GCC's own floor
 * is about 28 ms a unit (driver, cc1 and ld of an empty function, which
 * fluid's ten units pay five times a core on 2 cores). */
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
 * (GCC 12.2, checked). */
#define CPU_FAST_CFLAGS                                                                              \
    "-fno-math-errno -fno-signed-zeros -fno-trapping-math -fassociative-math -freciprocal-math "     \
    "-fno-finite-math-only -ffp-contract=fast"
/* ax_options.finite_math: fast_math's flags with -ffinite-math-only; the
 * unit itself asks for -funsafe-math-optimizations (codegen.c
 * emit_prelude: a pragma, so that the driver links no crtfastmath.o),
 * which GCC's x86 back end needs, with -ffinite-math-only, to compute
 * 1/sqrt and sqrt of f32 vectors as vrsqrtps and a Newton step.  Its
 * default -mrecip also divides f32 vectors by vrcpps and a Newton step:
 * 1.07-1.12x Black-Scholes' time (bench/fastmath, measured with
 * -ffinite-math-only), so x86 keeps the divider (-mrecip=!vec-div).
 * N-body's fold kernel: 0.89-0.94x the fast mode's time (1 thread, CPU
 * time, medians of 31-41 interleaved calls, Zen 4 with AVX2). */
#if defined(__x86_64__) || defined(__i386__)
#define CPU_FINITE_TARGET " -mrecip=!vec-div"
#else
#define CPU_FINITE_TARGET ""
#endif
#define CPU_FINITE_CFLAGS                                                                            \
    "-fno-math-errno -fno-signed-zeros -fno-trapping-math -fassociative-math -freciprocal-math "     \
    "-ffinite-math-only -ffp-contract=fast" CPU_FINITE_TARGET

static Jit *ctx_jit(ax_ctx *cx, CpuCtx *cc)
{
    if (cc->jit) return cc->jit;
    probe_mvec(cc);
    /* Made afresh on each try: nothing of a failed try is kept (or leaks). */
    const char *user = cx->opt.cflags ? cx->opt.cflags : "";
    const char *sem = cx->opt.finite_math ? CPU_FINITE_CFLAGS : cx->opt.fast_math ? CPU_FAST_CFLAGS : CPU_SEMANTIC_CFLAGS;
    size_t n = strlen(CPU_OBJECT_CFLAGS) + strlen(CPU_OPT_CFLAGS) + strlen(user) + strlen(sem) + 4;
    char *cflags = ax__malloc(n);
    char *libs = ax__strdup(cc->mvec && cc->simd_mask ? "-lmvec -lm" : "-lm");
    Jit *jit = NULL;
    if (cflags && libs) {
        snprintf(cflags, n, "%s %s %s %s", CPU_OBJECT_CFLAGS, CPU_OPT_CFLAGS, user, sem);
        JitOptions o;
        memset(&o, 0, sizeof o);
        o.cc = cc_name(cx);
        o.cflags = cflags;
        o.libs = libs;
        o.cache_dir = cx->opt.cache_dir;
        o.no_disk_cache = cx->opt.no_cache;
        o.trace = (cx->opt.debug & AX_DEBUG_CACHE) != 0;
        o.version = AX_VERSION_STRING;
        o.timeout_s = cx->opt.cc_timeout;
        o.size_limit = cx->opt.cache_limit;
        /* The lean link (jit.c) unless the user's compiler command or
         * flags may need the ordinary one (-fsanitize, -pg, -fopenmp,
         * --coverage and the like bring libraries of their own). */
        const char *ccmd = cc_name(cx);
        o.lean_link = !user[0] && ccmd[0] != '-' && !strstr(ccmd, " -") && !strstr(ccmd, "\t-");
        jit = jit_new(&o);
    }
    free(cflags);   /* jit_new copies its options */
    free(libs);
    if (!jit) return ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory");
    cc->jit = jit;
    return jit;
}

static Pool *ctx_pool(ax_ctx *cx, CpuCtx *cc)
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

static bool cpu_available(ax_ctx *cx)
{
    /* Asked for by name: prepare reports what is wrong with the compiler
     * (AX_ERR_COMPILE naming it).  As the default: only with a compiler. */
    if (cx->opt.backend == AX_BACKEND_CPU) return true;
    CpuCtx *cc = ctx_state(cx);
    if (!cc) return false;
    /* Looked for again while missing: a compiler installed later is
     * found (a search of PATH costs microseconds). */
    if (cc->cc_found != 1) cc->cc_found = find_program(cc_name(cx));
    return cc->cc_found == 1;
}

static CgConfig config(ax_ctx *cx, CpuCtx *cc)
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
    CpuCtx *cc = ctx_state(cx);
    if (!cc) return NULL;
    CgConfig cfg = config(cx, cc);
    char err[512];
    CgProg *g = cg_program(p, &cfg, err, sizeof err);
    if (!g) return ctx_error(cx, AX_ERR_BACKEND, "%s", err);
    char *s = cg_join(g);
    cg_free(g);
    if (!s) ctx_error(cx, AX_ERR_NOMEM, "ax_dump: out of memory");
    return s;
}

static bool has_role(const CgNode *cn)
{
    for (int r = 0; r < R_NROLE; r++)
        if (cn->role[r]) return true;
    return false;
}

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
 * (cg_batch): a compiler process costs 20-30 ms before any kernel
 * (start, prelude, link), which seven small units of Canny's paid seven
 * times.  A unit compiled alone is cached alone (so another program with
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
       the prelude: the C compiler's time goes with that (fluid's units,
       one at a time: 30 ms for 1.3 KB of code, 130 ms for 8 KB, with
       preludes of 8-10 KB each), and a batch has one prelude.  Balancing
       whole texts put 18.5 KB of fluid's code in one batch and 32.2 KB
       in the other.  A batch gets the flags of its members that have
       some (GATHER_CFLAGS, codegen.c: measured equal run times on the
       units without gathers, and a faster compile); members with
       different flags: none. */
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
            if (!(btext[nc] = cg_batch(g, cfg, members, m, &bu[nc].len))) goto out;
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

/* The CpuProg of g (taken, with mod and bpos: per unit, its module and
 * its place in a batch, -1 when its names are its own): every thunk and
 * kernel looked up.  NULL when memory is lacking or a symbol is missing
 * (the name in what[64]). */
static CpuProg *make_prog(const Program *p, CgProg *g, JitModule **mod, int *bpos, char *what)
{
    snprintf(what, 64, "memory");
    CpuProg *pp = ax__calloc(1, sizeof *pp);
    if (pp) {
        pp->magic = PROG_MAGIC;
        pp->cg = g;
        pp->prog = p;
        pp->mod = mod;
        pp->bpos = bpos;
        pp->k = ax__calloc((size_t)g->nnodes + 1, sizeof *pp->k);
        pp->chk = ax__calloc((size_t)g->nnodes + 1, sizeof *pp->chk);
        pp->th = ax__calloc((size_t)g->nnodes + 1, sizeof *pp->th);
    }
    if (!pp || !pp->k || !pp->chk || !pp->th) {
        if (pp) prog_release(pp);
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
    prog_release(pp);
    return NULL;
}

static int cpu_prepare(ax_ctx *cx, Program *p, void **state)
{
    *state = NULL;
    CpuCtx *cc = ctx_state(cx);
    if (!cc) return AX_ERR_NOMEM;
    double t0 = now_ms();
    CgConfig cfg = config(cx, cc);
    char err[4096];
    CgProg *g = cg_program(p, &cfg, err, sizeof err);
    if (!g) {
        ctx_error(cx, AX_ERR_BACKEND, "%s", err);
        return AX_ERR_BACKEND;
    }
    double t1 = now_ms();
    p->codegen_ms = t1 - t0;
    if (cx->opt.debug & AX_DEBUG_CODE) {
        char *text = cg_join(g);
        fprintf(stderr, "axle: generated C:\n%s\n", text ? text : "(out of memory)");
        free(text);
    }
    Jit *jit = ctx_jit(cx, cc);
    if (!jit) {
        cg_free(g);
        return AX_ERR_NOMEM;
    }
    err[0] = 0;
    JitModule **mod = ax__calloc((size_t)g->nunits + 1, sizeof *mod);
    int *bpos = ax__calloc((size_t)g->nunits + 1, sizeof *bpos);
    bool hit = true;
    double tj = now_ms(), cms = 0;
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
    if (!hit) cms = now_ms() - tj;
    char what[64];
    CpuProg *pp = make_prog(p, g, mod, bpos, what);
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
                g->nunits, g->len, hit ? "cache hit" : "compile", hit ? now_ms() - t1 : cms);
    *state = pp;
    return 0;
}

/* ------------------------------------------------------------ program entries
 *
 * A compiled program in the disk cache (the blob kind "prog", jit.c), so
 * that a new process finds a program with one lookup instead of running
 * sharing recovery, the optimiser and code generation (Mandelbrot's 13,000
 * source nodes cost about 13 ms there, fluid's code generation 11 ms) and
 * looking up each of its units by the hash of its text.  Keyed by the
 * program's source key (srckey.c, hashed whole) and everything the units'
 * keys cover (compiler, flags, axle's version, the host: jit_key_of),
 * with what else decides the program: safe mode, the maths functions
 * libmvec has, the debug switches that change the passes, the planner's
 * solver (AXLE_PLANNER, AXLE_PLANNER_LIMIT, AXLE_CBC), the test hook
 * for the maths, and the build of axle's own code (its GNU build ID: the
 * optimiser and the code generator are in it; where it has none, nothing
 * is stored).  The entry holds the optimised program (irser.c), what code
 * generation decided per operation (kernel roles, units) and per unit
 * (its module, by key, and place in a batch).  A found entry is verified
 * as a whole (its content hash), its program by the verifier, its
 * description against a fresh cg_describe, and every module must be
 * found and hold every symbol; anything else is a miss, and the program
 * is compiled as usual (which stores the entry again).  The checked
 * copies' units have no text then: load_checked generates it on first
 * need. */

#define PROG_MAGIC_TEXT "axle-prog-1\n"

/* The GNU build ID of the object holding this code (notes of the
 * PT_NOTE segments, dl_iterate_phdr), into cc; false when it has none. */
typedef struct BuildId {
    const void *addr;
    uint8_t id[64];
    size_t n;
} BuildId;

static int find_build_id(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    BuildId *b = arg;
    uintptr_t a = (uintptr_t)b->addr;
    bool mine = false;
    for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        mine = ph->p_type == PT_LOAD && a >= lo && a < lo + ph->p_memsz;
    }
    if (!mine) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const unsigned char *q = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = q + ph->p_memsz;
        while (q + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)q;
            size_t name = (nh->n_namesz + 3) & ~(size_t)3, desc = (nh->n_descsz + 3) & ~(size_t)3;
            const unsigned char *nm = q + sizeof *nh, *d = nm + name;
            if (d + desc > end) break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(nm, "GNU", 4) && nh->n_descsz > 0 &&
                nh->n_descsz <= sizeof b->id) {
                memcpy(b->id, d, nh->n_descsz);
                b->n = nh->n_descsz;
                return 1;
            }
            q = d + desc;
        }
    }
    return 1;
}

static void probe_build_id(CpuCtx *cc)
{
    if (cc->build_id_done) return;
    cc->build_id_done = true;
    BuildId b = {.addr = (const void *)probe_build_id};
    dl_iterate_phdr(find_build_id, &b);
    memcpy(cc->build_id, b.id, sizeof cc->build_id);
    cc->build_id_len = b.n;
}

/* The key of the program entry for source key k; false when there is none
 * (no build ID, no disk cache, the compiler cannot be run). */
static bool prog_key(ax_ctx *cx, CpuCtx *cc, Jit *jit, const SrcKey *k, uint8_t key[32])
{
    probe_build_id(cc);
    if (!cc->build_id_len || !jit_cache_dir(jit)) return false;
    CgConfig cfg = config(cx, cc);
    uint8_t head[96];
    size_t n = 0;
    memcpy(head + n, cc->build_id, cc->build_id_len);
    n += cc->build_id_len;
    head[n++] = cfg.safe;
    memcpy(head + n, &cfg.simd_mask, sizeof cfg.simd_mask);
    n += sizeof cfg.simd_mask;
    unsigned sw = cx->opt.debug & ~(unsigned)(AX_DEBUG_TIMING | AX_DEBUG_CACHE | AX_DEBUG_PROFILE | AX_DEBUG_VERIFY);
    memcpy(head + n, &sw, sizeof sw);
    n += sizeof sw;
    head[n++] = cx->mvec != NULL;
    /* the planner's solver and its limit (AXLE_PLANNER, AXLE_PLANNER_LIMIT,
     * AXLE_CBC): they choose the loops a program is made of */
    memcpy(head + n, &cx->planner, sizeof cx->planner);
    n += sizeof cx->planner;
    memcpy(head + n, &cx->planner_limit_ms, sizeof cx->planner_limit_ms);
    n += sizeof cx->planner_limit_ms;
    _Static_assert(64 + 1 + sizeof(unsigned) * 2 + 1 + sizeof(int) + sizeof(double) <= 96, "prog_key's head");
    JitSha256 s;
    jit_sha256_init(&s);
    jit_sha256_update(&s, head, n);
    const char *cbc = cx->planner_cbc ? cx->planner_cbc : "";
    jit_sha256_update(&s, cbc, strlen(cbc) + 1);
    jit_sha256_update(&s, k->bytes, k->len);
    uint8_t h[32];
    jit_sha256_final(&s, h);
    return jit_key_of(jit, "axle-prog-1", h, sizeof h, key, NULL, 0) == 0;
}

/* Stores the entry of a program just prepared (nothing on failure: it is
 * only a cache). */
static void cpu_keep(ax_ctx *cx, const Program *p, void *state, const SrcKey *k, int64_t nodes, int64_t lets)
{
    CpuCtx *cc = cx->backend_state[AX_BACKEND_CPU];
    CpuProg *pp = state;
    Jit *jit = cc ? cc->jit : NULL;
    uint8_t key[32];
    if (!pp || !jit || !prog_key(cx, cc, jit, k, key)) return;
    const CgProg *g = pp->cg;
    size_t irn = 0;
    unsigned char *ir = ir_save(p, k->arrays, k->narrays, &irn);
    JitModule **mods = ax__calloc((size_t)g->nunits + 1, sizeof *mods);
    Bytes o = {0};
    o.bad = !ir || !mods;
    bytes_put(&o, PROG_MAGIC_TEXT, sizeof PROG_MAGIC_TEXT - 1);
    bytes_putv(&o, nodes);
    bytes_putv(&o, lets);
    bytes_putv(&o, (int64_t)irn);
    if (ir) bytes_put(&o, ir, irn);
    bytes_putv(&o, g->nnodes);
    for (int i = 0; i < g->nnodes; i++) {
        const CgNode *cn = &g->nodes[i];
        if (!cn->x) continue;
        unsigned roles = 0;
        for (int r = 0; r < R_NROLE; r++) roles |= (unsigned)cn->role[r] << r;
        bytes_putv(&o, roles);
        bytes_putv(&o, cn->unit);
        bytes_putv(&o, cn->cold);
        bytes_putv(&o, cn->comm);
        bytes_putv(&o, cn->scratch_leaves);
    }
    /* the units; the modules of the hot ones, each once */
    int nmods = 0;
    bytes_putv(&o, g->nunits);
    for (int u = 0; u < g->nunits && !o.bad; u++) {
        const CgUnit *cu = &g->units[u];
        int mi = -1;
        if (!cu->cold) {
            if (!pp->mod || !pp->mod[u]) {
                o.bad = true;
                break;
            }
            for (int m = 0; m < nmods && mi < 0; m++)
                if (mods[m] == pp->mod[u]) mi = m;
            if (mi < 0) mods[mi = nmods++] = pp->mod[u];
        }
        bytes_putv(&o, cu->node);
        bytes_putv(&o, cu->cold);
        bytes_putv(&o, cu->cflags != NULL);
        bytes_put(&o, &cu->math, sizeof cu->math);
        bytes_putv(&o, mi);
        bytes_putv(&o, cu->cold ? -1 : pp->bpos[u]);
    }
    bytes_putv(&o, nmods);
    for (int m = 0; m < nmods; m++) {
        uint8_t mk[32];
        jit_module_key_bytes(mods[m], mk);
        bytes_put(&o, mk, sizeof mk);
    }
    if (!o.bad) jit_blob_store(jit, "prog", key, o.b, o.len);
    free(o.b);
    free(ir);
    free(mods);
}

/* The program of source key k from its entry: 1 with *prog and *state
 * (and the source's node and let counts and the program's depth in nl),
 * 0 when there is none or it cannot be used (no error: the caller
 * compiles). */
static int cpu_find(ax_ctx *cx, const SrcKey *k, Program **prog, void **state, int64_t nl[3])
{
    *prog = NULL;
    *state = NULL;
    CpuCtx *cc = ctx_state(cx);
    Jit *jit = cc ? ctx_jit(cx, cc) : NULL;
    uint8_t key[32];
    if (!jit || !prog_key(cx, cc, jit, k, key)) return 0;
    double t[6];
    t[0] = now_ms();
    size_t n = 0;
    unsigned char *payload = jit_blob_load(jit, "prog", key, &n);
    if (!payload) return 0;
    t[1] = now_ms();
    Bytes in = bytes_reader(payload, n);
    Program *p = NULL;
    CgProg *g = NULL;
    JitModule **mod = NULL;
    int *bpos = NULL, *umod = NULL;
    const char *why = "malformed";
    const unsigned char *magic = bytes_get(&in, sizeof PROG_MAGIC_TEXT - 1);
    if (!magic || memcmp(magic, PROG_MAGIC_TEXT, sizeof PROG_MAGIC_TEXT - 1)) goto miss;
    nl[0] = bytes_getv(&in, 0, INT64_MAX);
    nl[1] = bytes_getv(&in, 0, INT64_MAX);
    size_t irn = (size_t)bytes_getv(&in, 0, (int64_t)n);
    const unsigned char *ir = bytes_get(&in, irn);
    char msg[256];
    if (!ir || !(p = ir_load(cx, ir, irn, k->arrays, k->narrays, &nl[2]))) goto miss;
    t[2] = now_ms();
    /* (Not verified again, unless AXLE_DEBUG=verify: the entry is the
     * bytes this build wrote, its content hash checked, of a program that
     * a compile here would not verify either; ir_load has checked every
     * reference and bound.  Mandelbrot: 1.1 of its 7 ms from the disk.) */
    why = "not a valid program";
    if ((cx->opt.debug & AX_DEBUG_VERIFY) && ir_verify(p, msg, sizeof msg)) goto miss;
    t[3] = now_ms();
    why = "another description";
    if (!(g = cg_describe(p, msg, sizeof msg)) || bytes_getv(&in, g->nnodes, g->nnodes) != g->nnodes || in.bad)
        goto miss;
    for (int i = 0; i < g->nnodes; i++) {
        CgNode *cn = &g->nodes[i];
        if (!cn->x) continue;
        unsigned roles = (unsigned)bytes_getv(&in, 0, (1 << R_NROLE) - 1);
        for (int r = 0; r < R_NROLE; r++) cn->role[r] = roles >> r & 1;
        cn->unit = (int)bytes_getv(&in, -1, INT32_MAX);
        cn->cold = (int)bytes_getv(&in, -1, INT32_MAX);
        cn->comm = bytes_getv(&in, 0, 1);
        cn->scratch_leaves = (int)bytes_getv(&in, 0, INT32_MAX);
    }
    int nu = (int)bytes_getv(&in, 0, g->nnodes + 1);
    if (in.bad || !(g->units = ax__calloc((size_t)nu + 1, sizeof *g->units)) ||
        !(mod = ax__calloc((size_t)nu + 1, sizeof *mod)) || !(bpos = ax__calloc((size_t)nu + 1, sizeof *bpos)) ||
        !(umod = ax__calloc((size_t)nu + 1, sizeof *umod)))
        goto miss;
    g->nunits = nu;
    for (int u = 0; u < nu; u++) {
        CgUnit *cu = &g->units[u];
        cu->node = (int)bytes_getv(&in, 0, g->nnodes - 1);
        cu->cold = bytes_getv(&in, 0, 1);
        cu->cflags = bytes_getv(&in, 0, 1) ? cg_gather_cflags : NULL;
        const unsigned char *m = bytes_get(&in, sizeof cu->math);
        if (m) memcpy(&cu->math, m, sizeof cu->math);
        umod[u] = (int)bytes_getv(&in, -1, nu);
        bpos[u] = (int)bytes_getv(&in, -1, nu);
        if (!in.bad && (cu->cold != (umod[u] < 0) || !g->nodes[cu->node].x)) in.bad = true;
    }
    for (int i = 0; i < g->nnodes && !in.bad; i++) {
        const CgNode *cn = &g->nodes[i];
        if (cn->x && (cn->unit >= nu || cn->cold >= nu || (cn->unit >= 0 && g->units[cn->unit].cold) ||
                      (cn->cold >= 0 && !g->units[cn->cold].cold)))
            in.bad = true;
    }
    int nmods = (int)bytes_getv(&in, 0, nu);
    if (in.bad) goto miss;
    why = "a module is missing";
    t[4] = now_ms();
    for (int mi = 0; mi < nmods; mi++) {
        const unsigned char *mk = bytes_get(&in, 32);
        JitModule *m = mk ? jit_module_by_key(jit, mk) : NULL;
        if (!m) goto miss;
        for (int u = 0; u < nu; u++)
            if (umod[u] == mi) mod[u] = m;
    }
    why = "malformed";
    for (int u = 0; u < nu; u++)
        if (umod[u] >= nmods) goto miss;
    if (in.at != in.len) goto miss;
    free(umod);
    free(payload);
    char what[64];
    CpuProg *pp = make_prog(p, g, mod, bpos, what);   /* takes g, mod, bpos */
    g = NULL;
    if (!pp) {
        if (cx->opt.debug & AX_DEBUG_CACHE)
            fprintf(stderr, "axle: cache: program entry unusable (%s missing)\n", what);
        program_free(p);
        return 0;
    }
    cc->counters.prepared++;
    cc->counters.cached++;
    t[5] = now_ms();
    if (cx->opt.debug & AX_DEBUG_CACHE) fprintf(stderr, "axle: cache: program entry found\n");
    if (cx->opt.debug & AX_DEBUG_TIMING)
        fprintf(stderr, "axle: timing: program entry of %zu bytes: read %.3f ms, program %.3f, verified %.3f, "
                "described %.3f, %d modules and their symbols %.3f\n", n, t[1] - t[0], t[2] - t[1], t[3] - t[2],
                t[4] - t[3], nmods, t[5] - t[4]);
    *prog = p;
    *state = pp;
    return 1;
miss:
    if (cx->opt.debug & AX_DEBUG_CACHE) fprintf(stderr, "axle: cache: program entry unusable (%s)\n", why);
    free(umod);
    free(mod);
    free(bpos);
    cg_free(g);
    program_free(p);
    free(payload);
    return 0;
}

/* ------------------------------------------------------------ executor */

typedef struct Ex {
    ax_ctx *cx;
    CpuCtx *cc;
    CpuProg *pp;
    Pool *pool;
    int nthreads;
    Host h;                   /* the array level (src/runtime/host.c) */
} Ex;

static int eval_acc(Ex *ex, const Node *x, ax_array **out) { return host_eval(&ex->h, x, out); }
static int eval1(Ex *ex, const Node *x, ax_array **a) { return host_eval1(&ex->h, x, a); }
#define release_all host_release
#define awidth host_width
#define aoffset host_offset
#define api_name host_api_name
#define fmt_ints host_fmt_ints

/* The failure paths are kept out of line (noinline, cold): their message
 * buffers would otherwise sit in the frames of the executor's recursion
 * along the program's nesting (2.4 KB a level, now a fifth of that). */
static int fail(Ex *ex, ax_status st, const char *fmt, ...) __attribute__((format(printf, 3, 4), noinline, cold));
static int fail(Ex *ex, ax_status st, const char *fmt, ...)
{
    char msg[AX_ERRMSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return host_fail(&ex->h, st, "%s", msg);
}

static int nomem(Ex *ex) { return host_nomem(&ex->h); }
static int malformed(Ex *ex, const Node *x, const char *what) { return host_malformed(&ex->h, x, what); }

/* The error slot -> the interpreter's message. */
__attribute__((noinline, cold)) static int report(Ex *ex, const AxErr *e)
{
    char a[256], b[256];
    int r = e->rank < 0 ? 0 : e->rank > AX_MAX_RANK ? AX_MAX_RANK : e->rank;
    fmt_ints(b, sizeof b, r, e->shape);
    switch (e->site) {
    case SITE_AT:
    case SITE_BACKPERMUTE:
        fmt_ints(a, sizeof a, r, e->ix);
        return fail(ex, AX_ERR_INDEX, "%s: index (%s) out of bounds for shape (%s)",
                    e->site == SITE_AT ? "ax_at" : "ax_backpermute", a, b);
    case SITE_PERMUTE:
        fmt_ints(a, sizeof a, r, e->ix);
        return fail(ex, AX_ERR_INDEX, "ax_permute: target index (%s) out of bounds for shape (%s)", a, b);
    case SITE_ATLIN: {
        int64_t n = 1;
        for (int d = 0; d < r; d++) n *= e->shape[d];
        return fail(ex, AX_ERR_INDEX, "ax_at_linear: position %" PRId64 " out of bounds for shape (%s) (%" PRId64
                    " elements)", e->ix[0], b, n);
    }
    case SITE_RESHAPE: {
        int r1 = e->aux < 0 ? 0 : e->aux > AX_MAX_RANK ? AX_MAX_RANK : e->aux;
        int64_t n1 = shape_size_checked(ex->cx, "ax_reshape", r1, e->ix);
        if (n1 < 0) return -1;   /* (the message is the interpreter's) */
        int64_t n0 = shape_size_checked(ex->cx, "ax_reshape", r, e->shape);
        if (n0 < 0) return -1;
        fmt_ints(a, sizeof a, r1, e->ix);
        return fail(ex, AX_ERR_SHAPE, "ax_reshape: an array of shape (%s) (%" PRId64 " elements) cannot take shape (%s) (%" PRId64
                    " elements)", b, n0, a, n1);
    }
    case SITE_PRIM: {
        const char *name = (unsigned)e->aux < P_NPRIM ? prim_info[e->aux].api : "a primitive";
        if (e->code == AX_ERR_DIVZERO) return fail(ex, AX_ERR_DIVZERO, "%s: integer division by zero", name);
        if (e->code == AX_ERR_SHAPE) return fail(ex, AX_ERR_SHAPE, "%s: the shape does not fit", name);
        return fail(ex, (ax_status)e->code, "%s: run-time fault", name);
    }
    default:
        return fail(ex, e->code ? (ax_status)e->code : AX_ERR_BACKEND, "cpu: run-time fault");
    }
}

static inline int check(Ex *ex, const AxErr *e) { return e->code ? report(ex, e) : 0; }

/* The state of one operation while it runs. */
typedef struct Op1 {
    const Node *x;
    const CgNode *cn;
    AxKernel *k;
    AxThunk *th;
    AxArg *args;
    ax_array **arr;           /* per slot: arrays this operation holds */
    AxScalar *par;
    AxErr err;
    AxCall call;
    void *s1, *s2;
} Op1;

/* Runs kernel k over [0, n): chunks of at least `grain` items, about four
 * per thread; inline when one chunk covers it. */
typedef struct Task {
    AxKernel k;
    const AxCall *c;
    int64_t n, chunk;
    bool checked;   /* start encoded as -1 - start: permute's checked redo */
} Task;

static void task_run(void *arg, int64_t t, int worker)
{
    const Task *tk = arg;
    int64_t s = t * tk->chunk, e = s + tk->chunk < tk->n ? s + tk->chunk : tk->n;
    tk->k(tk->c, tk->checked ? -1 - s : s, e);
}

static void launch(Ex *ex, AxKernel k, const AxCall *c, int64_t n, int64_t grain, bool checked)
{
    if (grain < 1) grain = 1;
    int64_t want = (int64_t)ex->nthreads * 4;
    int64_t chunk = (n + want - 1) / want;
    if (chunk < grain) chunk = grain;
    int64_t ntasks = (n + chunk - 1) / chunk;
    if (ntasks <= 1 || ex->nthreads <= 1) {
        k(c, checked ? -1 : 0, n);
    } else {
        Task tk = {k, c, n, chunk, checked};
        pool_run(ex->pool, task_run, &tk, ntasks);
    }
}

/* The checked copies of o's operation: its cold unit, compiled (or found
 * in a cache) on first need, that is when one of its kernels found a
 * check failing (cg_skel.c kernel_end; the prelude's ax_chk). */
__attribute__((noinline, cold)) static int load_checked(Ex *ex, const Op1 *o)
{
    CpuProg *pp = ex->pp;
    const CgProg *g = pp->cg;
    const CgNode *cn = o->cn;
    if (cn->cold < 0 || cn->cold >= g->nunits) return fail(ex, AX_ERR_BACKEND, "cpu: a checked kernel is missing");
    Jit *jit = ctx_jit(ex->cx, ex->cc);
    if (!jit) return nomem(ex);
    char err[4096] = "";
    if (!g->units[cn->cold].text) {
        /* a program from its entry in the disk cache (no unit text): the
         * code generated again, for every unit at once */
        CgConfig cfg = config(ex->cx, ex->cc);
        CgProg *again = pp->prog ? cg_program(pp->prog, &cfg, err, sizeof err) : NULL;
        if (!again || again->nunits != g->nunits) {
            cg_free(again);
            return fail(ex, AX_ERR_BACKEND, "cpu: the checked kernels cannot be generated: %s", err);
        }
        for (int k = 0; k < g->nunits; k++) {
            CgUnit *w = &pp->cg->units[k];
            free(w->text);
            w->text = again->units[k].text;
            w->len = again->units[k].len;
            w->code_off = again->units[k].code_off;
            again->units[k].text = NULL;
        }
        cg_free(again);
    }
    const CgUnit *u = &g->units[cn->cold];
    bool gcc = jit_is_gcc(jit);
    JitUnit one = {.source = u->text, .len = u->len, .cflags = gcc ? u->cflags : NULL};
    JitModule *m = jit_load_many(jit, &one, 1, 1, NULL, NULL, err, sizeof err) ? NULL : one.module;
    if (!m) return fail(ex, AX_ERR_COMPILE, "ax_run: %s", err[0] ? err : "the C compiler failed");
    for (int r = 0; r < R_NROLE; r++) {
        if (!cn->role[r]) continue;
        char name[64];
        snprintf(name, sizeof name, "axk_u_%s_chk", cg_role_name[r]);
        pp->chk[o->x->num][r] = (AxKernel)jit_sym(m, name);
    }
    ex->cc->counters.checked++;
    return 0;
}

/* Runs kernel k over [0, n) (launch), then reports what its error slot
 * holds.  A kernel that needed its checked copy before it was loaded left
 * its range undone (ax_chk): the copy is loaded and the launch run again,
 * which computes every range alike (kernels write their outputs, never
 * update them, but for permute's, which asks for its own redo instead). */
static int run_kernel_as(Ex *ex, AxKernel k, const AxCall *c, int64_t n, int64_t grain, bool checked)
{
    if (n <= 0) return 0;
    if (!k) return fail(ex, AX_ERR_BACKEND, "cpu: a kernel is missing");
    launch(ex, k, c, n, grain, checked);
    AxErr *e = c->err;
    if (__builtin_expect(e->need, 0)) {
        /* every call is of an operation's own call (Op1.call) */
        const Op1 *o = (const Op1 *)(const void *)((const char *)c - offsetof(Op1, call));
        if (load_checked(ex, o)) return -1;
        e->need = 0;
        if (!e->redo) {
            memset(e, 0, sizeof *e);
            launch(ex, k, c, n, grain, checked);
            if (e->need) return fail(ex, AX_ERR_BACKEND, "cpu: a checked kernel is missing");
        }
    }
    return check(ex, e);
}

static int run_kernel(Ex *ex, AxKernel k, const AxCall *c, int64_t n, int64_t grain)
{
    return run_kernel_as(ex, k, c, n, grain, false);
}

/* (arr's host buffers are current: the executor's own results are, and
 * operands from elsewhere go through array_host in op_begin) */
static void fill(AxArg *a, const ax_array *arr)
{
    a->buf = arr->buf;
    a->size = arr->size;
    a->rank = arr->rank;
    for (int d = 0; d < arr->rank; d++) a->shape[d] = arr->shape[d];
}

static ax_array *new_array(Ex *ex, const Type *elt, int rank, const int64_t *shape, const char *what)
{
    if (shape_size_checked(ex->cx, what, rank, shape) < 0) return NULL;
    return array_alloc(ex->cx, elt, rank, shape, false);
}

/* ---------------------------------------------------- one operation */


static void op_free(Op1 *o)
{
    if (o->arr) release_all(o->arr, o->cn->nout + o->cn->nopd);
    free(o->arr);
    free(o->args);
    free(o->par);
    free(o->s1);
    free(o->s2);
}

static ax_array **free_array(Ex *ex, const CgFree *f)
{
    if (f->use) return (ax_array **)&f->use->arr;
    if ((unsigned)f->id >= (unsigned)ex->h.nvars || !ex->h.aenv[f->id]) return NULL;
    return ex->h.aenv[f->id] + f->off;
}

/* Operands, free arrays, thunks, DELAYED operands' shapes. */
static int op_begin(Ex *ex, const Node *x, Op1 *o)
{
    memset(o, 0, sizeof *o);
    if ((unsigned)x->num >= (unsigned)ex->pp->cg->nnodes) return malformed(ex, x, "not numbered");
    const CgNode *cn = o->cn = &ex->pp->cg->nodes[x->num];
    if (!cn->x || cn->top != x) return malformed(ex, x, "no generated code");
    x = cn->x;   /* an epilogue's consumer (ir_epilogue) */
    o->x = x;
    o->k = ex->pp->k[x->num];
    o->th = ex->pp->th[x->num];
    int ns = cn->nslot;
    o->args = ax__calloc((size_t)ns + 1, sizeof *o->args);
    o->arr = ax__calloc((size_t)ns + 1, sizeof *o->arr);
    o->par = ax__calloc((size_t)cn->nparam + 1, sizeof *o->par);
    if (!o->args || !o->arr || !o->par) return nomem(ex);
    o->call.a = o->args;
    o->call.p = o->par;
    o->call.err = &o->err;
    o->call.chk = (void (*const *)(const AxCall *, int64_t, int64_t))ex->pp->chk[x->num];
    for (int i = 0; i < cn->nopd; i++) {
        const Node *y = x->kid[cn->opd_kid[i]];
        if (y->op == OP_DELAYED) continue;
        if (eval1(ex, y, &o->arr[cn->nout + i]) || array_host(o->arr[cn->nout + i])) return -1;
        fill(&o->args[cn->nout + i], o->arr[cn->nout + i]);
    }
    for (int k = 0; k < cn->nfree; k++) {
        ax_array **a = free_array(ex, &cn->free[k]);
        if (!a || !*a) return malformed(ex, x, "unbound array variable");
        if (array_host(*a)) return -1;
        fill(&o->args[cn->nout + cn->nopd + k], *a);
    }
    for (int t = 0; t < cn->nthunk; t++) {
        o->th[t](&o->call, o->par + cn->poff[t]);
        if (check(ex, &o->err)) return -1;
    }
    for (int i = 0; i < cn->nopd; i++) {
        int t = cn->opd_thunk[i];
        if (t < 0) continue;
        const Node *y = x->kid[cn->opd_kid[i]];
        AxArg *a = &o->args[cn->nout + i];
        a->rank = y->type->rank;
        for (int d = 0; d < a->rank; d++) a->shape[d] = o->par[cn->poff[t] + d].i;
        /* the interpreter's wording: it allocates the delayed array */
        if ((a->size = shape_size_checked(ex->cx, "a fused producer", a->rank, a->shape)) < 0) return -1;
    }
    return 0;
}

static const AxArg *opd(Op1 *o, int i) { return &o->args[o->cn->nout + i]; }
static const AxScalar *thunk_val(Op1 *o, int kid) { return o->par + o->cn->poff[o->cn->kid_thunk[kid]]; }

/* Allocates output slot s. */
static int out_alloc(Ex *ex, Op1 *o, int s, const Type *elt, int rank, const int64_t *shape)
{
    ax_array *a = new_array(ex, elt, rank, shape, api_name(o->x->op));
    if (!a) return -1;
    o->arr[s] = a;
    fill(&o->args[s], a);
    return 0;
}

static int op_end(Ex *ex, Op1 *o, int rc, ax_array **out)
{
    if (rc == 0)
        for (int s = 0; s < o->cn->nout; s++) {
            out[s] = o->arr[s];
            o->arr[s] = NULL;
        }
    op_free(o);
    return rc;
}

/* (noinline: see ex_op) */
__attribute__((noinline)) static int ex_producer(Ex *ex, const Node *x, Op1 *o)
{
    const Type *elt = x->type->elt;
    int r = x->type->rank;
    int64_t sh[AX_MAX_RANK];
    CgRole role = R_MAIN;
    switch (x->op) {
    case OP_GENERATE: case OP_BACKPERMUTE: case OP_TRANSFORM: {
        const AxScalar *v = thunk_val(o, 0);
        for (int d = 0; d < r; d++) sh[d] = v[d].i;
        break;
    }
    case OP_MAP:
    case OP_ZIPWITH: {
        /* the intersection; linear when every input has that shape */
        bool same = true;
        for (int d = 0; d < r; d++) {
            sh[d] = opd(o, 0)->shape[d];
            for (int i = 1; i < o->cn->nopd; i++)
                if (opd(o, i)->shape[d] < sh[d]) sh[d] = opd(o, i)->shape[d];
        }
        for (int i = 0; i < o->cn->nopd; i++)
            for (int d = 0; d < r; d++)
                if (opd(o, i)->shape[d] != sh[d]) same = false;
        role = same ? R_LIN : R_MAIN;
        break;
    }
    case OP_RESHAPE: {
        const AxScalar *v = thunk_val(o, 0);
        for (int d = 0; d < r; d++) sh[d] = v[d].i;
        int64_t n = shape_size_checked(ex->cx, "ax_reshape", r, sh);
        if (n < 0) return -1;
        if (n != opd(o, 0)->size) {
            char a[256], b[256];
            fmt_ints(a, sizeof a, opd(o, 0)->rank, opd(o, 0)->shape);
            fmt_ints(b, sizeof b, r, sh);
            return fail(ex, AX_ERR_SHAPE,
                        "ax_reshape: an array of shape (%s) (%" PRId64 " elements) cannot take shape (%s) (%" PRId64
                        " elements)", a, opd(o, 0)->size, b, n);
        }
        role = R_LIN;
        break;
    }
    case OP_REPLICATE:
    case OP_SLICE: {
        bool rep = x->op == OP_REPLICATE;
        const Slice *sp = x->slice;
        const AxArg *src = opd(o, 0);
        int rr = 0;
        for (int d = 0, k = 0, s = 0; d < sp->n; d++) {
            if (!sp->fixed[d]) {
                sh[rr++] = src->shape[s++];
                continue;
            }
            int64_t v = thunk_val(o, 1 + k++)->i;
            if (rep) {
                sh[rr++] = v;
            } else {
                if (v < 0 || v >= src->shape[s]) {
                    char b[256];
                    fmt_ints(b, sizeof b, src->rank, src->shape);
                    return fail(ex, AX_ERR_INDEX, "ax_slice_: index %" PRId64 " of dimension %d out of bounds for shape (%s)",
                                v, s, b);
                }
                s++;
            }
        }
        break;
    }
    default:
        return malformed(ex, x, "not a producer");
    }
    if (out_alloc(ex, o, 0, elt, r, sh)) return -1;
    if (!o->k[role]) role = role == R_LIN ? R_MAIN : R_LIN;   /* rank <= 1: only lin */
    return run_kernel(ex, o->k[role], &o->call, o->args[0].size, GRAIN);
}

/* Scratch for m partial results of type elt (64-byte aligned leaves). */
static void *scratch_alloc(const Type *elt, int64_t m)
{
    int64_t b = cg_scratch_bytes(elt, m);
    return ax__aligned_alloc(64, (size_t)((b + 63) & ~(int64_t)63) + 64);
}

/* The chunks of a fold or scan over rows x n: one per row when the rows
 * keep every thread busy, else rows split into chunks of >= GRAIN. */
static void plan_rows(Ex *ex, Op1 *o, int64_t rows, int64_t n)
{
    int64_t chunk = n;
    if (ex->nthreads > 1 && rows < 2 * (int64_t)ex->nthreads && n >= 4 * (int64_t)GRAIN) {
        int64_t want = ((int64_t)ex->nthreads * 4 + rows - 1) / rows;
        chunk = (n + want - 1) / want;
        if (chunk < GRAIN) chunk = GRAIN;
    }
    o->call.n = n;
    o->call.chunk = chunk;
    o->call.nchunk = chunk > 0 ? (n + chunk - 1) / chunk : 0;
    o->call.m = rows * o->call.nchunk;
}

/* (noinline: see ex_op) */
__attribute__((noinline)) static int ex_fold(Ex *ex, const Node *x, Op1 *o)
{
    bool z = x->op == OP_FOLD;
    const Type *elt = x->type->elt;
    const AxArg *src = opd(o, 0);
    if (src->rank < 1) return malformed(ex, x, "rank 0");
    int64_t n = src->shape[src->rank - 1];
    if (out_alloc(ex, o, 0, cg_slot_type(o->cn, 0)->elt, src->rank - 1, src->shape)) return -1;
    int64_t rows = o->args[0].size;
    if (rows == 0) return 0;
    if (!z && n == 0)
        return fail(ex, AX_ERR_SHAPE, "%s: cannot reduce an empty row (the innermost extent is 0)", api_name(x->op));
    plan_rows(ex, o, rows, n);
    o->call.s1 = &o->call;   /* never read without partials; not NULL */
    if (n == 0) return run_kernel(ex, o->k[R_COMB], &o->call, rows, GRAIN);   /* every row is z */
    if (o->call.nchunk == 1) return run_kernel(ex, o->k[R_PART], &o->call, rows, GRAIN / n + 1);
    if (!(o->s1 = scratch_alloc(elt, o->call.m))) return nomem(ex);
    o->call.s1 = o->s1;
    if (run_kernel(ex, o->k[R_PART], &o->call, o->call.m, 1)) return -1;
    return run_kernel(ex, o->k[R_COMB], &o->call, rows, 1);
}

/* Segment lengths (interp.c seg_lengths: the same checks and messages). */
static int seg_offsets(Ex *ex, Op1 *o, const char *what, int64_t n, int64_t *off)
{
    const Node *segn = o->x->kid[o->cn->opd_kid[1]];
    const AxArg *sa = opd(o, 1);
    ax_scalar s = segn->type->elt->kind == TY_SCALAR ? segn->type->elt->s : AX_F64;
    int64_t nseg = sa->size;
    int64_t *mat = NULL;
    if (segn->op == OP_DELAYED) {
        if (!(mat = ax__malloc(sizeof *mat * (size_t)(nseg > 0 ? nseg : 1)))) return nomem(ex);
        o->call.s2 = mat;
        int rc = run_kernel(ex, o->k[R_MAT], &o->call, nseg, GRAIN);
        o->call.s2 = NULL;
        if (rc) {
            free(mat);
            return -1;
        }
        s = AX_I64;
    } else if (sa->rank != 1 || !sc_is_int(s)) {
        return fail(ex, AX_ERR_SHAPE, "%s: the segments are not a vector of integers", what);
    }
    int64_t sum = 0, k = 0;
    int rc = 0;
    off[0] = 0;
    /* The common case first, in a tight loop (no call per segment: a CSR
     * matrix has a segment per row): i32 or i64 lengths, each in range.
     * At the first length that is not, the general loop starts over and
     * reports it. */
    if (s == AX_I32 || s == AX_I64) {
        const int32_t *l32 = s == AX_I32 ? sa->buf[0] : NULL;
        const int64_t *l64 = mat ? mat : s == AX_I64 ? sa->buf[0] : NULL;
        for (; k < nseg; k++) {
            int64_t l = l32 ? l32[k] : l64[k];
            if (l < 0 || l > n - sum) break;
            sum += l;
            off[k + 1] = sum;
        }
        if (k == nseg && sum == n) {
            free(mat);
            return 0;
        }
        sum = 0;
    }
    for (k = 0; k < nseg; k++) {
        Scalar v;
        if (mat) v.i = mat[k];
        else v = sc_load(sa->buf[0], s, k);
        if (!sc_is_signed(s) && v.u > (uint64_t)INT64_MAX) {
            rc = fail(ex, AX_ERR_SHAPE, "%s: segment %" PRId64 " has length %" PRIu64 ", more than the %" PRId64
                      " elements of a row", what, k, v.u, n);
            break;
        }
        int64_t l = sc_is_signed(s) ? v.i : (int64_t)v.u;
        if (l < 0) {
            rc = fail(ex, AX_ERR_SHAPE, "%s: segment %" PRId64 " has negative length %" PRId64, what, k, l);
            break;
        }
        if (l > n - sum) {
            rc = fail(ex, AX_ERR_SHAPE, "%s: the segment lengths add up to more than the innermost extent %" PRId64,
                      what, n);
            break;
        }
        sum += l;
        off[k + 1] = sum;
    }
    free(mat);
    if (rc == 0 && sum != n)
        rc = fail(ex, AX_ERR_SHAPE, "%s: the segment lengths add up to %" PRId64 ", not the innermost extent %" PRId64,
                  what, sum, n);
    return rc;
}

/* (noinline: see ex_op) */
__attribute__((noinline)) static int ex_foldseg(Ex *ex, const Node *x, Op1 *o)
{
    bool z = x->op == OP_FOLDSEG;
    const char *what = api_name(x->op);
    const AxArg *src = opd(o, 0);
    int r = src->rank;
    if (r < 1) return malformed(ex, x, "rank 0");
    int64_t n = src->shape[r - 1], nseg = opd(o, 1)->size;
    int64_t *off = ax__malloc(sizeof *off * (size_t)(nseg + 1));
    if (!off) return nomem(ex);
    o->s1 = off;
    o->call.s1 = off;
    if (seg_offsets(ex, o, what, n, off)) return -1;
    int64_t sh[AX_MAX_RANK];
    memcpy(sh, src->shape, sizeof *sh * (size_t)r);
    sh[r - 1] = nseg;
    if (out_alloc(ex, o, 0, x->type->elt, r, sh)) return -1;
    int64_t total = o->args[0].size, rows = nseg > 0 ? total / nseg : 0;
    for (int64_t k = 0; !z && rows > 0 && k < nseg; k++)
        if (off[k + 1] == off[k]) return fail(ex, AX_ERR_SHAPE, "%s: cannot reduce segment %" PRId64 ", which is empty", what, k);
    o->call.n = n;
    o->call.m = nseg;
    int64_t avg = nseg > 0 ? n / nseg : 1;
    return run_kernel(ex, o->k[R_SEG], &o->call, total, avg > 0 ? GRAIN / avg + 1 : GRAIN);
}

/* (noinline: see ex_op) */
__attribute__((noinline)) static int ex_scan(Ex *ex, const Node *x, Op1 *o)
{
    Op op = x->op;
    bool z = !(op == OP_SCANL1 || op == OP_SCANR1), exl = op == OP_SCANLEX || op == OP_SCANREX;
    const Type *rt = exl ? x->type->elts[0] : x->type;
    const Type *elt = rt->elt;
    const AxArg *src = opd(o, 0);
    int r = src->rank;
    if (r < 1) return malformed(ex, x, "rank 0");
    int64_t n = src->shape[r - 1];
    if (z && !exl && n == INT64_MAX) return fail(ex, AX_ERR_SHAPE, "%s: the result's extent overflows 64 bits", api_name(op));
    int64_t ext = n + (z && !exl), sh[AX_MAX_RANK];
    memcpy(sh, src->shape, sizeof *sh * (size_t)r);
    sh[r - 1] = ext;
    if (out_alloc(ex, o, 0, cg_slot_type(o->cn, 0)->elt, r, sh)) return -1;
    if (exl && out_alloc(ex, o, 1, elt, r - 1, src->shape)) return -1;
    int64_t rows = exl ? o->args[1].size : ext > 0 ? o->args[0].size / ext : 0;
    if (rows == 0 || (!z && n == 0)) return 0;
    plan_rows(ex, o, rows, n);
    o->call.s1 = o->call.s2 = &o->call;   /* never read with one chunk; not NULL */
    if (o->call.nchunk <= 1) {
        /* one sequential scan per row (an empty row: just z) */
        o->call.nchunk = 1;
        o->call.chunk = n;
        o->call.m = rows;
        return run_kernel(ex, o->k[R_SCAN], &o->call, rows, n > 0 ? GRAIN / n + 1 : GRAIN);
    }
    /* Three phases (the thesis' and Accelerate's multicore scan): chunk
     * totals in parallel; per row, the carries in chunk order; the chunks
     * scanned in parallel from their carries. */
    if (!(o->s1 = scratch_alloc(elt, o->call.m)) || !(o->s2 = scratch_alloc(elt, o->call.m))) return nomem(ex);
    o->call.s1 = o->s1;
    o->call.s2 = o->s2;
    if (run_kernel(ex, o->k[R_PART], &o->call, o->call.m, 1)) return -1;
    if (run_kernel(ex, o->k[R_CARRY], &o->call, rows, 1)) return -1;
    return run_kernel(ex, o->k[R_SCAN], &o->call, o->call.m, 1);
}

/* Permute by private copies (cg_skel.c emit_permute), when the generator
 * offered them and they pay: a target small against the source (a
 * histogram), so that filling and merging a copy per thread costs little
 * next to the atomic read-modify-write per source element they replace
 * (which contend for the same few cache lines across threads).
 * AXLE_PERMUTE=atomic or =private forces a strategy (the tests run both).
 * 1: done (or redo asked); 0: not taken; -1: error. */
static int permute_private(Ex *ex, const Node *x, Op1 *o, int64_t tsize, int64_t ssize)
{
    if (!o->k[R_PPRIV] || !o->k[R_PMERGE] || tsize <= 0) return 0;
    const char *force = getenv("AXLE_PERMUTE");
    bool want_private = force && !strcmp(force, "private"), want_atomic = force && !strcmp(force, "atomic");
    if (want_atomic) return 0;
    const Type *elt = x->type->elt;
    int64_t stride = 0;
    for (int k = 0; k < elt->width; k++) stride += (tsize * (sc_bits(ty_leaf(elt, k)) / 8) + 63) & ~(int64_t)63;
    int64_t ntasks = ex->nthreads > 0 ? ex->nthreads : 1;
    if (ntasks > (ssize + GRAIN - 1) / GRAIN) ntasks = (ssize + GRAIN - 1) / GRAIN;
    if (ntasks < 1) ntasks = 1;
    /* what the copies cost (fill and merge: 2 * tsize per task) against
     * the source's elements; and at most 64 MiB of copies */
    bool pays = tsize * ntasks * 8 <= ssize && stride <= ((int64_t)64 << 20) / ntasks;
    if (!want_private && !pays) return 0;
    if (stride > INT64_MAX / ntasks) return 0;
    int64_t chunk = (ssize + ntasks - 1) / ntasks;
    ntasks = (ssize + chunk - 1) / chunk;
    free(o->s2);
    if (!(o->s2 = ax__malloc((size_t)(stride * ntasks)))) return nomem(ex);
    o->call.s2 = o->s2;
    o->call.m = stride;
    o->call.chunk = chunk;
    o->call.nchunk = ntasks;
    if (run_kernel(ex, o->k[R_PPRIV], &o->call, ssize, chunk)) return -1;
    if (o->err.redo) return 1;   /* the caller redoes it checked, atomically */
    if (run_kernel(ex, o->k[R_PMERGE], &o->call, tsize, GRAIN)) return -1;
    return 1;
}

/* (noinline: see ex_op) */
__attribute__((noinline)) static int ex_permute(Ex *ex, const Node *x, Op1 *o)
{
    const AxArg *d = opd(o, 0), *s = opd(o, 1);
    if (out_alloc(ex, o, 0, x->type->elt, d->rank, d->shape)) return -1;
    if (run_kernel(ex, o->k[R_DFLT], &o->call, o->args[0].size, GRAIN)) return -1;
    if (s->size == 0) return 0;
    if (!(o->s1 = ax__calloc(STRIPES, sizeof(int32_t)))) return nomem(ex);
    o->call.s1 = o->s1;
    int rc = permute_private(ex, x, o, d->size, s->size);
    if (rc < 0) return -1;
    if (rc == 0 && run_kernel(ex, o->k[R_PERM], &o->call, s->size, GRAIN)) return -1;
    if (!o->err.redo) return 0;
    /* A deferred check fired (cg_skel.c emit_permute): from the defaults
     * again, combining with the checked kernel, which reports the first
     * fault if there is one. */
    o->err.redo = 0;
    if (run_kernel(ex, o->k[R_DFLT], &o->call, o->args[0].size, GRAIN)) return -1;
    return run_kernel_as(ex, o->k[R_PERM], &o->call, s->size, GRAIN, true);
}

/* (noinline: see ex_op) */
__attribute__((noinline)) static int ex_stencil(Ex *ex, const Node *x, Op1 *o)
{
    int r = x->type->rank;
    int64_t sh[AX_MAX_RANK];
    for (int d = 0; d < r; d++) {
        sh[d] = opd(o, 0)->shape[d];
        for (int i = 1; i < o->cn->nopd; i++)
            if (opd(o, i)->shape[d] < sh[d]) sh[d] = opd(o, i)->shape[d];
    }
    if (out_alloc(ex, o, 0, x->type->elt, r, sh)) return -1;
    return run_kernel(ex, o->k[R_MAIN], &o->call, o->args[0].size, GRAIN);
}

/* Filter: a parallel count per chunk, an exclusive scan of the counts,
 * a parallel scatter. */
/* (noinline: see ex_op) */
__attribute__((noinline)) static int ex_filter(Ex *ex, const Node *x, Op1 *o)
{
    int64_t n = opd(o, 0)->size;
    int64_t want = (int64_t)ex->nthreads * 4, chunk = (n + want - 1) / want;
    if (chunk < GRAIN) chunk = GRAIN;
    int64_t nch = n > 0 ? (n + chunk - 1) / chunk : 0;
    o->call.n = n;
    o->call.chunk = chunk;
    o->call.m = nch;
    int64_t *cnt = o->s1 = ax__malloc(sizeof *cnt * (size_t)(nch + 1));
    int64_t *offs = o->s2 = ax__malloc(sizeof *offs * (size_t)(nch + 1));
    if (!cnt || !offs) return nomem(ex);
    o->call.s1 = cnt;
    o->call.s2 = offs;
    if (run_kernel(ex, o->k[R_COUNT], &o->call, nch, 1)) return -1;
    int64_t total = 0;
    for (int64_t t = 0; t < nch; t++) {
        offs[t] = total;
        total += cnt[t];
    }
    if (out_alloc(ex, o, 0, x->type->elt, 1, &total)) return -1;
    return run_kernel(ex, o->k[R_SCATTER], &o->call, nch, 1);
}

/* A multi-generator loop (cg_skel.c emit_loop): the fold's chunks of rows
 * (or, with filters, a vector's chunks as filter's), part over every
 * chunk (collects written, reductions' partials and filters' counts),
 * comb per row, then each filter's offsets per chunk and the scatter. */
/* (noinline: see ex_op) */
__attribute__((noinline)) static int ex_loop(Ex *ex, const Node *x, Op1 *o)
{
    const Loop *lp = x->loop;
    const AxArg *src = opd(o, 0);
    int r = src->rank, ng = lp->ngen, nflt = 0, nred = 0;
    if (r < 1) return malformed(ex, x, "rank 0");
    int64_t n = src->shape[r - 1], sbytes = 0;
    int64_t rows = shape_size_checked(ex->cx, "a loop", r - 1, src->shape);
    if (rows < 0) return -1;
    for (int q = 0; q < ng; q++) {
        const LoopGen *gn = &lp->gen[q];
        const Type *rt = x->type->elts[q];
        if (gn->kind == LOOP_COLLECT && out_alloc(ex, o, q, rt->elt, r, src->shape)) return -1;
        if (gn->kind == LOOP_FILTER) nflt++;
        if (gn->kind != LOOP_REDUCE) continue;
        nred++;
        if (out_alloc(ex, o, q, rt->elt, r - 1, src->shape)) return -1;
        if (gn->z < 0 && n == 0 && rows > 0)
            return fail(ex, AX_ERR_SHAPE, "ax_fold1: cannot reduce an empty row (the innermost extent is 0)");
    }
    if (nflt && r != 1) return malformed(ex, x, "a filter over rank > 1");
    if (nflt) {
        /* the filter's chunks: about four a thread */
        int64_t want = (int64_t)ex->nthreads * 4, chunk = (n + want - 1) / want;
        if (chunk < GRAIN) chunk = GRAIN;
        o->call.n = n;
        o->call.chunk = chunk;
        o->call.nchunk = n > 0 ? (n + chunk - 1) / chunk : 0;
        o->call.m = o->call.nchunk;
    } else {
        plan_rows(ex, o, rows, n);
    }
    int64_t m = o->call.m, nch = o->call.nchunk;
    o->call.s1 = o->call.s2 = &o->call;   /* never read when empty; not NULL */
    /* s2: per generator and chunk, filters' counts, then their offsets,
     * then conditional reductions' "has an element" flags */
    bool cond = false;
    for (int q = 0; q < ng; q++) {
        if (lp->gen[q].kind != LOOP_REDUCE) continue;
        sbytes += cg_scratch_bytes(loop_comp_type(x, lp->gen[q].comp), m);
        cond = cond || lp->gen[q].pred >= 0;
    }
    if ((nflt || cond) && !(o->s2 = o->call.s2 = ax__calloc((size_t)(3 * ng * m + 1), sizeof(int64_t)))) return nomem(ex);
    if (rows > 0 && n > 0) {
        if (nred && nch > 1) {
            if (!(o->s1 = ax__aligned_alloc(64, (size_t)((sbytes + 63) & ~(int64_t)63) + 64))) return nomem(ex);
            o->call.s1 = o->s1;
        }
        if (run_kernel(ex, o->k[R_PART], &o->call, m, nch == 1 ? GRAIN / n + 1 : 1)) return -1;
        if (nred && nch > 1 && run_kernel(ex, o->k[R_COMB], &o->call, rows, 1)) return -1;
    } else if (nred && rows > 0) {
        o->call.nchunk = 0;   /* every row is z */
        if (run_kernel(ex, o->k[R_COMB], &o->call, rows, GRAIN)) return -1;
    }
    if (!nflt) return 0;
    int64_t *cnt = o->s2, *offs = cnt + (int64_t)ng * m;
    for (int q = 0; q < ng; q++) {
        if (lp->gen[q].kind != LOOP_FILTER) continue;
        int64_t total = 0;
        for (int64_t t = 0; t < m; t++) {
            offs[q * m + t] = total;
            total += cnt[q * m + t];
        }
        if (out_alloc(ex, o, q, x->type->elts[q]->elt, 1, &total)) return -1;
    }
    return m > 0 ? run_kernel(ex, o->k[R_SCATTER], &o->call, m, 1) : 0;
}

/* (noinline: see ex_op) */
__attribute__((noinline)) static int ex_unit(Ex *ex, const Node *x, Op1 *o)
{
    int64_t none[1] = {0};
    const Type *elt = x->type->elt;
    if (out_alloc(ex, o, 0, elt, 0, none)) return -1;
    const AxScalar *v = thunk_val(o, 0);
    for (int l = 0; l < elt->width; l++) {
        Scalar s;
        memcpy(&s, &v[l], sizeof s);
        sc_store(o->arr[0]->buf[l], ty_leaf(elt, l), 0, s);
    }
    return 0;
}

/* ex_op is on the recursion along the program's nesting (op_begin
 * evaluates the operands), so its frame stays small: the operations'
 * bodies, with their shape arrays and message buffers, are not inlined
 * into it (about 1.3 KB a level before, run_deep sizes stacks by it). */
static int ex_op(Ex *ex, const Node *x, ax_array **out)
{
    Op1 o;
    int rc = op_begin(ex, x, &o);   /* evaluates the operands */
    if (rc == 0) x = o.x;           /* (an epilogue's consumer: ir_epilogue) */
    /* AXLE_DEBUG=profile: each operation's own time (its allocations
     * included), with the number `axle dump --stage c` shows. */
    bool prof = (ex->cx->opt.debug & AX_DEBUG_PROFILE) != 0;
    double t0 = prof ? now_ms() : 0;
    if (rc == 0) {
        switch (x->op) {
        case OP_UNIT: rc = ex_unit(ex, x, &o); break;
        case OP_GENERATE: case OP_MAP: case OP_ZIPWITH: case OP_BACKPERMUTE: case OP_TRANSFORM:
        case OP_REPLICATE: case OP_SLICE: case OP_RESHAPE:
            rc = ex_producer(ex, x, &o);
            break;
        case OP_FOLD: case OP_FOLD1: rc = ex_fold(ex, x, &o); break;
        case OP_FOLDSEG: case OP_FOLD1SEG: rc = ex_foldseg(ex, x, &o); break;
        case OP_SCANL: case OP_SCANL1: case OP_SCANR: case OP_SCANR1: case OP_SCANLEX: case OP_SCANREX:
            rc = ex_scan(ex, x, &o);
            break;
        case OP_PERMUTE: rc = ex_permute(ex, x, &o); break;
        case OP_STENCIL: case OP_STENCIL2: rc = ex_stencil(ex, x, &o); break;
        case OP_FILTER: rc = ex_filter(ex, x, &o); break;
        case OP_LOOP: rc = ex_loop(ex, x, &o); break;
        default: rc = malformed(ex, x, "not an array operation"); break;
        }
    }
    rc = op_end(ex, &o, rc ? -1 : 0, out);
    if (prof && rc == 0 && out && out[0])
        fprintf(stderr, "axle: profile: %4d %-11s %10lld elements %9.3f ms\n", x->num, op_name(x->op),
                (long long)out[0]->size, now_ms() - t0);
    return rc;
}

/* ---------------------------------------------------- structure */

/* The host walk's callbacks (src/runtime/host.c). */
static int host_op(Host *h, const Node *x, ax_array **out) { return ex_op(h->self, x, out); }

static int host_cond(Host *h, const Node *x, bool *c)
{
    Ex *ex = h->self;
    Op1 o;
    int rc = op_begin(ex, x, &o);
    *c = rc == 0 && thunk_val(&o, 0)->b != 0;
    op_free(&o);
    return rc ? -1 : 0;
}

static const HostOps cpu_host = {.name = "cpu", .op = host_op, .cond = host_cond, .embeds_delayed = true};

/* host.h: x run with another executor's walk (its environment and
 * liveness counters, shared through the copy of h). */
int cpu_run_op(Host *h, void *state, const Node *x, ax_array **out)
{
    CpuProg *pp = state;
    CpuCtx *cc = ctx_state(h->cx);
    if (!cc) return -1;
    if (!pp || pp->magic != PROG_MAGIC) return host_fail(h, AX_ERR_BACKEND, "cpu: no program to run");
    Ex ex;
    memset(&ex, 0, sizeof ex);
    ex.cx = h->cx;
    ex.cc = cc;
    ex.pp = pp;
    if (!(ex.pool = ctx_pool(h->cx, cc))) return -1;
    ex.nthreads = pool_threads(ex.pool);
    ex.h = *h;
    ex.h.ops = &cpu_host;
    ex.h.self = &ex;
    return ex_op(&ex, x, out);
}

static int cpu_run(ax_ctx *cx, Program *p, void *state, ax_array **out, int max)
{
    CpuProg *pp = state;
    CpuCtx *cc = ctx_state(cx);
    if (!cc) return -1;
    if (!pp || pp->magic != PROG_MAGIC || !p || !p->root) {
        ctx_error(cx, AX_ERR_BACKEND, "cpu: no program to run");
        return -1;
    }
    Ex ex;
    memset(&ex, 0, sizeof ex);
    ex.cx = cx;
    ex.cc = cc;
    ex.pp = pp;
    if (!(ex.pool = ctx_pool(cx, cc))) return -1;
    ex.nthreads = pool_threads(ex.pool);
    int w = awidth(p->root->type);
    if (!pp->live) pp->live = liveness_counts(p);   /* NULL: no early release */
    if (!host_init(&ex.h, &cpu_host, &ex, cx, p, pp->live)) return -1;
    ax_array **res = ax__calloc((size_t)(w > 0 ? w : 1), sizeof *res);
    int n = -1;
    if (!res) {
        nomem(&ex);
    } else if (eval_acc(&ex, p->root, res) == 0) {
        n = max < 0 ? 0 : w < max ? w : max;
        for (int k = 0; k < w; k++) {
            if (k < n) out[k] = res[k];
            else ax_array_release(res[k]);
        }
    }
    free(res);
    host_free(&ex.h);
    return n;
}

const Backend backend_cpu = {
    .name = "cpu",
    .kind = AX_BACKEND_CPU,
    .available = cpu_available,
    .prepare = cpu_prepare,
    .find = cpu_find,
    .keep = cpu_keep,
    .run = cpu_run,
    .release = cpu_release,
};

/*
 * What a compile may spend: wide and deep programs under a small memory
 * limit (ax_options.mem_limit) either compile and run correctly (the
 * reference interpreter's results against the same computed in plain C)
 * or fail with AX_ERR_NOMEM and a message that names the phase and the
 * memory limit; in either case within a time bound and without the
 * process's resident memory growing past a bound.  Each program runs in
 * a child process of its own, whose peak resident size is reset before
 * the compile (/proc/self/clear_refs) and read after it.
 *
 *  - sibling folds of one vector returned as a tuple (300: the ILP
 *    planner presolves them, or says why it did not, without the model
 *    of cubic size it used to make before anything looked at it; 1,000:
 *    more loops than the ILP takes), siblings of maps, maps and folds
 *    mixed, and CBC asked for by name for a model that neither the time
 *    limit nor the memory limit allows;
 *  - chains 100,000 deep: of maps (sharing recovery needs more than the
 *    limit: AX_ERR_NOMEM), of scalar additions inside one map (compiles
 *    under one limit, fails under a smaller one);
 *  - white-box: an arena charging its budget, the planner's fallback
 *    when the budget is short, and the model the ILP counts before it
 *    makes one agreeing with the one it makes, on random programs.
 *
 * AXLE_TEST_BOUNDS_BIG=1 adds bigger sizes (3,000 folds, 10,000 maps and
 * folds, a chain of 300,000 maps).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "harness.h"
#include "ir.h"
#include "opt/plangraph.h"
#include "randprog.h"
#ifndef RANDPROG_LINKED
#include "randprog.c"
#endif
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ------------------------------------------------------------ programs */

enum { NIN = 16 };   /* elements of the input vector: 0, 1, ..., NIN - 1 */

typedef enum { FOLDS, MAPS, MIXED, CHAIN_MAPS, CHAIN_SCALARS } Kind;

static ax_exp add_k(ax_exp x, void *env) { return ax_add(x, ax_f64((double)(intptr_t)env)); }

static ax_exp add_ones(ax_exp x, void *env)
{
    int n = (int)(intptr_t)env;
    for (int i = 0; i < n; i++) x = ax_add(x, ax_f64(1));
    return x;
}

/* Member i of a row of siblings: a fold (sum from i, or maximum from i,
 * in turns) or a map adding i. */
static bool sibling_is_fold(Kind k, int i) { return k == FOLDS || (k == MIXED && i % 2); }

static ax_acc build(ax_ctx *cx, Kind k, int n, ax_acc x)
{
    (void)cx;
    if (k == CHAIN_MAPS) {
        for (int i = 0; i < n; i++) x = ax_map(add_k, (void *)(intptr_t)(i % 7), x);
        return x;
    }
    if (k == CHAIN_SCALARS) return ax_map(add_ones, (void *)(intptr_t)n, x);
    ax_acc *r = malloc(sizeof *r * (size_t)n);
    if (!r) return NULL;
    for (int i = 0; i < n; i++)
        r[i] = sibling_is_fold(k, i) ? ax_fold_all(i % 4 < 2 ? ax_fn_add : ax_fn_max, NULL, ax_f64(i), x)
                                     : ax_map(add_k, (void *)(intptr_t)i, x);
    ax_acc t = ax_atuple(n, r);
    free(r);
    return t;
}

/* The results in plain C: result i's element j (a fold's result has one). */
static double expect(Kind k, int n, int i, int j)
{
    double sum = (NIN - 1) * NIN / 2.0, x = j;
    if (k == CHAIN_MAPS) {
        for (int q = 0; q < n; q++) x += q % 7;
        return x;
    }
    if (k == CHAIN_SCALARS) return x + n;
    if (sibling_is_fold(k, i)) return i % 4 < 2 ? i + sum : (i > NIN - 1 ? i : NIN - 1);
    return x + i;
}

/* ------------------------------------------------------------ one case in a child */

typedef struct Case {
    const char *name;
    Kind kind;
    int n;
    int64_t limit_mb;        /* ax_options.mem_limit */
    const char *planner;     /* AXLE_PLANNER, AXLE_PLANNER_LIMIT */
    const char *planner_ms;
    bool dump;               /* also the plan stage's dump */
} Case;

typedef struct Res {
    int outcome;             /* 1 compiled, ran and correct; 2 AX_ERR_NOMEM; 0 anything else */
    long rss0_kib, grew_kib; /* resident before the compile, its peak's growth */
    double ms;
    int64_t budget_left_used;   /* the compile budget's charge after the compile (0: all given back) */
    char msg[AX_ERRMSG];
    /* the plan dump's solver, why, solve time and limit */
    char solver[32], why[200];
    double solve_cpu_ms, limit_ms;
} Res;

static long status_kib(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long kib = -1;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n)) kib = strtol(line + n, NULL, 10);
    fclose(f);
    return kib;
}

/* The peak resident size from now on (false where the kernel cannot
 * reset it: the growth is then not measured). */
static bool reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void json_str_of(const char *d, const char *key, char *out, size_t size)
{
    const char *k = d ? strstr(d, key) : NULL;
    out[0] = 0;
    if (!k) return;
    k += strlen(key);
    if (*k == '"') k++;
    size_t n = strcspn(k, "\"");
    snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), k);
}

static double json_num(const char *d, const char *key)
{
    const char *k = d ? strstr(d, key) : NULL;
    return k ? strtod(k + strlen(key), NULL) : -1;
}

static void child(const Case *c, Res *r)
{
    if (c->planner) setenv("AXLE_PLANNER", c->planner, 1);
    else unsetenv("AXLE_PLANNER");
    if (c->planner_ms) setenv("AXLE_PLANNER_LIMIT", c->planner_ms, 1);
    else unsetenv("AXLE_PLANNER_LIMIT");
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    o.mem_limit = c->limit_mb << 20;
    o.quiet = true;
    ax_ctx *cx = ax_ctx_new(&o);
    if (!cx) return;
    double in[NIN];
    for (int j = 0; j < NIN; j++) in[j] = j;
    ax_array *a = ax_array_from(cx, AX_F64, 1, (int64_t[]){NIN}, in);
    ax_acc p = a ? build(cx, c->kind, c->n, ax_use(cx, a)) : NULL;
    if (!p) {
        snprintf(r->msg, sizeof r->msg, "building: %s", ax_error(cx));
        ax_array_release(a);
        ax_ctx_free(cx);
        return;
    }
    if (c->dump) {
        char *d = ax_dump(cx, p, "plan", true);
        json_str_of(d, "\"solver\":", r->solver, sizeof r->solver);
        json_str_of(d, "\"solver_why\":", r->why, sizeof r->why);
        r->solve_cpu_ms = json_num(d, "\"solve_cpu_ms\":");
        r->limit_ms = json_num(d, "\"limit_ms\":");
        if (!d) snprintf(r->why, sizeof r->why, "no dump: %s", ax_error(cx));
        free(d);
    }
    r->rss0_kib = status_kib("VmRSS:");
    bool peak = reset_peak();
    double t0 = now_ms();
    ax_program *pr = ax_compile(cx, p);
    int nres = c->kind == CHAIN_MAPS || c->kind == CHAIN_SCALARS ? 1 : c->n;
    ax_array **out = calloc((size_t)nres, sizeof *out);
    int got = pr && out ? ax_program_run(pr, out, nres) : -1;
    r->ms = now_ms() - t0;
    r->grew_kib = peak ? status_kib("VmHWM:") - r->rss0_kib : -1;
    r->budget_left_used = cx->compile_mem.used;
    if (got == nres) {
        bool ok = true;
        for (int i = 0; i < nres && ok; i++) {
            const double *v = ax_array_data(out[i], 0);
            int64_t len = ax_array_size(out[i]);
            for (int64_t j = 0; j < len && ok; j++)
                if (v[j] != expect(c->kind, c->n, i, (int)j)) {
                    ok = false;
                    snprintf(r->msg, sizeof r->msg, "result %d element %lld: %g, expected %g", i, (long long)j, v[j],
                             expect(c->kind, c->n, i, (int)j));
                }
        }
        r->outcome = ok ? 1 : 0;
    } else {
        r->outcome = ax_status_of(cx) == AX_ERR_NOMEM ? 2 : 0;
        snprintf(r->msg, sizeof r->msg, "%s", ax_error(cx));
    }
    for (int i = 0; got > 0 && i < got; i++) ax_array_release(out[i]);
    free(out);
    ax_program_free(pr);
    ax_array_release(a);
    ax_ctx_free(cx);
}

/* Runs c in a child process that may take at most `seconds`. */
static bool run_case(const Case *c, int seconds, Res *r)
{
    memset(r, 0, sizeof *r);
    int fd[2];
    if (pipe(fd) != 0) return false;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
        close(fd[0]);
        alarm((unsigned)seconds);   /* (SIGALRM ends a child that runs past its bound) */
        Res mine;
        memset(&mine, 0, sizeof mine);
        child(c, &mine);
        ssize_t w = write(fd[1], &mine, sizeof mine);
        _exit(w == (ssize_t)sizeof mine ? 0 : 1);   /* not exit: the parent's atexit handlers are its own */
    }
    close(fd[1]);
    ssize_t got = 0;
    for (ssize_t n; got < (ssize_t)sizeof *r && (n = read(fd[0], (char *)r + got, sizeof *r - (size_t)got)) != 0;)
        if (n > 0) got += n;
        else if (errno != EINTR) break;
    close(fd[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(status)) {
        CHECKF(false, "%s: the child ended by signal %d%s", c->name, WTERMSIG(status),
               WTERMSIG(status) == SIGALRM ? " (it ran past its time bound)" : "");
        return false;
    }
    CHECKF(WIFEXITED(status) && WEXITSTATUS(status) == 0 && got == (ssize_t)sizeof *r, "%s: the child failed (status "
           "%d)", c->name, status);
    return got == (ssize_t)sizeof *r;
}

/* The bounds every case is held to: time (the child's alarm, and the
 * compile and run measured), resident growth (the memory limit and what
 * is not charged to it: the source graph the user built is already
 * resident; passes' own tables; the allocator's slack), and the budget
 * given back. */
#if defined(__SANITIZE_ADDRESS__)
enum { SLOW = 4 };
#else
enum { SLOW = 1 };
#endif
static void check_bounds(const Case *c, const Res *r, int seconds)
{
    printf("  %-28s %s in %.0f ms, resident +%ld KiB (limit %lld MiB)%s%s\n", c->name,
           r->outcome == 1 ? "compiled and ran" : r->outcome == 2 ? "out of memory" : "FAILED", r->ms, r->grew_kib,
           (long long)c->limit_mb, r->msg[0] ? ": " : "", r->outcome == 1 ? "" : r->msg);
    CHECKF(r->ms < seconds * 1e3, "%s: %.0f ms, more than %d s", c->name, r->ms, seconds);
#if !defined(__SANITIZE_ADDRESS__)
    /* (ASan's redzones and quarantine are resident too: not measured.
     * The passes' own tables, malloc'd per variable and per node, are
     * not charged to the limit: they are allowed half of it again.) */
    if (r->grew_kib >= 0)
        CHECKF(r->grew_kib < (c->limit_mb * 3 / 2 + 64) * 1024, "%s: resident memory grew by %ld KiB during the "
               "compile, more than 1.5 times the limit of %lld MiB and 64 MiB", c->name, r->grew_kib,
               (long long)c->limit_mb);
#endif
    CHECKF(r->budget_left_used == 0, "%s: %lld bytes still charged to the compile budget", c->name,
           (long long)r->budget_left_used);
}

/* A NOMEM's message: the phase, and that it was the memory limit. */
static void check_nomem_message(const Case *c, const Res *r)
{
    static const char *const phases[] = {"sharing recovery", "simplify", "fusion", "array CSE", "loop-invariant",
                                         "planner"};
    bool phase = false;
    for (size_t i = 0; i < sizeof phases / sizeof *phases; i++) phase |= strstr(r->msg, phases[i]) != NULL;
    CHECKF(phase && strstr(r->msg, "memory limit") && strstr(r->msg, "AXLE_MEM_LIMIT"), "%s: message \"%s\"",
           c->name, r->msg);
}

/* The planner ran within its limits: a presolve or a solve within a few
 * times its time limit (a presolve is not stopped by the clock; a model
 * is not made where it could not be solved in time), or greedy with a
 * reason that names a limit. */
static void check_plan(const Case *c, const Res *r)
{
    printf("    plan: %s (%s), %.3f ms of CPU, limit %g ms\n", r->solver, r->why, r->solve_cpu_ms, r->limit_ms);
    bool greedy = !strcmp(r->solver, "greedy");
    if (greedy) {
        CHECKF(strstr(r->why, "limit") || strstr(r->why, "too many loops"), "%s: greedy (%s)", c->name, r->why);
    } else {
        CHECKF(!strcmp(r->solver, "presolve") || !strcmp(r->solver, "cbc") || !strcmp(r->solver, "none"),
               "%s: solver \"%s\" (%s)", c->name, r->solver, r->why);
        CHECKF(r->limit_ms > 0 && r->solve_cpu_ms <= 20 * SLOW * r->limit_ms, "%s: the ILP took %.1f ms of CPU time, "
               "its limit is %g ms", c->name, r->solve_cpu_ms, r->limit_ms);
    }
}

/* Sets (value NULL: unsets) an environment variable for a context made
 * next, and gives back what it was (restore_env). */
typedef struct SavedEnv { const char *name; char *was; } SavedEnv;
static SavedEnv set_env(const char *name, const char *value)
{
    const char *w = getenv(name);
    SavedEnv s = {name, w ? strdup(w) : NULL};
    if (value) setenv(name, value, 1);
    else unsetenv(name);
    return s;
}
static void restore_env(SavedEnv *s)
{
    if (s->was) setenv(s->name, s->was, 1);
    else unsetenv(s->name);
    free(s->was);
    s->was = NULL;
}

static bool big(void)
{
    const char *e = getenv("AXLE_TEST_BOUNDS_BIG");
    return e && *e && strcmp(e, "0");
}

/* ------------------------------------------------------------ wide */

TEST(sibling_folds_plan_within_the_limits)
{
    const Case cases[] = {
        {"300 folds, ILP", FOLDS, 300, 64, "ilp", NULL, true},
        {"1000 folds, ILP", FOLDS, 1000, 64, "ilp", NULL, true},
        {"1000 maps and folds, ILP", MIXED, 1000, 64, "ilp", NULL, true},
        /* CBC asked for: the count of the model is past the time limit */
        {"300 folds, CBC", FOLDS, 300, 64, "cbc", NULL, true},
        /* and with time enough, past the memory limit */
        {"120 folds, CBC, 100 s", FOLDS, 120, 64, "cbc", "100000", true},
        {"3000 folds, ILP", FOLDS, 3000, 256, "ilp", NULL, true},
        {"10000 maps and folds, ILP", MIXED, 10000, 256, "ilp", NULL, true},
    };
    int n = big() ? 7 : 5;
    for (int i = 0; i < n; i++) {
        const Case *c = &cases[i];
        int seconds = 60 * SLOW;
        Res r;
        if (!run_case(c, seconds, &r)) continue;
        check_bounds(c, &r, seconds);
        CHECKF(r.outcome == 1, "%s: %s", c->name, r.msg);
        check_plan(c, &r);
        if (i == 1) CHECKF(strstr(r.why, "too many loops"), "%s: %s", c->name, r.why);
        if (i == 3) CHECKF(!strcmp(r.solver, "greedy") && strstr(r.why, "past the time limit"), "%s: %s (%s)", c->name,
                           r.solver, r.why);
        if (i == 4) CHECKF(!strcmp(r.solver, "greedy") && strstr(r.why, "past the memory limit"), "%s: %s (%s)", c->name,
                           r.solver, r.why);
    }
}

TEST(sibling_maps_compile_within_the_limits)
{
    const Case cases[] = {
        {"1000 maps", MAPS, 1000, 64, "ilp", NULL, true},
        {"10000 maps", MAPS, 10000, 256, "ilp", NULL, false},
    };
    for (int i = 0; i < (big() ? 2 : 1); i++) {
        const Case *c = &cases[i];
        int seconds = 60 * SLOW;
        Res r;
        if (!run_case(c, seconds, &r)) continue;
        check_bounds(c, &r, seconds);
        CHECKF(r.outcome == 1, "%s: %s", c->name, r.msg);
        if (c->dump) check_plan(c, &r);
    }
}

/* ------------------------------------------------------------ deep */

TEST(deep_chains_compile_or_run_out_of_memory_cleanly)
{
    /* want: 1 must compile and run, 2 must run out of memory, 0 either */
    const struct { Case c; int want; } cases[] = {
        {{"100000 maps deep, 256 MiB", CHAIN_MAPS, 100000, 256, NULL, NULL, false}, 0},
        {{"100000 additions deep, 256 MiB", CHAIN_SCALARS, 100000, 256, NULL, NULL, false}, 1},
        {{"100000 additions deep, 64 MiB", CHAIN_SCALARS, 100000, 64, NULL, NULL, false}, 2},
        {{"300000 maps deep, 1 GiB", CHAIN_MAPS, 300000, 1024, NULL, NULL, false}, 0},
    };
    for (int i = 0; i < (big() ? 4 : 3); i++) {
        const Case *c = &cases[i].c;
        int seconds = 120 * SLOW;
        Res r;
        if (!run_case(c, seconds, &r)) continue;
        check_bounds(c, &r, seconds);
        CHECKF(r.outcome == 1 || r.outcome == 2, "%s: %s", c->name, r.msg);
        if (cases[i].want) CHECKF(r.outcome == cases[i].want, "%s: %s", c->name, r.outcome == 1 ? "compiled" : r.msg);
        if (r.outcome == 2) check_nomem_message(c, &r);
    }
}

/* ------------------------------------------------------------ white-box */

/* An arena charges its blocks to its budget, takes what the budget
 * leaves (a smaller block where a doubled one does not fit), refuses
 * past it, counts memory charged elsewhere (the arrays), says why, and
 * gives everything back when freed or detached. */
TEST(arena_charges_its_budget)
{
    MemBudget b;
    int64_t arrays = 0;
    budget_init(&b, 1 << 20, 0, &arrays);
    CHECK_EQ_I(b.limit, 1 << 20);
    Arena a;
    arena_init(&a);
    arena_set_budget(&a, &b);
    size_t total = 0;
    for (int i = 0; i < 100000 && arena_alloc(&a, 1000); i++) total += 1000;
    CHECKF(total > (1 << 20) - 3 * 65536 && total <= (1 << 20), "%zu bytes allocated under a budget of 1 MiB", total);
    CHECK(b.used == a.charged && b.used <= b.limit && b.peak == b.used);
    CHECK(b.refused > 0);
    char msg[256] = "simplify: out of memory";
    budget_explain(&b, msg, sizeof msg);
    CHECKF(strstr(msg, "simplify: out of memory (the compile needed") && strstr(msg, "memory limit of 1048576"), "%s",
           msg);
    arena_free(&a);
    CHECK_EQ_I(b.used, 0);
    CHECK_EQ_I(a.charged, 0);
    /* the arrays in use count against the same limit */
    arrays = (1 << 20) - 100000;
    arena_set_budget(&a, &b);
    CHECK_EQ_I(b.refused, 0);   /* (a new compile: the last refusal forgotten) */
    CHECK(arena_alloc(&a, 1000) != NULL);
    CHECK(arena_alloc(&a, 200000) == NULL);
    CHECK(b.refused > 0);
    arena_detach(&a);
    CHECK_EQ_I(b.used, 0);
    CHECK(arena_alloc(&a, 200000) != NULL);   /* (detached: no budget) */
    arena_free(&a);
    CHECK_EQ_I(b.used, 0);
    /* the least a compile gets, whatever the limit */
    budget_init(&b, 2048, AX_COMPILE_MEM_LEAST, NULL);
    CHECK_EQ_I(b.limit, AX_COMPILE_MEM_LEAST);
    /* a zeroed budget has no limit */
    memset(&b, 0, sizeof b);
    CHECK(budget_left(&b) == INT64_MAX && budget_charge(&b, (int64_t)1 << 50));
}

/* The planner, short of memory, is greedy and says why; what it charged
 * is given back.  (CBC asked for: a model is to be made.) */
TEST(planner_short_of_memory_is_greedy)
{
    SavedEnv e = set_env("AXLE_PLANNER", "cbc");
    ax_ctx *cx = ax_ctx_new(&(ax_options){.backend = AX_BACKEND_INTERP, .mem_limit = 64 << 20});
    restore_env(&e);
    REQUIRE(cx);
    PlanGraph *g = plan_graph_new();
    REQUIRE(g);
    REQUIRE(plan_graph_add(g, 0, OP_FOLD, 0, 0, -1, false, 1) == 0 && plan_graph_add(g, 1, OP_FOLD, 0, 0, -1, false, 1) == 1);
    REQUIRE(plan_graph_allow(g, 0, 1) == 0 && plan_graph_finish(g) == 0);
    int64_t left = budget_left(&cx->compile_mem);
    for (int k = 0; k < 2; k++) {
        /* (k = 0: all but 64 bytes of the budget taken, as by a big
         * program's IR) */
        cx->compile_mem.used = k ? 0 : cx->compile_mem.limit - 64;
        int64_t before = cx->compile_mem.used;
        PlanChoice ch;
        REQUIRE(plan_choose(cx, g, &ch, true) == 0);
        if (k == 0)
            CHECKF(ch.solver == PLAN_GREEDY && strstr(ch.why, "past the memory limit"), "solver %d (%s)",
                   (int)ch.solver, ch.why);
        else
            CHECKF(ch.solver == PLAN_CBC || (ch.solver == PLAN_GREEDY && strstr(ch.why, "CBC")), "solver %d (%s)",
                   (int)ch.solver, ch.why);
        CHECK_EQ_I(cx->compile_mem.used, before);
        plan_choice_free(&ch);
    }
    cx->compile_mem.used = 0;
    CHECK_EQ_I(budget_left(&cx->compile_mem), left);
    plan_graph_free(g);
    ax_ctx_free(cx);
}

/* The model the ILP counts before it makes one (the presolve's, shown in
 * the dump without a model) is the one it makes (CBC asked for): on
 * random programs, the dumps' model sizes agree, and the made model is
 * never found other than counted. */
TEST(counted_model_is_the_made_one)
{
    RandProgConfig pc;
    randprog_default_config(&pc);
    int nseeds = (int)randprog_env_long("AXLE_TEST_BOUNDS_SEEDS", 80), compared = 0;
    for (int seed = 0; seed < nseeds; seed++) {
        char *d[2] = {NULL, NULL};
        for (int k = 0; k < 2; k++) {
            SavedEnv e0 = set_env("AXLE_PLANNER", k ? "cbc" : "ilp"), e1 = set_env("AXLE_PLANNER_LIMIT", "60000");
            ax_ctx *cx = ax_ctx_new(&(ax_options){.backend = AX_BACKEND_INTERP});
            restore_env(&e0), restore_env(&e1);
            RandProg *rp = NULL;
            ax_acc p = cx ? randprog_build(cx, (uint64_t)seed, &pc, &rp) : NULL;
            d[k] = p ? ax_dump(cx, p, "plan", true) : NULL;
            if (cx) CHECK_EQ_I(cx->compile_mem.used, 0);
            randprog_free(rp);
            ax_ctx_free(cx);
        }
        CHECKF(d[0] && d[1], "seed %d: no dump", seed);
        char why[200];
        json_str_of(d[1], "\"solver_why\":", why, sizeof why);
        CHECKF(!strstr(why, "internal error"), "seed %d: %s", seed, why);
        const char *m0 = d[0] ? strstr(d[0], "\"ilp\":{") : NULL, *m1 = d[1] ? strstr(d[1], "\"ilp\":{") : NULL;
        if (m0 && m1) {
            const char *e0 = strstr(m0, "\"objective\""), *e1 = strstr(m1, "\"objective\"");
            size_t n0 = e0 ? (size_t)(e0 - m0) : 0, n1 = e1 ? (size_t)(e1 - m1) : 0;   /* x, c, pi, rows */
            CHECKF(n0 == n1 && !strncmp(m0, m1, n0), "seed %d: the ILP's model %.*s, CBC's %.*s", seed, (int)n0, m0,
                   (int)n1, m1);
            compared++;
        }
        free(d[0]), free(d[1]);
    }
    printf("  %d random programs' models compared\n", compared);
}

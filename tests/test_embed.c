/*
 * What an embedding application sees of axle's surroundings: notices (a
 * missing C compiler, malformed AXLE_* variables) through the log hook or
 * stderr, strict mode, and the bounded disk cache (least recently used
 * eviction, also with two processes sharing the directory; stats and
 * clear).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "harness.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct Log {
    int n;
    char text[8][512];
} Log;

static void log_hook(void *arg, const char *msg)
{
    Log *l = arg;
    if (l->n < 8) snprintf(l->text[l->n], sizeof l->text[0], "%s", msg);
    l->n++;
}

static ax_exp add1(ax_exp x, void *env) { (void)env; return ax_add(x, ax_i32(1)); }

/* Runs map (+1) over {1,2,3}; true when the result is right. */
static bool run_small(ax_ctx *cx, ax_stats *st)
{
    int64_t n = 3;
    ax_array *a = ax_array_from(cx, AX_I32, 1, &n, (int32_t[]){1, 2, 3});
    ax_program *p = a ? ax_compile(cx, ax_map(add1, NULL, ax_use(cx, a))) : NULL;
    ax_array *r = NULL;
    bool ok = p && ax_program_run(p, &r, 1) == 1;
    if (ok) {
        const int32_t *d = ax_array_data(r, 0);
        ok = d && d[0] == 2 && d[1] == 3 && d[2] == 4;
    }
    if (p && st) *st = *ax_program_stats(p);
    ax_array_release(r);
    ax_program_free(p);
    ax_array_release(a);
    return ok;
}

/* Calls f with stderr going to a file; returns what it wrote (static). */
static const char *capture_stderr(void (*f)(void *), void *arg)
{
    static char out[4096];
    char path[] = "/tmp/axle-stderr-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return "";
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    f(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    lseek(fd, 0, SEEK_SET);
    ssize_t r = read(fd, out, sizeof out - 1);
    out[r > 0 ? r : 0] = 0;
    close(fd);
    unlink(path);
    return out;
}

static void three_runs_default(void *arg)
{
    ax_options *o = arg;
    ax_ctx *cx = ax_ctx_new(o);
    for (int i = 0; i < 3 && cx; i++) CHECK(run_small(cx, NULL));
    ax_ctx_free(cx);
}

TEST(missing_compiler_gives_one_notice_a_flag_or_a_strict_error)
{
    setenv("AXLE_CC", "/nonexistent/cc", 1);
    /* through the log hook: once per context, and a flag in the stats */
    Log log = {0};
    ax_options o = {0};
    o.log = log_hook;
    o.log_arg = &log;
    ax_ctx *cx = ax_ctx_new(&o);
    REQUIRE(cx);
    ax_stats st;
    memset(&st, 0, sizeof st);
    CHECK(run_small(cx, &st));
    CHECK(run_small(cx, NULL));
    CHECK(run_small(cx, NULL));
    CHECK_EQ_I(log.n, 1);
    CHECKF(strstr(log.text[0], "no C compiler") && strstr(log.text[0], "/nonexistent/cc") &&
           strstr(log.text[0], "interpreter"), "%s", log.text[0]);
    CHECK(st.fallback);
    CHECK(st.backend && !strcmp(st.backend, "interp"));
    ax_ctx_free(cx);
    /* the default: one line on stderr per context; quiet: none */
    ax_options d = {0};
    const char *err = capture_stderr(three_runs_default, &d);
    const char *first = strstr(err, "axle: no C compiler");
    CHECKF(first && !strstr(first + 1, "axle: no C compiler"), "stderr: %s", err);
    d.quiet = true;
    err = capture_stderr(three_runs_default, &d);
    CHECKF(!strstr(err, "no C compiler"), "stderr: %s", err);
    /* strict: an error, and the context stays usable for the interpreter */
    ax_options s = {0};
    s.strict = true;
    s.quiet = true;
    cx = ax_ctx_new(&s);
    REQUIRE(cx);
    CHECK(!run_small(cx, NULL));
    CHECK(ax_status_of(cx) == AX_ERR_COMPILE && strstr(ax_error(cx), "/nonexistent/cc"));
    ax_ctx_free(cx);
    s.backend = AX_BACKEND_INTERP;
    cx = ax_ctx_new(&s);
    CHECK(cx && run_small(cx, NULL));
    ax_ctx_free(cx);
    unsetenv("AXLE_CC");
    /* with a compiler: no notice, no flag */
    memset(&log, 0, sizeof log);
    cx = ax_ctx_new(&o);
    REQUIRE(cx);
    memset(&st, 0, sizeof st);
    CHECK(run_small(cx, &st));
    CHECK_EQ_I(log.n, 0);
    CHECK(!st.fallback && !strcmp(st.backend, "cpu"));
    ax_ctx_free(cx);
}

TEST(malformed_environment_values_are_named)
{
    static const struct { const char *var, *val, *accepted; } cases[] = {
        {"AXLE_DEBUG", "timings", "no-sharing"},      /* a typo of timing */
        {"AXLE_DEBUG", "no-cse,bogus", "no-fusion"},
        {"AXLE_THREADS", "abc", "number of threads"},
        {"AXLE_THREADS", "0", "number of threads"},
        {"AXLE_MEM_LIMIT", "lots", "512M"},
        {"AXLE_CACHE", "maybe", "off, 0, on or 1"},
        {"AXLE_CACHE_SIZE", "big", "512M"},
        {"AXLE_BACKEND", "gpu", "opencl"},
        {"AXLE_CC_TIMEOUT", "soon", "seconds"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        setenv(cases[i].var, cases[i].val, 1);
        Log log = {0};
        ax_options o = {0};
        o.log = log_hook;
        o.log_arg = &log;
        o.backend = AX_BACKEND_INTERP;
        ax_ctx *cx = ax_ctx_new(&o);
        REQUIRE(cx);
        CHECK_EQ_I(log.n, 1);
        char want[128];
        snprintf(want, sizeof want, "%s='%s", cases[i].var, strchr(cases[i].val, ',') ? "no-cse,bogus" : cases[i].val);
        /* AXLE_DEBUG names the unknown word, the others the value */
        if (strchr(cases[i].val, ',')) snprintf(want, sizeof want, "AXLE_DEBUG='bogus'");
        CHECKF(log.n == 1 && strstr(log.text[0], want) && strstr(log.text[0], cases[i].accepted), "%s: %s", want,
               log.text[0]);
        CHECK(run_small(cx, NULL));   /* ignored, not fatal */
        ax_ctx_free(cx);
        /* strict: the first run fails naming the variable; then usable */
        o.strict = true;
        memset(&log, 0, sizeof log);
        cx = ax_ctx_new(&o);
        REQUIRE(cx);
        CHECK(!run_small(cx, NULL));
        CHECKF(ax_status_of(cx) == AX_ERR_ARG && strstr(ax_error(cx), cases[i].var), "%s", ax_error(cx));
        CHECK(run_small(cx, NULL));
        ax_ctx_free(cx);
        unsetenv(cases[i].var);
    }
    /* good values give no notice */
    setenv("AXLE_DEBUG", "verify,no-cse", 1);
    setenv("AXLE_THREADS", "2", 1);
    setenv("AXLE_MEM_LIMIT", "1GB", 1);
    setenv("AXLE_CACHE", "on", 1);
    setenv("AXLE_CACHE_SIZE", "64M", 1);
    Log log = {0};
    ax_options o = {0};
    o.log = log_hook;
    o.log_arg = &log;
    ax_ctx *cx = ax_ctx_new(&o);
    REQUIRE(cx);
    CHECK_EQ_I(log.n, 0);
    CHECK_EQ_I(ax_ctx_options(cx)->threads, 2);
    CHECK_EQ_I(ax_ctx_options(cx)->mem_limit, 1ll << 30);
    CHECK_EQ_I(ax_ctx_options(cx)->cache_limit, 64ll << 20);
    CHECK(ax_ctx_options(cx)->debug & AX_DEBUG_VERIFY);
    ax_ctx_free(cx);
    unsetenv("AXLE_DEBUG");
    unsetenv("AXLE_THREADS");
    unsetenv("AXLE_MEM_LIMIT");
    unsetenv("AXLE_CACHE");
    unsetenv("AXLE_CACHE_SIZE");
}

/* ------------------------------------------------------------ the cache */

/* The names of the compiled entries (*.so) in dir, sorted, joined by
 * spaces. */
static void so_names(const char *dir, char *out, size_t cap)
{
    out[0] = 0;
    struct dirent **v = NULL;
    int n = scandir(dir, &v, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        size_t l = strlen(v[i]->d_name);
        if (l > 3 && !strcmp(v[i]->d_name + l - 3, ".so") && strncmp(v[i]->d_name, "tmp-", 4)) {
            strncat(out, v[i]->d_name, cap - strlen(out) - 2);
            strncat(out, " ", cap - strlen(out) - 1);
        }
        free(v[i]);
    }
    free(v);
}

static ax_exp mul_k(ax_exp x, void *env)
{
    return ax_mul(x, ax_i32(*(int *)env));   /* compiled in: one program per k */
}

/* Runs x*k over 1..4 in a fresh context (so that the disk cache is asked,
 * not a context's memory cache), compiled in full. */
static bool run_k(const char *dir, int64_t limit, int k)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_CPU;
    o.cache_dir = dir;
    o.cache_limit = limit;
    o.debug = AX_DEBUG_NO_REUSE;   /* kernels' entries only: no program entries */
    ax_ctx *cx = ax_ctx_new(&o);
    if (!cx) return false;
    int64_t n = 4;
    ax_array *a = ax_array_from(cx, AX_I32, 1, &n, (int32_t[]){1, 2, 3, 4});
    ax_array *r = a ? ax_run(cx, ax_map(mul_k, &k, ax_use(cx, a))) : NULL;
    const int32_t *d = r ? ax_array_data(r, 0) : NULL;
    bool ok = d && d[0] == k && d[3] == 4 * k;
    if (!ok) fprintf(stderr, "run_k(%d): %s\n", k, ax_error(cx));
    ax_array_release(r);
    ax_array_release(a);
    ax_ctx_free(cx);
    return ok;
}

static void pause_ms(int ms)
{
    struct timespec t = {0, ms * 1000000L};
    nanosleep(&t, NULL);
}

TEST(cache_evicts_least_recently_used_entries)
{
    char dir[] = "/tmp/axle-cache-XXXXXX";
    REQUIRE(mkdtemp(dir));
    ax_options o = {0};
    o.cache_dir = dir;
    ax_cache_info ci;
    /* entry a, and its size sets the limit: room for two and a bit */
    REQUIRE(run_k(dir, -1, 3));
    REQUIRE(ax_cache_stats(&o, &ci) == 0);
    CHECK_EQ_I(ci.entries, 1);
    int64_t limit = ci.bytes * 29 / 10;
    char a[256], ab[256], now[512];
    so_names(dir, a, sizeof a);
    pause_ms(20);
    REQUIRE(run_k(dir, limit, 5));   /* entry b */
    so_names(dir, ab, sizeof ab);
    pause_ms(20);
    REQUIRE(run_k(dir, limit, 3));   /* a again, from the disk: now the most recent */
    pause_ms(20);
    REQUIRE(run_k(dir, limit, 7));   /* entry c: over the limit, b goes */
    so_names(dir, now, sizeof now);
    o.cache_limit = limit;
    REQUIRE(ax_cache_stats(&o, &ci) == 0);
    CHECK_EQ_I(ci.entries, 2);
    CHECKF(ci.bytes <= limit, "%lld bytes over the limit %lld", (long long)ci.bytes, (long long)limit);
    CHECK_EQ_I(ci.limit, limit);
    CHECKF(strstr(now, a), "a (%s) was evicted: %s", a, now);
    /* b: the name in ab that is not a */
    char b[128] = "";
    for (char *t = strtok(ab, " "); t; t = strtok(NULL, " "))
        if (!strstr(a, t)) snprintf(b, sizeof b, "%s", t);
    CHECKF(b[0] && !strstr(now, b), "b (%s) was kept: %s", b, now);
    /* many more programs: the limit holds after every store */
    for (int k = 10; k < 20; k++) {
        CHECK(run_k(dir, limit, k));
        CHECK(ax_cache_stats(&o, &ci) == 0 && ci.bytes <= limit);
    }
    /* clear empties it; stats then count nothing */
    ax_cache_info rm;
    CHECK(ax_cache_clear(&o, &rm) == 0);
    CHECK(rm.entries >= 1 && rm.bytes > 0);
    CHECK(ax_cache_stats(&o, &ci) == 0 && ci.entries == 0 && ci.bytes == 0);
    CHECK(run_k(dir, limit, 3));   /* and it works again */
    harness_rm_tree(dir);
    /* a directory that is not there: an error, with errno */
    o.cache_dir = "/nonexistent/axle-cache";
    errno = 0;
    CHECK(ax_cache_stats(&o, &ci) == -1 && errno == ENOENT && !strcmp(ci.dir, "/nonexistent/axle-cache"));
}

/* Two processes sharing a cache far smaller than what they compile: each
 * evicts under the other, and every run is still right. */
TEST(cache_shared_by_two_processes_under_a_tiny_limit)
{
    char dir[] = "/tmp/axle-cache2-XXXXXX";
    REQUIRE(mkdtemp(dir));
    fflush(NULL);
    pid_t kids[2];
    for (int c = 0; c < 2; c++) {
        kids[c] = fork();
        if (kids[c] == 0) {
            int bad = 0;
            for (int k = 0; k < 12; k++)
                if (!run_k(dir, 1, 100 + (k % 6) + 3 * c)) bad++;   /* overlapping programs */
            _exit(bad ? 1 : 0);
        }
    }
    for (int c = 0; c < 2; c++) {
        int st = 0;
        CHECK(kids[c] > 0 && waitpid(kids[c], &st, 0) == kids[c] && WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    ax_options o = {0};
    o.cache_dir = dir;
    ax_cache_info ci;
    CHECK(ax_cache_stats(&o, &ci) == 0 && ci.entries <= 2);
    harness_rm_tree(dir);
}

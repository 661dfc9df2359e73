/*
 * The C compiler's processes die with the process that started them
 * (src/runtime/jit_proc.c, "processes": the supervisor): a host killed with
 * SIGKILL in the middle of a compile (as `timeout` or a test harness ends
 * one) leaves no process of the compiler's group behind, however deep
 * (the compiler's own children: cc1, as, ld; here a script's `sleep`).
 * And the compiler's end is still reported exactly: its exit status, the
 * signal that killed it, a failed exec, a supervisor killed by someone
 * else.
 *
 * The compiler is a script that records its pid and its child's, then
 * hangs.  The host is a forked child of the test.  This process is made a
 * child subreaper, so that whatever the host leaves is reparented here
 * and reaped, not left as zombies in a container whose init reaps none.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "harness.h"
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool temp_dir(char *out, size_t n)
{
    snprintf(out, n, "/tmp/axle-ccgroup-XXXXXX");
    return mkdtemp(out) != NULL;
}

static void rm_tree(const char *dir)
{
    if (!strncmp(dir, "/tmp/axle-ccgroup-", 18)) harness_rm_tree(dir);
}

static bool write_file(const char *path, const char *text, int mode)
{
    FILE *f = fopen(path, "w");
    if (!f) return false;
    bool ok = fputs(text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    return ok && chmod(path, (mode_t)mode) == 0;
}

/* Fields of /proc/pid/stat after the command: state, parent, group.
 * False when there is no such process. */
static bool proc_stat(pid_t pid, char *state, long *ppid, long *pgrp)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "r");
    if (!f) return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && sscanf(p + 1, " %c %ld %ld", state, ppid, pgrp) == 3;
}

/* Live processes (not zombies) whose process group is pgrp. */
static int group_members(long pgrp)
{
    DIR *d = opendir("/proc");
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        char st;
        long pp, pg;
        if (*end || pid <= 0 || !proc_stat((pid_t)pid, &st, &pp, &pg)) continue;
        if (pg == pgrp && st != 'Z' && st != 'X') n++;
    }
    closedir(d);
    return n;
}

/* Reaps whatever was reparented here (this process is a subreaper). */
static void reap_orphans(void)
{
    while (waitpid(-1, NULL, WNOHANG) > 0) {}
}

static ax_exp dbl(ax_exp x, void *env) { (void)env; return ax_mul(x, ax_i32(2)); }

/* Runs map (*2) [1,2,3] with the compiler cc and the cache in dir:
 * NULL-safe; the error message (or "" on success) into msg. */
static bool run_with(const char *cc, const char *dir, double timeout, char *msg, size_t n)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_CPU;
    o.cc = cc;
    o.cache_dir = dir;
    o.cc_timeout = timeout;
    o.quiet = true;
    ax_ctx *cx = ax_ctx_new(&o);
    if (!cx) {
        snprintf(msg, n, "no context");
        return false;
    }
    int32_t v[3] = {1, 2, 3};
    ax_array *a = ax_array_from(cx, AX_I32, 1, (int64_t[]){3}, v);
    ax_array *r = a ? ax_run(cx, ax_map(dbl, NULL, ax_use(cx, a))) : NULL;
    bool ok = r && ((int32_t *)ax_array_data(r, 0))[2] == 6;
    snprintf(msg, n, "%s", r ? "" : ax_error(cx));
    ax_array_release(r);
    ax_array_release(a);
    ax_ctx_free(cx);
    return ok;
}

/* A compiler script in dir that, for `--version` when hang_version (else
 * for a compile), starts `sleep 300`, writes "its pid, the sleep's pid"
 * to dir/pids and waits; otherwise answers --version at once. */
static bool hanging_cc(const char *dir, bool hang_version, char *cc, size_t n)
{
    char script[1024];
    snprintf(cc, n, "%s/hangcc", dir);
    snprintf(script, sizeof script,
             "#!/bin/sh\n"
             "if [ \"$1\" = --version ] && [ %d = 0 ]; then echo 'hangcc 1.0'; exit 0; fi\n"
             "sleep 300 &\n"
             "echo $$ $! > '%s/pids.tmp' && mv '%s/pids.tmp' '%s/pids'\n"
             "wait\n",
             hang_version ? 1 : 0, dir, dir, dir);
    return write_file(cc, script, 0755);
}

/* Waits (up to 60 s) for dir/pids, written by the hanging compiler once
 * it runs; false if the host ended first or the file never came. */
static bool wait_pids(const char *dir, pid_t host, long *sh, long *sl)
{
    char path[300];
    snprintf(path, sizeof path, "%s/pids", dir);
    for (double t0 = now_s(); now_s() - t0 < 60;) {
        FILE *f = fopen(path, "r");
        if (f) {
            int k = fscanf(f, "%ld %ld", sh, sl);
            fclose(f);
            if (k == 2) return true;
        }
        int st;
        if (waitpid(host, &st, WNOHANG) == host) {
            fprintf(stderr, "  ccgroup: the host ended before its compiler ran (status %#x)\n", st);
            return false;
        }
        usleep(10000);
    }
    return false;
}

static void kill_if_alive(long pid)
{
    char st;
    long pp, pg;
    if (pid > 0 && proc_stat((pid_t)pid, &st, &pp, &pg) && st != 'Z') kill((pid_t)pid, SIGKILL);
}

/* The compiler's end is still reported exactly: an exit status with its
 * message, a signal, a program that cannot be executed; and no process
 * axle started is left unreaped.  (First: before the tests below make
 * this process a subreaper, so that any child here is axle's.) */
TEST(ccgroup_status_relayed)
{
    char dir[64], cc[128], cache[128], script[512], msg[1024];
    REQUIRE(temp_dir(dir, sizeof dir));
    snprintf(cache, sizeof cache, "%s/cache", dir);
    snprintf(cc, sizeof cc, "%s/cc", dir);
    static const char *const bodies[] = {
        "echo 'boom: no such luck' >&2; exit 3",
        "kill -SEGV $$; sleep 5",
        "exec cc \"$@\"",
    };
    static const char *const want[] = {
        "failed: boom: no such luck",
        "killed by signal 11",
        "",
    };
    for (int i = 0; i < 3; i++) {
        snprintf(script, sizeof script,
                 "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'cc%d 1.0'; exit 0; fi\n%s\n", i, bodies[i]);
        REQUIRE(write_file(cc, script, 0755));
        fflush(NULL);
        bool ok = run_with(cc, cache, 60, msg, sizeof msg);
        fprintf(stderr, "  ccgroup: '%s': %s\n", bodies[i], ok ? "ran" : msg);
        if (want[i][0]) CHECKF(!ok && strstr(msg, want[i]), "'%s': %s", bodies[i], msg);
        else CHECKF(ok, "'%s': %s", bodies[i], msg);
        /* every process axle started was reaped: no compiler, no
         * supervisor left as a zombie of this process */
        errno = 0;
        CHECKF(waitpid(-1, NULL, WNOHANG) == -1 && errno == ECHILD, "'%s': a child was left unreaped", bodies[i]);
    }
    /* a compiler that is there but is no program (exec fails: ENOEXEC;
     * under valgrind, whose exec cannot report that, exit status 127) */
    REQUIRE(write_file(cc, "\x7f" "ELF not really\n", 0755));
    fflush(NULL);
    bool ok = run_with(cc, cache, 60, msg, sizeof msg);
    fprintf(stderr, "  ccgroup: not a program: %s\n", msg);
    CHECKF(!ok && (strstr(msg, "could not be run") || strstr(msg, "was not found")), "%s", msg);
    rm_tree(dir);
}

/* A host killed with SIGKILL while its compiler (and the compiler's own
 * child) run: within 2 s no live process of the compiler's group is left.
 * Once while compiling, once while asking the compiler's --version. */
TEST(ccgroup_dies_with_its_host)
{
    REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
    for (int variant = 0; variant < 2; variant++) {
        bool in_version = variant == 1;
        char dir[64], cc[128], cache[128];
        REQUIRE(temp_dir(dir, sizeof dir));
        snprintf(cache, sizeof cache, "%s/cache", dir);
        REQUIRE(hanging_cc(dir, in_version, cc, sizeof cc));
        fflush(NULL);
        pid_t host = fork();
        REQUIRE(host >= 0);
        if (host == 0) {
            char msg[512];
            /* a time limit far beyond the test's: only the host's death
             * may end this compiler */
            run_with(cc, cache, 3600, msg, sizeof msg);
            _exit(3);
        }
        long sh = 0, sl = 0;
        bool started = wait_pids(dir, host, &sh, &sl);
        CHECKF(started, "the compiler never ran (%s)", in_version ? "--version" : "compile");
        char state;
        long ppid = 0, pgrp = 0;
        if (started) {
            CHECK(proc_stat((pid_t)sh, &state, &ppid, &pgrp));
            CHECKF(pgrp > 0 && pgrp != getpgrp(), "the compiler runs in the test's own group %ld", pgrp);
        }
        kill(host, SIGKILL);
        int st;
        waitpid(host, &st, 0);
        double t0 = now_s(), dt = 0;
        int left = -1;
        if (started && pgrp > 0 && pgrp != getpgrp()) {
            while ((left = group_members(pgrp)) > 0 && (dt = now_s() - t0) < 2.0) {
                reap_orphans();
                usleep(10000);
            }
            dt = now_s() - t0;
            fprintf(stderr, "  ccgroup: host killed during %s: %d process(es) of group %ld left after %.2f s\n",
                    in_version ? "--version" : "the compile", left, pgrp, dt);
            CHECKF(left == 0, "%d process(es) of the compiler's group %ld outlived the host by %.1f s", left, pgrp,
                   dt);
        }
        /* whatever a failure left is ended here */
        kill_if_alive(sh);
        kill_if_alive(sl);
        usleep(20000);
        reap_orphans();
        rm_tree(dir);
    }
}

/* The compiler's supervisor (the leader of its group) killed by someone
 * else while the compiler runs: the host reports the compile killed
 * (signal 9) at once, and the compiler's group goes with it. */
TEST(ccgroup_supervisor_killed)
{
    REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
    char dir[64], cc[128], cache[128];
    REQUIRE(temp_dir(dir, sizeof dir));
    snprintf(cache, sizeof cache, "%s/cache", dir);
    REQUIRE(hanging_cc(dir, false, cc, sizeof cc));
    fflush(NULL);
    pid_t host = fork();
    REQUIRE(host >= 0);
    if (host == 0) {
        char msg[512];
        bool ok = run_with(cc, cache, 3600, msg, sizeof msg);
        fprintf(stderr, "  ccgroup: the host says: %s\n", msg);
        _exit(!ok && strstr(msg, "killed by signal 9") ? 0 : 1);
    }
    long sh = 0, sl = 0;
    char state;
    long ppid = 0, pgrp = 0, sup_parent = 0, sup_group = 0;
    bool started = wait_pids(dir, host, &sh, &sl);
    CHECK(started);
    if (started) CHECK(proc_stat((pid_t)sh, &state, &ppid, &pgrp));
    /* the compiler's group is led by the supervisor, a child of the host
     * and neither the host nor the compiler */
    long sup = pgrp;
    bool is_sup = sup > 1 && sup != host && sup != sh && proc_stat((pid_t)sup, &state, &sup_parent, &sup_group) &&
                  sup_parent == host && sup_group == sup;
    CHECKF(is_sup, "the compiler's group %ld is not led by a supervisor (the host is %ld)", sup, (long)host);
    if (is_sup) kill((pid_t)sup, SIGKILL);
    int st = 0;
    double t0 = now_s();
    bool ended = false;
    while (!(ended = waitpid(host, &st, WNOHANG) == host) && now_s() - t0 < 30) usleep(10000);
    if (!ended) {
        kill(host, SIGKILL);
        waitpid(host, &st, 0);
    }
    CHECKF(ended && WIFEXITED(st) && WEXITSTATUS(st) == 0, "the host did not report the killed compile (%#x)", st);
    if (pgrp > 0 && pgrp != getpgrp()) {
        int left;
        t0 = now_s();
        while ((left = group_members(pgrp)) > 0 && now_s() - t0 < 2.0) {
            reap_orphans();
            usleep(10000);
        }
        CHECKF(left == 0, "%d process(es) of the compiler's group are left", left);
    }
    kill_if_alive(sh);
    kill_if_alive(sl);
    usleep(20000);
    reap_orphans();
    rm_tree(dir);
}

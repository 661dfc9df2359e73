/*
 * Child processes of run-time compilation: the compiler (and `cc
 * --version`), its command line's words, its program looked up in $PATH,
 * the messages for a compiler that could not run.
 *
 * The compiler runs with posix_spawn (no shell: no quoting problems, and
 * safe in a multithreaded process), in a process group of its own that a
 * supervisor of axle's kills when the host dies (see "processes" below),
 * its stdout and stderr captured into a buffer for the error message.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "jit_int.h"
#include <ctype.h>
#include <sched.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* ------------------------------------------------------------ argv (Argv: jit_int.h) */

static void argv_push_n(Argv *a, const char *s, size_t len)
{
    if (a->oom) return;
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 16;
        char **v = ax__realloc(a->v, cap * sizeof *v);
        if (!v) { a->oom = true; return; }
        a->v = v;
        a->cap = cap;
    }
    char *w = ax__strndup(s, len);
    if (!w) { a->oom = true; return; }
    a->v[a->n++] = w;
    a->v[a->n] = NULL;
}

void jit_proc_argv_push(Argv *a, const char *s) { argv_push_n(a, s, strlen(s)); }

/* Whitespace-separated words; no quoting, as with make's $(CC). */
void jit_proc_argv_words(Argv *a, const char *s)
{
    while (*s) {
        while (isspace((unsigned char)*s)) s++;
        const char *w = s;
        while (*s && !isspace((unsigned char)*s)) s++;
        if (s > w) argv_push_n(a, w, (size_t)(s - w));
    }
}

void jit_proc_argv_free(Argv *a)
{
    for (size_t i = 0; i < a->n; i++) free(a->v[i]);
    free(a->v);
}

/* ------------------------------------------------------------ processes
 *
 * Every external process can hang, and none may outlive the process that
 * wanted its output: a host ended by SIGKILL (`timeout`, a test harness)
 * once left its cc and cc1 compiling for minutes.  So each compiler runs
 * in a process group of its own whose first member is a watchdog of
 * axle's, the supervisor:
 *
 *   - The host starts the supervisor (below), makes it the leader of a new
 *     group, and starts the compiler with posix_spawn into that group.
 *     The compiler is the host's own child, as before: its exit status is
 *     the host's to wait for, exactly, and a failed exec is reported at
 *     once.
 *   - The supervisor holds one descriptor, the read end of a lifeline: a
 *     pipe whose only write end the host holds (close-on-exec; the
 *     supervisor closes every descriptor it was started with, so it holds
 *     no other compile's lifeline either).  EOF on it means the host has
 *     died, however it died; the supervisor then kills its whole group,
 *     itself included: the compiler and the compiler's own children (cc1,
 *     as, ld, whatever a wrapper started), which PR_SET_PDEATHSIG on the
 *     compiler alone would leave running.  That kill is kill(0), the
 *     group of a process still in it, never a group id remembered from
 *     before (which could have been reused since).
 *   - When the compiler has exited the host kills the supervisor (SIGKILL:
 *     it has nothing to clean up) and reaps it later.  The host's own time
 *     limit, or a failure elsewhere, kills the whole group, while the
 *     supervisor, whose pid is the group's id, is not yet reaped (so that
 *     id is still its own).  A supervisor that dies early (killed by
 *     someone) takes its group with it the same way: the compile is then
 *     reported killed.
 *
 * The supervisor is not a fork: a fork copies the host's page tables, a
 * cost that grows with the host's resident memory and is paid on every
 * compile (to measure: time a cold compile from a host that has touched
 * a few GiB, as it is and with LD_PRELOAD=vgpreload-none in its
 * environment, which makes under_valgrind() below take the fork).  It is
 * clone(CLONE_VM), a process in the host's memory on a
 * stack of its own, which makes a handful of system calls directly
 * (inline assembly, so that it never touches the C library's thread-local
 * state, which is the host thread's) and reads nothing of the host's but
 * the two numbers put at the bottom of its stack.  Where that cannot be
 * (another architecture; a sanitizer's runtime, which must see every
 * process; valgrind, which runs no such clone; a kernel or seccomp filter
 * that refuses it) it is a fork that makes the same calls: _Fork where
 * the C library has it (no other library's atfork handlers run), else
 * fork.  The compiler runs with posix_spawn (no shell: no quoting
 * problems; vfork-like, so no page tables are copied for it either).
 *
 * Output is read until the compiler exits, not until the pipe closes: a
 * wrapper that leaves a process behind holding the pipe (a daemon it
 * started, a stray `sleep &`) must not delay the compile by that
 * process's lifetime; what that process writes later is dropped.  Such a
 * leftover is not killed when the compile ends normally (a compiler
 * server may be meant to stay); only a host's death, a time limit or a
 * failure elsewhere ends the group. */

/* A descriptor that becomes readable when process pid exits (Linux 5.3
 * pidfd), or -1 where the kernel has none: then the exit is polled. */
static int pid_fd(pid_t pid)
{
#if defined(__linux__) && defined(SYS_pidfd_open)
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) {
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
        return fd;
    }
#else
    (void)pid;
#endif
    return -1;
}

/* Whether the child has exited, reaping it (its wait status in *st).  An
 * application that ignores SIGCHLD has its children reaped for it
 * (ECHILD): gone, status unknown (0). */
static bool reaped(pid_t pid, int *st, bool block)
{
    for (;;) {
        pid_t w = waitpid(pid, st, block ? 0 : WNOHANG);
        if (w == pid) return true;
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
            *st = 0;
            return true;
        }
        return false;
    }
}

/* Appends r bytes of output to out (the first cap-1 kept). */
static void keep(char *out, size_t cap, size_t *len, const char *chunk, ssize_t r)
{
    size_t k = (size_t)r < cap - 1 - *len ? (size_t)r : cap - 1 - *len;
    memcpy(out + *len, chunk, k);
    *len += k;
    out[*len] = 0;
}

/* ---- the supervisor's side */

/* System calls in the supervisor: sv(n, ...) returns the result or
 * -errno.  On x86-64 and AArch64 made directly; elsewhere through the C
 * library's syscall() (and the supervisor is then always a fork, whose
 * errno is its own).  The supervisor's code reads no canary of the host
 * thread's (that thread's memory is not the supervisor's to rely on): no
 * stack protector there (SV_CODE). */
#if defined(__has_attribute)
#if __has_attribute(no_stack_protector)
#define SV_CODE __attribute__((no_stack_protector))
#endif
#endif
#ifndef SV_CODE
#define SV_CODE
#endif

#if defined(__linux__) && defined(__x86_64__)
#define SV_RAW 1
SV_CODE static inline long sv6(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
    long ret;
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8") = a5;
    register long r9 __asm__("r9") = a6;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}
#elif defined(__linux__) && defined(__aarch64__)
#define SV_RAW 1
SV_CODE static inline long sv6(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a1;
    register long x1 __asm__("x1") = a2;
    register long x2 __asm__("x2") = a3;
    register long x3 __asm__("x3") = a4;
    register long x4 __asm__("x4") = a5;
    register long x5 __asm__("x5") = a6;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory", "cc");
    return x0;
}
#else
#define SV_RAW 0
static long sv6(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
    long r = syscall(n, a1, a2, a3, a4, a5, a6);
    return r == -1 ? -errno : r;
}
#endif
#define SV_(n, a, b, c, d, e, f, ...) sv6((long)(n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))
#define sv(...) SV_(__VA_ARGS__, 0, 0, 0, 0, 0, 0)

/* What the supervisor is told: copied to the bottom of its own stack
 * (clone), or its own copy of the host's memory (fork). */
typedef struct SvArgs {
    int lifer;                 /* the lifeline's read end */
    int maxfd;                 /* where closing by number stops (the last resort) */
} SvArgs;

/* Closes every descriptor from lo up: close_range (Linux 5.9), else the
 * list in /proc/self/fd (getdents64 into a buffer on the stack), else
 * each number below maxfd. */
SV_CODE static void sv_close_from(int lo, int maxfd)
{
#if defined(SYS_close_range)
    if (sv(SYS_close_range, lo, ~0u, 0) == 0) return;
#endif
#if defined(SYS_getdents64)
    long d = sv(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d >= 0) {
        char buf[2048] __attribute__((aligned(8)));
        long n;
        while ((n = sv(SYS_getdents64, d, buf, sizeof buf)) > 0)
            for (long off = 0; off < n;) {
                /* struct linux_dirent64: inode (8), offset (8), length
                 * (2), type (1), name */
                unsigned short reclen;
                __builtin_memcpy(&reclen, buf + off + 16, sizeof reclen);
                const char *p = buf + off + 19;
                off += reclen ? reclen : n;
                long fd = 0;
                if (*p < '0' || *p > '9') continue;
                for (; *p >= '0' && *p <= '9' && fd < INT_MAX / 10 - 9; p++) fd = fd * 10 + (*p - '0');
                /* (closing while reading: the listing goes by number) */
                if (fd >= lo && fd != d) sv(SYS_close, fd);
            }
        sv(SYS_close, d);
        if (n == 0) return;
    }
#endif
    for (int fd = lo; fd < maxfd; fd++) sv(SYS_close, fd);
}

/* The supervisor: never returns.  All signals are blocked (since before
 * it started) and stay blocked: it runs no handler, and SIGKILL, the only
 * signal it needs to obey, cannot be blocked. */
SV_CODE __attribute__((noreturn)) static void supervise(const SvArgs *a)
{
    /* (the host makes the group too: whichever comes first) */
    sv(SYS_setpgid, 0, 0);
    /* The lifeline as descriptor 0, then nothing else: above all no write
     * end of its own lifeline or another compile's (started with
     * CLONE_VM, this process's descriptor table is a copy of the host's). */
    int life = a->lifer;
    if (life != 0 && sv(SYS_dup3, life, 0, 0) >= 0) life = 0;
    sv_close_from(life + 1, a->maxfd);
    if (life != 0) {
        /* (dup3 failed: close what is below it but the lifeline) */
        for (int fd = 0; fd < life; fd++) sv(SYS_close, fd);
    }
    for (;;) {
        struct pollfd p = {.fd = life, .events = POLLIN};
        long r = sv(SYS_ppoll, &p, 1, NULL, NULL, 8);
        if (r > 0 && p.revents) break;
        if (r < 0 && r != -EINTR && r != -EAGAIN) {
            /* cannot poll: a blocking read says the same (EOF) */
            char c;
            if (sv(SYS_read, life, &c, 1) != -EINTR) break;
        }
    }
    /* The host is gone (the lifeline's last write end is closed; it never
     * writes): the whole group, this process with it. */
    sv(SYS_kill, 0, SIGKILL);
    for (;;) sv(SYS_exit, 137);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SV_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define SV_SANITIZED 1
#endif
#endif
#if SV_RAW && !defined(SV_SANITIZED)
#define SV_CLONE 1
#else
#define SV_CLONE 0
#endif
enum { SV_STACK = 64 * 1024 };        /* it needs a few KiB (sv_close_from's 2 KiB buffer
                                         and a few frames); a guard page below */

/* The supervisor stack's mapping: SV_STACK and the guard page. */
static size_t sv_map_size(void)
{
    long page = sysconf(_SC_PAGESIZE);
    return (size_t)(page > 0 ? page : 4096) + SV_STACK;
}

#if SV_CLONE
SV_CODE static int sv_entry(void *arg)
{
    supervise(arg);
}

/* Valgrind aborts the whole process on a clone it does not know; its
 * preloaded libraries show that it is there. */
static bool under_valgrind(void)
{
    static _Atomic int known = -1;
    int v = known;
    if (v < 0) {
        const char *p = getenv("LD_PRELOAD");
        known = v = p && strstr(p, "vgpreload") ? 1 : 0;
    }
    return v;
}
#endif

/* Starts the supervisor on the lifeline's read end lifer: its pid (its
 * stack, to unmap once it is reaped, in *stack), or -1 with errno.  All
 * signals are blocked while it starts, so that none reaches a handler of
 * the host's in it. */
static pid_t supervisor_start(int lifer, void **stack)
{
    *stack = NULL;
    struct rlimit rl;
    SvArgs args = {.lifer = lifer, .maxfd = 65536};
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
        args.maxfd = rl.rlim_cur < (rlim_t)INT_MAX ? (int)rl.rlim_cur : INT_MAX;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = -1;
    int e = 0;
#if SV_CLONE
    if (!under_valgrind()) {
        size_t size = sv_map_size(), page = size - SV_STACK;
        void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (m != MAP_FAILED) {
            (void)mprotect(m, page, PROT_NONE);   /* the guard page */
            /* the arguments at the bottom, far below what it uses */
            SvArgs *in = (SvArgs *)((char *)m + page);
            *in = args;
            pid = clone(sv_entry, (char *)m + size, CLONE_VM | SIGCHLD, in);
            e = errno;
            if (pid > 0) *stack = m;
            else munmap(m, size);
        }
    }
#endif
    if (pid <= 0) {
#if !defined(SV_SANITIZED) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
        pid = _Fork();
#else
        pid = fork();
#endif
        if (pid == 0) supervise(&args);
        e = errno;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) errno = e;
    return pid;
}

/* ---- the host's side */

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* Kills the supervisor alone: through its pidfd where there is one, which
 * names that process even if an application's SIGCHLD handler has reaped
 * it (its pid could then be another process's). */
static void sup_kill(Child *c)
{
#if defined(__linux__) && defined(SYS_pidfd_send_signal)
    if (c->sfd >= 0 && syscall(SYS_pidfd_send_signal, c->sfd, SIGKILL, NULL, 0) == 0) return;
#endif
    kill(c->sup, SIGKILL);
}

/* Ends the supervisor: killed (it has nothing to finish; killed before
 * the lifeline closes, so that it does not take the group with it), then
 * reaped, then its stack freed. */
void jit_proc_child_release(Child *c)
{
    if (c->sup > 0) {
        if (!c->sup_done) sup_kill(c);
        close_fd(&c->lfd);
        int st;
        reaped(c->sup, &st, true);
        if (c->stack) munmap(c->stack, sv_map_size());
        c->stack = NULL;
        c->sup = 0;
    }
    close_fd(&c->lfd);
    close_fd(&c->sfd);
}

/* Starts argv with stdin from /dev/null and stdout and stderr into a pipe
 * that jit_proc_children_wait reads (the first bytes kept in c->out, the rest read
 * and dropped so the child never blocks), in a group of its own under a
 * supervisor (see above).  Returns 0, or the errno of a failed start
 * (ENOENT: no such program). */
int jit_proc_child_start(Jit *j, char *const argv[], Child *c)
{
    int fds[2], life[2];
    memset(c, 0, offsetof(Child, out));
    c->out[0] = 0;
    c->fd = c->pfd = c->sfd = c->lfd = -1;
    if (fault_hit(AX_FAULT_SPAWN)) return EAGAIN;
    if (pipe2(life, O_CLOEXEC)) return errno;
    c->sup = supervisor_start(life[0], &c->stack);
    int e = errno;
    close(life[0]);
    c->lfd = life[1];
    if (c->sup < 0) {
        c->sup = 0;
        close_fd(&c->lfd);
        return e;
    }
    /* (the supervisor does the same: whichever comes first, the group is
     * there before the compiler joins it) */
    setpgid(c->sup, c->sup);
    if (pipe2(fds, O_CLOEXEC)) {
        e = errno;
        jit_proc_child_release(c);
        return e;
    }
    /* Our end only: the child's must block when the pipe is full. */
    (void)fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    /* (dup2 onto itself would keep the close-on-exec flag: only when the
     * host has closed its standard descriptors can that be, and then the
     * descriptor is dup'd away first) */
    int wfd = fds[1] > 2 ? fds[1] : fcntl(fds[1], F_DUPFD_CLOEXEC, 3);
    posix_spawn_file_actions_adddup2(&fa, wfd, 1);
    posix_spawn_file_actions_adddup2(&fa, wfd, 2);
    /* The compiler gets default signal handling whatever the host
     * application (or a pool worker's blocked mask) has set. */
    posix_spawnattr_init(&at);
    sigset_t none, dflt;
    sigemptyset(&none);
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGPIPE);
    sigaddset(&dflt, SIGCHLD);
    sigaddset(&dflt, SIGINT);
    sigaddset(&dflt, SIGTERM);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dflt);
    posix_spawnattr_setpgroup(&at, c->sup);   /* the supervisor's group */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    pid_t pid;
    e = wfd < 0 ? errno
        : strchr(argv[0], '/') ? posix_spawn(&pid, argv[0], &fa, &at, argv, environ)
                               : posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    if (wfd >= 0 && wfd != fds[1]) close(wfd);
    close(fds[1]);
    if (e) {
        close(fds[0]);
        jit_proc_child_release(c);
        return e;
    }
    c->pid = pid;
    c->fd = fds[0];
    c->pfd = pid_fd(pid);
    c->sfd = pid_fd(c->sup);
    c->deadline = j->timeout_ms > 0 ? jit_now_ms() + j->timeout_ms : 0;
    return 0;
}

/* Reads what the child has written so far. */
static void child_drain(Child *c)
{
    char chunk[4096];
    ssize_t n;
    while ((n = read(c->fd, chunk, sizeof chunk)) > 0) keep(c->out, sizeof c->out, &c->len, chunk, n);
    if (n == 0) c->eof = true;
}

/* After the child has exited or was killed: what it wrote before it
 * exited (a leftover process's later output is not waited for), and its
 * descriptors closed (the supervisor's are jit_proc_child_release's). */
void jit_proc_child_close(Child *c)
{
    if (!c->expired && !c->eof && c->fd >= 0) child_drain(c);
    close_fd(&c->pfd);
    close_fd(&c->fd);
}

/* Kills the child's group (the supervisor is not reaped yet: the group's
 * id is still its own), then the child itself (it may have left the
 * group), and reaps it. */
void jit_proc_child_kill(Child *c)
{
    if (c->sup > 0) kill(-c->sup, SIGKILL);
    c->sup_done = true;
    kill(c->pid, SIGKILL);
    reaped(c->pid, &c->status, true);
    c->gone = true;
}

/* The compiler has exited (reaped): its supervisor is killed now and
 * reaped later (jit_proc_child_release), by when it has most likely exited. */
static void child_exited(Child *c)
{
    c->gone = true;
    if (c->sup > 0 && !c->sup_done) sup_kill(c);
    c->sup_done = true;
}

/* The supervisor died while the compiler runs (someone killed it): its
 * group goes with it, as it would with the host, and the compile is then
 * reported killed. */
static void supervisor_died(Child *c)
{
    if (c->sup_done) return;
    c->sup_done = true;
    kill(-c->sup, SIGKILL);   /* (not reaped: the group's id is still its own) */
}

/* Without a pidfd: whether the supervisor has exited, leaving it
 * unreaped (WNOWAIT), so that its pid, the group's id, stays its own. */
static bool sup_exited(pid_t sup)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r = waitid(P_PID, (id_t)sup, &si, WEXITED | WNOHANG | WNOWAIT);
    /* (ECHILD: reaped for us, where SIGCHLD is ignored) */
    return r == 0 ? si.si_pid == sup : errno == ECHILD;
}

/* Waits until at least one of the n running children (cs[i], not yet
 * gone) has exited or run past its deadline (then it is killed and marked
 * expired); reads their output meanwhile.  Returns how many are done. */
int jit_proc_children_wait(Child **cs, int n)
{
    enum { MAXW = 64 };
    if (n > MAXW) n = MAXW;
    for (;;) {
        int done = 0;
        double now = jit_now_ms();
        int wait_ms = -1;
        struct pollfd pf[3 * MAXW];
        for (int i = 0; i < n; i++) {
            Child *c = cs[i];
            if (!c->gone && c->deadline > 0 && now >= c->deadline) {
                c->expired = true;
                jit_proc_child_kill(c);
            }
            if (c->gone) {
                done++;
                continue;
            }
            /* Without pidfds the exits are looked for every 10 ms. */
            int w = c->pfd >= 0 && (c->sfd >= 0 || c->sup_done) ? -1 : 10;
            if (c->deadline > 0) {
                double left = c->deadline - now;
                int l = left > 1e6 ? 1000000 : (int)left + 1;
                if (w < 0 || l < w) w = l;
            }
            if (w >= 0 && (wait_ms < 0 || w < wait_ms)) wait_ms = w;
        }
        if (done) return done;
        for (int i = 0; i < n; i++) {
            Child *c = cs[i];
            pf[3 * i] = (struct pollfd){.fd = c->eof ? -1 : c->fd, .events = POLLIN};
            pf[3 * i + 1] = (struct pollfd){.fd = c->pfd, .events = POLLIN};
            pf[3 * i + 2] = (struct pollfd){.fd = c->sup_done ? -1 : c->sfd, .events = POLLIN};
        }
        int r = poll(pf, (nfds_t)(3 * n), wait_ms);
        if (r < 0 && errno != EINTR) {
            /* cannot wait for the children properly: wait for one plainly */
            reaped(cs[0]->pid, &cs[0]->status, true);
            child_exited(cs[0]);
            return 1;
        }
        for (int i = 0; i < n; i++) {
            Child *c = cs[i];
            if (r > 0 && (pf[3 * i].revents & (POLLIN | POLLHUP | POLLERR))) child_drain(c);
            if (!c->sup_done && (c->sfd >= 0 ? r > 0 && (pf[3 * i + 2].revents & POLLIN) : sup_exited(c->sup)))
                supervisor_died(c);
            if (c->pfd >= 0 ? r > 0 && (pf[3 * i + 1].revents & POLLIN) : reaped(c->pid, &c->status, false)) {
                if (c->pfd >= 0) reaped(c->pid, &c->status, true);
                child_exited(c);
            }
        }
    }
}

/* Runs argv to its end (jit_proc_child_start, jit_proc_children_wait): 0 with the wait
 * status in *status and its output in c->out, the errno of a failed
 * start, or ETIMEDOUT when the child ran longer than the Jit's limit. */
int jit_proc_run_capture(Jit *j, char *const argv[], Child *c, int *status)
{
    *status = 0;
    int e = jit_proc_child_start(j, argv, c);
    if (e) return e;
    Child *one = c;
    while (!c->gone) jit_proc_children_wait(&one, 1);
    jit_proc_child_close(c);
    jit_proc_child_release(c);
    *status = c->status;
    return c->expired ? ETIMEDOUT : 0;
}

static bool not_found(int e) { return e == ENOENT || e == ENOTDIR; }

/* Whether prog names an executable file, directly or through $PATH (the
 * file found in found[PATH_MAX], its stat, symbolic links followed, in
 * *st): 1 if so, 0 if it names a file that is not executable (so that
 * the message says that, not "not found"), -1 if there is none.
 * posix_spawn reports a failed exec as ENOENT on current glibc, but
 * other C libraries (and glibc under valgrind) report it as exit status
 * 127 instead, which a compiler could also return: looking first makes
 * "not found" reliable. */
int jit_proc_find_program(const char *prog, char found[PATH_MAX], struct stat *st)
{
    if (strchr(prog, '/')) {
        if (strlen(prog) >= PATH_MAX) return -1;
        strcpy(found, prog);
        if (stat(prog, st) || S_ISDIR(st->st_mode)) return -1;
        return S_ISREG(st->st_mode) && !access(prog, X_OK) ? 1 : 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/bin:/usr/bin";
    int best = -1;
    char first[PATH_MAX] = "";
    for (const char *p = path;; p++) {
        const char *end = strchrnul(p, ':');
        /* An empty element means the current directory. */
        int n = end > p ? snprintf(found, PATH_MAX, "%.*s/%s", (int)(end - p), p, prog)
                        : snprintf(found, PATH_MAX, "./%s", prog);
        if (n > 0 && n < PATH_MAX && !stat(found, st) && S_ISREG(st->st_mode)) {
            if (!access(found, X_OK)) return 1;
            if (best < 0) {
                best = 0;
                memcpy(first, found, (size_t)n + 1);
            }
        }
        if (!*end) break;
        p = end;
    }
    if (best == 0) {
        strcpy(found, first);
        (void)stat(found, st);
    }
    return best;
}

static void timeout_error(Jit *j, char *err, size_t n)
{
    jit_set_err(err, n, "the C compiler '%s' did not finish within %.0f s and was killed (set the time limit with "
                "AXLE_CC_TIMEOUT or ax_options.cc_timeout)", j->cc, j->timeout_ms / 1000);
}

void jit_proc_start_error(Jit *j, int e, char *err, size_t n)
{
    if (e == ETIMEDOUT) {
        timeout_error(j, err, n);
        return;
    }
    if (not_found(e)) jit_set_err(err, n, "the C compiler '%s' was not found (set AXLE_CC)", j->cc);
    else jit_set_err(err, n, "the C compiler '%s' could not be run: %s", j->cc, strerror(e));
}

/* The first lines of the compiler's output, for an error message. */
void jit_proc_first_lines(char *s, int maxlines)
{
    while (*s == '\n' || *s == '\r') memmove(s, s + 1, strlen(s));
    char *p = s;
    for (int line = 0; *p && line < maxlines; line++) {
        char *nl = strchr(p, '\n');
        if (!nl) { p += strlen(p); break; }
        p = nl + 1;
    }
    *p = 0;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
}

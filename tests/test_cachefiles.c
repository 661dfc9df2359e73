/*
 * Odd files in the kernel cache directory (src/runtime/jit_disk.c, jit_disk_open_cached): whatever
 * stands under a name axle uses there (a FIFO, with or without a reader,
 * a UNIX socket, a directory, a symbolic link to a device, a device node),
 * a program still compiles and gives the right result within a bounded
 * time, and nothing is written through the odd file: it is left as it
 * was, or removed, or replaced by a regular file of axle's.
 *
 * The names are found, not assumed: a first run in a fresh directory
 * lists what axle keeps there (the sweep's stamp, the compiler's identity
 * file, the kernels' entries, the program's entry).  Each run is a child
 * process under a time limit, so that a hang fails the test instead of
 * hanging it.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "harness.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A generous bound: a compile takes well under a second, but the test
 * machines are shared and loaded.  A hang is forever. */
enum { RUN_LIMIT_S = 90 };

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A short private directory (a UNIX socket's path is at most 107 bytes,
 * and an entry's name alone is 67). */
static bool temp_dir(char *out, size_t n)
{
    snprintf(out, n, "/tmp/axcf-XXXXXX");
    return mkdtemp(out) != NULL;
}

static ax_exp dbl(ax_exp x, void *env) { (void)env; return ax_mul(x, ax_i32(2)); }
static ax_exp add(ax_exp x, ax_exp y, void *env) { (void)env; return ax_add(x, y); }

/* In the child: compiles and runs sum(map (*2) [1..5]) with the cache in
 * dir; exit status 0 when the result is 30, 1 when it is wrong, 2 when
 * the run failed (the message on stderr). */
static void child_program(const char *dir)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_CPU;
    o.cache_dir = dir;
    o.cc_timeout = RUN_LIMIT_S;
    ax_ctx *cx = ax_ctx_new(&o);
    if (!cx) _exit(2);
    int32_t v[5] = {1, 2, 3, 4, 5};
    ax_array *a = ax_array_from(cx, AX_I32, 1, (int64_t[]){5}, v);
    ax_array *r = a ? ax_run(cx, ax_fold_all(add, NULL, ax_i32(0), ax_map(dbl, NULL, ax_use(cx, a)))) : NULL;
    int rc = 2;
    if (!r) fprintf(stderr, "  cachefiles: the run failed: %s\n", ax_error(cx));
    else rc = *(int32_t *)ax_array_data(r, 0) == 30 ? 0 : 1;
    ax_array_release(r);
    ax_array_release(a);
    ax_ctx_free(cx);
    _exit(rc);
}

/* Runs child_program(dir) in a child process: its exit status (0 right,
 * 1 wrong, 2 failed), or -1 when it ran past the limit (it is killed, with
 * its process group) or could not be started or died. */
static int run_bounded(const char *dir, double *secs)
{
    fflush(NULL);
    double t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        setpgid(0, 0);
        child_program(dir);
    }
    setpgid(pid, pid);
    int st = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) return -1;
        if (now_s() - t0 > RUN_LIMIT_S) {
            kill(-pid, SIGKILL);   /* (not yet reaped: the group is still ours) */
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            *secs = now_s() - t0;
            return -1;
        }
        usleep(5000);
    }
    *secs = now_s() - t0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The names in dir (not "." and ".."), at most max of them. */
static int list_names(const char *dir, char names[][128], int max)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (n < max && strlen(e->d_name) < 128) strcpy(names[n++], e->d_name);
    }
    closedir(d);
    return n;
}

static void rm_tree(const char *dir)
{
    if (!strncmp(dir, "/tmp/axcf-", 10)) harness_rm_tree(dir);
}

/* ------------------------------------------------------------ odd files */

enum { FIFO, FIFO_READ, SOCKET, DIRECTORY, LINK_NULL, LINK_ZERO, CHARDEV, NKINDS };
static const char *const kind_name[NKINDS] = {
    "a FIFO", "a FIFO with a reader", "a UNIX socket", "a directory",
    "a symbolic link to /dev/null", "a symbolic link to /dev/zero", "a character device (1,3: null)",
};

/* Puts an odd file of the kind at path; 0, or the errno of a step that
 * failed (the kind is then skipped).  A FIFO_READ's reader is opened by
 * the caller. */
static int plant(int kind, const char *path)
{
    switch (kind) {
    case FIFO:
    case FIFO_READ:
        return mkfifo(path, 0600) ? errno : 0;
    case SOCKET: {
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        if (strlen(path) >= sizeof a.sun_path) return ENAMETOOLONG;
        strcpy(a.sun_path, path);
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (s < 0) return errno;
        int e = bind(s, (struct sockaddr *)&a, sizeof a) ? errno : 0;
        close(s);   /* the socket file stays; opening it gives ENXIO */
        return e;
    }
    case DIRECTORY:
        return mkdir(path, 0700) ? errno : 0;
    case LINK_NULL:
        return symlink("/dev/null", path) ? errno : 0;
    case LINK_ZERO:
        return symlink("/dev/zero", path) ? errno : 0;
    case CHARDEV:
        return mknod(path, S_IFCHR | 0600, makedev(1, 3)) ? errno : 0;
    }
    return EINVAL;
}

/* Every name a first compile leaves in a fresh cache directory gets an odd
 * file of each kind in turn (all the names at once, each with a time two
 * days old, so that the sweep's stamp looks stale and is acted on); the
 * program must run right within the limit, and each odd file must be
 * untouched (same inode, type and times; a directory still empty; a
 * FIFO's reader finds no data), removed, or replaced by a regular file. */
TEST(cache_odd_files)
{
    char tmp[64], ref[128], cache[128];
    REQUIRE(temp_dir(tmp, sizeof tmp));
    snprintf(ref, sizeof ref, "%s/r", tmp);
    double secs = 0;
    int rc = run_bounded(ref, &secs);
    REQUIRE(rc == 0);
    enum { MAXN = 32 };
    char names[MAXN][128];
    int n = list_names(ref, names, MAXN);
    REQUIRE(n > 0);
    bool stamp = false, id = false, so = false;
    for (int i = 0; i < n; i++) {
        fprintf(stderr, "  cachefiles: axle keeps %s\n", names[i]);
        CHECKF(strncmp(names[i], "tmp-", 4), "a temporary file was left: %s", names[i]);
        stamp |= !strcmp(names[i], "sweep.stamp");
        id |= !strncmp(names[i], "cc-", 3);
        so |= strlen(names[i]) > 3 && !strcmp(names[i] + strlen(names[i]) - 3, ".so");
    }
    CHECK(stamp && id && so);

    for (int kind = 0; kind < NKINDS; kind++) {
        snprintf(cache, sizeof cache, "%s/k%d", tmp, kind);
        REQUIRE(mkdir(cache, 0700) == 0);
        struct stat before[MAXN];
        int readers[MAXN];
        bool skipped = false;
        for (int i = 0; i < n; i++) {
            char path[512];
            REQUIRE((size_t)snprintf(path, sizeof path, "%s/%s", cache, names[i]) < sizeof path);
            readers[i] = -1;
            int e = plant(kind, path);
            if (e) {
                fprintf(stderr, "  cachefiles: skipped %s: cannot make one here (%s)\n", kind_name[kind],
                        strerror(e));
                skipped = true;
                break;
            }
            struct timespec old[2] = {{.tv_sec = time(NULL) - 2 * 24 * 3600},
                                      {.tv_sec = time(NULL) - 2 * 24 * 3600}};
            CHECK(utimensat(AT_FDCWD, path, old, AT_SYMLINK_NOFOLLOW) == 0);
            CHECK(lstat(path, &before[i]) == 0);
            if (kind == FIFO_READ) CHECK((readers[i] = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) >= 0);
        }
        if (skipped) continue;
        rc = run_bounded(cache, &secs);
        fprintf(stderr, "  cachefiles: %s under each name: %s in %.1f s\n", kind_name[kind],
                rc == 0 ? "right" : rc < 0 ? "HUNG or died" : rc == 1 ? "WRONG" : "failed", secs);
        CHECKF(rc == 0, "%s: the program did not run right within %d s (%d)", kind_name[kind], RUN_LIMIT_S, rc);
        for (int i = 0; i < n; i++) {
            char path[512];
            REQUIRE((size_t)snprintf(path, sizeof path, "%s/%s", cache, names[i]) < sizeof path);
            struct stat st;
            if (lstat(path, &st)) {
                CHECKF(errno == ENOENT, "%s: %s", path, strerror(errno));
            } else if (S_ISREG(st.st_mode)) {
                /* replaced by an entry of axle's (no odd kind is a
                 * regular file; the new file may reuse the inode number) */
                CHECKF(st.st_uid == geteuid() && !(st.st_mode & 077), "%s: %s replaced by %o", kind_name[kind],
                       names[i], (unsigned)st.st_mode);
            } else {
                /* the same file: nothing changed it, opened it for
                 * writing or wrote into it */
                CHECKF(st.st_ino == before[i].st_ino && (st.st_mode & S_IFMT) == (before[i].st_mode & S_IFMT),
                       "%s: %s replaced by something odd", kind_name[kind], names[i]);
                CHECKF(st.st_mtim.tv_sec == before[i].st_mtim.tv_sec &&
                           st.st_mtim.tv_nsec == before[i].st_mtim.tv_nsec,
                       "%s: %s was modified (written through)", kind_name[kind], names[i]);
                if (kind == DIRECTORY) {
                    char inside[4][128];
                    CHECKF(list_names(path, inside, 4) == 0, "%s: something was put in %s", kind_name[kind],
                           names[i]);
                }
            }
            if (readers[i] >= 0) {
                char c;
                ssize_t r = read(readers[i], &c, 1);
                /* (0: no writer has it open; -1, EAGAIN: one has, no data) */
                CHECKF(r <= 0, "%s: data was written into %s", kind_name[kind], names[i]);
                close(readers[i]);
            }
        }
    }
    rm_tree(tmp);
}

/* The cache directory itself replaced by a FIFO: refused at once (the
 * disk cache is off), the program still runs. */
TEST(cache_dir_is_a_fifo)
{
    char tmp[64], cache[128];
    REQUIRE(temp_dir(tmp, sizeof tmp));
    snprintf(cache, sizeof cache, "%s/c", tmp);
    REQUIRE(mkfifo(cache, 0600) == 0);
    double secs = 0;
    int rc = run_bounded(cache, &secs);
    CHECKF(rc == 0, "the program did not run right within %d s (%d)", RUN_LIMIT_S, rc);
    struct stat st;
    CHECK(lstat(cache, &st) == 0 && S_ISFIFO(st.st_mode));
    rm_tree(tmp);
}

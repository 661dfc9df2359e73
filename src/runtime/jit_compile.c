/*
 * One compile of run-time compilation: the unit's source written to a
 * fresh file (in the cache directory, or a private temporary one without
 * a disk cache), the compiler started on it (jit_proc.c), and once it has
 * exited its result checked, stored in the disk cache (jit_disk.c) and
 * loaded.  jit.c runs several at once.
 *
 * Lean link (JitOptions.lean_link, GCC only).  GCC's driver links a shared
 * object against the C runtime: its start files (crti, crtbeginS, ...),
 * libgcc_s and libc.so.  Reading libc.so's symbol table is most of a
 * link's time, and generated code needs none of it at link time: its few
 * calls into the C library (sched_yield, memcpy) are left undefined in the
 * object, as a shared object may, and the loader binds them at dlopen to
 * the process's own C library, which every dynamically linked process has
 * loaded (an unversioned reference binds to the default version, the one
 * a link would have recorded).  So the object is linked with -nostdlib,
 * the libraries of the options (libm, libmvec: the loader must find those
 * through the object's own dependencies), then -lgcc (helpers GCC may call,
 * such as __popcountdi2 on targets without the instruction).
 *
 * Decided on measurement: the lean link takes a large part of a link's
 * time off, and keeping -lc loses most of the gain; linking with ld
 * directly saves little more, not worth finding ld and its paths.  To
 * measure (the link alone, CPU time, interleaved runs): write unit 1 of
 * `axle dump dotp --stage c` to u.c, `cc -O3 -march=native -fPIC -c u.c`,
 * then compare `perf stat -r 11 cc -shared -o u.so u.o -lm` with
 * `perf stat -r 11 cc -shared -nostdlib -o u.so u.o -lm -lgcc` (and with
 * -lc added before -lgcc).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "jit_int.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The private directory's removal (no disk cache). */
static void job_dir_done(Job *b)
{
    if (b->tmpdir[0]) {
        if (b->dfd >= 0) close(b->dfd);
        rmdir(b->tmpdir);
        b->tmpdir[0] = 0;
    }
}

static void job_files_done(Job *b)
{
    if (b->base[0]) {
        jit_disk_unlink_name(b->dfd, b->base, ".c");
        jit_disk_unlink_name(b->dfd, b->base, ".so");
        b->base[0] = 0;
    }
    job_dir_done(b);
}

/* Writes the source and starts the compiler; false with a message (and
 * nothing left behind) when that fails. */
bool jit_compile_start(Jit *j, Job *b, const char *src, size_t len, const char *flags, char *err, size_t errsize)
{
    b->tmpdir[0] = 0;
    b->base[0] = 0;
    b->dfd = j->dirfd;
    b->dir = j->dir;
    if (b->dfd < 0) {
        /* No disk cache: a private directory of our own for the files. */
        const char *t = getenv("TMPDIR");
        if (!t || t[0] != '/') t = "/tmp";
        snprintf(b->tmpdir, sizeof b->tmpdir, "%s/axle-XXXXXX", t);
        if (!mkdtemp(b->tmpdir) || (b->dfd = open(b->tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
            jit_set_err(err, errsize, "cannot make a temporary directory in %s: %s", t, strerror(errno));
            if (b->tmpdir[0] && b->dfd < 0) rmdir(b->tmpdir);
            b->tmpdir[0] = 0;
            return false;
        }
        b->dir = b->tmpdir;
    }
    char srcpath[PATH_MAX], sopath[PATH_MAX];
    int fd = jit_disk_create_unique(j, b->dfd, ".c", b->base);
    if (fd < 0) {
        jit_set_err(err, errsize, "cannot create a file in %s: %s", b->dir, strerror(errno));
        b->base[0] = 0;
        job_dir_done(b);
        return false;
    }
    bool wrote = jit_disk_write_all(fd, src, len);
    close(fd);
    if (!wrote) {
        jit_set_err(err, errsize, "cannot write the generated source in %s", b->dir);
        job_files_done(b);
        return false;
    }
    if ((size_t)snprintf(srcpath, sizeof srcpath, "%s/%s.c", b->dir, b->base) >= sizeof srcpath ||
        (size_t)snprintf(sopath, sizeof sopath, "%s/%s.so", b->dir, b->base) >= sizeof sopath) {
        jit_set_err(err, errsize, "the directory name %s is too long", b->dir);
        job_files_done(b);
        return false;
    }
    Argv a = {0};
    jit_proc_argv_words(&a, j->cc);
    jit_proc_argv_words(&a, j->cflags);
    if (j->lean) jit_proc_argv_push(&a, "-nostdlib");
    if (flags) jit_proc_argv_words(&a, flags);
    jit_proc_argv_push(&a, "-o");
    jit_proc_argv_push(&a, sopath);
    jit_proc_argv_push(&a, srcpath);
    jit_proc_argv_words(&a, j->libs);
    if (j->lean) jit_proc_argv_push(&a, "-lgcc");
    if (a.oom) {
        jit_proc_argv_free(&a);
        jit_set_err(err, errsize, "out of memory");
        job_files_done(b);
        return false;
    }
    b->t0 = jit_now_ms();
    int e = jit_proc_child_start(j, a.v, &b->ch);
    jit_proc_argv_free(&a);
    if (e) {
        jit_proc_start_error(j, e, err, errsize);
        job_files_done(b);
        return false;
    }
    return true;
}

/* After the compiler has exited (or was killed): the loaded result,
 * stored in the disk cache when it is on; NULL with a message.  The
 * job's files and directory are gone afterwards either way. */
void *jit_compile_finish(Jit *j, Job *b, const char *hex, const uint8_t key[KEY_BYTES], char *err, size_t errsize,
                         double *ms)
{
    void *h = NULL;
    jit_proc_child_close(&b->ch);
    *ms = jit_now_ms() - b->t0;
    int st = b->ch.status;
    char *out = b->ch.out;
    if (b->ch.expired) {
        jit_proc_start_error(j, ETIMEDOUT, err, errsize);
    } else if (WIFSIGNALED(st)) {
        jit_set_err(err, errsize, "the C compiler '%s' was killed by signal %d", j->cc, WTERMSIG(st));
    } else if (WIFEXITED(st) && WEXITSTATUS(st) == 127 && !out[0]) {
        /* How a failed exec shows where posix_spawn cannot report it. */
        jit_proc_start_error(j, ENOENT, err, errsize);
    } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
        jit_proc_first_lines(out, 12);
        jit_set_err(err, errsize, "the C compiler '%s' failed: %s", j->cc, out[0] ? out : "(no message)");
    } else {
        if (j->dirfd >= 0) h = jit_disk_store_entry(j, b->base, hex, key);
        if (!h) {
            /* dlopen opens by name, blocking: what stands there is looked
             * at first, like every file opened in the directory */
            char name[64];
            const char *why;
            snprintf(name, sizeof name, "%s.so", b->base);
            int fd = jit_disk_open_cached(b->dfd, name, O_RDONLY, &why);
            if (fd >= 0) {
                close(fd);
                h = jit_disk_load_path(b->dir, name, err, errsize);
            } else {
                jit_set_err(err, errsize, "the C compiler '%s' left no output %s/%s (%s)", j->cc, b->dir, name,
                            why ? why : strerror(errno));
            }
        }
    }
    job_files_done(b);
    /* the supervisor last: killed when the compiler exited, it has most
     * likely exited by now, so reaping it waits for nothing */
    jit_proc_child_release(&b->ch);
    return h;
}

/* A job given up (another failed first): its compiler killed, its files
 * removed. */
void jit_compile_abandon(Job *b)
{
    if (!b->ch.gone) jit_proc_child_kill(&b->ch);
    jit_proc_child_close(&b->ch);
    jit_proc_child_release(&b->ch);
    job_files_done(b);
}

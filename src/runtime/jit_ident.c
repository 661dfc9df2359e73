/*
 * The compiler's identity and the fixed part of every key: the first line
 * of `cc --version`, remembered in an identity file of the disk cache
 * while the compiler's files are unchanged, and the key's fields hashed
 * once per Jit (jit.c's essay, "Key").
 *
 * Compiler identity.  Running `cc --version` costs a fork and an exec,
 * more than the rest of a disk hit together, so with a disk cache the
 * answer is kept in an identity file, cc-<SHA-256>.id, the hash
 * over the compiler command and, for each of its words that names a
 * program (the first, found through $PATH, and later words not starting
 * with '-', as in "ccache cc"), the program's real path, device, inode,
 * size, modification and change times (stat, following symbolic links).
 * Replacing or editing the compiler, or pointing cc at another one,
 * changes these and so the file's name: the next process runs
 * `cc --version` again.  The file holds "axle-cc-id-1\n", the identity
 * and a newline; it is written and renamed into place like an entry and
 * read with an entry's checks (no link, a regular file of ours that no
 * one else may write); one that fails them, is malformed or is more than
 * a day old is ignored and rewritten.  The age limit bounds the one case
 * the stat cannot see: a wrapper (a script, or ccache installed as cc)
 * whose compiler behind it is replaced while the wrapper stays the same.
 * Without a disk cache `cc --version` runs once per Jit, as always.
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
#include <sys/utsname.h>
#include <unistd.h>

/* ------------------------------------------------------------ key */

void jit_ident_put_field(JitSha256 *s, const void *p, size_t n)
{
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)n >> (8 * i));
    jit_sha256_update(s, len, 8);
    jit_sha256_update(s, p, n);
}

void jit_ident_put_str(JitSha256 *s, const char *str) { jit_ident_put_field(s, str, strlen(str)); }

/* The host's instruction-set identity, for -march=native keys: the machine
 * name and the CPU feature line of /proc/cpuinfo ("flags" on x86,
 * "Features" on Arm). */
static void put_host(JitSha256 *s)
{
    struct utsname u;
    jit_ident_put_str(s, uname(&u) == 0 ? u.machine : "");
    FILE *f = fopen("/proc/cpuinfo", "re");
    char *line = NULL;
    size_t cap = 0;
    bool found = false;
    if (f) {
        while (getline(&line, &cap, f) > 0)
            if (!strncmp(line, "flags", 5) || !strncmp(line, "Features", 8) ||
                !strncmp(line, "isa", 3)) {
                jit_ident_put_str(s, line);
                found = true;
                break;
            }
        fclose(f);
    }
    free(line);
    if (!found) jit_ident_put_str(s, "");
}

/* ------------------------------------------------------------ compiler identity */

#define ID_MAGIC "axle-cc-id-1\n"
enum { ID_MAX_AGE = 24 * 3600 };      /* seconds an identity file is trusted */

static void put_u64(JitSha256 *s, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
    jit_sha256_update(s, b, 8);
}

/* What identifies an executable file without running it: its real path,
 * device, inode, size, modification and change times. */
static void put_file_id(JitSha256 *s, const char *found, const struct stat *st)
{
    char *real = realpath(found, NULL);
    jit_ident_put_str(s, real ? real : found);
    free(real);
    put_u64(s, (uint64_t)st->st_dev);
    put_u64(s, (uint64_t)st->st_ino);
    put_u64(s, (uint64_t)st->st_size);
    put_u64(s, (uint64_t)st->st_mtim.tv_sec);
    put_u64(s, (uint64_t)st->st_mtim.tv_nsec);
    put_u64(s, (uint64_t)st->st_ctim.tv_sec);
    put_u64(s, (uint64_t)st->st_ctim.tv_nsec);
}

/* The name of the identity file for the command words w, whose first word
 * was found as prog0 (stat st0): "cc-<SHA-256>.id" over the command and
 * the file identity of every word that names a program (the first, and
 * later ones not starting with '-': "ccache cc" names both). */
static void id_file_name(const Jit *j, const Argv *w, const char *prog0, const struct stat *st0,
                         char name[80])
{
    JitSha256 s;
    uint8_t h[32];
    char hex[65];
    jit_sha256_init(&s);
    jit_ident_put_str(&s, "axle-cc-id-1");
    jit_ident_put_str(&s, j->cc);
    put_file_id(&s, prog0, st0);
    for (size_t i = 1; i < w->n; i++) {
        char found[PATH_MAX];
        struct stat st;
        if (w->v[i][0] != '-' && jit_proc_find_program(w->v[i], found, &st) > 0) put_file_id(&s, found, &st);
        else jit_ident_put_str(&s, "");
    }
    jit_sha256_final(&s, h);
    jit_to_hex(h, 32, hex);
    snprintf(name, 80, "cc-%s.id", hex);
}

/* Reads the identity file name (ID_MAGIC, then the identity and a
 * newline) into out[cap], with the same checks as a cache entry.  False
 * when there is none or it is refused, malformed or older than
 * ID_MAX_AGE. */
static bool read_id(Jit *j, const char *name, char *out, size_t cap)
{
    const char *why = NULL;
    int fd = jit_disk_open_cached(j->dirfd, name, O_RDONLY, &why);
    if (fd < 0) {
        if (why) jit_trace(j, "ignoring %s/%s (%s)", j->dir, name, why);
        return false;
    }
    const size_t ml = sizeof ID_MAGIC - 1;
    struct stat st;
    uint8_t *b = NULL;
    time_t age = 0;
    if (fstat(fd, &st)) why = strerror(errno);
    else if ((why = jit_disk_not_ours(&st))) {}
    else if ((size_t)st.st_size <= ml || (size_t)st.st_size - ml > cap) why = "wrong size";
    else if ((age = time(NULL) - st.st_mtime) > ID_MAX_AGE || age < -60) why = "out of date";
    else if (!(b = jit_disk_read_exact(fd, (size_t)st.st_size))) why = "changed while read";
    else {
        size_t n = (size_t)st.st_size - ml - 1;   /* the identity's length */
        if (memcmp(b, ID_MAGIC, ml) || b[ml + n] != '\n' || memchr(b + ml, '\n', n) ||
            memchr(b + ml, 0, n))
            why = "malformed";
        else {
            memcpy(out, b + ml, n);
            out[n] = 0;
        }
    }
    close(fd);
    free(b);
    if (why) jit_trace(j, "ignoring %s/%s (%s)", j->dir, name, why);
    return !why;
}

/* Saves id as the identity file name: written under a fresh name and
 * renamed into place, like an entry. */
static void write_id(Jit *j, const char *name, const char *id)
{
    char base[32], tmp[64];
    int fd = jit_disk_create_unique(j, j->dirfd, ".id", base);
    if (fd < 0) {
        jit_trace(j, "could not save the compiler identity in %s: %s", j->dir, strerror(errno));
        return;
    }
    snprintf(tmp, sizeof tmp, "%s.id", base);
    bool ok = jit_disk_write_all(fd, ID_MAGIC, sizeof ID_MAGIC - 1) && jit_disk_write_all(fd, id, strlen(id)) &&
              jit_disk_write_all(fd, "\n", 1);
    ok = !close(fd) && ok;
    if (ok && !renameat(j->dirfd, tmp, j->dirfd, name)) return;
    jit_trace(j, "could not save the compiler identity as %s/%s", j->dir, name);
    unlinkat(j->dirfd, tmp, 0);
}

/* Finds the compiler's identity (from its identity file, else by running
 * `cc --version`) and hashes the fixed part of the key, once it has
 * succeeded: a failure (a compiler missing or not starting, memory
 * lacking) is not remembered, so the next load tries again and a compiler
 * installed meanwhile is found.  False (with a message) when the compiler
 * cannot be started. */
bool jit_ident_ensure(Jit *j, char *err, size_t n)
{
    if (j->id_done) return true;
    Argv a = {0};
    jit_proc_argv_words(&a, j->cc);
    char out[OUT_CAP], prog[PATH_MAX], idname[80] = "";
    struct stat pst;
    int e = 0;
    int found = a.oom || a.n < 1 ? -1 : jit_proc_find_program(a.v[0], prog, &pst);
    if (a.oom) e = ENOMEM;
    else if (found <= 0) e = found < 0 ? ENOENT : EACCES;
    else {
        jit_disk_ensure_dir(j);
        if (j->dirfd >= 0) id_file_name(j, &a, prog, &pst, idname);
        if (idname[0] && read_id(j, idname, out, sizeof out)) {
            jit_trace(j, "compiler identity from %s", idname);
        } else {
            jit_proc_argv_push(&a, "--version");
            int st;
            Child ch;
            e = a.oom ? ENOMEM : jit_proc_run_capture(j, a.v, &ch, &st);
            if (!e) memcpy(out, ch.out, sizeof out);
            /* Whatever the exit status: a compiler without --version
             * still compiles, and its output (or nothing) still
             * identifies it. */
            if (!e) {
                jit_proc_first_lines(out, 1);
                if (idname[0]) write_id(j, idname, out);
            }
        }
    }
    jit_proc_argv_free(&a);
    if (e) {
        /* "Not found" only when the program is missing: a program that
         * exists but cannot start gets the system's reason. */
        if (found == 0) jit_set_err(err, n, "the C compiler '%s' is not executable (set AXLE_CC)", j->cc);
        else jit_proc_start_error(j, e, err, n);
        return false;
    }
    char *id = ax__strdup(out);
    if (!id) {
        jit_set_err(err, n, "out of memory");
        return false;
    }
    free(j->compiler_id);
    j->compiler_id = id;
    j->gcc = !strstr(id, "clang") &&
             (strstr(id, "gcc") || strstr(id, "GCC") || !strncmp(id, "cc (", 4) || strstr(id, "/cc ("));
    j->lean = j->lean_link && j->gcc;
    JitSha256 *s = &j->prefix;
    jit_sha256_init(s);
    jit_ident_put_str(s, "axle-jit-key-1");
    jit_ident_put_str(s, j->cc);
    jit_ident_put_str(s, out);
    jit_ident_put_str(s, j->cflags);
    jit_ident_put_str(s, j->libs);
    jit_ident_put_str(s, j->version);
    if (strstr(j->cflags, "native")) put_host(s);
    else jit_ident_put_str(s, "");
    if (j->lean) jit_ident_put_str(s, "lean link: -nostdlib ... -lgcc");
    j->id_done = true;
    return true;
}

const char *jit_compiler_id(Jit *j)
{
    return j && jit_ident_ensure(j, NULL, 0) ? j->compiler_id : NULL;
}

bool jit_is_gcc(Jit *j)
{
    return jit_compiler_id(j) && j->gcc;
}

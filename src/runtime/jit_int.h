/*
 * What the files of run-time compilation share (jit.h is the interface):
 * the Jit and its modules, the constants of the disk cache's entries, the
 * helpers every file uses, and each file's functions that another calls.
 *
 *   jit.c          the public face: a Jit, the memory cache, jit_load and
 *                  jit_load_many (which units come from a cache, which are
 *                  compiled, how many compilers run at once), keys
 *   jit_compile.c  one compile: the source written, the compiler started
 *                  on it, its result checked, stored and loaded (the lean
 *                  link)
 *   jit_ident.c    the compiler's identity (`cc --version`, remembered in
 *                  an identity file) and the fixed part of every key
 *   jit_disk.c     the disk cache: its directory, its hostile-file checks,
 *                  entries and blobs, the size limit
 *   jit_proc.c     child processes: the compiler in a process group of its
 *                  own under a supervisor, its output, its time limit
 *   jit_host.c     the host's instruction-set extensions (saved programs)
 *   jit_sha256.c   SHA-256
 *
 * The files call in that order only (each calls those below it).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_JIT_INT_H
#define AX_JIT_INT_H

#include "jit.h"
#include "fault.h"
#include "hash.h"
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

/* ------------------------------------------------------------ state */

enum {
    KEY_BYTES = 32,
    TRAILER_BYTES = 32 + 32 + 8 + 16,
    OUT_CAP = 4096,                   /* compiler output kept for messages */
};
#define TRAILER_MAGIC "axle-jit-cache1\n"   /* 16 bytes, no NUL */
#define MAX_ENTRY ((off_t)1 << 30)          /* no generated object is near this */

struct JitModule {
    JitModule *next;                  /* hash chain */
    JitModule *snext;                 /* chain of the source index */
    uint64_t fh;                      /* fast_hash of its source and flags */
    char *src;                        /* its flags, a NUL, its source (NULL: not indexed) */
    size_t srclen;                    /* bytes of src, both */
    uint8_t key[KEY_BYTES];
    char hex[2 * KEY_BYTES + 1];
    void *handle;                     /* NULL: a linked module (fns) */
    const struct ax_linked_fn *fns;   /* a linked module's functions, nfns */
    int nfns;
    int fd;                           /* -1, or the memory file a module from
                                         an image is loaded from, open while
                                         it is (jit_disk_load_image) */
};

struct Jit {
    char *cc, *cflags, *libs, *cache_dir_opt, *version;
    bool no_disk_cache, trace;
    bool lean_link;                   /* the option */
    bool gcc, lean;                   /* with the identity: GCC, so the lean link */
    double timeout_ms;                /* the compiler's time limit; <= 0: none */

    bool id_done;                     /* compiler identity and key prefix */
    char *compiler_id;                /* NULL: the compiler cannot be run */
    JitSha256 prefix;                 /* hash state after the fixed fields */

    bool dir_done;                    /* disk cache directory checked */
    int dirfd;                        /* -1: no disk cache */
    char *dir;                        /* its absolute path */

    int64_t size_limit;               /* bytes of entries; <= 0: no limit */

    JitModule **buckets;              /* memory cache */
    size_t nbuckets, nmodules;
    HMap by_source;                   /* fast_hash -> a module (chained by snext):
                                         a memory hit without SHA-256 */
    uint64_t seed;                    /* temporary names when getrandom fails */
};

/* ------------------------------------------------------------ helpers every file uses */

static inline void jit_trace(Jit *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void jit_trace(Jit *j, const char *fmt, ...)
{
    if (!j->trace) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("axle: cache: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static inline void jit_set_err(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline void jit_set_err(char *err, size_t n, const char *fmt, ...)
{
    if (!err || !n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
}

static inline double jit_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static inline void jit_to_hex(const uint8_t *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = 0;
}

/* ------------------------------------------------------------ jit_proc.c: child processes */

typedef struct Argv {
    char **v;
    size_t n, cap;
    bool oom;
} Argv;

void jit_proc_argv_push(Argv *a, const char *s);
/* Whitespace-separated words; no quoting, as with make's $(CC). */
void jit_proc_argv_words(Argv *a, const char *s);
void jit_proc_argv_free(Argv *a);

/* One compiler run whose output is captured: started by jit_proc_child_start,
 * serviced by jit_proc_children_wait until it has exited or its time is up, its
 * supervisor ended by jit_proc_child_release.  Several may run at once
 * (jit_load_many). */
typedef struct Child {
    pid_t pid;                 /* the compiler */
    pid_t sup;                 /* its supervisor, the group's leader; 0 when reaped */
    int fd;                    /* our end of the compiler's output pipe */
    int pfd, sfd;              /* pidfds of the compiler and the supervisor, or -1 */
    int lfd;                   /* the lifeline's write end (only we hold it) */
    void *stack;               /* the supervisor's stack (clone), or NULL */
    bool eof, gone, expired;
    bool sup_done;             /* the supervisor was killed, or has died */
    int status;                /* the compiler's wait status once gone */
    double deadline;           /* jit_now_ms() past which it is killed; 0: none */
    size_t len;
    char out[OUT_CAP];         /* the first OUT_CAP-1 bytes of its output */
} Child;

/* Starts argv with stdin from /dev/null and stdout and stderr into a pipe
 * that jit_proc_children_wait reads, in a group of its own under a
 * supervisor (jit_proc.c).  Returns 0, or the errno of a failed start
 * (ENOENT: no such program). */
int jit_proc_child_start(Jit *j, char *const argv[], Child *c);
/* Waits until at least one of the n running children (cs[i], not yet
 * gone) has exited or run past its deadline (then it is killed and marked
 * expired); reads their output meanwhile.  Returns how many are done. */
int jit_proc_children_wait(Child **cs, int n);
/* After the child has exited or was killed: what it wrote before it
 * exited, and its descriptors closed (the supervisor's are
 * jit_proc_child_release's). */
void jit_proc_child_close(Child *c);
/* Kills the child's group, then the child itself, and reaps it. */
void jit_proc_child_kill(Child *c);
/* Ends the supervisor: killed, then reaped, then its stack freed. */
void jit_proc_child_release(Child *c);
/* Runs argv to its end: 0 with the wait status in *status and its output
 * in c->out, the errno of a failed start, or ETIMEDOUT when the child ran
 * longer than the Jit's limit. */
int jit_proc_run_capture(Jit *j, char *const argv[], Child *c, int *status);
/* Whether prog names an executable file, directly or through $PATH (the
 * file found in found[PATH_MAX], its stat in *st): 1 if so, 0 if it names
 * a file that is not executable, -1 if there is none. */
int jit_proc_find_program(const char *prog, char found[PATH_MAX], struct stat *st);
/* The message for a compiler that could not be started (errno e;
 * ETIMEDOUT: ran past its time limit). */
void jit_proc_start_error(Jit *j, int e, char *err, size_t n);
/* The first lines of the compiler's output, for an error message. */
void jit_proc_first_lines(char *s, int maxlines);

/* ------------------------------------------------------------ jit_disk.c: the disk cache */

/* Opens name in dfd only if it is a regular file of ours (jit_disk.c:
 * every file axle opens in a cache directory goes through this or
 * jit_disk_create_unique).  Returns the descriptor; -1 with *why NULL
 * when there is no such file (errno ENOENT), or -1 with *why saying what
 * is wrong with the one there. */
int jit_disk_open_cached(int dfd, const char *name, int flags, const char **why);
/* Creates base+suffix in dfd with a fresh base name ("tmp-<16 hex>"),
 * exclusively, mode 0600.  Returns the descriptor, or -1 with base "". */
int jit_disk_create_unique(Jit *j, int dfd, const char *suffix, char base[32]);
bool jit_disk_write_all(int fd, const void *p, size_t n);
/* Reads an open regular file of the given size; NULL if it is not exactly
 * that long (it changed under us) or memory is lacking. */
uint8_t *jit_disk_read_exact(int fd, size_t size);
void jit_disk_unlink_name(int dfd, const char *base, const char *suffix);
/* dlopen of dir/name; NULL with the loader's message in err. */
void *jit_disk_load_path(const char *dir, const char *name, char *err, size_t n);
/* NULL if st is a regular file of ours that no one else may write (and
 * not absurdly large), else what is wrong. */
const char *jit_disk_not_ours(const struct stat *st);
/* Checks the cache directory once (j->dirfd, j->dir; -1 and NULL when
 * there is no disk cache). */
void jit_disk_ensure_dir(Jit *j);
/* Stores the compiler's output base.so as the entry hex.so and loads it.
 * NULL (with a trace) if that fails: the caller loads base.so instead. */
void *jit_disk_store_entry(Jit *j, const char *base, const char *hex, const uint8_t key[KEY_BYTES]);
/* The disk cache's entry for the key, loaded, or NULL (a corrupt entry is
 * removed on the way). */
void *jit_disk_find(Jit *j, const char *hex, const uint8_t key[KEY_BYTES]);
/* The object of the entry for the key, verified, without its trailer
 * (malloc'd, its size in *n); NULL when there is none or it is bad. */
void *jit_disk_image(Jit *j, const char *hex, const uint8_t key[KEY_BYTES], size_t *n);
/* dlopen of an object given as bytes: 0 with the handle in *h and in *fd
 * the memory file it was loaded from (to be closed after dlclose), or -1
 * (a private temporary file, already removed, where there are no memory
 * files); -1 with a message. */
int jit_disk_load_image(const void *b, size_t n, void **h, int *fd, char *err, size_t errsize);

/* ------------------------------------------------------------ jit_ident.c: the compiler's identity, the key */

/* A field of a key: its length (8 bytes, little-endian), then its bytes. */
void jit_ident_put_field(JitSha256 *s, const void *p, size_t n);
void jit_ident_put_str(JitSha256 *s, const char *str);
/* Finds the compiler's identity and hashes the fixed part of the key into
 * j->prefix, once it has succeeded.  False (with a message) when the
 * compiler cannot be started. */
bool jit_ident_ensure(Jit *j, char *err, size_t n);

/* ------------------------------------------------------------ jit_compile.c: one compile */

/* One compile: the source written to a file, the compiler started on it
 * (jit_compile_start); later its result checked, stored and loaded (jit_compile_finish).
 * Several run at once in jit_load_many. */
typedef struct Job {
    int unit;                  /* jit_load_many's index */
    char tmpdir[PATH_MAX];     /* a private directory when there is no disk cache */
    int dfd;                   /* where the files are */
    const char *dir;
    char base[32];             /* the files' name, without suffix; "" none yet */
    double t0;
    Child ch;
} Job;

/* Writes the source and starts the compiler; false with a message (and
 * nothing left behind) when that fails. */
bool jit_compile_start(Jit *j, Job *b, const char *src, size_t len, const char *flags, char *err, size_t errsize);
/* After the compiler has exited (or was killed): the loaded result,
 * stored in the disk cache when it is on; NULL with a message. */
void *jit_compile_finish(Jit *j, Job *b, const char *hex, const uint8_t key[KEY_BYTES], char *err, size_t errsize,
                         double *ms);
/* A job given up (another failed first): its compiler killed, its files
 * removed. */
void jit_compile_abandon(Job *b);

#endif

/*
 * The disk cache of compiled modules and other compiled forms (blobs):
 * its directory (checked, swept of stale temporary files), every file
 * opened in it through the hostile-file checks (jit_disk_open_cached,
 * jit_disk_create_unique), entries written, verified and loaded, blobs,
 * the size limit and its eviction, and the `axle cache` command's
 * statistics and clearing.
 *
 * Disk cache.  It never loads a file that another user could have
 * written.  The directory must be ours and not writable by
 * group or others, else the disk cache is not used at all.  An entry is
 * KEY.so: the shared object followed by a trailer that ELF loaders ignore,
 *
 *     key (32) | SHA-256 of the object (32) | object length (8, LE) |
 *     "axle-jit-cache1\n" (16)
 *
 * written under a fresh name with O_EXCL and renamed into place, so a
 * reader sees a whole entry or none, and an entry's file is never written
 * again once it has its name.  A reader opens it only if the name is a
 * regular file of ours, never following a link and never blocking (every
 * file axle opens in the directory, entries, identity files, the sweep's
 * stamp and temporary files, goes through jit_disk_open_cached or
 * jit_disk_create_unique: a FIFO, socket, directory or device under any
 * name there is never opened, read or written through), checks that the
 * open file is a
 * regular file of ours that no one else may write, reads it and checks
 * magic, length, key and content hash.  Time of check versus
 * time of use: dlopen takes a path, so rather than dlopen KEY.so (which
 * could be replaced between our check and the loader's open) we copy the
 * verified bytes to a fresh O_EXCL file and dlopen that; the copy costs a
 * file creation and a page-cache write of the object, mostly the
 * creation (test_jit prints a whole disk hit's time: "jit: disk hit").
 * (dlopen of /proc/self/fd/N would avoid the copy, but the loader recognises objects
 * by path name as well as by inode, so a reused descriptor number could
 * alias an earlier module, and /proc may be absent.)  An entry that fails
 * any check is deleted and rebuilt.  No fsync: a torn entry after a crash
 * fails verification and is rebuilt.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "jit_int.h"
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/mman.h>
#include <sys/random.h>
#endif

/* ------------------------------------------------------------ files */

static uint64_t random64(Jit *j)
{
    uint64_t r;
#if defined(__linux__)
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r) return r;
#endif
    /* splitmix64 over time, pid and a per-Jit counter: names need only be
     * unlikely to collide (O_EXCL catches the rest), not unpredictable,
     * since no one else can write in the directory. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    j->seed += 0x9e3779b97f4a7c15u ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
    r = j->seed;
    r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9u;
    r = (r ^ (r >> 27)) * 0x94d049bb133111ebu;
    return r ^ (r >> 31);
}

/* Every file axle opens in a cache directory is opened through
 * jit_disk_open_cached or jit_disk_create_unique: whatever stands under a name there (a
 * FIFO, a socket, a directory, a device node, a symbolic link to any of
 * them, planted or left by some other tool) must never hang the open,
 * never be followed, never be read or written through, and never become
 * a controlling terminal.  The flags for that: */
#define CACHE_OPEN_FLAGS (O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

/* Opens name in dfd (flags: O_RDONLY or O_WRONLY, with O_CREAT to make it)
 * only if it is a regular file of ours.  The name is looked at first
 * (lstat), so that an odd file is not even opened (a device's open alone
 * may act: a tape rewinds), then the open file is checked again (fstat:
 * the same file, still regular and ours), so that a file swapped in
 * between is refused too.  Returns the descriptor; -1 with *why NULL
 * when there is no such file (errno ENOENT), or -1 with *why saying what
 * is wrong with the one there. */
int jit_disk_open_cached(int dfd, const char *name, int flags, const char **why)
{
    struct stat pre, st;
    *why = NULL;
    bool existed = !fstatat(dfd, name, &pre, AT_SYMLINK_NOFOLLOW);
    if (!existed && (errno != ENOENT || !(flags & O_CREAT))) {
        if (errno != ENOENT) *why = strerror(errno);
        return -1;
    }
    if (existed) {
        if (S_ISLNK(pre.st_mode)) *why = "a symbolic link";
        else if (!S_ISREG(pre.st_mode)) *why = "not a regular file";
        else if (pre.st_uid != geteuid()) *why = "owned by another user";
        if (*why) {
            errno = EPERM;
            return -1;
        }
    }
    int fd = openat(dfd, name, flags | CACHE_OPEN_FLAGS, 0600);
    if (fd < 0) {
        if (errno == ENOENT && !(flags & O_CREAT)) return -1;   /* removed meanwhile: none */
        *why = errno == ELOOP ? "a symbolic link" : errno == ENXIO ? "not a regular file" : strerror(errno);
        return -1;
    }
    if (fstat(fd, &st)) *why = strerror(errno);
    else if (!S_ISREG(st.st_mode)) *why = "not a regular file";
    else if (st.st_uid != geteuid()) *why = "owned by another user";
    else if (existed && (st.st_dev != pre.st_dev || st.st_ino != pre.st_ino)) *why = "replaced while opened";
    if (*why) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

/* Creates base+suffix in dfd with a fresh base name ("tmp-<16 hex>"),
 * exclusively (O_EXCL: nothing that was there, link or not, is opened),
 * mode 0600.  Returns the descriptor, or -1 with base "". */
int jit_disk_create_unique(Jit *j, int dfd, const char *suffix, char base[32])
{
    base[0] = 0;   /* (callers format the name even when this fails) */
    if (fault_hit(AX_FAULT_WRITE)) {
        errno = ENOSPC;
        return -1;
    }
    for (int tries = 0; tries < 100; tries++) {
        snprintf(base, 32, "tmp-%016llx", (unsigned long long)random64(j));
        char name[64];
        snprintf(name, sizeof name, "%s%s", base, suffix);
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | CACHE_OPEN_FLAGS, 0600);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0) return -1;
        /* O_EXCL made it, so it is a new regular file of ours; checked
         * all the same, as every file opened here is (one fstat) */
        struct stat st;
        if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
            close(fd);
            unlinkat(dfd, name, 0);
            errno = EPERM;
            return -1;
        }
        return fd;
    }
    errno = EEXIST;
    return -1;
}

bool jit_disk_write_all(int fd, const void *p, size_t n)
{
    if (fault_hit(AX_FAULT_WRITE)) {
        errno = ENOSPC;
        return false;
    }
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        c += w;
        n -= (size_t)w;
    }
    return true;
}

/* Reads an open regular file of the given size; NULL if it is not exactly
 * that long (it changed under us) or memory is lacking. */
uint8_t *jit_disk_read_exact(int fd, size_t size)
{
    uint8_t *b = ax__malloc(size + 1);
    if (!b) {
        errno = ENOMEM;
        return NULL;
    }
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd, b + got, size + 1 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
        if (got > size) break;
    }
    if (got != size) {
        free(b);
        errno = ESTALE;
        return NULL;
    }
    return b;
}

void jit_disk_unlink_name(int dfd, const char *base, const char *suffix)
{
    char name[64];
    snprintf(name, sizeof name, "%s%s", base, suffix);
    unlinkat(dfd, name, 0);
}

/* dlopen of dir/name; NULL with the loader's message in err. */
void *jit_disk_load_path(const char *dir, const char *name, char *err, size_t n)
{
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
        jit_set_err(err, n, "the path %s/%s is too long", dir, name);
        return NULL;
    }
    dlerror();
    void *h = fault_hit(AX_FAULT_DLOPEN) ? NULL : dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        if (!e) e = "dlopen failed (fault injected by a test)";
        jit_set_err(err, n, "could not load the compiled code: %s", e ? e : "unknown error");
    }
    return h;
}

/* ------------------------------------------------------------ cache dir */

/* mkdir -p, new directories private. */
static void mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n >= sizeof buf) return;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i < n; i++)
        if (buf[i] == '/') {
            buf[i] = 0;
            mkdir(buf, 0700);
            buf[i] = '/';
        }
    mkdir(buf, 0700);
}

char *jit_default_dir(void)
{
    /* XDG base directories: relative values are invalid and ignored. */
    const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME"), *tail;
    if (x && x[0] == '/') tail = "/axle";
    else if (h && h[0] == '/') { x = h; tail = "/.cache/axle"; }
    else return NULL;
    size_t n = strlen(x) + strlen(tail) + 1;
    char *s = ax__malloc(n);
    if (s) snprintf(s, n, "%s%s", x, tail);
    return s;
}

/* Temporary files (tmp-*: sources, objects, parts, loaded copies) are
 * removed by the process that made them, but a process killed mid-compile
 * leaves its own behind.  Those older than any compile can take (twice
 * the compiler's time limit, at least an hour; a day without a limit) are
 * removed; young ones may belong to a compile running now.  At most once
 * an hour per directory (the time of the file sweep.stamp), so that a new
 * context costs one stat, not a directory scan. */
static void sweep_stale(Jit *j)
{
    time_t now = time(NULL);
    struct stat st;
    if (!fstatat(j->dirfd, "sweep.stamp", &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode) &&
        st.st_uid == geteuid() && now - st.st_mtime < 3600 && st.st_mtime <= now)
        return;
    /* The stamp is opened like an entry (jit_disk_open_cached): a FIFO under its
     * name once hung the first compile here, in an open for writing.  An
     * odd file there is left alone, and the sweep then runs each time. */
    const char *why;
    int sfd = jit_disk_open_cached(j->dirfd, "sweep.stamp", O_WRONLY | O_CREAT, &why);
    if (sfd >= 0) {
        (void)futimens(sfd, NULL);
        close(sfd);
    } else {
        jit_trace(j, "cannot keep %s/sweep.stamp (%s)", j->dir, why ? why : strerror(errno));
    }
    double age = j->timeout_ms > 0 ? 2 * j->timeout_ms / 1000 : 24 * 3600;
    if (age < 3600) age = 3600;
    int dfd = dup(j->dirfd);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0) close(dfd);
        return;
    }
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "tmp-", 4)) continue;
        if (fstatat(j->dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid() || (double)(now - st.st_mtime) < age)
            continue;
        if (!unlinkat(j->dirfd, e->d_name, 0)) n++;
    }
    closedir(d);
    if (n) jit_trace(j, "removed %d stale temporary files from %s", n, j->dir);
}

/* ------------------------------------------------------------ size
 *
 * The cache is bounded (ax_options.cache_limit): each disk hit sets its
 * entry's modification time to now, so the times order the entries by
 * last use, and after each store the directory is measured and the least
 * recently used entries are removed until it holds three quarters of the
 * limit (so that the next few stores do not each evict).  Several
 * processes may do this at once: an entry removed under another process
 * is a miss there (a fresh compile), never a wrong load, since every load
 * verifies the bytes it reads, and a module already loaded stays mapped. */

/* An entry: <64 hex digits>.<kind> (compiled modules: .so; blobs). */
static bool entry_name(const char *name)
{
    for (int i = 0; i < 2 * KEY_BYTES; i++)
        if (!isxdigit((unsigned char)name[i])) return false;
    return name[2 * KEY_BYTES] == '.' && name[2 * KEY_BYTES + 1];
}

typedef struct DirEnt {
    char name[96];
    int64_t bytes;
    struct timespec used;
} DirEnt;

static int by_use(const void *a, const void *b)
{
    const DirEnt *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec) return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    if (x->used.tv_nsec != y->used.tv_nsec) return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The entries of the directory dfd (a list to free, *n of them, their
 * bytes in *total); NULL with *n = -1 when it cannot be read or memory
 * is lacking. */
static DirEnt *list_entries(int dfd, int64_t *n, int64_t *total)
{
    *n = -1;
    *total = 0;
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return NULL;
    }
    rewinddir(d);
    DirEnt *v = NULL;
    int64_t len = 0, cap = 0;
    bool ok = true;
    for (struct dirent *e; ok && (e = readdir(d));) {
        struct stat st;
        if (!entry_name(e->d_name) || strlen(e->d_name) >= sizeof v->name ||
            fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue;
        if (len == cap) {
            int64_t c = cap ? 2 * cap : 64;
            DirEnt *w = ax__realloc(v, sizeof *w * (size_t)c);
            if (!w) {
                ok = false;
                break;
            }
            v = w;
            cap = c;
        }
        DirEnt *x = &v[len++];
        memcpy(x->name, e->d_name, strlen(e->d_name) + 1);   /* shorter than name: tested above */
        x->bytes = (int64_t)st.st_size;
        x->used = st.st_mtim;
        *total += x->bytes;
    }
    closedir(d);
    if (!ok) {
        free(v);
        errno = ENOMEM;
        return NULL;
    }
    *n = len;
    return v ? v : ax__calloc(1, sizeof *v);
}

/* Marks an entry used now (the eviction order): through the descriptor
 * it was verified by, not its name, which could name something else by
 * now. */
static void touch_entry(Jit *j, int fd)
{
    if (j->size_limit > 0) (void)futimens(fd, NULL);
}

/* After a store: removes the least recently used entries while the
 * directory holds more than the limit. */
static void evict(Jit *j)
{
    if (j->size_limit <= 0 || j->dirfd < 0) return;
    int64_t n, total;
    DirEnt *v = list_entries(j->dirfd, &n, &total);
    if (!v) return;
    if (total > j->size_limit) {
        qsort(v, (size_t)n, sizeof *v, by_use);
        int64_t goal = j->size_limit / 4 * 3, removed = 0, k = 0;
        /* the newest entry (just stored) stays, whatever its size */
        for (; k < n - 1 && total > goal; k++)
            if (!unlinkat(j->dirfd, v[k].name, 0) || errno == ENOENT) {
                total -= v[k].bytes;
                removed++;
            }
        jit_trace(j, "evicted %lld least recently used entries; %lld bytes left (limit %lld)", (long long)removed,
                  (long long)total, (long long)j->size_limit);
    }
    free(v);
}

int jit_dir_stats(const char *dir, JitDirStats *st)
{
    st->entries = st->bytes = 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (dfd < 0) return -1;
    int64_t n, total;
    DirEnt *v = list_entries(dfd, &n, &total);
    int e = errno;
    close(dfd);
    if (!v) {
        errno = e;
        return -1;
    }
    free(v);
    st->entries = n;
    st->bytes = total;
    return 0;
}

int jit_dir_clear(const char *dir, JitDirStats *removed)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (dfd < 0) return -1;
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int e = errno;
        if (fd >= 0) close(fd);
        close(dfd);
        errno = e;
        return -1;
    }
    time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d));) {
        const char *nm = e->d_name;
        struct stat st;
        if (fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue;
        size_t l = strlen(nm);
        bool entry = entry_name(nm);
        bool id = !strncmp(nm, "cc-", 3) && l > 3 && !strcmp(nm + l - 3, ".id");
        /* a young temporary file may be a compile running now elsewhere */
        bool stale_tmp = !strncmp(nm, "tmp-", 4) && now - st.st_mtime > 3600;
        if (!(entry || id || stale_tmp || !strcmp(nm, "sweep.stamp"))) continue;
        if (unlinkat(dfd, nm, 0) == 0 && entry && removed) {
            removed->entries++;
            removed->bytes += (int64_t)st.st_size;
        }
    }
    closedir(d);
    close(dfd);
    return 0;
}

void jit_disk_ensure_dir(Jit *j)
{
    if (j->dir_done) return;
    j->dir_done = true;
    if (j->no_disk_cache) return;
    char *path = j->cache_dir_opt ? ax__strdup(j->cache_dir_opt) : jit_default_dir();
    if (!path) {
        jit_trace(j, "no cache directory ($HOME unset); compiling without the disk cache");
        return;
    }
    mkdir_p(path);
    /* O_DIRECTORY: anything else under the name is refused before it is
     * opened (a FIFO there does not block) */
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    const char *why = NULL;
    if (fd < 0) why = strerror(errno);
    else if (fstat(fd, &st)) why = strerror(errno);
    else if (!S_ISDIR(st.st_mode)) why = "not a directory";
    else if (st.st_uid != geteuid()) why = "owned by another user";
    else if (st.st_mode & (S_IWGRP | S_IWOTH)) why = "writable by group or others";
    else if ((st.st_mode & S_IRWXU) != S_IRWXU) why = "not readable, writable and searchable by us";
    char *real = why ? NULL : realpath(path, NULL);
    if (!why && !real) why = strerror(errno);
    if (why) {
        jit_trace(j, "refusing directory %s (%s); compiling without the disk cache", path, why);
        if (fd >= 0) close(fd);
        free(path);
        return;
    }
    free(path);
    j->dirfd = fd;
    j->dir = real;
    sweep_stale(j);
}

const char *jit_cache_dir(Jit *j)
{
    if (!j) return NULL;
    jit_disk_ensure_dir(j);
    return j->dir;
}

/* ------------------------------------------------------------ entries */

static void make_trailer(uint8_t t[TRAILER_BYTES], const uint8_t key[KEY_BYTES],
                         const uint8_t *obj, size_t n)
{
    memcpy(t, key, 32);
    jit_sha256(obj, n, t + 32);
    for (int i = 0; i < 8; i++) t[64 + i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(t + 72, TRAILER_MAGIC, 16);
}

/* NULL if b[0..n) is a good entry for key, else what is wrong. */
static const char *check_entry(const uint8_t *b, size_t n, const uint8_t key[KEY_BYTES])
{
    if (n <= TRAILER_BYTES) return "too short";
    const uint8_t *t = b + n - TRAILER_BYTES;
    if (memcmp(t + 72, TRAILER_MAGIC, 16)) return "no trailer";
    uint64_t len = 0;
    for (int i = 0; i < 8; i++) len |= (uint64_t)t[64 + i] << (8 * i);
    if (len != n - TRAILER_BYTES) return "wrong length";
    if (memcmp(t, key, 32)) return "another key";
    uint8_t h[32];
    jit_sha256(b, (size_t)len, h);
    if (memcmp(h, t + 32, 32)) return "content hash mismatch";
    return NULL;
}

/* NULL if st is a regular file of ours that no one else may write (and
 * not absurdly large), else what is wrong. */
const char *jit_disk_not_ours(const struct stat *st)
{
    if (!S_ISREG(st->st_mode)) return "not a regular file";
    if (st->st_uid != geteuid()) return "owned by another user";
    if (st->st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others";
    if (st->st_size > MAX_ENTRY) return "too large";
    return NULL;
}

/* Loads the verified entry hex.so.  NULL with *why unset: no entry; NULL
 * with *why set: a bad entry (the caller deletes it), unless *local says
 * the entry was good and only loading our copy of it failed (a full disk,
 * no memory: the entry stays for the next time). */
static void *load_entry(Jit *j, const char *hex, const uint8_t key[KEY_BYTES], const char **why,
                        bool *local, char *msg, size_t msgsize)
{
    *local = false;
    char name[80];
    snprintf(name, sizeof name, "%s.so", hex);
    int fd = jit_disk_open_cached(j->dirfd, name, O_RDONLY, why);
    if (fd < 0) return NULL;
    struct stat st;
    uint8_t *b = NULL;
    if (fstat(fd, &st)) *why = strerror(errno);
    else if ((*why = jit_disk_not_ours(&st))) {}
    else if (!(b = jit_disk_read_exact(fd, (size_t)st.st_size))) {
        *local = errno == ENOMEM;
        *why = *local ? "out of memory" : "changed while read";
    } else *why = check_entry(b, (size_t)st.st_size, key);
    if (!*why) touch_entry(j, fd);
    close(fd);
    if (*why) {
        free(b);
        return NULL;
    }
    /* Load a private copy of the bytes just verified (see the top). */
    size_t n = (size_t)st.st_size - TRAILER_BYTES;
    char base[32];
    void *h = NULL;
    int cfd = jit_disk_create_unique(j, j->dirfd, ".load", base);
    *local = true;
    if (cfd < 0) {
        snprintf(msg, msgsize, "cannot create a file in %s: %s", j->dir, strerror(errno));
        *why = msg;
    } else {
        bool ok = jit_disk_write_all(cfd, b, n);
        close(cfd);
        char file[64];
        snprintf(file, sizeof file, "%s.load", base);
        if (!ok) {
            snprintf(msg, msgsize, "cannot write in %s", j->dir);
            *why = msg;
        } else if (!(h = jit_disk_load_path(j->dir, file, msg, msgsize))) {
            *why = msg;
        }
        unlinkat(j->dirfd, file, 0);
    }
    free(b);
    return h;
}

/* Stores the compiler's output base.so as the entry hex.so and loads it.
 * NULL (with a trace) if that fails: the caller loads base.so instead. */
void *jit_disk_store_entry(Jit *j, const char *base, const char *hex, const uint8_t key[KEY_BYTES])
{
    char name[64];
    snprintf(name, sizeof name, "%s.so", base);
    const char *why;
    int fd = jit_disk_open_cached(j->dirfd, name, O_RDONLY, &why);
    struct stat st;
    uint8_t *b = NULL;
    if (fd >= 0 && !fstat(fd, &st) && st.st_size < MAX_ENTRY) b = jit_disk_read_exact(fd, (size_t)st.st_size);
    if (fd >= 0) close(fd);
    if (!b) {
        jit_trace(j, "could not read the compiler's output %s; not stored", name);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    uint8_t t[TRAILER_BYTES];
    make_trailer(t, key, b, n);
    char pbase[32], part[64], entry[80];
    int pfd = jit_disk_create_unique(j, j->dirfd, ".part", pbase);
    snprintf(part, sizeof part, "%s.part", pbase);
    snprintf(entry, sizeof entry, "%s.so", hex);
    bool ok = pfd >= 0 && jit_disk_write_all(pfd, b, n) && jit_disk_write_all(pfd, t, sizeof t);
    if (pfd >= 0) close(pfd);
    free(b);
    void *h = NULL;
    char msg[256];
    if (!ok) {
        jit_trace(j, "could not write in %s; not stored", j->dir);
    } else if (!(h = jit_disk_load_path(j->dir, part, msg, sizeof msg))) {
        jit_trace(j, "%s", msg);   /* the caller's load of base.so reports it */
    } else if (renameat(j->dirfd, part, j->dirfd, entry)) {
        /* Loaded but not published: still usable now. */
        jit_trace(j, "could not rename %s to %s: %s; not stored", part, entry, strerror(errno));
    } else {
        evict(j);
        return h;
    }
    if (pfd >= 0) unlinkat(j->dirfd, part, 0);
    return h;
}


/* The disk cache's entry for the key, loaded, or NULL (a corrupt entry is
 * removed on the way). */
void *jit_disk_find(Jit *j, const char *hex, const uint8_t key[KEY_BYTES])
{
    if (j->dirfd < 0) return NULL;
    const char *why;
    char msg[512], name[80];
    bool local;
    snprintf(name, sizeof name, "%s.so", hex);
    void *h = load_entry(j, hex, key, &why, &local, msg, sizeof msg);
    if (h) {
        jit_trace(j, "hit disk %s", hex);
    } else if (why && local) {
        jit_trace(j, "could not load %s/%s (%s)", j->dir, name, why);
    } else if (why) {
        jit_trace(j, "rejected corrupt file %s/%s (%s)", j->dir, name, why);
        unlinkat(j->dirfd, name, 0);
    }
    return h;
}

void *jit_disk_image(Jit *j, const char *hex, const uint8_t key[KEY_BYTES], size_t *n)
{
    if (j->dirfd < 0) return NULL;
    char name[80];
    snprintf(name, sizeof name, "%s.so", hex);
    const char *why;
    int fd = jit_disk_open_cached(j->dirfd, name, O_RDONLY, &why);
    if (fd < 0) return NULL;
    struct stat st;
    uint8_t *b = NULL;
    if (!fstat(fd, &st) && !jit_disk_not_ours(&st)) b = jit_disk_read_exact(fd, (size_t)st.st_size);
    close(fd);
    if (!b || check_entry(b, (size_t)st.st_size, key)) {
        free(b);
        return NULL;
    }
    *n = (size_t)st.st_size - TRAILER_BYTES;
    return b;
}

/* The bytes go to a memory file (memfd_create), loaded by its
 * /proc/self/fd path.  The loader knows objects by path name, so the
 * descriptor stays open while the object is loaded: no other object can
 * be loaded under that name meanwhile (see the top).  Where there are no
 * memory files or no /proc, a private temporary file of a fresh name is
 * loaded and removed. */
int jit_disk_load_image(const void *b, size_t n, void **h, int *fdp, char *err, size_t errsize)
{
    *h = NULL;
    *fdp = -1;
    char path[PATH_MAX];
    int fd = fault_hit(AX_FAULT_DLOPEN) ? -1 : memfd_create("axle-module", MFD_CLOEXEC);
    if (fd >= 0) {
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        if (jit_disk_write_all(fd, b, n) && access(path, R_OK) == 0) {
            dlerror();
            if ((*h = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
                *fdp = fd;
                return 0;
            }
            const char *e = dlerror();
            jit_set_err(err, errsize, "could not load the compiled code: %s", e ? e : "unknown error");
            close(fd);
            return -1;
        }
        close(fd);
    }
    const char *t = getenv("TMPDIR");
    if (!t || t[0] != '/') t = "/tmp";
    if ((size_t)snprintf(path, sizeof path, "%s/axle-module-XXXXXX", t) >= sizeof path) {
        jit_set_err(err, errsize, "the directory name %s is too long", t);
        return -1;
    }
    fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) {
        jit_set_err(err, errsize, "cannot create a file in %s: %s", t, strerror(errno));
        return -1;
    }
    bool ok = jit_disk_write_all(fd, b, n);
    close(fd);
    if (!ok) {
        unlink(path);
        jit_set_err(err, errsize, "cannot write in %s", t);
        return -1;
    }
    char *slash = strrchr(path, '/');
    *slash = 0;
    *h = jit_disk_load_path(path, slash + 1, err, errsize);
    *slash = '/';
    unlink(path);
    return *h ? 0 : -1;
}

/* ------------------------------------------------------------ blobs
 *
 * Other compiled forms (a GPU backend's binaries) in the same directory,
 * under the same rules: <key hex>.<kind>, the payload then the trailer
 * (key, content hash, length), written under a temporary name and renamed
 * into place, checked before use. */

void *jit_blob_load(Jit *j, const char *kind, const uint8_t key[32], size_t *n)
{
    if (!j) return NULL;
    jit_disk_ensure_dir(j);
    if (j->dirfd < 0) return NULL;
    char hex[2 * KEY_BYTES + 1], name[96];
    jit_to_hex(key, KEY_BYTES, hex);
    snprintf(name, sizeof name, "%s.%s", hex, kind);
    const char *why = NULL;
    int fd = jit_disk_open_cached(j->dirfd, name, O_RDONLY, &why);
    struct stat st;
    uint8_t *b = NULL;
    if (fd < 0) {}
    else if (fstat(fd, &st)) why = strerror(errno);
    else if ((why = jit_disk_not_ours(&st))) {}
    else if (!(b = jit_disk_read_exact(fd, (size_t)st.st_size))) why = "changed while read";
    else why = check_entry(b, (size_t)st.st_size, key);
    if (fd >= 0 && !why) touch_entry(j, fd);
    if (fd >= 0) close(fd);
    if (fd < 0 && !why) return NULL;   /* none */
    if (why) {
        jit_trace(j, "dropping %s: %s", name, why);
        unlinkat(j->dirfd, name, 0);
        free(b);
        return NULL;
    }
    jit_trace(j, "disk hit %s", name);
    *n = (size_t)st.st_size - TRAILER_BYTES;
    return b;
}

void jit_blob_store(Jit *j, const char *kind, const uint8_t key[32], const void *data, size_t n)
{
    if (!j || !data || !n) return;
    jit_disk_ensure_dir(j);
    if (j->dirfd < 0) return;
    char hex[2 * KEY_BYTES + 1], name[96], base[32], part[64];
    jit_to_hex(key, KEY_BYTES, hex);
    snprintf(name, sizeof name, "%s.%s", hex, kind);
    uint8_t t[TRAILER_BYTES];
    make_trailer(t, key, data, n);
    int fd = jit_disk_create_unique(j, j->dirfd, ".part", base);
    snprintf(part, sizeof part, "%s.part", base);
    bool ok = fd >= 0 && jit_disk_write_all(fd, data, n) && jit_disk_write_all(fd, t, sizeof t);
    if (fd >= 0) close(fd);
    if (ok && renameat(j->dirfd, part, j->dirfd, name) == 0) {
        jit_trace(j, "stored %s", name);
        evict(j);
        return;
    }
    jit_trace(j, "could not store %s", name);
    if (fd >= 0) unlinkat(j->dirfd, part, 0);
}

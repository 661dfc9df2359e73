/*
 * Run-time compilation: generated C -> system C compiler -> shared object
 * -> dlopen, with two caches (docs/ARCHITECTURE.md, "The pipeline").
 *
 * Key.  SHA-256 over, each length-prefixed: a format tag, the compiler
 * command and identity (first line of `cc --version`), the flags, the
 * libraries, axle's version, the host CPU's feature list when the flags
 * ask for -march=native (a cache directory in a shared home must not hand
 * AVX-512 code to an older machine), and finally the source.  Everything
 * before the source is fixed per Jit, so it is hashed once and the saved
 * hash state is copied for each load: a memory hit costs one pass over
 * the source.
 *
 * The files (jit_int.h lists them): this one is the public face, a Jit,
 * the memory cache and the loads; the compile, the compiler's identity,
 * the disk cache, child processes and SHA-256 each have their own.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "jit_int.h"
#include "axle.h"
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ helpers */

static char *dup_or(const char *s, const char *dflt)
{
    return ax__strdup(s ? s : dflt);
}

/* ------------------------------------------------------------ memory cache */


static size_t bucket_of(const uint8_t *key, size_t nb)
{
    uint64_t x;
    memcpy(&x, key, sizeof x);   /* a SHA-256 prefix is uniform already */
    return (size_t)(x & (nb - 1));
}

#ifndef AX_RUNTIME_ONLY
/* A cheap hash of a source: a memory hit is looked up by it and the
 * source compared, so that a program compiled again in the same context
 * does not hash its kernels' text with SHA-256, which only the disk cache
 * needs (test_jit prints a memory hit's time: "jit: memory hit"). */
static uint64_t fast_hash(const char *flags, const char *s, size_t n)
{
    return hash_combine(hash_bytes(s, n), hash_bytes(flags, strlen(flags)));
}

static bool same_source(const JitModule *m, const char *flags, const char *src, size_t len)
{
    size_t fl = strlen(flags);
    return m->srclen == fl + 1 + len && !memcmp(m->src, flags, fl + 1) && !memcmp(m->src + fl + 1, src, len);
}

static JitModule *src_find(Jit *j, uint64_t fh, const char *flags, const char *src, size_t len)
{
    int64_t *v = hmap_find(&j->by_source, fh);
    for (JitModule *m = v ? (JitModule *)(intptr_t)*v : NULL; m; m = m->snext)
        if (same_source(m, flags, src, len)) return m;
    return NULL;
}

/* Indexes m by its source and flags (skipped when memory is lacking: a
 * later load then finds it by its key). */
static void src_add(Jit *j, JitModule *m, uint64_t fh, const char *flags, const char *src, size_t len)
{
    size_t fl = strlen(flags);
    if (m->src || !(m->src = ax__malloc(fl + 1 + len))) return;
    int64_t *v = hmap_insert(&j->by_source, fh, 0, NULL);
    if (!v) {
        free(m->src);
        m->src = NULL;
        return;
    }
    memcpy(m->src, flags, fl + 1);
    memcpy(m->src + fl + 1, src, len);
    m->srclen = fl + 1 + len;
    m->fh = fh;
    m->snext = (JitModule *)(intptr_t)*v;
    *v = (int64_t)(intptr_t)m;
}

#endif

static JitModule *mem_find(Jit *j, const uint8_t key[KEY_BYTES])
{
    if (!j->nbuckets) return NULL;
    for (JitModule *m = j->buckets[bucket_of(key, j->nbuckets)]; m; m = m->next)
        if (!memcmp(m->key, key, KEY_BYTES)) return m;
    return NULL;
}

static bool mem_add(Jit *j, JitModule *m)
{
    if (j->nmodules >= j->nbuckets) {
        size_t nb = j->nbuckets ? 2 * j->nbuckets : 16;
        JitModule **b = ax__calloc(nb, sizeof *b);
        if (!b && !j->nbuckets) return false;
        if (b) {
            for (size_t i = 0; i < j->nbuckets; i++)
                for (JitModule *x = j->buckets[i], *nx; x; x = nx) {
                    nx = x->next;
                    size_t k = bucket_of(x->key, nb);
                    x->next = b[k];
                    b[k] = x;
                }
            free(j->buckets);
            j->buckets = b;
            j->nbuckets = nb;
        }
    }
    size_t k = bucket_of(m->key, j->nbuckets);
    m->next = j->buckets[k];
    j->buckets[k] = m;
    j->nmodules++;
    return true;
}

/* ------------------------------------------------------------ API */

Jit *jit_new(const JitOptions *o)
{
    JitOptions none = {0};
    if (!o) o = &none;
    Jit *j = ax__calloc(1, sizeof *j);
    if (!j) return NULL;
    hmap_init(&j->by_source);
    j->cc = dup_or(o->cc && o->cc[0] ? o->cc : NULL, "cc");
    j->cflags = dup_or(o->cflags, JIT_DEFAULT_CFLAGS);
    j->libs = dup_or(o->libs, JIT_DEFAULT_LIBS);
    j->version = dup_or(o->version, "");
    j->cache_dir_opt = o->cache_dir ? ax__strdup(o->cache_dir) : NULL;
    j->no_disk_cache = o->no_disk_cache;
    j->timeout_ms = o->timeout_s > 0 ? o->timeout_s * 1000 : 0;
    j->size_limit = o->size_limit;
    j->trace = o->trace;
    j->lean_link = o->lean_link;
    j->dirfd = -1;
    j->seed = (uint64_t)(uintptr_t)j;
    if (!j->cc || !j->cflags || !j->libs || !j->version || (o->cache_dir && !j->cache_dir_opt)) {
        jit_free(j);
        return NULL;
    }
    return j;
}

void jit_free(Jit *j)
{
    if (!j) return;
    for (size_t i = 0; i < j->nbuckets; i++)
        for (JitModule *m = j->buckets[i], *nx; m; m = nx) {
            nx = m->next;
            if (m->handle) dlclose(m->handle);
            if (m->fd >= 0) close(m->fd);
            free(m->src);
            free(m);
        }
    free(j->buckets);
    hmap_free(&j->by_source);
    if (j->dirfd >= 0) close(j->dirfd);
    free(j->dir);
    free(j->compiler_id);
    free(j->cc);
    free(j->cflags);
    free(j->libs);
    free(j->version);
    free(j->cache_dir_opt);
    free(j);
}

#ifndef AX_RUNTIME_ONLY
/* The key of a source: the fixed fields (jit_ident_ensure), its length and
 * its bytes. */
static void source_key(const Jit *j, const char *flags, const char *source, size_t len, uint8_t key[KEY_BYTES],
                       char hex[2 * KEY_BYTES + 1])
{
    JitSha256 s = j->prefix;
    if (flags[0]) jit_ident_put_str(&s, flags);   /* (none: the key of before per-unit flags) */
    uint8_t lenb[8];
    for (int i = 0; i < 8; i++) lenb[i] = (uint8_t)((uint64_t)len >> (8 * i));
    jit_sha256_update(&s, lenb, 8);
    jit_sha256_update(&s, source, len);
    jit_sha256_final(&s, key);
    jit_to_hex(key, KEY_BYTES, hex);
}

#endif

/* A loaded object (or none: a linked module) made a module of the memory
 * cache; NULL (the object closed) when memory is lacking. */
static JitModule *adopt(Jit *j, const uint8_t key[KEY_BYTES], const char *hex, void *h, char *err, size_t errsize)
{
    JitModule *m = ax__calloc(1, sizeof *m);
    if (m) {
        memcpy(m->key, key, KEY_BYTES);
        memcpy(m->hex, hex, sizeof m->hex);
        m->handle = h;
        m->fd = -1;
    }
    if (!m || !mem_add(j, m)) {
        free(m);
        if (h) dlclose(h);
        jit_set_err(err, errsize, "out of memory");
        return NULL;
    }
    return m;
}

#ifndef AX_RUNTIME_ONLY
JitModule *jit_load(Jit *j, const char *source, size_t len, char *err, size_t errsize,
                    bool *from_cache, double *compile_ms)
{
    JitUnit u = {.source = source, .len = len};
    int r = jit_load_many(j, &u, 1, 1, NULL, NULL, err, errsize);
    if (from_cache) *from_cache = u.from_cache;
    if (compile_ms) *compile_ms = u.compile_ms;
    return r ? NULL : u.module;
}

/* Every unit from the memory cache, else the disk cache; the rest
 * compiled by up to `jobs` compiler processes at once (docs/ARCHITECTURE.md, "The pipeline":
 * the kernels of a program are units of their own, so a cold program's
 * compile is spread over the cores and each kernel is cached apart).
 * On the first failure the compilers still running are killed. */
static int load_many(Jit *j, JitUnit *u, int n, int jobs, bool compile, JitProgress progress, void *progress_arg,
                     char *err, size_t errsize)
{
    enum { MAX_JOBS = 64 };
    jit_set_err(err, errsize, "%s", "");
    if (!j || n < 0 || (n > 0 && !u)) {
        jit_set_err(err, errsize, "jit_load: no source");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        u[i].module = NULL;
        u[i].from_cache = false;
        u[i].compile_ms = 0;
        if (!u[i].source && u[i].len) {
            jit_set_err(err, errsize, "jit_load: no source");
            return -1;
        }
    }
    if (n == 0) return 0;
    if (!jit_ident_ensure(j, err, errsize)) return -1;
    if (jobs < 1) jobs = 1;
    if (jobs > MAX_JOBS) jobs = MAX_JOBS;

    typedef struct Want {
        uint8_t key[KEY_BYTES];
        char hex[2 * KEY_BYTES + 1];
        uint64_t fh;                    /* fast_hash of the source */
        int same;                       /* an earlier unit with this source, or -1 */
    } Want;
    Want *w = ax__calloc((size_t)n, sizeof *w);
    int *todo = ax__calloc((size_t)n, sizeof *todo);
    Job *slots = NULL;
    Job **act = NULL, **idle = NULL;
    Child **cs = NULL;
    int ntodo = 0, failed = 0;
    if (!w || !todo) {
        jit_set_err(err, errsize, "out of memory");
        failed = 1;
        goto out;
    }
    bool dir_checked = false;
    for (int i = 0; i < n && !failed; i++) {
        const char *src = u[i].source ? u[i].source : "", *fl = u[i].cflags ? u[i].cflags : "";
        w[i].same = -1;
        w[i].fh = fast_hash(fl, src, u[i].len);
        JitModule *m = src_find(j, w[i].fh, fl, src, u[i].len);
        if (m) {
            jit_trace(j, "hit memory %s", m->hex);
            u[i].module = m;
            u[i].from_cache = true;
            continue;
        }
        source_key(j, fl, src, u[i].len, w[i].key, w[i].hex);
        if ((m = mem_find(j, w[i].key))) {
            jit_trace(j, "hit memory %s", w[i].hex);
            src_add(j, m, w[i].fh, fl, src, u[i].len);
            u[i].module = m;
            u[i].from_cache = true;
            continue;
        }
        for (int k = 0; k < ntodo && w[i].same < 0; k++)
            if (!memcmp(w[todo[k]].key, w[i].key, KEY_BYTES)) w[i].same = todo[k];
        if (w[i].same >= 0) continue;
        if (!dir_checked) {
            jit_disk_ensure_dir(j);
            dir_checked = true;
        }
        void *h = jit_disk_find(j, w[i].hex, w[i].key);
        if (h) {
            if (!(u[i].module = adopt(j, w[i].key, w[i].hex, h, err, errsize))) failed = 1;
            else src_add(j, u[i].module, w[i].fh, fl, src, u[i].len);
            u[i].from_cache = true;
            continue;
        }
        todo[ntodo++] = i;
    }
    if (failed || ntodo == 0 || !compile) goto out;

    if (jobs > ntodo) jobs = ntodo;
    slots = ax__calloc((size_t)jobs, sizeof *slots);
    act = ax__calloc((size_t)jobs, sizeof *act);
    idle = ax__calloc((size_t)jobs, sizeof *idle);
    cs = ax__calloc((size_t)jobs, sizeof *cs);
    if (!slots || !act || !idle || !cs) {
        jit_set_err(err, errsize, "out of memory");
        failed = 1;
        goto out;
    }
    for (int k = 0; k < jobs; k++) idle[k] = &slots[jobs - 1 - k];
    int nidle = jobs, active = 0, next = 0, done = 0;
    if (progress) progress(progress_arg, 0, ntodo);
    while (active > 0 || (next < ntodo && !failed)) {
        while (!failed && next < ntodo && nidle > 0) {
            Job *b = idle[--nidle];
            b->unit = todo[next++];
            if (!jit_compile_start(j, b, u[b->unit].source, u[b->unit].len, u[b->unit].cflags, err, errsize)) {
                idle[nidle++] = b;
                failed = 1;
                break;
            }
            act[active++] = b;
        }
        if (failed) {
            for (int a = 0; a < active; a++) jit_compile_abandon(act[a]);
            active = 0;
            break;
        }
        if (active == 0) break;
        for (int a = 0; a < active; a++) cs[a] = &act[a]->ch;
        jit_proc_children_wait(cs, active);
        for (int a = 0; a < active;) {
            Job *b = act[a];
            if (!b->ch.gone) {
                a++;
                continue;
            }
            act[a] = act[--active];
            idle[nidle++] = b;
            if (failed) {
                jit_compile_abandon(b);
                continue;
            }
            double ms = 0;
            int i = b->unit;
            void *h = jit_compile_finish(j, b, w[i].hex, w[i].key, err, errsize, &ms);
            if (h && (u[i].module = adopt(j, w[i].key, w[i].hex, h, err, errsize))) {
                src_add(j, u[i].module, w[i].fh, u[i].cflags ? u[i].cflags : "", u[i].source ? u[i].source : "",
                        u[i].len);
                u[i].compile_ms = ms;
                jit_trace(j, "miss %s, compiled in %.1f ms", w[i].hex, ms);
                done++;
                if (progress) progress(progress_arg, done, ntodo);
            } else {
                failed = 1;
            }
        }
        if (failed) {
            /* the first failure's message stands; the others are stopped */
            for (int a = 0; a < active; a++) {
                jit_compile_abandon(act[a]);
                idle[nidle++] = act[a];
            }
            active = 0;
        }
    }
out:
    if (!failed)
        for (int i = 0; i < n; i++)
            if (w[i].same >= 0) u[i].module = u[w[i].same].module;
    free(w);
    free(todo);
    free(slots);
    free(act);
    free(idle);
    free(cs);
    return failed ? -1 : 0;
}

int jit_load_many(Jit *j, JitUnit *u, int n, int jobs, JitProgress progress, void *progress_arg, char *err,
                  size_t errsize)
{
    return load_many(j, u, n, jobs, true, progress, progress_arg, err, errsize);
}

int jit_find_many(Jit *j, JitUnit *u, int n, char *err, size_t errsize)
{
    return load_many(j, u, n, 1, false, NULL, NULL, err, errsize);
}

JitModule *jit_module_by_key(Jit *j, const uint8_t key[KEY_BYTES])
{
    if (!j || !jit_ident_ensure(j, NULL, 0)) return NULL;
    JitModule *m = mem_find(j, key);
    if (m) return m;
    jit_disk_ensure_dir(j);
    char hex[2 * KEY_BYTES + 1];
    jit_to_hex(key, KEY_BYTES, hex);
    void *h = jit_disk_find(j, hex, key);
    return h ? adopt(j, key, hex, h, NULL, 0) : NULL;
}

#endif

void jit_module_key_bytes(const JitModule *m, uint8_t key[KEY_BYTES]) { memcpy(key, m->key, KEY_BYTES); }

#ifndef AX_RUNTIME_ONLY
int jit_key_of(Jit *j, const char *tag, const void *data, size_t n, uint8_t key[KEY_BYTES], char *err,
               size_t errsize)
{
    if (!j || !jit_ident_ensure(j, err, errsize)) return -1;
    JitSha256 s = j->prefix;
    jit_ident_put_str(&s, tag);
    jit_ident_put_field(&s, data, n);
    jit_sha256_final(&s, key);
    return 0;
}

#endif

void *jit_module_image(Jit *j, const JitModule *m, size_t *n)
{
    if (!j || !m) return NULL;
    if (m->fd >= 0) {
        /* a module from an image: its memory file holds the image */
        struct stat st;
        uint8_t *b = NULL;
        if (!fstat(m->fd, &st) && st.st_size > 0 && lseek(m->fd, 0, SEEK_SET) == 0)
            b = jit_disk_read_exact(m->fd, (size_t)st.st_size);
        if (b) *n = (size_t)st.st_size;
        return b;
    }
    jit_disk_ensure_dir(j);
    return jit_disk_image(j, m->hex, m->key, n);
}

/* The key of a module that is no source's (an image, a table): SHA-256
 * of a tag and the bytes that identify it, so it never stands for a
 * source's module. */
static void other_key(const char *tag, const void *b, size_t n, uint8_t key[KEY_BYTES], char hex[2 * KEY_BYTES + 1])
{
    JitSha256 s;
    jit_sha256_init(&s);
    jit_sha256_update(&s, tag, strlen(tag) + 1);
    jit_sha256_update(&s, b, n);
    jit_sha256_final(&s, key);
    jit_to_hex(key, KEY_BYTES, hex);
}

JitModule *jit_module_from_image(Jit *j, const void *b, size_t n, char *err, size_t errsize)
{
    uint8_t key[KEY_BYTES];
    char hex[2 * KEY_BYTES + 1];
    other_key("axle-image-1", b, n, key, hex);
    JitModule *m = mem_find(j, key);
    if (m) return m;
    void *h;
    int fd;
    if (jit_disk_load_image(b, n, &h, &fd, err, errsize)) return NULL;
    if ((m = adopt(j, key, hex, h, err, errsize))) m->fd = fd;
    else if (fd >= 0) close(fd);
    return m;
}

JitModule *jit_module_linked(Jit *j, const struct ax_linked_fn *fns, int n)
{
    /* keyed by the table's address: one module per table in a process */
    uint8_t key[KEY_BYTES];
    char hex[2 * KEY_BYTES + 1];
    const int64_t id[2] = {(int64_t)(intptr_t)fns, n};
    other_key("axle-linked-1", &id, sizeof id, key, hex);
    JitModule *m = mem_find(j, key);
    if (m || !(m = adopt(j, key, hex, NULL, NULL, 0))) return m;
    m->fns = fns;
    m->nfns = n;
    return m;
}

void *jit_sym(JitModule *m, const char *name)
{
    if (!m || !name) return NULL;
    if (!m->handle) {
        for (int i = 0; i < m->nfns; i++)
            if (m->fns[i].name && !strcmp(m->fns[i].name, name)) return (void *)m->fns[i].fn;
        return NULL;
    }
    return dlsym(m->handle, name);
}

const char *jit_module_key(const JitModule *m)
{
    return m ? m->hex : NULL;
}

/*
 * Compiled programs in files (ax_program_save, ax_program_load): what a
 * compile made, read back in another process, with no C compiler
 * installed and no compile.
 *
 * A file is
 *
 *     "axle-program-1\n" | axle's version, NUL-terminated |
 *     body length (8, LE) | body | SHA-256 of everything before it (32)
 *
 * and the body is the backend's name, the mode the program was compiled
 * in (safe, fast or finite maths: they decide what the optimiser may do
 * and how the kernels compute), the program's statistics and depth, the
 * arrays it reads (a parameter's placeholder as its index, element type
 * and rank; an array of ax_use as its type, shape and contents), the
 * optimised program (core/irser.c, its USE nodes reading those arrays by
 * number), then the backend's part (Backend.save; the CPU's is its
 * compiled objects, backend/cpu/stored.c).
 *
 * A file is input from disk and so hostile until checked: its size is
 * bounded by what was read, the version is compared first (so a file of
 * another axle says so), then the length and the content hash before
 * anything else in it is used (no code is ever loaded from a file whose
 * hash does not match); every count, type and size is checked against
 * its range as it is read, the program is verified, and the backend
 * checks its part.  The hash guards against corruption, not against an
 * author: loading a file runs its code, as loading a shared library does.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "driver_int.h"
#include "bytes.h"
#include "driver/driver.h"
#include "backend/cpu/cg.h"
#include "backend/interp/interp.h"
#ifndef AX_RUNTIME_ONLY
#include "backend/gpu/gpu.h"
#endif
#include "runtime/array.h"
#include "runtime/jit.h"
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAGIC "axle-program-1\n"
enum { MAGIC_LEN = sizeof MAGIC - 1, VERSION_MAX = 64, HASH = 32, MAX_ARRAYS = 1 << 20, MAX_TUPLE = 4096 };

/* The modes a program is compiled in, as bits. */
static unsigned mode_bits(const ax_ctx *cx)
{
    return (cx->opt.unsafe ? 1u : 0) | (cx->opt.fast_math ? 2u : 0) | (cx->opt.finite_math ? 4u : 0);
}

static const char *mode_name(unsigned m)
{
    return m & 4 ? (m & 1 ? "unsafe, finite maths" : "safe, finite maths")
           : m & 2 ? (m & 1 ? "unsafe, fast maths" : "safe, fast maths")
                   : (m & 1 ? "unsafe, exact maths" : "safe, exact maths");
}

/* An element type: 0 and a scalar, 1, the count and the components of
 * a tuple, or 2 and the rank of an index. */
static void put_elt(Bytes *w, const Type *t)
{
    if (t->kind == TY_SCALAR) {
        bytes_put8(w, 0);
        bytes_put8(w, (unsigned)t->s);
        return;
    }
    if (t->kind == TY_INDEX) {
        bytes_put8(w, 2);
        bytes_putv(w, t->n);
        return;
    }
    bytes_put8(w, 1);
    bytes_putv(w, t->n);
    for (int i = 0; i < t->n; i++) put_elt(w, t->elts[i]);
}

static const ax_type *get_elt(ax_ctx *cx, Bytes *in, int level)
{
    unsigned k = bytes_get8(in);
    if (in->bad || level > 16) return in->bad = true, NULL;
    if (k == 0) {
        unsigned s = bytes_get8(in);
        return s < AX_NSCALAR ? ax_type_scalar((ax_scalar)s) : (in->bad = true, NULL);
    }
    if (k == 2) {
        int r = (int)bytes_getv(in, 0, AX_MAX_RANK);
        return in->bad ? NULL : ax_type_index(cx, r);
    }
    /* (a tuple has no components, the unit, or at least two: ax_type_tuple
     * would refuse one under its own name) */
    int n = k == 1 ? (int)bytes_getv(in, 0, MAX_TUPLE) : 1;
    if (n == 1) return in->bad = true, NULL;
    const ax_type **e = in->bad ? NULL : ax__calloc((size_t)n + 1, sizeof *e);
    if (!e) return in->bad = true, NULL;
    for (int i = 0; i < n && !in->bad; i++) e[i] = get_elt(cx, in, level + 1);
    const ax_type *t = in->bad ? NULL : ax_type_tuple(cx, n, e);
    free(e);
    if (!t) in->bad = true;
    return t;
}

/* ------------------------------------------------------------ save */

typedef struct SaveJob {
    ax_ctx *cx;
    ProgramParts pp;
    const char *path;
    const char *what;         /* "ax_program_save" or "ax_program_export" */
    const char *name;         /* exported: the program's name, else NULL */
    Bytes file;               /* out: the file's bytes */
    Bytes c;                  /* out, exported: the kernels' C */
    Bytes t;                  /* out, exported: their table */
    unsigned char *ir;
    ax_array **arr;           /* the arrays the program reads, each once */
    int na;
    int rc;
} SaveJob;

static bool write_file(const char *path, const void *b, size_t n, char *err, size_t errsize)
{
    /* written beside its place under a fresh name and renamed into it:
     * a reader sees the old file or the new one, never half of one */
    size_t pl = strlen(path);
    char *tmp = ax__malloc(pl + 40);
    if (!tmp) return snprintf(err, errsize, "out of memory"), false;
    /* (not mkstemp, whose file is private: the file gets the mode any new
     * file of the user's would, 0666 less the umask) */
    int fd = -1;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t rnd = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15u ^ (uint64_t)getpid() ^ (uint64_t)(uintptr_t)tmp;
    for (int k = 0; k < 100 && fd < 0; k++) {
        rnd = rnd * 6364136223846793005u + 1442695040888963407u;
        snprintf(tmp, pl + 40, "%s.tmp-%016llx", path, (unsigned long long)rnd);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0 && errno != EEXIST) break;
    }
    bool ok = fd >= 0;
    const unsigned char *p = b;
    for (size_t at = 0; ok && at < n;) {
        ssize_t r = write(fd, p + at, n - at);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) ok = false;
        else at += (size_t)r;
    }
    int e = errno;
    if (fd >= 0 && close(fd) && ok) ok = false, e = errno;
    if (ok && rename(tmp, path)) ok = false, e = errno;
    if (!ok) {
        snprintf(err, errsize, "cannot write %s: %s", path, strerror(e ? e : EIO));
        if (fd >= 0) unlink(tmp);
    }
    free(tmp);
    return ok;
}

/* The file's bytes into j->file (exported: the backend's C into j->c):
 * 0, or -1 with an error on cx. */
static int build(SaveJob *j)
{
    ax_ctx *cx = j->cx;
    ProgramParts pp = j->pp;
    Bytes *w = &j->file;
    if (j->name ? !pp.be->exportc : !pp.be->save) {
        ctx_error(cx, AX_ERR_BACKEND, "%s: programs compiled for the %s backend cannot be %s", j->what, pp.be->name,
                  j->name ? "exported" : "saved");
        return -1;
    }
    /* the arrays, each once (a program may read one at several places) */
    if (!(j->arr = ax__calloc((size_t)pp.narrays + 1, sizeof *j->arr))) goto nomem;
    for (int i = 0; i < pp.narrays; i++) {
        bool seen = false;
        for (int k = 0; k < j->na && !seen; k++) seen = j->arr[k] == pp.arrays[i];
        if (!seen) j->arr[j->na++] = pp.arrays[i];
    }
    size_t irn = 0;
    if (!(j->ir = ir_save(pp.prog, j->arr, j->na, &irn))) goto nomem;
    const char *version = ax_version();
    bytes_put(w, MAGIC, MAGIC_LEN);
    bytes_put(w, version, strlen(version) + 1);
    size_t lenat = w->len;
    bytes_put(w, (unsigned char[8]){0}, 8);
    size_t body = w->len;
    bytes_put(w, pp.be->name, strlen(pp.be->name) + 1);
    bytes_putv(w, mode_bits(cx));
    bytes_putv(w, pp.stats->nodes);
    bytes_putv(w, pp.stats->lets);
    bytes_putv(w, ir_depth(pp.prog->root, DEPTH_CAP));
    bytes_putv(w, j->na);
    for (int k = 0; k < j->na; k++) {
        ax_array *a = j->arr[k];
        bytes_putv(w, a->param);
        put_elt(w, a->elt);
        bytes_putv(w, a->rank);
        if (a->param) continue;
        for (int d = 0; d < a->rank; d++) bytes_putv(w, a->shape[d]);
        if (array_host(a)) return -1;
        for (int c = 0; c < a->ncomp; c++)
            bytes_put(w, a->buf[c], ax_scalar_size(ty_leaf(a->elt, c)) * (size_t)a->size);
    }
    bytes_putv(w, (int64_t)irn);
    bytes_put(w, j->ir, irn);
    /* the backend's part is read as a whole: its length before it */
    Bytes part = {0};
    if (j->name ? pp.be->exportc(cx, pp.prog, pp.state, j->name, &part, &j->c, &j->t)
                : pp.be->save(cx, pp.prog, pp.state, &part)) {
        free(part.b);
        return -1;
    }
    bytes_putv(w, (int64_t)part.len);
    bytes_put(w, part.b, part.len);
    bool lost = part.bad;
    free(part.b);
    if (lost) goto nomem;
    uint64_t blen = w->len - body;
    for (int i = 0; i < 8; i++) w->b[lenat + i] = (unsigned char)(blen >> (8 * i));
    uint8_t h[HASH];
    if (w->bad) goto nomem;
    jit_sha256(w->b, w->len, h);
    bytes_put(w, h, HASH);
    if (w->bad) goto nomem;
    return 0;
nomem:
    ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", j->what);
    return -1;
}

static void save_job(void *arg)
{
    SaveJob *j = arg;
    char err[512];
    if (build(j)) return;
    if (!write_file(j->path, j->file.b, j->file.len, err, sizeof err)) {
        ctx_error(j->cx, AX_ERR_ARG, "ax_program_save: %s", err);
        return;
    }
    j->rc = 0;
}

static void job_free(SaveJob *j)
{
    free(j->file.b);
    free(j->c.b);
    free(j->t.b);
    free(j->ir);
    free(j->arr);
}

/* The public entry of a save or an export: j filled but for cx and the
 * program's parts, bad (when not NULL) an argument error found by the
 * caller, job the work. */
static int save_entry(SaveJob *j, ax_program *pr, const char *bad, void (*job)(void *))
{
    ax_ctx *cx = j->cx = program_parts(pr, &j->pp);
    if (!cx || !ctx_enter_as(cx, j->what)) return -1;
    /* a builder's error pending belongs to a term being built elsewhere */
    ctx_hold(cx);
    if (!j->pp.prog) ctx_error(cx, AX_ERR_ARG, "%s: the program has no compilation", j->what);
    else if (bad) ctx_error(cx, AX_ERR_ARG, "%s: %s", j->what, bad);
    else run_deep(cx, j->pp.depth, j->what, job, j);
    job_free(j);
    if (j->rc) settle_error(cx);
    else ctx_unhold(cx);
    if (ctx_leave_report(cx, j->what)) j->rc = -1;
    return j->rc;
}

int ax_program_save(ax_program *pr, const char *path)
{
    SaveJob j = {.path = path, .what = "ax_program_save", .rc = -1};
    return save_entry(&j, pr, !path || !path[0] ? "no file name" : NULL, save_job);
}

/* ------------------------------------------------------------ load */

typedef struct LoadJob {
    ax_ctx *cx;
    const char *path;
    const unsigned char *b;
    size_t n;
    double t0;
    const BundleLink *link;   /* an exported program's code, or NULL */
    ax_program *pr;
} LoadJob;

#define BAD(...) ctx_error(cx, AX_ERR_ARG, "ax_program_load: %s: " __VA_ARGS__)

/* The file's bytes; NULL with an error. */
static unsigned char *read_file(ax_ctx *cx, const char *path, size_t *n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return BAD("%s", path, strerror(errno));
    struct stat st;
    unsigned char *b = NULL;
    if (fstat(fd, &st)) BAD("%s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode)) BAD("not a regular file", path);
    else if ((uint64_t)st.st_size > (uint64_t)PTRDIFF_MAX / 2) BAD("too large", path);
    else if (!(b = ax__malloc((size_t)st.st_size + 1))) ctx_error(cx, AX_ERR_NOMEM, "ax_program_load: out of memory");
    size_t got = 0;
    while (b) {
        ssize_t r = read(fd, b + got, (size_t)st.st_size + 1 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            BAD("%s", path, strerror(errno));
            free(b);
            b = NULL;
        }
        if (r <= 0) break;
        got += (size_t)r;
        if (got > (size_t)st.st_size) break;
    }
    close(fd);
    if (b && got != (size_t)st.st_size) {
        BAD("it changed while it was read", path);
        free(b);
        return NULL;
    }
    *n = got;
    return b;
}

/* The backends a file may name (the runtime-only library has no GPU
 * backend: it has no code generator, and a GPU program's kernels are
 * generated again where it loads). */
static const Backend *backend_named(const char *name)
{
    static const Backend *const all[] = {&backend_cpu, &backend_interp,
#ifndef AX_RUNTIME_ONLY
                                         &backend_cuda, &backend_opencl,
#endif
    };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (!strcmp(name, all[i]->name)) return all[i];
    return NULL;
}

static void load_job(void *arg)
{
    LoadJob *j = arg;
    ax_ctx *cx = j->cx;
    const char *path = j->path;
    Bytes in = bytes_reader(j->b, j->n);
    const unsigned char *m = bytes_get(&in, MAGIC_LEN);
    if (!m || memcmp(m, MAGIC, MAGIC_LEN)) {
        BAD("not an axle program file", path);
        return;
    }
    const char *v = (const char *)in.b + in.at;
    size_t vl = strnlen(v, in.len - in.at);
    if (vl >= VERSION_MAX || !bytes_get(&in, vl + 1)) {
        BAD("the file is truncated or corrupt (no version)", path);
        return;
    }
    if (strcmp(v, ax_version())) {
        BAD("the program was saved by axle %s; this is axle %s: save it again with this one", path, v, ax_version());
        return;
    }
    const unsigned char *lb = bytes_get(&in, 8);
    uint64_t blen = 0;
    for (int i = 0; lb && i < 8; i++) blen |= (uint64_t)lb[i] << (8 * i);
    size_t body = in.at;
    if (!lb || blen > in.len - in.at || in.len - in.at - blen != HASH) {
        BAD("the file is truncated or has bytes after its end (%zu bytes)", path, j->n);
        return;
    }
    uint8_t h[HASH];
    jit_sha256(j->b, body + blen, h);
    if (memcmp(h, j->b + body + blen, HASH)) {
        BAD("the file is corrupt (its content hash does not match)", path);
        return;
    }
    in = bytes_reader(j->b, body + blen);
    in.at = body;
    const char *bn = (const char *)in.b + in.at;
    size_t bl = strnlen(bn, in.len - in.at);
    bool named = bytes_get(&in, bl + 1) != NULL;   /* (bn ends within the file) */
    const Backend *be = named ? backend_named(bn) : NULL;
    if (!be && named && (!strcmp(bn, "cuda") || !strcmp(bn, "opencl"))) {
        BAD("the program runs on the %s backend, which the runtime-only library does not have: load it with "
            "libaxle", path, bn);
        return;
    }
    if (!be) {
        BAD("the file is malformed (no backend this axle has)", path);
        return;
    }
    unsigned mode = (unsigned)bytes_getv(&in, 0, 7);
    if (!in.bad && mode != mode_bits(cx)) {
        ctx_error(cx, AX_ERR_ARG, "ax_program_load: %s: the program was compiled in %s mode and this context is "
                  "in %s mode: load it into a context with the options it was saved with", path, mode_name(mode),
                  mode_name(mode_bits(cx)));
        return;
    }
    ax_stats st = {0};
    st.backend = be->name;
    st.nodes = bytes_getv(&in, 0, INT64_MAX);
    st.lets = bytes_getv(&in, 0, INT64_MAX);
    int64_t depth = bytes_getv(&in, 0, DEPTH_CAP);
    int na = (int)bytes_getv(&in, 0, MAX_ARRAYS);
    ax_array **arr = in.bad ? NULL : ax__calloc((size_t)na + 1, sizeof *arr);
    Program *p = NULL;
    void *state = NULL;
    if (!arr) {
        if (!in.bad) ctx_error(cx, AX_ERR_NOMEM, "ax_program_load: out of memory");
        goto malformed;
    }
    for (int k = 0; k < na && !in.bad && cx->status == AX_OK; k++) {
        int param = (int)bytes_getv(&in, 0, AX_MAX_PARAMS);
        const ax_type *elt = get_elt(cx, &in, 0);
        int rank = (int)bytes_getv(&in, 0, AX_MAX_RANK);
        int64_t shape[AX_MAX_RANK] = {0};
        for (int d = 0; !param && d < rank; d++) shape[d] = bytes_getv(&in, 0, INT64_MAX);
        if (in.bad) break;
        /* the contents must be in the file before memory is taken for them */
        /* (-1: more elements than an int64_t counts; an extent 0 makes
         * the array empty whatever the others are) */
        int64_t size = 1;
        bool empty = false;
        size_t need = 0;
        for (int d = 0; !param && d < rank; d++) {
            if (!shape[d]) empty = true;
            else if (size >= 0) size = size <= INT64_MAX / shape[d] ? size * shape[d] : -1;
        }
        if (empty) size = 0;
        for (int c = 0; !param && size >= 0 && c < ax_type_components(elt); c++) {
            size_t es = ax_scalar_size(ty_leaf(elt, c));
            if ((uint64_t)size > (in.len - in.at) / es) size = -1;
            else need += es * (size_t)size;
        }
        if (size < 0 || need > in.len - in.at) {
            in.bad = true;
            break;
        }
        if (!(arr[k] = array_alloc(cx, elt, rank, shape, param != 0))) break;
        arr[k]->param = param;
        for (int c = 0; !param && c < arr[k]->ncomp; c++) {
            size_t nb = ax_scalar_size(ty_leaf(elt, c)) * (size_t)size;
            const unsigned char *src = bytes_get(&in, nb);
            if (src && nb) memcpy(arr[k]->buf[c], src, nb);
        }
    }
    if (cx->status != AX_OK) goto out;
    size_t irn = (size_t)bytes_getv(&in, 0, (int64_t)(in.len - in.at));
    const unsigned char *ir = bytes_get(&in, irn);
    int64_t got = 0;
    char msg[512];
    if (in.bad || !ir || !(p = ir_load(cx, ir, irn, arr, na, &got)) || got > depth + 1) goto malformed;
    if (ir_verify(p, msg, sizeof msg)) {
        BAD("the program in the file is not a valid program (%s)", path, msg);
        goto out;
    }
    size_t pl = (size_t)bytes_getv(&in, 0, (int64_t)(in.len - in.at));
    const unsigned char *part = bytes_get(&in, pl);
    if (!part || in.at != in.len) goto malformed;
    Bytes pin = bytes_reader(part, pl);
    if (be->load(cx, p, &pin, j->link, &state)) goto out;
    if (pin.at != pin.len) {
        if (be->release && state) be->release(state);
        state = NULL;
        goto malformed;
    }
    st.from_disk = true;
    schedule_stats(p, &st.kernels, &st.intermediates);
    st.compile_ms = now_ms() - j->t0;
    j->pr = program_of_parts(cx, p, be, state, got, &st);   /* takes p and state */
    p = NULL;
    goto out;
malformed:
    if (cx->status == AX_OK) BAD("the file is malformed", path);
out:
    program_free(p);
    for (int k = 0; arr && k < na; k++) ax_array_release(arr[k]);
    free(arr);
}

/* The load of bytes b[0..n), or of the file path when b is NULL (path:
 * the name errors give; link: an exported program's code; bad: an
 * argument error found by the caller) into cx. */
static ax_program *load(ax_ctx *cx, const char *what, const char *path, const void *b, size_t n,
                        const BundleLink *link, const char *bad)
{
    if (!cx || !ctx_enter_as(cx, what)) return NULL;
    LoadJob j = {.cx = cx, .path = path, .t0 = now_ms(), .link = link};
    /* a builder's error pending belongs to a term being built elsewhere */
    ctx_hold(cx);
    unsigned char *own = NULL;
    if (bad) {
        ctx_error(cx, AX_ERR_ARG, "%s: %s", what, bad);
    } else if (b) {
        j.b = b;
        j.n = n;
    } else {
        j.b = own = read_file(cx, path, &j.n);
    }
    /* ir_load bounds its own nesting (twice sharing recovery's limit):
     * the stack is sized for that, whatever the file says */
    if (j.b) run_deep(cx, 2 * DEPTH_CAP, what, load_job, &j);
    free(own);
    if (!j.pr) settle_error(cx);
    else ctx_unhold(cx);
    if (ctx_leave_report(cx, what)) {
        ax_program_free(j.pr);
        return NULL;
    }
    return j.pr;
}

ax_program *ax_program_load(ax_ctx *cx, const char *path)
{
    return load(cx, "ax_program_load", path, NULL, 0, NULL, !path || !path[0] ? "no file name" : NULL);
}

ax_program *ax_program_load_mem(ax_ctx *cx, const void *data, size_t size)
{
    return load(cx, "ax_program_load_mem", "(memory)", data, size, NULL, data ? NULL : "no data");
}

ax_program *ax_program_load_linked(ax_ctx *cx, const void *data, size_t size, const ax_linked_fn *fns, int nfns,
                                   const char *isa)
{
    BundleLink link = {fns, nfns, isa ? isa : ""};
    bool bad = !data || (!fns && nfns) || nfns < 0;
    return load(cx, "ax_program_load_linked", "(exported program)", data, size, &link,
                bad ? "no data or no functions" : NULL);
}

#ifndef AX_RUNTIME_ONLY
/* (the runtime-only library compiles nothing, so exports nothing) */
/* ------------------------------------------------------------ export */

static bool identifier(const char *s)
{
    if (!s || !(s[0] == '_' || (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) return false;
    size_t n = 0;
    for (; s[n]; n++)
        if (!(s[n] == '_' || (s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= '0' && s[n] <= '9')))
            return false;
    return n <= 64;
}

/* The parameters of the program (the placeholders among its arrays),
 * into par[k] by index: NULL where an index is not read; their count. */
static int params_of(const SaveJob *j, const ax_array **par)
{
    int np = 0;
    for (int k = 0; k < AX_MAX_PARAMS; k++) par[k] = NULL;
    for (int k = 0; k < j->na; k++)
        if (j->arr[k]->param) {
            par[j->arr[k]->param - 1] = j->arr[k];
            if (j->arr[k]->param > np) np = j->arr[k]->param;
        }
    return np;
}

/* The C type of a scalar leaf in a plain buffer (a bool is a byte). */
static const char *c_type(ax_scalar s)
{
    static const char *const names[AX_NSCALAR] = {"uint8_t", "int8_t",   "int16_t",  "int32_t", "int64_t", "uint8_t",
                                                  "uint16_t", "uint32_t", "uint64_t", "float",   "double"};
    return (unsigned)s < AX_NSCALAR ? names[s] : "void";
}

/* A C expression that makes the element type t in cx (for wrapping a
 * plain buffer as an array of it). */
static void type_expr(Bytes *c, const Type *t)
{
    if (t->kind == TY_SCALAR) {
        bytes_printf(c, "ax_type_scalar((ax_scalar)%d)", (int)t->s);
    } else if (t->kind == TY_INDEX) {
        bytes_printf(c, "ax_type_index(cx, %d)", t->n);
    } else if (t->n == 0) {
        bytes_puts(c, "ax_type_tuple(cx, 0, NULL)");   /* the unit (an empty initialiser is not C) */
    } else {
        bytes_printf(c, "ax_type_tuple(cx, %d, (const ax_type *const[]){", t->n);
        for (int i = 0; i < t->n; i++) {
            if (i) bytes_puts(c, ", ");
            type_expr(c, t->elts[i]);
        }
        bytes_puts(c, "})");
    }
}

/* The program's results as ax_run_n gives them (a tuple of arrays
 * flattened, left to right) into res; their count (at most max). */
static int results_of(const Type *t, const Type **res, int n, int max)
{
    if (!t) return n;
    if (t->kind == TY_ARRAY) {
        if (n < max) res[n] = t;
        return n + 1;
    }
    for (int i = 0; t->kind == TY_ARRAYS && i < t->n; i++) n = results_of(t->elts[i], res, n, max);
    return n;
}

/* The name of buffer c of argument or result k ("arg0", or "arg0_c1"
 * where the element has several scalar components). */
static void buf_name(Bytes *b, const char *what, int k, int c, int width)
{
    if (width == 1) bytes_printf(b, "%s%d", what, k);
    else bytes_printf(b, "%s%d_c%d", what, k, c);
}

/* NAME_run_buffers, declared in h and defined in c: the program run on
 * the caller's plain buffers, its results in new malloc'd ones.  (Returns
 * false when the program has more results than the variant takes.) */
static bool export_buffers(Bytes *h, Bytes *c, const char *n, const ax_array **par, int np, const Type *rt)
{
    enum { MAX_RES = 64 };
    const Type *res[MAX_RES];
    int nr = results_of(rt, res, 0, MAX_RES);
    if (nr > MAX_RES) return false;
    Bytes sig = {0};
    bytes_printf(&sig, "int %s_run_buffers(ax_ctx *cx, ax_program *p", n);
    for (int k = 0; k < np; k++) {
        if (!par[k]) continue;
        int w = ax_type_components(par[k]->elt);
        for (int i = 0; i < w; i++) {
            bytes_printf(&sig, ", const %s *", c_type(ty_leaf(par[k]->elt, i)));
            buf_name(&sig, "arg", k, i, w);
        }
        if (par[k]->rank) bytes_printf(&sig, ", const int64_t *arg%d_shape", k);
    }
    for (int r = 0; r < nr; r++) {
        int w = ax_type_components(res[r]->elt);
        for (int i = 0; i < w; i++) {
            bytes_printf(&sig, ", %s **", c_type(ty_leaf(res[r]->elt, i)));
            buf_name(&sig, "out", r, i, w);
        }
        if (res[r]->rank) bytes_printf(&sig, ", int64_t *out%d_shape", r);
    }
    bytes_put(&sig, ")", 2);   /* with its NUL: printed with %s below */
    if (sig.bad) {
        free(sig.b);
        h->bad = true;
        return true;
    }
    bytes_printf(h, "/* Runs it on plain buffers, for a caller without axle's arrays: each\n"
                    " * argument as its elements in row-major order (argK_cI: component I of a\n"
                    " * tuple element) and its extents (argK_shape; none for a scalar), read in\n"
                    " * place, not copied.  Each result comes back in a new buffer from malloc\n"
                    " * (the caller frees it with free) and its extents in outK_shape (room for\n"
                    " * its rank).  Returns 0; or -1 with the error on cx (ax_error), or -2\n"
                    " * when malloc failed for a result, and then no buffer is allocated. */\n"
                    "%s;\n\n",
                 sig.b);
    bytes_printf(c, "\n%s\n{\n    ax_array *args[%d] = {0}, *res[%d] = {0};\n    int rc = -1;\n    (void)cx;\n", sig.b, np ? np : 1,
                 nr ? nr : 1);
    free(sig.b);
    for (int k = 0; k < np; k++) {
        if (!par[k]) continue;
        int w = ax_type_components(par[k]->elt);
        bytes_puts(c, "    {\n        void *b[] = {");
        for (int i = 0; i < w; i++) {
            bytes_puts(c, i ? ", (void *)" : "(void *)");
            buf_name(c, "arg", k, i, w);
        }
        if (!w) bytes_puts(c, "0");   /* (an element of no components: the unit) */
        bytes_printf(c, "};\n        if (!(args[%d] = ax_array_wrap_n(cx, ", k);
        type_expr(c, par[k]->elt);
        if (par[k]->rank) bytes_printf(c, ", %d, arg%d_shape, b))) goto out;\n    }\n", par[k]->rank, k);
        else bytes_puts(c, ", 0, 0, b))) goto out;\n    }\n");
    }
    bytes_printf(c, "    if (ax_program_run_with(p, args, %d, res, %d) != %d) goto out;\n", np, nr, nr);
    int leaves = 0;
    for (int r = 0; r < nr; r++) leaves += ax_type_components(res[r]->elt);
    if (leaves) {
        bytes_printf(c, "    void *o[%d] = {0};\n    int k = 0;\n", leaves);
        bytes_printf(c, "    for (int r = 0; r < %d; r++)\n"
                        "        for (int i = 0; i < ax_array_components(res[r]); i++, k++) {\n"
                        "            size_t nb = (size_t)ax_array_size(res[r]) * ax_scalar_size(ax_array_component_type(res[r], i));\n"
                        "            if (!(o[k] = malloc(nb ? nb : 1)) || ax_array_copy_out(res[r], i, o[k])) {\n"
                        "                rc = o[k] ? -1 : -2;\n"
                        "                for (int j = 0; j <= k; j++) free(o[j]);\n"
                        "                goto out;\n            }\n        }\n",
                     nr);
        int at = 0;
        for (int r = 0; r < nr; r++) {
            int w = ax_type_components(res[r]->elt);
            for (int i = 0; i < w; i++, at++) {
                bytes_puts(c, "    *");
                buf_name(c, "out", r, i, w);
                bytes_printf(c, " = o[%d];\n", at);
            }
        }
    }
    /* (every result's extents, those of an array of units too) */
    for (int r = 0; r < nr; r++)
        if (res[r]->rank)
            bytes_printf(c, "    for (int d = 0; d < %d; d++) out%d_shape[d] = ax_array_shape(res[%d])[d];\n",
                         res[r]->rank, r, r);
    bytes_printf(c, "    rc = 0;\nout:\n    for (int k = 0; k < %d; k++) ax_array_release(args[k]);\n"
                    "    for (int k = 0; k < %d; k++) ax_array_release(res[k]);\n    return rc;\n}\n",
                 np ? np : 1, nr ? nr : 1);
    return true;
}

static void export_job(void *arg)
{
    SaveJob *j = arg;
    ax_ctx *cx = j->cx;
    if (build(j)) return;
    const char *n = j->name;
    unsigned mode = mode_bits(cx);
    const ax_array *par[AX_MAX_PARAMS];
    int np = params_of(j, par);
    Bytes c = {0}, h = {0};
    char *cc = ax_cc_command(cx);
    /* the header */
    bytes_printf(&h, "/*\n * %s.h: the axle program %s, exported by axle %s (ax_program_export).\n", n, n, ax_version());
    bytes_printf(&h, " * Generated: do not edit.  %s.c holds its kernels and its program: compile\n"
             " * it with the application and link with -laxle or -laxle_rt.\n */\n", n);
    bytes_printf(&h, "#ifndef AXLE_EXPORT_%s_H\n#define AXLE_EXPORT_%s_H\n#include <axle.h>\n\n", n, n);
    bytes_printf(&h, "/* The program in cx, or NULL with an error on cx (a CPU that lacks an\n"
             " * instruction set %s.c was compiled for, or a context in another mode than\n"
             " * %s).  Free it with ax_program_free. */\nax_program *%s_load(ax_ctx *cx);\n\n", n,
             mode_name(mode), n);
    bytes_printf(&h, "/* Runs it: ax_program_run_with with its %d parameter%s in order, each an\n"
             " * ax_array of cx", np, np == 1 ? "" : "s");
    for (int k = 0; k < np; k++) {
        char t[96];
        if (par[k]) bytes_printf(&h, ";\n *   arg%d: [%s]^%d", k, ax_type_str(par[k]->elt, t, sizeof t), par[k]->rank);
        else bytes_printf(&h, ";\n *   arg%d: not read (may be NULL)", k);
    }
    bytes_printf(&h, ".\n * Returns as ax_run_n: the number of results written to out, or -1. */\nint %s_run(ax_program *p", n);
    for (int k = 0; k < np; k++) bytes_printf(&h, ", ax_array *arg%d", k);
    bytes_printf(&h, ", ax_array **out, int max);\n\n");
    /* the C file */
    bytes_printf(&c, "/*\n * %s.c: the axle program %s, exported by axle %s (ax_program_export).\n", n, n, ax_version());
    bytes_printf(&c, " * Generated: do not edit.  Compile it with the application; axle compiles\n"
             " * its kernels with:\n *   %s\n * and this file with the same optimisation and target flags runs as fast.\n"
             " * Link with -laxle or -laxle_rt.  The program runs on the %s backend, in\n * %s mode.\n */\n",
             cc ? cc : "(unknown)", j->pp.be->name, mode_name(mode));
    if (!(mode & 6)) {
        /* exact mode: every operation rounded, as axle's own compile has
         * it (-ffp-contract=off); C compilers fuse a*b+c by default */
        bytes_puts(&c, "#if defined(__FAST_MATH__)\n#error \"this program was exported in exact mode: compile it without "
               "-ffast-math\"\n#endif\n#if defined(__clang__)\n#pragma STDC FP_CONTRACT OFF\n#elif defined(__GNUC__)\n"
               "#pragma GCC optimize (\"fp-contract=off\")\n#endif\n\n");
    }
    /* the kernels before axle.h: their helpers' names are their own.
     * Generated code declares what a skeleton may need: not a warning of
     * the application's; nor is a loop asked to vectorise that Clang
     * cannot (-Wpass-failed).  -Wpragmas first: GCC warns of the
     * options it does not know (Clang's -Wpass-failed), Clang of those
     * it does not know under -Wunknown-warning-option. */
    bytes_puts(&c, "#if defined(__GNUC__)\n#pragma GCC diagnostic push\n"
           "#pragma GCC diagnostic ignored \"-Wpragmas\"\n"
           "#pragma GCC diagnostic ignored \"-Wunknown-warning-option\"\n"
           "#pragma GCC diagnostic ignored \"-Wpass-failed\"\n"
           "#pragma GCC diagnostic ignored \"-Wunused-variable\"\n"
           "#pragma GCC diagnostic ignored \"-Wunused-parameter\"\n"
           "#pragma GCC diagnostic ignored \"-Wunused-function\"\n"
           "#pragma GCC diagnostic ignored \"-Wunused-but-set-variable\"\n"
           "#pragma GCC diagnostic ignored \"-Wsign-compare\"\n"
           "#pragma GCC diagnostic ignored \"-Wmisleading-indentation\"\n"
           "#pragma GCC diagnostic ignored \"-Wtype-limits\"\n"
           "#pragma GCC diagnostic ignored \"-Wmissing-prototypes\"\n"
           "#pragma GCC diagnostic ignored \"-Wmissing-declarations\"\n"
           "#pragma GCC diagnostic ignored \"-Wunknown-pragmas\"\n"
           "#endif\n");
    bytes_put(&c, j->c.b, j->c.len);
    bytes_puts(&c, "#if defined(__GNUC__)\n#pragma GCC diagnostic pop\n#endif\n");
    bytes_printf(&c, "\n#include \"%s.h\"\n#include <stdlib.h>\n", n);
    bytes_put(&c, j->t.b, j->t.len);
    bytes_printf(&c, "\n/* the program (ax_program_save's form, without compiled objects) */\n"
             "static const unsigned char %s_data[%zu] = {", n, j->file.len);
    for (size_t i = 0; i < j->file.len && !c.bad; i++) {
        /* (a large array's bytes: not one printf each) */
        char d[8], *e = d + sizeof d;
        unsigned v = j->file.b[i];
        *--e = ',';
        do *--e = (char)('0' + v % 10); while (v /= 10);
        *--e = ' ';
        if (i % 16 == 0) bytes_puts(&c, "\n   ");
        bytes_put(&c, e, (size_t)(d + sizeof d - e));
    }
    bytes_printf(&c, "\n};\n\nax_program *%s_load(ax_ctx *cx)\n{\n"
             "    return ax_program_load_linked(cx, %s_data, sizeof %s_data, %s_fns,\n"
             "                                  (int)(sizeof %s_fns / sizeof *%s_fns) - 1, %s_isa);\n}\n\n",
             n, n, n, n, n, n, n);
    bytes_printf(&c, "int %s_run(ax_program *p", n);
    for (int k = 0; k < np; k++) bytes_printf(&c, ", ax_array *arg%d", k);
    bytes_printf(&c, ", ax_array **out, int max)\n{\n");
    if (np) {
        bytes_printf(&c, "    ax_array *args[%d] = {", np);
        for (int k = 0; k < np; k++) bytes_printf(&c, "%sarg%d", k ? ", " : "", k);
        bytes_printf(&c, "};\n    return ax_program_run_with(p, args, %d, out, max);\n}\n", np);
    } else {
        bytes_puts(&c, "    return ax_program_run_with(p, 0, 0, out, max);\n}\n");
    }
    if (!export_buffers(&h, &c, n, par, np, j->pp.prog->root->type))
        bytes_puts(&h, "/* (no plain-buffer variant: the program has more than 64 results) */\n\n");
    bytes_puts(&h, "#endif\n");
    free(cc);
    char path[4096], err[512];
    if (c.bad || h.bad) {
        ctx_error(cx, AX_ERR_NOMEM, "ax_program_export: out of memory");
    } else if ((size_t)snprintf(path, sizeof path, "%s/%s.h", j->path, n) >= sizeof path) {
        ctx_error(cx, AX_ERR_ARG, "ax_program_export: the directory name is too long");
    } else if (!write_file(path, h.b, h.len, err, sizeof err) ||
               (snprintf(path, sizeof path, "%s/%s.c", j->path, n), !write_file(path, c.b, c.len, err, sizeof err))) {
        ctx_error(cx, AX_ERR_ARG, "ax_program_export: %s", err);
    } else {
        j->rc = 0;
    }
    free(c.b);
    free(h.b);
}

int ax_program_export(ax_program *pr, const char *name, const char *dir)
{
    SaveJob j = {.path = dir && dir[0] ? dir : ".", .what = "ax_program_export", .name = name, .rc = -1};
    char bad[160];
    struct stat st;
    if (!identifier(name))
        snprintf(bad, sizeof bad, "the name '%.64s' is not a C identifier of at most 64 characters",
                 name ? name : "(null)");
    else if (stat(j.path, &st) || !S_ISDIR(st.st_mode))
        snprintf(bad, sizeof bad, "%.120s is not a directory", j.path);
    else bad[0] = 0;
    return save_entry(&j, pr, bad[0] ? bad : NULL, export_job);
}
#endif

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
#include "runtime/array.h"
#include "runtime/jit.h"
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* An element type: 0 and a scalar, or 1, the count and the components. */
static void put_elt(Bytes *w, const Type *t)
{
    if (t->kind == TY_SCALAR) {
        bytes_put8(w, 0);
        bytes_put8(w, (unsigned)t->s);
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
    if (k != 1) return in->bad = true, NULL;
    int n = (int)bytes_getv(in, 1, MAX_TUPLE);
    const ax_type **e = in->bad ? NULL : ax__calloc((size_t)n, sizeof *e);
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
    int rc;
} SaveJob;

static bool write_file(const char *path, const void *b, size_t n, char *err, size_t errsize)
{
    /* written beside its place under a fresh name and renamed into it:
     * a reader sees the old file or the new one, never half of one */
    size_t pl = strlen(path);
    char *tmp = ax__malloc(pl + 16);
    if (!tmp) return snprintf(err, errsize, "out of memory"), false;
    snprintf(tmp, pl + 16, "%s.tmp-XXXXXX", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
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

static void save_job(void *arg)
{
    SaveJob *j = arg;
    ax_ctx *cx = j->cx;
    ProgramParts pp = j->pp;
    if (!pp.be->save) {
        ctx_error(cx, AX_ERR_BACKEND, "ax_program_save: programs compiled for the %s backend cannot be saved "
                  "(the CPU's and the interpreter's can)", pp.be->name);
        return;
    }
    /* the arrays, each once (a program may read one at several places) */
    ax_array **arr = ax__calloc((size_t)pp.narrays + 1, sizeof *arr);
    int na = 0;
    Bytes w = {0};
    unsigned char *ir = NULL;
    if (!arr) goto nomem;
    for (int i = 0; i < pp.narrays; i++) {
        bool seen = false;
        for (int k = 0; k < na && !seen; k++) seen = arr[k] == pp.arrays[i];
        if (!seen) arr[na++] = pp.arrays[i];
    }
    size_t irn = 0;
    if (!(ir = ir_save(pp.prog, arr, na, &irn))) goto nomem;
    const char *version = ax_version();
    bytes_put(&w, MAGIC, MAGIC_LEN);
    bytes_put(&w, version, strlen(version) + 1);
    size_t lenat = w.len;
    bytes_put(&w, (unsigned char[8]){0}, 8);
    size_t body = w.len;
    bytes_put(&w, pp.be->name, strlen(pp.be->name) + 1);
    bytes_putv(&w, mode_bits(cx));
    bytes_putv(&w, pp.stats->nodes);
    bytes_putv(&w, pp.stats->lets);
    bytes_putv(&w, ir_depth(pp.prog->root, DEPTH_CAP));
    bytes_putv(&w, na);
    for (int k = 0; k < na; k++) {
        ax_array *a = arr[k];
        bytes_putv(&w, a->param);
        put_elt(&w, a->elt);
        bytes_putv(&w, a->rank);
        if (a->param) continue;
        for (int d = 0; d < a->rank; d++) bytes_putv(&w, a->shape[d]);
        if (array_host(a)) goto fail;
        for (int c = 0; c < a->ncomp; c++)
            bytes_put(&w, a->buf[c], ax_scalar_size(ty_leaf(a->elt, c)) * (size_t)a->size);
    }
    bytes_putv(&w, (int64_t)irn);
    bytes_put(&w, ir, irn);
    size_t beat = w.len;
    if (pp.be->save(cx, pp.prog, pp.state, &w)) goto fail;
    /* the backend's part is read as a whole: its length before it */
    Bytes part = {0};
    bytes_putv(&part, (int64_t)(w.len - beat));
    if (part.bad || !bytes_room(&w, part.len)) {
        free(part.b);
        goto nomem;
    }
    memmove(w.b + beat + part.len, w.b + beat, w.len - beat);
    memcpy(w.b + beat, part.b, part.len);
    w.len += part.len;
    free(part.b);
    uint64_t blen = w.len - body;
    for (int i = 0; i < 8; i++) w.b[lenat + i] = (unsigned char)(blen >> (8 * i));
    uint8_t h[HASH];
    if (w.bad) goto nomem;
    jit_sha256(w.b, w.len, h);
    bytes_put(&w, h, HASH);
    if (w.bad) goto nomem;
    char err[512];
    if (!write_file(j->path, w.b, w.len, err, sizeof err)) {
        ctx_error(cx, AX_ERR_ARG, "ax_program_save: %s", err);
        goto fail;
    }
    j->rc = 0;
    goto fail;
nomem:
    ctx_error(cx, AX_ERR_NOMEM, "ax_program_save: out of memory");
fail:
    free(w.b);
    free(ir);
    free(arr);
}

int ax_program_save(ax_program *pr, const char *path)
{
    SaveJob j = {.path = path, .rc = -1};
    ax_ctx *cx = j.cx = program_parts(pr, &j.pp);
    if (!cx || !ctx_enter_as(cx, "ax_program_save")) return -1;
    /* a builder's error pending belongs to a term being built elsewhere */
    ctx_hold(cx);
    if (!j.pp.prog) ctx_error(cx, AX_ERR_ARG, "ax_program_save: the program has no compilation");
    else if (!path || !path[0]) ctx_error(cx, AX_ERR_ARG, "ax_program_save: no file name");
    else run_deep(cx, j.pp.depth, "ax_program_save", save_job, &j);
    if (j.rc) settle_error(cx);
    else ctx_unhold(cx);
    if (ctx_leave_report(cx, "ax_program_save")) j.rc = -1;
    return j.rc;
}

/* ------------------------------------------------------------ load */

typedef struct LoadJob {
    ax_ctx *cx;
    const char *path;
    const unsigned char *b;
    size_t n;
    double t0;
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

static const Backend *backend_named(const char *name)
{
    if (!strcmp(name, backend_cpu.name)) return &backend_cpu;
    if (!strcmp(name, backend_interp.name)) return &backend_interp;
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
    const Backend *be = bytes_get(&in, bl + 1) ? backend_named(bn) : NULL;
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
        int64_t size = 1;
        size_t need = 0;
        for (int d = 0; !param && d < rank; d++)
            size = size && shape[d] && size <= INT64_MAX / shape[d] ? size * shape[d] : shape[d] ? -1 : 0;
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
    if (be->load(cx, p, &pin, &state)) goto out;
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

/* The load of bytes b[0..n) (path: the name errors give) into cx. */
static ax_program *load(ax_ctx *cx, const char *what, const char *path, const void *b, size_t n)
{
    if (!cx || !ctx_enter_as(cx, what)) return NULL;
    LoadJob j = {.cx = cx, .path = path, .t0 = now_ms()};
    /* a builder's error pending belongs to a term being built elsewhere */
    ctx_hold(cx);
    unsigned char *own = NULL;
    if (b) {
        j.b = b;
        j.n = n;
    } else if (!path || !path[0]) {
        ctx_error(cx, AX_ERR_ARG, "ax_program_load: no file name");
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
    return load(cx, "ax_program_load", path, NULL, 0);
}

ax_program *ax_program_load_mem(ax_ctx *cx, const void *data, size_t size)
{
    if (cx && !data) {
        if (!ctx_enter_as(cx, "ax_program_load_mem")) return NULL;
        ctx_error(cx, AX_ERR_ARG, "ax_program_load_mem: no data");
        settle_error(cx);
        ctx_leave_report(cx, "ax_program_load_mem");
        return NULL;
    }
    return load(cx, "ax_program_load_mem", "(memory)", data, size);
}

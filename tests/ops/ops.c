/* The per-operation tests' shared code (tests/ops/ops.h).
 * SPDX-License-Identifier: BSD-3-Clause */
#include "ops.h"
#include <float.h>
#include <stdarg.h>
#include <time.h>

/* ================================================================ backends */

static const Be all_backends[4] = {
    {AX_BACKEND_INTERP, "interp", true, false},
    {AX_BACKEND_CPU, "cpu", false, false},
    {AX_BACKEND_OPENCL, "opencl", false, true},
    {AX_BACKEND_CUDA, "cuda", false, true},
};

ax_ctx *kind_ctx(ax_backend_kind k, bool unsafe)
{
    ax_options o;
    memset(&o, 0, sizeof o);
    o.backend = k;
    o.threads = 4;
    o.unsafe = unsafe;
    return ax_ctx_new(&o);
}

ax_ctx *be_ctx_unsafe(const Be *be, bool unsafe) { return kind_ctx(be->kind, unsafe); }
ax_ctx *be_ctx(const Be *be) { return kind_ctx(be->kind, false); }

const char *be_code_stage(const Be *be)
{
    return be->interp ? "" : be->kind == AX_BACKEND_CUDA ? "cuda" : be->gpu ? "opencl" : "c";
}

bool ops_small(void)
{
    const char *e = getenv("AXLE_TEST_SMALL");
    return e && !strcmp(e, "1");
}

/* Whether backend k runs here: a small map must not fail with
 * AX_ERR_BACKEND (no OpenCL platform, no CUDA device) or, on the CPU
 * backend, with AX_ERR_COMPILE (no C compiler).  why: the message. */
static bool probe(const Be *be, char *why, size_t n)
{
    if (be->interp) return true;
    ax_ctx *cx = kind_ctx(be->kind, false);
    if (!cx) {
        snprintf(why, n, "no context");
        return false;
    }
    ax_array *r = ax_run(cx, ax_map(ax_fn_neg, NULL, input(cx, AX_I32, 1, SH(4), 1, 9)));
    ax_status st = ax_status_of(cx);
    bool ok = r || !(st == AX_ERR_BACKEND || (st == AX_ERR_COMPILE && be->kind == AX_BACKEND_CPU));
    if (!ok) snprintf(why, n, "%s", ax_error(cx));
    ax_array_release(r);
    ax_ctx_free(cx);
    return ok;
}

/* The backends under test, found once: chosen[k] for all_backends[k];
 * named[k]: AXLE_TEST_BACKEND names it (then it must run). */
static bool chosen[4], named[4], avail[4];
static char unavail_why[4][512];
static bool resolved;

static void resolve(void)
{
    if (resolved) return;
    resolved = true;
    const char *e = getenv("AXLE_TEST_BACKEND");
    bool any = e && *e;
    if (any) {
        char buf[128];
        snprintf(buf, sizeof buf, "%s", e);
        for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            int k = 0;
            while (k < 4 && strcmp(t, all_backends[k].name)) k++;
            if (k == 4) {
                fprintf(stderr, "AXLE_TEST_BACKEND: unknown backend '%s' (interp, cpu, opencl, cuda)\n", t);
                continue;
            }
            named[k] = chosen[k] = true;
        }
    } else {
        for (int k = 0; k < 4; k++) chosen[k] = true;
    }
    for (int k = 0; k < 4; k++) {
        if (!chosen[k]) continue;
        avail[k] = probe(&all_backends[k], unavail_why[k], sizeof unavail_why[k]);
        if (!avail[k] && !named[k])
            printf("skip %s: not available here: %s\n", all_backends[k].name, unavail_why[k]);
    }
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void same_free(void);

/* ================================================================ batched runs */

/* One run of a body's first pass: where it was called (file, line, and
 * the how-manieth call of that line it was), its program, and its results
 * in res[first .. first + n) once run (n: the arrays it gives; ok: the
 * tuple that held it ran). */
typedef struct Ran {
    const char *file;
    int line, occ;
    ax_acc prog;
    int first, n;
    int kase;   /* the case (op_case) it belongs to */
    bool ok;
} Ran;

static struct {
    bool active;   /* an OP_TEST body on a compiling backend */
    int pass;      /* 1: collecting, 2: checking */
    bool ran;      /* the first pass's programs have run */
    ax_ctx *cx;
    int kase;      /* the current case (op_case) */
    Ran *rans;
    int nran, capran;
    ax_array **res;
    int nres, capres;
    /* calls so far per (file, line), this pass */
    struct { const char *file; int line, count; } *lines;
    int nlines, caplines;
} B;

#define GROW(p, n, cap) do { if ((n) == (cap)) { (cap) = (cap) ? 2 * (cap) : 64; \
    (p) = realloc((p), sizeof *(p) * (size_t)(cap)); if (!(p)) abort(); } } while (0)

bool op_collecting(void) { return B.active && B.pass == 1; }

static int occurrence(const char *file, int line)
{
    for (int i = 0; i < B.nlines; i++)
        if (B.lines[i].line == line && B.lines[i].file == file) return B.lines[i].count++;
    GROW(B.lines, B.nlines, B.caplines);
    B.lines[B.nlines].file = file;
    B.lines[B.nlines].line = line;
    B.lines[B.nlines++].count = 1;
    return 0;
}

/* The arrays a computation gives (its tuple's leaves). */
static int leaves(const ax_type *t)
{
    if (ax_type_kind_of(t) == AX_KIND_ARRAY) return 1;
    if (ax_type_kind_of(t) != AX_KIND_ARRAYS) return 0;
    int n = 0;
    for (int i = 0; i < ax_type_arity(t); i++) n += leaves(ax_type_elem(t, i));
    return n;
}

static int record(ax_acc a, const char *file, int line)
{
    GROW(B.rans, B.nran, B.capran);
    Ran *r = &B.rans[B.nran];
    r->file = file;
    r->line = line;
    r->occ = occurrence(file, line);
    r->prog = a;
    r->n = a ? leaves(ax_acc_type(a)) : 0;
    r->first = B.nres;
    r->kase = B.kase;
    r->ok = false;
    for (int k = 0; k < r->n; k++) {
        GROW(B.res, B.nres, B.capres);
        B.res[B.nres++] = NULL;
    }
    return B.nran++;
}

static Ran *lookup(const char *file, int line)
{
    int occ = occurrence(file, line);
    for (int i = 0; i < B.nran; i++)
        if (B.rans[i].line == line && B.rans[i].occ == occ && B.rans[i].file == file) return &B.rans[i];
    return NULL;
}

/* Runs rans idx[0 .. n) as one tuple; where that fails, each half alone
 * (down to single programs, which the second pass runs again to report
 * their error). */
static void run_group(const int *idx, int n)
{
    int nprog = 0, nres = 0;
    ax_acc progs[64];
    for (int i = 0; i < n; i++) {
        progs[nprog++] = B.rans[idx[i]].prog;
        nres += B.rans[idx[i]].n;
    }
    if (!nprog) return;
    ax_array **out = calloc((size_t)nres, sizeof *out);
    int got = ax_run_n(B.cx, nprog == 1 ? progs[0] : ax_atuple(nprog, progs), out, nres);
    if (got == nres) {
        for (int i = 0, k = 0; i < n; i++) {
            Ran *r = &B.rans[idx[i]];
            for (int j = 0; j < r->n; j++) B.res[r->first + j] = out[k++];
            r->ok = true;
        }
    } else {
        for (int k = 0; k < got; k++) ax_array_release(out[k]);
        if (n > 1) {
            run_group(idx, n / 2);
            run_group(idx + n / 2, n - n / 2);
        }
    }
    free(out);
}

/* Runs the first pass's programs: each case's (op_case) in tuples of at
 * most 64 programs and 256 results, in the order of the calls. */
static void run_collected(void)
{
    if (B.ran || !B.cx) return;
    B.ran = true;
    int *idx = calloc((size_t)B.nran + 1, sizeof *idx);
    for (int lo = 0; lo < B.nran;) {
        int m = 0, nres = 0, hi = lo;
        while (hi < B.nran && m < 64 && (B.rans[hi].kase == B.rans[lo].kase) &&
               (m == 0 || nres + B.rans[hi].n <= 256)) {
            if (B.rans[hi].prog && B.rans[hi].n > 0) {
                idx[m++] = hi;
                nres += B.rans[hi].n;
            }
            hi++;
        }
        if (m) run_group(idx, m);
        lo = hi;
    }
    free(idx);
}

void op_case(void)
{
    if (B.active && B.pass == 1) B.kase++;
}

static void batch_clear(void)
{
    for (int i = 0; i < B.nres; i++) ax_array_release(B.res[i]);
    if (B.cx) ax_ctx_free(B.cx);
    free(B.rans);
    free(B.res);
    free(B.lines);
    memset(&B, 0, sizeof B);
}

ax_ctx *op_ctx(const Be *be)
{
    if (!B.active) return be_ctx(be);
    if (!B.cx) B.cx = be_ctx(be);
    return B.cx;
}

void op_ctx_done(ax_ctx *cx)
{
    if (!B.active || cx != B.cx) {
        ax_ctx_free(cx);
        return;
    }
    if (B.pass == 1) run_collected();
    /* (the second pass's context is freed with the batch) */
}

ax_array *op_run(ax_ctx *cx, ax_acc a, const char *file, int line)
{
    if (B.active && cx == B.cx) {
        if (B.pass == 1) {
            record(a, file, line);
            return NULL;
        }
        Ran *r = lookup(file, line);
        if (r && r->ok && r->n >= 1) {
            ax_array *out = B.res[r->first];
            B.res[r->first] = NULL;
            r->ok = false;   /* handed out */
            return out;
        }
    }
    return harness_run(cx, a, file, line);
}

int op_run_n(ax_ctx *cx, ax_acc a, ax_array **out, int max, const char *file, int line)
{
    if (B.active && cx == B.cx) {
        if (B.pass == 1) {
            int i = record(a, file, line);
            int n = B.rans[i].n;
            n = n < max ? n : max;
            for (int k = 0; k < n; k++) out[k] = NULL;
            return n;
        }
        Ran *r = lookup(file, line);
        if (r && r->ok) {
            int n = r->n < max ? r->n : max;
            for (int k = 0; k < r->n; k++) {
                if (k < n) out[k] = B.res[r->first + k];
                else ax_array_release(B.res[r->first + k]);
                B.res[r->first + k] = NULL;
            }
            r->ok = false;
            return n;
        }
    }
    int n = ax_run_n(cx, a, out, max);
    if (n < 0) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: ax_run_n failed: %s\n", file, line, ax_error(cx));
    }
    return n;
}


void ops_each_backend(const char *test, void (*body)(const Be *be), int how)
{
    resolve();
    const char *te = getenv("AXLE_TEST_TIMES");
    bool times = te && !strcmp(te, "1");
    for (int k = 0; k < 4; k++) {
        const Be *be = &all_backends[k];
        if (!chosen[k] || (how == OPS_COMPILED && be->interp)) continue;
        if (!avail[k]) {
            if (named[k]) {
                harness_failed_checks++;
                fprintf(stderr, "%s: AXLE_TEST_BACKEND names %s, which cannot run here: %s\n", test, be->name,
                        unavail_why[k]);
            }
            continue;
        }
        int before = harness_failed_checks;
        double t0 = now_s();
        if (be->interp || how != OPS_BATCHED) {
            body(be);
        } else {
            B.active = true;
            B.pass = 1;
            body(be);
            harness_failed_checks = before;
            run_collected();
            B.pass = 2;
            B.nlines = 0;
            body(be);
            batch_clear();
        }
        same_free();
        if (harness_failed_checks > before)
            fprintf(stderr, "%s: %d failed checks on %s\n", test, harness_failed_checks - before, be->name);
        if (times) printf("time %s on %s: %.2f s\n", test, be->name, now_s() - t0);
    }
}

/* ================================================================ data */

int64_t shape_size(int rank, const int64_t *sh)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= sh[d];
    return n;
}

void unravel(int64_t lin, int rank, const int64_t *sh, int64_t *ix)
{
    for (int d = rank - 1; d >= 0; d--) {
        ix[d] = sh[d] ? lin % sh[d] : 0;
        lin = sh[d] ? lin / sh[d] : 0;
    }
}

int64_t ravel(int rank, const int64_t *sh, const int64_t *ix)
{
    int64_t lin = 0;
    for (int d = 0; d < rank; d++) lin = lin * sh[d] + ix[d];
    return lin;
}

static uint64_t next(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return *s = x;
}

void fill(void *buf, ax_scalar s, int64_t n, uint64_t seed, int range)
{
    uint64_t st = seed * 0x2545f4914f6cdd1dull + 1;
    for (int64_t i = 0; i < n; i++) {
        uint64_t r = next(&st);
        int64_t v = (int64_t)(r % (uint64_t)(2 * range + 1)) - range;
        double f = (double)v + (double)(r >> 40) / (double)(1ull << 24);
        switch (s) {
        case AX_BOOL: ((uint8_t *)buf)[i] = (uint8_t)(r >> 63); break;
        case AX_I8: ((int8_t *)buf)[i] = (int8_t)v; break;
        case AX_I16: ((int16_t *)buf)[i] = (int16_t)v; break;
        case AX_I32: ((int32_t *)buf)[i] = (int32_t)v; break;
        case AX_I64: ((int64_t *)buf)[i] = v; break;
        case AX_U8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
        case AX_U16: ((uint16_t *)buf)[i] = (uint16_t)v; break;
        case AX_U32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
        case AX_U64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
        case AX_F32: ((float *)buf)[i] = (float)f; break;
        case AX_F64: ((double *)buf)[i] = f; break;
        default: break;
        }
    }
}

ax_acc input_n(ax_ctx *cx, int n, const ax_scalar *ss, int rank, const int64_t *sh, uint64_t seed, int range)
{
    int64_t size = shape_size(rank, sh);
    void *bufs[8];
    const ax_type *ts[8];
    for (int k = 0; k < n; k++) {
        bufs[k] = calloc((size_t)(size > 0 ? size : 1), 8);
        fill(bufs[k], ss[k], size, seed * 31 + (uint64_t)k, range);
        ts[k] = ax_type_scalar(ss[k]);
    }
    const ax_type *t = n == 1 ? ts[0] : ax_type_tuple(cx, n, ts);
    ax_array *a = ax_array_from_n(cx, t, rank, sh, (const void *const *)bufs);
    for (int k = 0; k < n; k++) free(bufs[k]);
    ax_acc r = a ? ax_use(cx, a) : NULL;
    ax_array_release(a);
    return r;
}

ax_acc input(ax_ctx *cx, ax_scalar s, int rank, const int64_t *sh, uint64_t seed, int range)
{
    return input_n(cx, 1, &s, rank, sh, seed, range);
}

ax_acc use_data(ax_ctx *cx, ax_scalar s, int rank, const int64_t *sh, const void *data)
{
    static const uint64_t dummy[2];
    ax_array *a = ax_array_from(cx, s, rank, sh, data ? data : (const void *)dummy);
    if (!a) {
        harness_failed_checks++;
        fprintf(stderr, "ax_array_from failed: %s\n", ax_error(cx));
        return NULL;
    }
    ax_acc r = ax_use(cx, a);
    ax_array_release(a);
    return r;
}

ax_acc use_tuple(ax_ctx *cx, const ax_type *t, int rank, const int64_t *sh, const void *const *bufs)
{
    ax_array *a = ax_array_from_n(cx, t, rank, sh, bufs);
    if (!a) {
        harness_failed_checks++;
        fprintf(stderr, "ax_array_from_n failed: %s\n", ax_error(cx));
        return NULL;
    }
    ax_acc r = ax_use(cx, a);
    ax_array_release(a);
    return r;
}

const ax_type *tup_t(ax_ctx *cx, int n, const ax_scalar *ss)
{
    const ax_type *ts[8];
    for (int i = 0; i < n; i++) ts[i] = ax_type_scalar(ss[i]);
    return ax_type_tuple(cx, n, ts);
}

void fill_tricky(ax_scalar s, void *buf)
{
    if (s == AX_BOOL) {
        static const uint8_t b[9] = {0, 1, 1, 0, 1, 0, 0, 1, 1};
        memcpy(buf, b, 9);
    } else if (s == AX_F32) {
        uint32_t nanbits = 0x7fc12345u;
        float nan_payload;
        memcpy(&nan_payload, &nanbits, 4);
        const float f[9] = {0.0f, -0.0f, 1.5f, -INFINITY, INFINITY, nan_payload, FLT_MIN / 4, FLT_MAX,
                            -FLT_TRUE_MIN};
        memcpy(buf, f, sizeof f);
    } else if (s == AX_F64) {
        uint64_t nanbits = UINT64_C(0xfff8000000abcdef);
        double nan_payload;
        memcpy(&nan_payload, &nanbits, 8);
        const double d[9] = {0.0, -0.0, -2.75, INFINITY, -INFINITY, nan_payload, DBL_MIN / 8, -DBL_MAX,
                             DBL_TRUE_MIN};
        memcpy(buf, d, sizeof d);
    } else {
        const int64_t v[9] = {0, 1, -1, type_min(s), type_max(s), 42, -42, type_min(s) + 1, type_max(s) - 1};
        for (int k = 0; k < 9; k++) st_i(buf, s, k, norm_i(s, (uint64_t)v[k]));
    }
}

ax_exp read_at(ax_exp ix, void *env) { return ax_at(acc_of(env), ix); }

int64_t *alloc_i64(int64_t n) { return calloc((size_t)(n ? n : 1), sizeof(int64_t)); }
double *alloc_f64(int64_t n) { return calloc((size_t)(n ? n : 1), sizeof(double)); }

/* ================================================================ scalar types */

int64_t norm_i(ax_scalar s, uint64_t v)
{
    if (s == AX_BOOL) return v != 0;
    int w = sc_bits_(s);
    if (w == 64) return (int64_t)v;
    uint64_t m = (UINT64_C(1) << w) - 1;
    v &= m;
    if (sc_signed_(s) && ((v >> (w - 1)) & 1)) v |= ~m;
    return (int64_t)v;
}

int64_t type_min(ax_scalar s)
{
    return sc_signed_(s) ? (int64_t)(~UINT64_C(0) << (sc_bits_(s) - 1)) : 0;
}

int64_t type_max(ax_scalar s)
{
    int w = sc_bits_(s);
    if (sc_signed_(s)) return (int64_t)((UINT64_C(1) << (w - 1)) - 1);
    return w == 64 ? -1 : (int64_t)((UINT64_C(1) << w) - 1);
}

int64_t ld_i(const void *p, ax_scalar s, int64_t k)
{
    switch (s) {
    case AX_BOOL: return ((const uint8_t *)p)[k];
    case AX_I8: return ((const int8_t *)p)[k];
    case AX_I16: return ((const int16_t *)p)[k];
    case AX_I32: return ((const int32_t *)p)[k];
    case AX_I64: return ((const int64_t *)p)[k];
    case AX_U8: return ((const uint8_t *)p)[k];
    case AX_U16: return ((const uint16_t *)p)[k];
    case AX_U32: return ((const uint32_t *)p)[k];
    case AX_U64: return (int64_t)((const uint64_t *)p)[k];
    case AX_F32: return (int64_t)((const float *)p)[k];
    case AX_F64: return (int64_t)((const double *)p)[k];
    default: return 0;
    }
}

double ld_f(const void *p, ax_scalar s, int64_t k)
{
    switch (s) {
    case AX_F32: return ((const float *)p)[k];
    case AX_F64: return ((const double *)p)[k];
    case AX_U64: return (double)((const uint64_t *)p)[k];
    default: return (double)ld_i(p, s, k);
    }
}

void st_i(void *p, ax_scalar s, int64_t k, int64_t v)
{
    switch (s) {
    case AX_BOOL: ((uint8_t *)p)[k] = v != 0; break;
    case AX_I8: ((int8_t *)p)[k] = (int8_t)v; break;
    case AX_I16: ((int16_t *)p)[k] = (int16_t)v; break;
    case AX_I32: ((int32_t *)p)[k] = (int32_t)v; break;
    case AX_I64: ((int64_t *)p)[k] = v; break;
    case AX_U8: ((uint8_t *)p)[k] = (uint8_t)v; break;
    case AX_U16: ((uint16_t *)p)[k] = (uint16_t)v; break;
    case AX_U32: ((uint32_t *)p)[k] = (uint32_t)v; break;
    case AX_U64: ((uint64_t *)p)[k] = (uint64_t)v; break;
    case AX_F32: ((float *)p)[k] = (float)v; break;
    case AX_F64: ((double *)p)[k] = (double)v; break;
    default: break;
    }
}

void st_f(void *p, ax_scalar s, int64_t k, double v)
{
    if (s == AX_F32) ((float *)p)[k] = (float)v;
    else if (s == AX_F64) ((double *)p)[k] = v;
    else st_i(p, s, k, (int64_t)v);
}

/* ================================================================ checks */

bool shape_is(const char *file, int line, const ax_array *r, int rank, const int64_t *sh)
{
    if (!r) return false;
    bool ok = ax_array_rank(r) == rank;
    for (int d = 0; ok && d < rank; d++) ok = ax_array_extent(r, d) == sh[d];
    if (!ok) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: shape mismatch: got rank %d {", file, line, ax_array_rank(r));
        for (int d = 0; d < ax_array_rank(r); d++)
            fprintf(stderr, "%s%lld", d ? "," : "", (long long)ax_array_extent(r, d));
        fprintf(stderr, "}, want rank %d {", rank);
        for (int d = 0; d < rank; d++) fprintf(stderr, "%s%lld", d ? "," : "", (long long)sh[d]);
        fprintf(stderr, "}\n");
    }
    return ok;
}

void chk_init(Chk *c, const char *file, int line, const char *fmt, ...)
{
    c->file = file;
    c->line = line;
    c->bad = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->what, sizeof c->what, fmt, ap);
    va_end(ap);
}

void chk_i(Chk *c, int64_t k, int64_t got, int64_t want)
{
    if (got == want) return;
    if (c->bad++ < 6)
        fprintf(stderr, "%s:%d: %s: [%lld] got %lld, want %lld\n", c->file, c->line, c->what, (long long)k,
                (long long)got, (long long)want);
}

void chk_f(Chk *c, int64_t k, double got, double want, double rel)
{
    if (harness_close(got, want, rel)) return;
    if (c->bad++ < 6)
        fprintf(stderr, "%s:%d: %s: [%lld] got %.17g, want %.17g\n", c->file, c->line, c->what, (long long)k,
                got, want);
}

void chk_true(Chk *c, bool ok, const char *msg)
{
    if (ok) return;
    if (c->bad++ < 6) fprintf(stderr, "%s:%d: %s: %s\n", c->file, c->line, c->what, msg);
}

bool chk_done(Chk *c)
{
    if (!c->bad) return true;
    harness_failed_checks++;
    fprintf(stderr, "%s:%d: %s: %lld mismatches\n", c->file, c->line, c->what, (long long)c->bad);
    return false;
}

void chk_arr_i(Chk *c, const ax_array *r, int comp, const int64_t *want, int64_t n)
{
    if (!r) { chk_true(c, false, "no result"); return; }
    if (ax_array_size(r) != n) {
        chk_i(c, -1, ax_array_size(r), n);
        return;
    }
    const void *p = ax_array_data(r, comp);
    ax_scalar s = ax_array_component_type(r, comp);
    for (int64_t k = 0; k < n; k++) chk_i(c, k, ld_i(p, s, k), want[k]);
}

void chk_arr_f(Chk *c, const ax_array *r, int comp, const double *want, int64_t n, double rel)
{
    if (!r) { chk_true(c, false, "no result"); return; }
    if (ax_array_size(r) != n) {
        chk_i(c, -1, ax_array_size(r), n);
        return;
    }
    const void *p = ax_array_data(r, comp);
    ax_scalar s = ax_array_component_type(r, comp);
    for (int64_t k = 0; k < n; k++) chk_f(c, k, ld_f(p, s, k), want[k], rel);
}

void chk_buf(Chk *c, ax_scalar s, const void *got, const void *want, int64_t n, bool bits)
{
    for (int64_t k = 0; k < n; k++) {
        if (sc_float_(s)) {
            double g = ld_f(got, s, k), w = ld_f(want, s, k);
            bool ok = (isnan(g) && isnan(w)) || (g == w && (!bits || signbit(g) == signbit(w)));
            if (!ok && c->bad++ < 6)
                fprintf(stderr, "%s:%d: %s: [%lld] got %.17g, want %.17g\n", c->file, c->line, c->what,
                        (long long)k, g, w);
        } else {
            chk_i(c, k, ld_i(got, s, k), ld_i(want, s, k));
        }
    }
}

void expect_fail(const char *file, int line, ax_ctx *cx, ax_acc a, ax_status st)
{
    if (op_collecting()) return;
    ax_array *r = ax_run(cx, a);
    if (r) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: ax_run succeeded where it should fail with status %d\n", file, line, (int)st);
        ax_array_release(r);
        return;
    }
    if (ax_status_of(cx) != st) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: ax_run failed with status %d (want %d): %s\n", file, line,
                (int)ax_status_of(cx), (int)st, ax_error(cx));
    }
    /* usable again */
    int64_t v = 5;
    ax_array *ok = ax_run(cx, ax_map(ax_fn_neg, NULL, use_data(cx, AX_I64, 1, SH(1), &v)));
    if (!ok || ((int64_t *)ax_array_data(ok, 0))[0] != -5) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: the context does not work after a failure: %s\n", file, line, ax_error(cx));
    }
    ax_array_release(ok);
}

bool equal(const char *what, const ax_array *a, const ax_array *b, double rel)
{
    char t1[128], t2[128];
    if (!ax_type_equal(ax_array_type(a), ax_array_type(b)) || ax_array_rank(a) != ax_array_rank(b)) {
        fprintf(stderr, "%s: types differ: %s^%d vs %s^%d\n", what, ax_type_str(ax_array_type(a), t1, sizeof t1),
                ax_array_rank(a), ax_type_str(ax_array_type(b), t2, sizeof t2), ax_array_rank(b));
        return false;
    }
    for (int d = 0; d < ax_array_rank(a); d++)
        if (ax_array_extent(a, d) != ax_array_extent(b, d)) {
            fprintf(stderr, "%s: extent %d differs: %lld vs %lld\n", what, d, (long long)ax_array_extent(a, d),
                    (long long)ax_array_extent(b, d));
            return false;
        }
    int64_t n = ax_array_size(a);
    for (int c = 0; c < ax_array_components(a); c++) {
        ax_scalar s = ax_array_component_type(a, c);
        const char *p = ax_array_data(a, c), *q = ax_array_data(b, c);
        size_t sz = ax_scalar_size(s);
        for (int64_t i = 0; i < n; i++) {
            bool ok;
            double x = 0, y = 0;
            if (s == AX_F32) {
                x = ((const float *)p)[i];
                y = ((const float *)q)[i];
                ok = rel > 0 ? harness_close(x, y, rel) : !memcmp(p + i * 4, q + i * 4, 4) || (x == y);
            } else if (s == AX_F64) {
                x = ((const double *)p)[i];
                y = ((const double *)q)[i];
                ok = rel > 0 ? harness_close(x, y, rel) : !memcmp(p + i * 8, q + i * 8, 8) || (x == y);
            } else if (s == AX_BOOL) {
                ok = (p[i] != 0) == (q[i] != 0);
            } else {
                ok = !memcmp(p + (size_t)i * sz, q + (size_t)i * sz, sz);
            }
            if (!ok) {
                int64_t xi = 0, yi = 0;
                if (s != AX_F32 && s != AX_F64) {
                    memcpy(&xi, p + (size_t)i * sz, sz);
                    memcpy(&yi, q + (size_t)i * sz, sz);
                }
                fprintf(stderr, "%s: component %d element %lld differs: %.9g vs %.9g (bits %llx vs %llx)\n", what, c,
                        (long long)i, x, y, (unsigned long long)xi, (unsigned long long)yi);
                return false;
            }
        }
    }
    return true;
}

/* ================================================================ against the interpreter */

/* The contexts of a test's SAMEs on its current backend: kept from one
 * SAME to the next (each ends with ax_ctx_reset), so that a program built
 * again on other shapes or data reuses its compilation (the context's
 * program memory); freed when the test's run on the backend ends. */
static ax_ctx *same_ci, *same_cc;

static void same_free(void)
{
    ax_ctx_free(same_ci);
    ax_ctx_free(same_cc);
    same_ci = same_cc = NULL;
}

void same_(const char *file, int line, const Be *be, const char *what, Build b, const void *env, double rel)
{
    if (!same_ci) same_ci = kind_ctx(AX_BACKEND_INTERP, false);
    if (!same_cc) same_cc = be_ctx(be);
    ax_ctx *ci = same_ci, *cc = same_cc;
    ax_array *ri[8] = {0}, *rc[8] = {0};
    int ni = ax_run_n(ci, b(ci, env), ri, 8);
    ax_program *pr = ax_compile(cc, b(cc, env));
    int nc = pr ? ax_program_run(pr, rc, 8) : -1;
    if (be->gpu) harness_nvrtc_check(cc, b(cc, env), what, true);
    if (pr) {
        const ax_stats *st = ax_program_stats(pr);
        if (strcmp(st->backend, be->name)) {
            harness_failed_checks++;
            fprintf(stderr, "%s:%d: %s: ran on %s\n", file, line, what, st->backend);
        }
    }
    ax_program_free(pr);
    if (ni != nc || ni < 0) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: %s: interp %d results (%s), %s %d (%s)\n", file, line, what, ni,
                ni < 0 ? ax_error(ci) : "ok", be->name, nc, nc < 0 ? ax_error(cc) : "ok");
    } else {
        for (int k = 0; k < ni; k++)
            if (!equal(what, ri[k], rc[k], rel)) {
                harness_failed_checks++;
                fprintf(stderr, "%s:%d: %s: result %d differs\n", file, line, what, k);
            }
    }
    for (int k = 0; k < 8; k++) {
        if (ni > k) ax_array_release(ri[k]);
        if (nc > k) ax_array_release(rc[k]);
    }
    ax_clear_error(ci);
    ax_clear_error(cc);
    ax_ctx_reset(ci);
    ax_ctx_reset(cc);
}

ax_acc all_of(ax_ctx *cx, const void *env, Build b, int n, bool (*skip)(const void *env, int w))
{
    ax_acc v[32];
    int k = 0;
    for (int w = 0; w < n && k < 32; w++) {
        if (skip && skip(env, w)) continue;
        Env e = *(const Env *)env;
        e.which = w;
        v[k++] = b(cx, &e);
    }
    return k == 1 ? v[0] : ax_atuple(k, v);
}

const Shp shapes[] = {
    {1, {0}}, {1, {1}}, {1, {1001}}, {1, {100003}},
    {2, {0, 7}}, {2, {5, 0}}, {2, {1, 1}}, {2, {3, 40001}}, {2, {1001, 37}},
    {3, {2, 2, 40001}}, {3, {7, 0, 3}}, {3, {13, 11, 9}},
    /* GPU backends also: a group's width (256) and a tile's, +-1; rows of
     * a team's width and a few tiles; many rows of a short team */
    {1, {255}}, {1, {256}}, {1, {257}}, {1, {4097}}, {2, {3, 257}}, {2, {257, 9}}, {2, {2, 2049}},
};
#define NSHAPES_CPU 12

int nshapes(const Be *be) { return be->gpu ? (int)NELEM(shapes) : NSHAPES_CPU; }

bool skip_shape(int s)
{
    return ops_small() && shape_size(shapes[s].rank, shapes[s].sh) > 5000;
}

/* ================================================================ reductions' operands */

/* Affine maps x -> a*x + b over u64 (wrapping: arithmetic mod 2^64 keeps
 * composition exactly associative); (a,b).(c,d) = (a*c, a*d + b) is
 * associative and not commutative. */
Aff aff_compose(Aff x, Aff y) { Aff r = {x.a * y.a, x.a * y.b + x.b}; return r; }
Aff aff_add(Aff x, Aff y) { Aff r = {x.a + y.a, 0}; return r; }   /* plain sums in .a */
Aff aff_val(int64_t k) { Aff r = {2 * (uint64_t)k + 1 + (uint64_t)(k % 5) * 1000003u, (uint64_t)val_of(k)}; return r; }

ax_exp aff_op(ax_exp x, ax_exp y, void *env)
{
    ax_exp a = ax_get(x, 0), b = ax_get(x, 1), c = ax_get(y, 0), d = ax_get(y, 1);
    return ax_tuple2(ax_mul(a, c), ax_add(ax_mul(a, d), b));
}

void red_in(ax_ctx *cx, RedIn *in, int rank, const int64_t *sh)
{
    in->rank = rank;
    in->sh = sh;
    in->n = shape_size(rank, sh);
    in->inner = rank ? sh[rank - 1] : 1;
    in->rows = rank ? shape_size(rank - 1, sh) : 1;
    in->v = calloc((size_t)in->n + 1, sizeof *in->v);
    in->va = calloc((size_t)in->n + 1, sizeof *in->va);
    in->vb = calloc((size_t)in->n + 1, sizeof *in->vb);
    for (int64_t k = 0; k < in->n; k++) {
        in->v[k] = aff_val(k);
        in->va[k] = in->v[k].a;
        in->vb[k] = in->v[k].b;
    }
    const void *bufs[2] = {in->va, in->vb};
    in->aff = use_tuple(cx, TUP(cx, AX_U64, AX_U64), rank, sh, bufs);
    in->sum = use_data(cx, AX_I64, rank, sh, in->va);
}

void red_free(RedIn *in)
{
    free(in->v);
    free(in->va);
    free(in->vb);
}

const Aff aff_z = {3, 5};
ax_exp aff_z_exp(void) { return ax_tuple2(ax_u64(aff_z.a), ax_u64(aff_z.b)); }
const Aff sum_z = {100, 0};

/* Checks a result against Aff expectations: for the affine operator both
 * components, for sums the i64 component. */
void chk_aff(Chk *c, const ax_array *r, bool affine, const Aff *want, int64_t n)
{
    if (!r) { chk_true(c, false, "no result"); return; }
    if (ax_array_size(r) != n) { chk_i(c, -1, ax_array_size(r), n); return; }
    for (int64_t k = 0; k < n; k++) {
        chk_i(c, k, ld_i(ax_array_data(r, 0), ax_array_component_type(r, 0), k), (int64_t)want[k].a);
        if (affine) chk_i(c, k, ld_i(ax_array_data(r, 1), ax_array_component_type(r, 1), k), (int64_t)want[k].b);
    }
}


/* Non-commutative associative operators on i32 tuples: affine maps
 * (apply x then y: v -> a v + b) and 2x2 matrix products. */
ax_exp op_aff(ax_exp x, ax_exp y, void *env)
{
    return ax_tuple2(ax_mul(ax_get(x, 0), ax_get(y, 0)), ax_add(ax_mul(ax_get(x, 1), ax_get(y, 0)), ax_get(y, 1)));
}

ax_exp op_mat(ax_exp x, ax_exp y, void *env)
{
    ax_exp a = ax_get(x, 0), b = ax_get(x, 1), c = ax_get(x, 2), d = ax_get(x, 3);
    ax_exp e = ax_get(y, 0), f = ax_get(y, 1), g = ax_get(y, 2), h = ax_get(y, 3);
    return ax_tuple4(ax_add(ax_mul(a, e), ax_mul(b, g)), ax_add(ax_mul(a, f), ax_mul(b, h)),
                     ax_add(ax_mul(c, e), ax_mul(d, g)), ax_add(ax_mul(c, f), ax_mul(d, h)));
}

/* ================================================================ shared programs */

static ax_exp ix_i32(ax_exp ix, void *env) { (void)env; return ax_cvt(ax_index_get(ix, 0), AX_I32); }
static ax_exp passes_at(ax_exp i, void *env) { return ax_gt(ax_at_linear((ax_acc)env, ax_cvt(i, AX_I64)), ax_i32(1)); }

ax_acc ops_filter_indices(ax_ctx *cx, int64_t n, int64_t extra)
{
    int64_t m = n + extra;
    ax_acc a = input(cx, AX_I32, 1, &m, 150, 4);
    return ax_filter(passes_at, a, ax_generate(cx, ax_ix1(ax_i64(n)), ix_i32, NULL));
}

ax_exp ops_shift(ax_exp ix, void *env) { return ax_ix1(ax_add(ax_index_get(ix, 0), ax_i64((intptr_t)env))); }
static ax_exp g_at_bad(ax_exp ix, void *env)
{
    return ax_at((ax_acc)env, ax_ix1(ax_mul(ax_index_get(ix, 0), ax_i64(2))));
}
static ax_exp f_div0(ax_exp x, void *env) { (void)env; return ax_quot(ax_i32(100), x); }

/* x plus the element at constant position 3 of env's array (a scalar
 * parameter read inside the loop), or at constant index (1, 2). */
static ax_exp f_at_const(ax_exp x, void *env) { return ax_add(x, ax_at_linear(*(ax_acc *)env, ax_i64(3))); }
static ax_exp f_at_const2(ax_exp x, void *env) { return ax_add(x, ax_at(*(ax_acc *)env, ax_ix2(ax_i64(1), ax_i64(2)))); }

ax_acc ops_fault(ax_ctx *cx, int which)
{
    ax_acc v;   /* (the builder calls f_at_const* before it returns) */
    ax_acc a = input(cx, AX_I32, 1, SH(100000), 140, 5);
    switch (which) {
    case 0: return ax_backpermute(ax_ix1(ax_i64(100000)), ops_shift, (void *)(intptr_t)1, a);
    case 1: return ax_generate(cx, ax_ix1(ax_i64(60000)), g_at_bad, a);
    case 2: return ax_permute(ax_fn_add, NULL, input(cx, AX_I32, 1, SH(50000), 141, 0), ops_shift, (void *)(intptr_t)3, a);
    case 3: return ax_map(f_div0, NULL, ax_map(ax_fn_abs, NULL, a));
    case 4: return ops_filter_indices(cx, 100000, -40000);
    case 5: v = input(cx, AX_I32, 1, SH(3), 142, 5); return ax_map(f_at_const, &v, a);
    case 6: v = input(cx, AX_I32, 2, SH(2, 2), 143, 5); return ax_map(f_at_const2, &v, a);
    default: return NULL;
    }
}

static ax_exp ws_cond(ax_exp v, void *env) { return ax_lt(ax_get(v, 2), ax_get(v, 3)); }
static ax_exp ws_body(ax_exp v, void *env)
{
    return ax_tuple4(ax_get(v, 1), ax_add(ax_get(v, 0), ax_get(v, 1)), ax_add(ax_get(v, 2), ax_i32(1)), ax_get(v, 3));
}
static ax_exp wd_cond(ax_exp v, void *env) { return ax_gt(ax_get(v, 0), ax_f64(1)); }
static ax_exp wd_body(ax_exp v, void *env) { return ax_tuple2(ax_mul(ax_get(v, 0), ax_f64(0.75)), ax_add(ax_get(v, 1), ax_u8(1))); }
static ax_exp wb_cond(ax_exp v, void *env) { return ax_ne(ax_get(v, 0), ax_u8(0)); }
static ax_exp wb_body(ax_exp v, void *env) { return ax_tuple2(ax_shr(ax_get(v, 0), ax_u8(1)), ax_add(ax_get(v, 1), ax_u8(1))); }

ax_exp ops_lanes(ax_exp x, void *env)
{
    (void)env;
    ax_exp k = ax_cvt(ax_abs(x), AX_I32);
    ax_exp fib = ax_while(ws_cond, ws_body, NULL, ax_tuple4(ax_f32(0), ax_f32(1), ax_i32(0), ax_sub(k, ax_i32(7))));
    ax_exp d = ax_while(wd_cond, wd_body, NULL, ax_tuple2(ax_mul(ax_cvt(x, AX_F64), ax_cvt(ax_get(fib, 1), AX_F64)), ax_u8(0)));
    ax_exp b = ax_while(wb_cond, wb_body, NULL, ax_tuple2(ax_cvt(k, AX_U8), ax_u8(0)));
    /* (a loop in a branch of a condition keeps a kernel out of lane blocks) */
    ax_exp pick = ax_mul(ax_cond(ax_gt(ax_get(b, 1), ax_u8(3)), ax_f64(1), ax_f64(-1)), ax_get(d, 0));
    return ax_tuple3(ax_get(fib, 0), pick, ax_add(ax_get(d, 1), ax_get(b, 1)));
}
ax_exp ops_lanes_at(ax_exp ix, void *env)
{
    ax_exp i = ax_index_get(ix, 0);
    return ops_lanes(ax_cvt(ax_sub(ax_band(i, ax_i64(63)), ax_i64(30)), AX_F32), env);
}

/*
 * Sparse-matrix vector multiplication (paper s.5.9, Table 3) in compressed
 * row form, written as the Accelerate program is:
 *
 *   type SparseMatrix a = (Segments Int, Vector (Int, a))
 *
 *   smvm (segd, svec) vec = foldSeg (+) 0 products segd
 *     where (inds, vals) = unzip svec
 *           vecVals      = gather inds vec   -- backpermute by column index
 *           products     = zipWith (*) vecVals vals
 *
 * With fusion the whole program is one segmented reduction reading the
 * matrix once (paper s.5.9); without it the gathered vector and the
 * products are two intermediate arrays as long as the matrix.
 *
 * The inputs are either a random matrix (ex_csr_random) or a real one
 * from a Matrix Market file (ex_mm_read), such as the 14 matrices of
 * Table 3, named by AXLE_SMVM_MATRIX (or `axle bench --matrix FILE`).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "smvm.h"
#include "baseline_smvm.h"
#include <dlfcn.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ the program */

static ax_exp fst(ax_exp x, void *env) { (void)env; return ax_get(x, 0); }
static ax_exp snd(ax_exp x, void *env) { (void)env; return ax_get(x, 1); }

/* gather inds vec = backpermute (shape inds) (\i -> index1 (inds!i)) vec */
static ax_exp by_index(ax_exp ix, void *env) { return ax_ix1(ax_at(*(ax_acc *)env, ix)); }

static ax_acc gather(ax_acc inds, ax_acc vec)
{
    /* axle calls by_index while ax_backpermute builds (HOAS), so a pointer
     * to the parameter is enough. */
    return ax_backpermute(ax_shape(inds), by_index, &inds, vec);
}

ax_acc ex_smvm(ax_acc segd, ax_acc svec, ax_acc vec)
{
    ax_acc inds = ax_map(fst, NULL, svec), vals = ax_map(snd, NULL, svec);
    ax_acc vecVals = gather(inds, vec);
    ax_acc products = ax_zip_with(ax_fn_mul, NULL, vecVals, vals);
    return ax_fold_seg(ax_fn_add, NULL, ax_f32(0), products, segd);
}

/* ------------------------------------------------------------ matrices */

void ex_csr_free(ex_csr *m)
{
    if (!m) return;
    free(m->segd);
    free(m->rowptr);
    free(m->col);
    free(m->val);
    memset(m, 0, sizeof *m);
}

/* Allocates the arrays of a rows x cols matrix with nnz entries (at least
 * one element each, so that empty matrices still have buffers to wrap). */
static int csr_alloc(ex_csr *m, int64_t rows, int64_t cols, int64_t nnz)
{
    memset(m, 0, sizeof *m);
    m->rows = rows;
    m->cols = cols;
    m->nnz = nnz;
    m->segd = malloc(sizeof *m->segd * (size_t)(rows ? rows : 1));
    m->rowptr = malloc(sizeof *m->rowptr * (size_t)(rows + 1));
    m->col = malloc(sizeof *m->col * (size_t)(nnz ? nnz : 1));
    m->val = malloc(sizeof *m->val * (size_t)(nnz ? nnz : 1));
    if (!m->segd || !m->rowptr || !m->col || !m->val) {
        ex_csr_free(m);
        return -1;
    }
    return 0;
}

int ex_csr_random(ex_csr *m, int64_t rows, int avg_per_row, uint64_t seed)
{
    if (rows < 0 || rows > INT32_MAX || avg_per_row < 0) return -1;
    ex_rng g = {seed | 1};
    /* Row lengths first, to size the arrays. */
    int32_t *len = malloc(sizeof *len * (size_t)(rows ? rows : 1));
    if (!len) return -1;
    int64_t nnz = 0;
    for (int64_t r = 0; r < rows; r++) {
        len[r] = (int32_t)(ex_next(&g) % (uint64_t)(2 * avg_per_row + 1));
        nnz += len[r];
    }
    if (csr_alloc(m, rows, rows, nnz) != 0) {
        free(len);
        return -1;
    }
    m->rowptr[0] = 0;
    for (int64_t r = 0; r < rows; r++) {
        m->segd[r] = len[r];
        m->rowptr[r + 1] = m->rowptr[r] + len[r];
        int32_t *c = m->col + m->rowptr[r];
        /* Random columns, sorted by insertion (rows are short). */
        for (int32_t k = 0; k < len[r]; k++) {
            int32_t j = (int32_t)(ex_next(&g) % (uint64_t)rows), at = k;
            for (; at > 0 && c[at - 1] > j; at--) c[at] = c[at - 1];
            c[at] = j;
            m->val[m->rowptr[r] + k] = (float)ex_uniform(&g, -1, 1);
        }
    }
    free(len);
    return 0;
}

/* --- Matrix Market (https://math.nist.gov/MatrixMarket/formats.html) */

typedef struct {
    FILE *f;
    const char *path;
    char *line;
    size_t cap;
    int64_t lineno;
    char *msg;
    size_t size;
} Reader;

static int rd_fail(Reader *rd, const char *what)
{
    snprintf(rd->msg, rd->size, "%s:%lld: %s", rd->path, (long long)rd->lineno, what);
    return -1;
}

/* The next line that is neither a comment nor blank; 0 at the end. */
static int next_data_line(Reader *rd)
{
    while (getline(&rd->line, &rd->cap, rd->f) >= 0) {
        rd->lineno++;
        const char *s = rd->line;
        while (isspace((unsigned char)*s)) s++;
        if (*s && *s != '%') return 1;
    }
    return 0;
}

int ex_mm_read(const char *path, ex_csr *m, char *msg, size_t size)
{
    /* axle's own default memory limit: half of physical memory */
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    int64_t limit = pages > 0 && psize > 0 ? (int64_t)pages * psize / 2 : INT64_MAX;
    return ex_mm_read_limit(path, m, limit, msg, size);
}

/* The bytes the reader allocates for a matrix of M x N with cap stored
 * entries (the triples, the sort's order and counts, the CSR arrays), or
 * -1 if that overflows. */
static int64_t mm_bytes(int64_t M, int64_t N, int64_t cap)
{
    double b = (double)cap * (4 + 4 + 4 + 8 + 4 + 4)          /* ri ci v, order, col val */
             + ((double)(M > N ? M : N) + 2) * 8               /* count */
             + (double)M * 4 + ((double)M + 1) * 8;            /* segd, rowptr */
    return b < 9e18 ? (int64_t)b : -1;
}

int ex_mm_read_limit(const char *path, ex_csr *m, int64_t max_bytes, char *msg, size_t size)
{
    memset(m, 0, sizeof *m);
    Reader rd = {NULL, path, NULL, 0, 0, msg, size};
    int32_t *ri = NULL, *ci = NULL;
    float *v = NULL;
    int64_t *order = NULL, *count = NULL;
    int rc = -1;
    if (!(rd.f = fopen(path, "r"))) {
        snprintf(msg, size, "%s: %s", path, strerror(errno));
        return -1;
    }
    /* The banner: %%MatrixMarket matrix coordinate FIELD SYMMETRY */
    char banner[64] = "", object[64] = "", format[64] = "", field[64] = "", symmetry[64] = "";
    rd.lineno = 1;
    if (getline(&rd.line, &rd.cap, rd.f) < 0 ||
        sscanf(rd.line, "%63s %63s %63s %63s %63s", banner, object, format, field, symmetry) != 5 ||
        strcasecmp(banner, "%%MatrixMarket") != 0) {
        rd_fail(&rd, "not a Matrix Market file (expected \"%%MatrixMarket matrix coordinate ...\")");
        goto out;
    }
    bool pattern = !strcasecmp(field, "pattern"), integer = !strcasecmp(field, "integer");
    bool symmetric = !strcasecmp(symmetry, "symmetric"), skew = !strcasecmp(symmetry, "skew-symmetric");
    if (strcasecmp(object, "matrix") || strcasecmp(format, "coordinate")) {
        rd_fail(&rd, "only sparse matrices (\"matrix coordinate\") are supported");
        goto out;
    }
    if (!pattern && !integer && strcasecmp(field, "real")) {
        rd_fail(&rd, "unsupported field (real, integer and pattern are supported)");
        goto out;
    }
    if (!symmetric && !skew && strcasecmp(symmetry, "general")) {
        rd_fail(&rd, "unsupported symmetry (general, symmetric and skew-symmetric are supported)");
        goto out;
    }
    /* The size line: rows, columns, entries. */
    long long M, N, NZ;
    char extra;
    if (!next_data_line(&rd) || sscanf(rd.line, "%lld %lld %lld %c", &M, &N, &NZ, &extra) != 3) {
        rd_fail(&rd, "expected the size line \"rows columns entries\"");
        goto out;
    }
    if (M < 0 || N < 0 || NZ < 0 || M > INT32_MAX || N > INT32_MAX || NZ > INT64_MAX / 4) {
        rd_fail(&rd, "sizes out of range (rows and columns up to 2^31-1)");
        goto out;
    }
    if ((symmetric || skew) && M != N) {
        rd_fail(&rd, "a symmetric matrix must be square");
        goto out;
    }
    /* The header is checked against the file before anything is sized
     * from it: each entry takes at least "i j\n" (4 bytes), or "i j v\n"
     * (6) with a value, so a small file cannot claim billions. */
    {
        struct stat fs;
        long here = ftell(rd.f);
        int64_t left = !fstat(fileno(rd.f), &fs) && S_ISREG(fs.st_mode) && here >= 0 ? (int64_t)fs.st_size - here
                                                                                     : INT64_MAX;
        int64_t most = left == INT64_MAX ? INT64_MAX : (left + 1) / (pattern ? 4 : 6);
        if (NZ > most) {
            char what[200];
            snprintf(what, sizeof what, "the header announces %lld entries, but the rest of the file (%lld bytes) "
                     "holds at most %lld", NZ, (long long)left, (long long)most);
            rd_fail(&rd, what);
            goto out;
        }
    }
    int64_t cap = (symmetric || skew) ? 2 * NZ : NZ, n = 0;
    int64_t need = mm_bytes(M, N, cap);
    if (need < 0 || need > max_bytes) {
        char what[200];
        snprintf(what, sizeof what, "a %lld x %lld matrix of %lld entries needs %lld bytes, over the memory limit "
                 "(%lld bytes)", M, N, NZ, (long long)need, (long long)max_bytes);
        rd_fail(&rd, what);
        goto out;
    }
    ri = malloc(sizeof *ri * (size_t)(cap ? cap : 1));
    ci = malloc(sizeof *ci * (size_t)(cap ? cap : 1));
    v = malloc(sizeof *v * (size_t)(cap ? cap : 1));
    if (!ri || !ci || !v) {
        rd_fail(&rd, "out of memory");
        goto out;
    }
    for (int64_t e = 0; e < NZ; e++) {
        if (!next_data_line(&rd)) {
            char what[128];
            snprintf(what, sizeof what, "the file ends after %lld of %lld entries", (long long)e, NZ);
            rd_fail(&rd, what);
            goto out;
        }
        char *s = rd.line, *end;
        errno = 0;
        long long i = strtoll(s, &end, 10), j = (s = end, strtoll(s, &end, 10));
        bool ok = end != s && errno == 0;
        double x = 1;
        if (ok && !pattern) {
            s = end;
            x = integer ? (double)strtoll(s, &end, 10) : strtod(s, &end);
            ok = end != s && errno == 0;
        }
        if (!ok) {
            rd_fail(&rd, pattern ? "expected \"row column\"" : "expected \"row column value\"");
            goto out;
        }
        if (i < 1 || i > M || j < 1 || j > N) {
            rd_fail(&rd, "index out of range (indices are 1-based)");
            goto out;
        }
        if (!isfinite((float)x)) {
            /* NaN, an infinity, or out of f32's range: no product or sum
             * with it can be checked, and no real matrix holds one. */
            rd_fail(&rd, isnan(x) ? "the entry's value is NaN" : "the entry's value is not a finite f32");
            goto out;
        }
        if (skew && i == j) continue;   /* a skew-symmetric diagonal is zero */
        ri[n] = (int32_t)(i - 1), ci[n] = (int32_t)(j - 1), v[n] = (float)x, n++;
        if ((symmetric || skew) && i != j)
            ri[n] = (int32_t)(j - 1), ci[n] = (int32_t)(i - 1), v[n] = (float)(skew ? -x : x), n++;
    }
    /* To compressed rows, columns ascending within a row: a stable counting
     * sort by column, then one by row (O(entries + rows + columns)). */
    int64_t ncount = (M > N ? M : N) + 1;
    order = malloc(sizeof *order * (size_t)(n ? n : 1));
    count = calloc((size_t)ncount + 1, sizeof *count);
    if (!order || !count || csr_alloc(m, M, N, n) != 0) {
        rd_fail(&rd, "out of memory");
        goto out;
    }
    for (int64_t e = 0; e < n; e++) count[ci[e] + 1]++;
    for (int64_t c = 0; c < N; c++) count[c + 1] += count[c];
    for (int64_t e = 0; e < n; e++) order[count[ci[e]]++] = e;
    memset(m->rowptr, 0, sizeof *m->rowptr * (size_t)(M + 1));
    for (int64_t e = 0; e < n; e++) m->rowptr[ri[e] + 1]++;
    for (int64_t r = 0; r < M; r++) {
        m->segd[r] = (int32_t)m->rowptr[r + 1];
        m->rowptr[r + 1] += m->rowptr[r];
    }
    memcpy(count, m->rowptr, sizeof *count * (size_t)(M + 1));
    for (int64_t k = 0; k < n; k++) {
        int64_t e = order[k], at = count[ri[e]]++;
        m->col[at] = ci[e];
        m->val[at] = v[e];
    }
    rc = 0;
out:
    if (rc != 0) ex_csr_free(m);
    free(ri);
    free(ci);
    free(v);
    free(order);
    free(count);
    free(rd.line);
    fclose(rd.f);
    return rc;
}

/* ------------------------------------------------------------ the state */

enum { AVG_PER_ROW = 32 };

typedef struct {
    ex_csr m;
    float *x;               /* the dense vector (m.cols) */
    float *y;               /* the baseline's result (m.rows) */
    double *ref, *mag;      /* the reference and the sum of |a_ij x_j| per row */
    ax_array *segd, *svec, *vec;
} Smvm;

static void smvm_teardown(void *st)
{
    Smvm *s = st;
    if (!s) return;
    ax_array_release(s->segd);
    ax_array_release(s->svec);
    ax_array_release(s->vec);
    ex_csr_free(&s->m);
    free(s->x);
    free(s->y);
    free(s->ref);
    free(s->mag);
    free(s);
}

/* n is the number of rows of the random matrix; a Matrix Market file named
 * by AXLE_SMVM_MATRIX replaces it. */
static void *smvm_setup(ax_ctx *cx, int64_t n)
{
    Smvm *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    const char *file = getenv(EX_SMVM_MATRIX_ENV);
    char msg[512];
    if (file && *file) {
        if (ex_mm_read_limit(file, &s->m, ax_ctx_options(cx)->mem_limit, msg, sizeof msg) != 0) {
            fprintf(stderr, "axle: smvm: %s\n", msg);
            free(s);
            return NULL;
        }
    } else if (ex_csr_random(&s->m, n, AVG_PER_ROW, 0x6A09E667F3BCC909ull) != 0) {
        free(s);
        return NULL;
    }
    int64_t rows = s->m.rows, cols = s->m.cols, nnz = s->m.nnz;
    s->x = malloc(sizeof *s->x * (size_t)(cols ? cols : 1));
    if (!s->x) goto fail;
    ex_rng g = {0xBB67AE8584CAA73Bull};
    for (int64_t j = 0; j < cols; j++) s->x[j] = (float)ex_uniform(&g, -1, 1);
    const ax_type *ts[2] = {ax_type_scalar(AX_I32), ax_type_scalar(AX_F32)};
    void *bufs[2] = {s->m.col, s->m.val};
    s->segd = ax_array_wrap(cx, AX_I32, 1, &rows, s->m.segd);
    s->svec = ax_array_wrap_n(cx, ax_type_tuple(cx, 2, ts), 1, &nnz, bufs);
    s->vec = ax_array_wrap(cx, AX_F32, 1, &cols, s->x);
    if (!s->segd || !s->svec || !s->vec) goto fail;
    return s;
fail:
    smvm_teardown(s);
    return NULL;
}

static ax_acc smvm_build(ax_ctx *cx, void *st)
{
    Smvm *s = st;
    return ex_smvm(ax_use(cx, s->segd), ax_use(cx, s->svec), ax_use(cx, s->vec));
}

/* The f32 error bound of one row: whatever the order of summation, a row
 * of k products is within (k + 1) u sum |a_ij x_j| of the exact value
 * (u = 2^-24: k - 1 additions, one rounding per product); twice that is
 * allowed. */
static double row_tol(const Smvm *s, int64_t r)
{
    return (double)(s->m.segd[r] + 1) * 0x1p-23 * s->mag[r];
}

static int smvm_result(Smvm *s, ax_array *const *res, int nres, const float **got, char *msg, size_t size)
{
    if (nres != 1 || ax_array_rank(res[0]) != 1 || ax_array_size(res[0]) != s->m.rows ||
        ax_array_component_type(res[0], 0) != AX_F32) {
        snprintf(msg, size, "smvm: expected one f32 vector of %lld elements", (long long)s->m.rows);
        return -1;
    }
    *got = ax_array_data(res[0], 0);
    if (s->ref) return 0;
    /* The reference, in double, made on first use. */
    s->ref = malloc(sizeof *s->ref * (size_t)(s->m.rows ? s->m.rows : 1));
    s->mag = malloc(sizeof *s->mag * (size_t)(s->m.rows ? s->m.rows : 1));
    if (!s->ref || !s->mag) {
        free(s->ref), free(s->mag), s->ref = s->mag = NULL;
        snprintf(msg, size, "smvm: out of memory");
        return -1;
    }
    for (int64_t r = 0; r < s->m.rows; r++) {
        double y = 0, a = 0;
        for (int64_t k = s->m.rowptr[r]; k < s->m.rowptr[r + 1]; k++) {
            double p = (double)s->m.val[k] * s->x[s->m.col[k]];
            y += p;
            a += fabs(p);
        }
        s->ref[r] = y;
        s->mag[r] = a;
    }
    return 0;
}

static int smvm_check(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Smvm *s = st;
    const float *got;
    if (smvm_result(s, res, nres, &got, msg, size) != 0) return -1;
    for (int64_t r = 0; r < s->m.rows; r++)
        if (!(fabs(got[r] - s->ref[r]) <= row_tol(s, r))) {
            snprintf(msg, size, "smvm: row %lld: got %.9g, expected %.9g (tolerance %.3g)", (long long)r,
                     got[r], s->ref[r], row_tol(s, r));
            return -1;
        }
    return 0;
}

static int smvm_baseline(void *st, int variant)
{
    Smvm *s = st;
    if (!s->y && !(s->y = malloc(sizeof *s->y * (size_t)(s->m.rows ? s->m.rows : 1)))) return -1;
    (variant ? bl_smvm_fast : bl_smvm_std)(s->m.rows, s->m.rowptr, s->m.col, s->m.val, s->x, s->y);
    return 0;
}

/* The CUDA baseline: cuSPARSE's CSR SpMV (bench/cuda/baselines.cu). */
static int smvm_cuda(void *st, void *lib, int runs, double *ms, char *err, size_t errsize)
{
    Smvm *s = st;
    if (!s->y && !(s->y = malloc(sizeof *s->y * (size_t)(s->m.rows ? s->m.rows : 1))))
        return snprintf(err, errsize, "out of memory"), -1;
    int (*f)(int64_t, int64_t, int64_t, const int64_t *, const int32_t *, const float *, const float *, int, float *,
             double *, char *, size_t);
    if (!(*(void **)&f = dlsym(lib, "axcb_smvm"))) return snprintf(err, errsize, "no axcb_smvm"), -1;
    return f(s->m.rows, s->m.cols, s->m.nnz, s->m.rowptr, s->m.col, s->m.val, s->x, runs, s->y, ms, err, errsize);
}

/* axle and the baseline are each within the row's bound of the exact
 * value, so within twice of each other. */
static int smvm_check_baseline(void *st, ax_array *const *res, int nres, char *msg, size_t size)
{
    Smvm *s = st;
    const float *got;
    if (!s->y) { snprintf(msg, size, "smvm: the baseline has not run"); return -1; }
    if (smvm_result(s, res, nres, &got, msg, size) != 0) return -1;
    for (int64_t r = 0; r < s->m.rows; r++)
        if (!(fabs((double)got[r] - s->y[r]) <= 2 * row_tol(s, r))) {
            snprintf(msg, size, "smvm: row %lld: axle %.9g, baseline %.9g (tolerance %.3g)", (long long)r,
                     got[r], s->y[r], 2 * row_tol(s, r));
            return -1;
        }
    return 0;
}

const ex_program ex_prog_smvm = {
    .name = "smvm",
    .about = "sparse-matrix (CSR) vector product: foldSeg (+) 0 (zipWith (*) (gather cols x) vals)",
    .default_size = 131072,
    .setup = smvm_setup,
    .build = smvm_build,
    .check = smvm_check,
    .teardown = smvm_teardown,
    .baseline = smvm_baseline,
    .check_baseline = smvm_check_baseline,
    .cuda_baseline = smvm_cuda,
    .bench_size = 131072,
    .test_size = 300,
};

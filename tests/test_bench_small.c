/*
 * The benchmark programs at small sizes: radix sort, SMVM, dot
 * product and Black-Scholes, and the single-skeleton micro-benchmarks
 * map-explog, fold-sum, scanl1-sum and scanl1-seg-sum, and the awhile
 * step's cost loop-steps, on the interpreter, the
 * CPU backend and OpenCL (skipped, with a note, where there is none),
 * with the optimiser's switches on and off, each result checked against
 * the plain-C reference and against both builds of the hand-written
 * baseline (without and with -ffast-math).  Also: the Matrix Market
 * reader on small files written here, radix sort on awkward inputs, and
 * the memory limit refusing a program cleanly.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "programs.h"
#include "radixsort.h"
#include "smvm.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ------------------------------------------------------------ the programs */

static const char *const bench_programs[] = {"radixsort", "smvm", "dotp", "blackscholes",
                                             "map-explog", "fold-sum", "scanl1-sum", "scanl1-seg-sum",
                                             "loop-steps"};

static const struct { const char *name; unsigned flags; } switches[] = {
    {"default", 0},
    {"no-fusion", AX_DEBUG_NO_FUSION},
    {"no-sharing", AX_DEBUG_NO_SHARING},
    {"no-simplify", AX_DEBUG_NO_SIMPLIFY},
};

/* Runs p at its test size on one backend with one switch setting; checks
 * the result against the reference and both baselines.  Returns 1 if the
 * backend is not available (a skip), else 0. */
static int run_checked(const ex_program *p, ax_backend_kind backend, const char *bname, unsigned flags,
                       const char *sname)
{
    ax_options o = {0};
    o.backend = backend;
    o.debug = flags | AX_DEBUG_VERIFY;
    ax_ctx *cx = ax_ctx_new(&o);
    int64_t n = p->test_size > 0 ? p->test_size : p->default_size;
    void *st = p->setup(cx, n);
    int skipped = 0;
    if (!st) {
        CHECKF(st, "%s: setup failed", p->name);
        ax_ctx_free(cx);
        return 0;
    }
    ax_program *pr = ax_compile(cx, p->build(cx, st));
    if (!pr && ax_status_of(cx) == AX_ERR_BACKEND) {
        fprintf(stderr, "note: %s on %s (%s) skipped: %s\n", p->name, bname, sname, ax_error(cx));
        skipped = 1;
    } else {
        CHECKF(pr, "%s on %s (%s): %s", p->name, bname, sname, ax_error(cx));
    }
    if (pr) {
        ax_array *res[8];
        int nres = ax_program_run(pr, res, 8);
        CHECKF(nres >= 1, "%s on %s (%s): %s", p->name, bname, sname, ax_error(cx));
        if (nres >= 1) {
            char msg[512] = "";
            CHECKF(p->check(st, res, nres, msg, sizeof msg) == 0, "%s on %s (%s): %s", p->name, bname, sname,
                   msg);
            for (int v = 0; v < 2; v++) {
                CHECKF(p->baseline(st, v) == 0, "%s: baseline %d failed", p->name, v);
                msg[0] = 0;
                CHECKF(p->check_baseline(st, res, nres, msg, sizeof msg) == 0,
                       "%s on %s (%s) against the baseline (%s): %s", p->name, bname, sname,
                       v ? "fastmath" : "std", msg);
            }
            for (int i = 0; i < nres; i++) ax_array_release(res[i]);
        }
        ax_program_free(pr);
    }
    p->teardown(st);
    ax_ctx_free(cx);
    return skipped;
}

static void programs_on(ax_backend_kind backend, const char *bname)
{
    int skipped = 0;
    for (size_t i = 0; i < sizeof bench_programs / sizeof *bench_programs; i++) {
        const ex_program *p = ex_find(bench_programs[i]);
        CHECKF(p, "%s is not registered", bench_programs[i]);
        if (!p) continue;
        CHECKF(p->baseline && p->check_baseline && p->test_size > 0 && p->bench_size > 0,
               "%s lacks its baseline hooks or sizes", p->name);
        if (!p->baseline || !p->check_baseline) continue;
        for (size_t s = 0; s < sizeof switches / sizeof *switches; s++)
            skipped += run_checked(p, backend, bname, switches[s].flags, switches[s].name);
    }
    if (skipped) fprintf(stderr, "note: %d runs on %s skipped (backend unavailable)\n", skipped, bname);
}

TEST(bench_programs_interp) { programs_on(AX_BACKEND_INTERP, "interp"); }
TEST(bench_programs_cpu) { programs_on(AX_BACKEND_CPU, "cpu"); }
TEST(bench_programs_opencl) { programs_on(AX_BACKEND_OPENCL, "opencl"); }
/* (skipped with a note where no CUDA device is: scripts/gpu-check.sh runs it on one) */
TEST(bench_programs_cuda) { programs_on(AX_BACKEND_CUDA, "cuda"); }

/* Sizes 0 and 1, and a size that is not a multiple of anything. */
TEST(bench_programs_edge_sizes)
{
    for (size_t i = 0; i < sizeof bench_programs / sizeof *bench_programs; i++) {
        const ex_program *p = ex_find(bench_programs[i]);
        REQUIRE(p);
        int64_t sizes[3] = {0, 1, 37};
        for (int s = 0; s < 3; s++) {
            ax_options o = {0};
            o.backend = AX_BACKEND_INTERP;
            ax_ctx *cx = ax_ctx_new(&o);
            void *st = p->setup(cx, sizes[s]);
            REQUIRE(st);
            ax_array *res[4];
            int nres = ax_run_n(cx, p->build(cx, st), res, 4);
            CHECKF(nres >= 1, "%s size %lld: %s", p->name, (long long)sizes[s], ax_error(cx));
            if (nres >= 1) {
                char msg[512] = "";
                CHECKF(p->check(st, res, nres, msg, sizeof msg) == 0, "%s size %lld: %s", p->name,
                       (long long)sizes[s], msg);
                CHECK(p->baseline(st, 0) == 0);
                CHECKF(p->check_baseline(st, res, nres, msg, sizeof msg) == 0, "%s size %lld: %s", p->name,
                       (long long)sizes[s], msg);
                for (int k = 0; k < nres; k++) ax_array_release(res[k]);
            }
            p->teardown(st);
            ax_ctx_free(cx);
        }
    }
}

/* ------------------------------------------------------------ radix sort */

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

static void sort_and_compare(const int32_t *in, int64_t n, const char *what)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    ax_ctx *cx = ax_ctx_new(&o);
    ax_array *a = ax_array_from(cx, AX_I32, 1, &n, in);
    REQUIRE(a);
    ax_array *r = ax_run(cx, ex_radixsort(cx, ax_use(cx, a)));
    CHECKF(r, "%s: %s", what, ax_error(cx));
    int32_t *want = malloc(sizeof *want * (size_t)(n ? n : 1));
    REQUIRE(want);
    memcpy(want, in, sizeof *want * (size_t)n);
    qsort(want, (size_t)n, sizeof *want, cmp_i32);
    if (r) {
        CHECK_EQ_I(ax_array_size(r), n);
        const int32_t *got = ax_array_data(r, 0);
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; i++)
            if (got[i] != want[i]) bad = i;
        CHECKF(bad < 0, "%s: element %lld is %d, expected %d", what, (long long)bad, bad >= 0 ? got[bad] : 0,
               bad >= 0 ? want[bad] : 0);
    }
    free(want);
    ax_array_release(r);
    ax_array_release(a);
    ax_ctx_free(cx);
}

TEST(radixsort_awkward_inputs)
{
    enum { N = 64 };
    int32_t x[N];
    for (int i = 0; i < N; i++) x[i] = 7;
    sort_and_compare(x, N, "all equal");
    for (int i = 0; i < N; i++) x[i] = N - i - 33;
    sort_and_compare(x, N, "descending through zero");
    for (int i = 0; i < N; i++) x[i] = i % 2 ? INT32_MIN + i : INT32_MAX - i;
    sort_and_compare(x, N, "extremes alternating");
    for (int i = 0; i < N; i++) x[i] = -i;
    sort_and_compare(x, N, "all negative");
    sort_and_compare(x, 1, "one element");
}

/* ------------------------------------------------------------ Matrix Market */

/* Writes text to a fresh temporary file; returns its path (static). */
static const char *write_temp(const char *text)
{
    static char path[256];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/axle-test-XXXXXX.mtx", dir && *dir ? dir : "/tmp");
    int fd = mkstemps(path, 4);
    if (fd < 0) return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) { close(fd); return NULL; }
    fputs(text, f);
    fclose(f);
    return path;
}

/* The stored matrix as a dense rows x cols array (duplicates added). */
static void densify(const ex_csr *m, double *dense)
{
    memset(dense, 0, sizeof *dense * (size_t)(m->rows * m->cols));
    for (int64_t r = 0; r < m->rows; r++) {
        CHECK_EQ_I(m->rowptr[r + 1] - m->rowptr[r], m->segd[r]);
        for (int64_t k = m->rowptr[r]; k < m->rowptr[r + 1]; k++) {
            if (k > m->rowptr[r]) CHECKF(m->col[k - 1] <= m->col[k], "row %lld not sorted", (long long)r);
            dense[r * m->cols + m->col[k]] += m->val[k];
        }
    }
}

TEST(matrix_market_general_real)
{
    const char *path = write_temp("%%MatrixMarket matrix coordinate real general\n"
                                  "% a 3 x 4 matrix, entries in no particular order\n"
                                  "\n"
                                  "3 4 6\n"
                                  "3 4 6.5\n"
                                  "1 1 1.0\n"
                                  "2 3 -2.25\n"
                                  "1 4 4e0\n"
                                  "3 1 5\n"
                                  "1 2 0.5\n");
    REQUIRE(path);
    ex_csr m;
    char msg[512] = "";
    int rc = ex_mm_read(path, &m, msg, sizeof msg);
    CHECKF(rc == 0, "%s", msg);
    if (rc == 0) {
        CHECK_EQ_I(m.rows, 3);
        CHECK_EQ_I(m.cols, 4);
        CHECK_EQ_I(m.nnz, 6);
        const double want[3][4] = {{1, 0.5, 0, 4}, {0, 0, -2.25, 0}, {5, 0, 0, 6.5}};
        double dense[12];
        densify(&m, dense);
        for (int i = 0; i < 12; i++) CHECK(dense[i] == want[i / 4][i % 4]);
        CHECK_EQ_I(m.segd[0], 3);
        CHECK_EQ_I(m.segd[1], 1);
        CHECK_EQ_I(m.segd[2], 2);
        ex_csr_free(&m);
    }

    /* The program multiplies this matrix when the environment names it. */
    setenv(EX_SMVM_MATRIX_ENV, path, 1);
    const ex_program *p = ex_find("smvm");
    REQUIRE(p);
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    ax_ctx *cx = ax_ctx_new(&o);
    void *st = p->setup(cx, 12345);
    CHECK(st);
    if (st) {
        ax_array *r = ax_run(cx, p->build(cx, st));
        CHECKF(r, "%s", ax_error(cx));
        if (r) {
            CHECK_EQ_I(ax_array_size(r), 3);   /* the file's rows, not the size asked for */
            char cmsg[512] = "";
            CHECKF(p->check(st, &r, 1, cmsg, sizeof cmsg) == 0, "%s", cmsg);
            CHECK(p->baseline(st, 1) == 0);
            CHECKF(p->check_baseline(st, &r, 1, cmsg, sizeof cmsg) == 0, "%s", cmsg);
        }
        ax_array_release(r);
        p->teardown(st);
    }
    ax_ctx_free(cx);
    unsetenv(EX_SMVM_MATRIX_ENV);
    unlink(path);
}

TEST(matrix_market_symmetric_pattern_integer)
{
    /* symmetric pattern: the lower triangle given, both stored */
    const char *path = write_temp("%%MatrixMarket matrix coordinate pattern symmetric\n"
                                  "3 3 4\n1 1\n2 1\n3 2\n3 3\n");
    REQUIRE(path);
    ex_csr m;
    char msg[512] = "";
    int rc = ex_mm_read(path, &m, msg, sizeof msg);
    CHECKF(rc == 0, "%s", msg);
    if (rc == 0) {
        CHECK_EQ_I(m.nnz, 6);
        const double want[9] = {1, 1, 0, 1, 0, 1, 0, 1, 1};
        double dense[9];
        densify(&m, dense);
        for (int i = 0; i < 9; i++) CHECKF(dense[i] == want[i], "entry %d: %g", i, dense[i]);
        ex_csr_free(&m);
    }
    unlink(path);

    /* integer skew-symmetric: mirrored entries negated */
    path = write_temp("%%MatrixMarket matrix coordinate integer skew-symmetric\n"
                      "2 2 1\n2 1 3\n");
    REQUIRE(path);
    rc = ex_mm_read(path, &m, msg, sizeof msg);
    CHECKF(rc == 0, "%s", msg);
    if (rc == 0) {
        double dense[4];
        densify(&m, dense);
        CHECK(dense[0] == 0 && dense[1] == -3 && dense[2] == 3 && dense[3] == 0);
        ex_csr_free(&m);
    }
    unlink(path);

    /* an empty matrix */
    path = write_temp("%%MatrixMarket matrix coordinate real general\n0 0 0\n");
    REQUIRE(path);
    rc = ex_mm_read(path, &m, msg, sizeof msg);
    CHECKF(rc == 0, "%s", msg);
    if (rc == 0) {
        CHECK_EQ_I(m.rows, 0);
        CHECK_EQ_I(m.nnz, 0);
        ex_csr_free(&m);
    }
    unlink(path);
}

TEST(matrix_market_errors)
{
    static const struct { const char *text, *says; } bad[] = {
        {"not a matrix\n", "not a Matrix Market file"},
        {"%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n", "coordinate"},
        {"%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 0\n", "field"},
        {"%%MatrixMarket matrix coordinate real hermitian\n1 1 1\n1 1 1\n", "symmetry"},
        /* (the comment gives the file room for two entries: the header
         * check, which refuses files too short for their entries, passes) */
        {"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n% a comment\n", "ends after 1 of 2"},
        {"%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n", "holds at most 1"},
        {"%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n", "out of range"},
        {"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 x 1\n", "expected"},
        {"%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n1 1 1\n", "square"},
        {"%%MatrixMarket matrix coordinate real general\n2 2\n", "size line"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        const char *path = write_temp(bad[i].text);
        REQUIRE(path);
        ex_csr m;
        char msg[512] = "";
        CHECKF(ex_mm_read(path, &m, msg, sizeof msg) != 0, "case %zu read", i);
        CHECKF(strstr(msg, bad[i].says) && strstr(msg, path), "case %zu: \"%s\"", i, msg);
        CHECK(m.segd == NULL && m.col == NULL);
        unlink(path);
    }
    ex_csr m;
    char msg[512] = "";
    CHECK(ex_mm_read("/nonexistent/axle.mtx", &m, msg, sizeof msg) != 0);
    CHECK(strstr(msg, "/nonexistent/axle.mtx"));
}

TEST(random_matrix_is_deterministic)
{
    ex_csr a, b;
    REQUIRE(ex_csr_random(&a, 500, 8, 42) == 0);
    REQUIRE(ex_csr_random(&b, 500, 8, 42) == 0);
    CHECK(a.nnz == b.nnz && a.nnz > 500 * 4 && a.nnz < 500 * 12);
    CHECK(!memcmp(a.col, b.col, sizeof *a.col * (size_t)a.nnz));
    CHECK(!memcmp(a.val, b.val, sizeof *a.val * (size_t)a.nnz));
    int64_t sum = 0;
    for (int64_t r = 0; r < a.rows; r++) {
        CHECK(a.segd[r] >= 0 && a.segd[r] <= 16);
        sum += a.segd[r];
    }
    CHECK_EQ_I(sum, a.nnz);
    ex_csr_free(&a);
    ex_csr_free(&b);
}

/* ------------------------------------------------------------ memory limit */

/* A limit far below the program's intermediates: a clear out-of-memory
 * error, not a crash, and the context still works (paper s.5.4, Table 2's
 * "out of memory"). */
TEST(memory_limit_refuses_cleanly)
{
    const ex_program *p = ex_find("radixsort");
    REQUIRE(p);
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    o.mem_limit = 2048;
    ax_ctx *cx = ax_ctx_new(&o);
    void *st = p->setup(cx, 4096);
    REQUIRE(st);
    ax_array *res[2];
    int n = ax_run_n(cx, p->build(cx, st), res, 2);
    CHECK(n < 0);
    CHECK(ax_status_of(cx) == AX_ERR_NOMEM);
    CHECKF(strstr(ax_error(cx), "memory"), "%s", ax_error(cx));
    ax_array *r = ax_run(cx, ax_unit(cx, ax_add(ax_const(cx, ax_i32(2)), ax_i32(3))));
    CHECKF(r && *(int32_t *)ax_array_data(r, 0) == 5, "%s", ax_error(cx));
    ax_array_release(r);
    p->teardown(st);
    ax_ctx_free(cx);
}

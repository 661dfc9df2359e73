/*
 * The built-in example programs: each builds its computation with the
 * public API, makes deterministic inputs of a given size, and checks a
 * result against one computed independently in plain C.  Used by the axle
 * command (tools/axle.c), the tests and the benchmarks.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_PROGRAMS_H
#define AX_PROGRAMS_H
#include "axle.h"

typedef struct ex_program {
    const char *name;
    const char *about;
    int64_t default_size;
    /* Makes the inputs of size n in cx; returns private state (NULL with a
     * message in cx's error on failure). */
    void *(*setup)(ax_ctx *cx, int64_t n);
    /* Builds the computation over the inputs. */
    ax_acc (*build)(ax_ctx *cx, void *state);
    /* Compares results with the plain-C reference: 0 if they agree, else
     * -1 with a reason in msg. */
    int (*check)(void *state, ax_array *const *res, int nres, char *msg, size_t size);
    void (*teardown)(void *state);
    /* The hand-written C baseline: the same computation on the
     * same inputs, written as a performance engineer would (OpenMP, simd);
     * variant 0 is compiled without -ffast-math, 1 with it.  It keeps its
     * result in the state; returns 0, or -1 (e.g. out of memory).  NULL if
     * the program has none. */
    int (*baseline)(void *state, int variant);
    /* Compares the results of axle with the last baseline result (floats
     * within the program's stated tolerance): 0 if they agree. */
    int (*check_baseline)(void *state, ax_array *const *res, int nres, char *msg, size_t size);
    /* The hand-written CUDA baseline (bench/cuda/baselines.cu), where the
     * program has one: runs the same computation on the GPU through `lib`
     * (that library, loaded by axle bench: the function axcb_<name> is
     * looked up in it) `runs` times after a warm-up, keeps the result as
     * the baseline's (check_baseline compares it) and gives the median
     * device time in *ms.  0, or -1 with a message in err.  NULL: none. */
    int (*cuda_baseline)(void *state, void *lib, int runs, double *ms, char *err, size_t errsize);
    /* Sizes: what `make demo` / `axle bench` use by default, and a small
     * size for the tests (0: default_size). */
    int64_t bench_size, test_size;
    /* Not one of the Accelerate paper's Table 2 programs (the single-skeleton
     * micro-benchmarks; radix sort against another sorting
     * algorithm): `axle bench` runs it only when named. */
    bool extra;
    /* A program of a public suite ("polybench", "rodinia"; NULL for the
     * built-in ones): listed apart (ex_suite), run by `axle bench --suite
     * NAME`, tested by tests/test_suites.c.  Its size parameter n is the
     * suite's first dimension; the others follow from n by the ratios of
     * the suite's datasets (each program's comment says how). */
    const char *suite;
    /* The suite's own serial loop nest, as the suite publishes it (the
     * plain loop a user would otherwise write), computing what `baseline`
     * computes (which is the same loops with OpenMP where the suite or a
     * user would add it); keeps its result where baseline does, so
     * check_baseline compares it.  Variant as for baseline.  NULL: none. */
    int (*baseline_serial)(void *state, int variant);
} ex_program;

extern const ex_program *const ex_programs[];
extern const int ex_nprograms;
/* A program by name: a built-in one, or one of a suite's. */
const ex_program *ex_find(const char *name);

/* The programs of a public suite ("polybench", "rodinia"), NULL-terminated;
 * NULL for an unknown suite.  ex_suite_find looks a name up in every
 * suite. */
const ex_program *const *ex_suite(const char *suite);
const ex_program *ex_suite_find(const char *name);
extern const char *const ex_suites[];   /* the suites' names, NULL-terminated */

/* A deterministic pseudo-random generator (xorshift64*): inputs are the
 * same on every run and machine. */
typedef struct { uint64_t s; } ex_rng;
uint64_t ex_next(ex_rng *r);
double   ex_uniform(ex_rng *r, double lo, double hi);

/* Shared by the programs and the tests. */
ax_acc ex_dotp(ax_acc xs, ax_acc ys);
ax_acc ex_blackscholes(ax_acc opts);   /* vector of (price, strike, years) */
ax_exp ex_incnine(ax_ctx *cx);         /* the paper's Figure 2 term, as scalar code */
#endif

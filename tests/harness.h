/* A small test harness: each test file defines test functions registered
 * with TEST(name), and main() comes from harness.c.  A failed CHECK prints
 * the file, line and expression and marks the test failed; the run ends
 * with the plain line "N passed, N failed".
 * SPDX-License-Identifier: BSD-3-Clause */
#ifndef AX_HARNESS_H
#define AX_HARNESS_H
#include <stdio.h>
#include <stdint.h>
#include <stdbool.h>
#include <math.h>
#include "axle.h"

typedef void (*test_fn)(void);
void harness_register(const char *name, test_fn fn);
extern int harness_failed_checks;   /* checks failed in the current test */

#define TEST(name) \
    static void name(void); \
    __attribute__((constructor)) static void reg_##name(void) { harness_register(#name, name); } \
    static void name(void)

#define CHECK(cond) do { if (!(cond)) { harness_failed_checks++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } } while (0)
#define CHECKF(cond, ...) do { if (!(cond)) { harness_failed_checks++; \
    fprintf(stderr, "%s:%d: CHECK failed: %s: ", __FILE__, __LINE__, #cond); \
    fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); } } while (0)
/* Stops the current test when cond fails (later checks would crash). */
#define REQUIRE(cond) do { if (!(cond)) { harness_failed_checks++; \
    fprintf(stderr, "%s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, #cond); return; } } while (0)
#define CHECK_EQ_I(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
    CHECKF(_a == _b, "%lld != %lld", _a, _b); } while (0)
/* Floats: equal, or both NaN, or within a relative tolerance. */
bool harness_close(double a, double b, double rel);
#define CHECK_CLOSE(a, b, rel) do { double _a = (a), _b = (b); \
    CHECKF(harness_close(_a, _b, rel), "%.9g vs %.9g (rel %g)", _a, _b, (double)(rel)); } while (0)
/* Removes a directory tree (a test's temporary cache directory). */
void harness_rm_tree(const char *path);
/* Runs a program and requires success; prints ax_error otherwise. */
ax_array *harness_run(ax_ctx *cx, ax_acc a, const char *file, int line);
#define RUN(cx, a) harness_run((cx), (a), __FILE__, __LINE__)
/* Whether make test-deep asks for every NVRTC check (AXLE_TEST_NVRTC_PAIRS=all):
 * every (architecture, path) pair, and in the random tests every row. */
bool harness_nvrtc_all(void);
/* With AXLE_TEST_NVRTC=1 and NVRTC installed: compiles a's CUDA kernels
 * for sm_80 and sm_90, with the CUDA-only fast paths and without (sm_90
 * fast and sm_80 portable; full, where AXLE_TEST_NVRTC_PAIRS=all: all
 * four), and fails the test on a compile error or a register spill.  0
 * when fine or not asked for. */
int harness_nvrtc_check(ax_ctx *cx, ax_acc a, const char *what, bool full);
#endif

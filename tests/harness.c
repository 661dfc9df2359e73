/* SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE   /* nftw's FTW_DEPTH and FTW_PHYS */
#include "harness.h"
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct { const char *name; test_fn fn; } Entry;
static Entry tests[1024];
static int ntests;
int harness_failed_checks;

void harness_register(const char *name, test_fn fn)
{
    if (ntests < 1024) tests[ntests++] = (Entry){name, fn};
}

bool harness_close(double a, double b, double rel)
{
    if (isnan(a) || isnan(b)) return isnan(a) && isnan(b);
    if (a == b) return true;
    if (isinf(a) || isinf(b)) return false;
    double d = fabs(a - b), m = fmax(fabs(a), fabs(b));
    return d <= rel * m || d <= rel * 1e-30;
}

ax_array *harness_run(ax_ctx *cx, ax_acc a, const char *file, int line)
{
    ax_array *r = ax_run(cx, a);
    if (!r) {
        harness_failed_checks++;
        fprintf(stderr, "%s:%d: ax_run failed: %s\n", file, line, ax_error(cx));
    }
    return r;
}

/* Whether test `name` is chosen: every test without arguments, else those
 * whose names contain one of the arguments. */
static bool chosen(const char *name, int argc, char **argv)
{
    if (argc < 2) return true;
    for (int k = 1; k < argc; k++)
        if (strstr(name, argv[k])) return true;
    return false;
}

static double wall_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Each test's line carries its wall time: where a suite's time goes is
 * then in every log (make test's length is a budget, docs/guide/testing.md). */
int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    for (int i = 0; i < ntests; i++) {
        if (!chosen(tests[i].name, argc, argv)) continue;
        harness_failed_checks = 0;
        double t0 = wall_s();
        tests[i].fn();
        double dt = wall_s() - t0;
        if (harness_failed_checks) { failed++; fprintf(stderr, "FAIL %s (%.1f s)\n", tests[i].name, dt); }
        else { passed++; printf("ok   %s (%.1f s)\n", tests[i].name, dt); }
        fflush(stdout);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

/* ------------------------------------------------------------ NVRTC check */

#include "backend/gpu/gpu.h"

/* The spill bytes in ptxas' report (the sum over kernels). */
static long spills(const char *info)
{
    long total = 0;
    for (const char *p = info; p && (p = strstr(p, " bytes spill ")); p++) {
        const char *q = p;
        while (q > info && q[-1] == ' ') q--;
        while (q > info && q[-1] >= '0' && q[-1] <= '9') q--;
        total += strtol(q, NULL, 10);
    }
    return total;
}

bool harness_nvrtc_all(void)
{
    const char *pairs = getenv("AXLE_TEST_NVRTC_PAIRS");
    return pairs && !strcmp(pairs, "all");
}

int harness_nvrtc_check(ax_ctx *cx, ax_acc a, const char *what, bool full)
{
    const char *e = getenv("AXLE_TEST_NVRTC");
    if (!e || strcmp(e, "1") || !a) return 0;
    char *text = ax_dump(cx, a, "cuda", false);
    if (!text) {
        harness_failed_checks++;
        fprintf(stderr, "%s: no CUDA text: %s\n", what, ax_error(cx));
        return -1;
    }
    /* A text checked before (the same program at another size) is not
     * compiled again: the set of their hashes lives for the process. */
    static uint64_t seen[8192];
    static int nseen;
    uint64_t h = 1469598103934665603ull;
    for (const char *c = text; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    for (int i = 0; i < nseen; i++)
        if (seen[i] == h) {
            free(text);
            return 0;
        }
    if (nseen < 8192) seen[nseen++] = h;
    /* both architectures, the CUDA-only fast paths and the portable ones:
     * each once (sm_90 fast, sm_80 portable), or every pair where the
     * caller asks for it (full) and AXLE_TEST_NVRTC_PAIRS=all (make
     * test-deep: the other two pairs double the OpenCL suite's time) */
    full = full && harness_nvrtc_all();
    static const int archs[] = {90, 80};
    static const char *const paths[] = {NULL, "-DAX_NO_FAST=1"};
    int rc = 0;
    for (int i = 0; i < 2 && rc == 0; i++)
        for (int k = 0; k < 2 && rc == 0; k++) {
            if (!full && i != k) continue;
            char *info = NULL, err[2048];
            if (cuda_compile_check(text, strlen(text), archs[i], paths[k], NULL, &info, err, sizeof err)) {
                if (strstr(err, "not installed")) {
                    free(text);
                    return 0;   /* no NVRTC here: nothing to check */
                }
                harness_failed_checks++;
                fprintf(stderr, "%s: NVRTC sm_%d%s: %s\n", what, archs[i], paths[k] ? " (portable)" : "", err);
                rc = -1;
            } else if (spills(info) > 0) {
                harness_failed_checks++;
                fprintf(stderr, "%s: NVRTC sm_%d%s: %ld bytes of spills:\n%s\n", what, archs[i],
                        paths[k] ? " (portable)" : "", spills(info), info);
                rc = -1;
            }
            free(info);
        }
    free(text);
    return rc;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)ftw;
    if (flag == FTW_DP) rmdir(path);
    else unlink(path);
    return 0;
}

void harness_rm_tree(const char *path)
{
    if (path && path[0]) nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

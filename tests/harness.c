/* SPDX-License-Identifier: BSD-3-Clause */
#include "harness.h"
#include <stdlib.h>
#include <string.h>

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

int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    for (int i = 0; i < ntests; i++) {
        if (argc > 1 && !strstr(tests[i].name, argv[1])) continue;
        harness_failed_checks = 0;
        tests[i].fn();
        if (harness_failed_checks) { failed++; fprintf(stderr, "FAIL %s\n", tests[i].name); }
        else { passed++; printf("ok   %s\n", tests[i].name); }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

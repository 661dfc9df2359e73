/*
 * The programs of the public suites (PolyBench/C 4.2.1 and Rodinia 3.1),
 * written in axle the way the README and the header teach, each with the
 * suite's sizes, initialisation and a check against plain C.  Each suite's
 * list is in its folder (examples/polybench/polybench.c,
 * examples/rodinia/rodinia.c); their hand-written baselines in
 * bench/polybench and bench/rodinia.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "programs.h"
#include <string.h>

extern const ex_program *const ex_polybench[];
extern const ex_program *const ex_rodinia[];

const char *const ex_suites[] = {"polybench", "rodinia", NULL};

const ex_program *const *ex_suite(const char *suite)
{
    if (!suite) return NULL;
    if (!strcmp(suite, "polybench")) return ex_polybench;
    if (!strcmp(suite, "rodinia")) return ex_rodinia;
    return NULL;
}

const ex_program *ex_suite_find(const char *name)
{
    for (int s = 0; ex_suites[s]; s++)
        for (const ex_program *const *p = ex_suite(ex_suites[s]); *p; p++)
            if (!strcmp((*p)->name, name)) return *p;
    return NULL;
}

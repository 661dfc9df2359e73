/*
 * The built-in programs on the interpreter, with and without sharing
 * recovery, each checked against its plain-C reference; and the size of
 * Black-Scholes' IR with and without sharing recovery (at least 5x).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "harness.h"
#include "programs.h"
#include <stdlib.h>
#include <string.h>

/* Runs p at size n on the interpreter and checks it: 0 if it agrees with
 * its reference, 1 if it was refused as too large when unfolded without
 * sharing (the paper's "out of memory" entries), -1 otherwise. */
static int run_program(const ex_program *p, int64_t n, unsigned debug, int64_t *nodes)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    o.debug = debug;
    ax_ctx *cx = ax_ctx_new(&o);
    void *st = p->setup(cx, n);
    int ok = -1;
    ax_program *pr = ax_compile(cx, p->build(cx, st));
    if (!pr) {
        if ((debug & AX_DEBUG_NO_SHARING) && ax_status_of(cx) == AX_ERR_NOMEM && strstr(ax_error(cx), "unfold"))
            ok = 1;
        else
            fprintf(stderr, "%s: %s\n", p->name, ax_error(cx));
    } else {
        *nodes = ax_program_stats(pr)->nodes;
        ax_array *res[4];
        int nres = ax_program_run(pr, res, 4);
        if (nres < 0) {
            fprintf(stderr, "%s: %s\n", p->name, ax_error(cx));
        } else {
            char msg[256];
            ok = p->check(st, res, nres, msg, sizeof msg);
            if (ok) fprintf(stderr, "%s: %s\n", p->name, msg);
            for (int i = 0; i < nres; i++) ax_array_release(res[i]);
        }
        ax_program_free(pr);
    }
    p->teardown(st);
    ax_ctx_free(cx);
    return ok;
}

TEST(programs_check_with_and_without_sharing)
{
    for (int i = 0; i < ex_nprograms; i++) {
        const ex_program *p = ex_programs[i];
        int64_t n1 = 0, n2 = 0;
        int64_t sizes[3] = {0, 1, p->test_size ? p->test_size : 1003};
        for (int s = 0; s < 3; s++) {
            CHECKF(run_program(p, sizes[s], 0, &n1) == 0, "%s size %lld", p->name, (long long)sizes[s]);
            int r = run_program(p, sizes[s], AX_DEBUG_NO_SHARING, &n2);
            CHECKF(r >= 0, "%s no-sharing", p->name);
            if (r == 1) fprintf(stderr, "%s: without sharing recovery the program is too large (as expected)\n", p->name);
            /* Two nodes of slack: a program whose only sharing is of a
             * leaf (normalise reads its ax_use three times) gets a let
             * and three variables for three copies of the leaf. */
            else CHECKF(n1 <= n2 + 2, "%s: %lld nodes with sharing, %lld without", p->name, (long long)n1,
                        (long long)n2);
        }
    }
}

TEST(blackscholes_ir_five_times_smaller_with_sharing)
{
    const ex_program *p = ex_find("blackscholes");
    REQUIRE(p);
    int64_t with = 0, without = 0;
    CHECK(run_program(p, 100, 0, &with) == 0);
    CHECK(run_program(p, 100, AX_DEBUG_NO_SHARING, &without) == 0);
    fprintf(stderr, "blackscholes IR: %lld nodes with sharing recovery, %lld without (%.1fx)\n",
            (long long)with, (long long)without, (double)without / (double)with);
    CHECK(with > 0);
    CHECKF(without >= 5 * with, "%lld vs %lld", (long long)without, (long long)with);
}

TEST(dump_json_has_keys)
{
    ax_ctx *cx = ax_ctx_new(NULL);
    const ex_program *p = ex_find("blackscholes");
    void *st = p->setup(cx, 10);
    ax_acc a = p->build(cx, st);
    const char *stages[2] = {"source", "sharing"};
    for (int s = 0; s < 2; s++) {
        char *j = ax_dump(cx, a, stages[s], true);
        REQUIRE(j);
        CHECK(strstr(j, "\"program\""));
        CHECK(strstr(j, "\"stage\""));
        CHECK(strstr(j, "\"nodes\""));
        CHECK(strstr(j, "\"lets\""));
        free(j);
    }
    CHECK(ax_dump(cx, a, "nonsense", false) == NULL);
    CHECK(strstr(ax_error(cx), "nonsense"));
    p->teardown(st);
    ax_ctx_free(cx);
}

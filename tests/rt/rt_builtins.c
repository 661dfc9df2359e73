/* Every built-in program, compiled by the full libaxle on the CPU backend
 * and run, for tests/rt/exported_builtins.sh: in DIR it writes, for each
 * program NAME (a '-' in the name made '_'),
 *   NAME.ref    its results (the JIT's), for rt_builtin_app.c to compare
 *               bit for bit: a count, then per result its rank, extents,
 *               components, and per component its scalar type and bytes;
 *   NAME.axle   the program saved (ax_program_save);
 *   NAME.c, .h  the program exported as C (ax_program_export);
 * and the names, one a line, in DIR/list.
 * SPDX-License-Identifier: BSD-3-Clause */
#include "axle.h"
#include "programs.h"
#include <stdio.h>
#include <string.h>

enum { MAX_RES = 16, SIZE = 256 };

static void put32(FILE *f, int32_t v) { fwrite(&v, sizeof v, 1, f); }
static void put64(FILE *f, int64_t v) { fwrite(&v, sizeof v, 1, f); }

static int write_ref(const char *path, ax_array **res, int n)
{
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    put32(f, n);
    for (int r = 0; r < n; r++) {
        int rank = ax_array_rank(res[r]);
        put32(f, rank);
        for (int d = 0; d < rank; d++) put64(f, ax_array_extent(res[r], d));
        put32(f, ax_array_components(res[r]));
        for (int c = 0; c < ax_array_components(res[r]); c++) {
            ax_scalar s = ax_array_component_type(res[r], c);
            put32(f, (int32_t)s);
            fwrite(ax_array_data(res[r], c), ax_scalar_size(s), (size_t)ax_array_size(res[r]), f);
        }
    }
    return fclose(f) ? -1 : 0;
}

static int one(const ex_program *p, const char *dir, FILE *list)
{
    char name[64], path[4200];
    snprintf(name, sizeof name, "%s", p->name);
    for (char *s = name; *s; s++)
        if (*s == '-') *s = '_';
    ax_ctx *cx = ax_ctx_new(NULL);
    if (!cx) return -1;
    int64_t n = p->test_size ? p->test_size : p->default_size;
    if (n > SIZE) n = SIZE;
    void *st = p->setup(cx, n);
    ax_program *pr = st ? ax_compile(cx, p->build(cx, st)) : NULL;
    ax_array *res[MAX_RES] = {0};
    int nres = pr ? ax_program_run(pr, res, MAX_RES) : -1;
    int rc = -1;
    if (nres < 0) {
        fprintf(stderr, "rt_builtins: %s: %s\n", p->name, ax_error(cx));
    } else if (snprintf(path, sizeof path, "%s/%s.ref", dir, name), write_ref(path, res, nres)) {
        fprintf(stderr, "rt_builtins: %s: cannot write %s\n", p->name, path);
    } else if (snprintf(path, sizeof path, "%s/%s.axle", dir, name), ax_program_save(pr, path) ||
               ax_program_export(pr, name, dir)) {
        fprintf(stderr, "rt_builtins: %s: %s\n", p->name, ax_error(cx));
    } else {
        fprintf(list, "%s\n", name);
        rc = 0;
    }
    for (int r = 0; r < nres; r++) ax_array_release(res[r]);
    ax_program_free(pr);
    if (st) p->teardown(st);
    ax_ctx_free(cx);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: rt_builtins DIR\n");
        return 2;
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/list", argv[1]);
    FILE *list = fopen(path, "w");
    if (!list) {
        perror(path);
        return 1;
    }
    int bad = 0;
    for (int i = 0; i < ex_nprograms; i++) bad |= one(ex_programs[i], argv[1], list) != 0;
    if (fclose(list)) bad = 1;
    printf("rt_builtins: %d programs compiled, run, saved and exported%s\n", ex_nprograms, bad ? " (with errors)" : "");
    return bad;
}

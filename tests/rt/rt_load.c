/* The runtime-only library's test, second half: linked against
 * libaxle_rt alone (no front end, optimiser, code generator or compiler
 * in it) and run where no C compiler can be found, it loads rt_save's
 * programs and runs them: the values, and a gather out of bounds as the
 * same error a compiled program gives.
 * SPDX-License-Identifier: BSD-3-Clause */
#include <axle.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: rt_load SAXPY-FILE GATHER-FILE\n");
        return 2;
    }
    ax_ctx *cx = ax_ctx_new(NULL);
    ax_program *p = ax_program_load(cx, argv[1]), *g = ax_program_load(cx, argv[2]);
    if (!p || !g) {
        fprintf(stderr, "rt_load: %s\n", ax_error(cx));
        return 1;
    }
    float two = 2, x[3] = {1, 2, 3};
    int64_t three = 3;
    ax_array *args[2] = {ax_array_from(cx, AX_F32, 0, NULL, &two), ax_array_from(cx, AX_F32, 1, &three, x)};
    ax_array *r = NULL;
    if (ax_program_run_with(p, args, 2, &r, 1) != 1) {
        fprintf(stderr, "rt_load: %s\n", ax_error(cx));
        return 1;
    }
    const float *v = ax_array_data(r, 0);
    int bad = ax_array_size(r) != 3 || v[0] != 2.5f || v[1] != 5.5f || v[2] != 8.5f;
    printf("saxpy: %g %g %g\n", v[0], v[1], v[2]);
    ax_array_release(r);
    int32_t good[2] = {2, 0}, out_of_bounds[2] = {1, 3};
    int64_t two_n = 2;
    ax_array *gi = ax_array_from(cx, AX_I32, 1, &two_n, good), *gb = ax_array_from(cx, AX_I32, 1, &two_n, out_of_bounds);
    ax_array *gargs[2] = {gi, args[1]};
    if (ax_program_run_with(g, gargs, 2, &r, 1) != 1) {
        fprintf(stderr, "rt_load: %s\n", ax_error(cx));
        return 1;
    }
    v = ax_array_data(r, 0);
    bad |= v[0] != 3 || v[1] != 1;
    printf("gather: %g %g\n", v[0], v[1]);
    ax_array_release(r);
    gargs[0] = gb;
    bad |= ax_program_run_with(g, gargs, 2, &r, 1) != -1 || !strstr(ax_error(cx), "bounds");
    printf("out of bounds: %s\n", ax_error(cx));
    for (int i = 0; i < 2; i++) ax_array_release(args[i]);
    ax_array_release(gi);
    ax_array_release(gb);
    ax_program_free(p);
    ax_program_free(g);
    ax_ctx_free(cx);
    if (bad) fprintf(stderr, "rt_load: wrong results\n");
    return bad;
}

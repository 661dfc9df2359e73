/*
 * The runtime-only library as an installed axle's user links it
 * (tests/install/check_install.sh).  Built with -DRT_SAVE against libaxle:
 * compiles the README's dot product and saves it to FILE.  Built against
 * libaxle_rt alone: loads FILE, where no C compiler is found, runs it and
 * prints what example.c prints.
 * Usage: rt_example FILE
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include <axle.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: rt_example FILE\n");
        return 2;
    }
    ax_ctx *cx = ax_ctx_new(NULL);
    if (!cx) return 1;
#ifdef RT_SAVE
    float x[4] = {1, 2, 3, 4}, y[4] = {5, 6, 7, 8};
    int64_t n = 4;
    ax_array *xa = ax_array_from(cx, AX_F32, 1, &n, x);
    ax_array *ya = ax_array_from(cx, AX_F32, 1, &n, y);
    ax_program *p = ax_compile(cx, ax_fold(ax_fn_add, NULL, ax_f32(0),
                                           ax_zip_with(ax_fn_mul, NULL, ax_use(cx, xa), ax_use(cx, ya))));
    int rc = !p || ax_program_save(p, argv[1]) != 0;
    if (rc) fprintf(stderr, "axle: %s\n", ax_error(cx));
    ax_array_release(xa);
    ax_array_release(ya);
#else
    ax_program *p = ax_program_load(cx, argv[1]);
    ax_array *r = NULL;
    int rc = !p || ax_program_run(p, &r, 1) != 1;
    if (rc) {
        fprintf(stderr, "axle: %s\n", ax_error(cx));
    } else {
        printf("axle %s (header %s): dotp = %g\n", ax_version(), AX_VERSION_STRING, *(float *)ax_array_data(r, 0));
        rc = strcmp(ax_version(), AX_VERSION_STRING) != 0;
    }
    ax_array_release(r);
#endif
    ax_program_free(p);
    ax_ctx_free(cx);
    return rc;
}

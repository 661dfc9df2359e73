/* Ship a compiled program (docs/saving.md): saxpy compiled and saved to
 * a file, then loaded into a context whose C compiler does not exist, as
 * on a machine without one, and run there.  SPDX-License-Identifier: BSD-3-Clause */
#include <axle.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static ax_exp saxpy(ax_exp x, ax_exp y, void *env)
{
    ax_exp a = *(ax_exp *)env;
    return ax_add(ax_mul(a, x), y);
}

int main(void)
{
    char path[64];
    snprintf(path, sizeof path, "/tmp/saxpy-%d.axle", (int)getpid());

    /* where the program is built: compile it, save it */
    ax_ctx *cx = ax_ctx_new(NULL);
    const ax_type *f32 = ax_type_scalar(AX_F32);
    ax_exp a = ax_param_exp(cx, 0, f32);
    ax_program *p = ax_compile(cx, ax_zip_with(saxpy, &a, ax_param(cx, 1, f32, 1), ax_param(cx, 2, f32, 1)));
    if (!p || ax_program_save(p, path) != 0) { fprintf(stderr, "axle: %s\n", ax_error(cx)); return 1; }
    ax_program_free(p);
    ax_ctx_free(cx);

    /* where it runs: no C compiler (this one names none that exists) */
    ax_options o = {0};
    o.cc = "/nonexistent/cc";
    o.no_cache = true;
    ax_ctx *rt = ax_ctx_new(&o);
    ax_program *q = ax_program_load(rt, path);
    if (!q) { fprintf(stderr, "axle: %s\n", ax_error(rt)); return 1; }
    printf("loaded: %d parameters, backend %s\n", ax_program_params(q), ax_program_stats(q)->backend);

    float two = 2, x[3] = {1, 2, 3}, y[3] = {10, 20, 30};
    int64_t n = 3;
    ax_array *args[3] = {ax_array_from(rt, AX_F32, 0, NULL, &two), ax_array_wrap(rt, AX_F32, 1, &n, x),
                         ax_array_wrap(rt, AX_F32, 1, &n, y)};
    ax_array *r;
    if (ax_program_run_with(q, args, 3, &r, 1) != 1) { fprintf(stderr, "axle: %s\n", ax_error(rt)); return 1; }
    const float *v = ax_array_data(r, 0);
    printf("2*x + y: %g %g %g\n", v[0], v[1], v[2]);
    ax_array_release(r);
    for (int i = 0; i < 3; i++) ax_array_release(args[i]);

    /* a damaged file is refused, with the reason (its last byte's bits
       flipped: a byte set to a constant could already have held it) */
    FILE *f = fopen(path, "r+b");
    fseek(f, -1, SEEK_END);
    int last = fgetc(f);
    fseek(f, -1, SEEK_END);
    fputc(last ^ 0xff, f);
    fclose(f);
    if (!ax_program_load(rt, path)) printf("damaged: %s\n", strstr(ax_error(rt), "the file is corrupt"));
    ax_program_free(q);
    ax_ctx_free(rt);
    remove(path);
    return 0;
}

/*
 * axle-peer-io: the inputs of a built-in program, exactly as its own setup
 * makes them, and axle's result for them, written to raw files for the
 * peer comparison (bench/peers/compare.py), so that NumPy, Numba, JAX and
 * Halide compute on the very bytes axle and the C baselines compute on,
 * and their results can be compared with axle's.
 *
 *   axle-peer-io PROGRAM SIZE DIR
 *
 * The inputs are found without knowing any program's private state: this
 * executable is linked with -Wl,--wrap=ax_array_wrap,--wrap=ax_array_wrap_n,
 * so every array the program's setup wraps (borrows from its own C
 * buffers) passes through the wrappers below, which note its element type,
 * shape and buffers.  After setup each buffer is written to DIR; then the
 * program is run once on the default backend, its result checked by the
 * program's own check (the plain-C reference) and written too.
 *
 * Standard output: one JSON object per line, for each file
 *   {"role":"input"|"result","array":A,"component":C,"type":"f32","shape":[...],"file":"in-0-0.bin"}
 * and a last line {"program":...,"size":N,"check":"ok"|"fail","message":...}.
 * Exit status 0 if everything was written and the check passed, 1 otherwise,
 * 2 for bad arguments.
 *
 * Built on demand (not by default): cmake --build build --target axle_peer_io.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "axle.h"
#include "programs.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_INPUTS = 32, MAX_COMPS = 16, MAX_RESULTS = 8 };

typedef struct {
    int ncomp;
    ax_scalar type[MAX_COMPS];
    void *data[MAX_COMPS];
    int rank;
    int64_t shape[AX_MAX_RANK];
} Input;

static Input inputs[MAX_INPUTS];
static int ninputs, dropped;
static int recording;   /* only the program's setup is recorded */

ax_array *__real_ax_array_wrap(ax_ctx *cx, ax_scalar s, int rank, const int64_t *shape, void *data);
ax_array *__real_ax_array_wrap_n(ax_ctx *cx, const ax_type *elem, int rank, const int64_t *shape,
                                 void *const *data);
ax_array *__wrap_ax_array_wrap(ax_ctx *cx, ax_scalar s, int rank, const int64_t *shape, void *data);
ax_array *__wrap_ax_array_wrap_n(ax_ctx *cx, const ax_type *elem, int rank, const int64_t *shape,
                                 void *const *data);

/* The scalar leaves of t, in buffer order; their number, or -1. */
static int leaves(const ax_type *t, ax_scalar *out, int max)
{
    switch (ax_type_kind_of(t)) {
    case AX_KIND_SCALAR:
        if (max < 1) return -1;
        out[0] = ax_type_scalar_of(t);
        return 1;
    case AX_KIND_TUPLE: {
        int n = 0;
        for (int i = 0; i < ax_type_arity(t); i++) {
            int k = leaves(ax_type_elem(t, i), out + n, max - n);
            if (k < 0) return -1;
            n += k;
        }
        return n;
    }
    case AX_KIND_INDEX:
        if (max < ax_type_arity(t)) return -1;
        for (int i = 0; i < ax_type_arity(t); i++) out[i] = AX_I64;
        return ax_type_arity(t);
    default:
        return -1;
    }
}

static void note(int ncomp, const ax_scalar *types, void *const *data, int rank, const int64_t *shape)
{
    if (!recording) return;
    if (ninputs == MAX_INPUTS || ncomp < 0 || ncomp > MAX_COMPS || rank < 0 || rank > AX_MAX_RANK) {
        dropped++;
        return;
    }
    Input *in = &inputs[ninputs++];
    in->ncomp = ncomp;
    in->rank = rank;
    for (int c = 0; c < ncomp; c++) in->type[c] = types[c], in->data[c] = data[c];
    for (int d = 0; d < rank; d++) in->shape[d] = shape[d];
}

ax_array *__wrap_ax_array_wrap(ax_ctx *cx, ax_scalar s, int rank, const int64_t *shape, void *data)
{
    ax_array *a = __real_ax_array_wrap(cx, s, rank, shape, data);
    if (a) note(1, &s, &data, rank, shape);
    return a;
}

ax_array *__wrap_ax_array_wrap_n(ax_ctx *cx, const ax_type *elem, int rank, const int64_t *shape,
                                 void *const *data)
{
    ax_array *a = __real_ax_array_wrap_n(cx, elem, rank, shape, data);
    ax_scalar types[MAX_COMPS];
    if (a) note(leaves(elem, types, MAX_COMPS), types, data, rank, shape);
    return a;
}

static int64_t count(int rank, const int64_t *shape)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) n *= shape[d];
    return n;
}

/* Writes one buffer as DIR/NAME and its JSON line; 0 or -1. */
static int emit(const char *dir, const char *role, int array, int comp, ax_scalar t, int rank,
                const int64_t *shape, const void *data)
{
    char name[64], path[4096];
    snprintf(name, sizeof name, "%s-%d-%d.bin", role[0] == 'i' ? "in" : "out", array, comp);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f) { perror(path); return -1; }
    size_t n = (size_t)count(rank, shape);
    size_t wrote = n ? fwrite(data, ax_scalar_size(t), n, f) : 0;
    if (fclose(f) != 0 || wrote != n) { fprintf(stderr, "axle-peer-io: %s: write failed\n", path); return -1; }
    printf("{\"role\":\"%s\",\"array\":%d,\"component\":%d,\"type\":\"%s\",\"shape\":[", role, array, comp,
           ax_scalar_name(t));
    for (int d = 0; d < rank; d++) printf("%s%lld", d ? "," : "", (long long)shape[d]);
    printf("],\"file\":\"%s\"}\n", name);
    return 0;
}

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", *s);
        else putchar(*s);
    }
    putchar('"');
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: axle-peer-io PROGRAM SIZE DIR\n");
        return 2;
    }
    const ex_program *p = ex_find(argv[1]);
    char *end;
    long long n = strtoll(argv[2], &end, 10);
    if (!p || *end || n < 0) {
        fprintf(stderr, "axle-peer-io: unknown program '%s' or bad size '%s'\n", argv[1], argv[2]);
        return 2;
    }
    const char *dir = argv[3];
    ax_ctx *cx = ax_ctx_new(NULL);
    if (!cx) { fprintf(stderr, "axle-peer-io: out of memory\n"); return 1; }
    recording = 1;
    void *st = p->setup(cx, n);
    recording = 0;
    if (!st || dropped) {
        fprintf(stderr, "axle-peer-io: %s: %s\n", p->name, st ? "too many input arrays" : ax_error(cx));
        ax_ctx_free(cx);
        return 1;
    }
    int rc = 0;
    for (int i = 0; i < ninputs && !rc; i++)
        for (int c = 0; c < inputs[i].ncomp && !rc; c++)
            rc = emit(dir, "input", i, c, inputs[i].type[c], inputs[i].rank, inputs[i].shape, inputs[i].data[c]);

    ax_array *res[MAX_RESULTS];
    int nres = rc ? -1 : ax_run_n(cx, p->build(cx, st), res, MAX_RESULTS);
    char msg[512] = "";
    if (nres < 0) {
        if (!rc) snprintf(msg, sizeof msg, "run failed: %s", ax_error(cx));
        rc = -1;
    } else {
        for (int a = 0; a < nres && !rc; a++)
            for (int c = 0; c < ax_array_components(res[a]) && !rc; c++)
                rc = emit(dir, "result", a, c, ax_array_component_type(res[a], c), ax_array_rank(res[a]),
                          ax_array_shape(res[a]), ax_array_data(res[a], c));
        if (!rc && p->check(st, res, nres, msg, sizeof msg) != 0) rc = -1;
        for (int a = 0; a < nres; a++) ax_array_release(res[a]);
    }
    printf("{\"program\":\"%s\",\"size\":%lld,\"check\":\"%s\",\"message\":", p->name, n, rc ? "fail" : "ok");
    json_str(msg);
    printf("}\n");
    p->teardown(st);
    ax_ctx_free(cx);
    return rc ? 1 : 0;
}

/* Error handling (docs/errors.md): nothing aborts; a misused builder and a
 * run-time fault both make ax_run return NULL with a status and a message,
 * and the context goes on working.  SPDX-License-Identifier: BSD-3-Clause */
#include <axle.h>
#include <stdio.h>

static const char *status_name(ax_status s)
{
    switch (s) {
    case AX_OK: return "AX_OK";
    case AX_ERR_BUILD: return "AX_ERR_BUILD";
    case AX_ERR_INDEX: return "AX_ERR_INDEX";
    case AX_ERR_DIVZERO: return "AX_ERR_DIVZERO";
    case AX_ERR_SHAPE: return "AX_ERR_SHAPE";
    case AX_ERR_NOMEM: return "AX_ERR_NOMEM";
    case AX_ERR_COMPILE: return "AX_ERR_COMPILE";
    case AX_ERR_BACKEND: return "AX_ERR_BACKEND";
    case AX_ERR_ARG: return "AX_ERR_ARG";
    case AX_ERR_CANCELLED: return "AX_ERR_CANCELLED";
    }
    return "?";
}

/* A type error: an f32 plus an i32.  The builder records the error on the
 * context and returns an invalid expression; map then returns NULL. */
static ax_exp mixed(ax_exp x, void *env) { (void)env; return ax_add(x, ax_i32(1)); }

/* Reads xs[i + 1]: out of bounds for the last element. */
static ax_exp next(ax_exp ix, void *env)
{
    ax_acc xs = *(ax_acc *)env;
    return ax_at(xs, ax_ix1(ax_add(ax_index_get(ix, 0), ax_i64(1))));
}

/* Runs a and prints the outcome. */
static void attempt(ax_ctx *cx, const char *what, ax_acc a)
{
    ax_array *r = ax_run(cx, a);
    if (!r) {
        /* the status and message stay until the next call on cx */
        printf("%s: %s: %s\n", what, status_name(ax_status_of(cx)), ax_error(cx));
        return;
    }
    printf("%s: ok, %lld elements\n", what, (long long)ax_array_size(r));
    ax_array_release(r);
}

int main(void)
{
    float x[4] = {1, 2, 3, 4};
    int64_t n = 4;
    ax_ctx *cx = ax_ctx_new(NULL);
    if (!cx) return 1;   /* only when memory for the context itself is lacking */
    ax_acc xs = ax_use(cx, ax_array_wrap(cx, AX_F32, 1, &n, x));

    /* 1. misuse of the builder: reported by ax_run, naming the operation */
    ax_acc bad = ax_map(mixed, NULL, xs);
    printf("the term is %s\n", bad ? "valid" : "invalid (NULL)");
    attempt(cx, "type error", bad);

    /* 2. a fault while running: an index out of bounds (safe mode) */
    attempt(cx, "out of bounds", ax_generate(cx, ax_ix1(ax_i64(4)), next, &xs));

    /* 3. the context is usable again: the error was reported and cleared */
    attempt(cx, "after the errors", ax_map(ax_fn_neg, NULL, xs));

    /* 4. functions that are not builders report a bad argument directly */
    ax_array *a = ax_array_new(cx, ax_type_scalar(AX_F32), 1, &n);
    float out[4];
    if (ax_array_copy_out(a, 3, out) != 0)
        printf("copy_out of component 3: %s: %s\n", status_name(ax_status_of(cx)), ax_error(cx));
    ax_clear_error(cx);
    ax_array_release(a);

    ax_ctx_free(cx);
    return 0;
}

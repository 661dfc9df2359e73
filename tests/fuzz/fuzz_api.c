/*
 * A fuzz target over the public API (libFuzzer, tests/fuzz/README):
 * the input is decoded into a sequence of calls on up to two contexts:
 * making arrays (huge and negative shapes among them), building programs
 * from a menu of operations and scalar functions (ill-typed ones on
 * purpose), running them, compiling and running programs, dumping every
 * stage (the CPU backend's generated C included), resets, releases, and
 * frees in any order (a program freed after its context).  Whatever the
 * input, nothing may crash, leak, hang or trip a sanitizer, and every
 * failure must leave a message.  Runs are on the interpreter (the CPU
 * backend's code generation is reached through the "c" dump), with a
 * memory limit and a cancellation hook bounding every loop.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "axle.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct In {
    const uint8_t *p;
    size_t n;
} In;

static unsigned byte(In *in)
{
    if (!in->n) return 0;
    in->n--;
    return *in->p++;
}

static int64_t extent(In *in)
{
    static const int64_t ext[] = {0, 1, 2, 3, 4, 5, 7, 8, 16, 33, 100, 1000, -1, (int64_t)1 << 31,
                                  (int64_t)1 << 32, (int64_t)1 << 62, INT64_MAX, INT64_MIN};
    return ext[byte(in) % (sizeof ext / sizeof *ext)];
}

enum { NCTX = 2, NARR = 8, NACC = 16, NPROG = 4 };

typedef struct Cx {
    ax_ctx *cx;
    ax_array *arr[NARR];
    ax_acc acc[NACC];
    int nacc;
    int cancel_calls;
} Cx;

typedef struct St {
    Cx c[NCTX];
    ax_program *prog[NPROG];
} St;

/* Bounds every awhile and every run: at most 2000 operations. */
/* Every input must run in well under the fuzzer's timeout, under ASan
 * too: the interpreter's operations in a context are cancelled after
 * 1,000 in all (not per run: an input of many runs of long loops took
 * 23 s, and over 300 s under ASan), on arrays of at most 256 KiB (the
 * memory limit; huge shapes still reach every overflow and limit
 * check). */
static bool budget(void *arg) { return ++*(int *)arg > 1000; }

static void ctx_new(St *s, int k, In *in)
{
    if (s->c[k].cx) return;
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    o.mem_limit = (int64_t)256 << 10;
    /* (not no-sharing: unfolding a graph of repeated sharing grows it
     * exponentially, up to the 50 million nodes refused, seconds an input) */
    o.debug = byte(in) & (AX_DEBUG_NO_FUSION | AX_DEBUG_NO_SIMPLIFY | AX_DEBUG_NO_CSE);
    o.unsafe = false;
    o.cancel = budget;
    o.cancel_arg = &s->c[k].cancel_calls;
    memset(&s->c[k], 0, sizeof s->c[k]);
    s->c[k].cx = ax_ctx_new(&o);
}

static void forget_terms(Cx *c)
{
    memset(c->acc, 0, sizeof c->acc);
    c->nacc = 0;
}

static void ctx_free(St *s, int k)
{
    Cx *c = &s->c[k];
    if (!c->cx) return;
    /* arrays are freed with the context; programs keep their handles */
    ax_ctx_free(c->cx);
    memset(c, 0, sizeof *c);
}

static void push(Cx *c, ax_acc a)
{
    c->acc[c->nacc % NACC] = a;
    c->nacc++;
}

static ax_acc pick(Cx *c, In *in)
{
    if (!c->nacc) return NULL;
    int n = c->nacc < NACC ? c->nacc : NACC;
    return c->acc[byte(in) % (unsigned)n];
}

/* ------------------------------------------------------------ scalar functions */

/* A unary function chosen by env: some fit every type, some only numbers,
 * some only bools or tuples (an error for the others, on purpose). */
static ax_exp fn1(ax_exp x, void *env)
{
    switch (*(uint8_t *)env % 12) {
    case 0: return x;
    case 1: return ax_add(x, x);
    case 2: return ax_neg(x);
    case 3: return ax_not(x);
    case 4: return ax_cvt(x, AX_I32);
    case 5: return ax_sqrt(ax_cvt(x, AX_F32));
    case 6: return ax_lt(x, x);
    case 7: return ax_tuple2(x, ax_cvt(x, AX_F64));
    case 8: return ax_get(x, 1);
    case 9: return ax_div(ax_cvt(x, AX_I64), ax_i64(0));   /* a run-time division by zero */
    case 10: return ax_sin(ax_cvt(x, AX_F64));
    default: return ax_bitcast(ax_cvt(x, AX_U32), AX_F32);
    }
}

static ax_exp fn2(ax_exp x, ax_exp y, void *env)
{
    switch (*(uint8_t *)env % 8) {
    case 0: return ax_add(x, y);
    case 1: return ax_max(x, y);
    case 2: return x;
    case 3: return y;
    case 4: return ax_bxor(x, y);
    case 5: return ax_mul(x, ax_cvt(y, AX_F32));
    case 6: return ax_and(x, y);
    default: return ax_div(x, y);
    }
}

static ax_exp gen(ax_exp ix, void *env)
{
    uint8_t k = *(uint8_t *)env;
    ax_exp i = ax_index_get(ix, 0);
    return k & 1 ? ax_cvt(i, AX_I32) : ax_cvt(ax_shape_size(ix), AX_F32);
}

static ax_exp idx(ax_exp ix, void *env)
{
    (void)env;
    return ax_ix1(ax_mod(ax_index_get(ix, 0), ax_i64(3)));
}

static ax_exp stfn(const ax_exp *xs, void *env)
{
    int n = *(uint8_t *)env % 3 == 0 ? 1 : *(uint8_t *)env % 3 == 1 ? 3 : 5;
    ax_exp s = xs[0];
    for (int i = 1; i < n; i++) s = ax_add(s, xs[i]);
    return s;
}

static ax_acc wcond(ax_acc x, void *env) { (void)env; return ax_unit(ax_exp_ctx(ax_size(x)), ax_gt(ax_size(x), ax_i64(-1))); }
static ax_acc wbody(ax_acc x, void *env) { return ax_map(fn1, env, x); }

/* ------------------------------------------------------------ one step */

static uint8_t envs[256];   /* constant selectors for callbacks (read only) */

static void step(St *s, In *in)
{
    unsigned op = byte(in), k = byte(in) % NCTX;
    Cx *c = &s->c[k];
    if (op % 32 != 0 && !c->cx) ctx_new(s, (int)k, in);
    ax_ctx *cx = c->cx;
    uint8_t *e = &envs[byte(in)];
    switch (op % 32) {
    case 0: ctx_new(s, (int)k, in); break;
    case 1:
        if (byte(in) % 4 == 0) ctx_free(s, (int)k);
        break;
    case 2:
        ax_ctx_reset(cx);
        forget_terms(c);   /* terms must not be used after a reset */
        break;
    case 3: case 4: {
        int rank = (int)(byte(in) % 4);
        int64_t sh[3];
        for (int d = 0; d < rank; d++) sh[d] = extent(in);
        unsigned t = byte(in);
        const ax_type *ty = ax_type_scalar((ax_scalar)(t % AX_NSCALAR));
        if (t & 0x80) {
            const ax_type *two[2] = {ty, ax_type_scalar(AX_F32)};
            ty = ax_type_tuple(cx, 2, two);
        }
        ax_array *a = ax_array_new(cx, ty, rank, sh);
        /* fill a little of it from the input */
        if (a && ax_array_size(a) > 0) {
            size_t b = ax_scalar_size(ax_array_component_type(a, 0)) * (size_t)ax_array_size(a);
            size_t m = b < in->n ? b : in->n;
            memcpy(ax_array_data(a, 0), in->p, m > 64 ? 64 : m);
        }
        unsigned slot = byte(in) % NARR;
        ax_array_release(c->arr[slot]);
        c->arr[slot] = a;
        break;
    }
    case 5: {
        ax_array *a = c->arr[byte(in) % NARR];
        push(c, ax_use(cx, a));   /* NULL: a builder error */
        break;
    }
    case 6: push(c, ax_map(fn1, e, pick(c, in))); break;
    case 7: push(c, ax_zip_with(fn2, e, pick(c, in), pick(c, in))); break;
    case 8: {
        ax_acc a = pick(c, in);
        switch (byte(in) % 6) {
        case 0: push(c, ax_fold(fn2, e, ax_i32(0), a)); break;
        case 1: push(c, ax_fold1(fn2, e, a)); break;
        case 2: push(c, ax_scanl(fn2, e, ax_f32(1), a)); break;
        case 3: push(c, ax_scanr1(fn2, e, a)); break;
        case 4: push(c, ax_fold_seg(fn2, e, ax_i32(0), a, pick(c, in))); break;
        default: push(c, ax_aget(ax_scanl_ex(fn2, e, ax_i32(0), a), (int)(byte(in) % 3))); break;
        }
        break;
    }
    case 9: {
        int rank = 1 + (int)(byte(in) % 2);
        ax_exp sh = rank == 1 ? ax_ix1(ax_i64(extent(in))) : ax_ix2(ax_i64(extent(in)), ax_i64(extent(in)));
        push(c, ax_generate(cx, sh, gen, e));
        break;
    }
    case 10: {
        ax_acc a = pick(c, in);
        switch (byte(in) % 5) {
        case 0: push(c, ax_backpermute(ax_ix1(ax_i64(extent(in))), idx, NULL, a)); break;
        case 1: push(c, ax_reshape(ax_ix1(ax_i64(extent(in))), a)); break;
        case 2: {
            ax_slice sp[2] = {ax_fixed(ax_i64(extent(in))), ax_all()};
            push(c, ax_replicate(2, sp, a));
            break;
        }
        case 3: {
            ax_slice sp[2] = {ax_fixed(ax_i64(extent(in))), ax_all()};
            push(c, ax_slice_((int)(byte(in) % 3), byte(in) & 1 ? sp : NULL, a));
            break;
        }
        default: push(c, ax_flatten(a)); break;
        }
        break;
    }
    case 11: push(c, ax_permute(fn2, e, pick(c, in), idx, NULL, pick(c, in))); break;
    case 12: {
        int w = *e % 3 == 0 ? 1 : *e % 3 == 1 ? 3 : 5;
        /* one extent per dimension of the array (the API cannot check the
         * length of this list): w, then 1s */
        int size[AX_MAX_RANK] = {w, 1, 1, 1, 1, 1, 1, 1};
        ax_boundary b = byte(in) % 4 == 0 ? ax_clamp() : byte(in) % 2 ? ax_wrap() : ax_constant(ax_i32(7));
        push(c, ax_stencil(stfn, e, size, b, pick(c, in)));
        break;
    }
    case 13: push(c, ax_filter(fn1, e, pick(c, in))); break;
    case 14: push(c, ax_awhile(wcond, wbody, e, pick(c, in))); break;
    case 15: {
        ax_acc t = ax_atuple2(pick(c, in), pick(c, in));
        push(c, byte(in) & 1 ? t : ax_aget(t, (int)(byte(in) % 3) - 1));
        break;
    }
    case 16: push(c, ax_acond(ax_gt(ax_size(pick(c, in)), ax_i64(2)), pick(c, in), pick(c, in))); break;
    case 17: case 18: {
        ax_array *out[4] = {0};
        int n = ax_run_n(cx, pick(c, in), out, 1 + (int)(byte(in) % 4));
        if (n < 0 && !ax_error(cx)[0]) abort();   /* every failure says why */
        for (int i = 0; i < n; i++) ax_array_release(out[i]);
        break;
    }
    case 19: {
        unsigned slot = byte(in) % NPROG;
        ax_program_free(s->prog[slot]);
        s->prog[slot] = ax_compile(cx, pick(c, in));
        break;
    }
    case 20: {
        ax_program *p = s->prog[byte(in) % NPROG];
        ax_array *out[4] = {0};
        int n = ax_program_run(p, out, 4);   /* p may be an orphan of a freed context */
        for (int i = 0; i < n; i++) ax_array_release(out[i]);
        if (p) (void)ax_program_stats(p);
        break;
    }
    case 21: {
        unsigned slot = byte(in) % NPROG;
        ax_program_free(s->prog[slot]);
        s->prog[slot] = NULL;
        break;
    }
    case 22: {
        static const char *const stages[] = {"source", "sharing", "simplify", "fusion", "kernels", "c", "dot", "bogus"};
        char *d = ax_dump(cx, pick(c, in), stages[byte(in) % 8], byte(in) & 1);
        free(d);
        break;
    }
    case 23: {
        unsigned slot = byte(in) % NARR;
        ax_array_release(c->arr[slot]);
        c->arr[slot] = NULL;
        break;
    }
    case 24: {
        /* misuse the API promises to survive */
        ax_exp one = ax_const(cx, ax_i32(1));
        (void)ax_tuple(1, &one);
        (void)ax_type_kind_of(ax_acc_type(NULL));
        (void)ax_type_arity(NULL);
        (void)ax_slice_(2, NULL, pick(c, in));
        (void)ax_map(NULL, NULL, pick(c, in));
        (void)ax_array_copy_out(c->arr[byte(in) % NARR], (int)byte(in) - 2, NULL);
        (void)ax_run(cx, NULL);
        break;
    }
    case 25: ax_clear_error(cx); break;
    case 27: {
        /* parameters: an index in range or not, any element type, any rank */
        int idx = (int)byte(in) - 2;
        const ax_type *ty = ax_type_scalar((ax_scalar)(byte(in) % AX_NSCALAR));
        int rank = (int)(byte(in) % 5) - 1;
        if (byte(in) & 1) push(c, ax_param(cx, idx, ty, rank));
        else push(c, ax_map(fn1, e, ax_unit(cx, ax_param_exp(cx, idx, ty))));
        break;
    }
    case 28: {
        /* a compiled program run with arguments from this context's
         * arrays (of any type and rank, NULL, or too few) */
        ax_program *p = s->prog[byte(in) % NPROG];
        ax_array *args[4], *out[4] = {0};
        int nargs = (int)(byte(in) % 5);
        for (int i = 0; i < 4; i++) args[i] = c->arr[byte(in) % NARR];
        int n = ax_program_run_with(p, byte(in) & 1 ? args : NULL, nargs, out, 4);
        for (int i = 0; i < n; i++) ax_array_release(out[i]);
        if (p) (void)ax_program_params(p);
        break;
    }
    case 26: {
        ax_array *a = c->arr[byte(in) % NARR];
        if (a) {
            char buf[64];
            (void)ax_type_str(ax_array_type(a), buf, sizeof buf);
            ax_array_retain(a);
            ax_array_release(a);
        }
        break;
    }
    default: push(c, ax_map(fn1, e, ax_map(fn1, e + 1 - (e == &envs[255]), pick(c, in)))); break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    for (int i = 0; i < 256; i++) envs[i] = (uint8_t)i;
    In in = {data, size};
    St s;
    memset(&s, 0, sizeof s);
    for (int steps = 0; in.n > 0 && steps < 200; steps++) step(&s, &in);
    /* the end: programs and contexts freed in an order the input chose */
    bool programs_first = size && (data[size - 1] & 1);
    if (programs_first)
        for (int i = 0; i < NPROG; i++) ax_program_free(s.prog[i]);
    for (int k = 0; k < NCTX; k++) {
        for (int i = 0; i < NARR && s.c[k].cx; i++) ax_array_release(s.c[k].arr[i]);
        ctx_free(&s, k);
    }
    if (!programs_first)
        for (int i = 0; i < NPROG; i++) ax_program_free(s.prog[i]);
    return 0;
}

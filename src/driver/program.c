/*
 * Compiled programs (ax_compile, ax_program_run_with, ax_program_free,
 * ax_run): a program's compilation (the optimised program and its
 * backend's state), shared by the programs compiled from equal source
 * graphs in a context (the program memory below), each reading its own
 * arrays and arguments.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "driver_int.h"
#include "hash.h"
#include "runtime/host.h"
#include "driver/driver.h"
#include "frontend/frontend.h"
#include "runtime/array.h"
#include <stdlib.h>
#include <string.h>

/* One compilation: the optimised program and the backend's state for it.
 * Programs compiled from equal source graphs in one context share it (the
 * program memory below), each reading its own arrays: the USE nodes of
 * the shared program are pointed at a program's arrays for its runs, as
 * parameters' placeholders are at their arguments. */
typedef struct Compiled {
    int refs;                 /* the programs using it, and the memory */
    Program *prog;
    const Backend *be;
    void *state;
    int64_t depth;            /* of the optimised program: the run's stack (run_deep) */
    ax_stats stats;           /* of the compile that made it */
    Node **use;               /* its USE nodes, in preorder */
    int nuse, capuse;
    int *canon;               /* per USE node: its array's number in the source key */
    /* In the context's program memory (key.len > 0): */
    SrcKey key;               /* bytes and hash (no arrays) */
    unsigned debug;           /* the switches it was compiled under */
    struct Compiled *mprev, *mnext;   /* cx->reuse, most recently used first */
} Compiled;

struct ax_program {
    ax_ctx *cx;               /* NULL once ax_ctx_free has orphaned it */
    ax_program *prev, *next;  /* cx->programs */
    Compiled *c;
    ax_stats stats;
    ax_array **bind;          /* per USE node of c: the host array this program
                                 reads there (a reference held, so it stays valid
                                 after ax_ctx_reset drops the builder's) */
    /* Parameters (ax_param): the USE nodes of placeholders, which
     * ax_program_run_with points at its arguments for the run, and per
     * index the element type and rank an argument must have. */
    struct PUse { Node *x; ax_array *place; } *puse;
    int npuse, cappuse;
    int nparams;              /* 1 + the highest index read */
    const ax_array **pdecl;   /* nparams placeholders (NULL: index not read) */
};

/* Notes a placeholder's USE node; -1 out of memory, -2 (with an error on
 * cx) when one index is used with two types. */
static int note_param(ax_program *pr, Node *x)
{
    const ax_array *h = x->arr;
    int k = h->param - 1;
    if (k >= pr->nparams) {
        const ax_array **d = ax__realloc(pr->pdecl, sizeof *d * (size_t)(k + 1));
        if (!d) return -1;
        for (int i = pr->nparams; i <= k; i++) d[i] = NULL;
        pr->pdecl = d;
        pr->nparams = k + 1;
    }
    const ax_array *was = pr->pdecl[k];
    if (was && (was->rank != h->rank || !ty_eq(was->elt, h->elt))) {
        char a[96], b[96];
        ctx_error(pr->cx, AX_ERR_BUILD, "ax_param: parameter %d is used as [%s]^%d and as [%s]^%d", k,
                  ty_str(was->elt, a, sizeof a), was->rank, ty_str(h->elt, b, sizeof b), h->rank);
        return -2;
    }
    pr->pdecl[k] = h;
    if (pr->npuse == pr->cappuse) {
        int cap = pr->cappuse ? 2 * pr->cappuse : 4;
        struct PUse *u = ax__realloc(pr->puse, sizeof *u * (size_t)cap);
        if (!u) return -1;
        pr->puse = u;
        pr->cappuse = cap;
    }
    pr->puse[pr->npuse++] = (struct PUse){x, x->arr};
    return 0;
}

/* Collects the USE nodes of the optimised program into c->use; -1 when
 * memory runs out. */
static int find_uses(Compiled *c, Node *x)
{
    /* A let's body is followed in the loop, not by recursion: long rows of
     * bindings must not exhaust the stack. */
    while (x) {
        if (x->op == OP_USE && x->arr) {
            if (c->nuse == c->capuse) {
                int cap = c->capuse ? 2 * c->capuse : 8;
                Node **u = ax__realloc(c->use, sizeof *u * (size_t)cap);
                if (!u) return -1;
                c->use = u;
                c->capuse = cap;
            }
            c->use[c->nuse++] = x;
        }
        bool let = (x->op == OP_LET || x->op == OP_ALET) && x->n == 2;
        for (int i = 0; i < x->n - (let ? 1 : 0); i++)
            if (find_uses(c, x->kid[i])) return -1;
        x = let ? x->kid[1] : NULL;
    }
    return 0;
}

/* The program reads arrays[k] at the USE nodes of c (arrays: a source
 * key's, with c->canon; NULL: the arrays c's nodes hold now, as after
 * its own compile): holds a reference to each and notes the parameters'
 * placeholders.  0, -1 out of memory, -2 (error on cx) bad parameters. */
static int bind_arrays(ax_program *pr, ax_array *const *arrays)
{
    Compiled *c = pr->c;
    if (!(pr->bind = ax__calloc((size_t)c->nuse + 1, sizeof *pr->bind))) return -1;
    for (int i = 0; i < c->nuse; i++) {
        ax_array *a = arrays ? arrays[c->canon[i]] : c->use[i]->arr;
        c->use[i]->arr = a;
        pr->bind[i] = ax_array_retain(a);
    }
    for (int i = 0; i < c->nuse; i++)
        if (c->use[i]->arr->param) {
            int rc = note_param(pr, c->use[i]);
            if (rc) return rc;
        }
    return 0;
}

static void compiled_release(Compiled *c)
{
    if (!c || --c->refs > 0) return;
    if (c->be && c->be->release && c->state) c->be->release(c->state);
    program_free(c->prog);
    free(c->use);
    free(c->canon);
#ifndef AX_RUNTIME_ONLY
    src_key_free(NULL, &c->key);
#endif
    free(c);
}

#ifndef AX_RUNTIME_ONLY
/* ---------------------------------------------------------------- program memory
 *
 * Each context remembers its last REUSE_MAX compilations by the key of
 * their source graph (srckey.c).  A program compiled again in the context
 * (the same graph, over the same arrays or others of the same types and
 * ranks in the same places: the same program at another size, or rebuilt
 * in a loop) takes the compilation made before, instead of running sharing
 * recovery, the optimiser, code generation and the kernel lookups again:
 * a hit costs the source key (srckey.c: its tables kept in the context,
 * its numbers stored without memcpy, a four-lane hash), which is most of
 * what is left of a compile.  `axle bench --compile` reports a hit's time
 * per program (the "memory" column; docs/guide/performance.md).
 * A key is compared in full on a hit, never trusted by its hash.  Not
 * remembered: a compilation that fell back to the interpreter (a C
 * compiler installed later is then used), and none while the switches
 * that print the passes' work are on (dump, code) or no-reuse.  (Under
 * verify a program is reused: it was verified when it was compiled.)
 * The switches are part of an entry (ax_dump's plan stage changes them
 * for a moment); the other options cannot change in a context. */
enum { REUSE_MAX = 32 };
#define REUSE_BYTES ((size_t)16 << 20)   /* of keys, at most */

static bool reuse_on(const ax_ctx *cx)
{
    return !(cx->opt.debug & (AX_DEBUG_DUMP | AX_DEBUG_CODE | AX_DEBUG_NO_REUSE));
}

/* The switches that change what a compile makes. */
static unsigned reuse_switches(const ax_ctx *cx)
{
    return cx->opt.debug & ~(unsigned)(AX_DEBUG_TIMING | AX_DEBUG_CACHE | AX_DEBUG_PROFILE);
}

static void reuse_unlink(ax_ctx *cx, Compiled *c)
{
    if (c->mprev) c->mprev->mnext = c->mnext;
    else cx->reuse = c->mnext;
    if (c->mnext) c->mnext->mprev = c->mprev;
    c->mprev = c->mnext = NULL;
}

static void reuse_front(ax_ctx *cx, Compiled *c)
{
    c->mnext = cx->reuse;
    if (cx->reuse) cx->reuse->mprev = c;
    cx->reuse = c;
}

static void reuse_drop(ax_ctx *cx, Compiled *c)
{
    reuse_unlink(cx, c);
    cx->nreuse--;
    cx->reuse_bytes -= c->key.len;
    compiled_release(c);
}

static Compiled *reuse_find(ax_ctx *cx, const SrcKey *k)
{
    unsigned sw = reuse_switches(cx);
    for (Compiled *c = cx->reuse; c; c = c->mnext)
        if (c->key.hash == k->hash && c->key.len == k->len && c->debug == sw &&
            !memcmp(c->key.bytes, k->bytes, k->len)) {
            reuse_unlink(cx, c);
            reuse_front(cx, c);
            return c;
        }
    return NULL;
}

/* Remembers c under key k (its bytes taken; nothing when memory is
 * lacking: the next compile is then a full one). */
static void reuse_add(ax_ctx *cx, Compiled *c, SrcKey *k)
{
    if (k->len > REUSE_BYTES / 4) return;
    HMap at;
    hmap_init(&at);
    bool ok = (c->canon = ax__calloc((size_t)c->nuse + 1, sizeof *c->canon)) != NULL;
    for (int i = 0; ok && i < k->narrays; i++) ok = hmap_insert(&at, hmap_ptr(k->arrays[i]), i, NULL) != NULL;
    for (int i = 0; ok && i < c->nuse; i++) {
        /* every array the optimised program reads is one of the source's */
        int64_t *v = hmap_find(&at, hmap_ptr(c->use[i]->arr));
        if (v) c->canon[i] = (int)*v;
        else ok = false;
    }
    hmap_free(&at);
    if (!ok) return;
    /* the key's buffer may be the context's scratch, grown by a bigger
     * graph (srckey.c): kept at its own size */
    if (k->cap > k->len + k->len / 4 + 256) {
        unsigned char *b = ax__realloc(k->bytes, k->len ? k->len : 1);
        if (b) k->bytes = b, k->cap = k->len;
    }
    c->key.bytes = k->bytes;
    c->key.len = k->len;
    c->key.hash = k->hash;
    k->bytes = NULL;
    k->len = k->cap = 0;
    c->debug = reuse_switches(cx);
    c->refs++;
    reuse_front(cx, c);
    cx->nreuse++;
    cx->reuse_bytes += c->key.len;
    while (cx->nreuse > REUSE_MAX || cx->reuse_bytes > REUSE_BYTES) {
        Compiled *last = cx->reuse;
        while (last->mnext) last = last->mnext;
        if (last == c) break;
        reuse_drop(cx, last);
    }
}

#endif

static void program_link(ax_ctx *cx, ax_program *pr)
{
    pr->next = cx->programs;
    if (cx->programs) cx->programs->prev = pr;
    cx->programs = pr;
}

#ifndef AX_RUNTIME_ONLY
/* A program of the remembered compilation c over the arrays of key k. */
static ax_program *reuse_program(ax_ctx *cx, ax_program *pr, Compiled *c, const SrcKey *k, double t0)
{
    c->refs++;
    pr->c = c;
    int rc = bind_arrays(pr, k->arrays);
    if (rc) {
        if (rc == -1) ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory");
        return NULL;
    }
    const ax_stats *s = &c->stats;
    pr->stats.backend = s->backend;
    pr->stats.nodes = s->nodes;
    pr->stats.lets = s->lets;
    pr->stats.kernels = s->kernels;
    pr->stats.intermediates = s->intermediates;
    pr->stats.reused = true;
    pr->stats.compile_ms = now_ms() - t0;
    if (cx->opt.debug & AX_DEBUG_TIMING)
        fprintf(stderr, "axle: timing: reused the compilation of an equal program (%s) in %.3f ms; %lld nodes\n",
                s->backend, pr->stats.compile_ms, (long long)s->nodes);
    program_link(cx, pr);
    return pr;
}

/* Compiles a; kr and key: its source key as src_key gave it (1: none,
 * and none is looked for), freed here; found: its compilation in the
 * program memory (reuse_find), or NULL. */
static ax_program *compile(ax_ctx *cx, ax_acc a, int kr, SrcKey *keyp, Compiled *found, double tk)
{
    if (cx->status == AX_OK && !a) ctx_error(cx, AX_ERR_BUILD, "ax_run: the computation is NULL");
    if (cx->status == AX_OK && a->cx != cx) ctx_error(cx, AX_ERR_BUILD, "ax_run: the computation belongs to another context");
    if (cx->status != AX_OK) {
        if (kr == 0) src_key_free(cx, keyp);
        settle_error(cx);
        return NULL;
    }
    cx->msg[0] = 0;
    cx->last_status = AX_OK;
    ax_program *pr = ax__calloc(1, sizeof *pr);
    if (!pr) {
        if (kr == 0) src_key_free(cx, keyp);
        ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory");
        settle_error(cx);
        return NULL;
    }
    pr->cx = cx;
    SrcKey key = kr == 0 ? *keyp : (SrcKey){0};
    if (kr == 0) memset(keyp, 0, sizeof *keyp);   /* ours now */
    if (kr < 0) {
        ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory");
        goto fail;
    }
    Compiled *c = found;
    if (c) {
        ax_program *r = reuse_program(cx, pr, c, &key, tk);
        src_key_free(cx, &key);
        if (r) return r;
        goto fail;
    }
    if (!(c = ax__calloc(1, sizeof *c))) {
        ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory");
        goto fail;
    }
    c->refs = 1;
    pr->c = c;
    /* With a source key, the backend's own store of compiled programs
     * (the CPU's program entries in the disk cache) before the front end:
     * a program found there needs no front end and no code generation. */
    if (kr == 0) {
        if (!(c->be = backend_pick(cx, cx->opt.backend, &pr->stats.fallback))) goto fail;
        int64_t nl[3] = {0, 0, 0};
        double t0 = now_ms();
        if (c->be->find && c->be->find(cx, &key, &c->prog, &c->state, nl) > 0) {
            pr->stats.nodes = nl[0];
            pr->stats.lets = nl[1];
            c->depth = nl[2] < DEPTH_CAP ? nl[2] : DEPTH_CAP;
            schedule_stats(c->prog, &pr->stats.kernels, &pr->stats.intermediates);
            int held = find_uses(c, c->prog->root) ? -1 : bind_arrays(pr, NULL);
            if (held) {
                if (held == -1) ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory");
                goto fail;
            }
            pr->stats.backend = c->be->name;
            pr->stats.compile_ms = now_ms() - t0;
            pr->stats.from_disk = true;
            c->stats = pr->stats;
            reuse_add(cx, c, &key);
            if (cx->opt.debug & AX_DEBUG_TIMING)
                fprintf(stderr, "axle: timing: found compiled (%s) in %.3f ms; %lld nodes\n", c->be->name,
                        pr->stats.compile_ms, (long long)pr->stats.nodes);
            src_key_free(cx, &key);
            program_link(cx, pr);
            return pr;
        }
        if (cx->status != AX_OK) goto fail;
    }
    if (!(c->prog = front_end(cx, a, &pr->stats, UPTO_FUSION, 0)) ||
        (!c->be && !(c->be = backend_pick(cx, cx->opt.backend, &pr->stats.fallback))))
        goto fail;
    int held = find_uses(c, c->prog->root) ? -1 : bind_arrays(pr, NULL);
    if (held) {
        if (held == -1) ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory");
        goto fail;
    }
    pr->stats.backend = c->be->name;
    if ((c->depth = ir_depth(c->prog->root, DEPTH_CAP)) < 0) {
        ctx_error(cx, AX_ERR_NOMEM, "ax_run: out of memory");
        goto fail;
    }
    double t0 = now_ms();
    if (c->be->prepare && c->be->prepare(cx, c->prog, &c->state) != 0) {
        if (cx->status == AX_OK) ctx_error(cx, AX_ERR_BACKEND, "ax_run: the %s backend failed", c->be->name);
        goto fail;
    }
    pr->stats.compile_ms = now_ms() - t0;
    pr->stats.codegen_ms = c->prog->codegen_ms;   /* part of compile_ms */
    c->stats = pr->stats;
    if (kr == 0 && c->be->keep) c->be->keep(cx, c->prog, c->state, &key, pr->stats.nodes, pr->stats.lets);
    if (kr == 0 && !pr->stats.fallback) reuse_add(cx, c, &key);
    if (cx->opt.debug & AX_DEBUG_TIMING)
        fprintf(stderr, "axle: timing: sharing %.3f ms, optimise %.3f ms, compile (%s) %.3f ms; "
                "%lld nodes, %lld lets\n", pr->stats.sharing_ms, pr->stats.optimise_ms, c->be->name,
                pr->stats.compile_ms, (long long)pr->stats.nodes, (long long)pr->stats.lets);
    if (kr == 0) src_key_free(cx, &key);
    program_link(cx, pr);
    return pr;
fail:
    if (kr == 0) src_key_free(cx, &key);
    ax_program_free(pr);
    settle_error(cx);
    return NULL;
}


#endif

/* ------------------------------------------------------------ programs in files (bundle.c) */

ax_ctx *program_parts(ax_program *pr, ProgramParts *pp)
{
    memset(pp, 0, sizeof *pp);
    Compiled *c = pr ? pr->c : NULL;
    if (!c || !c->prog || !pr->cx) return pr ? pr->cx : NULL;
    /* the shared program's USE nodes read this program's arrays */
    for (int i = 0; i < c->nuse; i++) c->use[i]->arr = pr->bind[i];
    pp->prog = c->prog;
    pp->be = c->be;
    pp->state = c->state;
    pp->arrays = pr->bind;
    pp->narrays = c->nuse;
    pp->stats = &pr->stats;
    pp->depth = c->depth;
    return pr->cx;
}

ax_program *program_of_parts(ax_ctx *cx, Program *prog, const Backend *be, void *state, int64_t depth,
                             const ax_stats *st)
{
    ax_program *pr = ax__calloc(1, sizeof *pr);
    Compiled *c = pr ? ax__calloc(1, sizeof *c) : NULL;
    if (!c) {
        free(pr);
        if (be->release && state) be->release(state);
        program_free(prog);
        ctx_error(cx, AX_ERR_NOMEM, "ax_program_load: out of memory");
        return NULL;
    }
    pr->cx = cx;
    pr->c = c;
    c->refs = 1;
    c->prog = prog;
    c->be = be;
    c->state = state;
    c->depth = depth < DEPTH_CAP ? depth : DEPTH_CAP;
    pr->stats = *st;
    int held = find_uses(c, prog->root) ? -1 : bind_arrays(pr, NULL);
    if (held) {
        if (held == -1) ctx_error(cx, AX_ERR_NOMEM, "ax_program_load: out of memory");
        ax_program_free(pr);
        return NULL;
    }
    c->stats = pr->stats;
    program_link(cx, pr);
    return pr;
}

#ifndef AX_RUNTIME_ONLY
/* The source graph's depth, or -1 with an error on cx. */
int64_t source_depth(ax_ctx *cx, ax_acc a, const char *what)
{
    if (!a || cx->status != AX_OK) return 0;
    int64_t d = ir_depth(a, DEPTH_CAP);
    if (d < 0) {
        ctx_error(cx, AX_ERR_NOMEM, "%s: out of memory", what);
        settle_error(cx);
    }
    return d;
}

#endif

typedef struct Job {
    ax_ctx *cx;
    ax_acc a;
    int kr;                   /* compile: src_key's answer (1: no key) */
    SrcKey key;
    Compiled *found;          /* its compilation in the program memory */
    double t0;
    ax_program *pr;
    ax_array *const *args;
    int nargs;
    ax_array **out;
    int max, n;
    const char *stage;
    bool json;
    char *text;
} Job;

#ifndef AX_RUNTIME_ONLY
static void compile_job(void *p)
{
    Job *j = p;
    j->pr = compile(j->cx, j->a, j->kr, &j->key, j->found, j->t0);
}

ax_program *ax_compile(ax_ctx *cx, ax_acc a)
{
    if (!cx || !ctx_enter_as(cx, "ax_compile")) return NULL;
    Job j = {.cx = cx, .a = a, .kr = 1, .t0 = now_ms()};
    /* The program memory first (its key is found without recursion): a
     * program found there needs no deep stack, and no depth walk. */
    if (cx->status == AX_OK && a && a->cx == cx && reuse_on(cx) && (j.kr = src_key(cx, a, &j.key)) == 0)
        j.found = reuse_find(cx, &j.key);
    if (j.found) {
        compile_job(&j);
    } else {
        /* the key's walk found the depth already */
        int64_t depth = j.kr == 0 ? (j.key.depth < DEPTH_CAP ? j.key.depth : DEPTH_CAP) : source_depth(cx, a, "ax_run");
        if (depth >= 0 && run_deep(cx, depth, "ax_run", compile_job, &j) != 0) settle_error(cx);
        if (j.kr == 0) src_key_free(cx, &j.key);   /* when compile did not run */
    }
    ax_program *pr = j.pr;
    if (ctx_leave_report(cx, "ax_run")) {
        ax_program_free(pr);
        return NULL;
    }
    return pr;
}

#endif

static int program_run(ax_program *pr, ax_array *const *args, int nargs, ax_array **out, int max);

static void run_job(void *p)
{
    Job *j = p;
    j->n = program_run(j->pr, j->args, j->nargs, j->out, j->max);
}

int ax_program_run(ax_program *pr, ax_array **out, int max)
{
    return ax_program_run_with(pr, NULL, 0, out, max);
}

int ax_program_params(const ax_program *pr) { return pr ? pr->nparams : 0; }

/* The optimised program's root has the source's type (every pass keeps
 * a term's type), and lives in the compilation, not in the context's
 * term arena. */
const ax_type *ax_program_type(const ax_program *pr)
{
    return pr && pr->c && pr->c->prog && pr->c->prog->root ? pr->c->prog->root->type : NULL;
}

int ax_program_run_with(ax_program *pr, ax_array *const *args, int nargs, ax_array **out, int max)
{
    /* An orphan (its context was freed) has nothing to run with and no
     * context to report to. */
    if (!pr || !pr->cx || !ctx_enter_as(pr->cx, "ax_program_run_with")) return -1;
    ax_ctx *cx = pr->cx;
    Job j = {.cx = cx, .pr = pr, .args = args, .nargs = nargs, .out = out, .max = max, .n = -1};
    if (run_deep(cx, pr->c->depth, "ax_run", run_job, &j) != 0) settle_error(cx);
    int n = j.n;
    if (ctx_leave_report(cx, "ax_run") && n >= 0) {
        for (int i = 0; i < n; i++) ax_array_release(out[i]);
        n = -1;
    }
    return n;
}

/* Checks the arguments for the program's parameters; false with an error
 * on cx. */
static bool check_args(ax_program *pr, ax_array *const *args, int nargs)
{
    ax_ctx *cx = pr->cx;
    if (pr->nparams > 0 && (!args || nargs < pr->nparams)) {
        ctx_error(cx, AX_ERR_ARG, "ax_run: the program has %d parameter%s (ax_param) and %d argument%s were "
                  "given: compile it with ax_compile and run it with ax_program_run_with", pr->nparams, pr->nparams == 1 ? "" : "s",
                  args ? nargs : 0, (args ? nargs : 0) == 1 ? "" : "s");
        return false;
    }
    for (int k = 0; k < pr->nparams; k++) {
        const ax_array *d = pr->pdecl[k], *a = args[k];
        if (!d) continue;
        char want[96], got[96];
        if (!a) {
            ctx_error(cx, AX_ERR_ARG, "ax_run: the argument for parameter %d is NULL", k);
            return false;
        }
        if (a->cx != cx) {
            ctx_error(cx, AX_ERR_ARG, "ax_run: the argument for parameter %d belongs to another context", k);
            return false;
        }
        if (a->rank != d->rank || !ty_eq(a->elt, d->elt)) {
            ctx_error(cx, AX_ERR_ARG, "ax_run: the argument for parameter %d is [%s]^%d where [%s]^%d is needed", k,
                      ty_str(a->elt, got, sizeof got), a->rank, ty_str(d->elt, want, sizeof want), d->rank);
            return false;
        }
    }
    return true;
}

static int program_run(ax_program *pr, ax_array *const *args, int nargs, ax_array **out, int max)
{
    ax_ctx *cx = pr->cx;
    if (!out || max < 1) {
        ctx_error(cx, AX_ERR_ARG, "ax_run: no room for results (out is NULL or max < 1)");
        settle_error(cx);
        return -1;
    }
    /* A builder's error pending on the context belongs to a term being
     * built, not to this compiled program: it is set aside for the run
     * (and pending again after it; ctx_hold). */
    ctx_hold(cx);
    if (!check_args(pr, args, nargs)) {
        settle_error(cx);
        return -1;
    }
    cx->msg[0] = 0;
    cx->last_status = AX_OK;
    /* The shared program's USE nodes read this program's arrays, and the
     * placeholders' the arguments, for this run (the backends look at a
     * USE node's array when they run it). */
    Compiled *c = pr->c;
    for (int i = 0; i < c->nuse; i++) c->use[i]->arr = pr->bind[i];
    for (int i = 0; i < pr->npuse; i++) pr->puse[i].x->arr = args[pr->puse[i].place->param - 1];
    double t0 = now_ms();
    int n = c->be->run(cx, c->prog, c->state, out, max);
    /* a fault recorded on a device: a run on the host reports it (host.h) */
#ifndef AX_RUNTIME_ONLY
    if (n == AXB_RERUN_ON_HOST) n = host_rerun(cx, c->prog, backend_host(cx));
#endif
    pr->stats.run_ms = now_ms() - t0;
    for (int i = 0; i < pr->npuse; i++) pr->puse[i].x->arr = pr->puse[i].place;
    if (cx->opt.debug & AX_DEBUG_TIMING)
        fprintf(stderr, "axle: timing: run (%s) %.3f ms\n", c->be->name, pr->stats.run_ms);
    if (n < 0) {
        if (cx->status == AX_OK) ctx_error(cx, AX_ERR_BACKEND, "ax_run: the %s backend failed", c->be->name);
        settle_error(cx);
        return -1;
    }
    ctx_unhold(cx);
    return n;
}

/* Everything of a program but its handle and statistics. */
static void program_strip(ax_program *pr)
{
    if (pr->bind)
        for (int i = 0; i < pr->c->nuse; i++) ax_array_release(pr->bind[i]);
    free(pr->bind);
    pr->bind = NULL;
    compiled_release(pr->c);
    pr->c = NULL;
    free(pr->puse);
    pr->puse = NULL;
    pr->npuse = pr->cappuse = 0;
    free(pr->pdecl);
    pr->pdecl = NULL;
}

static void program_unlink(ax_program *pr)
{
    ax_ctx *cx = pr->cx;
    if (pr->prev) pr->prev->next = pr->next;
    else if (cx->programs == pr) cx->programs = pr->next;
    if (pr->next) pr->next->prev = pr->prev;
    pr->prev = pr->next = NULL;
}

void programs_orphan(ax_ctx *cx)
{
    while (cx->programs) {
        ax_program *pr = cx->programs;
        program_unlink(pr);
        program_strip(pr);
        pr->cx = NULL;
    }
#ifndef AX_RUNTIME_ONLY
    while (cx->reuse) reuse_drop(cx, cx->reuse);
#endif
}

void ax_program_free(ax_program *pr)
{
    if (!pr || (pr->cx && ctx_refuse_in_callback(pr->cx, "ax_program_free"))) return;
    if (pr->cx) program_unlink(pr);
    program_strip(pr);
    free(pr);
}

const ax_stats *ax_program_stats(const ax_program *pr) { return pr ? &pr->stats : NULL; }

#ifndef AX_RUNTIME_ONLY
int ax_run_n(ax_ctx *cx, ax_acc a, ax_array **out, int max)
{
    if (!cx || !ctx_enter_as(cx, "ax_run")) return -1;
    ax_program *pr = ax_compile(cx, a);
    int n = pr ? ax_program_run(pr, out, max) : -1;
    ax_program_free(pr);
    if (ctx_leave_report(cx, "ax_run") && n >= 0) {
        for (int i = 0; i < n; i++) ax_array_release(out[i]);
        n = -1;
    }
    return n;
}

ax_array *ax_run(ax_ctx *cx, ax_acc a)
{
    if (!cx) return NULL;
    if (a && cx->status == AX_OK && a->type->kind != TY_ARRAY) {
        ctx_error(cx, AX_ERR_ARG, "ax_run: the computation has several results (%s); use ax_run_n",
                  ty_str(a->type, (char[128]){0}, 128));
        settle_error(cx);
        return NULL;
    }
    ax_array *r = NULL;
    return ax_run_n(cx, a, &r, 1) == 1 ? r : NULL;
}
#endif

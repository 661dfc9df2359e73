/*
 * Compiling and running on every rank (axle_mpi.h): ax_mpi_compile,
 * ax_mpi_program_run, ax_mpi_run, and the communication statistics.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "mpi_int.h"
#include "driver/driver.h"
#include "runtime/array.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the program's arrays */

static int grow(void **v, int *cap, int n, size_t sz)
{
    if (n < *cap) return 0;
    int c = *cap ? 2 * *cap : 8;
    void *p = ax__realloc(*v, sz * (size_t)c);
    if (!p) return -1;
    *v = p;
    *cap = c;
    return 0;
}

typedef struct Hold {
    ax_mpi_program *pr;
    int capheld, capuse, cappuse;
    bool failed;
} Hold;

static ax_darray *darray_of(ax_mpi *m, const ax_array *a)
{
    for (ax_darray *d = m->darrays; d; d = mx_darray_next(d))
        if (ax_darray_local(d) == a) return d;
    return NULL;
}

/* Every USE node: the arrays held (a reference each; distributed ones
 * with their ax_darray), the parameters' placeholders. */
static void hold(Hold *h, Node *x)
{
    ax_mpi_program *pr = h->pr;
    while (x && !h->failed) {
        if (x->op == OP_USE && x->arr) {
            if (grow((void **)&pr->uses, &h->capuse, pr->nuse, sizeof *pr->uses)) {
                h->failed = true;
                return;
            }
            pr->uses[pr->nuse++] = x;
            if (x->arr->param) {
                int k = x->arr->param - 1;
                if (k >= pr->nparams) {
                    const ax_array **d = ax__realloc(pr->pdecl, sizeof *d * (size_t)(k + 1));
                    if (!d) {
                        h->failed = true;
                        return;
                    }
                    for (int i = pr->nparams; i <= k; i++) d[i] = NULL;
                    pr->pdecl = d;
                    pr->nparams = k + 1;
                }
                pr->pdecl[k] = x->arr;
                if (grow((void **)&pr->puse, &h->cappuse, pr->npuse, sizeof *pr->puse)) {
                    h->failed = true;
                    return;
                }
                pr->puse[pr->npuse].x = x;
                pr->puse[pr->npuse++].place = x->arr;
            }
            bool seen = false;
            for (int i = 0; i < pr->nheld && !seen; i++) seen = pr->held[i] == x->arr;
            if (!seen) {
                int cap = h->capheld;
                if (grow((void **)&pr->held, &h->capheld, pr->nheld, sizeof *pr->held) ||
                    grow((void **)&pr->dheld, &cap, pr->nheld, sizeof *pr->dheld)) {
                    h->failed = true;
                    return;
                }
                ax_darray *d = x->arr->param ? NULL : darray_of(pr->m, x->arr);
                pr->held[pr->nheld] = ax_array_retain(x->arr);
                pr->dheld[pr->nheld++] = ax_darray_retain(d);
            }
        }
        bool let = (x->op == OP_LET || x->op == OP_ALET) && x->n == 2;
        for (int i = 0; i < x->n - (let ? 1 : 0); i++) hold(h, x->kid[i]);
        if (x->op == OP_LAM) {
            /* (an awhile's functions: their bodies are kids) */
        }
        x = let ? x->kid[1] : NULL;
    }
}

/* ------------------------------------------------------------ agreement on the program */

/* A hash of the program's structure that every rank computes alike: the
 * embedded arrays' element types and ranks, not their (per-rank) extents. */
static uint64_t hash_node(const Node *x, uint64_t h, int depth)
{
    while (x && depth < 100000) {
        char t[128];
        h = hash_combine(h, (uint64_t)x->op);
        h = hash_combine(h, (uint64_t)x->n);
        if (x->type) {
            ty_str(x->type, t, sizeof t);
            h = hash_combine(h, hash_bytes(t, strlen(t)));
        }
        h = hash_combine(h, (uint64_t)(uint32_t)x->id);
        h = hash_combine(h, (uint64_t)(uint32_t)x->a);
        h = hash_combine(h, (uint64_t)x->nparam);
        if (x->op == OP_CONST) h = hash_combine(h, x->c.u);
        if (x->op == OP_USE && x->arr) h = hash_combine(h, (uint64_t)x->arr->rank);
        if (x->sten) h = hash_combine(h, hash_bytes(x->sten, sizeof *x->sten));
        if (x->slice) h = hash_combine(h, hash_bytes(x->slice, sizeof *x->slice));
        for (int i = 0; i < x->nparam; i++) h = hash_combine(h, (uint64_t)(uint32_t)x->param[i]->id);
        bool let = (x->op == OP_LET || x->op == OP_ALET) && x->n == 2;
        for (int i = 0; i < x->n - (let ? 1 : 0); i++) h = hash_node(x->kid[i], h, depth + 1);
        x = let ? x->kid[1] : NULL;
    }
    return h;
}

/* ------------------------------------------------------------ compile */

typedef struct Job {
    ax_mpi *m;
    ax_acc a;
    ax_mpi_program *pr;
    ax_darray *const *args;
    int nargs;
    ax_darray **out;
    int max, n;
} Job;

static void program_drop(ax_mpi_program *pr)
{
    if (!pr) return;
    if (pr->be && pr->be->release && pr->state) pr->be->release(pr->state);
    for (int i = 0; i < pr->nops; i++) {
        free(pr->ops[i].rd);
        free(pr->ops[i].fe);
    }
    free(pr->ops);
    hmap_free(&pr->opmap);
    free(pr->live);
    for (int i = 0; i < pr->nheld; i++) {
        ax_array_release(pr->held[i]);
        ax_darray_release(pr->dheld[i]);
    }
    free(pr->held);
    free(pr->dheld);
    free(pr->uses);
    free(pr->puse);
    free(pr->pdecl);
    program_free(pr->p);
    free(pr);
}

static void compile_job(void *arg)
{
    Job *j = arg;
    ax_mpi *m = j->m;
    ax_ctx *cx = m->cx;
    ax_mpi_program *pr = ax__calloc(1, sizeof *pr);
    if (!pr) {
        ctx_error(cx, AX_ERR_NOMEM, "ax_mpi_compile: out of memory");
        return;
    }
    pr->m = m;
    /* The planner's rewrites stay off here: its multi-generator loops
     * (OP_LOOP) and epilogues (map<epilogue>) would need distributed forms
     * of their own (a loop's reductions a local loop and one reduction, its
     * filters an exscan of their counts, an epilogue applied after its
     * fold's reduction), which the executor does not have yet; without
     * them each member is one of the operations below, distributed as it
     * is, so a loop's reductions cost one collective each instead of one
     * in all (what the single-process run computes is the same). */
    if (!(pr->p = driver_optimise(cx, j->a, &pr->stats, AX_DEBUG_NO_PLANNER))) goto fail;
    Hold h = {pr, 0, 0, 0, false};
    hold(&h, pr->p->root);
    if (h.failed) {
        ctx_error(cx, AX_ERR_NOMEM, "ax_mpi_compile: out of memory");
        goto fail;
    }
    if (mx_normalise(pr) || mx_localise(pr)) goto fail;
    /* the local backend: the CPU backend (the interpreter when asked for,
     * or when there is no C compiler, with the notice ax_run gives) */
    ax_backend_kind want = cx->opt.backend;
    if (want != AX_BACKEND_DEFAULT && want != AX_BACKEND_CPU && want != AX_BACKEND_INTERP) {
        ctx_error(cx, AX_ERR_BACKEND, "ax_mpi_compile: the distributed executor runs on the cpu or interp backend");
        goto fail;
    }
    /* chosen as ax_compile chooses (driver.h) */
    if (!(pr->be = backend_pick(cx, want, &pr->stats.fallback))) goto fail;
    pr->stats.backend = pr->be->name;
    if (!(pr->live = liveness_counts(pr->p))) {
        ctx_error(cx, AX_ERR_NOMEM, "ax_mpi_compile: out of memory");
        goto fail;
    }
    pr->depth = ir_depth(pr->p->root, AX_DEPTH_LIMIT + 10);
    j->pr = pr;
    return;
fail:
    program_drop(pr);
}

/* The local backend's compile of the program's local forms: a node's
 * rank 0 first, its other ranks then finding the kernels in the cache
 * they share (each rank compiling them at once would cost the node that
 * many compiles). */
static int prepare(ax_mpi_program *pr)
{
    ax_mpi *m = pr->m;
    ax_ctx *cx = m->cx;
    /* (the barrier on every rank, compiling or not: the ranks of a node
     * may run different local backends, a rank with no C compiler the
     * interpreter, which prepares nothing) */
    bool has = pr->box.root && pr->be->prepare;
    int me = 0;
    if (m->node != MPI_COMM_NULL) MPI_Comm_rank(m->node, &me);
    int rc = 0;
    if (me == 0 && has) rc = pr->be->prepare(cx, &pr->box, &pr->state);
    /* (bounded, as every wait for other ranks: a node's rank 0 compiling
     * for longer than the limit fails the call, the context broken) */
    MPI_Request rq;
    if (m->node != MPI_COMM_NULL && cm_wait_ctl(m, MPI_Ibarrier(m->node, &rq), &rq, "ax_mpi_compile's wait for the "
                                                "node's first rank to compile the kernels")) {
        ctx_error(cx, AX_ERR_BACKEND, "ax_mpi_compile: %s", m->why);
        return -1;
    }
    if (me != 0 && has) rc = pr->be->prepare(cx, &pr->box, &pr->state);
    if (rc && cx->status == AX_OK) ctx_error(cx, AX_ERR_BACKEND, "ax_mpi_compile: the %s backend failed", pr->be->name);
    return rc ? -1 : 0;
}

ax_mpi_program *ax_mpi_compile(ax_mpi *m, ax_acc a)
{
    if (!m) return NULL;
    ax_ctx *cx = m->cx;
    Job j = {m, a, NULL, NULL, 0, NULL, 0, 0};
    bool entered = ctx_enter(cx);
    if (!entered) {
        snprintf(m->err, sizeof m->err, "ax_mpi_compile: the context is in use by another thread");
    } else {
        cx->msg[0] = 0;
        int64_t depth = a && cx->status == AX_OK ? ir_depth(a, AX_DEPTH_LIMIT + 10) : 0;
        if (depth >= 0) run_deep(cx, depth, "ax_mpi_compile", compile_job, &j);
        else ctx_error(cx, AX_ERR_NOMEM, "ax_mpi_compile: out of memory");
    }
    uint64_t hash = j.pr ? hash_node(j.pr->p->root, 1, 0) : 0;
    if (j.pr) j.pr->hash = hash;
    /* every rank's program known good before any compiles: then compile.
     * The arrays it embeds must be alike too: their element types and
     * dimensions are in the hash, their distributions and global extents
     * here (a plain ax_use array replicated, or split with split_inputs,
     * which every rank has alike) */
    AgItem *it = NULL;
    int nit = 0;
    if (j.pr) {
        int k = 0;
        for (int i = 0; i < j.pr->nheld; i++) k += !j.pr->held[i]->param;
        it = ax__malloc(sizeof *it * (size_t)(k * AG_PER_ARRAY + 1));
        for (int i = 0, e = 0; it && i < j.pr->nheld; i++) {
            const ax_array *h = j.pr->held[i];
            if (h->param) continue;
            Dist d;
            dist_repl(&d, h->rank, h->shape);
            cm_items_array(m, it + nit, j.pr->dheld[i] ? mx_darray_dist(j.pr->dheld[i]) : &d, h, "embedded array",
                           e++);
            nit += AG_PER_ARRAY;
        }
        if (!it) {
            ctx_error(cx, AX_ERR_NOMEM, "ax_mpi_compile: out of memory");
            program_drop(j.pr);
            j.pr = NULL;
        }
    }
    int rc = cm_agree_on(m, j.pr != NULL, hash, it, nit, "ax_mpi_compile");
    free(it);
    if (rc == 0) {
        if (prepare(j.pr)) {
            program_drop(j.pr);
            j.pr = NULL;
        }
        rc = cm_agree(m, j.pr != NULL, 0, "ax_mpi_compile");
    }
    if (entered) ctx_leave(cx);
    if (rc) {
        program_drop(j.pr);
        return NULL;
    }
    ax_mpi_program *pr = j.pr;
    pr->next = m->programs;
    if (pr->next) pr->next->prev = pr;
    m->programs = pr;
    /* the operations that run whole: said once, by rank 0 */
    for (int i = 0; i < pr->nops; i++)
        if (pr->ops[i].kind == MK_WHOLE)
            mx_notice(m, "mpi: %s (operation %d) runs whole on every rank, on gathered copies of its inputs: %s",
                      pr->ops[i].name, i, pr->ops[i].why ? pr->ops[i].why : "not distributed yet");
    return pr;
}

void ax_mpi_program_free(ax_mpi_program *pr)
{
    if (!pr) return;
    ax_mpi *m = pr->m;
    if (pr->prev) pr->prev->next = pr->next;
    else if (m->programs == pr) m->programs = pr->next;
    if (pr->next) pr->next->prev = pr->prev;
    if (m->statop == pr->ops) m->statop = NULL;
    program_drop(pr);
}

/* ------------------------------------------------------------ run */

static bool check_args(ax_mpi_program *pr, ax_darray *const *args, int nargs)
{
    ax_mpi *m = pr->m;
    if (pr->nparams > 0 && (!args || nargs < pr->nparams)) {
        mx_fail(m, AX_ERR_ARG, "ax_mpi_program_run: the program has %d parameter%s and %d argument%s were given",
                pr->nparams, pr->nparams == 1 ? "" : "s", args ? nargs : 0, (args ? nargs : 0) == 1 ? "" : "s");
        return false;
    }
    for (int k = 0; k < pr->nparams; k++) {
        const ax_array *d = pr->pdecl[k];
        if (!d) continue;
        const ax_array *a = args[k] ? ax_darray_local(args[k]) : NULL;
        char want[96], got[96];
        if (!a) {
            mx_fail(m, AX_ERR_ARG, "ax_mpi_program_run: the argument for parameter %d is NULL", k);
            return false;
        }
        if (a->cx != m->cx) {
            mx_fail(m, AX_ERR_ARG, "ax_mpi_program_run: the argument for parameter %d belongs to another context", k);
            return false;
        }
        if (a->rank != d->rank || !ty_eq(a->elt, d->elt)) {
            mx_fail(m, AX_ERR_ARG, "ax_mpi_program_run: the argument for parameter %d is [%s]^%d where [%s]^%d is needed",
                    k, ty_str(a->elt, got, sizeof got), a->rank, ty_str(d->elt, want, sizeof want), d->rank);
            return false;
        }
    }
    return true;
}

static void run_job(void *arg)
{
    Job *j = arg;
    j->n = mx_run(j->pr, j->args, j->nargs, j->out, j->max);
}

static void print_stats(ax_mpi *m)
{
    for (int i = 0; i < m->nstat; i++) {
        const MStat *s = &m->stat[i];
        if (!s->runs) continue;
        fprintf(stderr,
                "axle: comm: rank %d: op %d %s (%s): %" PRId64 " run%s, sent %" PRId64 " B in %" PRId64
                " msgs, received %" PRId64 " B in %" PRId64 " msgs, %" PRId64 " collectives, %.3f ms\n",
                m->me, i, s->name ? s->name : "?", s->plan, s->runs, s->runs == 1 ? "" : "s", s->bytes_sent,
                s->msgs_sent, s->bytes_recv, s->msgs_recv, s->coll, s->ms);
    }
}

int ax_mpi_program_run(ax_mpi_program *pr, ax_darray *const *args, int nargs, ax_darray **out, int max)
{
    if (!pr) return -1;
    ax_mpi *m = pr->m;
    ax_ctx *cx = m->cx;
    Job j = {m, NULL, pr, args, nargs, out, max, -1};
    bool entered = ctx_enter(cx), ok = false;
    if (!entered) {
        snprintf(m->err, sizeof m->err, "ax_mpi_program_run: the context is in use by another thread");
    } else {
        cx->msg[0] = 0;
        if (!out || max < 1) mx_fail(m, AX_ERR_ARG, "ax_mpi_program_run: no room for results (out is NULL or max < 1)");
        else if (check_args(pr, args, nargs)) {
            /* A program nested deeper than this thread's stack allows runs
             * on a helper thread (run_deep), and the run calls MPI: MPI
             * allows that only from MPI_THREAD_SERIALIZED up.  (The stack
             * suggested is twice the need: room for what the caller's own
             * frames already hold.) */
            if (!m->serialized && !stack_fits(pr->depth))
                mx_fail(m, AX_ERR_ARG,
                        "ax_mpi_program_run: the program is nested %lld levels deep, more than this thread's stack "
                        "holds, and MPI allows only this thread to call it: initialise MPI with "
                        "MPI_THREAD_SERIALIZED (MPI_Init_thread), or run on a thread with a stack of %lld KiB",
                        (long long)pr->depth, (long long)((stack_need(pr->depth) * 2) >> 10));
            else
                ok = true;
        }
    }
    /* Before the run, every rank's arguments known good and alike: the
     * same program, each parameter's argument distributed alike (a rank
     * that holds an argument whole where another holds blocks of it would
     * wait for transfers no other rank makes), of the same global extents
     * and row blocks.  A rank whose arguments are bad fails every rank
     * here, before any transfer. */
    AgItem *it = ax__malloc(sizeof *it * (size_t)(pr->nparams * AG_PER_ARRAY + 1));
    if (!it && ok) {
        mx_fail(m, AX_ERR_NOMEM, "ax_mpi_program_run: out of memory");
        ok = false;
    }
    for (int k = 0; it && k < pr->nparams; k++) {
        ax_darray *a = ok && pr->pdecl[k] ? args[k] : NULL;
        cm_items_array(m, it + k * AG_PER_ARRAY, a ? mx_darray_dist(a) : NULL, ax_darray_local(a), "parameter", k);
    }
    int rc = cm_agree_on(m, ok, pr->hash, it, it ? pr->nparams * AG_PER_ARRAY : 0, "ax_mpi_program_run");
    free(it);
    if (rc == 0) {
        run_deep(cx, pr->depth, "ax_mpi_program_run", run_job, &j);
        rc = cm_agree(m, j.n >= 0 && cx->status == AX_OK, 0, "ax_mpi_program_run");
    }
    if (entered) ctx_leave(cx);
    if (cx->opt.debug & AX_DEBUG_COMM) print_stats(m);
    if (rc) {
        for (int i = 0; i < j.n; i++) ax_darray_release(out[i]);
        return -1;
    }
    return j.n;
}

int ax_mpi_run_n(ax_mpi *m, ax_acc a, ax_darray **out, int max)
{
    ax_mpi_program *pr = ax_mpi_compile(m, a);
    if (!pr) return -1;
    int n = ax_mpi_program_run(pr, NULL, 0, out, max);
    ax_mpi_program_free(pr);
    return n;
}

ax_darray *ax_mpi_run(ax_mpi *m, ax_acc a)
{
    ax_darray *r = NULL;
    if (!m) return NULL;
    if (a && m->cx->status == AX_OK && a->type->kind != TY_ARRAY) {
        char t[128];
        mx_fail(m, AX_ERR_ARG, "ax_mpi_run: the computation has several results (%s); use ax_mpi_run_n",
                ty_str(a->type, t, sizeof t));
        /* (the other ranks, whose computation has one result, are in
         * ax_mpi_compile's agreement: this one is named alike) */
        cm_agree(m, false, 0, "ax_mpi_compile");
        return NULL;
    }
    return ax_mpi_run_n(m, a, &r, 1) == 1 ? r : NULL;
}

int ax_mpi_stats(const ax_mpi *m, ax_mpi_opstat *out, int max)
{
    if (!m) return -1;
    for (int i = 0; i < m->nstat && i < max && out; i++) {
        const MStat *s = &m->stat[i];
        out[i] = (ax_mpi_opstat){i, s->name, s->plan, s->runs, s->bytes_sent, s->bytes_recv, s->msgs_sent,
                                 s->msgs_recv, s->coll, s->ms};
    }
    return m->nstat;
}

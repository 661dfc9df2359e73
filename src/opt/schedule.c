/*
 * The schedule's figures (docs/ARCHITECTURE.md, "The pipeline"): after fusion a
 * program is a sequence of let-bound manifest computations, each one
 * kernel (a consumer skeleton with its delayed inputs embedded, or a
 * producer computed to memory).
 *
 *  kernels        every array operation the program runs: each array node
 *                 other than a variable, use, let, tuple, projection,
 *                 delayed operand, acond or awhile (those two run the
 *                 kernels of their branches / bodies, counted once each).
 *                 A multi-phase operation (a scan, a two-phase fold) is one.
 *  intermediates  arrays written by one kernel and read by another: a
 *                 let-bound computed array whose data some kernel reads
 *                 (as an operand, or from its scalar code through indexing;
 *                 reading only the extent does not count), and a kernel
 *                 nested directly as another kernel's operand (as in a
 *                 program that was not fused).  A projection or a plain
 *                 renaming of a bound tuple passes the reads on to it.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "ir.h"
#include <stdlib.h>

typedef struct ScheduleState {
    int n;                  /* variable ids are below n */
    int *alias;             /* id -> the id it renames / projects (-1) */
    unsigned char *read;    /* data read by a kernel */
    int64_t *computed;      /* arrays a binding holds that kernels computed */
    int64_t kernels, nested;
} ScheduleState;

static bool is_kernel(Op op)
{
    switch (op) {
    case OP_AVAR: case OP_ALET: case OP_USE: case OP_ATUPLE: case OP_APROJ: case OP_DELAYED:
    case OP_ACOND: case OP_AWHILE:
        return false;
    default:
        return op_is_array(op);
    }
}

static int root_of(const ScheduleState *s, int id)
{
    for (int k = 0; k < 64 && id >= 0 && id < s->n && s->alias[id] >= 0; k++) id = s->alias[id];
    return id;
}

static void mark_read(ScheduleState *s, int id)
{
    id = root_of(s, id);
    if (id >= 0 && id < s->n) s->read[id] = 1;
}

/* The last body of a chain of lets. */
static const Node *strip(const Node *x)
{
    while (x && x->op == OP_ALET && x->n == 2) x = x->kid[1];
    return x;
}

/* Arrays of a term's result that kernels compute. */
static int64_t computed_arrays(const Node *x)
{
    x = strip(x);
    if (!x) return 0;
    if (is_kernel(x->op)) return x->type->kind == TY_ARRAYS ? x->type->width : 1;
    switch (x->op) {
    case OP_ACOND: case OP_AWHILE:
        return x->type->kind == TY_ARRAYS ? x->type->width : 1;
    case OP_ATUPLE: {
        int64_t c = 0;
        for (int i = 0; i < x->n; i++) c += computed_arrays(x->kid[i]);
        return c;
    }
    default:
        return 0;
    }
}

/* Reads from scalar code inside a kernel (a delayed operand included). */
static void scalar_reads(ScheduleState *s, const Node *x)
{
    while (x) {
        if ((x->op == OP_INDEX || x->op == OP_LINDEX) && x->n == 2 && x->kid[0]->op == OP_AVAR)
            mark_read(s, x->kid[0]->id);
        if (x->op == OP_SHAPE || x->n == 0) return;
        for (int i = 0; i < x->n - 1; i++) scalar_reads(s, x->kid[i]);
        x = x->kid[x->n - 1];
    }
}

static void walk(ScheduleState *s, const Node *x);

/* An array operand of kernel k. */
static void operand(ScheduleState *s, const Node *x)
{
    if (x->op == OP_AVAR) {
        mark_read(s, x->id);
        return;
    }
    if (x->op == OP_DELAYED) {
        scalar_reads(s, x);
        return;
    }
    const Node *b = strip(x);
    while (b && b->op == OP_APROJ) b = strip(b->kid[0]);
    if (b && (is_kernel(b->op) || b->op == OP_ACOND || b->op == OP_AWHILE)) s->nested += computed_arrays(b);
    else if (b && b->op == OP_AVAR) mark_read(s, b->id);
    walk(s, x);
}

static void walk(ScheduleState *s, const Node *x)
{
    while (x) {
        if (x->op == OP_LAM) {
            x = x->kid[0];   /* awhile's functions */
            continue;
        }
        if (!op_is_array(x->op)) return;
        if (x->op == OP_ALET && x->n == 2) {
            const Node *b = strip(x->kid[0]);
            if (x->id >= 0 && x->id < s->n) {
                if (b && b->op == OP_AVAR) s->alias[x->id] = b->id;
                else if (b && b->op == OP_APROJ && b->kid[0]->op == OP_AVAR) s->alias[x->id] = b->kid[0]->id;
                else s->computed[x->id] = computed_arrays(x->kid[0]);
            }
            walk(s, x->kid[0]);
            x = x->kid[1];
            continue;
        }
        if (is_kernel(x->op)) {
            s->kernels++;
            const Node *in = ir_epilogue(x);   /* map f (fold ...): one kernel */
            if (in) x = in;
            for (int i = 0; i < x->n; i++) {
                const Node *k = x->kid[i];
                if (op_is_array(k->op)) operand(s, k);
                else scalar_reads(s, k);
            }
            return;
        }
        if (x->op == OP_AWHILE && x->n == 3 && x->kid[2]->op == OP_AVAR) mark_read(s, x->kid[2]->id);
        for (int i = 0; i < x->n; i++)
            if (op_is_array(x->kid[i]->op) || x->kid[i]->op == OP_LAM) walk(s, x->kid[i]);
        return;
    }
}

static int max_id(const Node *x)
{
    int m = -1;
    while (x) {
        if (x->op == OP_ALET || x->op == OP_AVAR) m = x->id > m ? x->id : m;
        if (x->op == OP_LAM)
            for (int i = 0; i < x->nparam; i++) m = x->param[i]->id > m ? x->param[i]->id : m;
        if (x->n == 0 || (!op_is_array(x->op) && x->op != OP_LAM)) return m;
        for (int i = 0; i < x->n - 1; i++) {
            int k = max_id(x->kid[i]);
            m = k > m ? k : m;
        }
        x = x->kid[x->n - 1];
    }
    return m;
}

void schedule_stats(const Program *p, int64_t *kernels, int64_t *intermediates)
{
    *kernels = *intermediates = -1;
    if (!p || !p->root) return;
    ScheduleState s = {0};
    int n = p->nvars;
    int m = max_id(p->root) + 1;
    s.n = n > m ? n : m;
    s.alias = ax__malloc(sizeof *s.alias * (size_t)(s.n + 1));
    s.read = ax__calloc((size_t)s.n + 1, 1);
    s.computed = ax__calloc((size_t)s.n + 1, sizeof *s.computed);
    if (s.alias && s.read && s.computed) {
        for (int i = 0; i < s.n; i++) s.alias[i] = -1;
        walk(&s, p->root);
        int64_t inter = s.nested;
        for (int i = 0; i < s.n; i++)
            if (s.read[i]) inter += s.computed[i];
        *kernels = s.kernels;
        *intermediates = inter;
    }
    free(s.alias);
    free(s.read);
    free(s.computed);
}

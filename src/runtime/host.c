/*
 * The array level of a program, walked on the host (host.h).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "host.h"
#include "runtime/array.h"
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int host_fail(Host *h, ax_status st, const char *fmt, ...)
{
    char msg[AX_ERRMSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ctx_error(h->cx, st, "%s", msg);
    return -1;
}

int host_malformed(Host *h, const Node *x, const char *what)
{
    return host_fail(h, AX_ERR_BACKEND, "%s: malformed program at %s: %s", h->ops->name,
                     x ? op_name(x->op) : "(null)", what);
}

int host_nomem(Host *h) { return host_fail(h, AX_ERR_NOMEM, "%s: out of memory", h->ops->name); }

int host_width(const Type *t)
{
    if (t->kind == TY_ARRAY) return 1;
    if (t->kind != TY_ARRAYS) return 0;
    int w = 0;
    for (int k = 0; k < t->n; k++) w += host_width(t->elts[k]);
    return w;
}

int host_offset(const Type *t, int i)
{
    int off = 0;
    for (int k = 0; k < i && k < t->n; k++) off += host_width(t->elts[k]);
    return off;
}

void host_release(ax_array **v, int n)
{
    for (int k = 0; k < n; k++) {
        ax_array_release(v[k]);
        v[k] = NULL;
    }
}

/* The public name of an operation, for run-time messages: the executors
 * word their faults alike (the tests compare them). */
const char *host_api_name(Op op)
{
    switch (op) {
    case OP_INDEX: return "ax_at";
    case OP_LINDEX: return "ax_at_linear";
    case OP_UNIT: return "ax_unit";
    case OP_GENERATE: return "ax_generate";
    case OP_MAP: return "ax_map";
    case OP_ZIPWITH: return "ax_zip_with";
    case OP_BACKPERMUTE: case OP_TRANSFORM: return "ax_backpermute";
    case OP_PERMUTE: return "ax_permute";
    case OP_REPLICATE: return "ax_replicate";
    case OP_SLICE: return "ax_slice_";
    case OP_RESHAPE: return "ax_reshape";
    case OP_FOLD: return "ax_fold";
    case OP_FOLD1: return "ax_fold1";
    case OP_FOLDSEG: return "ax_fold_seg";
    case OP_FOLD1SEG: return "ax_fold1_seg";
    case OP_SCANL: return "ax_scanl";
    case OP_SCANL1: return "ax_scanl1";
    case OP_SCANR: return "ax_scanr";
    case OP_SCANR1: return "ax_scanr1";
    case OP_SCANLEX: return "ax_scanl_ex";
    case OP_SCANREX: return "ax_scanr_ex";
    case OP_FILTER: return "ax_filter";
    case OP_STENCIL: return "ax_stencil";
    case OP_STENCIL2: return "ax_stencil2";
    case OP_ACOND: return "ax_acond";
    case OP_AWHILE: return "ax_awhile";
    case OP_SORT: return "ax_sort";
    default: return op_name(op);
    }
}

/* The families (host.h), by operation. */
static const unsigned char family[OP_NOPS] = {
    [OP_UNIT] = HOST_UNIT,
    [OP_GENERATE] = HOST_PRODUCER, [OP_MAP] = HOST_PRODUCER, [OP_ZIPWITH] = HOST_PRODUCER,
    [OP_BACKPERMUTE] = HOST_PRODUCER, [OP_TRANSFORM] = HOST_PRODUCER, [OP_REPLICATE] = HOST_PRODUCER,
    [OP_SLICE] = HOST_PRODUCER, [OP_RESHAPE] = HOST_PRODUCER,
    [OP_FOLD] = HOST_FOLD, [OP_FOLD1] = HOST_FOLD,
    [OP_FOLDSEG] = HOST_FOLDSEG, [OP_FOLD1SEG] = HOST_FOLDSEG,
    [OP_SCANL] = HOST_SCAN, [OP_SCANL1] = HOST_SCAN, [OP_SCANR] = HOST_SCAN, [OP_SCANR1] = HOST_SCAN,
    [OP_SCANLEX] = HOST_SCAN, [OP_SCANREX] = HOST_SCAN,
    [OP_PERMUTE] = HOST_PERMUTE,
    [OP_STENCIL] = HOST_STENCIL, [OP_STENCIL2] = HOST_STENCIL,
    [OP_FILTER] = HOST_FILTER,
    [OP_LOOP] = HOST_LOOP,
    [OP_SORT] = HOST_SORT,
};

HostFamily host_family(Op op) { return (unsigned)op < OP_NOPS ? (HostFamily)family[op] : HOST_NONE; }

int host_run_method(Host *h, const Node *x, void *o)
{
    HostFamily f = host_family(x->op);
    if (f == HOST_NONE || !h->ops->method[f]) return host_malformed(h, x, "not an array operation");
    return h->ops->method[f](h, x, o);
}

/* Writes "i,j,k" into buf. */
void host_fmt_ints(char *buf, size_t size, int n, const int64_t *v)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int d = 0; d < n && off < size; d++)
        off += (size_t)snprintf(buf + off, size - off, d ? ",%" PRId64 : "%" PRId64, v[d]);
}

bool host_init(Host *h, const HostOps *ops, void *self, ax_ctx *cx, const Program *p, const Liveness *live)
{
    memset(h, 0, sizeof *h);
    h->ops = ops;
    h->self = self;
    h->cx = cx;
    h->nvars = p->nvars;
    h->live = live;
    size_t n = (size_t)(p->nvars > 0 ? p->nvars : 1);
    if (live && live->nvars != p->nvars) h->live = live = NULL;   /* not this program's: no early release */
    h->aenv = ax__calloc(n, sizeof *h->aenv);
    h->left = ax__calloc((size_t)(live && live->nleaves > 0 ? live->nleaves : 1), sizeof *h->left);
    h->memo = ax__calloc(1, sizeof *h->memo);   /* optional: drop_reads walks without it */
    if (h->aenv && h->left) return true;
    host_nomem(h);
    host_free(h);
    return false;
}

void host_free(Host *h)
{
    free(h->aenv);
    free(h->left);
    if (h->memo) {
        hmap_free(&h->memo->reads);
        free(h->memo->ids);
        free(h->memo);
    }
    h->aenv = NULL;
    h->left = NULL;
    h->memo = NULL;
}

/* One read of leaves [off, off + n) of binder id done: each leaf's array
 * goes after its last read. */
static void drop(Host *h, int id, int off, int n)
{
    if (!h->live || (unsigned)id >= (unsigned)h->nvars || h->live->first[id] < 0) return;
    int *left = h->left + h->live->first[id];
    for (int j = off; j < off + n && j < h->live->width[id]; j++)
        if (left[j] > 0 && --left[j] == 0 && h->aenv[id]) host_release(h->aenv[id] + j, 1);
}

/* Starts binder id's counters (it was just bound). */
static void count_reads(Host *h, int id)
{
    if (!h->live || (unsigned)id >= (unsigned)h->nvars || h->live->first[id] < 0) return;
    int f = h->live->first[id];
    memcpy(h->left + f, h->live->count + f, sizeof *h->left * (size_t)h->live->width[id]);
}

/* Appends the reads of array variables in y to m->ids; false when out of
 * memory. */
static bool collect_tree(HostMemo *m, const Node *y)
{
    if (!y) return true;
    int id, off, n;
    if (liveness_read(y, &id, &off, &n)) {
        if (m->nids > m->ids_cap - 3) {
            int cap = m->ids_cap ? 2 * m->ids_cap : 63;
            int *nw = cap > m->ids_cap ? ax__realloc(m->ids, sizeof *nw * (size_t)cap) : NULL;
            if (!nw) return false;
            m->ids = nw;
            m->ids_cap = cap;
        }
        m->ids[m->nids++] = id;
        m->ids[m->nids++] = off;
        m->ids[m->nids++] = n;
        return true;
    }
    for (int i = 0; i < y->n; i++)
        if (!collect_tree(m, y->kid[i])) return false;
    return true;
}

/* The kids of x whose reads the walk did not count: its scalar code,
 * shapes, and, where the executor embeds them, delayed operands. */
static bool uncounted(const Host *h, const Node *k)
{
    bool array = k->type && (k->type->kind == TY_ARRAY || k->type->kind == TY_ARRAYS) && k->op != OP_LAM;
    return !array || (k->op == OP_DELAYED && h->ops->embeds_delayed);
}

static void drop_tree(Host *h, const Node *y)
{
    if (!y) return;
    int id, off, n;
    if (liveness_read(y, &id, &off, &n)) {
        drop(h, id, off, n);
        return;
    }
    for (int i = 0; i < y->n; i++) drop_tree(h, y->kid[i]);
}

/* The reads of operation x's arrays other than through the operands the
 * walk evaluated for it (those counted in host_eval).  Only counted reads
 * release anything (drop): without liveness counts there is nothing to
 * do.  The variables are found once per node and run (an awhile body runs
 * its operations once per step); without the table, by walking again. */
static void drop_reads(Host *h, const Node *x)
{
    if (!h->live) return;
    HostMemo *m = h->memo;
    bool added = false;
    int64_t *r = m ? hmap_insert(&m->reads, hmap_ptr(x), -1, &added) : NULL;
    if (r && added) {
        int start = m->nids;
        bool ok = true;
        for (int i = 0; i < x->n && ok; i++)
            if (uncounted(h, x->kid[i])) ok = collect_tree(m, x->kid[i]);
        if (ok) *r = (int64_t)start << 32 | m->nids;
        else m->nids = start;   /* (stays -1: walked each time) */
    }
    if (r && *r >= 0) {
        for (int i = (int)(*r >> 32), end = (int)(*r & 0xffffffff); i + 2 < end; i += 3)
            drop(h, m->ids[i], m->ids[i + 1], m->ids[i + 2]);
        return;
    }
    for (int i = 0; i < x->n; i++)
        if (uncounted(h, x->kid[i])) drop_tree(h, x->kid[i]);
}

int host_eval1(Host *h, const Node *x, ax_array **a)
{
    *a = NULL;
    if (!x || x->type->kind != TY_ARRAY) return host_malformed(h, x, "expected a single array");
    return host_eval(h, x, a);
}

static int bind_alam(Host *h, const Node *f, ax_array **v, int width)
{
    if (!f || f->op != OP_LAM || f->n < 1 || !f->kid[0]) return host_malformed(h, f, "expected an array function");
    int off = 0;
    for (int k = 0; k < f->nparam; k++) {
        const Node *p = f->param[k];
        if (!p || (unsigned)p->id >= (unsigned)h->nvars) return host_malformed(h, f, "bad parameter");
        h->aenv[p->id] = v + off;
        off += host_width(p->type);
    }
    if (off != width) return host_malformed(h, f, "parameters do not match the arguments");
    return 0;
}

static void unbind_alam(Host *h, const Node *f)
{
    for (int k = 0; f && k < f->nparam; k++)
        if (f->param[k] && (unsigned)f->param[k]->id < (unsigned)h->nvars) h->aenv[f->param[k]->id] = NULL;
}

int host_cancelled(Host *h)
{
    if (!ctx_cancel_asked(h->cx)) return 0;
    return host_fail(h, AX_ERR_CANCELLED, "ax_run: cancelled (ax_options.cancel asked the %s backend to stop)",
                     h->ops->name);
}

/* AWHILE: x = init; while (cond(x)[]) x = body(x).  Each iteration's
 * arrays are released as soon as the next one exists. */
static int awhile(Host *h, const Node *x, ax_array **out)
{
    const Node *cond = x->kid[0], *body = x->kid[1];
    int w = host_width(x->type);
    ax_array **cur = ax__calloc((size_t)(w > 0 ? w : 1), sizeof *cur);
    ax_array **nxt = ax__calloc((size_t)(w > 0 ? w : 1), sizeof *nxt);
    int rc = cur && nxt ? host_eval(h, x->kid[2], cur) : host_nomem(h);
    bool have = rc == 0;
    while (rc == 0) {
        ax_array *flag = NULL;
        /* An endless loop can be stopped (ax_options.cancel). */
        if ((rc = host_cancelled(h))) break;
        if ((rc = bind_alam(h, cond, cur, w))) break;
        if ((rc = host_eval1(h, cond->kid[0], &flag))) break;
        if (flag->rank != 0 || flag->ncomp != 1 || flag->elt->kind != TY_SCALAR || flag->elt->s != AX_BOOL) {
            ax_array_release(flag);
            rc = host_malformed(h, x, "the condition is not a rank-0 bool array");
            break;
        }
        if ((rc = array_host(flag))) {   /* a GPU's result: read back */
            ax_array_release(flag);
            break;
        }
        bool go = sc_load(flag->buf[0], AX_BOOL, 0).u != 0;
        ax_array_release(flag);
        if (!go) break;
        if ((rc = bind_alam(h, body, cur, w))) break;
        /* the state's arrays go after their last read in the step (a
         * sweep's old grid before its next grid is made), or at its end */
        for (int k = 0; k < body->nparam; k++) count_reads(h, body->param[k]->id);
        if ((rc = host_eval(h, body->kid[0], nxt))) break;
        host_release(cur, w);
        ax_array **t = cur;
        cur = nxt;
        nxt = t;
    }
    unbind_alam(h, cond);
    unbind_alam(h, body);
    if (rc == 0) memcpy(out, cur, sizeof *out * (size_t)w);
    else if (have) host_release(cur, w);
    free(cur);
    free(nxt);
    return rc;
}

/* ALET.  A row of lets is walked in a loop (bind, then go on with the
 * body) rather than by recursion, so that the C stack follows the nesting
 * of the other operations, not the number of bindings in a row (sharing
 * recovery binds every array a function reads at one place).  Each
 * binding's arrays go after their last read, or when the row is done. */
static int alet(Host *h, const Node *x, ax_array **out)
{
    /* every binding's array slots in one block for the whole row: an
     * awhile body is such a row, entered once per step */
    size_t total = 0;
    for (const Node *z = x; z->op == OP_ALET; z = z->kid[1]) {
        int w = host_width(z->kid[0]->type);
        total += (size_t)(w > 0 ? w : 1);
    }
    ax_array **block = ax__calloc(total, sizeof *block);
    if (!block) return host_nomem(h);
    size_t off = 0;
    const Node *y = x;
    int rc = 0;
    while (y->op == OP_ALET) {
        if ((unsigned)y->id >= (unsigned)h->nvars) {
            rc = host_malformed(h, y, "variable id out of range");
            break;
        }
        int w = host_width(y->kid[0]->type);
        ax_array **v = block + off;
        off += (size_t)(w > 0 ? w : 1);
        if (host_eval(h, y->kid[0], v)) {
            rc = -1;
            break;
        }
        h->aenv[y->id] = v;
        count_reads(h, y->id);
        y = y->kid[1];
    }
    if (rc == 0) rc = host_eval(h, y, out);
    for (const Node *z = x; z != y && z->op == OP_ALET; z = z->kid[1]) {
        if ((unsigned)z->id >= (unsigned)h->nvars) break;
        ax_array **v = h->aenv[z->id];
        h->aenv[z->id] = NULL;
        if (v) host_release(v, host_width(z->kid[0]->type));
    }
    free(block);
    return rc;
}

int host_eval(Host *h, const Node *x, ax_array **out)
{
    switch (x->op) {
    case OP_USE:
        if (!x->arr) return host_malformed(h, x, "no array");
        out[0] = ax_array_retain(x->arr);
        return 0;
    case OP_AVAR: {
        ax_array **v = (unsigned)x->id < (unsigned)h->nvars ? h->aenv[x->id] : NULL;
        if (!v) return host_malformed(h, x, "unbound array variable");
        int w = host_width(x->type);
        for (int k = 0; k < w; k++) out[k] = ax_array_retain(v[k]);
        drop(h, x->id, 0, w);
        return 0;
    }
    case OP_ALET: return alet(h, x, out);
    case OP_AWHILE: return awhile(h, x, out);
    case OP_ACOND: {
        bool c;
        if (h->ops->cond(h, x, &c)) return -1;
        return host_eval(h, x->kid[c ? 1 : 2], out);
    }
    case OP_ATUPLE: {
        int off = 0;
        for (int k = 0; k < x->n; k++) {
            if (host_eval(h, x->kid[k], out + off)) {
                host_release(out, off);
                return -1;
            }
            off += host_width(x->kid[k]->type);
        }
        return 0;
    }
    case OP_APROJ: {
        const Type *tt = x->kid[0]->type;
        if (tt->kind != TY_ARRAYS || x->a < 0 || x->a >= tt->n) return host_malformed(h, x, "bad projection");
        int w = host_width(tt), off = host_offset(tt, x->a), cw = host_width(x->type);
        int id, o, n;
        if (liveness_read(x, &id, &o, &n)) {
            /* a component of a variable: only its leaves are read */
            ax_array **v = (unsigned)id < (unsigned)h->nvars ? h->aenv[id] : NULL;
            if (!v) return host_malformed(h, x, "unbound array variable");
            if (n != cw) return host_malformed(h, x, "bad projection");
            for (int k = 0; k < n; k++) out[k] = ax_array_retain(v[o + k]);
            drop(h, id, o, n);
            return 0;
        }
        ax_array **v = ax__calloc((size_t)(w > 0 ? w : 1), sizeof *v);
        if (!v) return host_nomem(h);
        int rc = host_eval(h, x->kid[0], v);
        if (rc == 0)
            for (int k = 0; k < w; k++) {
                if (k >= off && k < off + cw) out[k - off] = v[k];
                else ax_array_release(v[k]);
            }
        free(v);
        return rc;
    }
    default: {
        int rc = host_cancelled(h);
        if (rc == 0) rc = h->ops->op(h, x, out);
        if (rc == 0) drop_reads(h, x);
        return rc;
    }
    }
}

int host_seg_offsets(Host *h, const char *what, const void *lens, ax_scalar s, int64_t nseg, int64_t n, int64_t *off)
{
    int64_t sum = 0;
    off[0] = 0;
    for (int64_t k = 0; k < nseg; k++) {
        Scalar v = sc_load(lens, s, k);
        if (!sc_is_signed(s) && v.u > (uint64_t)INT64_MAX)
            return host_fail(h, AX_ERR_SHAPE, "%s: segment %" PRId64 " has length %" PRIu64 ", more than the %" PRId64
                             " elements of a row", what, k, v.u, n);
        int64_t l = sc_is_signed(s) ? v.i : (int64_t)v.u;
        if (l < 0) return host_fail(h, AX_ERR_SHAPE, "%s: segment %" PRId64 " has negative length %" PRId64, what, k, l);
        if (l > n - sum)
            return host_fail(h, AX_ERR_SHAPE, "%s: the segment lengths add up to more than the innermost extent %" PRId64,
                             what, n);
        sum += l;
        off[k + 1] = sum;
    }
    if (sum != n)
        return host_fail(h, AX_ERR_SHAPE, "%s: the segment lengths add up to %" PRId64 ", not the innermost extent %" PRId64,
                         what, sum, n);
    return 0;
}

int host_rerun(ax_ctx *cx, Program *p, const Backend *hb)
{
    ax_status st = cx->status != AX_OK ? cx->status : AX_ERR_BACKEND;
    char was[AX_ERRMSG];
    snprintf(was, sizeof was, "%s", cx->msg);
    cx->status = AX_OK;
    cx->msg[0] = 0;
    void *state = NULL;
    int n = -1;
    if (hb->prepare(cx, p, &state) == 0) {
        ax_array *tmp[64];
        n = hb->run(cx, p, state, tmp, 64);
        for (int i = 0; i < n; i++) ax_array_release(tmp[i]);
    }
    if (state) hb->release(state);
    if (n >= 0 && cx->status == AX_OK) ctx_error(cx, st, "%s that the %s backend does not reproduce", was, hb->name);
    return -1;
}

int host_producer_shape(Host *h, const Node *x, const HostOperands *o, int64_t *sh, bool *linear)
{
    int r = x->type->rank;
    *linear = false;
    switch (x->op) {
    case OP_GENERATE: case OP_BACKPERMUTE: case OP_TRANSFORM:
        for (int d = 0; d < r; d++) sh[d] = o->val(o->arg, 0, d);
        return 0;
    case OP_MAP:
    case OP_ZIPWITH: {
        /* the intersection; linear when every operand has that shape */
        for (int d = 0; d < r; d++) {
            sh[d] = o->shape(o->arg, 0)[d];
            for (int i = 1; i < o->n; i++)
                if (o->shape(o->arg, i)[d] < sh[d]) sh[d] = o->shape(o->arg, i)[d];
        }
        *linear = true;
        for (int i = 0; i < o->n; i++)
            for (int d = 0; d < r; d++)
                if (o->shape(o->arg, i)[d] != sh[d]) *linear = false;
        return 0;
    }
    case OP_RESHAPE: {
        for (int d = 0; d < r; d++) sh[d] = o->val(o->arg, 0, d);
        int64_t n = shape_size_checked(h->cx, "ax_reshape", r, sh);
        if (n < 0) return -1;
        int srank = o->rank(o->arg, 0);
        const int64_t *ssh = o->shape(o->arg, 0);
        int64_t size = 1;
        for (int d = 0; d < srank; d++) size *= ssh[d];
        if (n != size) {
            char a[256], b[256];
            host_fmt_ints(a, sizeof a, srank, ssh);
            host_fmt_ints(b, sizeof b, r, sh);
            return host_fail(h, AX_ERR_SHAPE,
                             "ax_reshape: an array of shape (%s) (%" PRId64 " elements) cannot take shape (%s) (%" PRId64
                             " elements)", a, size, b, n);
        }
        *linear = true;
        return 0;
    }
    case OP_REPLICATE:
    case OP_SLICE: {
        bool rep = x->op == OP_REPLICATE;
        const Slice *sp = x->slice;
        const int64_t *ssh = o->shape(o->arg, 0);
        int rr = 0;
        for (int d = 0, k = 0, s = 0; d < sp->n; d++) {
            if (!sp->fixed[d]) {
                sh[rr++] = ssh[s++];
                continue;
            }
            int64_t v = o->val(o->arg, 1 + k++, 0);
            if (rep) {
                sh[rr++] = v;
            } else {
                if (v < 0 || v >= ssh[s]) {
                    char b[256];
                    host_fmt_ints(b, sizeof b, o->rank(o->arg, 0), ssh);
                    return host_fail(h, AX_ERR_INDEX,
                                     "ax_slice_: index %" PRId64 " of dimension %d out of bounds for shape (%s)", v, s, b);
                }
                s++;
            }
        }
        return 0;
    }
    default:
        return host_malformed(h, x, "not a producer");
    }
}

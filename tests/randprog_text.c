/*
 * The program's description (randprog.c's essay, "Description"): the
 * generator's memory, text buffers, the statements of the description in
 * nested blocks, and the report of a generator bug (bad).
 *
 * A part of the random program generator: tests/randprog.c #includes its
 * parts in order (one translation unit, so that every test that includes
 * randprog.c gets them all); not compiled alone.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef RANDPROG_C
#error "a part of randprog.c, which #includes it: not compiled alone"
#endif

/* ---------------------------------------------------------------- memory */

static void *galloc(G *g, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    if (!g->mem || g->mem->used + n > g->mem->cap) {
        size_t cap = n > 65536 ? n : 65536;
        Blk *b = calloc(1, sizeof *b + cap);
        if (!b) oom();
        b->cap = cap;
        b->next = g->mem;
        g->mem = b;
    }
    void *p = (char *)g->mem->data + g->mem->used;
    g->mem->used += n;
    return p;
}

static char *sfmt(G *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *sfmt(G *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *s = galloc(g, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

static void buf_vadd(Buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return;
    if (b->n + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap * 2 > b->n + (size_t)n + 256 ? b->cap * 2 : b->n + (size_t)n + 256;
        char *s = realloc(b->s, cap);
        if (!s) oom();
        b->s = s;
        b->cap = cap;
    }
    vsnprintf(b->s + b->n, (size_t)n + 1, fmt, ap);
    b->n += (size_t)n;
}

static void buf_add(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void buf_add(Buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vadd(b, fmt, ap);
    va_end(ap);
}

/* A statement of the description, in the innermost open block. */
static void emit(G *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(G *g, const char *fmt, ...)
{
    Buf *b = &g->blk[g->nblk - 1];
    buf_add(b, "%*s", 4 * (g->nblk - 1), "");
    va_list ap;
    va_start(ap, fmt);
    buf_vadd(b, fmt, ap);
    va_end(ap);
    buf_add(b, "\n");
}

static void blk_push(G *g)
{
    if (g->nblk >= MAXBLK) {
        fprintf(stderr, "randprog: nesting too deep\n");
        abort();
    }
    memset(&g->blk[g->nblk], 0, sizeof g->blk[0]);
    g->nblk++;
}

static const char *blk_pop(G *g)
{
    Buf *b = &g->blk[--g->nblk];
    char *s = sfmt(g, "%s", b->s ? b->s : "");
    free(b->s);
    memset(b, 0, sizeof *b);
    return s;
}

static void bad(G *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(G *g, const char *fmt, ...)
{
    if (g->bad) return;
    g->bad = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->badmsg, sizeof g->badmsg, fmt, ap);
    va_end(ap);
    if (g->nblk > 0) emit(g, "!!! %s", g->badmsg);
}

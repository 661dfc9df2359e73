/*
 * The one allocation layer of libaxle, and fault injection for the tests
 * (SQLite's and Lua's habit: every allocation, every process start, every
 * load and write can fail, so a test must be able to make each one fail).
 *
 * Every allocation of the library goes through ax__malloc and its
 * siblings below; thread creation, the C compiler's start, dlopen of a
 * compiled module and writes to the kernel cache ask fault_hit first.
 * Normally nothing is installed and fault_hit costs one thread-local load
 * and a branch that is never taken.
 *
 * A test installs an AxFaults on its own thread (ax__faults_install): the
 * events of each kind that this thread then causes, in any context, are
 * counted, and the one numbered fail_at (1-based) fails, or with persist
 * every one from there on.  Events on other threads (the CPU backend's
 * pool workers, which do not allocate) are neither counted nor failed, so
 * a count is the same from run to run.  Thread-local and test-only: there
 * is no global mutable state, and a program that never installs one is
 * unaffected.
 *
 * The names carry ax__ (two underscores): internal to the library, but
 * with external linkage, so they must not clash with a user's names.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_FAULT_H
#define AX_FAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum AxFaultKind {
    AX_FAULT_ALLOC,     /* malloc, calloc, realloc, strdup, aligned_alloc, memory streams */
    AX_FAULT_THREAD,    /* pthread_create of a pool worker */
    AX_FAULT_SPAWN,     /* starting the C compiler (posix_spawn) */
    AX_FAULT_DLOPEN,    /* loading a compiled module */
    AX_FAULT_WRITE,     /* creating or writing a file in the kernel cache */
    AX_FAULT_NKINDS
} AxFaultKind;

typedef struct AxFaults {
    int64_t fail_at[AX_FAULT_NKINDS];  /* the event to fail, 1-based; 0: none */
    bool persist[AX_FAULT_NKINDS];     /* and every later one of that kind */
    int64_t seen[AX_FAULT_NKINDS];     /* events counted so far */
    int64_t failed[AX_FAULT_NKINDS];   /* failures injected so far */
} AxFaults;

/* The calling thread's injector (NULL: none). */
extern _Thread_local AxFaults *ax__faults_tls;

/* Installs f for the calling thread (NULL uninstalls); returns the one it
 * replaces.  f must live until it is uninstalled. */
AxFaults *ax__faults_install(AxFaults *f);
/* Names of the kinds, for messages ("alloc", "thread", ...). */
const char *ax__fault_name(AxFaultKind k);

bool ax__fault_slow(AxFaults *f, AxFaultKind k);

/* Counts an event of kind k; true if it is to fail. */
static inline bool fault_hit(AxFaultKind k)
{
    AxFaults *f = ax__faults_tls;
    return __builtin_expect(f != NULL, 0) && ax__fault_slow(f, k);
}

static inline void *ax__malloc(size_t n) { return fault_hit(AX_FAULT_ALLOC) ? NULL : malloc(n); }
/* Small blocks through malloc and memset: glibc's calloc bypasses its
 * per-thread cache and takes the arena's locked path every time, which
 * an awhile step, making a few small headers per operation, paid for
 * visibly in profiles.  Large ones keep calloc, which knows fresh pages
 * are zero already. */
static inline void *ax__calloc(size_t n, size_t s)
{
    if (fault_hit(AX_FAULT_ALLOC)) return NULL;
    size_t b;
    if (!__builtin_mul_overflow(n, s, &b) && b <= 1024) {
        void *p = malloc(b ? b : 1);
        if (p) memset(p, 0, b);
        return p;
    }
    return calloc(n, s);
}
static inline void *ax__realloc(void *p, size_t n) { return fault_hit(AX_FAULT_ALLOC) ? NULL : realloc(p, n); }
static inline void *ax__aligned_alloc(size_t al, size_t n)
{
    return fault_hit(AX_FAULT_ALLOC) ? NULL : aligned_alloc(al, n);
}
static inline char *ax__strdup(const char *s) { return fault_hit(AX_FAULT_ALLOC) ? NULL : strdup(s); }
static inline char *ax__strndup(const char *s, size_t n)
{
    return fault_hit(AX_FAULT_ALLOC) ? NULL : strndup(s, n);
}

/* open_memstream: it allocates its buffer at once. */
static inline FILE *ax__open_memstream(char **buf, size_t *len)
{
    return fault_hit(AX_FAULT_ALLOC) ? NULL : open_memstream(buf, len);
}

#endif /* AX_FAULT_H */

/*
 * A growing byte string and a reader of one, with numbers written in as
 * few bytes as they need: zigzag, then 7 bits a byte, the high bit saying
 * more follow (LEB128).  Self-delimiting, so a sequence of such fields
 * reads back one way.  For the source key (srckey.c), the program as
 * bytes (irser.c) and the CPU backend's program entries (cpu.c).
 *
 * Writing never fails loudly: once memory runs out `bad` is set and
 * nothing more is written.  Reading checks every number against the range
 * the caller allows and every length against what is left, setting `bad`
 * on the first thing wrong (and giving lo or NULL from then on).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_BYTES_H
#define AX_BYTES_H

#include "fault.h"
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

typedef struct Bytes {
    unsigned char *b;
    size_t len, cap;          /* writing: bytes written, room */
    size_t at;                /* reading: the next byte */
    bool bad;
} Bytes;

/* Room for n more bytes; false (and bad) when memory runs out. */
static inline bool bytes_room(Bytes *o, size_t n)
{
    if (o->bad) return false;
    if (o->len + n <= o->cap) return true;
    size_t cap = o->cap ? 2 * o->cap : 4096;
    while (cap < o->len + n) cap *= 2;
    unsigned char *b = ax__realloc(o->b, cap);
    if (!b) {
        o->bad = true;
        return false;
    }
    o->b = b;
    o->cap = cap;
    return true;
}

static inline void bytes_put(Bytes *o, const void *p, size_t n)
{
    if (!n || !bytes_room(o, n)) return;
    memcpy(o->b + o->len, p, n);
    o->len += n;
}

/* A string, without its NUL; printf's text (a line of at most 1 KiB). */
static inline void bytes_puts(Bytes *o, const char *s) { bytes_put(o, s, strlen(s)); }

static inline void bytes_printf(Bytes *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void bytes_printf(Bytes *o, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0) bytes_put(o, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* The single bytes and numbers are stored directly, not through memcpy
 * of a variable length (a library call each: the source key writes a
 * few per node, srckey.c). */
static inline void bytes_put8(Bytes *o, unsigned v)
{
    if (!bytes_room(o, 1)) return;
    o->b[o->len++] = (unsigned char)v;
}

static inline void bytes_putv(Bytes *o, int64_t v)
{
    if (!bytes_room(o, 10)) return;
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    unsigned char *b = o->b + o->len;
    while (z >= 0x80) {
        *b++ = (unsigned char)(z | 0x80);
        z >>= 7;
    }
    *b++ = (unsigned char)z;
    o->len = (size_t)(b - o->b);
}

/* A reader of n bytes at p (not copied). */
static inline Bytes bytes_reader(const void *p, size_t n)
{
    Bytes r = {(unsigned char *)(uintptr_t)p, n, n, 0, false};
    return r;
}

/* The next n bytes, or NULL (bad) when fewer are left. */
static inline const unsigned char *bytes_get(Bytes *in, size_t n)
{
    if (in->bad || n > in->len - in->at) {
        in->bad = true;
        return NULL;
    }
    in->at += n;
    return in->b + in->at - n;
}

static inline unsigned bytes_get8(Bytes *in)
{
    const unsigned char *c = bytes_get(in, 1);
    return c ? *c : 0;
}

/* The next number, which must lie in [lo, hi]; else bad and lo. */
static inline int64_t bytes_getv(Bytes *in, int64_t lo, int64_t hi)
{
    uint64_t z = 0;
    for (int shift = 0;; shift += 7) {
        if (in->bad || in->at >= in->len || shift > 63) {
            in->bad = true;
            return lo;
        }
        unsigned c = in->b[in->at++];
        z |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) break;
    }
    int64_t v = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
    if (v < lo || v > hi) in->bad = true;
    return in->bad ? lo : v;
}

#endif

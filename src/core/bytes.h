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
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

typedef struct Bytes {
    unsigned char *b;
    size_t len, cap;          /* writing: bytes written, room */
    size_t at;                /* reading: the next byte */
    bool bad;
} Bytes;

static inline void bytes_put(Bytes *o, const void *p, size_t n)
{
    if (o->bad) return;
    if (o->len + n > o->cap) {
        size_t cap = o->cap ? 2 * o->cap : 4096;
        while (cap < o->len + n) cap *= 2;
        unsigned char *b = ax__realloc(o->b, cap);
        if (!b) {
            o->bad = true;
            return;
        }
        o->b = b;
        o->cap = cap;
    }
    memcpy(o->b + o->len, p, n);
    o->len += n;
}

static inline void bytes_put8(Bytes *o, unsigned v)
{
    unsigned char c = (unsigned char)v;
    bytes_put(o, &c, 1);
}

static inline void bytes_putv(Bytes *o, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    unsigned char b[10];
    int n = 0;
    do {
        b[n] = (unsigned char)(z & 0x7f);
        z >>= 7;
        if (z) b[n] |= 0x80;
        n++;
    } while (z);
    bytes_put(o, b, (size_t)n);
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

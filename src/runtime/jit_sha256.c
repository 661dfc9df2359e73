/*
 * SHA-256 (FIPS 180-4), the hash behind the cache's keys and its content
 * checks (jit.h: jit_sha256_*): the portable code, and the SHA extensions
 * of x86 where the CPU has them.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "jit.h"
#include <string.h>

/* FIPS 180-4 section 4.2.2: the first 32 bits of the fractional parts of
 * the cube roots of the first 64 primes. */
static const uint32_t sha_k[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

/* One 64-byte block (section 6.2.2). */
static void sha_block(uint32_t h[8], const uint8_t *p)
{
    uint32_t w[64];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
               (uint32_t)p[4 * t + 2] << 8 | p[4 * t + 3];
    for (int t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = s1 + w[t - 7] + s0 + w[t - 16];
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int t = 0; t < 64; t++) {
        uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t t1 = hh + S1 + ch + sha_k[t] + w[t];
        uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        uint32_t t2 = S0 + maj;
        hh = g; g = f; f = e; e = d + t1;
        d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d;
    h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

/* The same with the SHA extensions of x86 (Intel's "SHA Extensions"
 * paper, 2013: SHA256RNDS2 does two rounds on the state held as ABEF and
 * CDGH, SHA256MSG1/MSG2 the message schedule four words at a time): many
 * times the portable code's speed, which matters because a disk cache hit
 * hashes the unit's source (its key) and the object (its content check)
 * (to measure: time jit_sha256_update over a few MB with JitSha256.portable
 * true and false; test_jit checks the two against each other and prints
 * which one jit_sha256 uses).  Found with GCC's __builtin_cpu_supports (no
 * CPUID instruction: under a hypervisor that may trap, at a cost beyond a
 * small hash's); Clang 14 knows no "sha" feature there, so Clang builds
 * use the portable code. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define SHA_NI 1
__attribute__((target("sha,sse4.1,ssse3"))) static void sha_blocks_ni(uint32_t h[8], const uint8_t *p, size_t nb)
{
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i t = _mm_loadu_si128((const __m128i *)&h[0]);      /* A B C D */
    __m128i s1 = _mm_loadu_si128((const __m128i *)&h[4]);     /* E F G H */
    t = _mm_shuffle_epi32(t, 0xB1);                           /* C D A B */
    s1 = _mm_shuffle_epi32(s1, 0x1B);                         /* H G F E */
    __m128i s0 = _mm_alignr_epi8(t, s1, 8);                   /* A B E F */
    s1 = _mm_blend_epi16(s1, t, 0xF0);                        /* C D G H */
    for (; nb > 0; nb--, p += 64) {
        __m128i abef = s0, cdgh = s1, w[4];
        /* sixteen groups of four rounds; the schedule's next four words are
         * made from the last sixteen as the rounds go (unrolled: the
         * conditions and register indices then fold away) */
#pragma GCC unroll 16
        for (int g = 0; g < 16; g++) {
            if (g < 4) w[g] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), bswap);
            __m128i m = _mm_add_epi32(w[g & 3], _mm_loadu_si128((const __m128i *)&sha_k[4 * g]));
            s1 = _mm_sha256rnds2_epu32(s1, s0, m);
            if (g >= 3 && g < 15) {
                __m128i x = _mm_add_epi32(w[(g + 1) & 3], _mm_alignr_epi8(w[g & 3], w[(g - 1) & 3], 4));
                w[(g + 1) & 3] = _mm_sha256msg2_epu32(x, w[g & 3]);
            }
            m = _mm_shuffle_epi32(m, 0x0E);
            s0 = _mm_sha256rnds2_epu32(s0, s1, m);
            if (g >= 1 && g <= 12) w[(g - 1) & 3] = _mm_sha256msg1_epu32(w[(g - 1) & 3], w[g & 3]);
        }
        s0 = _mm_add_epi32(s0, abef);
        s1 = _mm_add_epi32(s1, cdgh);
    }
    t = _mm_shuffle_epi32(s0, 0x1B);                          /* F E B A */
    s1 = _mm_shuffle_epi32(s1, 0xB1);                         /* D C H G */
    s0 = _mm_blend_epi16(t, s1, 0xF0);                        /* D C B A */
    s1 = _mm_alignr_epi8(s1, t, 8);                           /* H G F E */
    _mm_storeu_si128((__m128i *)&h[0], s0);
    _mm_storeu_si128((__m128i *)&h[4], s1);
}
#else
#define SHA_NI 0
#endif

/* nb whole blocks; with the SHA extensions when the CPU has them (and
 * `portable` is false: tests compare the two). */
static void sha_blocks(uint32_t h[8], const uint8_t *p, size_t nb, bool portable)
{
#if SHA_NI
    if (!portable && __builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1")) {
        sha_blocks_ni(h, p, nb);
        return;
    }
#else
    (void)portable;
#endif
    for (; nb > 0; nb--, p += 64) sha_block(h, p);
}

bool jit_sha256_accelerated(void)
{
#if SHA_NI
    return __builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1");
#else
    return false;
#endif
}

void jit_sha256_init(JitSha256 *s)
{
    /* Section 5.3.3: fractional parts of the square roots of the first
     * eight primes. */
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->len = 0;
    s->nbuf = 0;
    s->portable = false;
}

void jit_sha256_update(JitSha256 *s, const void *data, size_t n)
{
    const uint8_t *p = data;
    s->len += n;
    if (s->nbuf) {
        size_t k = 64 - s->nbuf < n ? 64 - s->nbuf : n;
        memcpy(s->buf + s->nbuf, p, k);
        s->nbuf += k;
        p += k;
        n -= k;
        if (s->nbuf < 64) return;
        sha_blocks(s->h, s->buf, 1, s->portable);
        s->nbuf = 0;
    }
    sha_blocks(s->h, p, n / 64, s->portable);
    p += n / 64 * 64;
    n %= 64;
    memcpy(s->buf, p, n);
    s->nbuf = n;
}

void jit_sha256_final(JitSha256 *s, uint8_t out[32])
{
    /* Section 5.1.1: a 1 bit, zeros up to 56 mod 64 bytes, then the
     * message length in bits, big-endian. */
    uint64_t bits = s->len * 8;
    uint8_t pad[72] = {0x80};
    size_t npad = (s->nbuf < 56 ? 56 : 120) - s->nbuf;
    for (int i = 0; i < 8; i++) pad[npad + i] = (uint8_t)(bits >> (56 - 8 * i));
    jit_sha256_update(s, pad, npad + 8);
    for (int i = 0; i < 8; i++) {
        out[4 * i] = (uint8_t)(s->h[i] >> 24);
        out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        out[4 * i + 3] = (uint8_t)s->h[i];
    }
}

void jit_sha256(const void *data, size_t n, uint8_t out[32])
{
    JitSha256 s;
    jit_sha256_init(&s);
    jit_sha256_update(&s, data, n);
    jit_sha256_final(&s, out);
}

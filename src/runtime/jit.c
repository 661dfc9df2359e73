/*
 * Run-time compilation: generated C -> system C compiler -> shared object
 * -> dlopen, with two caches (DESIGN.md section 2, "compile + cache").
 *
 * Key.  SHA-256 over, each length-prefixed: a format tag, the compiler
 * command and identity (first line of `cc --version`), the flags, the
 * libraries, axle's version, the host CPU's feature list when the flags
 * ask for -march=native (a cache directory in a shared home must not hand
 * AVX-512 code to an older machine), and finally the source.  Everything
 * before the source is fixed per Jit, so it is hashed once and the saved
 * hash state is copied for each load: a memory hit costs one pass over
 * the source.
 *
 * Compiler identity.  Running `cc --version` costs milliseconds (a fork
 * and exec, more than the rest of a disk hit together), so with a disk
 * cache the answer is kept in an identity file, cc-<SHA-256>.id, the hash
 * over the compiler command and, for each of its words that names a
 * program (the first, found through $PATH, and later words not starting
 * with '-', as in "ccache cc"), the program's real path, device, inode,
 * size, modification and change times (stat, following symbolic links).
 * Replacing or editing the compiler, or pointing cc at another one,
 * changes these and so the file's name: the next process runs
 * `cc --version` again.  The file holds "axle-cc-id-1\n", the identity
 * and a newline; it is written and renamed into place like an entry and
 * read with an entry's checks (no link, a regular file of ours that no
 * one else may write); one that fails them, is malformed or is more than
 * a day old is ignored and rewritten.  The age limit bounds the one case
 * the stat cannot see: a wrapper (a script, or ccache installed as cc)
 * whose compiler behind it is replaced while the wrapper stays the same.
 * Without a disk cache `cc --version` runs once per Jit, as always.
 *
 * Disk cache (DESIGN.md section 3: "never loads a file that another user
 * could have written").  The directory must be ours and not writable by
 * group or others, else the disk cache is not used at all.  An entry is
 * KEY.so: the shared object followed by a trailer that ELF loaders ignore,
 *
 *     key (32) | SHA-256 of the object (32) | object length (8, LE) |
 *     "axle-jit-cache1\n" (16)
 *
 * written under a fresh name with O_EXCL and renamed into place, so a
 * reader sees a whole entry or none, and an entry's file is never written
 * again once it has its name.  A reader opens it only if the name is a
 * regular file of ours, never following a link and never blocking (every
 * file axle opens in the directory, entries, identity files, the sweep's
 * stamp and temporary files, goes through open_cached or create_unique:
 * a FIFO, socket, directory or device under any name there is never
 * opened, read or written through), checks that the open file is a
 * regular file of ours that no one else may write, reads it and checks
 * magic, length, key and content hash.  Time of check versus
 * time of use: dlopen takes a path, so rather than dlopen KEY.so (which
 * could be replaced between our check and the loader's open) we copy the
 * verified bytes to a fresh O_EXCL file and dlopen that; the copy costs a
 * file creation and a page-cache write of the object, about 0.15 ms for a
 * 20 KB object on ext4 (mostly the creation).  (dlopen of
 * /proc/self/fd/N would avoid the copy, but the loader recognises objects
 * by path name as well as by inode, so a reused descriptor number could
 * alias an earlier module, and /proc may be absent.)  An entry that fails
 * any check is deleted and rebuilt.  No fsync: a torn entry after a crash
 * fails verification and is rebuilt.
 *
 * The compiler runs with posix_spawn (no shell: no quoting problems, and
 * safe in a multithreaded process), in a process group of its own that a
 * supervisor of axle's kills when the host dies (see "processes" below),
 * its stdout and stderr captured into a buffer for the error message.
 *
 * Lean link (JitOptions.lean_link, GCC only).  GCC's driver links a shared
 * object against the C runtime: its start files (crti, crtbeginS, ...),
 * libgcc_s and libc.so.  Reading libc.so's symbol table is most of a
 * link's time, and generated code needs none of it at link time: its few
 * calls into the C library (sched_yield, memcpy) are left undefined in the
 * object, as a shared object may, and the loader binds them at dlopen to
 * the process's own C library, which every dynamically linked process has
 * loaded (an unversioned reference binds to the default version, the one
 * a link would have recorded).  So the object is linked with -nostdlib,
 * the libraries of the options (libm, libmvec: the loader must find those
 * through the object's own dependencies), then -lgcc (helpers GCC may call,
 * such as __popcountdi2 on targets without the instruction).  Measured on
 * this 2-core machine (dotp's unit, link alone, CPU time, medians of 11
 * interleaved runs, load about 1): 20.0 ms the driver's ordinary link,
 * 11.1 ms lean, 17.0 ms lean with -lc kept; linking with ld directly
 * would save about 1 ms more, not worth finding ld and its paths.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "jit.h"
#include "fault.h"
#include "hash.h"
#include <ctype.h>
#include <sched.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/random.h>
#endif

extern char **environ;

/* ------------------------------------------------------------ SHA-256 */

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
 * CDGH, SHA256MSG1/MSG2 the message schedule four words at a time): 10-20
 * times the portable code's speed, which matters because a disk cache hit
 * hashes the unit's source (its key) and the object (its content check):
 * about 26 KB for dotp, 0.3 ms at the portable code's 85 MB/s on this
 * machine.  Found with GCC's __builtin_cpu_supports (no CPUID instruction:
 * that traps to the hypervisor here, 25 us a time); Clang 14 knows no
 * "sha" feature there, so Clang builds use the portable code. */
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

/* ------------------------------------------------------------ state */

enum {
    KEY_BYTES = 32,
    TRAILER_BYTES = 32 + 32 + 8 + 16,
    OUT_CAP = 4096,                   /* compiler output kept for messages */
};
#define TRAILER_MAGIC "axle-jit-cache1\n"   /* 16 bytes, no NUL */
#define MAX_ENTRY ((off_t)1 << 30)          /* no generated object is near this */

struct JitModule {
    JitModule *next;                  /* hash chain */
    JitModule *snext;                 /* chain of the source index */
    uint64_t fh;                      /* fast_hash of its source and flags */
    char *src;                        /* its flags, a NUL, its source (NULL: not indexed) */
    size_t srclen;                    /* bytes of src, both */
    uint8_t key[KEY_BYTES];
    char hex[2 * KEY_BYTES + 1];
    void *handle;
};

struct Jit {
    char *cc, *cflags, *libs, *cache_dir_opt, *version;
    bool no_disk_cache, trace;
    bool lean_link;                   /* the option */
    bool gcc, lean;                   /* with the identity: GCC, so the lean link */
    double timeout_ms;                /* the compiler's time limit; <= 0: none */

    bool id_done;                     /* compiler identity and key prefix */
    char *compiler_id;                /* NULL: the compiler cannot be run */
    JitSha256 prefix;                 /* hash state after the fixed fields */

    bool dir_done;                    /* disk cache directory checked */
    int dirfd;                        /* -1: no disk cache */
    char *dir;                        /* its absolute path */

    int64_t size_limit;               /* bytes of entries; <= 0: no limit */

    JitModule **buckets;              /* memory cache */
    size_t nbuckets, nmodules;
    HMap by_source;                   /* fast_hash -> a module (chained by snext):
                                         a memory hit without SHA-256 */
    uint64_t seed;                    /* temporary names when getrandom fails */
};

static void trace(Jit *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void trace(Jit *j, const char *fmt, ...)
{
    if (!j->trace) return;
    va_list ap;
    va_start(ap, fmt);
    fputs("axle: cache: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static void set_err(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t n, const char *fmt, ...)
{
    if (!err || !n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, n, fmt, ap);
    va_end(ap);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static char *dup_or(const char *s, const char *dflt)
{
    return ax__strdup(s ? s : dflt);
}

static void to_hex(const uint8_t *b, size_t n, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = 0;
}

/* ------------------------------------------------------------ argv */

typedef struct Argv {
    char **v;
    size_t n, cap;
    bool oom;
} Argv;

static void argv_push_n(Argv *a, const char *s, size_t len)
{
    if (a->oom) return;
    if (a->n + 2 > a->cap) {
        size_t cap = a->cap ? 2 * a->cap : 16;
        char **v = ax__realloc(a->v, cap * sizeof *v);
        if (!v) { a->oom = true; return; }
        a->v = v;
        a->cap = cap;
    }
    char *w = ax__strndup(s, len);
    if (!w) { a->oom = true; return; }
    a->v[a->n++] = w;
    a->v[a->n] = NULL;
}

static void argv_push(Argv *a, const char *s) { argv_push_n(a, s, strlen(s)); }

/* Whitespace-separated words; no quoting, as with make's $(CC). */
static void argv_words(Argv *a, const char *s)
{
    while (*s) {
        while (isspace((unsigned char)*s)) s++;
        const char *w = s;
        while (*s && !isspace((unsigned char)*s)) s++;
        if (s > w) argv_push_n(a, w, (size_t)(s - w));
    }
}

static void argv_free(Argv *a)
{
    for (size_t i = 0; i < a->n; i++) free(a->v[i]);
    free(a->v);
}

/* ------------------------------------------------------------ processes
 *
 * Every external process can hang, and none may outlive the process that
 * wanted its output: a host ended by SIGKILL (`timeout`, a test harness)
 * once left its cc and cc1 compiling for minutes.  So each compiler runs
 * in a process group of its own whose first member is a watchdog of
 * axle's, the supervisor:
 *
 *   - The host starts the supervisor (below), makes it the leader of a new
 *     group, and starts the compiler with posix_spawn into that group.
 *     The compiler is the host's own child, as before: its exit status is
 *     the host's to wait for, exactly, and a failed exec is reported at
 *     once.
 *   - The supervisor holds one descriptor, the read end of a lifeline: a
 *     pipe whose only write end the host holds (close-on-exec; the
 *     supervisor closes every descriptor it was started with, so it holds
 *     no other compile's lifeline either).  EOF on it means the host has
 *     died, however it died; the supervisor then kills its whole group,
 *     itself included: the compiler and the compiler's own children (cc1,
 *     as, ld, whatever a wrapper started), which PR_SET_PDEATHSIG on the
 *     compiler alone would leave running.  That kill is kill(0), the
 *     group of a process still in it, never a group id remembered from
 *     before (which could have been reused since).
 *   - When the compiler has exited the host kills the supervisor (SIGKILL:
 *     it has nothing to clean up) and reaps it later.  The host's own time
 *     limit, or a failure elsewhere, kills the whole group, while the
 *     supervisor, whose pid is the group's id, is not yet reaped (so that
 *     id is still its own).  A supervisor that dies early (killed by
 *     someone) takes its group with it the same way: the compile is then
 *     reported killed.
 *
 * The supervisor is not a fork: a fork copies the host's page tables
 * (measured: 80 ms a compile for a host with 1 GiB resident, 250 ms for
 * 4 GiB).  It is clone(CLONE_VM), a process in the host's memory on a
 * stack of its own, which makes a handful of system calls directly
 * (inline assembly, so that it never touches the C library's thread-local
 * state, which is the host thread's) and reads nothing of the host's but
 * the two numbers put at the bottom of its stack.  Where that cannot be
 * (another architecture; a sanitizer's runtime, which must see every
 * process; valgrind, which runs no such clone; a kernel or seccomp filter
 * that refuses it) it is a fork that makes the same calls: _Fork where
 * the C library has it (no other library's atfork handlers run), else
 * fork.  The compiler runs with posix_spawn (no shell: no quoting
 * problems; vfork-like, so no page tables are copied for it either).
 *
 * Output is read until the compiler exits, not until the pipe closes: a
 * wrapper that leaves a process behind holding the pipe (a daemon it
 * started, a stray `sleep &`) must not delay the compile by that
 * process's lifetime; what that process writes later is dropped.  Such a
 * leftover is not killed when the compile ends normally (a compiler
 * server may be meant to stay); only a host's death, a time limit or a
 * failure elsewhere ends the group. */

/* A descriptor that becomes readable when process pid exits (Linux 5.3
 * pidfd), or -1 where the kernel has none: then the exit is polled. */
static int pid_fd(pid_t pid)
{
#if defined(__linux__) && defined(SYS_pidfd_open)
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) {
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
        return fd;
    }
#else
    (void)pid;
#endif
    return -1;
}

/* Whether the child has exited, reaping it (its wait status in *st).  An
 * application that ignores SIGCHLD has its children reaped for it
 * (ECHILD): gone, status unknown (0). */
static bool reaped(pid_t pid, int *st, bool block)
{
    for (;;) {
        pid_t w = waitpid(pid, st, block ? 0 : WNOHANG);
        if (w == pid) return true;
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) {
            *st = 0;
            return true;
        }
        return false;
    }
}

/* Appends r bytes of output to out (the first cap-1 kept). */
static void keep(char *out, size_t cap, size_t *len, const char *chunk, ssize_t r)
{
    size_t k = (size_t)r < cap - 1 - *len ? (size_t)r : cap - 1 - *len;
    memcpy(out + *len, chunk, k);
    *len += k;
    out[*len] = 0;
}

/* ---- the supervisor's side */

/* System calls in the supervisor: sv(n, ...) returns the result or
 * -errno.  On x86-64 and AArch64 made directly; elsewhere through the C
 * library's syscall() (and the supervisor is then always a fork, whose
 * errno is its own).  The supervisor's code reads no canary of the host
 * thread's (that thread's memory is not the supervisor's to rely on): no
 * stack protector there (SV_CODE). */
#if defined(__has_attribute)
#if __has_attribute(no_stack_protector)
#define SV_CODE __attribute__((no_stack_protector))
#endif
#endif
#ifndef SV_CODE
#define SV_CODE
#endif

#if defined(__linux__) && defined(__x86_64__)
#define SV_RAW 1
SV_CODE static inline long sv6(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
    long ret;
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8") = a5;
    register long r9 __asm__("r9") = a6;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}
#elif defined(__linux__) && defined(__aarch64__)
#define SV_RAW 1
SV_CODE static inline long sv6(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a1;
    register long x1 __asm__("x1") = a2;
    register long x2 __asm__("x2") = a3;
    register long x3 __asm__("x3") = a4;
    register long x4 __asm__("x4") = a5;
    register long x5 __asm__("x5") = a6;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory", "cc");
    return x0;
}
#else
#define SV_RAW 0
static long sv6(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
    long r = syscall(n, a1, a2, a3, a4, a5, a6);
    return r == -1 ? -errno : r;
}
#endif
#define SV_(n, a, b, c, d, e, f, ...) sv6((long)(n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))
#define sv(...) SV_(__VA_ARGS__, 0, 0, 0, 0, 0, 0)

/* What the supervisor is told: copied to the bottom of its own stack
 * (clone), or its own copy of the host's memory (fork). */
typedef struct SvArgs {
    int lifer;                 /* the lifeline's read end */
    int maxfd;                 /* where closing by number stops (the last resort) */
} SvArgs;

/* Closes every descriptor from lo up: close_range (Linux 5.9), else the
 * list in /proc/self/fd (getdents64 into a buffer on the stack), else
 * each number below maxfd. */
SV_CODE static void sv_close_from(int lo, int maxfd)
{
#if defined(SYS_close_range)
    if (sv(SYS_close_range, lo, ~0u, 0) == 0) return;
#endif
#if defined(SYS_getdents64)
    long d = sv(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d >= 0) {
        char buf[2048] __attribute__((aligned(8)));
        long n;
        while ((n = sv(SYS_getdents64, d, buf, sizeof buf)) > 0)
            for (long off = 0; off < n;) {
                /* struct linux_dirent64: inode (8), offset (8), length
                 * (2), type (1), name */
                unsigned short reclen;
                __builtin_memcpy(&reclen, buf + off + 16, sizeof reclen);
                const char *p = buf + off + 19;
                off += reclen ? reclen : n;
                long fd = 0;
                if (*p < '0' || *p > '9') continue;
                for (; *p >= '0' && *p <= '9' && fd < INT_MAX / 10 - 9; p++) fd = fd * 10 + (*p - '0');
                /* (closing while reading: the listing goes by number) */
                if (fd >= lo && fd != d) sv(SYS_close, fd);
            }
        sv(SYS_close, d);
        if (n == 0) return;
    }
#endif
    for (int fd = lo; fd < maxfd; fd++) sv(SYS_close, fd);
}

/* The supervisor: never returns.  All signals are blocked (since before
 * it started) and stay blocked: it runs no handler, and SIGKILL, the only
 * signal it needs to obey, cannot be blocked. */
SV_CODE __attribute__((noreturn)) static void supervise(const SvArgs *a)
{
    /* (the host makes the group too: whichever comes first) */
    sv(SYS_setpgid, 0, 0);
    /* The lifeline as descriptor 0, then nothing else: above all no write
     * end of its own lifeline or another compile's (started with
     * CLONE_VM, this process's descriptor table is a copy of the host's). */
    int life = a->lifer;
    if (life != 0 && sv(SYS_dup3, life, 0, 0) >= 0) life = 0;
    sv_close_from(life + 1, a->maxfd);
    if (life != 0) {
        /* (dup3 failed: close what is below it but the lifeline) */
        for (int fd = 0; fd < life; fd++) sv(SYS_close, fd);
    }
    for (;;) {
        struct pollfd p = {.fd = life, .events = POLLIN};
        long r = sv(SYS_ppoll, &p, 1, NULL, NULL, 8);
        if (r > 0 && p.revents) break;
        if (r < 0 && r != -EINTR && r != -EAGAIN) {
            /* cannot poll: a blocking read says the same (EOF) */
            char c;
            if (sv(SYS_read, life, &c, 1) != -EINTR) break;
        }
    }
    /* The host is gone (the lifeline's last write end is closed; it never
     * writes): the whole group, this process with it. */
    sv(SYS_kill, 0, SIGKILL);
    for (;;) sv(SYS_exit, 137);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SV_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define SV_SANITIZED 1
#endif
#endif
#if SV_RAW && !defined(SV_SANITIZED)
#define SV_CLONE 1
#else
#define SV_CLONE 0
#endif
enum { SV_STACK = 64 * 1024 };        /* it needs about 3 KiB; a guard page below */

/* The supervisor stack's mapping: SV_STACK and the guard page. */
static size_t sv_map_size(void)
{
    long page = sysconf(_SC_PAGESIZE);
    return (size_t)(page > 0 ? page : 4096) + SV_STACK;
}

#if SV_CLONE
SV_CODE static int sv_entry(void *arg)
{
    supervise(arg);
}

/* Valgrind aborts the whole process on a clone it does not know; its
 * preloaded libraries show that it is there. */
static bool under_valgrind(void)
{
    static _Atomic int known = -1;
    int v = known;
    if (v < 0) {
        const char *p = getenv("LD_PRELOAD");
        known = v = p && strstr(p, "vgpreload") ? 1 : 0;
    }
    return v;
}
#endif

/* Starts the supervisor on the lifeline's read end lifer: its pid (its
 * stack, to unmap once it is reaped, in *stack), or -1 with errno.  All
 * signals are blocked while it starts, so that none reaches a handler of
 * the host's in it. */
static pid_t supervisor_start(int lifer, void **stack)
{
    *stack = NULL;
    struct rlimit rl;
    SvArgs args = {.lifer = lifer, .maxfd = 65536};
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
        args.maxfd = rl.rlim_cur < (rlim_t)INT_MAX ? (int)rl.rlim_cur : INT_MAX;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pid_t pid = -1;
    int e = 0;
#if SV_CLONE
    if (!under_valgrind()) {
        size_t size = sv_map_size(), page = size - SV_STACK;
        void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (m != MAP_FAILED) {
            (void)mprotect(m, page, PROT_NONE);   /* the guard page */
            /* the arguments at the bottom, far below what it uses */
            SvArgs *in = (SvArgs *)((char *)m + page);
            *in = args;
            pid = clone(sv_entry, (char *)m + size, CLONE_VM | SIGCHLD, in);
            e = errno;
            if (pid > 0) *stack = m;
            else munmap(m, size);
        }
    }
#endif
    if (pid <= 0) {
#if !defined(SV_SANITIZED) && defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
        pid = _Fork();
#else
        pid = fork();
#endif
        if (pid == 0) supervise(&args);
        e = errno;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (pid < 0) errno = e;
    return pid;
}

/* ---- the host's side */

/* One compiler run whose output is captured: started by child_start,
 * serviced by children_wait until it has exited or its time is up, its
 * supervisor ended by child_release.  Several may run at once
 * (jit_load_many). */
typedef struct Child {
    pid_t pid;                 /* the compiler */
    pid_t sup;                 /* its supervisor, the group's leader; 0 when reaped */
    int fd;                    /* our end of the compiler's output pipe */
    int pfd, sfd;              /* pidfds of the compiler and the supervisor, or -1 */
    int lfd;                   /* the lifeline's write end (only we hold it) */
    void *stack;               /* the supervisor's stack (clone), or NULL */
    bool eof, gone, expired;
    bool sup_done;             /* the supervisor was killed, or has died */
    int status;                /* the compiler's wait status once gone */
    double deadline;           /* now_ms() past which it is killed; 0: none */
    size_t len;
    char out[OUT_CAP];         /* the first OUT_CAP-1 bytes of its output */
} Child;

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

/* Kills the supervisor alone: through its pidfd where there is one, which
 * names that process even if an application's SIGCHLD handler has reaped
 * it (its pid could then be another process's). */
static void sup_kill(Child *c)
{
#if defined(__linux__) && defined(SYS_pidfd_send_signal)
    if (c->sfd >= 0 && syscall(SYS_pidfd_send_signal, c->sfd, SIGKILL, NULL, 0) == 0) return;
#endif
    kill(c->sup, SIGKILL);
}

/* Ends the supervisor: killed (it has nothing to finish; killed before
 * the lifeline closes, so that it does not take the group with it), then
 * reaped, then its stack freed. */
static void child_release(Child *c)
{
    if (c->sup > 0) {
        if (!c->sup_done) sup_kill(c);
        close_fd(&c->lfd);
        int st;
        reaped(c->sup, &st, true);
        if (c->stack) munmap(c->stack, sv_map_size());
        c->stack = NULL;
        c->sup = 0;
    }
    close_fd(&c->lfd);
    close_fd(&c->sfd);
}

/* Starts argv with stdin from /dev/null and stdout and stderr into a pipe
 * that children_wait reads (the first bytes kept in c->out, the rest read
 * and dropped so the child never blocks), in a group of its own under a
 * supervisor (see above).  Returns 0, or the errno of a failed start
 * (ENOENT: no such program). */
static int child_start(Jit *j, char *const argv[], Child *c)
{
    int fds[2], life[2];
    memset(c, 0, offsetof(Child, out));
    c->out[0] = 0;
    c->fd = c->pfd = c->sfd = c->lfd = -1;
    if (fault_hit(AX_FAULT_SPAWN)) return EAGAIN;
    if (pipe2(life, O_CLOEXEC)) return errno;
    c->sup = supervisor_start(life[0], &c->stack);
    int e = errno;
    close(life[0]);
    c->lfd = life[1];
    if (c->sup < 0) {
        c->sup = 0;
        close_fd(&c->lfd);
        return e;
    }
    /* (the supervisor does the same: whichever comes first, the group is
     * there before the compiler joins it) */
    setpgid(c->sup, c->sup);
    if (pipe2(fds, O_CLOEXEC)) {
        e = errno;
        child_release(c);
        return e;
    }
    /* Our end only: the child's must block when the pipe is full. */
    (void)fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    /* (dup2 onto itself would keep the close-on-exec flag: only when the
     * host has closed its standard descriptors can that be, and then the
     * descriptor is dup'd away first) */
    int wfd = fds[1] > 2 ? fds[1] : fcntl(fds[1], F_DUPFD_CLOEXEC, 3);
    posix_spawn_file_actions_adddup2(&fa, wfd, 1);
    posix_spawn_file_actions_adddup2(&fa, wfd, 2);
    /* The compiler gets default signal handling whatever the host
     * application (or a pool worker's blocked mask) has set. */
    posix_spawnattr_init(&at);
    sigset_t none, dflt;
    sigemptyset(&none);
    sigemptyset(&dflt);
    sigaddset(&dflt, SIGPIPE);
    sigaddset(&dflt, SIGCHLD);
    sigaddset(&dflt, SIGINT);
    sigaddset(&dflt, SIGTERM);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dflt);
    posix_spawnattr_setpgroup(&at, c->sup);   /* the supervisor's group */
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    pid_t pid;
    e = wfd < 0 ? errno
        : strchr(argv[0], '/') ? posix_spawn(&pid, argv[0], &fa, &at, argv, environ)
                               : posix_spawnp(&pid, argv[0], &fa, &at, argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    if (wfd >= 0 && wfd != fds[1]) close(wfd);
    close(fds[1]);
    if (e) {
        close(fds[0]);
        child_release(c);
        return e;
    }
    c->pid = pid;
    c->fd = fds[0];
    c->pfd = pid_fd(pid);
    c->sfd = pid_fd(c->sup);
    c->deadline = j->timeout_ms > 0 ? now_ms() + j->timeout_ms : 0;
    return 0;
}

/* Reads what the child has written so far. */
static void child_drain(Child *c)
{
    char chunk[4096];
    ssize_t n;
    while ((n = read(c->fd, chunk, sizeof chunk)) > 0) keep(c->out, sizeof c->out, &c->len, chunk, n);
    if (n == 0) c->eof = true;
}

/* After the child has exited or was killed: what it wrote before it
 * exited (a leftover process's later output is not waited for), and its
 * descriptors closed (the supervisor's are child_release's). */
static void child_close(Child *c)
{
    if (!c->expired && !c->eof && c->fd >= 0) child_drain(c);
    close_fd(&c->pfd);
    close_fd(&c->fd);
}

/* Kills the child's group (the supervisor is not reaped yet: the group's
 * id is still its own), then the child itself (it may have left the
 * group), and reaps it. */
static void child_kill(Child *c)
{
    if (c->sup > 0) kill(-c->sup, SIGKILL);
    c->sup_done = true;
    kill(c->pid, SIGKILL);
    reaped(c->pid, &c->status, true);
    c->gone = true;
}

/* The compiler has exited (reaped): its supervisor is killed now and
 * reaped later (child_release), by when it has most likely exited. */
static void child_exited(Child *c)
{
    c->gone = true;
    if (c->sup > 0 && !c->sup_done) sup_kill(c);
    c->sup_done = true;
}

/* The supervisor died while the compiler runs (someone killed it): its
 * group goes with it, as it would with the host, and the compile is then
 * reported killed. */
static void supervisor_died(Child *c)
{
    if (c->sup_done) return;
    c->sup_done = true;
    kill(-c->sup, SIGKILL);   /* (not reaped: the group's id is still its own) */
}

/* Without a pidfd: whether the supervisor has exited, leaving it
 * unreaped (WNOWAIT), so that its pid, the group's id, stays its own. */
static bool sup_exited(pid_t sup)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int r = waitid(P_PID, (id_t)sup, &si, WEXITED | WNOHANG | WNOWAIT);
    /* (ECHILD: reaped for us, where SIGCHLD is ignored) */
    return r == 0 ? si.si_pid == sup : errno == ECHILD;
}

/* Waits until at least one of the n running children (cs[i], not yet
 * gone) has exited or run past its deadline (then it is killed and marked
 * expired); reads their output meanwhile.  Returns how many are done. */
static int children_wait(Child **cs, int n)
{
    enum { MAXW = 64 };
    if (n > MAXW) n = MAXW;
    for (;;) {
        int done = 0;
        double now = now_ms();
        int wait_ms = -1;
        struct pollfd pf[3 * MAXW];
        for (int i = 0; i < n; i++) {
            Child *c = cs[i];
            if (!c->gone && c->deadline > 0 && now >= c->deadline) {
                c->expired = true;
                child_kill(c);
            }
            if (c->gone) {
                done++;
                continue;
            }
            /* Without pidfds the exits are looked for every 10 ms. */
            int w = c->pfd >= 0 && (c->sfd >= 0 || c->sup_done) ? -1 : 10;
            if (c->deadline > 0) {
                double left = c->deadline - now;
                int l = left > 1e6 ? 1000000 : (int)left + 1;
                if (w < 0 || l < w) w = l;
            }
            if (w >= 0 && (wait_ms < 0 || w < wait_ms)) wait_ms = w;
        }
        if (done) return done;
        for (int i = 0; i < n; i++) {
            Child *c = cs[i];
            pf[3 * i] = (struct pollfd){.fd = c->eof ? -1 : c->fd, .events = POLLIN};
            pf[3 * i + 1] = (struct pollfd){.fd = c->pfd, .events = POLLIN};
            pf[3 * i + 2] = (struct pollfd){.fd = c->sup_done ? -1 : c->sfd, .events = POLLIN};
        }
        int r = poll(pf, (nfds_t)(3 * n), wait_ms);
        if (r < 0 && errno != EINTR) {
            /* cannot wait for the children properly: wait for one plainly */
            reaped(cs[0]->pid, &cs[0]->status, true);
            child_exited(cs[0]);
            return 1;
        }
        for (int i = 0; i < n; i++) {
            Child *c = cs[i];
            if (r > 0 && (pf[3 * i].revents & (POLLIN | POLLHUP | POLLERR))) child_drain(c);
            if (!c->sup_done && (c->sfd >= 0 ? r > 0 && (pf[3 * i + 2].revents & POLLIN) : sup_exited(c->sup)))
                supervisor_died(c);
            if (c->pfd >= 0 ? r > 0 && (pf[3 * i + 1].revents & POLLIN) : reaped(c->pid, &c->status, false)) {
                if (c->pfd >= 0) reaped(c->pid, &c->status, true);
                child_exited(c);
            }
        }
    }
}

/* Runs argv to its end (child_start, children_wait): 0 with the wait
 * status in *status and its output in c->out, the errno of a failed
 * start, or ETIMEDOUT when the child ran longer than the Jit's limit. */
static int run_capture(Jit *j, char *const argv[], Child *c, int *status)
{
    *status = 0;
    int e = child_start(j, argv, c);
    if (e) return e;
    Child *one = c;
    while (!c->gone) children_wait(&one, 1);
    child_close(c);
    child_release(c);
    *status = c->status;
    return c->expired ? ETIMEDOUT : 0;
}

static bool not_found(int e) { return e == ENOENT || e == ENOTDIR; }

/* Whether prog names an executable file, directly or through $PATH (the
 * file found in found[PATH_MAX], its stat, symbolic links followed, in
 * *st): 1 if so, 0 if it names a file that is not executable (so that
 * the message says that, not "not found"), -1 if there is none.
 * posix_spawn reports a failed exec as ENOENT on current glibc, but
 * other C libraries (and glibc under valgrind) report it as exit status
 * 127 instead, which a compiler could also return: looking first makes
 * "not found" reliable. */
static int find_program(const char *prog, char found[PATH_MAX], struct stat *st)
{
    if (strchr(prog, '/')) {
        if (strlen(prog) >= PATH_MAX) return -1;
        strcpy(found, prog);
        if (stat(prog, st) || S_ISDIR(st->st_mode)) return -1;
        return S_ISREG(st->st_mode) && !access(prog, X_OK) ? 1 : 0;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/bin:/usr/bin";
    int best = -1;
    char first[PATH_MAX] = "";
    for (const char *p = path;; p++) {
        const char *end = strchrnul(p, ':');
        /* An empty element means the current directory. */
        int n = end > p ? snprintf(found, PATH_MAX, "%.*s/%s", (int)(end - p), p, prog)
                        : snprintf(found, PATH_MAX, "./%s", prog);
        if (n > 0 && n < PATH_MAX && !stat(found, st) && S_ISREG(st->st_mode)) {
            if (!access(found, X_OK)) return 1;
            if (best < 0) {
                best = 0;
                memcpy(first, found, (size_t)n + 1);
            }
        }
        if (!*end) break;
        p = end;
    }
    if (best == 0) {
        strcpy(found, first);
        (void)stat(found, st);
    }
    return best;
}

static void timeout_error(Jit *j, char *err, size_t n)
{
    set_err(err, n, "the C compiler '%s' did not finish within %.0f s and was killed (set the time limit with "
            "AXLE_CC_TIMEOUT or ax_options.cc_timeout)", j->cc, j->timeout_ms / 1000);
}

static void start_error(Jit *j, int e, char *err, size_t n)
{
    if (e == ETIMEDOUT) {
        timeout_error(j, err, n);
        return;
    }
    if (not_found(e)) set_err(err, n, "the C compiler '%s' was not found (set AXLE_CC)", j->cc);
    else set_err(err, n, "the C compiler '%s' could not be run: %s", j->cc, strerror(e));
}

/* The first lines of the compiler's output, for an error message. */
static void first_lines(char *s, int maxlines)
{
    while (*s == '\n' || *s == '\r') memmove(s, s + 1, strlen(s));
    char *p = s;
    for (int line = 0; *p && line < maxlines; line++) {
        char *nl = strchr(p, '\n');
        if (!nl) { p += strlen(p); break; }
        p = nl + 1;
    }
    *p = 0;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
}

/* ------------------------------------------------------------ key */

static void put_field(JitSha256 *s, const void *p, size_t n)
{
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)((uint64_t)n >> (8 * i));
    jit_sha256_update(s, len, 8);
    jit_sha256_update(s, p, n);
}

static void put_str(JitSha256 *s, const char *str) { put_field(s, str, strlen(str)); }

/* The host's instruction-set identity, for -march=native keys: the machine
 * name and the CPU feature line of /proc/cpuinfo ("flags" on x86,
 * "Features" on Arm). */
static void put_host(JitSha256 *s)
{
    struct utsname u;
    put_str(s, uname(&u) == 0 ? u.machine : "");
    FILE *f = fopen("/proc/cpuinfo", "re");
    char *line = NULL;
    size_t cap = 0;
    bool found = false;
    if (f) {
        while (getline(&line, &cap, f) > 0)
            if (!strncmp(line, "flags", 5) || !strncmp(line, "Features", 8) ||
                !strncmp(line, "isa", 3)) {
                put_str(s, line);
                found = true;
                break;
            }
        fclose(f);
    }
    free(line);
    if (!found) put_str(s, "");
}

/* ------------------------------------------------------------ files */

static uint64_t random64(Jit *j)
{
    uint64_t r;
#if defined(__linux__)
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r) return r;
#endif
    /* splitmix64 over time, pid and a per-Jit counter: names need only be
     * unlikely to collide (O_EXCL catches the rest), not unpredictable,
     * since no one else can write in the directory. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    j->seed += 0x9e3779b97f4a7c15u ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
    r = j->seed;
    r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9u;
    r = (r ^ (r >> 27)) * 0x94d049bb133111ebu;
    return r ^ (r >> 31);
}

/* Every file axle opens in a cache directory is opened through
 * open_cached or create_unique: whatever stands under a name there (a
 * FIFO, a socket, a directory, a device node, a symbolic link to any of
 * them, planted or left by some other tool) must never hang the open,
 * never be followed, never be read or written through, and never become
 * a controlling terminal.  The flags for that: */
#define CACHE_OPEN_FLAGS (O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

/* Opens name in dfd (flags: O_RDONLY or O_WRONLY, with O_CREAT to make it)
 * only if it is a regular file of ours.  The name is looked at first
 * (lstat), so that an odd file is not even opened (a device's open alone
 * may act: a tape rewinds), then the open file is checked again (fstat:
 * the same file, still regular and ours), so that a file swapped in
 * between is refused too.  Returns the descriptor; -1 with *why NULL
 * when there is no such file (errno ENOENT), or -1 with *why saying what
 * is wrong with the one there. */
static int open_cached(int dfd, const char *name, int flags, const char **why)
{
    struct stat pre, st;
    *why = NULL;
    bool existed = !fstatat(dfd, name, &pre, AT_SYMLINK_NOFOLLOW);
    if (!existed && (errno != ENOENT || !(flags & O_CREAT))) {
        if (errno != ENOENT) *why = strerror(errno);
        return -1;
    }
    if (existed) {
        if (S_ISLNK(pre.st_mode)) *why = "a symbolic link";
        else if (!S_ISREG(pre.st_mode)) *why = "not a regular file";
        else if (pre.st_uid != geteuid()) *why = "owned by another user";
        if (*why) {
            errno = EPERM;
            return -1;
        }
    }
    int fd = openat(dfd, name, flags | CACHE_OPEN_FLAGS, 0600);
    if (fd < 0) {
        if (errno == ENOENT && !(flags & O_CREAT)) return -1;   /* removed meanwhile: none */
        *why = errno == ELOOP ? "a symbolic link" : errno == ENXIO ? "not a regular file" : strerror(errno);
        return -1;
    }
    if (fstat(fd, &st)) *why = strerror(errno);
    else if (!S_ISREG(st.st_mode)) *why = "not a regular file";
    else if (st.st_uid != geteuid()) *why = "owned by another user";
    else if (existed && (st.st_dev != pre.st_dev || st.st_ino != pre.st_ino)) *why = "replaced while opened";
    if (*why) {
        close(fd);
        errno = EPERM;
        return -1;
    }
    return fd;
}

/* Creates base+suffix in dfd with a fresh base name ("tmp-<16 hex>"),
 * exclusively (O_EXCL: nothing that was there, link or not, is opened),
 * mode 0600.  Returns the descriptor, or -1 with base "". */
static int create_unique(Jit *j, int dfd, const char *suffix, char base[32])
{
    base[0] = 0;   /* (callers format the name even when this fails) */
    if (fault_hit(AX_FAULT_WRITE)) {
        errno = ENOSPC;
        return -1;
    }
    for (int tries = 0; tries < 100; tries++) {
        snprintf(base, 32, "tmp-%016llx", (unsigned long long)random64(j));
        char name[64];
        snprintf(name, sizeof name, "%s%s", base, suffix);
        int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | CACHE_OPEN_FLAGS, 0600);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0) return -1;
        /* O_EXCL made it, so it is a new regular file of ours; checked
         * all the same, as every file opened here is (one fstat) */
        struct stat st;
        if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
            close(fd);
            unlinkat(dfd, name, 0);
            errno = EPERM;
            return -1;
        }
        return fd;
    }
    errno = EEXIST;
    return -1;
}

static bool write_all(int fd, const void *p, size_t n)
{
    if (fault_hit(AX_FAULT_WRITE)) {
        errno = ENOSPC;
        return false;
    }
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return false;
        c += w;
        n -= (size_t)w;
    }
    return true;
}

/* Reads an open regular file of the given size; NULL if it is not exactly
 * that long (it changed under us) or memory is lacking. */
static uint8_t *read_exact(int fd, size_t size)
{
    uint8_t *b = ax__malloc(size + 1);
    if (!b) {
        errno = ENOMEM;
        return NULL;
    }
    size_t got = 0;
    for (;;) {
        ssize_t r = read(fd, b + got, size + 1 - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
        if (got > size) break;
    }
    if (got != size) {
        free(b);
        errno = ESTALE;
        return NULL;
    }
    return b;
}

static void unlink_name(int dfd, const char *base, const char *suffix)
{
    char name[64];
    snprintf(name, sizeof name, "%s%s", base, suffix);
    unlinkat(dfd, name, 0);
}

/* dlopen of dir/name; NULL with the loader's message in err. */
static void *load_path(const char *dir, const char *name, char *err, size_t n)
{
    char path[PATH_MAX];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
        set_err(err, n, "the path %s/%s is too long", dir, name);
        return NULL;
    }
    dlerror();
    void *h = fault_hit(AX_FAULT_DLOPEN) ? NULL : dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        if (!e) e = "dlopen failed (fault injected by a test)";
        set_err(err, n, "could not load the compiled code: %s", e ? e : "unknown error");
    }
    return h;
}

/* ------------------------------------------------------------ cache dir */

/* mkdir -p, new directories private. */
static void mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    if (n >= sizeof buf) return;
    memcpy(buf, path, n + 1);
    for (size_t i = 1; i < n; i++)
        if (buf[i] == '/') {
            buf[i] = 0;
            mkdir(buf, 0700);
            buf[i] = '/';
        }
    mkdir(buf, 0700);
}

char *jit_default_dir(void)
{
    /* XDG base directories: relative values are invalid and ignored. */
    const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME"), *tail;
    if (x && x[0] == '/') tail = "/axle";
    else if (h && h[0] == '/') { x = h; tail = "/.cache/axle"; }
    else return NULL;
    size_t n = strlen(x) + strlen(tail) + 1;
    char *s = ax__malloc(n);
    if (s) snprintf(s, n, "%s%s", x, tail);
    return s;
}

/* Temporary files (tmp-*: sources, objects, parts, loaded copies) are
 * removed by the process that made them, but a process killed mid-compile
 * leaves its own behind.  Those older than any compile can take (twice
 * the compiler's time limit, at least an hour; a day without a limit) are
 * removed; young ones may belong to a compile running now.  At most once
 * an hour per directory (the time of the file sweep.stamp), so that a new
 * context costs one stat, not a directory scan. */
static void sweep_stale(Jit *j)
{
    time_t now = time(NULL);
    struct stat st;
    if (!fstatat(j->dirfd, "sweep.stamp", &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode) &&
        st.st_uid == geteuid() && now - st.st_mtime < 3600 && st.st_mtime <= now)
        return;
    /* The stamp is opened like an entry (open_cached): a FIFO under its
     * name once hung the first compile here, in an open for writing.  An
     * odd file there is left alone, and the sweep then runs each time. */
    const char *why;
    int sfd = open_cached(j->dirfd, "sweep.stamp", O_WRONLY | O_CREAT, &why);
    if (sfd >= 0) {
        (void)futimens(sfd, NULL);
        close(sfd);
    } else {
        trace(j, "cannot keep %s/sweep.stamp (%s)", j->dir, why ? why : strerror(errno));
    }
    double age = j->timeout_ms > 0 ? 2 * j->timeout_ms / 1000 : 24 * 3600;
    if (age < 3600) age = 3600;
    int dfd = dup(j->dirfd);
    DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!d) {
        if (dfd >= 0) close(dfd);
        return;
    }
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "tmp-", 4)) continue;
        if (fstatat(j->dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid() || (double)(now - st.st_mtime) < age)
            continue;
        if (!unlinkat(j->dirfd, e->d_name, 0)) n++;
    }
    closedir(d);
    if (n) trace(j, "removed %d stale temporary files from %s", n, j->dir);
}

/* ------------------------------------------------------------ size
 *
 * The cache is bounded (ax_options.cache_limit): each disk hit sets its
 * entry's modification time to now, so the times order the entries by
 * last use, and after each store the directory is measured and the least
 * recently used entries are removed until it holds three quarters of the
 * limit (so that the next few stores do not each evict).  Several
 * processes may do this at once: an entry removed under another process
 * is a miss there (a fresh compile), never a wrong load, since every load
 * verifies the bytes it reads, and a module already loaded stays mapped. */

/* An entry: <64 hex digits>.<kind> (compiled modules: .so; blobs). */
static bool entry_name(const char *name)
{
    for (int i = 0; i < 2 * KEY_BYTES; i++)
        if (!isxdigit((unsigned char)name[i])) return false;
    return name[2 * KEY_BYTES] == '.' && name[2 * KEY_BYTES + 1];
}

typedef struct DirEnt {
    char name[96];
    int64_t bytes;
    struct timespec used;
} DirEnt;

static int by_use(const void *a, const void *b)
{
    const DirEnt *x = a, *y = b;
    if (x->used.tv_sec != y->used.tv_sec) return x->used.tv_sec < y->used.tv_sec ? -1 : 1;
    if (x->used.tv_nsec != y->used.tv_nsec) return x->used.tv_nsec < y->used.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The entries of the directory dfd (a list to free, *n of them, their
 * bytes in *total); NULL with *n = -1 when it cannot be read or memory
 * is lacking. */
static DirEnt *list_entries(int dfd, int64_t *n, int64_t *total)
{
    *n = -1;
    *total = 0;
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0) close(fd);
        return NULL;
    }
    rewinddir(d);
    DirEnt *v = NULL;
    int64_t len = 0, cap = 0;
    bool ok = true;
    for (struct dirent *e; ok && (e = readdir(d));) {
        struct stat st;
        if (!entry_name(e->d_name) || strlen(e->d_name) >= sizeof v->name ||
            fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue;
        if (len == cap) {
            int64_t c = cap ? 2 * cap : 64;
            DirEnt *w = ax__realloc(v, sizeof *w * (size_t)c);
            if (!w) {
                ok = false;
                break;
            }
            v = w;
            cap = c;
        }
        DirEnt *x = &v[len++];
        memcpy(x->name, e->d_name, strlen(e->d_name) + 1);   /* shorter than name: tested above */
        x->bytes = (int64_t)st.st_size;
        x->used = st.st_mtim;
        *total += x->bytes;
    }
    closedir(d);
    if (!ok) {
        free(v);
        errno = ENOMEM;
        return NULL;
    }
    *n = len;
    return v ? v : ax__calloc(1, sizeof *v);
}

/* Marks an entry used now (the eviction order): through the descriptor
 * it was verified by, not its name, which could name something else by
 * now. */
static void touch_entry(Jit *j, int fd)
{
    if (j->size_limit > 0) (void)futimens(fd, NULL);
}

/* After a store: removes the least recently used entries while the
 * directory holds more than the limit. */
static void evict(Jit *j)
{
    if (j->size_limit <= 0 || j->dirfd < 0) return;
    int64_t n, total;
    DirEnt *v = list_entries(j->dirfd, &n, &total);
    if (!v) return;
    if (total > j->size_limit) {
        qsort(v, (size_t)n, sizeof *v, by_use);
        int64_t goal = j->size_limit / 4 * 3, removed = 0, k = 0;
        /* the newest entry (just stored) stays, whatever its size */
        for (; k < n - 1 && total > goal; k++)
            if (!unlinkat(j->dirfd, v[k].name, 0) || errno == ENOENT) {
                total -= v[k].bytes;
                removed++;
            }
        trace(j, "evicted %lld least recently used entries; %lld bytes left (limit %lld)", (long long)removed,
              (long long)total, (long long)j->size_limit);
    }
    free(v);
}

int jit_dir_stats(const char *dir, JitDirStats *st)
{
    st->entries = st->bytes = 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (dfd < 0) return -1;
    int64_t n, total;
    DirEnt *v = list_entries(dfd, &n, &total);
    int e = errno;
    close(dfd);
    if (!v) {
        errno = e;
        return -1;
    }
    free(v);
    st->entries = n;
    st->bytes = total;
    return 0;
}

int jit_dir_clear(const char *dir, JitDirStats *removed)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (dfd < 0) return -1;
    int fd = dup(dfd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int e = errno;
        if (fd >= 0) close(fd);
        close(dfd);
        errno = e;
        return -1;
    }
    time_t now = time(NULL);
    for (struct dirent *e; (e = readdir(d));) {
        const char *nm = e->d_name;
        struct stat st;
        if (fstatat(dfd, nm, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue;
        size_t l = strlen(nm);
        bool entry = entry_name(nm);
        bool id = !strncmp(nm, "cc-", 3) && l > 3 && !strcmp(nm + l - 3, ".id");
        /* a young temporary file may be a compile running now elsewhere */
        bool stale_tmp = !strncmp(nm, "tmp-", 4) && now - st.st_mtime > 3600;
        if (!(entry || id || stale_tmp || !strcmp(nm, "sweep.stamp"))) continue;
        if (unlinkat(dfd, nm, 0) == 0 && entry && removed) {
            removed->entries++;
            removed->bytes += (int64_t)st.st_size;
        }
    }
    closedir(d);
    close(dfd);
    return 0;
}

static void ensure_dir(Jit *j)
{
    if (j->dir_done) return;
    j->dir_done = true;
    if (j->no_disk_cache) return;
    char *path = j->cache_dir_opt ? ax__strdup(j->cache_dir_opt) : jit_default_dir();
    if (!path) {
        trace(j, "no cache directory ($HOME unset); compiling without the disk cache");
        return;
    }
    mkdir_p(path);
    /* O_DIRECTORY: anything else under the name is refused before it is
     * opened (a FIFO there does not block) */
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    const char *why = NULL;
    if (fd < 0) why = strerror(errno);
    else if (fstat(fd, &st)) why = strerror(errno);
    else if (!S_ISDIR(st.st_mode)) why = "not a directory";
    else if (st.st_uid != geteuid()) why = "owned by another user";
    else if (st.st_mode & (S_IWGRP | S_IWOTH)) why = "writable by group or others";
    else if ((st.st_mode & S_IRWXU) != S_IRWXU) why = "not readable, writable and searchable by us";
    char *real = why ? NULL : realpath(path, NULL);
    if (!why && !real) why = strerror(errno);
    if (why) {
        trace(j, "refusing directory %s (%s); compiling without the disk cache", path, why);
        if (fd >= 0) close(fd);
        free(path);
        return;
    }
    free(path);
    j->dirfd = fd;
    j->dir = real;
    sweep_stale(j);
}

const char *jit_cache_dir(Jit *j)
{
    if (!j) return NULL;
    ensure_dir(j);
    return j->dir;
}

/* ------------------------------------------------------------ entries */

static void make_trailer(uint8_t t[TRAILER_BYTES], const uint8_t key[KEY_BYTES],
                         const uint8_t *obj, size_t n)
{
    memcpy(t, key, 32);
    jit_sha256(obj, n, t + 32);
    for (int i = 0; i < 8; i++) t[64 + i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(t + 72, TRAILER_MAGIC, 16);
}

/* NULL if b[0..n) is a good entry for key, else what is wrong. */
static const char *check_entry(const uint8_t *b, size_t n, const uint8_t key[KEY_BYTES])
{
    if (n <= TRAILER_BYTES) return "too short";
    const uint8_t *t = b + n - TRAILER_BYTES;
    if (memcmp(t + 72, TRAILER_MAGIC, 16)) return "no trailer";
    uint64_t len = 0;
    for (int i = 0; i < 8; i++) len |= (uint64_t)t[64 + i] << (8 * i);
    if (len != n - TRAILER_BYTES) return "wrong length";
    if (memcmp(t, key, 32)) return "another key";
    uint8_t h[32];
    jit_sha256(b, (size_t)len, h);
    if (memcmp(h, t + 32, 32)) return "content hash mismatch";
    return NULL;
}

/* NULL if st is a regular file of ours that no one else may write (and
 * not absurdly large), else what is wrong. */
static const char *not_ours(const struct stat *st)
{
    if (!S_ISREG(st->st_mode)) return "not a regular file";
    if (st->st_uid != geteuid()) return "owned by another user";
    if (st->st_mode & (S_IWGRP | S_IWOTH)) return "writable by group or others";
    if (st->st_size > MAX_ENTRY) return "too large";
    return NULL;
}

/* Loads the verified entry hex.so.  NULL with *why unset: no entry; NULL
 * with *why set: a bad entry (the caller deletes it), unless *local says
 * the entry was good and only loading our copy of it failed (a full disk,
 * no memory: the entry stays for the next time). */
static void *load_entry(Jit *j, const char *hex, const uint8_t key[KEY_BYTES], const char **why,
                        bool *local, char *msg, size_t msgsize)
{
    *local = false;
    char name[80];
    snprintf(name, sizeof name, "%s.so", hex);
    int fd = open_cached(j->dirfd, name, O_RDONLY, why);
    if (fd < 0) return NULL;
    struct stat st;
    uint8_t *b = NULL;
    if (fstat(fd, &st)) *why = strerror(errno);
    else if ((*why = not_ours(&st))) {}
    else if (!(b = read_exact(fd, (size_t)st.st_size))) {
        *local = errno == ENOMEM;
        *why = *local ? "out of memory" : "changed while read";
    } else *why = check_entry(b, (size_t)st.st_size, key);
    if (!*why) touch_entry(j, fd);
    close(fd);
    if (*why) {
        free(b);
        return NULL;
    }
    /* Load a private copy of the bytes just verified (see the top). */
    size_t n = (size_t)st.st_size - TRAILER_BYTES;
    char base[32];
    void *h = NULL;
    int cfd = create_unique(j, j->dirfd, ".load", base);
    *local = true;
    if (cfd < 0) {
        snprintf(msg, msgsize, "cannot create a file in %s: %s", j->dir, strerror(errno));
        *why = msg;
    } else {
        bool ok = write_all(cfd, b, n);
        close(cfd);
        char file[64];
        snprintf(file, sizeof file, "%s.load", base);
        if (!ok) {
            snprintf(msg, msgsize, "cannot write in %s", j->dir);
            *why = msg;
        } else if (!(h = load_path(j->dir, file, msg, msgsize))) {
            *why = msg;
        }
        unlinkat(j->dirfd, file, 0);
    }
    free(b);
    return h;
}

/* Stores the compiler's output base.so as the entry hex.so and loads it.
 * NULL (with a trace) if that fails: the caller loads base.so instead. */
static void *store_entry(Jit *j, const char *base, const char *hex, const uint8_t key[KEY_BYTES])
{
    char name[64];
    snprintf(name, sizeof name, "%s.so", base);
    const char *why;
    int fd = open_cached(j->dirfd, name, O_RDONLY, &why);
    struct stat st;
    uint8_t *b = NULL;
    if (fd >= 0 && !fstat(fd, &st) && st.st_size < MAX_ENTRY) b = read_exact(fd, (size_t)st.st_size);
    if (fd >= 0) close(fd);
    if (!b) {
        trace(j, "could not read the compiler's output %s; not stored", name);
        return NULL;
    }
    size_t n = (size_t)st.st_size;
    uint8_t t[TRAILER_BYTES];
    make_trailer(t, key, b, n);
    char pbase[32], part[64], entry[80];
    int pfd = create_unique(j, j->dirfd, ".part", pbase);
    snprintf(part, sizeof part, "%s.part", pbase);
    snprintf(entry, sizeof entry, "%s.so", hex);
    bool ok = pfd >= 0 && write_all(pfd, b, n) && write_all(pfd, t, sizeof t);
    if (pfd >= 0) close(pfd);
    free(b);
    void *h = NULL;
    char msg[256];
    if (!ok) {
        trace(j, "could not write in %s; not stored", j->dir);
    } else if (!(h = load_path(j->dir, part, msg, sizeof msg))) {
        trace(j, "%s", msg);   /* the caller's load of base.so reports it */
    } else if (renameat(j->dirfd, part, j->dirfd, entry)) {
        /* Loaded but not published: still usable now. */
        trace(j, "could not rename %s to %s: %s; not stored", part, entry, strerror(errno));
    } else {
        evict(j);
        return h;
    }
    if (pfd >= 0) unlinkat(j->dirfd, part, 0);
    return h;
}

/* One compile: the source written to a file, the compiler started on it
 * (job_start); later its result checked, stored and loaded (job_finish).
 * Several run at once in jit_load_many. */
typedef struct Job {
    int unit;                  /* jit_load_many's index */
    char tmpdir[PATH_MAX];     /* a private directory when there is no disk cache */
    int dfd;                   /* where the files are */
    const char *dir;
    char base[32];             /* the files' name, without suffix; "" none yet */
    double t0;
    Child ch;
} Job;

/* The private directory's removal (no disk cache). */
static void job_dir_done(Job *b)
{
    if (b->tmpdir[0]) {
        if (b->dfd >= 0) close(b->dfd);
        rmdir(b->tmpdir);
        b->tmpdir[0] = 0;
    }
}

static void job_files_done(Job *b)
{
    if (b->base[0]) {
        unlink_name(b->dfd, b->base, ".c");
        unlink_name(b->dfd, b->base, ".so");
        b->base[0] = 0;
    }
    job_dir_done(b);
}

/* Writes the source and starts the compiler; false with a message (and
 * nothing left behind) when that fails. */
static bool job_start(Jit *j, Job *b, const char *src, size_t len, const char *flags, char *err, size_t errsize)
{
    b->tmpdir[0] = 0;
    b->base[0] = 0;
    b->dfd = j->dirfd;
    b->dir = j->dir;
    if (b->dfd < 0) {
        /* No disk cache: a private directory of our own for the files. */
        const char *t = getenv("TMPDIR");
        if (!t || t[0] != '/') t = "/tmp";
        snprintf(b->tmpdir, sizeof b->tmpdir, "%s/axle-XXXXXX", t);
        if (!mkdtemp(b->tmpdir) || (b->dfd = open(b->tmpdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
            set_err(err, errsize, "cannot make a temporary directory in %s: %s", t, strerror(errno));
            if (b->tmpdir[0] && b->dfd < 0) rmdir(b->tmpdir);
            b->tmpdir[0] = 0;
            return false;
        }
        b->dir = b->tmpdir;
    }
    char srcpath[PATH_MAX], sopath[PATH_MAX];
    int fd = create_unique(j, b->dfd, ".c", b->base);
    if (fd < 0) {
        set_err(err, errsize, "cannot create a file in %s: %s", b->dir, strerror(errno));
        b->base[0] = 0;
        job_dir_done(b);
        return false;
    }
    bool wrote = write_all(fd, src, len);
    close(fd);
    if (!wrote) {
        set_err(err, errsize, "cannot write the generated source in %s", b->dir);
        job_files_done(b);
        return false;
    }
    if ((size_t)snprintf(srcpath, sizeof srcpath, "%s/%s.c", b->dir, b->base) >= sizeof srcpath ||
        (size_t)snprintf(sopath, sizeof sopath, "%s/%s.so", b->dir, b->base) >= sizeof sopath) {
        set_err(err, errsize, "the directory name %s is too long", b->dir);
        job_files_done(b);
        return false;
    }
    Argv a = {0};
    argv_words(&a, j->cc);
    argv_words(&a, j->cflags);
    if (j->lean) argv_push(&a, "-nostdlib");
    if (flags) argv_words(&a, flags);
    argv_push(&a, "-o");
    argv_push(&a, sopath);
    argv_push(&a, srcpath);
    argv_words(&a, j->libs);
    if (j->lean) argv_push(&a, "-lgcc");
    if (a.oom) {
        argv_free(&a);
        set_err(err, errsize, "out of memory");
        job_files_done(b);
        return false;
    }
    b->t0 = now_ms();
    int e = child_start(j, a.v, &b->ch);
    argv_free(&a);
    if (e) {
        start_error(j, e, err, errsize);
        job_files_done(b);
        return false;
    }
    return true;
}

/* After the compiler has exited (or was killed): the loaded result,
 * stored in the disk cache when it is on; NULL with a message.  The
 * job's files and directory are gone afterwards either way. */
static void *job_finish(Jit *j, Job *b, const char *hex, const uint8_t key[KEY_BYTES], char *err, size_t errsize,
                        double *ms)
{
    void *h = NULL;
    child_close(&b->ch);
    *ms = now_ms() - b->t0;
    int st = b->ch.status;
    char *out = b->ch.out;
    if (b->ch.expired) {
        start_error(j, ETIMEDOUT, err, errsize);
    } else if (WIFSIGNALED(st)) {
        set_err(err, errsize, "the C compiler '%s' was killed by signal %d", j->cc, WTERMSIG(st));
    } else if (WIFEXITED(st) && WEXITSTATUS(st) == 127 && !out[0]) {
        /* How a failed exec shows where posix_spawn cannot report it. */
        start_error(j, ENOENT, err, errsize);
    } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
        first_lines(out, 12);
        set_err(err, errsize, "the C compiler '%s' failed: %s", j->cc, out[0] ? out : "(no message)");
    } else {
        if (j->dirfd >= 0) h = store_entry(j, b->base, hex, key);
        if (!h) {
            /* dlopen opens by name, blocking: what stands there is looked
             * at first, like every file opened in the directory */
            char name[64];
            const char *why;
            snprintf(name, sizeof name, "%s.so", b->base);
            int fd = open_cached(b->dfd, name, O_RDONLY, &why);
            if (fd >= 0) {
                close(fd);
                h = load_path(b->dir, name, err, errsize);
            } else {
                set_err(err, errsize, "the C compiler '%s' left no output %s/%s (%s)", j->cc, b->dir, name,
                        why ? why : strerror(errno));
            }
        }
    }
    job_files_done(b);
    /* the supervisor last: killed when the compiler exited, it has most
     * likely exited by now, so reaping it waits for nothing */
    child_release(&b->ch);
    return h;
}

/* A job given up (another failed first): its compiler killed, its files
 * removed. */
static void job_abandon(Job *b)
{
    if (!b->ch.gone) child_kill(&b->ch);
    child_close(&b->ch);
    child_release(&b->ch);
    job_files_done(b);
}

/* ------------------------------------------------------------ compiler identity */

#define ID_MAGIC "axle-cc-id-1\n"
enum { ID_MAX_AGE = 24 * 3600 };      /* seconds an identity file is trusted */

static void put_u64(JitSha256 *s, uint64_t v)
{
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
    jit_sha256_update(s, b, 8);
}

/* What identifies an executable file without running it: its real path,
 * device, inode, size, modification and change times. */
static void put_file_id(JitSha256 *s, const char *found, const struct stat *st)
{
    char *real = realpath(found, NULL);
    put_str(s, real ? real : found);
    free(real);
    put_u64(s, (uint64_t)st->st_dev);
    put_u64(s, (uint64_t)st->st_ino);
    put_u64(s, (uint64_t)st->st_size);
    put_u64(s, (uint64_t)st->st_mtim.tv_sec);
    put_u64(s, (uint64_t)st->st_mtim.tv_nsec);
    put_u64(s, (uint64_t)st->st_ctim.tv_sec);
    put_u64(s, (uint64_t)st->st_ctim.tv_nsec);
}

/* The name of the identity file for the command words w, whose first word
 * was found as prog0 (stat st0): "cc-<SHA-256>.id" over the command and
 * the file identity of every word that names a program (the first, and
 * later ones not starting with '-': "ccache cc" names both). */
static void id_file_name(const Jit *j, const Argv *w, const char *prog0, const struct stat *st0,
                         char name[80])
{
    JitSha256 s;
    uint8_t h[32];
    char hex[65];
    jit_sha256_init(&s);
    put_str(&s, "axle-cc-id-1");
    put_str(&s, j->cc);
    put_file_id(&s, prog0, st0);
    for (size_t i = 1; i < w->n; i++) {
        char found[PATH_MAX];
        struct stat st;
        if (w->v[i][0] != '-' && find_program(w->v[i], found, &st) > 0) put_file_id(&s, found, &st);
        else put_str(&s, "");
    }
    jit_sha256_final(&s, h);
    to_hex(h, 32, hex);
    snprintf(name, 80, "cc-%s.id", hex);
}

/* Reads the identity file name (ID_MAGIC, then the identity and a
 * newline) into out[cap], with the same checks as a cache entry.  False
 * when there is none or it is refused, malformed or older than
 * ID_MAX_AGE. */
static bool read_id(Jit *j, const char *name, char *out, size_t cap)
{
    const char *why = NULL;
    int fd = open_cached(j->dirfd, name, O_RDONLY, &why);
    if (fd < 0) {
        if (why) trace(j, "ignoring %s/%s (%s)", j->dir, name, why);
        return false;
    }
    const size_t ml = sizeof ID_MAGIC - 1;
    struct stat st;
    uint8_t *b = NULL;
    time_t age = 0;
    if (fstat(fd, &st)) why = strerror(errno);
    else if ((why = not_ours(&st))) {}
    else if ((size_t)st.st_size <= ml || (size_t)st.st_size - ml > cap) why = "wrong size";
    else if ((age = time(NULL) - st.st_mtime) > ID_MAX_AGE || age < -60) why = "out of date";
    else if (!(b = read_exact(fd, (size_t)st.st_size))) why = "changed while read";
    else {
        size_t n = (size_t)st.st_size - ml - 1;   /* the identity's length */
        if (memcmp(b, ID_MAGIC, ml) || b[ml + n] != '\n' || memchr(b + ml, '\n', n) ||
            memchr(b + ml, 0, n))
            why = "malformed";
        else {
            memcpy(out, b + ml, n);
            out[n] = 0;
        }
    }
    close(fd);
    free(b);
    if (why) trace(j, "ignoring %s/%s (%s)", j->dir, name, why);
    return !why;
}

/* Saves id as the identity file name: written under a fresh name and
 * renamed into place, like an entry. */
static void write_id(Jit *j, const char *name, const char *id)
{
    char base[32], tmp[64];
    int fd = create_unique(j, j->dirfd, ".id", base);
    if (fd < 0) {
        trace(j, "could not save the compiler identity in %s: %s", j->dir, strerror(errno));
        return;
    }
    snprintf(tmp, sizeof tmp, "%s.id", base);
    bool ok = write_all(fd, ID_MAGIC, sizeof ID_MAGIC - 1) && write_all(fd, id, strlen(id)) &&
              write_all(fd, "\n", 1);
    ok = !close(fd) && ok;
    if (ok && !renameat(j->dirfd, tmp, j->dirfd, name)) return;
    trace(j, "could not save the compiler identity as %s/%s", j->dir, name);
    unlinkat(j->dirfd, tmp, 0);
}

/* Finds the compiler's identity (from its identity file, else by running
 * `cc --version`) and hashes the fixed part of the key, once it has
 * succeeded: a failure (a compiler missing or not starting, memory
 * lacking) is not remembered, so the next load tries again and a compiler
 * installed meanwhile is found.  False (with a message) when the compiler
 * cannot be started. */
static bool ensure_identity(Jit *j, char *err, size_t n)
{
    if (j->id_done) return true;
    Argv a = {0};
    argv_words(&a, j->cc);
    char out[OUT_CAP], prog[PATH_MAX], idname[80] = "";
    struct stat pst;
    int e = 0;
    int found = a.oom || a.n < 1 ? -1 : find_program(a.v[0], prog, &pst);
    if (a.oom) e = ENOMEM;
    else if (found <= 0) e = found < 0 ? ENOENT : EACCES;
    else {
        ensure_dir(j);
        if (j->dirfd >= 0) id_file_name(j, &a, prog, &pst, idname);
        if (idname[0] && read_id(j, idname, out, sizeof out)) {
            trace(j, "compiler identity from %s", idname);
        } else {
            argv_push(&a, "--version");
            int st;
            Child ch;
            e = a.oom ? ENOMEM : run_capture(j, a.v, &ch, &st);
            if (!e) memcpy(out, ch.out, sizeof out);
            /* Whatever the exit status: a compiler without --version
             * still compiles, and its output (or nothing) still
             * identifies it. */
            if (!e) {
                first_lines(out, 1);
                if (idname[0]) write_id(j, idname, out);
            }
        }
    }
    argv_free(&a);
    if (e) {
        /* "Not found" only when the program is missing: a program that
         * exists but cannot start gets the system's reason. */
        if (found == 0) set_err(err, n, "the C compiler '%s' is not executable (set AXLE_CC)", j->cc);
        else start_error(j, e, err, n);
        return false;
    }
    char *id = ax__strdup(out);
    if (!id) {
        set_err(err, n, "out of memory");
        return false;
    }
    free(j->compiler_id);
    j->compiler_id = id;
    j->gcc = !strstr(id, "clang") &&
             (strstr(id, "gcc") || strstr(id, "GCC") || !strncmp(id, "cc (", 4) || strstr(id, "/cc ("));
    j->lean = j->lean_link && j->gcc;
    JitSha256 *s = &j->prefix;
    jit_sha256_init(s);
    put_str(s, "axle-jit-key-1");
    put_str(s, j->cc);
    put_str(s, out);
    put_str(s, j->cflags);
    put_str(s, j->libs);
    put_str(s, j->version);
    if (strstr(j->cflags, "native")) put_host(s);
    else put_str(s, "");
    if (j->lean) put_str(s, "lean link: -nostdlib ... -lgcc");
    j->id_done = true;
    return true;
}

const char *jit_compiler_id(Jit *j)
{
    return j && ensure_identity(j, NULL, 0) ? j->compiler_id : NULL;
}

bool jit_is_gcc(Jit *j)
{
    return jit_compiler_id(j) && j->gcc;
}

/* ------------------------------------------------------------ memory cache */


static size_t bucket_of(const uint8_t *key, size_t nb)
{
    uint64_t x;
    memcpy(&x, key, sizeof x);   /* a SHA-256 prefix is uniform already */
    return (size_t)(x & (nb - 1));
}

/* A cheap hash of a source: a memory hit is looked up by it and the
 * source compared, so that a program compiled again in the same context
 * does not hash its kernels' text with SHA-256 (tens of microseconds a
 * unit), which only the disk cache needs. */
static uint64_t fast_hash(const char *flags, const char *s, size_t n)
{
    return hash_combine(hash_bytes(s, n), hash_bytes(flags, strlen(flags)));
}

static bool same_source(const JitModule *m, const char *flags, const char *src, size_t len)
{
    size_t fl = strlen(flags);
    return m->srclen == fl + 1 + len && !memcmp(m->src, flags, fl + 1) && !memcmp(m->src + fl + 1, src, len);
}

static JitModule *src_find(Jit *j, uint64_t fh, const char *flags, const char *src, size_t len)
{
    int64_t *v = hmap_find(&j->by_source, fh);
    for (JitModule *m = v ? (JitModule *)(intptr_t)*v : NULL; m; m = m->snext)
        if (same_source(m, flags, src, len)) return m;
    return NULL;
}

/* Indexes m by its source and flags (skipped when memory is lacking: a
 * later load then finds it by its key). */
static void src_add(Jit *j, JitModule *m, uint64_t fh, const char *flags, const char *src, size_t len)
{
    size_t fl = strlen(flags);
    if (m->src || !(m->src = ax__malloc(fl + 1 + len))) return;
    int64_t *v = hmap_insert(&j->by_source, fh, 0, NULL);
    if (!v) {
        free(m->src);
        m->src = NULL;
        return;
    }
    memcpy(m->src, flags, fl + 1);
    memcpy(m->src + fl + 1, src, len);
    m->srclen = fl + 1 + len;
    m->fh = fh;
    m->snext = (JitModule *)(intptr_t)*v;
    *v = (int64_t)(intptr_t)m;
}

static JitModule *mem_find(Jit *j, const uint8_t key[KEY_BYTES])
{
    if (!j->nbuckets) return NULL;
    for (JitModule *m = j->buckets[bucket_of(key, j->nbuckets)]; m; m = m->next)
        if (!memcmp(m->key, key, KEY_BYTES)) return m;
    return NULL;
}

static bool mem_add(Jit *j, JitModule *m)
{
    if (j->nmodules >= j->nbuckets) {
        size_t nb = j->nbuckets ? 2 * j->nbuckets : 16;
        JitModule **b = ax__calloc(nb, sizeof *b);
        if (!b && !j->nbuckets) return false;
        if (b) {
            for (size_t i = 0; i < j->nbuckets; i++)
                for (JitModule *x = j->buckets[i], *nx; x; x = nx) {
                    nx = x->next;
                    size_t k = bucket_of(x->key, nb);
                    x->next = b[k];
                    b[k] = x;
                }
            free(j->buckets);
            j->buckets = b;
            j->nbuckets = nb;
        }
    }
    size_t k = bucket_of(m->key, j->nbuckets);
    m->next = j->buckets[k];
    j->buckets[k] = m;
    j->nmodules++;
    return true;
}

/* ------------------------------------------------------------ API */

Jit *jit_new(const JitOptions *o)
{
    JitOptions none = {0};
    if (!o) o = &none;
    Jit *j = ax__calloc(1, sizeof *j);
    if (!j) return NULL;
    hmap_init(&j->by_source);
    j->cc = dup_or(o->cc && o->cc[0] ? o->cc : NULL, "cc");
    j->cflags = dup_or(o->cflags, JIT_DEFAULT_CFLAGS);
    j->libs = dup_or(o->libs, JIT_DEFAULT_LIBS);
    j->version = dup_or(o->version, "");
    j->cache_dir_opt = o->cache_dir ? ax__strdup(o->cache_dir) : NULL;
    j->no_disk_cache = o->no_disk_cache;
    j->timeout_ms = o->timeout_s > 0 ? o->timeout_s * 1000 : 0;
    j->size_limit = o->size_limit;
    j->trace = o->trace;
    j->lean_link = o->lean_link;
    j->dirfd = -1;
    j->seed = (uint64_t)(uintptr_t)j;
    if (!j->cc || !j->cflags || !j->libs || !j->version || (o->cache_dir && !j->cache_dir_opt)) {
        jit_free(j);
        return NULL;
    }
    return j;
}

void jit_free(Jit *j)
{
    if (!j) return;
    for (size_t i = 0; i < j->nbuckets; i++)
        for (JitModule *m = j->buckets[i], *nx; m; m = nx) {
            nx = m->next;
            dlclose(m->handle);
            free(m->src);
            free(m);
        }
    free(j->buckets);
    hmap_free(&j->by_source);
    if (j->dirfd >= 0) close(j->dirfd);
    free(j->dir);
    free(j->compiler_id);
    free(j->cc);
    free(j->cflags);
    free(j->libs);
    free(j->version);
    free(j->cache_dir_opt);
    free(j);
}

/* The key of a source: the fixed fields (ensure_identity), its length and
 * its bytes. */
static void source_key(const Jit *j, const char *flags, const char *source, size_t len, uint8_t key[KEY_BYTES],
                       char hex[2 * KEY_BYTES + 1])
{
    JitSha256 s = j->prefix;
    if (flags[0]) put_str(&s, flags);   /* (none: the key of before per-unit flags) */
    uint8_t lenb[8];
    for (int i = 0; i < 8; i++) lenb[i] = (uint8_t)((uint64_t)len >> (8 * i));
    jit_sha256_update(&s, lenb, 8);
    jit_sha256_update(&s, source, len);
    jit_sha256_final(&s, key);
    to_hex(key, KEY_BYTES, hex);
}

/* The disk cache's entry for the key, loaded, or NULL (a corrupt entry is
 * removed on the way). */
static void *disk_find(Jit *j, const char *hex, const uint8_t key[KEY_BYTES])
{
    if (j->dirfd < 0) return NULL;
    const char *why;
    char msg[512], name[80];
    bool local;
    snprintf(name, sizeof name, "%s.so", hex);
    void *h = load_entry(j, hex, key, &why, &local, msg, sizeof msg);
    if (h) {
        trace(j, "hit disk %s", hex);
    } else if (why && local) {
        trace(j, "could not load %s/%s (%s)", j->dir, name, why);
    } else if (why) {
        trace(j, "rejected corrupt file %s/%s (%s)", j->dir, name, why);
        unlinkat(j->dirfd, name, 0);
    }
    return h;
}

/* A loaded object made a module of the memory cache; NULL (the object
 * closed) when memory is lacking. */
static JitModule *adopt(Jit *j, const uint8_t key[KEY_BYTES], const char *hex, void *h, char *err, size_t errsize)
{
    JitModule *m = ax__calloc(1, sizeof *m);
    if (m) {
        memcpy(m->key, key, KEY_BYTES);
        memcpy(m->hex, hex, sizeof m->hex);
        m->handle = h;
    }
    if (!m || !mem_add(j, m)) {
        free(m);
        dlclose(h);
        set_err(err, errsize, "out of memory");
        return NULL;
    }
    return m;
}

JitModule *jit_load(Jit *j, const char *source, size_t len, char *err, size_t errsize,
                    bool *from_cache, double *compile_ms)
{
    JitUnit u = {.source = source, .len = len};
    int r = jit_load_many(j, &u, 1, 1, NULL, NULL, err, errsize);
    if (from_cache) *from_cache = u.from_cache;
    if (compile_ms) *compile_ms = u.compile_ms;
    return r ? NULL : u.module;
}

/* Every unit from the memory cache, else the disk cache; the rest
 * compiled by up to `jobs` compiler processes at once (DESIGN.md s.2:
 * the kernels of a program are units of their own, so a cold program's
 * compile is spread over the cores and each kernel is cached apart).
 * On the first failure the compilers still running are killed. */
static int load_many(Jit *j, JitUnit *u, int n, int jobs, bool compile, JitProgress progress, void *progress_arg,
                     char *err, size_t errsize)
{
    enum { MAX_JOBS = 64 };
    set_err(err, errsize, "%s", "");
    if (!j || n < 0 || (n > 0 && !u)) {
        set_err(err, errsize, "jit_load: no source");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        u[i].module = NULL;
        u[i].from_cache = false;
        u[i].compile_ms = 0;
        if (!u[i].source && u[i].len) {
            set_err(err, errsize, "jit_load: no source");
            return -1;
        }
    }
    if (n == 0) return 0;
    if (!ensure_identity(j, err, errsize)) return -1;
    if (jobs < 1) jobs = 1;
    if (jobs > MAX_JOBS) jobs = MAX_JOBS;

    typedef struct Want {
        uint8_t key[KEY_BYTES];
        char hex[2 * KEY_BYTES + 1];
        uint64_t fh;                    /* fast_hash of the source */
        int same;                       /* an earlier unit with this source, or -1 */
    } Want;
    Want *w = ax__calloc((size_t)n, sizeof *w);
    int *todo = ax__calloc((size_t)n, sizeof *todo);
    Job *slots = NULL;
    Job **act = NULL, **idle = NULL;
    Child **cs = NULL;
    int ntodo = 0, failed = 0;
    if (!w || !todo) {
        set_err(err, errsize, "out of memory");
        failed = 1;
        goto out;
    }
    bool dir_checked = false;
    for (int i = 0; i < n && !failed; i++) {
        const char *src = u[i].source ? u[i].source : "", *fl = u[i].cflags ? u[i].cflags : "";
        w[i].same = -1;
        w[i].fh = fast_hash(fl, src, u[i].len);
        JitModule *m = src_find(j, w[i].fh, fl, src, u[i].len);
        if (m) {
            trace(j, "hit memory %s", m->hex);
            u[i].module = m;
            u[i].from_cache = true;
            continue;
        }
        source_key(j, fl, src, u[i].len, w[i].key, w[i].hex);
        if ((m = mem_find(j, w[i].key))) {
            trace(j, "hit memory %s", w[i].hex);
            src_add(j, m, w[i].fh, fl, src, u[i].len);
            u[i].module = m;
            u[i].from_cache = true;
            continue;
        }
        for (int k = 0; k < ntodo && w[i].same < 0; k++)
            if (!memcmp(w[todo[k]].key, w[i].key, KEY_BYTES)) w[i].same = todo[k];
        if (w[i].same >= 0) continue;
        if (!dir_checked) {
            ensure_dir(j);
            dir_checked = true;
        }
        void *h = disk_find(j, w[i].hex, w[i].key);
        if (h) {
            if (!(u[i].module = adopt(j, w[i].key, w[i].hex, h, err, errsize))) failed = 1;
            else src_add(j, u[i].module, w[i].fh, fl, src, u[i].len);
            u[i].from_cache = true;
            continue;
        }
        todo[ntodo++] = i;
    }
    if (failed || ntodo == 0 || !compile) goto out;

    if (jobs > ntodo) jobs = ntodo;
    slots = ax__calloc((size_t)jobs, sizeof *slots);
    act = ax__calloc((size_t)jobs, sizeof *act);
    idle = ax__calloc((size_t)jobs, sizeof *idle);
    cs = ax__calloc((size_t)jobs, sizeof *cs);
    if (!slots || !act || !idle || !cs) {
        set_err(err, errsize, "out of memory");
        failed = 1;
        goto out;
    }
    for (int k = 0; k < jobs; k++) idle[k] = &slots[jobs - 1 - k];
    int nidle = jobs, active = 0, next = 0, done = 0;
    if (progress) progress(progress_arg, 0, ntodo);
    while (active > 0 || (next < ntodo && !failed)) {
        while (!failed && next < ntodo && nidle > 0) {
            Job *b = idle[--nidle];
            b->unit = todo[next++];
            if (!job_start(j, b, u[b->unit].source, u[b->unit].len, u[b->unit].cflags, err, errsize)) {
                idle[nidle++] = b;
                failed = 1;
                break;
            }
            act[active++] = b;
        }
        if (failed) {
            for (int a = 0; a < active; a++) job_abandon(act[a]);
            active = 0;
            break;
        }
        if (active == 0) break;
        for (int a = 0; a < active; a++) cs[a] = &act[a]->ch;
        children_wait(cs, active);
        for (int a = 0; a < active;) {
            Job *b = act[a];
            if (!b->ch.gone) {
                a++;
                continue;
            }
            act[a] = act[--active];
            idle[nidle++] = b;
            if (failed) {
                job_abandon(b);
                continue;
            }
            double ms = 0;
            int i = b->unit;
            void *h = job_finish(j, b, w[i].hex, w[i].key, err, errsize, &ms);
            if (h && (u[i].module = adopt(j, w[i].key, w[i].hex, h, err, errsize))) {
                src_add(j, u[i].module, w[i].fh, u[i].cflags ? u[i].cflags : "", u[i].source ? u[i].source : "",
                        u[i].len);
                u[i].compile_ms = ms;
                trace(j, "miss %s, compiled in %.1f ms", w[i].hex, ms);
                done++;
                if (progress) progress(progress_arg, done, ntodo);
            } else {
                failed = 1;
            }
        }
        if (failed) {
            /* the first failure's message stands; the others are stopped */
            for (int a = 0; a < active; a++) {
                job_abandon(act[a]);
                idle[nidle++] = act[a];
            }
            active = 0;
        }
    }
out:
    if (!failed)
        for (int i = 0; i < n; i++)
            if (w[i].same >= 0) u[i].module = u[w[i].same].module;
    free(w);
    free(todo);
    free(slots);
    free(act);
    free(idle);
    free(cs);
    return failed ? -1 : 0;
}

int jit_load_many(Jit *j, JitUnit *u, int n, int jobs, JitProgress progress, void *progress_arg, char *err,
                  size_t errsize)
{
    return load_many(j, u, n, jobs, true, progress, progress_arg, err, errsize);
}

int jit_find_many(Jit *j, JitUnit *u, int n, char *err, size_t errsize)
{
    return load_many(j, u, n, 1, false, NULL, NULL, err, errsize);
}

JitModule *jit_module_by_key(Jit *j, const uint8_t key[KEY_BYTES])
{
    if (!j || !ensure_identity(j, NULL, 0)) return NULL;
    JitModule *m = mem_find(j, key);
    if (m) return m;
    ensure_dir(j);
    char hex[2 * KEY_BYTES + 1];
    to_hex(key, KEY_BYTES, hex);
    void *h = disk_find(j, hex, key);
    return h ? adopt(j, key, hex, h, NULL, 0) : NULL;
}

void jit_module_key_bytes(const JitModule *m, uint8_t key[KEY_BYTES]) { memcpy(key, m->key, KEY_BYTES); }

int jit_key_of(Jit *j, const char *tag, const void *data, size_t n, uint8_t key[KEY_BYTES], char *err,
               size_t errsize)
{
    if (!j || !ensure_identity(j, err, errsize)) return -1;
    JitSha256 s = j->prefix;
    put_str(&s, tag);
    put_field(&s, data, n);
    jit_sha256_final(&s, key);
    return 0;
}

void *jit_sym(JitModule *m, const char *name)
{
    return m && name ? dlsym(m->handle, name) : NULL;
}

const char *jit_module_key(const JitModule *m)
{
    return m ? m->hex : NULL;
}

/* ------------------------------------------------------------ blobs
 *
 * Other compiled forms (a GPU backend's binaries) in the same directory,
 * under the same rules: <key hex>.<kind>, the payload then the trailer
 * (key, content hash, length), written under a temporary name and renamed
 * into place, checked before use. */

void *jit_blob_load(Jit *j, const char *kind, const uint8_t key[32], size_t *n)
{
    if (!j) return NULL;
    ensure_dir(j);
    if (j->dirfd < 0) return NULL;
    char hex[2 * KEY_BYTES + 1], name[96];
    to_hex(key, KEY_BYTES, hex);
    snprintf(name, sizeof name, "%s.%s", hex, kind);
    const char *why = NULL;
    int fd = open_cached(j->dirfd, name, O_RDONLY, &why);
    struct stat st;
    uint8_t *b = NULL;
    if (fd < 0) {}
    else if (fstat(fd, &st)) why = strerror(errno);
    else if ((why = not_ours(&st))) {}
    else if (!(b = read_exact(fd, (size_t)st.st_size))) why = "changed while read";
    else why = check_entry(b, (size_t)st.st_size, key);
    if (fd >= 0 && !why) touch_entry(j, fd);
    if (fd >= 0) close(fd);
    if (fd < 0 && !why) return NULL;   /* none */
    if (why) {
        trace(j, "dropping %s: %s", name, why);
        unlinkat(j->dirfd, name, 0);
        free(b);
        return NULL;
    }
    trace(j, "disk hit %s", name);
    *n = (size_t)st.st_size - TRAILER_BYTES;
    return b;
}

void jit_blob_store(Jit *j, const char *kind, const uint8_t key[32], const void *data, size_t n)
{
    if (!j || !data || !n) return;
    ensure_dir(j);
    if (j->dirfd < 0) return;
    char hex[2 * KEY_BYTES + 1], name[96], base[32], part[64];
    to_hex(key, KEY_BYTES, hex);
    snprintf(name, sizeof name, "%s.%s", hex, kind);
    uint8_t t[TRAILER_BYTES];
    make_trailer(t, key, data, n);
    int fd = create_unique(j, j->dirfd, ".part", base);
    snprintf(part, sizeof part, "%s.part", base);
    bool ok = fd >= 0 && write_all(fd, data, n) && write_all(fd, t, sizeof t);
    if (fd >= 0) close(fd);
    if (ok && renameat(j->dirfd, part, j->dirfd, name) == 0) {
        trace(j, "stored %s", name);
        evict(j);
        return;
    }
    trace(j, "could not store %s", name);
    if (fd >= 0) unlinkat(j->dirfd, part, 0);
}

/* Tests of run-time compilation and the kernel cache (src/runtime/jit*.c).
 * Every test works in a temporary directory of its own, never in the
 * user's real cache.
 * SPDX-License-Identifier: BSD-3-Clause */
#define _GNU_SOURCE
#include "harness.h"
#include "runtime/jit.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char SRC_F[] = "int f(int x) { return x + 1; }\n";

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* ------------------------------------------------------------ helpers */

static void make_tmp(char *out, size_t n)
{
    snprintf(out, n, "/tmp/axle-test-jit-XXXXXX");
    if (!mkdtemp(out)) {
        perror("mkdtemp");
        out[0] = 0;
    }
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)ftw;
    if (flag == FTW_DP) rmdir(path);
    else unlink(path);
    return 0;
}

static void rm_rf(const char *path)
{
    if (path[0]) nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Names in dir: how many, and how many start with prefix. */
static int count_files(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (!prefix || !strncmp(e->d_name, prefix, strlen(prefix))) n++;
    }
    closedir(d);
    return n;
}

/* Cache entries (KEY.so) in dir; the compiler's identity file cc-*.id
 * lies beside them. */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len > 3 && !strcmp(e->d_name + len - 3, ".so")) n++;
    }
    closedir(d);
    return n;
}

static Jit *new_jit(const char *cache_dir, bool no_disk)
{
    JitOptions o = {.cache_dir = cache_dir, .no_disk_cache = no_disk, .trace = true,
                    .version = "test-1"};
    return jit_new(&o);
}

/* Loads SRC_F and checks f(41) == 42.  Returns the module or NULL. */
static JitModule *load_f(Jit *j, bool *from_cache, double *ms)
{
    char err[1024];
    JitModule *m = jit_load(j, SRC_F, strlen(SRC_F), err, sizeof err, from_cache, ms);
    CHECKF(m, "%s", err);
    if (!m) return NULL;
    int (*f)(int) = (int (*)(int))jit_sym(m, "f");
    CHECK(f);
    if (f) CHECK_EQ_I(f(41), 42);
    return m;
}

static void entry_path(char *out, size_t n, const char *dir, const JitModule *m)
{
    snprintf(out, n, "%s/%s.so", dir, jit_module_key(m));
}

/* ------------------------------------------------------------ SHA-256 */

static void hex(const uint8_t *b, char *out)
{
    for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", b[i]);
}

static void sha_with(const void *m, size_t n, uint8_t d[32], bool portable)
{
    JitSha256 s;
    jit_sha256_init(&s);
    s.portable = portable;
    jit_sha256_update(&s, m, n);
    jit_sha256_final(&s, d);
}

/* Both implementations (the portable one, and the SHA extensions where the
 * CPU has them): the standard's vectors, splits, and equal digests of the
 * same random data. */
TEST(jit_sha256_vectors)
{
    /* FIPS 180-4 examples (NIST CSRC "SHA256.pdf", "SHA2_Additional") */
    static const struct { const char *msg, *digest; } v[] = {
        {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
        {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
        {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
        {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
         "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
    };
    fprintf(stderr, "  jit: SHA-256 with the CPU's SHA instructions: %s\n", jit_sha256_accelerated() ? "yes" : "no");
    for (int portable = 0; portable < 2; portable++) {
        char h[65];
        uint8_t d[32];
        for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
            sha_with(v[i].msg, strlen(v[i].msg), d, portable);
            hex(d, h);
            CHECKF(!strcmp(h, v[i].digest), "sha256(\"%s\") = %s (portable %d)", v[i].msg, h, portable);
        }
        /* One million 'a', fed in uneven pieces to exercise the buffering. */
        static char a[1000];
        memset(a, 'a', sizeof a);
        JitSha256 s;
        jit_sha256_init(&s);
        s.portable = portable;
        size_t left = 1000000, step = 1;
        while (left) {
            size_t k = step < left ? step : left;
            k = k < sizeof a ? k : sizeof a;
            jit_sha256_update(&s, a, k);
            left -= k;
            step = step * 7 % 997 + 1;
        }
        jit_sha256_final(&s, d);
        hex(d, h);
        CHECKF(!strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"),
               "sha256(a x 1e6) = %s (portable %d)", h, portable);
        /* Every split of a message near the block boundaries hashes alike. */
        char msg[200];
        for (size_t i = 0; i < sizeof msg; i++) msg[i] = (char)(i * 31 + 7);
        for (size_t n = 50; n < 140; n++) {
            uint8_t whole[32];
            sha_with(msg, n, whole, portable);
            for (size_t cut = 0; cut <= n; cut += 13) {
                jit_sha256_init(&s);
                s.portable = portable;
                jit_sha256_update(&s, msg, cut);
                jit_sha256_update(&s, msg + cut, n - cut);
                jit_sha256_final(&s, d);
                CHECK(!memcmp(d, whole, 32));
            }
        }
    }
    /* random data of every length up to 1000 bytes, and 1 MiB */
    size_t big = (size_t)1 << 20;
    unsigned char *r = malloc(big);
    REQUIRE(r);
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < big; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        r[i] = (unsigned char)x;
    }
    int differ = 0;
    for (size_t n = 0; n <= 1000; n++) {
        uint8_t a1[32], a2[32];
        sha_with(r + n % 7, n, a1, false);
        sha_with(r + n % 7, n, a2, true);
        differ += memcmp(a1, a2, 32) != 0;
    }
    uint8_t b1[32], b2[32];
    sha_with(r, big, b1, false);
    sha_with(r, big, b2, true);
    CHECK(!memcmp(b1, b2, 32));
    CHECK_EQ_I(differ, 0);
    free(r);
}

/* ------------------------------------------------------------ caching */

TEST(jit_compile_memory_and_disk)
{
    char tmp[PATH_MAX], cache[PATH_MAX + 32];
    make_tmp(tmp, sizeof tmp);
    REQUIRE(tmp[0]);
    snprintf(cache, sizeof cache, "%s/sub/axle", tmp);

    Jit *j = new_jit(cache, false);
    REQUIRE(j);
    const char *id = jit_compiler_id(j);
    CHECK(id && id[0]);
    fprintf(stderr, "  jit: compiler: %s\n", id ? id : "(none)");

    bool hit = true;
    double ms = -1;
    JitModule *m = load_f(j, &hit, &ms);
    CHECK(!hit);
    CHECK(ms > 0);
    fprintf(stderr, "  jit: cold compile of a one-line source: %.1f ms\n", ms);

    /* The directory was made private (mkdir -p, mode 0700). */
    struct stat st;
    REQUIRE(stat(cache, &st) == 0);
    CHECK(S_ISDIR(st.st_mode));
    CHECKF((st.st_mode & 0777) == 0700, "mode %o", (unsigned)(st.st_mode & 0777));
    CHECK(jit_cache_dir(j) != NULL);

    /* Same source again: the same module, from memory. */
    double t0 = now_ms();
    bool hit2 = false;
    char err[256];
    JitModule *m2 = jit_load(j, SRC_F, strlen(SRC_F), err, sizeof err, &hit2, &ms);
    double dt = now_ms() - t0;
    CHECK(m2 == m);
    CHECK(hit2);
    CHECK(ms == 0);
    fprintf(stderr, "  jit: memory hit: %.4f ms\n", dt);

    /* One entry and no temporary files left behind. */
    char path[PATH_MAX * 2];
    if (m) {
        entry_path(path, sizeof path, cache, m);
        CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077) == 0);
    }
    CHECK_EQ_I(count_entries(cache), 1);
    CHECK_EQ_I(count_files(cache, "cc-"), 1);   /* the compiler's identity */
    CHECK_EQ_I(count_files(cache, "sweep.stamp"), 1);   /* the stale-file sweep's time */
    CHECK_EQ_I(count_files(cache, NULL), 3);
    CHECK_EQ_I(count_files(cache, "tmp-"), 0);

    /* A new Jit on the same directory loads from disk. */
    Jit *j2 = new_jit(cache, false);
    REQUIRE(j2);
    jit_compiler_id(j2);   /* time the load alone, not `cc --version` */
    t0 = now_ms();
    JitModule *m3 = load_f(j2, &hit, &ms);
    dt = now_ms() - t0;
    CHECK(hit);
    CHECK(ms == 0);
    fprintf(stderr, "  jit: disk hit: %.3f ms\n", dt);
    if (m && m3) CHECK(!strcmp(jit_module_key(m), jit_module_key(m3)));
    CHECK_EQ_I(count_files(cache, "tmp-"), 0);

    /* Both loaded objects stay usable while both Jits live. */
    if (m && m3) {
        int (*f1)(int) = (int (*)(int))jit_sym(m, "f");
        int (*f3)(int) = (int (*)(int))jit_sym(m3, "f");
        CHECK(f1 && f3 && f1(1) == 2 && f3(2) == 3);
        CHECK(jit_sym(m, "no_such_symbol") == NULL);
    }
    jit_free(j);
    jit_free(j2);
    rm_rf(tmp);
}

TEST(jit_key_covers_inputs)
{
    char tmp[PATH_MAX];
    make_tmp(tmp, sizeof tmp);
    REQUIRE(tmp[0]);
    char err[1024];
    JitOptions o = {.cache_dir = tmp, .version = "v1"};
    Jit *a = jit_new(&o);
    o.version = "v2";
    Jit *b = jit_new(&o);
    o.version = "v1";
    o.cflags = "-O1 -fPIC -shared -w";
    Jit *c = jit_new(&o);
    REQUIRE(a && b && c);
    static const char other[] = "int f(int x) { return x + 2; }\n";
    JitModule *ma = jit_load(a, SRC_F, strlen(SRC_F), err, sizeof err, NULL, NULL);
    CHECKF(ma, "%s", err);
    JitModule *ma2 = jit_load(a, other, strlen(other), err, sizeof err, NULL, NULL);
    CHECKF(ma2, "%s", err);
    JitModule *mb = jit_load(b, SRC_F, strlen(SRC_F), err, sizeof err, NULL, NULL);
    CHECKF(mb, "%s", err);
    JitModule *mc = jit_load(c, SRC_F, strlen(SRC_F), err, sizeof err, NULL, NULL);
    CHECKF(mc, "%s", err);
    if (ma && ma2 && mb && mc) {
        const char *k[4] = {jit_module_key(ma), jit_module_key(ma2), jit_module_key(mb),
                            jit_module_key(mc)};
        for (int x = 0; x < 4; x++)
            for (int y = x + 1; y < 4; y++) CHECKF(strcmp(k[x], k[y]), "keys %d and %d", x, y);
        int (*g)(int) = (int (*)(int))jit_sym(ma2, "f");
        CHECK(g && g(1) == 3);
    }
    CHECK_EQ_I(count_entries(tmp), 4);
    CHECK_EQ_I(count_files(tmp, "cc-"), 1);   /* one compiler, one identity */
    CHECK_EQ_I(count_files(tmp, NULL), 6);   /* and sweep.stamp */
    jit_free(a);
    jit_free(b);
    jit_free(c);
    rm_rf(tmp);
}

/* Corruptions of an entry; each must be rejected, rebuilt and then hit. */
enum { TRUNCATE, FLIP_BODY, FLIP_KEY, APPEND, EMPTY, MODE_0666, SYMLINK, FOREIGN, NKINDS };
static const char *kind_name[] = {"truncate", "flip a body byte", "flip a key byte",
                                  "append garbage", "empty", "mode 0666", "symlink",
                                  "owned by another user"};

static bool corrupt(const char *path, const char *tmp, int kind)
{
    struct stat st;
    if (stat(path, &st)) return false;
    switch (kind) {
    case TRUNCATE: return truncate(path, st.st_size / 2) == 0;
    case EMPTY: return truncate(path, 0) == 0;
    case FLIP_BODY:
    case FLIP_KEY: {
        int fd = open(path, O_RDWR);
        if (fd < 0) return false;
        /* the key is the first 32 bytes of the 88-byte trailer */
        off_t at = kind == FLIP_BODY ? st.st_size / 3 : st.st_size - 88 + 5;
        unsigned char c;
        bool ok = pread(fd, &c, 1, at) == 1;
        c ^= 0x40;
        ok = ok && pwrite(fd, &c, 1, at) == 1;
        close(fd);
        return ok;
    }
    case APPEND: {
        FILE *f = fopen(path, "ab");
        if (!f) return false;
        fputs("garbage after the trailer", f);
        return fclose(f) == 0;
    }
    case MODE_0666: return chmod(path, 0666) == 0;
    case SYMLINK: {
        /* A valid entry, but reached through a link: refused anyway. */
        char moved[PATH_MAX + 16];
        snprintf(moved, sizeof moved, "%s/elsewhere.so", tmp);
        return rename(path, moved) == 0 && symlink(moved, path) == 0;
    }
    case FOREIGN: return chown(path, 65534, 65534) == 0;
    }
    return false;
}

TEST(jit_corrupt_entry_rebuilt)
{
    for (int kind = 0; kind < NKINDS; kind++) {
        if (kind == FOREIGN && geteuid() != 0) continue;   /* needs chown */
        char tmp[PATH_MAX], cache[PATH_MAX + 16], path[PATH_MAX * 2];
        make_tmp(tmp, sizeof tmp);
        REQUIRE(tmp[0]);
        snprintf(cache, sizeof cache, "%s/c", tmp);
        fprintf(stderr, "  jit: corruption: %s\n", kind_name[kind]);

        Jit *a = new_jit(cache, false);
        REQUIRE(a);
        bool hit;
        JitModule *m = load_f(a, &hit, NULL);
        REQUIRE(m);
        entry_path(path, sizeof path, cache, m);
        jit_free(a);
        CHECKF(corrupt(path, tmp, kind), "could not corrupt (%s)", kind_name[kind]);

        Jit *b = new_jit(cache, false);
        REQUIRE(b);
        hit = true;
        CHECK(load_f(b, &hit, NULL));
        CHECKF(!hit, "a corrupt entry was used (%s)", kind_name[kind]);
        jit_free(b);

        /* The rebuilt entry is good: a hit again. */
        struct stat st;
        CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode));
        Jit *c = new_jit(cache, false);
        REQUIRE(c);
        CHECK(load_f(c, &hit, NULL));
        CHECKF(hit, "the rebuilt entry was not used (%s)", kind_name[kind]);
        jit_free(c);
        CHECK_EQ_I(count_files(cache, "tmp-"), 0);
        rm_rf(tmp);
    }
}

/* A cache directory others may write is not used at all. */
TEST(jit_refuses_unsafe_dir)
{
    for (int variant = 0; variant < 2; variant++) {
        if (variant == 1 && geteuid() != 0) continue;   /* chown needs root */
        char tmp[PATH_MAX], cache[PATH_MAX + 16];
        make_tmp(tmp, sizeof tmp);
        REQUIRE(tmp[0]);
        snprintf(cache, sizeof cache, "%s/open", tmp);
        REQUIRE(mkdir(cache, 0700) == 0);
        if (variant == 0) REQUIRE(chmod(cache, 0777) == 0);
        else REQUIRE(chown(cache, 65534, 65534) == 0);
        for (int round = 0; round < 2; round++) {
            Jit *j = new_jit(cache, false);
            REQUIRE(j);
            bool hit = true;
            CHECK(load_f(j, &hit, NULL));
            CHECK(!hit);   /* nothing was stored, so never a disk hit */
            CHECK(jit_cache_dir(j) == NULL);
            jit_free(j);
        }
        CHECK_EQ_I(count_files(cache, NULL), 0);
        rm_rf(tmp);
    }
}

TEST(jit_syntax_error)
{
    char tmp[PATH_MAX];
    make_tmp(tmp, sizeof tmp);
    REQUIRE(tmp[0]);
    Jit *j = new_jit(tmp, false);
    REQUIRE(j);
    static const char bad[] = "int f(int x) { return x + ; }\n";
    char err[2048];
    bool hit = true;
    JitModule *m = jit_load(j, bad, strlen(bad), err, sizeof err, &hit, NULL);
    CHECK(m == NULL);
    CHECK(!hit);
    fprintf(stderr, "  jit: syntax error message: %s\n", err);
    CHECK(strstr(err, "the C compiler 'cc' failed:"));
    CHECK(strstr(err, "error"));
    CHECK_EQ_I(count_entries(tmp), 0);   /* nothing stored, nothing left */
    CHECK_EQ_I(count_files(tmp, "tmp-"), 0);
    /* The Jit is still usable, and a tiny err buffer is not overrun. */
    char small[8];
    CHECK(jit_load(j, bad, strlen(bad), small, sizeof small, NULL, NULL) == NULL);
    CHECK(strlen(small) == sizeof small - 1);
    CHECK(load_f(j, NULL, NULL));
    jit_free(j);
    rm_rf(tmp);
}

TEST(jit_missing_compiler)
{
    static const char *ccs[] = {"/nonexistent/cc", "axle-no-such-compiler-xyz"};
    for (int i = 0; i < 2; i++) {
        JitOptions o = {.cc = ccs[i], .no_disk_cache = true};
        Jit *j = jit_new(&o);
        REQUIRE(j);
        CHECK(jit_compiler_id(j) == NULL);
        char err[512];
        JitModule *m = jit_load(j, SRC_F, strlen(SRC_F), err, sizeof err, NULL, NULL);
        CHECK(m == NULL);
        fprintf(stderr, "  jit: missing compiler message: %s\n", err);
        CHECK(strstr(err, "not found"));
        CHECK(strstr(err, ccs[i]));
        CHECK(strstr(err, "AXLE_CC"));
        jit_free(j);
    }
    jit_free(NULL);
}

/* A compiler that runs but fails without a word; a compiler command with
 * arguments of its own. */
TEST(jit_compiler_command)
{
    JitOptions o = {.cc = "false", .no_disk_cache = true};
    Jit *j = jit_new(&o);
    REQUIRE(j);
    char err[512];
    CHECK(jit_load(j, SRC_F, strlen(SRC_F), err, sizeof err, NULL, NULL) == NULL);
    fprintf(stderr, "  jit: failing compiler message: %s\n", err);
    CHECK(strstr(err, "the C compiler 'false' failed"));
    jit_free(j);

    static const char src[] = "int f(int x) { return x + BUMP; }\n";
    o.cc = "  cc   -DBUMP=1 ";
    j = jit_new(&o);
    REQUIRE(j);
    JitModule *m = jit_load(j, src, strlen(src), err, sizeof err, NULL, NULL);
    CHECKF(m, "%s", err);
    int (*f)(int) = m ? (int (*)(int))jit_sym(m, "f") : NULL;
    CHECK(f && f(41) == 42);
    jit_free(j);
}

/* The lean link (GCC: -nostdlib ... -lgcc): the object still reaches the
 * C library (bound at load time to the process's own) and libm (a
 * dependency of its own), and its key differs from the ordinary link's. */
TEST(jit_lean_link)
{
    static const char src[] =
        "typedef __SIZE_TYPE__ size_t;\n"
        "extern size_t strlen(const char *);\n"
        "extern int sched_yield(void);\n"
        "extern double cos(double);\n"
        "extern double copysign(double, double);\n"
        "long f(const char *s, double x) { sched_yield(); return (long)strlen(s) + (long)(1000 * cos(x)); }\n"
        "double g(double x, double y) { return copysign(x, y); }\n"
        "unsigned long h(unsigned long x, unsigned long y) { return x / y + (unsigned long)__builtin_popcountl(x); }\n";
    char tmp[PATH_MAX];
    make_tmp(tmp, sizeof tmp);
    REQUIRE(tmp[0]);
    char err[1024];
    JitOptions o = {.cache_dir = tmp, .version = "v1", .lean_link = true};
    Jit *lean = jit_new(&o);
    o.lean_link = false;
    Jit *plain = jit_new(&o);
    REQUIRE(lean && plain);
    JitModule *a = jit_load(lean, src, strlen(src), err, sizeof err, NULL, NULL);
    CHECKF(a, "%s", err);
    JitModule *b = jit_load(plain, src, strlen(src), err, sizeof err, NULL, NULL);
    CHECKF(b, "%s", err);
    JitModule *ms[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        if (!ms[k]) continue;
        long (*f)(const char *, double) = (long (*)(const char *, double))jit_sym(ms[k], "f");
        double (*g)(double, double) = (double (*)(double, double))jit_sym(ms[k], "g");
        unsigned long (*h)(unsigned long, unsigned long) =
            (unsigned long (*)(unsigned long, unsigned long))jit_sym(ms[k], "h");
        REQUIRE(f && g && h);
        volatile double zero = 0;
        CHECK_EQ_I(f("abcde", zero), 1005);
        CHECK(g(2.0, -1.0) == -2.0);
        volatile unsigned long x = 255, y = 5;
        CHECK_EQ_I(h(x, y), 51 + 8);
    }
    if (a && b) {
        bool gcc = jit_is_gcc(lean);
        const char *id = jit_compiler_id(lean);
        CHECK(gcc == (id && !strstr(id, "clang")));
        /* only GCC links lean: with another compiler the keys agree */
        CHECKF(gcc == (strcmp(jit_module_key(a), jit_module_key(b)) != 0), "gcc %d, keys %s %s", gcc,
               jit_module_key(a), jit_module_key(b));
    }
    jit_free(lean);
    jit_free(plain);
    rm_rf(tmp);
}

/* Compiles, but cannot be loaded (RTLD_NOW finds an undefined symbol):
 * an error, and nothing stored. */
TEST(jit_unloadable_object)
{
    char tmp[PATH_MAX];
    make_tmp(tmp, sizeof tmp);
    REQUIRE(tmp[0]);
    Jit *j = new_jit(tmp, false);
    REQUIRE(j);
    static const char src[] = "int axle_no_such_function(int);\n"
                              "int f(int x) { return axle_no_such_function(x); }\n";
    char err[512];
    CHECK(jit_load(j, src, strlen(src), err, sizeof err, NULL, NULL) == NULL);
    fprintf(stderr, "  jit: unloadable object message: %s\n", err);
    CHECK(strstr(err, "could not load") && strstr(err, "axle_no_such_function"));
    CHECK_EQ_I(count_entries(tmp), 0);
    CHECK_EQ_I(count_files(tmp, "tmp-"), 0);
    jit_free(j);
    rm_rf(tmp);
}

/* Enough modules to make the memory cache grow; each is found again. */
TEST(jit_many_modules)
{
    char tmp[PATH_MAX];
    make_tmp(tmp, sizeof tmp);
    REQUIRE(tmp[0]);
    JitOptions o = {.cache_dir = tmp, .cflags = "-O0 -fPIC -shared -w"};
    Jit *j = jit_new(&o);
    REQUIRE(j);
    enum { N = 20 };
    JitModule *ms[N];
    char src[N][64], err[512];
    for (int i = 0; i < N; i++) {
        snprintf(src[i], sizeof src[i], "int f(int x) { return x * %d; }\n", i);
        ms[i] = jit_load(j, src[i], strlen(src[i]), err, sizeof err, NULL, NULL);
        CHECKF(ms[i], "%s", err);
    }
    for (int i = 0; i < N; i++) {
        bool hit = false;
        CHECK(jit_load(j, src[i], strlen(src[i]), err, sizeof err, &hit, NULL) == ms[i]);
        CHECK(hit);
        int (*f)(int) = ms[i] ? (int (*)(int))jit_sym(ms[i], "f") : NULL;
        CHECK(f && f(3) == 3 * i);
    }
    CHECK_EQ_I(count_entries(tmp), N);
    jit_free(j);
    rm_rf(tmp);
}

static void count_progress(void *arg, int done, int total)
{
    int *c = arg;
    c[0]++;
    c[1] = done;
    c[2] = total;
}

/* jit_load_many: the units compiled by several processes at once, a
 * source given twice compiled once, everything from the caches the second
 * time; a failing unit fails the call, stops the others and leaves no
 * file behind. */
TEST(jit_load_many_parallel)
{
    char tmp[PATH_MAX];
    make_tmp(tmp, sizeof tmp);
    REQUIRE(tmp[0]);
    JitOptions o = {.cache_dir = tmp, .cflags = "-O0 -fPIC -shared -w"};
    Jit *j = jit_new(&o);
    REQUIRE(j);
    enum { N = 7 };
    char src[N][64], err[1024];
    JitUnit u[N];
    memset(u, 0, sizeof u);
    for (int i = 0; i < N; i++) {
        /* unit 6 is unit 2 again */
        snprintf(src[i], sizeof src[i], "int g(int x) { return x + %d; }\n", i == 6 ? 2 : i);
        u[i].source = src[i];
        u[i].len = strlen(src[i]);
    }
    int pc[3] = {0};
    CHECKF(jit_load_many(j, u, N, 3, count_progress, pc, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < N; i++) {
        int (*g)(int) = u[i].module ? (int (*)(int))jit_sym(u[i].module, "g") : NULL;
        CHECK(g && g(10) == 10 + (i == 6 ? 2 : i));
        CHECK(i == 6 || !u[i].from_cache);
    }
    CHECK(u[6].module == u[2].module);
    CHECK_EQ_I(count_entries(tmp), N - 1);
    CHECK_EQ_I(pc[0], N);        /* 0 of 6, then 6 compiles */
    CHECK_EQ_I(pc[1], N - 1);
    CHECK_EQ_I(pc[2], N - 1);
    /* again, from the memory cache */
    JitModule *first[N];
    for (int i = 0; i < N; i++) first[i] = u[i].module;
    pc[0] = 0;
    CHECKF(jit_load_many(j, u, N, 3, count_progress, pc, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < N; i++) CHECK(u[i].from_cache && u[i].module == first[i]);
    CHECK_EQ_I(pc[0], 0);
    jit_free(j);
    /* a new Jit: from the disk cache */
    REQUIRE((j = jit_new(&o)));
    CHECKF(jit_load_many(j, u, N, 2, NULL, NULL, err, sizeof err) == 0, "%s", err);
    for (int i = 0; i < N; i++) CHECK(u[i].from_cache && u[i].module);
    /* one bad unit among new ones */
    char more[N][64];
    for (int i = 0; i < N; i++) {
        snprintf(more[i], sizeof more[i], i == 3 ? "int h(int x) { return x +; }\n" : "int h(int x) { return x * %d; }\n", i);
        u[i].source = more[i];
        u[i].len = strlen(more[i]);
    }
    CHECK(jit_load_many(j, u, N, 3, NULL, NULL, err, sizeof err) == -1);
    CHECKF(strstr(err, "failed"), "%s", err);
    /* no source or partial object left behind */
    CHECK_EQ_I(count_files(tmp, "tmp-") + count_files(tmp, "axle-"), 0);
    DIR *d = opendir(tmp);
    REQUIRE(d);
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        CHECKF(!(len > 2 && !strcmp(e->d_name + len - 2, ".c")) && !strstr(e->d_name, ".part"), "left: %s",
               e->d_name);
    }
    closedir(d);
    jit_free(j);
    rm_rf(tmp);
}

TEST(jit_no_disk_cache)
{
    char tmp[PATH_MAX], cache[PATH_MAX + 16], tmpdir[PATH_MAX + 16];
    make_tmp(tmp, sizeof tmp);
    REQUIRE(tmp[0]);
    snprintf(cache, sizeof cache, "%s/never", tmp);
    snprintf(tmpdir, sizeof tmpdir, "%s/t", tmp);
    REQUIRE(mkdir(tmpdir, 0700) == 0);
    /* The private build directory goes under TMPDIR: check it is removed. */
    char *old = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    setenv("TMPDIR", tmpdir, 1);
    Jit *j = new_jit(cache, true);
    REQUIRE(j);
    CHECK(jit_cache_dir(j) == NULL);
    bool hit = true;
    JitModule *m = load_f(j, &hit, NULL);
    CHECK(!hit);
    CHECK(load_f(j, &hit, NULL) == m);
    CHECK(hit);
    struct stat st;
    CHECK(stat(cache, &st) != 0);   /* never created */
    CHECK_EQ_I(count_files(tmpdir, "axle-"), 0);
    jit_free(j);
    if (old) setenv("TMPDIR", old, 1);
    else unsetenv("TMPDIR");
    free(old);
    rm_rf(tmp);
}

TEST(jit_default_dir_is_xdg)
{
    char tmp[PATH_MAX], want[PATH_MAX + 16];
    make_tmp(tmp, sizeof tmp);
    REQUIRE(tmp[0]);
    char *old = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME")) : NULL;
    setenv("XDG_CACHE_HOME", tmp, 1);
    Jit *j = jit_new(NULL);
    REQUIRE(j);
    snprintf(want, sizeof want, "%s/axle", tmp);
    char *real = realpath(tmp, NULL);
    char want_real[PATH_MAX + 16];
    snprintf(want_real, sizeof want_real, "%s/axle", real ? real : tmp);
    const char *dir = jit_cache_dir(j);
    CHECKF(dir && !strcmp(dir, want_real), "%s vs %s", dir ? dir : "(null)", want_real);
    struct stat st;
    CHECK(stat(want, &st) == 0 && (st.st_mode & 0777) == 0700);
    jit_free(j);

    /* Without XDG_CACHE_HOME: $HOME/.cache/axle. */
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", tmp, 1);
    j = jit_new(NULL);
    REQUIRE(j);
    snprintf(want_real, sizeof want_real, "%s/.cache/axle", real ? real : tmp);
    dir = jit_cache_dir(j);
    CHECKF(dir && !strcmp(dir, want_real), "%s vs %s", dir ? dir : "(null)", want_real);
    jit_free(j);
    if (old_home) setenv("HOME", old_home, 1);
    else unsetenv("HOME");
    free(old_home);

    free(real);
    if (old) setenv("XDG_CACHE_HOME", old, 1);
    else unsetenv("XDG_CACHE_HOME");
    free(old);
    rm_rf(tmp);
}

/* Several processes filling one empty cache at once: each gets a working
 * module, and exactly one entry remains. */
TEST(jit_processes_share_cache)
{
    char tmp[PATH_MAX];
    make_tmp(tmp, sizeof tmp);
    REQUIRE(tmp[0]);
    enum { N = 4 };
    pid_t pids[N];
    for (int i = 0; i < N; i++) {
        pids[i] = fork();
        REQUIRE(pids[i] >= 0);
        if (pids[i] == 0) {
            JitOptions o = {.cache_dir = tmp, .version = "test-1"};
            Jit *j = jit_new(&o);
            char err[512];
            JitModule *m = j ? jit_load(j, SRC_F, strlen(SRC_F), err, sizeof err, NULL, NULL) : NULL;
            int (*f)(int) = m ? (int (*)(int))jit_sym(m, "f") : NULL;
            int ok = f && f(1) == 2;
            jit_free(j);
            _exit(ok ? 0 : 1);
        }
    }
    for (int i = 0; i < N; i++) {
        int st = 0;
        waitpid(pids[i], &st, 0);
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    CHECK_EQ_I(count_entries(tmp), 1);
    CHECK_EQ_I(count_files(tmp, "cc-"), 1);
    CHECK_EQ_I(count_files(tmp, "tmp-"), 0);
    rm_rf(tmp);
}

/* A ~50-line source like the backend's: the cold compile time is printed
 * as information. */
TEST(jit_cold_compile_time)
{
    static const char src[] =
        "#include <math.h>\n"
        "#include <stdint.h>\n"
        "typedef struct { const float *x, *y; float *out; int64_t n; } Args;\n"
        "static inline float cnd(float d) {\n"
        "    const float a1 = 0.31938153f, a2 = -0.356563782f, a3 = 1.781477937f;\n"
        "    const float a4 = -1.821255978f, a5 = 1.330274429f;\n"
        "    float k = 1.0f / (1.0f + 0.2316419f * fabsf(d));\n"
        "    float w = 0.39894228f * expf(-0.5f * d * d)\n"
        "            * (k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5)))));\n"
        "    return d > 0 ? 1.0f - w : w;\n"
        "}\n"
        "void kernel_map(const Args *a, int64_t start, int64_t end) {\n"
        "    for (int64_t i = start; i < end; i++) {\n"
        "        float s = a->x[i], k = a->y[i];\n"
        "        float d1 = (logf(s / k) + 0.06f) / (0.3f * sqrtf(1.0f));\n"
        "        float d2 = d1 - 0.3f;\n"
        "        a->out[i] = s * cnd(d1) - k * expf(-0.02f) * cnd(d2);\n"
        "    }\n"
        "}\n"
        "double kernel_dot(const Args *a, int64_t start, int64_t end) {\n"
        "    double acc = 0;\n"
        "    for (int64_t i = start; i < end; i++) acc += (double)a->x[i] * a->y[i];\n"
        "    return acc;\n"
        "}\n"
        "void kernel_scan(const Args *a, int64_t start, int64_t end) {\n"
        "    float acc = 0;\n"
        "    for (int64_t i = start; i < end; i++) { acc += a->x[i]; a->out[i] = acc; }\n"
        "}\n"
        "void kernel_stencil(const Args *a, int64_t start, int64_t end) {\n"
        "    int64_t n = a->n;\n"
        "    for (int64_t i = start; i < end; i++) {\n"
        "        float l = a->x[i > 0 ? i - 1 : 0], c = a->x[i];\n"
        "        float r = a->x[i + 1 < n ? i + 1 : n - 1];\n"
        "        a->out[i] = 0.25f * l + 0.5f * c + 0.25f * r;\n"
        "    }\n"
        "}\n"
        "int64_t kernel_filter(const Args *a, int64_t start, int64_t end) {\n"
        "    int64_t k = start;\n"
        "    for (int64_t i = start; i < end; i++)\n"
        "        if (a->x[i] > 0) a->out[k++] = a->x[i];\n"
        "    return k - start;\n"
        "}\n"
        "void kernel_permute(const Args *a, int64_t start, int64_t end) {\n"
        "    for (int64_t i = start; i < end; i++) {\n"
        "        int64_t j = (int64_t)a->y[i];\n"
        "        if (j >= 0 && j < a->n) a->out[j] += a->x[i];\n"
        "    }\n"
        "}\n";
    JitOptions o = {.no_disk_cache = true};
    Jit *j = jit_new(&o);
    REQUIRE(j);
    jit_compiler_id(j);
    char err[1024];
    double ms = 0, t0 = now_ms();
    JitModule *m = jit_load(j, src, strlen(src), err, sizeof err, NULL, &ms);
    double total = now_ms() - t0;
    CHECKF(m, "%s", err);
    fprintf(stderr, "  jit: cold compile of a %d-line source: %.1f ms in the compiler, "
            "%.1f ms in all\n", 50, ms, total);
    if (m) {
        typedef struct { const float *x, *y; float *out; int64_t n; } Args;
        double (*dot)(const Args *, int64_t, int64_t) =
            (double (*)(const Args *, int64_t, int64_t))jit_sym(m, "kernel_dot");
        void (*map)(const Args *, int64_t, int64_t) =
            (void (*)(const Args *, int64_t, int64_t))jit_sym(m, "kernel_map");
        REQUIRE(dot && map);
        float x[4] = {1, 2, 3, 4}, y[4] = {4, 3, 2, 1}, out[4] = {0};
        Args a = {x, y, out, 4};
        CHECK_CLOSE(dot(&a, 0, 4), 20.0, 1e-12);
        map(&a, 0, 4);   /* calls expf/logf: libm is linked */
        CHECK(isfinite(out[0]) && isfinite(out[3]));
    }
    jit_free(j);
}

/* ------------------------------------------------------------ identity */

/* A fake compiler: a script that answers --version with "fakecc VER",
 * counting those calls as lines of count, and hands anything else to cc. */
static bool write_fake_cc(const char *path, const char *count, const char *ver)
{
    char tmp[PATH_MAX + 8];
    snprintf(tmp, sizeof tmp, "%s.new", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return false;
    fprintf(f, "#!/bin/sh\n"
               "if [ \"$1\" = --version ]; then echo x >> '%s'; echo 'fakecc %s'; exit 0; fi\n"
               "exec cc \"$@\"\n", count, ver);
    /* Written in place (not renamed) the second time: an edit keeps the
     * inode, so only size and times tell. */
    bool ok = fclose(f) == 0 && chmod(tmp, 0755) == 0;
    if (!ok) return false;
    if (access(path, F_OK) != 0) return rename(tmp, path) == 0;
    FILE *in = fopen(tmp, "r"), *out = fopen(path, "r+");
    ok = in && out;
    char buf[512];
    size_t n = ok ? fread(buf, 1, sizeof buf, in) : 0;
    ok = ok && fwrite(buf, 1, n, out) == n && ftruncate(fileno(out), (off_t)n) == 0;
    if (in) fclose(in);
    if (out) ok = fclose(out) == 0 && ok;
    unlink(tmp);
    return ok;
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    int n = 0;
    for (int c; (c = fgetc(f)) != EOF;) n += c == '\n';
    fclose(f);
    return n;
}

/* The identity found by a new Jit on cache (NULL: no disk cache) with the
 * fake compiler; whether SRC_F then came from the cache in *hit. */
static bool identity_is(const char *cc, const char *cache, const char *want, bool *hit)
{
    JitOptions o = {.cc = cc, .cache_dir = cache, .no_disk_cache = !cache, .trace = true,
                    .version = "test-1"};
    Jit *j = jit_new(&o);
    if (!j) return false;
    const char *id = jit_compiler_id(j);
    bool ok = id && !strcmp(id, want);
    CHECKF(ok, "identity '%s', expected '%s'", id ? id : "(null)", want);
    if (hit) ok = load_f(j, hit, NULL) && ok;
    jit_free(j);
    return ok;
}

/* The first name starting with prefix in dir, into out. */
static bool find_name(const char *dir, const char *prefix, char *out, size_t n)
{
    DIR *d = opendir(dir);
    if (!d) return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));)
        if (!strncmp(e->d_name, prefix, strlen(prefix))) {
            snprintf(out, n, "%s/%s", dir, e->d_name);
            found = true;
        }
    closedir(d);
    return found;
}

/* `cc --version` runs once per compiler, not once per process: its answer
 * is kept in an identity file, reused while the compiler's file is
 * unchanged, and refused like a bad entry. */
TEST(jit_identity_file)
{
    char tmp[PATH_MAX], cache[PATH_MAX + 16], cc[PATH_MAX + 16], count[PATH_MAX + 16];
    char idpath[PATH_MAX * 2];
    make_tmp(tmp, sizeof tmp);
    REQUIRE(tmp[0]);
    snprintf(cache, sizeof cache, "%s/c", tmp);
    snprintf(cc, sizeof cc, "%s/fakecc", tmp);
    snprintf(count, sizeof count, "%s/count", tmp);
    REQUIRE(write_fake_cc(cc, count, "1.0"));
    bool hit = true;

    /* First Jit: runs --version, compiles, writes the identity file. */
    CHECK(identity_is(cc, cache, "fakecc 1.0", &hit));
    CHECK(!hit);
    CHECK_EQ_I(count_lines(count), 1);
    CHECK_EQ_I(count_files(cache, "cc-"), 1);
    CHECK_EQ_I(count_files(cache, "tmp-"), 0);
    REQUIRE(find_name(cache, "cc-", idpath, sizeof idpath));
    struct stat st;
    CHECK(lstat(idpath, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600);
    FILE *f = fopen(idpath, "r");
    char text[128] = "";
    if (f) {
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = 0;
        fclose(f);
    }
    CHECKF(!strcmp(text, "axle-cc-id-1\nfakecc 1.0\n"), "identity file: '%s'", text);

    /* Second Jit (as a new process would): the file, no --version; the
     * same key, so a disk hit. */
    CHECK(identity_is(cc, cache, "fakecc 1.0", &hit));
    CHECK(hit);
    CHECK_EQ_I(count_lines(count), 1);

    /* An edited compiler (same inode, other size and times): asked again,
     * a new identity and so a new key. */
    REQUIRE(write_fake_cc(cc, count, "2.0-new"));
    CHECK(identity_is(cc, cache, "fakecc 2.0-new", &hit));
    CHECK(!hit);
    CHECK_EQ_I(count_lines(count), 2);
    CHECK_EQ_I(count_files(cache, "cc-"), 2);
    CHECK(identity_is(cc, cache, "fakecc 2.0-new", &hit));
    CHECK(hit);
    CHECK_EQ_I(count_lines(count), 2);

    /* Only its times changed (touch): asked again; the same answer keeps
     * the same key. */
    struct timespec ts[2] = {{.tv_sec = 1000000000}, {.tv_sec = 1000000000}};
    REQUIRE(utimensat(AT_FDCWD, cc, ts, 0) == 0);
    CHECK(identity_is(cc, cache, "fakecc 2.0-new", &hit));
    CHECK(hit);
    CHECK_EQ_I(count_lines(count), 3);
    CHECK_EQ_I(count_files(cache, "cc-"), 3);

    /* A bad identity file for the current compiler is ignored and
     * replaced: writable by others, a symbolic link, malformed, too old. */
    char newest[PATH_MAX * 2] = "";
    {
        /* The current one: the file the last run wrote. */
        DIR *d = opendir(cache);
        REQUIRE(d);
        struct timespec best = {0};
        for (struct dirent *e; (e = readdir(d));) {
            if (strncmp(e->d_name, "cc-", 3)) continue;
            char p[PATH_MAX * 2];
            snprintf(p, sizeof p, "%s/%s", cache, e->d_name);
            if (stat(p, &st) == 0 &&
                (st.st_mtim.tv_sec > best.tv_sec ||
                 (st.st_mtim.tv_sec == best.tv_sec && st.st_mtim.tv_nsec > best.tv_nsec))) {
                best = st.st_mtim;
                snprintf(newest, sizeof newest, "%s", p);
            }
        }
        closedir(d);
    }
    REQUIRE(newest[0]);
    static const char *bad[] = {"mode 0666", "symlink", "malformed", "old"};
    for (int k = 0; k < 4; k++) {
        fprintf(stderr, "  jit: bad identity file: %s\n", bad[k]);
        int before = count_lines(count);
        char evil[PATH_MAX * 2 + 8];
        snprintf(evil, sizeof evil, "%s.evil", tmp);
        f = fopen(k == 1 ? evil : newest, "w");
        REQUIRE(f);
        fputs(k == 2 ? "axle-cc-id-1\nfakecc 6\nmore\n" : "axle-cc-id-1\nfakecc 6.6.6\n", f);
        REQUIRE(fclose(f) == 0);
        if (k == 0) REQUIRE(chmod(newest, 0666) == 0);
        if (k == 1) REQUIRE(unlink(newest) == 0 && symlink(evil, newest) == 0);
        if (k == 3) {
            struct timespec old[2] = {{.tv_sec = time(NULL) - 2 * 24 * 3600},
                                      {.tv_sec = time(NULL) - 2 * 24 * 3600}};
            REQUIRE(utimensat(AT_FDCWD, newest, old, 0) == 0);
        }
        CHECK(identity_is(cc, cache, "fakecc 2.0-new", &hit));
        CHECK(hit);
        CHECK_EQ_I(count_lines(count), before + 1);
        /* Rewritten: now a good file again. */
        CHECK(lstat(newest, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600);
        CHECK(identity_is(cc, cache, "fakecc 2.0-new", NULL));
        CHECK_EQ_I(count_lines(count), before + 1);
        unlink(evil);
    }
    CHECK_EQ_I(count_files(cache, "tmp-"), 0);

    /* Without a disk cache: --version for every Jit, as before. */
    int before = count_lines(count);
    CHECK(identity_is(cc, NULL, "fakecc 2.0-new", NULL));
    CHECK(identity_is(cc, NULL, "fakecc 2.0-new", NULL));
    CHECK_EQ_I(count_lines(count), before + 2);
    rm_rf(tmp);
}

/* ax_cc_command: the compiler and the flags of the context's mode, which
 * compile a C file of one's own into a shared object as the kernels are. */
TEST(cc_command_names_the_compiler_and_the_mode)
{
    CHECK(ax_cc_command(NULL) == NULL);
    ax_options o = {0};
    o.cc = "cc";
    o.cflags = "-DAXLE_TEST_FLAG=1";
    ax_ctx *cx = ax_ctx_new(&o);
    REQUIRE(cx);
    char *c = ax_cc_command(cx);
    REQUIRE(c);
    CHECKF(!strncmp(c, "cc ", 3) && strstr(c, "-O3") && strstr(c, "-DAXLE_TEST_FLAG=1") &&
               strstr(c, "-ffp-contract=off"), "%s", c);
    ax_ctx_free(cx);
    o.fast_math = true;
    cx = ax_ctx_new(&o);
    char *f = cx ? ax_cc_command(cx) : NULL;
    CHECKF(f && !strstr(f, "-ffp-contract=off") && strcmp(c, f), "%s", f ? f : "NULL");
    /* it compiles a file of ours */
    char dir[] = "/tmp/axle-cc-XXXXXX";
    REQUIRE(mkdtemp(dir));
    char src[64], cmd[4096];
    snprintf(src, sizeof src, "%s/x.c", dir);
    FILE *w = fopen(src, "w");
    REQUIRE(w);
    fputs("double twice(double x) { return AXLE_TEST_FLAG * 2 * x; }\n", w);
    fclose(w);
    snprintf(cmd, sizeof cmd, "%s -o %s/x.so %s -lm", c, dir, src);
    CHECKF(system(cmd) == 0, "%s", cmd);
    harness_rm_tree(dir);
    free(c);
    free(f);
    ax_ctx_free(cx);
}

/* Which units drop GCC's masked epilogue copy (cpu/codegen.c UNIT_CFLAGS):
 * a unit calling a maths function does; one whose elements loop across a
 * block's lanes keeps it, maths or not; a plain sum has neither.  The dump
 * of the generated C names each unit's added flags. */
static ax_exp exp_of(ax_exp x, void *env) { (void)env; return ax_exp_(x); }
static ax_exp below_8(ax_exp x, void *env) { (void)env; return ax_lt(x, ax_f32(8)); }
static ax_exp exp_step(ax_exp x, void *env) { (void)env; return ax_add(x, ax_exp_(ax_mul(x, ax_f32(-1)))); }
static ax_exp exp_loop(ax_exp x, void *env) { (void)env; return ax_while(below_8, exp_step, NULL, x); }

static bool unit_has_flag(ax_ctx *cx, ax_acc a, const char *kind)
{
    char *c = ax_dump(cx, a, "c", false), *u = c ? strstr(c, kind) : NULL, *eol = u ? strchr(u, '\n') : NULL;
    CHECKF(u && eol, "no %s unit in the dump: %s", kind, c ? c : ax_error(cx));
    static const char flag[] = "with GCC also --param=vect-epilogues-nomask=0";
    bool has = u && eol && memmem(u, (size_t)(eol - u), flag, sizeof flag - 1);
    free(c);
    return has;
}

TEST(masked_epilogues_dropped_where_they_cost_compile_time)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_CPU;
    ax_ctx *cx = ax_ctx_new(&o);
    REQUIRE(cx);
    int64_t n = 1000;
    ax_array *a = ax_array_new(cx, ax_type_scalar(AX_F32), 1, &n);
    REQUIRE(a);
    ax_acc xs = ax_use(cx, a);
    CHECK(unit_has_flag(cx, ax_map(exp_of, NULL, xs), ", map: "));
    CHECK(!unit_has_flag(cx, ax_map(exp_loop, NULL, xs), ", map: "));
    CHECK(!unit_has_flag(cx, ax_fold_all(ax_fn_add, NULL, ax_f32(0), xs), ", fold: "));
    ax_array_release(a);
    ax_ctx_free(cx);
}

/*
 * Run-time compilation of generated C with a memory and a disk cache
 * (docs/ARCHITECTURE.md, "The pipeline"; the disk cache's safety is
 * jit_disk.c's).  The CPU backend hands jit_load one
 * translation unit per program and looks its kernels up with jit_sym.
 *
 * A Jit belongs to one context and is used by one thread at a time.  Any
 * number of processes may share one cache directory: entries are written
 * to a temporary name and renamed into place, and verified before use.
 *
 * The implementation: jit.c and the files jit_int.h lists.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_JIT_H
#define AX_JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct JitOptions {
    /* The compiler command, split on whitespace ("ccache cc" works).
     * NULL: "cc". */
    const char *cc;
    /* Compiler flags, split on whitespace.  NULL: JIT_DEFAULT_CFLAGS. */
    const char *cflags;
    /* Libraries, after the source on the command line.  NULL: "-lm". */
    const char *libs;
    /* NULL: $XDG_CACHE_HOME/axle, else $HOME/.cache/axle. */
    const char *cache_dir;
    bool no_disk_cache;     /* compile in a private temporary directory */
    bool trace;             /* "axle: cache: ..." lines on stderr */
    const char *version;    /* axle's version, part of the key; NULL: "" */
    double timeout_s;       /* seconds the compiler may run before its process
                               group is killed; <= 0: no limit */
    int64_t size_limit;     /* bytes of entries the directory may hold before
                               the least recently used go; <= 0: no limit */
    /* With GCC (jit_is_gcc), link without the C runtime: -nostdlib, and
     * -lgcc after libs (see jit_compile.c, "Lean link").  For generated code that
     * needs no start files and no libc at link time. */
    bool lean_link;
} JitOptions;

/* -pipe: no temporary assembly file between the compiler and the
 * assembler (to measure: the compile time `AXLE_CACHE=off axle run dotp`
 * prints, with AXLE_CFLAGS set to these flags with and without -pipe). */
#define JIT_DEFAULT_CFLAGS \
    "-O3 -march=native -pipe -fPIC -shared -fno-math-errno -fno-trapping-math -fopenmp-simd -w"
#define JIT_DEFAULT_LIBS "-lm"

typedef struct Jit Jit;
/* A loaded shared object, owned by its Jit (the memory cache): valid until
 * jit_free. */
typedef struct JitModule JitModule;

/* The options are copied.  NULL options: all defaults.  NULL only when
 * memory is lacking; nothing is run or created until the first load. */
Jit *jit_new(const JitOptions *o);
/* dlcloses every module it loaded.  NULL is ignored. */
void jit_free(Jit *j);

/* The module for this source: from the memory cache (no compiler, no file
 * access), else from the disk cache, else compiled (and stored).  On
 * failure NULL, with a message in err (which may be NULL).  from_cache
 * (may be NULL): true on a memory or disk hit.  compile_ms (may be NULL):
 * milliseconds spent in the compiler, 0 on a hit. */
JitModule *jit_load(Jit *j, const char *source, size_t len, char *err, size_t errsize,
                    bool *from_cache, double *compile_ms);
/* One unit of jit_load_many: the source in, the module out. */
typedef struct JitUnit {
    const char *source;
    size_t len;
    const char *cflags;     /* flags added for this unit (part of its key), or NULL */
    JitModule *module;      /* out: NULL until loaded */
    bool from_cache;        /* out: a memory or disk hit (or the same source as
                               an earlier unit of the call) */
    double compile_ms;      /* out: milliseconds its compiler ran, 0 on a hit */
} JitUnit;
/* Called as compiles finish: done of total units compiled (0 of total
 * first, when there is anything to compile). */
typedef void (*JitProgress)(void *arg, int done, int total);
/* jit_load for n units at once: the ones in neither cache are compiled by
 * up to `jobs` compiler processes at once.  0, or -1 with the first
 * failure's message in err (the compilers still running are stopped). */
int jit_load_many(Jit *j, JitUnit *u, int n, int jobs, JitProgress progress, void *progress_arg, char *err,
                  size_t errsize);
/* jit_load_many without compiling: each unit from the memory or the disk
 * cache, or module NULL.  0, or -1 with a message (the compiler's
 * identity, which the key holds, could not be had). */
int jit_find_many(Jit *j, JitUnit *u, int n, char *err, size_t errsize);
/* The module of a key (jit_module_key_bytes of a module loaded before, in
 * this process or another): from the memory cache or the disk cache,
 * never compiled; NULL when neither has it. */
JitModule *jit_module_by_key(Jit *j, const uint8_t key[32]);
void jit_module_key_bytes(const JitModule *m, uint8_t key[32]);
/* A key for other compiled forms (blobs) that depend on everything a
 * module's key does (the compiler, its flags, axle's version, the host):
 * SHA-256 over those, tag and data[0..n).  0, or -1 (with a message) when
 * the compiler's identity cannot be had. */
int jit_key_of(Jit *j, const char *tag, const void *data, size_t n, uint8_t key[32], char *err, size_t errsize);
/* dlsym: the address of a symbol of the module, or NULL. */
void *jit_sym(JitModule *m, const char *name);
/* The module's key, 64 hex digits (also its cache file's name). */
const char *jit_module_key(const JitModule *m);

/* Compiled programs carried in a file (ax_program_save and
 * ax_program_load, backend/cpu/stored.c).  jit_module_image: the shared
 * object of m as the compiler made it, read back from the disk cache and
 * verified (malloc'd, its size in *n); NULL when the disk cache does not
 * hold it.  jit_module_from_image: a module loaded from such bytes (read
 * from a file whose content hash the caller has checked), with no
 * compiler and no disk cache: the same bytes give the same module, and
 * its key is the bytes' hash, so it never stands for a source's module.
 * NULL with a message (the loader's) in err. */
void *jit_module_image(Jit *j, const JitModule *m, size_t *n);
JitModule *jit_module_from_image(Jit *j, const void *b, size_t n, char *err, size_t errsize);
/* A module whose symbols are fns[0..n) (an exported program's functions,
 * compiled into the application: ax_program_load_linked), which must
 * outlive the Jit; NULL when memory is lacking. */
struct ax_linked_fn;
JitModule *jit_module_linked(Jit *j, const struct ax_linked_fn *fns, int n);
/* The instruction-set extensions of this CPU that compiled code may use,
 * as /proc/cpuinfo names them, space-separated and sorted (malloc'd; ""
 * when it cannot be read; NULL when memory is lacking).  The code compiled
 * here with -march=native may need any of them. */
char *jit_host_isa(void);

/* The compiler's identity: the first line of `cc --version`, found once
 * per Jit, on first need (read from the disk cache's identity file while
 * the compiler's files are unchanged: see jit_ident.c).  NULL if the compiler
 * cannot be run. */
const char *jit_compiler_id(Jit *j);
/* Whether the compiler is GCC, from its identity ("gcc (GCC) 13.2.1",
 * "cc (Debian 12.2.0-14) 12.2.0"; Clang's says "clang"). */
bool jit_is_gcc(Jit *j);
/* The disk cache directory in use (checking it on first call), or NULL
 * when the disk cache is off or its directory was refused. */
const char *jit_cache_dir(Jit *j);

/* Other compiled forms (a GPU backend's binaries) in the same cache
 * directory, verified like the modules: the payload stored under key as
 * <key hex>.<kind>, or NULL when there is none (or no disk cache); the
 * payload is malloc'd, its size in *n.  A Jit made for this needs no
 * compiler options. */
void *jit_blob_load(Jit *j, const char *kind, const uint8_t key[32], size_t *n);
void jit_blob_store(Jit *j, const char *kind, const uint8_t key[32], const void *data, size_t n);

/* The disk cache as a whole (the `axle cache` command, ax_cache_*):
 * entries (compiled modules and blobs) and their bytes in dir. */
typedef struct JitDirStats {
    int64_t entries, bytes;
} JitDirStats;
/* Counts dir's entries; -1 (errno set) if it cannot be read. */
int jit_dir_stats(const char *dir, JitDirStats *st);
/* Removes every entry of dir, its compiler identities, and temporary
 * files old enough to be left by killed processes; what it removed is
 * added to *removed (may be NULL).  -1 (errno set) if dir cannot be read. */
int jit_dir_clear(const char *dir, JitDirStats *removed);
/* The default cache directory ($XDG_CACHE_HOME/axle, else
 * $HOME/.cache/axle), malloc'd; NULL if neither is set. */
char *jit_default_dir(void);

/* SHA-256 (FIPS 180-4), the hash behind the keys and the content checks. */
typedef struct JitSha256 {
    uint32_t h[8];
    uint64_t len;          /* bytes hashed so far */
    uint8_t buf[64];
    size_t nbuf;
    bool portable;         /* never the SHA extensions (set after init: tests) */
} JitSha256;
void jit_sha256_init(JitSha256 *s);
void jit_sha256_update(JitSha256 *s, const void *data, size_t n);
void jit_sha256_final(JitSha256 *s, uint8_t out[32]);
void jit_sha256(const void *data, size_t n, uint8_t out[32]);
/* Whether jit_sha256 uses the CPU's SHA instructions here. */
bool jit_sha256_accelerated(void);

#endif

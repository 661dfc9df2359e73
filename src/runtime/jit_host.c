/*
 * The host's instruction-set extensions (jit_host_isa, jit.h), which a
 * program saved to a file records and its load checks: code compiled
 * with -march=native may use any of them.  Apart from the compiler's
 * identity (jit_ident.c) because the runtime-only library, which runs no
 * compiler, needs it.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "jit_int.h"
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

/* The x86 flags of /proc/cpuinfo that name instructions a compiler may
 * use (the others name the processor's state, its bugs or the
 * hypervisor's, which differ between machines that run the same code).
 * Elsewhere (Arm's "Features", RISC-V's "isa") every word names an
 * extension. */
static const char *const x86_isa[] = {
    "3dnowprefetch", "abm", "adx", "aes", "amx_bf16", "amx_int8", "amx_tile", "avx", "avx2", "avx512_bf16",
    "avx512_bitalg", "avx512_fp16", "avx512_vbmi2", "avx512_vnni", "avx512_vp2intersect", "avx512_vpopcntdq",
    "avx512bw", "avx512cd", "avx512dq", "avx512er", "avx512f", "avx512ifma", "avx512pf", "avx512vbmi",
    "avx512vl", "avx_vnni", "bmi1", "bmi2", "clflushopt", "clwb", "cx16", "f16c", "fma", "fma4", "fsgsbase",
    "gfni", "lahf_lm", "movbe", "movdir64b", "movdiri", "pclmulqdq", "pku", "pni", "popcnt", "rdpid", "rdrand",
    "rdseed", "serialize", "sha_ni", "sse", "sse2", "sse4_1", "sse4_2", "sse4a", "ssse3", "tbm", "vaes",
    "vpclmulqdq", "waitpkg", "xop", "xsave", "xsavec", "xsaveopt", "xsaves",
};

static int by_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

char *jit_host_isa(void)
{
    struct utsname u;
    bool x86 = uname(&u) == 0 && (!strcmp(u.machine, "x86_64") || (u.machine[0] == 'i' && strstr(u.machine, "86")));
    FILE *f = fopen("/proc/cpuinfo", "re");
    char *line = NULL, *out = NULL;
    size_t cap = 0;
    const char *words = "";
    if (f) {
        while (getline(&line, &cap, f) > 0)
            if (!strncmp(line, "flags", 5) || !strncmp(line, "Features", 8) || !strncmp(line, "isa", 3)) {
                char *colon = strchr(line, ':');
                words = colon ? colon + 1 : "";
                break;
            }
        fclose(f);
    }
    /* the words kept, sorted, joined by single spaces */
    size_t n = strlen(words);
    char *copy = ax__malloc(n + 1), **w = ax__calloc(n / 2 + 2, sizeof *w);
    if ((out = ax__malloc(n + 1)) && copy && w) {
        memcpy(copy, words, n + 1);
        size_t k = 0;
        for (char *save = NULL, *t = strtok_r(copy, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save)) {
            bool keep = !x86;
            for (size_t i = 0; x86 && i < sizeof x86_isa / sizeof *x86_isa && !keep; i++) keep = !strcmp(t, x86_isa[i]);
            if (keep) w[k++] = t;
        }
        qsort(w, k, sizeof *w, by_str);
        size_t at = 0;
        for (size_t i = 0; i < k; i++) {
            size_t l = strlen(w[i]);
            if (at) out[at++] = ' ';
            memcpy(out + at, w[i], l);
            at += l;
        }
        out[at] = 0;
    } else {
        free(out);
        out = NULL;
    }
    free(copy);
    free(w);
    free(line);
    return out;
}

/*
 * A fuzz target over the loader of saved programs (ax_program_load_mem).
 *
 * A file whose content hash does not match is refused before anything in
 * it is read, so bytes fuzzed as a whole file would only ever test the
 * hash.  The input is instead the body after the backend's name, and the
 * target makes the file around it: axle's magic and version, the body's
 * length, "interp" as the backend, the input, and the SHA-256 of all of
 * that.  What the parser sees past the hash is then whatever the fuzzer
 * made.  The backend is fixed to the interpreter so that no input can
 * carry machine code to be loaded (a CPU program's objects are trusted
 * once the hash matches: that is what the hash is for).
 *
 * Whatever the input, the load returns a program or NULL with an error
 * that names the call; a program that loads saves again, and that file
 * loads again; nothing crashes, leaks or reads out of bounds (libFuzzer
 * runs this under the address and undefined-behaviour sanitizers).
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "axle.h"
#include "runtime/jit.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static ax_ctx *interp_ctx(void)
{
    ax_options o = {0};
    o.backend = AX_BACKEND_INTERP;
    o.cc = "/nonexistent/axle-fuzz-no-cc";
    o.no_cache = true;
    o.threads = 1;
    return ax_ctx_new(&o);
}

/* p saved (to a file of this process's own: a save writes a new file and
 * renames it into place) and loaded back into cx: true when both worked. */
static bool saves_again(ax_ctx *cx, ax_program *p)
{
    char path[128];
    snprintf(path, sizeof path, "%s/axle-fuzz-bundle-%ld.axle", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (long)getpid());
    bool ok = ax_program_save(p, path) == 0;
    ax_program *q = ok ? ax_program_load(cx, path) : NULL;
    ok = q != NULL;
    ax_program_free(q);
    remove(path);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char magic[] = "axle-program-1\n", backend[] = "interp";
    const char *version = ax_version();
    size_t head = sizeof magic - 1 + strlen(version) + 1, body = sizeof backend + size;
    if (size > ((size_t)64 << 20)) return 0;
    unsigned char *f = malloc(head + 8 + body + 32);
    if (!f) return 0;
    memcpy(f, magic, sizeof magic - 1);
    memcpy(f + sizeof magic - 1, version, strlen(version) + 1);
    for (int i = 0; i < 8; i++) f[head + i] = (unsigned char)((uint64_t)body >> (8 * i));
    memcpy(f + head + 8, backend, sizeof backend);
    if (size) memcpy(f + head + 8 + sizeof backend, data, size);
    jit_sha256(f, head + 8 + body, f + head + 8 + body);
    ax_ctx *cx = interp_ctx();
    if (!cx) {
        free(f);
        return 0;
    }
    ax_program *p = ax_program_load_mem(cx, f, head + 8 + body + 32);
    if (!p) {
        /* refused: an error that says by which call, and the context usable */
        if (!strstr(ax_error(cx), "ax_program_load")) {
            fprintf(stderr, "fuzz_bundle: an error without the call's name: %s\n", ax_error(cx));
            abort();
        }
        ax_clear_error(cx);
    } else if (!saves_again(cx, p)) {
        fprintf(stderr, "fuzz_bundle: a loaded program did not save and load again: %s\n", ax_error(cx));
        abort();
    }
    ax_program_free(p);
    ax_ctx_free(cx);
    free(f);
    return 0;
}

/*
 * The CPU backend's compiled programs stored in the disk cache
 * (Backend.find and Backend.keep; program entries, the blob kind "prog",
 * runtime/jit.c), so
 * that a new process finds a program with one lookup instead of running
 * sharing recovery, the optimiser and code generation (for a large
 * program, such as Mandelbrot's or fluid's, more time than the lookup)
 * and looking up each of its units by the hash of its text.  Keyed by the
 * program's source key (srckey.c, hashed whole) and everything the units'
 * keys cover (compiler, flags, axle's version, the host: jit_key_of),
 * with what else decides the program: safe mode, the maths functions
 * libmvec has, the debug switches that change the passes, the planner's
 * solver (AXLE_PLANNER, AXLE_PLANNER_LIMIT, AXLE_CBC), the test hook
 * for the maths, and the build of axle's own code (its GNU build ID: the
 * optimiser and the code generator are in it; where it has none, nothing
 * is stored).  The entry holds the optimised program (irser.c), what code
 * generation decided per operation (kernel roles, units) and per unit
 * (its module, by key, and place in a batch).  A found entry is verified
 * as a whole (its content hash), its program by the verifier, its
 * description against a fresh cg_describe, and every module must be
 * found and hold every symbol; anything else is a miss, and the program
 * is compiled as usual (which stores the entry again).  The checked
 * copies' units have no text then: load_checked generates it on first
 * need.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "cpu_int.h"
#include "bytes.h"
#include "frontend/frontend.h"

#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG_MAGIC_TEXT "axle-prog-1\n"

/* A program's part in a file starts with what carries its code: the
 * compiled objects (ax_program_save), or the functions of its exported C
 * (ax_program_export), given at load. */
enum { PART_OBJECTS = 0, PART_LINKED = 1 };

/* A unit's flags (CgUnit.cflags) are the compiler's: the runtime-only
 * library, which compiles nothing, keeps only that a unit has some. */
#ifdef AX_RUNTIME_ONLY
#define UNIT_CFLAGS ""
#else
#define UNIT_CFLAGS cg_unit_cflags
#endif

#ifndef AX_RUNTIME_ONLY
/* The GNU build ID of the object holding this code (notes of the
 * PT_NOTE segments, dl_iterate_phdr), into cc; false when it has none. */
typedef struct BuildId {
    const void *addr;
    uint8_t id[64];
    size_t n;
} BuildId;

static int find_build_id(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    BuildId *b = arg;
    uintptr_t a = (uintptr_t)b->addr;
    bool mine = false;
    for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        mine = ph->p_type == PT_LOAD && a >= lo && a < lo + ph->p_memsz;
    }
    if (!mine) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const unsigned char *q = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr), *end = q + ph->p_memsz;
        while (q + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)q;
            size_t name = (nh->n_namesz + 3) & ~(size_t)3, desc = (nh->n_descsz + 3) & ~(size_t)3;
            const unsigned char *nm = q + sizeof *nh, *d = nm + name;
            if (d + desc > end) break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && !memcmp(nm, "GNU", 4) && nh->n_descsz > 0 &&
                nh->n_descsz <= sizeof b->id) {
                memcpy(b->id, d, nh->n_descsz);
                b->n = nh->n_descsz;
                return 1;
            }
            q = d + desc;
        }
    }
    return 1;
}

static void probe_build_id(CpuCtx *cc)
{
    if (cc->build_id_done) return;
    cc->build_id_done = true;
    BuildId b = {.addr = (const void *)probe_build_id};
    dl_iterate_phdr(find_build_id, &b);
    memcpy(cc->build_id, b.id, sizeof cc->build_id);
    cc->build_id_len = b.n;
}

/* The key of the program entry for source key k; false when there is none
 * (no build ID, no disk cache, the compiler cannot be run). */
static bool prog_key(ax_ctx *cx, CpuCtx *cc, Jit *jit, const SrcKey *k, uint8_t key[32])
{
    probe_build_id(cc);
    if (!cc->build_id_len || !jit_cache_dir(jit)) return false;
    CgConfig cfg = cpu_config(cx, cc);
    uint8_t head[96];
    size_t n = 0;
    memcpy(head + n, cc->build_id, cc->build_id_len);
    n += cc->build_id_len;
    head[n++] = cfg.safe;
    memcpy(head + n, &cfg.simd_mask, sizeof cfg.simd_mask);
    n += sizeof cfg.simd_mask;
    unsigned sw = cx->opt.debug & ~(unsigned)(AX_DEBUG_TIMING | AX_DEBUG_CACHE | AX_DEBUG_PROFILE | AX_DEBUG_VERIFY);
    memcpy(head + n, &sw, sizeof sw);
    n += sizeof sw;
    head[n++] = cx->mvec != NULL;
    /* the planner's solver and its limit (AXLE_PLANNER, AXLE_PLANNER_LIMIT,
     * AXLE_CBC): they choose the loops a program is made of */
    memcpy(head + n, &cx->planner, sizeof cx->planner);
    n += sizeof cx->planner;
    memcpy(head + n, &cx->planner_limit_ms, sizeof cx->planner_limit_ms);
    n += sizeof cx->planner_limit_ms;
    _Static_assert(64 + 1 + sizeof(unsigned) * 2 + 1 + sizeof(int) + sizeof(double) <= 96, "prog_key's head");
    JitSha256 s;
    jit_sha256_init(&s);
    jit_sha256_update(&s, head, n);
    const char *cbc = cx->planner_cbc ? cx->planner_cbc : "";
    jit_sha256_update(&s, cbc, strlen(cbc) + 1);
    jit_sha256_update(&s, k->bytes, k->len);
    uint8_t h[32];
    jit_sha256_final(&s, h);
    return jit_key_of(jit, "axle-prog-1", h, sizeof h, key, NULL, 0) == 0;
}

#endif

/* ------------------------------------------------------------ the description
 *
 * What code generation decided per operation (kernel roles, units) and
 * per unit (its operation, its module by number, its place in a batch),
 * as program entries and files hold it; read back onto cg_describe's
 * description of the program read back, and checked against it. */

#ifndef AX_RUNTIME_ONLY
static void put_desc(Bytes *o, const CgProg *g, const int *umod, const int *bpos)
{
    bytes_putv(o, g->nnodes);
    for (int i = 0; i < g->nnodes; i++) {
        const CgNode *cn = &g->nodes[i];
        if (!cn->x) continue;
        unsigned roles = 0;
        for (int r = 0; r < R_NROLE; r++) roles |= (unsigned)cn->role[r] << r;
        bytes_putv(o, roles);
        bytes_putv(o, cn->unit);
        bytes_putv(o, cn->cold);
        bytes_putv(o, cn->comm);
        bytes_putv(o, cn->scratch_leaves);
    }
    bytes_putv(o, g->nunits);
    for (int u = 0; u < g->nunits; u++) {
        const CgUnit *cu = &g->units[u];
        bytes_putv(o, cu->node);
        bytes_putv(o, cu->cold);
        bytes_putv(o, cu->cflags != NULL);
        bytes_put(o, &cu->math, sizeof cu->math);
        bytes_putv(o, umod[u]);
        bytes_putv(o, bpos[u]);
    }
}

#endif

/* Reads put_desc's onto g (cg_describe's): per unit its module's number
 * into umod and its place in a batch into bpos (both made here, nunits
 * long; freed by the caller).  cold_mods: cold units have modules too (a
 * file), else none (an entry).  False when anything is out of place. */
static bool get_desc(Bytes *in, CgProg *g, int **umodp, int **bposp, bool cold_mods)
{
    if (bytes_getv(in, g->nnodes, g->nnodes) != g->nnodes || in->bad) return false;
    for (int i = 0; i < g->nnodes; i++) {
        CgNode *cn = &g->nodes[i];
        if (!cn->x) continue;
        unsigned roles = (unsigned)bytes_getv(in, 0, (1 << R_NROLE) - 1);
        for (int r = 0; r < R_NROLE; r++) cn->role[r] = roles >> r & 1;
        cn->unit = (int)bytes_getv(in, -1, INT32_MAX);
        cn->cold = (int)bytes_getv(in, -1, INT32_MAX);
        cn->comm = bytes_getv(in, 0, 1);
        cn->scratch_leaves = (int)bytes_getv(in, 0, INT32_MAX);
    }
    int nu = (int)bytes_getv(in, 0, g->nnodes + 1);
    int *umod = NULL, *bpos = NULL;
    if (in->bad || !(g->units = ax__calloc((size_t)nu + 1, sizeof *g->units)) ||
        !(*umodp = umod = ax__calloc((size_t)nu + 1, sizeof *umod)) ||
        !(*bposp = bpos = ax__calloc((size_t)nu + 1, sizeof *bpos)))
        return false;
    g->nunits = nu;
    for (int u = 0; u < nu; u++) {
        CgUnit *cu = &g->units[u];
        cu->node = (int)bytes_getv(in, 0, g->nnodes - 1);
        cu->cold = bytes_getv(in, 0, 1);
        cu->cflags = bytes_getv(in, 0, 1) ? UNIT_CFLAGS : NULL;
        const unsigned char *m = bytes_get(in, sizeof cu->math);
        if (m) memcpy(&cu->math, m, sizeof cu->math);
        umod[u] = (int)bytes_getv(in, -1, nu);
        bpos[u] = (int)bytes_getv(in, -1, nu);
        if (!in->bad && ((cold_mods ? umod[u] < 0 : cu->cold != (umod[u] < 0)) || !g->nodes[cu->node].x ||
                         (!cold_mods && cu->cold && bpos[u] >= 0)))
            in->bad = true;
    }
    for (int i = 0; i < g->nnodes && !in->bad; i++) {
        const CgNode *cn = &g->nodes[i];
        if (cn->x && (cn->unit >= nu || cn->cold >= nu || (cn->unit >= 0 && g->units[cn->unit].cold) ||
                      (cn->cold >= 0 && !g->units[cn->cold].cold)))
            in->bad = true;
    }
    return !in->bad;
}

#ifndef AX_RUNTIME_ONLY
/* ------------------------------------------------------------ program entries */

/* Stores the entry of a program just prepared (nothing on failure: it is
 * only a cache). */
void cpu_keep(ax_ctx *cx, const Program *p, void *state, const SrcKey *k, int64_t nodes, int64_t lets)
{
    CpuCtx *cc = cx->backend_state[AX_BACKEND_CPU];
    CpuProg *pp = state;
    Jit *jit = cc ? cc->jit : NULL;
    uint8_t key[32];
    if (!pp || !jit || !prog_key(cx, cc, jit, k, key)) return;
    const CgProg *g = pp->cg;
    size_t irn = 0;
    unsigned char *ir = ir_save(p, k->arrays, k->narrays, &irn);
    JitModule **mods = ax__calloc((size_t)g->nunits + 1, sizeof *mods);
    int *umod = ax__calloc((size_t)g->nunits + 1, sizeof *umod);
    Bytes o = {0};
    o.bad = !ir || !mods || !umod;
    /* the modules of the hot units, each once */
    int nmods = 0;
    for (int u = 0; u < g->nunits && !o.bad; u++) {
        umod[u] = -1;
        if (g->units[u].cold) continue;
        if (!pp->mod[u]) {
            o.bad = true;
            break;
        }
        for (int m = 0; m < nmods && umod[u] < 0; m++)
            if (mods[m] == pp->mod[u]) umod[u] = m;
        if (umod[u] < 0) mods[umod[u] = nmods++] = pp->mod[u];
    }
    bytes_put(&o, PROG_MAGIC_TEXT, sizeof PROG_MAGIC_TEXT - 1);
    bytes_putv(&o, nodes);
    bytes_putv(&o, lets);
    bytes_putv(&o, (int64_t)irn);
    if (ir) bytes_put(&o, ir, irn);
    if (!o.bad) {
        for (int u = 0; u < g->nunits; u++)
            if (g->units[u].cold) pp->bpos[u] = -1;
        put_desc(&o, g, umod, pp->bpos);
    }
    bytes_putv(&o, nmods);
    for (int m = 0; m < nmods; m++) {
        uint8_t mk[32];
        jit_module_key_bytes(mods[m], mk);
        bytes_put(&o, mk, sizeof mk);
    }
    if (!o.bad) jit_blob_store(jit, "prog", key, o.b, o.len);
    free(o.b);
    free(ir);
    free(mods);
    free(umod);
}

/* The program of source key k from its entry: 1 with *prog and *state
 * (and the source's node and let counts and the program's depth in nl),
 * 0 when there is none or it cannot be used (no error: the caller
 * compiles). */
int cpu_find(ax_ctx *cx, const SrcKey *k, Program **prog, void **state, int64_t nl[3])
{
    *prog = NULL;
    *state = NULL;
    CpuCtx *cc = cpu_ctx_state(cx);
    Jit *jit = cc ? cpu_ctx_jit(cx, cc) : NULL;
    uint8_t key[32];
    if (!jit || !prog_key(cx, cc, jit, k, key)) return 0;
    double t[6];
    t[0] = cpu_now_ms();
    size_t n = 0;
    unsigned char *payload = jit_blob_load(jit, "prog", key, &n);
    if (!payload) return 0;
    t[1] = cpu_now_ms();
    Bytes in = bytes_reader(payload, n);
    Program *p = NULL;
    CgProg *g = NULL;
    JitModule **mod = NULL;
    int *bpos = NULL, *umod = NULL;
    const char *why = "malformed";
    const unsigned char *magic = bytes_get(&in, sizeof PROG_MAGIC_TEXT - 1);
    if (!magic || memcmp(magic, PROG_MAGIC_TEXT, sizeof PROG_MAGIC_TEXT - 1)) goto miss;
    nl[0] = bytes_getv(&in, 0, INT64_MAX);
    nl[1] = bytes_getv(&in, 0, INT64_MAX);
    size_t irn = (size_t)bytes_getv(&in, 0, (int64_t)n);
    const unsigned char *ir = bytes_get(&in, irn);
    char msg[256];
    if (!ir || !(p = ir_load(cx, ir, irn, k->arrays, k->narrays, &nl[2]))) goto miss;
    t[2] = cpu_now_ms();
    /* (Not verified again, unless AXLE_DEBUG=verify: the entry is the
     * bytes this build wrote, its content hash checked, of a program that
     * a compile here would not verify either; ir_load has checked every
     * reference and bound: verifying would cost a large part of the
     * lookup's time.) */
    why = "not a valid program";
    if ((cx->opt.debug & AX_DEBUG_VERIFY) && ir_verify(p, msg, sizeof msg)) goto miss;
    t[3] = cpu_now_ms();
    why = "another description";
    if (!(g = cg_describe(p, msg, sizeof msg)) || !get_desc(&in, g, &umod, &bpos, false)) goto miss;
    int nu = g->nunits;
    int nmods = (int)bytes_getv(&in, 0, nu);
    if (in.bad || !(mod = ax__calloc((size_t)nu + 1, sizeof *mod))) goto miss;
    why = "a module is missing";
    t[4] = cpu_now_ms();
    for (int mi = 0; mi < nmods; mi++) {
        const unsigned char *mk = bytes_get(&in, 32);
        JitModule *m = mk ? jit_module_by_key(jit, mk) : NULL;
        if (!m) goto miss;
        for (int u = 0; u < nu; u++)
            if (umod[u] == mi) mod[u] = m;
    }
    why = "malformed";
    for (int u = 0; u < nu; u++)
        if (umod[u] >= nmods) goto miss;
    if (in.at != in.len) goto miss;
    free(umod);
    free(payload);
    char what[64];
    CpuProg *pp = cpu_make_prog(p, g, mod, bpos, what);   /* takes g, mod, bpos */
    g = NULL;
    if (!pp) {
        if (cx->opt.debug & AX_DEBUG_CACHE)
            fprintf(stderr, "axle: cache: program entry unusable (%s missing)\n", what);
        program_free(p);
        return 0;
    }
    cc->counters.prepared++;
    cc->counters.cached++;
    t[5] = cpu_now_ms();
    if (cx->opt.debug & AX_DEBUG_CACHE) fprintf(stderr, "axle: cache: program entry found\n");
    if (cx->opt.debug & AX_DEBUG_TIMING)
        fprintf(stderr, "axle: timing: program entry of %zu bytes: read %.3f ms, program %.3f, verified %.3f, "
                "described %.3f, %d modules and their symbols %.3f\n", n, t[1] - t[0], t[2] - t[1], t[3] - t[2],
                t[4] - t[3], nmods, t[5] - t[4]);
    *prog = p;
    *state = pp;
    return 1;
miss:
    if (cx->opt.debug & AX_DEBUG_CACHE) fprintf(stderr, "axle: cache: program entry unusable (%s)\n", why);
    free(umod);
    free(mod);
    free(bpos);
    cg_free(g);
    program_free(p);
    free(payload);
    return 0;
}

/* ------------------------------------------------------------ programs in files
 *
 * What ax_program_save writes for a CPU program after the program itself
 * (driver/bundle.c): the instruction-set extensions of the CPU it was
 * compiled on (jit_host_isa: -march=native may have used any of them),
 * the description, and the compiled object of every unit, the checked
 * copies' too (compiled now if they never were), so that the program
 * runs, safe mode's checks included, where no compiler is installed.
 * The objects are those of the disk cache; a unit that is not there (no
 * disk cache, or evicted) is compiled again into a private one. */

int cpu_save(ax_ctx *cx, const Program *p, void *state, Bytes *w)
{
    (void)p;
    CpuCtx *cc = cpu_ctx_state(cx);
    CpuProg *pp = state;
    Jit *jit = cc ? cpu_ctx_jit(cx, cc) : NULL;
    if (!jit) return -1;
    if (!pp || pp->magic != CPU_PROG_MAGIC) {
        ctx_error(cx, AX_ERR_BACKEND, "ax_program_save: no compiled program");
        return -1;
    }
    CgProg *g = pp->cg;
    int nu = g->nunits, rc = -1, nmods = 0;
    char err[4096] = "";
    JitModule **mods = ax__calloc((size_t)nu + 1, sizeof *mods);
    int *umod = ax__calloc((size_t)nu + 1, sizeof *umod), *bpos = ax__calloc((size_t)nu + 1, sizeof *bpos);
    void **img = ax__calloc((size_t)nu + 1, sizeof *img);
    size_t *len = ax__calloc((size_t)nu + 1, sizeof *len);
    JitUnit *ju = ax__calloc((size_t)nu + 1, sizeof *ju);
    char *isa = jit_host_isa();
    char tmp[PATH_MAX] = "";
    Jit *own = NULL;
    if (!mods || !umod || !bpos || !img || !len || !ju || !isa) {
        ctx_error(cx, AX_ERR_NOMEM, "ax_program_save: out of memory");
        goto out;
    }
    /* the cold units compiled (the hot ones are loaded), where a disk
     * cache will hold their objects; without one, every unit is compiled
     * into a private one below (unless each has its object already: a
     * program read from a file) */
    bool disk = jit_cache_dir(jit) != NULL, cold = false;
    for (int u = 0; u < nu; u++) cold = cold || (disk && !pp->mod[u]);
    bool gcc = cold && jit_is_gcc(jit);
    if (cold && cpu_unit_texts(cx, cc, pp, err, sizeof err)) {
        ctx_error(cx, AX_ERR_BACKEND, "ax_program_save: the checked kernels cannot be generated: %s", err);
        goto out;
    }
    int ncold = 0;
    for (int u = 0; u < nu && cold; u++)
        if (!pp->mod[u])
            ju[ncold++] = (JitUnit){.source = g->units[u].text, .len = g->units[u].len,
                                    .cflags = gcc ? g->units[u].cflags : NULL};
    if (ncold && jit_load_many(jit, ju, ncold, cx->opt.threads > 0 ? cx->opt.threads : 1, NULL, NULL, err,
                               sizeof err)) {
        ctx_error(cx, AX_ERR_COMPILE, "ax_program_save: %s", err[0] ? err : "the C compiler failed");
        goto out;
    }
    for (int u = 0, c = 0; u < nu && c < ncold; u++)
        if (!pp->mod[u]) pp->mod[u] = ju[c++].module;
    /* each module once */
    for (int u = 0; u < nu; u++) {
        umod[u] = -1;
        for (int m = 0; m < nmods && umod[u] < 0; m++)
            if (mods[m] == pp->mod[u]) umod[u] = m;
        if (umod[u] < 0) mods[umod[u] = nmods++] = pp->mod[u];
        bpos[u] = g->units[u].cold ? -1 : pp->bpos[u];
    }
    bool missing = false;   /* (a cold unit not compiled has no module) */
    for (int m = 0; m < nmods && !missing; m++)
        missing = !mods[m] || !(img[m] = jit_module_image(jit, mods[m], &len[m]));
    if (missing) {
        /* compiled again, into a private disk cache */
        const char *t = getenv("TMPDIR");
        if (!t || t[0] != '/') t = "/tmp";
        snprintf(tmp, sizeof tmp, "%s/axle-save-XXXXXX", t);
        if (!mkdtemp(tmp)) {
            ctx_error(cx, AX_ERR_BACKEND, "ax_program_save: cannot make a directory in %s: %s", t, strerror(errno));
            tmp[0] = 0;
            goto out;
        }
        if (!(own = cpu_new_jit(cx, cc, tmp))) {
            ctx_error(cx, AX_ERR_NOMEM, "ax_program_save: out of memory");
            goto out;
        }
        if (cpu_unit_texts(cx, cc, pp, err, sizeof err)) {
            ctx_error(cx, AX_ERR_BACKEND, "ax_program_save: the kernels cannot be generated: %s", err);
            goto out;
        }
        /* every unit alone, each its own module (a batch's object is
         * of its batch's text, which the plan of batches made from what
         * the caches held then) */
        for (int m = 0; m < nmods; m++) free(img[m]), img[m] = NULL;
        for (int u = 0; u < nu; u++)
            ju[u] = (JitUnit){.source = g->units[u].text, .len = g->units[u].len,
                              .cflags = jit_is_gcc(own) ? g->units[u].cflags : NULL};
        if (jit_load_many(own, ju, nu, cx->opt.threads > 0 ? cx->opt.threads : 1, NULL, NULL, err, sizeof err))
            goto cc_failed;
        nmods = nu;
        for (int u = 0; u < nu; u++) {
            umod[u] = u;
            bpos[u] = -1;
            if (!(img[u] = jit_module_image(own, ju[u].module, &len[u]))) goto cc_failed;
        }
    }
    bytes_putv(w, PART_OBJECTS);
    bytes_put(w, isa, strlen(isa) + 1);
    put_desc(w, g, umod, bpos);
    bytes_putv(w, nmods);
    for (int m = 0; m < nmods; m++) {
        bytes_putv(w, (int64_t)len[m]);
        bytes_put(w, img[m], len[m]);
    }
    if (w->bad) ctx_error(cx, AX_ERR_NOMEM, "ax_program_save: out of memory");
    else rc = 0;
    goto out;
cc_failed:
    ctx_error(cx, AX_ERR_COMPILE, "ax_program_save: %s", err[0] ? err : "the compiled code could not be read back");
out:
    for (int m = 0; img && m < nmods; m++) free(img[m]);
    jit_free(own);
    if (tmp[0]) {
        jit_dir_clear(tmp, NULL);
        rmdir(tmp);
    }
    free(isa);
    free(ju);
    free(len);
    free(img);
    free(bpos);
    free(umod);
    free(mods);
    return rc;
}

/* An exported program's part: every unit, hot and checked, in one
 * translation unit (cg_batch, its names prefixed by the program's), the
 * table of their functions by the names cpu_make_prog and load_checked
 * look up (axk_b<unit>_...), and the description, every unit in module
 * 0 at its own place. */
int cpu_export(ax_ctx *cx, const Program *p, void *state, const char *name, Bytes *w, Bytes *k, Bytes *c)
{
    (void)p;
    CpuCtx *cc = cpu_ctx_state(cx);
    CpuProg *pp = state;
    if (!cc || !pp || pp->magic != CPU_PROG_MAGIC) {
        if (cc) ctx_error(cx, AX_ERR_BACKEND, "ax_program_export: no compiled program");
        return -1;
    }
    char err[4096] = "";
    if (cpu_unit_texts(cx, cc, pp, err, sizeof err)) {
        ctx_error(cx, AX_ERR_BACKEND, "ax_program_export: the kernels cannot be generated: %s", err);
        return -1;
    }
    CgProg *g = pp->cg;
    int nu = g->nunits;
    int *idx = ax__calloc((size_t)nu + 1, sizeof *idx), *umod = ax__calloc((size_t)nu + 1, sizeof *umod);
    bool *seen = ax__calloc((size_t)nu + 1, sizeof *seen);
    size_t len = 0;
    CgConfig cfg = cpu_config(cx, cc);
    char *text = NULL;
    if (idx && umod && seen) {
        for (int u = 0; u < nu; u++) idx[u] = u;
        text = cg_batch(g, &cfg, idx, nu, name, &len);
    }
    if (!text) {
        free(idx), free(umod), free(seen);
        ctx_error(cx, AX_ERR_NOMEM, "ax_program_export: out of memory");
        return -1;
    }
    bytes_put(k, text, len);
    bytes_printf(c, "\nstatic const ax_linked_fn %s_fns[] = {\n", name);
    /* each function the kernels' text defines (a checked copy exists for
     * the roles that have checks only) */
    char fn[160];
    for (int i = 0; i < g->nnodes; i++) {
        const CgNode *cn = &g->nodes[i];
        if (!cn->x) continue;
        for (int pass = 0; pass < 2; pass++) {
            int u = pass ? cn->cold : cn->unit;
            if (u < 0 || seen[u]) continue;
            seen[u] = true;
            for (int t = 0; !pass && t < cn->nthunk; t++) {
                snprintf(fn, sizeof fn, "axt_%s_b%d_%d(", name, u, t);
                if (!strstr(text, fn)) continue;
                bytes_printf(c, "    {\"axt_b%d_%d\", (void (*)(void))axt_%s_b%d_%d},\n", u, t, name, u, t);
            }
            for (int r = 0; r < R_NROLE; r++) {
                if (!cn->role[r]) continue;
                const char *chk = pass ? "_chk" : "";
                snprintf(fn, sizeof fn, "axk_%s_b%d_%s%s(", name, u, cg_role_name[r], chk);
                if (!strstr(text, fn)) continue;
                bytes_printf(c, "    {\"axk_b%d_%s%s\", (void (*)(void))axk_%s_b%d_%s%s},\n", u, cg_role_name[r], chk,
                             name, u, cg_role_name[r], chk);
            }
        }
    }
    bytes_put(c, "    {0, 0},\n};\n", 15);
    free(text);
    /* the instruction sets the application's compiler is told to use (its
     * -march), as jit_host_isa names them: checked at load */
    static const char *const isa_macro[][2] = {
        {"__SSE__", "sse"}, {"__SSE2__", "sse2"}, {"__SSE3__", "pni"}, {"__SSSE3__", "ssse3"},
        {"__SSE4_1__", "sse4_1"}, {"__SSE4_2__", "sse4_2"}, {"__POPCNT__", "popcnt"}, {"__AVX__", "avx"},
        {"__AVX2__", "avx2"}, {"__FMA__", "fma"}, {"__F16C__", "f16c"}, {"__BMI__", "bmi1"}, {"__BMI2__", "bmi2"},
        {"__LZCNT__", "abm"}, {"__MOVBE__", "movbe"}, {"__AVX512F__", "avx512f"}, {"__AVX512BW__", "avx512bw"},
        {"__AVX512CD__", "avx512cd"}, {"__AVX512DQ__", "avx512dq"}, {"__AVX512VL__", "avx512vl"},
        {"__AVX512IFMA__", "avx512ifma"}, {"__AVX512VBMI__", "avx512vbmi"}, {"__AVX512VBMI2__", "avx512_vbmi2"},
        {"__AVX512VNNI__", "avx512_vnni"}, {"__AVX512BITALG__", "avx512_bitalg"},
        {"__AVX512VPOPCNTDQ__", "avx512_vpopcntdq"}, {"__AVX512BF16__", "avx512_bf16"},
        {"__AVX512FP16__", "avx512_fp16"}, {"__AVXVNNI__", "avx_vnni"}, {"__GFNI__", "gfni"}, {"__VAES__", "vaes"},
        {"__VPCLMULQDQ__", "vpclmulqdq"}, {"__AES__", "aes"}, {"__PCLMUL__", "pclmulqdq"}, {"__SHA__", "sha_ni"},
        {"__ADX__", "adx"}, {"__FMA4__", "fma4"}, {"__XOP__", "xop"}, {"__SSE4A__", "sse4a"},
    };
    bytes_printf(c, "\n/* the instruction sets this file is compiled for (checked when it loads) */\n"
                 "static const char %s_isa[] = \"\"\n", name);
    for (size_t i = 0; i < sizeof isa_macro / sizeof *isa_macro; i++)
        bytes_printf(c, "#ifdef %s\n    \" %s\"\n#endif\n", isa_macro[i][0], isa_macro[i][1]);
    bytes_put(c, "    ;\n", 6);
    bytes_putv(w, PART_LINKED);
    bytes_put(w, "", 1);   /* the instruction sets are the exported C's (BundleLink.isa) */
    put_desc(w, g, umod, idx);   /* every unit in module 0, at its own place */
    bytes_putv(w, g->nunits > 0);   /* (a program of no kernels, a sort alone: no module) */
    free(idx), free(umod), free(seen);
    if (w->bad || c->bad || k->bad) {
        ctx_error(cx, AX_ERR_NOMEM, "ax_program_export: out of memory");
        return -1;
    }
    return 0;
}

#endif

/* The words of the space-separated list need that are not in have, into
 * out (at most n bytes); false when there are none. */
static bool isa_missing(const char *need, const char *have, char *out, size_t n)
{
    size_t at = 0;
    out[0] = 0;
    for (const char *w = need; *w;) {
        while (*w == ' ') w++;
        size_t l = strcspn(w, " ");
        if (!l) break;
        bool found = false;
        for (const char *h = have; *h && !found;) {
            while (*h == ' ') h++;
            size_t hl = strcspn(h, " ");
            found = hl == l && !memcmp(h, w, l);
            h += hl;
        }
        if (!found && at + l + 2 < n) {
            if (at) out[at++] = ' ';
            memcpy(out + at, w, l);
            out[at += l] = 0;
        }
        w += l;
    }
    return out[0] != 0;
}

int cpu_load(ax_ctx *cx, Program *p, Bytes *in, const BundleLink *link, void **state)
{
    *state = NULL;
    CpuCtx *cc = cpu_ctx_state(cx);
    Jit *jit = cc ? cpu_ctx_jit(cx, cc) : NULL;
    if (!jit) return -1;
    int kind = (int)bytes_getv(in, PART_OBJECTS, PART_LINKED);
    if (in->bad || (kind == PART_LINKED) != (link != NULL)) {
        ctx_error(cx, AX_ERR_BACKEND, "ax_program_load: %s", link ? "the data is not an exported program's"
                  : "an exported program's data loads only with its code (ax_program_load_linked)");
        return -1;
    }
    const unsigned char *isa = in->b + in->at;
    size_t il = strnlen((const char *)isa, in->len - in->at);
    if (!bytes_get(in, il + 1)) goto malformed;
    char *have = jit_host_isa();
    char lack[512];
    if (!have) return ctx_error(cx, AX_ERR_NOMEM, "ax_program_load: out of memory"), -1;
    const char *hook = getenv("AXLE_TEST_HOST_ISA");   /* tests: another CPU */
    bool lacks = isa_missing(link ? link->isa : (const char *)isa, hook ? hook : have, lack, sizeof lack);
    free(have);
    if (lacks) {
        ctx_error(cx, AX_ERR_BACKEND, "ax_program_load: the program was compiled for a CPU with instructions "
                  "this one lacks (%s): %s", lack, link ? "compile the exported file for an older -march"
                  : "save it again on this machine, or compile it with AXLE_CFLAGS naming an older -march");
        return -1;
    }
    char msg[256];
    CgProg *g = cg_describe(p, msg, sizeof msg);
    int *umod = NULL, *bpos = NULL, rc = -1;
    JitModule **mod = NULL;
    if (!g) return ctx_error(cx, AX_ERR_NOMEM, "ax_program_load: out of memory"), -1;
    if (!get_desc(in, g, &umod, &bpos, true)) goto bad;
    int nu = g->nunits;
    int nmods = (int)bytes_getv(in, 0, nu);
    if (in->bad || !(mod = ax__calloc((size_t)nu + 1, sizeof *mod))) goto bad;
    for (int u = 0; u < nu; u++)
        if (umod[u] >= nmods) goto bad;
    for (int mi = 0; mi < nmods; mi++) {
        JitModule *m = NULL;
        if (link) {
            if (nmods != 1) goto bad;
            if (!(m = jit_module_linked(jit, link->fns, link->nfns))) {
                ctx_error(cx, AX_ERR_NOMEM, "ax_program_load: out of memory");
                goto out;
            }
            for (int u = 0; u < nu; u++) mod[u] = m;
            continue;
        }
        size_t n = (size_t)bytes_getv(in, 1, (int64_t)(in->len - in->at));
        const unsigned char *b = bytes_get(in, n);
        if (!b) goto bad;
        m = jit_module_from_image(jit, b, n, msg, sizeof msg);
        if (!m) {
            ctx_error(cx, AX_ERR_BACKEND, "ax_program_load: %s", msg);
            goto out;
        }
        for (int u = 0; u < nu; u++)
            if (umod[u] == mi) mod[u] = m;
    }
    if (in->at != in->len) goto bad;
    char what[64];
    CpuProg *pp = cpu_make_prog(p, g, mod, bpos, what);   /* takes g, mod, bpos */
    g = NULL;
    mod = NULL;
    bpos = NULL;
    if (!pp) {
        if (!strcmp(what, "memory")) ctx_error(cx, AX_ERR_NOMEM, "ax_program_load: out of memory");
        else ctx_error(cx, AX_ERR_BACKEND, "ax_program_load: the %s compiled code lacks %s",
                       link ? "exported program's" : "file's", what);
        goto out;
    }
    cc->counters.prepared++;
    *state = pp;
    rc = 0;
    goto out;
bad:
    ctx_error(cx, AX_ERR_BACKEND, "ax_program_load: the file's compiled code is malformed");
out:
    free(umod);
    free(mod);
    free(bpos);
    cg_free(g);
    return rc;
malformed:
    ctx_error(cx, AX_ERR_BACKEND, "ax_program_load: the file's compiled code is malformed");
    return -1;
}

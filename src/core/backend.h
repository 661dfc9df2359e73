/*
 * The contract between the driver and the backends: what a backend
 * does with a verified core program (prepare it, run it, keep it across
 * processes).  The driver picks a backend (driver.h); each backend
 * defines one Backend value.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_BACKEND_H
#define AX_BACKEND_H
#include "ir.h"

/* The backend interface.  Every backend implements the same contract: run
 * a verified core program and return its results as host arrays. */
struct SrcKey;
struct Bytes;
struct ax_linked_fn;
/* An exported program's compiled functions, for Backend.load (NULL for a
 * file's program): the table the exported C defines, and the instruction
 * sets its compiler was told to use. */
typedef struct BundleLink {
    const struct ax_linked_fn *fns;
    int nfns;
    const char *isa;
} BundleLink;
typedef struct Backend {
    const char *name;
    ax_backend_kind kind;
    /* Is it usable here?  (CUDA: is there a device?)  */
    bool (*available)(ax_ctx *cx);
    /* Prepares a program (code generation, compilation); may set private
     * state in *state.  Returns 0 or an ax_status with an error on cx. */
    int (*prepare)(ax_ctx *cx, Program *p, void **state);
    /* Runs it: writes up to max results to out, returns their number or -1
     * with an error on cx.  Results are new references. */
    int (*run)(ax_ctx *cx, Program *p, void *state, ax_array **out, int max);
    void (*release)(void *state);
    /* Optional: compiled programs kept across processes by the key of
     * their source graph (the CPU backend's program entries in the disk
     * cache).  find: 1 with the program and its state (and the source's
     * node and let counts, and the program's depth, in nld) made from the
     * kept form, whose USE nodes read k's arrays; 0 when there is none (no
     * error).  keep: stores the program just prepared for k (nothing on
     * failure). */
    int (*find)(ax_ctx *cx, const struct SrcKey *k, Program **p, void **state, int64_t nld[3]);
    void (*keep)(ax_ctx *cx, const Program *p, void *state, const struct SrcKey *k, int64_t nodes, int64_t lets);
    /* Optional: a prepared program in a file (ax_program_save and
     * ax_program_load, driver/bundle.c, which writes and reads the
     * program).  save: appends to w what run needs besides the program;
     * 0, or -1 with an error on cx.  load: the state of p from what save
     * wrote (in, to be read to its end; its content hash checked, but
     * every field to be checked as hostile), with no compiler, its code
     * from link where the program was exported (else from the file); 0,
     * or -1 with an error on cx.  exportc: as save, for an exported
     * program: to w what load needs besides link, to c the C of the
     * kernels (their global names prefixed by name; compiled before
     * axle.h is included, whose names the kernels' may share), and to t
     * the table `static const ax_linked_fn <name>_fns[]` of them, ended by
     * {0, 0}, and `static const char <name>_isa[]`.
     * A backend without them cannot save or export. */
    int (*save)(ax_ctx *cx, const Program *p, void *state, struct Bytes *w);
    int (*load)(ax_ctx *cx, Program *p, struct Bytes *in, const BundleLink *link, void **state);
    int (*exportc)(ax_ctx *cx, const Program *p, void *state, const char *name, struct Bytes *w, struct Bytes *c,
                   struct Bytes *t);
} Backend;

/* Backend.run's status for "a kernel recorded a run-time fault on the
 * device: run this program again on the host".  A GPU backend's kernels
 * record only a fault's status code; the run on the host (host_rerun,
 * runtime/host.h, which the driver calls) reports the fault in full,
 * with the message every host backend gives.  The backend leaves
 * "<name>: a kernel reported a run-time fault (status <code>)" on the
 * context. */
#define AXB_RERUN_ON_HOST (-2)


#endif

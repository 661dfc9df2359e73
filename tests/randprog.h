/*
 * A generator of random well-typed axle programs, for differential testing
 * (docs/ARCHITECTURE.md, "Testing"): the same seed built in two contexts with different
 * backends or debug switches must give the same results.
 *
 * A program is built top-down from a randomly chosen result type: array
 * operations over random input arrays (ranks 0-3, small shapes including
 * empty and one-element ones; elements of every scalar type, tuples of them
 * and indices), with scalar functions that are random
 * expression trees over the lambda parameters, constants, closed scalar
 * terms and reads of other arrays.  Sharing is generated on purpose: array
 * terms, closed scalar terms and sub-expressions inside callbacks are kept
 * in pools and reused, so sharing recovery has real work to do.
 *
 * By construction the programs do not fault at run time (indices are
 * clamped into range, reads of arrays that may be empty are guarded by a
 * conditional, integer divisors are guarded, fold1 reads only non-empty
 * rows, segment lengths add up to the extent, loops are bounded), unless
 * cfg->faults asks for occasional unguarded divisions.
 *
 * Determinism: everything is derived from the seed (never from addresses
 * or the context), so the same seed gives the same program, the same
 * inputs and the same description in any context.
 *
 * Callbacks carry the generator state through their env pointer; axle
 * calls each exactly once, synchronously, while the operation is built.
 *
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_RANDPROG_H
#define AX_RANDPROG_H
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include "axle.h"

/* The kinds of construction the generator can make: array operations,
 * scalar operations, and the deliberate kinds of sharing.  Used for the
 * allow mask (RandProgConfig.ops) and the usage counts (randprog_counts). */
typedef enum RandOp {
    /* array operations */
    RP_USE, RP_UNIT, RP_GENERATE, RP_MAP, RP_ZIPWITH, RP_ZIPWITH3, RP_BACKPERMUTE, RP_PERMUTE,
    RP_REPLICATE, RP_SLICE, RP_RESHAPE, RP_FLATTEN, RP_FOLD, RP_FOLD1, RP_FOLDALL, RP_FOLDSEG,
    RP_FOLD1SEG, RP_SCANL, RP_SCANL1, RP_SCANR, RP_SCANR1, RP_SCANLEX, RP_SCANREX, RP_FILTER,
    RP_STENCIL, RP_STENCIL2, RP_ACOND, RP_AWHILE, RP_ATUPLE, RP_AGET, RP_SCANSEG, RP_COMPUTE, RP_SORT, RP_GROUP,
    /* shapes the planner (src/opt/plan*.c) rewrites: sibling folds over one
     * array combined by a zipWith; a fold (maybe of a map) of a filter; a
     * map kept and folds of it and of its input (one loop); two filters
     * of one vector, kept, and folds of the first (one loop); a map over
     * a fold's, a scan's or a stencil's result (an epilogue) */
    RP_SIBLINGS, RP_FILTERFOLD, RP_LOOPMAP, RP_LOOPFILTER, RP_EPILOGUE,
    /* scalar operations */
    RP_E_ARITH,     /* add sub mul neg abs signum                          */
    RP_E_MINMAX,    /* min max                                             */
    RP_E_INTDIV,    /* quot rem idiv mod div on integers (guarded)         */
    RP_E_FLOATDIV,  /* div on floats                                       */
    RP_E_BITS,      /* band bor bxor bnot shifts rotations popcount clz ctz */
    RP_E_FLOATFN,   /* exp log sqrt pow trig ... atan2 logbase             */
    RP_E_ROUND,     /* floor ceiling round truncate                        */
    RP_E_CMP,       /* eq ne lt le gt ge, is_nan, is_infinite              */
    RP_E_LOGIC,     /* and or not                                          */
    RP_E_CVT,       /* ax_cvt                                              */
    RP_E_BITCAST,   /* ax_bitcast                                          */
    RP_E_COND,      /* ax_cond                                             */
    RP_E_TUPLE,     /* ax_tuple                                            */
    RP_E_PROJ,      /* ax_get on tuples, ax_index_get on indices           */
    RP_E_AT,        /* ax_at (index clamped into range)                    */
    RP_E_ATLIN,     /* ax_at_linear                                        */
    RP_E_SHAPE,     /* ax_shape, ax_shape_size, ax_to_linear, ax_from_linear */
    RP_E_SIZE,      /* ax_size                                             */
    RP_E_WHILE,     /* ax_while with a bounded counter                     */
    RP_E_CONST,     /* ax_const (a constant made a term)                   */
    /* sharing made on purpose */
    RP_SHARE_ACC,    /* an array term used by two consumers               */
    RP_SHARE_EXP,    /* a scalar term used twice inside one callback      */
    RP_SHARE_CLOSED, /* a closed scalar term used by several operations   */
    RP_SHARE_INPUT,  /* one host array embedded by two ax_use             */
    RP_NOPS
} RandOp;

#define RP_BIT(op) (UINT64_C(1) << (op))

typedef struct RandProgConfig {
    int max_depth;         /* array-term depth (default 6)                        */
    int max_exp_depth;     /* scalar expression depth (default 4)                 */
    int max_nodes;         /* array operations per program (default 80)           */
    int max_rank;          /* 0..3 (default 3)                                    */
    int max_results;       /* top-level results, 1..4 (default 3)                 */
    int64_t max_elems;     /* elements of any array, a bound (default 2048)       */
    int64_t max_input;     /* elements of an input array (default 96)             */
    int max_stencil;       /* neighbourhood elements of a stencil (default 27)    */
    int64_t max_work;      /* estimated element operations of the program with
                              sharing unfolded (default 1000000)                   */
    int64_t max_unfolded;  /* estimated IR nodes of the program with sharing
                              unfolded (default 10000)                            */
    uint64_t ops;          /* RP_BIT mask of allowed kinds; 0 = all.  Inputs
                              (RP_USE) are made whenever nothing else fits, and
                              the guards that keep programs fault-free (cond,
                              comparisons, min/max clamps) are used regardless */
    int share_pct;         /* how often a compatible term is reused (default 30)  */
    bool float_reassoc;    /* float add in folds, scans and permute (order-
                              sensitive; results then need a tolerance; the
                              operands are first mapped into [0, 100] so that
                              a relative tolerance suffices) (default true)       */
    bool special_floats;   /* NaN, infinities, -0.0, denormals among float inputs
                              and constants (default true)                        */
    bool faults;           /* allow unguarded integer divisions, so that a program
                              may fail with AX_ERR_DIVZERO (default false)        */
} RandProgConfig;

/* The defaults above. */
void randprog_default_config(RandProgConfig *cfg);
/* A sweep's setting from the environment (seed counts, first seeds): the
 * integer in variable `name`, or dflt when unset, empty or malformed. */
long randprog_env_long(const char *name, long dflt);

typedef struct RandProg RandProg;

/* Builds, in context cx, a random program from seed (deterministic: the
 * same seed and configuration give the same program and inputs in any
 * context); also creates its input arrays in cx.  cfg may be NULL (the
 * defaults).  Returns the computation (a single array or a tuple of arrays,
 * to be run with ax_run_n), or NULL if building failed (a generator or
 * library bug: ax_error(cx) says why, randprog_describe shows the program
 * up to that point).  *state receives the generator state in either case;
 * free it with randprog_free.
 *
 * The inputs are embedded with ax_use and some of them borrow buffers that
 * *state owns: run the program before randprog_free.  The context may be
 * freed before or after randprog_free. */
ax_acc randprog_build(ax_ctx *cx, uint64_t seed, const RandProgConfig *cfg, RandProg **state);
/* Releases the generator state and the input buffers it owns. */
void randprog_free(RandProg *st);

/* Compares two results (same seed, two configurations): the same number of
 * arrays, element types and shapes exactly, integer and bool components
 * exactly, float components within |x - y| <= atol + rtol * max(|x|, |y|)
 * (NaN equals NaN, an infinity only itself).  Returns 1 if they agree,
 * else 0 with a description of the first difference in msg. */
int randprog_compare(ax_array *const *a, int na, ax_array *const *b, int nb, double rtol, double atol,
                     char *msg, size_t size);

/* A printable description of the program: its inputs and the sequence of
 * builder calls as text (shared terms appear as names used twice).  Valid
 * until randprog_free. */
const char *randprog_describe(const RandProg *st);

/* How many times the program used each RandOp (counts[RP_NOPS]). */
void randprog_counts(const RandProg *st, int *counts);
/* The name of a RandOp ("map", "e_while", "share_acc"). */
const char *randprog_op_name(int op);
/* The number of results the program returns (components of the tuple). */
int randprog_nresults(const RandProg *st);

#endif

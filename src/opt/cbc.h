/*
 * CBC as the ILP (ilp.c) uses it (cbc.c): the model it is given, and a
 * context's copy of the library.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#ifndef AX_OPT_CBC_H
#define AX_OPT_CBC_H

#include "plangraph.h"

/* A mixed integer linear program as ilp.c makes it: columns with bounds,
 * objective and integrality, rows as triplets with their bounds. */
typedef struct Model {
    int ncol, nrow, nx, nc, npi;
    /* columns: bounds, objective, integrality */
    double *lo, *hi, *obj;
    bool *integer;
    /* rows as triplets, then their bounds */
    int nz, capnz, caprow;
    int *ri, *ci;
    double *v, *rlo, *rhi;
    int capcol;
    int64_t constant;    /* the objective's part no variable carries */
    bool failed;
    /* counting: columns and rows are numbered and counted, nothing is
     * stored, and the transitivity rows (cubic in the loops) are counted
     * by a formula; nz is then an upper bound */
    bool counting;
    int64_t rows64, nz64;   /* the counts, which may pass INT_MAX */
    struct Bound *bd;       /* (NULL: no bounds; the memo's copies) */
    int64_t bytes;          /* charged to bd for the arrays */
} Model;


typedef struct CbcApi CbcApi;
/* CBC in a context (PlanState): loaded at the first solve, or why not. */
typedef struct CbcSolver {
    CbcApi *api;         /* NULL until loaded, and when loading failed */
    bool tried;          /* loading was tried */
    char why[160];       /* why it failed */
} CbcSolver;

/* CBC loaded into cbc (path: the file AXLE_CBC names, or NULL), the first
 * time with a warm-up solve whose time goes to *load_ms; false when it
 * cannot be (cbc->why says why). */
bool cbc_ready(CbcSolver *cbc, const char *path, double *load_ms);
/* Solves m within limit_ms of this thread's CPU time (cpu0: the clock
 * when the solve began); the solution in sol (m->ncol values).  0, or -1
 * with why. */
int cbc_solve(CbcSolver *cbc, const Model *m, double cpu0, double limit_ms, double *sol, char *why, size_t size);
void cbc_free(CbcSolver *cbc);
/* The clocks the planner's limits read: wall and this thread's CPU time,
 * in milliseconds. */
double plan_now_ms(void);
double plan_cpu_ms(void);

#endif /* AX_OPT_CBC_H */

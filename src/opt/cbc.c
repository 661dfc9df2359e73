/*
 * CBC (COIN-OR's branch and cut, EPL-2.0) for the ILP (ilp.c): its C
 * interface, declared here and loaded with dlopen at the first solve of a
 * context (libCbcSolver.so.3 or libCbcSolver.so, or the file AXLE_CBC
 * names), so that axle needs neither its headers nor its library to
 * build and runs without it; and the solve of a model within a time
 * limit of the solving thread's CPU time.
 *
 * CBC's solve (CbcMain1) keeps process-wide state and must not run on
 * two threads at once (coin-or/Cbc issue 332): solves are serialised by
 * one process-wide mutex, the only object of the kind in axle, which
 * holds no data; a solve that cannot take it within its time limit is
 * greedy.  CBC stays loaded once loaded (its C++ runtime state lives as
 * long as the process), as NVRTC does (src/backend/cuda/cuda.c).
 * SPDX-License-Identifier: BSD-3-Clause
 */
#define _GNU_SOURCE
#include "cbc.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct Cbc_Model Cbc_Model;   /* CBC's; opaque */

struct CbcApi {
    void *lib;
    const char *(*getVersion)(void);
    Cbc_Model *(*newModel)(void);
    void (*deleteModel)(Cbc_Model *);
    /* CoinBigIndex is int in CBC's default build (COIN_BIG_INDEX 0), which
     * every distribution ships */
    void (*loadProblem)(Cbc_Model *, int, int, const int *, const int *, const double *, const double *,
                        const double *, const double *, const double *, const double *);
    void (*setInteger)(Cbc_Model *, int);
    void (*setLogLevel)(Cbc_Model *, int);
    void (*setMaximumSeconds)(Cbc_Model *, double);
    int (*solve)(Cbc_Model *);
    int (*isProvenOptimal)(Cbc_Model *);
    int (*isSecondsLimitReached)(Cbc_Model *);
    const double *(*getColSolution)(Cbc_Model *);
    double (*getObjValue)(Cbc_Model *);
};

static pthread_mutex_t cbc_lock = PTHREAD_MUTEX_INITIALIZER;

double plan_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Loads CBC into api; false with the reason in why. */
static bool cbc_load(CbcApi *api, const char *path, char *why, size_t size)
{
    static const char *const names[] = {"libCbcSolver.so.3", "libCbcSolver.so", NULL};
    memset(api, 0, sizeof *api);
    const char *tried = path ? path : names[0], *err = NULL;
    dlerror();
    if (path) {
        api->lib = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
        if (!api->lib) err = dlerror();
    } else {
        for (int i = 0; names[i] && !api->lib; i++) {
            api->lib = dlopen(names[i], RTLD_LAZY | RTLD_LOCAL);
            if (!api->lib && !err) err = dlerror();
        }
    }
    if (!api->lib) {
        snprintf(why, size, "CBC is not installed: %.120s", err ? err : tried);
        return false;
    }
#define F(field, sym)                                             \
    do {                                                          \
        *(void **)&api->field = dlsym(api->lib, sym);             \
        if (!api->field) {                                        \
            snprintf(why, size, "CBC's library has no %s", sym);  \
            api->lib = NULL;                                      \
            return false;                                         \
        }                                                         \
    } while (0)
    F(getVersion, "Cbc_getVersion"); F(newModel, "Cbc_newModel"); F(deleteModel, "Cbc_deleteModel");
    F(loadProblem, "Cbc_loadProblem"); F(setInteger, "Cbc_setInteger"); F(setLogLevel, "Cbc_setLogLevel");
    F(setMaximumSeconds, "Cbc_setMaximumSeconds"); F(solve, "Cbc_solve"); F(isProvenOptimal, "Cbc_isProvenOptimal");
    F(isSecondsLimitReached, "Cbc_isSecondsLimitReached"); F(getColSolution, "Cbc_getColSolution");
    F(getObjValue, "Cbc_getObjValue");
#undef F
    return true;
}

/* CBC loaded in the context's state (the first time: loaded, and warmed by
 * a solve of a one-variable model, so that the time CBC spends paging
 * itself in is not counted against the first real solve's limit). */
bool cbc_ready(CbcSolver *cbc, const char *path, double *load_ms)
{
    if (cbc->tried) return cbc->api != NULL;
    cbc->tried = true;
    double t0 = plan_now_ms();
    CbcApi *api = ax__calloc(1, sizeof *api);
    if (!api) {
        snprintf(cbc->why, sizeof cbc->why, "out of memory (loading CBC)");
        return false;
    }
    if (!cbc_load(api, path, cbc->why, sizeof cbc->why)) {
        free(api);
        return false;
    }
    cbc->api = api;
    if (pthread_mutex_lock(&cbc_lock) == 0) {
        Cbc_Model *m = api->newModel();
        if (m) {
            int start[2] = {0, 1}, idx[1] = {0};
            double val[1] = {1}, lo[1] = {0}, hi[1] = {1}, obj[1] = {1}, rlo[1] = {0}, rhi[1] = {1};
            api->loadProblem(m, 1, 1, start, idx, val, lo, hi, obj, rlo, rhi);
            api->setInteger(m, 0);
            api->setLogLevel(m, 0);
            api->solve(m);
            api->deleteModel(m);
        }
        pthread_mutex_unlock(&cbc_lock);
    }
    *load_ms = plan_now_ms() - t0;
    return true;
}

double plan_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One CBC solve of m, as an ILP or (integer false) as its linear
 * relaxation; the solution in sol.  1 solved to optimality, 0 not (why
 * says), -1 on an error. */
static int cbc_run(CbcApi *api, const Model *m, const int *start, const int *idx, const double *val, bool integer,
                   double seconds, double *sol, char *why, size_t size)
{
    Cbc_Model *cm = api->newModel();
    if (!cm) {
        snprintf(why, size, "CBC could not make a model");
        return -1;
    }
    api->loadProblem(cm, m->ncol, m->nrow, start, idx, val, m->lo, m->hi, m->obj, m->rlo, m->rhi);
    for (int c = 0; integer && c < m->ncol; c++)
        if (m->integer[c]) api->setInteger(cm, c);
    api->setLogLevel(cm, 0);
    api->setMaximumSeconds(cm, seconds > 1e-6 ? seconds : 1e-6);
    api->solve(cm);
    const double *s = api->getColSolution(cm);
    int rc = 0;
    if (api->isSecondsLimitReached(cm)) snprintf(why, size, "CBC stopped at its time limit");
    else if (!api->isProvenOptimal(cm) || !s) snprintf(why, size, "CBC found no optimal solution");
    else {
        memcpy(sol, s, sizeof *sol * (size_t)m->ncol);
        rc = 1;
    }
    api->deleteModel(cm);
    return rc;
}

/* Solves m with CBC within limit_ms of this thread's CPU time (cpu0: the
 * clock when the solve began); the solution in sol (m->ncol values).  The
 * linear relaxation first (CBC then runs its simplex alone, a third of a
 * branch and cut's cost): where its optimum is integral it is the ILP's;
 * else the ILP.  0, or -1 with why. */
int cbc_solve(CbcSolver *cbc, const Model *m, double cpu0, double limit_ms, double *sol, char *why, size_t size)
{
    CbcApi *api = cbc->api;
    int nc = m->ncol;
    int *start = ax__calloc((size_t)nc + 1, sizeof *start), *idx = ax__calloc((size_t)(m->nz ? m->nz : 1), sizeof *idx);
    double *val = ax__calloc((size_t)(m->nz ? m->nz : 1), sizeof *val);
    int *at = ax__calloc((size_t)nc + 1, sizeof *at);
    if (!start || !idx || !val || !at) {
        free(start), free(idx), free(val), free(at);
        snprintf(why, size, "out of memory");
        return -1;
    }
    /* the triplets by column (compressed sparse columns) */
    for (int k = 0; k < m->nz; k++) start[m->ci[k] + 1]++;
    for (int c = 0; c < nc; c++) start[c + 1] += start[c];
    memcpy(at, start, sizeof *at * (size_t)nc);
    for (int k = 0; k < m->nz; k++) idx[at[m->ci[k]]] = m->ri[k], val[at[m->ci[k]]++] = m->v[k];
    free(at);
    /* one solve at a time in the process (CbcMain1 is not reentrant); the
     * wait is bounded by the limit in wall time */
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += (time_t)(limit_ms / 1e3);
    dl.tv_nsec += (long)((limit_ms - 1e3 * (double)(time_t)(limit_ms / 1e3)) * 1e6);
    if (dl.tv_nsec >= 1000000000L) dl.tv_sec++, dl.tv_nsec -= 1000000000L;
    if (pthread_mutex_timedlock(&cbc_lock, &dl) != 0) {
        snprintf(why, size, "CBC was busy in another thread for longer than the time limit of %g ms", limit_ms);
        free(start), free(idx), free(val);
        return -1;
    }
    int rc = cbc_run(api, m, start, idx, val, false, limit_ms / 1e3, sol, why, size);
    bool integral = rc == 1;
    for (int c = 0; c < nc && integral; c++)
        if (m->integer[c] && sol[c] > 1e-9 && sol[c] < 1 - 1e-9) integral = false;
    if (rc >= 0 && !integral) {
        double left = limit_ms - (plan_cpu_ms() - cpu0);
        rc = left > 0 ? cbc_run(api, m, start, idx, val, true, left / 1e3, sol, why, size) : 0;
    }
    pthread_mutex_unlock(&cbc_lock);
    free(start), free(idx), free(val);
    double took = plan_cpu_ms() - cpu0;
    if (rc == 1 && took > limit_ms) rc = 0;
    if (rc == 1) return 0;
    if (rc == 0 || took > limit_ms)
        snprintf(why, size, "the ILP took %.1f ms of CPU time, past the time limit of %g ms", took, limit_ms);
    return -1;
}

/* (CBC itself stays loaded: its C++ runtime state lives as long as the
 * process) */
void cbc_free(CbcSolver *cbc)
{
    free(cbc->api);
    cbc->api = NULL;
}

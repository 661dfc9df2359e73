/*
 * Fault injection for the tests (fault.h): the thread-local injector and
 * its counter.
 * SPDX-License-Identifier: BSD-3-Clause
 */
#include "fault.h"

_Thread_local AxFaults *ax__faults_tls;

AxFaults *ax__faults_install(AxFaults *f)
{
    AxFaults *old = ax__faults_tls;
    ax__faults_tls = f;
    return old;
}

const char *ax__fault_name(AxFaultKind k)
{
    static const char *const names[AX_FAULT_NKINDS] = {"alloc", "thread", "spawn", "dlopen", "write"};
    return (unsigned)k < AX_FAULT_NKINDS ? names[k] : "?";
}

bool ax__fault_slow(AxFaults *f, AxFaultKind k)
{
    int64_t n = ++f->seen[k];
    bool fail = f->fail_at[k] > 0 && (n == f->fail_at[k] || (f->persist[k] && n > f->fail_at[k]));
    if (fail) f->failed[k]++;
    return fail;
}

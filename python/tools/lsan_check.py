"""A pytest plugin for python/tools/test-san.sh: LeakSanitizer's check at
the end of the test session, before the interpreter finalises.

CPython does not free everything at exit, on purpose (module state,
interned objects, types), so LeakSanitizer's usual check at exit reports
the interpreter's and NumPy's objects by the hundred.  Before finalisation
they are all still reachable from the interpreter's globals, and what is
unreachable then was lost: an ax_array or a program whose last reference
was dropped without a release, a Python object whose reference count
never went to zero.  test-san.sh turns the check at exit off
(LSAN_OPTIONS=leak_check_at_exit=0) and this plugin runs it here, after
the session's fixtures are torn down; a leak fails the run.

SPDX-License-Identifier: BSD-3-Clause
"""
import ctypes
import gc

import pytest


def _lsan_check():
    """LeakSanitizer's check now: 1 when it found leaks (its report is on
    stderr), 0 when not; None when no sanitizer runtime is loaded."""
    try:
        check = ctypes.CDLL(None).__lsan_do_recoverable_leak_check
    except AttributeError:
        return None
    check.restype = ctypes.c_int
    check.argtypes = []
    return check()


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    # objects in reference cycles are garbage, not leaks: collect them first
    gc.collect()
    r = _lsan_check()
    if r is None:
        print("\nlsan_check: no LeakSanitizer in this process (run the tests with the sanitizer runtime "
              "preloaded, as python/tools/test-san.sh does)")
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
    elif r:
        print("\nlsan_check: LeakSanitizer found leaks (the report above)")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED

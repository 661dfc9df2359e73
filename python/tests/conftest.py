# SPDX-License-Identifier: BSD-3-Clause
import os

import numpy as np
import pytest

import axle

# the backends that run here: the interpreter and the C backend always,
# OpenCL when a platform answers (AXLE_PYTEST_OPENCL=0 leaves it out)
_BACKENDS = ["cpu", "interp"]


def _opencl_runs():
    if os.environ.get("AXLE_PYTEST_OPENCL", "1") == "0":
        return False
    try:
        with axle.context(backend="opencl", quiet=True):
            return float(axle.unit(axle.f32(1)).numpy()) == 1.0
    except axle.AxleError:
        return False


if _opencl_runs():
    _BACKENDS.append("opencl")


@pytest.fixture(params=_BACKENDS)
def backend(request):
    """Each backend that runs here, as the current context."""
    with axle.context(backend=request.param):
        yield request.param


@pytest.fixture
def rng():
    return np.random.default_rng(1234)

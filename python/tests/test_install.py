# `pip install ./python` and the README's one-liner, in a fresh folder (no
# build isolation: the packages pip would fetch are installed already by
# scripts/install-deps.sh; the CMake build of libaxle is shared through
# AXLE_CMAKE_BUILD_DIR when the Makefile sets it).
# SPDX-License-Identifier: BSD-3-Clause
import os
import subprocess
import sys

import pytest

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ONE_LINER = ("import axle, numpy as np; x = np.arange(10, dtype=np.float32); "
             "print(axle.fold(axle.add, 0, axle.zip_with(axle.mul, x, x)))")


@pytest.mark.skipif(os.environ.get("AXLE_PYTEST_INSTALL", "1") == "0", reason="AXLE_PYTEST_INSTALL=0")
def test_pip_install_and_the_dot_product(tmp_path):
    target = tmp_path / "site"
    env = dict(os.environ, PIP_ROOT_USER_ACTION="ignore", PIP_DISABLE_PIP_VERSION_CHECK="1")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-build-isolation", "--no-deps",
                        "--target", str(target), PKG], env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    env["PYTHONPATH"] = str(target)
    out = subprocess.run([sys.executable, "-c", ONE_LINER], env=env, capture_output=True, text=True,
                         timeout=300, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "285.0"
    # the installed copy was the one imported
    where = subprocess.run([sys.executable, "-c", "import axle; print(axle.__file__)"], env=env,
                           capture_output=True, text=True, cwd=str(tmp_path))
    assert where.stdout.startswith(str(target))

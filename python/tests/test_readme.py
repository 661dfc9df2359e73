# The examples of python/README.md run and print what the README shows: each
# ```python block followed by a ```text block (what it prints), and each
# `python3 -c "..."` line of a ```sh block followed by its output line.
# Numbers may differ in their last printed digit (the maths functions of
# the compiled backend and of the interpreter differ by a few ulps, which
# may move a rounding); the text around them must be the same.
# SPDX-License-Identifier: BSD-3-Clause
import os
import re
import subprocess
import sys

import pytest

README = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "README.md")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
NUM = re.compile(r"-?\d+(?:\.\d+)?")


def examples():
    """(name, program, expected output) for each example of the README."""
    with open(README) as f:
        text = f.read()
    blocks = [(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1) for m in FENCE.finditer(text)]
    out = []
    for (lang, body, line), nxt in zip(blocks, blocks[1:] + [(None, None, None)]):
        if lang == "python" and nxt[0] == "text":
            out.append(("README.md:%d" % line, body, nxt[1]))
        if lang == "sh":
            lines = body.splitlines()
            for i, cmd in enumerate(lines):
                m = re.match(r'^python3 -c "(.*)"$', cmd)
                if m and i + 1 < len(lines):
                    out.append(("README.md:%d" % (line + 1 + i), m.group(1), lines[i + 1] + "\n"))
    return out


def same(got, want):
    """The same text, numbers within one unit of want's last digit."""
    gt, wt = NUM.split(got), NUM.split(want)
    if [" ".join(t.split()) for t in gt] != [" ".join(t.split()) for t in wt]:
        return False
    for g, w in zip(NUM.findall(got), NUM.findall(want)):
        unit = 10.0 ** -len(w.split(".")[1]) if "." in w else 1.0
        if abs(float(g) - float(w)) > 1.0001 * unit:
            return False
    return True


def test_the_readme_has_its_examples():
    # the Black-Scholes example and the install's check, at least
    progs = [p for _, p, _ in examples()]
    assert len(progs) >= 2 and any("black_scholes(price" in p for p in progs)


@pytest.mark.parametrize("name,program,want", [pytest.param(*e, id=e[0]) for e in examples()])
def test_readme_example(name, program, want, tmp_path):
    # in a fresh folder and process, as a reader runs it
    r = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=600,
                       cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip(), "%s prints nothing" % name
    assert same(r.stdout, want), "%s printed\n%s\nwhere the README shows\n%s" % (name, r.stdout, want)


def test_same_compares_text_and_numbers():
    assert same("call  0.057, put 24.400\n", "call  0.057, put 24.400\n")
    assert same("call  0.058, put 24.399\n", "call  0.057, put 24.400\n")      # a last digit
    assert not same("call  0.059, put 24.400\n", "call  0.057, put 24.400\n")
    assert not same("call 0.057\n", "put 0.057\n")
    assert not same("285.0\n", "286.0\n")

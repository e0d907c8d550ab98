"""The review page's LaTeX finder on hostile text: linear time, same spans as the regex.

The old finder was one regular expression with lazy ``.+?`` bodies: on text full of
openers and no closer (``\\[`` × 16,000, 32 KB) every opener scanned to the end, 2.4 s per
render, so a generated answer could stall the review page for everyone. The spans must stay
exactly those of the regular expression, which is kept here as the reference.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys

import pytest

from assay.review.mathml import math_spans, render_math

REFERENCE = re.compile(
    r"\$\$(?P<d1>.+?)\$\$"
    r"|\\\[(?P<d2>.+?)\\\]"
    r"|\\\((?P<i1>.+?)\\\)"
    r"|(?<![\\$])\$(?P<i2>(?:\\.|[^$\\])+?)\$",
    re.S,
)


def reference_spans(text: str) -> list[tuple[int, int, str, str]]:
    out = []
    for m in REFERENCE.finditer(text):
        kind = next(k for k in ("d1", "d2", "i1", "i2") if m.group(k) is not None)
        out.append((m.start(), m.end(), kind, m.group(kind)))
    return out


def test_spans_equal_the_regular_expression_on_random_text() -> None:
    rng = random.Random(20261126)
    alphabet = ["$", "$$", "\\", "\\[", "\\]", "\\(", "\\)", "a", "x^2", " ", "\n", "[", ")"]
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 16)))
        assert list(math_spans(text)) == reference_spans(text), repr(text)


@pytest.mark.parametrize("text", [
    r"$a^2$ and $$\frac{1}{2}$$ and \(x\) and \[y\]", r"cost \$5 and $x$", r"$\$$",
    "$$$a$$", r"\\[x\]", "$ $", "$$", r"a\$b$c$", "$a\\", "\\[" * 5 + "\\]",
])
def test_spans_equal_the_regular_expression_on_edge_cases(text: str) -> None:
    assert list(math_spans(text)) == reference_spans(text)


@pytest.mark.parametrize("opener", ["\\[", "\\(", "$$", "$", "$a\\", "\\$$", "$\\[\\("])
def test_a_megabyte_of_unclosed_openers_renders(opener: str) -> None:
    """1 MB of openers with no closer: the old finder needed ~(1 MB / 32 KB)^2 x 2.4 s, about
    40 minutes; the guard below (a child process with a 300 s limit) only stops a hang."""
    code = ("import sys; from assay.review.mathml import render_math; "
            f"out = render_math({opener!r} * ({2**20} // len({opener!r}))); "
            "sys.stdout.write(str(len(out)))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) >= 2**19  # shown, as text (an escaped "\\$" shows as "$")


def test_rendering_is_unchanged_for_ordinary_math() -> None:
    html = str(render_math(r"area $\pi r^2$, cost \$3"))
    assert "<math" in html and "$3" in html and "cost" in html

"""A misspelt BFCL category names the one meant (issue 24, point 10): the real CLI in a
subprocess, one line on stderr, exit 2, nothing run."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(("given", "meant"), [("simple_pyton", "simple_python"),
                                               ("nonlive", "non_live"),
                                               ("live_multiple,paralel", "parallel")])
def test_a_misspelt_category_is_named_with_the_one_meant(given: str, meant: str) -> None:
    done = subprocess.run([sys.executable, "-m", "assay", "run", "bfcl", "--category", given,
                           "--model", "openai/fake", "--base-url", "http://127.0.0.1:9/v1"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    wrong = given.split(",")[-1]
    assert f"unknown BFCL category {wrong!r} (did you mean {meant!r}?); choose from " \
        in done.stderr
    assert done.stderr.strip().count("\n") == 0 and done.stdout == ""


def test_a_name_far_from_every_category_gets_no_guess() -> None:
    done = subprocess.run([sys.executable, "-m", "assay", "run", "bfcl", "--category", "zzz",
                           "--model", "openai/fake", "--base-url", "http://127.0.0.1:9/v1"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "unknown BFCL category 'zzz'; choose from" in done.stderr

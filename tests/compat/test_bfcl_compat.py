"""The book's BFCL evaluator refuses what it cannot do (the end-to-end book test, which
needs the official data, is ``test_book_api`` in tests/tasks/bfcl/test_bfcl_run.py)."""

from __future__ import annotations

import pytest

from assay.compat import BFCLEvaluator
from assay.errors import AssayError


def test_execution_mode_is_refused_until_it_exists() -> None:
    with pytest.raises(AssayError) as e:
        BFCLEvaluator(category="simple_python", evaluation_mode="execution")
    assert str(e.value) == "execution mode is not implemented yet; use evaluation_mode='ast'"
    with pytest.raises(AssayError, match="unknown evaluation_mode 'exec'; use evaluation_mode='ast'"):
        BFCLEvaluator(evaluation_mode="exec")
    assert BFCLEvaluator(evaluation_mode="ast").evaluation_mode == "ast"

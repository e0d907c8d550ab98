"""``samples.csv``: a stored run's samples, one row each, for spreadsheets (``assay report
RUN --csv``). Quoting is the stdlib ``csv`` module's; a text cell that a spreadsheet would
read as a formula gets a leading ``'`` (OWASP's advice on CSV injection)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_open
from assay.reports.values import sample_cost
from assay.store.sqlite import Store

__all__ = ["FORMULA_START", "csv_text", "write_samples_csv"]

#: what a spreadsheet reads as the start of a formula (OWASP: = + - @, tab, carriage return)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
#: the columns before and after the scores (one ``score:NAME`` column per score)
HEAD = ("sample_id", "epoch", "input", "target", "output", "answer")
TAIL = ("error", "latency_s", "input_tokens", "output_tokens", "cost_usd")


def csv_text(value: Any) -> str:
    """A text cell: a non-string as JSON; one a spreadsheet would run as a formula, quoted."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=str)
    return "'" + text if text.startswith(FORMULA_START) else text


def _number(value: Any) -> Any:
    """A number we computed, as is (never prefixed: -0.5 stays a number); else text."""
    if value is None:
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    return csv_text(value)


def write_samples_csv(store: Store, run_id: str, path: Path) -> Path:
    """``path`` (written whole or not at all): a header, then one row per sample and epoch
    in dataset order, every score's value in a ``score:NAME`` column."""
    names: dict[str, None] = {}  # every score's name, in the order first seen
    for r in store.iter_results(run_id, transcripts=False, texts=False):
        names.update(dict.fromkeys(r.scores))
    with atomic_open(path) as f:
        # "\n" ends a row: the file is opened as text, which writes the platform's own
        out = csv.writer(f, lineterminator="\n")
        out.writerow([*HEAD, *(csv_text(f"score:{n}") for n in names), *TAIL])
        for r in store.iter_results(run_id, transcripts=False):
            out.writerow([csv_text(r.sample_id), r.epoch, csv_text(r.input),
                          csv_text(r.target), csv_text(r.output), csv_text(r.prediction),
                          *(_number((r.scores.get(n) or {}).get("value")) for n in names),
                          csv_text(r.error), _number(r.latency_s), _number(r.input_tokens),
                          _number(r.output_tokens), _number(sample_cost(r.outcome))])
    return path

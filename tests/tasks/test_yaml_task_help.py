"""A YAML task file's facts win over the ``qa`` task's (issue 24, point 7): ``assay run
FILE.yaml --help`` shows the file's values as the defaults, never ``qa``'s own ("inferred"
scorer, 256 tokens) where the file sets them; a run's report says the file's
description. The real CLI in a subprocess, and a real run against the fake server."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import assay
from assay.reports.summary import write_summary
from assay.store.sqlite import Store


def help_of(path: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "assay", "run", str(path), "--help"],
                          capture_output=True, text=True, timeout=120, cwd=path.parent)
    assert done.returncode == 0, done.stderr
    return re.sub(r"\s+", " ", done.stdout)  # click wraps the help: compare the words


def write_task(folder: Path, extra: str) -> Path:
    (folder / "caps.jsonl").write_text(json.dumps({"q": "Capital of France?", "a": "Paris"})
                                       + "\n", encoding="utf-8")
    path = folder / "caps.yaml"
    path.write_text("name: caps\ndescription: Capitals.\nsource: {file: caps.jsonl}\n"
                    "fields: {question: record.q, answer: record.a}\n" + extra,
                    encoding="utf-8")
    return path


def test_the_help_shows_the_files_scorer_and_max_tokens(tmp_path: Path) -> None:
    text = help_of(write_task(tmp_path, "generation: {max_tokens: 32}\n"
                                        "metrics: {primary: includes}\n"))
    scorer = text[text.index("--scorer TEXT"):text.index("--tolerance")]
    assert "[default: includes]" in scorer and "inferred" not in scorer
    tokens = text[text.index("--max-tokens INTEGER"):text.index("-T, --task-option")]
    assert "[default: 32]" in tokens and "256" not in tokens
    assert "[default: q]" in text and "[default: a]" in text


def test_what_the_file_leaves_unset_keeps_the_tasks_own_default(tmp_path: Path) -> None:
    text = help_of(write_task(tmp_path, ""))
    scorer = text[text.index("--scorer TEXT"):text.index("--tolerance")]
    assert "(default: inferred)" in scorer and "[default:" not in scorer
    tokens = text[text.index("--max-tokens INTEGER"):text.index("-T, --task-option")]
    assert "(default 256)" in tokens


def test_a_runs_report_describes_the_task_by_its_file(tmp_path: Path, fake_server) -> None:
    srv = fake_server(rules=[], default_reply="Answer: Paris")
    result = assay.evaluate(str(write_task(tmp_path, "")), model="openai/fake",
                            base_url=srv.base_url, quiet=True)
    store = Store()
    try:
        assert store.get_run(result.run_id)["report"]["description"] == "Capitals."
        md = write_summary(store, result.run_id)["summary_markdown"].read_text()
    finally:
        store.close()
    assert "- Task: caps — Capitals.\n" in md and "Generic question answering" not in md

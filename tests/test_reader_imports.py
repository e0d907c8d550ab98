"""Readers read the store and nothing else of a run (DESIGN.md, "One path for the data"):
``assay report``, ``assay report --summary``, ``assay compare``, ``assay history`` and
``assay view`` serving its pages load no module of ``assay.tasks``, ``assay.models``,
``assay.engine`` or ``assay.sandbox``, in a process of their own, over a store made by
real runs. import-linter's second contract sees the imports written in the readers; this
sees what they load when they run (an entry point, a registry looked up)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest

from assay.api import make_spec, run_async
from assay.engine.loop import run
from assay.store.sqlite import Store
from assay.testing import FakeServer, Rule

FORBIDDEN = ("assay.tasks", "assay.models", "assay.engine", "assay.sandbox")
#: runs the CLI in this process; at its exit, writes the forbidden modules it loaded
WRAPPER = f"""
import atexit, json, os, sys
def loaded():
    names = sorted(m for m in sys.modules if m.startswith({FORBIDDEN!r}))
    with open(os.environ["ASSAY_TEST_MODULES"], "w") as f:
        json.dump({{p: [m for m in names if m == p or m.startswith(p + ".")]
                   for p in {FORBIDDEN!r}}}, f)
atexit.register(loaded)
sys.argv = ["assay", *sys.argv[1:]]
from assay.cli.main import main
main()
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """``(workspace, run a, run b)``: two finished qa runs made by the engine over HTTP
    from the fake server (a answers 3 of 6 questions right, b 4)."""
    home = tmp_path_factory.mktemp("readers") / "home"
    data = home.parent / "d.jsonl"
    data.write_text("".join(json.dumps({"question": f"Repeat after me: w{i}",
                                        "answer": f"w{i}"}) + "\n" for i in range(6)))
    store = Store(home / "assay.db")
    ids = []
    try:
        for right in (r"w[0-2]\b", r"w[0-3]\b"):
            with FakeServer(rules=[Rule(rf"Repeat after me: ({right})", "Answer: \\1")],
                            default_reply="Answer: no idea") as srv:
                spec = make_spec("qa", "openai/fake", base_url=srv.base_url, data=str(data),
                                 cache=False)
                ids.append(run(run_async(spec, store=store, reports=False)).run_id)
    finally:
        store.close()
    return home, ids[0], ids[1]


def _env(home: Path, out: Path) -> dict[str, str]:
    return {**os.environ, "ASSAY_HOME": str(home), "ASSAY_TEST_MODULES": str(out)}


def _loaded(out: Path) -> dict[str, list[str]]:
    return json.loads(out.read_text())


def _cli(home: Path, tmp_path: Path, *args: str) -> tuple[str, dict[str, list[str]]]:
    out = tmp_path / "modules.json"
    p = subprocess.run([sys.executable, "-c", WRAPPER, *args], env=_env(home, out),
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout, _loaded(out)


@pytest.mark.parametrize("command", ["report", "summary", "compare", "history"])
def test_a_reader_command_loads_no_task_model_engine_or_sandbox_module(
        home: tuple[Path, str, str], tmp_path: Path, command: str) -> None:
    workspace, a, b = home
    args = {"report": ["report", a, "--out", str(tmp_path / "r")],
            "summary": ["report", a, "--summary", "--out", str(tmp_path / "s")],
            "compare": ["compare", a, b], "history": ["history", "qa"]}[command]
    stdout, loaded = _cli(workspace, tmp_path, *args)
    shown = {"report": "normalized_match 0.500", "summary": "50.0%",
             "compare": "normalized_match 0.667", "history": "normalized_match 0.667"}[command]
    written = {"report": tmp_path / "r" / "report.md", "summary": tmp_path / "s" / "summary.md"}
    text = written[command].read_text() if command in written else stdout
    assert shown in text, text[:2000]
    assert {p: len(m) for p, m in loaded.items()} == dict.fromkeys(FORBIDDEN, 0), loaded


def test_the_viewer_loads_no_task_model_engine_or_sandbox_module(
        home: tuple[Path, str, str], tmp_path: Path) -> None:
    workspace, a, b = home
    store = Store(workspace / "assay.db", readonly=True)
    sample = next(r.sample_id for r in store.results(a) if "w1" in str(r.input))
    store.close()
    out = tmp_path / "modules.json"
    with subprocess.Popen([sys.executable, "-c", WRAPPER, "view", "--no-browser"],
                          env=_env(workspace, out), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, cwd=tmp_path) as view:
        try:
            line = view.stdout.readline() if view.stdout else ""
            assert line.startswith("assay view: http://127.0.0.1:"), (
                line, view.stderr.read() if view.stderr else "")
            url = line.split(": ", 1)[1].strip().rstrip("/")
            pages = {"/": a, f"/run/{a}": "normalized_match",
                     f"/run/{a}/sample/{quote(sample, safe='')}": "Answer: w1",
                     f"/compare?a={a}&b={b}": b, f"/search?q=w4&run={a}": "w4"}
            for path, shown in pages.items():
                with urllib.request.urlopen(url + path, timeout=60) as r:  # noqa: S310
                    assert r.status == 200, path
                    assert shown in r.read().decode(), path
        finally:
            os.kill(view.pid, signal.SIGINT)
            view.communicate(timeout=60)
    assert view.returncode == 0
    loaded = _loaded(out)
    assert {p: len(m) for p, m in loaded.items()} == dict.fromkeys(FORBIDDEN, 0), loaded

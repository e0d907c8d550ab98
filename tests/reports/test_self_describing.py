"""A run describes itself: its metrics, headline and report data are stored when it ends,
and every reader (reports, summary, viewer, compare, history) reads them from the store.

A run of a ``@task`` file still reports, views, compares and has a history once the file
is deleted; and no reader calls a task's code (``task_class``, ``Task.metrics``,
``Task.report_extra``) or writes the store.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from assay.testing import FakeServer, Rule
from tests.patching import patch_everywhere

RULES = [Rule(r"Repeat after me: (\S+)", "Answer: \\1")]

#: a task of its own: a second rate named as its headline (the generic fallback would
#: pick ``double``, its score's, the first), a report section and a recommendation
TASK_FILE = '''
from assay import Sample, Score, Task, task
from assay.metrics.stats import proportion


def check(sample, outcome):
    return Score("double", float(outcome.output.strip() == "Answer: " + sample.target),
                 outcome.output)


@task
class Halves(Task):
    description = "Doubling numbers, with a section of its own."
    headline_metric = "doubled"

    def __init__(self, **options):
        super().__init__(samples=[Sample(str(i), f"Repeat after me: {2 * i}",
                                         str(2 * i if i != 3 else 7)) for i in range(4)],
                         scorer=check, options=options)

    @classmethod
    def metrics(cls, results, options=None):
        out = super().metrics(results, options)
        ok = [r for r in results if r.error is None]
        out["doubled"] = proportion(sum(r.score_value() == 1.0 for r in ok), len(ok))
        return out

    @classmethod
    def report_extra(cls, metrics, results):
        return {"sections": [{"title": "Doubling notes", "headers": ["samples", "doubled"],
                              "rows": [[len(results), metrics["doubled"]["successes"]]]}],
                "recommendations": ["Double-check sample 3."]}
'''

HEADLINE = "doubled 0.750"


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd)


def run_task_file(path: Path, server: FakeServer) -> str:
    p = cli("run", f"{path}@halves", "--model", "openai/fake", "--base-url", server.base_url,
            "-q", "--no-cache")
    assert p.returncode == 0, p.stderr
    first, second = p.stdout.splitlines()[:2]
    assert second.startswith("doubled: 0.750") and "(3/4)" in second, p.stdout
    return first.split()[1]


def get(url: str) -> tuple[int, str]:
    with urllib.request.urlopen(url, timeout=30) as r:  # noqa: S310 - 127.0.0.1 only
        return r.status, r.read().decode()


@pytest.fixture
def gone_task_runs(workspace: Path, tmp_path: Path) -> tuple[str, str]:
    """Two finished runs of a ``@task`` file, whose file is then deleted."""
    folder = tmp_path / "usertasks"
    folder.mkdir()
    path = folder / "mytasks.py"
    path.write_text(TASK_FILE)
    with FakeServer(rules=RULES) as srv:
        a = run_task_file(path, srv)
        b = run_task_file(path, srv)
    shutil.rmtree(folder)
    return a, b


def test_a_run_of_a_deleted_task_file_reports_views_compares_and_has_a_history(
        gone_task_runs: tuple[str, str], workspace: Path, tmp_path: Path) -> None:
    a, b = gone_task_runs
    db = workspace / "assay.db"
    before = db.read_bytes()
    p = cli("report", a)
    assert p.returncode == 0, p.stderr
    md = (workspace / "runs" / a / "report.md").read_text()
    html = (workspace / "runs" / a / "report.html").read_text()
    assert f"**{HEADLINE} [" in md and "(3/4)" in md
    assert "Doubling notes" in md and "Double-check sample 3." in md
    assert "Doubling notes" in html and HEADLINE in html
    assert len((workspace / "runs" / a / "results.jsonl").read_text().splitlines()) == 4
    p = cli("report", a, "--summary", "--out", str(tmp_path / "summary"))
    assert p.returncode == 0, p.stderr
    summary = (tmp_path / "summary" / "summary.md").read_text()
    assert "Doubling numbers, with a section of its own." in summary and "75.0%" in summary
    p = cli("compare", a, b)
    assert p.returncode == 0, p.stderr
    assert p.stdout.count(HEADLINE) == 2, p.stdout
    p = cli("history", "halves")
    assert p.returncode == 0, p.stderr
    assert p.stdout.count(HEADLINE) == 2 and a in p.stdout and b in p.stdout, p.stdout
    with subprocess.Popen([sys.executable, "-m", "assay", "view", "--no-browser"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as view:
        try:
            line = view.stdout.readline() if view.stdout else ""
            assert line.startswith("assay view: http://127.0.0.1:"), (
                line, view.stderr.read() if view.stderr else "")
            url = line.split(": ", 1)[1].strip().rstrip("/")
            status, page = get(f"{url}/run/{a}")
            assert status == 200
            assert '<span class="muted">doubled</span> <strong>0.750 [' in page
            assert "(3/4)" in page
            status, page = get(f"{url}/run/{a}/sample/3")
            assert status == 200 and "Answer: 6" in page
            status, page = get(f"{url}/")
            assert status == 200 and page.count('doubled</span> 0.750 [') == 2
        finally:
            os.kill(view.pid, signal.SIGINT)
            view.communicate(timeout=60)
    # every reader read; none wrote the store (reports went to files beside it)
    assert db.read_bytes() == before


def _no_task_code(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make every way into a task's code count its call and fail; returns the calls."""
    import assay.tasks.registry as registry
    from assay.tasks.base import Task

    calls: list[str] = []

    def refuse(what: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            calls.append(what)
            raise AssertionError(f"a reader called {what}")
        return call

    for name in ("task_class", "resolve", "build_task"):
        patch_everywhere(monkeypatch, registry, name, refuse(name))
    classes, todo = {Task}, [Task]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in classes:
                classes.add(sub)
                todo.append(sub)
    for cls in classes:
        for name in ("metrics", "report_extra", "write_artifacts"):
            if name in cls.__dict__:
                monkeypatch.setattr(cls, name, classmethod(refuse(f"{cls.__name__}.{name}")))
    return calls


async def test_readers_call_no_task_code_and_write_nothing(workspace: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    from click.testing import CliRunner

    from assay.api import make_spec, run_async
    from assay.cli.app import app
    from assay.compare import compare_runs
    from assay.compare.history import task_history
    from assay.reports.render import write_reports
    from assay.reports.summary import write_summary
    from assay.store.sqlite import Store
    from assay.web.server import serve

    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"question": f"Repeat after me: w{i}",
                                        "answer": f"w{i}" if i % 4 else "x"}) + "\n"
                            for i in range(8)))
    with FakeServer(rules=RULES) as srv:
        runs = [await run_async(make_spec("qa", "openai/fake", base_url=srv.base_url,
                                          data=str(data), cache=False)) for _ in range(2)]
    a, b = runs[0].run_id, runs[1].run_id
    calls = _no_task_code(monkeypatch)
    store = Store()
    db = store.path
    store._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    wal = db.with_name(db.name + "-wal")

    def contents() -> tuple[bytes, bytes]:
        return db.read_bytes(), wal.read_bytes() if wal.exists() else b""

    before = contents()
    sample = quote(store.results(a, transcripts=False)[1].sample_id, safe="")
    try:
        paths = write_reports(store, a, tmp_path / "r")
        assert "**normalized_match 0.750" in paths["markdown"].read_text()
        write_summary(store, a, tmp_path / "s")
        assert compare_runs(store, a, b)["a"]["headline"].startswith("normalized_match 0.750")
        hist = task_history(store, "qa")
        assert [p["metric_name"] for p in hist["points"]] == ["normalized_match"] * 2
    finally:
        store.close()
    result = CliRunner().invoke(app, ["report", a, "--out", str(tmp_path / "cli")])
    assert result.exit_code == 0, result.output
    url, runner = await serve(store_path=db)
    try:
        import aiohttp

        async with aiohttp.ClientSession() as session:
            for path, shown in (("/", "normalized_match"), (f"/run/{a}", "normalized_match"),
                                (f"/run/{a}/sample/{sample}", "Answer: w1"),
                                (f"/compare?a={a}&b={b}", b)):
                async with session.get(url.rstrip("/") + path) as r:
                    assert r.status == 200, path
                    assert shown in await r.text(), path
    finally:
        await runner.cleanup()
    assert calls == []
    assert contents() == before

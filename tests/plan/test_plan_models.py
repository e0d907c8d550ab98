"""``assay run plan.yaml --model A --model B`` (issue 35, grids): every task of the plan on
every model, each a child run of the one plan run, with the paired tests per task at the
end (Holm-adjusted across the plan); a model that fails is resumed alone. The real CLI in a
subprocess, a real fake OpenAI-compatible server, the real store, the viewer over HTTP."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from assay.testing.fake_replies import last_user_text
from assay.web.server import serve
from tests.browser import ServedInThread
from tests.storedb import rows

#: per task: its name and how many of its 8 questions openai/good answers right
#: (openai/bad answers only the first of each)
TASKS = (("alpha", 8), ("beta", 6))


def cli(*args: str, cwd: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd,
                          env=dict(os.environ, ASSAY_HOME=str(home), COLUMNS="80",
                                   NO_COLOR="1", OPENAI_API_KEY="k"))


def write_plan(folder: Path) -> Path:
    tasks = []
    for name, _ in TASKS:
        (folder / f"{name}.jsonl").write_text("".join(
            json.dumps({"id": f"{name}{i}", "question": f"{name} q{i}?", "answer": f"a{i}"})
            + "\n" for i in range(8)))
        tasks.append({"task": "qa", "source": "builtin", "options": {"data": f"{name}.jsonl"},
                      "capabilities": ["reading", name],
                      "metrics": [{"name": "exact_match", "role": "primary"}]})
    path = folder / "plan.yaml"
    path.write_text(json.dumps({"assay_plan": 1, "request": "two qa sets", "tasks": tasks}))
    return path


def responder(down: set[str]) -> Any:
    right = dict(TASKS)

    def reply(body: dict[str, Any]) -> Any:
        if body["model"] in down:
            return {"status": 503, "error": "model is loading"}
        name, i = re.search(r"(alpha|beta) q(\d)\?", last_user_text(body)).groups()
        good = int(i) < right[name] if body["model"] == "good" else i == "0"
        return f"Answer: a{i}" if good else "Answer: nope"
    return reply


def test_a_plan_on_two_models_runs_every_task_on_each_with_the_paired_tests(
        tmp_path: Path, fake_server: Any) -> None:
    home = tmp_path / "home"
    plan = write_plan(tmp_path)
    srv = fake_server(responder=responder(set()))
    p = cli("run", str(plan), "--model", "openai/good", "--model", "openai/bad",
            "--base-url", srv.base_url, "-q", cwd=tmp_path, home=home)
    assert p.returncode == 0, (p.stdout, p.stderr)
    db = home / "assay.db"
    (pid, kind, status), = rows(db, "SELECT id, kind, status FROM runs WHERE parent_id IS NULL")
    assert (kind, status) == ("plan", "finished")
    children = rows(db, "SELECT json_extract(spec, '$.model'), json_extract(spec, "
                    "'$.task_options.data'), status FROM runs WHERE parent_id = "
                    f"'{pid}' ORDER BY created_at, id")
    assert sorted((m, Path(d).stem, s) for m, d, s in children) == [
        (f"openai/{m}", t, "finished") for m in ("bad", "good") for t in ("alpha", "beta")]
    # every question asked once of each model, nothing more
    assert sorted(b["model"] for b in srv.requests) == ["bad"] * 16 + ["good"] * 16
    out = p.stdout
    assert f"plan run {pid}: 4 of 4 runs made (2 tasks on 2 models)" in out, out
    good, bad = out.index("openai/good:\n"), out.index("openai/bad:\n")
    assert "qa (task 1): exact_match 1.000" in out[good:bad]
    assert "qa (task 2): exact_match 0.750" in out[good:bad]
    assert "qa (task 1): exact_match 0.125" in out[bad:]
    # McNemar's exact test per task: alpha 7 discordant (p = 2 * 0.5**7), beta 5
    # (p = 2 * 0.5**5); Holm across the plan's two tests: 2 * 0.0156 and max(0.0625, ...)
    summary = rows(db, f"SELECT metrics FROM runs WHERE id = '{pid}'")[0][0]
    summary = json.loads(summary)
    assert summary["models"] == ["openai/good", "openai/bad"] and summary["n_tests"] == 2
    pairs = [c["pairs"] for c in summary["comparisons"]]
    assert [len(x) for x in pairs] == [1, 1]
    assert [round(x[0]["p_value"], 6) for x in pairs] == [0.015625, 0.0625]
    assert [round(x[0]["p_holm"], 6) for x in pairs] == [0.03125, 0.0625]
    assert [x[0]["n"] for x in pairs] == [8, 8]
    assert "paired tests on the samples both scored" in out  # wrapped at 80 columns
    assert re.search(r"qa \(task 1\): openai/bad vs openai/good: -0\.875 .* p=0\.0156,\s+Holm"
                     r"\s+0\.0312", out), out
    per_model = {s["model"]: [t["value"]["value"] for t in s["tasks"]]
                 for s in summary["per_model"]}
    assert per_model == {"openai/good": [1.0, 0.75], "openai/bad": [0.125, 0.125]}
    # the report: the tests, then each model's profile and tasks
    md = (home / "runs" / pid / "report.md").read_text()
    assert "## Paired tests per task" in md and "p=0.0156, Holm 0.0312" in md
    assert "## model 1 of 2: openai/good" in md and "## model 2 of 2: openai/bad" in md
    # the viewer's page of the plan run links all four children and names both models
    served = ServedInThread(serve(store_path=db))
    try:
        with urllib.request.urlopen(f"{served.base}/run/{pid}", timeout=30) as r:
            html = r.read().decode()
    finally:
        served.close()
    section = html[html.index('id="plan-results"'):html.index('id="children"')]
    ids = [c for c, in rows(db, f"SELECT id FROM runs WHERE parent_id = '{pid}'")]
    assert all(f'href="/run/{c}"' in section for c in ids) and len(ids) == 4
    assert "model 1 of 2: openai/good" in section and "Paired tests per task" in section
    assert "a child run per task of the plan on each model" in html


def test_a_model_that_fails_in_a_plan_is_resumed_alone(tmp_path: Path,
                                                       fake_server: Any) -> None:
    home = tmp_path / "home"
    plan = write_plan(tmp_path)
    down = {"bad"}
    srv = fake_server(responder=responder(down))
    p = cli("run", str(plan), "--model", "openai/good", "--model", "openai/bad",
            "--base-url", srv.base_url, "--max-retries", "0", "-q", cwd=tmp_path, home=home)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "openai/bad: qa (task 1): the run failed" in p.stderr, p.stderr
    pid = p.stdout.split()[2]
    down.clear()
    srv.reset()
    again = cli("run", str(plan), "--resume", pid, "-q", cwd=tmp_path, home=home)
    assert again.returncode == 0, (again.stdout, again.stderr)
    assert "[1/2] qa on openai/good: finished before" in again.stdout, again.stdout
    # only the failed model's samples are asked again: none of the finished model's
    assert sorted(b["model"] for b in srv.requests) == ["bad"] * 16
    db = home / "assay.db"
    assert rows(db, "SELECT status, COUNT(*) FROM runs GROUP BY status") == [("finished", 5)]
    summary = json.loads(rows(db, f"SELECT metrics FROM runs WHERE id = '{pid}'")[0][0])
    assert [round(c["pairs"][0]["p_value"], 6) for c in summary["comparisons"]] == [
        0.015625, 0.0625]


def test_a_model_given_twice_to_a_plan_is_refused(tmp_path: Path, fake_server: Any) -> None:
    home = tmp_path / "home"
    plan = write_plan(tmp_path)
    srv = fake_server(responder=responder(set()))
    p = cli("run", str(plan), "--model", "openai/good", "--model", "openai/good",
            "--base-url", srv.base_url, cwd=tmp_path, home=home)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert p.stderr.strip() == ("error: --model openai/good is given more than once; give "
                                "each model once")
    assert srv.requests == []
    assert not (home / "assay.db").exists() or rows(
        home / "assay.db", "SELECT COUNT(*) FROM runs") == [(0,)]

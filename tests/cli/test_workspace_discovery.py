"""Where the workspace is, found as git finds ``.git`` (issue 34, point 3): ``$ASSAY_HOME``;
else the nearest ``assay-runs/`` holding ``assay.db`` here or above; else ``./assay-runs``,
made only by a command that writes. ``assay list runs`` creates nothing, lists every run and
keeps each row on one line of 80 columns. The real CLI in a subprocess, ``ASSAY_HOME``
unset, in folders under ``tmp_path``; runs against a real fake OpenAI-compatible server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from assay.store.sqlite import Store
from assay.testing import Rule

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "qa_example.jsonl"
CAPITALS = [Rule(r"capital of France", "Answer: Paris"), Rule(r"capital of Italy", "Answer: Rome")]
LONG = ("openai/meta-llama/Llama-3.3-70B-Instruct-Turbo-Free",
        "openai/qwen/Qwen2.5-72B-Instruct-Turbo-Preview-2025")
NO_WORKSPACE = ("no runs yet: no workspace here or above (runs go to ./assay-runs, or set "
                "ASSAY_HOME)")


def assay(*args: str, cwd: Path, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real ``assay`` in ``cwd`` with ``ASSAY_HOME`` unset (or ``home``), 80 columns."""
    env = {k: v for k, v in os.environ.items() if k not in ("ASSAY_HOME", "COLUMNS")}
    env.update(COLUMNS="80", NO_COLOR="1", **({"ASSAY_HOME": str(home)} if home else {}))
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, timeout=300, cwd=cwd, env=env)


def fresh(path: Path) -> Path:
    """``path``, made; no folder above it may hold a workspace, or discovery would find it."""
    path.mkdir(parents=True, exist_ok=True)
    above = [p / "assay-runs" for p in path.parents if (p / "assay-runs" / "assay.db").is_file()]
    assert not above, f"a workspace above the test's folder would be found: {above}"
    return path


@contextmanager
def opened(path: Path, **kw: Any) -> Iterator[Store]:
    store = Store(path, **kw)
    try:
        yield store
    finally:
        store.close()


def files_under(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def qa_run(url: str, cwd: Path, *models: str) -> subprocess.CompletedProcess[str]:
    flags = [a for m in models or ("openai/fake",) for a in ("--model", m)]
    p = assay("run", "qa", "--data", str(EXAMPLE), *flags, "--base-url", url, "--limit", "2",
              "--max-retries", "0", "-q", cwd=cwd)
    assert p.returncode == 0, (p.stdout, p.stderr)
    return p


def test_list_runs_in_a_fresh_folder_says_so_and_creates_nothing(tmp_path: Path) -> None:
    here = fresh(tmp_path / "fresh")
    p = assay("list", "runs", cwd=here)
    assert (p.returncode, p.stdout, p.stderr) == (0, NO_WORKSPACE + "\n", ""), p
    for flag, out in (("--json", "[]\n"), ("--jsonl", "")):
        p = assay("list", "runs", flag, cwd=here)
        assert (p.returncode, p.stdout, p.stderr) == (0, out, ""), (flag, p)
    assert files_under(here) == []  # no assay-runs/, no assay.db


def test_reading_commands_in_a_fresh_folder_create_no_workspace(tmp_path: Path) -> None:
    here = fresh(tmp_path / "fresh")
    for args in (["list", "runs", "--limit", "3"], ["history", "qa"],
                 ["compare", "20260101-000000-aaaaaa", "20260101-000000-bbbbbb"],
                 ["report", "20260101-000000-aaaaaa"]):
        p = assay(*args, cwd=here)
        assert "Traceback" not in p.stderr, (args, p.stderr)
        assert files_under(here) == [], args


def test_assay_home_with_no_store_is_named_and_left_alone(tmp_path: Path) -> None:
    here, home = fresh(tmp_path / "fresh"), tmp_path / "home"
    p = assay("list", "runs", cwd=here, home=home)
    assert (p.returncode, p.stdout) == (0, f"no runs yet: $ASSAY_HOME ({home}) holds no "
                                           "assay.db\n"), p
    assert not home.exists() and files_under(here) == []


def test_a_run_from_a_sub_folder_goes_to_the_workspace_above(tmp_path: Path,
                                                             fake_server) -> None:
    srv = fake_server(rules=CAPITALS)
    proj = fresh(tmp_path / "proj")
    sub = proj / "src" / "deep"
    sub.mkdir(parents=True)
    first = qa_run(srv.base_url, proj)
    assert "workspace:" not in first.stderr  # the workspace is here: nothing to say
    second = qa_run(srv.base_url, sub)
    assert not (sub / "assay-runs").exists() and not (proj / "src" / "assay-runs").exists()
    note = f"workspace: {proj / 'assay-runs'} (found above this folder)"
    assert note in second.stderr.splitlines(), second.stderr  # said, not silent
    with opened(proj / "assay-runs" / "assay.db", readonly=True) as store:
        ids = {r["id"] for r in store.list_runs(-1)}
    assert len(ids) == 2
    listed = assay("list", "runs", cwd=sub)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0] == note, listed.stdout  # the header says where the runs are
    assert {line.split()[0] for line in lines[2:4]} == ids, listed.stdout
    assert files_under(sub) == []


def test_the_nearest_workspace_wins_and_assay_home_over_all(tmp_path: Path) -> None:
    outer = fresh(tmp_path / "outer")
    inner = outer / "a" / "b"
    for folder in (outer, outer / "a"):  # two real stores, no runs
        Store(folder / "assay-runs" / "assay.db").close()
    inner.mkdir()
    p = assay("list", "runs", cwd=inner)
    assert p.stdout.splitlines() == [
        f"workspace: {outer / 'a' / 'assay-runs'} (found above this folder)",
        f"no runs yet in {outer / 'a' / 'assay-runs'}"], p.stdout
    home = tmp_path / "home"
    Store(home / "assay.db").close()
    p = assay("list", "runs", cwd=inner, home=home)
    assert p.stdout.splitlines() == [f"no runs yet in {home}"], p.stdout


def make_runs(home: Path, n: int) -> list[str]:
    """``n`` finished runs in a real store (through the store's own API)."""
    with opened(home / "assay.db") as store:
        ids = [store.create_run(task="qa", spec={"task": "qa"}, model={"model": "openai/fake"},
                                dataset={"source": "file"}, package_version="0",
                                run_id=f"20260101-000000-{i:06x}") for i in range(n)]
        for rid in ids:
            store.set_run_status(rid, "finished")
    return ids


def test_list_runs_shows_every_run_and_says_when_limited(tmp_path: Path) -> None:
    here = fresh(tmp_path / "many")
    ids = make_runs(here / "assay-runs", 27)
    p = assay("list", "runs", cwd=here)
    assert p.returncode == 0, p.stderr
    rows = [line.split()[0] for line in p.stdout.splitlines()[1:]]
    assert sorted(rows) == ids, p.stdout  # every run, each once; no "showing" line
    listed = json.loads(assay("list", "runs", "--json", cwd=here).stdout)
    assert sorted(r["id"] for r in listed) == ids
    jsonl = assay("list", "runs", "--jsonl", cwd=here).stdout.splitlines()
    assert len(jsonl) == 27
    few = assay("list", "runs", "--limit", "5", cwd=here)
    assert len([line for line in few.stdout.splitlines() if line.startswith("2026")]) == 5
    assert "showing 5 of 27 runs (--limit 5; without it, every run)" in few.stdout, few.stdout
    few_json = assay("list", "runs", "--limit", "5", "--json", cwd=here)
    assert len(json.loads(few_json.stdout)) == 5  # stdout stays one JSON document
    assert "showing 5 of 27 runs" in few_json.stderr, few_json.stderr
    bad = assay("list", "runs", "--limit", "0", cwd=here)
    assert bad.returncode == 2 and "--limit" in bad.stderr.splitlines()[-1], bad.stderr


def test_every_row_of_a_multi_model_run_fits_one_line_of_80_columns(tmp_path: Path,
                                                                     fake_server) -> None:
    srv = fake_server(rules=CAPITALS)
    here = fresh(tmp_path / "models")
    qa_run(srv.base_url, here, *LONG, "openai/x")
    p = assay("list", "runs", cwd=here)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines), p.stdout
    with opened(here / "assay-runs" / "assay.db", readonly=True) as store:
        runs = store.list_runs(-1)
    assert len(runs) == 4  # the parent and its three children
    table = lines[1:1 + len(runs)]
    # one line per run, in the order listed: no row continues on a next line
    assert [line.split()[0] for line in table] == [r["id"] for r in runs], p.stdout
    parent_id = next(r["id"] for r in runs if r["kind"] != "task")
    parent = next(line for line in table if line.startswith(parent_id))
    assert parent.split()[1:6] == ["qa", "on", "3", "models", "finished"], parent
    for model in LONG:  # a long name cut in its middle; its start and end kept
        (row,) = [line for line in table if model[-4:] + " " in line]
        cell = row.split()[2]
        assert "…" in cell and model.startswith(cell.split("…")[0]) \
            and model.endswith(cell.split("…")[1]), row
        assert row.split()[3:6] == ["finished", "2", "0"], row
    full = {r["model"] for r in json.loads(assay("list", "runs", "--json", cwd=here).stdout)}
    assert set(LONG) <= full  # --json keeps every name whole

"""One model at several endpoints (``--base-url`` repeated, ``--endpoints FILE``): calls go to
the least busy, one that is down at the start or keeps failing is taken out and its samples
finish on the others. Real HTTP to fake OpenAI-compatible servers; the CLI in a subprocess."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path

from test_engine import write_repeat_data as write_data

from assay.testing.fake_replies import FaultPlan
from assay.testing.fake_server import FakeServer, Rule

ECHO = [Rule(r"Repeat after me: (\S+)", "Answer: \\1")]


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", "run", "qa", *args, "-q"],
                          capture_output=True, text=True, timeout=600, cwd=home.parent,
                          env=dict(os.environ, ASSAY_HOME=str(home), OPENAI_API_KEY="k"))


def rows(home: Path) -> list[tuple[str, str | None, str]]:
    con = sqlite3.connect(home / "assay.db")
    try:
        return con.execute("SELECT sample_id, error, scores FROM samples").fetchall()
    finally:
        con.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_calls_spread_over_the_endpoints_and_the_run_records_them(tmp_path: Path) -> None:
    home, data = tmp_path / "home", write_data(tmp_path / "d.jsonl", 30)
    with FakeServer(rules=ECHO, latency=0.05) as a, FakeServer(rules=ECHO, latency=0.05) as b, \
            FakeServer(rules=ECHO, latency=0.05) as c:
        listed = tmp_path / "endpoints.txt"
        listed.write_text(f"# replicas\n{b.base_url}\n{c.base_url}  # the third\n")
        p = cli(home, "--data", str(data), "--model", "openai/fake", "--base-url", a.base_url,
                "--endpoints", str(listed), "--max-connections", "6")
        counts = [len(s.requests) for s in (a, b, c)]
    assert p.returncode == 0, p.stdout + p.stderr
    assert sum(counts) == 30 and min(counts) >= 5, counts  # each took a share by load
    assert all(err is None and json.loads(sc) for _, err, sc in rows(home))
    con = sqlite3.connect(home / "assay.db")
    spec, model = con.execute("SELECT spec, model FROM runs").fetchone()
    con.close()
    assert json.loads(spec)["endpoints"] == [a.base_url, b.base_url, c.base_url]
    assert json.loads(model)["endpoints"] == [a.base_url, b.base_url, c.base_url]


def test_an_endpoint_down_or_failing_is_taken_out_and_its_samples_finish_elsewhere(
        tmp_path: Path) -> None:
    home, data = tmp_path / "home", write_data(tmp_path / "d.jsonl", 24)
    down = f"http://127.0.0.1:{closed_port()}/v1"
    always_500 = FaultPlan(rate=1.0, kinds={"500": 1.0})
    with FakeServer(rules=ECHO) as good, FakeServer(rules=ECHO, faults=always_500) as bad:
        p = cli(home, "--data", str(data), "--model", "openai/fake", "--base-url", good.base_url,
                "--base-url", down, "--base-url", bad.base_url, "--max-connections", "4")
        answered, failed = len(good.requests), len(bad.requests)
    assert p.returncode == 0, p.stdout + p.stderr
    # the one that was down at the start: said once, never called
    assert f"cannot reach model endpoint {down}" in p.stderr and "other endpoints" in p.stderr
    # the one that kept failing: out after 3 failures in a row (4 were in flight at most)
    assert 3 <= failed <= 3 + 4, failed
    assert answered == 24 + 0  # every sample finished on the healthy one, each asked once
    assert [r for r in rows(home) if r[1] is not None] == []
    assert len(rows(home)) == 24


def test_every_endpoint_down_is_one_line(tmp_path: Path) -> None:
    home, data = tmp_path / "home", write_data(tmp_path / "d.jsonl", 2)
    urls = [f"http://127.0.0.1:{closed_port()}/v1" for _ in range(2)]
    p = cli(home, "--data", str(data), "--model", "openai/fake", "--base-url", urls[0],
            "--base-url", urls[1])
    assert p.returncode == 2, p.stdout + p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "cannot reach model endpoint" in p.stderr


def test_ray_settings_without_the_ray_executor_are_one_line(tmp_path: Path) -> None:
    home, data = tmp_path / "home", write_data(tmp_path / "d.jsonl", 2)
    p = cli(home, "--data", str(data), "--model", "openai/fake", "--workers", "4")
    assert p.returncode == 2, p.stdout + p.stderr
    assert p.stderr.strip() == ("error: --workers and --ray-address are for --executor ray; "
                                "add it, or leave them out to run in this process"), p.stderr

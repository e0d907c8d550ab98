"""Malformed inputs and options, each driven through the real CLI in a subprocess.

Every case must end with exit status 2, exactly one stderr line ``error: ...`` that names
the problem (``file:line`` where there is one), no traceback, and no run left ``running``
in the store. The fake provider is a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.testing import FakeServer
from attack.clitools import cli, free_port, one_line_error

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "qa_example.jsonl"


def runs_left_running(home: Path) -> list[tuple[str, str]]:
    db = home / "assay.db"
    if not db.exists():
        return []
    with sqlite3.connect(db) as con:
        return con.execute("SELECT id, status FROM runs WHERE status = 'running'").fetchall()


def write(path: Path, data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    return str(path)


def qa(url: str, *extra: str, data: str = str(EXAMPLE)) -> list[str]:
    return ["run", "qa", "--data", data, "--model", "openai/fake", "--base-url", url,
            "--limit", "3", "-q", "--no-cache", *extra]


GOOD_ROW = '{"question": "What is 2+2?", "answer": "4"}\n'

# (case id, builder(tmp, url) -> argv, needles the one error line must hold)
Case = tuple[str, Callable[[Path, str], list[str]], tuple[str, ...]]
CASES: list[Case] = [
    # -- numeric options
    ("max-connections-0", lambda t, u: qa(u, "--max-connections", "0"), ("--max-connections",)),
    ("max-connections-neg", lambda t, u: qa(u, "-c", "-3"), ("--max-connections",)),
    ("max-connections-text", lambda t, u: qa(u, "-c", "abc"), ("--max-connections",)),
    ("epochs-0", lambda t, u: qa(u, "--epochs", "0"), ("--epochs", "at least 1")),
    ("epochs-neg", lambda t, u: qa(u, "--epochs", "-1"), ("--epochs",)),
    ("epochs-float", lambda t, u: qa(u, "--epochs", "1.5"), ("--epochs",)),
    ("timeout-0", lambda t, u: qa(u, "--timeout", "0"), ("--timeout", "greater than 0")),
    ("timeout-neg", lambda t, u: qa(u, "--timeout", "-1"), ("--timeout",)),
    ("timeout-nan", lambda t, u: qa(u, "--timeout", "nan"), ("--timeout", "finite")),
    ("sample-timeout-0", lambda t, u: qa(u, "--sample-timeout", "0"), ("--sample-timeout",)),
    ("max-retries-neg", lambda t, u: qa(u, "--max-retries", "-1"), ("--max-retries",)),
    ("tolerance-neg", lambda t, u: qa(u, "--scorer", "numeric", "--tolerance", "-1"),
     ("--tolerance",)),
    ("temperature-nan", lambda t, u: qa(u, "--temperature", "nan"), ("--temperature", "finite")),
    ("temperature-inf", lambda t, u: qa(u, "--temperature", "inf"), ("--temperature",)),
    ("temperature-neg", lambda t, u: qa(u, "--temperature", "-0.5"), ("--temperature",)),
    ("param-nan", lambda t, u: qa(u, "--param", "top_k=NaN"), ("--param", "finite")),
    ("param-no-equals", lambda t, u: qa(u, "--param", "top_k"), ("--param", "KEY=VALUE")),
    ("limit-0", lambda t, u: qa(u, "--limit", "0"), ("--limit",)),
    ("max-tokens-0", lambda t, u: qa(u, "--max-tokens", "0"), ("--max-tokens",)),
    ("max-reply-bytes-0", lambda t, u: qa(u, "--max-reply-bytes", "0"), ("--max-reply-bytes",)),
    ("sample-ids-empty", lambda t, u: qa(u, "--sample-ids", ",,"), ("--sample-ids",)),
    ("sample-ids-unknown", lambda t, u: qa(u, "--sample-ids", "nosuch"), ("nosuch",)),
    # -- endpoints and models
    ("url-port-too-big", lambda t, u: qa("http://127.0.0.1:99999/v1"), ("base URL", "port")),
    ("url-port-text", lambda t, u: qa("http://127.0.0.1:abc/v1"), ("base URL", "port")),
    ("url-ipv6-open", lambda t, u: qa("http://[::1/v1"), ("base URL", "IPv6")),
    ("url-scheme", lambda t, u: qa("ftp://127.0.0.1/v1"), ("base URL", "http")),
    ("url-unreachable", lambda t, u: qa(f"http://127.0.0.1:{free_port()}/v1"),
     ("cannot reach",)),
    ("model-unknown", lambda t, u: ["run", "qa", "--data", str(EXAMPLE), "--model", "gpt4"],
     ("model spec",)),
    ("model-python-missing", lambda t, u: ["run", "qa", "--data", str(EXAMPLE), "--model",
                                           "python/no_such_module_xyz:make", "-q"],
     ("no_such_module_xyz",)),
    # -- datasets
    ("data-missing", lambda t, u: qa(u, data=str(t / "nope.jsonl")), ("not found",)),
    ("data-folder", lambda t, u: qa(u, data=str(t)), ("folder",)),
    ("data-unsupported", lambda t, u: qa(u, data=write(t / "d.txt", GOOD_ROW)),
     ("unsupported file type",)),
    ("jsonl-bad-utf8", lambda t, u: qa(u, data=write(t / "d.jsonl", GOOD_ROW.encode()
                                                      + b'{"question": "\xff", "answer": "1"}\n')),
     ("d.jsonl:2", "UTF-8")),
    ("csv-bad-utf8", lambda t, u: qa(u, data=write(t / "d.csv",
                                                    b"question,answer\n2+2,4\n\xfe\xff,1\n")),
     ("d.csv:3", "UTF-8")),
    ("json-bad-utf8", lambda t, u: qa(u, data=write(
        t / "d.json", b'[\n{"question": "a", "answer": "1"},\n{"question": "\xc3", "answer": "2"}]')),
     ("d.json:3", "UTF-8")),
    ("jsonl-huge-int", lambda t, u: qa(u, data=write(
        t / "d.jsonl", GOOD_ROW + '{"question": "q", "answer": ' + "9" * 5000 + "}\n")),
     ("d.jsonl:2",)),
    ("json-huge-int", lambda t, u: qa(u, data=write(
        t / "d.json", '[{"question": "q",\n "answer": ' + "7" * 5000 + "}]")),
     ("d.json:2",)),
    ("jsonl-deep", lambda t, u: qa(u, data=write(
        t / "d.jsonl", GOOD_ROW + "[" * 100_000 + "]" * 100_000 + "\n")), ("d.jsonl:2", "deep")),
    ("json-deep", lambda t, u: qa(u, data=write(t / "d.json", "[" * 100_000 + "]" * 100_000)),
     ("d.json", "deep")),
    ("jsonl-lone-surrogate", lambda t, u: qa(u, data=write(
        t / "d.jsonl", GOOD_ROW + '{"question": "bad \\ud800 text", "answer": "1"}\n')),
     ("d.jsonl:2", "surrogate")),
    ("jsonl-broken-line", lambda t, u: qa(u, data=write(t / "d.jsonl", GOOD_ROW + '{"question": \n')),
     ("d.jsonl:2", "invalid JSON")),
    ("jsonl-not-object", lambda t, u: qa(u, data=write(t / "d.jsonl", GOOD_ROW + "[1, 2]\n")),
     ("d.jsonl:2", "JSON object")),
    ("jsonl-empty", lambda t, u: qa(u, data=write(t / "d.jsonl", "\n\n")), ("no rows",)),
    ("csv-extra-field", lambda t, u: qa(u, data=write(t / "d.csv", "question,answer\nq,1,extra\n")),
     ("d.csv:2",)),
    ("missing-answer-key", lambda t, u: qa(u, "--answer-key", "nosuch"), ("nosuch",)),
    # -- templates and scorers
    ("template-sandbox", lambda t, u: qa(
        u, "--template", "{{ cycler.__init__.__globals__.os.popen('id').read() }}"),
     ("--template", "unsafe")),
    ("template-syntax", lambda t, u: qa(u, "--template", "{{ question "), ("--template",)),
    ("template-undefined", lambda t, u: qa(u, "--template", "{{ nosuch }}"), ("nosuch",)),
    ("scorer-unknown", lambda t, u: qa(u, "--scorer", "nosuch"), ("nosuch",)),
    # -- other commands
    ("report-unknown-run", lambda t, u: ["report", "nosuchrun"], ("nosuchrun",)),
    ("resume-unknown-run", lambda t, u: ["run", "qa", "--resume", "nosuchrun", "-q"],
     ("nosuchrun",)),
    ("bfcl-max-tokens-0", lambda t, u: ["run", "bfcl", "--model", "openai/fake", "--base-url", u,
                                        "--max-tokens", "0", "-q"], ("--max-tokens",)),
    ("gaia-max-tokens-0", lambda t, u: ["run", "gaia", "--data-dir", str(t), "--model",
                                        "openai/fake", "--base-url", u, "--max-tokens", "0",
                                        "-q"], ("--max-tokens",)),
    ("gaia-inline-limit-neg", lambda t, u: ["run", "gaia", "--data-dir", str(t), "--model",
                                            "openai/fake", "--base-url", u, "--inline-limit",
                                            "-1", "-q"], ("--inline-limit",)),
    ("datagen-n-0", lambda t, u: ["datagen", "generate", "--n", "0", "--model", "openai/fake",
                                  "--base-url", u, "--reference", "none", "-q"],
     ("datagen_generate: n: Input should be greater than or equal to 1",)),
    ("datagen-delay-nan", lambda t, u: ["datagen", "generate", "--delay", "nan", "--model",
                                        "openai/fake", "--base-url", u, "--reference", "none",
                                        "-q"], ("--delay", "finite")),
    ("bfcl-score-bad-utf8", lambda t, u: ["bfcl", "score", "--results", write(
        t / "BFCL_v4_simple_python_result.json", b'{"id": "simple_python_0", "result": "\xff"}\n')],
     ("BFCL_v4_simple_python_result.json:1", "UTF-8")),
]


@pytest.fixture(scope="module")
def server() -> FakeServer:
    with FakeServer(default_reply="Answer: 4") as srv:
        yield srv


def test_there_are_at_least_forty_cases() -> None:
    assert len(CASES) >= 40
    assert len({c[0] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_malformed_input_is_one_line_error(case: Case, server: FakeServer, tmp_path: Path,
                                           workspace: Path) -> None:
    _, build, needles = case
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    p = cli(*build(data_dir, server.base_url))
    one_line_error(p, *needles)
    assert runs_left_running(workspace) == []


def test_password_with_hash_or_slash_never_leaks(tmp_path: Path, workspace: Path) -> None:
    """An unencoded '#' or '/' in a password used to leak the tail of it in the message."""
    for password in ("hunter#secretpart", "hunter/secretpart", "hunter?secretpart"):
        url = f"http://someone:{password}@127.0.0.1:{free_port()}/v1"
        p = cli(*qa(url))
        line = one_line_error(p)
        assert "hunter" not in line and "secretpart" not in line, line
        assert "percent-encode" in line or "cannot reach" in line, line


def test_report_out_pointing_at_a_file_is_refused(server: FakeServer, tmp_path: Path,
                                                  workspace: Path) -> None:
    p = cli(*qa(server.base_url))
    assert p.returncode == 0, p.stderr
    run_id = p.stdout.split()[1]
    target = tmp_path / "existing.txt"
    target.write_text("keep me")
    one_line_error(cli("report", run_id, "--out", str(target)), "--out", "is a file")
    assert target.read_text() == "keep me"

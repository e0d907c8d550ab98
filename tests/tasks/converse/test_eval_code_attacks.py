"""Hostile ``eval_code`` in a case: each attack ends as a miss with its reason, within the
time limit, and the host is untouched (no file written outside, no key seen, no
connection made). Runs through the real CLI with the real sandbox (bubblewrap)."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest
from convfakes import ConverseServer, converse_args, never_stop, run_cli, run_id_of, write_case

from assay.sandbox import bwrap_problem
from assay.store.sqlite import Store, workspace_dir

SECRET = "sk-live-DO-NOT-LEAK-5f3a9c"


@pytest.fixture
def listener():
    """A real TCP server on the host that records whether anything connected."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    accepted: list[object] = []
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except (TimeoutError, OSError):
                continue
            accepted.append(conn)
            conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1], accepted
    stop.set()
    t.join()
    srv.close()


def test_hostile_eval_code_is_a_miss_with_its_reason_and_the_host_is_untouched(
        tmp_path, listener):
    if bwrap_problem():
        pytest.skip(f"{bwrap_problem()}")  # the reason names apt-get install bubblewrap
    port, accepted = listener
    outside = tmp_path / "outside.txt"
    home_file = Path.home() / f"assay-eval-code-{tmp_path.name}.txt"
    attacks = {
        "loop": ("while True:\n    pass", "timeout"),
        "sleep": ("import time\ntime.sleep(3600)", "timeout"),
        # the process limit stops it, or on a loaded machine the timeout comes first
        "forkbomb": ("while True:\n    os.fork()", ("Resource temporarily unavailable",
                                                    "timeout")),
        "key": ("assert os.environ['OPENAI_API_KEY'], 'no key'", "KeyError: 'OPENAI_API_KEY'"),
        "keyprint": ("print(dict(os.environ))\nassert 'OPENAI_API_KEY' in os.environ, "
                     "'no key in the environment'", "no key in the environment"),
        "write_tmp": (f"open({str(outside)!r}, 'w').write('x')", "Error"),
        "write_home": (f"open({str(home_file)!r}, 'w').write('x')", "Error"),
        "write_repo": (f"open({str(Path.cwd() / 'PWNED.txt')!r}, 'w').write('x')", "Error"),
        "socket": (f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)",
                   "Error"),
        "fine": ("open('mine.txt', 'w').write('ok')\nassert open('mine.txt').read() == 'ok'",
                 None),
    }
    points = [{"score_point": name, "weight": 1, "eval_code": code}
              for name, (code, _) in attacks.items()]
    case = write_case(tmp_path / "cases", "attack", max_rounds=1, points=points)
    with ConverseServer(examiner=never_stop) as srv:
        out = run_cli(*converse_args(case, srv.base_url, "--eval-timeout", "4"),
                      env={"OPENAI_API_KEY": SECRET})
        assert out.returncode == 0, out.stderr
    store = Store()
    try:
        (r,) = store.results(run_id_of(out.stdout))
    finally:
        store.close()
    verdicts = {p["score_point"]: v for p, v in zip(points, r.scores["score"]["metadata"]["verdicts"],
                                                     strict=True)}
    for name, (_, reason) in attacks.items():
        v = verdicts[name]
        assert v["isolation"] == "bwrap"
        if reason is None:
            assert v["is_hit"] is True, v
            continue
        assert v["is_hit"] is False, (name, v)
        assert any(r in v["reason"] for r in ((reason,) if isinstance(reason, str) else reason)), (
            name, v["reason"])
    assert verdicts["loop"]["timed_out"] and verdicts["sleep"]["timed_out"]
    assert verdicts["loop"]["reason"].startswith("timeout")
    # the host: nothing written, nothing connected, the key never seen or stored
    assert not outside.exists() and not home_file.exists()
    assert not (Path.cwd() / "PWNED.txt").exists()
    assert accepted == []
    assert SECRET not in str(r.outcome) and SECRET not in str(r.scores)
    assert SECRET not in out.stdout + out.stderr
    for f in workspace_dir().rglob("*"):  # the store, its logs and the reports
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f
    assert r.score_value("score") == pytest.approx(1 / len(attacks))


def test_the_reason_is_the_exception_line_even_when_forked_children_print_after_it() -> None:
    # a fork bomb's children print tracebacks too: the last stderr line may be any line of
    # one (seen on a busy CI machine: "    _result = _check()"); the reason is the error
    from types import SimpleNamespace

    from assay.sandbox import Limits
    from assay.tasks.converse.evalcode import _reason

    stderr = ("Traceback (most recent call last):\n  File \"/run/check.py\", line 9\n"
              "BlockingIOError: [Errno 11] Resource temporarily unavailable\n"
              "Traceback (most recent call last):\n  File \"/run/check.py\", line 9\n"
              "    _result = _check()\n")
    result = SimpleNamespace(timed_out=False, exit_code=1, isolation="bwrap", stderr=stderr,
                             stdout="")
    assert _reason(result, Limits()) == ("BlockingIOError: [Errno 11] Resource temporarily "
                                         "unavailable")
    said = SimpleNamespace(timed_out=False, exit_code=1, isolation="bwrap", stdout="",
                           stderr="assertion failed: no file written\n")
    assert _reason(said, Limits()) == "assertion failed: no file written"
    plain = SimpleNamespace(timed_out=False, exit_code=3, isolation="bwrap", stdout="",
                            stderr="something odd\n")
    assert _reason(plain, Limits()) == "something odd"

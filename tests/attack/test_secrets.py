"""Secrets never leave the process: issue 22, points 9 and 10, attacked as a leak would be.

A run knows secrets in many places: the API keys in its environment (``OPENAI_API_KEY``,
``HF_TOKEN``, ``SERPAPI_API_KEY``), the ``user:password@`` of its base URL (sent as HTTP
basic auth), query values (``?api_key=``, ``?key=``, ``?token=``) of its base URL and of
its examiner's and judge's URLs (``-T examiner_base_url=...``, ``--judge-base-url``, or a
plan file's options). A hostile or merely chatty server echoes what it received (the
``Authorization`` header raw and decoded, the query raw and decoded, inside JSON), in an
error body (a stored error) or in a normal reply (a stored output, transcript and cached
reply), sometimes right where the error text is cut. A Python agent raises with a key in
its message or answers with one.

Every run goes through the real CLI in a subprocess, over real HTTP to the fake server on
127.0.0.1, into the real SQLite store. Then every byte written is searched for every form of
every secret (raw, percent-encoded, JSON-escaped, base64 as basic auth sends it, and any
ten characters of one in a row): the SQLite files (WAL included), ``results.jsonl``,
``report.md``/``report.html``, the summary, ``assay list runs``, the viewer's pages over
real HTTP, and the captured stdout and stderr of every command. Each test also checks that
the secret really was sent (so that "not found" is not "never there"), and that a resume
asks for the credentials it never stored, in one line, and runs with them once given.
The last tests go through the error-text policy input by input: credentials known only by
their place (a header, a query, a JSON field, a URL's user info), the endpoint's secrets in
every encoding, and ordinary messages that must come out unchanged.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import subprocess
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote

import aiohttp
import pytest

from assay.store.sqlite import Store
from assay.testing import FakeServer
from attack.clitools import cli, one_line_error

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "qa_example.jsonl"
MTBENCH = REPO / "tests" / "gallery" / "fixtures" / "mtbench"
MTBENCH_TASK = f"{MTBENCH / 'mtbench_task.py'}@mtbench"
MTBENCH_DATA = MTBENCH / "data" / "mt_bench" / "question.jsonl"

API_KEY = "sk-attack-envkey-0123456789abcdef"
HF_TOKEN = "hf_AttackHubToken0123456789abcd"
SERP_KEY = "serp0attack0key0123456789xyz"
PW = "Hunter2-Attack-PW"
PW_SPECIAL = "p@ss/w:rd#Att?ck%9&x"  # percent-encoded in the URL
QKEY = "QueryKey-Attack-5551234"
EXAM_KEY = "ExamKey-Attack-7771234"
JUDGE_KEY = "JudgeKey-Attack-8881234"
ENV = {"OPENAI_API_KEY": API_KEY, "HF_TOKEN": HF_TOKEN, "SERPAPI_API_KEY": SERP_KEY}
ENV_SECRETS = [API_KEY, HF_TOKEN, SERP_KEY]


# -- where secrets could end up, and in which forms ------------------------------------------
def forms(secret: str, user: str | None = None) -> set[str]:
    """How ``secret`` appears in text: raw, percent-encoded, JSON-escaped, and as basic
    auth sends ``user:secret`` (base64, padded or not); plus every run of ten characters
    of the secret or of its base64 (a secret cut where a message is shortened)."""
    out = {secret, quote(secret, safe=""), quote(secret), json.dumps(secret)[1:-1]}
    whole = [secret]
    if user is not None:
        for u, p in ((user, secret), (user, quote(secret, safe=""))):
            b64 = base64.b64encode(f"{u}:{p}".encode()).decode()
            out |= {b64, b64.rstrip("=")}
            whole.append(b64)
    out |= {w[i:i + 10] for w in whole for i in range(len(w) - 9)}
    return out


def leaks(blobs: dict[str, bytes | str], secrets: dict[str, set[str]]) -> list[str]:
    """``where: which form of which secret`` for every form found in any blob."""
    found = []
    for where, blob in blobs.items():
        data = blob if isinstance(blob, bytes) else blob.encode("utf-8", "replace")
        for name, variants in secrets.items():
            for v in sorted(variants):
                if v.encode() in data:
                    found.append(f"{where}: {name} as {v!r}")
    return found


def written_files(home: Path) -> dict[str, bytes]:
    """Every file under the workspace: the SQLite files (WAL too), reports, exports."""
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted(home.rglob("*"))
            if p.is_file()}


def viewer_pages(db: Path) -> dict[str, str]:
    """The viewer's run list, every run's page and every sample's page, over real HTTP."""
    from assay.web.server import serve
    from assay.web.state import sample_url

    store = Store(db, readonly=True)
    try:
        paths = ["/"]
        for run in store.list_runs():
            paths.append(f"/run/{quote(run['id'], safe='')}")
            paths += [sample_url(run["id"], r.sample_id, r.epoch)
                      for r in store.results(run["id"])]
    finally:
        store.close()

    async def fetch() -> dict[str, str]:
        url, runner = await serve(store_path=db)
        pages = {}
        try:
            async with aiohttp.ClientSession() as session:
                for path in paths:
                    async with session.get(url.rstrip("/") + path) as r:
                        assert r.status == 200, (path, r.status)
                        pages[f"view {path}"] = await r.text()
        finally:
            await runner.cleanup()
        return pages

    return asyncio.run(fetch())


def everything_shown(home: Path, outputs: dict[str, subprocess.CompletedProcess[str]],
                     run_ids: list[str]) -> dict[str, bytes | str]:
    """Files, the summary and ``list runs`` of each run, the viewer and every command's
    stdout and stderr, by where they came from."""
    for rid in run_ids:
        outputs[f"report --summary {rid}"] = cli("report", rid, "--summary")
        outputs[f"report {rid}"] = cli("report", rid)
    outputs["list runs"] = cli("list", "runs")
    blobs: dict[str, bytes | str] = dict(written_files(home))
    assert any(k.endswith("summary.html") for k in blobs), sorted(blobs)
    assert any(k.endswith("results.jsonl") for k in blobs), sorted(blobs)
    for what, p in outputs.items():
        blobs[f"stdout of {what}"] = p.stdout
        blobs[f"stderr of {what}"] = p.stderr
    blobs.update(viewer_pages(home / "assay.db"))
    return blobs


# -- the server that echoes what it received -------------------------------------------------
def decoded(auth: str) -> str:
    """The credential inside an Authorization header, in clear."""
    scheme, _, value = auth.partition(" ")
    if scheme == "Basic":
        return base64.b64decode(value).decode("utf-8", "replace")
    return value


class EchoServer(FakeServer):
    """Answers by model name (``behaviours[model](body, echo) -> reply``); ``echo`` is
    everything the request carried, in every form a careless server repeats it."""

    def __init__(self, behaviours: dict[str, Callable[[dict[str, Any], str], Any]],
                 **kwargs: Any) -> None:
        self.behaviours = behaviours
        super().__init__(responder=self._route, **kwargs)

    def echo(self) -> str:
        with self._lock:
            auth, query = self.authorizations[-1], self.queries[-1]
        return (f"{decoded(auth)} was sent as Authorization: {auth}; query {query} "
                f"= {unquote(query)}; as JSON "
                + json.dumps({"headers": {"Authorization": auth},
                              "args": dict(parse_qsl(query))}))

    def _route(self, body: dict[str, Any]) -> Any:
        return self.behaviours[body["model"]](body, self.echo())


def refuse(body: dict[str, Any], echo: str) -> Any:
    """A 401 whose message repeats the credentials."""
    return {"status": 401, "error": f"Unauthorized: {echo}"}


def refuse_at_the_cut(body: dict[str, Any], echo: str) -> Any:
    """A 401 whose echoed credential, in clear, starts 10 to 18 characters before where
    an error message is shortened (300 characters into the body, which begins
    ``{"error": {"message": "Unauthorized: ``): a secret cut in half must still not be
    written."""
    return {"status": 401, "error": "Unauthorized: " + "x" * 245 + echo}


def chatty(body: dict[str, Any], echo: str) -> Any:
    """A normal reply whose text repeats the credentials."""
    return f"Answer: {echo}"


# -- 1. qa: the model's endpoint, the environment's keys ----------------------------------
ENDPOINTS = {
    # user:password@ (basic auth) and an api_key query value
    "userinfo+api_key": (lambda base: base.replace("http://", f"http://alice:{PW}@")
                         + f"?api_key={QKEY}",
                         {"password": forms(PW, "alice"), "query api_key": forms(QKEY)}),
    # a password that must be percent-encoded, and a token query value
    "encoded-userinfo+token": (lambda base: base.replace(
        "http://", f"http://bob:{quote(PW_SPECIAL, safe='')}@") + f"?token={QKEY}",
        {"password": forms(PW_SPECIAL, "bob"), "query token": forms(QKEY)}),
    # no user info: OPENAI_API_KEY goes as a bearer token; a plain key= query value
    "bearer+key": (lambda base: base + f"?key={QKEY}", {"query key": forms(QKEY)}),
}
SERVER_MODES = {"401 echo": refuse, "401 echo at the cut": refuse_at_the_cut,
                "reply echo": chatty}


def env_secrets() -> dict[str, set[str]]:
    return {name: forms(value) for name, value in ENV.items()}


@pytest.mark.parametrize("mode", SERVER_MODES)
@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_qa_run_writes_and_shows_no_credential_the_server_echoes(
        endpoint: str, mode: str, workspace: Path) -> None:
    build, secrets = ENDPOINTS[endpoint]
    srv = EchoServer({"fake": SERVER_MODES[mode]}).start()
    try:
        url = build(srv.base_url)
        ran = cli("run", "qa", "--data", str(EXAMPLE), "--model", "openai/fake",
                  "--base-url", url, "--limit", "3", "--max-retries", "0", "-c", "1", "-q",
                  env=ENV)
        # a 401 on every call: the run failed (exit 1, its most common error on stderr)
        assert ran.returncode == (0 if mode == "reply echo" else 1), ran.stderr
        # the credentials really were sent: their absence below means they were scrubbed
        assert len(srv.authorizations) == 3
        if "userinfo" in endpoint:
            user, pw = ("alice", PW) if endpoint.startswith("userinfo") else ("bob", PW_SPECIAL)
            assert set(srv.authorizations) == {
                "Basic " + base64.b64encode(f"{user}:{pw}".encode()).decode()}
        else:
            assert set(srv.authorizations) == {f"Bearer {API_KEY}"}
        assert all(QKEY in unquote(q) for q in srv.queries)
    finally:
        srv.stop()
    run_id = ran.stdout.split()[1]
    store = Store()
    try:
        results = store.results(run_id)
        spec = store.get_run(run_id)["spec"]
    finally:
        store.close()
    if mode == "reply echo":  # stored as the output, with every secret masked
        assert all(r.error is None and "***" in r.output for r in results), results
    else:  # stored as the error, scrubbed, still saying what went wrong
        assert all(r.error and "HTTP 401" in r.error and "***" in r.error for r in results)
    assert spec["base_url"] == srv.base_url + "?" + url.split("?")[1].split("=")[0] + "=***"
    assert spec["base_url_has_secrets"] is True
    blobs = everything_shown(workspace, {"run": ran}, [run_id])
    assert leaks(blobs, {**secrets, **env_secrets()}) == []


# -- 2. converse: the examiner's and the judge's URLs, as a flag and with -T ------------------
def write_case(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(json.dumps({
        "version": 1, "task_description": f"[CASE-{name}] Ask the agent to say hello.",
        "scoring_points": [{"score_point": "The agent said hello", "weight": 1}],
        "max_rounds": 2}), encoding="utf-8")
    return path


def examiner_echoing(body: dict[str, Any], echo: str) -> str:
    """An examiner that ends after the agent's first reply, repeating its credentials."""
    replied = any("Agent:" in str(m.get("content") or "") for m in body["messages"])
    return json.dumps({"message": "" if replied else f"Say hello. ({echo})",
                       "task_finished": replied})


def judge_hit(body: dict[str, Any], echo: str) -> str:
    return json.dumps({"reason": "it said hello", "is_hit": True})


def converse_secrets() -> dict[str, set[str]]:
    return {"agent password": forms(PW_SPECIAL, "carol"), "examiner key": forms(EXAM_KEY),
            "judge key": forms(JUDGE_KEY), **env_secrets()}


def test_converse_examiner_and_judge_urls_are_redacted_and_resume_asks_for_them(
        tmp_path: Path, workspace: Path) -> None:
    cases = tmp_path / "cases"
    for name in ("one", "two"):
        write_case(cases, name)
    behaviours: dict[str, Any] = {"agent": chatty, "examiner": examiner_echoing,
                                  "judge": refuse}
    srv = EchoServer(behaviours).start()
    try:
        base = srv.base_url
        agent_url = base.replace("http://", f"http://carol:{quote(PW_SPECIAL, safe='')}@")
        examiner_url = f"{base}?api_key={EXAM_KEY}"
        judge_url = f"{base}?key={JUDGE_KEY}&mode=strict"
        common = ["run", "converse", "--cases", str(cases), "--model", "openai/agent",
                  "--examiner-model", "openai/examiner", "--judge-model", "openai/judge",
                  "--max-retries", "0", "-c", "1", "-q"]
        ran = cli(*common, "--base-url", agent_url, "--examiner-base-url", examiner_url,
                  "-T", f"judge_base_url={judge_url}", env=ENV)
        assert ran.returncode == 1, ran.stderr  # the judge refuses (401): every sample failed
        run_id = ran.stdout.split()[1]
        # every role got its own credentials: the examiner's key, the judge's key
        assert any(EXAM_KEY in q for q in srv.queries)
        assert any(JUDGE_KEY in q for q in srv.queries)
        store = Store()
        try:
            record = store.get_run(run_id)
            results = store.results(run_id)
        finally:
            store.close()
        options = record["spec"]["task_options"]
        assert options["examiner_base_url"] == f"{base}?api_key=***"
        assert options["judge_base_url"] == f"{base}?key=***&mode=***"
        assert record["spec"]["redacted"] == ["task_options.examiner_base_url",
                                              "task_options.judge_base_url"]
        assert record["model"]["roles"]["judge"]["base_url"] == f"{base}?key=***&mode=***"
        # the judge refused every point (an error per case), echoing its key
        assert [bool(r.error and "HTTP 401" in r.error) for r in results] == [True, True]
        outputs = {"run": ran}

        # resume without the credentials: one line naming each option to give again
        again = cli("run", "converse", "--resume", run_id, "--base-url", agent_url, env=ENV)
        one_line_error(again, "-T examiner_base_url=", "-T judge_base_url=", "never stored")
        outputs["resume without"] = again
        # a different value (its credentials aside) is a different run: refused
        other = cli("run", "converse", "--resume", run_id, "--base-url", agent_url,
                    "-T", f"examiner_base_url={examiner_url}",
                    "-T", f"judge_base_url={base}?api_key={JUDGE_KEY}", env=ENV)
        one_line_error(other, "judge_base_url", "not the value")
        outputs["resume other"] = other
        # options that held no credential cannot change on resume, as before
        cases_too = cli("run", "converse", "--resume", run_id, "--base-url", agent_url,
                        "-T", f"cases={cases}", env=ENV)
        one_line_error(cases_too, "--cases", "start a new run")
        outputs["resume cases"] = cases_too
        assert record["status"] == "failed"  # every case errored; it resumes all the same

        # given again, the same values: the run finishes, the judge got its real key
        behaviours["judge"] = judge_hit
        srv.reset()
        done = cli("run", "converse", "--resume", run_id, "--base-url", agent_url,
                   "-T", f"examiner_base_url={examiner_url}",
                   "-T", f"judge_base_url={judge_url}", env=ENV)
        assert done.returncode == 0, done.stderr
        outputs["resume"] = done
        assert "errors 0" in done.stdout, done.stdout
        assert any(JUDGE_KEY in q for q in srv.queries)
        assert not any("%2A" in q or "*" in q for q in srv.queries), srv.queries
    finally:
        srv.stop()
    store = Store()
    try:
        spec = store.get_run(run_id)["spec"]
    finally:
        store.close()
    assert spec["task_options"]["judge_base_url"] == f"{base}?key=***&mode=***"
    blobs = everything_shown(workspace, outputs, [run_id])
    assert leaks(blobs, converse_secrets()) == []


def test_resume_from_python_without_the_credentials_is_refused(workspace: Path) -> None:
    """The engine itself (no CLI) never sends a stored ``***`` as a key."""
    import assay
    from assay.api import run_async
    from assay.engine.loop import run
    from assay.engine.runner import Engine, RunSpec
    from assay.errors import ConfigError

    srv = EchoServer({"fake": refuse}).start()
    try:
        result = assay.evaluate("qa", "openai/fake", data=str(EXAMPLE), limit=2,
                                max_retries=0, base_url=srv.base_url,
                                params={"extra_api_key": "ParamKey-Attack-4441234"})
        assert result.metrics["n_errors"] == 2
        store = Store()
        try:
            spec = store.get_run(result.run_id)["spec"]
            assert spec["params"] == {"extra_api_key": "***"}
            with pytest.raises(ConfigError, match="--param extra_api_key=.*start a new run"):
                run(Engine(store, quiet=True).run(None, resume=result.run_id))
            with pytest.raises(ConfigError, match="--param"):
                run(run_async(resume=result.run_id, store=store))
            # the full spec given back: resumed, with the real value sent
            full = RunSpec.from_dict(spec)
            full.params = {"extra_api_key": "ParamKey-Attack-4441234"}
            srv.behaviours["fake"] = chatty
            srv.reset()
            again = run(run_async(full, resume=result.run_id, store=store))
            assert again.metrics["n_errors"] == 0
            assert [r["extra_api_key"] for r in srv.requests] == ["ParamKey-Attack-4441234"] * 2
        finally:
            store.close()
    finally:
        srv.stop()
    assert leaks(written_files(workspace), {"param": forms("ParamKey-Attack-4441234")}) == []


# -- 3. MT-Bench's judge URL ---------------------------------------------------------------------
def test_mtbench_judge_url_key_is_never_written(workspace: Path) -> None:
    srv = EchoServer({"agent": chatty, "judge": refuse}).start()
    try:
        ran = cli("run", MTBENCH_TASK, "--model", "openai/agent", "--base-url", srv.base_url,
                  "-T", f"data={MTBENCH_DATA}", "-T", "judge_model=openai/judge",
                  "-T", f"judge_base_url={srv.base_url}?api_key={JUDGE_KEY}",
                  "--limit", "2", "--max-retries", "0", "-c", "1", "-q", env=ENV)
        assert ran.returncode == 1, ran.stderr  # the judge refuses (401): every sample failed
        assert any(JUDGE_KEY in q for q in srv.queries)
        assert f"Bearer {API_KEY}" in srv.authorizations
    finally:
        srv.stop()
    run_id = ran.stdout.split()[1]
    store = Store()
    try:
        errors = [r.error for r in store.results(run_id)]
    finally:
        store.close()
    assert errors and all(e and "HTTP 401" in e for e in errors), errors
    again = cli("run", MTBENCH_TASK, "--resume", run_id, env=ENV)
    one_line_error(again, "-T judge_base_url=")
    blobs = everything_shown(workspace, {"run": ran, "resume": again}, [run_id])
    assert leaks(blobs, {"judge key": forms(JUDGE_KEY), **env_secrets()}) == []


# -- 4. a plan file's task options --------------------------------------------------------------
def test_a_plans_judge_url_key_is_never_written(tmp_path: Path, workspace: Path) -> None:
    srv = EchoServer({"agent": chatty, "judge": refuse}).start()
    try:
        shutil.copytree(MTBENCH / "data", tmp_path / "data")
        plan = tmp_path / "plan.yaml"
        plan.write_text(json.dumps({
            "assay_plan": 1, "request": "judge writing",
            "tasks": [{"task": "mtbench", "source": "builtin", "limit": 1,
                       "options": {"data": "data/mt_bench/question.jsonl",
                                   "judge_model": "openai/judge",
                                   "judge_base_url": f"{srv.base_url}?token={JUDGE_KEY}"},
                       "metrics": [{"name": "mtbench_score", "role": "primary"}]}]}))
        ran = cli("run", str(plan), "--model", "openai/agent", "--base-url",
                  srv.base_url.replace("http://", f"http://dave:{PW}@"), "--max-retries", "0",
                  "-q", env=ENV)
        assert ran.returncode in (0, 1), ran.stderr
        assert any(JUDGE_KEY in q for q in srv.queries), (srv.queries, ran.stdout, ran.stderr)
    finally:
        srv.stop()
    store = Store()
    try:
        ids = [r["id"] for r in store.list_runs()]
    finally:
        store.close()
    blobs: dict[str, bytes | str] = dict(written_files(workspace))
    blobs.update({"stdout": ran.stdout, "stderr": ran.stderr, **viewer_pages(
        workspace / "assay.db")})
    assert len(ids) == 2
    assert leaks(blobs, {"judge key": forms(JUDGE_KEY), "password": forms(PW, "dave"),
                         **env_secrets()}) == []


# -- 5. a Python agent that raises or answers with the environment's keys ----------------------
AGENT = """
import os

class Leaky:
    def run(self, prompt):
        keys = [os.environ[k] for k in ("OPENAI_API_KEY", "HF_TOKEN", "SERPAPI_API_KEY")]
        if "France" in prompt:
            raise RuntimeError("upstream said: bad key " + " / ".join(keys))
        if "2+2" in prompt:
            return "Answer: " + json_of(keys)
        return "Authorization: Bearer " + keys[0] + " and token=" + keys[1]

def json_of(keys):
    import json
    return json.dumps({"api_key": keys[0], "token": keys[1], "serp": keys[2]})

def make():
    return Leaky()
"""


def test_a_python_agent_that_raises_or_answers_with_env_keys_leaks_none(
        tmp_path: Path, workspace: Path) -> None:
    (tmp_path / "leaky_agent.py").write_text(textwrap.dedent(AGENT), encoding="utf-8")
    ran = cli("run", "qa", "--data", str(EXAMPLE), "--model", "python/leaky_agent:make",
              "--limit", "3", "-q", env={**ENV, "PYTHONPATH": os.pathsep.join(
                  filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))})
    assert ran.returncode == 0, ran.stderr
    run_id = ran.stdout.split()[1]
    store = Store()
    try:
        results = store.results(run_id)
    finally:
        store.close()
    assert sum(1 for r in results if r.error and "RuntimeError" in r.error) == 1
    assert sum(1 for r in results if r.error is None and "***" in r.output) == 2
    blobs = everything_shown(workspace, {"run": ran}, [run_id])
    assert leaks(blobs, env_secrets()) == []


# -- 6. the console: a refused option is not repeated with its credentials -------------------
@pytest.mark.parametrize("argv", [
    ["run", "converse", "-T", f"examiner_base_url=http://eve:{PW}@127.0.0.1:9/v1",
     "--model", "openai/x"],
    ["run", "converse", "--judge-base-url", f"ftp://eve:{PW}@127.0.0.1:9/v1?api_key={QKEY}",
     "--model", "openai/x"],
    ["run", "qa", "--data", str(EXAMPLE), "--model", "openai/x", "--base-url",
     f"http://eve:{PW}@127.0.0.1:99999/v1?api_key={QKEY}"],
    ["run", "qa", "--data", str(EXAMPLE), "--model", "openai/x", "--base-url",
     f"http://eve:{PW}@127.0.0.1:1/v1?token={QKEY}"],
], ids=["examiner-userinfo", "judge-ftp", "bad-port", "unreachable"])
def test_one_line_errors_never_repeat_a_credential(argv: list[str]) -> None:
    p = cli(*argv, env=ENV)
    one_line_error(p)
    assert leaks({"stdout": p.stdout, "stderr": p.stderr},
                 {"password": forms(PW, "eve"), "query": forms(QKEY)}) == []


# -- 7. error text as a server or a library writes it: the policy, input by input -------------
UNKNOWN = "Zx9Qv7Lm3Np5Rt1Wk"  # a credential no configuration named: only its place shows it
B64_UNKNOWN = base64.b64encode(f"mallory:{UNKNOWN}".encode()).decode()
ECHOES = [
    f"Authorization: Basic {B64_UNKNOWN}",
    f'{{"headers": {{"Authorization": "Basic {B64_UNKNOWN}"}}}}',
    f"authorization=Basic%20{B64_UNKNOWN}",
    f"proxy-authorization: Bearer {UNKNOWN}",
    f"sent bearer {UNKNOWN} to the host",
    f"X-Api-Key: {UNKNOWN}",
    f"api-key={UNKNOWN}",
    f"GET /v1/chat?api_key={UNKNOWN}&stream=false",
    f"GET /v1/chat?model=x&key={UNKNOWN}",
    f"retry with token={UNKNOWN}",
    f'{{"token": "{UNKNOWN}"}}',
    f"{{'access_token': '{UNKNOWN}'}}",
    f'"client_secret": "{UNKNOWN}"',
    f"password: {UNKNOWN}",
    f"redirected to https://mallory:{UNKNOWN}@example.com/v1",
    f"clone https://{UNKNOWN}@github.com/x/y",
    f"key sk-proj-{UNKNOWN}",
    f"hub said hf_{UNKNOWN}0000",
]
KNOWN_URL = f"http://alice:{PW}@127.0.0.1:8/v1?api_key={QKEY}"
KNOWN_ECHOES = [
    f"Basic {base64.b64encode(f'alice:{PW}'.encode()).decode()}",
    base64.b64encode(f"alice:{PW}".encode()).decode().rstrip("="),
    f"user alice, password {PW}",
    f"password {quote(PW, safe='')}",
    f'{{"args": {{"api_key": "{QKEY}"}}}}',
    f"query api_key%3D{quote(QKEY, safe='')}",
]
BENIGN = [
    "max_tokens=512 is above the limit",
    "--param expects KEY=VALUE, got 'top_k'",
    "basic arithmetic is not supported",
    "KeyError: 'answer'",
    "missing key: 'question'",
    "unexpected token '}' at line 3",
    "process exited with code=3",
    "tokens: 12 in, 40 out",
    "see http://127.0.0.1:8000/v1/models",
]


@pytest.mark.parametrize("text", ECHOES)
def test_error_text_loses_a_credential_by_its_place(text: str) -> None:
    from assay.core.redact import scrub

    out = scrub(text)
    assert UNKNOWN not in out and B64_UNKNOWN[:12] not in out, out
    assert "***" in out


@pytest.mark.parametrize("text", KNOWN_ECHOES)
def test_error_text_loses_the_endpoints_secrets_in_every_encoding(text: str) -> None:
    from assay.core.redact import parse_endpoint, scrub

    endpoint = parse_endpoint(KNOWN_URL)
    out = scrub(text, endpoint.secrets)
    assert leaks({"scrubbed": out}, {"password": forms(PW, "alice"),
                                     "query": forms(QKEY)}) == [], out


@pytest.mark.parametrize("text", BENIGN)
def test_error_text_without_credentials_is_left_as_it_is(text: str) -> None:
    from assay.core.redact import scrub

    assert scrub(text) == text


@pytest.mark.parametrize("at", [460, 470, 478, 486])  # the key straddles the cut
def test_a_pipelines_stop_error_leaves_no_fragment_of_a_secret_at_its_cut(
        workspace: Path, monkeypatch: pytest.MonkeyPatch, at: int) -> None:
    """A datagen pipeline's error is cut to 500 characters for the runs table: cut first and
    scrubbed after, a key that straddles the cut would leave its first half behind."""
    from assay.pipelines.parent import stop as _stop

    secret = "pipelinekeyABCDEFGHIJ0123456789"
    monkeypatch.setenv("ASSAY_PIPELINE_API_KEY", secret)
    store = Store()
    try:
        run_id = store.create_run(task="datagen_pipeline", spec={}, model={"model": "m"},
                                  dataset={}, package_version="0")
        _stop(store, run_id, "failed", "x" * at + f"server said: {secret} (denied)")
        error = store.get_run(run_id)["stats"]["error"]
    finally:
        store.close()
    assert len(error) <= 500
    assert secret[:8] not in error, error[-60:]

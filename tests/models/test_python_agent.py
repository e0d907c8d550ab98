"""Python agents (``python/<module>:<name>`` and objects given in code): the one adapter.

Factories are called once per sample, agent objects are deep-copied per sample (or
refused when they cannot be), agent functions are called directly; every calling
style (``run``, ``generate``, ``invoke``, a callable) goes through
:class:`assay.models.python_agent.PythonAgent`.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

import assay
from assay.errors import ModelSpecError
from assay.store.sqlite import Store

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "qa_example.jsonl"


def results_of(run_id: str):
    store = Store()
    try:
        return {r.sample_id: r for r in store.results(run_id)}
    finally:
        store.close()



@pytest.fixture
def agent_module(tmp_path, monkeypatch):
    """Write a module into tmp_path (the cwd) and return its unique name."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # load_target adds the cwd
    names: list[str] = []

    def make(source: str) -> str:
        name = f"assay_test_agent_{uuid.uuid4().hex[:10]}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        names.append(name)
        return name

    yield make
    for name in names:
        sys.modules.pop(name, None)


AGENT_WITH_STATE = """
    import threading

    CREATED = []
    LOCK = threading.Lock()


    class Agent:
        def __init__(self):
            with LOCK:
                CREATED.append(self)
            self.memory = []

        def run(self, prompt):
            self.memory.append(prompt)
            if "Japan" in prompt:
                raise ValueError("no idea about Japan")
            answer = "Paris" if "France" in prompt else "Rome"
            # an agent that kept its memory across samples would answer "stale"
            return f"Answer: {answer}" if len(self.memory) == 1 else "Answer: stale"


    def make():
        return Agent()
"""


def test_python_agent_gets_a_fresh_instance_per_sample(agent_module):
    name = agent_module(AGENT_WITH_STATE)
    result = assay.evaluate("qa", model=f"python/{name}:make", data=str(EXAMPLE), limit=5,
                            max_connections=2)
    module = importlib.import_module(name)
    assert len(module.CREATED) == 5
    assert all(len(a.memory) == 1 for a in module.CREATED)
    outputs = results_of(result.run_id)
    assert "stale" not in json.dumps([r.output for r in outputs.values()])
    # the raising sample is an error with the exception text; the others are scored
    m = result.metrics
    assert (m["n_samples"], m["n_scored"], m["n_errors"]) == (5, 4, 1)
    err = outputs["capital-japan"].error
    assert "ValueError" in err and "no idea about Japan" in err
    assert outputs["capital-japan"].scores == {}
    assert m["normalized_match"]["successes"] == 2  # France (Paris) and Italy (Rome)
    assert outputs["capital-france"].score_value() == 1.0
    assert outputs["capital-germany"].score_value() == 0.0
    assert m["top_errors"] == [{"message": err, "count": 1}]


def test_python_agent_replies_are_not_cached(agent_module):
    name = agent_module(AGENT_WITH_STATE)
    assay.evaluate("qa", model=f"python/{name}:make", data=str(EXAMPLE), limit=2)
    again = assay.evaluate("qa", model=f"python/{name}:make", data=str(EXAMPLE), limit=2)
    assert again.stats["cache_hits"] == 0
    assert len(importlib.import_module(name).CREATED) == 4


def test_async_def_agent_target(agent_module):
    name = agent_module("""
        import asyncio

        PROMPTS = []


        async def agent(prompt):
            await asyncio.sleep(0)
            PROMPTS.append(prompt)
            return "Answer: Paris" if "France" in prompt else "Answer: Lima"
    """)
    result = assay.evaluate("qa", model=f"python/{name}:agent", data=str(EXAMPLE), limit=3)
    assert result.metrics["n_errors"] == 0
    acc = result.metrics["normalized_match"]
    assert (acc["successes"], acc["n"]) == (1, 3)
    prompts = importlib.import_module(name).PROMPTS
    assert len(prompts) == 3
    assert any(p.startswith("What is the capital of France?") for p in prompts)


def test_agent_with_async_run_method(agent_module):
    name = agent_module("""
        class Agent:
            async def run(self, prompt):
                return "Answer: Tokyo" if "Japan" in prompt else "Answer: ?"
    """)
    result = assay.evaluate("qa", model=f"python/{name}:Agent", data=str(EXAMPLE), limit=2)
    assert result.metrics["n_errors"] == 0
    assert result.metrics["normalized_match"]["successes"] == 1


def test_bad_python_agent_specs(agent_module):
    name = agent_module("VALUE = 3\n")
    with pytest.raises(ModelSpecError, match="cannot import agent module"):
        assay.evaluate("qa", model="python/no_such_module_xyz:make", data=str(EXAMPLE))
    with pytest.raises(ModelSpecError, match="has no attribute 'make'"):
        assay.evaluate("qa", model=f"python/{name}:make", data=str(EXAMPLE))
    with pytest.raises(ModelSpecError, match=rf"python/{name}:VALUE: int object is not an agent"):
        assay.evaluate("qa", model=f"python/{name}:VALUE", data=str(EXAMPLE))
    with pytest.raises(ModelSpecError, match="python/<module>:<factory>"):
        assay.evaluate("qa", model=f"python/{name}", data=str(EXAMPLE))


# --------------------------------------------------------------------------- what a spec may name

FACTORY_FORMS = {
    # factory() -> an object with run(prompt)
    "run_object": """
        class Agent:
            def run(self, prompt):
                return ANSWERS[country(prompt)]

        def target():
            return Agent()
    """,
    # factory() -> an async callable
    "async_callable": """
        def target():
            async def agent(prompt):
                return ANSWERS[country(prompt)]
            return agent
    """,
    # factory() -> an object with assay's model protocol (generate)
    "generate_object": """
        from assay.core.types import Message, Reply

        class Model:
            model_id = "mine"

            async def generate(self, messages, *, tools=None, response_schema=None, **params):
                return Reply(Message("assistant", ANSWERS[country(messages[-1].content)]))

        def target():
            return Model()
    """,
    # the target itself is a plain (sync) agent function taking the prompt
    "sync_function": """
        def target(prompt):
            return ANSWERS[country(prompt)]
    """,
}
ANSWERS = ('import re\n\nANSWERS = {"France": "Answer: Paris", "Japan": "Answer: Tokyo", '
           '"Italy": "Answer: Rome"}\n\n\ndef country(text):\n'
           '    return re.search(r"capital of (\\w+)", text).group(1)\n\n')


@pytest.mark.parametrize("form", sorted(FACTORY_FORMS))
def test_every_factory_form_answers_every_sample(agent_module, form: str):
    name = agent_module(ANSWERS + textwrap.dedent(FACTORY_FORMS[form]))
    result = assay.evaluate("qa", model=f"python/{name}:target", data=str(EXAMPLE), limit=3)
    assert result.metrics["n_errors"] == 0, results_of(result.run_id)
    assert result.metrics["normalized_match"]["successes"] == 3


def test_a_module_level_agent_object_is_copied_per_sample(agent_module):
    name = agent_module("""
        class Agent:
            def __init__(self):
                self.memory = []

            def run(self, prompt):
                self.memory.append(prompt)
                return "Answer: Paris" if len(self.memory) == 1 else "Answer: stale"

        AGENT = Agent()
    """)
    result = assay.evaluate("qa", model=f"python/{name}:AGENT", data=str(EXAMPLE), limit=4,
                            max_connections=2)
    assert result.metrics["n_errors"] == 0
    outputs = [r.output for r in results_of(result.run_id).values()]
    assert outputs == ["Answer: Paris"] * 4
    assert importlib.import_module(name).AGENT.memory == []  # only copies were used


# --------------------------------------------------------------------------- objects given in code


def _run_qa(subject, limit: int = 4, connections: int = 4) -> dict:
    from assay.engine.loop import run
    from assay.engine.runner import Engine, RunSpec

    store = Store()
    try:
        spec = RunSpec(task="qa", model="python/test", limit=limit,
                       max_connections=connections,
                       task_options={"data": str(EXAMPLE)})
        run_id = run(Engine(store, quiet=True).run(spec, subject=subject))
        return {r.sample_id: r for r in store.results(run_id)}
    finally:
        store.close()


class MemoryAgent:
    """Answers correctly only while its memory holds the one prompt of its sample."""

    name = "memory-agent"

    def __init__(self) -> None:
        self.memory: list[str] = []

    def run(self, prompt: str) -> str:
        self.memory.append(prompt)
        if len(self.memory) > 1:
            return "Answer: stale"
        return {"France": "Answer: Paris", "Japan": "Answer: Tokyo", "Italy": "Answer: Rome",
                "Germany": "Answer: Berlin"}[re.search(r"capital of (\w+)", prompt).group(1)]


def test_an_object_is_deep_copied_for_every_sample():
    from assay.models.python_agent import python_subject

    agent = MemoryAgent()
    results = _run_qa(python_subject(agent))
    assert [r.output for r in results.values()] == [
        "Answer: Paris", "Answer: Tokyo", "Answer: Rome", "Answer: Berlin"]
    assert agent.memory == []


def test_a_zero_argument_factory_given_in_code_is_called_per_sample():
    from assay.models.python_agent import python_subject

    made: list[MemoryAgent] = []

    def factory() -> MemoryAgent:
        made.append(MemoryAgent())
        return made[-1]

    results = _run_qa(python_subject(factory))
    assert all(r.error is None and r.output != "Answer: stale" for r in results.values())
    assert len(made) == 4 and all(len(a.memory) == 1 for a in made)


def test_an_object_that_cannot_be_copied_is_refused_with_one_line():
    import threading

    from assay.models.python_agent import python_subject

    agent = MemoryAgent()
    agent.lock = threading.Lock()  # type: ignore[attr-defined]
    with pytest.raises(ModelSpecError) as e:
        python_subject(agent)
    msg = str(e.value)
    assert "\n" not in msg and "cannot be copied for each sample" in msg
    assert "pass a factory instead" in msg and "memory-agent" in msg


def test_a_shared_llm_client_is_the_same_object_every_time():
    from assay.models.python_agent import python_subject

    class Client:  # HelloAgentsLLM style: invoke(messages) -> str
        def __init__(self) -> None:
            self.seen: list[list[dict]] = []

        def invoke(self, messages: list[dict]) -> str:
            self.seen.append(messages)
            return "Answer: Paris"

    client = Client()
    results = _run_qa(python_subject(client, shared=True), limit=3)
    assert [r.output for r in results.values()] == ["Answer: Paris"] * 3
    assert len(client.seen) == 3 and all(m[-1]["role"] == "user" for m in client.seen)


def test_misdeclared_agents_are_refused_up_front():
    from assay.models.python_agent import python_subject

    class NeedsConfig:
        def __init__(self, config: dict) -> None:
            self.config = config

        def run(self, prompt: str) -> str:
            return ""

    async def no_prompt() -> str:
        return ""

    with pytest.raises(ModelSpecError, match=r"needs arguments \(config\); give a factory"):
        python_subject(NeedsConfig)
    with pytest.raises(ModelSpecError, match="async function without a prompt argument"):
        python_subject(no_prompt)
    with pytest.raises(ModelSpecError, match="str object is not an agent"):
        python_subject("openai/gpt-4o")  # a spec string is not an object to adapt


def test_agent_spec_is_rebuildable_where_the_agent_can_be_imported(agent_module):
    from assay.models.python_agent import agent_spec, load_target

    name = agent_module("class Agent:\n    def run(self, p):\n        return p\n\n"
                        "def make():\n    return Agent()\n")
    sys.path.insert(0, str(Path.cwd()))  # the fixture's copy of sys.path
    module = importlib.import_module(name)
    assert agent_spec(module.make) == f"python/{name}:make"
    assert agent_spec(module.Agent) == f"python/{name}:Agent"
    assert agent_spec("openai/gpt-4o") == "openai/gpt-4o"
    obj_spec = agent_spec(module.Agent())
    assert obj_spec == f"python/<object>:{name}.Agent"
    assert agent_spec(lambda: module.Agent()) == (
        f"python/<object>:{__name__}.test_agent_spec_is_rebuildable_where_the_agent_"
        "can_be_imported.<locals>.<lambda>")
    with pytest.raises(ModelSpecError) as e:
        load_target(obj_spec.removeprefix("python/"))
    assert "cannot be rebuilt from the store" in str(e.value)
    assert "resume=RUN_ID" in str(e.value)


# --------------------------------------------------------------------------- resume from the CLI

DYING_AGENT = """
import os
import signal
import time


class Agent:
    def run(self, prompt):
        with open(os.environ["AGENT_LOG"], "a", encoding="utf-8") as f:
            f.write(prompt.splitlines()[0] + "\\n")
        with open(os.environ["AGENT_LOG"], encoding="utf-8") as f:
            calls = len(f.read().splitlines())
        if calls >= int(os.environ.get("AGENT_DIE_AT", "0") or 10**9):
            time.sleep(0.5)  # let the finished samples be committed, then die hard
            os.kill(os.getpid(), signal.SIGKILL)
        return "Answer: Paris"


def make():
    return Agent()
"""


def test_a_python_factory_run_resumes_from_the_cli_without_redoing_samples(tmp_path: Path,
                                                                          workspace: Path):
    import os
    import subprocess

    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "dying_agent.py").write_text(DYING_AGENT, encoding="utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(mods), os.environ.get(
        "PYTHONPATH", "")]), AGENT_LOG=str(tmp_path / "first.log"), AGENT_DIE_AT="6")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                              text=True, env=env, cwd=elsewhere, timeout=300)

    first = cli("run", "qa", "--model", "python/dying_agent:make", "--data", str(EXAMPLE),
                "-c", "1", "-q")
    assert first.returncode == -9, first.stderr  # killed by the agent at its 6th call
    runs = json.loads(cli("list", "runs", "--json").stdout)
    assert len(runs) == 1 and runs[0]["model"] == "python/dying_agent:make"
    run_id = runs[0]["id"]
    questions = {json.loads(x)["id"]: json.loads(x)["question"]
                 for x in EXAMPLE.read_text().splitlines()}
    done = set(results_of(run_id))
    assert 1 <= len(done) <= 5

    env.update(AGENT_LOG=str(tmp_path / "resumed.log"), AGENT_DIE_AT="")
    resumed = cli("run", "qa", "--resume", run_id, "-q")
    assert resumed.returncode == 0, resumed.stderr
    asked = (tmp_path / "resumed.log").read_text().splitlines()
    assert sorted(asked) == sorted(q for i, q in questions.items() if i not in done)
    final = results_of(run_id)
    assert set(final) == set(questions) and all(r.error is None for r in final.values())

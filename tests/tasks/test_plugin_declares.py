"""A task with logic of its own is its folder plus one entry-point line: a plugin task that
declares a judge role and a data source (TaskInfo) is seen by ``list tasks``, pulled by
``data pull``, retrieved by ``plan`` and run by ``run``, with no edit anywhere in assay."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from assay.testing import FakeServer, Rule
from tests.plugins import install_dist

PLUGIN = '''
import json
import os
from pathlib import Path

from assay import Sample, Score, Task, task
from assay.core.types import Message
from assay.tasks.base import RoleModel
from assay.tasks.info import DataSource, TaskInfo
from assay.tasks.options import Field, TaskOptions

RIDDLES = [("What has keys but opens no locks?", "piano"),
           ("What gets wetter the more it dries?", "towel")]


def cache() -> Path:
    return Path(os.environ["ASSAY_HOME"]) / "data" / "riddle_judge" / "riddles.jsonl"


def pull(*, version=None, wheel=None, force=False) -> str:
    cache().parent.mkdir(parents=True, exist_ok=True)
    cache().write_text("".join(json.dumps({"q": q, "a": a}) + "\\n" for q, a in RIDDLES))
    return f"riddles: {len(RIDDLES)} in {cache()}"


def present() -> bool:
    return cache().is_file()


class RiddleOptions(TaskOptions):
    judge_model: str | None = Field(None, description="The judge.")


@task("riddle_judge")
class RiddleJudge(Task):
    """Riddles of everyday objects, answered and graded by a judge model."""

    description = "Riddles about everyday objects: lateral thinking, graded by a judge model."
    info = TaskInfo(category="reasoning", tags=("riddles", "lateral-thinking", "puzzles"),
                    roles=("judge",),
                    data=(DataSource("riddle_judge", "the demo riddles",
                                     pull="assay_plugin_riddles:pull",
                                     present="assay_plugin_riddles:present"),))
    Options = RiddleOptions

    def __init__(self, judge_model=None):
        super().__init__(options={"judge_model": judge_model})

    def samples(self):
        if not present():
            raise FileNotFoundError("no riddles here: run 'assay data pull riddle_judge'")
        rows = [json.loads(x) for x in cache().read_text().splitlines()]
        return [Sample(f"r{i}", r["q"], r["a"]) for i, r in enumerate(rows)]

    def roles(self, model):
        return {"judge": RoleModel(self.options["judge_model"] or model)}

    async def solve(self, sample, agent):
        out = await super().solve(sample, agent)
        verdict = await agent.roles["judge"].generate(
            [Message("user", f"Grade: {out.output} for {sample.target}")])
        out.metadata["verdict"] = verdict.message.content
        return out

    def score(self, sample, outcome):
        ok = outcome.metadata.get("verdict", "").strip() == "CORRECT"
        return [Score("judged", float(ok), outcome.output)]
'''


def install(site: Path) -> dict[str, str]:
    """The plugin as pip installs it: its module and a dist-info with one entry point."""
    return install_dist(site, "assay-plugin-riddles", {"assay_plugin_riddles.py": PLUGIN},
                        "[assay.tasks]\nriddle_judge = assay_plugin_riddles:RiddleJudge\n")


def cli(*args: str, env: dict[str, str], cwd: Path | None = None
        ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300)


@pytest.fixture
def server():
    rules = [Rule(r"Grade: .*piano", "CORRECT"), Rule(r"Grade: ", "WRONG"),
             Rule(r"keys but opens", "A piano."), Rule(r"wetter", "A sponge.")]
    with FakeServer(rules=rules) as srv:
        yield srv


def test_a_plugin_task_declares_itself_to_list_pull_plan_and_run(
        workspace: Path, tmp_path: Path, server: FakeServer) -> None:
    env = install(tmp_path / "site")
    listed = cli("list", "tasks", env=env)
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.startswith("riddle_judge"))
    assert "plugin assay-plugin-riddles" in line

    # its data: pulled by its own name through the source it declares
    before = cli("run", "riddle_judge", "--model", "openai/fake", "--base-url",
                 server.base_url, env=env)
    assert before.returncode != 0 and "assay data pull riddle_judge" in before.stderr
    pulled = cli("data", "pull", "riddle_judge", env=env)
    assert pulled.returncode == 0, pulled.stderr
    assert pulled.stdout.startswith("riddles: 2 in ")
    assert (workspace / "data" / "riddle_judge" / "riddles.jsonl").is_file()

    # the planner retrieves it for its capability, from what it declares
    plan_path = tmp_path / "plan.yaml"
    planned = cli("plan", "lateral thinking riddles, judged by a model", "--no-hub", "-y",
                  "-o", str(plan_path), env=env, cwd=tmp_path)
    assert planned.returncode == 0, planned.stderr
    plan = plan_path.read_text()
    assert "task: riddle_judge" in plan, plan[:2000]

    # and it runs, its judge role answered by the judge model given
    ran = cli("run", "riddle_judge", "-T", "judge_model=openai/judge", "--model",
              "openai/fake", "--base-url", server.base_url, "-q",
              # a plugin's judge has no endpoint option: the role's environment gives it
              env={**env, "ASSAY_JUDGE_BASE_URL": server.base_url})
    assert ran.returncode == 0, ran.stderr
    assert "(1/2)" in ran.stdout.splitlines()[1], ran.stdout
    judged = [r for r in server.requests if "Grade:" in json.dumps(r["messages"])]
    assert len(judged) == 2 and {r["model"] for r in judged} == {"judge"}

    # without the package on the path, none of it is there
    gone = cli("data", "pull", "riddle_judge", env=dict(os.environ))
    assert gone.returncode == 2 and "no data to pull for 'riddle_judge'" in gone.stderr

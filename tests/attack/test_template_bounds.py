"""A user's template is bounded in what it builds and the steps it takes (issue 32, point 7).

A YAML task's prompt template (and ``--template``, and a gallery entry's fields) is code a
user or a shared file brings. Its arithmetic once ran in assay's own process: ``{{ 'x' *
10**12 }}`` ended in a 64-line MemoryError traceback, a smaller repeat was allocated.
Each test below writes the template as an attacker would vary it and drives the real
entry point (``assay run task.yaml`` against the fake server, under an address-space
limit so a bound that is missing fails the test instead of eating the machine): the run
stops in one line, exit status 2, naming the template and the limit, before any question
reaches the model. The bounds are counted, never timed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jinja2.exceptions import SecurityError
from jinja2.sandbox import SandboxedEnvironment

from assay.core.templates import MAX_SIZE, MAX_STEPS, render, sandbox
from assay.errors import DatasetError
from assay.tasks.mtbench.task import MTBenchTask
from attack.clitools import one_line_error
from attack.test_untrusted_files import limited_cli, write

MTBENCH = Path(__file__).resolve().parents[1] / "gallery" / "fixtures" / "mtbench" / "data"

ATTACKS = {
    "repeat": "{{ 'x' * 10**12 }}",
    "repeat-fits-memory": "{{ 'x' * 10**9 }}",
    "power": "{{ 7 ** 100000000 }}",
    "list-repeat": "{{ [question] * 10**9 }}",
    "format-width": "{{ '{:>999999999}'.format(1) }}",
    "format-nested-width": "{{ '{:>{w}}'.format(1, w=999999999) }}",
    "printf-width": "{{ '%999999999d' % 1 }}",
    "printf-star": "{{ '%*d' % (999999999, 1) }}",
    "format-filter": "{{ '%999999999d'|format(1) }}",
    "center": "{{ question|center(999999999) }}",
    "ljust": "{{ question.ljust(999999999) }}",
    "replace": "{{ ('x' * 1000000)|replace('x', 'y' * 1000000) }}",
    "join": "{{ (['x' * 1000000] * 1000000)|join }}",
    "doubling": "{% set ns = namespace(s=question) %}{% for i in range(60) %}"
                "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
    "nested-loops": "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}"
                    "{% endfor %}",
    "loop-text": "{% for i in range(100000) %}{% for j in range(100000) %}xxxxxxxxxx"
                 "{% endfor %}{% endfor %}",
}


def yaml_task(folder: Path, template: str) -> Path:
    write(folder / "q.jsonl", "".join(json.dumps({"question": f"what is {i}+{i}?",
                                                  "answer": str(2 * i)}) + "\n"
                                      for i in range(3)))
    return write(folder / "task.yaml", "name: t\nsource: {file: q.jsonl}\n"
                                       f"prompt: {{template: {json.dumps(template)}}}\n")


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_yaml_task_template_past_a_bound_is_one_line(
        tmp_path: Path, workspace: Path, fake_server: Any, attack: str) -> None:
    """``assay run task.yaml``: exit 2, one line naming the template and the bound, no
    question sent (the first prompt is rendered before any model call)."""
    server = fake_server(default_reply="Answer: 2")
    task = yaml_task(tmp_path / "task", ATTACKS[attack])
    p = limited_cli("run", str(task), "--model", "openai/fake", "--base-url",
                    server.base_url, "-q", cwd=tmp_path, env={"ASSAY_HOME": str(workspace)})
    line = one_line_error(p, "template")
    assert f"{MAX_SIZE:,}" in line or f"{MAX_STEPS:,}" in line, line
    assert server.requests == []


def test_a_template_within_the_bounds_renders_as_before(tmp_path: Path, workspace: Path,
                                                        fake_server: Any) -> None:
    """The bounds refuse nothing a prompt needs: arithmetic, format widths, loops, ``~``,
    filters; the fake model gets the rendered prompt."""
    server = fake_server(default_reply="Answer: 2")
    template = ("{{ '%5.1f'|format(2.25) }}|{{ '{:>6,}'.format(12345) }}|{{ 2 ** 10 }}|"
                "{{ '-' * 3 }}|{% for w in question.split() %}{{ loop.index }}={{ w|upper }} "
                "{% endfor %}|{{ 'Q: ' ~ question|center(20) }}|{{ [1, 2] + [3] }}")
    task = yaml_task(tmp_path / "task", template)
    p = limited_cli("run", str(task), "--model", "openai/fake", "--base-url",
                    server.base_url, "-q", "--limit", "1", cwd=tmp_path,
                    env={"ASSAY_HOME": str(workspace)})
    assert p.returncode == 0, p.stderr
    prompt = server.requests[0]["messages"][-1]["content"]
    # what Jinja's own sandbox writes, unbounded
    plain = SandboxedEnvironment(keep_trailing_newline=True).from_string(template)
    assert prompt == plain.render(question="what is 0+0?")
    assert prompt.startswith("  2.2|12,345|1024|---|1=WHAT 2=IS 3=0+0? |Q:     what is")


@pytest.mark.parametrize("template", [
    "{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = [ns.l, ns.l] %}"
    "{% endfor %}{{ ns.l }}",  # a list shared 2**100 times, printed
    "{% set l = [1] %}{% for i in range(40) %}{% set _ = l.extend(l) %}{% endfor %}",
    "{% set ns = namespace(s='ab') %}{% for i in range(60) %}{% set ns.s %}{{ ns.s }}"
    "{{ ns.s }}{% endset %}{% endfor %}",  # a block set doubling its text
    "{{ 'a\\tb'.expandtabs(10**8) }}", "{{ 'a\\nb'|indent(10**8) }}",
    "{{ [1]|batch(10**9, 0)|list }}",
])
def test_every_builder_of_the_sandbox_is_bounded(template: str) -> None:
    """Shapes that build from shared or repeated pieces, in the one sandbox every user
    template is compiled in: refused by a bound, never built."""
    with pytest.raises(SecurityError, match=f"{MAX_SIZE:,}|{MAX_STEPS:,}"):
        render(sandbox().from_string(template), question="q")


def test_lipsum_is_not_a_template_global() -> None:
    """``lipsum(10**9)`` writes a billion paragraphs: a prompt needs none."""
    assert "lipsum" not in sandbox().globals


def test_an_mtbench_judge_prompt_with_a_width_is_refused_at_load(tmp_path: Path) -> None:
    """MT-Bench's judge prompts (a user's ``judge_prompts.jsonl``) are ``str.format``
    templates, FastChat's way: a field with a width (``{answer:>10**15}``) is refused when
    the file is read, before anything is filled in (it was allocated, then sent)."""
    rows = [json.loads(line) for line in
            (MTBENCH / "judge_prompts.jsonl").read_text().splitlines() if line.strip()]
    evil = write(tmp_path / "judge_prompts.jsonl", "".join(json.dumps(
        {**r, "prompt_template": r["prompt_template"].replace("{answer}",
                                                              "{answer:>1000000000000000}")})
        + "\n" for r in rows))
    task = MTBenchTask(data=str(MTBENCH / "mt_bench" / "question.jsonl"),
                       judge_prompts=str(evil))
    with pytest.raises(DatasetError, match="format spec") as e:
        task.samples()
    assert "\n" not in str(e.value) and "judge_prompts.jsonl" in str(e.value)

"""Any task from one file: a YAML task, a @task file and an installed plugin, each run
through the real CLI against the real fake server, with no edit anywhere else."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from assay.testing import FakeServer, Rule
from tests.plugins import install_dist

RULES = [Rule(r"Repeat after me: (\S+)", "Answer: \\1")]


def cli(*args: str, env: dict[str, str] | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, env=env, cwd=cwd, timeout=300)


def run_line(stdout: str) -> tuple[str, str]:
    """(run id, headline line) from a finished run's output."""
    lines = stdout.splitlines()
    assert lines and lines[0].startswith("run "), stdout
    return lines[0].split()[1], lines[1]


@pytest.fixture
def server():
    with FakeServer(rules=RULES) as srv:
        yield srv


def test_a_yaml_task_runs_with_its_keys_template_and_scorer(workspace, tmp_path, server):
    (tmp_path / "caps.jsonl").write_text("".join(
        json.dumps({"q": f"Repeat after me: {c}", "a": a}) + "\n"
        for c, a in (("Paris", "Paris"), ("Rome", "Rome"), ("oslo", "Oslo"))))
    (tmp_path / "caps.yaml").write_text(textwrap.dedent("""\
        name: capitals
        description: Capital cities, exact match.
        data: caps.jsonl
        question_key: q
        answer_key: a
        template: "Quiz. {{ question }}"
        scorer: exact
        max_tokens: 16
        """))
    p = cli("run", str(tmp_path / "caps.yaml"), "--model", "openai/fake", "--base-url",
            server.base_url, "-q")
    assert p.returncode == 0, p.stderr
    run_id, head = run_line(p.stdout)
    assert head.startswith("exact_match: 0.667") and "(2/3)" in head  # exact: 'oslo' != 'Oslo'
    sent = [r["messages"][-1]["content"] for r in server.requests]
    # the samples run concurrently: their requests may arrive in any order
    assert sorted(sent) == ["Quiz. Repeat after me: Paris", "Quiz. Repeat after me: Rome",
                            "Quiz. Repeat after me: oslo"]
    assert [r["max_tokens"] for r in server.requests] == [16, 16, 16]
    # -T overrides a value of the file for one run
    p = cli("run", str(tmp_path / "caps.yaml"), "-T", "scorer=normalized", "--model",
            "openai/fake", "--base-url", server.base_url, "-q")
    assert p.returncode == 0, p.stderr
    assert "(3/3)" in run_line(p.stdout)[1]
    runs = json.loads(cli("list", "runs", "--json").stdout)
    assert [r["task"] for r in runs] == ["capitals", "capitals"]
    assert runs[1]["id"] == run_id and runs[1]["samples"] == 3 and runs[1]["parent"] is None


@pytest.mark.parametrize("text, message", [
    ("name: t\ndata: d.jsonl\nscorer: exact\nscorer: f1\n", "key 'scorer' is given twice"),
    ("name: t\ndata: d.jsonl\nscorrer: exact\n", "t.yaml:3: unknown key 'scorrer' (did you "
     "mean 'scorer'?"),
    ("name: t\nsource: {file: d.jsonl}\nmetrics: {primray: exact_match}\n",
     "t.yaml:3: metrics: unknown key 'primray' (did you mean 'primary'? known keys: primary,"),
    ("name: t\nsource: {file: d.jsonl}\ngeneration: {max_tokens: many}\n",
     "generation.max_tokens: Input should be a valid integer"),
    ("name: t\n", "a YAML task names its data"),
    ("name: t\ndata: [unclosed\n", "invalid YAML"),
])
def test_a_broken_yaml_task_is_one_line_naming_the_problem(workspace, tmp_path, text, message):
    path = tmp_path / "t.yaml"
    path.write_text(text)
    p = cli("run", str(path), "--model", "openai/fake", "--base-url", "http://127.0.0.1:9")
    assert p.returncode == 2
    assert len(p.stderr.strip().splitlines()) == 1 and message in p.stderr, p.stderr
    assert str(path) in p.stderr


TASK_FILE = '''
from assay import Sample, Score, Task, task


@task
def doubles(n: int = 4, offset: int = 0) -> Task:
    """Doubling numbers, scored by a function of the task file."""
    def check(sample, outcome):
        return Score("double", float(outcome.output.strip() == "Answer: " + sample.target),
                     outcome.output)
    return Task(samples=[Sample(str(i), f"Repeat after me: {2 * i + offset}", str(2 * i))
                         for i in range(n)], scorer=check)


@task
def numeric(n: int = 3) -> Task:
    """Numbers with the built-in numeric scorer."""
    return Task(samples=[{"id": f"x{i}", "input": f"Repeat after me: {i}", "target": i}
                         for i in range(n)], scorer="numeric")
'''


def test_a_task_file_runs_each_task_with_typed_options(workspace, tmp_path, server):
    path = tmp_path / "mytasks.py"
    path.write_text(TASK_FILE)
    p = cli("run", f"{path}@doubles", "-T", "n=5", "--model", "openai/fake", "--base-url",
            server.base_url, "-q")
    assert p.returncode == 0, p.stderr
    assert "(5/5)" in run_line(p.stdout)[1]
    p = cli("run", f"{path}@doubles", "--offset", "1", "--model", "openai/fake",
            "--base-url", server.base_url, "-q")  # the option is a flag too
    assert p.returncode == 0, p.stderr
    assert "(0/4)" in run_line(p.stdout)[1]
    p = cli("run", f"{path}@numeric", "--model", "openai/fake", "--base-url",
            server.base_url, "-q")
    assert p.returncode == 0, p.stderr
    assert "(3/3)" in run_line(p.stdout)[1]
    # a file with two tasks needs @NAME; a bad value and an unknown option are one line
    for args, message in (([str(path)], "declares several tasks (doubles, numeric)"),
                          ([f"{path}@doubles", "-T", "n=many"], "n: Input should be a valid "
                           "integer"),
                          ([f"{path}@doubles", "-T", "m=2"], "unknown option m for task "
                           "doubles; valid options: n, offset"),
                          ([f"{path}@nope"], "has no task 'nope'; it declares: doubles, "
                           "numeric")):
        p = cli("run", *args, "--model", "openai/fake", "--base-url", server.base_url)
        assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
        assert message in p.stderr, p.stderr
    help_text = cli("run", f"{path}@doubles", "--help").stdout
    assert "Doubling numbers" in help_text and "--offset INTEGER" in help_text
    listed = cli("list", "tasks", str(path)).stdout
    assert f"{path}@doubles" in listed and f"{path}@numeric" in listed


def install_plugin(site: Path) -> dict[str, str]:
    """A task package as pip installs it: the module plus a dist-info with entry points."""
    return install_dist(site, "assay-plugin-demo", {"assay_plugin_demo/__init__.py": TASK_FILE},
                        "[assay.tasks]\ndemo_doubles = assay_plugin_demo:doubles\n")


def test_an_installed_plugin_task_runs_by_name(workspace, tmp_path, server):
    site = tmp_path / "site"
    env = install_plugin(site)
    listed = cli("list", "tasks", env=env)
    assert listed.returncode == 0, listed.stderr
    line = next(x for x in listed.stdout.splitlines() if x.startswith("demo_doubles"))
    assert "plugin assay-plugin-demo" in line and "Doubling numbers" in line
    p = cli("run", "demo_doubles", "--n", "3", "--model", "openai/fake", "--base-url",
            server.base_url, "-q", env=env)
    assert p.returncode == 0, p.stderr
    assert "(3/3)" in run_line(p.stdout)[1]
    # without the package on the path the name is unknown, and the error says what is
    p = cli("run", "demo_doubles", "--model", "openai/fake")
    assert p.returncode == 2 and "unknown task 'demo_doubles'" in p.stderr, p.stderr


def test_a_misspelt_flag_names_the_valid_ones(workspace):
    p = cli("run", "bfcl", "--categroy", "simple_python")
    lines = p.stderr.strip().splitlines()  # the short usage, then one line
    assert p.returncode == 2 and len(lines) == 2 and lines[0].startswith("Usage: "), p.stderr
    assert "--categroy" in p.stderr and "did you mean --category" in p.stderr
    assert "valid options:" in p.stderr and "--mode" in p.stderr
    p = cli("run", "qa", "-T", "dta=x.jsonl")
    assert p.returncode == 2 and "unknown option dta for task qa" in p.stderr
    assert "data" in p.stderr.split("valid options:")[1]
    p = cli("run", "bfcl", "--help")
    assert p.returncode == 0
    for flag in ("--category", "--mode", "--underscore-to-dot", "--weights", "-T",
                 "--model", "--epochs"):
        assert flag in p.stdout, flag


# -- a user's YAML task is a catalogue entry with local data ---------------------------------
CAPS_OLD = """\
name: capitals
description: Capital cities, exact match.
data: caps.jsonl
question_key: q
answer_key: a
template: "Quiz. {{ question }}"
scorer: exact
max_tokens: 16
"""
CAPS_NEW = """\
name: capitals
description: Capital cities, exact match.
category: knowledge
tags: [geography]
source: {file: caps.jsonl}
fields: {question: record.q, answer: "record['a']"}
prompt: {template: "Quiz. {{ question }}"}
generation: {max_tokens: 16}
metrics: {primary: exact}
"""


def test_a_yaml_task_in_the_catalogue_schema_runs_as_its_older_spelling_did(
        workspace, tmp_path, server):
    """The same task in both spellings: the same prompts, max_tokens and verdicts; the
    older one is read with a one-line note naming where each key goes now."""
    rows = "".join(json.dumps({"q": f"Repeat after me: {c}", "a": a}) + "\n"
                   for c, a in (("Paris", "Paris"), ("Rome", "Rome"), ("oslo", "Oslo")))
    heads, notes, sent = [], [], []
    for spelling, text in (("old", CAPS_OLD), ("new", CAPS_NEW)):
        folder = tmp_path / spelling
        folder.mkdir()
        (folder / "caps.jsonl").write_text(rows)
        (folder / "caps.yaml").write_text(text)
        before = len(server.requests)
        p = cli("run", str(folder / "caps.yaml"), "--model", "openai/fake", "--base-url",
                server.base_url, "-q", "--no-cache")  # each spelling asks the model
        assert p.returncode == 0, p.stderr
        heads.append(run_line(p.stdout)[1])
        notes.append([x for x in p.stderr.splitlines() if x.startswith("note: ")])
        sent.append([(r["messages"][-1]["content"], r["max_tokens"])
                     for r in server.requests[before:]])
    assert heads[0] == heads[1] and heads[0].startswith("exact_match: 0.667")
    assert sorted(sent[0]) == sorted(sent[1])
    assert ("Quiz. Repeat after me: Paris", 16) in sent[1]
    assert notes[1] == [] and len(notes[0]) == 1
    for moved in ("data -> source", "question_key -> fields.question", "scorer -> "
                  "metrics.primary", "template -> prompt.template"):
        assert moved in notes[0][0], notes[0]


def test_one_schema_validates_entries_and_users_files(tmp_path):
    """A shipped entry is a valid user's file too (same model); a user's file read as a
    catalogue entry is told what a catalogue entry gives beside it."""
    from assay.errors import ConfigError
    from assay.tasks.gallery.entry import entries_dir, read_entry
    from assay.tasks.yaml_task import read_yaml_task

    shipped = entries_dir() / "arc_easy.yaml"
    assert read_yaml_task(shipped) == read_entry(shipped)
    user = tmp_path / "caps.yaml"
    user.write_text(CAPS_NEW)
    assert read_yaml_task(user).source.file == "caps.jsonl"
    with pytest.raises(ConfigError) as e:
        read_entry(user)
    assert str(e.value) == (f"{user}:1: entry: a catalogue entry gives license, measures (the "
                            "capabilities it measures, with its standing)")


@pytest.mark.parametrize("extra, key", [
    ("prompt: {template: 'x {{ question }}', fewshot: {n: 2}}\n", "prompt.fewshot"),
    ("fields: {question: record.q | upper}\n", "fields.question"),
    ("eval_type: code\n", "eval_type"),
    ("parser: {name: choice_letter}\n", "parser"),
    ("generation: {temperature: 0.5}\n", "generation"),
])
def test_what_a_yaml_task_cannot_do_is_one_line_naming_the_key(workspace, tmp_path, extra,
                                                               key):
    (tmp_path / "caps.jsonl").write_text(json.dumps({"q": "x", "a": "y"}) + "\n")
    path = tmp_path / "t.yaml"
    path.write_text("name: t\nsource: {file: caps.jsonl}\n" + extra)
    p = cli("run", str(path), "--model", "openai/fake", "--base-url", "http://127.0.0.1:9")
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and f"{path}: {key}: " in p.stderr, p.stderr


def test_the_registry_finds_task_sources_and_file_loaders_by_entry_point(workspace, tmp_path,
                                                                         server):
    """The catalogue and the YAML reader are entry points the registry loads; a plugin adds
    a file format the same way, and 'assay run FILE.<suffix>' runs it."""
    from assay.tasks import registry

    assert [s.label for s in registry.sources()] == ["gallery"]
    assert set(registry.file_loaders()) >= {".yaml", ".yml"}
    loader = textwrap.dedent('''\
        from assay.tasks.yaml_task import load_yaml_task

        def load(path):
            """Task files of one line: the data file's name."""
            yaml = path.with_suffix(".yaml")
            yaml.write_text("name: oneline\\nsource: {file: %s}\\n" % path.read_text().strip())
            return load_yaml_task(yaml)
        ''')
    env = install_dist(tmp_path / "site", "assay-oneline", {"assay_oneline.py": loader},
                       "[assay.task_files]\noneline = assay_oneline:load\n")
    (tmp_path / "rows.jsonl").write_text(json.dumps({"question": "Repeat after me: 7",
                                                     "answer": "7"}) + "\n")
    (tmp_path / "t.oneline").write_text("rows.jsonl\n")
    p = cli("run", str(tmp_path / "t.oneline"), "--model", "openai/fake", "--base-url",
            server.base_url, "-q", env=env)
    assert p.returncode == 0, p.stderr
    assert "(1/1)" in run_line(p.stdout)[1]

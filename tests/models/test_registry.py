"""Model providers by registry: entry points (``assay.models``) with declared capabilities.

A provider installed the way pip installs one (a module plus a dist-info with
``entry_points.txt``) is usable as ``--model <provider>/<name>`` through the real CLI with
no other edit; what it declares (context window, constrained decoding, ...) is what the
tasks act on; and no caller in ``src/`` looks at a model's name.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from assay.errors import ModelSpecError
from assay.models import ModelCapabilities, Provider, Subject, capabilities_of, registry
from assay.models.base import get_subject, parse_model_spec
from tests.plugins import install_dist

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "assay"
EXAMPLE = REPO / "examples" / "qa_example.jsonl"

#: a third-party provider in one file: ``myprov`` (context unknown) and ``tinyprov`` (a
#: small context, constrained decoding, one call at a time). Each model logs the calls it
#: gets to $PLUGIN_LOG; it plays agent, examiner or judge by its name.
PLUGIN = '''
import json, os

from assay.core.types import Message, Reply, Usage
from assay.models import ModelCapabilities, Provider


class PluginModel:
    def __init__(self, provider, name, options):
        self.model_id = f"{provider}/{name}"
        self.name = name
        self.options = options

    async def generate(self, messages, *, tools=None, response_schema=None, **params):
        log = os.environ.get("PLUGIN_LOG")
        if log:
            with open(log, "a") as f:
                f.write(json.dumps({"model": self.model_id, "params": params,
                                    "chars": sum(len(m.content or "") for m in messages),
                                    "schema": response_schema is not None}) + "\\n")
        if self.name == "examiner":
            done = any(m.role == "user" and "Agent:" in (m.content or "") for m in messages)
            text = json.dumps({"message": "" if done else "Say hello, at length.",
                               "task_finished": done})
        elif self.name == "judge":
            text = json.dumps({"reason": "it said hello", "is_hit": True})
        elif self.name == "agent":
            text = "hello " * 1500
        else:  # answers its own name: myprov/Paris says "Paris"
            text = self.name
        return Reply(Message("assistant", text), Usage(3, 1), 0.0)


def build_big(name, **options):
    return PluginModel("myprov", name, options)


def build_tiny(name, **options):
    return PluginModel("tinyprov", name, options)


BIG = Provider(build=build_big, capabilities=ModelCapabilities(native_tools=False),
               forms=(("myprov/<word>", "answers <word>"),))
TINY = Provider(build=build_tiny, capabilities=ModelCapabilities(
    context_window=4096, native_tools=False, constrained_decoding=True,
    one_call_at_a_time=True))
'''


def install_plugin(site: Path) -> None:
    """The provider package as pip installs it: the module plus a dist-info."""
    install_dist(site, "assay-model-plugin", {"assay_model_plugin/__init__.py": PLUGIN},
                 "[assay.models]\nmyprov = assay_model_plugin:BIG\n"
                 "tinyprov = assay_model_plugin:TINY\n"
                 # a plugin cannot take a built-in's name
                 "local = assay_model_plugin:BIG\n")


def plugin_env(site: Path, **extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])]), **extra)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, env=env, timeout=300)


@pytest.fixture
def plugin_site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    install_plugin(site)
    return site


@pytest.fixture
def in_process_plugin(plugin_site: Path, monkeypatch: pytest.MonkeyPatch):
    """The plugin installed into this process (the registry read again, then forgotten)."""
    monkeypatch.syspath_prepend(str(plugin_site))
    registry.clear_cache()
    yield plugin_site
    monkeypatch.undo()
    sys.modules.pop("assay_model_plugin", None)
    registry.clear_cache()


# --------------------------------------------------------------------------- the registry


def test_assay_registers_its_own_providers_as_entry_points():
    text = (REPO / "pyproject.toml").read_text()
    section = text.split('[project.entry-points."assay.models"]\n', 1)[1].split("\n\n")[0]
    declared = dict(re.findall(r'^(\w+) = "([^"]+)"$', section, re.M))
    assert declared == {"local": "assay.models.local_model:PROVIDER",
                        "openai": "assay.models.openai_model:PROVIDER",
                        "python": "assay.models.python_agent:PROVIDER",
                        "agent": "assay.agents.react:PROVIDER"}
    # installed (pip install -e .): the registry reads them from the metadata, the models
    # first, then the agent that drives one
    assert registry.provider_names()[:4] == ["local", "openai", "python", "agent"]
    for name in declared:
        provider = registry.get_provider(name)
        assert isinstance(provider, Provider)
        assert isinstance(provider.capabilities, ModelCapabilities)


def test_each_provider_declares_its_capabilities():
    local = registry.get_provider("local").capabilities
    openai = registry.get_provider("openai").capabilities
    python = registry.get_provider("python").capabilities
    assert local == ModelCapabilities(context_window=8192, native_tools=True,
                                      constrained_decoding=True, logprobs=True,
                                      one_call_at_a_time=True)
    assert local.small_context
    assert openai == ModelCapabilities(context_window=None, native_tools=True,
                                       constrained_decoding=False, logprobs=True,
                                       one_call_at_a_time=False)
    assert not openai.small_context
    assert python == ModelCapabilities(context_window=None, native_tools=False,
                                       constrained_decoding=False, logprobs=False,
                                       one_call_at_a_time=False)
    with pytest.raises(AttributeError):  # a frozen record
        local.context_window = 1  # type: ignore[misc]


@pytest.mark.parametrize("spec, parts", [
    ("local", ("local", "")), (" local ", ("local", "")),
    ("local/models/x.gguf", ("local", "models/x.gguf")),
    ("openai/gpt-4o", ("openai", "gpt-4o")), ("openai/org/model:tag", ("openai", "org/model:tag")),
    ("python/my_agent:make", ("python", "my_agent:make")),
])
def test_every_accepted_spec_form_still_parses(spec, parts):
    assert parse_model_spec(spec) == parts


@pytest.mark.parametrize("spec", ["foo/bar", "openai", "openai/", "python", "local/", "gpt-4",
                                  "", "/x", "LOCAL"])
def test_an_unknown_spec_is_one_line_naming_the_registered_forms(spec):
    with pytest.raises(ModelSpecError) as e:
        parse_model_spec(spec)
    assert str(e.value) == (f"unknown model spec {spec.strip()!r}; use 'local', "
                            "'local/<path.gguf>', 'openai/<model>', "
                            "'python/<module>:<factory>' or "
                            "'agent/react?model=<spec>&tools=<a,b>'")


def test_parsing_a_spec_imports_no_provider_module():
    code = ("import sys\nfrom assay.models.base import parse_model_spec, get_subject\n"
            "parse_model_spec('openai/x'); parse_model_spec('python/a:b')\n"
            "mods = lambda: sorted(m for m in sys.modules if m.startswith('assay.models.'))\n"
            "print(mods())\nget_subject('openai/x', base_url='http://127.0.0.1:9')\n"
            "print(mods())\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    before, after = (json.loads(line.replace("'", '"')) for line in p.stdout.splitlines())
    assert before == ["assay.models.base", "assay.models.pool", "assay.models.registry"]
    # the provider's module, the token rules it shares with the embedded model, and how it
    # is priced (whether its endpoint runs here)
    assert after == ["assay.models.base", "assay.models.loglikelihood",
                     "assay.models.openai_model", "assay.models.pool", "assay.models.pricing",
                     "assay.models.registry"]


# --------------------------------------------------------------------------- capabilities read


def test_subjects_and_models_carry_their_providers_capabilities():
    subject = get_subject("openai/x", base_url="http://127.0.0.1:9")
    assert subject.capabilities is registry.get_provider("openai").capabilities
    assert capabilities_of(subject) == capabilities_of(subject.session())
    assert capabilities_of("openai/anything") == subject.capabilities
    assert capabilities_of("local").constrained_decoding
    assert capabilities_of("local/any/file.gguf").small_context
    assert not capabilities_of("python/a:b").native_tools
    # not a spec, nothing declared: nothing special assumed
    assert capabilities_of("gpt-4o") == ModelCapabilities()


def test_a_python_agent_taking_tools_says_so():
    from assay.models.python_agent import PythonAgent, python_subject

    class Plain:
        def run(self, prompt):
            return "x"

    class Native:
        def generate(self, messages, tools=None, response_schema=None, **params):
            return "x"

    assert not capabilities_of(PythonAgent(Plain(), "python/p")).native_tools
    assert capabilities_of(PythonAgent(Native(), "python/n")).native_tools
    subject = python_subject(Native)
    assert subject.capabilities == registry.get_provider("python").capabilities
    assert capabilities_of(subject.session()).native_tools


def test_the_engine_context_shows_the_capabilities_of_the_model_it_wraps():
    from assay.engine.calls import CallContext

    class Tiny:
        model_id = "whatever"  # the name says nothing
        capabilities = ModelCapabilities(context_window=2048, constrained_decoding=True)

        async def generate(self, messages, **kw):
            raise AssertionError

    ctx = CallContext(Tiny(), shared=object(), identity="i", epoch=0)  # type: ignore[arg-type]
    assert capabilities_of(ctx) is Tiny.capabilities
    assert capabilities_of(Subject(Tiny())) is Tiny.capabilities


def test_judges_and_conversations_ask_the_capabilities_not_the_name():
    from assay.tasks.mtbench.judging import constrained_judge

    class Named:  # named like the embedded model, declares otherwise
        model_id = "local"
        capabilities = ModelCapabilities()

    class Unnamed:  # named like nothing, declares constrained decoding
        model_id = "openai/x"
        capabilities = ModelCapabilities(constrained_decoding=True, context_window=4096)

    assert not constrained_judge(Named()) and constrained_judge(Unnamed())
    # a spec string is read through its provider's declaration
    assert constrained_judge("local") and constrained_judge("local/x.gguf")
    assert not constrained_judge("openai/local") and not constrained_judge(None)
    assert capabilities_of(Unnamed()).small_context and not capabilities_of(Named()).small_context


# --------------------------------------------------------------------------- a plugin provider


def test_a_plugin_provider_is_registered_with_its_capabilities(in_process_plugin):
    from assay.tasks.datagen.families import model_family
    from assay.tasks.mtbench.judging import constrained_judge

    assert registry.provider_names() == ["local", "openai", "python", "agent", "myprov",
                                         "tinyprov"]
    assert parse_model_spec("myprov/Paris") == ("myprov", "Paris")
    # a plugin cannot take a built-in's name
    assert registry.get_provider("local").bare == "SmolLM2-135M-Instruct.Q4_1.gguf"
    with pytest.raises(ModelSpecError) as e:
        parse_model_spec("myprov")  # not declared bare
    assert "'myprov/<word>' or 'tinyprov/<model>'" in str(e.value)
    assert "\n" not in str(e.value)
    tiny = get_subject("tinyprov/judge")
    assert tiny.capabilities.context_window == 4096 and tiny.capabilities.one_call_at_a_time
    # the model itself carries what its provider declared, wherever the engine wraps it
    assert capabilities_of(tiny.session()) is tiny.capabilities
    assert constrained_judge(tiny.session()) and constrained_judge("tinyprov/x")
    assert not constrained_judge("myprov/x")
    assert model_family("tinyprov/qwen2-7b") == "qwen"


def test_a_plugin_provider_runs_through_the_real_cli(workspace, plugin_site, tmp_path):
    env = plugin_env(plugin_site)
    p = cli("run", "qa", "--data", str(EXAMPLE), "--model", "myprov/Paris", "--limit", "3",
            "-q", env=env)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("run ") and "(1/3)" in lines[1], p.stdout  # only France
    runs = json.loads(cli("list", "runs", "--json", env=env).stdout)
    assert runs[0]["model"] == "myprov/Paris"
    # an unknown provider: one line naming every registered form, the plugin's included
    p = cli("run", "qa", "--data", str(EXAMPLE), "--model", "nope/x", env=env)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert "unknown model spec 'nope/x'" in p.stderr
    assert "'agent/react?model=<spec>&tools=<a,b>', 'myprov/<word>' or 'tinyprov/<model>'" in p.stderr
    # without the package on the path the provider is unknown
    p = cli("run", "qa", "--data", str(EXAMPLE), "--model", "myprov/Paris")
    assert p.returncode == 2 and "unknown model spec 'myprov/Paris'" in p.stderr


def converse_calls(provider: str, site: Path, tmp_path: Path) -> dict[str, list[dict]]:
    """Run one converse case with agent, examiner and judge from ``provider``; the calls
    each role got."""
    case = tmp_path / provider / "hello.yaml"
    case.parent.mkdir(parents=True)
    case.write_text(textwrap.dedent("""\
        version: 1
        task_description: Ask the agent to say hello.
        max_rounds: 2
        scoring_points:
          - score_point: The agent said hello
            weight: 1
        """))
    log = tmp_path / f"{provider}.jsonl"
    p = cli("run", "converse", "--cases", str(case.parent), "--model", f"{provider}/agent",
            "--examiner-model", f"{provider}/examiner", "--judge-model", f"{provider}/judge",
            "-q", env=plugin_env(site, PLUGIN_LOG=str(log)))
    assert p.returncode == 0, p.stderr
    calls: dict[str, list[dict]] = {}
    for line in log.read_text().splitlines():
        call = json.loads(line)
        calls.setdefault(call["model"].split("/", 1)[1], []).append(call)
    return calls


def test_a_conversation_is_kept_short_for_a_small_context_whatever_its_name(
        workspace, plugin_site, tmp_path):
    small = converse_calls("tinyprov", plugin_site, tmp_path)
    large = converse_calls("myprov", plugin_site, tmp_path)
    # the agent's reply budget: 128 tokens in a small context, else 512
    assert {c["params"]["max_tokens"] for c in small["agent"]} == {128}
    assert {c["params"]["max_tokens"] for c in large["agent"]} == {512}
    # a small examiner keeps to JSON when greedy
    assert {c["params"]["temperature"] for c in small["examiner"]} == {0.0}
    assert {c["params"]["temperature"] for c in large["examiner"]} == {0.7}
    # the judge reads the 9,000-character reply cut to its context, or whole
    assert max(c["chars"] for c in small["judge"]) < 8000
    assert min(c["chars"] for c in large["judge"]) > 9000


# --------------------------------------------------------------------------- no name sniffing

#: a model's name compared with a provider's: what callers must not do (they ask
#: :func:`assay.models.capabilities_of`)
SNIFFS = [
    re.compile(r"""startswith\(\s*\(?\s*["'](local|openai|python)\b"""),
    re.compile(r"""(==|!=)\s*["'](local|openai)["']|["'](local|openai)["']\s*(==|!=)"""),
    re.compile(r"""["'](local|openai|python)/["']"""),
    re.compile(r"""(split|partition)\(\s*["']/["'][^)]*\)\[0\]\s*(==|!=|in)\s*[("']"""),
    re.compile(r"""\bprovider\s*(==|!=|in)\s*[("']"""),
]
#: the providers name their own models
PROVIDER_MODULES = {"models/local_model.py", "models/openai_model.py", "models/python_agent.py"}
#: known, with the reason: plan files may not name a Python agent (it imports code)
ALLOWED = {("plan/untrusted.py", 'PYTHON_SPEC = "python/"')}


def test_no_caller_looks_at_a_models_name():
    found = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if rel in PROVIDER_MODULES:
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if any(s.search(code) for s in SNIFFS) and (rel, code.strip()) not in ALLOWED:
                found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "model names sniffed:\n" + "\n".join(found)


@pytest.mark.parametrize("line", [
    'local = examiner.model_id.startswith("local")',
    'return str(model_id or "").split("/", 1)[0] == "local"',
    'if provider == "local" and not name:',
    'for prefix in ("openai/", "local/", "python/"):',
    "if spec.startswith(('openai', 'local')):",
])
def test_the_sniff_patterns_catch_the_old_lines(line):
    assert any(s.search(line) for s in SNIFFS)

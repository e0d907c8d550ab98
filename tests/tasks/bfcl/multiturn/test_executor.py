"""The safe executor gives the official execution results, and refuses what it must.

1. Every ground-truth call of every multi-turn entry (4625), run in order per entry on
   fresh instances, gives exactly the official ``execute_multi_turn_func_call`` string.
2. A table of invalid calls (wrong or missing arguments, unknown names, the blacklist,
   syntax errors) gives exactly the official error text.
3. Calls the official code would *run* (it ``eval``s them: builtins, ``__import__``,
   dunder chains, module functions, nested calls, list literals) are refused: the result
   is an ``Error during execution:`` text, no simulator method is called, the simulator
   state is unchanged, and a marker file the payload would create does not appear.

Unavoidable divergences from the official text (``test_documented_divergences`` pins
them): wherever the official ``eval`` runs the code, there is no official error text to
copy, so the result is the refusal text instead of what running it gives:

- builtins and ``multi_turn_utils``' globals: ``print(x=1)`` (official: ``'x' is an invalid
  keyword argument for print()``), ``__import__(name='os')`` (a module repr),
  ``json.dumps(obj=1)`` (``1``), ``importlib.import_module(...)``; such a name as an
  argument (``cd(folder=json)``) too;
- nested calls and expressions around calls: ``mv(source=pwd(), destination='x')``
  (official: runs ``pwd`` first, then ``unhashable type: 'dict'``), ``[ls()]``,
  ``ls().keys()``;
- non-literal arguments the official evaluates without harm: ``cd(*['x'])``,
  ``cd(**{'folder': 'x'})``, ``cd(folder=f'x')``, ``cd(folder='a' + 'b')``;
- the official method-name rewrite inside string literals: ``echo(content='run ls() now',
  ...)`` stores ``run <model>_eval_<id>_GorillaFileSystem_instance.ls() now`` officially
  (the instance name, with the model name, leaks into the state); here the string is
  stored as written. No ground-truth string contains ``<method>(``.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import official_mt_oracle as oracle
import pytest

from assay.tasks.bfcl.multiturn import sim
from assay.tasks.bfcl.multiturn.checker import is_long_context
from assay.tasks.bfcl.multiturn.executor import REFUSAL, execute_call, execute_calls

ERROR = "Error during execution: "


def _entry(entry_id: str) -> dict[str, Any]:
    category = entry_id.rsplit("_", 1)[0]
    entries, _ = oracle.entries(category)
    return next(e for e in entries if e["id"] == entry_id)


def ours_execute(entry: dict[str, Any], turns: list[list[str]]) -> list[list[str]]:
    """Our results of ``turns`` run in order on one set of fresh instances."""
    with sim.pristine_long_context():
        instances = sim.make_instances(entry["involved_classes"], entry["initial_config"],
                                       long_context=is_long_context(entry["id"]))
        methods = sim.involved_methods(instances)
        return [execute_calls(calls, methods) for calls in turns]


@pytest.mark.parametrize("category", oracle.CATEGORIES)
def test_every_ground_truth_call_gives_the_official_result(category: str) -> None:
    entries, truth = oracle.entries(category)
    calls = 0
    differ = []
    for entry in entries:
        gt = truth[entry["id"]]
        ours = ours_execute(entry, gt)
        official = oracle.official_execute(entry, gt)
        for turn, (a, b) in enumerate(zip(ours, official, strict=True)):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                calls += 1
                assert not y.startswith(ERROR), f"{entry['id']}: a ground-truth call fails: {y}"
                if x != y:
                    differ.append(f"{entry['id']} turn {turn} call {i} {gt[turn][i]}:\n"
                                  f"  ours     {x[:300]}\n  official {y[:300]}")
    assert calls == oracle.CALL_COUNTS[category]
    assert not differ, f"{len(differ)} of {calls} results differ:\n" + "\n".join(differ[:5])


#: (entry, calls run in order): invalid calls whose official text we must give exactly.
#: multi_turn_base_0 involves TwitterAPI and GorillaFileSystem (not MathAPI).
EXACT = [
    ("multi_turn_base_0", ["cd(fold='x')"]),  # wrong keyword
    ("multi_turn_base_0", ["cd()"]),  # missing argument
    ("multi_turn_base_0", ["cd('a', 'b')"]),  # too many positional arguments
    ("multi_turn_base_0", ["cd(folder=1)"]),  # wrong types: the method's own failure
    ("multi_turn_base_0", ["cd(folder=None)"]),
    ("multi_turn_base_0", ["cd(folder=['a'])"]),
    ("multi_turn_base_0", ["cd(folder=b'x')"]),
    ("multi_turn_base_0", ["post_tweet(content=5, tags='x')"]),
    ("multi_turn_base_0", ["foo(a=1)"]),  # unknown function
    ("multi_turn_base_0", ["add(a=1, b=2)"]),  # a function of a class not involved
    ("multi_turn_base_0", ["os.system(command='ls')"]),
    ("multi_turn_base_0", ["ls.__class__()"]),  # `ls` not followed by "(": not rewritten
    ("multi_turn_base_0", ["cd(folder=ls)"]),
    ("multi_turn_base_0", ["ls"]),
    ("multi_turn_base_0", ["foo(x=ls())"]),  # the unknown function fails before ls runs
    ("multi_turn_base_0", ["cd(folder=a(b=1))"]),  # prompt decoding renders {'a': {'b': 1}}
    ("multi_turn_base_0", ["ls(a=1, **x)"]),
    ("multi_turn_base_0", ["exit()"]),  # the official blacklist
    ("multi_turn_base_0", ["remove(x=1)"]),
    ("multi_turn_base_0", ["kill(pid=1)"]),
    ("multi_turn_base_0", ["exit"]),
    ("multi_turn_base_0", ["cd(folder='x'"]),  # syntax errors, worded as eval words them
    ("multi_turn_base_0", ["cd(my-key='x')"]),
    ("multi_turn_base_0", ["ls();ls()"]),
    ("multi_turn_base_0", ["cd(folder='x', 1)"]),
    ("multi_turn_base_0", [""]),
    ("multi_turn_base_0", ["cd(folder='\x00')"]),
    ("multi_turn_base_0", ["cd(folder='a', folder='b')"]),  # a repeated keyword
    ("multi_turn_base_0", ["f(x=inf)"]),  # FC Infinity/NaN
    ("multi_turn_base_0", ["cd(folder=inf)"]),
    ("multi_turn_base_0", ["cd(folder=nan)"]),
    ("multi_turn_base_0", ["cd(folder=true)"]),
    ("multi_turn_base_0", [" \tls()"]),  # eval strips leading blanks
    ("multi_turn_base_0", ["ls ()"]),
    ("multi_turn_base_0", ["cd(folder='document')", "ls()", "pwd()", "cd(folder='..')"]),
    ("multi_turn_base_32", ["logarithm(value=8, base=2, precision=3)"]),  # mpf: str(dict)
    ("multi_turn_base_32", ["logarithm(value=-1, base=2, precision=3)"]),
    ("multi_turn_long_context_151", ["get_credit_card_balance(card_id='1234567812345678')"]),
]


@pytest.mark.parametrize(("entry_id", "calls"), EXACT, ids=[repr(c[-1])[:40] for _, c in EXACT])
def test_invalid_calls_give_the_official_text(entry_id: str, calls: list[str]) -> None:
    entry = _entry(entry_id)
    assert ours_execute(entry, [calls]) == oracle.official_execute(entry, [calls])


#: payloads the official ``eval`` would run; ``{marker}`` is a path the payload would create
REFUSED = [
    "__import__('os')",
    "__import__(name='os')",
    "__import__('os').system('touch {marker}')",
    "ls.__class__()",
    "().__class__.__bases__[0].__subclasses__()",
    "json.dumps(obj=1)",
    "importlib.import_module(name='os')",
    "importlib.import_module('os').system('touch {marker}')",
    "print(x=1)",
    "open('{marker}', 'w')",
    "mv(source=pwd(), destination='x')",
    "[ls()]",
    "[mkdir(dir_name='x')]",
    "mkdir(dir_name='x').__class__",
    "mkdir(dir_name='a') or mkdir(dir_name='b')",
    "cd(folder='document')(1)",
    "touch(file_name=open('{marker}', 'w'))",
    "touch(file_name=[open('{marker}', 'w')][0])",
    "cd(folder=eval(\"__import__('os').system('touch {marker}')\"))",
    "cd(folder=exec(\"open('{marker}', 'w')\"))",
    "(lambda: open('{marker}', 'w'))()",
    "cd(**{{'folder': __import__('os').system('touch {marker}')}})",
    "cd(*[open('{marker}', 'w')])",
    "cd(folder=f'{{open(\"{marker}\", \"w\")}}')",
    "cd(folder=json)",
    "ls().keys()",
]


def _snapshot(instances: dict[str, Any]) -> bytes:
    """Everything of the instances, private attributes (cwd, random state) included."""
    return pickle.dumps({k: vars(v) for k, v in instances.items()})


@pytest.mark.parametrize("payload", REFUSED)
def test_refused_and_nothing_runs(payload: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    call = payload.format(marker=marker)
    entry = _entry("multi_turn_base_0")
    with sim.pristine_long_context():
        instances = sim.make_instances(entry["involved_classes"], entry["initial_config"],
                                       long_context=False)
        called: list[str] = []

        def spy(name: str, method: Any) -> Any:
            def run(*args: Any, **kwargs: Any) -> Any:
                called.append(name)
                return method(*args, **kwargs)
            return run

        methods = {n: spy(n, m) for n, m in sim.involved_methods(instances).items()}
        before = _snapshot(instances)
        result = execute_call(call, methods)
        assert result.startswith(ERROR), result
        assert called == [], f"{call} ran {called}"
        assert _snapshot(instances) == before
        assert not marker.exists()
        # the spy sees a real call: it is not blind
        assert execute_call("pwd()", methods) == '{"current_working_directory": "/workspace"}'
        assert called == ["pwd"]


#: call -> what the official code gives by running it (harmless payloads only)
DIVERGENT = {
    "print(x=1)": ERROR + "'x' is an invalid keyword argument for print()",
    "__import__(name='os')": "<module 'os' (frozen)>",
    "json.dumps(obj=1)": "1",
    "mv(source=pwd(), destination='x')": ERROR + "unhashable type: 'dict'",
    "[ls()]": "[{'current_directory_content': ['document', 'archive']}]",
    "ls().keys()": "dict_keys(['current_directory_content'])",
    "cd(folder=json)": ERROR + "module 'json' has no attribute 'rstrip'",
    "cd(*['archive'])": '{"current_working_directory": "archive"}',
    "cd(**{'folder': 'archive'})": '{"current_working_directory": "archive"}',
    "cd(folder=f'archive')": '{"current_working_directory": "archive"}',
    "cd(folder='arch' + 'ive')": '{"current_working_directory": "archive"}',
}


@pytest.mark.parametrize("call", list(DIVERGENT))
def test_documented_divergences(call: str) -> None:
    """Where the official runs the code, we refuse: pinned, so a change shows."""
    entry = _entry("multi_turn_base_0")
    assert oracle.official_execute(entry, [[call]]) == [[DIVERGENT[call]]]
    assert ours_execute(entry, [[call]]) == [[ERROR + REFUSAL]]


def test_divergence_string_rewrite() -> None:
    """The official rewrites method names inside string literals; we store the string."""
    entry = _entry("multi_turn_base_0")
    calls = ["touch(file_name='n.txt')", "echo(content='run ls() now', file_name='n.txt')",
             "cat(file_name='n.txt')"]
    official = oracle.official_execute(entry, [calls])[0][2]
    assert "_GorillaFileSystem_instance.ls() now" in official
    assert ours_execute(entry, [calls])[0][2] == '{"file_content": "run ls() now"}'

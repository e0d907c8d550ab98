"""Strict and loose verdicts by the official loop (``evaluation_lib.py``) over ``if-verifiable``
0.1.2's checkers (IFEval's 25, IFBench's 58). Unlike its own loop: the response is never
stripped or rewritten, an empty one fails all, unknown ids are errors, a raising checker is not
followed. Chance pinned: ``langdetect`` seeded 0, builds seeded by :func:`build_seed`."""

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
    error: str | None = None  # why a checker raised

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.instruction_id, "strict": self.strict,
                               "loose": self.loose}
        if self.error:
            out["error"] = self.error
        return out


def loose_variants(response: str) -> list[str]:
    """The 8 responses loose tries, in the official order (without first/last line, ``*``)."""
    lines = response.split("\n")
    no_first = "\n".join(lines[1:]).strip()
    no_last = "\n".join(lines[:-1]).strip()
    no_both = "\n".join(lines[1:-1]).strip()
    return [response, response.replace("*", ""), no_first, no_last, no_both,
            no_first.replace("*", ""), no_last.replace("*", ""), no_both.replace("*", "")]


def _import_registry(flavor: str) -> Any:
    """The checker registry, skipping the package ``__init__`` when ``datasets`` (which only
    its data loader needs) is not installed."""
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
        if e.name in ("if_verifiable", "nltk", "langdetect", "emoji", "syllapy", "immutabledict"):
            raise ConfigError(f"the {flavor} checkers need {e.name}: {INSTALL_HINT}") from e
        raise


def checker_registry(flavor: str, nltk_data: str | None = None) -> dict[str, Callable[..., Any]]:
    """Instruction id -> checker class of ``flavor``, with the NLTK data it reads in place."""
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
    """The checker classes; IFBench's ``nltk.download`` at import is made a no-op."""
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
    for iid in instruction_ids:
        if iid not in registry:
            raise ConfigError(f"unknown {flavor} instruction id {iid!r}: no checker for it in "
                              f"if-verifiable ({len(registry)} known)")


def _kwargs(raw: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (raw or {}).items() if v is not None}


def build_seed(instruction_id: str, kwargs: dict[str, Any]) -> str:
    return json.dumps([instruction_id, kwargs], sort_keys=True, default=str)


def _checker(cls: Callable[..., Any], iid: str, kwargs: dict[str, Any], prompt: str) -> Any:
    """A checker built with ``kwargs`` (and the prompt when it asks), its random draws (such
    as IFEval's letter-frequency '#' and '!') seeded, the global random state kept."""
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
    """Whether ``checker`` passes ``text``; blank text or a raise (error kept) do not."""
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

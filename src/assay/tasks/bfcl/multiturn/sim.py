"""The official BFCL simulators (GorillaFileSystem, MathAPI, ... TravelAPI), used as they ship.

Imported at runtime, never copied: from an installed ``bfcl_eval``, else from the sources
``assay data pull bfcl`` extracts. Long-context entries share module-level dicts the official code
mutates in place, which :func:`pristine_long_context` restores between entries.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import inspect
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from assay.errors import DatasetError
from assay.tasks.bfcl.data import cache_root

__all__ = ["MULTI_TURN_CLASSES", "STATELESS_CLASSES", "involved_methods", "load_class",
           "make_instances", "pristine_long_context", "sim_root"]

PREFIX = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code"

#: class name -> module (``CLASS_FILE_PATH_MAPPING`` in the official constants)
MULTI_TURN_CLASSES = {
    "GorillaFileSystem": "gorilla_file_system", "MathAPI": "math_api",
    "MessageAPI": "message_api", "TwitterAPI": "posting_api", "TicketAPI": "ticket_api",
    "TradingBot": "trading_bot", "TravelAPI": "travel_booking",
    "VehicleControlAPI": "vehicle_control", "WebSearchAPI": "web_search",
    "MemoryAPI_kv": "memory_kv", "MemoryAPI_vector": "memory_vector",
    "MemoryAPI_rec_sum": "memory_rec_sum",
}
#: classes with no state, never loaded with a scenario
STATELESS_CLASSES = frozenset({"MathAPI"})
#: the module-level dicts long-context simulators share and mutate
LONG_CONTEXT_SHARED = ("CREDIT_CARD_EXTENSION", "BOOKING_RECORD_EXTENSION",
                       "LONG_WEATHER_EXTENSION")

_lock = threading.RLock()
_pristine: dict[str, Any] | None = None


def sim_root() -> Path | None:
    """The folder holding an importable ``bfcl_eval``: an installed one, else the newest
    sources ``assay data pull bfcl`` extracted; ``None`` when neither is here."""
    spec = importlib.util.find_spec("bfcl_eval")
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations))).parent
    cache = cache_root()
    if cache.is_dir():
        for version in sorted(cache.iterdir(), reverse=True):
            code = version / "_code"
            if (code / "bfcl_eval" / "__init__.py").is_file():
                return code
    return None


def _import(module: str) -> Any:
    name = f"{PREFIX}.{module}"
    with _lock:
        if name in sys.modules:
            return sys.modules[name]
        if importlib.util.find_spec("bfcl_eval") is None:
            root = sim_root()
            if root is None:
                raise DatasetError(
                    "BFCL's simulators (bfcl_eval) are not here; run 'assay data pull bfcl "
                    "--force' (extracts them from the bfcl-eval wheel) or 'pip install "
                    "--no-deps bfcl-eval==2026.3.23'")
            sys.path.append(str(root))
            importlib.invalidate_caches()
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and e.name.split(".")[0] == "bfcl_eval":
                raise DatasetError(f"this bfcl_eval has no {name}; run 'assay data pull bfcl "
                                   "--force'") from e
            raise DatasetError(f"BFCL's {module} simulator needs the package {e.name!r}: "
                               f"pip install {e.name}") from e


def load_class(name: str) -> type:
    if name not in MULTI_TURN_CLASSES:
        raise DatasetError(f"unknown BFCL simulator class {name!r}")
    return getattr(_import(MULTI_TURN_CLASSES[name]), name)


def make_instances(involved: list[str], initial_config: dict[str, Any], *,
                   long_context: bool) -> dict[str, Any]:
    """Fresh instances of the involved classes, loaded as the official executor loads them."""
    out: dict[str, Any] = {}
    for name in involved:
        inst = load_class(name)()
        if name not in STATELESS_CLASSES:
            inst._load_scenario(copy.deepcopy(initial_config.get(name, {})),
                                long_context=long_context)
        out[name] = inst
    return out


def involved_methods(instances: dict[str, Any]) -> dict[str, Any]:
    """Public bound methods of the instances by name (a later class wins a clash, as in the
    official mapping; the official classes have none)."""
    methods: dict[str, Any] = {}
    for inst in instances.values():
        names = _method_names.get(type(inst))
        if names is None:  # inspect.getmembers is slow; a class's methods do not change
            names = _method_names[type(inst)] = tuple(
                name for name, _ in inspect.getmembers(inst, predicate=inspect.ismethod)
                if not name.startswith("_"))
        for name in names:
            methods[name] = getattr(inst, name)
    return methods


#: class -> the public names ``inspect.getmembers(instance, inspect.ismethod)`` finds on
#: its instances (the simulators set no callable instance attributes)
_method_names: dict[type, tuple[str, ...]] = {}


@contextmanager
def pristine_long_context() -> Iterator[None]:
    """Within this block the shared long-context dicts start as the wheel ships them
    (restored on entry and exit, so one entry's calls cannot leak into the next); hold it
    around one entry at a time."""
    global _pristine
    module = _import("long_context")
    with _lock:
        if _pristine is None:
            _pristine = _shipped_values(module)
        try:
            _restore(module)
            yield
        finally:
            _restore(module)


def _shipped_values(module: Any) -> dict[str, Any]:
    """The shared dicts as the wheel ships them: read from a private copy of the module's
    source, so a mutation made before the first use cannot become the reference."""
    origin = getattr(module, "__file__", None)
    spec = importlib.util.spec_from_file_location("_assay_bfcl_long_context", origin) \
        if origin else None
    if spec is None or spec.loader is None:  # pragma: no cover - a module without a file
        return {k: copy.deepcopy(getattr(module, k)) for k in LONG_CONTEXT_SHARED}
    private = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(private)
    return {k: getattr(private, k) for k in LONG_CONTEXT_SHARED}


def _restore(module: Any) -> None:
    assert _pristine is not None
    for key, value in _pristine.items():
        shared = getattr(module, key)
        if shared == value:  # untouched (the usual case): a compare is ~30x cheaper than a copy
            continue
        shared.clear()  # in place: the simulator modules imported the same object
        shared.update(copy.deepcopy(value))

"""Model providers: ``<provider>/<name>`` names an ``assay.models`` entry point whose value is a
:class:`Provider` (assay's own too), imported only when used. Callers never look at a model's
name: they ask :func:`capabilities_of`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution, entry_points
from typing import Any

from assay.errors import ModelSpecError

GROUP = "assay.models"

#: a context window (tokens) at or under this is small: tasks keep conversations short
SMALL_CONTEXT_TOKENS = 16384


@dataclass(frozen=True)
class ModelCapabilities:
    """What a model can do, as its provider declares it (never read from its name):
    ``context_window`` ``None`` is unknown, assumed large; ``constrained_decoding``: replies
    always match ``response_schema``; ``logprobs``: it has ``loglikelihood(requests)``;
    ``one_call_at_a_time``: one KV cache, so samples side by side gain nothing."""

    context_window: int | None = None
    native_tools: bool = True
    constrained_decoding: bool = False
    logprobs: bool = False
    one_call_at_a_time: bool = False

    @property
    def small_context(self) -> bool:
        """Known and small: a task keeps conversation, judge transcript and replies short."""
        return self.context_window is not None and self.context_window <= SMALL_CONTEXT_TOKENS


@dataclass(frozen=True)
class Provider:
    """An ``assay.models`` entry point's value: ``build(name, **options)`` makes a model or
    a subject (options: ``base_url``, ``api_key``, ``timeout``, ``params``,
    ``max_reply_bytes``); ``bare``: what the provider's name alone stands for (``build``
    gets ``""``), ``None`` when no spec; ``forms``: how its specs are written."""

    build: Callable[..., Any]
    capabilities: ModelCapabilities = ModelCapabilities()
    bare: str | None = None
    forms: tuple[tuple[str, str], ...] = ()


@functools.lru_cache(maxsize=1)
def _own_entry_points() -> dict[str, Any]:
    """assay's own providers, from its one distribution (cheaper than scanning them all)."""
    try:
        eps = distribution("assay").entry_points
    except PackageNotFoundError:  # run from a source tree without installing
        return {}
    return {ep.name: ep for ep in eps if ep.group == GROUP}


@functools.lru_cache(maxsize=1)
def _entry_points() -> dict[str, Any]:
    """Every installed provider; a plugin cannot take a built-in's name."""
    found = {ep.name: ep for ep in entry_points(group=GROUP)}
    found.update(_own_entry_points())
    return found


#: assay's own providers in the order listings show them (the models, then the agent)
OWN_ORDER = ("local", "openai", "python", "agent")


def provider_names() -> list[str]:
    """Every registered provider: assay's own first (:data:`OWN_ORDER`), then plugins."""
    own = sorted(_own_entry_points(), key=lambda n: (
        OWN_ORDER.index(n) if n in OWN_ORDER else len(OWN_ORDER), n))
    return own + sorted(n for n in _entry_points() if n not in own)


def _entry_point(name: str) -> Any | None:
    ep = _own_entry_points().get(name)
    return ep if ep is not None else _entry_points().get(name)


def is_registered(name: str) -> bool:
    """Whether ``name`` is a registered provider (no provider module is imported)."""
    return _entry_point(name) is not None


@functools.cache
def get_provider(name: str) -> Provider:
    """The provider registered as ``name``, its module imported on first use."""
    ep = _entry_point(name)
    if ep is None:
        raise ModelSpecError(f"unknown model provider {name!r}; registered providers: "
                             f"{', '.join(provider_names()) or 'none'}")
    try:
        provider = ep.load()
    except Exception as e:
        raise ModelSpecError(f"model provider {name!r} ({ep.value}) failed to load: "
                             f"{type(e).__name__}: {e}") from e
    if not (callable(getattr(provider, "build", None))
            and isinstance(getattr(provider, "capabilities", None), ModelCapabilities)):
        raise ModelSpecError(f"model provider {name!r} ({ep.value}) is a "
                             f"{type(provider).__name__}, not an assay.models.Provider")
    return provider


def forms_of(name: str) -> tuple[tuple[str, str], ...]:
    """How ``name``'s specs are written (never raises: a broken plugin gets the default)."""
    try:
        forms = get_provider(name).forms
    except ModelSpecError:
        forms = ()
    return tuple(forms) or ((f"{name}/<model>", ""),)


def listing() -> list[tuple[str, str]]:
    """(spec form, what it names) for every registered provider, for ``assay list models``."""
    return [form for name in provider_names() for form in forms_of(name)]


def spec_forms_text() -> str:
    """The accepted spec forms as one phrase: ``'a', 'b' or 'c'``."""
    forms = [f"'{form}'" for form, _ in listing()]
    if len(forms) < 2:
        return forms[0] if forms else "no provider is registered"
    return f"{', '.join(forms[:-1])} or {forms[-1]}"


def split_spec(spec: str) -> tuple[str, str]:
    """``provider/name`` as its parts (a bare ``local`` gives ``(provider, "")``); imports
    no provider module. Raises :class:`ModelSpecError` naming the accepted forms."""
    spec = (spec or "").strip()
    provider, sep, name = spec.partition("/")
    if provider and is_registered(provider):
        if sep and name:
            return provider, name
        if not sep:
            try:
                bare = get_provider(provider).bare
            except ModelSpecError:
                bare = None
            if bare is not None:
                return provider, ""
    raise ModelSpecError(f"unknown model spec {spec!r}; use {spec_forms_text()}")


def provider_capabilities(spec: str | None) -> ModelCapabilities | None:
    """The capabilities a spec's provider declares, or ``None`` when ``spec`` is not one."""
    try:
        return get_provider(split_spec(str(spec or ""))[0]).capabilities
    except ModelSpecError:
        return None


def capabilities_of(model: Any) -> ModelCapabilities:
    """What a model, subject, per-sample context or spec string can do: its own
    ``capabilities``, else what it wraps (``agent``, ``model``), else its provider's,
    else nothing special (native tools unless it says ``text_only``)."""
    seen: set[int] = set()
    obj = model
    while obj is not None and id(obj) not in seen:
        seen.add(id(obj))
        if isinstance(obj, str):
            break
        caps = getattr(obj, "capabilities", None)
        if isinstance(caps, ModelCapabilities):
            return caps
        inner = getattr(obj, "agent", None)
        if inner is None or isinstance(inner, str):
            inner = getattr(obj, "model", None)
        obj = None if isinstance(inner, str) else inner
    spec = model if isinstance(model, str) else getattr(model, "model_id", None)
    caps = provider_capabilities(spec) if isinstance(spec, str) else None
    return caps or ModelCapabilities(native_tools=not getattr(model, "text_only", False))


def clear_cache() -> None:
    """Forget the providers read so far (tests that install one in the running process)."""
    _own_entry_points.cache_clear()
    _entry_points.cache_clear()
    get_provider.cache_clear()

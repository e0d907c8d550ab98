"""The one async protocol every answering thing implements, and the spec parser.

A *model* answers chat messages (``generate``). A *subject* is what is under
test: it hands out a fresh *agent* per sample (``session()``), so agent state
never leaks between samples. Plain models are their own sessions.
"""

from __future__ import annotations

import contextlib
from typing import Any, Protocol, runtime_checkable

from assay.core.types import Message, Reply, ToolSpec
from assay.models.registry import (
    ModelCapabilities,
    capabilities_of,
    get_provider,
    split_spec,
)


@runtime_checkable
class Model(Protocol):
    """Anything that answers chat messages.

    ``tools`` offers functions (the reply may carry ``tool_calls``);
    ``response_schema`` asks for JSON matching a JSON Schema (constrained where
    the backend supports it). ``params`` are generation parameters such as
    ``temperature``, ``max_tokens`` and ``seed``.
    """

    model_id: str

    async def generate(
        self,
        messages: list[Message],
        *,
        tools: list[ToolSpec] | None = None,
        response_schema: dict[str, Any] | None = None,
        **params: Any,
    ) -> Reply:
        """Answer ``messages``; raise :class:`assay.errors.ModelCallError` on failure."""
        ...


class Subject:
    """What is under test. ``session()`` returns the agent for one sample.

    The default subject wraps a stateless model and returns it for every sample.
    ``capabilities`` are the model's own, else those given (its provider's).
    """

    def __init__(self, model: Model, capabilities: ModelCapabilities | None = None) -> None:
        self.model = model
        self.model_id = model.model_id
        own = getattr(model, "capabilities", None)
        #: what the model can do (see :class:`~assay.models.registry.ModelCapabilities`)
        self.capabilities: ModelCapabilities = (
            own if isinstance(own, ModelCapabilities) else capabilities or capabilities_of(model))

    def session(self) -> Model:
        """A fresh agent for one sample (for stateless models: the model itself)."""
        return self.model

    def describe(self) -> dict[str, Any]:
        """Identity recorded with the run (never contains secrets)."""
        describe = getattr(self.model, "describe", None)
        return describe() if callable(describe) else {"model": self.model_id}

    async def aclose(self) -> None:
        """Release connections or loaded weights."""
        close = getattr(self.model, "aclose", None)
        if close is not None:
            await close()


#: the default cap on one reply (``--max-reply-bytes``, ``RunSpec.max_reply_bytes``)
DEFAULT_MAX_REPLY_BYTES = 16 * 1024 * 1024


def parse_model_spec(spec: str) -> tuple[str, str]:
    """Split ``provider/name`` into its parts; a provider's bare name (``local``: the
    embedded model) gives ``(provider, "")``. Providers are the ``assay.models`` entry
    points (see :mod:`assay.models.registry`); no provider module is imported here.

    Raises :class:`ModelSpecError` naming the accepted forms.
    """
    return split_spec(spec)


def get_subject(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    timeout: float = 120.0,
    params: dict[str, Any] | None = None,
    max_reply_bytes: int | None = None,
) -> Subject:
    """Build the subject named by ``spec`` (see :func:`parse_model_spec`).

    The provider's module is imported here, on first use, so that ``assay --help`` stays
    fast and a missing optional dependency only matters when that provider is used.
    """
    name, rest = parse_model_spec(spec)
    provider = get_provider(name)
    made = provider.build(rest, base_url=base_url, api_key=api_key, timeout=timeout,
                          params=params, max_reply_bytes=max_reply_bytes)
    if callable(getattr(made, "session", None)):  # already a subject (one agent per sample)
        if not isinstance(getattr(made, "capabilities", None), ModelCapabilities):
            with contextlib.suppress(AttributeError, TypeError):
                made.capabilities = provider.capabilities
        return made
    if not isinstance(getattr(made, "capabilities", None), ModelCapabilities):
        # the model carries its provider's capabilities wherever the engine wraps it
        with contextlib.suppress(AttributeError, TypeError):
            made.capabilities = provider.capabilities
    return Subject(made, provider.capabilities)

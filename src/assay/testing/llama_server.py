"""A GGUF model served by llama-cpp-python's own OpenAI-compatible server on 127.0.0.1: the real
endpoint the log-likelihood tests use (``pip install 'llama-cpp-python[server]'``)::

    python -m assay.testing.llama_server --model model.gguf --port 8765

llama-cpp-python 0.3.36's echo differs from OpenAI's completions API twice, for models that
add no BOS token (SmolLM2, Qwen, GPT-2): each echoed prompt token gets the log-prob read at
its own position, not the one before it (the log-prob of the token after it), and the
generated token is left out of the log-probs (so lm-eval's ``gguf`` model, which drops the
last echoed token as the generated one, drops the continuation's last token). Served here,
both are corrected (the echo path's rows moved down by one, the generated token kept), so
the server answers as OpenAI's and vLLM's do, and it ranks a token's alternatives with a heap
(at most 20, ~10x faster than its sort of the whole vocabulary); ``--as-shipped`` serves it
unchanged, which assay's endpoint check refuses
(:func:`assay.models.openai_model.check_echo`). It also takes OpenAI's structured-output form,
``response_format: {type: json_schema, json_schema: {schema}}``, which llama-cpp-python's
server refuses (422): it is passed on as that server's ``{type: json_object, schema}``."""

from __future__ import annotations

import argparse
import functools
import heapq
import json
import threading
from typing import Any

from assay.models.local_model import _plain_cpu_buffers, default_model_path

_ECHO = threading.local()
#: the most alternatives per token the served model returns (OpenAI's API allows 5)
TOP = 20


def correct_echo_logprobs() -> None:
    """Patch ``Llama`` in this process: during a completion with ``echo``, the echoed
    prompt's log-prob rows are taken one position earlier (only its 2-D call reads them)."""
    import numpy as np  # heavy
    from llama_cpp import Llama  # optional
    from llama_cpp import llama as lib  # optional

    if getattr(Llama, "_assay_echo_fixed", False):
        return
    to_logprobs, create = Llama.logits_to_logprobs, Llama.create_completion

    def logits_to_logprobs(logits: Any, axis: int = -1) -> Any:
        out = to_logprobs(logits, axis=axis)
        if getattr(_ECHO, "shift", False) and getattr(out, "ndim", 1) == 2 and len(out) > 0:
            # row i: what predicted token i (row 0 is never read: the first token has
            # none); one row more, so the generated token is echoed with its log-prob
            out = np.concatenate([out[:1], out])
        return out

    @functools.wraps(create)
    def create_completion(self: Any, *args: Any, **kwargs: Any) -> Any:
        bos = self.token_bos()
        _ECHO.shift = bool(kwargs.get("echo")) and not (
            bos >= 0 and self.tokenize(b"a", add_bos=True)[:1] == [bos])
        try:
            return create(self, *args, **kwargs)
        finally:
            _ECHO.shift = False

    Llama.logits_to_logprobs = staticmethod(logits_to_logprobs)  # type: ignore[method-assign]
    Llama.create_completion = create_completion  # type: ignore[method-assign]
    Llama._assay_echo_fixed = True  # type: ignore[attr-defined]
    # Its only sorts rank a token's whole vocabulary to keep the top ``logprobs`` (at most
    # 20): the top 20 found in one pass, not ~770k comparisons of numpy floats per token
    lib.sorted = lambda items, *, key=None, reverse=False: (  # type: ignore[attr-defined]
        heapq.nlargest(TOP, items, key=key) if reverse else heapq.nsmallest(TOP, items, key=key))


def openai_schemas(app: Any) -> Any:
    """``app`` (ASGI) taking OpenAI's ``json_schema`` response format on chat completions."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].endswith("/chat/completions"):
            return await app(scope, receive, send)
        body, more = b"", True
        while more:
            message = await receive()
            body, more = body + message.get("body", b""), message.get("more_body", False)
        try:
            data = json.loads(body)
            fmt = data.get("response_format") or {}
            if fmt.get("type") == "json_schema":
                data["response_format"] = {"type": "json_object",
                                           "schema": (fmt.get("json_schema") or {}).get("schema")}
                body = json.dumps(data).encode()
        except (ValueError, AttributeError):
            pass  # the server says what is wrong with it

        async def replay() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}
        headers = [(k, v) for k, v in scope["headers"] if k != b"content-length"]
        scope = {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
        await app(scope, replay, send)
    return wrapped


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m assay.testing.llama_server",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="a GGUF file (default: the embedded SmolLM2-135M-Instruct)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--n-ctx", type=int, default=2048)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--as-shipped", action="store_true",
                   help="serve llama-cpp-python's echo log-probs unchanged (shifted)")
    args = p.parse_args(argv)
    import uvicorn  # optional
    from llama_cpp.server.app import create_app  # optional
    from llama_cpp.server.settings import ModelSettings, ServerSettings  # optional

    if not args.as_shipped:
        correct_echo_logprobs()
    model = args.model or str(default_model_path())
    settings = ModelSettings(model=model, model_alias="local", n_ctx=args.n_ctx,
                             logits_all=True, verbose=False,
                             **({"n_threads": args.threads} if args.threads else {}))
    with _plain_cpu_buffers():  # the model is loaded here, as the embedded one is
        app = create_app(server_settings=ServerSettings(host="127.0.0.1", port=args.port),
                         model_settings=[settings])
    uvicorn.run(openai_schemas(app), host="127.0.0.1", port=args.port, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

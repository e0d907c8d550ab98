"""Log-likelihood in the model layer: the embedded model against llama.cpp's own full-logits
path, the real llama.cpp server over HTTP, lm-eval's token rules, and the endpoints that
cannot give prompt log-probs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from assay.core.types import Continuation
from assay.errors import ModelCallError
from assay.models.local_model import LocalModel, default_model_path
from assay.models.loglikelihood import rolling_windows, split_pair
from assay.models.openai_model import OpenAIModel

#: a question's choices, a shared few-shot prefix, whitespace at the boundary, an empty
#: context, a continuation of several tokens
REQUESTS = [
    Continuation("The capital of France is", " Paris"),
    Continuation("The capital of France is", " London"),
    Continuation("The capital of France is", " a city on the Seine."),
    Continuation("Question: 2+2=?\nAnswer:", " 4"),
    Continuation("Question: 2+2=?\nAnswer: ", "4"),
    Continuation("", "Hello world"),
    Continuation("Roof shingle removal: A man is sitting on a roof. He",
                 " starts pulling up roofing on a roof."),
    Continuation("Roof shingle removal: A man is sitting on a roof. He",
                 " is ripping level tiles off."),
]


def _reference(pairs: list[tuple[list[int], list[int]]]) -> list[tuple[float, bool]]:
    """The oracle: llama-cpp-python's own ``Llama(logits_all=True)``, each sequence evaluated
    from an empty cache, log-softmax in float64."""
    import numpy as np
    from llama_cpp import Llama

    from assay.models.local_model import _plain_cpu_buffers

    with _plain_cpu_buffers():
        llama = Llama(model_path=str(default_model_path()), n_ctx=1024, logits_all=True,
                      verbose=False, n_threads=2)
    out = []
    for context, continuation in pairs:
        llama.reset()
        llama.eval(context + continuation)
        rows = np.asarray(llama.scores[len(context) - 1:len(context) + len(continuation) - 1],
                          dtype=np.float64)
        logp = rows - rows.max(1, keepdims=True)
        logp -= np.log(np.exp(logp).sum(1, keepdims=True))
        out.append((float(sum(logp[i, t] for i, t in enumerate(continuation))),
                    bool(all(rows[i].argmax() == t for i, t in enumerate(continuation)))))
    llama.close()
    return out


def test_embedded_equals_llama_cpp_full_logits() -> None:
    """Prefix reuse across a question's choices changes nothing: each answer equals a fresh
    full-logits evaluation of the same tokens (and is asked twice, in two orders)."""
    model = LocalModel.load()
    got = asyncio.run(model.loglikelihood(REQUESTS))
    again = asyncio.run(model.loglikelihood(list(reversed(REQUESTS))))[::-1]
    want = _reference([model._scorer.encode(r) for r in REQUESTS])
    for g, a, (logprob, greedy) in zip(got, again, want, strict=True):
        assert g.logprob == pytest.approx(logprob, abs=1e-4)
        assert a.logprob == pytest.approx(g.logprob, abs=1e-5)
        assert g.greedy is greedy is a.greedy
    paris, london = got[0], got[1]
    assert paris.greedy and paris.logprob > london.logprob  # the model knows this one
    assert [g.tokens for g in got][:2] == [1, 1]


def test_token_rule_is_lm_evals() -> None:
    """The context's trailing whitespace moves to the continuation; the continuation is what
    the whole has past the context's tokens; an empty context is the end-of-text token."""
    assert split_pair("Answer: ", "4") == ("Answer:", " 4")
    assert split_pair("Answer:\n\n", "4") == ("Answer:", "\n\n4")
    assert split_pair("Answer:", " 4") == ("Answer:", " 4")
    scorer = LocalModel.load()._scorer
    a = scorer.encode(Continuation("Question: 2+2=?\nAnswer: ", "4"))
    b = scorer.encode(Continuation("Question: 2+2=?\nAnswer:", " 4"))
    assert a == b
    context, _ = scorer.encode(Continuation("", "Hello"))
    assert context == [LocalModel.load()._llama.token_eos()]


def test_rolling_windows_are_lm_evals() -> None:
    """Perplexity windows equal lm-eval's get_rolling_token_windows + make_disjoint_window."""
    from lm_eval.utils import get_rolling_token_windows, make_disjoint_window

    for n, max_len in ((1, 4), (4, 4), (5, 4), (17, 4), (30, 7), (3, 10)):
        tokens = list(range(100, 100 + n))
        theirs = [make_disjoint_window(w) for w in get_rolling_token_windows(
            token_list=tokens, prefix_token=0, max_seq_len=max_len, context_len=1)]
        assert list(rolling_windows(tokens, 0, max_len)) == [(list(a), list(b))
                                                             for a, b in theirs]


def test_server_equals_embedded(llama_server: str) -> None:
    """The same GGUF over real HTTP (llama-cpp-python's server, /completions with echo)
    gives the embedded model's log-likelihoods and greedy flags."""
    async def both() -> tuple[Any, Any]:
        model = OpenAIModel("local", base_url=llama_server)
        try:
            return await model.loglikelihood(REQUESTS[:5] + REQUESTS[6:]), None
        finally:
            await model.aclose()

    served, _ = asyncio.run(both())
    local = asyncio.run(LocalModel.load().loglikelihood(REQUESTS[:5] + REQUESTS[6:]))
    for s, m in zip(served, local, strict=True):
        assert s.logprob == pytest.approx(m.logprob, abs=1e-4)
        assert (s.greedy, s.tokens) == (m.greedy, m.tokens)


def _error(base_url: str, requests: list[Continuation]) -> str:
    async def ask() -> None:
        model = OpenAIModel("local", base_url=base_url)
        try:
            await model.loglikelihood(requests)
        finally:
            await model.aclose()

    with pytest.raises(ModelCallError) as e:
        asyncio.run(ask())
    assert not e.value.transient
    return str(e.value)


def test_shifted_server_is_refused(llama_server_as_shipped: str) -> None:
    """llama-cpp-python's server as shipped reads echoed log-probs a token late for a model
    without BOS: the endpoint check catches it before any answer is used."""
    message = _error(llama_server_as_shipped, REQUESTS[:1])
    assert "disagree with its own generated ones" in message
    assert "\n" not in message and "assay.testing.llama_server" in message


def test_endpoint_without_prompt_logprobs(fake_server: Any) -> None:
    message = _error(fake_server(prompt_logprobs=False).base_url, REQUESTS[:1])
    assert "returned no prompt log-probs" in message and "\n" not in message


def test_empty_context_over_http_says_why(llama_server: str) -> None:
    message = _error(llama_server, [Continuation("", "Hello world")])
    assert "first token cannot be scored" in message


#: measured on the embedded Q4_1 GGUF with llama-cpp-python 0.3.36 (and equal to llama.cpp's
#: full-logits path above); a hundredth of a nat absorbs kernel changes, not a wrong token
PINNED = {0: -0.2644, 1: -4.4007, 3: -2.7329}


def test_pinned_log_probs_of_a_fixed_subset() -> None:
    got = asyncio.run(LocalModel.load().loglikelihood([REQUESTS[i] for i in PINNED]))
    assert [round(g.logprob, 4) for g in got] == pytest.approx(list(PINNED.values()), abs=0.01)

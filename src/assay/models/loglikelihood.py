"""Log-likelihood from a llama.cpp context's logits, with lm-eval's token rules (numpy and
llama-cpp-python are imported when a scorer is made).

- A pair's tokens: trailing whitespace of the context moves to the continuation, the whole is
  encoded and the context alone, and the continuation is what the whole has past the
  context's tokens (lm-eval's ``_encode_pair``); an empty context is the end-of-text token.
- The sequence scored is the context's tokens then the continuation's, cut from the left
  to the context window; a continuation's log-prob sums each of its tokens' log-softmax.
- Perplexity (:meth:`LogitScorer.rolling`) scores a text in lm-eval's disjoint windows.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from typing import Any

from assay.core.types import Continuation, Likelihood

__all__ = ["LogitScorer", "split_pair", "rolling_windows"]


def split_pair(context: str, continuation: str) -> tuple[str, str]:
    """The context's trailing whitespace moved to the continuation (lm-eval's rule)."""
    n = len(context) - len(context.rstrip())
    return (context[:-n], context[-n:] + continuation) if n else (context, continuation)


def rolling_windows(tokens: list[int], prefix: int, max_len: int
                    ) -> Iterator[tuple[list[int], list[int]]]:
    """lm-eval's ``get_rolling_token_windows`` (context length 1) made disjoint: (context,
    continuation) pairs whose continuations cover ``tokens`` once, the first after
    ``prefix``, each later one after the ``max_len`` tokens before it."""
    if not tokens:
        return
    first = min(max_len, len(tokens))
    yield [prefix], tokens[:first]
    done = first
    while done < len(tokens):
        n = min(len(tokens) - done, max_len)
        end = done + n
        window = tokens[max(0, end - max_len - 1):end - 1]
        yield window[:len(window) - (n - 1)], tokens[end - n:end]
        done += n


class LogitScorer:
    """Scores continuations on ``llama`` (one thread at a time), reusing its KV cache: the
    pairs of a batch go in token order, so a question's choices (and a shared few-shot
    prefix) are evaluated once; the model's own bookkeeping (``input_ids``, ``n_tokens``)
    stays true, so generation after it reuses the cache too."""

    def __init__(self, llama: Any) -> None:
        import llama_cpp  # optional
        import numpy as np  # heavy

        self._llama, self._np, self._lc = llama, np, llama_cpp
        self._n_vocab = llama.n_vocab()
        self._eot = llama.token_eos()

    def _tokens(self, text: str) -> list[int]:
        return list(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def encode(self, request: Continuation) -> tuple[list[int], list[int]]:
        """(context tokens, continuation tokens) by lm-eval's rule (module docstring)."""
        context, continuation = split_pair(request.context, request.continuation)
        if not context:
            return [self._eot], self._tokens(continuation)
        whole, head = self._tokens(context + continuation), self._tokens(context)
        return head, whole[len(head):]

    def score(self, requests: list[Continuation]) -> list[Likelihood]:
        pairs = [self.encode(r) for r in requests]
        return self.score_tokens(pairs)

    def score_tokens(self, pairs: list[tuple[list[int], list[int]]]) -> list[Likelihood]:
        out: list[Likelihood | None] = [None] * len(pairs)
        for i in sorted(range(len(pairs)), key=lambda k: pairs[k][0] + pairs[k][1]):
            out[i] = self._one(*pairs[i])
        return out  # type: ignore[return-value]

    def rolling(self, text: str) -> Likelihood:
        """A text's log-likelihood over disjoint windows of the context size."""
        tokens = self._tokens(text)
        parts = self.score_tokens(list(rolling_windows(tokens, self._eot,
                                                       self._llama.n_ctx() - 1)))
        return Likelihood(sum(p.logprob for p in parts), all(p.greedy for p in parts),
                          len(tokens), sum(p.input_tokens for p in parts))

    def _one(self, context: list[int], continuation: list[int]) -> Likelihood:
        np = self._np
        if not continuation:
            return Likelihood(0.0, True, 0, 0)
        limit = self._llama.n_ctx()
        if len(continuation) >= limit:
            raise ValueError(f"a continuation of {len(continuation)} tokens does not fit the "
                             f"context window of {limit}")
        seq = (context + continuation)[-limit:]  # cut from the left, as lm-eval
        first = len(seq) - len(continuation) - 1  # the position predicting the first token
        total, greedy, done = 0.0, True, 0
        for rows in self._logits(seq, first):  # a batch's rows at a time (bounded memory)
            wanted = np.asarray(continuation[done:done + len(rows)])
            shifted = rows - rows.max(axis=1, keepdims=True)
            logz = np.log(np.exp(shifted).sum(axis=1))
            total += float((shifted[np.arange(len(rows)), wanted] - logz).sum(dtype=np.float64))
            greedy = greedy and bool((rows.argmax(axis=1) == wanted).all())
            done += len(rows)
        return Likelihood(total, greedy, len(continuation), len(seq))

    def _logits(self, seq: list[int], first: int) -> Iterator[Any]:
        """Logits at positions ``first`` .. ``len(seq) - 2`` (one array per decoded batch)
        while ``seq`` is evaluated, the prefix already in the KV cache kept (up to ``first``:
        its logits are needed again)."""
        np, lc, llama = self._np, self._lc, self._llama
        ids = llama.input_ids
        m = min(llama.n_tokens, first)
        keep = 0
        if m > 0:
            differ = np.nonzero(ids[:m] != np.asarray(seq[:m], dtype=ids.dtype))[0]
            keep = int(differ[0]) if len(differ) else m
        llama._ctx.kv_cache_seq_rm(-1, keep, -1)
        llama.n_tokens = keep
        batch, want = llama._batch.batch, len(seq) - 1
        for start in range(keep, len(seq), llama.n_batch):
            chunk = seq[start:start + llama.n_batch]
            batch.n_tokens = len(chunk)
            marks: list[int] = []
            for j, token in enumerate(chunk):
                pos = start + j
                batch.token[j], batch.pos[j] = token, pos
                batch.seq_id[j][0], batch.n_seq_id[j] = 0, 1
                batch.logits[j] = int(first <= pos < want)
                if batch.logits[j]:
                    marks.append(j)
            llama._ctx.decode(llama._batch)
            ids[start:start + len(chunk)] = chunk
            llama.n_tokens = start + len(chunk)
            if marks:
                yield np.stack([np.ctypeslib.as_array(ctypes.cast(
                    lc.llama_get_logits_ith(llama._ctx.ctx, j), ctypes.POINTER(ctypes.c_float)),
                    shape=(self._n_vocab,)) for j in marks])

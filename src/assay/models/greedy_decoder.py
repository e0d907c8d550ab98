"""Greedy decoding under a llama.cpp grammar, with the text the grammar forces fed in batches.

What makes the embedded model's constrained calls cheap; :class:`GreedyGrammarDecoder`
explains both shortcuts. llama-cpp-python and numpy are imported when a decoder is made.
"""

from __future__ import annotations

import ctypes
from typing import Any

__all__ = ["GreedyGrammarDecoder"]


class GreedyGrammarDecoder:
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
        import llama_cpp  # optional
        import numpy as np  # heavy

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
    import llama_cpp  # optional
    import numpy as np  # heavy

    data = (llama_cpp.llama_token_data * n)()
    array = llama_cpp.llama_token_data_array(data=data, size=n, selected=-1, sorted=False)
    return data, array, np.ctypeslib.as_array(data)


def _single_char_tokens(llama: Any) -> tuple[dict[int, str], list[int]]:
    """One-character tokens ``{token: char}``, and the tokens that show a choice the probe
    cannot spell: lone bytes of longer UTF-8 characters, second tokens for a character."""
    import llama_cpp  # optional

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

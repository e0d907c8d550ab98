"""Greedy decoding under a llama.cpp grammar, with the text the grammar forces fed in batches
(llama-cpp-python and numpy are imported when a decoder is made)."""

from __future__ import annotations

import ctypes
from typing import Any

__all__ = ["GreedyGrammarDecoder"]


class GreedyGrammarDecoder:
    """The best token the grammar accepts: argmax first, masking the vocabulary only when refused;
    forced text (probed with one-character tokens) evaluated in one batch, its last token left to
    the model (which may pick another value: ``bench/embedded.py`` checks)."""

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

    def _apply(self, grammar: Any, array: Any, view: Any, ids: Any, logits: Any) -> None:
        view["id"] = ids
        view["logit"] = logits
        view["p"] = 0.0
        array.size, array.selected, array.sorted = len(view), -1, False
        self._lc.llama_sampler_apply(grammar, ctypes.byref(array))

    def _masked_argmax(self, grammar: Any, logits: Any) -> int:
        self.full_masks += 1
        view = self._all_view
        self._apply(grammar, self._all_arr, view, self._ids, logits)
        best = int(self._np.argmax(view["logit"]))
        return -1 if view["logit"][best] == float("-inf") else int(view["id"][best])

    def _only_next(self, grammar: Any) -> int | None:
        """The one probe token the grammar allows next, else None."""
        view = self._probe_view
        self._apply(grammar, self._probe_arr, view, self._probe_ids, 0.0)
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
        """Evaluate the prompt, reusing the KV cache for the prefix shared with the last one."""
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
    """A llama.cpp candidate array of ``n`` tokens: (data, array, numpy view of data)."""
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

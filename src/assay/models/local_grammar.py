"""JSON-Schema grammars for the local model: GBNF with one spelling of whitespace, compiled
once per schema by llama.cpp and kept. llama-cpp-python is imported on first use only."""

from __future__ import annotations

import functools
import json
import re
from collections import OrderedDict
from typing import Any

__all__ = ["GRAMMAR_CACHE_SIZE", "GrammarCache", "schema_grammar"]

#: grammars kept compiled (BFCL has one tool set per entry; a run walks them in order)
GRAMMAR_CACHE_SIZE = 32


def schema_grammar(schema: dict[str, Any]) -> str:
    """GBNF for ``schema`` spelled ``{"a": 1, "b": [2, 3]}``: llama-cpp-python's converter
    allows a space after every token, a choice at every seam; one spelling fixes the text
    between values, which the greedy decoder then feeds in one batch."""
    return _grammar_text(json.dumps(schema, ensure_ascii=False))  # key order matters: no sort_keys


@functools.lru_cache(maxsize=GRAMMAR_CACHE_SIZE)
def _grammar_text(schema_json: str) -> str:
    from llama_cpp.llama_grammar import json_schema_to_gbnf  # optional

    gbnf = json_schema_to_gbnf(schema_json)
    gbnf = re.sub(r"^space ::= .*$", 'space ::= ""', gbnf, flags=re.MULTILINE)
    return gbnf.replace('":" space', '":" " "').replace('"," space', '"," " "')


class GrammarCache:
    """Compiled grammars by JSON Schema, LRU; used by the model's worker thread only.
    ``compiled`` counts the schemas compiled so far."""

    def __init__(self, vocab: Any, size: int = GRAMMAR_CACHE_SIZE) -> None:
        self._vocab = vocab
        self._size = size
        self._items: OrderedDict[str, Any] = OrderedDict()
        self.compiled = 0

    def get(self, schema: dict[str, Any]) -> Any:
        """The grammar sampler for ``schema``, at its start state."""
        import llama_cpp  # optional

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
        import llama_cpp  # optional

        while self._items:
            llama_cpp.llama_sampler_free(self._items.popitem()[1])

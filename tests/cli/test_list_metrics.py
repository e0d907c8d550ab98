"""``assay list metrics`` (the click command in assay.cli.metrics_cmd), run with CliRunner."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner

from assay.cli.metrics_cmd import first_sentence, metrics
from assay.metrics.registry import DIMENSIONS, MetricInfo, all_metrics
from tests.patching import patch_everywhere


def invoke(*args: str, columns: int = 200):
    result = CliRunner(env={"COLUMNS": str(columns), "NO_COLOR": "1"}).invoke(metrics, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def table_rows(output: str) -> dict[str, list[str]]:
    """The wide table's rows by metric name: the cells split on runs of 2+ spaces."""
    rows = {}
    names = {m.name for m in all_metrics()}
    for line in output.splitlines():
        cells = [c for c in line.strip().split("  ") if c.strip()]
        if cells and cells[0].strip() in names:
            rows[cells[0].strip()] = [c.strip() for c in cells]
    return rows


def test_table_lists_every_metric_with_its_fields() -> None:
    r = invoke()
    assert r.exit_code == 0, r.output
    header = next(line for line in r.output.splitlines() if "metric" in line)
    assert header.split() == ["metric", "aliases", "level", "dimension", "category",
                              "description"]
    rows = table_rows(r.output)
    infos = all_metrics()
    assert set(rows) == {m.name for m in infos}
    em = rows["exact_match"]
    assert em[1:5] == ["exact, em", "sample", "correctness", "match"]
    assert em[5].startswith("The extracted answer equals the target exactly")
    assert rows["bleu"][2:5] == ["corpus", "similarity", "overlap"]
    assert rows["pass_at_k"][1:3] == ["pass@k", "group"]
    assert rows["judge_score"][2] == "judge"
    assert f"{len(infos)} metrics" in r.output


def assert_nothing_cut(output: str, columns: int, infos) -> None:
    assert max(len(line) for line in output.splitlines()) <= columns
    assert "\u2026" not in output  # rich's ellipsis: a cell was cropped
    words = set(re.findall(r"[^\s,()]+", output))
    for m in infos:
        assert m.name in words, m.name
        assert set(m.aliases) <= words, m.aliases
        assert {m.level, m.dimension, m.category} <= words, m.name


@pytest.mark.parametrize("columns", [60, 80, 120, 140, 200])
def test_nothing_is_cut_at_any_width(columns: int) -> None:
    r = invoke(columns=columns)
    assert r.exit_code == 0
    assert_nothing_cut(r.output, columns, all_metrics())


def test_narrow_terminal_gets_one_block_per_metric() -> None:
    lines = invoke(columns=80).output.splitlines()
    assert not any(line.split() == ["metric", "aliases", "level", "dimension", "category",
                                    "description"] for line in lines)
    i = next(n for n, line in enumerate(lines) if line.startswith("exact_match "))
    assert lines[i].split() == ["exact_match", "(sample,", "correctness,", "match)", "exact,",
                                "em"]
    assert lines[i + 1].startswith("    The extracted answer equals the target exactly")


def test_long_names_and_words_never_break_the_table(monkeypatch) -> None:
    import assay.metrics.registry as registry

    fake = [MetricInfo(name="a_metric_with_quite_a_long_name", fn=len, category="category_x",
                       dimension="format", usage="u", aliases=("an_alias_much_longer_than_"
                                                               "usual_for_any_metric", "b"),
                       description=f"Starts with {'x' * 150} and goes on. Then more."),
            registry.get_metric("bleu")]
    patch_everywhere(monkeypatch, registry, "all_metrics", lambda: fake)
    # too narrow for the table: blocks, with the over-long word folded
    r = invoke(columns=140)
    assert "(sample, format, category_x)" in r.output
    assert_nothing_cut(r.output, 140, fake)
    # wide enough for the table: the description column folds the word, nothing is cropped
    r = invoke(columns=230)
    header = next(line for line in r.output.splitlines() if "description" in line)
    assert header.split()[0] == "metric"
    assert_nothing_cut(r.output, 230, fake)
    assert r.output.count("x") >= 150


def test_json_is_the_list_of_metric_dicts() -> None:
    r = invoke("--json")
    assert r.exit_code == 0
    data = json.loads(r.output)
    assert data == [m.to_dict() for m in all_metrics()]
    by_name = {d["name"]: d for d in data}
    assert by_name["repetition_rate"]["higher_is_better"] is False
    assert by_name["bleu"]["reference"] == "sacrebleu.corpus_bleu"
    assert "0-100" in by_name["bleu"]["description"]
    assert by_name["token_f1"]["usage"]


def test_dimension_filter() -> None:
    r = invoke("--dimension", "fluency", "--json")
    names = {d["name"] for d in json.loads(r.output)}
    assert names == {m.name for m in all_metrics() if m.dimension == "fluency"}
    assert {"repetition_rate", "degenerate_repetition"} <= names
    r = invoke("--dimension", "similarity")
    rows = table_rows(r.output)
    assert {"bleu", "chrf", "rouge_l", "token_f1"} <= set(rows)
    # an empty aliases cell leaves no gap to split on, so the dimension is found by value
    dims = set(DIMENSIONS)
    assert all([c for c in cells if c in dims] == ["similarity"] for cells in rows.values())
    assert "exact_match" not in r.output


def test_unknown_dimension_is_a_usage_error() -> None:
    r = invoke("--dimension", "beauty")
    assert r.exit_code == 2
    assert "'beauty' is not one of" in r.output


def test_first_sentence() -> None:
    assert first_sentence("One thing. Two things.") == "One thing."
    assert first_sentence("rep-n (Welleck et al. 2019) counts. More.") == (
        "rep-n (Welleck et al. 2019) counts.")
    assert first_sentence("in a \\boxed{}. The rest") == "in a \\boxed{}."
    assert first_sentence("No period") == "No period"

"""The metric library: every metric registered by ``assay.metrics.library`` (and its judge
metrics, ``assay.tasks.datagen.judge_level``) on hand-checked
values, its metadata, aliases and errors."""

from __future__ import annotations

import json
import math
import sys

import pytest

from assay.errors import ConfigError
from assay.metrics import library
from assay.metrics.registry import DIMENSIONS, LEVELS, MetricInfo, all_metrics, get_metric
from assay.tasks.datagen import judge_level as judges

EXPECTED = {
    "exact_match", "normalized_match", "includes_match", "numeric_match", "choice_accuracy",
    "math_verify", "token_f1", "squad_f1", "squad_exact_match", "set_f1", "multilabel_f1", "bleu", "chrf", "rouge_l",
    "pass_at_k", "json_validity", "extraction_rate", "empty_answer_rate", "repetition_rate",
    "degenerate_repetition", "judge_score", "pairwise_win_rate",
}
LOWER_IS_BETTER = {"empty_answer_rate", "repetition_rate", "degenerate_repetition"}


def ours() -> list[MetricInfo]:
    return [m for m in all_metrics() if m.fn.__module__ in (library.__name__, judges.__name__)]


def fn(name: str):
    return get_metric(name).fn


def one_line_error(exc: pytest.ExceptionInfo[BaseException], *needles: str) -> str:
    msg = str(exc.value)
    assert "\n" not in msg, msg
    for n in needles:
        assert n in msg, (n, msg)
    return msg


# ------------------------------------------------------------------ registry and metadata


def test_library_registers_at_least_18_metrics() -> None:
    names = {m.name for m in ours()}
    assert len(names) >= 18
    assert names == EXPECTED
    # IFEval's metrics belong to the instructions gallery module, not here
    assert not names & {"ifeval_strict", "ifeval_loose"}


def test_every_metric_has_complete_metadata() -> None:
    for m in ours():
        assert m.dimension in DIMENSIONS, m.name
        assert m.level in LEVELS, m.name
        assert m.category in library.CATEGORIES, m.name
        # a paragraph, not a label: several sentences and some substance
        assert len(m.description) >= 120 and m.description.count(". ") >= 1, m.name
        assert len(m.usage) >= 20, m.name
        assert m.higher_is_better is (m.name not in LOWER_IS_BETTER), m.name
        d = m.to_dict()
        assert d["name"] == m.name and d["description"] == m.description
        json.dumps(d)


def test_levels_of_the_aggregate_metrics() -> None:
    levels = {m.name: m.level for m in ours()}
    assert levels["bleu"] == levels["chrf"] == levels["multilabel_f1"] == "corpus"
    assert levels["pass_at_k"] == "group"
    assert levels["judge_score"] == levels["pairwise_win_rate"] == "judge"
    assert levels["rouge_l"] == levels["token_f1"] == "sample"


def test_aliases_resolve_to_their_metric() -> None:
    for m in ours():
        assert get_metric(m.name) is m
        for alias in m.aliases:
            assert get_metric(alias) is m, alias
    assert get_metric("em").name == "exact_match"
    assert get_metric("pass@k").name == "pass_at_k"
    assert get_metric("rougeL").name == "rouge_l"
    assert get_metric("win_rate").name == "pairwise_win_rate"


def test_unknown_metric_is_a_one_line_error_with_a_suggestion() -> None:
    with pytest.raises(ConfigError) as e:
        get_metric("exact_mach")
    one_line_error(e, "unknown metric 'exact_mach'", "did you mean 'exact_match'",
                   "assay list metrics")
    with pytest.raises(ConfigError) as e:
        get_metric("zzzzqqq")
    assert "did you mean" not in str(e.value)


def test_a_missing_library_is_a_one_line_error_saying_what_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "sacrebleu.metrics", None)  # makes the import fail
    with pytest.raises(ConfigError) as e:
        fn("bleu")(["a"], ["a"])
    one_line_error(e, "bleu needs sacrebleu", "pip install sacrebleu")
    monkeypatch.setitem(sys.modules, "jsonschema", None)
    with pytest.raises(ConfigError) as e:
        fn("json_validity")("[]", None, schema={"type": "array", "minItems": 7})
    one_line_error(e, "pip install jsonschema")


# ------------------------------------------------------------------ answer matching


def test_exact_match() -> None:
    s = fn("exact_match")("Reasoning...\nAnswer: Paris", "Paris")
    assert (s.name, s.value, s.answer) == ("exact_match", 1.0, "Paris")
    assert fn("exact_match")("Answer: paris", "Paris").value == 0.0  # case counts
    assert fn("exact_match")("Answer: Paris", ["London", "Paris"]).value == 1.0
    assert fn("exact_match")("", "Paris").value == 0.0
    with pytest.raises(ConfigError) as e:
        fn("exact_match")("Answer: Paris", None)
    one_line_error(e, "exact_match", "no target")


def test_normalized_match() -> None:
    assert fn("normalized_match")("Answer: PARIS.", "paris").value == 1.0
    assert fn("normalized_match")("Answer: Paris, France", "paris").value == 0.0
    s = fn("normalized_match")("answer: the  Beatles!", ["The Beatles"])
    assert (s.name, s.value) == ("normalized_match", 1.0)


def test_includes_match() -> None:
    assert fn("includes_match")("The capital is Paris.", "paris").value == 1.0
    assert fn("includes_match")("Parisian food", "paris").value == 0.0  # whole words only
    assert get_metric("includes").name == "includes_match"


def test_numeric_match_tolerances_and_bad_targets() -> None:
    num = fn("numeric_match")
    s = num("So the total is\nAnswer: 1,234.5", 1234.5)
    assert (s.name, s.value, s.answer) == ("numeric_match", 1.0, "1,234.5")
    assert num("Answer: 3.14", "3.1416").value == 0.0
    assert num("Answer: 3.14", "3.1416", abs_tol=0.01).value == 1.0
    assert num("Answer: 3.14", "3.1416", tolerance=0.01).value == 1.0
    assert num("Answer: 101", 100).value == 0.0
    assert num("Answer: 101", 100, rel_tol=0.01).value == 1.0
    assert num("Answer: 102", 100, rel_tol=0.01).value == 0.0
    with pytest.raises(ConfigError) as e:
        num("Answer: 4", "Paris")
    one_line_error(e, "numeric_match", "numeric target")
    with pytest.raises(ConfigError) as e:
        num("Answer: 4", 4, abs_tol=-1)
    one_line_error(e, "abs_tol", "at least 0")


def test_choice_accuracy() -> None:
    ch = fn("choice_accuracy")
    opts = ["red", "green", "blue"]
    s = ch("I think the answer is (B).", "B", choices=opts)
    assert (s.name, s.value, s.answer) == ("choice_accuracy", 1.0, "B")
    assert ch("Answer: green", 1, choices=opts).value == 1.0  # text pick, index target
    assert ch("Answer: A", "green", choices=opts).value == 0.0
    with pytest.raises(ConfigError) as e:
        ch("Answer: A", "A")
    one_line_error(e, "choices")
    with pytest.raises(ConfigError) as e:
        ch("Answer: A", "purple", choices=opts)
    one_line_error(e, "choice_accuracy", "not a letter")


def test_math_verify() -> None:
    mv = fn("math_verify")
    s = mv("Hence $x = \\boxed{\\frac{1}{2}}$", "0.5")
    assert (s.name, s.value) == ("math_verify", 1.0)
    assert mv("\\boxed{\\frac{1}{3}}", "0.5").value == 0.0
    assert mv("", "0.5").value == 0.0


def test_token_f1() -> None:
    f1 = fn("token_f1")
    # tokens [big, cat] against [cat]: precision 1/2, recall 1 -> F1 2/3
    s = f1("The big cat", "a cat")
    assert s.name == "token_f1" and s.value == pytest.approx(2 / 3)
    assert f1("The big cat", ["a dog", "the cat"]).value == pytest.approx(2 / 3)
    assert f1("big black cat", "small cat sat").value == pytest.approx(1 / 3)
    assert f1("dog", "cat").value == 0.0


# ------------------------------------------------------------------ sets


def test_set_f1() -> None:
    sf = fn("set_f1")
    s = sf("Answer: red, green, Blue", ["blue", "red", "yellow"])
    # 2 shared of 3 predicted and 3 gold -> F1 = 4/6
    assert s.name == "set_f1" and s.value == pytest.approx(2 / 3)
    assert s.metadata["precision"] == pytest.approx(2 / 3)
    assert json.loads(s.answer) == ["blue", "green", "red"]
    # a JSON list keeps items that contain commas; duplicates count once
    assert sf('```json\n["Smith, J.", "Doe, A.", "Doe, A."]\n```',
              ["Doe, A.", "Smith, J."]).value == 1.0
    assert sf("2; 3\n5\n7", "2, 3, 5, 7, 11").value == pytest.approx(8 / 9)
    assert sf("", []).value == 1.0
    assert sf("Answer: a", []).value == 0.0
    with pytest.raises(ConfigError) as e:
        sf("a, b", None)
    one_line_error(e, "label set")


def test_multilabel_f1_is_micro_averaged() -> None:
    ml = fn("multilabel_f1")
    # TP 2, predicted 5, gold 2 -> 4/7; the mean of per-sample F1 would be (1 + 0.4)/2 = 0.7
    assert ml([["a"], "b, c, d, e"], [["a"], ["b"]]) == pytest.approx(4 / 7)
    assert ml(["x", "y"], [["x"], ["y"]]) == 1.0
    assert ml([], []) is None
    with pytest.raises(ConfigError) as e:
        ml(["a"], [["a"], ["b"]])
    one_line_error(e, "1 predictions but 2 targets")
    with pytest.raises(ConfigError) as e:
        ml(["", []], [[], ""])
    one_line_error(e, "no labels")


# ------------------------------------------------------------------ n-gram overlap


def test_bleu_hand_computed_and_on_the_0_100_scale() -> None:
    bleu = fn("bleu")
    # unigram 5/6, bigram 3/5, trigram 2/4, 4-gram 1/3 matches; equal lengths so no penalty
    expected = 100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    assert bleu(["the cat sat on the mat"], ["the cat sat on a mat"]) == pytest.approx(expected)
    assert bleu(["the cat sat on the mat"], ["the cat sat on the mat"]) == pytest.approx(100)
    # several references: the matching one counts; a reasoning block is not scored
    assert bleu(["<think>hmm</think>the cat sat on the mat"],
                [["a dog", "the cat sat on the mat"]]) == pytest.approx(100)
    assert bleu([], []) is None
    with pytest.raises(ConfigError) as e:
        bleu(["a"], ["a", "b"])
    one_line_error(e, "bleu", "1 predictions but 2 targets")
    with pytest.raises(ConfigError) as e:
        bleu(["a"], [3])
    one_line_error(e, "bleu", "target 0")


def test_chrf_hand_computed() -> None:
    chrf = fn("chrf")
    # character unigrams only, beta 1: {a, b} against {a, c} -> P = R = F = 1/2
    assert chrf(["ab"], ["ac"], char_order=1, beta=1) == pytest.approx(50.0)
    assert chrf(["the cat"], ["the cat"]) == pytest.approx(100.0)
    assert chrf(["abc"], ["xyz"]) == 0.0
    with pytest.raises(ConfigError) as e:
        chrf(["a"], ["a"], char_order=0)
    one_line_error(e, "char_order", "at least 1")


def test_rouge_l_hand_computed_and_stemming() -> None:
    rl = fn("rouge_l")
    # LCS "the cat on mat" = 4 of 6 predicted and 4 of 4 reference tokens: F = 0.8
    s = rl("The cat sat on the mat", "the cat on mat")
    assert s.name == "rouge_l" and s.value == pytest.approx(0.8)
    assert s.metadata["precision"] == pytest.approx(4 / 6)
    assert rl("cats running", "cat run").value == 0.0  # no stemming by default
    assert rl("cats running", "cat run", use_stemmer=True).value == 1.0
    assert rl("a b c", ["x y z", "a b c"]).value == 1.0
    with pytest.raises(ConfigError) as e:
        rl("a", None)
    one_line_error(e, "rouge_l", "reference string")


# ------------------------------------------------------------------ code


def test_pass_at_k() -> None:
    pk = fn("pass_at_k")
    # n=5, c=1, k=2: 1 - C(4,2)/C(5,2) = 1 - 6/10 = 0.4; a problem with no pass gives 0
    assert pk([(5, 1), (5, 0)], k=2) == pytest.approx(0.2)
    assert pk([(3, 3)], k=3) == 1.0
    assert pk([(10, 3)]) == pytest.approx(0.3)  # k=1 is the pass rate
    assert pk([], k=1) is None
    with pytest.raises(ConfigError) as e:
        pk([(5, 1), (2, 0)], k=3)
    one_line_error(e, "k=3", "group 1 has n=2", "lower k")
    with pytest.raises(ConfigError) as e:
        pk([(5, 6)], k=1)
    one_line_error(e, "0 <= c <= n")
    with pytest.raises(ConfigError) as e:
        pk([5], k=1)
    one_line_error(e, "group 0", "pair")
    with pytest.raises(ConfigError) as e:
        pk([(5, 1)], k=0)
    one_line_error(e, "k", "at least 1")


# ------------------------------------------------------------------ structure


def test_json_validity() -> None:
    jv = fn("json_validity")
    assert jv('{"a": [1, 2]}').value == 1.0
    s = jv('Here it is:\n```json\n{"a": 1}\n```\nDone.')
    assert (s.name, s.value, s.metadata["source"]) == ("json_validity", 1.0, "fenced")
    assert jv("<think>let me think {</think> [1, 2]").value == 1.0
    bad = jv('{"a": 1')
    assert bad.value == 0.0 and "not JSON" in bad.explanation
    assert jv("Sure! The answer is 42 apples.").value == 0.0
    assert jv("```json\n{broken\n```").value == 0.0


def test_json_validity_with_a_schema() -> None:
    jv = fn("json_validity")
    schema = {"type": "object", "required": ["name"],
              "properties": {"name": {"type": "string"}}}
    assert jv('{"name": "Ada"}', None, schema=schema).value == 1.0
    s = jv('{"name": 3}', None, schema=schema)
    assert s.value == 0.0 and "name" in s.explanation
    assert jv('{"other": 1}', None, schema=json.dumps(schema)).value == 0.0
    with pytest.raises(ConfigError) as e:
        jv("{}", None, schema={"type": 12})
    one_line_error(e, "json_validity", "not a valid JSON Schema")
    with pytest.raises(ConfigError) as e:
        jv("{}", None, schema="{not json")
    one_line_error(e, "schema is not valid JSON")


# ------------------------------------------------------------------ diagnostics


def test_extraction_rate() -> None:
    er = fn("extraction_rate")
    s = er("Thinking it over.\nAnswer: Paris")
    assert (s.name, s.value, s.answer) == ("extraction_rate", 1.0, "Paris")
    assert er("so it is \\boxed{42}").value == 1.0
    assert er("I think Paris").value == 0.0
    assert er("I think Paris", accept_full=True).value == 1.0
    assert er("   ", accept_full=True).value == 0.0


def test_empty_answer_rate() -> None:
    ea = fn("empty_answer_rate")
    assert ea("").value == 1.0
    assert ea(" \n\t").value == 1.0
    assert ea(None).value == 1.0
    assert ea("<think>I ran out of tokens</think>\n").value == 1.0
    assert ea("<think>still thinking").value == 1.0  # cut-off reasoning
    assert ea("<think>ok</think>Paris").value == 0.0
    assert get_metric("empty_answer_rate").higher_is_better is False


def test_repetition_rate() -> None:
    rr = fn("repetition_rate")
    # bigrams ab ba ab ba ab: 2 unique of 5 -> 1 - 2/5
    assert rr("a b a b a b", n=2).value == pytest.approx(0.6)
    assert rr("A b a B", n=2).value == pytest.approx(1 / 3)  # case-insensitive
    assert rr("one two three four five six").value == 0.0
    assert rr("too short").value == 0.0
    loop = "I am sorry. " * 50
    assert rr(loop).value > 0.9
    assert get_metric("repetition_rate").higher_is_better is False
    with pytest.raises(ConfigError) as e:
        rr("a b", n=0)
    one_line_error(e, "repetition_rate n")


def test_degenerate_repetition() -> None:
    dr = fn("degenerate_repetition")
    assert dr("the same thing " * 20).value == 1.0
    assert dr("A normal sentence with no loop at all in it.").value == 0.0
    # 0.6 of the bigrams repeat: flagged at threshold 0.6, not at 0.61
    assert dr("a b a b a b", n=2, threshold=0.6).value == 1.0
    assert dr("a b a b a b", n=2, threshold=0.61).value == 0.0
    with pytest.raises(ConfigError):
        dr("a b", threshold=0)


# ------------------------------------------------------------------ judges

DIMS = ("correctness", "clarity", "difficulty_match", "completeness")


def verdict(*levels: int, rationale: str = "fine") -> dict:
    return {"rationale": rationale, "scores": dict(zip(DIMS, levels, strict=True))}


def test_judge_score_means_valid_verdicts_and_drops_invalid_ones() -> None:
    js = fn("judge_score")
    reply = "Here is my verdict:\n```json\n" + json.dumps(verdict(5, 4, 3, 4)) + "\n```"
    # per verdict 4.0 and 1.0 -> 2.5; the garbage, a level 6 and a missing dimension are left out
    missing = {"rationale": "x", "scores": {"correctness": 5}}
    assert js([reply, verdict(1, 1, 1, 1), "no idea", verdict(6, 5, 5, 5), missing]) == 2.5
    assert js(["garbage", None]) is None
    assert js([]) is None


def test_judge_score_with_a_custom_rubric(tmp_path) -> None:
    rubric = tmp_path / "r.yaml"
    rubric.write_text("dimensions:\n  - name: helpful\n    description: Is it helpful?\n"
                      "    levels: [useless, barely, somewhat, mostly, fully]\n")
    js = fn("judge_score")
    got = js(['{"rationale": "ok", "scores": {"helpful": 2}}',
              {"rationale": "ok", "scores": {"helpful": 5}}], rubric=str(rubric))
    assert got == 3.5
    # the default rubric's verdicts lack "helpful": none is valid
    assert js([verdict(5, 5, 5, 5)], rubric=str(rubric)) is None
    with pytest.raises(ConfigError) as e:
        js([], rubric=str(tmp_path / "missing.yaml"))
    one_line_error(e, "rubric file")


def test_pairwise_win_rate_from_outcomes() -> None:
    wr = fn("pairwise_win_rate")
    # win 1, tie 0.5, loss 0, win 1 -> 2.5 / 4; the invalid pair is left out
    assert wr(["win", "tie", "loss", "WIN", None]) == pytest.approx(0.625)
    assert wr(["win", "tie", "loss", "win", "invalid"], rate="win_rate") == pytest.approx(0.5)
    assert wr(["win", "tie", "loss", "win"], rate="decisive_win_rate") == pytest.approx(2 / 3)
    assert wr([None]) is None
    assert wr([]) is None
    with pytest.raises(ConfigError) as e:
        wr(["victory"])
    one_line_error(e, "pair 0", "win, tie, loss")
    with pytest.raises(ConfigError) as e:
        wr(["win"], rate="best")
    one_line_error(e, "rate must be one of")


def test_pairwise_win_rate_combines_both_orders() -> None:
    wr = fn("pairwise_win_rate")
    pairs = [
        {"A": "1", "B": "2"},  # candidate preferred in both orders: win
        {"A": "1", "B": "1"},  # preference follows the position: tie
        {"A": '{"reason": "r", "winner": "2"}', "B": "1"},  # reference both times: loss
        {"A": "tie", "B": "2"},  # a tie in one order: tie
        {"A": "1", "B": "no verdict"},  # unreadable order: invalid, left out
    ]
    assert wr(pairs, rate="win_rate") == pytest.approx(1 / 4)
    assert wr(pairs, rate="tie_rate") == pytest.approx(2 / 4)
    assert wr(pairs, rate="loss_rate") == pytest.approx(1 / 4)
    assert wr(pairs) == pytest.approx((1 + 0.5 + 0 + 0.5) / 4)
    with pytest.raises(ConfigError) as e:
        wr([{"A": "1"}])
    one_line_error(e, "orders 'A' and 'B'")


def test_scores_are_finite_and_in_range_for_sample_metrics() -> None:
    outputs = ["", "Answer: 42", "a a a a a a a a", '{"k": [1, 2]}', "<think>x</think>y"]
    for m in ours():
        if m.level != "sample" or m.name in ("choice_accuracy", "numeric_match",
                                             "math_verify"):
            continue
        for out in outputs:
            s = m.fn(out, "42")
            assert s.name == m.name
            assert s.value is not None and math.isfinite(s.value) and 0 <= s.value <= 1, (
                m.name, out, s)


def test_a_lookup_imports_only_until_the_name_is_found_and_run_fields_are_no_metrics():
    """A run's finalize looks up its own metrics: a library name loads no task's metric
    module, and what every run reports (``n_samples``) is refused, never looked for."""
    import subprocess

    code = ("import sys\nfrom assay.metrics.registry import get_metric\n"
            "get_metric('exact_match')\n"
            "print(sorted(m for m in sys.modules if m.startswith('assay.tasks.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]", out
    with pytest.raises(ConfigError, match="what every run reports"):
        get_metric("n_samples")
    from assay.metrics.registry import metric

    with pytest.raises(ValueError, match="n_errors"):
        metric("my_rate", category="x", dimension="correctness", description="d", usage="u",
               aliases=("n_errors",))

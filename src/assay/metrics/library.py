"""assay's own metrics (registered on import): :mod:`assay.scoring`'s scorers, sacrebleu's BLEU and
chrF, rouge-score's ROUGE-L, and what no library offers. Bad input: a one-line ConfigError;
aggregates are ``None`` with nothing to aggregate."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from assay.core.checks import check_number
from assay.core.checks import require_module as _require
from assay.core.types import Score
from assay.errors import ConfigError
from assay.metrics.passk import mean_pass_at_k
from assay.metrics.registry import metric
from assay.scoring import (
    extract_answer,
    json_value,
    label_set,
    schema_validator,
    score_squad_exact,
    score_squad_f1,
    scorer_info,
    set_counts,
    strip_reasoning,
)

CATEGORIES = ("match", "math", "overlap", "code", "structure", "judge", "diagnostic")


def _text(prediction: Any) -> str:
    """A model output as text (``None``, an output that never came, is empty)."""
    if prediction is None:
        return ""
    return prediction if isinstance(prediction, str) else str(prediction)


def _scorer_metric(name: str, **kw: Any) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@metric`` for a scorer of the vocabulary, with its declared aliases."""
    info = scorer_info(name)
    if info.name != name:
        raise ValueError(f"metric {name}: not a canonical scorer name (that is {info.name})")
    return metric(name, aliases=info.aliases, **kw)


def _qa(name: str, prediction: Any, target: Any, **opts: Any) -> Score:
    """Scorer ``name``'s score (named so); its ValueError a ConfigError."""
    try:
        return scorer_info(name).fn(_text(prediction), target, **opts)
    except ValueError as e:
        raise ConfigError(f"{name}: {e}") from e


def _same_length(name: str, predictions: Sequence[Any], targets: Sequence[Any]) -> None:
    if len(predictions) != len(targets):
        raise ConfigError(f"{name}: {len(predictions)} predictions but {len(targets)} targets; "
                          "pass one target (or list of references) per prediction")


# ------------------------------------------------------------------ answer matching


@_scorer_metric("exact_match", category="match", dimension="correctness",
        description="""The extracted answer equals the target exactly, after stripping surrounding
        whitespace only (case and punctuation count). The answer is taken after an 'Answer:' marker,
        from the last \\boxed{}, or as the whole output, with <think> blocks removed (assay.scoring
        extraction). 1.0 or 0.0 per sample.""",
        usage="strict checks of short canonical answers (ids, codes, labels); targets may be a "
              "list of acceptable answers")
def exact_match(prediction: str, target: Any, **opts: Any) -> Score:
    return _qa("exact_match", prediction, target)


@_scorer_metric("normalized_match", category="match", dimension="correctness",
        description="""The extracted answer equals the target after normalization: Unicode NFKC,
        case folding, all punctuation removed, whitespace collapsed (articles are kept). Forgives
        'Paris.' against 'paris'; does not forgive extra words. 1.0 or 0.0 per sample.""",
        usage="primary for short factual answers; targets may be a list of acceptable answers")
def normalized_match(prediction: str, target: Any, **opts: Any) -> Score:
    return _qa("normalized_match", prediction, target)


@_scorer_metric("includes_match", category="match", dimension="correctness",
        description="""The normalized target appears as whole words inside the normalized extracted
        answer ('The capital is Paris.' contains 'paris'). More lenient than normalized_match: a
        long answer listing many candidates also passes, so report it as such. 1.0 or 0.0 per
        sample.""",
        usage="chatty models that answer in a sentence; targets may be a list of acceptable "
              "answers")
def includes_match(prediction: str, target: Any, **opts: Any) -> Score:
    return _qa("includes_match", prediction, target)


@_scorer_metric("numeric_match", category="match", dimension="correctness",
        description="""The last number of the answer equals the numeric target within a tolerance.
        The number is taken from the extracted answer (or from the whole output when the answer has
        none); correct when |pred - target| <= max(abs_tol, rel_tol * |target|), with abs_tol 1e-9
        and rel_tol 1e-6 by default. Thousands separators, signs and scientific notation are
        understood. A target that is not a number is an error. 1.0 or 0.0 per sample.""",
        usage="numeric answers (GSM8K-style word problems, measurements); options abs_tol, "
              "rel_tol (tolerance= is an alias of abs_tol)")
def numeric_match(prediction: str, target: Any, *, tolerance: float | None = None,
                  abs_tol: float = 1e-9, rel_tol: float = 1e-6, **opts: Any) -> Score:
    check_number("numeric_match tolerance", tolerance, minimum=0)
    check_number("numeric_match abs_tol", abs_tol, minimum=0, optional=False)
    check_number("numeric_match rel_tol", rel_tol, minimum=0, optional=False)
    return _qa("numeric_match", prediction, target, tolerance=tolerance,
               abs_tol=abs_tol, rel_tol=rel_tol)


@_scorer_metric("choice_accuracy", category="match", dimension="correctness",
        description="""Multiple choice: the option the model picked equals the target option. The
        pick is read from the extracted answer as a letter ('B', '(B)', 'The answer is B') or as the
        text of one of the choices; the target is a letter, a 0-based index or a choice text. Needs
        the sample's choices (at most 26). 1.0 or 0.0 per sample.""",
        usage="multiple-choice benchmarks (MMLU, ARC, HellaSwag); option choices=[...] is required")
def choice_accuracy(prediction: str, target: Any, *, choices: Sequence[str] | None = None,
                    **opts: Any) -> Score:
    if not choices:
        raise ConfigError("choice_accuracy needs the sample's options: pass choices=[...]")
    return _qa("choice_accuracy", prediction, target, choices=choices)


@_scorer_metric("math_verify", category="math", dimension="correctness",
        reference="math-verify (Hugging Face)",
        description="""Mathematical equivalence checked by math-verify, so 1/2, 0.5 and \\frac{1}{2}
        match. The answer math-verify parses from the output (boxed, LaTeX or plain) is compared
        symbolically with the target; equal sets and intervals match too. Parse failures score 0.0
        with the error in the explanation. 1.0 or 0.0 per sample.""",
        usage="primary for competition math (MATH, AIME, GSM8K with LaTeX answers)")
def math_verify(prediction: str, target: Any, **opts: Any) -> Score:
    return _qa("math_verify", prediction, target)


@_scorer_metric("token_f1", category="overlap", dimension="similarity",
        reference="SQuAD evaluate-v1.1.py f1_score (empty answers as in v2.0)",
        description="""SQuAD token F1 between the extracted answer and the target. Both are
        lowercased, stripped of punctuation and of the articles a/an/the, split on whitespace, and
        F1 is computed on the multiset of shared tokens. Unlike the SQuAD script, symbols such as $
        and + are kept as text; two answers empty after normalization score 1.0 (as in SQuAD v2.0),
        one empty answer 0.0; with several targets the best F1 counts. A value in [0, 1].""",
        usage="extractive and short free-form QA (SQuAD, TriviaQA, DROP spans); partial credit "
              "beside normalized_match")
def token_f1(prediction: str, target: Any, **opts: Any) -> Score:
    return _qa("token_f1", prediction, target)


@metric("squad_f1", category="overlap", dimension="similarity",
        reference="SQuAD v1.1 evaluate-v1.1.py f1_score, rule for rule",
        description="""The official SQuAD v1.1 F1 (Rajpurkar et al. 2016), rule for rule: lowercase,
        delete every ASCII punctuation character, drop the articles a/an/the, split on whitespace,
        F1 on the multiset of shared tokens; 0.0 when nothing is shared (two empty answers
        included); the best over the targets. Differs from token_f1 only in those two details.""",
        usage="primary for SQuAD v1.1 and extractive QA where the official number matters")
def squad_f1(prediction: str, target: Any, **opts: Any) -> Score:
    return score_squad_f1(_text(prediction), target)


@metric("squad_exact_match", category="match", dimension="correctness", aliases=("squad_em",),
        reference="SQuAD v1.1 evaluate-v1.1.py exact_match_score",
        description="""The official SQuAD v1.1 exact match: 1.0 when the extracted answer equals a
        target after SQuAD's normalization. That is lowercase, every ASCII punctuation character and
        the articles a/an/the deleted, whitespace collapsed.""",
        usage="secondary beside squad_f1 for SQuAD v1.1")
def squad_exact_match(prediction: str, target: Any, **opts: Any) -> Score:
    return score_squad_exact(_text(prediction), target)


# ------------------------------------------------------------------ item sets

@metric("set_f1", category="overlap", dimension="correctness", aliases=("list_f1",),
        description="""F1 between the set of items the model gave and the target set, 2|P and G| /
        (|P| + |G|). Items come from a JSON list (the output or its first ```json block) or from the
        extracted answer split on commas, semicolons and newlines; each item is normalized (case,
        punctuation and spacing ignored) and duplicates count once. Two empty sets score 1.0, one
        empty set 0.0. A value in [0, 1].""",
        usage="answers that are lists (all authors, every prime below 20, tags); target a list "
              "or a comma-separated string")
def set_f1(prediction: str, target: Any, **opts: Any) -> Score:
    pred = label_set(_text(prediction), from_output=True)
    gold = label_set(target)
    tp, np_, ng = set_counts(pred, gold)
    value = 1.0 if np_ + ng == 0 else 2 * tp / (np_ + ng)
    precision = tp / np_ if np_ else float(ng == 0)
    recall = tp / ng if ng else float(np_ == 0)
    return Score("set_f1", value, json.dumps(sorted(pred)),
                 f"{tp} of {np_} predicted items in the {ng} target items",
                 {"precision": precision, "recall": recall, "true_positives": tp})


@metric("multilabel_f1", category="overlap", dimension="correctness", level="corpus",
        aliases=("micro_f1",), reference="sklearn.metrics.f1_score(average='micro')",
        description="""Micro-averaged F1 of label sets over the whole run. True positives, predicted
        and gold labels are summed over all samples first, then F1 = 2 TP / (sum|P| + sum|G|), so
        frequent labels weigh more than in a mean of per-sample F1. Label sets are read as in
        set_f1. A value in [0, 1]; a run with no label anywhere is an error.""",
        usage="multi-label classification (topics, intents, entity types) where one score "
              "over the corpus is wanted")
def multilabel_f1(predictions: Sequence[Any], targets: Sequence[Any], **opts: Any
                  ) -> float | None:
    _same_length("multilabel_f1", predictions, targets)
    if not predictions:
        return None
    tp = n_pred = n_gold = 0
    for p, t in zip(predictions, targets, strict=True):
        pred = p if isinstance(p, (list, tuple, set, frozenset)) else _text(p)
        a, b, c = set_counts(label_set(pred, from_output=True), label_set(t))
        tp, n_pred, n_gold = tp + a, n_pred + b, n_gold + c
    if n_pred + n_gold == 0:
        raise ConfigError("multilabel_f1: no labels in any prediction or target; check that "
                          "the target field holds the label lists")
    return 2 * tp / (n_pred + n_gold)


# ------------------------------------------------------------------ n-gram overlap


def _reference_streams(name: str, targets: Sequence[Any]) -> list[list[str | None]]:
    """Per-sample references as sacrebleu's streams, padded with ``None``."""
    refs: list[list[str]] = []
    for i, t in enumerate(targets):
        items = list(t) if isinstance(t, (list, tuple)) else [t]
        if not items or any(not isinstance(r, str) for r in items):
            raise ConfigError(f"{name}: target {i} must be a reference string or a non-empty "
                              f"list of them, got {str(t)[:60]!r}")
        refs.append(items)
    width = max(len(r) for r in refs)
    return [[r[j] if j < len(r) else None for r in refs] for j in range(width)]


def _hypotheses(predictions: Sequence[Any]) -> list[str]:
    return [strip_reasoning(_text(p)).strip() for p in predictions]


@metric("bleu", category="overlap", dimension="similarity", level="corpus",
        aliases=("sacrebleu",), reference="sacrebleu.corpus_bleu",
        description="""Corpus BLEU from sacrebleu, on its 0-100 scale exactly as the library gives
        it (not 0-1). It uses sacrebleu's defaults: 13a tokenization, exponential smoothing,
        case-sensitive; computed once over the whole run from summed n-gram counts, not as a mean of
        sentence scores. Several references per sample are allowed.""",
        usage="machine translation and other tasks with close reference texts; options "
              "tokenize (e.g. 'zh', 'intl'), lowercase")
def bleu(predictions: Sequence[Any], targets: Sequence[Any], *, tokenize: str | None = None,
         lowercase: bool = False, **opts: Any) -> float | None:
    BLEU = _require("sacrebleu.metrics", "bleu", "sacrebleu").BLEU
    _same_length("bleu", predictions, targets)
    if not predictions:
        return None
    try:
        scorer = BLEU(tokenize=tokenize, lowercase=bool(lowercase))
    except (ValueError, RuntimeError, KeyError) as e:
        raise ConfigError(f"bleu: bad option ({e}); tokenize must be one of sacrebleu's "
                          "tokenizers such as 13a, intl, zh, char, none") from e
    return float(scorer.corpus_score(_hypotheses(predictions),
                                     _reference_streams("bleu", targets)).score)


@metric("chrf", category="overlap", dimension="similarity", level="corpus",
        aliases=("chrF", "chrf++"), reference="sacrebleu.corpus_chrf",
        description="""Corpus chrF (or chrF++) from sacrebleu, on its 0-100 scale as the library
        gives it. A character n-gram F-score (n up to 6, beta 2, whitespace ignored), with word
        n-grams up to word_order added for chrF++ (word_order=2), computed once over the run from
        summed statistics. Robust to morphology and needs no tokenizer, so it suits languages where
        BLEU's word matching is too harsh.""",
        usage="translation or generation into morphologically rich or unsegmented languages; "
              "options char_order, word_order, beta")
def chrf(predictions: Sequence[Any], targets: Sequence[Any], *, char_order: int = 6,
         word_order: int = 0, beta: int = 2, **opts: Any) -> float | None:
    CHRF = _require("sacrebleu.metrics", "chrf", "sacrebleu").CHRF
    _same_length("chrf", predictions, targets)
    check_number("chrf char_order", char_order, minimum=1, integer=True, optional=False)
    check_number("chrf word_order", word_order, minimum=0, integer=True, optional=False)
    check_number("chrf beta", beta, minimum=1, integer=True, optional=False)
    if not predictions:
        return None
    scorer = CHRF(char_order=char_order, word_order=word_order, beta=beta)
    return float(scorer.corpus_score(_hypotheses(predictions),
                                     _reference_streams("chrf", targets)).score)


_ROUGE: dict[bool, Any] = {}


@metric("rouge_l", category="overlap", dimension="similarity", aliases=("rougeL", "rouge"),
        reference="rouge_score.rouge_scorer.RougeScorer(['rougeL'])",
        description="""ROUGE-L F-measure from Google's rouge-score package, without stemming by
        default. The longest common subsequence of the output's and the target's tokens gives a
        precision and a recall, combined as an F-measure. Its tokenizer lowercases and keeps only
        ASCII letters and digits, so text in other scripts scores 0 (use chrf there).
        use_stemmer=True turns on the Porter stemmer. With several targets the best counts. A value
        in [0, 1].""",
        usage="summaries and long free-form answers against a reference text; option use_stemmer")
def rouge_l(prediction: str, target: Any, *, use_stemmer: bool = False, **opts: Any) -> Score:
    key = bool(use_stemmer)
    if key not in _ROUGE:
        scorers = _require("rouge_score.rouge_scorer", "rouge_l", "rouge-score")
        _ROUGE[key] = scorers.RougeScorer(["rougeL"], use_stemmer=key)
    refs = target if isinstance(target, (list, tuple)) else [target]
    if not refs or any(not isinstance(r, str) for r in refs):
        raise ConfigError(f"rouge_l: the target must be a reference string or a non-empty list "
                          f"of them, got {str(target)[:60]!r}")
    hyp = strip_reasoning(_text(prediction))
    best = max((_ROUGE[key].score(r, hyp)["rougeL"] for r in refs), key=lambda s: s.fmeasure)
    return Score("rouge_l", float(best.fmeasure), None,
                 f"ROUGE-L F {best.fmeasure:.3f} (P {best.precision:.3f}, R {best.recall:.3f})",
                 {"precision": best.precision, "recall": best.recall, "stemmer": key})


# ------------------------------------------------------------------ code


@metric("pass_at_k", category="code", dimension="correctness", level="group",
        aliases=("pass@k",), reference="Chen et al. 2021 (Codex) unbiased pass@k estimator",
        description="""The probability that at least one of k attempts passes, averaged over
        problems. Estimated without bias from n >= k attempts per problem of which c passed: 1 -
        C(n-c, k) / C(n, k) (Chen et al. 2021). Sampling more attempts than k lowers the variance; k
        may not exceed any problem's n.""",
        usage="code generation with several sampled attempts per problem (HumanEval, MBPP); "
              "groups of (n, c), option k")
def pass_at_k_metric(groups: Iterable[Any], *, k: int = 1, **opts: Any) -> float | None:
    check_number("pass_at_k k", k, minimum=1, integer=True, optional=False)
    pairs = []
    for i, g in enumerate(groups):
        try:
            n, c = g
        except (TypeError, ValueError):
            raise ConfigError(f"pass_at_k: group {i} must be a pair (n attempts, c passed), "
                              f"got {g!r}") from None
        if isinstance(n, bool) or isinstance(c, bool) or not isinstance(n, int) \
                or not isinstance(c, int):
            raise ConfigError(f"pass_at_k: group {i} needs integer counts, got n={n!r}, c={c!r}")
        if n < 1 or not 0 <= c <= n:
            raise ConfigError(f"pass_at_k: group {i} needs n >= 1 and 0 <= c <= n, got n={n}, "
                              f"c={c}")
        if k > n:
            raise ConfigError(f"pass_at_k: k={k} needs at least {k} attempts per problem but "
                              f"group {i} has n={n}; lower k or sample more attempts")
        pairs.append((n, c))
    return mean_pass_at_k(pairs, k)


# ------------------------------------------------------------------ structure

@metric("json_validity", category="structure", dimension="validity",
        aliases=("valid_json", "json_valid"),
        description="""The output is JSON, optionally matching a JSON Schema. The whole output
        (reasoning blocks removed) must parse, or else its first fenced ```json block. With
        schema= (a JSON Schema, checked with jsonschema) the parsed value must also validate
        against it. The target is not used. 1.0 or 0.0 per sample; the explanation gives the
        parse or schema error.""",
        usage="structured-output and tool-argument tasks; option schema={...} for a shape check")
def json_validity(prediction: str, target: Any = None, *, schema: Any = None,
                  **opts: Any) -> Score:
    validator = schema_validator(schema) if schema is not None else None
    text = strip_reasoning(_text(prediction))
    value, where, why = json_value(text)
    if where is None:
        return Score("json_validity", 0.0, None, f"not JSON: {why}"[:200], {"source": None})
    meta = {"source": where}
    if validator is not None:
        error = next(iter(validator.iter_errors(value)), None)
        if error is not None:
            path = "/".join(str(p) for p in error.absolute_path) or "(root)"
            return Score("json_validity", 0.0, None,
                         f"JSON fails the schema at {path}: {error.message}"[:200],
                         {**meta, "schema_error": error.message[:200]})
    return Score("json_validity", 1.0, None,
                 "valid JSON" + (" matching the schema" if validator else ""), meta)


# ------------------------------------------------------------------ diagnostics


@metric("extraction_rate", category="diagnostic", dimension="format",
        description="""Whether the output states its final answer explicitly, after an answer marker
        or in a \\boxed{}. The qa answer extraction must find it after 'Answer:' / 'The answer is'
        or in a \\boxed{}, not merely take the whole output as the answer. With accept_full=True any
        non-empty output counts. 1.0 or 0.0 per sample; a low rate explains low accuracy that is a
        format problem rather than a knowledge problem.""",
        usage="diagnose answer-format compliance beside an accuracy metric; option accept_full")
def extraction_rate(prediction: str, target: Any = None, *, accept_full: bool = False,
                    **opts: Any) -> Score:
    answer, method = extract_answer(_text(prediction))
    ok = answer is not None and (method in ("marker", "boxed") or bool(accept_full))
    return Score("extraction_rate", 1.0 if ok else 0.0, answer,
                 f"answer found by {method}" if answer is not None else "no answer",
                 {"extraction": method})


@metric("empty_answer_rate", category="diagnostic", dimension="diagnostic",
        higher_is_better=False, aliases=("empty_rate",),
        description="""Whether the output is empty once <think> reasoning blocks are removed. Only
        whitespace left counts as empty (a model that spends its whole token budget thinking gives
        an empty answer). 1.0 for an empty output, 0.0 otherwise; lower is better.""",
        usage="diagnose truncated reasoning, refusals to answer and broken endpoints")
def empty_answer_rate(prediction: str, target: Any = None, **opts: Any) -> Score:
    text = strip_reasoning(_text(prediction)).strip()
    empty = not text
    return Score("empty_answer_rate", 1.0 if empty else 0.0, text or None,
                 "empty output" if empty else "non-empty output", {})


def repeated_ngram_share(text: str, n: int = 4) -> float:
    """rep-n: the share of the text's word n-grams that repeat an earlier one,
    ``1 - unique / total`` (lowercased whitespace tokens); 0.0 below ``n`` tokens."""
    tokens = text.lower().split()
    grams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    return 1.0 - len(set(grams)) / len(grams) if grams else 0.0


@metric("repetition_rate", category="diagnostic", dimension="fluency", higher_is_better=False,
        aliases=("rep_n",),
        description="""The share of the output's word n-grams that repeat an earlier one (rep-n of
        Welleck et al. 2019). That is 1 - unique/total over the n-grams (n=4 by default) of the
        lowercased whitespace tokens, reasoning removed; 0.0 for text without repeats or shorter
        than n words; it nears 1.0 for an output stuck in a loop. Lower is better.""",
        usage="detect degenerate looping generation, especially from small or quantized "
              "models; option n")
def repetition_rate(prediction: str, target: Any = None, *, n: int = 4, **opts: Any) -> Score:
    check_number("repetition_rate n", n, minimum=1, integer=True, optional=False)
    value = repeated_ngram_share(strip_reasoning(_text(prediction)), n)
    return Score("repetition_rate", value, None, f"{value:.1%} of {n}-grams repeat", {"n": n})


@metric("degenerate_repetition", category="diagnostic", dimension="fluency",
        higher_is_better=False, aliases=("looping",),
        description="""A 0/1 flag for an output stuck in a loop, from its repeated n-grams. It is
        1.0 when the output's rep-n (see repetition_rate, n=4) is at least the threshold (0.5 by
        default: half of its 4-grams are repeats), else 0.0. Its mean is the share of samples where
        the model looped; lower is better.""",
        usage="count looping outputs in a run; options n, threshold")
def degenerate_repetition(prediction: str, target: Any = None, *, n: int = 4,
                          threshold: float = 0.5, **opts: Any) -> Score:
    check_number("degenerate_repetition n", n, minimum=1, integer=True, optional=False)
    check_number("degenerate_repetition threshold", threshold, above=0, maximum=1,
                 optional=False)
    share = repeated_ngram_share(strip_reasoning(_text(prediction)), n)
    flag = share >= threshold
    return Score("degenerate_repetition", 1.0 if flag else 0.0, None,
                 f"{share:.1%} of {n}-grams repeat" + (" (degenerate)" if flag else ""),
                 {"repetition": share, "n": n, "threshold": threshold})

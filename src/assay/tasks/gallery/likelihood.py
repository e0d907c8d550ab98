"""The log-likelihood form of a multiple-choice entry (lm-eval's ``multiple_choice`` output type):
each choice is scored as a continuation of the context and the likeliest wins.

- ``cloze``: the context is the entry's ``loglikelihood.context`` (lm-eval's ``doc_to_text``),
  each continuation the delimiter and a choice's text; or, where the choice changes the
  context (WinoGrande), one context per choice and the one shared continuation.
- ``letters``: the context is the generative prompt (options listed under letters), the
  continuations " A", " B", ...
- Metrics, as lm-eval's: ``acc`` (the highest log-likelihood), ``acc_norm`` (divided by the
  choice's length in characters), ``acc_bytes`` (in UTF-8 bytes). Every choice's log-prob
  is stored, so ``assay score RUN -T ll_metric=acc`` switches the primary with no model call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from assay.core.types import Continuation, Message, Outcome, Sample, Score
from assay.errors import DatasetError
from assay.metrics.likelihood import corpus_interval, count_bytes, count_words
from assay.metrics.registry import get_metric

METRICS = ("acc", "acc_norm", "acc_bytes")


def pairs_of(sample: Sample) -> list[Continuation]:
    """The sample's requests, one per choice, as read (``metadata["loglikelihood"]``)."""
    ll = sample.metadata["loglikelihood"]
    if "contexts" in ll:
        return [Continuation(c, ll["continuation"]) for c in ll["contexts"]]
    return [Continuation(ll["context"], c) for c in ll["continuations"]]


async def solve(sample: Sample, agent: Any) -> Outcome:
    """Every choice's log-likelihood, from one call (batched with other samples')."""
    requests = pairs_of(sample)
    answers = await agent.loglikelihood(requests)
    shown = requests[0].context if len({r.context for r in requests}) == 1 else ""
    lines = [f"{r.continuation!r}: {a.logprob:.4f}" + (" (greedy)" if a.greedy else "")
             for r, a in zip(requests, answers, strict=True)]
    return Outcome(transcript=[Message("user", shown or "\n---\n".join(
                       r.context for r in requests)), Message("assistant", "\n".join(lines))],
                   output="", metadata={"loglikelihood": [
                       [a.logprob, a.greedy, a.tokens] for a in answers]})


def score(sample: Sample, outcome: Outcome, primary: str) -> list[Score]:
    """``acc``, ``acc_norm`` and ``acc_bytes`` (:mod:`assay.metrics.likelihood`), ``primary``
    first; each names its pick."""
    found = outcome.metadata.get("loglikelihood")
    ll = sample.metadata.get("loglikelihood") or {}
    texts: list[str] = ll.get("norm") or []
    if not found or len(found) != len(texts):
        return [Score(primary, None, None, "no log-likelihoods were stored for this sample")]
    logprobs = [float(x[0]) for x in found]
    return [get_metric(name).fn(logprobs, ll["gold"], choices=texts)
            for name in (primary, *(m for m in METRICS if m != primary))]


async def solve_text(sample: Sample, agent: Any) -> Outcome:
    """A text's log-likelihood over rolling windows (a perplexity entry)."""
    text = str(sample.input)
    (answer,) = await agent.loglikelihood_rolling([text])
    return Outcome(transcript=[Message("user", text)], output="", metadata={
        "loglikelihood": [answer.logprob, answer.tokens]})


def score_text(sample: Sample, outcome: Outcome) -> list[Score]:
    """The text's own bits per byte (the corpus figures are summed over texts: metrics)."""
    found = outcome.metadata.get("loglikelihood")
    if not found:
        return [Score("bits_per_byte", None, None, "no log-likelihood was stored")]
    logprob, units = float(found[0]), count_bytes(str(sample.input))
    value = get_metric("bits_per_byte").fn([(logprob, units)])
    return [Score("bits_per_byte", value, None,
                  f"log-likelihood {logprob:.2f} over {units} bytes, {found[1]} tokens",
                  {"loglikelihood": logprob, "bytes": units,
                   "words": count_words(str(sample.input)), "tokens": found[1]})]


def text_metrics(results: list[Any]) -> dict[str, Any]:
    """word_perplexity, byte_perplexity and bits_per_byte over the scored texts, each with
    a bootstrap interval over texts (bits_per_byte first: the headline)."""
    meta = [r.scores["bits_per_byte"]["metadata"] for r in results
            if r.error is None and (r.scores.get("bits_per_byte") or {}).get("value") is not None]
    out: dict[str, Any] = {}
    for name, unit in (("bits_per_byte", "bytes"), ("byte_perplexity", "bytes"),
                       ("word_perplexity", "words")):
        items = [(m["loglikelihood"], m[unit]) for m in meta]
        out[name] = corpus_interval(get_metric(name).fn, items) if items else {
            "value": None, "n": 0}
    return out


def build(sample: Sample, formulation: str, values: dict[str, Any], prompt: str,
          delimiter: str, shots: list[tuple[str, str]], separator: str) -> dict[str, Any]:
    """A sample's ``metadata["loglikelihood"]``: its requests' texts, the choice texts that
    normalise ``acc_norm``, the gold index. ``values``: the entry's ``loglikelihood``
    expressions evaluated on the record; ``prompt``: the generative prompt (``letters``);
    ``shots``: (context, gold continuation) of each few-shot example (``cloze``)."""
    choices = [str(c) for c in (values["choices"] if values.get("choices") is not None
                                else sample.metadata["choices"])]
    gold = values.get("gold", sample.target)
    gold = int(gold[0] if isinstance(gold, list) else gold)
    if formulation == "letters":
        letters = [f"{delimiter}{chr(65 + i)}" for i in range(len(choices))]
        return {"context": prompt, "continuations": letters,
                "norm": [s.strip() for s in letters], "gold": gold}
    prefix = "".join(c + a + separator for c, a in shots)
    if values.get("contexts") is not None:
        contexts = [str(c) for c in values["contexts"]]
        # lm-eval normalises by its doc_to_choice, here the contexts
        return {"contexts": [prefix + c for c in contexts],
                "continuation": delimiter + str(values["continuation"]),
                "norm": contexts, "gold": gold}
    context = values.get("context")
    context = f"Question: {sample.input}\nAnswer:" if context is None else str(context)
    return {"context": prefix + context, "continuations": [delimiter + c for c in choices],
            "norm": choices, "gold": gold}


def shot_of(ll: dict[str, Any]) -> tuple[str, str]:
    """A few-shot example's text in the cloze form: its context and gold continuation."""
    gold = ll["gold"]
    if "contexts" in ll:
        return ll["contexts"][gold], ll["continuation"]
    return ll["context"], ll["continuations"][gold]


def attach(entry: Any, samples: list[Sample], shots: list[Sample], n: int, formulation: str,
           render: Callable[[Sample], str]) -> None:
    """Each sample's ``metadata["loglikelihood"]`` made whole (:func:`build`) from the
    expressions read into it: the ``n`` few-shot examples of ``shots`` not the sample itself
    (``cloze``: before its context), ``render`` the generative prompt (``letters``)."""
    form = entry.likelihood
    separator = (entry.prompt.fewshot.separator if entry.prompt else "\n\n")

    def made(sample: Sample, shot_texts: list[tuple[str, str]]) -> dict[str, Any]:
        try:
            return build(sample, formulation, sample.metadata.get("loglikelihood") or {},
                         render(sample), form.delimiter, shot_texts, separator)
        except (KeyError, ValueError, TypeError, IndexError) as e:
            raise DatasetError(f"{entry.name}: sample {sample.id}: the log-likelihood form: "
                               f"{type(e).__name__}: {e}") from e

    shot_forms = {shot.id: made(shot, []) for shot in shots}
    for sample in samples:
        mine = [s for s in shots if s.input != sample.input][:n]
        texts = [shot_of(shot_forms[s.id]) for s in mine] if formulation == "cloze" else []
        form_of = sample.metadata["loglikelihood"] = made(sample, texts)
        # the input is what the model is given: the context (each, where they differ)
        sample.input = form_of.get("context") or "\n---\n".join(form_of["contexts"])

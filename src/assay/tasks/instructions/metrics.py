"""``ifeval_strict`` and ``ifeval_loose``: IFEval's prompt-level verdicts as registry
metrics. Instruction-level accuracy (a micro average, which no mean of per-sample values
gives) is the instructions task's.
"""

from __future__ import annotations

from typing import Any

from assay.core.types import Score
from assay.metrics.registry import metric
from assay.tasks.instructions.scoring import judge

_REFERENCE = ("if-verifiable 0.1.2 checkers; strict/loose as Google's instruction_following_eval "
              "evaluation_lib (agreement tested on IFEval and IFBench replies)")


def _prompt_score(name: str, mode: str, prediction: str, instruction_id_list: list[str],
                  kwargs: list[dict[str, Any]] | None, prompt: str, flavor: str,
                  nltk_data: str | None) -> Score:
    verdicts = judge(flavor, prediction or "", list(instruction_id_list), kwargs, prompt,
                     nltk_data=nltk_data)
    followed = [getattr(v, mode) for v in verdicts]
    missed = [v.instruction_id for v, ok in zip(verdicts, followed, strict=True) if not ok]
    why = "all instructions followed" if not missed else "not followed: " + ", ".join(missed)
    return Score(name, float(all(followed)), f"{sum(followed)}/{len(followed)}", why,
                 {"instructions": [v.to_dict() for v in verdicts], "flavor": flavor})


@metric("ifeval_strict", category="instruction_following", dimension="format",
        aliases=("ifeval_prompt_strict", "ifeval_prompt_level_strict", "ifbench_strict"),
        reference=_REFERENCE,
        description="""Prompt-level strict accuracy of IFEval (Zhou et al., 2023) or IFBench
        (flavor=ifbench): 1.0 when the reply, as it is, follows every verifiable instruction
        of its prompt (word and sentence counts, no commas, JSON wrapping, placeholders,
        sections, postscripts, case, language, ...), checked by the if-verifiable
        checkers. An empty reply follows nothing.""",
        usage="instruction-following prompts with instruction_id_list and kwargs per "
              "sample (IFEval/IFBench rows); options instruction_id_list=, kwargs=, "
              "prompt= (some checkers read it), flavor=ifeval|ifbench")
def ifeval_strict(prediction: str, target: Any = None, *, instruction_id_list: list[str],
                  kwargs: list[dict[str, Any]] | None = None, prompt: str = "",
                  flavor: str = "ifeval", nltk_data: str | None = None,
                  **opts: Any) -> Score:
    return _prompt_score("ifeval_strict", "strict", prediction, instruction_id_list, kwargs,
                         prompt, flavor, nltk_data)


@metric("ifeval_loose", category="instruction_following", dimension="format",
        aliases=("ifeval_prompt_loose", "ifeval_prompt_level_loose", "ifbench_loose"),
        reference=_REFERENCE,
        description="""Prompt-level loose accuracy of IFEval or IFBench: each instruction
        counts as followed when any of 8 variants of the reply follows it: the reply, the
        reply without its first line, without its last line, without both, and each of these
        with every '*' removed (the official definition, which forgives a preamble, a
        closing remark and markdown emphasis). 1.0 when every instruction is followed.""",
        usage="as ifeval_strict; the gap between the two shows how much formatting noise "
              "(preambles, bold markers) costs a model")
def ifeval_loose(prediction: str, target: Any = None, *, instruction_id_list: list[str],
                 kwargs: list[dict[str, Any]] | None = None, prompt: str = "",
                 flavor: str = "ifeval", nltk_data: str | None = None,
                 **opts: Any) -> Score:
    return _prompt_score("ifeval_loose", "loose", prediction, instruction_id_list, kwargs,
                         prompt, flavor, nltk_data)

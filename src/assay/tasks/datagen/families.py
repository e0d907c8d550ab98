"""Model families and the self-preference warning.

LLM judges prefer their own outputs (MT-Bench: +10% to +25%), so a judge should come from another
family than the generator, or be one of a jury.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from assay.errors import ModelSpecError
from assay.models.base import parse_model_spec
from assay.models.registry import get_provider

_FAMILIES = ("gpt", "claude", "gemini", "gemma", "llama", "qwen", "mistral", "mixtral",
             "phi", "deepseek", "command", "smollm", "grok", "glm", "yi", "falcon", "olmo",
             "granite", "internlm", "nemotron", "kimi", "minimax")


def _model_base(model: str) -> str:
    """``openai/gpt-4o`` -> ``gpt-4o``; ``local/x/y.gguf`` -> ``y``; lower case (the last
    part of the name: any provider's prefix goes with the rest of the path)."""
    s = str(model).strip().lower().rsplit("/", 1)[-1]
    return re.sub(r"\.gguf$", "", s)


def _weights_name(model: str) -> str:
    """The name a family is read from: for a provider's bare spec (``local``, the embedded
    default) what the provider says it stands for (the weights file)."""
    try:
        provider, name = parse_model_spec(model)
        if not name:
            return _model_base(get_provider(provider).bare or provider)
    except ModelSpecError:  # not a spec (a plain name such as "gpt-4o"): read the name itself
        pass
    return _model_base(model)


def model_family(model: str) -> str | None:
    """A coarse model family from the name (``gpt``, ``qwen``, ``llama``...), if recognisable."""
    base = _weights_name(model)
    if re.match(r"^o\d", base):
        return "gpt"  # o1 / o3 / o4-mini come from the same provider
    for fam in _FAMILIES:
        if re.search(rf"(^|[^a-z]){fam}", base):
            return fam
    return None


def self_preference_warning(generator_model: str | None, judge_models: Sequence[str]) -> str | None:
    """A warning when a judge is the generating model or from its family, else ``None``."""
    if not generator_model:
        return None
    gen, fam = _model_base(generator_model), model_family(generator_model)
    same = [j for j in judge_models if _model_base(j) == gen]
    kin = [j for j in judge_models if j not in same and fam and model_family(j) == fam]
    if not same and not kin:
        return None
    parts = []
    if same:
        parts.append(f"judge {', '.join(sorted(set(same)))} is the generating model "
                     f"({generator_model})")
    if kin:
        parts.append(f"judge {', '.join(sorted(set(kin)))} is from the generator's family "
                     f"({fam})")
    return ("self-preference risk: " + "; ".join(parts) + ". LLM judges favour their own "
            "outputs; use a judge from another family, or a jury of several families.")

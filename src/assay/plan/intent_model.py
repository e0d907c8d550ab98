"""Step 1 with a planner model: the intent under a JSON schema, merged with the rules; its
suggested benchmarks are only candidates the field's prior still ranks, never named ones."""

from __future__ import annotations

from typing import Any

from assay.plan.intent import DOMAIN_WORDS, LANGUAGES, IntentResult, parse_rules
from assay.tasks.capabilities import CAPABILITIES
from assay.tasks.registry import catalogue

__all__ = ["intent_prompt", "intent_schema", "parse_with_model"]


def intent_schema() -> dict[str, Any]:
    """The JSON schema the planner model answers under (closed lists where they exist)."""
    def strings(at_most: int, **item: Any) -> dict[str, Any]:
        return {"type": "array", "items": {"type": "string", **item}, "maxItems": at_most}

    return {"type": "object",
            "properties": {"domains": strings(4, enum=list(DOMAIN_WORDS)),
                           "languages": strings(3, enum=list(LANGUAGES)),
                           "agent": {"type": "boolean"},
                           "special_requests": strings(3, maxLength=60),
                           "capabilities": strings(4, enum=list(CAPABILITIES)),
                           "benchmarks": strings(4, enum=_measuring())},
            "required": ["domains", "languages", "agent", "special_requests", "capabilities",
                         "benchmarks"],
            "additionalProperties": False}


def intent_prompt(request: str) -> str:
    return ("You plan evaluations of AI models. Read the user's request and fill in the JSON "
            "fields.\n"
            f"domains: which of these the request asks to evaluate: {', '.join(DOMAIN_WORDS)}.\n"
            "languages: language codes the evaluation should cover (en for English, zh for "
            "Chinese, multi for many).\n"
            "agent: true if the thing evaluated is an agent that uses tools, false if it is "
            "plain text generation.\n"
            "special_requests: short phrases for any other wish (few-shot, a judge, cost).\n"
            f"capabilities: which of these the request asks about: {', '.join(CAPABILITIES)}.\n"
            "benchmarks: the standard benchmarks the field reports for those capabilities "
            "(names from the allowed list only).\n\n"
            f"Request: {request}\nJSON:")


def parse_with_model(request: str, ask: Any) -> IntentResult:
    """The intent from the planner model (``ask(prompt, schema) -> dict | None``) merged
    with the rules; an invalid reply is recorded and the rules' intent kept."""
    rules = parse_rules(request)
    prompt = intent_prompt(request)
    reply = ask(prompt, intent_schema())
    call: dict[str, Any] = {"step": "intent", "prompt": prompt, "reply": reply}
    result = IntentResult(rules.intent.model_copy(deep=True), dict(rules.reasons),
                          [call], parser="model+rules")
    if not _valid_reply(reply):
        call["accepted"] = False
        result.reasons["model"] = "the planner's reply did not fit the schema; rules kept"
        return result
    call["accepted"] = True
    intent = result.intent
    added = [d for d in reply["domains"] if d not in intent.domains]
    if intent.domains or intent.benchmarks:
        # the request's own words already say what to evaluate: a small planner's extra
        # domains would only dilute the plan, so they are kept as suggestions
        if added:
            result.reasons["domains"] += (f"; the planner also suggested {', '.join(added)} "
                                          "(not taken: the request names its own)")
    else:
        intent.domains = added
        result.domains_from = "planner"
        result.reasons["domains"] = (f"no domain word in the request; the planner chose "
                                     f"{', '.join(added) or 'none'}")
    langs = [x for x in reply["languages"] if x not in intent.languages]
    if langs:  # a language is the request's words too: a guess would add a false gap
        result.reasons["languages"] += (f"; the planner also suggested {', '.join(langs)} "
                                        "(not taken: no word of the request names it)")
    if intent.agent is None:
        intent.agent = bool(reply["agent"])
        result.reasons["agent"] = f"the planner judged it {'an agent' if intent.agent else 'text'}"
    for s in reply["special_requests"]:
        s = " ".join(str(s).split())[:60]
        if s and s not in intent.special_requests:
            intent.special_requests.append(s)
    _merge_field(result, reply)
    # named benchmarks, quotas and languages are the request's own words (never the model's)
    result.reasons["model"] = ("named benchmarks, quotas and languages from the request's "
                               "words; domains (where the words give none), agent or text "
                               "(where unstated) and wishes from the planner")
    return result


def _measuring() -> list[str]:
    """The runnable tasks that declare what they measure (what a plan may hold)."""
    return [n for n, listed in catalogue().items() if listed.info.measures]


def _merge_field(result: IntentResult, reply: dict[str, Any]) -> None:
    """The model's capabilities (where the words name none) and suggested benchmarks."""
    intent = result.intent
    caps = [c for c in reply.get("capabilities") or [] if c in CAPABILITIES]
    known = catalogue()
    allowed = set(_measuring())
    result.suggested = [b for b in dict.fromkeys(reply.get("benchmarks") or []) if b in allowed]
    for b in result.suggested if not caps else ():
        # where the model names no capability, a suggestion brings the one it measures
        first = next(iter(known[b].info.measures), None)
        if first is not None and first.capability not in caps:
            caps.append(first.capability)
    if result.suggested:
        result.reasons["suggested"] = (f"the planner suggested {', '.join(result.suggested)} "
                                       "(candidates; the field's prior ranks them)")
    added = [c for c in caps if c not in intent.capabilities]
    if intent.capabilities or intent.benchmarks:
        if added:
            result.reasons["capabilities"] += (f"; the planner also suggested "
                                               f"{', '.join(added)} (not taken: the request "
                                               "names its own)")
    elif added:
        intent.capabilities = added
        result.reasons["capabilities"] = (f"no capability in the request's words; the "
                                          f"planner chose {', '.join(added)}")


def _valid_reply(reply: Any) -> bool:
    if not isinstance(reply, dict):
        return False
    extra = (reply.get("capabilities", []), reply.get("benchmarks", []))
    if not all(isinstance(x, list) and all(isinstance(v, str) for v in x) for x in extra):
        return False
    try:
        return (isinstance(reply.get("domains"), list)
                and all(d in DOMAIN_WORDS for d in reply["domains"])
                and isinstance(reply.get("languages"), list)
                and all(x in LANGUAGES for x in reply["languages"])
                and isinstance(reply.get("agent"), bool)
                and isinstance(reply.get("special_requests"), list))
    except TypeError:
        return False

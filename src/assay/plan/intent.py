"""Step 1 of planning: the request as an :class:`~assay.plan.schema.Intent`, by rules alone
(keyword tables, gallery names, exact quota patterns); every decision carries a reason."""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any

from assay.plan.schema import Budget, Intent
from assay.tasks.capabilities import capabilities_in
from assay.tasks.gallery.entry import all_entries
from assay.tasks.registry import plannable_tasks

#: domain (a gallery category) -> words that signal it (lower case; whole words or phrases).
DOMAIN_WORDS: dict[str, tuple[str, ...]] = {
    "math": ("math", "maths", "mathematics", "mathematical", "arithmetic", "algebra",
             "calculus", "geometry", "word problem", "word problems", "grade-school",
             "grade school", "competition math", "olympiad", "number", "numbers",
             "quantitative", "数学", "算术"),
    "code": ("code", "coding", "program", "programming", "python", "software", "function "
             "synthesis", "code generation", "unit tests", "developer", "编程", "代码"),
    "tool_use": ("tool", "tools", "tool use", "tool calling", "tool-calling", "function call",
                 "function calling", "function-calling", "api call", "api calls",
                 "call apis", "calling apis", "json arguments", "工具", "函数调用"),
    "agent": ("agent", "agents", "agentic", "assistant tasks", "web browsing", "browse",
              "multi-step tasks", "autonomous", "general assistant", "智能体"),
    "knowledge": ("knowledge", "facts", "factual", "trivia", "world knowledge", "exam",
                  "exams", "academic", "subjects", "general knowledge", "closed-book",
                  "知识"),
    "reasoning": ("reasoning", "logic", "logical", "puzzle", "puzzles", "deduction",
                  "inference", "think", "推理"),
    "commonsense": ("commonsense", "common sense", "common-sense", "everyday", "physical "
                    "intuition", "social situations", "常识"),
    "reading": ("reading", "reading comprehension", "comprehension", "passage", "passages",
                "documents", "extractive", "long documents", "阅读"),
    "language": ("language understanding", "sentiment", "paraphrase", "entailment", "nli",
                 "grammar", "language modeling", "next word", "linguistic", "glue",
                 "superglue"),
    "instruction_following": ("instruction", "instructions", "instruction following",
                              "instruction-following", "follow instructions", "format "
                              "constraints", "formatting", "constraints", "指令"),
    "dialogue": ("chat", "chatbot", "conversation", "conversations", "conversational",
                 "dialogue", "dialog", "multi-turn", "multi turn", "multiturn", "对话"),
    "science": ("science", "scientific", "physics", "chemistry", "biology", "biomedical",
                "lab", "laboratory", "protocols", "科学"),
    "medical": ("medical", "medicine", "clinical", "health", "healthcare", "doctor",
                "usmle", "patients", "医学", "医疗"),
}

#: language code -> words that name it
LANGUAGE_WORDS: dict[str, tuple[str, ...]] = {
    "en": ("english", "英文", "英语"),
    "zh": ("chinese", "mandarin", "中文", "汉语", "普通话", "zh"),
    "ja": ("japanese", "日本語"),
    "ko": ("korean",),
    "fr": ("french", "français"),
    "de": ("german", "deutsch"),
    "es": ("spanish", "español"),
    "ru": ("russian",),
    "ar": ("arabic",),
    "hi": ("hindi",),
    "pt": ("portuguese", "português"),
    "it": ("italian", "italiano"),
    "sw": ("swahili", "kiswahili"),
    "th": ("thai",),
    "bn": ("bengali", "bangla"),
    "te": ("telugu",),
    "vi": ("vietnamese",),
    "tr": ("turkish",),
    "multi": ("multilingual", "many languages", "many language", "several languages",
              "other languages", "cross-lingual", "crosslingual", "多语言", "多种语言"),
}
LANGUAGES = tuple(LANGUAGE_WORDS)

#: words that say the subject is (or is not) an agent
AGENT_WORDS = ("agent", "agents", "agentic", "tool", "tools", "function calling",
               "function call", "api calls", "multi-step", "assistant tasks")
TEXT_ONLY_WORDS = ("text only", "text-only", "plain llm", "no tools", "without tools",
                   "base model", "just the llm")

#: leaderboards and suites (a pattern over the request) -> their benchmarks: gallery names,
#: and the names of those the gallery lacks
SUITES: dict[str, tuple[str, ...]] = {
    r"open\s*llm\s*leaderboard\s*(?:\(?\s*v\s*2|2\b|version 2)|\bnew open llm leaderboard":
        ("ifeval", "math", "BBH", "GPQA", "MuSR", "MMLU-Pro"),
    r"open\s*llm\s*leaderboard\s*(?:\(?\s*v\s*1\b|1\b|version 1|\(?old)":
        ("arc_challenge", "hellaswag", "mmlu", "winogrande", "gsm8k", "TruthfulQA"),
    r"\bolmes\b": ("arc_challenge", "arc_easy", "boolq", "commonsense_qa", "hellaswag", "mmlu",
                  "openbookqa", "piqa", "social_iqa", "winogrande"),
}

#: benchmark names that are well known but not in the gallery (so a mention of one is
#: reported as unknown, with the closest gallery names, rather than silently dropped)
KNOWN_ELSEWHERE = ("truthfulqa", "cmmlu", "c-eval", "ceval", "agieval", "bbh", "big-bench",
                   "bigbench", "swe-bench", "swebench", "aime", "hotpotqa", "webarena",
                   "toolbench", "apibank", "api-bank", "alpacaeval", "arena-hard",
                   "livecodebench", "gpqa", "mgsm", "xnli", "flores", "humaneval-x",
                   "mbpp-plus", "theoremqa", "strategyqa", "musr", "longbench", "ruler",
                   "needle", "helm", "mmmu", "mathvista", "cruxeval", "ds-1000", "spider",
                   "bird", "tau-bench", "agentbench", "osworld", "hle", "simpleqa",
                   "mmlu-pro", "mmlu_pro")

_NUM_WORDS = {"zero": 0, "no": 0, "none": 0, "one": 1, "a single": 1, "single": 1, "two": 2,
              "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
              "ten": 10, "twenty": 20, "fifty": 50, "hundred": 100, "a hundred": 100}
_NUM = r"(\d[\d,]*|zero|none|no|one|a single|single|two|three|four|five|six|seven|eight|" \
       r"nine|ten|twenty|fifty|a hundred|hundred)"

#: special requests recognised in the text: phrase -> what is recorded
SPECIAL_PHRASES: dict[str, str] = {
    "few-shot": "few-shot prompting", "few shot": "few-shot prompting",
    "zero-shot": "zero-shot prompting", "zero shot": "zero-shot prompting",
    "chain of thought": "chain-of-thought answers", "chain-of-thought": "chain-of-thought "
    "answers", "quick": "a quick, small run", "smoke": "a quick, small run",
    "cheap": "keep the cost low", "budget": "keep the cost low",
    "judge": "an LLM judge", "compare": "a comparison between runs",
    "regression": "a regression check", "safety": "safety (no gallery entry yet)",
    "only the named": "only the named benchmarks", "only named": "only the named benchmarks",
    "nothing else": "only the named benchmarks", "no other": "only the named benchmarks",
}


@dataclass
class IntentResult:
    """An intent, the reason for each decision, and the model call it took (if any)."""

    intent: Intent
    reasons: dict[str, str] = field(default_factory=dict)
    model_calls: list[dict[str, Any]] = field(default_factory=list)
    parser: str = "rules"
    #: ``words`` when the domains come from the request's words, ``planner`` when the model did
    domains_from: str = "words"
    #: catalogue tasks the planner model suggested from its knowledge of the field
    suggested: list[str] = field(default_factory=list)


def _norm(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text.lower())


def _has(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as whole words (CJK: as a substring)."""
    if re.search(r"[\u3040-\u30ff\u4e00-\u9fff]", phrase):
        return phrase in text
    return re.search(rf"(?<![\w-]){re.escape(phrase)}(?![\w-])", text) is not None


def _number(word: str) -> int:
    word = word.strip().lower()
    if word in _NUM_WORDS:
        return _NUM_WORDS[word]
    if word and all(c in _ZH_DIGITS for c in word):
        return _zh_number(word)
    return int(word.replace(",", ""))


_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7,
              "八": 8, "九": 9, "十": 10, "百": 100}
#: a number in a Chinese request: digits or Chinese numerals up to 999 (一百, 二十, 五)
_ZH_NUM = r"(\d[\d,]*|[零一二两三四五六七八九十百]+)"


def _zh_number(word: str) -> int:
    """A Chinese numeral up to 999: 五 5, 十二 12, 二十 20, 一百 100, 三百五十 350."""
    total, current = 0, 0
    for c in word:
        v = _ZH_DIGITS[c]
        if v >= 10:
            total += (current or 1) * v
            current = 0
        else:
            current = v
    return total + current


def gallery_names() -> dict[str, str]:
    """Normalised name or alias -> ready gallery entry, plus the tasks a plan may name."""
    out: dict[str, str] = {}
    for entry in all_entries().values():
        if entry.readiness.status != "ready":
            continue
        for n in entry.names:
            out[_norm(n)] = entry.name
    for name in plannable_tasks():
        out[_norm(name)] = name
    return out


def planned_names() -> dict[str, Any]:
    """Normalised name or alias -> gallery entry, for the entries not ready yet."""
    return {_norm(n): e for e in all_entries().values() if e.readiness.status != "ready"
            for n in e.names}


#: gallery names that are also English words: named in capitals, as a proper noun (capital
#: inside a sentence, "Jeopardy!"), as "X benchmark", or listed beside another benchmark
COMMON_WORD_NAMES = frozenset({"math", "drop", "squad", "jeopardy"})
#: what separates the items of a list of benchmarks ("A + B", "A, B", "A / B", "A、B")
_LISTED = r"(?:[+/,&;、|]|\band\b|\bplus\b|\bor\b)"


def _listed(word: str, text: str) -> bool:
    """Whether ``word`` stands in a list, beside a separator."""
    w = re.escape(word)
    tail = r"!?\s*(?:\([^)]*\)\s*)?"  # "Jeopardy!", "lambada (accuracy)"
    return re.search(rf"{_LISTED}\s*{w}{tail}(?:$|[.;:?)]|{_LISTED})|(?<![\w-]){w}{tail}"
                     rf"{_LISTED}", text) is not None


def _proper(word: str, text: str) -> bool:
    """Whether ``word`` is written as a name: capitals inside it, a capital where a sentence
    does not start, or an exclamation mark ("Jeopardy!")."""
    if any(c.isupper() for c in word[1:]):
        return True
    if not word[0].isupper():
        return False
    return any(not re.search(r"(?:^|[.!?:]\s+|\n)$", text[:m.start()]) or
               text[m.end():m.end() + 1] == "!" for m in re.finditer(
                   rf"(?<![\w-]){re.escape(word)}(?![\w-])", text))


def normalise(request: str) -> str:
    """The request as the rules read it: full-width forms and superscripts folded (NFKC:
    "（BFCL）" -> "(BFCL)", "τ²" -> "τ2"), Greek tau spelled out, one space between words."""
    text = unicodedata.normalize("NFKC", request).replace("τ", "tau").replace("Τ", "Tau")
    return " ".join(text.split())


def _named(text: str, names: dict[str, str]) -> tuple[list[str], list[dict[str, Any]]]:
    """Gallery names the request mentions, and benchmark-like names the gallery lacks."""
    found: list[str] = []
    unknown: list[dict[str, Any]] = []
    words = re.findall(r"[A-Za-z][A-Za-z0-9]*(?:[-_.][A-Za-z0-9]+)*", text)
    # "Jeopardy-style questions", "MMLU-like": the benchmark's name
    styled = {re.sub(r"[-_](?:style|like|type|format)$", "", w, flags=re.IGNORECASE)
              for w in words if re.search(r"[-_](?:style|like|type|format)$", w, re.IGNORECASE)}
    words = [re.sub(r"[-_](?:style|like|type|format)$", "", w, flags=re.IGNORECASE) for w in words]
    # multi-word aliases (e.g. "grade school math") are matched on the normalised text
    flat = _norm(text)
    ambiguous: list[tuple[str, list[str]]] = []  # decided once the others are found
    for key, name in sorted(names.items(), key=lambda kv: -len(kv[0])):
        hits = [w for w in words if _norm(w) == key]
        if len(key) < 3 or key in COMMON_WORD_NAMES:
            # "math" in a sentence is a word, "cb" two letters: MATH, "Jeopardy!", "the math
            # benchmark", or CB listed beside another benchmark names the benchmark
            hits = [w for w in hits if (len(key) >= 3 and (_proper(w, text) or (
                w in styled and w[0].isupper()) or re.search(
                rf"\b{re.escape(w)}\s+(?:benchmark|dataset|set|test set|eval)\b", text,
                re.IGNORECASE))) or ((len(key) >= 3 or w.isupper()) and _listed(w, text))]
            if hits:
                ambiguous.append((name, hits))
            continue
        if hits or (len(key) >= 8 and key in flat):
            if name not in found:
                found.append(name)
    # a word inside another entry's name as written ("grade-school math") names nothing more
    spans = [m.span() for n in found for e in [all_entries().get(n)] if e is not None
             for alias in e.names if len(re.split(r"[\s_-]+", alias)) > 1
             for m in re.finditer(r"[\s_-]+".join(map(re.escape, re.split(r"[\s_-]+", alias))),
                                  text, re.IGNORECASE)]
    ambiguous = [(name, [w for w in hits if not any(
        a <= m.start() and m.end() <= b for a, b in spans
        for m in re.finditer(rf"(?<![\w-]){re.escape(w)}(?![\w-])", text))])
        for name, hits in ambiguous]
    ambiguous = [(name, hits) for name, hits in ambiguous if hits]
    for name, hits in ambiguous:  # listed: beside a benchmark named for certain, or another
        if name not in found and (found or len(ambiguous) > 1 or any(
                _proper(w, text) for w in hits)):
            found.append(name)
    # in the order the request names them
    low = text.lower()

    def first_mention(name: str) -> int:
        keys = [k for k, n in names.items() if n == name]
        spots = [i for w in words if _norm(w) in keys for i in [low.find(w.lower())] if i >= 0]
        return min(spots) if spots else len(low)

    found.sort(key=first_mention)
    # "perplexity on LAMBADA": the entry's perplexity form, where it has one
    if re.search(r"perplexit|\bppl\b|bits[ -]per[ -]byte|困惑度", text, re.IGNORECASE):
        found += [f"{n}_perplexity" for n in list(found)
                  if f"{n}_perplexity" in names.values() and f"{n}_perplexity" not in found]
    # a leaderboard's suite names its benchmarks (those the gallery lacks are said unknown)
    for suite, members in SUITES.items():
        said_as = re.search(suite, text, re.IGNORECASE)
        if said_as:
            found += [m for m in members if m in names.values() and m not in found]
            unknown += [{"name": m, "closest": [], "suite": said_as.group(0)} for m in members
                        if m not in names.values()
                        and all(u["name"].lower() != m.lower() for u in unknown)]
    # a family name (ARC, LAB-Bench) names its one or two entries
    for w in words:
        key = _norm(w)
        if len(key) < 3 or key in names or key in COMMON_WORD_NAMES:
            continue
        family = sorted({n for k, n in names.items() if k.startswith(key)})
        if 1 <= len(family) <= 2 and (w.isupper() or name_like(w)):
            for n in family:
                if n not in found:
                    found.append(n)
            names = {**names, key: family[0]}
    known_keys = set(names)
    planned = planned_names()
    for w in words:
        if _norm(w) in COMMON_WORD_NAMES:
            continue
        if _norm(w) in planned and _norm(w) not in known_keys:
            entry = planned[_norm(w)]
            if all(u["name"].lower() != w.lower() for u in unknown):
                unknown.append({"name": w, "closest": [], "planned": entry.name,
                                "why": entry.readiness.note})
            continue
        key = _norm(w)
        if key in known_keys or name_like(w) is False:
            continue
        if key in {_norm(k) for k in KNOWN_ELSEWHERE} or name_like(w):
            close = difflib.get_close_matches(key, list(known_keys), n=3, cutoff=0.5)
            entry = {"name": w, "closest": sorted({names[c] for c in close})}
            if all(u["name"].lower() != w.lower() for u in unknown):
                unknown.append(entry)
    return found, unknown


#: acronyms and words that look like benchmark names but are not
_NOT_NAMES = {"llm", "llms", "ai", "api", "apis", "json", "sql", "gpu", "cpu", "rag", "ci",
              "qa", "nlp", "ok", "usa", "uk", "eu", "id", "ids", "csv", "yaml", "http",
              "url", "pdf", "gpt", "gpt-4", "gpt-4o", "openai", "llama", "qwen", "mistral",
              "claude", "gemini", "smollm2", "hf", "hub", "huggingface", "chatgpt", "github",
              "pytorch", "javascript", "typescript", "openapi", "iphone", "youtube", "linkedin", "i", "a", "vs",
              "nli", "glue", "superglue", "usmle", "zh", "en", "cot", "fc", "ast"}


def name_like(word: str) -> bool | None:
    """Whether ``word`` looks like a benchmark's name (``True``: an acronym, letters with
    digits, ...bench/qa/eval), is known not to be one (``False``), or is a word (``None``)."""
    low = word.lower()
    if low in _NOT_NAMES or low.startswith(("gpt", "llama", "qwen", "claude")):
        return False
    if re.fullmatch(r"[A-Z][A-Z0-9\-]{2,}", word):
        return True
    if re.search(r"[a-z][A-Z]", word):  # CamelCase: TruthfulQA, HumanEval, OpenBookQA
        return True
    if re.search(r"[a-z]", low) and re.search(r"\d", low) and len(low) >= 4:
        return True
    if re.search(r"(bench|qa|eval|arena)$", low) and len(low) >= 5 and low not in ("eval", "qa"):
        return True
    return None


def _domains(text: str) -> tuple[list[str], dict[str, list[str]]]:
    domains: list[str] = []
    hits: dict[str, list[str]] = {}
    for domain, words in DOMAIN_WORDS.items():
        got = [w for w in words if _has(text, w)]
        if got:
            domains.append(domain)
            hits[domain] = got
    return domains, hits


def domain_words(request: str) -> list[str]:
    """The domain words ``request`` uses (English ones; the retrieval's query adds them)."""
    _, hits = _domains(" ".join(request.lower().split()))
    return list(dict.fromkeys(w for ws in hits.values() for w in ws
                              if not re.search(r"[\u4e00-\u9fff]", w)))


def _languages(text: str) -> tuple[list[str], str]:
    """The languages the model is to be evaluated in: those the request names ("in German",
    "Chinese-language exams", "中文能力"), never the one it is written in."""
    low = text.lower()
    named = [code for code, words in LANGUAGE_WORDS.items()
             if any(_has(low, w) or _has(low, f"{w}-language") for w in words if w != "zh")]
    cjk = re.search(r"[\u4e00-\u9fff]", text) is not None
    if not named:
        return ["en"], "no language named: English"
    only = re.search(r"\bonly\b|\bjust\b|仅|只", text) is not None
    langs = list(named)
    if "en" not in langs and not only and not cjk:
        langs.insert(0, "en")
        why = f"named {', '.join(named)}; English kept (the request is in English)"
    else:
        why = f"named {', '.join(named)}"
    return langs, why


_BENCH = r"(?:benchmarks?|tasks?|datasets?|evals?|evaluations?|suites?)"
_SAMPLES = r"(?:samples?|examples?|questions?|items?|problems?|cases?|prompts?|entries)"
_HUB = r"(?:hugging\s*face|hf|the\s+hub|hub)"
_GALLERY = r"(?:the\s+gallery|gallery|local|built-?in|offline)"
#: at most one word between a number and "benchmarks" ("3 math benchmarks"), never a word
#: of a source ("no hub datasets" is a Hub quota, not a task count)
_ONE_WORD = r"(?:(?!hub\b|hf\b|hugging|gallery\b|local\b)\w+\s+)?"


def _budget(text: str) -> tuple[Budget, dict[str, str]]:
    """Quotas and limits stated in the request, taken exactly (``0`` included)."""
    t = text.lower()
    b: dict[str, int] = {}
    why: dict[str, str] = {}

    def take(key: str, pattern: str, value: int | None = None) -> None:
        """The first match of ``pattern`` sets ``key`` (to ``value``, else its first group)."""
        if key in b:
            return
        m = re.search(pattern, t)
        if m:
            b[key] = value if value is not None else _number(m.group(1))
            why[key] = f"stated in the request: {m.group(0).strip()!r}"

    # the Hub and the gallery first: "0 datasets from the hub" is a Hub quota
    take("hub", rf"\b(?:no|nothing|without|skip|not|never)\s+(?:use\s+)?(?:any\s+)?(?:datasets?\s+)?"
         rf"(?:from\s+)?(?:the\s+)?{_HUB}(?:\s+(?:search|datasets?))?\b", 0)
    take("hub", rf"\b(?:don'?t|do\s+not|never|without)\s+(?:use|pull|download|fetch|search|"
         rf"take|get|touch|query)(?:ing)?\s+(?:anything|any\s+datasets?|datasets?|any)?\s*"
         rf"(?:from\s+|on\s+|in\s+)?(?:the\s+)?{_HUB}", 0)
    take("hub", r"\boffline\s+only\b|\bno\s+internet\b|\bno\s+network\b|\bstay\s+offline\b", 0)
    take("hub", rf"\b{_NUM}\s+(?:{_BENCH}\s+)?(?:from|off|on|via)\s+{_HUB}\b")
    take("hub", rf"\b{_NUM}\s+{_HUB}\s+{_BENCH}")
    take("hub", rf"\b{_HUB}(?:\s+quota)?\s*[:=]\s*{_NUM}\b")
    take("hub", rf"\b{_HUB}\s+quota\s*(?:of\s+)?{_NUM}\b")
    take("gallery", rf"\b{_NUM}\s+(?:{_BENCH}\s+)?from\s+{_GALLERY}\b")
    take("gallery", rf"\b{_GALLERY}(?:\s+quota)?\s*[:=]\s*{_NUM}\b")
    take("gallery", rf"\b{_GALLERY}\s+quota\s*(?:of\s+)?{_NUM}\b")
    take("gallery", rf"\b(?:no|without)\s+(?:other|extra|additional|more)\s+{_BENCH}\b", 0)
    take("gallery", r"\b(?:only|just)\s+the\s+(?:named|ones?\s+i\s+(?:named|listed))\b|"
         r"\bnothing\s+else\b", 0)
    take("max_tasks", rf"\b(?:at\s+most|up\s+to|no\s+more\s+than|max(?:imum)?(?:\s+of)?|"
         rf"limit(?:ed)?\s+to)\s+{_NUM}\s+{_ONE_WORD}{_BENCH}")
    take("max_tasks", rf"\b(?:exactly|only|just|pick|choose|use|with)\s+{_NUM}\s+{_ONE_WORD}"
         rf"{_BENCH}")
    take("max_tasks", rf"\b{_NUM}\s+{_BENCH}\b(?!\s+(?:from|off|on|via))")
    take("limit", rf"\b{_NUM}\s+{_SAMPLES}\b")
    take("limit", r"\b(?:limit|--limit|sample\s+size)\s*(?:of|=|:)?\s*(\d[\d,]*)\b")
    # the same, in Chinese: 最多4个基准, 不超过5个任务, 每个100条, 不要从Hugging Face下载
    take("hub", r"(?:不要|别|不能|不用|无法|不)\s*(?:从|在|用)?\s*(?:hugging\s*face|hf|hub)"
         r"\s*(?:上)?\s*(?:下载|拉取|获取|搜索|找)|(?:离线|不能联网|没有网络|无法联网|断网)", 0)
    take("max_tasks", rf"(?:最多|至多|不超过|不多于|限制?在?|只要|只用|只选)\s*{_ZH_NUM}\s*"
         rf"(?:个|项|套)?\s*(?:基准|benchmark|任务|数据集|评测集|测试集|评测)")
    take("max_tasks", rf"{_ZH_NUM}\s*(?:个|项|套)\s*(?:基准|benchmark|任务|数据集|评测集|测试集)"
         r"(?:以内|之内)")
    take("limit", rf"(?:每个|每项|每套|各)?\s*(?:任务|基准|数据集)?\s*(?:各|只)?\s*(?:跑|测|取|用)?\s*"
         rf"{_ZH_NUM}\s*(?:条|道题|道|个样本|个问题|个例子|题|样本)")
    return Budget(**b), why


def _special(text: str) -> list[str]:
    out: list[str] = []
    low = text.lower()
    for phrase, meaning in SPECIAL_PHRASES.items():
        if _has(low, phrase) and meaning not in out:
            out.append(meaning)
    return out


def parse_rules(request: str) -> IntentResult:
    """The intent of ``request`` by the rules alone (no model)."""
    text = normalise(request)
    low = text.lower()
    names = gallery_names()
    benchmarks, unknown = _named(text, names)
    domains, hits = _domains(low)
    capabilities, cap_hits = capabilities_in(text)
    languages, lang_why = _languages(text)
    agent: bool | None = None
    if any(_has(low, w) for w in TEXT_ONLY_WORDS):
        agent, agent_why = False, "the request asks for text only"
    elif any(_has(low, w) for w in AGENT_WORDS) or {"tool_use", "agent"} & set(domains):
        agent, agent_why = True, "the request names tools or agents"
    else:
        agent_why = "not stated"
    budget, budget_why = _budget(text)
    reasons = {
        "benchmarks": (f"named in the request: {', '.join(benchmarks)}" if benchmarks
                       else "no gallery benchmark named"),
        "domains": ("; ".join(f"{d} ({', '.join(w)})" for d, w in hits.items())
                    or "no domain word found"),
        "capabilities": ("; ".join(f"{c} ({', '.join(w)})" for c, w in cap_hits.items())
                         or "no capability named in the request's words"),
        "languages": lang_why,
        "agent": agent_why,
        **{f"budget.{k}": v for k, v in budget_why.items()},
    }
    if unknown:
        reasons["unknown_benchmarks"] = "; ".join(
            f"{u['name']} is not in the gallery (closest: {', '.join(u['closest']) or 'none'})"
            for u in unknown)
    intent = Intent(domains=domains, capabilities=capabilities, benchmarks=benchmarks,
                    unknown_benchmarks=unknown, languages=languages, agent=agent,
                    budget=budget, special_requests=_special(text))
    return IntentResult(intent, reasons)

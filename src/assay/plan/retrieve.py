"""Step 2 of planning: BM25 over the gallery, per whole request and per intent domain, so a
mixed request finds an entry for each; embeddings may be mixed in (:func:`embedding_scores`)."""

from __future__ import annotations

import base64
import functools
import json
import math
import os
import re
import urllib.request
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from assay.core.redact import parse_endpoint, scrub
from assay.errors import ConfigError
from assay.plan.intent import DOMAIN_WORDS
from assay.tasks.gallery.entry import all_entries
from assay.tasks.registry import plannable_tasks

#: a candidate whose normalised score is at least this is a quality match; below it, a
#: marginal one (taken only to fill a quota, and said so)
QUALITY = 0.35
#: a domain's candidate must match at least this share of its query's best score
DOMAIN_FLOOR = 0.2

_STOP = frozenset("""a an and are as at be but by for from how i in is it its me my of on or
our so that the their this to too us was we what when which who will with you your do does
can could would should good well better much many very also please want like know check
test tests evaluate evaluation evaluations eval measure assess see agent's model models llm
llms benchmark benchmarks dataset datasets task tasks run runs using use at about some any
get give make need via them they these those there here into than then just only""".split())


@dataclass
class Doc:
    """One retrievable task: a gallery entry or a built-in."""

    name: str
    category: str
    tags: list[str]
    text: str
    source: str  # gallery | builtin
    eval_type: str = ""


@dataclass
class Candidate:
    """A task retrieval found, with its score and why."""

    name: str
    score: float
    bm25: float
    quality: bool
    reason: str
    domain: str | None = None
    source: str = "gallery"
    matched: list[str] = field(default_factory=list)
    #: why it was chosen, in three parts: the field's prior, the words, the planner model
    chosen: dict[str, str] = field(default_factory=dict)
    #: its standing for the capability it was found for (``domain``), when it was
    standing: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "score": round(self.score, 4), "bm25": round(self.bm25, 4),
                "quality": self.quality, "reason": self.reason, "domain": self.domain,
                "source": self.source}


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens without stop words; hyphenated words also split; CJK text
    as single characters and bigrams (so Chinese requests match Chinese words)."""
    low = text.lower()
    out: list[str] = []
    for w in re.findall(r"[a-z0-9]+(?:[-_][a-z0-9]+)*", low):
        parts = re.split(r"[-_]", w)
        for t in (w.replace("_", "-"), *parts) if len(parts) > 1 else (w,):
            if t not in _STOP and len(t) > 1:
                out.append(_stem(t))
    for run in re.findall(r"[\u4e00-\u9fff]+", text):
        out.extend(run)
        out.extend(run[i:i + 2] for i in range(len(run) - 1))
    return out


def said(request: str, matched: list[str]) -> str:
    """Which of ``request``'s own words (as written) a document matched, for a reason: the
    query's other words (a domain's or capability's vocabulary) are never quoted as the user's."""
    hit = set(matched)
    words = []
    for w in re.findall(r"[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*|[\u4e00-\u9fff]+", request):
        if w.isascii():
            words += [w] if hit & set(tokenize(w)) else []
            continue
        i = 0  # Chinese: each longest run of matched bigrams ("数学"), never lone characters
        while i < len(w) - 1:
            j = i
            while j < len(w) - 1 and w[j:j + 2] in hit:
                j += 1
            words += [w[i:j + 1]] if j > i else []
            i = max(j, i + 1)
    quoted = ", ".join(f'"{w}"' for w in dict.fromkeys(words))
    return f"matched the request's {quoted}" if quoted else "matched none of the request's words"


def _stem(word: str) -> str:
    """A light plural stemmer (problems -> problem), enough for task descriptions."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@functools.lru_cache(maxsize=1)
def corpus() -> tuple[Doc, ...]:
    """The retrievable tasks: ready gallery entries and the tasks a plan may hold."""
    docs: list[Doc] = []
    for e in all_entries().values():
        if e.readiness.status != "ready":
            continue
        words = " ".join(DOMAIN_WORDS.get(e.category, ()))
        text = " ".join([e.name.replace("_", " "), " ".join(e.aliases), e.description,
                         " ".join(e.tags), e.category.replace("_", " "), words])
        docs.append(Doc(e.name, e.category, list(e.tags), text, "gallery", e.eval_type))
    for name, listed in plannable_tasks().items():  # what each task declares (TaskInfo)
        info = listed.info
        words = " ".join(DOMAIN_WORDS.get(info.category, ()))
        text = " ".join([name, " ".join(info.aliases), listed.description,
                         " ".join(info.tags), info.category, words])
        docs.append(Doc(name, info.category, list(info.tags), text, "builtin", "native"))
    return tuple(docs)


class Retriever:
    """BM25 over :func:`corpus` (built once per process)."""

    def __init__(self) -> None:
        import bm25s  # heavy

        self.docs = corpus()
        self.tokens = [tokenize(d.text) for d in self.docs]
        self._bm25 = bm25s.BM25()
        self._bm25.index(self.tokens, show_progress=False)

    def scores(self, query: str) -> list[tuple[Doc, float, list[str]]]:
        """Every document with its BM25 score for ``query`` and the words matched, best first."""
        q = tokenize(query)
        if not q:
            return [(d, 0.0, []) for d in self.docs]
        raw = self._bm25.get_scores(q)
        qs = set(q)
        ranked = [(d, float(s), sorted(qs & set(t)))
                  for d, s, t in zip(self.docs, raw, self.tokens, strict=True)]
        ranked.sort(key=lambda x: (-x[1], x[0].name))
        return ranked

    def search(self, query: str, *, k: int = 10, domain: str | None = None,
               embed: dict[str, float] | None = None,
               floor: float = DOMAIN_FLOOR) -> list[Candidate]:
        """The ``k`` best candidates for ``query`` (with ``domain``: only its documents, none
        below ``floor`` of the best); ``embed`` cosines are averaged into the score."""
        text = query
        if domain:
            text = f"{query} {domain.replace('_', ' ')} {' '.join(DOMAIN_WORDS.get(domain, ()))}"
        ranked = self.scores(text)
        if domain:
            ranked = [r for r in ranked if _in_domain(r[0], domain)]
        top = ranked[0][1] if ranked and ranked[0][1] > 0 else 0.0
        out: list[Candidate] = []
        for doc, s, matched in ranked:
            norm = s / top if top else 0.0
            where = f"in domain {domain}; " if domain else ""
            reason = f"{where}BM25 {s:.2f} ({norm:.2f} of the best); {said(query, matched)}"
            score = norm
            if embed is not None:
                cos = max(0.0, embed.get(doc.name, 0.0))
                score = (norm + cos) / 2
                reason += f"; embedding cosine {cos:.2f}"
            elif s <= 0 or (domain and norm < floor):
                continue
            if score <= 0:
                continue
            out.append(Candidate(doc.name, score, s, score >= QUALITY, reason, domain,
                                 doc.source, matched))
        out.sort(key=lambda c: (-c.score, c.name))
        return out[:k]


def _in_domain(doc: Doc, domain: str) -> bool:
    if doc.category == domain:
        return True
    # tags are words like "function-calling" or "agent"; agent tasks count for tool use
    tags = {t.replace("-", "_") for t in doc.tags}
    if domain in tags:
        return True
    return domain == "tool_use" and "tools" in tags and doc.category == "agent"


@functools.lru_cache(maxsize=1)
def retriever() -> Retriever:
    return Retriever()


def retrieve(request: str, domains: list[str], *, k: int = 10,
             request_first: bool = False, embed: dict[str, float] | None = None,
             first: list[list[Candidate]] | None = None) -> list[Candidate]:
    """Candidates: ``first``, then per domain (round-robin, so each shows early), then the whole
    request; each once. ``request_first``: the request's best two lead."""
    r = retriever()
    per_domain = [*(first or []), *(r.search(request, k=k, domain=d, embed=embed) for d in domains)]
    merged: list[Candidate] = []
    seen: set[str] = set()
    if request_first:
        for c in r.search(request, k=2, embed=embed):
            merged.append(c)
            seen.add(c.name)
    depth = max((len(p) for p in per_domain), default=0)
    for i in range(depth):
        for lst in per_domain:
            if i < len(lst) and lst[i].name not in seen:
                merged.append(lst[i])
                seen.add(lst[i].name)
    for c in r.search(request, k=k, embed=embed):
        if c.name not in seen:
            merged.append(c)
            seen.add(c.name)
    return merged[:max(k, len(per_domain) * 2)]


def embedding_scores(request: str, *, model: str, base_url: str | None = None) -> dict[str, float]:
    """Name -> cosine similarity of the request and each document, from an
    OpenAI-compatible ``/embeddings`` endpoint (credentials in ``base_url``: basic auth)."""
    endpoint = parse_endpoint(base_url or os.environ.get("OPENAI_BASE_URL")
                              or "https://api.openai.com/v1")
    parts = urlsplit(endpoint.raw)
    netloc = parts.hostname or ""
    netloc = f"[{netloc}]" if ":" in netloc else netloc
    if parts.port:
        netloc += f":{parts.port}"
    url = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/") + "/embeddings",
                      parts.query, ""))
    docs = corpus()
    body = json.dumps({"model": model, "input": [request, *(d.text for d in docs)]}).encode()
    headers = {"Content-Type": "application/json"}
    key = os.environ.get("OPENAI_API_KEY")
    if key:
        headers["Authorization"] = f"Bearer {key}"
    elif endpoint.has_userinfo:
        pair = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
    req = urllib.request.Request(url, data=body, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:  # noqa: S310 - http(s) only
            data = json.loads(resp.read())
        vectors = [item["embedding"] for item in sorted(data["data"], key=lambda x: x["index"])]
        if len(vectors) != len(docs) + 1:
            raise ValueError(f"{len(vectors)} vectors for {len(docs) + 1} inputs")
    except (OSError, ValueError, KeyError, TypeError) as e:
        why = scrub(str(e), [*endpoint.secrets, *([key] if key else [])])
        raise ConfigError(f"embeddings from {endpoint.display}/embeddings failed ({why}); "
                          "plan without --embeddings (BM25 alone)") from e

    def unit(v: list[float]) -> list[float]:
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        return [x / n for x in v]

    q = unit(vectors[0])
    return {d.name: sum(a * b for a, b in zip(q, unit(v), strict=True))
            for d, v in zip(docs, vectors[1:], strict=True)}

"""The planner's Hugging Face Hub fallback: search, resolve as generic ``qa``, fetch one pinned
split. ``HF_HUB_OFFLINE`` turns it off; every failure is one line that never shows the token."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any

from assay.data.hf import hub_endpoint, hub_failure, hub_file, hub_offline, keep_split, kept_split
from assay.errors import DatasetError
from assay.plan.hub_keys import map_keys
from assay.plan.hub_layout import (
    _card_columns,
    _choose_config,
    _choose_split,
    _file_columns,
    _layout,
    iter_rows,
)

if TYPE_CHECKING:
    from assay.plan.schema import HubRef

SEARCH_TIMEOUT_S = 20.0
_STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i in is it its me my of on or our the their "
    "this to use using we what which who with my your evaluate evaluation eval test tests testing "
    "benchmark benchmarks dataset datasets data good bad model models llm agent agents".split())


def hub_enabled() -> bool:
    return not hub_offline()


def _token(token: str | None) -> str | None:
    return token or os.environ.get("HF_TOKEN") or None


def _api() -> Any:
    from huggingface_hub import HfApi  # heavy

    return HfApi(endpoint=hub_endpoint())


def _where() -> str:
    return hub_endpoint() or "https://huggingface.co"


def _offline(doing: str) -> DatasetError:
    return DatasetError(f"the Hugging Face Hub is switched off (HF_HUB_OFFLINE is set), so "
                        f"assay cannot {doing}; unset HF_HUB_OFFLINE to use the Hub, or plan "
                        "from the gallery only (assay list tasks)")


def _failure(exc: BaseException, doing: str, dataset_id: str | None = None) -> DatasetError:
    kind, status = hub_failure(exc)
    page = f"https://huggingface.co/datasets/{dataset_id}" if dataset_id else ""
    if kind == "offline":
        return _offline(doing)
    if dataset_id and kind == "gated":
        return DatasetError(f"dataset {dataset_id} is gated: request access at {page}, then "
                            "set HF_TOKEN")
    if dataset_id and kind == "not_found":
        return DatasetError(f"dataset {dataset_id} was not found on the Hugging Face Hub "
                            f"({_where()}); check the id (owner/name), or set HF_TOKEN if it "
                            "is private")
    if dataset_id and kind == "no_revision":
        return DatasetError(f"dataset {dataset_id} has no such revision on the Hugging Face "
                            "Hub; remove the plan's hub revision to use the latest one")
    if kind == "connection":
        return DatasetError(f"cannot reach the Hugging Face Hub at {_where()} to {doing} "
                            "(offline?); check the network and HF_ENDPOINT, or set "
                            "HF_HUB_OFFLINE=1 to plan from the gallery only")
    if kind == "refused":
        return DatasetError(f"the Hugging Face Hub refused to {doing} (HTTP 401); check HF_TOKEN")
    if status is not None:
        try:
            phrase = f" ({HTTPStatus(status).phrase})"
        except ValueError:
            phrase = ""
        then = ("try again later" if status >= 500 or status == 429 else
                "the request itself was refused: check the plan's hub id, config and split")
        return DatasetError(f"the Hugging Face Hub answered HTTP {status}{phrase} when asked "
                            f"to {doing}; {then}")
    return DatasetError(f"could not {doing} on the Hugging Face Hub ({type(exc).__name__}); "
                        "try again later")


@dataclass
class HubCandidate:
    """A dataset found by :func:`search_hub`; ``score`` in [0, 1] (words matched, the Hub's
    rank, downloads), ``reason`` which words matched where."""

    id: str
    score: float
    reason: str
    downloads: int | None
    likes: int | None
    tags: list[str]
    description: str
    verified: bool = False


def query_words(query: str) -> list[str]:
    words = re.findall(r"[a-z0-9][a-z0-9_.+-]*", query.lower())
    out: list[str] = []
    for w in words:
        w = w.strip("._-+")
        if len(w) >= 2 and w not in _STOPWORDS and w not in out:
            out.append(w)
    return out


def _terms(query: str) -> list[str]:
    """One search per word (at most three): the Hub matches a substring of the id."""
    q = query.strip()
    if q and not re.search(r"\s", q):
        return [q]
    return query_words(q)[:3]


def _found_in(word: str, item: Any) -> str | None:
    if word in item.id.lower():
        return "id"
    if any(word in str(t).lower() for t in item.tags or []):
        return "tags"
    if word in (item.description or "").lower():
        return "description"
    return None


SEARCH_EXPAND = ("downloads", "likes", "tags", "description", "sha")


def _list_datasets(term: str, limit: int, token: str | None) -> list[Any]:
    """``HfApi.list_datasets``'s request, sent once (it retries a refused connection five
    times, 23 s, which a planner falling back to the gallery does not want)."""
    from huggingface_hub.hf_api import DatasetInfo  # heavy
    from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status  # heavy

    params = {"search": term, "limit": limit, "sort": "downloads", "expand": list(SEARCH_EXPAND)}
    r = get_session().get(f"{_where()}/api/datasets", params=params,
                          headers=build_hf_headers(token=token), timeout=SEARCH_TIMEOUT_S)
    hf_raise_for_status(r)
    items = r.json()
    if not isinstance(items, list):
        raise ValueError("the Hub's dataset search did not answer a list")
    return [DatasetInfo(**{"siblings": None, **item}) for item in items[:limit]
            if isinstance(item, dict) and "id" in item]


def search_hub(query: str, *, limit: int, token: str | None = None) -> list[HubCandidate]:
    """Datasets on the Hub for ``query``, best first, at most ``limit`` (0: no request)."""
    if limit <= 0:
        return []
    terms = _terms(query)
    if not terms:
        return []
    if not hub_enabled():
        raise _offline("search the Hub for datasets")
    words = query_words(query) or [t.lower() for t in terms]
    per_term = min(max(limit * 3, 10), 100)
    best: dict[str, tuple[int, str, Any]] = {}  # id -> (rank, term, item)
    try:
        for term in terms:
            for rank, item in enumerate(_list_datasets(term, per_term, _token(token))):
                if item.id not in best or rank < best[item.id][0]:
                    best[item.id] = (rank, term, item)
    except Exception as e:
        raise _failure(e, "search the Hub for datasets") from e
    out: list[HubCandidate] = []
    for rank, term, item in best.values():
        where = {w: _found_in(w, item) for w in words}
        matched = [f"{w!r} in {p}" for w, p in where.items() if p]
        coverage = len(matched) / len(words)
        rank_part = 1 - rank / per_term
        downloads = item.downloads if isinstance(item.downloads, int) else None
        popularity = min(1.0, math.log10(1 + downloads) / 6) if downloads else 0.0
        score = round(0.6 * coverage + 0.25 * rank_part + 0.15 * popularity, 3)
        reason = (f"matched {', '.join(matched) or 'no query word'}; #{rank + 1} in the Hub's "
                  f"search for {term!r}"
                  + (f"; {downloads:,} downloads" if downloads is not None else ""))
        out.append(HubCandidate(id=item.id, score=score, reason=reason, downloads=downloads,
                                likes=item.likes, tags=list(item.tags or []),
                                description=" ".join((item.description or "").split())))
    out.sort(key=lambda c: (-c.score, -(c.downloads or 0), c.id))
    return out[:limit]


@dataclass
class HubResolution:
    """How a Hub dataset will run as generic QA, with one reason per decision."""

    id: str
    config: str | None
    split: str
    revision: str | None
    columns: list[str]
    eval_type: str
    fields: dict[str, str]
    reasons: dict[str, str]
    model_calls: list[dict[str, Any]] = field(default_factory=list)
    ok: bool = False
    problem: str | None = None


def _dataset_info(dataset_id: str, revision: str | None, token: str | None,
                  doing: str) -> tuple[str | None, dict[str, Any], list[str]]:
    api = _api()
    try:
        info = api.dataset_info(dataset_id, revision=revision, token=_token(token))
        card = info.card_data.to_dict() if info.card_data is not None else {}
        if info.siblings is not None:
            files = [s.rfilename for s in info.siblings]
        else:
            files = list(api.list_repo_files(dataset_id, repo_type="dataset",
                                             revision=info.sha or revision,
                                             token=_token(token)))
    except Exception as e:
        raise _failure(e, doing, dataset_id) from e
    return info.sha or revision, card if isinstance(card, dict) else {}, files


def _download(dataset_id: str, filename: str, revision: str | None,
              token: str | None, doing: str) -> Path:
    try:
        return hub_file(dataset_id, filename, revision, _token(token))
    except DatasetError:
        raise
    except Exception as e:
        if hub_failure(e)[0] == "not_found":  # the dataset answered; this file is gone
            raise DatasetError(f"file {filename} of dataset {dataset_id} is not on the Hugging "
                               f"Face Hub at revision {revision} (HTTP 404): the dataset "
                               "changed since the plan was made; make the plan again") from e
        raise _failure(e, doing, dataset_id) from e


def resolve_hub(dataset_id: str, *, ask: Callable[[str, dict], dict | None] | None = None,
                token: str | None = None) -> HubResolution:
    """How ``dataset_id`` runs as generic QA: keys by name rules, else ``ask`` (only real columns
    accepted); one that cannot run has ``ok=False`` and a ``problem``."""
    if not hub_enabled():
        raise _offline(f"read dataset {dataset_id}")
    doing = f"read dataset {dataset_id}"
    sha, card, files = _dataset_info(dataset_id, None, token, doing)
    reasons: dict[str, str] = {}
    res = HubResolution(id=dataset_id, config=None, split="", revision=sha, columns=[],
                        eval_type="generate", fields={}, reasons=reasons)
    configs, source = _layout(card, files)
    if not configs:
        reasons["config"] = "no data files (.parquet, .jsonl, .json, .csv) in the repository"
        res.problem = (f"dataset {dataset_id}: no data files (.parquet, .jsonl, .json, .csv) "
                       "that assay can read; choose another dataset")
        return res
    config, reasons["config"] = _choose_config(configs, source)
    res.config = config.name
    res.split, reasons["split"] = _choose_split(config)
    types = _card_columns(card, config.name)
    example: dict[str, Any] = {}
    if types:
        reasons["columns"] = "from the card's dataset_info features"
    elif res.split:
        first = config.splits[res.split][0]
        path = _download(dataset_id, first, sha, token, doing)
        types, example = _file_columns(path)
        reasons["columns"] = f"read from {first}"
    if not res.split:
        res.problem = (f"dataset {dataset_id}: config {config.name!r} has no split with data "
                       "files; choose another config or dataset")
        return res
    res.columns = list(types)
    map_keys(res, types, example, ask)
    return res


def fetch_split(ref: HubRef, *, token: str | None = None) -> Path:
    """The split ``ref`` names as one local JSONL file, downloaded once per revision (the
    latest: the commit the Hub reports now)."""
    if ref.revision and (known := kept_split(ref.id, ref.revision, ref.config, ref.split)):
        return known
    doing = f"download dataset {ref.id}"
    if not hub_enabled():
        raise _offline(doing)
    sha, card, files = _dataset_info(ref.id, ref.revision, token, doing)
    revision = sha or ref.revision or "main"
    if known := kept_split(ref.id, revision, ref.config, ref.split):
        return known
    configs, _ = _layout(card, files)
    config = next((c for c in configs if c.name == ref.config), None)
    if config is None and configs and (ref.config is None or len(configs) == 1
                                       and ref.config == "default"):
        config = _choose_config(configs, "")[0]
    if config is None:
        names = ", ".join(str(c.name) for c in configs) or "none"
        raise DatasetError(f"dataset {ref.id} has no config {ref.config!r} (configs: {names}); "
                           "fix the plan's hub config")
    data = config.splits.get(ref.split) or []
    if not data:
        names = ", ".join(s for s, fs in config.splits.items() if fs) or "none"
        raise DatasetError(f"dataset {ref.id} has no split {ref.split!r} with data files "
                           f"(splits: {names}); fix the plan's hub split")
    rows = (row for f in data for row in iter_rows(_download(ref.id, f, revision, token, doing)))
    return keep_split(ref.id, revision, ref.config, ref.split, rows)

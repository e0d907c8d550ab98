"""Reference problems: real competition problems used as style examples and comparisons.

:func:`load_reference` reads

* a local JSON / JSONL / CSV file (key inference as in ``qa``; ``--problem-key`` etc.);
* the book's Hugging Face sets through ``datasets``: ``TianHongZXY/aime-1983-2025``
  (style examples for the generator) and ``math-ai/aime25`` (the comparison set), or
  any other Hugging Face dataset id;
* ``math500``: MATH-500 from the workspace cache (``assay data pull math500``),
  integer-answer problems first;
* nothing (``None``): the book's default, ``TianHongZXY/aime-1983-2025``.

When a Hugging Face set cannot be loaded (offline, not cached) and fallback is
allowed, MATH-500 is used instead and the returned info says so and why, so
reports can state it.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from assay.errors import DatasetError
from assay.tasks.datagen.problem import Problem, load_problems, problems_from_rows

#: the book's generator reference set (900+ AIME problems, 1983-2025)
AIME_STYLE_SET = "TianHongZXY/aime-1983-2025"
#: the book's comparison set (the 30 AIME 2025 problems)
AIME_2025_SET = "math-ai/aime25"
DEFAULT_REFERENCE = AIME_STYLE_SET
MATH500 = "math500"
#: splits to prefer, in order, when a Hugging Face set has several
_SPLITS = ("test", "train")


def problems_hash(problems: list[Problem]) -> str:
    """SHA-256 over the problems' ids, statements and answers, in order."""
    h = hashlib.sha256()
    for p in problems:
        h.update(json.dumps([p.problem_id, p.problem, p.answer], ensure_ascii=False).encode())
    return h.hexdigest()


def _first_line(e: BaseException, limit: int = 160) -> str:
    text = (str(e).strip().splitlines() or [type(e).__name__])[0].strip()
    text = text or type(e).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _in_local_cache(dataset_id: str) -> bool:
    """Whether a copy of ``dataset_id`` may be in the Hugging Face caches."""
    folders = []
    try:
        from huggingface_hub import constants

        folders.append(Path(constants.HF_HUB_CACHE) / f"datasets--{dataset_id.replace('/', '--')}")
    except (ImportError, AttributeError):
        pass
    try:
        import datasets

        folders.append(Path(datasets.config.HF_DATASETS_CACHE) / dataset_id.replace("/", "___"))
    except (ImportError, AttributeError):
        pass
    return any(f.exists() for f in folders)


def _hub_unreachable(timeout: float = 3.0) -> str | None:
    """Why the Hub cannot be reached (a quick TCP connect), or ``None`` when it can.

    Behind a proxy the direct connect proves nothing, so it is not tried.
    """
    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return None
    import socket
    from urllib.parse import urlsplit

    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    parts = urlsplit(endpoint)
    host = parts.hostname or "huggingface.co"
    port = parts.port or (80 if parts.scheme == "http" else 443)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as e:
        return f"cannot connect to {host}: {e.strerror or type(e).__name__}"
    return None


def load_hf_reference(dataset_id: str, *, split: str | None = None,
                      problem_key: str | None = None, answer_key: str | None = None,
                      solution_key: str | None = None) -> tuple[list[Problem], dict[str, Any]]:
    """Problems from a Hugging Face dataset; a one-line :class:`DatasetError` when unreachable.

    Without ``split`` the ``test`` split is used, else ``train``, else the only one.
    Columns are inferred (``problem``/``Question``, ``answer``/``Answer``, ``id``/``ID``)
    unless keys are given.
    """
    try:
        import datasets
    except ImportError as e:
        raise DatasetError(f"loading {dataset_id} needs the 'datasets' package: "
                           "pip install 'assay[hf]'") from e
    offline = any(os.environ.get(v, "").strip().lower() in ("1", "true", "yes", "on")
                  for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))
    if not offline and not _in_local_cache(dataset_id):
        down = _hub_unreachable()
        if down:  # fail in seconds instead of the Hub client's retries
            raise DatasetError(f"{dataset_id} unreachable (offline: {down})")
    try:
        loaded = datasets.load_dataset(dataset_id, split=split,
                                       token=os.environ.get("HF_TOKEN") or None)
    except Exception as e:  # datasets raises many types; all mean "could not load"
        why = "offline (HF_HUB_OFFLINE set) and not cached" if offline else _first_line(e)
        raise DatasetError(f"{dataset_id} unreachable ({why})") from e
    used_split = split
    if split is None:
        names = list(loaded.keys()) if hasattr(loaded, "keys") else []
        used_split = next((s for s in _SPLITS if s in names), names[0] if names else None)
        if used_split is None:
            raise DatasetError(f"{dataset_id} has no splits")
        loaded = loaded[used_split]
    rows = [dict(r) for r in loaded]
    if not rows:
        raise DatasetError(f"{dataset_id} (split {used_split}) is empty")
    locations = [f"{dataset_id}[{used_split}][{i}]" for i in range(len(rows))]
    problems = problems_from_rows(rows, locations, source=f"reference:{dataset_id}",
                                  problem_key=problem_key, answer_key=answer_key,
                                  solution_key=solution_key)
    info = {"source": dataset_id, "kind": "huggingface", "split": used_split,
            "fingerprint": getattr(loaded, "_fingerprint", None)}
    return problems, info


def load_reference(source: str | None, *, problem_key: str | None = None,
                   answer_key: str | None = None, solution_key: str | None = None,
                   allow_fallback: bool = True) -> tuple[list[Problem], dict[str, Any]]:
    """Reference problems and a description of where they came from.

    ``source``: a local file, a Hugging Face dataset id, ``"math500"``, or ``None``
    (the book's ``TianHongZXY/aime-1983-2025``). The info dict has ``source``,
    ``requested``, ``kind`` (``file``, ``huggingface``, ``math500``), ``count``,
    ``content_hash`` and, when MATH-500 stood in for an unreachable Hugging Face set,
    ``fallback_reason``.
    """
    requested = source or DEFAULT_REFERENCE
    keys = {"problem_key": problem_key, "answer_key": answer_key, "solution_key": solution_key}
    if requested.strip().lower() in (MATH500, "math-500"):
        problems, info = _math500()
    elif Path(requested).expanduser().exists() or _looks_local(requested):
        path = Path(requested).expanduser()
        if not path.is_file():
            raise DatasetError(f"reference file not found: {requested}")
        problems = load_problems(path, **keys)
        from assay.data.files import sha256_file

        info = {"source": str(path), "kind": "file", "file_sha256": sha256_file(path)}
    else:
        try:
            problems, info = load_hf_reference(requested, **keys)
        except DatasetError as e:
            if not allow_fallback:
                raise
            reason = str(e)
            try:
                problems, info = _math500()
            except DatasetError as e2:
                raise DatasetError(
                    f"no reference set: {reason}, and the MATH-500 fallback is not available "
                    "(run 'assay data pull math500', or pass --reference FILE)") from e2
            info["fallback_reason"] = reason
    if not problems:
        raise DatasetError(f"reference set {requested} has no problems")
    info.update(requested=requested, count=len(problems), content_hash=problems_hash(problems))
    return problems, info


def _looks_local(source: str) -> bool:
    return source.startswith((".", "/", "~")) or Path(source).suffix.lower() in (
        ".jsonl", ".json", ".csv", ".tsv", ".ndjson") or source.count("/") > 1


def _math500() -> tuple[list[Problem], dict[str, Any]]:
    from assay.data import math500

    problems = load_math500(integer_first=True)
    meta = math500.read_meta()
    info = {"source": MATH500, "kind": "math500", "version": meta.get("version"),
            "file_sha256": meta.get("content_hash"),
            "integer_answers": sum(1 for p in problems
                                   if (v := math500.integer_form(p.answer)) is not None
                                   and 0 <= v <= 999)}
    return problems, info


def load_math500(integer_first: bool = True) -> list[Any]:
    """The cached MATH-500 problems as :class:`Problem` s (from the cache ``assay data pull math500`` fills).

    With ``integer_first``, problems whose answer is an integer in 0-999 (the AIME
    format) come first, each group in id order.
    """
    from assay.data.files import read_jsonl
    from assay.data.math500 import PACKAGE, SOURCE, integer_form, locate, read_meta

    path = locate()
    meta = read_meta(path)
    try:
        rows = read_jsonl(path).rows
    except DatasetError as e:
        raise DatasetError(f"{e}; run 'assay data pull math500 --force'") from e
    problems = [
        Problem(
            problem_id=row["problem_id"], problem=row["problem"], answer=str(row["answer"]),
            solution=row.get("solution") or "", topic=row.get("subject"),
            difficulty=row.get("level"), source=SOURCE,
            provenance={"dataset": "MATH-500", "package": f"{PACKAGE}=={meta.get('version')}",
                        "level": row.get("level"), "subject": row.get("subject")},
        )
        for row in rows
    ]
    if integer_first:
        def aime_like(p: Any) -> bool:
            value = integer_form(p.answer)
            return value is not None and 0 <= value <= 999
        problems.sort(key=lambda p: (not aime_like(p), p.problem_id))
    return problems

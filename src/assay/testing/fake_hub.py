"""A real HTTP stand-in for the Hugging Face Hub's dataset API, for tests: it serves what
``huggingface_hub`` requests (search, info, tree, resolve), so tests run the real client
against loopback (``with FakeHub() as hub: hub.add_dataset(...)``, ``HF_ENDPOINT=hub.url``).
A revision is ``main`` or the dataset's ``sha``; unknown repos, revisions and files are 404
with the ``X-Error-Code`` the client maps to its exceptions. ``hub.fail["resolve"] = 500``
makes every request of a kind answer that status; ``hub.requests`` logs them all."""

from __future__ import annotations

import hashlib
import io
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

__all__ = ["FakeHub", "HubDataset", "HubRequest", "jsonl_bytes", "parquet_bytes"]

DEFAULT_SHA = "0123456789abcdef0123456789abcdef01234567"
_DATE = "2024-01-01T00:00:00.000Z"


def jsonl_bytes(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def parquet_bytes(rows: list[dict[str, Any]]) -> bytes:
    """``rows`` as a Parquet file (needs pyarrow); list values become list columns."""
    import pyarrow as pa  # optional
    import pyarrow.parquet as pq  # optional

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return buf.getvalue()


def _git_oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 - git's id


@dataclass
class HubDataset:
    """One dataset repository: ``card`` is the README's YAML front matter (a README is
    written from it unless ``files`` has one); ``sha`` is what every revision resolves to."""

    id: str
    card: dict[str, Any] | None = None
    files: dict[str, bytes] = field(default_factory=dict)
    sha: str = DEFAULT_SHA
    downloads: int | None = 0
    likes: int | None = 0
    tags: list[str] = field(default_factory=list)
    description: str = ""

    def all_files(self) -> dict[str, bytes]:
        files = dict(self.files)
        if "README.md" not in files and (self.card is not None or self.description):
            front = ("---\n" + yaml.safe_dump(self.card, sort_keys=False) + "---\n"
                     if self.card else "")
            files["README.md"] = (front + f"\n# {self.id}\n\n{self.description}\n").encode()
        return dict(sorted(files.items()))

    def summary(self) -> dict[str, Any]:
        """What the Hub's search lists for this dataset by default."""
        return {"_id": hashlib.md5(self.id.encode()).hexdigest()[:24],  # noqa: S324 - an id
                "id": self.id, "author": self.id.split("/")[0] if "/" in self.id else None,
                "sha": self.sha, "createdAt": _DATE, "lastModified": _DATE, "private": False,
                "gated": False, "disabled": False, "downloads": self.downloads,
                "likes": self.likes, "tags": list(self.tags), "description": self.description,
                "trendingScore": 0, "key": ""}

    def info(self, blobs: bool = False) -> dict[str, Any]:
        """What ``/api/datasets/<id>`` answers."""
        files = self.all_files()
        siblings: list[dict[str, Any]] = []
        for name, data in files.items():
            entry: dict[str, Any] = {"rfilename": name}
            if blobs:
                entry.update(size=len(data), blobId=_git_oid(data))
            siblings.append(entry)
        return {**self.summary(), "cardData": self.card or {}, "siblings": siblings,
                "citation": None, "usedStorage": sum(len(d) for d in files.values())}


@dataclass
class HubRequest:
    method: str
    path: str
    query: dict[str, list[str]]
    authorization: str | None
    #: search | info | tree | resolve | other
    kind: str


class FakeHub:
    """The fake Hub server; as a context manager, started on a background thread."""

    def __init__(self, datasets: dict[str, dict[str, Any]] | None = None) -> None:
        self.datasets: dict[str, HubDataset] = {}
        self.requests: list[HubRequest] = []
        self.fail: dict[str, int] = {}
        self.url = ""
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        for dataset_id, spec in (datasets or {}).items():
            self.add_dataset(dataset_id, **spec)

    def add_dataset(self, dataset_id: str, *, card: dict[str, Any] | None = None,
                    files: dict[str, bytes] | None = None, sha: str = DEFAULT_SHA,
                    downloads: int | None = 0, likes: int | None = 0,
                    tags: list[str] | None = None, description: str = "") -> HubDataset:
        """Add (or replace) a dataset; its fields may be changed later."""
        if len(sha) != 40 or any(c not in "0123456789abcdef" for c in sha):
            raise ValueError("sha must be 40 lowercase hex digits (the client checks)")
        ds = HubDataset(dataset_id, card, dict(files or {}), sha, downloads, likes,
                        list(tags or []), description)
        with self._lock:
            self.datasets[dataset_id] = ds
        return ds

    def requests_of(self, kind: str) -> list[HubRequest]:
        with self._lock:
            return [r for r in self.requests if r.kind == kind]

    def clear_requests(self) -> None:
        with self._lock:
            self.requests.clear()

    def start(self) -> FakeHub:
        """Listen on 127.0.0.1 (a free port) on a background thread; sets ``url``."""
        if self._server is not None:
            raise RuntimeError("FakeHub already started")
        hub = self

        class Handler(_Handler):
            fake = hub

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        # a short poll, so that stop() (shutdown) returns at once rather than in 0.5 s
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,),
                                        name="FakeHub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)
        self._server = self._thread = None

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _find(self, rest: str) -> tuple[HubDataset | None, str]:
        """The dataset whose id starts ``rest`` (``owner/name/...`` or ``name/...``)."""
        parts = rest.split("/")
        with self._lock:
            for n in (2, 1):
                ds = self.datasets.get("/".join(parts[:n]))
                if ds is not None:
                    return ds, "/".join(parts[n:])
        return None, rest

    def _kind(self, path: str) -> str:
        if path == "/api/datasets":
            return "search"
        if path.startswith("/api/datasets/"):
            return "tree" if "/tree/" in path else "info"
        if path.startswith("/datasets/") and "/resolve/" in path:
            return "resolve"
        return "other"  # e.g. /api/agent-harnesses, which huggingface_hub asks once

    def _search(self, q: dict[str, list[str]]) -> list[dict[str, Any]]:
        with self._lock:
            found = list(self.datasets.values())
        for term in q.get("search", []):
            found = [d for d in found if term.lower() in d.id.lower()]
        for author in q.get("author", []):
            found = [d for d in found if d.id.split("/")[0] == author]
        for tag in q.get("filter", []):
            found = [d for d in found if tag in d.tags]
        sort = (q.get("sort") or [""])[0]
        if sort in ("downloads", "likes"):
            found.sort(key=lambda d: getattr(d, sort) or 0, reverse=True)
        if q.get("limit"):
            found = found[: int(q["limit"][0])]
        expand = q.get("expand") or q.get("expand[]")
        out = []
        for d in found:
            item = d.info() if q.get("full") else d.summary()
            if expand:
                full = d.info()
                item = {"_id": item["_id"], "id": d.id,
                        **{k: full[k] for k in expand if k in full}}
            out.append(item)
        return out

    def _tree(self, ds: HubDataset, folder: str, recursive: bool) -> list[dict[str, Any]]:
        files = ds.all_files()
        prefix = folder.strip("/") + "/" if folder.strip("/") else ""
        entries: list[dict[str, Any]] = []
        dirs: set[str] = set()
        for name, data in files.items():
            if not name.startswith(prefix):
                continue
            tail = name[len(prefix):]
            if "/" in tail and not recursive:
                dirs.add(prefix + tail.split("/")[0])
                continue
            parts = tail.split("/")
            dirs.update(prefix + "/".join(parts[:i]) for i in range(1, len(parts)))
            entries.append({"type": "file", "oid": _git_oid(data), "size": len(data),
                            "path": name})
        return [{"type": "directory", "oid": "0" * 40, "size": 0, "path": d}
                for d in sorted(dirs)] + entries

    def respond(self, method: str, raw_path: str,
                headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """Status, headers and body for one request (logged); from the handler's threads."""
        split = urlsplit(raw_path)
        path = unquote(split.path)
        query = parse_qs(split.query)
        kind = self._kind(path)
        with self._lock:
            self.requests.append(HubRequest(method, path, query,
                                            headers.get("authorization"), kind))
        if kind in self.fail:
            return _error(self.fail[kind], "Internal Error", None)
        if kind == "search":
            return _json(self._search(query))
        if path == "/api/agent-harnesses":  # huggingface_hub's user-agent probe
            return _json({"standardEnvVars": [], "harnesses": {}})
        if kind in ("info", "tree"):
            ds, rest = self._find(path[len("/api/datasets/"):])
            if ds is None:
                return _not_found_repo()
            if kind == "tree":
                rev, _, folder = rest[len("tree/"):].partition("/")
                if unquote(rev) not in ("main", ds.sha):
                    return _error(404, f"Invalid rev id: {rev}", "RevisionNotFound")
                recursive = (query.get("recursive") or ["false"])[0].lower() == "true"
                return _json(self._tree(ds, folder, recursive))
            if rest.startswith("revision/"):
                if unquote(rest[len("revision/"):]) not in ("main", ds.sha):
                    return _error(404, f"Invalid rev id: {rest[9:]}", "RevisionNotFound")
            elif rest:
                return _error(404, "Not Found", None)
            blobs = (query.get("blobs") or ["false"])[0].lower() == "true"
            return _json(ds.info(blobs=blobs))
        if kind == "resolve":
            ds, rest = self._find(path[len("/datasets/"):])
            if ds is None or not rest.startswith("resolve/"):
                return _not_found_repo()
            rev, _, name = rest[len("resolve/"):].partition("/")
            if rev not in ("main", ds.sha):
                return _error(404, f"Invalid rev id: {rev}", "RevisionNotFound",
                              {"X-Repo-Commit": ds.sha})
            files = ds.all_files()
            if name not in files:
                return _error(404, "Entry not found", "EntryNotFound",
                              {"X-Repo-Commit": ds.sha})
            data = files[name]
            return 200, {"Content-Type": "application/octet-stream", "X-Repo-Commit": ds.sha,
                         "ETag": f'"{_git_oid(data)}"', "Accept-Ranges": "bytes"}, data
        return _error(404, "Not Found", None)


def _json(payload: Any) -> tuple[int, dict[str, str], bytes]:
    return 200, {"Content-Type": "application/json"}, json.dumps(payload).encode()


def _error(status: int, message: str, code: str | None,
           extra: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    headers = {"Content-Type": "application/json", **(extra or {})}
    if code:
        headers.update({"X-Error-Code": code, "X-Error-Message": message})
    return status, headers, json.dumps({"error": message}).encode()


def _not_found_repo() -> tuple[int, dict[str, str], bytes]:
    return _error(404, "Repository not found", "RepoNotFound")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeHub

    def _serve(self, with_body: bool) -> None:
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, out_headers, body = self.fake.respond(self.command, self.path, headers)
        self.send_response(status)
        for k, v in out_headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if with_body:
            self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        self._serve(True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._serve(False)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

"""The workspace store: one SQLite file (WAL) holding runs, sample results and the response cache.
Every sample result is committed as it finishes, so a run killed at any point keeps all
finished before and resumes without redoing it. Reports read only from here."""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from assay.core.paths import workspace_dir
from assay.core.redact import content_secrets, scrub, scrub_known, scrub_known_tree, secrets_version
from assay.core.types import SampleResult
from assay.errors import RunNotFoundError, StoreError
from assay.store.described import DescribedRuns, decode, stored_json
from assay.store.fingerprint import configuration_of
from assay.store.locking import connect, connect_readonly, write_retrying
from assay.store.migrate import migrate, schema_version
from assay.store.owner import effective_status, owner
from assay.store.parents import ParentRuns
from assay.store.schema import (
    INSERT_CACHE,
    INSERT_SAMPLE,
    RUN_KINDS,
    SAMPLE_COLUMNS,
    SCHEMA,
    SCHEMA_VERSION,
)
from assay.store.writer import Writer


def new_run_id() -> str:
    """A sortable, unique run id such as ``20261122-054512-3f9a1c``."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


_stored = stored_json

#: positions in a sample row (after ``run_id``) of the JSON, text and error columns
_JSON_COLS = (3, 4, 5, 8, 15, 19, 20)
_TEXT_COLS = (6, 7)
_ERROR = 9


def _scrub_json(text: str, secrets: list[str]) -> str:
    """A JSON column with the known secrets masked in its strings (decoded first, so a
    secret next to a quote or a number never breaks it)."""
    try:
        return _dumps(scrub_known_tree(json.loads(text), secrets))
    except (ValueError, RecursionError):
        return scrub_known(text, secrets)


def _holds(text: Any, secrets: list[str]) -> bool:
    return isinstance(text, str) and any(s in text for s in secrets)


#: run statuses; ``running`` is shown as ``interrupted`` once its process is gone
STATUSES = ("running", "finished", "interrupted", "failed")


class Store(DescribedRuns, ParentRuns):
    """A handle on the workspace database; one per process."""

    def __init__(self, path: str | Path | None = None, *, readonly: bool = False) -> None:
        self.path = Path(path) if path else workspace_dir() / "assay.db"
        self.readonly = readonly  # ``mode=ro``: every write raises StoreError (``assay view``)
        self._writer: Writer | None = None
        self._known: tuple[int, list[str]] | None = None
        if readonly:
            self._db = connect_readonly(self.path)
            if schema_version(self._db) < SCHEMA_VERSION:  # an older store: migrated once
                self._db.close()  # by a writing open, then read as usual
                Store(self.path).close()
                self._db = connect_readonly(self.path)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = connect(self.path)

        def init() -> None:
            if self._db.execute("SELECT 1 FROM sqlite_master WHERE name = 'samples'"
                                ).fetchone() is not None:
                if migrate(self._db):  # a store from an older version, brought up once
                    self._db.commit()
                return  # an existing, current store: opening it needs no write lock
            self._db.executescript(SCHEMA)
            self._db.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),))
            self._db.commit()

        self._write(init, "create its tables")

    def _write(self, fn: Any, what: str) -> Any:
        """A write on the main connection, retried while another process holds the lock."""
        if self.readonly:
            raise StoreError(f"the store {self.path} is open read-only; cannot {what}")
        return write_retrying(self._db, fn, self.path, what)

    @property
    def runs_dir(self) -> Path:
        return self.path.parent / "runs"

    def close(self) -> None:
        self.stop_writer()
        self._db.close()

    @contextmanager
    def background_writes(self) -> Iterator[None]:
        """Sample and cache rows written by a writer thread, all committed on exit."""
        self._writer = Writer(self.path)
        self._known = None  # each run reads the environment's secrets again
        try:
            yield
        finally:
            self.stop_writer()

    def flush(self) -> None:
        if self._writer is not None:
            self._writer.flush()

    def stop_writer(self) -> None:
        writer, self._writer = self._writer, None
        if writer is not None:
            try:
                writer.flush()
            finally:
                writer.close()

    # -- runs -------------------------------------------------------------------------
    def create_run(self, *, task: str, spec: dict[str, Any], model: dict[str, Any],
                   dataset: dict[str, Any], package_version: str, run_id: str | None = None,
                   parent_id: str | None = None, kind: str = "task") -> str:
        """Insert a new ``running`` run; ``parent_id``: a pipeline's, or the run re-scored."""
        if kind not in RUN_KINDS:
            raise ValueError(f"unknown run kind {kind!r}")
        run_id = run_id or new_run_id()

        def insert() -> None:
            self._db.execute(
                "INSERT INTO runs (id, task, status, created_at, spec, model, dataset,"
                " package_version, stats, parent_id, kind, config)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, task, "running", time.time(), _stored(spec), _stored(model),
                 _stored(dataset), package_version, _stored({"owner": owner()}), parent_id,
                 kind, self.new_run_config(task, spec, model, dataset, parent_id, kind)))
            self._db.commit()

        self._write(insert, "create a run")
        return run_id

    def get_run(self, run_id: str) -> dict[str, Any]:
        """The run's record, JSON decoded; a unique id prefix is accepted."""
        if not run_id:
            raise RunNotFoundError("empty run id; see 'assay list runs'")
        rows = self._db.execute(
            "SELECT id, task, status, created_at, finished_at, spec, model, dataset,"
            " package_version, stats, parent_id, metrics, headline, report, kind, steps, config,"
            " (SELECT p.kind FROM runs p WHERE p.id = runs.parent_id)"
            " FROM runs WHERE substr(id, 1, ?) = ? ORDER BY id",
            (len(run_id), run_id)).fetchall()
        exact = [r for r in rows if r[0] == run_id]
        if exact:
            rows = exact
        if not rows:
            raise RunNotFoundError(f"no run {run_id!r} in {self.path}; see 'assay list runs'")
        if len(rows) > 1:
            raise RunNotFoundError(f"run id prefix {run_id!r} is ambiguous; give more characters")
        r = rows[0]
        stats = json.loads(r[9])
        run = {"id": r[0], "task": r[1], "status": effective_status(r[2], stats),
               "created_at": r[3], "finished_at": r[4], "spec": json.loads(r[5]),
               "model": json.loads(r[6]), "dataset": json.loads(r[7]), "package_version": r[8],
               "stats": stats, "parent_id": r[10], "metrics": decode(r[11]),
               "headline": decode(r[12]), "report": decode(r[13]), "kind": r[14],
               "steps": decode(r[15]) or [], "config": decode(r[16])}
        run["config"] = configuration_of(run, r[17])  # not stored yet: from its spec
        return run

    def count_runs(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])

    def list_runs(self, limit: int = 50) -> list[dict[str, Any]]:
        """Most recent runs first, with sample counts; ``resumable``: ``--resume`` has
        something to do (interrupted, failed, or finished with errors)."""
        rows = self._db.execute(
            "SELECT r.id, r.task, r.status, r.created_at, r.model, r.dataset, r.stats,"
            " (SELECT COUNT(*) FROM samples s WHERE s.run_id = r.id),"
            " (SELECT COUNT(*) FROM samples s WHERE s.run_id = r.id AND s.error IS NOT NULL),"
            " r.parent_id, r.kind FROM runs r ORDER BY r.created_at DESC LIMIT ?",
            (limit,)).fetchall()
        out = []
        for r in rows:
            stats = json.loads(r[6])
            status = effective_status(r[2], stats)
            out.append({"id": r[0], "task": r[1], "status": status, "created_at": r[3],
                        "model": json.loads(r[4]), "dataset": json.loads(r[5]), "stats": stats,
                        "samples": r[7], "errors": r[8], "parent_id": r[9], "kind": r[10],
                        "resumable": status in ("interrupted", "failed") or bool(r[8])})
        return out

    def runs_of(self, task: str) -> list[str]:
        return [r[0] for r in self._db.execute(
            "SELECT id FROM runs WHERE task = ? ORDER BY created_at, id", (task,))]

    def tasks(self) -> list[str]:
        return [r[0] for r in self._db.execute(
            "SELECT DISTINCT task FROM runs ORDER BY task")]

    def update_run(self, run_id: str, *, spec: dict[str, Any], model: dict[str, Any]) -> None:
        """Replace a run's stored spec and model identity (resume with a new endpoint)."""
        self._commit("UPDATE runs SET spec=?, model=? WHERE id=?",
                     (_stored(spec), _stored(model), run_id), f"update run {run_id}")

    def set_run_dataset(self, run_id: str, dataset: dict[str, Any]) -> None:
        self._commit("UPDATE runs SET dataset=? WHERE id=?", (_stored(dataset), run_id),
                     f"update run {run_id}")

    def set_run_status(self, run_id: str, status: str, stats: dict[str, Any] | None = None) -> None:
        """Update status and optionally stats; ``running`` records this process as the
        owner, so a run whose process dies is shown as interrupted."""
        if status not in STATUSES:
            raise ValueError(f"unknown run status {status!r}")
        finished = time.time() if status != "running" else None

        def update() -> None:
            new_stats = stats
            if status == "running":
                row = self._db.execute("SELECT stats FROM runs WHERE id=?", (run_id,)).fetchone()
                new_stats = dict(json.loads(row[0]) if row else {}, **(stats or {}))
                new_stats["owner"] = owner()
            if new_stats is None:
                self._db.execute("UPDATE runs SET status=?, finished_at=? WHERE id=?",
                                 (status, finished, run_id))
            else:
                self._db.execute("UPDATE runs SET status=?, finished_at=?, stats=? WHERE id=?",
                                 (status, finished, _stored(new_stats), run_id))
            self._db.commit()

        self._write(update, f"mark run {run_id} {status}")

    # -- samples ----------------------------------------------------------------------
    def completed_keys(self, run_id: str, *, include_errors: bool = False) -> set[tuple[str, int]]:
        q = "SELECT sample_id, epoch FROM samples WHERE run_id = ?"
        if not include_errors:
            q += " AND error IS NULL"
        return {(r[0], r[1]) for r in self._db.execute(q, (run_id,))}

    def record(self, run_id: str, result: SampleResult | tuple[Any, ...]) -> None:
        """Write one sample result and commit (with cache rows written before it): the one
        place results are written. A raw row follows ``INSERT_SAMPLE`` after ``run_id``."""
        row = result.row() if isinstance(result, SampleResult) else result
        if len(row) < SAMPLE_COLUMNS:  # the newer columns may be left off the end
            row = (*row, *(None,) * (SAMPLE_COLUMNS - len(row)))
        row = self._without_secrets(row)
        if self._writer is not None:
            self._writer.put("s", (run_id, *row))
            return

        self._commit(INSERT_SAMPLE, (run_id, *row), "save a sample")

    def _secrets(self) -> list[str]:
        """The known secrets to look for in content; read once per run and again whenever
        a new one is remembered."""
        version = secrets_version()
        if self._writer is None or self._known is None or self._known[0] != version:
            self._known = (version, content_secrets())
        return self._known[1]

    def _without_secrets(self, row: tuple[Any, ...]) -> tuple[Any, ...]:
        """A sample row as it may be written: its error scrubbed, the known secrets masked in
        every text column (no patterns on content: they could change what a model said)."""
        secrets = self._secrets()
        error = row[_ERROR]
        if not error and not any(_holds(row[i], secrets) for i in (*_TEXT_COLS, *_JSON_COLS)):
            return row
        out = list(row)
        if error:
            out[_ERROR] = scrub(error) if isinstance(error, str) else error
        for i in _TEXT_COLS:
            if _holds(out[i], secrets):
                out[i] = scrub_known(out[i], secrets)
        for i in _JSON_COLS:
            if _holds(out[i], secrets):
                out[i] = _scrub_json(out[i], secrets)
        return tuple(out)

    def iter_results(self, run_id: str, *, transcripts: bool = True, texts: bool = True,
                     keys: list[tuple[str, int]] | None = None) -> Iterator[SampleResult]:
        """A run's sample results in dataset order, one at a time. ``transcripts=False``
        and ``texts=False`` (input, target, output, sample) leave out what metrics never
        need, most of a result's size; ``keys``: only those ``(sample_id, epoch)``."""
        text_cols = "input, target, output, sample" if texts else "NULL, NULL, NULL, NULL"
        where = "run_id = ?"
        args: list[Any] = [run_id]
        if keys is not None:
            where += (" AND (sample_id, epoch) IN (SELECT json_extract(value, '$[0]'),"
                      " json_extract(value, '$[1]') FROM json_each(?))")
            args.append(json.dumps([[sid, ep] for sid, ep in keys]))
        cur = self._db.execute(
            f"SELECT sample_id, epoch, {text_cols}, prediction, scores, error,"
            f" latency_s, input_tokens, output_tokens, {'transcript' if transcripts else 'NULL'},"
            f" metadata, model_s, wait_s, outcome, seq, model_calls, cache_hits, created_at"
            f" FROM samples WHERE {where}"
            " ORDER BY seq, epoch", args)
        loads = json.loads
        for r in cur:
            yield SampleResult(
                run_id=run_id, sample_id=r[0], epoch=r[1],
                input=loads(r[2]) if r[2] is not None else None,
                target=loads(r[3]) if r[3] is not None else None,
                output=r[4] or "", sample=loads(r[5]) if r[5] else {}, prediction=r[6],
                scores=loads(r[7] or "{}"), error=r[8], latency_s=r[9] or 0.0,
                input_tokens=r[10] or 0, output_tokens=r[11] or 0,
                transcript=loads(r[12]) if r[12] else [],
                metadata=loads(r[13]) if r[13] else {},
                model_s=r[14], wait_s=r[15], outcome=loads(r[16]) if r[16] else {},
                seq=r[17], model_calls=r[18] or 0, cache_hits=r[19] or 0,
                created_at=r[20] or 0.0)

    def iter_score_rows(self, run_id: str) -> Iterator[tuple[str, int, bool, dict[str, Any],
                                                              dict[str, Any]]]:
        """``(sample_id, epoch, errored, scores, fields)`` in dataset order; ``fields``: the
        metadata over the dataset row's fields (what a comparison groups by)."""
        cur = self._db.execute(
            "SELECT sample_id, epoch, error IS NOT NULL, scores, metadata,"
            " json_extract(sample, '$.row') FROM samples WHERE run_id = ? ORDER BY seq, epoch",
            (run_id,))
        loads = json.loads
        for sid, epoch, errored, scores, meta, row in cur:
            fields = loads(row) if row else {}
            if not isinstance(fields, dict):
                fields = {}
            if meta:
                fields.update(loads(meta))
            yield sid, epoch, bool(errored), loads(scores or "{}"), fields

    def iter_result_lines(self, run_id: str) -> Iterator[str]:
        """A run's results as ``results.jsonl`` lines (SampleResult keys without ``run_id``),
        JSON columns copied as stored: several times cheaper than decoding them."""
        cur = self._db.execute(
            "SELECT sample_id, epoch, input, target, output, prediction, scores, error,"
            " latency_s, model_s, wait_s, input_tokens, output_tokens, transcript, metadata,"
            " sample, outcome, seq, model_calls, cache_hits, created_at FROM samples"
            " WHERE run_id = ? ORDER BY seq, epoch", (run_id,))
        dumps = json.JSONEncoder(ensure_ascii=False).encode
        for r in cur:
            yield (f'{{"sample_id": {dumps(r[0])}, "epoch": {r[1]}, "input": {r[2] or "null"},'
                   f' "target": {r[3] or "null"}, "output": {dumps(r[4] or "")},'
                   f' "prediction": {dumps(r[5])}, "scores": {r[6] or "{}"},'
                   f' "error": {dumps(r[7])}, "latency_s": {dumps(r[8] or 0.0)},'
                   f' "model_s": {dumps(r[9])}, "wait_s": {dumps(r[10])},'
                   f' "input_tokens": {r[11] or 0}, "output_tokens": {r[12] or 0},'
                   f' "transcript": {r[13] or "[]"}, "metadata": {r[14] or "{}"},'
                   f' "sample": {r[15] or "{}"}, "outcome": {r[16] or "{}"}, "seq": {r[17]},'
                   f' "model_calls": {r[18] or 0}, "cache_hits": {r[19] or 0},'
                   f' "created_at": {dumps(r[20] or 0.0)}}}')

    def results(self, run_id: str, *, transcripts: bool = True,
                texts: bool = True) -> list[SampleResult]:
        return list(self.iter_results(run_id, transcripts=transcripts, texts=texts))

    def sample_totals(self, run_id: str) -> dict[str, Any]:
        r = self._db.execute(
            "SELECT COUNT(*), SUM(error IS NOT NULL), COALESCE(SUM(input_tokens),0),"
            " COALESCE(SUM(output_tokens),0), COALESCE(SUM(model_calls),0),"
            " COALESCE(SUM(cache_hits),0) FROM samples WHERE run_id = ?", (run_id,)).fetchone()
        return {"samples": r[0], "errors": r[1] or 0, "input_tokens": r[2],
                "output_tokens": r[3], "model_calls": r[4], "cache_hits": r[5]}

    # -- response cache ---------------------------------------------------------------
    def cache_keys(self, model: str) -> set[str]:
        """Keys of ``model``'s cached replies: a cold cache costs a set lookup, not a query."""
        return {r[0] for r in self._db.execute("SELECT key FROM cache WHERE model = ?", (model,))}

    def cache_get(self, key: str) -> str | None:
        row = self._db.execute("SELECT reply FROM cache WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def cache_put(self, key: str, model: str, reply_json: str) -> None:
        """Remember a reply; committed with the next sample record."""
        secrets = self._secrets()
        if _holds(reply_json, secrets):
            reply_json = _scrub_json(reply_json, secrets)
        args = (key, model, reply_json, time.time())
        if self._writer is not None:
            self._writer.put("c", args)
        else:
            self._db.execute(INSERT_CACHE, args)

    def commit(self) -> None:
        """Commit pending writes (cache rows of a sample that is still running)."""
        self._db.commit()

    def cache_clear(self, model: str | None = None) -> int:
        """Delete cached replies (all, or one model's); returns how many."""
        if model:
            cur = self._db.execute("DELETE FROM cache WHERE model = ?", (model,))
        else:
            cur = self._db.execute("DELETE FROM cache")
        self._db.commit()
        return cur.rowcount

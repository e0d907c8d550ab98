"""The read-only SQL behind ``assay view``: runs and a run's samples, filtered and paged.
Paging and filtering happen in SQL, so a page costs the same few queries for a thousand
samples or a hundred thousand. A sample's *primary score* is the first entry of its
``scores`` (the task's headline scorer); verdict and score filters read its ``value``."""

from __future__ import annotations

import contextlib
import json
import math
import re
from dataclasses import dataclass
from typing import Any

from assay.store.owner import effective_status
from assay.store.sqlite import Store

__all__ = ["CATEGORY_KEYS", "FIELD_PATTERN", "PAGE_SIZE", "PRIMARY", "RUN_SORTS", "RunFilter",
           "SAMPLE_SORTS", "SampleFilter", "category_counts", "children", "json_path",
           "metadata_fields", "model_label", "neighbours", "newest_samples", "pages_for",
           "progress", "run_choices", "run_rows", "sample_page", "sample_row", "verdict_of"]

PAGE_SIZE = 50
#: a metadata key the category filter may read
FIELD_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_ .-]{0,63}$")


@dataclass
class RunFilter:
    task: str = ""
    model: str = ""
    status: str = "all"
    date_from: str = ""
    date_to: str = ""
    q: str = ""
    page: int = 1
    ts_from: float | None = None
    ts_to: float | None = None  # exclusive: the midnight after ``date_to``
    sort: str = "created"  # a key of RUN_SORTS
    descending: bool = True

    @property
    def active(self) -> bool:
        return bool(self.task or self.model or self.status != "all" or self.date_from
                    or self.date_to or self.q)


@dataclass
class SampleFilter:
    verdict: str = "all"
    field: str = ""       # the metadata key the category filter reads ("" = the run's default)
    category: str = ""    # its value, as text ("" = any)
    score_min: float | None = None
    score_max: float | None = None
    q: str = ""
    page: int = 1
    sort: str = "sample"  # a key of SAMPLE_SORTS
    descending: bool = False

    @property
    def active(self) -> bool:
        return bool(self.verdict != "all" or self.category or self.score_min is not None
                    or self.score_max is not None or self.q)


#: SQL: the value of a sample's primary (first) score, NULL when it has none
PRIMARY = ("(CASE WHEN json_valid(s.scores) THEN (SELECT json_extract(j.value, '$.value')"
           " FROM json_each(s.scores) AS j LIMIT 1) END)")
#: metadata keys tried, in order, for a run's default category filter
CATEGORY_KEYS = ("category", "level", "subset", "difficulty", "type", "topic", "language",
                 "split", "case")

_MODEL = ("(CASE WHEN json_valid(r.model) THEN COALESCE(json_extract(r.model, '$.model'),"
          " json_extract(r.model, '$.name'), json_extract(r.model, '$.spec')) END)")
_DATASET_NAMES = ("name", "dataset", "path", "source")

RUN_SORTS = {
    "run": "r.id", "task": "r.task", "model": _MODEL, "status": "r.status",
    "created": "r.created_at",
    "samples": "(SELECT COUNT(*) FROM samples s WHERE s.run_id = r.id)",
    "errors": "(SELECT COUNT(*) FROM samples s WHERE s.run_id = r.id AND s.error IS NOT NULL)",
    "headline": "(CASE WHEN json_valid(r.headline) THEN json_extract(r.headline, '$.value') END)",
}
SAMPLE_SORTS = ("sample", "verdict", "score", "category", "latency")  # sample: dataset order


def _run_order(f: RunFilter) -> str:
    way = "DESC" if f.descending else "ASC"
    return f"ORDER BY {RUN_SORTS.get(f.sort, 'r.created_at')} {way}, r.created_at {way}, r.id {way}"


def json_path(key: str) -> str:
    """The JSON path of a top-level key (checked against :data:`FIELD_PATTERN`)."""
    return '$."' + key.replace('"', "") + '"'


def _like(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _loads(text: str | None, default: Any = None) -> Any:
    if text is None:
        return default
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return default


def model_label(model: Any) -> str:
    if isinstance(model, dict):
        for key in ("model", "name", "spec"):
            if model.get(key):
                value = model[key]
                return value if isinstance(value, str) else json.dumps(value)
        return json.dumps(model, ensure_ascii=False)[:120]
    return "" if model is None else str(model)


def pages_for(total: int) -> int:
    return max(1, math.ceil(total / PAGE_SIZE))


# -- runs -------------------------------------------------------------------------------
def _run_where(f: RunFilter) -> tuple[str, list[Any]]:
    where, args = ["1=1"], []
    if f.task:
        where.append("r.task = ?")
        args.append(f.task)
    if f.model:
        where.append(f"{_MODEL} = ?")
        args.append(f.model)
    if f.status in ("finished", "failed"):
        where.append("r.status = ?")
        args.append(f.status)
    elif f.status == "running":
        where.append("r.status = 'running'")
    elif f.status == "interrupted":
        where.append("r.status IN ('running', 'interrupted')")
    if f.ts_from is not None:
        where.append("r.created_at >= ?")
        args.append(f.ts_from)
    if f.ts_to is not None:
        where.append("r.created_at < ?")
        args.append(f.ts_to)
    if f.q:
        names = " OR ".join(f"json_extract(r.dataset, '$.{k}') LIKE :q ESCAPE '\\'"
                            for k in _DATASET_NAMES)
        where.append(f"(r.id LIKE :q ESCAPE '\\' OR r.task LIKE :q ESCAPE '\\' OR"
                     f" {_MODEL} LIKE :q ESCAPE '\\' OR (json_valid(r.dataset) AND ({names})))")
    return " AND ".join(where), args


def _named(sql: str, args: list[Any], q: str) -> tuple[str, dict[str, Any]]:
    params: dict[str, Any] = {"q": _like(q)}
    parts = sql.split("?")
    out = parts[0]
    for i, part in enumerate(parts[1:]):
        params[f"p{i}"] = args[i]
        out += f":p{i}" + part
    return out, params


_RUN_COLS = ("r.id, r.task, r.status, r.created_at, r.finished_at, r.model, r.dataset,"
             " r.stats, r.parent_id, r.metrics,"
             " (SELECT COUNT(*) FROM samples s WHERE s.run_id = r.id),"
             " (SELECT COUNT(*) FROM samples s WHERE s.run_id = r.id AND s.error IS NOT NULL),"
             " r.headline, r.report IS NOT NULL, r.kind")


def _run_dict(r: tuple[Any, ...], status: str) -> dict[str, Any]:
    model = _loads(r[5], {})
    return {"id": r[0], "task": r[1], "status": status, "created_at": r[3],
            "finished_at": r[4], "model": model, "model_label": model_label(model),
            "dataset": _loads(r[6], {}), "stats": _loads(r[7], {}), "parent_id": r[8],
            "metrics": _loads(r[9]), "samples": r[10], "errors": r[11],
            # the stored headline; ``report`` only says whether the run is described (its
            # sections are read on the run's own page)
            "headline": _loads(r[12]), "report": {} if r[13] else None, "kind": r[14]}


def run_rows(store: Store, f: RunFilter) -> tuple[list[dict[str, Any]], int, int]:
    """One page of runs matching ``f``: ``(rows, total, page)``, ``page`` clamped. Telling
    running from interrupted needs the owner's process: those few are filtered here."""
    where, args = _run_where(f)
    db = store._db
    if f.status in ("running", "interrupted"):
        sql, params = _named(f"SELECT r.id, r.status, r.stats FROM runs r WHERE {where}"
                             f" {_run_order(f)}", args, f.q)
        ids = [r[0] for r in db.execute(sql, params)
               if effective_status(r[1], _loads(r[2], {})) == f.status]
        total = len(ids)
        page = min(f.page, pages_for(total))
        chosen = ids[(page - 1) * PAGE_SIZE: page * PAGE_SIZE]
        rows = db.execute(f"SELECT {_RUN_COLS} FROM runs r WHERE r.id IN"
                          f" (SELECT value FROM json_each(?)) {_run_order(f)}",
                          (json.dumps(chosen),))
    else:
        sql, params = _named(f"SELECT COUNT(*) FROM runs r WHERE {where}", args, f.q)
        total = db.execute(sql, params).fetchone()[0]
        page = min(f.page, pages_for(total))
        sql, params = _named(f"SELECT {_RUN_COLS} FROM runs r WHERE {where}"
                             f" {_run_order(f)} LIMIT ? OFFSET ?",
                             [*args, PAGE_SIZE, (page - 1) * PAGE_SIZE], f.q)
        rows = db.execute(sql, params)
    out = [_run_dict(r, effective_status(r[2], _loads(r[7], {}))) for r in rows]
    return out, total, page


def run_choices(store: Store) -> dict[str, list[str]]:
    db = store._db
    tasks = [r[0] for r in db.execute("SELECT DISTINCT task FROM runs ORDER BY 1")]
    models = [r[0] for r in db.execute(f"SELECT DISTINCT {_MODEL} AS m FROM runs r"
                                       " WHERE m IS NOT NULL ORDER BY 1")]
    return {"tasks": tasks, "models": [str(m) for m in models]}


def children(store: Store, run_id: str) -> list[dict[str, Any]]:
    """``run_id``'s child runs (a plan's tasks, a pipeline's steps), oldest first."""
    rows = store._db.execute(f"SELECT {_RUN_COLS} FROM runs r WHERE r.parent_id = ?"
                             " ORDER BY r.created_at, r.id", (run_id,))
    return [_run_dict(r, effective_status(r[2], _loads(r[7], {}))) for r in rows]


def role_usage(store: Store, run_id: str) -> dict[str, dict[str, int]]:
    """Each role's calls and tokens summed over the run's samples (``outcome.role_usage``:
    a judge's, an examiner's), for a run whose stats hold none (a re-scoring)."""
    rows = store._db.execute(
        "SELECT u.key, SUM(json_extract(u.value, '$.calls')),"
        " SUM(json_extract(u.value, '$.input_tokens')),"
        " SUM(json_extract(u.value, '$.output_tokens')) FROM samples s,"
        " json_each(s.outcome, '$.role_usage') u WHERE s.run_id = ? AND s.outcome IS NOT NULL"
        " GROUP BY u.key ORDER BY u.key", (run_id,))
    return {str(r[0]): {"calls": int(r[1] or 0), "input_tokens": int(r[2] or 0),
                        "output_tokens": int(r[3] or 0)} for r in rows}


def usage_totals(store: Store, run_id: str) -> dict[str, Any]:
    """What the run's samples paid for (``outcome.usage``), per role and in all: tokens (the
    cached and reasoning ones where the provider said) and USD; ``usd`` is ``None`` where a
    paid call's price was unknown, and ``unpriced`` names those roles."""
    rows = store._db.execute(
        "SELECT u.key, " + ", ".join(f"SUM(json_extract(u.value, '$.{k}'))" for k in _USAGE)
        + ", SUM(json_type(u.value, '$.cost_usd') = 'null') FROM samples s,"
        " json_each(s.outcome, '$.usage') u WHERE s.run_id = ? AND s.outcome IS NOT NULL"
        " GROUP BY u.key ORDER BY u.key != 'subject', u.key", (run_id,))
    roles = {}
    for r in rows:
        role = {k: v for k, v in zip(_USAGE[:4], r[1:5], strict=True) if v is not None}
        role["usd"] = None if r[6] else round(r[5] or 0.0, 10)
        roles[str(r[0])] = role
    unpriced = [k for k, v in roles.items() if v["usd"] is None]
    return {"usd": None if unpriced else round(sum(v["usd"] for v in roles.values()), 10),
            "tokens": sum(v.get("input_tokens", 0) + v.get("output_tokens", 0)
                          for v in roles.values()),
            "roles": roles, "unpriced": unpriced}


_USAGE = ("input_tokens", "output_tokens", "cached_input_tokens", "reasoning_tokens",
          "cost_usd")


# -- samples ----------------------------------------------------------------------------
def metadata_fields(store: Store, run_id: str) -> tuple[list[str], str]:
    """The scalar metadata keys of one of the run's samples, and the default category key."""
    # any one sample will do (the primary key's first, found without a scan)
    row = store._db.execute("SELECT metadata FROM samples WHERE run_id = ? LIMIT 1",
                            (run_id,)).fetchone()
    meta = _loads(row[0], {}) if row else {}
    if not isinstance(meta, dict):
        return [], ""
    keys = [k for k, v in meta.items() if FIELD_PATTERN.match(k) and (
        isinstance(v, (int, float, bool)) or (isinstance(v, str) and len(v) <= 200))]
    default = next((k for k in CATEGORY_KEYS if k in keys), "")
    return keys, default


def category_counts(store: Store, run_id: str, key: str, limit: int = 200
                    ) -> list[tuple[str, int]]:
    if not key:
        return []
    rows = store._db.execute(
        "SELECT CAST(json_extract(s.metadata, ?) AS TEXT) AS v, COUNT(*) FROM samples s"
        " WHERE s.run_id = ? AND json_valid(s.metadata) AND v IS NOT NULL"
        " GROUP BY v ORDER BY COUNT(*) DESC, v LIMIT ?", (json_path(key), run_id, limit))
    return [(r[0], r[1]) for r in rows]


def _sample_where(run_id: str, f: SampleFilter, key: str) -> tuple[str, list[Any]]:
    where, args = ["s.run_id = ?"], [run_id]
    verdict = {"error": "s.error IS NOT NULL", "correct": f"s.error IS NULL AND {PRIMARY} = 1",
               "wrong": f"s.error IS NULL AND {PRIMARY} < 1",
               "unscored": f"s.error IS NULL AND {PRIMARY} IS NULL"}.get(f.verdict)
    if verdict:
        where.append(verdict)
    if f.category and key:
        where.append("json_valid(s.metadata) AND"
                     " CAST(json_extract(s.metadata, ?) AS TEXT) = ?")
        args += [json_path(key), f.category]
    if f.score_min is not None:
        where.append(f"{PRIMARY} >= ?")
        args.append(f.score_min)
    if f.score_max is not None:
        where.append(f"{PRIMARY} <= ?")
        args.append(f.score_max)
    if f.q:
        where.append("s.sample_id LIKE ? ESCAPE '\\'")
        args.append(_like(f.q))
    return " AND ".join(where), args


_PREVIEW = ("(CASE WHEN json_valid(s.input) THEN CASE json_type(s.input)"
            " WHEN 'text' THEN substr(json_extract(s.input, '$'), 1, 160)"
            " WHEN 'array' THEN substr(json_extract(s.input, '$[#-1].content'), 1, 160) END END)")
_ORDER = "ORDER BY s.seq, s.epoch, s.sample_id"


def _primary(scores_json: str | None) -> tuple[str | None, dict[str, Any] | None]:
    scores = _loads(scores_json, {})
    if isinstance(scores, dict) and scores:
        name, entry = next(iter(scores.items()))
        return name, entry if isinstance(entry, dict) else {"value": entry}
    return None, None


def verdict_of(error: str | None, value: Any) -> str:
    if error is not None:
        return "error"
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "unscored" if value is None else str(value)
    if value == 1:
        return "correct"
    if value == 0:
        return "wrong"
    return f"{value:.3g}"


def _sample_key(f: SampleFilter, key: str) -> str:
    """SQL of the sort column (``key``, a checked :data:`FIELD_PATTERN` name, is a literal)."""
    if f.sort == "score":
        return PRIMARY
    if f.sort == "latency":
        return "s.latency_s"
    if f.sort == "verdict":  # errors, unscored, then by score
        return (f"(CASE WHEN s.error IS NOT NULL THEN -2 WHEN {PRIMARY} IS NULL THEN -1"
                f" ELSE {PRIMARY} END)")
    if f.sort == "category" and key:
        path = json_path(key).replace("'", "''")
        return (f"(CASE WHEN json_valid(s.metadata) THEN"
                f" CAST(json_extract(s.metadata, '{path}') AS TEXT) END)")
    return "s.seq"


def sample_page(store: Store, run_id: str, f: SampleFilter, key: str
                ) -> tuple[list[dict[str, Any]], int, int]:
    """One page of the run's samples matching ``f``: ``(rows, total, page)``, ``page``
    clamped. The page's keys are found first and its columns read for those rows only; a
    filtered total comes with the page (``COUNT(*) OVER ()``): the JSON is read once."""
    where, args = _sample_where(run_id, f, key)
    db = store._db
    window = f.active
    cat = "CAST(json_extract(s.metadata, ?) AS TEXT)" if key else "NULL"
    cat_args = [json_path(key)] if key else []
    way = "DESC" if f.descending else "ASC"
    order = "ORDER BY " + ", ".join(f"{{t}}{c} {way}" for c in ("k", "seq", "epoch", "sample_id"))
    sql = (f"WITH p AS (SELECT s.rowid AS r, {_sample_key(f, key)} AS k, s.seq, s.epoch,"
           f" s.sample_id{', COUNT(*) OVER () AS total' if window else ''} FROM samples s"
           f" WHERE {where} {order.format(t='')} LIMIT ? OFFSET ?)"
           f" SELECT s.sample_id, s.epoch, s.seq, s.error, s.scores, substr(s.prediction, 1, 200),"
           f" substr(s.output, 1, 200), s.latency_s, CASE WHEN json_valid(s.metadata) THEN {cat}"
           f" END, {_PREVIEW}{', p.total' if window else ''} FROM p JOIN samples s"
           f" ON s.rowid = p.r {order.format(t='p.')}")

    def fetch(page: int) -> list[tuple[Any, ...]]:
        return db.execute(sql, [*args, PAGE_SIZE, (page - 1) * PAGE_SIZE, *cat_args]
                          ).fetchall()

    def count() -> int:
        return db.execute(f"SELECT COUNT(*) FROM samples s WHERE {where}", args).fetchone()[0]

    page = f.page
    if not window:
        total = count()
        page = min(page, pages_for(total))
        rows = fetch(page)
    else:
        rows = fetch(page)
        if rows:
            total = rows[0][-1]
        else:  # nothing matches, or a page past the last: count, and show the last page
            total = 0 if page == 1 else count()
            page = pages_for(total)
            rows = fetch(page) if total else []
    return [_row_dict(r) for r in rows], total, page


def _row_dict(r: tuple[Any, ...]) -> dict[str, Any]:
    name, entry = _primary(r[4])
    value = entry.get("value") if entry else None
    return {"sample_id": r[0], "epoch": r[1], "seq": r[2], "error": r[3],
            "score_name": name, "score": value, "verdict": verdict_of(r[3], value),
            # the extracted answer, else the output's start (``answered`` says which)
            "prediction": r[5] if r[5] is not None else r[6], "answered": r[5] is not None,
            "latency_s": r[7],
            "category": r[8], "input": r[9] if isinstance(r[9], str) else None}


def neighbours(store: Store, run_id: str, row: dict[str, Any], f: SampleFilter, key: str
               ) -> tuple[tuple[str, int] | None, tuple[str, int] | None]:
    """The samples before and after ``row`` among those matching ``f``, in the table's
    order (dataset order by keyset; another sort by the row's rank in it)."""
    where, args = _sample_where(run_id, f, key)
    db = store._db
    if f.sort == "sample" and not f.descending:
        here = [row["seq"], row["epoch"], row["sample_id"]]
        prev = db.execute(f"SELECT s.sample_id, s.epoch FROM samples s WHERE {where} AND"
                          " (s.seq, s.epoch, s.sample_id) < (?, ?, ?) ORDER BY s.seq DESC,"
                          " s.epoch DESC, s.sample_id DESC LIMIT 1", [*args, *here]).fetchone()
        nxt = db.execute(f"SELECT s.sample_id, s.epoch FROM samples s WHERE {where} AND"
                         f" (s.seq, s.epoch, s.sample_id) > (?, ?, ?) {_ORDER} LIMIT 1",
                         [*args, *here]).fetchone()
        return (tuple(prev) if prev else None), (tuple(nxt) if nxt else None)  # type: ignore[return-value]
    way = "DESC" if f.descending else "ASC"
    order = ", ".join(f"{c} {way}" for c in ("k", "s.seq", "s.epoch", "s.sample_id"))
    ranked = db.execute(
        f"WITH o AS (SELECT s.sample_id AS id, s.epoch AS e, ROW_NUMBER() OVER (ORDER BY"
        f" {order}) AS n FROM (SELECT *, {_sample_key(f, key)} AS k FROM samples s) s"
        f" WHERE {where}), me AS (SELECT n FROM o WHERE id = ? AND e = ?)"
        " SELECT o.id, o.e, o.n - me.n FROM o, me WHERE o.n IN (me.n - 1, me.n + 1)",
        [*args, row["sample_id"], row["epoch"]]).fetchall()
    found = {d: (i, e) for i, e, d in ranked}
    return found.get(-1), found.get(1)


_DETAIL_COLS = ("sample_id", "epoch", "seq", "input", "target", "transcript", "output",
                "prediction", "scores", "error", "latency_s", "input_tokens", "output_tokens",
                "model_calls", "cache_hits", "metadata", "created_at", "model_s", "wait_s",
                "sample", "outcome")
_JSON_COLS = {"input", "target", "transcript", "scores", "metadata", "sample", "outcome"}


def sample_row(store: Store, run_id: str, sample_id: str, epoch: int | None
               ) -> dict[str, Any] | None:
    """One stored sample result, JSON columns decoded where valid; the first epoch when
    ``epoch`` is None."""
    sql = (f"SELECT {', '.join(_DETAIL_COLS)} FROM samples WHERE run_id = ? AND sample_id = ?")
    args: list[Any] = [run_id, sample_id]
    if epoch is not None:
        sql += " AND epoch = ?"
        args.append(epoch)
    row = store._db.execute(sql + " ORDER BY epoch LIMIT 1", args).fetchone()
    if row is None:
        return None
    out: dict[str, Any] = {}
    for name, value in zip(_DETAIL_COLS, row, strict=True):
        if name in _JSON_COLS and isinstance(value, str):
            with contextlib.suppress(ValueError):
                value = json.loads(value)
        out[name] = value
    out["epochs"] = [r[0] for r in store._db.execute(
        "SELECT epoch FROM samples WHERE run_id = ? AND sample_id = ? ORDER BY epoch",
        (run_id, sample_id))]
    return out


# -- live progress ----------------------------------------------------------------------
def progress(store: Store, run_id: str) -> dict[str, Any] | None:
    db = store._db
    run = db.execute("SELECT status, stats, dataset, spec, finished_at FROM runs WHERE id = ?",
                     (run_id,)).fetchone()
    if run is None:
        return None
    counts = db.execute(
        f"SELECT COUNT(*), COALESCE(SUM(s.error IS NOT NULL), 0),"
        f" COALESCE(SUM(s.error IS NULL AND {PRIMARY} = 1), 0),"
        f" COALESCE(SUM(s.error IS NULL AND {PRIMARY} IS NOT NULL), 0)"
        " FROM samples s WHERE s.run_id = ?", (run_id,)).fetchone()
    dataset, spec = _loads(run[2], {}), _loads(run[3], {})
    planned = None
    if isinstance(dataset, dict) and isinstance(dataset.get("selected"), int):
        epochs = spec.get("epochs") if isinstance(spec, dict) else None
        planned = dataset["selected"] * (epochs if isinstance(epochs, int) and epochs > 0 else 1)
    return {"id": run_id, "status": effective_status(run[0], _loads(run[1], {})),
            "samples": counts[0], "errors": counts[1], "correct": counts[2],
            "scored": counts[3], "planned": planned, "finished_at": run[4]}


def newest_samples(store: Store, run_id: str, limit: int = 10) -> list[dict[str, Any]]:
    rows = store._db.execute(
        f"SELECT s.sample_id, s.epoch, s.seq, s.error, s.scores, substr(s.prediction, 1, 200),"
        f" substr(s.output, 1, 200), s.latency_s, NULL, {_PREVIEW} FROM samples s"
        " WHERE s.run_id = ? ORDER BY s.created_at DESC, s.seq DESC LIMIT ?",
        (run_id, limit)).fetchall()
    return [_row_dict(r) for r in rows]

"""A run's configuration and its fingerprint: what makes two runs' numbers comparable.
The configuration is what decides a run's numbers apart from luck (task, options, template,
scorer, model, endpoint, generation, data hash); its fingerprint, the first 10 hex digits of
the SHA-256 of its canonical JSON, names one ``assay history`` series. Secrets never enter it
(redacted; an endpoint keeps a hash of its credentials and query); a re-scored run is marked
``rescored``, never in the same series."""

from __future__ import annotations

import hashlib
import json
from typing import Any
from urllib.parse import urlsplit

from assay.core.redact import redact_tree

__all__ = ["FINGERPRINT_LENGTH", "configuration", "configuration_of", "data_hash",
           "data_label", "differences", "differences_text", "endpoint", "short_value"]

FINGERPRINT_LENGTH = 10
TEMPLATE_KEYS = ("template", "system", "system_prompt", "prompt", "fewshot", "num_fewshot")
SCORER_KEYS = ("scorer", "judge_model", "judge_models", "judge", "rubric", "match")
#: the parts in the order differences are told, with the names they are told by
PART_LABELS = {"task": "task", "options": "option", "template": "template", "scorer": "scorer",
               "model": "model", "provider": "provider", "endpoint": "endpoint",
               "weights": "weights", "generation": "", "data": "data hash",
               "samples": "samples"}


def data_hash(dataset: dict[str, Any] | None) -> str | None:
    ds = dataset or {}
    value = ds.get("content_hash") or ds.get("sha256") or ds.get("hash")
    if isinstance(value, dict):  # per-file hashes
        value = ",".join(f"{k}:{v}" for k, v in sorted(value.items()))
    return str(value) if value else None


def data_label(value: Any) -> str | None:
    """The data hash in 12 hex digits: a content hash's start, else a digest (per-file
    hashes: never a cut path)."""
    if not value:
        return None
    text = str(value)
    hexadecimal = all(c in "0123456789abcdef" for c in text.lower())
    return text[:12] if hexadecimal else hashlib.sha256(text.encode()).hexdigest()[:12]


def endpoint(url: Any, identity: Any = None) -> str | None:
    """``http://host:port/path`` (no credentials), then ``identity`` (a hash of its query
    and credentials) where it has one, so endpoints shown alike are still told apart."""
    if not isinstance(url, str) or not url:
        return None
    try:
        u = urlsplit(url)
        host = u.hostname or ""
        port = f":{u.port}" if u.port else ""
    except ValueError:
        return None
    shown = f"{u.scheme}://{host}{port}{u.path.rstrip('/')}"
    return (shown + (f" #{str(identity)[:8]}" if identity else "")) if host else None


def _described_endpoint(described: dict[str, Any]) -> str | None:
    return endpoint(described.get("base_url"), described.get("endpoint_id"))


def _provider(model_id: str | None) -> str | None:
    return model_id.split("/", 1)[0].split("?", 1)[0] if model_id else None


def _numbers(value: Any) -> Any:
    """Whole floats as ints (``temperature=0`` and ``0.0`` are one setting)."""
    if isinstance(value, dict):
        return {k: _numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_numbers(v) for v in value]
    return int(value) if isinstance(value, float) and value.is_integer() else value


def configuration(run: dict[str, Any], *, rescored: bool = False) -> dict[str, Any]:
    """``{"fingerprint", "parts"}`` of a run record; ``rescored``: it re-scores another's."""
    spec = run.get("spec") or {}
    options = dict(spec.get("task_options") or {})
    dataset = run.get("dataset") if isinstance(run.get("dataset"), dict) else {}
    described = run.get("model") if isinstance(run.get("model"), dict) else {}
    data = data_hash(dataset)
    if data:  # the hash says which data; the path it was read from does not matter
        options.pop("data", None)
    template = {k: options.pop(k) for k in TEMPLATE_KEYS if k in options}
    scorer = {k: options.pop(k) for k in SCORER_KEYS if k in options}
    if "scorer" not in scorer and dataset.get("scorer"):
        scorer["scorer"] = dataset["scorer"]
    subject_at = endpoint(spec.get("base_url") or described.get("base_url"),
                          described.get("endpoint_id"))
    roles = described.get("roles")
    if isinstance(roles, dict) and roles:
        # a role is its model, and its endpoint where that is not the subject's
        scorer["roles"] = {k: (v.get("model") if _described_endpoint(v) in (None, subject_at)
                               else f"{v.get('model')} at {_described_endpoint(v)}")
                           if isinstance(v, dict) else v for k, v in sorted(roles.items())}
    if rescored:
        scorer["rescored"] = True
    model_id = spec.get("model") or described.get("model")
    generation = dict(spec.get("params") or {})
    generation["epochs"] = spec.get("epochs", 1)
    if spec.get("seed") is not None:
        generation["seed"] = spec["seed"]
    parts = {"task": run.get("task") or spec.get("task"), "options": options,
             "template": template, "scorer": scorer,
             "model": None if model_id is None else str(model_id),
             "provider": _provider(None if model_id is None else str(model_id)),
             "endpoint": subject_at,
             "weights": described.get("weights"), "generation": generation, "data": data}
    if dataset.get("selection"):  # a part of the data ran: which part
        parts["samples"] = dataset["selection"]
    parts = redact_tree(parts)
    canonical = json.dumps(_numbers(parts), sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False, default=str)
    digest = hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:FINGERPRINT_LENGTH]
    return {"fingerprint": digest, "parts": parts}


def configuration_of(run: dict[str, Any], parent_kind: str | None = None) -> dict[str, Any]:
    """A run record's stored configuration, else its spec's (``parent_kind`` ``task``: a
    re-scoring)."""
    stored = run.get("config")
    if isinstance(stored, dict) and stored.get("fingerprint"):
        return stored
    rescored = bool(run.get("parent_id")) and parent_kind == "task" and (
        run.get("kind", "task") == "task")
    return configuration(run, rescored=rescored)


def _flat(parts: dict[str, Any]) -> dict[str, Any]:
    """``{label: value}``: the dict parts one level down (``temperature``, ``option n``)."""
    out: dict[str, Any] = {}
    for key, label in PART_LABELS.items():
        value = parts.get(key)
        if isinstance(value, dict) and key in ("options", "template", "scorer", "generation"):
            for k, v in value.items():
                name = f"{label} {k}" if key == "options" else k
                out[name] = v
        else:
            out[label] = data_label(value) if key == "data" else value
    # a re-scoring is said so on both sides: "re-scored no -> yes"
    out["re-scored"] = "yes" if out.pop("rescored", None) else "no"
    return out


def differences(a: dict[str, Any], b: dict[str, Any]) -> list[dict[str, Any]]:
    """How parts ``b`` differ from ``a``: ``[{"name", "a", "b"}]`` (``None``: not set)."""
    fa, fb = _flat(a), _flat(b)
    names = list(fa) + [k for k in fb if k not in fa]
    return [{"name": n, "a": fa.get(n), "b": fb.get(n)} for n in names
            if fa.get(n) != fb.get(n)]


def short_value(value: Any, limit: int = 40) -> str:
    """A configuration value in a line: ``unset``, the text, or compact JSON, shortened."""
    if value is None:
        return "unset"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def differences_text(diffs: list[dict[str, Any]], limit: int = 40) -> str:
    """``same configuration`` or ``same configuration except: temperature 0.0 -> 0.7``."""
    if not diffs:
        return "same configuration"
    return "same configuration except: " + "; ".join(
        f"{d['name']} {short_value(d['a'], limit)} -> {short_value(d['b'], limit)}"
        for d in diffs)

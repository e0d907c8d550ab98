"""Values as words for every report: metrics by their kind (seconds, counts, rates,
shares), the model under test and its roles, what re-scored a run, and run settings as
``key value`` pairs rather than JSON."""

from __future__ import annotations

import json
import math
from typing import Any

from assay.core.redact import redact_url
from assay.metrics.format import fmt_rate
from assay.store.described import is_rate, run_cost, run_report, usd

#: metric name endings that hold seconds
_SECONDS = ("_s", "_seconds", "_secs")
#: metric name parts that hold a share on [0, 1]
_SHARES = ("rate", "share", "fraction", "ratio", "accuracy", "_acc", "as_wrong")


def fmt_seconds(seconds: float) -> str:
    """``0.4 ms``, ``47.6 ms``, ``2.34 s``, ``1 min 05 s``, ``2 h 03 min``."""
    if not math.isfinite(seconds):
        return str(seconds)
    if seconds < 0:
        return "-" + fmt_seconds(-seconds)
    if seconds < 1:
        return f"{seconds * 1000:.3g} ms"
    if seconds < 60:
        return f"{seconds:.3g} s"
    if seconds < 3600:
        minutes, rest = divmod(round(seconds), 60)
        return f"{minutes} min {rest:02d} s"
    hours, rest = divmod(round(seconds), 3600)
    return f"{hours} h {rest // 60:02d} min"


def fmt_count(value: float) -> str:
    """A count with thousands separators; a fractional one (a mean) with one decimal."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.1f}"


def fmt_value(value: Any, name: str | None = None) -> str:
    """Any metrics value as text, by the kind ``name`` says: ``*_s`` seconds, tokens,
    ``n_*`` or an int a count, ``*rate*``/``*accuracy*`` a share; a rate entry by fmt_rate."""
    if is_rate(value):
        return fmt_rate(value)
    if value is None:
        return "n/a"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        key = (name or "").lower()
        if key.endswith(_SECONDS):
            return fmt_seconds(float(value))
        if isinstance(value, int) or "token" in key or key.startswith(("n_", "num_")):
            return fmt_count(value)
        if not math.isfinite(value):
            return str(value)
        if any(part in key for part in _SHARES) and -1 <= value <= 1:
            return f"{value:.3f}"
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    if isinstance(value, (dict, list)):
        return settings_text(value)
    return str(value)


def settings_text(value: Any) -> str:
    """A mapping as ``key value, key value``, a list comma-joined, else text."""
    if isinstance(value, dict):
        return ", ".join(f"{k} {_scalar(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_scalar(v) for v in value)
    return _scalar(value)


_SECONDS_SETTINGS = ("timeout", "sample_timeout", "retry_initial")
_BYTES_SETTINGS = ("max_reply_bytes",)


def setting_text(name: str, value: Any) -> str:
    """One run setting as words: seconds and byte sizes with their unit."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if name in _SECONDS_SETTINGS:
            return fmt_seconds(float(value))
        if name in _BYTES_SETTINGS:
            return fmt_bytes(int(value))
    return settings_text(value)


def fmt_bytes(size: int) -> str:
    """``512 B``, ``16 MiB``, ``1.5 GiB``."""
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:g} {unit}" if unit == "B" else f"{size:.3g} {unit}"
        size /= 1024  # type: ignore[assignment]
    return f"{size} B"  # pragma: no cover - the loop returns


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "none"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return str(value)


def role_text(described: Any) -> str:
    """A role's model as stored (``{"model", "base_url"}``): ``openai/m at http://host/v1``."""
    if not isinstance(described, dict):
        return str(described)
    url = redact_url(str(described["base_url"])) if described.get("base_url") else None
    return str(described.get("model") or "unknown") + (f" at {url}" if url else "")


def roles_text(roles: Any) -> str:
    """``judge openai/m at http://host/v1, examiner openai/e``."""
    return ", ".join(f"{name} {role_text(d)}" for name, d in (roles or {}).items()
                     ) if isinstance(roles, dict) else str(roles or "")


def rescored_from(run: dict[str, Any]) -> tuple[str, str] | None:
    """``(original run id, what re-scored it)`` of a re-scoring (``assay score``), else None;
    what: ``judge openai/m at http://host/v1`` or ``scorer includes`` ("" if not stored)."""
    stats = run.get("stats") if isinstance(run.get("stats"), dict) else {}
    parent = stats.get("rescored_from")
    if not parent:
        return None
    by = stats.get("rescored_by") if isinstance(stats.get("rescored_by"), dict) else {}
    who = [f"scorer {by['scorer']}"] if by.get("scorer") else []
    if by.get("roles"):
        who.append(roles_text(by["roles"]))
    return str(parent), ", ".join(who)


def rescored_text(run: dict[str, Any]) -> str | None:
    """``re-scored from RUN by judge openai/m at http://host/v1``, or None."""
    found = rescored_from(run)
    return None if found is None else (
        f"re-scored from {found[0]}" + (f" by {found[1]}" if found[1] else ""))


def original_judges(run: dict[str, Any]) -> str:
    """A re-scoring's original judges where other than its own (``judge openai/m at ...``)."""
    stats = run.get("stats") if isinstance(run.get("stats"), dict) else {}
    old = stats.get("original_roles") or {}
    now = (run.get("model") or {}).get("roles") or {}
    return roles_text(old) if old and any(now.get(k) != v for k, v in old.items()) else ""


def model_facts(run: dict[str, Any]) -> list[tuple[str, str]]:
    """Model id and provider, endpoint (no credentials), roles (a re-scoring: the judges that
    gave its verdicts, then the original's) and the generation settings the run set."""
    model = run.get("model") or {}
    spec = run.get("spec") or {}
    name = str(model.get("model") or spec.get("model") or "unknown")
    provider = run_report(run).get("provider")
    rows = [("model", f"{name} · {provider}" if provider else name)]
    url = model.get("base_url") or spec.get("base_url")
    rescored = rescored_from(run)
    if url:
        rows.append(("endpoint", (redact_url(str(url)) or "") + (
            " (the original run's; not called again)" if rescored else "")))
    if model.get("roles"):
        rows.append(("roles", roles_text(model["roles"])))
    if rescored and (judges := original_judges(run)):
        rows.append(("original run's judge", judges))
    generation = dict(spec.get("params") or {})
    for key in ("max_tokens", "temperature"):
        given = (spec.get("task_options") or {}).get(key)
        if given is not None and key not in generation:
            generation[key] = given
    if spec.get("seed") is not None:
        generation["seed"] = spec["seed"]
    rows.append(("generation", ", ".join(f"{k.replace('_', ' ')} {_scalar(v)}"
                                          for k, v in generation.items())
                 or "the provider's defaults"))
    return rows


#: where a role's price came from (``stats.cost.roles.*.price``), as words
_PRICE_FROM = {"file": "price from --pricing", "genai-prices": "price from genai-prices",
               "free": "run locally, free"}


def cost_cell(run: dict[str, Any]) -> str:
    """A run's cost in a table cell: ``$0.0123``, ``unknown`` (a price unknown), ``—`` for a
    run from before costs were kept (never ``$0``)."""
    cost = run_cost(run)
    return "—" if cost is None else usd(cost.get("usd"))


def cost_rows(run: dict[str, Any]) -> list[tuple[str, str]]:
    """``("cost", the total and each role's with its model and price's source)`` and
    ``("stopped", why a limit stopped the run)``, where the run kept them."""
    rows, cost = [], run_cost(run)
    if cost is not None:
        roles = [f"{name} {r.get('model') or ''}: " + (
            f"{usd(r['usd'])} ({_PRICE_FROM.get(r.get('price'), r.get('price'))})"
            if r.get("usd") is not None else "price unknown: give one with --pricing FILE")
            for name, r in (cost.get("roles") or {}).items()]
        rows.append(("cost", f"{usd(cost.get('usd'))} ({cost.get('tokens') or 0:,} tokens "
                     "paid for)" + (": " + "; ".join(roles) if roles else "")))
    stopped = (run.get("stats") or {}).get("stopped")
    if stopped:
        rows.append(("stopped", f"{stopped}; no new sample started (--resume with a higher "
                     "limit continues)"))
    return rows


def sample_cost(outcome: Any) -> float | None:
    """What a sample's calls cost (``outcome.usage``), ``None`` when a price is unknown or
    the sample kept no usage."""
    used = (outcome or {}).get("usage") if isinstance(outcome, dict) else None
    costs = [u.get("cost_usd") for u in (used or {}).values() if isinstance(u, dict)]
    return None if not costs or None in costs else round(sum(costs), 8)

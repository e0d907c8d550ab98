"""The one page writer: every page kind in Markdown and HTML, from one Jinja2 environment.

Page ``K`` is ``templates/K.md`` and ``templates/K.html`` (partials start with ``_``). Data
strings stay inert: HTML is autoescaped; Markdown backslash-escapes, in ``finalize``, what a
Markdown viewer would read as HTML or an entity, and stays plain text in a terminal."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_write_text
from assay.metrics.format import fmt_rate

TEMPLATES = Path(__file__).parent / "templates"
#: the formats a page is written in: ``{name in the returned paths: file suffix}``
FORMATS = {"markdown": "md", "html": "html"}


#: a ``<`` that opens HTML (a tag, comment, declaration, autolink), an ``&`` that reads
#: as an entity, with the backslashes just before it
_MD_ACTIVE = re.compile(r"(\\*)(<(?=[A-Za-z/!?])|&(?=#?[A-Za-z0-9]+;))")
_MD_BRACKET = re.compile(r"(\\*)(\[)")
_MD_PIPE = re.compile(r"(\\*)\|")


def _backslashed(m: re.Match[str]) -> str:
    """The match with a backslash before its character; the backslashes before it doubled
    (so that none of them escapes the new one: ``\\<b>`` stays text)."""
    return m.group(1) * 2 + "\\" + m.group(2)


def md_escape(value: Any) -> Any:
    """A string made inert for Markdown: ``<`` where it would start HTML, ``&`` where it
    would start an entity and ``[`` where it may start a link or an image get a backslash, so
    ``<script>`` shows as ``\\<script>`` in a terminal and as ``<script>`` text in a
    Markdown viewer; never an entity (other values as is)."""
    if not isinstance(value, str):
        return value
    value = _MD_ACTIVE.sub(_backslashed, value)
    # a "[" may open a link or an image where a "](" or "][" comes after it
    end = max(value.rfind("]("), value.rfind("]["))
    return _MD_BRACKET.sub(_backslashed, value[:end]) + value[end:] if end > 0 else value


def md_cell(value: Any) -> str:
    """A Markdown table cell (the ``md`` filter): ``|`` backslash-escaped (the backslashes
    before it doubled), line breaks as spaces; ``md_escape`` comes after, in ``finalize``."""
    text = _MD_PIPE.sub(lambda m: m.group(1) * 2 + "\\|", str(value))
    return text.replace("\r\n", " ").replace("\n", " ").replace("\r", " ")


def fmt_p(p: float | None) -> str:
    """A p-value as reports show it: four places, or three significant digits below 0.001."""
    if p is None:
        return "n/a"
    return f"{p:.2e}" if p < 1e-3 else f"{p:.4f}"


def fmt_num(v: float | None, kind: str = "binary") -> str:
    """A score: three places (two at 10 and above, for a non-binary score)."""
    if v is None:
        return "n/a"
    return f"{v:.3f}" if kind == "binary" or abs(v) < 10 else f"{v:.2f}"


def fmt_delta(row: dict[str, Any], kind: str = "binary") -> str:
    """``+0.125 [+0.071, +0.176]``: the difference B - A with its interval."""
    s = f"{row['delta']:+.3f}"
    if row.get("ci_low") is not None:
        s += f" [{row['ci_low']:+.3f}, {row['ci_high']:+.3f}]"
    return s


def fmt_setting(value: Any) -> str:
    """A configuration setting: ``unset``, a text as is, anything else as JSON."""
    if value is None:
        return "unset"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=str)


def template_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/assay/templates``: compiled templates, shared by all workspaces."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "assay" / "templates"


@functools.cache
def environment() -> Any:
    """HTML autoescaped, Markdown escaped by ``finalize``. The bytecode cache folder is per
    version of this module: Jinja keys it by template checksum, not by these settings."""
    import jinja2  # startup

    try:
        code = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
        cache_dir = template_cache_dir() / f"pages-{code}"
        cache_dir.mkdir(parents=True, exist_ok=True)
        cache = jinja2.FileSystemBytecodeCache(str(cache_dir))
    except (OSError, RuntimeError):  # RuntimeError: no home directory to find
        cache = None
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)), bytecode_cache=cache,
        autoescape=jinja2.select_autoescape(["html"]), trim_blocks=True, lstrip_blocks=True,
        # an autoescaped template escapes its output itself; a Markdown one, here
        finalize=jinja2.pass_eval_context(lambda ctx, v: v if ctx.autoescape else md_escape(v)))
    env.filters.update(md=md_cell, p=fmt_p, delta=fmt_delta, num=fmt_num, rate=fmt_rate,
                       setting=fmt_setting)
    return env


def render_page(kind: str, context: dict[str, Any], fmt: str = "html") -> str:
    """Page ``kind`` in ``fmt`` (``md`` or ``html``), ending in one newline."""
    return environment().get_template(f"{kind}.{fmt}").render(**context).rstrip() + "\n"


def write_pages(folder: Path, kind: str, context: dict[str, Any], *, stem: str | None = None,
                data: Any = None) -> dict[str, Path]:
    """``<stem>.md``, ``<stem>.html`` (stem: ``kind`` by default) and, given ``data``,
    ``<stem>.json`` in ``folder``; returns ``{"markdown", "html"[, "json"]}`` paths."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name, fmt in FORMATS.items():
        paths[name] = atomic_write_text(folder / f"{stem or kind}.{fmt}",
                                        render_page(kind, context, fmt))
    if data is not None:
        paths["json"] = atomic_write_text(folder / f"{stem or kind}.json",
                                          json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return paths

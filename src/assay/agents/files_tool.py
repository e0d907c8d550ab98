"""The ``files`` tool: the sample's attachments listed, or one read as text.

Plain-text formats are read as UTF-8; anything else (xlsx, pdf, docx, pptx, html, zip, ...) goes
through markitdown in a thread, once per file per sample. Only the attachments are reachable,
named as ``list`` gives them (or by their full path as the prompt gives it): no other path, no
``..``. The attachments themselves are vetted where the task loads them (a downloaded dataset's
files are links into its cache), so a link among them is followed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from assay.agents.tools import ToolContext, ToolResult, check_offset, error, paged
from assay.core.types import ToolSpec

TEXT_SUFFIXES = {".txt", ".csv", ".tsv", ".json", ".jsonl", ".md", ".xml", ".py", ".yaml",
                 ".yml", ".log"}
#: characters of text one ``read`` hands back (room left for the paging line)
#: bytes of a file the tool will read or convert
MAX_BYTES = 50 * 1024 * 1024

SPEC = ToolSpec(
    "files",
    "List the attached files, or read one as text (spreadsheets, PDF, Word, PowerPoint too).",
    {"type": "object", "properties": {
        "action": {"type": "string", "enum": ["list", "read"],
                   "description": "list: names and sizes; read: one file's text"},
        "name": {"type": "string", "description": "read: the file's name, as list gives it"},
        "offset": {"type": "integer", "minimum": 0,
                   "description": "read: characters to skip (to page through a long file)"}},
     "required": ["action"]})


def _convert(path: Path) -> str:
    """``path`` as text: read directly, or converted by markitdown."""
    if not path.is_file():  # a folder, a device, a broken link: nothing to read
        raise ValueError("it is not a regular file" if path.exists() else "it is missing")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise ValueError(f"it is {size:,} bytes, over the {MAX_BYTES:,} the tool reads")
    if path.suffix.lower() in TEXT_SUFFIXES:
        return path.read_text(encoding="utf-8", errors="replace")
    try:
        from markitdown import MarkItDown  # optional
    except ImportError:
        raise ValueError("reading it needs markitdown: pip install 'markitdown[all]'") from None
    return MarkItDown(enable_plugins=False).convert(str(path)).text_content


class FilesTool:
    """The sample's attachments, read-only; converted text kept for the sample's length."""

    spec = SPEC

    def __init__(self, files: list[Path]) -> None:
        self._files: dict[str, Path] = {}
        for p in files:
            self._files.setdefault(Path(p).name, Path(p))
        self._texts: dict[str, str] = {}

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        action = arguments.get("action")
        if action == "list":
            return ToolResult(self._list())
        if action != "read":
            return error(f"action must be 'list' or 'read', not {action!r}")
        name, offset = arguments.get("name"), arguments.get("offset", 0)
        if not isinstance(name, str) or not name.strip():
            return error("name: give the name of an attached file (action 'list' names them)")
        if (bad := check_offset(offset)) is not None:
            return bad
        key = self._find(name.strip())
        if key is None:
            known = ", ".join(self._files) or "none"
            return error(f"no attached file is named {name[:200]!r}; the attached files: {known}")
        if key not in self._texts:
            try:
                self._texts[key] = await asyncio.to_thread(_convert, self._files[key])
            except Exception as e:  # any reader's failure goes back to the model
                why = " ".join(str(e).split())[:300] or type(e).__name__
                return error(f"cannot read {key}: {why}")
        return paged(self._texts[key], offset, key)

    def _find(self, name: str) -> str | None:
        """The attachment ``name`` means: its file name, or its path exactly as given."""
        if name in self._files:
            return name
        return next((k for k, p in self._files.items() if str(p) == name), None)

    def _list(self) -> str:
        if not self._files:
            return "no files are attached"
        lines = []
        for name, path in self._files.items():
            try:
                lines.append(f"{name} ({path.stat().st_size:,} bytes)")
            except OSError:
                lines.append(f"{name} (cannot be read)")
        return "\n".join(lines)

    async def aclose(self) -> None:
        return None


def files_tool(ctx: ToolContext) -> FilesTool:
    return FilesTool(ctx.files)

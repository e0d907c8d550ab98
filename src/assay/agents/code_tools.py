"""The ``python`` and ``bash`` tools: a persistent session per sample inside the sandbox
(:class:`assay.sandbox.Session`): variables, files and the shell's state last from call to
call of one sample and never reach the next; no network; the sample's attachments copied
into the session's working folder (the originals are never touched)."""

from __future__ import annotations

from typing import Any

from assay.agents.tools import ToolContext, ToolResult, bounded, error
from assay.core.types import ToolSpec
from assay.errors import AssayError
from assay.sandbox import Limits, Session

#: seconds one call may run; the session ends past it (a later call starts a fresh one)
CALL_TIMEOUT_S = 60.0
LIMITS = Limits(timeout_s=CALL_TIMEOUT_S, cpu_s=300, memory_mb=2048, disk_mb=512)

_SPECS = {
    "python": ToolSpec(
        "python", "Run Python code in a persistent session (variables and files kept between "
        "calls; the attached files are in the current folder; no network). Print what you "
        "need to see.",
        {"type": "object", "properties": {"code": {"type": "string",
                                                   "description": "Python code to run"}},
         "required": ["code"]}),
    "bash": ToolSpec(
        "bash", "Run a bash command in a persistent shell (the attached files are in the "
        "current folder; no network).",
        {"type": "object", "properties": {"command": {"type": "string",
                                                      "description": "the command to run"}},
         "required": ["command"]}),
}


class CodeTool:
    """One sample's session of ``shell``, started at its first call."""

    def __init__(self, shell: str, ctx: ToolContext) -> None:
        self.shell, self.ctx = shell, ctx
        self.spec = _SPECS[shell]
        self.arg = "code" if shell == "python" else "command"
        self.session: Session | None = None

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        code = arguments.get(self.arg)
        if not isinstance(code, str) or not code.strip():
            return error(f"give the {self.arg} to run as the argument {self.arg!r}")
        try:
            if self.session is None or not self.session.alive:
                restarted = self.session is not None
                self.session = Session(self.shell, limits=LIMITS,  # type: ignore[arg-type]
                                       copy=list(self.ctx.files), allow_weak=self.ctx.allow_weak)
                await self.session.start()
            else:
                restarted = False
            done = await self.session.run(code)
        except AssayError as e:  # e.g. no bwrap and weak isolation not allowed
            return error(f"{self.shell} could not run: {e}")
        text = done.stdout + (f"\n[stderr]\n{done.stderr}" if done.stderr.strip() else "")
        note = ("[a new session: the previous one had ended, its state is gone]\n"
                if restarted else "")
        if done.timed_out:
            return error(f"{note}{bounded(text)}\n[the call ran past {CALL_TIMEOUT_S:g} s: "
                         "the session was ended; the next call starts a new one]")
        if done.exit_code not in (0, None):
            return error(f"{note}{bounded(text)}\n[exit status {done.exit_code}]")
        return ToolResult(note + (bounded(text) if text.strip() else "(no output)"))

    async def aclose(self) -> None:
        if self.session is not None:
            await self.session.close()


def python_tool(ctx: ToolContext) -> CodeTool:
    return CodeTool("python", ctx)


def bash_tool(ctx: ToolContext) -> CodeTool:
    return CodeTool("bash", ctx)

"""One conversation: the examiner talks, the agent answers, for at most ``max_rounds``.

A round is one agent turn; how it ended is recorded (``examiner``, ``max_rounds``,
``examiner_invalid`` or ``agent_error``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from assay.agents.loop import LoopLimits, tool_loop
from assay.agents.tools import ToolResult
from assay.core.paths import inside
from assay.core.types import Message, ToolCall, ToolSpec
from assay.errors import ConfigError, ModelCallError
from assay.scoring.judge import ask
from assay.tasks.converse.examiner import EXAMINER_SCHEMA, RETRY, examiner_messages, parse_examiner

MAX_STEPS = 8
READ_LIMIT = 64 * 1024
WRITE_LIMIT = 1024 * 1024
SNAPSHOT_TEXT = 16 * 1024
#: HTTP statuses that mean the agent is misconfigured, not that it failed the task
CONFIG_STATUSES = (401, 403, 404)

AGENT_SYSTEM = "You are a helpful assistant."
WORKSPACE_NOTE = ("You have a working folder. Use the tools list_files, read_file and "
                  "write_file to read and write files in it; paths are relative to it.")

FILE_TOOLS = [
    ToolSpec("list_files", "List the files in the working folder.",
             {"type": "object", "properties": {}}),
    ToolSpec("read_file", "Read a text file from the working folder.",
             {"type": "object", "properties": {"path": {"type": "string"}},
              "required": ["path"]}),
    ToolSpec("write_file", "Write (create or replace) a text file in the working folder.",
             {"type": "object", "properties": {"path": {"type": "string"},
                                               "content": {"type": "string"}},
              "required": ["path", "content"]}),
]


class Workspace:
    """The agent's working folder; the file tools never reach outside it."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def _path(self, rel: Any) -> Path:
        """``rel`` inside the folder (links included); a path leading out is refused."""
        if not isinstance(rel, str) or not rel.strip():
            raise ValueError("give a file path relative to the working folder")
        try:
            return inside(self.root, rel, what="path")
        except ConfigError:
            raise ValueError(f"{rel[:200]} is outside the working folder") from None

    def files(self) -> list[Path]:
        """The regular files in the folder, sorted; links are left out, never followed."""
        out = []
        todo = [str(self.root)]
        while todo:  # a list, not recursion (os.walk's): the agent may nest 1,500 folders
            try:
                entries = list(os.scandir(todo.pop()))
            except OSError:
                continue
            for e in entries:
                with contextlib.suppress(OSError):
                    if e.is_dir(follow_symlinks=False):  # links are never entered
                        todo.append(e.path)
                    elif e.is_file(follow_symlinks=False):
                        out.append(Path(e.path))
        return sorted(out)

    def call(self, name: str, args: dict[str, Any]) -> str:
        """Run one file tool; a problem is returned as an error text, never raised."""
        try:
            if name == "list_files":
                files = [p.relative_to(self.root).as_posix() for p in self.files()]
                return json.dumps(files)
            if name == "read_file":
                path = self._path(args.get("path"))
                if not path.is_file():
                    return f"error: no file {args.get('path')}"
                data = path.read_bytes()[:READ_LIMIT]
                return data.decode("utf-8", errors="replace")
            if name == "write_file":
                path = self._path(args.get("path"))
                content = args.get("content")
                if not isinstance(content, str):
                    return "error: content must be a string"
                if len(content.encode()) > WRITE_LIMIT:
                    return f"error: content over {WRITE_LIMIT} bytes"
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(content, encoding="utf-8")
                return f"wrote {len(content)} characters to {args.get('path')}"
            return f"error: unknown tool {name}"
        except (OSError, ValueError) as e:
            return f"error: {e}"

    def snapshot(self) -> list[dict[str, Any]]:
        """What the folder holds after the conversation (small text files with content)."""
        out = []
        for p in self.files():
            try:
                data = p.read_bytes()
            except OSError:
                continue
            item: dict[str, Any] = {"path": p.relative_to(self.root).as_posix(),
                                    "bytes": len(data),
                                    "sha256": hashlib.sha256(data).hexdigest()}
            if len(data) <= SNAPSHOT_TEXT:
                try:
                    item["text"] = data.decode("utf-8")
                except UnicodeDecodeError:
                    pass
            out.append(item)
        return out[:100]


@dataclass
class Conversation:
    """What happened, as stored with the outcome."""

    chat: list[dict[str, Any]] = field(default_factory=list)
    rounds: int = 0
    ended_by: str = ""
    examiner_invalid: int = 0
    examiner_reasons: list[str] = field(default_factory=list)
    agent_error: str | None = None
    tool_calls: int = 0
    step_limit_turns: int = 0
    #: turns ended because the agent repeated its previous step's tool calls exactly
    repeat_stops: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _describe_call(call: ToolCall, result: str) -> str:
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)[:80]}"
                     for k, v in (call.arguments or {}).items())
    return f"[tool {call.name}({args}) -> {result[:200]}]"


class _AgentSide:
    """The agent's half of the conversation: what it has seen, and how it is called."""

    def __init__(self, agent: Any, workspace: Workspace | None, params: dict[str, Any],
                 system_prompt: str | None) -> None:
        self.agent = agent
        self.workspace = workspace
        self.params = params
        self.tools = FILE_TOOLS if workspace is not None and not getattr(
            agent, "text_only", False) else None
        system = system_prompt if system_prompt is not None else AGENT_SYSTEM
        if self.tools:
            system = f"{system}\n\n{WORKSPACE_NOTE}".strip()
        self.messages: list[Message] = [Message("system", system)] if system else []

    async def turn(self, text: str, conv: Conversation) -> tuple[str, list[str]]:
        """The agent's reply to ``text`` and the tool activity of the turn: the one tool loop
        (:mod:`assay.agents.loop`) over the workspace's tools, at most ``MAX_STEPS`` calls, a
        call repeated exactly ending the turn."""
        self.messages.append(Message("user", text))
        if not self.tools or self.workspace is None:
            reply = await self.agent.generate(self.messages, tools=None, **self.params)
            self.messages.append(reply.message)
            return reply.message.content or "", []
        start = len(self.messages)
        tools = [WorkspaceTool(spec, self.workspace) for spec in self.tools]
        done = await tool_loop(self.agent, self.messages, tools,
                               limits=LoopLimits(max_steps=MAX_STEPS, max_repeats=2),
                               native=True, **{**self.params, "tool_choice": "auto"})
        self.messages = done.transcript
        results = [m.content or "" for m in done.transcript[start:] if m.role == "tool"]
        activity = [_describe_call(c, r) for c, r in zip(done.calls, results, strict=False)]
        conv.tool_calls += len(done.calls)
        if done.ended == "repeated_call":  # the same call again: its result would not change
            conv.repeat_stops += 1
            activity.append("[the same tool call again: turn ended]")
        elif done.ended == "max_steps":
            conv.step_limit_turns += 1
        last = self.messages[-1]
        return (last.content or "") if last.role == "assistant" else "", activity


class WorkspaceTool:
    """One of the workspace's file tools as the tool loop calls it."""

    def __init__(self, spec: ToolSpec, workspace: Workspace) -> None:
        self.spec, self.workspace = spec, workspace

    async def call(self, arguments: dict[str, Any]) -> ToolResult:
        text = self.workspace.call(self.spec.name, arguments or {})
        return ToolResult(text.removeprefix("error: "), error=text.startswith("error: "))

    async def aclose(self) -> None:
        return None


async def _examiner_turn(examiner: Any, task_description: str, conv: Conversation,
                         max_rounds: int, params: dict[str, Any],
                         limit_chars: int | None) -> tuple[str, bool] | None:
    """The examiner's next message and stop flag; ``None`` after two invalid replies."""
    msgs = examiner_messages(task_description, conv.chat, conv.rounds, max_rounds, limit_chars)
    asked = await ask(examiner, msgs, parse_examiner, retry=RETRY, schema=EXAMINER_SCHEMA,
                      params=params)
    conv.examiner_invalid += len(asked.refused)
    conv.examiner_reasons += asked.refused
    return (asked.value.message, asked.value.task_finished) if asked.value else None


async def converse(*, task_description: str, max_rounds: int, agent: Any, examiner: Any,
                   workspace: Workspace | None, verbose: bool = False,
                   agent_params: dict[str, Any] | None = None,
                   examiner_params: dict[str, Any] | None = None,
                   agent_system_prompt: str | None = None,
                   examiner_context_chars: int | None = None
                   ) -> tuple[Conversation, list[Message]]:
    """Run one conversation; returns it and the agent's own transcript (with tool calls)."""
    conv = Conversation()
    side = _AgentSide(agent, workspace, dict(agent_params or {}), agent_system_prompt)
    ex_params = dict(examiner_params or {})
    first = await _examiner_turn(examiner, task_description, conv, max_rounds, ex_params,
                                   examiner_context_chars)
    if first is None:
        conv.ended_by = "examiner_invalid"
        return conv, side.messages
    message = first[0]
    while True:
        conv.chat.append({"role": "examiner", "content": message, "round": conv.rounds + 1})
        try:
            reply, activity = await side.turn(message, conv)
        except ModelCallError as e:
            if e.transient or e.status in CONFIG_STATUSES or (
                    conv.rounds == 0 and getattr(agent, "cacheable", False)):
                raise  # the endpoint or its configuration failed, not the agent at the task
            conv.agent_error = str(e)[:1000]
            conv.ended_by = "agent_error"
            return conv, side.messages
        conv.rounds += 1
        shown = "\n".join([*activity, reply]) if verbose and activity else reply
        entry: dict[str, Any] = {"role": "agent", "content": shown, "round": conv.rounds}
        if activity:
            entry["tools"] = activity
        conv.chat.append(entry)
        if conv.rounds >= max_rounds:
            conv.ended_by = "max_rounds"
            return conv, side.messages
        nxt = await _examiner_turn(examiner, task_description, conv, max_rounds, ex_params,
                                   examiner_context_chars)
        if nxt is None:
            conv.ended_by = "examiner_invalid"
            return conv, side.messages
        message, finished = nxt
        if finished:  # its closing message ends the chat, as in TaskWeaver's histories
            conv.chat.append({"role": "examiner", "content": message.strip() or
                              "(task finished)", "final": True, "round": conv.rounds})
            conv.ended_by = "examiner"
            return conv, side.messages

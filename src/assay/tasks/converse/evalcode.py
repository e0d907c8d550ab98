"""A scoring point's ``eval_code``: a function body run by :func:`assay.sandbox.run_python`.

It sees ``chat_history`` (TaskWeaver-style: agent ``HumanMessage``, examiner ``AIMessage``),
``messages``, ``agent_replies``, ``last_agent_reply``, ``json``/``os``/``re``/``Path``, and a
current folder rebuilt from the outcome's stored snapshot (``workdir``). A hit: returns ``None``
or true; a miss: returns false, raises, exits non-zero or times out.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from assay.sandbox import Limits, run_python, signal_of

#: the harness's files, in the sandbox's support folder (never among the agent's files)
RUNNER, HISTORY, SNIPPET = "_assay_eval.py", "chat_history.json", "snippet.py"

_RUNNER = '''\
import ast, json, os, re, sys
from pathlib import Path

_here = os.path.dirname(os.path.abspath(__file__))


class _Message:
    def __init__(self, role, content):
        self.role, self.content = role, content
        self.type = "human" if role == "agent" else "ai"

    def __repr__(self):
        return f"{type(self).__name__}(content={self.content!r})"


class HumanMessage(_Message): pass
class AIMessage(_Message): pass
class AgentMessage(HumanMessage): pass
class ExaminerMessage(AIMessage): pass


with open(os.path.join(_here, "chat_history.json"), encoding="utf-8") as _f:
    messages = json.load(_f)
chat_history = [(AgentMessage if m["role"] == "agent" else ExaminerMessage)(m["role"],
                m["content"]) for m in messages]
agent_replies = [m["content"] for m in messages if m["role"] == "agent"]
last_agent_reply = agent_replies[-1] if agent_replies else ""
workdir = Path.cwd()

with open(os.path.join(_here, "snippet.py"), encoding="utf-8") as _f:
    _source = _f.read()
_module = ast.parse("def _check():\\n    pass\\n")
_module.body[0].body = ast.parse(_source, "eval_code").body or [ast.Pass()]
ast.fix_missing_locations(_module)
exec(compile(_module, "eval_code", "exec"))
try:
    _result = _check()
except AssertionError as _e:
    print("assertion failed" + (f": {_e}" if str(_e) else ""), file=sys.stderr)
    sys.exit(1)
if _result is not None and not _result:
    print(f"eval_code returned {_result!r}", file=sys.stderr)
    sys.exit(1)
'''


def function_of(code: str) -> ast.Module:
    """``code`` as the body of a function ``_check`` (its own lines and strings kept)."""
    module = ast.parse("def _check():\n    pass\n")
    body = ast.parse(code, "eval_code").body
    module.body[0].body = body or [ast.Pass()]  # type: ignore[attr-defined]
    return ast.fix_missing_locations(module)


def check_syntax(code: str) -> str | None:
    """Why ``code`` cannot be an eval_code function body (``None`` when it can)."""
    try:
        module = function_of(code)
        compile(module, "eval_code", "exec")
    except SyntaxError as e:
        return f"line {e.lineno or 1}: {e.msg}"
    for node in ast.walk(module.body[0]):
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            return f"line {node.lineno}: eval_code may not yield or await (it is one function)"
    return None


def _reason(result: Any, limits: Limits) -> str:
    if result.timed_out:
        return f"timeout: eval_code ran past {limits.timeout_s:g} s"
    if result.exit_code is None:  # never started (inputs too big)
        return (result.stderr.strip() or "the sandbox did not start")[:500]
    sig = signal_of(result)
    if sig is not None:
        return f"killed by signal {sig} (a resource limit)"
    text = (result.stderr.strip() or result.stdout.strip())
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # the exception or the harness's own line: where forked children print tracebacks
    # too (a fork bomb), the last line may be any line of one
    said = [ln.strip() for ln in lines if _SAID.match(ln.strip())]
    tail = said[-1] if said else lines[-1] if lines else f"exit status {result.exit_code}"
    return tail[:500]


#: a line that says why eval_code failed: an exception, or the harness's own message
_SAID = re.compile(r"(?:[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)\b|assertion failed|"
                   r"eval_code returned)")


async def run_eval_code(code: str, messages: list[dict[str, str]], workdir: Path | None,
                        *, files: dict[str, str | bytes] | None = None,
                        limits: Limits | None = None, require: bool = False,
                        allow_weak: bool | None = None) -> dict[str, Any]:
    """The verdict of one ``eval_code`` point: ``{is_hit, reason, kind, isolation, ...}``;
    whatever the agent left ends as a miss at worst, never as an error."""
    limits = limits or Limits()
    problem = check_syntax(code)
    if problem:
        return {"is_hit": False, "reason": f"eval_code does not compile: {problem}",
                "kind": "code", "invalid": False}
    try:
        copy = sorted(workdir.iterdir()) if workdir is not None and workdir.is_dir() else []
    except OSError:  # the agent made its folder unreadable: the code sees no files
        copy = []
    # the runner, the snippet and the conversation go in the sandbox's support folder,
    # beside the agent's files: nothing the agent wrote (a folder named like one of them,
    # a link in its place) can make them fail to be written, or run instead of them
    result = await run_python(
        RUNNER, support={RUNNER: _RUNNER, SNIPPET: code,
                         HISTORY: json.dumps(messages, ensure_ascii=False)},
        copy=copy, files=files, limits=limits, require=require, allow_weak=allow_weak)
    hit = result.ok
    return {"is_hit": hit, "reason": "exit status 0" if hit else _reason(result, limits),
            "kind": "code", "invalid": False, "isolation": result.isolation,
            "timed_out": result.timed_out, "exit_code": result.exit_code,
            "output": (result.stdout + result.stderr)[-2000:]}

"""The judge's channel to the candidate: requests out, replies read as plain data only.

Replies are unpickled with no global and only plain data's opcodes (:func:`decode`) and opaque
handles (:class:`Remote`)."""

from __future__ import annotations

import builtins
import io
import os
import pickle
import pickletools
import select
import signal
import struct
import subprocess
import sys
from typing import Any, NoReturn

#: the candidate's server (:mod:`.candidate`), beside the harness in the scratch folder
CANDIDATE = "candidate.py"
HEADER = struct.Struct(">Q")
#: what one reply may be: bytes on the wire, objects in it, nesting
MAX_REPLY_BYTES = 32 * 1024 * 1024
MAX_NODES = 2_000_000
MAX_DEPTH = 100
MAX_TEXT = 300

#: the pickle opcodes a reply may use: plain values, containers, memo and handles only
#: (no GLOBAL, REDUCE, BUILD, NEWOBJ, INST, OBJ, EXT*: nothing that finds or calls code)
ALLOWED_OPCODES = frozenset({
    "PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP", "MEMOIZE", "PUT",
    "BINPUT", "LONG_BINPUT", "GET", "BINGET", "LONG_BINGET", "NONE", "NEWTRUE",
    "NEWFALSE", "BININT", "BININT1", "BININT2", "LONG1", "LONG4", "BINFLOAT",
    "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "SHORT_BINBYTES", "BINBYTES",
    "BINBYTES8", "EMPTY_LIST", "APPEND", "APPENDS", "EMPTY_TUPLE", "TUPLE", "TUPLE1",
    "TUPLE2", "TUPLE3", "EMPTY_DICT", "SETITEM", "SETITEMS", "EMPTY_SET", "ADDITEMS",
    "FROZENSET", "BINPERSID",
})
PLAIN_LEAVES = frozenset({int, float, complex, str, bytes, bool, type(None)})


class CandidateGone(BaseException):
    """The candidate can no longer answer. A BaseException, so a test's ``except
    Exception`` cannot take it; the channel remembers it too (:attr:`Channel.broken`)."""

    def __init__(self, status: str, error: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error = error
        self.message = message


class Malformed(Exception):
    """A reply that is not well-formed plain data."""


class Remote:
    """An object of the candidate's process (``("g", name)`` or handle ``("h", n)``),
    equal and hashed by identity only; calls, attributes, iteration, len, indexing, ``in``,
    truth and ``str`` are asked of the candidate."""

    __slots__ = ("_assay_ref", "__weakref__")

    def __init__(self, ref: tuple[str, Any]) -> None:
        object.__setattr__(self, "_assay_ref", ref)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return CHANNEL.request("call", self, (args, kwargs))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name.startswith("_assay"):
            raise AttributeError(name)
        return CHANNEL.request("getattr", self, (name,))

    def __setattr__(self, name: str, value: Any) -> None:
        CHANNEL.request("setattr", self, (name, value))

    def __iter__(self) -> Any:
        return CHANNEL.request("iter", self, ())

    def __next__(self) -> Any:
        return CHANNEL.request("next", self, ())

    def __len__(self) -> int:
        return CHANNEL.request("len", self, ())

    def __getitem__(self, key: Any) -> Any:
        return CHANNEL.request("getitem", self, (key,))

    def __contains__(self, item: Any) -> bool:
        return CHANNEL.request("contains", self, (item,)) is True

    def __bool__(self) -> bool:
        return CHANNEL.request("bool", self, ()) is True

    def __str__(self) -> str:
        text = CHANNEL.request("str", self, ())
        if type(text) is not str:
            raise TypeError("__str__ returned a non-string")
        return text

    def __copy__(self) -> Remote:
        return self  # the object lives in the candidate: a copy is the same handle

    def __deepcopy__(self, memo: Any) -> Remote:
        return self

    def __repr__(self) -> str:
        kind, key = self._assay_ref
        return f"<{key} of the program>" if kind == "g" else f"<object #{key} of the program>"


class _Reader(pickle.Unpickler):
    """Finds no class; persistent ids give handles and complex numbers."""

    def __init__(self, data: bytes, handles: dict[int, Remote]) -> None:
        super().__init__(io.BytesIO(data))
        self.handles = handles

    def find_class(self, module: str, name: str) -> NoReturn:
        raise Malformed(f"a reply named {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        if type(pid) is tuple and len(pid) == 2 and pid[0] == "h" and type(pid[1]) is int \
                and 0 < pid[1] < 1 << 62:
            found = self.handles.get(pid[1])
            if found is None:
                found = self.handles[pid[1]] = Remote(("h", pid[1]))
            return found
        if type(pid) is tuple and len(pid) == 3 and pid[0] == "c" \
                and type(pid[1]) is float and type(pid[2]) is float:
            return complex(pid[1], pid[2])
        raise Malformed("a reply with an unknown reference")


def _check_plain(value: Any) -> None:
    """Raise :class:`Malformed` unless ``value`` is plain data (exact types) and
    handles within the bounds (shared parts count each time reached)."""
    budget = MAX_NODES
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        budget -= 1
        if budget < 0:
            raise Malformed("a reply too large")
        if depth > MAX_DEPTH:
            raise Malformed("a reply nested too deeply")
        kind = type(item)
        if kind in PLAIN_LEAVES or kind is Remote:
            continue
        if kind in (list, tuple, set, frozenset):
            stack.extend((x, depth + 1) for x in item)
        elif kind is dict:
            for k, v in item.items():
                stack.append((k, depth + 1))
                stack.append((v, depth + 1))
        else:
            raise Malformed(f"a reply holding a {kind.__name__}")


def decode(data: bytes, handles: dict[int, Remote]) -> Any:
    """The plain value a reply holds; :class:`Malformed` for anything else."""
    try:
        for opcode, _, _ in pickletools.genops(data):
            if opcode.name not in ALLOWED_OPCODES:
                raise Malformed(f"a reply using pickle opcode {opcode.name}")
        value = _Reader(data, handles).load()
    except Malformed:
        raise
    except Exception as e:  # truncated, unhashable keys, bad memo, ...
        raise Malformed(f"an unreadable reply ({type(e).__name__})") from None
    _check_plain(value)
    return value


class _Writer(pickle.Pickler):
    """Requests: the tests' own values as they are, a :class:`Remote` as its reference."""

    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is Remote:
            return object.__getattribute__(obj, "_assay_ref")
        return None


class Channel:
    """Requests to the candidate and its replies, one at a time."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.request_fd = -1
        self.reply_fd = -1
        self.pidfd: int | None = None
        self.number = 0
        self.handles: dict[int, Remote] = {}
        #: why the candidate can no longer answer (sticky: a test that swallowed the
        #: exception does not make the run pass)
        self.broken: CandidateGone | None = None

    def start(self, workdir: str) -> None:
        """Start the candidate with only the channel's two ends."""
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, "-I", "-B", "-u", os.path.join(workdir, CANDIDATE), str(request_r),
             str(reply_w)],
            cwd=workdir, stdin=subprocess.DEVNULL, stdout=2, stderr=2,
            pass_fds=(request_r, reply_w), close_fds=True, start_new_session=True)
        os.close(request_r)
        os.close(reply_w)
        self.request_fd, self.reply_fd = request_w, reply_r
        try:
            self.pidfd = os.pidfd_open(self.proc.pid)
        except (AttributeError, OSError):
            self.pidfd = None

    def stop(self) -> None:
        """Kill the candidate's process group (bubblewrap ends all with the harness anyway)."""
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except OSError:
                pass

    def _gone(self) -> CandidateGone:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            code = None
        if code is None:
            return CandidateGone("exit", "", "the program closed its channel before the "
                                 "tests finished")
        if code < 0:
            return CandidateGone("killed", "", f"killed by signal {-code} (a CPU, memory or "
                                 "process limit)")
        return CandidateGone("exit", "", f"the program exited with status {code} before the "
                             "tests finished")

    def _fail(self, exc: CandidateGone) -> NoReturn:
        if self.broken is None:
            self.broken = exc
        raise self.broken

    def _read_exact(self, size: int) -> bytes:
        chunks = []
        poller = select.poll()
        poller.register(self.reply_fd, select.POLLIN)
        if self.pidfd is not None:
            poller.register(self.pidfd, select.POLLIN)
        while size:
            events = dict(poller.poll())
            if self.reply_fd not in events:  # the candidate's process ended, nothing to read
                self._fail(self._gone())
            chunk = os.read(self.reply_fd, min(size, 1 << 20))
            if not chunk:
                self._fail(self._gone())
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def receive(self) -> Any:
        """The next reply, decoded as plain data."""
        size = HEADER.unpack(self._read_exact(HEADER.size))[0]
        if size > MAX_REPLY_BYTES:
            self._fail(CandidateGone("exception", "ProtocolError",
                                     f"the program sent a reply of {size} bytes"))
        data = self._read_exact(size)
        try:
            return decode(data, self.handles)
        except Malformed as e:
            self._fail(CandidateGone("exception", "ProtocolError", f"the program sent {e}"))

    def send(self, message: tuple[Any, ...]) -> None:
        """Write one request."""
        out = io.BytesIO()
        _Writer(out).dump(message)
        data = out.getvalue()
        view = memoryview(HEADER.pack(len(data)) + data)
        try:
            while view:
                view = view[os.write(self.request_fd, view):]
        except OSError:
            self._fail(self._gone())

    def request(self, op: str, target: Remote, args: tuple[Any, ...]) -> Any:
        """``op`` on ``target`` in the candidate: its result, or its exception raised here."""
        if self.broken is not None:
            raise self.broken
        self.number += 1
        self.send((self.number, op, object.__getattribute__(target, "_assay_ref"), args))
        reply = self.receive()
        if type(reply) is tuple and len(reply) == 3 and reply[0] == "ok" \
                and reply[1] == self.number:
            return reply[2]
        if type(reply) is tuple and len(reply) == 5 and reply[0] == "raise" \
                and reply[1] == self.number:
            raise remote_exception(op, reply[2], reply[3], reply[4])
        self._fail(CandidateGone("exception", "ProtocolError",
                                 "the program sent a reply that does not answer the request"))

    def ready(self) -> dict[str, Any] | None:
        """Wait for the program to load: ``None`` when it is ready, else how it failed."""
        try:
            reply = self.receive()
        except CandidateGone as e:
            return {"status": e.status, "error": e.error, "message": e.message, "line": None}
        if reply == ("ready",):
            return None
        if type(reply) is tuple and len(reply) == 5 and reply[0] == "failed":
            status = reply[1] if reply[1] in ("syntax_error", "exit", "exception",
                                              "assertion") else "exception"
            return {"status": status, "error": _text(reply[2], 100),
                    "message": _text(reply[3], MAX_TEXT),
                    "line": reply[4] if type(reply[4]) is int else None}
        return {"status": "exception", "error": "ProtocolError",
                "message": "the program sent a malformed first reply", "line": None}


CHANNEL = Channel()


def _text(value: Any, limit: int) -> str:
    return value[:limit] if type(value) is str else ""


def remote_exception(op: str, names: Any, message: Any, line: Any) -> BaseException:
    """The candidate's exception as the first builtin type of its MRO, with its name and line."""
    cls: type[BaseException] = Exception
    shown = "Exception"
    if type(names) is list and names and all(type(n) is str for n in names[:64]):
        shown = names[0][:100]
        for name in names[:64]:
            found = getattr(builtins, name, None)
            if isinstance(found, type) and issubclass(found, BaseException):
                cls = found
                break
    # only a "next" may end an iteration: a StopIteration from a call would make the
    # tests' map() or all() stop early and pass
    if issubclass(cls, (StopIteration, StopAsyncIteration)) and op != "next":
        cls = RuntimeError
    text = _text(message, MAX_TEXT)
    try:
        exc = cls(text) if cls is not SystemExit else SystemExit(text)
    except Exception:
        exc = Exception(text)
    exc.assay_error = shown  # type: ignore[attr-defined]
    exc.assay_line = line if type(line) is int else None  # type: ignore[attr-defined]
    return exc

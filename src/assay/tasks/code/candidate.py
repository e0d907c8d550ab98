"""The candidate's side of a code test: runs the program under test and answers calls.

Nothing here is trusted (the program may rewrite it; the harness reads replies as plain data);
it sends plain results where it can, anything else as a numbered handle."""

from __future__ import annotations

import builtins
import io
import numbers
import os
import pickle
import signal
import struct
import sys
import traceback
from typing import Any

PROGRAM = "program.py"
HEADER = struct.Struct(">Q")
#: a reply nested deeper than this is refused (the harness refuses it too)
MAX_DEPTH = 100
#: what a request may ask of an object: its arguments are the request's
OPS = {"call": lambda obj, args, kwargs: obj(*args, **kwargs), "getattr": getattr,
       "setattr": setattr, "iter": iter, "next": next, "len": len,
       "getitem": lambda obj, key: obj[key], "contains": lambda obj, item: item in obj,
       "bool": bool, "str": str}


class _Ref:
    """A handle to an object of the program, as it travels to the harness."""

    __slots__ = ("number",)

    def __init__(self, number: int) -> None:
        self.number = number


class Server:
    """The program's namespace, the handles given out, and the serving loop."""

    def __init__(self, request_fd: int, reply_fd: int) -> None:
        self.request_fd = request_fd
        self.reply_fd = reply_fd
        self.pid = os.getpid()
        self.namespace: dict[str, Any] = {}
        #: handle number -> object, and id(object) -> handle number (objects kept alive,
        #: so that one object is always one handle)
        self.objects: dict[int, Any] = {}
        self.numbers: dict[int, int] = {}

    def _read_exact(self, size: int) -> bytes | None:
        chunks = []
        while size:
            chunk = os.read(self.request_fd, min(size, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            size -= len(chunk)
        return b"".join(chunks)

    def receive(self) -> Any:
        """The next request; ``None`` once the harness closed the channel."""
        head = self._read_exact(HEADER.size)
        if head is None:
            return None
        body = self._read_exact(HEADER.unpack(head)[0])
        if body is None:
            return None
        return _Loader(self, body).load()

    def send(self, message: tuple[Any, ...]) -> None:
        """Send one message; a process the program forked never answers."""
        if os.getpid() != self.pid:
            os._exit(1)
        data = self.encode(message)
        view = memoryview(HEADER.pack(len(data)) + data)
        while view:
            view = view[os.write(self.reply_fd, view):]

    def handle(self, obj: Any) -> _Ref:
        number = self.numbers.get(id(obj))
        if number is None:
            number = len(self.objects) + 1
            self.objects[number] = obj
            self.numbers[id(obj)] = number
        return _Ref(number)

    def plain(self, obj: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise ValueError("the result is nested too deeply to send")
        kind = type(obj)
        if kind in (int, float, complex, str, bytes, bool, type(None)):
            return obj
        if isinstance(obj, (list, tuple, set, frozenset)):
            items = [self.plain(x, depth + 1) for x in obj]
            base = next(t for t in (list, tuple, frozenset, set) if isinstance(obj, t))
            return base(items)
        if isinstance(obj, dict):
            return {self.plain(k, depth + 1): self.plain(v, depth + 1)
                    for k, v in dict.items(obj)}
        if isinstance(obj, str):
            return str.__str__(obj)
        if isinstance(obj, bytes):
            return bytes(obj)
        if isinstance(obj, numbers.Integral):
            return int(obj)
        if isinstance(obj, numbers.Real):
            return float(obj)
        if isinstance(obj, numbers.Complex):
            return complex(obj)
        if type(obj).__module__.split(".")[0] == "numpy" and hasattr(obj, "tolist"):
            return self.plain(obj.tolist(), depth + 1)
        return self.handle(obj)

    def encode(self, message: tuple[Any, ...]) -> bytes:
        out = io.BytesIO()
        _Dumper(out).dump(message)
        return out.getvalue()

    def target(self, ref: tuple[str, Any]) -> Any:
        """A handle's object, or a global name of the program."""
        kind, key = ref
        if kind == "h":
            return self.objects[key]
        if key in self.namespace:
            return self.namespace[key]
        if hasattr(builtins, key):
            return getattr(builtins, key)
        raise NameError(f"name {key!r} is not defined")

    def load(self) -> bool:
        """Compile and run the program, and say how that went; True when ready."""
        try:
            with open(PROGRAM, encoding="utf-8") as f:
                source = f.read()
            code = compile(source, PROGRAM, "exec")
        except SyntaxError as e:
            self.send(("failed", "syntax_error", type(e).__name__, str(e.msg)[:300],
                       e.lineno))
            return False
        except BaseException as e:
            self.send(("failed", "syntax_error", type(e).__name__, str(e)[:300], None))
            return False
        try:
            exec(code, self.namespace)
        except SystemExit as e:
            self.send(("failed", "exit", "SystemExit", repr(e.code)[:100], program_line(e)))
            return False
        except BaseException as e:
            traceback.print_exc()
            status = "assertion" if isinstance(e, AssertionError) else "exception"
            self.send(("failed", status, type(e).__name__, _message(e), program_line(e)))
            return False
        self.send(("ready",))
        return True

    def perform(self, op: str, ref: tuple[str, Any], args: tuple[Any, ...]) -> Any:
        if op not in OPS:
            raise ValueError(f"unknown request {op!r}")
        return OPS[op](self.target(ref), *args)

    def serve(self) -> None:
        while True:
            request = self.receive()
            if request is None:
                return
            number, op, ref, args = request
            try:
                result = self.plain(self.perform(op, ref, args))
            except BaseException as e:
                if not isinstance(e, StopIteration):
                    traceback.print_exc()
                names = [c.__name__ for c in type(e).__mro__]
                if isinstance(e, SystemExit):
                    text = repr(e.code)[:100]
                else:
                    text = _message(e)
                self.send(("raise", number, names, text, program_line(e)))
                continue
            self.send(("ok", number, result))


class _Dumper(pickle.Pickler):
    def persistent_id(self, obj: Any) -> Any:
        if type(obj) is _Ref:
            return ("h", obj.number)
        if type(obj) is complex:
            return ("c", obj.real, obj.imag)
        return None


class _Loader(pickle.Unpickler):
    """Requests come from the harness (trusted here); handles become the objects."""

    def __init__(self, server: Server, data: bytes) -> None:
        super().__init__(io.BytesIO(data))
        self.server = server

    def persistent_load(self, pid: Any) -> Any:
        return self.server.target(pid)


def _message(exc: BaseException) -> str:
    try:
        return str(exc)[:300]
    except BaseException:
        return ""


def program_line(exc: BaseException) -> int | None:
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if frame.filename == PROGRAM:
            line = frame.lineno
    return line


def main(argv: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # the harness ignores it
    server = Server(int(argv[1]), int(argv[2]))
    if server.load():
        server.serve()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv)

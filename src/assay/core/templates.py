"""Users' templates in Jinja2's sandbox, bounded: no step (operator, call, filter, ``~``, output)
reads or builds more than :data:`MAX_SIZE` (``'x' * 10**12``, ``9 ** 9 ** 9``), and a rendering
spends at most :data:`MAX_STEPS`. Past a bound: Jinja's ``SecurityError``."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, MappingView, Sequence, Set
from typing import Any

#: characters or items (an integer's bits) one step may read or build, and the output hold
MAX_SIZE = 10_000_000
#: one rendering's budget: each step what it reads and builds, each loop turn 10 + its text
MAX_STEPS = 100_000_000
_WIDTH = frozenset({"center", "ljust", "rjust", "zfill", "batch", "slice"})
_TIMES = frozenset({"indent", "expandtabs", "replace", "join", "wordwrap", "re_sub"})
_PRINTF = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d*)(?:\.(\*|\d*))?")


def _size(value: Any) -> int:
    """The characters and items ``value`` holds all the way down, counted to past MAX_SIZE."""
    total, todo = 0, [value]
    while todo and total <= MAX_SIZE:
        v = todo.pop()
        if isinstance(v, (str, bytes)):
            total += len(v)
        elif isinstance(v, int):
            total += v.bit_length()
        elif type(v).__name__ == "Namespace":  # Jinja's namespace(): a dict inside
            todo.append(v._Namespace__attrs)
        elif isinstance(v, Mapping):
            total += len(v)
            todo += [*v.keys(), *v.values()]
        elif isinstance(v, (Sequence, Set, MappingView)):
            total += len(v)
            todo += v
    return total


def _bound(what: str, size: int) -> None:
    if size > MAX_SIZE:
        from jinja2.exceptions import SecurityError  # startup

        raise SecurityError(f"the template would build {size:,} characters or items in one "
                            f"step ({what}); a template may build {MAX_SIZE:,} at most")


def _spend(context: Any, amount: int) -> None:
    ctx = context.eval_ctx  # one per rendering
    ctx.assay_spent = getattr(ctx, "assay_spent", 0) + amount
    if ctx.assay_spent > MAX_STEPS:
        from jinja2.exceptions import SecurityError  # startup

        raise SecurityError(f"the template takes more than {MAX_STEPS:,} steps (loop turns, "
                            "calls and operators, weighed by what they build)")


def _turns(context: Any, iterable: Iterable[Any], cost: int) -> Iterator[Any]:
    for item in iterable:
        _spend(context, cost)
        yield item


def _finalize(context: Any, value: Any) -> Any:
    size = _size(value)
    _bound("an output", size)
    _spend(context, size)
    return value


def _printf_size(fmt: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> int:
    """The length of ``fmt % args`` at most, less what the values write."""
    flat = [v for a in (*args, kwargs) for v in (
        a if isinstance(a, tuple) else a.values() if isinstance(a, Mapping) else (a,))]
    star = max([v for v in flat if type(v) is int], default=0)  # a width given by '*'
    return len(fmt) + max([int(w) if w.isdigit() else star
                           for m in _PRINTF.finditer(fmt) for w in m.groups() if w], default=0)


def _builds(name: str, subject: Any, args: Sequence[Any], kwargs: Mapping[str, Any],
            sizes: list[int]) -> int:
    """An upper bound of what step ``name`` builds beyond what it reads (else 0)."""
    other = args[0] if args else None
    ints = [v for v in (*args, *kwargs.values()) if type(v) is int]
    if name == "**" and type(subject) is int and type(other) is int and abs(subject) > 1:
        return subject.bit_length() * max(other, 0)
    if name == "*":
        return (sizes[0] + sizes[1] if type(subject) is int and type(other) is int
                else sizes[0] * other if type(other) is int
                else sizes[1] * subject if type(subject) is int else 0)
    if name in ("+", "_joined"):
        return sum(sizes)
    if name == "%" and isinstance(subject, str):
        return _printf_size(subject, args, kwargs)
    if name in _WIDTH:
        return sizes[0] + max(ints, default=0)
    if name in _TIMES:  # each piece repeats a text (or a count of spaces)
        times = sizes[1:] + (ints if name in ("indent", "expandtabs") else [])
        return (sizes[0] + 1) * (max(times, default=0) + 1)
    return 0


@functools.cache
def _sandbox_class() -> type:
    """The bounded sandbox, made on first use (Jinja stays off the command line's start)."""
    from jinja2 import StrictUndefined, pass_context  # startup
    from jinja2.compiler import CodeGenerator  # startup
    from jinja2.nodes import Call, Concat, Const, EnvironmentAttribute, For, TemplateData  # startup
    from jinja2.runtime import markup_join, str_join  # startup
    from jinja2.sandbox import SandboxedEnvironment, SandboxedFormatter  # startup
    from jinja2.visitor import NodeTransformer  # startup

    class Widest(SandboxedFormatter):
        """The widest width or precision of a ``str.format`` call, building nothing."""

        widest = 0

        def format_field(self, value: Any, format_spec: str) -> str:
            self.widest = max([self.widest, *map(int, re.findall(r"\d+", format_spec))])
            return "" if format_spec else str(value)  # a nested field: part of a spec

    class Counted(NodeTransformer):
        """Each loop turn counted (weighed by its body's text); each ``~`` made a call."""

        def visit_For(self, node: For) -> For:
            self.generic_visit(node)
            cost = 10 + sum(len(n.data) for n in node.find_all(TemplateData))
            node.iter = Call(EnvironmentAttribute("loop_turns"), [node.iter, Const(cost)], [],
                             None, None, lineno=node.lineno)
            return node

        def visit_Concat(self, node: Concat) -> Call:
            self.generic_visit(node)
            return Call(EnvironmentAttribute("joined"), node.nodes, [], None, None,
                        lineno=node.lineno)

    class Generator(CodeGenerator):
        def visit_Template(self, node: Any, frame: Any = None) -> None:
            super().visit_Template(Counted().visit(node), frame)

    def _joined(context: Any, *parts: Any) -> str:
        return (markup_join if context.eval_ctx.autoescape else str_join)(parts)

    class Sandbox(SandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**", "+", "%"})
        code_generator_class = Generator
        loop_turns = staticmethod(pass_context(_turns))
        joined = staticmethod(pass_context(_joined))

        def __init__(self, filters: dict[str, Callable[..., Any]]) -> None:
            super().__init__(undefined=StrictUndefined, autoescape=False,
                             keep_trailing_newline=True, finalize=pass_context(_finalize))
            del self.globals["lipsum"]  # lipsum(10**9): nothing a prompt needs
            self.filters = {name: self._filter("%" if name == "format" else name, f)
                            for name, f in {**self.filters, **filters}.items()}

        def _filter(self, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
            passed = getattr(func, "jinja_pass_arg", None)

            @pass_context
            def bounded(context: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
                lead = () if passed is None else ({
                    "context": context, "eval_context": context.eval_ctx,
                    "environment": context.environment}[passed.name],)
                return self._step(context, name, value, args, kwargs,
                                  lambda: func(*lead, value, *args, **kwargs))
            return bounded

        def _step(self, context: Any, name: str, subject: Any, args: Sequence[Any],
                  kwargs: Mapping[str, Any], run: Callable[[], Any]) -> Any:
            """``run()``, refused when what it reads or would build passes a bound."""
            sizes = [_size(v) for v in (subject, *args, *kwargs.values())]
            for size in sizes:
                _bound(name, size)
            _spend(context, 1 + sum(sizes))
            if name in ("format", "format_map") and isinstance(subject, str):
                fields = Widest(self)
                fields.vformat(subject, args, kwargs) if name == "format" else fields.vformat(
                    subject, (), args[0] if args else {})
                _bound(name, sizes[0] + fields.widest)
            _bound(name, _builds(name, subject, args, kwargs, sizes))
            result = run()
            size = _size(result)
            _bound(name, size)
            _spend(context, size)
            return result

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            return self._step(context, operator, left, [right], {}, lambda: super(
                Sandbox, self).call_binop(context, operator, left, right))

        def call(self, context: Any, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
            method = getattr(obj, "__wrapped__", obj)  # str.format: the sandbox's wrapper
            return self._step(context, getattr(method, "__name__", ""),
                              getattr(method, "__self__", None), args, kwargs,
                              lambda: super(Sandbox, self).call(context, obj, *args, **kwargs))

    return Sandbox


def sandbox(**filters: Callable[..., Any]) -> Any:
    """A bounded ``SandboxedEnvironment`` with ``filters`` beside Jinja's own."""
    return _sandbox_class()(filters)


def render(template: Any, **values: Any) -> str:
    """``template`` rendered with ``values``; its output is bounded as each of its steps."""
    out: list[str] = []
    size = 0
    for part in template.generate(**values):
        size += len(part)
        _bound("its output", size)
        out.append(part)
    return "".join(out)

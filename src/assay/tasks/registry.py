"""Finding tasks: by name (built-in or plugin), from a Python file, or from a YAML file.

Names come from the ``assay.tasks`` entry points; sources and file loaders are entry points too
(:data:`SOURCE_GROUP`, :data:`FILE_GROUP`), so the registry imports neither catalogue nor YAML.
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, distribution, entry_points
from pathlib import Path
from typing import Any, Protocol

from assay.errors import ConfigError
from assay.tasks.base import Task
from assay.tasks.info import DataSource, TaskInfo
from assay.tasks.options import TaskOptions, options_from_signature, validate_options

#: entry-point groups searched for task names (the second is the old name, still read)
GROUPS = ("assay.tasks", "assay.benchmarks")
#: entry points of task sources: objects that know tasks by name (:class:`TaskSource`)
SOURCE_GROUP = "assay.task_sources"
#: entry points of task-file loaders, named by suffix without dot (``yaml``): path -> declared
FILE_GROUP = "assay.task_files"


class TaskSource(Protocol):
    """Tasks known by name beside the entry points (the catalogue's entries)."""

    #: what ``list tasks`` shows as their source
    label: str

    def runnable(self) -> dict[str, Any]:
        """Every task it can run now, by name: what declares each (options, info, create)."""

    def find(self, name: str) -> tuple[str, Any] | None:
        """(name, what declares it) for ``name`` or an alias; None when unknown here; a
        one-line ConfigError when known but not runnable."""

    def names(self) -> list[str]:
        """Every name and alias it knows, runnable or not (for hints)."""


class TaskFactory:
    """A ``@task`` function: its parameters are the options, it returns a :class:`Task`."""

    def __init__(self, fn: Callable[..., Any], name: str, info: TaskInfo | None = None) -> None:
        self.fn = fn
        self.name = name
        self.info = info or TaskInfo()
        self.description = (fn.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        self.__doc__ = fn.__doc__
        self._options: type[TaskOptions] | None = None

    @property
    def Options(self) -> type[TaskOptions]:  # noqa: N802 - mirrors Task.Options
        """The options model made from the function's parameters."""
        if self._options is None:
            self._options = options_from_signature(self.fn, self.name)
        return self._options

    def create(self, options: TaskOptions) -> Task:
        """The task the function returns for these options."""
        made = self.fn(**options.model_dump())
        if not isinstance(made, Task):
            raise ConfigError(f"task {self.name}: the @task function must return a Task, "
                              f"got {type(made).__name__}")
        return made

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


#: tasks declared by modules imported so far, by module then name
_DECLARED: dict[str, dict[str, Any]] = {}
#: tasks given as Python objects (``assay.evaluate(my_task)``) in this process, by name
_OBJECTS: dict[str, Any] = {}
#: the reference of a task given as an object: ``object:NAME`` (this process only)
OBJECT_PREFIX = "object:"


def reference_of(obj: Any) -> str:
    """The reference that names a task given as an object (a ``@task`` function or Task
    subclass, or a plain function returning a Task): ``FILE.py@NAME`` where its module is a
    file other than the running script (resumable from the command line), else
    ``object:NAME``, known to this process (a notebook's or a script's own task)."""
    declared = obj
    decorated = isinstance(obj, TaskFactory) or (isinstance(obj, type) and issubclass(obj, Task))
    if not decorated:
        if not callable(obj):
            raise ConfigError(f"a task is a name, FILE.py[@NAME], FILE.yaml or a @task "
                              f"function or Task subclass, not {type(obj).__name__}")
        declared = task(obj)
    fn = getattr(declared, "fn", declared)
    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    file = getattr(module, "__file__", None)
    # only a decorated task is found again in its file (a plain function declares nothing)
    if decorated and file and module.__name__ != "__main__" and file.endswith(".py"):
        return f"{Path(file).resolve()}@{declared.name}"
    _OBJECTS[declared.name] = declared
    return f"{OBJECT_PREFIX}{declared.name}"


def task(obj: Any = None, *, name: str | None = None, info: TaskInfo | None = None) -> Any:
    """Declare a task: ``@task`` / ``@task("name")`` on a Task subclass or a factory
    function; ``info`` declares what the planner, ``assay data pull`` and ``assay list
    tasks`` know of it."""
    if isinstance(obj, str):  # @task("name")
        return task(name=obj)
    if obj is None:
        return lambda o: task(o, name=name, info=info)
    if isinstance(obj, type) and issubclass(obj, Task):
        obj.name = name or obj.__dict__.get("name") or obj.__name__.lower()
        if info is not None:
            obj.info = info
        declared = obj
    elif callable(obj):
        declared = TaskFactory(obj, name or obj.__name__, info)
    else:
        raise TypeError("@task decorates a Task subclass or a function returning a Task")
    _DECLARED.setdefault(getattr(obj, "__module__", "") or "", {})[declared.name] = declared
    return declared


@dataclass
class TaskRef:
    """A resolved task: what declares it, where it comes from, how to name it again."""

    name: str
    declared: Any  # a Task subclass or a TaskFactory
    source: str  # "built-in", "plugin <dist>", "file <path>"
    ref: str  # what rebuilds it: a name, "abs/path.py@name" or "abs/path.yaml"

    @property
    def Options(self) -> type[TaskOptions]:  # noqa: N802
        return self.declared.Options

    @property
    def description(self) -> str:
        return getattr(self.declared, "description", "") or ""

    @property
    def info(self) -> TaskInfo:
        """What the task declares about itself (:class:`~assay.tasks.info.TaskInfo`)."""
        return getattr(self.declared, "info", None) or TaskInfo()


@functools.lru_cache(maxsize=1)
def _entry_points() -> dict[str, Any]:
    """Every task entry point of every installed distribution (read once per process)."""
    found: dict[str, Any] = {}
    for group in reversed(GROUPS):  # the current group wins over the old one
        for ep in entry_points(group=group):
            found[ep.name] = ep
    found.update(_own_entry_points())  # a plugin cannot take a built-in's name
    return found


@functools.lru_cache(maxsize=1)
def _own_entry_points(group: str = GROUPS[0]) -> dict[str, Any]:
    """assay's own entry points of ``group``, from its one distribution (cheap)."""
    try:
        eps = distribution("assay").entry_points
    except PackageNotFoundError:  # run from a source tree without installing
        return {}
    return {ep.name: ep for ep in eps if ep.group == group}


def _load_group(group: str) -> dict[str, Any]:
    """The entry points of ``group`` loaded (assay's own win); a failure is one line."""
    found = {ep.name: ep for ep in entry_points(group=group)}
    found.update(_own_entry_points(group))
    loaded: dict[str, Any] = {}
    for name, ep in sorted(found.items()):
        try:
            loaded[name] = ep.load()
        except Exception as e:
            raise ConfigError(f"{group} entry point {name!r} ({ep.value}) failed to load: "
                              f"{type(e).__name__}: {e}") from e
    return loaded


@functools.lru_cache(maxsize=1)
def sources() -> tuple[TaskSource, ...]:
    """The task sources (:data:`SOURCE_GROUP`), assay's catalogue first."""
    return tuple(_load_group(SOURCE_GROUP).values())


@functools.lru_cache(maxsize=1)
def file_loaders() -> dict[str, Callable[[Path], Any]]:
    """The task-file loaders (:data:`FILE_GROUP`) by suffix (``.yaml``)."""
    return {f".{name}": fn for name, fn in _load_group(FILE_GROUP).items()}


def _source_of(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    dist_name = getattr(dist, "name", None) or "?"
    return "built-in" if dist_name.lower() == "assay" else f"plugin {dist_name}"


def available() -> dict[str, str]:
    """Every task name that can be run, with its source (built-in, plugin or gallery)."""
    found = {name: _source_of(ep) for name, ep in _entry_points().items()}
    for src in sources():
        for name in src.runnable():  # a planned entry is listed, not runnable
            found.setdefault(name, src.label)
    return dict(sorted(found.items()))


@dataclass(frozen=True)
class Listed:
    """A runnable task as ``list tasks``, the planner and ``data pull`` see it."""

    name: str
    description: str
    source: str  # "built-in", "plugin <dist>" or "gallery"
    info: TaskInfo


@functools.lru_cache(maxsize=1)
def catalogue() -> dict[str, Listed]:
    """Every runnable task with what it declares (registered tasks and the sources' ready
    entries; an entry running a registered task stands for it, with its own description)."""
    out: dict[str, Listed] = {}
    labels = {src.label for src in sources()}
    for name, source in available().items():
        if source in labels:
            continue
        try:
            ref = resolve(name)
        except ConfigError:  # a plugin that fails to load is listed by 'list tasks' only
            continue
        out[name] = Listed(name, ref.description, source, ref.info)
    for src in sources():
        for name, declared in src.runnable().items():
            out[name] = Listed(name, declared.description, out[name].source if name in out
                               else src.label, declared.info)
    return dict(sorted(out.items()))


def plannable_tasks() -> dict[str, Listed]:
    """The registered tasks a plan may hold beside the catalogue's entries: those that
    declare a category and have no catalogue entry of their own (``converse``)."""
    labels = {src.label for src in sources()}
    known = {n.lower() for src in sources() for n in src.names()}
    return {n: x for n, x in catalogue().items() if x.source not in labels
            and x.info.plannable and x.info.category and n.lower() not in known}


def data_sources() -> dict[str, tuple[str, DataSource]]:
    """Every data source a task declares, by the name ``assay data pull`` takes: a source's
    own name, and the name and aliases of each task that has exactly one (task, source)."""
    out: dict[str, tuple[str, DataSource]] = {}
    for name, listed in catalogue().items():
        for src in listed.info.data:
            out.setdefault(src.name, (name, src))
        if len(listed.info.data) == 1:
            for key in (name, *listed.info.aliases):
                out.setdefault(key, (name, listed.info.data[0]))
    return dict(sorted(out.items()))


#: the name of a module imported from a task file (no other process can import it by name)
FILE_MODULE_PREFIX = "assay_task_file_"


def _import_file(path: Path) -> str:
    """Import a task file as a module of its own; returns the module name."""
    key = hashlib.sha1(str(path).encode()).hexdigest()[:12]
    module_name = f"{FILE_MODULE_PREFIX}{key}"
    if module_name in sys.modules:
        return module_name
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"cannot import task file {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        del sys.modules[module_name]
        raise ConfigError(f"task file {path} failed to import: {type(e).__name__}: {e}") from e
    return module_name


def _from_file(text: str) -> TaskRef:
    file_part, _, name = text.partition("@")
    path = Path(file_part).expanduser()
    if not path.is_file():
        raise ConfigError(f"task file not found: {path}")
    path = path.resolve()
    loader = file_loaders().get(path.suffix)
    if loader is not None:
        declared = loader(path)
        return TaskRef(declared.name, declared, f"file {path}", str(path))
    module = _import_file(path)
    tasks = _DECLARED.get(module, {})
    if not tasks:
        raise ConfigError(f"{path} declares no task; decorate a function or Task subclass "
                          "with @assay.task")
    if not name:
        if len(tasks) > 1:
            raise ConfigError(f"{path} declares several tasks ({', '.join(sorted(tasks))}); "
                              f"pick one with {path.name}@NAME")
        name = next(iter(tasks))
    if name not in tasks:
        raise ConfigError(f"{path} has no task {name!r}; it declares: {', '.join(sorted(tasks))}")
    return TaskRef(name, tasks[name], f"file {path}", f"{path}@{name}")


def declared_in(path: str | Path) -> list[str]:
    """Names of the tasks a Python file declares (importing it)."""
    return sorted(_DECLARED.get(_import_file(Path(path).expanduser().resolve()), {}))


def looks_like_file(text: str) -> bool:
    """Whether a task reference names a file rather than a registered task."""
    head = text.partition("@")[0]
    return head.endswith((".py", *file_suffixes())) or "/" in head or "\\" in head


@functools.lru_cache(maxsize=1)
def file_suffixes() -> tuple[str, ...]:
    """The suffixes task files may have (``.yaml``), from the loaders' names, none loaded."""
    names = {ep.name for ep in entry_points(group=FILE_GROUP)} | set(_own_entry_points(FILE_GROUP))
    return tuple(f".{n}" for n in sorted(names))


def resolve(text: str) -> TaskRef:
    """The task a reference names (see the module docstring); one-line errors."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError("give a task: a name (see 'assay list tasks'), FILE.py[@NAME] or "
                          "FILE.yaml")
    text = text.strip()
    if text.startswith(OBJECT_PREFIX):
        name = text[len(OBJECT_PREFIX):]
        if name not in _OBJECTS:
            raise ConfigError(f"task {name!r} was given as a Python object in the process "
                              "that ran it; give the object again (assay.evaluate(task, "
                              "resume=RUN_ID)), or move it to a file: FILE.py@NAME")
        return TaskRef(name, _OBJECTS[name], "a Python object", text)
    if looks_like_file(text):
        return _from_file(text)
    ep = _own_entry_points().get(text)
    if ep is None:
        eps = _entry_points()
        ep = eps.get(text)
    if ep is None:
        for src in sources():
            found = src.find(text)
            if found is not None:
                return TaskRef(found[0], found[1], src.label, found[0])
        names = [*eps, *(n for src in sources() for n in src.names())]
        close = difflib.get_close_matches(text, names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"unknown task {text!r}{hint}; see 'assay list tasks' for the "
                          "names; or give FILE.py[@NAME] or FILE.yaml")
    try:
        declared = ep.load()
    except Exception as e:
        raise ConfigError(f"task {text!r} ({ep.value}) failed to load: "
                          f"{type(e).__name__}: {e}") from e
    if isinstance(declared, type) and issubclass(declared, Task) and not declared.name:
        declared.name = text
    if not (isinstance(declared, TaskFactory)
            or (isinstance(declared, type) and issubclass(declared, Task))):
        raise ConfigError(f"entry point {text!r} ({ep.value}) is not a task: decorate it "
                          "with @assay.task")
    return TaskRef(text, declared, _source_of(ep), text)


def build_task(text: str, options: dict[str, Any] | None = None) -> Task:
    """The task ``text`` names, built with ``options`` (validated by its options model)."""
    ref = resolve(text)
    opts = validate_options(ref.Options, dict(options or {}), ref.name)
    made = ref.declared.create(opts)
    made.name = ref.name
    made.ref = ref.ref
    return made


def task_class(text: str) -> type[Task]:
    """The class whose metrics, report sections and exports a run of ``text`` uses (a
    ``@task`` factory's tasks use the base :class:`Task`)."""
    declared = resolve(text).declared
    if isinstance(declared, type):
        return declared
    return getattr(declared, "task_cls", None) or Task

"""Role models (judges, examiners) and, outside a live run, the contexts ``assay score RUN``
hands a judged task's ``async score(sample, outcome, ctx)``: :class:`ScoreContext` has the
judges' contexts (cached, retried, rate-limited as in a run) and no model under test."""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from assay.engine.calls import CallContext, CallShared, call_identity
from assay.errors import AssayError, ConfigError
from assay.models.base import Subject, get_subject
from assay.scoring.judge import is_judge_role


def _kind(role: str) -> str:
    """A role's kind: ``judge`` for every judge of a jury (``judge_2``, ...)."""
    return re.sub(r"_\d+$", "", role)


def role_subject(name: str, role: Any, spec: Any) -> Subject:
    """The model playing role ``name``. Endpoint: ``-T judge_base_url=``, else
    ``ASSAY_<KIND>_BASE_URL``, else ``--base-url`` if the subject plays it, else the provider's;
    key ``ASSAY_<KIND>_API_KEY``, else the provider's."""
    kind = _kind(name).upper()
    base_url = role.base_url or os.environ.get(f"ASSAY_{kind}_BASE_URL") or None
    if base_url is None and role.model == spec.model:
        base_url = spec.base_url
    return get_subject(role.model, base_url=base_url,
                       api_key=os.environ.get(f"ASSAY_{kind}_API_KEY") or None,
                       timeout=spec.timeout, max_reply_bytes=spec.max_reply_bytes)


def task_roles(task: Any, spec: Any, subject: Any) -> dict[str, Any]:
    """The models playing ``task``'s roles in a run of ``spec``: the subject itself where it
    plays one (same model, same endpoint), else each role's own (:func:`role_subject`)."""
    roles: dict[str, Any] = {}
    for name, role in task.roles(spec.model).items():
        same = role.model == spec.model and role.base_url in (None, spec.base_url)
        roles[name] = subject if same else role_subject(name, role, spec)
    return roles


async def preflight(subject: Subject | None, roles: dict[str, Subject]) -> None:
    """Fail fast, in one line, when the subject's or a role's endpoint does not answer; a
    role's line names it and how to point it elsewhere."""
    for name, one in (({"": subject} if subject is not None else {}) | roles).items():
        # a subject's own check (an agent's: its model, tools, servers), else its model's
        check = (getattr(one, "preflight", None)
                 or getattr(getattr(one, "model", None), "preflight", None))
        if check is None:
            continue
        try:
            await check()
        except AssayError as e:
            if not name:
                raise
            kind = _kind(name)
            raise ConfigError(f"the {name} ({one.model_id}): {e.problem}",
                              hint=f"give its endpoint with -T {kind}_base_url=URL or "
                                   f"ASSAY_{kind.upper()}_BASE_URL") from e


@dataclass
class ScoreContext:
    """What ``score`` reaches outside a live run: the judge (``roles["judge"]``) and the
    run's generation parameters (``params``, as in the run)."""

    model_id: str
    epoch: int
    roles: dict[str, CallContext] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    #: who plays each role: ``openai/m at http://host/v1`` (the endpoint as shown)
    who: dict[str, str] = field(default_factory=dict)

    async def generate(self, *args: Any, **kwargs: Any) -> Any:
        """Never: scoring makes no call to the model under test (live or stored)."""
        raise ConfigError(f"score calls no model under test ({self.model_id}); a task "
                          "whose scoring needs a model declares it as a role (its judge)")


@asynccontextmanager
async def scoring_contexts(store: Any, task: Any, spec: Any, model_id: str
                           ) -> AsyncIterator[Callable[[int], ScoreContext]]:
    """``make(epoch) -> ScoreContext`` for a judged task's stored samples, with the judge
    the task's options name now (``assay score --judge-model M`` sets them) and the run's
    generation parameters (a seeded judge's votes hit the cache)."""
    # only a jury's roles: an examiner plays its part in solve, so it is not built here
    wanted = {name: role for name, role in task.roles(model_id).items() if is_judge_role(name)}
    subjects = {name: role_subject(name, role, spec) for name, role in wanted.items()}
    try:
        await preflight(None, subjects)
        shared = {name: (s, call_identity(s),
                         CallShared.for_spec(store, spec, s))
                  for name, s in subjects.items()}
        params = spec.run_params()

        def make(epoch: int) -> ScoreContext:
            ctx = ScoreContext(model_id, epoch, params=dict(params))
            for name, (s, identity, calls) in shared.items():
                ctx.roles[name] = CallContext(s.session(), calls, identity, epoch, params=params)
                where = s.describe().get("base_url")
                ctx.who[name] = s.model_id + (f" at {where}" if where else "")
            return ctx

        yield make
    finally:
        for one in subjects.values():
            await one.aclose()

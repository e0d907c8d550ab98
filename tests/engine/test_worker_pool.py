"""The worker pool's request/answer protocol (:mod:`assay.core.workers`): a request may ask
the run questions, long messages cross whole both ways under the run's own event loop
(uvloop), and an error in the run's answer reaches the request that asked and comes back as
raised, with the worker reusable afterwards."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
import uvloop

from assay.core import workers

BIG = 3_000_000  # characters: far past a socket's buffer


def ask_twice(n: int) -> list[int]:
    """In a worker: two questions, each with a long payload; the answers' lengths."""
    return [len(workers.ask(("echo", "x" * n))) for _ in range(2)]


def ask_and_catch() -> str:
    try:
        workers.ask(("fail", ""))
    except workers.WorkerError as e:
        return f"caught: {e}"
    return "not raised"


def ask_and_fail() -> None:
    workers.ask(("fail", ""))


class Failure(Exception):
    def __init__(self, what: str, *, detail: str) -> None:  # keyword-only: does not pickle
        super().__init__(what)
        self.detail = detail


async def answer(question: Any) -> Any:
    kind, payload = question
    if kind == "fail":
        raise Failure("the model is down", detail="x")
    return payload + "y" * BIG


@pytest.fixture(autouse=True)
def no_workers_left() -> Iterator[None]:
    yield
    workers.shutdown()


def test_long_questions_and_answers_cross_whole_under_uvloop() -> None:
    async def go() -> list[int]:
        async with workers.session(workers.Worker) as w:
            return await w.acall(ask_twice, BIG, on_ask=answer)

    assert uvloop.run(go()) == [2 * BIG, 2 * BIG]


def test_an_answer_that_fails_reaches_the_request_and_the_run() -> None:
    async def go() -> tuple[str, int, int]:
        async with workers.session(workers.Worker) as w:
            caught = await w.acall(ask_and_catch, on_ask=answer)
            pid = w.proc.pid
        with pytest.raises(Failure, match="the model is down"):
            async with workers.session(workers.Worker) as w:
                await w.acall(ask_and_fail, on_ask=answer)
        async with workers.session(workers.Worker) as w:  # a fresh one: the other was killed
            again = await w.acall(ask_twice, 10, on_ask=answer)
            return caught, pid, len(again)

    caught, _, n = uvloop.run(go())
    assert caught == "caught: Failure: the model is down" and n == 2


def test_a_request_that_asks_without_an_answerer_gets_an_error() -> None:
    async def go() -> str:
        async with workers.session(workers.Worker) as w:
            return await w.acall(ask_and_catch)

    assert asyncio.run(go()).startswith("caught: this request cannot ask the run")

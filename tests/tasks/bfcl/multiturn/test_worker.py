"""The simulator worker: the official results through a separate process, and a process that
a timeout, a cancellation, an interrupt or a crash ends without harm to the run.

1. Every ground-truth call of every multi-turn entry (4625), run per entry in a worker
   session, gives the official ``execute_multi_turn_func_call`` string; the checker run in
   a worker gives the in-process verdict (itself pinned to the official one by
   ``test_checker_agreement``).
2. An entry's instances keep their state across the calls of its session; the next
   session on the same (reused) worker starts from the entry's initial state.
3. A call past its deadline (``run_bounded``), a cancelled call (a sample timeout), an
   interrupt while waiting and a worker that dies: each ends with the worker process gone
   and the next session served by a fresh one.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import official_mt_oracle as oracle
import pytest
import trajectories

from assay.errors import DatasetError
from assay.tasks.bfcl.multiturn import worker
from assay.tasks.bfcl.multiturn.checker import check_entry, is_long_context

LONG_CALL = "logarithm(value=10, base=10, precision=100000000)"  # minutes of CPU
MATH_ENTRY = "multi_turn_base_32"  # involves MathAPI
CARD = "1234567812345678"  # a long-context extension card, shared by reference


def _entry(entry_id: str) -> tuple[dict[str, Any], list[list[str]]]:
    entries, truth = oracle.entries(entry_id.rsplit("_", 1)[0])
    entry = next(e for e in entries if e["id"] == entry_id)
    return entry, truth[entry_id]


def gone(pid: int) -> bool:
    """The process has ended and been reaped (no /proc entry, or a zombie)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


@pytest.fixture(autouse=True)
def no_workers_left() -> Iterator[None]:
    """Each test starts and ends with no live worker of its own."""
    worker.shutdown()
    yield
    worker.shutdown()


async def _open(sims: worker.Worker, entry: dict[str, Any]) -> None:
    await sims.acall(worker.open_entry, worker.setup(), entry["involved_classes"],
                     entry["initial_config"], is_long_context(entry["id"]))


@pytest.mark.parametrize("category", oracle.CATEGORIES)
def test_every_ground_truth_call_in_a_worker_gives_the_official_result(category: str) -> None:
    entries, truth = oracle.entries(category)

    async def ours() -> dict[str, list[list[str]]]:
        out = {}
        for entry in entries:
            async with worker.session() as sims:
                await _open(sims, entry)
                out[entry["id"]] = [await sims.acall(worker.run_calls, calls)
                                    for calls in truth[entry["id"]]]
        return out

    results = asyncio.run(ours())
    calls = 0
    for entry in entries:
        official = oracle.official_execute(entry, truth[entry["id"]])
        assert results[entry["id"]] == official, entry["id"]
        calls += sum(len(t) for t in official)
    assert calls == oracle.CALL_COUNTS[category]


@pytest.mark.parametrize("category", oracle.CATEGORIES)
def test_the_checker_in_a_worker_gives_the_in_process_verdict(category: str) -> None:
    entries, truth = oracle.entries(category)
    checked = 0
    for name in ("ground_truth", "wrong_argument", "dropped_call"):
        for entry in entries:
            gt = truth[entry["id"]]
            trajectory = trajectories.build(name, entry, gt)
            if trajectory is None:
                continue
            there = worker.run_bounded(worker.check, worker.setup(), trajectory, entry, gt,
                                       category, timeout=60)
            assert there == check_entry(trajectory, entry, gt, category), (name, entry["id"])
            checked += 1
    assert checked == 3 * len(entries)


def test_state_lives_for_the_session_and_not_beyond() -> None:
    entry, _ = _entry("multi_turn_base_0")  # GorillaFileSystem at /workspace/document

    async def go() -> tuple[list[str], list[str], int, int]:
        async with worker.session() as sims:
            first_pid = sims.proc.pid
            await _open(sims, entry)
            await sims.acall(worker.run_calls, ["mkdir(dir_name='made_here')"])
            during = await sims.acall(worker.run_calls, ["ls()"])
        async with worker.session() as sims:  # the same process, reused
            second_pid = sims.proc.pid
            await _open(sims, entry)
            after = await sims.acall(worker.run_calls, ["ls()"])
        return during, after, first_pid, second_pid

    during, after, first_pid, second_pid = asyncio.run(go())
    assert first_pid == second_pid
    assert "made_here" in during[0] and "made_here" not in after[0]


def test_a_cancelled_call_ends_with_its_worker() -> None:
    """A sample timeout cancels the solve: the call in progress dies with its process."""
    entry, _ = _entry(MATH_ENTRY)
    pids: list[int] = []

    async def go() -> None:
        async with worker.session() as sims:
            pids.append(sims.proc.pid)
            await _open(sims, entry)
            await sims.acall(worker.run_calls, [LONG_CALL])

    async def with_timeout() -> None:
        await asyncio.wait_for(go(), 3)

    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(with_timeout())
    assert gone(pids[0])

    async def next_entry() -> tuple[int, list[str]]:
        async with worker.session() as sims:
            await _open(sims, entry)
            return sims.proc.pid, await sims.acall(
                worker.run_calls, ["logarithm(value=100, base=10, precision=20)"])

    pid, results = asyncio.run(next_entry())
    assert pid != pids[0] and results == ["{'result': mpf('2.0')}"]


def test_a_check_past_its_deadline_is_killed() -> None:
    entry, gt = _entry(MATH_ENTRY)
    long_steps = [[[LONG_CALL]] for _ in gt]
    with pytest.raises(worker.SimulatorTimeout, match="ran past 2s"):
        worker.run_bounded(worker.check, worker.setup(), long_steps, entry, gt,
                           "multi_turn_base", timeout=2)
    assert not worker._live  # killed, not left computing
    verdict = worker.run_bounded(worker.check, worker.setup(), [[t] for t in gt], entry, gt,
                                 "multi_turn_base", timeout=60)
    assert verdict["valid"] is True


def test_an_interrupt_while_waiting_kills_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C (or SIGTERM's stop) arrives as an exception in the waiting thread."""
    entry, gt = _entry(MATH_ENTRY)

    class Interrupted(Exception):
        pass

    def interrupt(*_: Any) -> None:
        raise Interrupted

    started: list[worker.Worker] = []
    original = worker.Worker.__init__

    def spy(self: worker.Worker) -> None:
        original(self)
        started.append(self)

    monkeypatch.setattr(worker.Worker, "__init__", spy)
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 3)
        with pytest.raises(Interrupted):
            worker.run_bounded(worker.check, worker.setup(), [[[LONG_CALL]] for _ in gt],
                               entry, gt, "multi_turn_base", timeout=600)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert started and all(gone(w.proc.pid) for w in started)


def test_a_worker_that_dies_is_an_error_and_is_replaced() -> None:
    async def crash() -> int:
        async with worker.session() as sims:
            pid = sims.proc.pid
            with pytest.raises(worker.SimulatorError, match="ended unexpectedly"):
                await sims.acall(os._exit, 3)
            return pid

    pid = asyncio.run(crash())
    assert gone(pid)
    entry, _ = _entry(MATH_ENTRY)

    async def after() -> tuple[int, list[str]]:
        async with worker.session() as sims:
            await _open(sims, entry)
            return sims.proc.pid, await sims.acall(worker.run_calls, ["mean(numbers=[1, 2])"])

    new_pid, results = asyncio.run(after())
    assert new_pid != pid and results == ['{"result": 1.5}']


def test_an_error_in_the_worker_arrives_as_raised() -> None:
    async def go() -> None:
        async with worker.session() as sims:
            await sims.acall(worker.open_entry, worker.setup(), ["NoSuchAPI"], {}, False)

    with pytest.raises(DatasetError, match="unknown BFCL simulator class 'NoSuchAPI'"):
        asyncio.run(go())


def test_a_long_context_entry_does_not_leak_into_the_next_session() -> None:
    """Paying with an extension card changes the shared long-context card dict in place;
    the next session on the same (reused) worker must read the balance as shipped."""
    entry, _ = _entry("multi_turn_long_context_151")
    balance = f"get_credit_card_balance(access_token='abc123xyz', card_id='{CARD}')"
    insure = (f"purchase_insurance(access_token='abc123xyz', insurance_type='basic', "
              f"booking_id='booking_901', insurance_cost=100.0, card_id='{CARD}')")

    async def go() -> tuple[list[str], list[str], int, int]:
        async with worker.session() as sims:
            first = sims.proc.pid
            await _open(sims, entry)
            paid = await sims.acall(worker.run_calls, [insure, balance])
        async with worker.session() as sims:
            second = sims.proc.pid
            await _open(sims, entry)
            fresh = await sims.acall(worker.run_calls, [balance])
        return paid, fresh, first, second

    paid, fresh, first, second = asyncio.run(go())
    assert first == second
    assert paid[1] == '{"card_balance": 4900.0}' and fresh == ['{"card_balance": 5000.0}']

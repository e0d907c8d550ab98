"""Model trajectories built from the ground truth, for the agreement tests.

A trajectory is what the checker receives: turns, each a list of steps, each a list of
decoded call strings. Each perturbation returns ``None`` where it does not apply to an
entry (e.g. no turn with two calls to reorder).
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from typing import Any

Trajectory = Any  # list[list[list[str]]], or anything else for the runner-level cases
GroundTruth = list[list[str]]


def ground_truth(entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """One step per turn holding the turn's calls; no step for an empty turn."""
    return [[list(turn)] if turn else [] for turn in gt]


def _first_nonempty(gt: GroundTruth) -> int | None:
    return next((t for t, turn in enumerate(gt) if turn), None)


def _with_turn(gt: GroundTruth, t: int, calls: list[str]) -> Trajectory:
    out = ground_truth({}, gt)
    out[t] = [calls] if calls else []
    return out


def dropped_call(entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """The last call of the first turn with calls is left out."""
    t = _first_nonempty(gt)
    return None if t is None else _with_turn(gt, t, gt[t][:-1])


def reordered(entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """The calls of the first turn with at least two are made in reverse order."""
    t = next((t for t, turn in enumerate(gt) if len(turn) >= 2), None)
    return None if t is None else _with_turn(gt, t, gt[t][::-1])


def _bump(node: ast.expr) -> ast.expr | None:
    if not isinstance(node, ast.Constant):
        return None
    v = node.value
    if type(v) is bool:
        return ast.Constant(not v)
    if type(v) is str:
        return ast.Constant(v + "_x")
    if type(v) in (int, float):
        return ast.Constant(v + 1)
    return None


def _wrong_argument(call: str) -> str | None:
    tree = ast.parse(call, mode="eval")
    body = tree.body
    assert isinstance(body, ast.Call)
    for i, arg in enumerate(body.args):
        new = _bump(arg)
        if new is not None:
            body.args[i] = new
            return ast.unparse(tree)
    for kw in body.keywords:
        new = _bump(kw.value)
        if new is not None:
            kw.value = new
            return ast.unparse(tree)
    return None


def wrong_argument(entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """The first call with a str/number/bool argument gets its first such argument
    changed (str + "_x", number + 1, bool negated)."""
    for t, turn in enumerate(gt):
        for i, call in enumerate(turn):
            changed = _wrong_argument(call)
            if changed is not None:
                return _with_turn(gt, t, turn[:i] + [changed] + turn[i + 1:])
    return None


def extra_call(entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """The last call of the first turn with calls is made twice."""
    t = _first_nonempty(gt)
    return None if t is None else _with_turn(gt, t, gt[t] + gt[t][-1:])


def extra_failing_step(entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """Every turn with calls gets a further step calling a function that does not exist."""
    return [[list(turn), ["no_such_function(x=1)"]] if turn else [] for turn in gt]


def one_call_per_step(entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """Each call in a step of its own."""
    return [[[call] for call in turn] for turn in gt]


def wrong_turn(entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """The first call of the first later turn with calls is made one turn early."""
    t = next((t for t, turn in enumerate(gt) if t >= 1 and turn), None)
    if t is None:
        return None
    moved = gt[t][0]
    out = _with_turn(gt, t, gt[t][1:])
    out[t - 1] = [gt[t - 1] + [moved]]
    return out


def empty_turn(entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """The first turn with calls has no step."""
    t = _first_nonempty(gt)
    return None if t is None else _with_turn(gt, t, [])


def empty_step(entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """The first turn with calls has one empty step ``[[]]``."""
    t = _first_nonempty(gt)
    if t is None:
        return None
    out = ground_truth(entry, gt)
    out[t] = [[]]
    return out


def _holdout(entry: dict[str, Any], gt: GroundTruth) -> tuple[int, list[str], list[str]] | None:
    missed = entry.get("missed_function") or {}
    if not missed:
        return None
    ((key, names),) = missed.items()
    k = int(key)
    calls = [c for c in gt[k] if ast.parse(c, mode="eval").body.func.id in names]  # type: ignore[attr-defined]
    return (k, calls, [c for c in gt[k] if c not in calls]) if k >= 1 and calls else None


def miss_func_early(entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """miss_func: the withheld function's calls are made in the turn before it is added
    (and not again)."""
    found = _holdout(entry, gt)
    if found is None:
        return None
    k, calls, rest = found
    out = _with_turn(gt, k, rest)
    out[k - 1] = [gt[k - 1] + calls]
    return out


def miss_func_early_and_again(entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """miss_func: the withheld function's calls are made in the turn before it is added,
    and again in its turn."""
    found = _holdout(entry, gt)
    if found is None:
        return None
    k, calls, _ = found
    out = ground_truth(entry, gt)
    out[k - 1] = [gt[k - 1] + calls]
    return out


def fewer_turns(entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """The last turn is missing (a force-quit before it)."""
    return ground_truth(entry, gt)[:-1]


def more_turns(entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """One turn too many."""
    return ground_truth(entry, gt) + [[]]


def not_a_list(entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """What the official result file holds after an inference exception."""
    return "Error during inference: boom"


def a_tuple(entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """A tuple is not a list for the official runner either."""
    return tuple(ground_truth(entry, gt))


PERTURBATIONS: dict[str, Callable[[dict[str, Any], GroundTruth], Trajectory]] = {
    f.__name__: f for f in (
        ground_truth, dropped_call, reordered, wrong_argument, extra_call, extra_failing_step,
        one_call_per_step, wrong_turn, empty_turn, empty_step, miss_func_early,
        miss_func_early_and_again, fewer_turns, more_turns, not_a_list, a_tuple)
}


def build(name: str, entry: dict[str, Any], gt: GroundTruth) -> Trajectory:
    """The trajectory (a deep copy: checkers may not share it) or ``None``."""
    return copy.deepcopy(PERTURBATIONS[name](entry, gt))
